//! One server's lifecycle as a sans-IO state machine: the handshake,
//! discovery, requests with deadlines, and the server's own requests.
//!
//! A [`Session`] never does IO. The executor feeds it what the transport
//! delivered ([`Session::handle_stdio_bytes`], [`Session::handle_message_bytes`],
//! [`Session::handle_transport_closed`]) and the passage of time
//! ([`Session::handle_timeout`]); the host issues commands
//! ([`Session::call_tool`], [`Session::close`]); and after every one of those
//! the executor drains [`Session::poll_transmit`], [`Session::poll_event`] and
//! reads [`Session::poll_timeout`].
//!
//! # Lifecycle
//!
//! ```text
//!  new ──initialize──▶ Initializing ──result──▶ Discovering ──last tools/list page──▶ Ready
//!   │                       │                        │                                 │
//!   └── startup budget, transport closed, handshake or discovery error ──▶ Closed ◀── close()
//! ```
//!
//! The startup budget starts when the session is created, so it covers
//! whatever connecting the executor does after creating it, the handshake
//! and discovery. [`Event::Closed`] is always the last event.
//!
//! A `notifications/tools/list_changed` during discovery (from a server
//! that declared `tools.listChanged`) makes discovery list once more from
//! the first page when the listing under way ends, so [`Event::Ready`]
//! carries the tools as they are; a change during that second listing is
//! applied after ready, as a re-list with [`Event::ToolsChanged`]. A
//! transport that learns the server forgot the session during discovery
//! gets one fresh `initialize` ([`Session::handle_session_expired`]).
//!
//! # Implementation note
//!
//! The startup budget and the next ping are slots of a fixed timer table
//! indexed by [`Timer`]. Request deadlines live in one ordered set keyed by
//! `(deadline, request id)`, so their next wakeup is its first element and
//! expiring requests is a walk from the front: no clock reads, no
//! hash-order iteration. [`Session::poll_timeout`] is the earliest of
//! them, and [`Session::timeout_reason`] names it.
//!
//! # Time
//!
//! Every input carries `now`, read by the executor from a monotonic clock.
//! The session never goes back in time: a `now` earlier than the latest
//! one it was given is clamped to that latest one (the input is handled
//! as if it came then), so a deadline once promised never moves earlier.

mod questions;
mod tally;
mod timer;

pub(crate) use crate::text::grouped;
use tally::{Tally, Verdict};

pub use questions::{AuthorizationReason, Question, QuestionId, SamplingAnswer};
pub use timer::Timer;
pub(crate) use timer::{Clock, TimerTable};

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{LogLevel, ServerConfig};
use crate::features::content::{OutputError, OutputSchema, check_output};
use crate::wire::framing::{FrameError, LineDecoder, byte_size};
use crate::wire::jsonrpc::{
    self, ClientRequestId, ErrorObject, Incoming, Message, ParseError, Peek, RequestId,
    ServerRequestId,
};
use crate::wire::protocol::{
    CallToolParams, CallToolResult, Implementation, InitializeResult, LATEST_PROTOCOL_VERSION,
    RequestMeta, SUPPORTED_PROTOCOL_VERSIONS, ShapeError, Tool, ToolsPage,
};

/// How many `tools/list` pages a server may return before rho decides it is
/// looping rather than paginating.
pub const MAX_TOOL_PAGES: usize = 1000;

/// The buffer a request is serialized into: a `tools/call` with small
/// arguments, and the newline after it, fit without a reallocation.
const REQUEST_CAPACITY: usize = 256;

/// How many peer errors the session remembers for a failure reason.
const REMEMBERED_PEER_ERRORS: usize = 3;

/// Protocol errors (lines that are not JSON-RPC, ...) logged one by one
/// per [`LOG_WINDOW`]; the rest are counted.
const JUNK_LOGGED: u32 = 5;
/// Server log messages passed to rho's log one by one per [`LOG_WINDOW`].
const SERVER_LOGS_LOGGED: u32 = 100;
/// The window of those two limits.
const LOG_WINDOW: Duration = Duration::from_secs(10);

/// The name and version rho reports in `initialize`.
pub fn client_info() -> Implementation {
    Implementation {
        name: "rho".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        title: None,
    }
}

/// How bytes are framed on the transport under this session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Newline-delimited JSON (stdio): transmits end with `\n`, and input
    /// arrives as arbitrary byte chunks through
    /// [`Session::handle_stdio_bytes`].
    Lines,
    /// One message per transmit, no delimiter (HTTP bodies, SSE `data`).
    Messages,
}

/// Everything a session needs to know up front.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// The server's identity, used in every message the session writes.
    pub server: String,
    /// What rho calls itself in `initialize`.
    pub client_info: Implementation,
    /// The client capabilities to declare. Only capabilities rho answers.
    pub capabilities: Value,
    /// The protocol version to offer first.
    pub protocol_version: String,
    /// `logging/setLevel` to send after the handshake, when the server
    /// declares logging.
    pub log_level: Option<LogLevel>,
    /// Budget for handshake and discovery.
    pub startup_timeout: Duration,
    /// Budget for each tool call.
    pub tool_timeout: Duration,
    /// Budget for the session's own small requests after startup
    /// (`logging/setLevel`, `ping`).
    pub request_timeout: Duration,
    /// How the transport frames messages.
    pub framing: Framing,
    /// The longest line accepted on a line-framed transport.
    pub max_line: usize,
    /// Declare form elicitation: set only when the host can put a question
    /// in front of a person. A run that cannot declares nothing, so a
    /// well-behaved server never asks.
    pub elicitation: bool,
    /// Declare sampling: set only for a server whose config says
    /// `sampling = "ask"`, in a run that has a model to spend.
    pub sampling: bool,
    /// When set, each progress notification restarts a call's budget
    /// (`tool_timeout`), up to this much time after the call was sent. A
    /// long job that keeps reporting progress is not cut off, and one that
    /// never ends still is.
    pub progress_extends_up_to: Option<Duration>,
    /// The session workspace as a `file://` URI. When set, rho declares
    /// `roots` (with `listChanged: false`: a session's workspace never
    /// changes) and answers `roots/list` with it as the one root.
    pub workspace_root: Option<String>,
    /// Send `ping` this often while ready. Remote sessions need it: an idle
    /// proxy can drop a connection with no local signal. Stdio servers do
    /// not: a dead child is observable directly.
    pub ping_interval: Option<Duration>,
    /// Hides the server's configured secrets in the server log messages
    /// the session writes to tracing (see [`crate::text::redact`]).
    pub redactor: crate::text::redact::Redactor,
}

impl SessionOptions {
    /// Defaults for a stdio server called `server`: two-minute budgets and
    /// no log level.
    pub fn stdio(server: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            client_info: client_info(),
            capabilities: json!({}),
            protocol_version: LATEST_PROTOCOL_VERSION.into(),
            log_level: None,
            startup_timeout: Duration::from_secs(120),
            tool_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
            framing: Framing::Lines,
            max_line: crate::wire::framing::DEFAULT_MAX_LINE,
            ping_interval: None,
            workspace_root: None,
            progress_extends_up_to: Some(Duration::from_secs(30 * 60)),
            elicitation: false,
            sampling: false,
            redactor: crate::text::redact::Redactor::default(),
        }
    }

    /// Options for a configured server.
    pub fn from_config(config: &ServerConfig, framing: Framing) -> Self {
        Self {
            log_level: config.log_level,
            startup_timeout: config.startup_timeout,
            tool_timeout: config.tool_timeout,
            max_line: config.max_message_bytes,
            framing,
            ..Self::stdio(config.id.as_str())
        }
    }
}

/// What a transmit is, for transports that treat messages differently
/// (Streamable HTTP sends each as its own POST and expects an answer only
/// for requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransmitKind {
    /// A request; its answer arrives through the transport later.
    Request(ClientRequestId),
    /// `initialize`, which must travel alone and without a session id.
    Initialize(ClientRequestId),
    /// `notifications/initialized`: the handshake is complete.
    Initialized,
    /// Any other notification.
    Notification,
    /// A response to a server's request.
    Response,
}

/// One message for the transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// The bytes to write, framed per [`Framing`].
    pub bytes: Vec<u8>,
    /// What the message is.
    pub kind: TransmitKind,
}

/// Identifies one tool call on one session. Small and `Copy`, per the
/// core's command contract; opaque: only the session makes one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct CallId(pub(crate) u64);

impl CallId {
    /// The number this call carries on the wire: its JSON-RPC request id
    /// and its progress token (for logs, and for tests that play the
    /// server).
    pub fn wire_id(self) -> u64 {
        self.0
    }
}

/// Where a session is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionState {
    /// Handshake or discovery in progress.
    Starting,
    /// Tools discovered; calls accepted.
    Ready,
    /// Finished; see the [`Event::Closed`] reason.
    Closed,
}

/// One `notifications/progress` for a call.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Progress {
    /// Progress so far; increases with each notification.
    pub progress: f64,
    /// The total, when the server knows it. Counts are shown only with it.
    pub total: Option<f64>,
    /// A human-readable note, when sent.
    pub message: Option<String>,
}

/// What the server said about itself once the handshake and discovery
/// finished.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ServerReady {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The server's name and version.
    pub server_info: Implementation,
    /// Capabilities the server declared.
    pub capabilities: crate::wire::protocol::ServerCapabilities,
    /// Instructions for the model, when the server sent them.
    pub instructions: Option<String>,
    /// Every tool the server listed (before any allow/deny filter).
    pub tools: Vec<Tool>,
}

/// Something the host must know.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// Handshake and discovery finished.
    Ready(Box<ServerReady>),
    /// A tool call ended, one way or another. Every accepted call ends with
    /// exactly one of these.
    CallCompleted {
        /// Which call.
        call: CallId,
        /// The server's result (which may itself report `isError`), or why
        /// there is none.
        result: Result<CallToolResult, CallError>,
    },
    /// The server broke the protocol in a way the session survived.
    PeerMisbehaved(PeerError),
    /// A server reported progress on a call in flight.
    Progress {
        /// Which call.
        call: CallId,
        /// What it reported.
        progress: Progress,
    },
    /// The server changed its tool list (`notifications/tools/list_changed`)
    /// and the session listed it again: these are all its tools now.
    ToolsChanged(Vec<Tool>),
    /// The server asked a question (elicitation or sampling) during the one
    /// call in flight; the host answers with
    /// [`Session::answer_elicitation`] or [`Session::answer_sampling`].
    /// The call's budget is paused until it does. An authorization
    /// question comes from the HTTP transport instead (answered with
    /// [`crate::http::HttpTransport::answer_authorization`]), and budgets
    /// keep running while it is open.
    Question {
        /// Which question, for the answer.
        question: QuestionId,
        /// The call it belongs to; for an authorization question, the first
        /// request that waits on it (which may be a `tools/list`).
        call: CallId,
        /// What is asked.
        kind: Question,
    },
    /// The server withdrew a question (it cancelled its request), or the
    /// call it belonged to ended: the host stops asking.
    QuestionWithdrawn(QuestionId),
    /// A keep-alive `ping` was answered.
    PingAnswered,
    /// A keep-alive `ping` failed; the session carries on, and the host
    /// shows the reason in its status.
    PingFailed(String),
    /// The session is over. Always the last event.
    Closed(CloseReason),
}

/// Why a tool call produced no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` answered the call with an error: {error}")]
    Rpc {
        /// The server identity.
        server: String,
        /// The error object (boxed: its `data` may be any JSON, and a
        /// call's error travels through every result).
        error: Box<ErrorObject>,
    },
    /// No answer within the call budget; the server was told to cancel.
    #[error("server `{server}` did not answer within {} s; the call was cancelled", budget.as_secs_f64())]
    Timeout {
        /// The server identity.
        server: String,
        /// The budget that ran out.
        budget: Duration,
    },
    /// The answer was not a `tools/call` result.
    #[error("server `{server}` sent a malformed result: {error}")]
    Malformed {
        /// The server identity.
        server: String,
        /// What was wrong.
        error: ShapeError,
    },
    /// The host abandoned the call; the server was told to stop.
    #[error("call to server `{server}` was cancelled")]
    Cancelled {
        /// The server identity.
        server: String,
    },
    /// The result broke the tool's declared outputSchema.
    #[error("server `{server}`: {error}")]
    OutputSchema {
        /// The server identity.
        server: String,
        /// What was wrong.
        error: OutputError,
    },
    /// The transport could not deliver the request or its answer.
    #[error("server `{server}`: {reason}")]
    Transport {
        /// The server identity.
        server: String,
        /// What the transport reported.
        reason: String,
    },
    /// The session ended before the answer came.
    #[error("server `{server}` session ended before the call finished: {reason}")]
    SessionClosed {
        /// The server identity.
        server: String,
        /// Why the session ended.
        reason: String,
    },
}

/// A protocol violation the session survived.
#[derive(Clone, Debug, PartialEq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PeerError {
    /// A frame that is not a JSON-RPC message (kept short).
    #[error("server `{server}` wrote something that is not JSON-RPC ({error}): {excerpt}")]
    Unparseable {
        /// The server identity.
        server: String,
        /// The parse error.
        error: ParseError,
        /// The start of the offending frame.
        excerpt: String,
    },
    /// The transport framing failed (a line too long, not UTF-8).
    #[error("server `{server}`: {error}")]
    Framing {
        /// The server identity.
        server: String,
        /// The framing error.
        error: FrameError,
    },
    /// A response to a request that is not pending.
    #[error("server `{server}` answered request id {id}, which is not pending; ignored")]
    UnknownResponse {
        /// The server identity.
        server: String,
        /// The id it answered.
        id: String,
    },
    /// A tool in `tools/list` that could not be read; the others are kept.
    #[error("server `{server}` listed a malformed tool, skipped: {error}")]
    MalformedTool {
        /// The server identity.
        server: String,
        /// What was wrong.
        error: ShapeError,
    },
    /// An error response the session could not attribute, or to a request
    /// whose failure is not fatal (`logging/setLevel`).
    #[error("server `{server}` answered {what} with an error: {error}")]
    ErrorResponse {
        /// The server identity.
        server: String,
        /// Which request, in words.
        what: String,
        /// The error object.
        error: ErrorObject,
    },
}

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CloseReason {
    /// The host closed it.
    #[error("closed by rho")]
    Requested,
    /// Handshake and discovery did not finish within the startup budget.
    #[error("startup timed out after {} s while {waiting_for}{}", budget.as_secs_f64(), peer_note(.peer_errors))]
    StartupTimeout {
        /// The budget.
        budget: Duration,
        /// What the session was waiting for.
        waiting_for: &'static str,
        /// The first protocol violations seen, if any.
        peer_errors: Vec<String>,
    },
    /// The server's `initialize` answer was unusable.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// `tools/list` failed.
    #[error("tool discovery failed: {0}")]
    Discovery(String),
    /// The transport ended (the process exited, the stream closed).
    #[error("{}{}{}", if *during_startup { "server exited during startup" } else { "server exited" }, detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default(), peer_note(.peer_errors))]
    TransportClosed {
        /// Whether the handshake and discovery had not finished.
        during_startup: bool,
        /// What the executor knows (exit status).
        detail: Option<String>,
        /// The first protocol violations seen, if any.
        peer_errors: Vec<String>,
    },
    /// The transport failed (could not write, could not connect).
    #[error("transport failed: {0}")]
    TransportFailed(String),
}

impl CloseReason {
    /// Whether the session ended before it ever became ready.
    pub fn is_startup_failure(&self) -> bool {
        match self {
            CloseReason::Requested => false,
            CloseReason::StartupTimeout { .. }
            | CloseReason::Handshake(_)
            | CloseReason::Discovery(_) => true,
            CloseReason::TransportClosed { during_startup, .. } => *during_startup,
            CloseReason::TransportFailed(_) => true,
        }
    }
}

fn peer_note(errors: &[String]) -> String {
    match errors.first() {
        None => String::new(),
        Some(first) => format!("; before that, {first}"),
    }
}

/// A command that the caller should not have issued in this state.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApiMisuse {
    /// Calls need a ready session.
    #[error("server `{0}` is not ready yet")]
    NotReady(String),
    /// The session is over.
    #[error("server `{0}` session is closed")]
    Closed(String),
    /// `tools/call` arguments must be a JSON object.
    #[error("tool arguments must be a JSON object")]
    ArgumentsNotObject,
}

/// What a pending request is for.
#[derive(Clone, Debug)]
enum Purpose {
    Initialize,
    /// A fresh `initialize` after the transport said the session expired.
    Reinitialize,
    SetLevel,
    Ping,
    /// A page of `tools/list` after `notifications/tools/list_changed`.
    Relist,
    ListTools,
    CallTool(CallId),
}

#[derive(Clone, Debug)]
struct Pending {
    purpose: Purpose,
    deadline: Instant,
    /// The budget that `deadline` came from, for messages.
    budget: Duration,
    /// When the request was sent (the hard cap on progress runs from here).
    sent: Instant,
    /// The budget left when a question paused it; the deadline is out of
    /// the timer table meanwhile.
    paused: Option<Duration>,
}

#[derive(Debug)]
enum Phase {
    Initializing,
    Discovering {
        init: Box<InitializeResult>,
        tools: Vec<Tool>,
        pages: usize,
        seen_cursors: BTreeSet<String>,
        /// `tools/list_changed` arrived during this listing: list again
        /// when it ends.
        changed: bool,
        /// This is already the listing again; a further change is applied
        /// after ready, like any other.
        relisted: bool,
    },
    Ready,
    Closed,
}

/// One MCP server session. See the module docs for the contract.
#[derive(Debug)]
pub struct Session {
    options: SessionOptions,
    phase: Phase,
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    deadlines: BTreeSet<(Instant, u64)>,
    /// The fixed timers: [`Timer::Startup`] (handshake and discovery must
    /// finish by then; disarmed once ready or closed) and [`Timer::Ping`]
    /// (the next keep-alive ping, while ready).
    timers: TimerTable,
    /// The latest `now` seen; earlier ones are clamped to it.
    clock: Clock,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    decoder: LineDecoder,
    ready: Option<ServerReady>,
    peer_errors: Vec<String>,
    /// The version the server chose in `initialize`, once answered.
    negotiated_version: Option<String>,
    /// A re-listing of tools under way after `list_changed`.
    relist: Option<Relist>,
    /// The tool each call in flight called, for its outputSchema check.
    call_tools: BTreeMap<u64, CalledTool>,
    /// Compiled outputSchemas, by tool name, compiled on first use.
    output_schemas: BTreeMap<String, OutputSchema>,
    /// Questions put to the host and not yet answered.
    questions: BTreeMap<QuestionId, questions::OpenQuestion>,
    next_question: u64,
    /// Rate limit on logging protocol errors.
    junk: Tally,
    /// Rate limit on passing the server's log messages on.
    server_logs: Tally,
    /// Why an answer could not be read, when it could not be tied to a
    /// request either: the next failure names it.
    unread: Option<String>,
    /// A fresh `initialize` already replaced an expired session during
    /// startup; a second expiry before ready fails the session.
    reinitialized_during_startup: bool,
}

/// The tool a call in flight called, for its outputSchema check: its
/// place in the ready tool list while that list stands (the first tool of
/// that name, as the check would find it; no copy of the name per call),
/// else its name (a tool not listed, or a list since replaced).
#[derive(Debug)]
enum CalledTool {
    Listed(usize),
    Named(String),
}

/// Pages of a re-listing gathered so far.
#[derive(Debug, Default)]
struct Relist {
    tools: Vec<Tool>,
    pages: usize,
    seen_cursors: BTreeSet<String>,
    /// Another `list_changed` arrived meanwhile: list once more after this.
    again: bool,
}

impl Session {
    /// Creates a session and queues `initialize` at once. The startup
    /// budget starts at `now`.
    pub fn new(options: SessionOptions, now: Instant) -> Self {
        let startup_deadline = now + options.startup_timeout;
        let mut session = Self {
            decoder: LineDecoder::new(options.max_line),
            options,
            phase: Phase::Initializing,
            next_id: 0,
            pending: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            timers: TimerTable::default(),
            clock: Clock::new(now),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            ready: None,
            peer_errors: Vec::new(),
            negotiated_version: None,
            relist: None,
            call_tools: BTreeMap::new(),
            output_schemas: BTreeMap::new(),
            questions: BTreeMap::new(),
            next_question: 0,
            junk: Tally::new(JUNK_LOGGED, LOG_WINDOW),
            server_logs: Tally::new(SERVER_LOGS_LOGGED, LOG_WINDOW),
            unread: None,
            reinitialized_during_startup: false,
        };
        session.timers.set(Timer::Startup, startup_deadline);
        let params = session.initialize_params();
        session.send_request(
            Purpose::Initialize,
            "initialize",
            Some(&params),
            startup_deadline,
            session.options.startup_timeout,
        );
        session
    }

    // ----- getters -----

    /// The server identity this session belongs to.
    pub fn server(&self) -> &str {
        &self.options.server
    }

    /// Where the session is in its lifecycle.
    pub fn state(&self) -> SessionState {
        match self.phase {
            Phase::Initializing | Phase::Discovering { .. } => SessionState::Starting,
            Phase::Ready => SessionState::Ready,
            Phase::Closed => SessionState::Closed,
        }
    }

    /// What the server said at startup, once ready.
    pub fn server_ready(&self) -> Option<&ServerReady> {
        self.ready.as_ref()
    }

    /// The protocol version the server chose, once `initialize` was
    /// answered (transports echo it on every later request).
    pub fn negotiated_version(&self) -> Option<&str> {
        self.negotiated_version.as_deref()
    }

    /// The instant handshake and discovery must finish by, while they run.
    pub fn startup_deadline(&self) -> Option<Instant> {
        self.timers.get(Timer::Startup)
    }

    /// Whether a request this session sent still awaits its answer.
    pub fn is_pending(&self, request: ClientRequestId) -> bool {
        self.pending.contains_key(&request.0)
    }

    /// How many tool calls are awaiting an answer.
    pub fn calls_in_flight(&self) -> usize {
        self.pending
            .values()
            .filter(|p| matches!(p.purpose, Purpose::CallTool(_)))
            .count()
    }

    // ----- inputs -----

    /// Feeds bytes read from a line-framed transport (a child's stdout), in
    /// chunks of any size.
    pub fn handle_stdio_bytes(&mut self, now: Instant, bytes: &[u8]) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        // The decoder lends each line from its buffer; it is out of `self`
        // meanwhile (taking it allocates nothing) so the line can be read
        // without a copy.
        let mut decoder = std::mem::take(&mut self.decoder);
        decoder.push(bytes);
        while let Some(line) = decoder.next_line() {
            match line {
                Ok(line) => self.handle_line(now, line),
                Err(error) => self.frame_error(now, error),
            }
            if matches!(self.phase, Phase::Closed) {
                break;
            }
        }
        self.decoder = decoder;
    }

    /// One stdio line. It is parsed as it is: the JSON parser validates
    /// every string, so only a line that fails to parse is checked for
    /// UTF-8, and reported as a framing error when that is what is wrong.
    fn handle_line(&mut self, now: Instant, line: &[u8]) {
        match Incoming::parse(line) {
            Ok(incoming) => self.handle_incoming(now, incoming, line),
            Err(error) => match FrameError::not_utf8(line) {
                Some(not_utf8) => self.frame_error(now, not_utf8),
                None => self.unparseable(now, error, line),
            },
        }
    }

    /// Feeds one complete message frame (a stdio line, an HTTP body, an SSE
    /// `data` field). A frame that is not JSON-RPC is reported and skipped;
    /// on stdio, when it can be tied to a pending request (its `id` is
    /// readable, or it looks like an answer and exactly one request is in
    /// flight), that request fails at once with the reason.
    pub fn handle_message_bytes(&mut self, now: Instant, frame: &[u8]) {
        let _ = self.handle_answer_bytes(now, frame);
    }

    /// Like [`Session::handle_message_bytes`], returning why a frame that
    /// is not JSON-RPC was not read, for a transport that knows which
    /// request the frame answers (Streamable HTTP: a POST's own response)
    /// and fails it with [`Session::handle_request_failed`].
    pub fn handle_answer_bytes(&mut self, now: Instant, frame: &[u8]) -> Result<(), ParseError> {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return Ok(());
        }
        match Incoming::parse(frame) {
            Ok(incoming) => {
                self.handle_incoming(now, incoming, frame);
                Ok(())
            }
            Err(error) => {
                self.unparseable(now, error.clone(), frame);
                Err(error)
            }
        }
    }

    /// A parsed frame: one message, or a batch element by element.
    fn handle_incoming(&mut self, now: Instant, incoming: Incoming, frame: &[u8]) {
        match incoming {
            Incoming::Single(message) => self.handle_message(now, message),
            Incoming::Batch(items) => {
                for item in items {
                    // An element may have closed the session; Closed is last.
                    if matches!(self.phase, Phase::Closed) {
                        return;
                    }
                    match item {
                        Ok(message) => self.handle_message(now, message),
                        Err(error) => self.unparseable(now, error, frame),
                    }
                }
            }
        }
    }

    /// Feeds one parsed message.
    pub fn handle_message(&mut self, now: Instant, message: Message) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        match message {
            Message::Response { id, result } => self.handle_reply(now, id, Ok(result)),
            Message::Error {
                id: Some(id),
                error,
            } => self.handle_reply(now, id, Err(error)),
            Message::Error { id: None, error } => self.peer_error(
                now,
                PeerError::ErrorResponse {
                    server: self.options.server.clone(),
                    what: "a message it could not read".into(),
                    error,
                },
            ),
            Message::Request { id, method, params } => {
                self.handle_server_request(now, ServerRequestId(id), &method, params)
            }
            Message::Notification { method, params } => {
                self.handle_notification(now, &method, params.as_ref())
            }
        }
    }

    /// Advances time: fails whatever is past its deadline. Call it when
    /// [`Session::poll_timeout`] has passed (calling it early is harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        if self.timers.is_due(Timer::Startup, now) {
            let waiting_for = match self.phase {
                Phase::Initializing => "waiting for the initialize response",
                _ => "listing tools",
            };
            let peer_errors = self.failure_notes();
            self.finish(CloseReason::StartupTimeout {
                budget: self.options.startup_timeout,
                waiting_for,
                peer_errors,
            });
            return;
        }
        if self.timers.is_due(Timer::Ping, now) {
            let budget = self.options.request_timeout;
            self.send_request(Purpose::Ping, "ping", None::<&Value>, now + budget, budget);
            self.arm_ping(now);
        }
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            let Some(pending) = self.pending.remove(&id) else {
                continue;
            };
            let server = self.options.server.clone();
            match pending.purpose {
                Purpose::CallTool(call) => {
                    self.call_tools.remove(&call.0);
                    // The spec asks the sender to cancel a request it gave up on.
                    let params = json!({"requestId": id, "reason": "timed out"});
                    self.send_notification("notifications/cancelled", Some(&params));
                    self.withdraw_questions_of(call);
                    self.events.push_back(Event::CallCompleted {
                        call,
                        result: Err(match self.unread.take() {
                            None => CallError::Timeout {
                                server,
                                budget: pending.budget,
                            },
                            // An answer that could be neither read nor tied
                            // to a request is the likeliest cause: say so.
                            Some(unread) => CallError::Transport {
                                server,
                                reason: format!(
                                    "no answer could be read within {} s, so the call was cancelled; \
                                     before that, it sent an answer rho could not read: {unread}",
                                    pending.budget.as_secs_f64()
                                ),
                            },
                        }),
                    });
                }
                Purpose::SetLevel => {
                    tracing::warn!(server = %server, "logging/setLevel got no answer in time");
                }
                Purpose::Relist => self.relist_failed("no answer in time"),
                Purpose::Ping => self.events.push_back(Event::PingFailed(format!(
                    "no answer to ping within {} s",
                    pending.budget.as_secs_f64()
                ))),
                Purpose::Reinitialize => {
                    return self.finish(CloseReason::Handshake(
                        "the server did not answer initialize after its session expired".into(),
                    ));
                }
                // Startup requests share the startup deadline, handled above.
                Purpose::Initialize | Purpose::ListTools => {}
            }
        }
    }

    /// The transport ended: the process exited or the stream closed.
    /// `detail` is what the executor knows (an exit status).
    pub fn handle_transport_closed(&mut self, now: Instant, detail: Option<String>) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        // A final line without a newline still counts.
        let mut decoder = std::mem::take(&mut self.decoder);
        match decoder.finish() {
            Some(Ok(line)) => self.handle_line(now, line),
            Some(Err(error)) => self.frame_error(now, error),
            None => {}
        }
        self.decoder = decoder;
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        let during_startup = !matches!(self.phase, Phase::Ready);
        let peer_errors = self.failure_notes();
        self.finish(CloseReason::TransportClosed {
            during_startup,
            detail,
            peer_errors,
        });
    }

    /// The transport failed in a way the executor detected (spawn failed,
    /// a write failed).
    pub fn handle_transport_failed(&mut self, now: Instant, reason: String) {
        self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        self.finish(CloseReason::TransportFailed(reason));
    }

    /// The transport could not deliver `request` or its answer (an HTTP
    /// exchange failed, a stream broke beyond resumption). Only that
    /// request fails, unless the session cannot exist without it.
    pub fn handle_request_failed(
        &mut self,
        now: Instant,
        request: ClientRequestId,
        reason: String,
    ) {
        self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        let Some(pending) = self.pending.remove(&request.0) else {
            return;
        };
        self.deadlines.remove(&(pending.deadline, request.0));
        let server = self.options.server.clone();
        match pending.purpose {
            Purpose::Initialize | Purpose::ListTools | Purpose::Reinitialize => {
                self.finish(CloseReason::TransportFailed(reason))
            }
            Purpose::CallTool(call) => {
                self.call_tools.remove(&call.0);
                self.withdraw_questions_of(call);
                self.events.push_back(Event::CallCompleted {
                    call,
                    result: Err(CallError::Transport { server, reason }),
                });
            }
            Purpose::Ping => self.events.push_back(Event::PingFailed(reason)),
            Purpose::Relist => self.relist_failed(&reason),
            Purpose::SetLevel => {
                tracing::warn!(server = %server, "logging/setLevel failed: {reason}");
            }
        }
    }

    /// The transport says the server forgot this session (Streamable HTTP:
    /// 404, or 400 naming the session). The session runs a fresh
    /// `initialize`; requests in flight stay pending, and the transport
    /// re-sends what it holds once [`TransmitKind::Initialized`] goes out.
    ///
    /// During discovery (the server forgot the session right after
    /// `initialize`) this happens once: the rule that a failed server is
    /// not retried during startup is about failures, not about a session
    /// the server says it no longer knows. The fresh `initialize` shares
    /// the startup budget.
    ///
    /// Returns `false` when a re-initialization is already under way, the
    /// session is still initializing or closed, or it already started a
    /// fresh session during startup, so the caller does not loop.
    pub fn handle_session_expired(&mut self, now: Instant) -> bool {
        let now = self.clock.observe(now);
        let during_startup = match self.phase {
            Phase::Ready => false,
            Phase::Discovering { .. } if !self.reinitialized_during_startup => true,
            _ => return false,
        };
        if self
            .pending
            .values()
            .any(|p| matches!(p.purpose, Purpose::Reinitialize))
        {
            return false;
        }
        let params = self.initialize_params();
        let (deadline, budget) = if during_startup {
            self.reinitialized_during_startup = true;
            let deadline = self.startup_deadline().unwrap_or(now);
            (deadline, self.options.startup_timeout)
        } else {
            let budget = self.options.startup_timeout;
            (now + budget, budget)
        };
        self.send_request(
            Purpose::Reinitialize,
            "initialize",
            Some(&params),
            deadline,
            budget,
        );
        true
    }

    // ----- commands -----

    /// Calls a tool by the server's own name. The answer arrives as
    /// [`Event::CallCompleted`] with the returned id.
    pub fn call_tool(
        &mut self,
        now: Instant,
        name: &str,
        arguments: Value,
    ) -> Result<CallId, ApiMisuse> {
        let now = self.clock.observe(now);
        match self.phase {
            Phase::Ready => {}
            Phase::Closed => return Err(ApiMisuse::Closed(self.options.server.clone())),
            _ => return Err(ApiMisuse::NotReady(self.options.server.clone())),
        }
        let arguments = match arguments {
            Value::Null => Value::Object(Default::default()),
            args @ Value::Object(_) => args,
            _ => return Err(ApiMisuse::ArgumentsNotObject),
        };
        let call = CallId(self.next_id);
        let listed = self
            .ready
            .as_ref()
            .and_then(|r| r.tools.iter().position(|t| t.name == name));
        let called = match listed {
            Some(at) => CalledTool::Listed(at),
            None => CalledTool::Named(name.to_owned()),
        };
        self.call_tools.insert(call.0, called);
        // Every call carries a progress token (the call's own id), so a
        // server may report progress against it.
        let params = CallToolParams {
            name,
            arguments: &arguments,
            meta: RequestMeta {
                progress_token: call.0,
            },
        };
        let budget = self.options.tool_timeout;
        self.send_request(
            Purpose::CallTool(call),
            "tools/call",
            Some(&params),
            now + budget,
            budget,
        );
        Ok(call)
    }

    /// Abandons a call: the server is told with `notifications/cancelled`,
    /// and the call completes at once with [`CallError::Cancelled`]. A late
    /// answer is dropped. Cancelling a call that already ended does nothing.
    pub fn cancel_call(&mut self, now: Instant, call: CallId) {
        self.clock.observe(now);
        let Some(pending) = self.pending.get(&call.0) else {
            return;
        };
        if !matches!(pending.purpose, Purpose::CallTool(c) if c == call) {
            return;
        }
        let deadline = pending.deadline;
        self.pending.remove(&call.0);
        self.call_tools.remove(&call.0);
        self.deadlines.remove(&(deadline, call.0));
        let params = json!({"requestId": call.0, "reason": "cancelled by the user"});
        self.send_notification("notifications/cancelled", Some(&params));
        self.withdraw_questions_of(call);
        self.events.push_back(Event::CallCompleted {
            call,
            result: Err(CallError::Cancelled {
                server: self.options.server.clone(),
            }),
        });
    }

    /// Ends the session: every call still in flight completes with
    /// [`CallError::SessionClosed`], then [`Event::Closed`]. The executor
    /// then closes the transport.
    pub fn close(&mut self, now: Instant) {
        self.clock.observe(now);
        if !matches!(self.phase, Phase::Closed) {
            self.finish(CloseReason::Requested);
        }
    }

    // ----- outputs -----

    /// The next message to write to the transport, framed for it.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next thing the host must know.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`Session::handle_timeout`] must next be called, if ever.
    /// Reading it changes nothing.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next_timer().map(|(_, at)| at)
    }

    /// What the wakeup [`Session::poll_timeout`] reports is for.
    pub fn timeout_reason(&self) -> Option<Timer> {
        self.next_timer().map(|(timer, _)| timer)
    }

    pub(crate) fn next_timer(&self) -> Option<(Timer, Instant)> {
        if matches!(self.phase, Phase::Closed) {
            return None;
        }
        let request = self.deadlines.first().map(|&(d, _)| d);
        self.timers.next([(Timer::Request, request)])
    }

    // ----- internals -----

    fn initialize_params(&self) -> Value {
        let mut capabilities = self.options.capabilities.clone();
        if let Value::Object(map) = &mut capabilities {
            if self.options.workspace_root.is_some() {
                map.insert("roots".into(), json!({"listChanged": false}));
            }
            if self.options.elicitation {
                map.insert(
                    "elicitation".into(),
                    crate::features::elicitation::capability(),
                );
            }
            if self.options.sampling {
                map.insert("sampling".into(), crate::features::sampling::capability());
            }
        }
        json!({
            "protocolVersion": self.options.protocol_version,
            "capabilities": capabilities,
            "clientInfo": self.options.client_info,
        })
    }

    fn send_request<P: Serialize + ?Sized>(
        &mut self,
        purpose: Purpose,
        method: &str,
        params: Option<&P>,
        deadline: Instant,
        budget: Duration,
    ) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        // Room for a small request and its newline in one allocation.
        let mut bytes = Vec::with_capacity(REQUEST_CAPACITY);
        jsonrpc::write_request(&mut bytes, ClientRequestId(id), method, params);
        let kind = match purpose {
            Purpose::Initialize | Purpose::Reinitialize => {
                TransmitKind::Initialize(ClientRequestId(id))
            }
            _ => TransmitKind::Request(ClientRequestId(id)),
        };
        self.push_transmit(bytes, kind);
        self.pending.insert(
            id,
            Pending {
                purpose,
                deadline,
                budget,
                sent: deadline.checked_sub(budget).unwrap_or(deadline),
                paused: None,
            },
        );
        self.deadlines.insert((deadline, id));
        id
    }

    fn send_notification(&mut self, method: &str, params: Option<&Value>) {
        let bytes = jsonrpc::notification_bytes(method, params);
        let kind = if method == "notifications/initialized" {
            TransmitKind::Initialized
        } else {
            TransmitKind::Notification
        };
        self.push_transmit(bytes, kind);
    }

    fn push_transmit(&mut self, mut bytes: Vec<u8>, kind: TransmitKind) {
        if self.options.framing == Framing::Lines {
            bytes.push(b'\n');
        }
        self.transmits.push_back(Transmit { bytes, kind });
    }

    fn handle_reply(&mut self, now: Instant, id: RequestId, reply: Result<Value, ErrorObject>) {
        let pending = ClientRequestId::from_wire(&id)
            .and_then(|ClientRequestId(n)| self.pending.remove(&n).map(|p| (n, p)));
        let Some((n, pending)) = pending else {
            self.peer_error(
                now,
                PeerError::UnknownResponse {
                    server: self.options.server.clone(),
                    id: id.to_string(),
                },
            );
            return;
        };
        self.deadlines.remove(&(pending.deadline, n));
        match pending.purpose {
            Purpose::Initialize => self.on_initialize(now, reply),
            Purpose::Reinitialize => self.on_reinitialize(reply),
            Purpose::Relist => self.on_relist_page(now, reply),
            Purpose::Ping => self.events.push_back(match reply {
                Ok(_) => Event::PingAnswered,
                Err(error) => Event::PingFailed(format!("ping answered with an error: {error}")),
            }),
            Purpose::ListTools => self.on_tools_page(now, reply),
            Purpose::SetLevel => {
                if let Err(error) = reply {
                    self.peer_error(
                        now,
                        PeerError::ErrorResponse {
                            server: self.options.server.clone(),
                            what: "logging/setLevel".into(),
                            error,
                        },
                    );
                }
            }
            Purpose::CallTool(call) => {
                let tool = self.call_tools.remove(&call.0);
                // The server's name is copied only into an error.
                let result = match reply.map(CallToolResult::from_value) {
                    Ok(Ok(result)) => match self.check_output(tool.as_ref(), &result) {
                        Ok(()) => Ok(result),
                        Err(error) => Err(CallError::OutputSchema {
                            server: self.options.server.clone(),
                            error,
                        }),
                    },
                    Ok(Err(error)) => Err(CallError::Malformed {
                        server: self.options.server.clone(),
                        error,
                    }),
                    Err(error) => Err(CallError::Rpc {
                        server: self.options.server.clone(),
                        error: Box::new(error),
                    }),
                };
                self.withdraw_questions_of(call);
                self.events.push_back(Event::CallCompleted { call, result });
            }
        }
    }

    fn on_initialize(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        let result = match reply {
            Ok(value) => value,
            Err(error) => {
                return self.finish(CloseReason::Handshake(format!(
                    "the server answered initialize with an error: {error}"
                )));
            }
        };
        let init = match InitializeResult::from_value(&result) {
            Ok(init) => init,
            Err(e) => return self.finish(CloseReason::Handshake(e.0)),
        };
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            return self.finish(CloseReason::Handshake(format!(
                "the server speaks protocol version `{}`, which rho does not support (rho speaks {})",
                init.protocol_version,
                SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            )));
        }
        self.negotiated_version = Some(init.protocol_version.clone());
        self.send_notification("notifications/initialized", None);
        if let (Some(level), true) = (self.options.log_level, init.capabilities.logging) {
            let params = json!({"level": level.as_str()});
            let budget = self.options.request_timeout;
            self.send_request(
                Purpose::SetLevel,
                "logging/setLevel",
                Some(&params),
                now + budget,
                budget,
            );
        }
        let wants_tools = init.capabilities.tools;
        self.phase = Phase::Discovering {
            init: Box::new(init),
            tools: Vec::new(),
            pages: 0,
            seen_cursors: BTreeSet::new(),
            changed: false,
            relisted: false,
        };
        if wants_tools {
            self.request_tools_page(None);
        } else {
            self.become_ready(now);
        }
    }

    fn on_reinitialize(&mut self, reply: Result<Value, ErrorObject>) {
        let init = match reply.map(|v| InitializeResult::from_value(&v)) {
            Ok(Ok(init)) => init,
            Ok(Err(e)) => return self.finish(CloseReason::Handshake(e.0)),
            Err(error) => {
                return self.finish(CloseReason::Handshake(format!(
                    "after its session expired, the server answered initialize with an error: {error}"
                )));
            }
        };
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            return self.finish(CloseReason::Handshake(format!(
                "after its session expired, the server speaks protocol version `{}`, which rho does not support",
                init.protocol_version
            )));
        }
        tracing::info!(server = %self.options.server, "session re-established after expiry");
        self.negotiated_version = Some(init.protocol_version.clone());
        if let Phase::Discovering { init: current, .. } = &mut self.phase {
            // Still starting: what the server says now is what ready reports.
            **current = init;
        }
        self.send_notification("notifications/initialized", None);
    }

    fn request_tools_page(&mut self, cursor: Option<String>) {
        let params = cursor.map(|c| json!({ "cursor": c }));
        self.send_request(
            Purpose::ListTools,
            "tools/list",
            params.as_ref(),
            self.startup_deadline().unwrap_or(self.clock.latest()),
            self.options.startup_timeout,
        );
    }

    fn on_tools_page(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        let value = match reply {
            Ok(value) => value,
            Err(error) => {
                return self.finish(CloseReason::Discovery(format!(
                    "the server answered tools/list with an error: {error}"
                )));
            }
        };
        let page = match ToolsPage::from_value(&value) {
            Ok(page) => page,
            Err(e) => return self.finish(CloseReason::Discovery(e.0)),
        };
        let server = self.options.server.clone();
        for error in page.rejected {
            self.peer_error(
                now,
                PeerError::MalformedTool {
                    server: server.clone(),
                    error,
                },
            );
        }
        let Phase::Discovering {
            tools,
            pages,
            seen_cursors,
            changed,
            relisted,
            ..
        } = &mut self.phase
        else {
            return;
        };
        tools.extend(page.tools);
        *pages += 1;
        match page.next_cursor {
            Some(cursor) if *pages >= MAX_TOOL_PAGES || !seen_cursors.insert(cursor.clone()) => {
                let pages = *pages;
                self.finish(CloseReason::Discovery(format!(
                    "tools/list kept paginating (page {pages} repeated a cursor or passed {MAX_TOOL_PAGES} pages)"
                )));
            }
            Some(cursor) => self.request_tools_page(Some(cursor)),
            None if *changed && !*relisted => {
                // The list changed while it was being read: read it again,
                // so ready reports the tools as they are now.
                tracing::debug!(server = %self.options.server, "tools changed during discovery; listing again");
                tools.clear();
                *pages = 0;
                seen_cursors.clear();
                *changed = false;
                *relisted = true;
                self.request_tools_page(None);
            }
            None => {
                let changed_again = *changed;
                self.become_ready(now);
                if changed_again {
                    self.start_relist(now);
                }
            }
        }
    }

    /// Arms the next keep-alive ping, when pings are configured.
    fn arm_ping(&mut self, now: Instant) {
        match self.options.ping_interval {
            Some(every) => self.timers.set(Timer::Ping, now + every),
            None => self.timers.stop(Timer::Ping),
        }
    }

    fn become_ready(&mut self, now: Instant) {
        let Phase::Discovering { init, tools, .. } =
            std::mem::replace(&mut self.phase, Phase::Ready)
        else {
            return;
        };
        let init = *init;
        let ready = ServerReady {
            protocol_version: init.protocol_version,
            server_info: init.server_info,
            capabilities: init.capabilities,
            instructions: init.instructions,
            tools,
        };
        self.ready = Some(ready.clone());
        self.timers.stop(Timer::Startup);
        self.arm_ping(now);
        self.events.push_back(Event::Ready(Box::new(ready)));
    }

    fn handle_server_request(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        method: &str,
        params: Option<Value>,
    ) {
        let bytes = match method {
            "elicitation/create" => return self.elicitation_request(now, id, params),
            "sampling/createMessage" => return self.sampling_request(now, id, params),
            "ping" => jsonrpc::response_bytes(&id, &jsonrpc::empty_object()),
            "roots/list" if self.options.workspace_root.is_some() => {
                let roots: Vec<Value> = self
                    .options
                    .workspace_root
                    .iter()
                    .map(|uri| json!({"uri": uri, "name": "workspace"}))
                    .collect();
                jsonrpc::response_bytes(&id, &json!({ "roots": roots }))
            }
            _ => {
                tracing::debug!(server = %self.options.server, method, "unsupported server request");
                jsonrpc::error_bytes(
                    &id,
                    &ErrorObject {
                        code: jsonrpc::code::METHOD_NOT_FOUND,
                        message: format!("rho does not support `{method}`"),
                        data: None,
                    },
                )
            }
        };
        self.push_transmit(bytes, TransmitKind::Response);
    }

    fn handle_notification(&mut self, now: Instant, method: &str, params: Option<&Value>) {
        match method {
            "notifications/tools/list_changed" => self.tools_list_changed(now),
            "notifications/message" => self.server_log(now, params),
            "notifications/progress" => self.progress(now, params),
            "notifications/cancelled" => self.server_cancelled(now, params),
            _ => {
                tracing::trace!(server = %self.options.server, method, "notification ignored");
            }
        }
    }

    /// Lists the tools again after `notifications/tools/list_changed`, if
    /// the server declared `tools.listChanged`. A change that arrives while
    /// a listing runs queues one more listing: during discovery the listing
    /// starts over once its last page is in, so ready reports the current
    /// tools (a further change then is applied after ready); once ready,
    /// [`Event::ToolsChanged`] reports the new list.
    fn tools_list_changed(&mut self, now: Instant) {
        match &mut self.phase {
            Phase::Discovering { init, changed, .. } if init.capabilities.tools_list_changed => {
                tracing::debug!(server = %self.options.server, "tools/list_changed during discovery; listing again when this listing ends");
                *changed = true;
            }
            Phase::Ready
                if self
                    .ready
                    .as_ref()
                    .is_some_and(|r| r.capabilities.tools_list_changed) =>
            {
                self.start_relist(now)
            }
            _ => {
                tracing::debug!(server = %self.options.server, "tools/list_changed ignored (listChanged not declared, or before initialize was answered)");
            }
        }
    }

    /// Starts a re-listing while ready, or queues one after the one running.
    fn start_relist(&mut self, now: Instant) {
        match &mut self.relist {
            Some(relist) => relist.again = true,
            None => {
                self.relist = Some(Relist::default());
                self.request_relist_page(now, None);
            }
        }
    }

    fn request_relist_page(&mut self, now: Instant, cursor: Option<String>) {
        let params = cursor.map(|c| json!({ "cursor": c }));
        let budget = self.options.request_timeout;
        self.send_request(
            Purpose::Relist,
            "tools/list",
            params.as_ref(),
            now + budget,
            budget,
        );
    }

    fn on_relist_page(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        let page = match reply.map(|v| ToolsPage::from_value(&v)) {
            Ok(Ok(page)) => page,
            Ok(Err(e)) => return self.relist_failed(&e.0),
            Err(error) => return self.relist_failed(&error.to_string()),
        };
        let server = self.options.server.clone();
        for error in page.rejected {
            self.peer_error(
                now,
                PeerError::MalformedTool {
                    server: server.clone(),
                    error,
                },
            );
        }
        let Some(relist) = &mut self.relist else {
            return;
        };
        relist.tools.extend(page.tools);
        relist.pages += 1;
        match page.next_cursor {
            Some(cursor)
                if relist.pages >= MAX_TOOL_PAGES
                    || !relist.seen_cursors.insert(cursor.clone()) =>
            {
                self.relist_failed("tools/list kept paginating")
            }
            Some(cursor) => self.request_relist_page(now, Some(cursor)),
            None => {
                let Some(done) = self.relist.take() else {
                    return;
                };
                if let Some(ready) = &mut self.ready {
                    // Calls in flight now hold the name of what they called.
                    for called in self.call_tools.values_mut() {
                        if let CalledTool::Listed(at) = *called {
                            *called = CalledTool::Named(ready.tools[at].name.clone());
                        }
                    }
                    ready.tools = done.tools.clone();
                }
                // Revised tools may declare new schemas.
                self.output_schemas.clear();
                self.events.push_back(Event::ToolsChanged(done.tools));
                if done.again {
                    self.relist = Some(Relist::default());
                    self.request_relist_page(now, None);
                }
            }
        }
    }

    fn relist_failed(&mut self, why: &str) {
        tracing::warn!(server = %self.options.server, "re-listing tools failed, keeping the previous list: {why}");
        self.relist = None;
    }

    /// Holds a result to the tool's declared outputSchema, if it declared
    /// one: a result without valid `structuredContent` fails the call
    /// rather than pass a half-answer to the model.
    fn check_output(
        &mut self,
        called: Option<&CalledTool>,
        result: &CallToolResult,
    ) -> Result<(), OutputError> {
        let Some(tool) = called.and_then(|called| {
            let tools = &self.ready.as_ref()?.tools;
            match called {
                CalledTool::Listed(at) => tools.get(*at),
                CalledTool::Named(name) => tools.iter().find(|t| &t.name == name),
            }
        }) else {
            return Ok(());
        };
        if tool.output_schema.is_none() || result.is_error {
            return Ok(());
        }
        if !self.output_schemas.contains_key(&tool.name) {
            if let Some(schema) = &tool.output_schema {
                let compiled = OutputSchema::compile(&tool.name, schema)?;
                self.output_schemas.insert(tool.name.clone(), compiled);
            }
        }
        check_output(tool, self.output_schemas.get(&tool.name), result)
    }

    /// Attaches a `notifications/progress` to the call whose token it
    /// names; progress for anything else is dropped and logged.
    fn progress(&mut self, now: Instant, params: Option<&Value>) {
        let Some(params) = params else { return };
        let token = params.get("progressToken");
        let call = token.and_then(Value::as_u64).map(CallId).filter(|call| {
            self.pending
                .get(&call.0)
                .is_some_and(|p| matches!(p.purpose, Purpose::CallTool(c) if c == *call))
        });
        let (Some(call), Some(progress)) = (call, params.get("progress").and_then(Value::as_f64))
        else {
            tracing::debug!(server = %self.options.server, ?token, "progress for no call in flight; dropped");
            return;
        };
        if let Some(cap) = self.options.progress_extends_up_to {
            // A call that reports progress is alive: its idle budget starts
            // again, but never past the hard cap from when it was sent.
            if let Some(p) = self.pending.get_mut(&call.0) {
                let extended = (now + p.budget).min(p.sent + cap);
                if p.paused.is_none() && extended > p.deadline {
                    self.deadlines.remove(&(p.deadline, call.0));
                    p.deadline = extended;
                    self.deadlines.insert((extended, call.0));
                }
            }
        }
        self.events.push_back(Event::Progress {
            call,
            progress: Progress {
                progress,
                total: params.get("total").and_then(Value::as_f64),
                message: params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
        });
    }

    /// Routes a server's `notifications/message` into tracing under the
    /// `rho::mcp::server` target. Severities above error map onto error.
    /// A flood is rate-limited: past the first few of a window, messages
    /// are only counted, and the count is logged once.
    fn server_log(&mut self, now: Instant, params: Option<&Value>) {
        let Some(params) = params else { return };
        let (verdict, hidden) = self.server_logs.admit(now);
        if let Some(n) = hidden {
            self.log_hidden_server_logs(n);
        }
        if verdict == Verdict::Count {
            return;
        }
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("info");
        let logger = params.get("logger").and_then(Value::as_str).unwrap_or("");
        let data = match params.get("data") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let redactor = &self.options.redactor;
        let logger = redactor.redact(logger);
        let logger = logger.as_ref();
        let data = redactor.redact(&data);
        let server = self.options.server.as_str();
        match level {
            "debug" => tracing::debug!(target: "rho::mcp::server", server, logger, "{data}"),
            "info" | "notice" => {
                tracing::info!(target: "rho::mcp::server", server, logger, "{data}")
            }
            "warning" => tracing::warn!(target: "rho::mcp::server", server, logger, "{data}"),
            _ => tracing::error!(target: "rho::mcp::server", server, logger, "{data}"),
        }
    }

    fn log_hidden_server_logs(&self, n: u64) {
        let server = self.options.server.as_str();
        tracing::info!(
            target: "rho::mcp::server",
            server,
            "… {} more log messages from server `{server}` were not shown",
            grouped(n)
        );
    }

    fn log_hidden_junk(&self, n: u64) {
        tracing::warn!(
            server = %self.options.server,
            "… {} more lines from server `{}` that were not JSON-RPC or broke the protocol were not logged",
            grouped(n),
            self.options.server
        );
    }

    fn unparseable(&mut self, now: Instant, error: ParseError, frame: &[u8]) {
        let text = String::from_utf8_lossy(frame);
        let mut excerpt: String = text.chars().take(120).collect();
        if text.chars().nth(120).is_some() {
            excerpt.push('…');
        }
        let reason = format!("the answer is not valid JSON-RPC ({error})");
        self.peer_error(
            now,
            PeerError::Unparseable {
                server: self.options.server.clone(),
                error,
                excerpt: format!("{excerpt:?}"),
            },
        );
        let peek = Peek::scan(frame);
        self.unreadable_answer(now, &peek, peek.response, reason);
    }

    /// A line the decoder rejected (over the cap, not UTF-8).
    fn frame_error(&mut self, now: Instant, error: FrameError) {
        let peek = Peek::scan(error.head());
        let (reason, likely_answer) = match &error {
            FrameError::TooLong { limit, len, .. } => (
                format!(
                    "the answer was {} bytes, over the {} limit (`max_message_bytes`); \
                     raise `max_message_bytes` for this server if its answers are that large",
                    grouped(*len as u64),
                    byte_size(*limit)
                ),
                // Only its start is known: an object that is not a request
                // or a notification is taken for an answer.
                peek.response
                    || (!peek.method && error.head().trim_ascii_start().first() == Some(&b'{')),
            ),
            FrameError::NotUtf8 { valid_up_to, .. } => (
                format!("the answer is not valid UTF-8 (first bad byte at offset {valid_up_to})"),
                peek.response,
            ),
        };
        self.peer_error(
            now,
            PeerError::Framing {
                server: self.options.server.clone(),
                error,
            },
        );
        self.unreadable_answer(now, &peek, likely_answer, reason);
    }

    /// An answer rho could not read fails the request it answers at once,
    /// when that is known: on stdio, by its `id` when readable, else when
    /// it looks like an answer and exactly one request is in flight. (A
    /// transport with its own exchanges, HTTP, ties answers itself.)
    /// Otherwise the next failure names it.
    fn unreadable_answer(
        &mut self,
        now: Instant,
        peek: &Peek,
        likely_answer: bool,
        reason: String,
    ) {
        if !likely_answer && peek.id.is_none() {
            return;
        }
        let target = if self.options.framing != Framing::Lines {
            None
        } else if let Some(id) = &peek.id {
            ClientRequestId::from_wire(id).filter(|r| self.pending.contains_key(&r.0))
        } else if self.pending.len() == 1 {
            self.pending.keys().next().map(|&n| ClientRequestId(n))
        } else {
            None
        };
        let Some(request) = target else {
            self.unread = Some(reason);
            return;
        };
        match self.pending.get(&request.0).map(|p| p.purpose.clone()) {
            Some(Purpose::Initialize | Purpose::Reinitialize) => {
                self.finish(CloseReason::Handshake(format!(
                    "its answer to initialize could not be read: {reason}"
                )))
            }
            Some(Purpose::ListTools) => self.finish(CloseReason::Discovery(format!(
                "its answer to tools/list could not be read: {reason}"
            ))),
            Some(_) => self.handle_request_failed(
                now,
                request,
                format!("its answer could not be read: {reason}"),
            ),
            None => {}
        }
    }

    /// The protocol errors a closing reason names: an answer that could not
    /// be read first, as the likeliest cause.
    fn failure_notes(&mut self) -> Vec<String> {
        let mut notes = self.peer_errors.clone();
        if let Some(unread) = self.unread.take() {
            notes.insert(0, format!("it sent an answer rho could not read: {unread}"));
        }
        notes
    }

    /// Reports a protocol error: logged (the first few of a window; the
    /// rest are counted), remembered for a failure reason, and an event.
    fn peer_error(&mut self, now: Instant, error: PeerError) {
        let (verdict, hidden) = self.junk.admit(now);
        if let Some(n) = hidden {
            self.log_hidden_junk(n);
        }
        if verdict == Verdict::Log {
            tracing::warn!("{error}");
        }
        if self.peer_errors.len() < REMEMBERED_PEER_ERRORS {
            self.peer_errors.push(error.to_string());
        }
        self.events.push_back(Event::PeerMisbehaved(error));
    }

    fn finish(&mut self, reason: CloseReason) {
        if let Some(n) = self.junk.take_hidden() {
            self.log_hidden_junk(n);
        }
        if let Some(n) = self.server_logs.take_hidden() {
            self.log_hidden_server_logs(n);
        }
        let server = self.options.server.clone();
        let pending = std::mem::take(&mut self.pending);
        self.deadlines.clear();
        self.timers.clear();
        self.call_tools.clear();
        for question in std::mem::take(&mut self.questions).into_keys() {
            self.events.push_back(Event::QuestionWithdrawn(question));
        }
        for (_, p) in pending {
            if let Purpose::CallTool(call) = p.purpose {
                self.events.push_back(Event::CallCompleted {
                    call,
                    result: Err(CallError::SessionClosed {
                        server: server.clone(),
                        reason: reason.to_string(),
                    }),
                });
            }
        }
        self.phase = Phase::Closed;
        self.events.push_back(Event::Closed(reason));
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call {}", self.0)
    }
}
