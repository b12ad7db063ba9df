//! MCP message shapes the client reads and writes, named as the
//! specification names them (`schema/2025-11-25/schema.ts`, and
//! `schema/2026-07-28/schema.ts` for the stateless era: discovery,
//! `resultType`, cache hints, per-request `_meta`, `x-mcp-header`).
//!
//! Parsing is lenient where the protocol lets servers vary (unknown fields
//! are ignored, optional fields may be absent) and strict where a missing
//! field would make the message meaningless (a tool without a `name`).
//! Every parse failure says which field was wrong, so a
//! [`crate::session::PeerError`] can name it.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::wire::jsonrpc::ErrorObject;

/// The protocol revision rho offers first.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol revision rho speaks, newest first. A server that answers
/// `initialize` with any other version is refused.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Name and version of a client or server (`Implementation` in the schema).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string, as the peer sent it.
    pub version: String,
    /// Human-readable name, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

impl Implementation {
    fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "serverInfo")?;
        Ok(Self {
            name: string_field(obj, "name", "serverInfo")?,
            version: string_field(obj, "version", "serverInfo")?,
            title: optional_string(obj, "title"),
        })
    }
}

/// A message did not have the shape the protocol requires.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{0}")]
pub struct ShapeError(pub String);

/// The parts of an `InitializeResult` the client acts on.
#[derive(Clone, Debug, PartialEq)]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// Who the server says it is.
    pub server_info: Implementation,
    /// The server's declared capabilities, as sent.
    pub capabilities: ServerCapabilities,
    /// Usage notes for the model, when the server sent any.
    pub instructions: Option<String>,
}

impl InitializeResult {
    /// Reads an `initialize` result.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "initialize result")?;
        let protocol_version = string_field(obj, "protocolVersion", "initialize result")?;
        let server_info = match obj.get("serverInfo") {
            Some(info) => Implementation::from_value(info)?,
            None => return Err(ShapeError("initialize result has no `serverInfo`".into())),
        };
        let capabilities = match obj.get("capabilities") {
            Some(Value::Object(caps)) => ServerCapabilities::from_map(caps),
            Some(_) => {
                return Err(ShapeError(
                    "initialize result `capabilities` is not an object".into(),
                ));
            }
            None => {
                return Err(ShapeError("initialize result has no `capabilities`".into()));
            }
        };
        Ok(Self {
            protocol_version,
            server_info,
            capabilities,
            instructions: optional_string(obj, "instructions"),
        })
    }
}

/// What a server declared it can do. Only presence matters for most
/// capabilities; the sub-flags rho acts on are broken out.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ServerCapabilities {
    /// `tools` declared.
    pub tools: bool,
    /// `tools.listChanged` declared.
    pub tools_list_changed: bool,
    /// `logging` declared.
    pub logging: bool,
    /// `prompts` declared.
    pub prompts: bool,
    /// `prompts.listChanged` declared. Not recorded: transcripts keep the
    /// capabilities they always had, and a replay reads it from the bytes.
    #[serde(skip)]
    pub prompts_list_changed: bool,
    /// `resources` declared.
    pub resources: bool,
    /// `resources.listChanged` declared (not recorded, as above).
    #[serde(skip)]
    pub resources_list_changed: bool,
    /// `resources.subscribe` declared: the server takes subscriptions to
    /// single resources (2025: `resources/subscribe`; 2026:
    /// `resourceSubscriptions` on `subscriptions/listen`). Not recorded,
    /// as above.
    #[serde(skip)]
    pub resources_subscribe: bool,
    /// `completions` declared.
    pub completions: bool,
    /// The skills extension declared (an object at
    /// `extensions["io.modelcontextprotocol/skills"]`, SEP-2640): the
    /// server answers `skills/list` and `skills/get`. Recorded only when
    /// set, so transcripts of servers without it read as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub skills: bool,
    /// `tasks.requests.tools.call` declared (2025-11-25, experimental
    /// tasks): a tool may be called as a task ([`TaskSupport`]). Recorded
    /// only when set, as `skills` is.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tasks_tool_call: bool,
    /// `tasks.cancel` declared (2025-11-25): the server answers
    /// `tasks/cancel`. Recorded only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tasks_cancel: bool,
    /// The 2026-07-28 tasks extension declared
    /// (`extensions["io.modelcontextprotocol/tasks"]`): the server may
    /// answer a call with a task. Recorded only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tasks_extension: bool,
}

impl ServerCapabilities {
    fn from_map(caps: &Map<String, Value>) -> Self {
        let flag = |cap: &str, sub: &str| {
            caps.get(cap)
                .and_then(|c| c.get(sub))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Self {
            tools: caps.contains_key("tools"),
            tools_list_changed: flag("tools", "listChanged"),
            logging: caps.contains_key("logging"),
            prompts: caps.contains_key("prompts"),
            prompts_list_changed: flag("prompts", "listChanged"),
            resources: caps.contains_key("resources"),
            resources_list_changed: flag("resources", "listChanged"),
            resources_subscribe: flag("resources", "subscribe"),
            completions: caps.contains_key("completions"),
            skills: caps
                .get("extensions")
                .and_then(|e| e.get(crate::features::skills::EXTENSION_ID))
                .is_some_and(Value::is_object),
            tasks_tool_call: caps
                .get("tasks")
                .and_then(|t| t.get("requests"))
                .and_then(|r| r.get("tools"))
                .and_then(|t| t.get("call"))
                .is_some_and(Value::is_object),
            tasks_cancel: caps
                .get("tasks")
                .and_then(|t| t.get("cancel"))
                .is_some_and(Value::is_object),
            tasks_extension: caps
                .get("extensions")
                .and_then(|e| e.get(crate::features::tasks::EXTENSION_ID))
                .is_some_and(Value::is_object),
        }
    }
}

/// Behaviour hints a server attaches to a tool. They are claims from a
/// server rho does not control: shown to the model and the user, never used
/// to relax a permission.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolAnnotations {
    /// `readOnlyHint`, when the server set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// `destructiveHint`, when the server set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// `idempotentHint`, when the server set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// `openWorldHint`, when the server set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// The annotations' own `title`, when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// One tool from `tools/list`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tool {
    /// The server's name for the tool (the name `tools/call` takes).
    pub name: String,
    /// Human-readable name: the tool's `title`, else `annotations.title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, as the server describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments. Shared, not copied, by the session,
    /// the inventory, the tool registry and every view: a server's schemas
    /// are most of what its tools weigh.
    pub input_schema: Arc<Value>,
    /// JSON Schema the `structuredContent` of every result must satisfy
    /// (shared as `input_schema` is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
    /// The tool's `_meta` as the server sent it (an object), shared as
    /// `input_schema` is. MCP Apps reads its `ui` member
    /// ([`crate::features::apps`]).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Arc<Value>>,
    /// `execution.taskSupport` (2025-11-25, experimental tasks): whether
    /// the tool may or must be called as a task. Recorded only when not
    /// the default, so transcripts of other tools read as before.
    #[serde(skip_serializing_if = "TaskSupport::is_forbidden")]
    pub task_support: TaskSupport,
}

/// A tool's `execution.taskSupport` (2025-11-25): how a client may call
/// it. Only a server that declared `tasks.requests.tools.call` is called
/// as a task; without that capability the value means nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskSupport {
    /// Absent, `"forbidden"`, or a value rho does not know: a plain call.
    #[default]
    Forbidden,
    /// `"optional"`: a plain call, or a task when the host asks for one.
    Optional,
    /// `"required"`: always a task (the server refuses a plain call).
    Required,
}

impl TaskSupport {
    fn is_forbidden(&self) -> bool {
        *self == Self::Forbidden
    }

    fn of(tool: &Map<String, Value>) -> Self {
        match tool
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
        {
            Some("required") => Self::Required,
            Some("optional") => Self::Optional,
            _ => Self::Forbidden,
        }
    }
}

impl Tool {
    /// The tool in the wire's shape (`inputSchema`, `annotations` with
    /// their hint names, `_meta`), as a view's `hostContext.toolInfo`
    /// gives it. Members rho does not read are not kept, so not given.
    pub fn to_wire(&self) -> Value {
        let mut tool = serde_json::Map::new();
        tool.insert("name".into(), Value::String(self.name.clone()));
        if let Some(title) = &self.title {
            tool.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &self.description {
            tool.insert("description".into(), Value::String(description.clone()));
        }
        tool.insert("inputSchema".into(), (*self.input_schema).clone());
        if let Some(output) = &self.output_schema {
            tool.insert("outputSchema".into(), (**output).clone());
        }
        let a = &self.annotations;
        let mut annotations = serde_json::Map::new();
        for (key, hint) in [
            ("readOnlyHint", a.read_only),
            ("destructiveHint", a.destructive),
            ("idempotentHint", a.idempotent),
            ("openWorldHint", a.open_world),
        ] {
            if let Some(hint) = hint {
                annotations.insert(key.into(), Value::Bool(hint));
            }
        }
        if let Some(title) = &a.title {
            annotations.insert("title".into(), Value::String(title.clone()));
        }
        if !annotations.is_empty() {
            tool.insert("annotations".into(), Value::Object(annotations));
        }
        if let Some(meta) = &self.meta {
            tool.insert("_meta".into(), (**meta).clone());
        }
        Value::Object(tool)
    }

    /// Reads one entry of a `tools/list` result.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "tool")?;
        let name = string_field(obj, "name", "tool")?;
        let input_schema = match obj.get("inputSchema") {
            Some(schema @ Value::Object(_)) => Arc::new(schema.clone()),
            Some(_) => {
                return Err(ShapeError(format!(
                    "tool `{name}`: `inputSchema` is not an object"
                )));
            }
            None => {
                return Err(ShapeError(format!("tool `{name}` has no `inputSchema`")));
            }
        };
        let output_schema = match obj.get("outputSchema") {
            None | Some(Value::Null) => None,
            Some(schema @ Value::Object(_)) => Some(Arc::new(schema.clone())),
            Some(_) => {
                return Err(ShapeError(format!(
                    "tool `{name}`: `outputSchema` is not an object"
                )));
            }
        };
        let annotations = match obj.get("annotations") {
            Some(Value::Object(a)) => ToolAnnotations {
                read_only: a.get("readOnlyHint").and_then(Value::as_bool),
                destructive: a.get("destructiveHint").and_then(Value::as_bool),
                idempotent: a.get("idempotentHint").and_then(Value::as_bool),
                open_world: a.get("openWorldHint").and_then(Value::as_bool),
                title: optional_string(a, "title"),
            },
            _ => ToolAnnotations::default(),
        };
        let title = optional_string(obj, "title").or_else(|| annotations.title.clone());
        // `_meta` is an object or nothing; another value is ignored as
        // an unknown field would be.
        let meta = obj
            .get("_meta")
            .filter(|m| m.is_object())
            .map(|m| Arc::new(m.clone()));
        Ok(Self {
            description: optional_string(obj, "description"),
            name,
            title,
            input_schema,
            output_schema,
            annotations,
            meta,
            task_support: TaskSupport::of(obj),
        })
    }
}

/// One page of a `tools/list` result: the tools that parsed, what did not,
/// and the cursor of the next page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolsPage {
    /// Tools that parsed.
    pub tools: Vec<Tool>,
    /// Entries that did not parse, each with its reason.
    pub rejected: Vec<ShapeError>,
    /// `nextCursor`, when the server has more.
    pub next_cursor: Option<String>,
    /// The page's freshness hints (2026-07-28; defaults otherwise).
    pub cache: CacheHint,
}

impl ToolsPage {
    /// Reads a `tools/list` result. A malformed entry is rejected alone; a
    /// result without a `tools` array is an error.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "tools/list result")?;
        final_result(value, "tools/list")?;
        let Some(Value::Array(entries)) = obj.get("tools") else {
            return Err(ShapeError("tools/list result has no `tools` array".into()));
        };
        let mut page = ToolsPage {
            next_cursor: optional_string(obj, "nextCursor"),
            cache: CacheHint::from_map(obj),
            ..Self::default()
        };
        for entry in entries {
            match Tool::from_value(entry) {
                Ok(tool) => page.tools.push(tool),
                Err(e) => page.rejected.push(e),
            }
        }
        Ok(page)
    }
}

/// The params of a `tools/call` request, serialized straight into the
/// request's bytes. Field order is wire order: `name`, `arguments`,
/// `_meta`.
#[derive(Debug, Serialize)]
pub(crate) struct CallToolParams<'a> {
    pub(crate) name: &'a str,
    /// A JSON object.
    pub(crate) arguments: &'a Value,
    #[serde(rename = "_meta")]
    pub(crate) meta: RequestMeta,
    /// `task` (2025-11-25): the call runs as a task; the server answers
    /// with a `CreateTaskResult`. An empty object: the server chooses the
    /// task's lifetime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<Value>,
}

/// The `_meta` of a request rho sends: the token a server reports
/// progress against.
#[derive(Debug, Serialize)]
pub(crate) struct RequestMeta {
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: u64,
}

/// A `tools/call` result. The content blocks are kept as sent; rendering
/// them for the model and the tool card is the `content` module's job.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CallToolResult {
    /// The content blocks, as sent.
    pub content: Vec<Value>,
    /// `structuredContent`, when present.
    pub structured_content: Option<Value>,
    /// The server reported the call itself as failed.
    pub is_error: bool,
    /// Every other member as sent (`isError` itself, `_meta`, members of
    /// later revisions, a `structuredContent` of null), so that
    /// [`CallToolResult::as_sent`] gives the result back whole.
    #[serde(skip)]
    pub other: Map<String, Value>,
}

impl CallToolResult {
    /// Reads a `tools/call` result.
    ///
    /// One pass over the members, taking each by name: a lookup in the map
    /// would hash every name looked for, on every call.
    pub fn from_value(value: Value) -> Result<Self, ShapeError> {
        let Value::Object(obj) = value else {
            return Err(ShapeError("tools/call result is not an object".into()));
        };
        let mut content = None;
        let mut structured = None;
        let mut is_error = false;
        let mut other = Map::new();
        for (name, member) in obj {
            match name.as_str() {
                "content" => content = Some(member),
                "structuredContent" if !member.is_null() => structured = Some(member),
                _ => {
                    if name == "isError" {
                        is_error = member.as_bool().unwrap_or(false);
                    }
                    other.insert(name, member);
                }
            }
        }
        let content = match content {
            Some(Value::Array(blocks)) => blocks,
            // Older servers that only return structured content.
            None if structured.is_some() => Vec::new(),
            _ => {
                return Err(ShapeError(
                    "tools/call result has no `content` array".into(),
                ));
            }
        };
        Ok(Self {
            content,
            structured_content: structured,
            is_error,
            other,
        })
    }

    /// The result object as the server sent it, member order aside:
    /// `content` is always present (`[]` when the server sent only
    /// `structuredContent`).
    pub fn as_sent(&self) -> Value {
        let mut obj = Map::with_capacity(self.other.len() + 2);
        obj.insert("content".into(), Value::Array(self.content.clone()));
        if let Some(structured) = &self.structured_content {
            obj.insert("structuredContent".into(), structured.clone());
        }
        for (name, member) in &self.other {
            obj.insert(name.clone(), member.clone());
        }
        Value::Object(obj)
    }

    /// The text of every `text` block, joined by newlines: the plain reading
    /// of a result for a terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if block.get("type").and_then(Value::as_str) == Some("text")
                && let Some(text) = block.get("text").and_then(Value::as_str)
            {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

// ----- the 2026-07-28 era (stateless) -----

/// The stateless revision rho offers first: no `initialize`, every request
/// carries its version, capabilities and identity in `_meta`.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// Every stateless revision rho speaks, newest first.
pub const MODERN_PROTOCOL_VERSIONS: [&str; 1] = [MODERN_PROTOCOL_VERSION];

/// Whether `version` is a stateless revision rho speaks (driven with
/// `server/discover` and per-request `_meta`, never `initialize`).
pub fn is_modern(version: &str) -> bool {
    MODERN_PROTOCOL_VERSIONS.contains(&version)
}

/// Error codes the 2026-07-28 revision defines (the `-32020..-32099` range
/// is reserved for the specification).
pub mod code {
    /// The HTTP headers do not match the body, or a required one is missing.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The server does not speak the requested protocol version.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// JSON-RPC's own "Method not found" (not of this revision's range;
    /// here because an era's optional method meets it often).
    pub const METHOD_NOT_FOUND: i64 = -32601;
}

/// Whether an error is one the 2026-07-28 revision defines: a server that
/// answers with one speaks that revision, whatever else it got wrong.
pub fn is_modern_error(error: &ErrorObject) -> bool {
    matches!(
        error.code,
        code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// The `data` of an `UnsupportedProtocolVersionError` (-32022).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnsupportedVersion {
    /// The versions the server says it speaks, as sent (strings only).
    pub supported: Vec<String>,
    /// The version it says was asked for.
    pub requested: Option<String>,
}

impl UnsupportedVersion {
    /// Reads a -32022 error; `None` for any other code. A missing or
    /// malformed `data` reads as an empty list.
    pub fn from_error(error: &ErrorObject) -> Option<Self> {
        if error.code != code::UNSUPPORTED_PROTOCOL_VERSION {
            return None;
        }
        let data = error.data.as_ref();
        let supported = data
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let requested = data
            .and_then(|d| d.get("requested"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        Some(Self {
            supported,
            requested,
        })
    }

    /// The newest stateless version rho speaks that the server listed.
    pub fn modern_choice(&self) -> Option<&'static str> {
        newest_common(&MODERN_PROTOCOL_VERSIONS, &self.supported)
    }

    /// The newest handshake version rho speaks that the server listed.
    pub fn legacy_choice(&self) -> Option<&'static str> {
        newest_common(&SUPPORTED_PROTOCOL_VERSIONS, &self.supported)
    }
}

/// The first of `ours` (newest first) that `theirs` lists.
fn newest_common(ours: &[&'static str], theirs: &[String]) -> Option<&'static str> {
    ours.iter().copied().find(|v| theirs.iter().any(|t| t == v))
}

/// What an error means in words a person can act on, for the codes the
/// 2026-07-28 revision defines; the server's own message and code follow.
/// Other errors read as the server wrote them.
pub fn describe_error(error: &ErrorObject) -> String {
    match error.code {
        code::HEADER_MISMATCH => format!(
            "the server says the request's HTTP headers do not match its body or one is missing \
             (a proxy may have rewritten them, or the tool's x-mcp-header annotations changed): {error}"
        ),
        code::MISSING_REQUIRED_CLIENT_CAPABILITY => {
            let wanted = error
                .data
                .as_ref()
                .and_then(|d| d.get("requiredCapabilities"))
                .and_then(Value::as_object)
                .map(|caps| caps.keys().cloned().collect::<Vec<_>>().join(", "))
                .filter(|names| !names.is_empty());
            let what = match wanted {
                Some(names) => format!("client capabilities rho did not declare ({names})"),
                None => "a client capability rho did not declare".to_owned(),
            };
            format!(
                "the server needs {what}; rho declares elicitation only where a person can answer, \
                 sampling only for servers with `sampling = \"ask\"`, and roots only with a workspace: {error}"
            )
        }
        code::UNSUPPORTED_PROTOCOL_VERSION => {
            let versions = UnsupportedVersion::from_error(error).unwrap_or_default();
            let listed = if versions.supported.is_empty() {
                "none".to_owned()
            } else {
                versions.supported.join(", ")
            };
            format!(
                "the server does not speak the protocol version rho asked for (it lists {listed}; \
                 rho speaks {} and {}): {error}",
                MODERN_PROTOCOL_VERSIONS.join(", "),
                SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            )
        }
        _ => error.to_string(),
    }
}

/// How a result is to be read (`resultType`, 2026-07-28). Results from
/// servers of earlier revisions have none and read as complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResultType {
    /// The request is done; the result is final.
    Complete,
    /// The server needs input first (an `InputRequiredResult`: a multi
    /// round-trip request).
    InputRequired,
    /// The server made the request a task (`CreateTaskResult`, the tasks
    /// extension, `io.modelcontextprotocol/tasks`): the result comes later.
    Task,
}

impl ResultType {
    /// Reads the `resultType` of a result: absent is complete; a value rho
    /// does not know is invalid (the spec says so, since extensions only
    /// add values a client advertised).
    pub fn of(result: &Value) -> Result<Self, ShapeError> {
        // A scan, not a lookup: a result has a handful of members, and a
        // lookup hashes the name on every reply.
        let member = result
            .as_object()
            .and_then(|obj| obj.iter().find(|(name, _)| *name == "resultType"))
            .map(|(_, v)| v);
        match member {
            None | Some(Value::Null) => Ok(Self::Complete),
            Some(Value::String(s)) if s == "complete" => Ok(Self::Complete),
            Some(Value::String(s)) if s == "input_required" => Ok(Self::InputRequired),
            Some(Value::String(s)) if s == "task" => Ok(Self::Task),
            Some(Value::String(s)) => Err(ShapeError(format!(
                "the result has resultType `{}`, which rho does not know",
                s.chars().take(64).collect::<String>()
            ))),
            Some(_) => Err(ShapeError(
                "the result's `resultType` is not a string".into(),
            )),
        }
    }
}

/// Fails a result of `method` that is not final: one asking for input
/// (rho answers that only for tool calls) or of a `resultType` rho does
/// not know.
fn final_result(value: &Value, method: &str) -> Result<(), ShapeError> {
    match ResultType::of(value)? {
        ResultType::Complete => Ok(()),
        ResultType::InputRequired => Err(ShapeError(format!(
            "the server asked for input to answer {method} (a multi round-trip request), which rho answers only for tool calls"
        ))),
        // The tasks extension covers `tools/call` alone: a task handle
        // for anything else is an invalid response, as the extension says.
        ResultType::Task => Err(ShapeError(format!(
            "the server answered {method} with a task handle, which the tasks extension allows only for tool calls"
        ))),
    }
}

/// Who may cache a result (`cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CacheScope {
    /// Not user-specific: shared caches may keep it.
    Public,
    /// For this authorization context only (the default when absent).
    #[default]
    Private,
}

/// The freshness hints of a `CacheableResult` (`ttlMs`, `cacheScope`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheHint {
    /// How long the result may be considered fresh after it arrived.
    /// Absent or negative reads as zero: stale at once.
    pub ttl: Duration,
    /// Who may keep it.
    pub scope: CacheScope,
    /// Whether the server sent `ttlMs` at all (servers of earlier
    /// revisions do not, and rely on list-changed notifications).
    pub given: bool,
}

impl CacheHint {
    /// Reads the hints of a result object; anything malformed reads as the
    /// defaults (stale at once, private).
    pub fn from_map(obj: &Map<String, Value>) -> Self {
        let ttl_ms = obj.get("ttlMs").and_then(Value::as_f64);
        let ttl = match ttl_ms {
            Some(ms) if ms.is_finite() && ms > 0.0 => {
                // Past a year is as good as forever for a session.
                Duration::from_millis(ms.min(365.0 * 24.0 * 3600.0 * 1000.0) as u64)
            }
            _ => Duration::ZERO,
        };
        let scope = match obj.get("cacheScope").and_then(Value::as_str) {
            Some("public") => CacheScope::Public,
            _ => CacheScope::Private,
        };
        Self {
            ttl,
            scope,
            given: ttl_ms.is_some(),
        }
    }
}

/// The parts of a `DiscoverResult` (`server/discover`) rho acts on.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscoverResult {
    /// The versions the server speaks, as sent.
    pub supported_versions: Vec<String>,
    /// Who the server says it is (`_meta` `io.modelcontextprotocol/serverInfo`,
    /// or a top-level `serverInfo` as some servers send it), when given.
    pub server_info: Option<Implementation>,
    /// The server's declared capabilities.
    pub capabilities: ServerCapabilities,
    /// Usage notes for the model, when sent.
    pub instructions: Option<String>,
    /// Its freshness hints.
    pub cache: CacheHint,
}

impl DiscoverResult {
    /// Reads a `server/discover` result. Without a `supportedVersions`
    /// list of strings it is not one (a legacy server that answers unknown
    /// methods with an empty result, say).
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "server/discover result")?;
        final_result(value, "server/discover")?;
        let Some(Value::Array(list)) = obj.get("supportedVersions") else {
            return Err(ShapeError(
                "server/discover result has no `supportedVersions` array".into(),
            ));
        };
        let supported_versions = list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let capabilities = match obj.get("capabilities") {
            Some(Value::Object(caps)) => ServerCapabilities::from_map(caps),
            Some(_) => {
                return Err(ShapeError(
                    "server/discover result `capabilities` is not an object".into(),
                ));
            }
            None => {
                return Err(ShapeError(
                    "server/discover result has no `capabilities`".into(),
                ));
            }
        };
        let info = obj
            .get("_meta")
            .and_then(|m| m.get(SERVER_INFO_META))
            .or_else(|| obj.get("serverInfo"));
        Ok(Self {
            supported_versions,
            // Identity is a SHOULD, and display-only: a malformed one is
            // dropped rather than failing the server.
            server_info: info.and_then(|i| Implementation::from_value(i).ok()),
            capabilities,
            instructions: optional_string(obj, "instructions"),
            cache: CacheHint::from_map(obj),
        })
    }

    /// The newest stateless version rho speaks that the server listed.
    pub fn modern_choice(&self) -> Option<&'static str> {
        newest_common(&MODERN_PROTOCOL_VERSIONS, &self.supported_versions)
    }

    /// The newest handshake version rho speaks that the server listed.
    pub fn legacy_choice(&self) -> Option<&'static str> {
        newest_common(&SUPPORTED_PROTOCOL_VERSIONS, &self.supported_versions)
    }
}

/// The `_meta` key of a result's server identity (2026-07-28).
pub const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// The `_meta` entries every request of the 2026-07-28 era carries:
/// the protocol version, the client capabilities this run answers, rho's
/// identity, and the log level when one is configured (the era has no
/// `logging/setLevel`).
#[derive(Debug, Serialize)]
pub(crate) struct ModernMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub(crate) protocol_version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub(crate) client_capabilities: &'a Value,
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    pub(crate) client_info: &'a Implementation,
    #[serde(
        rename = "io.modelcontextprotocol/logLevel",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) log_level: Option<&'a str>,
}

/// One tool parameter mirrored into an `Mcp-Param-{name}` HTTP header
/// (`x-mcp-header`, 2026-07-28).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeaderParam {
    /// The header's name after `Mcp-Param-`, as the server wrote it.
    pub name: String,
    /// The chain of `properties` keys from the schema root to the property.
    pub path: Vec<String>,
}

/// How deep a schema is walked for `x-mcp-header` annotations; deeper
/// nesting fails the tool rather than the stack.
const MAX_SCHEMA_DEPTH: usize = 64;

/// Keywords whose values are instance data, not schemas: an
/// `x-mcp-header` key inside them is data, not an annotation.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

impl Tool {
    /// The `x-mcp-header` annotations of the tool's `inputSchema`, in
    /// schema order, or why they make the tool invalid (the spec's
    /// constraints: a non-empty HTTP token, unique ignoring case, on a
    /// `string`, `integer` or `boolean` property reached from the root
    /// through `properties` alone).
    pub fn header_params(&self) -> Result<Vec<HeaderParam>, ShapeError> {
        let mut found = Vec::new();
        walk_schema(&self.input_schema, &mut Vec::new(), true, 0, &mut found)
            .map_err(|why| ShapeError(format!("tool `{}`: {why}", self.name)))?;
        for (i, param) in found.iter().enumerate() {
            if found[..i]
                .iter()
                .any(|p| p.name.eq_ignore_ascii_case(&param.name))
            {
                return Err(ShapeError(format!(
                    "tool `{}`: x-mcp-header `{}` is used twice (names compare ignoring case)",
                    self.name,
                    shown(&param.name)
                )));
            }
        }
        Ok(found)
    }
}

/// Walks a schema for `x-mcp-header`. `path` is the chain of `properties`
/// keys to `schema`; `reachable` whether only `properties` led here.
fn walk_schema(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    depth: usize,
    found: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "its inputSchema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    match schema {
        Value::Object(obj) => {
            if let Some(header) = obj.get("x-mcp-header") {
                // The root is not a property.
                if !reachable || path.is_empty() {
                    return Err(
                        "x-mcp-header is only allowed on a property reached from the schema root \
                         through `properties` alone (not through items, $ref, $defs, anyOf, ...)"
                            .into(),
                    );
                }
                let Value::String(name) = header else {
                    return Err("an x-mcp-header value is not a string".into());
                };
                if name.is_empty() {
                    return Err("an x-mcp-header value is empty".into());
                }
                if !name.bytes().all(is_tchar) {
                    return Err(format!(
                        "x-mcp-header `{}` is not an HTTP header token (letters, digits and !#$%&'*+-.^_`|~ only)",
                        shown(name)
                    ));
                }
                match obj.get("type").and_then(Value::as_str) {
                    Some("string" | "integer" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header `{name}` is on a property of type {}; only string, integer and boolean properties may be mirrored",
                            other.map_or("(none)".to_owned(), |t| format!("`{}`", shown(t)))
                        ));
                    }
                }
                found.push(HeaderParam {
                    name: name.clone(),
                    path: path.clone(),
                });
            }
            for (key, value) in obj {
                if DATA_KEYWORDS.contains(&key.as_str()) || key == "x-mcp-header" {
                    continue;
                }
                if key == "properties"
                    && let Value::Object(props) = value
                {
                    for (name, sub) in props {
                        path.push(name.clone());
                        let walked = walk_schema(sub, path, reachable, depth + 1, found);
                        path.pop();
                        walked?;
                    }
                    continue;
                }
                // Any other keyword leaves the statically reachable chain;
                // maps of named subschemas ($defs, patternProperties, ...)
                // are walked like any object.
                walk_schema(value, path, false, depth + 1, found)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for item in items {
                walk_schema(item, path, false, depth + 1, found)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A server-chosen name for a message: control characters escaped,
/// bounded.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(64)
        .flat_map(char::escape_default)
        .collect();
    if text.chars().nth(64).is_some() {
        out.push('…');
    }
    out
}

fn object<'a>(value: &'a Value, what: &str) -> Result<&'a Map<String, Value>, ShapeError> {
    value
        .as_object()
        .ok_or_else(|| ShapeError(format!("{what} is not an object")))
}

fn string_field(obj: &Map<String, Value>, key: &str, what: &str) -> Result<String, ShapeError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ShapeError(format!("{what} `{key}` is not a string"))),
        None => Err(ShapeError(format!("{what} has no `{key}`"))),
    }
}

fn optional_string(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_title_falls_back_to_annotation_title() {
        let tool = Tool::from_value(&json!({
            "name": "echo",
            "inputSchema": {"type": "object"},
            "annotations": {"title": "Echo", "readOnlyHint": true}
        }))
        .expect("valid tool");
        assert_eq!(tool.title.as_deref(), Some("Echo"));
        assert_eq!(tool.annotations.read_only, Some(true));
        assert_eq!(tool.annotations.destructive, None);
    }

    #[test]
    fn tool_meta_is_kept_as_sent_and_a_non_object_is_ignored() {
        let meta = json!({
            "ui": {"resourceUri": "ui://pdf-viewer/mcp-app.html", "visibility": ["app"]},
            "ui/resourceUri": "ui://pdf-viewer/mcp-app.html",
            "vendor/x": [1, {"y": null}]
        });
        let tool = Tool::from_value(&json!({
            "name": "save_pdf",
            "inputSchema": {"type": "object"},
            "_meta": meta
        }))
        .expect("valid tool");
        assert_eq!(tool.meta.as_deref(), Some(&meta));
        assert_eq!(
            serde_json::to_value(&tool).expect("json")["_meta"],
            meta,
            "serialized under its wire name"
        );
        for ignored in [json!(null), json!("x"), json!([1])] {
            let tool = Tool::from_value(&json!({
                "name": "t",
                "inputSchema": {"type": "object"},
                "_meta": ignored
            }))
            .expect("still a valid tool");
            assert_eq!(tool.meta, None, "{ignored}");
        }
    }
    #[test]
    fn malformed_tool_is_rejected_alone() {
        let page = ToolsPage::from_value(&json!({
            "tools": [
                {"name": "ok", "inputSchema": {"type": "object"}},
                {"inputSchema": {"type": "object"}},
                {"name": "bad", "inputSchema": 3}
            ],
            "nextCursor": "2"
        }))
        .expect("page");
        assert_eq!(page.tools.len(), 1);
        assert_eq!(page.rejected.len(), 2);
        assert_eq!(page.next_cursor.as_deref(), Some("2"));
    }

    #[test]
    fn call_result_text_joins_text_blocks_only() {
        let result = CallToolResult::from_value(json!({
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "text", "text": "b"}
            ],
            "isError": true
        }))
        .expect("result");
        assert_eq!(result.text(), "a\nb");
        assert!(result.is_error);
    }

    #[test]
    fn call_result_as_sent_keeps_every_member() {
        let sent = json!({
            "content": [{"type": "text", "text": "a", "_meta": {"k": 1}}],
            "structuredContent": {"n": 2},
            "isError": "yes",
            "_meta": {"trace": "x"},
            "laterMember": [1]
        });
        let result = CallToolResult::from_value(sent.clone()).expect("result");
        assert!(!result.is_error, "a non-boolean isError is not an error");
        assert_eq!(result.as_sent(), sent);
        let only_structured =
            CallToolResult::from_value(json!({"structuredContent": {"n": 2}})).expect("result");
        assert_eq!(
            only_structured.as_sent(),
            json!({"content": [], "structuredContent": {"n": 2}})
        );
        let null_structured =
            CallToolResult::from_value(json!({"content": [], "structuredContent": null}))
                .expect("result");
        assert_eq!(null_structured.structured_content, None);
        assert_eq!(
            null_structured.as_sent(),
            json!({"content": [], "structuredContent": null})
        );
    }

    fn header_tool(properties: Value) -> Tool {
        Tool::from_value(
            &json!({"name": "t", "inputSchema": {"type": "object", "properties": properties}}),
        )
        .expect("tool")
    }

    #[test]
    fn valid_x_mcp_headers_are_read_with_their_paths() {
        let tool = header_tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "deep": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            "query": {"type": "string"}
        }));
        let params = tool.header_params().expect("valid");
        assert_eq!(
            params,
            [
                HeaderParam {
                    name: "Region".into(),
                    path: vec!["region".into()]
                },
                HeaderParam {
                    name: "N".into(),
                    path: vec!["deep".into(), "n".into()]
                },
            ]
        );
    }

    #[test]
    fn each_invalid_x_mcp_header_makes_the_tool_invalid_with_a_reason() {
        let cases = [
            (
                json!({"v": {"type": "string", "x-mcp-header": ""}}),
                "empty",
            ),
            (
                json!({"v": {"type": "object", "x-mcp-header": "D"}}),
                "type `object`",
            ),
            (
                json!({"v": {"type": "array", "x-mcp-header": "I"}}),
                "type `array`",
            ),
            (
                json!({"v": {"type": "null", "x-mcp-header": "N"}}),
                "type `null`",
            ),
            (
                json!({"v": {"type": "number", "x-mcp-header": "F"}}),
                "type `number`",
            ),
            (json!({"v": {"x-mcp-header": "T"}}), "(none)"),
            (
                json!({"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}}),
                "twice",
            ),
            (
                json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}),
                "twice",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
                "token",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}),
                "token",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
                "token",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
                "token",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": 7}}),
                "not a string",
            ),
            (
                json!({"v": {"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}}),
                "through `properties` alone",
            ),
            (
                json!({"v": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}),
                "through `properties` alone",
            ),
        ];
        for (properties, why) in cases {
            let error = header_tool(properties.clone())
                .header_params()
                .expect_err("invalid");
            assert!(error.0.contains(why), "{properties}: {error}");
            assert!(error.0.starts_with("tool `t`"), "{error}");
        }
        // On the schema root, or in $defs, is not on a property either.
        let root = Tool::from_value(
            &json!({"name": "t", "inputSchema": {"type": "string", "x-mcp-header": "R"}}),
        )
        .expect("tool");
        let error = root.header_params().expect_err("on the root");
        assert!(error.0.starts_with("tool `t`"), "{error}");
        let defs = Tool::from_value(&json!({"name": "t", "inputSchema": {"type": "object",
            "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}}}))
        .expect("tool");
        let error = defs.header_params().expect_err("in $defs");
        assert!(error.0.starts_with("tool `t`"), "{error}");
        // Instance data that happens to hold the key is not an annotation.
        let data = header_tool(json!({"v": {"type": "object", "default": {"x-mcp-header": "X"}}}));
        assert_eq!(data.header_params(), Ok(vec![]));
    }

    #[test]
    fn result_type_absent_is_complete_and_unknown_is_invalid() {
        assert_eq!(ResultType::of(&json!({})), Ok(ResultType::Complete));
        assert_eq!(
            ResultType::of(&json!({"resultType": "complete"})),
            Ok(ResultType::Complete)
        );
        assert_eq!(
            ResultType::of(&json!({"resultType": "input_required"})),
            Ok(ResultType::InputRequired)
        );
        // The tasks extension's handle, declared on every 2026 request.
        assert_eq!(
            ResultType::of(&json!({"resultType": "task"})),
            Ok(ResultType::Task)
        );
        for bad in [json!("deferred"), json!(1)] {
            let error = ResultType::of(&json!({ "resultType": bad })).expect_err("invalid");
            assert!(error.0.contains("resultType"), "{bad}: {error}");
        }
        // A task handle answers only a tool call.
        let err = ToolsPage::from_value(&json!({"resultType": "task", "tools": []}))
            .expect_err("a task is no listing");
        assert!(err.0.contains("task handle"), "{err}");
    }

    #[test]
    fn a_listing_or_discovery_that_is_not_final_is_refused() {
        let err = ToolsPage::from_value(&json!({"resultType": "input_required", "tools": []}))
            .expect_err("interim");
        assert!(
            err.0.contains("tools/list") && err.0.contains("input"),
            "{err}"
        );
        let err = DiscoverResult::from_value(
            &json!({"resultType": "soon", "supportedVersions": [], "capabilities": {}}),
        )
        .expect_err("not final");
        assert!(err.0.contains("resultType"), "{err}");
        let page = ToolsPage::from_value(&json!({"resultType": "complete", "tools": []}))
            .expect("a final page");
        assert!(page.tools.is_empty(), "{page:?}");
    }

    #[test]
    fn cache_hints_default_to_stale_and_private() {
        let hint = |v: Value| CacheHint::from_map(v.as_object().expect("object"));
        assert_eq!(hint(json!({})), CacheHint::default());
        assert_eq!(hint(json!({"ttlMs": -5})).ttl, Duration::ZERO);
        let fresh = hint(json!({"ttlMs": 1500, "cacheScope": "public"}));
        assert_eq!(fresh.ttl, Duration::from_millis(1500));
        assert_eq!(fresh.scope, CacheScope::Public);
        assert!(fresh.given);
    }

    #[test]
    fn the_2026_error_codes_read_in_words() {
        let error = |code, data| ErrorObject {
            code,
            message: "m".into(),
            data,
        };
        let header = describe_error(&error(-32020, None));
        assert!(header.contains("headers do not match"), "{header}");
        let missing = describe_error(&error(
            -32021,
            Some(json!({"requiredCapabilities": {"elicitation": {}}})),
        ));
        assert!(missing.contains("(elicitation)"), "{missing}");
        assert!(missing.contains("where a person can answer"), "{missing}");
        let version = describe_error(&error(
            -32022,
            Some(json!({"supported": ["2027-01-01"], "requested": "2026-07-28"})),
        ));
        assert!(version.contains("it lists 2027-01-01"), "{version}");
        assert!(version.contains("rho speaks 2026-07-28"), "{version}");
        assert_eq!(describe_error(&error(-1, None)), "m (code -1)");
    }

    #[test]
    fn initialize_result_requires_server_info() {
        let err = InitializeResult::from_value(&json!({
            "protocolVersion": "2025-11-25", "capabilities": {}
        }))
        .expect_err("no serverInfo");
        assert!(err.0.contains("serverInfo"));
    }
}
