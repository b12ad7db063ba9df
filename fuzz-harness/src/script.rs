//! What a scripted server can say, as `arbitrary` inputs: templates that
//! are valid MCP most of the time and wrong in chosen ways the rest, with
//! ids drawn from what the client actually sent. Shared by the `session`
//! and `http_session` targets.

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::Arbitrary;
use serde_json::{Map, Number, Value, json};

use crate::encode::{Encode, tag};
use rho_proto_core::features::subscriptions::SUBSCRIPTION_ID;
use rho_proto_core::session::CallId;

/// Strings a fuzzer would take long to find: tool names rho must encode,
/// protocol words, JSON and line-breaking characters, non-ASCII.
const TEXTS: [&str; 16] = [
    "",
    "a",
    "echo",
    "get-env",
    "add",
    "x y",
    "\u{e9}",
    "\u{1F600}",
    "\n",
    "\r\n",
    "\"",
    "2025-11-25",
    "mcp__a__b",
    "_rho_61",
    "{}",
    "\u{2028}",
];

/// A string: one of a fixed table of interesting ones, or arbitrary bytes
/// read as lossy UTF-8.
#[derive(Arbitrary, Clone, PartialEq, Eq)]
pub enum Text {
    /// `TEXTS[n % TEXTS.len()]`.
    Pick(u8),
    /// These bytes, lossily decoded.
    Bytes(Vec<u8>),
}

impl std::fmt::Debug for Text {
    /// Shows the string, so transcripts read as text.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Text::Pick(n) => write!(f, "Pick({n}: {:?})", self.text()),
            Text::Bytes(_) => write!(f, "Bytes({:?})", self.text()),
        }
    }
}

impl Text {
    /// The string.
    pub fn text(&self) -> String {
        match self {
            Text::Pick(n) => TEXTS[usize::from(*n) % TEXTS.len()].to_owned(),
            Text::Bytes(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        }
    }
}

/// A JSON value, at most two levels deep.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Json {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Number(i64),
    /// `n / 8` as a float.
    Float(i32),
    /// A string.
    Text(Text),
    /// An array of leaves.
    Array(Vec<Leaf>),
    /// An object of leaves (later duplicate keys win).
    Object(Vec<(Text, Leaf)>),
}

/// A JSON value inside a [`Json`] array or object.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Leaf {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Number(i64),
    /// A string.
    Text(Text),
    /// `[]`.
    Array,
    /// `{}`.
    Object,
}

impl Json {
    /// The value.
    pub fn value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => json!(n),
            Json::Float(n) => {
                Number::from_f64(f64::from(*n) / 8.0).map_or(Value::Null, Value::Number)
            }
            Json::Text(t) => Value::String(t.text()),
            Json::Array(items) => Value::Array(items.iter().map(Leaf::value).collect()),
            Json::Object(members) => Value::Object(object(members)),
        }
    }
}

impl Leaf {
    /// The value.
    pub fn value(&self) -> Value {
        match self {
            Leaf::Null => Value::Null,
            Leaf::Bool(b) => Value::Bool(*b),
            Leaf::Number(n) => json!(n),
            Leaf::Text(t) => Value::String(t.text()),
            Leaf::Array => json!([]),
            Leaf::Object => json!({}),
        }
    }
}

fn object(members: &[(Text, Leaf)]) -> Map<String, Value> {
    members.iter().map(|(k, v)| (k.text(), v.value())).collect()
}

/// The id a server's reply carries.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The latest request of the method the template answers (the latest
    /// unfinished call for call results and progress), else the latest
    /// request; 0 before any.
    Latest,
    /// The `n % count`-th request the client sent.
    Sent(u8),
    /// This number.
    Number(i64),
    /// This string.
    Text(Text),
}

/// The id of a request the server sends: few, so they repeat.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum ServerId {
    /// This number.
    Number(i8),
    /// `"s-{n % 8}"`.
    Text(u8),
}

impl ServerId {
    /// The id on the wire.
    pub fn value(&self) -> Value {
        match self {
            ServerId::Number(n) => json!(n),
            ServerId::Text(n) => json!(format!("s-{}", n % 8)),
        }
    }
}

/// Server capabilities in an `initialize` result.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// `tools`, with this `listChanged`.
    pub tools: Option<bool>,
    /// `logging`.
    pub logging: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `resources`.
    pub resources: bool,
    /// `completions`.
    pub completions: bool,
    /// `resources.subscribe` (with `resources`).
    pub resources_subscribe: bool,
}

impl Capabilities {
    /// The `capabilities` object.
    pub fn value(&self) -> Value {
        let mut caps = Map::new();
        if let Some(list_changed) = self.tools {
            caps.insert("tools".into(), json!({"listChanged": list_changed}));
        }
        for (declared, name) in [
            (self.logging, "logging"),
            (self.prompts, "prompts"),
            (self.resources, "resources"),
            (self.completions, "completions"),
        ] {
            if declared {
                caps.insert(name.into(), json!({}));
            }
        }
        if self.resources && self.resources_subscribe {
            caps.insert("resources".into(), json!({"subscribe": true}));
        }
        Value::Object(caps)
    }
}

/// One tool of a `tools/list` page.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct ToolTemplate {
    /// Its name.
    pub name: Text,
    /// `SCHEMAS[n % len]` as its `outputSchema`.
    pub output_schema: Option<u8>,
    /// An `inputSchema` that is not an object, so the entry is rejected.
    pub malformed: bool,
}

/// Output schemas: valid, trivial, invalid, unresolvable, with a pattern.
fn schema(n: u8) -> Value {
    match n % 5 {
        0 => json!({"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}),
        1 => json!({"type": "object"}),
        2 => json!({"type": 3}),
        3 => json!({"$ref": "#/definitions/missing"}),
        _ => json!({"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}}}),
    }
}

/// A `tools/call` result.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct CallResultTemplate {
    /// `content`: 0 one text block, 1 empty, 2 absent, 3 not an array;
    /// 4 one text block with `resultType: "input_required"`, 5 with a
    /// `resultType` rho does not know; 6 a 2026 task handle
    /// (`resultType: "task"`, task [`TASK_ID`]), 7 a 2025
    /// `CreateTaskResult` (`{"task": ...}`).
    pub content: u8,
    /// The text block's text.
    pub text: Text,
    /// `structuredContent`.
    pub structured: Option<Json>,
    /// `isError`.
    pub is_error: bool,
}

/// An `elicitation/create` request's params.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct FormTemplate {
    /// `mode`: 0 absent, 1 `form`, 2 `url`, 3 not a string.
    pub mode: u8,
    /// Whether `message` is present.
    pub message: bool,
    /// Whether `requestedSchema.type` is `object` (else absent).
    pub object_type: bool,
    /// The properties, named `f0`, `f1`, ...
    pub fields: Vec<FieldTemplate>,
    /// `required`: property indices (mod count; `missing` without any).
    pub required: Vec<u8>,
}

/// One property of an elicitation schema.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum FieldTemplate {
    /// A string, maybe with a default.
    Text {
        /// Has `default`.
        default: bool,
    },
    /// A number or integer.
    Number {
        /// `integer` rather than `number`.
        integer: bool,
        /// `default`, in eighths.
        default: Option<i16>,
    },
    /// A boolean.
    Confirm {
        /// `default`.
        default: Option<bool>,
    },
    /// A choice among `a`, `b`, `c`.
    Choice {
        /// `oneOf`/`anyOf` with titles rather than `enum`.
        titled: bool,
        /// An array (multi-select).
        multi: bool,
        /// `default`: `a`, `b`, `c` or the unknown `z`.
        default: Option<u8>,
    },
    /// Any JSON as the property schema.
    Other(Json),
}

/// A `sampling/createMessage` request's params.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct SamplingTemplate {
    /// `messages`.
    pub messages: Vec<SamplingMessage>,
    /// `systemPrompt`.
    pub system_prompt: Option<Text>,
    /// `maxTokens`.
    pub max_tokens: Option<i32>,
    /// `includeContext: "thisServer"`, which rho does not honour.
    pub include_context: bool,
}

/// One message of a sampling request.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum SamplingMessage {
    /// A user text message.
    User(Text),
    /// An assistant text message.
    Assistant(Text),
    /// A user image.
    Image,
    /// A role that does not exist.
    BadRole,
    /// No `content`.
    NoContent,
    /// Any JSON.
    Other(Json),
}

/// Which catalog list a page or a change is about.
fn catalog_method(kind: u8) -> &'static str {
    match kind % 3 {
        0 => "prompts/list",
        1 => "resources/list",
        _ => "resources/templates/list",
    }
}

/// One entry of a prompt, resource or template page.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct CatalogEntry {
    /// Its name (a prompt's name, a resource's and template's `name`).
    pub name: Text,
    /// A prompt with a required argument `city`; a resource or template
    /// with a `mimeType`.
    pub detailed: bool,
    /// Missing what the entry must have, so it is rejected.
    pub malformed: bool,
}

/// A `prompts/get`, `resources/read` or `completion/complete` method, by
/// number.
fn feature_method(kind: u8) -> &'static str {
    match kind % 3 {
        0 => "prompts/get",
        1 => "resources/read",
        _ => "completion/complete",
    }
}

/// One entry of an `InputRequiredResult`'s `inputRequests`.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum InputTemplate {
    /// `elicitation/create`.
    Elicitation(FormTemplate),
    /// `sampling/createMessage`.
    Sampling(SamplingTemplate),
    /// `roots/list`.
    Roots,
    /// Any other method, or a request without one.
    Other(Text),
    /// Any JSON as the entry.
    Raw(Json),
}

/// One message a server sends.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub enum ServerMessage {
    /// An `initialize` result.
    Initialize {
        /// Its id.
        id: Reply,
        /// Protocol version: the four rho speaks, then `2023-01-01`, `""`
        /// and a number.
        version: u8,
        /// Declared capabilities.
        capabilities: Capabilities,
        /// Has `instructions`.
        instructions: bool,
    },
    /// A `tools/list` result.
    ToolsPage {
        /// Its id.
        id: Reply,
        /// The tools.
        tools: Vec<ToolTemplate>,
        /// `nextCursor`: `c{n % 4}`.
        cursor: Option<u8>,
    },
    /// A `tools/call` result.
    CallResult {
        /// Its id.
        id: Reply,
        /// The result.
        result: CallResultTemplate,
    },
    /// Any result.
    Result {
        /// Its id.
        id: Reply,
        /// The result.
        result: Json,
    },
    /// An error response; no id is `"id": null`.
    Error {
        /// Its id.
        id: Option<Reply>,
        /// `error.code`.
        code: i32,
        /// `error.message`.
        message: Text,
    },
    /// A `ping` request.
    Ping(ServerId),
    /// A `roots/list` request.
    RootsList(ServerId),
    /// An `elicitation/create` request.
    Elicitation {
        /// Its id.
        id: ServerId,
        /// Its params.
        form: FormTemplate,
    },
    /// A `sampling/createMessage` request.
    Sampling {
        /// Its id.
        id: ServerId,
        /// Its params.
        request: SamplingTemplate,
    },
    /// Any other request.
    OtherRequest {
        /// Its id.
        id: ServerId,
        /// Its method.
        method: Text,
        /// Its params.
        params: Json,
    },
    /// `notifications/progress`.
    Progress {
        /// `progressToken`.
        token: Reply,
        /// `progress`.
        progress: u16,
        /// `total`.
        total: Option<u16>,
        /// `message`.
        message: Option<Text>,
    },
    /// `notifications/cancelled` for one of the server's requests.
    Cancelled(ServerId),
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/message`.
    Log {
        /// The level: the eight of the spec, then an unknown one.
        level: u8,
        /// `data`.
        data: Json,
    },
    /// Any other notification.
    OtherNotification {
        /// Its method.
        method: Text,
        /// Its params.
        params: Json,
    },
    /// Any JSON at all, as a message.
    Raw(Json),
    /// A `server/discover` result.
    Discover {
        /// Its id.
        id: Reply,
        /// `supportedVersions`: 0 the stateless one, 1 it and 2025-11-25,
        /// 2 only 2025-06-18, 3 only `2030-01-01`, 4 empty, 5 not a list.
        versions: u8,
        /// Declared capabilities.
        capabilities: Capabilities,
        /// `ttlMs`.
        ttl_ms: Option<u16>,
    },
    /// An `UnsupportedProtocolVersionError` (-32022).
    UnsupportedVersion {
        /// Its id.
        id: Reply,
        /// `data.supported`, chosen as for [`ServerMessage::Discover`].
        versions: u8,
    },
    /// A page of `prompts/list` (kind 0), `resources/list` (1) or
    /// `resources/templates/list` (2).
    CatalogPage {
        /// Its id.
        id: Reply,
        /// Which list.
        kind: u8,
        /// The entries.
        entries: Vec<CatalogEntry>,
        /// `nextCursor`: `c{n % 4}`.
        cursor: Option<u8>,
        /// `ttlMs` (a 2026-era freshness).
        ttl_ms: Option<u16>,
        /// `cacheScope: "public"` (else absent: private).
        public: bool,
    },
    /// A `prompts/get` (kind 0), `resources/read` (1) or
    /// `completion/complete` (2) result.
    FeatureResult {
        /// Its id.
        id: Reply,
        /// Which method it answers.
        kind: u8,
        /// The text it carries.
        text: Text,
        /// Without the field the result must have.
        malformed: bool,
    },
    /// A multi round-trip `InputRequiredResult` (2026 era) answering a
    /// `tools/call` (method 0), `prompts/get` (1), `resources/read` (2)
    /// or `completion/complete` (3).
    InputRequired {
        /// Its id.
        id: Reply,
        /// Which method it answers.
        method: u8,
        /// `inputRequests`, keyed `k{index}` (absent when empty).
        requests: Vec<InputTemplate>,
        /// `requestState`.
        state: Option<Text>,
    },
    /// `notifications/prompts/list_changed` or, with `resources`,
    /// `notifications/resources/list_changed`.
    CatalogListChanged {
        /// The resources one.
        resources: bool,
    },
    /// A task's state (both eras' tasks): the answer to `tasks/get`
    /// (`id`), or with `notify` a `notifications/tasks/status`. Status 0
    /// working, 1 input required (a form, key `k{status}`), 2 completed, 3
    /// failed, 4 cancelled, 5 one rho does not know.
    TaskState {
        /// Its id.
        id: Reply,
        /// The status.
        status: u8,
        /// `statusMessage`.
        message: Option<Text>,
        /// `pollIntervalMs` and `pollInterval`.
        interval: Option<u16>,
        /// Sent as a notification.
        notify: bool,
    },
    /// A notification on a `subscriptions/listen` stream (2026 era),
    /// tagged with the id `listen` names: event 0 the acknowledgement
    /// (agreeing to everything), 1 tools, 2 prompts, 3 resources changed.
    Subscription {
        /// The subscription id it carries.
        listen: Reply,
        /// What it says.
        event: u8,
    },
    /// `notifications/resources/updated` for `uri`, tagged with the
    /// subscription id `listen` names (2026 era) or untagged (2025).
    ResourceUpdated {
        /// The resource.
        uri: Text,
        /// The subscription id it carries, if any.
        listen: Option<Reply>,
    },
    /// A resource stream's acknowledgement (2026 era): the subscription id
    /// `listen` names, agreeing to `uris` (`resourceSubscriptions`).
    ResourceAcknowledged {
        /// The subscription id it carries.
        listen: Reply,
        /// The URIs agreed to.
        uris: Vec<Text>,
    },
}

/// What the scripted server knows: the client's requests so far, to
/// answer them by id.
#[derive(Debug, Default)]
pub(crate) struct Peer {
    /// Every request the client sent: id and method.
    pub(crate) sent: Vec<(u64, String)>,
    /// The tool call or feature request each of those requests was for
    /// (a call keeps its [`CallId`] when its request goes again under a
    /// new id), by request id.
    pub(crate) call_of: BTreeMap<u64, CallId>,
    /// Calls the host started, in order.
    pub(crate) calls: Vec<CallId>,
    /// Prompt, resource and completion requests the host made, in order,
    /// with their method.
    pub(crate) features: Vec<(CallId, &'static str)>,
    /// Calls and feature requests that completed.
    pub(crate) completed: BTreeSet<CallId>,
}

impl Peer {
    /// The latest unfinished tool call, or feature request of `method`.
    fn latest_unfinished(&self, method: &str) -> Option<CallId> {
        let open = |c: &CallId| !self.completed.contains(c);
        if method == "tools/call" {
            return self.calls.iter().rev().copied().find(open);
        }
        self.features
            .iter()
            .rev()
            .filter(|(_, m)| *m == method)
            .map(|(c, _)| *c)
            .find(open)
    }

    /// The id `reply` names, for a reply to `method`.
    pub(crate) fn reply_id(&self, reply: &Reply, method: &str) -> Value {
        match reply {
            Reply::Latest => {
                // A call's latest request: its retries go under new ids.
                if let Some(call) = self.latest_unfinished(method) {
                    let latest = self
                        .call_of
                        .iter()
                        .rev()
                        .find(|(_, c)| **c == call)
                        .map_or(call.wire_id(), |(&id, _)| id);
                    return json!(latest);
                }
                let latest = self.sent.iter().rev();
                let id = latest
                    .clone()
                    .find(|(_, m)| m == method)
                    .or_else(|| self.sent.last())
                    .map_or(0, |(id, _)| *id);
                json!(id)
            }
            Reply::Sent(n) => {
                let id = match self.sent.len() {
                    0 => 0,
                    len => self.sent[usize::from(*n) % len].0,
                };
                json!(id)
            }
            Reply::Number(n) => json!(n),
            Reply::Text(t) => json!(t.text()),
        }
    }

    /// A progress token `reply` names: `Latest` is the latest unfinished
    /// call's own id (the token every request of it carries).
    pub(crate) fn token(&self, reply: &Reply) -> Value {
        match (reply, self.latest_unfinished("tools/call")) {
            (Reply::Latest, Some(call)) => json!(call.wire_id()),
            _ => self.reply_id(reply, "tools/call"),
        }
    }

    /// The message as JSON.
    pub(crate) fn message(&self, message: &ServerMessage) -> Value {
        match message {
            ServerMessage::Initialize {
                id,
                version,
                capabilities,
                instructions,
            } => {
                let version = match version % 7 {
                    0 => json!("2025-11-25"),
                    1 => json!("2025-06-18"),
                    2 => json!("2025-03-26"),
                    3 => json!("2024-11-05"),
                    4 => json!("2023-01-01"),
                    5 => json!(""),
                    _ => json!(2025),
                };
                let mut result = json!({
                    "protocolVersion": version,
                    "capabilities": capabilities.value(),
                    "serverInfo": {"name": "fuzz", "version": "1.0"},
                });
                if *instructions {
                    result["instructions"] = json!("use wisely");
                }
                response(self.reply_id(id, "initialize"), result)
            }
            ServerMessage::ToolsPage { id, tools, cursor } => {
                let tools: Vec<Value> = tools.iter().map(tool).collect();
                let mut result = json!({ "tools": tools });
                if let Some(c) = cursor {
                    result["nextCursor"] = json!(format!("c{}", c % 4));
                }
                response(self.reply_id(id, "tools/list"), result)
            }
            ServerMessage::CallResult { id, result } => {
                let mut value = json!({});
                match result.content % 8 {
                    0 => value["content"] = json!([{"type": "text", "text": result.text.text()}]),
                    1 => value["content"] = json!([]),
                    2 => {}
                    3 => value["content"] = json!("not an array"),
                    6 => {
                        value = task_state(0, None, Some(result.text.text().len() as u16));
                        value["resultType"] = json!("task");
                    }
                    7 => value = json!({"task": task_state(0, None, None)}),
                    n => {
                        value["content"] = json!([{"type": "text", "text": result.text.text()}]);
                        value["resultType"] =
                            json!(if n == 4 { "input_required" } else { "later" });
                    }
                }
                if let Some(structured) = &result.structured {
                    value["structuredContent"] = structured.value();
                }
                if result.is_error {
                    value["isError"] = json!(true);
                }
                response(self.reply_id(id, "tools/call"), value)
            }
            ServerMessage::Result { id, result } => response(self.reply_id(id, ""), result.value()),
            ServerMessage::Error { id, code, message } => {
                let id = id.as_ref().map_or(Value::Null, |id| self.reply_id(id, ""));
                json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": code, "message": message.text()},
                })
            }
            ServerMessage::Ping(id) => request(id, "ping", None),
            ServerMessage::RootsList(id) => request(id, "roots/list", None),
            ServerMessage::Elicitation { id, form } => {
                request(id, "elicitation/create", Some(elicitation(form)))
            }
            ServerMessage::Sampling { id, request: r } => {
                request(id, "sampling/createMessage", Some(sampling(r)))
            }
            ServerMessage::OtherRequest { id, method, params } => {
                request(id, &method.text(), Some(params.value()))
            }
            ServerMessage::Progress {
                token,
                progress,
                total,
                message,
            } => {
                let mut params = json!({
                    "progressToken": self.token(token),
                    "progress": progress,
                });
                if let Some(total) = total {
                    params["total"] = json!(total);
                }
                if let Some(message) = message {
                    params["message"] = json!(message.text());
                }
                notification("notifications/progress", Some(params))
            }
            ServerMessage::Cancelled(id) => notification(
                "notifications/cancelled",
                Some(json!({"requestId": id.value(), "reason": "fuzz"})),
            ),
            ServerMessage::ToolsListChanged => {
                notification("notifications/tools/list_changed", None)
            }
            ServerMessage::Log { level, data } => {
                const LEVELS: [&str; 9] = [
                    "debug",
                    "info",
                    "notice",
                    "warning",
                    "error",
                    "critical",
                    "alert",
                    "emergency",
                    "loud",
                ];
                let level = LEVELS[usize::from(*level) % LEVELS.len()];
                notification(
                    "notifications/message",
                    Some(json!({"level": level, "logger": "fuzz", "data": data.value()})),
                )
            }
            ServerMessage::OtherNotification { method, params } => {
                notification(&method.text(), Some(params.value()))
            }
            ServerMessage::Raw(value) => value.value(),
            ServerMessage::Discover {
                id,
                versions,
                capabilities,
                ttl_ms,
            } => {
                let mut result = json!({
                    "resultType": "complete",
                    "supportedVersions": versions_json(*versions),
                    "capabilities": capabilities.value(),
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fuzz", "version": "1.0"}},
                });
                if let Some(ttl) = ttl_ms {
                    result["ttlMs"] = json!(ttl);
                }
                response(self.reply_id(id, "server/discover"), result)
            }
            ServerMessage::UnsupportedVersion { id, versions } => json!({
                "jsonrpc": "2.0",
                "id": self.reply_id(id, ""),
                "error": {
                    "code": -32022,
                    "message": "Unsupported protocol version",
                    "data": {"supported": versions_json(*versions), "requested": "2026-07-28"},
                },
            }),
            ServerMessage::CatalogPage {
                id,
                kind,
                entries,
                cursor,
                ttl_ms,
                public,
            } => {
                let field = match kind % 3 {
                    0 => "prompts",
                    1 => "resources",
                    _ => "resourceTemplates",
                };
                let entries: Vec<Value> = entries.iter().map(|e| catalog_entry(*kind, e)).collect();
                let mut result = json!({ field: entries });
                if let Some(c) = cursor {
                    result["nextCursor"] = json!(format!("c{}", c % 4));
                }
                if let Some(ttl) = ttl_ms {
                    result["ttlMs"] = json!(ttl);
                }
                if *public {
                    result["cacheScope"] = json!("public");
                }
                response(self.reply_id(id, catalog_method(*kind)), result)
            }
            ServerMessage::FeatureResult {
                id,
                kind,
                text,
                malformed,
            } => {
                let text = text.text();
                let result = match (kind % 3, malformed) {
                    (_, true) => json!({}),
                    (0, _) => json!({
                        "description": "a prompt",
                        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                    }),
                    (1, _) => json!({
                        "contents": [
                            {"uri": "file:///work/a.txt", "mimeType": "text/plain", "text": text},
                            {"uri": "file:///work/b.bin", "blob": "AAEC"},
                        ],
                    }),
                    _ => {
                        json!({"completion": {"values": [text, "b"], "total": 2, "hasMore": false}})
                    }
                };
                response(self.reply_id(id, feature_method(*kind)), result)
            }
            ServerMessage::InputRequired {
                id,
                method,
                requests,
                state,
            } => {
                let method = match method % 4 {
                    0 => "tools/call",
                    n => feature_method(n - 1),
                };
                let mut result = json!({"resultType": "input_required"});
                if !requests.is_empty() {
                    let asks: Map<String, Value> = requests
                        .iter()
                        .enumerate()
                        .map(|(n, r)| (format!("k{n}"), input_request(r)))
                        .collect();
                    result["inputRequests"] = Value::Object(asks);
                }
                if let Some(state) = state {
                    result["requestState"] = json!(state.text());
                }
                response(self.reply_id(id, method), result)
            }
            ServerMessage::CatalogListChanged { resources } => notification(
                if *resources {
                    "notifications/resources/list_changed"
                } else {
                    "notifications/prompts/list_changed"
                },
                None,
            ),
            ServerMessage::TaskState {
                id,
                status,
                message,
                interval,
                notify,
            } => {
                let task = task_state(*status, message.as_ref().map(Text::text), *interval);
                if *notify {
                    notification("notifications/tasks/status", Some(task))
                } else {
                    response(self.reply_id(id, "tasks/get"), task)
                }
            }
            ServerMessage::Subscription { listen, event } => {
                let id = self.reply_id(listen, "subscriptions/listen");
                let meta = json!({ SUBSCRIPTION_ID: id });
                match event % 4 {
                    0 => notification(
                        "notifications/subscriptions/acknowledged",
                        Some(json!({
                            "_meta": meta,
                            "notifications": {
                                "toolsListChanged": true,
                                "promptsListChanged": true,
                                "resourcesListChanged": true,
                            },
                        })),
                    ),
                    n => notification(
                        match n {
                            1 => "notifications/tools/list_changed",
                            2 => "notifications/prompts/list_changed",
                            _ => "notifications/resources/list_changed",
                        },
                        Some(json!({ "_meta": meta })),
                    ),
                }
            }
            ServerMessage::ResourceUpdated { uri, listen } => {
                let mut params = json!({ "uri": uri.text() });
                if let Some(listen) = listen {
                    let id = self.reply_id(listen, "subscriptions/listen");
                    params["_meta"] = json!({ SUBSCRIPTION_ID: id });
                }
                notification("notifications/resources/updated", Some(params))
            }
            ServerMessage::ResourceAcknowledged { listen, uris } => {
                let id = self.reply_id(listen, "subscriptions/listen");
                let uris: Vec<String> = uris.iter().map(Text::text).collect();
                notification(
                    "notifications/subscriptions/acknowledged",
                    Some(json!({
                        "_meta": { SUBSCRIPTION_ID: id },
                        "notifications": { "resourceSubscriptions": uris },
                    })),
                )
            }
        }
    }
}

/// The one task id the scripted server hands out.
pub const TASK_ID: &str = "fuzz-task";

/// A task in `status` (see [`ServerMessage::TaskState`]), with both eras'
/// interval keys and what a 2026 status inlines.
fn task_state(status: u8, message: Option<String>, interval: Option<u16>) -> Value {
    const STATUSES: [&str; 6] = [
        "working",
        "input_required",
        "completed",
        "failed",
        "cancelled",
        "paused",
    ];
    let status = STATUSES[usize::from(status) % STATUSES.len()];
    let mut task = json!({"taskId": TASK_ID, "status": status,
                          "createdAt": "2026-01-01T00:00:00Z",
                          "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000});
    if let Some(message) = message {
        task["statusMessage"] = json!(message);
    }
    if let Some(ms) = interval {
        task["pollIntervalMs"] = json!(ms);
        task["pollInterval"] = json!(ms);
    }
    match status {
        "input_required" => {
            task["inputRequests"] = json!({"k1": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}}}});
        }
        "completed" => task["result"] = json!({"content": [{"type": "text", "text": "done"}]}),
        "failed" => task["error"] = json!({"code": -32603, "message": "failed"}),
        _ => {}
    }
    task
}

/// One catalog entry of list `kind`, as [`ServerMessage::CatalogPage`]
/// numbers them.
fn catalog_entry(kind: u8, e: &CatalogEntry) -> Value {
    let name = e.name.text();
    match (kind % 3, e.malformed) {
        (0, true) => json!({"name": 7}),
        (0, false) if e.detailed => json!({
            "name": name,
            "description": "a prompt",
            "arguments": [{"name": "city", "required": true}, {"name": "unit"}],
        }),
        (0, false) => json!({ "name": name }),
        (1, true) => json!({ "name": name }),
        (1, false) => {
            let mut v = json!({"uri": format!("file:///work/{name}"), "name": name});
            if e.detailed {
                v["mimeType"] = json!("text/plain");
                v["size"] = json!(3);
            }
            v
        }
        (_, true) => json!({ "uriTemplate": 3 }),
        (_, false) => {
            let mut v = json!({"uriTemplate": "file:///work/{path}", "name": name});
            if e.detailed {
                v["mimeType"] = json!("text/plain");
            }
            v
        }
    }
}

/// One entry of `inputRequests`.
fn input_request(r: &InputTemplate) -> Value {
    match r {
        InputTemplate::Elicitation(form) => {
            json!({"method": "elicitation/create", "params": elicitation(form)})
        }
        InputTemplate::Sampling(request) => {
            json!({"method": "sampling/createMessage", "params": sampling(request)})
        }
        InputTemplate::Roots => json!({"method": "roots/list"}),
        InputTemplate::Other(method) => json!({"method": method.text(), "params": {}}),
        InputTemplate::Raw(json) => json.value(),
    }
}

/// A `supportedVersions` list, by number (see [`ServerMessage::Discover`]).
fn versions_json(n: u8) -> Value {
    match n % 6 {
        0 => json!(["2026-07-28"]),
        1 => json!(["2026-07-28", "2025-11-25"]),
        2 => json!(["2025-06-18"]),
        3 => json!(["2030-01-01"]),
        4 => json!([]),
        _ => json!("2026-07-28"),
    }
}

fn response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn request(id: &ServerId, method: &str, params: Option<Value>) -> Value {
    let mut value = json!({"jsonrpc": "2.0", "id": id.value(), "method": method});
    if let Some(params) = params {
        value["params"] = params;
    }
    value
}

fn notification(method: &str, params: Option<Value>) -> Value {
    let mut value = json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        value["params"] = params;
    }
    value
}

fn tool(t: &ToolTemplate) -> Value {
    if t.malformed {
        return json!({"name": t.name.text(), "inputSchema": 3});
    }
    let mut value = json!({"name": t.name.text(), "inputSchema": {"type": "object"}});
    if let Some(n) = t.output_schema {
        value["outputSchema"] = schema(n);
    }
    value
}

fn elicitation(form: &FormTemplate) -> Value {
    let mut params = Map::new();
    match form.mode % 4 {
        0 => {}
        1 => drop(params.insert("mode".into(), json!("form"))),
        2 => {
            // A URL request: its URL picked by the field count (one rho
            // opens, an internationalized host, a scheme it refuses, none),
            // its id present with an object type.
            params.insert("mode".into(), json!("url"));
            let url = match form.fields.len() % 4 {
                0 => Some("https://auth.example.com/connect?e=1"),
                1 => Some("https://xn--pypal-4ve.com/login"),
                2 => Some("file:///etc/passwd"),
                _ => None,
            };
            if let Some(url) = url {
                params.insert("url".into(), json!(url));
            }
            if form.object_type {
                params.insert("elicitationId".into(), json!("e-1"));
            }
        }
        _ => drop(params.insert("mode".into(), json!(7))),
    }
    if form.message {
        params.insert("message".into(), json!("Please answer"));
    }
    let properties: Map<String, Value> = form
        .fields
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("f{i}"), field(f)))
        .collect();
    let required: Vec<String> = form
        .required
        .iter()
        .map(|&n| match form.fields.len() {
            0 => "missing".to_owned(),
            len => format!("f{}", usize::from(n) % len),
        })
        .collect();
    let mut schema = json!({"properties": properties});
    if form.object_type {
        schema["type"] = json!("object");
    }
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    params.insert("requestedSchema".into(), schema);
    Value::Object(params)
}

fn field(f: &FieldTemplate) -> Value {
    const CHOICES: [&str; 4] = ["a", "b", "c", "z"];
    match f {
        FieldTemplate::Text { default } => {
            let mut v = json!({"type": "string", "title": "Name", "description": "Who"});
            if *default {
                v["default"] = json!("dflt");
            }
            v
        }
        FieldTemplate::Number { integer, default } => {
            let kind = if *integer { "integer" } else { "number" };
            let mut v = json!({"type": kind, "minimum": 0});
            if let Some(d) = default {
                v["default"] =
                    Number::from_f64(f64::from(*d) / 8.0).map_or(Value::Null, Value::Number);
            }
            v
        }
        FieldTemplate::Confirm { default } => {
            let mut v = json!({"type": "boolean"});
            if let Some(d) = default {
                v["default"] = json!(d);
            }
            v
        }
        FieldTemplate::Choice {
            titled,
            multi,
            default,
        } => {
            let titles = json!([
                {"const": "a", "title": "A"},
                {"const": "b", "title": "B"},
                {"const": "c", "title": "C"},
            ]);
            let mut v = match (titled, multi) {
                (false, false) => json!({"type": "string", "enum": ["a", "b", "c"]}),
                (true, false) => json!({"type": "string", "oneOf": titles}),
                (false, true) => {
                    json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}})
                }
                (true, true) => json!({"type": "array", "items": {"anyOf": titles}}),
            };
            if let Some(d) = default {
                let choice = CHOICES[usize::from(*d) % CHOICES.len()];
                v["default"] = if *multi {
                    json!([choice])
                } else {
                    json!(choice)
                };
            }
            v
        }
        FieldTemplate::Other(json) => json.value(),
    }
}

fn sampling(r: &SamplingTemplate) -> Value {
    let messages: Vec<Value> = r
        .messages
        .iter()
        .map(|m| match m {
            SamplingMessage::User(t) => {
                json!({"role": "user", "content": {"type": "text", "text": t.text()}})
            }
            SamplingMessage::Assistant(t) => {
                json!({"role": "assistant", "content": {"type": "text", "text": t.text()}})
            }
            SamplingMessage::Image => json!({
                "role": "user",
                "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}
            }),
            SamplingMessage::BadRole => {
                json!({"role": "system", "content": {"type": "text", "text": "x"}})
            }
            SamplingMessage::NoContent => json!({"role": "user"}),
            SamplingMessage::Other(json) => json.value(),
        })
        .collect();
    let mut params = json!({ "messages": messages });
    if let Some(prompt) = &r.system_prompt {
        params["systemPrompt"] = json!(prompt.text());
    }
    if let Some(max) = r.max_tokens {
        params["maxTokens"] = json!(max);
    }
    if r.include_context {
        params["includeContext"] = json!("thisServer");
    }
    params
}

// ---------------------------------------------------------------------------
// Encoding, for hand-written seeds (see `encode`).
// ---------------------------------------------------------------------------

impl Encode for Text {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Text::Pick(n) => {
                tag(out, 0, 2);
                n.encode(out);
            }
            Text::Bytes(b) => {
                tag(out, 1, 2);
                b.encode(out);
            }
        }
    }
}

impl Encode for Json {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 7;
        match self {
            Json::Null => tag(out, 0, N),
            Json::Bool(b) => {
                tag(out, 1, N);
                b.encode(out);
            }
            Json::Number(n) => {
                tag(out, 2, N);
                n.encode(out);
            }
            Json::Float(n) => {
                tag(out, 3, N);
                n.encode(out);
            }
            Json::Text(t) => {
                tag(out, 4, N);
                t.encode(out);
            }
            Json::Array(items) => {
                tag(out, 5, N);
                items.encode(out);
            }
            Json::Object(members) => {
                tag(out, 6, N);
                members.encode(out);
            }
        }
    }
}

impl Encode for Leaf {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 6;
        match self {
            Leaf::Null => tag(out, 0, N),
            Leaf::Bool(b) => {
                tag(out, 1, N);
                b.encode(out);
            }
            Leaf::Number(n) => {
                tag(out, 2, N);
                n.encode(out);
            }
            Leaf::Text(t) => {
                tag(out, 3, N);
                t.encode(out);
            }
            Leaf::Array => tag(out, 4, N),
            Leaf::Object => tag(out, 5, N),
        }
    }
}

impl Encode for Reply {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 4;
        match self {
            Reply::Latest => tag(out, 0, N),
            Reply::Sent(n) => {
                tag(out, 1, N);
                n.encode(out);
            }
            Reply::Number(n) => {
                tag(out, 2, N);
                n.encode(out);
            }
            Reply::Text(t) => {
                tag(out, 3, N);
                t.encode(out);
            }
        }
    }
}

impl Encode for ServerId {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ServerId::Number(n) => {
                tag(out, 0, 2);
                n.encode(out);
            }
            ServerId::Text(n) => {
                tag(out, 1, 2);
                n.encode(out);
            }
        }
    }
}

impl Encode for Capabilities {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            tools,
            logging,
            prompts,
            resources,
            completions,
            resources_subscribe,
        } = self;
        tools.encode(out);
        logging.encode(out);
        prompts.encode(out);
        resources.encode(out);
        completions.encode(out);
        resources_subscribe.encode(out);
    }
}

impl Encode for ToolTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            name,
            output_schema,
            malformed,
        } = self;
        name.encode(out);
        output_schema.encode(out);
        malformed.encode(out);
    }
}

impl Encode for CallResultTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            content,
            text,
            structured,
            is_error,
        } = self;
        content.encode(out);
        text.encode(out);
        structured.encode(out);
        is_error.encode(out);
    }
}

impl Encode for FormTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            mode,
            message,
            object_type,
            fields,
            required,
        } = self;
        mode.encode(out);
        message.encode(out);
        object_type.encode(out);
        fields.encode(out);
        required.encode(out);
    }
}

impl Encode for FieldTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 5;
        match self {
            FieldTemplate::Text { default } => {
                tag(out, 0, N);
                default.encode(out);
            }
            FieldTemplate::Number { integer, default } => {
                tag(out, 1, N);
                integer.encode(out);
                default.encode(out);
            }
            FieldTemplate::Confirm { default } => {
                tag(out, 2, N);
                default.encode(out);
            }
            FieldTemplate::Choice {
                titled,
                multi,
                default,
            } => {
                tag(out, 3, N);
                titled.encode(out);
                multi.encode(out);
                default.encode(out);
            }
            FieldTemplate::Other(json) => {
                tag(out, 4, N);
                json.encode(out);
            }
        }
    }
}

impl Encode for SamplingTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            messages,
            system_prompt,
            max_tokens,
            include_context,
        } = self;
        messages.encode(out);
        system_prompt.encode(out);
        max_tokens.encode(out);
        include_context.encode(out);
    }
}

impl Encode for SamplingMessage {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 6;
        match self {
            SamplingMessage::User(t) => {
                tag(out, 0, N);
                t.encode(out);
            }
            SamplingMessage::Assistant(t) => {
                tag(out, 1, N);
                t.encode(out);
            }
            SamplingMessage::Image => tag(out, 2, N),
            SamplingMessage::BadRole => tag(out, 3, N),
            SamplingMessage::NoContent => tag(out, 4, N),
            SamplingMessage::Other(json) => {
                tag(out, 5, N);
                json.encode(out);
            }
        }
    }
}

impl Encode for ServerMessage {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 26;
        match self {
            ServerMessage::Initialize {
                id,
                version,
                capabilities,
                instructions,
            } => {
                tag(out, 0, N);
                id.encode(out);
                version.encode(out);
                capabilities.encode(out);
                instructions.encode(out);
            }
            ServerMessage::ToolsPage { id, tools, cursor } => {
                tag(out, 1, N);
                id.encode(out);
                tools.encode(out);
                cursor.encode(out);
            }
            ServerMessage::CallResult { id, result } => {
                tag(out, 2, N);
                id.encode(out);
                result.encode(out);
            }
            ServerMessage::Result { id, result } => {
                tag(out, 3, N);
                id.encode(out);
                result.encode(out);
            }
            ServerMessage::Error { id, code, message } => {
                tag(out, 4, N);
                id.encode(out);
                code.encode(out);
                message.encode(out);
            }
            ServerMessage::Ping(id) => {
                tag(out, 5, N);
                id.encode(out);
            }
            ServerMessage::RootsList(id) => {
                tag(out, 6, N);
                id.encode(out);
            }
            ServerMessage::Elicitation { id, form } => {
                tag(out, 7, N);
                id.encode(out);
                form.encode(out);
            }
            ServerMessage::Sampling { id, request } => {
                tag(out, 8, N);
                id.encode(out);
                request.encode(out);
            }
            ServerMessage::OtherRequest { id, method, params } => {
                tag(out, 9, N);
                id.encode(out);
                method.encode(out);
                params.encode(out);
            }
            ServerMessage::Progress {
                token,
                progress,
                total,
                message,
            } => {
                tag(out, 10, N);
                token.encode(out);
                progress.encode(out);
                total.encode(out);
                message.encode(out);
            }
            ServerMessage::Cancelled(id) => {
                tag(out, 11, N);
                id.encode(out);
            }
            ServerMessage::ToolsListChanged => tag(out, 12, N),
            ServerMessage::Log { level, data } => {
                tag(out, 13, N);
                level.encode(out);
                data.encode(out);
            }
            ServerMessage::OtherNotification { method, params } => {
                tag(out, 14, N);
                method.encode(out);
                params.encode(out);
            }
            ServerMessage::Raw(json) => {
                tag(out, 15, N);
                json.encode(out);
            }
            ServerMessage::Discover {
                id,
                versions,
                capabilities,
                ttl_ms,
            } => {
                tag(out, 16, N);
                id.encode(out);
                versions.encode(out);
                capabilities.encode(out);
                ttl_ms.encode(out);
            }
            ServerMessage::UnsupportedVersion { id, versions } => {
                tag(out, 17, N);
                id.encode(out);
                versions.encode(out);
            }
            ServerMessage::CatalogPage {
                id,
                kind,
                entries,
                cursor,
                ttl_ms,
                public,
            } => {
                tag(out, 18, N);
                id.encode(out);
                kind.encode(out);
                entries.encode(out);
                cursor.encode(out);
                ttl_ms.encode(out);
                public.encode(out);
            }
            ServerMessage::FeatureResult {
                id,
                kind,
                text,
                malformed,
            } => {
                tag(out, 19, N);
                id.encode(out);
                kind.encode(out);
                text.encode(out);
                malformed.encode(out);
            }
            ServerMessage::InputRequired {
                id,
                method,
                requests,
                state,
            } => {
                tag(out, 20, N);
                id.encode(out);
                method.encode(out);
                requests.encode(out);
                state.encode(out);
            }
            ServerMessage::CatalogListChanged { resources } => {
                tag(out, 21, N);
                resources.encode(out);
            }
            ServerMessage::Subscription { listen, event } => {
                tag(out, 23, N);
                listen.encode(out);
                event.encode(out);
            }
            ServerMessage::TaskState {
                id,
                status,
                message,
                interval,
                notify,
            } => {
                tag(out, 22, N);
                id.encode(out);
                status.encode(out);
                message.encode(out);
                interval.encode(out);
                notify.encode(out);
            }
            ServerMessage::ResourceUpdated { uri, listen } => {
                tag(out, 24, N);
                uri.encode(out);
                listen.encode(out);
            }
            ServerMessage::ResourceAcknowledged { listen, uris } => {
                tag(out, 25, N);
                listen.encode(out);
                uris.encode(out);
            }
        }
    }
}

impl Encode for CatalogEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        let Self {
            name,
            detailed,
            malformed,
        } = self;
        name.encode(out);
        detailed.encode(out);
        malformed.encode(out);
    }
}

impl Encode for InputTemplate {
    fn encode(&self, out: &mut Vec<u8>) {
        const N: u32 = 5;
        match self {
            InputTemplate::Elicitation(form) => {
                tag(out, 0, N);
                form.encode(out);
            }
            InputTemplate::Sampling(request) => {
                tag(out, 1, N);
                request.encode(out);
            }
            InputTemplate::Roots => tag(out, 2, N),
            InputTemplate::Other(method) => {
                tag(out, 3, N);
                method.encode(out);
            }
            InputTemplate::Raw(json) => {
                tag(out, 4, N);
                json.encode(out);
            }
        }
    }
}
