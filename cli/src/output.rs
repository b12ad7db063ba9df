//! What `rho mcp` prints: a readable table for people and a stable JSON
//! document for tools. Neither ever holds a secret value: environment
//! variables and headers appear by name only.
//!
//! Every piece of server text in the table (names, versions, titles,
//! instructions, reasons) goes through [`terminal::sanitize`] or
//! [`terminal::sanitize_line`]; the JSON document is exact (JSON escapes
//! control characters itself).
//!
//! # JSON schema (`"schema": 1`)
//!
//! Every document has `schema` and `document` (the command that printed
//! it). `call`, `prompt`, `read` and `complete` carry the server's result
//! object exactly as sent in `result`, beside rho's rendering of it (the
//! docs/commands.md's "JSON output" section has the table, one row per command).
//!
//! `list --json` prints `{"schema": 1, "document": "list", "config": PATH|null, "servers": [SERVER...]}`;
//! `show --json` prints one SERVER with `"schema": 1, "document": "show"` added. A SERVER is:
//!
//! | key | when | value |
//! |---|---|---|
//! | `id` | always | the server identity |
//! | `status` | always | `not_started`, `disabled`, `invalid`, `ready`, `restarting` or `failed` |
//! | `error` | invalid, restarting, failed | the reason, for a person (restarting: why its last process ended) |
//! | `failure` | failed | what kind of failure: `ended` (its session ended after it was ready, not restarted), `restarts_exhausted` (and every restart in a row failed), or a startup failure's kind |
//! | `restart_attempt`, `restart_attempts` | restarting | which restart in a row this is, and how many its `restart.attempts` allows |
//! | `restart` | stdio | `{"attempts": N, "backoff_ms": MS}`, as configured (or the default) |
//! | `transport` | valid entries | `stdio` or `streamable_http` |
//! | `enabled` | valid entries | bool |
//! | `command`, `args`, `cwd` | stdio | as configured |
//! | `url` | streamable_http | as configured |
//! | `env_names`, `header_names` | always on valid entries | names only, never values |
//! | `tool_filter` | valid entries | `{"allow": [..]?, "deny": [..]?}` |
//! | `startup_timeout_secs`, `tool_timeout_secs`, `max_message_bytes`, `max_output_bytes` | valid entries | numbers |
//! | `log_level`, `sampling` | valid entries | as configured (`log_level` null when unset) |
//! | `auth` | remote servers with an `oauth` table or an `Authorization` header | `{"kind": "header"}`, or `{"kind": "oauth", "state": "logged_in" \| "needs_login" \| "store_error" \| "client_credentials" \| "jwt_bearer" \| "identity_assertion", "expires_in_secs", "refreshable", "dpop_bound", "error"}`: never a token |
//! | `protocol_version`, `server_info`, `elapsed_ms`, `pid`, `instructions` | ready | from the handshake (or, 2026-07-28, from `server/discover`); after a restart, `pid` is the new process's |
//! | `restarts` | ready | how many times its process was started again after it died mid-session (0 when never) |
//! | `era` | ready | the protocol era the server is driven in: `"2026-07-28"` (stateless, after `server/discover`) or the 2025 version its `initialize` negotiated |
//! | `last_ping_error` | ready | null, or why the latest keep-alive ping of a remote server failed |
//! | `tools` | ready | exported tools: `name` (exported, at most 64 characters), `full_name` (only when `name` is the short form of a longer name), `tool` (server's name), `title`, `hints`; `show` adds `description`, `input_schema`, `output_schema`, `_meta` (as sent, when sent), `resource_uri` (its MCP App view: `_meta.ui.resourceUri`, else the deprecated `_meta["ui/resourceUri"]`) and `visibility` (`_meta.ui.visibility` as sent), the last two when the tool has them |
//! | `app_only_tools` | ready | tools for the server's MCP App only, not exported (`_meta.ui.visibility` without `"model"`, or unreadable): `tool`, `title`, `visibility` (as sent), `reason`, `resource_uri` (when it has one); `show` adds `description`, `input_schema`, `output_schema` and `_meta` |
//! | `filtered_tools` | ready | server tool names kept out by allow/deny |
//! | `added_tools`, `withdrawn_tools` | ready | tools the server added (need a restart) or withdrew since startup |
//! | `prompts` | ready | `name`, `title`, `description`, `arguments` (`name`, `title`, `description`, `required`); empty when the server offers none |
//! | `resources` | ready | `uri`, `name`, `title`, `description`, `mime_type`, `size` |
//! | `resource_templates` | ready | `uri_template`, `name`, `title`, `description`, `mime_type` |
//! | `catalog_errors` | ready | `"<method>: <reason>"` for each listing that failed (the server still loads) |
//!
//! `search --json` prints `{"schema": 1, "document": "search", "query": Q, "indexed": N, "hits": [HIT...]}`,
//! best first; a HIT is `name` (exported), `server`, `tool` (server's name), `title` (when given),
//! `summary` (the description's first sentence, at most 160 characters), `schema_bytes` (the input
//! schema's size as JSON), `parameters` (names) and `score` (comparable within one search).

use std::fmt::Write as _;

use rho_proto_core::config::{PluginOrigin, Transport};
use rho_proto_core::features::apps::{ToolUi, Visibility};
use rho_proto_core::runtime::ServerView;
use rho_proto_core::runtime::index::{Hit, ToolIndex};
use rho_proto_core::runtime::registry::ToolRegistry;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::text::terminal::{self, sanitize, sanitize_line};
use rho_proto_core::wire::protocol::{Implementation, Tool};
use serde_json::{Map, Value, json};

use rho_host::{AuthStatus, LoadedConfig};

/// Each server's auth status, by identity (servers that use none are absent).
pub(crate) type AuthMap = std::collections::BTreeMap<String, AuthStatus>;

/// The JSON schema version printed with every document.
const SCHEMA: u64 = 1;

/// A JSON document as pretty text with a final newline.
///
/// JSON escapes C0 controls itself but writes C1 controls (U+0080..U+009F,
/// such as the one-character CSI U+009B) and bidirectional overrides raw;
/// those are written as `\uXXXX` escapes instead, so the document stays
/// exact (it parses to the same values) and is still safe on a terminal.
pub(crate) fn json_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(
        &mut bytes,
        TerminalSafeJson(serde_json::ser::PrettyFormatter::new()),
    );
    // Every document here serializes into memory: its keys are strings.
    let _ = value.serialize(&mut serializer);
    let mut text = String::from_utf8(bytes).unwrap_or_default();
    text.push('\n');
    text
}

/// Pretty JSON whose strings escape what a terminal would obey.
struct TerminalSafeJson<'a>(serde_json::ser::PrettyFormatter<'a>);

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            fn $name<W: ?Sized + std::io::Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> std::io::Result<()> {
                self.0.$name(writer $(, $arg)*)
            }
        )*
    };
}

impl serde_json::ser::Formatter for TerminalSafeJson<'_> {
    delegate! {
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        begin_object_value();
        end_object_value();
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut rest = fragment;
        while let Some(at) = rest.find(terminal::is_control) {
            writer.write_all(&rest.as_bytes()[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            write!(writer, "\\u{:04x}", u32::from(c))?;
            rest = &rest[at + c.len_utf8()..];
        }
        writer.write_all(rest.as_bytes())
    }
}

/// The `list --json` document.
///
/// Written server by server: each server's object is built, serialized and
/// dropped before the next, so the output never holds every server's tree
/// at once (with ten servers connected, that tree weighed more than the
/// catalogs it copies).
pub(crate) fn list_json<'a>(
    loaded: &'a LoadedConfig,
    servers: &'a [ServerView],
    tools: &'a ToolRegistry,
    auth: &'a AuthMap,
) -> impl serde::Serialize + 'a {
    struct Doc<'a> {
        loaded: &'a LoadedConfig,
        servers: &'a [ServerView],
        tools: &'a ToolRegistry,
        auth: &'a AuthMap,
    }
    struct One<'a>(&'a Doc<'a>, &'a ServerView);
    struct Servers<'a>(&'a Doc<'a>);
    impl serde::Serialize for One<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let Self(doc, server) = self;
            let plugin = plugin_of(doc.loaded, &server.id);
            server_json(server, doc.tools, false, doc.auth, plugin, doc.loaded.adhoc).serialize(s)
        }
    }
    impl serde::Serialize for Servers<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(self.0.servers.iter().map(|server| One(self.0, server)))
        }
    }
    impl serde::Serialize for Doc<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::SerializeMap as _;
            let mut map = s.serialize_map(Some(4))?;
            map.serialize_entry("schema", &SCHEMA)?;
            map.serialize_entry("document", "list")?;
            let config = self.loaded.path.as_ref().map(|p| p.display().to_string());
            map.serialize_entry("config", &config)?;
            map.serialize_entry("servers", &Servers(self))?;
            map.end()
        }
    }
    Doc {
        loaded,
        servers,
        tools,
        auth,
    }
}

/// The plugin that contributed server `id`, if one did.
pub(crate) fn plugin_of<'l>(loaded: &'l LoadedConfig, id: &str) -> Option<&'l PluginOrigin> {
    loaded
        .config
        .get(id)
        .and_then(|entry| entry.plugin.as_ref())
}

/// Where a server's entry comes from, for the `list` table and `show`:
/// a plugin, the ad-hoc flag that made it (`adhoc`), or the config file.
fn origin_text(plugin: Option<&PluginOrigin>, adhoc: Option<&str>) -> String {
    match (plugin, adhoc) {
        (Some(plugin), _) => format!("plugin {}", sanitize_line(&plugin.name)),
        (None, Some(flag)) => format!("ad hoc ({flag}; no config file is read)"),
        (None, None) => "config".into(),
    }
}

/// One server's JSON object; `detailed` adds tool descriptions and schemas.
/// `origin` is `"config"`, `"adhoc"` (`--stdio`/`--url`) or `"plugin"`, and a plugin's server has
/// `plugin: {name, root, data_dir}`.
pub(crate) fn server_json(
    server: &ServerView,
    tools: &ToolRegistry,
    detailed: bool,
    auth: &AuthMap,
    plugin: Option<&PluginOrigin>,
    adhoc: Option<&str>,
) -> Value {
    let mut obj = Map::new();
    if detailed {
        obj.insert("schema".into(), json!(SCHEMA));
        obj.insert("document".into(), json!("show"));
    }
    obj.insert("id".into(), json!(server.id));
    obj.insert("status".into(), json!(server.status.label()));
    match plugin {
        Some(plugin) => {
            obj.insert("origin".into(), json!("plugin"));
            obj.insert(
                "plugin".into(),
                json!({"name": plugin.name, "root": plugin.root, "data_dir": plugin.data_dir}),
            );
        }
        None => {
            obj.insert(
                "origin".into(),
                json!(if adhoc.is_some() { "adhoc" } else { "config" }),
            );
        }
    }
    if let Some(config) = &server.config {
        obj.insert("transport".into(), json!(config.transport.kind()));
        obj.insert("enabled".into(), json!(config.enabled));
        match &config.transport {
            Transport::Stdio(stdio) => {
                obj.insert("command".into(), json!(stdio.command));
                obj.insert("args".into(), json!(stdio.args));
                obj.insert("cwd".into(), json!(stdio.cwd));
                obj.insert(
                    "restart".into(),
                    json!({
                        "attempts": config.restart.attempts,
                        "backoff_ms": config.restart.backoff.as_millis(),
                    }),
                );
            }
            Transport::StreamableHttp(http) => {
                obj.insert("url".into(), json!(http.url.as_str()));
            }
        }
        obj.insert("env_names".into(), json!(config.env_names()));
        obj.insert("header_names".into(), json!(config.header_names()));
        obj.insert("tool_filter".into(), json!(config.tools));
        obj.insert(
            "startup_timeout_secs".into(),
            json!(config.startup_timeout.as_secs_f64()),
        );
        obj.insert(
            "tool_timeout_secs".into(),
            json!(config.tool_timeout.as_secs_f64()),
        );
        obj.insert("max_message_bytes".into(), json!(config.max_message_bytes));
        obj.insert("max_output_bytes".into(), json!(config.max_output_bytes));
        obj.insert("log_level".into(), json!(config.log_level));
        obj.insert("sampling".into(), json!(config.sampling));
        if let Some(status) = auth.get(&server.id) {
            obj.insert("auth".into(), status.json());
        }
    }
    match &server.status {
        ServerStatus::Invalid { error } => {
            obj.insert("error".into(), json!(error));
        }
        ServerStatus::Failed { error, kind } => {
            obj.insert("error".into(), json!(error));
            obj.insert("failure".into(), json!(kind));
        }
        ServerStatus::Restarting {
            error,
            attempt,
            attempts,
        } => {
            obj.insert("error".into(), json!(error));
            obj.insert("restart_attempt".into(), json!(attempt));
            obj.insert("restart_attempts".into(), json!(attempts));
        }
        ServerStatus::Ready(report) => {
            obj.insert("protocol_version".into(), json!(report.protocol_version));
            obj.insert("era".into(), json!(report.era()));
            obj.insert("server_info".into(), json!(report.server_info));
            obj.insert("elapsed_ms".into(), json!(report.elapsed_ms));
            obj.insert("pid".into(), json!(report.pid));
            obj.insert("restarts".into(), json!(report.restarts));
            obj.insert("instructions".into(), json!(report.instructions));
            obj.insert("last_ping_error".into(), json!(report.last_ping_error));
            let tools: Vec<Value> = tools
                .server_tools(&server.id)
                .map(|t| {
                    let mut tool = json!({
                        "name": t.name,
                        "tool": t.tool,
                        "title": t.title,
                        "hints": t.hints,
                    });
                    if let Some(full) = &t.full_name {
                        tool["full_name"] = json!(full);
                    }
                    if detailed {
                        tool["description"] = json!(t.description);
                        tool["input_schema"] = (*t.input_schema).clone();
                        if let Some(schema) = &t.output_schema {
                            tool["output_schema"] = (**schema).clone();
                        }
                        app_json(&mut tool, t.meta.as_deref());
                    }
                    tool
                })
                .collect();
            obj.insert("tools".into(), Value::Array(tools));
            let app_only: Vec<Value> = app_only_tools(server, &report.app_only_tools)
                .map(|t| {
                    let visibility = Visibility::of(t.meta.as_deref());
                    let mut tool = json!({
                        "tool": t.name,
                        "title": t.title,
                        "visibility": sent_visibility(t.meta.as_deref()),
                        "reason": visibility.held_back_reason(),
                    });
                    if let Some(uri) = ToolUi::of(t.meta.as_deref()).view() {
                        tool["resource_uri"] = json!(uri);
                    }
                    if detailed {
                        tool["description"] = json!(t.description);
                        tool["input_schema"] = (*t.input_schema).clone();
                        if let Some(schema) = &t.output_schema {
                            tool["output_schema"] = (**schema).clone();
                        }
                        if let Some(meta) = &t.meta {
                            tool["_meta"] = (**meta).clone();
                        }
                    }
                    tool
                })
                .collect();
            obj.insert("app_only_tools".into(), Value::Array(app_only));
            obj.insert("filtered_tools".into(), json!(report.filtered_tools));
            obj.insert("added_tools".into(), json!(report.added_tools));
            obj.insert("withdrawn_tools".into(), json!(report.withdrawn_tools));
            let catalog = &report.catalog;
            obj.insert("prompts".into(), json!(catalog.prompts.items));
            obj.insert("resources".into(), json!(catalog.resources.items));
            obj.insert("resource_templates".into(), json!(catalog.templates.items));
            obj.insert("catalog_errors".into(), json!(catalog.errors()));
        }
        ServerStatus::NotStarted | ServerStatus::Disabled => {}
    }
    Value::Object(obj)
}

/// The tools of `server` named in `names` (its tools for the MCP App
/// only), as it listed them, in that order.
fn app_only_tools<'a>(
    server: &'a ServerView,
    names: &'a [String],
) -> impl Iterator<Item = &'a Tool> + 'a {
    names
        .iter()
        .filter_map(|name| server.tools.iter().find(|t| &t.name == name))
}

/// `_meta.ui.visibility` as the server sent it (null when it sent none).
fn sent_visibility(meta: Option<&Value>) -> Value {
    meta.and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get("visibility"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Adds an exported tool's `_meta` as sent and what MCP Apps reads in it
/// (`resource_uri`, `visibility`) to its `show --json` object.
fn app_json(tool: &mut Value, meta: Option<&Value>) {
    let Some(meta) = meta else { return };
    tool["_meta"] = meta.clone();
    if let Some(uri) = ToolUi::of(Some(meta)).view() {
        tool["resource_uri"] = json!(uri);
    }
    let visibility = sent_visibility(Some(meta));
    if !visibility.is_null() {
        tool["visibility"] = visibility;
    }
}

/// What MCP Apps says about a tool, one safe line each, for a person:
/// the view that renders its results and who may call it. Nothing for a
/// tool that says nothing.
pub(crate) fn app_lines(meta: Option<&Value>) -> Vec<String> {
    let ui = ToolUi::of(meta);
    let mut lines = view_lines(&ui);
    if let Some(visibility) = &ui.visibility {
        lines.push(format!(
            "visibility: {}",
            sanitize_line(&visibility.to_string())
        ));
    }
    lines
}

/// The view that renders a tool's results (`_meta.ui.resourceUri`, and
/// the deprecated flat `_meta["ui/resourceUri"]` when it is the only one
/// or says otherwise), one safe line each.
fn view_lines(ui: &ToolUi) -> Vec<String> {
    match (&ui.resource_uri, &ui.deprecated_resource_uri) {
        (Some(uri), Some(old)) if old != uri => vec![
            format!("app view: {}", sanitize_line(uri)),
            format!(
                "app view (deprecated `ui/resourceUri`): {}",
                sanitize_line(old)
            ),
        ],
        (Some(uri), _) => vec![format!("app view: {}", sanitize_line(uri))],
        (None, Some(old)) => vec![format!(
            "app view: {} (deprecated `ui/resourceUri`)",
            sanitize_line(old)
        )],
        (None, None) => Vec::new(),
    }
}

/// The shell's `/tools` rows of a ready server's tools for its MCP App
/// only: `<server>:<tool>  (app-only, not exported)  <title>`, then the
/// reason and the view, indented as a tool's parameters are.
pub(crate) fn app_only_rows(server: &ServerView) -> String {
    let ServerStatus::Ready(report) = &server.status else {
        return String::new();
    };
    let mut text = String::new();
    for tool in app_only_tools(server, &report.app_only_tools) {
        let _ = writeln!(
            text,
            "{}:{}  (app-only, not exported)  {}",
            sanitize_line(&server.id),
            sanitize_line(&tool.name),
            sanitize_line(tool.title.as_deref().unwrap_or(""))
        );
        let reason = Visibility::of(tool.meta.as_deref())
            .held_back_reason()
            .unwrap_or_default();
        let _ = writeln!(text, "    {}", sanitize_line(&reason));
        for line in view_lines(&ToolUi::of(tool.meta.as_deref())) {
            let _ = writeln!(text, "    {line}");
        }
    }
    text
}

/// A server's name and version as it reported them, one blank between
/// them; an empty (or blank) one is left out, never a doubled blank.
fn name_version(info: &Implementation) -> String {
    [&info.name, &info.version]
        .into_iter()
        .filter(|part| !part.trim().is_empty())
        .map(|part| sanitize_line(part))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `list` table, then the exported tools.
pub(crate) fn list_text(
    loaded: &LoadedConfig,
    servers: &[ServerView],
    tools: &ToolRegistry,
    auth: &AuthMap,
) -> String {
    let mut out = servers_table(loaded, servers, tools, auth);
    if !servers.is_empty() {
        tools_section(&mut out, tools);
    }
    out
}

/// What each ready server offers besides tools, for the shell's `/mcp`:
/// per server, its prompts and resources as `show --connect` lists them
/// (nothing for a server that offers neither).
pub(crate) fn catalogs_text(servers: &[ServerView]) -> String {
    let mut out = String::new();
    for server in servers {
        let ServerStatus::Ready(report) = &server.status else {
            continue;
        };
        let mut lists = String::new();
        catalog_text(&mut lists, &report.catalog);
        if !lists.is_empty() {
            let _ = writeln!(out, "\n{}:", sanitize_line(&server.id));
            out.push_str(&lists);
        }
    }
    out
}

/// The table of servers alone (one row each: transport, status, detail).
pub(crate) fn servers_table(
    loaded: &LoadedConfig,
    servers: &[ServerView],
    tools: &ToolRegistry,
    auth: &AuthMap,
) -> String {
    let mut out = String::new();
    if servers.is_empty() {
        let _ = writeln!(out, "No MCP servers configured in {}.", loaded.describe());
        return out;
    }
    // The origin column appears only when a plugin contributes a server.
    let plugins = servers.iter().any(|s| plugin_of(loaded, &s.id).is_some());
    let rows: Vec<[String; 4]> = servers
        .iter()
        .map(|s| {
            let id = sanitize_line(&s.id).into_owned();
            [
                if plugins {
                    format!("{id}  ({})", origin_text(plugin_of(loaded, &s.id), None))
                } else {
                    id
                },
                s.config
                    .as_ref()
                    .map_or("-".into(), |c| c.transport.kind().to_owned()),
                s.status.label().replace('_', " "),
                match (auth.get(&s.id), &s.status) {
                    (Some(a), ServerStatus::NotStarted | ServerStatus::Ready(_)) => {
                        format!("{} · {}", summary(s, tools), a.describe(&s.id))
                    }
                    _ => summary(s, tools),
                },
            ]
        })
        .collect();
    let header = ["SERVER", "TRANSPORT", "STATUS", "DETAIL"];
    let widths: Vec<usize> = (0..3)
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |out: &mut String, cells: [&str; 4]| {
        let mut detail_lines = cells[3].lines();
        let first = detail_lines.next().unwrap_or("");
        let text = format!(
            "{:w0$}  {:w1$}  {:w2$}  {first}",
            cells[0],
            cells[1],
            cells[2],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        let _ = writeln!(out, "{}", text.trim_end());
        let indent = widths[0] + widths[1] + widths[2] + 6;
        for more in detail_lines {
            let _ = writeln!(out, "{:indent$}{more}", "");
        }
    };
    line(&mut out, header);
    for row in &rows {
        line(&mut out, [&row[0], &row[1], &row[2], &row[3]]);
    }
    out
}

/// `Tools (n):` and one row per exported tool, the server's own name
/// beside an encoded one.
fn tools_section(out: &mut String, tools: &ToolRegistry) {
    let tools = tools.tools();
    if !tools.is_empty() {
        let _ = writeln!(out, "\nTools ({}):", tools.len());
        let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for tool in tools {
            // Encoded names are unreadable; show the server's own name beside them.
            let name = sanitize_line(&tool.name);
            if tool.name == format!("mcp__{}__{}", tool.server, tool.tool) {
                let _ = writeln!(out, "  {name}");
            } else {
                let _ = writeln!(
                    out,
                    "  {name:width$}  ({} · {})",
                    sanitize_line(&tool.server),
                    sanitize_line(&tool.tool)
                );
            }
        }
    }
}

/// How often a ready server's process was started again, in words.
pub(crate) fn restarted(restarts: u32) -> String {
    match restarts {
        1 => "restarted once after its process died".into(),
        n => format!("restarted {n} times after its process died"),
    }
}

/// ` stateless` after the version of a server driven in the 2026-07-28
/// era, else nothing (the handshake is the default a reader expects).
fn era_note(report: &rho_proto_core::runtime::status::ReadyReport) -> &'static str {
    if report.is_stateless() {
        " stateless"
    } else {
        ""
    }
}

/// The one-line (or, for failures with stderr, multi-line) detail column.
fn summary(server: &ServerView, tools: &ToolRegistry) -> String {
    match &server.status {
        ServerStatus::Ready(report) => {
            let count = tools.server_tools(&server.id).count();
            let mut text = format!(
                "{count} tool{} · {} · protocol {}{} · {} ms",
                if count == 1 { "" } else { "s" },
                name_version(&report.server_info),
                sanitize_line(&report.protocol_version),
                era_note(report),
                report.elapsed_ms
            );
            if !report.app_only_tools.is_empty() {
                let _ = write!(
                    text,
                    " · {} for its MCP App only, not exported",
                    report.app_only_tools.len()
                );
            }
            if !report.filtered_tools.is_empty() {
                let _ = write!(text, " · {} filtered out", report.filtered_tools.len());
            }
            if report.restarts > 0 {
                let _ = write!(text, " · {}", restarted(report.restarts));
            }
            text
        }
        ServerStatus::Restarting {
            error,
            attempt,
            attempts,
        } => format!(
            "restart {attempt} of {attempts} under way; its process ended: {}",
            sanitize(error)
        ),
        ServerStatus::Invalid { error } | ServerStatus::Failed { error, .. } => {
            sanitize(error).into_owned()
        }
        ServerStatus::Disabled => "enabled = false".into(),
        ServerStatus::NotStarted => match &server.config {
            Some(config) => match &config.transport {
                Transport::Stdio(stdio) => {
                    // A plugin's command is not the user's own text.
                    let mut cmd = sanitize_line(&stdio.command).into_owned();
                    for arg in &stdio.args {
                        cmd.push(' ');
                        cmd.push_str(&sanitize_line(arg));
                    }
                    cmd
                }
                Transport::StreamableHttp(http) => http.url.to_string(),
            },
            None => String::new(),
        },
    }
}

/// The `show` text.
pub(crate) fn show_text(
    server: &ServerView,
    tools: &ToolRegistry,
    auth: &AuthMap,
    plugin: Option<&PluginOrigin>,
    adhoc: Option<&str>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", sanitize_line(&server.id));
    let _ = writeln!(
        out,
        "  status:     {}",
        server.status.label().replace('_', " ")
    );
    let _ = writeln!(out, "  origin:     {}", origin_text(plugin, adhoc));
    if let Some(plugin) = plugin {
        let _ = writeln!(out, "  plugin dir: {}", sanitize_line(&plugin.root));
    }
    if let Some(config) = &server.config {
        let _ = writeln!(out, "  transport:  {}", config.transport.kind());
        // A plugin's entry is not the user's own text: sanitized as server text is.
        match &config.transport {
            Transport::Stdio(stdio) => {
                let _ = writeln!(out, "  command:    {}", sanitize_line(&stdio.command));
                if !stdio.args.is_empty() {
                    let _ = writeln!(
                        out,
                        "  args:       {}",
                        sanitize_line(&stdio.args.join(" "))
                    );
                }
                if let Some(cwd) = &stdio.cwd {
                    let _ = writeln!(out, "  cwd:        {}", sanitize_line(cwd));
                }
            }
            Transport::StreamableHttp(http) => {
                let _ = writeln!(out, "  url:        {}", sanitize_line(http.url.as_str()));
            }
        }
        let env = config.env_names();
        if !env.is_empty() {
            let _ = writeln!(
                out,
                "  env:        {} (values hidden)",
                sanitize_line(&env.join(", "))
            );
        }
        let headers = config.header_names();
        if !headers.is_empty() {
            let _ = writeln!(
                out,
                "  headers:    {} (values hidden)",
                sanitize_line(&headers.join(", "))
            );
        }
        if let Some(status) = auth.get(&server.id) {
            let _ = writeln!(out, "  auth:       {}", status.describe(&server.id));
        }
        if let Some(allow) = &config.tools.allow {
            let _ = writeln!(out, "  allow:      {}", sanitize_line(&allow.join(", ")));
        }
        if !config.tools.deny.is_empty() {
            let _ = writeln!(
                out,
                "  deny:       {}",
                sanitize_line(&config.tools.deny.join(", "))
            );
        }
        let _ = writeln!(
            out,
            "  budgets:    startup {} s, tool call {} s",
            config.startup_timeout.as_secs_f64(),
            config.tool_timeout.as_secs_f64()
        );
        if let Transport::Stdio(_) = &config.transport {
            let restart = &config.restart;
            let _ = writeln!(
                out,
                "  restart:    {}",
                if restart.is_enabled() {
                    format!(
                        "up to {} time{} in a row, after {} ms, doubling",
                        restart.attempts,
                        if restart.attempts == 1 { "" } else { "s" },
                        restart.backoff.as_millis()
                    )
                } else {
                    "never (attempts = 0)".into()
                }
            );
        }
    }
    match &server.status {
        ServerStatus::Invalid { error } | ServerStatus::Failed { error, .. } => {
            let _ = writeln!(out, "  error:      {}", indent_rest(&sanitize(error), 14));
        }
        ServerStatus::Restarting {
            error,
            attempt,
            attempts,
        } => {
            let _ = writeln!(out, "  restarting: attempt {attempt} of {attempts}");
            let _ = writeln!(out, "  ended:      {}", indent_rest(&sanitize(error), 14));
        }
        ServerStatus::Ready(report) => {
            let _ = writeln!(
                out,
                "  server:     {} (protocol {}{}, ready in {} ms)",
                name_version(&report.server_info),
                sanitize_line(&report.protocol_version),
                era_note(report),
                report.elapsed_ms
            );
            if report.restarts > 0 {
                let _ = writeln!(out, "  restarts:   {}", restarted(report.restarts));
            }
            if let Some(error) = &report.last_ping_error {
                let _ = writeln!(out, "  ping:       failed: {}", sanitize_line(error));
            }
            if let Some(instructions) = &report.instructions {
                let _ = writeln!(
                    out,
                    "  instructions: {}",
                    indent_rest(&sanitize(instructions), 16)
                );
            }
            let tools: Vec<_> = tools.server_tools(&server.id).collect();
            let _ = writeln!(out, "  tools ({}):", tools.len());
            let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
            for tool in tools {
                let title = tool
                    .title
                    .as_deref()
                    .map(|t| format!(" — {}", sanitize_line(t)))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "    {:width$}  {}{title}",
                    sanitize_line(&tool.name),
                    sanitize_line(&tool.tool)
                );
                if let Some(full) = &tool.full_name {
                    let _ = writeln!(out, "      (short for {})", sanitize_line(full));
                }
                for line in app_lines(tool.meta.as_deref()) {
                    let _ = writeln!(out, "      {line}");
                }
                for parameter in rho_host::parameters::parameters(&tool.input_schema) {
                    let _ = writeln!(out, "      {}", sanitize_line(&parameter.line()));
                }
            }
            if !report.app_only_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  for its MCP App only, not exported to the model ({}):",
                    report.app_only_tools.len()
                );
                for tool in app_only_tools(server, &report.app_only_tools) {
                    let title = tool
                        .title
                        .as_deref()
                        .map(|t| format!(" — {}", sanitize_line(t)))
                        .unwrap_or_default();
                    let _ = writeln!(out, "    {}{title}", sanitize_line(&tool.name));
                    let reason = Visibility::of(tool.meta.as_deref())
                        .held_back_reason()
                        .unwrap_or_default();
                    let _ = writeln!(out, "      app-only: {}", sanitize_line(&reason));
                    for line in view_lines(&ToolUi::of(tool.meta.as_deref())) {
                        let _ = writeln!(out, "      {line}");
                    }
                    for parameter in rho_host::parameters::parameters(&tool.input_schema) {
                        let _ = writeln!(out, "      {}", sanitize_line(&parameter.line()));
                    }
                }
            }
            if !report.filtered_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  filtered out by allow/deny: {}",
                    names(&report.filtered_tools)
                );
            }
            if !report.added_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  added by the server since startup (restart to use): {}",
                    names(&report.added_tools)
                );
            }
            if !report.withdrawn_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  withdrawn by the server since startup: {}",
                    names(&report.withdrawn_tools)
                );
            }
            catalog_text(&mut out, &report.catalog);
        }
        ServerStatus::NotStarted => {
            let _ = writeln!(out, "  (pass --connect to start it and list its tools)");
        }
        ServerStatus::Disabled => {}
    }
    out
}

/// A ready server's prompts (name, title, arguments with `*` marking the
/// required ones), resources and templates (URI, name, MIME type), and
/// the listings that failed. Lists the server does not offer are left out.
fn catalog_text(out: &mut String, catalog: &rho_proto_core::features::catalog::Catalog) {
    if catalog.prompts.offered {
        let prompts = &catalog.prompts.items;
        let _ = writeln!(out, "  prompts ({}):", prompts.len());
        for prompt in prompts {
            let title = prompt
                .title
                .as_deref()
                .map(|t| format!(" — {}", sanitize_line(t)))
                .unwrap_or_default();
            let args: Vec<String> = prompt
                .arguments
                .iter()
                .map(|a| {
                    let mark = if a.required { "*" } else { "" };
                    format!("{}{mark}", sanitize_line(&a.name))
                })
                .collect();
            let args = if args.is_empty() {
                String::new()
            } else {
                format!(" ({})", args.join(", "))
            };
            let _ = writeln!(out, "    {}{args}{title}", sanitize_line(&prompt.name));
        }
        if prompts
            .iter()
            .any(|p| p.arguments.iter().any(|a| a.required))
        {
            let _ = writeln!(out, "    (* required)");
        }
    }
    let mime = |m: &Option<String>| {
        m.as_deref()
            .map(|m| format!(" [{}]", sanitize_line(m)))
            .unwrap_or_default()
    };
    if catalog.resources.offered {
        let resources = &catalog.resources.items;
        let _ = writeln!(out, "  resources ({}):", resources.len());
        for r in resources {
            let _ = writeln!(
                out,
                "    {}  {}{}",
                sanitize_line(&r.uri),
                sanitize_line(&r.name),
                mime(&r.mime_type)
            );
        }
    }
    if catalog.templates.offered {
        let templates = &catalog.templates.items;
        let _ = writeln!(out, "  resource templates ({}):", templates.len());
        for t in templates {
            let _ = writeln!(
                out,
                "    {}  {}{}",
                sanitize_line(&t.uri_template),
                sanitize_line(&t.name),
                mime(&t.mime_type)
            );
        }
    }
    for error in catalog.errors() {
        let _ = writeln!(out, "  listing failed: {}", sanitize_line(&error));
    }
}

/// Server tool names, comma-separated, each on one safe line.
fn names(names: &[String]) -> String {
    names
        .iter()
        .map(|n| terminal::sanitize_line(n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn indent_rest(text: &str, by: usize) -> String {
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.to_owned()
            } else {
                format!("{:by$}{l}", "")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `search --json`: the hits, best first, with their scores.
pub(crate) fn search_json(query: &str, index: &ToolIndex, hits: &[Hit<'_>]) -> Value {
    let hits: Vec<Value> = hits
        .iter()
        .map(|hit| {
            let mut entry = serde_json::to_value(hit.entry).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut entry {
                map.insert("score".into(), json!((hit.score * 1000.0).round() / 1000.0));
            }
            entry
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "document": "search",
        "query": query,
        "indexed": index.entries().len(),
        "hits": hits,
    })
}

/// `search`: one line per hit, best first (the exported name, the
/// server's tool, the schema's size), its summary under it; or why
/// nothing matched.
pub(crate) fn search_text(query: &str, index: &ToolIndex, hits: &[Hit<'_>]) -> String {
    let mut out = String::new();
    if hits.is_empty() {
        let _ = writeln!(
            out,
            "no tool matches \"{}\" among {} exported tool(s)",
            sanitize_line(query),
            index.entries().len()
        );
        return out;
    }
    for hit in hits {
        let entry = hit.entry;
        let title = entry
            .title
            .as_deref()
            .map(|t| format!(" ({})", sanitize_line(t)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}{title}  {}:{}  schema {} bytes",
            sanitize_line(&entry.name),
            sanitize_line(&entry.server),
            sanitize_line(&entry.tool),
            entry.schema_bytes
        );
        if !entry.summary.is_empty() {
            let _ = writeln!(out, "    {}", sanitize_line(&entry.summary));
        }
    }
    let _ = writeln!(
        out,
        "{} of {} exported tool(s) match \"{}\"",
        hits.len(),
        index.entries().len(),
        sanitize_line(query)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::runtime::status::ReadyReport;

    fn ready(name: &str, version: &str) -> ServerView {
        ServerView {
            id: "s".into(),
            config: None,
            status: ServerStatus::Ready(ReadyReport {
                protocol_version: "2025-11-25".into(),
                server_info: Implementation {
                    name: name.into(),
                    version: version.into(),
                    title: None,
                },
                instructions: None,
                elapsed_ms: 7,
                pid: None,
                restarts: 0,
                filtered_tools: Vec::new(),
                app_only_tools: Vec::new(),
                last_ping_error: None,
                added_tools: Vec::new(),
                withdrawn_tools: Vec::new(),
                capabilities: Default::default(),
                catalog: Default::default(),
            }),
            tools: Vec::new(),
        }
    }

    #[test]
    fn an_empty_server_version_leaves_no_double_blank() {
        let tools = ToolRegistry::new();
        let auth = AuthMap::new();
        for version in ["", " "] {
            let view = ready("srv", version);
            assert_eq!(
                summary(&view, &tools),
                "0 tools · srv · protocol 2025-11-25 · 7 ms"
            );
            let show = show_text(&view, &tools, &auth, None, None);
            assert!(
                show.contains("  server:     srv (protocol 2025-11-25, ready in 7 ms)\n"),
                "{show}"
            );
        }
        let view = ready("srv", "1.0");
        assert_eq!(
            summary(&view, &tools),
            "0 tools · srv 1.0 · protocol 2025-11-25 · 7 ms"
        );
        // Nor a leading blank for an empty name.
        assert_eq!(
            summary(&ready("", "1.0"), &tools),
            "0 tools · 1.0 · protocol 2025-11-25 · 7 ms"
        );
    }

    #[test]
    fn json_text_escapes_what_a_terminal_obeys_and_parses_back_exactly() {
        let value = json!({
            "name": "a\u{9b}2J\x1b]0;x\x07\u{202e}\u{7f}\r\n é 🎉",
            "k\u{85}": ["\u{80}"],
        });
        let text = json_text(&value);
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && (c.is_control() || terminal::is_control(c))),
            "{text:?}"
        );
        assert!(text.contains("\\u009b") && text.contains("é 🎉"), "{text}");
        let back: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back, value);
        // The same layout as serde_json's pretty printer otherwise.
        let plain = json!({"a": [1, {"b": null}], "c": "d"});
        assert_eq!(
            json_text(&plain),
            serde_json::to_string_pretty(&plain).expect("json") + "\n"
        );
    }
}
