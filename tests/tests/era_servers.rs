//! The protocol era against real processes, on both executors: a stateless
//! 2026-07-28 server (`tests/servers/fixtures/stateless.js`, which checks
//! the revision's wire rules and headers to the letter) over stdio and
//! Streamable HTTP, and server-everything, a 2025 server, reached through
//! the `server/discover` probe's fallback.

use std::process::{Child, Command, Stdio};

use rho_host::CallOptions;
use rho_host::Host;
use rho_proto_core::runtime::status::{ReadyReport, ServerStatus};
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

fn stateless_js() -> std::path::PathBuf {
    tests_dir().join("servers/fixtures/stateless.js")
}

fn ready(runtime: &Host, id: &str) -> ReadyReport {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

/// The fixture in HTTP mode on a loopback port; killed on drop.
struct StatelessHttp {
    child: Child,
    port: u16,
}

impl StatelessHttp {
    fn start() -> Self {
        let mut child = Command::new("node")
            .arg(stateless_js())
            .arg("http")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let port = listening_port(&mut child, "stateless.js http");
        Self { child, port }
    }

    fn config(&self, id: &str) -> String {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}/mcp\"\nlog_level = \"warning\"\n",
            self.port
        )
    }
}

impl Drop for StatelessHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn a_stateless_stdio_server_is_driven_in_the_2026_era<R: TestRuntime>() {
    let mut text = node_server("modern", &stateless_js(), &["stdio"]);
    text.push_str("log_level = \"info\"\n");
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    let report = ready(&runtime, "modern");
    assert_eq!(report.era(), "2026-07-28");
    assert!(report.is_stateless());
    assert_eq!(report.server_info.name, "stateless-fixture");
    // The server reads identity and log level from each request's _meta.
    let who = runtime
        .call(("modern", "whoami"), json!({}), CallOptions::new())
        .expect("whoami");
    assert_eq!(who.text(), "rho at log level info");
    let echo = runtime
        .call(
            "mcp__modern__echo",
            json!({"message": "hi", "region": "eu"}),
            CallOptions::new(),
        )
        .expect("echo");
    assert_eq!(echo.text(), "Echo: hi");
    runtime.shutdown();
}

fn a_stateless_http_server_accepts_every_header_rho_sends<R: TestRuntime>() {
    let server = StatelessHttp::start();
    let runtime = R::start(&parse_config(&server.config("modern")), options_with(&[]));
    let report = ready(&runtime, "modern");
    assert_eq!(report.era(), "2026-07-28");
    // The fixture answers -32020 to any header that does not match the
    // body: MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-Region
    // (Base64 here: not ASCII), and one that is absent for a null.
    for region in [json!("Région ü"), json!("us-west1"), json!(null)] {
        let echo = runtime
            .call(
                ("modern", "echo"),
                json!({"message": "hi", "region": region}),
                CallOptions::new(),
            )
            .unwrap_or_else(|e| panic!("{region}: {e}"));
        assert!(!echo.is_error, "{echo:?}");
        assert_eq!(echo.text(), "Echo: hi");
    }
    let who = runtime
        .call(("modern", "whoami"), json!({}), CallOptions::new())
        .expect("whoami");
    assert_eq!(who.text(), "rho at log level warning");
    runtime.shutdown();
}

fn a_2025_server_over_http_is_reached_through_the_probes_fallback<R: TestRuntime>() {
    let server = EverythingHttp::start();
    let runtime = R::start(
        &parse_config(&server.config("everything")),
        options_with(&[]),
    );
    let report = ready(&runtime, "everything");
    assert_eq!(report.era(), "2025-11-25");
    assert!(!report.is_stateless());
    let echo = runtime
        .call(
            ("everything", "echo"),
            json!({"message": "old"}),
            CallOptions::new(),
        )
        .expect("echo");
    assert_eq!(echo.text(), "Echo: old");
    runtime.shutdown();
}

both_executors!(
    a_stateless_stdio_server_is_driven_in_the_2026_era,
    a_stateless_http_server_accepts_every_header_rho_sends,
    a_2025_server_over_http_is_reached_through_the_probes_fallback,
);
