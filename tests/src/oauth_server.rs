//! The OAuth fixture (tests/servers/fixtures/oauth-server.js), started by
//! a test and stopped when dropped: an OAuth-protected MCP server with its
//! own auto-approving authorization server, on a loopback port the kernel
//! picks. The fixture's header comment says what its modes and control
//! paths do. The CLI's login tests and the conformance client's tests
//! both drive it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::oidc::http_exchange;
use crate::tests_dir;

/// A running oauth-server.js, killed (and reaped) on drop.
pub struct OAuthServer {
    child: Child,
    /// The loopback port it listens on.
    pub port: u16,
}

impl OAuthServer {
    /// Starts the fixture with its port file in `dir`, tokens that live
    /// `ttl` seconds and its extra `modes` (`--expire-on METHOD`,
    /// `--step-up TOOL`, ...), and waits up to 10 s for its port.
    pub fn start_with(dir: &Path, ttl: u32, modes: &[&str]) -> Self {
        let port_file = dir.join("port");
        let child = Command::new("node")
            .arg(tests_dir().join("servers/fixtures/oauth-server.js"))
            .arg("--port-file")
            .arg(&port_file)
            .arg("--ttl")
            .arg(ttl.to_string())
            .args(modes)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OAuth fixture");
        let until = Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break port;
            }
            assert!(Instant::now() < until, "the OAuth fixture did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        Self { child, port }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// POSTs to a control path (`expire`, `revoke`).
    pub fn control(&self, what: &str) {
        let (status, _, body) = http_exchange(self.port, "POST", &format!("/control/{what}"), "");
        assert_eq!(status, 204, "POST /control/{what}: {body}");
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
