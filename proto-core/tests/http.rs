//! The Streamable HTTP transport driven by a scripted HTTP server and a fake
//! clock: every request the transport makes is collected, and each test
//! answers them with heads, bodies and ends as a server would. No socket,
//! no sleep; time moves only when a test says so.

use std::time::Duration;

use rho_proto_core::config::{self, Transport};
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::resource_subscriptions::{SubscribeParams, WatchEnd};
use rho_proto_core::http::{
    HeaderError, HttpFailure, HttpFailureKind, HttpOptions, HttpOutput, HttpRequest, Method,
    resolve_headers,
};
use rho_proto_core::session::{
    CallError, CallId, CancelNotice, CloseReason, Event, SessionOptions, Timer,
};
use serde_json::{Value, json};
use url::Url;

const URL: &str = "https://mcp.example.com/mcp";
/// Configured header values: secrets that must never show in `Debug`.
const TOKEN: &str = "Bearer tok-7f3a9c-secret";
const TENANT: &str = "tenant-b41c-secret";
/// Session ids the scripted server hands out.
const SID: &str = "sid-0c9e11-first";
const SID2: &str = "sid-5d2a77-second";
const VERSION: &str = "2025-11-25";
const SSE: (&str, &str) = ("content-type", "text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");

fn options() -> HttpOptions {
    let mut o = HttpOptions::new(
        Url::parse(URL).expect("url"),
        vec![
            ("Authorization".into(), TOKEN.into()),
            ("X-Tenant".into(), TENANT.into()),
        ],
    );
    // Far enough away that only the ping tests meet it.
    o.ping_interval = Duration::from_secs(3600);
    o
}

fn session_options() -> SessionOptions {
    let mut o = common::http_session_options();
    o.request_timeout = Duration::from_secs(3);
    o
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

fn init_result() -> Value {
    json!({
        "protocolVersion": VERSION,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "1.0"}
    })
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// A header's value, by case-insensitive name.
fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// How many times a header is present, by case-insensitive name.
fn header_count(req: &HttpRequest, name: &str) -> usize {
    req.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .count()
}

/// One SSE event carrying a JSON-RPC message.
fn sse_event(id: Option<&str>, message: &Value) -> String {
    let id = id.map(|id| format!("id: {id}\n")).unwrap_or_default();
    format!("{id}data: {message}\n\n")
}

fn response(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

mod common;
use common::{Http as Harness, rpc, rpc_method};

/// What these tests read off the shared harness, whose drain checks that
/// every request goes to the configured endpoint and that nothing is
/// reported after [`Event::Closed`].
impl Harness {
    fn new() -> Self {
        Self::with(options())
    }

    fn with(options: HttpOptions) -> Self {
        Self::connect(session_options(), options)
    }

    // ----- what the transport asked for -----

    fn with_method(&self, method: Method) -> Vec<HttpRequest> {
        self.sends()
            .into_iter()
            .filter(|r| r.method == method)
            .cloned()
            .collect()
    }

    // ----- the scripted server -----

    /// 202 Accepted, no body: how a server takes a notification or response.
    fn accept(&mut self, req: &HttpRequest) {
        self.respond(req, 202, &[], b"");
    }

    /// Answers a request POST with an SSE stream holding just the response.
    fn answer_sse(&mut self, req: &HttpRequest, result: Value) {
        let body = sse_event(Some("a1"), &response(&rpc(req)["id"], result));
        self.respond(req, 200, &[SSE], body.as_bytes());
    }

    /// Handshake and discovery with session id [`SID`], one tool `echo`.
    /// The server's GET stream is left open and silent; it is returned.
    fn ready(&mut self) -> HttpRequest {
        let stream = self.handshake(init_result());
        assert!(
            matches!(self.events.last(), Some(Event::Ready(_))),
            "{:?}",
            self.events
        );
        stream
    }

    /// `initialize` answered with `result` under session id [`SID`],
    /// `initialized` taken, the server stream opened (returned) and
    /// `tools/list` answered with one tool `echo`.
    fn handshake(&mut self, result: Value) -> HttpRequest {
        let init = self.last_post("initialize");
        let body = response(&rpc(&init)["id"], result).to_string();
        self.respond(
            &init,
            200,
            &[JSON, ("Mcp-Session-Id", SID)],
            body.as_bytes(),
        );
        let initialized = self.last_post("notifications/initialized");
        self.accept(&initialized);
        let stream = self.open_stream();
        let list = self.last_post("tools/list");
        self.answer_json(&list, json!({"tools": [tool("echo")]}));
        stream
    }

    /// Answers the server stream's GET (the last request sent) with the
    /// head of an SSE stream, which releases what waited for it.
    fn open_stream(&mut self) -> HttpRequest {
        let stream = self.last_send();
        assert_eq!(stream.method, Method::Get, "the server stream opened");
        self.head(&stream, 200, &[SSE]);
        stream
    }

    fn call(&mut self, name: &str, arguments: Value) -> (CallId, HttpRequest) {
        let call = self
            .transport
            .call_tool(self.now, name, arguments)
            .expect("ready");
        self.drain();
        (call, self.last_post("tools/call"))
    }

    // ----- what the host learned -----

    fn completed_text(&self, call: CallId) -> String {
        match self.completion(call) {
            Some(Ok(result)) => result.text(),
            other => panic!("expected a result for {call}, got {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// 1. The first request
// ---------------------------------------------------------------------------

#[test]
fn first_request_is_initialize_with_both_accepts_configured_headers_and_no_session_headers() {
    let h = Harness::new();
    assert_eq!(h.outputs.len(), 1, "{:?}", h.outputs);
    let req = h.last_send();
    assert_eq!(req.method, Method::Post);
    assert_eq!(req.url.as_str(), URL);
    assert_eq!(rpc_method(&req), "initialize");
    assert_eq!(rpc(&req)["params"]["protocolVersion"], VERSION);
    assert_eq!(
        header(&req, "accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(header(&req, "content-type"), Some("application/json"));
    assert_eq!(header(&req, "mcp-session-id"), None);
    assert_eq!(header(&req, "mcp-protocol-version"), None);
    assert_eq!(header(&req, "authorization"), Some(TOKEN));
    assert_eq!(header(&req, "x-tenant"), Some(TENANT));
}

// ---------------------------------------------------------------------------
// 2. Session id and protocol version
// ---------------------------------------------------------------------------

#[test]
fn session_id_and_negotiated_version_ride_on_every_request_after_initialize() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({"x": 1}));
    h.answer_json(&req, text_result("hi"));
    assert_eq!(h.completed_text(call), "hi");
    h.transport.close(h.now);
    h.drain();
    let sends: Vec<HttpRequest> = h.sends().into_iter().cloned().collect();
    let methods: Vec<Method> = sends.iter().map(|r| r.method).collect();
    assert!(methods.contains(&Method::Get), "{methods:?}");
    assert!(methods.contains(&Method::Delete), "{methods:?}");
    for req in &sends[1..] {
        assert_eq!(header(req, "mcp-session-id"), Some(SID), "{req:?}");
        assert_eq!(
            header(req, "mcp-protocol-version"),
            Some(VERSION),
            "{req:?}"
        );
        assert_eq!(header_count(req, "mcp-session-id"), 1, "{req:?}");
        assert_eq!(header(req, "authorization"), Some(TOKEN), "{req:?}");
    }
}

// ---------------------------------------------------------------------------
// 3. JSON bodies, SSE streams, 202s
// ---------------------------------------------------------------------------

#[test]
fn handshake_and_call_answered_as_sse_streams_complete() {
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    let body = sse_event(Some("1"), &response(&json!(0), init_result()));
    h.respond(
        &init,
        200,
        &[
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("mcp-session-id", SID),
        ],
        body.as_bytes(),
    );
    let initialized = h.last_post("notifications/initialized");
    h.accept(&initialized);
    h.open_stream();
    let list = h.last_post("tools/list");
    h.answer_sse(&list, json!({"tools": [tool("echo")]}));
    assert!(
        matches!(h.events.last(), Some(Event::Ready(_))),
        "{:?}",
        h.events
    );
    let (call, req) = h.call("echo", json!({}));
    assert_eq!(header(&req, "mcp-session-id"), Some(SID));
    h.answer_sse(&req, text_result("streamed"));
    assert_eq!(h.completed_text(call), "streamed");
}

#[test]
fn handshake_and_call_answered_as_json_bodies_complete() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    let body = response(&rpc(&req)["id"], text_result("plain")).to_string();
    h.respond(
        &req,
        200,
        &[("Content-Type", "application/json; charset=utf-8")],
        body.as_bytes(),
    );
    assert_eq!(h.completed_text(call), "plain");
}

#[test]
fn notifications_are_done_at_202_without_a_body() {
    let mut h = Harness::new();
    h.ready();
    // `ready` answered `notifications/initialized` with a bare 202: nothing
    // failed, nothing is retried.
    assert_eq!(h.posts("notifications/initialized").len(), 1);
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::PeerMisbehaved(_) | Event::Closed(_))),
        "{:?}",
        h.events
    );
}

// ---------------------------------------------------------------------------
// 4. The server's own GET stream
// ---------------------------------------------------------------------------

#[test]
fn server_stream_get_opens_only_after_initialized_got_its_202() {
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    let body = response(&json!(0), init_result()).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID)],
        body.as_bytes(),
    );
    assert!(
        h.with_method(Method::Get).is_empty(),
        "no GET before the 202"
    );
    let initialized = h.last_post("notifications/initialized");
    h.accept(&initialized);
    // What follows waits for the GET, bounded by the server-stream wait.
    assert_eq!(h.transport.timeout_reason(), Some(Timer::ServerStreamWait));
    let gets = h.with_method(Method::Get);
    assert_eq!(gets.len(), 1);
    let get = &gets[0];
    assert_eq!(get.url.as_str(), URL);
    assert_eq!(header(get, "accept"), Some("text/event-stream"));
    assert_eq!(header(get, "content-type"), None);
    assert_eq!(header(get, "mcp-session-id"), Some(SID));
    assert_eq!(header(get, "mcp-protocol-version"), Some(VERSION));
    assert_eq!(header(get, "last-event-id"), None);
    assert!(get.body.is_empty());
}

#[test]
fn server_stream_405_means_no_get_is_ever_sent_again() {
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    let body = response(&json!(0), init_result()).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID)],
        body.as_bytes(),
    );
    let initialized = h.last_post("notifications/initialized");
    h.accept(&initialized);
    let get = h.last_send();
    h.respond(&get, 405, &[("Allow", "POST, DELETE")], b"");
    let list = h.last_post("tools/list");
    h.answer_json(&list, json!({"tools": []}));
    for _ in 0..20 {
        h.advance(Duration::from_secs(600));
    }
    assert_eq!(h.with_method(Method::Get).len(), 1);
    assert!(h.closed().is_none(), "{:?}", h.events);
}

#[test]
fn server_stream_404_on_first_open_means_none_offered_not_an_expired_session() {
    // A server that routes only POST to its endpoint answers GET with 404.
    // Re-initializing for that would loop: the fresh session's GET gets the
    // same answer.
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    let body = response(&json!(0), init_result()).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID)],
        body.as_bytes(),
    );
    h.accept(&h.last_post("notifications/initialized"));
    let get = h.last_send();
    assert_eq!(get.method, Method::Get);
    h.respond(&get, 404, &[], b"Cannot GET /mcp");
    h.answer_json(&h.last_post("tools/list"), json!({"tools": [tool("echo")]}));
    for _ in 0..20 {
        h.advance(Duration::from_secs(600));
    }
    assert_eq!(h.posts("initialize").len(), 1, "no fresh session");
    assert_eq!(h.with_method(Method::Get).len(), 1, "no retry");
    let (call, req) = h.call("echo", json!({}));
    assert_eq!(header(&req, "mcp-session-id"), Some(SID));
    h.answer_json(&req, text_result("fine"));
    assert_eq!(h.completed_text(call), "fine");
}

#[test]
fn server_stream_404_after_it_was_open_reinitializes_the_session() {
    let mut h = Harness::new();
    let get = h.ready();
    h.body(&get, b"id: g1\ndata: \n\n");
    h.end(&get);
    h.step();
    let again = h.last_send();
    assert_eq!(header(&again, "last-event-id"), Some("g1"));
    h.respond(&again, 404, &[], b"Session not found");
    assert_eq!(h.posts("initialize").len(), 2, "one fresh session");
    reinitialize(&mut h);
    let get = h.last_send();
    assert_eq!(get.method, Method::Get);
    assert_eq!(header(&get, "mcp-session-id"), Some(SID2));
}

#[test]
fn server_stream_409_is_not_retried() {
    let mut h = Harness::new();
    let get = h.ready();
    h.respond(&get, 409, &[], b"Conflict: stream already open");
    for _ in 0..20 {
        h.advance(Duration::from_secs(600));
    }
    assert_eq!(h.with_method(Method::Get).len(), 1);
    assert!(h.closed().is_none(), "{:?}", h.events);
}

#[test]
fn server_requests_and_notifications_on_the_get_stream_are_handled() {
    let mut h = Harness::new();
    let get = h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.accept(&req); // the answer will come on the server's stream
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": call.wire_id(), "progress": 1, "total": 2}});
    let ping = json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"});
    let stream = format!(
        "{}{}",
        sse_event(Some("s1"), &progress),
        sse_event(Some("s2"), &ping)
    );
    h.body(&get, stream.as_bytes());
    assert!(
        h.events
            .iter()
            .any(|e| matches!(e, Event::Progress { call: c, .. } if *c == call)),
        "{:?}",
        h.events
    );
    let answer = h.last_post("<response>");
    assert_eq!(
        rpc(&answer),
        json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}})
    );
    assert_eq!(header(&answer, "mcp-session-id"), Some(SID));
    assert_eq!(
        header(&answer, "accept"),
        Some("application/json, text/event-stream")
    );
    h.accept(&answer);
    // The call's own answer on the same stream completes it.
    let done = sse_event(Some("s3"), &response(&rpc(&req)["id"], text_result("late")));
    h.body(&get, done.as_bytes());
    assert_eq!(h.completed_text(call), "late");
}

// ---------------------------------------------------------------------------
// 5. SSE split anywhere
// ---------------------------------------------------------------------------

/// A tool call's SSE answer with a BOM, a comment, CRLF and LF lines, a
/// priming event, progress, a log message and a two-line `data` response.
fn scripted_sse_answer(request_id: u64) -> Vec<u8> {
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": request_id, "progress": 0.5, "message": "half ☃"}});
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "hi ☃"}});
    let mut out = Vec::new();
    out.extend("\u{feff}: keep-alive\r\n".as_bytes());
    out.extend(b"id: e1\r\nretry: 250\r\ndata: \r\n\r\n");
    out.extend(format!("event: message\r\nid: e2\r\ndata: {progress}\r\n\r\n").as_bytes());
    out.extend(format!("data: {log}\n\n").as_bytes());
    out.extend(
        format!(
            "id: e3\ndata: {{\"jsonrpc\": \"2.0\", \"id\": {request_id},\ndata: \"result\": {}}}\n\n",
            text_result("split ☃")
        )
        .as_bytes(),
    );
    out
}

/// Everything the transport output and reported after the call was made.
fn split_outcome(chunks: &[&[u8]]) -> (Vec<HttpOutput>, String) {
    let mut h = Harness::new();
    h.ready();
    let (_, req) = h.call("echo", json!({}));
    let outputs_before = h.outputs.len();
    let events_before = h.events.len();
    h.head(&req, 200, &[SSE]);
    for chunk in chunks {
        h.body(&req, chunk);
    }
    h.end(&req);
    let outputs = h.outputs.split_off(outputs_before);
    (outputs, format!("{:?}", &h.events[events_before..]))
}

#[test]
fn sse_answer_split_at_every_byte_boundary_gives_the_same_outcome() {
    // The first call after `ready` is request id 2.
    let bytes = scripted_sse_answer(2);
    let reference = split_outcome(&[&bytes]);
    assert!(reference.1.contains("Progress"), "{}", reference.1);
    assert!(reference.1.contains("split ☃"), "{}", reference.1);
    assert!(
        reference.1.find("Progress") < reference.1.find("CallCompleted"),
        "{}",
        reference.1
    );
    for split in 0..=bytes.len() {
        let got = split_outcome(&[&bytes[..split], &bytes[split..]]);
        assert_eq!(got, reference, "split at {split}");
    }
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(split_outcome(&singles), reference, "one byte at a time");
}

// ---------------------------------------------------------------------------
// 6. Resuming broken streams
// ---------------------------------------------------------------------------

#[test]
fn broken_stream_resumes_after_the_servers_retry_with_last_event_id_and_is_not_cancelled() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    let sends_before = h.sends().len();
    h.respond(&req, 200, &[SSE], b"id: e1\nretry: 250\ndata: \n\n");
    assert_eq!(h.sends().len(), sends_before, "no immediate request");
    assert!(h.completion(call).is_none());
    assert_eq!(h.next_deadline_in(), Some(Duration::from_millis(250)));
    assert_eq!(h.transport.timeout_reason(), Some(Timer::StreamResume));
    h.advance(Duration::from_millis(249));
    assert_eq!(h.sends().len(), sends_before, "not before 250 ms");
    h.advance(Duration::from_millis(1));
    assert_eq!(h.sends().len(), sends_before + 1);
    let resume = h.last_send();
    assert_eq!(resume.method, Method::Get);
    assert_eq!(resume.url.as_str(), URL);
    assert_eq!(header(&resume, "last-event-id"), Some("e1"));
    assert_eq!(header(&resume, "accept"), Some("text/event-stream"));
    assert_eq!(header(&resume, "mcp-session-id"), Some(SID));
    let answer = sse_event(
        Some("e2"),
        &response(&rpc(&req)["id"], text_result("resumed")),
    );
    h.respond(&resume, 200, &[SSE], answer.as_bytes());
    assert_eq!(h.completed_text(call), "resumed");
    assert!(
        h.posts("notifications/cancelled").is_empty(),
        "a broken stream is not a cancellation"
    );
}

#[test]
fn an_event_id_that_cannot_be_a_header_counts_as_no_id() {
    // SSE allows control characters in ids; a Last-Event-ID header does not.
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    let sends_before = h.sends().len();
    h.respond(&req, 200, &[SSE], b"id: e\x01\nretry: 250\ndata: \n\n");
    assert_eq!(
        h.sends().len(),
        sends_before,
        "no resume with an unsendable id"
    );
    let reason = h
        .completion(call)
        .expect("the call fails at once")
        .clone()
        .expect_err("no result");
    assert!(reason.to_string().contains("no event id"), "{reason}");
}

#[test]
fn broken_stream_without_retry_waits_default_retry_doubling_then_gives_up_after_max_resumes() {
    let mut o = options();
    o.default_retry = Duration::from_millis(100);
    o.max_stream_resumes = 5;
    let mut h = Harness::with(o);
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(&req, 200, &[SSE], b"id: e1\ndata: \n\n");
    let mut waits = Vec::new();
    for attempt in 1..=5 {
        let gets_before = h.with_method(Method::Get).len();
        waits.push(h.step());
        let gets = h.with_method(Method::Get);
        assert_eq!(gets.len(), gets_before + 1, "attempt {attempt}");
        let resume = gets.last().expect("a GET").clone();
        assert_eq!(
            header(&resume, "last-event-id"),
            Some("e1"),
            "attempt {attempt}"
        );
        assert!(h.completion(call).is_none(), "attempt {attempt}");
        // The server takes the GET but closes at once, delivering nothing.
        h.respond(&resume, 200, &[SSE], b"");
    }
    let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
    assert_eq!(ms, [100, 200, 400, 800, 1600]);
    let reason = h.transport_error(call);
    assert!(reason.contains("after 5 attempts"), "{reason}");
    assert!(reason.contains("without delivering an event"), "{reason}");
    assert!(h.posts("notifications/cancelled").is_empty());
    // Nothing more is tried for it.
    let sends = h.sends().len();
    h.advance(Duration::from_secs(60));
    assert_eq!(h.sends().len(), sends);
}

#[test]
fn stream_that_breaks_off_mid_body_resumes_like_one_that_ended() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.head(&req, 200, &[SSE]);
    h.body(
        &req,
        b"id: e1\nretry: 250\ndata: \n\nid: e2\ndata: {\"jsonrpc\"",
    );
    h.transport
        .handle_exchange_failed(h.now, req.exchange, HttpFailure::other("connection reset"));
    h.drain();
    assert!(h.completion(call).is_none());
    assert_eq!(h.step(), Duration::from_millis(250));
    let resume = h.last_send();
    assert_eq!(resume.method, Method::Get);
    assert_eq!(
        header(&resume, "last-event-id"),
        Some("e1"),
        "the cut-off event never counted"
    );
    let answer = sse_event(Some("e2"), &response(&rpc(&req)["id"], text_result("ok")));
    h.respond(&resume, 200, &[SSE], answer.as_bytes());
    assert_eq!(h.completed_text(call), "ok");
    assert!(h.posts("notifications/cancelled").is_empty());
}

/// A call whose POST found no connection, with `failure`: what the caller
/// is told.
fn unreachable_reason(failure: HttpFailure) -> String {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.transport
        .handle_exchange_failed(h.now, req.exchange, failure);
    h.drain();
    h.transport_error(call)
}

#[test]
fn an_unknown_issuer_is_told_by_its_kind_with_what_to_do_and_never_by_its_words() {
    const HINT: &str = "a private CA can be trusted with SSL_CERT_FILE";
    // The executor's words need not name rustls' variant: the kind says it.
    let untrusted = unreachable_reason(HttpFailure::new(
        HttpFailureKind::UnknownIssuer,
        "TLS with https://mcp.example:443: certificate signed by an unknown authority",
    ));
    assert!(
        untrusted.starts_with("could not reach the server: TLS with https://mcp.example:443"),
        "{untrusted}"
    );
    assert!(untrusted.contains(HINT), "{untrusted}");
    // Another certificate problem: a CA file would not help.
    let expired = unreachable_reason(HttpFailure::new(
        HttpFailureKind::InvalidCertificate,
        "TLS with https://mcp.example:443: invalid peer certificate: Expired",
    ));
    assert!(!expired.contains(HINT), "{expired}");
    // Words that merely mention it (a proxy's page, say) are not a kind.
    let words = unreachable_reason(HttpFailure::other(
        "connection reset after the proxy said UnknownIssuer",
    ));
    assert!(!words.contains(HINT), "{words}");
}
#[test]
fn servers_retry_applies_to_every_resume_until_the_bound() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(&req, 200, &[SSE], b"id: e1\nretry: 250\ndata: \n\n");
    for attempt in 1..=5 {
        assert_eq!(h.step(), Duration::from_millis(250), "attempt {attempt}");
        let resume = h.last_send();
        assert_eq!(resume.method, Method::Get, "attempt {attempt}");
        assert_eq!(header(&resume, "last-event-id"), Some("e1"));
        h.respond(&resume, 200, &[SSE], b"");
    }
    let reason = h.transport_error(call);
    assert!(reason.contains("could not be resumed"), "{reason}");
}

#[test]
fn refused_resume_keeps_the_last_event_id_for_the_next_attempt() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(&req, 200, &[SSE], b"id: e1\nretry: 250\ndata: \n\n");
    h.step();
    let first = h.last_send();
    h.respond(&first, 503, &[], b"Service Unavailable");
    h.step();
    let second = h.last_send();
    assert_eq!(second.method, Method::Get);
    assert_ne!(second.exchange, first.exchange);
    assert_eq!(header(&second, "last-event-id"), Some("e1"));
    let answer = sse_event(Some("e2"), &response(&rpc(&req)["id"], text_result("ok")));
    h.respond(&second, 200, &[SSE], answer.as_bytes());
    assert_eq!(h.completed_text(call), "ok");
}

#[test]
fn stream_ending_without_any_event_id_fails_the_call_at_once() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    let sends = h.sends().len();
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "working"}});
    h.respond(&req, 200, &[SSE], sse_event(None, &log).as_bytes());
    let reason = h.transport_error(call);
    assert!(reason.contains("no event id"), "{reason}");
    h.advance(Duration::from_secs(60));
    assert_eq!(h.sends().len(), sends, "no resume without an id");
    assert!(h.posts("notifications/cancelled").is_empty());
}

// ---------------------------------------------------------------------------
// 7. Session expiry
// ---------------------------------------------------------------------------

/// Answers the fresh `initialize` with [`SID2`] and its `initialized` 202.
fn reinitialize(h: &mut Harness) {
    let inits = h.posts("initialize");
    assert_eq!(inits.len(), 2, "one fresh initialize");
    let init = inits[1].clone();
    assert_eq!(header(&init, "mcp-session-id"), None);
    assert_eq!(header(&init, "mcp-protocol-version"), None);
    assert_eq!(header(&init, "authorization"), Some(TOKEN));
    let body = response(&rpc(&init)["id"], init_result()).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID2)],
        body.as_bytes(),
    );
    let initialized = h.last_post("notifications/initialized");
    assert_eq!(header(&initialized, "mcp-session-id"), Some(SID2));
    h.accept(&initialized);
    h.open_stream();
}

#[test]
fn call_answered_404_reinitializes_and_resends_the_call_once_with_the_new_session_id() {
    let mut h = Harness::new();
    let server_stream = h.ready();
    let (call, req) = h.call("echo", json!({"n": 1}));
    h.respond(&req, 404, &[], b"Not Found");
    assert!(h.completion(call).is_none(), "the call is still in flight");
    assert_eq!(
        h.posts("tools/call").len(),
        1,
        "it waits for the fresh session"
    );
    assert!(
        h.aborted().contains(&server_stream.exchange),
        "the old session's stream is dropped"
    );
    reinitialize(&mut h);
    let calls = h.posts("tools/call");
    assert_eq!(calls.len(), 2, "re-sent exactly once");
    let resent = &calls[1];
    assert_eq!(resent.body, req.body, "the same message");
    assert_eq!(header(resent, "mcp-session-id"), Some(SID2));
    assert_eq!(header(resent, "mcp-protocol-version"), Some(VERSION));
    // The new session gets its own server stream.
    let get = h.with_method(Method::Get).pop().expect("a GET");
    assert_eq!(header(&get, "mcp-session-id"), Some(SID2));
    h.answer_json(resent, text_result("again"));
    assert_eq!(h.completed_text(call), "again");
    assert_eq!(h.posts("initialize").len(), 2);
    assert!(h.closed().is_none());
}

/// Handshake and discovery of a server offering subscriptions, session
/// [`SID`]; `a://1` subscribed to (answered). Returns the GET stream.
fn subscribed(h: &mut Harness) -> HttpRequest {
    let stream = h.handshake(json!({
        "protocolVersion": VERSION,
        "capabilities": {"tools": {}, "resources": {"subscribe": true}},
        "serverInfo": {"name": "scripted", "version": "1.0"}
    }));
    let resources = h.last_post("resources/list");
    h.answer_json(&resources, json!({"resources": []}));
    let templates = h.last_post("resources/templates/list");
    h.answer_json(&templates, json!({"resourceTemplates": []}));
    assert!(h.events.iter().any(|e| matches!(e, Event::Ready(_))));
    let request = FeatureRequest::SubscribeResource(SubscribeParams {
        uri: "a://1".into(),
    });
    let _ = h.transport.request(h.now, &request).expect("ready");
    h.drain();
    let subscribe = h.last_post("resources/subscribe");
    h.answer_json(&subscribe, json!({}));
    stream
}

#[test]
fn a_2025_session_that_replaced_an_expired_one_is_subscribed_again_and_the_host_told() {
    let mut h = Harness::new();
    subscribed(&mut h);
    let (_, req) = h.call("echo", json!({}));
    h.respond(&req, 404, &[], b"Session not found");
    reinitialize(&mut h);
    let again = h.posts("resources/subscribe");
    assert_eq!(again.len(), 2, "subscribed again, of rho's own");
    assert_eq!(rpc(&again[1])["params"], json!({"uri": "a://1"}));
    assert_eq!(header(&again[1], "mcp-session-id"), Some(SID2));
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::ResourceWatchRenewed { .. })),
        "not before its answer"
    );
    h.answer_json(&again[1], json!({}));
    assert!(
        h.events.iter().any(
            |e| matches!(e, Event::ResourceWatchRenewed { uris } if uris == &["a://1".to_owned()])
        ),
        "{:?}",
        h.events
    );
}

#[test]
fn a_subscription_the_replacing_session_refuses_ends_and_the_host_is_told() {
    let mut h = Harness::new();
    subscribed(&mut h);
    let (_, req) = h.call("echo", json!({}));
    h.respond(&req, 404, &[], b"Session not found");
    reinitialize(&mut h);
    let again = h.last_post("resources/subscribe");
    let body = json!({"jsonrpc": "2.0", "id": rpc(&again)["id"],
        "error": {"code": -32002, "message": "no such resource now"}})
    .to_string();
    h.respond(&again, 200, &[JSON], body.as_bytes());
    let ended = h.events.iter().find_map(|e| match e {
        Event::ResourceWatchEnded { uris, end } => Some((uris.clone(), end.clone())),
        _ => None,
    });
    match ended {
        Some((uris, WatchEnd::NotRenewed { reason })) => {
            assert_eq!(uris, ["a://1"]);
            assert!(reason.contains("no such resource now"), "{reason}");
        }
        other => panic!("expected the watch's end, got {other:?}"),
    }
    // Not renewed, and not held.
    assert!(
        !h.events
            .iter()
            .any(|e| matches!(e, Event::ResourceWatchRenewed { .. }))
    );
}

#[test]
fn resent_call_answered_404_again_fails_without_looping() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(&req, 404, &[], b"");
    reinitialize(&mut h);
    let resent = h.last_post("tools/call");
    h.respond(&resent, 404, &[], b"");
    let reason = h.transport_error(call);
    assert!(reason.contains("expired the session again"), "{reason}");
    h.advance(Duration::from_secs(60));
    assert_eq!(
        h.posts("initialize").len(),
        2,
        "exactly two initialize POSTs"
    );
    assert_eq!(h.posts("tools/call").len(), 2);
}

#[test]
fn bad_request_naming_a_missing_session_recovers_like_404() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(
        &req,
        400,
        &[JSON],
        br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
    );
    assert!(h.completion(call).is_none());
    reinitialize(&mut h);
    let resent = h.last_post("tools/call");
    assert_eq!(header(&resent, "mcp-session-id"), Some(SID2));
    h.answer_json(&resent, text_result("recovered"));
    assert_eq!(h.completed_text(call), "recovered");
}

#[test]
fn bad_request_with_an_unrelated_body_fails_only_that_call_with_the_status() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(
        &req,
        400,
        &[("content-type", "text/plain")],
        b"Bad Request: malformed arguments",
    );
    let reason = h.transport_error(call);
    assert!(reason.contains("400"), "{reason}");
    assert!(reason.contains("malformed arguments"), "{reason}");
    assert_eq!(h.posts("initialize").len(), 1, "no recovery");
    // The session is fine: the next call goes through on the same session.
    let (next, req) = h.call("echo", json!({}));
    assert_eq!(header(&req, "mcp-session-id"), Some(SID));
    h.answer_json(&req, text_result("fine"));
    assert_eq!(h.completed_text(next), "fine");
}

// ---------------------------------------------------------------------------
// 8. Header precedence
// ---------------------------------------------------------------------------

fn http_config(entry: &str) -> config::HttpConfig {
    let text = format!(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"{URL}\"\n{entry}\n"
    );
    let parsed = config::parse(&text, "config.toml").expect("the file parses");
    let server = parsed.get("remote").expect("the entry exists");
    match &server.config {
        Ok(server) => match &server.transport {
            Transport::StreamableHttp(http) => http.clone(),
            other => panic!("expected streamable_http, got {other:?}"),
        },
        Err(error) => panic!("entry error: {error}"),
    }
}

fn ambient(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn env_headers_come_after_literal_ones_and_win_a_case_insensitive_collision() {
    let config = http_config(
        "headers = { authorization = \"Bearer literal\", X-Tenant = \"t1\" }\n\
         headers_from_env = { Authorization = \"MCP_TOKEN\", X-Trace = \"TRACE\" }",
    );
    let resolved = resolve_headers(
        "remote",
        &ambient(&[("MCP_TOKEN", TOKEN), ("TRACE", "abc"), ("OTHER", "x")]),
        &config,
    )
    .expect("resolves");
    assert_eq!(
        resolved,
        ambient(&[
            ("X-Tenant", "t1"),
            ("Authorization", TOKEN),
            ("X-Trace", "abc")
        ])
    );
    // What the transport sends follows.
    let h = Harness::with(HttpOptions::new(config.url.clone(), resolved));
    let init = h.last_send();
    assert_eq!(header_count(&init, "authorization"), 1);
    assert_eq!(header(&init, "authorization"), Some(TOKEN));
    assert_eq!(header(&init, "x-trace"), Some("abc"));
}

#[test]
fn missing_ambient_variable_is_an_error_naming_the_header_and_the_variable() {
    let config = http_config("headers_from_env = { Authorization = \"MCP_TOKEN\" }");
    let error = resolve_headers("remote", &ambient(&[("OTHER", "x")]), &config)
        .expect_err("unset variable");
    assert!(
        matches!(&error, HeaderError::MissingVariable { variable, .. } if variable == "MCP_TOKEN"),
        "{error:?}"
    );
    let error = error.to_string();
    assert!(error.contains("`remote`"), "{error}");
    assert!(error.contains("`Authorization`"), "{error}");
    assert!(error.contains("`MCP_TOKEN`"), "{error}");
}

#[test]
fn configured_accept_or_session_headers_never_override_the_transports_own() {
    let config = http_config(
        "headers = { Accept = \"text/html\", Mcp-Session-Id = \"forged\", MCP-param-Region = \"forged\", X-Kept = \"yes\" }\n\
         headers_from_env = { MCP-PROTOCOL-VERSION = \"VERSION\", content-type = \"CT\" }",
    );
    let resolved = resolve_headers(
        "remote",
        &ambient(&[("VERSION", "1999-01-01"), ("CT", "text/plain")]),
        &config,
    )
    .expect("resolves");
    let mut h = Harness::with(HttpOptions::new(config.url.clone(), resolved));
    let init = h.last_send();
    assert_eq!(header_count(&init, "accept"), 1);
    assert_eq!(
        header(&init, "accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(header_count(&init, "content-type"), 1);
    assert_eq!(header(&init, "content-type"), Some("application/json"));
    assert_eq!(header(&init, "mcp-session-id"), None);
    assert_eq!(header(&init, "mcp-protocol-version"), None);
    assert_eq!(header(&init, "mcp-param-region"), None);
    assert_eq!(header(&init, "x-kept"), Some("yes"));
    h.ready();
    for req in h.sends().into_iter().skip(1) {
        assert_eq!(header_count(req, "mcp-session-id"), 1, "{req:?}");
        assert_eq!(header(req, "mcp-session-id"), Some(SID), "{req:?}");
        assert_eq!(header_count(req, "mcp-protocol-version"), 1, "{req:?}");
        assert_eq!(
            header(req, "mcp-protocol-version"),
            Some(VERSION),
            "{req:?}"
        );
        assert_eq!(header_count(req, "accept"), 1, "{req:?}");
        assert_ne!(header(req, "accept"), Some("text/html"), "{req:?}");
    }
}

// ---------------------------------------------------------------------------
// 9. Redirects
// ---------------------------------------------------------------------------

#[test]
fn redirect_on_a_call_fails_it_with_status_and_origin_aborts_and_is_never_followed() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.head(
        &req,
        302,
        &[("Location", "https://elsewhere.example:8443/x")],
    );
    let reason = h.transport_error(call);
    assert!(reason.contains("302"), "{reason}");
    assert!(
        reason.contains("https://elsewhere.example:8443"),
        "{reason}"
    );
    assert!(h.aborted().contains(&req.exchange));
    // Whatever else arrives for it is ignored.
    h.body(&req, b"<html>moved</html>");
    h.end(&req);
    h.advance(Duration::from_secs(60));
    for sent in h.sends() {
        assert_eq!(sent.url.as_str(), URL, "{sent:?}");
    }
    assert!(h.closed().is_none(), "only the call fails");
}

#[test]
fn redirect_during_initialize_closes_the_session_with_the_redirect_reason() {
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    h.head(
        &init,
        307,
        &[("location", "https://elsewhere.example:8443/mcp")],
    );
    let reason = h.closed().expect("closed").to_string();
    assert!(reason.contains("307"), "{reason}");
    assert!(
        reason.contains("https://elsewhere.example:8443"),
        "{reason}"
    );
    assert!(h.aborted().contains(&init.exchange));
    assert_eq!(h.sends().len(), 1, "nothing else was sent");
    assert!(h.sends().iter().all(|r| r.url.as_str() == URL));
    assert_eq!(h.transport.poll_timeout(), None);
}

// ---------------------------------------------------------------------------
// 10. Close
// ---------------------------------------------------------------------------

#[test]
fn close_sends_delete_with_the_session_id_and_reports_closed_after_its_end() {
    let mut h = Harness::new();
    let stream = h.ready();
    h.transport.close(h.now);
    h.drain();
    assert!(
        h.aborted().contains(&stream.exchange),
        "streams are dropped"
    );
    let delete = h.last_send();
    assert_eq!(delete.method, Method::Delete);
    assert_eq!(delete.url.as_str(), URL);
    assert_eq!(header(&delete, "mcp-session-id"), Some(SID));
    assert_eq!(header(&delete, "authorization"), Some(TOKEN));
    assert!(delete.body.is_empty());
    assert!(h.closed().is_none(), "not before the DELETE finished");
    h.head(&delete, 200, &[]);
    assert!(h.closed().is_none(), "not before the DELETE finished");
    h.end(&delete);
    assert_eq!(h.closed(), Some(&CloseReason::Requested));
    assert!(matches!(h.events.last(), Some(Event::Closed(_))));
    assert_eq!(h.transport.poll_timeout(), None);
}

#[test]
fn close_accepts_405_to_delete() {
    let mut h = Harness::new();
    h.ready();
    h.transport.close(h.now);
    h.drain();
    let delete = h.last_send();
    assert_eq!(delete.method, Method::Delete);
    h.respond(
        &delete,
        405,
        &[("Allow", "GET, POST")],
        b"Method Not Allowed",
    );
    assert_eq!(h.closed(), Some(&CloseReason::Requested));
}

#[test]
fn close_gives_up_on_a_silent_delete_after_delete_timeout() {
    let mut o = options();
    o.delete_timeout = Duration::from_millis(1500);
    let mut h = Harness::with(o);
    h.ready();
    h.transport.close(h.now);
    h.drain();
    assert_eq!(h.last_send().method, Method::Delete);
    assert_eq!(h.next_deadline_in(), Some(Duration::from_millis(1500)));
    assert_eq!(h.transport.timeout_reason(), Some(Timer::Delete));
    h.advance(Duration::from_millis(1499));
    assert!(h.closed().is_none());
    h.advance(Duration::from_millis(1));
    assert_eq!(h.closed(), Some(&CloseReason::Requested));
    assert_eq!(h.transport.poll_timeout(), None);
}

#[test]
fn close_without_a_session_id_is_immediate_and_sends_no_delete() {
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    let body = response(&json!(0), init_result()).to_string();
    h.respond(&init, 200, &[JSON], body.as_bytes());
    h.accept(&h.last_post("notifications/initialized"));
    h.open_stream();
    h.answer_json(&h.last_post("tools/list"), json!({"tools": []}));
    assert!(!h.transport.has_session_id());
    for req in h.sends().into_iter().skip(1) {
        assert_eq!(header(req, "mcp-session-id"), None, "{req:?}");
    }
    h.transport.close(h.now);
    h.drain();
    assert_eq!(h.closed(), Some(&CloseReason::Requested));
    assert!(h.with_method(Method::Delete).is_empty());
}

// ---------------------------------------------------------------------------
// 11. Secrets
// ---------------------------------------------------------------------------

#[test]
fn debug_output_never_shows_header_values_or_the_session_id() {
    let secrets = [TOKEN, TENANT, SID];
    let mut h = Harness::new();
    h.ready();
    let (_, req) = h.call("echo", json!({}));
    h.respond(&req, 200, &[SSE], b"id: e1\nretry: 250\ndata: \n\n");
    h.step(); // the resume GET
    h.transport.close(h.now);
    h.drain();
    let methods: Vec<Method> = h.sends().iter().map(|r| r.method).collect();
    for method in [Method::Post, Method::Get, Method::Delete] {
        assert!(methods.contains(&method), "{methods:?}");
    }
    let mut printed: Vec<String> = h.outputs.iter().map(|o| format!("{o:?}")).collect();
    printed.extend(h.sends().iter().map(|r| format!("{r:?}")));
    printed.extend(h.sends().iter().map(|r| format!("{r:#?}")));
    printed.push(format!("{:?}", options()));
    printed.push(format!("{:#?}", options()));
    printed.push(format!("{:?}", h.transport));
    for text in &printed {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret} leaked in {text}");
        }
    }
    // The names still show, so a person can see what was sent.
    let request = format!("{:?}", h.sends()[0]);
    assert!(request.contains("Authorization"), "{request}");
}

// ---------------------------------------------------------------------------
// 12. Keep-alive ping
// ---------------------------------------------------------------------------

fn ping_harness() -> Harness {
    let mut o = options();
    o.ping_interval = Duration::from_secs(20);
    let mut h = Harness::with(o);
    h.ready();
    h
}

#[test]
fn ping_goes_out_at_the_interval_and_its_answer_is_reported() {
    let mut h = ping_harness();
    assert_eq!(h.next_deadline_in(), Some(Duration::from_secs(20)));
    assert_eq!(h.step(), Duration::from_secs(20));
    let ping = h.last_send();
    assert_eq!(ping.method, Method::Post);
    assert_eq!(rpc_method(&ping), "ping");
    assert_eq!(header(&ping, "mcp-session-id"), Some(SID));
    h.answer_json(&ping, json!({}));
    assert_eq!(h.events.last(), Some(&Event::PingAnswered));
    assert_eq!(h.next_deadline_in(), Some(Duration::from_secs(20)));
}

#[test]
fn unanswered_ping_fails_after_request_timeout_and_the_session_stays_usable() {
    let mut h = ping_harness();
    h.step();
    let ping = h.last_post("ping");
    assert_eq!(h.next_deadline_in(), Some(Duration::from_secs(3)));
    h.step();
    assert!(
        matches!(h.events.last(), Some(Event::PingFailed(why)) if why.contains("3 s")),
        "{:?}",
        h.events
    );
    // A late answer changes nothing; calls still work.
    h.answer_json(&ping, json!({}));
    assert!(!h.events.contains(&Event::PingAnswered));
    let (call, req) = h.call("echo", json!({}));
    h.answer_json(&req, text_result("alive"));
    assert_eq!(h.completed_text(call), "alive");
    assert!(h.closed().is_none());
}

/// A ready session with one call answered on its POST's SSE stream,
/// the stream still open.
fn answered_on_its_stream() -> (Harness, CallId, HttpRequest) {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.head(&req, 200, &[SSE]);
    let answer = sse_event(Some("a1"), &response(&rpc(&req)["id"], text_result("hi")));
    h.body(&req, answer.as_bytes());
    assert_eq!(h.completed_text(call), "hi");
    (h, call, req)
}

#[test]
fn an_answered_post_stream_is_read_to_its_end_not_aborted() {
    // Aborting it would cost the executor the connection it keeps alive
    // for the next request; the server ends it right after the answer.
    let (mut h, _, req) = answered_on_its_stream();
    assert!(!h.aborted().contains(&req.exchange), "{:?}", h.outputs);
    assert_eq!(
        h.transport.timeout_reason(),
        Some(rho_proto_core::session::Timer::Linger)
    );
    h.end(&req);
    // Ended by itself: nothing left to abort, ever.
    assert_ne!(
        h.transport.timeout_reason(),
        Some(rho_proto_core::session::Timer::Linger)
    );
    h.advance(Duration::from_secs(5));
    assert!(!h.aborted().contains(&req.exchange), "{:?}", h.outputs);
    assert!(h.closed().is_none());
}

#[test]
fn an_answered_post_stream_left_open_is_aborted_a_second_later_and_its_rest_dropped() {
    let (mut h, call, req) = answered_on_its_stream();
    // What it carries meanwhile reaches nobody, garbage included.
    let late = sse_event(Some("a2"), &response(&rpc(&req)["id"], text_result("late")));
    h.body(&req, late.as_bytes());
    h.body(&req, b"data: not json\n\n");
    h.advance(Duration::from_millis(900));
    assert!(!h.aborted().contains(&req.exchange));
    h.advance(Duration::from_millis(200));
    assert_eq!(
        h.aborted().iter().filter(|x| **x == req.exchange).count(),
        1,
        "{:?}",
        h.outputs
    );
    assert_eq!(h.completed_text(call), "hi");
    assert!(h.closed().is_none());
    // Its end after the abort changes nothing.
    h.end(&req);
    assert_eq!(
        h.aborted().iter().filter(|x| **x == req.exchange).count(),
        1
    );
}

#[test]
fn a_cancelled_calls_stream_is_aborted_at_once() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.head(&req, 200, &[SSE]);
    h.transport.cancel_call(h.now, call);
    h.drain();
    assert!(h.aborted().contains(&req.exchange), "{:?}", h.outputs);
    // The 2025 era posts notifications/cancelled, and says so.
    assert_eq!(h.posts("notifications/cancelled").len(), 1);
    assert!(
        matches!(
            h.completion(call),
            Some(Err(CallError::Cancelled {
                notice: CancelNotice::Told,
                ..
            }))
        ),
        "{:?}",
        h.completion(call)
    );
}

#[test]
fn a_lingering_stream_is_aborted_at_close() {
    let (mut h, _, req) = answered_on_its_stream();
    h.transport.close(h.now);
    h.drain();
    assert!(h.aborted().contains(&req.exchange), "{:?}", h.outputs);
}

#[test]
fn exchange_of_a_ping_that_failed_on_its_deadline_is_aborted() {
    // The executor reads bodies without a timeout and relies on the core
    // to abort exchanges it gave up on.
    let mut h = ping_harness();
    h.step();
    let ping = h.last_post("ping");
    h.head(&ping, 200, &[SSE]);
    h.step();
    assert!(matches!(h.events.last(), Some(Event::PingFailed(_))));
    assert!(h.aborted().contains(&ping.exchange), "{:?}", h.outputs);
}

// ---------------------------------------------------------------------------
// 13. Error statuses
// ---------------------------------------------------------------------------

#[test]
fn unauthorized_initialize_closes_the_session_naming_authorization() {
    let mut h = Harness::new();
    let init = h.last_post("initialize");
    h.respond(
        &init,
        401,
        &[("WWW-Authenticate", "Bearer realm=\"mcp\"")],
        b"",
    );
    let reason = h.closed().expect("closed");
    assert!(reason.is_startup_failure());
    let text = reason.to_string();
    assert!(text.contains("401"), "{text}");
    assert!(text.contains("authorization"), "{text}");
    assert!(h.with_method(Method::Delete).is_empty());
}

#[test]
fn error_status_with_a_jsonrpc_error_for_the_request_is_that_calls_rpc_error() {
    let mut h = Harness::new();
    h.ready();
    for status in [422, 500] {
        let (call, req) = h.call("echo", json!({}));
        let body = json!({"jsonrpc": "2.0", "id": rpc(&req)["id"],
            "error": {"code": -32602, "message": "bad arguments"}})
        .to_string();
        h.respond(&req, status, &[JSON], body.as_bytes());
        match h.completion(call) {
            Some(Err(CallError::Rpc { error, .. })) => {
                assert_eq!(error.code, -32602, "{status}");
                assert_eq!(error.message, "bad arguments", "{status}");
            }
            other => panic!("HTTP {status}: expected an RPC error, got {other:?}"),
        }
    }
    assert!(h.closed().is_none());
}

// ---------------------------------------------------------------------------
// 14. Progress
// ---------------------------------------------------------------------------

#[test]
fn progress_on_the_calls_stream_arrives_before_its_completion() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({"steps": 2}));
    let token = rpc(&req)["params"]["_meta"]["progressToken"].clone();
    assert_eq!(token, json!(call.wire_id()));
    h.head(&req, 200, &[SSE]);
    let notify = |progress: f64| {
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": progress, "total": 2, "message": "step"}})
    };
    h.body(&req, sse_event(Some("p1"), &notify(1.0)).as_bytes());
    h.body(&req, sse_event(Some("p2"), &notify(2.0)).as_bytes());
    let done = sse_event(Some("p3"), &response(&rpc(&req)["id"], text_result("done")));
    h.body(&req, done.as_bytes());
    let seen: Vec<String> = h
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Progress { call: c, progress } if *c == call => Some(format!(
                "progress {}/{:?}",
                progress.progress, progress.total
            )),
            Event::CallCompleted { call: c, .. } if *c == call => Some("completed".into()),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        ["progress 1/Some(2.0)", "progress 2/Some(2.0)", "completed"]
    );
    assert_eq!(h.completed_text(call), "done");
}

#[test]
fn progress_with_an_unknown_token_yields_nothing() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.head(&req, 200, &[SSE]);
    let events = h.events.len();
    for token in [json!(999), json!("not-ours"), json!(0)] {
        let notify = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 1}});
        h.body(&req, sse_event(None, &notify).as_bytes());
    }
    assert_eq!(h.events.len(), events, "{:?}", &h.events[events..]);
    assert!(h.completion(call).is_none());
}

// ---------------------------------------------------------------------------
// More edges
// ---------------------------------------------------------------------------

#[test]
fn a_404_for_a_message_sent_under_the_replaced_session_resends_without_another_initialize() {
    let mut h = Harness::new();
    h.ready();
    let (first, first_req) = h.call("echo", json!({"n": 1}));
    let (second, second_req) = h.call("echo", json!({"n": 2}));
    h.respond(&first_req, 404, &[], b"");
    reinitialize(&mut h);
    // The second call's 404 was still on its way: it belongs to the old
    // session, which is already replaced.
    h.respond(&second_req, 404, &[], b"");
    assert_eq!(h.posts("initialize").len(), 2, "no third initialize");
    assert!(h.transport.has_session_id());
    let calls = h.posts("tools/call");
    assert_eq!(calls.len(), 4, "each call re-sent once");
    for resent in &calls[2..] {
        assert_eq!(header(resent, "mcp-session-id"), Some(SID2), "{resent:?}");
    }
    for resent in &calls[2..] {
        h.answer_json(resent, text_result("ok"));
    }
    assert_eq!(h.completed_text(first), "ok");
    assert_eq!(h.completed_text(second), "ok");
}

#[test]
fn server_stream_that_ends_is_reopened_with_its_last_event_id() {
    let mut o = options();
    o.default_retry = Duration::from_millis(500);
    let mut h = Harness::with(o);
    let get = h.ready();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    h.body(&get, sse_event(Some("g7"), &note).as_bytes());
    h.end(&get);
    assert_eq!(h.step(), Duration::from_millis(500));
    let again = h.last_send();
    assert_eq!(again.method, Method::Get);
    assert_eq!(header(&again, "last-event-id"), Some("g7"));
    assert_eq!(header(&again, "mcp-session-id"), Some(SID));
}

// ---------------------------------------------------------------------------
// The server stream opens before discovery
// ---------------------------------------------------------------------------

/// Answers `initialize` with [`SID`] and `initialized` with 202; the GET
/// for the server's stream is the last request, returned unanswered.
fn handshake_until_the_get(h: &mut Harness) -> HttpRequest {
    let init = h.last_post("initialize");
    let body = response(&rpc(&init)["id"], init_result()).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID)],
        body.as_bytes(),
    );
    h.accept(&h.last_post("notifications/initialized"));
    let get = h.last_send();
    assert_eq!(get.method, Method::Get, "{:?}", h.sends());
    get
}

/// Method and JSON-RPC method of every request sent, in order.
fn exchange_order(h: &Harness) -> Vec<String> {
    h.sends()
        .into_iter()
        .map(|r| match r.method {
            Method::Post => format!("POST {}", rpc_method(r)),
            other => other.as_str().to_owned(),
        })
        .collect()
}

fn is_ready(h: &Harness) -> bool {
    h.events.iter().any(|e| matches!(e, Event::Ready(_)))
}

#[test]
fn discovery_waits_for_the_server_streams_head_then_ready() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    assert!(h.posts("tools/list").is_empty(), "held for the stream");
    h.advance(Duration::from_millis(1500));
    assert!(
        h.posts("tools/list").is_empty(),
        "still held, within the bound"
    );
    h.head(&get, 200, &[SSE]);
    h.answer_json(&h.last_post("tools/list"), json!({"tools": [tool("echo")]}));
    assert!(is_ready(&h), "{:?}", h.events);
    assert_eq!(
        exchange_order(&h),
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST tools/list"
        ]
    );
    // A server request on the stream, with no request of rho's behind it,
    // is answered: the stream is the server's way in.
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    h.body(&get, sse_event(Some("g1"), &ping).as_bytes());
    assert_eq!(
        rpc(&h.last_post("<response>")),
        json!({"jsonrpc": "2.0", "id": 7, "result": {}})
    );
}

#[test]
fn a_log_level_and_discovery_wait_together_and_go_in_their_order() {
    let mut o = session_options();
    o.log_level = Some(config::LogLevel::Debug);
    let mut h = Harness::connect(o, options());
    let init = h.last_post("initialize");
    let mut result = init_result();
    result["capabilities"]["logging"] = json!({});
    let body = response(&rpc(&init)["id"], result).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID)],
        body.as_bytes(),
    );
    assert_eq!(
        exchange_order(&h),
        ["POST initialize", "POST notifications/initialized"],
        "nothing else before initialized is answered"
    );
    h.accept(&h.last_post("notifications/initialized"));
    let get = h.last_send();
    h.head(&get, 200, &[SSE]);
    assert_eq!(
        exchange_order(&h),
        [
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "POST logging/setLevel",
            "POST tools/list"
        ]
    );
}

#[test]
fn a_405_to_the_server_stream_releases_discovery_and_ready_comes_without_a_stream() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    assert!(h.posts("tools/list").is_empty(), "held for the stream");
    h.head(&get, 405, &[("Allow", "POST, DELETE")]);
    let list = h.last_post("tools/list");
    h.end(&get);
    h.answer_json(&list, json!({"tools": [tool("echo")]}));
    assert!(is_ready(&h), "{:?}", h.events);
    for _ in 0..5 {
        h.advance(Duration::from_secs(600));
    }
    assert_eq!(h.with_method(Method::Get).len(), 1, "no stream, no retry");
    let (call, req) = h.call("echo", json!({}));
    h.answer_json(&req, text_result("without a stream"));
    assert_eq!(h.completed_text(call), "without a stream");
}

#[test]
fn a_get_that_never_answers_holds_discovery_only_for_the_bound() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    assert_eq!(h.next_deadline_in(), Some(Duration::from_secs(2)));
    assert_eq!(h.step(), Duration::from_secs(2));
    h.answer_json(&h.last_post("tools/list"), json!({"tools": [tool("echo")]}));
    assert!(is_ready(&h), "{:?}", h.events);
    assert!(!h.aborted().contains(&get.exchange), "the GET carries on");
    // When its head comes after all, it is the server's stream.
    h.head(&get, 200, &[SSE]);
    let ping = json!({"jsonrpc": "2.0", "id": "late", "method": "ping"});
    h.body(&get, sse_event(Some("g1"), &ping).as_bytes());
    assert_eq!(h.posts("<response>").len(), 1);
    assert_eq!(h.posts("tools/list").len(), 1, "sent once, not again");
}

#[test]
fn the_wait_for_the_server_stream_keeps_half_of_a_short_startup_budget_for_discovery() {
    let mut o = session_options();
    o.startup_timeout = Duration::from_secs(1);
    let mut h = Harness::connect(o, options());
    h.advance(Duration::from_millis(200));
    handshake_until_the_get(&mut h);
    // 800 ms of the budget are left: the wait takes at most half of it.
    assert_eq!(h.step(), Duration::from_millis(400));
    assert_eq!(h.posts("tools/list").len(), 1);
}

#[test]
fn a_server_stream_get_that_cannot_connect_releases_discovery_at_once() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    assert!(h.posts("tools/list").is_empty(), "held for the stream");
    h.transport
        .handle_exchange_failed(h.now, get.exchange, HttpFailure::other("connection reset"));
    h.drain();
    h.answer_json(&h.last_post("tools/list"), json!({"tools": []}));
    assert!(is_ready(&h), "{:?}", h.events);
}

#[test]
fn after_a_fresh_initialize_the_resent_call_waits_for_the_new_server_stream() {
    let mut h = Harness::new();
    h.ready();
    let (call, req) = h.call("echo", json!({}));
    h.respond(&req, 404, &[], b"Session not found");
    let init = h.last_post("initialize");
    let body = response(&rpc(&init)["id"], init_result()).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID2)],
        body.as_bytes(),
    );
    h.accept(&h.last_post("notifications/initialized"));
    assert_eq!(h.posts("tools/call").len(), 1, "held for the new stream");
    let get = h.last_send();
    assert_eq!(get.method, Method::Get);
    assert_eq!(header(&get, "mcp-session-id"), Some(SID2));
    h.head(&get, 200, &[SSE]);
    let resent = h.last_post("tools/call");
    assert_eq!(header(&resent, "mcp-session-id"), Some(SID2));
    h.answer_json(&resent, text_result("after"));
    assert_eq!(h.completed_text(call), "after");
}

// ---------------------------------------------------------------------------
// A session forgotten during discovery
// ---------------------------------------------------------------------------

/// Answers the DELETE a failing session sends; [`Event::Closed`] follows.
fn answer_delete(h: &mut Harness) {
    let delete = h.with_method(Method::Delete).pop().expect("a DELETE");
    h.respond(&delete, 200, &[], b"");
}

#[test]
fn tools_list_answered_404_during_discovery_starts_one_fresh_initialize_and_lists_again() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    h.head(&get, 200, &[SSE]);
    let list = h.last_post("tools/list");
    h.respond(&list, 404, &[], b"Session not found");
    assert!(h.closed().is_none(), "{:?}", h.events);
    assert!(
        h.aborted().contains(&get.exchange),
        "the old stream is dropped"
    );
    reinitialize(&mut h);
    let lists = h.posts("tools/list");
    assert_eq!(lists.len(), 2, "the listing is sent again, once");
    assert_eq!(lists[1].body, list.body);
    assert_eq!(header(&lists[1], "mcp-session-id"), Some(SID2));
    h.answer_json(&lists[1], json!({"tools": [tool("echo")]}));
    assert!(is_ready(&h), "{:?}", h.events);
    let (call, req) = h.call("echo", json!({}));
    assert_eq!(header(&req, "mcp-session-id"), Some(SID2));
    h.answer_json(&req, text_result("fresh"));
    assert_eq!(h.completed_text(call), "fresh");
}

#[test]
fn server_everythings_400_no_valid_session_during_discovery_recovers_too() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    h.head(&get, 200, &[SSE]);
    h.respond(
        &h.last_post("tools/list"),
        400,
        &[JSON],
        br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
    );
    reinitialize(&mut h);
    h.answer_json(&h.last_post("tools/list"), json!({"tools": [tool("echo")]}));
    assert!(is_ready(&h), "{:?}", h.events);
    assert_eq!(h.posts("initialize").len(), 2);
}

#[test]
fn the_resent_listing_expired_again_fails_the_server_clearly() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    h.head(&get, 200, &[SSE]);
    h.respond(&h.last_post("tools/list"), 404, &[], b"");
    reinitialize(&mut h);
    h.respond(&h.last_post("tools/list"), 404, &[], b"");
    answer_delete(&mut h);
    let reason = h.closed().expect("closed").to_string();
    assert!(reason.contains("expired the session again"), "{reason}");
    assert!(!is_ready(&h));
    for _ in 0..5 {
        h.advance(Duration::from_secs(60));
    }
    assert_eq!(h.posts("initialize").len(), 2, "exactly one fresh session");
}

#[test]
fn a_second_expiry_later_in_discovery_fails_the_server_naming_the_rule() {
    let mut h = Harness::new();
    let get = handshake_until_the_get(&mut h);
    h.head(&get, 200, &[SSE]);
    h.respond(&h.last_post("tools/list"), 404, &[], b"");
    reinitialize(&mut h);
    h.answer_json(
        &h.last_post("tools/list"),
        json!({"tools": [tool("a")], "nextCursor": "p2"}),
    );
    // The second page finds the fresh session forgotten as well.
    h.respond(&h.last_post("tools/list"), 404, &[], b"");
    answer_delete(&mut h);
    let reason = h.closed().expect("closed");
    assert!(reason.is_startup_failure());
    let text = reason.to_string();
    assert!(text.contains("again during startup"), "{text}");
    assert!(text.contains("404"), "{text}");
    assert_eq!(h.posts("initialize").len(), 2, "no third initialize");
}

/// Answers `initialize` for a server without tools: the session is ready
/// at once, while what it sends next waits for the server stream's GET
/// (returned unanswered).
fn ready_while_the_get_is_awaited(h: &mut Harness) -> HttpRequest {
    let init = h.last_post("initialize");
    let mut result = init_result();
    result["capabilities"] = json!({});
    let body = response(&rpc(&init)["id"], result).to_string();
    h.respond(
        &init,
        200,
        &[JSON, ("Mcp-Session-Id", SID)],
        body.as_bytes(),
    );
    assert!(is_ready(h), "{:?}", h.events);
    h.accept(&h.last_post("notifications/initialized"));
    let get = h.last_send();
    assert_eq!(get.method, Method::Get, "{:?}", h.sends());
    get
}

/// A call held back while the server stream's GET is awaited that the
/// host cancels, or that times out before the wait ends or as it ends,
/// never reached the server: neither it nor its cancellation is sent.
#[test]
fn a_call_that_ends_while_held_for_the_server_stream_is_never_posted_nor_cancelled() {
    for ends in [
        "cancelled",
        "timed out while held",
        "timed out as the wait ends",
    ] {
        let mut o = session_options();
        // The wait for the GET is 2 s.
        o.tool_timeout = match ends {
            "timed out as the wait ends" => Duration::from_secs(2),
            _ => Duration::from_secs(1),
        };
        let mut h = Harness::connect(o, options());
        let get = ready_while_the_get_is_awaited(&mut h);
        let call = h
            .transport
            .call_tool(h.now, "delete-everything", json!({}))
            .expect("ready");
        h.drain();
        assert!(h.posts("tools/call").is_empty(), "held for the stream");
        if ends == "cancelled" {
            h.transport.cancel_call(h.now, call);
            h.drain();
            assert!(matches!(
                h.completion(call),
                Some(Err(CallError::Cancelled { .. }))
            ));
        } else {
            h.step();
            assert!(matches!(
                h.completion(call),
                Some(Err(CallError::Timeout { .. }))
            ));
        }
        h.head(&get, 200, &[SSE]);
        assert!(
            h.posts("tools/call").is_empty(),
            "{ends}: {:?}",
            exchange_order(&h)
        );
        assert!(
            h.posts("notifications/cancelled").is_empty(),
            "{ends}: {:?}",
            exchange_order(&h)
        );
        // What comes after goes as usual, a cancellation included.
        let (later, req) = h.call("echo", json!({}));
        h.transport.cancel_call(h.now, later);
        h.drain();
        assert_eq!(h.posts("tools/call"), [req]);
        assert_eq!(h.posts("notifications/cancelled").len(), 1);
    }
}
