//! The interop server on the official Rust SDK (`rmcp` 3.11.0, pinned in
//! Cargo.lock): a hand-written `ServerHandler` (no macros) over stdio or
//! rmcp's Streamable HTTP tower service. rmcp speaks both eras: the 2025
//! handshake and, after `server/discover` or a request carrying
//! `_meta` `io.modelcontextprotocol/protocolVersion`, the stateless
//! 2026-07-28 revision (forms and sampling as multi round-trip results,
//! change notices on `subscriptions/listen`).
//!
//!   interop-rmcp stdio | http-sse | http-json | stateless
//!
//! HTTP binds 127.0.0.1 on a port the kernel picks, endpoint /mcp, and
//! prints `listening PORT` first on stdout. http-sse keeps rmcp's legacy
//! sessions (2025 clients get a session id; answers are SSE streams);
//! http-json and stateless have no legacy sessions, answering as JSON
//! bodies (`json_response`: JSON for a lone result, SSE as soon as a
//! notification or request comes first, rmcp's own rule) or SSE streams.
//! rmcp offers no stateful session with JSON answers (`json_response`
//! applies only outside legacy sessions). Diagnostics go to stderr. `slow`
//! appends `started <marker>`, then `cancelled <marker>` or
//! `finished <marker>`, to the file named by INTEROP_RECORD.

// Sampling and logging are deprecated by SEP-2577 (still functional):
// the surface exercises them on purpose.
#![allow(deprecated)]

use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod shared;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientResult, CompleteRequestParams,
    CompleteResult, CompletionInfo, ContentBlock, CreateMessageRequest, CreateMessageRequestParams,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InputRequest, InputRequests,
    InputRequiredResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, Prompt, PromptArgument, PromptMessage,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Reference, Resource, ResourceContents, ResourceTemplate, Role, SamplingMessage,
    ServerCapabilities, ServerConfig, ServerRequest, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// A 1×1 red PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const NAMES: &[&str] = &["alice", "albert", "bob"];
const ITEMS: &[&str] = &["apple", "apricot", "banana"];
const README: &str = "rho interop server: every SDK exposes the same surface.";
const TRANSPORTS: &[&str] = &["stdio", "http-sse", "http-json", "stateless"];
/// The key of the one input request `ask` and `sample` make in the
/// 2026-07-28 era.
const INPUT_KEY: &str = "input";

/// What every handler instance shares: HTTP builds one per request (or per
/// legacy session), and `add_tool` must be seen by all of them.
struct Shared {
    added: AtomicBool,
    /// Tool-list changes, for the 2026-07-28 era's `subscriptions/listen`.
    tools_changed: broadcast::Sender<()>,
}

#[derive(Clone)]
struct Interop {
    shared: Arc<Shared>,
}

fn suggest(values: &[&str], prefix: &str) -> Vec<String> {
    values
        .iter()
        .filter(|v| v.starts_with(prefix))
        .map(|v| (*v).to_owned())
        .collect()
}

fn no_arguments() -> Arc<JsonObject> {
    shared::object(json!({"type": "object", "properties": {}}))
}

fn text(s: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(s)])
}

fn tools(added: bool) -> Vec<Tool> {
    let mut tools = vec![
        Tool::new(
            "echo",
            "Echoes the message",
            shared::object(json!({
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"],
            })),
        ),
        Tool::new(
            "structured",
            "Structured weather",
            shared::object(json!({"type": "object", "properties": {"city": {"type": "string"}}})),
        )
        .with_raw_output_schema(shared::object(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
        }))),
        Tool::new("image", "A tiny PNG", no_arguments()),
        Tool::new("fail", "Always fails", no_arguments()),
        Tool::new("progress", "Three progress notifications", no_arguments()),
        Tool::new(
            "slow",
            "Runs long; records whether it was cancelled",
            shared::object(json!({
                "type": "object",
                "properties": {"marker": {"type": "string"}, "seconds": {"type": "number"}},
            })),
        ),
        Tool::new("log", "Logs at four levels", no_arguments()),
        Tool::new("ask", "Asks a form", no_arguments()),
        Tool::new("sample", "Asks the client's model", no_arguments()),
        Tool::new("add_tool", "Registers the tool `added`", no_arguments()),
    ];
    if added {
        tools.push(Tool::new("added", "Registered at runtime", no_arguments()));
    }
    tools
}

/// Whether the request runs in the stateless 2026-07-28 era, where server
/// requests become multi round-trip results.
fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

fn ask_request() -> Result<ElicitRequestParams, ErrorData> {
    let schema = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Your name"},
            "agree": {"type": "boolean", "description": "Do you agree?"},
        },
        "required": ["name", "agree"],
    }))
    .map_err(|e| ErrorData::internal_error(format!("form schema: {e}"), None))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "Who are you?".into(),
        requested_schema: schema,
    })
}

fn answered(result: &ElicitResult) -> String {
    match (&result.action, &result.content) {
        (ElicitationAction::Accept, Some(content)) => {
            let field = |name: &str| match &content[name] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("answered name={} agree={}", field("name"), field("agree"))
        }
        (action, _) => format!(
            "action={}",
            serde_json::to_value(action)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("{action:?}"))
        ),
    }
}

fn sample_request() -> CreateMessageRequestParams {
    CreateMessageRequestParams::new(vec![SamplingMessage::user_text("Say hi")], 50)
}

/// `model said: <text>` from a `sampling/createMessage` result, read as
/// JSON (its content is one block or a list of them).
fn model_said(result: &Value) -> String {
    let content = &result["content"];
    let first = if content.is_array() {
        &content[0]
    } else {
        content
    };
    match first["text"].as_str() {
        Some(text) if first["type"] == "text" => format!("model said: {text}"),
        _ => format!("model said: {first}"),
    }
}

/// The answer to the 2026-07-28 era's retry: the client's response to
/// our one input request, or `None` on the first round.
fn input_response(request: &CallToolRequestParams) -> Option<&Value> {
    request.input_responses.as_ref()?.get(INPUT_KEY)
}

fn input_required(request: InputRequest) -> CallToolResponse {
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_owned(), request);
    InputRequiredResult::new(Some(requests), None).into()
}

impl Interop {
    fn new() -> Self {
        Interop {
            shared: Arc::new(Shared {
                added: AtomicBool::new(false),
                tools_changed: broadcast::channel(16).0,
            }),
        }
    }

    async fn progress(&self, context: &RequestContext<RoleServer>) -> CallToolResult {
        let token = context.meta.get_progress_token();
        for i in 1..=3 {
            if let Some(token) = &token {
                let mut params = ProgressNotificationParam::new(token.clone(), f64::from(i));
                params.total = Some(3.0);
                params.message = Some(format!("step {i}"));
                if let Err(e) = context.peer.notify_progress(params).await {
                    eprintln!("progress: {e}");
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        text("progress done")
    }

    async fn slow(
        &self,
        arguments: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let marker = arguments
            .get("marker")
            .and_then(Value::as_str)
            .unwrap_or("slow");
        let seconds = arguments
            .get("seconds")
            .and_then(Value::as_f64)
            .unwrap_or(30.0);
        shared::record(&format!("started {marker}"));
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 3600.0))) => {
                shared::record(&format!("finished {marker}"));
                Ok(text("slow finished"))
            }
            () = context.ct.cancelled() => {
                shared::record(&format!("cancelled {marker}"));
                Err(ErrorData::internal_error("cancelled", None))
            }
        }
    }

    async fn log(&self, context: &RequestContext<RoleServer>) -> CallToolResult {
        for (level, name) in [
            (LoggingLevel::Debug, "debug"),
            (LoggingLevel::Info, "info"),
            (LoggingLevel::Warning, "warning"),
            (LoggingLevel::Error, "error"),
        ] {
            let mut params = LoggingMessageNotificationParam::new(
                level,
                json!(format!("interop {name} message")),
            );
            params.logger = Some("interop".into());
            if let Err(e) = context.peer.notify_logging_message(params).await {
                eprintln!("log: {e}");
            }
        }
        text("logged")
    }

    async fn ask(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if is_modern(context) {
            return Ok(match input_response(request) {
                None => input_required(InputRequest::Elicitation(ElicitRequest::new(
                    ask_request()?
                ))),
                Some(answer) => {
                    let answer: ElicitResult =
                        serde_json::from_value(answer.clone()).map_err(|e| {
                            ErrorData::invalid_params(format!("form answer: {e}"), None)
                        })?;
                    text(answered(&answer)).into()
                }
            });
        }
        let reply = context
            .peer
            .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(
                ask_request()?,
            )))
            .await;
        Ok(match reply {
            Ok(ClientResult::ElicitResult(answer)) => text(answered(&answer)),
            Ok(other) => CallToolResult::error(vec![ContentBlock::text(format!(
                "unexpected answer to the form: {other:?}"
            ))]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!("form failed: {e}"))]),
        }
        .into())
    }

    async fn sample(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if is_modern(context) {
            return Ok(match input_response(request) {
                None => input_required(InputRequest::CreateMessage(CreateMessageRequest::new(
                    sample_request(),
                ))),
                Some(result) => text(model_said(result)).into(),
            });
        }
        Ok(match context.peer.create_message(sample_request()).await {
            Ok(result) => text(model_said(
                &serde_json::to_value(&result).unwrap_or_default(),
            )),
            Err(e) => {
                CallToolResult::error(vec![ContentBlock::text(format!("sampling failed: {e}"))])
            }
        }
        .into())
    }

    async fn add_tool(&self, context: &RequestContext<RoleServer>) -> CallToolResult {
        if !self.shared.added.swap(true, Ordering::SeqCst) {
            if is_modern(context) {
                // 2026-07-28: to every open subscriptions/listen stream.
                let _ = self.shared.tools_changed.send(());
            } else if let Err(e) = context.peer.notify_tool_list_changed().await {
                eprintln!("tools/list_changed: {e}");
            }
        }
        text("added")
    }
}

impl ServerHandler for Interop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("rho-interop-rmcp", "3.11.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(
            self.shared.added.load(Ordering::SeqCst),
        )))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools(self.shared.added.load(Ordering::SeqCst))
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.clone().unwrap_or_default();
        let result = match request.name.as_ref() {
            "echo" => {
                let message = arguments
                    .get("message")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ErrorData::invalid_params("echo needs a message", None))?;
                text(format!("Echo: {message}"))
            }
            "structured" => {
                let city = arguments
                    .get("city")
                    .and_then(Value::as_str)
                    .unwrap_or("Paris");
                CallToolResult::structured(json!({"city": city, "celsius": 21.5}))
            }
            "image" => CallToolResult::success(vec![ContentBlock::image(PNG_B64, "image/png")]),
            "fail" => CallToolResult::error(vec![ContentBlock::text("this tool always fails")]),
            "progress" => self.progress(&context).await,
            "slow" => self.slow(&arguments, &context).await?,
            "log" => self.log(&context).await,
            "ask" => return self.ask(&request, &context).await,
            "sample" => return self.sample(&request, &context).await,
            "add_tool" => self.add_tool(&context).await,
            "added" if self.shared.added.load(Ordering::SeqCst) => text("added here"),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("unknown tool {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "greet",
            Some("Greets someone"),
            Some(vec![PromptArgument::new("name").with_required(true)]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "greet" {
            return Err(ErrorData::invalid_params(
                format!("unknown prompt {}", request.name),
                None,
            ));
        }
        let name = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("greet needs a name", None))?;
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Hello, {name}!"),
        )])
        .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new("interop://readme", "readme").with_mime_type("text/plain"),
        ]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("interop://items/{item}", "item").with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let body = if uri == "interop://readme" {
            README.to_owned()
        } else if let Some(item) = uri
            .strip_prefix("interop://items/")
            .filter(|i| !i.is_empty())
        {
            format!("item {item}")
        } else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {uri}"),
                None,
            ));
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(body, uri).with_mime_type("text/plain"),
        ])
        .into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let argument = &request.argument;
        let values = match &request.r#ref {
            Reference::Prompt(p) if p.name == "greet" && argument.name == "name" => {
                suggest(NAMES, &argument.value)
            }
            Reference::Resource(r)
                if r.uri == "interop://items/{item}" && argument.name == "item" =>
            {
                suggest(ITEMS, &argument.value)
            }
            _ => Vec::new(),
        };
        let completion =
            CompletionInfo::new(values).map_err(|e| ErrorData::internal_error(e, None))?;
        Ok(CompleteResult::new(completion))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let mut changes = self.shared.tools_changed.subscribe();
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                change = changes.recv() => match change {
                    Ok(()) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if let Err(e) = context.sink().notify_tool_list_changed().await {
                            eprintln!("subscriptions/listen: {e}");
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}

async fn serve_http(server: Interop, transport: &str) -> std::io::Result<()> {
    let config = StreamableHttpServerConfig::default();
    let config = match transport {
        "http-sse" => config.with_legacy_session_mode(true),
        "http-json" => config
            .with_legacy_session_mode(false)
            .with_json_response(true),
        _ => config.with_legacy_session_mode(false),
    };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    println!("listening {}", listener.local_addr()?.port());
    std::io::stdout().flush()?;
    eprintln!("rmcp interop server on {transport}");
    loop {
        let (stream, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                async move {
                    if request.uri().path() != "/mcp" {
                        let body = Full::new(Bytes::from_static(b"not found")).boxed();
                        let mut response = hyper::Response::new(body);
                        *response.status_mut() = hyper::StatusCode::NOT_FOUND;
                        return Ok::<_, Infallible>(response);
                    }
                    Ok(service.handle(request).await)
                }
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                .await
            {
                eprintln!("connection: {e}");
            }
        });
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let transport = std::env::args().nth(1).unwrap_or_else(|| "stdio".into());
    if !TRANSPORTS.contains(&transport.as_str()) {
        eprintln!("usage: interop-rmcp {}", TRANSPORTS.join("|"));
        std::process::exit(2);
    }
    let server = Interop::new();
    let outcome = if transport == "stdio" {
        shared::serve_stdio(server, "rmcp interop server").await
    } else {
        serve_http(server, &transport).await
    };
    if let Err(e) = outcome {
        eprintln!("interop-rmcp: {e}");
        std::process::exit(1);
    }
}
