//! A session task's inbox: its HTTP exchanges' inputs, the host's answers
//! to questions, and the commands that come before the session is set up
//! or that end it, from any number of senders, to the one task that waits
//! for the session (calls go into the session directly:
//! `crate::driver::Session::command`). With one sender it is also a
//! call's reply channel ([`crate::reply`]).
//!
//! A general channel is more than this needs, and costs on every call:
//! smol's unbounded channel allocates a listener each time its receiver
//! waits, and notifies through it. Here the receiver keeps one waker,
//! replaced only when it changes; a send is a push under a lock and, when
//! the task sleeps, one wake. Nothing is ever refused for being full (what
//! the task takes in is bounded where it is made: by callers, by the
//! exchanges' own limits); a send fails only once the inbox is gone.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

/// A new inbox and its first sender.
pub(crate) fn inbox<T>() -> (Sender<T>, Inbox<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            waker: None,
            senders: 1,
            open: true,
        }),
    });
    (
        Sender {
            shared: Arc::clone(&shared),
        },
        Inbox { shared },
    )
}

struct Shared<T> {
    state: Mutex<State<T>>,
}

struct State<T> {
    items: VecDeque<T>,
    /// The receiving task, while it waits for an item.
    waker: Option<Waker>,
    /// Senders alive.
    senders: usize,
    /// The inbox is alive: sends are taken.
    open: bool,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic under this lock leaves a queue that is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Sends into an [`Inbox`]; clone it for each party that sends.
pub(crate) struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// The item of a send the inbox no longer takes (it was dropped).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Gone<T>(pub(crate) T);

impl<T> Sender<T> {
    /// Queues `item` and wakes the receiver if it waits. Never waits.
    pub(crate) fn send(&self, item: T) -> Result<(), Gone<T>> {
        let waker = {
            let mut state = self.shared.lock();
            if !state.open {
                return Err(Gone(item));
            }
            state.items.push_back(item);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let waker = {
            let mut state = self.shared.lock();
            state.senders -= 1;
            if state.senders > 0 {
                return;
            }
            state.waker.take()
        };
        // The last sender gone: a waiting receiver hears the inbox closed.
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// The receiving end: one task takes what every [`Sender`] sent, in the
/// order sent.
pub(crate) struct Inbox<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Inbox<T> {
    /// The next item; `None` once it is empty and every sender is gone.
    /// Pending otherwise, woken by the next send.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let mut state = self.shared.lock();
        if let Some(item) = state.items.pop_front() {
            return Poll::Ready(Some(item));
        }
        if state.senders == 0 {
            return Poll::Ready(None);
        }
        match &mut state.waker {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// Waits for the next item; `None` once every sender is gone.
    #[cfg(test)]
    pub(crate) async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Every sender is gone and nothing is left to take.
    pub(crate) fn is_done(&self) -> bool {
        let state = self.shared.lock();
        state.senders == 0 && state.items.is_empty()
    }
}

impl<T> Drop for Inbox<T> {
    fn drop(&mut self) {
        // What was queued goes with the inbox (reply senders among it tell
        // their callers the session is gone), outside the lock.
        let items = {
            let mut state = self.shared.lock();
            state.open = false;
            state.waker = None;
            std::mem::take(&mut state.items)
        };
        drop(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<Count>, Waker) {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        (Arc::clone(&count), Waker::from(count))
    }

    #[test]
    fn items_come_in_the_order_sent_from_every_sender() {
        let (tx, mut rx) = inbox();
        let other = tx.clone();
        tx.send(1).expect("open");
        other.send(2).expect("open");
        tx.send(3).expect("open");
        smol::block_on(async {
            assert_eq!(rx.recv().await, Some(1));
            assert_eq!(rx.recv().await, Some(2));
            assert_eq!(rx.recv().await, Some(3));
        });
    }

    #[test]
    fn a_waiting_receiver_is_woken_once_per_send_and_its_waker_kept() {
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let (tx, mut rx) = inbox::<u32>();
        assert_eq!(rx.poll_recv(&mut cx), Poll::Pending);
        // Polled again with the same waker: nothing new to wake.
        assert_eq!(rx.poll_recv(&mut cx), Poll::Pending);
        tx.send(7).expect("open");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // Not waiting: a send wakes nobody.
        tx.send(8).expect("open");
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(7)));
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(8)));
    }

    #[test]
    fn the_last_sender_gone_ends_the_inbox_after_what_is_queued() {
        let (count, waker) = counting();
        let mut cx = Context::from_waker(&waker);
        let (tx, mut rx) = inbox::<u32>();
        let other = tx.clone();
        other.send(1).expect("open");
        drop(other);
        assert!(!rx.is_done(), "a sender and an item remain");
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(Some(1)));
        assert_eq!(rx.poll_recv(&mut cx), Poll::Pending);
        drop(tx);
        assert_eq!(
            count.0.load(Ordering::SeqCst),
            1,
            "the waiting receiver heard"
        );
        assert!(rx.is_done());
        assert_eq!(rx.poll_recv(&mut cx), Poll::Ready(None));
    }

    #[test]
    fn sends_after_the_inbox_is_gone_are_handed_back_and_queued_items_dropped() {
        let (tx, rx) = inbox::<Arc<()>>();
        let queued = Arc::new(());
        tx.send(Arc::clone(&queued)).expect("open");
        drop(rx);
        assert_eq!(Arc::strong_count(&queued), 1, "dropped with the inbox");
        let back = Arc::new(());
        assert!(matches!(tx.send(Arc::clone(&back)), Err(Gone(_))));
        assert_eq!(Arc::strong_count(&back), 1, "handed back, then dropped");
    }
}
