//! With no enabled server, the smol runtime does nothing at all: no task
//! that does IO, no thread, no process, and it never touches async-io's
//! reactor, so a host that drives it with futures-lite's `block_on` (as
//! the `rho` CLI does when nothing is enabled) starts no thread at all.
//! (`smol::block_on` itself starts async-io's thread on first use.) One
//! test in this file so no other test's threads confuse the count.

use rho_proto_core::runtime::Sessions as _;
use std::sync::Arc;

use rho_io_smol::Runtime;
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
        "[mcp.servers.off]\ntransport = \"stdio\"\ncommand = \"node\"\nenabled = false\n",
    );
    let executor = Arc::new(smol::Executor::new());
    let before = threads();
    let runtime = smol::future::block_on(executor.run(Runtime::start(
        &executor,
        &config,
        options_with(&[]),
        |_| true,
    )));
    assert_eq!(threads(), before, "a thread was started");
    assert_eq!(child_processes().trim(), "", "a process was started");
    assert!(executor.is_empty(), "a task was spawned");
    assert_eq!(
        runtime.server("off").map(|s| s.status),
        Some(ServerStatus::Disabled)
    );
    smol::future::block_on(executor.run(runtime.shutdown()));
    assert_eq!(threads(), before);
}
