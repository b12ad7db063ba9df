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
//!   [`LINGER`] (1 s) later, and what it carries meanwhile is dropped. A
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
//!   a request's response stream is its cancellation.
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

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use url::Url;

use crate::config::HttpConfig;
use crate::features::elicitation::FormAnswer;
use crate::oauth::challenge::{BearerChallenge, bearer_challenge};
use crate::session::{
    ApiMisuse, AuthorizationReason, CallId, CloseReason, Event, Framing, Question, QuestionId,
    SamplingAnswer, Session, SessionOptions, SessionState, Timer, TransmitKind,
};
use crate::session::{Clock, TimerTable};
use crate::wire::framing::{DEFAULT_MAX_LINE, SseDecoder, SseError, byte_size};
use crate::wire::jsonrpc::{ClientRequestId, Incoming, Message, ParseError};

pub mod headers;

/// Limits and timings of one HTTP session.
#[derive(Clone)]
pub struct HttpOptions {
    /// The MCP endpoint.
    pub url: Url,
    /// Configured headers with their resolved values (see
    /// [`resolve_headers`]). Secret: never logged.
    pub headers: Vec<(String, String)>,
    /// The largest JSON body accepted.
    pub max_body: usize,
    /// How many times in a row a stream may be resumed without delivering
    /// an event before rho gives up on it.
    pub max_stream_resumes: u32,
    /// The resume delay when the server sent no SSE `retry`.
    pub default_retry: Duration,
    /// How long the DELETE at close may take.
    pub delete_timeout: Duration,
    /// How often to ping a ready session.
    pub ping_interval: Duration,
    /// The entry has an `oauth` table: a 401 asks for `rho mcp login`
    /// rather than for a table and a login.
    pub oauth: bool,
    /// With `oauth`: the host can re-authorize (it has an
    /// [`crate::host::Authorizer`]), so a request refused for its token
    /// waits for a new one instead of failing (see the module docs).
    pub reauthorize: bool,
    /// The longest time messages after `notifications/initialized` wait for
    /// the server stream's GET to be answered (see the module docs).
    pub server_stream_wait: Duration,
}

impl HttpOptions {
    /// Defaults for `url`: 16 MiB bodies, 5 resumes, 1 s default retry,
    /// 2 s DELETE, a ping each minute, 2 s for the server stream's answer.
    pub fn new(url: Url, headers: Vec<(String, String)>) -> Self {
        Self {
            url,
            headers,
            max_body: DEFAULT_MAX_LINE,
            max_stream_resumes: 5,
            default_retry: Duration::from_secs(1),
            delete_timeout: Duration::from_secs(2),
            ping_interval: Duration::from_secs(60),
            oauth: false,
            reauthorize: false,
            server_stream_wait: Duration::from_secs(2),
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("url", &self.url.as_str())
            .field("headers", &header_names(&self.headers))
            .field("max_body", &self.max_body)
            .finish_non_exhaustive()
    }
}

/// Why a server's configured headers cannot be sent: the user's
/// environment is at fault, and the message says what to export or fix.
/// The variable's value is never part of it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// A `headers_from_env` entry names a variable that is not set.
    #[error(
        "server `{server}`: headers_from_env: `{header}` wants the ambient variable `{variable}`, which is not set; export it or remove the entry"
    )]
    MissingVariable {
        /// The server identity.
        server: String,
        /// The header the variable is for.
        header: String,
        /// The variable that is not set.
        variable: String,
    },
    /// The variable holds a CR, LF or other control character, which
    /// would start a new header.
    #[error(
        "server `{server}`: headers_from_env: the ambient variable `{variable}` for header `{header}` holds a CR, LF or other control character, which a header value cannot carry; fix the variable (the value is not shown)"
    )]
    ControlCharacter {
        /// The server identity.
        server: String,
        /// The header the variable is for.
        header: String,
        /// The variable with the bad value.
        variable: String,
    },
}

/// The headers a server's requests carry: `headers` literally, then
/// `headers_from_env` from the ambient variables, which win on a name
/// collision (names compare case-insensitively). A variable named in
/// `headers_from_env` that is not set fails that server.
pub fn resolve_headers(
    server: &str,
    ambient: &[(String, String)],
    config: &HttpConfig,
) -> Result<Vec<(String, String)>, HeaderError> {
    let mut out: Vec<(String, String)> = config
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (header, variable) in &config.headers_from_env {
        let value = ambient
            .iter()
            .rev()
            .find(|(k, _)| k == variable)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| HeaderError::MissingVariable {
                server: server.to_owned(),
                header: header.clone(),
                variable: variable.clone(),
            })?;
        // A CR or LF would start a new header; the HTTP client would refuse
        // the value with a message naming neither the header nor the
        // variable.
        if value.chars().any(|c| c.is_ascii_control() && c != '\t') {
            return Err(HeaderError::ControlCharacter {
                server: server.to_owned(),
                header: header.clone(),
                variable: variable.clone(),
            });
        }
        out.retain(|(k, _)| !k.eq_ignore_ascii_case(header));
        out.push((header.clone(), value));
    }
    Ok(out)
}

/// Identifies one HTTP exchange (a request and its response). Opaque: a
/// session numbers its own exchanges; an executor only hands them back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeId(pub(crate) u64);

impl ExchangeId {
    /// The id of exchange number `n` of some other numbering than a
    /// session's: a request the host makes on its own (an OAuth login
    /// step), or a test's.
    pub fn new(n: u64) -> Self {
        Self(n)
    }
}

/// An HTTP method the transport uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Opens or resumes a server stream.
    Get,
    /// Carries one client message.
    Post,
    /// Ends the session.
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// An HTTP request for the executor to make. Its body, if any, is sent as
/// is; its response is fed back with the same [`ExchangeId`].
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Which exchange this is.
    pub exchange: ExchangeId,
    /// The method.
    pub method: Method,
    /// The URL (always the configured endpoint, which passed the policy).
    pub url: Url,
    /// Headers, in order. Values may be secret.
    pub headers: Vec<(String, String)>,
    /// The body (empty for GET and DELETE).
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("exchange", &self.exchange)
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .field("headers", &header_names(&self.headers))
            .field("body_len", &self.body.len())
            .finish()
    }
}

fn header_names(headers: &[(String, String)]) -> Vec<&str> {
    headers.iter().map(|(k, _)| k.as_str()).collect()
}

/// What the transport wants the executor to do.
#[derive(Debug, PartialEq, Eq)]
pub enum HttpOutput {
    /// Make this request.
    Send(HttpRequest),
    /// Stop reading this exchange's response and drop it; further input
    /// for it is ignored anyway.
    Abort(ExchangeId),
}

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
            timers: TimerTable::default(),
            clock: Clock::new(now),
            resumes: Vec::new(),
            lingering: VecDeque::new(),
            server_stream: ServerStream::NotOpened,
            reauthorizing: None,
            auth_tries: BTreeMap::new(),
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
                if matches!(kind, TransmitKind::Initialize(_)) && (200..300).contains(&status) {
                    if let Some(id) = header("mcp-session-id") {
                        self.session_id = Some(id.to_owned());
                    }
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
            if let Err(error) = self.session.handle_answer_bytes(now, frame.as_bytes()) {
                if request.is_some() {
                    self.fail_exchange(now, exchange, not_json_rpc(&error));
                    return;
                }
            }
        }
        if let Some(x) = self.exchanges.get_mut(&exchange) {
            if matches!(x.role, Role::Post { .. })
                && request.is_some_and(|r| !self.session.is_pending(r))
            {
                x.answered = true;
            }
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
        match (x.role, x.body) {
            (Role::Delete, _) => self.finish_close(),
            (Role::Post { kind, .. }, Body::Json(buf)) => {
                if buf.is_empty() {
                    self.fail_transmit(now, kind, "the server sent an empty response".into());
                } else if let Err(error) = self.session.handle_answer_bytes(now, &buf) {
                    self.fail_transmit(now, kind, not_json_rpc(&error));
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
    pub fn handle_exchange_failed(&mut self, now: Instant, exchange: ExchangeId, reason: String) {
        let now = self.clock.observe(now);
        let Some(x) = self.exchanges.remove(&exchange) else {
            self.stop_lingering(exchange);
            return;
        };
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
            (Role::Delete, _) => self.finish_close(),
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
                let hint = unreachable_hint(&reason);
                self.fail_transmit(
                    now,
                    kind,
                    format!("could not reach the server: {reason}{hint}"),
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
                self.stream_refused(now, for_request, from, attempt, 0, reason);
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
        let now = self.clock.observe(now);
        let call = self.session.call_tool(now, name, arguments)?;
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
        let now = self.clock.observe(now);
        let call = self.session.request(now, request)?;
        self.pump(now);
        Ok(call)
    }

    /// Abandons a call; see [`Session::cancel_call`]. Its exchange is
    /// aborted.
    pub fn cancel_call(&mut self, now: Instant, call: CallId) {
        let now = self.clock.observe(now);
        self.session.cancel_call(now, call);
        self.pump(now);
    }

    /// Answers an elicitation question; see [`Session::answer_elicitation`].
    pub fn answer_elicitation(&mut self, now: Instant, question: QuestionId, answer: FormAnswer) {
        let now = self.clock.observe(now);
        self.session.answer_elicitation(now, question, answer);
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
        answer: Result<String, String>,
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
                    self.fail_transmit(now, parked.kind, reason);
                }
            }
        }
        self.pump(now);
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
        [own, self.session.next_timer()]
            .into_iter()
            .flatten()
            .min_by_key(|&(timer, at)| (at, timer))
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

    /// When the messages held after `notifications/initialized` go even
    /// if the server stream's GET was not answered: after
    /// `server_stream_wait`, and during startup no later than halfway to
    /// the startup deadline, so discovery keeps most of its budget.
    fn stream_wait_until(&self, now: Instant) -> Instant {
        let mut wait = self.options.server_stream_wait;
        if let Some(deadline) = self.session.startup_deadline() {
            wait = wait.min(deadline.saturating_duration_since(now) / 2);
        }
        now + wait
    }

    /// Whether messages wait for the server stream's GET to be answered.
    fn stream_waiting(&self) -> bool {
        self.timers.get(Timer::ServerStreamWait).is_some()
    }

    /// The server stream's GET was answered (or failed, or there is none, or
    /// the wait ran out): the held messages go, in order.
    fn end_stream_wait(&mut self) {
        let waited = self.stream_waiting();
        self.timers.stop(Timer::ServerStreamWait);
        if !waited || self.reinitializing {
            return;
        }
        for (body, kind, retried) in std::mem::take(&mut self.parked) {
            self.post(body, kind, retried);
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
        const OWN: [&str; 7] = [
            "accept",
            "content-type",
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
            "mcp-method",
            "mcp-name",
        ];
        let mut headers: Vec<(String, String)> = self
            .options
            .headers
            .iter()
            .filter(|(k, _)| {
                let k = k.to_ascii_lowercase();
                !OWN.contains(&k.as_str()) && !k.starts_with("mcp-param-")
            })
            .cloned()
            .collect();
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
        headers
    }

    fn post(&mut self, body: Vec<u8>, kind: TransmitKind, retried: bool) {
        if let Some(waiting) = &mut self.reauthorizing {
            if !matches!(
                kind,
                TransmitKind::Initialize(_) | TransmitKind::Initialized
            ) {
                // It would meet the same refusal: it waits for the new token.
                waiting.parked.push(AuthParked {
                    body,
                    kind,
                    retried,
                    refusal: None,
                });
                return;
            }
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
        });
        self.outputs.push_back(HttpOutput::Send(HttpRequest {
            exchange,
            method: Method::Post,
            url: self.options.url.clone(),
            headers,
            body,
        }));
    }

    fn open_server_stream(
        &mut self,
        for_request: Option<ClientRequestId>,
        from: ResumePoint,
        attempt: u32,
    ) {
        if for_request.is_none() {
            self.server_stream = ServerStream::Open;
        }
        let headers = self.headers(Method::Get, from.last_event_id.as_deref(), false);
        let exchange = self.new_exchange(Role::Stream {
            for_request,
            attempt,
            from,
        });
        self.outputs.push_back(HttpOutput::Send(HttpRequest {
            exchange,
            method: Method::Get,
            url: self.options.url.clone(),
            headers,
            body: Vec::new(),
        }));
    }

    /// A stream ended or broke. Resume it if its answer is still owed (or
    /// it is the server's own stream), after the server's retry delay.
    /// `earlier` is where the stream's previous connections left off.
    fn stream_ended(
        &mut self,
        now: Instant,
        for_request: Option<ClientRequestId>,
        decoder: &SseDecoder,
        earlier: ResumePoint,
        attempt: u32,
        delivered: bool,
    ) {
        if self.closing.is_some() {
            return;
        }
        if let Some(request) = for_request {
            if !self.session.is_pending(request) {
                return;
            }
            if self.session.is_stateless() {
                // The 2026 era has no resumption: the answer is lost, and
                // the session decides whether to ask again.
                self.session.handle_stream_lost(
                    now,
                    request,
                    "the server closed the response stream before answering (the 2026-07-28 protocol does not resume streams)".into(),
                );
                return;
            }
        } else if self.server_stream != ServerStream::Open {
            return;
        }
        let attempt = if delivered { 1 } else { attempt + 1 };
        let from = ResumePoint {
            last_event_id: decoder
                .last_event_id()
                .filter(|id| header_safe(id))
                .map(str::to_owned)
                .or(earlier.last_event_id),
            retry: decoder.retry().or(earlier.retry),
        };
        if let (Some(request), None) = (for_request, &from.last_event_id) {
            self.session.handle_request_failed(
                now,
                request,
                "the server closed the response stream before answering, with no event id to resume from".into(),
            );
            return;
        }
        if attempt > self.options.max_stream_resumes {
            self.give_up_stream(
                now,
                for_request,
                "it kept closing without delivering an event",
            );
            return;
        }
        let delay = self.resume_delay(from.retry, attempt);
        self.resumes.push(Resume {
            at: now + delay,
            for_request,
            from,
            attempt,
        });
    }

    /// A GET was answered with something other than a stream. A retry
    /// resumes from where the stream was (`from`).
    fn stream_refused(
        &mut self,
        now: Instant,
        for_request: Option<ClientRequestId>,
        from: ResumePoint,
        attempt: u32,
        status: u16,
        detail: String,
    ) {
        match (for_request, status) {
            (None, 405) => {
                self.server_stream = ServerStream::Unsupported;
                return;
            }
            // Another stream is already open for this session.
            (None, 409) => return,
            _ => {}
        }
        if self.closing.is_some() {
            return;
        }
        // The first GET of the server's own stream follows the handshake at
        // once, so a 404 there means no stream at this URL (a server that
        // routes only POST), not a forgotten session: a fresh session would
        // meet the same answer, forever.
        let first_open = for_request.is_none() && attempt == 0;
        let expired = !first_open
            && self.session_id.is_some()
            && (status == 404
                || (status == 400 && detail.to_ascii_lowercase().contains("session")));
        if expired {
            // The server forgot the session: start a fresh one now rather
            // than wait for the next message to find out.
            self.start_reinitialize(now);
            if let Some(request) = for_request {
                self.session.handle_request_failed(
                    now,
                    request,
                    "the server forgot the session while its answer was streaming".into(),
                );
            }
            return;
        }
        if for_request.is_none() && (400..500).contains(&status) {
            // The server does not offer its own stream here (some answer
            // 400 or 404 rather than 405). Requests still get their answers.
            tracing::debug!(server = %self.session.server(), status, "no server stream offered");
            self.server_stream = ServerStream::Unsupported;
            return;
        }
        let attempt = attempt + 1;
        let why = if status == 0 {
            detail
        } else {
            format!("HTTP {status} {}", excerpt_line(&detail))
        };
        if attempt > self.options.max_stream_resumes {
            self.give_up_stream(now, for_request, &why);
            return;
        }
        self.resumes.push(Resume {
            at: now + self.resume_delay(None, attempt),
            for_request,
            from,
            attempt,
        });
    }

    fn give_up_stream(&mut self, now: Instant, for_request: Option<ClientRequestId>, why: &str) {
        let attempts = self.options.max_stream_resumes;
        match for_request {
            Some(request) => self.session.handle_request_failed(
                now,
                request,
                format!("the response stream broke and could not be resumed after {attempts} attempts: {why}"),
            ),
            None => self.session.handle_transport_failed(
                now,
                format!("the server stream broke and could not be resumed after {attempts} attempts: {why}"),
            ),
        }
    }

    /// An error status on a POST.
    fn http_error(&mut self, now: Instant, role: Role, status: u16, body: &[u8]) {
        let Role::Post {
            kind,
            body: message,
            retried,
            with_session,
            epoch,
        } = role
        else {
            return;
        };
        let text = String::from_utf8_lossy(body);
        let expired = with_session
            && (status == 404 || (status == 400 && text.to_ascii_lowercase().contains("session")));
        if expired {
            if retried {
                self.fail_transmit(
                    now,
                    kind,
                    "the server expired the session again right after a fresh initialize".into(),
                );
                return;
            }
            // Only the current session's expiry starts a fresh one; a
            // message sent under an earlier session just goes again.
            if epoch == self.session_epoch && !self.reinitializing && !self.start_reinitialize(now)
            {
                let reason = if self.session.state() == SessionState::Starting {
                    format!(
                        "the server forgot the session again during startup (HTTP {status}), after rho had already initialized a fresh one; rho starts at most one fresh session while starting, check the server's session handling"
                    )
                } else {
                    format!("the server no longer knows this session (HTTP {status})")
                };
                self.fail_transmit(now, kind, reason);
                return;
            }
            if kind == TransmitKind::Initialized {
                // The fresh session sends its own.
                return;
            }
            if self.reinitializing || self.stream_waiting() {
                self.parked.push((message, kind, true));
            } else {
                self.post(message, kind, true);
            }
            return;
        }
        // A JSON-RPC error body answers the request itself.
        if let Ok(Incoming::Single(Message::Error { id: Some(_), .. })) = Incoming::parse(body) {
            self.session.handle_message_bytes(now, body);
            return;
        }
        let probe = request_of(kind).filter(|r| self.session.probe_request() == Some(*r));
        let hint = match status {
            401 | 403 if self.options.oauth => format!(
                "; the server requires authorization: run `rho mcp login {}` to log in",
                self.session.server()
            ),
            401 | 403 => format!(
                "; the server requires authorization: add an `[mcp.servers.{0}.oauth]` table and run `rho mcp login {0}`, or set an Authorization header with headers_from_env",
                self.session.server()
            ),
            406 => "; the server refused the Accept header".into(),
            _ => String::new(),
        };
        let detail = excerpt_line(&excerpt(body));
        let reason = if detail.is_empty() {
            format!("the server answered HTTP {status}{hint}")
        } else {
            format!("the server answered HTTP {status}: {detail}{hint}")
        };
        if probe.is_some() && matches!(status, 401 | 403) {
            // Refused for its credentials, not for its era: falling back
            // would only meet the same refusal.
            self.session.handle_transport_failed(now, reason);
            return;
        }
        self.fail_transmit(now, kind, reason);
    }

    /// A 401 or 403 arrived for `exchange`. When it refuses a request's
    /// credentials and the request may still re-authorize (see the module
    /// docs), the exchange is dropped, the request waits, and the host is
    /// asked (once for all that wait); returns whether it did.
    fn refused_credentials(
        &mut self,
        now: Instant,
        exchange: ExchangeId,
        status: u16,
        headers: &[(String, String)],
    ) -> bool {
        if !(self.options.oauth && self.options.reauthorize) || self.closing.is_some() {
            return false;
        }
        // `initialize` too: a stored token refused at connect (revoked,
        // expired early, minted by an issuer the server left) takes the
        // same path as one refused later.
        let Some(Role::Post {
            kind: TransmitKind::Request(request) | TransmitKind::Initialize(request),
            ..
        }) = self.exchanges.get(&exchange).map(|x| &x.role)
        else {
            return false;
        };
        let request = *request;
        let challenge = bearer_challenge(
            headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v.as_str()),
        );
        let reason = match (status, &challenge) {
            (401, _) => AuthorizationReason::Unauthorized,
            (403, Some(c)) if c.insufficient_scope() => AuthorizationReason::InsufficientScope,
            _ => return false,
        };
        let tries = self.auth_tries.entry(request).or_default();
        let spent = match reason {
            AuthorizationReason::Unauthorized => std::mem::replace(&mut tries.renewed, true),
            AuthorizationReason::InsufficientScope => {
                std::mem::replace(&mut tries.stepped_up, true)
            }
        };
        if spent {
            // Once per cause: a server that refuses again fails the
            // request rather than loop through logins.
            let scope = wanted_scope(challenge.as_ref());
            let what = match reason {
                AuthorizationReason::Unauthorized => "refused the new token too",
                AuthorizationReason::InsufficientScope => {
                    "still finds the scope insufficient after a new login"
                }
            };
            self.outputs.push_back(HttpOutput::Abort(exchange));
            if let Some(x) = self.exchanges.remove(&exchange) {
                if let Role::Post { kind, .. } = x.role {
                    self.fail_transmit(
                        now,
                        kind,
                        format!(
                            "the server answered HTTP {status}: it {what}{scope}; rho re-authorizes a request once, so check the server's scopes or run `rho mcp login {}`",
                            self.session.server()
                        ),
                    );
                }
            }
            return true;
        }
        let Some(Exchange {
            role:
                Role::Post {
                    kind,
                    body,
                    retried,
                    ..
                },
            ..
        }) = self.exchanges.remove(&exchange)
        else {
            return false;
        };
        self.outputs.push_back(HttpOutput::Abort(exchange));
        let parked = AuthParked {
            body,
            kind,
            retried,
            refusal: Some((status, reason)),
        };
        if let Some(waiting) = &mut self.reauthorizing {
            // Refused under the old token while the host is already asked:
            // it goes with the answer.
            waiting.parked.push(parked);
            return true;
        }
        let challenge = challenge.unwrap_or_default();
        tracing::info!(
            server = %self.session.server(),
            status,
            "the server refused the request's authorization; asking the host for a new one"
        );
        let question = self.session.new_question_id();
        self.reauthorizing = Some(Reauthorizing {
            question,
            scope: challenge.scope.clone(),
            parked: vec![parked],
        });
        self.events.push_back(Event::Question {
            question,
            call: CallId(request.0),
            kind: Question::Authorization { reason, challenge },
        });
        true
    }

    /// Starts a fresh `initialize` after the server forgot the session.
    /// Returns `false` when the session cannot (it is not ready).
    fn start_reinitialize(&mut self, now: Instant) -> bool {
        if self.reinitializing {
            return true;
        }
        if !self.session.handle_session_expired(now) {
            return false;
        }
        tracing::info!(server = %self.session.server(), "session expired; initializing again");
        self.session_epoch += 1;
        self.reinitializing = true;
        // Held messages now wait for the fresh session instead.
        self.timers.stop(Timer::ServerStreamWait);
        self.session_id = None;
        self.server_stream = ServerStream::NotOpened;
        self.abort_server_streams();
        true
    }

    /// The delay before resume `attempt` (1-based): the server's `retry`
    /// when it sent one, else a doubling backoff from `default_retry`,
    /// capped at 30 s.
    fn resume_delay(&self, retry: Option<u64>, attempt: u32) -> Duration {
        match retry {
            Some(ms) => Duration::from_millis(ms),
            None => {
                let factor = 1u32 << attempt.saturating_sub(1).min(5);
                (self.options.default_retry * factor).min(MAX_BACKOFF)
            }
        }
    }

    fn fail_exchange(&mut self, now: Instant, exchange: ExchangeId, reason: String) {
        self.outputs.push_back(HttpOutput::Abort(exchange));
        let Some(x) = self.exchanges.remove(&exchange) else {
            return;
        };
        match x.role {
            Role::Post { kind, .. } => self.fail_transmit(now, kind, reason),
            Role::Stream {
                for_request: Some(request),
                ..
            } => self.session.handle_request_failed(now, request, reason),
            Role::Stream {
                for_request: None, ..
            } => self.session.handle_transport_failed(now, reason),
            Role::Delete => self.finish_close(),
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
                let request = match &x.role {
                    Role::Post { kind, .. } => request_of(*kind),
                    Role::Stream { for_request, .. } => *for_request,
                    Role::Delete => None,
                };
                request.is_some_and(|r| !self.session.is_pending(r))
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

    fn abort_server_streams(&mut self) {
        let ids: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, x)| {
                matches!(
                    x.role,
                    Role::Stream {
                        for_request: None,
                        ..
                    }
                )
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.exchanges.remove(&id);
            self.outputs.push_back(HttpOutput::Abort(id));
        }
        self.resumes.retain(|r| r.for_request.is_some());
    }

    fn begin_close(&mut self, now: Instant, reason: CloseReason) {
        for id in self.exchanges.keys().copied().collect::<Vec<_>>() {
            self.outputs.push_back(HttpOutput::Abort(id));
        }
        for (_, id) in self.lingering.drain(..) {
            self.outputs.push_back(HttpOutput::Abort(id));
        }
        self.exchanges.clear();
        self.resumes.clear();
        self.parked.clear();
        if let Some(waiting) = self.reauthorizing.take() {
            self.events
                .push_back(Event::QuestionWithdrawn(waiting.question));
        }
        self.timers.stop(Timer::ServerStreamWait);
        if self.session_id.is_none() {
            self.events.push_back(Event::Closed(reason));
            self.closed = true;
            return;
        }
        let headers = self.headers(Method::Delete, None, false);
        let exchange = self.new_exchange(Role::Delete);
        self.outputs.push_back(HttpOutput::Send(HttpRequest {
            exchange,
            method: Method::Delete,
            url: self.options.url.clone(),
            headers,
            body: Vec::new(),
        }));
        self.closing = Some(Closing { reason });
        self.timers
            .set(Timer::Delete, now + self.options.delete_timeout);
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

/// What a person can do about a connection failure, when its words say:
/// an unknown issuer means a certificate no trusted root vouches for.
fn unreachable_hint(reason: &str) -> &'static str {
    if reason.contains("UnknownIssuer") {
        " (the server's certificate does not chain to a root this system trusts; \
         a private CA can be trusted with SSL_CERT_FILE)"
    } else {
        ""
    }
}
