//! The session's catalog and feature requests against a scripted server
//! and a fake clock: prompts, resources and templates listed at connect
//! (paginated, bounded, failing alone), re-listed on `list_changed`
//! (queued behind a listing that runs), and `prompts/get`,
//! `resources/read` and `completion/complete` sent, answered, timed out,
//! cancelled and refused.

use std::collections::BTreeMap;
use std::time::Duration;

use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::completions::{CompleteArgument, CompleteParams, CompletionRef};
use rho_proto_core::features::prompts::GetPromptParams;
use rho_proto_core::features::resources::ReadResourceParams;
use rho_proto_core::session::{
    ApiMisuse, CallError, Event, PeerError, SessionOptions, SessionState,
};
use rho_proto_core::wire::jsonrpc::{Message, RequestId};
use rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION;
use serde_json::{Value, json};

mod common;
use common::Stdio as Harness;

/// What these tests read off the shared harness.
impl Harness {
    /// A session offering the latest 2025 version: the handshake.
    fn latest() -> Self {
        Self::with(LATEST_PROTOCOL_VERSION)
    }

    /// A session offering `version` first: the 2025 handshake, or the
    /// 2026-07-28 discovery.
    fn with(version: &str) -> Self {
        let mut o = SessionOptions::stdio("demo");
        o.protocol_version = version.into();
        o.startup_timeout = Duration::from_secs(10);
        o.tool_timeout = Duration::from_secs(5);
        o.request_timeout = Duration::from_secs(3);
        Self::new(o)
    }

    fn send(&mut self, request: &FeatureRequest) -> rho_proto_core::session::CallId {
        let call = self.session.request(self.now, request).expect("accepted");
        self.drain();
        call
    }

    /// The id and params of the latest request for `method`.
    fn request(&self, method: &str) -> (RequestId, Option<Value>) {
        self.sent
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Request {
                    id,
                    method: m,
                    params,
                } if m == method => Some((id.clone(), params.clone())),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {method} sent"))
    }

    fn count(&self, method: &str) -> usize {
        self.sent
            .iter()
            .filter(|m| {
                matches!(m, Message::Request { method: m, .. } | Message::Notification { method: m, .. } if m == method)
            })
            .count()
    }

    fn answer(&mut self, method: &str, result: Value) {
        let (id, _) = self.request(method);
        self.say(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn fail(&mut self, method: &str) {
        self.fail_with(method, -32603);
    }

    fn fail_with(&mut self, method: &str, code: i64) {
        let (id, _) = self.request(method);
        self.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "nope"}}));
    }

    fn initialize(&mut self, capabilities: Value) {
        self.answer(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "serverInfo": {"name": "scripted", "version": "1"}
            }),
        );
    }

    /// A server declaring tools, prompts, resources and completions
    /// answers the handshake and every listing.
    fn everything(&mut self) {
        self.drive_answering(&[
            (
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}, "prompts": {"listChanged": true}, "resources": {}, "completions": {}},
                    "serverInfo": {"name": "scripted", "version": "1"}
                }),
            ),
            ("tools/list", json!({"tools": []})),
            (
                "prompts/list",
                json!({"prompts": [{"name": "args-prompt", "arguments": [{"name": "city", "required": true}]}]}),
            ),
            (
                "resources/list",
                json!({"resources": [{"uri": "demo://a", "name": "a"}]}),
            ),
            (
                "resources/templates/list",
                json!({"resourceTemplates": [{"uriTemplate": "demo://t/{id}", "name": "t"}]}),
            ),
        ]);
        assert_eq!(self.session.state(), SessionState::Ready);
    }

    fn ready_catalog(&self) -> rho_proto_core::features::catalog::Catalog {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::Ready(ready) => Some((*ready.catalog).clone()),
                _ => None,
            })
            .expect("ready")
    }
}

#[test]
fn ready_waits_for_every_declared_list_and_carries_them() {
    let mut h = Harness::latest();
    h.initialize(json!({"tools": {}, "prompts": {}, "resources": {}}));
    h.answer("tools/list", json!({"tools": []}));
    assert_eq!(h.session.state(), SessionState::Starting, "lists still run");
    h.answer("prompts/list", json!({"prompts": [{"name": "p"}]}));
    h.answer(
        "resources/list",
        json!({"resources": [{"uri": "demo://a", "name": "a"}]}),
    );
    assert_eq!(h.session.state(), SessionState::Starting);
    h.answer(
        "resources/templates/list",
        json!({"resourceTemplates": [{"uriTemplate": "demo://t/{id}", "name": "t"}]}),
    );
    assert_eq!(h.session.state(), SessionState::Ready);
    let catalog = h.ready_catalog();
    assert_eq!(catalog.prompts.items[0].name, "p");
    assert_eq!(catalog.resources.items[0].uri, "demo://a");
    assert_eq!(catalog.templates.items[0].uri_template, "demo://t/{id}");
    assert!(catalog.errors().is_empty());
}

#[test]
fn undeclared_lists_are_never_asked_for() {
    let mut h = Harness::latest();
    h.initialize(json!({"tools": {}}));
    h.answer("tools/list", json!({"tools": []}));
    assert_eq!(h.session.state(), SessionState::Ready);
    for method in ["prompts/list", "resources/list", "resources/templates/list"] {
        assert_eq!(h.count(method), 0, "{method}");
    }
    let catalog = h.ready_catalog();
    assert!(!catalog.prompts.offered && !catalog.resources.offered);
}

/// The Puppeteer and Kubernetes servers declare resources and answer
/// `resources/templates/list` with -32601: a listing the server does not
/// implement holds nothing, and no failure is shown for it.
#[test]
fn a_listing_answered_method_not_found_is_empty_not_failed() {
    for method in ["prompts/list", "resources/list", "resources/templates/list"] {
        let mut h = Harness::latest();
        h.initialize(json!({"tools": {}, "prompts": {}, "resources": {}}));
        h.answer("tools/list", json!({"tools": []}));
        for other in ["prompts/list", "resources/list", "resources/templates/list"] {
            if other == method {
                h.fail_with(method, -32601);
            } else if other == "resources/list" {
                h.answer(other, json!({"resources": [{"uri": "a://b", "name": "b"}]}));
            } else if other == "prompts/list" {
                h.answer(other, json!({"prompts": [{"name": "p"}]}));
            } else {
                h.answer(other, json!({"resourceTemplates": []}));
            }
        }
        assert_eq!(h.session.state(), SessionState::Ready);
        let catalog = h.ready_catalog();
        assert!(
            catalog.errors().is_empty(),
            "{method}: {:?}",
            catalog.errors()
        );
        let held = [
            catalog.prompts.items.len(),
            catalog.resources.items.len(),
            catalog.templates.items.len(),
        ];
        let expected = match method {
            "prompts/list" => [0, 1, 0],
            "resources/list" => [1, 0, 0],
            _ => [1, 1, 0],
        };
        assert_eq!(held, expected, "{method}");
        assert!(
            !h.events
                .iter()
                .any(|e| matches!(e, Event::PeerMisbehaved(_))),
            "{method}: {:?}",
            h.events
        );
    }
}

#[test]
fn listings_follow_cursors_and_a_failure_does_not_fail_the_server() {
    let mut h = Harness::latest();
    h.initialize(json!({"tools": {}, "prompts": {}, "resources": {}}));
    h.answer(
        "tools/list",
        json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
    );
    h.answer(
        "prompts/list",
        json!({"prompts": [{"name": "a"}, {"nameless": 1}], "nextCursor": "p2"}),
    );
    let (_, params) = h.request("prompts/list");
    assert_eq!(params, Some(json!({"cursor": "p2"})));
    h.answer("prompts/list", json!({"prompts": [{"name": "b"}]}));
    h.fail("resources/list");
    h.answer(
        "resources/templates/list",
        json!({"resourceTemplates": [], "nextCursor": "x"}),
    );
    h.answer(
        "resources/templates/list",
        json!({"resourceTemplates": [], "nextCursor": "x"}),
    );
    assert_eq!(h.session.state(), SessionState::Ready, "tools still load");
    let catalog = h.ready_catalog();
    let names: Vec<&str> = catalog
        .prompts
        .items
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let errors = catalog.errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with("resources/list: the server answered with an error"),
        "{errors:?}"
    );
    assert!(errors[1].contains("kept paginating"), "{errors:?}");
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::PeerMisbehaved(PeerError::MalformedEntry {
            list: "prompts/list",
            ..
        })
    )));
}

#[test]
fn a_listing_with_no_answer_by_the_startup_deadline_fails_alone() {
    let mut h = Harness::latest();
    h.initialize(json!({"tools": {}, "prompts": {}}));
    h.answer("tools/list", json!({"tools": []}));
    h.step();
    assert_eq!(h.session.state(), SessionState::Ready);
    let catalog = h.ready_catalog();
    assert!(
        catalog
            .prompts
            .error
            .as_deref()
            .is_some_and(|e| e.contains("startup budget")),
        "{catalog:?}"
    );
    assert_eq!(h.count("notifications/cancelled"), 1, "the server is told");
    // The tools themselves still count against the budget.
    let mut slow = Harness::latest();
    slow.initialize(json!({"tools": {}, "prompts": {}}));
    slow.answer("prompts/list", json!({"prompts": []}));
    slow.step();
    assert_eq!(slow.session.state(), SessionState::Closed);
}

#[test]
fn list_changed_relists_after_ready_and_queues_one_more_behind_a_running_one() {
    let mut h = Harness::latest();
    h.everything();
    let before = h.count("prompts/list");
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    assert_eq!(
        h.count("prompts/list"),
        before + 1,
        "one runs, one is queued"
    );
    h.answer("prompts/list", json!({"prompts": [{"name": "new"}]}));
    assert_eq!(h.count("prompts/list"), before + 2, "the queued one runs");
    h.answer("prompts/list", json!({"prompts": [{"name": "newer"}]}));
    assert_eq!(h.count("prompts/list"), before + 2);
    let changed: Vec<String> = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CatalogChanged(c) => Some(c.prompts.items[0].name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(changed, ["new", "newer"]);
    assert_eq!(h.session.catalog().prompts.items[0].name, "newer");

    // resources/list_changed re-lists resources and templates both; a
    // re-listing that gets no answer keeps what was listed.
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}));
    h.answer("resources/list", json!({"resources": []}));
    h.step();
    let catalog = h.session.catalog();
    assert!(catalog.resources.items.is_empty());
    assert_eq!(catalog.templates.items.len(), 1, "kept");
    assert!(
        catalog
            .templates
            .error
            .as_deref()
            .is_some_and(|e| e.contains("no answer within 3 s"))
    );
    assert_eq!(h.session.state(), SessionState::Ready);
}

#[test]
fn list_changed_during_the_startup_listing_lists_again_before_ready() {
    let mut h = Harness::latest();
    h.initialize(json!({"prompts": {}}));
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    h.answer("prompts/list", json!({"prompts": [{"name": "old"}]}));
    assert_eq!(h.session.state(), SessionState::Starting);
    h.answer("prompts/list", json!({"prompts": [{"name": "current"}]}));
    assert_eq!(h.session.state(), SessionState::Ready);
    assert_eq!(h.ready_catalog().prompts.items[0].name, "current");
}

#[test]
fn at_connect_one_catalog_list_is_in_flight_at_a_time_beside_the_tools() {
    let mut h = Harness::latest();
    h.initialize(json!({"tools": {}, "prompts": {}, "resources": {}}));
    assert_eq!(h.count("tools/list"), 1);
    assert_eq!(h.count("prompts/list"), 1, "beside tools/list");
    assert_eq!(h.count("resources/list"), 0, "after prompts/list");
    h.answer("prompts/list", json!({"prompts": []}));
    assert_eq!(h.count("resources/list"), 1);
    assert_eq!(h.count("resources/templates/list"), 0);
    h.answer("resources/list", json!({"resources": []}));
    assert_eq!(h.count("resources/templates/list"), 1);
}

#[test]
fn a_change_queued_behind_a_startup_listing_that_runs_out_of_time_does_not_fail_the_server() {
    let mut h = Harness::latest();
    h.initialize(json!({"tools": {}, "prompts": {"listChanged": true}, "resources": {}}));
    h.answer("tools/list", json!({"tools": []}));
    // The change queues a second listing behind the one that never ends;
    // the resource lists still wait their turn.
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    h.step();
    assert_eq!(h.session.state(), SessionState::Ready, "tools loaded");
    let errors = h.ready_catalog().errors();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors.iter().all(|e| e.contains("startup budget")),
        "{errors:?}"
    );
    assert_eq!(
        h.count("prompts/list"),
        1,
        "nothing queued outlives startup"
    );
    assert_eq!(h.count("resources/list"), 0);
}

/// A 2026-era session holding a private prompt list and a public
/// resource list.
fn stateless_with_private_prompts() -> Harness {
    let mut h = Harness::with("2026-07-28");
    h.answer(
        "server/discover",
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"prompts": {}, "resources": {}},
            "ttlMs": 0,
            "cacheScope": "public"
        }),
    );
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "alices"}],
               "ttlMs": 3_600_000, "cacheScope": "private"}),
    );
    h.answer(
        "resources/list",
        json!({"resultType": "complete", "resources": [{"uri": "demo://a", "name": "a"}],
               "ttlMs": 3_600_000, "cacheScope": "public"}),
    );
    h.answer(
        "resources/templates/list",
        json!({"resultType": "complete", "resourceTemplates": [],
               "ttlMs": 3_600_000, "cacheScope": "public"}),
    );
    assert_eq!(h.session.state(), SessionState::Ready);
    h
}

#[test]
fn a_new_credential_drops_a_private_prompt_list_and_lists_it_again() {
    let mut h = stateless_with_private_prompts();
    assert_eq!(h.session.catalog().prompts.items[0].name, "alices");
    h.events.clear();
    h.session.handle_authorization_changed(h.now);
    h.drain();
    // Dropped at once: no host serves the old credential's prompts.
    assert!(h.session.catalog().prompts.items.is_empty());
    assert!(
        matches!(
            h.events.as_slice(),
            [Event::CatalogChanged(c)] if c.prompts.items.is_empty() && c.resources.items.len() == 1
        ),
        "{:?}",
        h.events
    );
    assert_eq!(h.count("prompts/list"), 2, "listed again under the new one");
    assert_eq!(h.count("resources/list"), 1, "a public list stands");
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "bobs"}],
               "ttlMs": 3_600_000, "cacheScope": "private"}),
    );
    assert_eq!(h.session.catalog().prompts.items[0].name, "bobs");
}

#[test]
fn a_private_listing_answered_across_a_credential_change_is_listed_again() {
    let mut h = stateless_with_private_prompts();
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    // ... a listing is out under the old credential when it changes.
    let listing = h.count("prompts/list");
    h.session.handle_authorization_changed(h.now);
    h.drain();
    assert_eq!(
        h.count("prompts/list"),
        listing,
        "queued behind the one out"
    );
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "alices"}], "cacheScope": "private"}),
    );
    assert!(h.session.catalog().prompts.items.is_empty(), "not kept");
    assert_eq!(h.count("prompts/list"), listing + 1);
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "bobs"}], "cacheScope": "private"}),
    );
    assert_eq!(h.session.catalog().prompts.items[0].name, "bobs");
}

#[test]
fn the_2025_era_keeps_its_lists_across_a_new_credential() {
    let mut h = Harness::latest();
    h.everything();
    let before = h.count("prompts/list");
    h.events.clear();
    h.session.handle_authorization_changed(h.now);
    h.drain();
    assert_eq!(h.count("prompts/list"), before, "no cacheScope in that era");
    assert_eq!(h.session.catalog().prompts.items.len(), 1);
    assert!(h.events.is_empty(), "{:?}", h.events);
}

/// A completion of `args-prompt`'s `city` from `Pa`.
fn complete_city() -> FeatureRequest {
    FeatureRequest::Complete(CompleteParams {
        reference: CompletionRef::Prompt {
            name: "args-prompt".into(),
        },
        argument: CompleteArgument {
            name: "city".into(),
            value: "Pa".into(),
        },
        context: None,
    })
}

fn get_prompt() -> FeatureRequest {
    FeatureRequest::GetPrompt(GetPromptParams {
        name: "args-prompt".into(),
        arguments: BTreeMap::from([("city".to_owned(), "Paris".to_owned())]),
    })
}

#[test]
fn feature_requests_are_sent_and_answered_as_sent() {
    let mut h = Harness::latest();
    h.everything();
    let call = h.send(&get_prompt());
    let (_, params) = h.request("prompts/get");
    assert_eq!(
        params,
        Some(json!({"name": "args-prompt", "arguments": {"city": "Paris"}}))
    );
    let result = json!({"messages": []});
    h.answer("prompts/get", result.clone());
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Ok(v) } if *c == call && *v == result
    )));

    let read = FeatureRequest::ReadResource(ReadResourceParams {
        uri: "demo://a".into(),
    });
    let call = h.send(&read);
    h.fail("resources/read");
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Err(CallError::Rpc { .. }) } if *c == call
    )));
}

#[test]
fn feature_requests_time_out_and_cancel_telling_the_server() {
    let mut h = Harness::latest();
    h.everything();
    let complete = complete_city();
    let call = h.send(&complete);
    let sent = h.now;
    h.step();
    assert_eq!(
        h.now - sent,
        Duration::from_secs(3),
        "completions get the short budget"
    );
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Err(CallError::Timeout { .. }) } if *c == call
    )));
    assert_eq!(h.count("notifications/cancelled"), 1);

    let call = h.send(&get_prompt());
    h.session.cancel_call(h.now, call);
    h.drain();
    assert_eq!(h.count("notifications/cancelled"), 2);
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Err(CallError::Cancelled { .. }) } if *c == call
    )));
    // The late answer is dropped: it completes nothing twice.
    let before = h.events.len();
    h.answer("prompts/get", json!({"messages": []}));
    assert!(
        h.events[before..]
            .iter()
            .all(|e| !matches!(e, Event::RequestCompleted { .. }))
    );

    let call = h.send(&get_prompt());
    h.session.close(h.now);
    h.drain();
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Err(CallError::SessionClosed { .. }) } if *c == call
    )));
}

/// A request with a budget of its own (`CallOptions::timeout`) times out
/// at it, in place of its default (a completion's short budget here).
#[test]
fn a_feature_request_with_a_budget_of_its_own_times_out_at_that_budget() {
    let mut h = Harness::latest();
    h.everything();
    let complete = complete_city();
    let call = h
        .session
        .request_within(h.now, &complete, Some(Duration::from_secs(7)))
        .expect("accepted");
    h.drain();
    let sent = h.now;
    h.step();
    assert_eq!(h.now - sent, Duration::from_secs(7), "not the default 3 s");
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Err(CallError::Timeout { .. }) } if *c == call
    )));
}

/// Only a tool call carries a progress token (its call id): progress
/// naming the id of a prompt, resource or completion request names no
/// request of rho's, and neither reaches the host nor extends its budget.
#[test]
fn progress_naming_a_feature_requests_id_is_not_progress_for_it() {
    let mut o = SessionOptions::stdio("demo");
    o.protocol_version = LATEST_PROTOCOL_VERSION.into();
    o.tool_timeout = Duration::from_secs(5);
    o.progress_extends_up_to = Some(Duration::from_secs(60));
    let mut h = Harness::new(o);
    h.everything();
    let read = FeatureRequest::ReadResource(ReadResourceParams {
        uri: "demo://a".into(),
    });
    let call = h.send(&read);
    let (id, _) = h.request("resources/read");
    assert_eq!(
        id,
        RequestId::Number(call.wire_id() as i64),
        "its call's id"
    );
    let deadline = h.session.poll_timeout();
    h.now += Duration::from_secs(4);
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                 "params": {"progressToken": id, "progress": 1, "total": 2}}));
    assert!(
        !h.events.iter().any(|e| matches!(e, Event::Progress { .. })),
        "{:?}",
        h.events
    );
    assert_eq!(
        h.session.poll_timeout(),
        deadline,
        "the budget is not extended"
    );
}

#[test]
fn requests_need_a_ready_session_and_the_capability() {
    let mut h = Harness::latest();
    assert!(matches!(
        h.session.request(h.now, &get_prompt()),
        Err(ApiMisuse::NotReady(_))
    ));
    h.initialize(json!({"tools": {}}));
    h.answer("tools/list", json!({"tools": []}));
    match h.session.request(h.now, &get_prompt()) {
        Err(e @ ApiMisuse::NotOffered { .. }) => {
            assert_eq!(e.to_string(), "server `demo` does not offer prompts")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.count("prompts/get"), 0, "never asked");
}

#[test]
fn the_stateless_era_lists_the_same_catalog_after_discovery() {
    let mut h = Harness::with("2026-07-28");
    h.answer(
        "server/discover",
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"prompts": {}, "resources": {}},
            "ttlMs": 0,
            "cacheScope": "public"
        }),
    );
    let (_, params) = h.request("prompts/list");
    let meta = params.expect("params")["_meta"].clone();
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "p"}]}),
    );
    h.answer(
        "resources/list",
        json!({"resultType": "complete", "resources": []}),
    );
    assert_eq!(h.session.state(), SessionState::Starting);
    h.answer(
        "resources/templates/list",
        json!({"resultType": "complete", "resourceTemplates": []}),
    );
    assert_eq!(h.session.state(), SessionState::Ready);
    assert_eq!(h.ready_catalog().prompts.items[0].name, "p");
    let call = h.send(&get_prompt());
    h.answer(
        "prompts/get",
        json!({"resultType": "complete", "messages": []}),
    );
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::RequestCompleted { call: c, result: Ok(_) } if *c == call
    )));
}

#[test]
fn the_stateless_era_listens_for_catalog_changes_and_relists() {
    let mut h = Harness::with("2026-07-28");
    h.answer(
        "server/discover",
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"prompts": {"listChanged": true}},
            "ttlMs": 0,
            "cacheScope": "public"
        }),
    );
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "old"}]}),
    );
    assert_eq!(h.session.state(), SessionState::Ready);
    let (listen, params) = h.request("subscriptions/listen");
    let asked = &params.expect("params")["notifications"];
    assert_eq!(asked["promptsListChanged"], true, "{asked}");
    let before = h.count("prompts/list");
    let tag = json!({"io.modelcontextprotocol/subscriptionId": listen});
    h.say(json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": tag, "notifications": {"promptsListChanged": true}}
    }));
    // A change before the stream opened reached no stream: read again.
    assert_eq!(h.count("prompts/list"), before + 1, "acknowledged: re-read");
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "mid"}]}),
    );
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {"_meta": tag}}));
    assert_eq!(h.count("prompts/list"), before + 2, "the change re-lists");
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "new"}]}),
    );
    assert_eq!(h.session.catalog().prompts.items[0].name, "new");
}

/// A 2026-era session whose prompt list is fresh for `ttl_ms`.
fn stateless_with_prompt_ttl(ttl_ms: u64) -> Harness {
    let mut h = Harness::with("2026-07-28");
    h.answer(
        "server/discover",
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"prompts": {}},
            "ttlMs": 0,
            "cacheScope": "public"
        }),
    );
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "p"}], "ttlMs": ttl_ms}),
    );
    assert_eq!(h.session.state(), SessionState::Ready);
    h
}

#[test]
fn a_prompt_list_past_its_ttl_is_read_again_when_a_prompt_is_asked_for() {
    let mut h = stateless_with_prompt_ttl(1_000);
    assert_eq!(h.count("prompts/list"), 1);
    // Still fresh: the request goes alone.
    h.send(&get_prompt());
    assert_eq!(h.count("prompts/list"), 1);
    h.answer(
        "prompts/get",
        json!({"resultType": "complete", "messages": []}),
    );
    // Past its freshness: the list is read again beside the request.
    h.now += std::time::Duration::from_millis(1_500);
    h.send(&get_prompt());
    assert_eq!(h.count("prompts/list"), 2);
    assert_eq!(h.count("prompts/get"), 2);
    h.answer(
        "prompts/list",
        json!({"resultType": "complete", "prompts": [{"name": "p"}, {"name": "q"}], "ttlMs": 1_000}),
    );
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::CatalogChanged(catalog) if catalog.prompts.items.len() == 2
    )));
    // Fresh again: no third listing.
    h.send(&get_prompt());
    assert_eq!(h.count("prompts/list"), 2);
}
