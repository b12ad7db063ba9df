//! JSON-RPC 2.0 messages: ids, requests, notifications, responses and
//! error objects, parsed from bytes with errors that say what was wrong.
//!
//! Client and server request ids are different types on purpose. The
//! client numbers its own requests ([`ClientRequestId`]); a server numbers
//! its requests independently, often from 0 too, and may use strings
//! ([`ServerRequestId`]). Keeping them apart means a reply can never be
//! matched against the wrong table.

use std::fmt;

use serde::Serialize;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A request id as it appears on the wire: a number or a string.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The id of a request this client sent. Always a non-negative number on
/// the wire. Opaque: only the session numbers its requests; a wire id is
/// read back with [`ClientRequestId::from_wire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientRequestId(pub(crate) u64);

impl ClientRequestId {
    /// Reads a wire id back into a client id; `None` for any id this client
    /// could not have sent (strings, negative numbers).
    pub fn from_wire(id: &RequestId) -> Option<Self> {
        match id {
            RequestId::Number(n) => u64::try_from(*n).ok().map(Self),
            RequestId::String(_) => None,
        }
    }
}

impl fmt::Display for ClientRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The id of a request a server sent to this client, kept exactly as sent
/// so the response echoes it. Opaque: only the session reads it off the
/// wire.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerRequestId(pub(crate) RequestId);

impl fmt::Display for ServerRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information, when the sender gave any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl fmt::Display for ErrorObject {
    /// The message, then the code once: a message the TypeScript SDK
    /// wrote as `MCP error <code>: <text>` is shown as `<text> (code
    /// <code>)`, not with its code twice.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = format!("MCP error {}: ", self.code);
        let message = self.message.strip_prefix(&prefix).unwrap_or(&self.message);
        write!(f, "{message} (code {})", self.code)
    }
}

/// Standard JSON-RPC error codes.
pub mod code {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// One JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// A request, which expects a response.
    Request {
        /// The sender's id for it.
        id: RequestId,
        /// The method name.
        method: String,
        /// The parameters, when present.
        params: Option<Value>,
    },
    /// A notification, which gets no response.
    Notification {
        /// The method name.
        method: String,
        /// The parameters, when present.
        params: Option<Value>,
    },
    /// A successful response.
    Response {
        /// The id of the request answered.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error response. The id is absent when the peer could not read the
    /// request's id.
    Error {
        /// The id of the request answered, when known.
        id: Option<RequestId>,
        /// What went wrong.
        error: ErrorObject,
    },
}

/// What one frame of input held: a single message or a batch (JSON-RPC
/// batches were allowed by 2025-03-26 and removed in 2025-06-18; a client
/// still reads them, since answering with a parse error helps nobody).
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// One message.
    Single(Message),
    /// A batch: each element parsed on its own.
    Batch(Vec<Result<Message, ParseError>>),
}

/// Why a frame is not a JSON-RPC message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParseError {
    /// Not JSON at all.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not a JSON-RPC 2.0 message.
    #[error("not a JSON-RPC 2.0 message: {0}")]
    Invalid(String),
}

impl Incoming {
    /// Parses one frame (a stdio line or an SSE `data` field).
    ///
    /// A message's own members are read straight into their places rather
    /// than into a map first; everything the parser reads is still built
    /// as JSON (members this client does not know included), so a frame
    /// parses here exactly when it is JSON, and a parsed frame is UTF-8.
    pub fn parse(bytes: &[u8]) -> Result<Self, ParseError> {
        let frame: Frame = serde_json::from_str(frame_text(bytes)?)
            .map_err(|e| ParseError::NotJson(e.to_string()))?;
        match frame {
            Frame::Object(members) => members.classify().map(Incoming::Single),
            Frame::Array(items) if items.is_empty() => {
                Err(ParseError::Invalid("empty batch".into()))
            }
            Frame::Array(items) => Ok(Incoming::Batch(
                items.into_iter().map(Message::from_value).collect(),
            )),
            Frame::Other => Err(ParseError::Invalid("not an object".into())),
        }
    }
}

/// A frame's text. JSON is UTF-8: checked here once for the whole frame,
/// the parser reads it as text and does not check again string by string
/// (the set of frames that parse is the same either way).
pub fn frame_text(bytes: &[u8]) -> Result<&str, ParseError> {
    std::str::from_utf8(bytes)
        .map_err(|e| ParseError::NotJson(format!("invalid UTF-8 at byte {}", e.valid_up_to())))
}

impl Message {
    /// Classifies a parsed JSON value as a JSON-RPC message.
    pub fn from_value(value: Value) -> Result<Self, ParseError> {
        let Value::Object(mut obj) = value else {
            return Err(ParseError::Invalid("not an object".into()));
        };
        Members {
            jsonrpc: obj.remove("jsonrpc").map(|v| Version::of(&v)),
            id: obj.remove("id"),
            method: obj.remove("method"),
            params: obj.remove("params"),
            result: obj.remove("result"),
            error: obj.remove("error"),
        }
        .classify()
    }
}

/// A whole frame as the parser first reads it.
// Boxing the members would cost the allocation this shape saves; a frame
// lives on the stack for one parse.
#[allow(clippy::large_enum_variant)]
enum Frame {
    /// An object: a message, perhaps.
    Object(Members),
    /// An array: a batch.
    Array(Vec<Value>),
    /// Any other JSON value.
    Other,
}

/// The members of an object that make it a JSON-RPC message; any other
/// member is read (and so checked as JSON) and dropped. A member named
/// twice keeps its last value, as a JSON object does.
#[derive(Default)]
struct Members {
    jsonrpc: Option<Version>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

impl Members {
    /// What the members make: the same checks in the same order whether
    /// they came from the parser or from a [`Value`].
    fn classify(self) -> Result<Message, ParseError> {
        match self.jsonrpc {
            Some(Version::Two) => {}
            Some(Version::Other) => {
                return Err(ParseError::Invalid("`jsonrpc` is not \"2.0\"".into()));
            }
            None => return Err(ParseError::Invalid("no `jsonrpc` member".into())),
        }
        let id = match self.id {
            None => None,
            Some(id) => Some(parse_id(id)?),
        };
        if let Some(method) = self.method {
            let Value::String(method) = method else {
                return Err(ParseError::Invalid("`method` is not a string".into()));
            };
            let params = match self.params {
                None => None,
                Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p),
                Some(Value::Null) => None,
                Some(_) => {
                    return Err(ParseError::Invalid(format!(
                        "`params` of `{method}` is neither an object nor an array"
                    )));
                }
            };
            return Ok(match id {
                Some(Some(id)) => Message::Request { id, method, params },
                Some(None) => {
                    return Err(ParseError::Invalid(format!(
                        "request `{method}` has a null id"
                    )));
                }
                None => Message::Notification { method, params },
            });
        }
        match (self.result, self.error) {
            (Some(_), Some(_)) => Err(ParseError::Invalid(
                "response has both `result` and `error`".into(),
            )),
            (Some(result), None) => match id {
                Some(Some(id)) => Ok(Message::Response { id, result }),
                _ => Err(ParseError::Invalid("response without an id".into())),
            },
            (None, Some(error)) => Ok(Message::Error {
                id: id.flatten(),
                error: parse_error_object(error)?,
            }),
            (None, None) => Err(ParseError::Invalid(
                "neither a request, a notification nor a response".into(),
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Frame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FrameVisitor)
    }
}

struct FrameVisitor;

impl<'de> Visitor<'de> for FrameVisitor {
    type Value = Frame;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Frame, E> {
        Ok(Frame::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Frame, E> {
        Ok(Frame::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Frame, E> {
        Ok(Frame::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Frame, E> {
        Ok(Frame::Other)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Frame, E> {
        Ok(Frame::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Frame, E> {
        Ok(Frame::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Frame, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Frame::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Frame, A::Error> {
        let mut members = Members::default();
        while let Some(key) = map.next_key::<Key>()? {
            if let Key::Jsonrpc = key {
                members.jsonrpc = Some(map.next_value()?);
                continue;
            }
            let value: Value = map.next_value()?;
            let slot = match key {
                Key::Jsonrpc => continue,
                Key::Id => &mut members.id,
                Key::Method => &mut members.method,
                Key::Params => &mut members.params,
                Key::Result => &mut members.result,
                Key::Error => &mut members.error,
                Key::Other => continue,
            };
            *slot = Some(value);
        }
        Ok(Frame::Object(members))
    }
}

/// What the `jsonrpc` member held: `"2.0"`, or anything else (read as
/// JSON all the same, but not kept).
enum Version {
    Two,
    Other,
}

impl Version {
    fn of(value: &Value) -> Self {
        match value {
            Value::String(v) if v == "2.0" => Version::Two,
            _ => Version::Other,
        }
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(VersionVisitor)
    }
}

/// Reads the `jsonrpc` member without copying a string.
struct VersionVisitor;

impl<'de> Visitor<'de> for VersionVisitor {
    type Value = Version;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
        Ok(if v == "2.0" {
            Version::Two
        } else {
            Version::Other
        })
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Version, E> {
        Ok(Version::Other)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Version, E> {
        Ok(Version::Other)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Version, E> {
        Ok(Version::Other)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Version, E> {
        Ok(Version::Other)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Version, E> {
        Ok(Version::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Version, A::Error> {
        // Read as JSON (and so checked), then dropped.
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Version::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Version, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(Version::Other)
    }
}

/// A member name, read without copying it.
enum Key {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(match key {
            "jsonrpc" => Key::Jsonrpc,
            "id" => Key::Id,
            "method" => Key::Method,
            "params" => Key::Params,
            "result" => Key::Result,
            "error" => Key::Error,
            _ => Key::Other,
        })
    }
}

/// `Some(id)` for a usable id, `None` for an explicit `null`.
fn parse_id(id: Value) -> Result<Option<RequestId>, ParseError> {
    match id {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(RequestId::String(s))),
        Value::Number(n) => match n.as_i64() {
            Some(n) => Ok(Some(RequestId::Number(n))),
            None => Err(ParseError::Invalid(format!(
                "id {n} is not an integer JSON-RPC can carry"
            ))),
        },
        _ => Err(ParseError::Invalid(
            "id is neither a number nor a string".into(),
        )),
    }
}

pub(crate) fn parse_error_object(error: Value) -> Result<ErrorObject, ParseError> {
    let Value::Object(mut obj) = error else {
        return Err(ParseError::Invalid("`error` is not an object".into()));
    };
    let code = obj
        .get("code")
        .and_then(Value::as_i64)
        .ok_or_else(|| ParseError::Invalid("`error.code` is not an integer".into()))?;
    let message = match obj.remove("message") {
        Some(Value::String(m)) => m,
        _ => {
            return Err(ParseError::Invalid(
                "`error.message` is not a string".into(),
            ));
        }
    };
    Ok(ErrorObject {
        code,
        message,
        data: obj.remove("data"),
    })
}

/// Serializes an outgoing request.
pub fn request_bytes(id: ClientRequestId, method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut out = Vec::new();
    write_request(&mut out, id, method, params);
    out
}

/// Appends an outgoing request to `out`, its params serialized straight
/// from their typed shape (no `Value` built first).
pub fn write_request<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: ClientRequestId,
    method: &str,
    params: Option<&P>,
) {
    #[derive(Serialize)]
    struct Out<'a, P: ?Sized> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }
    write(
        out,
        &Out {
            jsonrpc: "2.0",
            id: id.0,
            method,
            params,
        },
    );
}

/// Serializes an outgoing notification.
pub fn notification_bytes(method: &str, params: Option<&Value>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Out<'a> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Value>,
    }
    to_vec(&Out {
        jsonrpc: "2.0",
        method,
        params,
    })
}

/// Serializes a successful response to a server's request.
pub fn response_bytes(id: &ServerRequestId, result: &Value) -> Vec<u8> {
    #[derive(Serialize)]
    struct Out<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: &'a Value,
    }
    to_vec(&Out {
        jsonrpc: "2.0",
        id: &id.0,
        result,
    })
}

/// Serializes an error response to a server's request.
pub fn error_bytes(id: &ServerRequestId, error: &ErrorObject) -> Vec<u8> {
    #[derive(Serialize)]
    struct Out<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        error: &'a ErrorObject,
    }
    to_vec(&Out {
        jsonrpc: "2.0",
        id: &id.0,
        error,
    })
}

fn to_vec<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out, value);
    out
}

fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    // Serializing these shapes cannot fail: every map key is a string and
    // `Value` holds no non-finite floats. Should one ever fail, what it
    // wrote is taken back and an empty object stands in.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"{}");
    }
}

/// An empty params object, for requests that take none.
pub fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// What can still be read from a frame that is not a JSON-RPC message (or
/// only the start of one, when a line was over the size cap): enough to
/// tell which request it answered, so that request fails at once instead
/// of waiting out its budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peek {
    /// The top-level `id`, when it is a plain integer or a string without
    /// escapes.
    pub id: Option<RequestId>,
    /// A top-level `result` or `error` member was seen: it is a response.
    pub response: bool,
    /// A top-level `method` member was seen: a request or notification.
    pub method: bool,
}

impl Peek {
    /// Scans the top-level members of a JSON object without building it:
    /// no recursion (nesting is only counted), numbers and escapes are
    /// skipped, not decoded, and bytes need not be UTF-8. Stops at the
    /// first thing that is not JSON-like, keeping what it found so far.
    pub fn scan(bytes: &[u8]) -> Self {
        let mut peek = Peek::default();
        let mut at = skip_ws(bytes, 0);
        if bytes.get(at) != Some(&b'{') {
            return peek;
        }
        at += 1;
        loop {
            at = skip_ws(bytes, at);
            if bytes.get(at) != Some(&b'"') {
                return peek;
            }
            let Some(key_end) = string_end(bytes, at) else {
                return peek;
            };
            let key = &bytes[at + 1..key_end - 1];
            at = skip_ws(bytes, key_end);
            if bytes.get(at) != Some(&b':') {
                return peek;
            }
            at = skip_ws(bytes, at + 1);
            match key {
                b"result" | b"error" => peek.response = true,
                b"method" => peek.method = true,
                _ => {}
            }
            let Some(value_end) = value_end(bytes, at) else {
                return peek;
            };
            if key == b"id" {
                peek.id = plain_id(&bytes[at..value_end]);
            }
            at = skip_ws(bytes, value_end);
            match bytes.get(at) {
                Some(b',') => at += 1,
                _ => return peek,
            }
        }
    }
}

fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        at += 1;
    }
    at
}

/// The index just past the string starting at `at` (a `"`).
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index just past the value starting at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while let Some(&b) = bytes.get(i) {
                match b {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let len = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
                .unwrap_or(bytes.len() - at);
            (len > 0).then_some(at + len)
        }
    }
}

/// An id written plainly: an integer JSON-RPC can carry, or a string
/// without escapes.
fn plain_id(value: &[u8]) -> Option<RequestId> {
    if let Some(inner) = value
        .strip_prefix(b"\"")
        .and_then(|v| v.strip_suffix(b"\""))
    {
        if inner.contains(&b'\\') {
            return None;
        }
        return std::str::from_utf8(inner)
            .ok()
            .map(|s| RequestId::String(s.to_owned()));
    }
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value)
        .ok()?
        .parse::<i64>()
        .ok()
        .map(RequestId::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_shows_its_code_once_even_when_the_message_repeats_it() {
        let error = |message: &str| ErrorObject {
            code: -32602,
            message: message.into(),
            data: None,
        };
        assert_eq!(
            error("MCP error -32602: Resource x not found").to_string(),
            "Resource x not found (code -32602)"
        );
        assert_eq!(error("bad params").to_string(), "bad params (code -32602)");
        assert_eq!(
            error("MCP error -1: other code").to_string(),
            "MCP error -1: other code (code -32602)",
            "only the error's own code is taken off"
        );
    }
    use serde_json::json;

    fn single(bytes: &[u8]) -> Message {
        match Incoming::parse(bytes).expect("parses") {
            Incoming::Single(m) => m,
            other => panic!("expected one message, got {other:?}"),
        }
    }

    #[test]
    fn classifies_every_message_kind() {
        assert_eq!(
            single(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#),
            Message::Request {
                id: RequestId::Number(0),
                method: "ping".into(),
                params: None
            }
        );
        assert_eq!(
            single(br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"a":1}}"#),
            Message::Notification {
                method: "notifications/x".into(),
                params: Some(json!({"a": 1}))
            }
        );
        assert_eq!(
            single(br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#),
            Message::Response {
                id: RequestId::String("s-1".into()),
                result: json!({})
            }
        );
        assert_eq!(
            single(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#),
            Message::Error {
                id: None,
                error: ErrorObject {
                    code: -32700,
                    message: "bad".into(),
                    data: None
                }
            }
        );
    }

    #[test]
    fn rejects_what_is_not_json_rpc_with_a_reason() {
        let cases: [(&[u8], &str); 7] = [
            (b"hello", "not JSON"),
            (br#"{"id":1,"result":{}}"#, "jsonrpc"),
            (br#"{"jsonrpc":"1.0","id":1,"result":{}}"#, "jsonrpc"),
            (br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#, "integer"),
            (br#"{"jsonrpc":"2.0","result":{}}"#, "without an id"),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#,
                "both",
            ),
            (br#"{"jsonrpc":"2.0","method":"x","params":3}"#, "params"),
        ];
        for (input, needle) in cases {
            let err = Incoming::parse(input).expect_err("must fail");
            assert!(
                err.to_string().contains(needle),
                "{:?}: {err}",
                String::from_utf8_lossy(input)
            );
        }
    }

    /// The reading of a frame through a whole `Value` first, which
    /// `Incoming::parse` must agree with.
    fn via_value(bytes: &[u8]) -> Result<Incoming, ParseError> {
        let value: Value = serde_json::from_str(frame_text(bytes)?)
            .map_err(|e| ParseError::NotJson(e.to_string()))?;
        match value {
            Value::Array(items) if items.is_empty() => {
                Err(ParseError::Invalid("empty batch".into()))
            }
            Value::Array(items) => Ok(Incoming::Batch(
                items.into_iter().map(Message::from_value).collect(),
            )),
            other => Message::from_value(other).map(Incoming::Single),
        }
    }

    #[test]
    fn members_read_straight_agree_with_a_value_first() {
        let cases: [&[u8]; 17] = [
            br#"{"jsonrpc":"2.0","id":1,"result":{},"id":2}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{},"result":null,"x":[{"y":1}]}"#,
            br#"{"\u006a\u0073onrpc":"2.0","\u0069d":"a\nb","result":[1]}"#,
            br#"{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":2,"id":1,"result":{}}"#,
            br#"{"jsonrpc":{"v":"2.0"},"id":1,"result":{}}"#,
            br#"{"jsonrpc":["2.0"],"id":1,"result":{}}"#,
            br#"{"jsonrpc":"2\u002e0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":7}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#,
            br#"{"jsonrpc":"2.0","id":3,"error":{"code":"x","message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}} x"#,
            br#""just a string""#,
            b"null",
            b"[]",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"note\":\"\xff\"}",
        ];
        for case in cases {
            assert_eq!(
                Incoming::parse(case),
                via_value(case),
                "{}",
                String::from_utf8_lossy(case)
            );
        }
        assert!(
            matches!(
                Incoming::parse(cases[16]),
                Err(ParseError::NotJson(e)) if e.contains("UTF-8")
            ),
            "a member rho does not read is still checked: a frame that parses is UTF-8"
        );
        let bad_version = b"{\"jsonrpc\":[\"\xff\"],\"id\":1,\"result\":{}}";
        assert_eq!(Incoming::parse(bad_version), via_value(bad_version));
        assert!(matches!(
            Incoming::parse(bad_version),
            Err(ParseError::NotJson(_))
        ));
    }

    #[test]
    fn batches_parse_element_by_element() {
        let Incoming::Batch(items) =
            Incoming::parse(br#"[{"jsonrpc":"2.0","method":"a"}, 3]"#).expect("batch")
        else {
            panic!("not a batch");
        };
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(
            matches!(&items[0], Ok(Message::Notification { method, .. }) if method == "a"),
            "{:?}",
            items[0]
        );
        assert!(
            matches!(items[1], Err(ParseError::Invalid(_))),
            "{:?}",
            items[1]
        );
    }

    #[test]
    fn client_ids_only_come_back_from_non_negative_numbers() {
        assert_eq!(
            ClientRequestId::from_wire(&RequestId::Number(7)),
            Some(ClientRequestId(7))
        );
        assert_eq!(ClientRequestId::from_wire(&RequestId::Number(-1)), None);
        assert_eq!(
            ClientRequestId::from_wire(&RequestId::String("7".into())),
            None
        );
    }

    #[test]
    fn serialized_messages_round_trip() {
        let params = json!({"name": "echo", "arguments": {"x": 1.0000000000000002}});
        let bytes = request_bytes(ClientRequestId(3), "tools/call", Some(&params));
        assert_eq!(
            single(&bytes),
            Message::Request {
                id: RequestId::Number(3),
                method: "tools/call".into(),
                params: Some(params)
            }
        );
        let id = ServerRequestId(RequestId::String("abc".into()));
        let bytes = error_bytes(
            &id,
            &ErrorObject {
                code: code::METHOD_NOT_FOUND,
                message: "nope".into(),
                data: None,
            },
        );
        assert!(
            matches!(single(&bytes), Message::Error { id: Some(RequestId::String(s)), .. } if s == "abc")
        );
    }

    #[test]
    fn peek_reads_the_id_of_answers_serde_cannot_read() {
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}1{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        // Whether serde refuses the text as JSON (`true`) or reads JSON that
        // is not a JSON-RPC message (`false`).
        let cases: Vec<(Vec<u8>, &str, bool)> = vec![
            (deep.into_bytes(), "nesting past the parser limit", true),
            (
                br#"{"jsonrpc":"2.0","id":7,"result":{"n":1e400}}"#.to_vec(),
                "1e400",
                true,
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"\xff\xfe\"}}".to_vec(),
                "not UTF-8",
                true,
            ),
            (
                br#"{"jsonrpc":"2.0","result":{"t":"\ud800"},"id":7}"#.to_vec(),
                "a lone surrogate, id last",
                true,
            ),
            (
                br#"{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"x"}}"#
                    .to_vec(),
                "both result and error",
                false,
            ),
            (
                br#"{"jsonrpc":"2.0","id":7,"result":{"text":"aaaa"#.to_vec(),
                "cut off by the size cap",
                true,
            ),
        ];
        for (bytes, what, not_json) in cases {
            match Incoming::parse(&bytes) {
                Err(ParseError::NotJson(_)) if not_json => {}
                Err(ParseError::Invalid(_)) if !not_json => {}
                other => {
                    panic!("{what}: expected it refused as not JSON: {not_json}, got {other:?}")
                }
            }
            let peek = Peek::scan(&bytes);
            assert_eq!(peek.id, Some(RequestId::Number(7)), "{what}");
            assert!(peek.response && !peek.method, "{what}: {peek:?}");
        }
    }

    #[test]
    fn peek_reads_no_id_it_cannot_trust() {
        for bytes in [
            &br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":{"n":1},"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":true,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#,
            br#"{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}"#,
            br#"{"jsonrpc":"2.0","result":{"id":3}}"#,
        ] {
            let peek = Peek::scan(bytes);
            assert_eq!(peek.id, None, "{}", String::from_utf8_lossy(bytes));
            assert!(peek.response);
        }
        assert_eq!(
            Peek::scan(br#"{"id":"req-1","method":"ping"}"#),
            Peek {
                id: Some(RequestId::String("req-1".into())),
                response: false,
                method: true
            }
        );
        assert_eq!(Peek::scan(b"Welcome to the server!"), Peek::default());
        assert_eq!(Peek::scan(b""), Peek::default());
    }
}
