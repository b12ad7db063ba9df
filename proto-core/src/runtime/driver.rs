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
//!    session closed, and either startup or the server's health hears why;
//! 5. unless [`Driver::is_done`], a restart is under way: keep the loop
//!    (commands and the timer) without a transport, and on
//!    [`Effect::StartTransport`] start the server again as at startup and
//!    report it with [`Driver::restart_transport`].
//!
//! Everything a caller sees comes from here or from the session below it,
//! including a cancelled call's [`CallError::Cancelled`]: an executor never
//! makes up an answer.
//!
//! # Restarts
//!
//! A stdio server whose process dies after its session was established is
//! started again, as its [`RestartPolicy`](crate::config::RestartPolicy)
//! says and [`Restarts`] decides (never during startup, never after rho
//! closed it). The driver outlives its sessions for this: it keeps the
//! server's calls, health and policy, and only its [`Connection`] is new.
//!
//! - A call in flight when the process died ends with
//!   [`CallError::SessionClosed`] and the reason (the exit, the last
//!   stderr lines), as without restarts.
//! - A call or request that comes while the restart is under way (its
//!   backoff, the new process's startup) is held here, not refused: it
//!   goes to the new session once that is ready, with what is left of its
//!   budget; it fails with the reason when its budget runs out first, when
//!   the restarts are given up, or when rho closes the server; a cancel
//!   ends it at once. Holding it here rather than in each executor's call
//!   path keeps the two executors the same.
//! - The exported tools stay the startup set (a session's tool set is
//!   fixed once it starts): the new session's list is reported as
//!   [`Health::tools_now`], so the registry reconciles it as after a
//!   `tools/list_changed` — a tool it no longer has fails as withdrawn, a
//!   tool it added waits for a person's restart. A held call of a tool the
//!   new session lacks fails as withdrawn too.
//! - [`Health`] says where it stands: [`Health::restarting`] while under
//!   way, [`Health::restarts`] and [`Health::pid`] once ready again, and
//!   [`Health::failure`] with [`Health::restarts_exhausted`] when the
//!   attempts in a row ran out.
//!
//! # Resource subscriptions across sessions
//!
//! A session holds its own subscriptions and loses them with it; what the
//! host subscribed to is kept here, with the server, since the host's
//! intent outlives a session (see
//! [`crate::features::resource_subscriptions`]). A URI is watched from the
//! moment a subscribe is answered with success until the host unsubscribes
//! (the moment it asks). Then:
//!
//! - once a restarted session is ready, it is subscribed to every URI
//!   watched, before the calls that waited go to it; each one it takes is
//!   reported [`WatchNotice::Renewed`] (the host reads it again: a change
//!   while the server was down was not heard of), each one it does not
//!   [`WatchNotice::Ended`] ([`WatchEnd::NotRenewed`]) and forgotten;
//! - an unsubscribe while a restart is under way succeeds at once (no
//!   process holds the subscription) and is not renewed;
//! - when the server is not started again (restarts off, given up, or a
//!   transport rho does not restart), each URI watched is reported
//!   [`WatchNotice::Ended`] ([`WatchEnd::ServerEnded`], with the reason);
//!   when rho closed the server itself, nothing is reported: the host
//!   asked for it;
//! - a session that drops its subscriptions while it goes on (a 2026
//!   stream that ended for good, a 2025 HTTP session whose replacement
//!   refused one) reports each ended with the session's reason; one that
//!   renewed them itself (that replacement took them) reports each
//!   [`WatchNotice::Renewed`].
//!
//! Only updates of a URI watched reach the host.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::ServerConfig;
use crate::connection::{Connection, HostContext, HttpInput, Output};
use crate::features::FeatureRequest;
use crate::features::resource_subscriptions::{SubscribeParams, WatchEnd, WatchNotice};
use crate::host::{Asked, HostServices, LogSink, ResourceSink, TranscriptSink};
use crate::http::ExchangeId;
use crate::runtime::driving::{
    Answer, CallTable, CallUpdate, Command, Started, StartupError, StartupOutcome,
    TransportSetupError,
};
use crate::runtime::restart::{Decision, Restarts, Stop};
use crate::runtime::{Health, PendingRestart, ToolCallError};
use crate::session::{
    CallError, CallId, CancelNotice, CloseReason, Event, Progress, Question, QuestionId, ServerLog,
    ServerReady, Timer,
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
    /// Record a transcript ([`Report::Record`] hands its lines over).
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
    /// Something to tell the host along the way: hand it to
    /// [`Reports::deliver`].
    Report(Report),
    /// The session closed: end the transport, then call [`Driver::finish`].
    /// Every output of the session came before this.
    EndTransport,
    /// A restart is due: start the server's transport again exactly as at
    /// startup (the same config, environment and backlog), then report it
    /// with [`Driver::restart_transport`].
    StartTransport,
}

/// What a session tells its host along the way, which every executor
/// delivers the same way ([`Reports::deliver`]).
#[derive(Debug)]
pub enum Report {
    /// The server's health changed: this is how it stands now.
    Health(Health),
    /// Transcript lines to write to the host's sink (only when recording).
    Record(Vec<String>),
    /// The server logged this: hand it to the host's
    /// [`crate::host::LogSink`], when it has one (tracing has had it).
    Log(ServerLog),
    /// News of a resource the host subscribed to (it changed, its
    /// subscription was renewed or ended): hand it to the host's
    /// [`crate::host::ResourceSink`], when it has one.
    Resource {
        /// The resource, as the host subscribed to it.
        uri: String,
        /// What became of it.
        notice: WatchNotice,
    },
}

/// Where one session's [`Report`]s go: the cell its runtime reads its
/// health from, and the host's transcript and log sinks.
#[derive(Clone)]
pub struct Reports {
    /// The server whose session reports.
    pub server: String,
    /// The session's health, as its runtime reads it.
    pub health: Arc<Mutex<Health>>,
    /// The transcript's sink, when recording.
    pub record: Option<Arc<dyn TranscriptSink>>,
    /// The host's sink for server logs.
    pub logs: Option<Arc<dyn LogSink>>,
    /// The host's sink for updates of subscribed resources.
    pub resource_updates: Option<Arc<dyn ResourceSink>>,
}

impl Reports {
    /// Delivers `report` (a poisoned health cell is written as it
    /// stands: health is a report, not an invariant).
    pub fn deliver(&self, report: Report) {
        match report {
            Report::Health(now) => match self.health.lock() {
                Ok(mut health) => *health = now,
                Err(poisoned) => *poisoned.into_inner() = now,
            },
            Report::Record(lines) => {
                if let Some(sink) = &self.record {
                    sink.write(lines);
                }
            }
            Report::Log(log) => {
                if let Some(sink) = &self.logs {
                    sink.server_log(&self.server, &log);
                }
            }
            Report::Resource { uri, notice } => {
                if let Some(sink) = &self.resource_updates {
                    sink.notice(&self.server, &uri, notice);
                }
            }
        }
    }
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
    /// The transport ended and a restart waits for its backoff, until
    /// this instant.
    Backoff(Instant),
    /// [`Effect::StartTransport`] handed out; waiting for
    /// [`Driver::restart_transport`].
    Respawn,
    /// Finished: nothing more comes.
    Done,
}

/// A restart decided for a lost session, until its new session is ready.
#[derive(Clone, Debug)]
struct Attempt {
    /// Which attempt in a row, from 1.
    attempt: u32,
    /// How many in a row the policy allows.
    attempts: u32,
    /// When to start the server again.
    at: Instant,
}

/// A call or request that came while a restart was under way.
#[derive(Debug)]
struct Held<R> {
    /// When it stops waiting: its budget from when it came.
    until: Instant,
    /// When it came.
    since: Instant,
    /// The command itself: a [`Command::CallTool`] or [`Command::Request`].
    command: Command<R>,
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
    /// Whether a lost session is started again, and when.
    restarts: Restarts,
    /// The restart decided for the session that was lost, from its close
    /// until the new session is ready.
    restart: Option<Attempt>,
    /// Why the session that closed is not restarted, from its close
    /// until [`Driver::finish`].
    stop: Option<Stop>,
    /// Calls and requests waiting for the restart, in the order they came.
    held: VecDeque<Held<R>>,
    /// How long a held call waits when it names no budget of its own: the
    /// server's `tool_timeout`.
    tool_timeout: Duration,
    /// The resources the host holds subscriptions to, across sessions.
    watching: BTreeSet<String>,
    /// The host's subscribe requests in flight, by call: watched once
    /// answered with success.
    subscribing: BTreeMap<CallId, String>,
    /// The driver's own requests renewing the subscriptions on a restarted
    /// session, by call; their answers reach no caller.
    renewing: BTreeMap<CallId, Renewal>,
}

/// A request of the driver's own about a watched resource.
#[derive(Clone, Debug)]
enum Renewal {
    /// Subscribes the restarted session to a URI watched.
    Subscribe(String),
    /// Ends a subscription renewed after the host let it go.
    Unsubscribe,
}

impl<R> Driver<R> {
    /// Builds the connection `setup` describes, at `now` (the startup budget
    /// runs from here). Fails when the server's headers need an ambient
    /// variable that is unset or unusable: the user's to fix, and nothing
    /// was started.
    pub fn connect(setup: Setup<'_>, now: Instant) -> Result<Self, StartupError> {
        Ok(Self {
            server: setup.config.id.as_str().to_owned(),
            conn: Self::connection(&setup, now)?,
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
            restarts: Restarts::new(setup.config.restart),
            restart: None,
            stop: None,
            held: VecDeque::new(),
            tool_timeout: setup.config.tool_timeout,
            watching: BTreeSet::new(),
            subscribing: BTreeMap::new(),
            renewing: BTreeMap::new(),
        })
    }

    /// A new connection for `setup`, started at `now`.
    fn connection(setup: &Setup<'_>, now: Instant) -> Result<Connection, StartupError> {
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
            can_open_urls: setup.host.can_open_urls(),
            renders_apps: setup.host.renders_apps,
            can_reauthorize: setup.host.can_reauthorize(),
            can_sample: setup.host.can_sample(),
            dpop: proofs.as_ref(),
            secrets: Some(&setup.host.secrets),
        };
        Ok(if setup.record {
            Connection::new_recorded(setup.config, &context, now)?
        } else {
            Connection::new(setup.config, &context, now)?
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

    /// Whether no session is open (nothing more goes in from a transport;
    /// while a restart is under way, commands still do).
    pub fn is_closed(&self) -> bool {
        !matches!(self.phase, Phase::Open)
    }

    /// Whether the driver is finished: no session, and no restart to come.
    /// The executor's loop for the server ends here.
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done)
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
        if self.restart.is_some() {
            self.while_restarting(now, command);
            return Ok(());
        }
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
                task,
                reply,
            } => match self
                .conn
                .call_tool_with(now, &tool, arguments, budget, task)
            {
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
                Ok(call) => {
                    match &*request {
                        FeatureRequest::SubscribeResource(p) => {
                            self.subscribing.insert(call, p.uri.clone());
                        }
                        FeatureRequest::UnsubscribeResource(p) => {
                            self.watching.remove(&p.uri);
                        }
                        _ => {}
                    }
                    self.calls
                        .insert(ticket, call, request.method().to_owned(), reply)
                }
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
                Answer::Url(answer) => self.conn.answer_url(now, question, answer),
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
        self.expire_held(now);
        match self.phase {
            Phase::Open if self.conn.poll_timeout().is_some_and(|at| at <= now) => {
                self.drain = Drain::Outputs;
                self.conn.handle_timeout(now);
            }
            Phase::Backoff(at) if at <= now => {
                self.phase = Phase::Respawn;
                self.pending.push_back(Effect::StartTransport);
            }
            _ => {}
        }
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

    /// When [`Driver::handle_timeout`] is next due: the session's next
    /// deadline, a restart's backoff, or a held call's budget.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let own = match self.phase {
            Phase::Open => self.conn.poll_timeout(),
            Phase::Backoff(at) => Some(at),
            Phase::Respawn => None,
            Phase::Closed(_) | Phase::Ending(_) | Phase::Done => return None,
        };
        let held = self.held.iter().map(|h| h.until).min();
        match (own, held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What the next deadline is for, when it is the session's.
    pub fn timeout_reason(&self) -> Option<Timer> {
        let next = self.poll_timeout()?;
        let session = self.conn.poll_timeout().filter(|_| !self.is_closed())?;
        (session == next)
            .then(|| self.conn.timeout_reason())
            .flatten()
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
            if matches!(
                self.phase,
                Phase::Ending(_) | Phase::Backoff(_) | Phase::Respawn | Phase::Done
            ) {
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
                                return Some(Effect::Report(Report::Record(lines)));
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
                if self.restart.take().is_some() {
                    return Some(self.restarted(*ready));
                }
                if !std::mem::take(&mut self.starting) {
                    return None;
                }
                self.restarts.ready(self.now);
                Some(Effect::Startup(Ok(Started {
                    ready: *ready,
                    elapsed: self.now.saturating_duration_since(self.started_at),
                    pid: self.pid,
                })))
            }
            Event::RequestCompleted { call, result } if self.renewing.contains_key(&call) => {
                self.renewed(call, result.map(drop));
                None
            }
            Event::CallCompleted { call, result } => {
                let reply = self.calls.complete(call)?;
                Some(Effect::Reply(
                    reply,
                    CallUpdate::Done(result.map_err(ToolCallError::Call)),
                ))
            }
            Event::RequestCompleted { call, result } => {
                if let Some(uri) = self.subscribing.remove(&call)
                    && result.is_ok()
                {
                    self.watching.insert(uri);
                }
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
                    .then(|| Effect::Report(Report::Health(self.health.clone())))
            }
            Event::Log(log) => Some(Effect::Report(Report::Log(log))),
            Event::ResourceUpdated { uri } if self.watching.contains(&uri) => {
                Some(Effect::Report(Report::Resource {
                    uri,
                    notice: WatchNotice::Updated,
                }))
            }
            Event::ResourceUpdated { .. } => None,
            Event::ResourceWatchRenewed { uris } => {
                for uri in uris {
                    if self.watching.contains(&uri) {
                        self.report_watch(uri, WatchNotice::Renewed);
                    }
                }
                None
            }
            Event::ResourceWatchEnded { uris, end } => {
                for uri in uris {
                    if self.watching.remove(&uri) {
                        self.report_watch(uri, WatchNotice::Ended(end.clone()));
                    }
                }
                None
            }
            // What was done at the URL is the server's; the host hears
            // that it is done in the log (a -32042's retry is the person's
            // to ask for).
            Event::UrlElicitationCompleted { elicitation_id } => {
                tracing::info!(
                    server = %self.server,
                    elicitation_id = %crate::text::terminal::sanitize_line(&elicitation_id),
                    "the server says the interaction at the URL it asked to open is complete"
                );
                None
            }
            Event::Closed(reason) => {
                if matches!(self.phase, Phase::Open) {
                    // Decided now, so calls that come while the transport
                    // ends already wait for the restart. A failed first
                    // startup is startup's to report, never restarted.
                    if !self.starting {
                        self.decide(self.now, matches!(reason, CloseReason::Requested));
                    }
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

    /// The transport has ended ([`Effect::EndTransport`]) at `now`;
    /// `stderr` is the tail of what a stdio child wrote there. Every caller
    /// still waiting hears that the session closed, then startup hears why
    /// it failed, or, for a server that was ready, its health does (unless
    /// rho closed it): that a restart is under way, or why it is not. Drain
    /// [`Driver::poll_effect`] afterwards; unless [`Driver::is_done`], keep
    /// driving for the restart.
    pub fn finish(&mut self, now: Instant, stderr: Option<String>) {
        let reason = match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Ending(reason) | Phase::Closed(reason) => reason,
            Phase::Open => CloseReason::Requested,
            other @ (Phase::Backoff(_) | Phase::Respawn | Phase::Done) => {
                self.phase = other;
                return;
            }
        };
        self.now = now;
        // What the server wrote to stderr explains a failure, not a close
        // rho asked for.
        let stderr = stderr.filter(|_| !matches!(reason, CloseReason::Requested));
        let mut text = reason.to_string();
        if let Some(stderr) = &stderr {
            text.push('\n');
            text.push_str(stderr);
        }
        // The lost session's requests are answered below or never.
        self.subscribing.clear();
        self.renewing.clear();
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
            return;
        }
        if let Some(attempt) = self.restart.clone() {
            self.back_off(attempt, text);
            return;
        }
        let stop = self.stop.take();
        if matches!(reason, CloseReason::Requested) {
            // Closed by rho, restart or not: the calls that waited hear it,
            // and the health has nothing to report; the subscriptions end
            // with it, as the host asked.
            self.watching.clear();
            self.fail_held(&text);
            if self.health.restarting.take().is_some() {
                self.pending
                    .push_back(Effect::Report(Report::Health(self.health.clone())));
            }
            return;
        }
        self.give_up(stop.unwrap_or(Stop::Disabled), text);
    }

    /// A new transport for the restart [`Effect::StartTransport`] asked
    /// for was started at `now` (`started`: a stdio child's pid), or could
    /// not be (why). Returns whether the driver keeps it: `false` when it
    /// could not start (a further attempt is decided), or when rho closed
    /// the server meanwhile; then the executor ends whatever it started.
    /// Drain [`Driver::poll_effect`] afterwards.
    pub fn restart_transport(
        &mut self,
        setup: Setup<'_>,
        now: Instant,
        started: Result<Option<u32>, TransportSetupError>,
    ) -> bool {
        if !matches!(self.phase, Phase::Respawn) {
            return false;
        }
        self.now = now;
        let connected = started
            .map_err(StartupError::Transport)
            .and_then(|pid| Ok((Self::connection(&setup, now)?, pid)));
        match connected {
            Ok((conn, pid)) => {
                self.conn = conn;
                self.pid = pid;
                self.phase = Phase::Open;
                self.drain = Drain::Outputs;
                true
            }
            Err(error) => {
                self.phase = Phase::Done;
                self.decide(now, false);
                let reason = error.to_string();
                match self.restart.clone() {
                    Some(attempt) => self.back_off(attempt, reason),
                    None => {
                        let stop = self.stop.take().unwrap_or(Stop::Disabled);
                        self.give_up(stop, reason);
                    }
                }
                false
            }
        }
    }

    // ----- restarts -----

    /// Asks the policy what becomes of the session that ended at `now`.
    fn decide(&mut self, now: Instant, requested: bool) {
        match self.restarts.ended(now, requested) {
            Decision::Restart {
                attempt,
                attempts,
                at,
            } => {
                self.restart = Some(Attempt {
                    attempt,
                    attempts,
                    at,
                });
                self.stop = None;
            }
            Decision::Stop(stop) => {
                self.restart = None;
                self.stop = Some(stop);
            }
        }
    }

    /// The transport is down and `attempt` is decided: wait out its
    /// backoff, saying so in the health. `reason` is why the last process
    /// ended, or why the last attempt could not start one.
    fn back_off(&mut self, attempt: Attempt, reason: String) {
        let wait = attempt.at.saturating_duration_since(self.now);
        tracing::warn!(
            server = %self.server,
            "session ended: {reason}; restarting it in {} ms (attempt {} of {})",
            wait.as_millis(),
            attempt.attempt,
            attempt.attempts
        );
        self.phase = Phase::Backoff(attempt.at);
        self.health.failure = None;
        self.health.restarting = Some(PendingRestart {
            reason,
            attempt: attempt.attempt,
            attempts: attempt.attempts,
        });
        self.pending
            .push_back(Effect::Report(Report::Health(self.health.clone())));
    }

    /// The lost session stays lost, for `stop`'s reason: the calls that
    /// waited fail with `reason`, and so does the health.
    fn give_up(&mut self, stop: Stop, reason: String) {
        self.phase = Phase::Done;
        self.restart = None;
        let text = match stop {
            Stop::Exhausted { attempts } => format!(
                "restarts exhausted: {attempts} restart{} in a row failed; the last: {reason}",
                if attempts == 1 { "" } else { "s" }
            ),
            _ => reason,
        };
        tracing::warn!(server = %self.server, "session ended: {text}");
        self.fail_held(&text);
        for uri in std::mem::take(&mut self.watching) {
            let end = WatchEnd::ServerEnded {
                reason: text.clone(),
            };
            self.report_watch(uri, WatchNotice::Ended(end));
        }
        self.health.restarting = None;
        self.health.restarts_exhausted = matches!(stop, Stop::Exhausted { .. });
        self.health.failure = Some(text);
        self.pending
            .push_back(Effect::Report(Report::Health(self.health.clone())));
    }

    /// The restarted session is ready: it stands in for the lost one.
    /// Its tools and catalog are reported as the latest (the registry
    /// keeps the startup set and reconciles them, as after a
    /// `list_changed`), and the calls that waited go to it.
    fn restarted(&mut self, ready: ServerReady) -> Effect<R> {
        let now = self.now;
        self.restarts.ready(now);
        let restarts = self.restarts.restarted();
        tracing::info!(
            server = %self.server,
            pid = self.pid,
            "restarted (restart {restarts} of this run)"
        );
        self.renew_watches(now);
        for held in std::mem::take(&mut self.held) {
            let Held {
                since, mut command, ..
            } = held;
            let withdrawn = match &command {
                Command::CallTool { tool, .. } if !ready.tools.iter().any(|t| &t.name == tool) => {
                    Some(tool.clone())
                }
                _ => None,
            };
            if let Some(tool) = withdrawn {
                let server = self.server.clone();
                self.reply_held(command, ToolCallError::Withdrawn { server, tool });
                continue;
            }
            // What is left of its budget: the wait took the rest.
            let waited = now.saturating_duration_since(since);
            match &mut command {
                Command::CallTool { budget, .. } => {
                    *budget = Some(budget.unwrap_or(self.tool_timeout).saturating_sub(waited));
                }
                Command::Request { budget, .. } => {
                    *budget = budget.map(|b| b.saturating_sub(waited));
                }
                _ => {}
            }
            // The session is open and no restart is under way: it takes it.
            let _ = self.handle_command(now, command);
        }
        self.health.restarting = None;
        self.health.failure = None;
        self.health.ping_failure = None;
        self.health.restarts = restarts;
        self.health.pid = self.pid;
        self.health.tools_now = Some(Arc::new(ready.tools));
        self.health.catalog_now = Some(Arc::new(*ready.catalog));
        Effect::Report(Report::Health(self.health.clone()))
    }

    /// A command while a restart is under way: a call or request waits
    /// for the new session (within its budget), a cancel ends a waiting
    /// one, an answer (to the lost session's question) is dropped, and a
    /// close stops the restart.
    fn while_restarting(&mut self, now: Instant, command: Command<R>) {
        self.now = now;
        match command {
            Command::Request { request, reply, .. }
                if matches!(&*request, FeatureRequest::UnsubscribeResource(_)) =>
            {
                // No process holds it: it ends here, and is not renewed.
                if let FeatureRequest::UnsubscribeResource(p) = &*request {
                    self.watching.remove(&p.uri);
                }
                self.pending.push_back(Effect::Reply(
                    reply,
                    CallUpdate::Answered(Ok(serde_json::json!({}))),
                ));
            }
            Command::CallTool { budget, .. } | Command::Request { budget, .. } => {
                let wait = budget.unwrap_or(self.tool_timeout);
                self.held.push_back(Held {
                    until: now + wait,
                    since: now,
                    command,
                });
            }
            Command::Cancel { ticket } => {
                if let Some(at) = self
                    .held
                    .iter()
                    .position(|h| ticket_of(&h.command) == Some(ticket))
                {
                    if let Some(held) = self.held.remove(at) {
                        self.reply_held(
                            held.command,
                            ToolCallError::Call(CallError::Cancelled {
                                server: self.server.clone(),
                                notice: CancelNotice::NothingRunning,
                            }),
                        );
                    }
                } else if let Some(call) = self.calls.cancel(ticket)
                    && matches!(self.phase, Phase::Open)
                {
                    self.drain = Drain::Outputs;
                    self.conn.cancel_call(now, call);
                }
            }
            // The question was the lost session's.
            Command::Answer { .. } => {}
            Command::Close => {
                self.restart = None;
                self.stop = Some(Stop::Requested);
                match self.phase {
                    Phase::Open => {
                        self.drain = Drain::Outputs;
                        self.conn.close(now);
                    }
                    Phase::Backoff(_) | Phase::Respawn => {
                        // No transport to end: finish says the rest.
                        self.phase = Phase::Ending(CloseReason::Requested);
                        self.pending.push_back(Effect::EndTransport);
                    }
                    // The lost session's transport is ending already.
                    Phase::Closed(_) | Phase::Ending(_) | Phase::Done => {}
                }
            }
        }
    }

    // ----- resource subscriptions across sessions -----

    /// Subscribes the restarted session to every URI watched.
    fn renew_watches(&mut self, now: Instant) {
        for uri in self.watching.clone() {
            let request = FeatureRequest::SubscribeResource(SubscribeParams { uri: uri.clone() });
            match self.conn.request(now, &request, None) {
                Ok(call) => {
                    self.drain = Drain::Outputs;
                    self.renewing.insert(call, Renewal::Subscribe(uri));
                }
                Err(misuse) => {
                    self.watching.remove(&uri);
                    let end = WatchEnd::NotRenewed {
                        reason: misuse.to_string(),
                    };
                    self.report_watch(uri, WatchNotice::Ended(end));
                }
            }
        }
    }

    /// A request of the driver's own was answered (`Ok` with success).
    fn renewed(&mut self, call: CallId, result: Result<(), CallError>) {
        let Some(Renewal::Subscribe(uri)) = self.renewing.remove(&call) else {
            return;
        };
        match result {
            Ok(()) if self.watching.contains(&uri) => {
                tracing::info!(server = %self.server, "subscribed again to a resource the host watches");
                self.report_watch(uri, WatchNotice::Renewed);
            }
            Ok(()) => {
                // The host let it go while it was being renewed: the new
                // session holds it for no one.
                let request = FeatureRequest::UnsubscribeResource(SubscribeParams { uri });
                if let Ok(call) = self.conn.request(self.now, &request, None) {
                    self.drain = Drain::Outputs;
                    self.renewing.insert(call, Renewal::Unsubscribe);
                }
            }
            // This session ended too: the next one renews it, or the
            // server's end is reported.
            Err(CallError::SessionClosed { .. }) => {}
            Err(error) => {
                if self.watching.remove(&uri) {
                    let end = WatchEnd::NotRenewed {
                        reason: error.to_string(),
                    };
                    self.report_watch(uri, WatchNotice::Ended(end));
                }
            }
        }
    }

    /// Tells the host `notice` of `uri`.
    fn report_watch(&mut self, uri: String, notice: WatchNotice) {
        self.pending
            .push_back(Effect::Report(Report::Resource { uri, notice }));
    }

    /// Fails the held calls whose budget ran out by `now`.
    fn expire_held(&mut self, now: Instant) {
        while let Some(at) = self.held.iter().position(|h| h.until <= now) {
            let Some(held) = self.held.remove(at) else {
                break;
            };
            let waited = held.until.saturating_duration_since(held.since);
            let why = self
                .health
                .restarting
                .as_ref()
                .map(|r| {
                    format!(
                        " (attempt {} of {}; its last process: {})",
                        r.attempt, r.attempts, r.reason
                    )
                })
                .unwrap_or_default();
            let reason = format!(
                "it is restarting{why}, and the call's {} s ran out while it waited",
                waited.as_secs_f64()
            );
            self.reply_held(
                held.command,
                ToolCallError::ServerNotReady {
                    server: self.server.clone(),
                    reason,
                },
            );
        }
    }

    /// Every held call fails, unsent, with `reason`.
    fn fail_held(&mut self, reason: &str) {
        for held in std::mem::take(&mut self.held) {
            self.reply_held(
                held.command,
                ToolCallError::ServerNotReady {
                    server: self.server.clone(),
                    reason: reason.to_owned(),
                },
            );
        }
    }

    /// Ends a held call or request with `error`.
    fn reply_held(&mut self, command: Command<R>, error: ToolCallError) {
        if let Command::CallTool { reply, .. } | Command::Request { reply, .. } = command {
            self.pending
                .push_back(Effect::Reply(reply, CallUpdate::Done(Err(error))));
        }
    }
}

/// The ticket of a call or request.
fn ticket_of<R>(command: &Command<R>) -> Option<u64> {
    match command {
        Command::CallTool { ticket, .. } | Command::Request { ticket, .. } => Some(*ticket),
        _ => None,
    }
}
