//! Startup that meets a changing server, on both executors: a Streamable
//! HTTP server that forgets the session right after `initialize`
//! (`tests/servers/fixtures/expiring-http.js`) gets one fresh session, and
//! no more; server-everything's `tools/list_changed` during discovery
//! (it registers tools once initialized) is applied before ready.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::runtime::CallOptions;
use rho_proto_core::runtime::status::ServerStatus;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::{Value, json};

/// The expiring fixture, listening on loopback; killed on drop.
struct Expiring {
    child: Child,
    port: u16,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Expiring {
    fn start(mode: &str) -> Self {
        let script = tests_dir().join("servers/fixtures/expiring-http.js");
        let mut child = Command::new("node")
            .arg(script)
            .arg(mode)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start node expiring-http.js");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if let Some(port) = line.strip_prefix("listening ") {
                        let _ = port_tx.send(port.parse::<u16>().ok());
                    } else if let Ok(mut l) = lines.lock() {
                        l.push(line);
                    }
                }
            });
        }
        let port = port_rx
            .recv_timeout(Duration::from_secs(15))
            .ok()
            .flatten()
            .expect("the fixture printed its port");
        Self { child, port, lines }
    }

    fn config(&self, id: &str, startup_secs: u64) -> String {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}/mcp\"\nstartup_timeout_secs = {startup_secs}\n",
            self.port
        )
    }

    /// The fixture's event lines starting with `prefix`, once `expected`
    /// of them arrived or five seconds passed: the fixture writes each line
    /// before it answers, but the thread reading its stdout may not have
    /// caught up when the answer reaches the test.
    fn count(&self, prefix: &str, expected: usize) -> usize {
        let seen = || {
            self.lines
                .lock()
                .map(|l| l.iter().filter(|l| l.starts_with(prefix)).count())
                .unwrap_or(0)
        };
        let until = Instant::now() + Duration::from_secs(5);
        while seen() < expected && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        seen()
    }
}

impl Drop for Expiring {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn recovers_once_from<R: TestRuntime>(mode: &str) {
    let server = Expiring::start(mode);
    let runtime = R::start(
        &parse_config(&server.config("forgetful", 20)),
        options_with(&[]),
    );
    match runtime.server("forgetful").map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => {
            assert_eq!(report.server_info.name, "expiring-http", "{report:?}")
        }
        other => panic!("not ready after one expiry ({mode}): {other:?}"),
    }
    assert!(runtime.tools().get("mcp__forgetful__sessions").is_some());
    let result = runtime
        .call(("forgetful", "sessions"), json!({}), CallOptions::new())
        .expect("the call goes to the fresh session");
    let counts: Value = serde_json::from_str(&result.text()).expect("the fixture's counts");
    assert_eq!(counts, json!({"initializes": 2, "expired": 1}));
    assert_eq!(server.count("tools/call s2", 1), 1, "on the fresh session");
    runtime.shutdown();
}

fn a_session_forgotten_with_404_during_discovery_gets_one_fresh_initialize<R: TestRuntime>() {
    recovers_once_from::<R>("once-404");
}

fn a_session_forgotten_with_400_no_valid_session_during_discovery_recovers_too<R: TestRuntime>() {
    recovers_once_from::<R>("once-400");
}

fn a_server_that_forgets_every_session_fails_at_once_naming_it<R: TestRuntime>() {
    let server = Expiring::start("always-404");
    let started = Instant::now();
    let runtime = R::start(
        &parse_config(&server.config("amnesiac", 30)),
        options_with(&[]),
    );
    let error = match runtime.server("amnesiac").map(|s| s.status) {
        Some(ServerStatus::Failed { error, .. }) => error,
        other => panic!("expected a failure: {other:?}"),
    };
    assert!(error.contains("expired the session again"), "{error}");
    // At once: 3 s is room for a debug build on a loaded machine to
    // start and make two sessions, and far under the 30 s budget.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "failed at once, not at the 30 s budget: {:?}",
        started.elapsed()
    );
    assert_eq!(
        server.count("initialize ", 2),
        2,
        "exactly one fresh session"
    );
    runtime.shutdown();
}

/// `tools/list` requests recorded before the session's Ready event.
fn listings_before_ready(transcript: &str, server: &str) -> usize {
    let mut lists = 0;
    for line in transcript.lines() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if entry["s"] != server {
            continue;
        }
        let got = &entry["got"];
        if entry["poll"] == "event" && got.get("ready").is_some() {
            return lists;
        }
        if entry["poll"] == "output"
            && got["write"]
                .as_str()
                .is_some_and(|w| w.contains(r#""method":"tools/list""#))
        {
            lists += 1;
        }
    }
    panic!("no Ready event for `{server}` in the transcript");
}

fn server_everythings_list_changed_during_discovery_lists_again_before_ready<R: TestRuntime>() {
    let dir = scratch_dir("list-changed");
    let path = dir.join("run.jsonl");
    let mut options = options_with(&[]);
    options.record = Some(Arc::new(
        TranscriptFile::create(&path).expect("create the transcript"),
    ));
    let config = parse_config(&node_server("everything", &everything_js(), &["stdio"]));
    let runtime = R::start(&config, options);
    assert!(
        matches!(
            runtime.server("everything").map(|s| s.status),
            Some(ServerStatus::Ready(_))
        ),
        "{:?}",
        runtime.server("everything")
    );
    runtime.shutdown();
    let transcript = std::fs::read_to_string(&path).expect("read the transcript");
    // server-everything announces the tools it registers once initialized
    // while the first listing is out; the listing runs again.
    assert!(
        transcript.contains("notifications/tools/list_changed"),
        "the server announced a change"
    );
    assert_eq!(listings_before_ready(&transcript, "everything"), 2);
}

both_executors!(
    a_session_forgotten_with_404_during_discovery_gets_one_fresh_initialize,
    a_session_forgotten_with_400_no_valid_session_during_discovery_recovers_too,
    a_server_that_forgets_every_session_fails_at_once_naming_it,
    server_everythings_list_changed_during_discovery_lists_again_before_ready,
);
