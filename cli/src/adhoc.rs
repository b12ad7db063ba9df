//! Ad-hoc servers: `--stdio "<command> [args]"` or `--url URL` on `rho mcp
//! list`, `show`, `call`, `prompt`, `read` and `complete`, to try a server
//! without a config file (as the MCP Inspector's CLI does). `list` and
//! `show` always start it (there is no config to check), and `show` gives
//! its origin as ad hoc.
//!
//! The ad-hoc server replaces the config file for that run (no file is
//! read) and its identity is always `adhoc`, so exported tool names and
//! `--json` output are predictable (`mcp__adhoc__echo`). It is built as a
//! one-entry config and read by the real config parser, so it gets every
//! rule a configured server gets: https off loopback, the sanitized base
//! environment (add variables with `--env`), budgets, shutdown.
//!
//! The `--stdio` command line is split the way a POSIX shell splits words,
//! and never run through a shell: blanks separate words; `'...'` keeps
//! everything literally; `"..."` keeps everything but `\"`, `\\`, `\$`,
//! `` \` `` and backslash-newline, which lose their backslash; outside
//! quotes a backslash keeps the next character literally. Nothing is
//! expanded (`$HOME`, `~`, `*` and `#` are passed as typed), and an
//! unquoted `|`, `&`, `;`, `<` or `>` is refused, since only a shell could
//! honour it.

use std::path::PathBuf;

use clap::Args;

use crate::config_edit::{ConfigDocument, NewEntry, NewTransport};
use rho_host::LoadedConfig;

/// The identity of every ad-hoc server.
pub(crate) const ID: &str = "adhoc";

/// The ad-hoc server options of `list`, `show`, `call`, `prompt`, `read`
/// and `complete`.
#[derive(Args, Debug, Default)]
pub(crate) struct AdhocArgs {
    /// Use one stdio server instead of the config file: its command line,
    /// split like a shell would (quotes, backslashes) but never run through
    /// one. Its id is `adhoc`.
    #[arg(long, value_name = "COMMAND", conflicts_with = "url")]
    pub(crate) stdio: Option<String>,
    /// Use one Streamable HTTP server instead of the config file (https,
    /// or http on loopback). Its id is `adhoc`.
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,
    /// An environment variable for the --stdio server.
    #[arg(
        long = "env",
        short = 'e',
        value_name = "KEY=VALUE",
        requires = "stdio"
    )]
    env: Vec<String>,
    /// An HTTP header for the --url server (`NAME: VALUE` works too).
    #[arg(
        long = "header",
        short = 'H',
        value_name = "NAME=VALUE",
        requires = "url"
    )]
    header: Vec<String>,
}

impl AdhocArgs {
    /// Whether an ad-hoc server was asked for.
    pub(crate) fn given(&self) -> bool {
        self.stdio.is_some() || self.url.is_some()
    }

    /// The flag that asked for it, for messages.
    fn flag(&self) -> &'static str {
        if self.stdio.is_some() {
            "--stdio"
        } else {
            "--url"
        }
    }
}

/// The server, the thing named on it and the remaining words of a command
/// whose first positionals are `<ID> <NAME> [WORDS]...` (prompt, read,
/// complete): with --stdio or --url there is no id, so the words move up
/// one place and the server is [`ID`]. `None` when no name was given.
pub(crate) fn shift<'a>(
    adhoc: bool,
    first: &'a str,
    second: &'a Option<String>,
    rest: &[String],
) -> Option<(&'a str, &'a str, Vec<String>)> {
    if adhoc {
        let words = second.iter().chain(rest).cloned().collect();
        return Some((ID, first, words));
    }
    Some((first, second.as_deref()?, rest.to_vec()))
}

/// The one-entry config of the ad-hoc server.
pub(crate) fn load(args: &AdhocArgs) -> Result<LoadedConfig, String> {
    let transport = match (&args.stdio, &args.url) {
        (Some(line), _) => {
            let words = split(line).map_err(|e| format!("--stdio: {e}"))?;
            let Some((command, rest)) = words.split_first() else {
                return Err("--stdio: the command line is empty".into());
            };
            NewTransport::Stdio {
                command: command.clone(),
                args: rest.to_vec(),
                cwd: None,
                env: crate::manage::pairs("--env", &args.env, false)?,
                env_from_env: Vec::new(),
            }
        }
        (None, Some(url)) => NewTransport::Http {
            url: url.clone(),
            headers: crate::manage::pairs("--header", &args.header, true)?,
            headers_from_env: Vec::new(),
            oauth: None,
        },
        (None, None) => return Err("no ad-hoc server: give --stdio or --url".into()),
    };
    let mut doc = ConfigDocument::from_text(PathBuf::from(args.flag()), "")?;
    doc.insert(
        ID,
        &NewEntry {
            transport,
            enabled: true,
        },
    )?;
    let config = doc.check(None)?;
    // The parser's reason, without a position in a file nobody wrote.
    if let Some(Err(error)) = config.get(ID).map(|entry| &entry.config) {
        return Err(format!("{}: {}", args.flag(), error.message));
    }
    Ok(LoadedConfig {
        path: None,
        config,
        adhoc: Some(args.flag()),
    })
}

/// Splits a command line into words like a POSIX shell (see the module
/// docs), without expanding anything.
pub(crate) fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    // Whether a word has started: `''` is an empty word, blanks are none.
    let mut started = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            '\'' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a single quote (') is not closed".into()),
                    }
                }
            }
            '"' => {
                started = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a double quote (\") is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a double quote (\") is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    started = true;
                    word.push(c);
                }
                None => return Err("it ends with a lone backslash".into()),
            },
            '|' | '&' | ';' | '<' | '>' => {
                return Err(format!(
                    "`{c}` needs a shell, and rho runs the command directly: quote it ('{c}') to pass it as an argument, or run a shell yourself (--stdio \"sh -c '...'\")"
                ));
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Vec<String> {
        split(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    #[test]
    fn words_split_at_blanks_and_quotes_join_them() {
        assert_eq!(
            ok("  node  server.js\t--port 80 "),
            ["node", "server.js", "--port", "80"]
        );
        assert_eq!(ok("a 'b c' \"d e\""), ["a", "b c", "d e"]);
        assert_eq!(ok("pre'fix'\"ed\" x"), ["prefixed", "x"]);
        assert_eq!(ok("a '' \"\" b"), ["a", "", "", "b"]);
        assert_eq!(ok(""), Vec::<String>::new());
    }

    #[test]
    fn backslashes_work_as_in_a_shell() {
        assert_eq!(ok(r"a\ b c"), ["a b", "c"]);
        assert_eq!(
            ok(r"'a\b'"),
            [r"a\b"],
            "nothing is special in single quotes"
        );
        assert_eq!(
            ok(r#""q\"uote" "back\\slash" "\n""#),
            [r#"q"uote"#, r"back\slash", r"\n"]
        );
        assert_eq!(
            ok("one\\\ntwo"),
            ["onetwo"],
            "backslash-newline joins lines"
        );
        assert_eq!(ok(r"\'"), ["'"]);
    }

    #[test]
    fn nothing_is_expanded() {
        assert_eq!(ok("echo $HOME ~ * #x"), ["echo", "$HOME", "~", "*", "#x"]);
    }

    #[test]
    fn unclosed_quotes_and_shell_operators_are_refused() {
        assert_eq!(
            split("a 'b"),
            Err("a single quote (') is not closed".into())
        );
        assert_eq!(
            split("a \"b"),
            Err("a double quote (\") is not closed".into())
        );
        assert_eq!(
            split("a \"b\\"),
            Err("a double quote (\") is not closed".into())
        );
        assert_eq!(split("a \\"), Err("it ends with a lone backslash".into()));
        for line in ["a | b", "a && b", "a; b", "a > f", "a<f"] {
            let error = split(line).expect_err(line);
            assert!(error.contains("needs a shell"), "{line}: {error}");
        }
        assert_eq!(ok("a '|' \"&&\" \\;"), ["a", "|", "&&", ";"]);
    }
}
