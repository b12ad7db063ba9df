//! rho on blocking threads against real server-everything over Streamable
//! HTTP on a loopback port: handshake, tools, calls, progress over SSE,
//! logs on the server's own stream, recovery from a restarted server,
//! DELETE at shutdown, redirect refusal, and connection reuse (through
//! a proxy that counts the connections it carries).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_host::CallOptions;
use rho_host::Host;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::ServerLog;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

fn ready(runtime: &Host, id: &str) -> rho_proto_core::runtime::status::ReadyReport {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

fn handshake_tools_and_echo_over_http<R: TestRuntime>() {
    let server = EverythingHttp::start();
    let runtime = R::start(&parse_config(&server.config("remote")), options_with(&[]));
    let report = ready(&runtime, "remote");
    assert_eq!(report.protocol_version, "2025-11-25");
    assert_eq!(report.pid, None, "no process for a remote server");
    assert!(runtime.tools().get("mcp__remote__echo").is_some());
    let result = runtime
        .call(
            "mcp__remote__echo",
            json!({"message": "over http"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    assert_eq!(result.text(), "Echo: over http");
    // Several calls in flight at once, each on its own POST.
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|i| {
                let runtime = &runtime;
                scope.spawn(move || {
                    runtime
                        .call(
                            "mcp__remote__echo",
                            json!({"message": format!("m{i}")}),
                            CallOptions::new(),
                        )
                        .map(|r| r.text())
                })
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            let text = call.join().expect("thread").expect("echo succeeds");
            assert_eq!(text, format!("Echo: m{i}"));
        }
    });
    runtime.shutdown();
}

fn progress_notifications_arrive_over_sse<R: TestRuntime>() {
    let server = EverythingHttp::start();
    let runtime = R::start(&parse_config(&server.config("remote")), options_with(&[]));
    ready(&runtime, "remote");
    let exported = runtime
        .tools()
        .tools()
        .iter()
        .find(|t| t.tool == "trigger-long-running-operation")
        .map(|t| t.name.clone())
        .expect("long-running tool exported");
    let mut seen = Vec::new();
    let result = runtime
        .call(
            &exported,
            json!({"duration": 1, "steps": 3}),
            CallOptions::new().on_progress(|p| seen.push(p)),
        )
        .expect("call succeeds");
    assert!(!result.is_error, "{result:?}");
    assert!(seen.len() >= 3, "progress seen: {seen:?}");
    assert!(seen.iter().all(|p| p.total == Some(3.0)), "{seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0].progress < w[1].progress),
        "{seen:?}"
    );
    runtime.shutdown();
}

fn server_logs_arrive_on_the_server_stream<R: TestRuntime>() {
    // Each executor variant runs its own server under its own id, and reads
    // only what that server logged: the two variants run in parallel.
    let id = format!("logsrv_{}", R::NAME);
    let logs = server_log_of(&id);
    let server = EverythingHttp::start();
    // The host hears the same messages as events (tracing is one consumer).
    let heard: Arc<Mutex<Vec<(String, ServerLog)>>> = Arc::default();
    let mut options = options_with(&[]);
    options.host.logs = Some(Arc::new({
        let heard = Arc::clone(&heard);
        move |server: &str, log: &ServerLog| {
            heard
                .lock()
                .expect("lock")
                .push((server.to_owned(), log.clone()))
        }
    }));
    let runtime = R::start(&parse_config(&server.config(&id)), options);
    ready(&runtime, &id);
    let toggle = runtime
        .tools()
        .tools()
        .iter()
        .find(|t| t.tool == "toggle-simulated-logging")
        .map(|t| t.name.clone())
        .expect("toggle exported");
    runtime
        .call(&toggle, json!({}), CallOptions::new())
        .expect("toggle succeeds");
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until
        && (logs.text().is_empty() || heard.lock().expect("lock").is_empty())
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = logs.text();
    assert!(
        text.lines().any(|l| l.contains("logger=")),
        "no server log arrived from `{id}`: {text:?}"
    );
    let heard = heard.lock().expect("lock").clone();
    assert!(
        heard
            .iter()
            .any(|(server, log)| server == &id && !log.level.is_empty() && !log.data.is_empty()),
        "the host heard no log event from `{id}`: {heard:?}"
    );
    runtime.shutdown();
}

fn a_restarted_server_gets_a_new_session_and_the_next_call_succeeds<R: TestRuntime>() {
    let mut server = EverythingHttp::start();
    let runtime = R::start(&parse_config(&server.config("remote")), options_with(&[]));
    ready(&runtime, "remote");
    runtime
        .call(
            "mcp__remote__echo",
            json!({"message": "before"}),
            CallOptions::new(),
        )
        .expect("echo before restart");
    server.restart();
    let result = runtime
        .call(
            "mcp__remote__echo",
            json!({"message": "after"}),
            CallOptions::new(),
        )
        .expect("echo after restart");
    assert_eq!(result.text(), "Echo: after");
    // One session on the first process, a fresh one on the second.
    assert_eq!(
        server.output().matches("Session initialized").count(),
        2,
        "{}",
        server.output()
    );
    assert!(matches!(
        runtime.server("remote").map(|s| s.status),
        Some(ServerStatus::Ready(_))
    ));
    runtime.shutdown();
}

fn delete_ends_the_session_at_shutdown<R: TestRuntime>() {
    let server = EverythingHttp::start();
    let runtime = R::start(&parse_config(&server.config("remote")), options_with(&[]));
    ready(&runtime, "remote");
    assert!(!server.output().contains("termination request"));
    runtime.shutdown();
    assert!(
        server.wait_for_output("Received session termination request", 20),
        "{}",
        server.output()
    );
}

/// A loopback HTTP server that answers every request with `status` and
/// `Location: location`, counting the connections it accepted.
fn redirecting_server(status: u16, location: String) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&hits);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 8192];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.read(&mut buf);
            let response = format!(
                "HTTP/1.1 {status} Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (port, hits)
}

fn a_redirect_fails_the_server_and_nothing_reaches_the_target<R: TestRuntime>() {
    let (target_port, target_hits) = redirecting_server(500, "unused".into());
    let target = format!("http://127.0.0.1:{target_port}/mcp");
    let (port, hits) = redirecting_server(302, target);
    let mut text = format!(
        "[mcp.servers.moved]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
    );
    let everything = EverythingHttp::start();
    text.push_str(&everything.config("fine"));
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    ready(&runtime, "fine");
    let error = match runtime.server("moved").map(|s| s.status) {
        Some(ServerStatus::Failed { error, .. }) => error,
        other => panic!("redirecting server should fail: {other:?}"),
    };
    assert!(error.contains("302"), "{error}");
    assert!(
        error.contains(&format!("http://127.0.0.1:{target_port}")),
        "{error}"
    );
    assert!(error.contains("never follows redirects"), "{error}");
    assert!(hits.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        target_hits.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
    runtime.shutdown();
}

/// A TCP proxy on a loopback port in front of `target`, counting the
/// connections it accepted.
fn counting_proxy(target: u16) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            counter.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                continue;
            };
            for (mut from, mut to) in [
                (
                    client.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                ),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    (port, accepted)
}

fn sequential_calls_reuse_their_connection<R: TestRuntime>() {
    let server = EverythingHttp::start();
    let (port, accepted) = counting_proxy(server.port());
    let text = format!(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
    );
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    ready(&runtime, "remote");
    runtime
        .call(
            "mcp__remote__echo",
            json!({"message": "first"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    let after_first = accepted.load(Ordering::SeqCst);
    // The POSTs of the handshake, the listings and the first call (eight
    // requests), and the GET stream: at connect tools/list goes beside one
    // catalog list at a time (prompts, then resources, then templates), so
    // two POSTs at most are in flight, on two connections. As with the
    // calls below, a listing that goes out as soon as its predecessor's
    // answer came, before that stream's end was read, takes one more
    // connection on a loaded machine (looped with the other core busy:
    // 1 run in 10 before this allowance).
    assert!(after_first <= 4, "{after_first} connections for one call");
    for i in 0..20 {
        let result = runtime
            .call(
                "mcp__remote__echo",
                json!({"message": format!("m{i}")}),
                CallOptions::new(),
            )
            .expect("echo succeeds");
        assert_eq!(result.text(), format!("Echo: m{i}"));
    }
    // A call that follows its predecessor before that one's body has
    // ended (the answer came first; the last chunk is being drained)
    // takes another connection, and from then on they take turns: on a
    // loaded machine one or two more, never one per call.
    let after_all = accepted.load(Ordering::SeqCst);
    assert!(
        after_all <= after_first + 3,
        "twenty more sequential calls opened {} connections",
        after_all - after_first
    );
    runtime.shutdown();
}

both_executors!(
    handshake_tools_and_echo_over_http,
    progress_notifications_arrive_over_sse,
    server_logs_arrive_on_the_server_stream,
    a_restarted_server_gets_a_new_session_and_the_next_call_succeeds,
    delete_ends_the_session_at_shutdown,
    a_redirect_fails_the_server_and_nothing_reaches_the_target,
    sequential_calls_reuse_their_connection,
);
