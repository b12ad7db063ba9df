//! The driver: one thread per server that owns its protocol state and does
//! exactly what the core's contract asks — feed transport input and host
//! commands in, write outputs out, sleep until `poll_timeout`, hand events
//! to the host. No protocol decision is made here.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::http::{ExchangeId, HttpOptions, HttpOutput, HttpTransport, resolve_headers};
use rho_proto_core::protocol::CallToolResult;
use rho_proto_core::session::{
    ApiMisuse, CallError, CallId, CloseReason, Event, Framing, Progress, ServerReady, Session,
    SessionOptions,
};
use serde_json::Value;

use crate::ToolCallError;
use crate::http_client::{HttpClient, HttpEvent};
use crate::stdio::{PipeEvent, StdioChild};

/// Everything that wakes a driver.
#[derive(Debug)]
pub(crate) enum Input {
    /// From a stdio child's pipes.
    Pipe(PipeEvent),
    /// From an HTTP exchange.
    Http(ExchangeId, HttpEvent),
    /// From the host.
    Command(Command),
}

/// What the host asks of a running server.
#[derive(Debug)]
pub(crate) enum Command {
    /// Call a tool by the server's own name.
    CallTool {
        tool: String,
        arguments: Value,
        reply: Sender<CallUpdate>,
    },
    /// End the session and the transport.
    Close,
}

/// What the host hears about one call: any progress, then its end.
#[derive(Debug)]
pub(crate) enum CallUpdate {
    /// A progress notification.
    Progress(Progress),
    /// The call ended; nothing follows.
    Done(Result<CallToolResult, ToolCallError>),
}

/// How startup ended.
pub(crate) type StartupOutcome = Result<Started, String>;

/// A server that finished its handshake and discovery.
#[derive(Debug)]
pub(crate) struct Started {
    pub(crate) ready: ServerReady,
    pub(crate) elapsed: Duration,
    pub(crate) pid: Option<u32>,
}

/// What the host's status report needs to hear after startup.
#[derive(Debug, Default)]
pub(crate) struct HealthState {
    /// Why a once-ready server is no longer usable.
    pub(crate) failure: Option<String>,
    /// The latest keep-alive ping failure, cleared by the next success.
    pub(crate) ping_failure: Option<String>,
}

/// Shared between a driver and the host's status reports.
pub(crate) type Health = Arc<Mutex<HealthState>>;

/// How long the driver waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// A session and the transport it drives.
enum Link {
    Stdio {
        session: Box<Session>,
        child: StdioChild,
    },
    Http {
        transport: Box<HttpTransport>,
        client: HttpClient<Input>,
    },
}

impl Link {
    /// Hands every pending output to the transport.
    fn flush(&mut self) {
        match self {
            Link::Stdio { session, child } => {
                while let Some(transmit) = session.poll_transmit() {
                    child.write(transmit.bytes);
                }
            }
            Link::Http { transport, client } => {
                while let Some(output) = transport.poll_output() {
                    match output {
                        HttpOutput::Send(request) => client.send(request),
                        HttpOutput::Abort(exchange) => client.abort(exchange),
                    }
                }
            }
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        match self {
            Link::Stdio { session, .. } => session.poll_event(),
            Link::Http { transport, .. } => transport.poll_event(),
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self {
            Link::Stdio { session, .. } => session.poll_timeout(),
            Link::Http { transport, .. } => transport.poll_timeout(),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self {
            Link::Stdio { session, .. } => session.handle_timeout(now),
            Link::Http { transport, .. } => transport.handle_timeout(now),
        }
    }

    fn call_tool(
        &mut self,
        now: Instant,
        tool: &str,
        arguments: Value,
    ) -> Result<CallId, ApiMisuse> {
        match self {
            Link::Stdio { session, .. } => session.call_tool(now, tool, arguments),
            Link::Http { transport, .. } => transport.call_tool(now, tool, arguments),
        }
    }

    fn close(&mut self, now: Instant) {
        match self {
            Link::Stdio { session, .. } => session.close(now),
            Link::Http { transport, .. } => transport.close(now),
        }
    }

    fn pid(&self) -> Option<u32> {
        match self {
            Link::Stdio { child, .. } => Some(child.pid()),
            Link::Http { .. } => None,
        }
    }

    fn handle_input(&mut self, now: Instant, input: Input) {
        match (self, input) {
            (Link::Stdio { session, .. }, Input::Pipe(PipeEvent::Stdout(bytes))) => {
                session.handle_stdio_bytes(now, &bytes)
            }
            (Link::Stdio { session, child }, Input::Pipe(PipeEvent::StdoutClosed)) => {
                let detail = child.exit_detail(EXIT_STATUS_WAIT);
                session.handle_transport_closed(now, detail);
            }
            (Link::Stdio { session, child }, Input::Pipe(PipeEvent::WriteFailed(error))) => {
                match child.exit_detail(EXIT_STATUS_WAIT) {
                    Some(detail) => session.handle_transport_closed(now, Some(detail)),
                    None => session.handle_transport_failed(
                        now,
                        format!("writing to the server failed: {error}"),
                    ),
                }
            }
            (Link::Http { transport, .. }, Input::Http(exchange, event)) => match event {
                HttpEvent::Head { status, headers } => {
                    transport.handle_response_head(now, exchange, status, &headers)
                }
                HttpEvent::Body(chunk) => transport.handle_response_body(now, exchange, &chunk),
                HttpEvent::End => transport.handle_response_end(now, exchange),
                HttpEvent::Failed(reason) => {
                    transport.handle_exchange_failed(now, exchange, reason)
                }
            },
            // Commands are handled by the loop; stray transport input of the
            // other kind cannot happen.
            _ => {}
        }
    }

    /// Ends the transport; returns a stdio child's last stderr lines.
    fn shutdown(self, grace: Duration) -> Option<String> {
        match self {
            Link::Stdio { child, .. } => child.shutdown(grace),
            Link::Http { mut client, .. } => {
                client.abort_all();
                None
            }
        }
    }
}

/// Builds the link for `config`, or says why it cannot start.
fn connect(
    config: &ServerConfig,
    ambient: &[(String, String)],
    tx: Sender<Input>,
    now: Instant,
) -> Result<Link, String> {
    let server = config.id.as_str();
    match &config.transport {
        Transport::Stdio(stdio) => {
            let session = Box::new(Session::new(
                SessionOptions::from_config(config, Framing::Lines),
                now,
            ));
            let child = StdioChild::spawn(server, stdio, ambient, tx, Input::Pipe)?;
            Ok(Link::Stdio { session, child })
        }
        Transport::StreamableHttp(http) => {
            let headers = resolve_headers(server, ambient, http)?;
            let transport = HttpTransport::new(
                SessionOptions::from_config(config, Framing::Messages),
                HttpOptions::new(http.url.clone(), headers),
                now,
            );
            Ok(Link::Http {
                transport: Box::new(transport),
                client: HttpClient::new(tx, Input::Http),
            })
        }
    }
}

/// Runs one server to completion. `startup` hears exactly once, `health`
/// hears of what happens after startup.
pub(crate) fn run(
    config: ServerConfig,
    ambient: Arc<Vec<(String, String)>>,
    grace: Duration,
    inputs: (Sender<Input>, Receiver<Input>),
    startup: Sender<StartupOutcome>,
    health: Health,
) {
    let started_at = Instant::now();
    let server = config.id.as_str().to_owned();
    let (tx, rx) = inputs;
    let mut link = match connect(&config, &ambient, tx, started_at) {
        Ok(link) => link,
        Err(reason) => {
            let _ = startup.send(Err(reason));
            return;
        }
    };
    let pid = link.pid();
    let mut startup = Some(startup);
    let mut calls: BTreeMap<CallId, Sender<CallUpdate>> = BTreeMap::new();
    let reason = loop {
        link.flush();
        let mut closed = None;
        while let Some(event) = link.poll_event() {
            match event {
                Event::Ready(ready) => {
                    if let Some(tx) = startup.take() {
                        let _ = tx.send(Ok(Started {
                            ready: *ready,
                            elapsed: started_at.elapsed(),
                            pid,
                        }));
                    }
                }
                Event::CallCompleted { call, result } => {
                    if let Some(reply) = calls.remove(&call) {
                        let _ = reply.send(CallUpdate::Done(result.map_err(ToolCallError::Call)));
                    }
                }
                Event::Progress { call, progress } => {
                    if let Some(reply) = calls.get(&call) {
                        let _ = reply.send(CallUpdate::Progress(progress));
                    }
                }
                Event::PingAnswered => update(&health, |h| h.ping_failure = None),
                Event::PingFailed(reason) => {
                    tracing::warn!(server = %server, "ping failed: {reason}");
                    update(&health, |h| h.ping_failure = Some(reason));
                }
                // Already logged by the core; nothing for the host to decide.
                Event::PeerMisbehaved(_) => {}
                Event::Closed(reason) => closed = Some(reason),
            }
        }
        if let Some(reason) = closed {
            break reason;
        }
        let input = match link.poll_timeout() {
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let now = Instant::now();
        match input {
            Ok(Input::Command(Command::CallTool {
                tool,
                arguments,
                reply,
            })) => match link.call_tool(now, &tool, arguments) {
                Ok(call) => {
                    calls.insert(call, reply);
                }
                Err(misuse) => {
                    let _ = reply.send(CallUpdate::Done(Err(ToolCallError::NotCallable(
                        misuse.to_string(),
                    ))));
                }
            },
            Ok(Input::Command(Command::Close)) => link.close(now),
            Ok(input) => link.handle_input(now, input),
            Err(RecvTimeoutError::Timeout) => link.handle_timeout(now),
            // The driver's transport holds senders, so this only happens if
            // every one of them ended and the host is gone.
            Err(RecvTimeoutError::Disconnected) => link.close(now),
        }
    };
    link.flush();
    let stderr = link.shutdown(grace);
    let mut text = reason.to_string();
    if !matches!(reason, CloseReason::Requested) {
        if let Some(stderr) = stderr {
            text.push('\n');
            text.push_str(&stderr);
        }
    }
    for (_, reply) in calls {
        let _ = reply.send(CallUpdate::Done(Err(ToolCallError::Call(
            CallError::SessionClosed {
                server: server.clone(),
                reason: text.clone(),
            },
        ))));
    }
    match startup.take() {
        Some(tx) => {
            let _ = tx.send(Err(format!("server `{server}`: {text}")));
        }
        None if !matches!(reason, CloseReason::Requested) => {
            tracing::warn!(server = %server, "session ended: {text}");
            update(&health, |h| h.failure = Some(text));
        }
        None => {}
    }
}

fn update(health: &Health, f: impl FnOnce(&mut HealthState)) {
    match health.lock() {
        Ok(mut state) => f(&mut state),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    }
}
