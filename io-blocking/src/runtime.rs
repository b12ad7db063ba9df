//! The host-facing runtime on threads: many servers, each isolated, one
//! tool registry.
//!
//! Every selected, enabled server starts at once on its own driver thread,
//! under its own startup budget (enforced by the core). A server that fails
//! takes nothing else down: it is reported with its reason, and the rest
//! load. With no enabled server, nothing is created at all — no thread, no
//! process, no socket.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rho_proto_core::config::{Config, ServerConfig};
use rho_proto_core::runtime::fleet::{Fleet, SessionHandle, WaitStep};
use rho_proto_core::runtime::{
    CallOptions, Cancel, Health, Inventory, Job, ServerView, Sessions, SlotId, StartServerError,
    ToolCallError,
};

use crate::backlog::wait_for_room;
use crate::driver::{Command, Driver, SharedHealth};
use crate::reply::Next;
use rho_proto_core::host::{HostServices, RuntimeOptions, TranscriptSink};
use rho_proto_core::runtime::backlog::Backlog;
use rho_proto_core::runtime::driving::{CallUpdate, Heard, StartupError, TransportSetupError};

/// Every configured server of one run. Dropping it shuts them all down.
pub struct Runtime {
    fleet: Fleet<DriverHandle>,
}

struct DriverHandle {
    /// The session, driven from the caller's thread.
    driver: Arc<Driver>,
    thread: Option<JoinHandle<()>>,
    health: SharedHealth,
    /// What waits for a stdio child's stdin: a call waits for room first.
    backlog: Arc<Backlog>,
    /// How long a call may wait for that room.
    tool_timeout: Duration,
}

impl Runtime {
    /// Starts the enabled servers in `config` whose identity `select`
    /// accepts, concurrently, and returns once each is ready or failed;
    /// the others report
    /// [`ServerStatus::NotStarted`](rho_proto_core::runtime::status::ServerStatus::NotStarted).
    pub fn start(config: &Config, options: RuntimeOptions, select: impl Fn(&str) -> bool) -> Self {
        let mut runtime = Self {
            fleet: Fleet::new(config, options, select),
        };
        runtime.start_listed();
        runtime
    }

    /// Starts the server `id` of `config`, which this runtime is not
    /// running (left out of its start, or failed), beside the others, and
    /// returns once it is ready or failed, with its view. Its entry in
    /// `config` replaces the one the runtime started with (a login's
    /// token applied, say); the other servers are not touched.
    pub fn start_server(
        &mut self,
        id: &str,
        config: &Config,
    ) -> Result<ServerView, StartServerError> {
        self.fleet.start_later(id, config)?;
        self.start_listed();
        self.fleet.started(id)
    }

    /// Closes the session of server `id` and waits for it to end (its
    /// grace period, as at shutdown), leaving the other servers alone; the
    /// server is `NotStarted` again and its tools leave the registry.
    /// `false` when it had no session.
    pub fn stop_server(&mut self, id: &str) -> bool {
        let Some((slot, mut driver)) = self.fleet.take(id) else {
            return false;
        };
        driver.stop();
        self.fleet.stopped(slot);
        true
    }

    /// Starts what the inventory lists to start, concurrently, waits for
    /// each within its budget, and builds the tool registry.
    fn start_listed(&mut self) {
        let starting = self.fleet.starting();
        let (ambient, options) = (starting.ambient, starting.options);
        let root = options.workspace_root();
        let mut outcomes = BTreeMap::new();
        // What an interrupt wakes: every wait below blocks on one of these.
        let mut wakes = Vec::new();
        for (slot, server) in starting.inventory.to_start() {
            let (tx, outcome) = mpsc::channel();
            wakes.push(tx.clone());
            match spawn_driver(
                server,
                ambient,
                (root.clone(), options.host.clone(), options.record.clone()),
                options.shutdown_grace,
                tx,
            ) {
                Ok(handle) => {
                    starting.handles.insert(slot, handle);
                }
                Err(error) => {
                    let _ = wakes[wakes.len() - 1]
                        .send(Heard::Outcome(Err(StartupError::Transport(error))));
                }
            }
            outcomes.insert(slot, outcome);
        }
        let interrupt = options.interrupt.as_ref();
        let _interrupted = interrupt.map(|cancel| {
            cancel.on_cancel(move || {
                for wake in wakes {
                    let _ = wake.send(Heard::Interrupted);
                }
            })
        });
        let mut waiting = starting.wait();
        while let Some(step) = waiting.step(Instant::now()) {
            match step {
                WaitStep::Wait { slot, until } => {
                    // Every server this start spawned has its channel.
                    let heard = wait_startup(&outcomes[&slot], until, interrupt);
                    waiting.heard(slot, heard);
                }
                WaitStep::Stop(mut driver) => driver.stop(),
            }
        }
    }

    /// Submits a job (a [`ToolCall`] or a [`ServerRequest`]) and waits
    /// for its end, as `options` say: progress handed over as it arrives,
    /// ended early by its cancel token (the server is told and the job
    /// ends as cancelled), within its own time limit. A tool call first
    /// waits for room on a busy server (backpressure), within the same
    /// limit.
    ///
    /// [`ToolCall`]: rho_proto_core::runtime::ToolCall
    /// [`ServerRequest`]: rho_proto_core::runtime::ServerRequest
    pub fn submit<J: Job>(
        &self,
        job: J,
        mut options: CallOptions<'_>,
    ) -> Result<J::Output, ToolCallError> {
        let routed = job.route(&self.fleet)?;
        let (slot, driver, server) = (routed.slot, routed.handle, routed.server);
        let cancel = options.cancel_token().cloned();
        let budget = options.time_limit();
        let ended = || self.fleet.ended(slot);
        // Backpressure: the core says whether a call may go yet, and what
        // it ends with if not.
        let room = if J::WAITS_FOR_ROOM {
            let waited = budget.unwrap_or(driver.tool_timeout);
            wait_for_room(&driver.backlog, waited, server, cancel.as_ref())
        } else {
            Ok(())
        };
        room.and_then(|()| {
            let (reply, answer) = crate::reply::mailbox();
            let ticket = self.fleet.ticket();
            let command = routed.command(ticket, &options, reply);
            driver.driver.command(command).map_err(|_| ended())?;
            // The core completes every accepted job exactly once (result,
            // error, timeout, cancellation or session end), so this wait
            // is bounded by its budget.
            follow(driver, ticket, &answer, cancel.as_ref(), ended, |update| {
                J::settle(update, server, |progress| options.report(progress))
            })
        })
        .map_err(|e| self.fleet.redact(slot, e))
    }

    /// Closes every session and waits for each server to exit (each within
    /// its grace period, concurrently).
    pub fn shutdown(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        for mut driver in self.fleet.close_all() {
            driver.stop();
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

/// Waits for the end of call or request `ticket` on `answer`, handing each
/// update to `outcome` until it says the wait is over. Once `cancel` is
/// cancelled, its hook wakes this wait at once, this thread tells the
/// session (once), and the core ends the ticket as cancelled, which this
/// wait then hears like any other end. The session is told from here,
/// not from the hook: the cancelling thread (a terminal's key loop, say)
/// may hold locks that the session's own work waits for. A dropped
/// sender means the driver is gone.
fn follow<T>(
    driver: &DriverHandle,
    ticket: u64,
    answer: &crate::reply::ReplyRx,
    cancel: Option<&Cancel>,
    not_running: impl Fn() -> ToolCallError,
    mut outcome: impl FnMut(CallUpdate) -> Option<Result<T, ToolCallError>>,
) -> Result<T, ToolCallError> {
    let _hook = cancel.map(|cancel| {
        let wake = answer.cancel_wake();
        cancel.on_cancel(move || wake.wake())
    });
    loop {
        match answer.next().map_err(|_| not_running())? {
            Next::CancelAsked => {
                let _ = driver.driver.command(Command::Cancel { ticket });
            }
            Next::Update(update) => {
                if let Some(end) = outcome(update) {
                    return end;
                }
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_all();
    }
}

impl SessionHandle for DriverHandle {
    fn health_cell(&self) -> &Mutex<Health> {
        &self.health
    }

    fn close(&self) {
        let _ = self.driver.command(Command::Close);
    }
}

impl DriverHandle {
    /// Asks the driver to close and waits for it: the driver's own shutdown
    /// is bounded (grace, then kill), so this join is too.
    fn stop(&mut self) {
        self.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits for a driver's startup outcome until `until`, or until
/// `interrupt` is cancelled (its hook sends [`Heard::Interrupted`] into
/// every startup channel).
fn wait_startup(outcome: &Receiver<Heard>, until: Instant, interrupt: Option<&Cancel>) -> Heard {
    if interrupt.is_some_and(Cancel::is_cancelled) {
        return Heard::Interrupted;
    }
    match outcome.recv_timeout(until.saturating_duration_since(Instant::now())) {
        Ok(heard) => heard,
        Err(RecvTimeoutError::Disconnected) => Heard::Gone,
        Err(RecvTimeoutError::Timeout) => Heard::TimedOut,
    }
}

/// Tells a startup wait that its driver thread ended (returned or
/// panicked); after the driver's own report it is never read.
struct GoneOnDrop(Sender<Heard>);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Heard::Gone);
    }
}

fn spawn_driver(
    server: &ServerConfig,
    ambient: &Arc<Vec<(String, String)>>,
    (root, host, record): (
        Option<String>,
        HostServices,
        Option<Arc<dyn TranscriptSink>>,
    ),
    grace: Duration,
    startup: Sender<Heard>,
) -> Result<DriverHandle, TransportSetupError> {
    let health: SharedHealth = Arc::new(Mutex::new(Health::default()));
    let backlog = Arc::new(Backlog::default());
    let driver = Driver::new(server.id.as_str(), host, record, Arc::clone(&health));
    let thread = std::thread::Builder::new()
        .name(format!("rho-mcp-{}", server.id))
        .spawn({
            let server = server.clone();
            let ambient = Arc::clone(ambient);
            let driver = Arc::clone(&driver);
            let backlog = Arc::clone(&backlog);
            move || {
                let _gone = GoneOnDrop(startup.clone());
                driver.run(
                    &server,
                    (&ambient, root.as_deref()),
                    grace,
                    startup,
                    backlog,
                );
            }
        })
        .map_err(|e| TransportSetupError::Thread {
            server: server.id.to_string(),
            reason: e.to_string(),
        })?;
    Ok(DriverHandle {
        driver,
        thread: Some(thread),
        health,
        backlog,
        tool_timeout: server.tool_timeout,
    })
}
