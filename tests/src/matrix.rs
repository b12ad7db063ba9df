//! One test body, both executors: [`TestRuntime`] puts the thread runtime
//! and the smol runtime behind the same synchronous surface, and
//! [`both_executors!`](crate::both_executors) turns each generic test
//! function into one `#[test]` per executor, so a behaviour cannot drift
//! between them.

use std::sync::Arc;

use rho_proto_core::config::Config;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::registry::{ExportedTool, ToolRegistry};
use rho_proto_core::runtime::{ServerView, ToolCallError};
use rho_proto_core::session::Progress;
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;
use std::sync::atomic::AtomicBool;

/// A runtime a test can drive synchronously.
pub trait TestRuntime: Sized + Sync {
    /// The variant's name (`threads`, `smol`), for ids a test must keep
    /// apart between the variants that run side by side.
    const NAME: &'static str;
    /// Starts the enabled servers of `config`.
    fn start(config: &Config, options: RuntimeOptions) -> Self;
    /// Every configured server.
    fn servers(&self) -> Vec<ServerView>;
    /// One server.
    fn server(&self, id: &str) -> Option<ServerView>;
    /// The exported tools.
    fn tools(&self) -> &ToolRegistry;
    /// Calls an exported tool.
    fn call_tool(&self, exported: &str, arguments: Value) -> Result<CallToolResult, ToolCallError> {
        self.call_tool_with_progress(exported, arguments, &mut |_| {})
    }
    /// Calls an exported tool, collecting progress.
    fn call_tool_with_progress(
        &self,
        exported: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<CallToolResult, ToolCallError>;
    /// Calls a tool by server and the server's own name.
    fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ToolCallError>;
    /// Calls a tool by server and the server's own name, with progress,
    /// until it ends or `cancel` is set (then the call is abandoned and the
    /// server told).
    fn call_server_tool_cancellable(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &AtomicBool,
    ) -> Result<CallToolResult, ToolCallError>;
    /// Sends a prompt, resource or completion request to `server` and
    /// returns the server's result as sent, until it ends or `cancel` is
    /// set (then the request is abandoned and the server told).
    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        cancel: &AtomicBool,
    ) -> Result<Value, ToolCallError>;
    /// The system-prompt text of the servers' instructions.
    fn instructions_prompt(&self) -> Option<String>;
    /// The exported tools as the next turn should see them.
    fn current_tools(&self) -> Vec<ExportedTool>;
    /// Closes every session and waits for the servers to exit.
    fn shutdown(self);
}

impl TestRuntime for rho_io_blocking::Runtime {
    const NAME: &'static str = "threads";

    fn start(config: &Config, options: RuntimeOptions) -> Self {
        rho_io_blocking::Runtime::start(config, options)
    }
    fn servers(&self) -> Vec<ServerView> {
        rho_io_blocking::Runtime::servers(self)
    }
    fn server(&self, id: &str) -> Option<ServerView> {
        rho_io_blocking::Runtime::server(self, id)
    }
    fn tools(&self) -> &ToolRegistry {
        rho_io_blocking::Runtime::tools(self)
    }
    fn call_tool_with_progress(
        &self,
        exported: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<CallToolResult, ToolCallError> {
        rho_io_blocking::Runtime::call_tool_with_progress(self, exported, arguments, on_progress)
    }
    fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ToolCallError> {
        rho_io_blocking::Runtime::call_server_tool(self, server, tool, arguments)
    }
    fn call_server_tool_cancellable(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &AtomicBool,
    ) -> Result<CallToolResult, ToolCallError> {
        self.call_server_tool_with(server, tool, arguments, on_progress, cancel)
    }
    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        cancel: &AtomicBool,
    ) -> Result<Value, ToolCallError> {
        rho_io_blocking::Runtime::request(self, server, request, Some(cancel))
    }
    fn instructions_prompt(&self) -> Option<String> {
        rho_io_blocking::Runtime::instructions_prompt(self)
    }
    fn current_tools(&self) -> Vec<ExportedTool> {
        rho_io_blocking::Runtime::current_tools(self)
    }
    fn shutdown(self) {
        rho_io_blocking::Runtime::shutdown(self)
    }
}

/// The smol runtime with its executor run by one background thread (as
/// the CLI runs it on its main thread); test threads only wait on futures.
pub struct SmolRuntime {
    executor: Arc<smol::Executor<'static>>,
    runtime: Option<rho_io_smol::Runtime>,
    stop: Option<smol::channel::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SmolRuntime {
    fn runtime(&self) -> &rho_io_smol::Runtime {
        self.runtime
            .as_ref()
            .expect("runtime present until shutdown")
    }
}

impl TestRuntime for SmolRuntime {
    const NAME: &'static str = "smol";

    fn start(config: &Config, options: RuntimeOptions) -> Self {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let thread = std::thread::Builder::new()
            .name("smol-executor".into())
            .spawn({
                let executor = Arc::clone(&executor);
                move || {
                    let _ = rho_io_smol::block_on(&executor, stopped.recv());
                }
            })
            .expect("start the executor thread");
        let runtime = smol::block_on(rho_io_smol::Runtime::start(&executor, config, options));
        Self {
            executor,
            runtime: Some(runtime),
            stop: Some(stop),
            thread: Some(thread),
        }
    }
    fn servers(&self) -> Vec<ServerView> {
        self.runtime().servers()
    }
    fn server(&self, id: &str) -> Option<ServerView> {
        self.runtime().server(id)
    }
    fn tools(&self) -> &ToolRegistry {
        self.runtime().tools()
    }
    fn call_tool_with_progress(
        &self,
        exported: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<CallToolResult, ToolCallError> {
        smol::block_on(
            self.runtime()
                .call_tool_with_progress(exported, arguments, on_progress),
        )
    }
    fn call_server_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ToolCallError> {
        smol::block_on(self.runtime().call_server_tool(server, tool, arguments))
    }
    fn call_server_tool_cancellable(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        on_progress: &mut dyn FnMut(Progress),
        cancel: &AtomicBool,
    ) -> Result<CallToolResult, ToolCallError> {
        // The `Cancelled` a test sees is the session's, never made here.
        smol::block_on(self.runtime().call_server_tool_with(
            server,
            tool,
            arguments,
            on_progress,
            cancel,
        ))
    }
    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        cancel: &AtomicBool,
    ) -> Result<Value, ToolCallError> {
        smol::block_on(self.runtime().request(server, request, Some(cancel)))
    }
    fn instructions_prompt(&self) -> Option<String> {
        self.runtime().instructions_prompt()
    }
    fn current_tools(&self) -> Vec<ExportedTool> {
        self.runtime().current_tools()
    }
    fn shutdown(mut self) {
        if let Some(runtime) = self.runtime.take() {
            smol::block_on(runtime.shutdown());
        }
    }
}

impl Drop for SmolRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            smol::block_on(runtime.shutdown());
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.try_send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = &self.executor;
    }
}

/// Turns generic test functions `fn name<R: TestRuntime>()` into a module
/// per function with a `#[test]` for each executor (`threads`, `smol`).
#[macro_export]
macro_rules! both_executors {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn threads() {
                    super::$name::<rho_io_blocking::Runtime>();
                }
                #[test]
                fn smol() {
                    super::$name::<$crate::matrix::SmolRuntime>();
                }
            }
        )*
    };
}
