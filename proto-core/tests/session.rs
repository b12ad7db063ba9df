//! The session core driven by a scripted server and a fake clock: every
//! behaviour here is deterministic, with no process, socket or sleep.

use std::time::Duration;

use rho_proto_core::session::{
    ApiMisuse, CallError, CloseReason, Event, PeerError, SessionOptions, SessionState, Timer,
};
use rho_proto_core::wire::jsonrpc::{Message, RequestId};
use rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION;
use serde_json::{Value, json};

mod common;
use common::Stdio as Harness;

/// What these tests read off the shared harness.
impl Harness {
    fn options() -> SessionOptions {
        let mut o = SessionOptions::stdio("demo");
        // These tests pin the 2025 handshake; tests/era.rs drives 2026-07-28.
        o.protocol_version = LATEST_PROTOCOL_VERSION.into();
        o.startup_timeout = Duration::from_secs(10);
        o.tool_timeout = Duration::from_secs(5);
        o
    }

    /// The id, method and params of the last request the client sent.
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

    fn handshake(&mut self, version: &str, capabilities: Value) {
        self.answer_last(json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": "scripted", "version": "1.0"},
            "instructions": "use wisely"
        }));
    }

    /// A server declaring tools answers the handshake and the listing.
    fn ready_with_tools(&mut self, tools: Value) {
        self.drive_answering(&[
            (
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1.0"},
                    "instructions": "use wisely"
                }),
            ),
            ("tools/list", json!({ "tools": tools })),
        ]);
        assert_eq!(self.session.state(), SessionState::Ready);
    }
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

#[test]
fn initialize_declares_rho_and_latest_version_and_no_capabilities() {
    let h = Harness::new(Harness::options());
    let (id, method, params) = h.last_request();
    assert_eq!(method, "initialize");
    assert_eq!(id, RequestId::Number(0));
    let params = params.expect("params");
    assert_eq!(params["protocolVersion"], "2025-11-25");
    assert_eq!(params["clientInfo"]["name"], "rho");
    assert_eq!(params["clientInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(params["capabilities"], json!({}));
}

#[test]
fn handshake_then_paginated_discovery_reaches_ready() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {"listChanged": true}}));
    assert_eq!(
        h.methods(),
        ["initialize", "notifications/initialized", "tools/list"]
    );
    h.answer_last(json!({"tools": [tool("a"), tool("b")], "nextCursor": "page2"}));
    let (_, method, params) = h.last_request();
    assert_eq!(method, "tools/list");
    assert_eq!(params, Some(json!({"cursor": "page2"})));
    h.answer_last(json!({"tools": [tool("c")]}));
    let Some(Event::Ready(ready)) = h.events.last() else {
        panic!("expected Ready, got {:?}", h.events);
    };
    let names: Vec<_> = ready.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(ready.instructions.as_deref(), Some("use wisely"));
    assert_eq!(ready.server_info.name, "scripted");
    assert!(ready.capabilities.tools_list_changed);
    // Once ready, no startup deadline remains.
    assert_eq!(h.session.poll_timeout(), None);
}

#[test]
fn older_protocol_versions_are_accepted() {
    for version in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let mut h = Harness::new(Harness::options());
        h.handshake(version, json!({}));
        assert_eq!(h.session.state(), SessionState::Ready, "{version}");
        assert_eq!(
            h.session
                .server_ready()
                .map(|r| r.protocol_version.as_str()),
            Some(version)
        );
    }
}

#[test]
fn unknown_protocol_version_fails_the_handshake_clearly() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2023-01-01", json!({"tools": {}}));
    let reason = h.closed().expect("closed").to_string();
    assert!(reason.contains("`2023-01-01`"), "{reason}");
    assert!(reason.contains("2025-11-25, 2025-06-18"), "{reason}");
    assert!(
        !h.methods()
            .contains(&"notifications/initialized".to_string())
    );
}

#[test]
fn server_without_tools_capability_is_not_asked_for_tools() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"prompts": {}}));
    // Ready waits for the prompts it declared, not for tools.
    assert_eq!(h.last_request().1, "prompts/list");
    h.answer_last(json!({"prompts": []}));
    assert_eq!(h.session.state(), SessionState::Ready);
    assert!(!h.methods().contains(&"tools/list".to_string()));
}

#[test]
fn handshake_times_out_at_the_startup_budget() {
    let mut h = Harness::new(Harness::options());
    let waited = h.step();
    assert_eq!(waited, Duration::from_secs(10));
    let reason = h.closed().expect("closed");
    assert!(reason.is_startup_failure());
    let text = reason.to_string();
    assert!(text.contains("startup timed out after 10 s"), "{text}");
    assert!(text.contains("initialize response"), "{text}");
    assert_eq!(h.session.poll_timeout(), None);
}

#[test]
fn discovery_counts_against_the_same_startup_budget() {
    let mut h = Harness::new(Harness::options());
    h.now += Duration::from_secs(6);
    h.handshake("2025-11-25", json!({"tools": {}}));
    let waited = h.step();
    assert_eq!(waited, Duration::from_secs(4), "the budget is shared");
    assert!(
        h.closed()
            .expect("closed")
            .to_string()
            .contains("listing tools")
    );
}

#[test]
fn tool_call_times_out_sends_cancelled_and_drops_the_late_reply() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("slow")]));
    let call = h
        .session
        .call_tool(h.now, "slow", json!({"x": 1}))
        .expect("ready");
    h.drain();
    let (request_id, method, params) = h.last_request();
    assert_eq!(method, "tools/call");
    assert_eq!(
        params,
        Some(
            json!({"name": "slow", "arguments": {"x": 1}, "_meta": {"progressToken": call.wire_id()}})
        )
    );
    assert_eq!(h.step(), Duration::from_secs(5));
    match h.events.last() {
        Some(Event::CallCompleted {
            call: c,
            result: Err(CallError::Timeout { .. }),
        }) => assert_eq!(*c, call),
        other => panic!("expected timeout, got {other:?}"),
    }
    match h.sent.last() {
        Some(Message::Notification { method, params }) => {
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(
                params.as_ref().map(|p| &p["requestId"]),
                Some(&json!(request_id))
            );
        }
        other => panic!("expected cancelled, got {other:?}"),
    }
    let completions = h.events.len();
    h.say(json!({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}));
    // An answer to a request rho gave up on is expected, not a fault.
    assert_eq!(
        h.events.len(),
        completions,
        "no second completion: {:?}",
        h.events
    );
    assert_eq!(h.session.state(), SessionState::Ready);
}

/// A host's per-call limit (`CallOptions::timeout`) replaces the
/// server's `tool_timeout` for that call alone, shorter or longer, and the
/// error names the budget that ran out.
#[test]
fn a_call_with_a_budget_of_its_own_times_out_at_that_budget() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("slow")]));
    for seconds in [2, 60] {
        let budget = Duration::from_secs(seconds);
        let call = h
            .session
            .call_tool_within(h.now, "slow", json!({}), Some(budget))
            .expect("ready");
        h.drain();
        assert_eq!(h.step(), budget, "the call's own budget, not 5 s");
        match h.events.last() {
            Some(Event::CallCompleted {
                call: c,
                result: Err(CallError::Timeout { budget: b, .. }),
            }) => assert_eq!((*c, *b), (call, budget)),
            other => panic!("expected a timeout after {seconds} s, got {other:?}"),
        }
    }
    // Without one, the server's budget again.
    h.session
        .call_tool(h.now, "slow", json!({}))
        .expect("ready");
    h.drain();
    assert_eq!(h.step(), Duration::from_secs(5));
}

#[test]
fn call_results_and_errors_reach_the_right_call() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("a")]));
    let first = h.session.call_tool(h.now, "a", Value::Null).expect("ready");
    let second = h.session.call_tool(h.now, "a", json!({})).expect("ready");
    h.drain();
    // Answer out of order: the error for the second, then the first.
    h.say(
        json!({"jsonrpc": "2.0", "id": second.wire_id(), "error": {"code": -32602, "message": "bad args"}}),
    );
    h.say(json!({"jsonrpc": "2.0", "id": first.wire_id(), "result": {"content": [{"type": "text", "text": "hi"}]}}));
    let completions: Vec<_> = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CallCompleted { call, result } => Some((*call, result.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(completions.len(), 2);
    assert_eq!(completions[0].0, second);
    assert!(matches!(&completions[0].1, Err(CallError::Rpc { error, .. }) if error.code == -32602));
    assert_eq!(completions[1].0, first);
    assert_eq!(
        completions[1].1.as_ref().map(|r| r.text()).ok(),
        Some("hi".into())
    );
}

#[test]
fn calls_are_refused_before_ready_and_after_close() {
    let mut h = Harness::new(Harness::options());
    assert!(matches!(
        h.session.call_tool(h.now, "a", json!({})),
        Err(ApiMisuse::NotReady(_))
    ));
    h.ready_with_tools(json!([tool("a")]));
    assert!(matches!(
        h.session.call_tool(h.now, "a", json!([1])),
        Err(ApiMisuse::ArgumentsNotObject)
    ));
    h.session.close(h.now);
    assert!(matches!(
        h.session.call_tool(h.now, "a", json!({})),
        Err(ApiMisuse::Closed(_))
    ));
}

#[test]
fn close_completes_in_flight_calls_then_closed_is_last() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("a")]));
    let call = h.session.call_tool(h.now, "a", json!({})).expect("ready");
    h.session.close(h.now);
    h.drain();
    let n = h.events.len();
    assert!(matches!(
        &h.events[n - 2],
        Event::CallCompleted { call: c, result: Err(CallError::SessionClosed { .. }) } if *c == call
    ));
    assert!(matches!(
        h.events[n - 1],
        Event::Closed(CloseReason::Requested)
    ));
    // Input after close is ignored and produces nothing.
    h.say(json!({"jsonrpc": "2.0", "method": "ping", "id": 1}));
    assert_eq!(h.events.len(), n);
}

#[test]
fn ping_is_answered_with_the_servers_own_id() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([]));
    for id in [json!(0), json!("srv-7")] {
        h.say(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        match h.sent.last() {
            Some(Message::Response { id: got, result }) => {
                assert_eq!(json!(got), id);
                assert_eq!(result, &json!({}));
            }
            other => panic!("expected a ping response, got {other:?}"),
        }
    }
}

#[test]
fn ping_is_answered_during_the_handshake_too() {
    let mut h = Harness::new(Harness::options());
    h.say(json!({"jsonrpc": "2.0", "id": 0, "method": "ping"}));
    assert!(matches!(h.sent.last(), Some(Message::Response { .. })));
    assert_eq!(h.session.state(), SessionState::Starting);
}

#[test]
fn unknown_server_request_gets_method_not_found() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([]));
    h.say(json!({"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {}}));
    match h.sent.last() {
        Some(Message::Error { id, error }) => {
            assert_eq!(id, &Some(RequestId::Number(3)));
            assert_eq!(error.code, -32601);
        }
        other => panic!("expected an error response, got {other:?}"),
    }
}

#[test]
fn server_request_ids_never_match_client_requests() {
    // A server request with the same number as our pending initialize is a
    // request, not an answer: the handshake keeps waiting.
    let mut h = Harness::new(Harness::options());
    h.say(json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"}));
    assert_eq!(h.session.state(), SessionState::Starting);
    assert!(h.session.poll_timeout().is_some());
}

#[test]
fn set_level_only_when_configured_and_declared() {
    use rho_proto_core::config::LogLevel;
    let mut options = Harness::options();
    options.log_level = Some(LogLevel::Warning);
    let mut h = Harness::new(options.clone());
    h.handshake("2025-11-25", json!({"logging": {}}));
    let (_, method, params) = h.last_request();
    assert_eq!(method, "logging/setLevel");
    assert_eq!(params, Some(json!({"level": "warning"})));
    let mut h = Harness::new(options);
    h.handshake("2025-11-25", json!({}));
    assert!(!h.methods().contains(&"logging/setLevel".to_string()));
}

#[test]
fn garbage_output_is_skipped_and_named_in_the_failure() {
    let mut h = Harness::new(Harness::options());
    h.session.handle_stdio_bytes(h.now, b"Starting server...\n");
    h.drain();
    assert!(matches!(
        h.events.last(),
        Some(Event::PeerMisbehaved(PeerError::Unparseable { .. }))
    ));
    assert_eq!(h.session.state(), SessionState::Starting);
    h.session
        .handle_transport_closed(h.now, Some("exit status 1".into()));
    h.drain();
    let reason = h.closed().expect("closed").to_string();
    assert!(
        reason.contains("exited during startup (exit status 1)"),
        "{reason}"
    );
    assert!(reason.contains("Starting server..."), "{reason}");
}

#[test]
fn repeated_cursor_is_refused_instead_of_looping() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {}}));
    h.answer_last(json!({"tools": [], "nextCursor": "same"}));
    h.answer_last(json!({"tools": [], "nextCursor": "same"}));
    let reason = h.closed().expect("closed").to_string();
    assert!(reason.contains("kept paginating"), "{reason}");
}

#[test]
fn malformed_tool_is_skipped_and_the_rest_load() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("good"), {"name": "bad"}]));
    let ready = h.session.server_ready().expect("ready");
    assert_eq!(ready.tools.len(), 1);
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(PeerError::MalformedTool { .. })))
    );
}

/// The full server side of a session, as one byte string.
fn scripted_transcript() -> Vec<u8> {
    let lines = [
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi ☃"}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}),
    ];
    let mut out = Vec::new();
    for line in lines {
        out.extend(serde_json::to_vec(&line).expect("json"));
        out.extend(b"\r\n");
    }
    out
}

#[test]
fn framing_split_at_every_byte_boundary_gives_the_same_session() {
    let bytes = scripted_transcript();
    let reference = {
        let mut h = Harness::new(Harness::options());
        h.session.handle_stdio_bytes(h.now, &bytes);
        h.drain();
        (h.methods(), format!("{:?}", h.events))
    };
    assert!(reference.1.contains("Ready"));
    for split in 0..=bytes.len() {
        let mut h = Harness::new(Harness::options());
        h.session.handle_stdio_bytes(h.now, &bytes[..split]);
        h.drain();
        h.session.handle_stdio_bytes(h.now, &bytes[split..]);
        h.drain();
        assert_eq!(
            (h.methods(), format!("{:?}", h.events)),
            reference,
            "split at {split}"
        );
    }
    // One byte at a time, too.
    let mut h = Harness::new(Harness::options());
    for b in &bytes {
        h.session.handle_stdio_bytes(h.now, std::slice::from_ref(b));
        h.drain();
    }
    assert_eq!((h.methods(), format!("{:?}", h.events)), reference);
}

#[test]
fn final_line_without_newline_is_read_at_eof() {
    let mut h = Harness::new(Harness::options());
    let line = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -1, "message": "no"}}),
    )
    .expect("json");
    h.session.handle_stdio_bytes(h.now, &line);
    h.drain();
    assert_eq!(h.session.state(), SessionState::Starting);
    h.session.handle_transport_closed(h.now, None);
    h.drain();
    let reason = h.closed().expect("closed").to_string();
    assert!(
        reason.contains("answered initialize with an error: no"),
        "{reason}"
    );
}

#[test]
fn cancelling_a_call_notifies_the_server_and_completes_it_once() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("slow")]));
    let call = h
        .session
        .call_tool(h.now, "slow", json!({}))
        .expect("ready");
    h.drain();
    h.session.cancel_call(h.now, call);
    h.drain();
    match h.sent.last() {
        Some(Message::Notification { method, params }) => {
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(
                params.as_ref().map(|p| &p["requestId"]),
                Some(&json!(call.wire_id()))
            );
        }
        other => panic!("expected cancelled, got {other:?}"),
    }
    assert!(matches!(
        h.events.last(),
        Some(Event::CallCompleted { call: c, result: Err(CallError::Cancelled { .. }) }) if *c == call
    ));
    // A second cancel and the late answer change nothing.
    let events = h.events.len();
    h.session.cancel_call(h.now, call);
    h.drain();
    assert_eq!(h.events.len(), events);
    assert_eq!(h.session.calls_in_flight(), 0);
    assert_eq!(h.session.poll_timeout(), None, "no deadline left behind");
}

#[test]
fn list_changed_relists_and_reports_the_new_tool_set() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {"listChanged": true}}));
    h.answer_last(json!({"tools": [tool("a"), tool("b")]}));
    assert_eq!(h.session.state(), SessionState::Ready);
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    let (_, method, _) = h.last_request();
    assert_eq!(method, "tools/list");
    // A second change while the listing runs queues exactly one more.
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    let lists = h.methods().iter().filter(|m| *m == "tools/list").count();
    assert_eq!(lists, 2, "startup + one re-list in flight");
    h.answer_last(json!({"tools": [tool("a"), tool("c")]}));
    let changed: Vec<Vec<String>> = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::ToolsChanged(tools) => Some(tools.iter().map(|t| t.name.clone()).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(changed, [vec!["a".to_string(), "c".to_string()]]);
    let lists = h.methods().iter().filter(|m| *m == "tools/list").count();
    assert_eq!(lists, 3, "the queued re-list went out");
    h.answer_last(json!({"tools": [tool("c")]}));
    assert!(matches!(h.events.last(), Some(Event::ToolsChanged(t)) if t.len() == 1));
    assert_eq!(h.session.server_ready().map(|r| r.tools.len()), Some(1));
}

/// The Python SDK 1.x declares `tools.listChanged: false` and still sends
/// the notification when a tool is added: the tools are listed again (a
/// fresh read is all the notification can ask for), so the new tool is
/// not hidden.
#[test]
fn list_changed_relists_even_when_list_changed_was_not_declared() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("a")]));
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    let (_, method, _) = h.last_request();
    assert_eq!(method, "tools/list");
    h.answer_last(json!({"tools": [tool("a"), tool("added")]}));
    assert!(
        matches!(h.events.last(), Some(Event::ToolsChanged(t)) if t.len() == 2),
        "{:?}",
        h.events
    );
}

#[test]
fn list_changed_is_ignored_from_a_server_without_tools() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({}));
    assert_eq!(h.session.state(), SessionState::Ready);
    let sent = h.sent.len();
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    assert_eq!(h.sent.len(), sent, "no tools declared, none listed");
}

#[test]
fn roots_are_declared_and_answered_with_the_workspace() {
    let mut options = Harness::options();
    options.workspace_root = Some("file:///work/project/".into());
    let mut h = Harness::new(options);
    let (_, _, params) = h.last_request();
    assert_eq!(
        params.expect("params")["capabilities"]["roots"],
        json!({"listChanged": false})
    );
    h.ready_with_tools(json!([]));
    h.say(json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}));
    match h.sent.last() {
        Some(Message::Response { result, .. }) => assert_eq!(
            result,
            &json!({"roots": [{"uri": "file:///work/project/", "name": "workspace"}]})
        ),
        other => panic!("expected a roots/list answer, got {other:?}"),
    }
}

#[test]
fn without_a_workspace_roots_are_neither_declared_nor_answered() {
    let mut h = Harness::new(Harness::options());
    let (_, method, params) = h.last_request();
    assert_eq!(method, "initialize");
    let capabilities = &params.expect("params")["capabilities"];
    assert!(
        capabilities.is_object(),
        "the client declares its capabilities: {capabilities}"
    );
    assert_eq!(
        capabilities.get("roots"),
        None,
        "no workspace, no roots capability: {capabilities}"
    );
    h.ready_with_tools(json!([]));
    h.say(json!({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}));
    assert!(matches!(h.sent.last(), Some(Message::Error { error, .. }) if error.code == -32601));
}

#[test]
fn progress_for_an_unknown_token_is_ignored() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("a")]));
    let call = h.session.call_tool(h.now, "a", json!({})).expect("ready");
    h.drain();
    let before = h.events.len();
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 999, "progress": 1}}));
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}}));
    assert_eq!(h.events.len(), before);
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": call.wire_id(), "progress": 1, "total": 4, "message": "one"}}));
    match h.events.last() {
        Some(Event::Progress { call: c, progress }) => {
            assert_eq!(*c, call);
            assert_eq!(progress.total, Some(4.0));
            assert_eq!(progress.message.as_deref(), Some("one"));
        }
        other => panic!("expected progress, got {other:?}"),
    }
}

#[test]
fn a_result_that_breaks_the_output_schema_fails_the_call() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([{
        "name": "weather",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]}
    }]));
    let mut outcome = |structured: Option<Value>, is_error: bool| {
        let call = h
            .session
            .call_tool(h.now, "weather", json!({}))
            .expect("ready");
        h.drain();
        let mut result = json!({"content": [{"type": "text", "text": "{}"}], "isError": is_error});
        if let Some(s) = structured {
            result["structuredContent"] = s;
        }
        h.say(json!({"jsonrpc": "2.0", "id": call.wire_id(), "result": result}));
        match h.events.last() {
            Some(Event::CallCompleted { call: c, result }) if *c == call => result.clone(),
            other => panic!("expected completion, got {other:?}"),
        }
    };
    let valid = outcome(Some(json!({"t": 21.5})), false).expect("valid structured content");
    assert_eq!(valid.structured_content, Some(json!({"t": 21.5})));
    let invalid = outcome(Some(json!({"t": "warm"})), false).expect_err("schema violation");
    assert!(
        matches!(invalid, CallError::OutputSchema { .. }),
        "{invalid}"
    );
    assert!(invalid.to_string().contains("/t"), "{invalid}");
    let missing = outcome(None, false).expect_err("no structuredContent");
    assert!(
        missing.to_string().contains("no structuredContent"),
        "{missing}"
    );
    // An error result need not match the success schema.
    let error = outcome(None, true).expect("an isError result passes");
    assert!(error.is_error);
}

#[test]
fn a_call_in_flight_across_a_relist_is_held_to_the_tool_as_listed_when_it_answers() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {"listChanged": true}}));
    h.answer_last(json!({"tools": [tool("a"), tool("weather")]}));
    let call = h
        .session
        .call_tool(h.now, "weather", json!({}))
        .expect("ready");
    h.drain();
    // While the call runs, the list changes: `weather` moves to the front
    // and now declares an outputSchema, which its answer does not keep.
    h.say(json!({"jsonrpc": "2.0", "method": LIST_CHANGED}));
    h.answer_last(json!({"tools": [{
        "name": "weather",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "required": ["t"]}
    }]}));
    h.say(json!({"jsonrpc": "2.0", "id": call.wire_id(), "result": {"content": []}}));
    match h.events.last() {
        Some(Event::CallCompleted {
            call: c,
            result: Err(CallError::OutputSchema { .. }),
        }) if *c == call => {}
        other => panic!("expected an outputSchema failure, got {other:?}"),
    }
}

#[test]
fn progress_restarts_the_call_budget_up_to_the_hard_cap() {
    let mut options = Harness::options();
    options.progress_extends_up_to = Some(Duration::from_secs(12));
    let mut h = Harness::new(options);
    h.ready_with_tools(json!([tool("slow")]));
    let start = h.now;
    let call = h
        .session
        .call_tool(h.now, "slow", json!({}))
        .expect("ready");
    h.drain();
    assert_eq!(
        h.session.poll_timeout(),
        Some(start + Duration::from_secs(5))
    );
    let progress = |n: u64| json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": call.wire_id(), "progress": n}});
    h.now = start + Duration::from_secs(4);
    h.say(progress(1));
    assert_eq!(
        h.session.poll_timeout(),
        Some(start + Duration::from_secs(9))
    );
    h.now = start + Duration::from_secs(8);
    h.say(progress(2));
    // Capped at 12 s after the call was sent, not 13.
    assert_eq!(
        h.session.poll_timeout(),
        Some(start + Duration::from_secs(12))
    );
    h.step();
    assert!(matches!(
        h.events.last(),
        Some(Event::CallCompleted {
            result: Err(CallError::Timeout { .. }),
            ..
        })
    ));
    let cancels = h
        .methods()
        .iter()
        .filter(|m| *m == "notifications/cancelled")
        .count();
    assert_eq!(cancels, 1, "a timed-out call is cancelled exactly once");
}

/// The tool names a ready event reported.
fn ready_tools(h: &Harness) -> Vec<String> {
    h.events
        .iter()
        .find_map(|e| match e {
            Event::Ready(ready) => Some(ready.tools.iter().map(|t| t.name.clone()).collect()),
            _ => None,
        })
        .expect("ready")
}

const LIST_CHANGED: &str = "notifications/tools/list_changed";

#[test]
fn list_changed_during_discovery_lists_again_before_ready_and_ready_has_the_new_tools() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {"listChanged": true}}));
    // Two pages; the change arrives while the first is out.
    h.say(json!({"jsonrpc": "2.0", "method": LIST_CHANGED}));
    h.answer_last(json!({"tools": [tool("a")], "nextCursor": "p2"}));
    let (_, method, params) = h.last_request();
    assert_eq!(method, "tools/list");
    assert_eq!(
        params,
        Some(json!({"cursor": "p2"})),
        "this listing ends first"
    );
    h.answer_last(json!({"tools": [tool("b")]}));
    assert_eq!(h.session.state(), SessionState::Starting, "not ready yet");
    let (_, method, params) = h.last_request();
    assert_eq!(method, "tools/list");
    assert_eq!(params, None, "the listing again starts at the first page");
    h.answer_last(json!({"tools": [tool("a"), tool("c")]}));
    assert_eq!(h.session.state(), SessionState::Ready);
    assert_eq!(
        ready_tools(&h),
        ["a", "c"],
        "the list as it is now, not a+b"
    );
    assert_eq!(h.methods().iter().filter(|m| *m == "tools/list").count(), 3);
    assert!(
        !h.events.iter().any(|e| matches!(e, Event::ToolsChanged(_))),
        "{:?}",
        h.events
    );
}

#[test]
fn many_list_changes_during_discovery_list_once_more_then_once_after_ready() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {"listChanged": true}}));
    for _ in 0..3 {
        h.say(json!({"jsonrpc": "2.0", "method": LIST_CHANGED}));
    }
    h.answer_last(json!({"tools": [tool("a")]}));
    // A change during the listing again: ready comes now, with that list,
    // and the change is applied like one that arrives when ready.
    h.say(json!({"jsonrpc": "2.0", "method": LIST_CHANGED}));
    h.say(json!({"jsonrpc": "2.0", "method": LIST_CHANGED}));
    h.answer_last(json!({"tools": [tool("b")]}));
    assert_eq!(h.session.state(), SessionState::Ready);
    assert_eq!(ready_tools(&h), ["b"]);
    assert_eq!(
        h.methods().iter().filter(|m| *m == "tools/list").count(),
        3,
        "startup, the listing again, one re-list after ready"
    );
    h.answer_last(json!({"tools": [tool("c")]}));
    assert!(
        matches!(h.events.last(), Some(Event::ToolsChanged(t)) if t.len() == 1 && t[0].name == "c")
    );
    assert_eq!(h.session.poll_timeout(), None, "nothing else pending");
}

#[test]
fn list_changed_during_discovery_lists_again_even_when_not_declared() {
    let mut h = Harness::new(Harness::options());
    h.handshake("2025-11-25", json!({"tools": {}}));
    h.say(json!({"jsonrpc": "2.0", "method": LIST_CHANGED}));
    h.answer_last(json!({"tools": [tool("a")]}));
    assert_eq!(h.methods().iter().filter(|m| *m == "tools/list").count(), 2);
    h.answer_last(json!({"tools": [tool("a"), tool("b")]}));
    assert_eq!(h.session.state(), SessionState::Ready);
    assert_eq!(h.session.server_ready().map(|r| r.tools.len()), Some(2));
}

#[test]
fn timeout_reason_names_startup_then_ping_then_the_request_deadline() {
    let mut options = Harness::options();
    options.ping_interval = Some(Duration::from_secs(30));
    let mut h = Harness::new(options);
    let start = h.now;
    assert_eq!(h.session.timeout_reason(), Some(Timer::Startup));
    assert_eq!(
        h.session.poll_timeout(),
        Some(start + Duration::from_secs(10))
    );
    h.now += Duration::from_secs(1);
    h.ready_with_tools(json!([tool("a")]));
    assert_eq!(h.session.timeout_reason(), Some(Timer::Ping));
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(30))
    );
    let call = h.session.call_tool(h.now, "a", json!({})).expect("ready");
    h.drain();
    assert_eq!(h.session.timeout_reason(), Some(Timer::Request));
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(5))
    );
    // Reading the timeout twice changes nothing.
    assert_eq!(h.session.timeout_reason(), Some(Timer::Request));
    h.session.cancel_call(h.now, call);
    h.drain();
    assert_eq!(h.session.timeout_reason(), Some(Timer::Ping));
    h.session.close(h.now);
    h.drain();
    assert_eq!(h.session.timeout_reason(), None);
    assert_eq!(h.session.poll_timeout(), None);
}

#[test]
fn the_ping_timer_rearms_after_each_ping() {
    let mut options = Harness::options();
    options.ping_interval = Some(Duration::from_secs(30));
    options.request_timeout = Duration::from_secs(10);
    let mut h = Harness::new(options);
    h.ready_with_tools(json!([tool("a")]));
    assert_eq!(h.step(), Duration::from_secs(30));
    assert_eq!(h.last_request().1, "ping");
    // The ping's own deadline comes before the next ping.
    assert_eq!(h.session.timeout_reason(), Some(Timer::Request));
    h.answer_last(json!({}));
    assert_eq!(h.session.timeout_reason(), Some(Timer::Ping));
    assert_eq!(
        h.session.poll_timeout(),
        Some(h.now + Duration::from_secs(30))
    );
}

#[test]
fn a_now_earlier_than_the_latest_is_clamped_to_it() {
    let mut h = Harness::new(Harness::options());
    h.ready_with_tools(json!([tool("a")]));
    let latest = h.now + Duration::from_secs(3);
    h.session.handle_timeout(latest);
    // A call made with an older `now` runs from the latest time seen, so
    // its deadline is not earlier than one promised at `latest`.
    h.session.call_tool(h.now, "a", json!({})).expect("ready");
    h.drain();
    assert_eq!(
        h.session.poll_timeout(),
        Some(latest + Duration::from_secs(5))
    );
    // Time going back does not fire it early either.
    h.session.handle_timeout(h.now + Duration::from_secs(5));
    h.drain();
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::CallCompleted { .. })),
        "the call must not time out before its budget ran out"
    );
}

/// The harness's drive is bounded: a server that answers every listing
/// with a change of its list keeps the session re-listing for ever, and
/// the drive fails the test saying so instead of hanging it.
#[test]
#[should_panic(expected = "never went idle")]
fn a_server_that_changes_its_list_at_every_listing_fails_a_drive_instead_of_hanging_it() {
    let mut h = Harness::new(Harness::options());
    h.drive(|message| match message {
        Message::Request { method, .. } if method == "initialize" => vec![common::result_for(
            message,
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "scripted", "version": "1.0"}
            }),
        )],
        Message::Request { method, .. } if method == "tools/list" => vec![
            common::result_for(message, json!({"tools": [tool("a")]})),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        ],
        _ => Vec::new(),
    });
}
