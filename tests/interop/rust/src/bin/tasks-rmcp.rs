//! A tasks server on the official Rust SDK (`rmcp` 3.11.0, its
//! `task_manager`: the 2026-07-28 tasks extension, SEP-2663), over stdio,
//! for rho's task tests (`tests/tests/tasks.rs`). rmcp answers
//! `tasks/get`, `tasks/update` and `tasks/cancel` from its `TaskManager`;
//! only the tools' work is written here.
//!
//!   tasks-rmcp
//!
//! Tools, each of which runs only as a task (a request that did not
//! declare the extension is refused with -32021, as the extension says):
//!
//! - `countdown {steps=3, marker}`: sets its status message to
//!   `step <i> of <steps>` every 200 ms, then returns `counted <steps>`;
//! - `slow_task {marker}`: works for up to an hour; appends
//!   `started <marker>`, then `cancelled <marker>` when `tasks/cancel`
//!   arrives (or `finished <marker>`), to the file named by INTEROP_RECORD;
//! - `greet_task`: asks for a name (a form, as an `inputRequests` entry),
//!   then returns `Hello, <name>!` or `action=<action>`.

use std::time::Duration;

#[path = "../shared.rs"]
mod shared;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, ElicitRequest, ElicitRequestParams, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskFuture, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "countdown",
            "Counts down as a task, reporting each step",
            shared::object(json!({"type": "object", "properties": {"steps": {"type": "integer"}}})),
        ),
        Tool::new(
            "slow_task",
            "Works for an hour as a task, until cancelled",
            shared::object(json!({"type": "object", "properties": {"marker": {"type": "string"}}})),
        ),
        Tool::new(
            "greet_task",
            "Asks for a name inside a task",
            shared::object(json!({"type": "object", "properties": {}})),
        ),
    ]
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

async fn countdown(context: TaskContext, steps: u64) -> Result<CallToolResult, TaskExit> {
    for i in 1..=steps {
        context.set_status_message(format!("step {i} of {steps}"));
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(200)) => {}
            () = context.cancelled() => return Err(TaskExit::Cancelled),
        }
    }
    Ok(text(format!("counted {steps}")))
}

async fn slow(context: TaskContext, marker: String) -> Result<CallToolResult, TaskExit> {
    shared::record(&format!("started {marker}"));
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(3600)) => {
            shared::record(&format!("finished {marker}"));
            Ok(text("slow finished"))
        }
        () = context.cancelled() => {
            shared::record(&format!("cancelled {marker}"));
            Err(TaskExit::Cancelled)
        }
    }
}

async fn greet(context: TaskContext) -> Result<CallToolResult, TaskExit> {
    let schema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Your name"}},
        "required": ["name"],
    }))
    .map_err(|e| TaskExit::Error(ErrorData::internal_error(format!("schema: {e}"), None)))?;
    let ask = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "Who are you?".into(),
        requested_schema: schema,
    });
    let answer = context
        .request_input("name", InputRequest::Elicitation(ask))
        .await?;
    Ok(
        match (
            answer["action"].as_str(),
            answer["content"]["name"].as_str(),
        ) {
            (Some("accept"), Some(name)) => text(format!("Hello, {name}!")),
            (action, _) => text(format!("action={}", action.unwrap_or("?"))),
        },
    )
}

#[derive(Clone, Default)]
struct Tasks {
    manager: TaskManager,
}

impl ServerHandler for Tasks {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("rho-tasks-rmcp", "3.11.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // These tools only run as tasks: a client that cannot follow one
        // is told what it lacks.
        if !context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
        {
            return Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ));
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        let options = TaskOptions::new()
            .with_poll_interval_ms(100)
            .with_status_message("queued");
        let task = match request.name.as_ref() {
            "countdown" => {
                let steps = arguments.get("steps").and_then(Value::as_u64).unwrap_or(3);
                self.manager.spawn(options, move |cx| -> TaskFuture {
                    Box::pin(countdown(cx, steps.min(50)))
                })
            }
            "slow_task" => {
                let marker = arguments
                    .get("marker")
                    .and_then(Value::as_str)
                    .unwrap_or("slow")
                    .to_owned();
                self.manager.spawn(options, move |cx| -> TaskFuture {
                    Box::pin(slow(cx, marker))
                })
            }
            "greet_task" => self
                .manager
                .spawn(options, |cx| -> TaskFuture { Box::pin(greet(cx)) }),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.manager
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.manager
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.manager.cancel_task(&request.task_id)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = shared::serve_stdio(Tasks::default(), "rmcp tasks server").await {
        eprintln!("tasks-rmcp: {e}");
        std::process::exit(1);
    }
}
