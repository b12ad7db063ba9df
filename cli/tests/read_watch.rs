//! `rho mcp read --watch` end to end, on both executors and in both
//! protocol eras: the real binary against `tests/servers/fixtures/watched.js`
//! (the official TypeScript server SDK 2.x, whose resource changes on a
//! timer here), stopped with SIGINT as a person's Ctrl-C stops it.
//!
//! It prints the resource, then again each time it changed (never the same
//! body twice in a row), exits 130 on the signal, and unsubscribes on the
//! way out (the 2025 server records the request). A server that does not
//! declare `resources.subscribe` (the interop server on the same SDK) is
//! refused before anything is sent, with a message naming the server and
//! what to do.

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::Scene;
use rho_tests::{node_server, tests_dir, toml_path};
use rustix::process::{Pid, Signal};

const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// How many bodies a run must print before it is stopped: the first read
/// and two changes.
const BODIES: usize = 3;

fn watched_js() -> std::path::PathBuf {
    tests_dir().join("servers/fixtures/watched.js")
}

/// Waits (up to `within`) for `child` to exit; kills it and fails past that.
fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for rho") {
            return status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rho did not exit within {within:?} of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn watches_until_interrupted(runtime: Runtime, era: &str) {
    let scene = Scene::new(RHO, &format!("read-watch-{era}"), runtime);
    let record = scene.dir().join("record");
    let mut env = format!(
        "WATCH_EVERY_MS = \"300\", WATCH_RECORD = {}",
        toml_path(&record)
    );
    if era == "2025" {
        env.push_str(", WATCH_ERA = \"2025\"");
    }
    let config = format!(
        "{}env = {{ {env} }}\n",
        node_server("w", &watched_js(), &["stdio"])
    );
    let scene = scene.with_config(&config);
    let mut command = scene.command();
    command
        .args(["mcp", "read", "--watch", "w", "watch://counter"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start rho");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while lines.len() < BODIES {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("rho printed only {lines:?} within 30 s");
            }
        }
    }
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits")).expect("not 0");
    rustix::process::kill_process(pid, Signal::INT).expect("signal rho");
    let status = wait_exit(&mut child, Duration::from_secs(10));
    lines.extend(rx.try_iter());
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
    }
    assert_eq!(status.code(), Some(130), "{era}: {stderr}");
    assert!(stderr.contains("stopped by SIGINT"), "{era}: {stderr}");
    // The first read, then each change: counts that only go up.
    let counts: Vec<u64> = lines
        .iter()
        .map(|l| {
            l.strip_prefix("count ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{era}: not a body: {l:?} in {lines:?}"))
        })
        .collect();
    assert!(
        counts.windows(2).all(|w| w[0] < w[1]),
        "{era}: each body printed once, in order: {counts:?}"
    );
    if era == "2025" {
        let seen = std::fs::read_to_string(&record).expect("the fixture's record");
        assert_eq!(
            seen, "subscribe watch://counter\nunsubscribe watch://counter\n",
            "subscribed, then unsubscribed on the way out"
        );
    }
}

fn read_watch_prints_each_change_until_ctrl_c_in_the_2025_era(runtime: Runtime) {
    watches_until_interrupted(runtime, "2025");
}

fn read_watch_prints_each_change_until_ctrl_c_in_the_2026_era(runtime: Runtime) {
    watches_until_interrupted(runtime, "2026");
}

fn read_watch_on_a_server_without_subscriptions_is_refused_naming_it(runtime: Runtime) {
    // The interop server on the TypeScript SDK 2.x: resources, and no
    // `resources.subscribe`.
    let config = node_server(
        "plain",
        &tests_dir().join("interop/ts2/server.js"),
        &["stdio"],
    );
    let scene = Scene::new(RHO, "read-watch-refused", runtime).with_config(&config);
    let run = scene.rho(&["mcp", "read", "--watch", "plain", "interop://readme"]);
    run.expect_code(2);
    let all = run.all();
    assert!(all.contains("server `plain`"), "{all}");
    assert!(all.contains("resources.subscribe"), "{all}");
    assert!(all.contains("without --watch"), "{all}");
}

both_executors!(
    read_watch_prints_each_change_until_ctrl_c_in_the_2025_era,
    read_watch_prints_each_change_until_ctrl_c_in_the_2026_era,
    read_watch_on_a_server_without_subscriptions_is_refused_naming_it,
);
