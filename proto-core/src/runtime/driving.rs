//! The vocabulary every executor's driver speaks, and the bookkeeping
//! they share: what wakes a driver ([`Input`]), what the host asks of a
//! running server ([`Command`]), what a caller hears about its call
//! ([`CallUpdate`]), the table of calls in flight ([`CallTable`]), whether
//! a caller's call may be sent yet ([`Admission`]), and the runtime's wait
//! for its servers' startup ([`StartupWait`], with its [`STARTUP_MARGIN`]).
//!
//! The types are generic over `R`, the executor's reply channel (a one-call
//! mailbox on threads, a smol channel sender on smol), so each executor
//! keeps only its own waiting and sending, and nothing else is written
//! twice. Like the rest of the core, nothing here reads a clock: `now` is
//! passed in.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::env::EnvError;
use crate::config::process::{ProgramCandidates, not_found_message};
use crate::connection::HttpInput;
use crate::features::elicitation::{FormAnswer, UrlAnswer};
use crate::http::{AuthorizationError, ExchangeId, HeaderError};
use crate::runtime::backlog::{BACKLOG_POLL, Backlog, CALLER_ROOM, not_reading_reason};
use crate::runtime::status::FailureKind;
use crate::runtime::{Health, Inventory, SlotId, ToolCallError};
use crate::session::{
    CallError, CallId, CancelNotice, CloseReason, Event, Progress, QuestionId, SamplingAnswer,
    ServerReady,
};
use crate::wire::protocol::CallToolResult;

/// What a stdio child's pipes tell its driver.
#[derive(Debug)]
pub enum PipeEvent {
    /// Bytes from stdout.
    Stdout(Vec<u8>),
    /// stdout reached end of file (or failed to read).
    StdoutClosed,
    /// Writing stdin failed: the child stopped reading.
    WriteFailed(String),
}

/// Everything that wakes a driver.
#[derive(Debug)]
pub enum Input<R> {
    /// From a stdio child's pipes.
    Pipe(PipeEvent),
    /// From an HTTP exchange.
    Http(ExchangeId, HttpInput),
    /// From the host.
    Command(Command<R>),
}

/// What the host asks of a running server.
#[derive(Debug)]
pub enum Command<R> {
    /// Call a tool by the server's own name; `ticket` names the call for a
    /// later [`Command::Cancel`].
    CallTool {
        /// The host's name for this call.
        ticket: u64,
        /// The server's own tool name.
        tool: String,
        /// The arguments object.
        arguments: Value,
        /// The call's own budget, in place of the server's
        /// `tool_timeout` ([`crate::runtime::CallOptions::timeout`]).
        budget: Option<std::time::Duration>,
        /// When a 2025-era call goes as a task
        /// ([`crate::runtime::CallOptions::as_task`]).
        task: crate::session::TaskAugmentation,
        /// Where [`CallUpdate`]s go.
        reply: R,
    },
    /// Send a prompt, resource or completion request; `ticket` names it
    /// for a later [`Command::Cancel`]. The caller hears
    /// [`CallUpdate::Answered`] (or, if the session ends first,
    /// [`CallUpdate::Done`] with the error).
    Request {
        /// The host's name for this request.
        ticket: u64,
        /// What to ask (boxed: completion params are large beside the
        /// other commands).
        request: Box<crate::features::FeatureRequest>,
        /// The request's own budget, in place of its default.
        budget: Option<std::time::Duration>,
        /// Where the answer goes.
        reply: R,
    },
    /// The caller gave up on a call: abandon it (the server is told).
    Cancel {
        /// The call's ticket.
        ticket: u64,
    },
    /// The host answered a server's question.
    Answer {
        /// Which question.
        question: QuestionId,
        /// The answer.
        answer: Answer,
    },
    /// End the session and the transport.
    Close,
}

/// The host's answer to a question, either kind.
#[derive(Debug)]
pub enum Answer {
    /// For an elicitation question.
    Form(FormAnswer),
    /// For a URL-mode elicitation question.
    Url(UrlAnswer),
    /// For a sampling question.
    Sampling(SamplingAnswer),
    /// For an authorization question: the new `Authorization` header
    /// value, or why the host could not get one.
    Authorization(Result<String, AuthorizationError>),
}

/// What a caller hears about one call: any progress, then its end.
#[derive(Debug)]
pub enum CallUpdate {
    /// A progress notification.
    Progress(Progress),
    /// The call ended; nothing follows.
    Done(Result<CallToolResult, ToolCallError>),
    /// A [`Command::Request`] ended: the server's result as sent, or why
    /// there is none; nothing follows.
    Answered(Result<Value, ToolCallError>),
}

impl CallUpdate {
    /// What a waiting [`Command::CallTool`] caller makes of an update:
    /// progress goes to `on_progress` and `None` says keep waiting; the
    /// call's end is its result. An `Answered` never reaches a tool call
    /// (it would be the driver's mistake) and fails it, saying so.
    pub fn into_call_result(
        self,
        on_progress: impl FnOnce(Progress),
    ) -> Option<Result<CallToolResult, ToolCallError>> {
        match self {
            CallUpdate::Progress(progress) => {
                on_progress(progress);
                None
            }
            CallUpdate::Done(result) => Some(result),
            CallUpdate::Answered(_) => Some(Err(ToolCallError::ToolCallAnsweredAsRequest)),
        }
    }

    /// What a waiting [`Command::Request`] caller makes of an update:
    /// `None` for progress (keep waiting). A `Done` reaches such a caller
    /// only when the session ended first, with the reason.
    pub fn into_answer(self, server: &str) -> Option<Result<Value, ToolCallError>> {
        match self {
            CallUpdate::Progress(_) => None,
            CallUpdate::Answered(answer) => Some(answer),
            CallUpdate::Done(Err(error)) => Some(Err(error)),
            CallUpdate::Done(Ok(_)) => Some(Err(ToolCallError::RequestAnsweredAsToolCall {
                server: server.to_owned(),
            })),
        }
    }
}

/// A server that finished its handshake and discovery.
#[derive(Debug)]
pub struct Started {
    /// What the server said at startup.
    pub ready: ServerReady,
    /// From the start of connecting to ready.
    pub elapsed: Duration,
    /// The process id of a stdio server.
    pub pid: Option<u32>,
}

/// Why a server did not start, split by who is at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    /// The configuration cannot become a connection in this environment
    /// (a header wants an unset variable): the user's to fix.
    #[error(transparent)]
    Headers(#[from] HeaderError),
    /// The executor could not set up the transport (the program did not
    /// start, its pipes or a thread could not be made).
    #[error(transparent)]
    Transport(#[from] TransportSetupError),
    /// The session ended before it was ready: the server's doing, or its
    /// absence (see [`CloseReason`]). `stderr` is the tail of what a stdio
    /// server wrote there, when it wrote anything.
    #[error("server `{server}`: {reason}{}", stderr.as_deref().map(|s| format!("\n{s}")).unwrap_or_default())]
    Closed {
        /// The server identity.
        server: String,
        /// Why the session ended.
        reason: CloseReason,
        /// The server's last stderr lines, redacted.
        stderr: Option<String>,
    },
}

impl StartupError {
    /// What kind of failure this is, as a server's status keeps it.
    pub fn kind(&self) -> FailureKind {
        match self {
            StartupError::Headers(_) => FailureKind::Config,
            StartupError::Transport(TransportSetupError::NotFound { .. }) => FailureKind::NotFound,
            StartupError::Transport(TransportSetupError::NotBuiltIn { .. }) => {
                FailureKind::NotBuiltIn
            }
            StartupError::Transport(_) => FailureKind::Launch,
            StartupError::Closed { reason, .. } => match reason {
                CloseReason::StartupTimeout { .. } => FailureKind::StartupTimeout,
                CloseReason::Handshake(_) => FailureKind::Handshake,
                CloseReason::Discovery(_) => FailureKind::Discovery,
                CloseReason::TransportClosed { .. } => FailureKind::Exited,
                CloseReason::TransportFailed(_) => FailureKind::Unreachable,
                // A close the host asked for, before startup ended: the
                // startup was stopped.
                CloseReason::Requested => FailureKind::Interrupted,
            },
        }
    }
}

/// How startup ended: started, or why not.
pub type StartupOutcome = Result<Started, StartupError>;

/// Why an executor could not set up a server's transport: its process
/// could not be prepared or started, or a pipe or thread could not be
/// made. Each names the server; what the OS said is kept as `reason`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TransportSetupError {
    /// The child's environment cannot be built (an `env_from_env` entry
    /// names an ambient variable that is not set): the user's to fix.
    #[error("server `{server}`: {error}")]
    Environment {
        /// The server identity.
        server: String,
        /// What is missing.
        error: EnvError,
    },
    /// The executable is not on `PATH`, or the path configured does not
    /// exist or is not executable: the user's to fix.
    #[error("{}", not_found_message(.server, .command, .candidates))]
    NotFound {
        /// The server identity.
        server: String,
        /// The configured `command`.
        command: String,
        /// Where it was looked for.
        candidates: ProgramCandidates,
    },
    /// The configured `cwd` is not a directory: the user's to fix.
    #[error("server `{server}`: cwd `{}` is not a directory", .cwd.display())]
    CwdNotADirectory {
        /// The server identity.
        server: String,
        /// The configured `cwd`.
        cwd: PathBuf,
    },
    /// The OS would not start the program.
    #[error("server `{server}`: could not start `{}`: {reason}", .program.display())]
    Spawn {
        /// The server identity.
        server: String,
        /// The executable that was found.
        program: PathBuf,
        /// What the OS said.
        reason: String,
    },
    /// The child's pipes could not be opened.
    #[error("server `{server}`: its pipes could not be opened{}", os_said(.reason))]
    Pipes {
        /// The server identity.
        server: String,
        /// What the OS said, when it said something.
        reason: Option<String>,
    },
    /// The child's stdin could not be made non-blocking.
    #[error("server `{server}`: its input could not be made non-blocking: {reason}")]
    NonBlockingInput {
        /// The server identity.
        server: String,
        /// What the OS said.
        reason: String,
    },
    /// A thread the transport needs could not be started.
    #[error("server `{server}`: could not start a thread: {reason}")]
    Thread {
        /// The server identity.
        server: String,
        /// What the OS said.
        reason: String,
    },
    /// The executor was built without the configured transport (a host
    /// that turned off the executor's `http` feature, and a server whose
    /// entry says `transport = "streamable_http"`): the host's to fix.
    #[error(
        "server `{server}`: this build has no {transport} transport (the executor crate \
         `{krate}` was built without its `{feature}` feature); use a build with it, \
         or remove the server from the config"
    )]
    NotBuiltIn {
        /// The server identity.
        server: String,
        /// The transport the entry asks for, as a person would name it.
        transport: &'static str,
        /// The executor crate.
        krate: &'static str,
        /// The cargo feature that builds the transport in.
        feature: &'static str,
    },
}

impl TransportSetupError {
    /// Why `server`, configured for Streamable HTTP, cannot start in a
    /// build of the executor crate `krate` without its `http` feature.
    pub fn http_not_built_in(server: &str, krate: &'static str) -> Self {
        TransportSetupError::NotBuiltIn {
            server: server.to_owned(),
            transport: "Streamable HTTP",
            krate,
            feature: "http",
        }
    }
}

/// `: REASON` when the OS said something.
fn os_said(reason: &Option<String>) -> String {
    reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default()
}

/// The calls a driver has in flight: their reply channels, the host's
/// tickets for them, and what each call is (for a question's [`Asked`]).
///
/// [`Asked`]: crate::host::Asked
#[derive(Debug)]
pub struct CallTable<R> {
    calls: BTreeMap<CallId, InFlight<R>>,
    tickets: BTreeMap<u64, CallId>,
}

/// One call in flight.
#[derive(Debug)]
struct InFlight<R> {
    reply: R,
    ticket: u64,
    /// The tool's own name, or the request's method.
    what: String,
}

impl<R> Default for CallTable<R> {
    fn default() -> Self {
        Self {
            calls: BTreeMap::new(),
            tickets: BTreeMap::new(),
        }
    }
}

impl<R> CallTable<R> {
    /// Records a call the session accepted: `what` is the tool's own name,
    /// or the request's method.
    pub fn insert(&mut self, ticket: u64, call: CallId, what: String, reply: R) {
        self.calls.insert(
            call,
            InFlight {
                reply,
                ticket,
                what,
            },
        );
        self.tickets.insert(ticket, call);
    }

    /// The call a ticket names, forgetting the ticket (the host cancelled).
    pub fn cancel(&mut self, ticket: u64) -> Option<CallId> {
        self.tickets.remove(&ticket)
    }

    /// The reply channel of a call still in flight.
    pub fn get(&self, call: CallId) -> Option<&R> {
        self.calls.get(&call).map(|c| &c.reply)
    }

    /// The ticket of a call still in flight, and what the call is.
    pub fn describe(&self, call: CallId) -> Option<(u64, &str)> {
        self.calls.get(&call).map(|c| (c.ticket, c.what.as_str()))
    }

    /// Removes a call that ended, returning its reply channel.
    pub fn complete(&mut self, call: CallId) -> Option<R> {
        self.tickets.retain(|_, c| *c != call);
        self.calls.remove(&call).map(|c| c.reply)
    }

    /// Every reply channel still waiting, when the session ended.
    pub fn drain(&mut self) -> impl Iterator<Item = R> + '_ {
        self.tickets.clear();
        std::mem::take(&mut self.calls)
            .into_values()
            .map(|c| c.reply)
    }
}

/// Whether a caller's call may go to its server yet. Backpressure: a
/// server that leaves its input unread gets no more calls queued for it
/// until it catches up, within the call budget. Pure: the executor looks
/// again after the pause [`Admission::check`] gives (a thread sleeps, a
/// task awaits a timer) and passes `now` in.
#[derive(Clone, Copy, Debug)]
pub struct Admission {
    budget: Duration,
    until: Instant,
}

impl Admission {
    /// A caller starts waiting at `now`, for at most the call `budget`.
    pub fn new(now: Instant, budget: Duration) -> Self {
        Self {
            budget,
            until: now + budget,
        }
    }

    /// Whether the call to `server` may go now that `backlog` holds what it
    /// holds (at most [`CALLER_ROOM`] bytes waiting, or nobody left to
    /// drain them): `Ok(None)` to send it, `Ok(Some(pause))` to look
    /// again after that pause (sooner if the caller gives up), or the
    /// error the call ends with, unsent.
    pub fn check(
        &self,
        now: Instant,
        backlog: &Backlog,
        server: &str,
    ) -> Result<Option<Duration>, ToolCallError> {
        if backlog.has_room(CALLER_ROOM) {
            return Ok(None);
        }
        if now >= self.until {
            return Err(ToolCallError::Call(CallError::Transport {
                server: server.to_owned(),
                reason: not_reading_reason(self.budget, backlog),
            }));
        }
        Ok(Some(BACKLOG_POLL.min(self.until - now)))
    }

    /// The caller gave up while it waited: nothing was sent, so there is no
    /// session call to abandon, and the call ends as cancelled here.
    pub fn gave_up(&self, server: &str) -> ToolCallError {
        ToolCallError::Call(CallError::Cancelled {
            server: server.to_owned(),
            notice: CancelNotice::NothingRunning,
        })
    }
}

/// Extra time a runtime waits beyond a server's own startup budget before
/// it stops waiting for that server's driver. The core enforces the
/// budget itself, so the margin covers only spawning and the shutdown
/// grace of a server that did not make it.
pub const STARTUP_MARGIN: Duration = Duration::from_secs(10);

/// How a runtime's wait for one server's startup ended, as its executor
/// saw it.
#[derive(Debug)]
#[non_exhaustive]
pub enum Heard {
    /// The driver reported startup.
    Outcome(StartupOutcome),
    /// The driver is gone without a report (its task or thread stopped).
    Gone,
    /// The wait reached the instant [`StartupStep::Wait`] gave.
    TimedOut,
    /// The host's interrupt was set first.
    Interrupted,
}

/// What a runtime does next while its servers start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartupStep {
    /// Wait for this server's startup report until `until` (or the host's
    /// interrupt), then tell [`StartupWait::heard`] what came.
    Wait {
        /// The server.
        slot: SlotId,
        /// When to stop waiting: its budget plus [`STARTUP_MARGIN`] from
        /// when this wait began.
        until: Instant,
    },
    /// Ask this server's driver to close now, without waiting for it: rho
    /// is stopping, and the shutdowns of every server still starting
    /// overlap instead of queueing.
    Close(SlotId),
    /// This server failed: close its driver and wait for it to end.
    Stop(SlotId),
}

/// The runtime's wait for its servers' startup, recording each outcome in
/// the [`Inventory`]. The servers all start at once; the runtime waits for
/// them one after the other, each within its own budget plus
/// [`STARTUP_MARGIN`] from when its wait begins. Once the host's interrupt
/// is heard, every server still starting is closed at once and reported
/// as interrupted without further waiting.
#[derive(Debug)]
pub struct StartupWait {
    waiting: VecDeque<(SlotId, Duration)>,
    steps: VecDeque<StartupStep>,
    /// The server being waited for, its budget and the wait's end.
    current: Option<(SlotId, Duration, Instant)>,
    interrupted: bool,
}

impl StartupWait {
    /// A wait for every server `inventory` starts.
    pub fn new(inventory: &Inventory) -> Self {
        Self {
            waiting: inventory
                .to_start()
                .into_iter()
                .map(|(slot, config)| (slot, config.startup_timeout))
                .collect(),
            steps: VecDeque::new(),
            current: None,
            interrupted: false,
        }
    }

    /// What to do next; `None` once every server is accounted for (then
    /// call [`Inventory::finish_startup`]). While a [`StartupStep::Wait`]
    /// is unanswered, the same wait comes again.
    pub fn next(&mut self, inventory: &mut Inventory, now: Instant) -> Option<StartupStep> {
        if let Some(step) = self.steps.pop_front() {
            return Some(step);
        }
        if let Some((slot, _, until)) = self.current {
            return Some(StartupStep::Wait { slot, until });
        }
        let (slot, budget) = self.waiting.pop_front()?;
        if self.interrupted {
            inventory.record_failed(
                slot,
                FailureKind::Interrupted,
                interrupted_reason(inventory, slot),
            );
            return Some(StartupStep::Stop(slot));
        }
        let until = now + budget + STARTUP_MARGIN;
        self.current = Some((slot, budget, until));
        Some(StartupStep::Wait { slot, until })
    }

    /// What the wait for `slot` came to. Anything but a ready server is
    /// recorded as failed, with its reason, and stopped next.
    pub fn heard(&mut self, inventory: &mut Inventory, slot: SlotId, heard: Heard) {
        let budget = match self.current {
            Some((current, budget, _)) if current == slot => budget,
            // Not the server waited for: nothing to record.
            _ => return,
        };
        self.current = None;
        let id = inventory.id(slot).unwrap_or_default().to_owned();
        match heard {
            Heard::Outcome(Ok(started)) => {
                inventory.record_ready(slot, started.ready, started.elapsed, started.pid);
                return;
            }
            Heard::Outcome(Err(error)) => {
                inventory.record_failed(slot, error.kind(), error.to_string())
            }
            Heard::Gone => inventory.record_failed(
                slot,
                FailureKind::DriverGone,
                format!("server `{id}`: its driver stopped before it reported startup"),
            ),
            Heard::TimedOut => inventory.record_failed(
                slot,
                FailureKind::StartupTimeout,
                format!(
                    "server `{id}`: did not finish starting within {} s",
                    budget.as_secs_f64()
                ),
            ),
            Heard::Interrupted => {
                self.interrupted = true;
                inventory.record_failed(
                    slot,
                    FailureKind::Interrupted,
                    interrupted_reason(inventory, slot),
                );
                self.steps.push_back(StartupStep::Close(slot));
                self.steps
                    .extend(self.waiting.iter().map(|&(s, _)| StartupStep::Close(s)));
            }
        }
        self.steps.push_back(StartupStep::Stop(slot));
    }
}

/// The failure reason of a server whose startup an interrupt ended.
fn interrupted_reason(inventory: &Inventory, slot: SlotId) -> String {
    let id = inventory.id(slot).unwrap_or_default();
    format!("server `{id}`: startup was interrupted (rho is stopping)")
}

impl Health {
    /// Takes in what an event says about a running server's health; returns
    /// whether it did.
    pub fn observe(&mut self, event: &Event) -> bool {
        match event {
            Event::ToolsChanged(tools) => self.tools_now = Some(std::sync::Arc::new(tools.clone())),
            Event::CatalogChanged(catalog) => {
                self.catalog_now = Some(std::sync::Arc::new((**catalog).clone()))
            }
            Event::PingAnswered => self.ping_failure = None,
            Event::PingFailed(reason) => self.ping_failure = Some(reason.clone()),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_that_closed_during_startup_names_the_server_reason_and_stderr() {
        let error = StartupError::Closed {
            server: "local".into(),
            reason: CloseReason::Handshake("no protocolVersion".into()),
            stderr: Some("stderr: boom".into()),
        };
        assert_eq!(
            error.to_string(),
            "server `local`: handshake failed: no protocolVersion\nstderr: boom"
        );
        let quiet = StartupError::Closed {
            server: "local".into(),
            reason: CloseReason::Requested,
            stderr: None,
        };
        assert_eq!(quiet.to_string(), "server `local`: closed by rho");
    }

    #[test]
    fn a_server_whose_transport_is_not_built_in_names_the_crate_and_feature() {
        let error =
            StartupError::from(TransportSetupError::http_not_built_in("remote", "rho-io-x"));
        assert_eq!(error.kind(), FailureKind::NotBuiltIn);
        assert_eq!(
            error.to_string(),
            "server `remote`: this build has no Streamable HTTP transport (the executor crate \
             `rho-io-x` was built without its `http` feature); use a build with it, or remove \
             the server from the config"
        );
    }

    #[test]
    fn a_tool_call_waits_through_progress_ends_with_its_result_and_refuses_an_answer() {
        let mut seen = Vec::new();
        let progress = Progress {
            progress: 1.0,
            total: Some(2.0),
            message: None,
        };
        let update = CallUpdate::Progress(progress);
        assert!(update.into_call_result(|p| seen.push(p.progress)).is_none());
        assert_eq!(seen, [1.0]);
        let done = CallUpdate::Done(Err(ToolCallError::UnknownServer("x".into())));
        assert!(matches!(
            done.into_call_result(|_| panic!("no progress")),
            Some(Err(ToolCallError::UnknownServer(s))) if s == "x"
        ));
        let answered = CallUpdate::Answered(Ok(Value::Null));
        assert!(matches!(
            answered.into_call_result(|_| panic!("no progress")),
            Some(Err(ToolCallError::ToolCallAnsweredAsRequest))
        ));
    }
}
