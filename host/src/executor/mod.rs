//! What differs between the two executors behind [`crate::Host`], as one
//! trait, so that every method of the host is written once over it (the
//! shape quinn keeps its runtimes in): start the selected servers (each
//! implementation's constructor), start or stop one, the servers as they
//! stand ([`Sessions`]), submit a call or a request and wait for it as
//! its [`CallOptions`] say, keep the sessions moving between calls, and
//! shut down. The host picks an implementation once, at construction;
//! nothing else of it asks which executor it runs on.

use rho_proto_core::config::Config;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::runtime::{
    CallOptions, CallTarget, ServerView, Sessions, StartServerError, ToolCallError,
};
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;

use std::str::FromStr;

mod blocking;
mod smol;

pub(crate) use blocking::BlockingExecutor;
pub(crate) use smol::SmolExecutor;

/// Which executor drives the sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeKind {
    /// One task per session on one executor (the `rho` CLI's default).
    Smol,
    /// A driver thread per session.
    Blocking,
}

impl RuntimeKind {
    /// Both kinds, smol first.
    pub const ALL: [RuntimeKind; 2] = [RuntimeKind::Smol, RuntimeKind::Blocking];

    /// The kind's name, as `--runtime` and `RHO_RUNTIME` spell it.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeKind::Smol => "smol",
            RuntimeKind::Blocking => "blocking",
        }
    }
}

impl FromStr for RuntimeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "smol" => Ok(RuntimeKind::Smol),
            "blocking" => Ok(RuntimeKind::Blocking),
            other => Err(format!(
                "unknown runtime `{other}`: the runtimes are smol and blocking"
            )),
        }
    }
}

/// One executor, driven synchronously by the host's methods.
pub(crate) trait Executor: Send + Sync {
    /// Which executor this is.
    fn kind(&self) -> RuntimeKind;

    /// The servers as they stand: views, tools, instructions.
    fn sessions(&self) -> &dyn Sessions;

    /// Starts the server `id` of `config` beside the running ones; see
    /// [`crate::Host::start_server`].
    fn start_server(&mut self, id: &str, config: &Config) -> Result<ServerView, StartServerError>;

    /// Closes the session of server `id`; see [`crate::Host::stop_server`].
    fn stop_server(&mut self, id: &str) -> bool;

    /// Calls a tool and waits for its end, as `options` say.
    fn call(
        &self,
        target: CallTarget<'_>,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, ToolCallError>;

    /// Sends a request and waits for its answer, as `options` say.
    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        options: CallOptions<'_>,
    ) -> Result<Value, ToolCallError>;

    /// Keeps the sessions moving between calls, from now until shutdown;
    /// see [`crate::HostBuilder::executor_thread`].
    fn keep_moving(&mut self);

    /// Closes every session and waits for each server to exit. Idempotent.
    fn shutdown(&mut self);

    /// The smol runtime, whose calls an async host awaits as they are;
    /// `None` on an executor whose calls block a thread.
    fn smol(&self) -> Option<&rho_io_smol::Runtime> {
        None
    }
}
