//! The driver of one server on threads: its [`Connection`] behind a lock,
//! driven by whichever thread has something for it. It does exactly what
//! the core's contract asks — feed transport input and host commands in,
//! carry outputs out, wake for `poll_timeout`, hand events to the host —
//! and makes no protocol decision.
//!
//! Nothing is relayed through a thread of its own: a caller's thread turns
//! its call into bytes and writes them to the child (or hands the request
//! to an HTTP worker); the stdout reader (or the HTTP worker) feeds what
//! arrives into the session and replies to the waiting caller itself. So a
//! stdio call costs two thread hops: the child's answer wakes the reader,
//! the reader wakes the caller (once it released the session's lock, so
//! the caller's next call does not wait for it). The driver thread only starts the session,
//! sleeps until the next deadline (re-armed only when a deadline moves
//! earlier) and tears the session down once it closes.
//!
//! Locks are taken in one order: the session, then the transport's own
//! (stdin queue, HTTP pool). No transport thread holds its own lock while
//! it waits for the session's, and nobody holds the session's while it
//! waits on IO: stdin writes never block, and HTTP runs on its workers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::connection::{Connection, HostContext, HttpInput, Output};
use rho_proto_core::http::{ExchangeId, HttpOutput};
use rho_proto_core::runtime::driving::{
    Answer, CallTable, CallUpdate, Started, StartupError, StartupOutcome,
};
use rho_proto_core::runtime::{Health, ToolCallError};
use rho_proto_core::session::{CallError, CloseReason, Event};

use rho_proto_core::host::{HostServices, TranscriptSink};
use rho_proto_core::runtime::backlog::Backlog;

use crate::http_client::{HttpClient, NotStarted};
use crate::reply::{ProgressTx, ReplyTx};
use crate::stdio::{Pipe, StdioChild};

/// What the host asks of a driver on threads.
pub(crate) type Command = rho_proto_core::runtime::driving::Command<ReplyTx>;

/// Shared between a driver and the host's status reports.
pub(crate) type SharedHealth = Arc<Mutex<Health>>;

/// How long the driver waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// One server's session, shared by every thread that drives it.
pub(crate) struct Driver {
    server: String,
    host: HostServices,
    record: Option<Arc<dyn TranscriptSink>>,
    health: SharedHealth,
    state: Mutex<State>,
    /// Wakes the driver thread: a deadline moved earlier, or the session
    /// closed.
    wake: Condvar,
}

#[derive(Default)]
struct State {
    /// The session, once its transport started.
    live: Option<Live>,
    /// The host closed the session before it was set up.
    close_early: bool,
    /// The session closed (or never started): nothing more goes in.
    ended: bool,
}

struct Live {
    conn: Connection,
    /// Taken at teardown.
    io: Option<Io>,
    calls: CallTable<ReplyTx>,
    startup: Option<Sender<StartupOutcome>>,
    started_at: Instant,
    pid: Option<u32>,
    /// Set by the `Closed` event; the driver thread tears down.
    closed: Option<CloseReason>,
    /// The next deadline, as `poll_timeout` last said.
    next: Option<Instant>,
    /// The deadline the driver thread sleeps towards (`None`: none).
    armed: Option<Instant>,
    /// What callers are to hear, sent once the session's lock is released
    /// so that a woken caller does not wait for it.
    outbox: Vec<Outgoing>,
}

/// An update for a caller, waiting for the session's lock to be released.
enum Outgoing {
    Update(ReplyTx, CallUpdate),
    Progress(ProgressTx, rho_proto_core::session::Progress),
}

impl Outgoing {
    fn send(self) {
        match self {
            Outgoing::Update(reply, update) => reply.send(update),
            Outgoing::Progress(reply, progress) => reply.send(progress),
        }
    }
}

/// The IO a connection runs over.
enum Io {
    Stdio(StdioChild),
    Http(HttpClient),
}

/// An input a transport produced while outputs were being carried, fed in
/// once they are.
enum Deferred {
    WriteFailed(String),
    NotStarted(NotStarted),
}

impl Io {
    fn carry(&mut self, output: Output) -> Option<Deferred> {
        match (self, output) {
            (Io::Stdio(child), Output::Write(bytes)) => {
                child.write(bytes).err().map(Deferred::WriteFailed)
            }
            (Io::Http(client), Output::Http(HttpOutput::Send(request))) => {
                client.send(request).err().map(Deferred::NotStarted)
            }
            (Io::Http(client), Output::Http(HttpOutput::Abort(exchange))) => {
                client.abort(exchange);
                None
            }
            // A connection only asks for its own transport's outputs.
            _ => None,
        }
    }

    /// Ends the transport; returns a stdio child's last stderr lines.
    fn shutdown(self, grace: Duration) -> Option<String> {
        match self {
            Io::Stdio(child) => child.shutdown(grace),
            Io::Http(client) => {
                client.shutdown();
                None
            }
        }
    }
}

impl Live {
    fn exit_detail(&mut self) -> Option<String> {
        match &mut self.io {
            Some(Io::Stdio(child)) => child.exit_detail(EXIT_STATUS_WAIT),
            _ => None,
        }
    }

    fn write_failed(&mut self, now: Instant, error: &str) {
        match self.exit_detail() {
            Some(detail) => self.conn.handle_stdio_closed(now, Some(detail)),
            None => self
                .conn
                .handle_transport_failed(now, format!("writing to the server failed: {error}")),
        }
    }

    /// Tells callers what waits for them (where the lock is held anyway).
    fn send_outbox(&mut self) {
        for outgoing in self.outbox.drain(..) {
            outgoing.send();
        }
    }

    /// Input that is always ready (a flooding server) must not keep a
    /// deadline from firing: a due timer goes first.
    fn due_first(&mut self, now: Instant) -> bool {
        if self.next.is_some_and(|d| d <= now) {
            self.conn.handle_timeout(now);
            return true;
        }
        false
    }
}

impl Driver {
    /// A driver for `server`, not started yet (see [`Driver::run`]).
    pub(crate) fn new(
        server: &str,
        host: HostServices,
        record: Option<Arc<dyn TranscriptSink>>,
        health: SharedHealth,
    ) -> Arc<Self> {
        Arc::new(Self {
            server: server.to_owned(),
            host,
            record,
            health,
            state: Mutex::default(),
            wake: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The driver thread: connects, starts the transport, then wakes for
    /// deadlines until the session closes, and tears it down. `startup`
    /// hears exactly once; `backlog` counts what waits for a stdio child's
    /// stdin.
    pub(crate) fn run(
        self: &Arc<Self>,
        config: &ServerConfig,
        (ambient, root): (&[(String, String)], Option<&str>),
        grace: Duration,
        startup: Sender<StartupOutcome>,
        backlog: Arc<Backlog>,
    ) {
        let started_at = Instant::now();
        let connect = if self.record.is_some() {
            Connection::new_recorded
        } else {
            Connection::new
        };
        // Held while the transport starts, so that whatever it delivers
        // finds the session in place.
        let mut state = self.lock();
        let connected = connect(
            config,
            &HostContext {
                ambient,
                workspace_root: root,
                can_elicit: self.host.can_elicit(),
                can_reauthorize: self.host.can_reauthorize(),
                can_sample: self.host.can_sample(),
            },
            started_at,
        )
        .map_err(StartupError::from)
        .and_then(|conn| {
            let io = match &config.transport {
                Transport::Stdio(stdio) => {
                    let driver = Arc::clone(self);
                    Io::Stdio(
                        StdioChild::spawn(
                            &self.server,
                            stdio,
                            ambient,
                            Arc::new(move |pipe| driver.pipe(pipe)),
                            backlog,
                        )
                        .map_err(StartupError::Transport)?,
                    )
                }
                Transport::StreamableHttp(_) => {
                    let driver = Arc::clone(self);
                    Io::Http(HttpClient::new(
                        &self.server,
                        Arc::new(move |exchange, aborted, input| {
                            driver.http(exchange, aborted, input)
                        }),
                    ))
                }
            };
            Ok((conn, io))
        });
        let (conn, io) = match connected {
            Ok(pair) => pair,
            Err(reason) => {
                state.ended = true;
                drop(state);
                let _ = startup.send(Err(reason));
                return;
            }
        };
        let pid = match &io {
            Io::Stdio(child) => Some(child.pid()),
            Io::Http(_) => None,
        };
        let close_early = state.close_early;
        let live = state.live.insert(Live {
            conn,
            io: Some(io),
            calls: CallTable::default(),
            startup: Some(startup),
            started_at,
            pid,
            closed: None,
            next: None,
            armed: None,
            outbox: Vec::new(),
        });
        if close_early {
            live.conn.close(Instant::now());
        }
        self.settle(live);
        live.send_outbox();
        let state = self.sleep_until_closed(state);
        self.teardown(state, grace);
    }

    /// Sleeps until the next deadline, handles it, and again, until the
    /// session closes. Woken early only when a deadline moves earlier.
    fn sleep_until_closed<'a>(
        self: &'a Arc<Self>,
        mut state: MutexGuard<'a, State>,
    ) -> MutexGuard<'a, State> {
        loop {
            let Some(live) = state.live.as_mut() else {
                return state;
            };
            if live.closed.is_some() {
                return state;
            }
            let now = Instant::now();
            state = match live.next {
                Some(deadline) if deadline <= now => {
                    live.conn.handle_timeout(now);
                    self.settle(live);
                    live.send_outbox();
                    continue;
                }
                Some(deadline) => {
                    live.armed = Some(deadline);
                    self.wake
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => {
                    live.armed = None;
                    self.wake
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                }
            };
        }
    }

    /// Ends the transport (unlocked: its threads may be waiting for the
    /// session), then tells every caller still waiting, startup and health.
    fn teardown(&self, mut state: MutexGuard<'_, State>, grace: Duration) {
        state.ended = true;
        let Some(live) = state.live.as_mut() else {
            return;
        };
        while let Some(output) = live.conn.poll_output() {
            if let Some(io) = &mut live.io {
                let _ = io.carry(output);
            }
        }
        self.write_transcript(live);
        let reason = live.closed.take().unwrap_or(CloseReason::Requested);
        let io = live.io.take();
        drop(state);
        let stderr = io.and_then(|io| io.shutdown(grace));
        let mut state = self.lock();
        let Some(live) = state.live.as_mut() else {
            return;
        };
        live.send_outbox();
        // What the server wrote to stderr explains a failure, not a close
        // rho asked for.
        let stderr = stderr.filter(|_| !matches!(reason, CloseReason::Requested));
        let mut text = reason.to_string();
        if let Some(stderr) = &stderr {
            text.push('\n');
            text.push_str(stderr);
        }
        for reply in live.calls.drain() {
            reply.send(CallUpdate::Done(Err(ToolCallError::Call(
                CallError::SessionClosed {
                    server: self.server.clone(),
                    reason: text.clone(),
                },
            ))));
        }
        match live.startup.take() {
            Some(tx) => {
                let _ = tx.send(Err(StartupError::Closed {
                    server: self.server.clone(),
                    reason,
                    stderr,
                }));
            }
            None if !matches!(reason, CloseReason::Requested) => {
                tracing::warn!(server = %self.server, "session ended: {text}");
                update(&self.health, |h| h.failure = Some(text));
            }
            None => {}
        }
    }

    /// Does what the host asks, on the caller's thread. Hands the command
    /// back when the session has ended (or never started).
    pub(crate) fn command(self: &Arc<Self>, command: Command) -> Result<(), Command> {
        let mut state = self.lock();
        if state.ended {
            return Err(command);
        }
        let Some(live) = state.live.as_mut() else {
            if let Command::Close = command {
                state.close_early = true;
                return Ok(());
            }
            return Err(command);
        };
        if live.closed.is_some() {
            return match command {
                Command::Close => Ok(()),
                other => Err(other),
            };
        }
        let now = Instant::now();
        match command {
            Command::CallTool {
                ticket,
                tool,
                arguments,
                reply,
            } => match live.conn.call_tool(now, &tool, arguments) {
                Ok(call) => live.calls.insert(ticket, call, reply),
                Err(misuse) => {
                    reply.send(CallUpdate::Done(Err(ToolCallError::NotCallable(
                        misuse.to_string(),
                    ))));
                }
            },
            Command::Cancel { ticket } => {
                if let Some(call) = live.calls.cancel(ticket) {
                    live.conn.cancel_call(now, call);
                }
            }
            Command::Answer { question, answer } => match answer {
                Answer::Form(answer) => live.conn.answer_elicitation(now, question, answer),
                Answer::Sampling(answer) => live.conn.answer_sampling(now, question, answer),
                Answer::Authorization(answer) => {
                    live.conn.answer_authorization(now, question, answer)
                }
            },
            Command::Close => live.conn.close(now),
        }
        self.settle(live);
        deliver(state);
        Ok(())
    }

    /// What a stdio child's pipe thread delivers; `false` once the session
    /// wants no more.
    fn pipe(self: &Arc<Self>, pipe: Pipe<'_>) -> bool {
        let mut state = self.lock();
        if state.ended {
            return false;
        }
        let Some(live) = state.live.as_mut().filter(|l| l.closed.is_none()) else {
            return false;
        };
        let now = Instant::now();
        if live.due_first(now) {
            self.settle(live);
            if live.closed.is_some() {
                deliver(state);
                return false;
            }
        }
        match pipe {
            Pipe::Stdout(bytes) => live.conn.handle_stdio_bytes(now, bytes),
            Pipe::Closed => {
                let detail = live.exit_detail();
                live.conn.handle_stdio_closed(now, detail);
            }
            Pipe::WriteFailed(error) => live.write_failed(now, &error),
        }
        self.settle(live);
        deliver(state);
        true
    }

    /// What an HTTP worker delivers for `exchange`; `false` once the
    /// session wants no more of it. The abort flag is read here, under the
    /// session's lock (where aborts happen), so nothing of an aborted
    /// exchange goes in.
    fn http(
        self: &Arc<Self>,
        exchange: ExchangeId,
        aborted: &AtomicBool,
        input: HttpInput,
    ) -> bool {
        let mut state = self.lock();
        if state.ended {
            return false;
        }
        let Some(live) = state.live.as_mut().filter(|l| l.closed.is_none()) else {
            return false;
        };
        let now = Instant::now();
        if live.due_first(now) {
            self.settle(live);
            if live.closed.is_some() {
                deliver(state);
                return false;
            }
        }
        if aborted.load(Ordering::Acquire) {
            deliver(state);
            return false;
        }
        live.conn.handle_http(now, exchange, input);
        self.settle(live);
        deliver(state);
        true
    }

    /// After an input: carries the outputs, hands the events over, fires
    /// deadlines that are due, records, and wakes the driver thread when
    /// the next deadline is earlier than the one it sleeps towards (or the
    /// session closed).
    fn settle(self: &Arc<Self>, live: &mut Live) {
        loop {
            let mut deferred = Vec::new();
            while let Some(output) = live.conn.poll_output() {
                if let Some(io) = &mut live.io {
                    deferred.extend(io.carry(output));
                }
            }
            while let Some(event) = live.conn.poll_event() {
                self.on_event(live, event);
            }
            if live.closed.is_some() {
                self.write_transcript(live);
                self.wake.notify_all();
                return;
            }
            if !deferred.is_empty() {
                let now = Instant::now();
                for input in deferred {
                    match input {
                        Deferred::WriteFailed(error) => live.write_failed(now, &error),
                        Deferred::NotStarted(x) => {
                            live.conn
                                .handle_http(now, x.exchange, HttpInput::Failed(x.reason));
                        }
                    }
                }
                continue;
            }
            let next = live.conn.poll_timeout();
            let now = Instant::now();
            if next.is_some_and(|d| d <= now) {
                live.conn.handle_timeout(now);
                continue;
            }
            live.next = next;
            self.write_transcript(live);
            if let Some(deadline) = next {
                if live.armed.is_none_or(|armed| deadline < armed) {
                    live.armed = Some(deadline);
                    self.wake.notify_one();
                }
            }
            return;
        }
    }

    fn write_transcript(&self, live: &mut Live) {
        if let Some(sink) = &self.record {
            sink.write(live.conn.take_transcript());
        }
    }

    fn on_event(self: &Arc<Self>, live: &mut Live, event: Event) {
        match event {
            Event::Ready(ready) => {
                if let Some(tx) = live.startup.take() {
                    let _ = tx.send(Ok(Started {
                        ready: *ready,
                        elapsed: live.started_at.elapsed(),
                        pid: live.pid,
                    }));
                }
            }
            Event::CallCompleted { call, result } => {
                if let Some(reply) = live.calls.complete(call) {
                    let update = CallUpdate::Done(result.map_err(ToolCallError::Call));
                    live.outbox.push(Outgoing::Update(reply, update));
                }
            }
            Event::Progress { call, progress } => {
                if let Some(reply) = live.calls.get(call) {
                    live.outbox
                        .push(Outgoing::Progress(reply.progress_handle(), progress));
                }
            }
            Event::Question { question, kind, .. } => {
                // A person may take minutes: answer off every session thread.
                let driver = Arc::clone(self);
                let spawned = std::thread::Builder::new()
                    .name(format!("rho-mcp-{}-ask", self.server))
                    .spawn(move || {
                        let answer =
                            rho_proto_core::host::answer(&driver.host, &driver.server, &kind);
                        let _ = driver.command(Command::Answer { question, answer });
                    });
                if let Err(e) = spawned {
                    tracing::warn!(server = %self.server, "could not ask: {e}");
                }
            }
            Event::QuestionWithdrawn(_) => {}
            Event::ToolsChanged(_) | Event::PingAnswered | Event::PingFailed(_) => {
                if let Event::PingFailed(reason) = &event {
                    tracing::warn!(server = %self.server, "ping failed: {reason}");
                }
                update(&self.health, |h| {
                    h.observe(&event);
                });
            }
            // Already logged by the core; nothing for the host to decide.
            Event::PeerMisbehaved(_) => {}
            Event::Closed(reason) => live.closed = Some(reason),
            // An event added to the core later asks nothing of the
            // executor until it is handled here.
            _ => {}
        }
    }
}

/// Releases the session's lock, then tells callers what the session said.
fn deliver(mut state: MutexGuard<'_, State>) {
    let outbox = match state.live.as_mut() {
        Some(live) if !live.outbox.is_empty() => std::mem::take(&mut live.outbox),
        _ => return,
    };
    drop(state);
    for outgoing in outbox {
        outgoing.send();
    }
}

fn update(health: &SharedHealth, f: impl FnOnce(&mut Health)) {
    match health.lock() {
        Ok(mut state) => f(&mut state),
        Err(poisoned) => f(&mut poisoned.into_inner()),
    }
}
