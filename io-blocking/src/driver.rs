//! The driver: one thread per server that owns its [`Session`] and does
//! exactly what the core's contract asks — feed transport input and host
//! commands in, write transmits out, sleep until `poll_timeout`, hand events
//! to the host. No protocol decision is made here.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::protocol::CallToolResult;
use rho_proto_core::session::{
    CallError, CallId, CloseReason, Event, Framing, ServerReady, Session, SessionOptions,
};
use serde_json::Value;

use crate::ToolCallError;
use crate::stdio::{PipeEvent, StdioChild};

/// Everything that wakes a driver.
#[derive(Debug)]
pub(crate) enum Input {
    /// From the child's pipes.
    Pipe(PipeEvent),
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
        reply: Sender<Result<CallToolResult, ToolCallError>>,
    },
    /// End the session and the transport.
    Close,
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

/// Why a once-ready server is no longer usable, for status reports.
pub(crate) type Health = Arc<Mutex<Option<String>>>;

/// How long the driver waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// Runs one server to completion. `startup` hears exactly once, `health`
/// hears of a failure after startup.
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
    let stdio = match &config.transport {
        Transport::Stdio(stdio) => stdio,
        Transport::StreamableHttp(_) => {
            let _ = startup.send(Err(format!(
                "server `{server}`: transport streamable_http is not available in this build yet; use a stdio server"
            )));
            return;
        }
    };
    let mut session = Session::new(
        SessionOptions::from_config(&config, Framing::Lines),
        started_at,
    );
    let mut child = match StdioChild::spawn(&server, stdio, &ambient, tx, Input::Pipe) {
        Ok(child) => child,
        Err(reason) => {
            let _ = startup.send(Err(reason));
            return;
        }
    };
    let pid = Some(child.pid());
    let mut startup = Some(startup);
    let mut calls: BTreeMap<CallId, Sender<Result<CallToolResult, ToolCallError>>> =
        BTreeMap::new();
    let reason = loop {
        while let Some(bytes) = session.poll_transmit() {
            child.write(bytes);
        }
        let mut closed = None;
        while let Some(event) = session.poll_event() {
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
                        let _ = reply.send(result.map_err(ToolCallError::Call));
                    }
                }
                // Already logged by the core; nothing for the host to decide.
                Event::PeerMisbehaved(_) => {}
                Event::Closed(reason) => closed = Some(reason),
            }
        }
        if let Some(reason) = closed {
            break reason;
        }
        let input = match session.poll_timeout() {
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let now = Instant::now();
        match input {
            Ok(Input::Pipe(PipeEvent::Stdout(bytes))) => session.handle_stdio_bytes(now, &bytes),
            Ok(Input::Pipe(PipeEvent::StdoutClosed)) => {
                let detail = child.exit_detail(EXIT_STATUS_WAIT);
                session.handle_transport_closed(now, detail);
            }
            Ok(Input::Pipe(PipeEvent::WriteFailed(error))) => {
                match child.exit_detail(EXIT_STATUS_WAIT) {
                    Some(detail) => session.handle_transport_closed(now, Some(detail)),
                    None => session.handle_transport_failed(
                        now,
                        format!("writing to the server failed: {error}"),
                    ),
                }
            }
            Ok(Input::Command(Command::CallTool {
                tool,
                arguments,
                reply,
            })) => match session.call_tool(now, &tool, arguments) {
                Ok(call) => {
                    calls.insert(call, reply);
                }
                Err(misuse) => {
                    let _ = reply.send(Err(ToolCallError::NotCallable(misuse.to_string())));
                }
            },
            Ok(Input::Command(Command::Close)) => session.close(now),
            Err(RecvTimeoutError::Timeout) => session.handle_timeout(now),
            // The driver holds a sender for the pipes, so this only happens
            // if every pump thread ended and the host is gone.
            Err(RecvTimeoutError::Disconnected) => session.close(now),
        }
    };
    let stderr = child.shutdown(grace);
    let mut text = reason.to_string();
    if !matches!(reason, CloseReason::Requested) {
        if let Some(stderr) = stderr {
            text.push('\n');
            text.push_str(&stderr);
        }
    }
    for (_, reply) in calls {
        let _ = reply.send(Err(ToolCallError::Call(CallError::SessionClosed {
            server: server.clone(),
            reason: text.clone(),
        })));
    }
    match startup.take() {
        Some(tx) => {
            let _ = tx.send(Err(format!("server `{server}`: {text}")));
        }
        None if !matches!(reason, CloseReason::Requested) => {
            tracing::warn!(server = %server, "session ended: {text}");
            if let Ok(mut health) = health.lock() {
                *health = Some(text);
            }
        }
        None => {}
    }
}
