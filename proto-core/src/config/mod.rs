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
mod error;
mod parse;
mod plugin;
pub mod process;
#[cfg(test)]
mod tests;

pub use error::*;
pub use parse::{check_url_policy, parse};

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

/// How much text one tool result, prompt turn or resource may put in
/// front of the model when neither `[mcp] max_output_bytes` nor the
/// server's own says: 64 KiB (see [`crate::features::limit`] for why).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 64 * 1024;

/// The smallest `max_output_bytes` accepted: 1 KiB. Below it even a
/// short answer and the note saying it was cut do not fit.
pub const MIN_MAX_OUTPUT_BYTES: usize = 1024;

/// The smallest `max_message_bytes` accepted: 64 KiB. Below it, ordinary
/// `initialize` and `tools/list` answers no longer fit.
pub const MIN_MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The largest `max_message_bytes` accepted: 1 GiB. The cap is memory rho
/// may hold for one message; more than this is a mistake.
pub const MAX_MAX_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;

/// How many restarts in a row a stdio server gets when its entry names no
/// `restart.attempts`: enough to ride out a crash or two, few enough that a
/// server that cannot start again is given up on within seconds.
pub const DEFAULT_RESTART_ATTEMPTS: u32 = 3;

/// The largest `restart.attempts` accepted. More is a crash loop, not a
/// recovery.
pub const MAX_RESTART_ATTEMPTS: u32 = 100;

/// The wait before a stdio server's first restart when its entry names no
/// `restart.backoff_ms`; each further attempt in a row waits twice as
/// long, up to [`MAX_RESTART_BACKOFF`].
pub const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_millis(500);

/// The longest wait before a restart, and the largest `restart.backoff_ms`
/// accepted: a server that needs longer to come back is better restarted
/// by a person.
pub const MAX_RESTART_BACKOFF: Duration = Duration::from_secs(30);

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
    /// `[mcp] max_output_bytes` as written: the cap of every server whose
    /// entry names none, plugin servers included. `None` when the file
    /// does not set it ([`DEFAULT_MAX_OUTPUT_BYTES`] applies).
    pub max_output_bytes: Option<usize>,
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

    /// Adds plugin servers after the file's own. A plugin server gets the
    /// file's `[mcp] max_output_bytes`: an `mcp.json` entry has no key of
    /// its own for it (the file is shared with clients that are not rho),
    /// and a plugin must not put more in front of the model than the user
    /// allowed every server. (A file's own entry still wins with its own
    /// `max_output_bytes`.)
    pub fn add_plugin_servers(&mut self, entries: impl IntoIterator<Item = ServerEntry>) {
        let cap = self.max_output_bytes;
        self.servers.extend(entries.into_iter().map(|mut entry| {
            if let (Some(cap), Ok(server)) = (cap, entry.config.as_mut()) {
                server.max_output_bytes = cap;
            }
            entry
        }));
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
    /// How a stdio server whose process dies after its session was
    /// established is started again (`restart`); a Streamable HTTP
    /// server's entry cannot set it, and is [`RestartPolicy::NEVER`].
    pub restart: RestartPolicy,
    /// How much text one tool result, prompt turn or resource from this
    /// server may put in front of the model (`max_output_bytes`: the
    /// server's own, else `[mcp] max_output_bytes`, else
    /// [`DEFAULT_MAX_OUTPUT_BYTES`]); see [`crate::features::limit`].
    pub max_output_bytes: usize,
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

/// `[mcp.servers.<id>] restart = { attempts = N, backoff_ms = MS }`: how
/// a stdio server whose process died after its session was established
/// is started again.
///
/// Only a session that was established is restarted: a server that fails
/// its startup is reported failed and never retried (the reference:
/// "Rho does not retry during startup"), and one rho closed (a person's
/// stop, shutdown) stays closed. The pure decision of when is
/// [`crate::runtime::restart::Restarts`]; this is only its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Restarts in a row before rho gives up (`attempts`; `0`: never
    /// restart). A restarted session that stays up for
    /// [`crate::runtime::restart::STABLE_SESSION`] starts the count again.
    pub attempts: u32,
    /// The wait before the first restart in a row (`backoff_ms`); each
    /// further one waits twice as long as the one before, at most
    /// [`MAX_RESTART_BACKOFF`].
    pub backoff: Duration,
}

impl RestartPolicy {
    /// Never restart: a Streamable HTTP server (its session recovers on
    /// its own, by a fresh `initialize`), or `attempts = 0`.
    pub const NEVER: Self = Self {
        attempts: 0,
        backoff: Duration::ZERO,
    };

    /// Whether a lost session is restarted at all.
    pub fn is_enabled(&self) -> bool {
        self.attempts > 0
    }

    /// The wait before restart `attempt` in a row (from 1): `backoff`
    /// doubled for each attempt before it, at most [`MAX_RESTART_BACKOFF`].
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.backoff
            .saturating_mul(1u32 << doublings)
            .min(MAX_RESTART_BACKOFF)
    }
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            attempts: DEFAULT_RESTART_ATTEMPTS,
            backoff: DEFAULT_RESTART_BACKOFF,
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
    /// Where the signing key of a `private_key_jwt` client is
    /// (`client_key_file` or `client_key_from_env`); with it the client
    /// authenticates with a signed JWT instead of a secret.
    pub client_key: Option<OAuthClientKey>,
    /// `client_secret_file`: the absolute path of a file holding the
    /// client secret, instead of `client_secret_from_env`.
    pub client_secret_file: Option<String>,
    /// What the assertion grants read: the workload's JWT, or the
    /// identity provider and identity assertion of the enterprise grant.
    pub assertion: Box<OAuthAssertionConfig>,
    /// `dpop`: whether tokens are bound to a key of the host's (RFC 9449);
    /// `auto` (the default) where the authorization server offers ES256.
    pub dpop: crate::oauth::dpop::DpopMode,
    /// `redirect_port`: the loopback port of the browser login's redirect
    /// URI (`http://127.0.0.1:PORT/callback`), for a client registered
    /// out of band with that exact URI; unset, the system picks a port.
    pub redirect_port: Option<u16>,
}

/// A secret's place: a file or an ambient variable, never the secret.
pub type SecretSource = OAuthClientKey;

/// The keys of the assertion grants (`grant = "jwt_bearer"` and `grant =
/// "identity_assertion"`); each is set only for its grant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OAuthAssertionConfig {
    /// `assertion_file` / `assertion_from_env`: where the workload's JWT
    /// is (`jwt_bearer`), read again at each grant (platforms rotate it).
    pub assertion: Option<SecretSource>,
    /// `id_token_file` / `id_token_from_env`: where the identity
    /// assertion (an OpenID Connect ID token) is (`identity_assertion`).
    pub id_token: Option<SecretSource>,
    /// `idp_token_endpoint`: the identity provider's token endpoint, where
    /// the ID token is exchanged for an ID-JAG.
    pub idp_token_endpoint: Option<Url>,
    /// `idp_client_id`: this client at the identity provider.
    pub idp_client_id: Option<String>,
    /// `idp_client_secret_file` / `idp_client_secret_from_env`: its
    /// secret, when it has one.
    pub idp_client_secret: Option<SecretSource>,
    /// `idp_audience`: the exchange's `audience`, when not the issuer of
    /// the MCP server's authorization server.
    pub idp_audience: Option<String>,
}

/// Where a `private_key_jwt` client's signing key (a PKCS#8 PEM, P-256)
/// is: never the key itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OAuthClientKey {
    /// `client_key_file`: the absolute path of the PEM file.
    File(String),
    /// `client_key_from_env`: the variable that holds the PEM.
    FromEnv(String),
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
    /// Workload identity federation: a JWT the workload's platform issued
    /// is the grant (RFC 7523); never a browser.
    JwtBearer,
    /// Enterprise-managed authorization (SEP-990): an identity assertion
    /// from single sign-on is exchanged at the identity provider for an
    /// ID-JAG (RFC 8693), the grant at the authorization server; never a
    /// browser.
    IdentityAssertion,
}

impl OAuthGrant {
    /// Whether tokens come without a person (no browser login).
    pub fn is_unattended(self) -> bool {
        self != OAuthGrant::AuthorizationCode
    }

    /// The grant named `name` in the config, exactly.
    pub fn from_name(name: &str) -> Option<Self> {
        [
            OAuthGrant::AuthorizationCode,
            OAuthGrant::ClientCredentials,
            OAuthGrant::JwtBearer,
            OAuthGrant::IdentityAssertion,
        ]
        .into_iter()
        .find(|grant| grant.name() == name)
    }

    /// The grant's name in the config (`grant = "..."`).
    pub fn name(self) -> &'static str {
        match self {
            OAuthGrant::AuthorizationCode => "authorization_code",
            OAuthGrant::ClientCredentials => "client_credentials",
            OAuthGrant::JwtBearer => "jwt_bearer",
            OAuthGrant::IdentityAssertion => "identity_assertion",
        }
    }
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
