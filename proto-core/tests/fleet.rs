//! The fleet's startup wait (`runtime::fleet`), with handles that only
//! count what they are told: an interrupt closes every server before any
//! is stopped, so their shutdowns overlap.

// The fake clock needs one real `Instant` as its origin; after that, time
// only moves when a test says so.
#![allow(clippy::disallowed_methods)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::driving::Heard;
use rho_proto_core::runtime::fleet::{Fleet, SessionHandle, WaitStep};
use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
use rho_proto_core::runtime::{Health, Sessions as _, SlotId};

/// A session handle that counts the closes it was asked for.
struct Counted {
    health: Mutex<Health>,
    closes: Arc<AtomicUsize>,
}

impl SessionHandle for Counted {
    fn health_cell(&self) -> &Mutex<Health> {
        &self.health
    }

    fn close(&self) {
        self.closes.fetch_add(1, Ordering::SeqCst);
    }
}

/// An interrupt heard while the first of two servers starts closes
/// both at once, before the executor waits for either to stop (so
/// their shutdowns overlap), then hands each to the executor to stop,
/// records both as interrupted, and ends the startup.
#[test]
fn an_interrupted_startup_closes_every_server_at_once_then_stops_each() {
    let config = rho_proto_core::config::parse(
        "[mcp.servers]\na = { transport = \"stdio\", command = \"a\" }\n\
         b = { transport = \"stdio\", command = \"b\" }\n",
        "rho.toml",
    )
    .expect("valid config");
    let mut fleet = Fleet::new(&config, RuntimeOptions::new(Vec::new(), None), |_| true);
    let closes = Arc::new(AtomicUsize::new(0));
    let starting = fleet.starting();
    let slots: Vec<SlotId> = starting
        .inventory
        .to_start()
        .into_iter()
        .map(|(slot, _)| slot)
        .collect();
    for &slot in &slots {
        let handle = Counted {
            health: Mutex::default(),
            closes: Arc::clone(&closes),
        };
        starting.handles.insert(slot, handle);
    }
    let mut waiting = starting.wait();
    let now = Instant::now();
    let Some(WaitStep::Wait { slot, .. }) = waiting.step(now) else {
        panic!("the first server is waited for first");
    };
    assert_eq!(slot, slots[0]);
    waiting.heard(slot, Heard::Interrupted);
    let mut stopped = 0;
    while let Some(step) = waiting.step(now) {
        let WaitStep::Stop(handle) = step else {
            panic!("nothing more is waited for once interrupted");
        };
        assert_eq!(
            handle.closes.load(Ordering::SeqCst),
            2,
            "both told to close before either is stopped"
        );
        stopped += 1;
    }
    assert_eq!(stopped, 2);
    for server in fleet.servers() {
        assert!(
            matches!(
                server.status,
                ServerStatus::Failed {
                    kind: FailureKind::Interrupted,
                    ..
                }
            ),
            "{server:?}"
        );
    }
    assert_eq!(fleet.close_all().count(), 0, "no session left");
}
