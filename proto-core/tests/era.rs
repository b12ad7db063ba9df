//! The 2026-07-28 era behind the session seam: version selection with
//! `server/discover` and the fallback to the 2025 handshake in the same
//! budget, stateless `_meta` on every request, the -32022 retry,
//! `resultType`, `ttlMs` re-listing, and over HTTP the standard headers,
//! `x-mcp-header` mirroring and the tools dropped for bad annotations.
//! Scripted servers and a fake clock.

use std::collections::BTreeMap;
use std::time::Duration;

use rho_proto_core::config::LogLevel;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::elicitation::FormAnswer;
use rho_proto_core::features::prompts::GetPromptParams;
use rho_proto_core::http::{HttpFailure, HttpOptions, HttpRequest};
use rho_proto_core::session::{
    CallError, CancelNotice, CloseReason, Event, MIN_FRESHNESS, PeerError, SessionOptions,
    SessionState,
};
use rho_proto_core::wire::jsonrpc::Message;
use serde_json::{Value, json};
use url::Url;

const MODERN: &str = "2026-07-28";

fn options() -> SessionOptions {
    let mut o = SessionOptions::stdio("demo");
    o.startup_timeout = Duration::from_secs(10);
    o.tool_timeout = Duration::from_secs(5);
    o.request_timeout = Duration::from_secs(3);
    o
}

mod common;
use common::{Http, Stdio};

/// What these tests read off the shared stdio harness.
impl Stdio {
    fn error(&mut self, id: u64, code: i64, data: Value) {
        self.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "no", "data": data}}));
    }

    fn call(&mut self, tool: &str, arguments: Value) -> rho_proto_core::session::CallId {
        let call = self
            .session
            .call_tool(self.now, tool, arguments)
            .expect("ready");
        self.drain();
        call
    }

    /// The request sent with id `n`: id, method, params.
    fn request(&self, n: u64) -> (u64, String, Value) {
        self.sent
            .iter()
            .find_map(|m| match m {
                Message::Request { id, method, params } if id.to_string() == n.to_string() => {
                    Some((n, method.clone(), params.clone().unwrap_or(Value::Null)))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no request {n} in {:?}", self.sent))
    }

    fn ready(&self) -> bool {
        self.events.iter().any(|e| matches!(e, Event::Ready(_)))
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

/// No answer was taken for a protocol error.
fn assert_no_peer_errors(events: &[Event]) {
    assert!(
        !events.iter().any(|e| matches!(e, Event::PeerMisbehaved(_))),
        "{events:?}"
    );
}

fn discover_result(versions: Value, capabilities: Value) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": capabilities,
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "2.0"}},
        "instructions": "be kind",
        "ttlMs": 0,
        "cacheScope": "public"
    })
}

fn tools_page(names: &[&str], ttl_ms: u64) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    json!({"resultType": "complete", "tools": tools, "ttlMs": ttl_ms, "cacheScope": "public"})
}

/// A stdio session made ready in the stateless era with `echo`.
fn modern_ready(ttl_ms: u64) -> Stdio {
    let mut h = Stdio::new(options());
    h.reply(0, discover_result(json!([MODERN]), json!({"tools": {}})));
    let (list, _, _) = h.last_numbered_request();
    h.reply(list, tools_page(&["echo"], ttl_ms));
    assert!(h.ready(), "{:?}", h.events);
    h
}

#[test]
fn the_probe_carries_meta_and_a_discovery_result_makes_the_session_stateless() {
    let mut o = options();
    o.log_level = Some(LogLevel::Debug);
    o.workspace_root = Some("file:///work".into());
    o.elicitation = true;
    let mut h = Stdio::new(o);
    let (id, method, params) = h.request(0);
    assert_eq!((id, method.as_str()), (0, "server/discover"));
    let meta = &params["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], MODERN);
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "rho");
    assert_eq!(meta["io.modelcontextprotocol/logLevel"], "debug");
    // Only what this run answers; the era's roots carry no listChanged;
    // the tasks extension is followed on every request.
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({"roots": {}, "elicitation": {"form": {}},
               "extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    h.reply(
        0,
        discover_result(
            json!(["2025-11-25", MODERN]),
            json!({"tools": {}, "logging": {}}),
        ),
    );
    let (id, method, params) = h.last_numbered_request();
    assert_eq!((id, method.as_str()), (2, "tools/list"));
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
    h.reply(2, tools_page(&["echo"], 0));
    let ready = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Ready(r) => Some(r.clone()),
            _ => None,
        })
        .expect("ready");
    assert_eq!(ready.protocol_version, MODERN);
    assert_eq!(ready.server_info.name, "modern");
    assert_eq!(ready.instructions.as_deref(), Some("be kind"));
    assert_eq!(h.session.negotiated_version(), Some(MODERN));
    assert!(h.session.is_stateless());
    // No handshake notification, no logging/setLevel (the level rides on
    // each request), and no ping timer. The `initialize` sent behind the
    // probe is not waited for, and its answer is dropped quietly.
    assert_eq!(h.methods(), ["server/discover", "initialize", "tools/list"]);
    assert_eq!(h.session.poll_timeout(), None);
    h.error(1, -32601, json!(null));
    assert_no_peer_errors(&h.events);
    assert_eq!(h.session.state(), SessionState::Ready);
}

/// A 2025-era server sends its warnings unasked; a 2026-era one logs only
/// for requests that ask. Without a configured level every stateless
/// request asks for warnings, so both eras show the same.
#[test]
fn without_a_configured_level_stateless_requests_ask_for_warnings() {
    let mut h = Stdio::new(options());
    let (_, method, params) = h.request(0);
    assert_eq!(method, "server/discover");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/logLevel"],
        "warning"
    );
    h.reply(
        0,
        discover_result(json!([MODERN]), json!({"tools": {}, "logging": {}})),
    );
    let (_, method, params) = h.last_numbered_request();
    assert_eq!(method, "tools/list");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/logLevel"],
        "warning"
    );
}

#[test]
fn a_method_not_found_probe_falls_back_to_initialize_within_the_same_budget() {
    let mut h = Stdio::new(options());
    h.now += Duration::from_millis(30);
    h.error(0, -32601, json!(null));
    // The `initialize` already out behind the probe is the handshake.
    let (id, method, params) = h.last_numbered_request();
    assert_eq!((id, method.as_str()), (1, "initialize"));
    assert_eq!(params["protocolVersion"], "2025-11-25");
    assert!(!h.session.is_stateless());
    assert_eq!(
        h.session.startup_deadline(),
        Some(h.start + Duration::from_secs(10)),
        "the one startup budget"
    );
    h.reply(
        1,
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
    );
    assert!(h.ready());
    assert_eq!(
        h.methods(),
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

/// A 2025-only server that ignores `server/discover` (many do, silently)
/// answers the `initialize` sent right behind the probe: it is ready then,
/// not after the probe's wait.
#[test]
fn a_server_that_ignores_the_probe_is_ready_as_soon_as_it_answers_initialize() {
    let mut h = Stdio::new(options());
    assert_eq!(h.methods(), ["server/discover", "initialize"]);
    let (_, _, probe) = h.request(0);
    let (id, method, params) = h.request(1);
    assert_eq!((id, method.as_str()), (1, "initialize"));
    assert_eq!(params["protocolVersion"], "2025-11-25");
    // It carries the probe's envelope, so that a dual-era server takes it
    // for a modern request (and refuses it) rather than for the 2025
    // handshake.
    assert_eq!(params["_meta"], probe["_meta"]);
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
    h.now += Duration::from_millis(5);
    h.reply(
        1,
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
    );
    assert!(h.ready(), "{:?}", h.events);
    assert!(!h.session.is_stateless());
    assert_eq!(
        h.methods(),
        ["server/discover", "initialize", "notifications/initialized"]
    );
    // Nothing waits for the probe any more; its answer, were it to come,
    // is dropped quietly.
    assert_eq!(h.session.probe_request(), None);
    h.error(0, -32601, json!(null));
    assert_no_peer_errors(&h.events);
}

/// A dual-era server refuses the early `initialize` (the TypeScript SDK
/// 2.x with -32601, before its discovery result; the Python SDK 2.x with
/// -32022, after it): the probe's discovery result makes it stateless.
#[test]
fn a_modern_server_refusing_the_early_initialize_is_found_by_its_probe() {
    for (first_init, code) in [(true, -32601), (false, -32022)] {
        let mut h = Stdio::new(options());
        if first_init {
            h.error(1, code, json!(null));
            assert_eq!(h.session.state(), SessionState::Starting);
        }
        h.reply(0, discover_result(json!([MODERN]), json!({})));
        if !first_init {
            h.error(
                1,
                code,
                json!({"supported": [MODERN], "requested": "2025-11-25"}),
            );
        }
        assert!(h.ready(), "{:?}", h.events);
        assert!(h.session.is_stateless());
        assert_no_peer_errors(&h.events);
        let inits = h.methods().iter().filter(|m| *m == "initialize").count();
        assert_eq!(inits, 1, "never a second initialize: {:?}", h.methods());
    }
}

/// A 2025 server that refuses the probe and (for its envelope, say) the
/// early `initialize` gets a plain one.
#[test]
fn a_server_refusing_the_probe_and_the_early_initialize_gets_a_plain_one() {
    let mut h = Stdio::new(options());
    h.error(1, -32602, json!(null));
    h.error(0, -32601, json!(null));
    let (id, method, params) = h.last_numbered_request();
    assert_eq!((id, method.as_str()), (2, "initialize"));
    assert!(params.get("_meta").is_none(), "{params}");
    h.reply(
        2,
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
    );
    assert!(h.ready(), "{:?}", h.events);
}

/// A modern server that starts slowly (the TypeScript SDK 2.x on a cold
/// `npx`): nothing for 5 s, then -32601 to the early `initialize`, then its
/// discovery result. The refusal says "modern", so the probe is waited for;
/// no timer took the server for a 2025 one meanwhile.
#[test]
fn a_modern_server_that_answers_only_after_five_seconds_is_found_by_its_probe() {
    for discover_first in [false, true] {
        let mut h = Stdio::new(options());
        assert_eq!(
            h.session.poll_timeout(),
            Some(h.start + Duration::from_secs(10)),
            "silence is waited out only by the startup budget"
        );
        h.now += Duration::from_secs(5);
        h.session.handle_timeout(h.now);
        h.drain();
        assert_eq!(h.methods(), ["server/discover", "initialize"], "no guess");
        if discover_first {
            h.reply(0, discover_result(json!([MODERN]), json!({"tools": {}})));
            h.error(1, -32601, json!(null));
        } else {
            h.error(1, -32601, json!(null));
            assert_eq!(h.session.state(), SessionState::Starting);
            assert_eq!(
                h.session.poll_timeout(),
                Some(h.start + Duration::from_secs(10)),
                "a modern refusal arms no shorter wait"
            );
            h.now += Duration::from_secs(2);
            h.reply(0, discover_result(json!([MODERN]), json!({"tools": {}})));
        }
        let (list, method, _) = h.last_numbered_request();
        assert_eq!(method, "tools/list");
        h.reply(list, tools_page(&["echo"], 0));
        assert!(h.ready(), "{:?}", h.events);
        assert!(h.session.is_stateless());
        assert_no_peer_errors(&h.events);
        let inits = h.methods().iter().filter(|m| *m == "initialize").count();
        assert_eq!(inits, 1, "never a second initialize: {:?}", h.methods());
    }
}

/// Refusals that say the server does not know the method or the version,
/// in whatever code or words, all wait for the probe.
#[test]
fn every_refusal_that_says_modern_waits_for_the_probe() {
    for (code, message) in [
        (-32601, "no"),
        (-32022, "no"),
        (-32021, "no"),
        (-32600, "Method not found: initialize"),
        (-32603, "Unsupported protocol version"),
    ] {
        let mut h = Stdio::new(options());
        h.now += Duration::from_secs(4);
        h.say(json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message}}));
        assert_eq!(
            h.session.poll_timeout(),
            Some(h.start + Duration::from_secs(10)),
            "{code} {message}"
        );
        h.wait_until(h.start + Duration::from_secs(9));
        assert_eq!(h.methods(), ["server/discover", "initialize"]);
        h.reply(0, discover_result(json!([MODERN]), json!({})));
        assert!(h.ready(), "{code} {message}: {:?}", h.events);
    }
}

/// A server silent to both fails at the end of its startup budget, saying
/// what it was waiting for, and was never sent a guess.
#[test]
fn a_silent_server_fails_at_its_startup_budget_waiting_for_discovery() {
    let mut h = Stdio::new(options());
    h.wait_until(h.start + Duration::from_secs(10));
    let Some(CloseReason::StartupTimeout { waiting_for, .. }) = h.closed() else {
        panic!("{:?}", h.events)
    };
    assert!(waiting_for.contains("server/discover"), "{waiting_for}");
    assert_eq!(h.methods(), ["server/discover", "initialize"]);
}

/// A 2025 server that refuses the early `initialize` for its envelope
/// (without saying "modern") and ignores the probe gets a plain
/// `initialize` after the probe's short wait; a late discovery result
/// would still win.
#[test]
fn an_early_initialize_refused_for_another_reason_gets_a_plain_one_after_the_wait() {
    let mut h = Stdio::new(options());
    h.now += Duration::from_secs(1);
    h.error(1, -32602, json!(null));
    let wait = h.session.poll_timeout().expect("the probe's wait");
    assert_eq!(wait, h.now + Duration::from_secs(3));
    h.wait_until(wait);
    let (id, method, params) = h.last_numbered_request();
    assert_eq!((id, method.as_str()), (2, "initialize"));
    assert!(params.get("_meta").is_none(), "{params}");
    h.reply(
        2,
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
    );
    assert!(h.ready(), "{:?}", h.events);
    assert!(!h.session.is_stateless());
    h.error(0, -32601, json!(null));
    assert_no_peer_errors(&h.events);
}

#[test]
fn a_late_probe_after_a_refused_early_initialize_still_makes_the_server_stateless() {
    let mut h = Stdio::new(options());
    h.error(1, -32602, json!(null));
    let wait = h.session.poll_timeout().expect("wait");
    h.wait_until(wait);
    assert_eq!(h.last_numbered_request().1, "initialize");
    h.reply(0, discover_result(json!([MODERN]), json!({})));
    assert!(h.ready(), "{:?}", h.events);
    assert!(h.session.is_stateless());
    h.error(2, -32601, json!(null));
    assert_no_peer_errors(&h.events);
}

#[test]
fn a_late_probe_error_after_the_handshake_answered_is_dropped_quietly() {
    let mut h = Stdio::new(options());
    h.now += Duration::from_secs(5);
    h.reply(
        1,
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
    );
    assert!(h.ready());
    h.error(0, -32601, json!(null));
    assert_no_peer_errors(&h.events);
}

#[test]
fn an_unsupported_version_probe_is_retried_once_then_fails_in_words() {
    let mut h = Stdio::new(options());
    h.error(
        0,
        -32022,
        json!({"supported": [MODERN], "requested": MODERN}),
    );
    let (id, method, _) = h.last_numbered_request();
    assert_eq!((id, method.as_str()), (2, "server/discover"));
    h.error(
        2,
        -32022,
        json!({"supported": ["2099-01-01"], "requested": MODERN}),
    );
    let Some(CloseReason::Handshake(why)) = h.closed() else {
        panic!("{:?}", h.events)
    };
    assert!(why.contains("it lists 2099-01-01"), "{why}");
    // Only the `initialize` sent behind the first probe.
    let inits = h.methods().iter().filter(|m| *m == "initialize").count();
    assert_eq!(inits, 1, "{:?}", h.methods());
}

#[test]
fn an_unsupported_version_listing_only_a_handshake_version_goes_on_with_the_handshake() {
    let mut h = Stdio::new(options());
    h.error(
        0,
        -32022,
        json!({"supported": ["2025-06-18"], "requested": MODERN}),
    );
    // The `initialize` behind the probe is already out; the server
    // answers it with the version it speaks.
    assert_eq!(h.methods(), ["server/discover", "initialize"]);
    h.reply(
        1,
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "old", "version": "1"}}),
    );
    assert!(h.ready(), "{:?}", h.events);
    assert_eq!(h.session.negotiated_version(), Some("2025-06-18"));
}

#[test]
fn a_discovery_result_naming_no_version_rho_speaks_fails_naming_them() {
    let mut h = Stdio::new(options());
    h.reply(0, discover_result(json!(["2030-01-01"]), json!({})));
    let Some(CloseReason::Handshake(why)) = h.closed() else {
        panic!("{:?}", h.events)
    };
    assert!(
        why.contains("2030-01-01") && why.contains("rho speaks"),
        "{why}"
    );
}

#[test]
fn a_header_mismatch_on_the_probe_is_a_modern_refusal_not_a_fallback() {
    let mut h = Stdio::new(options());
    h.error(0, -32020, json!(null));
    assert!(
        matches!(h.closed(), Some(CloseReason::Handshake(_))),
        "{:?}",
        h.events
    );
    assert_eq!(h.methods(), ["server/discover", "initialize"]);
}

#[test]
fn a_call_refused_for_its_version_is_sent_again_once_under_a_new_id() {
    let mut h = modern_ready(60_000);
    let call = h.call("echo", json!({"m": 1}));
    let (first, method, params) = h.last_numbered_request();
    assert_eq!(method, "tools/call");
    assert_eq!(params["_meta"]["progressToken"], json!(call.wire_id()));
    h.error(
        first,
        -32022,
        json!({"supported": [MODERN], "requested": MODERN}),
    );
    let (second, method, params) = h.last_numbered_request();
    assert_eq!(method, "tools/call");
    assert!(second > first);
    assert_eq!(params["arguments"], json!({"m": 1}));
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
    // Progress still finds the call by its token.
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                 "params": {"progressToken": call.wire_id(), "progress": 1}}));
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::Progress { call: c, .. } if *c == call))
    );
    // Refused again: no loop, the error reads in words.
    h.error(
        second,
        -32022,
        json!({"supported": [MODERN], "requested": MODERN}),
    );
    let Some(Err(error)) = h.call_result() else {
        panic!("{:?}", h.events)
    };
    assert!(matches!(error, CallError::Rpc { .. }));
    assert!(
        error
            .to_string()
            .contains("does not speak the protocol version"),
        "{error}"
    );
}

#[test]
fn cancelling_a_resent_call_names_its_current_request() {
    let mut h = modern_ready(60_000);
    let call = h.call("echo", json!({}));
    let (first, _, _) = h.last_numbered_request();
    h.error(
        first,
        -32022,
        json!({"supported": [MODERN], "requested": MODERN}),
    );
    let (second, _, _) = h.last_numbered_request();
    h.session.cancel_call(h.now, call);
    h.drain();
    let cancelled = h
        .sent
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Notification { method, params } if method == "notifications/cancelled" => {
                params.clone()
            }
            _ => None,
        })
        .expect("cancelled");
    assert_eq!(cancelled["requestId"], json!(second));
    assert!(matches!(
        h.call_result(),
        Some(Err(CallError::Cancelled { .. }))
    ));
}

#[test]
fn an_input_required_result_is_not_passed_off_as_final() {
    let mut h = modern_ready(60_000);
    h.call("echo", json!({}));
    let (id, _, _) = h.last_numbered_request();
    h.reply(
        id,
        json!({"resultType": "input_required", "inputRequests": {}, "content": [{"type": "text", "text": "partial"}]}),
    );
    // Nothing to ask: the call is retried at once (tests/mrtr.rs has the
    // rest of multi round-trip requests), never completed with `partial`.
    assert!(h.call_result().is_none(), "{:?}", h.events);
    let (retry, method, params) = h.last_numbered_request();
    assert_ne!(retry, id);
    assert_eq!(
        (method.as_str(), &params["name"]),
        ("tools/call", &json!("echo"))
    );
}

#[test]
fn an_unknown_result_type_is_malformed_and_an_absent_one_is_complete() {
    let mut h = modern_ready(60_000);
    h.call("echo", json!({}));
    let (id, _, _) = h.last_numbered_request();
    h.reply(id, json!({"resultType": "deferred", "content": []}));
    assert!(
        matches!(h.call_result(), Some(Err(CallError::Malformed { error, .. })) if error.0.contains("`deferred`")),
        "{:?}",
        h.events
    );
    h.call("echo", json!({}));
    let (id, _, _) = h.last_numbered_request();
    h.reply(id, json!({"content": [{"type": "text", "text": "ok"}]}));
    assert!(matches!(h.call_result(), Some(Ok(r)) if r.text() == "ok"));
}

#[test]
fn a_stale_tool_list_is_read_again_when_a_call_needs_it() {
    let mut h = modern_ready(60_000);
    // Fresh: a call lists nothing.
    h.call("echo", json!({}));
    assert_eq!(h.last_numbered_request().1, "tools/call");
    let (call_id, _, _) = h.last_numbered_request();
    h.reply(call_id, json!({"content": []}));
    // Past its ttlMs: the next call re-lists, once even for two calls.
    h.now += Duration::from_secs(61);
    h.call("echo", json!({}));
    h.call("echo", json!({}));
    let lists = h.methods().iter().filter(|m| *m == "tools/list").count();
    assert_eq!(lists, 2, "discovery and one re-listing: {:?}", h.methods());
    let relist = h
        .sent
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Request { id, method, .. } if method == "tools/list" => {
                Some(id.to_string().parse::<u64>().expect("id"))
            }
            _ => None,
        })
        .expect("relist");
    // The same list: nothing to report.
    h.reply(relist, tools_page(&["echo"], 0));
    assert!(!h.events.iter().any(|e| matches!(e, Event::ToolsChanged(_))));
    // ttlMs 0: stale once the floor passed, so the next call re-lists and
    // a change shows.
    h.now += MIN_FRESHNESS;
    h.call("echo", json!({}));
    let (relist, method, _) = h.last_numbered_request();
    assert_eq!(method, "tools/list");
    h.reply(relist, tools_page(&["echo", "new"], 60_000));
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::ToolsChanged(t) if t.len() == 2))
    );
}

#[test]
fn a_list_with_ttl_zero_is_read_again_at_most_once_per_floor() {
    let mut h = modern_ready(0);
    // Calls in a burst right after the listing: none re-lists.
    for _ in 0..3 {
        h.call("echo", json!({}));
        assert_eq!(
            h.last_numbered_request().1,
            "tools/call",
            "{:?}",
            h.methods()
        );
    }
    // Past the floor: the next call re-lists, once.
    h.now += MIN_FRESHNESS;
    h.call("echo", json!({}));
    let (relist, method, _) = h.last_numbered_request();
    assert_eq!(method, "tools/list");
    h.reply(relist, tools_page(&["echo"], 0));
    h.call("echo", json!({}));
    assert_eq!(
        h.last_numbered_request().1,
        "tools/call",
        "fresh again for the floor"
    );
    let lists = h.methods().iter().filter(|m| *m == "tools/list").count();
    assert_eq!(lists, 2, "discovery and one re-listing: {:?}", h.methods());
}

#[test]
fn a_failed_re_listing_keeps_the_stale_list_and_tries_again_after_a_pause() {
    let mut h = modern_ready(0);
    h.now += MIN_FRESHNESS;
    h.call("echo", json!({}));
    let (relist, method, _) = h.last_numbered_request();
    assert_eq!(method, "tools/list");
    h.error(relist, -32603, json!(null));
    h.call("echo", json!({}));
    assert_eq!(
        h.last_numbered_request().1,
        "tools/call",
        "no second try at once"
    );
    h.now += Duration::from_secs(4);
    h.call("echo", json!({}));
    assert_eq!(h.last_numbered_request().1, "tools/list");
}

#[test]
fn a_2025_version_offered_goes_straight_to_initialize() {
    let mut o = options();
    o.protocol_version = "2025-06-18".into();
    let h = Stdio::new(o);
    let (_, method, params) = h.last_numbered_request();
    assert_eq!(method, "initialize");
    assert_eq!(params["protocolVersion"], "2025-06-18");
}

// ----- Streamable HTTP -----

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn body(req: &HttpRequest) -> Value {
    serde_json::from_slice(&req.body).expect("json body")
}

/// What these tests read off the shared HTTP harness.
impl Http {
    fn new() -> Self {
        Self::with(|_| {})
    }

    fn with(adjust: impl FnOnce(&mut HttpOptions)) -> Self {
        Self::build(options(), adjust)
    }

    fn build(session: SessionOptions, adjust: impl FnOnce(&mut HttpOptions)) -> Self {
        let mut http = HttpOptions::new(
            Url::parse("http://127.0.0.1:9/mcp").expect("url"),
            vec![("Mcp-Method".into(), "configured-never-wins".into())],
        );
        adjust(&mut http);
        Self::connect(session, http)
    }

    fn answer(&mut self, req: &HttpRequest, status: u16, headers: &[(&str, &str)], body: &str) {
        self.respond(req, status, headers, body.as_bytes());
    }

    fn result(&mut self, req: &HttpRequest, result: Value) {
        let id = body(req)["id"].clone();
        let text = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        // Servers of this era still send one; it must never come back.
        self.answer(
            req,
            200,
            &[
                ("content-type", "application/json"),
                ("mcp-session-id", "s-1"),
            ],
            &text,
        );
    }

    fn ready(&mut self, tools: Value) {
        let probe = self.last_send();
        self.result(
            &probe,
            discover_result(json!([MODERN]), json!({"tools": {}})),
        );
        let list = self.last_send();
        assert_eq!(body(&list)["method"], "tools/list");
        self.result(
            &list,
            json!({"tools": tools, "ttlMs": 60000, "cacheScope": "private"}),
        );
        assert!(
            self.events.iter().any(|e| matches!(e, Event::Ready(_))),
            "{:?}",
            self.events
        );
        // Nothing is due: no keep-alive ping in this era (HTTP sessions of
        // the 2025 era ping each minute).
        assert_eq!(self.transport.poll_timeout(), None);
    }
}

#[test]
fn every_post_carries_the_version_and_standard_headers_and_no_session() {
    let mut h = Http::new();
    let probe = h.last_send();
    assert_eq!(body(&probe)["method"], "server/discover");
    assert_eq!(header(&probe, "mcp-protocol-version"), Some(MODERN));
    assert_eq!(header(&probe, "mcp-method"), Some("server/discover"));
    assert_eq!(
        probe
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-method"))
            .count(),
        1,
        "the configured Mcp-Method is dropped: {:?}",
        probe.headers
    );
    h.ready(
        json!([{"name": "my-tool", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "gone": {"type": "boolean", "x-mcp-header": "Gone"}
        }}}]),
    );
    h.transport
        .call_tool(
            h.now,
            "my-tool",
            json!({"region": "us-west1", "greeting": "Hello, 世界", "count": 42, "gone": null}),
        )
        .expect("ready");
    h.drain();
    let call = h.last_send();
    assert_eq!(body(&call)["method"], "tools/call");
    assert_eq!(header(&call, "mcp-session-id"), None);
    assert_eq!(header(&call, "mcp-protocol-version"), Some(MODERN));
    assert_eq!(header(&call, "mcp-method"), Some("tools/call"));
    assert_eq!(header(&call, "mcp-name"), Some("my-tool"));
    assert_eq!(header(&call, "mcp-param-region"), Some("us-west1"));
    assert_eq!(
        header(&call, "mcp-param-greeting"),
        Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
    );
    assert_eq!(header(&call, "mcp-param-count"), Some("42"));
    assert_eq!(header(&call, "mcp-param-gone"), None, "null is omitted");
    assert!(
        !h.sends()
            .into_iter()
            .any(|r| r.method != rho_proto_core::http::Method::Post),
        "no GET stream, no DELETE"
    );
}

#[test]
fn tools_with_invalid_header_annotations_are_left_out_with_the_reason() {
    let mut h = Http::new();
    h.ready(json!([
        {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}},
        {"name": "invalid_space", "inputSchema": {"type": "object", "properties": {
            "v": {"type": "string", "x-mcp-header": "My Region"}}}}
    ]));
    let ready = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Ready(r) => Some(r.clone()),
            _ => None,
        })
        .expect("ready");
    let names: Vec<&str> = ready.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["valid_tool"]);
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::PeerMisbehaved(PeerError::MalformedTool { error, .. })
            if error.0.contains("invalid_space") && error.0.contains("token")
    )));
}

#[test]
fn cancelling_a_call_drops_its_stream_and_posts_no_notification() {
    let mut h = Http::new();
    h.ready(json!([{"name": "echo", "inputSchema": {"type": "object"}}]));
    let call = h
        .transport
        .call_tool(h.now, "echo", json!({}))
        .expect("ready");
    h.drain();
    let post = h.last_send();
    let before = h.sends().len();
    h.transport.cancel_call(h.now, call);
    h.drain();
    assert_eq!(h.sends().len(), before, "no notifications/cancelled POST");
    assert!(h.aborted().contains(&post.exchange));
    // The error says what rho did, not that the server was told.
    let error = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::CallCompleted {
                result: Err(error), ..
            } => Some(error.clone()),
            _ => None,
        })
        .expect("the call ended");
    assert!(
        matches!(
            error,
            CallError::Cancelled {
                notice: CancelNotice::StreamClosed,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .ends_with("; the response stream was closed"),
        "{error}"
    );
}

/// Breaks the SSE response stream of `post` after a priming event.
fn break_stream(h: &mut Http, post: &HttpRequest) {
    h.transport.handle_response_head(
        h.now,
        post.exchange,
        200,
        &[("content-type".into(), "text/event-stream".into())],
    );
    h.transport
        .handle_response_body(h.now, post.exchange, b"id: 7\ndata: \n\n");
    h.transport
        .handle_exchange_failed(h.now, post.exchange, HttpFailure::other("reset"));
    h.drain();
}

#[test]
fn a_broken_stream_fails_a_call_that_may_have_had_its_effect_and_is_never_resumed() {
    let mut h = Http::new();
    h.ready(json!([{"name": "echo", "inputSchema": {"type": "object"}}]));
    h.transport
        .call_tool(h.now, "echo", json!({}))
        .expect("ready");
    h.drain();
    let post = h.last_send();
    let before = h.sends().len();
    break_stream(&mut h, &post);
    let Some(Event::CallCompleted {
        result: Err(error), ..
    }) = h.events.last()
    else {
        panic!("{:?}", h.events)
    };
    let text = error.to_string();
    assert!(text.contains("does not resume"), "{text}");
    assert!(text.contains("read-only or idempotent"), "{text}");
    assert_eq!(
        h.sends().len(),
        before,
        "nothing sent again, no Last-Event-ID GET"
    );
}

#[test]
fn a_broken_stream_re_issues_a_read_only_call_once_under_a_new_id() {
    let mut h = Http::new();
    h.ready(json!([{"name": "look", "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": true}}]));
    h.transport
        .call_tool(h.now, "look", json!({"q": 1}))
        .expect("ready");
    h.drain();
    let first = h.last_send();
    break_stream(&mut h, &first);
    let again = h.last_send();
    assert_ne!(again.exchange, first.exchange);
    assert_eq!(body(&again)["method"], "tools/call");
    assert_eq!(body(&again)["params"]["arguments"], json!({"q": 1}));
    assert_ne!(body(&again)["id"], body(&first)["id"], "a new id");
    // Broken again: once is enough.
    break_stream(&mut h, &again);
    assert_eq!(h.last_send().exchange, again.exchange, "not a third time");
    assert!(matches!(
        h.events.last(),
        Some(Event::CallCompleted {
            result: Err(CallError::Transport { .. }),
            ..
        })
    ));
}

#[test]
fn a_broken_stream_during_discovery_lists_again() {
    let mut h = Http::new();
    let probe = h.last_send();
    h.result(
        &probe,
        discover_result(json!([MODERN]), json!({"tools": {}})),
    );
    let list = h.last_send();
    break_stream(&mut h, &list);
    let again = h.last_send();
    assert_eq!(body(&again)["method"], "tools/list");
    assert_ne!(again.exchange, list.exchange);
    h.result(&again, json!({"tools": [], "ttlMs": 0}));
    assert!(h.events.iter().any(|e| matches!(e, Event::Ready(_))));
}

#[test]
fn a_header_mismatch_lists_the_tools_again_and_sends_the_call_once_more() {
    let mut h = Http::new();
    let tool = |header: &str| {
        json!([{"name": "sql", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": header}}}}])
    };
    h.ready(tool("Region"));
    h.transport
        .call_tool(h.now, "sql", json!({"region": "eu"}))
        .expect("ready");
    h.drain();
    let first = h.last_send();
    assert_eq!(header(&first, "mcp-param-region"), Some("eu"));
    let mismatch = |req: &HttpRequest| {
        json!({"jsonrpc": "2.0", "id": body(req)["id"], "error": {"code": -32020,
               "message": "Header mismatch: Mcp-Param-Zone missing"}})
        .to_string()
    };
    h.answer(
        &first,
        400,
        &[("content-type", "application/json")],
        &mismatch(&first),
    );
    let list = h.last_send();
    assert_eq!(
        body(&list)["method"],
        "tools/list",
        "the call waits for a fresh list"
    );
    h.result(&list, json!({"tools": tool("Zone"), "ttlMs": 60000}));
    let again = h.last_send();
    assert_eq!(body(&again)["method"], "tools/call");
    assert_ne!(body(&again)["id"], body(&first)["id"]);
    assert_eq!(
        header(&again, "mcp-param-zone"),
        Some("eu"),
        "the new annotation"
    );
    assert_eq!(header(&again, "mcp-param-region"), None);
    // Refused again: once is the bound; the error reads in words.
    h.answer(
        &again,
        400,
        &[("content-type", "application/json")],
        &mismatch(&again),
    );
    let Some(Event::CallCompleted {
        result: Err(error), ..
    }) = h.events.last()
    else {
        panic!("{:?}", h.events)
    };
    assert!(
        error.to_string().contains("headers do not match"),
        "{error}"
    );
    assert_eq!(
        body(&h.last_send())["method"],
        "tools/call",
        "no third listing"
    );
}

#[test]
fn a_new_token_makes_a_private_tool_list_stale_but_not_a_public_one() {
    // The same token again is no new credential.
    for (scope, token, relists) in [
        ("private", "Bearer new", true),
        ("public", "Bearer new", false),
        ("private", "Bearer old", false),
    ] {
        let mut h = Http::with(|o| {
            o.oauth = true;
            o.reauthorize = true;
            o.headers
                .push(("Authorization".into(), "Bearer old".into()));
        });
        let probe = h.last_send();
        h.result(
            &probe,
            discover_result(json!([MODERN]), json!({"tools": {}})),
        );
        let list = h.last_send();
        h.result(
            &list,
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                   "ttlMs": 3_600_000, "cacheScope": scope}),
        );
        h.transport
            .call_tool(h.now, "echo", json!({}))
            .expect("ready");
        h.drain();
        let call = h.last_send();
        h.answer(
            &call,
            401,
            &[("www-authenticate", "Bearer error=\"invalid_token\"")],
            "",
        );
        let question = h
            .events
            .iter()
            .find_map(|e| match e {
                Event::Question { question, .. } => Some(*question),
                _ => None,
            })
            .expect("asked to re-authorize");
        h.transport
            .answer_authorization(h.now, question, Ok(token.into()));
        h.drain();
        let resent = h.last_send();
        assert_eq!(body(&resent)["method"], "tools/call");
        h.result(&resent, json!({"content": []}));
        h.transport
            .call_tool(h.now, "echo", json!({}))
            .expect("ready");
        h.drain();
        let methods: Vec<Value> = h
            .sends()
            .into_iter()
            .rev()
            .take(2)
            .map(|r| body(r)["method"].clone())
            .collect();
        assert_eq!(
            methods.contains(&json!("tools/list")),
            relists,
            "{scope}, {token}: {methods:?}"
        );
    }
}

#[test]
fn a_202_to_a_request_fails_it_since_no_other_stream_will_answer() {
    let mut h = Http::new();
    h.ready(json!([{"name": "echo", "inputSchema": {"type": "object"}}]));
    h.transport
        .call_tool(h.now, "echo", json!({}))
        .expect("ready");
    h.drain();
    let post = h.last_send();
    h.answer(&post, 202, &[], "");
    let Some(Event::CallCompleted {
        result: Err(error), ..
    }) = h.events.last()
    else {
        panic!("{:?}", h.events)
    };
    assert!(error.to_string().contains("HTTP 202"), "{error}");
}

#[test]
fn a_legacy_server_refusing_the_probe_with_400_gets_initialize() {
    let mut h = Http::new();
    let probe = h.last_send();
    h.answer(
        &probe,
        400,
        &[("content-type", "application/json")],
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}"#,
    );
    let init = h.last_send();
    assert_eq!(body(&init)["method"], "initialize");
    assert_eq!(header(&init, "mcp-protocol-version"), None);
    assert_eq!(header(&init, "mcp-method"), None);
    assert!(!h.transport.session().is_stateless());
}

/// The Python SDK 1.x refuses a request it cannot place with HTTP 400 and
/// a JSON-RPC error under an id of its own, `"server-error"`: stateful
/// servers for the missing session, stateless ones for the version. That
/// error is the probe's answer, and `initialize` follows at once.
#[test]
fn a_400_error_under_the_servers_own_id_answers_the_probe_and_initialize_follows_at_once() {
    for message in [
        "Bad Request: Missing session ID",
        "Unsupported protocol version: 2026-07-28. Supported versions: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25",
    ] {
        let mut h = Http::new();
        let probe = h.last_send();
        let text = json!({"jsonrpc": "2.0", "id": "server-error",
                          "error": {"code": -32600, "message": message}})
        .to_string();
        h.answer(&probe, 400, &[("content-type", "application/json")], &text);
        let init = h.last_send();
        assert_eq!(body(&init)["method"], "initialize", "{message}");
        assert!(!h.transport.session().is_stateless());
        assert_no_peer_errors(&h.events);
    }
}

/// The same error in a 200 body (or any answer that carries no id of the
/// request) settles the request at once instead of leaving it to its
/// deadline.
#[test]
fn a_json_body_that_does_not_answer_its_request_settles_it_at_once() {
    let mut h = Http::new();
    let probe = h.last_send();
    h.answer(
        &probe,
        200,
        &[("content-type", "application/json")],
        r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request"}}"#,
    );
    let init = h.last_send();
    assert_eq!(body(&init)["method"], "initialize");
    h.answer(
        &init,
        200,
        &[("content-type", "application/json")],
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
    );
    let Some(Event::Closed(reason)) = h.events.last() else {
        panic!("{:?}", h.events)
    };
    assert!(
        reason.to_string().contains("did not answer the request"),
        "{reason}"
    );
}

#[test]
fn an_unsupported_version_in_a_400_body_probes_again_rather_than_falling_back() {
    let mut h = Http::new();
    let probe = h.last_send();
    let id = body(&probe)["id"].clone();
    h.answer(
        &probe,
        400,
        &[("content-type", "application/json")],
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": "1900-01-01"}}})
        .to_string(),
    );
    let again = h.last_send();
    assert_eq!(body(&again)["method"], "server/discover");
    assert_ne!(again.exchange, probe.exchange);
    assert_eq!(header(&again, "mcp-protocol-version"), Some(MODERN));
}

#[test]
fn a_401_to_the_probe_fails_naming_authorization_without_a_fallback() {
    let mut h = Http::new();
    let probe = h.last_send();
    h.answer(&probe, 401, &[], "");
    let Some(Event::Closed(CloseReason::TransportFailed(why))) = h.events.last() else {
        panic!("{:?}", h.events)
    };
    assert!(
        why.contains("401") && why.contains("authorization"),
        "{why}"
    );
    assert_eq!(h.sends().len(), 1, "no initialize after a 401");
}

#[test]
fn a_new_token_drops_a_private_prompt_list_and_lists_it_again_with_the_new_header() {
    let mut h = Http::with(|o| {
        o.oauth = true;
        o.reauthorize = true;
        o.headers
            .push(("Authorization".into(), "Bearer old".into()));
    });
    let latest = |h: &Http, method: &str| {
        h.sends()
            .into_iter()
            .rev()
            .find(|r| body(r)["method"] == method)
            .cloned()
            .unwrap_or_else(|| panic!("no {method} sent"))
    };
    let probe = h.last_send();
    h.result(
        &probe,
        discover_result(json!([MODERN]), json!({"tools": {}, "prompts": {}})),
    );
    let tools = latest(&h, "tools/list");
    h.result(
        &tools,
        json!({"tools": [], "ttlMs": 3_600_000, "cacheScope": "public"}),
    );
    let prompts = latest(&h, "prompts/list");
    h.result(
        &prompts,
        json!({"prompts": [{"name": "alices"}], "ttlMs": 3_600_000, "cacheScope": "private"}),
    );
    assert_eq!(h.transport.session().catalog().prompts.items.len(), 1);
    let request = FeatureRequest::GetPrompt(GetPromptParams {
        name: "alices".into(),
        arguments: Default::default(),
    });
    h.transport.request(h.now, &request).expect("ready");
    h.drain();
    let get = latest(&h, "prompts/get");
    h.answer(
        &get,
        401,
        &[("www-authenticate", "Bearer error=\"invalid_token\"")],
        "",
    );
    let question = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Question { question, .. } => Some(*question),
            _ => None,
        })
        .expect("asked to re-authorize");
    h.events.clear();
    h.transport
        .answer_authorization(h.now, question, Ok("Bearer new".into()));
    h.drain();
    assert!(
        h.transport.session().catalog().prompts.items.is_empty(),
        "the old token's prompts are not served"
    );
    assert!(
        h.events.iter().any(|e| matches!(
            e,
            Event::CatalogChanged(c) if c.prompts.items.is_empty()
        )),
        "{:?}",
        h.events
    );
    let relist = latest(&h, "prompts/list");
    assert_ne!(relist.exchange, prompts.exchange, "listed again");
    assert_eq!(header(&relist, "authorization"), Some("Bearer new"));
    assert_eq!(
        header(&latest(&h, "prompts/get"), "authorization"),
        Some("Bearer new")
    );
    assert_eq!(
        h.sends()
            .into_iter()
            .filter(|r| body(r)["method"] == "tools/list")
            .count(),
        1,
        "the public tool list stands"
    );
}

/// A call answered over SSE with an `InputRequiredResult` was answered:
/// the stream ending after it does not lose the call, which waits for its
/// question and then goes again with the answer.
#[test]
fn an_input_required_answer_over_sse_survives_its_streams_end() {
    let mut o = options();
    o.elicitation = true;
    let mut h = Http::build(o, |_| {});
    h.ready(json!([{"name": "echo", "inputSchema": {"type": "object"}}]));
    let call = h
        .transport
        .call_tool(h.now, "echo", json!({}))
        .expect("ready");
    h.drain();
    let post = h.last_send();
    let asked = json!({"jsonrpc": "2.0", "id": body(&post)["id"], "result": {
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": {
            "message": "Your name?",
            "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}}});
    h.answer(
        &post,
        200,
        &[("content-type", "text/event-stream")],
        &format!("id: 1\ndata: {asked}\n\n"),
    );
    let question = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Question { question, .. } => Some(*question),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{:?}", h.events));
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::CallCompleted { .. })),
        "{:?}",
        h.events
    );
    let answer = FormAnswer::Submitted(BTreeMap::from([(
        "name".to_owned(),
        vec!["Ada".to_owned()],
    )]));
    h.transport.answer_elicitation(h.now, question, answer);
    h.drain();
    let retry = h.last_send();
    assert_ne!(retry.exchange, post.exchange);
    assert_eq!(body(&retry)["method"], "tools/call");
    assert_eq!(
        body(&retry)["params"]["inputResponses"]["who"]["content"],
        json!({"name": "Ada"})
    );
    h.result(
        &retry,
        json!({"resultType": "complete", "content": [{"type": "text", "text": "hi Ada"}]}),
    );
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::CallCompleted { call: c, result: Ok(_) } if *c == call)),
        "{:?}",
        h.events
    );
}
