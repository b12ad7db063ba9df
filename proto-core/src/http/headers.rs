//! The request headers of the 2026-07-28 Streamable HTTP transport, as
//! data: `Mcp-Method` and `Mcp-Name` mirrored from the body, the
//! `Mcp-Param-{name}` headers a tool's `x-mcp-header` annotations ask for,
//! and the value encoding they share (`basic/transports/streamable-http`,
//! "Request Metadata").
//!
//! A value that is not plain visible ASCII without surrounding
//! whitespace — or that looks like the encoding's own sentinel — travels
//! as `=?base64?{base64 of its UTF-8}?=`, so no server-chosen string can
//! start a new header line. A parameter whose value is absent or `null`
//! gets no header.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;

use crate::wire::protocol::{HeaderParam, Tool};

/// The start of an encoded header value.
const SENTINEL_START: &str = "=?base64?";
/// The end of an encoded header value.
const SENTINEL_END: &str = "?=";

/// A header value as the spec's encoding sends it: plain when it is
/// visible ASCII and spaces with no space at either end and does not look
/// encoded, else Base64 of its UTF-8 between the sentinels. (Tabs are
/// encoded too: legal in a header, but some intermediaries fold them.)
pub fn encode_value(value: &str) -> Cow<'_, str> {
    let visible = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END);
    if visible && !padded && !looks_encoded {
        Cow::Borrowed(value)
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        Cow::Owned(format!("{SENTINEL_START}{encoded}{SENTINEL_END}"))
    }
}

/// The string a parameter's value is mirrored as, or `None` for no header:
/// strings as they are, integers in decimal, booleans as `true`/`false`;
/// `null`, absent, objects and arrays get none. (A number with a fraction
/// is mirrored as JSON writes it: the server compares numerically.)
fn param_text(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Number(n) => Some(Cow::Owned(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        })),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

/// The value at a chain of `properties` keys in a call's arguments.
fn at_path<'a>(arguments: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(arguments, |v, key| v.get(key))
}

/// The outgoing message, as much of it as the headers mirror.
#[derive(Deserialize)]
struct Outgoing<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    params: Option<OutgoingParams<'a>>,
}

#[derive(Deserialize)]
struct OutgoingParams<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uri: Option<Cow<'a, str>>,
    #[serde(rename = "taskId", borrow, default)]
    task_id: Option<Cow<'a, str>>,
    /// Left unparsed: only a call of a tool with `x-mcp-header`
    /// parameters reads it, and most calls' tools have none.
    #[serde(borrow, default)]
    arguments: Option<&'a serde_json::value::RawValue>,
}

/// The headers a POST of `body` carries in the 2026-07-28 era, in order:
/// `Mcp-Method` for every request and notification, `Mcp-Name` for
/// `tools/call` and `prompts/get` (`params.name`), `resources/read`
/// (`params.uri`) and the tasks extension's `tasks/get`, `tasks/update`
/// and `tasks/cancel` (`params.taskId`), and for `tools/call` one `Mcp-Param-{name}` per
/// annotated parameter of the called tool (found in `tools`) that has a
/// value. A body that cannot be read gets none (the session wrote it, so
/// that does not happen).
pub fn request_headers(body: &[u8], tools: &[Tool]) -> Vec<(String, String)> {
    let Ok(message) = serde_json::from_slice::<Outgoing<'_>>(body) else {
        return Vec::new();
    };
    let Some(method) = message.method else {
        return Vec::new();
    };
    let mut headers = vec![("Mcp-Method".to_owned(), encode_value(&method).into_owned())];
    let params = message.params;
    let name = match method.as_ref() {
        "tools/call" | "prompts/get" => params.as_ref().and_then(|p| p.name.as_deref()),
        "resources/read" => params.as_ref().and_then(|p| p.uri.as_deref()),
        // The tasks extension routes every request about a task by its id.
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            params.as_ref().and_then(|p| p.task_id.as_deref())
        }
        _ => None,
    };
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_owned(), encode_value(name).into_owned()));
    }
    if method == "tools/call" {
        let tool = name.and_then(|n| tools.iter().find(|t| t.name == n));
        // Tools with invalid annotations never reach the list; a listed
        // tool's annotations are valid.
        let wanted = tool
            .map(|tool| tool.header_params().unwrap_or_default())
            .unwrap_or_default();
        let arguments = params
            .as_ref()
            .and_then(|p| p.arguments)
            .filter(|_| !wanted.is_empty())
            .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
        if let Some(arguments) = &arguments {
            for HeaderParam { name, path } in wanted {
                if let Some(text) = at_path(arguments, &path).and_then(param_text) {
                    headers.push((
                        format!("Mcp-Param-{name}"),
                        encode_value(&text).into_owned(),
                    ));
                }
            }
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_follow_the_spec_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("us west 1"), "us west 1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode_value("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(encode_value(""), "");
    }

    fn tool(schema: Value) -> Tool {
        Tool::from_value(&json!({"name": "t", "inputSchema": schema})).expect("tool")
    }

    #[test]
    fn a_call_mirrors_annotated_parameters_and_omits_nulls() {
        let tools = vec![tool(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
                "gone": {"type": "boolean", "x-mcp-header": "Gone"},
                "deep": {"type": "object", "properties": {
                    "zone": {"type": "string", "x-mcp-header": "Zone"}
                }},
                "query": {"type": "string"}
            }
        }))];
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "t",
            "arguments": {"region": "eu", "n": 42, "flag": false, "gone": null,
                          "deep": {"zone": "b"}, "query": "SELECT"}
        }});
        let headers = request_headers(body.to_string().as_bytes(), &tools);
        let got: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "t"),
                ("Mcp-Param-Region", "eu"),
                ("Mcp-Param-N", "42"),
                ("Mcp-Param-Flag", "false"),
                ("Mcp-Param-Zone", "b"),
            ]
        );
    }

    #[test]
    fn names_and_uris_are_encoded_like_values() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                          "params": {"uri": "file:///a b/ü"}});
        let headers = request_headers(body.to_string().as_bytes(), &[]);
        assert_eq!(headers[1].0, "Mcp-Name");
        assert!(headers[1].1.starts_with("=?base64?"), "{headers:?}");
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        assert_eq!(
            request_headers(list.to_string().as_bytes(), &[]),
            [("Mcp-Method".to_owned(), "tools/list".to_owned())]
        );
    }
}
