//! URL-mode elicitation against servers whose URL requests come from an
//! SDK, on both executors, through `Host::call`: in the 2025-11-25 era the
//! official Python SDK 1.x (`mcp` 1.30.0,
//! `tests/interop/python/mcp1/url_server.py`), in the 2026-07-28 era
//! standalone FastMCP 4.2.3 (`tests/interop/python/fastmcp/url_server.py`,
//! a URL input request of a multi round-trip result); both installed by
//! `tests/interop/install`. A URL reaches only a responder that says it
//! opens URLs, and its answer reaches the server (accept without content,
//! decline); a run that opens no URL does not declare URL mode: the 2025
//! server hears the spec's -32602, the 2026 call fails saying so; a -32042
//! refusal fails the call with its URLs, and the call goes through once
//! sent again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rho_host::{CallOptions, Host, UrlAnswer, UrlRequest};
use rho_proto_core::features::elicitation::{Form, FormAnswer};
use rho_proto_core::host::{Asked, HostServices, Responder};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::CallError;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

/// A person who answers every URL with `answer` (when `opens`), and
/// remembers what was shown.
struct Person {
    opens: bool,
    answer: UrlAnswer,
    shown: Mutex<Vec<(Asked, UrlRequest)>>,
}

impl Person {
    fn new(opens: bool, answer: UrlAnswer) -> Arc<Self> {
        Arc::new(Self {
            opens,
            answer,
            shown: Mutex::new(Vec::new()),
        })
    }

    fn shown(&self) -> Vec<(Asked, UrlRequest)> {
        self.shown.lock().expect("lock").clone()
    }
}

impl Responder for Person {
    fn elicit(&self, _asked: &Asked, _form: &Form) -> FormAnswer {
        FormAnswer::Declined
    }

    fn confirm_sampling(&self, _asked: &Asked, _question: &str) -> bool {
        false
    }

    fn can_open_urls(&self) -> bool {
        self.opens
    }

    fn open_url(&self, asked: &Asked, request: &UrlRequest) -> UrlAnswer {
        self.shown
            .lock()
            .expect("lock")
            .push((asked.clone(), request.clone()));
        self.answer
    }
}

/// The two servers, one per era.
#[derive(Clone, Copy, Debug)]
enum Server {
    /// Python `mcp` 1.30.0: `elicitation/create` requests, -32042.
    Mcp1,
    /// `fastmcp` 4.2.3: URL input requests of 2026-07-28 results.
    Fastmcp,
}

impl Server {
    /// The SDK's interpreter and the server's script.
    fn command(self) -> (PathBuf, PathBuf) {
        let sdk = match self {
            Server::Mcp1 => "mcp1",
            Server::Fastmcp => "fastmcp",
        };
        let (python, dir) = interop_python(sdk);
        (python, dir.join("url_server.py"))
    }

    /// The protocol version the session says it speaks with this server.
    fn era(self) -> &'static str {
        match self {
            Server::Mcp1 => "2025-11-25",
            Server::Fastmcp => "2026-07-28",
        }
    }
}

/// Starts `server` as `urls`, recording into `record`, `person` answering.
fn start<R: TestRuntime>(server: Server, record: &Path, person: &Arc<Person>) -> Host {
    let (python, script) = server.command();
    let config = format!(
        "[mcp.servers.urls]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}]\n\
         env = {{ INTEROP_RECORD = {} }}\nstartup_timeout_secs = 30\n",
        toml_path(&python),
        toml_path(&script),
        toml_path(record),
    );
    let mut options = options_with(&[]);
    options.host = HostServices {
        responder: Some(Arc::clone(person) as Arc<dyn Responder>),
        ..HostServices::default()
    };
    let host = R::start(&parse_config(&config), options);
    match host.server("urls").map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => {
            assert_eq!(report.protocol_version, server.era(), "{report:?}")
        }
        other => panic!("the URL server is not ready: {other:?}"),
    }
    host
}

fn recorded(record: &Path) -> Vec<String> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn scratch<R: TestRuntime>(name: &str) -> PathBuf {
    let dir = scratch_dir(&format!("url-elicitation-{name}-{}", R::NAME));
    let record = dir.join("record.txt");
    let _ = std::fs::remove_file(&record);
    record
}

fn an_opened_url_is_accepted_and_the_server_hears_accept<R: TestRuntime>(server: Server) {
    let record = scratch::<R>(&format!("accept-{server:?}"));
    let person = Person::new(true, UrlAnswer::Opened);
    let host = start::<R>(server, &record, &person);
    let result = host
        .call(("urls", "connect"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("{server:?}: the call failed: {e}"));
    assert_eq!(result.text(), "action=accept");
    let expected = match server {
        Server::Mcp1 => "action accept",
        // Accept carries no content.
        Server::Fastmcp => "action accept content None",
    };
    assert_eq!(recorded(&record), [expected]);
    let shown = person.shown();
    let [(asked, request)] = shown.as_slice() else {
        panic!("asked once: {shown:?}")
    };
    assert_eq!(asked.server, "urls");
    assert_eq!(asked.what.as_deref(), Some("connect"));
    assert_eq!(request.url, "https://auth.example.com/connect");
    assert_eq!(request.host, "auth.example.com");
    assert_eq!(request.message, "Connect your Example account to continue.");
    let id = match server {
        Server::Mcp1 => Some("elicit-1"),
        // The 2026 era's URL requests carry no id.
        Server::Fastmcp => None,
    };
    assert_eq!(request.elicitation_id.as_deref(), id);
    host.shutdown();
}

fn a_declined_url_is_declined_at_the_server<R: TestRuntime>(server: Server) {
    let record = scratch::<R>(&format!("decline-{server:?}"));
    let person = Person::new(true, UrlAnswer::Declined);
    let host = start::<R>(server, &record, &person);
    let result = host
        .call(("urls", "connect"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("{server:?}: the call failed: {e}"));
    assert_eq!(result.text(), "action=decline");
    assert!(
        recorded(&record)
            .first()
            .is_some_and(|l| l.starts_with("action decline")),
        "{:?}",
        recorded(&record)
    );
    host.shutdown();
}

fn a_run_that_opens_no_url_refuses_it_with_invalid_params<R: TestRuntime>() {
    let record = scratch::<R>("undeclared");
    let person = Person::new(false, UrlAnswer::Opened);
    let host = start::<R>(Server::Mcp1, &record, &person);
    let result = host
        .call(("urls", "connect"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("the call failed: {e}"));
    assert_eq!(result.text(), "error -32602");
    assert_eq!(
        recorded(&record),
        ["error -32602 URL-mode elicitation was not declared by this client"]
    );
    assert!(person.shown().is_empty(), "nobody was shown the URL");
    host.shutdown();
}

fn a_2026_url_input_rho_did_not_declare_fails_the_call<R: TestRuntime>() {
    let record = scratch::<R>("undeclared-2026");
    let person = Person::new(false, UrlAnswer::Opened);
    let host = start::<R>(Server::Fastmcp, &record, &person);
    match host.call(("urls", "connect"), json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(error @ CallError::InputRequired { .. })) => assert_eq!(
            error.to_string(),
            "server `urls` needs more input to finish the call: it asked the person to open a URL, which rho did not declare it could do here"
        ),
        other => panic!("expected the call to fail, got {other:?}"),
    }
    assert!(recorded(&record).is_empty(), "no retry reached the server");
    assert!(person.shown().is_empty(), "nobody was shown the URL");
    host.shutdown();
}

fn a_url_elicitation_required_error_carries_its_url_and_the_call_goes_through_again<
    R: TestRuntime,
>() {
    let record = scratch::<R>("required");
    let person = Person::new(true, UrlAnswer::Opened);
    let host = start::<R>(Server::Mcp1, &record, &person);
    match host.call(("urls", "needs_connect"), json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(CallError::UrlElicitationRequired {
            server,
            elicitations,
            ..
        })) => {
            assert_eq!(server, "urls");
            let [request] = elicitations.as_slice() else {
                panic!("{elicitations:?}")
            };
            assert_eq!(request.url, "https://auth.example.com/connect");
            assert_eq!(request.host, "auth.example.com");
            assert_eq!(request.elicitation_id.as_deref(), Some("elicit-2"));
        }
        other => panic!("expected the URLs to visit, got {other:?}"),
    }
    assert!(person.shown().is_empty(), "nothing asked, nothing opened");
    let result = host
        .call(("urls", "needs_connect"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("the second call failed: {e}"));
    assert_eq!(result.text(), "connected");
    assert_eq!(recorded(&record), ["needs_connect 1", "needs_connect 2"]);
    host.shutdown();
}

fn mcp1_url_accepted<R: TestRuntime>() {
    an_opened_url_is_accepted_and_the_server_hears_accept::<R>(Server::Mcp1);
}

fn mcp1_url_declined<R: TestRuntime>() {
    a_declined_url_is_declined_at_the_server::<R>(Server::Mcp1);
}

fn fastmcp_url_input_accepted<R: TestRuntime>() {
    an_opened_url_is_accepted_and_the_server_hears_accept::<R>(Server::Fastmcp);
}

fn fastmcp_url_input_declined<R: TestRuntime>() {
    a_declined_url_is_declined_at_the_server::<R>(Server::Fastmcp);
}

both_executors!(
    mcp1_url_accepted,
    mcp1_url_declined,
    fastmcp_url_input_accepted,
    fastmcp_url_input_declined,
    a_run_that_opens_no_url_refuses_it_with_invalid_params,
    a_2026_url_input_rho_did_not_declare_fails_the_call,
    a_url_elicitation_required_error_carries_its_url_and_the_call_goes_through_again,
);
