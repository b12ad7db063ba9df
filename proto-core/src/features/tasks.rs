//! Tasks: a tool call whose answer comes later. The pure part of both
//! protocol eras' tasks: reading a task handle and a task's state, the
//! status vocabulary, and how often to ask again. The session owns the
//! requests, the timers and the call the task belongs to (see
//! `session/tasks.rs` for the transitions).
//!
//! # Two eras, one state
//!
//! | | 2026-07-28 extension (`io.modelcontextprotocol/tasks`, SEP-2663) | 2025-11-25 core (experimental) |
//! |---|---|---|
//! | who decides | the server, per request, when the request's capabilities declare the extension | the client: `params.task` on a tool whose `execution.taskSupport` allows it |
//! | the handle | the `tools/call` result itself, `resultType: "task"` | `result.task` of a `CreateTaskResult` |
//! | the interval | `pollIntervalMs` | `pollInterval` |
//! | the result | inlined in `tasks/get` (`result` or `error`) | `tasks/result` once terminal |
//! | input | `inputRequests` in `tasks/get`, answered with `tasks/update` | the server's own requests (tagged `related-task`), sent while `tasks/result` is open |
//! | pushed status | `notifications/tasks` on `subscriptions/listen` | `notifications/tasks/status` |
//!
//! Both read into the same [`TaskSnapshot`]; [`DetailedTask`] adds what a
//! 2026 `tasks/get` inlines.
//!
//! # Polling
//!
//! A server suggests how often to ask ([`TaskSnapshot::poll_interval`]);
//! rho asks at that interval, clamped to [`MIN_POLL_INTERVAL`] ..
//! [`MAX_POLL_INTERVAL`], and at [`DEFAULT_POLL_INTERVAL`] when it
//! suggests nothing. The floor keeps a server that says `0` from turning
//! rho into a busy loop; the ceiling keeps a finished task from waiting
//! minutes for rho to look (and the person with it), at the cost of asking
//! more often than a server with a very long interval suggested, which the
//! spec lets it rate-limit.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::wire::jsonrpc::ErrorObject;

/// The tasks extension's identifier (2026-07-28): declared under
/// `extensions` in every request's client capabilities.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key that ties a server's message to a task (2025-11-25):
/// `{"taskId": ...}`.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The shortest wait between two `tasks/get` of one task.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(250);

/// The longest wait between two `tasks/get` of one task.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);

/// The wait when the server suggests none.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The longest task id rho keeps: an id is the server's handle, echoed on
/// every `tasks/*` request and in the `Mcp-Name` header; a longer one is a
/// bad handle, not a key to copy into every request.
pub const MAX_TASK_ID_LEN: usize = 1024;

/// Which era's tasks a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskEra {
    /// The 2026-07-28 extension: `tasks/get` inlines the result,
    /// `tasks/update` answers input.
    Extension,
    /// The 2025-11-25 experimental core tasks: `tasks/result` fetches the
    /// result and carries the server's questions.
    Core,
}

/// A task's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's answers.
    InputRequired,
    /// Done; the result is ready.
    Completed,
    /// Ended with a JSON-RPC error (2025: or a tool error result).
    Failed,
    /// Cancelled (by the server, or on rho's request).
    Cancelled,
}

impl TaskStatus {
    /// The status as the protocol spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task can change no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    fn parse(value: Option<&Value>) -> Result<Self, TaskError> {
        let Some(value) = value else {
            return Err(TaskError::Malformed("it has no `status`".into()));
        };
        let Some(text) = value.as_str() else {
            return Err(TaskError::Malformed("its `status` is not a string".into()));
        };
        Ok(match text {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => {
                return Err(TaskError::UnknownStatus(other.chars().take(64).collect()));
            }
        })
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a task's state could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// Not a task: what is wrong with it.
    #[error("its task state is malformed: {0}")]
    Malformed(String),
    /// A status the protocol does not define (the first 64 characters).
    #[error("its task has status `{0}`, which rho does not know")]
    UnknownStatus(String),
}

/// A task's state as a handle, a poll or a notification shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSnapshot {
    /// The server's id for the task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// The server's note on it, when sent.
    pub status_message: Option<String>,
    /// The interval the server suggests, as sent (not clamped).
    pub poll_interval: Option<Duration>,
}

impl TaskSnapshot {
    /// Reads a `Task` object of `era` (a 2026 handle or `tasks/get` result,
    /// a 2025 `result.task`, either era's status notification).
    pub fn from_task(era: TaskEra, task: &Value) -> Result<Self, TaskError> {
        let Some(task) = task.as_object() else {
            return Err(TaskError::Malformed("it is not an object".into()));
        };
        let task_id = match task.get("taskId") {
            Some(Value::String(id)) if id.is_empty() => {
                return Err(TaskError::Malformed("its `taskId` is empty".into()));
            }
            Some(Value::String(id)) if id.len() > MAX_TASK_ID_LEN => {
                return Err(TaskError::Malformed(format!(
                    "its `taskId` is {} bytes long (at most {MAX_TASK_ID_LEN})",
                    id.len()
                )));
            }
            Some(Value::String(id)) => id.clone(),
            Some(_) => return Err(TaskError::Malformed("its `taskId` is not a string".into())),
            None => return Err(TaskError::Malformed("it has no `taskId`".into())),
        };
        let status = TaskStatus::parse(task.get("status"))?;
        let interval_key = match era {
            TaskEra::Extension => "pollIntervalMs",
            TaskEra::Core => "pollInterval",
        };
        // A negative or fractional interval is read as the nearest
        // whole milliseconds it can mean; anything else as none.
        let poll_interval = task
            .get(interval_key)
            .and_then(Value::as_f64)
            .filter(|ms| ms.is_finite())
            .map(|ms| Duration::from_millis(ms.clamp(0.0, u64::MAX as f64) as u64));
        Ok(Self {
            task_id,
            status,
            status_message: task
                .get("statusMessage")
                .and_then(Value::as_str)
                .map(str::to_owned),
            poll_interval,
        })
    }

    /// How long to wait before the next `tasks/get`: the server's
    /// suggestion clamped (see the module docs).
    pub fn next_poll(&self) -> Duration {
        self.poll_interval
            .unwrap_or(DEFAULT_POLL_INTERVAL)
            .clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
    }
}

/// The task handle in a `tools/call` result of `era`: the 2026 result is
/// the task, a 2025 `CreateTaskResult` carries it as `task`.
pub fn handle(era: TaskEra, result: &Value) -> Result<TaskSnapshot, TaskError> {
    match era {
        TaskEra::Extension => TaskSnapshot::from_task(era, result),
        TaskEra::Core => match result.get("task") {
            Some(task) => TaskSnapshot::from_task(era, task),
            None => Err(TaskError::Malformed("the result has no `task`".into())),
        },
    }
}

/// Whether a 2025 `tools/call` result is a `CreateTaskResult` (a `task`
/// object and no `content`), as a server that ignored `params.task` (it
/// may, without the capability) answers with a plain result instead.
pub fn is_create_task_result(result: &Value) -> bool {
    result.get("task").is_some_and(Value::is_object) && result.get("content").is_none()
}

/// A 2026 `tasks/get` result or `notifications/tasks` params: the state
/// and what its status inlines.
#[derive(Clone, Debug, PartialEq)]
pub struct DetailedTask {
    /// The state.
    pub snapshot: TaskSnapshot,
    /// What the status carries.
    pub detail: Detail,
}

/// What a 2026 task's status inlines.
#[derive(Clone, Debug, PartialEq)]
pub enum Detail {
    /// Nothing (working, cancelled; a 2025 task always).
    None,
    /// `inputRequests`, as sent (an object; read with
    /// [`crate::features::mrtr::InputRequired::from_result`]).
    InputRequests(Value),
    /// The final result (`completed`), as sent.
    Result(Value),
    /// The JSON-RPC error (`failed`).
    Error(ErrorObject),
}

impl DetailedTask {
    /// Reads a detailed task of `era`. A 2026 `completed` without
    /// `result`, `failed` without a readable `error`, or `input_required`
    /// without `inputRequests` is malformed: there would be nothing to act
    /// on. A 2025 task inlines nothing.
    pub fn from_value(era: TaskEra, value: &Value) -> Result<Self, TaskError> {
        let snapshot = TaskSnapshot::from_task(era, value)?;
        if era == TaskEra::Core {
            return Ok(Self {
                snapshot,
                detail: Detail::None,
            });
        }
        let empty = Map::new();
        let object = value.as_object().unwrap_or(&empty);
        let detail = match snapshot.status {
            TaskStatus::Working | TaskStatus::Cancelled => Detail::None,
            TaskStatus::InputRequired => match object.get("inputRequests") {
                Some(requests @ Value::Object(_)) => Detail::InputRequests(requests.clone()),
                _ => {
                    return Err(TaskError::Malformed(
                        "it is `input_required` without an `inputRequests` object".into(),
                    ));
                }
            },
            TaskStatus::Completed => match object.get("result") {
                Some(result @ Value::Object(_)) => Detail::Result(result.clone()),
                _ => {
                    return Err(TaskError::Malformed(
                        "it is `completed` without a `result` object".into(),
                    ));
                }
            },
            TaskStatus::Failed => {
                match object
                    .get("error")
                    .and_then(|e| crate::wire::jsonrpc::parse_error_object(e.clone()).ok())
                {
                    Some(error) => Detail::Error(error),
                    None => {
                        return Err(TaskError::Malformed(
                            "it is `failed` without a readable JSON-RPC `error`".into(),
                        ));
                    }
                }
            }
        };
        Ok(Self { snapshot, detail })
    }
}

/// The task id a server's request or notification names in its
/// `_meta["io.modelcontextprotocol/related-task"]` (2025-11-25), if any.
pub fn related_task(params: Option<&Value>) -> Option<&str> {
    params?
        .get("_meta")?
        .get(RELATED_TASK)?
        .get("taskId")?
        .as_str()
}

/// The line a status change shows as progress: the status, and the
/// server's message when it sent one.
pub fn status_line(snapshot: &TaskSnapshot) -> String {
    match &snapshot.status_message {
        Some(message) => format!("task {}: {message}", snapshot.status),
        None => format!("task {}", snapshot.status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(status: &str) -> Value {
        json!({"taskId": "t-1", "status": status, "createdAt": "2026-01-01T00:00:00Z",
               "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000})
    }

    #[test]
    fn a_2026_handle_is_the_result_and_a_2025_one_its_task_member() {
        let mut modern = task("working");
        modern["resultType"] = json!("task");
        modern["pollIntervalMs"] = json!(5000);
        let snapshot = handle(TaskEra::Extension, &modern).unwrap();
        assert_eq!(snapshot.task_id, "t-1");
        assert_eq!(snapshot.status, TaskStatus::Working);
        assert_eq!(snapshot.poll_interval, Some(Duration::from_secs(5)));
        let mut legacy = task("working");
        legacy["pollInterval"] = json!(2000);
        let created = json!({"task": legacy});
        assert!(is_create_task_result(&created));
        let snapshot = handle(TaskEra::Core, &created).unwrap();
        assert_eq!(snapshot.poll_interval, Some(Duration::from_secs(2)));
        // Each era reads its own interval key only.
        assert_eq!(
            handle(TaskEra::Extension, &legacy).unwrap().poll_interval,
            None
        );
        assert!(!is_create_task_result(&json!({"task": {}, "content": []})));
    }

    #[test]
    fn bad_handles_say_what_is_wrong() {
        for (value, words) in [
            (json!({"status": "working"}), "no `taskId`"),
            (json!({"taskId": "", "status": "working"}), "empty"),
            (json!({"taskId": 7, "status": "working"}), "not a string"),
            (json!({"taskId": "a"}), "no `status`"),
            (json!({"taskId": "a", "status": 1}), "not a string"),
            (json!("task"), "not an object"),
            (
                json!({"taskId": "x".repeat(MAX_TASK_ID_LEN + 1), "status": "working"}),
                "bytes long",
            ),
        ] {
            let error = TaskSnapshot::from_task(TaskEra::Extension, &value).unwrap_err();
            assert!(error.to_string().contains(words), "{value}: {error}");
        }
        assert!(handle(TaskEra::Core, &json!({"content": []})).is_err());
    }

    #[test]
    fn an_unknown_status_is_its_own_error() {
        let error = TaskSnapshot::from_task(TaskEra::Core, &task("paused")).unwrap_err();
        assert_eq!(error, TaskError::UnknownStatus("paused".into()));
    }

    #[test]
    fn the_poll_interval_is_clamped_and_defaults() {
        let at = |ms: Value| {
            let mut t = task("working");
            t["pollIntervalMs"] = ms;
            TaskSnapshot::from_task(TaskEra::Extension, &t)
                .unwrap()
                .next_poll()
        };
        assert_eq!(at(json!(0)), MIN_POLL_INTERVAL);
        assert_eq!(at(json!(-5)), MIN_POLL_INTERVAL);
        assert_eq!(at(json!(1500)), Duration::from_millis(1500));
        assert_eq!(at(json!(3_600_000)), MAX_POLL_INTERVAL);
        assert_eq!(at(json!("soon")), DEFAULT_POLL_INTERVAL);
        assert_eq!(at(Value::Null), DEFAULT_POLL_INTERVAL);
    }

    #[test]
    fn a_detailed_2026_task_inlines_what_its_status_carries() {
        let mut done = task("completed");
        done["result"] = json!({"content": [{"type": "text", "text": "hi"}]});
        let read = DetailedTask::from_value(TaskEra::Extension, &done).unwrap();
        assert!(matches!(read.detail, Detail::Result(_)));
        let mut failed = task("failed");
        failed["error"] = json!({"code": -32603, "message": "boom"});
        let read = DetailedTask::from_value(TaskEra::Extension, &failed).unwrap();
        assert!(matches!(read.detail, Detail::Error(ref e) if e.message == "boom"));
        let mut asking = task("input_required");
        asking["inputRequests"] = json!({"k": {"method": "roots/list"}});
        let read = DetailedTask::from_value(TaskEra::Extension, &asking).unwrap();
        assert!(matches!(read.detail, Detail::InputRequests(_)));
        for bare in ["completed", "failed", "input_required"] {
            assert!(
                DetailedTask::from_value(TaskEra::Extension, &task(bare)).is_err(),
                "{bare}"
            );
            // A 2025 task inlines nothing, so lacks nothing.
            assert_eq!(
                DetailedTask::from_value(TaskEra::Core, &task(bare))
                    .unwrap()
                    .detail,
                Detail::None
            );
        }
    }

    #[test]
    fn related_task_reads_the_meta_and_status_lines_name_the_status() {
        let params = json!({"_meta": {RELATED_TASK: {"taskId": "t-9"}}, "message": "?"});
        assert_eq!(related_task(Some(&params)), Some("t-9"));
        assert_eq!(related_task(Some(&json!({"message": "?"}))), None);
        assert_eq!(related_task(None), None);
        let mut snapshot = TaskSnapshot::from_task(TaskEra::Core, &task("working")).unwrap();
        assert_eq!(status_line(&snapshot), "task working");
        snapshot.status_message = Some("3 of 10".into());
        assert_eq!(status_line(&snapshot), "task working: 3 of 10");
    }
}
