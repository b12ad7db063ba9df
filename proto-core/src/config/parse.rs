//! Reading rho's `[mcp]` table out of TOML text: every key checked against
//! the model in [`super`], with spans kept so each fault names its
//! `file:line:column`, typos suggested, and one bad server entry disabling
//! only that server.

use super::*;
use crate::oauth::dpop::DpopMode;

mod grants;

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
    "max_output_bytes",
];
pub(super) const STDIO_KEYS: &[&str] = &["command", "args", "cwd", "env", "env_from_env"];
/// The stdio keys of a config file's entry beyond [`STDIO_KEYS`] (which an
/// `mcp.json` entry shares): how the server is restarted.
const STDIO_FILE_KEYS: &[&str] = &["restart"];
pub(super) const HTTP_KEYS: &[&str] = &["url", "headers", "headers_from_env", "oauth"];
pub(super) const HTTP_LOOPBACK_ONLY: &str = "non-loopback endpoints must use https; http is allowed only for localhost, 127.0.0.0/8 and [::1]";

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
        .find(|(key, _)| !matches!(key.get_ref().as_ref(), "servers" | "max_output_bytes"))
    {
        return Err(file_error(
            key.span(),
            ConfigFileErrorKind::UnknownMcpKey {
                key: key_path("mcp", key.get_ref()),
            },
        ));
    }
    let output_cap = match mcp.get("max_output_bytes") {
        None => None,
        Some(value) => Some(
            output_bytes(value, "mcp.max_output_bytes").map_err(|fault| {
                file_error(
                    fault.span,
                    ConfigFileErrorKind::McpValue {
                        message: fault.message,
                    },
                )
            })?,
        ),
    };
    let Some(servers) = mcp.get("servers") else {
        return Ok(Config {
            sampling_command,
            plugin_dirs,
            max_output_bytes: output_cap,
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
                Some(table) => read_entry(key, value.span(), table)
                    .map(|mut server| {
                        if let (false, Some(cap)) =
                            (table.contains_key("max_output_bytes"), output_cap)
                        {
                            server.max_output_bytes = cap;
                        }
                        server
                    })
                    .map_err(entry_error),
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
        max_output_bytes: output_cap,
    })
}

type Key<'i> = Spanned<DeString<'i>>;
type Value<'i> = Spanned<DeValue<'i>>;

/// One problem, located by byte span, before it becomes an [`EntryError`].
#[derive(Clone, Debug)]
pub(super) struct Fault {
    pub(super) span: Range<usize>,
    pub(super) message: String,
}

impl Fault {
    pub(super) fn new(span: Range<usize>, message: impl Into<String>) -> Self {
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
pub(super) fn key_path(parent: &str, key: &str) -> String {
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
pub(super) struct Scope<'t, 'i> {
    pub(super) path: String,
    pub(super) span: Range<usize>,
    pub(super) table: &'t DeTable<'i>,
}

impl<'t, 'i> Scope<'t, 'i> {
    pub(super) fn path_of(&self, key: &str) -> String {
        key_path(&self.path, key)
    }

    pub(super) fn lookup(&self, key: &str) -> Option<(&'t Key<'i>, &'t Value<'i>)> {
        self.table.get_key_value(key)
    }

    /// The first key (in file order) that is not in `known`.
    pub(super) fn reject_unknown(&self, known: &[&str], extra: &str) -> Checked<()> {
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

    pub(super) fn type_fault(&self, key: &str, value: &Value<'_>, expected: &str) -> Fault {
        Fault::new(
            value.span(),
            format!(
                "`{}` must be {expected}, found {}",
                self.path_of(key),
                value.get_ref().type_str()
            ),
        )
    }

    pub(super) fn bool(&self, key: &str) -> Checked<Option<bool>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        match value.get_ref() {
            DeValue::Boolean(b) => Ok(Some(*b)),
            _ => Err(self.type_fault(key, value, "a boolean")),
        }
    }

    /// A string value with its span.
    pub(super) fn string(&self, key: &str) -> Checked<Option<(&'t str, Range<usize>)>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        match value.get_ref() {
            DeValue::String(s) => Ok(Some((s.as_ref(), value.span()))),
            _ => Err(self.type_fault(key, value, "a string")),
        }
    }

    /// A string that must be one of `choices`.
    pub(super) fn choice<T: Copy>(&self, key: &str, choices: &[(&str, T)]) -> Checked<Option<T>> {
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
    pub(super) fn strings(
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
    pub(super) fn string_map(
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
    pub(super) fn table(&self, key: &str) -> Checked<Option<Scope<'t, 'i>>> {
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
    pub(super) fn timeout(&self, key: &str) -> Checked<Duration> {
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

    /// `max_output_bytes`: a whole number of bytes within the sane range.
    pub(super) fn max_output_bytes(&self) -> Checked<usize> {
        const KEY: &str = "max_output_bytes";
        match self.lookup(KEY) {
            None => Ok(DEFAULT_MAX_OUTPUT_BYTES),
            Some((_, value)) => output_bytes(value, &self.path_of(KEY)),
        }
    }

    /// `max_message_bytes`: a whole number of bytes within the sane range.
    pub(super) fn max_message_bytes(&self) -> Checked<usize> {
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

    /// `restart = { attempts = N, backoff_ms = MS }` (or a
    /// `[mcp.servers.<id>.restart]` table); [`RestartPolicy::default`]
    /// when absent, and for each key left out.
    pub(super) fn restart(&self) -> Checked<RestartPolicy> {
        const KEY: &str = "restart";
        let Some((_, value)) = self.lookup(KEY) else {
            return Ok(RestartPolicy::default());
        };
        let DeValue::Table(table) = value.get_ref() else {
            return Err(self.type_fault(
                KEY,
                value,
                "a table such as `{ attempts = 3, backoff_ms = 500 }` (`attempts = 0` turns restarts off)",
            ));
        };
        let scope = Scope {
            path: self.path_of(KEY),
            span: value.span(),
            table,
        };
        scope.reject_unknown(&["attempts", "backoff_ms"], "")?;
        let default = RestartPolicy::default();
        let attempts = scope.whole_number(
            "attempts",
            u64::from(MAX_RESTART_ATTEMPTS),
            "a whole number of restarts in a row from 0 (never restart)",
        );
        let backoff_ms = scope.whole_number(
            "backoff_ms",
            u64::try_from(MAX_RESTART_BACKOFF.as_millis()).unwrap_or(u64::MAX),
            "a whole number of milliseconds from 0",
        );
        first_fault(&[attempts.as_ref().err(), backoff_ms.as_ref().err()])?;
        Ok(RestartPolicy {
            attempts: attempts?
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(default.attempts),
            backoff: backoff_ms?
                .map(Duration::from_millis)
                .unwrap_or(default.backoff),
        })
    }

    /// An integer from 0 to `max`; `None` when absent. `what` says what it
    /// counts, for the message.
    fn whole_number(&self, key: &str, max: u64, what: &str) -> Checked<Option<u64>> {
        let Some((_, value)) = self.lookup(key) else {
            return Ok(None);
        };
        let parsed = match value.get_ref() {
            DeValue::Integer(integer) => i128::from_str_radix(integer.as_str(), integer.radix())
                .ok()
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| *n <= max),
            _ => None,
        };
        parsed.map(Some).ok_or_else(|| {
            Fault::new(
                value.span(),
                format!(
                    "`{}` must be {what} to {max}, not {}",
                    self.path_of(key),
                    value_text(value.get_ref())
                ),
            )
        })
    }
}

/// A `max_output_bytes` value (at `path`, for the message): a whole number
/// of bytes from [`MIN_MAX_OUTPUT_BYTES`] to [`MAX_MAX_MESSAGE_BYTES`]
/// (more than one message can hold would cap nothing).
fn output_bytes(value: &Value<'_>, path: &str) -> Checked<usize> {
    let fault = || {
        Fault::new(
            value.span(),
            format!(
                "`{path}` must be a whole number of bytes from {MIN_MAX_OUTPUT_BYTES} (1 KiB) to {MAX_MAX_MESSAGE_BYTES} (1 GiB), not {}",
                value_text(value.get_ref())
            ),
        )
    };
    let DeValue::Integer(integer) = value.get_ref() else {
        return Err(fault());
    };
    i128::from_str_radix(integer.as_str(), integer.radix())
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (MIN_MAX_OUTPUT_BYTES..=MAX_MAX_MESSAGE_BYTES).contains(n))
        .ok_or_else(fault)
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
        .chain(STDIO_FILE_KEYS)
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
        (
            TRANSPORT_HTTP,
            TRANSPORT_STDIO,
            [STDIO_KEYS, STDIO_FILE_KEYS],
        )
    } else {
        (TRANSPORT_STDIO, TRANSPORT_HTTP, [HTTP_KEYS, &[]])
    };
    let misplaced = source_order(table)
        .into_iter()
        .find(|(key, _)| other_keys.concat().contains(&key.get_ref().as_ref()))
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
    let max_output_bytes = scope.max_output_bytes();
    // Only a stdio entry can hold `restart` (a misplaced one is refused
    // above): an HTTP server is never restarted.
    let restart = if is_http {
        Ok(RestartPolicy::NEVER)
    } else {
        scope.restart()
    };
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
        max_output_bytes.as_ref().err(),
        restart.as_ref().err(),
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
        max_output_bytes: max_output_bytes?,
        restart: restart?,
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

pub(super) fn read_stdio(server: &Scope<'_, '_>) -> Checked<StdioConfig> {
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

pub(super) fn read_http(server: &Scope<'_, '_>) -> Checked<HttpConfig> {
    let url = server.string("url").and_then(|url| match url {
        None => Err(Fault::new(
            server.span.clone(),
            format!(
                "missing required key `{}`: a streamable_http server needs its endpoint",
                server.path_of("url")
            ),
        )),
        Some((url, span)) => endpoint(url).map_err(|why| Fault::new(span, why.to_string())),
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
            "client_key_file",
            "client_key_from_env",
            "client_secret_file",
            "assertion_file",
            "assertion_from_env",
            "id_token_file",
            "id_token_from_env",
            "idp_token_endpoint",
            "idp_client_id",
            "idp_client_secret_file",
            "idp_client_secret_from_env",
            "idp_audience",
            "dpop",
            "redirect_port",
        ],
        "; nothing secret belongs in this table (a client secret is named by `client_secret_from_env`, a signing key by `client_key_file` or `client_key_from_env`)",
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
        Some(("jwt_bearer", _)) => Ok(OAuthGrant::JwtBearer),
        Some(("identity_assertion", _)) => Ok(OAuthGrant::IdentityAssertion),
        Some((other, span)) => Err(Fault::new(
            span,
            format!(
                "`{}` must be \"authorization_code\", \"client_credentials\", \"jwt_bearer\" or \"identity_assertion\", not {other:?}",
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
    let key_file = oauth.string("client_key_file").and_then(|path| match path {
        Some((path, span)) => non_empty_os_string(path)
            .and_then(|()| {
                std::path::Path::new(path)
                    .is_absolute()
                    .then_some(())
                    .ok_or_else(|| "must be an absolute path (of a PKCS#8 PEM file)".to_owned())
            })
            .map(|()| Some((OAuthClientKey::File(path.to_owned()), span.clone())))
            .map_err(|why| {
                Fault::new(
                    span,
                    format!("`{}`: {why}", oauth.path_of("client_key_file")),
                )
            }),
        None => Ok(None),
    });
    let key_env = oauth
        .string("client_key_from_env")
        .and_then(|name| match name {
            Some((name, span)) => variable_name(name)
                .map(|()| Some((OAuthClientKey::FromEnv(name.to_owned()), span.clone())))
                .map_err(|e| {
                    Fault::new(
                        span,
                        format!("`{}`: {e}", oauth.path_of("client_key_from_env")),
                    )
                }),
            None => Ok(None),
        });
    let dpop = oauth.string("dpop").and_then(|mode| match mode {
        None => Ok(DpopMode::default()),
        Some((word, span)) => DpopMode::from_name(word).ok_or_else(|| {
            Fault::new(
                span,
                format!(
                    "`{}` must be \"auto\", \"required\" or \"off\", not {word:?}",
                    oauth.path_of("dpop")
                ),
            )
        }),
    });
    let redirect_port = match oauth.lookup("redirect_port") {
        None => Ok(None),
        Some((_, value)) => match value.get_ref() {
            DeValue::Integer(integer) => i128::from_str_radix(integer.as_str(), integer.radix())
                .ok()
                .and_then(|n| u16::try_from(n).ok())
                .filter(|&n| n > 0)
                .map(Some)
                .ok_or_else(|| {
                    Fault::new(
                        value.span(),
                        format!(
                            "`{}` must be a port from 1 to 65535, not {integer}",
                            oauth.path_of("redirect_port")
                        ),
                    )
                }),
            _ => Err(oauth.type_fault("redirect_port", value, "a port number")),
        },
    };
    first_fault(&[
        client_id.as_ref().err(),
        scopes.as_ref().err(),
        grant.as_ref().err(),
        dpop.as_ref().err(),
        redirect_port.as_ref().err(),
        secret.as_ref().err(),
        metadata_url.as_ref().err(),
        key_file.as_ref().err(),
        key_env.as_ref().err(),
    ])?;
    let client_key = match (key_file?, key_env?) {
        (Some(_), Some((_, span))) => {
            return Err(Fault::new(
                span,
                format!(
                    "`{}` and `{}` are two places for one key: keep one",
                    oauth.path_of("client_key_file"),
                    oauth.path_of("client_key_from_env")
                ),
            ));
        }
        (Some(key), None) | (None, Some(key)) => Some(key),
        (None, None) => None,
    };
    let secret_file = grants::secret_file(&oauth, secret.as_ref().ok().and_then(Option::as_ref));
    let mut config = OAuthConfig {
        client_id: client_id?,
        scopes: scopes?,
        grant: grant?,
        client_secret_from_env: secret?,
        client_metadata_url: metadata_url?,
        client_key: client_key.as_ref().map(|(key, _)| key.clone()),
        client_secret_file: secret_file?.map(|(path, _)| path),
        assertion: Box::default(),
        dpop: dpop?,
        redirect_port: redirect_port?,
    };
    if config.redirect_port.is_some() && config.grant.is_unattended() {
        return Err(Fault::new(
            server.span.clone(),
            format!(
                "`{}` is the browser login's callback; `{}` = \"{}\" opens no browser: drop it",
                oauth.path_of("redirect_port"),
                oauth.path_of("grant"),
                config.grant.name()
            ),
        ));
    }
    config.assertion = Box::new(grants::read_assertion_config(&oauth, &config)?);
    if let Some((_, span)) = &client_key {
        if config.client_secret_from_env.is_some() || config.client_secret_file.is_some() {
            return Err(Fault::new(
                span.clone(),
                format!(
                    "`{}` and a client key are two ways to authenticate one client: keep one",
                    oauth.path_of("client_secret_from_env")
                ),
            ));
        }
        if config.client_id.is_none() {
            return Err(Fault::new(
                span.clone(),
                format!(
                    "a client key signs for a registered client: set `{}` in the same table",
                    oauth.path_of("client_id")
                ),
            ));
        }
    }
    if config.grant == OAuthGrant::ClientCredentials
        && (config.client_id.is_none()
            || (config.client_secret_from_env.is_none()
                && config.client_secret_file.is_none()
                && config.client_key.is_none()))
    {
        return Err(Fault::new(
            server.span.clone(),
            format!(
                "`{}` = \"client_credentials\" needs `client_id` and `client_secret_from_env` (or `client_secret_file`, `client_key_file` or `client_key_from_env`) in the same table",
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
    // No platform forbids more than `=` and NUL, but a name with a control
    // or BIDI character cannot be typed, and would be an instruction to
    // the terminal wherever a person is shown it.
    if let Some(c) = name.chars().find(|c| crate::text::terminal::is_control(*c)) {
        return Err(format!(
            "a variable name must not contain a control or bidirectional-override character ({c:?})"
        ));
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
fn endpoint(raw: &str) -> Result<Url, UrlPolicyError> {
    let url = Url::parse(raw).map_err(|error| UrlPolicyError::Invalid(error.to_string()))?;
    check_url_policy(&url)?;
    Ok(url)
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
///
/// It reads the parsed URL as it is: the transports check every request
/// against it, so it must not parse the text again (that was about 20k
/// of the 143k instructions of an HTTP call on loopback).
pub fn check_url_policy(url: &Url) -> Result<(), UrlPolicyError> {
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlPolicyError::Credentials);
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err(UrlPolicyError::PlainHttp),
        other => Err(UrlPolicyError::Scheme(other.to_owned())),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(address)) => address.is_loopback(),
        Some(Host::Ipv6(address)) => address == Ipv6Addr::LOCALHOST,
        None => false,
    }
}
