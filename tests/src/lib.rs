//! Shared helpers for the integration tests: where the pinned real servers
//! live, configs that start them, process checks for "nothing left
//! behind", the CLI tests' scene ([`scene`]), and the OAuth tests'
//! fixtures ([`oauth_server`], [`oidc`]).
//!
//! The servers are installed by `scripts/test` (`npm ci --prefix
//! tests/servers`); a test that finds them missing says so instead of
//! failing obscurely.

pub mod matrix;
pub mod oauth_server;
pub mod oidc;
#[cfg(target_os = "linux")]
pub mod pty;
pub mod scene;
pub mod task_servers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rho_proto_core::config::{self, Config};
use rho_proto_core::host::RuntimeOptions;

pub use rho_os::transcript::TranscriptFile;

/// The `tests/` folder of the repository.
pub fn tests_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The installed npm test servers.
pub fn node_modules() -> PathBuf {
    let dir = tests_dir().join("servers").join("node_modules");
    assert!(
        dir.join("@modelcontextprotocol").is_dir(),
        "the pinned MCP test servers are not installed: run `npm ci --prefix tests/servers` (scripts/test does it)"
    );
    dir
}

/// Entry point of `@modelcontextprotocol/server-everything`.
pub fn everything_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-everything/dist/index.js")
}

/// Entry point of `@modelcontextprotocol/server-filesystem`.
pub fn filesystem_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-filesystem/dist/index.js")
}

/// server-filesystem serving `dir`, as config text with the identity
/// `filesystem`, and options whose session workspace is `dir`: the server
/// replaces its allowed directories with the client's roots, so the
/// workspace must be the directory it serves.
pub fn filesystem_serving(dir: &Path) -> (String, RuntimeOptions) {
    let text = node_server(
        "filesystem",
        &filesystem_js(),
        &[&dir.display().to_string()],
    );
    let mut options = options_with(&[]);
    options.workspace = Some(dir.to_path_buf());
    (text, options)
}

/// Entry point of `@modelcontextprotocol/server-pdf`, an MCP Apps server
/// from the ext-apps examples (run it with `--stdio`): six of its nine
/// tools are for its view only (`_meta.ui.visibility: ["app"]`). It lists
/// its tools without the network.
pub fn pdf_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-pdf/dist/index.js")
}

/// `@modelcontextprotocol/server-pdf`'s six tools for its view only
/// (`_meta.ui.visibility: ["app"]`), in the order it lists them; it lists
/// nine, and the model gets the other three.
pub const PDF_APP_ONLY: [&str; 6] = [
    "read_pdf_bytes",
    "submit_page_data",
    "submit_save_data",
    "submit_viewer_state",
    "poll_pdf_commands",
    "save_pdf",
];

/// The odd-on-purpose fixture server (`tests/servers/fixtures/misbehaving.js`).
pub fn misbehaving_js() -> PathBuf {
    tests_dir().join("servers/fixtures/misbehaving.js")
}

/// The flooding fixture server (`tests/servers/fixtures/flood.js`).
pub fn flood_js() -> PathBuf {
    tests_dir().join("servers/fixtures/flood.js")
}

/// The fixture whose tool answers are unreadable on purpose
/// (`tests/servers/fixtures/bad_answers.js`).
pub fn bad_answers_js() -> PathBuf {
    tests_dir().join("servers/fixtures/bad_answers.js")
}

/// A TOML string literal for a path.
pub fn toml_path(path: &Path) -> String {
    toml_str(&path.display().to_string())
}

/// A TOML basic string literal.
pub fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A `[mcp.servers.<id>]` table running `node <script> <args...>`.
pub fn node_server(id: &str, script: &Path, args: &[&str]) -> String {
    let mut all = vec![toml_path(script)];
    all.extend(args.iter().map(|a| toml_str(a)));
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}]\n",
        all.join(", ")
    )
}

/// Parses a config the test wrote; panics with the error if it is invalid.
pub fn parse_config(text: &str) -> Config {
    config::parse(text, "test.toml").unwrap_or_else(|e| panic!("test config invalid: {e}\n{text}"))
}

/// Runtime options with this process's environment plus `extra`, and a
/// short shutdown grace so tests stay quick.
pub fn options_with(extra: &[(&str, &str)]) -> RuntimeOptions {
    let mut options = rho_os::options_from_process_env();
    for (k, v) in extra {
        options.ambient.retain(|(name, _)| name != k);
        options.ambient.push(((*k).to_owned(), (*v).to_owned()));
    }
    options.shutdown_grace = Duration::from_millis(500);
    options
}

/// Whether a process with this pid exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat_state(&stat) != Some('Z'),
        Err(_) => false,
    }
}

/// Waits for a process to be gone (the kernel reaps reparented
/// grandchildren asynchronously); `false` if it is still there after
/// ten seconds, a bound only a process that was never stopped reaches.
pub fn wait_gone(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !process_alive(pid)
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|stat| {
                    stat_state(&stat) != Some('Z') && stat_field(&stat, 5) == Some(pgid)
                })
        })
        .collect()
}

/// Reads a pid the fixture wrote, waiting for the file (up to 20 s: node
/// fixtures starting on a busy machine can take seconds).
pub fn read_pidfile(path: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh scratch directory under the system temp dir.
///
/// The directory outlives its test (a failed test's files are there to
/// read), but not the next test process: the first call in a process
/// removes the scratch directories of test processes that have ended
/// (`sweep_scratch_dirs`), so runs do not pile them up in the temp dir.
pub fn scratch_dir(name: &str) -> PathBuf {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(|| sweep_scratch_dirs(&std::env::temp_dir()));
    // Unique per call: the same test body runs once per executor, in
    // parallel, in one process.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("{SCRATCH_PREFIX}{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// How every scratch directory's name begins; the test process's id
/// follows.
const SCRATCH_PREFIX: &str = "rho-tests-";

/// Removes the scratch directories under `temp` whose test process has
/// ended. A live process's are left alone, whoever it is (its id may have
/// been reused: then they wait for a later sweep).
fn sweep_scratch_dirs(temp: &Path) {
    // Without /proc nothing tells which processes are alive.
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The state letter of a `/proc/<pid>/stat` line.
fn stat_state(stat: &str) -> Option<char> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().next()?.chars().next()
}

/// The numeric field `n` (1-based, as in proc(5)) of a stat line; `n` ≥ 4.
fn stat_field(stat: &str, n: usize) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(n - 3)?.parse().ok()
}

/// A real server-everything in `streamableHttp` mode on a loopback port,
/// with its output captured. Killed on drop.
pub struct EverythingHttp {
    port: u16,
    child: Option<std::process::Child>,
    output: std::sync::Arc<std::sync::Mutex<String>>,
}

impl EverythingHttp {
    /// Starts it on 127.0.0.1, on a port the kernel picks
    /// (`fixtures/loopback-listen.cjs`), and waits until it listens.
    pub fn start() -> Self {
        Self::start_on(0).unwrap_or_else(|failure| panic!("{failure}"))
    }

    /// Starts it on 127.0.0.1:`port` (0: the kernel picks); an error when
    /// it does not listen there.
    fn start_on(port: u16) -> Result<Self, String> {
        let mut server = Self {
            port,
            child: None,
            output: Default::default(),
        };
        server.spawn()?;
        Ok(server)
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The MCP endpoint on loopback.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// A `[mcp.servers.<id>]` table for it.
    pub fn config(&self, id: &str) -> String {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = {}\n",
            toml_str(&self.url())
        )
    }

    /// Everything it printed so far.
    pub fn output(&self) -> String {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// Waits up to `secs` for its output to contain `needle`.
    pub fn wait_for_output(&self, needle: &str, secs: u64) -> bool {
        let until = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < until {
            if self.output().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Kills it and starts a fresh process on the same port: every session
    /// it knew is gone.
    pub fn restart(&mut self) {
        self.kill();
        if let Err(failure) = self.spawn() {
            panic!("{failure}");
        }
    }

    /// Spawns it on `self.port` (0: any) and waits for the port it
    /// listens on; an error when it exits first, which is what a port
    /// taken meanwhile does.
    fn spawn(&mut self) -> Result<(), String> {
        use std::io::BufRead;
        let mut child = std::process::Command::new("node")
            .arg("-r")
            .arg(tests_dir().join("servers/fixtures/loopback-listen.cjs"))
            .arg(everything_js())
            .arg("streamableHttp")
            .env("RHO_TEST_LISTEN_PORT", self.port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start server-everything");
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let pipes = [
            child
                .stdout
                .take()
                .map(|p| (Box::new(p) as Box<dyn std::io::Read + Send>, Some(port_tx))),
            child
                .stderr
                .take()
                .map(|p| (Box::new(p) as Box<dyn std::io::Read + Send>, None)),
        ];
        for (pipe, mut port_tx) in pipes.into_iter().flatten() {
            let output = std::sync::Arc::clone(&self.output);
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    if line.starts_with("listening ")
                        && let Some(tx) = port_tx.take()
                    {
                        let _ = tx.send(listening_line(&line));
                    }
                    if let Ok(mut o) = output.lock() {
                        o.push_str(&line);
                        o.push('\n');
                    }
                }
            });
        }
        // Long for a bound: a server that exits ends the wait at once.
        let listening = port_rx.recv_timeout(LISTENING_WITHIN);
        match listening {
            Ok(Some(port)) if self.port == 0 || self.port == port => {
                self.port = port;
                self.child = Some(child);
                Ok(())
            }
            other => {
                let _ = child.kill();
                let status = child.wait();
                // Let the readers take in its last words.
                std::thread::sleep(Duration::from_millis(50));
                Err(format!(
                    "server-everything did not listen on 127.0.0.1:{} ({other:?}, then {status:?}): {}",
                    self.port,
                    self.output()
                ))
            }
        }
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The port a fixture listens on, from the first line it prints on its
/// piped stdout, `listening PORT`: the project's fixtures bind a port the
/// kernel picks, so no two tests can race for one. The rest of its stdout
/// is drained on a thread, so it never writes into a closed pipe. Panics,
/// naming `fixture`, when it exits or prints something else first, or
/// nothing within `LISTENING_WITHIN`.
pub fn listening_port(child: &mut std::process::Child, fixture: &str) -> u16 {
    try_listening_port(child, fixture).unwrap_or_else(|why| panic!("{why}"))
}

/// [`listening_port`], with why it failed as an error: a caller that
/// binds a given port may try again (see [`ListenError::Exited`]).
pub fn try_listening_port(
    child: &mut std::process::Child,
    fixture: &str,
) -> Result<u16, ListenError> {
    use std::io::BufRead;
    let stdout = child
        .stdout
        .take()
        .unwrap_or_else(|| panic!("{fixture}: spawn it with stdout piped"));
    let (first_tx, first) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut first_tx = Some(first_tx);
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(tx) = first_tx.take() {
                let _ = tx.send(line);
            }
        }
    });
    let line = match first.recv_timeout(LISTENING_WITHIN) {
        Ok(line) => line,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            return Err(ListenError::Exited(format!(
                "{fixture} exited before saying where it listens"
            )));
        }
        Err(e) => {
            return Err(ListenError::Other(format!(
                "{fixture} did not say where it listens ({e})"
            )));
        }
    };
    listening_line(&line).ok_or_else(|| {
        ListenError::Other(format!(
            "{fixture}: expected `listening PORT` first, got {line:?}"
        ))
    })
}

/// Why a fixture did not say where it listens.
#[derive(Debug)]
pub enum ListenError {
    /// It closed its stdout (exited) first: one asked to bind a port that
    /// something else holds for a moment does this.
    Exited(String),
    /// It printed something else, or nothing in time.
    Other(String),
}

impl std::fmt::Display for ListenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenError::Exited(why) | ListenError::Other(why) => f.write_str(why),
        }
    }
}

/// How long a fixture may take to say where it listens. Only a fixture
/// that is alive and silent waits it out (one that exits ends the wait at
/// once); a Python SDK server importing its framework on a busy machine
/// has taken more than 15 s.
const LISTENING_WITHIN: Duration = Duration::from_secs(60);

/// The port in a fixture's `listening PORT` line.
fn listening_line(line: &str) -> Option<u16> {
    line.strip_prefix("listening ")?.trim().parse().ok()
}

/// The server log messages (`rho::mcp::server`, debug and up) of this test
/// binary as text: one shared buffer behind the tracing subscriber
/// installed on first use. Good for "no secret shows anywhere"; a test that
/// looks for what its own server logged uses [`server_log_of`] instead,
/// since tests of one binary run in parallel.
pub fn captured_server_logs() -> Arc<Mutex<Vec<u8>>> {
    Arc::clone(&capture().all)
}

/// What one server (by its config id) logs through rho from now on, in a
/// buffer of its own: the message and the `logger` of each
/// `rho::mcp::server` event whose `server` field is exactly `server`.
///
/// Panics if another test of this binary already watches that id: two
/// tests sharing a server id would read each other's logs.
pub fn server_log_of(server: &str) -> ServerLog {
    let log = ServerLog(Arc::default());
    let mut watched = capture().by_server.lock().expect("server logs");
    assert!(
        !watched.contains_key(server),
        "server id `{server}` is already watched by another test of this binary: give each test (and each executor variant) its own id"
    );
    watched.insert(server.to_owned(), Arc::clone(&log.0));
    log
}

/// One server's log lines, as [`server_log_of`] collects them.
#[derive(Clone, Debug)]
pub struct ServerLog(Arc<Mutex<String>>);

impl ServerLog {
    /// Everything collected so far, one line per event.
    pub fn text(&self) -> String {
        self.0.lock().expect("server log").clone()
    }
}

struct Capture {
    all: Arc<Mutex<Vec<u8>>>,
    by_server: Mutex<BTreeMap<String, Arc<Mutex<String>>>>,
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let all = Arc::new(Mutex::new(Vec::new()));
        struct Sink(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if let Ok(mut l) = self.0.lock() {
                    l.extend_from_slice(buf);
                }
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Arc::clone(&all);
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new("rho::mcp::server=debug"))
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(move || Sink(Arc::clone(&sink))),
            )
            .with(ByServer);
        let _ = tracing::subscriber::set_global_default(subscriber);
        Capture {
            all,
            by_server: Mutex::new(BTreeMap::new()),
        }
    })
}

/// Routes each `rho::mcp::server` event to the buffer of the server it
/// names, when a test watches that server.
struct ByServer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ByServer {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields {
            server: Option<String>,
            line: String,
        }
        impl tracing::field::Visit for Fields {
            fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
                match field.name() {
                    "server" => self.server = Some(value.to_owned()),
                    name => self.line.push_str(&format!("{name}={value} ")),
                }
            }
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.line.push_str(&format!("{value:?}")),
                    "server" => self.server = Some(format!("{value:?}")),
                    name => self.line.push_str(&format!("{name}={value:?} ")),
                }
            }
        }
        if event.metadata().target() != "rho::mcp::server" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let Some(server) = fields.server else {
            return;
        };
        let Ok(watched) = capture().by_server.lock() else {
            return;
        };
        if let Some(log) = watched.get(&server)
            && let Ok(mut log) = log.lock()
        {
            log.push_str(&fields.line);
            log.push('\n');
        }
    }
}

/// The executor a `rho` binary under test runs its sessions on
/// (`RHO_RUNTIME`), for the CLI tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CliRuntime {
    /// `smol`: every session a task on one executor (the default).
    Smol,
    /// `blocking`: a driver thread per session.
    Blocking,
}

impl CliRuntime {
    /// The value `--runtime` and `RHO_RUNTIME` take.
    pub fn name(self) -> &'static str {
        match self {
            CliRuntime::Smol => "smol",
            CliRuntime::Blocking => "blocking",
        }
    }
}

/// Turns CLI test bodies `fn name(rt: CliRuntime)` into a module per
/// function with a `#[test]` for each executor (`smol`, `blocking`).
#[macro_export]
macro_rules! cli_both_executors {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn smol() {
                    super::$name($crate::CliRuntime::Smol);
                }
                #[test]
                fn blocking() {
                    super::$name($crate::CliRuntime::Blocking);
                }
            }
        )*
    };
}

/// The interpreter of an interop SDK's venv (`mcp1`, `mcp2`, `fastmcp`)
/// and the folder of its servers; fails the test, saying how to install
/// them, when the venv is missing.
pub fn interop_python(sdk: &str) -> (PathBuf, PathBuf) {
    let dir = tests_dir().join("interop/python").join(sdk);
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the interop SDKs are not installed: run `tests/interop/install`"
    );
    (python, dir)
}

/// Puts a browser opener in `dir/bin`: an `xdg-open` (what rho's opener
/// runs on Linux, for logins and URLs a server asks to open) that runs
/// the shell `script` with the URL as `$1`. Returns the PATH that finds it
/// first, for the rho under test.
#[cfg(unix)]
pub fn browser_opener(dir: &Path, script: &str) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("make bin");
    let opener = bin.join("xdg-open");
    std::fs::write(&opener, format!("#!/bin/sh\n{script}\n")).expect("write the opener");
    let mut permissions = std::fs::metadata(&opener).expect("opener").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&opener, permissions).expect("make the opener runnable");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Where the browser tests find Debian's chromium (`apt-get install
/// chromium`; scripts/test installs it).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Whether a real browser can be driven here: Debian's chromium at
/// [`CHROMIUM`] and playwright-core installed in tests/servers.
pub fn browser_available() -> bool {
    Path::new(CHROMIUM).exists()
        && tests_dir()
            .join("servers/node_modules/playwright-core/package.json")
            .exists()
}

/// [`browser_available`], for a browser test's first line: when the
/// browser is missing, a failure under CI (`CI=true`, where scripts/test
/// installs it), else `false` after saying the test is skipped.
pub fn can_drive_browser() -> bool {
    if browser_available() {
        return true;
    }
    let hint = format!(
        "no browser to drive: needs {CHROMIUM} (`apt-get install chromium`) and playwright-core (`npm ci --prefix tests/servers`); scripts/test installs both"
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{hint}");
    eprintln!("skipped: {hint}");
    false
}

/// Runs a script of browser steps with `tests/browser/drive.mjs` (its
/// header lists the steps: `goto`, `waitText`, `click`, `evaluate`,
/// `fetch`, ...) in headless chromium, and answers what it printed: `{ok,
/// steps: [{op, ok, ms, ...}], console, pageErrors}`, one step entry per
/// step run.
///
/// An error when a step failed, the browser did not start, or the run
/// outlived its bound (the script's `totalMs`, default 120 s, which the
/// driver enforces itself, plus 30 s): the driver's message and its whole
/// output, to print in a panic.
pub fn drive_browser(steps: &serde_json::Value) -> Result<serde_json::Value, String> {
    use std::io::Read;
    let script = scratch_dir("browser").join("steps.json");
    std::fs::write(&script, steps.to_string()).map_err(|e| format!("write the steps: {e}"))?;
    let total_ms = steps
        .get("totalMs")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(120_000);
    let mut child = std::process::Command::new("node")
        .arg(tests_dir().join("browser/drive.mjs"))
        .arg(&script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("start node tests/browser/drive.mjs: {e}"))?;
    // Read on threads, so a full pipe never stalls the driver.
    let readers = [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .map(|pipe| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    });
    let until = Instant::now() + Duration::from_millis(total_ms) + Duration::from_secs(30);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(50)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let [stdout, stderr] = readers.map(|r| r.join().unwrap_or_default());
    let Some(status) = status else {
        return Err(format!(
            "drive.mjs outlived {total_ms} ms + 30 s and was killed\nstderr: {stderr}\nstdout: {stdout}"
        ));
    };
    match serde_json::from_str::<serde_json::Value>(&stdout) {
        Ok(result) if status.success() && result["ok"] == true => Ok(result),
        _ => Err(format!(
            "drive.mjs failed ({status}): {}\noutput: {stdout}",
            stderr.trim()
        )),
    }
}

/// Makes a FIFO at `path` with mkfifo(1).
#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Every key of an `oauth` table that names a secret file, as
/// [`oauth_reading`] takes it.
pub const SECRET_FILE_KEYS: [&str; 5] = [
    "assertion",
    "id_token",
    "idp_client_secret",
    "client_secret",
    "client_key",
];

/// The `oauth` table of a server whose grant reads its secret `key` (one
/// of [`SECRET_FILE_KEYS`]) from the file `bad`; any other secret it needs
/// comes from `good` (a regular file).
pub fn oauth_reading(key: &str, bad: &str, good: &str) -> String {
    let (bad, good) = (toml_str(bad), toml_str(good));
    match key {
        "assertion" => format!("grant = \"jwt_bearer\"\nassertion_file = {bad}\n"),
        "id_token" => format!(
            "grant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_file = {bad}\nidp_token_endpoint = \"https://idp.example.com/token\"\n"
        ),
        "idp_client_secret" => format!(
            "grant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_file = {good}\nidp_token_endpoint = \"https://idp.example.com/token\"\nidp_client_id = \"idp\"\nidp_client_secret_file = {bad}\n"
        ),
        "client_secret" => format!(
            "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_file = {bad}\n"
        ),
        "client_key" => format!(
            "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_key_file = {bad}\n"
        ),
        other => panic!("no secret file key `{other}`"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_sweep_removes_the_scratch_dirs_of_ended_processes_only() {
        let temp = super::scratch_dir("sweep");
        let mut ended = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        ended.wait().expect("wait");
        let gone = temp.join(format!("rho-tests-{}-0-old", ended.id()));
        let mine = temp.join(format!("rho-tests-{}-0-live", std::process::id()));
        let other = temp.join("rho-tests-notapid-0-x");
        for dir in [&gone, &mine, &other] {
            std::fs::create_dir_all(dir.join("inside")).expect("create");
        }
        super::sweep_scratch_dirs(&temp);
        assert!(
            !gone.exists(),
            "an ended process's dir is removed, contents and all"
        );
        assert!(mine.exists(), "a live process's dir stays");
        assert!(other.exists(), "a name without a pid is not ours to remove");
    }

    use super::*;

    #[test]
    fn server_everything_on_a_port_another_process_holds_fails_to_start() {
        // Unpatched, it would bind the wildcard address beside this
        // listener, and this listener would take the test's connections.
        let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = held.local_addr().expect("address").port();
        let failure = EverythingHttp::start_on(port)
            .err()
            .expect("server-everything cannot listen on a port held elsewhere");
        assert!(
            failure.contains(&format!("did not listen on 127.0.0.1:{port}"))
                && failure.contains("in use"),
            "{failure}"
        );
    }

    /// What `listening_port` panics with for a node fixture running `script`.
    fn listening_port_panic(script: &str, fixture: &str) -> String {
        let mut child = std::process::Command::new("node")
            .args(["-e", script])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node runs");
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            listening_port(&mut child, fixture)
        }))
        .expect_err("it never said `listening PORT`");
        let _ = child.wait();
        panic.downcast_ref::<String>().cloned().unwrap_or_default()
    }

    #[test]
    fn a_fixture_that_says_something_else_first_is_named_in_the_panic() {
        let message = listening_port_panic("console.log('ready at 80')", "the fixture");
        assert!(
            message.contains("the fixture") && message.contains("ready at 80"),
            "{message}"
        );
    }

    #[test]
    fn a_fixture_that_exits_before_it_listens_is_named_in_the_panic() {
        let message = listening_port_panic("process.exit(3)", "the silent fixture");
        assert!(
            message.contains("the silent fixture exited before saying where it listens"),
            "{message}"
        );
    }
}
