//! A stdio session against a peer that floods or answers badly, with a fake
//! clock: rho's own log stays quiet under a flood, and an answer rho cannot
//! read fails its request at once, with the reason.

use std::time::Duration;

use rho_proto_core::session::{Event, SessionOptions, SessionState};
use rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION;
use serde_json::json;

mod common;
use common::Capture;
use common::Stdio as Peer;

/// What these tests read off the shared harness.
impl Peer {
    fn options() -> SessionOptions {
        let mut options = SessionOptions::stdio("demo");
        // The 2025 handshake, as the scripted server speaks it.
        options.protocol_version = LATEST_PROTOCOL_VERSION.into();
        options.startup_timeout = Duration::from_secs(10);
        options.tool_timeout = Duration::from_secs(120);
        options
    }

    fn start() -> Self {
        Self::new(Self::options())
    }

    fn ready(&mut self) {
        self.say(json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }}));
        self.say(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "t", "inputSchema": {"type": "object"}}
        ]}}));
        assert_eq!(self.session.state(), SessionState::Ready);
    }
}

#[test]
fn a_flood_of_junk_lines_logs_the_first_few_then_one_count() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::start();
        peer.ready();
        let mut junk = Vec::new();
        for i in 0..1000 {
            junk.extend_from_slice(format!("junk line {i}\n").as_bytes());
        }
        peer.say_bytes(&junk);
        peer.session.close(peer.now);
        peer.drain();
    });
    let warnings: Vec<String> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level == tracing::Level::WARN)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(warnings.len(), 6, "five lines and one count: {warnings:#?}");
    assert!(warnings[0].contains("junk line 0"), "{}", warnings[0]);
    assert!(
        warnings[5].contains("995 more lines from server `demo` that were not JSON-RPC"),
        "{}",
        warnings[5]
    );
}

#[test]
fn a_flood_of_server_logs_is_rate_limited_per_window() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::start();
        peer.ready();
        let mut flood = Vec::new();
        for i in 0..5000 {
            let line = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": format!("log {i}")}});
            flood.extend_from_slice(line.to_string().as_bytes());
            flood.push(b'\n');
        }
        peer.say_bytes(&flood);
        // A later window starts with the count of the last one.
        peer.now += Duration::from_secs(11);
        peer.say(json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "after the flood"}}));
    });
    let infos: Vec<String> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level == tracing::Level::INFO)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(infos.len(), 100 + 1 + 1, "{:#?}", &infos[95..]);
    assert_eq!(infos[0], "log 0");
    assert_eq!(infos[99], "log 99");
    assert!(
        infos[100].contains("4,900 more log messages from server `demo`"),
        "{}",
        infos[100]
    );
    assert_eq!(infos[101], "after the flood");
}

#[test]
fn junk_spread_over_windows_is_all_logged_and_never_summarised() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::start();
        peer.ready();
        for i in 0..20 {
            peer.say_bytes(format!("banner {i}\n").as_bytes());
            peer.now += Duration::from_secs(5);
        }
        peer.session.close(peer.now);
        peer.drain();
    });
    let warnings: Vec<String> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level == tracing::Level::WARN)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(warnings.len(), 20, "{warnings:#?}");
    assert!(warnings.iter().all(|w| !w.contains("more lines")));
}

// ----- answers rho cannot read -----

use rho_proto_core::session::{CallError, CallId, CloseReason};

impl Peer {
    fn with_max_line(max_line: usize) -> Self {
        let mut options = Self::options();
        options.max_line = max_line;
        Self::new(options)
    }

    fn call(&mut self) -> CallId {
        let call = self
            .session
            .call_tool(self.now, "t", json!({}))
            .expect("ready");
        self.drain();
        call
    }

    /// The result of `call`, if it completed.
    fn completed(
        &self,
        call: CallId,
    ) -> Option<&Result<rho_proto_core::wire::protocol::CallToolResult, CallError>> {
        self.events.iter().find_map(|e| match e {
            Event::CallCompleted { call: c, result } if *c == call => Some(result),
            _ => None,
        })
    }

    fn failure_of(&self, call: CallId) -> String {
        match self.completed(call) {
            Some(Err(error)) => error.to_string(),
            other => panic!("call {call} should have failed at once: {other:?}"),
        }
    }
}

/// Each kind of unreadable answer to call id 2, and what its failure says.
fn unreadable_answers() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{{\"content\":{}1{}}}}}\n",
        "[".repeat(300),
        "]".repeat(300)
    );
    let mut huge =
        br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""#.to_vec();
    huge.resize(70_000, b'a');
    huge.extend_from_slice(b"\"}]}}\n");
    vec![
        ("over the size cap", huge, "the answer was 70,005 bytes, over the 64 KiB limit (`max_message_bytes`)"),
        ("nesting past the parser limit", deep.into_bytes(), "recursion limit exceeded"),
        ("1e400", b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"n\":1e400}}\n".to_vec(), "number out of range"),
        ("invalid UTF-8", b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"t\":\"\xff\"}}\n".to_vec(), "not valid UTF-8"),
        ("a lone surrogate", b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"t\":\"\\ud800\"}}\n".to_vec(), "hex escape"),
        ("both result and error", b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{},\"error\":{\"code\":1,\"message\":\"x\"}}\n".to_vec(), "both `result` and `error`"),
        ("an id of the wrong type", b"{\"jsonrpc\":\"2.0\",\"id\":2.5,\"result\":{\"content\":[]}}\n".to_vec(), "id 2.5 is not an integer"),
    ]
}

#[test]
fn each_unreadable_answer_fails_its_call_at_once_with_the_reason() {
    for (what, bytes, says) in unreadable_answers() {
        let mut peer = Peer::with_max_line(64 * 1024);
        peer.ready();
        let call = peer.call();
        assert_eq!(call.wire_id(), 2);
        // Split like a pipe would.
        let (a, b) = bytes.split_at(bytes.len() / 2);
        peer.say_bytes(a);
        peer.say_bytes(b);
        let failure = peer.failure_of(call);
        assert!(
            failure.contains("server `demo`: its answer could not be read")
                && failure.contains(says),
            "{what}: {failure}"
        );
        assert_eq!(
            peer.session.state(),
            SessionState::Ready,
            "{what}: the session goes on"
        );
    }
}

#[test]
fn an_unreadable_answer_with_a_readable_id_fails_only_that_call() {
    let mut peer = Peer::start();
    peer.ready();
    let first = peer.call();
    let second = peer.call();
    peer.say_bytes(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"n\":1e400}}}}\n",
            second.wire_id()
        )
        .as_bytes(),
    );
    assert!(peer.failure_of(second).contains("number out of range"));
    assert!(
        peer.completed(first).is_none(),
        "the other call still waits"
    );
}

#[test]
fn an_unreadable_answer_that_cannot_be_tied_is_named_by_the_next_failure() {
    let mut peer = Peer::start();
    peer.ready();
    let first = peer.call();
    let second = peer.call();
    // No readable id, and two calls in flight: no way to know whose it is.
    peer.say_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":true,\"result\":{}}\n");
    assert!(peer.completed(first).is_none() && peer.completed(second).is_none());
    peer.advance(Duration::from_secs(121));
    let failure = peer.failure_of(first);
    assert!(
        failure.contains("no answer could be read within 120 s, so the call was cancelled")
            && failure.contains("before that, it sent an answer rho could not read")
            && failure.contains("id is neither a number nor a string"),
        "{failure}"
    );
}

/// A JSON object broken off before its id (or garbled) is not JSON, so
/// nothing in it names a request: it is an answer all the same, and with
/// one request in flight it is that request's.
#[test]
fn an_object_broken_off_before_its_id_fails_the_only_request_at_once() {
    let mut peer = Peer::start();
    peer.ready();
    let call = peer.call();
    peer.say_bytes(b"{\"jsonrpc\":\"2.0\",\"cut short\n");
    let failure = peer.failure_of(call);
    assert!(
        failure.contains("its answer could not be read") && failure.contains("not JSON"),
        "{failure}"
    );
    assert_eq!(peer.session.state(), SessionState::Ready);
}

#[test]
fn junk_that_is_not_an_answer_fails_nothing() {
    let mut peer = Peer::start();
    // Banners and JSON logs on stdout during the handshake are common.
    peer.say_bytes(b"Starting server...\n{\"level\":\"info\",\"msg\":\"hi\"}\n");
    peer.ready();
    let call = peer.call();
    peer.say_bytes(b"<html>not json</html>\n");
    assert!(peer.completed(call).is_none());
    let mut huge = b"log: ".to_vec();
    huge.resize(20 << 20, b'x');
    huge.push(b'\n');
    peer.say_bytes(&huge);
    assert!(
        peer.completed(call).is_none(),
        "an oversized line that is not an object"
    );
}

#[test]
fn an_initialize_answer_over_the_cap_fails_the_handshake_at_once() {
    let mut peer = Peer::with_max_line(64 * 1024);
    let mut answer = br#"{"result":{"protocolVersion":"2025-11-25","instructions":""#.to_vec();
    answer.resize(100_000, b'i');
    answer.extend_from_slice(b"\"},\"jsonrpc\":\"2.0\",\"id\":0}\n");
    peer.say_bytes(&answer);
    match peer.closed() {
        Some(reason @ CloseReason::Handshake(_)) => {
            let text = reason.to_string();
            assert!(
                text.contains("its answer to initialize could not be read: the answer was 100,026 bytes, over the 64 KiB limit"),
                "{text}"
            );
        }
        other => panic!("the handshake must fail at once: {other:?}"),
    }
}

/// The Python SDK 1.x answers a request it was told to cancel anyway; the
/// specification lets it. That late answer is expected: no warning, no
/// protocol error, and a call made after it is unaffected.
#[test]
fn a_late_answer_to_a_cancelled_call_is_dropped_without_a_warning() {
    let capture = Capture::default();
    let peer = tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::start();
        peer.ready();
        let call = peer
            .session
            .call_tool(peer.now, "t", json!({}))
            .expect("ready");
        peer.drain();
        peer.session.cancel_call(peer.now, call);
        peer.drain();
        // Request 2 was the call.
        peer.say(json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}));
        peer
    });
    let loud: Vec<_> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level <= tracing::Level::INFO)
        .collect();
    assert!(loud.is_empty(), "{loud:?}");
    assert!(
        !peer
            .events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_))),
        "{:?}",
        peer.events
    );
}

/// A server that writes more than `max_message_bytes` without a newline
/// (and may never write one) fails the call it answers as soon as the
/// line passes the cap, naming the key; the line's end, when it comes,
/// fails nothing more.
#[test]
fn a_line_past_the_cap_without_its_newline_fails_its_call_at_once() {
    let mut peer = Peer::with_max_line(64 * 1024);
    peer.ready();
    let call = peer
        .session
        .call_tool(peer.now, "t", json!({}))
        .expect("ready");
    peer.drain();
    let mut answer =
        br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""#.to_vec();
    answer.resize(70_000, b'a');
    peer.say_bytes(&answer);
    let failure = peer.failure_of(call);
    assert!(
        failure.contains("`max_message_bytes`") && failure.contains("64 KiB"),
        "{failure}"
    );
    // The rest of the line and its end: nothing more fails, and the next
    // call is answered.
    peer.say_bytes(&[b'a'; 10_000]);
    peer.say_bytes(b"\"}]}}\n");
    let next = peer
        .session
        .call_tool(peer.now, "t", json!({}))
        .expect("still ready");
    peer.drain();
    peer.say(
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "ok"}]}}),
    );
    assert!(
        matches!(peer.completed(next), Some(Ok(r)) if r.text() == "ok"),
        "{:?}",
        peer.events
    );
    let completions = peer
        .events
        .iter()
        .filter(|e| matches!(e, Event::CallCompleted { .. }))
        .count();
    assert_eq!(completions, 2, "{:?}", peer.events);
}
