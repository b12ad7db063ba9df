//! Shared helpers for the integration tests: where the pinned real servers
//! live, configs that start them, and process checks for "nothing left
//! behind".
//!
//! The servers are installed by `scripts/test` (`npm ci --prefix
//! tests/servers`); a test that finds them missing says so instead of
//! failing obscurely.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rho_io_blocking::RuntimeOptions;
use rho_proto_core::config::{self, Config};

/// The `tests/` folder of the repository.
pub fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The installed npm test servers.
pub fn node_modules() -> PathBuf {
    let dir = tests_dir().join("servers").join("node_modules");
    assert!(
        dir.join("@modelcontextprotocol").is_dir(),
        "the pinned MCP test servers are not installed: run `npm ci --prefix tests/servers` (scripts/test does it)"
    );
    dir
}

/// Entry point of `@modelcontextprotocol/server-everything`.
pub fn everything_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-everything/dist/index.js")
}

/// Entry point of `@modelcontextprotocol/server-filesystem`.
pub fn filesystem_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// The odd-on-purpose fixture server (`tests/servers/fixtures/misbehaving.js`).
pub fn misbehaving_js() -> PathBuf {
    tests_dir().join("servers/fixtures/misbehaving.js")
}

/// A TOML string literal for a path.
pub fn toml_path(path: &Path) -> String {
    toml_str(&path.display().to_string())
}

/// A TOML basic string literal.
pub fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `[mcp.servers.<id>]` table running `node <script> <args...>`.
pub fn node_server(id: &str, script: &Path, args: &[&str]) -> String {
    let mut all = vec![toml_path(script)];
    all.extend(args.iter().map(|a| toml_str(a)));
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}]\n",
        all.join(", ")
    )
}

/// Parses a config the test wrote; panics with the error if it is invalid.
pub fn parse_config(text: &str) -> Config {
    config::parse(text, "test.toml").unwrap_or_else(|e| panic!("test config invalid: {e}\n{text}"))
}

/// Runtime options with this process's environment plus `extra`, and a
/// short shutdown grace so tests stay quick.
pub fn options_with(extra: &[(&str, &str)]) -> RuntimeOptions {
    let mut options = RuntimeOptions::from_process_env();
    for (k, v) in extra {
        options.ambient.retain(|(name, _)| name != k);
        options.ambient.push(((*k).to_owned(), (*v).to_owned()));
    }
    options.shutdown_grace = Duration::from_millis(500);
    options
}

/// Whether a process with this pid exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_state(&stat) != Some('Z'),
        Err(_) => false,
    }
}

/// Waits up to two seconds for a process to be gone (the kernel reaps
/// reparented grandchildren asynchronously).
pub fn wait_gone(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !process_alive(pid)
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|stat| {
                    stat_state(&stat) != Some('Z') && stat_field(&stat, 5) == Some(pgid)
                })
        })
        .collect()
}

/// Reads a pid the fixture wrote, waiting briefly for the file.
pub fn read_pidfile(path: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh scratch directory under the system temp dir.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rho-tests-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The state letter of a `/proc/<pid>/stat` line.
fn stat_state(stat: &str) -> Option<char> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().next()?.chars().next()
}

/// The numeric field `n` (1-based, as in proc(5)) of a stat line; `n` ≥ 4.
fn stat_field(stat: &str, n: usize) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(n - 3)?.parse().ok()
}
