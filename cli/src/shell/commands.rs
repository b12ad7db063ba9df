//! The shell's commands: what a typed line asks for, and what `Tab`
//! offers, both pure so they are tested without a session.
//!
//! Tab completion needs no round-trip: commands are fixed, and servers,
//! tools and prompts come from the lists held since connect ([`Catalog`]).
//! A `/call` target is an exported tool name or `<server>:<tool>` (the
//! server's own tool name), so a person can call a tool whose exported
//! name they do not know.
//!
//! [`context`] says what the cursor is in, for the palette the shell puts
//! up by itself: a prompt argument's value (whose suggestions come from
//! the server, see `mod.rs`) or an `@` token (matched here against the
//! held resources, then the workspace files).
//!
//! A value picked from the suggestions replaces that value alone: for a
//! prompt of several arguments the `key=value` word's value, quoted when it
//! holds a blank or a quote (as the prompt's argument rules read it back);
//! for a prompt of one argument, everything after the command.

use std::collections::BTreeMap;

use rho_proto_core::features::resources::{Resource, ResourceTemplate, match_fragment};
use rho_proto_core::text::terminal::sanitize_line;

use super::editor::{Candidate, Pick};

/// The built-in commands, with the note the menu shows beside each.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("/mcp", "servers, transport, status, tools"),
    ("/doctor", "one health row per server"),
    ("/tools", "exported tools [server]"),
    ("/call", "<tool or server:tool> [JSON or key=value...]"),
    ("/login", "<server>: log in with a browser and start it"),
    (
        "/reconnect",
        "<server>: start it again, the others untouched",
    ),
    ("/help", "these commands and keys"),
    ("/quit", "shut every server down and leave"),
];

/// What a submitted line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// A blank line.
    Nothing,
    /// `/mcp`: the status table.
    Status,
    /// `/doctor`: one health row per server.
    Doctor,
    /// `/tools [server]`.
    Tools(Option<String>),
    /// `/mcp:<server>:<prompt> [arguments]`: the prompt's user turn (the
    /// whole line, read against the server's prompts).
    Prompt(String),
    /// `/call <target> [arguments]`, or `/app` (the same call, with the
    /// tool's MCP App view served to a browser until Ctrl-C).
    Call {
        /// An exported name, or `server:tool`.
        target: String,
        /// The rest of the line: a JSON object or `key=value` words.
        arguments: String,
        /// `/app`: open the tool's view.
        app: bool,
    },
    /// `/login <server>`: a browser login, then the server starts.
    Login(String),
    /// `/reconnect <server>`: its session closed (if it has one) and the
    /// server started again with the config as it is now.
    Reconnect(String),
    /// `/help`.
    Help,
    /// `/quit` (or `/exit`).
    Quit,
    /// Something the shell cannot run, with why.
    Refused(String),
}

/// Reads one submitted line.
pub(crate) fn parse(line: &str) -> Command {
    let line = line.trim();
    if line.is_empty() {
        return Command::Nothing;
    }
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (line, ""),
    };
    if word.starts_with("/mcp:") {
        return Command::Prompt(line.to_owned());
    }
    match word {
        "/mcp" if rest.is_empty() => Command::Status,
        "/doctor" if rest.is_empty() => Command::Doctor,
        "/tools" => match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [] => Command::Tools(None),
            [server] => Command::Tools(Some((*server).to_owned())),
            _ => Command::Refused("usage: /tools [server]".into()),
        },
        "/call" | "/app" => {
            let (target, arguments) = match rest.split_once(char::is_whitespace) {
                Some((target, arguments)) => (target, arguments.trim()),
                None => (rest, ""),
            };
            if target.is_empty() {
                return Command::Refused(format!(
                    "usage: {word} <tool or server:tool> [JSON object or key=value...]"
                ));
            }
            Command::Call {
                target: target.to_owned(),
                arguments: arguments.to_owned(),
                app: word == "/app",
            }
        }
        "/login" => match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [server] => Command::Login((*server).to_owned()),
            _ => Command::Refused("usage: /login <server>".into()),
        },
        "/reconnect" => match rest.split_whitespace().collect::<Vec<_>>().as_slice() {
            [server] => Command::Reconnect((*server).to_owned()),
            _ => Command::Refused("usage: /reconnect <server>".into()),
        },
        "/help" | "/?" => Command::Help,
        "/quit" | "/exit" => Command::Quit,
        "/mcp" | "/doctor" => Command::Refused(format!("{word} takes no arguments")),
        _ if word.starts_with('/') => Command::Refused(format!(
            "unknown command `{}`; {}",
            sanitize_line(word),
            match rho_host::did_you_mean(word, COMMANDS.iter().map(|(name, _)| *name)) {
                Some(near) => format!("did you mean `{near}`? (/help lists the commands)"),
                None => "/help lists the commands".to_owned(),
            }
        )),
        _ => Command::Refused(
            "commands start with `/` (there is no model here to talk to); /help lists them".into(),
        ),
    }
}

/// What completion knows about the session: held since connect.
#[derive(Clone, Debug, Default)]
pub(crate) struct Catalog {
    /// Server identities, in config order.
    pub(crate) servers: Vec<String>,
    /// Every exported tool: (exported name, server, the server's tool name,
    /// the first line of its description).
    pub(crate) tools: Vec<CatalogTool>,
    /// Every prompt, with its command.
    pub(crate) prompts: Vec<CatalogPrompt>,
    /// Every server's held resources and templates, in config order.
    pub(crate) resources: Vec<ServerResources>,
}

/// One prompt, as completion needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CatalogPrompt {
    pub(crate) server: String,
    /// The prompt's name, as `prompts/get` takes it.
    pub(crate) name: String,
    /// Its arguments' names, in the server's order.
    pub(crate) arguments: Vec<String>,
    /// Its arguments as the menu shows them (`city (required), state`).
    pub(crate) note: String,
}

impl CatalogPrompt {
    /// The command that runs it: `/mcp:<server>:<prompt>`, with the
    /// prompt's name in the form a terminal shows it (a name holding a
    /// control or BIDI character is written escaped, which the prompt
    /// lookup accepts back).
    pub(crate) fn command(&self) -> String {
        rho_proto_core::features::prompts::command_name(&self.server, &sanitize_line(&self.name))
    }
}

/// One server's resources and templates, as listed at connect.
#[derive(Clone, Debug, Default)]
pub(crate) struct ServerResources {
    pub(crate) server: String,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
}

/// One tool, as completion shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CatalogTool {
    pub(crate) exported: String,
    pub(crate) server: String,
    pub(crate) name: String,
    pub(crate) summary: String,
    /// Its parameters, for completing argument names and values.
    pub(crate) parameters: Vec<rho_host::parameters::Parameter>,
}

/// The candidates for the word of `line` from `word_start` to `cursor`.
pub(crate) fn complete(
    catalog: &Catalog,
    line: &str,
    word_start: usize,
    cursor: usize,
) -> Vec<Candidate> {
    let word = &line[word_start..cursor];
    let before: Vec<&str> = line[..word_start].split_whitespace().collect();
    match before.as_slice() {
        [] => COMMANDS
            .iter()
            .filter(|(name, _)| name.starts_with(word))
            .map(|(name, note)| Candidate::text(format!("{name} "), *note))
            .chain(catalog.prompts.iter().filter_map(|p| {
                let command = p.command();
                command
                    .starts_with(word)
                    .then(|| Candidate::text(format!("{command} "), p.note.clone()))
            }))
            .collect(),
        ["/tools" | "/login" | "/reconnect"] => catalog
            .servers
            .iter()
            .filter(|s| s.starts_with(word))
            .map(|s| Candidate::text(s.clone(), ""))
            .collect(),
        ["/call" | "/app"] => call_targets(catalog, word),
        ["/call" | "/app", target @ ..] => call_arguments(catalog, target, word),
        [first, ..] if first.starts_with("/mcp:") && !line[..word_start].ends_with('=') => {
            argument_names(catalog, line, word)
        }
        _ => Vec::new(),
    }
}

/// `/call` targets: `server:tool` for a word with a `:` in it (or one that
/// starts a server's name), exported names otherwise.
fn call_targets(catalog: &Catalog, word: &str) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    if let Some((server, tool)) = word.split_once(':') {
        for t in &catalog.tools {
            let shown = sanitize_line(&t.name);
            if t.server == server && shown.starts_with(tool) {
                out.push(Candidate::text(
                    format!("{}:{shown} ", t.server),
                    t.summary.clone(),
                ));
            }
        }
        return out;
    }
    for server in &catalog.servers {
        if server.starts_with(word) && catalog.tools.iter().any(|t| &t.server == server) {
            out.push(Candidate::text(format!("{server}:"), "server"));
        }
    }
    for t in &catalog.tools {
        if t.exported.starts_with(word) {
            out.push(Candidate::text(
                format!("{} ", t.exported),
                t.summary.clone(),
            ));
        }
    }
    out
}

/// The tool a `/call` line names by the words after `/call`: its
/// exported name, `server:tool`, or `server tool`; and how many words
/// that took.
fn tool_of<'c>(catalog: &'c Catalog, words: &[&str]) -> Option<(&'c CatalogTool, usize)> {
    let first = *words.first()?;
    if let Some(tool) = catalog.tools.iter().find(|t| t.exported == first) {
        return Some((tool, 1));
    }
    let shown = |t: &CatalogTool, name: &str| t.name == name || sanitize_line(&t.name) == name;
    if let Some((server, name)) = first.split_once(':')
        && let Some(tool) = catalog
            .tools
            .iter()
            .find(|t| t.server == server && shown(t, name))
    {
        return Some((tool, 1));
    }
    let second = *words.get(1)?;
    catalog
        .tools
        .iter()
        .find(|t| t.server == first && shown(t, second))
        .map(|tool| (tool, 2))
}

/// After a `/call` target: the tool's argument names (`a` → `a=`, those
/// not given yet, required first), or after `name=` the values its
/// schema allows.
fn call_arguments(catalog: &Catalog, before: &[&str], word: &str) -> Vec<Candidate> {
    let Some((tool, used)) = tool_of(catalog, before) else {
        return Vec::new();
    };
    let given = &before[used..];
    if let Some(key) = given.last().and_then(|w| w.strip_suffix('=')) {
        if key.contains('=') {
            return Vec::new();
        }
        let Some(parameter) = tool.parameters.iter().find(|p| p.name == key) else {
            return Vec::new();
        };
        return parameter
            .values
            .iter()
            .filter(|v| v.starts_with(word))
            .map(|v| Candidate::text(format!("{} ", quote(v)), ""))
            .collect();
    }
    tool.parameters
        .iter()
        .filter(|p| p.name.starts_with(word))
        .filter(|p| {
            !given
                .iter()
                .any(|w| w.split_once('=').is_some_and(|(k, _)| k == p.name))
        })
        .map(|p| {
            let mut note = p.types.join(" | ");
            if p.required {
                note.push_str(if note.is_empty() {
                    "required"
                } else {
                    ", required"
                });
            }
            Candidate::text(format!("{}=", p.name), note)
        })
        .collect()
}

/// Argument names of the prompt a `/mcp:` line runs, for the word being
/// typed after the command (`dep` → `department=`).
fn argument_names(catalog: &Catalog, line: &str, word: &str) -> Vec<Candidate> {
    let Some(prompt) = prompt_of(catalog, line) else {
        return Vec::new();
    };
    if prompt.arguments.len() < 2 {
        return Vec::new();
    }
    prompt
        .arguments
        .iter()
        .filter(|a| a.starts_with(word))
        .map(|a| Candidate::text(format!("{a}="), ""))
        .collect()
}

/// The held prompt a `/mcp:<server>:<prompt>` line names.
fn prompt_of<'a>(catalog: &'a Catalog, line: &str) -> Option<&'a CatalogPrompt> {
    let command = rho_proto_core::features::prompts::parse_command(line).ok()?;
    let mut of_server = catalog
        .prompts
        .iter()
        .filter(|p| p.server == command.server);
    of_server
        .clone()
        .find(|p| p.name == command.prompt)
        .or_else(|| of_server.find(|p| sanitize_line(&p.name) == command.prompt))
}

/// What the cursor is in, for the palette.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Context {
    /// Nothing the palette offers for.
    None,
    /// The value of a prompt argument.
    Argument {
        server: String,
        prompt: String,
        argument: String,
        /// The value as typed up to the cursor, quotes taken off.
        typed: String,
        /// The byte range of the whole value in the line (what a pick
        /// replaces).
        range: (usize, usize),
        /// The other arguments already given (`context.arguments`).
        given: BTreeMap<String, String>,
        /// The prompt takes one argument: the value is the rest of the
        /// line, unquoted.
        single: bool,
    },
    /// An `@` token: the fragment after the `@` up to the cursor.
    Mention {
        /// The byte range of the whole token, `@` included.
        range: (usize, usize),
        fragment: String,
    },
}

/// What `line`'s `cursor` is in.
pub(crate) fn context(catalog: &Catalog, line: &str, cursor: usize) -> Context {
    if let Some(mention) = mention(line, cursor) {
        return mention;
    }
    let Some(prompt) = prompt_of(catalog, line) else {
        return Context::None;
    };
    // Where the arguments start: after the command word (which `/mcp:`
    // lines write without blanks, or quoted; the first blank outside
    // quotes ends it).
    let Some(rest_start) = command_end(line) else {
        return Context::None;
    };
    if cursor < rest_start || prompt.arguments.is_empty() {
        return Context::None;
    }
    if let [only] = prompt.arguments.as_slice() {
        let start = rest_start + (line[rest_start..].len() - line[rest_start..].trim_start().len());
        let start = start.min(cursor);
        return Context::Argument {
            server: prompt.server.clone(),
            prompt: prompt.name.clone(),
            argument: only.clone(),
            typed: line[start..cursor].to_owned(),
            range: (start, line.len()),
            given: BTreeMap::new(),
            single: true,
        };
    }
    let words = words(line, rest_start);
    let Some(current) = words
        .iter()
        .position(|w| w.start <= cursor && cursor <= w.end)
    else {
        return Context::None;
    };
    let word = &words[current];
    let Some(eq) = line[word.start..word.end].find('=') else {
        return Context::None;
    };
    let value_start = word.start + eq + 1;
    if cursor < value_start {
        return Context::None;
    }
    let argument = line[word.start..word.start + eq].to_owned();
    if !prompt.arguments.contains(&argument) {
        return Context::None;
    }
    let mut given = BTreeMap::new();
    for (i, other) in words.iter().enumerate() {
        if i == current {
            continue;
        }
        if let Some((key, value)) = other.text.split_once('=')
            && key != argument
            && prompt.arguments.iter().any(|a| a == key)
        {
            given.insert(key.to_owned(), value.to_owned());
        }
    }
    Context::Argument {
        server: prompt.server.clone(),
        prompt: prompt.name.clone(),
        argument,
        typed: unquote(&line[value_start..cursor]),
        range: (value_start, word.end),
        given,
        single: false,
    }
}

/// The `@` token the cursor is in or ends, if any: it starts the line or
/// follows a blank.
fn mention(line: &str, cursor: usize) -> Option<Context> {
    let start = line[..cursor]
        .rfind(char::is_whitespace)
        .map_or(0, |i| i + 1);
    let end = line[cursor..]
        .find(char::is_whitespace)
        .map_or(line.len(), |i| cursor + i);
    let token = &line[start..cursor];
    let fragment = token.strip_prefix('@')?;
    Some(Context::Mention {
        range: (start, end),
        fragment: fragment.to_owned(),
    })
}

/// Where the command word of a `/mcp:` line ends (its first blank
/// outside quotes).
fn command_end(line: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// One word of the arguments: its byte span, and its text with quotes
/// taken off.
struct Word {
    start: usize,
    end: usize,
    text: String,
}

/// The words after `from`, split as the prompt's argument rules split
/// them (blanks separate, `'…'` and `"…"` quote, `\` escapes). A quote
/// left open runs to the end of the line.
fn words(line: &str, from: usize) -> Vec<Word> {
    let mut out = Vec::new();
    let mut current: Option<Word> = None;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line[from..].char_indices() {
        let at = from + i;
        if escaped {
            escaped = false;
            if let Some(w) = current.as_mut() {
                w.text.push(c);
                w.end = at + c.len_utf8();
            }
            continue;
        }
        if quote.is_none() && c.is_whitespace() {
            out.extend(current.take());
            continue;
        }
        let w = current.get_or_insert(Word {
            start: at,
            end: at,
            text: String::new(),
        });
        w.end = at + c.len_utf8();
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => w.text.push(c),
            (_, '\\') => escaped = true,
            (_, c) => w.text.push(c),
        }
    }
    out.extend(current);
    out
}

/// A value as typed so far, quotes taken off.
fn unquote(typed: &str) -> String {
    words(typed, 0)
        .into_iter()
        .map(|w| w.text)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value written so the argument rules read it back whole.
pub(crate) fn quote(value: &str) -> String {
    if !value.is_empty() && !value.contains(|c: char| c.is_whitespace() || "'\"\\".contains(c)) {
        return value.to_owned();
    }
    if !value.contains('\'') {
        return format!("'{value}'");
    }
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The palette rows for a server's suggested `values` of an argument:
/// each made safe for the terminal, the value already typed whole left
/// out, and quoted for a prompt of several arguments.
pub(crate) fn value_candidates(values: &[String], typed: &str, single: bool) -> Vec<Candidate> {
    values
        .iter()
        .map(|v| sanitize_line(v).into_owned())
        .filter(|v| !v.is_empty() && v != typed)
        .map(|v| {
            let replacement = if single { v } else { quote(&v) };
            Candidate::text(replacement, "")
        })
        .collect()
}

/// How many workspace files the `@` palette shows at most.
pub(crate) const FILE_ROWS: usize = 50;

/// The `@` palette: held resources whose URI contains the fragment, of
/// every server, first (a pick reads them); then templates, marked and
/// inserted as text; then workspace files whose path contains it
/// (inserted as `@path`).
pub(crate) fn mention_candidates(
    catalog: &Catalog,
    fragment: &str,
    files: &[String],
) -> Vec<Candidate> {
    let mut resources = Vec::new();
    let mut templates = Vec::new();
    for held in &catalog.resources {
        let server = sanitize_line(&held.server);
        for row in match_fragment(&held.resources, &held.templates, fragment) {
            let shown = sanitize_line(&row.uri).into_owned();
            let name = sanitize_line(&row.name);
            if row.template {
                templates.push(Candidate::text(
                    shown,
                    format!("{server} · {name} · template"),
                ));
            } else {
                resources.push(Candidate {
                    replacement: shown,
                    note: format!("{server} · {name}"),
                    pick: Pick::Attach {
                        server: held.server.clone(),
                        uri: row.uri,
                    },
                });
            }
        }
    }
    let needle = fragment.to_lowercase();
    let files = files
        .iter()
        .filter(|f| f.to_lowercase().contains(&needle))
        .take(FILE_ROWS)
        .map(|f| Candidate::text(format!("@{} ", sanitize_line(f)), "file"));
    resources
        .into_iter()
        .chain(templates)
        .chain(files)
        .collect()
}

/// The `/help` text.
pub(crate) fn help() -> String {
    let mut text = String::from("commands:\n");
    for (name, note) in COMMANDS {
        text.push_str(&format!("  {name:<10} {note}\n"));
    }
    text.push_str("  /mcp:<server>:<prompt> [arguments]  the prompt's user turn\n");
    // Not in the menu, which shows eight commands: `/app` is `/call`'s
    // sibling, and completes as it does.
    text.push_str(
        "  /app <tool or server:tool> [arguments]  the call, with its MCP App view in a browser,\n\
         \x20   open beside the prompt (Ctrl-C with no call running closes it)\n",
    );
    text.push_str(
        "keys:\n\
         \x20 Tab completes commands, prompts, argument names, servers and tools.\n\
         \x20 In a prompt argument's value the server's suggestions appear under the line\n\
         \x20 as you type; Tab (or Down/Up) highlights one, Tab/arrows move, Enter picks it,\n\
         \x20 Escape closes; a pick replaces that value alone.\n\
         \x20 @<fragment> anywhere in a line offers resources first (a pick reads it and\n\
         \x20 attaches it as [resource: <uri> · reading]), templates (inserted as text),\n\
         \x20 then workspace files (inserted as @path). Backspace on an attachment removes\n\
         \x20 it and cancels its read; Enter waits until every read is done. A line that is\n\
         \x20 not a command but carries attachments prints the message a model would get.\n\
         \x20 Ctrl-C cancels a running call (else closes the newest view); Ctrl-D or /quit leaves.\n\
         \x20 In a server's form: Enter keeps a default or skips an optional field,\n\
         \x20 Ctrl-D declines the form, Ctrl-C cancels it and the call; the form says\n\
         \x20 which answer the server was sent.\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        Catalog {
            servers: vec!["everything".into(), "fs".into()],
            tools: vec![
                CatalogTool {
                    exported: "mcp__everything__echo".into(),
                    server: "everything".into(),
                    name: "echo".into(),
                    summary: "Echoes back the input".into(),
                    parameters: rho_host::parameters::parameters(&serde_json::json!({
                        "properties": {
                            "message": {"type": "string"},
                            "mode": {"type": "string", "enum": ["loud", "soft", "two words"]}
                        },
                        "required": ["message"]
                    })),
                },
                CatalogTool {
                    exported: "mcp__everything__add".into(),
                    server: "everything".into(),
                    name: "add".into(),
                    summary: String::new(),
                    parameters: Vec::new(),
                },
            ],
            prompts: vec![
                CatalogPrompt {
                    server: "everything".into(),
                    name: "args-prompt".into(),
                    arguments: vec!["city".into(), "state".into()],
                    note: "city*, state".into(),
                },
                CatalogPrompt {
                    server: "docs".into(),
                    name: "search".into(),
                    arguments: vec!["query".into()],
                    note: "query*".into(),
                },
            ],
            resources: vec![ServerResources {
                server: "everything".into(),
                resources: vec![resource("demo://doc/architecture.md", "architecture.md")],
                templates: vec![
                    ResourceTemplate::from_value(&serde_json::json!({
                        "uriTemplate": "demo://text/{id}",
                        "name": "Dynamic"
                    }))
                    .expect("template"),
                ],
            }],
        }
    }

    fn resource(uri: &str, name: &str) -> Resource {
        Resource::from_value(&serde_json::json!({"uri": uri, "name": name})).expect("resource")
    }

    /// An argument context as (argument, typed, range, given).
    type Found = (String, String, (usize, usize), Vec<(String, String)>);

    fn argument(line: &str, cursor: usize) -> Found {
        match context(&catalog(), line, cursor) {
            Context::Argument {
                argument,
                typed,
                range,
                given,
                ..
            } => (argument, typed, range, given.into_iter().collect()),
            other => panic!("not an argument: {other:?}"),
        }
    }

    #[test]
    fn the_cursor_in_a_value_names_the_argument_and_the_others_given() {
        let line = "/mcp:everything:args-prompt city=Pa state=Texas";
        assert_eq!(
            argument(line, 35),
            (
                "city".into(),
                "Pa".into(),
                (33, 35),
                vec![("state".into(), "Texas".into())]
            )
        );
        // In the middle of a value: the typed part up to the cursor, the
        // whole value as the range.
        assert_eq!(argument(line, 34).1, "P");
        // A quoted value is read without its quotes.
        let quoted = "/mcp:everything:args-prompt state='New Yo";
        assert_eq!(argument(quoted, quoted.len()).1, "New Yo");
        // Before the `=`, in the command, or past the arguments: nothing.
        assert_eq!(context(&catalog(), line, 30), Context::None);
        assert_eq!(context(&catalog(), line, 10), Context::None);
        assert_eq!(
            context(&catalog(), "/mcp:everything:args-prompt size=3", 34),
            Context::None
        );
        assert_eq!(
            context(&catalog(), "/mcp:everything:nosuch a=b", 26),
            Context::None
        );
    }

    #[test]
    fn a_single_argument_prompt_takes_the_rest_of_the_line_as_its_value() {
        let line = "/mcp:docs:search how do";
        let Context::Argument {
            typed,
            range,
            single,
            ..
        } = context(&catalog(), line, line.len())
        else {
            panic!("argument")
        };
        assert_eq!((typed.as_str(), range, single), ("how do", (17, 23), true));
        let empty = "/mcp:docs:search ";
        assert!(matches!(
            context(&catalog(), empty, empty.len()),
            Context::Argument { typed, .. } if typed.is_empty()
        ));
    }

    #[test]
    fn an_at_token_anywhere_is_a_mention_and_matches_resources_templates_then_files() {
        let line = "compare @arch with it";
        assert_eq!(
            context(&catalog(), line, 13),
            Context::Mention {
                range: (8, 13),
                fragment: "arch".into()
            }
        );
        // `a@b` is not a mention.
        assert_eq!(context(&catalog(), "mail a@b", 8), Context::None);
        let files = vec!["docs/arch.txt".to_owned(), "src/main.rs".to_owned()];
        let rows = mention_candidates(&catalog(), "demo", &files);
        let shown: Vec<(&str, &str)> = rows
            .iter()
            .map(|c| (c.replacement.as_str(), c.note.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("demo://doc/architecture.md", "everything · architecture.md"),
                ("demo://text/{id}", "everything · Dynamic · template"),
            ]
        );
        assert!(matches!(&rows[0].pick, Pick::Attach { server, uri }
            if server == "everything" && uri == "demo://doc/architecture.md"));
        assert_eq!(rows[1].pick, Pick::Insert);
        let rows = mention_candidates(&catalog(), "arch", &files);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].replacement, "@docs/arch.txt ");
    }

    #[test]
    fn suggested_values_are_sanitized_quoted_and_the_typed_one_left_out() {
        let values = vec![
            "Engineering".to_owned(),
            "New York".to_owned(),
            "it's".to_owned(),
            "Eng".to_owned(),
            "bad\x1b[2J".to_owned(),
        ];
        let rows: Vec<String> = value_candidates(&values, "Eng", false)
            .into_iter()
            .map(|c| c.replacement)
            .collect();
        assert_eq!(rows[..3], ["Engineering", "'New York'", "\"it's\""]);
        assert_eq!(rows.len(), 4);
        assert!(!rows[3].contains('\x1b'), "{:?}", rows[3]);
        let single = value_candidates(&["New York".to_owned()], "", true);
        assert_eq!(single[0].replacement, "New York");
    }

    #[test]
    fn argument_names_complete_after_a_prompt_command() {
        assert_eq!(replacements("/mcp:everything:args-prompt ci"), ["city="]);
        assert_eq!(
            replacements("/mcp:everything:args-prompt city=Paris s"),
            ["state="]
        );
        assert!(replacements("/mcp:everything:args-prompt city=s").is_empty());
    }

    fn replacements(line: &str) -> Vec<String> {
        let word_start = super::super::editor::word_start(line, line.len());
        complete(&catalog(), line, word_start, line.len())
            .into_iter()
            .map(|c| c.replacement)
            .collect()
    }

    #[test]
    fn lines_become_commands() {
        assert_eq!(parse("  "), Command::Nothing);
        assert_eq!(parse("/mcp"), Command::Status);
        assert_eq!(parse("/doctor "), Command::Doctor);
        assert_eq!(parse("/tools"), Command::Tools(None));
        assert_eq!(parse("/tools fs"), Command::Tools(Some("fs".into())));
        assert_eq!(
            parse("/call everything:echo message=hi there"),
            Command::Call {
                target: "everything:echo".into(),
                arguments: "message=hi there".into(),
                app: false,
            }
        );
        assert_eq!(
            parse(r#"/call mcp__everything__echo {"message": "x"}"#),
            Command::Call {
                target: "mcp__everything__echo".into(),
                arguments: r#"{"message": "x"}"#.into(),
                app: false,
            }
        );
        assert_eq!(
            parse("/app pdf:display_pdf url=/tmp/a.pdf"),
            Command::Call {
                target: "pdf:display_pdf".into(),
                arguments: "url=/tmp/a.pdf".into(),
                app: true,
            }
        );
        assert_eq!(parse("/quit"), Command::Quit);
        assert_eq!(parse("/exit"), Command::Quit);
    }

    #[test]
    fn bad_lines_are_refused_with_what_to_do() {
        let Command::Refused(why) = parse("/call") else {
            panic!("refused")
        };
        assert!(why.starts_with("usage: /call"), "{why}");
        let Command::Refused(why) = parse("/bogus\x1b[31m") else {
            panic!("refused")
        };
        assert!(why.contains("/help") && !why.contains('\x1b'), "{why:?}");
        let Command::Refused(why) = parse("hello") else {
            panic!("refused")
        };
        assert!(why.contains("start with `/`"), "{why}");
        assert!(matches!(parse("/mcp now"), Command::Refused(_)));
        assert!(matches!(parse("/tools a b"), Command::Refused(_)));
        assert_eq!(parse("/login fx"), Command::Login("fx".into()));
        assert!(matches!(parse("/login"), Command::Refused(_)));
    }

    #[test]
    fn slash_completes_the_built_in_commands() {
        let mut all: Vec<String> = COMMANDS.iter().map(|(n, _)| format!("{n} ")).collect();
        // Prompt commands come from the lists held since connect.
        all.push("/mcp:everything:args-prompt ".into());
        all.push("/mcp:docs:search ".into());
        assert_eq!(replacements("/"), all);
        assert_eq!(replacements("/do"), ["/doctor "]);
    }

    #[test]
    fn call_completes_servers_then_their_tools_and_exported_names() {
        assert_eq!(replacements("/call ev"), ["everything:"]);
        assert_eq!(
            replacements("/call everything:"),
            ["everything:echo ", "everything:add "]
        );
        assert_eq!(replacements("/call everything:e"), ["everything:echo "]);
        assert_eq!(
            replacements("/call mcp__everything__e"),
            ["mcp__everything__echo "]
        );
        // A server without tools is not offered as a call target.
        assert_eq!(replacements("/call f"), Vec::<String>::new());
    }

    #[test]
    fn call_completes_argument_names_then_enum_values_in_every_target_form() {
        for target in [
            "everything:echo",
            "everything echo",
            "mcp__everything__echo",
        ] {
            assert_eq!(
                replacements(&format!("/call {target} ")),
                ["message=", "mode="],
                "{target}"
            );
            assert_eq!(replacements(&format!("/call {target} mes")), ["message="]);
            assert_eq!(
                replacements(&format!("/call {target} message=hi m")),
                ["mode="],
                "a given argument is not offered again"
            );
            assert_eq!(
                replacements(&format!("/call {target} mode=")),
                ["loud ", "soft ", "'two words' "]
            );
            assert_eq!(replacements(&format!("/call {target} mode=s")), ["soft "]);
        }
        assert_eq!(replacements("/call everything:add x"), Vec::<String>::new());
    }

    #[test]
    fn call_completes_enum_values_and_shows_types_behind_a_ref() {
        // As the TypeScript SDK writes a zod schema with `.meta({id})`.
        let catalog = Catalog {
            servers: vec!["notes".into()],
            tools: vec![CatalogTool {
                exported: "mcp__notes__post-page".into(),
                server: "notes".into(),
                name: "post-page".into(),
                summary: String::new(),
                parameters: rho_host::parameters::parameters(&serde_json::json!({
                    "properties": {
                        "parent": {"anyOf": [{"$ref": "#/$defs/PageParent"}, {"type": "string"}]},
                        "status": {"$ref": "#/$defs/Status"}
                    },
                    "required": ["parent"],
                    "$defs": {
                        "PageParent": {"type": "object"},
                        "Status": {"type": "string", "enum": ["draft", "published"]}
                    }
                })),
            }],
            ..Catalog::default()
        };
        let offered = |line: &str| -> Vec<(String, String)> {
            let word_start = super::super::editor::word_start(line, line.len());
            complete(&catalog, line, word_start, line.len())
                .into_iter()
                .map(|c| (c.replacement, c.note))
                .collect()
        };
        assert_eq!(
            offered("/call notes:post-page "),
            [
                ("parent=".to_owned(), "object | string, required".to_owned()),
                ("status=".to_owned(), "string".to_owned()),
            ]
        );
        assert_eq!(
            offered("/call notes:post-page status="),
            [
                ("draft ".to_owned(), String::new()),
                ("published ".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn prompt_commands_complete_from_the_held_lists_and_parse_whole() {
        assert_eq!(replacements("/mcp:ev"), ["/mcp:everything:args-prompt "]);
        assert_eq!(
            parse("/mcp:everything:args-prompt city=Paris"),
            Command::Prompt("/mcp:everything:args-prompt city=Paris".into())
        );
    }

    #[test]
    fn tools_completes_server_names() {
        assert_eq!(replacements("/tools f"), ["fs"]);
        assert_eq!(replacements("/login f"), ["fs"]);
        assert_eq!(replacements("/reconnect f"), ["fs"]);
    }

    #[test]
    fn reconnect_takes_one_server() {
        assert_eq!(parse("/reconnect fx"), Command::Reconnect("fx".into()));
        assert!(matches!(parse("/reconnect"), Command::Refused(_)));
        assert!(matches!(parse("/reconnect a b"), Command::Refused(_)));
    }
}
