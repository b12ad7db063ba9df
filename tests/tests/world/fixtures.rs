//! What the rows run beside rho: the loopback stub their calls reach
//! instead of a service, Context7 over HTTP, and a bounded run of a
//! process fed on a pipe.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rho_tests::{listening_port, tests_dir};
use serde_json::json;

use crate::rows::{CONTEXT7, context7_env, npm};

/// How long the Python client or one shell run may take, start to end.
pub(crate) const PROCESS_BOUND: Duration = Duration::from_secs(90);

/// Runs `command` to its end, feeding it `input`, within `bound`; killed,
/// and an error, when it takes longer.
pub(crate) fn run_bounded(
    mut command: Command,
    input: &[u8],
    bound: Duration,
) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    let stdin = child.stdin.take();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input);
        }
    });
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let until = Instant::now() + bound;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{command:?} still running after {bound:?}: killed"));
            }
        }
    };
    let _ = writer.join();
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// Reads a pipe to its end on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut out);
        }
        out
    })
}

/// A server process the test started; killed on drop.
pub(crate) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Context7 over Streamable HTTP on a loopback port the kernel picks
/// (`fixtures/loopback-listen.cjs`: it would take port 3000 on every
/// interface); the process and its endpoint. Its stderr goes to `dir`.
pub(crate) fn start_context7_http(dir: &Path) -> (Server, String) {
    let stderr = std::fs::File::create(dir.join("context7-http.stderr")).expect("stderr file");
    let mut child = Command::new("node")
        .arg("-r")
        .arg(tests_dir().join("servers/fixtures/loopback-listen.cjs"))
        .arg(npm(CONTEXT7))
        .args(["--transport", "http"])
        .envs(context7_env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("start Context7 over HTTP");
    let port = listening_port(&mut child, "Context7 over HTTP");
    (Server(child), format!("http://127.0.0.1:{port}/mcp"))
}

/// The loopback stub the rows' calls reach instead of a service: Notion's
/// API (`/v1/...`: a user object that echoes the `Authorization` header
/// it got) and a page to fetch (`/world.txt`). Serves until the test
/// process ends; its base URL.
pub(crate) fn start_stub() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the stub");
    let port = listener.local_addr().expect("the stub's address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer(stream));
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// Answers one request of the stub and closes the connection.
fn answer(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/");
    let authorization = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("authorization")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    let (status, kind, body) = if path.starts_with("/v1/") {
        let user = json!({"object": "user", "id": "world-stub", "type": "bot", "name": "world stub", "authorization": authorization});
        ("200 OK", "application/json", user.to_string())
    } else if path == "/world.txt" {
        ("200 OK", "text/plain", "rho world page\n".to_owned())
    } else {
        ("404 Not Found", "text/plain", "not here\n".to_owned())
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
