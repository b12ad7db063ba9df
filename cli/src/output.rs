//! What `rho mcp` prints: a readable table for people and a stable JSON
//! document for tools. Neither ever holds a secret value: environment
//! variables and headers appear by name only.
//!
//! # JSON schema (`"schema": 1`)
//!
//! `list --json` prints `{"schema": 1, "config": PATH|null, "servers": [SERVER...]}`;
//! `show --json` prints one SERVER with `"schema": 1` added. A SERVER is:
//!
//! | key | when | value |
//! |---|---|---|
//! | `id` | always | the server identity |
//! | `status` | always | `not_started`, `disabled`, `invalid`, `ready` or `failed` |
//! | `error` | invalid, failed | the reason, for a person |
//! | `transport` | valid entries | `stdio` or `streamable_http` |
//! | `enabled` | valid entries | bool |
//! | `command`, `args`, `cwd` | stdio | as configured |
//! | `url` | streamable_http | as configured |
//! | `env_names`, `header_names` | always on valid entries | names only, never values |
//! | `tool_filter` | valid entries | `{"allow": [..]?, "deny": [..]?}` |
//! | `startup_timeout_secs`, `tool_timeout_secs` | valid entries | numbers |
//! | `log_level`, `sampling` | valid entries | as configured (`log_level` null when unset) |
//! | `auth` | remote servers with an `oauth` table or an `Authorization` header | `{"kind": "header"}`, or `{"kind": "oauth", "state": "logged_in" \| "needs_login" \| "store_error", "expires_in_secs", "refreshable", "error"}`: never a token |
//! | `protocol_version`, `server_info`, `elapsed_ms`, `pid`, `instructions` | ready | from the handshake |
//! | `last_ping_error` | ready | null, or why the latest keep-alive ping of a remote server failed |
//! | `tools` | ready | exported tools: `name` (exported, at most 64 characters), `full_name` (only when `name` is the short form of a longer name), `tool` (server's name), `title`, `hints`; `show` adds `description` and `input_schema` |
//! | `filtered_tools` | ready | server tool names kept out by allow/deny |
//! | `added_tools`, `withdrawn_tools` | ready | tools the server added (need a restart) or withdrew since startup |

use std::fmt::Write as _;

use rho_proto_core::config::Transport;
use rho_proto_core::registry::ToolRegistry;
use rho_proto_core::runtime::ServerView;
use rho_proto_core::status::ServerStatus;
use serde_json::{Map, Value, json};

use crate::config_file::LoadedConfig;
use crate::credentials::AuthStatus;

/// Each server's auth status, by identity (servers that use none are absent).
pub(crate) type AuthMap = std::collections::BTreeMap<String, AuthStatus>;

/// The JSON schema version printed with every document.
const SCHEMA: u64 = 1;

/// A JSON document as pretty text with a final newline.
pub(crate) fn json_text(value: &Value) -> String {
    // A `Value` always serializes: its keys are strings.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// The `list --json` document.
pub(crate) fn list_json(
    loaded: &LoadedConfig,
    servers: &[ServerView],
    tools: &ToolRegistry,
    auth: &AuthMap,
) -> Value {
    json!({
        "schema": SCHEMA,
        "config": loaded.path.as_ref().map(|p| p.display().to_string()),
        "servers": servers.iter().map(|s| server_json(s, tools, false, auth)).collect::<Vec<_>>(),
    })
}

/// One server's JSON object; `detailed` adds tool descriptions and schemas.
pub(crate) fn server_json(
    server: &ServerView,
    tools: &ToolRegistry,
    detailed: bool,
    auth: &AuthMap,
) -> Value {
    let mut obj = Map::new();
    if detailed {
        obj.insert("schema".into(), json!(SCHEMA));
    }
    obj.insert("id".into(), json!(server.id));
    obj.insert("status".into(), json!(server.status.label()));
    if let Some(config) = &server.config {
        obj.insert("transport".into(), json!(config.transport.kind()));
        obj.insert("enabled".into(), json!(config.enabled));
        match &config.transport {
            Transport::Stdio(stdio) => {
                obj.insert("command".into(), json!(stdio.command));
                obj.insert("args".into(), json!(stdio.args));
                obj.insert("cwd".into(), json!(stdio.cwd));
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
        obj.insert("log_level".into(), json!(config.log_level));
        obj.insert("sampling".into(), json!(config.sampling));
        if let Some(status) = auth.get(&server.id) {
            obj.insert("auth".into(), status.json());
        }
    }
    match &server.status {
        ServerStatus::Invalid { error } | ServerStatus::Failed { error } => {
            obj.insert("error".into(), json!(error));
        }
        ServerStatus::Ready(report) => {
            obj.insert("protocol_version".into(), json!(report.protocol_version));
            obj.insert("server_info".into(), json!(report.server_info));
            obj.insert("elapsed_ms".into(), json!(report.elapsed_ms));
            obj.insert("pid".into(), json!(report.pid));
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
                        tool["input_schema"] = t.input_schema.clone();
                        if let Some(schema) = &t.output_schema {
                            tool["output_schema"] = schema.clone();
                        }
                    }
                    tool
                })
                .collect();
            obj.insert("tools".into(), Value::Array(tools));
            obj.insert("filtered_tools".into(), json!(report.filtered_tools));
            obj.insert("added_tools".into(), json!(report.added_tools));
            obj.insert("withdrawn_tools".into(), json!(report.withdrawn_tools));
        }
        ServerStatus::NotStarted | ServerStatus::Disabled => {}
    }
    Value::Object(obj)
}

/// The `list` table.
pub(crate) fn list_text(
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
    let rows: Vec<[String; 4]> = servers
        .iter()
        .map(|s| {
            [
                s.id.clone(),
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
    let tools = tools.tools();
    if !tools.is_empty() {
        let _ = writeln!(out, "\nTools ({}):", tools.len());
        let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for tool in tools {
            // Encoded names are unreadable; show the server's own name beside them.
            if tool.name == format!("mcp__{}__{}", tool.server, tool.tool) {
                let _ = writeln!(out, "  {}", tool.name);
            } else {
                let _ = writeln!(
                    out,
                    "  {:width$}  ({} · {})",
                    tool.name, tool.server, tool.tool
                );
            }
        }
    }
    out
}

/// The one-line (or, for failures with stderr, multi-line) detail column.
fn summary(server: &ServerView, tools: &ToolRegistry) -> String {
    match &server.status {
        ServerStatus::Ready(report) => {
            let count = tools.server_tools(&server.id).count();
            let mut text = format!(
                "{count} tool{} · {} {} · protocol {} · {} ms",
                if count == 1 { "" } else { "s" },
                report.server_info.name,
                report.server_info.version,
                report.protocol_version,
                report.elapsed_ms
            );
            if !report.filtered_tools.is_empty() {
                let _ = write!(text, " · {} filtered out", report.filtered_tools.len());
            }
            text
        }
        ServerStatus::Invalid { error } | ServerStatus::Failed { error } => error.clone(),
        ServerStatus::Disabled => "enabled = false".into(),
        ServerStatus::NotStarted => match &server.config {
            Some(config) => match &config.transport {
                Transport::Stdio(stdio) => {
                    let mut cmd = stdio.command.clone();
                    for arg in &stdio.args {
                        cmd.push(' ');
                        cmd.push_str(arg);
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
pub(crate) fn show_text(server: &ServerView, tools: &ToolRegistry, auth: &AuthMap) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", server.id);
    let _ = writeln!(
        out,
        "  status:     {}",
        server.status.label().replace('_', " ")
    );
    if let Some(config) = &server.config {
        let _ = writeln!(out, "  transport:  {}", config.transport.kind());
        match &config.transport {
            Transport::Stdio(stdio) => {
                let _ = writeln!(out, "  command:    {}", stdio.command);
                if !stdio.args.is_empty() {
                    let _ = writeln!(out, "  args:       {}", stdio.args.join(" "));
                }
                if let Some(cwd) = &stdio.cwd {
                    let _ = writeln!(out, "  cwd:        {cwd}");
                }
            }
            Transport::StreamableHttp(http) => {
                let _ = writeln!(out, "  url:        {}", http.url);
            }
        }
        let env = config.env_names();
        if !env.is_empty() {
            let _ = writeln!(out, "  env:        {} (values hidden)", env.join(", "));
        }
        let headers = config.header_names();
        if !headers.is_empty() {
            let _ = writeln!(out, "  headers:    {} (values hidden)", headers.join(", "));
        }
        if let Some(status) = auth.get(&server.id) {
            let _ = writeln!(out, "  auth:       {}", status.describe(&server.id));
        }
        if let Some(allow) = &config.tools.allow {
            let _ = writeln!(out, "  allow:      {}", allow.join(", "));
        }
        if !config.tools.deny.is_empty() {
            let _ = writeln!(out, "  deny:       {}", config.tools.deny.join(", "));
        }
        let _ = writeln!(
            out,
            "  budgets:    startup {} s, tool call {} s",
            config.startup_timeout.as_secs_f64(),
            config.tool_timeout.as_secs_f64()
        );
    }
    match &server.status {
        ServerStatus::Invalid { error } | ServerStatus::Failed { error } => {
            let _ = writeln!(out, "  error:      {}", indent_rest(error, 14));
        }
        ServerStatus::Ready(report) => {
            let _ = writeln!(
                out,
                "  server:     {} {} (protocol {}, ready in {} ms)",
                report.server_info.name,
                report.server_info.version,
                report.protocol_version,
                report.elapsed_ms
            );
            if let Some(error) = &report.last_ping_error {
                let _ = writeln!(out, "  ping:       failed: {error}");
            }
            if let Some(instructions) = &report.instructions {
                let _ = writeln!(out, "  instructions: {}", indent_rest(instructions, 16));
            }
            let tools: Vec<_> = tools.server_tools(&server.id).collect();
            let _ = writeln!(out, "  tools ({}):", tools.len());
            let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
            for tool in tools {
                let title = tool
                    .title
                    .as_deref()
                    .map(|t| format!(" — {t}"))
                    .unwrap_or_default();
                let _ = writeln!(out, "    {:width$}  {}{title}", tool.name, tool.tool);
                if let Some(full) = &tool.full_name {
                    let _ = writeln!(out, "      (short for {full})");
                }
            }
            if !report.filtered_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  filtered out by allow/deny: {}",
                    report.filtered_tools.join(", ")
                );
            }
            if !report.added_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  added by the server since startup (restart to use): {}",
                    report.added_tools.join(", ")
                );
            }
            if !report.withdrawn_tools.is_empty() {
                let _ = writeln!(
                    out,
                    "  withdrawn by the server since startup: {}",
                    report.withdrawn_tools.join(", ")
                );
            }
        }
        ServerStatus::NotStarted => {
            let _ = writeln!(out, "  (pass --connect to start it and list its tools)");
        }
        ServerStatus::Disabled => {}
    }
    out
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
