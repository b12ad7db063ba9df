//! Rate limits on what a server can make rho write to its own log: lines
//! that are not JSON-RPC (and other protocol errors), and the server's own
//! `notifications/message`. A flood of either must not become a flood of
//! rho's output.
//!
//! A [`Tally`] lets the first few of a window through one by one and only
//! counts the rest; when the window is over (seen at the next arrival) or
//! the session ends, the count comes out once, for a single line such as
//! "… 163,838 more lines that were not JSON-RPC". Time is the caller's
//! `now`: nothing here reads a clock.

use std::time::{Duration, Instant};

/// What to do with one arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Log it as usual.
    Log,
    /// Only count it.
    Count,
}

/// Arrivals logged one by one per window, the rest counted.
#[derive(Clone, Debug)]
pub(crate) struct Tally {
    limit: u32,
    window: Duration,
    /// When the current window started; `None` before the first arrival.
    started: Option<Instant>,
    shown: u32,
    hidden: u64,
}

impl Tally {
    /// Lets `limit` arrivals per `window` through.
    pub(crate) fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit,
            window,
            started: None,
            shown: 0,
            hidden: 0,
        }
    }

    /// One arrival at `now`. Also returns how many were counted and not
    /// logged in the window that just ended, if one did and any were:
    /// the caller logs that count before this arrival.
    pub(crate) fn admit(&mut self, now: Instant) -> (Verdict, Option<u64>) {
        let mut ended = None;
        match self.started {
            Some(start) if now.saturating_duration_since(start) < self.window => {}
            _ => {
                ended = self.take_hidden();
                self.started = Some(now);
                self.shown = 0;
            }
        }
        if self.shown < self.limit {
            self.shown += 1;
            (Verdict::Log, ended)
        } else {
            self.hidden += 1;
            (Verdict::Count, ended)
        }
    }

    /// How many were counted and not logged so far (at the end of the
    /// session); the count starts again from zero.
    pub(crate) fn take_hidden(&mut self) -> Option<u64> {
        (self.hidden > 0).then(|| std::mem::take(&mut self.hidden))
    }
}

// The windows themselves are pinned through the session with a fake clock
// in `tests/misbehaving_peer.rs`: the core's source names no clock.
