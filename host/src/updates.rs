//! Updates of subscribed resources, heard when the host likes:
//! [`resource_update_channel`] gives a sink for
//! `HostServices::resource_updates` and a [`ResourceUpdates`] receiver
//! that yields each change as a [`ResourceUpdated`] value, in the style
//! of [`crate::question_channel`]: the sync face blocks on
//! [`ResourceUpdates::next_blocking`], the async face awaits
//! [`ResourceUpdates::next`], on any executor.
//!
//! Each says what became of the resource ([`WatchNotice`]): it changed
//! (read it again); its server was started again and subscribed anew
//! (read it again: a change while the server was down was not heard of);
//! or the watch ended without the host asking (the server ended for good,
//! its new session refused the subscription, or its stream ended), with
//! the reason: nothing more comes for it until the host subscribes again.
//!
//! Updates are coalesced while they wait
//! ([`rho_proto_core::features::resource_subscriptions::UpdateQueue`]):
//! a server that says a resource changed a hundred times before the host
//! looks is read once. The queue is bounded; each session passes on only
//! updates of resources the host subscribed to, at most
//! [`MAX_SUBSCRIPTIONS_PER_SERVER`] per server, so the bound is reached
//! only by a host with very many servers, and what passes it is counted
//! ([`ResourceUpdates::dropped`]).
//!
//! The URI is the one the host subscribed to; a server's strings are
//! still the host's to sanitize before a terminal.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

pub use rho_proto_core::features::resource_subscriptions::MAX_PER_SERVER as MAX_SUBSCRIPTIONS_PER_SERVER;
use rho_proto_core::features::resource_subscriptions::{UpdateQueue, WatchNotice};
use rho_proto_core::host::ResourceSink;
use rho_proto_core::runtime::Cancel;

/// News of one resource subscribed to: read it again when convenient, or
/// (when [`ResourceUpdated::notice`] says it ended) know that nothing more
/// comes for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceUpdated {
    /// The server identity.
    pub server: String,
    /// The resource, as subscribed to.
    pub uri: String,
    /// What became of it.
    pub notice: WatchNotice,
}

impl ResourceUpdated {
    /// Whether the watch of the resource ended (no more news of it comes).
    pub fn ended(&self) -> bool {
        matches!(self.notice, WatchNotice::Ended(_))
    }
}

struct Shared {
    queue: Mutex<UpdateQueue>,
}

impl Shared {
    fn pop(&self) -> Option<ResourceUpdated> {
        let mut queue = match self.queue.lock() {
            Ok(queue) => queue,
            Err(poisoned) => poisoned.into_inner(),
        };
        queue.pop().map(|(server, uri, notice)| ResourceUpdated {
            server,
            uri,
            notice,
        })
    }
}

/// The sink a runtime's sessions report to: queues, coalesces, rings.
struct ChannelSink {
    shared: Arc<Shared>,
    /// A doorbell, not a queue: one pending ring is enough to wake the
    /// reader, which then drains the coalesced queue.
    bell: smol::channel::Sender<()>,
}

impl ResourceSink for ChannelSink {
    fn notice(&self, server: &str, uri: &str, notice: WatchNotice) {
        let new = match self.shared.queue.lock() {
            Ok(mut queue) => queue.push(server, uri, notice),
            Err(poisoned) => poisoned.into_inner().push(server, uri, notice),
        };
        if new {
            // Full means a ring is already pending: the reader will look.
            let _ = self.bell.try_send(());
        }
    }
}

/// A sink for `HostServices::resource_updates`, and the receiver the host
/// reads updates from.
pub fn resource_update_channel() -> (Arc<dyn ResourceSink>, ResourceUpdates) {
    let shared = Arc::new(Shared {
        queue: Mutex::new(UpdateQueue::default()),
    });
    let (bell, rung) = smol::channel::bounded(1);
    (
        Arc::new(ChannelSink {
            shared: Arc::clone(&shared),
            bell,
        }),
        ResourceUpdates { shared, rung },
    )
}

/// Where the host takes resource updates from, as they come (coalesced).
pub struct ResourceUpdates {
    shared: Arc<Shared>,
    rung: smol::channel::Receiver<()>,
}

impl ResourceUpdates {
    /// The next update, waiting for one; `None` once the runtime that
    /// reports them is gone and none is left.
    pub async fn next(&self) -> Option<ResourceUpdated> {
        loop {
            if let Some(update) = self.shared.pop() {
                return Some(update);
            }
            if self.rung.recv().await.is_err() {
                return self.shared.pop();
            }
        }
    }

    /// The next update, blocking this thread until one comes; `None` once
    /// the runtime that reports them is gone and none is left.
    pub fn next_blocking(&self) -> Option<ResourceUpdated> {
        smol::block_on(self.next())
    }

    /// [`ResourceUpdates::next_blocking`], ended early by `cancel`: `None`
    /// at once when it is cancelled (a stop signal, the host giving up).
    pub fn next_blocking_until(&self, cancel: &Cancel) -> Option<ResourceUpdated> {
        smol::block_on(smol::future::or(self.next(), async {
            cancel.cancelled().await;
            None
        }))
    }

    /// An update already waiting, if any.
    pub fn try_next(&self) -> Option<ResourceUpdated> {
        self.shared.pop()
    }

    /// How many updates were dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        match self.shared.queue.lock() {
            Ok(queue) => queue.dropped(),
            Err(poisoned) => poisoned.into_inner().dropped(),
        }
    }
}

/// What a [`crate::Host`] subscribed to, by server: the host's intent,
/// kept across a [`crate::Host::reconnect`], which starts a new session
/// (and a new driver) for the server. A restart within a session's driver
/// renews the subscriptions there; a reconnect renews them from here.
#[derive(Debug, Default)]
pub(crate) struct Watched(Mutex<BTreeMap<String, BTreeSet<String>>>);

impl Watched {
    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<String, BTreeSet<String>>) -> T) -> T {
        match self.0.lock() {
            Ok(mut map) => f(&mut map),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// `uri` of `server` is subscribed to.
    pub(crate) fn insert(&self, server: &str, uri: &str) {
        self.with(|map| {
            map.entry(server.to_owned())
                .or_default()
                .insert(uri.to_owned())
        });
    }

    /// `uri` of `server` is let go.
    pub(crate) fn remove(&self, server: &str, uri: &str) {
        self.with(|map| {
            if let Some(uris) = map.get_mut(server) {
                uris.remove(uri);
            }
        });
    }

    /// Takes what `server` was subscribed to, in order.
    pub(crate) fn take(&self, server: &str) -> Vec<String> {
        self.with(|map| map.remove(server))
            .map(|uris| uris.into_iter().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_of_one_resource_before_the_host_looks_come_once() {
        let (sink, updates) = resource_update_channel();
        for _ in 0..50 {
            sink.notice("s", "a://1", WatchNotice::Updated);
        }
        sink.notice("s", "a://2", WatchNotice::Updated);
        let first = updates.next_blocking().expect("an update");
        assert_eq!(first.uri, "a://1");
        assert_eq!(updates.try_next().map(|u| u.uri).as_deref(), Some("a://2"));
        assert_eq!(updates.try_next(), None);
    }

    #[test]
    fn the_receiver_ends_once_the_sink_is_gone() {
        let (sink, updates) = resource_update_channel();
        sink.notice("s", "a://1", WatchNotice::Updated);
        drop(sink);
        assert_eq!(
            updates.next_blocking(),
            Some(ResourceUpdated {
                server: "s".into(),
                uri: "a://1".into(),
                notice: WatchNotice::Updated,
            })
        );
        assert_eq!(updates.next_blocking(), None);
    }

    #[test]
    fn a_cancel_ends_the_wait_for_an_update() {
        let (_sink, updates) = resource_update_channel();
        let cancel = Cancel::new();
        let waiter = {
            let cancel = cancel.clone();
            std::thread::spawn(move || updates.next_blocking_until(&cancel))
        };
        cancel.cancel();
        assert_eq!(waiter.join().expect("waiter"), None);
    }

    #[test]
    fn an_update_from_another_thread_wakes_a_waiting_reader() {
        let (sink, updates) = resource_update_channel();
        let reader = std::thread::spawn(move || updates.next_blocking());
        sink.notice("s", "a://1", WatchNotice::Updated);
        let got = reader.join().expect("reader");
        assert_eq!(got.map(|u| u.uri).as_deref(), Some("a://1"));
    }
}
