//! Questions from a server (`elicitation/create`, `sampling/createMessage`)
//! through the session core, driven by a scripted server and a fake clock:
//! routing to the one call in flight, the paused call budget, answers typed
//! to the schema, withdrawal, and the capability gates.

// The fake clock needs one real `Instant` as its origin; after that, time
// only moves when a test says so.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rho_proto_core::config::{self, ServerConfig};
use rho_proto_core::connection::{Connection, HostContext, Output};
use rho_proto_core::features::elicitation::{FieldKind, FormAnswer, UrlAnswer, UrlWarning};
use rho_proto_core::session::{
    CallError, CallId, CancelNotice, Event, Question, QuestionId, SamplingAnswer, SessionOptions,
    SessionState,
};
use rho_proto_core::wire::jsonrpc::{Incoming, Message, RequestId};
use rho_proto_core::wire::protocol::CallToolResult;
use rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION;
use serde_json::{Value, json};

mod common;
use common::Stdio as Harness;

/// What these tests read off the shared harness.
impl Harness {
    /// A stdio session that can ask a person and sample, with a 5 s call
    /// budget.
    fn options(server: &str) -> SessionOptions {
        let mut o = SessionOptions::stdio(server);
        // The 2025 handshake, whose server requests these questions answer.
        o.protocol_version = LATEST_PROTOCOL_VERSION.into();
        o.startup_timeout = Duration::from_secs(10);
        o.tool_timeout = Duration::from_secs(5);
        o.elicitation = true;
        o.sampling = true;
        o
    }

    /// A ready session called `demo` with one tool, `work`.
    fn ready() -> Self {
        Self::ready_with(Self::options("demo"))
    }

    fn ready_with(options: SessionOptions) -> Self {
        let mut h = Self::new(options);
        h.drive_answering(&[
            (
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1.0"}
                }),
            ),
            (
                "tools/list",
                json!({"tools": [{"name": "work", "inputSchema": {"type": "object"}}]}),
            ),
        ]);
        assert_eq!(h.session.state(), SessionState::Ready);
        h.clear();
        h
    }

    fn last_request(&self) -> (RequestId, String, Option<Value>) {
        self.sent
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Request { id, method, params } => {
                    Some((id.clone(), method.clone(), params.clone()))
                }
                _ => None,
            })
            .expect("a request was sent")
    }

    fn answer_last(&mut self, result: Value) {
        let (id, _, _) = self.last_request();
        self.reply(id, result);
    }

    /// Starts a call to `work` and returns its id and its wire request id.
    fn call(&mut self) -> (CallId, RequestId) {
        let call = self
            .session
            .call_tool(self.now, "work", json!({}))
            .expect("ready");
        self.drain();
        let (id, method, _) = self.last_request();
        assert_eq!(method, "tools/call");
        (call, id)
    }

    /// The server answers the call with wire id `id`.
    fn finish_call(&mut self, id: &RequestId, text: &str) {
        self.say(json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"content": [{"type": "text", "text": text}]}
        }));
    }

    /// The server asks the form `schema` under request id `id`.
    fn server_elicits(&mut self, id: Value, schema: Value) {
        self.say(json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "elicitation/create",
            "params": {"message": "Which one?", "requestedSchema": schema}
        }));
    }

    /// The server asks for a completion under request id `id`.
    fn server_samples(&mut self, id: Value) {
        self.say(json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Summarise."}}],
                "maxTokens": 64
            }
        }));
    }

    /// Every message the client sent in answer to the server's request `id`.
    fn replies_to(&self, id: &RequestId) -> Vec<&Message> {
        self.sent
            .iter()
            .filter(|m| match m {
                Message::Response { id: got, .. } => got == id,
                Message::Error { id: Some(got), .. } => got == id,
                _ => false,
            })
            .collect()
    }

    /// The one result the client sent for the server's request `id`.
    fn only_result_for(&self, id: &RequestId) -> Value {
        match self.replies_to(id).as_slice() {
            [Message::Response { result, .. }] => result.clone(),
            other => panic!("expected one result for {id}, got {other:?}"),
        }
    }

    /// The one error the client sent for the server's request `id`.
    fn only_error_for(&self, id: &RequestId) -> (i64, String) {
        match self.replies_to(id).as_slice() {
            [Message::Error { error, .. }] => (error.code, error.message.clone()),
            other => panic!("expected one error for {id}, got {other:?}"),
        }
    }

    fn questions(&self) -> Vec<(QuestionId, CallId, Question)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Question {
                    question,
                    call,
                    kind,
                } => Some((*question, *call, kind.clone())),
                _ => None,
            })
            .collect()
    }

    /// The one question asked so far.
    fn only_question(&self) -> (QuestionId, CallId, Question) {
        let questions = self.questions();
        assert_eq!(questions.len(), 1, "{:?}", self.events);
        questions.into_iter().next().expect("one question")
    }

    fn withdrawn(&self) -> Vec<QuestionId> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::QuestionWithdrawn(q) => Some(*q),
                _ => None,
            })
            .collect()
    }

    /// The results of every `CallCompleted` for `call`.
    fn completed(&self, call: CallId) -> Vec<Result<CallToolResult, CallError>> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::CallCompleted { call: c, result } if *c == call => Some(result.clone()),
                _ => None,
            })
            .collect()
    }

    /// The `notifications/cancelled` params sent so far.
    fn cancellations(&self) -> Vec<Value> {
        self.sent
            .iter()
            .filter_map(|m| match m {
                Message::Notification { method, params } if method == "notifications/cancelled" => {
                    Some(params.clone().unwrap_or(Value::Null))
                }
                _ => None,
            })
            .collect()
    }
}

/// A one-field form: pick a colour.
fn colour_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
        "required": ["colour"]
    })
}

fn submitted(answers: &[(&str, &[&str])]) -> FormAnswer {
    FormAnswer::Submitted(
        answers
            .iter()
            .map(|(name, texts)| {
                (
                    (*name).to_owned(),
                    texts.iter().map(|t| (*t).to_owned()).collect(),
                )
            })
            .collect::<BTreeMap<_, _>>(),
    )
}

fn declined() -> Value {
    json!({"action": "decline"})
}

fn num(n: i64) -> RequestId {
    RequestId::Number(n)
}

fn string_id(s: &str) -> RequestId {
    RequestId::String(s.to_owned())
}

/// The capabilities rho declared in the `initialize` it sent first.
/// The capabilities the first message declares: `initialize`'s, or (the
/// 2026 era's probe) `server/discover`'s per-request `_meta`.
fn declared_capabilities(sent: &[Message]) -> Value {
    match sent.first() {
        Some(Message::Request { method, params, .. }) if method == "initialize" => params
            .as_ref()
            .map(|p| p["capabilities"].clone())
            .expect("initialize has params"),
        Some(Message::Request { method, params, .. }) if method == "server/discover" => params
            .as_ref()
            .map(|p| p["_meta"]["io.modelcontextprotocol/clientCapabilities"].clone())
            .expect("server/discover has params"),
        other => panic!("the first message is neither initialize nor server/discover: {other:?}"),
    }
}

// ----- routing: elicitation -----

#[test]
fn elicitation_with_no_call_in_flight_is_declined_at_once_without_asking() {
    let mut h = Harness::ready();
    h.server_elicits(json!(7), colour_schema());
    assert_eq!(h.only_result_for(&num(7)), declined());
    assert!(h.questions().is_empty(), "{:?}", h.events);
    assert_eq!(h.session.open_questions(), 0);
}

#[test]
fn elicitation_during_exactly_one_call_is_asked_and_attached_to_that_call() {
    let mut h = Harness::ready();
    let (call, _) = h.call();
    h.server_elicits(json!("e-1"), colour_schema());
    let (question, on, kind) = h.only_question();
    assert_eq!(on, call, "attached to the one call in flight");
    let Question::Elicitation(form) = kind else {
        panic!("expected a form, got {kind:?}");
    };
    assert_eq!(form.message, "Which one?");
    assert_eq!(form.fields.len(), 1);
    assert_eq!(form.fields[0].name, "colour");
    assert!(form.fields[0].required);
    let FieldKind::Choice { options, multi } = &form.fields[0].kind else {
        panic!("expected a choice: {:?}", form.fields[0]);
    };
    assert!(!multi);
    let values: Vec<_> = options.iter().map(|o| o.value.as_str()).collect();
    assert_eq!(values, ["red", "blue"]);
    // Nothing is sent back until the host answers.
    assert!(h.replies_to(&string_id("e-1")).is_empty(), "{:?}", h.sent);
    assert_eq!(h.session.open_questions(), 1);

    h.session
        .answer_elicitation(h.now, question, submitted(&[("colour", &["blue"])]));
    h.drain();
    assert_eq!(
        h.only_result_for(&string_id("e-1")),
        json!({"action": "accept", "content": {"colour": "blue"}})
    );
    assert_eq!(h.session.open_questions(), 0);
    assert!(h.completed(call).is_empty(), "the call is still running");
}

#[test]
fn elicitation_during_two_calls_is_declined_without_asking() {
    let mut h = Harness::ready();
    h.call();
    h.call();
    assert_eq!(h.session.calls_in_flight(), 2);
    h.server_elicits(json!(3), colour_schema());
    assert_eq!(h.only_result_for(&num(3)), declined());
    assert!(h.questions().is_empty(), "{:?}", h.events);
    assert_eq!(h.session.open_questions(), 0);
}

// ----- routing: sampling -----

#[test]
fn sampling_with_no_call_in_flight_is_rejected_at_once_without_asking() {
    let mut h = Harness::ready();
    h.server_samples(json!(5));
    assert_eq!(
        h.only_error_for(&num(5)),
        (-1, "User rejected sampling request".to_owned())
    );
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

#[test]
fn sampling_during_exactly_one_call_is_asked_and_attached_to_that_call() {
    let mut h = Harness::ready();
    let (call, _) = h.call();
    h.server_samples(json!("s-1"));
    let (question, on, kind) = h.only_question();
    assert_eq!(on, call);
    let Question::Sampling(request) = kind else {
        panic!("expected a sampling question, got {kind:?}");
    };
    assert_eq!(request.message_count, 1);
    assert_eq!(request.max_tokens, Some(64));
    assert_eq!(request.prompt, "User:\nSummarise.");
    assert!(h.replies_to(&string_id("s-1")).is_empty(), "{:?}", h.sent);

    h.session.answer_sampling(
        h.now,
        question,
        SamplingAnswer::Completed {
            text: "A summary.".into(),
            model: "test-model".into(),
        },
    );
    h.drain();
    assert_eq!(
        h.only_result_for(&string_id("s-1")),
        json!({
            "role": "assistant",
            "content": {"type": "text", "text": "A summary."},
            "model": "test-model",
            "stopReason": "endTurn"
        })
    );
    assert!(h.completed(call).is_empty(), "the call is still running");
}

#[test]
fn sampling_during_two_calls_is_rejected_without_asking() {
    let mut h = Harness::ready();
    h.call();
    h.call();
    h.server_samples(json!(9));
    assert_eq!(
        h.only_error_for(&num(9)),
        (-1, "User rejected sampling request".to_owned())
    );
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

#[test]
fn refused_sampling_is_rejected_and_a_failed_model_is_an_internal_error() {
    let mut h = Harness::ready();
    h.call();
    h.server_samples(json!(1));
    let (question, _, _) = h.only_question();
    h.session
        .answer_sampling(h.now, question, SamplingAnswer::Refused);
    h.drain();
    assert_eq!(
        h.only_error_for(&num(1)),
        (-1, "User rejected sampling request".to_owned())
    );

    h.server_samples(json!(2));
    let (question, _, _) = h.questions()[1].clone();
    h.session
        .answer_sampling(h.now, question, SamplingAnswer::Failed("boom".into()));
    h.drain();
    let (code, message) = h.only_error_for(&num(2));
    assert_eq!(code, -32603);
    assert!(message.contains("boom"), "{message}");
}

#[test]
fn two_servers_asking_at_once_each_get_their_own_question_on_their_own_call() {
    let origin = Instant::now();
    let mut alpha = Harness::new_at(Harness::options("alpha"), origin);
    let mut beta = Harness::new_at(Harness::options("beta"), origin);
    for h in [&mut alpha, &mut beta] {
        h.answer_last(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1.0"}
        }));
        h.answer_last(json!({"tools": [{"name": "work", "inputSchema": {"type": "object"}}]}));
        h.sent.clear();
        h.events.clear();
    }
    // Beta ran one call to the end first, so its call in flight has a
    // different id from alpha's.
    let (_, done) = beta.call();
    beta.finish_call(&done, "earlier");
    let (alpha_call, _) = alpha.call();
    let (beta_call, _) = beta.call();
    assert_ne!(alpha_call, beta_call);

    // Both ask, with the same request id, before either is answered.
    alpha.server_elicits(json!(0), colour_schema());
    beta.server_elicits(json!(0), colour_schema());
    let (alpha_q, on, _) = alpha.only_question();
    assert_eq!(on, alpha_call);
    let (beta_q, on, _) = beta.only_question();
    assert_eq!(on, beta_call);

    alpha
        .session
        .answer_elicitation(alpha.now, alpha_q, submitted(&[("colour", &["red"])]));
    alpha.drain();
    beta.drain();
    assert_eq!(
        alpha.only_result_for(&num(0)),
        json!({"action": "accept", "content": {"colour": "red"}})
    );
    assert!(
        beta.replies_to(&num(0)).is_empty(),
        "answering alpha sent nothing to beta: {:?}",
        beta.sent
    );
    assert_eq!(beta.session.open_questions(), 1);

    beta.session
        .answer_elicitation(beta.now, beta_q, submitted(&[("colour", &["blue"])]));
    beta.drain();
    assert_eq!(
        beta.only_result_for(&num(0)),
        json!({"action": "accept", "content": {"colour": "blue"}})
    );
    assert_eq!(alpha.replies_to(&num(0)).len(), 1, "{:?}", alpha.sent);
}

// ----- the paused budget -----

#[test]
fn an_open_question_pauses_the_call_budget_and_the_answer_resumes_what_was_left() {
    let mut h = Harness::ready();
    let t0 = h.now;
    let (call, wire) = h.call();
    assert_eq!(h.session.poll_timeout(), Some(t0 + Duration::from_secs(5)));

    h.now = t0 + Duration::from_secs(3);
    h.server_elicits(json!(11), colour_schema());
    let (question, _, _) = h.only_question();
    assert_eq!(
        h.session.poll_timeout(),
        None,
        "the call's deadline is out of the timer table while a person is asked"
    );

    // Time passes well beyond the budget: the call does not time out.
    for secs in [5, 6, 30, 59] {
        h.now = t0 + Duration::from_secs(secs);
        h.session.handle_timeout(h.now);
        h.drain();
        assert!(h.completed(call).is_empty(), "timed out at t={secs}s");
        assert!(h.cancellations().is_empty(), "{:?}", h.sent);
        assert_eq!(h.session.poll_timeout(), None);
    }

    h.now = t0 + Duration::from_secs(60);
    h.session
        .answer_elicitation(h.now, question, submitted(&[("colour", &["red"])]));
    h.drain();
    assert_eq!(
        h.session.poll_timeout(),
        Some(t0 + Duration::from_secs(62)),
        "the 2 s left when the question opened"
    );

    h.session.handle_timeout(t0 + Duration::from_millis(61_999));
    h.drain();
    assert!(h.completed(call).is_empty());

    h.now = t0 + Duration::from_secs(62);
    h.session.handle_timeout(h.now);
    h.drain();
    match h.completed(call).as_slice() {
        [Err(CallError::Timeout { server, budget })] => {
            assert_eq!(server, "demo");
            assert_eq!(*budget, Duration::from_secs(5));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(
        h.cancellations(),
        [json!({"requestId": wire, "reason": "timed out"})]
    );
}

#[test]
fn an_open_sampling_question_pauses_the_call_budget_too() {
    let mut h = Harness::ready();
    let t0 = h.now;
    let (call, _) = h.call();
    h.now = t0 + Duration::from_secs(1);
    h.server_samples(json!(4));
    let (question, _, _) = h.only_question();
    assert_eq!(h.session.poll_timeout(), None);
    h.now = t0 + Duration::from_secs(100);
    h.session.handle_timeout(h.now);
    h.drain();
    assert!(h.completed(call).is_empty());
    h.session.answer_sampling(
        h.now,
        question,
        SamplingAnswer::Completed {
            text: "ok".into(),
            model: "m".into(),
        },
    );
    h.drain();
    assert_eq!(
        h.session.poll_timeout(),
        Some(t0 + Duration::from_secs(104))
    );
}

// ----- what the answer sends -----

#[test]
fn number_answers_reach_the_server_as_json_numbers_and_text_stays_text() {
    let mut h = Harness::ready();
    h.call();
    h.server_elicits(
        json!(20),
        json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "half": {"type": "number"},
                "label": {"type": "string"},
                "agree": {"type": "boolean"}
            },
            "required": ["count"]
        }),
    );
    let (question, _, _) = h.only_question();
    h.session.answer_elicitation(
        h.now,
        question,
        submitted(&[
            ("count", &["3"]),
            ("ratio", &["3"]),
            ("half", &["0.5"]),
            ("label", &["3"]),
            ("agree", &["yes"]),
        ]),
    );
    h.drain();
    let result = h.only_result_for(&num(20));
    assert_eq!(
        result,
        json!({
            "action": "accept",
            "content": {"count": 3, "ratio": 3, "half": 0.5, "label": "3", "agree": true}
        })
    );
    assert!(result["content"]["count"].is_i64(), "{result}");
    assert!(result["content"]["ratio"].is_number(), "{result}");
    assert!(result["content"]["label"].is_string(), "{result}");
}

#[test]
fn an_answer_that_cannot_carry_its_type_declines() {
    let mut h = Harness::ready();
    h.call();
    h.server_elicits(
        json!(21),
        json!({"type": "object", "properties": {"count": {"type": "integer"}}}),
    );
    let (question, _, _) = h.only_question();
    h.session
        .answer_elicitation(h.now, question, submitted(&[("count", &["three"])]));
    h.drain();
    assert_eq!(h.only_result_for(&num(21)), declined());
}

#[test]
fn a_dismissed_form_sends_cancel_and_ends_the_call_as_cancelled() {
    let mut h = Harness::ready();
    let (call, wire) = h.call();
    h.server_elicits(json!("e-9"), colour_schema());
    let (question, _, _) = h.only_question();
    h.sent.clear();
    h.session
        .answer_elicitation(h.now, question, FormAnswer::Dismissed);
    h.drain();
    assert_eq!(
        h.only_result_for(&string_id("e-9")),
        json!({"action": "cancel"})
    );
    assert_eq!(
        h.cancellations(),
        [json!({"requestId": wire, "reason": "cancelled by the user"})]
    );
    assert_eq!(h.methods(), ["<response>", "notifications/cancelled"]);
    match h.completed(call).as_slice() {
        [
            Err(CallError::Cancelled {
                server,
                notice: CancelNotice::Told,
            }),
        ] => assert_eq!(server, "demo"),
        other => panic!("expected a cancelled call, got {other:?}"),
    }
    assert_eq!(h.session.calls_in_flight(), 0);
    assert_eq!(h.session.poll_timeout(), None);
    // A late result for the cancelled call completes nothing more.
    h.finish_call(&wire, "too late");
    assert_eq!(h.completed(call).len(), 1);
}

#[test]
fn could_not_ask_declines_and_the_call_carries_on() {
    let mut h = Harness::ready();
    let t0 = h.now;
    let (call, wire) = h.call();
    h.now = t0 + Duration::from_secs(1);
    h.server_elicits(json!(30), colour_schema());
    let (question, _, _) = h.only_question();
    h.now = t0 + Duration::from_secs(10);
    h.session
        .answer_elicitation(h.now, question, FormAnswer::CouldNotAsk);
    h.drain();
    assert_eq!(h.only_result_for(&num(30)), declined());
    assert!(h.cancellations().is_empty(), "{:?}", h.sent);
    assert!(h.completed(call).is_empty());
    assert_eq!(h.session.poll_timeout(), Some(t0 + Duration::from_secs(14)));
    h.finish_call(&wire, "done without it");
    match h.completed(call).as_slice() {
        [Ok(result)] => assert_eq!(result.text(), "done without it"),
        other => panic!("expected the call's result, got {other:?}"),
    }
}

// ----- declined without asking -----

#[test]
fn an_unrenderable_schema_is_declined_whole_without_asking() {
    let mut h = Harness::ready();
    h.call();
    let schemas = [
        json!({"type": "object", "properties": {}}),
        json!({"type": "object"}),
        json!({"type": "object", "properties": {"pick": {"type": "string", "enum": []}}}),
        json!({"type": "object", "properties": {
            "ok": {"type": "string"},
            "nested": {"type": "object", "properties": {"x": {"type": "string"}}}
        }}),
    ];
    for (n, schema) in schemas.into_iter().enumerate() {
        let id = 50 + n as i64;
        h.server_elicits(json!(id), schema.clone());
        assert_eq!(h.only_result_for(&num(id)), declined(), "{schema}");
    }
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

#[test]
fn elicitation_off_is_not_declared_and_every_request_is_declined() {
    let on = Harness::new(Harness::options("demo"));
    assert_eq!(
        declared_capabilities(&on.sent)["elicitation"],
        json!({"form": {}})
    );

    let mut options = Harness::options("demo");
    options.elicitation = false;
    let mut h = Harness::new(options);
    let capabilities = declared_capabilities(&h.sent);
    assert!(
        capabilities.get("elicitation").is_none(),
        "declared anyway: {capabilities}"
    );
    h.answer_last(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "1.0"}
    }));
    h.answer_last(json!({"tools": [{"name": "work", "inputSchema": {"type": "object"}}]}));
    h.call();
    h.server_elicits(json!(60), colour_schema());
    assert_eq!(h.only_result_for(&num(60)), declined());
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

#[test]
fn sampling_off_is_not_declared_and_every_request_is_rejected() {
    let on = Harness::new(Harness::options("demo"));
    assert_eq!(declared_capabilities(&on.sent)["sampling"], json!({}));

    let mut options = Harness::options("demo");
    options.sampling = false;
    let mut h = Harness::new(options);
    let capabilities = declared_capabilities(&h.sent);
    assert!(
        capabilities.get("sampling").is_none(),
        "declared anyway: {capabilities}"
    );
    h.answer_last(json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "1.0"}
    }));
    h.answer_last(json!({"tools": [{"name": "work", "inputSchema": {"type": "object"}}]}));
    h.call();
    h.server_samples(json!(61));
    assert_eq!(
        h.only_error_for(&num(61)),
        (-1, "User rejected sampling request".to_owned())
    );
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

// ----- withdrawal -----

#[test]
fn server_cancelling_its_request_withdraws_the_question_and_a_late_answer_sends_nothing() {
    // A numeric request id (elicitation) and a string one (sampling).
    for (id, sampling) in [(json!(70), false), (json!("s-70"), true)] {
        let mut h = Harness::ready();
        let t0 = h.now;
        let (call, _) = h.call();
        h.now = t0 + Duration::from_secs(2);
        if sampling {
            h.server_samples(id.clone());
        } else {
            h.server_elicits(id.clone(), colour_schema());
        }
        let (question, _, _) = h.only_question();
        h.now = t0 + Duration::from_secs(40);
        h.say(json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "no longer needed"}
        }));
        assert_eq!(h.withdrawn(), [question], "{id}: {:?}", h.events);
        assert_eq!(h.session.open_questions(), 0);
        assert!(h.completed(call).is_empty(), "the call carries on");
        assert_eq!(
            h.session.poll_timeout(),
            Some(t0 + Duration::from_secs(43)),
            "{id}: the budget resumes"
        );

        let before = h.sent.len();
        if sampling {
            h.session.answer_sampling(
                h.now,
                question,
                SamplingAnswer::Completed {
                    text: "late".into(),
                    model: "m".into(),
                },
            );
        } else {
            h.session
                .answer_elicitation(h.now, question, submitted(&[("colour", &["red"])]));
        }
        h.drain();
        assert_eq!(h.sent.len(), before, "{id}: sent {:?}", &h.sent[before..]);
    }
}

#[test]
fn a_cancellation_for_another_request_withdraws_nothing() {
    let mut h = Harness::ready();
    h.call();
    h.server_elicits(json!(71), colour_schema());
    h.say(json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": "71"}
    }));
    assert!(h.withdrawn().is_empty(), "{:?}", h.events);
    assert_eq!(h.session.open_questions(), 1);
}

#[test]
fn the_call_ending_while_its_question_is_open_withdraws_it_and_declines_the_request() {
    let mut h = Harness::ready();
    let (call, wire) = h.call();
    h.server_elicits(json!(80), colour_schema());
    let (question, _, _) = h.only_question();
    h.finish_call(&wire, "finished anyway");
    assert_eq!(h.withdrawn(), [question]);
    assert_eq!(h.only_result_for(&num(80)), declined());
    let withdrawn_at = h
        .events
        .iter()
        .position(|e| matches!(e, Event::QuestionWithdrawn(_)));
    let completed_at = h
        .events
        .iter()
        .position(|e| matches!(e, Event::CallCompleted { .. }));
    assert!(
        withdrawn_at < completed_at,
        "the host hears the question is gone before the call ends: {:?}",
        h.events
    );
    match h.completed(call).as_slice() {
        [Ok(result)] => assert_eq!(result.text(), "finished anyway"),
        other => panic!("expected the call's result, got {other:?}"),
    }
    let before = h.sent.len();
    h.session
        .answer_elicitation(h.now, question, submitted(&[("colour", &["red"])]));
    h.drain();
    assert_eq!(h.sent.len(), before, "a late answer sends nothing");
}

#[test]
fn the_call_ending_while_a_sampling_question_is_open_rejects_the_request() {
    let mut h = Harness::ready();
    let (_, wire) = h.call();
    h.server_samples(json!(81));
    let (question, _, _) = h.only_question();
    h.finish_call(&wire, "finished anyway");
    assert_eq!(h.withdrawn(), [question]);
    assert_eq!(
        h.only_error_for(&num(81)),
        (-1, "User rejected sampling request".to_owned())
    );
}

#[test]
fn the_host_cancelling_the_call_withdraws_its_question_and_declines_the_request() {
    let mut h = Harness::ready();
    let (call, wire) = h.call();
    h.server_elicits(json!(82), colour_schema());
    let (question, _, _) = h.only_question();
    h.session.cancel_call(h.now, call);
    h.drain();
    assert_eq!(h.withdrawn(), [question]);
    assert_eq!(h.only_result_for(&num(82)), declined());
    assert_eq!(
        h.cancellations(),
        [json!({"requestId": wire, "reason": "cancelled by the user"})]
    );
}

// ----- the config gate -----

fn server_config(text: &str, id: &str) -> ServerConfig {
    let config = config::parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    config
        .get(id)
        .and_then(|entry| entry.config.clone().ok())
        .unwrap_or_else(|| panic!("no valid server `{id}` in\n{text}"))
}

/// The capabilities a fresh connection declares in its first transmit.
fn connection_capabilities(config: &ServerConfig, host: &HostContext<'_>) -> Value {
    let mut conn = Connection::new(config, host, Instant::now()).expect("connection");
    let Some(Output::Write(bytes)) = conn.poll_output() else {
        panic!("a stdio connection writes its probe first");
    };
    match Incoming::parse(&bytes).expect("valid JSON-RPC") {
        Incoming::Single(message) => declared_capabilities(&[message]),
        other => panic!("expected one message, got {other:?}"),
    }
}

#[test]
fn a_plugin_server_cannot_opt_into_sampling() {
    let text = "[mcp.servers.p]\ntransport = \"stdio\"\ncommand = \"x\"\nsampling = \"ask\"\n";
    let own = server_config(text, "p");
    assert!(own.sampling_allowed());
    let mut plugin = own.clone();
    plugin.plugin = Some("p".into());
    assert!(!plugin.sampling_allowed());

    let host = HostContext {
        can_sample: true,
        can_elicit: true,
        ..HostContext::default()
    };
    let declared = connection_capabilities(&plugin, &host);
    assert!(
        declared.get("sampling").is_none(),
        "a plugin's server was offered sampling: {declared}"
    );
    assert_eq!(declared["elicitation"], json!({"form": {}}));
    let declared = connection_capabilities(&own, &host);
    assert_eq!(declared["sampling"], json!({}), "{declared}");
}

#[test]
fn sampling_is_declared_only_when_config_and_host_both_allow_it() {
    let ask = server_config(
        "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nsampling = \"ask\"\n",
        "a",
    );
    let default = server_config(
        "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\n",
        "a",
    );
    assert!(!default.sampling_allowed());
    let with_model = HostContext {
        can_sample: true,
        ..HostContext::default()
    };
    let without_model = HostContext::default();
    for (config, host, expected) in [
        (&ask, &with_model, true),
        (&ask, &without_model, false),
        (&default, &with_model, false),
        (&default, &without_model, false),
    ] {
        let declared = connection_capabilities(config, host);
        assert_eq!(
            declared.get("sampling").is_some(),
            expected,
            "{:?} can_sample={}: {declared}",
            config.sampling,
            host.can_sample
        );
        assert!(declared.get("elicitation").is_none(), "{declared}");
    }
}

#[test]
fn the_budget_resumes_only_when_the_last_question_of_the_call_is_answered() {
    let mut h = Harness::ready();
    let t0 = h.now;
    h.call();
    h.now = t0 + Duration::from_secs(1);
    h.server_elicits(json!(90), colour_schema());
    h.now = t0 + Duration::from_secs(2);
    h.server_samples(json!(91));
    let questions = h.questions();
    assert_eq!(questions.len(), 2, "{:?}", h.events);
    h.now = t0 + Duration::from_secs(30);
    h.session
        .answer_elicitation(h.now, questions[0].0, submitted(&[("colour", &["red"])]));
    h.drain();
    assert_eq!(h.session.poll_timeout(), None, "one question is still open");
    h.now = t0 + Duration::from_secs(50);
    h.session
        .answer_sampling(h.now, questions[1].0, SamplingAnswer::Refused);
    h.drain();
    assert_eq!(
        h.session.poll_timeout(),
        Some(t0 + Duration::from_secs(54)),
        "the 4 s left when the first question opened"
    );
}

// ----- URL mode -----

impl Harness {
    /// A ready session that declared URL mode beside forms.
    fn ready_for_urls() -> Self {
        let mut options = Self::options("demo");
        options.elicitation_url = true;
        Self::ready_with(options)
    }

    /// The server asks, under request id `id`, for `url` to be opened.
    fn server_asks_to_open(&mut self, id: Value, url: &str, elicitation_id: &str) {
        self.say(json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": "Connect your account",
                "url": url,
                "elicitationId": elicitation_id
            }
        }));
    }

    /// The `elicitationId`s of every completion the session reported.
    fn completions(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::UrlElicitationCompleted { elicitation_id } => Some(elicitation_id.clone()),
                _ => None,
            })
            .collect()
    }

    fn server_completes(&mut self, elicitation_id: &str) {
        self.say(json!({
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": elicitation_id}
        }));
    }
}

#[test]
fn url_mode_is_declared_beside_forms_only_when_the_host_can_open_urls() {
    let mut options = Harness::options("demo");
    options.elicitation_url = true;
    let on = Harness::new(options);
    assert_eq!(
        declared_capabilities(&on.sent)["elicitation"],
        json!({"form": {}, "url": {}})
    );
    let config = server_config(
        "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\n",
        "a",
    );
    for (can_elicit, can_open_urls, expected) in [
        (true, true, Some(json!({"form": {}, "url": {}}))),
        (true, false, Some(json!({"form": {}}))),
        (false, true, None),
    ] {
        let host = HostContext {
            can_elicit,
            can_open_urls,
            ..HostContext::default()
        };
        let declared = connection_capabilities(&config, &host);
        assert_eq!(declared.get("elicitation").cloned(), expected, "{declared}");
    }
}

#[test]
fn a_url_request_during_one_call_is_asked_and_an_opened_url_is_accepted_without_content() {
    let mut h = Harness::ready_for_urls();
    let t0 = h.now;
    let (call, wire) = h.call();
    h.server_asks_to_open(json!("u-1"), "https://auth.example.com/connect?e=1", "e-1");
    let (question, on, kind) = h.only_question();
    assert_eq!(on, call);
    let Question::Url(request) = kind else {
        panic!("expected a URL question, got {kind:?}");
    };
    assert_eq!(request.url, "https://auth.example.com/connect?e=1");
    assert_eq!(request.host, "auth.example.com");
    assert_eq!(request.elicitation_id.as_deref(), Some("e-1"));
    assert!(h.replies_to(&string_id("u-1")).is_empty(), "{:?}", h.sent);
    assert_eq!(
        h.session.poll_timeout(),
        None,
        "the budget waits on the person"
    );
    h.now = t0 + Duration::from_secs(60);
    h.session.answer_url(h.now, question, UrlAnswer::Opened);
    h.drain();
    assert_eq!(
        h.only_result_for(&string_id("u-1")),
        json!({"action": "accept"})
    );
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(5)),
        "the budget resumes"
    );
    // A second answer sends nothing more.
    h.session.answer_url(h.now, question, UrlAnswer::Declined);
    h.drain();
    assert_eq!(h.replies_to(&string_id("u-1")).len(), 1);
    // Its completion is reported once; one for an id never shown is not.
    h.server_completes("someone-elses");
    h.server_completes("e-1");
    h.server_completes("e-1");
    assert_eq!(h.completions(), ["e-1"]);
    h.finish_call(&wire, "connected");
    assert!(matches!(h.completed(call).as_slice(), [Ok(_)]));
}

#[test]
fn a_declined_url_is_decline_and_a_dismissed_one_is_cancel_and_ends_the_call() {
    let mut h = Harness::ready_for_urls();
    let (call, _) = h.call();
    h.server_asks_to_open(json!(1), "https://a.example/", "e-1");
    let (question, _, _) = h.only_question();
    h.session.answer_url(h.now, question, UrlAnswer::Declined);
    h.drain();
    assert_eq!(h.only_result_for(&num(1)), declined());
    h.server_asks_to_open(json!(2), "https://a.example/", "e-2");
    let (question, _, _) = h.questions()[1].clone();
    h.session
        .answer_url(h.now, question, UrlAnswer::CouldNotAsk);
    h.drain();
    assert_eq!(h.only_result_for(&num(2)), declined());
    // A URL declined was never opened: its completion is not one rho knows.
    h.server_completes("e-1");
    assert!(h.completions().is_empty());
    h.server_asks_to_open(json!(3), "https://a.example/", "e-3");
    let (question, _, _) = h.questions()[2].clone();
    h.session.answer_url(h.now, question, UrlAnswer::Dismissed);
    h.drain();
    assert_eq!(h.only_result_for(&num(3)), json!({"action": "cancel"}));
    assert!(
        matches!(
            h.completed(call).as_slice(),
            [Err(CallError::Cancelled { .. })]
        ),
        "{:?}",
        h.events
    );
}

#[test]
fn an_undeclared_url_mode_is_invalid_params_not_a_decline() {
    // Forms declared, URL mode not (`--yes-defaults`), and nothing declared
    // (no one to ask): either way the spec's -32602.
    for elicitation in [true, false] {
        let mut options = Harness::options("demo");
        options.elicitation = elicitation;
        let mut h = Harness::ready_with(options);
        let (call, _) = h.call();
        let deadline = h.session.poll_timeout();
        h.server_asks_to_open(json!(40), "https://example.com/login", "abc");
        let (code, message) = h.only_error_for(&num(40));
        assert_eq!(code, -32602);
        assert_eq!(
            message,
            "URL-mode elicitation was not declared by this client"
        );
        assert!(h.questions().is_empty(), "{:?}", h.events);
        assert_eq!(h.session.poll_timeout(), deadline, "the budget runs on");
        assert!(h.completed(call).is_empty(), "the call carries on");
    }
}

#[test]
fn a_url_request_rho_cannot_show_safely_is_invalid_params_naming_why() {
    let mut h = Harness::ready_for_urls();
    h.call();
    for (n, (url, why)) in [
        ("file:///etc/passwd", "scheme is `file`"),
        ("javascript:alert(1)", "scheme is `javascript`"),
        ("nonsense", "does not parse"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 70 + n as i64;
        h.server_asks_to_open(json!(id), url, "e");
        let (code, message) = h.only_error_for(&num(id));
        assert_eq!(code, -32602, "{url}");
        assert!(message.contains(why), "{url}: {message}");
    }
    h.say(
        json!({"jsonrpc": "2.0", "id": 80, "method": "elicitation/create",
        "params": {"mode": "url", "message": "m", "url": "https://a.example/"}}),
    );
    assert!(h.only_error_for(&num(80)).1.contains("no `elicitationId`"));
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

#[test]
fn a_url_request_with_no_call_or_two_is_declined_as_a_form_is() {
    let mut h = Harness::ready_for_urls();
    h.server_asks_to_open(json!(1), "https://a.example/", "e");
    assert_eq!(h.only_result_for(&num(1)), declined());
    h.call();
    h.call();
    h.server_asks_to_open(json!(2), "https://a.example/", "e");
    assert_eq!(h.only_result_for(&num(2)), declined());
    assert!(h.questions().is_empty(), "{:?}", h.events);
}

#[test]
fn the_call_ending_while_a_url_question_is_open_withdraws_it_and_declines() {
    let mut h = Harness::ready_for_urls();
    let (_, wire) = h.call();
    h.server_asks_to_open(json!(5), "https://a.example/", "e");
    let (question, _, _) = h.only_question();
    h.finish_call(&wire, "gave up waiting");
    assert_eq!(h.withdrawn(), [question]);
    assert_eq!(h.only_result_for(&num(5)), declined());
}

#[test]
fn a_url_elicitation_required_error_carries_its_urls_checked_and_their_completion_is_known() {
    let mut h = Harness::ready_for_urls();
    let (call, wire) = h.call();
    h.say(json!({"jsonrpc": "2.0", "id": wire, "error": {
        "code": -32042,
        "message": "This request requires more information.",
        "data": {"elicitations": [{
            "mode": "url",
            "elicitationId": "550e",
            "url": "https://mcp.example.com/connect?elicitationId=550e",
            "message": "Authorization is required to access your Example Co files."
        }, {
            "mode": "url",
            "elicitationId": "551e",
            "url": "https://user@xn--pypal-4ve.com/",
            "message": "And this one."
        }]}
    }}));
    match h.completed(call).as_slice() {
        [
            Err(
                error @ CallError::UrlElicitationRequired {
                    server,
                    message,
                    elicitations,
                },
            ),
        ] => {
            assert_eq!(server, "demo");
            assert_eq!(message, "This request requires more information.");
            assert_eq!(elicitations.len(), 2);
            assert_eq!(elicitations[0].host, "mcp.example.com");
            assert_eq!(elicitations[0].elicitation_id.as_deref(), Some("550e"));
            assert_eq!(
                elicitations[1].warnings,
                [UrlWarning::Punycode, UrlWarning::UserInfo]
            );
            assert_eq!(
                error.to_string(),
                "server `demo` needs the person to visit 2 URLs before the call can go on: This request requires more information."
            );
        }
        other => panic!("expected the URLs to visit, got {other:?}"),
    }
    h.server_completes("550e");
    assert_eq!(h.completions(), ["550e"]);
}

#[test]
fn a_url_elicitation_required_error_rho_cannot_read_is_kept_as_sent() {
    let mut h = Harness::ready_for_urls();
    for data in [
        json!(null),
        json!({"elicitations": []}),
        json!({"elicitations": [{"mode": "url", "elicitationId": "e", "url": "file:///x", "message": "m"}]}),
    ] {
        let (call, wire) = h.call();
        h.say(json!({"jsonrpc": "2.0", "id": wire, "error": {
            "code": -32042, "message": "needs a URL", "data": data
        }}));
        match h.completed(call).as_slice() {
            [Err(CallError::Rpc { error, .. })] => assert_eq!(error.code, -32042),
            other => panic!("{data}: expected the error as sent, got {other:?}"),
        }
    }
}

#[test]
fn mcp_apps_are_declared_in_both_eras_only_where_the_host_renders_views() {
    let ui = "io.modelcontextprotocol/ui";
    let expected = json!({"mimeTypes": ["text/html;profile=mcp-app"]});
    for version in ["2025-11-25", "2026-07-28"] {
        let mut options = Harness::options("demo");
        options.protocol_version = version.into();
        options.apps = true;
        let declared = declared_capabilities(&Harness::new(options).sent);
        assert_eq!(
            declared["extensions"][ui], expected,
            "{version}: {declared}"
        );
        let mut options = Harness::options("demo");
        options.protocol_version = version.into();
        let declared = declared_capabilities(&Harness::new(options).sent);
        assert!(
            declared["extensions"].get(ui).is_none(),
            "{version}: {declared}"
        );
    }
    let config = server_config(
        "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\n",
        "a",
    );
    for renders_apps in [true, false] {
        let host = HostContext {
            renders_apps,
            ..HostContext::default()
        };
        let declared = connection_capabilities(&config, &host);
        assert_eq!(
            declared["extensions"].get(ui).is_some(),
            renders_apps,
            "{declared}"
        );
    }
}
