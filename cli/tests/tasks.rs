//! `rho mcp call` on tools that run as tasks, on both executors, against
//! the task servers whose task protocol is not ours
//! (`rho_tests::task_servers`): rmcp's and fastmcp-tasks' 2026-07-28 tasks
//! extension, where the server decides, and the Python SDK's 2025-11-25
//! core tasks, where a
//! `required` tool always runs as one and an `optional` one when `--task`
//! asks. Each shows: the result printed as any call's, `--json` carrying
//! the task's final result as sent (never the task handle), the task's
//! status on the terminal's progress line as it changes, and Ctrl-C
//! cancelling the task on the server (`tasks/cancel`), whose own record
//! shows the work stopped.

#![cfg(target_os = "linux")]

use std::process::{Command, Stdio};
use std::time::Duration;

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::pty::Pty;
use rho_tests::scene::{Scene, arg};
use rho_tests::task_servers::{TaskServer, recorded};

const RHO: &str = env!("CARGO_BIN_EXE_rho");

const SERVERS: [TaskServer; 3] = [TaskServer::Rmcp, TaskServer::FastmcpTasks, TaskServer::Mcp1];

/// A scene with `server` configured as `tasks`, recording into the file
/// returned beside the config's path.
fn scene(name: &str, rt: Runtime, server: TaskServer) -> (Scene, String, std::path::PathBuf) {
    let s = Scene::new(RHO, &format!("{name}-{server:?}"), rt);
    let record = s.dir().join("record.txt");
    let config = s.write("config.toml", &server.config("tasks", &record, 60));
    (s, arg(&config).to_owned(), record)
}

/// `rho --config CONFIG mcp call tasks` with `args` after it.
fn call_args<'a>(config: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--config", config, "mcp", "call", "tasks"];
    all.extend_from_slice(args);
    all
}

fn a_task_calls_result_prints_and_its_json_is_the_result_as_sent(rt: Runtime) {
    for server in SERVERS {
        let (s, config, _) = scene("task-call", rt, server);
        let run = s.rho(&call_args(&config, &["countdown", "steps=2"]));
        run.expect_code(0);
        assert_eq!(run.stdout, "counted 2\n", "{server:?}: {run}");
        let doc = s
            .rho(&call_args(&config, &["countdown", "steps=2", "--json"]))
            .json();
        assert_eq!(doc["model_text"], "counted 2", "{server:?}: {doc}");
        let sent = &doc["result"];
        assert_eq!(
            sent["content"][0]["text"], "counted 2",
            "{server:?}: the final result as sent: {doc}"
        );
        // (A 2026 result as sent says `resultType: "complete"`.)
        assert!(
            sent.get("task").is_none()
                && sent.get("taskId").is_none()
                && sent["resultType"] != "task",
            "{server:?}: the task handle is not the result: {doc}"
        );
    }
}

/// `--task` runs a tool whose `taskSupport` is `optional` as a task; without
/// it the call is a plain one. The server's record says how each came.
fn task_flag_runs_an_optional_tool_as_a_task(rt: Runtime) {
    let (s, config, record) = scene("task-flag", rt, TaskServer::Mcp1);
    let plain = s.rho(&call_args(&config, &["maybe_task", "marker=one"]));
    plain.expect_code(0);
    assert_eq!(plain.stdout, "one plainly\n", "{plain}");
    let tasked = s.rho(&call_args(&config, &["maybe_task", "marker=two", "--task"]));
    tasked.expect_code(0);
    assert_eq!(tasked.stdout, "two as a task\n", "{tasked}");
    let lines = std::fs::read_to_string(&record).expect("the server's record");
    assert_eq!(lines, "one plainly\ntwo as a task\n");
}

/// On a terminal, the task's status and its message show on the progress
/// line as they change, and the line is cleared before the result.
fn a_tasks_status_shows_on_the_terminal_as_it_changes(rt: Runtime) {
    for server in SERVERS {
        let (s, config, _) = scene("task-status", rt, server);
        let pty = Pty::sized(100, 20);
        let mut child = s
            .command()
            .args(call_args(&config, &["countdown", "steps=10"]))
            .stdout(Stdio::piped())
            .stderr(pty.slave())
            .spawn()
            .expect("start rho");
        let (mut screen, keyboard) = pty.record();
        let status = child.wait().expect("rho exits");
        drop(keyboard);
        let shown = screen.closed(Duration::from_secs(10)).unwrap_or_else(|p| p);
        assert!(status.success(), "{server:?}: {shown}");
        // The handle comes `working`; which steps a poll then sees
        // depends on timing, but the server's message of the moment shows
        // with the status, to the last one.
        assert!(
            shown.contains("task working") && shown.contains(" of 10"),
            "{server:?}: the status and its message on the progress line: {shown:?}"
        );
        assert!(
            shown.ends_with("\r\x1b[2K"),
            "{server:?}: the line is cleared at the end: {shown:?}"
        );
    }
}

/// Ctrl-C on a call running as a task: rho exits 130 saying the task was
/// cancelled, and the server's own record shows the work stopped.
fn ctrl_c_cancels_the_task_on_the_server(rt: Runtime) {
    for server in SERVERS {
        let (s, config, record) = scene("task-ctrl-c", rt, server);
        let transcript = s.dir().join("rho.jsonl");
        let child = s
            .command()
            .args(["--record", arg(&transcript)])
            .args(call_args(&config, &["slow_task", "marker=m"]))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rho");
        assert!(
            recorded(&record, "started m"),
            "{server:?}: the task's work never started"
        );
        let killed = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(killed.success());
        let output = child.wait_with_output().expect("rho exits");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(130), "{server:?}: {stderr}");
        // (Told as a task's cancel, or, when Ctrl-C came before the task's
        // handle, as a request's, the handle then cancelled at the close.)
        assert!(
            stderr.contains("call to server `tasks` cancelled;"),
            "{server:?}: {stderr}"
        );
        // rho's part: the server answered the `tasks/cancel` before the
        // session ended (the close waits for it).
        let transcript = std::fs::read_to_string(&transcript).expect("the transcript");
        let cancel_id = transcript
            .lines()
            .find_map(|line| {
                let sent = line.split("\"write\":\"").nth(1)?;
                let sent = sent.contains("tasks/cancel").then_some(sent)?;
                let id = sent.split("\\\"id\\\":").nth(1)?;
                Some(id.split(',').next()?.to_owned())
            })
            .unwrap_or_else(|| panic!("{server:?}: no tasks/cancel sent:\n{transcript}"));
        let answered = format!("{{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":{cancel_id},");
        let (before_close, _) = transcript
            .split_once("{\"closed\":")
            .unwrap_or_else(|| panic!("{server:?}: never closed:\n{transcript}"));
        assert!(
            before_close
                .lines()
                .any(|line| line.contains("\"in\":\"stdio\"") && line.contains(&answered)),
            "{server:?}: the cancel's answer came before the end:\n{transcript}"
        );
        // The server's part: its own record shows the work stopped. (Not
        // fastmcp-tasks': it acknowledges the cancel before its in-memory
        // worker stops the work, and that worker ends with its process,
        // which the session's end stops; its cancel is shown stopping the
        // work through the host library, where the session stays open.)
        if server != TaskServer::FastmcpTasks {
            assert!(
                recorded(&record, "cancelled m"),
                "{server:?}: the server's record shows the work stopped: {:?}",
                std::fs::read_to_string(&record),
            );
        }
    }
}

both_executors!(
    a_task_calls_result_prints_and_its_json_is_the_result_as_sent,
    task_flag_runs_an_optional_tool_as_a_task,
    a_tasks_status_shows_on_the_terminal_as_it_changes,
    ctrl_c_cancels_the_task_on_the_server,
);
