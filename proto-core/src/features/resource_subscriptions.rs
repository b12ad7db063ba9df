//! Subscriptions to single resources: the host asks to be told when a
//! resource it holds (an `@` attachment, a document an agent keeps in
//! context) changes, and re-reads it when it likes.
//!
//! # The two eras
//!
//! - **2025** (`resources.subscribe` declared): `resources/subscribe` and
//!   `resources/unsubscribe`, one request per URI; the server then sends
//!   `notifications/resources/updated` with the URI, untagged, on the
//!   session's channel (stdio, or the standalone GET stream over HTTP).
//! - **2026-07-28** (the same capability): there is no subscribe request.
//!   The URIs ride on a `subscriptions/listen` request as
//!   `notifications.resourceSubscriptions`; the server's
//!   `notifications/subscriptions/acknowledged` lists the URIs it agreed
//!   to, and every `notifications/resources/updated` on that stream is
//!   tagged with the listen request's id. A filter cannot change while a
//!   stream is open, so a change of the set is a new listen request.
//!
//! # Implementation note: a stream of its own, replaced make-before-break
//!
//! rho's list-change stream ([`super::subscriptions`]) is left alone: the
//! resource URIs go on a second `subscriptions/listen` request (the spec
//! allows several at once, each told apart by its id). When the set
//! changes, the new request goes out first and the old stream is
//! cancelled only once the new one is acknowledged, so no update falls
//! in a gap and a refused or unanswered new request leaves the old
//! subscriptions as they were. A subscribe call waits for the
//! acknowledgement of a request that carries its URI: agreed, it
//! succeeds; left out of the acknowledgement, it fails as not agreed
//! ([`Resolved::NotAgreed`]). A request that is replaced before it is
//! acknowledged hands its waiting calls to the one that replaced it
//! (which carries their URIs too).
//!
//! Once acknowledged, the stream is open for the session's life. If it
//! ends (broken, or closed by the server) it is re-issued once with the
//! URIs held, as the list-change stream is; a second end, or a refusal
//! (of it, or of the one re-issued: [`ResourceSubscriptions::orphaned`]),
//! drops the subscriptions, with a log line saying so, and the host is
//! told which: it hears of no more changes, and an explicit re-subscribe
//! starts over.
//!
//! # Bounds
//!
//! - At most [`MAX_PER_SERVER`] URIs per server, held and asked for
//!   together; one more is refused before anything is sent.
//! - Updates pass only for a URI held (exact match): an update for any
//!   other URI is dropped, so whatever a server sends, what reaches the
//!   host is bounded by what the host asked for. The schema lets a server
//!   name a sub-resource of the one subscribed to; rho does not pass those
//!   on, since it holds no copy of them to refresh, and passing them would
//!   let a server fill the host's queue with URIs it chose.
//! - Updates are coalesced where the host reads them
//!   ([`UpdateQueue`]): many updates of one URI before the host looks are
//!   one.
//!
//! # A subscription outlives its session
//!
//! What the host subscribed to is the host's intent, not the session's:
//! this module holds one session's subscriptions, and the driver that
//! outlives a server's sessions ([`crate::runtime::driver`]) holds the
//! intent. When a stdio server whose process died is started again, the
//! driver subscribes its new session to what the host held and tells the
//! host ([`WatchNotice::Renewed`]: read it again, it may have changed
//! while the server was down). When that cannot be done, or the server is
//! not started again, or a 2026 stream ends for good, the host is told
//! that its watch ended and why ([`WatchNotice::Ended`]), so no host
//! believes it is watching what no session holds.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Serialize;
use serde_json::Value;

/// The most resources one server's session holds subscriptions to.
///
/// Why 64: a host subscribes to what it holds in view or in context, and
/// a context holds a handful of attachments, not hundreds; 64 leaves
/// room for an agent that watches a directory's worth of files. In the
/// 2026 era every change of the set sends the whole list again on a new
/// `subscriptions/listen` request, and each subscription costs the server
/// state: a bound in the tens keeps both small, and a host that hits it
/// is more likely leaking subscriptions than needing more.
pub const MAX_PER_SERVER: usize = 64;

/// How many times an acknowledged resource stream that ended is opened
/// again in one session (as for the list-change stream).
pub const MAX_REISSUES: u32 = 1;

/// The most distinct `(server, uri)` updates an [`UpdateQueue`] holds
/// before the host reads them. Each session passes on updates only for
/// the URIs it holds ([`MAX_PER_SERVER`] each), so this is reached only
/// by a host with more than 64 servers all changing at once; past it an
/// update is dropped and counted ([`UpdateQueue::dropped`]).
pub const MAX_QUEUED_UPDATES: usize = 4096;

/// The params of a `resources/subscribe` or `resources/unsubscribe`
/// request (2025 era).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SubscribeParams {
    /// The resource.
    pub uri: String,
}

/// The `notifications` filter of a resource `subscriptions/listen`
/// request (2026 era): only `resourceSubscriptions`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchFilter {
    /// The URIs to be told of.
    pub resource_subscriptions: Vec<String>,
}

/// The params of a resource `subscriptions/listen` request.
#[derive(Debug, Serialize)]
pub struct WatchParams {
    /// What to deliver.
    pub notifications: WatchFilter,
}

/// Why a subscription was not taken before anything was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// [`MAX_PER_SERVER`] are held or asked for already.
    Limit,
}

/// What a subscribe asks of the session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Plan {
    /// The URI is held already: the call succeeds at once, nothing sent.
    Held,
    /// Ask the server.
    Ask,
}

/// How a subscribe call waiting on an acknowledgement ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resolved {
    /// The server agreed to the URI.
    Agreed,
    /// The server acknowledged the stream without the URI.
    NotAgreed,
}

/// What to do when a resource stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum StreamEnd {
    /// It was being opened: its waiting calls fail, the stream before it
    /// (if any) stays.
    OpeningFailed,
    /// The acknowledged stream ended: open it again with these URIs.
    Reopen,
    /// The acknowledged stream ended for good: the subscriptions are
    /// dropped.
    Dropped,
    /// Not a stream of ours (already replaced or cancelled).
    Unknown,
}

/// Why rho stopped watching a resource the host subscribed to, without the
/// host asking: the host hears of no more changes of it until it
/// subscribes again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WatchEnd {
    /// The server's session ended and the server is not started again
    /// (restarts off or given up, or a transport rho does not restart);
    /// `reason` says how it ended.
    ServerEnded {
        /// How the session ended (the exit, the last stderr lines, the
        /// restarts given up).
        reason: String,
    },
    /// The server was started again, but its new session did not take the
    /// subscription (it refused it, or no longer offers subscriptions).
    NotRenewed {
        /// What the new session answered.
        reason: String,
    },
    /// The 2026 era's resource stream ended and could not be opened again
    /// within the session ([`MAX_REISSUES`]).
    StreamEnded {
        /// How the last stream ended.
        reason: String,
    },
}

impl std::fmt::Display for WatchEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchEnd::ServerEnded { reason } => {
                write!(f, "the server ended and is not started again: {reason}")
            }
            WatchEnd::NotRenewed { reason } => write!(
                f,
                "the server was started again but did not take the subscription: {reason}"
            ),
            WatchEnd::StreamEnded { reason } => {
                write!(f, "the server's subscription stream ended: {reason}")
            }
        }
    }
}

/// What a host hears of a resource it subscribed to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchNotice {
    /// The server said it changed: read it again when convenient.
    Updated,
    /// The server was started again and its new session holds the
    /// subscription: read it again, since a change while the server was
    /// down was not heard of.
    Renewed,
    /// No session holds the subscription any more.
    Ended(WatchEnd),
}

impl WatchNotice {
    /// What one waiting notice and a newer one of the same resource are
    /// worth together: an end outweighs all; a renewal says everything a
    /// change says; otherwise the newer holds.
    fn merged(self, newer: WatchNotice) -> WatchNotice {
        match (&self, &newer) {
            (WatchNotice::Renewed, WatchNotice::Updated) => self,
            _ => newer,
        }
    }
}

/// A listen request sent and not yet acknowledged.
#[derive(Clone, Debug)]
struct Opening {
    request: u64,
    /// The URIs it carries.
    uris: BTreeSet<String>,
    /// Subscribe calls (by call id) waiting for its acknowledgement, with
    /// their URIs.
    waiting: Vec<(u64, String)>,
}

/// One session's resource subscriptions, in either era. The session
/// sends what this says and feeds back what the server answers.
#[derive(Clone, Debug, Default)]
pub struct ResourceSubscriptions {
    /// The URIs subscribed to: updates for these reach the host.
    held: BTreeSet<String>,
    /// 2025: subscribe requests in flight, by call id.
    asked: BTreeMap<u64, String>,
    /// 2026: the acknowledged stream carrying `held`.
    current: Option<u64>,
    /// 2026: the stream being opened to replace it.
    opening: Option<Opening>,
    reissues: u32,
    /// 2025: subscribes of the session's own renewing what is held after
    /// a fresh `initialize`, by request.
    renewing: BTreeMap<u64, String>,
}

impl ResourceSubscriptions {
    /// The URIs held, in order.
    pub fn held(&self) -> impl Iterator<Item = &str> {
        self.held.iter().map(String::as_str)
    }

    /// Whether `uri` is held.
    pub fn holds(&self, uri: &str) -> bool {
        self.held.contains(uri)
    }

    /// Whether a subscribe to `uri` can go ahead: `in_flight` says which
    /// 2025 calls are still waiting (a call that ended otherwise, timed out
    /// or cancelled, no longer counts against the bound).
    pub fn plan(&mut self, uri: &str, in_flight: impl Fn(u64) -> bool) -> Result<Plan, Refusal> {
        if self.held.contains(uri) {
            return Ok(Plan::Held);
        }
        self.asked.retain(|&call, _| in_flight(call));
        let mut wanted: BTreeSet<&str> = self.held.iter().map(String::as_str).collect();
        wanted.extend(self.asked.values().map(String::as_str));
        if let Some(opening) = &self.opening {
            wanted.extend(opening.uris.iter().map(String::as_str));
        }
        if wanted.contains(uri) {
            // Asked for already: one more ask joins it.
            return Ok(Plan::Ask);
        }
        if wanted.len() >= MAX_PER_SERVER {
            return Err(Refusal::Limit);
        }
        Ok(Plan::Ask)
    }

    // ----- 2025: one request per URI -----

    /// A `resources/subscribe` for `uri` went out as call `call`.
    pub fn asked(&mut self, call: u64, uri: String) {
        self.asked.insert(call, uri);
    }

    /// Call `call` was answered; `ok` says whether with a result. Returns
    /// whether it was a subscribe of ours.
    pub fn answered(&mut self, call: u64, ok: bool) -> bool {
        let Some(uri) = self.asked.remove(&call) else {
            return false;
        };
        if ok {
            self.held.insert(uri);
        }
        true
    }

    /// A `resources/subscribe` of the session's own went out as `request`
    /// to renew `uri`, held, on a session that replaced an expired one.
    pub fn renewing(&mut self, request: u64, uri: String) {
        self.renewing.insert(request, uri);
    }

    /// Renewal `request` ended (answered or failed): the URI it renewed.
    pub fn renewed(&mut self, request: u64) -> Option<String> {
        self.renewing.remove(&request)
    }

    /// Drops `uri` at once (updates for it stop now); returns whether it
    /// was held. The session then tells the server, as its era says.
    pub fn release(&mut self, uri: &str) -> bool {
        self.held.remove(uri)
    }

    // ----- 2026: a listen request per set -----

    /// The URIs a new listen request should carry, were `uri` (if any)
    /// added: what is held and what an opening stream waits for.
    pub fn wanted_with(&self, uri: Option<&str>) -> Vec<String> {
        let mut wanted = self.held.clone();
        if let Some(opening) = &self.opening {
            wanted.extend(opening.waiting.iter().map(|(_, u)| u.clone()));
        }
        if let Some(uri) = uri {
            wanted.insert(uri.to_owned());
        }
        wanted.into_iter().collect()
    }

    /// A listen request carrying `uris` went out as `request`, with call
    /// `waiting` (a subscribe) waiting for its acknowledgement. Returns the
    /// request it replaces before acknowledgement, if any: the session
    /// cancels that one; its waiting calls now wait here.
    pub fn opened(
        &mut self,
        request: u64,
        uris: Vec<String>,
        waiting: Option<(u64, String)>,
    ) -> Option<u64> {
        let previous = self.opening.take();
        let mut calls = previous
            .as_ref()
            .map(|p| p.waiting.clone())
            .unwrap_or_default();
        calls.extend(waiting);
        self.opening = Some(Opening {
            request,
            uris: uris.into_iter().collect(),
            waiting: calls,
        });
        previous.map(|p| p.request)
    }

    /// Stream `from` went again under the id `to` (another protocol
    /// version, -32022): it is that one now.
    pub fn renamed(&mut self, from: u64, to: u64) {
        if self.current == Some(from) {
            self.current = Some(to);
        }
        if let Some(opening) = self.opening.as_mut().filter(|o| o.request == from) {
            opening.request = to;
        }
    }

    /// The request of the acknowledged stream.
    pub fn current(&self) -> Option<u64> {
        self.current
    }

    /// The request being opened.
    pub fn opening(&self) -> Option<u64> {
        self.opening.as_ref().map(|o| o.request)
    }

    /// Whether `request` is one of this session's resource streams.
    pub fn is_stream(&self, request: u64) -> bool {
        self.current == Some(request) || self.opening() == Some(request)
    }

    /// The server acknowledged `request`, agreeing to `agreed` (the
    /// acknowledgement's `resourceSubscriptions`). Returns each waiting
    /// call's outcome, and the stream it replaces (the session cancels
    /// it); `None` if `request` is not the stream being opened.
    #[allow(clippy::type_complexity)]
    pub fn acknowledged(
        &mut self,
        request: u64,
        agreed: &[String],
    ) -> Option<(Vec<(u64, String, Resolved)>, Option<u64>)> {
        if self.opening() != Some(request) {
            return None;
        }
        let opening = self.opening.take()?;
        let agreed: BTreeSet<&str> = agreed.iter().map(String::as_str).collect();
        // What the server agreed to of what was asked, less what was
        // released while the request was out.
        self.held = opening
            .uris
            .iter()
            .filter(|u| agreed.contains(u.as_str()))
            .filter(|u| self.held.contains(*u) || opening.waiting.iter().any(|(_, w)| w == *u))
            .cloned()
            .collect();
        let resolved: Vec<(u64, String, Resolved)> = opening
            .waiting
            .into_iter()
            .map(|(call, uri)| {
                let outcome = if self.held.contains(&uri) {
                    Resolved::Agreed
                } else {
                    Resolved::NotAgreed
                };
                (call, uri, outcome)
            })
            .collect();
        let replaced = self.current.replace(request);
        Some((resolved, replaced))
    }

    /// Nothing is wanted any more: forgets both streams and returns their
    /// requests, for the session to cancel.
    pub fn close_all(&mut self) -> Vec<u64> {
        self.held.clear();
        let mut requests: Vec<u64> = self.current.take().into_iter().collect();
        requests.extend(self.opening.take().map(|o| o.request));
        requests
    }

    /// The session ended: every subscription with it. Returns the calls
    /// still waiting for an acknowledgement, for the session to fail.
    pub fn session_closed(&mut self) -> Vec<u64> {
        self.held.clear();
        self.asked.clear();
        self.renewing.clear();
        self.current = None;
        self.opening
            .take()
            .map(|o| o.waiting.into_iter().map(|(call, _)| call).collect())
            .unwrap_or_default()
    }

    /// Stream `request` ended; `refused` when the server answered with an
    /// error. For an opening stream, its waiting calls are returned to fail.
    pub fn ended(&mut self, request: u64, refused: bool) -> (StreamEnd, Vec<u64>) {
        if self.opening() == Some(request) {
            let opening = self.opening.take().expect("checked above");
            let calls = opening.waiting.into_iter().map(|(call, _)| call).collect();
            return (StreamEnd::OpeningFailed, calls);
        }
        if self.current != Some(request) {
            return (StreamEnd::Unknown, Vec::new());
        }
        self.current = None;
        if !refused && self.reissues < MAX_REISSUES && !self.held.is_empty() {
            self.reissues += 1;
            return (StreamEnd::Reopen, Vec::new());
        }
        self.held.clear();
        (StreamEnd::Dropped, Vec::new())
    }

    /// What is held with no stream to carry it (2026: the acknowledged
    /// stream ended and the one opened again failed): dropped, and
    /// returned for the session to tell the host. Nothing while a stream
    /// is acknowledged or being opened.
    pub fn orphaned(&mut self) -> Vec<String> {
        if self.current.is_some() || self.opening.is_some() {
            return Vec::new();
        }
        std::mem::take(&mut self.held).into_iter().collect()
    }

    /// A subscribe call `call` waiting on an opening stream was cancelled
    /// by the host: it stops waiting (the stream still opens; an agreed URI
    /// is then held until unsubscribed). Returns whether it was waiting.
    pub fn abandon(&mut self, call: u64) -> bool {
        let Some(opening) = &mut self.opening else {
            return false;
        };
        let before = opening.waiting.len();
        opening.waiting.retain(|(c, _)| *c != call);
        opening.waiting.len() != before
    }

    /// Whether a `notifications/resources/updated` for `uri`, tagged with
    /// `tag` (2026) or untagged (2025), is for the host: only for a URI
    /// held, and in the 2026 era only on the acknowledged stream.
    pub fn update_passes(&self, tag: Option<u64>, uri: &str) -> bool {
        match tag {
            None => self.current.is_none() && self.held.contains(uri),
            Some(tag) => self.current == Some(tag) && self.held.contains(uri),
        }
    }
}

/// The URIs an acknowledgement agreed to: its
/// `notifications.resourceSubscriptions` strings (anything else in the
/// array is left out).
pub fn agreed_uris(params: Option<&Value>) -> Vec<String> {
    params
        .and_then(|p| p.get("notifications"))
        .and_then(|n| n.get("resourceSubscriptions"))
        .and_then(Value::as_array)
        .map(|uris| {
            uris.iter()
                .filter_map(Value::as_str)
                .take(MAX_PER_SERVER)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The `uri` of a `notifications/resources/updated`.
pub fn updated_uri(params: Option<&Value>) -> Option<&str> {
    params?.get("uri")?.as_str()
}

/// Notices waiting for the host to look, coalesced: a notice of a
/// `(server, uri)` already waiting is merged into it, not queued again, so
/// however many notifications arrive before the host looks, it reads each
/// resource once; an end of the watch is never lost to a change that came
/// with it ([`WatchNotice`]'s merge: an end outweighs all, a renewal says
/// what a change says). First-come order; bounded at
/// [`MAX_QUEUED_UPDATES`].
#[derive(Debug, Default)]
pub struct UpdateQueue {
    order: VecDeque<(String, String)>,
    waiting: BTreeMap<(String, String), WatchNotice>,
    dropped: u64,
}

impl UpdateQueue {
    /// Queues `notice` of `uri` of `server`; returns whether it is new
    /// (not merged into one waiting, not dropped at the bound).
    pub fn push(&mut self, server: &str, uri: &str, notice: WatchNotice) -> bool {
        let key = (server.to_owned(), uri.to_owned());
        if let Some(waiting) = self.waiting.get_mut(&key) {
            let older = std::mem::replace(waiting, WatchNotice::Updated);
            *waiting = older.merged(notice);
            return false;
        }
        if self.order.len() >= MAX_QUEUED_UPDATES {
            self.dropped += 1;
            return false;
        }
        self.waiting.insert(key.clone(), notice);
        self.order.push_back(key);
        true
    }

    /// The oldest notice waiting, as `(server, uri, notice)`.
    pub fn pop(&mut self) -> Option<(String, String, WatchNotice)> {
        let key = self.order.pop_front()?;
        let notice = self.waiting.remove(&key).unwrap_or(WatchNotice::Updated);
        Some((key.0, key.1, notice))
    }

    /// How many notices wait.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// How many notices were dropped at the bound so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn none_in_flight(_: u64) -> bool {
        false
    }

    #[test]
    fn a_2025_subscribe_is_held_once_answered_and_released_at_once() {
        let mut s = ResourceSubscriptions::default();
        assert_eq!(s.plan("a://1", none_in_flight), Ok(Plan::Ask));
        s.asked(3, "a://1".into());
        assert!(
            !s.update_passes(None, "a://1"),
            "not held before the answer"
        );
        assert!(s.answered(3, true));
        assert!(s.update_passes(None, "a://1"));
        assert!(!s.update_passes(None, "a://2"));
        assert_eq!(s.plan("a://1", none_in_flight), Ok(Plan::Held));
        assert!(s.release("a://1"));
        assert!(!s.update_passes(None, "a://1"));
        assert!(!s.release("a://1"));
    }

    #[test]
    fn a_refused_2025_subscribe_holds_nothing() {
        let mut s = ResourceSubscriptions::default();
        s.asked(3, "a://1".into());
        assert!(s.answered(3, false));
        assert!(!s.holds("a://1"));
        assert!(!s.answered(4, true), "not a subscribe of ours");
    }

    #[test]
    fn the_bound_counts_held_and_asked_and_forgets_calls_that_ended() {
        let mut s = ResourceSubscriptions::default();
        for n in 0..MAX_PER_SERVER as u64 {
            s.asked(n, format!("a://{n}"));
        }
        let all = |_: u64| true;
        assert_eq!(s.plan("a://new", all), Err(Refusal::Limit));
        // One already asked for may be asked again.
        assert_eq!(s.plan("a://0", all), Ok(Plan::Ask));
        // Calls that ended otherwise (timed out) free their place.
        assert_eq!(s.plan("a://new", |c| c != 5), Ok(Plan::Ask));
    }

    #[test]
    fn the_2026_stream_is_replaced_only_once_the_new_one_is_acknowledged() {
        let mut s = ResourceSubscriptions::default();
        let uris = s.wanted_with(Some("a://1"));
        assert_eq!(s.opened(10, uris, Some((10, "a://1".into()))), None);
        assert!(!s.update_passes(Some(10), "a://1"), "not before the ack");
        let (resolved, replaced) = s.acknowledged(10, &["a://1".into()]).unwrap();
        assert_eq!(resolved, vec![(10, "a://1".into(), Resolved::Agreed)]);
        assert_eq!(replaced, None);
        assert!(s.update_passes(Some(10), "a://1"));
        assert!(
            !s.update_passes(None, "a://1"),
            "untagged is not the stream's"
        );
        assert!(!s.update_passes(Some(9), "a://1"));

        // A second URI: a new request; the old stream keeps delivering.
        let uris = s.wanted_with(Some("a://2"));
        assert_eq!(uris, vec!["a://1".to_owned(), "a://2".to_owned()]);
        assert_eq!(s.opened(11, uris, Some((11, "a://2".into()))), None);
        assert!(s.update_passes(Some(10), "a://1"));
        // The server agrees to one of two.
        let (resolved, replaced) = s.acknowledged(11, &["a://1".into()]).unwrap();
        assert_eq!(resolved, vec![(11, "a://2".into(), Resolved::NotAgreed)]);
        assert_eq!(replaced, Some(10));
        assert!(!s.update_passes(Some(10), "a://1"));
        assert!(s.update_passes(Some(11), "a://1"));
        assert!(!s.holds("a://2"));
    }

    #[test]
    fn a_request_replaced_before_its_ack_hands_its_calls_on() {
        let mut s = ResourceSubscriptions::default();
        let uris = s.wanted_with(Some("a://1"));
        let _ = s.opened(1, uris, Some((1, "a://1".into())));
        let uris = s.wanted_with(Some("a://2"));
        assert_eq!(uris.len(), 2);
        assert_eq!(s.opened(2, uris, Some((2, "a://2".into()))), Some(1));
        assert_eq!(s.acknowledged(1, &["a://1".into()]), None, "replaced");
        let (resolved, _) = s
            .acknowledged(2, &["a://1".into(), "a://2".into()])
            .unwrap();
        assert_eq!(
            resolved,
            vec![
                (1, "a://1".into(), Resolved::Agreed),
                (2, "a://2".into(), Resolved::Agreed)
            ]
        );
    }

    #[test]
    fn a_failed_opening_fails_its_calls_and_keeps_the_stream_before_it() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        let _ = s.opened(2, s.wanted_with(Some("a://2")), Some((2, "a://2".into())));
        assert_eq!(s.ended(2, true), (StreamEnd::OpeningFailed, vec![2]));
        assert!(s.update_passes(Some(1), "a://1"));
        assert_eq!(s.ended(7, false), (StreamEnd::Unknown, vec![]));
    }

    #[test]
    fn an_acknowledged_stream_that_ends_reopens_once_then_drops() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        assert_eq!(s.ended(1, false), (StreamEnd::Reopen, vec![]));
        assert_eq!(s.wanted_with(None), vec!["a://1".to_owned()]);
        let _ = s.opened(2, s.wanted_with(None), None);
        let _ = s.acknowledged(2, &["a://1".into()]);
        assert_eq!(s.ended(2, false), (StreamEnd::Dropped, vec![]));
        assert!(!s.holds("a://1"));
    }

    #[test]
    fn a_failed_reopening_leaves_what_was_held_orphaned() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        assert!(s.orphaned().is_empty(), "carried by its stream");
        assert_eq!(s.ended(1, false), (StreamEnd::Reopen, vec![]));
        let _ = s.opened(2, s.wanted_with(None), None);
        assert!(s.orphaned().is_empty(), "being opened again");
        assert_eq!(s.ended(2, true), (StreamEnd::OpeningFailed, vec![]));
        assert_eq!(s.orphaned(), vec!["a://1".to_owned()]);
        assert!(!s.holds("a://1"));
        assert!(s.orphaned().is_empty(), "told once");
    }

    #[test]
    fn a_refused_acknowledged_stream_drops_at_once() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        assert_eq!(s.ended(1, true), (StreamEnd::Dropped, vec![]));
    }

    #[test]
    fn a_uri_released_while_its_stream_opens_is_not_held_after() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        let _ = s.opened(2, s.wanted_with(Some("a://2")), Some((2, "a://2".into())));
        assert!(s.release("a://1"));
        let _ = s.acknowledged(2, &["a://1".into(), "a://2".into()]);
        assert!(!s.holds("a://1"));
        assert!(s.holds("a://2"));
    }

    #[test]
    fn a_cancelled_waiting_call_is_no_longer_resolved() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        assert!(s.abandon(1));
        assert!(!s.abandon(1));
        let (resolved, _) = s.acknowledged(1, &["a://1".into()]).unwrap();
        assert!(resolved.is_empty());
    }

    #[test]
    fn a_stream_sent_again_under_a_new_id_is_acknowledged_under_it() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        s.renamed(1, 4);
        assert!(!s.is_stream(1));
        assert_eq!(s.acknowledged(1, &["a://1".into()]), None);
        let (resolved, _) = s.acknowledged(4, &["a://1".into()]).unwrap();
        assert_eq!(resolved, vec![(1, "a://1".into(), Resolved::Agreed)]);
        s.renamed(4, 9);
        assert!(s.update_passes(Some(9), "a://1"));
    }

    #[test]
    fn a_closed_session_fails_the_calls_still_waiting() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        let _ = s.opened(2, s.wanted_with(Some("a://2")), Some((2, "a://2".into())));
        assert_eq!(s.session_closed(), vec![2]);
        assert!(!s.holds("a://1"));
        assert!(!s.is_stream(1));
    }

    #[test]
    fn close_all_returns_both_streams() {
        let mut s = ResourceSubscriptions::default();
        let _ = s.opened(1, vec!["a://1".into()], Some((1, "a://1".into())));
        let _ = s.acknowledged(1, &["a://1".into()]);
        let _ = s.opened(2, s.wanted_with(Some("a://2")), Some((2, "a://2".into())));
        assert_eq!(s.close_all(), vec![1, 2]);
        assert!(!s.holds("a://1"));
    }

    #[test]
    fn the_listen_params_carry_only_the_uris() {
        let params = WatchParams {
            notifications: WatchFilter {
                resource_subscriptions: vec!["a://1".into()],
            },
        };
        assert_eq!(
            serde_json::to_value(params).unwrap(),
            json!({"notifications": {"resourceSubscriptions": ["a://1"]}})
        );
    }

    #[test]
    fn agreed_uris_are_read_leniently_and_bounded() {
        let ack = json!({"notifications": {"resourceSubscriptions": ["a://1", 7, null, "a://2"]}});
        assert_eq!(agreed_uris(Some(&ack)), vec!["a://1", "a://2"]);
        assert!(agreed_uris(Some(&json!({"notifications": {}}))).is_empty());
        assert!(agreed_uris(None).is_empty());
        let many: Vec<String> = (0..1000).map(|n| format!("a://{n}")).collect();
        let ack = json!({"notifications": {"resourceSubscriptions": many}});
        assert_eq!(agreed_uris(Some(&ack)).len(), MAX_PER_SERVER);
        assert_eq!(updated_uri(Some(&json!({"uri": "a://1"}))), Some("a://1"));
        assert_eq!(updated_uri(Some(&json!({"uri": 1}))), None);
    }

    #[test]
    fn many_updates_of_one_uri_before_the_host_looks_are_one() {
        let updated = WatchNotice::Updated;
        let mut q = UpdateQueue::default();
        assert!(q.push("s", "a://1", updated.clone()));
        for _ in 0..100 {
            assert!(!q.push("s", "a://1", updated.clone()));
        }
        assert!(
            q.push("t", "a://1", updated.clone()),
            "another server's is another update"
        );
        assert!(q.push("s", "a://2", updated.clone()));
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(), Some(("s".into(), "a://1".into(), updated.clone())));
        // Once read, the next change is news again.
        assert!(q.push("s", "a://1", updated.clone()));
        assert_eq!(q.pop(), Some(("t".into(), "a://1".into(), updated.clone())));
        assert_eq!(q.pop(), Some(("s".into(), "a://2".into(), updated.clone())));
        assert_eq!(q.pop(), Some(("s".into(), "a://1".into(), updated)));
        assert!(q.is_empty());
    }

    #[test]
    fn an_end_waiting_is_never_lost_to_a_change_and_a_renewal_outweighs_a_change() {
        let ended = WatchNotice::Ended(WatchEnd::ServerEnded {
            reason: "exit status: 1".into(),
        });
        let mut q = UpdateQueue::default();
        assert!(q.push("s", "a://1", WatchNotice::Updated));
        assert!(!q.push("s", "a://1", ended.clone()));
        assert_eq!(q.pop(), Some(("s".into(), "a://1".into(), ended.clone())));

        assert!(q.push("s", "a://1", WatchNotice::Renewed));
        assert!(!q.push("s", "a://1", WatchNotice::Updated));
        assert_eq!(
            q.pop(),
            Some(("s".into(), "a://1".into(), WatchNotice::Renewed))
        );

        // Renewed after an end (subscribed again since): the newer holds.
        assert!(q.push("s", "a://1", ended.clone()));
        assert!(!q.push("s", "a://1", WatchNotice::Renewed));
        assert_eq!(
            q.pop(),
            Some(("s".into(), "a://1".into(), WatchNotice::Renewed))
        );
        assert!(q.push("s", "a://1", WatchNotice::Renewed));
        assert!(!q.push("s", "a://1", ended.clone()));
        assert_eq!(q.pop(), Some(("s".into(), "a://1".into(), ended)));
    }

    #[test]
    fn the_queue_is_bounded_and_counts_what_it_dropped() {
        let mut q = UpdateQueue::default();
        for n in 0..MAX_QUEUED_UPDATES {
            assert!(q.push("s", &format!("a://{n}"), WatchNotice::Updated));
        }
        assert!(!q.push("s", "a://over", WatchNotice::Updated));
        assert_eq!(q.dropped(), 1);
        assert_eq!(q.len(), MAX_QUEUED_UPDATES);
    }
}
