//! The secrets of an OAuth grant, echoed back, never reach rho's output
//! (issue 45): authorization servers and identity providers that quote
//! every secret they receive in their `error_description`, and an MCP
//! server that quotes the access token it is called with
//! (`tests/servers/fixtures/echo-secrets.js oauth`, on an ephemeral
//! loopback port, DPoP offered everywhere), for every grant:
//!
//! - the authorization code grant of a client with a secret
//!   (`client_secret_file`), logged in headless: the code, its verifier
//!   and the secret are quoted;
//! - `client_credentials` with a client secret, and with a
//!   `private_key_jwt` client key (the client assertion rho signed);
//! - `jwt_bearer` (the workload's assertion);
//! - `identity_assertion`: an identity provider quoting the ID token and
//!   its client's secret, and one that issues an ID-JAG which the
//!   authorization server quotes;
//! - the DPoP proof of every token request;
//! - a stored login whose refresh the authorization server refuses,
//!   quoting the refresh token;
//! - a working server whose tool quotes the access token in a log message
//!   and a JSON-RPC error.
//!
//! None of those values, nor the secret files' content, appears on
//! stdout, stderr (logs at `RUST_LOG=trace` included), in `--json`
//! documents or in `--record` transcripts, on either executor; each
//! sink got the echo (it shows `<redacted>`). And the reason a grant with
//! no person step fails with names what to fix, never `rho mcp login`:
//! when it gets no token, and when the server refuses the one it got.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::{Run, Scene, arg};
use rho_tests::{listening_port, tests_dir, toml_str};
use serde_json::Value;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// The echoing OAuth fixture, stopped on drop.
struct EchoOAuth {
    child: Child,
    port: u16,
    /// Where it appends every secret it received or issued.
    secrets: PathBuf,
}

impl EchoOAuth {
    fn start(dir: &Path) -> Self {
        let secrets = dir.join("received-secrets");
        let mut child = Command::new("node")
            .arg(tests_dir().join("servers/fixtures/echo-secrets.js"))
            .arg("oauth")
            .arg(&secrets)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start echo-secrets.js oauth");
        let port = listening_port(&mut child, "echo-secrets.js oauth");
        Self {
            child,
            port,
            secrets,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// Every secret it received or issued so far.
    fn secrets(&self) -> Vec<String> {
        std::fs::read_to_string(&self.secrets)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for EchoOAuth {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PKCS#8 P-256 key in PEM, made by node.
fn generated_pem() -> String {
    let out = Command::new("node")
        .arg("-e")
        .arg(
            "process.stdout.write(require('crypto').generateKeyPairSync('ec', {namedCurve: 'P-256', \
             privateKeyEncoding: {type: 'pkcs8', format: 'pem'}, \
             publicKeyEncoding: {type: 'spki', format: 'pem'}}).privateKey)",
        )
        .output()
        .expect("node makes a key");
    String::from_utf8(out.stdout).expect("PEM")
}

/// The secret files' contents, by file name.
const FILES: [(&str, &str); 6] = [
    ("code-secret", "code-client-secret-1111\n"),
    ("m2m-secret", "m2m-client-secret-2222\n"),
    ("assertion", "eyJ.workload-assertion.sig3333\n"),
    ("id-token", "eyJ.sso-id-token.sig4444\n"),
    ("idp-secret", "idp-client-secret-5555\n"),
    ("ia-secret", "ia-client-secret-6666\n"),
];

/// The config: a server per grant, each `NAME` at the fixture's
/// `/NAME/mcp` (`ok…` ones are issued tokens).
fn config(s: &Scene, fx: &EchoOAuth, pem: &str) -> String {
    let file = |name: &str| {
        let path = s.dir().join(name);
        toml_str(path.to_str().expect("UTF-8 path"))
    };
    for (name, text) in FILES {
        s.write(name, text);
    }
    s.write("client-key.pem", pem);
    let server = |id: &str, oauth: &str| {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\n[mcp.servers.{id}.oauth]\n{oauth}\n",
            toml_str(&fx.url(&format!("{id}/mcp")))
        )
    };
    let idp = |which: &str| {
        format!(
            "grant = \"identity_assertion\"\nclient_id = \"ia\"\nclient_secret_file = {}\nid_token_file = {}\nidp_token_endpoint = {}\nidp_client_id = \"chat-at-idp\"\nidp_client_secret_file = {}\n",
            file("ia-secret"),
            file("id-token"),
            toml_str(&fx.url(&format!("{which}/token"))),
            file("idp-secret"),
        )
    };
    [
        server(
            "code_secret",
            &format!(
                "client_id = \"code-client\"\nclient_secret_file = {}\n",
                file("code-secret")
            ),
        ),
        server(
            "ok_code",
            &format!(
                "client_id = \"ok-client\"\nclient_secret_file = {}\n",
                file("code-secret")
            ),
        ),
        server(
            "cc_secret",
            &format!(
                "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_file = {}\n",
                file("m2m-secret")
            ),
        ),
        server(
            "cc_key",
            &format!(
                "grant = \"client_credentials\"\nclient_id = \"m2m-key\"\nclient_key_file = {}\n",
                file("client-key.pem")
            ),
        ),
        server(
            "jwt",
            &format!(
                "grant = \"jwt_bearer\"\nassertion_file = {}\n",
                file("assertion")
            ),
        ),
        server("idp_fails", &idp("idp-echo")),
        server(
            "plain_jwt",
            &format!(
                "grant = \"jwt_bearer\"\nassertion_file = {}\n",
                file("assertion")
            ),
        ),
        server("ia", &idp("idp-ok")),
        server(
            "ok_refused",
            &format!(
                "grant = \"client_credentials\"\nclient_id = \"m2m-ok\"\nclient_secret_file = {}\n",
                file("m2m-secret")
            ),
        ),
        server(
            "ok_cc",
            &format!(
                "grant = \"client_credentials\"\nclient_id = \"m2m-ok\"\nclient_secret_file = {}\n",
                file("m2m-secret")
            ),
        ),
    ]
    .concat()
}

/// Fails when `text` holds any of `secrets`.
fn assert_none_shown(what: &str, text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{what} shows the secret `{secret}`:\n{text}"
        );
    }
}

fn echoed_grant_secrets_never_reach_output_logs_json_or_transcripts(rt: Runtime) {
    let s = Scene::new(RHO, "grant-secrets", rt);
    let fx = EchoOAuth::start(s.dir());
    let pem = generated_pem();
    let s = {
        let text = config(&s, &fx, &pem);
        s.with_config(&text)
    };
    let trace = [("RUST_LOG", "trace")];
    let mut runs: Vec<(String, Run)> = Vec::new();

    // The authorization code grant of a confidential client: its token
    // endpoint quotes the code, the verifier and the secret.
    let login = s.rho_env(&["mcp", "login", "code_secret", "--headless"], &trace);
    assert_eq!(login.code, Some(1), "{login}");
    assert!(
        login.stderr.contains("refused what it got") && login.stderr.contains("<redacted>"),
        "{login}"
    );
    runs.push(("login code_secret".into(), login));
    // A login that works, whose tokens live 10 s: the next connect must
    // refresh, and the refresh is refused quoting the refresh token.
    let login = s.rho_env(&["mcp", "login", "ok_code", "--headless"], &trace);
    assert_eq!(login.code, Some(0), "{login}");
    runs.push(("login ok_code".into(), login));

    let listed = s.dir().join("list.jsonl");
    let list = s.rho_env(
        &[
            "--record",
            arg(&listed),
            "mcp",
            "list",
            "--connect",
            "--json",
        ],
        &trace,
    );
    assert_eq!(list.code, Some(1), "{list}");
    let doc: Value = serde_json::from_str(&list.stdout).expect("JSON");
    let error = |id: &str| {
        doc["servers"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == id))
            .and_then(|s| s["error"].as_str())
            .unwrap_or_else(|| panic!("no error for `{id}` in {doc}"))
            .to_owned()
    };
    for (id, fix) in [
        ("cc_secret", "`oauth.client_id`"),
        ("cc_key", "`client_key_file`"),
        ("jwt", "`oauth.assertion_file`"),
        ("idp_fails", "`oauth.id_token_file`"),
        ("ia", "`oauth.id_token_file`"),
    ] {
        let error = error(id);
        // The echo reached the reason, hidden; what to fix is named, and
        // no login is suggested for a grant without a person.
        assert!(
            error.contains("refused what it got") && error.contains("<redacted>"),
            "{id}: {error}"
        );
        assert!(
            error.contains(fix) && !error.contains("rho mcp login"),
            "{id}: {error}"
        );
    }
    // A token the grant got, refused by the server all the same.
    let refused = error("ok_refused");
    assert!(
        refused.contains("refused the new token too")
            && refused.contains("a login does not help")
            && !refused.contains("rho mcp login"),
        "{refused}"
    );
    // The refresh at connect was refused (for good: the login is
    // dropped), and the log says why, quoting the refresh token.
    assert!(
        list.stderr.contains("refreshing the OAuth token failed")
            && list.stderr.contains("refused what it got")
            && list.stderr.contains("run `rho mcp login ok_code`"),
        "{list}"
    );
    runs.push(("list --connect --json".into(), list));

    // A working server quoting its access token in a log message and a
    // JSON-RPC error.
    let called = s.dir().join("call.jsonl");
    let call = s.rho_env(
        &[
            "--record",
            arg(&called),
            "mcp",
            "call",
            "ok_cc",
            "leak",
            "--json",
        ],
        &trace,
    );
    assert_eq!(call.code, Some(1), "{call}");
    assert!(
        call.all().contains("leaking authorization=DPoP <redacted>")
            && call.stderr.contains("got authorization=DPoP <redacted>"),
        "{call}"
    );
    // Its stored token (10 s) was refreshed at connect, and refused: a
    // grant without a person runs again by itself, so no login is
    // suggested.
    assert!(
        call.stderr.contains("refreshing the OAuth token failed")
            && call
                .stderr
                .contains("its grant runs again when the server asks")
            && !call.stderr.contains("rho mcp login"),
        "{call}"
    );
    runs.push(("call ok_cc leak --json".into(), call));

    // Without DPoP (which replay cannot prove), a transcript of a grant
    // refused quoting its assertion replays exactly: it holds the reason as
    // the session took it.
    let shown = s.dir().join("show.jsonl");
    let show = s.rho_env(
        &[
            "--record",
            arg(&shown),
            "mcp",
            "show",
            "plain_jwt",
            "--connect",
            "--json",
        ],
        &trace,
    );
    assert_eq!(show.code, Some(1), "{show}");
    assert!(
        show.stdout.contains("refused what it got")
            && show.stdout.contains("`oauth.assertion_file`")
            && !show.stdout.contains("rho mcp login"),
        "{show}"
    );
    let replay = s.rho(&["mcp", "replay", arg(&shown)]);
    assert_eq!(replay.code, Some(0), "{replay}");
    runs.push(("show plain_jwt --connect --json".into(), show));

    let mut secrets = fx.secrets();
    secrets.extend(FILES.iter().map(|(_, text)| text.trim().to_owned()));
    secrets.extend(
        pem.lines()
            .filter(|l| !l.starts_with("-----"))
            .map(str::to_owned),
    );
    secrets.retain(|s| s.len() >= 8);
    // Every kind of secret was sent (or issued): the fixture saw them.
    let seen = secrets.join("\n");
    for kind in ["code-echo-", "at-echo-", "rt-echo-", "eyJ.id-jag-echo."] {
        assert!(
            seen.contains(kind),
            "the fixture never saw a {kind}: {seen}"
        );
    }
    assert!(
        secrets
            .iter()
            .filter(|s| s.matches('.').count() == 2)
            .count()
            >= 4,
        "client assertions and DPoP proofs were sent: {seen}"
    );
    for (what, run) in &runs {
        assert_none_shown(&format!("{what}: stdout"), &run.stdout, &secrets);
        assert_none_shown(&format!("{what}: stderr"), &run.stderr, &secrets);
    }
    for transcript in [listed, called, shown] {
        let text = std::fs::read_to_string(&transcript).expect("a transcript");
        assert!(text.contains("<redacted>"), "{text}");
        assert_none_shown(&transcript.display().to_string(), &text, &secrets);
    }
}

both_executors!(echoed_grant_secrets_never_reach_output_logs_json_or_transcripts);
