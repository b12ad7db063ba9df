//! How a host asks for a tool call or a request, the same on both
//! executors: a [`Job`] ([`ToolCall`], naming its tool by a
//! [`CallTarget`], or [`ServerRequest`]) says what is asked, and
//! [`CallOptions`] what the caller adds (where progress goes, what cancels
//! it, its own time limit). Each executor has one `submit` that takes
//! both, in place of a method per kind and a variant per combination: the
//! job routes itself, makes the command that carries it and reads the
//! updates that answer it, so the executor only sends and waits.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use super::fleet::{Fleet, SessionHandle};
use super::{Cancel, SlotId, ToolCallError};
use crate::features::FeatureRequest;
use crate::runtime::driving::{CallUpdate, Command};
use crate::session::{Progress, TaskAugmentation};
use crate::wire::protocol::CallToolResult;

/// The tool a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallTarget<'a> {
    /// An exported name, as the model sees it (`mcp__<server>__<tool>`).
    Exported(&'a str),
    /// A server's own tool name, under the server's allow/deny filter.
    Tool {
        /// The server identity.
        server: &'a str,
        /// The server's own name for the tool.
        tool: &'a str,
    },
    /// A call made by `server`'s own MCP App view: the server's own tool
    /// name, under its allow/deny filter, for a tool whose
    /// `_meta.ui.visibility` includes `"app"` (a view reaches no other
    /// server's tools, since it names only a tool).
    FromApp {
        /// The server whose view asks.
        server: &'a str,
        /// The server's own name for the tool.
        tool: &'a str,
    },
}

impl<'a, S: AsRef<str> + ?Sized> From<&'a S> for CallTarget<'a> {
    /// An exported name.
    fn from(exported: &'a S) -> Self {
        CallTarget::Exported(exported.as_ref())
    }
}

impl<'a, S: AsRef<str> + ?Sized, T: AsRef<str> + ?Sized> From<(&'a S, &'a T)> for CallTarget<'a> {
    /// A server identity and the server's own tool name.
    fn from((server, tool): (&'a S, &'a T)) -> Self {
        CallTarget::Tool {
            server: server.as_ref(),
            tool: tool.as_ref(),
        }
    }
}

/// A progress callback; see [`CallOptions::on_progress`].
type ProgressFn<'a> = Box<dyn FnMut(Progress) + Send + 'a>;

/// What a caller adds to a call or request; [`CallOptions::new`] (or
/// `default()`) adds nothing.
///
/// ```
/// use std::time::Duration;
/// use rho_proto_core::runtime::{Cancel, CallOptions};
///
/// let cancel = Cancel::new();
/// let mut seen = 0;
/// let options = CallOptions::new()
///     .on_progress(|_| seen += 1)
///     .cancel(&cancel)
///     .timeout(Duration::from_secs(30));
/// assert_eq!(options.time_limit(), Some(Duration::from_secs(30)));
/// assert!(options.cancel_token().is_some());
/// ```
#[derive(Default)]
pub struct CallOptions<'a> {
    progress: Option<ProgressFn<'a>>,
    cancel: Option<Cancel>,
    timeout: Option<Duration>,
    task: TaskAugmentation,
}

impl<'a> CallOptions<'a> {
    /// Options that add nothing: no progress callback, nothing cancels the
    /// call but its own end, the server's configured time limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Hands each progress notification the server sends for this call to
    /// `on_progress`, on the thread (or task) that waits for the call, as
    /// it arrives.
    pub fn on_progress(mut self, on_progress: impl FnMut(Progress) + Send + 'a) -> Self {
        self.progress = Some(Box::new(on_progress));
        self
    }

    /// Ends the call once `cancel` is cancelled: the server is told (as
    /// the session's era says) and the call ends with the core's own
    /// `CallError::Cancelled`, or with its answer if that came first.
    pub fn cancel(mut self, cancel: &Cancel) -> Self {
        self.cancel = Some(cancel.clone());
        self
    }

    /// The call's own time limit, in place of the server's
    /// `tool_timeout_secs` (or, for a completion, its short request
    /// budget). The core keeps it as it keeps the configured one: progress
    /// restarts it when the server's config says so, and a call that
    /// waits for room on a busy stdio server spends it waiting.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Asks for the call to run as a task where the tool leaves it to the
    /// caller: a 2025-era tool whose `execution.taskSupport` is
    /// `optional`, on a server that declared task-augmented `tools/call`.
    /// For a long call the caller means to leave running: it survives the
    /// request's own time limit as the task's status keeps it alive, and
    /// is cancelled with `tasks/cancel`. A tool that requires a task runs
    /// as one without this; in the 2026 era the server decides. A request
    /// other than a tool call ignores it.
    pub fn as_task(mut self) -> Self {
        self.task = TaskAugmentation::WhenOffered;
        self
    }

    /// The token that cancels the call, if any.
    pub fn cancel_token(&self) -> Option<&Cancel> {
        self.cancel.as_ref()
    }

    /// The call's own time limit, if any.
    pub fn time_limit(&self) -> Option<Duration> {
        self.timeout
    }

    /// Hands `progress` to the callback, if there is one.
    pub fn report(&mut self, progress: Progress) {
        if let Some(on_progress) = &mut self.progress {
            on_progress(progress);
        }
    }
}

impl fmt::Debug for CallOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallOptions")
            .field("progress", &self.progress.is_some())
            .field("cancel", &self.cancel)
            .field("timeout", &self.timeout)
            .field("task", &self.task)
            .finish()
    }
}

/// What a caller submits to an executor and waits for: a [`ToolCall`] or
/// a [`ServerRequest`]. Sealed: the executors rely on its two kinds.
pub trait Job: sealed::Sealed {
    /// What the job settles with.
    type Output;

    /// Whether the job waits for room in its session's backlog before it
    /// goes: a tool call does (see [`super::backlog`]); a feature request,
    /// small and answered at once, does not.
    const WAITS_FOR_ROOM: bool;

    /// Where the job goes in `fleet`, or why it cannot go.
    fn route<H: SessionHandle>(self, fleet: &Fleet<H>) -> Result<Routed<'_, H>, ToolCallError>;

    /// What a caller waiting on the job makes of one update: progress goes
    /// to `on_progress` and `None` says keep waiting; the job's end is its
    /// output, or why there is none.
    fn settle(
        update: CallUpdate,
        server: &str,
        on_progress: impl FnOnce(Progress),
    ) -> Option<Result<Self::Output, ToolCallError>>;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ToolCall<'_> {}
    impl Sealed for super::ServerRequest<'_> {}
}

/// A tool call: the tool (an exported name, or a server's own tool under
/// its allow/deny filter) and its arguments. Settles with the tool's
/// result; one with `isError` is still a result (the tool ran and
/// failed, which the caller reports as a tool failure).
#[derive(Debug)]
pub struct ToolCall<'a> {
    target: CallTarget<'a>,
    arguments: Value,
}

impl<'a> ToolCall<'a> {
    /// A call of `target` with `arguments`.
    pub fn new(target: impl Into<CallTarget<'a>>, arguments: Value) -> Self {
        Self {
            target: target.into(),
            arguments,
        }
    }
}

/// A feature request to one server (a prompt, a resource, a completion,
/// a subscription...). Settles with the server's result as sent.
#[derive(Debug)]
pub struct ServerRequest<'a> {
    server: &'a str,
    request: FeatureRequest,
}

impl<'a> ServerRequest<'a> {
    /// `request`, to `server`.
    pub fn new(server: &'a str, request: FeatureRequest) -> Self {
        Self { server, request }
    }
}

/// A job that has found its session: the slot, the session's handle and
/// the server's identity, and the command that carries it
/// ([`Routed::command`]).
#[derive(Debug)]
pub struct Routed<'f, H> {
    /// The server's slot.
    pub slot: SlotId,
    /// Its session's handle.
    pub handle: &'f H,
    /// The server's identity.
    pub server: &'f str,
    work: Work,
}

/// What a routed job sends.
#[derive(Debug)]
enum Work {
    Call { tool: String, arguments: Value },
    Request(FeatureRequest),
}

impl<H> Routed<'_, H> {
    /// The command that submits the job under `ticket`, as `options` say
    /// (its own time limit, whether it asks for a task), answered through
    /// `reply`.
    pub fn command<R>(self, ticket: u64, options: &CallOptions<'_>, reply: R) -> Command<R> {
        let budget = options.time_limit();
        match self.work {
            Work::Call { tool, arguments } => Command::CallTool {
                ticket,
                tool,
                arguments,
                budget,
                task: options.task,
                reply,
            },
            Work::Request(request) => Command::Request {
                ticket,
                request: Box::new(request),
                budget,
                reply,
            },
        }
    }
}

impl Job for ToolCall<'_> {
    type Output = CallToolResult;
    const WAITS_FOR_ROOM: bool = true;

    fn route<H: SessionHandle>(self, fleet: &Fleet<H>) -> Result<Routed<'_, H>, ToolCallError> {
        let (slot, tool, handle) = fleet.route(self.target)?;
        Ok(Routed {
            slot,
            handle,
            server: fleet.server_id(slot),
            work: Work::Call {
                tool,
                arguments: self.arguments,
            },
        })
    }

    fn settle(
        update: CallUpdate,
        _server: &str,
        on_progress: impl FnOnce(Progress),
    ) -> Option<Result<CallToolResult, ToolCallError>> {
        update.into_call_result(on_progress)
    }
}

impl Job for ServerRequest<'_> {
    type Output = Value;
    const WAITS_FOR_ROOM: bool = false;

    fn route<H: SessionHandle>(self, fleet: &Fleet<H>) -> Result<Routed<'_, H>, ToolCallError> {
        let (slot, handle) = fleet.route_server(self.server)?;
        Ok(Routed {
            slot,
            handle,
            server: fleet.server_id(slot),
            work: Work::Request(self.request),
        })
    }

    fn settle(
        update: CallUpdate,
        server: &str,
        _on_progress: impl FnOnce(Progress),
    ) -> Option<Result<Value, ToolCallError>> {
        update.into_answer(server)
    }
}
