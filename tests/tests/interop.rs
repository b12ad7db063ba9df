//! The interop matrix: rho against real MCP servers built on the official
//! SDKs people deploy (`tests/interop/`: Python `mcp` 1.30.0 and 2.3.0,
//! standalone `fastmcp` 4.2.3, TypeScript `@modelcontextprotocol/sdk`
//! 1.32.2 and `@modelcontextprotocol/server` 2.4.0, Rust `rmcp` 3.11.0),
//! each over every transport its SDK offers (stdio; Streamable HTTP
//! stateful with SSE answers, with JSON answers, stateless), on both
//! executors.
//!
//! Every server exposes the same surface (see `tests/interop/README.md`),
//! and every (SDK, transport, executor) run checks each feature. The
//! outcome is a Markdown table written to `target/interop-table.md`
//! (`scripts/interop-table` copies it into docs/testing.md). A feature the SDK
//! itself cannot offer on a transport (a server request in stateless mode,
//! say) is `—` with a footnote, not a failure, when the check fails there;
//! rho must still end such a call on its own, with an error or a result,
//! well inside the call budget: a hang is a failure. Every other failed
//! check fails the test, listed with the error rho gave.
//!
//! The SDKs are installed by `tests/interop/install` (scripts/test runs it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_host::CallOptions;
use rho_host::{Cancel, Host};
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::elicitation::{Form, FormAnswer};
use rho_proto_core::host::{Asked, HostServices, Model, ModelError, Responder};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::{ReadyReport, ServerStatus};
use rho_proto_core::wire::protocol::CallToolResult;
use rho_tests::matrix::{Smol, TestRuntime, Threads};
use rho_tests::*;
use serde_json::{Value, json};

/// How long one feature call may take before the harness abandons it (a
/// hang); well under the configured call budget.
const CALL_BOUND: Duration = Duration::from_secs(6);
/// rho's call budget in every row (`tool_timeout_secs`).
const TOOL_BUDGET: Duration = Duration::from_secs(4);
/// How long the server has to record a cancelled `slow`, rho to see an
/// added tool, and log messages to reach rho's log: each must come, so
/// the bound only ends a wait that failed.
const SETTLE: Duration = Duration::from_secs(20);
/// Rows run at once (each one server process and one runtime).
const PARALLEL_ROWS: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Sdk {
    Mcp1,
    Mcp2,
    FastMcp,
    Ts1,
    Ts2,
    Rmcp,
}

impl Sdk {
    fn label(self) -> &'static str {
        match self {
            Sdk::Mcp1 => "Python `mcp` 1.30.0 (FastMCP)",
            Sdk::Mcp2 => "Python `mcp` 2.3.0 (MCPServer)",
            Sdk::FastMcp => "`fastmcp` 4.2.3",
            Sdk::Ts1 => "TS `@modelcontextprotocol/sdk` 1.32.2",
            Sdk::Ts2 => "TS `@modelcontextprotocol/server` 2.4.0",
            Sdk::Rmcp => "Rust `rmcp` 3.11.0",
        }
    }

    fn id(self) -> &'static str {
        match self {
            Sdk::Mcp1 => "mcp1",
            Sdk::Mcp2 => "mcp2",
            Sdk::FastMcp => "fastmcp",
            Sdk::Ts1 => "ts1",
            Sdk::Ts2 => "ts2",
            Sdk::Rmcp => "rmcp",
        }
    }

    /// The program that runs its server and the arguments before the
    /// transport's (the script, for an interpreted SDK).
    fn command(self) -> (PathBuf, Vec<PathBuf>) {
        let interop = tests_dir().join("interop");
        let python = |sdk: &str| {
            let dir = interop.join("python").join(sdk);
            let python = dir.join(".venv/bin/python");
            assert!(
                python.exists(),
                "the interop SDKs are not installed: run `tests/interop/install` (scripts/test does it)"
            );
            (python, vec![dir.join("server.py")])
        };
        match self {
            Sdk::Mcp1 => python("mcp1"),
            Sdk::Mcp2 => python("mcp2"),
            Sdk::FastMcp => python("fastmcp"),
            Sdk::Ts1 => {
                assert!(
                    interop
                        .join("ts1/node_modules/@modelcontextprotocol/sdk")
                        .is_dir(),
                    "the TypeScript SDK 1.x is not installed: run `tests/interop/install`"
                );
                ("node".into(), vec![interop.join("ts1/server.mjs")])
            }
            Sdk::Ts2 => {
                // Fails with the install hint when tests/servers is missing.
                let _ = node_modules();
                ("node".into(), vec![interop.join("ts2/server.js")])
            }
            Sdk::Rmcp => {
                // Built by tests/interop/install into the repository's
                // target directory, apart from the workspace's builds.
                let binary = tests_dir().join("../target/interop-rmcp/debug/interop-rmcp");
                assert!(
                    binary.exists(),
                    "the rmcp interop server is not built: run `tests/interop/install`"
                );
                (binary, Vec::new())
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Transport {
    Stdio,
    /// Streamable HTTP, stateful, answers as SSE streams.
    HttpSse,
    /// Streamable HTTP, stateful, answers as JSON bodies.
    HttpJson,
    /// Streamable HTTP without sessions.
    Stateless,
    /// The TypeScript SDK 2.x's one HTTP entry (`createMcpHandler`).
    Http,
}

impl Transport {
    fn arg(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::HttpSse => "http-sse",
            Transport::HttpJson => "http-json",
            Transport::Stateless => "stateless",
            Transport::Http => "http",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::HttpSse => "HTTP, SSE answers",
            Transport::HttpJson => "HTTP, JSON answers",
            Transport::Stateless => "HTTP, stateless",
            Transport::Http => "HTTP (createMcpHandler)",
        }
    }
}

/// Every (SDK, transport) row the matrix runs.
const ROWS: &[(Sdk, Transport)] = &[
    (Sdk::Mcp1, Transport::Stdio),
    (Sdk::Mcp1, Transport::HttpSse),
    (Sdk::Mcp1, Transport::HttpJson),
    (Sdk::Mcp1, Transport::Stateless),
    (Sdk::Mcp2, Transport::Stdio),
    (Sdk::Mcp2, Transport::HttpSse),
    (Sdk::Mcp2, Transport::HttpJson),
    (Sdk::Mcp2, Transport::Stateless),
    (Sdk::FastMcp, Transport::Stdio),
    (Sdk::FastMcp, Transport::HttpSse),
    (Sdk::FastMcp, Transport::HttpJson),
    (Sdk::FastMcp, Transport::Stateless),
    (Sdk::Ts1, Transport::Stdio),
    (Sdk::Ts1, Transport::HttpSse),
    (Sdk::Ts1, Transport::HttpJson),
    (Sdk::Ts1, Transport::Stateless),
    (Sdk::Ts2, Transport::Stdio),
    (Sdk::Ts2, Transport::Http),
    (Sdk::Rmcp, Transport::Stdio),
    (Sdk::Rmcp, Transport::HttpSse),
    (Sdk::Rmcp, Transport::HttpJson),
    (Sdk::Rmcp, Transport::Stateless),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Feature {
    Connect,
    Tools,
    Echo,
    Structured,
    Image,
    IsError,
    Progress,
    Cancel,
    Logging,
    Elicitation,
    Sampling,
    ListChanged,
    Prompt,
    Resource,
    Template,
}

const FEATURES: &[Feature] = &[
    Feature::Connect,
    Feature::Tools,
    Feature::Echo,
    Feature::Structured,
    Feature::Image,
    Feature::IsError,
    Feature::Progress,
    Feature::Cancel,
    Feature::Logging,
    Feature::Elicitation,
    Feature::Sampling,
    Feature::ListChanged,
    Feature::Prompt,
    Feature::Resource,
    Feature::Template,
];

impl Feature {
    fn label(self) -> &'static str {
        match self {
            Feature::Connect => "connect",
            Feature::Tools => "tools",
            Feature::Echo => "echo",
            Feature::Structured => "structured",
            Feature::Image => "image",
            Feature::IsError => "isError",
            Feature::Progress => "progress",
            Feature::Cancel => "cancel",
            Feature::Logging => "logging",
            Feature::Elicitation => "elicitation",
            Feature::Sampling => "sampling",
            Feature::ListChanged => "list_changed",
            Feature::Prompt => "prompt + completion",
            Feature::Resource => "resource",
            Feature::Template => "template + completion",
        }
    }
}

/// Why an SDK cannot offer a feature on a transport: the footnote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Limitation {
    /// A stateless server has no session: a server request's answer (a new
    /// POST) reaches another instance, and nothing outlives one request.
    Stateless,
    /// JSON answers carry one response: nothing can ride along it.
    JsonAnswers,
    /// The SDK declares `tools.listChanged: false` and has no setting for it.
    NoListChanged,
    /// JSON answers in the 2026 era: the SDK runs the request in the HTTP
    /// request's task without watching for the client going, and drops a
    /// posted `notifications/cancelled` on purpose.
    JsonUncancellable,
}

impl Limitation {
    fn mark(self) -> &'static str {
        match self {
            Limitation::Stateless => "—¹",
            Limitation::JsonAnswers => "—²",
            Limitation::NoListChanged => "—³",
            Limitation::JsonUncancellable => "—⁴",
        }
    }

    fn footnote(self) -> &'static str {
        match self {
            Limitation::Stateless => {
                "¹ Not offered by the SDK in stateless mode: a server-to-client request's answer arrives as a new POST at a fresh server instance that knows nothing of the running call, and nothing outlives one request (no GET stream for change notices). Checked: rho still ends the call on its own, well inside the call budget."
            }
            Limitation::JsonAnswers => {
                "² Not offered by the SDK with JSON answers: the response is one JSON body, so notifications and requests tied to a call (progress, log messages, forms, sampling; FastMCP's tools/list_changed, which it sends on the call's stream) have no stream to ride. Checked: rho still ends the call on its own."
            }
            Limitation::NoListChanged => {
                "³ FastMCP 1.x declares `tools.listChanged: false` (no setting changes it)."
            }
            Limitation::JsonUncancellable => {
                "⁴ Not offered by the SDK with JSON answers in the 2026-07-28 era: it runs the request in the HTTP request's own task without watching for the client going (`mcp/server/_streamable_http_modern.py`), and acknowledges and drops a posted `notifications/cancelled` on purpose (a client-chosen id could cancel another caller's work). Nothing a client does stops the tool. Checked: rho ends the call as cancelled at once, saying it closed the response stream, not that the server was told."
            }
        }
    }
}

/// The features an SDK cannot offer on a transport. Only consulted when
/// the check fails: a feature that works anyway shows `✓`.
fn limitation(sdk: Sdk, transport: Transport, feature: Feature) -> Option<Limitation> {
    use Feature::*;
    let modern = matches!(sdk, Sdk::Ts2);
    match transport {
        Transport::Stateless if matches!(feature, Elicitation | Sampling | ListChanged) => {
            Some(Limitation::Stateless)
        }
        Transport::HttpJson if matches!(feature, Progress | Logging | Elicitation | Sampling) => {
            Some(Limitation::JsonAnswers)
        }
        // FastMCP's list_changed rides the `add_tool` call's stream.
        Transport::HttpJson if sdk == Sdk::FastMcp && feature == ListChanged => {
            Some(Limitation::JsonAnswers)
        }
        Transport::HttpJson if matches!(sdk, Sdk::Mcp2 | Sdk::FastMcp) && feature == Cancel => {
            Some(Limitation::JsonUncancellable)
        }
        _ if !modern && sdk == Sdk::Mcp1 && feature == ListChanged => {
            Some(Limitation::NoListChanged)
        }
        _ => None,
    }
}

/// One feature's outcome on one executor.
#[derive(Clone, Debug)]
enum Outcome {
    Pass,
    Fail(String),
}

/// One run: (row, executor) → outcomes, and the era rho chose.
struct Run {
    sdk: Sdk,
    transport: Transport,
    executor: &'static str,
    era: Option<String>,
    outcomes: BTreeMap<Feature, Outcome>,
}

/// A person who fills every form with fixed answers and allows sampling.
struct Person;

impl Responder for Person {
    fn elicit(&self, _asked: &Asked, form: &Form) -> FormAnswer {
        let answers = form
            .fields
            .iter()
            .map(|f| {
                let value = if f.name == "agree" { "true" } else { "Ada" };
                (f.name.clone(), vec![value.to_owned()])
            })
            .collect();
        FormAnswer::Submitted(answers)
    }

    fn confirm_sampling(&self, _asked: &Asked, _question: &str) -> bool {
        true
    }
}

/// A model with a fixed reply.
struct FixedModel;

impl Model for FixedModel {
    fn name(&self) -> String {
        "interop-model".to_owned()
    }

    fn complete(&self, _system: &str, _prompt: &str) -> Result<String, ModelError> {
        Ok("hi from model".to_owned())
    }
}

/// An HTTP server process; killed on drop.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `call` with a cancel flag set after `bound`: the harness's guard
/// against a hang. Returns what the call gave and how long it took.
fn bounded<T>(bound: Duration, call: impl FnOnce(&Cancel) -> T) -> (T, Duration) {
    let (out, took, _) = cancelled_when(bound, || false, call);
    (out, took)
}

/// [`bounded`], with the flag set as soon as `now` holds too (checked
/// every 20 ms); also how long the call went on after the flag was set,
/// when it was set before the call ended.
fn cancelled_when<T>(
    bound: Duration,
    now: impl Fn() -> bool + Sync,
    call: impl FnOnce(&Cancel) -> T,
) -> (T, Duration, Option<Duration>) {
    let cancel = Cancel::new();
    let done = AtomicBool::new(false);
    let set_at = Mutex::new(None);
    let started = Instant::now();
    let (out, ended) = std::thread::scope(|scope| {
        scope.spawn(|| {
            while started.elapsed() < bound && !done.load(Ordering::Relaxed) && !now() {
                std::thread::sleep(Duration::from_millis(20));
            }
            *set_at.lock().expect("lock") = Some(Instant::now());
            cancel.cancel();
        });
        let out = call(&cancel);
        let ended = Instant::now();
        done.store(true, Ordering::Relaxed);
        (out, ended)
    });
    let after_flag = set_at
        .into_inner()
        .expect("lock")
        .and_then(|at| ended.checked_duration_since(at));
    (out, ended.duration_since(started), after_flag)
}

struct Row<'a> {
    runtime: &'a Host,
    id: &'a str,
}

impl Row<'_> {
    /// Calls `tool`; a call still running after [`CALL_BOUND`] is a hang.
    fn call(&self, tool: &str, arguments: Value) -> Result<CallToolResult, String> {
        let (result, took) = bounded(CALL_BOUND, |cancel| {
            self.runtime.call(
                (self.id, tool),
                arguments,
                CallOptions::new().cancel(cancel),
            )
        });
        result.map_err(|e| describe(e, took))
    }

    fn request(&self, method: &str, params: &Value) -> Result<Value, String> {
        let request = FeatureRequest::from_wire(method, params)
            .unwrap_or_else(|| panic!("harness: bad {method} params {params}"));
        let (result, took) = bounded(CALL_BOUND, |cancel| {
            self.runtime
                .request(self.id, request, CallOptions::new().cancel(cancel))
        });
        result.map_err(|e| describe(e, took))
    }

    fn ready(&self) -> Option<ReadyReport> {
        match self.runtime.server(self.id).map(|s| s.status) {
            Some(ServerStatus::Ready(report)) => Some(report),
            _ => None,
        }
    }

    fn tool_names(&self) -> Vec<String> {
        self.runtime
            .current_tools()
            .into_iter()
            .filter(|t| t.server == self.id)
            .map(|t| t.tool)
            .collect()
    }
}

/// The error rho gave, and whether the harness had to abandon the call.
fn describe(error: ToolCallError, took: Duration) -> String {
    if took >= CALL_BOUND {
        format!("hung: still running after {CALL_BOUND:?}, abandoned by the harness ({error})")
    } else {
        format!("{error} (after {} ms)", took.as_millis())
    }
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what()) }
}

const ALL_TOOLS: &[&str] = &[
    "echo",
    "structured",
    "image",
    "fail",
    "progress",
    "slow",
    "log",
    "ask",
    "sample",
    "add_tool",
];

/// Runs one row on executor `R`: starts the server, connects, checks
/// every feature.
fn run_row<R: TestRuntime>(sdk: Sdk, transport: Transport) -> Run {
    let id = format!("{}-{}-{}", sdk.id(), transport.arg(), R::NAME);
    let scratch = scratch_dir(&format!("interop-{id}"));
    let record = scratch.join("record.txt");
    let (program, script_args) = sdk.command();
    let mut run = Run {
        sdk,
        transport,
        executor: R::NAME,
        era: None,
        outcomes: BTreeMap::new(),
    };
    // The call budget is under the harness's hang bound: a call the SDK
    // can never finish (a form its transport cannot deliver) must be ended
    // by rho itself, with a reason, and that is what marks it `—`.
    let common = format!(
        "startup_timeout_secs = 20\ntool_timeout_secs = {}\nlog_level = \"debug\"\nsampling = \"ask\"\n",
        TOOL_BUDGET.as_secs()
    );
    let (config, _http) = if transport == Transport::Stdio {
        let config = format!(
            "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}\"stdio\"]\nenv = {{ INTEROP_RECORD = {} }}\n{common}",
            toml_path(&program),
            script_args
                .iter()
                .map(|a| format!("{}, ", toml_path(a)))
                .collect::<String>(),
            toml_path(&record),
        );
        (config, None)
    } else {
        let mut child = Command::new(&program)
            .args(&script_args)
            .arg(transport.arg())
            .env("INTEROP_RECORD", &record)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(
                std::fs::File::create(scratch.join("stderr.txt")).expect("stderr file"),
            ))
            .spawn()
            .unwrap_or_else(|e| panic!("start {id}: {e}"));
        let port = listening_port(&mut child, &id);
        let config = format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n{common}"
        );
        (config, Some(HttpServer(child)))
    };
    let log = server_log_of(&id);
    let mut options = options_with(&[]);
    options.host = HostServices {
        responder: Some(Arc::new(Person) as Arc<dyn Responder>),
        model: Some(Arc::new(FixedModel) as Arc<dyn Model>),
        ..HostServices::default()
    };
    let runtime = R::start(&parse_config(&config), options);
    let row = Row {
        runtime: &runtime,
        id: &id,
    };
    let mut set = |feature: Feature, result: Result<(), String>| {
        run.outcomes.insert(
            feature,
            match result {
                Ok(()) => Outcome::Pass,
                Err(e) => Outcome::Fail(e),
            },
        );
    };

    let Some(report) = row.ready() else {
        let status = runtime.server(&id).map(|s| s.status);
        set(Feature::Connect, Err(format!("not ready: {status:?}")));
        runtime.shutdown();
        return run;
    };
    run.era = Some(report.protocol_version.clone());
    set(Feature::Connect, Ok(()));
    // INTEROP_FEATURES=cancel,logging: only those checks (labels as in
    // the table), for loops over one feature.
    let only = std::env::var("INTEROP_FEATURES").unwrap_or_default();
    let wants = |f: Feature| only.is_empty() || only.split(',').any(|w| w == f.label());

    if wants(Feature::Tools) {
        let names = row.tool_names();
        set(
            Feature::Tools,
            check(
                ALL_TOOLS.iter().all(|t| names.iter().any(|n| n == t)),
                || format!("listed {names:?}"),
            ),
        );
    }

    if wants(Feature::Echo) {
        set(
            Feature::Echo,
            row.call("echo", json!({"message": "hi"})).and_then(|r| {
                check(r.text() == "Echo: hi" && !r.is_error, || {
                    format!("got {:?}", r.text())
                })?;
                // What the model reads: the string once, also where the
                // SDK wraps it as `{"result": ...}` (Python, fastmcp).
                let model = rho_proto_core::features::content::render(&r).model_text;
                check(model == "Echo: hi", || format!("the model reads {model:?}"))
            }),
        );
    }

    if wants(Feature::Structured) {
        let view = runtime.server(&id);
        let schema = view
            .as_ref()
            .and_then(|v| v.tools.iter().find(|t| t.name == "structured"))
            .and_then(|t| t.output_schema.clone());
        set(
            Feature::Structured,
            row.call("structured", json!({})).and_then(|r| {
                check(schema.is_some(), || "no outputSchema listed".into())?;
                check(
                    r.structured_content == Some(json!({"city": "Paris", "celsius": 21.5})),
                    || format!("structuredContent {:?}", r.structured_content),
                )
            }),
        );
    }

    if wants(Feature::Image) {
        set(
            Feature::Image,
            row.call("image", json!({})).and_then(|r| {
                let first = r.content.first().cloned().unwrap_or(Value::Null);
                check(
                    first["type"] == "image" && first["mimeType"] == "image/png",
                    || format!("content {:?}", r.content),
                )
            }),
        );
    }

    if wants(Feature::IsError) {
        set(
            Feature::IsError,
            row.call("fail", json!({})).and_then(|r| {
                check(r.is_error && r.text().contains("always fails"), || {
                    format!("is_error {} text {:?}", r.is_error, r.text())
                })
            }),
        );
    }

    if wants(Feature::Progress) {
        let updates = Mutex::new(0usize);
        let (progress, took) = bounded(CALL_BOUND, |cancel| {
            runtime.call(
                (&id, "progress"),
                json!({}),
                CallOptions::new()
                    .on_progress(|_| *updates.lock().expect("lock") += 1)
                    .cancel(cancel),
            )
        });
        let updates = *updates.lock().expect("lock");
        set(
            Feature::Progress,
            progress.map_err(|e| describe(e, took)).and_then(|r| {
                check(r.text() == "progress done" && updates == 3, || {
                    format!("{updates} progress updates, then {:?}", r.text())
                })
            }),
        );
    }

    if wants(Feature::Cancel) {
        // Cancel `slow` once the server says it is running it (not at a
        // time, when it might not have started yet); the server must
        // record that it stopped.
        let marker = format!("m{}", std::process::id());
        let running = format!("started {marker}");
        let (slow, took, after_flag) = cancelled_when(
            CALL_BOUND,
            || std::fs::read_to_string(&record).is_ok_and(|text| text.contains(&running)),
            |cancel| {
                runtime.call(
                    (&id, "slow"),
                    json!({"marker": marker, "seconds": 30}),
                    CallOptions::new().cancel(cancel),
                )
            },
        );
        let cancelled = {
            let until = Instant::now() + SETTLE;
            loop {
                let text = std::fs::read_to_string(&record).unwrap_or_default();
                if text.contains(&format!("cancelled {marker}")) || Instant::now() >= until {
                    break text;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        };
        set(
            Feature::Cancel,
            match slow {
                Ok(r) => Err(format!("not cancelled: {:?}", r.text())),
                Err(ToolCallError::Call(rho_proto_core::session::CallError::Cancelled {
                    ..
                })) if after_flag.is_some_and(|after| after < Duration::from_secs(2)) => {
                    check(cancelled.contains(&format!("cancelled {marker}")), || {
                        format!(
                            "rho ended the call as cancelled, but the server recorded {:?} within {SETTLE:?}",
                            cancelled.trim()
                        )
                    })
                }
                Err(e) => Err(format!(
                    "{e} (after {} ms, {} ms of them after the flag was set)",
                    took.as_millis(),
                    after_flag.unwrap_or_default().as_millis()
                )),
            },
        );
    }

    if wants(Feature::Logging) {
        set(
            Feature::Logging,
            row.call("log", json!({})).and_then(|r| {
                check(r.text() == "logged", || format!("got {:?}", r.text()))?;
                // Notifications may trail the result a little.
                let until = Instant::now() + SETTLE;
                loop {
                    let text = log.text();
                    let missing: Vec<&str> = ["debug", "info", "warning", "error"]
                        .into_iter()
                        .filter(|level| !text.contains(&format!("interop {level} message")))
                        .collect();
                    if missing.is_empty() {
                        return Ok(());
                    }
                    if Instant::now() >= until {
                        return Err(format!("no {missing:?} messages in rho's log: {text:?}"));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }),
        );
    }

    if wants(Feature::Elicitation) {
        set(
            Feature::Elicitation,
            row.call("ask", json!({})).and_then(|r| {
                check(r.text() == "answered name=Ada agree=true", || {
                    format!("got {:?} (is_error {})", r.text(), r.is_error)
                })
            }),
        );
    }

    if wants(Feature::Sampling) {
        set(
            Feature::Sampling,
            row.call("sample", json!({})).and_then(|r| {
                check(r.text() == "model said: hi from model", || {
                    format!("got {:?} (is_error {})", r.text(), r.is_error)
                })
            }),
        );
    }

    if wants(Feature::ListChanged) {
        set(
        Feature::ListChanged,
        row.call("add_tool", json!({})).and_then(|r| {
            check(r.text() == "added", || format!("got {:?}", r.text()))?;
            let until = Instant::now() + SETTLE;
            loop {
                let added = row.ready().map(|r| r.added_tools).unwrap_or_default();
                if added.iter().any(|t| t == "added")
                    || row.tool_names().iter().any(|t| t == "added")
                {
                    return Ok(());
                }
                if Instant::now() >= until {
                    return Err(format!(
                        "`added` neither reported nor listed within {SETTLE:?} (added_tools {added:?})"
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }),
    );
    }

    let values = |v: &Value| -> Vec<String> {
        v["completion"]["values"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    if wants(Feature::Prompt) {
        set(
        Feature::Prompt,
        row.request(
            "prompts/get",
            &json!({"name": "greet", "arguments": {"name": "bob"}}),
        )
        .and_then(|v| {
            check(v.to_string().contains("Hello, bob!"), || format!("got {v}"))?;
            let c = row.request(
                "completion/complete",
                &json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "al"}}),
            )?;
            check(values(&c) == ["alice", "albert"], || format!("completion {c}"))
        }),
    );
    }

    if wants(Feature::Resource) {
        set(
            Feature::Resource,
            row.request("resources/read", &json!({"uri": "interop://readme"}))
                .and_then(|v| {
                    check(
                        v["contents"][0]["text"]
                            == "rho interop server: every SDK exposes the same surface.",
                        || format!("got {v}"),
                    )
                }),
        );
    }

    if wants(Feature::Template) {
        set(
        Feature::Template,
        row.request("resources/read", &json!({"uri": "interop://items/apple"}))
            .and_then(|v| {
                check(v["contents"][0]["text"] == "item apple", || format!("got {v}"))?;
                let c = row.request(
                    "completion/complete",
                    &json!({"ref": {"type": "ref/resource", "uri": "interop://items/{item}"}, "argument": {"name": "item", "value": "ap"}}),
                )?;
                check(values(&c) == ["apple", "apricot"], || format!("completion {c}"))
            }),
    );
    }

    runtime.shutdown();
    run
}

/// One table cell: the two executors' outcomes.
fn cell(
    sdk: Sdk,
    transport: Transport,
    feature: Feature,
    runs: &[&Run],
    notes: &mut std::collections::BTreeSet<Limitation>,
) -> String {
    let marks: Vec<String> = runs
        .iter()
        .map(|run| match run.outcomes.get(&feature) {
            Some(Outcome::Pass) => "✓".to_owned(),
            Some(Outcome::Fail(_)) => match limitation(sdk, transport, feature) {
                Some(l) if excused(sdk, transport, feature, run, runs) => {
                    notes.insert(l);
                    l.mark().to_owned()
                }
                _ => "✗".to_owned(),
            },
            None => "·".to_owned(),
        })
        .collect();
    if marks.len() == 2 && marks[0] == marks[1] && marks[0].starts_with('—') {
        return marks[0].clone();
    }
    marks.join("/")
}

fn is_hang(run: &Run, feature: Feature) -> bool {
    matches!(run.outcomes.get(&feature), Some(Outcome::Fail(e)) if e.starts_with("hung"))
}

/// Whether a failed check is excused as the SDK's limitation: the SDK
/// cannot offer the feature there, rho ended the call itself (no hang),
/// and no executor managed it (one that does shows the other's failure is
/// rho's, not the SDK's).
fn excused(sdk: Sdk, transport: Transport, feature: Feature, run: &Run, pair: &[&Run]) -> bool {
    limitation(sdk, transport, feature).is_some()
        && !is_hang(run, feature)
        && !pair
            .iter()
            .any(|r| matches!(r.outcomes.get(&feature), Some(Outcome::Pass)))
}

/// The Markdown table and the failures that are not SDK limitations.
fn table(runs: &[Run]) -> (String, Vec<String>) {
    let mut out = String::new();
    out.push_str("| SDK | transport | era |");
    for f in FEATURES {
        out.push_str(&format!(" {} |", f.label()));
    }
    out.push_str("\n|---|---|---|");
    for _ in FEATURES {
        out.push_str("---|");
    }
    out.push('\n');
    let mut notes = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for &(sdk, transport) in ROWS {
        let pair: Vec<&Run> = ["threads", "smol"]
            .iter()
            .filter_map(|e| {
                runs.iter()
                    .find(|r| r.sdk == sdk && r.transport == transport && r.executor == *e)
            })
            .collect();
        let eras: Vec<String> = pair
            .iter()
            .map(|r| r.era.clone().unwrap_or_else(|| "—".into()))
            .collect();
        let era = if eras.windows(2).all(|w| w[0] == w[1]) {
            eras.first().cloned().unwrap_or_default()
        } else {
            eras.join("/")
        };
        out.push_str(&format!(
            "| {} | {} | {era} |",
            sdk.label(),
            transport.label()
        ));
        for &f in FEATURES {
            out.push_str(&format!(
                " {} |",
                cell(sdk, transport, f, &pair, &mut notes)
            ));
            for run in &pair {
                if let Some(Outcome::Fail(e)) = run.outcomes.get(&f) {
                    let excused = excused(sdk, transport, f, run, &pair);
                    let line = format!(
                        "{} / {} / {} / {}: {e}",
                        sdk.id(),
                        transport.arg(),
                        f.label(),
                        run.executor
                    );
                    if excused {
                        eprintln!("interop (not offered): {line}");
                    } else {
                        failures.push(line);
                    }
                }
            }
        }
        out.push('\n');
    }
    out.push_str(
        "\nEach cell: the thread executor / the smol executor (one mark when both agree on `—`). ✓ works, ✗ fails (see the test output), — not offered by the SDK there (rho ends such a call itself, within its budget, on both executors).\n",
    );
    for note in notes {
        out.push('\n');
        out.push_str(note.footnote());
        out.push('\n');
    }
    (out, failures)
}

/// Runs every row on both executors, `PARALLEL_ROWS` at a time, writes
/// `target/interop-table.md`, and fails listing every failure that is not
/// an SDK limitation.
#[test]
fn interop_matrix() {
    type Job = Box<dyn FnOnce() -> Run + Send>;
    // INTEROP_ONLY=ts1 (or ts1-stdio): only the rows whose `sdk-transport`
    // contains it, for a quick look at one SDK.
    let filter = std::env::var("INTEROP_ONLY").unwrap_or_default();
    let mut jobs: Vec<Job> = Vec::new();
    for &(sdk, transport) in ROWS {
        if !format!("{}-{}", sdk.id(), transport.arg()).contains(&filter) {
            continue;
        }
        jobs.push(Box::new(move || run_row::<Threads>(sdk, transport)));
        jobs.push(Box::new(move || run_row::<Smol>(sdk, transport)));
    }
    let queue = Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>());
    let runs = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL_ROWS {
            scope.spawn(|| {
                loop {
                    let Some((_, job)) = queue.lock().expect("queue").pop() else {
                        return;
                    };
                    let run = job();
                    eprintln!(
                        "interop: {} {} {} done at {:?}",
                        run.sdk.id(),
                        run.transport.arg(),
                        run.executor,
                        started.elapsed()
                    );
                    runs.lock().expect("runs").push(run);
                }
            });
        }
    });
    let runs = runs.into_inner().expect("runs");
    let (table, failures) = table(&runs);
    let target = tests_dir().join("../target");
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(target.join("interop-table.md"), &table).expect("write the table");
    eprintln!("{table}");
    assert!(
        failures.is_empty(),
        "{} interop failures (table in target/interop-table.md):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
