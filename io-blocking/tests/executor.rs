//! The thread executor on its own, against a tiny stdio server written
//! inline (node, like the rest of the suite): a deadline that moves
//! earlier wakes the driver on time, and shutdown leaves no thread and no
//! process behind.

use rho_proto_core::runtime::Sessions as _;
use std::sync::mpsc;
use std::time::Duration;

use rho_io_blocking::{Runtime, ToolCallError, options_from_process_env};
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::runtime::{CallOptions, ToolCall};
use rho_proto_core::session::CallError;
use serde_json::json;

/// Answers the handshake and `echo`; never answers `hang`.
const SERVER: &str = r#"
let buf = '';
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
process.stdin.on('data', (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const msg = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    if (msg.method === 'initialize') {
      send({ jsonrpc: '2.0', id: msg.id, result: { protocolVersion: '2025-06-18',
        capabilities: { tools: {} }, serverInfo: { name: 'inline', version: '0' } } });
    } else if (msg.method === 'tools/list') {
      send({ jsonrpc: '2.0', id: msg.id, result: { tools: [
        { name: 'echo', inputSchema: { type: 'object' } },
        { name: 'hang', inputSchema: { type: 'object' } }] } });
    } else if (msg.method === 'tools/call' && msg.params.name === 'echo') {
      send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text',
        text: 'echo ' + JSON.stringify(msg.params.arguments) }] } });
    } else if (msg.method === 'tools/call') {
      // hang: never answered
    } else if (msg.id !== undefined && msg.method !== undefined) {
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } });
    }
  }
});
process.stdin.on('end', () => process.exit(0));
"#;

fn start(id: &str, tool_timeout: &str) -> Runtime {
    let config = rho_proto_core::config::parse(
        &format!(
            "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [\"-e\", '''{SERVER}''']\ntool_timeout_secs = {tool_timeout}\n"
        ),
        "test.toml",
    )
    .expect("valid config");
    let mut options = options_from_process_env();
    options.shutdown_grace = Duration::from_millis(500);
    let runtime = Runtime::start(&config, options, |_| true);
    assert!(
        matches!(
            runtime.server(id).map(|s| s.status),
            Some(ServerStatus::Ready(_))
        ),
        "{:?}",
        runtime.server(id)
    );
    runtime
}

/// Threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .map(|comm| comm.trim_end().to_owned())
                .filter(|comm| comm.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_deadline_that_moves_earlier_wakes_the_driver_on_time() {
    let runtime = start("rearm", "0.3");
    // The session is idle: nothing but the driver thread can fire the
    // call's deadline, which is earlier than any it was sleeping towards.
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let _ = tx.send(runtime.submit(
                ToolCall::new(("rearm", "hang"), json!({})),
                CallOptions::new(),
            ));
        });
        let result = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the call's deadline fired: the driver was woken for it");
        assert!(
            matches!(result, Err(ToolCallError::Call(CallError::Timeout { .. }))),
            "{result:?}"
        );
    });
    let echoed = runtime
        .submit(
            ToolCall::new(("rearm", "echo"), json!({"n": 1})),
            CallOptions::new(),
        )
        .expect("the session carries on");
    assert_eq!(echoed.text(), r#"echo {"n":1}"#);
    runtime.shutdown();
}

#[test]
fn shutdown_joins_every_thread_and_reaps_the_child() {
    let runtime = start("td", "5");
    let pid = match runtime.server("td").map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report.pid.expect("a stdio server has a pid"),
        other => panic!("{other:?}"),
    };
    for n in 0..20 {
        let echoed = runtime
            .submit(
                ToolCall::new(("td", "echo"), json!({"n": n})),
                CallOptions::new(),
            )
            .expect("answered");
        assert_eq!(echoed.text(), format!(r#"echo {{"n":{n}}}"#));
    }
    let mut running = threads_named("rho-mcp-td");
    running.sort();
    assert_eq!(
        running,
        [
            "rho-mcp-td",
            "rho-mcp-td-err",
            "rho-mcp-td-in",
            "rho-mcp-td-out"
        ],
        "the driver and the three pipe threads, nothing per call"
    );
    runtime.shutdown();
    assert_eq!(threads_named("rho-mcp-td"), Vec::<String>::new());
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
    assert!(stat.is_err(), "the child is reaped: {stat:?}");
}
