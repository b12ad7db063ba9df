//! The host's side of one view's dialogue (JSON-RPC over `postMessage`,
//! relayed to rho by the host page), without IO: messages from the view
//! go in ([`ViewBridge::receive`]), what the host must do comes out as a
//! [`ViewAsk`], and what the view must be sent is polled
//! ([`ViewBridge::poll_output`]).
//!
//! The bridge answers what needs no one else itself: `ui/initialize`
//! (the host's capabilities and context), `ping`, display-mode requests
//! (rho shows a view inline only), size changes (the host page resizes its
//! frame). It holds the tool's input and result until the view says
//! `ui/notifications/initialized`, as the specification requires, and
//! sends them again to a view that initializes anew (a reloaded page).
//!
//! Nothing the view sends is trusted: a message that is not a JSON-RPC
//! object is dropped, a request for a method rho does not offer is
//! refused (`-32601`), a request before `ui/initialize` is refused, and
//! ids are echoed as sent only when they are strings or numbers.

use std::collections::VecDeque;

use serde_json::{Value, json};

/// The MCP Apps protocol version rho speaks to views.
pub const PROTOCOL_VERSION: &str = "2026-01-26";

/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
const INVALID_PARAMS: i64 = -32602;
/// The specification's implementation-defined refusal.
const REFUSED: i64 = -32000;

/// The tallest a view may grow, in CSS pixels: rho's host page sizes the
/// view's frame to the height the view reports, up to this (its width is
/// the page's).
pub const MAX_VIEW_HEIGHT: u32 = 20_000;

/// The longest URL `ui/open-link` may ask to open.
const MAX_LINK: usize = 2048;

/// What the host must do for the view: each request carries the id to
/// answer with ([`ViewBridge::answer`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ViewAsk {
    /// `tools/call` of a tool of the view's own server, by its own name
    /// (the host checks it is for the app, under the server's filter).
    CallTool {
        /// The request's id.
        id: Value,
        /// The tool's name.
        name: String,
        /// Its arguments (an object).
        arguments: Value,
    },
    /// `resources/read` of the view's own server.
    ReadResource {
        /// The request's id.
        id: Value,
        /// The resource.
        uri: String,
    },
    /// `ui/message`: words for the conversation, as the person's next
    /// turn (the host may ask first).
    Message {
        /// The request's id.
        id: Value,
        /// The role the view gave (`user`).
        role: String,
        /// The text of its text content.
        text: String,
        /// The content as sent.
        content: Value,
    },
    /// `ui/update-model-context`: what the model should know in its next
    /// turns (each replaces the last).
    ModelContext {
        /// The request's id.
        id: Value,
        /// The text of its text blocks, joined.
        text: String,
        /// The params as sent (`content`, `structuredContent`).
        params: Value,
    },
    /// `ui/open-link`: the view asks the host to open a URL (only after
    /// the person agrees).
    OpenLink {
        /// The request's id.
        id: Value,
        /// The URL (`http` or `https`, checked).
        url: String,
    },
    /// `notifications/message`: the view's log line.
    Log {
        /// Its level.
        level: String,
        /// Its data.
        data: Value,
    },
}

impl ViewAsk {
    /// The id to answer with; `None` for a notification.
    pub fn id(&self) -> Option<&Value> {
        match self {
            Self::CallTool { id, .. }
            | Self::ReadResource { id, .. }
            | Self::Message { id, .. }
            | Self::ModelContext { id, .. }
            | Self::OpenLink { id, .. } => Some(id),
            Self::Log { .. } => None,
        }
    }
}

/// Where the view's dialogue stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// No `ui/initialize` yet.
    Loading,
    /// Answered `ui/initialize`; waiting for `initialized`.
    Initializing,
    /// Initialized: the host may send.
    Ready,
    /// `ui/resource-teardown` sent.
    TearingDown,
    /// The view answered the teardown (or was gone).
    Down,
}

/// What the bridge tells a view of the tool call that opened it.
#[derive(Clone, Debug)]
pub struct ViewSetup {
    /// The tool as listed (`name`, `inputSchema`, ...).
    pub tool: Value,
    /// The arguments it was called with.
    pub arguments: Value,
    /// `hostInfo` (`name`, `version`).
    pub host_info: Value,
    /// `hostCapabilities.sandbox.csp`: the domains approved.
    pub approved_csp: Value,
    /// The person's locale (BCP 47), when known.
    pub locale: Option<String>,
    /// Their time zone (IANA), when known.
    pub time_zone: Option<String>,
}

/// One view's dialogue with the host.
#[derive(Debug)]
pub struct ViewBridge {
    setup: ViewSetup,
    stage: Stage,
    result: Option<Value>,
    cancelled: Option<String>,
    out: VecDeque<Value>,
    next_id: u64,
    teardown_id: Option<u64>,
}

impl ViewBridge {
    /// A bridge for a view opened for `setup`'s tool call.
    pub fn new(setup: ViewSetup) -> Self {
        Self {
            setup,
            stage: Stage::Loading,
            result: None,
            cancelled: None,
            out: VecDeque::new(),
            next_id: 1,
            teardown_id: None,
        }
    }

    /// Whether the view has said it is initialized.
    pub fn is_ready(&self) -> bool {
        self.stage == Stage::Ready
    }

    /// Whether the view is down: it answered the teardown.
    pub fn is_down(&self) -> bool {
        self.stage == Stage::Down
    }

    /// The next message for the view.
    pub fn poll_output(&mut self) -> Option<Value> {
        self.out.pop_front()
    }

    /// The tool call's result, sent as `ui/notifications/tool-result` once
    /// the view is ready (and to a view that initializes again).
    pub fn tool_result(&mut self, result: Value) {
        if self.stage == Stage::Ready {
            self.notify("ui/notifications/tool-result", result.clone());
        }
        self.result = Some(result);
    }

    /// The tool call ended without a result.
    pub fn tool_cancelled(&mut self, reason: &str) {
        if self.stage == Stage::Ready {
            self.notify(
                "ui/notifications/tool-cancelled",
                json!({ "reason": reason }),
            );
        }
        self.cancelled = Some(reason.to_owned());
    }

    /// Asks the view to wind down (`ui/resource-teardown`); it is
    /// [`ViewBridge::is_down`] once it answers. A view not yet initialized
    /// is down at once (the host sends it nothing before then).
    pub fn teardown(&mut self, reason: &str) {
        match self.stage {
            Stage::Ready => {
                let id = self.next_id;
                self.next_id += 1;
                self.teardown_id = Some(id);
                self.stage = Stage::TearingDown;
                self.out.push_back(json!({
                    "jsonrpc": "2.0", "id": id, "method": "ui/resource-teardown",
                    "params": {"reason": reason},
                }));
            }
            Stage::TearingDown | Stage::Down => {}
            Stage::Loading | Stage::Initializing => self.stage = Stage::Down,
        }
    }

    /// Answers the view's request `id` (a [`ViewAsk`]'s): its result, or a
    /// refusal with the code and words a person or the view reads.
    pub fn answer(&mut self, id: Value, outcome: Result<Value, (i64, String)>) {
        let message = match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": code, "message": message}}),
        };
        self.out.push_back(message);
    }

    /// Refuses request `id` with the specification's implementation-defined
    /// code.
    pub fn refuse(&mut self, id: Value, why: impl Into<String>) {
        self.answer(id, Err((REFUSED, why.into())));
    }

    /// Takes one message from the view. Returns what the host must do, if
    /// anything; answers and notifications the bridge makes itself are
    /// queued for [`ViewBridge::poll_output`].
    pub fn receive(&mut self, message: &Value) -> Option<ViewAsk> {
        let object = message.as_object()?;
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return None;
        }
        let id = object
            .get("id")
            .filter(|id| id.is_string() || id.is_number())
            .cloned();
        let params = object.get("params").cloned().unwrap_or(Value::Null);
        let Some(method) = object.get("method").and_then(Value::as_str) else {
            // An answer: only the teardown is asked of a view.
            if self.teardown_id.is_some() && id.as_ref().and_then(Value::as_u64) == self.teardown_id
            {
                self.stage = Stage::Down;
            }
            return None;
        };
        let Some(id) = id else {
            return self.notification(method, params);
        };
        if method == "ui/initialize" {
            self.initialize(id);
            return None;
        }
        match self.stage {
            Stage::Loading => {
                self.answer(
                    id,
                    Err((REFUSED, format!("`{method}` before `ui/initialize`"))),
                );
                return None;
            }
            // A view being torn down (or never shown) asks for nothing more.
            Stage::TearingDown | Stage::Down => {
                self.refuse(id, "the view is being torn down");
                return None;
            }
            Stage::Initializing | Stage::Ready => {}
        }
        self.request(id, method, params)
    }

    fn request(&mut self, id: Value, method: &str, params: Value) -> Option<ViewAsk> {
        let bad = |this: &mut Self, id, why: &str| {
            this.answer(id, Err((INVALID_PARAMS, why.to_owned())));
            None
        };
        match method {
            "ping" => {
                self.answer(id, Ok(json!({})));
                None
            }
            "tools/call" => {
                let Some(name) = params.get("name").and_then(Value::as_str) else {
                    return bad(self, id, "tools/call needs a `name`");
                };
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => json!({}),
                    Some(args @ Value::Object(_)) => args.clone(),
                    Some(_) => return bad(self, id, "tools/call `arguments` must be an object"),
                };
                Some(ViewAsk::CallTool {
                    id,
                    name: name.to_owned(),
                    arguments,
                })
            }
            "resources/read" => match params.get("uri").and_then(Value::as_str) {
                Some(uri) => Some(ViewAsk::ReadResource {
                    id,
                    uri: uri.to_owned(),
                }),
                None => bad(self, id, "resources/read needs a `uri`"),
            },
            "ui/message" => {
                let content = params.get("content").cloned().unwrap_or(Value::Null);
                let text = texts(&content);
                if text.is_empty() {
                    return bad(self, id, "ui/message needs text content");
                }
                let role = params
                    .get("role")
                    .and_then(Value::as_str)
                    .unwrap_or("user")
                    .to_owned();
                Some(ViewAsk::Message {
                    id,
                    role,
                    text,
                    content,
                })
            }
            "ui/update-model-context" => Some(ViewAsk::ModelContext {
                id,
                text: texts(params.get("content").unwrap_or(&Value::Null)),
                params,
            }),
            "ui/open-link" => match params.get("url").and_then(Value::as_str) {
                Some(url) if is_web_link(url) => Some(ViewAsk::OpenLink {
                    id,
                    url: url.to_owned(),
                }),
                _ => {
                    self.answer(id, Err((REFUSED, "Invalid URL".into())));
                    None
                }
            },
            "ui/request-display-mode" => {
                // A browser tab is one place: rho shows a view inline.
                self.answer(id, Ok(json!({"mode": "inline"})));
                None
            }
            _ => {
                self.answer(
                    id,
                    Err((METHOD_NOT_FOUND, format!("rho does not offer `{method}`"))),
                );
                None
            }
        }
    }

    fn notification(&mut self, method: &str, params: Value) -> Option<ViewAsk> {
        match method {
            "ui/notifications/initialized" if self.stage == Stage::Initializing => {
                self.stage = Stage::Ready;
                self.notify(
                    "ui/notifications/tool-input",
                    json!({ "arguments": self.setup.arguments }),
                );
                if let Some(result) = self.result.clone() {
                    self.notify("ui/notifications/tool-result", result);
                } else if let Some(reason) = self.cancelled.clone() {
                    self.notify(
                        "ui/notifications/tool-cancelled",
                        json!({ "reason": reason }),
                    );
                }
                None
            }
            "notifications/message" => Some(ViewAsk::Log {
                level: params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info")
                    .to_owned(),
                data: params.get("data").cloned().unwrap_or(Value::Null),
            }),
            // Size changes are the host page's (it resizes the frame);
            // anything else a view may notify is of no use to rho.
            _ => None,
        }
    }

    fn initialize(&mut self, id: Value) {
        if matches!(self.stage, Stage::TearingDown | Stage::Down) {
            self.refuse(id, "the view is being torn down");
            return;
        }
        self.stage = Stage::Initializing;
        let mut context = json!({
            "toolInfo": {"tool": self.setup.tool},
            "theme": "light",
            "displayMode": "inline",
            "availableDisplayModes": ["inline"],
            "containerDimensions": {"maxHeight": MAX_VIEW_HEIGHT},
            "platform": "web",
            "userAgent": "rho",
        });
        if let Some(locale) = &self.setup.locale {
            context["locale"] = json!(locale);
        }
        if let Some(zone) = &self.setup.time_zone {
            context["timeZone"] = json!(zone);
        }
        let result = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "hostInfo": self.setup.host_info,
            "hostCapabilities": {
                "openLinks": {},
                "serverTools": {},
                "serverResources": {},
                "logging": {},
                "sandbox": {"permissions": {}, "csp": self.setup.approved_csp},
            },
            "hostContext": context,
        });
        self.answer(id, Ok(result));
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.out
            .push_back(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

/// The text of a content block or an array of them, joined by newlines.
fn texts(content: &Value) -> String {
    let blocks: Vec<&Value> = match content {
        Value::Array(blocks) => blocks.iter().collect(),
        block @ Value::Object(_) => vec![block],
        _ => Vec::new(),
    };
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `url` is an `http` or `https` URL a person may be offered.
fn is_web_link(url: &str) -> bool {
    url.len() <= MAX_LINK
        && url::Url::parse(url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bridge() -> ViewBridge {
        ViewBridge::new(ViewSetup {
            tool: json!({"name": "show", "inputSchema": {"type": "object"}}),
            arguments: json!({"q": 1}),
            host_info: json!({"name": "rho", "version": "test"}),
            approved_csp: json!({}),
            locale: Some("en-GB".into()),
            time_zone: None,
        })
    }

    fn drain(b: &mut ViewBridge) -> Vec<Value> {
        std::iter::from_fn(|| b.poll_output()).collect()
    }

    fn request(id: u64, method: &str, params: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    fn notification(method: &str) -> Value {
        json!({"jsonrpc": "2.0", "method": method, "params": {}})
    }

    fn ready(b: &mut ViewBridge) {
        assert_eq!(b.receive(&request(1, "ui/initialize", json!({}))), None);
        b.receive(&notification("ui/notifications/initialized"));
        drain(b);
    }

    #[test]
    fn input_and_result_wait_for_initialized_then_follow_in_order() {
        let mut b = bridge();
        b.tool_result(json!({"content": [{"type": "text", "text": "done"}]}));
        assert!(drain(&mut b).is_empty(), "nothing before the view asks");
        b.receive(&request(7, "ui/initialize", json!({"appCapabilities": {}})));
        let init = drain(&mut b);
        assert_eq!(init.len(), 1);
        assert_eq!(init[0]["id"], 7);
        assert_eq!(init[0]["result"]["protocolVersion"], PROTOCOL_VERSION);
        assert_eq!(
            init[0]["result"]["hostContext"]["toolInfo"]["tool"]["name"],
            "show"
        );
        assert_eq!(init[0]["result"]["hostContext"]["locale"], "en-GB");
        assert_eq!(
            init[0]["result"]["hostContext"]["containerDimensions"],
            json!({"maxHeight": MAX_VIEW_HEIGHT})
        );
        assert!(!b.is_ready());
        b.receive(&notification("ui/notifications/initialized"));
        let sent = drain(&mut b);
        let methods: Vec<&str> = sent.iter().map(|m| m["method"].as_str().unwrap()).collect();
        assert_eq!(
            methods,
            [
                "ui/notifications/tool-input",
                "ui/notifications/tool-result"
            ]
        );
        assert_eq!(sent[0]["params"]["arguments"], json!({"q": 1}));
        // A reloaded page initializes again and is told again.
        b.receive(&request(1, "ui/initialize", json!({})));
        b.receive(&notification("ui/notifications/initialized"));
        assert_eq!(drain(&mut b).len(), 3);
    }

    #[test]
    fn a_result_after_initialized_goes_at_once_and_a_cancel_is_said() {
        let mut b = bridge();
        ready(&mut b);
        b.tool_result(json!({"content": []}));
        assert_eq!(drain(&mut b)[0]["method"], "ui/notifications/tool-result");
        let mut c = bridge();
        c.tool_cancelled("the person pressed Ctrl-C");
        ready(&mut c);
        c.receive(&request(2, "ui/initialize", json!({})));
        c.receive(&notification("ui/notifications/initialized"));
        let sent = drain(&mut c);
        assert_eq!(sent[2]["method"], "ui/notifications/tool-cancelled");
        assert_eq!(sent[2]["params"]["reason"], "the person pressed Ctrl-C");
    }

    #[test]
    fn the_views_requests_become_asks_with_their_ids() {
        let mut b = bridge();
        ready(&mut b);
        assert_eq!(
            b.receive(&request(3, "tools/call", json!({"name": "refresh"}))),
            Some(ViewAsk::CallTool {
                id: json!(3),
                name: "refresh".into(),
                arguments: json!({})
            })
        );
        assert_eq!(
            b.receive(&request(4, "resources/read", json!({"uri": "ui://x"}))),
            Some(ViewAsk::ReadResource {
                id: json!(4),
                uri: "ui://x".into()
            })
        );
        let message = b.receive(&request(
            5,
            "ui/message",
            json!({
            "role": "user", "content": [{"type": "text", "text": "Summarise page 2"}]}),
        ));
        assert!(
            matches!(message, Some(ViewAsk::Message { ref text, .. }) if text == "Summarise page 2")
        );
        assert!(matches!(
            b.receive(&request(
                6,
                "ui/open-link",
                json!({"url": "https://example.com/a"})
            )),
            Some(ViewAsk::OpenLink { .. })
        ));
        assert!(matches!(
            b.receive(&json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "warning", "data": "x"}})),
            Some(ViewAsk::Log { ref level, .. }) if level == "warning"
        ));
        assert!(drain(&mut b).is_empty());
    }

    #[test]
    fn what_rho_does_not_offer_or_cannot_read_is_refused() {
        let mut b = bridge();
        b.receive(&request(1, "tools/call", json!({"name": "x"})));
        assert_eq!(
            drain(&mut b)[0]["error"]["code"],
            REFUSED,
            "before initialize"
        );
        ready(&mut b);
        for (method, params, code) in [
            ("sampling/createMessage", json!({}), METHOD_NOT_FOUND),
            ("tools/call", json!({}), INVALID_PARAMS),
            (
                "tools/call",
                json!({"name": "x", "arguments": [1]}),
                INVALID_PARAMS,
            ),
            (
                "ui/message",
                json!({"content": {"type": "image"}}),
                INVALID_PARAMS,
            ),
            (
                "ui/open-link",
                json!({"url": "javascript:alert(1)"}),
                REFUSED,
            ),
            (
                "ui/open-link",
                json!({"url": "file:///etc/passwd"}),
                REFUSED,
            ),
        ] {
            assert_eq!(b.receive(&request(9, method, params)), None, "{method}");
            let answer = drain(&mut b);
            assert_eq!(answer[0]["error"]["code"], code, "{method}: {answer:?}");
        }
        for junk in [
            json!([1]),
            json!("x"),
            json!({"id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": {"o": 1}, "method": "ping"}),
        ] {
            assert_eq!(b.receive(&junk), None);
        }
        assert!(drain(&mut b).is_empty(), "junk gets no answer");
        b.receive(&request(2, "ping", json!({})));
        assert_eq!(drain(&mut b)[0]["result"], json!({}));
    }

    #[test]
    fn teardown_is_asked_and_done_when_answered() {
        let mut b = bridge();
        ready(&mut b);
        // An answer nobody asked for ends nothing.
        for stray in [json!("x"), json!(1), json!(null)] {
            b.receive(&json!({"jsonrpc": "2.0", "id": stray, "result": {}}));
            assert!(!b.is_down(), "{stray}");
        }
        b.teardown("rho is exiting");
        let asked = drain(&mut b);
        assert_eq!(asked[0]["method"], "ui/resource-teardown");
        assert!(!b.is_down());
        b.receive(&json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {}}));
        assert!(b.is_down());
        let mut early = bridge();
        early.teardown("closed");
        assert!(early.is_down(), "a view never initialized is sent nothing");
        // Nothing a torn-down view asks becomes an ask (found by the
        // `apps` fuzz target: a teardown before `ui/initialize`).
        for mut b in [early, {
            let mut b = bridge();
            ready(&mut b);
            b.teardown("closing");
            drain(&mut b);
            b
        }] {
            assert_eq!(
                b.receive(&request(5, "tools/call", json!({"name": "x"}))),
                None
            );
            assert_eq!(drain(&mut b)[0]["error"]["code"], REFUSED);
        }
    }
}
