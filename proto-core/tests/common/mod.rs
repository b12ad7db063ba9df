//! What the test files share: the harnesses that drive the core against a
//! scripted server on a fake clock ([`Stdio`] for a [`Session`] over
//! stdio, [`Http`] for an [`HttpTransport`]), the bounded drain and drive
//! under them, [`Capture`], a tracing subscriber for tests that pin
//! what is logged and at which level, and [`FixedSigner`], a client
//! assertion signer for the OAuth tests.
//!
//! Every harness reads the core the same way, by the drain rule: after each
//! input or command it takes every output and event until the core is idle
//! ([`drain`]). A scripted server that answers what it was sent runs in
//! rounds under [`drive_bounded`], as quinn-proto's tests drive a pair of
//! endpoints: a round hands the server what the core sent and drains what
//! the answers caused, and the drive ends at the first round in which the
//! server has nothing to say. Both are bounded, so a core that never goes
//! idle (a livelock) fails its test with a message naming what it kept
//! doing, instead of hanging the run.
//!
//! Time is a fake clock: `now` starts at one real `Instant` and moves only
//! when a test says so ([`Stdio::step`] jumps to the next deadline).

// Each test file is a crate of its own and uses only part of this.
#![allow(dead_code)]
// The fake clock needs one real `Instant` as its origin.
#![allow(clippy::disallowed_methods)]

use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::connection::{self, Connection};
use rho_proto_core::http::{
    ExchangeId, HttpOptions, HttpOutput, HttpRequest, HttpTransport, Method,
};
use rho_proto_core::session::{
    CallError, CallId, CloseReason, Event, Session, SessionOptions, Transmit,
};
use rho_proto_core::wire::jsonrpc::{Incoming, Message};
use rho_proto_core::wire::protocol::{CallToolResult, LATEST_PROTOCOL_VERSION};
use serde_json::{Value, json};
use url::Url;

// ---------------------------------------------------------------------------
// The bounded drain and drive
// ---------------------------------------------------------------------------

/// The most outputs and events one drain takes before it declares the core
/// livelocked: far above the largest burst a test causes (a flood of 5,000
/// server log lines delivered at once).
pub(crate) const DRAIN_BOUND: usize = 100_000;

/// The most rounds one drive runs before it declares the exchange
/// livelocked: a handshake, its listings and a few pages take under ten.
pub(crate) const DRIVE_ROUNDS: usize = 100;

/// A sans-IO core as a drain reads it: what it wants sent and what the
/// host must know. Named apart from the cores' own methods so a call never
/// resolves to the wrong one.
pub(crate) trait Machine {
    /// What it wants the transport to do.
    type Output: Debug;
    /// The next output, if any.
    fn next_output(&mut self) -> Option<Self::Output>;
    /// The next event for the host, if any.
    fn next_event(&mut self) -> Option<Event>;
}

impl Machine for Session {
    type Output = Transmit;
    fn next_output(&mut self) -> Option<Transmit> {
        self.poll_transmit()
    }
    fn next_event(&mut self) -> Option<Event> {
        self.poll_event()
    }
}

impl Machine for HttpTransport {
    type Output = HttpOutput;
    fn next_output(&mut self) -> Option<HttpOutput> {
        self.poll_output()
    }
    fn next_event(&mut self) -> Option<Event> {
        self.poll_event()
    }
}

impl Machine for Connection {
    type Output = connection::Output;
    fn next_output(&mut self) -> Option<connection::Output> {
        self.poll_output()
    }
    fn next_event(&mut self) -> Option<Event> {
        self.poll_event()
    }
}

/// Takes every output (into `output`) and every event (onto `events`) of
/// `machine` until it has neither, checking on the way that nothing is
/// reported after [`Event::Closed`] (a session's last word). Fails the test
/// after [`DRAIN_BOUND`] items: a core that keeps producing without new
/// input is livelocked.
pub(crate) fn drain<M: Machine>(
    machine: &mut M,
    mut output: impl FnMut(M::Output),
    events: &mut Vec<Event>,
) {
    let mut taken = 0;
    loop {
        let mut idle = true;
        while let Some(out) = machine.next_output() {
            count_drained(&mut taken, &out);
            output(out);
            idle = false;
        }
        while let Some(event) = machine.next_event() {
            count_drained(&mut taken, &event);
            assert!(
                !matches!(events.last(), Some(Event::Closed(_))),
                "{event:?} after Closed"
            );
            events.push(event);
            idle = false;
        }
        if idle {
            return;
        }
    }
}

/// Counts one more item taken by a drain (`taken` starts at 0 for each
/// drain) and fails the test past [`DRAIN_BOUND`], showing `last`.
pub(crate) fn count_drained(taken: &mut usize, last: &dyn Debug) {
    *taken += 1;
    assert!(
        *taken <= DRAIN_BOUND,
        "the core never went idle: {DRAIN_BOUND} outputs and events in one drain, the last {last:?}"
    );
}

/// Runs `round` until it says nothing happened (it returns `false`), as
/// quinn-proto's `drive_bounded` does: one round is the scripted server
/// answering what the core sent since the last round, and the core's
/// outputs drained. Fails the test after [`DRIVE_ROUNDS`] rounds, naming
/// `what`, so two sides that keep answering each other fail instead of
/// hanging.
pub(crate) fn drive_bounded(what: &str, mut round: impl FnMut() -> bool) {
    for _ in 0..DRIVE_ROUNDS {
        if !round() {
            return;
        }
    }
    panic!("{what} never went idle: still busy after {DRIVE_ROUNDS} rounds (a livelock?)");
}

/// A JSON-RPC result answering `request`'s id.
pub(crate) fn result_for(request: &Message, result: Value) -> Value {
    match request {
        Message::Request { id, .. } => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        other => panic!("only a request takes a result, not {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// A session over stdio
// ---------------------------------------------------------------------------

/// A [`Session`] over stdio against a scripted server: every line it wrote,
/// parsed (`sent`) and as written (`lines`), and every event.
pub(crate) struct Stdio {
    /// The fake clock's origin.
    pub(crate) start: Instant,
    /// The fake clock.
    pub(crate) now: Instant,
    pub(crate) session: Session,
    /// Every message the session wrote, in order.
    pub(crate) sent: Vec<Message>,
    /// The same messages as the lines written, newline included.
    pub(crate) lines: Vec<String>,
    pub(crate) events: Vec<Event>,
    /// How many of `sent` a drive has shown the scripted server.
    driven: usize,
}

impl Stdio {
    /// A session made now (a real `Instant`, the clock's origin), drained.
    pub(crate) fn new(options: SessionOptions) -> Self {
        Self::new_at(options, Instant::now())
    }

    /// A session made at `now`, drained.
    pub(crate) fn new_at(options: SessionOptions, now: Instant) -> Self {
        let mut h = Self {
            start: now,
            now,
            session: Session::new(options, now),
            sent: Vec::new(),
            lines: Vec::new(),
            events: Vec::new(),
            driven: 0,
        };
        h.drain();
        h
    }

    /// Takes every line and event (see [`drain`]); each line must be one
    /// JSON-RPC message ending in a newline.
    pub(crate) fn drain(&mut self) {
        let (sent, lines) = (&mut self.sent, &mut self.lines);
        drain(
            &mut self.session,
            |transmit| {
                let bytes = transmit.bytes;
                assert_eq!(bytes.last(), Some(&b'\n'), "stdio transmits end a line");
                match Incoming::parse(&bytes).expect("we send valid JSON-RPC") {
                    Incoming::Single(m) => sent.push(m),
                    Incoming::Batch(_) => panic!("we never send batches"),
                }
                lines.push(String::from_utf8(bytes).expect("we send UTF-8"));
            },
            &mut self.events,
        );
    }

    /// Forgets what was sent and said so far (a drive starts afresh).
    pub(crate) fn clear(&mut self) {
        self.sent.clear();
        self.lines.clear();
        self.events.clear();
        self.driven = 0;
    }

    /// Delivers raw bytes from the server at `now`, then drains.
    pub(crate) fn say_bytes(&mut self, bytes: &[u8]) {
        self.session.handle_stdio_bytes(self.now, bytes);
        self.drain();
    }

    /// Delivers one line of text (a newline is added).
    pub(crate) fn say_line(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.say_bytes(&bytes);
    }

    /// Delivers one message as a line.
    pub(crate) fn say(&mut self, message: Value) {
        self.say_line(&message.to_string());
    }

    /// Delivers the result of the request with this `id`.
    pub(crate) fn reply(&mut self, id: impl serde::Serialize, result: Value) {
        self.say(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Runs the scripted server `server` until the session is idle: each
    /// message the session sends (from the first one the first time, then
    /// those since the last drive) is shown to it, and what it returns is
    /// delivered in order. Bounded by [`drive_bounded`].
    pub(crate) fn drive(&mut self, mut server: impl FnMut(&Message) -> Vec<Value>) {
        drive_bounded("a stdio session and its scripted server", || {
            let unseen = self.sent[self.driven.min(self.sent.len())..].to_vec();
            self.driven = self.sent.len();
            let answers: Vec<Value> = unseen.iter().flat_map(&mut server).collect();
            let busy = !answers.is_empty();
            for answer in answers {
                self.say(answer);
            }
            busy
        });
    }

    /// Drives (see [`Stdio::drive`]) a server that answers each request
    /// for a method in `results` with its result, and nothing else.
    pub(crate) fn drive_answering(&mut self, results: &[(&str, Value)]) {
        self.drive(|message| match message {
            Message::Request { method, .. } => results
                .iter()
                .filter(|(m, _)| m == method)
                .map(|(_, result)| result_for(message, result.clone()))
                .collect(),
            _ => Vec::new(),
        });
    }

    /// Jumps the clock to the next deadline and fires it; returns how long
    /// that was.
    pub(crate) fn step(&mut self) -> Duration {
        let deadline = self.session.poll_timeout().expect("a deadline is pending");
        let waited = deadline.saturating_duration_since(self.now);
        self.now = deadline.max(self.now);
        self.session.handle_timeout(self.now);
        self.drain();
        waited
    }

    /// Moves the clock by `by` and fires whatever is due.
    pub(crate) fn advance(&mut self, by: Duration) {
        self.wait_until(self.now + by);
    }

    /// Sets the clock to `at` and fires whatever is due.
    pub(crate) fn wait_until(&mut self, at: Instant) {
        self.now = at;
        self.session.handle_timeout(at);
        self.drain();
    }

    /// The last request sent, by a session whose ids are numbers: id,
    /// method, params (`null` when it had none).
    pub(crate) fn last_numbered_request(&self) -> (u64, String, Value) {
        self.sent
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Request { id, method, params } => Some((
                    id.to_string().parse().expect("numeric id"),
                    method.clone(),
                    params.clone().unwrap_or(Value::Null),
                )),
                _ => None,
            })
            .expect("a request")
    }

    /// The method of every message sent, in order (`<response>` and
    /// `<error>` for answers).
    pub(crate) fn methods(&self) -> Vec<String> {
        self.sent
            .iter()
            .map(|m| match m {
                Message::Request { method, .. } | Message::Notification { method, .. } => {
                    method.clone()
                }
                Message::Response { .. } => "<response>".into(),
                Message::Error { .. } => "<error>".into(),
            })
            .collect()
    }

    /// Why the session closed, once it has (always its last event).
    pub(crate) fn closed(&self) -> Option<&CloseReason> {
        closed(&self.events)
    }
}

/// The reason of the [`Event::Closed`] among `events` ([`drain`] keeps it
/// last).
fn closed(events: &[Event]) -> Option<&CloseReason> {
    match events.last() {
        Some(Event::Closed(reason)) => Some(reason),
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// A session over Streamable HTTP
// ---------------------------------------------------------------------------

/// An [`HttpTransport`] against a scripted HTTP server: every output (sends
/// and aborts, in order) and every event. Draining also checks that every
/// request goes to the configured endpoint.
pub(crate) struct Http {
    /// The fake clock's origin.
    pub(crate) start: Instant,
    /// The fake clock.
    pub(crate) now: Instant,
    /// The configured endpoint.
    pub(crate) endpoint: Url,
    pub(crate) transport: HttpTransport,
    pub(crate) outputs: Vec<HttpOutput>,
    pub(crate) events: Vec<Event>,
}

impl Http {
    /// A transport made now (the clock's origin), drained: its first
    /// request is out.
    pub(crate) fn connect(session: SessionOptions, http: HttpOptions) -> Self {
        let now = Instant::now();
        let endpoint = http.url.clone();
        let mut h = Self {
            start: now,
            now,
            endpoint,
            transport: HttpTransport::new(session, http, now),
            outputs: Vec::new(),
            events: Vec::new(),
        };
        h.drain();
        h
    }

    /// Takes every output and event (see [`drain`]).
    pub(crate) fn drain(&mut self) {
        let (outputs, endpoint) = (&mut self.outputs, &self.endpoint);
        drain(
            &mut self.transport,
            |output| {
                if let HttpOutput::Send(req) = &output {
                    assert_eq!(&req.url, endpoint, "only the endpoint: {req:?}");
                }
                outputs.push(output);
            },
            &mut self.events,
        );
    }

    // ----- what the transport asked for -----

    /// Every request made, in order.
    pub(crate) fn sends(&self) -> Vec<&HttpRequest> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                HttpOutput::Send(req) => Some(req),
                HttpOutput::Abort(_) => None,
            })
            .collect()
    }

    /// Every exchange aborted, in order.
    pub(crate) fn aborted(&self) -> Vec<ExchangeId> {
        self.outputs
            .iter()
            .filter_map(|o| match o {
                HttpOutput::Abort(id) => Some(*id),
                HttpOutput::Send(_) => None,
            })
            .collect()
    }

    /// The last request made.
    pub(crate) fn last_send(&self) -> HttpRequest {
        (*self.sends().last().expect("something was sent")).clone()
    }

    // ----- the scripted server -----

    /// The head of a response to `req`, then drains.
    pub(crate) fn head(&mut self, req: &HttpRequest, status: u16, headers: &[(&str, &str)]) {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.transport
            .handle_response_head(self.now, req.exchange, status, &headers);
        self.drain();
    }

    /// A chunk of the body of the response to `req`, then drains.
    pub(crate) fn body(&mut self, req: &HttpRequest, chunk: &[u8]) {
        self.transport
            .handle_response_body(self.now, req.exchange, chunk);
        self.drain();
    }

    /// The end of the response to `req`, then drains.
    pub(crate) fn end(&mut self, req: &HttpRequest) {
        self.transport.handle_response_end(self.now, req.exchange);
        self.drain();
    }

    /// A whole response: head, the body if any, end.
    pub(crate) fn respond(
        &mut self,
        req: &HttpRequest,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) {
        self.head(req, status, headers);
        if !body.is_empty() {
            self.body(req, body);
        }
        self.end(req);
    }

    // ----- the clock -----

    /// Jumps the clock to the next deadline and fires it; returns how long
    /// that was.
    pub(crate) fn step(&mut self) -> Duration {
        let deadline = self
            .transport
            .poll_timeout()
            .expect("a deadline is pending");
        let waited = deadline.saturating_duration_since(self.now);
        self.now = deadline.max(self.now);
        self.transport.handle_timeout(self.now);
        self.drain();
        waited
    }

    /// How far away the next deadline is.
    pub(crate) fn next_deadline_in(&self) -> Option<Duration> {
        self.transport
            .poll_timeout()
            .map(|d| d.saturating_duration_since(self.now))
    }

    /// Moves the clock by `by` and fires whatever is due.
    pub(crate) fn advance(&mut self, by: Duration) {
        self.wait_until(self.now + by);
    }

    /// Sets the clock to `at` and fires whatever is due.
    pub(crate) fn wait_until(&mut self, at: Instant) {
        self.now = at;
        self.transport.handle_timeout(at);
        self.drain();
    }

    /// Why the session closed, once it has (always its last event).
    pub(crate) fn closed(&self) -> Option<&CloseReason> {
        closed(&self.events)
    }
}

/// The JSON-RPC message a POST carries.
pub(crate) fn rpc(req: &HttpRequest) -> Value {
    serde_json::from_slice(&req.body).expect("POST bodies are JSON")
}

/// The JSON-RPC method a POST carries; `<response>` for an answer.
pub(crate) fn rpc_method(req: &HttpRequest) -> String {
    rpc(req)
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("<response>")
        .to_owned()
}

/// The session options of the tests over HTTP: the 2025 handshake
/// (tests/era.rs drives 2026-07-28) and budgets no test waits out by
/// accident.
pub(crate) fn http_session_options() -> SessionOptions {
    let mut o = SessionOptions::stdio("remote");
    o.protocol_version = LATEST_PROTOCOL_VERSION.into();
    o.startup_timeout = Duration::from_secs(10);
    o.tool_timeout = Duration::from_secs(5);
    o
}

/// What the tests over HTTP send, answer and read off the transport.
impl Http {
    /// Every POST carrying `method` (`<response>` for answers), in order.
    pub(crate) fn posts(&self, method: &str) -> Vec<HttpRequest> {
        self.sends()
            .into_iter()
            .filter(|r| r.method == Method::Post && rpc_method(r) == method)
            .cloned()
            .collect()
    }

    /// The last POST carrying `method`.
    pub(crate) fn last_post(&self, method: &str) -> HttpRequest {
        self.posts(method)
            .pop()
            .unwrap_or_else(|| panic!("no POST {method} in {:?}", self.sends()))
    }

    /// Answers a request POST with a JSON body holding `result`.
    pub(crate) fn answer_json(&mut self, req: &HttpRequest, result: Value) {
        self.answer_json_with(req, result, &[]);
    }

    /// [`Http::answer_json`] with more headers.
    pub(crate) fn answer_json_with(
        &mut self,
        req: &HttpRequest,
        result: Value,
        extra: &[(&str, &str)],
    ) {
        let body = json!({"jsonrpc": "2.0", "id": rpc(req)["id"], "result": result}).to_string();
        let mut headers = vec![("content-type", "application/json")];
        headers.extend_from_slice(extra);
        self.respond(req, 200, &headers, body.as_bytes());
    }

    /// Handshake up to discovery, with no session id, where the server
    /// offers no stream of its own (its GET is answered 405); returns the
    /// `tools/list` POST, unanswered.
    pub(crate) fn start_without_stream(&mut self) -> HttpRequest {
        let init = self.last_post("initialize");
        self.answer_json(
            &init,
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1"}
            }),
        );
        let initialized = self.last_post("notifications/initialized");
        self.respond(&initialized, 202, &[], b"");
        let get = self.last_send();
        assert_eq!(get.method, Method::Get);
        self.respond(&get, 405, &[], b"");
        self.last_post("tools/list")
    }

    /// [`Http::start_without_stream`], then discovery answered with one
    /// tool, `echo`: the session is ready.
    pub(crate) fn ready_without_stream(&mut self) {
        let list = self.start_without_stream();
        self.answer_json(
            &list,
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        );
        assert!(
            self.events.iter().any(|e| matches!(e, Event::Ready(_))),
            "{:?}",
            self.events
        );
    }

    /// Calls the tool `echo` with no arguments.
    pub(crate) fn call_echo(&mut self) -> CallId {
        let call = self
            .transport
            .call_tool(self.now, "echo", json!({}))
            .expect("ready");
        self.drain();
        call
    }

    /// How `call` completed, if it has; a call completes exactly once.
    pub(crate) fn completion(&self, call: CallId) -> Option<&Result<CallToolResult, CallError>> {
        let mut found = self.events.iter().filter_map(|e| match e {
            Event::CallCompleted { call: c, result } if *c == call => Some(result),
            _ => None,
        });
        let first = found.next();
        assert!(found.next().is_none(), "a call completes exactly once");
        first
    }

    /// The reason `call` failed in the transport; fails the test if it
    /// did not.
    pub(crate) fn transport_error(&self, call: CallId) -> String {
        match self.completion(call) {
            Some(Err(CallError::Transport { reason, .. })) => reason.clone(),
            other => panic!("expected a transport failure for {call}, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// OAuth
// ---------------------------------------------------------------------------

/// A client assertion signer whose signature is fixed bytes: the core
/// only frames it.
#[derive(Debug)]
pub(crate) struct FixedSigner;

impl rho_proto_core::oauth::assertion::ClientAssertionSigner for FixedSigner {
    fn alg(&self) -> &str {
        "ES256"
    }
    fn sign(&self, _: &[u8]) -> Result<Vec<u8>, String> {
        Ok(vec![1; 64])
    }
}

// ---------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------

/// Collects every tracing event's level and message.
#[derive(Clone, Default)]
pub(crate) struct Capture(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl Capture {
    /// Every event so far: its level and message.
    pub(crate) fn lines(&self) -> Vec<(tracing::Level, String)> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if let Ok(mut lines) = self.0.lock() {
            lines.push((*event.metadata().level(), message.0));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
