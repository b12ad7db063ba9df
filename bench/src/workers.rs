//! Client processes. Every round-trip measurement runs one client in its
//! own process (`bench worker SPEC`, or the node/python scripts under
//! `bench/clients/`), so its CPU counter holds nothing else: the client
//! connects (not timed), warms up, then for each concurrency level makes N
//! `tools/call` and reports per-call latencies, wall time and its own CPU
//! time over exactly that window, as one JSON line on stdout.

use rho_proto_core::runtime::Sessions as _;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::util::Cpu;
use rho_proto_core::runtime::{CallOptions, ToolCall, ToolCallError};
use rho_proto_core::wire::protocol::CallToolResult;

/// What a client process is asked to do.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// `rho-smol`, `rho-blocking`, `bare`, `bare-async`, `bare-threads`
    /// (stdio only), `rmcp`, `ts`, `python`.
    pub client: String,
    /// A stdio server: command and arguments.
    pub stdio: Option<Vec<String>>,
    /// A Streamable HTTP server.
    pub url: Option<String>,
    pub tool: String,
    pub args: Value,
    pub warmup: usize,
    pub n: usize,
    /// Concurrency levels, measured in this order.
    pub inflight: Vec<usize>,
    /// `bare` only: write the last raw response line here.
    #[serde(default)]
    pub dump: Option<String>,
    /// Per-call timeout, every client (rho: `tool_timeout_secs`); default 60.
    #[serde(default)]
    pub timeout_s: Option<u64>,
}

/// One concurrency level's measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measured {
    pub inflight: usize,
    pub n: usize,
    pub wall_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// Context switches (voluntary + involuntary, all threads) over the
    /// timed calls.
    #[serde(default)]
    pub switches: u64,
    /// Per-call latency, microseconds.
    pub lat_us: Vec<f64>,
}

impl Measured {
    pub fn new(inflight: usize, wall: Duration, cpu: Cpu, lat_us: Vec<f64>) -> Self {
        Self {
            inflight,
            n: lat_us.len(),
            wall_s: wall.as_secs_f64(),
            cpu_user_s: cpu.user.as_secs_f64(),
            cpu_sys_s: cpu.sys.as_secs_f64(),
            switches: cpu.switches,
            lat_us,
        }
    }
}

/// What a client process prints.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct WorkerOut {
    #[serde(default)]
    pub modes: Vec<Measured>,
    /// Length of the first text block of the last result (a sanity check).
    #[serde(default)]
    pub result_len: usize,
    #[serde(default)]
    pub error: Option<String>,
}

/// `bench worker SPEC-JSON`: runs one client and prints one JSON line.
pub fn main(args: &[String]) {
    let spec: WorkerSpec = match args.first().map(|a| serde_json::from_str(a)) {
        Some(Ok(spec)) => spec,
        _ => {
            eprintln!("usage: bench worker SPEC-JSON");
            std::process::exit(2);
        }
    };
    let out = match run(&spec) {
        Ok((modes, result_len)) => WorkerOut {
            modes,
            result_len,
            error: None,
        },
        Err(error) => WorkerOut {
            error: Some(error),
            ..WorkerOut::default()
        },
    };
    println!("{}", serde_json::to_string(&out).expect("serialize"));
    // Exit without waiting for anything a client library left running.
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

fn run(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    match spec.client.as_str() {
        "rho-smol" => rho_smol(spec),
        "rho-blocking" => rho_blocking(spec),
        "rho-host-smol" => rho_host(spec, rho_host::RuntimeKind::Smol, false),
        "rho-host-blocking" => rho_host(spec, rho_host::RuntimeKind::Blocking, false),
        "rho-host-smol-thread" => rho_host(spec, rho_host::RuntimeKind::Smol, true),
        "rho-host-async" => rho_host_async(spec),
        "rho-smol-sync" => rho_smol_sync(spec),
        "bare" if spec.stdio.is_some() => bare_stdio(spec),
        "bare" => bare_http(spec),
        "bare-threads" => bare_threads_stdio(spec),
        "bare-async" if spec.stdio.is_some() => bare_async_stdio(spec),
        "bare-async" => crate::bare_async_http::run(spec),
        #[cfg(feature = "rmcp")]
        "rmcp" => crate::rmcp_side::run_client(spec),
        other => Err(format!("unknown client `{other}`")),
    }
}

/// The spec's warm-up calls, then each of its concurrency levels on
/// threads (see [`measure_threads`]); with the last result's text length.
fn warm_and_measure(
    spec: &WorkerSpec,
    call: &(dyn Fn() -> Result<usize, String> + Sync),
) -> Result<(Vec<Measured>, usize), String> {
    let mut result_len = 0;
    for _ in 0..spec.warmup {
        result_len = call()?;
    }
    let mut out = Vec::new();
    for &inflight in &spec.inflight {
        out.push(measure_threads(inflight, spec.n, call)?);
    }
    Ok((out, result_len))
}

/// Runs `lanes` lanes of sequential calls; each lane's `call` returns the
/// result's text length. Measures wall, CPU and per-call latency. The
/// lanes' threads are started before the clocks and end after them, so
/// neither their creation nor their exit is charged to the calls: with
/// 16 lanes and 500 calls, starting the threads alone added about 0.8 µs
/// of CPU per call.
fn measure_threads(
    inflight: usize,
    n: usize,
    call: &(dyn Fn() -> Result<usize, String> + Sync),
) -> Result<Measured, String> {
    use std::sync::Barrier;
    let per = n.div_ceil(inflight);
    // The lanes and this thread: everyone is in place, then the clocks
    // start and the lanes go; every lane is done, then the clocks stop.
    let (ready, go, done) = (
        Barrier::new(inflight + 1),
        Barrier::new(inflight + 1),
        Barrier::new(inflight + 1),
    );
    let (cpu, wall, lanes) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..inflight)
            .map(|lane| {
                let count = per.min(n.saturating_sub(lane * per));
                let (ready, go, done) = (&ready, &go, &done);
                scope.spawn(move || {
                    ready.wait();
                    go.wait();
                    let mut lat = Vec::with_capacity(count);
                    let mut outcome = Ok(());
                    for _ in 0..count {
                        let t = Instant::now();
                        if let Err(e) = call() {
                            outcome = Err(e);
                            break;
                        }
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    done.wait();
                    outcome.map(|()| lat)
                })
            })
            .collect();
        ready.wait();
        let cpu = Cpu::now();
        let wall = Instant::now();
        go.wait();
        done.wait();
        let wall = wall.elapsed();
        let cpu = Cpu::now().since(cpu);
        let lanes: Vec<Result<Vec<f64>, String>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("lane panicked".into())))
            .collect();
        (cpu, wall, lanes)
    });
    let mut lat = Vec::with_capacity(n);
    for lane in lanes {
        lat.extend(lane?);
    }
    Ok(Measured::new(inflight, wall, cpu, lat))
}

fn rho_config(spec: &WorkerSpec) -> Result<rho_proto_core::config::Config, String> {
    let extra = format!(
        "startup_timeout_secs = 60\ntool_timeout_secs = {}\n",
        spec.timeout_s.unwrap_or(60)
    );
    let extra = extra.as_str();
    let text = match (&spec.stdio, &spec.url) {
        (Some(cmd), _) => crate::util::stdio_server_toml("bench", cmd, extra),
        (None, Some(url)) => crate::util::http_server_toml("bench", url, extra),
        _ => return Err("no target".into()),
    };
    rho_proto_core::config::parse(&text, "bench.toml").map_err(|e| e.to_string())
}

/// Options as the CLI builds them, minus the workspace root: no client in
/// the comparison declares roots, so every server does the same work.
fn rho_options() -> rho_io_blocking::RuntimeOptions {
    let mut options = rho_io_blocking::options_from_process_env();
    options.workspace = None;
    options.shutdown_grace = Duration::from_millis(500);
    options
}

fn text_len(result: &rho_proto_core::wire::protocol::CallToolResult) -> usize {
    result
        .content
        .first()
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .map_or(0, str::len)
}

fn rho_blocking(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let config = rho_config(spec)?;
    let runtime = rho_io_blocking::Runtime::start(&config, rho_options(), |_| true);
    let measured = measure_sync(spec, runtime.server("bench"), |exported, args| {
        runtime.submit(ToolCall::new(exported, args), CallOptions::new())
    });
    runtime.shutdown();
    measured
}

/// Checks that the bench server started (`view`), then warms up and
/// measures a synchronous face's `call` (by exported name) on threads.
fn measure_sync(
    spec: &WorkerSpec,
    view: Option<rho_proto_core::runtime::ServerView>,
    call: impl Fn(&str, Value) -> Result<CallToolResult, ToolCallError> + Sync,
) -> Result<(Vec<Measured>, usize), String> {
    let view = view.ok_or("no server view")?;
    if view.status.is_failure() {
        return Err(format!("rho could not start the server: {:?}", view.status));
    }
    let exported = rho_proto_core::runtime::naming::exported_name("bench", &spec.tool);
    let call = || -> Result<usize, String> {
        let result = call(&exported, spec.args.clone()).map_err(|e| e.to_string())?;
        if result.is_error {
            return Err(format!("tool error: {}", result.text()));
        }
        Ok(text_len(&result))
    };
    warm_and_measure(spec, &call)
}

/// rho through the host library's one door, `rho_host::Host`, as an agent
/// and the `rho` CLI drive it: connected by its builder (no credential
/// store: the bench server needs no login), a blocking `call` per call;
/// with `executor_thread`, as an agent connects it (a thread keeps the
/// smol sessions moving between calls).
/// Lanes are threads, as for rho-blocking: the sync face has no other
/// way to have 16 calls in flight.
fn rho_host(
    spec: &WorkerSpec,
    kind: rho_host::RuntimeKind,
    executor_thread: bool,
) -> Result<(Vec<Measured>, usize), String> {
    let loaded = rho_host::LoadedConfig::from(rho_config(spec)?);
    let builder = rho_host::Host::builder(&loaded)
        .runtime(kind)
        .options(rho_options())
        .store(None);
    let builder = if executor_thread {
        builder.executor_thread()
    } else {
        builder
    };
    let host = builder.connect().host;
    let measured = measure_sync(spec, host.server("bench"), |exported, args| {
        host.call(exported, args, CallOptions::new())
    });
    host.shutdown();
    measured
}

fn rho_smol(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let config = rho_config(spec)?;
    let executor = Arc::new(smol::Executor::new());
    rho_io_smol::block_on(&executor, async {
        let runtime =
            rho_io_smol::Runtime::start(&executor, &config, rho_options(), |_| true).await;
        let measured = measure_async(spec, runtime.server("bench"), async |exported, args| {
            runtime
                .submit(ToolCall::new(exported, args), CallOptions::new())
                .await
        })
        .await;
        runtime.shutdown().await;
        measured
    })
}

/// The smol executor driven directly from synchronous code, as a host
/// without an async face of its own would: a wait per call that runs the
/// executor while it waits (`rho_io_smol::block_on_ticking`), lanes as
/// threads. What the sync face of `Host` on smol is measured against.
fn rho_smol_sync(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let config = rho_config(spec)?;
    let executor = Arc::new(smol::Executor::new());
    let runtime = rho_io_smol::block_on(
        &executor,
        rho_io_smol::Runtime::start(&executor, &config, rho_options(), |_| true),
    );
    let measured = measure_sync(spec, runtime.server("bench"), |exported, args| {
        rho_io_smol::block_on_ticking(
            &executor,
            runtime.submit(ToolCall::new(exported, args), CallOptions::new()),
        )
    });
    rho_io_smol::block_on(&executor, runtime.shutdown());
    measured
}

/// rho through the host's async face on the agent's own smol executor
/// (`HostBuilder::smol_executor`), which this client runs as rho-smol
/// runs its own: lanes as futures on one task.
fn rho_host_async(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let loaded = rho_host::LoadedConfig::from(rho_config(spec)?);
    let executor = Arc::new(smol::Executor::new());
    let host = rho_host::Host::builder(&loaded)
        .options(rho_options())
        .store(None)
        .smol_executor(Arc::clone(&executor))
        .connect()
        .host
        .into_async();
    rho_io_smol::block_on(&executor, async {
        let view = host.host().server("bench");
        let measured = measure_async(spec, view, async |exported, args| {
            host.call(exported, args, CallOptions::new()).await
        })
        .await;
        host.shutdown().await;
        measured
    })
}

/// Checks that the bench server started (`view`), then warms up and
/// measures an async face's `call` (by exported name), lanes as futures
/// on the task awaiting this.
async fn measure_async(
    spec: &WorkerSpec,
    view: Option<rho_proto_core::runtime::ServerView>,
    call: impl AsyncFn(&str, Value) -> Result<CallToolResult, ToolCallError>,
) -> Result<(Vec<Measured>, usize), String> {
    let view = view.ok_or("no server view")?;
    if view.status.is_failure() {
        return Err(format!("rho could not start the server: {:?}", view.status));
    }
    let exported = rho_proto_core::runtime::naming::exported_name("bench", &spec.tool);
    let call = || async {
        let result = call(&exported, spec.args.clone())
            .await
            .map_err(|e| e.to_string())?;
        if result.is_error {
            return Err(format!("tool error: {}", result.text()));
        }
        Ok::<usize, String>(text_len(&result))
    };
    let mut result_len = 0;
    for _ in 0..spec.warmup {
        result_len = call().await?;
    }
    let mut out = Vec::new();
    for &inflight in &spec.inflight {
        let cpu = Cpu::now();
        let wall = Instant::now();
        let per = spec.n.div_ceil(inflight);
        let lanes = (0..inflight).map(|lane| {
            let count = per.min(spec.n.saturating_sub(lane * per));
            let call = &call;
            async move {
                let mut lat = Vec::with_capacity(count);
                for _ in 0..count {
                    let t = Instant::now();
                    call().await?;
                    lat.push(t.elapsed().as_secs_f64() * 1e6);
                }
                Ok::<Vec<f64>, String>(lat)
            }
        });
        let lanes = all_lanes(lanes).await;
        let wall = wall.elapsed();
        let cpu = Cpu::now().since(cpu);
        let mut lat = Vec::new();
        for lane in lanes {
            lat.extend(lane?);
        }
        out.push(Measured::new(inflight, wall, cpu, lat));
    }
    Ok((out, result_len))
}

/// Runs the concurrent lanes of one async client to their ends, polling
/// only the lanes whose call was woken: what a host with concurrent calls
/// does (a task per call, or a set of futures). `join_all` over so few
/// futures polls every lane at every wakeup, which at 16 in flight charged
/// 16 polls per answer to the client measured. rho-smol and rmcp run their
/// lanes the same way.
pub async fn all_lanes<F: std::future::Future>(
    lanes: impl IntoIterator<Item = F>,
) -> Vec<F::Output> {
    use futures::StreamExt;
    let mut pending: futures::stream::FuturesUnordered<F> = lanes.into_iter().collect();
    let mut done = Vec::with_capacity(pending.len());
    while let Some(lane) = pending.next().await {
        done.push(lane);
    }
    done
}

// ----- the bare JSON-lines client: the limit -----

/// The bare client's `initialize` request, under `id`.
pub(crate) fn initialize_line(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"bare","version":"0.0.0"}}}}}}"#
    )
}
pub(crate) const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

pub(crate) fn call_line(id: u64, tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{},"arguments":{args}}}}}"#,
        json!(tool)
    )
}

/// The bare client's bookkeeping at one concurrency level: up to
/// `inflight` requests written ahead, each answer matched to its send time.
struct Pipeline {
    inflight: usize,
    n: usize,
    next_id: u64,
    sent: usize,
    sent_at: std::collections::HashMap<u64, Instant>,
    lat: Vec<f64>,
    cpu: Cpu,
    wall: Instant,
}

impl Pipeline {
    /// Starts the clocks; ids continue from `next_id`.
    fn start(inflight: usize, n: usize, next_id: u64) -> Self {
        Self {
            inflight,
            n,
            next_id,
            sent: 0,
            sent_at: std::collections::HashMap::with_capacity(inflight),
            lat: Vec::with_capacity(n),
            cpu: Cpu::now(),
            wall: Instant::now(),
        }
    }

    /// Whether every answer is in.
    fn done(&self) -> bool {
        self.lat.len() >= self.n
    }

    /// The id of the next request to write now, if there is room.
    fn next(&mut self) -> Option<u64> {
        if self.sent >= self.n || self.sent_at.len() >= self.inflight {
            return None;
        }
        let id = self.next_id;
        self.sent_at.insert(id, Instant::now());
        self.next_id += 1;
        self.sent += 1;
        Some(id)
    }

    /// The answer to `id` arrived.
    fn answered(&mut self, id: u64) -> Result<(), String> {
        let at = self
            .sent_at
            .remove(&id)
            .ok_or_else(|| format!("unexpected id {id}"))?;
        self.lat.push(at.elapsed().as_secs_f64() * 1e6);
        Ok(())
    }

    /// Stops the clocks; returns the level's figures and the next free id.
    fn finish(self) -> (Measured, u64) {
        let measured = Measured::new(
            self.inflight,
            self.wall.elapsed(),
            Cpu::now().since(self.cpu),
            self.lat,
        );
        (measured, self.next_id)
    }
}

/// `line` and its newline, as written to a pipe.
fn line_bytes(line: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    bytes
}

/// What a parsed line is to the bare client.
enum Line {
    /// A response to our request `id`, with its first text block's length.
    Response(u64, usize),
    /// A request from the server, and the line that answers it (an empty
    /// result).
    Request(String),
    Other,
}

fn classify(line: &[u8]) -> Result<Line, String> {
    let v: Value = serde_json::from_slice(line).map_err(|e| format!("bad line: {e}"))?;
    if v.get("method").is_some() {
        return Ok(match v.get("id") {
            Some(id) => {
                Line::Request(json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string())
            }
            None => Line::Other,
        });
    }
    let Some(id) = v.get("id").and_then(Value::as_u64) else {
        return Ok(Line::Other);
    };
    if let Some(error) = v.get("error") {
        return Err(format!("error response: {error}"));
    }
    let len = v
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .map_or(0, str::len);
    Ok(Line::Response(id, len))
}

/// Starts the spec's stdio server for a bare client, stderr discarded.
fn spawn_server(
    spec: &WorkerSpec,
) -> Result<
    (
        std::process::Child,
        std::process::ChildStdin,
        std::process::ChildStdout,
    ),
    String,
> {
    let cmd = spec.stdio.as_ref().ok_or("no command")?;
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdin = child.stdin.take().ok_or("stdin")?;
    let stdout = child.stdout.take().ok_or("stdout")?;
    Ok((child, stdin, stdout))
}

/// Writes a line, reads lines, matches the id: nothing else. The
/// response is parsed into a `serde_json::Value` (a client has to read it).
fn bare_stdio(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let (mut child, mut stdin, stdout) = spawn_server(spec)?;
    let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf = Vec::with_capacity(64 * 1024);
    let send = |stdin: &mut std::process::ChildStdin, line: &str| -> Result<(), String> {
        stdin
            .write_all(&line_bytes(line))
            .map_err(|e| format!("write: {e}"))
    };
    // Reads until the response to one of our ids arrives.
    let mut read_response =
        |stdin: &mut std::process::ChildStdin, buf: &mut Vec<u8>| -> Result<(u64, usize), String> {
            loop {
                buf.clear();
                let n = stdout
                    .read_until(b'\n', buf)
                    .map_err(|e| format!("read: {e}"))?;
                if n == 0 {
                    return Err("server closed stdout".into());
                }
                match classify(buf.trim_ascii_end())? {
                    Line::Response(id, len) => return Ok((id, len)),
                    Line::Request(answer) => send(stdin, &answer)?,
                    Line::Other => {}
                }
            }
        };
    send(&mut stdin, &initialize_line(0))?;
    read_response(&mut stdin, &mut buf)?;
    send(&mut stdin, INITIALIZED)?;
    let args = spec.args.to_string();
    let mut next_id = 1u64;
    let mut result_len = 0;
    for _ in 0..spec.warmup {
        send(&mut stdin, &call_line(next_id, &spec.tool, &args))?;
        next_id += 1;
        result_len = read_response(&mut stdin, &mut buf)?.1;
    }
    let mut out = Vec::new();
    for &inflight in &spec.inflight {
        let mut level = Pipeline::start(inflight, spec.n, next_id);
        while !level.done() {
            while let Some(id) = level.next() {
                send(&mut stdin, &call_line(id, &spec.tool, &args))?;
            }
            let (id, len) = read_response(&mut stdin, &mut buf)?;
            level.answered(id)?;
            result_len = len;
        }
        let (measured, next) = level.finish();
        out.push(measured);
        next_id = next;
    }
    if let Some(path) = &spec.dump {
        send(&mut stdin, &call_line(next_id, &spec.tool, &args))?;
        // The response line is left in `buf`.
        read_response(&mut stdin, &mut buf)?;
        std::fs::write(path, buf.trim_ascii_end()).map_err(|e| e.to_string())?;
    }
    drop(stdin);
    let _ = child.wait();
    Ok((out, result_len))
}

/// The bare client on smol's reactor, as rho-smol runs: the same one task
/// with its requests written ahead, but its pipes are async-io sources
/// (`Async`, as rho-smol's are) and it waits for them under
/// `smol::block_on`, in async-io's reactor, instead of in `read`. What it
/// adds to the bare client is what any client on that runtime pays: each
/// wait for the server is an `epoll_pwait` plus the reactor's re-arming
/// (the pipe's one-shot interest, its notifier and its timer: polling's
/// epoll backend re-arms both at every wait).
fn bare_async_stdio(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    use smol::io::{AsyncBufReadExt, AsyncWriteExt};

    type Stdin = smol::Async<std::process::ChildStdin>;
    type Stdout = smol::io::BufReader<smol::Async<std::process::ChildStdout>>;
    async fn send(stdin: &mut Stdin, line: &str) -> Result<(), String> {
        stdin
            .write_all(&line_bytes(line))
            .await
            .map_err(|e| format!("write: {e}"))
    }
    /// Reads until the response to one of our ids arrives.
    async fn read_response(
        stdin: &mut Stdin,
        stdout: &mut Stdout,
        buf: &mut Vec<u8>,
    ) -> Result<(u64, usize), String> {
        loop {
            buf.clear();
            let n = stdout
                .read_until(b'\n', buf)
                .await
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("server closed stdout".into());
            }
            match classify(buf.trim_ascii_end())? {
                Line::Response(id, len) => return Ok((id, len)),
                Line::Request(answer) => send(stdin, &answer).await?,
                Line::Other => {}
            }
        }
    }
    let (mut child, stdin, stdout) = spawn_server(spec)?;
    let measured = smol::block_on(async {
        let mut stdin = smol::Async::new(stdin).map_err(|e| format!("stdin: {e}"))?;
        let mut stdout = smol::io::BufReader::with_capacity(
            64 * 1024,
            smol::Async::new(stdout).map_err(|e| format!("stdout: {e}"))?,
        );
        let mut buf = Vec::with_capacity(64 * 1024);
        send(&mut stdin, &initialize_line(0)).await?;
        read_response(&mut stdin, &mut stdout, &mut buf).await?;
        send(&mut stdin, INITIALIZED).await?;
        let args = spec.args.to_string();
        let mut next_id = 1u64;
        let mut result_len = 0;
        for _ in 0..spec.warmup {
            send(&mut stdin, &call_line(next_id, &spec.tool, &args)).await?;
            next_id += 1;
            result_len = read_response(&mut stdin, &mut stdout, &mut buf).await?.1;
        }
        let mut out = Vec::new();
        for &inflight in &spec.inflight {
            let mut level = Pipeline::start(inflight, spec.n, next_id);
            while !level.done() {
                while let Some(id) = level.next() {
                    send(&mut stdin, &call_line(id, &spec.tool, &args)).await?;
                }
                let (id, len) = read_response(&mut stdin, &mut stdout, &mut buf).await?;
                level.answered(id)?;
                result_len = len;
            }
            let (measured, next) = level.finish();
            out.push(measured);
            next_id = next;
        }
        Ok((out, result_len))
    });
    let _ = child.wait();
    measured
}

/// The bare client with a blocking call per thread, as rho-blocking is
/// used: each lane's thread writes its request line and sleeps until one
/// reader thread, which reads every line, parses it and matches the id,
/// hands it the answer. This is the least a blocking client whose calls
/// return on their callers' threads can do: the bare client's work, plus
/// the one hand-over per call from the thread that reads to the thread
/// that waits (a wake-up, a context switch, a sleep), which the bare
/// client, on its one thread, never makes. Nothing else is shared: each
/// lane has its own slot, named by the high half of its ids, and lines
/// are written without a lock (see [`PIPE_BUF`]).
fn bare_threads_stdio(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex, RwLock};

    /// A pipe takes a write of up to this many bytes whole, never
    /// interleaved with another thread's (POSIX `PIPE_BUF`, 4 KiB on
    /// Linux): such lines need no lock, only one that keeps a longer
    /// line's several writes from being cut into.
    const PIPE_BUF: usize = 4096;

    /// Where a lane's answer lands: the first text block's length.
    #[derive(Default)]
    struct Slot {
        answer: Mutex<Option<Result<usize, String>>>,
        ready: Condvar,
    }
    impl Slot {
        fn put(&self, answer: Result<usize, String>) {
            *self.answer.lock().expect("slot") = Some(answer);
            self.ready.notify_one();
        }
        fn take(&self) -> Result<usize, String> {
            let mut answer = self.answer.lock().expect("slot");
            loop {
                if let Some(answer) = answer.take() {
                    return answer;
                }
                answer = self.ready.wait(answer).expect("slot");
            }
        }
    }
    thread_local! {
        static LANE: Cell<Option<usize>> = const { Cell::new(None) };
    }
    let (mut child, stdin, stdout) = spawn_server(spec)?;
    let stdin = RwLock::new(Some(stdin));
    let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
    // One lane for the thread that connects and warms up, one per thread
    // of every level (each level starts threads of its own).
    let slots: Vec<Slot> = (0..=spec.inflight.iter().sum::<usize>())
        .map(|_| Slot::default())
        .collect();
    let lanes = AtomicUsize::new(0);
    let send = |line: &str| -> Result<(), String> {
        let bytes = line_bytes(line);
        let (shared, exclusive);
        let pipe: &Option<std::process::ChildStdin> = if bytes.len() <= PIPE_BUF {
            shared = stdin.read().expect("stdin");
            &shared
        } else {
            exclusive = stdin.write().expect("stdin");
            &exclusive
        };
        let mut pipe = pipe.as_ref().ok_or("stdin closed")?;
        pipe.write_all(&bytes).map_err(|e| format!("write: {e}"))
    };
    let read_all = || {
        let mut buf = Vec::with_capacity(64 * 1024);
        let failed = loop {
            buf.clear();
            match stdout.read_until(b'\n', &mut buf) {
                Ok(0) => break "server closed stdout".to_owned(),
                Ok(_) => {}
                Err(e) => break format!("read: {e}"),
            }
            match classify(buf.trim_ascii_end()) {
                Ok(Line::Response(id, len)) => {
                    if let Some(slot) = slots.get((id >> 32) as usize) {
                        slot.put(Ok(len));
                    }
                }
                Ok(Line::Request(answer)) => {
                    if let Err(e) = send(&answer) {
                        break e;
                    }
                }
                Ok(Line::Other) => {}
                Err(e) => break e,
            }
        };
        for slot in &slots {
            slot.put(Err(failed.clone()));
        }
    };
    let seq = AtomicU64::new(0);
    let args = spec.args.to_string();
    let request = |line: &dyn Fn(u64) -> String| -> Result<usize, String> {
        let lane = LANE.with(|lane| match lane.get() {
            Some(n) => n,
            None => {
                let n = lanes.fetch_add(1, Ordering::Relaxed);
                lane.set(Some(n));
                n
            }
        });
        let slot = slots.get(lane).ok_or("more lanes than slots")?;
        let id = ((lane as u64) << 32) | (seq.fetch_add(1, Ordering::Relaxed) & 0xffff_ffff);
        send(&line(id))?;
        slot.take()
    };
    let call = || request(&|id| call_line(id, &spec.tool, &args));
    let measured = std::thread::scope(|scope| {
        scope.spawn(read_all);
        let measured = (|| {
            request(&initialize_line)?;
            send(INITIALIZED)?;
            warm_and_measure(spec, &call)
        })();
        // End of input: the server exits, its stdout closes, the reader
        // returns.
        drop(stdin.write().expect("stdin").take());
        measured
    });
    let _ = child.wait();
    measured
}

/// The bare client over Streamable HTTP: one POST per call on rho's own
/// ureq agent configuration, the body read whole (JSON or SSE), the id
/// matched. 16 in flight means 16 threads sharing the agent's pool.
fn bare_http(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let url = spec.url.as_deref().ok_or("no url")?;
    let agent = rho_io_blocking::new_agent();
    let post =
        |body: String, session: Option<&str>| -> Result<(Option<String>, Vec<Value>), String> {
            let mut request = agent
                .post(url)
                .header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream");
            if let Some(session) = session {
                request = request
                    .header("Mcp-Session-Id", session)
                    .header("MCP-Protocol-Version", "2025-11-25");
            }
            let mut response = request.send(body).map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            if status >= 300 {
                return Err(format!("HTTP {status}"));
            }
            let session_id = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let sse = response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|c| c.starts_with("text/event-stream"));
            let body = response
                .body_mut()
                .with_config()
                .limit(u64::MAX)
                .read_to_vec()
                .map_err(|e| e.to_string())?;
            Ok((session_id, messages_of(sse, &body)?))
        };
    let (session, _) = post(initialize_line(0), None)?;
    let session = session.ok_or("no Mcp-Session-Id")?;
    post(INITIALIZED.to_owned(), Some(&session))?;
    let args = spec.args.to_string();
    let next_id = std::sync::atomic::AtomicU64::new(1);
    let call = || -> Result<usize, String> {
        let id = next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (_, messages) = post(call_line(id, &spec.tool, &args), Some(&session))?;
        answer_len(&messages, id)
    };
    let measured = warm_and_measure(spec, &call);
    let _ = agent.delete(url).header("Mcp-Session-Id", &session).call();
    measured
}

/// The JSON-RPC messages of an HTTP response body: each SSE `data:` line
/// of an event stream, or the body itself.
pub(crate) fn messages_of(sse: bool, body: &[u8]) -> Result<Vec<Value>, String> {
    let mut messages = Vec::new();
    if sse {
        for line in body.split(|&b| b == b'\n') {
            if let Some(data) = line.strip_prefix(b"data:") {
                let data = data.trim_ascii();
                if !data.is_empty() {
                    messages.push(serde_json::from_slice(data).map_err(|e| e.to_string())?);
                }
            }
        }
    } else if !body.is_empty() {
        messages.push(serde_json::from_slice(body).map_err(|e| e.to_string())?);
    }
    Ok(messages)
}

/// The first text block's length of the response to `id` among
/// `messages`.
pub(crate) fn answer_len(messages: &[Value], id: u64) -> Result<usize, String> {
    for m in messages {
        if m.get("id").and_then(Value::as_u64) == Some(id) {
            if let Some(error) = m.get("error") {
                return Err(format!("error response: {error}"));
            }
            return Ok(m
                .pointer("/result/content/0/text")
                .and_then(Value::as_str)
                .map_or(0, str::len));
        }
    }
    Err(format!("no response to {id}"))
}
