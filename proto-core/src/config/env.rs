//! The environment a stdio server's child process starts with.
//!
//! Starting a server must not hand it rho's own credentials, so the child
//! gets a sanitized base (paths, home, locale, and on Windows what the loader
//! and interpreters need) instead of rho's environment, then the entry's
//! `env` literals, then its `env_from_env` renames, which may deliberately
//! restore a variable under the name the server expects. The ambient
//! environment comes in as an argument: this module never reads it.

use std::collections::BTreeMap;

use crate::config::StdioConfig;

/// Which operating system's naming rules apply to variable names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// Names are case-sensitive.
    Unix,
    /// Names are case-insensitive; the ambient spelling is kept.
    Windows,
}

impl Platform {
    /// The platform rho was compiled for.
    pub const fn current() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Unix
        }
    }
}

/// Ambient variables a Unix child inherits; every `LC_*` variable passes too.
///
/// - `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TMPDIR`: where programs,
///   the user's files and scratch space are; launchers such as `npx` and
///   `uvx` cannot find anything without them.
/// - `LANG`, `LANGUAGE`, `LC_ALL` (and `LC_*`), `TZ`: locale and time zone,
///   so the server reads and prints text the way the user's shell does.
/// - `TERM`: lets tools that probe the terminal degrade gracefully.
pub const UNIX_BASE: &[&str] = &[
    // Where things are.
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", // Locale and time.
    "LANG", "LANGUAGE", "LC_ALL", "TZ", // Terminal.
    "TERM",
];

/// Ambient variables a Windows child inherits (compared case-insensitively);
/// `LC_*` variables pass too.
///
/// - `PATH`, `PATHEXT`: the executable search, including how `npx` resolves
///   to `npx.cmd`.
/// - `SYSTEMROOT`, `SYSTEMDRIVE`, `WINDIR`, `COMSPEC`: the loader and
///   runtime need these; without `SYSTEMROOT` even socket setup fails.
/// - `TEMP`, `TMP`, `USERPROFILE`, `HOMEDRIVE`, `HOMEPATH`, `APPDATA`,
///   `LOCALAPPDATA`, `PROGRAMDATA`: per-user and machine folders that Node,
///   Python and package caches resolve their paths from.
/// - `PROGRAMFILES`, `PROGRAMFILES(X86)`, `PROGRAMW6432`,
///   `COMMONPROGRAMFILES`: where installed interpreters live.
/// - `NUMBER_OF_PROCESSORS`, `PROCESSOR_ARCHITECTURE`, `OS`, `USERNAME`:
///   read by runtimes to size thread pools and pick native binaries.
/// - `LANG` (and `LC_*`): locale, as on Unix.
pub const WINDOWS_BASE: &[&str] = &[
    // Executable search.
    "PATH",
    "PATHEXT",
    // Loader and runtime.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    // User and machine folders.
    "TEMP",
    "TMP",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    // Installed programs.
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "COMMONPROGRAMFILES",
    // Machine description.
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
    "USERNAME",
    // Locale.
    "LANG",
];

/// Why a child's environment cannot be built; the server is not started.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// `env_from_env` names an ambient variable that is not set. Starting
    /// anyway would hand the server an empty credential and a confusing
    /// failure far from its cause.
    #[error(
        "env_from_env: `{child}` wants the ambient variable `{ambient}`, which is not set; export it or remove the entry"
    )]
    MissingAmbient {
        /// The variable the child would have received.
        child: String,
        /// The ambient variable it should have been copied from.
        ambient: String,
    },
}

/// The complete environment for `server`'s child, sorted by name (on
/// Windows, by upper-cased name) with no duplicates.
///
/// Only the [`UNIX_BASE`] or [`WINDOWS_BASE`] variables (and `LC_*`) pass
/// from `ambient`; `env` literals are laid over them, then `env_from_env`
/// copies (child name ← ambient name). On Windows a later layer replaces an
/// earlier variable whose name differs only in case, and takes its spelling.
/// If `ambient` repeats a name, the last occurrence wins.
pub fn child_environment(
    ambient: &[(String, String)],
    server: &StdioConfig,
    platform: Platform,
) -> Result<Vec<(String, String)>, EnvError> {
    // Keyed by the platform's comparison form of the name; the value keeps
    // the spelling to hand to the child.
    let mut out: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (name, value) in ambient {
        if in_base(name, platform) {
            out.insert(fold(name, platform), (name.clone(), value.clone()));
        }
    }
    for (name, value) in &server.env {
        out.insert(fold(name, platform), (name.clone(), value.clone()));
    }
    for (child, source) in &server.env_from_env {
        let folded = fold(source, platform);
        let value = ambient
            .iter()
            .rev()
            .find(|(name, _)| fold(name, platform) == folded)
            .map(|(_, value)| value.clone())
            .ok_or_else(|| EnvError::MissingAmbient {
                child: child.clone(),
                ambient: source.clone(),
            })?;
        out.insert(fold(child, platform), (child.clone(), value));
    }
    Ok(out.into_values().collect())
}

/// The form in which two names compare equal on `platform`.
fn fold(name: &str, platform: Platform) -> String {
    match platform {
        Platform::Unix => name.to_owned(),
        Platform::Windows => name.to_ascii_uppercase(),
    }
}

fn in_base(name: &str, platform: Platform) -> bool {
    match platform {
        Platform::Unix => name.starts_with("LC_") || UNIX_BASE.contains(&name),
        Platform::Windows => {
            let upper = name.to_ascii_uppercase();
            upper.starts_with("LC_") || WINDOWS_BASE.contains(&upper.as_str())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn stdio(env: &[(&str, &str)], env_from_env: &[(&str, &str)]) -> StdioConfig {
        StdioConfig {
            command: "server".into(),
            args: vec![],
            cwd: None,
            env: vars(env).into_iter().collect(),
            env_from_env: vars(env_from_env).into_iter().collect(),
        }
    }

    fn child(
        ambient: &[(&str, &str)],
        server: &StdioConfig,
        platform: Platform,
    ) -> Vec<(String, String)> {
        match child_environment(&vars(ambient), server, platform) {
            Ok(env) => env,
            Err(error) => panic!("unexpected error: {error}"),
        }
    }

    const AMBIENT: &[(&str, &str)] = &[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LC_CTYPE", "C.UTF-8"),
        ("LANG", "en_US.UTF-8"),
        ("TERM", "xterm"),
        ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("OPENAI_API_KEY", "sk-secret"),
        ("SSH_AUTH_SOCK", "/tmp/agent"),
        ("LD_PRELOAD", "/evil.so"),
        ("path", "lowercase is another variable on unix"),
    ];

    #[test]
    fn only_the_base_passes_on_unix() {
        let env = child(AMBIENT, &stdio(&[], &[]), Platform::Unix);
        assert_eq!(
            env,
            vars(&[
                ("HOME", "/home/u"),
                ("LANG", "en_US.UTF-8"),
                ("LC_CTYPE", "C.UTF-8"),
                ("PATH", "/usr/bin"),
                ("TERM", "xterm"),
            ])
        );
    }

    #[test]
    fn secret_looking_ambient_variables_never_pass() {
        for platform in [Platform::Unix, Platform::Windows] {
            let env = child(AMBIENT, &stdio(&[], &[]), platform);
            for (name, value) in &env {
                assert!(!value.contains("secret"), "{name} leaked on {platform:?}");
                assert!(!name.starts_with("AWS_") && name != "GITHUB_TOKEN");
                assert_ne!(name, "LD_PRELOAD");
                assert_ne!(name, "SSH_AUTH_SOCK");
            }
        }
    }

    #[test]
    fn env_from_env_wins_over_env_which_wins_over_base() {
        let server = stdio(
            &[
                ("PATH", "/opt/bin"),
                ("MODE", "literal"),
                ("HOME", "/tmp/h"),
            ],
            &[
                ("MODE", "LANG"),
                ("GITHUB_PERSONAL_ACCESS_TOKEN", "GITHUB_TOKEN"),
            ],
        );
        let env = child(AMBIENT, &server, Platform::Unix);
        assert_eq!(
            env,
            vars(&[
                ("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_secret"),
                ("HOME", "/tmp/h"),
                ("LANG", "en_US.UTF-8"),
                ("LC_CTYPE", "C.UTF-8"),
                ("MODE", "en_US.UTF-8"),
                ("PATH", "/opt/bin"),
                ("TERM", "xterm"),
            ])
        );
    }

    #[test]
    fn env_from_env_may_restore_a_filtered_variable_under_its_own_name() {
        let server = stdio(&[], &[("GITHUB_TOKEN", "GITHUB_TOKEN")]);
        let env = child(AMBIENT, &server, Platform::Unix);
        assert!(env.contains(&("GITHUB_TOKEN".into(), "ghp_secret".into())));
    }

    #[test]
    fn missing_ambient_variable_is_an_actionable_error() {
        let server = stdio(&[], &[("GITHUB_PERSONAL_ACCESS_TOKEN", "GITHUB_TOKEN")]);
        let error = child_environment(&vars(&[("PATH", "/bin")]), &server, Platform::Unix)
            .expect_err("GITHUB_TOKEN is not set");
        assert_eq!(
            error,
            EnvError::MissingAmbient {
                child: "GITHUB_PERSONAL_ACCESS_TOKEN".into(),
                ambient: "GITHUB_TOKEN".into(),
            }
        );
        assert_eq!(
            error.to_string(),
            "env_from_env: `GITHUB_PERSONAL_ACCESS_TOKEN` wants the ambient variable `GITHUB_TOKEN`, which is not set; export it or remove the entry"
        );
    }

    #[test]
    fn unix_names_are_case_sensitive() {
        let server = stdio(&[], &[("X", "github_token")]);
        assert_eq!(
            child_environment(&vars(AMBIENT), &server, Platform::Unix),
            Err(EnvError::MissingAmbient {
                child: "X".into(),
                ambient: "github_token".into(),
            })
        );
    }

    #[test]
    fn windows_compares_names_case_insensitively_and_keeps_spelling() {
        let ambient = &[
            ("Path", "C:\\Windows"),
            ("SystemRoot", "C:\\Windows"),
            ("ProgramFiles(x86)", "C:\\PF86"),
            ("lc_all", "C"),
            ("UserName", "u"),
            ("Github_Token", "ghp_secret"),
            ("GIT_ASKPASS", "x"),
        ];
        let env = child(ambient, &stdio(&[], &[]), Platform::Windows);
        assert_eq!(
            env,
            vars(&[
                ("lc_all", "C"),
                ("Path", "C:\\Windows"),
                ("ProgramFiles(x86)", "C:\\PF86"),
                ("SystemRoot", "C:\\Windows"),
                ("UserName", "u"),
            ])
        );

        let server = stdio(&[("PATH", "D:\\bin")], &[("TOKEN", "GITHUB_TOKEN")]);
        let env = child(ambient, &server, Platform::Windows);
        assert!(env.contains(&("PATH".into(), "D:\\bin".into())), "{env:?}");
        assert!(!env.iter().any(|(name, _)| name == "Path"), "{env:?}");
        assert!(
            env.contains(&("TOKEN".into(), "ghp_secret".into())),
            "{env:?}"
        );
    }

    #[test]
    fn windows_overlay_layers_replace_each_other_case_insensitively() {
        let server = stdio(&[("mode", "literal")], &[("MODE", "TEMP")]);
        let env = child(&[("Temp", "C:\\t")], &server, Platform::Windows);
        assert_eq!(env, vars(&[("MODE", "C:\\t"), ("Temp", "C:\\t")]));
    }

    #[test]
    fn current_platform_matches_the_build() {
        assert_eq!(Platform::current() == Platform::Windows, cfg!(windows));
    }
}
