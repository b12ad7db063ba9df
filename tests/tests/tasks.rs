//! Tasks against servers whose task protocol is not ours
//! (`rho_tests::task_servers`), on both executors, through `Host::call`:
//! the 2026-07-28 tasks extension on Rust `rmcp` 3.11.0's `TaskManager`
//! and on `fastmcp-tasks` 4.1.8, and the 2025-11-25 experimental core
//! tasks on Python `mcp` 1.30.0. Only the tools' work is written here.
//!
//! Each era shows: a call the server runs as a task settles with the
//! task's result, its status messages reaching the caller as progress; a
//! question inside the task is answered by a form; and cancelling the call
//! sends `tasks/cancel`, which the server's own record shows stopped the
//! work. One test, [`task_matrix`], runs every check on every server and
//! executor and writes the table docs/testing.md shows.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rho_host::{CallOptions, Cancel, Host};
use rho_proto_core::features::elicitation::{Form, FormAnswer};
use rho_proto_core::host::{Asked, HostServices, Responder};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::{CallError, CancelNotice, Progress};
use rho_tests::matrix::{Smol, TestRuntime, Threads};
use rho_tests::task_servers::{TaskServer as Server, recorded};
use rho_tests::*;
use serde_json::json;

/// A person who fills every form in with `Ada`.
#[derive(Default)]
struct Ada {
    forms: Mutex<Vec<(Option<String>, Form)>>,
}

impl Responder for Ada {
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer {
        self.forms
            .lock()
            .expect("lock")
            .push((asked.what.clone(), form.clone()));
        FormAnswer::Submitted(
            form.fields
                .iter()
                .map(|f| (f.name.clone(), vec!["Ada".to_owned()]))
                .collect(),
        )
    }

    fn confirm_sampling(&self, _asked: &Asked, _question: &str) -> bool {
        false
    }
}

/// Starts `server` as `tasks` with a `budget`-second call budget, the
/// server recording into `record`, a person answering as `Ada`.
fn start<R: TestRuntime>(server: Server, record: &Path, ada: &Arc<Ada>, budget: u64) -> Host {
    let mut options = options_with(&[]);
    options.host = HostServices {
        responder: Some(Arc::clone(ada) as Arc<dyn Responder>),
        ..HostServices::default()
    };
    let host = R::start(
        &parse_config(&server.config("tasks", record, budget)),
        options,
    );
    match host.server("tasks").map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => {
            assert_eq!(report.protocol_version, server.era(), "{report:?}")
        }
        other => panic!("the tasks server is not ready: {other:?}"),
    }
    host
}

fn a_task_settles_with_its_result_and_shows_its_status<R: TestRuntime>(server: Server) {
    let scratch = scratch_dir(&format!("tasks-result-{server:?}-{}", R::NAME));
    let ada = Arc::new(Ada::default());
    let host = start::<R>(server, &scratch.join("record.txt"), &ada, 30);
    let mut seen: Vec<Progress> = Vec::new();
    let result = host
        .call(
            ("tasks", "countdown"),
            json!({"steps": 10}),
            CallOptions::new().on_progress(|p| seen.push(p)),
        )
        .unwrap_or_else(|e| panic!("{server:?}: the task's call failed: {e}"));
    assert!(!result.is_error, "{result:?}");
    assert_eq!(result.text(), "counted 10");
    let lines: Vec<&str> = seen.iter().filter_map(|p| p.message.as_deref()).collect();
    assert!(
        lines.iter().any(|l| l.starts_with("task working")),
        "{server:?}: the status reached the caller as progress: {lines:?}"
    );
    // Ten steps of 200 ms: long enough for a poll at any server's
    // interval (rmcp 100 ms, fastmcp-tasks and the Python SDK 1 s) to see
    // one.
    assert!(
        lines.iter().any(|l| l.contains("step ")),
        "{server:?}: a status message reached the caller: {lines:?}"
    );
    host.shutdown();
}

fn a_question_inside_a_task_is_answered_by_a_form<R: TestRuntime>(server: Server) {
    let scratch = scratch_dir(&format!("tasks-form-{server:?}-{}", R::NAME));
    let ada = Arc::new(Ada::default());
    let host = start::<R>(server, &scratch.join("record.txt"), &ada, 30);
    let result = host
        .call(("tasks", "greet_task"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("{server:?}: the task's call failed: {e}"));
    assert_eq!(result.text(), "Hello, Ada!", "{server:?}");
    let forms = ada.forms.lock().expect("lock").clone();
    assert_eq!(forms.len(), 1, "asked once: {forms:?}");
    assert_eq!(forms[0].0.as_deref(), Some("greet_task"), "{forms:?}");
    host.shutdown();
}

fn cancelling_a_task_call_stops_the_servers_work<R: TestRuntime>(server: Server) {
    let scratch = scratch_dir(&format!("tasks-cancel-{server:?}-{}", R::NAME));
    let record = scratch.join("record.txt");
    let _ = std::fs::remove_file(&record);
    let ada = Arc::new(Ada::default());
    let host = start::<R>(server, &record, &ada, 30);
    let cancel = Cancel::new();
    let outcome = std::thread::scope(|s| {
        let call = s.spawn(|| {
            host.call(
                ("tasks", "slow_task"),
                json!({"marker": "m1"}),
                CallOptions::new().cancel(&cancel),
            )
        });
        assert!(recorded(&record, "started m1"), "the task's work started");
        cancel.cancel();
        call.join().expect("the call's thread")
    });
    match outcome {
        // The cancel may come before rho has the task handle (the server
        // starts the work first): the call is cancelled as a request, and
        // the handle, when it comes, gets its `tasks/cancel`.
        Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) => assert!(
            matches!(
                notice,
                CancelNotice::TaskCancelRequested | CancelNotice::Told
            ),
            "{notice:?}"
        ),
        other => panic!("{server:?}: expected a cancelled call, got {other:?}"),
    }
    assert!(
        recorded(&record, "cancelled m1"),
        "{server:?}: the server's own record shows the work stopped: {:?}",
        std::fs::read_to_string(&record)
    );
    host.shutdown();
}

/// A 2025 tool whose `taskSupport` is `optional` runs as a plain call
/// unless the caller asks for a task (`CallOptions::as_task`), and then
/// as one: the server's own record says how each call came.
fn mcp1_optional_task_runs_as_a_task_only_when_asked<R: TestRuntime>() {
    let scratch = scratch_dir(&format!("tasks-optional-{}", R::NAME));
    let record = scratch.join("record.txt");
    let _ = std::fs::remove_file(&record);
    let ada = Arc::new(Ada::default());
    let host = start::<R>(Server::Mcp1, &record, &ada, 30);
    let plain = host
        .call(
            ("tasks", "maybe_task"),
            json!({"marker": "first"}),
            CallOptions::new(),
        )
        .expect("the plain call");
    assert_eq!(plain.text(), "first plainly");
    let mut seen: Vec<Progress> = Vec::new();
    let tasked = host
        .call(
            ("tasks", "maybe_task"),
            json!({"marker": "second"}),
            CallOptions::new().as_task().on_progress(|p| seen.push(p)),
        )
        .expect("the call as a task");
    assert_eq!(tasked.text(), "second as a task");
    assert!(
        seen.iter()
            .filter_map(|p| p.message.as_deref())
            .any(|l| l.starts_with("task ")),
        "the task's status reached the caller: {seen:?}"
    );
    let lines = std::fs::read_to_string(&record).expect("the server's record");
    assert_eq!(
        lines.lines().collect::<Vec<_>>(),
        ["first plainly", "second as a task"]
    );
    host.shutdown();
}

/// What a row of the table checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Check {
    /// The task's result, its status as progress.
    Result,
    /// A form inside the task.
    Form,
    /// A cancel that stops the server's work.
    Cancel,
    /// A 2025 `optional` tool as a task only when asked.
    Optional,
}

impl Check {
    const ALL: [Check; 4] = [Check::Result, Check::Form, Check::Cancel, Check::Optional];

    /// Its label in the table and in `TASKS_CHECKS`.
    fn label(self) -> &'static str {
        match self {
            Check::Result => "result",
            Check::Form => "form",
            Check::Cancel => "cancel",
            Check::Optional => "optional",
        }
    }

    /// Whether `server` offers what the check needs: an `optional` tool
    /// is the 2025 era's (in 2026 the server decides).
    fn offered_by(self, server: Server) -> bool {
        self != Check::Optional || server == Server::Mcp1
    }

    fn run<R: TestRuntime>(self, server: Server) {
        match self {
            Check::Result => a_task_settles_with_its_result_and_shows_its_status::<R>(server),
            Check::Form => a_question_inside_a_task_is_answered_by_a_form::<R>(server),
            Check::Cancel => cancelling_a_task_call_stops_the_servers_work::<R>(server),
            Check::Optional => mcp1_optional_task_runs_as_a_task_only_when_asked::<R>(),
        }
    }
}

/// How each server is named in the table.
fn server_label(server: Server) -> &'static str {
    match server {
        Server::Rmcp => "Rust `rmcp` 3.11.0 (`TaskManager`)",
        Server::FastmcpTasks => "`fastmcp-tasks` 4.1.8 (fastmcp 4.1.8)",
        Server::Mcp1 => "Python `mcp` 1.30.0 (experimental tasks)",
    }
}

/// Every check on every task server, on both executors, two at a time;
/// writes `target/tasks-table.md` (`scripts/interop-table tasks` copies it
/// into docs/testing.md) and fails listing each check that failed, with
/// its panic. `TASKS_CHECKS=cancel` (labels as in the table) runs only
/// those checks, for loops over one.
#[test]
fn task_matrix() {
    type Job = (Server, Check, &'static str, fn(Check, Server));
    let only = std::env::var("TASKS_CHECKS").unwrap_or_default();
    let wants = |c: Check| only.is_empty() || only.split(',').any(|w| w == c.label());
    let servers = [Server::Rmcp, Server::FastmcpTasks, Server::Mcp1];
    let mut jobs: Vec<Job> = Vec::new();
    for server in servers {
        for check in Check::ALL {
            if check.offered_by(server) && wants(check) {
                jobs.push((server, check, Threads::NAME, |c, s| c.run::<Threads>(s)));
                jobs.push((server, check, Smol::NAME, |c, s| c.run::<Smol>(s)));
            }
        }
    }
    let queue = Mutex::new(jobs);
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some((server, check, executor, run)) = queue.lock().expect("queue").pop()
                {
                    let outcome =
                        std::panic::catch_unwind(|| run(check, server)).map_err(|panic| {
                            panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                                .unwrap_or_default()
                        });
                    outcomes
                        .lock()
                        .expect("outcomes")
                        .push((server, check, executor, outcome));
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().expect("outcomes");
    let cell = |server: Server, check: Check| {
        if !check.offered_by(server) {
            return "—".to_owned();
        }
        let mark = |executor: &str| {
            outcomes
                .iter()
                .find(|(s, c, e, _)| *s == server && *c == check && *e == executor)
                .map_or(
                    "·",
                    |(_, _, _, outcome)| if outcome.is_ok() { "✓" } else { "✗" },
                )
        };
        format!("{}/{}", mark(Threads::NAME), mark(Smol::NAME))
    };
    let mut table = String::from(
        "| server | era | result, status as progress | form in a task | cancel stops the work | `optional` tool as a task when asked |\n|---|---|---|---|---|---|\n",
    );
    for server in servers {
        let cells: Vec<String> = Check::ALL.iter().map(|&c| cell(server, c)).collect();
        table.push_str(&format!(
            "| {} | {} | {} |\n",
            server_label(server),
            server.era(),
            cells.join(" | ")
        ));
    }
    table.push_str(
        "\nEach cell: the thread executor / the smol executor. ✓ works, ✗ fails (see the test output), · not run (`TASKS_CHECKS`), — not offered (in the 2026 era the server decides which calls are tasks).\n",
    );
    if only.is_empty() {
        let target = tests_dir().join("../target");
        let _ = std::fs::create_dir_all(&target);
        std::fs::write(target.join("tasks-table.md"), &table).expect("write the table");
    }
    eprintln!("{table}");
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|(server, check, executor, outcome)| {
            outcome
                .as_ref()
                .err()
                .map(|why| format!("{server:?} {} on {executor}: {why}", check.label()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} task check(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
