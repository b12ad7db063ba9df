//! The session task: one per server, owning its [`Connection`] (no lock
//! around the core). It races three things — transport input, host
//! commands (both on one channel) and a single timer set to
//! `poll_timeout()` — and after each input drains the core's outputs. The
//! timer is re-armed only when the deadline moves earlier, and the task yields
//! after a burst of inputs so one busy server cannot starve the others
//! sharing the executor thread.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::connection::{Connection, HostContext, Output};
use rho_proto_core::host::{HostServices, TranscriptSink};
use rho_proto_core::http::HttpOutput;
use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::driving::{
    Answer, CallTable, CallUpdate, PipeEvent, Started, StartupError, StartupOutcome,
};
use rho_proto_core::runtime::{Health, ToolCallError};
use rho_proto_core::session::{CallError, CloseReason, Event};
use smol::channel::{Receiver, Sender};
use smol::{Executor, Timer};

use crate::http::HttpIo;
use crate::stdio::StdioChild;

/// What wakes a session task on smol: replies go through smol channels.
pub(crate) type Input = rho_proto_core::runtime::driving::Input<Sender<CallUpdate>>;
/// What the host asks of a session task.
pub(crate) type Command = rho_proto_core::runtime::driving::Command<Sender<CallUpdate>>;

/// Shared between a session task and the host's status reports.
pub(crate) type SharedHealth = Arc<Mutex<Health>>;

/// How many inputs a session task handles before it yields.
const BURST: u32 = 64;
/// How long the task waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// The IO a connection runs over.
enum Io {
    Stdio(StdioChild),
    Http(HttpIo),
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
            (Io::Http(http), Output::Http(HttpOutput::Send(request))) => http.send(request),
            (Io::Http(http), Output::Http(HttpOutput::Abort(exchange))) => http.abort(exchange),
            _ => {}
        }
    }

    async fn exit_detail(&mut self) -> Option<String> {
        match self {
            Io::Stdio(child) => child.exit_detail(EXIT_STATUS_WAIT).await,
            Io::Http(_) => None,
        }
    }

    async fn shutdown(self, grace: Duration) -> Option<String> {
        match self {
            Io::Stdio(child) => child.shutdown(grace).await,
            Io::Http(mut http) => {
                http.shutdown();
                None
            }
        }
    }
}

/// Everything a session task is given.
pub(crate) struct TaskArgs {
    pub(crate) executor: Arc<Executor<'static>>,
    pub(crate) config: ServerConfig,
    pub(crate) ambient: Arc<Vec<(String, String)>>,
    pub(crate) root: Option<String>,
    pub(crate) host: HostServices,
    pub(crate) record: Option<Arc<dyn TranscriptSink>>,
    pub(crate) grace: Duration,
    pub(crate) inputs: (Sender<Input>, Receiver<Input>),
    pub(crate) startup: Sender<StartupOutcome>,
    pub(crate) health: SharedHealth,
    /// What waits for a stdio child's stdin.
    pub(crate) backlog: Arc<Backlog>,
}

/// Runs one server to completion.
pub(crate) async fn run(args: TaskArgs) {
    let TaskArgs {
        executor,
        config,
        ambient,
        root,
        host,
        record,
        grace,
        inputs: (tx, rx),
        startup,
        health,
        backlog,
    } = args;
    let started_at = Instant::now();
    let server = config.id.as_str().to_owned();
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
            can_reauthorize: host.can_reauthorize(),
            can_sample: host.can_sample(),
        },
        started_at,
    )
    .map_err(StartupError::from)
    .and_then(|conn| {
        let io = match &config.transport {
            Transport::Stdio(stdio) => Io::Stdio(
                StdioChild::spawn(&executor, &server, stdio, &ambient, (tx.clone(), backlog))
                    .map_err(StartupError::Transport)?,
            ),
            Transport::StreamableHttp(_) => Io::Http(HttpIo::new(&executor, tx.clone())),
        };
        Ok((conn, io))
    });
    let answers = tx.clone();
    drop(tx);
    let (mut conn, mut io) = match connected {
        Ok(pair) => pair,
        Err(reason) => {
            let _ = startup.try_send(Err(reason));
            return;
        }
    };
    let pid = match &io {
        Io::Stdio(child) => Some(child.pid()),
        Io::Http(_) => None,
    };
    let mut startup = Some(startup);
    let mut calls: CallTable<Sender<CallUpdate>> = CallTable::default();
    let mut timer = Timer::never();
    let mut armed: Option<Instant> = None;
    let mut burst = 0u32;
    let reason = loop {
        while let Some(output) = conn.poll_output() {
            io.carry(output);
        }
        let mut closed = None;
        while let Some(event) = conn.poll_event() {
            match event {
                Event::Ready(ready) => {
                    if let Some(tx) = startup.take() {
                        let _ = tx.try_send(Ok(Started {
                            ready: *ready,
                            elapsed: started_at.elapsed(),
                            pid,
                        }));
                    }
                }
                Event::CallCompleted { call, result } => {
                    if let Some(reply) = calls.complete(call) {
                        let _ =
                            reply.try_send(CallUpdate::Done(result.map_err(ToolCallError::Call)));
                    }
                }
                Event::Progress { call, progress } => {
                    if let Some(reply) = calls.get(call) {
                        let _ = reply.try_send(CallUpdate::Progress(progress));
                    }
                }
                Event::Question { question, kind, .. } => {
                    // A person may take minutes: answer on the blocking pool.
                    let (host, server, answers) = (host.clone(), server.clone(), answers.clone());
                    executor
                        .spawn(async move {
                            let answer = smol::unblock(move || {
                                rho_proto_core::host::answer(&host, &server, &kind)
                            })
                            .await;
                            let _ = answers
                                .send(Input::Command(Command::Answer { question, answer }))
                                .await;
                        })
                        .detach();
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
                Event::PeerMisbehaved(_) => {}
                Event::Closed(reason) => closed = Some(reason),
                // An event added to the core later asks nothing of the
                // executor until it is handled here.
                _ => {}
            }
        }
        if let Some(reason) = closed {
            break reason;
        }
        if let Some(sink) = &record {
            sink.write(conn.take_transcript());
        }
        let deadline = conn.poll_timeout();
        // Re-arm only when the deadline moves earlier: every `set_at`
        // wakes the reactor, and a timer armed for an earlier instant than
        // needed merely fires early, which `handle_timeout` shrugs off.
        if let Some(at) = deadline {
            if armed.is_none_or(|current| at < current) {
                timer.set_at(at);
                armed = Some(at);
            }
        }
        burst += 1;
        if burst >= BURST {
            burst = 0;
            smol::future::yield_now().await;
        }
        // Input that is always ready (a flooding server) must not keep a
        // deadline from firing: `or` polls the channel first, so a due
        // timer is handled here.
        if deadline.is_some_and(|at| at <= Instant::now()) {
            armed = None;
            conn.handle_timeout(Instant::now());
            continue;
        }
        let woke = smol::future::or(async { rx.recv().await.ok() }, async {
            (&mut timer).await;
            None
        })
        .await;
        let now = Instant::now();
        let Some(input) = woke else {
            if rx.is_closed() && rx.is_empty() && conn.poll_timeout().is_none_or(|d| d > now) {
                // Every sender is gone: the host dropped the runtime.
                conn.close(now);
            } else {
                armed = None;
                conn.handle_timeout(now);
            }
            continue;
        };
        match input {
            Input::Command(Command::CallTool {
                ticket,
                tool,
                arguments,
                reply,
            }) => match conn.call_tool(now, &tool, arguments) {
                Ok(call) => {
                    calls.insert(ticket, call, reply);
                }
                Err(misuse) => {
                    let _ = reply.try_send(CallUpdate::Done(Err(ToolCallError::NotCallable(
                        misuse.to_string(),
                    ))));
                }
            },
            Input::Command(Command::Cancel { ticket }) => {
                if let Some(call) = calls.cancel(ticket) {
                    conn.cancel_call(now, call);
                }
            }
            Input::Command(Command::Answer { question, answer }) => match answer {
                Answer::Form(answer) => conn.answer_elicitation(now, question, answer),
                Answer::Sampling(answer) => conn.answer_sampling(now, question, answer),
                Answer::Authorization(answer) => conn.answer_authorization(now, question, answer),
            },
            Input::Command(Command::Close) => conn.close(now),
            Input::Pipe(PipeEvent::Stdout(bytes)) => {
                conn.handle_stdio_bytes(now, &bytes);
                io.chunk_handled();
            }
            Input::Pipe(PipeEvent::StdoutClosed) => {
                let detail = io.exit_detail().await;
                conn.handle_stdio_closed(Instant::now(), detail);
            }
            Input::Pipe(PipeEvent::WriteFailed(error)) => match io.exit_detail().await {
                Some(detail) => conn.handle_stdio_closed(Instant::now(), Some(detail)),
                None => conn.handle_transport_failed(
                    Instant::now(),
                    format!("writing to the server failed: {error}"),
                ),
            },
            Input::Http(exchange, input) => {
                if let Io::Http(http) = &mut io {
                    http.handled(exchange, &input);
                }
                conn.handle_http(now, exchange, input);
            }
        }
    };
    while let Some(output) = conn.poll_output() {
        io.carry(output);
    }
    if let Some(sink) = &record {
        sink.write(conn.take_transcript());
    }
    let stderr = io.shutdown(grace).await;
    // What the server wrote to stderr explains a failure, not a close rho
    // asked for.
    let stderr = stderr.filter(|_| !matches!(reason, CloseReason::Requested));
    let mut text = reason.to_string();
    if let Some(stderr) = &stderr {
        text.push('\n');
        text.push_str(stderr);
    }
    for reply in calls.drain() {
        let _ = reply.try_send(CallUpdate::Done(Err(ToolCallError::Call(
            CallError::SessionClosed {
                server: server.clone(),
                reason: text.clone(),
            },
        ))));
    }
    match startup.take() {
        Some(tx) => {
            let _ = tx.try_send(Err(StartupError::Closed {
                server,
                reason,
                stderr,
            }));
        }
        None if !matches!(reason, CloseReason::Requested) => {
            tracing::warn!(server = %server, "session ended: {text}");
            update(&health, |h| h.failure = Some(text));
        }
        None => {}
    }
}

fn update(health: &SharedHealth, f: impl FnOnce(&mut Health)) {
    match health.lock() {
        Ok(mut state) => f(&mut state),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    }
}
