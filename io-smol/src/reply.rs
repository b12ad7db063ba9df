//! The channel a session task answers one caller on: what the driver's
//! `Effect::Reply` and progress carry to the call's future.
//!
//! A general channel is more than a call needs: smol's unbounded channel
//! allocates and zeroes a block of 31 slots for its first message, one per
//! call, and a listener each time the caller waits. A call hears at most
//! a few progress updates and then its end, and has one caller: it is an
//! [`inbox`](crate::inbox) with one sender, which keeps the caller's waker
//! and allocates only when a message arrives while another still waits.
//! Sending never waits and never fails (an answer for a caller that went
//! away is dropped); dropping the sender closes the channel once what it
//! sent is taken.

use rho_proto_core::runtime::driving::CallUpdate;

use crate::inbox::{self, Inbox};

/// The session task's end: one per call in flight.
pub(crate) struct ReplySender(inbox::Sender<CallUpdate>);

/// The caller's end.
pub(crate) struct ReplyReceiver(Inbox<CallUpdate>);

/// The sender is gone and nothing it sent is left.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Closed;

/// A new reply channel.
pub(crate) fn reply() -> (ReplySender, ReplyReceiver) {
    let (tx, rx) = inbox::inbox();
    (ReplySender(tx), ReplyReceiver(rx))
}

impl std::fmt::Debug for ReplySender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplySender")
    }
}

impl ReplySender {
    /// Hands `update` to the caller; never waits.
    pub(crate) fn send(&self, update: CallUpdate) {
        // A caller that went away takes nothing more.
        let _ = self.0.send(update);
    }
}

impl ReplyReceiver {
    /// The next update, oldest first; [`Closed`] once the sender is gone
    /// and every update was taken. Cancel-safe: dropping the future loses
    /// nothing.
    pub(crate) async fn recv(&mut self) -> Result<CallUpdate, Closed> {
        std::future::poll_fn(|cx| self.0.poll_recv(cx))
            .await
            .ok_or(Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::runtime::ToolCallError;

    fn done(text: &str) -> CallUpdate {
        CallUpdate::Done(Err(ToolCallError::UnknownTool(text.into())))
    }

    fn text(update: CallUpdate) -> String {
        match update {
            CallUpdate::Done(Err(ToolCallError::UnknownTool(t))) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn updates_arrive_in_order_and_the_last_survives_the_close() {
        let (tx, mut rx) = reply();
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
        let (tx, mut rx) = reply();
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
        let (tx, mut rx) = reply();
        let closer = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(tx);
        });
        assert_eq!(smol::block_on(rx.recv()).map(|_| ()), Err(Closed));
        closer.join().expect("closer");
    }
}
