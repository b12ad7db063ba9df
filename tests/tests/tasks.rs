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
//! work.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rho_host::{CallOptions, Cancel, Host};
use rho_proto_core::features::elicitation::{Form, FormAnswer};
use rho_proto_core::host::{Asked, HostServices, Responder};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::{CallError, CancelNotice, Progress};
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
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

fn rmcp_task_result<R: TestRuntime>() {
    a_task_settles_with_its_result_and_shows_its_status::<R>(Server::Rmcp);
}

fn rmcp_task_form<R: TestRuntime>() {
    a_question_inside_a_task_is_answered_by_a_form::<R>(Server::Rmcp);
}

fn rmcp_task_cancel<R: TestRuntime>() {
    cancelling_a_task_call_stops_the_servers_work::<R>(Server::Rmcp);
}

fn fastmcp_task_result<R: TestRuntime>() {
    a_task_settles_with_its_result_and_shows_its_status::<R>(Server::FastmcpTasks);
}

fn fastmcp_task_form<R: TestRuntime>() {
    a_question_inside_a_task_is_answered_by_a_form::<R>(Server::FastmcpTasks);
}

fn fastmcp_task_cancel<R: TestRuntime>() {
    cancelling_a_task_call_stops_the_servers_work::<R>(Server::FastmcpTasks);
}

fn mcp1_task_result<R: TestRuntime>() {
    a_task_settles_with_its_result_and_shows_its_status::<R>(Server::Mcp1);
}

fn mcp1_task_form<R: TestRuntime>() {
    a_question_inside_a_task_is_answered_by_a_form::<R>(Server::Mcp1);
}

fn mcp1_task_cancel<R: TestRuntime>() {
    cancelling_a_task_call_stops_the_servers_work::<R>(Server::Mcp1);
}

both_executors!(
    rmcp_task_result,
    rmcp_task_form,
    rmcp_task_cancel,
    fastmcp_task_result,
    fastmcp_task_form,
    fastmcp_task_cancel,
    mcp1_task_result,
    mcp1_task_form,
    mcp1_task_cancel,
    mcp1_optional_task_runs_as_a_task_only_when_asked,
);
