//! `subscriptions/listen` through the session (2026-07-28 era): opened
//! once ready for the list changes the server declared, changes tagged
//! with its id applied as `list_changed` is, a quiet re-listing after each
//! acknowledgement, and a stream that ends re-issued once under a new id.
//! A scripted stdio server and a fake clock.

use std::time::Duration;

use rho_proto_core::session::{Event, SessionOptions};
use rho_proto_core::wire::jsonrpc::{ClientRequestId, Message};
use serde_json::{Value, json};

mod common;
use common::{Capture, Stdio};

const MODERN: &str = "2026-07-28";
const SUB: &str = "io.modelcontextprotocol/subscriptionId";

/// What these tests read off the shared harness.
impl Stdio {
    /// Ready in the 2026 era with `capabilities`, tools fresh for ten
    /// minutes.
    fn ready(capabilities: Value) -> Self {
        let mut o = SessionOptions::stdio("demo");
        o.request_timeout = Duration::from_secs(3);
        let mut h = Self::new(o);
        h.drive_answering(&[
            (
                "server/discover",
                json!({"resultType": "complete", "supportedVersions": [MODERN],
                       "capabilities": capabilities, "ttlMs": 0, "cacheScope": "public"}),
            ),
            ("tools/list", tools(&["a"])),
        ]);
        assert!(h.events.iter().any(|e| matches!(e, Event::Ready(_))));
        h
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.say(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Every request sent with `method`: id and params.
    fn requests(&self, method: &str) -> Vec<(u64, Value)> {
        self.sent
            .iter()
            .filter_map(|m| match m {
                Message::Request {
                    id,
                    method: m,
                    params,
                } if m == method => Some((
                    id.to_string().parse().expect("numeric id"),
                    params.clone().unwrap_or(Value::Null),
                )),
                _ => None,
            })
            .collect()
    }

    fn listen(&self) -> Vec<u64> {
        self.requests("subscriptions/listen")
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    fn acknowledge(&mut self, id: u64) {
        self.notify(
            "notifications/subscriptions/acknowledged",
            json!({"_meta": {SUB: id}, "notifications": {"toolsListChanged": true}}),
        );
    }

    fn changed(&mut self, id: Value) {
        self.notify(
            "notifications/tools/list_changed",
            json!({"_meta": {SUB: id}}),
        );
    }

    /// Acknowledges `id` and answers the re-listing that follows with the
    /// unchanged list.
    fn acknowledge_and_relist(&mut self, id: u64) {
        let before = self.requests("tools/list").len();
        self.acknowledge(id);
        let lists = self.requests("tools/list");
        assert_eq!(lists.len(), before + 1, "a re-listing: {:?}", self.sent);
        self.reply(lists[before].0, tools(&["a"]));
    }

    fn tools_changed(&self) -> Vec<Vec<String>> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ToolsChanged(tools) => Some(tools.iter().map(|t| t.name.clone()).collect()),
                _ => None,
            })
            .collect()
    }
}

fn tools(names: &[&str]) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    json!({"resultType": "complete", "tools": tools, "ttlMs": 600_000, "cacheScope": "public"})
}

fn list_changing() -> Value {
    json!({"tools": {"listChanged": true}})
}

#[test]
fn once_ready_the_session_listens_for_tool_list_changes_with_its_meta() {
    let h = Stdio::ready(list_changing());
    let listen = h.requests("subscriptions/listen");
    let [(_, params)] = listen.as_slice() else {
        panic!("{:?}", h.sent)
    };
    assert_eq!(params["notifications"], json!({"toolsListChanged": true}));
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
}

/// Only the lists the server declared changeable are asked for; a server
/// that declares none changeable (context7: `listChanged: false` for
/// tools, prompts and resources) is sent no listen request at all.
#[test]
fn only_lists_declared_changeable_are_listened_for() {
    let ready = |capabilities: Value| {
        let mut h = Stdio::new(SessionOptions::stdio("demo"));
        let list = |key: &str| {
            let mut page =
                json!({"resultType": "complete", "ttlMs": 600_000, "cacheScope": "public"});
            page[key] = json!([]);
            page
        };
        h.drive_answering(&[
            (
                "server/discover",
                json!({"resultType": "complete", "supportedVersions": [MODERN],
                       "capabilities": capabilities, "ttlMs": 0, "cacheScope": "public"}),
            ),
            ("tools/list", tools(&["a"])),
            ("prompts/list", list("prompts")),
            ("resources/list", list("resources")),
            ("resources/templates/list", list("resourceTemplates")),
        ]);
        assert!(
            h.events.iter().any(|e| matches!(e, Event::Ready(_))),
            "{:?}",
            h.events
        );
        h
    };
    let h = ready(json!({
        "tools": {"listChanged": false},
        "prompts": {"listChanged": false},
        "resources": {"listChanged": false}
    }));
    assert!(h.listen().is_empty(), "{:?}", h.sent);
    let h = ready(json!({"tools": {}, "prompts": {}, "resources": {"listChanged": true}}));
    let listen = h.requests("subscriptions/listen");
    let [(_, params)] = listen.as_slice() else {
        panic!("{:?}", h.sent)
    };
    assert_eq!(
        params["notifications"],
        json!({"resourcesListChanged": true}),
        "{params}"
    );
}

/// Any error answer to the listen request (context7's -32603
/// "Subscription limit reached") is final and ordinary: nothing is sent
/// again and no peer error is recorded.
#[test]
fn a_refused_listen_is_final_and_no_fault() {
    let mut h = Stdio::ready(list_changing());
    let [id] = h.listen()[..] else {
        panic!("{:?}", h.sent)
    };
    h.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "Subscription limit reached"}}));
    assert_eq!(h.listen(), [id], "not sent again");
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_))),
        "{:?}",
        h.events
    );
}

#[test]
fn no_listen_without_list_changed_or_in_the_2025_era() {
    let h = Stdio::ready(json!({"tools": {}}));
    assert!(h.listen().is_empty(), "{:?}", h.sent);

    let mut o = SessionOptions::stdio("old");
    o.protocol_version = "2025-11-25".into();
    let mut h = Stdio::new(o);
    h.reply(
        0,
        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": true}},
               "serverInfo": {"name": "s", "version": "1"}}),
    );
    h.reply(1, json!({"tools": []}));
    assert!(h.events.iter().any(|e| matches!(e, Event::Ready(_))));
    assert!(h.listen().is_empty(), "{:?}", h.sent);
}

#[test]
fn a_tagged_change_is_applied_as_list_changed_and_others_are_not() {
    let mut h = Stdio::ready(list_changing());
    let id = h.listen()[0];
    // Before the acknowledgement: ignored.
    h.changed(json!(id));
    assert_eq!(h.requests("tools/list").len(), 1, "{:?}", h.sent);
    // The acknowledgement lists again; the list is unchanged, so quietly.
    h.acknowledge_and_relist(id);
    assert!(h.tools_changed().is_empty(), "{:?}", h.events);
    // Another subscription's change: ignored.
    h.changed(json!(id + 100));
    assert_eq!(h.requests("tools/list").len(), 2, "{:?}", h.sent);
    h.changed(json!(id));
    let lists = h.requests("tools/list");
    assert_eq!(lists.len(), 3, "{:?}", h.sent);
    h.reply(lists[2].0, tools(&["a", "b"]));
    assert_eq!(h.tools_changed(), [vec!["a".to_owned(), "b".to_owned()]]);
}

#[test]
fn the_listen_request_has_no_deadline() {
    let mut h = Stdio::ready(list_changing());
    let id = h.listen()[0];
    h.acknowledge_and_relist(id);
    assert!(h.session.poll_timeout().is_none(), "nothing to time out");
    h.advance(Duration::from_secs(3600));
    assert_eq!(h.listen(), [id]);
    h.changed(json!(id));
    assert_eq!(h.requests("tools/list").len(), 3);
}

#[test]
fn an_ended_stream_is_reissued_once_and_lists_again_when_acknowledged() {
    let mut h = Stdio::ready(list_changing());
    let first = h.listen()[0];
    h.acknowledge_and_relist(first);
    // The server ends the subscription: opened again under a new id.
    h.reply(
        first,
        json!({"resultType": "complete", "_meta": {SUB: first}}),
    );
    let listens = h.listen();
    assert_eq!(listens.len(), 2, "{:?}", h.sent);
    let second = listens[1];
    assert_ne!(second, first);
    // The old id no longer counts; the new one, acknowledged, lists again.
    h.changed(json!(first));
    assert_eq!(h.requests("tools/list").len(), 2);
    h.acknowledge_and_relist(second);
    // The transport loses the second stream: no third.
    h.session.handle_request_failed(
        h.now,
        ClientRequestId::from_wire(&rho_proto_core::wire::jsonrpc::RequestId::Number(
            second as i64,
        ))
        .expect("our id"),
        "the stream broke".into(),
    );
    h.drain();
    assert_eq!(h.listen().len(), 2, "{:?}", h.sent);
}

/// Servers that declare list changes without offering the stream (the
/// Python SDK 2.x, fastmcp) answer -32601: an ordinary answer, noted at
/// debug level only, and lists still go stale by their `ttlMs`.
#[test]
fn a_listen_the_server_does_not_know_is_noted_quietly_and_not_sent_again() {
    let capture = Capture::default();
    let mut h = tracing::subscriber::with_default(capture.clone(), || {
        let mut h = Stdio::ready(list_changing());
        let id = h.listen()[0];
        h.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}));
        h
    });
    let loud: Vec<_> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level <= tracing::Level::INFO)
        .collect();
    assert!(loud.is_empty(), "{loud:?}");
    assert_eq!(h.listen().len(), 1, "{:?}", h.sent);
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_))),
        "{:?}",
        h.events
    );
    // The list is read again by the next use past its `ttlMs`, as
    // without a stream.
    h.now += Duration::from_secs(601);
    let before = h.requests("tools/list").len();
    let _ = h.session.call_tool(h.now, "a", json!({}));
    h.drain();
    assert_eq!(h.requests("tools/list").len(), before + 1, "{:?}", h.sent);
}

#[test]
fn a_refused_listen_is_not_sent_again() {
    let mut h = Stdio::ready(list_changing());
    let id = h.listen()[0];
    h.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}));
    assert_eq!(h.listen().len(), 1, "{:?}", h.sent);
    assert!(h.session.poll_timeout().is_none());
}

#[test]
fn a_server_cancelling_the_listen_request_ends_it_and_it_is_reopened_once() {
    let mut h = Stdio::ready(list_changing());
    let first = h.listen()[0];
    h.acknowledge_and_relist(first);
    h.notify("notifications/cancelled", json!({"requestId": first}));
    let listens = h.listen();
    assert_eq!(listens.len(), 2, "{:?}", h.sent);
    assert_ne!(listens[1], first);
    // A late answer to the cancelled request is not the new stream's end.
    h.reply(first, json!({"resultType": "complete"}));
    assert_eq!(h.listen().len(), 2);
    h.notify("notifications/cancelled", json!({"requestId": listens[1]}));
    assert_eq!(h.listen().len(), 2, "no third: {:?}", h.sent);
}

/// A listen request refused for its version (-32022) goes again under a
/// new id, still without a deadline (it is not dropped at the first
/// wakeup), and the subscription follows the new id.
#[test]
fn a_listen_sent_again_for_another_version_keeps_no_deadline_and_follows_its_new_id() {
    let mut h = Stdio::ready(list_changing());
    let first = h.listen()[0];
    // Long after the request budget of an ordinary request.
    h.advance(Duration::from_secs(60));
    h.say(json!({"jsonrpc": "2.0", "id": first, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": [MODERN], "requested": MODERN}}}));
    let listens = h.listen();
    let [_, second] = listens.as_slice() else {
        panic!("sent again once: {:?}", h.sent)
    };
    let second = *second;
    assert_ne!(second, first, "a new id");
    assert!(
        h.session.poll_timeout().is_none(),
        "nothing to time out: {:?}",
        h.session.timeout_reason()
    );
    h.advance(Duration::from_secs(3600));
    // The new id is the subscription's: its acknowledgement lists again,
    // its change is applied, and the stream's end is still its own.
    h.acknowledge_and_relist(second);
    h.changed(json!(second));
    assert_eq!(h.requests("tools/list").len(), 3, "{:?}", h.sent);
    h.reply(second, json!({"resultType": "complete"}));
    assert_eq!(h.listen().len(), 3, "re-opened once it ended: {:?}", h.sent);
}
