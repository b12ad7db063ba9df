//! Resource subscriptions through the session, both eras: 2025
//! `resources/subscribe` / `unsubscribe` and untagged
//! `notifications/resources/updated`; 2026 a `subscriptions/listen` of its
//! own carrying `resourceSubscriptions`, replaced make-before-break. The
//! bound, refusals and the missing capability. A scripted stdio server and
//! a fake clock.

use std::time::Duration;

use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::resource_subscriptions::{MAX_PER_SERVER, SubscribeParams, WatchEnd};
use rho_proto_core::session::{ApiMisuse, CallError, CallId, Event, SessionOptions, SessionState};
use rho_proto_core::wire::jsonrpc::Message;
use serde_json::{Value, json};

mod common;
use common::Stdio as Harness;

const MODERN: &str = "2026-07-28";
const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn subscribe(uri: &str) -> FeatureRequest {
    FeatureRequest::SubscribeResource(SubscribeParams { uri: uri.into() })
}

fn unsubscribe(uri: &str) -> FeatureRequest {
    FeatureRequest::UnsubscribeResource(SubscribeParams { uri: uri.into() })
}

impl Harness {
    fn options(version: &str) -> SessionOptions {
        let mut o = SessionOptions::stdio("demo");
        o.protocol_version = version.into();
        o.request_timeout = Duration::from_secs(3);
        o
    }

    /// Ready in the 2025 era, declaring `resources` as given.
    fn legacy(resources: Value) -> Self {
        let mut h = Self::new(Self::options("2025-11-25"));
        h.drive_answering(&[
            (
                "initialize",
                json!({"protocolVersion": "2025-11-25",
                       "capabilities": {"resources": resources},
                       "serverInfo": {"name": "scripted", "version": "1"}}),
            ),
            ("resources/list", json!({"resources": []})),
            ("resources/templates/list", json!({"resourceTemplates": []})),
        ]);
        assert_eq!(h.session.state(), SessionState::Ready);
        h.clear();
        h
    }

    /// Ready in the 2026 era, declaring `resources` as given (and no list
    /// changes, so the only listen requests are the resource ones).
    fn modern(resources: Value) -> Self {
        let mut h = Self::new(Self::options(MODERN));
        let cached = |key: &str| {
            let mut page =
                json!({"resultType": "complete", "ttlMs": 600_000, "cacheScope": "public"});
            page[key] = json!([]);
            page
        };
        h.drive_answering(&[
            (
                "server/discover",
                json!({"resultType": "complete", "supportedVersions": [MODERN],
                       "capabilities": {"resources": resources}, "ttlMs": 0,
                       "cacheScope": "public"}),
            ),
            ("resources/list", cached("resources")),
            ("resources/templates/list", cached("resourceTemplates")),
        ]);
        assert_eq!(h.session.state(), SessionState::Ready);
        h.clear();
        h
    }

    fn send(&mut self, request: &FeatureRequest) -> Result<CallId, ApiMisuse> {
        let call = self.session.request(self.now, request);
        self.drain();
        call
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

    /// The request ids rho cancelled.
    fn cancelled(&self) -> Vec<u64> {
        self.sent
            .iter()
            .filter_map(|m| match m {
                Message::Notification { method, params } if method == "notifications/cancelled" => {
                    params.as_ref()?.get("requestId")?.as_u64()
                }
                _ => None,
            })
            .collect()
    }

    fn completed(&self, call: CallId) -> Option<&Result<Value, CallError>> {
        self.events.iter().find_map(|e| match e {
            Event::RequestCompleted { call: c, result } if *c == call => Some(result),
            _ => None,
        })
    }

    fn updates(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ResourceUpdated { uri } => Some(uri.clone()),
                _ => None,
            })
            .collect()
    }

    /// The URIs of each [`Event::ResourceWatchEnded`].
    fn watches_ended(&self) -> Vec<Vec<String>> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::ResourceWatchEnded { uris, .. } => Some(uris.clone()),
                _ => None,
            })
            .collect()
    }

    fn updated(&mut self, uri: &str, tag: Option<u64>) {
        let params = match tag {
            Some(tag) => json!({"uri": uri, "_meta": {SUB: tag}}),
            None => json!({"uri": uri}),
        };
        self.notify("notifications/resources/updated", params);
    }

    fn acknowledge(&mut self, listen: u64, uris: &[&str]) {
        self.notify(
            "notifications/subscriptions/acknowledged",
            json!({"_meta": {SUB: listen}, "notifications": {"resourceSubscriptions": uris}}),
        );
    }
}

fn subscribable() -> Value {
    json!({"subscribe": true})
}

// ----- 2025 -----

#[test]
fn a_2025_subscribe_is_a_request_and_its_updates_reach_the_host() {
    let mut h = Harness::legacy(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let [(id, ref params)] = h.requests("resources/subscribe")[..] else {
        panic!("{:?}", h.sent)
    };
    assert_eq!(params, &json!({"uri": "demo://a"}));
    // An update before the server agreed is not passed on.
    h.updated("demo://a", None);
    assert!(h.updates().is_empty());
    h.reply(id, json!({}));
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    h.updated("demo://a", None);
    h.updated("demo://other", None);
    h.updated("demo://a", Some(99));
    assert_eq!(h.updates(), vec!["demo://a"]);
}

#[test]
fn closing_a_2025_session_tells_the_server_each_subscription_ends() {
    let mut h = Harness::legacy(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (id, _) = h.requests("resources/subscribe")[0];
    h.reply(id, json!({}));
    h.session.close(h.now);
    h.drain();
    let [(_, ref params)] = h.requests("resources/unsubscribe")[..] else {
        panic!("{:?}", h.sent)
    };
    assert_eq!(params, &json!({"uri": "demo://a"}));
}

#[test]
fn subscribing_again_to_a_held_resource_asks_nothing() {
    let mut h = Harness::legacy(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (id, _) = h.requests("resources/subscribe")[0];
    h.reply(id, json!({}));
    let again = h.send(&subscribe("demo://a")).expect("accepted");
    assert_eq!(h.completed(again), Some(&Ok(json!({}))));
    assert_eq!(h.requests("resources/subscribe").len(), 1);
}

#[test]
fn a_refused_2025_subscribe_fails_and_holds_nothing() {
    let mut h = Harness::legacy(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let (id, _) = h.requests("resources/subscribe")[0];
    h.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "no such resource"}}));
    assert!(
        matches!(h.completed(call), Some(Err(CallError::Rpc { .. }))),
        "{:?}",
        h.events
    );
    h.updated("demo://a", None);
    assert!(h.updates().is_empty());
}

#[test]
fn a_server_without_the_capability_is_not_asked_and_the_error_names_it() {
    for mut h in [
        Harness::legacy(json!({})),
        Harness::modern(json!({"listChanged": false})),
    ] {
        let error = h.send(&subscribe("demo://a")).expect_err("refused");
        assert!(
            matches!(
                error,
                ApiMisuse::NotOffered {
                    capability: "resources.subscribe",
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "server `demo` does not offer resources.subscribe"
        );
        assert!(h.sent.is_empty(), "{:?}", h.sent);
    }
}

#[test]
fn the_bound_refuses_one_subscription_too_many_before_sending_it() {
    let mut h = Harness::legacy(subscribable());
    for n in 0..MAX_PER_SERVER {
        let _ = h
            .send(&subscribe(&format!("demo://{n}")))
            .expect("accepted");
    }
    let error = h.send(&subscribe("demo://one-more")).expect_err("bound");
    assert!(
        matches!(error, ApiMisuse::SubscriptionLimit { limit, .. } if limit == MAX_PER_SERVER),
        "{error:?}"
    );
    assert!(error.to_string().contains("server `demo`"), "{error}");
    assert_eq!(h.requests("resources/subscribe").len(), MAX_PER_SERVER);
    // Answered, they are held; one released makes room again.
    for (id, _) in h.requests("resources/subscribe") {
        h.reply(id, json!({}));
    }
    assert!(h.send(&subscribe("demo://one-more")).is_err());
    let _ = h.send(&unsubscribe("demo://0")).expect("accepted");
    assert!(h.send(&subscribe("demo://one-more")).is_ok());
}

#[test]
fn a_2025_unsubscribe_stops_updates_at_once_and_tells_the_server() {
    let mut h = Harness::legacy(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (id, _) = h.requests("resources/subscribe")[0];
    h.reply(id, json!({}));
    let call = h.send(&unsubscribe("demo://a")).expect("accepted");
    let [(id, ref params)] = h.requests("resources/unsubscribe")[..] else {
        panic!("{:?}", h.sent)
    };
    assert_eq!(params, &json!({"uri": "demo://a"}));
    h.updated("demo://a", None);
    assert!(h.updates().is_empty());
    h.reply(id, json!({}));
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    // Unsubscribing from what is not held asks nothing.
    let again = h.send(&unsubscribe("demo://a")).expect("accepted");
    assert_eq!(h.completed(again), Some(&Ok(json!({}))));
    assert_eq!(h.requests("resources/unsubscribe").len(), 1);
}

// ----- 2026 -----

#[test]
fn a_2026_subscribe_is_a_listen_request_answered_by_its_acknowledgement() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let [(listen, ref params)] = h.requests("subscriptions/listen")[..] else {
        panic!("{:?}", h.sent)
    };
    assert_eq!(
        params["notifications"],
        json!({"resourceSubscriptions": ["demo://a"]})
    );
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN
    );
    assert!(h.requests("resources/subscribe").is_empty());
    assert_eq!(h.completed(call), None, "waits for the acknowledgement");
    h.acknowledge(listen, &["demo://a"]);
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    h.updated("demo://a", Some(listen));
    // Untagged, or tagged with another stream: not this subscription's.
    h.updated("demo://a", None);
    h.updated("demo://a", Some(listen + 100));
    h.updated("demo://b", Some(listen));
    assert_eq!(h.updates(), vec!["demo://a"]);
    // Open for good now: no deadline fails it.
    h.advance(Duration::from_secs(3600));
    h.updated("demo://a", Some(listen));
    assert_eq!(h.updates().len(), 2);
}

#[test]
fn a_uri_left_out_of_the_acknowledgement_is_not_agreed() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let (listen, _) = h.requests("subscriptions/listen")[0];
    h.acknowledge(listen, &[]);
    let Some(Err(error @ CallError::SubscriptionNotAgreed { uri, .. })) = h.completed(call) else {
        panic!("{:?}", h.events)
    };
    assert_eq!(uri, "demo://a");
    assert!(error.to_string().contains("server `demo`"), "{error}");
    h.updated("demo://a", Some(listen));
    assert!(h.updates().is_empty());
}

#[test]
fn a_refused_2026_listen_fails_the_subscribe_with_the_servers_error() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let (listen, _) = h.requests("subscriptions/listen")[0];
    h.say(json!({"jsonrpc": "2.0", "id": listen, "error": {"code": -32603, "message": "Subscription limit reached"}}));
    assert!(
        matches!(h.completed(call), Some(Err(CallError::Rpc { .. }))),
        "{:?}",
        h.events
    );
}

#[test]
fn an_unacknowledged_listen_times_out_within_the_request_budget() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let waited = h.step();
    assert_eq!(waited, Duration::from_secs(3));
    assert!(
        matches!(h.completed(call), Some(Err(CallError::Timeout { .. }))),
        "{:?}",
        h.events
    );
}

#[test]
fn a_second_uri_replaces_the_stream_only_once_the_new_one_is_acknowledged() {
    let mut h = Harness::modern(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (first, _) = h.requests("subscriptions/listen")[0];
    h.acknowledge(first, &["demo://a"]);
    let call = h.send(&subscribe("demo://b")).expect("accepted");
    let (second, params) = h.requests("subscriptions/listen")[1].clone();
    assert_eq!(
        params["notifications"]["resourceSubscriptions"],
        json!(["demo://a", "demo://b"])
    );
    assert!(
        h.cancelled().is_empty(),
        "the old stream stays until the ack"
    );
    h.updated("demo://a", Some(first));
    assert_eq!(h.updates(), vec!["demo://a"]);
    h.acknowledge(second, &["demo://a", "demo://b"]);
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    assert_eq!(h.cancelled(), vec![first]);
    h.updated("demo://a", Some(first));
    h.updated("demo://b", Some(second));
    assert_eq!(h.updates(), vec!["demo://a", "demo://b"]);
}

#[test]
fn unsubscribing_the_last_2026_resource_cancels_the_stream_and_ends_at_once() {
    let mut h = Harness::modern(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (listen, _) = h.requests("subscriptions/listen")[0];
    h.acknowledge(listen, &["demo://a"]);
    let call = h.send(&unsubscribe("demo://a")).expect("accepted");
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    assert_eq!(h.cancelled(), vec![listen]);
    assert_eq!(h.requests("subscriptions/listen").len(), 1);
    h.updated("demo://a", Some(listen));
    assert!(h.updates().is_empty());
}

#[test]
fn unsubscribing_one_of_two_2026_resources_reopens_without_it() {
    let mut h = Harness::modern(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (first, _) = h.requests("subscriptions/listen")[0];
    h.acknowledge(first, &["demo://a"]);
    let _ = h.send(&subscribe("demo://b")).expect("accepted");
    let (second, _) = h.requests("subscriptions/listen")[1];
    h.acknowledge(second, &["demo://a", "demo://b"]);
    let call = h.send(&unsubscribe("demo://a")).expect("accepted");
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    let (third, params) = h.requests("subscriptions/listen")[2].clone();
    assert_eq!(
        params["notifications"]["resourceSubscriptions"],
        json!(["demo://b"])
    );
    // Released at once, even on the stream still open.
    h.updated("demo://a", Some(second));
    assert!(h.updates().is_empty());
    h.acknowledge(third, &["demo://b"]);
    h.updated("demo://b", Some(third));
    assert_eq!(h.updates(), vec!["demo://b"]);
}

#[test]
fn a_cancelled_2026_subscribe_ends_at_once() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    h.session.cancel_call(h.now, call);
    h.drain();
    assert!(
        matches!(h.completed(call), Some(Err(CallError::Cancelled { .. }))),
        "{:?}",
        h.events
    );
}

#[test]
fn a_2026_listen_sent_again_for_another_version_is_acknowledged_under_its_new_id() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    let (first, _) = h.requests("subscriptions/listen")[0];
    h.say(json!({"jsonrpc": "2.0", "id": first, "error": {
        "code": -32022, "message": "unsupported version",
        "data": {"supported": [MODERN], "requested": MODERN}}}));
    let listens = h.requests("subscriptions/listen");
    assert_eq!(listens.len(), 2, "{:?}", h.sent);
    let (second, ref params) = listens[1];
    assert_eq!(
        params["notifications"]["resourceSubscriptions"],
        json!(["demo://a"])
    );
    h.acknowledge(second, &["demo://a"]);
    assert_eq!(h.completed(call), Some(&Ok(json!({}))));
    h.updated("demo://a", Some(second));
    assert_eq!(h.updates(), vec!["demo://a"]);
}

#[test]
fn a_2026_subscribe_waiting_when_the_session_closes_ends_with_it() {
    let mut h = Harness::modern(subscribable());
    let call = h.send(&subscribe("demo://a")).expect("accepted");
    h.session.close(h.now);
    h.drain();
    assert!(
        matches!(
            h.completed(call),
            Some(Err(CallError::SessionClosed { .. }))
        ),
        "{:?}",
        h.events
    );
    assert!(matches!(h.events.last(), Some(Event::Closed(_))));
}

#[test]
fn an_acknowledged_2026_stream_the_server_ends_is_opened_again_once() {
    let mut h = Harness::modern(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (first, _) = h.requests("subscriptions/listen")[0];
    h.acknowledge(first, &["demo://a"]);
    // The server ends it gracefully: rho opens it again with what it holds.
    h.reply(first, json!({"resultType": "complete"}));
    let listens = h.requests("subscriptions/listen");
    assert_eq!(listens.len(), 2, "{:?}", h.sent);
    let (second, ref params) = listens[1];
    assert_eq!(
        params["notifications"]["resourceSubscriptions"],
        json!(["demo://a"])
    );
    // Until it is acknowledged, nothing passes, untagged or not.
    h.updated("demo://a", None);
    h.updated("demo://a", Some(first));
    assert!(h.updates().is_empty());
    h.acknowledge(second, &["demo://a"]);
    h.updated("demo://a", Some(second));
    assert_eq!(h.updates(), vec!["demo://a"]);
    // A second end is final: the subscriptions are dropped, and the host
    // is told which.
    assert!(h.watches_ended().is_empty());
    h.reply(second, json!({"resultType": "complete"}));
    assert_eq!(h.requests("subscriptions/listen").len(), 2);
    assert_eq!(h.watches_ended(), vec![vec!["demo://a".to_owned()]]);
    h.updated("demo://a", Some(second));
    assert_eq!(h.updates().len(), 1);
    // And subscribing again starts over.
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    assert_eq!(h.requests("subscriptions/listen").len(), 3);
}

#[test]
fn a_refused_reopening_of_an_acknowledged_2026_stream_tells_the_host_its_watches_ended() {
    let mut h = Harness::modern(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let _ = h.send(&subscribe("demo://b")).expect("accepted");
    let listens = h.requests("subscriptions/listen");
    let (last, _) = *listens.last().expect("a listen");
    h.acknowledge(last, &["demo://a", "demo://b"]);
    // The server refuses the stream once acknowledged (an error answer):
    // not opened again, and both watches end at once.
    h.say(json!({"jsonrpc": "2.0", "id": last, "error": {"code": -32603, "message": "Subscription limit reached"}}));
    assert_eq!(
        h.requests("subscriptions/listen").len(),
        listens.len(),
        "a refusal is not retried"
    );
    assert_eq!(
        h.watches_ended(),
        vec![vec!["demo://a".to_owned(), "demo://b".to_owned()]]
    );
    let reason = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::ResourceWatchEnded {
                end: WatchEnd::StreamEnded { reason },
                ..
            } => Some(reason.clone()),
            _ => None,
        })
        .expect("an end");
    assert!(reason.contains("Subscription limit reached"), "{reason}");
}

#[test]
fn a_2026_stream_that_cannot_be_opened_again_tells_the_host_its_watches_ended() {
    let mut h = Harness::modern(subscribable());
    let _ = h.send(&subscribe("demo://a")).expect("accepted");
    let (first, _) = h.requests("subscriptions/listen")[0];
    h.acknowledge(first, &["demo://a"]);
    // The server ends it; the stream opened again is refused.
    h.reply(first, json!({"resultType": "complete"}));
    let (second, _) = h.requests("subscriptions/listen")[1];
    assert!(h.watches_ended().is_empty(), "opened again first");
    h.say(json!({"jsonrpc": "2.0", "id": second, "error": {"code": -32603, "message": "Subscription limit reached"}}));
    assert_eq!(h.watches_ended(), vec![vec!["demo://a".to_owned()]]);
    assert_eq!(
        h.requests("subscriptions/listen").len(),
        2,
        "not opened a third time"
    );
}
