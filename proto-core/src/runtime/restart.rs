//! Restarting a stdio server whose process died after its session was
//! established: whether to, which attempt it is, and when. Pure: every
//! input comes with its `now`, and the answer is a value.
//!
//! # Implementation note: where this lives
//!
//! The decision is the same on every executor, so it is written once,
//! here, and the one driver both executors run ([`super::driver`]) asks
//! it: when a session ends, [`Restarts::ended`] says restart (at which
//! instant) or stop (and why); when a session becomes ready,
//! [`Restarts::ready`] counts it. The driver turns a restart into a
//! deadline of its own and, once it is due, into an
//! [`Effect::StartTransport`](super::driver::Effect::StartTransport); the
//! executor only spawns the process again. So backoff, bounds and "never
//! during startup" cannot drift between the executors, and a fake clock
//! pins them (`proto-core/tests/restart.rs`, and the driver's in
//! `proto-core/tests/driver.rs`).
//!
//! # The rules
//!
//! - Only an established session is restarted. A server that never
//!   became ready failed its startup, and the reference says rho does not
//!   retry startup: [`Stop::NotEstablished`].
//! - A session rho closed (a person's stop, shutdown) stays closed:
//!   [`Stop::Requested`].
//! - `attempts = 0` never restarts: [`Stop::Disabled`].
//! - Otherwise attempt `n` (from 1) of `attempts` in a row waits
//!   [`RestartPolicy::delay`]`(n)`: the backoff, doubled each attempt,
//!   capped. An attempt whose own startup fails (the program is gone, it
//!   exits before its handshake) counts, and the next waits longer; after
//!   `attempts` of them rho gives up ([`Stop::Exhausted`]).
//! - A restarted session that stays up for [`STABLE_SESSION`] has
//!   recovered: the count starts again, so a long run whose server
//!   crashes now and then is not given up on for crashes hours apart.

use std::time::{Duration, Instant};

use crate::config::RestartPolicy;

/// How long a session must stay up before its end counts as a new
/// failure rather than one more of a series: the attempts in a row start
/// again from 1. A server that crashes within a minute of each restart is
/// in a crash loop; one that ran for a minute had recovered.
pub const STABLE_SESSION: Duration = Duration::from_secs(60);

/// What to do about a session that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Start the server again at `at`.
    Restart {
        /// Which attempt in a row this is, from 1.
        attempt: u32,
        /// How many in a row the policy allows.
        attempts: u32,
        /// When to start it: `now` plus the attempt's backoff.
        at: Instant,
    },
    /// Leave it ended.
    Stop(Stop),
}

/// Why a session that ended is not restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Rho closed it (a person stopped the server, or rho is stopping).
    Requested,
    /// It never became ready: a failed startup is not retried.
    NotEstablished,
    /// The policy says never (`attempts = 0`, or a Streamable HTTP
    /// server).
    Disabled,
    /// Every attempt in a row failed.
    Exhausted {
        /// How many there were.
        attempts: u32,
    },
}

/// One server's restarts: how many in a row, how many in all, and
/// whether its session was ever established.
#[derive(Clone, Debug)]
pub struct Restarts {
    policy: RestartPolicy,
    /// Some session of this server became ready: from then on, a lost
    /// session may be restarted.
    established: bool,
    /// When the running session became ready; `None` while none is ready.
    ready_since: Option<Instant>,
    /// Attempts in a row, since the last session that stayed up.
    in_a_row: u32,
    /// An attempt is under way (decided, not yet ready).
    attempting: bool,
    /// Restarts that became ready, in all.
    restarted: u32,
}

impl Restarts {
    /// A server's restarts under `policy`, before its first session.
    pub fn new(policy: RestartPolicy) -> Self {
        Self {
            policy,
            established: false,
            ready_since: None,
            in_a_row: 0,
            attempting: false,
            restarted: 0,
        }
    }

    /// The policy it follows.
    pub fn policy(&self) -> RestartPolicy {
        self.policy
    }

    /// How many restarts became ready, in all.
    pub fn restarted(&self) -> u32 {
        self.restarted
    }

    /// A session of the server became ready at `now` (its first, or a
    /// restarted one).
    pub fn ready(&mut self, now: Instant) {
        self.established = true;
        self.ready_since = Some(now);
        if std::mem::take(&mut self.attempting) {
            self.restarted = self.restarted.saturating_add(1);
        }
    }

    /// The server's session ended at `now` (`requested`: rho closed it),
    /// or a restart could not even start its process: what to do.
    pub fn ended(&mut self, now: Instant, requested: bool) -> Decision {
        let lived = self
            .ready_since
            .take()
            .map(|since| now.saturating_duration_since(since));
        let stop = if requested {
            Some(Stop::Requested)
        } else if !self.established {
            Some(Stop::NotEstablished)
        } else if !self.policy.is_enabled() {
            Some(Stop::Disabled)
        } else {
            None
        };
        if let Some(stop) = stop {
            self.attempting = false;
            return Decision::Stop(stop);
        }
        if lived.is_some_and(|lived| lived >= STABLE_SESSION) {
            self.in_a_row = 0;
        }
        if self.in_a_row >= self.policy.attempts {
            self.attempting = false;
            return Decision::Stop(Stop::Exhausted {
                attempts: self.policy.attempts,
            });
        }
        self.in_a_row += 1;
        self.attempting = true;
        Decision::Restart {
            attempt: self.in_a_row,
            attempts: self.policy.attempts,
            at: now + self.policy.delay(self.in_a_row),
        }
    }
}
