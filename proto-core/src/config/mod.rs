//! The `[mcp.servers.<id>]` configuration model, parsed from TOML text.
//!
//! This module owns the meaning of rho's MCP configuration: which keys exist,
//! their types and defaults, and the checks that keep a bad entry from
//! starting anything (plaintext HTTP to a remote host, credentials in a URL,
//! header names that would corrupt a request). It takes the file's text and
//! name and never touches the filesystem. Only the `[mcp]` table is read; the
//! rest of rho's config file belongs to other parts of rho and is ignored.
//!
//! Failures come in two sizes. A [`ConfigFileError`] means the file as a
//! whole cannot be trusted (bad TOML, or a misspelt table under `[mcp]`), and
//! nothing starts. An [`EntryError`] belongs to one server: that server is
//! disabled and every other entry still loads. Both point at a
//! `file:line:column` so a person can go straight to the mistake.

use core::net::Ipv6Addr;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::Serialize;
use toml::Spanned;

pub mod env;
mod plugin;
pub mod process;

pub use plugin::{Plugin, PluginDir, read_plugin};
use toml::de::{DeString, DeTable, DeValue};
use url::{Host, Url};

/// Which of a server's tools are exported: `allow` is an optional
/// allowlist, and `deny` always wins over it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolFilter {
    /// When set, only these tool names (the server's own names) pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// These tool names never pass.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether the tool named `tool` (the server's own name) is exported.
    pub fn permits(&self, tool: &str) -> bool {
        if self.deny.iter().any(|d| d == tool) {
            return false;
        }
        match &self.allow {
            Some(allow) => allow.iter().any(|a| a == tool),
            None => true,
        }
    }
}

/// The startup and tool-call budget a server gets when its entry names none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest `startup_timeout_secs` / `tool_timeout_secs` accepted: one
/// week. Anything longer is a mistake, and an unbounded value would overflow
/// the deadline arithmetic (`now + timeout`) downstream.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The cap on one message (a stdio line, an SSE event, a JSON body) when an
/// entry names none: 16 MiB. (server-filesystem sends a 16 MiB file as a
/// message of about 32 MiB; such a server needs a higher
/// `max_message_bytes`.)
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The smallest `max_message_bytes` accepted: 64 KiB. Below it, ordinary
/// `initialize` and `tools/list` answers no longer fit.
pub const MIN_MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The largest `max_message_bytes` accepted: 1 GiB. The cap is memory rho
/// may hold for one message; more than this is a mistake.
pub const MAX_MAX_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

/// Every server entry of one config file, valid or not.
///
/// Invalid entries are kept (with their error) rather than dropped, so
/// `rho mcp list` and `/mcp` can show the user what is wrong with them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// One per `[mcp.servers.<key>]`, sorted by key.
    pub servers: Vec<ServerEntry>,
    /// `[sampling] command`: the program (and arguments) the CLI runs as
    /// the model for servers' sampling requests. Absent: no model, so no
    /// server is offered sampling.
    pub sampling_command: Option<Vec<String>>,
    /// `[plugins] dirs`: the directories whose subdirectories are Agent
    /// Plugins, as written (`~/` and relative paths are the host's to
    /// resolve). `None` when the file does not set them: the host's
    /// default, [`DEFAULT_PLUGIN_DIRS`], applies.
    pub plugin_dirs: Option<Vec<String>>,
}

/// Where plugins are looked for when the config sets no `[plugins] dirs`.
pub const DEFAULT_PLUGIN_DIRS: &[&str] = &["~/.rho/plugins"];

impl Config {
    /// The servers to start: entries that parsed and are not `enabled = false`.
    ///
    /// When this is empty, rho builds no MCP runtime at all.
    pub fn enabled(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers
            .iter()
            .filter_map(|entry| entry.config.as_ref().ok())
            .filter(|config| config.enabled)
    }

    /// The entry whose table key is exactly `id`, valid or not.
    pub fn get(&self, id: &str) -> Option<&ServerEntry> {
        self.servers.iter().find(|entry| entry.id == id)
    }

    /// The per-server errors, in entry order, for reporting.
    pub fn errors(&self) -> impl Iterator<Item = &EntryError> {
        self.servers
            .iter()
            .filter_map(|entry| entry.config.as_ref().err())
    }
}

/// One `[mcp.servers.<key>]` table (or one server of a plugin's
/// `mcp.json`) and what came of reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerEntry {
    /// The table key exactly as written, even when it is not a valid
    /// [`ServerId`], so an error can still name the entry. A plugin's
    /// server is `<plugin>/<server>`.
    pub id: String,
    /// The validated server, or the first thing wrong with the entry.
    pub config: Result<ServerConfig, EntryError>,
    /// The plugin that contributed the entry, valid or not; `None` for an
    /// entry of the selected config file.
    pub plugin: Option<PluginOrigin>,
}

/// Where a plugin's server comes from, for `rho mcp list` and for the
/// host's one filesystem step before such a server starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginOrigin {
    /// The plugin's name: `plugin.json`'s `name`, else its directory's.
    pub name: String,
    /// The plugin's directory (`${PLUGIN_ROOT}`).
    pub root: String,
    /// The plugin's data directory (`${PLUGIN_DATA}`). Discovery never
    /// creates it; the host creates it immediately before it starts each
    /// enabled stdio server of the plugin, and a failure to create it
    /// disables only that server.
    pub data_dir: String,
}

/// A server's stable identity: the key of its `[mcp.servers.<id>]` table.
///
/// It is non-empty and only ASCII letters, digits, `-` and `_`, because it
/// becomes part of exported tool names, log targets and credential-store
/// keys, where anything else would need escaping or could collide.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct ServerId(String);

/// Why a string cannot be a [`ServerId`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidServerId {
    /// The identity was the empty string.
    #[error("a server identity must not be empty")]
    Empty,
    /// The identity contains a character outside the allowed set.
    #[error(
        "invalid server identity: only ASCII letters, digits, `-` and `_` are allowed, found {found:?}"
    )]
    BadCharacter {
        /// The first character that is not allowed.
        found: char,
    },
}

impl ServerId {
    /// Validates `id` as a server identity.
    pub fn new(id: impl Into<String>) -> Result<Self, InvalidServerId> {
        let id = id.into();
        if id.is_empty() {
            return Err(InvalidServerId::Empty);
        }
        if let Some(found) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(InvalidServerId::BadCharacter { found });
        }
        Ok(Self(id))
    }

    /// A plugin's server: `<plugin>/<server>`. No identity in a config file
    /// can hold a `/`, so a plugin's server never collides with one of the
    /// user's own, nor with another plugin's.
    pub fn for_plugin(plugin: &ServerId, server: &ServerId) -> Self {
        Self(format!("{plugin}/{server}"))
    }

    /// The identity as written in the config.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ServerId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// One validated, ready-to-start server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's identity.
    pub id: ServerId,
    /// `false` keeps the entry (and still validates it) without starting it.
    pub enabled: bool,
    /// How to reach the server.
    pub transport: Transport,
    /// When set, sent as `logging/setLevel` after the handshake; unset keeps
    /// the server's own default.
    pub log_level: Option<LogLevel>,
    /// The config gate for `sampling/createMessage`.
    pub sampling: SamplingPolicy,
    /// Which discovered tools are exported.
    pub tools: ToolFilter,
    /// Budget for connection, handshake and discovery (`startup_timeout_secs`).
    pub startup_timeout: Duration,
    /// Budget for one tool call (`tool_timeout_secs`).
    pub tool_timeout: Duration,
    /// The largest message accepted from the server, in bytes
    /// (`max_message_bytes`): a stdio line, an SSE event or a JSON body.
    pub max_message_bytes: usize,
    /// The Agent Plugin that contributed this server, or `None` for a
    /// server of the selected config file. A plugin's server can never opt
    /// into sampling: only the user's own config can spend the user's
    /// tokens.
    pub plugin: Option<String>,
}

impl ServerConfig {
    /// Whether the config gate for sampling is open: `sampling = "ask"`
    /// in the selected config file (never for a plugin's server).
    pub fn sampling_allowed(&self) -> bool {
        self.sampling == SamplingPolicy::Ask && self.plugin.is_none()
    }

    /// The names of the variables this server's entry sets in the child
    /// (`env` and `env_from_env` keys), sorted, for display. Never values.
    pub fn env_names(&self) -> Vec<String> {
        match &self.transport {
            Transport::Stdio(stdio) => stdio
                .env
                .keys()
                .chain(stdio.env_from_env.keys())
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            Transport::StreamableHttp(_) => Vec::new(),
        }
    }

    /// The names of the headers this server's entry sends (`headers` and
    /// `headers_from_env` keys), sorted, for display. Never values.
    pub fn header_names(&self) -> Vec<String> {
        match &self.transport {
            Transport::StreamableHttp(http) => http
                .headers
                .keys()
                .chain(http.headers_from_env.keys())
                .cloned()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            Transport::Stdio(_) => Vec::new(),
        }
    }
}

/// How a server is reached, with the settings only that transport has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio(StdioConfig),
    /// MCP Streamable HTTP (not the legacy HTTP+SSE transport).
    StreamableHttp(HttpConfig),
}

impl Transport {
    /// The `transport` value that selects this variant, for display and JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio(_) => "stdio",
            Transport::StreamableHttp(_) => "streamable_http",
        }
    }
}

/// How to start a stdio server. Rho executes `command` directly with `args`
/// as separate arguments; no shell is involved.
///
/// `Debug` shows `env` names but not their values.
#[derive(Clone, PartialEq, Eq)]
pub struct StdioConfig {
    /// The executable: a path, or a bare name looked up on the search path.
    pub command: String,
    /// Arguments, each passed as one argument.
    pub args: Vec<String>,
    /// Working directory of the child; unset inherits rho's.
    pub cwd: Option<String>,
    /// Literal variables laid over the sanitized base environment.
    pub env: BTreeMap<String, String>,
    /// Child variable name → ambient variable name, applied after `env`, so
    /// secrets never have to be written into the config file.
    pub env_from_env: BTreeMap<String, String>,
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &RedactedValues(&self.env))
            .field("env_from_env", &self.env_from_env)
            .finish()
    }
}

/// How to reach a Streamable HTTP server.
///
/// `Debug` shows `headers` names but not their values.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// The MCP endpoint: https, or http only on a loopback host.
    pub url: Url,
    /// Literal header values sent on every request.
    pub headers: BTreeMap<String, String>,
    /// Header name → ambient variable holding the complete header value;
    /// these override literal `headers` of the same name.
    pub headers_from_env: BTreeMap<String, String>,
    /// Present when the entry opted in to OAuth with an `oauth` table.
    pub oauth: Option<OAuthConfig>,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &self.url.as_str())
            .field("headers", &RedactedValues(&self.headers))
            .field("headers_from_env", &self.headers_from_env)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// Debug-prints a map's keys with every value replaced.
struct RedactedValues<'a>(&'a BTreeMap<String, String>);

impl fmt::Debug for RedactedValues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|k| (k, format_args!("<redacted>"))))
            .finish()
    }
}

/// The `[mcp.servers.<id>.oauth]` opt-in. Nothing secret belongs here: a
/// client secret is named by the variable that holds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    /// A client id issued out of band; unset means dynamic registration.
    pub client_id: Option<String>,
    /// Scopes to request; unset lets the server's metadata choose.
    pub scopes: Option<Vec<String>>,
    /// How tokens are obtained.
    pub grant: OAuthGrant,
    /// The ambient variable holding the client secret (a confidential
    /// pre-registered client, or client credentials).
    pub client_secret_from_env: Option<String>,
    /// A client ID metadata document URL (https), used as the `client_id`
    /// where the authorization server accepts such documents.
    pub client_metadata_url: Option<String>,
}

/// `oauth.grant`: how a server's tokens are obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// A person logs in with a browser (`rho mcp login`), PKCE S256.
    #[default]
    AuthorizationCode,
    /// Machine to machine with the configured client's id and secret;
    /// never a browser (for CI).
    ClientCredentials,
}

/// An MCP logging severity (RFC 5424 order, least severe first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The MCP wire name, as used in `logging/setLevel` and in config.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level with wire name `name`, exactly (lowercase).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|level| level.as_str() == name)
    }
}

/// Whether a server may ask rho's model for completions. Only the config
/// file can open this gate; every request still asks the user.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SamplingPolicy {
    /// Never declare sampling; reject every request (the default).
    #[default]
    Deny,
    /// Declare sampling and ask the user about each request.
    Ask,
}

impl SamplingPolicy {
    /// The config spelling: `"deny"` or `"ask"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SamplingPolicy::Deny => "deny",
            SamplingPolicy::Ask => "ask",
        }
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// The config file as a whole cannot be used; nothing MCP starts and the
/// CLI exits with status 2.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {kind}")]
pub struct ConfigFileError {
    /// The file name as given to [`parse`].
    pub file: String,
    /// 1-based line of the mistake.
    pub line: usize,
    /// 1-based column of the mistake, in characters.
    pub column: usize,
    /// What is wrong.
    pub kind: ConfigFileErrorKind,
}

/// What made a config file unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigFileErrorKind {
    /// `[sampling]` is malformed.
    #[error("{message}")]
    Sampling {
        /// What is wrong and what to write instead.
        message: String,
    },
    /// `[plugins]` is malformed.
    #[error("{message}")]
    Plugins {
        /// What is wrong and what to write instead.
        message: String,
    },
    /// The text is not valid TOML.
    #[error("TOML syntax error: {message}")]
    Syntax {
        /// The TOML parser's description.
        message: String,
    },
    /// `mcp` exists but is not a table.
    #[error("`mcp` must be a table, found {found}")]
    McpNotTable {
        /// The TOML type found instead.
        found: &'static str,
    },
    /// `mcp.servers` exists but is not a table of servers.
    #[error("`mcp.servers` must be a table of server tables, found {found}")]
    ServersNotTable {
        /// The TOML type found instead.
        found: &'static str,
    },
    /// A key directly under `[mcp]` other than `servers`.
    ///
    /// This fails the whole file rather than one entry because it is almost
    /// always a misspelt table: `[mcp.server.fs]` would otherwise be ignored
    /// and the user would silently get no servers at all.
    #[error(
        "unknown key `{key}`: rho reads only `mcp.servers` under [mcp]{}",
        if .key == "mcp.server" { "; did you mean `mcp.servers`?" } else { "" }
    )]
    UnknownMcpKey {
        /// The full key path, e.g. `mcp.server`.
        key: String,
    },
}

/// What is wrong with one server entry. The server is not started; the
/// other servers still load.
///
/// It reads `file:line:column: server `id`: message`; a problem that is
/// not at a place in a file (a plugin's data directory that cannot be
/// created) has line 0 and reads `file: server `id`: message`, `file`
/// then naming the path the problem is about.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct EntryError {
    /// The file name as given to [`parse`].
    pub file: String,
    /// The entry's key as written.
    pub id: String,
    /// 1-based line of the offending key or value; 0 when the problem is
    /// not at a place in `file`.
    pub line: usize,
    /// 1-based column of the offending key or value, in characters.
    pub column: usize,
    /// What is wrong, naming the full key path.
    pub message: String,
}

impl fmt::Display for EntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            file,
            id,
            line,
            column,
            message,
        } = self;
        if *line == 0 {
            write!(f, "{file}: server `{id}`: {message}")
        } else {
            write!(f, "{file}:{line}:{column}: server `{id}`: {message}")
        }
    }
}

/// The 1-based `(line, column)` of `byte_offset` in `text`, column counted
/// in characters, so error positions match what an editor shows.
///
/// An offset past the end is clamped to the end, and one inside a multi-byte
/// character points at that character.
pub fn line_column(text: &str, byte_offset: usize) -> (usize, usize) {
    let mut end = byte_offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

const TRANSPORT_STDIO: &str = "stdio";
const TRANSPORT_HTTP: &str = "streamable_http";
const COMMON_KEYS: &[&str] = &[
    "transport",
    "enabled",
    "log_level",
    "sampling",
    "tools",
    "startup_timeout_secs",
    "tool_timeout_secs",
    "max_message_bytes",
];
const STDIO_KEYS: &[&str] = &["command", "args", "cwd", "env", "env_from_env"];
const HTTP_KEYS: &[&str] = &["url", "headers", "headers_from_env", "oauth"];
const HTTP_LOOPBACK_ONLY: &str = "non-loopback endpoints must use https; http is allowed only for localhost, 127.0.0.0/8 and [::1]";

/// Reads the `[mcp]` part of rho's config file.
///
/// `file_name` is used only in error positions. A file without `[mcp]` or
/// `[mcp.servers]` yields a config with no servers. Per-entry problems land
/// in [`ServerEntry::config`]; only problems that make the whole file
/// untrustworthy are returned as [`ConfigFileError`].
pub fn parse(text: &str, file_name: &str) -> Result<Config, ConfigFileError> {
    let file_error = |span: Range<usize>, kind: ConfigFileErrorKind| {
        let (line, column) = line_column(text, span.start);
        ConfigFileError {
            file: file_name.to_owned(),
            line,
            column,
            kind,
        }
    };

    let document = DeTable::parse(text).map_err(|error| {
        file_error(
            error.span().unwrap_or(0..0),
            ConfigFileErrorKind::Syntax {
                message: error.message().trim().to_owned(),
            },
        )
    })?;
    let sampling_command = match document.get_ref().get("sampling") {
        None => None,
        Some(sampling) => Some(read_sampling(sampling).map_err(|(span, message)| {
            file_error(span, ConfigFileErrorKind::Sampling { message })
        })?),
    };
    let plugin_dirs = match document.get_ref().get("plugins") {
        None => None,
        Some(plugins) => read_plugin_dirs(plugins).map_err(|(span, message)| {
            file_error(span, ConfigFileErrorKind::Plugins { message })
        })?,
    };
    let Some(mcp) = document.get_ref().get("mcp") else {
        return Ok(Config {
            sampling_command,
            plugin_dirs,
            ..Config::default()
        });
    };
    let DeValue::Table(mcp) = mcp.get_ref() else {
        return Err(file_error(
            mcp.span(),
            ConfigFileErrorKind::McpNotTable {
                found: mcp.get_ref().type_str(),
            },
        ));
    };
    if let Some((key, _)) = source_order(mcp)
        .into_iter()
        .find(|(key, _)| key.get_ref() != "servers")
    {
        return Err(file_error(
            key.span(),
            ConfigFileErrorKind::UnknownMcpKey {
                key: key_path("mcp", key.get_ref()),
            },
        ));
    }
    let Some(servers) = mcp.get("servers") else {
        return Ok(Config {
            sampling_command,
            plugin_dirs,
            ..Config::default()
        });
    };
    let DeValue::Table(servers) = servers.get_ref() else {
        return Err(file_error(
            servers.span(),
            ConfigFileErrorKind::ServersNotTable {
                found: servers.get_ref().type_str(),
            },
        ));
    };
    let servers = servers
        .iter()
        .map(|(key, value)| {
            let id = key.get_ref().to_string();
            let entry_error = |fault: Fault| {
                let (line, column) = line_column(text, fault.span.start);
                EntryError {
                    file: file_name.to_owned(),
                    id: id.clone(),
                    line,
                    column,
                    message: fault.message,
                }
            };
            // A value that is not a table (`fs = "npx foo"`, `[[mcp.servers.fs]]`)
            // is still an entry: it disables only itself, like any other
            // malformed entry.
            let config = match value.get_ref().as_table() {
                Some(table) => read_entry(key, value.span(), table).map_err(entry_error),
                None => Err(entry_error(Fault::new(
                    value.span(),
                    format!(
                        "`{path}` must be a table, found {found}: write `[{path}]` with `transport = ...` and its keys on the lines below",
                        path = key_path("mcp.servers", key.get_ref()),
                        found = value.get_ref().type_str(),
                    ),
                ))),
            };
            ServerEntry {
                id: id.clone(),
                config,
                plugin: None,
            }
        })
        .collect();
    Ok(Config {
        servers,
        sampling_command,
        plugin_dirs,
    })
}

type Key<'i> = Spanned<DeString<'i>>;
type Value<'i> = Spanned<DeValue<'i>>;

/// One problem, located by byte span, before it becomes an [`EntryError`].
#[derive(Clone, Debug)]
struct Fault {
    span: Range<usize>,
    message: String,
}

impl Fault {
    fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
        }
    }
}

type Checked<T> = Result<T, Fault>;

/// The earliest (by position in the file) of the given faults, as an error.
fn first_fault(faults: &[Option<&Fault>]) -> Checked<()> {
    match faults.iter().flatten().min_by_key(|fault| fault.span.start) {
        Some(fault) => Err((*fault).clone()),
        None => Ok(()),
    }
}

/// A table's entries in the order they appear in the file, so "the first
/// error" means the first one a reader would meet.
fn source_order<'t, 'i>(table: &'t DeTable<'i>) -> Vec<(&'t Key<'i>, &'t Value<'i>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

/// `parent.key`, quoting `key` the way TOML would need it.
fn key_path(parent: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        format!("{parent}.{key}")
    } else {
        format!("{parent}.{key:?}")
    }
}

/// A known key within two edits of `key`, to suggest for a typo.
fn suggestion<'k>(key: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    known
        .into_iter()
        .map(|candidate| (edit_distance(key, candidate), candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = Vec::with_capacity(b.len() + 1);
        current.push(i + 1);
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current.push(substitute.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// A table being read: its key path (for messages), its span (for "missing
/// key" errors) and its entries.
struct Scope<'t, 'i> {
    path: String,
    span: Range<usize>,
    table: &'t DeTable<'i>,
}

impl<'t, 'i> Scope<'t, 'i> {
    fn path_of(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    fn lookup(&self, key: &str) -> Option<(&'t Key<'i>, &'t Value<'i>)> {
        self.table.get_key_value(key)
    }

    /// The first key (in file order) that is not in `known`.
    fn reject_unknown(&self, known: &[&str], extra: &str) -> Checked<()> {
        for (key, _) in source_order(self.table) {
            let name = key.get_ref().as_ref();
            if !known.contains(&name) {
                let mut message = format!("unknown key `{}`", self.path_of(name));
                if let Some(near) = suggestion(name, known.iter().copied()) {
                    message.push_str(&format!("; did you mean `{near}`?"));
                }
                message.push_str(extra);
                return Err(Fault::new(key.span(), message));
            }
        }
        Ok(())
    }

    fn type_fault(&self, key: &str, value: &Value<'_>, expected: &str) -> Fault {
        Fault::new(
            value.span(),
            format!(
                "`{}` must be {expected}, found {}",
                self.path_of(key),
                value.get_ref().type_str()
            ),
        )
    }

    fn bool(&self, key: &str) -> Checked<Option<bool>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        match value.get_ref() {
            DeValue::Boolean(b) => Ok(Some(*b)),
            _ => Err(self.type_fault(key, value, "a boolean")),
        }
    }

    /// A string value with its span.
    fn string(&self, key: &str) -> Checked<Option<(&'t str, Range<usize>)>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        match value.get_ref() {
            DeValue::String(s) => Ok(Some((s.as_ref(), value.span()))),
            _ => Err(self.type_fault(key, value, "a string")),
        }
    }

    /// A string that must be one of `choices`.
    fn choice<T: Copy>(&self, key: &str, choices: &[(&str, T)]) -> Checked<Option<T>> {
        let listed = choices
            .iter()
            .map(|(name, _)| format!("\"{name}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        let DeValue::String(s) = value.get_ref() else {
            return Err(self.type_fault(key, value, &format!("a string, one of {listed}")));
        };
        match choices.iter().find(|(name, _)| *name == s.as_ref()) {
            Some((_, choice)) => Ok(Some(*choice)),
            None => Err(Fault::new(
                value.span(),
                format!(
                    "`{}` must be one of {listed}, not {:?}",
                    self.path_of(key),
                    s.as_ref()
                ),
            )),
        }
    }

    /// An array of strings, each checked by `check`.
    fn strings(
        &self,
        key: &str,
        check: fn(&str) -> Result<(), String>,
    ) -> Checked<Option<Vec<String>>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        let DeValue::Array(items) = value.get_ref() else {
            return Err(self.type_fault(key, value, "an array of strings"));
        };
        let mut out = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let DeValue::String(s) = item.get_ref() else {
                return Err(Fault::new(
                    item.span(),
                    format!(
                        "`{}` must be an array of strings, but element {index} is {}",
                        self.path_of(key),
                        item.get_ref().type_str()
                    ),
                ));
            };
            check(s).map_err(|why| {
                Fault::new(
                    item.span(),
                    format!("`{}` element {index}: {why}", self.path_of(key)),
                )
            })?;
            out.push(s.to_string());
        }
        Ok(Some(out))
    }

    /// A table of string values; keys checked by `check_key`, values by
    /// `check_value`. `what` names keys in messages ("variable name").
    fn string_map(
        &self,
        key: &str,
        what: &str,
        check_key: fn(&str) -> Result<(), String>,
        check_value: fn(&str) -> Result<(), String>,
    ) -> Checked<BTreeMap<String, String>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(BTreeMap::new());
        };
        let DeValue::Table(table) = value.get_ref() else {
            return Err(self.type_fault(key, value, "a table of strings"));
        };
        let path = self.path_of(key);
        let mut out = BTreeMap::new();
        for (name, item) in source_order(table) {
            let name_str: &str = name.get_ref();
            check_key(name_str).map_err(|why| {
                Fault::new(
                    name.span(),
                    format!("`{path}`: {name_str:?} is not a valid {what}: {why}"),
                )
            })?;
            let DeValue::String(s) = item.get_ref() else {
                return Err(Fault::new(
                    item.span(),
                    format!(
                        "`{}` must be a string, found {}",
                        key_path(&path, name_str),
                        item.get_ref().type_str()
                    ),
                ));
            };
            check_value(s).map_err(|why| {
                Fault::new(
                    item.span(),
                    format!("`{}`: {why}", key_path(&path, name_str)),
                )
            })?;
            out.insert(name_str.to_owned(), s.to_string());
        }
        Ok(out)
    }

    /// A sub-table, as a scope of its own.
    fn table(&self, key: &str) -> Checked<Option<Scope<'t, 'i>>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        match value.get_ref() {
            DeValue::Table(table) => Ok(Some(Scope {
                path: self.path_of(key),
                span: value.span(),
                table,
            })),
            _ => Err(self.type_fault(key, value, "a table")),
        }
    }

    /// A positive, finite number of seconds, at most [`MAX_TIMEOUT`];
    /// [`DEFAULT_TIMEOUT`] when absent.
    fn timeout(&self, key: &str) -> Checked<Duration> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(DEFAULT_TIMEOUT);
        };
        let path = self.path_of(key);
        let fault = |shown: String| {
            Fault::new(
                value.span(),
                format!(
                    "`{path}` must be a positive number of seconds no greater than {}, not {shown}",
                    MAX_TIMEOUT.as_secs()
                ),
            )
        };
        let duration = match value.get_ref() {
            DeValue::Integer(integer) => i128::from_str_radix(integer.as_str(), integer.radix())
                .ok()
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n > 0)
                .map(Duration::from_secs)
                .ok_or_else(|| fault(integer.to_string()))?,
            DeValue::Float(float) => float
                .as_str()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0)
                .and_then(|f| Duration::try_from_secs_f64(f).ok())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| fault(float.to_string()))?,
            _ => return Err(self.type_fault(key, value, "a number of seconds")),
        };
        if duration > MAX_TIMEOUT {
            return Err(fault(value_text(value.get_ref())));
        }
        Ok(duration)
    }

    /// `max_message_bytes`: a whole number of bytes within the sane range.
    fn max_message_bytes(&self) -> Checked<usize> {
        const KEY: &str = "max_message_bytes";
        let Some((_, value)) = self.lookup(KEY) else {
            return Ok(DEFAULT_MAX_MESSAGE_BYTES);
        };
        let DeValue::Integer(integer) = value.get_ref() else {
            return Err(self.type_fault(KEY, value, "a whole number of bytes"));
        };
        i128::from_str_radix(integer.as_str(), integer.radix())
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (MIN_MAX_MESSAGE_BYTES..=MAX_MAX_MESSAGE_BYTES).contains(n))
            .ok_or_else(|| {
                Fault::new(
                    value.span(),
                    format!(
                        "`{}` must be a number of bytes from {MIN_MAX_MESSAGE_BYTES} (64 KiB) to {MAX_MAX_MESSAGE_BYTES} (1 GiB), not {integer}",
                        self.path_of(KEY)
                    ),
                )
            })
    }
}

/// A scalar as the user wrote it (near enough), for messages.
fn value_text(value: &DeValue<'_>) -> String {
    match value {
        DeValue::Integer(integer) => integer.to_string(),
        DeValue::Float(float) => float.to_string(),
        other => other.type_str().to_owned(),
    }
}

/// Reads and validates one `[mcp.servers.<id>]` table.
///
/// Structural problems come first, in this order: the identity, unknown
/// keys, then the transport. After that, the earliest problem in the file
/// wins.
fn read_entry(id_key: &Key<'_>, span: Range<usize>, table: &DeTable<'_>) -> Checked<ServerConfig> {
    let id = ServerId::new(id_key.get_ref().as_ref())
        .map_err(|error| Fault::new(id_key.span(), error.to_string()))?;
    let scope = Scope {
        path: key_path("mcp.servers", id.as_str()),
        span,
        table,
    };
    let all_keys: Vec<&str> = COMMON_KEYS
        .iter()
        .chain(STDIO_KEYS)
        .chain(HTTP_KEYS)
        .copied()
        .collect();
    scope.reject_unknown(&all_keys, "")?;

    let transports = [(TRANSPORT_STDIO, false), (TRANSPORT_HTTP, true)];
    let Some(is_http) = scope.choice("transport", &transports)? else {
        return Err(Fault::new(
            scope.span.clone(),
            format!(
                "missing required key `{}` (\"stdio\" or \"streamable_http\")",
                scope.path_of("transport")
            ),
        ));
    };
    let (this_kind, other_kind, other_keys) = if is_http {
        (TRANSPORT_HTTP, TRANSPORT_STDIO, STDIO_KEYS)
    } else {
        (TRANSPORT_STDIO, TRANSPORT_HTTP, HTTP_KEYS)
    };
    let misplaced = source_order(table)
        .into_iter()
        .find(|(key, _)| other_keys.contains(&key.get_ref().as_ref()))
        .map(|(key, _)| {
            Fault::new(
                key.span(),
                format!(
                    "`{}` is for transport = \"{other_kind}\"; this server has transport = \"{this_kind}\"",
                    key.get_ref()
                ),
            )
        });

    let enabled = scope.bool("enabled").map(|b| b.unwrap_or(true));
    let log_level = scope.choice(
        "log_level",
        &LogLevel::ALL.map(|level| (level.as_str(), level)),
    );
    let sampling = scope
        .choice(
            "sampling",
            &[("deny", SamplingPolicy::Deny), ("ask", SamplingPolicy::Ask)],
        )
        .map(Option::unwrap_or_default);
    let tools = read_tools(&scope);
    let startup_timeout = scope.timeout("startup_timeout_secs");
    let tool_timeout = scope.timeout("tool_timeout_secs");
    let max_message_bytes = scope.max_message_bytes();
    let transport = match misplaced {
        Some(fault) => Err(fault),
        None if is_http => read_http(&scope).map(Transport::StreamableHttp),
        None => read_stdio(&scope).map(Transport::Stdio),
    };
    first_fault(&[
        enabled.as_ref().err(),
        log_level.as_ref().err(),
        sampling.as_ref().err(),
        tools.as_ref().err(),
        startup_timeout.as_ref().err(),
        tool_timeout.as_ref().err(),
        max_message_bytes.as_ref().err(),
        transport.as_ref().err(),
    ])?;
    Ok(ServerConfig {
        id,
        enabled: enabled?,
        transport: transport?,
        log_level: log_level?,
        sampling: sampling?,
        tools: tools?,
        startup_timeout: startup_timeout?,
        tool_timeout: tool_timeout?,
        max_message_bytes: max_message_bytes?,
        plugin: None,
    })
}

fn read_tools(server: &Scope<'_, '_>) -> Checked<ToolFilter> {
    let Some(tools) = server.table("tools")? else {
        return Ok(ToolFilter::default());
    };
    tools.reject_unknown(&["allow", "deny"], "")?;
    let allow = tools.strings("allow", any_string);
    let deny = tools.strings("deny", any_string);
    first_fault(&[allow.as_ref().err(), deny.as_ref().err()])?;
    Ok(ToolFilter {
        allow: allow?,
        deny: deny?.unwrap_or_default(),
    })
}

fn read_stdio(server: &Scope<'_, '_>) -> Checked<StdioConfig> {
    let command = server.string("command").and_then(|command| match command {
        None => Err(Fault::new(
            server.span.clone(),
            format!(
                "missing required key `{}`: a stdio server needs the executable to run",
                server.path_of("command")
            ),
        )),
        Some((command, span)) => non_empty_os_string(command)
            .map(|()| command.to_owned())
            .map_err(|why| Fault::new(span, format!("`{}`: {why}", server.path_of("command")))),
    });
    let args = server
        .strings("args", os_string)
        .map(Option::unwrap_or_default);
    let cwd = server.string("cwd").and_then(|cwd| match cwd {
        None => Ok(None),
        Some((cwd, span)) => non_empty_os_string(cwd)
            .map(|()| Some(cwd.to_owned()))
            .map_err(|why| Fault::new(span, format!("`{}`: {why}", server.path_of("cwd")))),
    });
    let env = server.string_map("env", "variable name", variable_name, os_string);
    let env_from_env = server.string_map(
        "env_from_env",
        "variable name",
        variable_name,
        ambient_variable_name,
    );
    first_fault(&[
        command.as_ref().err(),
        args.as_ref().err(),
        cwd.as_ref().err(),
        env.as_ref().err(),
        env_from_env.as_ref().err(),
    ])?;
    Ok(StdioConfig {
        command: command?,
        args: args?,
        cwd: cwd?,
        env: env?,
        env_from_env: env_from_env?,
    })
}

fn read_http(server: &Scope<'_, '_>) -> Checked<HttpConfig> {
    let url = server.string("url").and_then(|url| match url {
        None => Err(Fault::new(
            server.span.clone(),
            format!(
                "missing required key `{}`: a streamable_http server needs its endpoint",
                server.path_of("url")
            ),
        )),
        Some((url, span)) => endpoint(url).map_err(|why| Fault::new(span, why)),
    });
    let headers = server
        .string_map("headers", "header name", header_name, header_value)
        .and_then(|headers| distinct_header_names(server, "headers", headers));
    let headers_from_env = server
        .string_map(
            "headers_from_env",
            "header name",
            header_name,
            ambient_variable_name,
        )
        .and_then(|headers| distinct_header_names(server, "headers_from_env", headers));
    let oauth = read_oauth(server);
    first_fault(&[
        url.as_ref().err(),
        headers.as_ref().err(),
        headers_from_env.as_ref().err(),
        oauth.as_ref().err(),
    ])?;
    Ok(HttpConfig {
        url: url?,
        headers: headers?,
        headers_from_env: headers_from_env?,
        oauth: oauth?,
    })
}

fn read_oauth(server: &Scope<'_, '_>) -> Checked<Option<OAuthConfig>> {
    let Some(oauth) = server.table("oauth")? else {
        return Ok(None);
    };
    oauth.reject_unknown(
        &[
            "client_id",
            "scopes",
            "grant",
            "client_secret_from_env",
            "client_metadata_url",
        ],
        "; nothing secret belongs in this table (a client secret is named by `client_secret_from_env`)",
    )?;
    let client_id = oauth.string("client_id").and_then(|id| match id {
        Some(("", span)) => Err(Fault::new(
            span,
            format!(
                "`{}` must not be empty; leave it out to register dynamically",
                oauth.path_of("client_id")
            ),
        )),
        other => Ok(other.map(|(id, _)| id.to_owned())),
    });
    let scopes = oauth.strings("scopes", scope_token);
    let grant = oauth.string("grant").and_then(|grant| match grant {
        None | Some(("authorization_code", _)) => Ok(OAuthGrant::AuthorizationCode),
        Some(("client_credentials", _)) => Ok(OAuthGrant::ClientCredentials),
        Some((other, span)) => Err(Fault::new(
            span,
            format!(
                "`{}` must be \"authorization_code\" or \"client_credentials\", not {other:?}",
                oauth.path_of("grant")
            ),
        )),
    });
    let secret = oauth
        .string("client_secret_from_env")
        .and_then(|name| match name {
            Some((name, span)) => {
                variable_name(name)
                    .map(|()| Some(name.to_owned()))
                    .map_err(|e| {
                        Fault::new(
                            span,
                            format!("`{}`: {e}", oauth.path_of("client_secret_from_env")),
                        )
                    })
            }
            None => Ok(None),
        });
    let metadata_url = oauth
        .string("client_metadata_url")
        .and_then(|url| match url {
            Some((text, span)) => match Url::parse(text) {
                Ok(parsed) if parsed.scheme() == "https" && parsed.path() != "/" => {
                    Ok(Some(text.to_owned()))
                }
                _ => Err(Fault::new(
                    span,
                    format!(
                        "`{}` must be an https URL with a path (a client ID metadata document)",
                        oauth.path_of("client_metadata_url")
                    ),
                )),
            },
            None => Ok(None),
        });
    first_fault(&[
        client_id.as_ref().err(),
        scopes.as_ref().err(),
        grant.as_ref().err(),
        secret.as_ref().err(),
        metadata_url.as_ref().err(),
    ])?;
    let config = OAuthConfig {
        client_id: client_id?,
        scopes: scopes?,
        grant: grant?,
        client_secret_from_env: secret?,
        client_metadata_url: metadata_url?,
    };
    if config.grant == OAuthGrant::ClientCredentials
        && (config.client_id.is_none() || config.client_secret_from_env.is_none())
    {
        return Err(Fault::new(
            server.span.clone(),
            format!(
                "`{}` = \"client_credentials\" needs `client_id` and `client_secret_from_env` in the same table",
                oauth.path_of("grant")
            ),
        ));
    }
    Ok(Some(config))
}

/// Header names are case-insensitive, so `X-A` and `x-a` in one table would
/// leave it to chance which value is sent.
fn distinct_header_names(
    server: &Scope<'_, '_>,
    key: &str,
    headers: BTreeMap<String, String>,
) -> Checked<BTreeMap<String, String>> {
    let mut seen = BTreeMap::new();
    for name in headers.keys() {
        if let Some(earlier) = seen.insert(name.to_ascii_lowercase(), name) {
            let span = server
                .lookup(key)
                .and_then(|(_, value)| value.get_ref().as_table())
                .and_then(|table| table.get_key_value(name.as_str()))
                .map_or_else(|| server.span.clone(), |(k, _)| k.span());
            return Err(Fault::new(
                span,
                format!(
                    "`{}` names header `{name}` twice (also as `{earlier}`); header names are case-insensitive",
                    server.path_of(key)
                ),
            ));
        }
    }
    Ok(headers)
}

fn any_string(_: &str) -> Result<(), String> {
    Ok(())
}

/// Strings handed to the operating system cannot carry NUL.
fn os_string(s: &str) -> Result<(), String> {
    if s.contains('\0') {
        return Err("must not contain a NUL character".to_owned());
    }
    Ok(())
}

fn non_empty_os_string(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("must not be empty".to_owned());
    }
    os_string(s)
}

/// A name an environment block can carry: non-empty, no `=`, no NUL.
fn variable_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a variable name must not be empty".to_owned());
    }
    if name.contains('=') {
        return Err("a variable name must not contain `=`".to_owned());
    }
    if name.contains('\0') {
        return Err("a variable name must not contain a NUL character".to_owned());
    }
    Ok(())
}

fn ambient_variable_name(name: &str) -> Result<(), String> {
    variable_name(name).map_err(|why| format!("the value must name an ambient variable: {why}"))
}

/// An RFC 7230 `token`: one or more `tchar`.
fn header_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a header name must not be empty".to_owned());
    }
    match name.chars().find(|c| !is_tchar(*c)) {
        Some(c) => Err(format!(
            "{c:?} is not allowed in a header name (letters, digits and !#$%&'*+-.^_`|~ are)"
        )),
        None => Ok(()),
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// CR and LF would let a value start a new header; NUL is never valid.
fn header_value(value: &str) -> Result<(), String> {
    if value.contains(['\r', '\n', '\0']) {
        return Err("a header value must not contain CR, LF or NUL".to_owned());
    }
    Ok(())
}

/// OAuth scopes travel space-separated, so one scope cannot hold a space.
fn scope_token(scope: &str) -> Result<(), String> {
    if scope.is_empty() || scope.contains(char::is_whitespace) {
        return Err("a scope must be non-empty and contain no whitespace".to_owned());
    }
    Ok(())
}

/// An MCP endpoint: https, or http on loopback; never with userinfo.
fn endpoint(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw).map_err(|error| format!("`url` is not a valid URL: {error}"))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "`url` must not contain credentials (user:pass@); send them with `headers_from_env`"
                .to_owned(),
        );
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&url) => Ok(url),
        "http" => Err(HTTP_LOOPBACK_ONLY.to_owned()),
        other => Err(format!(
            "`url` must be an https URL (or http on loopback), not `{other}:`"
        )),
    }
}

/// Reads `[sampling]`: only `command`, a non-empty array of strings.
fn read_sampling(value: &Spanned<DeValue<'_>>) -> Result<Vec<String>, (Range<usize>, String)> {
    const SHAPE: &str = "write `[sampling]` with `command = [\"program\", \"arg\", ...]`";
    let DeValue::Table(table) = value.get_ref() else {
        return Err((value.span(), format!("`sampling` must be a table: {SHAPE}")));
    };
    if let Some((key, _)) = source_order(table)
        .into_iter()
        .find(|(key, _)| key.get_ref() != "command")
    {
        return Err((
            key.span(),
            format!("unknown key `sampling.{}`: {SHAPE}", key.get_ref()),
        ));
    }
    let Some(command) = table.get("command") else {
        return Err((
            value.span(),
            format!("`sampling` has no `command`: {SHAPE}"),
        ));
    };
    let DeValue::Array(items) = command.get_ref() else {
        return Err((
            command.span(),
            format!("`sampling.command` must be an array: {SHAPE}"),
        ));
    };
    let mut out = Vec::new();
    for item in items.iter() {
        match item.get_ref().as_str() {
            Some(s) if !s.is_empty() || !out.is_empty() => out.push(s.to_owned()),
            _ => {
                return Err((
                    item.span(),
                    format!("`sampling.command` must hold strings, the first non-empty: {SHAPE}"),
                ));
            }
        }
    }
    if out.is_empty() {
        return Err((
            command.span(),
            format!("`sampling.command` is empty: {SHAPE}"),
        ));
    }
    Ok(out)
}

/// `[plugins] dirs = ["..."]`: `None` when `dirs` is absent. Other keys of
/// `[plugins]` belong to other parts of rho and are left alone.
fn read_plugin_dirs(
    value: &Spanned<DeValue<'_>>,
) -> Result<Option<Vec<String>>, (Range<usize>, String)> {
    const SHAPE: &str = "write `[plugins]` with `dirs = [\"~/.rho/plugins\", ...]`";
    let DeValue::Table(table) = value.get_ref() else {
        return Err((value.span(), format!("`plugins` must be a table: {SHAPE}")));
    };
    let Some(dirs) = table.get("dirs") else {
        return Ok(None);
    };
    let DeValue::Array(items) = dirs.get_ref() else {
        return Err((
            dirs.span(),
            format!(
                "`plugins.dirs` must be an array of directories, found {}: {SHAPE}",
                dirs.get_ref().type_str()
            ),
        ));
    };
    items
        .iter()
        .map(|item| match item.get_ref().as_str() {
            Some(dir) if !dir.is_empty() && !dir.contains('\0') => Ok(dir.to_owned()),
            _ => Err((
                item.span(),
                format!("`plugins.dirs` must hold non-empty directory paths: {SHAPE}"),
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The URL policy every URL the HTTP transport touches must meet: https,
/// or http on a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), and
/// no credentials in the URL. The error says what to change.
pub fn check_url_policy(url: &Url) -> Result<(), String> {
    endpoint(url.as_str()).map(|_| ())
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(address)) => address.is_loopback(),
        Some(Host::Ipv6(address)) => address == Ipv6Addr::LOCALHOST,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "config.toml";

    fn parse_ok(text: &str) -> Config {
        match parse(text, FILE) {
            Ok(config) => config,
            Err(error) => panic!("unexpected file error: {error}"),
        }
    }

    fn server(text: &str, id: &str) -> ServerConfig {
        let config = parse_ok(text);
        let entry = config.get(id).expect("entry exists");
        match &entry.config {
            Ok(server) => server.clone(),
            Err(error) => panic!("unexpected entry error: {error}"),
        }
    }

    /// The entry error for `id`, with its (line, column).
    fn entry_error(text: &str, id: &str) -> (EntryError, (usize, usize)) {
        let config = parse_ok(text);
        let entry = config.get(id).expect("entry exists");
        match &entry.config {
            Ok(server) => panic!("expected an error, got {server:?}"),
            Err(error) => (error.clone(), (error.line, error.column)),
        }
    }

    fn file_error(text: &str) -> ConfigFileError {
        match parse(text, FILE) {
            Ok(config) => panic!("expected a file error, got {config:?}"),
            Err(error) => error,
        }
    }

    #[test]
    fn plugin_dirs_are_read_as_written_and_default_when_absent() {
        let config =
            parse_ok("[plugins]\ndirs = [\"~/.rho/plugins\", \"vendor/plugins\"]\nother = 1\n");
        assert_eq!(
            config.plugin_dirs.as_deref(),
            Some(&["~/.rho/plugins".to_owned(), "vendor/plugins".to_owned()][..])
        );
        assert_eq!(parse_ok("[plugins]\n").plugin_dirs, None);
        assert_eq!(parse_ok("").plugin_dirs, None);
        assert_eq!(
            parse_ok("[plugins]\ndirs = []\n").plugin_dirs,
            Some(Vec::new())
        );
    }

    #[test]
    fn malformed_plugin_dirs_fail_the_file_with_a_position() {
        for (text, needle, message) in [
            ("plugins = 3\n", "3", "`plugins` must be a table"),
            (
                "[plugins]\ndirs = \"x\"\n",
                "\"x\"",
                "`plugins.dirs` must be an array of directories, found string",
            ),
            (
                "[plugins]\ndirs = [\"a\", \"\"]\n",
                "\"\"]",
                "`plugins.dirs` must hold non-empty directory paths",
            ),
            (
                "[plugins]\ndirs = [1]\n",
                "1]",
                "`plugins.dirs` must hold non-empty directory paths",
            ),
        ] {
            let error = file_error(text);
            assert!(
                matches!(&error.kind, ConfigFileErrorKind::Plugins { message: m } if m.starts_with(message)),
                "{text:?}: {error}"
            );
            assert_eq!(
                (error.line, error.column),
                position_of(text, needle),
                "{text:?}"
            );
        }
    }

    /// The 1-based (line, column) of the first occurrence of `needle`.
    fn position_of(text: &str, needle: &str) -> (usize, usize) {
        line_column(text, text.find(needle).expect("needle in text"))
    }

    const FULL: &str = r#"
[model]
name = "not ours"

[mcp.servers.filesystem]
transport = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/work/project"]
cwd = "/work/project"
env = { NODE_ENV = "production" }
env_from_env = { GITHUB_PERSONAL_ACCESS_TOKEN = "GITHUB_TOKEN" }
enabled = true
log_level = "info"
sampling = "ask"
startup_timeout_secs = 30
tool_timeout_secs = 2.5

[mcp.servers.filesystem.tools]
allow = ["read_file", "list_directory"]
deny = []

[mcp.servers.remote]
transport = "streamable_http"
url = "https://mcp.example.com/mcp"
headers_from_env = { Authorization = "MCP_AUTHORIZATION" }
headers = { X-Tenant = "public-tenant" }
enabled = false

[mcp.servers.remote.tools]
deny = ["delete_account"]

[mcp.servers.remote.oauth]
client_id = "issued-out-of-band"
scopes = ["read", "write"]
"#;

    #[test]
    fn full_example_with_both_transports_and_every_key_parses() {
        let config = parse_ok(FULL);
        let ids: Vec<_> = config.servers.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["filesystem", "remote"]);

        let fs = server(FULL, "filesystem");
        assert_eq!(fs.id.as_str(), "filesystem");
        assert!(fs.enabled);
        assert_eq!(fs.log_level, Some(LogLevel::Info));
        assert_eq!(fs.sampling, SamplingPolicy::Ask);
        assert_eq!(fs.startup_timeout, Duration::from_secs(30));
        assert_eq!(fs.tool_timeout, Duration::from_millis(2500));
        assert_eq!(
            fs.tools,
            ToolFilter {
                allow: Some(vec!["read_file".into(), "list_directory".into()]),
                deny: vec![],
            }
        );
        assert_eq!(fs.transport.kind(), "stdio");
        let Transport::Stdio(stdio) = &fs.transport else {
            panic!("stdio expected");
        };
        assert_eq!(stdio.command, "npx");
        assert_eq!(
            stdio.args,
            [
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/work/project"
            ]
        );
        assert_eq!(stdio.cwd.as_deref(), Some("/work/project"));
        assert_eq!(stdio.env["NODE_ENV"], "production");
        assert_eq!(
            stdio.env_from_env["GITHUB_PERSONAL_ACCESS_TOKEN"],
            "GITHUB_TOKEN"
        );
        assert_eq!(fs.env_names(), ["GITHUB_PERSONAL_ACCESS_TOKEN", "NODE_ENV"]);
        assert!(fs.header_names().is_empty());

        let remote = server(FULL, "remote");
        assert!(!remote.enabled);
        assert_eq!(remote.log_level, None);
        assert_eq!(remote.sampling, SamplingPolicy::Deny);
        assert_eq!(remote.tools.deny, ["delete_account"]);
        assert_eq!(remote.tools.allow, None);
        assert_eq!(remote.transport.kind(), "streamable_http");
        let Transport::StreamableHttp(http) = &remote.transport else {
            panic!("http expected");
        };
        assert_eq!(http.url.as_str(), "https://mcp.example.com/mcp");
        assert_eq!(http.headers["X-Tenant"], "public-tenant");
        assert_eq!(http.headers_from_env["Authorization"], "MCP_AUTHORIZATION");
        assert_eq!(
            http.oauth,
            Some(OAuthConfig {
                client_id: Some("issued-out-of-band".into()),
                scopes: Some(vec!["read".into(), "write".into()]),
                ..OAuthConfig::default()
            })
        );
        assert_eq!(remote.header_names(), ["Authorization", "X-Tenant"]);
        assert!(remote.env_names().is_empty());

        let enabled: Vec<_> = config.enabled().map(|s| s.id.as_str()).collect();
        assert_eq!(enabled, ["filesystem"]);
        assert_eq!(config.errors().count(), 0);
    }

    #[test]
    fn inline_and_dotted_forms_read_the_same() {
        let text = "[mcp]\nservers.fs.transport = \"stdio\"\nservers.fs.command = \"a\"\nservers.fs.env.A = \"1\"\n\n[mcp.servers.b]\ntransport = \"stdio\"\ncommand = \"b\"\ntools.deny = [\"x\"]\n";
        let fs = server(text, "fs");
        assert_eq!(fs.env_names(), ["A"]);
        assert_eq!(server(text, "b").tools.deny, ["x"]);
    }

    #[test]
    fn timeouts_default_to_120_seconds() {
        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n";
        let a = server(text, "a");
        assert_eq!(a.startup_timeout, Duration::from_secs(120));
        assert_eq!(a.tool_timeout, Duration::from_secs(120));
        assert!(a.enabled);
        assert_eq!(a.sampling, SamplingPolicy::Deny);
        assert_eq!(a.tools, ToolFilter::default());
        assert_eq!(a.max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES);
    }

    #[test]
    fn max_message_bytes_is_read_and_held_to_a_sane_range() {
        let with = |value: &str| {
            format!(
                "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nmax_message_bytes = {value}\n"
            )
        };
        assert_eq!(server(&with("33554432"), "a").max_message_bytes, 32 << 20);
        assert_eq!(server(&with("0x10000"), "a").max_message_bytes, 64 << 10);
        assert_eq!(server(&with("1073741824"), "a").max_message_bytes, 1 << 30);
        for bad in ["0", "-1", "65535", "1073741825"] {
            let text = with(bad);
            let error = parse_ok(&text).servers[0]
                .config
                .as_ref()
                .expect_err("out of range")
                .to_string();
            assert!(
                error.contains(&format!(
                    "`mcp.servers.a.max_message_bytes` must be a number of bytes from 65536 (64 KiB) to 1073741824 (1 GiB), not {bad}"
                )),
                "{error}"
            );
        }
        let text = with("\"16MiB\"");
        let error = parse_ok(&text).servers[0]
            .config
            .as_ref()
            .expect_err("a string")
            .to_string();
        assert!(error.contains("a whole number of bytes"), "{error}");
        let http = "[mcp.servers.h]\ntransport = \"streamable_http\"\nurl = \"https://e.com/mcp\"\nmax_message_bytes = 1048576\n";
        assert_eq!(server(http, "h").max_message_bytes, 1 << 20);
    }

    #[test]
    fn file_without_mcp_or_servers_has_no_servers() {
        assert!(parse_ok("").servers.is_empty());
        assert!(parse_ok("[model]\nname = \"x\"\n").servers.is_empty());
        assert!(parse_ok("[mcp]\n").servers.is_empty());
        assert!(parse_ok("[mcp.servers]\n").servers.is_empty());
        assert_eq!(parse_ok("").enabled().count(), 0);
    }

    #[test]
    fn other_top_level_tables_are_ignored_even_when_odd() {
        let text = "mcpx = 1\n[agents]\nanything = { goes = [1, \"two\"] }\n[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n";
        let config = parse_ok(text);
        assert_eq!(config.servers.len(), 1);
        let server = config.servers[0].config.as_ref().expect("valid");
        assert_eq!(server.id.as_str(), "a");
    }

    #[test]
    fn syntax_error_is_a_file_error_with_line_and_column() {
        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \n";
        let error = file_error(text);
        assert!(matches!(error.kind, ConfigFileErrorKind::Syntax { .. }));
        assert_eq!((error.line, error.column), (3, 11), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("config.toml:3:11: TOML syntax error: "),
            "{error}"
        );
    }

    #[test]
    fn unknown_key_under_mcp_is_a_file_error() {
        let text = "[mcp.server.fs]\ntransport = \"stdio\"\ncommand = \"x\"\n";
        let error = file_error(text);
        assert_eq!((error.line, error.column), (1, 6), "{error}");
        assert_eq!(
            error.to_string(),
            "config.toml:1:6: unknown key `mcp.server`: rho reads only `mcp.servers` under [mcp]; did you mean `mcp.servers`?"
        );
        let error = file_error("[mcp]\nservers = {}\ntimeout = 3\n");
        assert_eq!((error.line, error.column), (3, 1));
        assert!(error.to_string().contains("unknown key `mcp.timeout`"));
    }

    #[test]
    fn mcp_and_servers_and_entries_must_be_tables() {
        let error = file_error("mcp = 3\n");
        assert_eq!(
            error.to_string(),
            "config.toml:1:7: `mcp` must be a table, found integer"
        );
        let error = file_error("[mcp]\nservers = [1]\n");
        assert_eq!(
            error.to_string(),
            "config.toml:2:11: `mcp.servers` must be a table of server tables, found array"
        );
    }

    #[test]
    fn an_entry_that_is_not_a_table_disables_only_itself() {
        let text = "[mcp.servers]\nfs = \"npx foo\"\n\n[mcp.servers.good]\ntransport = \"stdio\"\ncommand = \"good\"\n";
        let config = parse_ok(text);
        let good = config.get("good").expect("good").config.as_ref();
        assert_eq!(good.map(|c| c.id.as_str()).ok(), Some("good"));
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (2, 6));
        assert_eq!(
            error.to_string(),
            "config.toml:2:6: server `fs`: `mcp.servers.fs` must be a table, found string: write `[mcp.servers.fs]` with `transport = ...` and its keys on the lines below"
        );
        let (error, _) = entry_error("[[mcp.servers.fs]]\ntransport = \"stdio\"\n", "fs");
        assert!(error.message.contains("found array"), "{error}");
    }

    #[test]
    fn malformed_entry_beside_a_valid_one_does_not_stop_it() {
        let text = "[mcp.servers.bad]\ntransport = \"stdio\"\ncomand = \"x\"\n\n[mcp.servers.good]\ntransport = \"stdio\"\ncommand = \"good\"\n";
        let config = parse_ok(text);
        assert_eq!(config.servers.len(), 2);
        let (error, at) = entry_error(text, "bad");
        assert_eq!(at, (3, 1));
        assert_eq!(
            error.to_string(),
            "config.toml:3:1: server `bad`: unknown key `mcp.servers.bad.comand`; did you mean `command`?"
        );
        let enabled: Vec<_> = config.enabled().map(|s| s.id.to_string()).collect();
        assert_eq!(enabled, ["good"]);
        assert_eq!(config.errors().count(), 1);
    }

    #[test]
    fn disabled_entries_are_still_validated() {
        let text = "[mcp.servers.off]\nenabled = false\ntransport = \"stdio\"\n";
        let (error, at) = entry_error(text, "off");
        assert_eq!(at, (1, 1));
        assert!(
            error
                .message
                .contains("missing required key `mcp.servers.off.command`")
        );
    }

    #[test]
    fn identity_must_use_the_allowed_characters() {
        let text = "[mcp.servers.\"my.server\"]\ntransport = \"stdio\"\ncommand = \"x\"\n";
        let (error, at) = entry_error(text, "my.server");
        assert_eq!(at, (1, 14));
        assert_eq!(
            error.message,
            "invalid server identity: only ASCII letters, digits, `-` and `_` are allowed, found '.'"
        );
        assert_eq!(
            ServerId::new("").unwrap_err().to_string(),
            "a server identity must not be empty"
        );
        assert_eq!(
            ServerId::new("ok-id_2").map(|id| id.as_str().to_owned()),
            Ok("ok-id_2".to_owned())
        );
    }

    #[test]
    fn unknown_keys_name_the_full_path() {
        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\n\n[mcp.servers.fs.tools]\nallow = []\nalow = []\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (7, 1));
        assert!(
            error
                .message
                .starts_with("unknown key `mcp.servers.fs.tools.alow`"),
            "{error}"
        );

        let text = "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\noauth = { client_secret = \"s\" }\n";
        let (error, at) = entry_error(text, "r");
        assert_eq!(at, (4, 11));
        assert!(
            error
                .message
                .starts_with("unknown key `mcp.servers.r.oauth.client_secret`"),
            "{error}"
        );
    }

    #[test]
    fn oauth_grants_secrets_by_name_and_metadata_documents() {
        let table = |body: &str| {
            format!(
                "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x.example.com/mcp\"\n[mcp.servers.r.oauth]\n{body}"
            )
        };
        let config = parse_ok(&table(
            "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_from_env = \"M2M_SECRET\"\nclient_metadata_url = \"https://rho.example.com/client.json\"\n",
        ));
        let server = config.get("r").expect("r").config.as_ref().expect("valid");
        let Transport::StreamableHttp(http) = &server.transport else {
            panic!("http")
        };
        let oauth = http.oauth.as_ref().expect("oauth");
        assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
        assert_eq!(oauth.client_secret_from_env.as_deref(), Some("M2M_SECRET"));
        assert_eq!(
            oauth.client_metadata_url.as_deref(),
            Some("https://rho.example.com/client.json")
        );
        for (body, says) in [
            (
                "grant = \"client_credentials\"\nclient_id = \"m2m\"\n",
                "needs `client_id` and `client_secret_from_env`",
            ),
            (
                "grant = \"password\"\n",
                "must be \"authorization_code\" or \"client_credentials\"",
            ),
            (
                "client_metadata_url = \"http://rho.example.com/c.json\"\n",
                "must be an https URL",
            ),
            (
                "client_secret_from_env = \"A=B\"\n",
                "client_secret_from_env",
            ),
        ] {
            let (error, _) = entry_error(&table(body), "r");
            assert!(error.message.contains(says), "{body}: {error}");
        }
    }

    #[test]
    fn wrong_types_name_the_key_path_and_expected_type() {
        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nargs = \"-y\"\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (4, 8));
        assert_eq!(
            error.message,
            "`mcp.servers.fs.args` must be an array of strings, found string"
        );

        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nargs = [\"a\", 2]\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (4, 14));
        assert!(error.message.contains("element 1 is integer"), "{error}");

        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nenabled = \"no\"\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (4, 11));
        assert_eq!(
            error.message,
            "`mcp.servers.fs.enabled` must be a boolean, found string"
        );

        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = 7\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (3, 11));
        assert_eq!(
            error.message,
            "`mcp.servers.fs.command` must be a string, found integer"
        );

        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { A = 1 }\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (4, 13));
        assert_eq!(
            error.message,
            "`mcp.servers.fs.env.A` must be a string, found integer"
        );

        let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\ntools = [\"a\"]\n";
        let (error, at) = entry_error(text, "fs");
        assert_eq!(at, (4, 9));
        assert_eq!(
            error.message,
            "`mcp.servers.fs.tools` must be a table, found array"
        );

        let text = "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\n[mcp.servers.r.oauth]\nscopes = \"read\"\n";
        let (error, at) = entry_error(text, "r");
        assert_eq!(at, (5, 10));
        assert_eq!(
            error.message,
            "`mcp.servers.r.oauth.scopes` must be an array of strings, found string"
        );
    }

    #[test]
    fn missing_required_keys_point_at_the_entry() {
        let text = "[mcp.servers.a]\ncommand = \"x\"\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (1, 1));
        assert_eq!(
            error.message,
            "missing required key `mcp.servers.a.transport` (\"stdio\" or \"streamable_http\")"
        );

        let text = "[mcp.servers]\na = { transport = \"stdio\", command = \"\" }\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (2, 38));
        assert_eq!(error.message, "`mcp.servers.a.command`: must not be empty");

        let text = "[mcp.servers]\nr = { transport = \"streamable_http\" }\n";
        let (error, at) = entry_error(text, "r");
        assert_eq!(at, (2, 5));
        assert!(
            error
                .message
                .starts_with("missing required key `mcp.servers.r.url`"),
            "{error}"
        );
    }

    #[test]
    fn keys_of_the_other_transport_are_refused() {
        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nurl = \"https://x\"\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (4, 1));
        assert_eq!(
            error.message,
            "`url` is for transport = \"streamable_http\"; this server has transport = \"stdio\""
        );

        for key in [
            "command = \"x\"",
            "args = []",
            "cwd = \"/\"",
            "env = {}",
            "env_from_env = {}",
        ] {
            let text = format!(
                "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\n{key}\n"
            );
            let (error, at) = entry_error(&text, "r");
            assert_eq!(at, (4, 1), "{key}");
            assert!(
                error.message.contains("is for transport = \"stdio\""),
                "{error}"
            );
        }
    }

    #[test]
    fn bad_enum_values_list_the_valid_ones() {
        let text = "[mcp.servers.a]\ntransport = \"sse\"\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (2, 13));
        assert_eq!(
            error.message,
            "`mcp.servers.a.transport` must be one of \"stdio\", \"streamable_http\", not \"sse\""
        );

        let text =
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nlog_level = \"verbose\"\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (4, 13));
        assert_eq!(
            error.message,
            "`mcp.servers.a.log_level` must be one of \"debug\", \"info\", \"notice\", \"warning\", \"error\", \"critical\", \"alert\", \"emergency\", not \"verbose\""
        );

        let text =
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nsampling = \"allow\"\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (4, 12));
        assert_eq!(
            error.message,
            "`mcp.servers.a.sampling` must be one of \"deny\", \"ask\", not \"allow\""
        );
    }

    #[test]
    fn every_log_level_round_trips() {
        for level in LogLevel::ALL {
            let text = format!(
                "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nlog_level = \"{}\"\n",
                level.as_str()
            );
            assert_eq!(server(&text, "a").log_level, Some(level));
            assert_eq!(LogLevel::from_name(level.as_str()), Some(level));
            assert_eq!(
                serde_json::to_string(&level).ok(),
                Some(format!("\"{}\"", level.as_str()))
            );
        }
        assert!(LogLevel::Debug < LogLevel::Emergency);
    }

    #[test]
    fn environment_names_are_checked() {
        let text =
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (4, 9));
        assert_eq!(
            error.message,
            "`mcp.servers.a.env`: \"A=B\" is not a valid variable name: a variable name must not contain `=`"
        );

        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv_from_env = { \"\" = \"X\" }\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (4, 18));
        assert!(error.message.contains("must not be empty"), "{error}");

        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv_from_env = { TOKEN = \"GH=1\" }\n";
        let (error, at) = entry_error(text, "a");
        assert_eq!(at, (4, 26));
        assert_eq!(
            error.message,
            "`mcp.servers.a.env_from_env.TOKEN`: the value must name an ambient variable: a variable name must not contain `=`"
        );
    }

    #[test]
    fn header_names_and_values_are_checked() {
        let http = |extra: &str| {
            format!(
                "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\n{extra}\n"
            )
        };
        let text = http("headers = { \"Bad Header\" = \"v\" }");
        let (error, at) = entry_error(&text, "r");
        assert_eq!(at, (4, 13));
        assert!(
            error
                .message
                .contains("' ' is not allowed in a header name"),
            "{error}"
        );

        let text = http("headers = { X-A = \"v\\r\\nInjected: 1\" }");
        let (error, at) = entry_error(&text, "r");
        assert_eq!(at, (4, 19));
        assert_eq!(
            error.message,
            "`mcp.servers.r.headers.X-A`: a header value must not contain CR, LF or NUL"
        );

        let text = http("headers_from_env = { Authorization = \"\" }");
        let (error, at) = entry_error(&text, "r");
        assert_eq!(at, (4, 38));
        assert!(
            error.message.contains("must name an ambient variable"),
            "{error}"
        );

        let text = http("headers = { X-A = \"1\", x-a = \"2\" }");
        let (error, at) = entry_error(&text, "r");
        assert_eq!(at, position_of(&text, "x-a"));
        assert!(error.message.contains("case-insensitive"), "{error}");
    }

    fn url_result(url: &str) -> Result<ServerConfig, EntryError> {
        let text = format!("[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"{url}\"\n");
        parse_ok(&text).servers[0].config.clone()
    }

    #[test]
    fn non_loopback_http_is_refused_and_loopback_or_https_allowed() {
        for ok in [
            "https://mcp.example.com/mcp",
            "https://10.0.0.1/mcp",
            "http://localhost:8080/mcp",
            "http://LOCALHOST/mcp",
            "http://127.0.0.1:3000/mcp",
            "http://127.0.0.2/mcp",
            "http://[::1]:8080/mcp",
        ] {
            let config = url_result(ok).unwrap_or_else(|e| panic!("{ok}: {e:?}"));
            let Transport::StreamableHttp(http) = &config.transport else {
                panic!("{ok}: not HTTP")
            };
            assert_eq!(http.url.as_str(), Url::parse(ok).expect("url").as_str());
        }
        for bad in [
            "http://mcp.example.com/mcp",
            "http://10.0.0.1/mcp",
            "http://128.0.0.1/mcp",
            "http://[::2]/mcp",
            "http://localhost.example.com/mcp",
        ] {
            let error = url_result(bad).expect_err(bad);
            assert_eq!(error.message, HTTP_LOOPBACK_ONLY);
            assert_eq!((error.line, error.column), (3, 7));
        }
    }

    #[test]
    fn url_must_parse_and_carry_no_credentials_or_other_scheme() {
        let error = url_result("not a url").expect_err("unparseable");
        assert!(error.message.contains("is not a valid URL"), "{error}");
        assert_eq!((error.line, error.column), (3, 7));

        let error = url_result("https://alice:hunter2@mcp.example.com/").expect_err("userinfo");
        assert!(
            error.message.contains("must not contain credentials"),
            "{error}"
        );
        assert!(!error.message.contains("hunter2"), "{error}");
        let error = url_result("https://alice:hunter2@[::1").expect_err("unparseable");
        assert!(!error.message.contains("hunter2"), "{error}");

        let error = url_result("ws://localhost/").expect_err("scheme");
        assert!(error.message.contains("not `ws:`"), "{error}");
    }

    #[test]
    fn timeouts_accept_positive_integers_and_floats_only() {
        let with = |value: &str| {
            format!(
                "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nstartup_timeout_secs = {value}\n"
            )
        };
        assert_eq!(
            server(&with("0.5"), "a").startup_timeout,
            Duration::from_millis(500)
        );
        assert_eq!(
            server(&with("0x10"), "a").startup_timeout,
            Duration::from_secs(16)
        );
        assert_eq!(server(&with("604800"), "a").startup_timeout, MAX_TIMEOUT);
        for bad in [
            "0",
            "-3",
            "0.0",
            "-1.5",
            "inf",
            "nan",
            "1e-12",
            "604801",
            "1e300",
            "9223372036854775807",
        ] {
            let (error, at) = entry_error(&with(bad), "a");
            assert_eq!(at, (4, 24), "{bad}");
            assert_eq!(
                error.message,
                format!(
                    "`mcp.servers.a.startup_timeout_secs` must be a positive number of seconds no greater than 604800, not {bad}"
                )
            );
        }
        let (error, at) = entry_error(&with("\"10\""), "a");
        assert_eq!(at, (4, 24));
        assert_eq!(
            error.message,
            "`mcp.servers.a.startup_timeout_secs` must be a number of seconds, found string"
        );
    }

    #[test]
    fn the_first_error_in_the_file_is_reported() {
        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nlog_level = \"loud\"\nsampling = \"maybe\"\n";
        let (_, at) = entry_error(text, "a");
        assert_eq!(at, (4, 13));
        let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nsampling = \"maybe\"\nlog_level = \"loud\"\n";
        let (_, at) = entry_error(text, "a");
        assert_eq!(at, (4, 12));
    }

    #[test]
    fn debug_output_hides_literal_env_and_header_values() {
        let shown = format!("{:?}", parse_ok(FULL));
        assert!(!shown.contains("production"), "{shown}");
        assert!(!shown.contains("public-tenant"), "{shown}");
        assert!(shown.contains("NODE_ENV"), "{shown}");
        assert!(shown.contains("X-Tenant"), "{shown}");
    }

    #[test]
    fn line_column_counts_characters_from_one() {
        let text = "ab\nçd=x\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 3), (2, 1));
        assert_eq!(line_column(text, text.find('d').unwrap_or(0)), (2, 2));
        assert_eq!(line_column(text, 4), (2, 1), "inside a multi-byte char");
        assert_eq!(line_column(text, 999), (3, 1), "clamped to the end");
    }

    #[test]
    fn tool_filter_deny_wins_over_allow() {
        let filter = ToolFilter {
            allow: Some(vec!["a".into(), "b".into()]),
            deny: vec!["b".into()],
        };
        assert!(filter.permits("a"));
        assert!(!filter.permits("b"));
        assert!(!filter.permits("c"));
        assert!(ToolFilter::default().permits("anything"));
    }

    #[test]
    fn serialized_names_are_the_config_spellings() {
        let id = ServerId::new("fs").expect("valid");
        assert_eq!(serde_json::to_string(&id).ok().as_deref(), Some("\"fs\""));
        assert_eq!(
            serde_json::to_string(&SamplingPolicy::Ask).ok().as_deref(),
            Some("\"ask\"")
        );
        assert_eq!(SamplingPolicy::default().as_str(), "deny");
    }
}
