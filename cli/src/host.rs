//! The runtime a command runs on: smol by default (every session a task on
//! the main thread's executor), or plain threads with `--runtime blocking`
//! (or `RHO_RUNTIME=blocking`). Both expose the same inventory, so output
//! and exit codes are identical on either.

use std::sync::Arc;

use clap::ValueEnum;
use rho_io_blocking::RuntimeOptions;
use rho_proto_core::config::Config;
use rho_proto_core::protocol::CallToolResult;
use rho_proto_core::registry::ToolRegistry;
use rho_proto_core::runtime::{ServerView, ToolCallError};
use serde_json::Value;

/// Which executor drives the sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum RuntimeKind {
    /// smol: one task per session on the main thread.
    Smol,
    /// Plain threads: a driver thread per session.
    Blocking,
}

/// A started runtime of either kind.
pub(crate) enum Host {
    Smol {
        executor: Arc<smol::Executor<'static>>,
        runtime: rho_io_smol::Runtime,
    },
    Blocking(rho_io_blocking::Runtime),
}

impl Host {
    /// Starts the enabled servers `select` accepts.
    pub(crate) fn start(kind: RuntimeKind, config: &Config, select: impl Fn(&str) -> bool) -> Self {
        let options = RuntimeOptions::from_process_env();
        match kind {
            RuntimeKind::Smol => {
                let executor = Arc::new(smol::Executor::new());
                let runtime = smol::block_on(executor.run(rho_io_smol::Runtime::start_where(
                    &executor, config, options, select,
                )));
                Host::Smol { executor, runtime }
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

    /// Calls a tool by server identity and the server's own name.
    pub(crate) fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ToolCallError> {
        match self {
            Host::Smol { executor, runtime } => {
                smol::block_on(executor.run(runtime.call_server_tool(server, tool, arguments)))
            }
            Host::Blocking(runtime) => runtime.call_server_tool(server, tool, arguments),
        }
    }

    /// Closes every session and waits for the servers to exit.
    pub(crate) fn shutdown(self) {
        match self {
            Host::Smol { executor, runtime } => {
                smol::block_on(executor.run(runtime.shutdown()));
            }
            Host::Blocking(runtime) => runtime.shutdown(),
        }
    }
}
