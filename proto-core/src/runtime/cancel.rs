//! [`Cancel`]: the one way to stop a call, a request, a startup or a
//! question while it waits.
//!
//! A token shared by clones. Whoever holds one may [`Cancel::cancel`] it
//! from any thread, and whoever waits on it is woken at once, never by a
//! poll: an async waiter through its [`Waker`] ([`Cancel::cancelled`]), a
//! thread through a hook it registered ([`Cancel::on_cancel`]), which
//! usually sends into the channel that thread is blocked on. A token
//! stays cancelled once cancelled; the next call takes a new one.
//!
//! It is a synchronisation primitive, not IO, so it lives in the core
//! beside the runtime vocabulary both executors speak.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

/// A cancellation token: clonable, cancelled once by any clone, waking
/// every waiter at once.
///
/// ```
/// use rho_proto_core::runtime::Cancel;
///
/// let cancel = Cancel::new();
/// let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let hook = cancel.on_cancel({
///     let seen = seen.clone();
///     move || seen.store(true, std::sync::atomic::Ordering::SeqCst)
/// });
/// cancel.clone().cancel();
/// assert!(cancel.is_cancelled() && seen.load(std::sync::atomic::Ordering::SeqCst));
/// drop(hook);
/// ```
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    waiters: Mutex<Waiters>,
}

/// A hook run on the cancelling thread.
type Hook = Box<dyn FnOnce() + Send>;

/// Who waits, each under the key that removes it again.
#[derive(Default)]
struct Waiters {
    next: u64,
    wakers: Vec<(u64, Waker)>,
    hooks: Vec<(u64, Hook)>,
}

impl Waiters {
    fn key(&mut self) -> u64 {
        self.next += 1;
        self.next
    }
}

impl Cancel {
    /// A token nobody has cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: every clone reads cancelled from now on, every pending
    /// [`Cancel::cancelled`] future is woken and every hook runs, here, on
    /// this thread. Cancelling again does nothing.
    pub fn cancel(&self) {
        if self.inner.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        let (wakers, hooks) = {
            let mut waiters = self.inner.lock();
            (
                std::mem::take(&mut waiters.wakers),
                std::mem::take(&mut waiters.hooks),
            )
        };
        for (_, waker) in wakers {
            waker.wake();
        }
        for (_, hook) in hooks {
            hook();
        }
    }

    /// Whether `other` is a clone of this token (cancelling one cancels
    /// the other).
    pub fn same_as(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether any clone was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// A future that completes once the token is cancelled (at once if it
    /// already is).
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            cancel: self.clone(),
            key: None,
        }
    }

    /// Runs `hook` once when the token is cancelled, on the cancelling
    /// thread (at once, here, if it already is), unless the returned guard
    /// is dropped first. A thread blocked on a channel registers a hook
    /// that sends into it, so the cancel wakes it without a poll. The hook
    /// must not wait on whoever cancels.
    #[must_use = "dropping the guard removes the hook"]
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> OnCancel {
        let key = {
            let mut waiters = self.inner.lock();
            // Checked under the lock: a `cancel` that set the flag has
            // either taken the hooks already (this one is not among them)
            // or will take them after this one is in.
            if !self.is_cancelled() {
                let key = waiters.key();
                waiters.hooks.push((key, Box::new(hook)));
                Some(key)
            } else {
                drop(waiters);
                hook();
                None
            }
        };
        OnCancel {
            cancel: self.clone(),
            key,
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Waiters> {
        // Nothing panics while holding it (hooks and wakers run outside).
        self.waiters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Completes once its [`Cancel`] is cancelled ([`Cancel::cancelled`]).
#[must_use = "futures do nothing unless polled"]
pub struct Cancelled {
    cancel: Cancel,
    /// Its waker's key, once registered.
    key: Option<u64>,
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.cancel.is_cancelled() {
            return Poll::Ready(());
        }
        let mut waiters = this.cancel.inner.lock();
        // Under the lock, as in `on_cancel`: no wake-up is lost.
        if this.cancel.is_cancelled() {
            return Poll::Ready(());
        }
        let registered = this
            .key
            .and_then(|key| waiters.wakers.iter_mut().find(|(k, _)| *k == key));
        match registered {
            Some((_, waker)) => {
                if !waker.will_wake(cx.waker()) {
                    waker.clone_from(cx.waker());
                }
            }
            None => {
                let key = waiters.key();
                waiters.wakers.push((key, cx.waker().clone()));
                this.key = Some(key);
            }
        }
        Poll::Pending
    }
}

impl Drop for Cancelled {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.cancel.inner.lock().wakers.retain(|(k, _)| *k != key);
        }
    }
}

impl fmt::Debug for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cancelled")
            .field("cancel", &self.cancel)
            .finish()
    }
}

/// Keeps a hook registered with [`Cancel::on_cancel`]; dropping it removes
/// the hook if it has not run.
#[must_use = "dropping the guard removes the hook"]
pub struct OnCancel {
    cancel: Cancel,
    key: Option<u64>,
}

impl Drop for OnCancel {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            // Taken out under the lock, dropped outside it: a hook's
            // captures may take locks of their own when dropped.
            let removed = {
                let mut waiters = self.cancel.inner.lock();
                let at = waiters.hooks.iter().position(|(k, _)| *k == key);
                at.map(|at| waiters.hooks.swap_remove(at))
            };
            drop(removed);
        }
    }
}

impl fmt::Debug for OnCancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnCancel")
            .field("cancel", &self.cancel)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;
    use std::task::Wake;
    use std::time::Duration;

    /// Counts its wake-ups.
    struct Counter(AtomicUsize);

    impl Wake for Counter {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(future: &mut Cancelled, waker: &Waker) -> Poll<()> {
        Pin::new(future).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_cancel_wakes_a_pending_future_once_and_then_it_is_ready() {
        let cancel = Cancel::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        let mut future = cancel.cancelled();
        assert!(poll(&mut future, &waker).is_pending());
        assert!(
            poll(&mut future, &waker).is_pending(),
            "a second poll re-registers"
        );
        cancel.clone().cancel();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert!(poll(&mut future, &waker).is_ready());
        assert!(cancel.cancelled().now_or_pending().is_ready());
    }

    #[test]
    fn a_dropped_future_leaves_no_waker_behind() {
        let cancel = Cancel::new();
        let counter = Arc::new(Counter(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&counter));
        let mut future = cancel.cancelled();
        assert!(poll(&mut future, &waker).is_pending());
        drop(future);
        assert!(cancel.inner.lock().wakers.is_empty());
        cancel.cancel();
        assert_eq!(counter.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_hook_wakes_a_blocked_thread_at_once() {
        let cancel = Cancel::new();
        let (tx, rx) = mpsc::channel();
        let _hook = cancel.on_cancel(move || {
            let _ = tx.send(());
        });
        let canceller = {
            let cancel = cancel.clone();
            std::thread::spawn(move || cancel.cancel())
        };
        // A recv that only a hook can end: no timeout, no poll.
        rx.recv().expect("the hook sends");
        canceller.join().expect("the canceller ends");
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn a_hook_registered_after_the_cancel_runs_at_once() {
        let cancel = Cancel::new();
        cancel.cancel();
        let (tx, rx) = mpsc::channel();
        let _hook = cancel.on_cancel(move || {
            let _ = tx.send(());
        });
        assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(()));
    }

    #[test]
    fn a_dropped_hook_never_runs_and_a_second_cancel_runs_nothing() {
        let cancel = Cancel::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let hook = cancel.on_cancel({
            let runs = Arc::clone(&runs);
            move || {
                runs.fetch_add(1, Ordering::SeqCst);
            }
        });
        drop(hook);
        let _kept = cancel.on_cancel({
            let runs = Arc::clone(&runs);
            move || {
                runs.fetch_add(10, Ordering::SeqCst);
            }
        });
        cancel.cancel();
        cancel.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 10);
    }

    trait NowOrPending {
        fn now_or_pending(self) -> Poll<()>;
    }

    impl NowOrPending for Cancelled {
        fn now_or_pending(mut self) -> Poll<()> {
            poll(&mut self, Waker::noop())
        }
    }
}
