//! The session's timers and its view of time.
//!
//! Every wakeup the core can ask for has a name, [`Timer`]. The ones a
//! session has at most one of (the startup budget, the next ping, and for
//! Streamable HTTP the server-stream wait and the DELETE at close) are
//! slots of a fixed [`TimerTable`] indexed by that name; the two kinds
//! there can be many of (request deadlines, stream resumptions) stay in
//! their own ordered queues, and their earliest entry competes with the
//! table under its own name. The next wakeup is the minimum of all of
//! them, and its name is what `timeout_reason` reports.
//!
//! Time only moves forward: [`Clock`] keeps the latest `now` an input
//! brought and lifts an earlier one to it (see [`Clock::observe`]).

use std::time::Instant;

/// What a wakeup is for: the name of the deadline `poll_timeout`
/// reports, read with `timeout_reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Timer {
    /// Handshake and discovery must be done: the startup budget.
    Startup,
    /// The next keep-alive `ping` is due.
    Ping,
    /// A request ran out of its budget (the earliest of them).
    Request,
    /// Streamable HTTP: the messages held for the server stream's GET go
    /// without it.
    ServerStreamWait,
    /// Streamable HTTP: a broken stream is resumed after its delay (the
    /// earliest of them).
    StreamResume,
    /// Streamable HTTP: the DELETE at close ran out of time.
    Delete,
    /// Streamable HTTP: a POST stream whose answer arrived did not end by
    /// itself in time and is aborted (the earliest of them).
    Linger,
}

impl Timer {
    /// How many timers there are: the size of a [`TimerTable`].
    const COUNT: usize = 7;

    /// Whether this timer is the head of a queue rather than a table slot.
    fn is_queued(self) -> bool {
        matches!(self, Timer::Request | Timer::StreamResume | Timer::Linger)
    }
}

/// The fixed timers, one optional deadline per [`Timer`].
#[derive(Clone, Debug, Default)]
pub(crate) struct TimerTable {
    at: [Option<Instant>; Timer::COUNT],
}

impl TimerTable {
    /// Arms `timer` for `at`, replacing what it was armed for.
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        debug_assert!(!timer.is_queued(), "{timer:?} is a queue, not a slot");
        self.at[timer as usize] = Some(at);
    }

    /// Disarms `timer`.
    pub(crate) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    /// When `timer` is armed for.
    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer as usize]
    }

    /// Whether `timer` is armed and its deadline has come by `now`.
    pub(crate) fn is_due(&self, timer: Timer, now: Instant) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }

    /// Disarms every timer.
    pub(crate) fn clear(&mut self) {
        self.at = [None; Timer::COUNT];
    }

    /// The earliest armed timer, with the heads of the queues in `queued`
    /// competing; on a tie the timer declared first in [`Timer`] wins.
    pub(crate) fn next<const N: usize>(
        &self,
        queued: [(Timer, Option<Instant>); N],
    ) -> Option<(Timer, Instant)> {
        const ALL: [Timer; Timer::COUNT] = [
            Timer::Startup,
            Timer::Ping,
            Timer::Request,
            Timer::ServerStreamWait,
            Timer::StreamResume,
            Timer::Delete,
            Timer::Linger,
        ];
        let slots = ALL
            .into_iter()
            .filter_map(|t| self.get(t).map(|at| (t, at)));
        let heads = queued
            .into_iter()
            .filter_map(|(t, at)| at.map(|at| (t, at)));
        slots.chain(heads).min_by_key(|&(t, at)| (at, t))
    }
}

/// The latest time a session has seen.
///
/// Executors read a monotonic clock, so `now` never goes back in normal
/// use; but a driver that mixes clocks, or a test that passes instants out
/// of order, must not make a deadline come earlier than one already
/// promised or count a rate window backwards. An earlier `now` is
/// therefore clamped, not rejected: it is treated as the latest `now`
/// seen, and the input is handled at that time.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    latest: Instant,
}

impl Clock {
    /// A clock that starts at `now`.
    pub(crate) fn new(now: Instant) -> Self {
        Self { latest: now }
    }

    /// Takes in an input's `now` and returns the time to handle it at:
    /// `now`, or the latest time seen when `now` is earlier.
    pub(crate) fn observe(&mut self, now: Instant) -> Instant {
        if now > self.latest {
            self.latest = now;
        }
        self.latest
    }

    /// The latest time seen.
    pub(crate) fn latest(&self) -> Instant {
        self.latest
    }
}
