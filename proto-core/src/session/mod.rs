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
//! This file holds the state machine's core: its state, the inputs and
//! commands, and the outputs. The rest is split by what it handles:
//! `types.rs` (the public vocabulary: options, events, errors), `era.rs`
//! (which protocol era and what that changes), `handshake.rs` (the probe
//! or `initialize`, and the fall back between them), `outbound.rs` (how a
//! request leaves: ids, bytes, the pending table), `replies.rs` (where an
//! answer goes), `discovery.rs` (tool and catalog listings up to ready),
//! `peer.rs` (the server's own requests and notifications, list changes
//! and re-listing), `inbound.rs` (results checked, progress, logs, junk
//! and peer errors, the close), `questions.rs` (elicitation, sampling and
//! multi round-trip inputs), `listen.rs` (subscriptions/listen),
//! `watch.rs` (resource subscriptions, both eras),
//! `tally.rs` and `timer.rs`.
//!
//! # Lifecycle
//!
//! ```text
//!  new ──server/discover──▶ Probing ──DiscoverResult──────────────────┐
//!   │                          │                                      ▼
//!   │                          └─any other answer──▶ Initializing ──result──▶ Discovering ──last tools/list page──▶ Ready
//!   └──initialize (a 2025 version offered)──────────────▲
//!   startup budget, transport closed, handshake or discovery error ──▶ Closed ◀── close()
//! ```
//!
//! Offered a stateless version (the default, 2026-07-28), the session
//! probes with `server/discover` and speaks whichever era the answer
//! shows, all within the one startup budget (see `era.rs` for the table).
//! Offered a 2025 version, it goes straight to `initialize`. Either way
//! the host sees the same events; [`ServerReady::protocol_version`] says
//! which era it got.
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
//! indexed by [`Timer`]. Request deadlines (every request's but the
//! `subscriptions/listen` request's, which has none) live in one ordered
//! set keyed by `(deadline, request id)`, so their next wakeup is its
//! first element and expiring requests is a walk from the front: no clock
//! reads, no hash-order iteration. [`Session::poll_timeout`] is the earliest of
//! them, and [`Session::timeout_reason`] names it.
//!
//! # Time
//!
//! Every input carries `now`, read by the executor from a monotonic clock.
//! The session never goes back in time: a `now` earlier than the latest
//! one it was given is clamped to that latest one (the input is handled
//! as if it came then), so a deadline once promised never moves earlier.

mod discovery;
pub(crate) mod era;
mod handshake;
mod inbound;
mod listen;
mod outbound;
mod peer;
mod questions;
mod replies;
mod tally;
mod tasks;
mod timer;
mod types;
mod watch;

pub(crate) use crate::text::grouped;
use tally::{Tally, Verdict};

pub use questions::{AuthorizationReason, Question, QuestionId, SamplingAnswer};
pub use tasks::{MAX_FAILED_POLLS, MAX_TASK_INPUTS};
pub use timer::Timer;
pub(crate) use timer::{Clock, TimerTable, earlier};
pub use types::*;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::config::{LogLevel, ServerConfig};
use crate::features::FeatureRequest;
use crate::features::catalog::{Catalog, CatalogKind, Lister, PageOutcome, PageRequest};
use crate::features::content::{OutputError, OutputSchema, check_output};
use crate::wire::framing::{FrameError, LineDecoder, byte_size};
use crate::wire::jsonrpc::{
    self, ClientRequestId, ErrorObject, Incoming, Message, ParseError, Peek, RequestId,
    ServerRequestId,
};
use crate::wire::protocol::{
    CallToolParams, CallToolResult, Implementation, InitializeResult, LATEST_PROTOCOL_VERSION,
    MODERN_PROTOCOL_VERSION, RequestMeta, ResultType, SUPPORTED_PROTOCOL_VERSIONS, ShapeError,
    TaskSupport, Tool, ToolsPage, UnsupportedVersion, describe_error,
};
use era::{Era, ProbeOutcome};

/// How many `tools/list` pages a server may return before rho decides it is
/// looping rather than paginating.
pub const MAX_TOOL_PAGES: usize = 1000;

/// The buffer a request is serialized into: a `tools/call` with small
/// arguments, and the newline after it, fit without a reallocation.
const REQUEST_CAPACITY: usize = 256;

/// How long a stdio `server/discover` probe still waits, once the early
/// `initialize` was refused without saying the server is modern, before a
/// plain `initialize` goes (at most half of what is left of the startup
/// budget). Silence alone never ends the probe before the startup budget.
pub const DISCOVER_WAIT: Duration = Duration::from_secs(3);

/// How long a stdio session rho closed waits for the answers to its
/// farewells (a running task's `tasks/cancel`, a 2025 unsubscribe) before
/// it ends and its server is stopped: as long as Streamable HTTP's close
/// waits by default.
pub const FAREWELL_WAIT: Duration = Duration::from_secs(2);

/// The least time a 2026-era list counts as fresh, whatever its `ttlMs`.
///
/// `ttlMs: 0` (the default of some servers, rmcp's among them) lets a
/// client re-fetch "every time the result is needed", and the caching
/// utility leaves the rest to the client's own heuristics. Re-listing
/// before every call doubles the requests a busy agent makes and the
/// server's work for nothing a person could notice, so a list is read
/// again at most once per this span; a list-changed notification, a
/// `subscriptions/listen` event or a changed authorization still
/// invalidates it at once.
pub const MIN_FRESHNESS: Duration = Duration::from_secs(1);

/// Until when a list received at `now` with freshness `ttl` stays fresh.
fn fresh_until(now: Instant, ttl: Duration) -> Instant {
    now + ttl.max(MIN_FRESHNESS)
}

/// The `io.modelcontextprotocol/logLevel` of every 2026-era request when
/// no `log_level` is configured: the same server warnings and errors reach
/// the log in both eras.
pub const DEFAULT_STATELESS_LOG_LEVEL: crate::config::LogLevel = crate::config::LogLevel::Warning;

/// How many requests rho gave up on it remembers, to drop their late
/// answers quietly (ids only: a few kilobytes at most).
const REMEMBERED_ABANDONED: usize = 256;

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

/// What a pending request is for.
#[derive(Clone, Debug)]
enum Purpose {
    /// The `server/discover` probe (or its retry after a -32022).
    Discover,
    Initialize,
    /// A fresh `initialize` after the transport said the session expired.
    Reinitialize,
    SetLevel,
    Ping,
    /// A page of `tools/list` after `notifications/tools/list_changed`.
    Relist,
    ListTools,
    CallTool(CallId),
    /// `subscriptions/listen` (2026 era), open for the session's life.
    Listen,
    /// A `subscriptions/listen` carrying resource subscriptions (2026
    /// era): timed until acknowledged, then open for the session's life
    /// (see `watch.rs`).
    Watch,
    /// A page of a prompt or resource listing.
    Catalog(CatalogKind),
    /// A request from [`Session::request`].
    Feature(CallId),
    /// A request about the task a call runs (`tasks/get`, `tasks/result`,
    /// `tasks/update`; see `tasks.rs`).
    Task {
        call: CallId,
        op: tasks::TaskOp,
    },
    /// `tasks/cancel` for a task whose call is over: its answer is only
    /// logged.
    TaskCancel,
    /// What rho tells a server as it closes the session (a 2025
    /// `resources/unsubscribe` for each subscription held): sent, never
    /// read, since the session is over ([`Session::is_farewell`]).
    Farewell,
    /// A 2025 `resources/subscribe` of rho's own for a URI held, once a
    /// fresh `initialize` replaced an expired session (see `watch.rs`).
    Renew,
}

#[derive(Clone, Debug)]
struct Pending {
    purpose: Purpose,
    /// When it fails for want of an answer, if it is [`Pending::timed`]:
    /// then `(deadline, id)` is in the deadline set, unless paused.
    deadline: Instant,
    /// The budget that `deadline` came from, for messages.
    budget: Duration,
    /// When the request was sent (the hard cap on progress runs from here).
    sent: Instant,
    /// The budget left when a question paused it; the deadline is out of
    /// the timer table meanwhile.
    paused: Option<Duration>,
    /// What the request was, to send it again under a new id (2026 era:
    /// after a -32022, or a multi round-trip request's next round).
    resend: Option<Box<Resend>>,
    /// A call's request answered with a task handle: the call is held
    /// under this id for its task (see `tasks.rs`).
    task: Option<Box<tasks::TaskRun>>,
    /// A 2025 call sent with `params.task`: its answer may be a task handle.
    augmented: bool,
}

impl Pending {
    /// A request sent now for `purpose`, due by `deadline`, which is
    /// `budget` from now.
    fn new(purpose: Purpose, deadline: Instant, budget: Duration) -> Self {
        Self {
            purpose,
            deadline,
            budget,
            sent: deadline.checked_sub(budget).unwrap_or(deadline),
            paused: None,
            resend: None,
            task: None,
            augmented: false,
        }
    }

    /// Whether the request runs against its deadline: every request but
    /// `subscriptions/listen`, which is meant to stay open for the
    /// session's life, however often it is sent again under a new id.
    fn timed(&self) -> bool {
        !matches!(
            self.purpose,
            Purpose::Listen
                | Purpose::Task {
                    op: tasks::TaskOp::Result,
                    ..
                }
        )
    }

    /// Whether `(deadline, id)` belongs in the deadline set: a timed
    /// request whose budget no open question has paused (a paused one's
    /// `deadline` is stale until [`Session::resume_budget`] sets it).
    fn armed(&self) -> bool {
        self.timed() && self.paused.is_none()
    }
}

/// A stateless request as sent, without its era `_meta`.
#[derive(Clone, Debug)]
pub(crate) struct Resend {
    pub(crate) method: &'static str,
    /// The params before the era's `_meta` was merged in (a call's
    /// progress token included).
    pub(crate) params: era::Params,
    /// It was already sent again after a -32022.
    pub(crate) version_retried: bool,
    /// It was already sent again after its response stream broke.
    pub(crate) stream_retried: bool,
    /// It was already sent again after a -32020 (header mismatch) and a
    /// fresh tool list.
    pub(crate) header_retried: bool,
    /// Its multi round-trip rounds, once the server asked for input: the
    /// retry carries their answers and state.
    pub(crate) rounds: Option<Box<crate::features::mrtr::Rounds>>,
}

#[derive(Debug)]
enum Phase {
    /// `server/discover` is out.
    Probing,
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
        /// The shortest freshness (`ttlMs`) of the pages so far.
        ttl: Option<std::time::Duration>,
        /// The last tools page is in; ready waits for the catalog only.
        tools_done: bool,
    },
    Ready,
    Closed,
}

/// The `initialize` a stdio session sends right behind its first probe
/// (see `handshake.rs`), while the probe has not settled the era.
#[derive(Debug, Default)]
enum EarlyInit {
    /// None was sent, or the era is settled.
    #[default]
    None,
    /// Out under this request id, not answered yet.
    Pending(u64),
    /// Answered with an error (what a modern server does): if the probe
    /// then says the server is a 2025 one after all, a plain `initialize`
    /// goes.
    Refused(String),
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
    /// The prompts, resources and templates, and their listings.
    catalog: Lister,
    /// Until when each held catalog list is fresh (2026 `ttlMs`); a
    /// request that uses a list past it has the list read again.
    catalog_fresh_until: BTreeMap<CatalogKind, Instant>,
    /// The tool each call in flight called, for its outputSchema check.
    call_tools: BTreeMap<u64, CalledTool>,
    /// The `tasks/cancel` requests out when rho closed the session, which
    /// an HTTP transport lets finish before it ends ([`Session::is_farewell`]),
    /// and a stdio session waits for (see `held_close`).
    farewell: BTreeSet<u64>,
    /// Stdio: why the session closed, while its `Event::Closed` waits for
    /// the farewells' answers (at most [`FAREWELL_WAIT`]).
    held_close: Option<CloseReason>,
    /// Tool calls given up on before their answer came that the server may
    /// still answer with a task handle (see `maybe_task` in tasks.rs): a close
    /// waits for their answers too, so a task made of one is cancelled.
    maybe_tasks: BTreeSet<u64>,
    /// Compiled outputSchemas, by tool name, compiled on first use.
    output_schemas: BTreeMap<String, OutputSchema>,
    /// Questions put to the host and not yet answered.
    questions: BTreeMap<QuestionId, questions::OpenQuestion>,
    next_question: u64,
    /// The `elicitationId`s of URLs the person agreed to open, or was shown
    /// in a -32042 error (2025 era), oldest first, bounded: a
    /// `notifications/elicitation/complete` is known by them.
    url_elicitations: std::collections::VecDeque<String>,
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
    /// The raw `requestState` of the multi round-trip result being
    /// handled, taken from its frame (see [`crate::features::mrtr`]).
    raw_request_state: Option<Box<serde_json::value::RawValue>>,
    /// The `subscriptions/listen` request, once opened (2026 era).
    subscription: Option<crate::features::subscriptions::Subscription>,
    /// The resources subscribed to, in either era.
    resource_subscriptions: crate::features::resource_subscriptions::ResourceSubscriptions,
    /// Which era the session speaks, or that it is finding out.
    era: Era,
    /// The `_meta` entries of every request, while the era is stateless
    /// (probing included).
    meta: Option<era::Meta>,
    /// A probe given up on (no answer in its wait): a late discovery
    /// result still makes the session stateless, until `initialize` is
    /// answered.
    late_probe: Option<u64>,
    /// The `initialize` sent right behind a stdio probe.
    early_init: EarlyInit,
    /// A line over `max_message_bytes` is being discarded and the request
    /// it answers was failed already: its end is only logged.
    oversized_acted_on: bool,
    /// Requests whose answers are dropped quietly: requests rho gave up on
    /// (cancelled or timed out), an `initialize` a late
    /// discovery result overtook, a probe the handshake overtook.
    stale: BTreeSet<u64>,
    /// Until when the tool list is fresh (2026 era, from the listing's
    /// `ttlMs`); a call after that re-lists first.
    tools_fresh_until: Option<Instant>,
    /// Calls refused for their headers (-32020), still pending under
    /// their old id: sent again once the tool list was read afresh.
    held_for_list: BTreeSet<u64>,
    /// The tool list rho holds was sent with `cacheScope: "private"` (or
    /// none): it belongs to one authorization context, and a new token
    /// makes it stale.
    tools_private: bool,
    /// The next poll of each task a call runs, by `(when, the call's
    /// request id)` (see `tasks.rs`).
    task_polls: BTreeSet<(Instant, u64)>,
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
    /// Started because the list went stale (`ttlMs`), not because the
    /// server said it changed: an unchanged list is not reported.
    stale: bool,
    /// The shortest freshness of its pages.
    ttl: Option<Duration>,
    /// A page of it was private (`cacheScope`).
    private: bool,
}

impl Session {
    /// Creates a session and queues its first request at once:
    /// `server/discover` when offered a stateless version, else
    /// `initialize`. The startup budget starts at `now`.
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
            catalog: Lister::new(MAX_TOOL_PAGES),
            catalog_fresh_until: BTreeMap::new(),
            call_tools: BTreeMap::new(),
            farewell: BTreeSet::new(),
            held_close: None,
            maybe_tasks: BTreeSet::new(),
            output_schemas: BTreeMap::new(),
            questions: BTreeMap::new(),
            next_question: 0,
            url_elicitations: std::collections::VecDeque::new(),
            junk: Tally::new(JUNK_LOGGED, LOG_WINDOW),
            server_logs: Tally::new(SERVER_LOGS_LOGGED, LOG_WINDOW),
            unread: None,
            reinitialized_during_startup: false,
            raw_request_state: None,
            subscription: None,
            resource_subscriptions: Default::default(),
            era: Era::Legacy,
            meta: None,
            late_probe: None,
            oversized_acted_on: false,
            early_init: EarlyInit::None,
            stale: BTreeSet::new(),
            tools_fresh_until: None,
            held_for_list: BTreeSet::new(),
            tools_private: true,
            task_polls: BTreeSet::new(),
        };
        session.timers.set(Timer::Startup, startup_deadline);
        match era::modern_version(&session.options.protocol_version) {
            Some(offered) => {
                session.phase = Phase::Probing;
                session.send_probe(now, offered, false);
            }
            None => {
                let offer = session.options.protocol_version.clone();
                session.send_initialize(&offer);
            }
        }
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
            Phase::Probing | Phase::Initializing | Phase::Discovering { .. } => {
                SessionState::Starting
            }
            Phase::Ready => SessionState::Ready,
            Phase::Closed => SessionState::Closed,
        }
    }

    /// What the server said at startup, once ready.
    pub fn server_ready(&self) -> Option<&ServerReady> {
        self.ready.as_ref()
    }

    /// The protocol version the server chose, once `initialize` was
    /// answered or discovery chose a stateless one (transports echo it on
    /// every later request).
    pub fn negotiated_version(&self) -> Option<&str> {
        self.negotiated_version.as_deref()
    }

    /// The version the next request carries on the wire (HTTP:
    /// `MCP-Protocol-Version`): the probe's while probing, else the
    /// negotiated one.
    pub fn wire_version(&self) -> Option<&str> {
        match &self.era {
            Era::Probing { offered, .. } => Some(offered),
            _ => self.negotiated_version(),
        }
    }

    /// Whether requests are stateless (2026 era, or probing for it): they
    /// carry `_meta`, there is no session, no ping, no `logging/setLevel`.
    pub fn is_stateless(&self) -> bool {
        self.meta.is_some()
    }

    /// The `server/discover` probe awaiting its answer, if any.
    pub fn probe_request(&self) -> Option<ClientRequestId> {
        self.pending
            .iter()
            .find(|(_, p)| matches!(p.purpose, Purpose::Discover))
            .map(|(&n, _)| ClientRequestId(n))
    }

    /// The instant handshake and discovery must finish by, while they run.
    pub fn startup_deadline(&self) -> Option<Instant> {
        self.timers.get(Timer::Startup)
    }

    /// The prompts, resources and templates as held now (listed at
    /// connect, re-listed after `list_changed`).
    pub fn catalog(&self) -> &Catalog {
        self.catalog.catalog()
    }

    /// Whether a request this session sent still awaits its answer.
    pub fn is_pending(&self, request: ClientRequestId) -> bool {
        self.pending.contains_key(&request.0)
    }

    /// Whether `request` is what rho told the server as it closed the
    /// session (a task's cancel, a 2025 unsubscribe): a transport lets it
    /// reach the server before it ends (its answer is not read), so that
    /// the task does not run on, nor the subscription live on, for no one.
    pub fn is_farewell(&self, request: ClientRequestId) -> bool {
        self.farewell.contains(&request.0)
    }

    /// Whether `request` still awaits its answer to the message it was
    /// sent as: pending, and not held back to go again (a call waiting for
    /// a fresh tool list after its headers were refused).
    pub fn awaits_answer(&self, request: ClientRequestId) -> bool {
        self.pending.contains_key(&request.0)
            && !self.held_for_list.contains(&request.0)
            && !self.is_held_for_input(request.0)
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
            if self.held_close.is_some() {
                self.decoder.push(bytes);
                while let Some(line) = self.decoder.next_line() {
                    if let Ok(line) = line {
                        let line = String::from_utf8_lossy(line).into_owned();
                        self.farewell_line(&line);
                    }
                    if self.held_close.is_none() {
                        break;
                    }
                }
            }
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
        // A line past the cap is acted on as soon as it passes it: a server
        // may never end it, and the request it answers would wait out its
        // whole budget for nothing.
        if !self.oversized_acted_on
            && !matches!(self.phase, Phase::Closed)
            && let Some((head, len)) = decoder.oversized()
        {
            self.oversized_acted_on = true;
            self.oversized_line(now, head, len);
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

    /// A JSON-RPC error that answers `request`, whatever id it carried: the
    /// transport tied it to the request itself (Streamable HTTP: the error
    /// body of a POST's own response, written with `null` or an id of the
    /// server's choosing because it refused the request unread). Ignored
    /// when `request` is no longer pending.
    pub fn handle_error_answer(
        &mut self,
        now: Instant,
        request: ClientRequestId,
        error: ErrorObject,
    ) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) || !self.pending.contains_key(&request.0) {
            return;
        }
        let id = RequestId::Number(i64::try_from(request.0).unwrap_or(i64::MAX));
        self.handle_reply(now, id, Err(error));
    }

    /// A parsed frame: one message, or a batch element by element.
    fn handle_incoming(&mut self, now: Instant, incoming: Incoming, frame: &[u8]) {
        match incoming {
            Incoming::Single(message) => {
                // A multi round-trip result's `requestState` is echoed as
                // the exact text the server wrote, so it is taken from the
                // frame (only for such a result: a second, borrowed parse).
                if let Message::Response { result, .. } = &message
                    && result.get("requestState").is_some()
                    && crate::features::mrtr::is_input_required(result)
                {
                    self.raw_request_state = crate::features::mrtr::raw_request_state(frame);
                }
                self.handle_message(now, message);
                self.raw_request_state = None;
            }
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
            if self.timers.is_due(Timer::Farewell, now) {
                self.end_held_close();
            }
            return;
        }
        if self.timers.is_due(Timer::Startup, now)
            && matches!(
                self.phase,
                Phase::Discovering {
                    tools_done: true,
                    ..
                }
            )
        {
            // The tools are in: listings still running do not fail the
            // server, they fail alone and the server becomes ready.
            self.catalog_startup_expired(now);
        }
        if self.timers.is_due(Timer::Startup, now) {
            let waiting_for = match self.phase {
                // On stdio an `initialize` is out beside the probe, and
                // neither was answered.
                Phase::Probing if matches!(self.early_init, EarlyInit::Pending(_)) => {
                    "waiting for the server/discover or initialize response"
                }
                Phase::Probing => "waiting for the server/discover response",
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
        self.polls_due(now);
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            let Some(pending) = self.pending.remove(&id) else {
                continue;
            };
            let server = self.options.server.clone();
            let mut pending = pending;
            match pending.purpose {
                Purpose::CallTool(call) => {
                    self.call_tools.remove(&call.0);
                    if pending.task.is_some() {
                        // A task is cancelled with `tasks/cancel`: the
                        // request a notification would name was answered.
                        self.abandon_task(id, &mut pending);
                    } else {
                        // The spec asks the sender to cancel a request it gave up on.
                        let params = json!({"requestId": id, "reason": "timed out"});
                        self.send_notification("notifications/cancelled", Some(&params));
                        self.abandoned(id);
                        self.maybe_task(id, &pending);
                    }
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
                Purpose::Catalog(kind) => {
                    let why = format!("no answer within {} s", pending.budget.as_secs_f64());
                    let outcome = self.catalog.fail(kind, why);
                    self.after_catalog_page(now, outcome);
                }
                Purpose::Feature(call) => {
                    let params = json!({"requestId": id, "reason": "timed out"});
                    self.send_notification("notifications/cancelled", Some(&params));
                    self.abandoned(id);
                    self.withdraw_questions_of(call);
                    self.events.push_back(Event::RequestCompleted {
                        call,
                        result: Err(CallError::Timeout {
                            server,
                            budget: pending.budget,
                        }),
                    });
                }
                // A lost poll is asked again (tasks.rs); a `tasks/*`
                // request is not cancelled with a notification either.
                Purpose::Task { call, op } => self.task_request_lost(now, call, op, id),
                Purpose::TaskCancel => {
                    self.abandoned(id);
                    tracing::info!(server = %server, "tasks/cancel got no answer in time");
                }
                Purpose::Farewell => self.abandoned(id),
                Purpose::Renew => {
                    self.abandoned(id);
                    let reason = format!(
                        "no answer to resources/subscribe within {} s",
                        pending.budget.as_secs_f64()
                    );
                    self.renewal_failed(id, reason);
                }
                Purpose::Ping => self.events.push_back(Event::PingFailed(format!(
                    "no answer to ping within {} s",
                    pending.budget.as_secs_f64()
                ))),
                Purpose::Reinitialize => {
                    return self.finish(CloseReason::Handshake(
                        "the server did not answer initialize after its session expired".into(),
                    ));
                }
                Purpose::Discover => {
                    // A legacy server may ignore a request before
                    // `initialize`; a late discovery result still counts.
                    self.late_probe = Some(id);
                    let waited = pending.budget.as_secs_f64();
                    self.fall_back(
                        LATEST_PROTOCOL_VERSION,
                        &format!("no answer to server/discover within {waited} s"),
                    );
                }
                // Startup requests share the startup deadline, handled
                // above; a listen request has none.
                Purpose::Initialize | Purpose::ListTools | Purpose::Listen => {}
                Purpose::Watch => self.watch_failed(now, id, |server| CallError::Timeout {
                    server,
                    budget: pending.budget,
                }),
            }
        }
    }

    /// The transport ended: the process exited or the stream closed.
    /// `detail` is what the executor knows (an exit status).
    pub fn handle_transport_closed(&mut self, now: Instant, detail: Option<String>) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            self.end_held_close();
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
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        let Some(pending) = self.pending.remove(&request.0) else {
            return;
        };
        self.deadlines.remove(&(pending.deadline, request.0));
        let server = self.options.server.clone();
        match pending.purpose {
            Purpose::Discover => self.fall_back(
                LATEST_PROTOCOL_VERSION,
                &format!("server/discover failed: {reason}"),
            ),
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
            Purpose::Listen => {
                self.listen_ended(now, crate::features::subscriptions::Ending::Broken, &reason)
            }
            Purpose::Watch => self.watch_failed(now, request.0, |server| CallError::Transport {
                server,
                reason: reason.clone(),
            }),
            Purpose::Catalog(kind) => {
                let outcome = self.catalog.fail(kind, reason);
                self.after_catalog_page(now, outcome);
            }
            Purpose::Feature(call) => {
                self.withdraw_questions_of(call);
                self.events.push_back(Event::RequestCompleted {
                    call,
                    result: Err(CallError::Transport { server, reason }),
                });
            }
            Purpose::SetLevel => {
                tracing::warn!(server = %server, "logging/setLevel failed: {reason}");
            }
            Purpose::Task { call, op } => {
                tracing::info!(server = %server, "a request about a call's task failed: {reason}");
                self.task_request_lost(now, call, op, request.0);
            }
            Purpose::TaskCancel => {
                tracing::info!(server = %server, "tasks/cancel failed: {reason}");
            }
            Purpose::Farewell => {
                tracing::debug!(server = %server, "a message at close failed: {reason}");
            }
            Purpose::Renew => self.renewal_failed(request.0, reason),
        }
    }

    /// The transport lost a stateless request's answer: its response stream
    /// broke before the answer came (2026 era, where streams are not
    /// resumed). The spec has the client re-issue it under a new id; rho
    /// does, once, for what is safe to run twice — discovery, listings,
    /// and calls to tools the server marks read-only or idempotent. Any
    /// other call may already have had its effect, so it fails with
    /// `reason` rather than run twice unasked.
    pub fn handle_stream_lost(&mut self, now: Instant, request: ClientRequestId, reason: String) {
        let now = self.clock.observe(now);
        if matches!(self.phase, Phase::Closed) {
            return;
        }
        let Some(pending) = self.pending.get(&request.0) else {
            return;
        };
        let safe = match pending.purpose {
            // A poll reads and changes nothing.
            Purpose::Discover
            | Purpose::ListTools
            | Purpose::Relist
            | Purpose::Task {
                op: tasks::TaskOp::Get,
                ..
            } => true,
            Purpose::CallTool(call) => self.called_tool_is_repeatable(call),
            _ => false,
        };
        let retried = pending.resend.as_ref().is_none_or(|r| r.stream_retried);
        if !safe || retried {
            let why = if retried || !matches!(pending.purpose, Purpose::CallTool(_)) {
                reason
            } else {
                format!(
                    "{reason}; the call may have run, and rho sends a call again only to a tool                      the server marks read-only or idempotent"
                )
            };
            return self.handle_request_failed(now, request, why);
        }
        let Some(mut pending) = self.pending.remove(&request.0) else {
            return;
        };
        self.deadlines.remove(&(pending.deadline, request.0));
        let Some(mut resend) = pending.resend.take().map(|r| *r) else {
            return;
        };
        resend.stream_retried = true;
        tracing::info!(server = %self.options.server, "the response stream broke before the answer; sending the request again under a new id");
        self.reissue(pending, resend);
    }

    /// The transport now sends another `Authorization` (a re-authorized
    /// token): a tool list the server marked private (`cacheScope`, 2026
    /// era) belonged to the old one, so the next call lists it again; a
    /// private prompt, resource or template list is dropped at once and
    /// listed again ([`Event::CatalogChanged`] says so).
    pub fn handle_authorization_changed(&mut self, now: Instant) {
        let now = self.clock.observe(now);
        if !self.is_stateless() {
            return;
        }
        if self.tools_private && self.tools_fresh_until.is_some() {
            self.tools_fresh_until = Some(now);
        }
        let (changed, pages) = self.catalog.credential_changed();
        for page in &pages {
            self.catalog_fresh_until.remove(&page.kind);
            self.request_catalog_page(now, page);
        }
        if changed && matches!(self.phase, Phase::Ready) {
            self.events.push_back(Event::CatalogChanged(Box::new(
                self.catalog.catalog().clone(),
            )));
        }
    }

    /// Whether the tool a call called says running it twice is harmless.
    fn called_tool_is_repeatable(&self, call: CallId) -> bool {
        let Some(tools) = self.ready.as_ref().map(|r| &r.tools) else {
            return false;
        };
        let tool = match self.call_tools.get(&call.0) {
            Some(CalledTool::Listed(at)) => tools.get(*at),
            Some(CalledTool::Named(name)) => tools.iter().find(|t| &t.name == name),
            None => None,
        };
        tool.is_some_and(|t| {
            t.annotations.read_only == Some(true) || t.annotations.idempotent == Some(true)
        })
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
        if self.is_stateless()
            || self
                .pending
                .values()
                .any(|p| matches!(p.purpose, Purpose::Reinitialize))
        {
            return false;
        }
        // The fresh session offers what the server chose before.
        let version = self
            .negotiated_version
            .clone()
            .unwrap_or_else(|| LATEST_PROTOCOL_VERSION.to_owned());
        let params = self.initialize_params(&version);
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
        self.call_tool_within(now, name, arguments, None)
    }

    /// Like [`Session::call_tool`], within `budget` in place of the
    /// server's `tool_timeout` when one is given (a host's per-call
    /// limit); progress restarts it as it restarts the configured one.
    pub fn call_tool_within(
        &mut self,
        now: Instant,
        name: &str,
        arguments: Value,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        self.call_tool_with(now, name, arguments, budget, TaskAugmentation::default())
    }

    /// Like [`Session::call_tool_within`], saying when a 2025-era call
    /// goes as a task ([`TaskAugmentation`]; the host's hook for a tool
    /// whose `taskSupport` is `optional`). A call that becomes a task, in
    /// either era, still ends with one [`Event::CallCompleted`] carrying
    /// the task's final result (see `session/tasks.rs`).
    pub fn call_tool_with(
        &mut self,
        now: Instant,
        name: &str,
        arguments: Value,
        budget: Option<Duration>,
        augmentation: TaskAugmentation,
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
        let budget = budget.unwrap_or(self.options.tool_timeout);
        if self.meta.is_some() {
            // Kept to be sent again: the arguments move, not copied.
            let params = era::Params::Call {
                name: name.to_owned(),
                arguments,
                progress_token: call.0,
            };
            let purpose = Purpose::CallTool(call);
            self.send_stateless(purpose, "tools/call", params, now + budget, budget);
        } else {
            // 2025-11-25 tasks: only a server that declared task-augmented
            // calls is asked, for a tool that allows it, as the spec says.
            let as_task = self.ready.as_ref().is_some_and(|ready| {
                let support = listed
                    .and_then(|at| ready.tools.get(at))
                    .map_or(TaskSupport::Forbidden, |t| t.task_support);
                ready.capabilities.tasks_tool_call && augmentation.wants(support)
            });
            let params = CallToolParams {
                name,
                arguments: &arguments,
                meta: RequestMeta {
                    progress_token: call.0,
                },
                task: as_task.then(|| json!({})),
            };
            let purpose = Purpose::CallTool(call);
            let n = self.send_request(purpose, "tools/call", Some(&params), now + budget, budget);
            if let Some(pending) = self.pending.get_mut(&n) {
                pending.augmented = as_task;
            }
        }
        // A list past its freshness (2026 `ttlMs`) is read again now that
        // it is needed; the call goes with the definition rho has.
        if self.tools_fresh_until.is_some_and(|until| now >= until) {
            self.tools_fresh_until = None;
            self.start_relist(now, true);
        }
        Ok(call)
    }

    /// Remembers a request rho gave up on and told the server so: servers
    /// may answer it anyway (the Python SDK 1.x does, the specification
    /// allows it), and that answer is expected, dropped at debug level
    /// rather than reported as an unknown one. The newest
    /// [`REMEMBERED_ABANDONED`] are remembered.
    pub(super) fn abandoned(&mut self, id: u64) {
        self.stale.insert(id);
        while self.stale.len() > REMEMBERED_ABANDONED {
            self.stale.pop_first();
        }
    }

    /// Abandons a call: the server is told with `notifications/cancelled`,
    /// and the call completes at once with [`CallError::Cancelled`]
    /// ([`CancelNotice::Told`]; a transport that cannot carry the
    /// notification says instead what it did, see
    /// [`crate::http::HttpTransport::cancel_call`]). A late answer is
    /// dropped. Cancelling a call that already ended does nothing.
    pub fn cancel_call(&mut self, now: Instant, call: CallId) {
        self.clock.observe(now);
        let Some(request) = self.request_of(call) else {
            self.watch_call_cancelled(call);
            return;
        };
        if self.is_held_for_task(request) {
            // A call that became a task is cancelled with `tasks/cancel`.
            let Some(mut pending) = self.pending.remove(&request) else {
                return;
            };
            self.deadlines.remove(&(pending.deadline, request));
            let notice = self.abandon_task(request, &mut pending);
            self.call_tools.remove(&call.0);
            self.withdraw_questions_of(call);
            self.events.push_back(Event::CallCompleted {
                call,
                result: Err(CallError::Cancelled {
                    server: self.options.server.clone(),
                    notice,
                }),
            });
            return;
        }
        // A request held for its input questions was answered already:
        // there is nothing on the server to cancel.
        let answered = self.is_held_for_input(request);
        let Some(pending) = self.pending.remove(&request) else {
            return;
        };
        let feature = matches!(pending.purpose, Purpose::Feature(_));
        self.call_tools.remove(&call.0);
        self.deadlines.remove(&(pending.deadline, request));
        if !answered {
            let params = json!({"requestId": request, "reason": "cancelled by the user"});
            self.send_notification("notifications/cancelled", Some(&params));
            self.abandoned(request);
            self.maybe_task(request, &pending);
        }
        let error = CallError::Cancelled {
            server: self.options.server.clone(),
            notice: if answered {
                CancelNotice::NothingRunning
            } else {
                CancelNotice::Told
            },
        };
        // A prompt, resource or completion request may wait for input as
        // a call may: either takes its questions with it.
        self.withdraw_questions_of(call);
        if feature {
            self.events.push_back(Event::RequestCompleted {
                call,
                result: Err(error),
            });
            return;
        }
        self.events.push_back(Event::CallCompleted {
            call,
            result: Err(error),
        });
    }

    /// Sends a prompt, resource or completion request
    /// (`prompts/get`, `resources/read`, `completion/complete`). The
    /// answer arrives as [`Event::RequestCompleted`] with the returned id,
    /// as sent (the feature modules read it); [`Session::cancel_call`]
    /// abandons it. A server that did not declare the capability the
    /// request needs is not asked.
    pub fn request(&mut self, now: Instant, request: &FeatureRequest) -> Result<CallId, ApiMisuse> {
        self.request_within(now, request, None)
    }

    /// Like [`Session::request`], within `budget` in place of the
    /// request's own (`tool_timeout`, or `request_timeout` for a
    /// completion) when one is given.
    pub fn request_within(
        &mut self,
        now: Instant,
        request: &FeatureRequest,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        let now = self.clock.observe(now);
        match self.phase {
            Phase::Ready => {}
            Phase::Closed => return Err(ApiMisuse::Closed(self.options.server.clone())),
            _ => return Err(ApiMisuse::NotReady(self.options.server.clone())),
        }
        let capabilities = self.ready.as_ref().map(|r| &r.capabilities);
        let capability = request.capability();
        let offered = capabilities.is_some_and(|c| request.offered_by(c));
        if !offered {
            return Err(ApiMisuse::NotOffered {
                server: self.options.server.clone(),
                capability,
            });
        }
        match request {
            FeatureRequest::SubscribeResource(params) => {
                return self.subscribe_resource(now, &params.uri, budget);
            }
            FeatureRequest::UnsubscribeResource(params) => {
                return Ok(self.unsubscribe_resource(now, &params.uri, budget));
            }
            _ => {}
        }
        // The lists this request draws on, read again if past their
        // freshness (2026 `ttlMs`); the request itself does not wait.
        let uses: &[CatalogKind] = match request {
            FeatureRequest::GetPrompt(_) => &[CatalogKind::Prompts],
            FeatureRequest::ReadResource(_) => &[CatalogKind::Resources, CatalogKind::Templates],
            _ => &[],
        };
        let stale: Vec<CatalogKind> = uses
            .iter()
            .copied()
            .filter(|kind| {
                self.catalog_fresh_until
                    .get(kind)
                    .is_some_and(|until| now >= *until)
            })
            .collect();
        for kind in &stale {
            self.catalog_fresh_until.remove(kind);
        }
        self.catalog_list_changed(now, &stale);
        let call = CallId(self.next_id);
        // Completions are keystroke-sized: the short budget.
        let budget = budget.unwrap_or(match request {
            FeatureRequest::Complete(_) => self.options.request_timeout,
            _ => self.options.tool_timeout,
        });
        self.send_request(
            Purpose::Feature(call),
            request.method(),
            Some(request),
            now + budget,
            budget,
        );
        Ok(call)
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
            return self
                .timers
                .get(Timer::Farewell)
                .map(|at| (Timer::Farewell, at));
        }
        let request = self.deadlines.first().map(|&(d, _)| d);
        self.timers.next([
            (Timer::Request, request),
            (Timer::TaskPoll, self.next_poll()),
        ])
    }
}

/// The shorter of two freshness times, either unknown.
fn shorter(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "call {}", self.0)
    }
}
