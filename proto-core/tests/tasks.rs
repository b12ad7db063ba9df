//! Tasks, both eras, as the session's transitions (`session/tasks.rs`):
//! a call the server turns into a task settles with the task's result,
//! polled at the server's (clamped) interval; its input requests become
//! the call's questions; cancelling it, its budget running out and
//! closing send `tasks/cancel`. Scripted servers and a fake clock.

use std::time::Duration;

use rho_proto_core::features::elicitation::FormAnswer;
use rho_proto_core::features::tasks::{MAX_POLL_INTERVAL, MIN_POLL_INTERVAL};
use rho_proto_core::http::{HttpOptions, HttpRequest};
use rho_proto_core::session::{
    CallError, CallId, CancelNotice, Event, MAX_FAILED_POLLS, Question, SessionOptions,
    SessionState, TaskAugmentation, Timer,
};
use rho_proto_core::wire::jsonrpc::Message;
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::{Value, json};
use url::Url;

mod common;
use common::{Http, Stdio};

const TASK: &str = "786512e2-9e0d-44bd-8f29-789f320fe840";

fn options() -> SessionOptions {
    let mut o = SessionOptions::stdio("demo");
    o.startup_timeout = Duration::from_secs(10);
    o.tool_timeout = Duration::from_secs(5);
    o.request_timeout = Duration::from_secs(3);
    o.elicitation = true;
    o
}

/// What these tests read off the shared stdio harness.
impl Stdio {
    /// A 2026-era session, ready with tool `slow`.
    fn modern(options: SessionOptions) -> Self {
        let mut h = Self::new(options);
        h.drive_answering(&[
            (
                "server/discover",
                json!({"supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
            ),
            (
                "tools/list",
                json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"}}],
                       "ttlMs": 600000, "cacheScope": "public"}),
            ),
        ]);
        assert_eq!(h.session.state(), SessionState::Ready, "{:?}", h.events);
        h.clear();
        h
    }

    /// A 2025-era session, ready with tools `required`, `optional` and
    /// `plain`, whose server declared `capabilities`.
    fn legacy(capabilities: Value) -> Self {
        let mut o = options();
        o.protocol_version = "2025-11-25".into();
        let mut h = Self::new(o);
        let tool = |name: &str, support: Option<&str>| {
            let mut t = json!({"name": name, "inputSchema": {"type": "object"}});
            if let Some(support) = support {
                t["execution"] = json!({"taskSupport": support});
            }
            t
        };
        h.drive_answering(&[
            (
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "serverInfo": {"name": "py", "version": "1"}}),
            ),
            (
                "tools/list",
                json!({"tools": [tool("required", Some("required")),
                                 tool("optional", Some("optional")), tool("plain", None)]}),
            ),
        ]);
        assert_eq!(h.session.state(), SessionState::Ready, "{:?}", h.events);
        h.clear();
        h
    }

    fn call(&mut self, tool: &str) -> CallId {
        let call = self
            .session
            .call_tool(self.now, tool, json!({}))
            .expect("ready");
        self.drain();
        call
    }

    /// The requests sent for `method`, their params.
    fn sent_for(&self, method: &str) -> Vec<Value> {
        self.sent
            .iter()
            .filter_map(|m| match m {
                Message::Request {
                    method: m, params, ..
                } if m == method => Some(params.clone().unwrap_or(Value::Null)),
                _ => None,
            })
            .collect()
    }

    fn result(&self) -> Option<&Result<CallToolResult, CallError>> {
        self.events.iter().rev().find_map(|e| match e {
            Event::CallCompleted { result, .. } => Some(result),
            _ => None,
        })
    }

    /// The progress messages reported so far.
    fn progress_lines(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Progress { progress, .. } => progress.message.clone(),
                _ => None,
            })
            .collect()
    }

    /// Answers the last request (it must be `method`) with `result`.
    fn answer_last(&mut self, method: &str, result: Value) {
        let (id, sent, _) = self.last_numbered_request();
        assert_eq!(sent, method, "{:?}", self.sent);
        self.reply(id, result);
    }

    /// Fires the next deadline, which must be a task poll, and checks the
    /// `tasks/get` it sent; returns how long the wait was.
    fn poll(&mut self) -> Duration {
        assert_eq!(self.session.timeout_reason(), Some(Timer::TaskPoll));
        let waited = self.step();
        let (_, method, params) = self.last_numbered_request();
        assert_eq!(method, "tasks/get");
        assert_eq!(params["taskId"], TASK);
        waited
    }

    fn question(&self) -> Option<rho_proto_core::session::QuestionId> {
        self.events.iter().rev().find_map(|e| match e {
            Event::Question { question, .. } => Some(*question),
            _ => None,
        })
    }
}

/// A 2026 task in `status`, with `extra` members.
fn task(status: &str, extra: Value) -> Value {
    let mut t = json!({"taskId": TASK, "status": status, "createdAt": "2026-01-01T00:00:00Z",
                       "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 2000});
    for (k, v) in extra.as_object().into_iter().flatten() {
        t[k] = v.clone();
    }
    t
}

fn handle(extra: Value) -> Value {
    let mut t = task("working", extra);
    t["resultType"] = json!("task");
    t
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

fn name_form() -> Value {
    json!({"method": "elicitation/create", "params": {"mode": "form", "message": "Your name?",
           "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                               "required": ["name"]}}})
}

// ----- 2026-07-28: the tasks extension -----

impl Stdio {
    /// The call ended as cancelled, the server told with `tasks/cancel`.
    fn ended_cancelling_the_task(&self) {
        assert!(
            matches!(
                self.result(),
                Some(Err(CallError::Cancelled {
                    notice: CancelNotice::TaskCancelRequested,
                    ..
                }))
            ),
            "{:?}",
            self.events
        );
    }

    /// The next poll hears that the task completed with the text
    /// `expected`, and the call ends with it.
    fn completes_with(&mut self, expected: &str) {
        self.poll();
        self.answer_last(
            "tasks/get",
            task("completed", json!({"result": text(expected)})),
        );
        assert!(
            matches!(self.result(), Some(Ok(r)) if r.text() == expected),
            "{:?}",
            self.events
        );
    }
}

#[test]
fn a_task_handle_is_polled_at_its_interval_and_the_call_settles_with_its_result() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    let (_, _, params) = h.last_numbered_request();
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "the extension is declared on the call"
    );
    h.answer_last("tools/call", handle(json!({"statusMessage": "queued"})));
    assert!(h.result().is_none(), "{:?}", h.events);
    assert_eq!(h.progress_lines(), ["task working: queued"]);
    assert_eq!(h.poll(), Duration::from_secs(2));
    h.answer_last(
        "tasks/get",
        task("working", json!({"statusMessage": "1 of 2"})),
    );
    assert_eq!(
        h.progress_lines(),
        ["task working: queued", "task working: 1 of 2"]
    );
    h.completes_with("done");
    // Settled: nothing more is polled, nothing cancelled.
    assert_eq!(h.session.timeout_reason(), None);
    assert!(h.sent_for("tasks/cancel").is_empty());
    assert!(!h.methods().contains(&"notifications/cancelled".to_owned()));
}

#[test]
fn the_poll_interval_is_clamped_to_rhos_bounds() {
    for (asked, waited) in [
        (json!(0), MIN_POLL_INTERVAL),
        (json!(36_000_000), MAX_POLL_INTERVAL),
        (Value::Null, Duration::from_secs(1)),
    ] {
        let mut o = options();
        o.tool_timeout = Duration::from_secs(120);
        let mut h = Stdio::modern(o);
        h.call("slow");
        h.answer_last("tools/call", handle(json!({"pollIntervalMs": asked})));
        assert_eq!(h.poll(), waited, "{asked}");
        // A poll's answer sets the next interval.
        h.answer_last("tasks/get", task("working", json!({"pollIntervalMs": 700})));
        assert_eq!(h.poll(), Duration::from_millis(700));
    }
}

#[test]
fn a_bad_task_handle_fails_the_call_with_nothing_to_cancel() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last(
        "tools/call",
        json!({"resultType": "task", "status": "working"}),
    );
    assert!(
        matches!(h.result(), Some(Err(CallError::Task { reason, .. })) if reason.contains("bad task handle") && reason.contains("taskId")),
        "{:?}",
        h.events
    );
    assert!(h.sent_for("tasks/cancel").is_empty());
    assert_eq!(h.session.timeout_reason(), None);
}

#[test]
fn an_unknown_status_fails_the_call_and_cancels_the_task() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    h.answer_last("tasks/get", task("paused", json!({})));
    assert!(
        matches!(h.result(), Some(Err(CallError::Task { reason, .. })) if reason.contains("`paused`")),
        "{:?}",
        h.events
    );
    let cancels = h.sent_for("tasks/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["taskId"], TASK);
}

#[test]
fn a_failed_task_ends_the_call_with_its_error_and_a_cancelled_one_says_so() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    h.answer_last(
        "tasks/get",
        task(
            "failed",
            json!({"error": {"code": -32603, "message": "rate limited"}}),
        ),
    );
    assert!(
        matches!(h.result(), Some(Err(CallError::Rpc { error, .. })) if error.message == "rate limited"),
        "{:?}",
        h.events
    );
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    h.answer_last(
        "tasks/get",
        task("cancelled", json!({"statusMessage": "operator"})),
    );
    assert!(
        matches!(h.result(), Some(Err(CallError::Task { reason, .. })) if reason.contains("cancelled by the server (operator)")),
        "{:?}",
        h.events
    );
    assert!(h.sent_for("tasks/cancel").is_empty());
}

#[test]
fn a_task_the_server_no_longer_knows_fails_the_call() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    let (id, _, _) = h.last_numbered_request();
    h.say(
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "Task not found"}}),
    );
    assert!(
        matches!(h.result(), Some(Err(CallError::Task { reason, .. })) if reason.contains("Task not found")),
        "{:?}",
        h.events
    );
    assert!(h.sent_for("tasks/cancel").is_empty(), "nothing to cancel");
}

#[test]
fn a_task_that_never_finishes_runs_out_of_budget_and_is_cancelled() {
    let mut h = Stdio::modern(options());
    let started = h.now;
    h.call("slow");
    h.answer_last("tools/call", handle(json!({"pollIntervalMs": 1000})));
    // The server answers every poll, and nothing changes.
    while h.result().is_none() {
        if h.session.timeout_reason() == Some(Timer::TaskPoll) {
            h.poll();
            h.answer_last(
                "tasks/get",
                task("working", json!({"pollIntervalMs": 1000})),
            );
        } else {
            h.step();
        }
    }
    assert!(
        matches!(h.result(), Some(Err(CallError::Timeout { budget, .. })) if *budget == Duration::from_secs(5)),
        "{:?}",
        h.events
    );
    assert_eq!(h.now - started, Duration::from_secs(5));
    assert_eq!(h.sent_for("tasks/cancel").len(), 1);
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    assert!(!h.methods().contains(&"notifications/cancelled".to_owned()));
    assert_eq!(
        h.session.timeout_reason(),
        Some(Timer::Request),
        "only the cancel's own deadline"
    );
}

#[test]
fn status_changes_keep_a_task_alive_past_its_budget() {
    let mut h = Stdio::modern(options());
    let started = h.now;
    h.call("slow");
    h.answer_last("tools/call", handle(json!({"pollIntervalMs": 1000})));
    for n in 0..8 {
        h.poll();
        h.answer_last(
            "tasks/get",
            task(
                "working",
                json!({"pollIntervalMs": 1000, "statusMessage": format!("step {n}")}),
            ),
        );
    }
    assert!(h.now - started > Duration::from_secs(5));
    h.completes_with("late");
}

#[test]
fn polls_lost_in_a_row_fail_the_call_and_one_lost_poll_does_not() {
    let mut o = options();
    o.tool_timeout = Duration::from_secs(60);
    let mut h = Stdio::modern(o);
    h.call("slow");
    h.answer_last("tools/call", handle(json!({"pollIntervalMs": 250})));
    // One lost poll, then an answer: the count starts again.
    h.poll();
    assert_eq!(h.step(), Duration::from_secs(3), "the poll's own deadline");
    h.poll();
    h.answer_last("tasks/get", task("working", json!({"pollIntervalMs": 250})));
    for _ in 0..MAX_FAILED_POLLS {
        assert!(h.result().is_none(), "{:?}", h.events);
        h.poll();
        h.step();
    }
    assert!(
        matches!(h.result(), Some(Err(CallError::Transport { reason, .. })) if reason.contains("unanswered")),
        "{:?}",
        h.events
    );
}

#[test]
fn cancelling_a_task_call_sends_tasks_cancel_and_drops_the_late_poll_answer() {
    let mut h = Stdio::modern(options());
    let call = h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    let (poll, _, _) = h.last_numbered_request();
    h.session.cancel_call(h.now, call);
    h.drain();
    h.ended_cancelling_the_task();
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    assert!(!h.methods().contains(&"notifications/cancelled".to_owned()));
    // The poll's late answer and the cancel's acknowledgement are quiet.
    h.reply(poll, task("working", json!({})));
    let (cancel, _, _) = h.last_numbered_request();
    h.reply(cancel, json!({"resultType": "complete"}));
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_))),
        "{:?}",
        h.events
    );
    assert_eq!(
        h.events
            .iter()
            .filter(|e| matches!(e, Event::CallCompleted { .. }))
            .count(),
        1
    );
}

/// A 2026 task that asks for a name: the question, its key, and the call.
fn asking() -> (Stdio, rho_proto_core::session::QuestionId) {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    h.answer_last(
        "tasks/get",
        task(
            "input_required",
            json!({"inputRequests": {"name": name_form()}}),
        ),
    );
    let question = h.question().expect("asked");
    assert!(matches!(
        h.events
            .iter()
            .rev()
            .find(|e| matches!(e, Event::Question { .. })),
        Some(Event::Question {
            kind: Question::Elicitation(_),
            ..
        })
    ));
    (h, question)
}

#[test]
fn input_required_is_asked_once_and_answered_with_tasks_update() {
    let (mut h, question) = asking();
    // The budget is paused while the person answers; polling goes on and
    // the same key is not asked again.
    for _ in 0..5 {
        h.poll();
        h.answer_last(
            "tasks/get",
            task(
                "input_required",
                json!({"inputRequests": {"name": name_form()}}),
            ),
        );
    }
    assert_eq!(
        h.events
            .iter()
            .filter(|e| matches!(e, Event::Question { .. }))
            .count(),
        1
    );
    assert!(h.result().is_none(), "the paused budget did not run out");
    h.session.answer_elicitation(
        h.now,
        question,
        FormAnswer::Submitted([("name".to_owned(), vec!["Luca".to_owned()])].into()),
    );
    h.drain();
    let updates = h.sent_for("tasks/update");
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["taskId"], TASK);
    assert_eq!(
        updates[0]["inputResponses"],
        json!({"name": {"action": "accept", "content": {"name": "Luca"}}})
    );
    h.answer_last("tasks/update", json!({"resultType": "complete"}));
    h.completes_with("Hello, Luca!");
}

#[test]
fn a_declined_form_is_sent_as_a_decline_and_the_task_goes_on() {
    let (mut h, question) = asking();
    h.session
        .answer_elicitation(h.now, question, FormAnswer::Declined);
    h.drain();
    assert_eq!(
        h.sent_for("tasks/update")[0]["inputResponses"],
        json!({"name": {"action": "decline"}})
    );
    assert!(h.result().is_none());
    assert!(h.sent_for("tasks/cancel").is_empty());
}

#[test]
fn a_dismissed_form_cancels_the_task_and_the_call() {
    let (mut h, question) = asking();
    h.session
        .answer_elicitation(h.now, question, FormAnswer::Dismissed);
    h.drain();
    assert!(h.sent_for("tasks/update").is_empty());
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    h.ended_cancelling_the_task();
}

#[test]
fn input_a_run_cannot_give_is_declined_or_ends_the_task() {
    // No person to ask: the form is declined at once, without a question.
    let mut o = options();
    o.elicitation = false;
    let mut h = Stdio::modern(o.clone());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    h.answer_last(
        "tasks/get",
        task(
            "input_required",
            json!({"inputRequests": {"name": name_form()}}),
        ),
    );
    assert!(h.question().is_none());
    assert_eq!(
        h.sent_for("tasks/update")[0]["inputResponses"],
        json!({"name": {"action": "decline"}})
    );
    // Only sampling, which this run may not do: nothing can be answered.
    let mut h = Stdio::modern(o);
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.poll();
    h.answer_last(
        "tasks/get",
        task(
            "input_required",
            json!({"inputRequests": {"llm": {"method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 10}}}}),
        ),
    );
    assert!(
        matches!(h.result(), Some(Err(CallError::InputRequired { reason, .. })) if reason.contains("cannot give")),
        "{:?}",
        h.events
    );
    assert_eq!(h.sent_for("tasks/cancel").len(), 1);
}

#[test]
fn closing_the_session_cancels_a_running_task() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.session.close(h.now);
    h.drain();
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    assert!(matches!(
        h.result(),
        Some(Err(CallError::SessionClosed { .. }))
    ));
}

/// Over stdio the transport ends at `Closed` (stdin closed, the server
/// stopped), so the close holds it until the server has answered the
/// task's `tasks/cancel`: a server stopped before it acts on the cancel
/// would leave the work running. The caller is released at once.
#[test]
fn over_stdio_closing_ends_once_the_tasks_cancel_is_answered() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.session.close(h.now);
    h.drain();
    assert!(
        matches!(h.result(), Some(Err(CallError::SessionClosed { .. }))),
        "{:?}",
        h.events
    );
    let ended = |h: &Stdio| h.events.iter().any(|e| matches!(e, Event::Closed(_)));
    assert!(!ended(&h), "the end waits for the cancel: {:?}", h.events);
    assert_eq!(h.session.timeout_reason(), Some(Timer::Farewell));
    // What is not the cancel's answer leaves it waiting.
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tasks",
                 "params": task("working", json!({}))}));
    h.reply(999, json!({}));
    assert!(!ended(&h), "{:?}", h.events);
    h.answer_last("tasks/cancel", task("cancelled", json!({})));
    assert!(ended(&h), "{:?}", h.events);
    assert_eq!(h.session.poll_timeout(), None);
}

/// A `tasks/cancel` the server never answers holds a stdio close only for
/// `FAREWELL_WAIT`; the transport ending first ends it at once.
#[test]
fn over_stdio_an_unanswered_tasks_cancel_holds_the_close_only_so_long() {
    let ended = |h: &Stdio| h.events.iter().any(|e| matches!(e, Event::Closed(_)));
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.session.close(h.now);
    h.drain();
    assert!(!ended(&h));
    assert_eq!(h.step(), rho_proto_core::session::FAREWELL_WAIT);
    assert!(ended(&h), "{:?}", h.events);
    assert_eq!(h.session.poll_timeout(), None);

    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    h.session.close(h.now);
    h.drain();
    h.session.handle_transport_closed(h.now, None);
    h.drain();
    assert!(ended(&h), "{:?}", h.events);
}

/// A call cancelled before its task handle came (Ctrl-C while the handle
/// is on its way) is a task on the server all the same: closing a stdio
/// session waits for that answer too, and cancels the task it names. A
/// server that declared no tasks is not waited for.
#[test]
fn over_stdio_closing_cancels_a_task_whose_handle_came_after_its_call_was_cancelled() {
    let ended = |h: &Stdio| h.events.iter().any(|e| matches!(e, Event::Closed(_)));
    let mut h = Stdio::modern(options());
    let call = h.call("slow");
    let (call_id, method, _) = h.last_numbered_request();
    assert_eq!(method, "tools/call");
    h.session.cancel_call(h.now, call);
    h.drain();
    h.session.close(h.now);
    h.drain();
    assert!(
        !ended(&h),
        "the end waits for the call's answer: {:?}",
        h.events
    );
    h.reply(call_id, handle(json!({})));
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    assert!(!ended(&h), "and then for the cancel's: {:?}", h.events);
    h.answer_last("tasks/cancel", task("cancelled", json!({})));
    assert!(ended(&h), "{:?}", h.events);

    // A plain answer after all ends the wait, and nothing is cancelled.
    let mut h = Stdio::modern(options());
    let call = h.call("slow");
    let (call_id, _, _) = h.last_numbered_request();
    h.session.cancel_call(h.now, call);
    h.session.close(h.now);
    h.drain();
    h.reply(call_id, text("done"));
    assert!(ended(&h), "{:?}", h.events);
    assert!(h.sent_for("tasks/cancel").is_empty());
}

#[test]
fn over_stdio_a_server_without_tasks_is_not_waited_for_at_close() {
    let mut o = options();
    o.protocol_version = "2026-07-28".into();
    let mut h = Stdio::new(o);
    h.drive_answering(&[
        (
            "server/discover",
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
        ),
        (
            "tools/list",
            json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"}}],
                   "ttlMs": 600000, "cacheScope": "public"}),
        ),
    ]);
    assert_eq!(h.session.state(), SessionState::Ready, "{:?}", h.events);
    let call = h.call("slow");
    h.session.cancel_call(h.now, call);
    h.session.close(h.now);
    h.drain();
    assert!(
        h.events.iter().any(|e| matches!(e, Event::Closed(_))),
        "{:?}",
        h.events
    );
}

#[test]
fn a_pushed_task_status_settles_the_call_without_a_poll() {
    let mut h = Stdio::modern(options());
    h.call("slow");
    h.answer_last("tools/call", handle(json!({})));
    let mut done = task("completed", json!({"result": text("pushed")}));
    done["statusMessage"] = json!("all done");
    h.say(json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": done}));
    assert!(
        matches!(h.result(), Some(Ok(r)) if r.text() == "pushed"),
        "{:?}",
        h.events
    );
    assert!(h.sent_for("tasks/get").is_empty());
    assert_eq!(
        h.progress_lines().last().map(String::as_str),
        Some("task completed: all done")
    );
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn body(req: &HttpRequest) -> Value {
    serde_json::from_slice(&req.body).expect("json body")
}

impl Http {
    fn result(&mut self, req: &HttpRequest, result: Value) {
        let id = body(req)["id"].clone();
        let text = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        self.respond(
            req,
            200,
            &[("content-type", "application/json")],
            text.as_bytes(),
        );
    }
}

/// A 2026 server over HTTP whose tool `slow` was called and answered
/// with a task handle: the transport, and the call.
fn http_task_call() -> (Http, CallId) {
    let mut o = options();
    o.framing = rho_proto_core::session::Framing::Messages;
    o.discover_wait = None;
    let mut h = Http::connect(
        o,
        HttpOptions::new(Url::parse("http://127.0.0.1:9/mcp").expect("url"), vec![]),
    );
    let probe = h.last_send();
    h.result(
        &probe,
        json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
               "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}),
    );
    let list = h.last_send();
    h.result(
        &list,
        json!({"tools": [{"name": "slow", "inputSchema": {"type": "object"}}], "ttlMs": 600000}),
    );
    let call = h
        .transport
        .call_tool(h.now, "slow", json!({}))
        .expect("ready");
    h.drain();
    let post = h.last_send();
    h.result(&post, handle(json!({})));
    (h, call)
}

#[test]
fn over_http_every_tasks_request_names_the_task_in_mcp_name() {
    let (mut h, call) = http_task_call();
    h.step();
    let poll = h.last_send();
    assert_eq!(body(&poll)["method"], "tasks/get");
    assert_eq!(header(&poll, "mcp-method"), Some("tasks/get"));
    assert_eq!(header(&poll, "mcp-name"), Some(TASK));
    h.result(&poll, task("working", json!({})));
    h.transport.cancel_call(h.now, call);
    h.drain();
    let cancel = h.last_send();
    assert_eq!(body(&cancel)["method"], "tasks/cancel");
    assert_eq!(header(&cancel, "mcp-name"), Some(TASK));
    assert!(h.events.iter().any(|e| matches!(
        e,
        Event::CallCompleted {
            result: Err(CallError::Cancelled {
                notice: CancelNotice::TaskCancelRequested,
                ..
            }),
            ..
        }
    )));
}

fn closed(h: &Http) -> bool {
    h.events.iter().any(|e| matches!(e, Event::Closed(_)))
}

#[test]
fn over_http_closing_lets_the_tasks_cancel_reach_the_server_before_the_end() {
    let (mut h, _call) = http_task_call();
    let aborted_before = h.aborted().len();
    h.transport.close(h.now);
    h.drain();
    let cancel = h.last_send();
    assert_eq!(body(&cancel)["method"], "tasks/cancel");
    assert!(
        !h.aborted()[aborted_before..].contains(&cancel.exchange),
        "the cancel is not aborted with the transport"
    );
    assert!(
        !closed(&h),
        "the close waits for the cancel: {:?}",
        h.events
    );
    h.result(&cancel, json!({}));
    assert!(closed(&h), "{:?}", h.events);
}

#[test]
fn over_http_a_tasks_cancel_the_server_never_answers_holds_the_close_only_so_long() {
    let (mut h, _call) = http_task_call();
    h.transport.close(h.now);
    h.drain();
    let cancel = h.last_send();
    assert_eq!(body(&cancel)["method"], "tasks/cancel");
    let waited = h.step();
    assert!(closed(&h), "{:?}", h.events);
    assert!(h.aborted().contains(&cancel.exchange));
    assert!(waited <= Duration::from_secs(10), "{waited:?}");
}

// ----- 2025-11-25: experimental core tasks -----

/// A 2025 task in `status`.
fn legacy_task(status: &str, extra: Value) -> Value {
    let mut t = json!({"taskId": TASK, "status": status, "createdAt": "2025-11-25T10:30:00Z",
                       "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": 1500});
    for (k, v) in extra.as_object().into_iter().flatten() {
        t[k] = v.clone();
    }
    t
}

fn task_caps() -> Value {
    json!({"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}})
}

#[test]
fn a_required_tool_is_called_as_a_task_polled_and_its_result_fetched() {
    let mut h = Stdio::legacy(task_caps());
    h.call("required");
    let (_, _, params) = h.last_numbered_request();
    assert_eq!(params["task"], json!({}));
    h.answer_last(
        "tools/call",
        json!({"task": legacy_task("working", json!({}))}),
    );
    assert!(h.result().is_none());
    assert_eq!(h.poll(), Duration::from_millis(1500));
    // A pushed status is a change like a poll's.
    h.say(
        json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
                 "params": legacy_task("working", json!({"statusMessage": "halfway"}))}),
    );
    assert_eq!(
        h.progress_lines(),
        ["task working", "task working: halfway"]
    );
    h.answer_last(
        "tasks/get",
        legacy_task("completed", json!({"statusMessage": "halfway"})),
    );
    let (_, method, params) = h.last_numbered_request();
    assert_eq!(
        (method.as_str(), &params["taskId"]),
        ("tasks/result", &json!(TASK))
    );
    // Blocking: no poll meanwhile, and no deadline of its own but the call's.
    assert_eq!(h.session.timeout_reason(), Some(Timer::Request));
    h.answer_last(
        "tasks/result",
        json!({"content": [{"type": "text", "text": "weather"}], "isError": false,
               "_meta": {"io.modelcontextprotocol/related-task": {"taskId": TASK}}}),
    );
    assert!(
        matches!(h.result(), Some(Ok(r)) if r.text() == "weather"),
        "{:?}",
        h.events
    );
}

#[test]
fn optional_tools_go_as_tasks_only_when_the_host_asks_and_never_without_the_capability() {
    let mut h = Stdio::legacy(task_caps());
    h.call("optional");
    assert_eq!(h.last_numbered_request().2.get("task"), None);
    h.call("plain");
    assert_eq!(h.last_numbered_request().2.get("task"), None);
    h.session
        .call_tool_with(
            h.now,
            "optional",
            json!({}),
            None,
            TaskAugmentation::WhenOffered,
        )
        .expect("ready");
    h.drain();
    assert_eq!(h.last_numbered_request().2["task"], json!({}));
    // A server that did not declare task-augmented calls is never asked.
    let mut h = Stdio::legacy(json!({"tools": {}}));
    h.call("required");
    assert_eq!(h.last_numbered_request().2.get("task"), None);
}

#[test]
fn a_plain_answer_to_a_task_call_is_read_as_a_plain_result() {
    let mut h = Stdio::legacy(task_caps());
    h.call("required");
    h.answer_last("tools/call", text("at once"));
    assert!(matches!(h.result(), Some(Ok(r)) if r.text() == "at once"));
}

#[test]
fn input_required_opens_tasks_result_and_the_tagged_question_finds_its_call() {
    let mut h = Stdio::legacy(task_caps());
    let task_call = h.call("required");
    h.answer_last(
        "tools/call",
        json!({"task": legacy_task("working", json!({}))}),
    );
    // A second call in flight: untagged questions would be declined.
    h.call("plain");
    h.poll();
    h.answer_last("tasks/get", legacy_task("input_required", json!({})));
    let (result_id, method, _) = h.last_numbered_request();
    assert_eq!(method, "tasks/result");
    let mut form = name_form();
    form["params"]["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": TASK}});
    h.say(json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": form["params"]}));
    let asked = h.events.iter().rev().find_map(|e| match e {
        Event::Question { question, call, .. } => Some((*question, *call)),
        _ => None,
    });
    let (question, call) = asked.expect("asked");
    assert_eq!(call, task_call);
    h.session.answer_elicitation(
        h.now,
        question,
        FormAnswer::Submitted([("name".to_owned(), vec!["Ada".to_owned()])].into()),
    );
    h.drain();
    assert!(matches!(
        h.sent.last(),
        Some(Message::Response { result, .. }) if result["content"]["name"] == "Ada"
    ));
    h.reply(result_id, text("Hello, Ada"));
    assert!(
        h.events.iter().any(|e| matches!(e, Event::CallCompleted { call, result: Ok(r) } if *call == task_call && r.text() == "Hello, Ada")),
        "{:?}",
        h.events
    );
}

#[test]
fn a_2025_task_is_cancelled_with_tasks_cancel_only_where_the_server_offers_it() {
    let mut h = Stdio::legacy(task_caps());
    let call = h.call("required");
    h.answer_last(
        "tools/call",
        json!({"task": legacy_task("working", json!({}))}),
    );
    h.session.cancel_call(h.now, call);
    h.drain();
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    assert!(!h.methods().contains(&"notifications/cancelled".to_owned()));
    let mut h = Stdio::legacy(json!({"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}));
    let call = h.call("required");
    h.answer_last(
        "tools/call",
        json!({"task": legacy_task("working", json!({}))}),
    );
    h.session.cancel_call(h.now, call);
    h.drain();
    assert!(h.sent_for("tasks/cancel").is_empty());
    assert!(matches!(
        h.result(),
        Some(Err(CallError::Cancelled {
            notice: CancelNotice::NothingRunning,
            ..
        }))
    ));
}

#[test]
fn a_failed_2025_task_ends_with_what_tasks_result_returns() {
    let mut h = Stdio::legacy(task_caps());
    h.call("required");
    h.answer_last(
        "tools/call",
        json!({"task": legacy_task("failed", json!({}))}),
    );
    let (id, method, _) = h.last_numbered_request();
    assert_eq!(method, "tasks/result");
    h.say(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "it broke"}}));
    assert!(
        matches!(h.result(), Some(Err(CallError::Rpc { error, .. })) if error.message == "it broke"),
        "{:?}",
        h.events
    );
}

#[test]
fn a_call_cancelled_before_its_task_handle_came_cancels_the_task_when_it_comes() {
    let mut h = Stdio::modern(options());
    let call = h.call("slow");
    let (id, _, _) = h.last_numbered_request();
    h.session.cancel_call(h.now, call);
    h.drain();
    assert!(h.sent_for("tasks/cancel").is_empty());
    // The server had made it a task already.
    h.reply(id, handle(json!({})));
    assert_eq!(h.sent_for("tasks/cancel").len(), 1);
    assert_eq!(h.sent_for("tasks/cancel")[0]["taskId"], TASK);
    // A late plain answer is only dropped.
    let call = h.call("slow");
    let (id, _, _) = h.last_numbered_request();
    h.session.cancel_call(h.now, call);
    h.drain();
    h.reply(id, text("late"));
    assert_eq!(h.sent_for("tasks/cancel").len(), 1);
}
