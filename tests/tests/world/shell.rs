//! A row through the CLI: `rho mcp shell` with the row's server alone,
//! fed `/call <id>:<tool> <arguments>` and `/tools <id>` on a pipe, as a
//! script would drive it.
//!
//! It runs the built `rho` binary found beside this test's binary
//! (`<target>/debug/rho`): only the CLI crate's own tests can name it
//! with `CARGO_BIN_EXE_rho`, and the shell runs belong with the rows they
//! check and the table they fill. `cargo test --workspace` builds it
//! before any test runs; a binary older than its sources fails the test,
//! saying how to build it.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::SystemTime;

use rho_tests::CliRuntime;
use rho_tests::scene::Scene;
use rho_tests::tests_dir;

use crate::fixtures::{PROCESS_BOUND, run_bounded};
use crate::python::Lists;
use crate::rows::{Call, Ctx, Row};

/// A shell run: the row's call, and what the shell printed (or why it
/// did not end).
pub(crate) type ShellRun = (Call, Result<Output, String>);

/// The shell's run, to its end.
pub(crate) fn shell_row(rho: &Path, row: &Row, ctx: &Ctx, runtime: CliRuntime) -> ShellRun {
    let (launch, call) = (row.setup)(ctx);
    let scene = Scene::new(
        &rho.display().to_string(),
        &format!("world-shell-{}", row.id),
        runtime,
    )
    .with_config(&launch.config(row.id));
    let mut command = scene.command();
    command.args(["mcp", "shell"]).current_dir(ctx.dir);
    let input = format!(
        "/call {id}:{tool} {arguments}\n/tools {id}\n",
        id = row.id,
        tool = call.tool,
        arguments = call.arguments
    );
    let output = run_bounded(command, input.as_bytes(), PROCESS_BOUND);
    (call, output)
}

/// What the shell printed against the row's checks: the server ready,
/// every model-visible tool shown, the call's answer, no WARN or ERROR
/// line on stderr, a clean exit.
pub(crate) fn check_shell(
    row: &Row,
    call: &Call,
    python: &Lists,
    output: &Output,
) -> Result<(), String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let status = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(row.id))
        .unwrap_or_default();
    if !status.contains(" ready ") {
        return Err(format!("not ready: {:?}", status.trim()));
    }
    for tool in python.for_model() {
        let shown = format!("({}:{tool})", row.id);
        if !stdout.contains(&shown) {
            return Err(format!(
                "`/tools {}` does not show {shown}:\n{stdout}",
                row.id
            ));
        }
    }
    // The call's answer: after the banner that ends the start, before
    // the first tool `/tools` shows (tool descriptions must not count).
    let answer: String = stdout
        .lines()
        .skip_while(|l| !l.contains("/help the commands"))
        .skip(1)
        .take_while(|l| !l.starts_with("mcp__"))
        .collect::<Vec<_>>()
        .join("\n");
    let refused = answer.contains(&format!("{}:{} reported an error", row.id, call.tool));
    call.expect
        .check(refused, &answer)
        .map_err(|e| format!("`/call`: {e}\n{stdout}"))?;
    if let Some(line) = stderr
        .lines()
        .find(|l| l.contains(" WARN ") || l.contains(" ERROR "))
    {
        return Err(format!("stderr: {line}"));
    }
    if !output.status.success() {
        return Err(format!("exited {}: {stderr}", output.status));
    }
    Ok(())
}

/// The built `rho` beside this test's binary; fails when it is missing or
/// older than any source it is built from.
pub(crate) fn rho_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let rho = exe
        .parent()
        .and_then(Path::parent)
        .map(|debug| debug.join("rho"))
        .expect("the test binary lives in <target>/debug/deps");
    let built = modified(&rho).unwrap_or_else(|| {
        panic!(
            "no built rho at {}: run `cargo build -p rho-cli` with the same CARGO_TARGET_DIR (scripts/test's `cargo test --workspace` builds it)",
            rho.display()
        )
    });
    let root = tests_dir().join("..");
    let mut sources = vec![root.join("Cargo.lock"), root.join("Cargo.toml")];
    for krate in ["cli", "host", "proto-core", "io-smol", "io-blocking", "os"] {
        sources.push(root.join(krate).join("Cargo.toml"));
        files_under(&root.join(krate).join("src"), &mut sources);
    }
    if let Some(newer) = sources
        .iter()
        .find(|s| modified(s).is_some_and(|m| m > built))
    {
        panic!(
            "{} is older than {}: run `cargo build -p rho-cli` with the same CARGO_TARGET_DIR first",
            rho.display(),
            newer.display()
        );
    }
    rho
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}
