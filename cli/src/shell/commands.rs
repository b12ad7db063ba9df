//! The shell's commands: what a typed line asks for, and what `Tab`
//! offers, both pure so they are tested without a session.
//!
//! Completion needs no round-trip: commands are fixed, and servers and
//! tools come from the lists held since connect ([`Catalog`]). A
//! `/call` target is an exported tool name or `<server>:<tool>` (the
//! server's own tool name), so a person can call a tool whose exported
//! name they do not know.

use super::editor::Candidate;

/// The built-in commands, with the note the menu shows beside each.
pub(crate) const COMMANDS: &[(&str, &str)] = &[
    ("/mcp", "servers, transport, status, tools"),
    ("/doctor", "one health row per server"),
    ("/tools", "exported tools [server]"),
    ("/call", "<tool or server:tool> [JSON or key=value...]"),
    ("/help", "these commands"),
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
    /// `/call <target> [arguments]`.
    Call {
        /// An exported name, or `server:tool`.
        target: String,
        /// The rest of the line: a JSON object or `key=value` words.
        arguments: String,
    },
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
        "/call" => {
            let (target, arguments) = match rest.split_once(char::is_whitespace) {
                Some((target, arguments)) => (target, arguments.trim()),
                None => (rest, ""),
            };
            if target.is_empty() {
                return Command::Refused(
                    "usage: /call <tool or server:tool> [JSON object or key=value...]".into(),
                );
            }
            Command::Call {
                target: target.to_owned(),
                arguments: arguments.to_owned(),
            }
        }
        "/help" | "/?" => Command::Help,
        "/quit" | "/exit" => Command::Quit,
        "/mcp" | "/doctor" => Command::Refused(format!("{word} takes no arguments")),
        _ if word.starts_with('/') => Command::Refused(format!(
            "unknown command `{}`; /help lists the commands",
            rho_proto_core::text::terminal::sanitize_line(word)
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
    /// Every prompt command (`/mcp:<server>:<prompt>`), with its arguments
    /// as the menu shows them.
    pub(crate) prompts: Vec<(String, String)>,
}

/// One tool, as completion shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CatalogTool {
    pub(crate) exported: String,
    pub(crate) server: String,
    pub(crate) name: String,
    pub(crate) summary: String,
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
            .map(|(name, note)| Candidate {
                replacement: format!("{name} "),
                note: (*note).to_owned(),
            })
            .chain(
                catalog
                    .prompts
                    .iter()
                    .filter(|(command, _)| command.starts_with(word))
                    .map(|(command, note)| Candidate {
                        replacement: format!("{command} "),
                        note: note.clone(),
                    }),
            )
            .collect(),
        ["/tools"] => catalog
            .servers
            .iter()
            .filter(|s| s.starts_with(word))
            .map(|s| Candidate {
                replacement: s.clone(),
                note: String::new(),
            })
            .collect(),
        ["/call"] => call_targets(catalog, word),
        _ => Vec::new(),
    }
}

/// `/call` targets: `server:tool` for a word with a `:` in it (or one that
/// starts a server's name), exported names otherwise.
fn call_targets(catalog: &Catalog, word: &str) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    if let Some((server, tool)) = word.split_once(':') {
        for t in &catalog.tools {
            if t.server == server && t.name.starts_with(tool) {
                out.push(Candidate {
                    replacement: format!("{}:{} ", t.server, t.name),
                    note: t.summary.clone(),
                });
            }
        }
        return out;
    }
    for server in &catalog.servers {
        if server.starts_with(word) && catalog.tools.iter().any(|t| &t.server == server) {
            out.push(Candidate {
                replacement: format!("{server}:"),
                note: "server".into(),
            });
        }
    }
    for t in &catalog.tools {
        if t.exported.starts_with(word) {
            out.push(Candidate {
                replacement: format!("{} ", t.exported),
                note: t.summary.clone(),
            });
        }
    }
    out
}

/// The `/help` text.
pub(crate) fn help() -> String {
    let mut text = String::from("commands:\n");
    for (name, note) in COMMANDS {
        text.push_str(&format!("  {name:<9} {note}\n"));
    }
    text.push_str("  /mcp:<server>:<prompt> [arguments]  the prompt's user turn\n");
    text.push_str(
        "Tab completes commands, prompts, servers and tools; Ctrl-C cancels a running call;\n\
         Ctrl-D or /quit leaves.\n",
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
                },
                CatalogTool {
                    exported: "mcp__everything__add".into(),
                    server: "everything".into(),
                    name: "add".into(),
                    summary: String::new(),
                },
            ],
            prompts: vec![("/mcp:everything:args-prompt".into(), "city*, state".into())],
        }
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
                arguments: "message=hi there".into()
            }
        );
        assert_eq!(
            parse(r#"/call mcp__everything__echo {"message": "x"}"#),
            Command::Call {
                target: "mcp__everything__echo".into(),
                arguments: r#"{"message": "x"}"#.into()
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
    }

    #[test]
    fn slash_completes_the_built_in_commands() {
        let mut all: Vec<String> = COMMANDS.iter().map(|(n, _)| format!("{n} ")).collect();
        // Prompt commands come from the lists held since connect.
        all.push("/mcp:everything:args-prompt ".into());
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
        // After the target, nothing is guessed.
        assert_eq!(
            replacements("/call everything:echo mes"),
            Vec::<String>::new()
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
    }
}
