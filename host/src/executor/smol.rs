//! The smol executor behind [`crate::Host`]: every session a task on one
//! `smol::Executor`, the host's own or the agent's
//! ([`crate::HostBuilder::smol_executor`]). Each method runs that
//! executor on the calling thread while it waits, so a command-line host
//! needs no thread of its own. Between calls nothing runs the host's own
//! executor unless the host asks for a thread that does
//! ([`Executor::keep_moving`]), which then lives until shutdown; the
//! agent's executor is the agent's to run.
//!
//! With no server to start, nothing here starts a thread: `smol::block_on`
//! starts async-io's reactor thread on first use, so the idle host runs
//! its executor with futures-lite's reactor-free `block_on` instead.

use std::sync::Arc;

use rho_proto_core::config::Config;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::{
    CallOptions, CallTarget, Inventory, ServerRequest, ServerView, Sessions, StartServerError,
    ToolCall, ToolCallError,
};
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;

use super::Executor;
use crate::RuntimeKind;

/// The smol runtime with the executor it runs on.
pub(crate) struct SmolExecutor {
    executor: Arc<smol::Executor<'static>>,
    /// `None` once shut down.
    runtime: Option<rho_io_smol::Runtime>,
    /// Whether any session was started, so IO needs async-io's reactor.
    reactor: bool,
    /// The thread that runs the executor between calls, when asked for.
    thread: Option<ExecutorThread>,
    /// [`Executor::keep_moving`] was asked for: a host that started no
    /// session starts the thread with its first late server.
    wants_thread: bool,
    /// The executor is the agent's, which the agent runs: the host starts
    /// no thread for it.
    agents: bool,
}

/// A thread running an executor until told to stop.
struct ExecutorThread {
    stop: smol::channel::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl SmolExecutor {
    /// Starts the enabled servers of `config` that `select` accepts, as
    /// tasks on the agent's executor when given one (else on the host's
    /// own), and waits until each is ready or has failed.
    pub(crate) fn start(
        config: &Config,
        options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
        agents: Option<Arc<smol::Executor<'static>>>,
    ) -> Self {
        let reactor = !Inventory::new(config, &select).to_start().is_empty();
        let (executor, agents) = match agents {
            Some(executor) => (executor, true),
            None => (Arc::new(smol::Executor::new()), false),
        };
        let runtime = run_smol(
            &executor,
            reactor,
            rho_io_smol::Runtime::start(&executor, config, options, select),
        );
        Self {
            executor,
            runtime: Some(runtime),
            reactor,
            thread: None,
            wants_thread: false,
            agents,
        }
    }

    /// Starts the thread that runs the executor between calls, unless it
    /// runs already or there is no session to move.
    fn start_thread(&mut self) {
        if self.thread.is_some() || !self.reactor || self.agents {
            return;
        }
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let executor = Arc::clone(&self.executor);
        let thread = std::thread::Builder::new()
            .name("rho-smol-executor".into())
            .spawn(move || {
                let _ = rho_io_smol::block_on(&executor, stopped.recv());
            });
        match thread {
            Ok(thread) => self.thread = Some(ExecutorThread { stop, thread }),
            // Calls still run the executor while they wait.
            Err(e) => tracing::warn!("cannot start the executor thread: {e}"),
        }
    }

    fn runtime(&self) -> &rho_io_smol::Runtime {
        self.runtime
            .as_ref()
            .expect("the runtime is present until the host shuts down")
    }

    fn block_on<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        run_smol(&self.executor, self.reactor, future)
    }

    /// [`SmolExecutor::block_on`] for one call's wait: the executor is
    /// ticked while it waits rather than given a runner per call
    /// ([`rho_io_smol::block_on_ticking`]).
    ///
    /// With the executor thread running, the caller only waits: that
    /// thread runs the sessions and holds async-io's reactor throughout,
    /// so an answer is one wake of the caller. A caller that ran the
    /// executor itself would compete with it for the reactor, and each
    /// answer would reach it through a hand-off anyway.
    fn wait_for<T>(&self, future: impl std::future::Future<Output = T>) -> T {
        if self.thread.is_some() {
            smol::future::block_on(future)
        } else if self.reactor {
            rho_io_smol::block_on_ticking(&self.executor, future)
        } else {
            smol::future::block_on(self.executor.run(future))
        }
    }
}

impl Executor for SmolExecutor {
    fn kind(&self) -> RuntimeKind {
        RuntimeKind::Smol
    }

    fn sessions(&self) -> &dyn Sessions {
        self.runtime()
    }

    fn start_server(&mut self, id: &str, config: &Config) -> Result<ServerView, StartServerError> {
        // The first session of a host that started none needs async-io's
        // reactor, and the executor thread it was asked for (which it
        // left unstarted with nothing to move).
        self.reactor = true;
        let executor = Arc::clone(&self.executor);
        let runtime = self
            .runtime
            .as_mut()
            .expect("the runtime is present until the host shuts down");
        let started = run_smol(&executor, true, runtime.start_server(&executor, id, config));
        if self.wants_thread {
            self.start_thread();
        }
        started
    }

    fn stop_server(&mut self, id: &str) -> bool {
        let executor = Arc::clone(&self.executor);
        let reactor = self.reactor;
        let runtime = self
            .runtime
            .as_mut()
            .expect("the runtime is present until the host shuts down");
        run_smol(&executor, reactor, runtime.stop_server(id))
    }

    fn call(
        &self,
        target: CallTarget<'_>,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, ToolCallError> {
        self.wait_for(
            self.runtime()
                .submit(ToolCall::new(target, arguments), options),
        )
    }

    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        options: CallOptions<'_>,
    ) -> Result<Value, ToolCallError> {
        self.wait_for(
            self.runtime()
                .submit(ServerRequest::new(server, request), options),
        )
    }

    fn keep_moving(&mut self) {
        self.wants_thread = true;
        self.start_thread();
    }

    fn shutdown(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            self.block_on(runtime.shutdown());
        }
        if let Some(ExecutorThread { stop, thread }) = self.thread.take() {
            let _ = stop.try_send(());
            let _ = thread.join();
        }
    }

    fn smol(&self) -> Option<&rho_io_smol::Runtime> {
        Some(self.runtime())
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
