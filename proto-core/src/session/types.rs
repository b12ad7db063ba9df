//! The session's public vocabulary: how it is configured
//! ([`SessionOptions`]), what it hands the driver ([`Transmit`],
//! [`Event`]), and how a call or the session ends ([`CallError`],
//! [`PeerError`], [`CloseReason`], [`ApiMisuse`]). The state machine that
//! produces them is in the parent module.

use super::*;

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
    /// The protocol version to offer first. A stateless version
    /// ([`crate::wire::protocol::MODERN_PROTOCOL_VERSIONS`], the default)
    /// probes with `server/discover` and falls back to the 2025-11-25
    /// handshake; a 2025 version goes straight to `initialize`.
    pub protocol_version: String,
    /// The server's log level: `logging/setLevel` after the handshake
    /// (2025 era, when the server declares logging), or
    /// `io.modelcontextprotocol/logLevel` on every request (2026 era;
    /// [`super::DEFAULT_STATELESS_LOG_LEVEL`] when `None`, since servers of
    /// that era log nothing unasked).
    pub log_level: Option<LogLevel>,
    /// Stdio: an `initialize` goes right behind the `server/discover`
    /// probe, and when that `initialize` is refused without saying the
    /// server is modern, the probe waits this long more before a plain
    /// `initialize` goes (a late discovery result still wins). Silence
    /// alone never decides the era. `None`: no early `initialize`, the
    /// probe alone within the startup budget (HTTP, where every request
    /// gets an answer).
    pub discover_wait: Option<Duration>,
    /// Leave out tools whose `x-mcp-header` annotations are invalid, as
    /// the 2026 Streamable HTTP transport must (set by
    /// [`crate::http::HttpTransport`]; stdio may ignore the annotations).
    pub check_tool_headers: bool,
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
    /// Declare URL-mode elicitation beside forms (only with
    /// `elicitation`): set only when the host can show a URL to a person
    /// and open it in a browser on their yes. Without it a URL-mode
    /// request is refused as invalid params (2025 era) or fails its call
    /// (2026 era).
    pub elicitation_url: bool,
    /// Declare the MCP Apps extension (`io.modelcontextprotocol/ui`, with
    /// the one MIME type rho renders), in both eras: set only when the host
    /// can show a server's view to a person (see [`crate::features::apps`]).
    pub apps: bool,
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
            protocol_version: MODERN_PROTOCOL_VERSION.into(),
            log_level: None,
            discover_wait: Some(DISCOVER_WAIT),
            check_tool_headers: false,
            startup_timeout: Duration::from_secs(120),
            tool_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
            framing: Framing::Lines,
            max_line: crate::wire::framing::DEFAULT_MAX_LINE,
            ping_interval: None,
            workspace_root: None,
            progress_extends_up_to: Some(Duration::from_secs(30 * 60)),
            elicitation: false,
            elicitation_url: false,
            apps: false,
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

/// When a 2025-era tool call goes as a task (`params.task`, the
/// 2025-11-25 experimental tasks), for a server that declared
/// `tasks.requests.tools.call`. In the 2026 era the server decides (the
/// tasks extension is declared on every request) and this is not read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskAugmentation {
    /// Only a tool whose `execution.taskSupport` is `required` (the server
    /// refuses it otherwise): every other call is a plain call.
    #[default]
    WhenRequired,
    /// Also a tool whose `taskSupport` is `optional`: the host asked for a
    /// task (a long call it means to leave running).
    WhenOffered,
}

impl TaskAugmentation {
    /// Whether a tool of `support` goes as a task.
    pub fn wants(self, support: TaskSupport) -> bool {
        match support {
            TaskSupport::Required => true,
            TaskSupport::Optional => self == Self::WhenOffered,
            TaskSupport::Forbidden => false,
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
    /// Its prompts, resources and templates as listed at connect (see
    /// [`crate::features::catalog`]); a listing that failed says why
    /// there without failing the server. Boxed: it is seldom read and
    /// would double what every startup outcome carries.
    pub catalog: Box<Catalog>,
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
    /// A prompt or resource listing after ready ended (a re-listing after
    /// `list_changed`): this is the whole catalog now.
    CatalogChanged(Box<Catalog>),
    /// A request sent with [`Session::request`] ended, one way or
    /// another. Every accepted request ends with exactly one of these.
    RequestCompleted {
        /// Which request ([`Session::request`] returned it).
        call: CallId,
        /// The server's result, as sent, or why there is none.
        result: Result<Value, CallError>,
    },
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
    /// The server said the out-of-band interaction of a URL the person
    /// agreed to open (or was shown in a -32042 error) is complete
    /// (`notifications/elicitation/complete`, 2025 era). Completions of
    /// URLs rho never showed are ignored.
    UrlElicitationCompleted {
        /// The server's `elicitationId`.
        elicitation_id: String,
    },
    /// The server withdrew a question (it cancelled its request), or the
    /// call it belonged to ended: the host stops asking.
    QuestionWithdrawn(QuestionId),
    /// A log message from the server (`notifications/message`), redacted
    /// and within the flood limit: the same message tracing gets.
    Log(ServerLog),
    /// A resource the host subscribed to changed
    /// (`notifications/resources/updated`, for a URI held; see
    /// [`crate::features::resource_subscriptions`]): read it again when
    /// convenient. The URI is the one subscribed to, as the host gave it.
    ResourceUpdated {
        /// The resource.
        uri: String,
    },
    /// The session stopped holding resource subscriptions the host did
    /// not release: the 2026 era's resource stream ended and could not be
    /// opened again ([`crate::features::resource_subscriptions::MAX_REISSUES`]),
    /// or a 2025 server that forgot the session did not take one again.
    /// The host hears of no more changes of these until it subscribes
    /// again.
    ResourceWatchEnded {
        /// The resources no longer watched, as the host gave them.
        uris: Vec<String>,
        /// Why.
        end: crate::features::resource_subscriptions::WatchEnd,
    },
    /// The session subscribed again, of its own, to resources the host
    /// held, on a session that replaced one the server forgot (2025 era,
    /// Streamable HTTP): read them again, since a change in between was
    /// not heard of.
    ResourceWatchRenewed {
        /// The resources subscribed to again, as the host gave them.
        uris: Vec<String>,
    },
    /// A keep-alive `ping` was answered.
    PingAnswered,
    /// A keep-alive `ping` failed; the session carries on, and the host
    /// shows the reason in its status.
    PingFailed(String),
    /// The session is over. Always the last event.
    Closed(CloseReason),
}

/// One log message a server sent (`notifications/message`), with every
/// configured secret redacted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ServerLog {
    /// The severity the server gave (`debug` ... `emergency`; `info` when
    /// it gave none), as sent.
    pub level: String,
    /// The logger name, when it gave one.
    pub logger: Option<String>,
    /// The message: its text, or the JSON of structured data.
    pub data: String,
}

/// What a cancelled call's server was told, as far as rho knows: only a
/// notification is a message the server is sure to get. Closing a
/// request's response stream is the 2026-07-28 protocol's cancellation
/// over Streamable HTTP, but whether a server notices depends on how it
/// serves the request (a server answering with one JSON body may run the
/// request to its end), so rho says what it did, not what the server did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelNotice {
    /// `notifications/cancelled` went to the server.
    Told,
    /// The request's response stream was closed (the 2026-07-28 era over
    /// Streamable HTTP, which has no client notifications).
    StreamClosed,
    /// Nothing was running on the server: the request was never sent, or
    /// its answer (a request for input) had come.
    NothingRunning,
    /// The call ran as a task and the server was asked to cancel it
    /// (`tasks/cancel`); cancelling a task is cooperative, so whether it
    /// stopped is the server's to say.
    TaskCancelRequested,
}

impl std::fmt::Display for CancelNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Told => "the server was told to stop",
            Self::StreamClosed => "the response stream was closed",
            Self::NothingRunning => "nothing was running on the server",
            Self::TaskCancelRequested => "the server was asked to cancel the task",
        })
    }
}

/// Why a tool call produced no result.
#[derive(Clone, Debug, PartialEq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallError {
    /// The server answered with a JSON-RPC error.
    #[error("server `{server}` answered with an error: {}", describe_error(error))]
    Rpc {
        /// The server identity.
        server: String,
        /// The error object (boxed: its `data` may be any JSON, and a
        /// call's error travels through every result).
        error: Box<ErrorObject>,
    },
    /// The server cannot go on until the person has visited one or more
    /// URLs (`URLElicitationRequiredError`, -32042, 2025 era): each is
    /// checked and ready to show as a URL question is. Nothing was opened;
    /// a host shows them, opens each on the person's yes, and may then
    /// send the call again.
    #[error(
        "server `{server}` needs the person to visit {} before the call can go on: {message}",
        visit_count(elicitations)
    )]
    UrlElicitationRequired {
        /// The server identity.
        server: String,
        /// The error's `message`.
        message: String,
        /// The URLs to visit, from the error's `data`.
        elicitations: Vec<crate::features::elicitation::UrlRequest>,
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
    /// The host abandoned the call; `notice` says what the server was
    /// told, if anything.
    #[error("call to server `{server}` was cancelled; {notice}")]
    Cancelled {
        /// The server identity.
        server: String,
        /// How the server learned of it.
        notice: CancelNotice,
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
    /// The server acknowledged a resource subscription (2026 era,
    /// `subscriptions/listen`) without the resource: it does not take a
    /// subscription to it.
    #[error("server `{server}` did not agree to a subscription to resource `{uri}`")]
    SubscriptionNotAgreed {
        /// The server identity.
        server: String,
        /// The resource.
        uri: String,
    },
    /// The server needs input before it can finish the call (an
    /// `InputRequiredResult`, 2026 era) and rho could not give it.
    #[error("server `{server}` needs more input to finish the call: {reason}")]
    InputRequired {
        /// The server identity.
        server: String,
        /// Why rho could not go on.
        reason: String,
    },
    /// The server ran the call as a task (either era's tasks), and the
    /// task ended without a result: the server cancelled it, it sent a
    /// task handle or state rho cannot read, or it no longer knows it.
    #[error("server `{server}` ran the call as a task, which {reason}")]
    Task {
        /// The server identity.
        server: String,
        /// What happened to the task.
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

/// How many URLs a -32042 error lists, in words (the URLs themselves are
/// the host's to show, each with its host apart).
fn visit_count(elicitations: &[crate::features::elicitation::UrlRequest]) -> String {
    match elicitations.len() {
        1 => "a URL".to_owned(),
        n => format!("{n} URLs"),
    }
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
    /// A prompt, resource or template in a listing that could not be
    /// read; the others are kept.
    #[error("server `{server}` listed a malformed entry in {list}, skipped: {error}")]
    MalformedEntry {
        /// The server identity.
        server: String,
        /// The listing method.
        list: &'static str,
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
    /// The server did not declare the capability a request needs.
    #[error("server `{server}` does not offer {capability}")]
    NotOffered {
        /// The server identity.
        server: String,
        /// The capability, as the protocol names it.
        capability: &'static str,
    },
    /// The session holds (or is asking for) as many resource
    /// subscriptions as it takes
    /// ([`crate::features::resource_subscriptions::MAX_PER_SERVER`]).
    #[error(
        "server `{server}` already has {limit} resource subscriptions, the most rho holds for one server; unsubscribe from one first"
    )]
    SubscriptionLimit {
        /// The server identity.
        server: String,
        /// The bound.
        limit: usize,
    },
}
