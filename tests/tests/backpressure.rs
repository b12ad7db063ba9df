//! Backpressure towards a server that reads its stdin slowly, on both
//! executors: a burst of 1,000 calls (plus rho's answers to the 2,000 pings
//! the server sends meanwhile) is queued, never dropped, and every call is
//! answered once the server reads on.

use std::time::{Duration, Instant};

use rho_host::CallOptions;
use rho_proto_core::runtime::status::ServerStatus;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

const CALLS: usize = 1000;

fn a_burst_of_calls_to_a_slow_reader_is_all_answered<R: TestRuntime>() {
    let config = parse_config(&format!(
        "{}tool_timeout_secs = 60\n",
        node_server("slow", &flood_js(), &["slow-reader"])
    ));
    let runtime = R::start(&config, options_with(&[]));
    assert!(
        matches!(
            runtime.server("slow").map(|s| s.status),
            Some(ServerStatus::Ready(_))
        ),
        "{:?}",
        runtime.server("slow")
    );
    // 2 KiB of arguments each: together more than rho lets wait for one
    // server's stdin, so callers wait for room too.
    let pad = "p".repeat(2048);
    let started = Instant::now();
    let answers: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CALLS)
            .map(|n| {
                let (runtime, pad) = (&runtime, &pad);
                std::thread::Builder::new()
                    .stack_size(512 * 1024)
                    .spawn_scoped(scope, move || {
                        runtime
                            .call(
                                ("slow", "echo"),
                                json!({"n": n, "pad": pad}),
                                CallOptions::new(),
                            )
                            .map(|r| r.text())
                            .map_err(|e| e.to_string())
                    })
                    .expect("start a caller thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("caller panicked".into())))
            .collect()
    });
    let elapsed = started.elapsed();
    runtime.shutdown();
    let failed: Vec<(usize, &String)> = answers
        .iter()
        .enumerate()
        .filter_map(|(n, a)| a.as_ref().err().map(|e| (n, e)))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {CALLS} calls failed, first: {:?}",
        failed.len(),
        failed.first()
    );
    for (n, answer) in answers.iter().enumerate() {
        assert_eq!(answer.as_deref(), Ok(format!("echo {n}").as_str()));
    }
    // A hang guard: the server pauses for 2 s, the budget is 60 s.
    assert!(elapsed < Duration::from_secs(55), "took {elapsed:?}");
}

both_executors!(a_burst_of_calls_to_a_slow_reader_is_all_answered);

/// A server that stops reading its input altogether: once more than rho
/// lets wait for one server is queued, the next call is not queued too
/// (memory stays bounded) but fails within its budget, saying why.
fn calls_to_a_server_that_stopped_reading_fail_saying_so<R: TestRuntime>() {
    let config = parse_config(&format!(
        "{}tool_timeout_secs = 2\n",
        node_server("deaf", &flood_js(), &["deaf"])
    ));
    let runtime = R::start(&config, options_with(&[]));
    assert!(
        matches!(
            runtime.server("deaf").map(|s| s.status),
            Some(ServerStatus::Ready(_))
        ),
        "{:?}",
        runtime.server("deaf")
    );
    // Give the fixture time to stop reading.
    std::thread::sleep(Duration::from_millis(300));
    let pad = "p".repeat(600 * 1024);
    let mut errors = Vec::new();
    for n in 0..6 {
        let started = Instant::now();
        let error = runtime
            .call(
                ("deaf", "echo"),
                json!({"n": n, "pad": pad}),
                CallOptions::new(),
            )
            .expect_err("the server never answers");
        // A hang guard: the budget is 2 s.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let text = error.to_string();
        let stop = text.contains("has not read its input for 2 s");
        errors.push(text);
        if stop {
            break;
        }
    }
    // A caller waiting for room can still give up (Ctrl-C): it is
    // cancelled, not kept waiting for the rest of the budget.
    let cancel = rho_host::Cancel::new();
    cancel.cancel();
    let cancelled = runtime.call(
        ("deaf", "echo"),
        json!({"n": "last", "pad": pad}),
        CallOptions::new().cancel(&cancel),
    );
    runtime.shutdown();
    assert!(
        matches!(
            cancelled,
            Err(rho_proto_core::runtime::ToolCallError::Call(
                rho_proto_core::session::CallError::Cancelled { .. }
            ))
        ),
        "{cancelled:?}"
    );
    let last = errors.last().cloned().unwrap_or_default();
    assert!(
        last.contains("server `deaf`: the server has not read its input for 2 s")
            && last.contains("bytes are still waiting), so the call was not sent"),
        "{errors:#?}"
    );
}

both_executors!(calls_to_a_server_that_stopped_reading_fail_saying_so);
