//! Streamable HTTP answers rho cannot read, driven through a `Connection`
//! built from a config (so `max_message_bytes` is the one in force) with a
//! scripted server and a fake clock: the POST's own response ties the answer
//! to its call, which fails at once with the reason.

// The fake clock needs one real `Instant` as its origin.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use rho_proto_core::config;
use rho_proto_core::connection::{Connection, HostContext, HttpInput, Output};
use rho_proto_core::http::{HttpOutput, HttpRequest, Method};
use rho_proto_core::session::{CallError, CallId, Event};
use serde_json::{Value, json};

mod common;
use common::{drain, drive_bounded};

/// A connection against a scripted HTTP server.
struct Server {
    now: Instant,
    conn: Connection,
    /// POSTs of tools/call not answered yet.
    calls: Vec<HttpRequest>,
    events: Vec<Event>,
}

fn method(req: &HttpRequest) -> Option<String> {
    let message: Value = serde_json::from_slice(&req.body).ok()?;
    message.get("method")?.as_str().map(str::to_owned)
}

fn id(req: &HttpRequest) -> Value {
    let message: Value = serde_json::from_slice(&req.body).expect("json");
    message["id"].clone()
}

impl Server {
    fn start(max_message_bytes: usize) -> Self {
        let text = format!(
            "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/mcp\"\nmax_message_bytes = {max_message_bytes}\n"
        );
        let parsed = config::parse(&text, "test.toml").expect("valid");
        let server = parsed.servers[0].config.clone().expect("valid entry");
        let now = Instant::now();
        let conn = Connection::new(&server, &HostContext::default(), now).expect("connection");
        let mut s = Self {
            now,
            conn,
            calls: Vec::new(),
            events: Vec::new(),
        };
        s.serve();
        assert!(
            s.events.iter().any(|e| matches!(e, Event::Ready(_))),
            "{:?}",
            s.events
        );
        s
    }

    fn json(&mut self, req: &HttpRequest, status: u16, body: &[u8]) {
        let x = req.exchange;
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if method(req).as_deref() == Some("initialize") {
            headers.push(("mcp-session-id".into(), "sid-1".into()));
        }
        self.conn
            .handle_http(self.now, x, HttpInput::Head { status, headers });
        if !body.is_empty() {
            self.conn
                .handle_http(self.now, x, HttpInput::Body(body.to_vec()));
        }
        self.conn.handle_http(self.now, x, HttpInput::End);
    }

    /// Answers the handshake and discovery as a correct server; keeps
    /// tools/call POSTs for the test. Runs until the connection is idle,
    /// bounded by [`drive_bounded`].
    fn serve(&mut self) {
        drive_bounded("a connection and its scripted HTTP server", || {
            let mut requests = Vec::new();
            drain(
                &mut self.conn,
                |output| {
                    if let Output::Http(HttpOutput::Send(req)) = output {
                        requests.push(req);
                    }
                },
                &mut self.events,
            );
            let busy = !requests.is_empty();
            for req in requests {
                match (req.method, method(&req).as_deref()) {
                    (Method::Get, _) => self.conn.handle_http(
                        self.now,
                        req.exchange,
                        HttpInput::Head {
                            status: 405,
                            headers: Vec::new(),
                        },
                    ),
                    (Method::Post, Some("initialize")) => {
                        let body = json!({"jsonrpc": "2.0", "id": id(&req), "result": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "scripted", "version": "1"},
                        }});
                        self.json(&req, 200, body.to_string().as_bytes());
                    }
                    (Method::Post, Some("tools/list")) => {
                        let body = json!({"jsonrpc": "2.0", "id": id(&req), "result": {
                            "tools": [{"name": "t", "inputSchema": {"type": "object"}}]
                        }});
                        self.json(&req, 200, body.to_string().as_bytes());
                    }
                    (Method::Post, Some("tools/call")) => self.calls.push(req),
                    (Method::Post, _) => self.json(&req, 202, b""),
                    (Method::Delete, _) => self.json(&req, 200, b""),
                }
            }
            busy
        });
    }

    fn call(&mut self) -> (CallId, HttpRequest) {
        let call = self
            .conn
            .call_tool(self.now, "t", json!({}), None)
            .expect("ready");
        self.serve();
        (call, self.calls.pop().expect("a tools/call POST"))
    }

    fn sse(&mut self, req: &HttpRequest, body: &[u8]) {
        let x = req.exchange;
        let headers = vec![("content-type".to_owned(), "text/event-stream".to_owned())];
        self.conn.handle_http(
            self.now,
            x,
            HttpInput::Head {
                status: 200,
                headers,
            },
        );
        self.conn
            .handle_http(self.now, x, HttpInput::Body(body.to_vec()));
        self.serve();
    }

    fn failure_of(&self, call: CallId) -> String {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::CallCompleted {
                    call: c,
                    result: Err(error),
                } if *c == call => Some(error),
                _ => None,
            })
            .map(CallError::to_string)
            .unwrap_or_else(|| panic!("call {call} should have failed at once: {:?}", self.events))
    }
}

#[test]
fn an_sse_event_over_max_message_bytes_fails_its_call_at_once() {
    let mut server = Server::start(64 * 1024);
    let (call, req) = server.call();
    let mut event = format!(
        "data: {{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{{\"t\":\"",
        id(&req)
    )
    .into_bytes();
    event.resize(70_000, b'a');
    server.sse(&req, &event);
    let failure = server.failure_of(call);
    assert!(
        failure.contains("server `remote`: its answer could not be read: the answer was over the 64 KiB limit (`max_message_bytes`)"),
        "{failure}"
    );
}

#[test]
fn a_json_body_over_max_message_bytes_fails_its_call_at_once() {
    let mut server = Server::start(64 * 1024);
    let (call, req) = server.call();
    let x = req.exchange;
    let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    server.conn.handle_http(
        server.now,
        x,
        HttpInput::Head {
            status: 200,
            headers,
        },
    );
    server
        .conn
        .handle_http(server.now, x, HttpInput::Body(vec![b' '; 70_000]));
    server.serve();
    assert!(
        server
            .failure_of(call)
            .contains("over the 64 KiB limit (`max_message_bytes`)"),
        "{}",
        server.failure_of(call)
    );
}

#[test]
fn each_answer_that_is_not_json_rpc_fails_its_call_at_once() {
    let answers: [(&str, &[u8], &str); 5] = [
        (
            "1e400",
            br#"{"jsonrpc":"2.0","id":ID,"result":{"n":1e400}}"#,
            "number out of range",
        ),
        ("deep nesting", b"DEEP", "recursion limit exceeded"),
        (
            "a lone surrogate",
            br#"{"jsonrpc":"2.0","id":ID,"result":{"t":"\ud800"}}"#,
            "hex escape",
        ),
        (
            "both result and error",
            br#"{"jsonrpc":"2.0","id":ID,"result":{},"error":{"code":1,"message":"x"}}"#,
            "both `result` and `error`",
        ),
        (
            "an id of the wrong type",
            br#"{"jsonrpc":"2.0","id":[1],"result":{}}"#,
            "id is neither a number nor a string",
        ),
    ];
    for (what, template, says) in answers {
        for sse in [false, true] {
            let mut server = Server::start(16 << 20);
            let (call, req) = server.call();
            let body = String::from_utf8_lossy(template)
                .replace("ID", &id(&req).to_string())
                .replace(
                    "DEEP",
                    &format!(
                        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}{}}}",
                        id(&req),
                        "[".repeat(300),
                        "]".repeat(300)
                    ),
                );
            if sse {
                server.sse(&req, format!("data: {body}\n\n").as_bytes());
            } else {
                server.json(&req, 200, body.as_bytes());
                server.serve();
            }
            let failure = server.failure_of(call);
            assert!(
                failure.contains("its answer could not be read: the answer is not valid JSON-RPC")
                    && failure.contains(says),
                "{what} (sse: {sse}): {failure}"
            );
        }
    }
}
