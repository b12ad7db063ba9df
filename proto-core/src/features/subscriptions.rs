//! `subscriptions/listen` (MCP 2026-07-28): the one long-lived request
//! through which a stateless server tells rho that a list changed.
//!
//! The 2025 era had a session and, over HTTP, a standalone GET stream for
//! the server's own messages; the 2026 era has neither. A server delivers
//! `notifications/tools/list_changed` (and the prompts and resources ones)
//! only on a `subscriptions/listen` request the client opened and opted in
//! to each kind of, tagging every notification with the listen request's
//! JSON-RPC id in `_meta` `io.modelcontextprotocol/subscriptionId`. The
//! first one on a stream is `notifications/subscriptions/acknowledged`,
//! naming the kinds the server agreed to. Over Streamable HTTP the request
//! is a POST whose SSE response stays open; it is answered only when the
//! server ends the subscription.
//!
//! This module is the pure part: which kinds to ask for ([`Filter`]), what
//! a notification on the stream means ([`Subscription::deliver`]), and what
//! to do when the stream ends ([`Subscription::ended`]). The session sends
//! the request and applies a change exactly as it applies a 2025
//! `list_changed`.
//!
//! # When the stream breaks: re-issued once
//!
//! The 2026 era has no SSE resumption, so a broken listen stream (the
//! connection dropped, the server closed the stream without answering, or
//! answered to say the subscription ended) is re-issued as a new request
//! with a new JSON-RPC id, once per session. A second end is final: rho
//! stops listening to that server, says so in its log, and keeps the tool
//! list it has; a server that lost its subscription twice is more likely
//! shutting down or misconfigured than flaky, and a client that reopens
//! forever turns a broken server into a busy loop. A JSON-RPC error answer
//! (the server does not support listening, or refused the filter) is final
//! at once: sending the same request again would get the same answer.
//!
//! Re-issuing is safe because `subscriptions/listen` is idempotent: it only
//! opens a stream. The rule for other requests is the session's, and
//! stricter: a `tools/call` whose response stream breaks is never sent
//! again unless running it twice is known to be harmless, because that is
//! not rho's call to make.
//!
//! # Listing again on every acknowledgement
//!
//! A change made after the session listed its tools but before a stream
//! was open reaches no stream: the first one opens only once the session is
//! ready, and a re-issued one after a gap. So every acknowledgement is
//! followed by listing again ([`Delivered::Acknowledged`]); the session
//! reports the result only if the list did change.
//!
//! Notifications tagged with another id (an earlier stream's, a stranger's)
//! are ignored: only the open subscription speaks for it. (The session's
//! resource stream, [`super::resource_subscriptions`], is another listen
//! request; the session hands its notifications there first.) An untagged list
//! change is not the subscription's; the session applies it as before.

use serde::Serialize;
use serde_json::Value;

/// The `_meta` key that ties a notification to its subscription.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// How many times one session re-issues a listen request whose stream
/// ended.
pub const MAX_REISSUES: u32 = 1;

/// The notification kinds a listen request opts in to (the spec's
/// `SubscriptionFilter`, without resource subscriptions: those ride on a
/// listen request of their own, see
/// [`super::resource_subscriptions`]). Kinds left `false` are left out of
/// the request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    /// `notifications/tools/list_changed`.
    #[serde(skip_serializing_if = "is_false")]
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    #[serde(skip_serializing_if = "is_false")]
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    #[serde(skip_serializing_if = "is_false")]
    pub resources_list_changed: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Filter {
    /// Whether it asks for nothing: then no listen request is sent.
    pub fn is_empty(&self) -> bool {
        !(self.tools_list_changed || self.prompts_list_changed || self.resources_list_changed)
    }

    /// The filter the server agreed to, read from an acknowledgement's
    /// `notifications` (unknown or non-`true` members are off).
    fn from_value(value: Option<&Value>) -> Self {
        let on = |key: &str| value.and_then(|v| v.get(key)) == Some(&Value::Bool(true));
        Self {
            tools_list_changed: on("toolsListChanged"),
            prompts_list_changed: on("promptsListChanged"),
            resources_list_changed: on("resourcesListChanged"),
        }
    }

    /// Only the kinds both filters have: what the server agreed to of
    /// what was asked.
    fn both(self, other: Self) -> Self {
        Self {
            tools_list_changed: self.tools_list_changed && other.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed && other.prompts_list_changed,
            resources_list_changed: self.resources_list_changed && other.resources_list_changed,
        }
    }

    fn has(&self, list: List) -> bool {
        match list {
            List::Tools => self.tools_list_changed,
            List::Prompts => self.prompts_list_changed,
            List::Resources => self.resources_list_changed,
        }
    }
}

/// The params of a `subscriptions/listen` request (the era's `_meta` is
/// merged in by the session).
#[derive(Debug, Serialize)]
pub struct ListenParams {
    /// What to deliver.
    pub notifications: Filter,
}

/// A list a server can say changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum List {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

impl List {
    /// The list a `notifications/<list>/list_changed` method names.
    pub fn of_method(method: &str) -> Option<Self> {
        match method {
            "notifications/tools/list_changed" => Some(Self::Tools),
            "notifications/prompts/list_changed" => Some(Self::Prompts),
            "notifications/resources/list_changed" => Some(Self::Resources),
            _ => None,
        }
    }
}

/// What a notification means for the subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum Delivered {
    /// The server acknowledged the open stream with what it agreed to:
    /// list those lists again now (see the module docs).
    Acknowledged(Filter),
    /// A list changed: apply it as a 2025 `list_changed` is applied.
    Changed(List),
    /// Not for this subscription, or not a kind it asked for: ignore it.
    Ignored,
}

/// What to do when the listen request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum Ended {
    /// Send the listen request again, under a new id.
    Reissue,
    /// Stop listening to this server (the reason was logged).
    GiveUp,
}

/// How the listen request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ending {
    /// The stream broke, or the server closed it without an answer.
    Broken,
    /// The server answered it: it ended the subscription itself.
    Closed,
    /// The server answered with a JSON-RPC error.
    Refused,
}

/// One server's subscription: the filter asked for, the request it runs
/// under and what became of it.
#[derive(Clone, Debug)]
pub struct Subscription {
    filter: Filter,
    /// The JSON-RPC id of the open listen request.
    request: Option<u64>,
    /// The server acknowledged the open request.
    acknowledged: Option<Filter>,
    reissues: u32,
}

impl Subscription {
    /// A subscription for `filter`, not yet opened.
    pub fn new(filter: Filter) -> Self {
        Self {
            filter,
            request: None,
            acknowledged: None,
            reissues: 0,
        }
    }

    /// The filter to send.
    pub fn params(&self) -> ListenParams {
        ListenParams {
            notifications: self.filter,
        }
    }

    /// The listen request went out with this id.
    pub fn opened(&mut self, request: u64) {
        self.request = Some(request);
        self.acknowledged = None;
    }

    /// The id of the listen request open now.
    pub fn request(&self) -> Option<u64> {
        self.request
    }

    /// What the server agreed to on the open stream, once acknowledged.
    pub fn agreed(&self) -> Option<Filter> {
        self.acknowledged
    }

    /// What the notification `method` with `params` means for this
    /// subscription. Only notifications tagged with the open request's id
    /// count; a change before the acknowledgement, or of a kind the server
    /// did not agree to, is ignored.
    pub fn deliver(&mut self, method: &str, params: Option<&Value>) -> Delivered {
        let Some(request) = self.request else {
            return Delivered::Ignored;
        };
        if tagged_id(params) != Some(request) {
            return Delivered::Ignored;
        }
        if method == "notifications/subscriptions/acknowledged" {
            if self.acknowledged.is_some() {
                return Delivered::Ignored;
            }
            let agreed = self.filter.both(Filter::from_value(
                params.and_then(|p| p.get("notifications")),
            ));
            self.acknowledged = Some(agreed);
            return Delivered::Acknowledged(agreed);
        }
        match (List::of_method(method), self.acknowledged) {
            (Some(list), Some(agreed)) if agreed.has(list) => Delivered::Changed(list),
            _ => Delivered::Ignored,
        }
    }

    /// The open listen request ended (`how`): whether to send it again.
    /// See the module docs for the policy.
    pub fn ended(&mut self, how: Ending) -> Ended {
        self.request = None;
        self.acknowledged = None;
        match how {
            Ending::Refused => Ended::GiveUp,
            Ending::Broken | Ending::Closed if self.reissues < MAX_REISSUES => {
                self.reissues += 1;
                Ended::Reissue
            }
            Ending::Broken | Ending::Closed => Ended::GiveUp,
        }
    }
}

/// The subscription id a notification's `_meta` carries, when it is one
/// rho could have sent (a non-negative integer).
fn tagged_id(params: Option<&Value>) -> Option<u64> {
    params?.get("_meta")?.get(SUBSCRIPTION_ID)?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Filter {
        Filter {
            tools_list_changed: true,
            ..Filter::default()
        }
    }

    fn tagged(id: Value) -> Value {
        json!({"_meta": {SUBSCRIPTION_ID: id}})
    }

    fn ack(id: u64, notifications: Value) -> Value {
        json!({"_meta": {SUBSCRIPTION_ID: id}, "notifications": notifications})
    }

    const TOOLS_CHANGED: &str = "notifications/tools/list_changed";
    const ACK: &str = "notifications/subscriptions/acknowledged";

    fn open(filter: Filter, id: u64) -> Subscription {
        let mut s = Subscription::new(filter);
        s.opened(id);
        s
    }

    #[test]
    fn the_filter_names_only_the_kinds_asked_for() {
        let params = serde_json::to_value(Subscription::new(tools()).params()).unwrap();
        assert_eq!(params, json!({"notifications": {"toolsListChanged": true}}));
        let all = Filter {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
        };
        assert_eq!(
            serde_json::to_value(all).unwrap(),
            json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true})
        );
        assert!(Filter::default().is_empty());
        assert!(!tools().is_empty());
    }

    #[test]
    fn the_acknowledgement_says_what_the_server_agreed_to() {
        let both = Filter {
            tools_list_changed: true,
            prompts_list_changed: true,
            ..Filter::default()
        };
        let mut s = open(both, 7);
        let agreed = s.deliver(
            ACK,
            Some(&ack(
                7,
                json!({"toolsListChanged": true, "resourcesListChanged": true}),
            )),
        );
        // Prompts were not agreed; resources were not asked for.
        assert_eq!(agreed, Delivered::Acknowledged(tools()));
        assert_eq!(s.agreed(), Some(tools()));
        assert_eq!(
            s.deliver(
                "notifications/prompts/list_changed",
                Some(&tagged(json!(7)))
            ),
            Delivered::Ignored
        );
        assert_eq!(
            s.deliver(TOOLS_CHANGED, Some(&tagged(json!(7)))),
            Delivered::Changed(List::Tools)
        );
        // A second acknowledgement changes nothing.
        assert_eq!(s.deliver(ACK, Some(&ack(7, json!({})))), Delivered::Ignored);
        assert_eq!(s.agreed(), Some(tools()));
    }

    #[test]
    fn only_the_open_subscriptions_notifications_count() {
        let mut s = open(tools(), 7);
        let _ = s.deliver(ACK, Some(&ack(7, json!({"toolsListChanged": true}))));
        for params in [
            None,
            Some(json!({})),
            Some(tagged(json!(8))),
            Some(tagged(json!("7"))),
            Some(tagged(json!(-7))),
            Some(json!({"_meta": {}})),
        ] {
            assert_eq!(
                s.deliver(TOOLS_CHANGED, params.as_ref()),
                Delivered::Ignored,
                "{params:?}"
            );
        }
        assert_eq!(
            s.deliver(TOOLS_CHANGED, Some(&tagged(json!(7)))),
            Delivered::Changed(List::Tools)
        );
        assert_eq!(
            s.deliver("notifications/message", Some(&tagged(json!(7)))),
            Delivered::Ignored
        );
    }

    #[test]
    fn a_change_before_the_acknowledgement_is_ignored() {
        let mut s = open(tools(), 3);
        assert_eq!(
            s.deliver(TOOLS_CHANGED, Some(&tagged(json!(3)))),
            Delivered::Ignored
        );
        let mut unopened = Subscription::new(tools());
        assert_eq!(
            unopened.deliver(ACK, Some(&ack(0, json!({"toolsListChanged": true})))),
            Delivered::Ignored
        );
        assert_eq!(unopened.request(), None);
    }

    #[test]
    fn a_broken_stream_is_reissued_once_under_a_new_id() {
        let mut s = open(tools(), 3);
        let _ = s.deliver(ACK, Some(&ack(3, json!({"toolsListChanged": true}))));
        assert_eq!(s.ended(Ending::Broken), Ended::Reissue);
        assert_eq!(s.request(), None);
        assert_eq!(s.agreed(), None);
        s.opened(9);
        // The old stream's id no longer counts.
        assert_eq!(
            s.deliver(ACK, Some(&ack(3, json!({"toolsListChanged": true})))),
            Delivered::Ignored
        );
        assert_eq!(
            s.deliver(ACK, Some(&ack(9, json!({"toolsListChanged": true})))),
            Delivered::Acknowledged(tools())
        );
        assert_eq!(s.ended(Ending::Broken), Ended::GiveUp);
    }

    #[test]
    fn a_graceful_close_counts_against_the_same_one_reissue() {
        let mut s = open(tools(), 1);
        assert_eq!(s.ended(Ending::Closed), Ended::Reissue);
        s.opened(2);
        assert_eq!(s.ended(Ending::Closed), Ended::GiveUp);
    }

    #[test]
    fn a_refusal_is_final_at_once() {
        let mut s = open(tools(), 1);
        assert_eq!(s.ended(Ending::Refused), Ended::GiveUp);
    }

    #[test]
    fn list_kinds_are_read_from_their_methods() {
        assert_eq!(List::of_method(TOOLS_CHANGED), Some(List::Tools));
        assert_eq!(
            List::of_method("notifications/prompts/list_changed"),
            Some(List::Prompts)
        );
        assert_eq!(
            List::of_method("notifications/resources/list_changed"),
            Some(List::Resources)
        );
        assert_eq!(List::of_method("notifications/resources/updated"), None);
    }
}
