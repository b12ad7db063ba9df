//! The session's timers and its view of time.
//!
//! Every wakeup the core can ask for has a name, [`Timer`]. The ones a
//! session has at most one of (the startup budget, the next ping, a stdio
//! close's wait for its farewells, and for Streamable HTTP the
//! server-stream wait and the DELETE at close) are
//! slots of a fixed [`TimerTable`] indexed by that name; the kinds
//! there can be many of (request deadlines, stream resumptions, task polls) stay in
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
    /// A task a call runs is due to be polled with `tasks/get` (the
    /// earliest of them).
    TaskPoll,
    /// Stdio: a session rho closed stops waiting for the answers to its
    /// farewells (a task's `tasks/cancel`, a 2025 unsubscribe) and ends.
    Farewell,
}

impl Timer {
    /// How many timers there are: the size of a [`TimerTable`].
    const COUNT: usize = 9;

    /// Whether this timer is the head of a queue rather than a table slot.
    fn is_queued(self) -> bool {
        matches!(
            self,
            Timer::Request | Timer::StreamResume | Timer::Linger | Timer::TaskPoll
        )
    }
}

/// The fixed timers, one optional deadline per [`Timer`]. Generic over
/// the time type only so that the unit tests can order plain numbers (the
/// core reads no clock, tests included); sessions use `Instant`.
#[derive(Clone, Debug)]
pub(crate) struct TimerTable<T = Instant> {
    at: [Option<T>; Timer::COUNT],
}

impl<T: Copy> Default for TimerTable<T> {
    fn default() -> Self {
        Self {
            at: [None; Timer::COUNT],
        }
    }
}

impl<T: Copy + Ord> TimerTable<T> {
    /// Arms `timer` for `at`, replacing what it was armed for.
    pub(crate) fn set(&mut self, timer: Timer, at: T) {
        debug_assert!(!timer.is_queued(), "{timer:?} is a queue, not a slot");
        self.at[timer as usize] = Some(at);
    }

    /// Disarms `timer`.
    pub(crate) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    /// When `timer` is armed for.
    pub(crate) fn get(&self, timer: Timer) -> Option<T> {
        self.at[timer as usize]
    }

    /// Whether `timer` is armed and its deadline has come by `now`.
    pub(crate) fn is_due(&self, timer: Timer, now: T) -> bool {
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
        queued: [(Timer, Option<T>); N],
    ) -> Option<(Timer, T)> {
        const ALL: [Timer; Timer::COUNT] = [
            Timer::Startup,
            Timer::Ping,
            Timer::Request,
            Timer::ServerStreamWait,
            Timer::StreamResume,
            Timer::Delete,
            Timer::Linger,
            Timer::TaskPoll,
            Timer::Farewell,
        ];
        // A plain loop: executors ask several times per input, and the
        // iterator chain this replaces cost ~350 instructions a time.
        let mut best = None;
        for (timer, at) in ALL.into_iter().zip(self.at) {
            best = earlier(best, at.map(|at| (timer, at)));
        }
        for (timer, at) in queued {
            best = earlier(best, at.map(|at| (timer, at)));
        }
        best
    }
}

/// The earlier of two wakeups; on a tie, the timer declared first in
/// [`Timer`].
pub(crate) fn earlier<T: Ord>(a: Option<(Timer, T)>, b: Option<(Timer, T)>) -> Option<(Timer, T)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if (&y.1, y.0) < (&x.1, x.0) { y } else { x }),
        (x, None) => x,
        (None, y) => y,
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

#[cfg(test)]
mod tests {
    use super::*;

    // Plain numbers stand for instants: the ordering is all that matters.

    #[test]
    fn the_earliest_armed_timer_is_next_with_queue_heads_competing() {
        let mut table = TimerTable::<u32>::default();
        assert_eq!(table.next([(Timer::Request, None)]), None);
        table.set(Timer::Ping, 30);
        table.set(Timer::Startup, 20);
        assert_eq!(table.next([]), Some((Timer::Startup, 20)));
        assert_eq!(
            table.next([(Timer::Request, Some(10)), (Timer::Linger, None)]),
            Some((Timer::Request, 10))
        );
        table.stop(Timer::Startup);
        assert_eq!(
            table.next([(Timer::StreamResume, Some(40))]),
            Some((Timer::Ping, 30))
        );
    }

    #[test]
    fn on_a_tie_the_timer_declared_first_wins_wherever_it_comes_from() {
        let at = 1000u32;
        let mut table = TimerTable::<u32>::default();
        table.set(Timer::Delete, at);
        table.set(Timer::Ping, at);
        assert_eq!(
            table.next([(Timer::Request, Some(at)), (Timer::Linger, Some(at))]),
            Some((Timer::Ping, at))
        );
        table.stop(Timer::Ping);
        assert_eq!(
            table.next([(Timer::Linger, Some(at)), (Timer::Request, Some(at))]),
            Some((Timer::Request, at))
        );
        assert_eq!(
            earlier(Some((Timer::Linger, at)), Some((Timer::Startup, at))),
            Some((Timer::Startup, at))
        );
        assert_eq!(
            earlier(None, Some((Timer::Linger, at))),
            Some((Timer::Linger, at))
        );
    }
}
