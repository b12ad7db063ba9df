//! The restart policy of a stdio server that died mid-session
//! (`runtime::restart`), driven by a fake clock: backoff and its cap,
//! exhaustion, the series that starts again after a stable session, and
//! never a restart of a session that was not established or that rho
//! closed.

// The fake clock needs one real `Instant` as its origin; after that, time
// only moves when a test says so.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use rho_proto_core::config::{MAX_RESTART_BACKOFF, RestartPolicy};
use rho_proto_core::runtime::restart::{Decision, Restarts, STABLE_SESSION, Stop};

fn policy(attempts: u32, backoff_ms: u64) -> RestartPolicy {
    RestartPolicy {
        attempts,
        backoff: Duration::from_millis(backoff_ms),
    }
}

/// The delay a restart decision waits from `now`.
fn delay(decision: Decision, now: Instant) -> Duration {
    match decision {
        Decision::Restart { at, .. } => at - now,
        Decision::Stop(stop) => panic!("expected a restart, got {stop:?}"),
    }
}

#[test]
fn a_session_that_never_became_ready_is_never_restarted() {
    let t0 = Instant::now();
    let mut restarts = Restarts::new(policy(3, 100));
    assert_eq!(
        restarts.ended(t0, false),
        Decision::Stop(Stop::NotEstablished),
        "a failed startup is not retried"
    );
    // Not later either: it is the first session that must be ready.
    assert_eq!(
        restarts.ended(t0 + Duration::from_secs(600), false),
        Decision::Stop(Stop::NotEstablished)
    );
    assert_eq!(restarts.restarted(), 0);
}

#[test]
fn a_session_rho_closed_or_a_disabled_policy_is_not_restarted() {
    let t0 = Instant::now();
    let mut restarts = Restarts::new(policy(3, 100));
    restarts.ready(t0);
    assert_eq!(restarts.ended(t0, true), Decision::Stop(Stop::Requested));
    let mut off = Restarts::new(policy(0, 100));
    off.ready(t0);
    assert_eq!(off.ended(t0, false), Decision::Stop(Stop::Disabled));
    let mut http = Restarts::new(RestartPolicy::NEVER);
    http.ready(t0);
    assert_eq!(http.ended(t0, false), Decision::Stop(Stop::Disabled));
}

#[test]
fn attempts_in_a_row_back_off_exponentially_then_give_up() {
    let t0 = Instant::now();
    let mut restarts = Restarts::new(policy(4, 500));
    restarts.ready(t0);
    let mut now = t0 + Duration::from_secs(1);
    let mut seen = Vec::new();
    for _ in 0..4 {
        let decision = restarts.ended(now, false);
        let Decision::Restart {
            attempt, attempts, ..
        } = decision
        else {
            panic!("expected a restart, got {decision:?}");
        };
        seen.push((attempt, attempts, delay(decision, now)));
        // Each restart fails its own startup, a moment after it began.
        now += delay(decision, now) + Duration::from_millis(10);
    }
    assert_eq!(
        seen,
        [
            (1, 4, Duration::from_millis(500)),
            (2, 4, Duration::from_millis(1000)),
            (3, 4, Duration::from_millis(2000)),
            (4, 4, Duration::from_millis(4000)),
        ]
    );
    assert_eq!(
        restarts.ended(now, false),
        Decision::Stop(Stop::Exhausted { attempts: 4 })
    );
    assert_eq!(restarts.restarted(), 0, "none became ready");
}

#[test]
fn the_backoff_is_capped_and_a_zero_backoff_restarts_at_once() {
    let slow = policy(100, 20_000);
    assert_eq!(slow.delay(1), Duration::from_secs(20));
    assert_eq!(slow.delay(2), MAX_RESTART_BACKOFF);
    assert_eq!(slow.delay(100), MAX_RESTART_BACKOFF);
    assert_eq!(
        policy(3, u64::MAX / 2).delay(1),
        MAX_RESTART_BACKOFF,
        "a policy built in code is capped too"
    );
    let t0 = Instant::now();
    let mut eager = Restarts::new(policy(2, 0));
    eager.ready(t0);
    assert_eq!(delay(eager.ended(t0, false), t0), Duration::ZERO);
}

#[test]
fn a_restart_that_became_ready_is_counted_and_a_stable_one_resets_the_series() {
    let t0 = Instant::now();
    let mut restarts = Restarts::new(policy(2, 100));
    restarts.ready(t0);
    // Crash, restart, ready: one restart; crash again soon after.
    let mut now = t0 + Duration::from_secs(5);
    assert!(matches!(
        restarts.ended(now, false),
        Decision::Restart { attempt: 1, .. }
    ));
    now += Duration::from_millis(300);
    restarts.ready(now);
    assert_eq!(restarts.restarted(), 1);
    now += Duration::from_secs(1);
    assert!(
        matches!(
            restarts.ended(now, false),
            Decision::Restart { attempt: 2, .. }
        ),
        "a session that lived a second is still the same series"
    );
    now += Duration::from_millis(300);
    restarts.ready(now);
    assert_eq!(restarts.restarted(), 2);
    // This one stays up a minute: its end starts a new series.
    now += STABLE_SESSION;
    let decision = restarts.ended(now, false);
    assert!(
        matches!(decision, Decision::Restart { attempt: 1, .. }),
        "{decision:?}"
    );
    assert_eq!(delay(decision, now), Duration::from_millis(100));
    // A second crash soon after a ready that did not last: attempt 2,
    // then the series is used up.
    now += Duration::from_millis(200);
    restarts.ready(now);
    now += Duration::from_millis(200);
    assert!(matches!(
        restarts.ended(now, false),
        Decision::Restart { attempt: 2, .. }
    ));
    assert_eq!(
        restarts.ended(now + Duration::from_secs(1), false),
        Decision::Stop(Stop::Exhausted { attempts: 2 }),
        "the second attempt failed its startup"
    );
    assert_eq!(restarts.restarted(), 3);
}
