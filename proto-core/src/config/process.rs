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

    #[test]
    fn windows_tries_pathext_extensions() {
        let c = program_candidates(
            "npx",
            Some(r"C:\node"),
            Some(".EXE;.CMD"),
            None,
            Platform::Windows,
        );
        let ProgramCandidates::Search(list) = c else {
            panic!("search expected")
        };
        assert_eq!(list.len(), 2);
        assert!(list[0].to_string_lossy().ends_with("npx.EXE"));
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
