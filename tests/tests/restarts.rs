//! A stdio server whose process dies after its session was established is
//! started again, on both executors: killed from outside it serves the
//! next call with its exported tools kept; a call in flight fails with the
//! exit; one that dies at every restart exhausts its attempts and ends
//! failed saying so; with `restart = { attempts = 0 }` it stays failed.
//! Every wait is for a state that must come, within a bound.

use std::path::Path;
use std::time::{Duration, Instant};

use rho_host::{CallOptions, Host};
use rho_io_blocking::ToolCallError;
use rho_proto_core::runtime::status::{FailureKind, ReadyReport, ServerStatus};
use rho_proto_core::session::CallError;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

/// How long a state that must come may take: a node server restarting on
/// a loaded machine takes seconds, never this long.
const WITHIN: Duration = Duration::from_secs(60);

/// Polls the status of server `id` until `until` says it has come, and
/// returns it; panics, with the last status seen, after [`WITHIN`].
fn wait_for(
    host: &Host,
    id: &str,
    what: &str,
    until: impl Fn(&ServerStatus) -> bool,
) -> ServerStatus {
    let deadline = Instant::now() + WITHIN;
    loop {
        let status = host.server(id).map(|s| s.status).expect("configured");
        if until(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "server `{id}` never became {what}; last: {status:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ready report of server `id`.
fn ready(host: &Host, id: &str) -> ReadyReport {
    match host.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

/// Waits until server `id` is ready again after `restarts` restarts.
fn restarted(host: &Host, id: &str, restarts: u32) -> ReadyReport {
    match wait_for(
        host,
        id,
        &format!("ready after restart {restarts}"),
        |s| matches!(s, ServerStatus::Ready(r) if r.restarts >= restarts),
    ) {
        ServerStatus::Ready(report) => report,
        _ => unreachable!(),
    }
}

/// The misbehaving fixture in `crash` mode (tool `boom` exits with status
/// 7, tool `fine` answers), refusing to start while `refuse` exists, with
/// `restart` as its policy.
fn crashing(id: &str, refuse: &Path, restart: &str) -> String {
    let mut text = node_server(
        id,
        &misbehaving_js(),
        &["crash", "--refuse-start", &refuse.display().to_string()],
    );
    text.push_str(&format!("restart = {restart}\n"));
    text
}

fn a_server_killed_mid_session_is_restarted_and_serves_the_next_call<R: TestRuntime>() {
    let mut text = node_server("everything", &everything_js(), &["stdio"]);
    text.push_str("restart = { attempts = 3, backoff_ms = 100 }\n");
    let host = R::start(&parse_config(&text), options_with(&[]));
    let before = ready(&host, "everything");
    let exported: Vec<String> = host
        .tools()
        .tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    let echo = |message: &str| {
        host.call(
            "mcp__everything__echo",
            json!({ "message": message }),
            CallOptions::new(),
        )
    };
    assert_eq!(echo("before").expect("echo").text(), "Echo: before");
    let first = before.pid.expect("a stdio server has a pid");

    // Killed from outside: its whole process group, as an OOM killer or a
    // person would.
    rho_os::process::kill_group(first);
    let after = restarted(&host, "everything", 1);
    let second = after.pid.expect("the new process's pid");
    assert_ne!(second, first, "a new process");
    assert!(wait_gone(first), "the dead process is reaped");
    assert_eq!(after.restarts, 1);
    assert!(
        after.withdrawn_tools.is_empty(),
        "{:?}",
        after.withdrawn_tools
    );

    // The next call is served, under the same exported name.
    assert_eq!(
        echo("after").expect("echo after the restart").text(),
        "Echo: after"
    );
    let now: Vec<String> = host
        .tools()
        .tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(now, exported, "the exported tools are kept");

    // Again: each restart is counted.
    rho_os::process::kill_group(second);
    let third = restarted(&host, "everything", 2);
    assert_eq!(echo("again").expect("echo").text(), "Echo: again");
    let last = third.pid.expect("pid");
    host.shutdown();
    assert!(wait_gone(last), "shutdown ends the restarted process");
    assert!(group_members(last).is_empty(), "and its group");
}

fn a_call_in_flight_fails_with_the_exit_and_a_call_during_the_restart_waits_for_it<
    R: TestRuntime,
>() {
    let dir = scratch_dir("restart-in-flight");
    let text = crashing(
        "crashy",
        &dir.join("refuse"),
        "{ attempts = 3, backoff_ms = 300 }",
    );
    let host = R::start(&parse_config(&text), options_with(&[]));
    let first = ready(&host, "crashy").pid.expect("pid");
    // The call's end is the session's own (its stderr tail goes to the
    // server's status, as before restarts).
    match host.call("mcp__crashy__boom", json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(CallError::SessionClosed { reason, .. })) => {
            assert!(reason.contains("server exited (exit status 7)"), "{reason}");
        }
        other => panic!("the call in flight fails with the exit, got {other:?}"),
    }
    // Made at once, during the backoff: it waits for the restart and is
    // served by the new process.
    let result = host
        .call("mcp__crashy__fine", json!({}), CallOptions::new())
        .expect("served after the restart");
    assert_eq!(result.text(), "called fine");
    let report = ready(&host, "crashy");
    assert_eq!(report.restarts, 1);
    assert_ne!(report.pid, Some(first));
    host.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

fn a_server_that_dies_at_every_restart_exhausts_its_attempts<R: TestRuntime>() {
    let dir = scratch_dir("restart-exhausted");
    let refuse = dir.join("refuse");
    let text = crashing("doomed", &refuse, "{ attempts = 2, backoff_ms = 50 }");
    let host = R::start(&parse_config(&text), options_with(&[]));
    ready(&host, "doomed");
    // From now on the program cannot start.
    std::fs::write(&refuse, "").expect("write the marker");
    let ended = host.call("mcp__doomed__boom", json!({}), CallOptions::new());
    assert!(
        matches!(
            ended,
            Err(ToolCallError::Call(CallError::SessionClosed { .. }))
        ),
        "{ended:?}"
    );
    let status = wait_for(&host, "doomed", "failed", |s| {
        matches!(s, ServerStatus::Failed { .. })
    });
    let ServerStatus::Failed { error, kind } = status else {
        unreachable!()
    };
    assert_eq!(kind, FailureKind::RestartsExhausted);
    assert!(
        error.starts_with("restarts exhausted: 2 restarts in a row failed; the last: "),
        "{error}"
    );
    assert!(
        error.contains("server exited during startup (exit status 5)"),
        "{error}"
    );
    assert!(error.contains("fatal: cannot start again"), "{error}");
    // Its tools stay exported, and a call says why it cannot be served.
    assert!(host.tools().get("mcp__doomed__fine").is_some());
    match host.call("mcp__doomed__fine", json!({}), CallOptions::new()) {
        Err(ToolCallError::ServerNotReady { reason, .. }) => {
            assert!(reason.contains("restarts exhausted"), "{reason}")
        }
        other => panic!("expected the server's failure, got {other:?}"),
    }
    host.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

fn a_server_with_restarts_off_stays_failed_after_it_dies<R: TestRuntime>() {
    let dir = scratch_dir("restart-off");
    let text = crashing("once", &dir.join("refuse"), "{ attempts = 0 }");
    let host = R::start(&parse_config(&text), options_with(&[]));
    let pid = ready(&host, "once").pid.expect("pid");
    rho_os::process::kill_group(pid);
    let status = wait_for(&host, "once", "failed", |s| {
        matches!(s, ServerStatus::Failed { .. })
    });
    let ServerStatus::Failed { error, kind } = status else {
        unreachable!()
    };
    assert_eq!(kind, FailureKind::Ended);
    assert!(error.contains("server exited"), "{error}");
    assert!(!error.contains("restart"), "nothing was restarted: {error}");
    assert!(matches!(
        host.call("mcp__once__fine", json!({}), CallOptions::new()),
        Err(ToolCallError::ServerNotReady { .. })
    ));
    host.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

both_executors!(
    a_server_killed_mid_session_is_restarted_and_serves_the_next_call,
    a_call_in_flight_fails_with_the_exit_and_a_call_during_the_restart_waits_for_it,
    a_server_that_dies_at_every_restart_exhausts_its_attempts,
    a_server_with_restarts_off_stays_failed_after_it_dies,
);
