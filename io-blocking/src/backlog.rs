//! Waiting for room in a [`Backlog`] on threads: the blocking half of
//! `rho_proto_core::runtime::backlog`, whose counters and limits both executors
//! share (the smol executor awaits a timer instead of sleeping).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rho_proto_core::runtime::backlog::{BACKLOG_POLL, Backlog};

/// Blocks until at most `limit` bytes wait in `backlog`, it closes,
/// `until` passes or `cancel` is set; returns which.
pub(crate) fn wait_for_room(
    backlog: &Backlog,
    limit: usize,
    until: Instant,
    cancel: Option<&AtomicBool>,
) -> Room {
    loop {
        if backlog.has_room(limit) {
            return Room::Ready;
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Room::Cancelled;
        }
        if Instant::now() >= until {
            return Room::TimedOut;
        }
        std::thread::sleep(BACKLOG_POLL);
    }
}

/// How a wait for room ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// There is room (or waiting is pointless).
    Ready,
    /// The deadline passed first.
    TimedOut,
    /// The caller gave up first.
    Cancelled,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_wait_ends_on_the_deadline_the_cancel_flag_or_the_close() {
        let b = Backlog::default();
        b.add(1000);
        assert_eq!(wait_for_room(&b, 10, Instant::now(), None), Room::TimedOut);
        let cancel = AtomicBool::new(true);
        let later = Instant::now() + Duration::from_secs(60);
        assert_eq!(wait_for_room(&b, 10, later, Some(&cancel)), Room::Cancelled);
        b.close();
        assert_eq!(wait_for_room(&b, 10, later, None), Room::Ready);
    }
}
