//! HTTPS trust on both executors: a Streamable HTTP server behind TLS is
//! reached when its certificate chains to a root the platform trusts, and
//! refused with a certificate error when it does not.
//!
//! The server is the real server-everything on loopback HTTP, behind
//! `tests/servers/fixtures/tls-proxy.js`, whose certificate (for
//! 127.0.0.1) is issued by a test CA no system trusts. The platform's
//! roots are what `rustls-native-certs` reads, so `SSL_CERT_FILE` pointing
//! at that CA is how a test makes it trusted, as a person would for a
//! private CA; without it, the system's own roots are used, and refuse.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::Scene;
use rho_tests::{EverythingHttp, listening_port, tests_dir, toml_str};
use serde_json::Value;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// The TLS front, killed on drop.
struct TlsProxy {
    child: Child,
    port: u16,
}

impl TlsProxy {
    fn start(target: u16) -> TlsProxy {
        let mut child = Command::new("node")
            .arg(tests_dir().join("servers/fixtures/tls-proxy.js"))
            .arg(target.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the TLS proxy");
        let port = listening_port(&mut child, "tls-proxy.js");
        TlsProxy { child, port }
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `rho mcp list --connect --json` over one HTTPS server, with
/// `SSL_CERT_FILE` set to `ca` when given; the server's JSON entry.
fn list_over_tls(rt: Runtime, name: &str, trust_test_ca: bool) -> Value {
    let everything = EverythingHttp::start();
    let proxy = TlsProxy::start(everything.port());
    let url = format!("https://127.0.0.1:{}/mcp", proxy.port);
    let scene = Scene::new(RHO, &format!("tls-{name}"), rt).with_config(&format!(
        "[mcp.servers.secure]\ntransport = \"streamable_http\"\nurl = {}\n",
        toml_str(&url)
    ));
    let mut command = scene.command();
    command
        .args(["--runtime", rt.name(), "mcp", "list", "--connect", "--json"])
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
    if trust_test_ca {
        command.env(
            "SSL_CERT_FILE",
            tests_dir().join("servers/fixtures/tls/ca.pem"),
        );
    }
    let started = Instant::now();
    let output = command.output().expect("run rho");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "rho took {:?}",
        started.elapsed()
    );
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    drop(proxy);
    doc["servers"]
        .as_array()
        .and_then(|servers| servers.iter().find(|s| s["id"] == "secure"))
        .cloned()
        .unwrap_or_else(|| panic!("no server `secure` in {doc}"))
}

both_executors!(
    an_https_server_with_a_trusted_root_connects,
    an_https_server_with_an_untrusted_certificate_fails_naming_it,
);

fn an_https_server_with_a_trusted_root_connects(rt: Runtime) {
    let server = list_over_tls(rt, "trusted", true);
    assert_eq!(server["status"], "ready", "{server}");
    assert!(
        server["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{server}"
    );
}

fn an_https_server_with_an_untrusted_certificate_fails_naming_it(rt: Runtime) {
    let server = list_over_tls(rt, "untrusted", false);
    assert_eq!(server["status"], "failed", "{server}");
    let error = server["error"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        error.contains("unknownissuer") && error.contains("ssl_cert_file"),
        "the reason names the certificate and what to do: {server}"
    );
}
