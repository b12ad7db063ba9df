//! The runtime a command runs on: smol by default (every session a task on
//! the main thread's executor), or plain threads with `--runtime blocking`
//! (or `RHO_RUNTIME=blocking`). Both expose the same inventory, so output
//! and exit codes are identical on either.
//!
//! With no server to start, nothing here starts a thread: `smol::block_on`
//! starts async-io's reactor thread on first use, so the idle smol host
//! runs its executor with futures-lite's reactor-free `block_on` instead.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::ValueEnum;
use rho_proto_core::config::Config;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::skills::{LoadedSkill, SkillEntry, SkillListing};
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::registry::ToolRegistry;
use rho_proto_core::runtime::skills::SkillError;
use rho_proto_core::runtime::{Inventory, ServerView, ToolCallError};
use rho_proto_core::session::Progress;
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;

/// Which executor drives the sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum RuntimeKind {
    /// One task per session on the main thread (the default).
    Smol,
    /// A driver thread per session.
    Blocking,
}

/// A started runtime of either kind.
pub(crate) enum Host {
    Smol {
        executor: Arc<smol::Executor<'static>>,
        runtime: rho_io_smol::Runtime,
        /// Whether any session was started, so IO needs async-io's reactor.
        reactor: bool,
    },
    Blocking(rho_io_blocking::Runtime),
}

impl Host {
    /// Starts the enabled servers `select` accepts.
    pub(crate) fn start(
        kind: RuntimeKind,
        config: &Config,
        options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
    ) -> Self {
        // The one filesystem step of plugin servers, just before they start.
        let config = &*crate::plugins::prepare_data_dirs(config, &select);
        let starts = !Inventory::new(config, &select).to_start().is_empty();
        if starts {
            crate::signals::watch_for_second();
        }
        match kind {
            RuntimeKind::Smol => {
                let reactor = starts;
                let executor = Arc::new(smol::Executor::new());
                let runtime = run_smol(
                    &executor,
                    reactor,
                    rho_io_smol::Runtime::start_where(&executor, config, options, select),
                );
                Host::Smol {
                    executor,
                    runtime,
                    reactor,
                }
            }
            RuntimeKind::Blocking => Host::Blocking(rho_io_blocking::Runtime::start_where(
                config, options, select,
            )),
        }
    }

    /// Every configured server.
    pub(crate) fn servers(&self) -> Vec<ServerView> {
        match self {
            Host::Smol { runtime, .. } => runtime.servers(),
            Host::Blocking(runtime) => runtime.servers(),
        }
    }

    /// One server.
    pub(crate) fn server(&self, id: &str) -> Option<ServerView> {
        match self {
            Host::Smol { runtime, .. } => runtime.server(id),
            Host::Blocking(runtime) => runtime.server(id),
        }
    }

    /// The exported tools.
    pub(crate) fn tools(&self) -> &ToolRegistry {
        match self {
            Host::Smol { runtime, .. } => runtime.tools(),
            Host::Blocking(runtime) => runtime.tools(),
        }
    }

    /// The exported tools as a turn would see them now: revised
    /// definitions after `tools/list_changed`, withdrawn tools marked.
    pub(crate) fn current_tools(&self) -> Vec<rho_proto_core::runtime::registry::ExportedTool> {
        match self {
            Host::Smol { runtime, .. } => runtime.current_tools(),
            Host::Blocking(runtime) => runtime.current_tools(),
        }
    }

    /// Calls a tool, handing progress to `on_progress`, until it ends or
    /// `cancel` is set; a cancelled call tells the server and ends as
    /// [`CallError::Cancelled`].
    pub(crate) fn call_with(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &AtomicBool,
    ) -> Result<CallToolResult, ToolCallError> {
        match self {
            Host::Smol {
                executor,
                runtime,
                reactor,
            } => {
                // The session ends a cancelled call with the core's own
                // `Cancelled`, as on threads.
                let call =
                    runtime.call_server_tool_with(server, tool, arguments, on_progress, cancel);
                run_smol(executor, *reactor, call)
            }
            Host::Blocking(runtime) => {
                runtime.call_server_tool_with(server, tool, arguments, on_progress, cancel)
            }
        }
    }

    /// Sends a prompt, resource or completion request to `server` and
    /// waits for the result as sent, until it ends or `cancel` is set
    /// (then the server is told and it ends as cancelled).
    pub(crate) fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        cancel: &AtomicBool,
    ) -> Result<Value, ToolCallError> {
        match self {
            Host::Smol {
                executor,
                runtime,
                reactor,
            } => run_smol(
                executor,
                *reactor,
                runtime.request(server, request, Some(cancel)),
            ),
            Host::Blocking(runtime) => runtime.request(server, request, Some(cancel)),
        }
    }

    /// Every skill `server` lists (SEP-2640), reading none of their files.
    pub(crate) fn list_skills(
        &self,
        server: &str,
        cancel: &AtomicBool,
    ) -> Result<SkillListing, SkillError> {
        match self {
            Host::Smol {
                executor,
                runtime,
                reactor,
            } => run_smol(
                executor,
                *reactor,
                runtime.list_skills(server, Some(cancel)),
            ),
            Host::Blocking(runtime) => runtime.list_skills(server, Some(cancel)),
        }
    }

    /// Loads a listed skill: its `SKILL.md`, read now and verified
    /// against `entry`.
    pub(crate) fn load_skill(
        &self,
        server: &str,
        entry: &SkillEntry,
        cancel: &AtomicBool,
    ) -> Result<LoadedSkill, SkillError> {
        match self {
            Host::Smol {
                executor,
                runtime,
                reactor,
            } => run_smol(
                executor,
                *reactor,
                runtime.load_skill(server, entry, Some(cancel)),
            ),
            Host::Blocking(runtime) => runtime.load_skill(server, entry, Some(cancel)),
        }
    }

    /// Closes every session and waits for the servers to exit.
    pub(crate) fn shutdown(self) {
        match self {
            Host::Smol {
                executor,
                runtime,
                reactor,
            } => run_smol(&executor, reactor, runtime.shutdown()),
            Host::Blocking(runtime) => runtime.shutdown(),
        }
    }
}

/// Runs `future` on `executor` from this thread: on async-io's reactor when
/// sessions do IO, else without it, so an idle run starts no thread.
fn run_smol<T>(
    executor: &smol::Executor<'static>,
    reactor: bool,
    future: impl std::future::Future<Output = T>,
) -> T {
    if reactor {
        rho_io_smol::block_on(executor, future)
    } else {
        smol::future::block_on(executor.run(future))
    }
}
