//! Bounded memory under floods, on both executors: a server that writes
//! 200 MB of lines that are not JSON-RPC and then a million log
//! notifications still has its call answered, a flood before the handshake
//! still ends at the startup budget, and the peak RSS of this process (which
//! runs rho's runtime; the servers are separate processes) stays under
//! 100 MiB in a debug build.
//!
//! This file is its own test binary so that nothing else shares the process
//! whose peak it measures, and its tests take one lock so they never overlap
//! (each resets the peak through `/proc/self/clear_refs` first).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rho_proto_core::runtime::CallOptions;
use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

/// The peak resident set a flood may cost this process.
const PEAK_LIMIT_KIB: u64 = 100 * 1024;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A status field of this process, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// Resets this process's peak RSS to its current RSS (Linux 4.0+).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS");
}

fn flood_server(id: &str, mode: &str, extra: &str) -> rho_proto_core::config::Config {
    parse_config(&format!("{}{extra}", node_server(id, &flood_js(), &[mode])))
}

fn flooded_call_completes_within_bounded_memory<R: TestRuntime>() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    reset_peak();
    let before = status_kib("VmHWM:");
    let config = flood_server("flood", "call", "tool_timeout_secs = 900\n");
    let runtime = R::start(&config, options_with(&[]));
    assert!(
        matches!(
            runtime.server("flood").map(|s| s.status),
            Some(ServerStatus::Ready(_))
        ),
        "{:?}",
        runtime.server("flood")
    );
    let result = runtime
        .call(("flood", "flood"), json!({}), CallOptions::new())
        .expect("the call is answered after the flood");
    assert_eq!(result.text(), "flooded");
    let peak = status_kib("VmHWM:");
    runtime.shutdown();
    assert!(
        peak < PEAK_LIMIT_KIB,
        "peak RSS {peak} KiB (was {before} KiB before the flood), over {PEAK_LIMIT_KIB} KiB"
    );
}

fn flood_before_the_handshake_ends_at_the_startup_budget<R: TestRuntime>() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    reset_peak();
    let config = flood_server("flood", "before-init", "startup_timeout_secs = 3\n");
    let started = Instant::now();
    let runtime = R::start(&config, options_with(&[]));
    let elapsed = started.elapsed();
    let peak = status_kib("VmHWM:");
    let error = match runtime.server("flood").map(|s| s.status) {
        Some(ServerStatus::Failed {
            error,
            kind: FailureKind::StartupTimeout,
        }) => error,
        other => panic!("a server that never answers initialize must time out: {other:?}"),
    };
    runtime.shutdown();
    assert!(
        error.contains("startup timed out after 3 s"),
        "the core's own budget must end it: {error}"
    );
    // A hang guard, not a performance claim: the budget plus shutdown.
    assert!(
        elapsed < Duration::from_secs(3 + 5),
        "startup took {elapsed:?}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "peak RSS {peak} KiB");
}

/// The fixture in HTTP mode on a loopback port; killed on drop.
struct HttpFlood {
    port: u16,
    child: std::process::Child,
}

impl HttpFlood {
    fn start() -> Self {
        let mut child = std::process::Command::new("node")
            .arg(flood_js())
            .arg("http")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the fixture");
        let port = listening_port(&mut child, "flood.js http");
        Self { port, child }
    }
}

impl Drop for HttpFlood {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn flooded_http_stream_completes_within_bounded_memory<R: TestRuntime>() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let fixture = HttpFlood::start();
    reset_peak();
    let config = parse_config(&format!(
        "[mcp.servers.flood]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}/mcp\"\ntool_timeout_secs = 900\n",
        fixture.port
    ));
    let runtime = R::start(&config, options_with(&[]));
    let result = runtime
        .call(("flood", "flood"), json!({}), CallOptions::new())
        .expect("the call is answered after a million events");
    assert_eq!(result.text(), "flooded");
    let peak = status_kib("VmHWM:");
    runtime.shutdown();
    assert!(
        peak < PEAK_LIMIT_KIB,
        "peak RSS {peak} KiB, over {PEAK_LIMIT_KIB} KiB"
    );
}

both_executors!(
    flooded_http_stream_completes_within_bounded_memory,
    flooded_call_completes_within_bounded_memory,
    flood_before_the_handshake_ends_at_the_startup_budget,
);
