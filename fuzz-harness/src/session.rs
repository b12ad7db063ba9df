//! The `session` target: whole stdio sessions driven by a scripted server,
//! a host and a fake clock, all chosen by the fuzzer.
//!
//! After every input the harness drains the session (the drain rule) and
//! checks, besides "no panic":
//!
//! - every transmit is one line of valid JSON-RPC; requests have fresh,
//!   increasing ids (over HTTP only fresh: a parked request goes after a
//!   later-numbered `initialize`);
//!   `notifications/cancelled` names a request we sent;
//! - every response we send echoes the id of a server request we were fed,
//!   and never more often than that id was received;
//! - each drain yields fewer than [`QUEUE_BOUND`] transmits and events;
//! - every call `call_tool` accepted completes exactly once, and only
//!   accepted, unfinished calls get progress or questions;
//! - a withdrawn question was open; `Ready` comes at most once;
//! - after a step at time `now`, [`Session::poll_timeout`] is `None` or
//!   later than `now` (so `handle_timeout` at a deadline always moves the
//!   deadline on, and a driver never spins);
//! - the getters agree with what was drained (state, calls in flight,
//!   open questions);
//! - after [`Event::Closed`] nothing more comes out;
//! - in the stateless era (2026-07-28, [`Setup::stateless`]; probing
//!   included) every request carries its `_meta` protocol version and
//!   client capabilities, and none is `ping` or `logging/setLevel`, nor
//!   any notification `notifications/initialized`; the one `initialize`
//!   among them goes right behind the first stdio probe, with the probe's
//!   envelope (see `session/handshake.rs`).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use serde_json::{Map, Value, json};

use crate::encode::{Encode, tag};
use crate::script::{Leaf, Peer, ServerMessage, Text};
use rho_proto_core::config::LogLevel;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::completions::{CompletionRef, Query};
use rho_proto_core::features::elicitation::{Form, FormAnswer, UrlAnswer};
use rho_proto_core::features::prompts::GetPromptParams;
use rho_proto_core::features::resource_subscriptions::{MAX_PER_SERVER, SubscribeParams};
use rho_proto_core::features::resources::ReadResourceParams;
use rho_proto_core::fuzzing;
use rho_proto_core::session::{
    ApiMisuse, CallId, Event, Framing, QuestionId, SamplingAnswer, Session, SessionOptions,
    SessionState, Timer, Transmit, TransmitKind,
};
use rho_proto_core::wire::framing::LineDecoder;
use rho_proto_core::wire::jsonrpc::{ClientRequestId, Incoming, Message, RequestId};

/// A drain that yields this many transmits or events is a runaway queue.
pub const QUEUE_BOUND: usize = 10_000;

/// One fuzzed session: options, then what happens, in order.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct SessionInput {
    /// Session options that change behaviour.
    pub setup: Setup,
    /// The script.
    pub actions: Vec<Action>,
}

/// The options a session is created with, besides the fixed ones (10 s
/// startup, 5 s calls, 3 s small requests, elicitation and sampling on).
#[derive(Arbitrary, Clone, Debug, Default, PartialEq, Eq)]
pub struct Setup {
    /// Send `logging/setLevel` when the server declares logging.
    pub log_level: bool,
    /// Declare roots (a workspace) and answer `roots/list`.
    pub roots: bool,
    /// Ping every 20 s while ready.
    pub ping: bool,
    /// Progress extends a call's budget, up to 30 s.
    pub progress_extends: bool,
    /// A 256-byte line cap rather than 64 KiB.
    pub short_lines: bool,
    /// Offer 2026-07-28 (probe with `server/discover`, fall back to the
    /// handshake) rather than go straight to the 2025-11-25 handshake.
    pub stateless: bool,
}

/// One step of a script.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The server writes these messages, one per line or as one batch
    /// line, delivered in pieces of `chunks[0]`, `chunks[1]`, ... bytes and
    /// then the rest.
    Server {
        /// The messages.
        messages: Vec<ServerMessage>,
        /// As one JSON-RPC batch.
        batch: bool,
        /// Piece lengths.
        chunks: Vec<u8>,
    },
    /// The server writes these bytes.
    Garbage(Vec<u8>),
    /// Time passes; then `handle_timeout`.
    Wait(Wait),
    /// The host calls a tool.
    CallTool {
        /// The tool name.
        tool: Text,
        /// The arguments.
        arguments: Arguments,
    },
    /// The host cancels a call.
    CancelCall(Ref),
    /// The host answers an elicitation question.
    AnswerElicitation {
        /// Which question.
        question: Ref,
        /// The answer.
        answer: ElicitAnswer,
    },
    /// The host answers a sampling question.
    AnswerSampling {
        /// Which question.
        question: Ref,
        /// The answer.
        answer: SamplingReply,
    },
    /// The transport lost one request (`handle_request_failed`).
    RequestFailed(crate::script::Reply),
    /// The host closes the session.
    Close,
    /// The server's output ended.
    TransportClosed,
    /// The transport failed.
    TransportFailed,
    /// The host sends a prompt, resource or completion request.
    Request(FeatureTemplate),
}

/// A prompt, resource or completion request the host makes.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum FeatureTemplate {
    /// `prompts/get`.
    GetPrompt {
        /// The prompt's name.
        name: Text,
        /// Its arguments.
        arguments: Vec<(Text, Text)>,
    },
    /// `resources/read`.
    ReadResource {
        /// The URI.
        uri: Text,
    },
    /// `completion/complete`.
    Complete {
        /// A prompt's argument (else a template's variable).
        prompt: bool,
        /// The prompt's name or the URI template.
        name: Text,
        /// The argument.
        argument: Text,
        /// What has been typed.
        value: Text,
        /// The other arguments.
        context: Vec<(Text, Text)>,
    },
    /// A subscription to a resource.
    SubscribeResource {
        /// The URI.
        uri: Text,
    },
    /// The end of one.
    UnsubscribeResource {
        /// The URI.
        uri: Text,
    },
}

impl FeatureTemplate {
    /// The request.
    pub fn request(&self) -> FeatureRequest {
        let pairs = |pairs: &[(Text, Text)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.text(), v.text())).collect()
        };
        match self {
            FeatureTemplate::GetPrompt { name, arguments } => {
                FeatureRequest::GetPrompt(GetPromptParams {
                    name: name.text(),
                    arguments: pairs(arguments),
                })
            }
            FeatureTemplate::ReadResource { uri } => {
                FeatureRequest::ReadResource(ReadResourceParams { uri: uri.text() })
            }
            FeatureTemplate::Complete {
                prompt,
                name,
                argument,
                value,
                context,
            } => {
                let reference = if *prompt {
                    CompletionRef::Prompt { name: name.text() }
                } else {
                    CompletionRef::Resource { uri: name.text() }
                };
                FeatureRequest::Complete(
                    Query {
                        reference,
                        argument: argument.text(),
                        value: value.text(),
                        context: pairs(context),
                    }
                    .params(),
                )
            }
            FeatureTemplate::SubscribeResource { uri } => {
                FeatureRequest::SubscribeResource(SubscribeParams { uri: uri.text() })
            }
            FeatureTemplate::UnsubscribeResource { uri } => {
                FeatureRequest::UnsubscribeResource(SubscribeParams { uri: uri.text() })
            }
        }
    }
}

/// How much time passes.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// This many milliseconds.
    Millis(u16),
    /// This many seconds.
    Seconds(u8),
    /// Up to the next deadline (none: no time passes).
    NextDeadline,
    /// To one millisecond before the next deadline.
    JustBeforeDeadline,
}

/// A call or question the host names.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Ref {
    /// The `n % count`-th one the session handed out (0 before any).
    Known(u8),
    /// This raw id.
    Raw(u64),
}

/// `tools/call` arguments.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Arguments {
    /// `null`, which means `{}`.
    Null,
    /// An object.
    Object(Vec<(Text, Leaf)>),
    /// Something that is not an object: API misuse.
    NotObject(Leaf),
}

impl Arguments {
    /// The value.
    pub fn value(&self) -> Value {
        match self {
            Arguments::Null => Value::Null,
            Arguments::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.text(), v.value()))
                    .collect::<Map<_, _>>(),
            ),
            Arguments::NotObject(leaf) => match leaf.value() {
                // `null` is a valid argument; make it a misuse anyway.
                Value::Null => json!(0),
                Value::Object(_) => json!([]),
                other => other,
            },
        }
    }
}

/// The host's answer to an elicitation.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum ElicitAnswer {
    /// Submitted: (field index mod count, text) pairs; a form without
    /// fields gets the field `nope`.
    Submit(Vec<(u8, Text)>),
    /// The form's defaults, submitted.
    Defaults,
    /// Dismissed.
    Dismissed,
    /// Could not ask.
    CouldNotAsk,
    /// The person declined.
    Declined,
}

impl ElicitAnswer {
    /// The answer, for `form` (when the question was a form).
    pub fn answer(&self, form: Option<&Form>) -> FormAnswer {
        match self {
            ElicitAnswer::Submit(pairs) => {
                let mut answers: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for (n, text) in pairs {
                    let name = match form.map(|f| f.fields.as_slice()) {
                        Some(fields) if !fields.is_empty() => {
                            fields[usize::from(*n) % fields.len()].name.clone()
                        }
                        _ => "nope".to_owned(),
                    };
                    answers.entry(name).or_default().push(text.text());
                }
                FormAnswer::Submitted(answers)
            }
            ElicitAnswer::Defaults => {
                FormAnswer::Submitted(form.map(Form::default_answers).unwrap_or_default())
            }
            ElicitAnswer::Dismissed => FormAnswer::Dismissed,
            ElicitAnswer::CouldNotAsk => FormAnswer::CouldNotAsk,
            ElicitAnswer::Declined => FormAnswer::Declined,
        }
    }
}

impl ElicitAnswer {
    /// The same answer to a URL question: a submitted form is the person
    /// opening the URL.
    pub fn url_answer(&self) -> UrlAnswer {
        match self {
            ElicitAnswer::Submit(_) | ElicitAnswer::Defaults => UrlAnswer::Opened,
            ElicitAnswer::Dismissed => UrlAnswer::Dismissed,
            ElicitAnswer::CouldNotAsk => UrlAnswer::CouldNotAsk,
            ElicitAnswer::Declined => UrlAnswer::Declined,
        }
    }
}

/// The host's answer to a sampling question.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum SamplingReply {
    /// The model answered this.
    Completed(Text),
    /// The person refused.
    Refused,
    /// The model failed.
    Failed(Text),
}

impl SamplingReply {
    /// The answer.
    pub fn answer(&self) -> SamplingAnswer {
        match self {
            SamplingReply::Completed(text) => SamplingAnswer::Completed {
                text: text.text(),
                model: "fuzz-model".into(),
            },
            SamplingReply::Refused => SamplingAnswer::Refused,
            SamplingReply::Failed(text) => SamplingAnswer::Failed(text.text()),
        }
    }
}

/// The session options for `setup`, framed as `framing`.
pub fn options(setup: &Setup, framing: Framing) -> SessionOptions {
    let mut o = SessionOptions::stdio("fuzz");
    o.framing = framing;
    o.startup_timeout = Duration::from_secs(10);
    o.tool_timeout = Duration::from_secs(5);
    o.request_timeout = Duration::from_secs(3);
    o.elicitation = true;
    // URL mode too: the model opens what it is asked to (its answers are
    // the fuzz input's). Declared always, so the corpus keeps its layout;
    // the undeclared path is pinned by the core's own tests.
    o.elicitation_url = true;
    o.sampling = true;
    o.log_level = setup.log_level.then_some(LogLevel::Info);
    o.workspace_root = setup.roots.then(|| "file:///work".to_owned());
    o.ping_interval = setup.ping.then_some(Duration::from_secs(20));
    o.progress_extends_up_to = setup.progress_extends.then_some(Duration::from_secs(30));
    o.max_line = if setup.short_lines { 256 } else { 64 * 1024 };
    if !setup.stateless {
        o.protocol_version = rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION.into();
    }
    o
}

/// `session`: decodes a [`SessionInput`] and runs it from `origin`.
pub fn check_session(data: &[u8], origin: Instant) {
    if let Some(input) = crate::decode::<SessionInput>(data) {
        run_session(&input, origin);
    }
}

/// Runs one script against a fresh session, checking every invariant in
/// the module docs after every step, and closes it at the end.
pub fn run_session(input: &SessionInput, origin: Instant) {
    run(input, origin, None);
}

/// What happens in one script, line by line (what the server said, what
/// the client sent, what the host was told), for reading a crash or a seed;
/// the last line is the panic, if an invariant broke.
pub fn transcript(input: &SessionInput, origin: Instant) -> Vec<String> {
    record(|log| run(input, origin, Some(log)))
}

/// A transcript being written.
pub(crate) type Log = Rc<RefCell<Vec<String>>>;

/// Runs `f` with a fresh log and returns the log, ending with the panic
/// message if `f` panicked.
pub(crate) fn record(f: impl FnOnce(Log)) -> Vec<String> {
    let log = Log::default();
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| f(Rc::clone(&log))));
    let mut lines = log.take();
    if let Err(payload) = outcome {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        lines.push(format!("PANIC: {message}"));
    }
    lines
}

fn run(input: &SessionInput, origin: Instant, log: Option<Log>) {
    let mut h = Harness::new(&input.setup, origin, log);
    for action in &input.actions {
        h.host.note(|| format!("-- {action:?}"));
        h.act(action);
    }
    h.host.note(|| "-- close".to_owned());
    h.host.closing = true;
    h.session.close(h.now);
    h.drain();
    h.check_state();
    if !h.host.closed {
        // Waiting for farewells' answers: the wait runs out.
        let due = h
            .session
            .poll_timeout()
            .expect("a held close has its bound");
        assert!(
            due <= h.now + rho_proto_core::session::FAREWELL_WAIT,
            "a held close waits at most FAREWELL_WAIT"
        );
        h.now = due;
        h.session.handle_timeout(h.now);
        h.drain();
        h.check_state();
    }
    assert!(h.host.closed, "close() produced no Closed event");
    assert_eq!(h.session.poll_timeout(), None);
}

/// What the session looked like at the end of a drain: the era and what
/// the server was found to offer. The checks of a message compare the
/// view before the step that sent it with the view after.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct View {
    /// Requests carry the stateless era's `_meta` (probing included).
    pub(crate) stateless: bool,
    /// A version was negotiated: `initialize` answered, or discovery
    /// chose a stateless one.
    pub(crate) negotiated: bool,
    /// The session was ready once.
    pub(crate) ready: bool,
    /// The catalog lists the server offers: prompts, resources, templates.
    pub(crate) offers: [bool; 3],
    /// Capabilities a `subscriptions/listen` can ask about (tools
    /// `listChanged`, prompts or resources), once ready.
    pub(crate) listenable: bool,
    /// A `server/discover` probe awaits its answer (neither answered nor
    /// given up on).
    pub(crate) probe_pending: bool,
}

impl View {
    /// The view of `session` now.
    pub(crate) fn of(session: &Session) -> Self {
        let catalog = session.catalog();
        let caps = session.server_ready().map(|r| &r.capabilities);
        Self {
            stateless: session.is_stateless(),
            negotiated: session.negotiated_version().is_some(),
            ready: session.server_ready().is_some(),
            offers: [
                catalog.prompts.offered,
                catalog.resources.offered,
                catalog.templates.offered,
            ],
            listenable: caps.is_some_and(|c| c.tools_list_changed || c.prompts || c.resources),
            probe_pending: session.probe_request().is_some(),
        }
    }

    /// The 2026 era proper: stateless with a version chosen (not probing).
    fn modern(&self) -> bool {
        self.stateless && self.negotiated
    }

    /// Sending `server/discover` and waiting for its answer.
    fn probing(&self) -> bool {
        self.stateless && !self.negotiated
    }
}

/// The `_meta` keys every stateless-era request carries.
const ERA_META: [&str; 3] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
];

/// Params without what the stateless era and multi round-trip retries add
/// (`_meta` but a progress token, `inputResponses`, `requestState`): what
/// every send of one request has in common.
fn core_params(params: Option<&Value>) -> Value {
    let mut params = params.cloned().unwrap_or(Value::Null);
    if let Value::Object(map) = &mut params {
        map.remove("inputResponses");
        map.remove("requestState");
        if let Some(Value::Object(meta)) = map.get_mut("_meta") {
            for key in ERA_META {
                meta.remove(key);
            }
            meta.remove("io.modelcontextprotocol/logLevel");
        }
        if map
            .get("_meta")
            .is_some_and(|m| m.as_object().is_some_and(Map::is_empty))
        {
            map.remove("_meta");
        }
        if map.is_empty() {
            params = Value::Null;
        }
    }
    params
}

/// The client side's bookkeeping, shared with the `http_session` target:
/// what was sent and received, and what the host was told.
#[derive(Debug, Default)]
pub(crate) struct Host {
    /// The scripted server's memory of our requests.
    pub(crate) peer: Peer,
    /// Ids of server requests received, with how often.
    pub(crate) server_requests: BTreeMap<RequestId, usize>,
    /// Ids we answered, with how often.
    pub(crate) responses: BTreeMap<RequestId, usize>,
    /// Task ids the server handed out (a `tools/call` answered with a
    /// task handle).
    pub(crate) tasks: BTreeSet<String>,
    /// Every question asked, with its form.
    pub(crate) questions: Vec<(QuestionId, Option<Form>)>,
    /// The questions that are URL requests: an elicitation answer to one
    /// goes in as its [`ElicitAnswer::url_answer`].
    pub(crate) urls: BTreeSet<QuestionId>,
    /// Questions asked and neither answered nor withdrawn.
    pub(crate) open: BTreeSet<QuestionId>,
    /// The call or request each question was asked for.
    pub(crate) asked_for: BTreeMap<QuestionId, CallId>,
    /// Whether keep-alive pings are on.
    pub(crate) pings: bool,
    /// Whether `logging/setLevel` is configured.
    pub(crate) log_level: bool,
    /// Whether the transport is Streamable HTTP (a session the server
    /// forgot is initialized afresh, even once ready).
    pub(crate) http: bool,
    /// The session as the previous drain left it.
    pub(crate) before: View,
    /// The session as this drain finds it (set by the harness before each
    /// drain).
    pub(crate) view: View,
    /// The first-sent params (see [`core_params`]) of every tool call and
    /// feature request, by call: a retry must send the same.
    pub(crate) params_of: BTreeMap<CallId, Value>,
    /// How many `initialize` requests and `subscriptions/listen` requests
    /// were sent.
    pub(crate) initializes: usize,
    pub(crate) listens: usize,
    /// `subscriptions/listen` requests carrying resource subscriptions.
    pub(crate) resource_listens: usize,
    /// Every URI the host asked to subscribe to.
    pub(crate) subscribed: BTreeSet<String>,
    /// A fresh `initialize` replaced an expired session once ready.
    pub(crate) reinitialized: bool,
    pub(crate) ready: bool,
    /// The host asked the session to close: rho may then send requests of
    /// its own (a 2025 unsubscribe for each subscription held).
    pub(crate) closing: bool,
    pub(crate) closed: bool,
    /// A transcript, when asked for ([`transcript`]); shared, so that it
    /// survives a panic.
    pub(crate) log: Option<Log>,
}

impl Host {
    /// Adds a line to the transcript, if one is kept.
    pub(crate) fn note(&mut self, line: impl FnOnce() -> String) {
        if let Some(log) = &self.log {
            log.borrow_mut().push(line());
        }
    }

    /// Starts checking a drain of a session that now looks like `view`.
    pub(crate) fn look(&mut self, view: View) {
        self.before = self.view;
        self.view = view;
    }

    /// Whether this step began and ended stateless: every request sent in
    /// it was sent in the stateless era (the era changes at most once a
    /// step, so a step that changed it can send either kind).
    fn stateless_throughout(&self) -> bool {
        self.before.stateless && self.view.stateless
    }

    fn legacy_throughout(&self) -> bool {
        !self.before.stateless && !self.view.stateless
    }

    /// Notes the server requests in one frame the client was fed.
    pub(crate) fn received(&mut self, frame: &[u8]) {
        self.note(|| format!("server: {}", String::from_utf8_lossy(frame)));
        let mut note = |message: &Message| match message {
            Message::Request { id, .. } => {
                *self.server_requests.entry(id.clone()).or_default() += 1;
            }
            // A task handle (2026 `resultType: "task"`, 2025 `task`).
            Message::Response { result, .. } => {
                let task = result.get("task").unwrap_or(result);
                if let Some(id) = task.get("taskId").and_then(Value::as_str) {
                    self.tasks.insert(id.to_owned());
                }
            }
            _ => {}
        };
        match Incoming::parse(frame) {
            Ok(Incoming::Single(message)) => note(&message),
            Ok(Incoming::Batch(items)) => items.iter().flatten().for_each(note),
            Err(_) => {}
        }
    }

    /// Checks one message the client sent (already unframed), and its
    /// kind when the transport reports one.
    pub(crate) fn sent(&mut self, bytes: &[u8], kind: Option<TransmitKind>) {
        self.note(|| format!("client: {}", String::from_utf8_lossy(bytes).trim_end()));
        let message = match Incoming::parse(bytes) {
            Ok(Incoming::Single(message)) => message,
            other => panic!(
                "we sent {:?}, which is not one JSON-RPC message: {other:?}",
                String::from_utf8_lossy(bytes)
            ),
        };
        match message {
            Message::Request { id, method, params } => {
                let (Some(request), RequestId::Number(n)) = (ClientRequestId::from_wire(&id), &id)
                else {
                    panic!("request id {id} is not ours");
                };
                // A client id is a non-negative wire number.
                let n = n.unsigned_abs();
                // Fresh ids, and on stdio in increasing order. Over HTTP a
                // request the transport parked (while the server stream's
                // GET is awaited, or a fresh `initialize` replaces an
                // expired session) goes after that later-numbered
                // `initialize`: legal, as ids need only be unique (the
                // parked one was never sent, in any session).
                assert!(
                    self.peer.sent.iter().all(|&(m, _)| m != n),
                    "request id {n} sent twice"
                );
                if let (false, Some(&(last, _))) = (self.http, self.peer.sent.last()) {
                    assert!(n > last, "request id {n} after {last}");
                }
                let want = if method == "initialize" {
                    TransmitKind::Initialize(request)
                } else {
                    TransmitKind::Request(request)
                };
                assert!(kind.is_none_or(|k| k == want), "{method} sent as {kind:?}");
                self.request(n, &method, params.as_ref());
                self.peer.sent.push((n, method));
            }
            Message::Notification { method, params } => {
                assert!(
                    params
                        .as_ref()
                        .and_then(|p| p.get("_meta"))
                        .is_none_or(|m| ERA_META.iter().all(|k| m.get(k).is_none())),
                    "{method} carries the era's _meta: {params:?}"
                );
                match method.as_str() {
                    "notifications/initialized" => {
                        assert!(kind.is_none_or(|k| k == TransmitKind::Initialized));
                        assert!(
                            !self.stateless_throughout(),
                            "notifications/initialized in the stateless era"
                        );
                        assert!(self.initializes > 0, "initialized before initialize");
                    }
                    "notifications/cancelled" => {
                        assert!(kind.is_none_or(|k| k == TransmitKind::Notification));
                        let id = params
                            .as_ref()
                            .and_then(|p| p.get("requestId"))
                            .and_then(Value::as_u64);
                        assert!(
                            id.is_some_and(|id| self.peer.sent.iter().any(|(n, _)| *n == id)),
                            "cancelled a request we never sent: {params:?}"
                        );
                    }
                    // rho declares roots without `listChanged`, and sends
                    // no other notification.
                    other => panic!("unexpected notification {other}: {params:?}"),
                }
            }
            Message::Response { id, .. }
            | Message::Error {
                id: Some(id),
                error: _,
            } => {
                assert!(kind.is_none_or(|k| k == TransmitKind::Response));
                let answered = self.responses.entry(id.clone()).or_default();
                *answered += 1;
                let received = self.server_requests.get(&id).copied().unwrap_or(0);
                assert!(
                    *answered <= received,
                    "answer #{answered} to server request id {id}, received {received} times"
                );
            }
            Message::Error { id: None, .. } => panic!("we sent an error without an id"),
        }
    }

    /// Checks one request `n` the client sent: the method is one rho sends,
    /// at a moment it may, in the era's form.
    fn request(&mut self, n: u64, method: &str, params: Option<&Value>) {
        let meta = params.and_then(|p| p.get("_meta"));
        // The era's form: every stateless request carries all of its
        // `_meta`, a legacy one none of it.
        let stateless_form = meta.is_some_and(|m| ERA_META.iter().any(|k| m.get(k).is_some()));
        if stateless_form {
            for key in ERA_META {
                assert!(
                    meta.and_then(|m| m.get(key)).is_some(),
                    "{method} without _meta {key}: {params:?}"
                );
            }
        }
        let retried = params
            .is_some_and(|p| p.get("inputResponses").is_some() || p.get("requestState").is_some());
        match method {
            // The probe, and its retries (another version after -32022, a
            // broken HTTP stream): while starting, in the stateless form.
            "server/discover" => {
                assert!(stateless_form, "a probe outside the stateless era");
                assert!(!self.ready, "server/discover once ready");
                assert!(
                    self.before.probing() || self.view.probing(),
                    "server/discover while not probing: {:?} -> {:?}",
                    self.before,
                    self.view
                );
            }
            // The handshake: once the session did not start stateless, or
            // as the fall back from a probe, never beside it: only once the
            // probe was answered with something that means "handshake" or
            // its wait ran out (so no probe is pending after the step that
            // sent it); once ready only over HTTP, for a session the
            // server forgot.
            // The early handshake (stdio): right behind the first probe,
            // carrying the probe's envelope, offering a 2025 version.
            "initialize" if stateless_form => {
                assert!(!self.http, "an initialize with the era's _meta over HTTP");
                let probes = self
                    .peer
                    .sent
                    .iter()
                    .filter(|(_, m)| m == "server/discover")
                    .count();
                assert!(
                    self.initializes == 0
                        && probes == 1
                        && self
                            .peer
                            .sent
                            .last()
                            .is_some_and(|(_, m)| m == "server/discover"),
                    "initialize in the stateless form, not right behind the first probe"
                );
                assert!(
                    params
                        .and_then(|p| p.get("protocolVersion"))
                        .and_then(Value::as_str)
                        .is_some_and(|v| {
                            rho_proto_core::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS.contains(&v)
                        }),
                    "an early initialize offering no 2025 version: {params:?}"
                );
                self.initializes += 1;
            }
            "initialize" => {
                assert!(
                    !self.view.probe_pending,
                    "initialize while the server/discover probe is pending"
                );
                assert!(
                    !(self.before.modern() && self.view.modern()),
                    "initialize in the stateless era"
                );
                assert!(
                    !self.ready || (self.http && !self.view.stateless),
                    "initialize once ready"
                );
                self.initializes += 1;
                if self.ready {
                    // A fresh session for an expired one.
                    self.reinitialized = true;
                }
            }
            // Keep-alive pings, once ready, never in the stateless era.
            "ping" => {
                assert!(self.pings, "ping without keep-alive pings");
                assert!(self.ready, "ping before ready");
                assert!(
                    !stateless_form && self.legacy_throughout(),
                    "ping in the stateless era"
                );
            }
            // Right after the handshake, when configured.
            "logging/setLevel" => {
                assert!(self.log_level, "logging/setLevel without a log level");
                assert!(self.initializes > 0, "logging/setLevel before initialize");
                assert!(
                    !stateless_form && !self.view.stateless,
                    "logging/setLevel in the stateless era"
                );
            }
            // Listings: once the server is known (and for a catalog list,
            // offers it).
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
                assert!(
                    self.view.negotiated,
                    "{method} before the handshake or discovery was answered"
                );
                let offered = match method {
                    "prompts/list" => self.view.offers[0],
                    "resources/list" => self.view.offers[1],
                    "resources/templates/list" => self.view.offers[2],
                    _ => true,
                };
                assert!(offered, "{method} of a list the server does not offer");
                assert!(!retried, "{method} with multi round-trip inputs");
            }
            // A call or a feature request: first sent (under its call's
            // id) when the host asks, once ready; sent again under a new
            // id only in the stateless era (another version, a broken
            // stream, refused headers, a multi round-trip round), with the
            // same params.
            "tools/call" | "prompts/get" | "resources/read" | "completion/complete" => {
                let call = if method == "tools/call" {
                    let token = meta.and_then(|m| m.get("progressToken"));
                    let Some(token) = token.and_then(Value::as_u64) else {
                        panic!("tools/call without a progress token: {params:?}");
                    };
                    let called = self.peer.calls.iter().find(|c| c.wire_id() == token);
                    let Some(&call) = called else {
                        panic!("{} was never called", fuzzing::call_id(token));
                    };
                    call
                } else if let Some(&(call, _)) =
                    self.peer.features.iter().find(|(c, _)| c.wire_id() == n)
                {
                    call
                } else {
                    // A feature request's retry names no call (it has no
                    // progress token): it is one of the requests the host
                    // made with these params, and one still in flight when
                    // there is one. Two requests may have the same params
                    // (the host asked twice), and the later one may have
                    // ended (a malformed round) while the earlier one
                    // waits for its answers: its retry is legal, and on
                    // the wire the same as the other's would be.
                    let core = core_params(params);
                    let same = |(c, m): &&(CallId, &str)| {
                        *m == method && self.params_of.get(c) == Some(&core)
                    };
                    let mut candidates = self.peer.features.iter().rev().filter(same);
                    let Some(&(latest, _)) = candidates.clone().next() else {
                        panic!("{method} {n} is no request the host made: {params:?}");
                    };
                    candidates
                        .find(|(c, _)| !self.peer.completed.contains(c))
                        .map_or(latest, |&(c, _)| c)
                };
                assert!(
                    !self.peer.completed.contains(&call),
                    "{method} {n} for {call}, which completed"
                );
                let core = core_params(params);
                if call.wire_id() == n {
                    assert!(self.ready, "{method} before ready");
                    assert!(!retried, "{method} sent first with multi round-trip inputs");
                    self.params_of.insert(call, core);
                } else {
                    assert!(
                        stateless_form,
                        "{method} {n} sent again for {call} outside the stateless era"
                    );
                    assert_eq!(
                        self.params_of.get(&call),
                        Some(&core),
                        "{method} {n} sent again for {call} with other params"
                    );
                }
                self.peer.call_of.insert(n, call);
            }
            // 2025 era: sent once, under the id of the host's request, once
            // ready; or, when the host closes the session, an unsubscribe of
            // rho's own for a URI the host subscribed to; or, once a fresh
            // session replaced an expired one, a subscribe of rho's own for
            // such a URI.
            "resources/subscribe" | "resources/unsubscribe" => {
                let asked = self
                    .peer
                    .features
                    .iter()
                    .any(|(c, m)| c.wire_id() == n && *m == method);
                let subscribed = params
                    .and_then(|p| p.get("uri"))
                    .and_then(Value::as_str)
                    .is_some_and(|uri| self.subscribed.contains(uri));
                let farewell = method == "resources/unsubscribe" && self.closing && subscribed;
                let renewal = method == "resources/subscribe" && self.reinitialized && subscribed;
                assert!(
                    asked || farewell || renewal,
                    "{method} {n} is no request the host made: {params:?}"
                );
                assert!(self.ready, "{method} before ready");
                assert!(!stateless_form, "{method} in the stateless era");
                assert!(!retried, "{method} with multi round-trip inputs");
            }
            // 2026 era: a listen request for resource subscriptions, sent for
            // a subscribe or an unsubscribe of the host's (each may go once
            // more for another version), or re-issued after its stream ended
            // (at most `MAX_REISSUES` times); never more URIs than the bound.
            "subscriptions/listen"
                if params
                    .and_then(|p| p.get("notifications"))
                    .is_some_and(|n| n.get("resourceSubscriptions").is_some()) =>
            {
                assert!(
                    stateless_form && self.view.modern(),
                    "a resource subscriptions/listen outside the stateless era"
                );
                assert!(self.view.ready, "subscriptions/listen before ready");
                let uris = params
                    .and_then(|p| p["notifications"]["resourceSubscriptions"].as_array())
                    .map_or(0, Vec::len);
                assert!(
                    (1..=MAX_PER_SERVER).contains(&uris),
                    "resourceSubscriptions with {uris} URIs"
                );
                self.resource_listens += 1;
                let asks = self
                    .peer
                    .features
                    .iter()
                    .filter(|(_, m)| m.starts_with("resources/") && m.ends_with("subscribe"))
                    .count();
                let most = 2
                    * (asks
                        + rho_proto_core::features::resource_subscriptions::MAX_REISSUES as usize);
                assert!(
                    self.resource_listens <= most,
                    "resource subscriptions/listen #{} after {asks} asks",
                    self.resource_listens
                );
            }
            // 2026 era, once ready, for the list changes the server can
            // report; re-issued at most `MAX_REISSUES` times after it ended.
            "subscriptions/listen" => {
                assert!(
                    stateless_form && self.view.modern(),
                    "subscriptions/listen outside the stateless era"
                );
                assert!(self.view.ready, "subscriptions/listen before ready");
                assert!(
                    self.view.listenable,
                    "subscriptions/listen for a server that reports no list changes"
                );
                // Each one may be sent once more for another version
                // (-32022).
                self.listens += 1;
                let most = 2 * (1 + rho_proto_core::features::subscriptions::MAX_REISSUES as usize);
                assert!(
                    self.listens <= most,
                    "subscriptions/listen #{}",
                    self.listens
                );
            }
            // A call's task (both eras): only about a task the server
            // handed out, `tasks/update` only in the 2026 extension's
            // form, `tasks/result` only in the 2025 core tasks'.
            "tasks/get" | "tasks/cancel" | "tasks/update" | "tasks/result" => {
                let task = params.and_then(|p| p.get("taskId")).and_then(Value::as_str);
                assert!(
                    task.is_some_and(|t| self.tasks.contains(t)),
                    "{method} for a task the server never handed out: {params:?}"
                );
                assert!(self.ready, "{method} before ready");
                assert!(!retried, "{method} with multi round-trip inputs");
                if method == "tasks/update" {
                    assert!(stateless_form, "tasks/update outside the 2026 era");
                    assert!(
                        params
                            .and_then(|p| p.get("inputResponses"))
                            .is_some_and(Value::is_object),
                        "tasks/update without answers: {params:?}"
                    );
                }
                if method == "tasks/result" {
                    assert!(!stateless_form, "tasks/result in the 2026 era");
                }
            }
            other => panic!("unexpected request {other}: {params:?}"),
        }
        if method != "initialize" && method != "server/discover" {
            if self.stateless_throughout() {
                assert!(
                    stateless_form,
                    "{method} without the era's _meta: {params:?}"
                );
            }
            if self.legacy_throughout() {
                assert!(!stateless_form, "{method} with the era's _meta: {params:?}");
            }
        }
    }

    /// Checks one event the host received.
    pub(crate) fn event(&mut self, event: &Event) {
        self.note(|| format!("event: {event:?}"));
        assert!(!self.closed, "{event:?} after Closed");
        match event {
            Event::Ready(_) => {
                assert!(!self.ready, "Ready twice");
                self.ready = true;
            }
            Event::CallCompleted { call, .. } => {
                assert!(
                    self.peer.calls.contains(call) && self.in_flight(call),
                    "{call} completed but was not a call in flight"
                );
                self.peer.completed.insert(*call);
            }
            Event::RequestCompleted { call, .. } => {
                assert!(
                    self.peer.features.iter().any(|(c, _)| c == call) && self.in_flight(call),
                    "{call} completed but was not a request in flight"
                );
                self.peer.completed.insert(*call);
            }
            Event::Progress { call, .. } => assert!(
                self.peer.calls.contains(call) && self.in_flight(call),
                "progress for {call}"
            ),
            Event::Question {
                question,
                call,
                kind,
            } => {
                assert!(self.in_flight(call), "question for {call}");
                assert!(
                    self.questions.iter().all(|(q, _)| q != question),
                    "question {question:?} asked twice"
                );
                let form = match kind {
                    rho_proto_core::session::Question::Elicitation(form) => Some(form.clone()),
                    rho_proto_core::session::Question::Url(request) => {
                        // Only what rho declared, and only a URL it can
                        // open safely reaches the host.
                        assert!(
                            request.url.starts_with("https://")
                                || request.url.starts_with("http://"),
                            "{request:?}"
                        );
                        self.urls.insert(*question);
                        None
                    }
                    rho_proto_core::session::Question::Sampling(_)
                    | rho_proto_core::session::Question::Authorization { .. } => None,
                };
                self.questions.push((*question, form));
                self.open.insert(*question);
                self.asked_for.insert(*question, *call);
            }
            Event::QuestionWithdrawn(question) => {
                assert!(
                    self.open.remove(question),
                    "{question:?} withdrawn but not open"
                );
            }
            Event::PingAnswered | Event::PingFailed(_) => {
                assert!(self.pings, "ping event without keep-alive pings")
            }
            // A server's log message, for the host: anything the peer sent.
            Event::Log(_) => {}
            // Only for a resource the host subscribed to.
            Event::ResourceUpdated { uri } => assert!(
                self.subscribed.contains(uri),
                "an update of {uri:?}, never subscribed to"
            ),
            // Renewed on a fresh session for an expired one: only URIs the
            // host subscribed to, after such a session.
            Event::ResourceWatchRenewed { uris } => {
                assert!(self.reinitialized, "a watch renewed with no new session");
                assert!(
                    uris.iter().all(|uri| self.subscribed.contains(uri)),
                    "a watch renewed of {uris:?}, not all subscribed to"
                );
            }
            // A 2026 stream that ended for good: only URIs the host
            // subscribed to, at least one, in that era, while it is open.
            Event::ResourceWatchEnded { uris, .. } => {
                assert!(!uris.is_empty(), "a watch ended naming nothing");
                assert!(
                    uris.iter().all(|uri| self.subscribed.contains(uri)),
                    "a watch ended of {uris:?}, not all subscribed to"
                );
                assert!(
                    self.resource_listens > 0 || self.reinitialized,
                    "a watch ended without a resource stream or a new session"
                );
            }
            Event::Closed(_) => {
                self.closed = true;
                let unfinished: Vec<_> = self
                    .peer
                    .calls
                    .iter()
                    .chain(self.peer.features.iter().map(|(c, _)| c))
                    .filter(|c| !self.peer.completed.contains(c))
                    .collect();
                assert!(
                    unfinished.is_empty(),
                    "closed with {unfinished:?} unfinished"
                );
                assert!(self.open.is_empty(), "closed with questions open");
            }
            Event::PeerMisbehaved(_) | Event::ToolsChanged(_) | Event::CatalogChanged(_) => {}
            // `Event` is non-exhaustive: an event the core adds fails here
            // until this model checks it (inside the core this match was
            // exhaustive, so the compiler asked).
            other => panic!("an event this model does not check: {other:?}"),
        }
    }

    /// Whether `call` (a tool call or a feature request) was accepted and
    /// has not completed.
    fn in_flight(&self, call: &CallId) -> bool {
        (self.peer.calls.contains(call) || self.peer.features.iter().any(|(c, _)| c == call))
            && !self.peer.completed.contains(call)
    }

    /// A call the host started.
    pub(crate) fn accepted(&mut self, call: CallId) {
        assert!(!self.known(call), "{call} handed out twice");
        self.peer.calls.push(call);
    }

    fn known(&self, call: CallId) -> bool {
        self.peer.calls.contains(&call) || self.peer.features.iter().any(|(c, _)| *c == call)
    }

    /// The call or feature request `r` names.
    pub(crate) fn call(&self, r: &Ref) -> CallId {
        match r {
            Ref::Known(n) => {
                let all: Vec<CallId> = self
                    .peer
                    .calls
                    .iter()
                    .copied()
                    .chain(self.peer.features.iter().map(|(c, _)| *c))
                    .collect();
                match all.len() {
                    0 => fuzzing::call_id(0),
                    len => all[usize::from(*n) % len],
                }
            }
            Ref::Raw(n) => fuzzing::call_id(*n),
        }
    }

    /// The question `r` names, and its form; the host's answer closes it.
    pub(crate) fn answer(&mut self, r: &Ref) -> (QuestionId, Option<Form>) {
        let (question, form) = match r {
            Ref::Known(n) => match self.questions.len() {
                0 => (fuzzing::question_id(0), None),
                len => self.questions[usize::from(*n) % len].clone(),
            },
            Ref::Raw(n) => (fuzzing::question_id(*n), None),
        };
        self.open.remove(&question);
        (question, form)
    }

    /// Checks the outcome of `call_tool` made in `state`.
    pub(crate) fn called(
        &mut self,
        state: SessionState,
        arguments: &Value,
        result: Result<CallId, ApiMisuse>,
    ) {
        let object = matches!(arguments, Value::Null | Value::Object(_));
        match result {
            Ok(call) => {
                assert_eq!(state, SessionState::Ready, "call accepted while {state:?}");
                assert!(object, "call accepted with arguments {arguments}");
                self.accepted(call);
            }
            Err(ApiMisuse::NotReady(_)) => assert_eq!(state, SessionState::Starting),
            Err(ApiMisuse::Closed(_)) => assert_eq!(state, SessionState::Closed),
            Err(ApiMisuse::ArgumentsNotObject) => {
                assert!(
                    state == SessionState::Ready && !object,
                    "{state:?} {arguments}"
                )
            }
            // `NotOffered` (tools need no capability the harness withholds),
            // and any misuse the core adds that this model does not know.
            Err(misuse) => panic!("call_tool refused with {misuse}"),
        }
    }

    /// Checks the outcome of `request` (a prompt, resource or completion
    /// request) made in `state`, to a server that declared `offered` (the
    /// capability it needs; `None` before ready).
    pub(crate) fn requested(
        &mut self,
        state: SessionState,
        request: &FeatureRequest,
        offered: Option<bool>,
        result: Result<CallId, ApiMisuse>,
    ) {
        match result {
            Ok(call) => {
                assert_eq!(
                    state,
                    SessionState::Ready,
                    "request accepted while {state:?}"
                );
                assert_eq!(offered, Some(true), "{} not offered", request.method());
                assert!(!self.known(call), "{call} handed out twice");
                self.peer.features.push((call, request.method()));
                if let FeatureRequest::SubscribeResource(params) = request {
                    self.subscribed.insert(params.uri.clone());
                }
            }
            Err(ApiMisuse::NotReady(_)) => assert_eq!(state, SessionState::Starting),
            Err(ApiMisuse::Closed(_)) => assert_eq!(state, SessionState::Closed),
            Err(ApiMisuse::NotOffered { capability, .. }) => {
                assert_eq!(state, SessionState::Ready);
                assert_eq!(capability, request.capability());
                assert_eq!(offered, Some(false), "{capability} refused though offered");
            }
            // The bound: as many subscribes were accepted before.
            Err(ApiMisuse::SubscriptionLimit { limit, .. }) => {
                assert_eq!(state, SessionState::Ready);
                assert_eq!(limit, MAX_PER_SERVER);
                assert!(
                    matches!(request, FeatureRequest::SubscribeResource(_)),
                    "the bound refused a {}",
                    request.method()
                );
                let subscribes = self
                    .peer
                    .features
                    .iter()
                    .filter(|(_, m)| *m == "resources/subscribe")
                    .count();
                assert!(
                    subscribes >= limit,
                    "the bound refused subscribe #{}",
                    subscribes + 1
                );
            }
            // `ArgumentsNotObject` (a feature request has no tool
            // arguments), and any misuse the core adds that this model
            // does not know.
            Err(misuse) => panic!("request refused with {misuse}"),
        }
    }

    /// Checks the getters of `session` against the drained outputs, at `now`.
    pub(crate) fn agrees(&self, session: &Session, now: Instant) {
        if let Some(deadline) = session.poll_timeout() {
            assert!(
                deadline > now,
                "poll_timeout is {:?} before the current time",
                now.saturating_duration_since(deadline)
            );
        }
        let unfinished = self
            .peer
            .calls
            .iter()
            .filter(|c| !self.peer.completed.contains(c))
            .count();
        assert_eq!(session.calls_in_flight(), unfinished, "calls in flight");
        assert_eq!(session.open_questions(), self.open.len(), "open questions");
        // A call or request that ended took its questions with it.
        for question in &self.open {
            if let Some(call) = self.asked_for.get(question) {
                assert!(
                    !self.peer.completed.contains(call),
                    "{question:?} still open after {call} completed"
                );
            }
        }
    }
}

/// Whether the ready server declared the capability `request` needs
/// (`None` before ready).
pub(crate) fn offers(session: &Session, request: &FeatureRequest) -> Option<bool> {
    let caps = &session.server_ready()?.capabilities;
    Some(match request.capability() {
        "prompts" => caps.prompts,
        "resources" => caps.resources,
        "completions" => caps.completions,
        "resources.subscribe" => caps.resources && caps.resources_subscribe,
        _ => false,
    })
}

/// A session, a fake clock, and the checks' bookkeeping.
struct Harness {
    now: Instant,
    session: Session,
    /// A second decoder fed the same bytes, to see what lines the session
    /// read.
    shadow: LineDecoder,
    host: Host,
}

impl Harness {
    fn new(setup: &Setup, origin: Instant, log: Option<Log>) -> Self {
        let options = options(setup, Framing::Lines);
        let shadow = LineDecoder::new(options.max_line);
        let session = Session::new(options, origin);
        let mut h = Self {
            now: origin,
            host: Host {
                pings: setup.ping,
                log_level: setup.log_level,
                view: View::of(&session),
                log,
                ..Host::default()
            },
            session,
            shadow,
        };
        h.drain();
        h.check_state();
        h
    }

    fn act(&mut self, action: &Action) {
        match action {
            Action::Server {
                messages,
                batch,
                chunks,
            } => {
                let values: Vec<Value> =
                    messages.iter().map(|m| self.host.peer.message(m)).collect();
                let mut bytes = Vec::new();
                if *batch {
                    bytes.extend(serde_json::to_vec(&values).unwrap_or_default());
                    bytes.push(b'\n');
                } else {
                    for value in &values {
                        bytes.extend(serde_json::to_vec(value).unwrap_or_default());
                        bytes.push(b'\n');
                    }
                }
                let input = crate::Chunked {
                    chunks: chunks.clone(),
                    stream: &bytes,
                };
                for piece in input.pieces() {
                    self.feed(piece);
                }
            }
            Action::Garbage(bytes) => self.feed(bytes),
            Action::Wait(wait) => {
                let next = self.session.poll_timeout();
                self.now = match wait {
                    Wait::Millis(ms) => self.now + Duration::from_millis(u64::from(*ms)),
                    Wait::Seconds(s) => self.now + Duration::from_secs(u64::from(*s)),
                    Wait::NextDeadline => next.unwrap_or(self.now).max(self.now),
                    Wait::JustBeforeDeadline => next
                        .and_then(|t| t.checked_sub(Duration::from_millis(1)))
                        .unwrap_or(self.now)
                        .max(self.now),
                };
                self.session.handle_timeout(self.now);
                self.step();
            }
            Action::CallTool { tool, arguments } => {
                let arguments = arguments.value();
                let state = self.session.state();
                let result = self
                    .session
                    .call_tool(self.now, &tool.text(), arguments.clone());
                self.host.called(state, &arguments, result);
                self.step();
            }
            Action::CancelCall(r) => {
                let call = self.host.call(r);
                self.session.cancel_call(self.now, call);
                self.step();
            }
            Action::AnswerElicitation { question, answer } => {
                let (question, form) = self.host.answer(question);
                if self.host.urls.contains(&question) {
                    self.session
                        .answer_url(self.now, question, answer.url_answer());
                } else {
                    let answer = answer.answer(form.as_ref());
                    self.session.answer_elicitation(self.now, question, answer);
                }
                self.step();
            }
            Action::AnswerSampling { question, answer } => {
                let (question, _) = self.host.answer(question);
                self.session
                    .answer_sampling(self.now, question, answer.answer());
                self.step();
            }
            Action::RequestFailed(reply) => {
                // Any id the session could have sent: a non-negative
                // number (ids past `i64::MAX` are never reached).
                let id = self.host.peer.reply_id(reply, "").as_i64();
                let wire = id.map(RequestId::Number);
                if let Some(request) = wire.as_ref().and_then(ClientRequestId::from_wire) {
                    self.session
                        .handle_request_failed(self.now, request, "fuzz".into());
                    self.step();
                }
            }
            Action::Close => {
                self.host.closing = true;
                self.session.close(self.now);
                self.step();
            }
            Action::TransportClosed => {
                // The session reads one final unterminated line, as here.
                if let Some(Ok(line)) = self.shadow.finish() {
                    self.host.received(line);
                }
                self.session.handle_transport_closed(self.now, None);
                self.step();
            }
            Action::TransportFailed => {
                self.session
                    .handle_transport_failed(self.now, "fuzz".into());
                self.step();
            }
            Action::Request(template) => {
                let request = template.request();
                let state = self.session.state();
                let offered = offers(&self.session, &request);
                let result = self.session.request(self.now, &request);
                self.host.requested(state, &request, offered, result);
                self.step();
            }
        }
    }

    /// Delivers bytes from the server.
    fn feed(&mut self, bytes: &[u8]) {
        self.shadow.push(bytes);
        while let Some(line) = self.shadow.next_line() {
            if let Ok(line) = line {
                self.host.received(line);
            }
        }
        self.session.handle_stdio_bytes(self.now, bytes);
        self.step();
    }

    fn step(&mut self) {
        self.drain();
        self.check_state();
    }

    fn drain(&mut self) {
        let was_closed = self.host.closed;
        self.host.look(View::of(&self.session));
        let mut count = 0;
        while let Some(Transmit { bytes, kind }) = self.session.poll_transmit() {
            count += 1;
            assert!(count < QUEUE_BOUND, "runaway transmit queue");
            assert!(!was_closed, "transmit after Closed");
            assert_eq!(bytes.last(), Some(&b'\n'), "stdio transmits end a line");
            assert_eq!(
                bytes.iter().filter(|&&b| b == b'\n').count(),
                1,
                "a transmit spans lines: {:?}",
                String::from_utf8_lossy(&bytes)
            );
            self.host.sent(&bytes, Some(kind));
        }
        let mut count = 0;
        while let Some(event) = self.session.poll_event() {
            count += 1;
            assert!(count < QUEUE_BOUND, "runaway event queue");
            self.host.event(&event);
        }
    }

    fn check_state(&self) {
        self.host.agrees(&self.session, self.now);
        let state = self.session.state();
        if self.host.closed {
            assert_eq!(state, SessionState::Closed);
            assert_eq!(self.session.poll_timeout(), None);
        } else if state == SessionState::Closed {
            // Only a close rho asked for is held, and only while its
            // farewells may still be answered (a stdio session).
            assert!(self.host.closing, "closed without Closed");
            assert_eq!(
                self.session.timeout_reason(),
                Some(Timer::Farewell),
                "closed without Closed, and not waiting for farewells"
            );
        } else {
            assert_eq!(state == SessionState::Ready, self.host.ready, "{state:?}");
        }
    }
}

// ---------------------------------------------------------------------------
// Encoding, for hand-written seeds (see `encode`).
// ---------------------------------------------------------------------------

impl Encode for SessionInput {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self { setup, actions } = self;
        setup.encode(out);
        actions.encode(out);
    }
}

impl Encode for Setup {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            log_level,
            roots,
            ping,
            progress_extends,
            short_lines,
            stateless,
        } = self;
        log_level.encode(out);
        roots.encode(out);
        ping.encode(out);
        progress_extends.encode(out);
        short_lines.encode(out);
        stateless.encode(out);
    }
}

impl Encode for Action {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 12;
        match self {
            Action::Server {
                messages,
                batch,
                chunks,
            } => {
                tag(out, 0, N);
                messages.encode(out);
                batch.encode(out);
                chunks.encode(out);
            }
            Action::Garbage(bytes) => {
                tag(out, 1, N);
                bytes.encode(out);
            }
            Action::Wait(wait) => {
                tag(out, 2, N);
                wait.encode(out);
            }
            Action::CallTool { tool, arguments } => {
                tag(out, 3, N);
                tool.encode(out);
                arguments.encode(out);
            }
            Action::CancelCall(r) => {
                tag(out, 4, N);
                r.encode(out);
            }
            Action::AnswerElicitation { question, answer } => {
                tag(out, 5, N);
                question.encode(out);
                answer.encode(out);
            }
            Action::AnswerSampling { question, answer } => {
                tag(out, 6, N);
                question.encode(out);
                answer.encode(out);
            }
            Action::RequestFailed(reply) => {
                tag(out, 7, N);
                reply.encode(out);
            }
            Action::Close => tag(out, 8, N),
            Action::TransportClosed => tag(out, 9, N),
            Action::TransportFailed => tag(out, 10, N),
            Action::Request(template) => {
                tag(out, 11, N);
                template.encode(out);
            }
        }
    }
}

impl Encode for FeatureTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            FeatureTemplate::GetPrompt { name, arguments } => {
                tag(out, 0, 5);
                name.encode(out);
                arguments.encode(out);
            }
            FeatureTemplate::ReadResource { uri } => {
                tag(out, 1, 5);
                uri.encode(out);
            }
            FeatureTemplate::Complete {
                prompt,
                name,
                argument,
                value,
                context,
            } => {
                tag(out, 2, 5);
                prompt.encode(out);
                name.encode(out);
                argument.encode(out);
                value.encode(out);
                context.encode(out);
            }
            FeatureTemplate::SubscribeResource { uri } => {
                tag(out, 3, 5);
                uri.encode(out);
            }
            FeatureTemplate::UnsubscribeResource { uri } => {
                tag(out, 4, 5);
                uri.encode(out);
            }
        }
    }
}

impl Encode for Wait {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Wait::Millis(ms) => {
                tag(out, 0, 4);
                ms.encode(out);
            }
            Wait::Seconds(s) => {
                tag(out, 1, 4);
                s.encode(out);
            }
            Wait::NextDeadline => tag(out, 2, 4),
            Wait::JustBeforeDeadline => tag(out, 3, 4),
        }
    }
}

impl Encode for Ref {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Ref::Known(n) => {
                tag(out, 0, 2);
                n.encode(out);
            }
            Ref::Raw(n) => {
                tag(out, 1, 2);
                n.encode(out);
            }
        }
    }
}

impl Encode for Arguments {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Arguments::Null => tag(out, 0, 3),
            Arguments::Object(members) => {
                tag(out, 1, 3);
                members.encode(out);
            }
            Arguments::NotObject(leaf) => {
                tag(out, 2, 3);
                leaf.encode(out);
            }
        }
    }
}

impl Encode for ElicitAnswer {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ElicitAnswer::Submit(pairs) => {
                tag(out, 0, 5);
                pairs.encode(out);
            }
            ElicitAnswer::Defaults => tag(out, 1, 5),
            ElicitAnswer::Dismissed => tag(out, 2, 5),
            ElicitAnswer::CouldNotAsk => tag(out, 3, 5),
            ElicitAnswer::Declined => tag(out, 4, 5),
        }
    }
}

impl Encode for SamplingReply {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            SamplingReply::Completed(t) => {
                tag(out, 0, 3);
                t.encode(out);
            }
            SamplingReply::Refused => tag(out, 1, 3),
            SamplingReply::Failed(t) => {
                tag(out, 2, 3);
                t.encode(out);
            }
        }
    }
}
