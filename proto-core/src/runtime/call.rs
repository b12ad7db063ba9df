//! How a host asks for a tool call or a request, the same on both
//! executors: [`CallTarget`] names the tool, [`CallOptions`] carries what
//! the caller adds (where progress goes, what cancels it, its own time
//! limit). One method per executor takes them, in place of a variant per
//! combination.

use std::fmt;
use std::time::Duration;

use super::Cancel;
use crate::session::Progress;

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
            .finish()
    }
}
