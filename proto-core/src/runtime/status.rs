//! What the host reports about each configured server: the one status model
//! both executors fill in and every inventory (`rho mcp list`, `show`,
//! `/mcp`) prints. It holds names and facts only, never a secret value.

use serde::Serialize;

use crate::wire::protocol::Implementation;

/// Where one configured server stands.
// A status is built once per server and cloned only for reports, so the
// size of the ready variant costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ServerStatus {
    /// Configured and enabled, but this run did not connect (no
    /// `--connect`).
    NotStarted,
    /// `enabled = false`.
    Disabled,
    /// The entry is malformed; it never starts.
    Invalid {
        /// The configuration error, with file:line:column.
        error: String,
    },
    /// Connected: handshake and discovery done.
    Ready(ReadyReport),
    /// A stdio server whose process ended after its session was
    /// established is being started again (waiting out its backoff, or
    /// starting). Its exported tools stay registered, and a call made now
    /// waits for the restart within its budget.
    Restarting {
        /// Why its last process ended, in words a person can act on
        /// (redacted): how it exited, and its last stderr lines.
        error: String,
        /// Which attempt in a row this is, from 1.
        attempt: u32,
        /// How many in a row its `restart.attempts` allows.
        attempts: u32,
    },
    /// Could not start, or ended.
    Failed {
        /// Why, in words a person can act on (redacted).
        error: String,
        /// What kind of failure it was, for a host to act on without
        /// reading the words.
        kind: FailureKind,
    },
}

/// What kind of failure ended a server, beside the words that say why.
///
/// The kind is what a host matches on (offer to install a missing
/// program, to log in, to retry later); the words are for a person. The
/// typed startup error itself stays in the core: its fields hold what
/// the server and the OS said, which are only shown redacted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The entry cannot become a connection here (a header names an unset
    /// variable): the user's to fix in the config or the environment.
    Config,
    /// The server's program was not found (on `PATH`, or at its path).
    NotFound,
    /// The server could not be launched otherwise: its environment, its
    /// working directory, the process, its pipes or a thread.
    Launch,
    /// The transport is not built into this host (the executor's `http`
    /// feature is off).
    NotBuiltIn,
    /// The server refused or botched the handshake.
    Handshake,
    /// Tool discovery failed after the handshake.
    Discovery,
    /// Startup did not finish within its budget.
    StartupTimeout,
    /// The server exited, or its stream closed, before it was ready.
    Exited,
    /// The server could not be reached, or writing to it failed.
    Unreachable,
    /// The person stopped the startup (Ctrl-C, or the host's cancel).
    Interrupted,
    /// The executor's driver for the server stopped before reporting.
    DriverGone,
    /// The session ended after the server was ready (it exited, or its
    /// transport failed), and it is not restarted (`restart.attempts =
    /// 0`, or a Streamable HTTP server).
    Ended,
    /// The session ended after the server was ready, and every restart its
    /// `restart.attempts` allows in a row failed.
    RestartsExhausted,
}

impl ServerStatus {
    /// Whether this status counts as a failure for the exit code.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            ServerStatus::Invalid { .. } | ServerStatus::Failed { .. }
        )
    }

    /// The status's one-word name, as in the JSON `status` field.
    pub fn label(&self) -> &'static str {
        match self {
            ServerStatus::NotStarted => "not_started",
            ServerStatus::Disabled => "disabled",
            ServerStatus::Invalid { .. } => "invalid",
            ServerStatus::Ready(_) => "ready",
            ServerStatus::Restarting { .. } => "restarting",
            ServerStatus::Failed { .. } => "failed",
        }
    }
}

/// A ready server's facts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReadyReport {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The server's name and version, as it reported them.
    pub server_info: Implementation,
    /// The server's instructions for the model, when it sent any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Milliseconds from start to ready (connect, handshake, discovery).
    pub elapsed_ms: u64,
    /// The process id of a stdio server (of its latest process, after a
    /// restart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How many times its process was started again after it died
    /// mid-session, in this run. The facts above (protocol version,
    /// server info, capabilities, instructions) are the first session's;
    /// the tools and the catalog are the latest session's, reconciled with
    /// the startup set as after a `list_changed`.
    #[serde(skip_serializing_if = "is_zero")]
    pub restarts: u32,
    /// Tools the server listed that allow/deny kept out, by the server's
    /// own names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filtered_tools: Vec<String>,
    /// Tools the server listed for its MCP App view only (their
    /// `_meta.ui.visibility` lacks `"model"`), held back from the model, by
    /// the server's own names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub app_only_tools: Vec<String>,
    /// Why the latest keep-alive ping failed, if it did (remote servers are
    /// pinged each minute; the next answered ping clears this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_ping_error: Option<String>,
    /// Tools the server added after startup (`tools/list_changed`). They do
    /// not join a running session: a restart is needed to use them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub added_tools: Vec<String>,
    /// Tools the server withdrew after startup; calls to them fail.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withdrawn_tools: Vec<String>,
    /// The capabilities it declared.
    pub capabilities: crate::wire::protocol::ServerCapabilities,
    /// Its prompts, resources and templates, as held for the session;
    /// a listing that failed carries its error here.
    pub catalog: crate::features::catalog::Catalog,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ReadyReport {
    /// Which protocol era the server is driven in: its stateless version
    /// (`2026-07-28`) or the 2025 version its handshake negotiated. (The
    /// same string as [`ReadyReport::protocol_version`]; the era is named
    /// by the version that opens it.)
    pub fn era(&self) -> &str {
        &self.protocol_version
    }

    /// Whether the server is driven statelessly (2026-07-28: discovery,
    /// per-request `_meta`, no session) rather than after a handshake.
    pub fn is_stateless(&self) -> bool {
        crate::wire::protocol::is_modern(&self.protocol_version)
    }
}
