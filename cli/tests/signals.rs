//! No process outlives `rho`: SIGINT, SIGTERM and SIGHUP at any phase
//! (startup, a call, a form on the terminal) shut every server's process
//! group down before rho exits with 128 + the signal; a SIGKILLed rho
//! still takes its direct children with it (Linux's parent-death signal);
//! and a run with no enabled server starts no thread at all.
//!
//! Every test runs the real binary on both executors. The server is
//! `tests/servers/fixtures/lingering.js`, which ignores those three signals
//! and the end of its input and keeps a `sleep 600` grandchild, so only a
//! kill of its whole group ends both; it writes both pids and the phase it
//! reached to files, which is how a test knows where rho is and what must
//! be gone.
//!
//! The form phase needs a person at a terminal (rho asks only when stdin
//! and stderr are terminals), so rho gets a pseudo-terminal made here with
//! openpt(3) as its stdin and stderr; the test reads the form off the
//! master side. That is simpler and more direct than `script(1)`: the
//! child is rho itself, so its pid is known. The signal is sent with
//! kill(2) to rho's pid, which is what the terminal driver does on Ctrl-C
//! (rho is alone in its process group; servers have their own).

#![cfg(target_os = "linux")]

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::pty::{Pty, Screen};
use rho_tests::scene::Scene;
use rho_tests::{process_alive, tests_dir, toml_path, toml_str};
use rustix::process::{Pid, Signal};

/// Where rho is when the signal arrives.
#[derive(Clone, Copy, Debug)]
enum Phase {
    /// `rho mcp call` while the server never answers `initialize`.
    Startup,
    /// `rho mcp call` of a tool that never answers.
    Call,
    /// `rho mcp call` of a tool whose server asks a question: rho shows
    /// the form on its terminal.
    Form,
}

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// A scene whose config runs `lingering.js` in one mode as server `s`,
/// writing its files (pids, the phase it reached) to the scene's dir.
struct Lingering {
    scene: Scene,
}

impl Lingering {
    fn new(name: &str, runtime: Runtime, mode: &str) -> Self {
        Self::with(name, runtime, mode, |_| String::new())
    }

    /// Like [`Lingering::new`], with config text appended (given the dir).
    fn with(name: &str, runtime: Runtime, mode: &str, extra: impl Fn(&Path) -> String) -> Self {
        let scene = Scene::new(RHO, &format!("signals-{name}"), runtime).without_env(&["CI"]);
        let script = tests_dir().join("servers/fixtures/lingering.js");
        let dir = scene.dir();
        // A long startup budget: a signal must end the wait, not the budget.
        let config = format!(
            "[mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}, {}, {}]\n\
             startup_timeout_secs = 60\ntool_timeout_secs = 600\n{}",
            toml_path(&script),
            toml_str(mode),
            toml_path(dir),
            extra(dir)
        );
        Self {
            scene: scene.with_config(&config),
        }
    }

    /// `rho --config <config> mcp <args>` on this scene, stdout piped;
    /// stdin (null) and stderr as the caller sets them.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.scene.command();
        command.arg("mcp").args(args).stdout(Stdio::piped());
        command
    }

    /// Waits for the fixture to have written `name` (up to 20 s).
    fn wait_file(&self, name: &str) -> String {
        let path = self.scene.dir().join(name);
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return text;
            }
            assert!(Instant::now() < until, "the fixture never wrote {name}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's and its grandchild's pids, once both are written.
    fn pids(&self) -> (u32, u32) {
        let parse = |name: &str| -> u32 {
            let text = self.wait_file(name);
            text.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{name}: {text:?}"))
        };
        (parse("server.pid"), parse("sleep.pid"))
    }
}

fn send(pid: u32, signal: Signal) {
    let pid = Pid::from_raw(i32::try_from(pid).expect("pid fits")).expect("pid is not 0");
    rustix::process::kill_process(pid, signal).expect("signal rho");
}

/// Waits (up to `within`) for `child` to exit; kills it and fails past that.
fn wait_exit(child: &mut Child, within: Duration, what: &str) -> std::process::ExitStatus {
    let until = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for rho") {
            return status;
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rho did not exit within {within:?} of {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to 5 s for `pid` to be gone (a zombie counts as gone: the
/// kernel reaps reparented processes on its own time).
fn gone_within_5s(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !process_alive(pid)
}

/// Kills leftovers so a failing test does not leak `sleep 600`.
fn sweep(pids: &[u32]) {
    for &pid in pids {
        if process_alive(pid)
            && let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
    }
}

/// Puts rho at `phase` on `rt`, sends `signal`, and checks the exit code
/// is 128 + the signal and that the server and its grandchild are gone
/// within 5 s of rho's exit.
fn stops_everything(rt: Runtime, phase: Phase, signal: Signal, args: &[&str]) {
    let (mode, name) = match phase {
        Phase::Startup => ("never", "startup"),
        Phase::Call => ("slow", "call"),
        Phase::Form => ("ask", "form"),
    };
    let scene = Lingering::new(&format!("{name}-{}", signal.as_raw()), rt, mode);
    let mut command = scene.command(args);
    let (child, screen) = match phase {
        Phase::Form => {
            let pty = Pty::open();
            command.stdin(pty.slave()).stderr(pty.slave());
            let child = command.spawn().expect("start rho");
            // The command holds our copies of the slave; dropping it leaves
            // rho the only holder, so the reader ends when rho does.
            drop(command);
            (child, Some(pty.record().0))
        }
        Phase::Startup | Phase::Call => {
            command.stdin(Stdio::null()).stderr(Stdio::piped());
            (command.spawn().expect("start rho"), None)
        }
    };
    finish(scene, (phase, args[0] == "call"), signal, child, screen);
}

fn finish(
    scene: Lingering,
    (phase, call): (Phase, bool),
    signal: Signal,
    mut child: Child,
    mut screen: Option<Screen>,
) {
    let (server, sleeper) = scene.pids();
    match phase {
        Phase::Startup => {}
        Phase::Call => assert_eq!(scene.wait_file("phase"), "called"),
        Phase::Form => {
            assert_eq!(scene.wait_file("phase"), "asked");
            let screen = screen.as_ref().expect("a terminal");
            wait_screen(screen, "Colour");
        }
    }
    send(child.id(), signal);
    let status = wait_exit(&mut child, Duration::from_secs(20), "the signal");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let server_gone = gone_within_5s(server);
    let sleeper_gone = gone_within_5s(sleeper);
    sweep(&[server, sleeper]);
    if let Some(screen) = &mut screen {
        // Everything rho drew, to the end: the reader has seen the
        // terminal close behind rho (and anything it started).
        match screen.closed(Duration::from_secs(5)) {
            Ok(shown) => stderr.push_str(&shown),
            Err(shown) => {
                stderr.push_str(&shown);
                stderr.push_str("\n[the terminal was still open 5 s after rho exited]\n");
            }
        }
    }
    let expected = 128 + signal.as_raw();
    assert_eq!(status.code(), Some(expected), "{status:?}\n{stderr}");
    assert!(server_gone, "the server {server} outlived rho\n{stderr}");
    assert!(
        sleeper_gone,
        "the server's grandchild {sleeper} outlived rho\n{stderr}"
    );
    assert!(stderr.contains("stopped by SIG"), "{stderr}");
    let said = match phase {
        Phase::Startup => "call cancelled before it was sent",
        Phase::Call | Phase::Form => "call to server `s` cancelled; the server was told to stop",
    };
    assert!(!call || stderr.contains(said), "{stderr}");
}

fn sigint_during_startup_stops_everything_and_exits_130(rt: Runtime) {
    stops_everything(rt, Phase::Startup, Signal::INT, &["call", "s", "sleep"]);
}

fn sigterm_during_startup_stops_everything_and_exits_143(rt: Runtime) {
    stops_everything(rt, Phase::Startup, Signal::TERM, &["call", "s", "sleep"]);
}

fn sighup_during_startup_stops_everything_and_exits_129(rt: Runtime) {
    stops_everything(rt, Phase::Startup, Signal::HUP, &["call", "s", "sleep"]);
}

fn sigterm_during_list_connect_startup_stops_everything_and_exits_143(rt: Runtime) {
    stops_everything(rt, Phase::Startup, Signal::TERM, &["list", "--connect"]);
}

fn sighup_during_show_connect_startup_stops_everything_and_exits_129(rt: Runtime) {
    stops_everything(rt, Phase::Startup, Signal::HUP, &["show", "s", "--connect"]);
}

fn sigint_during_a_call_stops_everything_and_exits_130(rt: Runtime) {
    stops_everything(rt, Phase::Call, Signal::INT, &["call", "s", "sleep"]);
}

fn sigterm_during_a_call_stops_everything_and_exits_143(rt: Runtime) {
    stops_everything(rt, Phase::Call, Signal::TERM, &["call", "s", "sleep"]);
}

fn sighup_during_a_call_stops_everything_and_exits_129(rt: Runtime) {
    stops_everything(rt, Phase::Call, Signal::HUP, &["call", "s", "sleep"]);
}

fn sigint_inside_a_form_stops_everything_and_exits_130(rt: Runtime) {
    stops_everything(rt, Phase::Form, Signal::INT, &["call", "s", "ask"]);
}

fn sigterm_inside_a_form_stops_everything_and_exits_143(rt: Runtime) {
    stops_everything(rt, Phase::Form, Signal::TERM, &["call", "s", "ask"]);
}

fn sighup_inside_a_form_stops_everything_and_exits_129(rt: Runtime) {
    stops_everything(rt, Phase::Form, Signal::HUP, &["call", "s", "ask"]);
}

/// A second signal while rho shuts down (its grace gives the server
/// seconds) exits at once with 128 + that signal, still killing the
/// server's whole group first: its grandchild ignores SIGTERM, so only
/// that kill ends it.
fn second_signal_exits_at_once_and_still_kills_every_group(rt: Runtime) {
    let scene = Lingering::new("second", rt, "slow");
    let mut child = scene
        .command(&["call", "s", "sleep"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    let (server, sleeper) = scene.pids();
    assert_eq!(scene.wait_file("phase"), "called");
    send(child.id(), Signal::TERM);
    // The second signal only once rho is shutting down on the first (it
    // has closed the server's input): sent while both were pending, the
    // lower-numbered SIGINT would be taken first.
    scene.wait_file("ended");
    send(child.id(), Signal::INT);
    let second = Instant::now();
    let status = wait_exit(&mut child, Duration::from_secs(20), "two signals");
    // At once: well before the 2 s shutdown grace the first signal began
    // (which the server, ignoring SIGTERM, would sit out) could end it.
    let after_second = second.elapsed();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let server_gone = gone_within_5s(server);
    let sleeper_gone = gone_within_5s(sleeper);
    sweep(&[server, sleeper]);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("second signal"), "{stderr}");
    assert!(
        after_second < Duration::from_millis(1500),
        "rho took {after_second:?} to exit after the second signal\n{stderr}"
    );
    assert!(server_gone, "the server {server} outlived rho\n{stderr}");
    assert!(
        sleeper_gone,
        "the grandchild {sleeper} outlived rho\n{stderr}"
    );
}

/// Waits up to 20 s for `text` on the terminal rho writes to.
fn wait_screen(screen: &Screen, text: &str) {
    let until = Instant::now() + Duration::from_secs(20);
    while !screen.text().contains(text) {
        assert!(
            Instant::now() < until,
            "never showed {text:?}:\n{}",
            screen.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The sampling model is a process too: a signal while it runs ends it
/// with the server (on Linux, its parent-death signal).
fn sigterm_while_the_sampling_model_runs_leaves_no_model_behind(rt: Runtime) {
    use std::io::Write;
    let scene = Lingering::with("sampling", rt, "ask", |dir| {
        // Written aside and renamed, so the file is never seen empty.
        let pid = dir.join("model.pid");
        let model = format!(
            "echo $$ > '{0}.tmp' && mv '{0}.tmp' '{0}'; exec sleep 600",
            pid.display()
        );
        format!(
            "sampling = \"ask\"\n[sampling]\ncommand = [\"sh\", \"-c\", {}]\n",
            toml_str(&model)
        )
    });
    let pty = Pty::open();
    let mut command = scene.command(&["call", "s", "sample"]);
    command.stdin(pty.slave()).stderr(pty.slave());
    let mut child = command.spawn().expect("start rho");
    drop(command);
    let (screen, mut keyboard) = pty.record();
    let (server, sleeper) = scene.pids();
    assert_eq!(scene.wait_file("phase"), "sampling");
    wait_screen(&screen, "Allow? [y/N]");
    keyboard.write_all(b"y\n").expect("type y");
    let model: u32 = scene
        .wait_file("model.pid")
        .trim()
        .parse()
        .expect("model pid");
    send(child.id(), Signal::TERM);
    let status = wait_exit(&mut child, Duration::from_secs(20), "SIGTERM");
    let model_gone = gone_within_5s(model);
    let server_gone = gone_within_5s(server);
    sweep(&[model, server, sleeper]);
    let shown = screen.text();
    assert_eq!(status.code(), Some(143), "{shown}");
    assert!(
        model_gone,
        "the model command {model} outlived rho\n{shown}"
    );
    assert!(server_gone, "the server {server} outlived rho\n{shown}");
}

/// A Streamable HTTP server (no child process) that never answers ends
/// `rho mcp list --connect`'s startup wait on a signal too: the server
/// here accepts every connection and holds it unanswered, so the 60 s
/// startup budget would otherwise run.
fn sigterm_during_an_http_servers_startup_exits_143(rt: Runtime) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("port").port()
    );
    let (accepted_tx, accepted) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            // Held open, unanswered, until the test ends.
            held.push(stream);
            let _ = accepted_tx.send(());
        }
    });
    let scene = Scene::new(RHO, "signals-http-startup", rt).with_config(&format!(
        "[mcp.servers.h]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 60\n",
        toml_str(&url)
    ));
    let mut child = scene
        .command()
        .args(["mcp", "list", "--connect"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    accepted
        .recv_timeout(Duration::from_secs(20))
        .expect("rho never connected");
    send(child.id(), Signal::TERM);
    // A hang guard well under the 60 s startup budget.
    let status = wait_exit(&mut child, Duration::from_secs(10), "SIGTERM");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
}

/// Reads one HTTP request off `stream` (its head, then `Content-Length`
/// bytes of body) and returns it as text.
fn read_request(stream: &mut std::net::TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    loop {
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                return text;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&got).into_owned(),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Ctrl-C while the connect is still being prepared (here: the refresh of
/// a stored, expired login waits on its token endpoint, before any server
/// starts) is rho's to handle, not the default action's: rho finishes the
/// refresh it sent, stores the rotated refresh token (the old one is spent
/// at the authorization server), and exits 130 with its usual words. The
/// token endpoint answers only once the signal was sent.
fn sigint_while_the_connect_is_prepared_exits_130_keeping_the_rotated_token(rt: Runtime) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().expect("port").port();
    let (request_tx, request) = std::sync::mpsc::channel();
    let (go, answer_now) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { break };
            if n > 0 {
                // Anything after the refresh (the server's connect): refused.
                drop(stream);
                continue;
            }
            let _ = request_tx.send(read_request(&mut stream));
            if answer_now.recv().is_err() {
                return;
            }
            let body = r#"{"access_token":"at-2","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let base = format!("http://127.0.0.1:{port}");
    let scene = Scene::new(RHO, "signals-prepare", rt).with_config(&format!(
        "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = {}\n[mcp.servers.r.oauth]\n",
        toml_str(&format!("{base}/mcp"))
    ));
    let rho_dir = scene.home().join(".rho");
    std::fs::create_dir_all(&rho_dir).expect("~/.rho");
    let store = rho_dir.join("mcp-oauth.json");
    let login = serde_json::json!({
        "version": 1,
        "entries": [{
            "server": "r",
            "url": format!("{base}/mcp"),
            "issuer": base,
            "client_id": "c",
            "client_auth": "none",
            "tokens": {
                "access_token": "at-1",
                "refresh_token": "rt-1",
                "expires_at": 1,
                "resource": format!("{base}/mcp"),
                "token_endpoint": format!("{base}/token"),
            },
        }],
    });
    std::fs::write(&store, login.to_string()).expect("store written");
    let mut child = scene
        .command()
        .args(["mcp", "list", "--connect"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    let sent = request
        .recv_timeout(Duration::from_secs(20))
        .expect("rho never asked the token endpoint");
    assert!(sent.contains("refresh_token=rt-1"), "{sent}");
    // rho waits for the answer now, before any server starts.
    send(child.id(), Signal::INT);
    go.send(()).expect("the endpoint answers");
    let status = wait_exit(&mut child, Duration::from_secs(20), "SIGINT");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(130), "{status:?}\n{stderr}");
    assert!(stderr.contains("stopped by SIGINT"), "{stderr}");
    let stored = std::fs::read_to_string(&store).expect("the store");
    assert!(
        stored.contains("\"rt-2\""),
        "the rotated token was lost: {stored}"
    );
}

/// The FIFOs (`*.fifo`) opened since the last call, by the events on the
/// inotify descriptor `watch`.
fn fifos_opened(watch: &OwnedFd) -> Vec<String> {
    let mut names = Vec::new();
    let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
    let mut events = rustix::fs::inotify::Reader::new(watch, &mut buf);
    while let Ok(event) = events.next() {
        let name = event
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".fifo") {
            names.push(name);
        }
    }
    names
}

/// Every secret file key as a FIFO (and as `/dev/zero`), each on a server
/// of its own that answers 401, beside a server that never answers
/// `initialize`: each grant reads its file when it runs, at its server's
/// 401 and not before (inotify shows each FIFO's open; the 401s wait
/// until the test has looked), and fails its server at once, and while the other server is still connecting
/// SIGINT ends rho with its usual shutdown: exit 130, the server and its
/// grandchild gone.
fn sigint_while_servers_with_unusable_secret_files_connect_exits_130(rt: Runtime) {
    use rustix::fs::inotify;
    use std::io::Write;
    // Every request is refused 401, once the test lets the answers go:
    // a grant runs at its server's 401, not before.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().expect("port").port()
    );
    let released = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let (asked_tx, asked) = std::sync::mpsc::channel();
    {
        let released = std::sync::Arc::clone(&released);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let released = std::sync::Arc::clone(&released);
                let asked_tx = asked_tx.clone();
                std::thread::spawn(move || {
                    read_request(&mut stream);
                    let _ = asked_tx.send(());
                    let (lock, go) = &*released;
                    let mut free = lock.lock().expect("lock");
                    while !*free {
                        free = go.wait(free).expect("wait");
                    }
                    drop(free);
                    let _ = stream.write_all(
                        b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                });
            }
        });
    }
    let scene = Lingering::with("secret-files", rt, "never", |dir| {
        let good = dir.join("id_token");
        std::fs::write(&good, "eyJ.id.sig\n").expect("id token");
        let good = good.to_str().expect("a UTF-8 path").to_owned();
        let mut text = String::new();
        for key in rho_tests::SECRET_FILE_KEYS {
            let fifo = dir.join(format!("{key}.fifo"));
            rho_tests::mkfifo(&fifo);
            let fifo = fifo.to_str().expect("a UTF-8 path").to_owned();
            for (name, bad) in [("fifo", fifo.as_str()), ("zero", "/dev/zero")] {
                let id = format!("{}-{name}", key.replace('_', "-"));
                let oauth = rho_tests::oauth_reading(key, bad, &good);
                text.push_str(&format!(
                    "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 60\n[mcp.servers.{id}.oauth]\n{oauth}",
                    toml_str(&url)
                ));
            }
        }
        text
    });
    // Every open of a file in the scene's directory, as it happens.
    let watch = inotify::init(inotify::CreateFlags::NONBLOCK).expect("inotify");
    inotify::add_watch(&watch, scene.scene.dir(), inotify::WatchFlags::OPEN).expect("watch");
    let mut child = scene
        .command(&["list", "--connect"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    // A server asks, and no 401 has been answered: no grant has run, so
    // no secret file has been opened (none was while the connect was
    // prepared, before any server started).
    let (server, sleeper) = scene.pids();
    let asked = asked.recv_timeout(Duration::from_secs(20));
    let opened_early = fifos_opened(&watch);
    {
        let (lock, go) = &*released;
        *lock.lock().expect("lock") = true;
        go.notify_all();
    }
    if asked.is_err() || !opened_early.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        sweep(&[server, sleeper]);
        panic!("asked: {asked:?}; read before any grant ran: {opened_early:?}");
    }
    // Each grant has read (tried) its FIFO: its server has failed.
    let mut read: Vec<String> = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while read.len() < rho_tests::SECRET_FILE_KEYS.len() {
        for name in fifos_opened(&watch) {
            if !read.contains(&name) {
                read.push(name);
            }
        }
        assert!(
            Instant::now() < until,
            "only these secret files were read: {read:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    send(child.id(), Signal::INT);
    let status = wait_exit(&mut child, Duration::from_secs(20), "SIGINT");
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let server_gone = gone_within_5s(server);
    let sleeper_gone = gone_within_5s(sleeper);
    sweep(&[server, sleeper]);
    assert_eq!(status.code(), Some(130), "{status:?}\n{stderr}");
    assert!(stderr.contains("stopped by SIGINT"), "{stderr}");
    assert!(server_gone, "the server {server} outlived rho\n{stderr}");
    assert!(
        sleeper_gone,
        "the server's grandchild {sleeper} outlived rho\n{stderr}"
    );
}

/// A SIGKILLed rho cannot clean up: the kernel's parent-death signal ends
/// its direct child. (The grandchild is the server's to end; a server
/// SIGKILLed cannot, so the test sweeps it.)
fn sigkilled_rho_leaves_no_server_child(rt: Runtime) {
    let scene = Lingering::new("sigkill", rt, "slow");
    let mut child = scene
        .command(&["call", "s", "sleep"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    let (server, sleeper) = scene.pids();
    assert_eq!(scene.wait_file("phase"), "called");
    send(child.id(), Signal::KILL);
    let status = wait_exit(&mut child, Duration::from_secs(10), "SIGKILL");
    let server_gone = gone_within_5s(server);
    sweep(&[server, sleeper]);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );
    assert!(server_gone, "the server {server} outlived a SIGKILLed rho");
}

/// Threads of `pid`, from /proc.
fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |d| d.count())
}

/// Whether `pid` is blocked in write(2) (or writev), from /proc/<pid>/syscall.
fn blocked_in_write(pid: u32) -> bool {
    #[cfg(target_arch = "x86_64")]
    const WRITES: [&str; 2] = ["1", "20"];
    #[cfg(target_arch = "aarch64")]
    const WRITES: [&str; 2] = ["64", "66"];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const WRITES: [&str; 0] = [];
    std::fs::read_to_string(format!("/proc/{pid}/syscall"))
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .is_some_and(|n| WRITES.contains(&n.as_str()))
}

/// With no enabled server, `rho mcp list --connect` runs on its main
/// thread alone. rho's threads are counted from /proc while the runtime
/// is at its fullest: its stdout is a pipe the test has filled, so rho
/// blocks writing its report, after startup and before the runtime's
/// shutdown, and the test counts `/proc/<pid>/task` while it waits.
fn no_enabled_server_list_connect_starts_no_thread(rt: Runtime) {
    use std::io::Write;
    let scene = Scene::new(RHO, "signals-no-thread", rt).with_config(
        "[mcp.servers.off]\ntransport = \"stdio\"\ncommand = \"node\"\nenabled = false\n",
    );
    let (reader, writer) = rustix::pipe::pipe().expect("pipe");
    let capacity = rustix::pipe::fcntl_getpipe_size(&writer).expect("pipe size");
    let mut writer = std::fs::File::from(writer);
    writer
        .write_all(&vec![b'.'; capacity])
        .expect("fill the pipe");
    let mut child = scene
        .command()
        .args(["mcp", "list", "--connect"])
        .stdout(Stdio::from(OwnedFd::from(writer)))
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(20);
    while !blocked_in_write(pid) {
        assert!(
            child.try_wait().expect("poll rho").is_none(),
            "rho exited before writing its output"
        );
        assert!(Instant::now() < until, "rho never blocked on its output");
        std::thread::sleep(Duration::from_millis(5));
    }
    let threads = threads_of(pid);
    let mut output = String::new();
    std::fs::File::from(reader)
        .read_to_string(&mut output)
        .expect("read rho's output");
    let status = wait_exit(&mut child, Duration::from_secs(10), "its output was read");
    assert!(status.success(), "{status:?}");
    assert!(output.contains("off"), "{output}");
    assert_eq!(threads, 1, "rho ran {threads} threads with nothing enabled");
}

/// `rho mcp list --connect` prints its report and closes stdout before it
/// shuts the servers down: a reader of the pipe has the whole report while
/// the server (which ignores the end of its input and SIGTERM) is still
/// alive, and rho still ends the server's whole group before it exits.
fn list_connect_report_ends_before_the_shutdown_and_orphans_nothing(rt: Runtime) {
    let scene = Lingering::new("report-first", rt, "slow");
    let mut child = scene
        .command(&["list", "--connect"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start rho");
    let (server, sleeper) = scene.pids();
    let mut report = String::new();
    child
        .stdout
        .take()
        .expect("rho's stdout")
        .read_to_string(&mut report)
        .expect("read the report");
    let alive_at_end_of_report = process_alive(server);
    let status = wait_exit(&mut child, Duration::from_secs(30), "its report ended");
    let server_gone = gone_within_5s(server);
    let sleeper_gone = gone_within_5s(sleeper);
    sweep(&[server, sleeper]);
    assert!(status.success(), "{status:?}: {report}");
    assert!(report.contains("mcp__s__sleep"), "{report}");
    assert!(
        alive_at_end_of_report,
        "the report ended only after the server {server} was shut down"
    );
    assert!(
        server_gone && sleeper_gone,
        "rho left its server group behind"
    );
}

both_executors!(
    list_connect_report_ends_before_the_shutdown_and_orphans_nothing,
    sigint_during_startup_stops_everything_and_exits_130,
    sigterm_during_startup_stops_everything_and_exits_143,
    sighup_during_startup_stops_everything_and_exits_129,
    sigterm_during_list_connect_startup_stops_everything_and_exits_143,
    sighup_during_show_connect_startup_stops_everything_and_exits_129,
    sigint_during_a_call_stops_everything_and_exits_130,
    sigterm_during_a_call_stops_everything_and_exits_143,
    sighup_during_a_call_stops_everything_and_exits_129,
    sigint_inside_a_form_stops_everything_and_exits_130,
    sigterm_inside_a_form_stops_everything_and_exits_143,
    sighup_inside_a_form_stops_everything_and_exits_129,
    sigterm_while_the_sampling_model_runs_leaves_no_model_behind,
    sigterm_during_an_http_servers_startup_exits_143,
    sigint_while_the_connect_is_prepared_exits_130_keeping_the_rotated_token,
    sigint_while_servers_with_unusable_secret_files_connect_exits_130,
    sigkilled_rho_leaves_no_server_child,
    second_signal_exits_at_once_and_still_kills_every_group,
    no_enabled_server_list_connect_starts_no_thread,
);
