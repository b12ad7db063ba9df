//! The thread executor behind [`crate::Host`]: a driver thread per
//! session; a call waits on the calling thread.

use rho_proto_core::config::Config;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::{
    CallOptions, CallTarget, ServerRequest, ServerView, Sessions, StartServerError, ToolCall,
    ToolCallError,
};
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;

use super::Executor;
use crate::RuntimeKind;

/// `rho_io_blocking::Runtime`, until shut down.
pub(crate) struct BlockingExecutor(Option<rho_io_blocking::Runtime>);

impl BlockingExecutor {
    /// Starts the enabled servers of `config` that `select` accepts, and
    /// waits until each is ready or has failed.
    pub(crate) fn start(
        config: &Config,
        options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
    ) -> Self {
        Self(Some(rho_io_blocking::Runtime::start(
            config, options, select,
        )))
    }

    fn runtime(&self) -> &rho_io_blocking::Runtime {
        self.0
            .as_ref()
            .expect("the runtime is present until the host shuts down")
    }

    fn runtime_mut(&mut self) -> &mut rho_io_blocking::Runtime {
        self.0
            .as_mut()
            .expect("the runtime is present until the host shuts down")
    }
}

impl Executor for BlockingExecutor {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Blocking
    }

    fn sessions(&self) -> &dyn Sessions {
        self.runtime()
    }

    fn start_server(&mut self, id: &str, config: &Config) -> Result<ServerView, StartServerError> {
        self.runtime_mut().start_server(id, config)
    }

    fn stop_server(&mut self, id: &str) -> bool {
        self.runtime_mut().stop_server(id)
    }

    fn call(
        &self,
        target: CallTarget<'_>,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, ToolCallError> {
        self.runtime()
            .submit(ToolCall::new(target, arguments), options)
    }

    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        options: CallOptions<'_>,
    ) -> Result<Value, ToolCallError> {
        self.runtime()
            .submit(ServerRequest::new(server, request), options)
    }

    /// Each session has its driver thread already.
    fn keep_moving(&mut self) {}

    fn shutdown(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown();
        }
    }
}
