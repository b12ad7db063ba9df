//! The driver of one server on threads: the core's pure
//! [`Driver`](rho_proto_core::runtime::driver::Driver) behind a lock,
//! driven by whichever thread has something for it. This module only
//! waits and does IO: it feeds transport input and host commands in,
//! carries the driver's effects out, sleeps towards the next deadline, and
//! ends the transport when the driver says the session closed. Every
//! decision (what a call hears, when startup is over, what health says)
//! is the core's.
//!
//! Nothing is relayed through a thread of its own: a caller's thread turns
//! its call into bytes, queues them under the session's lock and writes
//! them to the child once it has let go of that lock (or hands the request
//! to an HTTP worker); the stdout reader (or the HTTP worker) feeds what
//! arrives into the session and replies to the waiting caller itself. So a
//! stdio call costs two thread hops: the child's answer wakes the reader,
//! the reader wakes the caller (once it released the session's lock, so
//! the caller's next call does not wait for it). The driver thread only
//! starts the session, sleeps until the next deadline (re-armed only when
//! a deadline moves earlier) and tears the session down once it closes.
//!
//! A server the driver restarts (a stdio child that died mid-session) keeps
//! its driver thread: once the transport ended and the core is not done,
//! the thread sleeps towards the restart's backoff like any deadline, and
//! when the core asks for a new transport it starts one exactly as at
//! startup. Each transport has a generation, so a pipe thread of a child
//! that is gone can never feed the new session.
//!
//! Locks are taken in one order: the session, then the transport's own
//! (stdin queue, HTTP pool). No transport thread holds its own lock while
//! it waits for the session's, and nobody holds the session's while it
//! waits on IO: stdin writes never block (and callers and the reader make
//! them after releasing the session), and HTTP runs on its workers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rho_proto_core::config::{ServerConfig, Transport};
use rho_proto_core::connection::{HttpInput, Output};
use rho_proto_core::host::{Asked, HostServices, TranscriptSink};
use rho_proto_core::http::{ExchangeId, HttpFailure, HttpOutput};
use rho_proto_core::runtime::Health;
use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::driver::{self, Effect, Reports, Setup};
use rho_proto_core::runtime::driving::{CallUpdate, Heard, StartupError, TransportSetupError};
use rho_proto_core::session::{Progress, Question, QuestionId};

#[cfg(feature = "http")]
use crate::http_client::HttpClient;
#[cfg(not(feature = "http"))]
use crate::no_http::HttpClient;
use crate::reply::{ProgressTx, ReplyTx};
use crate::stdio::{Pipe, StdinWriter, StdioChild};

/// What the host asks of a driver on threads.
pub(crate) type Command = rho_proto_core::runtime::driving::Command<ReplyTx>;

/// Shared between a driver and the host's status reports.
pub(crate) type SharedHealth = Arc<Mutex<Health>>;

/// How long the driver waits for an exit status after stdout closes.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(250);

/// One server's session, shared by every thread that drives it.
pub(crate) struct Driver {
    host: HostServices,
    reports: Reports,
    state: Mutex<State>,
    /// Wakes the driver thread: a deadline moved earlier, the session
    /// closed, or a restart wants a new transport.
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
    core: driver::Driver<ReplyTx>,
    /// Taken at teardown.
    io: Option<Io>,
    /// A stdio child's queued input, written by whoever queued it once the
    /// session's lock is released (set when the child starts).
    stdin: Option<StdinWriter>,
    /// Which transport `io` is: each restart starts the next one, and only
    /// the current one's pipes reach the session.
    generation: u64,
    startup: Option<Sender<Heard>>,
    /// The driver said the session closed: the driver thread tears down.
    ending: bool,
    /// The driver asked for a new transport (a restart): the driver thread
    /// starts it.
    start: bool,
    /// What callers are to hear, sent once the session's lock is released
    /// so that a woken caller does not wait for it.
    outbox: Vec<Outgoing>,
}

/// An update for a caller, waiting for the session's lock to be released.
enum Outgoing {
    Update(ReplyTx, CallUpdate),
    Progress(ProgressTx, Progress),
}

impl Outgoing {
    fn send(self) {
        match self {
            Outgoing::Update(reply, update) => reply.finish(update),
            Outgoing::Progress(reply, progress) => reply.send(progress),
        }
    }
}

/// The IO a connection runs over.
enum Io {
    Stdio(StdioChild),
    // Never made without the `http` feature (`no_http`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    Http(HttpClient),
}

/// An exchange that could not start (no worker thread could be started):
/// the session hears of it once it is done carrying its outputs.
#[derive(Debug)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct NotStarted {
    /// Which exchange.
    pub(crate) exchange: ExchangeId,
    /// Why.
    pub(crate) reason: HttpFailure,
}

/// An input a transport produced while outputs were being carried, fed in
/// once they are.
enum Deferred {
    NotStarted(NotStarted),
}

impl Io {
    /// A stdio child's process id.
    fn pid(&self) -> Option<u32> {
        match self {
            Io::Stdio(child) => Some(child.pid()),
            Io::Http(_) => None,
        }
    }

    /// What writes a stdio child's queued input from the session's threads.
    fn writer(&self) -> Option<StdinWriter> {
        match self {
            Io::Stdio(child) => Some(child.writer()),
            Io::Http(_) => None,
        }
    }

    fn carry(&mut self, output: Output) -> Option<Deferred> {
        match (self, output) {
            (Io::Stdio(child), Output::Write(bytes)) => {
                // Queued only: written once the session is let go of
                // (`Driver::flush`); a failure comes back as a `Pipe`.
                child.write(bytes);
                None
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
        let exit = self.exit_detail();
        self.core.handle_write_failed(now, error, exit);
    }

    /// Writes a stdio child's queued input, where the session is locked
    /// anyway (see [`StdinWriter::flush`]).
    fn flush(&self) {
        if let Some(stdin) = &self.stdin {
            stdin.flush();
        }
    }

    /// Tells callers what waits for them (where the lock is held anyway).
    fn send_outbox(&mut self) {
        for outgoing in self.outbox.drain(..) {
            outgoing.send();
        }
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
            reports: Reports {
                server: server.to_owned(),
                health,
                record,
                logs: host.logs.clone(),
                resource_updates: host.resource_updates.clone(),
            },
            host,
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
    /// deadlines until the session closes, and tears it down; while the
    /// core restarts the server, again with each new transport. `startup`
    /// hears exactly once; `backlog` counts what waits for a stdio child's
    /// stdin.
    pub(crate) fn run(
        self: &Arc<Self>,
        config: &ServerConfig,
        (ambient, root): (&[(String, String)], Option<&str>),
        grace: Duration,
        startup: Sender<Heard>,
        backlog: Arc<Backlog>,
    ) {
        let setup = || Setup {
            config,
            ambient,
            workspace_root: root,
            host: &self.host,
            record: self.reports.record.is_some(),
        };
        // Held while the transport starts, so that whatever it delivers
        // finds the session in place.
        let mut state = self.lock();
        let connected = driver::Driver::connect(setup(), Instant::now()).and_then(|core| {
            let io = self
                .start_transport(config, ambient, &backlog, 0)
                .map_err(StartupError::Transport)?;
            Ok((core, io))
        });
        let (mut core, io) = match connected {
            Ok(pair) => pair,
            Err(reason) => {
                state.ended = true;
                drop(state);
                let _ = startup.send(Heard::Outcome(Err(reason)));
                return;
            }
        };
        core.transport_started(io.pid());
        let close_early = state.close_early;
        let live = state.live.insert(Live {
            core,
            stdin: io.writer(),
            io: Some(io),
            generation: 0,
            startup: Some(startup),
            ending: false,
            start: false,
            outbox: Vec::new(),
        });
        if close_early {
            let _ = live.core.handle_command(Instant::now(), Command::Close);
        }
        self.settle(live);
        live.send_outbox();
        live.flush();
        loop {
            state = self.sleep_until_closed(state);
            let Some(live) = state.live.as_mut() else {
                return;
            };
            if live.ending {
                state = self.teardown(state, grace);
                if state.ended {
                    return;
                }
            } else if std::mem::take(&mut live.start) {
                self.restart(live, setup(), &backlog);
            } else {
                // Done without an end: a restart that could not start its
                // process gave up.
                state.ended = true;
                return;
            }
        }
    }

    /// Starts the server's transport (the `generation`th): spawns a stdio
    /// child whose pipes deliver to this session, or sets up the HTTP
    /// exchanges.
    fn start_transport(
        self: &Arc<Self>,
        config: &ServerConfig,
        ambient: &[(String, String)],
        backlog: &Arc<Backlog>,
        generation: u64,
    ) -> Result<Io, TransportSetupError> {
        match &config.transport {
            Transport::Stdio(stdio) => {
                let driver = Arc::clone(self);
                StdioChild::spawn(
                    &self.reports.server,
                    stdio,
                    ambient,
                    Arc::new(move |pipe| driver.pipe(generation, pipe)),
                    Arc::clone(backlog),
                )
                .map(Io::Stdio)
            }
            #[cfg(not(feature = "http"))]
            Transport::StreamableHttp(_) => Err(crate::no_http::not_built_in(&self.reports.server)),
            #[cfg(feature = "http")]
            Transport::StreamableHttp(_) => {
                let driver = Arc::clone(self);
                Ok(Io::Http(HttpClient::new(
                    &self.reports.server,
                    Arc::new(move |exchange, aborted, input| driver.http(exchange, aborted, input)),
                )))
            }
        }
    }

    /// Starts the transport again for the restart the core asked for, under
    /// the session's lock (the new pipes wait for it), and hands the core
    /// the outcome. One the core does not keep is ended at once.
    fn restart(self: &Arc<Self>, live: &mut Live, setup: Setup<'_>, backlog: &Arc<Backlog>) {
        // A fresh count for a fresh child: the old one's queue went with it.
        backlog.reopen();
        let generation = live.generation + 1;
        let started = self.start_transport(setup.config, setup.ambient, backlog, generation);
        let pid = started.as_ref().map(Io::pid).map_err(Clone::clone);
        let kept = live.core.restart_transport(setup, Instant::now(), pid);
        match started {
            Ok(io) if kept => {
                live.generation = generation;
                live.stdin = io.writer();
                live.io = Some(io);
            }
            // Its pipes deliver to a generation that never was: nothing of
            // it reaches the session while it ends.
            Ok(io) => drop(io.shutdown(Duration::ZERO)),
            Err(_) => {}
        }
        self.settle(live);
        live.send_outbox();
        live.flush();
    }

    /// Sleeps until the next deadline, handles it, and again, until the
    /// session closes, or the core wants a new transport (or is done).
    /// Woken early only when a deadline moves earlier, or for those.
    fn sleep_until_closed<'a>(
        self: &'a Arc<Self>,
        mut state: MutexGuard<'a, State>,
    ) -> MutexGuard<'a, State> {
        loop {
            let Some(live) = state.live.as_mut() else {
                return state;
            };
            if live.ending || live.start || live.core.is_done() {
                return state;
            }
            // This thread is the timer: it sleeps until the instant the
            // core set it to.
            let now = Instant::now();
            if live.core.timer().is_some_and(|at| at <= now) || live.core.is_due(now) {
                live.core.handle_timeout(now);
                self.settle(live);
                live.send_outbox();
                live.flush();
                continue;
            }
            let _ = live.core.rearm();
            state = match live.core.timer() {
                Some(deadline) => {
                    self.wake
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => self
                    .wake
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            };
        }
    }

    /// Ends the transport (unlocked: its threads may be waiting for the
    /// session), then lets the core tell every caller still waiting,
    /// startup and health. The session has ended for good (and takes no
    /// more commands) when the core is done; else a restart is under way.
    fn teardown<'a>(
        self: &'a Arc<Self>,
        mut state: MutexGuard<'a, State>,
        grace: Duration,
    ) -> MutexGuard<'a, State> {
        let Some(live) = state.live.as_mut() else {
            state.ended = true;
            return state;
        };
        let io = live.io.take();
        live.stdin = None;
        drop(state);
        let stderr = io.and_then(|io| io.shutdown(grace));
        let mut state = self.lock();
        let Some(live) = state.live.as_mut() else {
            state.ended = true;
            return state;
        };
        live.send_outbox();
        live.ending = false;
        live.core.finish(Instant::now(), stderr);
        self.settle(live);
        live.send_outbox();
        state.ended = live.core.is_done();
        state
    }

    /// Does what the host asks, on the caller's thread. Hands the command
    /// back when the session has ended (or never started).
    // The refused command comes back whole, by design (its reply sender
    // with it); moving it costs less than boxing every command.
    #[allow(clippy::result_large_err)]
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
        live.core.handle_command(Instant::now(), command)?;
        self.settle(live);
        self.release(state);
        Ok(())
    }

    /// What the pipe threads of the `generation`th stdio child deliver;
    /// `false` once the session wants no more of it (it closed, or a
    /// restart replaced the child).
    fn pipe(self: &Arc<Self>, generation: u64, pipe: Pipe<'_>) -> bool {
        let mut state = self.lock();
        if state.ended {
            return false;
        }
        let Some(live) = state
            .live
            .as_mut()
            .filter(|l| l.generation == generation && !l.core.is_closed())
        else {
            return false;
        };
        let now = Instant::now();
        match pipe {
            Pipe::Stdout(bytes) => live.core.handle_stdout(now, bytes),
            Pipe::Closed => {
                let exit = live.exit_detail();
                live.core.handle_stdout_closed(now, exit);
            }
            Pipe::WriteFailed(error) => live.write_failed(now, &error),
        }
        self.settle(live);
        self.release(state);
        true
    }

    /// What an HTTP worker delivers for `exchange`; `false` once the
    /// session wants no more of it. The abort flag is read here, under the
    /// session's lock (where aborts happen), so nothing of an aborted
    /// exchange goes in.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
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
        let Some(live) = state.live.as_mut().filter(|l| !l.core.is_closed()) else {
            return false;
        };
        if aborted.load(Ordering::Acquire) {
            self.release(state);
            return false;
        }
        live.core.handle_http(Instant::now(), exchange, input);
        self.settle(live);
        self.release(state);
        true
    }

    /// After an input: carries the core's effects out, feeds back what the
    /// transport refused on the spot, fires deadlines that are due, and
    /// wakes the driver thread when the next deadline is earlier than the
    /// one it sleeps towards (or the session closed).
    fn settle(self: &Arc<Self>, live: &mut Live) {
        loop {
            let mut deferred = Vec::new();
            while let Some(effect) = live.core.poll_effect() {
                match effect {
                    Effect::Transmit(output) => {
                        if let Some(io) = &mut live.io {
                            deferred.extend(io.carry(output));
                        }
                    }
                    Effect::Reply(reply, update) => {
                        live.outbox.push(Outgoing::Update(reply, update));
                    }
                    Effect::Progress { call, progress } => {
                        if let Some(reply) = live.core.caller(call) {
                            live.outbox
                                .push(Outgoing::Progress(reply.progress_handle(), progress));
                        }
                    }
                    Effect::Startup(outcome) => {
                        if let Some(tx) = live.startup.take() {
                            let _ = tx.send(Heard::Outcome(outcome));
                        }
                    }
                    Effect::Ask {
                        question,
                        kind,
                        asked,
                    } => self.ask(question, kind, asked),
                    Effect::Report(report) => self.reports.deliver(report),
                    Effect::EndTransport => live.ending = true,
                    Effect::StartTransport => live.start = true,
                }
            }
            if live.ending || live.start {
                self.wake.notify_all();
                return;
            }
            if !deferred.is_empty() {
                let now = Instant::now();
                for input in deferred {
                    match input {
                        Deferred::NotStarted(x) => {
                            live.core
                                .handle_http(now, x.exchange, HttpInput::Failed(x.reason));
                        }
                    }
                }
                continue;
            }
            let now = Instant::now();
            if live.core.is_due(now) {
                live.core.handle_timeout(now);
                continue;
            }
            if live.core.rearm().is_some() {
                self.wake.notify_one();
            }
            return;
        }
    }

    /// Lets go of the session, writes what it queued for the child, then
    /// tells callers what it said: the request leaves before anyone is
    /// woken to make the next.
    fn release(self: &Arc<Self>, mut state: MutexGuard<'_, State>) {
        let outbox = Outbox::take(&mut state);
        // The child's writer as it is now (a restart may replace it once
        // the lock is let go of): what was queued went to this one.
        let stdin = state.live.as_ref().and_then(|l| l.stdin.clone());
        drop(state);
        if let Some(stdin) = stdin {
            stdin.flush();
        }
        if let Some(outbox) = outbox {
            outbox.send();
        }
    }

    /// A person may take minutes: the question is answered off every
    /// session thread, and the answer comes back as a command.
    fn ask(self: &Arc<Self>, question: QuestionId, kind: Question, asked: Asked) {
        let driver = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("rho-mcp-{}-ask", self.reports.server))
            .spawn(move || {
                let answer = rho_proto_core::host::answer(&driver.host, &asked, &kind);
                let _ = driver.command(Command::Answer { question, answer });
            });
        if let Err(e) = spawned {
            tracing::warn!(server = %self.reports.server, "could not ask: {e}");
        }
    }
}

/// What the session said to callers, taken out under its lock to be sent
/// after it. One update (an answer, nearly always) leaves the outbox's
/// buffer in place; more take it along.
enum Outbox {
    One(Outgoing),
    Many(Vec<Outgoing>),
}

impl Outbox {
    fn take(state: &mut State) -> Option<Self> {
        let outbox = &mut state.live.as_mut()?.outbox;
        match outbox.len() {
            0 => None,
            1 => outbox.pop().map(Outbox::One),
            _ => Some(Outbox::Many(std::mem::take(outbox))),
        }
    }

    fn send(self) {
        match self {
            Outbox::One(outgoing) => outgoing.send(),
            Outbox::Many(outgoing) => outgoing.into_iter().for_each(Outgoing::send),
        }
    }
}
