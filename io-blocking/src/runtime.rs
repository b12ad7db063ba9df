//! The host-facing runtime on threads: many servers, each isolated, one
//! tool registry.
//!
//! Every selected, enabled server starts at once on its own driver thread,
//! under its own startup budget (enforced by the core). A server that fails
//! takes nothing else down: it is reported with its reason, and the rest
//! load. With no enabled server, nothing is created at all — no thread, no
//! process, no socket.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rho_proto_core::config::{Config, ServerConfig};
use rho_proto_core::process::SHUTDOWN_GRACE;
use rho_proto_core::protocol::{CallToolResult, Tool};
use rho_proto_core::registry::ToolRegistry;
use rho_proto_core::session::{CallError, Progress};
use rho_proto_core::status::{ReadyReport, ServerStatus};
use serde_json::Value;

use crate::driver::{self, CallUpdate, Command, Health, HealthState, Input, StartupOutcome};

/// What the runtime takes from its surroundings.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// The ambient environment stdio servers' environments are computed
    /// from (see `rho_proto_core::env`).
    pub ambient: Vec<(String, String)>,
    /// How long a stdio server gets to exit after its input closes.
    pub shutdown_grace: Duration,
}

impl RuntimeOptions {
    /// Options from this process's environment. Variables whose name or
    /// value is not UTF-8 are skipped: they could not be named in a config.
    pub fn from_process_env() -> Self {
        Self {
            ambient: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

/// Why a tool call did not produce a result.
#[derive(Debug, thiserror::Error)]
pub enum ToolCallError {
    /// No exported tool has that name.
    #[error("no MCP tool is exported as `{0}`")]
    UnknownTool(String),
    /// No configured server has that identity.
    #[error("no MCP server `{0}` is configured")]
    UnknownServer(String),
    /// The server is configured but not running.
    #[error("server `{server}` is not ready: {reason}")]
    ServerNotReady {
        /// The server identity.
        server: String,
        /// Its status, in words.
        reason: String,
    },
    /// The tool exists on the server but `[tools]` allow/deny keeps it out.
    #[error("tool `{tool}` of server `{server}` is not allowed by [mcp.servers.{server}.tools]")]
    Filtered {
        /// The server identity.
        server: String,
        /// The tool's own name.
        tool: String,
    },
    /// The server does not list a tool by that name.
    #[error("server `{server}` has no tool `{tool}`")]
    NoSuchTool {
        /// The server identity.
        server: String,
        /// The tool's own name.
        tool: String,
    },
    /// The session would not take the call (closed, bad arguments).
    #[error("{0}")]
    NotCallable(String),
    /// The call was sent but ended without a result.
    #[error(transparent)]
    Call(#[from] CallError),
}

/// One configured server as the runtime sees it.
#[derive(Clone, Debug)]
pub struct ServerView {
    /// The server identity.
    pub id: String,
    /// Its valid configuration, when the entry parsed.
    pub config: Option<ServerConfig>,
    /// Where it stands now.
    pub status: ServerStatus,
    /// The tools it listed at startup (all of them, before allow/deny).
    pub tools: Vec<Tool>,
}

struct Slot {
    id: String,
    config: Option<ServerConfig>,
    status: ServerStatus,
    tools: Vec<Tool>,
    driver: Option<DriverHandle>,
}

struct DriverHandle {
    commands: Sender<Input>,
    thread: Option<JoinHandle<()>>,
    health: Health,
}

/// Every configured server of one run. Dropping it shuts them all down.
pub struct Runtime {
    slots: Vec<Slot>,
    registry: ToolRegistry,
}

/// Extra time the host waits beyond a server's own startup budget before
/// it stops waiting for the driver: covers spawning and the shutdown grace.
const STARTUP_MARGIN: Duration = Duration::from_secs(10);

impl Runtime {
    /// Starts every enabled server in `config` concurrently and returns
    /// once each is ready or failed.
    pub fn start(config: &Config, options: RuntimeOptions) -> Self {
        Self::start_where(config, options, |_| true)
    }

    /// Like [`Runtime::start`], but starts only the enabled servers whose
    /// identity `select` accepts; the others report
    /// [`ServerStatus::NotStarted`].
    pub fn start_where(
        config: &Config,
        options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
    ) -> Self {
        let ambient = Arc::new(options.ambient);
        let mut waiting: Vec<(usize, Receiver<StartupOutcome>, Duration)> = Vec::new();
        let mut slots = Vec::with_capacity(config.servers.len());
        for entry in &config.servers {
            let mut slot = Slot {
                id: entry.id.clone(),
                config: entry.config.as_ref().ok().cloned(),
                status: ServerStatus::NotStarted,
                tools: Vec::new(),
                driver: None,
            };
            match &entry.config {
                Err(error) => {
                    slot.status = ServerStatus::Invalid {
                        error: error.to_string(),
                    }
                }
                Ok(server) if !server.enabled => slot.status = ServerStatus::Disabled,
                Ok(server) if !select(&entry.id) => {}
                Ok(server) => match spawn_driver(server, &ambient, options.shutdown_grace) {
                    Ok((handle, outcome)) => {
                        waiting.push((slots.len(), outcome, server.startup_timeout));
                        slot.driver = Some(handle);
                    }
                    Err(error) => slot.status = ServerStatus::Failed { error },
                },
            }
            slots.push(slot);
        }
        for (index, outcome, budget) in waiting {
            let slot = &mut slots[index];
            match outcome.recv_timeout(budget + STARTUP_MARGIN) {
                Ok(Ok(started)) => {
                    slot.tools = started.ready.tools;
                    slot.status = ServerStatus::Ready(ReadyReport {
                        protocol_version: started.ready.protocol_version,
                        server_info: started.ready.server_info,
                        instructions: started.ready.instructions,
                        elapsed_ms: u64::try_from(started.elapsed.as_millis()).unwrap_or(u64::MAX),
                        pid: started.pid,
                        filtered_tools: Vec::new(),
                        last_ping_error: None,
                    });
                }
                Ok(Err(error)) => slot.status = ServerStatus::Failed { error },
                Err(RecvTimeoutError::Timeout) => {
                    slot.status = ServerStatus::Failed {
                        error: format!(
                            "server `{}`: did not finish starting within {} s",
                            slot.id,
                            budget.as_secs_f64()
                        ),
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    slot.status = ServerStatus::Failed {
                        error: format!("server `{}`: its driver stopped unexpectedly", slot.id),
                    }
                }
            }
            if matches!(slot.status, ServerStatus::Failed { .. }) {
                if let Some(mut driver) = slot.driver.take() {
                    driver.stop();
                }
            }
        }
        let mut registry = ToolRegistry::new();
        for slot in &mut slots {
            if let (ServerStatus::Ready(report), Some(config)) = (&mut slot.status, &slot.config) {
                report.filtered_tools = registry.add_server(&slot.id, &config.tools, &slot.tools);
            }
        }
        Self { slots, registry }
    }

    /// Every configured server, in configuration order.
    pub fn servers(&self) -> Vec<ServerView> {
        self.slots.iter().map(|s| self.view(s)).collect()
    }

    /// One server, by identity.
    pub fn server(&self, id: &str) -> Option<ServerView> {
        self.slots.iter().find(|s| s.id == id).map(|s| self.view(s))
    }

    fn view(&self, slot: &Slot) -> ServerView {
        let mut status = slot.status.clone();
        if let Some(error) = slot.driver.as_ref().and_then(DriverHandle::failure) {
            status = ServerStatus::Failed { error };
        }
        if let ServerStatus::Ready(report) = &mut status {
            report.last_ping_error = slot.driver.as_ref().and_then(DriverHandle::ping_failure);
        }
        ServerView {
            id: slot.id.clone(),
            config: slot.config.clone(),
            status,
            tools: slot.tools.clone(),
        }
    }

    /// The exported tools of every ready server.
    pub fn tools(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Calls an exported tool (`mcp__<server>__<tool>`) and waits for its
    /// result. A result with `isError` is still `Ok`: the tool ran and
    /// failed, which the caller reports as a tool failure.
    pub fn call_tool(
        &self,
        exported: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ToolCallError> {
        self.call_tool_with_progress(exported, arguments, |_| {})
    }

    /// Like [`Runtime::call_tool`], handing each progress notification the
    /// server sends for this call to `on_progress` as it arrives.
    pub fn call_tool_with_progress(
        &self,
        exported: &str,
        arguments: Value,
        on_progress: impl FnMut(Progress),
    ) -> Result<CallToolResult, ToolCallError> {
        let tool = self
            .registry
            .get(exported)
            .ok_or_else(|| ToolCallError::UnknownTool(exported.to_owned()))?;
        self.call(&tool.server, &tool.tool, arguments, on_progress)
    }

    /// Calls a tool by server identity and the server's own tool name,
    /// honouring the server's allow/deny filter.
    pub fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ToolCallError> {
        let slot = self.slot(server)?;
        if !slot.tools.iter().any(|t| t.name == tool) {
            return Err(ToolCallError::NoSuchTool {
                server: server.to_owned(),
                tool: tool.to_owned(),
            });
        }
        if let Some(config) = &slot.config {
            if !config.tools.permits(tool) {
                return Err(ToolCallError::Filtered {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                });
            }
        }
        self.call(server, tool, arguments, |_| {})
    }

    fn slot(&self, server: &str) -> Result<&Slot, ToolCallError> {
        let slot = self
            .slots
            .iter()
            .find(|s| s.id == server)
            .ok_or_else(|| ToolCallError::UnknownServer(server.to_owned()))?;
        let status = self.view(slot).status;
        if !matches!(status, ServerStatus::Ready(_)) {
            let reason = match status {
                ServerStatus::Failed { error } | ServerStatus::Invalid { error } => error,
                other => other.label().replace('_', " "),
            };
            return Err(ToolCallError::ServerNotReady {
                server: server.to_owned(),
                reason,
            });
        }
        Ok(slot)
    }

    fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        mut on_progress: impl FnMut(Progress),
    ) -> Result<CallToolResult, ToolCallError> {
        let slot = self.slot(server)?;
        let not_running = || ToolCallError::ServerNotReady {
            server: server.to_owned(),
            reason: "its session has ended".into(),
        };
        let driver = slot.driver.as_ref().ok_or_else(not_running)?;
        let (reply, answer) = mpsc::channel();
        driver
            .commands
            .send(Input::Command(Command::CallTool {
                tool: tool.to_owned(),
                arguments,
                reply,
            }))
            .map_err(|_| not_running())?;
        // The core completes every accepted call exactly once (result,
        // error, timeout or session end), so this wait is bounded by the
        // call budget; a dropped sender means the driver is gone.
        loop {
            match answer.recv().map_err(|_| not_running())? {
                CallUpdate::Progress(progress) => on_progress(progress),
                CallUpdate::Done(result) => return result,
            }
        }
    }

    /// Closes every session and waits for each server to exit (each within
    /// its grace period, concurrently).
    pub fn shutdown(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        for slot in &self.slots {
            if let Some(driver) = &slot.driver {
                let _ = driver.commands.send(Input::Command(Command::Close));
            }
        }
        for slot in &mut self.slots {
            if let Some(mut driver) = slot.driver.take() {
                driver.stop();
            }
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop_all();
    }
}

impl DriverHandle {
    fn failure(&self) -> Option<String> {
        self.health.lock().ok().and_then(|h| h.failure.clone())
    }

    fn ping_failure(&self) -> Option<String> {
        self.health.lock().ok().and_then(|h| h.ping_failure.clone())
    }

    /// Asks the driver to close and waits for it: the driver's own shutdown
    /// is bounded (grace, then kill), so this join is too.
    fn stop(&mut self) {
        let _ = self.commands.send(Input::Command(Command::Close));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn spawn_driver(
    server: &ServerConfig,
    ambient: &Arc<Vec<(String, String)>>,
    grace: Duration,
) -> Result<(DriverHandle, Receiver<StartupOutcome>), String> {
    let (commands, inputs) = mpsc::channel();
    let (startup_tx, startup_rx) = mpsc::channel();
    let health: Health = Arc::new(Mutex::new(HealthState::default()));
    let thread = std::thread::Builder::new()
        .name(format!("rho-mcp-{}", server.id))
        .spawn({
            let server = server.clone();
            let ambient = Arc::clone(ambient);
            let health = Arc::clone(&health);
            let commands = commands.clone();
            move || {
                driver::run(
                    server,
                    ambient,
                    grace,
                    (commands, inputs),
                    startup_tx,
                    health,
                )
            }
        })
        .map_err(|e| format!("server `{}`: could not start a thread: {e}", server.id))?;
    Ok((
        DriverHandle {
            commands,
            thread: Some(thread),
            health,
        },
        startup_rx,
    ))
}
