//! One server's protocol state, whatever its transport: a line-framed
//! [`Session`] for stdio or an [`HttpTransport`] for Streamable HTTP,
//! behind one set of `handle_*`/`poll_*` methods.
//!
//! Executors hold a [`Connection`] and pair it with their own IO (a child
//! process, an HTTP client); everything transport-specific that is not IO —
//! framing, headers, which session options a config means — is decided
//! here, once for every executor.

use std::time::Instant;

use serde_json::Value;

use crate::config::{ServerConfig, Transport};
use crate::elicitation::FormAnswer;
use crate::http::{ExchangeId, HttpOptions, HttpOutput, HttpTransport, resolve_headers};
use crate::session::{
    ApiMisuse, CallId, Event, Framing, QuestionId, SamplingAnswer, Session, SessionOptions,
};

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
    Failed(String),
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
    /// The host has a model and a person to confirm: declare sampling to
    /// servers whose config opted in.
    pub can_sample: bool,
}

/// One server's session over its transport.
#[derive(Debug)]
pub enum Connection {
    /// A stdio child: newline-delimited JSON-RPC.
    Stdio(Box<Session>),
    /// A Streamable HTTP endpoint.
    Http(Box<HttpTransport>),
}

impl Connection {
    /// The connection a configured server needs, started at `now` (its
    /// startup budget runs from here), in the surroundings the host gives.
    pub fn new(
        config: &ServerConfig,
        host: &HostContext<'_>,
        now: Instant,
    ) -> Result<Self, String> {
        let ambient = host.ambient;
        let options = |framing| SessionOptions {
            workspace_root: host.workspace_root.map(str::to_owned),
            elicitation: host.can_elicit,
            sampling: host.can_sample && config.sampling_allowed(),
            ..SessionOptions::from_config(config, framing)
        };
        match &config.transport {
            Transport::Stdio(_) => Ok(Connection::Stdio(Box::new(Session::new(
                options(Framing::Lines),
                now,
            )))),
            Transport::StreamableHttp(http) => {
                let headers = resolve_headers(config.id.as_str(), ambient, http)?;
                Ok(Connection::Http(Box::new(HttpTransport::new(
                    options(Framing::Messages),
                    HttpOptions::new(http.url.clone(), headers),
                    now,
                ))))
            }
        }
    }

    // ----- inputs -----

    /// Bytes from a stdio child's stdout.
    pub fn handle_stdio_bytes(&mut self, now: Instant, bytes: &[u8]) {
        if let Connection::Stdio(session) = self {
            session.handle_stdio_bytes(now, bytes);
        }
    }

    /// The child's stdout ended; `detail` describes its exit when known.
    pub fn handle_stdio_closed(&mut self, now: Instant, detail: Option<String>) {
        if let Connection::Stdio(session) = self {
            session.handle_transport_closed(now, detail);
        }
    }

    /// The transport failed in a way the executor saw (a write failed).
    pub fn handle_transport_failed(&mut self, now: Instant, reason: String) {
        match self {
            Connection::Stdio(session) => session.handle_transport_failed(now, reason),
            Connection::Http(_) => {}
        }
    }

    /// Something happened to an HTTP exchange.
    pub fn handle_http(&mut self, now: Instant, exchange: ExchangeId, input: HttpInput) {
        let Connection::Http(transport) = self else {
            return;
        };
        match input {
            HttpInput::Head { status, headers } => {
                transport.handle_response_head(now, exchange, status, &headers)
            }
            HttpInput::Body(chunk) => transport.handle_response_body(now, exchange, &chunk),
            HttpInput::End => transport.handle_response_end(now, exchange),
            HttpInput::Failed(reason) => transport.handle_exchange_failed(now, exchange, reason),
        }
    }

    /// Time passed; see [`Connection::poll_timeout`].
    pub fn handle_timeout(&mut self, now: Instant) {
        match self {
            Connection::Stdio(session) => session.handle_timeout(now),
            Connection::Http(transport) => transport.handle_timeout(now),
        }
    }

    // ----- commands -----

    /// Calls a tool by the server's own name.
    pub fn call_tool(
        &mut self,
        now: Instant,
        tool: &str,
        arguments: Value,
    ) -> Result<CallId, ApiMisuse> {
        match self {
            Connection::Stdio(session) => session.call_tool(now, tool, arguments),
            Connection::Http(transport) => transport.call_tool(now, tool, arguments),
        }
    }

    /// Abandons a call: the server is told, and the call completes as
    /// cancelled.
    pub fn cancel_call(&mut self, now: Instant, call: CallId) {
        match self {
            Connection::Stdio(session) => session.cancel_call(now, call),
            Connection::Http(transport) => transport.cancel_call(now, call),
        }
    }

    /// Answers an elicitation question; see [`Session::answer_elicitation`].
    pub fn answer_elicitation(&mut self, now: Instant, question: QuestionId, answer: FormAnswer) {
        match self {
            Connection::Stdio(session) => session.answer_elicitation(now, question, answer),
            Connection::Http(transport) => transport.answer_elicitation(now, question, answer),
        }
    }

    /// Answers a sampling question; see [`Session::answer_sampling`].
    pub fn answer_sampling(&mut self, now: Instant, question: QuestionId, answer: SamplingAnswer) {
        match self {
            Connection::Stdio(session) => session.answer_sampling(now, question, answer),
            Connection::Http(transport) => transport.answer_sampling(now, question, answer),
        }
    }

    /// Ends the session; [`Event::Closed`] follows (for HTTP, after the
    /// DELETE).
    pub fn close(&mut self, now: Instant) {
        match self {
            Connection::Stdio(session) => session.close(now),
            Connection::Http(transport) => transport.close(now),
        }
    }

    // ----- outputs -----

    /// The next thing to do on the transport.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        match self {
            Connection::Stdio(session) => session.poll_transmit().map(|t| Output::Write(t.bytes)),
            Connection::Http(transport) => transport.poll_output().map(Output::Http),
        }
    }

    /// The next thing the host must know.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        match self {
            Connection::Stdio(session) => session.poll_event(),
            Connection::Http(transport) => transport.poll_event(),
        }
    }

    /// When [`Connection::handle_timeout`] is next due.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Connection::Stdio(session) => session.poll_timeout(),
            Connection::Http(transport) => transport.poll_timeout(),
        }
    }
}
