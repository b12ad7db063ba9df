//! The completion broker against a fake clock: one request in flight,
//! coalescing, cache narrowing, late answers dropped, and timeouts.
//! (Here, not in the crate, because only a test reads the clock.)
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rho_proto_core::features::completions::{CompletionBroker, CompletionRef, Query};
use serde_json::{Value, json};

fn query(value: &str) -> Query {
    Query {
        reference: CompletionRef::Prompt {
            name: "completable-prompt".into(),
        },
        argument: "department".into(),
        value: value.into(),
        context: BTreeMap::new(),
    }
}

fn answer(values: &[&str], has_more: bool) -> Value {
    json!({"completion": {"values": values, "hasMore": has_more}})
}

const ALL: [&str; 4] = ["Engineering", "Sales", "Marketing", "Support"];

#[test]
fn a_server_without_the_capability_is_never_asked() {
    let now = Instant::now();
    let mut broker = CompletionBroker::new(false, Duration::from_secs(5));
    assert_eq!(broker.ask(now, query("")), None);
    assert_eq!(broker.poll_request(), None);
    assert_eq!(broker.poll_timeout(), None);
}

#[test]
fn one_request_in_flight_and_the_latest_keystroke_wins() {
    let t0 = Instant::now();
    let mut broker = CompletionBroker::new(true, Duration::from_secs(5));
    assert_eq!(broker.ask(t0, query("S")), None);
    let (first, params) = broker.poll_request().expect("sent");
    assert_eq!(params.argument.value, "S");
    assert_eq!(broker.poll_request(), None, "handed out once");
    // Typed on while it runs: nothing more goes out.
    assert_eq!(broker.ask(t0, query("Sa")), None);
    assert_eq!(broker.ask(t0, query("Sal")), None);
    assert_eq!(broker.poll_request(), None, "one in flight");
    // The answer for "S" is partial for "Sal": narrowed from a complete list.
    let shown = broker.handle_answer(t0, first, Ok(&answer(&["Sales", "Support"], false)));
    assert_eq!(shown, Some(vec!["Sales".to_owned()]));
    assert_eq!(
        broker.poll_request(),
        None,
        "the cache answered the waiting value"
    );
}

#[test]
fn the_waiting_value_is_asked_when_the_cache_cannot_answer() {
    let t0 = Instant::now();
    let mut broker = CompletionBroker::new(true, Duration::from_secs(5));
    broker.ask(t0, query("S"));
    let (first, _) = broker.poll_request().expect("sent");
    broker.ask(t0, query("Su"));
    // An incomplete list cannot be narrowed: the latest value is asked.
    let shown = broker.handle_answer(t0, first, Ok(&answer(&["Sales"], true)));
    assert_eq!(shown, None, "a late answer for `S` shows nothing for `Su`");
    let (second, params) = broker.poll_request().expect("waiting value sent");
    assert_eq!(params.argument.value, "Su");
    assert_eq!(
        broker.handle_answer(t0, second, Ok(&answer(&["Support"], false))),
        Some(vec!["Support".to_owned()])
    );
    // Back to `S`: answered from the cache, exactly as the server said.
    assert_eq!(broker.ask(t0, query("S")), Some(vec!["Sales".to_owned()]));
    assert_eq!(broker.poll_request(), None);
}

#[test]
fn cached_complete_lists_narrow_longer_prefixes_without_a_request() {
    let t0 = Instant::now();
    let mut broker = CompletionBroker::new(true, Duration::from_secs(5));
    broker.ask(t0, query(""));
    let (t, _) = broker.poll_request().expect("sent");
    assert_eq!(
        broker.handle_answer(t0, t, Ok(&answer(&ALL, false))),
        Some(ALL.map(str::to_owned).to_vec())
    );
    assert_eq!(
        broker.ask(t0, query("S")),
        Some(vec!["Sales".to_owned(), "Support".to_owned()])
    );
    assert_eq!(broker.ask(t0, query("Mx")), Some(vec![]));
    assert_eq!(broker.poll_request(), None, "no request for any of them");
    // Another context is another scope: asked afresh.
    let mut other = query("S");
    other.context.insert("name".into(), "Eve".into());
    assert_eq!(broker.ask(t0, other), None);
    assert!(broker.poll_request().is_some());
}

#[test]
fn errors_and_timeouts_leave_the_palette_empty_and_free_the_slot() {
    let t0 = Instant::now();
    let budget = Duration::from_secs(5);
    let mut broker = CompletionBroker::new(true, budget);
    broker.ask(t0, query("E"));
    let (t, _) = broker.poll_request().expect("sent");
    assert_eq!(broker.handle_answer(t0, t, Err("boom".into())), None);
    assert_eq!(broker.ask(t0, query("E")), None, "errors are not cached");
    let (t, _) = broker.poll_request().expect("asked again");
    assert_eq!(
        broker.handle_answer(t0, t, Ok(&json!({"completion": {}}))),
        None,
        "an unreadable answer shows nothing"
    );

    broker.ask(t0, query("En"));
    let (slow, _) = broker.poll_request().expect("sent");
    assert_eq!(broker.poll_timeout(), Some(t0 + budget));
    broker.ask(t0 + Duration::from_secs(1), query("Eng"));
    assert_eq!(
        broker.handle_timeout(t0 + Duration::from_secs(4)),
        None,
        "not yet"
    );
    assert_eq!(broker.handle_timeout(t0 + budget), Some(slow));
    let (next, params) = broker.poll_request().expect("the waiting value goes next");
    assert_eq!(params.argument.value, "Eng");
    // The abandoned request's answer arrives after all: dropped.
    assert_eq!(
        broker.handle_answer(t0 + budget, slow, Ok(&answer(&["Engineering"], false))),
        None
    );
    assert!(
        broker.poll_timeout().is_some(),
        "the new request still runs"
    );
    assert_eq!(
        broker.handle_answer(t0 + budget, next, Ok(&answer(&["Engineering"], false))),
        Some(vec!["Engineering".to_owned()])
    );
    assert_eq!(broker.poll_timeout(), None);
}
