//! Running the executor from a host thread: [`block_on`], `smol::block_on`
//! without a wasted reactor poll per call.
//!
//! async-io's `block_on` polls the reactor without waiting (a whole
//! `epoll` round: re-arm its timerfd and notifier, wait with a zero
//! timeout) whenever the future it drives was woken while it was being
//! polled. Driving an executor, that happens on every call: the caller's
//! command schedules the session task, which wakes the executor's
//! sleeping runner, which wakes `block_on`, although the runner is about
//! to be polled in the same turn anyway. [`block_on`] hands `block_on` a
//! waker that records such a wake instead of forwarding it, and polls
//! again itself when one came: a wake from another thread, or from a
//! timer, still reaches `block_on` at once, and after a bounded number of
//! turns in a row the wake is forwarded so the reactor still runs when a
//! task keeps waking itself.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use smol::Executor;

/// Turns a future may be polled again for its own wakes before the wake
/// is forwarded (and the reactor gets its turn).
const SELF_WAKE_TURNS: u32 = 16;

/// Runs `future` to completion on `executor` from this thread, driving
/// async-io's reactor: what `smol::block_on(executor.run(future))` does,
/// minus the reactor poll a wake from within the executor costs.
pub fn block_on<T>(executor: &Executor<'_>, future: impl Future<Output = T>) -> T {
    smol::block_on(Quiet::new(executor.run(future)))
}

/// [`block_on`] for one short wait from a host thread (a call through a
/// synchronous face): the executor's tasks are run a tick at a time while
/// `future` is pending, with no runner. `executor.run` sets one up for
/// every wait (a local queue of 512 slots, registered and unregistered
/// under the executor's lock), which a call pays again each time. After
/// each task `future` is polled again, so a task that keeps itself
/// runnable cannot starve it.
pub fn block_on_ticking<T>(executor: &Executor<'_>, future: impl Future<Output = T>) -> T {
    let drive = async {
        loop {
            executor.tick().await;
            smol::future::yield_now().await;
        }
    };
    smol::block_on(Quiet::new(smol::future::or(future, drive)))
}

/// Polls `inner` with a waker that swallows wakes made during the poll.
struct Quiet<F> {
    inner: std::pin::Pin<Box<F>>,
    wakes: Arc<Wakes>,
    waker: Waker,
}

#[derive(Default)]
struct Wakes {
    /// Set while `inner` is being polled (on the thread polling it).
    polling: AtomicBool,
    /// A wake arrived while `polling`.
    woken: AtomicBool,
    /// `block_on`'s own waker, for wakes outside a poll.
    outer: Mutex<Option<Waker>>,
}

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.polling.load(Ordering::SeqCst) {
            self.woken.store(true, Ordering::SeqCst);
            // Polling may have just ended: then this wake is the outer
            // waker's, or it would be lost.
            if self.polling.load(Ordering::SeqCst) {
                return;
            }
        }
        let outer = match self.outer.lock() {
            Ok(outer) => outer.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        if let Some(outer) = outer {
            outer.wake();
        }
    }
}

impl<F> Quiet<F> {
    fn new(inner: F) -> Self {
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        Self {
            inner: Box::pin(inner),
            wakes,
            waker,
        }
    }
}

impl<F: Future> Future for Quiet<F> {
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        {
            let mut outer = match this.wakes.outer.lock() {
                Ok(outer) => outer,
                Err(poisoned) => poisoned.into_inner(),
            };
            if !outer.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *outer = Some(cx.waker().clone());
            }
        }
        let mut inner_cx = Context::from_waker(&this.waker);
        for _ in 0..SELF_WAKE_TURNS {
            this.wakes.woken.store(false, Ordering::SeqCst);
            this.wakes.polling.store(true, Ordering::SeqCst);
            let polled = this.inner.as_mut().poll(&mut inner_cx);
            this.wakes.polling.store(false, Ordering::SeqCst);
            if polled.is_ready() {
                return polled;
            }
            if !this.wakes.woken.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
        }
        // Still waking itself: let `block_on` poll the reactor first.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_future_woken_from_another_thread_completes() {
        let executor = Executor::new();
        let (tx, rx) = smol::channel::bounded::<u32>(1);
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            tx.send_blocking(7).expect("send");
        });
        assert_eq!(block_on(&executor, async { rx.recv().await }), Ok(7));
        sender.join().expect("sender");
    }

    /// A task on `executor` that sends back every number it is sent: the
    /// sender to it, the receiver of its answers, and the task.
    fn echo_task(
        executor: &Executor<'static>,
    ) -> (
        smol::channel::Sender<u32>,
        smol::channel::Receiver<u32>,
        smol::Task<()>,
    ) {
        let (ping_tx, ping_rx) = smol::channel::unbounded::<u32>();
        let (pong_tx, pong_rx) = smol::channel::unbounded::<u32>();
        let echo = executor.spawn(async move {
            while let Ok(n) = ping_rx.recv().await {
                if pong_tx.send(n).await.is_err() {
                    return;
                }
            }
        });
        (ping_tx, pong_rx, echo)
    }

    #[test]
    fn tasks_that_wake_each_other_run_to_the_end() {
        let executor = Executor::new();
        let (ping_tx, pong_rx, echo) = echo_task(&executor);
        let total = block_on(&executor, async {
            let mut total = 0;
            for n in 0..1000 {
                ping_tx.send(n).await.expect("ping");
                total += pong_rx.recv().await.expect("pong");
            }
            total
        });
        assert_eq!(total, (0..1000).sum::<u32>());
        drop(echo);
    }

    #[test]
    fn a_ticking_wait_runs_the_tasks_its_future_waits_for() {
        let executor = Executor::new();
        let (ping_tx, pong_rx, echo) = echo_task(&executor);
        let mut total = 0;
        for n in 0..200 {
            total += block_on_ticking(&executor, async {
                ping_tx.send(n).await.expect("ping");
                pong_rx.recv().await.expect("pong")
            });
        }
        assert_eq!(total, (0..200).sum::<u32>());
        drop(echo);
    }

    #[test]
    fn a_task_that_keeps_itself_runnable_does_not_starve_a_ticking_wait() {
        let executor = Executor::new();
        let busy = executor.spawn(async {
            loop {
                smol::future::yield_now().await;
            }
        });
        let (tx, rx) = smol::channel::bounded::<u32>(1);
        let sender = executor.spawn(async move { tx.send(3).await });
        assert_eq!(
            block_on_ticking(&executor, async { rx.recv().await }),
            Ok(3)
        );
        drop((busy, sender));
    }

    #[test]
    fn a_task_that_keeps_waking_itself_does_not_starve_timers() {
        let executor = Executor::new();
        // Yields forever: always runnable, always waking the executor.
        let busy = executor.spawn(async {
            loop {
                smol::future::yield_now().await;
            }
        });
        let began = Instant::now();
        block_on(&executor, async {
            smol::Timer::after(Duration::from_millis(30)).await;
        });
        assert!(began.elapsed() < Duration::from_secs(5), "the timer fired");
        drop(busy);
    }
}
