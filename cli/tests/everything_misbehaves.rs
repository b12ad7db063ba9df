//! One config in which every server misbehaves in its own way — missing,
//! crashing, silent, lingering, flooding, hostile text, echoed secrets, an
//! OAuth server without a login, a refused port, a non-loopback http URL,
//! a wrong-type entry — and `rho mcp list --connect` still ends within the
//! largest startup budget plus 5 s, gives every server a clear reason, and
//! leaves no process of any of them behind. On both executors.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::scene::Scene;
use rho_tests::{tests_dir, toml_path, toml_str};

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// Every stdio server gets this variable; any process still carrying it
/// after rho exits was left behind.
const MARKER: &str = "RHO_MISBEHAVE_MARKER";

/// The startup budget of every server.
const BUDGET_SECS: u64 = 4;

fn fixture(name: &str) -> String {
    toml_path(&tests_dir().join("servers/fixtures").join(name))
}

fn stdio(id: &str, args: &[String], marker: &str) -> String {
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}]\nstartup_timeout_secs = {BUDGET_SECS}\nenv = {{ {MARKER} = {}, API_TOKEN = \"sk-live-0123456789abcdef\" }}\n",
        args.join(", "),
        toml_str(marker)
    )
}

/// Processes (other than this test) whose environment holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let needle = format!("{MARKER}={marker}");
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && environ.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
        {
            // A zombie still listed until its parent reaps it is gone
            // for every purpose that matters here.
            let state = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            if !state.contains(") Z ") {
                out.push(pid);
            }
        }
    }
    out
}

struct Fixture(Child);

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn oauth_server(dir: &Path) -> (Fixture, u16) {
    let port_file = dir.join("oauth-port");
    let child = Command::new("node")
        .arg(tests_dir().join("servers/fixtures/oauth-server.js"))
        .arg("--port-file")
        .arg(&port_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("oauth fixture");
    let fixture = Fixture(child);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|p| p.trim().parse().ok())
        {
            return (fixture, port);
        }
        assert!(Instant::now() < until, "oauth fixture did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn run(runtime: Runtime) {
    let scene = Scene::new(RHO, "misbehave", runtime);
    let dir = scene.dir();
    let marker = dir.display().to_string();
    let linger = dir.join("linger");
    std::fs::create_dir_all(&linger).expect("linger dir");
    let (_oauth, oauth_port) = oauth_server(dir);
    let mut config = String::new();
    config.push_str(
        "[mcp.servers.gone]\ntransport = \"stdio\"\ncommand = \"no-such-mcp-server-executable\"\n",
    );
    let m = |mode: &str| vec![fixture("misbehaving.js"), toml_str(mode)];
    config.push_str(&stdio("exits", &m("exit"), &marker));
    config.push_str(&stdio("garbage", &m("garbage"), &marker));
    config.push_str(&stdio("silent", &m("silent"), &marker));
    config.push_str(&stdio(
        "lingering",
        &[
            fixture("lingering.js"),
            toml_str("never"),
            toml_path(&linger),
        ],
        &marker,
    ));
    config.push_str(&stdio(
        "flood",
        &[
            fixture("flood.js"),
            toml_str("before-init"),
            toml_str("20"),
            toml_str("1000"),
        ],
        &marker,
    ));
    config.push_str(&stdio(
        "hostile",
        &[fixture("hostile-text.js"), toml_str("die")],
        &marker,
    ));
    config.push_str(&stdio(
        "leaky",
        &[fixture("echo-secrets.js"), toml_str("stdio-fail")],
        &marker,
    ));
    config.push_str(&format!(
        "[mcp.servers.needs-login]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{oauth_port}/mcp\"\nstartup_timeout_secs = {BUDGET_SECS}\n[mcp.servers.needs-login.oauth]\n"
    ));
    config.push_str(&format!(
        "[mcp.servers.refused]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}/mcp\"\nstartup_timeout_secs = {BUDGET_SECS}\n",
        closed_port()
    ));
    config.push_str("[mcp.servers.plaintext]\ntransport = \"streamable_http\"\nurl = \"http://mcp.example.com/mcp\"\n");
    config.push_str("[mcp.servers.wrongtype]\nnope = 1\n");
    let scene = scene.with_config(&format!("[mcp.servers]\nstringy = \"npx foo\"\n\n{config}"));

    let started = Instant::now();
    let run = scene.rho(&["mcp", "list", "--connect", "--json"]);
    let elapsed = started.elapsed();
    let shown = format!("{run}\n(after {elapsed:?})");
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    assert_eq!(run.code, Some(1), "{shown}");
    assert!(
        elapsed < Duration::from_secs(BUDGET_SECS + 5),
        "took longer than the largest startup budget + 5 s: {shown}"
    );
    let doc = run.json();
    // `RHO_SHOW=1` prints the document, to read the reasons as a person would.
    if std::env::var_os("RHO_SHOW").is_some() {
        eprintln!("{stdout}");
    }
    let servers = doc["servers"].as_array().expect("servers");
    let expect = [
        ("gone", "not found"),
        ("exits", "exit status 3"),
        ("garbage", ""),
        ("silent", "startup timed out after 4 s"),
        ("lingering", "startup timed out after 4 s"),
        ("flood", ""),
        ("hostile", ""),
        ("leaky", ""),
        ("needs-login", "run `rho mcp login needs-login` to log in"),
        ("refused", ""),
        ("plaintext", "https"),
        ("wrongtype", "unknown key `mcp.servers.wrongtype.nope`"),
        ("stringy", "must be a table"),
    ];
    for (id, says) in expect {
        let server = servers
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no `{id}`: {shown}"));
        let status = server["status"].as_str().unwrap_or_default();
        assert!(
            matches!(status, "failed" | "invalid"),
            "`{id}` is {status}: {shown}"
        );
        let error = server["error"].as_str().unwrap_or_default();
        assert!(error.len() > 10, "`{id}` has no clear reason: {shown}");
        assert!(
            error.contains(says),
            "`{id}`: {error:?} does not say {says:?}"
        );
    }
    // Nothing a server sent reaches the output raw, and no echoed secret.
    for text in [stdout, stderr] {
        assert!(
            !text.contains('\u{1b}') && !text.contains('\r'),
            "raw control: {shown}"
        );
        assert!(
            !text.contains("sk-live-0123456789abcdef"),
            "secret: {shown}"
        );
    }
    // Nothing of any server is left: not the servers, not their children.
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(&marker);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < until, "left behind: {left:?}\n{shown}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_server_misbehaving_still_ends_in_time_with_reasons_and_no_process_left() {
    run(Runtime::Smol);
    run(Runtime::Blocking);
}
