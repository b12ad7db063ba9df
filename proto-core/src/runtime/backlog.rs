//! Backpressure on a server's transport: the counters and limits both
//! executors share.
//!
//! Three limits keep rho's memory flat whatever a server does:
//!
//! - **stdout**: never read faster than the session handles it. On
//!   threads the reader holds a few [`STDOUT_CREDITS`]; it spends one per
//!   chunk it hands to the session and gets it back once the session has
//!   handled that chunk, so at most `STDOUT_CREDITS` chunks are ever in
//!   flight. On smol the session task reads stdout itself, between the
//!   inputs it handles, one [`STDOUT_CHUNK`] at a time. Either way a
//!   session that falls behind (a server writing `yes`, or a flood of log
//!   notifications) stops reading, the pipe fills, and the server blocks in
//!   its own `write`.
//! - **stdin**: a [`Backlog`] counts the bytes queued for the child and
//!   not yet written. Nothing queued is ever dropped. Callers wait for room
//!   ([`CALLER_ROOM`]) before they send another call, bounded by the call
//!   budget; and while the backlog is over [`READ_PAUSE`] (the server is
//!   not reading, yet what it writes keeps causing answers, such as pings)
//!   stdout reading pauses too, so neither direction grows without
//!   bound.
//! - **HTTP bodies**: a [`Backlog`] per session counts the response bytes
//!   handed to the session and not yet handled; an exchange stops reading
//!   its body while more than [`BODY_IN_FLIGHT`] wait, so a server
//!   streaming without pause waits on TCP flow control instead.
//!
//! Only the counting lives here: a [`Backlog`] is a pair of atomics, and
//! the limits are constants. Waiting for room is the executors' own (a
//! thread sleeps, a task awaits a timer), each polling every
//! [`BACKLOG_POLL`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Chunks of stdout in flight between the reader and the session.
pub const STDOUT_CREDITS: usize = 4;

/// The size of one stdout read.
pub const STDOUT_CHUNK: usize = 64 * 1024;

/// Callers wait before sending a call while more than this many bytes wait
/// for the child's stdin.
pub const CALLER_ROOM: usize = 1024 * 1024;

/// The stdout reader pauses while more than this many bytes wait for the
/// child's stdin.
pub const READ_PAUSE: usize = 8 * 1024 * 1024;

/// An HTTP exchange stops reading its body while more than this many
/// bytes of the session's responses wait to be handled.
pub const BODY_IN_FLIGHT: usize = 1024 * 1024;

/// How often a waiter looks at the backlog again. Waiting happens only
/// while a server is not keeping up, so a short poll costs nothing when
/// it is.
pub const BACKLOG_POLL: Duration = Duration::from_millis(2);

/// Bytes handed from one side to the other and not yet taken: queued for a
/// child's stdin and not yet written, or read from HTTP responses and not
/// yet handled by the session.
#[derive(Debug, Default)]
pub struct Backlog {
    bytes: AtomicUsize,
    closed: AtomicBool,
}

impl Backlog {
    /// A backlog that never makes anyone wait: for a caller that consumes
    /// each chunk as it is reported (io-blocking's `run_exchange`), so
    /// there is nothing to count.
    pub fn unlimited() -> Self {
        Self {
            bytes: AtomicUsize::new(0),
            closed: AtomicBool::new(true),
        }
    }

    /// Bytes waiting now.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// Whether the taking side is gone (the stdin writer stopped, the
    /// session ended): nothing will drain, so nobody should wait.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Whether at most `limit` bytes wait (or waiting is pointless).
    pub fn has_room(&self, limit: usize) -> bool {
        self.is_closed() || self.bytes() <= limit
    }

    /// `n` more bytes were handed over.
    pub fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::AcqRel);
    }

    /// `n` of them were taken (written to the child, handled).
    pub fn remove(&self, n: usize) {
        // Saturating: a late decrement never wraps below zero.
        let _ = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(n))
            });
    }

    /// The taking side is gone.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// A new taking side replaces the one that is gone (a stdio child
    /// started again after its process died): nothing waits yet, and
    /// waiting counts again. The callers' backlog stays the same one
    /// across restarts, so a call admitted on it reaches the new child.
    pub fn reopen(&self) {
        self.bytes.store(0, Ordering::Release);
        self.closed.store(false, Ordering::Release);
    }
}

/// Why a call was not sent: the server left its input unread for the
/// whole call budget.
pub fn not_reading_reason(budget: Duration, backlog: &Backlog) -> String {
    format!(
        "the server has not read its input for {} s ({} bytes are still waiting), so the call was not sent; \
         the server may be stuck",
        budget.as_secs_f64(),
        backlog.bytes()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_follows_queued_and_written_bytes() {
        let b = Backlog::default();
        assert!(b.has_room(10));
        b.add(11);
        assert!(!b.has_room(10));
        b.remove(5);
        assert!(b.has_room(10));
        b.remove(100);
        assert_eq!(b.bytes(), 0, "never below zero");
    }

    #[test]
    fn a_closed_backlog_always_has_room() {
        let b = Backlog::default();
        b.add(1000);
        assert!(!b.has_room(10));
        b.close();
        assert!(b.is_closed() && b.has_room(10));
        assert!(Backlog::unlimited().has_room(0));
    }

    #[test]
    fn a_reopened_backlog_counts_afresh() {
        let b = Backlog::default();
        b.add(2000);
        b.close();
        b.reopen();
        assert!(!b.is_closed());
        assert_eq!(b.bytes(), 0, "the old child's queue went with it");
        b.add(11);
        assert!(!b.has_room(10), "waiting counts again");
    }

    #[test]
    fn the_reason_names_the_budget_and_the_waiting_bytes() {
        let b = Backlog::default();
        b.add(2048);
        let reason = not_reading_reason(Duration::from_millis(1500), &b);
        assert!(reason.contains("for 1.5 s"), "{reason}");
        assert!(reason.contains("2048 bytes are still waiting"), "{reason}");
    }
}
