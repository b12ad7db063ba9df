//! Resource subscriptions, both eras: what the session sends for a
//! subscribe or an unsubscribe, and which `notifications/resources/updated`
//! reach the host as [`Event::ResourceUpdated`]. The policy (the bound,
//! the make-before-break replacement of a 2026 stream, what passes) is
//! [`crate::features::resource_subscriptions`]; this is where the session
//! sends requests and applies answers.
//!
//! Both are host requests ([`FeatureRequest::SubscribeResource`],
//! [`FeatureRequest::UnsubscribeResource`]) and end, like any other, with
//! one [`Event::RequestCompleted`]:
//!
//! - 2025: a subscribe is `resources/subscribe`, answered by the server;
//!   the URI is held once the answer is a result. An unsubscribe drops the
//!   URI at once (no update for it passes from then on) and sends
//!   `resources/unsubscribe`, whose answer ends the call.
//! - 2026: a subscribe sends a new `subscriptions/listen` with every URI
//!   wanted and ends when the server acknowledges it (agreed, or
//!   [`CallError::SubscriptionNotAgreed`]); its budget is the request's, and
//!   only the wait for the acknowledgement is timed. An unsubscribe drops
//!   the URI at once, replaces the stream with one without it (or cancels
//!   the stream when nothing is left), and ends at once: there is no
//!   answer to wait for.
//!
//! A 2025 server over HTTP that forgot the session (it restarted, or
//! evicted it) holds none of its subscriptions in the session that
//! replaces it: once the fresh `initialize` is done, rho sends
//! `resources/subscribe` for each URI held, of its own. Each one taken is
//! [`Event::ResourceWatchRenewed`] (the host reads it again: a change
//! while the session was gone was not heard of); each one refused, or
//! unanswered, is dropped and [`Event::ResourceWatchEnded`].
//!
//! When rho closes the session, a 2025 server is sent
//! `resources/unsubscribe` for each URI held (a farewell: the transport
//! lets it reach the server before it ends, its answer unread), since a
//! 2025 server over HTTP may keep its subscribers past a session it is not
//! told is over (server-everything keeps them for its life). A 2026
//! subscription ends with its stream. A 2026 stream that ends for good
//! while the session goes on (it ended again after being opened again, or
//! the server refused it, or the one opened again) drops what it held, and
//! the host is told which
//! ([`Event::ResourceWatchEnded`]).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::features::resource_subscriptions::{
    MAX_PER_SERVER, Plan, Refusal, Resolved, StreamEnd, WatchEnd, WatchFilter, WatchParams,
    agreed_uris, updated_uri,
};
use crate::features::subscriptions::SUBSCRIPTION_ID;

impl Session {
    /// [`FeatureRequest::SubscribeResource`], once the capability was
    /// checked.
    pub(super) fn subscribe_resource(
        &mut self,
        now: Instant,
        uri: &str,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        let pending = &self.pending;
        let in_flight = |call: u64| {
            pending
                .values()
                .any(|p| matches!(p.purpose, Purpose::Feature(c) if c.0 == call))
        };
        match self.resource_subscriptions.plan(uri, in_flight) {
            Err(Refusal::Limit) => {
                return Err(ApiMisuse::SubscriptionLimit {
                    server: self.options.server.clone(),
                    limit: MAX_PER_SERVER,
                });
            }
            Ok(Plan::Held) => {
                // Held already: nothing to ask, the call ends now.
                let call = CallId(self.next_id);
                self.next_id += 1;
                self.events.push_back(Event::RequestCompleted {
                    call,
                    result: Ok(json!({})),
                });
                return Ok(call);
            }
            Ok(Plan::Ask) => {}
        }
        let budget = budget.unwrap_or(self.options.request_timeout);
        let call = CallId(self.next_id);
        if !self.is_stateless() {
            let params = json!({ "uri": uri });
            self.send_request(
                Purpose::Feature(call),
                "resources/subscribe",
                Some(&params),
                now + budget,
                budget,
            );
            self.resource_subscriptions.asked(call.0, uri.to_owned());
            return Ok(call);
        }
        let uris = self.resource_subscriptions.wanted_with(Some(uri));
        let request = self.send_watch(now, uris, Some((call.0, uri.to_owned())), budget);
        debug_assert_eq!(request, call.0, "the call is named for its listen request");
        Ok(call)
    }

    /// [`FeatureRequest::UnsubscribeResource`], once the capability was
    /// checked.
    pub(super) fn unsubscribe_resource(
        &mut self,
        now: Instant,
        uri: &str,
        budget: Option<Duration>,
    ) -> CallId {
        let held = self.resource_subscriptions.release(uri);
        let budget = budget.unwrap_or(self.options.request_timeout);
        if held && !self.is_stateless() {
            let call = CallId(self.next_id);
            let params = json!({ "uri": uri });
            self.send_request(
                Purpose::Feature(call),
                "resources/unsubscribe",
                Some(&params),
                now + budget,
                budget,
            );
            return call;
        }
        if held {
            let uris = self.resource_subscriptions.wanted_with(None);
            if uris.is_empty() {
                for request in self.resource_subscriptions.close_all() {
                    self.cancel_watch(request, "no resource subscriptions left");
                }
            } else {
                self.send_watch(now, uris, None, budget);
            }
        }
        let call = CallId(self.next_id);
        self.next_id += 1;
        self.events.push_back(Event::RequestCompleted {
            call,
            result: Ok(json!({})),
        });
        call
    }

    /// Sends a resource `subscriptions/listen` carrying `uris` (2026 era),
    /// with `waiting` (a subscribe call) waiting for its acknowledgement;
    /// the request being opened before it, if any, is cancelled. Returns
    /// the request's id.
    fn send_watch(
        &mut self,
        now: Instant,
        uris: Vec<String>,
        waiting: Option<(u64, String)>,
        budget: Duration,
    ) -> u64 {
        let params = WatchParams {
            notifications: WatchFilter {
                resource_subscriptions: uris.clone(),
            },
        };
        let request = self.send_request(
            Purpose::Watch,
            "subscriptions/listen",
            Some(&params),
            now + budget,
            budget,
        );
        if let Some(replaced) = self.resource_subscriptions.opened(request, uris, waiting) {
            self.cancel_watch(replaced, "subscription replaced");
        }
        request
    }

    /// Ends resource stream `request` from rho's side: on stdio the spec's
    /// way is `notifications/cancelled` naming it (over HTTP the transport
    /// closes its stream); its late answer is dropped.
    fn cancel_watch(&mut self, request: u64, reason: &str) {
        if let Some(pending) = self.pending.remove(&request) {
            self.deadlines.remove(&(pending.deadline, request));
        }
        let params = json!({"requestId": request, "reason": reason});
        self.send_notification("notifications/cancelled", Some(&params));
        self.abandoned(request);
    }

    /// Rho closes the session: a 2025 server is told each subscription
    /// held ends.
    pub(super) fn unsubscribe_at_close(&mut self) {
        if !self.is_stateless() {
            self.send_for_each_held(Purpose::Farewell, "resources/unsubscribe");
        }
    }

    /// A fresh `initialize` replaced an expired 2025 session: the new one
    /// is subscribed to each URI held.
    pub(super) fn renew_after_expiry(&mut self) {
        if self.is_stateless() || !matches!(self.phase, Phase::Ready) {
            return;
        }
        for (request, uri) in self.send_for_each_held(Purpose::Renew, "resources/subscribe") {
            self.resource_subscriptions.renewing(request, uri);
        }
    }

    /// Sends `method` for each URI held (2025 era), of rho's own, within
    /// the request budget; returns each request with its URI.
    fn send_for_each_held(&mut self, purpose: Purpose, method: &'static str) -> Vec<(u64, String)> {
        let held: Vec<String> = self
            .resource_subscriptions
            .held()
            .map(str::to_owned)
            .collect();
        let now = self.clock.latest();
        let budget = self.options.request_timeout;
        held.into_iter()
            .map(|uri| {
                let params = json!({ "uri": uri });
                let request =
                    self.send_request(purpose.clone(), method, Some(&params), now + budget, budget);
                (request, uri)
            })
            .collect()
    }

    /// The server answered renewal `request`.
    pub(super) fn renewal_answered(&mut self, request: u64, reply: Result<Value, ErrorObject>) {
        match reply {
            Ok(_) => {
                if let Some(uri) = self.resource_subscriptions.renewed(request)
                    && self.resource_subscriptions.holds(&uri)
                {
                    self.events
                        .push_back(Event::ResourceWatchRenewed { uris: vec![uri] });
                }
            }
            Err(error) => {
                let reason = CallError::Rpc {
                    server: self.options.server.clone(),
                    error: Box::new(error),
                }
                .to_string();
                self.renewal_failed(request, reason);
            }
        }
    }

    /// Renewal `request` failed (refused, unanswered, or its transport
    /// broke): the URI is dropped, and the host told.
    pub(super) fn renewal_failed(&mut self, request: u64, reason: String) {
        let Some(uri) = self.resource_subscriptions.renewed(request) else {
            return;
        };
        if self.resource_subscriptions.release(&uri) {
            tracing::warn!(server = %self.options.server, "the server did not take a subscription again after its session expired: {reason}");
            self.events.push_back(Event::ResourceWatchEnded {
                uris: vec![uri],
                end: WatchEnd::NotRenewed { reason },
            });
        }
    }

    /// The session is closing for `reason`: a 2026 subscribe still
    /// waiting for its acknowledgement ends as every request does then.
    pub(super) fn watch_session_closed(&mut self, reason: &CloseReason) {
        for call in self.resource_subscriptions.session_closed() {
            self.events.push_back(Event::RequestCompleted {
                call: CallId(call),
                result: Err(CallError::SessionClosed {
                    server: self.options.server.clone(),
                    reason: reason.to_string(),
                }),
            });
        }
    }

    /// A host request was answered (2025): a subscribe's URI is held if
    /// the answer was a result.
    pub(super) fn watch_request_answered(&mut self, call: CallId, ok: bool) {
        let _ = self.resource_subscriptions.answered(call.0, ok);
    }

    /// The host cancelled call `call`, which has no request of its own: a
    /// 2026 subscribe waiting on an acknowledgement stops waiting and ends
    /// as cancelled.
    pub(super) fn watch_call_cancelled(&mut self, call: CallId) {
        if self.resource_subscriptions.abandon(call.0) {
            self.events.push_back(Event::RequestCompleted {
                call,
                result: Err(CallError::Cancelled {
                    server: self.options.server.clone(),
                    notice: CancelNotice::NothingRunning,
                }),
            });
        }
    }

    /// A notification tagged with one of the resource streams' ids is
    /// theirs to read; returns whether it was.
    pub(super) fn watch_delivers(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<&Value>,
    ) -> bool {
        let Some(tag) = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(SUBSCRIPTION_ID))
            .and_then(Value::as_u64)
            .filter(|tag| self.resource_subscriptions.is_stream(*tag))
        else {
            return false;
        };
        match method {
            "notifications/subscriptions/acknowledged" => self.watch_acknowledged(now, tag, params),
            "notifications/resources/updated" => self.resource_updated(Some(tag), params),
            _ => {
                tracing::debug!(server = %self.options.server, method, "notification on the resource stream that rho did not ask for; ignored");
            }
        }
        true
    }

    fn watch_acknowledged(&mut self, _now: Instant, request: u64, params: Option<&Value>) {
        let agreed = agreed_uris(params);
        let Some((resolved, replaced)) = self.resource_subscriptions.acknowledged(request, &agreed)
        else {
            return;
        };
        // Open now for the session's life: no deadline any more.
        if let Some(pending) = self.pending.get(&request) {
            self.deadlines.remove(&(pending.deadline, request));
        }
        if let Some(replaced) = replaced {
            self.cancel_watch(replaced, "subscription replaced");
        }
        for (call, uri, outcome) in resolved {
            let result = match outcome {
                Resolved::Agreed => Ok(json!({})),
                Resolved::NotAgreed => Err(CallError::SubscriptionNotAgreed {
                    server: self.options.server.clone(),
                    uri,
                }),
            };
            self.events.push_back(Event::RequestCompleted {
                call: CallId(call),
                result,
            });
        }
    }

    /// A `notifications/resources/updated`: passed to the host when it
    /// names a URI held (on the acknowledged stream, in the 2026 era).
    pub(super) fn resource_updated(&mut self, tag: Option<u64>, params: Option<&Value>) {
        let Some(uri) = updated_uri(params) else {
            tracing::debug!(server = %self.options.server, "resources/updated without a uri; ignored");
            return;
        };
        // The 2026 era's updates come only on a stream, tagged.
        let untagged_on_a_stream = tag.is_none() && self.is_stateless();
        if untagged_on_a_stream || !self.resource_subscriptions.update_passes(tag, uri) {
            tracing::debug!(server = %self.options.server, "resources/updated for a resource not subscribed to; ignored");
            return;
        }
        self.events.push_back(Event::ResourceUpdated {
            uri: uri.to_owned(),
        });
    }

    /// The server answered resource stream `request`: a result ends it
    /// gracefully, an error refuses it.
    pub(super) fn watch_answered(
        &mut self,
        now: Instant,
        request: u64,
        reply: Result<Value, ErrorObject>,
    ) {
        match reply {
            Ok(_) => self.watch_ended(now, request, false, |server| CallError::Transport {
                server,
                reason: "the server ended the subscription before acknowledging it".into(),
            }),
            Err(error) => self.watch_ended(now, request, true, |server| CallError::Rpc {
                server,
                error: Box::new(error.clone()),
            }),
        }
    }

    /// Resource stream `request` broke or went unanswered; `error` is what
    /// a call waiting on it is told.
    pub(super) fn watch_failed(
        &mut self,
        now: Instant,
        request: u64,
        error: impl Fn(String) -> CallError,
    ) {
        self.watch_ended(now, request, false, error)
    }

    /// A server's `notifications/cancelled` naming a resource stream: how
    /// a stdio server ends one. Returns whether it named one.
    pub(super) fn watch_cancelled(&mut self, now: Instant, params: Option<&Value>) -> bool {
        let Some(request) = params
            .and_then(|p| p.get("requestId"))
            .and_then(Value::as_u64)
            .filter(|r| self.resource_subscriptions.is_stream(*r))
        else {
            return false;
        };
        if let Some(pending) = self.pending.remove(&request) {
            self.deadlines.remove(&(pending.deadline, request));
        }
        self.watch_ended(now, request, false, |server| CallError::Transport {
            server,
            reason: "the server cancelled the subscription".into(),
        });
        true
    }

    fn watch_ended(
        &mut self,
        now: Instant,
        request: u64,
        refused: bool,
        error: impl Fn(String) -> CallError,
    ) {
        self.pending.remove(&request);
        let held: Vec<String> = self
            .resource_subscriptions
            .held()
            .map(str::to_owned)
            .collect();
        let (end, calls) = self.resource_subscriptions.ended(request, refused);
        let server = self.options.server.clone();
        match end {
            StreamEnd::OpeningFailed => {
                for call in calls {
                    self.events.push_back(Event::RequestCompleted {
                        call: CallId(call),
                        result: Err(error(server.clone())),
                    });
                }
                // A stream opened again after the acknowledged one ended:
                // what it was to carry has no stream now.
                let orphaned = self.resource_subscriptions.orphaned();
                if !orphaned.is_empty() {
                    let reason = error(server.clone()).to_string();
                    tracing::warn!(server = %server, "the resource subscription stream could not be opened again ({reason}); rho holds no resource subscriptions of this server any more");
                    self.events.push_back(Event::ResourceWatchEnded {
                        uris: orphaned,
                        end: WatchEnd::StreamEnded { reason },
                    });
                }
            }
            StreamEnd::Reopen => {
                tracing::info!(server = %server, "the resource subscription stream ended; opening it again");
                let uris = self.resource_subscriptions.wanted_with(None);
                let budget = self.options.request_timeout;
                self.send_watch(now, uris, None, budget);
            }
            StreamEnd::Dropped => {
                let reason = error(server.clone()).to_string();
                tracing::warn!(server = %server, "the resource subscription stream ended ({reason}); rho holds no resource subscriptions of this server any more");
                if !held.is_empty() {
                    self.events.push_back(Event::ResourceWatchEnded {
                        uris: held,
                        end: WatchEnd::StreamEnded { reason },
                    });
                }
            }
            StreamEnd::Unknown => {}
        }
    }
}
