//! The driver of one server, written once for every executor: it owns the
//! server's [`Connection`], its calls in flight and its startup report,
//! and turns what happens (transport input, host commands, time) into
//! [`Effect`]s for the executor to carry out. It does no IO and reads no
//! clock: every input comes with its `now`.
//!
//! An executor keeps only its waiting and its IO. Its loop is:
//!
//! 1. [`Driver::connect`], start the transport, [`Driver::transport_started`];
//! 2. feed what wakes it in ([`Driver::handle_command`],
//!    [`Driver::handle_stdout`], [`Driver::handle_http`],
//!    [`Driver::handle_timeout`], ...), then drain [`Driver::poll_effect`]
//!    and carry each effect out, in order;
//! 3. set its timer when [`Driver::rearm`] says the next deadline moved
//!    earlier, and sleep until input or the timer;
//! 4. on [`Effect::EndTransport`], end the transport (a stdio child gets
//!    its grace, then is killed) and hand its last stderr lines to
//!    [`Driver::finish`]: every caller still waiting then hears that the
//!    session closed, and either startup or the server's health hears why.
//!
//! Everything a caller sees comes from here or from the session below it,
//! including a cancelled call's [`CallError::Cancelled`]: an executor never
//! makes up an answer.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use crate::config::ServerConfig;
use crate::connection::{Connection, HostContext, HttpInput, Output};
use crate::host::{Asked, HostServices};
use crate::http::ExchangeId;
use crate::runtime::driving::{
    Answer, CallTable, CallUpdate, Command, Started, StartupError, StartupOutcome,
};
use crate::runtime::{Health, ToolCallError};
use crate::session::{
    CallError, CallId, CloseReason, Event, Progress, Question, QuestionId, ServerLog, Timer,
};

/// What a driver needs to connect one server.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// The server's configuration.
    pub config: &'a ServerConfig,
    /// The ambient environment (`headers_from_env` reads it).
    pub ambient: &'a [(String, String)],
    /// The session workspace as a `file://` URI, offered as the one root.
    pub workspace_root: Option<&'a str>,
    /// What the host can do (ask a person, sample, re-authorize).
    pub host: &'a HostServices,
    /// Record a transcript ([`Effect::Record`] hands its lines over).
    pub record: bool,
}

/// What the executor must do, in the order the driver hands them out.
#[derive(Debug)]
pub enum Effect<R> {
    /// Carry this out on the transport (write to stdin, send or abort an
    /// HTTP exchange).
    Transmit(Output),
    /// Hand this update to a caller. A [`CallUpdate::Done`] (or, for a
    /// request, [`CallUpdate::Answered`]) is the last the
    /// caller hears: the reply channel is handed back to be dropped.
    Reply(R, CallUpdate),
    /// A call in flight made progress: hand it to the caller whose channel
    /// [`Driver::caller`] returns for `call` (still in flight now).
    Progress {
        /// Which call.
        call: CallId,
        /// What the server reported.
        progress: Progress,
    },
    /// How startup ended: tell whoever waits for it. Comes exactly once.
    Startup(StartupOutcome),
    /// The server asked the host something: answer it off the session (a
    /// person may take minutes) with [`crate::host::answer`], then feed the
    /// answer back as [`Command::Answer`].
    Ask {
        /// Which question, for the answer.
        question: QuestionId,
        /// What is asked.
        kind: Question,
        /// Who asks, during which call (hand it to [`crate::host::answer`]).
        asked: Asked,
    },
    /// The server's health changed: this is how it stands now.
    Health(Health),
    /// Transcript lines to write to the host's sink (only when recording).
    Record(Vec<String>),
    /// The server logged this: hand it to the host's
    /// [`crate::host::LogSink`], when it has one (tracing has had it).
    Log(ServerLog),
    /// The session closed: end the transport, then call [`Driver::finish`].
    /// Every output of the session came before this.
    EndTransport,
}

/// Where a driver is in its life.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Running (starting up, or ready).
    Open,
    /// The session closed; [`Effect::EndTransport`] not yet handed out.
    Closed(CloseReason),
    /// [`Effect::EndTransport`] handed out; waiting for [`Driver::finish`].
    Ending(CloseReason),
    /// Finished: nothing more comes.
    Done,
}

/// How far [`Driver::poll_effect`] has drained the connection since the
/// last input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drain {
    Outputs,
    Events,
    /// Both said `None`: nothing more until the next input.
    Idle,
}

/// One server's session and everything the executor must do for it.
#[derive(Debug)]
pub struct Driver<R> {
    server: String,
    conn: Connection,
    recording: bool,
    calls: CallTable<R>,
    /// When connecting began: startup's elapsed time runs from here.
    started_at: Instant,
    /// The latest `now` an input came with.
    now: Instant,
    pid: Option<u32>,
    /// Startup not yet reported.
    starting: bool,
    phase: Phase,
    health: Health,
    /// The deadline the executor's timer is set to, if any.
    armed: Option<Instant>,
    /// Effects decided but not yet handed out.
    pending: VecDeque<Effect<R>>,
    drain: Drain,
}

impl<R> Driver<R> {
    /// Builds the connection `setup` describes, at `now` (the startup budget
    /// runs from here). Fails when the server's headers need an ambient
    /// variable that is unset or unusable: the user's to fix, and nothing
    /// was started.
    pub fn connect(setup: Setup<'_>, now: Instant) -> Result<Self, StartupError> {
        // Requests that present a DPoP-bound token are proved by the
        // authorizer that bound it.
        let proofs = setup.host.authorizer.clone().map(|authorizer| {
            Arc::new(crate::host::AuthorizerProofs(authorizer))
                as Arc<dyn crate::oauth::dpop::DpopProver>
        });
        let context = HostContext {
            ambient: setup.ambient,
            workspace_root: setup.workspace_root,
            can_elicit: setup.host.can_elicit(),
            can_reauthorize: setup.host.can_reauthorize(),
            can_sample: setup.host.can_sample(),
            dpop: proofs.as_ref(),
            secrets: Some(&setup.host.secrets),
        };
        let conn = if setup.record {
            Connection::new_recorded(setup.config, &context, now)?
        } else {
            Connection::new(setup.config, &context, now)?
        };
        Ok(Self {
            server: setup.config.id.as_str().to_owned(),
            conn,
            recording: setup.record,
            calls: CallTable::default(),
            started_at: now,
            now,
            pid: None,
            starting: true,
            phase: Phase::Open,
            health: Health::default(),
            armed: None,
            pending: VecDeque::new(),
            drain: Drain::Outputs,
        })
    }

    /// The server identity.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The transport is up; `pid` is a stdio child's process id, reported
    /// with startup.
    pub fn transport_started(&mut self, pid: Option<u32>) {
        self.pid = pid;
    }

    /// Whether the session has closed (nothing more goes in).
    pub fn is_closed(&self) -> bool {
        !matches!(self.phase, Phase::Open)
    }

    /// The reply channel of a call still in flight (see
    /// [`Effect::Progress`]).
    pub fn caller(&self, call: CallId) -> Option<&R> {
        self.calls.get(call)
    }

    // ----- inputs -----

    /// Does what the host asks. Hands the command back when the session
    /// has closed, so the caller can say so; closing a closed session is
    /// not an error.
    pub fn handle_command(&mut self, now: Instant, command: Command<R>) -> Result<(), Command<R>> {
        if self.is_closed() {
            return match command {
                Command::Close => Ok(()),
                other => Err(other),
            };
        }
        self.now = now;
        self.drain = Drain::Outputs;
        match command {
            Command::CallTool {
                ticket,
                tool,
                arguments,
                budget,
                reply,
            } => match self.conn.call_tool(now, &tool, arguments, budget) {
                Ok(call) => self.calls.insert(ticket, call, tool, reply),
                Err(misuse) => self.pending.push_back(Effect::Reply(
                    reply,
                    CallUpdate::Done(Err(ToolCallError::NotCallable(misuse))),
                )),
            },
            Command::Request {
                ticket,
                request,
                budget,
                reply,
            } => match self.conn.request(now, &request, budget) {
                Ok(call) => self
                    .calls
                    .insert(ticket, call, request.method().to_owned(), reply),
                Err(misuse) => self.pending.push_back(Effect::Reply(
                    reply,
                    CallUpdate::Answered(Err(ToolCallError::NotCallable(misuse))),
                )),
            },
            Command::Cancel { ticket } => {
                if let Some(call) = self.calls.cancel(ticket) {
                    self.conn.cancel_call(now, call);
                }
            }
            Command::Answer { question, answer } => match answer {
                Answer::Form(answer) => self.conn.answer_elicitation(now, question, answer),
                Answer::Sampling(answer) => self.conn.answer_sampling(now, question, answer),
                Answer::Authorization(answer) => {
                    self.conn.answer_authorization(now, question, answer)
                }
            },
            Command::Close => self.conn.close(now),
        }
        Ok(())
    }

    /// Bytes from a stdio child's stdout.
    pub fn handle_stdout(&mut self, now: Instant, bytes: &[u8]) {
        if self.transport_input(now) {
            self.conn.handle_stdio_bytes(now, bytes);
        }
    }

    /// A stdio child's stdout ended; `exit` describes how the child
    /// exited, when the executor learned it.
    pub fn handle_stdout_closed(&mut self, now: Instant, exit: Option<String>) {
        if self.transport_input(now) {
            self.conn.handle_stdio_closed(now, exit);
        }
    }

    /// Writing to a stdio child's stdin failed with `error`; `exit`
    /// describes how the child exited, when it did (then it simply ended,
    /// and the write failed because of it).
    pub fn handle_write_failed(&mut self, now: Instant, error: &str, exit: Option<String>) {
        if !self.transport_input(now) {
            return;
        }
        match exit {
            Some(detail) => self.conn.handle_stdio_closed(now, Some(detail)),
            None => self
                .conn
                .handle_transport_failed(now, format!("writing to the server failed: {error}")),
        }
    }

    /// Something happened to an HTTP exchange.
    pub fn handle_http(&mut self, now: Instant, exchange: ExchangeId, input: HttpInput) {
        if self.transport_input(now) {
            self.conn.handle_http(now, exchange, input);
        }
    }

    /// The executor's timer fired, or a deadline is due: hands the time to
    /// the session if a deadline is due at `now`. A timer that fires early
    /// changes nothing (and records nothing), except that it is no longer
    /// set: [`Driver::rearm`] says where to set it next.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.armed.is_some_and(|armed| armed <= now) {
            self.armed = None;
        }
        if !self.is_due(now) {
            return;
        }
        self.now = now;
        self.drain = Drain::Outputs;
        self.conn.handle_timeout(now);
    }

    /// Before a transport input: takes it only while open, and fires a
    /// deadline that is already due first, so input that is always ready
    /// (a flooding server) cannot keep a deadline from firing.
    fn transport_input(&mut self, now: Instant) -> bool {
        if self.is_closed() {
            return false;
        }
        if self.is_due(now) {
            self.handle_timeout(now);
        }
        self.now = now;
        self.drain = Drain::Outputs;
        true
    }

    // ----- time -----

    /// When [`Driver::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.is_closed() {
            return None;
        }
        self.conn.poll_timeout()
    }

    /// What the next deadline is for.
    pub fn timeout_reason(&self) -> Option<Timer> {
        self.poll_timeout().and(self.conn.timeout_reason())
    }

    /// Whether a deadline is due at `now`.
    pub fn is_due(&self, now: Instant) -> bool {
        self.poll_timeout().is_some_and(|at| at <= now)
    }

    /// The instant the executor's timer is set to, as [`Driver::rearm`]
    /// last said; `None` when it is not set. A thread that is itself the
    /// timer sleeps until then.
    pub fn timer(&self) -> Option<Instant> {
        self.armed
    }

    /// Where to set the executor's timer, when it must move: the next
    /// deadline is earlier than the one the timer is set to, or none is
    /// set. `None` leaves the timer as it is: setting it wakes a reactor or
    /// a thread, and a timer set earlier than needed merely fires early.
    pub fn rearm(&mut self) -> Option<Instant> {
        let next = self.poll_timeout()?;
        if self.armed.is_some_and(|armed| armed <= next) {
            return None;
        }
        self.armed = Some(next);
        Some(next)
    }

    // ----- effects -----

    /// The next thing the executor must do; `None` once there is nothing
    /// until the next input.
    pub fn poll_effect(&mut self) -> Option<Effect<R>> {
        loop {
            if let Some(effect) = self.pending.pop_front() {
                return Some(effect);
            }
            if matches!(self.phase, Phase::Ending(_) | Phase::Done) {
                return None;
            }
            // Outputs and events come only from inputs: each is polled until
            // it says `None` once, then not again until the next input (a
            // recorded poll is a transcript line).
            match self.drain {
                Drain::Outputs => match self.conn.poll_output() {
                    Some(output) => return Some(Effect::Transmit(output)),
                    None => self.drain = Drain::Events,
                },
                Drain::Events => match self.conn.poll_event() {
                    Some(event) => {
                        if let Some(effect) = self.on_event(event) {
                            return Some(effect);
                        }
                    }
                    None => {
                        self.drain = Drain::Idle;
                        if self.recording {
                            let lines = self.conn.take_transcript();
                            if !lines.is_empty() {
                                return Some(Effect::Record(lines));
                            }
                        }
                    }
                },
                Drain::Idle => {
                    if let Phase::Closed(reason) = &self.phase {
                        self.phase = Phase::Ending(reason.clone());
                        return Some(Effect::EndTransport);
                    }
                    return None;
                }
            }
        }
    }

    fn on_event(&mut self, event: Event) -> Option<Effect<R>> {
        match event {
            Event::Ready(ready) => {
                if !std::mem::take(&mut self.starting) {
                    return None;
                }
                Some(Effect::Startup(Ok(Started {
                    ready: *ready,
                    elapsed: self.now.saturating_duration_since(self.started_at),
                    pid: self.pid,
                })))
            }
            Event::CallCompleted { call, result } => {
                let reply = self.calls.complete(call)?;
                Some(Effect::Reply(
                    reply,
                    CallUpdate::Done(result.map_err(ToolCallError::Call)),
                ))
            }
            Event::RequestCompleted { call, result } => {
                let reply = self.calls.complete(call)?;
                Some(Effect::Reply(
                    reply,
                    CallUpdate::Answered(result.map_err(ToolCallError::Call)),
                ))
            }
            Event::Progress { call, progress } => {
                self.calls.get(call)?;
                Some(Effect::Progress { call, progress })
            }
            Event::Question {
                question,
                call,
                kind,
            } => {
                let (ticket, what) = self.calls.describe(call).unzip();
                let asked = Asked {
                    server: self.server.clone(),
                    call: ticket,
                    what: what.map(str::to_owned),
                };
                Some(Effect::Ask {
                    question,
                    kind,
                    asked,
                })
            }
            Event::ToolsChanged(_)
            | Event::CatalogChanged(_)
            | Event::PingAnswered
            | Event::PingFailed(_) => {
                if let Event::PingFailed(reason) = &event {
                    tracing::warn!(server = %self.server, "ping failed: {reason}");
                }
                self.health
                    .observe(&event)
                    .then(|| Effect::Health(self.health.clone()))
            }
            Event::Log(log) => Some(Effect::Log(log)),
            Event::Closed(reason) => {
                if matches!(self.phase, Phase::Open) {
                    self.phase = Phase::Closed(reason);
                }
                None
            }
            // The host is never asked twice: a withdrawn question's late
            // answer is dropped by the session. A peer's misbehaviour the
            // session survived is already logged by it. An event added to
            // the core later asks nothing of the executor until it is
            // handled here.
            _ => None,
        }
    }

    /// The transport has ended ([`Effect::EndTransport`]); `stderr` is the
    /// tail of what a stdio child wrote there. Every caller still waiting
    /// hears that the session closed, then startup hears why it failed,
    /// or, for a server that was ready, its health does (unless rho closed
    /// it). Drain [`Driver::poll_effect`] afterwards.
    pub fn finish(&mut self, stderr: Option<String>) {
        let reason = match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Ending(reason) | Phase::Closed(reason) => reason,
            Phase::Open => CloseReason::Requested,
            Phase::Done => return,
        };
        // What the server wrote to stderr explains a failure, not a close
        // rho asked for.
        let stderr = stderr.filter(|_| !matches!(reason, CloseReason::Requested));
        let mut text = reason.to_string();
        if let Some(stderr) = &stderr {
            text.push('\n');
            text.push_str(stderr);
        }
        for reply in self.calls.drain() {
            self.pending.push_back(Effect::Reply(
                reply,
                CallUpdate::Done(Err(ToolCallError::Call(CallError::SessionClosed {
                    server: self.server.clone(),
                    reason: text.clone(),
                }))),
            ));
        }
        if std::mem::take(&mut self.starting) {
            self.pending
                .push_back(Effect::Startup(Err(StartupError::Closed {
                    server: self.server.clone(),
                    reason,
                    stderr,
                })));
        } else if !matches!(reason, CloseReason::Requested) {
            tracing::warn!(server = %self.server, "session ended: {text}");
            self.health.failure = Some(text);
            self.pending.push_back(Effect::Health(self.health.clone()));
        }
    }
}
