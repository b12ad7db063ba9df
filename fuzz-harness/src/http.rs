//! The `http_session` target: whole Streamable HTTP sessions, where the
//! fuzzer plays the HTTP server (heads, bodies, ends and failures for any
//! exchange, in any order), the host and the clock.
//!
//! Checked after every step, besides "no panic" and the session-level
//! invariants of [`crate::session`] (calls complete once, responses echo
//! received ids, questions, `Ready`, `Closed` last):
//!
//! - every request goes to the configured endpoint, with a fresh exchange
//!   id, and no header holds CR, LF or NUL;
//! - every POST body is one JSON-RPC message; an `Abort` names an
//!   exchange that was sent;
//! - each drain yields fewer than [`crate::session::QUEUE_BOUND`] outputs
//!   and events;
//! - [`HttpTransport::poll_timeout`] is never before `now`, and after
//!   `handle_timeout(now)` it is later than `now` or `None`;
//! - after [`Event::Closed`] nothing more is sent;
//! - in the stateless era every POST carries `MCP-Protocol-Version` equal
//!   to its body's `_meta` version and `Mcp-Method` equal to its method,
//!   and never `Mcp-Session-Id`; no GET or DELETE is made.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use url::Url;

use crate::encode::{Encode, tag};
use crate::script::ServerMessage;
use crate::session::{
    Arguments, ElicitAnswer, FeatureTemplate, Host, Log, QUEUE_BOUND, Ref, SamplingReply, Setup,
    View, Wait, offers, options, record,
};
use rho_proto_core::http::{
    ExchangeId, HttpFailure, HttpOptions, HttpOutput, HttpTransport, Method,
};
use rho_proto_core::session::{Event, Framing};
use rho_proto_core::wire::sse::SseDecoder;

/// The stateless era's header rules for one request (see the module docs).
fn stateless_headers(req: &rho_proto_core::http::HttpRequest) {
    assert_eq!(req.method, Method::Post, "{req:?} in the stateless era");
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    assert!(header("mcp-session-id").is_none(), "{req:?}");
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap_or_default();
    let Some(method) = body.get("method").and_then(serde_json::Value::as_str) else {
        return;
    };
    assert_eq!(header("mcp-method"), Some(method), "{req:?}");
    if body.get("id").is_some() {
        let version = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
        assert!(version.is_some(), "{method} without its version");
        assert_eq!(header("mcp-protocol-version"), version, "{req:?}");
    }
}

/// The endpoint every session of this target talks to.
pub const ENDPOINT: &str = "https://mcp.example.com/mcp";

/// Response statuses the fuzzer picks from.
const STATUSES: [u16; 12] = [200, 202, 204, 400, 401, 404, 405, 409, 500, 302, 307, 599];

/// One fuzzed HTTP session.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct HttpInput {
    /// Session options (a short cap also makes the body limit 256 bytes).
    pub setup: Setup,
    /// The script.
    pub actions: Vec<HttpAction>,
}

/// One step of an HTTP script.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum HttpAction {
    /// A whole 200 response: head (JSON or SSE by the body), body, end.
    Answer {
        /// Which exchange.
        exchange: Exchange,
        /// The body.
        body: Body,
        /// `Mcp-Session-Id: sid-{n % 3}`.
        session_id: Option<u8>,
    },
    /// A response head.
    Head {
        /// Which exchange.
        exchange: Exchange,
        /// `STATUSES[n % len]`.
        status: u8,
        /// Content type: 0 JSON, 1 SSE, 2 text, 3 none.
        content: u8,
        /// `Mcp-Session-Id: sid-{n % 3}`.
        session_id: Option<u8>,
    },
    /// Body bytes, in pieces of `chunks[0]`, ... bytes and then the rest.
    Body {
        /// Which exchange.
        exchange: Exchange,
        /// The bytes.
        body: Body,
        /// Piece lengths.
        chunks: Vec<u8>,
    },
    /// The body ended.
    End(Exchange),
    /// The exchange failed.
    Failed(Exchange),
    /// Time passes; then `handle_timeout`.
    Wait(Wait),
    /// The host calls a tool.
    CallTool {
        /// The tool name.
        tool: crate::script::Text,
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
    /// The host closes the session.
    Close,
    /// The host sends a prompt, resource or completion request.
    Request(FeatureTemplate),
}

/// An exchange the server answers.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Exchange {
    /// The latest one still open.
    Latest,
    /// The `n % count`-th open one.
    Open(u8),
    /// The `n % count`-th one ever sent.
    Any(u8),
    /// This raw id.
    Raw(u64),
}

/// A response body.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// One message as JSON.
    Json(ServerMessage),
    /// An SSE stream.
    Sse(Vec<SseEvent>),
    /// These bytes.
    Raw(Vec<u8>),
}

/// One server-sent event.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// `id: e{n}`.
    pub id: Option<u8>,
    /// `retry: n`.
    pub retry: Option<u16>,
    /// The message as `data`; none is a priming event (`data: `).
    pub message: Option<ServerMessage>,
}

/// `http_session`: decodes an [`HttpInput`] and runs it from `origin`.
pub fn check_http_session(data: &[u8], origin: Instant) {
    if let Some(input) = crate::decode::<HttpInput>(data) {
        run_http_session(&input, origin);
    }
}

/// Runs one HTTP script, checking the module's invariants after every
/// step, then closes the session and lets the DELETE time out.
pub fn run_http_session(input: &HttpInput, origin: Instant) {
    run(input, origin, None);
}

/// What happens in one script, line by line, for reading a crash or a
/// seed; the last line is the panic, if an invariant broke.
pub fn transcript(input: &HttpInput, origin: Instant) -> Vec<String> {
    record(|log| run(input, origin, Some(log)))
}

fn run(input: &HttpInput, origin: Instant, log: Option<Log>) {
    let mut h = Harness::new(&input.setup, origin, log);
    for action in &input.actions {
        h.host.note(|| format!("-- {action:?}"));
        h.act(action);
    }
    h.host.note(|| "-- close".to_owned());
    h.host.closing = true;
    h.transport.close(h.now);
    h.step(false);
    if !h.host.closed {
        // The DELETE is bounded in time.
        h.act(&HttpAction::Wait(Wait::NextDeadline));
    }
    assert!(
        h.host.closed,
        "close() and the DELETE timeout produced no Closed"
    );
    assert_eq!(h.transport.poll_timeout(), None);
}

/// What the fuzzer, as the HTTP server, knows of one exchange.
struct Shadow {
    /// The body read as SSE, to see what events it carries.
    sse: SseDecoder,
    /// The body as sent so far.
    bytes: Vec<u8>,
}

struct Harness {
    now: Instant,
    transport: HttpTransport,
    host: Host,
    endpoint: Url,
    /// Every exchange sent, in order.
    sent: Vec<ExchangeId>,
    /// Exchanges sent and neither aborted nor finished.
    open: Vec<ExchangeId>,
    /// POST bodies sent: a body sent again is a re-send, checked once.
    posted: BTreeSet<Vec<u8>>,
    shadows: BTreeMap<ExchangeId, Shadow>,
}

impl Harness {
    fn new(setup: &Setup, origin: Instant, log: Option<Log>) -> Self {
        let endpoint = Url::parse(ENDPOINT).unwrap_or_else(|e| panic!("{ENDPOINT}: {e}"));
        let mut http = HttpOptions::new(
            endpoint.clone(),
            vec![("Authorization".into(), "Bearer fuzz".into())],
        );
        http.ping_interval = Duration::from_secs(20);
        if setup.short_lines {
            http.max_body = 256;
        }
        let transport = HttpTransport::new(options(setup, Framing::Messages), http, origin);
        let mut h = Self {
            now: origin,
            host: Host {
                pings: true,
                log_level: setup.log_level,
                http: true,
                view: View::of(transport.session()),
                log,
                ..Host::default()
            },
            transport,
            endpoint,
            sent: Vec::new(),
            open: Vec::new(),
            posted: BTreeSet::new(),
            shadows: BTreeMap::new(),
        };
        h.step(false);
        h
    }

    fn exchange(&self, exchange: &Exchange) -> ExchangeId {
        let pick = |list: &[ExchangeId], n: u8| match list.len() {
            0 => ExchangeId::new(0),
            len => list[usize::from(n) % len],
        };
        match exchange {
            Exchange::Latest => self.open.last().copied().unwrap_or(ExchangeId::new(0)),
            Exchange::Open(n) => pick(&self.open, *n),
            Exchange::Any(n) => pick(&self.sent, *n),
            Exchange::Raw(n) => ExchangeId::new(*n),
        }
    }

    fn act(&mut self, action: &HttpAction) {
        match action {
            HttpAction::Answer {
                exchange,
                body,
                session_id,
            } => {
                let x = self.exchange(exchange);
                let content = if matches!(body, Body::Sse(_)) { 1 } else { 0 };
                self.head(x, 200, content, *session_id);
                let bytes = self.body_bytes(body);
                self.body(x, &bytes);
                self.end(x);
            }
            HttpAction::Head {
                exchange,
                status,
                content,
                session_id,
            } => {
                let x = self.exchange(exchange);
                let status = STATUSES[usize::from(*status) % STATUSES.len()];
                self.head(x, status, *content, *session_id);
            }
            HttpAction::Body {
                exchange,
                body,
                chunks,
            } => {
                let x = self.exchange(exchange);
                let bytes = self.body_bytes(body);
                let input = crate::Chunked {
                    chunks: chunks.clone(),
                    stream: &bytes,
                };
                for piece in input.pieces() {
                    self.body(x, piece);
                }
            }
            HttpAction::End(exchange) => {
                let x = self.exchange(exchange);
                self.end(x);
            }
            HttpAction::Failed(exchange) => {
                let x = self.exchange(exchange);
                self.open.retain(|o| *o != x);
                self.transport
                    .handle_exchange_failed(self.now, x, HttpFailure::other("fuzz"));
                self.step(false);
            }
            HttpAction::Wait(wait) => {
                let next = self.transport.poll_timeout();
                self.now = match wait {
                    Wait::Millis(ms) => self.now + Duration::from_millis(u64::from(*ms)),
                    Wait::Seconds(s) => self.now + Duration::from_secs(u64::from(*s)),
                    Wait::NextDeadline => next.unwrap_or(self.now).max(self.now),
                    Wait::JustBeforeDeadline => next
                        .and_then(|t| t.checked_sub(Duration::from_millis(1)))
                        .unwrap_or(self.now)
                        .max(self.now),
                };
                self.transport.handle_timeout(self.now);
                self.step(true);
            }
            HttpAction::CallTool { tool, arguments } => {
                let arguments = arguments.value();
                let state = self.transport.session().state();
                let result = self
                    .transport
                    .call_tool(self.now, &tool.text(), arguments.clone());
                self.host.called(state, &arguments, result);
                self.step(false);
            }
            HttpAction::CancelCall(r) => {
                let call = self.host.call(r);
                self.transport.cancel_call(self.now, call);
                self.step(false);
            }
            HttpAction::AnswerElicitation { question, answer } => {
                let (question, form) = self.host.answer(question);
                if self.host.urls.contains(&question) {
                    self.transport
                        .answer_url(self.now, question, answer.url_answer());
                } else {
                    let answer = answer.answer(form.as_ref());
                    self.transport
                        .answer_elicitation(self.now, question, answer);
                }
                self.step(false);
            }
            HttpAction::AnswerSampling { question, answer } => {
                let (question, _) = self.host.answer(question);
                self.transport
                    .answer_sampling(self.now, question, answer.answer());
                self.step(false);
            }
            HttpAction::Close => {
                self.host.closing = true;
                self.transport.close(self.now);
                self.step(false);
            }
            HttpAction::Request(template) => {
                let request = template.request();
                let state = self.transport.session().state();
                let offered = offers(self.transport.session(), &request);
                let result = self.transport.request(self.now, &request);
                self.host.requested(state, &request, offered, result);
                self.step(false);
            }
        }
    }

    fn body_bytes(&self, body: &Body) -> Vec<u8> {
        let message = |m: &ServerMessage| {
            serde_json::to_string(&self.host.peer.message(m)).unwrap_or_default()
        };
        match body {
            Body::Json(m) => message(m).into_bytes(),
            Body::Sse(events) => {
                let mut out = String::new();
                for event in events {
                    if let Some(id) = event.id {
                        out.push_str(&format!("id: e{id}\n"));
                    }
                    if let Some(retry) = event.retry {
                        out.push_str(&format!("retry: {retry}\n"));
                    }
                    let data = event.message.as_ref().map(message).unwrap_or_default();
                    out.push_str(&format!("data: {data}\n\n"));
                }
                out.into_bytes()
            }
            Body::Raw(bytes) => bytes.clone(),
        }
    }

    fn head(&mut self, x: ExchangeId, status: u16, content: u8, session_id: Option<u8>) {
        let mut headers = Vec::new();
        match content % 4 {
            0 => headers.push(("Content-Type".to_owned(), "application/json".to_owned())),
            1 => headers.push(("content-type".to_owned(), "text/event-stream".to_owned())),
            2 => headers.push(("Content-Type".to_owned(), "text/plain".to_owned())),
            _ => {}
        }
        if let Some(n) = session_id {
            headers.push(("Mcp-Session-Id".to_owned(), format!("sid-{}", n % 3)));
        }
        if (300..400).contains(&status) {
            headers.push((
                "Location".to_owned(),
                "https://elsewhere.example/mcp".to_owned(),
            ));
        }
        // A head starts the body afresh, in the transport as here.
        self.shadows.remove(&x);
        self.transport
            .handle_response_head(self.now, x, status, &headers);
        self.step(false);
    }

    fn body(&mut self, x: ExchangeId, bytes: &[u8]) {
        // Whatever the transport makes of the body, these are the only
        // server requests it could have read from it.
        let shadow = self.shadows.entry(x).or_insert_with(|| Shadow {
            sse: SseDecoder::default(),
            bytes: Vec::new(),
        });
        shadow.bytes.extend_from_slice(bytes);
        shadow.sse.push(bytes);
        let mut frames = Vec::new();
        while let Some(event) = shadow.sse.next_event() {
            if let Ok(event) = event {
                frames.push(event.data);
            }
        }
        for frame in frames {
            self.host.received(frame.as_bytes());
        }
        self.transport.handle_response_body(self.now, x, bytes);
        self.step(false);
    }

    fn end(&mut self, x: ExchangeId) {
        if let Some(shadow) = self.shadows.remove(&x) {
            self.host.received(&shadow.bytes);
        }
        self.open.retain(|o| *o != x);
        self.transport.handle_response_end(self.now, x);
        self.step(false);
    }

    /// Drains and checks; `after_timeout` when the step was
    /// `handle_timeout(now)`.
    fn step(&mut self, after_timeout: bool) {
        self.drain();
        if let Some(deadline) = self.transport.poll_timeout() {
            assert!(deadline >= self.now, "poll_timeout is in the past");
            assert!(
                !after_timeout || deadline > self.now,
                "handle_timeout(now) left a deadline at now"
            );
        }
        self.host.agrees(self.transport.session(), self.now);
        if self.host.closed {
            assert_eq!(self.transport.poll_timeout(), None);
        }
    }

    fn drain(&mut self) {
        let was_closed = self.host.closed;
        self.host.look(View::of(self.transport.session()));
        let mut count = 0;
        while let Some(output) = self.transport.poll_output() {
            count += 1;
            assert!(count < QUEUE_BOUND, "runaway output queue");
            match output {
                HttpOutput::Send(req) => {
                    self.host.note(|| format!("send: {req:?}"));
                    assert!(!was_closed, "{req:?} after Closed");
                    assert_eq!(req.url, self.endpoint, "{req:?}");
                    assert!(!self.sent.contains(&req.exchange), "{req:?} reuses its id");
                    for (name, value) in &req.headers {
                        assert!(
                            !name.contains(['\r', '\n', '\0', ':'])
                                && !value.contains(['\r', '\n', '\0']),
                            "header {name:?}: {value:?}"
                        );
                    }
                    if self.host.before.stateless && self.host.view.stateless {
                        stateless_headers(&req);
                    }
                    match req.method {
                        Method::Post => {
                            if self.posted.insert(req.body.clone()) {
                                self.host.sent(&req.body, None);
                            }
                        }
                        Method::Get | Method::Delete => assert!(req.body.is_empty()),
                    }
                    self.sent.push(req.exchange);
                    self.open.push(req.exchange);
                }
                HttpOutput::Abort(x) => {
                    self.host.note(|| format!("abort: {x:?}"));
                    assert!(self.sent.contains(&x), "abort of unknown {x:?}");
                    self.open.retain(|o| *o != x);
                }
            }
        }
        let mut count = 0;
        while let Some(event) = self.transport.poll_event() {
            count += 1;
            assert!(count < QUEUE_BOUND, "runaway event queue");
            if let Event::Closed(_) = event {
                // The session is over: nothing may stay open.
                self.open.clear();
            }
            self.host.event(&event);
        }
    }
}

// ---------------------------------------------------------------------------
// Encoding, for hand-written seeds (see `encode`).
// ---------------------------------------------------------------------------

impl Encode for HttpInput {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self { setup, actions } = self;
        setup.encode(out);
        actions.encode(out);
    }
}

impl Encode for HttpAction {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 12;
        match self {
            HttpAction::Answer {
                exchange,
                body,
                session_id,
            } => {
                tag(out, 0, N);
                exchange.encode(out);
                body.encode(out);
                session_id.encode(out);
            }
            HttpAction::Head {
                exchange,
                status,
                content,
                session_id,
            } => {
                tag(out, 1, N);
                exchange.encode(out);
                status.encode(out);
                content.encode(out);
                session_id.encode(out);
            }
            HttpAction::Body {
                exchange,
                body,
                chunks,
            } => {
                tag(out, 2, N);
                exchange.encode(out);
                body.encode(out);
                chunks.encode(out);
            }
            HttpAction::End(x) => {
                tag(out, 3, N);
                x.encode(out);
            }
            HttpAction::Failed(x) => {
                tag(out, 4, N);
                x.encode(out);
            }
            HttpAction::Wait(wait) => {
                tag(out, 5, N);
                wait.encode(out);
            }
            HttpAction::CallTool { tool, arguments } => {
                tag(out, 6, N);
                tool.encode(out);
                arguments.encode(out);
            }
            HttpAction::CancelCall(r) => {
                tag(out, 7, N);
                r.encode(out);
            }
            HttpAction::AnswerElicitation { question, answer } => {
                tag(out, 8, N);
                question.encode(out);
                answer.encode(out);
            }
            HttpAction::AnswerSampling { question, answer } => {
                tag(out, 9, N);
                question.encode(out);
                answer.encode(out);
            }
            HttpAction::Close => tag(out, 10, N),
            HttpAction::Request(template) => {
                tag(out, 11, N);
                template.encode(out);
            }
        }
    }
}

impl Encode for Exchange {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Exchange::Latest => tag(out, 0, 4),
            Exchange::Open(n) => {
                tag(out, 1, 4);
                n.encode(out);
            }
            Exchange::Any(n) => {
                tag(out, 2, 4);
                n.encode(out);
            }
            Exchange::Raw(n) => {
                tag(out, 3, 4);
                n.encode(out);
            }
        }
    }
}

impl Encode for Body {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Body::Json(m) => {
                tag(out, 0, 3);
                m.encode(out);
            }
            Body::Sse(events) => {
                tag(out, 1, 3);
                events.encode(out);
            }
            Body::Raw(bytes) => {
                tag(out, 2, 3);
                bytes.encode(out);
            }
        }
    }
}

impl Encode for SseEvent {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self { id, retry, message } = self;
        id.encode(out);
        retry.encode(out);
        message.encode(out);
    }
}
