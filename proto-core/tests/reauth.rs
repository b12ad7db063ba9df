//! Re-authorization mid-session over Streamable HTTP, driven by a scripted
//! server and a fake clock: a request refused 401 or 403
//! `insufficient_scope` waits (with everything sent meanwhile) while the
//! host is asked, is resent with the new `Authorization` header, or fails
//! with the host's reason; once per cause per request; budgets keep
//! running; a close withdraws the question.

use std::time::Duration;

use rho_proto_core::http::{AuthorizationError, HttpOptions, HttpRequest, Method};
use rho_proto_core::session::{
    AuthorizationReason, CallError, Event, Question, QuestionId, SessionOptions,
};
use serde_json::json;
use url::Url;

const URL: &str = "https://mcp.example.com/mcp";
const OLD: &str = "Bearer at-old-7f3a";
const NEW: &str = "Bearer at-new-91c2";
const JSON: (&str, &str) = ("content-type", "application/json");
const PRM: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

fn options(reauthorize: bool) -> HttpOptions {
    let mut o = HttpOptions::new(
        Url::parse(URL).expect("url"),
        vec![("Authorization".into(), OLD.into())],
    );
    o.ping_interval = Duration::from_secs(3600);
    o.oauth = true;
    o.reauthorize = reauthorize;
    o
}

fn authorization(req: &HttpRequest) -> Vec<&str> {
    req.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        .map(|(_, v)| v.as_str())
        .collect()
}

mod common;
use common::{Http as Harness, http_session_options, rpc};

/// What these tests read off the shared harness.
impl Harness {
    fn new(reauthorize: bool) -> Self {
        Self::connect(http_session_options(), options(reauthorize))
    }

    fn refuse_401(&mut self, req: &HttpRequest) {
        let challenge =
            format!(r#"Bearer error="invalid_token", resource_metadata="{PRM}", scope="mcp""#);
        self.respond(
            req,
            401,
            &[JSON, ("WWW-Authenticate", &challenge)],
            br#"{"error":"invalid_token"}"#,
        );
    }

    fn refuse_403(&mut self, req: &HttpRequest, scope: &str) {
        let challenge = format!(
            r#"Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{PRM}""#
        );
        self.respond(
            req,
            403,
            &[JSON, ("WWW-Authenticate", &challenge)],
            br#"{"error":"insufficient_scope"}"#,
        );
    }

    /// The authorization questions asked so far.
    fn questions(&self) -> Vec<(QuestionId, AuthorizationReason, Option<Vec<String>>)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Question {
                    question,
                    kind: Question::Authorization { reason, challenge },
                    ..
                } => Some((*question, *reason, challenge.scope.clone())),
                _ => None,
            })
            .collect()
    }

    fn answer_authorization(
        &mut self,
        question: QuestionId,
        answer: Result<String, AuthorizationError>,
    ) {
        self.transport
            .answer_authorization(self.now, question, answer);
        self.drain();
    }
}

#[test]
fn a_call_refused_401_waits_with_what_follows_and_is_resent_with_the_new_header() {
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let first = h.call_echo();
    let refused = h.last_post("tools/call");
    assert_eq!(authorization(&refused), [OLD]);
    h.refuse_401(&refused);
    let questions = h.questions();
    assert_eq!(questions.len(), 1, "{:?}", h.events);
    let (question, reason, scope) = questions[0].clone();
    assert_eq!(reason, AuthorizationReason::Unauthorized);
    assert_eq!(scope, Some(vec!["mcp".to_owned()]));
    assert!(h.transport.is_reauthorizing());
    assert!(h.completion(first).is_none(), "the call waits");
    // A call made meanwhile waits too: it would meet the same refusal.
    let second = h.call_echo();
    assert_eq!(h.posts("tools/call").len(), 1, "nothing sent while asking");
    h.answer_authorization(question, Ok(NEW.to_owned()));
    assert!(!h.transport.is_reauthorizing());
    let resent = h.posts("tools/call");
    assert_eq!(resent.len(), 3, "both calls go, in order");
    for req in &resent[1..] {
        assert_eq!(authorization(req), [NEW], "one header, the new one");
    }
    assert_eq!(rpc(&resent[1])["id"], rpc(&refused)["id"]);
    h.answer_json(
        &resent[1],
        json!({"content": [{"type": "text", "text": "one"}]}),
    );
    h.answer_json(
        &resent[2],
        json!({"content": [{"type": "text", "text": "two"}]}),
    );
    for (call, text) in [(first, "one"), (second, "two")] {
        match h.completion(call) {
            Some(Ok(result)) => assert_eq!(result.text(), text),
            other => panic!("{other:?}"),
        }
    }
    // Answering the same question again does nothing.
    h.answer_authorization(question, Ok("Bearer other".to_owned()));
    assert_eq!(h.posts("tools/call").len(), 3);
}

#[test]
fn a_step_up_goes_once_and_a_second_refusal_fails_naming_the_scope() {
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let call = h.call_echo();
    h.refuse_403(&h.last_post("tools/call"), "mcp mcp:admin");
    let (question, reason, scope) = h.questions()[0].clone();
    assert_eq!(reason, AuthorizationReason::InsufficientScope);
    assert_eq!(scope, Some(vec!["mcp".to_owned(), "mcp:admin".to_owned()]));
    h.answer_authorization(question, Ok(NEW.to_owned()));
    let resent = h.last_post("tools/call");
    assert_eq!(authorization(&resent), [NEW]);
    h.refuse_403(&resent, "mcp mcp:admin");
    assert_eq!(h.questions().len(), 1, "no second step-up for the request");
    let why = h.transport_error(call);
    assert!(
        why.contains("HTTP 403")
            && why.contains("scope \"mcp mcp:admin\"")
            && why.contains("log in to server `remote`"),
        "{why}"
    );
}

#[test]
fn a_renewed_token_may_still_step_up_but_not_renew_twice() {
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let call = h.call_echo();
    h.refuse_401(&h.last_post("tools/call"));
    let (q1, _, _) = h.questions()[0].clone();
    h.answer_authorization(q1, Ok(NEW.to_owned()));
    h.refuse_403(&h.last_post("tools/call"), "mcp:write");
    let questions = h.questions();
    assert_eq!(questions.len(), 2, "one refresh and one step-up");
    assert_eq!(questions[1].1, AuthorizationReason::InsufficientScope);
    h.answer_authorization(questions[1].0, Ok("Bearer wider".to_owned()));
    h.refuse_401(&h.last_post("tools/call"));
    assert_eq!(h.questions().len(), 2, "no second renewal");
    let why = h.transport_error(call);
    assert!(
        why.contains("HTTP 401") && why.contains("refused the new token"),
        "{why}"
    );
    // The next request has its own tries.
    let next = h.call_echo();
    h.refuse_401(&h.last_post("tools/call"));
    assert_eq!(h.questions().len(), 3);
    assert!(h.completion(next).is_none());
}

#[test]
fn the_hosts_no_fails_every_waiting_request_with_its_reason() {
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let first = h.call_echo();
    h.refuse_403(&h.last_post("tools/call"), "files:write");
    let second = h.call_echo();
    let (question, _, _) = h.questions()[0].clone();
    h.answer_authorization(
        question,
        Err(AuthorizationError::StepUpNeeded {
            server: "remote".to_owned(),
            reason: "no one is here to log in".to_owned(),
            scope: vec!["files:write".to_owned()],
        }),
    );
    let one = h.transport_error(first);
    assert!(
        one.contains("HTTP 403")
            && one.contains("scope \"files:write\"")
            && one.contains("log in to server `remote`"),
        "{one}"
    );
    let two = h.transport_error(second);
    assert!(
        two.contains("waited for a new authorization") && two.contains("no one is here"),
        "{two}"
    );
    assert_eq!(h.posts("tools/call").len(), 1, "nothing resent");
}

#[test]
fn without_an_authorizer_or_a_step_up_challenge_a_refusal_fails_at_once() {
    let mut h = Harness::new(false);
    h.ready_without_stream();
    let call = h.call_echo();
    h.refuse_401(&h.last_post("tools/call"));
    assert!(h.questions().is_empty());
    assert!(
        h.transport_error(call)
            .contains("log in to server `remote`")
    );

    // A 403 that is not insufficient_scope is not a step-up.
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let call = h.call_echo();
    h.respond(
        &h.last_post("tools/call"),
        403,
        &[JSON, ("WWW-Authenticate", r#"Bearer error="forbidden""#)],
        b"{}",
    );
    assert!(h.questions().is_empty());
    assert!(h.transport_error(call).contains("HTTP 403"));
}

#[test]
fn the_calls_budget_keeps_running_and_a_late_header_resends_nothing_timed_out() {
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let call = h.call_echo();
    h.refuse_401(&h.last_post("tools/call"));
    let (question, _, _) = h.questions()[0].clone();
    let deadline = h.transport.poll_timeout().expect("the call's deadline");
    assert!(deadline <= h.now + Duration::from_secs(5), "not paused");
    h.now = deadline;
    h.transport.handle_timeout(h.now);
    h.drain();
    assert!(
        matches!(h.completion(call), Some(Err(CallError::Timeout { .. }))),
        "{:?}",
        h.completion(call)
    );
    h.answer_authorization(question, Ok(NEW.to_owned()));
    assert_eq!(
        h.posts("tools/call").len(),
        1,
        "the timed-out call is not resent"
    );
    // The cancellation that waited goes, with the new header.
    let cancel = h.last_post("notifications/cancelled");
    assert_eq!(authorization(&cancel), [NEW]);
}

#[test]
fn a_401_during_startup_waits_and_the_session_becomes_ready() {
    let mut h = Harness::new(true);
    let list = h.start_without_stream();
    h.refuse_401(&list);
    let (question, reason, _) = h.questions()[0].clone();
    assert_eq!(reason, AuthorizationReason::Unauthorized);
    assert!(!h.events.iter().any(|e| matches!(e, Event::Ready(_))));
    h.answer_authorization(question, Ok(NEW.to_owned()));
    let again = h.last_post("tools/list");
    assert_eq!(authorization(&again), [NEW]);
    h.answer_json(&again, json!({"tools": []}));
    assert!(h.events.iter().any(|e| matches!(e, Event::Ready(_))));
}

#[test]
fn closing_while_asking_withdraws_the_question_and_a_late_answer_does_nothing() {
    let mut h = Harness::new(true);
    h.ready_without_stream();
    let call = h.call_echo();
    h.refuse_401(&h.last_post("tools/call"));
    let (question, _, _) = h.questions()[0].clone();
    h.transport.close(h.now);
    h.drain();
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::QuestionWithdrawn(q) if *q == question)),
        "{:?}",
        h.events
    );
    assert!(
        h.completion(call).is_some(),
        "the call ended with the session"
    );
    let before = h.sends().len();
    h.answer_authorization(question, Ok(NEW.to_owned()));
    assert!(
        h.sends()[before..]
            .iter()
            .all(|r| r.method == Method::Delete),
        "{:?}",
        &h.sends()[before..]
    );
}

#[test]
fn an_initialize_refused_401_takes_the_same_path_and_is_resent_with_the_new_header() {
    let mut h = Harness::new(true);
    let init = h.last_post("initialize");
    assert_eq!(authorization(&init), [OLD]);
    h.refuse_401(&init);
    let questions = h.questions();
    assert_eq!(questions.len(), 1, "{:?}", h.events);
    let (question, reason, scope) = questions[0].clone();
    assert_eq!(reason, AuthorizationReason::Unauthorized);
    assert_eq!(scope, Some(vec!["mcp".to_owned()]));
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::Closed(_) | Event::Ready(_))),
        "startup waits: {:?}",
        h.events
    );
    h.answer_authorization(question, Ok(NEW.to_owned()));
    let resent = h.posts("initialize");
    assert_eq!(resent.len(), 2);
    assert_eq!(authorization(&resent[1]), [NEW], "one header, the new one");
    assert_eq!(rpc(&resent[1])["id"], rpc(&init)["id"]);
    // The handshake goes on with the new header, to ready.
    h.ready_without_stream();
    assert_eq!(authorization(&h.last_post("tools/list")), [NEW]);
    // Refused again with the new token: startup fails, once, saying so.
    let mut h = Harness::new(true);
    h.refuse_401(&h.last_post("initialize"));
    let (question, _, _) = h.questions()[0].clone();
    h.answer_authorization(question, Ok(NEW.to_owned()));
    h.refuse_401(&h.last_post("initialize"));
    assert_eq!(h.questions().len(), 1, "no second renewal");
    assert_eq!(h.posts("initialize").len(), 2);
    let closed = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Closed(reason) => Some(format!("{reason:?}")),
            _ => None,
        })
        .expect("startup failed");
    assert!(
        closed.contains("HTTP 401") && closed.contains("refused the new token"),
        "{closed}"
    );
}

#[test]
fn an_initialize_refused_401_fails_startup_with_the_hosts_reason() {
    let mut h = Harness::new(true);
    h.refuse_401(&h.last_post("initialize"));
    let (question, _, _) = h.questions()[0].clone();
    h.answer_authorization(
        question,
        Err(AuthorizationError::LoginNeeded {
            server: "remote".to_owned(),
            reason: "no one is here to log in".to_owned(),
        }),
    );
    assert_eq!(h.posts("initialize").len(), 1, "not resent");
    let closed = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Closed(reason) => Some(format!("{reason:?}")),
            _ => None,
        })
        .expect("startup failed");
    assert!(
        closed.contains("HTTP 401") && closed.contains("log in to server `remote`"),
        "{closed}"
    );
    // A host that cannot re-authorize fails at once, as before.
    let mut h = Harness::new(false);
    h.refuse_401(&h.last_post("initialize"));
    assert!(h.questions().is_empty());
    assert!(h.events.iter().any(|e| matches!(e, Event::Closed(_))));
}

#[test]
fn a_login_refused_during_the_discover_probe_fails_startup_with_one_login_not_two() {
    // The default session probes with `server/discover` first.
    let mut session = SessionOptions::stdio("remote");
    session.startup_timeout = Duration::from_secs(10);
    let mut h = Harness::connect(session, options(true));
    let probe = h.last_post("server/discover");
    h.refuse_401(&probe);
    let asked = h.questions();
    assert_eq!(asked.len(), 1, "{asked:?}");
    h.answer_authorization(
        asked[0].0,
        Err(AuthorizationError::LoginNeeded {
            server: "remote".to_owned(),
            reason: "the login failed: the token endpoint refused".to_owned(),
        }),
    );
    // A 401 is an authorization answer, not an era answer: no fallback to
    // `initialize`, whose own 401 would run the whole login again.
    assert!(h.posts("initialize").is_empty(), "{:?}", h.sends());
    assert_eq!(h.questions().len(), 1, "one login per connect");
    let closed = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Closed(reason) => Some(format!("{reason:?}")),
            _ => None,
        })
        .expect("startup failed");
    assert!(
        closed.contains("HTTP 401") && closed.contains("log in to server `remote`"),
        "{closed}"
    );
}

#[test]
fn a_login_during_the_discover_probe_resends_the_probe_with_the_new_header() {
    let mut session = SessionOptions::stdio("remote");
    session.startup_timeout = Duration::from_secs(10);
    let mut h = Harness::connect(session, options(true));
    h.refuse_401(&h.last_post("server/discover"));
    let asked = h.questions();
    h.answer_authorization(asked[0].0, Ok(NEW.to_owned()));
    let probes = h.posts("server/discover");
    assert_eq!(probes.len(), 2, "the probe goes on");
    assert_eq!(authorization(&probes[1]), [NEW]);
    assert!(h.posts("initialize").is_empty());
}
