//! One server's protocol state, whatever its transport: a line-framed
//! [`Session`] for stdio or an [`HttpTransport`] for Streamable HTTP,
//! behind one set of `handle_*`/`poll_*` methods.
//!
//! Executors hold a [`Connection`] and pair it with their own IO (a child
//! process, an HTTP client); everything transport-specific that is not IO —
//! framing, headers, which session options a config means — is decided
//! here, once for every executor.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::config::{ServerConfig, Transport};
use crate::features::elicitation::{FormAnswer, UrlAnswer};
use crate::http::{
    AuthorizationError, ExchangeId, HeaderError, HttpFailure, HttpOptions, HttpOutput,
    HttpTransport, resolve_headers,
};
use crate::oauth::dpop::DpopProver;
use crate::session::{
    ApiMisuse, CallId, Event, Framing, QuestionId, SamplingAnswer, Session, SessionOptions,
    TaskAugmentation, Timer,
};
use crate::text::redact::{Redactor, SecretBook};
use crate::transcript::{self, Recorder};

/// What an executor must do for a connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Output {
    /// Write these bytes to the child's stdin.
    Write(Vec<u8>),
    /// Make or abort an HTTP exchange.
    Http(HttpOutput),
}

/// What happened to an HTTP exchange, as the executor reports it.
#[derive(Debug, PartialEq, Eq)]
pub enum HttpInput {
    /// Status and headers arrived.
    Head {
        /// The status code.
        status: u16,
        /// The headers, in order.
        headers: Vec<(String, String)>,
    },
    /// A chunk of the body.
    Body(Vec<u8>),
    /// The body ended.
    End,
    /// The request or the body failed.
    Failed(HttpFailure),
}

/// What the host offers every session of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostContext<'a> {
    /// The ambient environment (`headers_from_env` reads it; a missing
    /// variable fails that server).
    pub ambient: &'a [(String, String)],
    /// The session workspace as a `file://` URI, offered as the one root.
    pub workspace_root: Option<&'a str>,
    /// The host can put a form in front of a person: declare elicitation.
    pub can_elicit: bool,
    /// The host can also show a person a URL and open it in a browser on
    /// their yes: declare URL-mode elicitation (with `can_elicit`).
    pub can_open_urls: bool,
    /// The host can show a server's MCP App view to a person: declare the
    /// MCP Apps extension.
    pub renders_apps: bool,
    /// The host has a model and a person to confirm: declare sampling to
    /// servers whose config opted in.
    pub can_sample: bool,
    /// The host can re-authorize an OAuth server mid-session (see
    /// [`HttpOptions::reauthorize`]).
    pub can_reauthorize: bool,
    /// The host's DPoP prover (see [`HttpOptions::dpop`]).
    pub dpop: Option<&'a Arc<dyn DpopProver>>,
    /// The secrets the host learns as the run goes on, redacted beside
    /// the server's configured values (see [`crate::text::redact`]).
    pub secrets: Option<&'a SecretBook>,
}

impl HostContext<'_> {
    /// The redactor of `config`'s text: its configured values
    /// ([`Redactor::for_server`]) and what the host learns.
    fn redactor(&self, config: &ServerConfig) -> Redactor {
        let redactor = Redactor::for_server(config, self.ambient);
        match self.secrets {
            Some(book) => redactor.learning(book),
            None => redactor,
        }
    }
}

/// One server's session over its transport.
#[derive(Debug)]
enum Inner {
    /// A stdio child: newline-delimited JSON-RPC.
    Stdio(Box<Session>),
    /// A Streamable HTTP endpoint.
    Http(Box<HttpTransport>),
}

/// One server's session over its transport, optionally recording a
/// transcript of everything that goes in and comes out (see
/// [`crate::transcript`]).
#[derive(Debug)]
pub struct Connection {
    inner: Inner,
    recorder: Option<Recorder>,
}

impl Connection {
    /// The connection a configured server needs, started at `now` (its
    /// startup budget runs from here), in the surroundings the host gives.
    /// Fails when the server's headers need an ambient variable that is
    /// unset or unusable.
    pub fn new(
        config: &ServerConfig,
        host: &HostContext<'_>,
        now: Instant,
    ) -> Result<Self, HeaderError> {
        let ambient = host.ambient;
        let options = |framing| SessionOptions {
            workspace_root: host.workspace_root.map(str::to_owned),
            elicitation: host.can_elicit,
            elicitation_url: host.can_elicit && host.can_open_urls,
            apps: host.renders_apps,
            sampling: host.can_sample && config.sampling_allowed(),
            redactor: host.redactor(config),
            ..SessionOptions::from_config(config, framing)
        };
        match &config.transport {
            Transport::Stdio(_) => Ok(Self::from_options(options(Framing::Lines), None, now)),
            Transport::StreamableHttp(http) => {
                let headers = resolve_headers(config.id.as_str(), ambient, http)?;
                Ok(Self::from_options(
                    options(Framing::Messages),
                    Some(HttpOptions {
                        max_body: config.max_message_bytes,
                        oauth: http.oauth.is_some(),
                        grant: http.oauth.as_ref().map(|o| o.grant),
                        reauthorize: host.can_reauthorize,
                        dpop: host.dpop.cloned(),
                        ..HttpOptions::new(http.url.clone(), headers)
                    }),
                    now,
                ))
            }
        }
    }

    /// A connection from explicit options: stdio when `http` is `None`.
    /// Replay builds connections this way from a transcript's header.
    pub fn from_options(options: SessionOptions, http: Option<HttpOptions>, now: Instant) -> Self {
        let inner = match http {
            None => Inner::Stdio(Box::new(Session::new(options, now))),
            Some(http) => Inner::Http(Box::new(HttpTransport::new(options, http, now))),
        };
        Self {
            inner,
            recorder: None,
        }
    }

    /// Like [`Connection::new`], recording a transcript from the start:
    /// the executor collects its lines with
    /// [`Connection::take_transcript`].
    pub fn new_recorded(
        config: &ServerConfig,
        host: &HostContext<'_>,
        now: Instant,
    ) -> Result<Self, HeaderError> {
        let ambient = host.ambient;
        let options = |framing| SessionOptions {
            workspace_root: host.workspace_root.map(str::to_owned),
            elicitation: host.can_elicit,
            elicitation_url: host.can_elicit && host.can_open_urls,
            apps: host.renders_apps,
            sampling: host.can_sample && config.sampling_allowed(),
            redactor: host.redactor(config),
            ..SessionOptions::from_config(config, framing)
        };
        let (options, http) = match &config.transport {
            Transport::Stdio(_) => (options(Framing::Lines), None),
            Transport::StreamableHttp(http) => {
                let headers = resolve_headers(config.id.as_str(), ambient, http)?;
                (
                    options(Framing::Messages),
                    Some(HttpOptions {
                        max_body: config.max_message_bytes,
                        oauth: http.oauth.is_some(),
                        grant: http.oauth.as_ref().map(|o| o.grant),
                        reauthorize: host.can_reauthorize,
                        dpop: host.dpop.cloned(),
                        ..HttpOptions::new(http.url.clone(), headers)
                    }),
                )
            }
        };
        let redactor = host.redactor(config);
        let recorder = Recorder::new(config.id.as_str(), now, &options, http.as_ref(), redactor);
        let mut conn = Self::from_options(options, http, now);
        conn.recorder = Some(recorder);
        Ok(conn)
    }

    /// The transcript lines recorded since the last call (none when not
    /// recording).
    pub fn take_transcript(&mut self) -> Vec<String> {
        self.recorder
            .as_mut()
            .map(Recorder::take_lines)
            .unwrap_or_default()
    }

    /// Records an input when recording; its fields are built only then, so
    /// a connection that does not record pays nothing for them (no copy of
    /// every stdio chunk, of every call's arguments).
    fn record<const N: usize>(
        &mut self,
        now: Instant,
        kind: &str,
        pairs: impl FnOnce() -> [(&'static str, Value); N],
    ) {
        if let Some(r) = &mut self.recorder {
            r.input(now, kind, transcript::fields(&pairs()));
        }
    }

    /// Records a call or request, with its own budget (`budget_ms`) only
    /// when it has one, so a transcript of a call without one reads as it
    /// always did.
    fn record_with_budget<const N: usize>(
        &mut self,
        now: Instant,
        kind: &str,
        budget: Option<Duration>,
        pairs: impl FnOnce() -> [(&'static str, Value); N],
    ) {
        if let Some(r) = &mut self.recorder {
            // A field with nothing to say is left out, as replay reads a
            // missing one.
            let mut fields = transcript::fields(&pairs());
            fields.retain(|_, value| !value.is_null());
            if let Some(budget) = budget {
                let ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
                fields.insert("budget_ms".into(), json!(ms));
            }
            r.input(now, kind, fields);
        }
    }

    // ----- inputs -----

    /// Bytes from a stdio child's stdout.
    pub fn handle_stdio_bytes(&mut self, now: Instant, bytes: &[u8]) {
        self.record(now, "stdio", || [("data", transcript::bytes_json(bytes))]);
        if let Inner::Stdio(session) = &mut self.inner {
            session.handle_stdio_bytes(now, bytes);
        }
    }

    /// The child's stdout ended; `detail` describes its exit when known.
    pub fn handle_stdio_closed(&mut self, now: Instant, detail: Option<String>) {
        self.record(now, "stdio_closed", || [("detail", json!(detail))]);
        if let Inner::Stdio(session) = &mut self.inner {
            session.handle_transport_closed(now, detail);
        }
    }

    /// The transport failed in a way the executor saw (a write failed).
    pub fn handle_transport_failed(&mut self, now: Instant, reason: String) {
        self.record(now, "transport_failed", || [("reason", json!(reason))]);
        match &mut self.inner {
            Inner::Stdio(session) => session.handle_transport_failed(now, reason),
            Inner::Http(_) => {}
        }
    }

    /// Something happened to an HTTP exchange.
    pub fn handle_http(&mut self, now: Instant, exchange: ExchangeId, input: HttpInput) {
        if self.recorder.is_some() {
            let x = json!(exchange.0);
            match &input {
                HttpInput::Head { status, headers } => self.record(now, "http_head", || {
                    [
                        ("x", x),
                        ("status", json!(status)),
                        ("headers", json!(headers)),
                    ]
                }),
                HttpInput::Body(chunk) => self.record(now, "http_body", || {
                    [("x", x), ("data", transcript::bytes_json(chunk))]
                }),
                HttpInput::End => self.record(now, "http_end", || [("x", x)]),
                // The kind is recorded only when there is one, so a
                // transcript's plain failures read as they always have.
                HttpInput::Failed(failure) => match transcript::failure_kind_json(failure.kind) {
                    None => self.record(now, "http_failed", || {
                        [("x", x), ("reason", json!(failure.reason))]
                    }),
                    Some(kind) => self.record(now, "http_failed", || {
                        [("x", x), ("reason", json!(failure.reason)), ("kind", kind)]
                    }),
                },
            }
        }
        let Inner::Http(transport) = &mut self.inner else {
            return;
        };
        match input {
            HttpInput::Head { status, headers } => {
                transport.handle_response_head(now, exchange, status, &headers)
            }
            HttpInput::Body(chunk) => transport.handle_response_body(now, exchange, &chunk),
            HttpInput::End => transport.handle_response_end(now, exchange),
            HttpInput::Failed(failure) => transport.handle_exchange_failed(now, exchange, failure),
        }
    }

    /// Time passed; see [`Connection::poll_timeout`]. The transcript
    /// records, with the time, which wakeup was due (what
    /// [`Connection::poll_timeout`] and [`Connection::timeout_reason`] said
    /// when the executor went to sleep), and replay checks it.
    pub fn handle_timeout(&mut self, now: Instant) {
        if let Some(r) = &self.recorder {
            let due = r.instant_json(self.poll_timeout());
            let timer = json!(self.timeout_reason());
            self.record(now, "timeout", || [("due", due), ("timer", timer)]);
        }
        match &mut self.inner {
            Inner::Stdio(session) => session.handle_timeout(now),
            Inner::Http(transport) => transport.handle_timeout(now),
        }
    }

    // ----- commands -----

    /// Calls a tool by the server's own name, within `budget` when one is
    /// given (else the server's `tool_timeout`).
    pub fn call_tool(
        &mut self,
        now: Instant,
        tool: &str,
        arguments: Value,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        self.call_tool_with(now, tool, arguments, budget, TaskAugmentation::default())
    }

    /// Like [`Connection::call_tool`], saying when a 2025-era call goes as
    /// a task; see [`Session::call_tool_with`]. The transcript records a
    /// task asked for (`"task": "offered"`), so replay asks the same.
    pub fn call_tool_with(
        &mut self,
        now: Instant,
        tool: &str,
        arguments: Value,
        budget: Option<Duration>,
        task: TaskAugmentation,
    ) -> Result<CallId, ApiMisuse> {
        self.record_with_budget(now, "call", budget, || {
            let asked = match task {
                TaskAugmentation::WhenOffered => json!("offered"),
                _ => Value::Null,
            };
            [
                ("tool", json!(tool)),
                ("args", arguments.clone()),
                ("task", asked),
            ]
        });
        let result = match &mut self.inner {
            Inner::Stdio(session) => session.call_tool_with(now, tool, arguments, budget, task),
            Inner::Http(transport) => transport.call_tool_with(now, tool, arguments, budget, task),
        };
        if let Some(r) = &mut self.recorder {
            r.poll(
                "call_id",
                result.as_ref().map_or(Value::Null, |c| json!(c.0)),
            );
        }
        result
    }

    /// Sends a prompt, resource or completion request, within `budget`
    /// when one is given; see [`Session::request_within`].
    /// [`Connection::cancel_call`] abandons it.
    pub fn request(
        &mut self,
        now: Instant,
        request: &crate::features::FeatureRequest,
        budget: Option<Duration>,
    ) -> Result<CallId, ApiMisuse> {
        self.record_with_budget(now, "request", budget, || {
            [
                ("method", json!(request.method())),
                ("params", json!(request)),
            ]
        });
        let result = match &mut self.inner {
            Inner::Stdio(session) => session.request_within(now, request, budget),
            Inner::Http(transport) => transport.request_within(now, request, budget),
        };
        if let Some(r) = &mut self.recorder {
            r.poll(
                "call_id",
                result.as_ref().map_or(Value::Null, |c| json!(c.0)),
            );
        }
        result
    }

    /// Abandons a call: the server is told, and the call completes as
    /// cancelled.
    pub fn cancel_call(&mut self, now: Instant, call: CallId) {
        self.record(now, "cancel", || [("call", json!(call.0))]);
        match &mut self.inner {
            Inner::Stdio(session) => session.cancel_call(now, call),
            Inner::Http(transport) => transport.cancel_call(now, call),
        }
    }

    /// Answers an elicitation question; see [`Session::answer_elicitation`].
    pub fn answer_elicitation(&mut self, now: Instant, question: QuestionId, answer: FormAnswer) {
        self.record(now, "answer_elicitation", || {
            [
                ("question", json!(question.0)),
                ("answer", transcript::form_answer_json(&answer)),
            ]
        });
        match &mut self.inner {
            Inner::Stdio(session) => session.answer_elicitation(now, question, answer),
            Inner::Http(transport) => transport.answer_elicitation(now, question, answer),
        }
    }

    /// Answers a URL question; see [`Session::answer_url`].
    pub fn answer_url(&mut self, now: Instant, question: QuestionId, answer: UrlAnswer) {
        self.record(now, "answer_url", || {
            [
                ("question", json!(question.0)),
                ("answer", transcript::url_answer_json(answer)),
            ]
        });
        match &mut self.inner {
            Inner::Stdio(session) => session.answer_url(now, question, answer),
            Inner::Http(transport) => transport.answer_url(now, question, answer),
        }
    }

    /// Answers a sampling question; see [`Session::answer_sampling`].
    pub fn answer_sampling(&mut self, now: Instant, question: QuestionId, answer: SamplingAnswer) {
        self.record(now, "answer_sampling", || {
            [
                ("question", json!(question.0)),
                ("answer", transcript::sampling_answer_json(&answer)),
            ]
        });
        match &mut self.inner {
            Inner::Stdio(session) => session.answer_sampling(now, question, answer),
            Inner::Http(transport) => transport.answer_sampling(now, question, answer),
        }
    }

    /// Answers an authorization question (HTTP only; see
    /// [`HttpTransport::answer_authorization`]). The transcript records
    /// whether a header came, never the header.
    pub fn answer_authorization(
        &mut self,
        now: Instant,
        question: QuestionId,
        answer: Result<String, AuthorizationError>,
    ) {
        // Recorded as the session takes it, so replay tells the same.
        let answer = match &self.inner {
            Inner::Http(transport) => answer.map_err(|e| e.for_grant(transport.oauth_grant())),
            Inner::Stdio(_) => answer,
        };
        self.record(now, "answer_authorization", || {
            [
                ("question", json!(question.0)),
                ("answer", transcript::authorization_answer_json(&answer)),
            ]
        });
        if let Inner::Http(transport) = &mut self.inner {
            transport.answer_authorization(now, question, answer);
        }
    }

    /// Ends the session; [`Event::Closed`] follows (for HTTP, after the
    /// DELETE).
    pub fn close(&mut self, now: Instant) {
        self.record(now, "close", || []);
        match &mut self.inner {
            Inner::Stdio(session) => session.close(now),
            Inner::Http(transport) => transport.close(now),
        }
    }

    // ----- outputs -----

    /// The next thing to do on the transport.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        let output = match &mut self.inner {
            Inner::Stdio(session) => session.poll_transmit().map(|t| Output::Write(t.bytes)),
            Inner::Http(transport) => transport.poll_output().map(Output::Http),
        };
        if let Some(r) = &mut self.recorder {
            let got = r.output_json(output.as_ref());
            r.poll("output", got);
        }
        output
    }

    /// The next thing the host must know.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        let event = match &mut self.inner {
            Inner::Stdio(session) => session.poll_event(),
            Inner::Http(transport) => transport.poll_event(),
        };
        if let Some(r) = &mut self.recorder {
            r.poll("event", transcript::event_json(event.as_ref()));
        }
        event
    }

    /// When [`Connection::handle_timeout`] is next due. Reading it changes
    /// nothing, not even the transcript: the deadline is recorded when it
    /// is acted on, by [`Connection::handle_timeout`].
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.inner {
            Inner::Stdio(session) => session.poll_timeout(),
            Inner::Http(transport) => transport.poll_timeout(),
        }
    }

    /// What the wakeup [`Connection::poll_timeout`] reports is for.
    pub fn timeout_reason(&self) -> Option<Timer> {
        match &self.inner {
            Inner::Stdio(session) => session.timeout_reason(),
            Inner::Http(transport) => transport.timeout_reason(),
        }
    }
}
