//! The channel a session task answers one caller on: what the driver's
//! `Effect::Reply` and progress carry to the call's future.
//!
//! A general channel is more than a call needs: smol's unbounded channel
//! allocates and zeroes a block of 31 slots for its first message, one per
//! call, and a listener each time the caller waits. A call hears at most
//! a few progress updates and then its end, and has one caller: a locked
//! queue that allocates only when a message arrives while another still
//! waits, and the caller's one waker (kept while it does not change), carry
//! it without that cost. Sending never waits and never fails (an answer for
//! a caller that went away is dropped with the slot); dropping the sender
//! closes the channel once what it sent is taken.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use rho_proto_core::runtime::driving::CallUpdate;

/// The session task's end: one per call in flight.
#[derive(Debug)]
pub(crate) struct ReplySender(Arc<Slot>);

/// The caller's end.
#[derive(Debug)]
pub(crate) struct ReplyReceiver(Arc<Slot>);

/// The sender is gone and nothing it sent is left.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Closed;

#[derive(Debug, Default)]
struct Slot {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    updates: VecDeque<CallUpdate>,
    closed: bool,
    /// The caller, while it waits.
    waker: Option<Waker>,
}

/// A new reply channel.
pub(crate) fn reply() -> (ReplySender, ReplyReceiver) {
    let slot = Arc::new(Slot::default());
    (ReplySender(Arc::clone(&slot)), ReplyReceiver(slot))
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic under this lock leaves a queue that is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `change` and wakes the caller if it waits, outside the lock.
    fn update(&self, change: impl FnOnce(&mut State)) {
        let waker = {
            let mut state = self.lock();
            change(&mut state);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl ReplySender {
    /// Hands `update` to the caller; never waits.
    pub(crate) fn send(&self, update: CallUpdate) {
        self.0.update(|state| state.updates.push_back(update));
    }
}

impl Drop for ReplySender {
    fn drop(&mut self) {
        self.0.update(|state| state.closed = true);
    }
}

impl ReplyReceiver {
    /// The next update, oldest first; [`Closed`] once the sender is gone
    /// and every update was taken. Cancel-safe: dropping the future loses
    /// nothing.
    pub(crate) async fn recv(&self) -> Result<CallUpdate, Closed> {
        std::future::poll_fn(|cx| {
            let mut state = self.0.lock();
            if let Some(update) = state.updates.pop_front() {
                return Poll::Ready(Ok(update));
            }
            if state.closed {
                return Poll::Ready(Err(Closed));
            }
            match &mut state.waker {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                slot => *slot = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::runtime::ToolCallError;

    fn done(text: &str) -> CallUpdate {
        CallUpdate::Done(Err(ToolCallError::NotCallable(text.into())))
    }

    fn text(update: CallUpdate) -> String {
        match update {
            CallUpdate::Done(Err(ToolCallError::NotCallable(t))) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn updates_arrive_in_order_and_the_last_survives_the_close() {
        let (tx, rx) = reply();
        tx.send(done("a"));
        tx.send(done("b"));
        drop(tx);
        smol::block_on(async {
            assert_eq!(text(rx.recv().await.expect("a")), "a");
            assert_eq!(text(rx.recv().await.expect("b")), "b");
            assert_eq!(rx.recv().await.map(|_| ()), Err(Closed));
        });
    }

    #[test]
    fn a_waiting_caller_wakes_for_an_update_sent_from_another_thread() {
        let (tx, rx) = reply();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tx.send(done("late"));
        });
        let got = smol::block_on(rx.recv()).expect("sent");
        assert_eq!(text(got), "late");
        sender.join().expect("sender");
    }

    #[test]
    fn a_caller_hears_the_close_of_a_sender_that_sent_nothing() {
        let (tx, rx) = reply();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(tx);
        });
        assert_eq!(smol::block_on(rx.recv()).map(|_| ()), Err(Closed));
        closer.join().expect("closer");
    }
}
