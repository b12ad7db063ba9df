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
//!
//! A server killed under a running watch (its process group, from outside)
//! is started again and subscribed anew: the watch says so and prints the
//! new process's bodies (the fixture puts its pid in them). With restarts
//! off, the watch ends: it exits 1 naming the server, why, and what to
//! run. Each waits for lines or an exit that must come, within a bound.

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
    let (mut child, rx) = spawn_watch(&scene);
    let mut seen = Vec::new();
    for n in 1..=BODIES {
        wait_line(&mut child, &rx, &mut seen, &format!("body {n}"), |l| {
            matches!(l, Line::Out(_))
        });
    }
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits")).expect("not 0");
    rustix::process::kill_process(pid, Signal::INT).expect("signal rho");
    let status = wait_exit(&mut child, Duration::from_secs(10));
    drain(&rx, &mut seen);
    let (lines, stderr) = split(&seen);
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

/// One line rho wrote, and where.
#[derive(Debug)]
enum Line {
    Out(String),
    Err(String),
}

/// `rho mcp read --watch w watch://counter` on the fixture (bodies carry
/// the fixture's pid, bumped every 300 ms) with `restart`, its lines on one
/// channel.
fn watch_with_restart(
    runtime: Runtime,
    name: &str,
    era: &str,
    restart: &str,
    once: bool,
) -> (Scene, Child, mpsc::Receiver<Line>) {
    let scene = Scene::new(RHO, name, runtime);
    let mut env = "WATCH_EVERY_MS = \"300\", WATCH_SHOW_PID = \"1\"".to_owned();
    if once {
        let marker = scene.dir().join("started");
        env.push_str(&format!(", WATCH_ONCE = {}", toml_path(&marker)));
    }
    if era == "2025" {
        env.push_str(", WATCH_ERA = \"2025\"");
    }
    let config = format!(
        "{}env = {{ {env} }}\nrestart = {restart}\n",
        node_server("w", &watched_js(), &["stdio"])
    );
    let scene = scene.with_config(&config);
    let (child, rx) = spawn_watch(&scene);
    (scene, child, rx)
}

/// Starts `rho mcp read --watch w watch://counter` in `scene`, its stdout
/// and stderr lines on one channel, which closes once both end.
fn spawn_watch(scene: &Scene) -> (Child, mpsc::Receiver<Line>) {
    let mut command = scene.command();
    command
        .args(["mcp", "read", "--watch", "w", "watch://counter"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start rho");
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().expect("stdout");
    let err = child.stderr.take().expect("stderr");
    let tx_err = tx.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(Line::Out(line)).is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if tx_err.send(Line::Err(line)).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Takes every line left once rho has exited: until both streams end
/// (within 10 s).
fn drain(rx: &mpsc::Receiver<Line>, seen: &mut Vec<Line>) {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("rho's output never ended: {seen:?}"),
        }
    }
}

/// What rho wrote: its stdout lines, and its stderr as one text.
fn split(seen: &[Line]) -> (Vec<String>, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    for line in seen {
        match line {
            Line::Out(text) => out.push(text.clone()),
            Line::Err(text) => err.push(text.as_str()),
        }
    }
    (out, err.join("\n"))
}

/// Reads lines until `wanted` says one has come, within 30 s; every line
/// read goes to `seen`. Kills rho and panics past the bound.
fn wait_line(
    child: &mut Child,
    rx: &mpsc::Receiver<Line>,
    seen: &mut Vec<Line>,
    what: &str,
    wanted: impl Fn(&Line) -> bool,
) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let done = wanted(&line);
                seen.push(line);
                if done {
                    return;
                }
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no {what} within 30 s; saw {seen:?}");
            }
        }
    }
}

/// The pid in a body `count <n> pid <pid>`.
fn pid_in(line: &Line) -> Option<u32> {
    match line {
        Line::Out(text) => text.split_once(" pid ")?.1.parse().ok(),
        Line::Err(_) => None,
    }
}

fn kill_server(pid: u32) {
    rho_os::process::kill_group(pid);
}

fn read_watch_carries_on_after_its_server_is_killed_and_restarted(runtime: Runtime) {
    for era in ["2025", "2026"] {
        let (_scene, mut child, rx) = watch_with_restart(
            runtime,
            &format!("read-watch-restart-{era}"),
            era,
            "{ attempts = 3, backoff_ms = 100 }",
            false,
        );
        let mut seen = Vec::new();
        wait_line(&mut child, &rx, &mut seen, "first body", |l| {
            pid_in(l).is_some()
        });
        let first = seen.iter().find_map(pid_in).expect("a body");
        kill_server(first);
        wait_line(
            &mut child,
            &rx,
            &mut seen,
            "the renewal's line",
            |l| matches!(l, Line::Err(text) if text.contains("was started again")),
        );
        // Two bodies of the new process: its first read, and a change
        // heard through the renewed subscription.
        for n in 1..=2 {
            wait_line(
                &mut child,
                &rx,
                &mut seen,
                &format!("body {n} of the new process"),
                |l| pid_in(l).is_some_and(|pid| pid != first),
            );
        }
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits")).expect("not 0");
        rustix::process::kill_process(pid, Signal::INT).expect("signal rho");
        let status = wait_exit(&mut child, Duration::from_secs(10));
        assert_eq!(status.code(), Some(130), "{era}: {seen:?}");
        let renewal = seen
            .iter()
            .find_map(|l| match l {
                Line::Err(text) if text.contains("was started again") => Some(text.clone()),
                _ => None,
            })
            .expect("seen above");
        assert!(renewal.contains("server `w`"), "{renewal}");
        assert!(renewal.contains("watch://counter"), "{renewal}");
    }
}

/// A watch (as [`watch_with_restart`] starts it) whose server is killed
/// once it printed its first body, until rho exits: its exit status and
/// what it wrote to stderr.
fn killed_under_the_watch(
    runtime: Runtime,
    name: &str,
    era: &str,
    restart: &str,
    once: bool,
) -> (std::process::ExitStatus, String) {
    let (_scene, mut child, rx) = watch_with_restart(runtime, name, era, restart, once);
    let mut seen = Vec::new();
    wait_line(&mut child, &rx, &mut seen, "first body", |l| {
        pid_in(l).is_some()
    });
    let first = seen.iter().find_map(pid_in).expect("a body");
    kill_server(first);
    let status = wait_exit(&mut child, Duration::from_secs(30));
    drain(&rx, &mut seen);
    (status, split(&seen).1)
}

fn read_watch_ends_naming_its_server_when_it_dies_and_is_not_started_again(runtime: Runtime) {
    let (status, stderr) = killed_under_the_watch(
        runtime,
        "read-watch-dies",
        "2026",
        "{ attempts = 0 }",
        false,
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("server `w`"), "{stderr}");
    assert!(stderr.contains("not started again"), "{stderr}");
    assert!(stderr.contains("server exited"), "why: {stderr}");
    assert!(
        stderr.contains("rho mcp read --watch w watch://counter"),
        "what to run: {stderr}"
    );
}

/// The restarted process refuses the subscription (the fixture's
/// `WATCH_ONCE`, 2025 era): the watch ends, exit 1, with the server's
/// answer.
fn read_watch_ends_when_the_restarted_server_refuses_the_subscription(runtime: Runtime) {
    let (status, stderr) = killed_under_the_watch(
        runtime,
        "read-watch-refused-again",
        "2025",
        "{ attempts = 3, backoff_ms = 100 }",
        true,
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("server `w` was started again but did not take the subscription"),
        "{stderr}"
    );
    assert!(
        stderr.contains("this process takes no subscriptions"),
        "the server's answer: {stderr}"
    );
}

both_executors!(
    read_watch_ends_when_the_restarted_server_refuses_the_subscription,
    read_watch_carries_on_after_its_server_is_killed_and_restarted,
    read_watch_ends_naming_its_server_when_it_dies_and_is_not_started_again,
    read_watch_prints_each_change_until_ctrl_c_in_the_2025_era,
    read_watch_prints_each_change_until_ctrl_c_in_the_2026_era,
    read_watch_on_a_server_without_subscriptions_is_refused_naming_it,
);
