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

use std::time::Instant;

use serde_json::Value;

use super::{CallId, Event, Purpose, Session, TransmitKind};
use crate::features::elicitation::{self, Form, FormAnswer};
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

/// A question waiting for the host.
#[derive(Debug)]
pub(super) struct OpenQuestion {
    /// The server's request id, for the answer.
    request: ServerRequestId,
    /// The call it is attached to.
    call: CallId,
    /// The form, to type the answers back (elicitation only).
    form: Option<Form>,
}

impl Session {
    /// Answers an elicitation question. Submitted answers are typed to the
    /// schema (an answer that cannot carry its type declines the request);
    /// a dismissed form is `cancel`, which also ends the call. Answering a
    /// question that is no longer open does nothing.
    pub fn answer_elicitation(&mut self, now: Instant, question: QuestionId, answer: FormAnswer) {
        let now = self.clock.observe(now);
        let Some(open) = self.questions.remove(&question) else {
            return;
        };
        let result = match &open.form {
            Some(form) => elicitation::result_for(form, &answer),
            None => elicitation::declined(),
        };
        self.push_transmit(
            jsonrpc::response_bytes(&open.request, &result),
            TransmitKind::Response,
        );
        self.resume_budget(now, open.call);
        if matches!(answer, FormAnswer::Dismissed) {
            // Dismissing the form ends the turn that caused it.
            self.cancel_call(now, open.call);
        }
    }

    /// Answers a sampling question.
    pub fn answer_sampling(&mut self, now: Instant, question: QuestionId, answer: SamplingAnswer) {
        let now = self.clock.observe(now);
        let Some(open) = self.questions.remove(&question) else {
            return;
        };
        let bytes = match answer {
            SamplingAnswer::Completed { text, model } => {
                jsonrpc::response_bytes(&open.request, &sampling::result_value(&text, &model))
            }
            SamplingAnswer::Refused => jsonrpc::error_bytes(&open.request, &sampling::rejected()),
            SamplingAnswer::Failed(reason) => jsonrpc::error_bytes(
                &open.request,
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
        if !self.options.elicitation {
            tracing::info!(server = %server, "elicitation declined: this run cannot ask a person");
            return self.respond(&id, &elicitation::declined());
        }
        let params = params.unwrap_or(Value::Null);
        let form = match elicitation::form_from_request(&params) {
            Ok(form) => form,
            Err(why) => {
                tracing::info!(server = %server, "elicitation declined: {why}");
                return self.respond(&id, &elicitation::declined());
            }
        };
        match self.the_one_call() {
            Ok(call) => self.open(
                now,
                id,
                call,
                Some(form.clone()),
                Question::Elicitation(form),
            ),
            Err(running) => {
                tracing::info!(server = %server, running, "elicitation declined: it must come during exactly one call");
                self.respond(&id, &elicitation::declined());
            }
        }
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
        let params = params.unwrap_or(Value::Null);
        let request = match sampling::parse_request(&server, &params) {
            Ok(request) => request,
            Err(why) => {
                return self.respond_error(
                    &id,
                    &ErrorObject {
                        code: jsonrpc::code::INVALID_PARAMS,
                        message: why,
                        data: None,
                    },
                );
            }
        };
        match self.the_one_call() {
            Ok(call) => self.open(now, id, call, None, Question::Sampling(request)),
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
            .find(|(_, q)| q.request.0 == request)
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
                match open.form {
                    Some(_) => self.respond(&open.request, &elicitation::declined()),
                    None => self.respond_error(&open.request, &sampling::rejected()),
                }
                self.events.push_back(Event::QuestionWithdrawn(question));
            }
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

    fn open(
        &mut self,
        now: Instant,
        request: ServerRequestId,
        call: CallId,
        form: Option<Form>,
        kind: Question,
    ) {
        let question = QuestionId(self.next_question);
        self.next_question += 1;
        self.questions.insert(
            question,
            OpenQuestion {
                request,
                call,
                form,
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
        if let Some(p) = self.pending.get_mut(&request) {
            if p.paused.is_none() {
                self.deadlines.remove(&(p.deadline, request));
                p.paused = Some(p.deadline.saturating_duration_since(now));
            }
        }
    }

    /// Puts the call's deadline back once no question of it is open.
    fn resume_budget(&mut self, now: Instant, call: CallId) {
        if self.questions.values().any(|q| q.call == call) {
            return;
        }
        let Some(request) = self.request_of(call) else {
            return;
        };
        if let Some(p) = self.pending.get_mut(&request) {
            if let Some(left) = p.paused.take() {
                p.deadline = now + left;
                self.deadlines.insert((p.deadline, request));
            }
        }
    }

    fn respond(&mut self, id: &ServerRequestId, result: &Value) {
        self.push_transmit(jsonrpc::response_bytes(id, result), TransmitKind::Response);
    }

    fn respond_error(&mut self, id: &ServerRequestId, error: &ErrorObject) {
        self.push_transmit(jsonrpc::error_bytes(id, error), TransmitKind::Response);
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
