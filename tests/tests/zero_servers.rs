//! With no enabled server, building a runtime does nothing at all: no
//! thread, no process. This file holds one test so that its process has no
//! other test threads to confuse the count.

use rho_io_blocking::Runtime;
use rho_proto_core::runtime::Sessions as _;
use rho_proto_core::runtime::status::ServerStatus;
use rho_tests::{options_with, parse_config};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

fn child_processes() -> String {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
                .collect::<String>()
        })
        .unwrap_or_default()
}

#[test]
fn no_enabled_server_creates_no_thread_and_no_process() {
    let config = parse_config(
        "[mcp.servers.off]\ntransport = \"stdio\"\ncommand = \"node\"\nenabled = false\n\
         [other]\nkey = 1\n",
    );
    let before = threads();
    let runtime = Runtime::start(&config, options_with(&[]), |_| true);
    assert_eq!(threads(), before, "a thread was started");
    assert_eq!(child_processes().trim(), "", "a process was started");
    assert_eq!(
        runtime.server("off").map(|s| s.status),
        Some(ServerStatus::Disabled)
    );
    assert!(runtime.tools().is_empty());
    runtime.shutdown();

    let empty = parse_config("");
    let runtime = Runtime::start(&empty, options_with(&[]), |_| true);
    assert_eq!(threads(), before);
    assert!(runtime.servers().is_empty());
    runtime.shutdown();
}
