//! Agent Plugin servers: one plugin directory's `mcp.json` translated into
//! the same configuration model as `[mcp.servers]`.
//!
//! A plugin is a directory holding an `mcp.json` in the widespread
//! `{"mcpServers": {"<name>": {...}}}` shape, and optionally a
//! `plugin.json` whose `name` names the plugin (else the directory's name
//! does). Each server becomes a [`ServerEntry`] with the identity
//! `<plugin>/<server>`; its command, arguments, working directory,
//! environment and endpoint go through the very checks a config entry's
//! do, so transports, budgets, namespacing, isolation and shutdown behave
//! identically. A plugin's server gets the default budgets and tool
//! filter, and can never opt into sampling. Its `max_output_bytes` is the
//! selected config's `[mcp] max_output_bytes` once the host adds it with
//! [`super::Config::add_plugin_servers`] (the default until then).
//!
//! The host finds the directories and reads the files; this module only
//! reads texts, so it is as pure as the rest of the config model. An
//! entry's error points at `file:line:column` of the `mcp.json` (or
//! `plugin.json`) like a config error does. A problem with the plugin as a
//! whole (unparsable JSON, an unusable name) is one entry with the
//! identity `<plugin>/*`; a problem with one server disables that server
//! alone.
//!
//! # What an entry may say
//!
//! - `type`: `"stdio"` (the default when `command` is given), or `"http"`,
//!   `"streamable-http"`, `"streamableHttp"` or `"streamable_http"` (the
//!   default when `url` is given) for Streamable HTTP. `"sse"`, the legacy
//!   HTTP+SSE transport, is refused with a reason.
//! - stdio: `command`, `args`, `env`, `cwd`; Streamable HTTP: `url`,
//!   `headers`. A key of the other transport is an error.
//! - `disabled: true` keeps the entry without starting it.
//! - `${PLUGIN_ROOT}` (the plugin's directory) and `${PLUGIN_DATA}` (its
//!   data directory, see [`PluginOrigin::data_dir`]) are expanded in
//!   `command`, `args`, `cwd`, `env` values and `url`. Any other `${...}`
//!   stays as written: rho expands nothing else, and never runs a shell.
//! - Other keys (`autoApprove`, `timeout` and the like, which other clients
//!   read) are ignored: the file is shared with tools that are not rho.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};

use super::parse::{Fault, HTTP_KEYS, STDIO_KEYS, Scope, key_path, read_http, read_stdio};
use super::{
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT, EntryError, PluginOrigin, RestartPolicy,
    SamplingPolicy, ServerConfig, ServerEntry, ServerId, ToolFilter, Transport, line_column,
};

/// One plugin directory's files, as the host read them.
#[derive(Clone, Copy, Debug)]
pub struct PluginDir<'a> {
    /// The plugin's directory: `${PLUGIN_ROOT}`, and where its files are
    /// named in errors.
    pub root: &'a str,
    /// The directory's own name: the plugin's name unless `plugin.json`
    /// gives one.
    pub dir_name: &'a str,
    /// `plugin.json`'s text, when the directory has one.
    pub manifest: Option<&'a str>,
    /// `mcp.json`'s text.
    pub mcp_json: &'a str,
    /// Where plugins keep their data: `${PLUGIN_DATA}` is
    /// `<data_root>/<plugin name>`.
    pub data_root: &'a str,
}

/// What one plugin directory contributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plugin {
    /// The plugin's name (the directory's when `plugin.json` is unusable).
    pub name: String,
    /// Its servers, valid or not, in the order `mcp.json` lists them.
    pub entries: Vec<ServerEntry>,
}

/// Reads one plugin directory's `plugin.json` and `mcp.json`.
pub fn read_plugin(dir: &PluginDir<'_>) -> Plugin {
    let manifest_file = file_in(dir.root, "plugin.json");
    let mcp_file = file_in(dir.root, "mcp.json");
    let whole = |name: &str, file: &str, text: &str, span: Range<usize>, message: String| {
        let (line, column) = line_column(text, span.start);
        Plugin {
            name: name.to_owned(),
            entries: vec![ServerEntry {
                id: format!("{name}/*"),
                config: Err(EntryError {
                    file: file.to_owned(),
                    id: format!("{name}/*"),
                    line,
                    column,
                    message,
                }),
                plugin: Some(origin(dir, name)),
            }],
        }
    };
    let name = match dir.manifest.map(|text| (text, manifest_name(text))) {
        None => dir.dir_name.to_owned(),
        Some((_, Ok(None))) => dir.dir_name.to_owned(),
        Some((text, Ok(Some((name, span))))) => match ServerId::new(name.as_str()) {
            Ok(_) => name,
            Err(why) => {
                return whole(
                    dir.dir_name,
                    &manifest_file,
                    text,
                    span,
                    format!("plugin name {name:?} cannot be part of a server identity: {why}"),
                );
            }
        },
        Some((text, Err((span, message)))) => {
            return whole(dir.dir_name, &manifest_file, text, span, message);
        }
    };
    let plugin_id = match ServerId::new(name.as_str()) {
        Ok(id) => id,
        Err(why) => {
            return whole(
                &name,
                &manifest_file,
                "",
                0..0,
                format!(
                    "plugin directory name {name:?} cannot be part of a server identity ({why}): give the plugin a `name` in plugin.json"
                ),
            );
        }
    };
    let servers = match mcp_servers(dir.mcp_json) {
        Ok(servers) => servers,
        Err((span, message)) => return whole(&name, &mcp_file, dir.mcp_json, span, message),
    };
    let origin = origin(dir, &name);
    let entries = servers
        .into_iter()
        .map(|(key, node)| {
            let id = format!("{name}/{}", key.get_ref());
            let config = read_server(&plugin_id, &key, &node, &origin).map_err(|fault| {
                let (line, column) = line_column(dir.mcp_json, fault.span.start);
                EntryError {
                    file: mcp_file.clone(),
                    id: id.clone(),
                    line,
                    column,
                    message: fault.message,
                }
            });
            ServerEntry {
                id,
                config,
                plugin: Some(origin.clone()),
            }
        })
        .collect();
    Plugin { name, entries }
}

fn file_in(root: &str, name: &str) -> String {
    Path::new(root).join(name).display().to_string()
}

fn origin(dir: &PluginDir<'_>, name: &str) -> PluginOrigin {
    PluginOrigin {
        name: name.to_owned(),
        root: dir.root.to_owned(),
        data_dir: file_in(dir.data_root, name),
    }
}

/// A problem located in a JSON text.
type Located<T> = Result<T, (Range<usize>, String)>;

/// `plugin.json`'s `name`, with its span, when it has one.
fn manifest_name(text: &str) -> Located<Option<(String, Range<usize>)>> {
    let document = parse_json(text)?;
    let Json::Object(members) = document.value else {
        return Err((
            document.span,
            "plugin.json must be a JSON object".to_owned(),
        ));
    };
    match members
        .into_iter()
        .rev()
        .find(|(key, _)| key.get_ref() == "name")
    {
        None => Ok(None),
        Some((
            _,
            Node {
                span,
                value: Json::String(name),
            },
        )) => Ok(Some((name, span))),
        Some((_, node)) => Err((
            node.span,
            format!(
                "plugin.json's `name` must be a string, found {}",
                node.value.kind()
            ),
        )),
    }
}

/// The members of `mcp.json`'s `mcpServers`, in file order (a name given
/// twice keeps its last value, as JSON parsers do).
fn mcp_servers(text: &str) -> Located<Vec<(Spanned<String>, Node)>> {
    let document = parse_json(text)?;
    let Json::Object(members) = document.value else {
        return Err((
            document.span,
            "mcp.json must be a JSON object with an `mcpServers` object".to_owned(),
        ));
    };
    let Some((_, servers)) = members
        .into_iter()
        .rev()
        .find(|(key, _)| key.get_ref() == "mcpServers")
    else {
        return Ok(Vec::new());
    };
    let Json::Object(servers) = servers.value else {
        return Err((
            servers.span,
            format!(
                "`mcpServers` must be an object of servers, found {}",
                servers.value.kind()
            ),
        ));
    };
    let mut kept: Vec<(Spanned<String>, Node)> = Vec::with_capacity(servers.len());
    for (key, node) in servers {
        kept.retain(|(seen, _)| seen.get_ref() != key.get_ref());
        kept.push((key, node));
    }
    Ok(kept)
}

const TYPE_STDIO: &[&str] = &["stdio"];
const TYPE_HTTP: &[&str] = &[
    "http",
    "streamable-http",
    "streamableHttp",
    "streamable_http",
];

/// One `mcpServers` member as a validated server.
fn read_server(
    plugin: &ServerId,
    key: &Spanned<String>,
    node: &Node,
    origin: &PluginOrigin,
) -> Result<ServerConfig, Fault> {
    let server = ServerId::new(key.get_ref().as_str()).map_err(|why| {
        Fault::new(
            key.span(),
            format!(
                "server name {:?} cannot be part of a server identity: {why}",
                key.get_ref()
            ),
        )
    })?;
    let path = key_path("mcpServers", key.get_ref());
    let Json::Object(members) = &node.value else {
        return Err(Fault::new(
            node.span.clone(),
            format!("`{path}` must be an object, found {}", node.value.kind()),
        ));
    };
    let member = |name: &str| members.iter().rev().find(|(key, _)| key.get_ref() == name);
    let is_http = match member("type") {
        Some((
            _,
            Node {
                value: Json::String(kind),
                span,
            },
        )) => {
            if TYPE_STDIO.contains(&kind.as_str()) {
                false
            } else if TYPE_HTTP.contains(&kind.as_str()) {
                true
            } else if kind == "sse" {
                return Err(Fault::new(
                    span.clone(),
                    format!(
                        "`{path}.type` is \"sse\", the legacy HTTP+SSE transport, which rho does not speak: point `url` at the server's Streamable HTTP endpoint and set \"type\": \"http\""
                    ),
                ));
            } else {
                return Err(Fault::new(
                    span.clone(),
                    format!("`{path}.type` must be \"stdio\" or \"http\", not {kind:?}"),
                ));
            }
        }
        Some((_, node)) => {
            return Err(Fault::new(
                node.span.clone(),
                format!(
                    "`{path}.type` must be a string, found {}",
                    node.value.kind()
                ),
            ));
        }
        None => match (member("command"), member("url")) {
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some((command, _)), Some(_)) => {
                return Err(Fault::new(
                    command.span(),
                    format!(
                        "`{path}` has both `command` and `url`: say which with \"type\": \"stdio\" or \"type\": \"http\""
                    ),
                ));
            }
            (None, None) => {
                return Err(Fault::new(
                    key.span(),
                    format!(
                        "`{path}` has neither `command` (a stdio server) nor `url` (a Streamable HTTP server)"
                    ),
                ));
            }
        },
    };
    let (own, other, other_kind) = if is_http {
        (&["url", "headers"][..], STDIO_KEYS, "stdio")
    } else {
        (&["command", "args", "cwd", "env"][..], HTTP_KEYS, "http")
    };
    if let Some((misplaced, _)) = members
        .iter()
        .find(|(key, _)| other.contains(&key.get_ref().as_str()))
    {
        return Err(Fault::new(
            misplaced.span(),
            format!(
                "`{}` belongs to a \"{other_kind}\" server; `{path}` is {}",
                misplaced.get_ref(),
                if is_http {
                    "a Streamable HTTP server"
                } else {
                    "a stdio server"
                }
            ),
        ));
    }
    let enabled = match member("disabled") {
        None => true,
        Some((
            _,
            Node {
                value: Json::Bool(disabled),
                ..
            },
        )) => !disabled,
        Some((_, node)) => {
            return Err(Fault::new(
                node.span.clone(),
                format!(
                    "`{path}.disabled` must be true or false, found {}",
                    node.value.kind()
                ),
            ));
        }
    };
    let vars = [
        ("${PLUGIN_ROOT}", origin.root.as_str()),
        ("${PLUGIN_DATA}", origin.data_dir.as_str()),
    ];
    let mut table = DeTable::new();
    for (name, node) in members
        .iter()
        .filter(|(key, _)| own.contains(&key.get_ref().as_str()))
    {
        let expand = name.get_ref() != "headers";
        let value = to_toml(
            node,
            &key_path(&path, name.get_ref()),
            expand.then_some(&vars),
        )?;
        table.insert(
            Spanned::new(name.span(), name.get_ref().clone().into()),
            value,
        );
    }
    let scope = Scope {
        path,
        span: key.span(),
        table: &table,
    };
    let transport = if is_http {
        Transport::StreamableHttp(read_http(&scope)?)
    } else {
        Transport::Stdio(read_stdio(&scope)?)
    };
    Ok(ServerConfig {
        id: ServerId::for_plugin(plugin, &server),
        enabled,
        transport,
        log_level: None,
        sampling: SamplingPolicy::Deny,
        tools: ToolFilter::default(),
        startup_timeout: DEFAULT_TIMEOUT,
        tool_timeout: DEFAULT_TIMEOUT,
        max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        max_output_bytes: super::DEFAULT_MAX_OUTPUT_BYTES,
        // An `mcp.json` entry has no key for it: a plugin's stdio server is
        // restarted as the default says, like the config's own.
        restart: if is_http {
            RestartPolicy::NEVER
        } else {
            RestartPolicy::default()
        },
        plugin: Some(plugin.as_str().to_owned()),
    })
}

/// A JSON value as a TOML one with the same span, so the config model's
/// checks read it; strings get the placeholders expanded when `vars` is
/// given. JSON's numbers and nulls have no place in an `mcp.json` entry
/// rho reads, and are refused here.
fn to_toml(
    node: &Node,
    path: &str,
    vars: Option<&[(&str, &str); 2]>,
) -> Result<Spanned<DeValue<'static>>, Fault> {
    let value = match &node.value {
        Json::String(text) => DeValue::String(match vars {
            Some(vars) => vars
                .iter()
                .fold(text.clone(), |text, (name, value)| {
                    text.replace(name, value)
                })
                .into(),
            None => text.clone().into(),
        }),
        Json::Bool(b) => DeValue::Boolean(*b),
        Json::Array(items) => {
            let mut array = DeArray::new();
            for (index, item) in items.iter().enumerate() {
                array.push(to_toml(item, &format!("{path}[{index}]"), vars)?);
            }
            DeValue::Array(array)
        }
        Json::Object(members) => {
            let mut table = DeTable::new();
            for (key, item) in members {
                let value = to_toml(item, &key_path(path, key.get_ref()), vars)?;
                table.insert(
                    Spanned::new(key.span(), key.get_ref().clone().into()),
                    value,
                );
            }
            DeValue::Table(table)
        }
        Json::Number | Json::Null => {
            return Err(Fault::new(
                node.span.clone(),
                format!(
                    "`{path}` is {}: rho reads strings, arrays of strings and objects of strings here",
                    node.value.kind()
                ),
            ));
        }
    };
    Ok(Spanned::new(node.span.clone(), value))
}

// ---------------------------------------------------------------------------
// JSON with spans
// ---------------------------------------------------------------------------

/// A JSON value and where it is in its text.
#[derive(Clone, Debug, PartialEq)]
struct Node {
    span: Range<usize>,
    value: Json,
}

/// A JSON value; numbers are only told apart from the rest, which is all
/// an `mcp.json` needs.
#[derive(Clone, Debug, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number,
    String(String),
    Array(Vec<Node>),
    /// Members in file order, duplicates kept.
    Object(Vec<(Spanned<String>, Node)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

/// Parses `text` as JSON, keeping every value's and key's span.
///
/// serde_json checks the text first, so a syntax error reads exactly as
/// serde_json words it (and nesting is bounded by its recursion limit);
/// the walk that follows only records where things are, and decodes
/// strings with serde_json too.
fn parse_json(text: &str) -> Located<Node> {
    if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
        let offset = offset_of(text, error.line(), error.column());
        return Err((offset..offset, format!("not valid JSON: {error}")));
    }
    let mut walk = Walk { text, at: 0 };
    walk.value()
        .map_err(|at| (at..at, "not valid JSON".to_owned()))
}

/// The byte offset of a 1-based line and column (columns counted in
/// bytes, as serde_json counts them).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let mut offset = (line_start + column.saturating_sub(1)).min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A cursor over JSON text that serde_json already accepted; an `Err` is
/// the offset where the walk could not go on (not reached on valid JSON).
struct Walk<'t> {
    text: &'t str,
    at: usize,
}

impl Walk<'_> {
    fn skip_space(&mut self) {
        let rest = &self.text.as_bytes()[self.at..];
        self.at += rest
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            .count();
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Result<(), usize> {
        self.skip_space();
        if self.peek() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.at)
        }
    }

    fn value(&mut self) -> Result<Node, usize> {
        self.skip_space();
        let start = self.at;
        let value = match self.peek().ok_or(start)? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                self.skip_space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                } else {
                    loop {
                        self.skip_space();
                        let key_start = self.at;
                        let key = self.string()?;
                        let key = Spanned::new(key_start..self.at, key);
                        self.eat(b':')?;
                        let item = self.value()?;
                        members.push((key, item));
                        self.skip_space();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.at),
                        }
                    }
                }
                Json::Object(members)
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                self.skip_space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                } else {
                    loop {
                        items.push(self.value()?);
                        self.skip_space();
                        match self.peek() {
                            Some(b',') => self.at += 1,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            _ => return Err(self.at),
                        }
                    }
                }
                Json::Array(items)
            }
            b'"' => Json::String(self.string()?),
            b't' => self.word("true", Json::Bool(true))?,
            b'f' => self.word("false", Json::Bool(false))?,
            b'n' => self.word("null", Json::Null)?,
            _ => {
                let rest = &self.text.as_bytes()[self.at..];
                let len = rest
                    .iter()
                    .take_while(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .count();
                if len == 0 {
                    return Err(self.at);
                }
                self.at += len;
                Json::Number
            }
        };
        Ok(Node {
            span: start..self.at,
            value,
        })
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, usize> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.at)
        }
    }

    /// A string token at the cursor, decoded by serde_json.
    fn string(&mut self) -> Result<String, usize> {
        let start = self.at;
        let bytes = self.text.as_bytes();
        if bytes.get(start) != Some(&b'"') {
            return Err(start);
        }
        let mut end = start + 1;
        loop {
            match bytes.get(end) {
                Some(b'"') => break,
                Some(b'\\') => end += 2,
                Some(_) => end += 1,
                None => return Err(end),
            }
        }
        self.at = end + 1;
        serde_json::from_str(&self.text[start..self.at]).map_err(|_| start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::StdioConfig;

    fn dir<'a>(manifest: Option<&'a str>, mcp_json: &'a str) -> PluginDir<'a> {
        PluginDir {
            root: "/plugins/files",
            dir_name: "files",
            manifest,
            mcp_json,
            data_root: "/data",
        }
    }

    fn stdio(entry: &ServerEntry) -> &StdioConfig {
        match &entry.config.as_ref().expect("a valid entry").transport {
            Transport::Stdio(stdio) => stdio,
            other => panic!("not stdio: {other:?}"),
        }
    }

    fn error(entry: &ServerEntry) -> String {
        entry
            .config
            .as_ref()
            .expect_err("an invalid entry")
            .to_string()
    }

    #[test]
    fn a_stdio_server_gets_the_plugin_identity_and_expanded_placeholders() {
        let plugin = read_plugin(&dir(
            None,
            r#"{"mcpServers": {"fs": {"command": "${PLUGIN_ROOT}/bin/server",
                "args": ["--data", "${PLUGIN_DATA}", "${HOME}"],
                "env": {"CACHE": "${PLUGIN_DATA}/cache"}, "cwd": "${PLUGIN_ROOT}"}}}"#,
        ));
        assert_eq!(plugin.name, "files");
        let [entry] = plugin.entries.as_slice() else {
            panic!("{:?}", plugin.entries)
        };
        assert_eq!(entry.id, "files/fs");
        let config = entry.config.as_ref().expect("valid");
        assert_eq!(config.id.as_str(), "files/fs");
        assert_eq!(config.plugin.as_deref(), Some("files"));
        assert!(!config.sampling_allowed());
        let stdio = stdio(entry);
        assert_eq!(stdio.command, "/plugins/files/bin/server");
        assert_eq!(stdio.args, ["--data", "/data/files", "${HOME}"]);
        assert_eq!(stdio.env["CACHE"], "/data/files/cache");
        assert_eq!(stdio.cwd.as_deref(), Some("/plugins/files"));
        let origin = entry.plugin.as_ref().expect("origin");
        assert_eq!(origin.data_dir, "/data/files");
        assert_eq!(origin.root, "/plugins/files");
    }

    #[test]
    fn plugin_json_names_the_plugin() {
        let plugin = read_plugin(&dir(
            Some(r#"{"name": "toolbox", "version": "1.0.0"}"#),
            r#"{"mcpServers": {"a": {"command": "a"}}}"#,
        ));
        assert_eq!(plugin.name, "toolbox");
        assert_eq!(plugin.entries[0].id, "toolbox/a");
        assert_eq!(
            plugin.entries[0]
                .plugin
                .as_ref()
                .map(|o| o.data_dir.as_str()),
            Some("/data/toolbox")
        );
    }

    #[test]
    fn http_entries_by_type_or_by_url() {
        let plugin = read_plugin(&dir(
            None,
            r#"{"mcpServers": {
                "typed": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"X-Tenant": "${PLUGIN_ROOT}"}},
                "bare": {"url": "http://127.0.0.1:9/mcp"},
                "off": {"command": "x", "disabled": true}}}"#,
        ));
        let kinds: Vec<_> = plugin
            .entries
            .iter()
            .map(|e| {
                let config = e.config.as_ref().expect("valid");
                (e.id.as_str(), config.transport.kind(), config.enabled)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("files/typed", "streamable_http", true),
                ("files/bare", "streamable_http", true),
                ("files/off", "stdio", false),
            ]
        );
        let Transport::StreamableHttp(http) = &plugin.entries[0].config.as_ref().unwrap().transport
        else {
            panic!("http")
        };
        // Headers are not expanded: the spec names command, args, cwd, env and url.
        assert_eq!(http.headers["X-Tenant"], "${PLUGIN_ROOT}");
    }

    #[test]
    fn the_url_gets_the_placeholders_too() {
        let plugin = read_plugin(&PluginDir {
            root: "localhost:8123",
            ..dir(
                None,
                r#"{"mcpServers": {"web": {"url": "http://${PLUGIN_ROOT}/mcp"}}}"#,
            )
        });
        let Transport::StreamableHttp(http) =
            &plugin.entries[0].config.as_ref().expect("valid").transport
        else {
            panic!("http")
        };
        assert_eq!(http.url.as_str(), "http://localhost:8123/mcp");
    }

    #[test]
    fn an_invalid_server_disables_only_itself_with_its_position() {
        let text = "{\"mcpServers\": {\n  \"good\": {\"command\": \"ok\"},\n  \"bad\": {\"command\": \"\"},\n  \"num\": {\"command\": \"x\", \"args\": [\"a\", 1]},\n  \"sse\": {\"type\": \"sse\", \"url\": \"https://x.example/sse\"},\n  \"plain\": {\"url\": \"http://example.com/mcp\"},\n  \"mixed\": {\"type\": \"stdio\", \"command\": \"x\", \"url\": \"https://x.example\"},\n  \"bad name\": {\"command\": \"x\"}\n}}";
        let plugin = read_plugin(&dir(None, text));
        let good = plugin.entries[0].config.as_ref().expect("`good` is valid");
        assert_eq!(
            (good.id.as_str(), good.transport.kind(), good.enabled),
            ("files/good", "stdio", true)
        );
        assert_eq!(plugin.entries.len(), 7, "each entry once, in order");
        let errors: Vec<String> = plugin.entries[1..].iter().map(error).collect();
        assert_eq!(
            errors[0],
            "/plugins/files/mcp.json:3:22: server `files/bad`: `mcpServers.bad.command`: must not be empty"
        );
        assert_eq!(
            errors[1],
            "/plugins/files/mcp.json:4:41: server `files/num`: `mcpServers.num.args[1]` is a number: rho reads strings, arrays of strings and objects of strings here"
        );
        assert!(
            errors[2].starts_with(
                "/plugins/files/mcp.json:5:19: server `files/sse`: `mcpServers.sse.type` is \"sse\""
            ),
            "{}",
            errors[2]
        );
        assert!(
            errors[3].contains(":6:20: server `files/plain`: ") && errors[3].contains("https"),
            "{}",
            errors[3]
        );
        assert!(
            errors[4].contains(":7:46: server `files/mixed`: `url` belongs to a \"http\" server"),
            "{}",
            errors[4]
        );
        assert!(
            errors[5].contains(":8:3: server `files/bad name`: server name \"bad name\""),
            "{}",
            errors[5]
        );
    }

    #[test]
    fn an_unreadable_mcp_json_is_one_entry_for_the_whole_plugin() {
        let plugin = read_plugin(&dir(None, "{\"mcpServers\": {\"a\": }"));
        let [entry] = plugin.entries.as_slice() else {
            panic!("{:?}", plugin.entries)
        };
        assert_eq!(entry.id, "files/*");
        let message = error(entry);
        assert!(
            message.starts_with("/plugins/files/mcp.json:1:22: server `files/*`: not valid JSON: "),
            "{message}"
        );
        let wrong_shape = read_plugin(&dir(None, r#"{"mcpServers": ["a"]}"#));
        assert!(
            error(&wrong_shape.entries[0])
                .contains("`mcpServers` must be an object of servers, found an array")
        );
    }

    #[test]
    fn a_bad_plugin_name_is_one_entry_for_the_whole_plugin() {
        let plugin = read_plugin(&dir(
            Some(r#"{"name": "my plugin"}"#),
            r#"{"mcpServers": {"a": {"command": "a"}}}"#,
        ));
        assert_eq!(plugin.entries.len(), 1);
        let message = error(&plugin.entries[0]);
        assert!(
            message.starts_with(
                "/plugins/files/plugin.json:1:10: server `files/*`: plugin name \"my plugin\""
            ),
            "{message}"
        );
        let not_a_string = read_plugin(&dir(Some(r#"{"name": 3}"#), "{}"));
        assert!(
            error(&not_a_string.entries[0]).contains("`name` must be a string, found a number")
        );
        let odd_dir = read_plugin(&PluginDir {
            dir_name: "odd dir",
            ..dir(None, "{}")
        });
        assert!(error(&odd_dir.entries[0]).contains("give the plugin a `name` in plugin.json"));
    }

    #[test]
    fn no_servers_contribute_nothing() {
        assert!(read_plugin(&dir(None, "{}")).entries.is_empty());
        assert!(
            read_plugin(&dir(None, r#"{"mcpServers": {}}"#))
                .entries
                .is_empty()
        );
    }

    #[test]
    fn a_name_given_twice_keeps_its_last_value() {
        let plugin = read_plugin(&dir(
            None,
            r#"{"mcpServers": {"a": {"command": "first"}, "a": {"command": "second"}}}"#,
        ));
        assert_eq!(plugin.entries.len(), 1);
        assert_eq!(stdio(&plugin.entries[0]).command, "second");
    }

    #[test]
    fn json_spans_point_at_keys_and_values_with_escapes() {
        let text = r#" {"k\"ey": ["\u00e9", true, null, -1.5e3], "o": {}} "#;
        let node = parse_json(text).expect("valid");
        let Json::Object(members) = node.value else {
            panic!()
        };
        assert_eq!(members[0].0.get_ref(), "k\"ey");
        assert_eq!(&text[members[0].0.span()], r#""k\"ey""#);
        let Json::Array(items) = &members[0].1.value else {
            panic!()
        };
        assert_eq!(items[0].value, Json::String("é".into()));
        assert_eq!(&text[items[3].span.clone()], "-1.5e3");
        assert_eq!(items[3].value, Json::Number);
        assert_eq!(members[1].1.value, Json::Object(Vec::new()));
    }
}
