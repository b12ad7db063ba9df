//! URL-mode elicitation against a server whose URL requests come from an
//! official SDK (Python `mcp` 1.30.0, `tests/interop/python/mcp1/url_server.py`;
//! installed by `tests/interop/install`), on both executors, through
//! `Host::call`: a URL reaches only a responder that says it opens URLs,
//! its answer reaches the server (accept without content, decline); a
//! run that opens no URL does not declare URL mode, and the server hears
//! the spec's -32602; a -32042 refusal fails the call with its URLs, and
//! the call goes through once sent again.

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

/// The SDK server's interpreter and script.
fn server() -> (PathBuf, PathBuf) {
    let dir = tests_dir().join("interop/python/mcp1");
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the interop SDKs are not installed: run `tests/interop/install`"
    );
    (python, dir.join("url_server.py"))
}

/// Starts the server as `urls`, recording into `record`, `person` answering.
fn start<R: TestRuntime>(record: &Path, person: &Arc<Person>) -> Host {
    let (python, script) = server();
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
    assert!(
        matches!(
            host.server("urls").map(|s| s.status),
            Some(ServerStatus::Ready(_))
        ),
        "the URL server is not ready"
    );
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

fn an_opened_url_is_accepted_and_the_server_hears_accept<R: TestRuntime>() {
    let record = scratch::<R>("accept");
    let person = Person::new(true, UrlAnswer::Opened);
    let host = start::<R>(&record, &person);
    let result = host
        .call(("urls", "connect"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("the call failed: {e}"));
    assert_eq!(result.text(), "action=accept");
    assert_eq!(recorded(&record), ["action accept"]);
    let shown = person.shown();
    let [(asked, request)] = shown.as_slice() else {
        panic!("asked once: {shown:?}")
    };
    assert_eq!(asked.server, "urls");
    assert_eq!(asked.what.as_deref(), Some("connect"));
    assert_eq!(request.url, "https://auth.example.com/connect");
    assert_eq!(request.host, "auth.example.com");
    assert_eq!(request.elicitation_id.as_deref(), Some("elicit-1"));
    assert_eq!(request.message, "Connect your Example account to continue.");
    host.shutdown();
}

fn a_declined_url_is_declined_at_the_server<R: TestRuntime>() {
    let record = scratch::<R>("decline");
    let person = Person::new(true, UrlAnswer::Declined);
    let host = start::<R>(&record, &person);
    let result = host
        .call(("urls", "connect"), json!({}), CallOptions::new())
        .unwrap_or_else(|e| panic!("the call failed: {e}"));
    assert_eq!(result.text(), "action=decline");
    assert_eq!(recorded(&record), ["action decline"]);
    host.shutdown();
}

fn a_run_that_opens_no_url_refuses_it_with_invalid_params<R: TestRuntime>() {
    let record = scratch::<R>("undeclared");
    let person = Person::new(false, UrlAnswer::Opened);
    let host = start::<R>(&record, &person);
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

fn a_url_elicitation_required_error_carries_its_url_and_the_call_goes_through_again<
    R: TestRuntime,
>() {
    let record = scratch::<R>("required");
    let person = Person::new(true, UrlAnswer::Opened);
    let host = start::<R>(&record, &person);
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

both_executors!(
    an_opened_url_is_accepted_and_the_server_hears_accept,
    a_declined_url_is_declined_at_the_server,
    a_run_that_opens_no_url_refuses_it_with_invalid_params,
    a_url_elicitation_required_error_carries_its_url_and_the_call_goes_through_again,
);
