//! Where a caller hears about its call: a one-call mailbox (progress in
//! order, then the end) that the session fills and the caller's thread
//! waits on. A std channel would do, but it allocates and zeroes a block
//! of slots per call; this is one small allocation.

use std::collections::VecDeque;
use std::sync::mpsc::RecvError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use rho_proto_core::runtime::driving::CallUpdate;
use rho_proto_core::session::Progress;

/// A new mailbox: the session's end and the caller's.
pub(crate) fn mailbox() -> (ReplyTx, ReplyRx) {
    let slot = Arc::new(Slot::default());
    (
        ReplyTx {
            slot: Arc::clone(&slot),
            finished: false,
        },
        ReplyRx(slot),
    )
}

/// The session's end. Dropping it without sending the end tells the
/// caller the session is gone.
#[derive(Debug)]
pub(crate) struct ReplyTx {
    slot: Arc<Slot>,
    /// [`ReplyTx::finish`] already told the caller this end is gone.
    finished: bool,
}

/// The caller's end.
#[derive(Debug)]
pub(crate) struct ReplyRx(Arc<Slot>);

#[derive(Debug, Default)]
struct Slot {
    state: Mutex<State>,
    ready: Condvar,
}

#[derive(Debug, Default)]
struct State {
    progress: VecDeque<Progress>,
    /// The end: [`CallUpdate::Done`] or [`CallUpdate::Answered`].
    done: Option<CallUpdate>,
    /// The session's end is gone.
    dropped: bool,
    /// The caller's cancel was cancelled ([`CancelWake::wake`]) and the
    /// caller has not yet heard it.
    cancel_asked: bool,
    /// The caller sleeps on `ready`. A notify costs a system call even
    /// with nobody waiting, so only a change the caller waits for makes
    /// one: most answers find it not yet asleep, and the close that
    /// follows every answer finds it gone.
    waiting: bool,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `change`, waking the caller if it sleeps.
    fn change(&self, change: impl FnOnce(&mut State)) {
        let mut state = self.lock();
        change(&mut state);
        let wake = std::mem::take(&mut state.waiting);
        drop(state);
        if wake {
            self.ready.notify_one();
        }
    }

    fn put(&self, update: CallUpdate) {
        self.change(|state| state.add(update));
    }
}

impl State {
    fn add(&mut self, update: CallUpdate) {
        match update {
            CallUpdate::Progress(progress) => self.progress.push_back(progress),
            end => self.done = Some(end),
        }
    }
}

impl ReplyTx {
    /// Hands the caller its last update (never blocking on the caller)
    /// and lets go of this end, under one lock: a send and then a drop
    /// would take the caller's lock twice, the second time just as the
    /// caller wakes up to take it.
    pub(crate) fn finish(mut self, update: CallUpdate) {
        self.slot.change(|state| {
            state.add(update);
            state.dropped = true;
        });
        self.finished = true;
    }

    /// A handle that sends progress only: it may outlive this end without
    /// telling the caller anything.
    pub(crate) fn progress_handle(&self) -> ProgressTx {
        ProgressTx(Arc::clone(&self.slot))
    }
}

impl Drop for ReplyTx {
    fn drop(&mut self) {
        if !self.finished {
            self.slot.change(|state| state.dropped = true);
        }
    }
}

/// Sends progress only; dropping it means nothing.
#[derive(Debug)]
pub(crate) struct ProgressTx(Arc<Slot>);

impl ProgressTx {
    /// Hands the caller a progress notification.
    pub(crate) fn send(&self, progress: Progress) {
        self.0.put(CallUpdate::Progress(progress));
    }
}

/// What the caller's wait hears next.
#[derive(Debug)]
pub(crate) enum Next {
    /// An update from the session.
    Update(CallUpdate),
    /// The caller's cancel: the caller tells the session, from its own
    /// thread, and waits on.
    CancelAsked,
}

/// Wakes the caller's wait with [`Next::CancelAsked`]: what a cancel's
/// hook does, on the cancelling thread, taking no lock but the
/// mailbox's (the session's lock is taken by the caller, as for every
/// command it sends).
#[derive(Debug)]
pub(crate) struct CancelWake(Arc<Slot>);

impl CancelWake {
    pub(crate) fn wake(&self) {
        self.0.change(|state| state.cancel_asked = true);
    }
}

impl ReplyRx {
    /// The handle that wakes this wait with [`Next::CancelAsked`].
    pub(crate) fn cancel_wake(&self) -> CancelWake {
        CancelWake(Arc::clone(&self.0))
    }

    /// The next update or the cancel, whichever comes first (the cancel
    /// once); an error when the session's end is gone without an end.
    pub(crate) fn next(&self) -> Result<Next, RecvError> {
        let mut state = self.0.lock();
        loop {
            if std::mem::take(&mut state.cancel_asked) {
                return Ok(Next::CancelAsked);
            }
            if let Some(update) = take(&mut state) {
                return Ok(Next::Update(update));
            }
            if state.dropped {
                return Err(RecvError);
            }
            state.waiting = true;
            state = self
                .0
                .ready
                .wait(state)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

/// Progress first, in order, then the end.
fn take(state: &mut State) -> Option<CallUpdate> {
    if let Some(progress) = state.progress.pop_front() {
        return Some(CallUpdate::Progress(progress));
    }
    state.done.take()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::runtime::ToolCallError;

    impl ReplyRx {
        /// The next update, no cancel being asked.
        fn recv(&self) -> Result<CallUpdate, RecvError> {
            match self.next()? {
                Next::Update(update) => Ok(update),
                Next::CancelAsked => panic!("no cancel was asked"),
            }
        }
    }

    #[test]
    fn progress_comes_in_order_then_the_end_and_a_dropped_end_is_reported() {
        let (tx, rx) = mailbox();
        let progress = |n: f64| Progress {
            progress: n,
            total: None,
            message: None,
        };
        tx.progress_handle().send(progress(1.0));
        tx.progress_handle().send(progress(2.0));
        tx.finish(CallUpdate::Done(Err(ToolCallError::UnknownTool(
            "x".into(),
        ))));
        let mut seen = Vec::new();
        loop {
            match rx.recv() {
                Ok(CallUpdate::Progress(p)) => seen.push(p.progress),
                Ok(CallUpdate::Done(result)) => {
                    assert!(matches!(result, Err(ToolCallError::UnknownTool(t)) if t == "x"));
                    break;
                }
                Ok(CallUpdate::Answered(_)) => panic!("a call's end is Done"),
                Err(e) => panic!("the end was sent: {e}"),
            }
        }
        assert_eq!(seen, [1.0, 2.0]);
        assert!(matches!(rx.recv(), Err(RecvError)), "nothing after the end");
        let (tx, rx) = mailbox();
        drop(tx);
        assert!(
            matches!(rx.recv(), Err(RecvError)),
            "a dropped sender ends the wait"
        );
    }

    #[test]
    fn a_cancel_wakes_the_wait_once_before_any_update() {
        let (tx, rx) = mailbox();
        let wake = rx.cancel_wake();
        let waiter = std::thread::spawn(move || {
            // Blocks until the wake: nothing else arrives.
            let first = rx.next().expect("the wake");
            tx.progress_handle().send(Progress {
                progress: 1.0,
                total: None,
                message: None,
            });
            let second = rx.next().expect("the progress");
            (first, second)
        });
        wake.wake();
        let (first, second) = waiter.join().expect("the waiter ends");
        assert!(matches!(first, Next::CancelAsked), "{first:?}");
        assert!(
            matches!(second, Next::Update(CallUpdate::Progress(_))),
            "{second:?}"
        );
    }
}
