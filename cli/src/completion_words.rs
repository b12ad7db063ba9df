//! Shell completion that knows the config. `rho completions bash|zsh|fish`
//! prints a small script that, on each Tab, runs the hidden
//! `rho __complete INDEX WORD...` with the words typed so far; this module
//! answers it with one candidate per line: the visible subcommands and
//! flags (from the same clap definitions the parser uses, so the hidden
//! `__complete` itself is never offered), the values a
//! flag allows, server identities from the config (the `--config` typed on
//! the line, else the default) wherever a command takes one; after
//! `call <id>` the tool names that server's `tools.allow` lists and those
//! it listed when last connected, after `prompt <id>` its prompts and
//! after `read <id>` its resources, from the names cache. No server is
//! started for a Tab. Elvish and PowerShell get clap's static script,
//! with the hidden commands taken out.
//!
//! The names cache (`~/.rho/completion-names.json`) is written by the
//! commands that connect to many servers anyway (`list --connect`, `show
//! --connect`, `shell`): each ready server's tool, prompt and resource
//! names, at most [`CACHED_NAMES`] of each, replacing what that server had
//! (others are kept). It is read whole, up to [`CACHE_BYTES`]; a damaged
//! or oversized cache is ignored.
//!
//! Every candidate is a config's or a server's text: one holding a
//! control character, a blank or a BIDI override is left out rather than
//! printed into the person's shell, and so is one the parser would read
//! as a flag at that position (a tool named `--record=FILE` would make the
//! completed line overwrite FILE). Each script reads the candidates a line
//! at a time, never splitting or globbing them (a name `*` or
//! `/etc/pass*` is that text, not files), and has the shell put a
//! candidate into the line quoted (zsh's compadd and fish do; bash's
//! script quotes with `%q`), so a name holding `;`, `*` or `$(...)`
//! arrives as one literal word. Cached tool names pass through the
//! server's `tools` filter as the config has it now. The scripts are run
//! in the real shells by `cli/tests/completions.rs`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Command;
use rho_proto_core::runtime::ServerView;
use rho_proto_core::runtime::status::ServerStatus;

/// The most names of one kind the cache keeps for a server.
pub(crate) const CACHED_NAMES: usize = 500;

/// The largest cache file read.
pub(crate) const CACHE_BYTES: u64 = 4 << 20;

/// One server's cached names.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct Names {
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    prompts: Vec<String>,
    #[serde(default)]
    resources: Vec<String>,
}

fn cache_path() -> Option<PathBuf> {
    Some(rho_host::rho_dir()?.join("completion-names.json"))
}

fn read_cache() -> BTreeMap<String, Names> {
    let Some(path) = cache_path() else {
        return BTreeMap::new();
    };
    // A regular file within the bound only: a FIFO or a link to a device
    // is refused at once, so a Tab never hangs or grows, and offers what
    // it can without the cache.
    rho_os::fs::read_regular(&path, CACHE_BYTES)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Keeps the names of every ready server in `servers` for completion
/// (see the module docs). A cache that cannot be written costs only
/// completions: it is logged at debug level.
pub(crate) fn remember(servers: &[ServerView]) {
    let ready: Vec<(&str, Names)> = servers
        .iter()
        .filter_map(|view| match &view.status {
            ServerStatus::Ready(report) => Some((
                view.id.as_str(),
                Names {
                    tools: view
                        .tools
                        .iter()
                        .map(|t| t.name.clone())
                        .take(CACHED_NAMES)
                        .collect(),
                    prompts: report
                        .catalog
                        .prompts
                        .items
                        .iter()
                        .map(|p| p.name.clone())
                        .take(CACHED_NAMES)
                        .collect(),
                    resources: report
                        .catalog
                        .resources
                        .items
                        .iter()
                        .map(|r| r.uri.clone())
                        .take(CACHED_NAMES)
                        .collect(),
                },
            )),
            _ => None,
        })
        .collect();
    let Some(path) = cache_path().filter(|_| !ready.is_empty()) else {
        return;
    };
    let mut cache = read_cache();
    for (id, names) in ready {
        cache.insert(id.to_owned(), names);
    }
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            // Owner-only from the start, as the credential store's.
            rho_host::ensure_private_dir(dir)?;
        }
        let text = serde_json::to_vec(&cache).map_err(std::io::Error::other)?;
        // Written beside it, then renamed: a Tab never reads half a file.
        let partial = path.with_extension(format!("json.{}", std::process::id()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        std::io::Write::write_all(&mut options.open(&partial)?, &text)?;
        std::fs::rename(&partial, &path)
    };
    if let Err(e) = write() {
        tracing::debug!("cannot write the completion names cache: {e}");
    }
}

/// The commands whose first positional word is a server identity.
const TAKES_SERVER: &[&str] = &[
    "show", "get", "call", "prompt", "read", "complete", "remove", "enable", "disable", "login",
    "logout",
];

/// The flags whose value is a path: no candidates, so the shell offers
/// files.
const TAKES_PATH: &[&str] = &[
    "--config",
    "--workspace",
    "--record",
    "--output",
    "--stdio",
    "--cwd",
];

/// The completion script for `shell`, when rho writes its own (bash, zsh,
/// fish); `None` for the shells clap's static script serves.
pub(crate) fn script(shell: clap_complete::Shell) -> Option<&'static str> {
    match shell {
        clap_complete::Shell::Bash => Some(BASH),
        clap_complete::Shell::Zsh => Some(ZSH),
        clap_complete::Shell::Fish => Some(FISH),
        _ => None,
    }
}

const BASH: &str = r#"# rho completion for bash: candidates come from `rho __complete`.
# The words are split at blanks only (bash's own words also break at `:`,
# which URIs and `server:tool` hold); what bash takes as the word after a
# `:` is what the candidates keep. The candidates are read a line at a
# time, never word-split or globbed (a server named `*` or `/etc/pass*`
# is that text, not files), and bash puts a candidate into the line as it
# is, so each is quoted (%q): a name holding `;`, `*` or `$(...)` lands
# as one literal word, never as shell syntax.
_rho() {
    local line="${COMP_LINE:0:COMP_POINT}" IFS=$' \t\n'
    local -a words
    read -ra words <<< "$line"
    [[ "$line" =~ [[:space:]]$ ]] && words+=("")
    local cur="${words[${#words[@]}-1]}" i candidate
    COMPREPLY=()
    while IFS= read -r candidate; do
        COMPREPLY+=("$candidate")
    done < <("${words[0]}" __complete $((${#words[@]} - 1)) "${words[@]}" 2>/dev/null)
    if [[ "$cur" == *:* && "$COMP_WORDBREAKS" == *:* ]]; then
        local strip="${cur%"${cur##*:}"}"
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[$i]="${COMPREPLY[$i]#"$strip"}"
        done
    fi
    for i in "${!COMPREPLY[@]}"; do
        printf -v "COMPREPLY[$i]" '%q' "${COMPREPLY[$i]}"
    done
}
complete -o bashdefault -o default -F _rho rho
"#;

const ZSH: &str = r#"#compdef rho
# rho completion for zsh: candidates come from `rho __complete`, asked
# with the words as the command will get them (zsh's `words` keep the
# line's quoting: `'my dir/c.toml'`); compadd quotes what it inserts.
# Install: put it in a directory of $fpath as `_rho` (before compinit), or
# `source <(rho completions zsh)` after compinit.
_rho() {
    local -a candidates
    candidates=("${(@f)$("${(Q)words[1]}" __complete $((CURRENT - 1)) "${(@Q)words}" 2>/dev/null)}")
    if [[ -n "${candidates[1]}" ]]; then
        compadd -a candidates
    else
        _files
    fi
}
if [[ "${funcstack[1]}" = "_rho" ]]; then
    _rho "$@"
else
    compdef _rho rho
fi
"#;

const FISH: &str = r#"# rho completion for fish: candidates come from `rho __complete`, asked
# with the words as the command will get them (the word under the cursor
# unescaped too: `semi\;` is `semi;`); fish escapes what it inserts. No
# candidate (a path flag's value): the paths. Install: save it as
# ~/.config/fish/completions/rho.fish.
function __rho_complete
    set -l current (commandline -ct | string unescape)
    set -l words (commandline -opc) "$current"
    set -l candidates ($words[1] __complete (math (count $words) - 1) $words 2>/dev/null)
    if set -q candidates[1]
        printf '%s\n' $candidates
    else
        __fish_complete_path "$current"
    end
end
complete -c rho -f -a '(__rho_complete)'
"#;

/// `command` without its hidden subcommands, at every level, for clap's
/// static scripts (which would list them): names, visible aliases, help
/// text and arguments are kept.
pub(crate) fn without_hidden(command: &Command) -> Command {
    let mut out = Command::new(command.get_name().to_owned())
        .args(command.get_arguments().cloned())
        .visible_aliases(
            command
                .get_visible_aliases()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        );
    if let Some(about) = command.get_about() {
        out = out.about(about.clone());
    }
    out.subcommands(
        command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(without_hidden)
            .collect::<Vec<_>>(),
    )
}

/// The candidates for `words[index]` (`words[0]` is the program), one per
/// line, each starting with what is typed of that word.
pub(crate) fn candidates(command: &Command, index: usize, words: &[String]) -> Vec<String> {
    let typed = words.get(index).map_or("", String::as_str);
    let before = words.get(1..index.min(words.len())).unwrap_or(&[]);
    let mut leaf = command;
    let mut globals: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| a.is_global_set())
        .collect();
    let mut positionals = 0usize;
    let mut config: Option<PathBuf> = None;
    let mut server: Option<&str> = None;
    let mut after_dash_dash = false;
    let mut pending: Option<&clap::Arg> = None;
    for word in before {
        if let Some(arg) = pending.take() {
            if arg.get_long() == Some("config") {
                config = Some(PathBuf::from(word));
            }
            continue;
        }
        if after_dash_dash {
            positionals += 1;
            continue;
        }
        if word == "--" {
            after_dash_dash = true;
            continue;
        }
        if let Some(flag) = word.strip_prefix("--") {
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (flag, None),
            };
            let arg = find_long(leaf, &globals, name);
            if let Some(arg) = arg {
                if name == "config"
                    && let Some(value) = inline
                {
                    config = Some(PathBuf::from(value));
                }
                if inline.is_none() && takes_value(arg) {
                    pending = Some(arg);
                }
            }
            continue;
        }
        if word.starts_with('-') && word.len() > 1 {
            continue;
        }
        if let Some(sub) = leaf
            .get_subcommands()
            .find(|s| s.get_name() == word || s.get_all_aliases().any(|a| a == word))
        {
            leaf = sub;
            globals.extend(sub.get_arguments().filter(|a| a.is_global_set()));
            continue;
        }
        if positionals == 0 {
            server = Some(word);
        }
        positionals += 1;
    }
    let mut out: Vec<String> = Vec::new();
    if let Some(arg) = pending {
        let long = arg.get_long().map(|l| format!("--{l}"));
        if long.as_deref().is_some_and(|l| TAKES_PATH.contains(&l)) {
            return Vec::new();
        }
        out.extend(
            arg.get_possible_values()
                .into_iter()
                .filter(|v| !v.is_hide_set())
                .map(|v| v.get_name().to_owned()),
        );
    } else if typed.starts_with('-') && !after_dash_dash {
        for arg in leaf.get_arguments().chain(globals.iter().copied()) {
            if arg.is_hide_set() {
                continue;
            }
            if let Some(long) = arg.get_long() {
                out.push(format!("--{long}"));
            }
        }
        out.push("--help".into());
    } else if leaf.has_subcommands() {
        for sub in leaf.get_subcommands().filter(|s| !s.is_hide_set()) {
            out.push(sub.get_name().to_owned());
            out.extend(sub.get_visible_aliases().map(str::to_owned));
        }
    } else if TAKES_SERVER.contains(&leaf.get_name()) && !after_dash_dash {
        let loaded = rho_host::LoadedConfig::load(config).ok();
        let servers = loaded.as_ref().map(|l| &l.config.servers);
        match positionals {
            0 => out.extend(servers.into_iter().flatten().map(|e| e.id.clone())),
            1 => {
                let cached = server
                    .and_then(|id| read_cache().remove(id))
                    .unwrap_or_default();
                match leaf.get_name() {
                    "call" => {
                        let entry = servers
                            .into_iter()
                            .flatten()
                            .find(|e| Some(e.id.as_str()) == server);
                        let filter = match entry.map(|e| e.config.as_ref()) {
                            Some(Ok(config)) => Some(&config.tools),
                            _ => None,
                        };
                        if let Some(filter) = filter {
                            out.extend(
                                filter
                                    .allow
                                    .iter()
                                    .flatten()
                                    .filter(|t| filter.permits(t))
                                    .cloned(),
                            );
                        }
                        // What the server listed when last connected, as the
                        // config filters it now (allow and deny may have
                        // changed since).
                        out.extend(
                            cached
                                .tools
                                .into_iter()
                                .filter(|t| filter.is_none_or(|f| f.permits(t))),
                        );
                    }
                    "prompt" => out.extend(cached.prompts),
                    "read" => out.extend(cached.resources),
                    _ => {}
                }
            }
            _ => {}
        }
        // Every candidate here is a config's or a server's name: one the
        // parser would read as a flag (`--record=FILE` would overwrite
        // FILE, `--config=...` load another config) is never offered.
        out.retain(|c| !c.starts_with('-'));
    }
    out.retain(|c| c.starts_with(typed) && safe(c));
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|c| seen.insert(c.clone()));
    out
}

/// The long flag `name` of `leaf`, or a global one.
fn find_long<'a>(
    leaf: &'a Command,
    globals: &[&'a clap::Arg],
    name: &str,
) -> Option<&'a clap::Arg> {
    leaf.get_arguments()
        .find(|a| a.get_long() == Some(name))
        .or_else(|| globals.iter().copied().find(|a| a.get_long() == Some(name)))
}

/// Whether `arg` takes a value (a flag that is not a switch).
fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_num_args().is_none_or(|n| n.takes_values())
        && !matches!(
            arg.get_action(),
            clap::ArgAction::SetTrue
                | clap::ArgAction::SetFalse
                | clap::ArgAction::Count
                | clap::ArgAction::Help
                | clap::ArgAction::Version
        )
}

/// Whether `candidate` can go into a shell's line as it is: no control
/// character, blank or BIDI override.
fn safe(candidate: &str) -> bool {
    !candidate.is_empty()
        && !candidate.chars().any(|c| {
            c.is_control()
                || c.is_whitespace()
                || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    fn words(line: &[&str]) -> Vec<String> {
        line.iter().map(|w| (*w).to_owned()).collect()
    }

    fn at_end(line: &[&str]) -> Vec<String> {
        let words = words(line);
        candidates(&crate::Cli::command(), words.len() - 1, &words)
    }

    #[test]
    fn subcommands_are_offered_and_hidden_ones_never() {
        let offered = at_end(&["rho", "mcp", ""]);
        for name in ["list", "show", "get", "call", "shell", "login", "add-json"] {
            assert!(offered.iter().any(|c| c == name), "{name}: {offered:?}");
        }
        assert_eq!(at_end(&["rho", "mcp", "sh"]), ["show", "shell"]);
        let top = at_end(&["rho", ""]);
        assert!(top.iter().any(|c| c == "mcp"), "{top:?}");
        assert!(!top.iter().any(|c| c.starts_with("__")), "{top:?}");
    }

    #[test]
    fn flags_come_for_a_dash_and_values_after_a_flag_that_takes_one() {
        let flags = at_end(&["rho", "mcp", "call", "--"]);
        assert!(flags.iter().any(|c| c == "--json"), "{flags:?}");
        assert!(flags.iter().any(|c| c == "--config"), "{flags:?}");
        assert_eq!(at_end(&["rho", "--runtime", ""]), ["smol", "blocking"]);
        assert!(
            at_end(&["rho", "--config", ""]).is_empty(),
            "paths are the shell's"
        );
    }

    #[test]
    fn server_ids_come_from_the_config_named_on_the_line() {
        let dir = std::env::temp_dir().join(format!("rho-complete-words-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            "[mcp.servers.alpha]\ntransport = \"stdio\"\ncommand = \"a\"\n[mcp.servers.beta]\ntransport = \"stdio\"\ncommand = \"b\"\n[mcp.servers.beta.tools]\nallow = [\"get-sum\", \"echo\"]\n",
        )
        .expect("config");
        let path = config.to_str().expect("utf-8");
        assert_eq!(
            at_end(&["rho", "--config", path, "mcp", "call", ""]),
            ["alpha", "beta"]
        );
        assert_eq!(
            at_end(&["rho", "mcp", "--config", path, "show", "b"]),
            ["beta"]
        );
        assert_eq!(
            at_end(&["rho", "--config", path, "mcp", "call", "beta", ""]),
            ["get-sum", "echo"]
        );
        assert!(at_end(&["rho", "--config", path, "mcp", "call", "beta", "echo", ""]).is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn static_scripts_list_no_hidden_command() {
        let mut script = Vec::new();
        let mut command = without_hidden(&crate::Cli::command());
        clap_complete::generate(
            clap_complete::Shell::Elvish,
            &mut command,
            "rho",
            &mut script,
        );
        let script = String::from_utf8(script).expect("UTF-8");
        assert!(script.contains("add-json"), "{script}");
        assert!(!script.contains("__complete"), "{script}");
    }

    #[test]
    fn a_candidate_with_a_control_blank_or_bidi_character_is_left_out() {
        assert!(safe("get-env"));
        for bad in ["a\u{1b}]0;x\u{7}", "two words", "x\u{202e}y", ""] {
            assert!(!safe(bad), "{bad:?}");
        }
    }
}
