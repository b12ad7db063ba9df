//! What goes wrong in a config file, and where: a [`ConfigFileError`] for
//! the file as a whole, an [`EntryError`] for one server, both with a
//! `file:line:column` a person can go straight to; and a
//! [`UrlPolicyError`] for a URL rho may not send MCP requests to.

use super::*;

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
    /// `[mcp] max_output_bytes` is not a number of bytes in range.
    #[error("{message}")]
    McpValue {
        /// What is wrong and what to write instead.
        message: String,
    },
    /// A key directly under `[mcp]` other than `servers` and
    /// `max_output_bytes`.
    ///
    /// This fails the whole file rather than one entry because it is almost
    /// always a misspelt table: `[mcp.server.fs]` would otherwise be ignored
    /// and the user would silently get no servers at all.
    #[error(
        "unknown key `{key}`: rho reads only `mcp.servers` and `mcp.max_output_bytes` under [mcp]{}",
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

/// Why a URL is not one rho may send MCP requests to (see
/// [`check_url_policy`]); the text says what to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlPolicyError {
    /// The text does not parse as a URL (the parser's reason).
    #[error("`url` is not a valid URL: {0}")]
    Invalid(String),
    /// The URL carries a user name or password.
    #[error("`url` must not contain credentials (user:pass@); send them with `headers_from_env`")]
    Credentials,
    /// Plain http to a host that is not loopback.
    #[error("{}", super::parse::HTTP_LOOPBACK_ONLY)]
    PlainHttp,
    /// Neither https nor http (the scheme given).
    #[error("`url` must be an https URL (or http on loopback), not `{0}:`")]
    Scheme(String),
}
