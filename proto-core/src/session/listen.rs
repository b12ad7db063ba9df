//! The session's `subscriptions/listen` request (2026 era): opened once
//! the session is ready, for the list changes rho applies, and re-issued
//! once if its stream ends. The policy is [`crate::features::subscriptions`];
//! this is where the session sends the request and applies what arrives.
//!
//! The request has no deadline: it is meant to stay open for the session's
//! life. A change it delivers is applied exactly as a 2025
//! `notifications/tools/list_changed`; each acknowledgement is followed by
//! a quiet re-listing, for a change made before the stream was open.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Purpose, Session};
use crate::features::catalog::CatalogKind;
use crate::features::subscriptions::{
    Delivered, Ended, Ending, Filter, List, SUBSCRIPTION_ID, Subscription,
};
use crate::wire::jsonrpc::ErrorObject;

impl Session {
    /// Once ready in the 2026 era: opens the subscription for the list
    /// changes rho applies, each only where the server declared that list
    /// changeable (`tools.listChanged`, `prompts.listChanged`,
    /// `resources.listChanged`); none declared, no request. A server that
    /// says its lists never change (context7) is not asked to tell of
    /// changes, and its lists are still read again when their `ttlMs`
    /// runs out.
    pub(super) fn listen_if_wanted(&mut self, now: Instant) {
        if !self.is_stateless() || self.subscription.is_some() {
            return;
        }
        let caps = self.ready.as_ref().map(|r| &r.capabilities);
        let filter = Filter {
            tools_list_changed: caps.is_some_and(|c| c.tools_list_changed),
            prompts_list_changed: caps.is_some_and(|c| c.prompts && c.prompts_list_changed),
            resources_list_changed: caps.is_some_and(|c| c.resources && c.resources_list_changed),
        };
        if filter.is_empty() {
            return;
        }
        self.subscription = Some(Subscription::new(filter));
        self.send_listen(now);
    }

    fn send_listen(&mut self, now: Instant) {
        let Some(params) = self.subscription.as_ref().map(Subscription::params) else {
            return;
        };
        // Meant to stay open: no deadline (see `Pending::timed`); the
        // subscription is opened under the id it goes out with.
        let _ = self.send_request(
            Purpose::Listen,
            "subscriptions/listen",
            Some(&params),
            now,
            Duration::ZERO,
        );
    }

    /// A notification that carries a subscription id is the
    /// subscription's to read; returns whether it was.
    pub(super) fn subscription_delivers(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<&Value>,
    ) -> bool {
        let tagged = params
            .and_then(|p| p.get("_meta"))
            .is_some_and(|m| m.get(SUBSCRIPTION_ID).is_some());
        if !tagged {
            return false;
        }
        let Some(subscription) = &mut self.subscription else {
            tracing::debug!(server = %self.options.server, method, "notification for a subscription rho did not open; ignored");
            return true;
        };
        match subscription.deliver(method, params) {
            Delivered::Acknowledged(agreed) => {
                tracing::debug!(server = %self.options.server, ?agreed, "subscriptions/listen acknowledged");
                if agreed.tools_list_changed {
                    // A change before the stream opened reached no stream:
                    // read the list again, reported only if it changed.
                    self.start_relist(now, true);
                }
                // The same holds for the catalog.
                if agreed.prompts_list_changed {
                    self.catalog_list_changed(now, &[CatalogKind::Prompts]);
                }
                if agreed.resources_list_changed {
                    self.catalog_list_changed(
                        now,
                        &[CatalogKind::Resources, CatalogKind::Templates],
                    );
                }
            }
            Delivered::Changed(List::Tools) => self.tools_list_changed(now),
            Delivered::Changed(List::Prompts) => {
                self.catalog_list_changed(now, &[CatalogKind::Prompts])
            }
            Delivered::Changed(List::Resources) => {
                self.catalog_list_changed(now, &[CatalogKind::Resources, CatalogKind::Templates])
            }
            Delivered::Ignored => {
                tracing::debug!(server = %self.options.server, method, "notification for another subscription, or not asked for; ignored");
            }
        }
        true
    }

    /// A server's `notifications/cancelled` naming the listen request: on
    /// stdio, that is how a server ends a subscription. Returns whether it
    /// did name it.
    pub(super) fn listen_cancelled(&mut self, now: Instant, params: Option<&Value>) -> bool {
        let named = params
            .and_then(|p| p.get("requestId"))
            .and_then(Value::as_u64);
        let open = self.subscription.as_ref().and_then(Subscription::request);
        let (Some(named), Some(open)) = (named, open) else {
            return false;
        };
        if named != open {
            return false;
        }
        if let Some(pending) = self.pending.remove(&open) {
            self.deadlines.remove(&(pending.deadline, open));
        }
        self.listen_ended(now, Ending::Closed, "the server cancelled the subscription");
        true
    }

    /// The server answered the listen request: it ended the subscription
    /// (a result) or refused it (an error).
    pub(super) fn listen_answered(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        match reply {
            Ok(_) => self.listen_ended(now, Ending::Closed, "the server ended the subscription"),
            // Many servers of this era declare list changes and do not
            // offer the stream (the Python SDK 2.x, fastmcp), or refuse it
            // for their own reasons (context7: "Subscription limit
            // reached"): an ordinary answer, not a fault, and final (the
            // same request would get the same answer). Lists are still
            // read again when their `ttlMs` runs out, which is what the
            // era allows without it.
            Err(error) => {
                tracing::debug!(server = %self.options.server, "the server does not take subscriptions/listen ({error}); its lists are read again when they go stale");
                if let Some(subscription) = &mut self.subscription {
                    let _ = subscription.ended(Ending::Refused);
                }
            }
        }
    }

    /// The listen request ended (`how`, `why` in words): sent again under a
    /// new id, or given up on with a log line saying so.
    pub(super) fn listen_ended(&mut self, now: Instant, how: Ending, why: &str) {
        let Some(subscription) = &mut self.subscription else {
            return;
        };
        match subscription.ended(how) {
            Ended::Reissue => {
                tracing::info!(server = %self.options.server, "subscriptions/listen ended ({why}); opening it again");
                self.send_listen(now);
            }
            Ended::GiveUp => {
                tracing::warn!(server = %self.options.server, "subscriptions/listen ended ({why}); rho stops listening for this server's list changes and keeps the list it has");
            }
        }
    }
}
