//! The one command: set up, measure everything interleaved, report.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::util::{self, Spread, bench_dir, repo_root};
use crate::workers::{WorkerOut, WorkerSpec};

/// Command-line options of the main run.
#[derive(Clone, Debug)]
pub struct Options {
    pub quick: bool,
    pub write: bool,
    pub rounds: usize,
    pub n: usize,
    /// Warm-up calls per client over HTTP, where the server is shared and
    /// warmed once, before the first round, with `server_warmup` calls.
    pub warmup: usize,
    /// Warm-up calls per client over stdio, where each client starts its
    /// own server: enough for server-everything's JIT to settle. Node
    /// answers about twice as fast after its first few thousand calls,
    /// and a client's CPU per call depends on how fast answers come
    /// (how many one wake-up finds), so figures taken during that ramp
    /// were up to 40% higher at 16 in flight and swung from round to
    /// round.
    pub server_warmup: usize,
}

impl Options {
    pub fn parse(args: &[String]) -> Self {
        let quick = args.iter().any(|a| a == "--quick");
        let value = |name: &str| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.parse::<usize>().ok())
        };
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--quick" | "--no-write" => i += 1,
                "--rounds" | "--n"
                    if args.get(i + 1).is_some_and(|v| v.parse::<usize>().is_ok()) =>
                {
                    i += 2
                }
                other => {
                    eprintln!("bench: unexpected argument `{other}` (see --help)");
                    std::process::exit(2);
                }
            }
        }
        Self {
            quick,
            write: !args.iter().any(|a| a == "--no-write"),
            rounds: value("--rounds").unwrap_or(if quick { 1 } else { 7 }),
            n: value("--n").unwrap_or(if quick { 32 } else { 500 }),
            warmup: if quick { 5 } else { 100 },
            server_warmup: if quick { 5 } else { 3000 },
        }
    }
}

/// What this machine has for the clients.
struct Env {
    self_exe: PathBuf,
    rho_bin: Option<PathBuf>,
    ts: bool,
    python: Option<PathBuf>,
    rmcp: bool,
    tmp: PathBuf,
}

/// Everything measured, as written to `bench/results.json`.
#[derive(Debug, Default, Serialize)]
pub struct Results {
    pub machine: BTreeMap<String, String>,
    pub options: BTreeMap<String, Value>,
    pub core: Vec<CoreStat>,
    pub round_trips: Vec<RoundTripStat>,
    pub counted: Vec<crate::counted::CountedStat>,
    pub startup: Vec<StartupStat>,
    pub memory: Vec<MemoryStat>,
    pub one_server: Vec<OneServerStat>,
    pub size: Vec<SizeStat>,
    pub large: Vec<LargeStat>,
    pub large_core: Vec<CoreStat>,
    pub notes: Vec<String>,
    pub total_seconds: f64,
}

#[derive(Debug, Serialize)]
pub struct CoreStat {
    pub case: String,
    pub bytes_per_message: usize,
    /// Messages per second through the session.
    pub session_msgs_per_s: Spread,
    /// Messages per second through `serde_json::from_slice::<Value>` alone.
    pub serde_msgs_per_s: Spread,
    /// Session time per message over serde_json's: ≥ 1, lower is better.
    pub ratio_to_limit: f64,
    pub session_ns_per_msg: f64,
    pub serde_ns_per_msg: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoundTripStat {
    pub transport: String,
    pub server: String,
    pub client: String,
    pub inflight: usize,
    pub rounds_ok: usize,
    pub errors: Vec<String>,
    /// Pooled over every call of every round.
    pub latency_median_us: f64,
    pub latency_p90_us: f64,
    /// The per-round medians: their median, min and max.
    pub latency_round_medians_us: Spread,
    pub cpu_per_call_us: Spread,
    pub calls_per_s: Spread,
    /// Context switches of the client process per call.
    pub switches_per_call: Spread,
    pub cpu_ratio_to_bare: Option<f64>,
    pub latency_ratio_to_bare: Option<f64>,
    pub result_len: usize,
    /// Raw per-call latencies are not kept in the JSON; these are the
    /// per-round samples behind the spreads.
    pub rounds: Vec<RoundSample>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoundSample {
    pub latency_median_us: f64,
    pub cpu_per_call_us: f64,
    pub calls_per_s: f64,
    pub switches_per_call: f64,
}

#[derive(Debug, Serialize)]
pub struct StartupStat {
    pub case: String,
    /// Process start to exit.
    pub wall_s: Spread,
    /// Process start to the end of its report (stdout closed).
    pub report_s: Spread,
    /// The slowest server's time to ready as rho reports it (`elapsed_ms`).
    pub ready_s: Option<Spread>,
    pub limit_case: String,
    /// The limit: spawn → tools/list answered (the slowest server).
    pub limit_s: Spread,
    /// The bare client's spawn → every server exited after stdin closed.
    pub limit_exit_s: Option<Spread>,
    /// Wall over the limit.
    pub ratio_to_limit: f64,
    /// Report over the limit: the bar for `list --connect`.
    pub report_ratio_to_limit: f64,
    /// Ready over the limit.
    pub ready_ratio_to_limit: Option<f64>,
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct MemoryStat {
    pub case: String,
    pub peak_rss_bytes: Spread,
    pub limit_case: String,
    pub limit_bytes: Spread,
    pub ratio_to_limit: f64,
}

/// Peak RSS of a one-server client in a binary of its own (`bench/src/one/`).
#[derive(Debug, Serialize)]
pub struct OneServerStat {
    pub server: String,
    pub client: String,
    pub peak_rss_bytes: Spread,
    /// Of the process's resident pages at exit, those backed by files
    /// (its code and read-only data) and anonymous ones (heap, stacks,
    /// relocated data).
    pub file_bytes: Spread,
    pub anon_bytes: Spread,
    /// The peak over the bare one-server client's (the limit).
    pub ratio_to_bare: Option<f64>,
    /// The peak over that of the rmcp client that reaches the same
    /// transports (stdio only, or stdio or HTTP).
    pub ratio_to_rmcp: Option<f64>,
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct SizeStat {
    pub case: String,
    pub bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct LargeStat {
    pub file_bytes: u64,
    pub message_bytes: u64,
    pub client: String,
    pub rounds_ok: usize,
    pub errors: Vec<String>,
    pub latency_s: Spread,
    pub cpu_s: Spread,
    pub latency_ratio_to_bare: Option<f64>,
    pub cpu_ratio_to_bare: Option<f64>,
    pub result_len: usize,
}

pub fn main(options: Options) {
    let started = Instant::now();
    let env = setup(&options);
    let mut results = Results {
        machine: machine(&env),
        ..Results::default()
    };
    results.options = BTreeMap::from([
        ("quick".to_owned(), json!(options.quick)),
        ("rounds".to_owned(), json!(options.rounds)),
        ("n".to_owned(), json!(options.n)),
        ("warmup".to_owned(), json!(options.warmup)),
        ("server_warmup".to_owned(), json!(options.server_warmup)),
        ("inflight".to_owned(), json!([1, 16])),
    ]);
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        results
            .machine
            .insert("loadavg_at_start".into(), load.trim().to_owned());
    }

    section("1. core throughput");
    results.core = core_throughput(&options);
    let ticks_at_start = util::cpu_ticks();
    section("2-3. round trips (stdio, Streamable HTTP)");
    let ticks_before_round_trips = util::cpu_ticks();
    results.round_trips = round_trips(&options, &env, &mut results.notes);
    if let Some(share) = util::stolen_share(ticks_before_round_trips, util::cpu_ticks()) {
        results.machine.insert(
            "cpu_stolen_round_trips".into(),
            format!("{:.1}%", share * 100.0),
        );
    }
    section("2c. counted cost per call (stdio and HTTP)");
    results.counted = counted(&options, &env, &mut results.notes);
    section("4-5. startup, memory, size");
    (results.startup, results.memory) = startup(&options, &env, &mut results.notes);
    results.one_server = one_server(&options, &env, &mut results.notes);
    results.size = size(&env);
    section("6. large result");
    (results.large, results.large_core) = large(&options, &env, &mut results.notes);
    results.total_seconds = started.elapsed().as_secs_f64();
    if let Some(share) = util::stolen_share(ticks_at_start, util::cpu_ticks()) {
        results.machine.insert(
            "cpu_stolen_whole_run".into(),
            format!("{:.1}%", share * 100.0),
        );
    }

    let markdown = crate::report::markdown(&results);
    println!("\n{markdown}");
    if options.write {
        let root = repo_root();
        // `bench door --write`'s section is its own run's: kept as it was.
        let markdown = keep_door_section(&markdown, &root.join("BENCHMARKS.md"));
        std::fs::write(root.join("BENCHMARKS.md"), &markdown).expect("write BENCHMARKS.md");
        std::fs::write(
            bench_dir().join("results.json"),
            serde_json::to_string_pretty(&results).expect("serialize") + "\n",
        )
        .expect("write results.json");
        std::fs::write(
            bench_dir().join("latency.svg"),
            crate::report::latency_svg(&results),
        )
        .expect("write latency.svg");
        eprintln!("wrote BENCHMARKS.md, bench/results.json, bench/latency.svg");
    }
    let _ = std::fs::remove_dir_all(&env.tmp);
    eprintln!("bench: done in {:.0} s", started.elapsed().as_secs_f64());
    let (passed, failed) = checks(&results);
    if options.quick {
        // The smoke run's verdict (scripts/test counts this line): every
        // measurement that ran produced a figure.
        println!("bench smoke: {passed} passed, {failed} failed");
        if failed > 0 {
            std::process::exit(1);
        }
    } else {
        eprintln!("bench: {passed} measurements, {failed} without a figure (see the notes)");
    }
}

/// Counts measurements with a figure and without one.
fn checks(r: &Results) -> (usize, usize) {
    let mut ok = 0;
    let mut bad = 0;
    let mut count = |good: bool| if good { ok += 1 } else { bad += 1 };
    for c in r.core.iter().chain(&r.large_core) {
        count(c.ratio_to_limit.is_finite() && c.ratio_to_limit > 0.0);
    }
    for s in &r.round_trips {
        count(s.rounds_ok > 0 && s.result_len == "Echo: hello".len());
    }
    for s in &r.counted {
        count(s.errors.is_empty());
    }
    for s in &r.startup {
        count(s.errors.is_empty() && s.wall_s.n > 0 && s.ratio_to_limit.is_finite());
    }
    for s in &r.memory {
        count(s.peak_rss_bytes.n > 0);
    }
    for s in &r.one_server {
        count(s.errors.is_empty() && s.peak_rss_bytes.n > 0);
    }
    for s in &r.size {
        count(s.bytes > 0);
    }
    for s in &r.large {
        // Past a client's documented line cap, failing is its behaviour,
        // not the harness's: only results under every cap must succeed.
        if s.message_bytes < 10 << 20 {
            count(s.rounds_ok > 0 && s.result_len as u64 == s.file_bytes);
        }
    }
    (ok, bad)
}

fn section(title: &str) {
    eprintln!("\n== {title} ==");
}

// ----- setup -----

fn setup(options: &Options) -> Env {
    let root = repo_root();
    let tmp = std::env::temp_dir().join(format!("rho-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("temp dir");
    let node = util::command_line("node", &["--version"]).is_some();
    if node && !util::everything_js().exists() {
        eprintln!("installing the pinned test servers (npm ci --prefix tests/servers)");
        let _ = Command::new("npm")
            .args(["ci", "--prefix", "tests/servers", "--no-audit", "--no-fund"])
            .current_dir(&root)
            .status();
    }
    assert!(
        util::everything_js().exists(),
        "the MCP test servers are missing: run `npm ci --prefix tests/servers` (needs Node.js)"
    );
    // The TypeScript SDK client: installed from its lockfile when missing
    // (not in --quick, which skips it instead).
    let clients = bench_dir().join("clients");
    let ts_sdk = clients.join("node_modules/@modelcontextprotocol/sdk/package.json");
    if node && !ts_sdk.exists() && !options.quick {
        eprintln!("installing the TypeScript SDK client (npm ci in bench/clients)");
        let _ = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&clients)
            .status();
    }
    let ts = node && ts_sdk.exists();
    // The Python SDK client, in bench/.venv.
    let venv_python = bench_dir().join(".venv/bin/python");
    let marker = bench_dir().join(".venv/.requirements-installed");
    let requirements = clients.join("requirements.txt");
    let stale = !marker.exists()
        || modified(&requirements).is_some_and(|r| modified(&marker).is_none_or(|m| r > m));
    if stale && !options.quick && util::command_line("python3", &["--version"]).is_some() {
        eprintln!("installing the Python SDK client into bench/.venv");
        let ok = (venv_python.exists()
            || Command::new("python3")
                .args(["-m", "venv"])
                .arg(bench_dir().join(".venv"))
                .status()
                .is_ok_and(|s| s.success()))
            && Command::new(&venv_python)
                .args(["-m", "pip", "install", "-q", "-r"])
                .arg(&requirements)
                .status()
                .is_ok_and(|s| s.success());
        if ok {
            let _ = std::fs::write(&marker, "");
        }
    }
    let python = marker.exists().then_some(venv_python);
    // rho's release binary, for startup, memory and size.
    if !options.quick {
        eprintln!("building rho (cargo build --release -p rho-cli)");
        let status = Command::new("cargo")
            .args(["build", "--release", "-p", "rho-cli"])
            .current_dir(&root)
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("bench: building rho failed; startup and size are skipped");
        }
    }
    if !options.quick {
        build_one_server_clients();
    }
    let release = root.join("target/release/rho");
    let debug = root.join("target/debug/rho");
    let rho_bin = if release.exists() {
        Some(release)
    } else if options.quick && debug.exists() {
        Some(debug)
    } else {
        None
    };
    let env = Env {
        self_exe: std::env::current_exe().expect("own path"),
        rho_bin,
        ts,
        python,
        rmcp: cfg!(feature = "rmcp"),
        tmp,
    };
    eprintln!(
        "clients: rho-smol rho-blocking bare{}{}{}; rho binary: {}",
        if env.rmcp { " rmcp" } else { "" },
        if env.ts { " ts" } else { "" },
        if env.python.is_some() { " python" } else { "" },
        env.rho_bin
            .as_ref()
            .map_or("none".into(), |p| p.display().to_string())
    );
    env
}

fn modified(path: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn machine(env: &Env) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    m.insert(
        "nproc".into(),
        util::command_line("nproc", &[]).unwrap_or_default(),
    );
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_default();
    m.insert("cpu".into(), cpu);
    m.insert(
        "pinning".into(),
        match util::Pinning::detect() {
            Some(p) => format!(
                "clients on CPU {}, their servers on CPU {} (taskset)",
                p.client, p.server
            ),
            None => "none (no taskset, or CPUs 0 and 1 are not both usable)".into(),
        },
    );
    m.insert(
        "kernel".into(),
        util::command_line("uname", &["-sr"]).unwrap_or_default(),
    );
    m.insert(
        "rustc".into(),
        util::command_line("rustc", &["--version"]).unwrap_or_default(),
    );
    m.insert(
        "node".into(),
        util::command_line("node", &["--version"]).unwrap_or_else(|| "missing".into()),
    );
    let python = env
        .python
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "python3".into());
    m.insert(
        "python".into(),
        util::command_line(&python, &["--version"]).unwrap_or_else(|| "missing".into()),
    );
    m.insert(
        "date".into(),
        util::command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
    );
    m.insert(
        "rho_commit".into(),
        util::command_line(
            "git",
            &[
                "-C",
                &repo_root().display().to_string(),
                "describe",
                "--always",
                "--dirty",
            ],
        )
        .unwrap_or_default(),
    );
    let lock = std::fs::read_to_string(bench_dir().join("Cargo.lock")).unwrap_or_default();
    let crate_version = |name: &str| {
        let needle = format!("name = \"{name}\"\nversion = \"");
        lock.find(&needle).map(|at| {
            let rest = &lock[at + needle.len()..];
            rest[..rest.find('"').unwrap_or(0)].to_owned()
        })
    };
    for name in ["rmcp", "tokio", "smol", "serde_json", "ureq"] {
        if let Some(v) = crate_version(name) {
            m.insert(format!("crate {name}"), v);
        }
    }
    let package_version = |path: PathBuf| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_owned))
    };
    let clients = bench_dir().join("clients");
    if let Some(v) =
        package_version(clients.join("node_modules/@modelcontextprotocol/sdk/package.json"))
    {
        m.insert("npm @modelcontextprotocol/sdk".into(), v);
    }
    let servers = repo_root().join("tests/servers/node_modules/@modelcontextprotocol");
    for name in ["server-everything", "server-filesystem"] {
        if let Some(v) = package_version(servers.join(name).join("package.json")) {
            m.insert(format!("npm @modelcontextprotocol/{name}"), v);
        }
    }
    if let Some(line) = std::fs::read_to_string(clients.join("requirements.txt"))
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("mcp=="))
                .map(str::to_owned)
        })
    {
        m.insert(
            "pypi mcp".into(),
            line.trim_start_matches("mcp==").to_owned(),
        );
    }
    m
}

// ----- 1. core -----

pub fn core_throughput(options: &Options) -> Vec<CoreStat> {
    use crate::core::*;
    let rounds = if options.quick { 1 } else { 7 };
    let mut out = Vec::new();
    let cases: [(&str, Vec<u8>, usize, usize); 2] = [
        (
            "small `tools/call` result (server-everything echo), 16 in flight",
            small_response(0),
            if options.quick { 2_000 } else { 50_000 },
            16,
        ),
        (
            "1 MiB text `tools/call` result, fed in 64 KiB reads",
            text_response(0, 1 << 20),
            if options.quick { 5 } else { 60 },
            1,
        ),
    ];
    for (name, template, count, window) in cases {
        let mut session = ready_session(64 << 20);
        // Warm up both paths once.
        session_inbound(&mut session, &template, count.min(100), window, READ_CHUNK);
        serde_only(&template, count.min(100));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t = session_inbound(&mut session, &template, count, window, READ_CHUNK);
            a.push(count as f64 / t.as_secs_f64());
            let t = serde_only(&template, count);
            b.push(count as f64 / t.as_secs_f64());
        }
        out.push(core_stat(name, template.len(), &a, &b));
    }
    // A whole call inside the core, against serialize + parse.
    let template = small_response(0);
    let count = if options.quick { 2_000 } else { 50_000 };
    let mut session = ready_session(64 << 20);
    session_round_trip(&mut session, &template, 100);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = session_round_trip(&mut session, &template, count);
        a.push(count as f64 / t.as_secs_f64());
        let t = serde_round_trip(&template, count);
        b.push(count as f64 / t.as_secs_f64());
    }
    out.push(core_stat(
        "whole call in the core: `call_tool` + transmit + answer + event (limit: serialize request + parse answer)",
        template.len(),
        &a,
        &b,
    ));
    for stat in &out {
        eprintln!(
            "{}: {:.0} msg/s vs serde_json {:.0} msg/s ({:.2}×)",
            stat.case,
            stat.session_msgs_per_s.median,
            stat.serde_msgs_per_s.median,
            stat.ratio_to_limit
        );
    }
    out
}

fn core_stat(case: &str, bytes: usize, session: &[f64], serde: &[f64]) -> CoreStat {
    let a = Spread::of(session);
    let b = Spread::of(serde);
    CoreStat {
        case: case.to_owned(),
        bytes_per_message: bytes,
        ratio_to_limit: b.median / a.median,
        session_ns_per_msg: 1e9 / a.median,
        serde_ns_per_msg: 1e9 / b.median,
        session_msgs_per_s: a,
        serde_msgs_per_s: b,
    }
}

// ----- workers -----

/// Runs one client process with a deadline; parses its JSON line.
fn run_worker(env: &Env, spec: &WorkerSpec, timeout: Duration) -> WorkerOut {
    // The client on its CPU, the stdio server it starts on the servers'
    // (see `util::Pinning`).
    let pinning = util::Pinning::detect();
    let mut spec = spec.clone();
    if let Some(p) = pinning {
        spec.stdio = spec.stdio.map(|argv| util::Pinning::on(p.server, &argv));
    }
    let spec = &spec;
    let spec_json = serde_json::to_string(spec).expect("serialize spec");
    let clients = bench_dir().join("clients");
    let program = |program: &std::ffi::OsStr| util::command_on(pinning.map(|p| p.client), program);
    let mut command = match spec.client.as_str() {
        "ts" => {
            let mut c = program("node".as_ref());
            c.arg(clients.join("ts-client.mjs"));
            c
        }
        "python" => {
            let mut c = program(
                env.python
                    .as_ref()
                    .expect("python client installed")
                    .as_os_str(),
            );
            c.arg(clients.join("py_client.py"));
            c
        }
        _ => {
            let mut c = program(env.self_exe.as_os_str());
            c.arg("worker");
            c
        }
    };
    command
        .arg(&spec_json)
        .current_dir(&env.tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (status, stdout, stderr) = match run_with_timeout(command, timeout) {
        Ok(x) => x,
        Err(e) => {
            return WorkerOut {
                error: Some(e),
                ..WorkerOut::default()
            };
        }
    };
    let parsed = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<WorkerOut>(l).ok())
        .find(|o| !o.modes.is_empty() || o.error.is_some());
    match parsed {
        Some(out) => out,
        None => WorkerOut {
            error: Some(format!(
                "no result ({status}); stderr: {}",
                tail(&stderr, 400)
            )),
            ..WorkerOut::default()
        },
    }
}

/// The first line of an error (a stack trace's message), cut to `n` bytes.
pub fn first_line(s: &str, n: usize) -> String {
    let line = s.trim().lines().next().unwrap_or_default();
    let mut end = line.len().min(n);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

/// The last `n` bytes of `s` (at a char boundary), on one line.
pub fn tail(s: &str, n: usize) -> String {
    let s = s.trim();
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    s[start..].replace('\n', " | ")
}

/// Runs a command to completion or kills its process group at the deadline.
pub fn run_with_timeout(
    mut command: Command,
    timeout: Duration,
) -> Result<(String, String, String), String> {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| format!("spawn: {e}"))?;
    let pid = child.id() as i32;
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status.to_string();
        }
        if Instant::now() > deadline {
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            let _ = child.wait();
            break format!("killed after {} s", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Whatever the client left in its group (a server it spawned) goes too.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let stdout = out_thread.join().unwrap_or_default();
    let stderr = err_thread.join().unwrap_or_default();
    Ok((status, stdout, stderr))
}

// ----- 2-3. round trips -----

struct Target {
    transport: &'static str,
    server: &'static str,
    stdio: Option<Vec<String>>,
    url: Option<String>,
}

/// A server process the harness keeps running (HTTP servers); killed on drop.
struct Background(std::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_listening(port: u16, what: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "{what} did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn start_everything_http() -> (Background, String) {
    let port = util::free_port();
    let child = util::server_command("node")
        .arg(util::everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server-everything streamableHttp");
    let bg = Background(child);
    wait_listening(port, "server-everything");
    (bg, format!("http://127.0.0.1:{port}/mcp"))
}

fn start_rmcp_http(env: &Env) -> (Background, String) {
    let port = util::free_port();
    let child = util::server_command(&env.self_exe)
        .args(["rmcp-echo", "--http", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the rmcp echo server");
    let bg = Background(child);
    wait_listening(port, "rmcp echo server");
    (bg, format!("http://127.0.0.1:{port}/mcp"))
}

fn clients(env: &Env) -> Vec<&'static str> {
    let mut c = vec![
        "bare",
        "bare-async",
        "bare-threads",
        "rho-smol",
        "rho-blocking",
    ];
    if env.rmcp {
        c.push("rmcp");
    }
    if env.ts {
        c.push("ts");
    }
    if env.python.is_some() {
        c.push("python");
    }
    c
}

/// `bench counted`: only the counted section, printed as markdown.
pub fn counted_only() {
    let env = env_alone(None);
    let mut results = Results::default();
    results.counted = counted(&Options::parse(&[]), &env, &mut results.notes);
    let mut md = String::new();
    crate::report::counted(&mut md, &results);
    print_alone(&md, &results, &env);
}

/// Instructions and system calls per call of every Rust client over stdio
/// and Streamable HTTP (see `counted.rs`); not in the smoke run, and only
/// where valgrind and strace are installed.
fn counted(
    options: &Options,
    env: &Env,
    notes: &mut Vec<String>,
) -> Vec<crate::counted::CountedStat> {
    if options.quick {
        return Vec::new();
    }
    if !crate::counted::available() {
        notes.push("Counted cost per call: skipped, valgrind or strace is not installed.".into());
        return Vec::new();
    }
    use crate::counted::CountedTarget;
    let mut servers = vec![(
        "server-everything (node)",
        CountedTarget::Stdio(vec![
            "node".to_owned(),
            util::everything_js().display().to_string(),
        ]),
    )];
    if env.rmcp {
        servers.push((
            "rmcp echo (Rust)",
            CountedTarget::Stdio(vec![
                env.self_exe.display().to_string(),
                "rmcp-echo".into(),
                "--stdio".into(),
            ]),
        ));
    }
    // The HTTP servers are this section's own, started fresh (a server
    // that has served many sessions answers more slowly, which changes how
    // many answers a wake-up finds at 16 in flight).
    let mut keep = Vec::new();
    let (bg, url) = start_everything_http();
    keep.push(bg);
    servers.push(("server-everything (node)", CountedTarget::Http(url)));
    if env.rmcp {
        let (bg, url) = start_rmcp_http(env);
        keep.push(bg);
        servers.push(("rmcp echo (Rust)", CountedTarget::Http(url)));
    }
    let stats = crate::counted::measure(&env.self_exe, &env.tmp, env.rmcp, &servers);
    drop(keep);
    for s in stats.iter().filter(|s| !s.errors.is_empty()) {
        notes.push(format!(
            "Counted, {} {} / {} / {} in flight: {}",
            s.transport,
            s.server,
            s.client,
            s.inflight,
            s.errors.join("; ")
        ));
    }
    stats
}

/// The stdio servers the round trips run against: server-everything, and
/// the rmcp echo server where this build has rmcp.
fn stdio_targets(env: &Env) -> Vec<Target> {
    let mut targets = vec![Target {
        transport: "stdio",
        server: "server-everything (node)",
        stdio: Some(vec![
            "node".into(),
            util::everything_js().display().to_string(),
        ]),
        url: None,
    }];
    if env.rmcp {
        targets.push(Target {
            transport: "stdio",
            server: "rmcp echo (Rust)",
            stdio: Some(vec![
                env.self_exe.display().to_string(),
                "rmcp-echo".into(),
                "--stdio".into(),
            ]),
            url: None,
        });
    }
    targets
}

fn round_trips(options: &Options, env: &Env, notes: &mut Vec<String>) -> Vec<RoundTripStat> {
    let mut keep = Vec::new();
    let mut targets = stdio_targets(env);
    let (bg, url) = start_everything_http();
    keep.push(bg);
    targets.push(Target {
        transport: "Streamable HTTP",
        server: "server-everything (node)",
        stdio: None,
        url: Some(url),
    });
    if env.rmcp {
        let (bg, url) = start_rmcp_http(env);
        keep.push(bg);
        targets.push(Target {
            transport: "Streamable HTTP",
            server: "rmcp echo (Rust)",
            stdio: None,
            url: Some(url),
        });
    }
    let timeout = Duration::from_secs(if options.quick { 60 } else { 180 });
    // The shared HTTP servers' warm-up, once (see `Options::server_warmup`).
    for target in targets.iter().filter(|t| t.url.is_some()) {
        let spec = WorkerSpec {
            client: "bare".into(),
            stdio: None,
            url: target.url.clone(),
            tool: "echo".into(),
            args: json!({"message": "hello"}),
            warmup: options.server_warmup,
            n: 1,
            inflight: vec![16],
            dump: None,
            timeout_s: None,
        };
        if let Some(e) = run_worker(env, &spec, timeout).error {
            eprintln!(
                "warm-up of {} / {}: ERROR {}",
                target.transport,
                target.server,
                first_line(&e, 300)
            );
        }
    }
    let clients = clients(env);
    let combos: Vec<(usize, &str)> = targets
        .iter()
        .enumerate()
        .flat_map(|(t, _)| clients.iter().map(move |c| (t, *c)))
        // The bare client's async and threaded forms are the limits of
        // rho-smol and rho-blocking (over HTTP the bare client already
        // runs a thread per call: no threaded form there).
        .filter(|&(t, c)| c != "bare-threads" || targets[t].stdio.is_some())
        .collect();
    let mut outs: BTreeMap<(usize, &str), Vec<WorkerOut>> = BTreeMap::new();
    for round in 0..options.rounds {
        // Interleaved: every client and server in each round, the order
        // rotated from round to round.
        let offset = (round * 7) % combos.len();
        for i in 0..combos.len() {
            let (t, client) = combos[(offset + i) % combos.len()];
            let target = &targets[t];
            let spec = WorkerSpec {
                client: client.to_owned(),
                stdio: target.stdio.clone(),
                url: target.url.clone(),
                tool: "echo".into(),
                args: json!({"message": "hello"}),
                warmup: if target.stdio.is_some() {
                    options.server_warmup
                } else {
                    options.warmup
                },
                n: options.n,
                inflight: vec![1, 16],
                dump: None,
                timeout_s: None,
            };
            let began = Instant::now();
            let out = run_worker(env, &spec, timeout);
            match &out.error {
                Some(e) => eprintln!(
                    "round {round} {} / {} / {client}: ERROR {}",
                    target.transport,
                    target.server,
                    first_line(e, 300)
                ),
                None => eprintln!(
                    "round {round} {} / {} / {client}: {} ({:.1} s)",
                    target.transport,
                    target.server,
                    out.modes
                        .iter()
                        .map(|m| format!(
                            "{}×: median {:.0} µs, {:.1} µs CPU/call",
                            m.inflight,
                            util::median(&m.lat_us),
                            (m.cpu_user_s + m.cpu_sys_s) / m.n.max(1) as f64 * 1e6
                        ))
                        .collect::<Vec<_>>()
                        .join("; "),
                    began.elapsed().as_secs_f64()
                ),
            }
            outs.entry((t, client)).or_default().push(out);
        }
    }
    drop(keep);
    let mut stats = Vec::new();
    for (t, target) in targets.iter().enumerate() {
        for inflight in [1usize, 16] {
            let mut group: Vec<RoundTripStat> = combos
                .iter()
                .filter(|&&(of, _)| of == t)
                .map(|(_, client)| {
                    aggregate(
                        target,
                        client,
                        inflight,
                        outs.get(&(t, *client)).map(Vec::as_slice).unwrap_or(&[]),
                    )
                })
                .collect();
            let bare = group.iter().find(|s| s.client == "bare").cloned();
            for s in &mut group {
                if let Some(b) = bare.as_ref().filter(|b| b.rounds_ok > 0 && s.rounds_ok > 0) {
                    s.cpu_ratio_to_bare = Some(s.cpu_per_call_us.median / b.cpu_per_call_us.median);
                    s.latency_ratio_to_bare = Some(s.latency_median_us / b.latency_median_us);
                }
                for e in &s.errors {
                    notes.push(format!(
                        "{} / {} / {} ({} in flight): {}",
                        s.transport,
                        s.server,
                        s.client,
                        s.inflight,
                        first_line(e, 300)
                    ));
                }
            }
            stats.extend(group);
        }
    }
    stats
}

fn aggregate(target: &Target, client: &str, inflight: usize, outs: &[WorkerOut]) -> RoundTripStat {
    let mut all = Vec::new();
    let mut rounds = Vec::new();
    let mut errors = Vec::new();
    let mut result_len = 0;
    for out in outs {
        if let Some(e) = &out.error {
            errors.push(e.clone());
            continue;
        }
        result_len = out.result_len;
        if let Some(m) = out.modes.iter().find(|m| m.inflight == inflight) {
            all.extend_from_slice(&m.lat_us);
            rounds.push(RoundSample {
                latency_median_us: util::median(&m.lat_us),
                cpu_per_call_us: (m.cpu_user_s + m.cpu_sys_s) / m.n.max(1) as f64 * 1e6,
                calls_per_s: m.n as f64 / m.wall_s,
                switches_per_call: m.switches as f64 / m.n.max(1) as f64,
            });
        }
    }
    let pick = |f: fn(&RoundSample) -> f64| Spread::of(&rounds.iter().map(f).collect::<Vec<_>>());
    RoundTripStat {
        transport: target.transport.into(),
        server: target.server.into(),
        client: client.into(),
        inflight,
        rounds_ok: rounds.len(),
        errors,
        latency_median_us: util::median(&all),
        latency_p90_us: util::quantile(&all, 0.9),
        latency_round_medians_us: pick(|r| r.latency_median_us),
        cpu_per_call_us: pick(|r| r.cpu_per_call_us),
        calls_per_s: pick(|r| r.calls_per_s),
        switches_per_call: pick(|r| r.switches_per_call),
        cpu_ratio_to_bare: None,
        latency_ratio_to_bare: None,
        result_len,
        rounds,
    }
}

// ----- 4-5. startup, memory, size -----

/// One run of the rho binary.
#[derive(Clone, Copy, Debug, Default)]
struct RhoRun {
    /// Process start to exit.
    wall: f64,
    /// Process start to the end of its report: stdout closed. rho prints
    /// before it shuts its servers down, so this is what a person or a
    /// pipe waits for.
    report: f64,
    /// The slowest server's `elapsed_ms` as rho reports it (`--json`).
    ready: Option<f64>,
}

fn rho_command(rho: &Path, dir: &Path, config: &Path, args: &[&str]) -> Result<Command, String> {
    let out = std::fs::File::create(dir.join("rho.out")).map_err(|e| e.to_string())?;
    let err = std::fs::File::create(dir.join("rho.err")).map_err(|e| e.to_string())?;
    let mut command = Command::new(rho);
    command
        .arg("--config")
        .arg(config)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    Ok(command)
}

/// Runs rho to completion, timed; nothing else runs meanwhile.
fn run_rho(rho: &Path, dir: &Path, config: &Path, args: &[&str]) -> Result<RhoRun, String> {
    use std::io::Read as _;
    let mut command = rho_command(rho, dir, config, args)?;
    command.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("run rho: {e}"))?;
    let mut stdout = String::new();
    if let Some(mut pipe) = child.stdout.take() {
        pipe.read_to_string(&mut stdout)
            .map_err(|e| format!("read rho's stdout: {e}"))?;
    }
    let report = start.elapsed().as_secs_f64();
    let status = child.wait().map_err(|e| format!("wait for rho: {e}"))?;
    let wall = start.elapsed().as_secs_f64();
    if !status.success() {
        let stderr = std::fs::read_to_string(dir.join("rho.err")).unwrap_or_default();
        return Err(format!(
            "rho exited {status}: {}",
            tail(&(stdout + &stderr), 300)
        ));
    }
    let ready = serde_json::from_str::<Value>(&stdout).ok().and_then(|v| {
        v.get("servers")?
            .as_array()?
            .iter()
            .map(|s| s.get("elapsed_ms").and_then(Value::as_f64))
            .collect::<Option<Vec<f64>>>()
            .filter(|all| !all.is_empty())
            .map(|all| all.into_iter().fold(0.0, f64::max) / 1e3)
    });
    Ok(RhoRun {
        wall,
        report,
        ready,
    })
}

/// Starts `k` servers at once, each with a bare handshake (initialize,
/// initialized, tools/list); returns the slowest one's time to its
/// tools/list answer, and the time until every one exited after its stdin
/// closed.
fn bare_startup(k: usize) -> Result<(f64, f64), String> {
    use std::io::{BufRead, BufReader, Write};
    let start = Instant::now();
    let threads: Vec<_> = (0..k)
        .map(|_| {
            std::thread::spawn(move || -> Result<(f64, f64), String> {
                let mut child = Command::new("node")
                    .arg(util::everything_js())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| e.to_string())?;
                let mut stdin = child.stdin.take().ok_or("stdin")?;
                let mut stdout = BufReader::new(child.stdout.take().ok_or("stdout")?);
                let mut wait_for = |id: u64| -> Result<(), String> {
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if stdout.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                            return Err("server closed stdout".into());
                        }
                        let v: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
                        if v.get("method").is_none() && v.get("id").and_then(Value::as_u64) == Some(id) {
                            return Ok(());
                        }
                    }
                };
                let mut send = |s: &str| stdin.write_all(format!("{s}\n").as_bytes()).map_err(|e| e.to_string());
                send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bare","version":"0"}}}"#)?;
                wait_for(0)?;
                send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
                send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)?;
                wait_for(1)?;
                let ready = start.elapsed().as_secs_f64();
                drop(stdin);
                let _ = child.wait();
                Ok((ready, start.elapsed().as_secs_f64()))
            })
        })
        .collect();
    let mut ready: f64 = 0.0;
    let mut exited: f64 = 0.0;
    for t in threads {
        let (r, e) = t.join().map_err(|_| "thread panicked".to_owned())??;
        ready = ready.max(r);
        exited = exited.max(e);
    }
    Ok((ready, exited))
}

fn spawn_true() -> f64 {
    let start = Instant::now();
    let _ = Command::new("true").status();
    start.elapsed().as_secs_f64()
}

fn startup(
    options: &Options,
    env: &Env,
    notes: &mut Vec<String>,
) -> (Vec<StartupStat>, Vec<MemoryStat>) {
    let Some(rho) = &env.rho_bin else {
        notes.push("startup and memory skipped: no rho binary".into());
        return (Vec::new(), Vec::new());
    };
    let dir = env.tmp.join("startup");
    std::fs::create_dir_all(&dir).expect("startup dir");
    let server = vec![
        "node".to_owned(),
        util::everything_js().display().to_string(),
    ];
    let write_config = |k: usize| {
        let text: String = (0..k)
            .map(|i| util::stdio_server_toml(&format!("s{i}"), &server, ""))
            .collect::<Vec<_>>()
            .join("\n");
        let path = dir.join(format!("rho-{k}.toml"));
        std::fs::write(&path, text).expect("write config");
        path
    };
    let configs = [write_config(0), write_config(1), write_config(10)];
    let rounds = if options.quick { 1 } else { 5 };
    #[derive(Default, Clone)]
    struct Samples {
        wall: Vec<f64>,
        report: Vec<f64>,
        ready: Vec<f64>,
        hwm: Vec<f64>,
        errors: Vec<String>,
    }
    let mut samples: BTreeMap<&str, Samples> = BTreeMap::new();
    let mut rho_run = |name: &'static str, config: &Path, args: &[&str], rss: bool| {
        let e = samples.entry(name).or_default();
        match run_rho(rho, &dir, config, args) {
            Ok(run) => {
                e.wall.push(run.wall);
                e.report.push(run.report);
                e.ready.extend(run.ready);
            }
            Err(err) => e.errors.push(err),
        }
        // Memory in a run of its own: tracing slows signal delivery.
        if rss {
            let traced = rho_command(rho, &dir, config, args).and_then(util::peak_rss);
            let peak = traced.or_else(|traced| {
                rho_command(rho, &dir, config, args)
                    .and_then(util::polled_peak_rss)
                    .map_err(|polled| format!("{traced}; polling: {polled}"))
            });
            match peak {
                Ok(peak) => e.hwm.push(peak as f64),
                Err(err) => e.errors.push(format!("peak RSS: {err}")),
            }
        }
    };
    let mut bare = BTreeMap::<&str, Samples>::new();
    let mut bare_run = |name: &'static str, k: usize| {
        let e = bare.entry(name).or_default();
        match bare_startup(k) {
            Ok((ready, exited)) => {
                e.ready.push(ready);
                e.wall.push(exited);
            }
            Err(err) => e.errors.push(err),
        }
    };
    let connect = ["mcp", "list", "--connect", "--json"];
    let connect_blocking = [
        "--runtime",
        "blocking",
        "mcp",
        "list",
        "--connect",
        "--json",
    ];
    let mut true_runs = Vec::new();
    for round in 0..rounds {
        eprintln!("startup round {round}");
        // Peak RSS varies little: three samples.
        let rss = round < 3;
        true_runs.push(spawn_true());
        rho_run("rho0", &configs[0], &["mcp", "list"], rss);
        bare_run("bare1", 1);
        rho_run("rho1", &configs[1], &connect, rss);
        rho_run("rho1b", &configs[1], &connect_blocking, rss);
        bare_run("bare10", 10);
        rho_run("rho10", &configs[2], &connect, rss);
        rho_run("rho10b", &configs[2], &connect_blocking, rss);
    }
    let get = |name: &str| samples.get(name).cloned().unwrap_or_default();
    let bare_get = |name: &str| bare.get(name).cloned().unwrap_or_default();
    let mut out = Vec::new();
    let t = Spread::of(&true_runs);
    let r0 = get("rho0");
    let w = Spread::of(&r0.wall);
    let report = Spread::of(&r0.report);
    out.push(StartupStat {
        case: "`rho mcp list`, no servers".into(),
        ratio_to_limit: w.median / t.median,
        report_ratio_to_limit: report.median / t.median,
        report_s: report,
        wall_s: w,
        ready_s: None,
        ready_ratio_to_limit: None,
        limit_case: "`true`".into(),
        limit_s: t,
        limit_exit_s: None,
        errors: r0.errors,
    });
    for (case, name, limit_case, limit) in [
        (
            "`rho mcp list --connect`, 1 server, smol",
            "rho1",
            "the server alone",
            "bare1",
        ),
        (
            "`rho mcp list --connect`, 1 server, blocking",
            "rho1b",
            "the server alone",
            "bare1",
        ),
        (
            "`rho mcp list --connect`, 10 servers, smol",
            "rho10",
            "slowest of 10 servers started at once",
            "bare10",
        ),
        (
            "`rho mcp list --connect`, 10 servers, blocking",
            "rho10b",
            "slowest of 10 servers started at once",
            "bare10",
        ),
    ] {
        let r = get(name);
        let b = bare_get(limit);
        let wall = Spread::of(&r.wall);
        let report = Spread::of(&r.report);
        let ready = Spread::of(&r.ready);
        let lim = Spread::of(&b.ready);
        let mut errors = r.errors;
        errors.extend(b.errors);
        out.push(StartupStat {
            case: case.into(),
            ratio_to_limit: wall.median / lim.median,
            report_ratio_to_limit: report.median / lim.median,
            report_s: report,
            wall_s: wall,
            ready_ratio_to_limit: (ready.n > 0).then(|| ready.median / lim.median),
            ready_s: (ready.n > 0).then_some(ready),
            limit_case: limit_case.into(),
            limit_s: lim,
            limit_exit_s: Some(Spread::of(&b.wall)),
            errors,
        });
    }
    for s in &out {
        eprintln!(
            "{}: {:.3} s, report {:.3} s (ready {:.3} s) vs {:.3} s ({:.2}×, report {:.2}×)",
            s.case,
            s.wall_s.median,
            s.report_s.median,
            s.ready_s.map_or(f64::NAN, |r| r.median),
            s.limit_s.median,
            s.ratio_to_limit,
            s.report_ratio_to_limit
        );
        for e in &s.errors {
            notes.push(format!("{}: {}", s.case, first_line(e, 300)));
        }
    }
    let mut memory = Vec::new();
    let base = Spread::of(&r0.hwm);
    for (case, name) in [
        ("rho, 1 server connected, smol", "rho1"),
        ("rho, 10 servers connected, smol", "rho10"),
        ("rho, 1 server connected, blocking", "rho1b"),
        ("rho, 10 servers connected, blocking", "rho10b"),
    ] {
        let peak = Spread::of(&get(name).hwm);
        memory.push(MemoryStat {
            case: case.into(),
            ratio_to_limit: peak.median / base.median,
            peak_rss_bytes: peak,
            limit_case: "rho with no servers (`rho mcp list`)".into(),
            limit_bytes: base,
        });
    }
    (out, memory)
}

/// One one-server client (`bench/src/one/`): the file name of its binary
/// beside the harness, its name in the table, and the rmcp client that
/// can reach the same transports (its ratio's denominator).
struct OneClient {
    bin: &'static str,
    name: &'static str,
    like_rmcp: &'static str,
}

/// The one-server clients. rmcp's only with the `rmcp` feature. rho's
/// stdio-only builds (the executors without their `http` feature) come
/// from the `one-stdio` package, built on its own so that its features
/// are not unified with the harness's.
fn one_server_clients() -> Vec<OneClient> {
    let client = |bin, name, like_rmcp| OneClient {
        bin,
        name,
        like_rmcp,
    };
    let mut clients = vec![
        client("one-bare", "bare JSON-lines (limit)", "one-rmcp"),
        client("one-rho-smol", "rho, smol", "one-rmcp-any"),
        client("one-rho-blocking", "rho, blocking", "one-rmcp-any"),
        client(
            "one-rho-smol-stdio",
            "rho, smol, stdio only (no `http` feature)",
            "one-rmcp",
        ),
        client(
            "one-rho-blocking-stdio",
            "rho, blocking, stdio only (no `http` feature)",
            "one-rmcp",
        ),
    ];
    if cfg!(feature = "rmcp") {
        clients.push(client(
            "one-rmcp",
            "rmcp (Rust SDK), stdio only",
            "one-rmcp",
        ));
        clients.push(client(
            "one-rmcp-any",
            "rmcp (Rust SDK), stdio or HTTP",
            "one-rmcp-any",
        ));
    }
    clients
}

/// Builds the one-server clients beside this binary, in its profile and
/// with its features (`cargo run` builds only the harness), then rho's
/// stdio-only clients in a build of their own.
fn build_one_server_clients() {
    eprintln!("building the one-server clients (bench/src/one)");
    let release = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.ends_with("release")))
        .unwrap_or(false);
    let cargo = || {
        let mut cargo = Command::new("cargo");
        cargo.arg("build").arg("--manifest-path");
        cargo.arg(bench_dir().join("Cargo.toml"));
        if release {
            cargo.arg("--release");
        }
        cargo
    };
    let mut own = cargo();
    own.args(["-p", "rho-bench"]);
    if !cfg!(feature = "rmcp") {
        own.arg("--no-default-features");
    }
    let mut stdio_only = cargo();
    stdio_only.args(["-p", "rho-bench-one-stdio"]);
    for client in one_server_clients() {
        let build = if client.bin.ends_with("-stdio") {
            &mut stdio_only
        } else {
            &mut own
        };
        build.args(["--bin", client.bin]);
    }
    for mut build in [own, stdio_only] {
        if !build.status().is_ok_and(|s| s.success()) {
            eprintln!("bench: building some one-server clients failed; they are left out");
        }
    }
}

/// The base RSS of a client with one stdio server: each client in a
/// binary of its own starts the server, lists its tools, calls `echo`
/// once and exits, and its peak RSS is read as it exits (see
/// [`util::exit_memory`]). Rounds interleave every client against every
/// server.
fn one_server(options: &Options, env: &Env, notes: &mut Vec<String>) -> Vec<OneServerStat> {
    let dir = env.self_exe.parent().expect("the harness has a directory");
    let clients: Vec<_> = one_server_clients()
        .into_iter()
        .filter(|client| dir.join(client.bin).exists())
        .collect();
    if clients.is_empty() {
        notes.push("One-server clients: skipped, their binaries are not built.".into());
        return Vec::new();
    }
    let mut servers = vec![(
        "server-everything (node)",
        vec![
            "node".to_owned(),
            util::everything_js().display().to_string(),
        ],
    )];
    if env.rmcp {
        servers.push((
            "rmcp echo (Rust)",
            vec![
                env.self_exe.display().to_string(),
                "rmcp-echo".into(),
                "--stdio".into(),
            ],
        ));
    }
    let rounds = if options.quick { 1 } else { 7 };
    let mut samples: BTreeMap<(usize, usize), (Vec<util::ExitMemory>, Vec<String>)> =
        BTreeMap::new();
    for round in 0..rounds {
        eprintln!("one-server round {round}");
        for (s, (_, server)) in servers.iter().enumerate() {
            for (c, client) in clients.iter().enumerate() {
                let mut command = Command::new(dir.join(client.bin));
                command
                    .args(server)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                let e = samples.entry((s, c)).or_default();
                match util::exit_memory(command) {
                    Ok(memory) => e.0.push(memory),
                    Err(err) => e.1.push(err),
                }
            }
        }
    }
    let mut out = Vec::new();
    for (s, (server, _)) in servers.iter().enumerate() {
        let peak = |c: usize| -> Spread {
            let runs = samples.get(&(s, c)).map(|e| e.0.as_slice()).unwrap_or(&[]);
            Spread::of(&runs.iter().map(|m| m.peak as f64).collect::<Vec<_>>())
        };
        let by_name = |bin: &str| clients.iter().position(|c| c.bin == bin).map(peak);
        let bare = by_name("one-bare");
        let like_rmcp: Vec<Option<Spread>> = clients.iter().map(|c| by_name(c.like_rmcp)).collect();
        for (c, (client, rmcp)) in clients.iter().zip(like_rmcp).enumerate() {
            let name = client.name;
            let (runs, errors) = samples.remove(&(s, c)).unwrap_or_default();
            let spread = |f: fn(&util::ExitMemory) -> u64| {
                Spread::of(&runs.iter().map(|m| f(m) as f64).collect::<Vec<_>>())
            };
            let peak_rss_bytes = spread(|m| m.peak);
            let over = |limit: Option<Spread>| {
                limit
                    .filter(|l| l.n > 0 && peak_rss_bytes.n > 0)
                    .map(|l| peak_rss_bytes.median / l.median)
            };
            for e in &errors {
                notes.push(format!(
                    "one server, {server}, {name}: {}",
                    first_line(e, 300)
                ));
            }
            out.push(OneServerStat {
                server: (*server).into(),
                client: name.into(),
                file_bytes: spread(|m| m.file),
                anon_bytes: spread(|m| m.anon),
                ratio_to_bare: over(bare),
                ratio_to_rmcp: over(rmcp),
                peak_rss_bytes,
                errors,
            });
        }
    }
    for s in &out {
        eprintln!(
            "{} / {}: peak {} (file {}, anon {})",
            s.server,
            s.client,
            util::fmt_bytes(s.peak_rss_bytes.median),
            util::fmt_bytes(s.file_bytes.median),
            util::fmt_bytes(s.anon_bytes.median),
        );
    }
    out
}

/// `bench one-server [--write]`: only the one-server table (section 5b),
/// printed; the clients must be built (`cargo build --release
/// --manifest-path bench/Cargo.toml --bins`, then the same with `-p
/// rho-bench-one-stdio`). With `--write` the section replaces its old
/// self in BENCHMARKS.md and `one_server` in results.json, saying when
/// and at which commit it ran apart from the rest: memory figures do
/// not depend on the machine's load, so the section can be re-run alone.
pub fn one_server_only(args: &[String]) {
    let write = write_flag("one-server", args);
    let env = env_alone(None);
    let mut results = Results::default();
    results.one_server = one_server(&Options::parse(&[]), &env, &mut results.notes);
    let mut md = String::new();
    crate::report::one_server(&mut md, &results);
    if write {
        let section = splice_section(&md, "one-server", &env, "\n### 5b.", "\n#");
        write_results(&[("one_server", serde_json::to_value(&results.one_server))]);
        eprintln!("wrote {section} of BENCHMARKS.md and one_server in bench/results.json");
    }
    print_alone(&md, &results, &env);
}

/// `bench memory [--write]`: only section 5 above 5b (the CLI's peak RSS
/// with 0, 1 and 10 servers on each executor, and the release binary's
/// size), printed; builds the release `rho` first. With `--write` the
/// part replaces its old self in BENCHMARKS.md and `memory` and `size` in
/// results.json, saying when and at which commit it ran: peak RSS and
/// size do not depend on the machine's load, so it can be re-run alone
/// (the startup times it also takes are not written).
pub fn memory_only(args: &[String]) {
    let write = write_flag("memory", args);
    let root = repo_root();
    eprintln!("building rho (cargo build --release -p rho-cli)");
    let built = Command::new("cargo")
        .args(["build", "--release", "-p", "rho-cli"])
        .current_dir(&root)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        eprintln!("bench memory: building rho failed");
        std::process::exit(1);
    }
    let env = env_alone(Some(root.join("target/release/rho")));
    let mut results = Results::default();
    (_, results.memory) = startup(&Options::parse(&[]), &env, &mut results.notes);
    results.size = size(&env);
    let mut md = String::new();
    crate::report::memory_and_size(&mut md, &results);
    if write {
        let section = splice_section(&md, "memory", &env, "\n## 5. Memory and size", "\n### 5b.");
        write_results(&[
            ("memory", serde_json::to_value(&results.memory)),
            ("size", serde_json::to_value(&results.size)),
        ]);
        eprintln!("wrote {section} of BENCHMARKS.md and memory, size in bench/results.json");
    }
    print_alone(&md, &results, &env);
}

/// Whether a section run alone (`bench COMMAND [--write]`) writes.
fn write_flag(command: &str, args: &[String]) -> bool {
    match args {
        [] => false,
        [flag] if flag == "--write" => true,
        _ => {
            eprintln!("usage: bench {command} [--write]");
            std::process::exit(2);
        }
    }
}

/// The surroundings of a section run alone: no client but rho's own and
/// rmcp's, a scratch directory of its own.
fn env_alone(rho_bin: Option<PathBuf>) -> Env {
    let tmp = std::env::temp_dir().join(format!("rho-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    Env {
        self_exe: std::env::current_exe().expect("own path"),
        rho_bin,
        ts: false,
        python: None,
        rmcp: cfg!(feature = "rmcp"),
        tmp,
    }
}

/// Prints a section run alone and its notes, and removes its scratch.
fn print_alone(md: &str, results: &Results, env: &Env) {
    println!("{md}");
    for note in &results.notes {
        println!("- {note}");
    }
    let _ = std::fs::remove_dir_all(&env.tmp);
}

/// Puts `section` (run alone by `bench COMMAND --write`) in place of the
/// BENCHMARKS.md text from the line starting `from` to the next line
/// starting `until`, saying when and at which commit it ran; returns the
/// section's heading for the message.
fn splice_section(section: &str, command: &str, env: &Env, from: &str, until: &str) -> String {
    let info = machine(env);
    let ran = format!(
        "Re-run alone (`bench {command} --write`) at {}, {}.\n",
        info.get("rho_commit").map_or("?", String::as_str),
        info.get("date").map_or("?", String::as_str),
    );
    let path = repo_root().join("BENCHMARKS.md");
    let old = std::fs::read_to_string(&path).expect("read BENCHMARKS.md");
    let start = old
        .find(from)
        .unwrap_or_else(|| panic!("BENCHMARKS.md has no {from:?} (run the whole bench once)"));
    let end = old[start + 1..]
        .find(until)
        .map_or(old.len(), |at| start + 1 + at);
    let body = section.trim_start_matches('\n').trim_end();
    let new = format!("{}\n{body}\n\n{ran}{}", &old[..start], &old[end..]);
    std::fs::write(&path, new).expect("write BENCHMARKS.md");
    from.trim_start_matches('\n').to_owned()
}

/// Replaces `keys` of bench/results.json with a section's new figures.
fn write_results(keys: &[(&str, serde_json::Result<serde_json::Value>)]) {
    let json_path = bench_dir().join("results.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).expect("read results.json"))
            .expect("results.json is JSON");
    for (key, value) in keys {
        json[*key] = value.as_ref().expect("serialize").clone();
    }
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&json).expect("serialize") + "\n",
    )
    .expect("write results.json");
}

fn size(env: &Env) -> Vec<SizeStat> {
    let Some(rho) = &env.rho_bin else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let unstripped = std::fs::metadata(rho).map(|m| m.len()).unwrap_or(0);
    out.push(SizeStat {
        case: format!(
            "`{}` as built",
            rho.strip_prefix(repo_root()).unwrap_or(rho).display()
        ),
        bytes: unstripped,
    });
    let stripped = env.tmp.join("rho-stripped");
    if Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(rho)
        .status()
        .is_ok_and(|s| s.success())
    {
        out.push(SizeStat {
            case: "stripped (`strip -o`)".into(),
            bytes: std::fs::metadata(&stripped).map(|m| m.len()).unwrap_or(0),
        });
    }
    for s in &out {
        eprintln!("{}: {}", s.case, util::fmt_bytes(s.bytes as f64));
    }
    out
}

// ----- 6. large result -----

fn large(options: &Options, env: &Env, notes: &mut Vec<String>) -> (Vec<LargeStat>, Vec<CoreStat>) {
    let dir = env.tmp.join("files");
    std::fs::create_dir_all(&dir).expect("files dir");
    let sizes: Vec<usize> = if options.quick {
        vec![1 << 20]
    } else {
        // 16 MiB as asked; 4.5 MiB makes a message (~9.1 MiB) under the
        // TypeScript SDK's 10 MiB stdio buffer cap, so every client can
        // be compared.
        vec![16 << 20, (9 << 20) / 2]
    };
    let rounds = if options.quick { 1 } else { 3 };
    let mut stats = Vec::new();
    let mut core_stats = Vec::new();
    for &size in &sizes {
        // Printable ASCII in 100-byte lines: JSON escaping adds only the
        // `\n` escapes (1%).
        let path = dir.join(format!("text-{size}.txt"));
        let mut text = Vec::with_capacity(size);
        let alphabet = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-";
        let mut i = 0usize;
        while text.len() < size {
            if text.len() % 100 == 99 {
                text.push(b'\n');
            } else {
                text.push(alphabet[i % alphabet.len()]);
                i = i.wrapping_mul(31).wrapping_add(7);
            }
        }
        std::fs::write(&path, &text).expect("write big file");
        let dump = env.tmp.join(format!("response-{size}.json"));
        // The bare client's async and threaded forms are limits for round
        // trips only: one large answer has no waits to amortise.
        let mut clients = clients(env);
        clients.retain(|c| !c.starts_with("bare-"));
        let mut outs: BTreeMap<&str, Vec<WorkerOut>> = BTreeMap::new();
        let mut gave_up: Vec<&str> = Vec::new();
        for round in 0..rounds {
            for i in 0..clients.len() {
                let client = clients[(round + i) % clients.len()];
                if gave_up.contains(&client) {
                    continue;
                }
                let spec = WorkerSpec {
                    client: client.to_owned(),
                    stdio: Some(vec![
                        "node".into(),
                        util::filesystem_js().display().to_string(),
                        dir.display().to_string(),
                    ]),
                    url: None,
                    tool: "read_text_file".into(),
                    args: json!({"path": path.display().to_string()}),
                    warmup: 1,
                    n: if options.quick { 1 } else { 3 },
                    inflight: vec![1],
                    dump: (client == "bare" && round == 0).then(|| dump.display().to_string()),
                    timeout_s: Some(15),
                };
                let out = run_worker(
                    env,
                    &spec,
                    Duration::from_secs(if options.quick { 60 } else { 150 }),
                );
                match &out.error {
                    Some(e) => {
                        eprintln!(
                            "{} / {client}: ERROR {}",
                            util::fmt_bytes(size as f64),
                            first_line(e, 300)
                        );
                        // A client that cannot read it at all is not retried.
                        gave_up.push(client);
                    }
                    None => eprintln!(
                        "{} / {client}: median {:.0} ms, {} bytes of text",
                        util::fmt_bytes(size as f64),
                        out.modes
                            .first()
                            .map_or(f64::NAN, |m| util::median(&m.lat_us) / 1e3),
                        out.result_len
                    ),
                }
                outs.entry(client).or_default().push(out);
            }
        }
        let message_bytes = std::fs::metadata(&dump).map(|m| m.len()).unwrap_or(0);
        let mut group: Vec<LargeStat> = clients
            .iter()
            .map(|client| {
                let mut lat = Vec::new();
                let mut cpu = Vec::new();
                let mut errors = Vec::new();
                let mut result_len = 0;
                for out in outs.get(client).map(Vec::as_slice).unwrap_or(&[]) {
                    if let Some(e) = &out.error {
                        errors.push(e.clone());
                        continue;
                    }
                    result_len = out.result_len;
                    for m in &out.modes {
                        lat.extend(m.lat_us.iter().map(|us| us / 1e6));
                        cpu.push((m.cpu_user_s + m.cpu_sys_s) / m.n.max(1) as f64);
                    }
                }
                LargeStat {
                    file_bytes: size as u64,
                    message_bytes,
                    client: (*client).into(),
                    rounds_ok: cpu.len(),
                    errors,
                    latency_s: Spread::of(&lat),
                    cpu_s: Spread::of(&cpu),
                    latency_ratio_to_bare: None,
                    cpu_ratio_to_bare: None,
                    result_len,
                }
            })
            .collect();
        let bare = group
            .iter()
            .find(|s| s.client == "bare")
            .map(|b| (b.latency_s.median, b.cpu_s.median));
        for s in &mut group {
            if let Some((lat, cpu)) = bare.filter(|_| s.rounds_ok > 0) {
                s.latency_ratio_to_bare = Some(s.latency_s.median / lat);
                s.cpu_ratio_to_bare = Some(s.cpu_s.median / cpu);
            }
            if let Some(e) = s.errors.first() {
                notes.push(format!(
                    "{} text result / {}: {}",
                    util::fmt_bytes(size as f64),
                    s.client,
                    first_line(e, 300)
                ));
            }
        }
        stats.extend(group);
        // The core's share: the captured response line through a session
        // (cap raised so it is accepted) against serde_json alone.
        if let Ok(line) = std::fs::read(&dump) {
            let reps = if options.quick { 1 } else { 5 };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut accepted = true;
            for _ in 0..reps {
                let (t, ok) = crate::core::session_one_line(&line, 256 << 20);
                accepted &= ok;
                a.push(1.0 / t.as_secs_f64());
                let start = Instant::now();
                let v: Value = serde_json::from_slice(std::hint::black_box(&line)).expect("JSON");
                std::hint::black_box(v);
                b.push(1.0 / start.elapsed().as_secs_f64());
            }
            if !accepted {
                notes.push("the captured large result did not complete a call in the core".into());
            }
            core_stats.push(core_stat(
                &format!(
                    "{} text file via server-filesystem `read_text_file` ({} message), fed in 64 KiB reads",
                    util::fmt_bytes(size as f64),
                    util::fmt_bytes(line.len() as f64)
                ),
                line.len(),
                &a,
                &b,
            ));
        }
    }
    (stats, core_stats)
}

// ----- the host library's door against the executors driven directly -----

/// The clients `bench door` compares, each with the client it is measured
/// against: each executor driven directly, then through the host library's
/// door the same way. smol is driven two ways, so it has two bases: async
/// (the sessions' futures awaited on one task, the way the agent's own
/// executor runs them through `AsyncHost`) and from synchronous code (a
/// wait per call, the way the sync face `Host` runs it, as the CLI
/// connects it and as an agent does with its executor thread); a wait
/// per call on smol costs a hand-over with async-io's reactor whoever
/// makes it, which is the executor's cost, not the door's.
const DOOR_CLIENTS: [(&str, &str, &str); 7] = [
    ("rho-smol", "smol, driven directly (async)", "rho-smol"),
    (
        "rho-host-async",
        "smol, through `AsyncHost` on the agent's executor",
        "rho-smol",
    ),
    (
        "rho-smol-sync",
        "smol, driven directly from synchronous code",
        "rho-smol-sync",
    ),
    ("rho-host-smol", "smol, through `Host`", "rho-smol-sync"),
    (
        "rho-host-smol-thread",
        "smol, through `Host` with its executor thread",
        "rho-smol-sync",
    ),
    ("rho-blocking", "blocking, driven directly", "rho-blocking"),
    (
        "rho-host-blocking",
        "blocking, through `Host`",
        "rho-blocking",
    ),
];

/// `bench door [--quick] [--rounds N] [--n N]`: CPU per `tools/call` echo
/// of each executor driven directly and through `rho_host::Host`, over
/// stdio against server-everything and the rmcp echo server, sequential
/// and 16 in flight, interleaved round by round in one run; printed as
/// markdown with the ratio of the door to the executor.
pub fn door_only(args: &[String]) {
    let write = args.iter().any(|a| a == "--write");
    let args: Vec<String> = args.iter().filter(|a| *a != "--write").cloned().collect();
    let options = Options::parse(&args);
    let env = env_alone(None);
    let targets = stdio_targets(&env);
    let timeout = Duration::from_secs(180);
    let combos: Vec<(usize, &str)> = (0..targets.len())
        .flat_map(|t| DOOR_CLIENTS.iter().map(move |(c, _, _)| (t, *c)))
        .collect();
    let mut outs: BTreeMap<(usize, &str), Vec<WorkerOut>> = BTreeMap::new();
    for round in 0..options.rounds {
        let offset = round % combos.len();
        for i in 0..combos.len() {
            let (t, client) = combos[(offset + i) % combos.len()];
            let spec = WorkerSpec {
                client: client.to_owned(),
                stdio: targets[t].stdio.clone(),
                url: None,
                tool: "echo".into(),
                args: json!({"message": "hello"}),
                warmup: options.server_warmup,
                n: options.n,
                inflight: vec![1, 16],
                dump: None,
                timeout_s: None,
            };
            let out = run_worker(&env, &spec, timeout);
            if let Some(e) = &out.error {
                eprintln!("round {round} {client}: ERROR {}", first_line(e, 300));
            } else {
                eprintln!("round {round} {} / {client}: done", targets[t].server);
            }
            outs.entry((t, client)).or_default().push(out);
        }
    }
    let mut md = String::from(
        "| server | client | seq. CPU/call | ×direct | 16 in flight CPU/call | ×direct |\n|---|---|---:|---:|---:|---:|\n",
    );
    for (t, target) in targets.iter().enumerate() {
        let stat = |client: &str, inflight: usize| {
            aggregate(
                target,
                client,
                inflight,
                outs.get(&(t, client)).map(Vec::as_slice).unwrap_or(&[]),
            )
        };
        for &(client, label, direct) in &DOOR_CLIENTS {
            let mut row = format!("| {} | {label} |", target.server);
            for inflight in [1, 16] {
                let s = stat(client, inflight);
                let d = stat(direct, inflight);
                let c = &s.cpu_per_call_us;
                row.push_str(&format!(
                    " {:.1} µs [{:.1}–{:.1}] | {:.2}× |",
                    c.median,
                    c.min,
                    c.max,
                    c.median / d.cpu_per_call_us.median
                ));
                for e in &s.errors {
                    eprintln!("{client} ({inflight} in flight): {}", first_line(e, 300));
                }
            }
            md.push_str(&row);
            md.push('\n');
        }
    }
    let mut section = format!(
        "{DOOR_HEADING}\n\nEach executor driven directly beside the host library's door over it, driven the same way, over stdio, sequential and 16 in flight, interleaved round by round in one run (`bench door`). smol is driven two ways: async (futures on one task; the door is `AsyncHost` on the agent's own executor, `HostBuilder::smol_executor`), and from synchronous code (a wait per call, lanes as threads; the door is `Host`, as the CLI connects it, and with its executor thread, as an agent with busy threads does). A wait per call on smol hands each answer over from async-io's reactor, whoever waits: that is the cost of driving smol synchronously, which the blocking executor avoids. CPU per call of the client process, median of {} round(s) of {} calls [min–max]; ×direct: over the same executor driven directly the same way. CPU time on this VM swings by tens of percent from run to run; the counted table below it does not.\n\n{md}",
        options.rounds, options.n
    );
    if !options.quick && crate::counted::available() {
        section.push('\n');
        section.push_str(&door_counted(&env, &targets));
    }
    println!("{section}");
    if write {
        let path = repo_root().join("BENCHMARKS.md");
        let old = std::fs::read_to_string(&path).expect("read BENCHMARKS.md");
        if !old.contains(DOOR_HEADING) {
            let at = old.find(DOOR_BEFORE).unwrap_or(old.len());
            let new = format!("{}\n{DOOR_HEADING}\n{}", &old[..at], &old[at..]);
            std::fs::write(&path, new).expect("write BENCHMARKS.md");
        }
        let heading = splice_section(
            &section,
            "door",
            &env,
            &format!("\n{DOOR_HEADING}"),
            DOOR_BEFORE,
        );
        eprintln!("wrote {heading} of BENCHMARKS.md");
    }
    let _ = std::fs::remove_dir_all(&env.tmp);
}

/// The heading of `bench door`'s section in BENCHMARKS.md, and the one it
/// goes before.
const DOOR_HEADING: &str = "## 7. The host library's door: `Host` against each executor";
const DOOR_BEFORE: &str = "\n## Notes from this run";

/// `markdown` (a whole run's BENCHMARKS.md) with the door section of the
/// file at `path` put back before its notes, when the file has one.
fn keep_door_section(markdown: &str, path: &Path) -> String {
    let Ok(old) = std::fs::read_to_string(path) else {
        return markdown.to_owned();
    };
    let Some(start) = old.find(&format!("\n{DOOR_HEADING}")) else {
        return markdown.to_owned();
    };
    let end = old[start + 1..]
        .find("\n## ")
        .map_or(old.len(), |at| start + 1 + at);
    let at = markdown.find(DOOR_BEFORE).unwrap_or(markdown.len());
    format!("{}{}{}", &markdown[..at], &old[start..end], &markdown[at..])
}

/// The door's counted cost per call (see `counted.rs`): user-space
/// instructions and system calls of the client process per call, which
/// hold from run to run where CPU time swings.
fn door_counted(env: &Env, targets: &[Target]) -> String {
    use crate::counted::CountedTarget;
    let servers: Vec<(&str, CountedTarget)> = targets
        .iter()
        .filter_map(|t| Some((t.server, CountedTarget::Stdio(t.stdio.clone()?))))
        .collect();
    let clients: Vec<&str> = DOOR_CLIENTS.iter().map(|(c, _, _)| *c).collect();
    let stats = crate::counted::measure_clients(
        &env.self_exe,
        &env.tmp,
        env.rmcp,
        &servers,
        (&clients, &[]),
    );
    let mut md = String::from(
        "Counted per call (callgrind, strace):\n\n| server | client | in flight | instructions | ×direct | system calls | ×direct |\n|---|---|---:|---:|---:|---:|---:|\n",
    );
    let find = |server: &str, client: &str, inflight: usize| {
        stats
            .iter()
            .find(|s| s.server == server && s.client == client && s.inflight == inflight)
    };
    let ratio = |x: Option<f64>, d: Option<f64>| match (x, d) {
        (Some(x), Some(d)) if d > 0.0 => format!("{:.2}×", x / d),
        _ => "–".into(),
    };
    for (server, _) in &servers {
        for inflight in [1, 16] {
            for &(client, label, base) in &DOOR_CLIENTS {
                let direct = find(server, base, inflight);
                {
                    let Some(s) = find(server, client, inflight) else {
                        continue;
                    };
                    md.push_str(&format!(
                        "| {server} | {label} | {inflight} | {} | {} | {} | {} |\n",
                        s.instructions_per_call
                            .map_or("–".into(), |v| format!("{v:.0}")),
                        ratio(
                            s.instructions_per_call,
                            direct.and_then(|d| d.instructions_per_call)
                        ),
                        s.syscalls_per_call
                            .map_or("–".into(), |v| format!("{v:.1}")),
                        ratio(
                            s.syscalls_per_call,
                            direct.and_then(|d| d.syscalls_per_call)
                        ),
                    ));
                }
            }
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_run_keeps_the_door_section_before_its_notes() {
        let dir = std::env::temp_dir().join(format!("rho-bench-door-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("BENCHMARKS.md");
        let door = format!("\n{DOOR_HEADING}\n\n| door table |\n");
        std::fs::write(
            &path,
            format!("# old\n\n## 6. Large\n{door}\n## Notes from this run\n\nold notes\n"),
        )
        .expect("write");
        let run = "# new\n\n## 6. Large\n\nnew table\n\n## Notes from this run\n\nnew notes\n";
        let kept = keep_door_section(run, &path);
        let at_door = kept.find(DOOR_HEADING).expect("door kept");
        let at_notes = kept.find("## Notes from this run").expect("notes");
        assert!(at_door < at_notes, "{kept}");
        assert!(
            kept.contains("new table") && kept.contains("new notes") && !kept.contains("old notes")
        );
        // A file without the section gives the run as it is.
        std::fs::write(&path, "# old\n").expect("write");
        assert_eq!(keep_door_section(run, &path), run);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
