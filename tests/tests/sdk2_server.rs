//! rho against a real server built with the official TypeScript server SDK
//! 2.x (`tests/servers/fixtures/sdk2-server.js`, `@modelcontextprotocol/server`
//! 2.4.0), over stdio and Streamable HTTP on a loopback port, on both
//! executors: list, call, a form question answered through the responder,
//! two rounds of questions (the second carried in a sealed `requestState`),
//! a declined and a dismissed form, and a tool-list change seen while ready.
//!
//! rho finds the 2026-07-28 era with `server/discover` on both transports,
//! so the questions are multi round-trip requests: the tool's result asks
//! for input, rho asks the person, and retries the call with the answers
//! (and the SDK's sealed `requestState`, which it refuses if not echoed
//! exactly). Rounds are bounded: `count-rounds` asks to be retried as
//! often as told.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_host::CallOptions;
use rho_host::Host;
use rho_proto_core::features::elicitation::{FieldKind, Form, FormAnswer};
use rho_proto_core::host::{Asked, HostServices, Responder, RuntimeOptions};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::{ReadyReport, ServerStatus};
use rho_proto_core::session::CallError;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

/// The fixture's script.
fn sdk2_js() -> std::path::PathBuf {
    // Fails with the install hint when the SDK is missing.
    assert!(
        node_modules().join("@modelcontextprotocol/server").is_dir(),
        "the TypeScript server SDK is not installed: run `npm ci --prefix tests/servers`"
    );
    tests_dir().join("servers/fixtures/sdk2-server.js")
}

/// The fixture over HTTP on an ephemeral loopback port; killed on drop.
struct Sdk2Http {
    child: Child,
    port: u16,
}

impl Sdk2Http {
    fn start(tools_ttl_ms: Option<u64>) -> Self {
        let mut command = Command::new("node");
        if let Some(ttl) = tools_ttl_ms {
            command.env("SDK2_TOOLS_TTL_MS", ttl.to_string());
        }
        let mut child = command
            .arg(sdk2_js())
            .arg("http")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start node sdk2-server.js http");
        let port = listening_port(&mut child, "sdk2-server.js http");
        Self { child, port }
    }

    fn config(&self, id: &str) -> String {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}/mcp\"\n",
            self.port
        )
    }
}

impl Drop for Sdk2Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Which transport a test body runs over.
#[derive(Clone, Copy, Debug)]
enum Over {
    Stdio,
    Http,
}

/// A running fixture and the runtime connected to it as server `sdk`.
struct Connected {
    runtime: Host,
    _http: Option<Sdk2Http>,
}

fn connect<R: TestRuntime>(over: Over, host: HostServices) -> Connected {
    connect_with_ttl::<R>(over, host, None)
}

/// Like [`connect`], the server's `tools/list` fresh for `tools_ttl_ms`.
fn connect_with_ttl<R: TestRuntime>(
    over: Over,
    host: HostServices,
    tools_ttl_ms: Option<u64>,
) -> Connected {
    let (config, http) = match over {
        Over::Stdio => {
            let mut table = node_server("sdk", &sdk2_js(), &["stdio"]);
            if let Some(ttl) = tools_ttl_ms {
                table.push_str(&format!("env = {{ SDK2_TOOLS_TTL_MS = \"{ttl}\" }}\n"));
            }
            (table, None)
        }
        Over::Http => {
            let http = Sdk2Http::start(tools_ttl_ms);
            (http.config("sdk"), Some(http))
        }
    };
    let mut options: RuntimeOptions = options_with(&[]);
    options.host = host;
    let runtime = R::start(&parse_config(&config), options);
    ready(&runtime);
    Connected {
        runtime,
        _http: http,
    }
}

fn ready(runtime: &Host) -> ReadyReport {
    match runtime.server("sdk").map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `sdk` not ready: {other:?}"),
    }
}

/// A person who answers every form from a script and remembers what was
/// asked.
struct Person {
    /// Answers by field name; a form with no scripted field is dismissed.
    answers: Vec<(&'static str, &'static str)>,
    decline: bool,
    forms: Mutex<Vec<Form>>,
}

impl Person {
    fn answering(answers: &[(&'static str, &'static str)]) -> Arc<Self> {
        Arc::new(Self {
            answers: answers.to_vec(),
            decline: false,
            forms: Mutex::new(Vec::new()),
        })
    }

    fn declining() -> Arc<Self> {
        Arc::new(Self {
            answers: Vec::new(),
            decline: true,
            forms: Mutex::new(Vec::new()),
        })
    }

    fn forms(&self) -> Vec<Form> {
        self.forms.lock().expect("lock").clone()
    }

    fn host(self: &Arc<Self>) -> HostServices {
        HostServices {
            responder: Some(Arc::clone(self) as Arc<dyn Responder>),
            ..HostServices::default()
        }
    }
}

impl Responder for Person {
    fn elicit(&self, _asked: &Asked, form: &Form) -> FormAnswer {
        self.forms.lock().expect("lock").push(form.clone());
        if self.decline {
            return FormAnswer::CouldNotAsk;
        }
        let answers: std::collections::BTreeMap<String, Vec<String>> = form
            .fields
            .iter()
            .filter_map(|f| {
                let (_, text) = self.answers.iter().find(|(name, _)| *name == f.name)?;
                Some((f.name.clone(), vec![(*text).to_owned()]))
            })
            .collect();
        if answers.is_empty() {
            FormAnswer::Dismissed
        } else {
            FormAnswer::Submitted(answers)
        }
    }

    fn confirm_sampling(&self, _asked: &Asked, _question: &str) -> bool {
        false
    }
}

fn server_tools(runtime: &Host) -> Vec<String> {
    let mut names: Vec<String> = runtime
        .current_tools()
        .into_iter()
        .filter(|t| t.server == "sdk")
        .map(|t| t.tool)
        .collect();
    names.sort();
    names
}

fn lists_and_calls(over: Over, runtime: &Host) {
    let report = ready(runtime);
    assert_eq!(report.server_info.name, "rho-sdk2-fixture", "{over:?}");
    assert_eq!(
        report.protocol_version, "2026-07-28",
        "{over:?}: discovered"
    );
    assert_eq!(
        server_tools(runtime),
        [
            "ask-name",
            "confirm-then-name",
            "count-rounds",
            "echo",
            "list-roots",
            "summarize",
            "toggle-extra",
        ],
        "{over:?}: `extra` starts disabled"
    );
    let echo = runtime
        .call(
            ("sdk", "echo"),
            json!({"message": "hi"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    assert_eq!(echo.text(), "Echo: hi");
    assert!(!echo.is_error);
}

fn list_and_call_over_stdio<R: TestRuntime>() {
    let c = connect::<R>(Over::Stdio, HostServices::default());
    lists_and_calls(Over::Stdio, &c.runtime);
    c.runtime.shutdown();
}

fn list_and_call_over_http<R: TestRuntime>() {
    let c = connect::<R>(Over::Http, HostServices::default());
    lists_and_calls(Over::Http, &c.runtime);
    c.runtime.shutdown();
}

fn a_form_question_is_answered_through_the_responder(over: Over, runtime: &Host, person: &Person) {
    let result = runtime
        .call(("sdk", "ask-name"), json!({}), CallOptions::new())
        .expect("ask-name succeeds");
    assert_eq!(result.text(), "Hello, Ada", "{over:?}");
    let forms = person.forms();
    assert_eq!(forms.len(), 1, "{over:?}: asked once: {forms:?}");
    assert_eq!(forms[0].message, "What is your name?");
    assert_eq!(forms[0].fields.len(), 1);
    assert_eq!(forms[0].fields[0].name, "name");
    assert_eq!(forms[0].fields[0].title.as_deref(), Some("Your name"));
    assert_eq!(forms[0].fields[0].kind, FieldKind::Text);
}

fn form_question_over_stdio<R: TestRuntime>() {
    let person = Person::answering(&[("name", "Ada")]);
    let c = connect::<R>(Over::Stdio, person.host());
    a_form_question_is_answered_through_the_responder(Over::Stdio, &c.runtime, &person);
    c.runtime.shutdown();
}

fn form_question_over_http<R: TestRuntime>() {
    let person = Person::answering(&[("name", "Ada")]);
    let c = connect::<R>(Over::Http, person.host());
    a_form_question_is_answered_through_the_responder(Over::Http, &c.runtime, &person);
    c.runtime.shutdown();
}

fn two_rounds(over: Over, runtime: &Host, person: &Person) {
    let result = runtime
        .call(("sdk", "confirm-then-name"), json!({}), CallOptions::new())
        .expect("confirm-then-name succeeds");
    assert_eq!(result.text(), "Confirmed, Bo", "{over:?}");
    let messages: Vec<String> = person.forms().into_iter().map(|f| f.message).collect();
    assert_eq!(messages, ["Go ahead?", "Name to confirm?"], "{over:?}");
}

fn two_rounds_over_stdio<R: TestRuntime>() {
    let person = Person::answering(&[("confirm", "yes"), ("name", "Bo")]);
    let c = connect::<R>(Over::Stdio, person.host());
    two_rounds(Over::Stdio, &c.runtime, &person);
    c.runtime.shutdown();
}

fn two_rounds_over_http<R: TestRuntime>() {
    let person = Person::answering(&[("confirm", "yes"), ("name", "Bo")]);
    let c = connect::<R>(Over::Http, person.host());
    two_rounds(Over::Http, &c.runtime, &person);
    c.runtime.shutdown();
}

fn declined_and_dismissed(over: Over, declined: &Host, dismissing: &Host) {
    let result = declined
        .call(("sdk", "ask-name"), json!({}), CallOptions::new())
        .expect("the server reports the decline in its result");
    assert!(result.is_error, "{over:?}");
    assert_eq!(result.text(), "ask-name: decline", "{over:?}");
    match dismissing.call(("sdk", "ask-name"), json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(CallError::Cancelled { server, .. })) => assert_eq!(server, "sdk"),
        other => panic!("{over:?}: a dismissed form cancels the call, got {other:?}"),
    }
    let echo = dismissing
        .call(
            ("sdk", "echo"),
            json!({"message": "still here"}),
            CallOptions::new(),
        )
        .expect("echo after a dismissed form");
    assert_eq!(echo.text(), "Echo: still here");
}

fn declined_and_dismissed_forms<R: TestRuntime>() {
    for over in [Over::Stdio, Over::Http] {
        let declining = connect::<R>(over, Person::declining().host());
        // No scripted answer for `name`: the form is dismissed.
        let dismissing = connect::<R>(over, Person::answering(&[("other", "x")]).host());
        declined_and_dismissed(over, &declining.runtime, &dismissing.runtime);
        declining.runtime.shutdown();
        dismissing.runtime.shutdown();
    }
}

fn rounds_up_to_the_bound_and_no_further<R: TestRuntime>() {
    for over in [Over::Stdio, Over::Http] {
        let c = connect::<R>(over, HostServices::default());
        // Entered 9 times: 8 rounds of retries, the bound.
        let result = c
            .runtime
            .call(
                ("sdk", "count-rounds"),
                json!({"rounds": 9}),
                CallOptions::new(),
            )
            .expect("eight rounds are answered");
        assert_eq!(result.text(), "rounds: 9", "{over:?}");
        match c.runtime.call(
            ("sdk", "count-rounds"),
            json!({"rounds": 10}),
            CallOptions::new(),
        ) {
            Err(ToolCallError::Call(error @ CallError::InputRequired { .. })) => {
                assert!(error.to_string().contains("after 8 rounds"), "{error}")
            }
            other => panic!("{over:?}: a ninth round fails the call, got {other:?}"),
        }
        c.runtime.shutdown();
    }
}

/// Waits up to ten seconds for the server's status to report `tool` as
/// added since startup (a session's exported tool set is fixed once it
/// starts; an added tool is reported, never joined).
fn wait_for_added(runtime: &Host, tool: &str) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let added = ready(runtime).added_tools;
        if added.iter().any(|t| t == tool) || Instant::now() >= until {
            return added;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn a_tool_list_change_is_applied(over: Over, runtime: &Host) {
    assert!(ready(runtime).added_tools.is_empty(), "{over:?}");
    let toggled = runtime
        .call(("sdk", "toggle-extra"), json!({}), CallOptions::new())
        .expect("toggle-extra succeeds");
    assert_eq!(toggled.text(), "extra enabled");
    let added = wait_for_added(runtime, "extra");
    assert_eq!(added, ["extra"], "{over:?}: the server re-listed its tools");
    // The exported set stays the startup one.
    assert!(
        !server_tools(runtime).iter().any(|t| t == "extra"),
        "{over:?}"
    );
}

/// A 2026-only stdio server that answers nothing for its first 5 s (the
/// TypeScript SDK 2.x on a cold `npx -y`): its -32601 to the early
/// `initialize` says it is modern, so rho waits for its discovery result
/// and it is ready in the 2026 era. Before, a 3 s timer took it for a 2025
/// server and its -32601 failed the handshake.
fn a_modern_server_that_starts_after_five_seconds_is_ready<R: TestRuntime>() {
    let mut table = node_server("sdk", &sdk2_js(), &["stdio"]);
    table.push_str("env = { SDK2_START_DELAY_MS = \"5000\" }\n");
    let started = Instant::now();
    let runtime = R::start(&parse_config(&table), options_with(&[]));
    let report = ready(&runtime);
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "the fixture's delay held"
    );
    assert_eq!(report.protocol_version, "2026-07-28");
    let echo = runtime
        .call(
            ("sdk", "echo"),
            json!({"message": "late"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    assert_eq!(echo.text(), "Echo: late");
    runtime.shutdown();
}

/// The list is fresh for ten minutes, so no re-listing on a call finds
/// the change: only the `subscriptions/listen` stream tells rho.
fn a_tool_list_change_arrives_through_subscriptions_listen<R: TestRuntime>() {
    for over in [Over::Stdio, Over::Http] {
        let c = connect_with_ttl::<R>(over, HostServices::default(), Some(600_000));
        a_tool_list_change_is_applied(over, &c.runtime);
        c.runtime.shutdown();
    }
}

both_executors!(
    list_and_call_over_stdio,
    list_and_call_over_http,
    form_question_over_stdio,
    two_rounds_over_stdio,
    form_question_over_http,
    two_rounds_over_http,
    declined_and_dismissed_forms,
    rounds_up_to_the_bound_and_no_further,
    a_tool_list_change_arrives_through_subscriptions_listen,
    a_modern_server_that_starts_after_five_seconds_is_ready,
);
