//! Questions from a server: `elicitation/create` and
//! `sampling/createMessage`, routed to the one tool call in flight.
//!
//! The protocol carries nothing in these requests that names the
//! `tools/call` they came from, so the session answers only when exactly
//! one call is running on this server: the question is attached to it and
//! put to the host. With no call running, or several, the session declines
//! (elicitation) or rejects (sampling) at once, without asking anyone,
//! rather than interrupt a caller it guessed at. Each session keeps its own
//! record, so two servers asking at once never mix.
//!
//! While a question is open, its call's budget is paused: the budget bounds
//! an unresponsive server, and a call waiting on a person is not that. The
//! budget resumes with what was left when the last question is answered.
//!
//! URL-mode elicitation is its own question ([`Question::Url`]), asked only
//! where the host declared it can open URLs; one rho did not declare, or
//! cannot show safely, is answered with -32602 Invalid params, as the spec
//! names, not with a decline. A -32042 error on a call is read into the
//! URLs it names (`Session::rpc_error`), and a
//! `notifications/elicitation/complete` is reported only for a URL rho
//! showed.
//!
//! In the 2026 era the same questions come inside a call's result (an
//! `InputRequiredResult`, see [`crate::features::mrtr`]): they belong to
//! that call without any routing, and their answers go into the call's
//! retry rather than into responses. The budget pauses the same way.

use std::time::Instant;

use serde_json::Value;

use super::{CallId, Event, Purpose, Session, TransmitKind};
use crate::features::elicitation::{self, Form, FormAnswer, UrlAnswer, UrlRequest};
use crate::features::mrtr::{self, Answered};
use crate::features::sampling::{self, SamplingRequest};
use crate::oauth::challenge::BearerChallenge;
use crate::wire::jsonrpc::{self, ErrorObject, RequestId, ServerRequestId};

/// Identifies a question put to the host. Small and `Copy`, like a call id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct QuestionId(pub(crate) u64);

/// What a server asks.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Question {
    /// A form for a person (elicitation, form mode).
    Elicitation(Form),
    /// A URL for the person to open (elicitation, URL mode), asked only
    /// where the host declared it can: show it, and open it on a yes.
    Url(UrlRequest),
    /// A completion from the user's model; the person confirms first.
    Sampling(SamplingRequest),
    /// Not from the server's JSON-RPC but from its HTTP answer: it refused
    /// a request's credentials (401, or 403 `insufficient_scope`), and the
    /// request waits for a new `Authorization` header (see
    /// [`crate::http`]).
    Authorization {
        /// Which refusal.
        reason: AuthorizationReason,
        /// The server's Bearer challenge (empty when it sent none).
        challenge: BearerChallenge,
    },
}

/// Why a server refused a request's credentials. Non-exhaustive: a later
/// spec may add causes (a host should treat an unknown one as a refusal it
/// cannot fix by itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
#[serde(rename_all = "snake_case")]
pub enum AuthorizationReason {
    /// HTTP 401: no token, or one that expired or was revoked.
    Unauthorized,
    /// HTTP 403 with `error="insufficient_scope"`: the token lacks the
    /// scope the challenge names (a step-up).
    InsufficientScope,
}

/// The host's answer to a sampling question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SamplingAnswer {
    /// The person approved and the model answered.
    Completed {
        /// The completion text.
        text: String,
        /// The model that wrote it (the session's current model).
        model: String,
    },
    /// The person refused, or no one could be asked: no model call happened.
    Refused,
    /// The model call failed.
    Failed(String),
}

/// Where the answer to a question goes.
#[derive(Debug)]
pub(super) enum Asker {
    /// A server request (2025 era): answered with a response to its id.
    Request(ServerRequestId),
    /// An input request of a call's `InputRequiredResult` (2026 era):
    /// answered into the call's retry, under the server's key.
    Input(String),
    /// An input request of the task a call runs (2026 tasks extension):
    /// answered with `tasks/update`, under the server's key.
    TaskInput(String),
}

/// A question waiting for the host.
#[derive(Debug)]
pub(super) struct OpenQuestion {
    /// Who asked: where the answer goes.
    asker: Asker,
    /// The call it is attached to.
    call: CallId,
    /// What kind of answer it takes.
    kind: OpenKind,
}

/// What an open question takes back, and what a withdrawn one sends.
#[derive(Debug)]
pub(super) enum OpenKind {
    /// A form, to type the answers back.
    Form(Form),
    /// A URL request, with its `elicitationId` (2025 era) to know its
    /// completion by.
    Url(Option<String>),
    /// A sampling confirmation.
    Sampling,
}

impl Session {
    /// Answers an elicitation question. Submitted answers are typed to the
    /// schema (an answer that cannot carry its type declines the request);
    /// a dismissed form is `cancel`, which also ends the call. Answering a
    /// question that is no longer open, or is a URL question
    /// ([`Session::answer_url`]), does nothing.
    pub fn answer_elicitation(&mut self, now: Instant, question: QuestionId, answer: FormAnswer) {
        let now = self.clock.observe(now);
        if self.is_url_question(question) {
            // A form's answer to a URL question answers nothing: it stays
            // open for its own kind of answer.
            return;
        }
        let Some(open) = self.questions.remove(&question) else {
            return;
        };
        let Some(request) = self.request_or_input(now, open.asker, open.call, |rounds, key| {
            rounds.answer_elicitation(key, &answer)
        }) else {
            return;
        };
        let result = match &open.kind {
            OpenKind::Form(form) => elicitation::result_for(form, &answer),
            OpenKind::Url(_) | OpenKind::Sampling => elicitation::declined(),
        };
        self.push_transmit(
            jsonrpc::response_bytes(&request, &result),
            TransmitKind::Response,
        );
        self.resume_budget(now, open.call);
        if matches!(answer, FormAnswer::Dismissed) {
            // Dismissing the form ends the turn that caused it.
            self.cancel_call(now, open.call);
        }
    }

    /// Answers a URL question: `accept` (no content) when the person
    /// opened it, `decline` when they said no or no one could be asked,
    /// `cancel` when they dismissed it, which also ends the call as a
    /// dismissed form does. An accepted request's `elicitationId` is
    /// remembered, so its `notifications/elicitation/complete` is known.
    /// Answering a question that is no longer open, or is not a URL
    /// question, does nothing.
    pub fn answer_url(&mut self, now: Instant, question: QuestionId, answer: UrlAnswer) {
        let now = self.clock.observe(now);
        if !self.is_url_question(question) {
            return;
        }
        let Some(open) = self.questions.remove(&question) else {
            return;
        };
        let Some(request) = self.request_or_input(now, open.asker, open.call, |rounds, key| {
            rounds.answer_url(key, answer)
        }) else {
            return;
        };
        if let (OpenKind::Url(Some(id)), UrlAnswer::Opened) = (&open.kind, answer) {
            self.remember_url_elicitation(id);
        }
        self.push_transmit(
            jsonrpc::response_bytes(&request, &elicitation::url_result(answer)),
            TransmitKind::Response,
        );
        self.resume_budget(now, open.call);
        if answer == UrlAnswer::Dismissed {
            self.cancel_call(now, open.call);
        }
    }

    /// Answers a sampling question.
    pub fn answer_sampling(&mut self, now: Instant, question: QuestionId, answer: SamplingAnswer) {
        let now = self.clock.observe(now);
        let Some(open) = self.questions.remove(&question) else {
            return;
        };
        let Some(request) = self.request_or_input(now, open.asker, open.call, |rounds, key| {
            rounds.answer_sampling(key, answer.clone())
        }) else {
            return;
        };
        let bytes = match answer {
            SamplingAnswer::Completed { text, model } => {
                jsonrpc::response_bytes(&request, &sampling::result_value(&text, &model))
            }
            SamplingAnswer::Refused => jsonrpc::error_bytes(&request, &sampling::rejected()),
            SamplingAnswer::Failed(reason) => jsonrpc::error_bytes(
                &request,
                &ErrorObject {
                    code: jsonrpc::code::INTERNAL_ERROR,
                    message: format!("the model failed: {reason}"),
                    data: None,
                },
            ),
        };
        self.push_transmit(bytes, TransmitKind::Response);
        self.resume_budget(now, open.call);
    }

    /// Where an answer goes: the server request (2025 era) to respond to,
    /// or, for an input request of a call's round or its task's,
    /// `None` once `answer` has applied it to that round under its key.
    fn request_or_input(
        &mut self,
        now: Instant,
        asker: Asker,
        call: CallId,
        answer: impl FnOnce(&mut mrtr::Rounds, &str) -> Answered,
    ) -> Option<ServerRequestId> {
        match asker {
            Asker::Request(request) => Some(request),
            Asker::Input(key) => {
                self.input_answered(now, call, |rounds| answer(rounds, &key));
                None
            }
            Asker::TaskInput(key) => {
                self.task_input_answered(now, call, |rounds| answer(rounds, &key));
                None
            }
        }
    }

    /// Whether `question` is open and asks for a URL to be opened.
    fn is_url_question(&self, question: QuestionId) -> bool {
        self.questions
            .get(&question)
            .is_some_and(|q| matches!(q.kind, OpenKind::Url(_)))
    }

    /// How many questions are waiting for the host.
    pub fn open_questions(&self) -> usize {
        self.questions.len()
    }

    /// A fresh question id for a question the transport asks (an
    /// authorization), from the same counter as the session's own.
    pub(crate) fn new_question_id(&mut self) -> QuestionId {
        let question = QuestionId(self.next_question);
        self.next_question += 1;
        question
    }

    pub(super) fn elicitation_request(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        params: Option<Value>,
    ) {
        let server = self.options.server.clone();
        let owner = self.owner_of_question(params.as_ref());
        let params = params.unwrap_or(Value::Null);
        // Before the form gate: a URL-mode request rho did not declare is
        // the spec's invalid params whatever else was declared.
        if elicitation::is_url_mode(&params) {
            return self.url_request(now, id, &params, owner);
        }
        if !self.options.elicitation {
            tracing::info!(server = %server, "elicitation declined: this run cannot ask a person");
            return self.respond(&id, &elicitation::declined());
        }
        let form = match elicitation::form_from_request(&params) {
            Ok(form) => form,
            Err(why) => {
                tracing::info!(server = %server, "elicitation declined: {why}");
                return self.respond(&id, &elicitation::declined());
            }
        };
        match owner {
            Ok(call) => self.open(
                now,
                Asker::Request(id),
                call,
                OpenKind::Form(form.clone()),
                Question::Elicitation(form),
            ),
            Err(running) => {
                tracing::info!(server = %server, running, "elicitation declined: it must come during exactly one call");
                self.respond(&id, &elicitation::declined());
            }
        }
    }

    /// A URL-mode `elicitation/create` (2025 era). A mode rho did not
    /// declare, or parameters it cannot show, are invalid params (-32602),
    /// as the spec names; otherwise it is routed like a form.
    fn url_request(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        params: &Value,
        owner: Result<CallId, usize>,
    ) {
        let server = self.options.server.clone();
        if !self.options.elicitation_url {
            tracing::info!(server = %server, "URL-mode elicitation refused: this run did not declare it");
            return self.respond_error(&id, &undeclared_url_mode());
        }
        let request = match elicitation::url_request_from_params(params, true) {
            Ok(request) => request,
            Err(why) => {
                tracing::info!(server = %server, "URL-mode elicitation refused: {why}");
                return self.respond_error(&id, &invalid_params(why.to_string()));
            }
        };
        match owner {
            Ok(call) => self.open(
                now,
                Asker::Request(id),
                call,
                OpenKind::Url(request.elicitation_id.clone()),
                Question::Url(request),
            ),
            Err(running) => {
                tracing::info!(server = %server, running, "URL-mode elicitation declined: it must come during exactly one call");
                self.respond(&id, &elicitation::declined());
            }
        }
    }

    /// A call's error response as a [`super::CallError`]: a -32042 whose
    /// URLs can be shown is [`super::CallError::UrlElicitationRequired`]
    /// (their ids remembered for completions); anything else, including a
    /// -32042 rho cannot read, is the error as sent.
    pub(super) fn rpc_error(&mut self, error: ErrorObject) -> super::CallError {
        let server = self.options.server.clone();
        if error.code == elicitation::URL_ELICITATION_REQUIRED {
            match elicitation::required_elicitations(error.data.as_ref()) {
                Ok(elicitations) => {
                    for id in elicitations
                        .iter()
                        .filter_map(|e| e.elicitation_id.as_ref())
                    {
                        self.remember_url_elicitation(id);
                    }
                    return super::CallError::UrlElicitationRequired {
                        server,
                        message: error.message,
                        elicitations,
                    };
                }
                Err(why) => {
                    tracing::info!(server = %server, "a -32042 error kept as sent: {why}");
                }
            }
        }
        super::CallError::Rpc {
            server,
            error: Box::new(error),
        }
    }

    /// Keeps the `elicitationId` of a URL the person agreed to open (or was
    /// shown in a -32042 error), so a later completion is known; the
    /// oldest is forgotten past [`MAX_URL_ELICITATIONS`].
    pub(super) fn remember_url_elicitation(&mut self, id: &str) {
        if self.url_elicitations.iter().any(|known| known == id) {
            return;
        }
        if self.url_elicitations.len() == MAX_URL_ELICITATIONS {
            self.url_elicitations.pop_front();
        }
        self.url_elicitations.push_back(id.to_owned());
    }

    /// `notifications/elicitation/complete` (2025 era): the out-of-band
    /// interaction of a URL rho's person opened is done. One for an id
    /// rho does not know, or knows as completed already, is ignored, as
    /// the spec asks.
    pub(super) fn url_elicitation_completed(&mut self, params: Option<&Value>) {
        let Some(id) = params
            .and_then(|p| p.get("elicitationId"))
            .and_then(Value::as_str)
        else {
            return;
        };
        let Some(at) = self.url_elicitations.iter().position(|known| known == id) else {
            tracing::debug!(server = %self.options.server, "completion of an unknown URL elicitation ignored");
            return;
        };
        self.url_elicitations.remove(at);
        self.events.push_back(Event::UrlElicitationCompleted {
            elicitation_id: id.to_owned(),
        });
    }

    pub(super) fn sampling_request(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        params: Option<Value>,
    ) {
        let server = self.options.server.clone();
        if !self.options.sampling {
            tracing::info!(server = %server, "sampling rejected: not enabled for this server");
            return self.respond_error(&id, &sampling::rejected());
        }
        let owner = self.owner_of_question(params.as_ref());
        let params = params.unwrap_or(Value::Null);
        let request = match sampling::parse_request(&server, &params) {
            Ok(request) => request,
            Err(why) => {
                return self.respond_error(&id, &invalid_params(why));
            }
        };
        match owner {
            Ok(call) => self.open(
                now,
                Asker::Request(id),
                call,
                OpenKind::Sampling,
                Question::Sampling(request),
            ),
            Err(running) => {
                tracing::info!(server = %server, running, "sampling rejected: it must come during exactly one call");
                self.respond_error(&id, &sampling::rejected());
            }
        }
    }

    /// The server cancelled one of its requests: a question still open for
    /// it is withdrawn (nothing is sent back, as the protocol asks).
    pub(super) fn server_cancelled(&mut self, now: Instant, params: Option<&Value>) {
        let Some(request) = params.and_then(|p| p.get("requestId")).and_then(wire_id) else {
            return;
        };
        let found = self
            .questions
            .iter()
            .find(|(_, q)| matches!(&q.asker, Asker::Request(r) if r.0 == request))
            .map(|(id, q)| (*id, q.call));
        if let Some((question, call)) = found {
            self.questions.remove(&question);
            self.events.push_back(Event::QuestionWithdrawn(question));
            self.resume_budget(now, call);
        }
    }

    /// Withdraws the questions of a call that ended; the server gets a
    /// decline or a rejection so it is not left waiting.
    pub(super) fn withdraw_questions_of(&mut self, call: CallId) {
        let ids: Vec<QuestionId> = self
            .questions
            .iter()
            .filter(|(_, q)| q.call == call)
            .map(|(id, _)| *id)
            .collect();
        for question in ids {
            if let Some(open) = self.questions.remove(&question) {
                // An input request needs no answer: the call it was for
                // is over, and nothing waits on the server's side.
                if let Asker::Request(request) = &open.asker {
                    match open.kind {
                        OpenKind::Form(_) | OpenKind::Url(_) => {
                            self.respond(request, &elicitation::declined())
                        }
                        OpenKind::Sampling => self.respond_error(request, &sampling::rejected()),
                    }
                }
                self.events.push_back(Event::QuestionWithdrawn(question));
            }
        }
    }

    /// A call's request `request` was answered with an
    /// `InputRequiredResult` (`result`; `pending` is the request, already
    /// out of the table). Its input requests become questions for the
    /// host, behind the 2025 gates, and the request waits under its old id
    /// with its budget paused until they are answered; then it is retried
    /// under a new id. With nothing to ask, the retry goes at once. A
    /// malformed result, or one round too many, ends the call.
    pub(super) fn input_required(
        &mut self,
        now: Instant,
        request: u64,
        call: CallId,
        mut pending: super::Pending,
        result: Value,
    ) {
        let raw_state = self.raw_request_state.take();
        let gates = self.input_gates();
        let asked = match pending.resend.as_deref_mut() {
            // Only a stateless request can be retried with inputs.
            None => Err(
                "it asked for input in a multi round-trip request outside the 2026 era".to_owned(),
            ),
            Some(resend) => mrtr::InputRequired::from_result(&result, raw_state.as_deref())
                .and_then(|required| {
                    resend
                        .rounds
                        .get_or_insert_with(Default::default)
                        .begin(required, &gates)
                })
                .map_err(|e| e.to_string()),
        };
        let asks = match asked {
            Ok(asks) => asks,
            Err(reason) => {
                let error = super::CallError::InputRequired {
                    server: self.options.server.clone(),
                    reason,
                };
                self.end_held(call, &pending.purpose, error);
                return;
            }
        };
        if asks.is_empty() {
            return self.retry_with_inputs(pending);
        }
        // Held under the id it was answered on; `open` pauses its budget
        // (the deadline is already out of the timer table).
        self.pending.insert(request, pending);
        for ask in asks {
            let kind = OpenKind::of(&ask.question);
            self.open(now, Asker::Input(ask.key), call, kind, ask.question);
        }
    }

    /// What this session may ask a person or answer by itself, for a
    /// round of input requests (a call's, or its task's).
    pub(super) fn input_gates(&self) -> mrtr::Gates<'_> {
        mrtr::Gates {
            server: &self.options.server,
            elicitation: self.options.elicitation,
            elicitation_url: self.options.elicitation_url,
            sampling: self.options.sampling,
            workspace_root: self.options.workspace_root.as_deref(),
        }
    }

    /// An answer to one of a call's input requests; `answer` applies it to
    /// the call's rounds. The last answer sends the retry; a dismissed
    /// form ends the call as cancelled (the server is waiting on nothing,
    /// so nothing is sent).
    fn input_answered(
        &mut self,
        now: Instant,
        call: CallId,
        answer: impl FnOnce(&mut mrtr::Rounds) -> Answered,
    ) {
        let Some(request) = self.request_of(call) else {
            return;
        };
        let answered = self
            .pending
            .get_mut(&request)
            .and_then(|p| p.resend.as_deref_mut())
            .and_then(|r| r.rounds.as_deref_mut())
            .map(answer);
        match answered {
            Some(Answered::Ready) => {
                self.resume_budget(now, call);
                if let Some(pending) = self.pending.remove(&request) {
                    self.deadlines.remove(&(pending.deadline, request));
                    self.retry_with_inputs(pending);
                }
            }
            Some(Answered::Cancelled) => {
                if let Some(pending) = self.pending.remove(&request) {
                    // The server answered asking for input: nothing of
                    // the call runs there.
                    let error = super::CallError::Cancelled {
                        server: self.options.server.clone(),
                        notice: super::CancelNotice::NothingRunning,
                    };
                    self.end_held(call, &pending.purpose, error);
                }
            }
            _ => {}
        }
    }

    /// Ends a request that asked for input with `error`: a tool call with
    /// [`Event::CallCompleted`], a prompt, resource or completion request
    /// with [`Event::RequestCompleted`].
    fn end_held(&mut self, call: CallId, purpose: &super::Purpose, error: super::CallError) {
        self.call_tools.remove(&call.0);
        self.withdraw_questions_of(call);
        self.events.push_back(match purpose {
            super::Purpose::Feature(_) => Event::RequestCompleted {
                call,
                result: Err(error),
            },
            _ => Event::CallCompleted {
                call,
                result: Err(error),
            },
        });
    }

    /// Sends a request again under a new id with its round's inputs.
    fn retry_with_inputs(&mut self, mut pending: super::Pending) {
        if let Some(resend) = pending.resend.take() {
            self.reissue(pending, *resend);
        }
    }

    /// Whether `request` is a call's request held while its input
    /// questions are open: it was answered already, so a second answer to
    /// it is not the call's.
    pub(super) fn is_held_for_input(&self, request: u64) -> bool {
        self.pending
            .get(&request)
            .and_then(|p| p.resend.as_deref())
            .and_then(|r| r.rounds.as_deref())
            .is_some_and(|rounds| !rounds.is_ready())
            || self.is_held_for_task(request)
    }

    /// The call a server's question belongs to: the call whose task its
    /// `related-task` names (2025 tasks: the tag says whose it is, however
    /// many calls run), else the one tool call in flight. `Err` carries how
    /// many calls could have been meant (0 for a task of no call here).
    fn owner_of_question(&self, params: Option<&Value>) -> Result<CallId, usize> {
        match self.call_of_related_task(params) {
            Some(Ok(call)) => Ok(call),
            Some(Err(())) => Err(0),
            None => self.the_one_call(),
        }
    }

    /// The one tool call in flight, or how many there are.
    fn the_one_call(&self) -> Result<CallId, usize> {
        let mut calls = self.pending.values().filter_map(|p| match p.purpose {
            Purpose::CallTool(call) => Some(call),
            _ => None,
        });
        match (calls.next(), calls.next()) {
            (Some(call), None) => Ok(call),
            (None, _) => Err(0),
            (Some(_), Some(_)) => Err(2 + calls.count()),
        }
    }

    pub(super) fn open(
        &mut self,
        now: Instant,
        asker: Asker,
        call: CallId,
        open: OpenKind,
        kind: Question,
    ) {
        let question = QuestionId(self.next_question);
        self.next_question += 1;
        self.questions.insert(
            question,
            OpenQuestion {
                asker,
                call,
                kind: open,
            },
        );
        self.pause_budget(now, call);
        self.events.push_back(Event::Question {
            question,
            call,
            kind,
        });
    }

    /// Takes the call's deadline out of the timer table, keeping what was
    /// left of its budget.
    fn pause_budget(&mut self, now: Instant, call: CallId) {
        let Some(request) = self.request_of(call) else {
            return;
        };
        if let Some(p) = self.pending.get_mut(&request)
            && p.paused.is_none()
        {
            self.deadlines.remove(&(p.deadline, request));
            p.paused = Some(p.deadline.saturating_duration_since(now));
        }
    }

    /// Puts the call's deadline back once no question of it is open.
    pub(super) fn resume_budget(&mut self, now: Instant, call: CallId) {
        if self.questions.values().any(|q| q.call == call) {
            return;
        }
        let Some(request) = self.request_of(call) else {
            return;
        };
        if let Some(p) = self.pending.get_mut(&request)
            && let Some(left) = p.paused.take()
        {
            p.deadline = now + left;
            self.deadlines.insert((p.deadline, request));
        }
    }

    fn respond(&mut self, id: &ServerRequestId, result: &Value) {
        self.push_transmit(jsonrpc::response_bytes(id, result), TransmitKind::Response);
    }

    fn respond_error(&mut self, id: &ServerRequestId, error: &ErrorObject) {
        self.push_transmit(jsonrpc::error_bytes(id, error), TransmitKind::Response);
    }
}

/// How many accepted URL elicitations a session remembers, to know their
/// completions by.
pub(super) const MAX_URL_ELICITATIONS: usize = 64;

impl OpenKind {
    /// The kind of answer `question` takes. (An authorization question
    /// comes from the HTTP transport and is never opened here.)
    pub(super) fn of(question: &Question) -> Self {
        match question {
            Question::Elicitation(form) => OpenKind::Form(form.clone()),
            Question::Url(request) => OpenKind::Url(request.elicitation_id.clone()),
            Question::Sampling(_) | Question::Authorization { .. } => OpenKind::Sampling,
        }
    }
}

/// The error for a URL-mode request where rho declared forms only: the
/// spec's -32602 Invalid params.
fn undeclared_url_mode() -> ErrorObject {
    invalid_params("URL-mode elicitation was not declared by this client".to_owned())
}

/// JSON-RPC -32602 Invalid params, saying why.
fn invalid_params(message: String) -> ErrorObject {
    ErrorObject {
        code: jsonrpc::code::INVALID_PARAMS,
        message,
        data: None,
    }
}

/// A request id as the server sent it, read back from a notification.
fn wire_id(value: &Value) -> Option<RequestId> {
    match value {
        Value::String(s) => Some(RequestId::String(s.clone())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}
