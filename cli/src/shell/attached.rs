//! Attachments kept fresh while they are on the line: a resource attached
//! with `@` is subscribed to when its server offers `resources.subscribe`
//! (before its first read, so a change between the two is not missed), and
//! each change the server tells of reads it again before the line can be
//! sent: the attachment shows `· reading` again, and Enter waits for the
//! new body, so the message carries the resource as it is, not as it was
//! when it was picked. Changes that come while a read runs are one more
//! read once it answers ([`ResourceRead::changed`]).
//!
//! A resource attached twice is subscribed to once; the subscription is let
//! go when its last attachment leaves the line (Backspace, a failed read,
//! the line sent or refused), on a thread of its own so no key waits for
//! the server, and whatever is still held when the shell exits ends with
//! the host's shutdown (a 2025 server is told each). A subscription that
//! ends without the shell asking (its server ended for good, or did not
//! take it again after a restart) is said above the line; the attachment
//! keeps what was read.
//!
//! [`ResourceRead::changed`]: rho_proto_core::features::resources::ResourceRead::changed

use rho_host::{CallError, CallOptions, Cancel, ResourceUpdated, ToolCallError, WatchNotice};
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::resources::{ReadResourceParams, ReadState};
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::text::terminal::sanitize_line;

use super::screen::Screen;
use super::{Shell, cancelled, lock};

/// How long letting a subscription go may take: the attachment is gone
/// either way, and the session's close ends the subscription too.
const UNSUBSCRIBE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Shell<'_> {
    /// Subscribes to `uri` of `server` for an attachment, when the server
    /// offers subscriptions; returns whether the attachment holds one. A
    /// subscription the server refuses is said, and the attachment is read
    /// once.
    pub(super) fn watch(&self, server: &str, uri: &str, cancel: &Cancel) -> bool {
        let offered = matches!(
            self.host().server(server).map(|view| view.status),
            Some(ServerStatus::Ready(report)) if report.capabilities.resources_subscribe
        );
        if !offered {
            return false;
        }
        let key = (server.to_owned(), uri.to_owned());
        if let Some(holders) = lock(&self.watching).get_mut(&key) {
            *holders += 1;
            return true;
        }
        match self
            .host()
            .subscribe_resource(server, uri, CallOptions::new().cancel(cancel))
        {
            Ok(()) => {
                *lock(&self.watching).entry(key).or_insert(0) += 1;
                true
            }
            Err(ToolCallError::Call(CallError::Cancelled { .. })) => false,
            Err(why) => {
                self.out.print(&format!(
                    "server `{}` did not take a subscription to `{}` ({}); the attachment is read once",
                    sanitize_line(server),
                    sanitize_line(uri),
                    sanitize_line(&why.to_string())
                ));
                false
            }
        }
    }

    /// An attachment that held a subscription to `uri` of `server` left:
    /// the last one to leave queues the unsubscribe ([`let_go`] sends it).
    pub(super) fn unwatch(&self, server: &str, uri: &str) {
        let key = (server.to_owned(), uri.to_owned());
        let mut watching = lock(&self.watching);
        let Some(holders) = watching.get_mut(&key) else {
            return;
        };
        *holders -= 1;
        if *holders == 0 {
            watching.remove(&key);
            lock(&self.letting_go).push(key);
        }
    }
}

/// Sends the unsubscribes [`Shell::unwatch`] queued, each on its own
/// thread.
pub(super) fn let_go<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shell: &'env Shell<'env>,
) {
    let queued = std::mem::take(&mut *lock(&shell.letting_go));
    for (server, uri) in queued {
        scope.spawn(move || {
            // Attached again meanwhile: it is held once more.
            if lock(&shell.watching).contains_key(&(server.clone(), uri.clone())) {
                return;
            }
            if let Err(why) = shell.host().unsubscribe_resource(
                &server,
                &uri,
                CallOptions::new().timeout(UNSUBSCRIBE_WAIT),
            ) {
                tracing::debug!(server, "letting a subscription go failed: {why}");
            }
        });
    }
}

/// What the host heard of the resources subscribed to: a change reads the
/// attachments of that resource again; an end is said.
pub(super) fn heard<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shell: &'env Shell<'env>,
    screen: &'env Screen,
    news: ResourceUpdated,
) {
    let ResourceUpdated {
        server,
        uri,
        notice,
    } = news;
    let mut reads = lock(&shell.reads);
    let chips: Vec<u64> = reads
        .iter()
        .filter(|(_, slot)| slot.server == server && slot.read.uri() == uri)
        .map(|(chip, _)| *chip)
        .collect();
    if chips.is_empty() {
        // Its attachments left; the unsubscribe is on its way.
        return;
    }
    let (uri_shown, server_shown) = (sanitize_line(&uri), sanitize_line(&server));
    if let WatchNotice::Ended(end) = notice {
        for chip in &chips {
            if let Some(slot) = reads.get_mut(chip) {
                slot.watched = false;
            }
        }
        lock(&shell.watching).remove(&(server.clone(), uri.clone()));
        drop(reads);
        shell.out.print(&format!(
            "server `{server_shown}` no longer tells rho of changes to `{uri_shown}` ({}); the attachment keeps what was read",
            sanitize_line(&end.to_string())
        ));
        return;
    }
    let mut again = Vec::new();
    for chip in chips {
        let Some(slot) = reads.get_mut(&chip) else {
            continue;
        };
        if slot.read.changed() {
            again.push((chip, slot.read.label(), slot.cancel.clone()));
        }
    }
    drop(reads);
    if again.is_empty() {
        // Being read already: that read is followed by one more.
        return;
    }
    // Marked reading before it is said, so the line drawn under the saying
    // already waits for the new body.
    for (chip, label, _) in &again {
        screen.edit(|e| e.relabel(*chip, &sanitize_line(label), true));
    }
    shell.out.print(&format!(
        "`{uri_shown}` changed on server `{server_shown}`; reading it again"
    ));
    for (chip, _, cancel) in again {
        let (server, uri) = (server.clone(), uri.clone());
        scope.spawn(move || read(shell, screen, chip, &server, &uri, &cancel));
    }
}

/// Reads `uri` of `server` into attachment `chip` until its state settles
/// (read again at once when it changed while the read ran), then marks the
/// attachment read, or removes it saying why.
pub(super) fn read(
    shell: &Shell<'_>,
    screen: &Screen,
    chip: u64,
    server: &str,
    uri: &str,
    cancel: &Cancel,
) {
    loop {
        let request = FeatureRequest::ReadResource(ReadResourceParams {
            uri: uri.to_owned(),
        });
        let result = shell
            .host()
            .request(server, request, CallOptions::new().cancel(cancel));
        let outcome = {
            let mut reads = lock(&shell.reads);
            let Some(slot) = reads.get_mut(&chip) else {
                // Taken under the lock `detach` moves it under.
                let slot = lock(&shell.cancelling).remove(&chip);
                drop(reads);
                return cancelled(shell, slot, &result);
            };
            if slot
                .read
                .handle_answer(result.as_ref().map_err(ToString::to_string))
            {
                continue;
            }
            match slot.read.state() {
                ReadState::Ready { .. } => Ok(sanitize_line(&slot.read.label()).into_owned()),
                ReadState::Failed { reason } => {
                    let reason = reason.clone();
                    if let Some(slot) = reads.remove(&chip)
                        && slot.watched
                    {
                        shell.unwatch(&slot.server, slot.read.uri());
                    }
                    Err(reason)
                }
                _ => return,
            }
        };
        match outcome {
            Ok(label) => screen.edit(|e| e.relabel(chip, &label, false)),
            Err(reason) => {
                screen.edit(|e| e.remove_chip(chip));
                screen.print(&format!(
                    "could not read `{}` from server `{}`: {}; the attachment was removed",
                    sanitize_line(uri),
                    sanitize_line(server),
                    sanitize_line(&reason)
                ));
            }
        }
        return;
    }
}
