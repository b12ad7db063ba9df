//! Multi round-trip requests through the session (2026-07-28 era): an
//! `InputRequiredResult` from `tools/call` becomes the same questions as a
//! 2025 `elicitation/create` or `sampling/createMessage`, with the budget
//! paused while they are open, and the call is retried under a new id with
//! the answers and the server's `requestState` as it wrote it. A scripted
//! stdio server and a fake clock.

use std::collections::BTreeMap;
use std::time::Duration;

use rho_proto_core::features::elicitation::{FormAnswer, UrlAnswer};
use rho_proto_core::features::mrtr::MAX_ROUNDS;
use rho_proto_core::session::{
    CallError, Event, Question, QuestionId, SamplingAnswer, SessionOptions,
};
use rho_proto_core::wire::jsonrpc::Message;
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";

mod common;
use common::Stdio;

/// What these tests read off the shared harness (whose `lines` keep the
/// raw lines).
impl Stdio {
    fn ready(configure: impl FnOnce(&mut SessionOptions)) -> Self {
        let mut o = SessionOptions::stdio("demo");
        o.startup_timeout = Duration::from_secs(10);
        o.tool_timeout = Duration::from_secs(5);
        o.elicitation = true;
        o.sampling = true;
        configure(&mut o);
        let mut h = Self::new(o);
        h.drive_answering(&[
            (
                "server/discover",
                json!({"resultType": "complete", "supportedVersions": [MODERN],
                       "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "public"}),
            ),
            (
                "tools/list",
                // Fresh for ten minutes: no re-listing gets between a call
                // and its rounds.
                json!({"resultType": "complete", "ttlMs": 600_000, "cacheScope": "public",
                       "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            ),
        ]);
        assert!(
            h.events.iter().any(|e| matches!(e, Event::Ready(_))),
            "{:?}",
            h.events
        );
        h
    }

    fn call(&mut self) -> u64 {
        self.session
            .call_tool(self.now, "t", json!({"x": 1}))
            .expect("ready");
        self.drain();
        self.last_request().0
    }

    /// The last request sent: id, params, and the raw line.
    fn last_request(&self) -> (u64, Value, String) {
        self.sent
            .iter()
            .zip(&self.lines)
            .rev()
            .find_map(|(m, text)| match m {
                Message::Request { id, params, .. } => Some((
                    id.to_string().parse().expect("numeric id"),
                    params.clone().unwrap_or(Value::Null),
                    text.clone(),
                )),
                _ => None,
            })
            .expect("a request")
    }

    fn requests(&self) -> usize {
        self.sent
            .iter()
            .filter(|m| matches!(m, Message::Request { .. }))
            .count()
    }

    fn questions(&self) -> Vec<(QuestionId, Question)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Question { question, kind, .. } => Some((*question, kind.clone())),
                _ => None,
            })
            .collect()
    }

    fn call_result(
        &self,
    ) -> Option<&Result<rho_proto_core::wire::protocol::CallToolResult, CallError>> {
        self.events.iter().rev().find_map(|e| match e {
            Event::CallCompleted { result, .. } => Some(result),
            _ => None,
        })
    }
}

fn name_form() -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": "Your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    }})
}

fn input_required(requests: Value, state: Option<&str>) -> Value {
    let mut result = json!({"resultType": "input_required", "inputRequests": requests});
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    result
}

fn done(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
}

fn named(name: &str) -> FormAnswer {
    FormAnswer::Submitted(BTreeMap::from([("name".to_owned(), vec![name.to_owned()])]))
}

#[test]
fn an_elicitation_is_asked_and_the_retry_carries_the_answer_under_a_new_id() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.reply(first, input_required(json!({"who": name_form()}), None));
    let questions = h.questions();
    let [(question, Question::Elicitation(form))] = questions.as_slice() else {
        panic!("{:?}", h.events)
    };
    assert_eq!(form.message, "Your name?");
    assert!(h.call_result().is_none());
    assert_eq!(
        h.requests(),
        // The probe, the `initialize` behind it, tools/list, the call.
        4,
        "nothing is sent while the question is open"
    );
    h.session.answer_elicitation(h.now, *question, named("Ada"));
    h.drain();
    let (retry, params, _) = h.last_request();
    assert_ne!(retry, first, "a new JSON-RPC id");
    assert_eq!(params["name"], "t");
    assert_eq!(params["arguments"], json!({"x": 1}));
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
    assert_eq!(
        params["inputResponses"],
        json!({"who": {"action": "accept", "content": {"name": "Ada"}}})
    );
    assert!(params.get("requestState").is_none(), "{params}");
    h.reply(retry, done("Hello, Ada"));
    let Some(Ok(result)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert_eq!(result.text(), "Hello, Ada");
}

#[test]
fn request_state_goes_back_as_the_exact_text_the_server_wrote() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    // Escapes a re-encoding would spell differently.
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":{first},"result":{{"resultType":"input_required","requestState":"s\/1\u00e9"}}}}"#
    );
    h.say_line(&line);
    let (retry, params, text) = h.last_request();
    assert_ne!(retry, first);
    assert!(text.contains(r#""requestState":"s\/1\u00e9""#), "{text}");
    assert_eq!(params["requestState"], "s/1é");
    assert!(params.get("inputResponses").is_none(), "{params}");
}

#[test]
fn the_budget_is_paused_while_a_question_is_open() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.advance(Duration::from_secs(3));
    h.reply(
        first,
        input_required(json!({"who": name_form()}), Some("st")),
    );
    let (question, _) = h.questions()[0].clone();
    // Far past the 5 s budget: a call waiting on a person is not stalled.
    h.advance(Duration::from_secs(60));
    assert!(h.call_result().is_none(), "{:?}", h.events);
    h.session.answer_elicitation(h.now, question, named("Bo"));
    h.drain();
    let (retry, params, _) = h.last_request();
    assert_eq!(params["requestState"], "st");
    // What was left (2 s) still bounds the retry.
    h.advance(Duration::from_millis(1900));
    assert!(h.call_result().is_none());
    h.advance(Duration::from_millis(200));
    assert!(
        matches!(h.call_result(), Some(Err(CallError::Timeout { .. }))),
        "{:?}",
        h.events
    );
    // A late answer to the retry is not a second result.
    let completions = h
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { .. }))
        .count();
    h.reply(retry, done("late"));
    let after = h
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { .. }))
        .count();
    assert_eq!(completions, after);
}

#[test]
fn a_dismissed_form_cancels_the_call_without_a_retry_or_a_cancel_notification() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.reply(first, input_required(json!({"who": name_form()}), None));
    let before = h.sent.len();
    let (question, _) = h.questions()[0].clone();
    h.session
        .answer_elicitation(h.now, question, FormAnswer::Dismissed);
    h.drain();
    assert_eq!(
        h.sent.len(),
        before,
        "nothing is sent: {:?}",
        &h.sent[before..]
    );
    assert!(
        matches!(h.call_result(), Some(Err(CallError::Cancelled { .. }))),
        "{:?}",
        h.events
    );
}

#[test]
fn cancelling_a_call_that_waits_for_input_withdraws_its_questions_quietly() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.reply(first, input_required(json!({"who": name_form()}), None));
    let (question, _) = h.questions()[0].clone();
    let before = h.sent.len();
    let call = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Question { call, .. } => Some(*call),
            _ => None,
        })
        .expect("a question");
    h.session.cancel_call(h.now, call);
    h.drain();
    assert_eq!(
        h.sent.len(),
        before,
        "the answered request is not cancelled"
    );
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::QuestionWithdrawn(q) if *q == question))
    );
    assert!(matches!(
        h.call_result(),
        Some(Err(CallError::Cancelled { .. }))
    ));
    // A second answer to the held request is not the call's.
    h.reply(first, done("late"));
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_)))
    );
}

#[test]
fn a_second_answer_to_a_request_held_for_input_is_ignored() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.reply(first, input_required(json!({"who": name_form()}), None));
    h.reply(first, done("again"));
    assert!(h.call_result().is_none(), "{:?}", h.events);
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_)))
    );
}

#[test]
fn sampling_is_asked_and_a_refusal_leaves_its_key_out() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    let sampling = json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}], "maxTokens": 5
    }});
    h.reply(
        first,
        input_required(
            json!({"sum": sampling, "where": {"method": "roots/list"}}),
            None,
        ),
    );
    let (question, kind) = h.questions()[0].clone();
    assert!(matches!(kind, Question::Sampling(_)), "{kind:?}");
    h.session
        .answer_sampling(h.now, question, SamplingAnswer::Refused);
    h.drain();
    let (_, params, _) = h.last_request();
    // No workspace root: roots are left out too.
    assert!(params.get("inputResponses").is_none(), "{params}");
}

#[test]
fn closed_gates_answer_at_once_as_in_the_2025_era() {
    let mut h = Stdio::ready(|o| {
        o.elicitation = false;
        o.sampling = false;
        o.workspace_root = Some("file:///work".into());
    });
    let first = h.call();
    let sampling = json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}]
    }});
    h.reply(
        first,
        input_required(
            json!({"who": name_form(), "sum": sampling, "where": {"method": "roots/list"}}),
            None,
        ),
    );
    assert!(h.questions().is_empty(), "{:?}", h.events);
    let (retry, params, _) = h.last_request();
    assert_ne!(retry, first);
    assert_eq!(
        params["inputResponses"],
        json!({
            "who": {"action": "decline"},
            "where": {"roots": [{"uri": "file:///work", "name": "workspace"}]}
        })
    );
}

#[test]
fn rounds_past_the_bound_fail_the_call_in_words() {
    let mut h = Stdio::ready(|_| {});
    let mut id = h.call();
    for _ in 0..MAX_ROUNDS {
        h.reply(id, input_required(json!({}), Some("again")));
        let (next, _, _) = h.last_request();
        assert_ne!(next, id);
        id = next;
    }
    let requests = h.requests();
    h.reply(id, input_required(json!({}), Some("again")));
    assert_eq!(h.requests(), requests, "no retry past the bound");
    let Some(Err(error)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert!(matches!(error, CallError::InputRequired { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "server `demo` needs more input to finish the call: it still asked for more input after 8 rounds of answers, so rho gave up on the request"
    );
}

#[test]
fn a_malformed_input_required_result_fails_the_call_with_the_reason() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.reply(first, json!({"resultType": "input_required"}));
    let Some(Err(error)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert!(
        error
            .to_string()
            .contains("neither `inputRequests` nor `requestState`"),
        "{error}"
    );
}

#[test]
fn another_call_carries_no_inputs_of_a_call_waiting_for_them() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.reply(
        first,
        input_required(json!({"who": name_form()}), Some("mine")),
    );
    let other = h.call();
    let (_, params, _) = h.last_request();
    assert_ne!(other, first);
    assert!(params.get("inputResponses").is_none(), "{params}");
    assert!(params.get("requestState").is_none(), "{params}");
    h.reply(other, done("other"));
    let Some(Ok(result)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert_eq!(result.text(), "other");
}

/// Found by the fuzzer: a call whose budget a routed `elicitation/create`
/// paused got an `InputRequiredResult` with nothing to ask, and its retry
/// went into the timer table with the deadline it had before the pause, in
/// the past: the driver was told to wake up before `now`, and the call
/// timed out while the person was still answering.
#[test]
fn a_retry_sent_while_a_question_of_its_call_is_open_keeps_its_budget_paused() {
    let mut h = Stdio::ready(|_| {});
    let first = h.call();
    h.advance(Duration::from_secs(3));
    // A 2025-style question, routed to the one call in flight: 2 s of
    // its 5 s budget are left, and they wait for the person.
    h.say_line(
        &json!({"jsonrpc": "2.0", "id": 81, "method": "elicitation/create",
                "params": name_form()["params"]})
        .to_string(),
    );
    let (question, _) = h.questions()[0].clone();
    h.advance(Duration::from_secs(10));
    // The call's answer asks for nothing: the retry goes at once.
    h.reply(first, input_required(json!({}), Some("st")));
    let (retry, params, _) = h.last_request();
    assert_ne!(retry, first);
    assert_eq!(params["requestState"], "st");
    assert!(
        h.session.poll_timeout().is_none_or(|t| t > h.now),
        "a wakeup {:?} before now",
        h.now
            .checked_duration_since(h.session.poll_timeout().expect("some"))
    );
    h.advance(Duration::from_secs(30));
    assert!(h.call_result().is_none(), "{:?}", h.events);
    // Answered: what was left (2 s) bounds the retry.
    h.session.answer_elicitation(h.now, question, named("Ada"));
    h.drain();
    h.advance(Duration::from_millis(1900));
    assert!(h.call_result().is_none(), "{:?}", h.events);
    h.advance(Duration::from_millis(200));
    assert!(
        matches!(h.call_result(), Some(Err(CallError::Timeout { .. }))),
        "{:?}",
        h.events
    );
}

/// A ready 2026-era session whose server also declares prompts.
fn ready_with_prompts() -> Stdio {
    let mut o = SessionOptions::stdio("demo");
    o.startup_timeout = Duration::from_secs(10);
    o.tool_timeout = Duration::from_secs(5);
    o.elicitation = true;
    let mut h = Stdio::new(o);
    h.reply(
        0,
        json!({"resultType": "complete", "supportedVersions": [MODERN],
               "capabilities": {"tools": {}, "prompts": {}}, "ttlMs": 0, "cacheScope": "public"}),
    );
    let listings: Vec<(u64, String)> = h
        .sent
        .iter()
        .filter_map(|m| match m {
            Message::Request { id, method, .. }
                if method != "server/discover" && method != "initialize" =>
            {
                Some((id.to_string().parse().expect("numeric id"), method.clone()))
            }
            _ => None,
        })
        .collect();
    for (id, method) in listings {
        let result = match method.as_str() {
            "tools/list" => json!({"resultType": "complete", "ttlMs": 600_000,
                "cacheScope": "public", "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            "prompts/list" => json!({"resultType": "complete", "prompts": [{"name": "greet"}]}),
            other => panic!("unexpected {other}"),
        };
        h.reply(id, result);
    }
    assert!(
        h.events.iter().any(|e| matches!(e, Event::Ready(_))),
        "{:?}",
        h.events
    );
    h
}

#[test]
fn a_prompt_request_that_needs_input_is_asked_and_retried_like_a_call() {
    use rho_proto_core::features::FeatureRequest;
    let mut h = ready_with_prompts();
    let params = serde_json::from_value(json!({"name": "greet", "arguments": {}}))
        .expect("prompts/get params");
    let call = h
        .session
        .request(h.now, &FeatureRequest::GetPrompt(params))
        .expect("ready");
    h.drain();
    let (first, _, _) = h.last_request();
    h.reply(
        first,
        input_required(json!({"who": name_form()}), Some("s1")),
    );
    let questions = h.questions();
    let [(question, Question::Elicitation(_))] = questions.as_slice() else {
        panic!("{:?}", h.events)
    };
    h.session.answer_elicitation(h.now, *question, named("Ada"));
    h.drain();
    let (retry, params, _) = h.last_request();
    assert_ne!(retry, first, "a new JSON-RPC id");
    assert_eq!(params["name"], "greet");
    assert_eq!(params["requestState"], "s1");
    assert_eq!(
        params["inputResponses"]["who"]["content"],
        json!({"name": "Ada"})
    );
    h.reply(
        retry,
        json!({"resultType": "complete", "messages": [
            {"role": "user", "content": {"type": "text", "text": "Hello, Ada"}}]}),
    );
    let completed = h.events.iter().rev().find_map(|e| match e {
        Event::RequestCompleted { call: c, result } if *c == call => Some(result),
        _ => None,
    });
    let Some(Ok(result)) = completed else {
        panic!("{:?}", h.events)
    };
    assert_eq!(result["messages"][0]["content"]["text"], "Hello, Ada");
}

#[test]
fn a_prompt_request_whose_form_is_dismissed_ends_as_cancelled() {
    use rho_proto_core::features::FeatureRequest;
    let mut h = ready_with_prompts();
    let params = serde_json::from_value(json!({"name": "greet"})).expect("prompts/get params");
    let call = h
        .session
        .request(h.now, &FeatureRequest::GetPrompt(params))
        .expect("ready");
    h.drain();
    let (first, _, _) = h.last_request();
    h.reply(first, input_required(json!({"who": name_form()}), None));
    let questions = h.questions();
    let [(question, _)] = questions.as_slice() else {
        panic!("{:?}", h.events)
    };
    h.session
        .answer_elicitation(h.now, *question, FormAnswer::Dismissed);
    h.drain();
    let completed = h.events.iter().rev().find_map(|e| match e {
        Event::RequestCompleted { call: c, result } if *c == call => Some(result),
        _ => None,
    });
    assert!(
        matches!(completed, Some(Err(CallError::Cancelled { .. }))),
        "{:?}",
        h.events
    );
    assert!(h.call_result().is_none(), "no tool call ended");
}

/// A prompt request waiting for input that ends otherwise — the host
/// cancels it, or the transport loses it — takes its open questions
/// with it, as a tool call does.
#[test]
fn a_prompt_request_that_ends_while_waiting_for_input_withdraws_its_questions() {
    use rho_proto_core::features::FeatureRequest;
    use rho_proto_core::wire::jsonrpc::{ClientRequestId, RequestId};
    for lost in [false, true] {
        let mut h = ready_with_prompts();
        let params = serde_json::from_value(json!({"name": "greet"})).expect("prompts/get params");
        let call = h
            .session
            .request(h.now, &FeatureRequest::GetPrompt(params))
            .expect("ready");
        h.drain();
        let (first, _, _) = h.last_request();
        h.reply(first, input_required(json!({"who": name_form()}), None));
        let questions = h.questions();
        let [(question, _)] = questions.as_slice() else {
            panic!("{:?}", h.events)
        };
        if lost {
            let request =
                ClientRequestId::from_wire(&RequestId::Number(first as i64)).expect("our id");
            h.session
                .handle_request_failed(h.now, request, "the stream broke".into());
        } else {
            h.session.cancel_call(h.now, call);
        }
        h.drain();
        assert!(
            h.events
                .iter()
                .any(|e| matches!(e, Event::QuestionWithdrawn(q) if q == question)),
            "lost: {lost}: {:?}",
            h.events
        );
        assert_eq!(h.session.open_questions(), 0);
        assert!(
            h.events.iter().any(
                |e| matches!(e, Event::RequestCompleted { call: c, result: Err(_) } if *c == call)
            ),
            "{:?}",
            h.events
        );
    }
}

// ----- URL mode (an input request of the same kind as a 2025 URL elicitation) -----

fn url_input(url: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "url", "message": "Connect your account", "url": url
    }})
}

#[test]
fn a_url_input_is_declared_asked_and_its_accept_carries_no_content() {
    let mut h = Stdio::ready(|o| o.elicitation_url = true);
    let (_, discover, _) = h
        .sent
        .iter()
        .zip(&h.lines)
        .find_map(|(m, text)| match m {
            Message::Request { id, params, .. } => {
                Some((id.clone(), params.clone().unwrap_or(Value::Null), text))
            }
            _ => None,
        })
        .expect("the probe");
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/clientCapabilities"]["elicitation"],
        json!({"form": {}, "url": {}})
    );
    let first = h.call();
    h.reply(
        first,
        input_required(
            json!({"link": url_input("https://auth.example.com/c")}),
            Some("s1"),
        ),
    );
    let questions = h.questions();
    let [(question, Question::Url(request))] = questions.as_slice() else {
        panic!("{:?}", h.events)
    };
    assert_eq!(request.url, "https://auth.example.com/c");
    assert_eq!(request.host, "auth.example.com");
    assert_eq!(request.message, "Connect your account");
    // A form answer does not answer it.
    h.session
        .answer_elicitation(h.now, *question, FormAnswer::Declined);
    h.drain();
    assert_eq!(h.last_request().0, first, "nothing sent for a form answer");
    h.session.answer_url(h.now, *question, UrlAnswer::Opened);
    h.drain();
    let (retry, params, _) = h.last_request();
    assert_ne!(retry, first);
    assert_eq!(
        params["inputResponses"],
        json!({"link": {"action": "accept"}})
    );
    assert_eq!(params["requestState"], "s1");
    h.reply(retry, done("connected"));
    let Some(Ok(result)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert_eq!(result.text(), "connected");
}

#[test]
fn a_declined_url_input_is_sent_as_decline_and_a_dismissed_one_cancels_the_call() {
    let mut h = Stdio::ready(|o| o.elicitation_url = true);
    let first = h.call();
    h.reply(
        first,
        input_required(json!({"link": url_input("https://a.example/")}), None),
    );
    let (question, _) = h.questions()[0].clone();
    h.session.answer_url(h.now, question, UrlAnswer::Declined);
    h.drain();
    let (retry, params, _) = h.last_request();
    assert_eq!(
        params["inputResponses"],
        json!({"link": {"action": "decline"}})
    );
    h.reply(
        retry,
        input_required(json!({"again": url_input("https://a.example/")}), None),
    );
    let (question, _) = h.questions()[1].clone();
    let requests = h.requests();
    h.session.answer_url(h.now, question, UrlAnswer::Dismissed);
    h.drain();
    assert_eq!(h.requests(), requests, "no retry after a dismissal");
    assert!(
        matches!(h.call_result(), Some(Err(CallError::Cancelled { .. }))),
        "{:?}",
        h.events
    );
}

#[test]
fn an_undeclared_url_input_fails_the_call_without_asking_or_declining() {
    for configure in [
        (|o: &mut SessionOptions| o.elicitation_url = false) as fn(&mut SessionOptions),
        |o: &mut SessionOptions| o.elicitation = false,
    ] {
        let mut h = Stdio::ready(configure);
        let first = h.call();
        let requests = h.requests();
        h.reply(
            first,
            input_required(json!({"link": url_input("https://a.example/")}), None),
        );
        assert!(h.questions().is_empty(), "{:?}", h.events);
        assert_eq!(h.requests(), requests, "no retry carries a decline");
        let Some(Err(error)) = h.call_result() else {
            panic!("{:?}", h.events)
        };
        assert_eq!(
            error.to_string(),
            "server `demo` needs more input to finish the call: it asked the person to open a URL, which rho did not declare it could do here"
        );
    }
}

#[test]
fn a_url_input_that_cannot_be_opened_safely_fails_the_call_as_malformed() {
    let mut h = Stdio::ready(|o| o.elicitation_url = true);
    let first = h.call();
    h.reply(
        first,
        input_required(json!({"link": url_input("javascript:alert(1)")}), None),
    );
    assert!(h.questions().is_empty(), "{:?}", h.events);
    let Some(Err(error)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert!(
        error.to_string().contains("scheme is `javascript`"),
        "{error}"
    );
}
