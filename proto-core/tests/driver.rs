//! The one driver every executor runs, driven here by a scripted server, a
//! fake clock and a reply "channel" that is just the call's ticket: what
//! each input turns into, in which order the effects come, how teardown
//! ends, and the runtime's startup wait and call admission.

// The fake clock needs one real `Instant` as its origin; after that, time
// only moves when a test says so.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_proto_core::config::{self, Config, ServerConfig};
use rho_proto_core::connection::{HttpInput, Output};
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::elicitation::{Form, FormAnswer};
use rho_proto_core::features::prompts::GetPromptParams;
use rho_proto_core::features::resource_subscriptions::{SubscribeParams, WatchEnd, WatchNotice};
use rho_proto_core::host::{Asked, HostServices, Responder};
use rho_proto_core::http::HttpOutput;
use rho_proto_core::runtime::backlog::{BACKLOG_POLL, Backlog, CALLER_ROOM};
use rho_proto_core::runtime::driver::{Driver, Effect, Report, Setup};
use rho_proto_core::runtime::driving::{
    Admission, Answer, CallUpdate, Command, Heard, STARTUP_MARGIN, Started, StartupError,
    StartupStep, StartupWait, TransportSetupError,
};
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::runtime::{Inventory, ToolCallError};
use rho_proto_core::session::{
    ApiMisuse, CallError, CancelNotice, CloseReason, Question, QuestionId, ServerLog,
    TaskAugmentation, Timer,
};
use rho_proto_core::wire::jsonrpc::{Incoming, Message, RequestId};
use serde_json::{Value, json};

mod common;

/// A caller's reply channel in these tests: the ticket of its call.
type Tag = u64;

const STDIO: &str = "[mcp.servers.demo]\ntransport = \"stdio\"\ncommand = \"demo-server\"\n\
                     startup_timeout_secs = 10\ntool_timeout_secs = 5\n";

fn parse(text: &str) -> Config {
    config::parse(text, "test.toml").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn server_config(text: &str) -> ServerConfig {
    parse(text).servers[0]
        .config
        .clone()
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// A person who declines every form.
struct Decliner;

impl Responder for Decliner {
    fn elicit(&self, _asked: &Asked, _form: &Form) -> FormAnswer {
        FormAnswer::Dismissed
    }
    fn confirm_sampling(&self, _asked: &Asked, _question: &str) -> bool {
        false
    }
}

/// One effect, as a test reads it.
#[derive(Debug)]
enum Seen {
    Sent(Message),
    Http(HttpOutput),
    Reply(Tag, CallUpdate),
    /// Progress, with the channel `caller` returned for it at the time.
    Progress(Option<Tag>),
    Startup(Result<Started, StartupError>),
    Ask(QuestionId, Question, Asked),
    Health(rho_proto_core::runtime::Health),
    Record,
    Log(ServerLog),
    Resource(String, WatchNotice),
    EndTransport,
    StartTransport,
}

impl Seen {
    fn label(&self) -> String {
        match self {
            Seen::Sent(Message::Request { method, .. })
            | Seen::Sent(Message::Notification { method, .. }) => format!("send {method}"),
            Seen::Sent(_) => "send response".into(),
            Seen::Http(HttpOutput::Send(request)) => format!("http {}", request.method.as_str()),
            Seen::Http(_) => "http abort".into(),
            Seen::Reply(tag, CallUpdate::Done(Ok(_))) => format!("reply {tag} ok"),
            Seen::Reply(tag, CallUpdate::Done(Err(_))) => format!("reply {tag} err"),
            Seen::Reply(tag, CallUpdate::Progress(_)) => format!("reply {tag} progress"),
            Seen::Reply(tag, CallUpdate::Answered(Ok(_))) => format!("reply {tag} answered"),
            Seen::Reply(tag, CallUpdate::Answered(Err(_))) => format!("reply {tag} answer err"),
            Seen::Progress(tag) => format!("progress {tag:?}"),
            Seen::Startup(Ok(_)) => "startup ok".into(),
            Seen::Startup(Err(_)) => "startup err".into(),
            Seen::Ask(..) => "ask".into(),
            Seen::Health(_) => "health".into(),
            Seen::Record => "record".into(),
            Seen::Log(_) => "log".into(),
            Seen::Resource(uri, WatchNotice::Updated) => format!("resource updated {uri}"),
            Seen::Resource(uri, WatchNotice::Renewed) => format!("resource renewed {uri}"),
            Seen::Resource(uri, WatchNotice::Ended(_)) => format!("resource ended {uri}"),
            Seen::Resource(uri, _) => format!("resource {uri}"),
            Seen::EndTransport => "end".into(),
            Seen::StartTransport => "start".into(),
        }
    }
}

struct Harness {
    now: Instant,
    start: Instant,
    driver: Driver<Tag>,
    seen: Vec<Seen>,
    /// What the driver was connected with, for a restart's transport.
    config: ServerConfig,
    host: HostServices,
}

impl Harness {
    fn stdio() -> Self {
        Self::with(STDIO, &HostServices::default(), false)
    }

    fn with(text: &str, host: &HostServices, record: bool) -> Self {
        let config = server_config(text);
        let start = Instant::now();
        let setup = Setup {
            config: &config,
            ambient: &[],
            workspace_root: None,
            host,
            record,
        };
        let driver = Driver::connect(setup, start).expect("the connection builds");
        let mut h = Self {
            now: start,
            start,
            driver,
            seen: Vec::new(),
            config,
            host: host.clone(),
        };
        h.drain();
        h.refuse_the_probe();
        h
    }

    /// A stdio server that does not know the 2026 era: the session falls
    /// back to the 2025 handshake. (`initialize` went right behind the
    /// probe; it is answered later.)
    fn refuse_the_probe(&mut self) {
        if self
            .seen
            .iter()
            .any(|s| s.label() == "send server/discover")
        {
            let id = self.request_id("server/discover");
            self.server_says(json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}
            }));
        }
    }

    /// The executor's part of a restart: starts "the process" (`started`)
    /// and hands the outcome to the driver; whether it kept it.
    fn restart_transport(&mut self, started: Result<Option<u32>, TransportSetupError>) -> bool {
        let setup = Setup {
            config: &self.config,
            ambient: &[],
            workspace_root: None,
            host: &self.host,
            record: false,
        };
        let kept = self.driver.restart_transport(setup, self.now, started);
        self.drain();
        if kept {
            self.refuse_the_probe();
        }
        kept
    }

    /// Takes every effect, bounded like the shared harnesses' drains.
    fn drain(&mut self) {
        let mut taken = 0;
        while let Some(effect) = self.driver.poll_effect() {
            common::count_drained(&mut taken, &effect);
            let seen = match effect {
                Effect::Transmit(Output::Write(bytes)) => {
                    assert_eq!(bytes.last(), Some(&b'\n'), "stdio writes end a line");
                    match Incoming::parse(&bytes).expect("valid JSON-RPC") {
                        Incoming::Single(message) => Seen::Sent(message),
                        Incoming::Batch(_) => panic!("never a batch"),
                    }
                }
                Effect::Transmit(Output::Http(output)) => Seen::Http(output),
                Effect::Reply(tag, update) => Seen::Reply(tag, update),
                Effect::Progress { call, progress } => {
                    let _ = progress;
                    Seen::Progress(self.driver.caller(call).copied())
                }
                Effect::Startup(outcome) => Seen::Startup(outcome),
                Effect::Ask {
                    question,
                    kind,
                    asked,
                } => Seen::Ask(question, kind, asked),
                Effect::Report(Report::Health(health)) => Seen::Health(health),
                Effect::Report(Report::Record(lines)) => {
                    assert!(!lines.is_empty(), "a record effect has lines");
                    Seen::Record
                }
                Effect::Report(Report::Log(log)) => Seen::Log(log),
                Effect::Report(Report::Resource { uri, notice }) => Seen::Resource(uri, notice),
                Effect::EndTransport => Seen::EndTransport,
                Effect::StartTransport => Seen::StartTransport,
            };
            self.seen.push(seen);
        }
    }

    /// Labels of everything seen since the last call.
    fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.seen)
            .iter()
            .map(Seen::label)
            .collect()
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
    }

    fn server_says(&mut self, line: Value) {
        let mut bytes = serde_json::to_vec(&line).expect("json");
        bytes.push(b'\n');
        self.driver.handle_stdout(self.now, &bytes);
        self.drain();
    }

    fn command(&mut self, command: Command<Tag>) {
        if let Err(refused) = self.driver.handle_command(self.now, command) {
            panic!("the open session takes the command, not refuse {refused:?}");
        }
        self.drain();
    }

    fn call(&mut self, ticket: u64) {
        self.command(Command::CallTool {
            ticket,
            tool: "echo".into(),
            arguments: json!({"text": "hi"}),
            budget: None,
            task: TaskAugmentation::default(),
            reply: ticket,
        });
    }

    /// The id and params of the last request sent.
    fn last_request(&self) -> (RequestId, String, Value) {
        self.seen
            .iter()
            .rev()
            .find_map(|s| match s {
                Seen::Sent(Message::Request { id, method, params }) => Some((
                    id.clone(),
                    method.clone(),
                    params.clone().unwrap_or(Value::Null),
                )),
                _ => None,
            })
            .expect("a request was sent")
    }

    fn answer_last(&mut self, result: Value) {
        let (id, _, _) = self.last_request();
        self.server_says(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn ready(&mut self, capabilities: Value) {
        self.answer_last(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "serverInfo": {"name": "scripted", "version": "1.0"}
        }));
        self.answer_last(json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}));
    }

    /// Readies the server and drops what that produced.
    fn ready_quietly(&mut self) {
        self.ready(json!({"tools": {}}));
        self.seen.clear();
    }

    fn finish(&mut self, stderr: Option<&str>) {
        self.driver.finish(self.now, stderr.map(str::to_owned));
        self.drain();
    }

    /// Makes call `ticket`, then the server exits (`exit`) before it
    /// answers: the call ends with the session's close, then the transport
    /// is to end. Returns the call's reason; what was seen is dropped.
    fn exit_during_call(&mut self, ticket: u64, exit: &str) -> String {
        self.call(ticket);
        self.seen.clear();
        self.driver
            .handle_stdout_closed(self.now, Some(exit.into()));
        self.drain();
        match std::mem::take(&mut self.seen).as_slice() {
            [
                Seen::Reply(
                    t,
                    CallUpdate::Done(Err(ToolCallError::Call(CallError::SessionClosed {
                        reason,
                        ..
                    }))),
                ),
                Seen::EndTransport,
            ] if *t == ticket => reason.clone(),
            other => panic!("expected the call's end, then the transport's, got {other:?}"),
        }
    }

    fn startup(&mut self) -> Result<Started, StartupError> {
        let at = self
            .seen
            .iter()
            .position(|s| matches!(s, Seen::Startup(_)))
            .unwrap_or_else(|| panic!("no startup report in {:?}", self.seen));
        match self.seen.remove(at) {
            Seen::Startup(outcome) => outcome,
            _ => unreachable!(),
        }
    }
}

// ----- connection setup -----

#[test]
fn connecting_probes_the_era_then_falls_back_to_initialize_and_nothing_else() {
    let mut h = Harness::stdio();
    assert_eq!(h.take(), ["send server/discover", "send initialize"]);
    assert!(!h.driver.is_closed());
    assert_eq!(h.driver.server(), "demo");
}

#[test]
fn a_header_from_an_unset_variable_fails_before_anything_starts() {
    let config = server_config(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://example.test/mcp\"\n\
         headers_from_env = { Authorization = \"MCP_TOKEN\" }\n",
    );
    let setup = Setup {
        config: &config,
        ambient: &[],
        workspace_root: None,
        host: &HostServices::default(),
        record: false,
    };
    match Driver::<Tag>::connect(setup, Instant::now()) {
        Err(StartupError::Headers(error)) => {
            assert!(error.to_string().contains("MCP_TOKEN"), "{error}")
        }
        other => panic!("expected a header error, got {other:?}"),
    }
}

#[test]
fn startup_reports_ready_once_with_the_fake_clocks_elapsed_time_and_the_pid() {
    let mut h = Harness::stdio();
    h.driver.transport_started(Some(4242));
    h.advance(Duration::from_millis(1500));
    h.ready(json!({"tools": {}}));
    let started = h.startup().expect("ready");
    assert_eq!(started.elapsed, Duration::from_millis(1500));
    assert_eq!(started.pid, Some(4242));
    assert_eq!(started.ready.tools[0].name, "echo");
    assert_eq!(
        h.take(),
        [
            "send server/discover",
            "send initialize",
            "send notifications/initialized",
            "send tools/list"
        ]
    );
    // Closing afterwards reports nothing more to startup.
    h.command(Command::Close);
    h.finish(None);
    assert!(h.take().iter().all(|l| !l.starts_with("startup")));
}

// ----- dispatch -----

#[test]
fn a_call_hears_its_progress_then_its_result_and_then_the_table_forgets_it() {
    let mut h = Harness::stdio();
    h.ready_quietly();
    h.call(7);
    let (id, method, params) = h.last_request();
    assert_eq!(method, "tools/call");
    let token = params["_meta"]["progressToken"].clone();
    assert!(!token.is_null(), "every call asks for progress: {params}");
    h.take();
    h.server_says(json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1, "total": 2}
    }));
    h.server_says(json!({
        "jsonrpc": "2.0", "id": id,
        "result": {"content": [{"type": "text", "text": "hi"}]}
    }));
    assert_eq!(h.take(), ["progress Some(7)", "reply 7 ok"]);
    // The same ticket no longer names a call: cancelling it sends nothing.
    h.command(Command::Cancel { ticket: 7 });
    assert!(h.take().is_empty());
}

#[test]
fn a_call_before_ready_hands_its_channel_back_as_not_callable() {
    let mut h = Harness::stdio();
    h.take();
    h.call(3);
    match h.seen.as_slice() {
        [
            Seen::Reply(
                3,
                CallUpdate::Done(Err(ToolCallError::NotCallable(ApiMisuse::NotReady(server)))),
            ),
        ] => assert_eq!(server, "demo"),
        other => panic!("expected NotCallable for ticket 3, got {other:?}"),
    }
}

#[test]
fn cancelling_a_call_tells_the_server_and_the_call_ends_with_the_cores_cancelled() {
    let mut h = Harness::stdio();
    h.ready_quietly();
    h.call(5);
    let (id, _, _) = h.last_request();
    h.seen.clear();
    h.command(Command::Cancel { ticket: 5 });
    let mut told = false;
    let mut ended = false;
    for seen in std::mem::take(&mut h.seen) {
        match seen {
            Seen::Sent(Message::Notification { method, params })
                if method == "notifications/cancelled" =>
            {
                let params = params.as_ref().expect("params");
                assert_eq!(params["requestId"], json!(id));
                told = true;
            }
            Seen::Reply(
                5,
                CallUpdate::Done(Err(ToolCallError::Call(CallError::Cancelled {
                    server,
                    notice: CancelNotice::Told,
                }))),
            ) => {
                assert_eq!(server, "demo");
                assert!(told, "the server is told before the caller hears");
                ended = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(told && ended, "the server told and the caller answered");
    // A late answer from the server reaches nobody.
    h.server_says(json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}));
    let late = h.take();
    assert!(late.is_empty(), "{late:?}");
}

// ----- feature requests (prompts/get, resources/read, completion/complete) -----

impl Harness {
    /// The id of the latest request for `method`.
    fn request_id(&self, method: &str) -> RequestId {
        self.seen
            .iter()
            .rev()
            .find_map(|s| match s {
                Seen::Sent(Message::Request { id, method: m, .. }) if m == method => {
                    Some(id.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {method} sent in {:?}", self.seen))
    }

    fn answer(&mut self, method: &str, result: Value) {
        let id = self.request_id(method);
        self.server_says(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Readies a server offering prompts, with one listed, and drops what
    /// that produced.
    fn ready_with_prompts(&mut self) {
        self.answer_last(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "prompts": {}},
            "serverInfo": {"name": "scripted", "version": "1.0"}
        }));
        self.answer("tools/list", json!({"tools": []}));
        self.answer(
            "prompts/list",
            json!({"prompts": [{"name": "greet", "arguments": [{"name": "who"}]}]}),
        );
        assert!(
            matches!(self.startup(), Ok(started) if started.ready.catalog.prompts.items.len() == 1)
        );
        self.seen.clear();
    }

    fn get_prompt(&mut self, ticket: u64) {
        self.command(Command::Request {
            ticket,
            request: Box::new(FeatureRequest::GetPrompt(GetPromptParams {
                name: "greet".into(),
                arguments: [("who".to_owned(), "Ada".to_owned())].into(),
            })),
            budget: None,
            reply: ticket,
        });
    }
}

#[test]
fn a_request_goes_to_the_session_and_its_answer_comes_back_as_sent() {
    let mut h = Harness::stdio();
    h.ready_with_prompts();
    h.get_prompt(9);
    let (id, method, params) = h.last_request();
    assert_eq!(method, "prompts/get");
    assert_eq!(
        params,
        json!({"name": "greet", "arguments": {"who": "Ada"}})
    );
    assert_eq!(h.take(), ["send prompts/get"], "nothing answered yet");
    let result =
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Hi Ada"}}]});
    h.server_says(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    match h.seen.as_slice() {
        [Seen::Reply(9, CallUpdate::Answered(Ok(value)))] => assert_eq!(*value, result),
        other => panic!("expected the answer for ticket 9, got {other:?}"),
    }
    h.seen.clear();
    // Answered: the ticket names nothing now.
    h.command(Command::Cancel { ticket: 9 });
    assert!(h.take().is_empty());
}

#[test]
fn a_request_the_server_cannot_take_hands_its_channel_back_and_sends_nothing() {
    // Not ready yet.
    let mut h = Harness::stdio();
    h.take();
    h.get_prompt(1);
    match h.seen.as_slice() {
        [
            Seen::Reply(
                1,
                CallUpdate::Answered(Err(ToolCallError::NotCallable(ApiMisuse::NotReady(server)))),
            ),
        ] => assert_eq!(server, "demo"),
        other => panic!("expected NotCallable for ticket 1, got {other:?}"),
    }
    // Ready, but no prompts capability: never asked.
    let mut h = Harness::stdio();
    h.ready_quietly();
    h.get_prompt(2);
    match h.seen.as_slice() {
        [Seen::Reply(2, CallUpdate::Answered(Err(error)))] => {
            assert!(
                matches!(
                    error,
                    ToolCallError::NotCallable(ApiMisuse::NotOffered { server, capability: "prompts" })
                        if server == "demo"
                ),
                "{error:?}"
            );
            assert_eq!(error.to_string(), "server `demo` does not offer prompts");
        }
        other => panic!("expected NotCallable for ticket 2, got {other:?}"),
    }
}

#[test]
fn cancelling_a_request_tells_the_server_and_a_late_answer_reaches_nobody() {
    let mut h = Harness::stdio();
    h.ready_with_prompts();
    h.get_prompt(4);
    let id = h.request_id("prompts/get");
    h.seen.clear();
    h.command(Command::Cancel { ticket: 4 });
    match h.seen.as_slice() {
        [
            Seen::Sent(Message::Notification { method, params }),
            Seen::Reply(
                4,
                CallUpdate::Answered(Err(ToolCallError::Call(CallError::Cancelled {
                    server,
                    notice: CancelNotice::Told,
                }))),
            ),
        ] => {
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(params.as_ref().expect("params")["requestId"], json!(id));
            assert_eq!(server, "demo");
        }
        other => panic!("expected the server told, then the caller, got {other:?}"),
    }
    h.seen.clear();
    h.server_says(json!({"jsonrpc": "2.0", "id": id, "result": {"messages": []}}));
    let late = h.take();
    assert!(late.is_empty(), "{late:?}");
}

#[test]
fn a_request_past_its_budget_times_out_and_the_server_is_told() {
    let mut h = Harness::stdio();
    h.ready_with_prompts();
    h.get_prompt(6);
    let id = h.request_id("prompts/get");
    let deadline = h.driver.poll_timeout().expect("the request's deadline");
    // prompts/get runs on the tool budget (5 s in this config).
    assert_eq!(deadline, h.now + Duration::from_secs(5));
    h.seen.clear();
    h.advance(Duration::from_secs(5));
    h.driver.handle_timeout(h.now);
    h.drain();
    match h.seen.as_slice() {
        [
            Seen::Sent(Message::Notification { method, params }),
            Seen::Reply(
                6,
                CallUpdate::Answered(Err(ToolCallError::Call(CallError::Timeout {
                    budget, ..
                }))),
            ),
        ] => {
            assert_eq!(method, "notifications/cancelled");
            assert_eq!(params.as_ref().expect("params")["requestId"], json!(id));
            assert_eq!(*budget, Duration::from_secs(5));
        }
        other => panic!("expected a cancel and the timeout, got {other:?}"),
    }
}

#[test]
fn a_request_in_flight_when_the_server_exits_hears_the_session_closed() {
    let mut h = Harness::stdio();
    h.ready_with_prompts();
    h.get_prompt(8);
    h.seen.clear();
    h.driver
        .handle_stdout_closed(h.now, Some("exit status: 1".into()));
    h.drain();
    let update = match std::mem::take(&mut h.seen).into_iter().next() {
        Some(Seen::Reply(8, update)) => update,
        other => panic!("expected the request's end first, got {other:?}"),
    };
    match update.into_answer("demo") {
        Some(Err(ToolCallError::Call(CallError::SessionClosed { reason, .. }))) => {
            assert!(reason.contains("exit status: 1"), "{reason}")
        }
        other => panic!("expected the session's close as the answer, got {other:?}"),
    }
}

#[test]
fn a_server_log_message_reaches_the_host_as_an_effect() {
    let mut h = Harness::with(STDIO, &HostServices::default(), false);
    h.ready_quietly();
    h.seen.clear();
    h.server_says(json!({
        "jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "warning", "logger": "db", "data": "disk almost full"}
    }));
    h.server_says(json!({
        "jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": {"rows": 3}}
    }));
    let logs: Vec<&ServerLog> = h
        .seen
        .iter()
        .filter_map(|s| match s {
            Seen::Log(log) => Some(log),
            _ => None,
        })
        .collect();
    assert_eq!(
        logs,
        [
            &ServerLog {
                level: "warning".into(),
                logger: Some("db".into()),
                data: "disk almost full".into(),
            },
            &ServerLog {
                level: "info".into(),
                logger: None,
                data: r#"{"rows":3}"#.into(),
            },
        ]
    );
}

#[test]
fn a_question_goes_to_the_host_and_its_answer_comes_back_as_a_command() {
    let host = HostServices {
        responder: Some(Arc::new(Decliner)),
        ..HostServices::default()
    };
    let mut h = Harness::with(STDIO, &host, false);
    h.ready_quietly();
    h.call(1);
    h.seen.clear();
    h.server_says(json!({
        "jsonrpc": "2.0", "id": "q1", "method": "elicitation/create",
        "params": {"message": "Which one?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}}
        }}
    }));
    let (question, kind, asked) = match std::mem::take(&mut h.seen).as_slice() {
        [Seen::Ask(question, kind, asked)] => (*question, kind.clone(), asked.clone()),
        other => panic!("expected one question, got {other:?}"),
    };
    // The question names the call it came during: the host's ticket and
    // the tool, so a UI can tie it to one of several calls.
    assert_eq!(
        asked,
        Asked {
            server: h.driver.server().to_owned(),
            call: Some(1),
            what: Some("echo".to_owned()),
        }
    );
    // What the executor runs off the session, then feeds back.
    let answer = rho_proto_core::host::answer(&host, &asked, &kind);
    assert!(matches!(answer, Answer::Form(FormAnswer::Dismissed)));
    h.command(Command::Answer { question, answer });
    // Dismissing the form also ends the turn: the call is cancelled, and
    // its caller hears the core's `Cancelled`.
    match h.seen.as_slice() {
        [
            Seen::Sent(Message::Response { id, result }),
            Seen::Sent(Message::Notification { method, .. }),
            Seen::Reply(1, CallUpdate::Done(Err(ToolCallError::Call(CallError::Cancelled { .. })))),
        ] => {
            assert_eq!(id, &RequestId::String("q1".into()));
            assert_eq!(result["action"], "cancel");
            assert_eq!(method, "notifications/cancelled");
        }
        other => panic!("expected the answer, the cancel and the call's end, got {other:?}"),
    }
}

#[test]
fn a_changed_tool_list_reaches_health() {
    let mut h = Harness::stdio();
    h.ready(json!({"tools": {"listChanged": true}}));
    h.seen.clear();
    h.server_says(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
    let (id, method, _) = h.last_request();
    assert_eq!(method, "tools/list");
    h.seen.clear();
    h.server_says(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}));
    match h.seen.as_slice() {
        [Seen::Health(health)] => {
            let tools = health.tools_now.as_ref().expect("the re-listed tools");
            assert!(tools.is_empty());
            assert_eq!(health.failure, None);
        }
        other => panic!("expected one health report, got {other:?}"),
    }
}

#[test]
fn a_changed_prompt_list_reaches_health() {
    let mut h = Harness::stdio();
    h.ready_with_prompts();
    h.server_says(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));
    let (id, method, _) = h.last_request();
    assert_eq!(method, "prompts/list");
    h.seen.clear();
    h.server_says(
        json!({"jsonrpc": "2.0", "id": id, "result": {"prompts": [{"name": "a"}, {"name": "b"}]}}),
    );
    match h.seen.as_slice() {
        [Seen::Health(health)] => {
            let catalog = health.catalog_now.as_ref().expect("the re-listed catalog");
            let names: Vec<&str> = catalog
                .prompts
                .items
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            assert_eq!(names, ["a", "b"]);
        }
        other => panic!("expected one health report, got {other:?}"),
    }
}

#[test]
fn http_inputs_reach_the_session_by_exchange() {
    let text = "[mcp.servers.remote]\ntransport = \"streamable_http\"\n\
                url = \"http://127.0.0.1:9/mcp\"\n";
    let mut h = Harness::with(text, &HostServices::default(), false);
    let request = match h.seen.as_slice() {
        [Seen::Http(HttpOutput::Send(request))] => request.clone(),
        other => panic!("expected the discovery POST, got {other:?}"),
    };
    h.seen.clear();
    let body: Value = serde_json::from_slice(&request.body).expect("json");
    assert_eq!(body["method"], "server/discover");
    // A 2025 server: the session falls back to initialize.
    let answer = json!({
        "jsonrpc": "2.0", "id": body["id"],
        "error": {"code": -32601, "message": "Method not found"}
    });
    let now = h.now;
    h.driver.handle_http(
        now,
        request.exchange,
        HttpInput::Head {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
        },
    );
    h.driver.handle_http(
        now,
        request.exchange,
        HttpInput::Body(serde_json::to_vec(&answer).expect("json")),
    );
    h.driver.handle_http(now, request.exchange, HttpInput::End);
    h.drain();
    let methods: Vec<String> = h
        .seen
        .iter()
        .filter_map(|s| match s {
            Seen::Http(HttpOutput::Send(request)) => {
                let body: Value = serde_json::from_slice(&request.body).expect("json");
                body["method"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect();
    assert_eq!(methods, ["initialize"], "{:?}", h.seen);
}

// ----- teardown -----

#[test]
fn close_carries_every_output_and_record_before_ending_the_transport() {
    let mut h = Harness::with(STDIO, &HostServices::default(), true);
    h.ready_quietly();
    h.call(9);
    h.take();
    h.command(Command::Close);
    let labels = h.take();
    assert_eq!(labels.last().map(String::as_str), Some("end"), "{labels:?}");
    let reply = labels
        .iter()
        .position(|l| l == "reply 9 err")
        .expect("the call ends");
    let record = labels
        .iter()
        .rposition(|l| l == "record")
        .expect("recorded");
    assert!(
        reply < record,
        "the transcript has the call's end: {labels:?}"
    );
    assert!(h.driver.is_closed());
    assert_eq!(
        h.driver.poll_timeout(),
        None,
        "a closed session wants no wakeup"
    );
    // After the transport ended: no stderr for a close rho asked for, no
    // health failure, no second startup report.
    h.finish(Some("stderr: bye"));
    assert!(h.take().is_empty());
    assert!(h.driver.poll_effect().is_none());
}

#[test]
fn a_closed_session_hands_commands_back_but_takes_a_second_close() {
    let mut h = Harness::stdio();
    h.ready_quietly();
    h.command(Command::Close);
    let refused = h.driver.handle_command(
        h.now,
        Command::CallTool {
            ticket: 1,
            tool: "echo".into(),
            arguments: json!({}),
            budget: None,
            task: TaskAugmentation::default(),
            reply: 1,
        },
    );
    assert!(
        matches!(refused, Err(Command::CallTool { reply: 1, .. })),
        "the call and its channel come back"
    );
    assert!(
        matches!(h.driver.handle_command(h.now, Command::Close), Ok(())),
        "closing a closed session is not refused"
    );
}

/// [`STDIO`] with restarts turned off.
const NO_RESTART: &str = "[mcp.servers.demo]\ntransport = \"stdio\"\ncommand = \"demo-server\"\n\
                          startup_timeout_secs = 10\ntool_timeout_secs = 5\n\
                          restart = { attempts = 0 }\n";

#[test]
fn a_server_that_exits_after_ready_with_restarts_off_fails_its_health_with_its_stderr() {
    let mut h = Harness::with(NO_RESTART, &HostServices::default(), false);
    h.ready_quietly();
    let reason = h.exit_during_call(2, "exit status: 3");
    assert!(
        reason.contains("server exited (exit status: 3)"),
        "{reason}"
    );
    h.finish(Some("stderr: boom"));
    match h.seen.as_slice() {
        [Seen::Health(health)] => {
            assert_eq!(
                health.failure.as_deref(),
                Some("server exited (exit status: 3)\nstderr: boom")
            );
            assert!(!health.restarts_exhausted && health.restarting.is_none());
        }
        other => panic!("expected a health failure, got {other:?}"),
    }
    assert!(h.driver.is_done(), "no restart comes");
    assert_eq!(h.driver.poll_timeout(), None);
}

#[test]
fn a_server_that_exits_during_startup_fails_startup_with_its_stderr() {
    let mut h = Harness::stdio();
    h.take();
    h.driver.handle_stdout_closed(h.now, None);
    h.drain();
    assert_eq!(h.take(), ["end"]);
    h.finish(Some("stderr: no such file"));
    match h.startup() {
        Err(StartupError::Closed {
            server,
            reason: CloseReason::TransportClosed { during_startup, .. },
            stderr,
        }) => {
            assert_eq!(server, "demo");
            assert!(during_startup);
            assert_eq!(stderr.as_deref(), Some("stderr: no such file"));
        }
        other => panic!("expected a startup failure, got {other:?}"),
    }
}

#[test]
fn a_close_during_startup_reports_it_without_stderr() {
    let mut h = Harness::stdio();
    h.command(Command::Close);
    h.finish(Some("stderr: noise"));
    match h.startup() {
        Err(StartupError::Closed {
            reason: CloseReason::Requested,
            stderr: None,
            ..
        }) => {}
        other => panic!("expected a requested close without stderr, got {other:?}"),
    }
}

#[test]
fn a_failed_write_is_an_exit_when_the_child_exited_and_a_transport_failure_otherwise() {
    let mut exited = Harness::stdio();
    exited
        .driver
        .handle_write_failed(exited.now, "Broken pipe", Some("exit status: 1".into()));
    exited.drain();
    exited.finish(None);
    match exited.startup() {
        Err(StartupError::Closed {
            reason: CloseReason::TransportClosed { detail, .. },
            ..
        }) => assert_eq!(detail.as_deref(), Some("exit status: 1")),
        other => panic!("expected an exit, got {other:?}"),
    }
    let mut failed = Harness::stdio();
    failed
        .driver
        .handle_write_failed(failed.now, "Broken pipe", None);
    failed.drain();
    failed.finish(None);
    match failed.startup() {
        Err(StartupError::Closed {
            reason: CloseReason::TransportFailed(why),
            ..
        }) => assert_eq!(why, "writing to the server failed: Broken pipe"),
        other => panic!("expected a transport failure, got {other:?}"),
    }
}

// ----- restarts -----

/// [`STDIO`] with 3 restarts in a row, the first after 500 ms.
const RESTARTS: &str = "[mcp.servers.demo]\ntransport = \"stdio\"\ncommand = \"demo-server\"\n\
                        startup_timeout_secs = 10\ntool_timeout_secs = 5\n\
                        restart = { attempts = 3, backoff_ms = 500 }\n";

impl Harness {
    /// A ready server with restarts on, whose process then exits with
    /// status 7 (stderr `panic: boom`); the transport has ended. What that
    /// produced is dropped.
    fn lost() -> Self {
        let mut h = Self::with(RESTARTS, &HostServices::default(), false);
        h.driver.transport_started(Some(100));
        h.ready_quietly();
        h.driver
            .handle_stdout_closed(h.now, Some("exit status: 7".into()));
        h.drain();
        h.finish(Some("stderr: panic: boom"));
        h.seen.clear();
        h
    }

    /// The health in the last [`Seen::Health`] seen.
    fn health(&self) -> rho_proto_core::runtime::Health {
        self.seen
            .iter()
            .rev()
            .find_map(|s| match s {
                Seen::Health(health) => Some(health.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no health in {:?}", self.seen))
    }

    /// Moves the clock to the driver's next deadline and fires it.
    fn fire(&mut self) {
        let at = self.driver.poll_timeout().expect("a deadline");
        self.now = self.now.max(at);
        self.driver.handle_timeout(self.now);
        self.drain();
    }

    /// Readies the restarted session listing `tools`.
    fn ready_again(&mut self, tools: &[&str]) {
        self.answer(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1.0"}
            }),
        );
        let tools: Vec<Value> = tools
            .iter()
            .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
            .collect();
        self.answer("tools/list", json!({"tools": tools}));
    }
}

#[test]
fn a_server_that_exits_after_ready_is_restarted_after_its_backoff_and_its_call_in_flight_fails_with_the_exit()
 {
    let mut h = Harness::with(RESTARTS, &HostServices::default(), false);
    h.driver.transport_started(Some(100));
    h.ready_quietly();
    let reason = h.exit_during_call(2, "exit status: 7");
    assert!(
        reason.contains("server exited (exit status: 7)"),
        "{reason}"
    );
    h.finish(Some("stderr: panic: boom"));
    let health = h.health();
    let restarting = health.restarting.expect("a restart is under way");
    assert_eq!((restarting.attempt, restarting.attempts), (1, 3));
    assert_eq!(
        restarting.reason,
        "server exited (exit status: 7)\nstderr: panic: boom"
    );
    assert_eq!(health.failure, None, "restarting is not failed");
    assert!(!h.driver.is_done());
    h.seen.clear();
    // The backoff is a deadline of the driver's: nothing before it.
    assert_eq!(
        h.driver.poll_timeout(),
        Some(h.now + Duration::from_millis(500))
    );
    h.advance(Duration::from_millis(499));
    h.driver.handle_timeout(h.now);
    h.drain();
    assert_eq!(h.take(), Vec::<String>::new(), "too early");
    h.advance(Duration::from_millis(1));
    h.driver.handle_timeout(h.now);
    h.drain();
    assert_eq!(h.take(), ["start"]);
    assert!(h.restart_transport(Ok(Some(200))));
    let labels: Vec<String> = h.seen.iter().map(Seen::label).collect();
    assert_eq!(
        labels,
        ["send server/discover", "send initialize"],
        "connecting as at startup"
    );
    h.ready_again(&["echo"]);
    let health = h.health();
    assert_eq!(health.restarting, None);
    assert_eq!(health.restarts, 1);
    assert_eq!(health.pid, Some(200), "the new process");
    let tools: Vec<&str> = health
        .tools_now
        .as_deref()
        .expect("the new session's tools")
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(tools, ["echo"]);
    assert!(
        !h.seen.iter().any(|s| matches!(s, Seen::Startup(_))),
        "startup heard once, at startup"
    );
    // The next call is served by the new session.
    h.call(3);
    let (_, method, _) = h.last_request();
    assert_eq!(method, "tools/call");
    h.answer_last(json!({"content": [{"type": "text", "text": "again"}]}));
    assert!(
        h.take().contains(&"reply 3 ok".to_owned()),
        "the call is answered"
    );
}

#[test]
fn a_call_made_during_the_restart_waits_for_it_with_the_rest_of_its_budget() {
    let mut h = Harness::lost();
    h.call(4);
    assert_eq!(
        h.take(),
        Vec::<String>::new(),
        "held: nothing sent, no reply"
    );
    h.fire();
    assert_eq!(h.take(), ["start"]);
    h.restart_transport(Ok(Some(200)));
    h.advance(Duration::from_millis(700));
    h.ready_again(&["echo"]);
    let (_, method, params) = h.last_request();
    assert_eq!(method, "tools/call");
    assert_eq!(params["name"], "echo");
    h.answer_last(json!({"content": []}));
    assert!(h.take().contains(&"reply 4 ok".to_owned()));
    // Its budget (the server's 5 s) ran from when it came, not from when
    // it was sent: another held call waits no longer than that.
    let mut h = Harness::lost();
    h.call(5);
    h.fire();
    h.restart_transport(Ok(Some(201)));
    // 0.5 s of backoff and 4 s of startup: 0.5 s are left.
    h.advance(Duration::from_millis(4000));
    h.ready_again(&["echo"]);
    h.seen.clear();
    h.advance(Duration::from_millis(500));
    h.driver.handle_timeout(h.now);
    h.drain();
    match h.seen.as_slice() {
        [
            ..,
            Seen::Reply(
                5,
                CallUpdate::Done(Err(ToolCallError::Call(CallError::Timeout { budget, .. }))),
            ),
        ] => {
            assert_eq!(*budget, Duration::from_millis(500), "what was left of 5 s");
        }
        other => panic!("expected the call's timeout, got {other:?}"),
    }
}

#[test]
fn a_held_call_of_a_tool_the_new_session_lacks_fails_as_withdrawn() {
    let mut h = Harness::lost();
    h.call(6);
    h.fire();
    h.restart_transport(Ok(Some(200)));
    h.ready_again(&["other"]);
    let reply = h.seen.iter().find_map(|s| match s {
        Seen::Reply(6, CallUpdate::Done(Err(error))) => Some(error.to_string()),
        _ => None,
    });
    assert_eq!(
        reply.as_deref(),
        Some("tool `echo` of server `demo` was withdrawn by the server during this session")
    );
    assert!(
        !h.seen.iter().any(
            |s| matches!(s, Seen::Sent(Message::Request { method, .. }) if method == "tools/call")
        ),
        "nothing was sent for it"
    );
}

#[test]
fn a_held_call_ends_at_its_budget_or_its_cancel_unsent() {
    let mut h = Harness::lost();
    h.command(Command::CallTool {
        ticket: 8,
        tool: "echo".into(),
        arguments: json!({}),
        budget: Some(Duration::from_millis(200)),
        task: TaskAugmentation::default(),
        reply: 8,
    });
    h.call(9);
    assert_eq!(
        h.driver.poll_timeout(),
        Some(h.now + Duration::from_millis(200)),
        "the held call's budget is before the backoff"
    );
    h.fire();
    match h.seen.as_slice() {
        [Seen::Reply(8, CallUpdate::Done(Err(ToolCallError::ServerNotReady { reason, .. })))] => {
            assert!(reason.contains("restarting (attempt 1 of 3"), "{reason}");
            assert!(reason.contains("exit status: 7"), "{reason}");
            assert!(reason.contains("0.2 s ran out"), "{reason}");
        }
        other => panic!("expected the held call's end, got {other:?}"),
    }
    h.seen.clear();
    h.command(Command::Cancel { ticket: 9 });
    match h.seen.as_slice() {
        [
            Seen::Reply(
                9,
                CallUpdate::Done(Err(ToolCallError::Call(CallError::Cancelled {
                    notice: CancelNotice::NothingRunning,
                    ..
                }))),
            ),
        ] => {}
        other => panic!("expected the core's Cancelled, got {other:?}"),
    }
}

#[test]
fn restarts_that_fail_their_startup_back_off_longer_then_give_up_with_the_reason() {
    let mut h = Harness::lost();
    h.call(10);
    let mut waits = Vec::new();
    for attempt in 1..=3 {
        let from = h.now;
        h.fire();
        waits.push(h.now - from);
        assert_eq!(h.take(), ["start"], "attempt {attempt}");
        h.restart_transport(Ok(Some(200 + attempt)));
        h.seen.clear();
        // It exits before its handshake.
        h.driver
            .handle_stdout_closed(h.now, Some("exit status: 5".into()));
        h.drain();
        h.finish(Some("stderr: fatal: cannot start again"));
        if attempt < 3 {
            h.seen.clear();
        }
    }
    assert_eq!(
        waits,
        [500, 1000, 2000].map(Duration::from_millis),
        "the backoff doubles"
    );
    let health = h.health();
    assert!(health.restarts_exhausted);
    assert_eq!(health.restarting, None);
    let failure = health.failure.expect("failed");
    assert_eq!(
        failure,
        "restarts exhausted: 3 restarts in a row failed; the last: server exited during startup (exit status: 5)\nstderr: fatal: cannot start again"
    );
    match h.seen.iter().find(|s| matches!(s, Seen::Reply(10, _))) {
        Some(Seen::Reply(
            _,
            CallUpdate::Done(Err(ToolCallError::ServerNotReady { reason, .. })),
        )) => {
            assert_eq!(reason, &failure, "the held call hears why")
        }
        other => panic!("expected the held call's end, got {other:?}"),
    }
    assert!(h.driver.is_done());
    assert_eq!(h.driver.poll_timeout(), None);
}

#[test]
fn a_restart_whose_process_cannot_start_counts_as_an_attempt() {
    let mut h = Harness::lost();
    h.fire();
    h.seen.clear();
    let not_found = TransportSetupError::Spawn {
        server: "demo".into(),
        program: "/gone/demo-server".into(),
        reason: "No such file or directory".into(),
    };
    assert!(!h.restart_transport(Err(not_found)));
    let restarting = h.health().restarting.expect("another attempt");
    assert_eq!(restarting.attempt, 2);
    assert!(
        restarting
            .reason
            .contains("could not start `/gone/demo-server`"),
        "{}",
        restarting.reason
    );
    assert_eq!(
        h.driver.poll_timeout(),
        Some(h.now + Duration::from_millis(1000))
    );
}

#[test]
fn a_close_during_the_backoff_ends_the_driver_and_the_held_calls_and_starts_nothing() {
    let mut h = Harness::lost();
    h.call(11);
    h.command(Command::Close);
    assert_eq!(
        h.take(),
        ["end"],
        "no transport to end, but finish says the rest"
    );
    h.finish(None);
    let labels = h.take();
    assert!(labels.contains(&"reply 11 err".to_owned()), "{labels:?}");
    assert!(h.driver.is_done());
    assert_eq!(h.driver.poll_timeout(), None, "no restart comes");
    // Nor is one started when the close comes once it is due.
    let mut h = Harness::lost();
    h.fire();
    assert_eq!(h.take(), ["start"]);
    h.command(Command::Close);
    h.finish(None);
    h.seen.clear();
    assert!(!h.restart_transport(Ok(Some(300))), "the executor ends it");
    assert!(h.driver.is_done());
}

#[test]
fn a_session_rho_closed_or_that_never_became_ready_is_not_restarted() {
    let mut h = Harness::with(RESTARTS, &HostServices::default(), false);
    h.ready_quietly();
    h.command(Command::Close);
    h.finish(None);
    assert!(h.driver.is_done(), "a close rho asked for stays closed");
    assert!(
        !h.take().iter().any(|l| l == "start" || l == "health"),
        "nothing to say"
    );
    let mut h = Harness::with(RESTARTS, &HostServices::default(), false);
    h.driver
        .handle_stdout_closed(h.now, Some("exit status: 3".into()));
    h.drain();
    h.finish(Some("stderr: fatal"));
    assert!(matches!(h.startup(), Err(StartupError::Closed { .. })));
    assert!(h.driver.is_done(), "a failed startup is not retried");
    assert_eq!(h.driver.poll_timeout(), None);
}

// ----- resource subscriptions across sessions -----

const WATCHED: &str = "watch://counter";

impl Harness {
    /// Answers `method` with `result` if it was sent since the last take.
    fn answer_if_sent(&mut self, method: &str, result: Value) {
        let sent = self
            .seen
            .iter()
            .any(|s| matches!(s, Seen::Sent(Message::Request { method: m, .. }) if m == method));
        if sent {
            self.answer(method, result);
        }
    }

    /// Answers the handshake (`initialize` pending) with `capabilities`
    /// and the listings it asks for: one tool, no resources.
    fn handshake(&mut self, capabilities: Value) {
        self.answer(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "serverInfo": {"name": "scripted", "version": "1.0"}
            }),
        );
        self.answer_if_sent(
            "tools/list",
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        );
        self.answer_if_sent("resources/list", json!({"resources": []}));
        self.answer_if_sent("resources/templates/list", json!({"resourceTemplates": []}));
    }

    /// The host's request `request` as ticket `ticket`.
    fn feature(&mut self, ticket: u64, request: FeatureRequest) {
        self.command(Command::Request {
            ticket,
            request: Box::new(request),
            budget: None,
            reply: ticket,
        });
    }

    fn subscribe(&mut self, ticket: u64, uri: &str) {
        let params = SubscribeParams { uri: uri.into() };
        self.feature(ticket, FeatureRequest::SubscribeResource(params));
    }

    fn unsubscribe(&mut self, ticket: u64, uri: &str) {
        let params = SubscribeParams { uri: uri.into() };
        self.feature(ticket, FeatureRequest::UnsubscribeResource(params));
    }

    fn updated(&mut self, uri: &str) {
        self.server_says(json!({
            "jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": uri}
        }));
    }

    /// A ready 2025 server of `config` offering subscriptions, subscribed
    /// to [`WATCHED`] (answered); then its process exits and the transport
    /// ends. What that produced is dropped.
    fn watching_then_lost(config: &str) -> Self {
        let mut h = Self::with(config, &HostServices::default(), false);
        h.driver.transport_started(Some(100));
        h.handshake(json!({"tools": {}, "resources": {"subscribe": true}}));
        assert!(h.startup().is_ok());
        h.subscribe(1, WATCHED);
        h.answer("resources/subscribe", json!({}));
        assert!(h.take().contains(&"reply 1 answered".to_owned()));
        h.updated(WATCHED);
        assert_eq!(h.take(), [format!("resource updated {WATCHED}")]);
        h.driver
            .handle_stdout_closed(h.now, Some("exit status: 9".into()));
        h.drain();
        h.finish(Some("stderr: killed"));
        h
    }

    /// The notices of `uri` seen, in order.
    fn notices(&self, uri: &str) -> Vec<WatchNotice> {
        self.seen
            .iter()
            .filter_map(|s| match s {
                Seen::Resource(u, notice) if u == uri => Some(notice.clone()),
                _ => None,
            })
            .collect()
    }

    /// The methods of the requests sent since the last take; takes all.
    fn take_sent(&mut self) -> Vec<String> {
        std::mem::take(&mut self.seen)
            .into_iter()
            .filter_map(|s| match s {
                Seen::Sent(Message::Request { method, .. }) => Some(method),
                _ => None,
            })
            .collect()
    }

    /// Fires the backoff, starts the new process and answers its probe.
    fn respawn(&mut self) {
        self.seen.clear();
        self.fire();
        assert_eq!(self.take(), ["start"]);
        assert!(self.restart_transport(Ok(Some(200))));
    }
}

#[test]
fn a_restarted_session_is_subscribed_again_to_what_the_host_watched_and_its_updates_reach_the_host()
{
    let mut h = Harness::watching_then_lost(RESTARTS);
    assert!(
        h.notices(WATCHED).is_empty(),
        "a restart is under way: the watch has not ended"
    );
    h.respawn();
    h.handshake(json!({"tools": {}, "resources": {"subscribe": true}}));
    let (_, method, params) = h.last_request();
    assert_eq!(method, "resources/subscribe", "sent by the driver itself");
    assert_eq!(params, json!({"uri": WATCHED}));
    assert!(h.notices(WATCHED).is_empty(), "not before its answer");
    let (renewal, _, _) = h.last_request();
    h.seen.clear();
    h.server_says(json!({"jsonrpc": "2.0", "id": renewal, "result": {}}));
    assert_eq!(
        h.take(),
        [format!("resource renewed {WATCHED}")],
        "no caller hears the driver's own request"
    );
    h.updated(WATCHED);
    assert_eq!(h.take(), [format!("resource updated {WATCHED}")]);
    // Another URI was never subscribed to: nothing.
    h.updated("watch://other");
    assert!(h.take().is_empty());
}

#[test]
fn a_renewal_the_restarted_server_refuses_ends_the_watch_with_its_error() {
    let mut h = Harness::watching_then_lost(RESTARTS);
    h.respawn();
    h.handshake(json!({"tools": {}, "resources": {"subscribe": true}}));
    let (id, _, _) = h.last_request();
    h.seen.clear();
    h.server_says(json!({
        "jsonrpc": "2.0", "id": id,
        "error": {"code": -32002, "message": "no such resource any more"}
    }));
    match h.notices(WATCHED).as_slice() {
        [WatchNotice::Ended(WatchEnd::NotRenewed { reason })] => {
            assert!(reason.contains("no such resource any more"), "{reason}");
        }
        other => panic!("expected the watch's end, got {other:?}"),
    }
    h.seen.clear();
    h.updated(WATCHED);
    assert!(h.take().is_empty(), "no longer watched");
}

#[test]
fn a_restarted_server_that_no_longer_offers_subscriptions_ends_the_watch_unsent() {
    let mut h = Harness::watching_then_lost(RESTARTS);
    h.respawn();
    h.handshake(json!({"tools": {}, "resources": {}}));
    match h.notices(WATCHED).as_slice() {
        [WatchNotice::Ended(WatchEnd::NotRenewed { reason })] => {
            assert!(reason.contains("resources.subscribe"), "{reason}");
        }
        other => panic!("expected the watch's end, got {other:?}"),
    }
    assert!(
        !h.take_sent().contains(&"resources/subscribe".to_owned()),
        "nothing asked of a server that does not offer it"
    );
}

#[test]
fn a_server_not_started_again_ends_its_watches_with_the_reason() {
    let h = Harness::watching_then_lost(NO_RESTART);
    match h.notices(WATCHED).as_slice() {
        [WatchNotice::Ended(WatchEnd::ServerEnded { reason })] => {
            assert!(reason.contains("exit status: 9"), "{reason}");
            assert!(reason.contains("stderr: killed"), "{reason}");
        }
        other => panic!("expected the watch's end, got {other:?}"),
    }
    assert!(h.driver.is_done());
}

#[test]
fn restarts_given_up_end_the_watches_once() {
    let mut h = Harness::watching_then_lost(RESTARTS);
    for _ in 0..3 {
        h.fire();
        let gone = TransportSetupError::Spawn {
            server: "demo".into(),
            program: "/gone/demo-server".into(),
            reason: "No such file or directory".into(),
        };
        assert!(!h.restart_transport(Err(gone)));
    }
    let ends: Vec<_> = h
        .notices(WATCHED)
        .into_iter()
        .filter(|n| matches!(n, WatchNotice::Ended(WatchEnd::ServerEnded { .. })))
        .collect();
    assert_eq!(ends.len(), 1, "{:?}", h.seen);
    assert!(h.driver.is_done());
}

#[test]
fn an_unsubscribe_during_the_restart_succeeds_at_once_and_is_not_renewed() {
    let mut h = Harness::watching_then_lost(RESTARTS);
    h.seen.clear();
    h.unsubscribe(2, WATCHED);
    assert_eq!(h.take(), ["reply 2 answered"], "no process holds it");
    h.respawn();
    h.handshake(json!({"tools": {}, "resources": {"subscribe": true}}));
    assert!(!h.take_sent().contains(&"resources/subscribe".to_owned()));
    assert!(h.notices(WATCHED).is_empty());
}

#[test]
fn a_resource_let_go_while_its_renewal_is_answered_is_unsubscribed_and_not_reported() {
    let mut h = Harness::watching_then_lost(RESTARTS);
    h.respawn();
    h.handshake(json!({"tools": {}, "resources": {"subscribe": true}}));
    let (renewal, _, _) = h.last_request();
    // The host lets it go before the server answers the renewal: not held
    // by the session yet, so it ends at once.
    h.unsubscribe(3, WATCHED);
    h.seen.clear();
    h.server_says(json!({"jsonrpc": "2.0", "id": renewal, "result": {}}));
    assert_eq!(h.take_sent(), ["resources/unsubscribe"]);
    assert!(h.notices(WATCHED).is_empty());
}

#[test]
fn a_server_rho_closed_reports_no_end_of_its_watches() {
    let mut h = Harness::with(NO_RESTART, &HostServices::default(), false);
    h.handshake(json!({"tools": {}, "resources": {"subscribe": true}}));
    h.subscribe(1, WATCHED);
    h.answer("resources/subscribe", json!({}));
    h.seen.clear();
    h.command(Command::Close);
    h.finish(None);
    assert!(h.notices(WATCHED).is_empty(), "the host asked for it");
}

// ----- time -----

#[test]
fn the_timer_moves_only_earlier_and_one_that_fires_early_changes_nothing() {
    let mut h = Harness::with(STDIO, &HostServices::default(), true);
    let deadline = h.start + Duration::from_secs(10);
    assert_eq!(h.driver.poll_timeout(), Some(deadline));
    assert_eq!(h.driver.timeout_reason(), Some(Timer::Startup));
    assert_eq!(h.driver.rearm(), Some(deadline));
    assert_eq!(h.driver.timer(), Some(deadline));
    assert_eq!(h.driver.rearm(), None, "already set there");
    h.take();
    // Early: nothing happens, nothing is recorded, the timer stays set.
    h.driver.handle_timeout(h.start + Duration::from_secs(1));
    h.drain();
    assert!(h.take().is_empty());
    assert_eq!(h.driver.timer(), Some(deadline));
    // On time: the startup budget ran out.
    h.now = deadline;
    h.driver.handle_timeout(deadline);
    h.drain();
    assert_eq!(h.driver.timer(), None);
    let labels = h.take();
    assert_eq!(labels.last().map(String::as_str), Some("end"), "{labels:?}");
    h.finish(None);
    match h.startup() {
        Err(StartupError::Closed {
            reason: CloseReason::StartupTimeout { budget, .. },
            ..
        }) => assert_eq!(budget, Duration::from_secs(10)),
        other => panic!("expected a startup timeout, got {other:?}"),
    }
}

#[test]
fn a_timer_set_for_a_deadline_that_went_away_is_cleared_when_it_fires() {
    let mut h = Harness::stdio();
    let startup = h.driver.rearm().expect("the startup deadline");
    h.ready_quietly();
    assert_eq!(
        h.driver.poll_timeout(),
        None,
        "a ready idle session waits for nothing"
    );
    assert_eq!(h.driver.rearm(), None);
    h.driver.handle_timeout(startup);
    assert_eq!(h.driver.timer(), None);
    h.drain();
    assert!(h.take().is_empty());
}

#[test]
fn a_due_deadline_goes_before_input_that_is_always_ready() {
    let mut h = Harness::stdio();
    let (id, _, _) = h.last_request();
    h.take();
    // The answer arrives, but only once the budget is already over.
    h.advance(Duration::from_secs(11));
    h.server_says(json!({
        "jsonrpc": "2.0", "id": id,
        "result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "late", "version": "1"}}
    }));
    assert_eq!(
        h.take(),
        ["end"],
        "no handshake continues after the timeout"
    );
    h.finish(None);
    assert!(matches!(
        h.startup(),
        Err(StartupError::Closed {
            reason: CloseReason::StartupTimeout { .. },
            ..
        })
    ));
}

// ----- the startup wait -----

const TWO: &str = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\nstartup_timeout_secs = 5\n\
                   [mcp.servers.b]\ntransport = \"stdio\"\ncommand = \"b\"\nstartup_timeout_secs = 7\n";

const THREE: &str = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n\
                     [mcp.servers.b]\ntransport = \"stdio\"\ncommand = \"b\"\n\
                     [mcp.servers.c]\ntransport = \"stdio\"\ncommand = \"c\"\n";

fn error_of(inventory: &Inventory, id: &str) -> String {
    let slot = inventory.find(id).expect("configured");
    match inventory.view(slot, None).expect("a view").status {
        ServerStatus::Failed { error, .. } => error,
        other => panic!("`{id}` is {other:?}, not failed"),
    }
}

/// A real startup report, from a driver run to ready.
fn started() -> Started {
    let mut h = Harness::stdio();
    h.ready(json!({"tools": {}}));
    h.startup().expect("ready")
}

#[test]
fn each_server_gets_its_budget_plus_the_margin_from_when_its_wait_begins() {
    let config = parse(TWO);
    let mut inventory = Inventory::new(&config, |_| true);
    let (a, b) = (inventory.find("a").unwrap(), inventory.find("b").unwrap());
    let mut wait = StartupWait::new(&inventory);
    let t0 = Instant::now();
    let first = Some(StartupStep::Wait {
        slot: a,
        until: t0 + Duration::from_secs(5) + STARTUP_MARGIN,
    });
    assert_eq!(wait.next(&mut inventory, t0), first);
    // Asked again before it heard anything: the same wait, not a new one.
    assert_eq!(
        wait.next(&mut inventory, t0 + Duration::from_secs(1)),
        first
    );
    wait.heard(&mut inventory, a, Heard::TimedOut);
    assert_eq!(wait.next(&mut inventory, t0), Some(StartupStep::Stop(a)));
    assert_eq!(
        error_of(&inventory, "a"),
        "server `a`: did not finish starting within 5 s"
    );
    let t1 = t0 + Duration::from_secs(15);
    assert_eq!(
        wait.next(&mut inventory, t1),
        Some(StartupStep::Wait {
            slot: b,
            until: t1 + Duration::from_secs(7) + STARTUP_MARGIN,
        })
    );
    wait.heard(&mut inventory, b, Heard::Outcome(Ok(started())));
    assert_eq!(wait.next(&mut inventory, t1), None);
    inventory.finish_startup();
    let view = inventory.view(b, None).expect("b");
    assert!(matches!(view.status, ServerStatus::Ready(_)), "{view:?}");
    assert_eq!(inventory.tools().len(), 1, "b's one tool is exported");
}

#[test]
fn a_driver_that_went_away_or_failed_is_recorded_with_its_reason_and_stopped() {
    let config = parse(TWO);
    let mut inventory = Inventory::new(&config, |_| true);
    let (a, b) = (inventory.find("a").unwrap(), inventory.find("b").unwrap());
    let mut wait = StartupWait::new(&inventory);
    let now = Instant::now();
    wait.next(&mut inventory, now);
    // What the wait hears for a server it is not waiting for is ignored.
    wait.heard(&mut inventory, b, Heard::Gone);
    wait.heard(&mut inventory, a, Heard::Gone);
    assert_eq!(wait.next(&mut inventory, now), Some(StartupStep::Stop(a)));
    assert_eq!(
        error_of(&inventory, "a"),
        "server `a`: its driver stopped before it reported startup"
    );
    assert!(
        matches!(wait.next(&mut inventory, now), Some(StartupStep::Wait { slot, .. }) if slot == b)
    );
    wait.heard(
        &mut inventory,
        b,
        Heard::Outcome(Err(StartupError::Transport(TransportSetupError::Spawn {
            server: "b".into(),
            program: "b".into(),
            reason: "not found".into(),
        }))),
    );
    assert_eq!(wait.next(&mut inventory, now), Some(StartupStep::Stop(b)));
    assert_eq!(
        error_of(&inventory, "b"),
        "server `b`: could not start `b`: not found"
    );
    assert_eq!(wait.next(&mut inventory, now), None);
}

#[test]
fn an_interrupt_closes_every_server_still_starting_at_once_and_waits_for_none() {
    let config = parse(THREE);
    let mut inventory = Inventory::new(&config, |_| true);
    let [a, b, c] = ["a", "b", "c"].map(|id| inventory.find(id).unwrap());
    let mut wait = StartupWait::new(&inventory);
    let now = Instant::now();
    wait.next(&mut inventory, now);
    wait.heard(&mut inventory, a, Heard::Outcome(Ok(started())));
    wait.next(&mut inventory, now);
    wait.heard(&mut inventory, b, Heard::Interrupted);
    let mut steps = Vec::new();
    while let Some(step) = wait.next(&mut inventory, now) {
        steps.push(step);
    }
    assert_eq!(
        steps,
        [
            StartupStep::Close(b),
            StartupStep::Close(c),
            StartupStep::Stop(b),
            StartupStep::Stop(c),
        ],
        "both close before either is waited for; c is never waited for"
    );
    for id in ["b", "c"] {
        assert_eq!(
            error_of(&inventory, id),
            format!("server `{id}`: startup was interrupted (rho is stopping)")
        );
    }
    assert!(matches!(
        inventory.view(a, None).expect("a").status,
        ServerStatus::Ready(_)
    ));
}

// ----- admission -----

#[test]
fn a_call_waits_for_room_within_its_budget_and_then_fails_as_not_read() {
    let backlog = Backlog::default();
    let t0 = Instant::now();
    let admission = Admission::new(t0, Duration::from_secs(1));
    assert!(matches!(admission.check(t0, &backlog, "demo"), Ok(None)));
    backlog.add(CALLER_ROOM + 1);
    assert!(matches!(
        admission.check(t0, &backlog, "demo"),
        Ok(Some(pause)) if pause == BACKLOG_POLL
    ));
    // Never past the budget.
    let almost = t0 + Duration::from_secs(1) - Duration::from_micros(500);
    assert!(matches!(
        admission.check(almost, &backlog, "demo"),
        Ok(Some(pause)) if pause == Duration::from_micros(500)
    ));
    match admission.check(t0 + Duration::from_secs(1), &backlog, "demo") {
        Err(ToolCallError::Call(CallError::Transport { server, reason })) => {
            assert_eq!(server, "demo");
            assert!(
                reason.contains("has not read its input for 1 s"),
                "{reason}"
            );
        }
        other => panic!("expected the not-reading error, got {other:?}"),
    }
    // Nobody left to drain it: waiting is pointless, the call goes.
    backlog.close();
    assert!(matches!(
        admission.check(t0 + Duration::from_secs(2), &backlog, "demo"),
        Ok(None)
    ));
}

#[test]
fn a_caller_that_gives_up_while_waiting_hears_the_cores_cancelled() {
    let admission = Admission::new(Instant::now(), Duration::from_secs(1));
    match admission.gave_up("demo") {
        ToolCallError::Call(CallError::Cancelled {
            server,
            notice: CancelNotice::NothingRunning,
        }) => assert_eq!(server, "demo"),
        other => panic!("expected Cancelled, got {other:?}"),
    }
}
