//! Streamable HTTP (MCP 2025-11-25 `basic/transports`) as data.
//!
//! [`HttpTransport`] wraps a [`Session`] and turns its messages into HTTP
//! exchanges: it says which request to make ([`HttpOutput::Send`]) and
//! interprets each response as it arrives (head, body chunks, end, or
//! failure). The executor only moves bytes; every decision — which headers,
//! JSON body or SSE stream, when to resume a broken stream, what a 404
//! means — is made here.
//!
//! Behaviour, in the order a session meets it:
//! - Every client message is its own POST with
//!   `Accept: application/json, text/event-stream`. A request's answer is one
//!   JSON body or an SSE stream; notifications and responses get 202.
//! - The `Mcp-Session-Id` from the `initialize` response is echoed on every
//!   later request, and `MCP-Protocol-Version` once it is negotiated.
//! - After `notifications/initialized` is accepted, a GET opens the server's
//!   own stream (405: the server offers none; 409: one is already open).
//!   Messages from any stream reach the same session logic as stdio.
//! - Every message after `notifications/initialized` (`logging/setLevel`,
//!   `tools/list`, and so every later request) waits until that GET has its
//!   response head — a stream, a 405 or any other answer — or failed, so a
//!   server that sends requests or answers only on its own stream (an
//!   elicitation with no related request, a resumed answer) finds the
//!   stream open. The wait is bounded: at most
//!   [`HttpOptions::server_stream_wait`] (2 s) after `initialized` was
//!   sent, and never more than half of what is left of the startup
//!   budget; then the messages go anyway and the GET carries on. The same
//!   holds after a fresh `initialize` that replaced an expired session.
//! - A stream that breaks before its answer arrived is resumed with GET and
//!   `Last-Event-ID`, after the server's `retry` delay when it sent one.
//!   Attempts are bounded; a broken stream is never a cancellation.
//! - 404, or 400 naming the session, on a request that carried a session id
//!   means the server forgot the session: one fresh `initialize` without the
//!   id, then the failed message is sent again, once. During startup (a
//!   `tools/list` answered 404 right after `initialize`) this happens at
//!   most once; a second expiry before the session is ready fails it.
//! - A POST stream that carried its request's answer is read to its end,
//!   which the server reaches right after the answer: the executor keeps
//!   the connection for the next request. One that stays open is aborted
//!   `LINGER` (1 s) later, and what it carries meanwhile is dropped. A
//!   stream whose request was cancelled or timed out is aborted at once.
//! - Redirects are never followed: a 3xx fails with the status and the
//!   target's origin, and nothing is sent there.
//! - A request (`initialize` included) answered 401 (its token expired or
//!   was revoked, or there is none yet) or 403 with a Bearer
//!   `error="insufficient_scope"`, on a server with an `oauth` table
//!   whose host can re-authorize ([`HttpOptions::reauthorize`]), does
//!   not fail at once: it waits, with every message sent meanwhile, while
//!   the host is asked ([`Question::Authorization`], through the same
//!   question path as a form). A new `Authorization` header resends them,
//!   in order; the host's "no" fails the waiting requests with its reason.
//!   Each request re-authorizes at most once per cause — one 401, one
//!   step-up — so a server that refuses again fails it rather than loop.
//!   Budgets keep running meanwhile: a request's deadline (and the
//!   startup budget) includes its re-authorization, and one that passes
//!   fails as timed out and is not resent. The host's own bounds (the
//!   login's) keep a re-authorization shorter than a person's patience.
//! - A request that presents an `Authorization: DPoP` token (RFC 9449)
//!   carries a fresh proof from the host's prover; a 401 `use_dpop_nonce`
//!   resends it once with the nonce the server supplied, which later
//!   requests keep (see `dpop.rs`), and never re-authorizes.
//! - At close, DELETE with the session id, bounded in time (405 is fine).
//!
//! In the stateless 2026-07-28 era (the session probes for it with
//! `server/discover`, the first POST; see [`crate::session`]):
//! - Every POST carries `MCP-Protocol-Version` (the probe's too) and the
//!   standard headers of [`headers`]: `Mcp-Method`, `Mcp-Name`, and the
//!   `Mcp-Param-*` a called tool's `x-mcp-header` annotations ask for.
//!   Tools whose annotations are invalid never reach the tool list.
//! - No session: no `Mcp-Session-Id` (one a server sends is ignored), no
//!   GET stream, no DELETE, no ping, and no notifications at all — closing
//!   a request's response stream is its cancellation: a cancelled call's
//!   exchange is aborted, and both executors close an aborted exchange's
//!   connection at once (never read on to keep it). The call ends with
//!   [`CancelNotice::StreamClosed`]: rho says what it did, since whether
//!   the server stopped is not rho's to know (see the note below).
//! - A response stream is never resumed: one that breaks before its answer
//!   re-issues the request under a new id, once, when it is safe to run
//!   twice (discovery, listings, a tool marked read-only or idempotent);
//!   any other call fails, saying why (see
//!   [`Session::handle_stream_lost`]).
//! - The probe answered HTTP 4xx without a JSON-RPC error the 2026 era
//!   defines means a legacy server: the session falls back to
//!   `initialize`. A 401 or 403 is no such sign: it fails (or
//!   re-authorizes) as any request would.
//!
//! Header values (configured credentials, the session id) never appear in
//! `Debug` output or logs.
//!
//! # Implementation note: no `notifications/cancelled` in the 2026 era
//!
//! The 2026-07-28 spec makes closing the response stream the cancellation
//! and expects no notification, though it does not forbid one. A server
//! that answers with one JSON body may not notice a client going, so rho
//! could post `notifications/cancelled` as well. It does not, because it
//! stops nothing: measured against the interop servers
//! (`tests/interop/`), Python `mcp` 2.3.0 and `fastmcp` 4.2.3 (on `mcp`
//! 2.3.0), with SSE or JSON answers, and TS `@modelcontextprotocol/server`
//! 2.4.0, all acknowledge such a POST with 202 and drop it (the Python
//! SDK on purpose: a stateless endpoint honouring a request id chosen by
//! the client would let one anonymous caller cancel another's work).
//! Closing the connection stops the handler on every one of them except
//! the two Python servers with JSON answers, which run the request to its
//! end whatever rho does. And rho could not send it only for JSON answers
//! anyway: a call still running has had no response head, so rho does not
//! know yet which kind of answer it will get. So the 2026 era sends no
//! notification, on either executor; the 2025 era sends one on every
//! transport (there the Python servers stop on it, and not on a close).
//!
//! This file holds the transport's state, its inputs, commands and
//! outputs; `types.rs` the public vocabulary (options, requests, outputs),
//! `streams.rs` the SSE streams (the server's own, resumption),
//! `refusals.rs` what an HTTP error answer means, and [`headers`] the
//! 2026 era's standard headers.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use crate::features::elicitation::{FormAnswer, UrlAnswer};
use crate::oauth::challenge::{BearerChallenge, bearer_challenge};
use crate::session::{
    ApiMisuse, AuthorizationReason, CallError, CallId, CancelNotice, CloseReason, Event, Framing,
    Question, QuestionId, SamplingAnswer, Session, SessionOptions, SessionState, TaskAugmentation,
    Timer, TransmitKind,
};
use crate::session::{Clock, TimerTable, earlier};
use crate::wire::framing::byte_size;
use crate::wire::jsonrpc::{ClientRequestId, Incoming, Message, ParseError};
use crate::wire::sse::{SseDecoder, SseError};

mod dpop;
pub mod headers;
mod refusals;
mod streams;
mod types;

pub use types::*;

/// What an exchange is for.
#[derive(Debug)]
enum Role {
    /// One client message.
    Post {
        kind: TransmitKind,
        body: Vec<u8>,
        /// Already re-sent once after a session expiry.
        retried: bool,
        /// Sent with an `Mcp-Session-Id`.
        with_session: bool,
        /// The [`HttpTransport::session_epoch`] it was sent under.
        epoch: u64,
        /// Already re-sent once with a nonce the server supplied in a
        /// `use_dpop_nonce` refusal.
        nonce_retried: bool,
    },
    /// A GET stream: the server's own (`for_request: None`) or the
    /// resumption of a POST's broken stream.
    Stream {
        for_request: Option<ClientRequestId>,
        attempt: u32,
        /// Where the earlier connections of this stream left off.
        from: ResumePoint,
    },
    /// The DELETE at close.
    Delete,
}

#[derive(Debug)]
enum Body {
    /// Head not seen yet, or nothing to read.
    Ignore,
    Json(Vec<u8>),
    Sse(Box<SseDecoder>),
    /// An error response's body, kept short, read at the end.
    Error(Vec<u8>),
}

#[derive(Debug)]
struct Exchange {
    role: Role,
    status: u16,
    body: Body,
    /// Whether the stream delivered any event (resets resume attempts).
    delivered: bool,
    /// A POST stream that carried its request's answer: the server ends
    /// it next, so once nothing needs it, it lingers rather than being
    /// aborted (an aborted exchange costs the executor its connection).
    answered: bool,
    /// A request the session sent as it closed (a `tasks/cancel`), which
    /// the close waits for, its answer unread, before the DELETE.
    farewell: bool,
}

impl Exchange {
    /// The request whose answer it carries, if any.
    fn request(&self) -> Option<ClientRequestId> {
        match &self.role {
            Role::Post { kind, .. } => request_of(*kind),
            Role::Stream { for_request, .. } => *for_request,
            Role::Delete => None,
        }
    }
}

/// Where a broken stream resumes from. SSE keeps the last event id and
/// the `retry` delay across reconnections, not per connection, so a
/// connection that sends neither still resumes from the earlier ones.
#[derive(Clone, Debug, Default)]
struct ResumePoint {
    last_event_id: Option<String>,
    retry: Option<u64>,
}

/// A stream resumption waiting for its delay.
#[derive(Debug)]
struct Resume {
    at: Instant,
    for_request: Option<ClientRequestId>,
    from: ResumePoint,
    attempt: u32,
}

#[derive(Debug, PartialEq, Eq)]
enum ServerStream {
    NotOpened,
    Open,
    /// 405: the server offers no stream of its own.
    Unsupported,
}

/// The DELETE at close is under way; its deadline is [`Timer::Delete`].
#[derive(Debug)]
struct Closing {
    reason: CloseReason,
    /// The DELETE went (or there is no session to delete).
    deleted: bool,
}

/// What one request already spent on re-authorization.
#[derive(Clone, Copy, Debug, Default)]
struct AuthTries {
    /// It was refused 401 once and resent with a new token.
    renewed: bool,
    /// It was refused 403 `insufficient_scope` once and resent.
    stepped_up: bool,
}

/// A message waiting for a new `Authorization` header.
#[derive(Debug)]
struct AuthParked {
    body: Vec<u8>,
    kind: TransmitKind,
    retried: bool,
    /// The refusal that parked it (`None`: sent while waiting).
    refusal: Option<(u16, AuthorizationReason)>,
}

/// A re-authorization the host was asked for.
#[derive(Debug)]
struct Reauthorizing {
    question: QuestionId,
    /// The scope the server wants, for a failure's reason.
    scope: Option<Vec<String>>,
    parked: Vec<AuthParked>,
}

/// The longest wait between stream resumption attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long a POST stream that carried its answer may stay open once
/// nothing needs it, before it is aborted. A server ends such a stream
/// right after the answer; a blocking executor reads it to that end and
/// keeps the connection (and its worker) for the next request, where an
/// abort would cost both. What a server sends there meanwhile is dropped.
const LINGER: Duration = Duration::from_secs(1);

/// The longest error body kept for a message.
const ERROR_BODY_KEEP: usize = 4096;

/// One MCP session over Streamable HTTP. The contract is the session's:
/// after every `handle_*` or command, drain [`HttpTransport::poll_output`]
/// and [`HttpTransport::poll_event`], then read
/// [`HttpTransport::poll_timeout`].
///
/// `Debug` says whether there is a session id, never what it is.
pub struct HttpTransport {
    session: Session,
    options: HttpOptions,
    next_exchange: u64,
    exchanges: BTreeMap<ExchangeId, Exchange>,
    outputs: VecDeque<HttpOutput>,
    events: VecDeque<Event>,
    session_id: Option<String>,
    /// Counts fresh sessions after expiry, so that a 404 for a message sent
    /// under an already replaced session re-sends it instead of starting
    /// yet another session.
    session_epoch: u64,
    /// A fresh `initialize` after expiry is under way: messages wait here.
    reinitializing: bool,
    /// Messages held back while `reinitializing` or while the server
    /// stream's GET is awaited ([`Timer::ServerStreamWait`] armed), in
    /// order.
    parked: Vec<(Vec<u8>, TransmitKind, bool)>,
    /// Requests that ended while held back and were never sent, until the
    /// next pump: the `notifications/cancelled` naming one is not sent
    /// either (it may come after the held messages went).
    unsent: BTreeSet<ClientRequestId>,
    /// The transport's fixed timers: [`Timer::ServerStreamWait`] (until
    /// when messages after `notifications/initialized` wait for the server
    /// stream's GET to be answered; disarmed when they flow) and
    /// [`Timer::Delete`] (the DELETE at close gives up).
    timers: TimerTable,
    /// The latest `now` seen; earlier ones are clamped to it.
    clock: Clock,
    resumes: Vec<Resume>,
    /// Answered POST streams nothing needs any more, with when each is
    /// aborted unless it ended by itself ([`LINGER`] after it was left;
    /// oldest first). What they still carry is dropped.
    lingering: VecDeque<(Instant, ExchangeId)>,
    server_stream: ServerStream,
    /// The host is asked for a new `Authorization` header; messages wait.
    reauthorizing: Option<Reauthorizing>,
    /// Re-authorizations spent per request still pending.
    auth_tries: BTreeMap<ClientRequestId, AuthTries>,
    /// The latest DPoP nonce the server supplied (`DPoP-Nonce`), sent in
    /// every later proof.
    dpop_nonce: Option<String>,
    closing: Option<Closing>,
    closed: bool,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("session", &self.session)
            .field("options", &self.options)
            .field("exchanges", &self.exchanges)
            .field("has_session_id", &self.session_id.is_some())
            .field("reinitializing", &self.reinitializing)
            .field("timers", &self.timers)
            .field("resumes", &self.resumes)
            .field("lingering", &self.lingering)
            .field("server_stream", &self.server_stream)
            .field("closing", &self.closing)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

impl HttpTransport {
    /// Starts a session over HTTP: the `initialize` POST is the first
    /// output.
    pub fn new(mut session_options: SessionOptions, options: HttpOptions, now: Instant) -> Self {
        session_options.framing = Framing::Messages;
        session_options.ping_interval = Some(options.ping_interval);
        // Every request gets an answer over HTTP: the probe needs no wait
        // of its own.
        session_options.discover_wait = None;
        session_options.check_tool_headers = true;
        let mut transport = Self {
            session: Session::new(session_options, now),
            options,
            next_exchange: 0,
            exchanges: BTreeMap::new(),
            outputs: VecDeque::new(),
            events: VecDeque::new(),
            session_id: None,
            session_epoch: 0,
            reinitializing: false,
            parked: Vec::new(),
            unsent: BTreeSet::new(),
            timers: TimerTable::default(),
            clock: Clock::new(now),
            resumes: Vec::new(),
            lingering: VecDeque::new(),
            server_stream: ServerStream::NotOpened,
            reauthorizing: None,
            auth_tries: BTreeMap::new(),
            dpop_nonce: None,
            closing: None,
            closed: false,
        };
        transport.pump(now);
        transport
    }

    // ----- getters -----

    /// The session inside.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Whether the server gave this session an id.
    pub fn has_session_id(&self) -> bool {
        self.session_id.is_some()
    }

    // ----- inputs -----

    /// The response's status line and headers arrived.
    pub fn handle_response_head(
        &mut self,
        now: Instant,
        exchange: ExchangeId,
        status: u16,
        headers: &[(String, String)],
    ) {
        let now = self.clock.observe(now);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let Some(x) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        if x.farewell {
            return;
        }
        x.status = status;
        // Any answer to the server stream's GET, a stream or not, ends the
        // wait of the messages held for it.
        let server_stream_answered = matches!(
            x.role,
            Role::Stream {
                for_request: None,
                ..
            }
        );
        let content_type = header("content-type").unwrap_or("").to_ascii_lowercase();
        let is_sse = content_type.starts_with("text/event-stream");
        if (300..400).contains(&status) {
            let target = header("location")
                .and_then(|l| self.options.url.join(l).ok())
                .map(|u| u.origin().ascii_serialization());
            let reason = match target {
                Some(origin) => format!(
                    "the server answered HTTP {status}, redirecting to {origin}; rho never follows redirects, so configure the final URL"
                ),
                None => format!(
                    "the server answered HTTP {status} (a redirect); rho never follows redirects"
                ),
            };
            self.fail_exchange(now, exchange, reason);
            return;
        }
        self.remember_dpop_nonce(headers);
        if status == 401 && self.retried_with_nonce(now, exchange, headers) {
            self.pump(now);
            return;
        }
        if matches!(status, 401 | 403) && self.refused_credentials(now, exchange, status, headers) {
            self.pump(now);
            return;
        }
        let Some(x) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        match &x.role {
            Role::Delete => x.body = Body::Ignore,
            Role::Post { kind, .. } => {
                if matches!(kind, TransmitKind::Initialize(_))
                    && (200..300).contains(&status)
                    && let Some(id) = header("mcp-session-id")
                {
                    self.session_id = Some(id.to_owned());
                }
                x.body = if !(200..300).contains(&status) {
                    Body::Error(Vec::new())
                } else if status == 202
                    || !matches!(kind, TransmitKind::Request(_) | TransmitKind::Initialize(_))
                {
                    // Only requests have answers; a body on a notification
                    // or response (some servers send `{}` with 200) is noise.
                    Body::Ignore
                } else if is_sse {
                    Body::Sse(Box::new(SseDecoder::new(self.options.max_body)))
                } else if content_type.starts_with("application/json") {
                    Body::Json(Vec::new())
                } else if matches!(kind, TransmitKind::Request(_) | TransmitKind::Initialize(_)) {
                    Body::Error(Vec::new())
                } else {
                    Body::Ignore
                };
            }
            Role::Stream { .. } => {
                x.body = if (200..300).contains(&status) && is_sse {
                    Body::Sse(Box::new(SseDecoder::new(self.options.max_body)))
                } else {
                    Body::Error(Vec::new())
                };
            }
        }
        if server_stream_answered {
            self.end_stream_wait();
        }
        self.pump(now);
    }

    /// A chunk of the response body arrived. An answer over the size cap
    /// (`max_message_bytes`) or not JSON-RPC fails the request the
    /// exchange belongs to at once (a POST's own response, or the
    /// resumption of its stream); on the server's own stream it is logged.
    pub fn handle_response_body(&mut self, now: Instant, exchange: ExchangeId, chunk: &[u8]) {
        let now = self.clock.observe(now);
        let Some(x) = self.exchanges.get_mut(&exchange) else {
            return;
        };
        let request = match &x.role {
            Role::Post { kind, .. } => request_of(*kind),
            Role::Stream { for_request, .. } => *for_request,
            Role::Delete => None,
        };
        let mut frames = Vec::new();
        let mut too_large = None;
        match &mut x.body {
            Body::Ignore => {}
            Body::Json(buf) => {
                if buf.len() + chunk.len() > self.options.max_body {
                    let limit = self.options.max_body;
                    self.fail_exchange(now, exchange, over_the_cap(limit));
                    return;
                }
                buf.extend_from_slice(chunk);
            }
            Body::Error(buf) => {
                let room = ERROR_BODY_KEEP.saturating_sub(buf.len());
                buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            Body::Sse(decoder) => {
                decoder.push(chunk);
                while let Some(event) = decoder.next_event() {
                    match event {
                        Ok(event) => {
                            x.delivered = true;
                            if !event.data.is_empty() {
                                frames.push(event.data);
                            }
                        }
                        Err(error) => {
                            let SseError::TooLarge { limit } = &error;
                            too_large = Some(*limit);
                            tracing::warn!(
                                server = %self.session.server(),
                                "server-sent event dropped: {error}"
                            );
                        }
                    }
                }
                // A priming event (id, no data) also counts as progress.
                if decoder.last_event_id().is_some() {
                    x.delivered = true;
                }
            }
        }
        if let (Some(limit), Some(_)) = (too_large, request) {
            self.fail_exchange(now, exchange, over_the_cap(limit));
            return;
        }
        for frame in frames {
            if let Err(error) = self.session.handle_answer_bytes(now, frame.as_bytes())
                && request.is_some()
            {
                self.fail_exchange(now, exchange, not_json_rpc(&error));
                return;
            }
        }
        if let Some(x) = self.exchanges.get_mut(&exchange)
            && matches!(x.role, Role::Post { .. })
            && request.is_some_and(|r| !self.session.is_pending(r))
        {
            x.answered = true;
        }
        self.pump(now);
    }

    /// The response body ended normally.
    pub fn handle_response_end(&mut self, now: Instant, exchange: ExchangeId) {
        let now = self.clock.observe(now);
        let Some(x) = self.exchanges.remove(&exchange) else {
            self.stop_lingering(exchange);
            return;
        };
        if x.farewell {
            self.close_step();
            return;
        }
        match (x.role, x.body) {
            (Role::Delete, _) => self.close_step(),
            (Role::Post { kind, .. }, Body::Json(buf)) => {
                if buf.is_empty() {
                    self.fail_transmit(now, kind, "the server sent an empty response".into());
                } else if let Err(error) = self.session.handle_answer_bytes(now, &buf) {
                    self.fail_transmit(now, kind, not_json_rpc(&error));
                } else if let Some(request) =
                    request_of(kind).filter(|r| self.session.awaits_answer(*r))
                {
                    // The body was JSON-RPC but not the answer: an error
                    // under `null` or another id answers this request, and
                    // anything else never will.
                    match Incoming::parse(&buf) {
                        Ok(Incoming::Single(Message::Error { error, .. })) => {
                            self.session.handle_error_answer(now, request, error);
                        }
                        _ => self.fail_transmit(
                            now,
                            kind,
                            "the server's response did not answer the request (no result or error with its id)".into(),
                        ),
                    }
                }
            }
            (Role::Post { kind, .. }, Body::Sse(decoder)) => {
                self.stream_ended(
                    now,
                    request_of(kind),
                    &decoder,
                    ResumePoint::default(),
                    0,
                    x.delivered,
                );
            }
            (role @ Role::Post { .. }, Body::Error(buf)) => {
                self.http_error(now, role, x.status, &buf);
            }
            (Role::Post { kind, .. }, Body::Ignore) => {
                if kind == TransmitKind::Initialized {
                    if self.server_stream == ServerStream::NotOpened {
                        self.open_server_stream(None, ResumePoint::default(), 0);
                    } else {
                        // No GET to wait for.
                        self.end_stream_wait();
                    }
                }
                // A 202 to a request means the answer comes on another
                // stream; the request stays pending under its deadline.
                // Not so in the stateless era, which has no other stream:
                // the answer will never come (a probe meeting this is
                // talking to a legacy server).
                if let (TransmitKind::Request(_), true) = (kind, self.session.is_stateless()) {
                    self.fail_transmit(
                        now,
                        kind,
                        format!(
                            "the server accepted the request without answering it (HTTP {}), which the 2026-07-28 protocol does not allow",
                            x.status
                        ),
                    );
                }
            }
            (
                Role::Stream {
                    for_request,
                    attempt,
                    from,
                },
                Body::Sse(decoder),
            ) => {
                self.stream_ended(now, for_request, &decoder, from, attempt, x.delivered);
            }
            (
                Role::Stream {
                    for_request,
                    attempt,
                    from,
                },
                body,
            ) => {
                let text = match &body {
                    Body::Error(buf) => excerpt(buf),
                    _ => String::new(),
                };
                self.stream_refused(now, for_request, from, attempt, x.status, text);
            }
        }
        self.pump(now);
    }

    /// The exchange failed: no connection, or the body broke off.
    pub fn handle_exchange_failed(
        &mut self,
        now: Instant,
        exchange: ExchangeId,
        failure: HttpFailure,
    ) {
        let now = self.clock.observe(now);
        let Some(x) = self.exchanges.remove(&exchange) else {
            self.stop_lingering(exchange);
            return;
        };
        if x.farewell {
            self.close_step();
            return;
        }
        if matches!(
            x.role,
            Role::Stream {
                for_request: None,
                ..
            }
        ) {
            self.end_stream_wait();
        }
        match (x.role, x.body) {
            (Role::Delete, _) => self.close_step(),
            (Role::Post { kind, .. }, Body::Sse(decoder)) => {
                self.stream_ended(
                    now,
                    request_of(kind),
                    &decoder,
                    ResumePoint::default(),
                    0,
                    x.delivered,
                );
            }
            (Role::Post { kind, .. }, _) => {
                let hint = unreachable_hint(failure.kind);
                self.fail_transmit(
                    now,
                    kind,
                    format!("could not reach the server: {failure}{hint}"),
                );
            }
            (
                Role::Stream {
                    for_request,
                    attempt,
                    from,
                },
                Body::Sse(decoder),
            ) => {
                self.stream_ended(now, for_request, &decoder, from, attempt, x.delivered);
            }
            (
                Role::Stream {
                    for_request,
                    attempt,
                    from,
                },
                _,
            ) => {
                self.stream_refused(now, for_request, from, attempt, 0, failure.reason);
            }
        }
        self.pump(now);
    }

    /// Advances time.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if self.closed {
            return;
        }
        if self.closing.is_some() {
            if self.timers.is_due(Timer::Delete, now) {
                tracing::debug!(server = %self.session.server(), "DELETE did not finish in time");
                self.finish_close();
            }
            return;
        }
        self.session.handle_timeout(now);
        self.abort_abandoned(now);
        while let Some(&(at, id)) = self.lingering.front() {
            if at > now {
                break;
            }
            self.lingering.pop_front();
            tracing::debug!(server = %self.session.server(), "an answered POST stream did not end in time; aborting it");
            self.outputs.push_back(HttpOutput::Abort(id));
        }
        if self.timers.is_due(Timer::ServerStreamWait, now) {
            tracing::debug!(
                server = %self.session.server(),
                "the server stream's GET got no answer in time; sending without it"
            );
            self.end_stream_wait();
        }
        let due: Vec<Resume> = {
            let (due, later) = std::mem::take(&mut self.resumes)
                .into_iter()
                .partition(|r| r.at <= now);
            self.resumes = later;
            due
        };
        for resume in due {
            if resume
                .for_request
                .is_some_and(|r| !self.session.is_pending(r))
            {
                continue;
            }
            self.open_server_stream(resume.for_request, resume.from, resume.attempt);
        }
        self.pump(now);
    }

    // ----- commands -----

    /// Calls a tool; see [`Session::call_tool`].
    pub fn call_tool(
        &mut self,
        now: Instant,
        name: &str,
        arguments: serde_json::Value,
    ) -> Result<CallId, ApiMisuse> {
        self.call_tool_within(now, name, arguments, None)
    }

    /// Calls a tool within a budget of its own; see
    /// [`Session::call_tool_within`].
    pub fn call_tool_within(
        &mut self,
        now: Instant,
        name: &str,
        arguments: serde_json::Value,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        self.call_tool_with(now, name, arguments, budget, TaskAugmentation::default())
    }

    /// Calls a tool, saying when a 2025-era call goes as a task; see
    /// [`Session::call_tool_with`].
    pub fn call_tool_with(
        &mut self,
        now: Instant,
        name: &str,
        arguments: serde_json::Value,
        budget: Option<Duration>,
        task: TaskAugmentation,
    ) -> Result<CallId, ApiMisuse> {
        let now = self.clock.observe(now);
        let call = self
            .session
            .call_tool_with(now, name, arguments, budget, task)?;
        self.pump(now);
        Ok(call)
    }

    /// Sends a prompt, resource or completion request; see
    /// [`Session::request`].
    pub fn request(
        &mut self,
        now: Instant,
        request: &crate::features::FeatureRequest,
    ) -> Result<CallId, ApiMisuse> {
        self.request_within(now, request, None)
    }

    /// Sends a request within a budget of its own; see
    /// [`Session::request_within`].
    pub fn request_within(
        &mut self,
        now: Instant,
        request: &crate::features::FeatureRequest,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        let now = self.clock.observe(now);
        let call = self.session.request_within(now, request, budget)?;
        self.pump(now);
        Ok(call)
    }

    /// Abandons a call; see [`Session::cancel_call`]. Its exchange is
    /// aborted, which closes its connection. In the 2026-07-28 era that is
    /// all the server gets (the session's `notifications/cancelled` is not
    /// sent; see the module's implementation note), and the call's
    /// [`CallError::Cancelled`] says so: [`CancelNotice::StreamClosed`], or
    /// [`CancelNotice::NothingRunning`] when no exchange of it was open.
    pub fn cancel_call(&mut self, now: Instant, call: CallId) {
        let now = self.clock.observe(now);
        let stateless = self.session.is_stateless();
        // The exchanges of requests still pending: the call's are among
        // them, and are gone once it is cancelled.
        let open: Vec<ExchangeId> = if stateless {
            self.exchanges
                .iter()
                .filter(|(_, x)| x.request().is_some_and(|r| self.session.is_pending(r)))
                .map(|(id, _)| *id)
                .collect()
        } else {
            Vec::new()
        };
        self.session.cancel_call(now, call);
        self.pump(now);
        if !stateless {
            return;
        }
        let closed = open.iter().any(|id| !self.exchanges.contains_key(id));
        let ended = self.events.iter_mut().rev().find_map(|event| match event {
            Event::CallCompleted {
                call: c,
                result: Err(error),
            }
            | Event::RequestCompleted {
                call: c,
                result: Err(error),
            } if *c == call => Some(error),
            _ => None,
        });
        if let Some(CallError::Cancelled {
            notice: notice @ CancelNotice::Told,
            ..
        }) = ended
        {
            *notice = if closed {
                CancelNotice::StreamClosed
            } else {
                CancelNotice::NothingRunning
            };
        }
    }

    /// Answers an elicitation question; see [`Session::answer_elicitation`].
    pub fn answer_elicitation(&mut self, now: Instant, question: QuestionId, answer: FormAnswer) {
        let now = self.clock.observe(now);
        self.session.answer_elicitation(now, question, answer);
        self.pump(now);
    }

    /// Answers a URL question; see [`Session::answer_url`].
    pub fn answer_url(&mut self, now: Instant, question: QuestionId, answer: UrlAnswer) {
        let now = self.clock.observe(now);
        self.session.answer_url(now, question, answer);
        self.pump(now);
    }

    /// Answers a sampling question; see [`Session::answer_sampling`].
    pub fn answer_sampling(&mut self, now: Instant, question: QuestionId, answer: SamplingAnswer) {
        let now = self.clock.observe(now);
        self.session.answer_sampling(now, question, answer);
        self.pump(now);
    }

    /// Answers an authorization question: `Ok` is the new `Authorization`
    /// header value, and the waiting messages go again with it, in order
    /// (requests whose deadline passed meanwhile are not resent); `Err` is
    /// the host's reason, and the waiting requests fail with it. Answering
    /// a question that is no longer open does nothing.
    pub fn answer_authorization(
        &mut self,
        now: Instant,
        question: QuestionId,
        answer: Result<String, AuthorizationError>,
    ) {
        let now = self.clock.observe(now);
        if self
            .reauthorizing
            .as_ref()
            .is_none_or(|r| r.question != question)
        {
            return;
        }
        let Some(waiting) = self.reauthorizing.take() else {
            return;
        };
        match answer {
            Ok(header) => {
                // The same header again is no new credential: what was
                // listed under it still stands.
                let changed = !self
                    .options
                    .headers
                    .iter()
                    .any(|(k, v)| k.eq_ignore_ascii_case("authorization") && *v == header);
                self.options
                    .headers
                    .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
                self.options.headers.push(("Authorization".into(), header));
                if changed {
                    self.session.handle_authorization_changed(now);
                }
                for parked in waiting.parked {
                    if request_of(parked.kind).is_some_and(|r| !self.session.is_pending(r)) {
                        continue;
                    }
                    self.post(parked.body, parked.kind, parked.retried);
                }
            }
            Err(why) => {
                let scope = scope_words(waiting.scope.as_deref());
                for parked in waiting.parked {
                    let again = match parked.kind {
                        TransmitKind::Initialize(_) => "",
                        _ => " again",
                    };
                    let reason = match parked.refusal {
                        Some((status, _)) => format!(
                            "the server answered HTTP {status}{scope} and rho could not authorize{again}: {why}"
                        ),
                        None => format!(
                            "it waited for a new authorization{scope}, which rho could not get: {why}"
                        ),
                    };
                    // The probe's refusal was an authorization answer, not
                    // an era answer: falling back to `initialize` would
                    // meet the same refusal and run the login again.
                    let probe = request_of(parked.kind)
                        .is_some_and(|r| self.session.probe_request() == Some(r));
                    if probe {
                        self.session.handle_transport_failed(now, reason);
                        continue;
                    }
                    self.fail_transmit(now, parked.kind, reason);
                }
            }
        }
        self.pump(now);
    }

    /// The server's `oauth.grant`, when it has an `oauth` table.
    pub fn oauth_grant(&self) -> Option<crate::config::OAuthGrant> {
        self.options.grant.filter(|_| self.options.oauth)
    }

    /// Whether the server's grant needs no person (see
    /// [`HttpOptions::grant`]).
    fn unattended(&self) -> bool {
        self.oauth_grant()
            .is_some_and(crate::config::OAuthGrant::is_unattended)
    }

    /// Whether the host is being asked for a new `Authorization` header.
    pub fn is_reauthorizing(&self) -> bool {
        self.reauthorizing.is_some()
    }

    /// Ends the session: pending calls complete, then DELETE, then
    /// [`Event::Closed`].
    pub fn close(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        self.session.close(now);
        self.pump(now);
    }

    // ----- outputs -----

    /// The next HTTP action.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<HttpOutput> {
        self.outputs.pop_front()
    }

    /// The next thing the host must know. [`Event::Closed`] is last, after
    /// the DELETE finished or timed out.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`HttpTransport::handle_timeout`] must next be called.
    /// Reading it changes nothing.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer().map(|(_, at)| at)
    }

    /// What the wakeup [`HttpTransport::poll_timeout`] reports is for.
    pub fn timeout_reason(&self) -> Option<Timer> {
        self.next_timer().map(|(timer, _)| timer)
    }

    fn next_timer(&self) -> Option<(Timer, Instant)> {
        if self.closed {
            return None;
        }
        if self.closing.is_some() {
            return self.timers.next([]);
        }
        let resume = self.resumes.iter().map(|r| r.at).min();
        let linger = self.lingering.front().map(|&(at, _)| at);
        let own = self
            .timers
            .next([(Timer::StreamResume, resume), (Timer::Linger, linger)]);
        earlier(own, self.session.next_timer())
    }

    // ----- internals -----

    /// Moves the session's transmits into HTTP requests and its events out.
    fn pump(&mut self, now: Instant) {
        if self.closed {
            return;
        }
        while let Some(transmit) = self.session.poll_transmit() {
            match transmit.kind {
                TransmitKind::Initialize(_) => self.post(transmit.bytes, transmit.kind, false),
                TransmitKind::Initialized => {
                    self.post(transmit.bytes, transmit.kind, false);
                    // What follows waits for the server stream (and, after
                    // an expiry, what was parked waits on with it).
                    self.reinitializing = false;
                    let until = self.stream_wait_until(now);
                    self.timers.set(Timer::ServerStreamWait, until);
                }
                // Stateless HTTP has no client notifications: a call is
                // cancelled by dropping its response stream (done when it
                // completes, below).
                TransmitKind::Notification if self.session.is_stateless() => {}
                kind if self.reinitializing || self.stream_waiting() => {
                    self.parked.push((transmit.bytes, kind, false))
                }
                kind => self.post(transmit.bytes, kind, false),
            }
        }
        // The session cancels a request in the step it gives up on it:
        // a cancellation of an unsent one has gone by now.
        self.unsent.clear();
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Closed(reason) => self.begin_close(now, reason),
                Event::CallCompleted { call, result } => {
                    // A finished call needs no stream any more (its request
                    // may have gone again under another id: every exchange
                    // of a request no longer pending goes).
                    self.abort_abandoned(now);
                    self.events.push_back(Event::CallCompleted { call, result });
                }
                Event::RequestCompleted { call, result } => {
                    self.abort_abandoned(now);
                    self.events
                        .push_back(Event::RequestCompleted { call, result });
                }
                other => self.events.push_back(other),
            }
        }
        if !self.auth_tries.is_empty() {
            let session = &self.session;
            self.auth_tries.retain(|r, _| session.is_pending(*r));
        }
    }

    fn new_exchange(&mut self, role: Role) -> ExchangeId {
        let id = ExchangeId(self.next_exchange);
        self.next_exchange += 1;
        self.exchanges.insert(
            id,
            Exchange {
                role,
                status: 0,
                body: Body::Ignore,
                delivered: false,
                answered: false,
                farewell: false,
            },
        );
        id
    }

    fn headers(
        &self,
        method: Method,
        last_event_id: Option<&str>,
        fresh: bool,
    ) -> Vec<(String, String)> {
        const OWN: [&str; 8] = [
            "accept",
            // A proof is per request: a configured one would be stale.
            "dpop",
            "content-type",
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
            "mcp-method",
            "mcp-name",
        ];
        const PARAM: &str = "mcp-param-";
        // Room for the configured headers and the six this adds at most,
        // so the list is allocated once per request.
        let mut headers: Vec<(String, String)> = Vec::with_capacity(self.options.headers.len() + 6);
        headers.extend(
            self.options
                .headers
                .iter()
                .filter(|(k, _)| {
                    let param = k
                        .get(..PARAM.len())
                        .is_some_and(|head| head.eq_ignore_ascii_case(PARAM));
                    !param && !OWN.iter().any(|own| k.eq_ignore_ascii_case(own))
                })
                .cloned(),
        );
        match method {
            Method::Post => {
                headers.push((
                    "Accept".into(),
                    "application/json, text/event-stream".into(),
                ));
                headers.push(("Content-Type".into(), "application/json".into()));
            }
            Method::Get => headers.push(("Accept".into(), "text/event-stream".into())),
            Method::Delete => {}
        }
        if !fresh {
            if let Some(id) = &self.session_id {
                headers.push(("Mcp-Session-Id".into(), id.clone()));
            }
            if let Some(version) = self.session.wire_version() {
                headers.push(("MCP-Protocol-Version".into(), version.to_owned()));
            }
        }
        if let Some(id) = last_event_id {
            headers.push(("Last-Event-ID".into(), id.to_owned()));
        }
        self.add_dpop_proof(method, &mut headers);
        headers
    }

    fn post(&mut self, body: Vec<u8>, kind: TransmitKind, retried: bool) {
        self.post_with(body, kind, retried, false);
    }

    /// [`HttpTransport::post`]; `nonce_retried`: this is the one resend a
    /// `use_dpop_nonce` refusal earns.
    fn post_with(&mut self, body: Vec<u8>, kind: TransmitKind, retried: bool, nonce_retried: bool) {
        if kind == TransmitKind::Notification
            && !self.unsent.is_empty()
            && let Some(request) = streams::cancelled_request(&body)
            && self.unsent.remove(&request)
        {
            return;
        }
        if let Some(waiting) = &mut self.reauthorizing
            && !matches!(
                kind,
                TransmitKind::Initialize(_) | TransmitKind::Initialized
            )
        {
            // It would meet the same refusal: it waits for the new token.
            waiting.parked.push(AuthParked {
                body,
                kind,
                retried,
                refusal: None,
            });
            return;
        }
        let fresh = matches!(kind, TransmitKind::Initialize(_));
        let mut headers = self.headers(Method::Post, None, fresh);
        if self.session.is_stateless() {
            let tools = self
                .session
                .server_ready()
                .map(|ready| ready.tools.as_slice())
                .unwrap_or_default();
            headers.extend(headers::request_headers(&body, tools));
        }
        let with_session = !fresh && self.session_id.is_some();
        let exchange = self.new_exchange(Role::Post {
            kind,
            body: body.clone(),
            retried,
            with_session,
            epoch: self.session_epoch,
            nonce_retried,
        });
        self.outputs.push_back(HttpOutput::Send(HttpRequest {
            exchange,
            method: Method::Post,
            url: self.options.url.clone(),
            headers,
            body,
        }));
    }

    fn fail_exchange(&mut self, now: Instant, exchange: ExchangeId, reason: String) {
        self.outputs.push_back(HttpOutput::Abort(exchange));
        let Some(x) = self.exchanges.remove(&exchange) else {
            return;
        };
        if x.farewell {
            self.close_step();
            return;
        }
        match x.role {
            Role::Post { kind, .. } => self.fail_transmit(now, kind, reason),
            Role::Stream {
                for_request: Some(request),
                ..
            } => self.session.handle_request_failed(now, request, reason),
            Role::Stream {
                for_request: None, ..
            } => self.session.handle_transport_failed(now, reason),
            Role::Delete => self.close_step(),
        }
        self.pump(now);
    }

    fn fail_transmit(&mut self, now: Instant, kind: TransmitKind, reason: String) {
        match kind {
            TransmitKind::Request(id) | TransmitKind::Initialize(id) => {
                self.session.handle_request_failed(now, id, reason)
            }
            TransmitKind::Initialized => self.session.handle_transport_failed(
                now,
                format!("the server refused notifications/initialized: {reason}"),
            ),
            TransmitKind::Notification | TransmitKind::Response => {
                tracing::warn!(server = %self.session.server(), "a message was not delivered: {reason}")
            }
        }
    }

    /// Drops the exchanges of requests the session stopped waiting for (a
    /// `ping` or `logging/setLevel` past its deadline): the executor reads
    /// bodies without a timeout, so no exchange may outlive its request.
    fn abort_abandoned(&mut self, now: Instant) {
        let ids: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, x)| {
                x.request().is_some_and(|r| {
                    // A farewell is no longer pending, but goes on.
                    !self.session.is_pending(r) && !self.session.is_farewell(r)
                })
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            match self.exchanges.remove(&id) {
                // The server is about to end it: reading it to its end
                // keeps the connection for the next request.
                Some(x) if x.answered => self.lingering.push_back((now + LINGER, id)),
                _ => self.outputs.push_back(HttpOutput::Abort(id)),
            }
        }
    }

    /// An exchange left lingering ended by itself.
    fn stop_lingering(&mut self, exchange: ExchangeId) {
        if let Some(at) = self.lingering.iter().position(|&(_, id)| id == exchange) {
            self.lingering.remove(at);
        }
    }

    fn begin_close(&mut self, now: Instant, reason: CloseReason) {
        // What the session sent as it closed (its tasks' cancels) goes on;
        // every other exchange is over.
        let session = &self.session;
        for (id, x) in &mut self.exchanges {
            if x.request().is_some_and(|r| session.is_farewell(r)) {
                x.farewell = true;
                x.body = Body::Ignore;
            } else {
                self.outputs.push_back(HttpOutput::Abort(*id));
            }
        }
        self.exchanges.retain(|_, x| x.farewell);
        for (_, id) in self.lingering.drain(..) {
            self.outputs.push_back(HttpOutput::Abort(id));
        }
        self.resumes.clear();
        self.parked.clear();
        if let Some(waiting) = self.reauthorizing.take() {
            self.events
                .push_back(Event::QuestionWithdrawn(waiting.question));
        }
        self.timers.stop(Timer::ServerStreamWait);
        if self.session_id.is_none() && self.exchanges.is_empty() {
            self.events.push_back(Event::Closed(reason));
            self.closed = true;
            return;
        }
        self.closing = Some(Closing {
            reason,
            deleted: false,
        });
        // One bound for the whole close: the farewells, then the DELETE.
        self.timers
            .set(Timer::Delete, now + self.options.delete_timeout);
        self.close_step();
    }

    /// The close's next step: once no farewell is out, the DELETE (with a
    /// session to delete); once that is done too, the end.
    fn close_step(&mut self) {
        let Some(closing) = &mut self.closing else {
            return;
        };
        if self.exchanges.values().any(|x| x.farewell) {
            return;
        }
        if !closing.deleted {
            closing.deleted = true;
            if self.session_id.is_some() {
                let headers = self.headers(Method::Delete, None, false);
                let exchange = self.new_exchange(Role::Delete);
                self.outputs.push_back(HttpOutput::Send(HttpRequest {
                    exchange,
                    method: Method::Delete,
                    url: self.options.url.clone(),
                    headers,
                    body: Vec::new(),
                }));
                return;
            }
        }
        if self.exchanges.is_empty() {
            self.finish_close();
        }
    }

    fn finish_close(&mut self) {
        if let Some(closing) = self.closing.take() {
            self.timers.clear();
            for id in self.exchanges.keys().copied().collect::<Vec<_>>() {
                self.outputs.push_back(HttpOutput::Abort(id));
            }
            for (_, id) in self.lingering.drain(..) {
                self.outputs.push_back(HttpOutput::Abort(id));
            }
            self.exchanges.clear();
            self.events.push_back(Event::Closed(closing.reason));
            self.closed = true;
        }
    }
}

/// ` (it wants scope "a b")` when a scope is named, else nothing.
fn scope_words(scope: Option<&[String]>) -> String {
    match scope {
        Some(scope) if !scope.is_empty() => format!(" (it wants scope \"{}\")", scope.join(" ")),
        _ => String::new(),
    }
}

/// [`scope_words`] of a challenge.
fn wanted_scope(challenge: Option<&BearerChallenge>) -> String {
    scope_words(challenge.and_then(|c| c.scope.as_deref()))
}

/// Why an answer over the size cap failed its request.
fn over_the_cap(limit: usize) -> String {
    format!(
        "its answer could not be read: the answer was over the {} limit (`max_message_bytes`); \
         raise `max_message_bytes` for this server if its answers are that large",
        byte_size(limit)
    )
}

/// Why an answer that is not JSON-RPC failed its request.
fn not_json_rpc(error: &ParseError) -> String {
    format!("its answer could not be read: the answer is not valid JSON-RPC ({error})")
}

/// Whether an SSE event id can travel back as a `Last-Event-ID` header.
/// SSE allows control characters and any Unicode in ids; an HTTP header
/// value allows visible ASCII, spaces and tabs. An id that cannot be sent
/// counts as no id, rather than failing every resumption locally.
fn header_safe(id: &str) -> bool {
    id.chars().all(|c| c == '\t' || (' '..='~').contains(&c))
}

fn request_of(kind: TransmitKind) -> Option<ClientRequestId> {
    match kind {
        TransmitKind::Request(id) | TransmitKind::Initialize(id) => Some(id),
        _ => None,
    }
}

fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}

/// The first line of a body, trimmed and short enough for a status line.
fn excerpt_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut out: String = line.chars().take(200).collect();
    if line.chars().nth(200).is_some() {
        out.push('…');
    }
    out
}

/// What a person can do about a connection failure, when the executor
/// could tell its kind: an unknown issuer means a certificate no trusted
/// root vouches for.
fn unreachable_hint(kind: HttpFailureKind) -> &'static str {
    match kind {
        HttpFailureKind::UnknownIssuer => {
            " (the server's certificate does not chain to a root this system trusts; \
             a private CA can be trusted with SSL_CERT_FILE)"
        }
        HttpFailureKind::InvalidCertificate | HttpFailureKind::Other => "",
    }
}
