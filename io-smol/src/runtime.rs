//! The host-facing runtime on smol: many servers as tasks on the host's
//! executor, each isolated, one tool registry.
//!
//! The host owns the [`Executor`] and runs it (the `rho` CLI runs it on its
//! main thread inside `block_on`); every session is a task on it, so any
//! number of servers share that one thread. Tasks make progress only while
//! the executor runs. As on threads, with no enabled server nothing is
//! created at all, and async-io's reactor is never touched: a host that
//! drives the runtime with `smol::future::block_on` then starts no thread
//! (`smol::block_on` starts async-io's helper thread on first use).
//!
//! Implementation note: a stdio server is spawned on whichever thread runs
//! its task, and on Linux it is killed when that *thread* exits (its
//! parent-death signal, see `rho_os::process`), so the executor
//! must run on threads that live as long as the sessions (the `rho` CLI
//! runs it on its main thread). That holds for a restart too: a server
//! whose process died mid-session is spawned again by its task, on
//! whichever thread runs it then (a caller waiting in a call runs the
//! executor).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::config::Config;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::fleet::{Fleet, SessionHandle, WaitStep};
use rho_proto_core::runtime::{
    CallOptions, Cancel, Health, Inventory, Job, ServerView, Sessions, SlotId, StartServerError,
    ToolCallError,
};
use smol::channel::Receiver;
use smol::{Executor, Task, Timer};

use crate::inbox::{self, Sender};

use crate::driver::{self, Command, Input, Session, SessionCell, SharedHealth, TaskArgs};
use rho_proto_core::runtime::driving::{Admission, CallUpdate, Heard, StartupOutcome};

struct TaskHandle {
    commands: Sender<Input>,
    /// The session itself, once its transport runs: calls go straight in.
    session: SessionCell,
    task: Option<Task<()>>,
    health: SharedHealth,
    /// What waits for a stdio child's stdin: a call waits for room first.
    backlog: Arc<Backlog>,
    /// How long a call may wait for that room.
    tool_timeout: Duration,
}

/// Every configured server of one run, as tasks on the host's executor.
/// Call [`Runtime::shutdown`] to close them in order; dropping the runtime
/// instead cancels the tasks, and the children end with their process
/// groups when the executor next runs (or with the process).
pub struct Runtime {
    fleet: Fleet<TaskHandle>,
}

impl Runtime {
    /// Starts the enabled servers in `config` whose identity `select`
    /// accepts, each as a task on `executor`, and resolves once each is
    /// ready or failed. The executor must be running (this future is
    /// usually awaited inside `executor.run(...)`).
    pub async fn start(
        executor: &Arc<Executor<'static>>,
        config: &Config,
        options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
    ) -> Self {
        let mut runtime = Self {
            fleet: Fleet::new(config, options, select),
        };
        runtime.start_listed(executor).await;
        runtime
    }

    /// Starts the server `id` of `config`, which this runtime is not
    /// running (left out of its start, or failed), as a task on
    /// `executor` beside the others, and resolves once it is ready or
    /// failed, with its view. Its entry in `config` replaces the one the
    /// runtime started with (a login's token applied, say); the other
    /// servers are not touched.
    pub async fn start_server(
        &mut self,
        executor: &Arc<Executor<'static>>,
        id: &str,
        config: &Config,
    ) -> Result<ServerView, StartServerError> {
        self.fleet.start_later(id, config)?;
        self.start_listed(executor).await;
        self.fleet.started(id)
    }

    /// Closes the session of server `id` and waits for it to end (its
    /// grace period, as at shutdown), leaving the other servers alone; the
    /// server is `NotStarted` again and its tools leave the registry.
    /// `false` when it had no session.
    pub async fn stop_server(&mut self, id: &str) -> bool {
        let Some((slot, handle)) = self.fleet.take(id) else {
            return false;
        };
        handle.stop().await;
        self.fleet.stopped(slot);
        true
    }

    /// Starts what the inventory lists to start as tasks on `executor`,
    /// waits for each within its budget, and builds the tool registry.
    async fn start_listed(&mut self, executor: &Arc<Executor<'static>>) {
        let starting = self.fleet.starting();
        let (ambient, options) = (starting.ambient, starting.options);
        let root = options.workspace_root();
        let mut outcomes = BTreeMap::new();
        for (slot, server) in starting.inventory.to_start() {
            let (commands, inputs) = inbox::inbox();
            let (startup, outcome) = smol::channel::bounded(1);
            let health: SharedHealth = Arc::new(Mutex::new(Health::default()));
            let backlog = Arc::new(Backlog::default());
            let session = SessionCell::default();
            let task = executor.spawn(driver::run(TaskArgs {
                executor: Arc::clone(executor),
                config: server.clone(),
                ambient: Arc::clone(ambient),
                root: root.clone(),
                host: options.host.clone(),
                record: options.record.clone(),
                grace: options.shutdown_grace,
                inputs: (commands.clone(), inputs),
                startup,
                health: Arc::clone(&health),
                backlog: Arc::clone(&backlog),
                session: Arc::clone(&session),
            }));
            starting.handles.insert(
                slot,
                TaskHandle {
                    commands,
                    session,
                    task: Some(task),
                    health,
                    backlog,
                    tool_timeout: server.tool_timeout,
                },
            );
            outcomes.insert(slot, outcome);
        }
        let interrupt = options.interrupt.clone();
        let mut waiting = starting.wait();
        while let Some(step) = waiting.step(Instant::now()) {
            match step {
                WaitStep::Wait { slot, until } => {
                    // Every server this start spawned has its channel.
                    let outcome = &outcomes[&slot];
                    waiting.heard(slot, wait_startup(outcome, until, interrupt.as_ref()).await);
                }
                WaitStep::Stop(handle) => handle.stop().await,
            }
        }
    }

    /// Submits a job (a [`ToolCall`] or a [`ServerRequest`]) and waits
    /// for its end, as `options` say: progress handed over as it arrives,
    /// ended early by its cancel token (the session abandons the job, the
    /// server is told, and it ends with the core's own
    /// `CallError::Cancelled`, or with its answer if that came first),
    /// within its own time limit. A tool call first waits for room on a
    /// busy server (backpressure), within the same limit. Dropping the
    /// future before it resolves abandons the job the same way.
    ///
    /// [`ToolCall`]: rho_proto_core::runtime::ToolCall
    /// [`ServerRequest`]: rho_proto_core::runtime::ServerRequest
    pub async fn submit<J: Job>(
        &self,
        job: J,
        mut options: CallOptions<'_>,
    ) -> Result<J::Output, ToolCallError> {
        let routed = job.route(&self.fleet)?;
        let (slot, handle, server) = (routed.slot, routed.handle, routed.server);
        let budget = options.time_limit();
        let mut cancel = std::pin::pin!(cancelled(options.cancel_token().cloned()));
        let ended = || self.fleet.ended(slot);
        let answered = async {
            if J::WAITS_FOR_ROOM {
                let waited = budget.unwrap_or(handle.tool_timeout);
                wait_for_room(&handle.backlog, waited, server, cancel.as_mut()).await?;
            }
            let ticket = self.fleet.ticket();
            let (reply, answer) = crate::reply::reply();
            handle
                .command(routed.command(ticket, &options, reply))
                .map_err(|_| ended())?;
            // If this future is dropped before the answer, the guard in
            // `follow` tells the session to abandon the job.
            follow(handle, ticket, answer, cancel, ended, |update| {
                J::settle(update, server, |progress| options.report(progress))
            })
            .await
        };
        answered.await.map_err(|e| self.fleet.redact(slot, e))
    }

    /// Closes every session and waits for each server to exit (each within
    /// its grace period, concurrently).
    pub async fn shutdown(mut self) {
        for handle in self.fleet.close_all() {
            handle.stop().await;
        }
    }
}

impl Sessions for Runtime {
    fn inventory(&self) -> &Inventory {
        self.fleet.inventory()
    }

    fn health_of(&self, slot: SlotId) -> Option<Health> {
        self.fleet.health_of(slot)
    }
}

/// Waits for a task's startup outcome until `until`, or until `interrupt`
/// is cancelled.
async fn wait_startup(
    outcome: &Receiver<StartupOutcome>,
    until: Instant,
    interrupt: Option<&Cancel>,
) -> Heard {
    let received = async {
        match outcome.recv().await {
            Ok(outcome) => Heard::Outcome(outcome),
            Err(_) => Heard::Gone,
        }
    };
    let timed_out = async {
        Timer::at(until).await;
        Heard::TimedOut
    };
    let watch = async {
        match interrupt {
            Some(cancel) => {
                cancel.cancelled().await;
                Heard::Interrupted
            }
            None => std::future::pending().await,
        }
    };
    smol::future::or(received, smol::future::or(watch, timed_out)).await
}

/// Follows one ticket's updates until `outcome` makes one of them the
/// end. When `cancel` completes first, the session is told to abandon the
/// ticket and its own answer (the core's `Cancelled`, or the result if
/// that won) is still awaited; dropping the future abandons it the same
/// way (the guard).
async fn follow<T>(
    session: &TaskHandle,
    ticket: u64,
    mut answer: crate::reply::ReplyReceiver,
    mut cancel: std::pin::Pin<&mut impl Future<Output = ()>>,
    not_running: impl Fn() -> ToolCallError,
    mut outcome: impl FnMut(CallUpdate) -> Option<Result<T, ToolCallError>>,
) -> Result<T, ToolCallError> {
    let mut guard = CancelOnDrop {
        session,
        ticket,
        armed: true,
    };
    let mut cancelled = false;
    loop {
        let update = if cancelled {
            answer.recv().await
        } else {
            let next = async { Some(answer.recv().await) };
            let cancel = async {
                cancel.as_mut().await;
                None
            };
            // The cancel first: a flood of progress must not hide it.
            match smol::future::or(cancel, next).await {
                Some(update) => update,
                None => {
                    cancelled = true;
                    guard.armed = false;
                    session
                        .command(Command::Cancel { ticket })
                        .map_err(|_| not_running())?;
                    continue;
                }
            }
        };
        if let Some(end) = outcome(update.map_err(|_| not_running())?) {
            guard.armed = false;
            return end;
        }
    }
}

/// A command found its session closed.
struct SessionGone;

/// Abandons a call whose future was dropped.
struct CancelOnDrop<'a> {
    session: &'a TaskHandle,
    ticket: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.session.command(Command::Cancel {
                ticket: self.ticket,
            });
        }
    }
}

impl SessionHandle for TaskHandle {
    fn health_cell(&self) -> &Mutex<Health> {
        &self.health
    }

    fn close(&self) {
        let _ = self.commands.send(Input::Command(Command::Close));
    }
}

impl TaskHandle {
    /// Hands `command` to the session: straight in once its transport
    /// runs, through the task's inbox before. Fails when the session is
    /// gone (the command is dropped: a caller's reply channel with it).
    fn command(&self, command: Command) -> Result<(), SessionGone> {
        match self.session.get() {
            Some(session) => Session::command(session, command).map_err(|_| SessionGone),
            None => self
                .commands
                .send(Input::Command(command))
                .map_err(|_| SessionGone),
        }
    }

    /// Asks the task to close and waits for it; its own shutdown is
    /// bounded (grace, then kill).
    async fn stop(mut self) {
        self.close();
        if let Some(task) = self.task.take() {
            task.await;
        }
    }
}

/// Waits until the call to `server` may go: `Ok` once `backlog` has room
/// (or nobody drains it), the core's error once the call's `budget`
/// passed or `cancel` resolved first (the core's
/// [`Admission`] decides; this only waits).
async fn wait_for_room(
    backlog: &Backlog,
    budget: Duration,
    server: &str,
    mut cancel: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Result<(), ToolCallError> {
    let admission = Admission::new(Instant::now(), budget);
    while let Some(pause) = admission.check(Instant::now(), backlog, server)? {
        let slept = async {
            Timer::after(pause).await;
            true
        };
        let gave_up = async {
            cancel.as_mut().await;
            false
        };
        if !smol::future::or(slept, gave_up).await {
            return Err(admission.gave_up(server));
        }
    }
    Ok(())
}

/// Resolves once `cancel` is cancelled; never without one.
async fn cancelled(cancel: Option<Cancel>) {
    match cancel {
        Some(cancel) => cancel.cancelled().await,
        None => std::future::pending().await,
    }
}
