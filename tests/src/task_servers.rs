//! The task servers whose task protocol is not ours, for the task tests
//! of the host library (`tests/tests/tasks.rs`) and of the CLI
//! (`cli/tests/tasks.rs`): Rust `rmcp` 3.11.0's `TaskManager` and
//! `fastmcp-tasks` 4.1.8 (the 2026-07-28 tasks extension;
//! `tests/interop/rust`, `tasks-rmcp`, and
//! `tests/interop/python/fastmcp_tasks/server.py`), and Python `mcp`
//! 1.30.0's experimental tasks (the 2025-11-25 core tasks,
//! `tests/interop/python/mcp1/tasks_server.py`). All are installed by
//! `tests/interop/install` (scripts/test runs it), and append what their
//! tools did to the file named by `INTEROP_RECORD`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{tests_dir, toml_path};

/// A task server, one per era.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskServer {
    /// `rmcp` 3.11.0, the 2026-07-28 tasks extension.
    Rmcp,
    /// `fastmcp-tasks` 4.1.8 on fastmcp, the 2026-07-28 tasks extension.
    FastmcpTasks,
    /// Python `mcp` 1.30.0, the 2025-11-25 core tasks.
    Mcp1,
}

impl TaskServer {
    /// The program and arguments that start it.
    pub fn command(self) -> (PathBuf, Vec<PathBuf>) {
        match self {
            TaskServer::Rmcp => {
                let binary = tests_dir().join("../target/interop-rmcp/debug/tasks-rmcp");
                assert!(
                    binary.exists(),
                    "the rmcp tasks server is not built: run `tests/interop/install`"
                );
                (binary, Vec::new())
            }
            TaskServer::FastmcpTasks => python_server("fastmcp_tasks", "server.py"),
            TaskServer::Mcp1 => python_server("mcp1", "tasks_server.py"),
        }
    }

    /// The protocol version a session speaks with it.
    pub fn era(self) -> &'static str {
        match self {
            TaskServer::Rmcp | TaskServer::FastmcpTasks => "2026-07-28",
            TaskServer::Mcp1 => "2025-11-25",
        }
    }

    /// The config of server `id` running it over stdio, its tools
    /// recording into `record`, with a `budget`-second call budget.
    pub fn config(self, id: &str, record: &Path, budget: u64) -> String {
        let (program, args) = self.command();
        format!(
            "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}]\n\
             env = {{ INTEROP_RECORD = {} }}\nstartup_timeout_secs = 30\ntool_timeout_secs = {budget}\n",
            toml_path(&program),
            args.iter()
                .map(|a| toml_path(a))
                .collect::<Vec<_>>()
                .join(", "),
            toml_path(record),
        )
    }
}

/// `script` of `tests/interop/python/<venv>`, run by its venv's python.
fn python_server(venv: &str, script: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = tests_dir().join("interop/python").join(venv);
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the interop SDKs are not installed: run `tests/interop/install`"
    );
    (python, vec![dir.join(script)])
}

/// Waits, at most 20 seconds, until the file `record` holds the line
/// `line` (a state that must come); false if it never did.
pub fn recorded(record: &Path, line: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(record).unwrap_or_default();
        if text.lines().any(|l| l == line) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
