//! The pure half of running a stdio server: where its executable may be,
//! and the timings of shutting it down. The executors own the processes;
//! this module owns the decisions, so both executors make the same ones.
//!
//! rho never invokes a shell. A `command` containing a path separator is
//! taken as a path (relative ones against the server's `cwd`, else the
//! current directory, exactly where the child will run); a bare command is
//! searched on the `PATH` the child will get, because that is the `PATH` the
//! user configured for it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::env::Platform;

/// How long a stdio server gets, in all, to exit after its input closes
/// before its process group is killed (SIGKILL).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The part of [`SHUTDOWN_GRACE`] a server gets to exit on end of input
/// alone, before its process group is asked to terminate (SIGTERM), as the
/// MCP lifecycle describes. A server that is itself waiting on a request
/// rho can no longer answer (server-everything asks for `roots/list` a
/// moment after the handshake) would otherwise sit out the whole grace.
pub fn terminate_after(grace: Duration) -> Duration {
    (grace / 4).min(Duration::from_millis(500))
}

/// Where a command's executable may be, in the order to try.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramCandidates {
    /// The command is a path: only this file.
    Path(PathBuf),
    /// A bare name: these files, in `PATH` order; the first executable one
    /// wins.
    Search(Vec<PathBuf>),
}

/// Lists where `command` may be found. `path_var` is the child's `PATH`,
/// `pathext` its `PATHEXT` (Windows only), `cwd` the directory it will run
/// in (relative `PATH` entries and relative commands resolve there).
pub fn program_candidates(
    command: &str,
    path_var: Option<&str>,
    pathext: Option<&str>,
    cwd: Option<&Path>,
    platform: Platform,
) -> ProgramCandidates {
    let has_separator = match platform {
        Platform::Unix => command.contains('/'),
        Platform::Windows => command.contains(['/', '\\']),
    };
    let anchor = |p: PathBuf| match cwd {
        Some(dir) if p.is_relative() => dir.join(p),
        _ => p,
    };
    if has_separator {
        return ProgramCandidates::Path(anchor(PathBuf::from(command)));
    }
    let separator = match platform {
        Platform::Unix => ':',
        Platform::Windows => ';',
    };
    let extensions: Vec<String> = match platform {
        Platform::Unix => vec![String::new()],
        Platform::Windows => {
            let has_ext = Path::new(command).extension().is_some();
            let mut exts = if has_ext {
                vec![String::new()]
            } else {
                Vec::new()
            };
            exts.extend(
                pathext
                    .unwrap_or(".COM;.EXE;.BAT;.CMD")
                    .split(';')
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned),
            );
            exts
        }
    };
    let mut found = Vec::new();
    for dir in path_var.unwrap_or("").split(separator) {
        // An empty PATH entry means the current directory in POSIX; rho
        // skips it, since running whatever sits in the working directory
        // under a bare name is how PATH hijacks happen.
        if dir.is_empty() {
            continue;
        }
        for ext in &extensions {
            found.push(anchor(Path::new(dir).join(format!("{command}{ext}"))));
        }
    }
    ProgramCandidates::Search(found)
}

/// The message for a command that was not found, naming the server.
pub fn not_found_message(server: &str, command: &str, candidates: &ProgramCandidates) -> String {
    match candidates {
        ProgramCandidates::Path(path) => format!(
            "server `{server}`: executable `{}` does not exist or is not executable",
            path.display()
        ),
        ProgramCandidates::Search(_) => format!(
            "server `{server}`: executable `{command}` not found on PATH; install it or set `command` to its full path"
        ),
    }
}

/// Whether Windows runs `program` through `cmd.exe`: a `.bat` or `.cmd`
/// script (such as `npx.cmd`), whatever the case of its extension.
pub fn is_batch_script(program: &Path) -> bool {
    program
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("cmd") || ext.eq_ignore_ascii_case("bat"))
}

/// Why a batch script cannot be started with these arguments.
///
/// A `.cmd`/`.bat` runs under `cmd.exe`, which re-parses its whole command
/// line: `%VAR%` expands, `&` and `|` start another command, a line break
/// ends the line. Rust's std quotes a batch script's arguments for that
/// parser (the fix for the "BatBadBut" injection, CVE-2024-24576: every
/// argument with anything but letters, digits and `#$*+-./:?@\_` quoted,
/// `"` doubled, `%` defused with `%%cd:~,%`), and refuses what no quoting
/// can make safe. rho relies on that quoting and checks those refusals
/// itself first, so the error names the server and the argument rather
/// than std's "batch file arguments are invalid".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchRefusal {
    /// A Windows file name cannot hold `"` or end with `\\`; std refuses
    /// such a script.
    #[error(
        "`{script}` is a batch script whose name holds `\"` or ends with `\\`, which Windows cannot start safely through cmd.exe"
    )]
    ScriptName {
        /// The script's path.
        script: String,
    },
    /// An argument holds a character `cmd.exe` cannot be given safely.
    #[error(
        "argument {index} holds {what}, which a batch script (.cmd/.bat, run by cmd.exe) cannot be given safely; remove it, or start the program the script wraps (e.g. `node` with the script's file) instead"
    )]
    Argument {
        /// Its position in `args`, from 1.
        index: usize,
        /// The character, in words.
        what: &'static str,
    },
}

/// What std would refuse when starting the batch script `script` with
/// `args` ([`BatchRefusal`]): a script name with `"` or a trailing `\`,
/// an argument with a line break (cmd.exe ends the command there) or a
/// NUL; `None` when std can start it safely.
pub fn batch_script_refusal(script: &str, args: &[String]) -> Option<BatchRefusal> {
    if script.contains('"') || script.ends_with('\\') {
        return Some(BatchRefusal::ScriptName {
            script: script.to_owned(),
        });
    }
    args.iter().enumerate().find_map(|(i, arg)| {
        let what = if arg.contains('\r') {
            "a carriage return"
        } else if arg.contains('\n') {
            "a line feed"
        } else if arg.contains('\0') {
            "a NUL character"
        } else {
            return None;
        };
        Some(BatchRefusal::Argument { index: i + 1, what })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_command_searches_path_in_order_and_skips_empty_entries() {
        let c = program_candidates("node", Some("/a::/b"), None, None, Platform::Unix);
        assert_eq!(
            c,
            ProgramCandidates::Search(vec!["/a/node".into(), "/b/node".into()])
        );
    }

    #[test]
    fn command_with_separator_is_a_path_relative_to_cwd() {
        let c = program_candidates(
            "./bin/server",
            Some("/usr/bin"),
            None,
            Some(Path::new("/work")),
            Platform::Unix,
        );
        assert_eq!(c, ProgramCandidates::Path("/work/./bin/server".into()));
        let c = program_candidates("/opt/s", None, None, Some(Path::new("/w")), Platform::Unix);
        assert_eq!(c, ProgramCandidates::Path("/opt/s".into()));
    }

    /// The paths a Windows search for `command` tries, in order, as text.
    fn windows_search(command: &str, path: &str, pathext: Option<&str>) -> Vec<String> {
        let c = program_candidates(command, Some(path), pathext, None, Platform::Windows);
        let ProgramCandidates::Search(list) = c else {
            panic!("search expected")
        };
        list.iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn windows_tries_pathext_extensions() {
        let names = windows_search("npx", r"C:\node", Some(".EXE;.CMD"));
        assert_eq!(names.len(), 2);
        assert!(names[0].ends_with("npx.EXE"));
    }

    #[test]
    fn windows_tries_a_named_extension_as_is_first_then_the_default_pathext() {
        let names = windows_search("npx.cmd", r"C:\node;C:\bin", None);
        // Five per directory: as named, then .COM, .EXE, .BAT, .CMD.
        assert_eq!(names.len(), 10, "{names:?}");
        assert!(names[0].ends_with("npx.cmd"), "{names:?}");
        assert!(names[1].ends_with("npx.cmd.COM"), "{names:?}");
        assert!(names[4].ends_with("npx.cmd.CMD"), "{names:?}");
        assert!(names[5].starts_with(r"C:\bin"), "{names:?}");
    }

    #[test]
    fn windows_finds_npx_as_npx_cmd_in_path_order() {
        let names = windows_search(
            "npx",
            r"C:\Windows\system32;;C:\Program Files\nodejs",
            Some(".COM;.EXE;.BAT;.CMD"),
        );
        // The empty entry is skipped; no bare `npx` is ever tried.
        assert_eq!(names.len(), 8, "{names:?}");
        assert!(names.iter().all(|n| !n.ends_with("npx")), "{names:?}");
        assert!(
            names[7].starts_with(r"C:\Program Files\nodejs"),
            "{names:?}"
        );
        assert!(names[7].ends_with("npx.CMD"), "{names:?}");
    }

    #[test]
    fn windows_paths_with_either_separator_are_not_searched() {
        for command in [r"C:\tools\server.exe", "tools/server.exe", r".\server.cmd"] {
            let c = program_candidates(command, Some(r"C:\bin"), None, None, Platform::Windows);
            assert!(matches!(c, ProgramCandidates::Path(_)), "{command}: {c:?}");
        }
        // On Unix a backslash is an ordinary character of a name.
        let c = program_candidates(r"odd\name", Some("/bin"), None, None, Platform::Unix);
        assert!(matches!(c, ProgramCandidates::Search(_)));
    }

    #[test]
    fn batch_scripts_are_recognised_by_extension_in_any_case() {
        for yes in ["npx.cmd", r"C:\node\NPX.CMD", "setup.bat", "x.Bat"] {
            assert!(is_batch_script(Path::new(yes)), "{yes}");
        }
        for no in ["node.exe", "npx", "cmd", "script.cmd.exe", "x.batch"] {
            assert!(!is_batch_script(Path::new(no)), "{no}");
        }
    }

    #[test]
    fn batch_arguments_std_quotes_safely_are_allowed() {
        let args: Vec<String> = [
            "%PATH%",
            "a & calc.exe",
            r#"say "hi""#,
            "| more",
            "^caret",
            "trailing\\",
            "",
            "unicode: é",
        ]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
        assert_eq!(batch_script_refusal(r"C:\node\npx.cmd", &args), None);
    }

    #[test]
    fn batch_arguments_with_line_breaks_or_nul_are_refused_by_position() {
        let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            batch_script_refusal("npx.cmd", &args(&["-y", "x\r\ncalc"])),
            Some(BatchRefusal::Argument {
                index: 2,
                what: "a carriage return"
            })
        );
        assert_eq!(
            batch_script_refusal("npx.cmd", &args(&["a\nb"])),
            Some(BatchRefusal::Argument {
                index: 1,
                what: "a line feed"
            })
        );
        assert_eq!(
            batch_script_refusal("npx.cmd", &args(&["ok", "ok", "nul\0"])),
            Some(BatchRefusal::Argument {
                index: 3,
                what: "a NUL character"
            })
        );
        let message = batch_script_refusal("npx.cmd", &args(&["a\nb"]))
            .map(|r| r.to_string())
            .unwrap_or_default();
        assert!(
            message.starts_with("argument 1 holds a line feed"),
            "{message}"
        );
    }

    #[test]
    fn batch_script_names_windows_cannot_hold_are_refused() {
        for script in [r#"C:\a"b.cmd"#, "C:\\dir\\"] {
            assert!(
                matches!(
                    batch_script_refusal(script, &[]),
                    Some(BatchRefusal::ScriptName { .. })
                ),
                "{script}"
            );
        }
    }

    #[test]
    fn not_found_names_server_and_command() {
        let msg = not_found_message(
            "github",
            "github-mcp-server",
            &ProgramCandidates::Search(vec![]),
        );
        assert_eq!(
            msg,
            "server `github`: executable `github-mcp-server` not found on PATH; install it or set `command` to its full path"
        );
    }
}
