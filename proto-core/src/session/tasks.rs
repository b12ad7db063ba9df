//! A tool call that became a task, as state transitions: the call stays
//! the caller's one call, under its first request id, and settles with
//! the task's final result. What a task's messages mean, in both eras, is
//! [`crate::features::tasks`]; this file is what the session does with
//! them.
//!
//! # Where the state lives
//!
//! A call's request is answered with a task handle; the call's
//! [`Pending`] entry stays in the table under that request's id, held
//! for its task ([`Pending::task`], a [`TaskRun`]): it no longer awaits
//! an answer, but everything that finds a call by its request still finds
//! it — progress (the token outlives the request, as the 2025 spec says),
//! the "one call in flight" routing of questions, the budget's deadline,
//! pausing it while a question is open, cancelling, closing. The task's
//! own requests (`tasks/get`, `tasks/result`, `tasks/update`) are
//! [`Purpose::Task`] requests of that call; the next poll is an entry in
//! the session's `task_polls` queue, fired by `handle_timeout` as
//! [`crate::session::Timer::TaskPoll`].
//!
//! # Transitions
//!
//! | in | state | out |
//! |---|---|---|
//! | `tools/call` answered with a handle (2026 `resultType: "task"`; 2025 `CreateTaskResult` to a call sent with `params.task`) | — | the call held for its task; its status as progress; a poll after the interval |
//! | a bad handle | — | the call fails ([`CallError::Task`]); nothing to cancel |
//! | poll due | no request of the task out | `tasks/get` |
//! | `working` | | next poll |
//! | `input_required`, 2026 | new `inputRequests` keys | their questions (the MRTR gates), then `tasks/update` with the answers; polling goes on, seen keys are not asked again |
//! | `input_required`, 2025 | | `tasks/result`, open until the task ends: the server's requests, tagged `related-task`, go to this call's questions |
//! | `completed` / `failed`, 2026 | | the call ends with the inlined result / error |
//! | `completed` / `failed`, 2025 | | `tasks/result`; its answer ends the call |
//! | `cancelled` | | the call fails: the server cancelled it |
//! | an unknown status, a malformed task | | the call fails, `tasks/cancel` |
//! | `tasks/get` refused | | the call fails (-32602: the server no longer knows the task) |
//! | `tasks/get` lost (timeout, transport) | fewer than [`MAX_FAILED_POLLS`] in a row | next poll |
//! | a form dismissed | | `tasks/cancel`; the call is cancelled |
//! | nothing of a 2026 input round could be answered | | `tasks/cancel`; the call fails |
//! | the caller cancels, the budget runs out, the session is closed | | `tasks/cancel` (never `notifications/cancelled`: the request it would name was answered long ago) |
//!
//! A status change (status or message) and a status notification
//! (`notifications/tasks/status`, 2025; `notifications/tasks`, 2026) go
//! through the same transition as a poll's answer.
//!
//! # The budget
//!
//! A task's call keeps the call's budget (`tool_timeout_secs`, or the
//! caller's own limit) as an idle budget: each reported change of the
//! task's status or status message restarts it, as a progress
//! notification does, up to the same hard cap from when the call was sent
//! (`progress_extends_up_to`); progress notifications for the call keep
//! doing so too. A poll that only says "still working" does not: a server
//! that answers every poll and never finishes runs out of budget and the
//! task is cancelled. While a question of the task is open the budget is
//! paused, as for any call. Each change reaches the caller as a
//! [`Progress`] whose message is the status line (`task working: 3 of
//! 10`) and whose progress counts the changes seen, so a caller that
//! shows progress shows the task without knowing what a task is.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;
use crate::features::mrtr::{self, Answered};
use crate::features::tasks::{
    self, Detail, DetailedTask, TaskEra, TaskError, TaskSnapshot, TaskStatus,
};

/// How many `tasks/get` in a row may go unanswered (timed out, lost by
/// the transport) before the call fails: one lost poll is weather, three
/// are a server that stopped answering.
pub const MAX_FAILED_POLLS: u32 = 3;

/// How many input requests (distinct keys) one 2026 task may ask over its
/// life, all rounds together, before rho gives up on it rather than put
/// question after question to a person.
pub const MAX_TASK_INPUTS: usize = 64;

/// A task request of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskOp {
    /// `tasks/get`: a poll.
    Get,
    /// `tasks/result` (2025): the final result, blocking until the task
    /// ends; the server's requests for the task arrive meanwhile.
    Result,
    /// `tasks/update` (2026): the answers to input requests.
    Update,
}

impl TaskOp {
    fn method(self) -> &'static str {
        match self {
            Self::Get => "tasks/get",
            Self::Result => "tasks/result",
            Self::Update => "tasks/update",
        }
    }
}

/// A call's task, while it runs.
#[derive(Clone, Debug)]
pub(crate) struct TaskRun {
    era: TaskEra,
    /// The server's id for it.
    id: String,
    status: TaskStatus,
    message: Option<String>,
    /// The wait before the next poll (clamped).
    interval: Duration,
    /// When the next poll is due, while one is queued.
    next_poll: Option<Instant>,
    /// The `tasks/get` out, if any.
    polling: Option<u64>,
    /// The 2025 `tasks/result` out, if any.
    fetching: Option<u64>,
    /// 2026 input keys asked (or answered at once) so far.
    seen_inputs: BTreeSet<String>,
    /// The 2026 input round whose questions are open.
    round: Option<mrtr::Rounds>,
    /// Polls lost in a row.
    failed_polls: u32,
    /// Status changes reported to the caller.
    changes: u32,
    /// The server answers `tasks/cancel` (always in 2026; declared in 2025).
    cancellable: bool,
}

impl TaskRun {
    /// The task a handle names, nothing asked of it yet: its status not
    /// yet reported (the handle's own status is the first change), polled
    /// every `interval`, told to cancel when `cancellable`.
    fn new(era: TaskEra, snapshot: &TaskSnapshot, interval: Duration, cancellable: bool) -> Self {
        Self {
            era,
            id: snapshot.task_id.clone(),
            status: snapshot.status,
            message: None,
            interval,
            next_poll: None,
            polling: None,
            fetching: None,
            seen_inputs: BTreeSet::new(),
            round: None,
            failed_polls: 0,
            changes: 0,
            cancellable,
        }
    }

    /// The task's requests still out.
    fn requests_out(&self) -> impl Iterator<Item = u64> {
        self.polling.into_iter().chain(self.fetching)
    }
}

/// How a task call ends.
enum Ending {
    /// With this result.
    Done(Result<CallToolResult, CallError>),
    /// With this error, the server asked to cancel the task.
    CancelTask(CallError),
}

impl Session {
    /// The task a held call runs, under the call's request id.
    fn task_run(&mut self, request: u64) -> Option<&mut TaskRun> {
        self.pending.get_mut(&request)?.task.as_deref_mut()
    }

    /// Whether `request` is a call held for its task.
    pub(super) fn is_held_for_task(&self, request: u64) -> bool {
        self.pending.get(&request).is_some_and(|p| p.task.is_some())
    }

    /// The held call whose task has this id.
    fn request_of_task(&self, task_id: &str) -> Option<u64> {
        self.pending
            .iter()
            .find(|(_, p)| p.task.as_ref().is_some_and(|t| t.id == task_id))
            .map(|(&n, _)| n)
    }

    /// The call a server's request of a 2025 task belongs to: the one whose
    /// task its `related-task` names. `None` when it names none; `Some(Err)`
    /// when it names a task no call of this session runs.
    pub(super) fn call_of_related_task(
        &self,
        params: Option<&Value>,
    ) -> Option<Result<CallId, ()>> {
        let task_id = tasks::related_task(params)?;
        let call =
            self.request_of_task(task_id)
                .and_then(|n| match self.pending.get(&n)?.purpose {
                    Purpose::CallTool(call) => Some(call),
                    _ => None,
                });
        Some(call.ok_or(()))
    }

    /// A call's `tools/call` (request `n`, already out of the table as
    /// `pending`) was answered with a task handle of `era`.
    pub(super) fn task_created(
        &mut self,
        now: Instant,
        n: u64,
        call: CallId,
        mut pending: Pending,
        era: TaskEra,
        result: &Value,
    ) {
        let snapshot = match tasks::handle(era, result) {
            Ok(snapshot) => snapshot,
            Err(error) => {
                self.call_tools.remove(&call.0);
                self.withdraw_questions_of(call);
                let error = self.task_error(format!("sent a bad task handle: {error}"));
                self.events.push_back(Event::CallCompleted {
                    call,
                    result: Err(error),
                });
                return;
            }
        };
        let cancellable = self.tasks_cancellable(era);
        tracing::debug!(server = %self.options.server, task = %snapshot.task_id, "the call runs as a task");
        let run = TaskRun::new(era, &snapshot, snapshot.next_poll(), cancellable);
        pending.task = Some(Box::new(run));
        if pending.armed() {
            self.deadlines.insert((pending.deadline, n));
        }
        self.pending.insert(n, pending);
        self.task_observed(now, n, snapshot, Detail::None, true);
    }

    /// The one transition: the task of the call held under `n` is now as
    /// `snapshot` says, with `detail` inlined (2026). `first`: the handle,
    /// whose status is reported even when it is the one stored.
    fn task_observed(
        &mut self,
        now: Instant,
        n: u64,
        snapshot: TaskSnapshot,
        detail: Detail,
        first: bool,
    ) {
        let Some(run) = self.task_run(n) else {
            return;
        };
        let changed =
            first || run.status != snapshot.status || run.message != snapshot.status_message;
        run.status = snapshot.status;
        run.message = snapshot.status_message.clone();
        run.interval = snapshot.next_poll();
        run.failed_polls = 0;
        let era = run.era;
        if changed {
            run.changes += 1;
            let progress = Progress {
                progress: f64::from(run.changes),
                total: None,
                message: Some(tasks::status_line(&snapshot)),
            };
            self.extend_budget(now, n);
            if let Some(Purpose::CallTool(call)) = self.pending.get(&n).map(|p| p.purpose.clone()) {
                self.events.push_back(Event::Progress { call, progress });
            }
        }
        let ending = match (snapshot.status, era, detail) {
            (TaskStatus::Working, _, _) => None,
            (TaskStatus::Cancelled, _, _) => Some(Ending::Done(Err(self.task_error(format!(
                "was cancelled by the server{}",
                snapshot
                    .status_message
                    .as_deref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            ))))),
            (TaskStatus::InputRequired, TaskEra::Extension, Detail::InputRequests(requests)) => {
                self.task_inputs(now, n, &requests)
            }
            (TaskStatus::Completed, TaskEra::Extension, Detail::Result(result)) => {
                Some(Ending::Done(self.task_result(n, Ok(result))))
            }
            (TaskStatus::Failed, TaskEra::Extension, Detail::Error(error)) => {
                Some(Ending::Done(self.task_result(n, Err(error))))
            }
            // A 2026 handle or notification without what its status
            // inlines: the next poll brings it, now.
            (_, TaskEra::Extension, _) => {
                self.schedule_poll(now, n, Duration::ZERO);
                return;
            }
            // 2025: the result (and, meanwhile, the server's questions)
            // come through `tasks/result`.
            (
                TaskStatus::InputRequired | TaskStatus::Completed | TaskStatus::Failed,
                TaskEra::Core,
                _,
            ) => {
                self.fetch_task_result(n);
                None
            }
        };
        match ending {
            Some(ending) => self.end_task(n, ending),
            None => {
                let fetching = self.task_run(n).is_some_and(|r| r.fetching.is_some());
                if !fetching {
                    let interval = self.task_run(n).map_or(Duration::ZERO, |r| r.interval);
                    self.schedule_poll(now, n, interval);
                }
            }
        }
    }

    /// The error a task call fails with.
    fn task_error(&self, reason: String) -> CallError {
        CallError::Task {
            server: self.options.server.clone(),
            reason,
        }
    }

    /// A task's final result or error, classified as a call's answer is.
    fn task_result(
        &mut self,
        n: u64,
        reply: Result<Value, ErrorObject>,
    ) -> Result<CallToolResult, CallError> {
        let call = match self.pending.get(&n).map(|p| &p.purpose) {
            Some(Purpose::CallTool(call)) => *call,
            _ => CallId(n),
        };
        self.call_outcome(call, reply.map(CallToolResult::from_value))
    }

    /// Queues the next poll of the task held under `n`, `after` from now
    /// (never past the call's deadline: by then the call is over).
    fn schedule_poll(&mut self, now: Instant, n: u64, after: Duration) {
        let Some(run) = self.task_run(n) else {
            return;
        };
        let at = now + after;
        let previous = run.next_poll.replace(at);
        if let Some(previous) = previous {
            self.task_polls.remove(&(previous, n));
        }
        self.task_polls.insert((at, n));
    }

    /// Fires the polls that are due: a `tasks/get` for each task with none
    /// of its requests out.
    pub(super) fn polls_due(&mut self, now: Instant) {
        while let Some(&(at, n)) = self.task_polls.first() {
            if at > now {
                break;
            }
            self.task_polls.pop_first();
            let Some(run) = self.task_run(n) else {
                continue;
            };
            run.next_poll = None;
            if run.polling.is_some() || run.fetching.is_some() {
                continue;
            }
            let id = run.id.clone();
            let sent = self.send_task_op(now, n, TaskOp::Get, json!({ "taskId": id }));
            if let Some(run) = self.task_run(n) {
                run.polling = sent;
            }
        }
    }

    /// The next poll, for `poll_timeout`.
    pub(super) fn next_poll(&self) -> Option<Instant> {
        self.task_polls.first().map(|&(at, _)| at)
    }

    /// Sends `op` for the call held under `n`; its id.
    fn send_task_op(&mut self, now: Instant, n: u64, op: TaskOp, params: Value) -> Option<u64> {
        let call = match self.pending.get(&n)?.purpose {
            Purpose::CallTool(call) => call,
            _ => return None,
        };
        let budget = self.options.request_timeout;
        Some(self.send_request(
            Purpose::Task { call, op },
            op.method(),
            Some(&params),
            now + budget,
            budget,
        ))
    }

    /// 2025: asks for the final result (it blocks until the task ends;
    /// the server's questions arrive meanwhile), once.
    fn fetch_task_result(&mut self, n: u64) {
        let Some(run) = self.task_run(n) else {
            return;
        };
        if run.fetching.is_some() {
            return;
        }
        let id = run.id.clone();
        let now = self.clock.latest();
        let sent = self.send_task_op(now, n, TaskOp::Result, json!({ "taskId": id }));
        if let Some(run) = self.task_run(n) {
            run.fetching = sent;
            if let Some(at) = run.next_poll.take() {
                self.task_polls.remove(&(at, n));
            }
        }
    }

    /// A 2026 task asks for input: the keys not seen before become
    /// questions behind the same gates as a multi round-trip request's;
    /// their answers go back with `tasks/update`.
    fn task_inputs(&mut self, now: Instant, n: u64, requests: &Value) -> Option<Ending> {
        let run = self.task_run(n)?;
        if run.round.is_some() {
            // A round is being answered; keys outstanding still show in
            // the next poll after it.
            return None;
        }
        let mut fresh = serde_json::Map::new();
        for (key, request) in requests.as_object().into_iter().flatten() {
            if !run.seen_inputs.contains(key) {
                fresh.insert(key.clone(), request.clone());
            }
        }
        if fresh.is_empty() {
            return None;
        }
        if run.seen_inputs.len() + fresh.len() > MAX_TASK_INPUTS {
            return Some(Ending::CancelTask(self.input_error(format!(
                "its task asked for more than {MAX_TASK_INPUTS} inputs, so rho gave up on it"
            ))));
        }
        run.seen_inputs.extend(fresh.keys().cloned());
        let required = json!({"resultType": "input_required", "inputRequests": fresh});
        let gates = self.input_gates();
        let mut round = mrtr::Rounds::new();
        let asks = match mrtr::InputRequired::from_result(&required, None)
            .and_then(|required| round.begin(required, &gates))
        {
            Ok(asks) => asks,
            Err(error) => return Some(Ending::CancelTask(self.input_error(error.to_string()))),
        };
        if asks.is_empty() {
            return self.send_task_answers(now, n, round);
        }
        let call = match self.pending.get(&n)?.purpose {
            Purpose::CallTool(call) => call,
            _ => return None,
        };
        self.task_run(n)?.round = Some(round);
        for ask in asks {
            let kind = super::questions::OpenKind::of(&ask.question);
            self.open(
                now,
                super::questions::Asker::TaskInput(ask.key),
                call,
                kind,
                ask.question,
            );
        }
        None
    }

    fn input_error(&self, reason: String) -> CallError {
        CallError::InputRequired {
            server: self.options.server.clone(),
            reason,
        }
    }

    /// Sends a finished 2026 input round with `tasks/update`. A round
    /// with no answer at all (every request unanswerable here) ends the
    /// call: the task would wait for input rho cannot give.
    fn send_task_answers(&mut self, now: Instant, n: u64, round: mrtr::Rounds) -> Option<Ending> {
        if !round.has_answers() {
            return Some(Ending::CancelTask(self.input_error(
                "its task asked for input rho cannot give here (see the log)".into(),
            )));
        }
        let id = self.task_run(n)?.id.clone();
        let task = json!({ "taskId": id });
        let params = serde_json::to_value(round.retry_params(&task)).unwrap_or(task);
        self.send_task_op(now, n, TaskOp::Update, params);
        None
    }

    /// An answer to a question of a 2026 task's input round (`answer`
    /// applies it to the round). The round's last answer sends the
    /// `tasks/update`; a dismissed form cancels the task and the call.
    pub(super) fn task_input_answered(
        &mut self,
        now: Instant,
        call: CallId,
        answer: impl FnOnce(&mut mrtr::Rounds) -> Answered,
    ) {
        let Some(n) = self.request_of(call) else {
            return;
        };
        let Some(answered) = self
            .task_run(n)
            .and_then(|run| run.round.as_mut())
            .map(answer)
        else {
            return;
        };
        match answered {
            Answered::Ready => {
                self.resume_budget(now, call);
                let Some(round) = self.task_run(n).and_then(|run| run.round.take()) else {
                    return;
                };
                if let Some(ending) = self.send_task_answers(now, n, round) {
                    self.end_task(n, ending);
                }
            }
            Answered::Cancelled => {
                let error = CallError::Cancelled {
                    server: self.options.server.clone(),
                    notice: CancelNotice::TaskCancelRequested,
                };
                self.end_task(n, Ending::CancelTask(error));
            }
            Answered::Waiting | Answered::Unknown => {}
        }
    }

    /// The answer to a task request `op` of `call` (request `id`).
    pub(super) fn on_task_reply(
        &mut self,
        now: Instant,
        call: CallId,
        op: TaskOp,
        id: u64,
        reply: Result<Value, ErrorObject>,
    ) {
        let Some(n) = self.request_of(call) else {
            return;
        };
        let Some(run) = self.task_run(n) else {
            return;
        };
        let era = run.era;
        match op {
            TaskOp::Get => {
                if run.polling == Some(id) {
                    run.polling = None;
                }
                match reply {
                    Ok(value) => match DetailedTask::from_value(era, &value) {
                        Ok(task) => self.task_observed(now, n, task.snapshot, task.detail, false),
                        Err(error) => {
                            let reason = match error {
                                TaskError::UnknownStatus(_) => format!("reported that {error}"),
                                TaskError::Malformed(_) => format!("answered tasks/get: {error}"),
                            };
                            let error = self.task_error(reason);
                            self.end_task(n, Ending::CancelTask(error));
                        }
                    },
                    Err(error) => {
                        // -32602: the server no longer knows the task
                        // (expired, purged): there is nothing to cancel.
                        let gone = error.code == jsonrpc::code::INVALID_PARAMS;
                        let error = self.task_error(format!(
                            "could not be read back: tasks/get was answered with {error}"
                        ));
                        self.end_task(
                            n,
                            if gone {
                                Ending::Done(Err(error))
                            } else {
                                Ending::CancelTask(error)
                            },
                        );
                    }
                }
            }
            TaskOp::Result => {
                if run.fetching == Some(id) {
                    run.fetching = None;
                }
                let result = self.task_result(n, reply);
                self.end_task(n, Ending::Done(result));
            }
            TaskOp::Update => {
                if let Err(error) = reply {
                    // Input keys are single-use: answers the server
                    // refused cannot be given again.
                    let error = self.input_error(format!(
                        "the server refused the answers to its task's questions: {error}"
                    ));
                    self.end_task(n, Ending::CancelTask(error));
                }
            }
        }
    }

    /// A task request of `call` got no answer in time, or the transport
    /// lost it: a lost poll (or 2025 result request) is asked again at the
    /// next interval, up to [`MAX_FAILED_POLLS`] in a row; a lost update
    /// fails the call (its answers may or may not have arrived).
    pub(super) fn task_request_lost(&mut self, now: Instant, call: CallId, op: TaskOp, id: u64) {
        let Some(n) = self.request_of(call) else {
            return;
        };
        self.abandoned(id);
        let Some(run) = self.task_run(n) else {
            return;
        };
        if run.polling == Some(id) {
            run.polling = None;
        }
        if run.fetching == Some(id) {
            run.fetching = None;
        }
        if op == TaskOp::Update {
            let error = self.input_error(
                "the answers to its task's questions got no answer from the server".into(),
            );
            return self.end_task(n, Ending::CancelTask(error));
        }
        run.failed_polls += 1;
        if run.failed_polls >= MAX_FAILED_POLLS {
            let error = CallError::Transport {
                server: self.options.server.clone(),
                reason: format!(
                    "its task's {} went unanswered {MAX_FAILED_POLLS} times in a row",
                    op.method()
                ),
            };
            return self.end_task(n, Ending::CancelTask(error));
        }
        let interval = run.interval;
        self.schedule_poll(now, n, interval);
    }

    /// A status notification (`notifications/tasks/status`, 2025;
    /// `notifications/tasks`, 2026): the same transition as a poll's
    /// answer, for the call whose task it names. A task of no call here is
    /// ignored.
    pub(super) fn task_notification(&mut self, now: Instant, params: Option<&Value>) {
        let Some(params) = params else {
            return;
        };
        let Some(n) = params
            .get("taskId")
            .and_then(Value::as_str)
            .and_then(|id| self.request_of_task(id))
        else {
            tracing::debug!(server = %self.options.server, "a status notification for a task of no call; ignored");
            return;
        };
        let Some(era) = self.task_run(n).map(|r| r.era) else {
            return;
        };
        match DetailedTask::from_value(era, params) {
            Ok(task) => self.task_observed(now, n, task.snapshot, task.detail, false),
            // A malformed push is not worth ending the call over: the
            // next poll reads the task afresh.
            Err(error) => {
                tracing::debug!(server = %self.options.server, "a task status notification could not be read ({error}); ignored");
            }
        }
    }

    /// Ends the call held under `n` for its task: its requests and poll
    /// are dropped, its questions withdrawn, the server asked to cancel
    /// the task when `ending` says so (and it can be), and the call
    /// completes.
    fn end_task(&mut self, n: u64, ending: Ending) {
        let Some(mut pending) = self.pending.remove(&n) else {
            return;
        };
        self.deadlines.remove(&(pending.deadline, n));
        let Purpose::CallTool(call) = pending.purpose else {
            return;
        };
        let Some(run) = pending.task.take() else {
            return;
        };
        self.drop_task_requests(n, &run);
        self.call_tools.remove(&call.0);
        self.withdraw_questions_of(call);
        let result = match ending {
            Ending::Done(result) => result,
            Ending::CancelTask(error) => {
                self.send_task_cancel(&run);
                Err(error)
            }
        };
        self.events.push_back(Event::CallCompleted { call, result });
    }

    /// Forgets the requests and the poll of a task whose call ends: their
    /// late answers are dropped quietly.
    fn drop_task_requests(&mut self, n: u64, run: &TaskRun) {
        if let Some(at) = run.next_poll {
            self.task_polls.remove(&(at, n));
        }
        for id in run.requests_out() {
            if let Some(p) = self.pending.remove(&id) {
                self.deadlines.remove(&(p.deadline, id));
            }
            self.abandoned(id);
        }
    }

    /// Asks the server to cancel a task (`tasks/cancel`), when it can be
    /// asked; its answer is only logged. Returns whether it was sent.
    fn send_task_cancel(&mut self, run: &TaskRun) -> bool {
        if !run.cancellable {
            tracing::info!(server = %self.options.server, task = %run.id, "the server does not offer tasks/cancel; its task is left to run");
            return false;
        }
        let now = self.clock.latest();
        let budget = self.options.request_timeout;
        self.send_request(
            Purpose::TaskCancel,
            "tasks/cancel",
            Some(&json!({ "taskId": run.id })),
            now + budget,
            budget,
        );
        true
    }

    /// The caller gives up on a task call (its cancel, the budget running
    /// out): the task is cancelled on the server. `pending` is out of the
    /// table already. Returns what the server was told.
    pub(super) fn abandon_task(&mut self, n: u64, pending: &mut Pending) -> CancelNotice {
        let Some(run) = pending.task.take() else {
            return CancelNotice::NothingRunning;
        };
        self.drop_task_requests(n, &run);
        if self.send_task_cancel(&run) {
            CancelNotice::TaskCancelRequested
        } else {
            CancelNotice::NothingRunning
        }
    }

    /// A late answer to a request rho gave up on (a call cancelled, or
    /// out of budget, before its answer came) that is a task handle: the
    /// server made the call a task after all, so the task is cancelled
    /// too, or it would run for no one. Anything else is left alone.
    pub(super) fn cancel_late_task(&mut self, result: &Value) {
        // Calls are made once ready: a task handle answering anything given
        // up on before (an `initialize` the probe made moot) is no call's.
        // (Closed: a stdio close waiting for a call given up on, which was
        // made once ready; see `farewell_line`.)
        if !matches!(self.phase, Phase::Ready | Phase::Closed) {
            return;
        }
        let era = if self.is_stateless() {
            if !matches!(ResultType::of(result), Ok(ResultType::Task)) {
                return;
            }
            TaskEra::Extension
        } else {
            if !tasks::is_create_task_result(result) {
                return;
            }
            TaskEra::Core
        };
        let Ok(snapshot) = tasks::handle(era, result) else {
            return;
        };
        tracing::info!(server = %self.options.server, task = %snapshot.task_id, "a call given up on became a task; cancelling it");
        let run = TaskRun::new(era, &snapshot, Duration::ZERO, self.tasks_cancellable(era));
        self.send_task_cancel(&run);
    }

    /// Remembers a tool call given up on (`id`, its `pending` entry already
    /// out of the table) when its late answer may be a task handle: in the
    /// 2026 era from a server that declared the tasks extension, in 2025
    /// when the call went as a task. A close waits for such an answer, so
    /// that a task made of the call is cancelled, not left running.
    pub(super) fn maybe_task(&mut self, id: u64, pending: &Pending) {
        if !matches!(pending.purpose, Purpose::CallTool(_)) {
            return;
        }
        let possible = if self.is_stateless() {
            self.ready
                .as_ref()
                .is_some_and(|r| r.capabilities.tasks_extension)
        } else {
            pending.augmented
        };
        if possible {
            self.maybe_tasks.insert(id);
            while self.maybe_tasks.len() > REMEMBERED_ABANDONED {
                self.maybe_tasks.pop_first();
            }
        }
    }

    /// Whether the server answers `tasks/cancel`: always in the 2026
    /// extension; in 2025 when it declared `tasks.cancel`.
    fn tasks_cancellable(&self, era: TaskEra) -> bool {
        match era {
            TaskEra::Extension => true,
            TaskEra::Core => self
                .ready
                .as_ref()
                .is_some_and(|r| r.capabilities.tasks_cancel),
        }
    }

    /// The session is being closed by rho: every task still running is
    /// cancelled on the server first (the executor writes what is queued
    /// before it closes the transport).
    pub(super) fn cancel_tasks_at_close(&mut self) {
        let runs: Vec<TaskRun> = self
            .pending
            .values()
            .filter_map(|p| p.task.as_deref().cloned())
            .collect();
        for run in runs {
            self.send_task_cancel(&run);
        }
    }

    /// Restarts the idle budget of the call held under `request` (a sign
    /// of life: progress, a task's status change), never past the hard cap
    /// from when it was sent, and not while a question paused it.
    pub(super) fn extend_budget(&mut self, now: Instant, request: u64) {
        let Some(cap) = self.options.progress_extends_up_to else {
            return;
        };
        if let Some(p) = self.pending.get_mut(&request) {
            let extended = (now + p.budget).min(p.sent + cap);
            if p.paused.is_none() && extended > p.deadline {
                self.deadlines.remove(&(p.deadline, request));
                p.deadline = extended;
                self.deadlines.insert((extended, request));
            }
        }
    }
}
