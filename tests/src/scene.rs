//! The CLI tests' one scene: the real `rho` binary run in a scratch
//! directory of its own, with an empty `HOME` there (so a person's
//! `~/.rho` is never read or written), on the executor the test chose,
//! and what each run printed and how it exited.
//!
//! A [`Scene`] is what every file under `cli/tests/` builds its runs
//! from: [`Scene::rho`] runs `rho` to completion and returns a [`Run`];
//! [`Scene::command`] is the same `rho` as a [`Command`] for a test that
//! must hold the process (signals, a terminal, a shell); and
//! [`Scene::program`] gives another program the scene's environment (a
//! terminal wrapper that starts `rho` itself). The binary is passed in,
//! as `env!("CARGO_BIN_EXE_rho")`, which only the CLI's own test crates
//! can name; the tests crate's own tests pass its conformance client the
//! same way, and a run's command line names whichever binary it ran.
//!
//! Each run has a null stdin, no `RUST_LOG` and no `USERPROFILE`, and
//! `RHO_RUNTIME` set to the scene's executor (or removed, for a scene on
//! the default one), so argument lists stay as a person would type them.
//! A scene with a config file ([`Scene::with_config`]) puts `--config
//! <file>` first on every run. The scratch directory is removed when the
//! scene is dropped, unless the test is failing: its files are then there
//! to read.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::{CliRuntime, scratch_dir};

/// A scratch directory with an empty `home/` used as `HOME`, the `rho`
/// binary under test, the executor its runs use and, optionally, a config
/// file every run is given.
pub struct Scene {
    rho: PathBuf,
    dir: PathBuf,
    home: PathBuf,
    runtime: Option<CliRuntime>,
    config: Option<PathBuf>,
    /// More variables no run inherits.
    removed: Vec<&'static str>,
}

impl Scene {
    /// A fresh scene named `<name>-<runtime>` whose runs use `runtime`;
    /// `rho` is the binary under test (`env!("CARGO_BIN_EXE_rho")`).
    pub fn new(rho: &str, name: &str, runtime: CliRuntime) -> Self {
        Self::build(rho, &format!("{name}-{}", runtime.name()), Some(runtime))
    }

    /// A fresh scene whose runs use rho's default executor:
    /// `RHO_RUNTIME` is removed from their environment.
    pub fn on_default_executor(rho: &str, name: &str) -> Self {
        Self::build(rho, name, None)
    }

    fn build(rho: &str, name: &str, runtime: Option<CliRuntime>) -> Self {
        let dir = scratch_dir(name);
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("create the scene's home");
        Self {
            rho: PathBuf::from(rho),
            dir,
            home,
            runtime,
            config: None,
            removed: Vec::new(),
        }
    }

    /// Writes `text` as the scene's `rho.toml`; every later run gets
    /// `--config <it>` before its own arguments.
    pub fn with_config(mut self, text: &str) -> Self {
        self.config = Some(self.write("rho.toml", text));
        self
    }

    /// Removes these variables too from every run's environment (`CI`
    /// for a test of what a person at a terminal sees, `NO_COLOR` for one
    /// of colour).
    pub fn without_env(mut self, names: &[&'static str]) -> Self {
        self.removed.extend_from_slice(names);
        self
    }

    /// The scratch directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `HOME` of every run (`<dir>/home`, empty at first).
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The config file of [`Scene::with_config`].
    pub fn config(&self) -> &Path {
        self.config
            .as_deref()
            .expect("a scene with a config (Scene::with_config)")
    }

    /// The executor the runs use; `None` for rho's default.
    pub fn runtime(&self) -> Option<CliRuntime> {
        self.runtime
    }

    /// The `RHO_RUNTIME` value of the runs, or `default`.
    pub fn runtime_name(&self) -> &'static str {
        self.runtime.map_or("default", CliRuntime::name)
    }

    /// Writes `text` to `name` in the scratch directory; its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write a scene file");
        path
    }

    /// `program` with the scene's environment: `HOME`, `RHO_RUNTIME` (or
    /// none), no `USERPROFILE`, no `RUST_LOG` and none of
    /// [`Scene::without_env`]. Its stdio and arguments are the caller's.
    pub fn program(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env("HOME", &self.home)
            .env_remove("USERPROFILE")
            .env_remove("RUST_LOG");
        for name in &self.removed {
            command.env_remove(name);
        }
        match self.runtime {
            Some(runtime) => command.env("RHO_RUNTIME", runtime.name()),
            None => command.env_remove("RHO_RUNTIME"),
        };
        command
    }

    /// `rho` as [`Scene::program`] makes it, with a null stdin and, when
    /// the scene has a config, `--config <file>` as its first arguments.
    pub fn command(&self) -> Command {
        let mut command = self.program(&self.rho);
        command.stdin(Stdio::null());
        if let Some(config) = &self.config {
            command.arg("--config").arg(config);
        }
        command
    }

    /// Runs `rho args...` to its end.
    pub fn rho(&self, args: &[&str]) -> Run {
        self.rho_env(args, &[])
    }

    /// Runs `rho args...` to its end with extra variables, set last (so
    /// they may override `RHO_RUNTIME`).
    pub fn rho_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = self.command();
        command.args(args).envs(env.iter().copied());
        let output = command.output().expect("run rho");
        let runtime = env
            .iter()
            .rev()
            .find(|(k, _)| *k == "RHO_RUNTIME")
            .map_or(self.runtime_name(), |(_, v)| v);
        let program = self
            .rho
            .file_name()
            .map_or_else(|| "rho".into(), |name| name.to_string_lossy());
        Run::of(
            format!("RHO_RUNTIME={runtime} {program} {}", args.join(" ")),
            output,
        )
    }
}

impl Drop for Scene {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A path as one argument of a run (scratch paths are UTF-8).
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
}

/// One finished `rho` run. Its `Display` is the whole run: the command
/// line, the exit code, stdout and stderr, for assertion messages.
#[derive(Debug)]
pub struct Run {
    /// The command line as a person would type it.
    pub line: String,
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// Everything on stdout.
    pub stdout: String,
    /// Everything on stderr.
    pub stderr: String,
}

impl Run {
    /// A run from its command line and output.
    pub fn of(line: String, output: Output) -> Self {
        Self {
            line,
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Asserts the exit code, showing the whole run when it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "unexpected exit code\n{self}");
        self
    }

    /// stdout followed by stderr.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// stdout parsed as JSON; panics, showing the run, when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{self}"))
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "$ {}\nexit: {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.line, self.code, self.stdout, self.stderr
        )
    }
}
