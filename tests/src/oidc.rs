//! The oidc-provider fixture (tests/servers/fixtures/oidc-server.mjs),
//! started by a test and stopped when dropped: a real OpenID Connect /
//! OAuth 2.1 authorization server (the `oidc-provider` npm package, pinned
//! in tests/servers) in front of the official TypeScript SDK's MCP server,
//! each on a loopback port the kernel picks. The fixture's header comment
//! says what its options and control paths do; this module starts it,
//! waits for its ports, and speaks plain HTTP/1.1 to it
//! ([`http_exchange`]), which the OAuth tests also use against the other
//! fixtures.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::tests_dir;

/// A running oidc-server.mjs, killed (and reaped) on drop.
pub struct OidcProvider {
    child: Child,
    as_port: u16,
    mcp_port: u16,
    stderr: PathBuf,
}

impl OidcProvider {
    /// Starts the fixture with `args` (`--approve-at-once`, `--log FILE`,
    /// ...), writing its port file and stderr (`oidc-stderr.txt`) in
    /// `dir`, and waits up to 20 s for both ports. Panics when node or the
    /// fixture cannot start.
    pub fn start(dir: &Path, args: &[&str]) -> Self {
        crate::node_modules();
        let port_file = dir.join("oidc-ports");
        let stderr = dir.join("oidc-stderr.txt");
        let mut child = Command::new("node")
            .arg(tests_dir().join("servers/fixtures/oidc-server.mjs"))
            .arg("--port-file")
            .arg(&port_file)
            .args(args)
            // The fixture exits when its stdin ends: with the test, at worst.
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).expect("the fixture's stderr file"))
            .spawn()
            .expect("start the oidc-provider fixture (node)");
        let until = Instant::now() + Duration::from_secs(20);
        let ports: Vec<u16> = loop {
            let ports: Vec<u16> = std::fs::read_to_string(&port_file)
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if ports.len() == 2 {
                break ports;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the oidc-provider fixture exited ({status}) before it listened:\n{}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                );
            }
            assert!(
                Instant::now() < until,
                "the oidc-provider fixture did not start within 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Self {
            child,
            as_port: ports[0],
            mcp_port: ports[1],
            stderr,
        }
    }

    /// The authorization server's port (its issuer is
    /// `http://127.0.0.1:<port>`).
    pub fn as_port(&self) -> u16 {
        self.as_port
    }

    /// The MCP server's port.
    pub fn mcp_port(&self) -> u16 {
        self.mcp_port
    }

    /// The MCP endpoint, `http://127.0.0.1:<mcp port>/mcp`.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.mcp_port)
    }

    /// POSTs to the fixture's control path `/control/<what>` (`expire`,
    /// `revoke`, `forget`); panics unless it answers 204.
    pub fn control(&self, what: &str) {
        let (status, _, body) =
            http_exchange(self.mcp_port, "POST", &format!("/control/{what}"), "");
        assert_eq!(status, 204, "POST /control/{what}: {body}");
    }

    /// What the fixture wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange with `127.0.0.1:port` (`form`: a form-urlencoded
/// body, sent with any method), reading up to 20 s: the status (0 when
/// the answer is unreadable), the `Location` header and the body.
pub fn http_exchange(
    port: u16,
    method: &str,
    target: &str,
    form: &str,
) -> (u16, Option<String>, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )
    .expect("write");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    (status, location, body.to_owned())
}
