//! The driver: one thread per server that owns its [`Connection`] and does
//! exactly what the core's contract asks — feed transport input and host
//! commands in, carry outputs out, sleep until `poll_timeout`, hand events
//! to the host. No protocol decision is made here.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::connection::{Connection, HostContext, Output};
use rho_proto_core::driving::{Answer, CallTable, CallUpdate, PipeEvent, Started, StartupOutcome};
use rho_proto_core::http::HttpOutput;
use rho_proto_core::runtime::{Health, ToolCallError};
use rho_proto_core::session::{CallError, CloseReason, Event};

use crate::http_client::HttpClient;
use crate::stdio::StdioChild;
use rho_proto_core::backlog::Backlog;
use rho_proto_core::host::{HostServices, TranscriptSink};

/// What wakes a driver on threads: replies go through std channels.
pub(crate) type Input = rho_proto_core::driving::Input<Sender<CallUpdate>>;
/// What the host asks of a driver on threads.
pub(crate) type Command = rho_proto_core::driving::Command<Sender<CallUpdate>>;

/// Shared between a driver and the host's status reports.
pub(crate) type SharedHealth = Arc<Mutex<Health>>;

/// How long the driver waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// The IO a connection runs over.
enum Io {
    Stdio(StdioChild),
    Http(HttpClient<Input>),
}

impl Io {
    /// A chunk of stdout was handled: let the reader read the next.
    fn chunk_handled(&self) {
        if let Io::Stdio(child) = self {
            child.chunk_handled();
        }
    }

    fn carry(&mut self, output: Output) {
        match (self, output) {
            (Io::Stdio(child), Output::Write(bytes)) => child.write(bytes),
            (Io::Http(client), Output::Http(HttpOutput::Send(request))) => client.send(request),
            (Io::Http(client), Output::Http(HttpOutput::Abort(exchange))) => client.abort(exchange),
            // A connection only asks for its own transport's outputs.
            _ => {}
        }
    }

    /// Ends the transport; returns a stdio child's last stderr lines.
    fn shutdown(self, grace: Duration) -> Option<String> {
        match self {
            Io::Stdio(child) => child.shutdown(grace),
            Io::Http(mut client) => {
                client.abort_all();
                None
            }
        }
    }
}

/// Runs one server to completion. `startup` hears exactly once, `health`
/// hears of what happens after startup; `backlog` counts what waits for a
/// stdio child's stdin.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    config: ServerConfig,
    ambient: Arc<Vec<(String, String)>>,
    (root, host, record): (
        Option<String>,
        HostServices,
        Option<Arc<dyn TranscriptSink>>,
    ),
    grace: Duration,
    inputs: (Sender<Input>, Receiver<Input>),
    startup: Sender<StartupOutcome>,
    health: SharedHealth,
    backlog: Arc<Backlog>,
) {
    let started_at = Instant::now();
    let server = config.id.as_str().to_owned();
    let (tx, rx) = inputs;
    let answers = tx.clone();
    let connect = if record.is_some() {
        Connection::new_recorded
    } else {
        Connection::new
    };
    let connected = connect(
        &config,
        &HostContext {
            ambient: &ambient,
            workspace_root: root.as_deref(),
            can_elicit: host.can_elicit(),
            can_sample: host.can_sample(),
        },
        started_at,
    )
    .and_then(|conn| {
        let io = match &config.transport {
            Transport::Stdio(stdio) => Io::Stdio(StdioChild::spawn(
                &server,
                stdio,
                &ambient,
                (tx, Input::Pipe),
                backlog,
            )?),
            Transport::StreamableHttp(_) => Io::Http(HttpClient::new(tx, Input::Http)),
        };
        Ok((conn, io))
    });
    let (mut conn, mut io) = match connected {
        Ok(pair) => pair,
        Err(reason) => {
            let _ = startup.send(Err(reason));
            return;
        }
    };
    let pid = match &io {
        Io::Stdio(child) => Some(child.pid()),
        Io::Http(_) => None,
    };
    let mut startup = Some(startup);
    let mut calls: CallTable<Sender<CallUpdate>> = CallTable::default();
    let reason = loop {
        while let Some(output) = conn.poll_output() {
            io.carry(output);
        }
        let mut closed = None;
        while let Some(event) = conn.poll_event() {
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
                    if let Some(reply) = calls.complete(call) {
                        let _ = reply.send(CallUpdate::Done(result.map_err(ToolCallError::Call)));
                    }
                }
                Event::Progress { call, progress } => {
                    if let Some(reply) = calls.get(call) {
                        let _ = reply.send(CallUpdate::Progress(progress));
                    }
                }
                Event::Question { question, kind, .. } => {
                    // A person may take minutes: answer off the driver thread.
                    let (host, asker, answers) = (host.clone(), server.clone(), answers.clone());
                    let spawned = std::thread::Builder::new()
                        .name(format!("rho-mcp-{server}-ask"))
                        .spawn(move || {
                            let answer = rho_proto_core::host::answer(&host, &asker, &kind);
                            let _ =
                                answers.send(Input::Command(Command::Answer { question, answer }));
                        });
                    if let Err(e) = spawned {
                        tracing::warn!(server = %server, "could not ask: {e}");
                    }
                }
                Event::QuestionWithdrawn(_) => {}
                Event::ToolsChanged(_) | Event::PingAnswered | Event::PingFailed(_) => {
                    if let Event::PingFailed(reason) = &event {
                        tracing::warn!(server = %server, "ping failed: {reason}");
                    }
                    update(&health, |h| {
                        h.observe(&event);
                    });
                }
                // Already logged by the core; nothing for the host to decide.
                Event::PeerMisbehaved(_) => {}
                Event::Closed(reason) => closed = Some(reason),
            }
        }
        if let Some(reason) = closed {
            break reason;
        }
        if let Some(sink) = &record {
            sink.write(conn.take_transcript());
        }
        let input = match conn.poll_timeout() {
            // Input that is always ready (a flooding server) must not keep
            // a deadline from firing: a due timer goes first.
            Some(deadline) if deadline <= Instant::now() => Err(RecvTimeoutError::Timeout),
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        let now = Instant::now();
        match input {
            Ok(Input::Command(Command::CallTool {
                ticket,
                tool,
                arguments,
                reply,
            })) => match conn.call_tool(now, &tool, arguments) {
                Ok(call) => {
                    calls.insert(ticket, call, reply);
                }
                Err(misuse) => {
                    let _ = reply.send(CallUpdate::Done(Err(ToolCallError::NotCallable(
                        misuse.to_string(),
                    ))));
                }
            },
            Ok(Input::Command(Command::Cancel { ticket })) => {
                if let Some(call) = calls.cancel(ticket) {
                    conn.cancel_call(now, call);
                }
            }
            Ok(Input::Command(Command::Answer { question, answer })) => match answer {
                Answer::Form(answer) => conn.answer_elicitation(now, question, answer),
                Answer::Sampling(answer) => conn.answer_sampling(now, question, answer),
            },
            Ok(Input::Command(Command::Close)) => conn.close(now),
            Ok(Input::Pipe(PipeEvent::Stdout(bytes))) => {
                conn.handle_stdio_bytes(now, &bytes);
                io.chunk_handled();
            }
            Ok(Input::Pipe(PipeEvent::StdoutClosed)) => {
                let detail = exit_detail(&mut io);
                conn.handle_stdio_closed(now, detail);
            }
            Ok(Input::Pipe(PipeEvent::WriteFailed(error))) => match exit_detail(&mut io) {
                Some(detail) => conn.handle_stdio_closed(now, Some(detail)),
                None => conn
                    .handle_transport_failed(now, format!("writing to the server failed: {error}")),
            },
            Ok(Input::Http(exchange, input)) => {
                if let Io::Http(client) = &io {
                    client.handled(&input);
                }
                conn.handle_http(now, exchange, input);
            }
            Err(RecvTimeoutError::Timeout) => conn.handle_timeout(now),
            // The transport holds senders, so this only happens if every one
            // of them ended and the host is gone.
            Err(RecvTimeoutError::Disconnected) => conn.close(now),
        }
    };
    while let Some(output) = conn.poll_output() {
        io.carry(output);
    }
    if let Some(sink) = &record {
        sink.write(conn.take_transcript());
    }
    let stderr = io.shutdown(grace);
    let mut text = reason.to_string();
    if !matches!(reason, CloseReason::Requested) {
        if let Some(stderr) = stderr {
            text.push('\n');
            text.push_str(&stderr);
        }
    }
    for reply in calls.drain() {
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

fn exit_detail(io: &mut Io) -> Option<String> {
    match io {
        Io::Stdio(child) => child.exit_detail(EXIT_STATUS_WAIT),
        Io::Http(_) => None,
    }
}

fn update(health: &SharedHealth, f: impl FnOnce(&mut Health)) {
    match health.lock() {
        Ok(mut state) => f(&mut state),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    }
}
