//! The names a person types for what servers list — servers, tools,
//! prompts, resources, commands — resolved one way for every surface of a
//! host (`rho mcp call` and the shell's `/call` alike), with a "did you
//! mean" for a near miss.
//!
//! A tool is named three ways, each accepted wherever a tool is named:
//! two words `<server> <tool>`, one word `<server>:<tool>`, or its
//! exported name (`mcp__<server>__<tool>`, or the short form). The tool's
//! own name may be given as the server lists it or in the escaped form a
//! terminal shows it in ([`sanitize_line`]): a name holding a control or
//! BIDI character is never drawn or inserted raw, so its escaped form is
//! the only one a person can type. Naming nothing is one kind of mistake,
//! whatever the thing: [`NameError`], which a CLI reports as a usage
//! error.

use rho_proto_core::runtime::registry::ExportedTool;
use rho_proto_core::text::terminal::sanitize_line;

/// A tool, resolved: which server answers it and its own name there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolTarget {
    /// The server identity.
    pub server: String,
    /// The server's own name for the tool, as `tools/call` takes it.
    pub tool: String,
    /// How many of the words given named it (1 or 2); the rest are the
    /// arguments.
    pub words: usize,
}

/// A name that names nothing: what was typed, what kind of thing, and the
/// closest known name. Every variant is the person's mistake (a usage
/// error).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// No server has this identity.
    #[error("no server `{}` is configured{}", sanitize_line(.id), hint(.suggestion))]
    UnknownServer {
        /// What was typed.
        id: String,
        /// The closest configured identity.
        suggestion: Option<String>,
    },
    /// The server lists no tool of this name.
    #[error(
        "server `{}` has no tool `{}`{}{}",
        sanitize_line(.server),
        sanitize_line(.tool),
        hint(.suggestion),
        tools_tail(.available)
    )]
    UnknownTool {
        /// The server asked.
        server: String,
        /// What was typed.
        tool: String,
        /// The closest tool name of that server.
        suggestion: Option<String>,
        /// That server's tools (their own names), in order.
        available: Vec<String>,
    },
    /// One word that is neither an exported tool name, `<server>:<tool>`,
    /// nor a server.
    #[error(
        "no tool or server `{}`{}; name a tool as `<server> <tool>`, `<server>:<tool>` or its exported name",
        sanitize_line(.typed),
        hint(.suggestion)
    )]
    Unknown {
        /// What was typed.
        typed: String,
        /// The closest server identity or exported tool name.
        suggestion: Option<String>,
    },
    /// A server was named but no tool: its tools are listed.
    #[error("name one of server `{}`'s tools: {}", sanitize_line(.server), list(.tools))]
    NoTool {
        /// The server named.
        server: String,
        /// Its tools (their own names), in order.
        tools: Vec<String>,
    },
    /// Nothing was named at all.
    #[error("name a tool: `<server> <tool>`, `<server>:<tool>` or its exported name")]
    Nothing,
}

fn hint(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(near) => format!("; did you mean `{}`?", sanitize_line(near)),
        None => String::new(),
    }
}

fn tools_tail(tools: &[String]) -> String {
    if tools.is_empty() {
        return " (it lists no tools)".into();
    }
    format!(" (its tools: {})", list(tools))
}

fn list(tools: &[String]) -> String {
    if tools.is_empty() {
        return "it lists none".into();
    }
    tools
        .iter()
        .map(|t| sanitize_line(t).into_owned())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves the first one or two of `words` to a tool of `tools` (the
/// exported tools, withdrawn ones included) on one of `servers` (every
/// configured identity): see the module docs for the forms.
pub fn resolve_tool(
    servers: &[String],
    tools: &[ExportedTool],
    words: &[&str],
) -> Result<ToolTarget, NameError> {
    let Some(&first) = words.first() else {
        return Err(NameError::Nothing);
    };
    if let Some(tool) = tools
        .iter()
        .find(|t| t.name == first || t.full_name.as_deref() == Some(first))
    {
        return Ok(ToolTarget {
            server: tool.server.clone(),
            tool: tool.tool.clone(),
            words: 1,
        });
    }
    if servers.iter().any(|s| s == first) {
        let Some(&second) = words.get(1) else {
            return Err(NameError::NoTool {
                server: first.to_owned(),
                tools: server_tools(tools, first).map(|t| t.tool.clone()).collect(),
            });
        };
        return server_tool(tools, first, second).map(|tool| ToolTarget {
            server: first.to_owned(),
            tool,
            words: 2,
        });
    }
    if let Some((server, tool)) = first.split_once(':') {
        if servers.iter().any(|s| s == server) {
            return server_tool(tools, server, tool).map(|tool| ToolTarget {
                server: server.to_owned(),
                tool,
                words: 1,
            });
        }
        return Err(NameError::UnknownServer {
            id: server.to_owned(),
            suggestion: did_you_mean(server, servers.iter().map(String::as_str)).map(str::to_owned),
        });
    }
    let known = servers
        .iter()
        .map(String::as_str)
        .chain(tools.iter().map(|t| t.name.as_str()));
    Err(NameError::Unknown {
        typed: first.to_owned(),
        suggestion: did_you_mean(first, known).map(str::to_owned),
    })
}

/// The tool `name` of `server` among `tools`: its own name, its exported
/// name, or its escaped form; else [`NameError::UnknownTool`] with the
/// closest of that server's tool names.
pub fn server_tool(tools: &[ExportedTool], server: &str, name: &str) -> Result<String, NameError> {
    let mut of_server = server_tools(tools, server);
    if let Some(tool) = of_server
        .clone()
        .find(|t| t.tool == name || t.name == name || t.full_name.as_deref() == Some(name))
    {
        return Ok(tool.tool.clone());
    }
    let mut shown = of_server.clone().filter(|t| sanitize_line(&t.tool) == name);
    if let (Some(only), None) = (shown.next(), shown.next()) {
        return Ok(only.tool.clone());
    }
    let names: Vec<String> = of_server
        .by_ref()
        .map(|t| sanitize_line(&t.tool).into_owned())
        .collect();
    Err(NameError::UnknownTool {
        server: server.to_owned(),
        tool: name.to_owned(),
        suggestion: did_you_mean(name, names.iter().map(String::as_str)).map(str::to_owned),
        available: of_server_names(tools, server),
    })
}

fn of_server_names(tools: &[ExportedTool], server: &str) -> Vec<String> {
    server_tools(tools, server)
        .map(|t| t.tool.clone())
        .collect()
}

fn server_tools<'t>(
    tools: &'t [ExportedTool],
    server: &'t str,
) -> impl Iterator<Item = &'t ExportedTool> + Clone {
    tools.iter().filter(move |t| t.server == server)
}

/// The one of `known` closest to `typed`, if it is close enough to be
/// what was meant: a case-insensitive match, a name `typed` is a prefix
/// of (or that is a prefix of `typed`), or one within an edit distance of
/// a third of its length (at least 1, at most 3). Ties go to the first.
pub fn did_you_mean<'k>(typed: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let typed_lower = typed.to_lowercase();
    let mut best: Option<(usize, &'k str)> = None;
    for name in known {
        if name == typed {
            continue;
        }
        let lower = name.to_lowercase();
        let score = if lower == typed_lower {
            0
        } else if !typed.is_empty()
            && (lower.starts_with(&typed_lower) || typed_lower.starts_with(&lower))
        {
            1
        } else {
            let distance = edit_distance(&typed_lower, &lower);
            let allowed = (name.chars().count() / 3).clamp(1, 3);
            if distance > allowed {
                continue;
            }
            1 + distance
        };
        if best.is_none_or(|(b, _)| score < b) {
            best = Some((score, name));
        }
    }
    best.map(|(_, name)| name)
}

/// Edit distance over characters where swapping two neighbours is one
/// edit (optimal string alignment): `ecoh` is one edit from `echo`.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::runtime::registry::ToolHints;

    fn tool(server: &str, name: &str) -> ExportedTool {
        ExportedTool {
            name: format!("mcp__{server}__{name}"),
            full_name: None,
            server: server.into(),
            tool: name.into(),
            title: None,
            description: String::new(),
            input_schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
            output_schema: None,
            hints: ToolHints::default(),
            meta: None,
            withdrawn: false,
        }
    }

    fn fixture() -> (Vec<String>, Vec<ExportedTool>) {
        (
            vec!["everything".into(), "h".into()],
            vec![
                tool("everything", "get-sum"),
                tool("everything", "echo"),
                tool("h", "evil\x1b]0;pwned\x07\u{202e}"),
            ],
        )
    }

    fn target(server: &str, tool: &str, words: usize) -> ToolTarget {
        ToolTarget {
            server: server.into(),
            tool: tool.into(),
            words,
        }
    }

    #[test]
    fn a_tool_is_named_by_two_words_by_server_colon_tool_or_by_its_exported_name() {
        let (servers, tools) = fixture();
        let resolve = |words: &[&str]| resolve_tool(&servers, &tools, words);
        assert_eq!(
            resolve(&["everything", "get-sum", "a=2"]),
            Ok(target("everything", "get-sum", 2))
        );
        assert_eq!(
            resolve(&["everything:get-sum", "a=2"]),
            Ok(target("everything", "get-sum", 1))
        );
        assert_eq!(
            resolve(&["mcp__everything__echo"]),
            Ok(target("everything", "echo", 1))
        );
        assert_eq!(
            resolve(&["h:evil\\x1b]0;pwned\\x07\\u{202e}"]),
            Ok(target("h", "evil\x1b]0;pwned\x07\u{202e}", 1)),
            "the escaped form a terminal shows"
        );
    }

    #[test]
    fn unknown_names_say_what_is_closest() {
        let (servers, tools) = fixture();
        let resolve = |words: &[&str]| resolve_tool(&servers, &tools, words);
        let error = resolve(&["everything", "get-summ"]).expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "server `everything` has no tool `get-summ`; did you mean `get-sum`? (its tools: get-sum, echo)"
        );
        let error = resolve(&["everythin:echo"]).expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "no server `everythin` is configured; did you mean `everything`?"
        );
        let error = resolve(&["evrything"]).expect_err("unknown");
        assert!(
            error.to_string().contains("did you mean `everything`?"),
            "{error}"
        );
        let error = resolve(&["zzz"]).expect_err("unknown");
        assert!(!error.to_string().contains("did you mean"), "{error}");
        assert_eq!(resolve(&[]), Err(NameError::Nothing));
    }

    #[test]
    fn a_server_without_a_tool_lists_its_tools_escaped() {
        let (servers, tools) = fixture();
        let error = resolve_tool(&servers, &tools, &["h"]).expect_err("no tool");
        let text = error.to_string();
        assert_eq!(
            text,
            "name one of server `h`'s tools: evil\\x1b]0;pwned\\x07\\u{202e}"
        );
        let error = resolve_tool(&servers, &tools, &["everything"]).expect_err("no tool");
        assert_eq!(
            error.to_string(),
            "name one of server `everything`'s tools: get-sum, echo"
        );
    }

    #[test]
    fn did_you_mean_takes_case_prefixes_and_small_edits_only() {
        let known = ["get-sum", "echo", "longRunningOperation"];
        assert_eq!(did_you_mean("ECHO", known), Some("echo"));
        assert_eq!(
            did_you_mean("longRunning", known),
            Some("longRunningOperation")
        );
        assert_eq!(did_you_mean("ecoh", known), Some("echo"));
        assert_eq!(did_you_mean("zebra", known), None);
        assert_eq!(
            did_you_mean("echo", known),
            None,
            "an exact name is no suggestion"
        );
    }
}
