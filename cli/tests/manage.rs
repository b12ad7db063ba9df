//! Managing servers from the shell, with the real `rho` binary: tool
//! arguments as `key=value` words typed by the tool's schema, `get` as
//! `show`, and shell completions.
//!
//! Every run gets its own scratch `HOME` (the user's `~/.rho` is never
//! read or written) and a null stdin. These behaviours do not depend on
//! the executor, so the runs use the default one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rho_tests::{everything_js, scratch_dir, toml_path};

/// A scratch directory with an empty `home/` to use as `HOME`.
struct Scratch {
    dir: PathBuf,
    home: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = scratch_dir(&format!("manage-{name}"));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("create scratch home");
        Self { dir, home }
    }

    /// Writes `text` to `name` in the scratch dir and returns its path.
    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write scratch file");
        path
    }

    /// Runs `rho args...` with this scratch `HOME`.
    fn rho(&self, args: &[&str]) -> Run {
        let output = Command::new(env!("CARGO_BIN_EXE_rho"))
            .args(args)
            .env("HOME", &self.home)
            .env_remove("USERPROFILE")
            .env_remove("RUST_LOG")
            .env_remove("RHO_RUNTIME")
            .stdin(Stdio::null())
            .output()
            .expect("run rho");
        Run {
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One finished `rho` run.
struct Run {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts the exit code, showing the whole run when it differs.
    fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(self.code, Some(code), "unexpected exit code\n{self}");
        self
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "rho {:?} exited {:?}\n--- stdout\n{}--- stderr\n{}",
            self.args, self.code, self.stdout, self.stderr
        )
    }
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// A config with server-everything over stdio as `id`.
fn everything(id: &str) -> String {
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}]\n",
        toml_path(&everything_js())
    )
}

// ---------------------------------------------------------------------------
// key=value tool arguments

#[test]
fn key_value_arguments_are_typed_by_the_tools_schema() {
    let s = Scratch::new("kv-typed");
    let config = s.write("config.toml", &everything("ev"));
    let cfg = arg(&config);
    // get-sum's a and b are numbers: sent as strings, the server would
    // refuse them.
    let run = s.rho(&[
        "--config", cfg, "mcp", "call", "ev", "get-sum", "a=2", "b=3.5",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("5.5"), "{run}");
    // A string property takes the value as typed, digits and all.
    let run = s.rho(&["--config", cfg, "mcp", "call", "ev", "echo", "message=42"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: 42\n", "{run}");
    // The JSON object form still works beside it.
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "call",
        "ev",
        "get-sum",
        r#"{"a":1,"b":2}"#,
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains('3'), "{run}");
}

#[test]
fn an_unknown_key_or_an_untypeable_value_is_a_usage_error() {
    let s = Scratch::new("kv-refused");
    let config = s.write("config.toml", &everything("ev"));
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config", cfg, "mcp", "call", "ev", "get-sum", "a=2", "c=3",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("tool `get-sum` takes no argument `c` (its arguments: a, b)"),
        "{run}"
    );
    let run = s.rho(&[
        "--config", cfg, "mcp", "call", "ev", "get-sum", "a=two", "b=3",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("tool argument `a` must be a number: got `two`"),
        "{run}"
    );
    // Not key=value at all: refused before any server starts.
    let run = s.rho(&["--config", cfg, "mcp", "call", "ev", "echo", "message"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is not `key=value`"), "{run}");
}

// ---------------------------------------------------------------------------
// get, completions

#[test]
fn get_is_show() {
    let s = Scratch::new("get");
    let config = s.write("config.toml", &everything("ev"));
    let cfg = arg(&config);
    let get = s.rho(&["--config", cfg, "mcp", "get", "ev", "--json"]);
    get.expect_code(0);
    let show = s.rho(&["--config", cfg, "mcp", "show", "ev", "--json"]);
    show.expect_code(0);
    assert_eq!(get.stdout, show.stdout);
    let run = s.rho(&["--config", cfg, "mcp", "get", "nope"]);
    run.expect_code(2);
    assert!(run.stderr.contains("configured: ev"), "{run}");
}

#[test]
fn completions_cover_the_commands_for_each_shell() {
    let s = Scratch::new("completions");
    for shell in ["bash", "zsh", "fish"] {
        let run = s.rho(&["completions", shell]);
        run.expect_code(0);
        for word in ["mcp", "list", "call", "config", "connect"] {
            assert!(run.stdout.contains(word), "{shell}: no `{word}`\n{run}");
        }
    }
    let run = s.rho(&["completions", "tcsh"]);
    run.expect_code(2);
    assert!(run.stderr.contains("tcsh"), "{run}");
}
