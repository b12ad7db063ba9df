//! `rho mcp import FILE`: the servers of another client's JSON config,
//! added to the selected config file.
//!
//! Read: the `mcpServers` object of Claude Desktop
//! (`claude_desktop_config.json`), Claude Code (`.mcp.json`, the top level
//! of `~/.claude.json`) and Cursor (`mcp.json`), and the `servers` object
//! of VS Code (`.vscode/mcp.json`). An entry is `{command, args, env, cwd}`
//! (optionally `"type": "stdio"`) or `{"type": "http" | "streamable-http" |
//! "sse", url, headers}` (a `url` without `type` is HTTP too); `disabled:
//! true` becomes `enabled = false`. rho speaks Streamable HTTP only, so an
//! `sse` entry is imported as `streamable_http` with a note. Other keys are
//! ignored with a note.
//!
//! Secrets never reach the TOML. An env or header value that is a
//! placeholder for a variable (`${NAME}`, `${env:NAME}`, `${NAME:-default}`)
//! becomes `env_from_env` / `headers_from_env` naming that variable. One
//! that looks like a secret (`crate::manage::looks_secret`), a VS Code
//! `${input:...}` prompt, or a value with a placeholder inside it (which
//! rho would not expand) becomes `env_from_env` / `headers_from_env`
//! naming `RHO_<ID>_<KEY>`: the server id and the variable or header name,
//! upper-cased, every character other than a letter, digit or `_` made
//! `_` (`github` + `API_KEY` → `RHO_GITHUB_API_KEY`, `remote` +
//! `Authorization` → `RHO_REMOTE_AUTHORIZATION`). A note names every
//! variable the person must set; no note shows a value.
//!
//! An id the config file already has is skipped with a note unless
//! `--force`, which replaces it. An entry that cannot be imported (no
//! command or URL, a wrong type, an identity rho does not accept, a URL
//! the config parser refuses) is reported with the file and its name, and
//! the others are still imported; rho then exits 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::{Map, Value};

use rho_proto_core::text::terminal::{sanitize, sanitize_line};

use crate::config_edit::{ConfigDocument, NewEntry, NewTransport};
use crate::manage::looks_secret;
use crate::{Failure, write_stdout};

/// `rho mcp import`.
#[derive(Args, Debug)]
#[command(
    after_help = "Secrets are never copied: an env or header value that looks like one is written as \
env_from_env / headers_from_env naming the variable RHO_<ID>_<KEY> (upper-cased, other characters \
as _), a ${NAME} placeholder as the variable NAME, and a note lists what to set."
)]
pub(crate) struct ImportArgs {
    /// The JSON file: Claude Desktop, Claude Code or Cursor (`mcpServers`)
    /// or VS Code (`servers`).
    file: PathBuf,
    /// Replace servers the config file already has instead of skipping
    /// them.
    #[arg(long)]
    force: bool,
}

/// `rho mcp add-json`.
#[derive(Args, Debug)]
#[command(
    after_help = "JSON is one server entry as Claude Code, Claude Desktop, Cursor or VS Code write it \
(`{\"command\": \"npx\", \"args\": [...], \"env\": {...}}` or `{\"type\": \"http\", \"url\": ...}`), \
read by the same rules as `rho mcp import`: secrets never reach the config file."
)]
pub(crate) struct AddJsonArgs {
    /// The new server's identity.
    id: String,
    /// The entry, as one JSON object (quote it for the shell).
    json: String,
    /// Replace an entry of the same identity instead of refusing.
    #[arg(long)]
    force: bool,
    /// `user` is rho's one config file; there is no other scope (as
    /// `claude mcp add-json` takes it).
    #[arg(long, short = 's', value_name = "SCOPE")]
    scope: Option<String>,
}

/// `rho mcp add-json ID JSON`: one entry, translated as `import` does.
pub(crate) fn add_json(config: Option<PathBuf>, args: &AddJsonArgs) -> Result<ExitCode, Failure> {
    if let Some(scope) = args.scope.as_deref().filter(|s| *s != "user") {
        return Err(Failure::Usage(format!(
            "rho has no `{scope}` scope: it keeps every server in one config file, \
             ~/.rho/config.toml or the one --config names; drop --scope"
        )));
    }
    let value: Value = serde_json::from_str(&args.json)
        .map_err(|e| Failure::Usage(format!("the entry is not JSON: {e}")))?;
    // Refused before the config file is touched, citing the entry given
    // (never a line of an edited text that is not written).
    let translated = translate(&args.id, &value)
        .and_then(|translated| check_alone(&args.id, &translated.entry).map(|()| translated))
        .map_err(|reason| {
            Failure::Usage(sanitize(&format!("server `{}`: {reason}", args.id)).into_owned())
        })?;
    let mut doc = ConfigDocument::open(config).map_err(Failure::Usage)?;
    let target = doc.path().display().to_string();
    let existed = doc.contains(&args.id);
    if existed && !args.force {
        return Err(Failure::Usage(format!(
            "server `{}` already exists in {target}: pass --force to replace it",
            sanitize_line(&args.id)
        )));
    }
    doc.insert(&args.id, &translated.entry)
        .map_err(Failure::Usage)?;
    doc.write(Some(&args.id)).map_err(Failure::Usage)?;
    for note in &translated.notes {
        eprintln!("{}", sanitize(&format!("note: {note}")));
    }
    if !translated.to_set.is_empty() {
        let list: Vec<String> = translated
            .to_set
            .iter()
            .map(|(var, what)| format!("{var} ({what})"))
            .collect();
        eprintln!(
            "{}",
            sanitize(&format!(
                "note: server `{}` takes these from rho's environment, not from {target}: set {}",
                args.id,
                list.join(", ")
            ))
        );
    }
    write_stdout(&format!(
        "{} server `{}` in {target}\n",
        if existed { "replaced" } else { "added" },
        sanitize_line(&args.id)
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// One entry of the JSON file, translated.
#[derive(Debug, PartialEq)]
struct Translated {
    entry: NewEntry,
    /// Things the person should know (ignored keys, `sse`, ...).
    notes: Vec<String>,
    /// Variables to set: the variable, then what it feeds.
    to_set: Vec<(String, String)>,
}

/// `rho mcp import`.
pub(crate) fn run(config: Option<PathBuf>, args: &ImportArgs) -> Result<ExitCode, Failure> {
    let file = args.file.display().to_string();
    let servers = read_servers(&args.file).map_err(Failure::Usage)?;
    let mut doc = ConfigDocument::open(config).map_err(Failure::Usage)?;
    let target = doc.path().display().to_string();
    let mut imported: Vec<(String, bool)> = Vec::new();
    let mut invalid = 0;
    let mut notes: Vec<String> = Vec::new();
    // Every line names what the file chose (server names, `type` values,
    // key names): each passes the one sanitizer before the terminal.
    let report = |line: String| eprintln!("{}", sanitize(&line));
    for (name, value) in &servers {
        let existed = doc.contains(name);
        if existed && !args.force {
            notes.push(format!(
                "skipped server `{name}`: {target} already has it (pass --force to replace it)"
            ));
            continue;
        }
        let translated = match translate(name, value) {
            Ok(translated) => translated,
            Err(reason) => {
                report(format!("rho: {file}: server `{name}`: {reason}"));
                invalid += 1;
                continue;
            }
        };
        // The entry is checked on its own (the parser's reason, before
        // the document is touched), so an import costs time linear in the
        // file: the whole document is parsed once, when written.
        if let Err(reason) =
            check_alone(name, &translated.entry).and_then(|()| doc.insert(name, &translated.entry))
        {
            report(format!("rho: {file}: server `{name}`: {reason}"));
            invalid += 1;
            continue;
        }
        notes.extend(
            translated
                .notes
                .iter()
                .map(|note| format!("server `{name}`: {note}")),
        );
        if !translated.to_set.is_empty() {
            let list: Vec<String> = translated
                .to_set
                .iter()
                .map(|(var, what)| format!("{var} ({what})"))
                .collect();
            notes.push(format!(
                "server `{name}` takes these from rho's environment, not from {target}: set {}",
                list.join(", ")
            ));
        }
        imported.push((name.clone(), existed));
    }
    if !imported.is_empty() {
        doc.write(None).map_err(Failure::Usage)?;
    }
    for note in notes {
        report(format!("note: {note}"));
    }
    let mut text: String = imported
        .iter()
        .map(|(name, existed)| {
            format!(
                "{} server `{}` in {target}\n",
                if *existed { "replaced" } else { "imported" },
                sanitize_line(name)
            )
        })
        .collect();
    if imported.is_empty() {
        text = format!("imported no server from {}\n", sanitize_line(&file));
    }
    write_stdout(&text)?;
    if invalid > 0 {
        return Err(Failure::Runtime(format!(
            "{invalid} of the {} servers in {file} could not be imported",
            servers.len()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether `entry` would be a valid server `id` in a config of its own:
/// the config parser's reason if not. The reason cites no file or line:
/// the text it parsed is never written, so a place in it would point at
/// nothing. Its keys are named within the entry (`command`,
/// `headers.X-A`), as the input names them, not by a path in a file.
fn check_alone(id: &str, entry: &NewEntry) -> Result<(), String> {
    let mut alone = ConfigDocument::from_text(PathBuf::from("<entry>"), "")?;
    alone.insert(id, entry)?;
    let config = alone.check(None)?;
    match config.get(id).map(|e| &e.config) {
        Some(Err(error)) => Err(within_entry(id, &error.message)),
        _ => Ok(()),
    }
}

/// `message` (the config parser's, about server `id`) with its key paths
/// (`mcp.servers.<id>.command`) named within the entry (`command`).
fn within_entry(id: &str, message: &str) -> String {
    let bare = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let prefix = if bare {
        format!("`mcp.servers.{id}.")
    } else {
        format!("`mcp.servers.{id:?}.")
    };
    message.replace(&prefix, "`")
}

/// The server entries of a JSON config, in file order.
fn read_servers(path: &Path) -> Result<Map<String, Value>, String> {
    let file = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {file}: {e}"))?;
    let document: Value =
        serde_json::from_str(&text).map_err(|e| format!("{file} is not JSON: {e}"))?;
    let mut servers = Map::new();
    let mut found = false;
    for key in ["mcpServers", "servers"] {
        match document.get(key) {
            None => {}
            Some(Value::Object(entries)) => {
                found = true;
                servers.extend(entries.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Some(_) => return Err(format!("{file}: `{key}` is not an object")),
        }
    }
    if !found {
        return Err(format!(
            "{file} has no `mcpServers` object (nor VS Code's `servers`): not an MCP client config"
        ));
    }
    Ok(servers)
}

/// Translates one entry named `id` into rho's config model.
fn translate(id: &str, value: &Value) -> Result<Translated, String> {
    let Value::Object(entry) = value else {
        return Err(format!("is {}, not an object", kind(value)));
    };
    let mut notes = Vec::new();
    let mut to_set = Vec::new();
    let kind_of = string(entry, "type")?;
    let command = string(entry, "command")?;
    let url = string(entry, "url")?;
    let remote = match (kind_of.as_deref(), &command, &url) {
        (_, Some(_), Some(_)) => return Err("has both `command` and `url`".into()),
        (None | Some("stdio"), Some(_), None) => false,
        (Some("stdio"), None, _) => return Err("is a stdio server without `command`".into()),
        (None, None, Some(_))
        | (Some("http" | "streamable-http" | "streamableHttp" | "streamable_http"), _, _) => true,
        (Some("sse"), _, _) => {
            notes.push(
                "declared `sse` (the legacy HTTP+SSE transport); rho speaks Streamable HTTP only, so it is \
                 imported as streamable_http, which works only if the server serves that too (often at /mcp rather than /sse)"
                    .into(),
            );
            true
        }
        (Some(other), _, _) => {
            return Err(format!(
                "has `type` `{other}`; rho imports stdio, http, streamable-http and sse"
            ));
        }
        (None, None, None) => return Err("has neither `command` nor `url`".into()),
    };
    let known: &[&str] = if remote {
        &["type", "url", "headers", "disabled"]
    } else {
        &["type", "command", "args", "env", "cwd", "disabled"]
    };
    let enabled = match entry.get("disabled") {
        None => true,
        Some(Value::Bool(disabled)) => !disabled,
        Some(other) => return Err(format!("`disabled` is {}, not a boolean", kind(other))),
    };
    for key in entry.keys().filter(|k| !known.contains(&k.as_str())) {
        notes.push(if key == "envFile" {
            "ignored `envFile`: rho reads no env file; give its variables with env_from_env".into()
        } else {
            format!("ignored `{key}`")
        });
    }
    let transport = if remote {
        let url = url.ok_or("is an HTTP server without `url`")?;
        if url.contains("${") {
            notes.push(unexpanded("url"));
        }
        let (headers, headers_from_env) =
            split_secrets(id, "header", strings(entry, "headers")?, &mut to_set);
        NewTransport::Http {
            url,
            headers,
            headers_from_env,
            oauth: None,
        }
    } else {
        let command = command.ok_or("is a stdio server without `command`")?;
        let args = match entry.get("args") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(format!("`args` holds {}, not only strings", kind(other))),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(format!("`args` is {}, not an array", kind(other))),
        };
        let cwd = string(entry, "cwd")?;
        if command.contains("${")
            || args.iter().any(|a| a.contains("${"))
            || cwd.as_deref().is_some_and(|c| c.contains("${"))
        {
            notes.push(unexpanded("command, args or cwd"));
        }
        let (env, env_from_env) = split_secrets(id, "env", strings(entry, "env")?, &mut to_set);
        NewTransport::Stdio {
            command,
            args,
            cwd,
            env,
            env_from_env,
        }
    };
    Ok(Translated {
        entry: NewEntry { transport, enabled },
        notes,
        to_set,
    })
}

fn unexpanded(what: &str) -> String {
    format!("rho does not expand `${{...}}` placeholders in its {what}: edit the entry")
}

/// Names and values (or variable names), in file order.
type Pairs = Vec<(String, String)>;

/// Splits env or header pairs into the literal ones and the ones read from
/// rho's environment (see the module docs), noting in `to_set` each
/// variable to set.
fn split_secrets(id: &str, what: &str, pairs: Pairs, to_set: &mut Pairs) -> (Pairs, Pairs) {
    let mut literal = Vec::new();
    let mut from_env = Vec::new();
    for (key, value) in pairs {
        let variable = match placeholder(&value) {
            Some(name) => name.to_owned(),
            None if value.contains("${") || looks_secret(&key, &value) => variable_name(id, &key),
            None => {
                literal.push((key, value));
                continue;
            }
        };
        to_set.push((variable.clone(), format!("{what} {key}")));
        from_env.push((key, variable));
    }
    (literal, from_env)
}

/// The variable a whole-value placeholder names: `${NAME}`,
/// `${env:NAME}`, `${NAME:-default}`.
fn placeholder(value: &str) -> Option<&str> {
    let inner = value.strip_prefix("${")?.strip_suffix('}')?;
    let inner = inner.strip_prefix("env:").unwrap_or(inner);
    let name = inner.split_once(":-").map_or(inner, |(name, _)| name);
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

/// `RHO_<ID>_<KEY>`, upper-cased, other characters as `_`.
fn variable_name(id: &str, key: &str) -> String {
    format!("RHO_{id}_{key}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn string(entry: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match entry.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` is {}, not a string", kind(other))),
    }
}

/// An object of strings (numbers and booleans are taken as their text).
fn strings(entry: &Map<String, Value>, key: &str) -> Result<Vec<(String, String)>, String> {
    match entry.get(key) {
        None => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                other => Err(format!("`{key}.{k}` is {}, not a string", kind(other))),
            })
            .collect(),
        Some(other) => Err(format!("`{key}` is {}, not an object", kind(other))),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn secrets_move_to_variables_and_placeholders_name_theirs() {
        let got = translate(
            "git-hub",
            &json!({"command": "gh", "env": {
                "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_real",
                "FROM": "${GITHUB_TOKEN}",
                "VS": "${env:VS_VAR}",
                "DEFAULTED": "${LEVEL:-info}",
                "PROMPTED": "${input:pat}",
                "PARTIAL": "x-${Y}",
                "NODE_ENV": "production"
            }}),
        )
        .expect("translates");
        let NewTransport::Stdio {
            env, env_from_env, ..
        } = &got.entry.transport
        else {
            panic!("stdio: {got:?}");
        };
        assert_eq!(env, &pairs(&[("NODE_ENV", "production")]));
        assert_eq!(
            env_from_env,
            &pairs(&[
                (
                    "GITHUB_PERSONAL_ACCESS_TOKEN",
                    "RHO_GIT_HUB_GITHUB_PERSONAL_ACCESS_TOKEN"
                ),
                ("FROM", "GITHUB_TOKEN"),
                ("VS", "VS_VAR"),
                ("DEFAULTED", "LEVEL"),
                ("PROMPTED", "RHO_GIT_HUB_PROMPTED"),
                ("PARTIAL", "RHO_GIT_HUB_PARTIAL"),
            ])
        );
        assert_eq!(got.to_set.len(), 6);
        assert_eq!(
            got.to_set[0],
            (
                "RHO_GIT_HUB_GITHUB_PERSONAL_ACCESS_TOKEN".to_owned(),
                "env GITHUB_PERSONAL_ACCESS_TOKEN".to_owned()
            )
        );
    }

    #[test]
    fn http_entries_by_type_or_by_url_and_sse_with_a_note() {
        for entry in [
            json!({"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer t", "X-Tenant": "t1"}}),
            json!({"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer t", "X-Tenant": "t1"}}),
            json!({"type": "streamable-http", "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer t", "X-Tenant": "t1"}}),
        ] {
            let got = translate("r", &entry).expect("translates");
            assert_eq!(
                got.entry.transport,
                NewTransport::Http {
                    url: "https://a.example/mcp".into(),
                    headers: pairs(&[("X-Tenant", "t1")]),
                    headers_from_env: pairs(&[("Authorization", "RHO_R_AUTHORIZATION")]),
                    oauth: None,
                },
                "{entry}"
            );
            assert!(got.notes.is_empty(), "{:?}", got.notes);
        }
        let got = translate("r", &json!({"type": "sse", "url": "https://a.example/sse"}))
            .expect("translates");
        assert!(got.notes[0].contains("legacy HTTP+SSE"), "{:?}", got.notes);
    }

    #[test]
    fn entries_that_cannot_be_imported_say_why() {
        for (entry, says) in [
            (json!("npx x"), "is a string, not an object"),
            (json!({}), "has neither `command` nor `url`"),
            (json!({"command": "a", "url": "https://x"}), "has both"),
            (
                json!({"type": "stdio", "url": "https://x"}),
                "stdio server without `command`",
            ),
            (json!({"type": "ws", "url": "wss://x"}), "has `type` `ws`"),
            (json!({"command": 1}), "`command` is a number"),
            (
                json!({"command": "a", "args": "b"}),
                "`args` is a string, not an array",
            ),
            (
                json!({"command": "a", "args": [1]}),
                "`args` holds a number",
            ),
            (
                json!({"command": "a", "env": {"A": null}}),
                "`env.A` is null",
            ),
            (
                json!({"command": "a", "disabled": "yes"}),
                "`disabled` is a string",
            ),
        ] {
            let error = translate("x", &entry).expect_err("refused");
            assert!(error.contains(says), "{entry}: {error}");
        }
    }

    #[test]
    fn disabled_and_unknown_keys() {
        let got = translate(
            "x",
            &json!({"command": "a", "disabled": true, "alwaysAllow": [], "envFile": ".env"}),
        )
        .expect("translates");
        assert!(!got.entry.enabled);
        assert_eq!(got.notes.len(), 2, "{:?}", got.notes);
        assert_eq!(got.notes[0], "ignored `alwaysAllow`");
        assert!(got.notes[1].contains("envFile"));
    }

    #[test]
    fn placeholders_rho_would_not_expand_are_kept_with_a_note() {
        let got = translate(
            "x",
            &json!({"command": "node", "args": ["${workspaceFolder}/s.js"], "cwd": "/srv"}),
        )
        .expect("translates");
        let NewTransport::Stdio { args, cwd, .. } = &got.entry.transport else {
            panic!("stdio: {got:?}");
        };
        assert_eq!(args, &["${workspaceFolder}/s.js"]);
        assert_eq!(cwd.as_deref(), Some("/srv"));
        assert_eq!(
            got.notes,
            [
                "rho does not expand `${...}` placeholders in its command, args or cwd: edit the entry"
            ]
        );
        let got = translate("x", &json!({"url": "https://${HOST}/mcp"})).expect("translates");
        assert_eq!(
            got.notes,
            ["rho does not expand `${...}` placeholders in its url: edit the entry"]
        );
    }

    #[test]
    fn placeholders_and_variable_names() {
        assert_eq!(placeholder("${A_1}"), Some("A_1"));
        assert_eq!(placeholder("${env:B}"), Some("B"));
        assert_eq!(placeholder("${C:-x}"), Some("C"));
        assert_eq!(placeholder("${input:d}"), None);
        assert_eq!(placeholder("${1A}"), None);
        assert_eq!(placeholder("pre${A}"), None);
        assert_eq!(variable_name("my-srv", "X-Api.Key"), "RHO_MY_SRV_X_API_KEY");
    }
}
