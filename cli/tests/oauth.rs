//! `rho mcp login` end to end against a real OAuth-protected MCP server
//! with its own authorization server (tests/servers/fixtures/oauth-server.js,
//! on an ephemeral loopback port): the headless login, the stored token on
//! connect, a silent refresh, a revoked login, and connecting without one;
//! mid-session, a token that expires is refreshed and the call resent, and
//! a tool that needs a wider scope says how to get it, and the `rho mcp
//! login` it suggests asks for that scope; a server that moves to another
//! authorization server gets a new client there and the old login is
//! forgotten; a token refused at `initialize` takes the same
//! re-authorization path as one refused later. (The headless step-up and
//! the headless login at a moved server, which only the conformance
//! client makes, are in tests/tests/conformance_client.rs.) And
//! interop with a real authorization server: oidc-provider (OpenID
//! discovery only, dynamic registration, PKCE, resource indicators,
//! `iss`) in front of the official TypeScript SDK's server (which refuses
//! a token the provider did not mint), logged in through a browser that
//! follows its login and consent redirects. (Its headless login, rotation
//! with reuse detection across two rho processes, and a forgotten client
//! are in tests/oauth_real.rs, beside the other real authorization
//! servers.)

use std::path::PathBuf;
use std::process::{Command, Stdio};

use rho_tests::CliRuntime as Runtime;
use rho_tests::oauth_server::OAuthServer;
use rho_tests::oidc::OidcProvider;
use rho_tests::scene::{Scene, arg};
use rho_tests::{tests_dir, toml_str};
use serde_json::Value;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// A scene with the OAuth fixture (`ttl`: its tokens' lifetime in
/// seconds) and a config of it as server `fx`, which the runs name with
/// `--config`.
fn setup(name: &str, rt: Runtime, ttl: u32) -> (Scene, PathBuf, OAuthServer) {
    setup_with(name, rt, ttl, &[])
}

fn setup_with(name: &str, rt: Runtime, ttl: u32, modes: &[&str]) -> (Scene, PathBuf, OAuthServer) {
    let s = Scene::new(RHO, &format!("oauth-{name}"), rt);
    let server = OAuthServer::start_with(s.dir(), ttl, modes);
    let config = s.write(
        "config.toml",
        &format!(
            "[mcp.servers.fx]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\n[mcp.servers.fx.oauth]\n",
            toml_str(&server.url())
        ),
    );
    (s, config, server)
}

fn for_both(body: fn(Runtime)) {
    for runtime in [Runtime::Smol, Runtime::Blocking] {
        body(runtime);
    }
}

#[test]
fn connecting_without_a_login_fails_saying_to_run_login_and_opens_no_browser() {
    for_both(|rt| {
        let (s, config, _server) = setup("no-login", rt, 3600);
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "list", "--connect", "--json"]);
        assert_eq!(run.code, Some(1), "{run}");
        let doc: Value = serde_json::from_str(&run.stdout).expect("json");
        let server = &doc["servers"][0];
        assert_eq!(server["status"], "failed", "{run}");
        assert!(
            server["error"]
                .as_str()
                .is_some_and(|e| e.contains("rho mcp login fx")),
            "{run}"
        );
        assert_eq!(server["auth"]["state"], "needs_login", "{run}");
    });
}

#[test]
fn a_headless_login_is_stored_used_refreshed_silently_and_a_revoked_one_asks_again() {
    for_both(|rt| {
        // Tokens live 30 s: under rho's one-minute margin, so every
        // connection refreshes first.
        let (s, config, server) = setup("login", rt, 30);
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        assert!(run.stdout.contains("logged in to server `fx`"), "{run}");
        let store = s.home().join(".rho/mcp-oauth.json");
        let stored = std::fs::read_to_string(&store).expect("stored");
        assert!(stored.contains("\"access_token\": \"at-1-"), "{stored}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&store)
                .expect("file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // The call refreshes (token #2) without anyone, and stores the
        // rotated refresh token.
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(0), "{run}");
        assert_eq!(run.stdout, "token #2\n", "{run}");
        let stored = std::fs::read_to_string(&store).expect("stored");
        assert!(stored.contains("\"refresh_token\": \"rt-2-"), "{stored}");
        assert!(
            !run.stdout.contains("at-2") && !run.stderr.contains("at-2"),
            "{run}"
        );
        // Revoked at the server: nothing refreshes, and rho says what to do.
        server.control("revoke");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(1), "{run}");
        assert!(run.stderr.contains("rho mcp login fx"), "{run}");
    });
}

#[test]
fn client_credentials_get_a_token_on_connect_without_a_person() {
    for_both(|rt| {
        let (s, config, _server) = setup("m2m", rt, 3600);
        let text = std::fs::read_to_string(&config).expect("config").replace(
            "[mcp.servers.fx.oauth]\n",
            "[mcp.servers.fx.oauth]\ngrant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_from_env = \"M2M_SECRET\"\n",
        );
        std::fs::write(&config, text).expect("config");
        let cfg = config.to_str().expect("utf-8");
        let env = [("M2M_SECRET", "m2m-secret")];
        let run = s.rho_env(&["--config", cfg, "mcp", "call", "fx", "whoami"], &env);
        assert_eq!(run.code, Some(0), "{run}");
        assert_eq!(run.stdout, "token #1\n", "{run}");
        // The stored token is reused while it lives.
        let run = s.rho_env(
            &["--config", cfg, "mcp", "list", "--connect", "--json"],
            &env,
        );
        assert_eq!(run.code, Some(0), "{run}");
        let doc: Value = serde_json::from_str(&run.stdout).expect("json");
        assert_eq!(
            doc["servers"][0]["auth"]["state"], "client_credentials",
            "{run}"
        );
        assert!(
            !run.stdout.contains("m2m-secret") && !run.stderr.contains("m2m-secret"),
            "{run}"
        );
        // Without the secret's variable the reason names it.
        let fresh = s.home().join("fresh");
        std::fs::create_dir_all(&fresh).expect("home");
        let run = s.rho_env(
            &["--config", cfg, "mcp", "call", "fx", "whoami"],
            &[("HOME", arg(&fresh))],
        );
        assert_eq!(run.code, Some(1), "{run}");
        assert!(run.stderr.contains("M2M_SECRET"), "{run}");
    });
}

#[test]
fn a_token_that_expires_mid_session_is_refreshed_and_the_call_resent() {
    for_both(|rt| {
        // Every access token stops working once tools/list is answered:
        // the call after it meets a 401 in the same session.
        let (s, config, _server) = setup_with("expire", rt, 3600, &["--expire-on", "tools/list"]);
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(0), "{run}");
        assert_eq!(run.stdout, "token #2\n", "refreshed mid-session: {run}");
        let stored = std::fs::read_to_string(s.home().join(".rho/mcp-oauth.json")).expect("stored");
        assert!(stored.contains("\"refresh_token\": \"rt-2-"), "{stored}");
        assert!(!run.stderr.contains("at-2"), "{run}");
    });
}

#[test]
fn a_login_revoked_mid_session_fails_the_call_saying_to_log_in_again() {
    for_both(|rt| {
        let (s, config, _server) = setup_with("revoke", rt, 3600, &["--revoke-on", "tools/list"]);
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(1), "{run}");
        assert!(
            run.stderr.contains("HTTP 401")
                && run.stderr.contains("refreshing the token failed")
                && run.stderr.contains("rho mcp login fx"),
            "{run}"
        );
    });
}

#[test]
fn a_tool_that_needs_a_wider_scope_says_how_to_get_it_when_no_one_can_log_in() {
    for_both(|rt| {
        let (s, config, _server) = setup_with("step-up-none", rt, 3600, &["--step-up", "admin"]);
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        // The narrow tool works with the narrow scope.
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.stdout, "token #1 (mcp offline_access)\n", "{run}");
        // No terminal: no login mid-call, and the reason says what to do.
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "admin"]);
        assert_eq!(run.code, Some(1), "{run}");
        assert!(
            run.stderr.contains("HTTP 403")
                && run.stderr.contains("\"mcp mcp:admin\"")
                && run.stderr.contains("rho mcp login fx"),
            "{run}"
        );
        let stored = std::fs::read_to_string(s.home().join(".rho/mcp-oauth.json")).expect("stored");
        assert!(
            stored.contains("\"access_token\": \"at-1-")
                && stored.contains("\"wanted_scope\": \"mcp mcp:admin\""),
            "kept, with the scope wanted: {stored}"
        );
        // The login the reason suggests asks for the wanted scope too, and
        // keeps what was held.
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "admin"]);
        assert_eq!(run.code, Some(0), "{run}");
        assert_eq!(
            run.stdout, "token #2 (mcp offline_access mcp:admin)\n",
            "{run}"
        );
        let stored = std::fs::read_to_string(s.home().join(".rho/mcp-oauth.json")).expect("stored");
        assert!(!stored.contains("wanted_scope"), "granted now: {stored}");
    });
}

#[test]
fn a_server_moved_to_another_authorization_server_forgets_the_old_login() {
    for_both(|rt| {
        // After tools/list the resource trusts only /auth2: its PRM names
        // it and tokens of /auth are refused.
        let (s, config, server) = setup_with("migrate", rt, 3600, &["--migrate-on", "tools/list"]);
        let cfg = config.to_str().expect("utf-8");
        let store = s.home().join(".rho/mcp-oauth.json");
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        let old_issuer = format!("http://127.0.0.1:{}/auth", server.port);
        assert!(run.stdout.contains(&format!("with {old_issuer};")), "{run}");
        // No one to log in: the old login (tokens and client) is dropped,
        // the new server is not registered with, and the reason says so.
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(1), "{run}");
        assert!(
            run.stderr
                .contains(&format!("moved from {old_issuer} to {old_issuer}2"))
                && run.stderr.contains("rho mcp login fx"),
            "{run}"
        );
        let stored = std::fs::read_to_string(&store).expect("stored");
        assert!(
            !stored.contains("at-1-")
                && !stored.contains("client-1")
                && !stored.contains("client2"),
            "{stored}"
        );
        // A new login registers at the new server, and calls work again.
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(0), "{run}");
        assert_eq!(run.stdout, "token #2\n", "{run}");
        let stored = std::fs::read_to_string(&store).expect("stored");
        assert!(
            stored.contains("\"client_id\": \"client2-")
                && stored.contains(&format!("\"issuer\": \"{old_issuer}2\"")),
            "{stored}"
        );
    });
}

#[test]
fn a_stored_token_refused_at_initialize_is_refreshed_there_like_one_refused_later() {
    for_both(|rt| {
        let (s, config, server) = setup("init-401", rt, 3600);
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "login", "fx", "--headless"]);
        assert_eq!(run.code, Some(0), "{run}");
        // The stored token is not due by its clock, but the server has
        // dropped it: the connection's first request meets the 401.
        server.control("expire");
        let run = s.rho(&["--config", cfg, "mcp", "list", "--connect", "--json"]);
        assert_eq!(run.code, Some(0), "{run}");
        let doc: Value = serde_json::from_str(&run.stdout).expect("json");
        assert_eq!(doc["servers"][0]["status"], "ready", "{run}");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(0), "{run}");
        assert_eq!(
            run.stdout, "token #2\n",
            "refreshed once, at connect: {run}"
        );
        // Recorded, the refusal and the resend keep every token out.
        server.control("expire");
        let record = s.home().join("session.jsonl");
        let record_arg = record.to_str().expect("utf-8");
        let run = s.rho(&[
            "--config", cfg, "--record", record_arg, "mcp", "call", "fx", "whoami",
        ]);
        assert_eq!(run.stdout, "token #3\n", "{run}");
        let transcript = std::fs::read_to_string(&record).expect("transcript");
        assert!(
            transcript.contains("answer_authorization") && transcript.contains("<redacted>"),
            "{transcript}"
        );
        for secret in ["at-1-", "at-2-", "at-3-", "rt-1-", "rt-2-", "rt-3-"] {
            assert!(!transcript.contains(secret), "{secret} in {transcript}");
        }
        // Revoked too: startup fails with what to run, no browser opened.
        server.control("revoke");
        let run = s.rho(&["--config", cfg, "mcp", "list", "--connect", "--json"]);
        assert_eq!(run.code, Some(1), "{run}");
        let doc: Value = serde_json::from_str(&run.stdout).expect("json");
        let error = doc["servers"][0]["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("HTTP 401")
                && error.contains("refreshing the token failed")
                && error.contains("rho mcp login fx"),
            "{run}"
        );
    });
}

#[test]
fn a_real_openid_provider_login_through_a_browser_then_silent_refresh_then_log_in_again() {
    use std::io::BufRead as _;
    for_both(|rt| {
        let s = Scene::new(RHO, "oauth-oidc", rt);
        let dir = s.dir();
        let provider = OidcProvider::start(dir, &[]);
        let mcp = format!("http://127.0.0.1:{}", provider.mcp_port());
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[mcp.servers.fx]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\n[mcp.servers.fx.oauth]\n",
                toml_str(&format!("{mcp}/mcp"))
            ),
        )
        .expect("config");
        let cfg = config.to_str().expect("utf-8");
        // A person's login without a terminal: rho prints the URL (it opens
        // no browser here) and waits on its loopback listener.
        let mut login = s
            .command()
            .args(["--config", cfg, "mcp", "login", "fx"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rho mcp login");
        let stderr = login.stderr.take().expect("stderr");
        let mut lines = std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok);
        let url = lines
            .by_ref()
            .find_map(|line| {
                let line = line.trim();
                line.starts_with("http://").then(|| line.to_owned())
            })
            .expect("the authorization URL");
        // Then it says what it waits for, naming the server.
        let waiting = lines
            .by_ref()
            .find(|line| !line.trim().is_empty())
            .expect("a line after the URL");
        assert_eq!(
            waiting,
            "rho: waiting for the browser to finish the login to server `fx` (Ctrl-C stops waiting)..."
        );
        // Discovered from the OpenID document (the provider publishes no
        // RFC 8414 one), with PKCE, the resource and the PRM's scope.
        for part in [
            "/auth?",
            "code_challenge_method=S256",
            &format!("resource={}", url_encoded(&format!("{mcp}/mcp"))),
            "scope=mcp+offline_access",
        ] {
            assert!(url.contains(part), "{part} in {url}");
        }
        // The browser: login and consent are real redirects with cookies.
        let browser = Command::new("node")
            .arg(tests_dir().join("servers/fixtures/browser.mjs"))
            .arg(&url)
            .output()
            .expect("run the browser");
        let hops = String::from_utf8_lossy(&browser.stdout).into_owned();
        assert!(browser.status.success(), "{hops}");
        assert!(
            hops.contains("/interaction/") && hops.ends_with("200 /callback  \n"),
            "{hops}"
        );
        let done = login.wait_with_output().expect("login ends");
        let stdout = String::from_utf8_lossy(&done.stdout).into_owned();
        assert!(done.status.success(), "{stdout}");
        assert!(
            stdout.contains("logged in to server `fx` with http://127.0.0.1:"),
            "{stdout}"
        );
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (Some(0), "token #1\n"),
            "{run}"
        );
        // Behind the bearer check is the official TypeScript SDK's server,
        // which rho drives in the 2026-07-28 era with the same token.
        let run = s.rho(&["--config", cfg, "mcp", "show", "fx", "--connect", "--json"]);
        assert_eq!(run.code, Some(0), "{run}");
        let doc: Value = serde_json::from_str(&run.stdout).expect("json");
        assert_eq!(
            (doc["era"].as_str(), doc["server_info"]["name"].as_str()),
            (Some("2026-07-28"), Some("oidc-fixture")),
            "{run}"
        );
        // The provider drops the access token: refreshed without anyone.
        provider.control("expire");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (Some(0), "token #2\n"),
            "{run}"
        );
        // Revoked: a clear "log in again".
        provider.control("revoke");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!(run.code, Some(1), "{run}");
        assert!(
            run.stderr.contains("invalid_grant")
                && run.stderr.contains("run `rho mcp login fx` to log in"),
            "{run}"
        );
    });
}

#[test]
fn a_bearer_token_the_openid_provider_did_not_mint_is_refused_by_the_sdk_server() {
    for_both(|rt| {
        let s = Scene::new(RHO, "oauth-oidc-forged", rt);
        let dir = s.dir();
        let provider = OidcProvider::start(dir, &[]);
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!(
                "[mcp.servers.fx]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\nheaders = {{ Authorization = \"Bearer forged-token\" }}\n",
                toml_str(&provider.mcp_url())
            ),
        )
        .expect("config");
        let cfg = config.to_str().expect("utf-8");
        let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
        assert_eq!((run.code, run.stdout.as_str()), (Some(1), ""), "{run}");
        // The fixture's verifier found no such token in oidc-provider, and
        // the SDK answered 401 with its challenge.
        assert!(
            run.stderr.contains("HTTP 401")
                && run
                    .stderr
                    .contains("unknown, expired or revoked access token")
                && run.stderr.contains("rho mcp login fx"),
            "{run}"
        );
    });
}

/// `s` as a form-urlencoded value.
fn url_encoded(s: &str) -> String {
    s.replace(':', "%3A").replace('/', "%2F")
}

/// A FIFO (whose plain open would wait for a writer forever),
/// `/dev/zero` (which never ends), a file over 64 KiB and a missing one as
/// each secret file key, every one on a server of its own beside a
/// working client-credentials server, in one config. Each bad server fails at once, when its grant runs at its 401,
/// with a reason naming the key, the file and what to do with it, and
/// never telling the person to run `rho mcp login` (a login would read
/// the same file); the working server starts and is listed with its tool.
#[cfg(unix)]
fn a_fifo_dev_zero_big_or_missing_secret_file_fails_that_server_alone_naming_the_key(rt: Runtime) {
    use std::time::{Duration, Instant};
    let s = Scene::new(RHO, "oauth-bad-secret-files", rt);
    let server = OAuthServer::start_with(s.dir(), 3600, &[]);
    let fifo = s.dir().join("fifo");
    rho_tests::mkfifo(&fifo);
    let fifo = arg(&fifo).to_owned();
    let good = s.write("id_token", "eyJ.id.sig\n");
    let big = s.write("big", &"s".repeat(64 * 1024 + 1));
    let missing = s.dir().join("missing");
    let secret = s.write("m2m-secret", "m2m-secret\n");
    let url = toml_str(&server.url());
    // A long budget: a failure that waited for it would show.
    let mut text = String::new();
    let mut bad = Vec::new();
    for key in rho_tests::SECRET_FILE_KEYS {
        for (name, path) in [
            ("fifo", fifo.as_str()),
            ("zero", "/dev/zero"),
            ("big", arg(&big)),
            ("missing", arg(&missing)),
        ] {
            let id = format!("{}-{name}", key.replace('_', "-"));
            text.push_str(&format!(
                "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = {url}\nstartup_timeout_secs = 120\n[mcp.servers.{id}.oauth]\n{}\n",
                rho_tests::oauth_reading(key, path, arg(&good))
            ));
            bad.push((id, key, path, name));
        }
    }
    text.push_str(&format!(
        "[mcp.servers.ok]\ntransport = \"streamable_http\"\nurl = {url}\n[mcp.servers.ok.oauth]\ngrant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_file = {}\n",
        toml_str(arg(&secret))
    ));
    let config = s.write("config.toml", &text);
    let started = Instant::now();
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    let took = started.elapsed();
    run.expect_code(1);
    let doc = run.json();
    let servers = doc["servers"].as_array().expect("servers");
    let of = |id: &str| {
        servers
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no `{id}` listed\n{run}"))
    };
    for (id, key, path, kind) in &bad {
        let entry = of(id);
        assert_eq!(entry["status"], "failed", "{id}\n{run}");
        let error = entry["error"].as_str().unwrap_or_default();
        let (why, what_to_do) = match *kind {
            "big" => (
                "larger than 65536 bytes",
                "point it at a file that holds the secret",
            ),
            "missing" => ("cannot be read", "check the path and its permissions"),
            _ => (
                "not a regular file",
                "point it at a file that holds the secret",
            ),
        };
        assert!(
            error.contains(&format!("server `{id}`"))
                && error.contains(&format!("`oauth.{key}_file` {path}"))
                && error.contains(why)
                && error.contains(what_to_do),
            "{id}: {error}\n{run}"
        );
        assert!(!error.contains("rho mcp login"), "{id}: {error}\n{run}");
    }
    let ok = of("ok");
    assert_eq!(ok["status"], "ready", "{run}");
    assert!(run.stdout.contains("mcp__ok__whoami"), "{run}");
    // At once: far inside the 120 s budget the bad servers had.
    assert!(took < Duration::from_secs(60), "took {took:?}\n{run}");
}

/// A `client_secret_file` secret is read at each grant and never copied
/// into the credential store: the store keeps the client's id and how it
/// authenticates, and the next grant (here after the server dropped the
/// token) reads the file again and works without a stored copy.
fn a_client_secret_file_is_read_at_each_grant_and_never_stored(rt: Runtime) {
    let (s, config, server) = setup("secret-not-stored", rt, 3600);
    let secret = s.write("m2m-secret", "m2m-secret\n");
    let text = std::fs::read_to_string(&config).expect("config").replace(
        "[mcp.servers.fx.oauth]\n",
        &format!(
            "[mcp.servers.fx.oauth]\ngrant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_file = {}\n",
            toml_str(arg(&secret))
        ),
    );
    std::fs::write(&config, text).expect("config");
    let cfg = arg(&config);
    let store = s.home().join(".rho/mcp-oauth.json");
    let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "token #1\n"),
        "{run}"
    );
    let stored = std::fs::read_to_string(&store).expect("a stored login");
    assert!(!stored.contains("m2m-secret"), "{stored}");
    let login: Value = serde_json::from_str(&stored).expect("json");
    assert_eq!(login["entries"][0]["client_id"], "m2m", "{stored}");
    assert!(
        login["entries"][0].get("client_secret").is_none(),
        "{stored}"
    );
    // The token is refused now: the next grant reads the file again.
    server.control("expire");
    let run = s.rho(&["--config", cfg, "mcp", "call", "fx", "whoami"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "token #2\n"),
        "{run}"
    );
    let stored = std::fs::read_to_string(&store).expect("a stored login");
    assert!(!stored.contains("m2m-secret"), "{stored}");
}

#[cfg(unix)]
rho_tests::cli_both_executors!(
    a_fifo_dev_zero_big_or_missing_secret_file_fails_that_server_alone_naming_the_key,
);

rho_tests::cli_both_executors!(a_client_secret_file_is_read_at_each_grant_and_never_stored);
