//! Secrets a server echoes back never reach a failure reason, a call error
//! or a transcript, on both executors: `tests/servers/fixtures/echo-secrets.js`
//! quotes every configured header and environment value it got, over
//! stdio (stderr, a JSON-RPC error) and Streamable HTTP (a 401 body and
//! `WWW-Authenticate`, a 500 body, a JSON-RPC error) and in a server log
//! message. The recorded transcript still replays identically.

use rho_host::Host;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_host::CallOptions;
use rho_proto_core::runtime::status::ServerStatus;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

/// A bearer token from the environment (`headers_from_env`).
const TOKEN: &str = "tok-0123456789abcdef";
/// A literal header value.
const TENANT_KEY: &str = "tenant-key-9876543210";
/// A literal `env` value and an `env_from_env` value.
const ENV_LITERAL: &str = "literal-env-secret-42";
const ENV_AMBIENT: &str = "ambient-env-secret-77";

fn echo_js() -> PathBuf {
    tests_dir().join("servers/fixtures/echo-secrets.js")
}

/// The fixture's HTTP mode on an ephemeral loopback port.
struct EchoHttp {
    child: Child,
    port: u16,
}

impl EchoHttp {
    fn start() -> Self {
        let mut child = Command::new("node")
            .arg(echo_js())
            .arg("http")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start echo-secrets.js http");
        let port = listening_port(&mut child, "echo-secrets.js http");
        Self { child, port }
    }

    fn server(&self, id: &str, path: &str) -> String {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}{path}\"\n\
             headers = {{ X-Tenant-Key = \"{TENANT_KEY}\" }}\n\
             headers_from_env = {{ Authorization = \"ECHO_TEST_AUTH\" }}\n",
            self.port
        )
    }
}

impl Drop for EchoHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stdio_server(id: &str, mode: &str) -> String {
    format!(
        "{}env = {{ LITERAL_SECRET = \"{ENV_LITERAL}\" }}\nenv_from_env = {{ AMBIENT_SECRET = \"ECHO_TEST_ENV\" }}\n",
        node_server(id, &echo_js(), &[mode])
    )
}

fn ambient() -> [(&'static str, &'static str); 2] {
    [
        ("ECHO_TEST_AUTH", "Bearer tok-0123456789abcdef"),
        ("ECHO_TEST_ENV", ENV_AMBIENT),
    ]
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [TOKEN, TENANT_KEY, ENV_LITERAL, ENV_AMBIENT] {
        assert!(!text.contains(secret), "{what} shows `{secret}`:\n{text}");
    }
}

fn failure(runtime: &Host, id: &str) -> String {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Failed { error, .. }) => error,
        other => panic!("server `{id}` did not fail: {other:?}"),
    }
}

fn echoed_secrets_are_redacted_in_reasons_call_errors_and_transcripts<R: TestRuntime>() {
    let logs = captured_server_logs();
    let http = EchoHttp::start();
    let text = [
        stdio_server("stdio_fail", "stdio-fail"),
        stdio_server("stdio_serve", "stdio-serve"),
        http.server("unauthorized", "/unauthorized"),
        http.server("broken", "/broken"),
        http.server("rpc_error", "/rpc-error"),
        http.server("http_serve", "/mcp"),
    ]
    .join("\n");
    let config = parse_config(&text);
    let transcript = scratch_dir("secrets-transcript").join("run.jsonl");
    let mut options = options_with(&ambient());
    options.record = Some(Arc::new(
        TranscriptFile::create(&transcript).expect("transcript"),
    ));
    let runtime = R::start(&config, options);

    // Each failure shows what the server said, with the secrets hidden.
    let reason = failure(&runtime, "stdio_fail");
    assert!(reason.contains("LITERAL_SECRET=<redacted>"), "{reason}");
    assert!(reason.contains("AMBIENT_SECRET=<redacted>"), "{reason}");
    assert!(
        reason.contains("my environment:"),
        "the stderr tail: {reason}"
    );
    assert_no_secret("stdio_fail", &reason);
    let reason = failure(&runtime, "unauthorized");
    assert!(reason.contains("HTTP 401"), "{reason}");
    assert!(reason.contains("authorization: <redacted>"), "{reason}");
    assert_no_secret("unauthorized", &reason);
    let reason = failure(&runtime, "broken");
    assert!(reason.contains("HTTP 500"), "{reason}");
    assert!(reason.contains("x-tenant-key: <redacted>"), "{reason}");
    assert_no_secret("broken", &reason);
    let reason = failure(&runtime, "rpc_error");
    assert!(reason.contains("denied"), "{reason}");
    assert_no_secret("rpc_error", &reason);

    // A call's JSON-RPC error, message and data.
    for id in ["stdio_serve", "http_serve"] {
        let error = runtime
            .call((id, "leak"), json!({}), CallOptions::new())
            .expect_err("the tool answers with an error");
        let text = format!("{error} {error:?}");
        assert!(text.contains("leaking"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
        assert_no_secret(id, &text);
    }
    // A server log message quoting the environment (sent after the
    // handshake, so it may trail a little).
    let until = Instant::now() + Duration::from_secs(10);
    let logged = loop {
        let text = String::from_utf8_lossy(&logs.lock().expect("logs")).into_owned();
        if text.contains("got ") || Instant::now() > until {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(logged.contains("AMBIENT_SECRET=<redacted>"), "{logged}");
    assert_no_secret("the server log", &logged);
    runtime.shutdown();

    // The transcript holds the echoes (response heads and bodies, stdout
    // lines, events), all redacted, and still replays identically.
    let recorded = std::fs::read_to_string(&transcript).expect("read transcript");
    assert_no_secret("the transcript", &recorded);
    assert!(
        recorded.contains("www-authenticate"),
        "the 401 head is recorded"
    );
    assert!(recorded.contains("<redacted>"), "{recorded}");
    let replayed = rho_proto_core::transcript::replay(&recorded, Instant::now())
        .unwrap_or_else(|d| panic!("the redacted transcript diverged on replay: {d}"));
    assert_eq!(replayed.sessions, 6, "{replayed:?}");
}

both_executors!(echoed_secrets_are_redacted_in_reasons_call_errors_and_transcripts);
