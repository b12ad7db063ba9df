//! `rho mcp login` and `rho mcp call` against authorization servers
//! nobody here wrote (issue 36), started and stopped by the tests on
//! loopback, on both executors:
//!
//! - the official Python SDK's (`mcp` 1.30.0): its `mcp.server.auth`
//!   routes over an in-memory provider, in front of a FastMCP Streamable
//!   HTTP server (tests/interop/python/oauth/mcp1_server.py);
//! - fastmcp's (`fastmcp` 4.2.3, on `mcp` 2.3.0): its in-process
//!   `InMemoryOAuthProvider` in front of a fastmcp server
//!   (tests/interop/python/oauth/fastmcp_server.py);
//! - oidc-provider's (the npm package, pinned in tests/servers): an
//!   OpenID Connect / OAuth 2.1 server with dynamic registration, PKCE and
//!   resource indicators, in front of the official TypeScript SDK's MCP
//!   server (tests/servers/fixtures/oidc-server.mjs, which tests/oauth.rs
//!   also logs in to through a browser's redirects), here approving at
//!   once (`--approve-at-once`: the fixture takes oidc-provider's login
//!   and consent redirects itself).
//!
//! All approve at once, rotate refresh tokens, refuse a refresh token
//! presented twice and revoke its login (reuse detection; oidc-provider's
//! own, which revokes the whole grant), and forget every registration when
//! they stop (oidc-provider: when told, `/control/forget`). Each logs its
//! authorization-server requests as JSON lines (the grant, where the
//! request carried `client_id`, the answer's error), which the tests read
//! to count what rho asked for.
//!
//! For each: a headless login (the token request carries `client_id`
//! where these servers read it, in the form body), a call, a silent refresh
//! when the stored token is due and when the server dropped it, two rho
//! processes refreshing one expired login at once (exactly one refresh at
//! the server, and the rotated token kept), and a registration the server
//! forgot replaced by one new registration; a refresh the server refuses
//! sent once per call (not again at the `initialize` fallback).
//!
//! For the Python servers also: a login through a browser (the test
//! follows the redirect to rho's listener); a second one works though its
//! listener's port is not the one the stored client was registered with
//! (both match redirect URIs exactly); and a browser login after the
//! server forgot the client registers a new one before sending the person
//! to an error page. (tests/oauth.rs logs in to oidc-provider through a
//! browser that follows its login and consent redirects.)
//!
//! The Python servers run on the interop venvs (`tests/interop/install`;
//! scripts/test runs it). Without them a test says so and passes, except
//! with `CI=true`, where it fails. oidc-provider runs on node from
//! tests/servers/node_modules (`npm ci --prefix tests/servers`), and a
//! test fails without it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rho_tests::CliRuntime as Runtime;
use rho_tests::oidc::{OidcProvider, http_exchange};
use rho_tests::scene::{Run, Scene};
use rho_tests::{listening_port, tests_dir, toml_str};
use serde_json::Value;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// The authorization servers under test.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// The Python SDK 1.x's `mcp.server.auth`.
    PythonSdk,
    /// fastmcp's `InMemoryOAuthProvider`.
    FastMcp,
    /// oidc-provider (tests/servers/fixtures/oidc-server.mjs), approving
    /// at once.
    OidcProvider,
}

impl Kind {
    /// The interop venv a Python server runs on, and its script.
    fn parts(self) -> (&'static str, &'static str) {
        match self {
            Kind::PythonSdk => ("mcp1", "mcp1_server.py"),
            Kind::FastMcp => ("fastmcp", "fastmcp_server.py"),
            Kind::OidcProvider => unreachable!("oidc-provider runs on node"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::PythonSdk => "python-sdk",
            Kind::FastMcp => "fastmcp",
            Kind::OidcProvider => "oidc-provider",
        }
    }

    /// The venv's python, or `None` (after saying so) when the venvs are
    /// not installed and this is not CI; in CI a missing venv fails.
    fn python(self) -> Option<PathBuf> {
        let (venv, _) = self.parts();
        let python = tests_dir().join(format!("interop/python/{venv}/.venv/bin/python"));
        if python.exists() {
            return Some(python);
        }
        let hint = format!(
            "the interop venv {venv} is not installed ({}): run `tests/interop/install` (scripts/test does it)",
            python.display()
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{hint}");
        eprintln!("skipped: {hint}");
        None
    }
}

/// A running authorization server + MCP server, stopped on drop.
struct Fixture {
    kind: Kind,
    dir: PathBuf,
    server: Server,
}

/// How a fixture runs.
enum Server {
    /// A Python fixture: one port for both servers.
    Python {
        python: PathBuf,
        /// Its extra arguments (`--refresh-delay`), kept for a restart.
        args: Vec<String>,
        child: Child,
        port: u16,
        /// How many times it was started (each start's stderr has a file).
        starts: u32,
    },
    /// oidc-provider: the authorization server and the MCP server on
    /// ports of their own.
    Oidc(OidcProvider),
}

impl Fixture {
    /// Starts `kind` for a scene in `dir` with `args` (`--refresh-delay
    /// SECS`, which every fixture takes), or `None` when it is not
    /// installed (see [`Kind::python`]). Every fixture logs its requests
    /// to `dir/as.jsonl`.
    fn start(kind: Kind, dir: &Path, args: &[&str]) -> Option<Self> {
        let server = if let Kind::OidcProvider = kind {
            let log = dir.join("as.jsonl");
            let log = log.to_str().expect("a UTF-8 path");
            let mut all = vec!["--approve-at-once", "--log", log];
            all.extend_from_slice(args);
            Server::Oidc(OidcProvider::start(dir, &all))
        } else {
            let python = kind.python()?;
            let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            let (child, port) = spawn(kind, &python, dir, 0, 1, &args);
            Server::Python {
                python,
                args,
                child,
                port,
                starts: 1,
            }
        };
        Some(Self {
            kind,
            dir: dir.to_owned(),
            server,
        })
    }

    /// The server forgets every registered client, with its tokens: a
    /// Python fixture is stopped and started again on the same port (it
    /// has forgotten every client, code and token); oidc-provider deletes
    /// them from its storage (`/control/forget`).
    fn forget_clients(&mut self) {
        let kind = self.kind;
        match &mut self.server {
            Server::Python {
                python,
                args,
                child,
                port,
                starts,
            } => {
                let _ = child.kill();
                let _ = child.wait();
                *starts += 1;
                let (new, new_port) = respawn(kind, python, &self.dir, *port, starts, args);
                assert_eq!(new_port, *port);
                *child = new;
            }
            Server::Oidc(provider) => provider.control("forget"),
        }
    }

    fn url(&self) -> String {
        match &self.server {
            Server::Python { port, .. } => format!("http://127.0.0.1:{port}/mcp"),
            Server::Oidc(provider) => provider.mcp_url(),
        }
    }

    /// Every request logged so far, oldest first.
    fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.join("as.jsonl")).unwrap_or_default()
    }

    fn log(&self) -> Vec<Value> {
        self.log_text()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON log line"))
            .collect()
    }

    /// The log's token requests of `grant` from entry `since` on.
    fn grants(&self, since: usize, grant: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .skip(since)
            .filter(|e| e["endpoint"] == "token" && e["grant_type"] == grant)
            .collect()
    }

    /// The log's requests to `endpoint` from entry `since` on.
    fn requests(&self, since: usize, endpoint: &str) -> Vec<Value> {
        self.log()
            .into_iter()
            .skip(since)
            .filter(|e| e["endpoint"] == endpoint)
            .collect()
    }

    /// POSTs a form to the authorization server's `endpoint` (`token` or
    /// `revoke`, where this server has it); the status and the body.
    fn post(&self, endpoint: &str, form: &str) -> (u16, String) {
        let (port, path) = match (&self.server, endpoint) {
            (Server::Python { port, .. }, "token") => (*port, "/token"),
            (Server::Python { port, .. }, "revoke") => (*port, "/revoke"),
            (Server::Oidc(provider), "token") => (provider.as_port(), "/token"),
            (Server::Oidc(provider), "revoke") => (provider.as_port(), "/token/revocation"),
            (_, other) => panic!("no endpoint {other}"),
        };
        let (status, _, body) = http_exchange(port, "POST", path, form);
        (status, body)
    }

    /// Drops every access token at the server (rho's stored one is then
    /// refused with 401 though its clock says it lives).
    fn expire_access_tokens(&self) {
        match &self.server {
            Server::Python { port, .. } => {
                let (status, _, body) = http_exchange(*port, "POST", "/control/expire", "");
                assert_eq!(status, 204, "{body}");
            }
            Server::Oidc(provider) => provider.control("expire"),
        }
    }

    /// What the server wrote on stderr, every start.
    fn stderr(&self) -> String {
        match &self.server {
            Server::Python { starts, .. } => (1..=*starts)
                .map(|n| {
                    std::fs::read_to_string(self.dir.join(format!("as-stderr-{n}.txt")))
                        .unwrap_or_default()
                })
                .collect(),
            Server::Oidc(provider) => provider.stderr(),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Server::Python { child, .. } = &mut self.server {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// GETs a loopback `http://127.0.0.1:PORT/...` URL, as a browser would
/// (without following a redirect).
fn get(url: &str) -> (u16, Option<String>, String) {
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("a loopback URL: {url}"));
    let (port, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let port = port.parse().expect("a port");
    http_exchange(
        port,
        "GET",
        if target.is_empty() { "/" } else { target },
        "",
    )
}

/// Starts the Python server of `kind` on `port` (0: any), logging to
/// `dir/as.jsonl`, with `args`; the child and its port.
fn spawn(
    kind: Kind,
    python: &Path,
    dir: &Path,
    port: u16,
    start: u32,
    args: &[String],
) -> (Child, u16) {
    let (mut child, _) = start_fixture(kind, python, dir, port, start, args);
    let port = listening_port(&mut child, kind.name());
    (child, port)
}

/// Starts the fixture's process, its stderr in `as-stderr-<start>.txt`
/// (returned).
fn start_fixture(
    kind: Kind,
    python: &Path,
    dir: &Path,
    port: u16,
    start: u32,
    args: &[String],
) -> (Child, PathBuf) {
    let (_, script) = kind.parts();
    let stderr_path = dir.join(format!("as-stderr-{start}.txt"));
    let stderr = File::create(&stderr_path).expect("stderr file");
    let child = Command::new(python)
        .arg(tests_dir().join("interop/python/oauth").join(script))
        .arg("--port")
        .arg(port.to_string())
        .arg("--log")
        .arg(dir.join("as.jsonl"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("start the OAuth fixture");
    (child, stderr_path)
}

/// [`spawn`] on the port the fixture had: until that port is free again.
/// The kernel picked it from the ephemeral range, so between the old
/// fixture's exit and the new one's bind an outgoing connection of
/// another test may hold it as its local port for a moment; the new
/// fixture then fails to bind and exits ("Address already in use" in its
/// stderr), and is started again. Any other failure fails the test.
fn respawn(
    kind: Kind,
    python: &Path,
    dir: &Path,
    port: u16,
    starts: &mut u32,
    args: &[String],
) -> (Child, u16) {
    for _ in 0..100 {
        let (mut child, stderr) = start_fixture(kind, python, dir, port, *starts, args);
        match rho_tests::try_listening_port(&mut child, kind.name()) {
            Ok(port) => return (child, port),
            Err(rho_tests::ListenError::Exited(why)) => {
                let _ = child.wait();
                let said = std::fs::read_to_string(&stderr).unwrap_or_default();
                assert!(
                    said.contains("Address already in use"),
                    "{why}; its stderr:\n{said}"
                );
                *starts += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(why) => panic!("{why}"),
        }
    }
    panic!("port {port} stayed in use for 10 s after the fixture that had it exited");
}

/// A scene with the fixture of `kind` configured as server `fx` (OAuth
/// on), started with `args`, or `None` when the fixture is not installed.
fn setup(kind: Kind, name: &str, rt: Runtime, args: &[&str]) -> Option<(Scene, Fixture)> {
    let s = Scene::new(RHO, &format!("oauth-real-{}-{name}", kind.name()), rt);
    let fixture = Fixture::start(kind, s.dir(), args)?;
    let s = s.with_config(&format!(
        "[mcp.servers.fx]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\n[mcp.servers.fx.oauth]\n",
        toml_str(&fixture.url())
    ));
    Some((s, fixture))
}

fn store_path(s: &Scene) -> PathBuf {
    s.home().join(".rho/mcp-oauth.json")
}

/// The one stored login.
fn stored(s: &Scene) -> Value {
    let text = std::fs::read_to_string(store_path(s)).expect("the store");
    let doc: Value = serde_json::from_str(&text).expect("the store is JSON");
    let entries = doc["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 1, "{text}");
    entries[0].clone()
}

/// Makes the stored access token due by rho's clock (the server still
/// honours it): the next connect refreshes first.
fn expire_stored_token(s: &Scene) {
    let path = store_path(s);
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the store")).expect("JSON");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    for entry in doc["entries"].as_array_mut().expect("entries") {
        entry["tokens"]["expires_at"] = Value::from(now - 10);
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&doc).expect("JSON")).expect("write the store");
}

/// The stored login's client, as form fields: `client_id`, and
/// `client_secret` when it has one (a public client, such as rho
/// registers with oidc-provider, sends none: an empty one would be
/// another authentication method).
fn client_form(login: &Value) -> String {
    let mut form = format!(
        "client_id={}",
        login["client_id"].as_str().expect("a client")
    );
    if let Some(secret) = login["client_secret"].as_str() {
        form.push_str(&format!("&client_secret={secret}"));
    }
    form
}

/// Context for an assertion message: the run and the server's side.
fn both(run: &Run, fixture: &Fixture) -> String {
    let log: Vec<String> = fixture.log().iter().map(Value::to_string).collect();
    format!(
        "{run}\n--- {} requests ---\n{}\n--- {} stderr ---\n{}",
        fixture.kind.name(),
        log.join("\n"),
        fixture.kind.name(),
        fixture.stderr()
    )
}

/// A headless login, with the log's checks: one registration, one
/// authorization, one code exchange carrying `client_id` in the body.
fn login(s: &Scene, fixture: &Fixture) {
    let since = fixture.log().len();
    let run = s.rho(&["mcp", "login", "fx", "--headless"]);
    assert_eq!(run.code, Some(0), "{}", both(&run, fixture));
    assert!(
        run.stdout
            .contains("logged in to server `fx` with http://127.0.0.1:"),
        "{}",
        both(&run, fixture)
    );
    let codes = fixture.grants(since, "authorization_code");
    assert_eq!(codes.len(), 1, "{}", both(&run, fixture));
    assert_eq!(codes[0]["status"], 200, "{}", both(&run, fixture));
    // Where the SDK's ClientAuthenticator reads it (issue 36's first bullet).
    assert!(
        codes[0]["client_id_in"]
            .as_str()
            .is_some_and(|w| w.contains("body")),
        "{}",
        both(&run, fixture)
    );
}

/// `rho mcp call fx echo message=<m>` succeeds with the echo.
fn call(s: &Scene, fixture: &Fixture, message: &str) -> Run {
    let run = s.rho(&["mcp", "call", "fx", "echo", &format!("message={message}")]);
    assert_eq!(run.code, Some(0), "{}", both(&run, fixture));
    assert!(
        run.stdout.contains(&format!("Echo: {message}")),
        "{}",
        both(&run, fixture)
    );
    run
}

fn for_both(kind: Kind, body: fn(Kind, Runtime)) {
    for rt in [Runtime::Smol, Runtime::Blocking] {
        body(kind, rt);
    }
}

/// Login, call, and a silent refresh twice: when rho's clock says the
/// stored token is due, and when the server refuses one it dropped.
fn login_call_and_silent_refresh(kind: Kind, rt: Runtime) {
    let Some((s, fixture)) = setup(kind, "login", rt, &[]) else {
        return;
    };
    login(&s, &fixture);
    assert_eq!(fixture.requests(0, "register").len(), 1);
    let first = stored(&s);
    let since = fixture.log().len();
    call(&s, &fixture, "hi");
    assert!(
        fixture.requests(since, "token").is_empty(),
        "a live token is used as is: {:?}",
        fixture.log()
    );

    // Due by rho's clock: refreshed before the call, once, client_id in
    // the body, and the rotated refresh token stored.
    expire_stored_token(&s);
    let since = fixture.log().len();
    let run = call(&s, &fixture, "refreshed");
    let refreshes = fixture.grants(since, "refresh_token");
    assert_eq!(refreshes.len(), 1, "{}", both(&run, &fixture));
    assert_eq!(refreshes[0]["status"], 200, "{}", both(&run, &fixture));
    assert!(
        refreshes[0]["client_id_in"]
            .as_str()
            .is_some_and(|w| w.contains("body")),
        "{}",
        both(&run, &fixture)
    );
    let second = stored(&s);
    for token in ["access_token", "refresh_token"] {
        assert_ne!(
            first["tokens"][token], second["tokens"][token],
            "{token} rotated"
        );
        let value = second["tokens"][token].as_str().expect("a token");
        assert!(
            !run.all().contains(value),
            "no token printed: {}",
            both(&run, &fixture)
        );
    }

    // Dropped at the server: the 401 is answered with one refresh.
    fixture.expire_access_tokens();
    let since = fixture.log().len();
    let run = call(&s, &fixture, "again");
    let refreshes = fixture.grants(since, "refresh_token");
    assert_eq!(refreshes.len(), 1, "{}", both(&run, &fixture));
    assert_eq!(refreshes[0]["status"], 200, "{}", both(&run, &fixture));
    assert_eq!(
        fixture.requests(0, "register").len(),
        1,
        "one registration in all: {}",
        both(&run, &fixture)
    );
}

/// Two rho processes meet one expired login: exactly one refresh at the
/// server (the other process reads the rotated token under the store's
/// lock), both calls succeed, and the token stored is the live one. The
/// server's reuse detection is real: the refresh token rotated away, sent
/// again, revokes the login.
fn two_processes_refresh_once(kind: Kind, rt: Runtime) {
    // Each refresh takes a second at the server: the second process
    // surely comes while the first one's exchange is under way.
    let Some((s, fixture)) = setup(kind, "concurrent", rt, &["--refresh-delay", "1"]) else {
        return;
    };
    login(&s, &fixture);
    expire_stored_token(&s);
    let before = stored(&s);
    let since = fixture.log().len();
    let runs = two_concurrent_calls(&s, &fixture, "concurrent");
    let refreshes = fixture.grants(since, "refresh_token");
    assert_eq!(
        refreshes.len(),
        1,
        "one refresh for two processes: {}\n{}",
        both(&runs[0], &fixture),
        runs[1]
    );
    assert_eq!(refreshes[0]["status"], 200, "{}", both(&runs[0], &fixture));
    let after = stored(&s);
    assert_ne!(
        before["tokens"]["refresh_token"],
        after["tokens"]["refresh_token"]
    );

    // The stored refresh token is the live one: the next due refresh works.
    expire_stored_token(&s);
    let since = fixture.log().len();
    let run = call(&s, &fixture, "three");
    let refreshes = fixture.grants(since, "refresh_token");
    assert_eq!(
        (
            refreshes.len(),
            refreshes.first().and_then(|r| r["status"].as_u64())
        ),
        (1, Some(200)),
        "{}",
        both(&run, &fixture)
    );

    // Reuse detection is on: the first refresh token, rotated away twice,
    // is refused, and its login goes with it.
    let form = format!(
        "grant_type=refresh_token&refresh_token={}&{}",
        before["tokens"]["refresh_token"].as_str().expect("token"),
        client_form(&before),
    );
    let (status, body) = fixture.post("token", &form);
    assert!(
        (400..500).contains(&status) && body.contains("invalid_grant"),
        "{status} {body}"
    );
    assert_eq!(
        fixture.log().last().map(|e| e["reuse"].clone()),
        Some(Value::Bool(true))
    );
    expire_stored_token(&s);
    let run = s.rho(&["mcp", "call", "fx", "echo", "message=revoked"]);
    assert_eq!(run.code, Some(1), "{}", both(&run, &fixture));
    assert!(
        run.stderr.contains("invalid_grant") && run.stderr.contains("rho mcp login fx"),
        "{}",
        both(&run, &fixture)
    );
}

/// Two `rho mcp call fx echo` processes started at once; both must
/// succeed with their own echo.
fn two_concurrent_calls(s: &Scene, fixture: &Fixture, label: &str) -> Vec<Run> {
    let children: Vec<Child> = ["one", "two"]
        .iter()
        .map(|m| {
            s.command()
                .args(["mcp", "call", "fx", "echo", &format!("message={m}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run rho")
        })
        .collect();
    let runs: Vec<Run> = children
        .into_iter()
        .zip(["one", "two"])
        .map(|(child, m)| {
            Run::of(
                format!("rho mcp call fx echo message={m} ({label})"),
                child.wait_with_output().expect("rho ends"),
            )
        })
        .collect();
    for (run, m) in runs.iter().zip(["one", "two"]) {
        assert_eq!(run.code, Some(0), "{}", both(run, fixture));
        assert!(
            run.stdout.contains(&format!("Echo: {m}")),
            "{}",
            both(run, fixture)
        );
    }
    runs
}

/// The server drops its access tokens while rho's stored one still looks
/// alive, and two rho processes connect at once: each is refused 401 and
/// renews mid-connect through its authorizer. The renewal runs under the
/// store's lock after reading the login again, so the server sees one
/// refresh, and the second process takes the token the first stored.
fn two_processes_renew_a_refused_token_once(kind: Kind, rt: Runtime) {
    let Some((s, fixture)) = setup(kind, "renew", rt, &["--refresh-delay", "1"]) else {
        return;
    };
    login(&s, &fixture);
    fixture.expire_access_tokens();
    let since = fixture.log().len();
    let runs = two_concurrent_calls(&s, &fixture, "concurrent, refused");
    let refreshes = fixture.grants(since, "refresh_token");
    assert_eq!(
        refreshes.len(),
        1,
        "one refresh for two processes: {}\n{}",
        both(&runs[0], &fixture),
        runs[1]
    );
}

/// The server forgets every registration (a Python fixture restarts;
/// oidc-provider deletes them, with their tokens). The next call cannot
/// refresh (the client is unknown) and, with no one to log in, says to
/// run `rho mcp login`; that login registers one new client and
/// succeeds, and calls work again. A login run straight after the
/// server forgot does the same.
fn a_forgotten_client_is_registered_again_once(kind: Kind, rt: Runtime) {
    let Some((s, mut fixture)) = setup(kind, "forgotten", rt, &[]) else {
        return;
    };
    login(&s, &fixture);
    let old_client = stored(&s)["client_id"].clone();

    // Forgotten, then a call.
    fixture.forget_clients();
    let since = fixture.log().len();
    let run = s.rho(&["mcp", "call", "fx", "echo", "message=lost"]);
    assert_eq!(run.code, Some(1), "{}", both(&run, &fixture));
    assert!(
        run.stderr.contains("rho mcp login fx"),
        "{}",
        both(&run, &fixture)
    );
    assert!(
        fixture.requests(since, "register").is_empty(),
        "no registration without a login: {}",
        both(&run, &fixture)
    );
    let since = fixture.log().len();
    login(&s, &fixture);
    let registered = fixture.requests(since, "register");
    assert_eq!(
        registered.len(),
        1,
        "registered again, once: {:?}",
        fixture.log()
    );
    let new_client = stored(&s)["client_id"].clone();
    assert_ne!(new_client, old_client);
    assert_eq!(registered[0]["client_id"], new_client);
    call(&s, &fixture, "found");

    // Forgotten, then straight to a login.
    fixture.forget_clients();
    let since = fixture.log().len();
    login(&s, &fixture);
    assert_eq!(
        fixture.requests(since, "register").len(),
        1,
        "registered again, once: {:?}",
        fixture.log()
    );
    assert_ne!(stored(&s)["client_id"], new_client);
    call(&s, &fixture, "found again");
}

/// `rho mcp login fx` for a person: rho prints the authorization URL
/// (no terminal, so it opens no browser) and waits on its loopback
/// listener; the test is the browser, which follows the authorization
/// server's redirect to that listener. `Err` with what the authorization
/// server answered when it did not redirect (a person would be looking at
/// an error page, and rho waiting).
fn browser_login(s: &Scene) -> Result<Run, String> {
    use std::io::BufRead as _;
    let mut child = s
        .command()
        .args(["mcp", "login", "fx"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rho mcp login");
    let stderr = child.stderr.take().expect("stderr");
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if line.trim().starts_with("http://") {
                let _ = url_tx.send(line.trim().to_owned());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let stop = |mut child: Child| {
        let _ = child.kill();
        let _ = child.wait();
    };
    // rho asks the authorization endpoint itself first: these servers
    // approve at once, so the login may end without a browser (the URL is
    // printed only when a person is needed).
    let started = std::time::Instant::now();
    let url = loop {
        if let Ok(url) = url_rx.recv_timeout(std::time::Duration::from_millis(100)) {
            break url;
        }
        if let Ok(Some(_)) = child.try_wait() {
            let output = child.wait_with_output().expect("rho ends");
            let mut run = Run::of("rho mcp login fx (approved at once)".to_owned(), output);
            run.stderr = reader.join().unwrap_or_default();
            return Ok(run);
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            stop(child);
            return Err(format!(
                "rho printed no authorization URL and did not finish:\n{}",
                reader.join().unwrap_or_default()
            ));
        }
    };
    let (status, location, body) = get(&url);
    let callback =
        location.filter(|l| l.starts_with("http://127.0.0.1:") && l.contains("/callback?"));
    let Some(callback) = callback else {
        stop(child);
        return Err(format!(
            "the authorization endpoint answered HTTP {status} without a redirect to rho's callback: {body}\n(URL {url})"
        ));
    };
    let (status, _, body) = get(&callback);
    let output = child.wait_with_output().expect("rho ends");
    let mut run = Run::of("rho mcp login fx (a browser)".to_owned(), output);
    run.stderr = reader.join().unwrap_or_default();
    if status != 200 {
        return Err(format!(
            "the callback answered HTTP {status}: {body}\n{run}"
        ));
    }
    Ok(run)
}

/// A person's login: through a browser, on rho's loopback listener.
fn a_login_through_a_browser_works(kind: Kind, rt: Runtime) {
    let Some((s, fixture)) = setup(kind, "browser", rt, &[]) else {
        return;
    };
    let run = browser_login(&s).unwrap_or_else(|e| panic!("{e}\n{}", fixture.log_text()));
    assert_eq!(run.code, Some(0), "{}", both(&run, &fixture));
    assert!(
        run.stdout
            .contains("logged in to server `fx` with http://127.0.0.1:"),
        "{}",
        both(&run, &fixture)
    );
    call(&s, &fixture, "browser");
}

/// A client registered out of band with one exact redirect URI: with
/// `oauth.redirect_port` the login sends (and listens on) that port, and
/// the server, which matches redirect URIs exactly, lets it through.
fn a_configured_callback_port_is_the_redirect_uri(kind: Kind, rt: Runtime) {
    let Some((s, fixture)) = setup(kind, "callback-port", rt, &[]) else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let s = s.with_config(&format!(
        "[mcp.servers.fx]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\n[mcp.servers.fx.oauth]\nredirect_port = {port}\n",
        toml_str(&fixture.url())
    ));
    let run = browser_login(&s).unwrap_or_else(|e| panic!("{e}\n{}", fixture.log_text()));
    assert_eq!(run.code, Some(0), "{}", both(&run, &fixture));
    let asked = fixture.requests(0, "authorize");
    assert!(!asked.is_empty(), "{}", both(&run, &fixture));
    for request in asked {
        assert_eq!(
            request["redirect_uri"],
            format!("http://127.0.0.1:{port}/callback"),
            "{}",
            both(&run, &fixture)
        );
    }
    call(&s, &fixture, "callback-port");
}

/// A person logs in through a browser, and later again (the refresh
/// token died, say): rho's listener now has another loopback port than
/// the one the stored client was registered with. These servers match
/// redirect URIs exactly (no port leeway for loopback, which RFC 8252
/// §7.3 asks for), so the second login must not offer them a redirect
/// URI the client was not registered with.
fn a_second_login_through_a_browser_works(kind: Kind, rt: Runtime) {
    let Some((s, fixture)) = setup(kind, "browser-again", rt, &[]) else {
        return;
    };
    for _ in 0..2 {
        let since = fixture.log().len();
        let run = browser_login(&s).unwrap_or_else(|e| panic!("{e}\n{}", fixture.log_text()));
        assert_eq!(run.code, Some(0), "{}", both(&run, &fixture));
        assert_eq!(
            fixture.grants(since, "authorization_code").len(),
            1,
            "{}",
            both(&run, &fixture)
        );
        call(&s, &fixture, "browser");
    }
}

/// The server forgot the client, and a person logs in through a browser:
/// the client is registered again before the person is sent to the
/// authorization endpoint, not after an error page.
fn a_forgotten_client_is_registered_again_before_the_browser_opens(kind: Kind, rt: Runtime) {
    let Some((s, mut fixture)) = setup(kind, "forgotten-browser", rt, &[]) else {
        return;
    };
    login(&s, &fixture);
    let old_client = stored(&s)["client_id"].clone();
    fixture.forget_clients();
    let since = fixture.log().len();
    let run = browser_login(&s).unwrap_or_else(|e| panic!("{e}\n{}", fixture.log_text()));
    assert_eq!(run.code, Some(0), "{}", both(&run, &fixture));
    assert_eq!(
        fixture.requests(since, "register").len(),
        1,
        "registered again, once: {}",
        both(&run, &fixture)
    );
    assert_ne!(stored(&s)["client_id"], old_client);
    call(&s, &fixture, "browser");
}

/// The login is revoked at the server: the call's refresh is refused
/// (`invalid_grant`), and the call ends saying to log in, having sent
/// that refresh once (one authorization per connect).
fn a_refused_refresh_is_sent_once_per_call(kind: Kind, rt: Runtime) {
    let Some((s, fixture)) = setup(kind, "refused", rt, &[]) else {
        return;
    };
    login(&s, &fixture);
    let login = stored(&s);
    let form = format!(
        "token={}&token_type_hint=refresh_token&{}",
        login["tokens"]["refresh_token"].as_str().expect("token"),
        client_form(&login),
    );
    let (status, body) = fixture.post("revoke", &form);
    assert_eq!(status, 200, "{body}");
    let since = fixture.log().len();
    let run = s.rho(&["mcp", "call", "fx", "echo", "message=revoked"]);
    assert_eq!(run.code, Some(1), "{}", both(&run, &fixture));
    assert!(
        run.stderr.contains("invalid_grant") && run.stderr.contains("rho mcp login fx"),
        "{}",
        both(&run, &fixture)
    );
    assert_eq!(
        fixture.grants(since, "refresh_token").len(),
        1,
        "one refresh per connect: {}",
        both(&run, &fixture)
    );
}

#[test]
fn python_sdk_headless_login_call_and_silent_refresh() {
    for_both(Kind::PythonSdk, login_call_and_silent_refresh);
}

#[test]
fn fastmcp_headless_login_call_and_silent_refresh() {
    for_both(Kind::FastMcp, login_call_and_silent_refresh);
}

#[test]
fn python_sdk_two_processes_refresh_a_rotating_token_once() {
    for_both(Kind::PythonSdk, two_processes_refresh_once);
}

#[test]
fn fastmcp_two_processes_refresh_a_rotating_token_once() {
    for_both(Kind::FastMcp, two_processes_refresh_once);
}

#[test]
fn python_sdk_two_processes_renew_a_refused_token_once() {
    for_both(Kind::PythonSdk, two_processes_renew_a_refused_token_once);
}

#[test]
fn fastmcp_two_processes_renew_a_refused_token_once() {
    for_both(Kind::FastMcp, two_processes_renew_a_refused_token_once);
}

#[test]
fn python_sdk_forgotten_client_is_registered_again_once() {
    for_both(Kind::PythonSdk, a_forgotten_client_is_registered_again_once);
}

#[test]
fn fastmcp_forgotten_client_is_registered_again_once() {
    for_both(Kind::FastMcp, a_forgotten_client_is_registered_again_once);
}

#[test]
fn python_sdk_refused_refresh_is_sent_once_per_call() {
    for_both(Kind::PythonSdk, a_refused_refresh_is_sent_once_per_call);
}

#[test]
fn fastmcp_refused_refresh_is_sent_once_per_call() {
    for_both(Kind::FastMcp, a_refused_refresh_is_sent_once_per_call);
}

#[test]
fn python_sdk_login_through_a_browser() {
    for_both(Kind::PythonSdk, a_login_through_a_browser_works);
}

#[test]
fn fastmcp_login_through_a_browser() {
    for_both(Kind::FastMcp, a_login_through_a_browser_works);
}

#[test]
fn python_sdk_configured_callback_port_is_the_redirect_uri() {
    for_both(
        Kind::PythonSdk,
        a_configured_callback_port_is_the_redirect_uri,
    );
}

#[test]
fn python_sdk_second_login_through_a_browser_works() {
    for_both(Kind::PythonSdk, a_second_login_through_a_browser_works);
}

#[test]
fn fastmcp_second_login_through_a_browser_works() {
    for_both(Kind::FastMcp, a_second_login_through_a_browser_works);
}

#[test]
fn python_sdk_forgotten_client_is_registered_again_before_the_browser_opens() {
    for_both(
        Kind::PythonSdk,
        a_forgotten_client_is_registered_again_before_the_browser_opens,
    );
}

#[test]
fn fastmcp_forgotten_client_is_registered_again_before_the_browser_opens() {
    for_both(
        Kind::FastMcp,
        a_forgotten_client_is_registered_again_before_the_browser_opens,
    );
}

#[test]
fn oidc_provider_headless_login_call_and_silent_refresh() {
    for_both(Kind::OidcProvider, login_call_and_silent_refresh);
}

#[test]
fn oidc_provider_two_processes_refresh_a_rotating_token_once() {
    for_both(Kind::OidcProvider, two_processes_refresh_once);
}

#[test]
fn oidc_provider_two_processes_renew_a_refused_token_once() {
    for_both(Kind::OidcProvider, two_processes_renew_a_refused_token_once);
}

#[test]
fn oidc_provider_forgotten_client_is_registered_again_once() {
    for_both(
        Kind::OidcProvider,
        a_forgotten_client_is_registered_again_once,
    );
}

#[test]
fn oidc_provider_refused_refresh_is_sent_once_per_call() {
    for_both(Kind::OidcProvider, a_refused_refresh_is_sent_once_per_call);
}
