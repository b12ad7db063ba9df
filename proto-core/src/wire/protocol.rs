//! MCP message shapes the client reads and writes, named as the
//! specification names them (`schema/2025-11-25/schema.ts`).
//!
//! Parsing is lenient where the protocol lets servers vary (unknown fields
//! are ignored, optional fields may be absent) and strict where a missing
//! field would make the message meaningless (a tool without a `name`).
//! Every parse failure says which field was wrong, so a
//! [`crate::session::PeerError`] can name it.

use serde::Serialize;
use serde_json::{Map, Value};

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
    /// `resources` declared.
    pub resources: bool,
    /// `completions` declared.
    pub completions: bool,
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
            resources: caps.contains_key("resources"),
            completions: caps.contains_key("completions"),
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
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema the `structuredContent` of every result must satisfy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub annotations: ToolAnnotations,
}

impl Tool {
    /// Reads one entry of a `tools/list` result.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "tool")?;
        let name = string_field(obj, "name", "tool")?;
        let input_schema = match obj.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.clone(),
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
            Some(schema @ Value::Object(_)) => Some(schema.clone()),
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
        Ok(Self {
            description: optional_string(obj, "description"),
            name,
            title,
            input_schema,
            output_schema,
            annotations,
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
}

impl ToolsPage {
    /// Reads a `tools/list` result. A malformed entry is rejected alone; a
    /// result without a `tools` array is an error.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = object(value, "tools/list result")?;
        let Some(Value::Array(entries)) = obj.get("tools") else {
            return Err(ShapeError("tools/list result has no `tools` array".into()));
        };
        let mut page = ToolsPage {
            next_cursor: optional_string(obj, "nextCursor"),
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
}

impl CallToolResult {
    /// Reads a `tools/call` result.
    pub fn from_value(value: Value) -> Result<Self, ShapeError> {
        let Value::Object(mut obj) = value else {
            return Err(ShapeError("tools/call result is not an object".into()));
        };
        let content = match obj.remove("content") {
            Some(Value::Array(blocks)) => blocks,
            // Older servers that only return structured content.
            None if obj.contains_key("structuredContent") => Vec::new(),
            _ => {
                return Err(ShapeError(
                    "tools/call result has no `content` array".into(),
                ));
            }
        };
        Ok(Self {
            content,
            structured_content: obj.remove("structuredContent").filter(|v| !v.is_null()),
            is_error: obj.get("isError").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    /// The text of every `text` block, joined by newlines: the plain reading
    /// of a result for a terminal.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if block.get("type").and_then(Value::as_str) == Some("text") {
                if let Some(text) = block.get("text").and_then(Value::as_str) {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(text);
                }
            }
        }
        out
    }
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
    fn initialize_result_requires_server_info() {
        let err = InitializeResult::from_value(&json!({
            "protocolVersion": "2025-11-25", "capabilities": {}
        }))
        .expect_err("no serverInfo");
        assert!(err.0.contains("serverInfo"));
    }
}
