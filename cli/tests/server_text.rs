//! Server text on rho's terminal, end to end: a hostile server
//! (`tests/servers/fixtures/hostile-text.js`) puts `ESC ] 0 ; pwned BEL`,
//! `ESC [ 2 J`, `CR ESC [ K` and U+009B into every field a person sees,
//! and no raw ESC, CR or C1 control may reach rho's stdout or stderr: not
//! from `list --connect`, `show --connect`, `call`, the progress line, the
//! elicitation form or the sampling question, nor from the logs (which
//! follow `NO_COLOR`). `--json` stays exact.
//!
//! Secrets a server echoes back (`tests/servers/fixtures/echo-secrets.js`
//! quotes every configured header and environment value) show as
//! `<redacted>` in `--json` error fields, logs, call errors and `--record`
//! transcripts, which still replay; and a header value from the
//! environment that holds CR/LF fails that server naming the header.
//!
//! Forms, progress, colour and the shell's palette appear only on a
//! terminal, so those tests run rho on a pseudo-terminal
//! (`rho_tests::pty`) whose echo and CR insertion are off (`stty -echo
//! -onlcr`), so every byte seen is rho's. The payloads include U+202E (a
//! right-to-left override), which must never reach the terminal raw
//! either.

// rho_tests::pty is a Unix pseudo-terminal.
#![cfg(unix)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::pty::{Pty, Screen, foreign_control};
use rho_tests::scene::{Run, Scene, arg};
use rho_tests::{node_server, tests_dir};
use serde_json::Value;

fn hostile_js() -> PathBuf {
    tests_dir().join("servers/fixtures/hostile-text.js")
}

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// A scene whose config has the hostile servers (`h`, `dies`, `rejects`)
/// and `extra`; its runs see no `NO_COLOR` and no `CI`.
fn hostile(name: &str, runtime: Runtime, extra: &str) -> Scene {
    let js = hostile_js();
    let config = format!(
        "{}\n{}\n{}\n{extra}",
        node_server("h", &js, &["serve"]),
        node_server("dies", &js, &["die"]),
        node_server("rejects", &js, &["reject"]),
    );
    Scene::new(RHO, &format!("text-{name}"), runtime)
        .with_config(&config)
        .without_env(&["NO_COLOR", "CI"])
}

/// `rho --config <hostile> args...` on a pseudo-terminal (stdin,
/// stdout and stderr all on it, `rho_tests::pty`, echo and CR insertion
/// off so every byte seen is rho's), typing each answer once its prompt
/// has appeared that many times; returns the exit code and everything
/// the terminal showed.
fn rho_on_terminal(
    s: &Scene,
    args: &[&str],
    env: &[(&str, &str)],
    answers: &[(&str, &str)],
) -> (Option<i32>, String) {
    rho_on_terminal_sized(s, args, env, answers, 200)
}

/// The widths every interactive test here runs at.
const WIDTHS: [u16; 2] = [80, 200];

/// [`rho_on_terminal`] on a terminal `columns` wide.
fn rho_on_terminal_sized(
    s: &Scene,
    args: &[&str],
    env: &[(&str, &str)],
    answers: &[(&str, &str)],
    columns: u16,
) -> (Option<i32>, String) {
    let mut command = s.command();
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    rho_tests::pty::run_on_terminal(command, answers, columns)
}

/// Fails when `text` holds a raw ESC, CR, C1 control or BIDI override.
fn assert_no_raw_controls(what: &str, text: &str) {
    for (i, c) in text.char_indices() {
        assert!(
            !(c == '\x1b'
                || c == '\r'
                || ('\u{80}'..='\u{9f}').contains(&c)
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)),
            "{what}: raw {c:?} at byte {i}:\n{text}"
        );
    }
}

/// The payloads as rho shows them: visible, inert.
const SHOWN: [&str; 5] = [
    "\\x1b]0;pwned\\x07",
    "\\x1b[2J",
    "\\r\\x1b[K",
    "\\u{9b}31m",
    "\\u{202e}",
];

fn assert_shows_payloads(what: &str, text: &str) {
    for shown in SHOWN {
        assert!(text.contains(shown), "{what}: no visible {shown}:\n{text}");
    }
}

fn list_and_show_never_print_raw_server_text(rt: Runtime) {
    let s = hostile("list", rt, "");
    for args in [
        &["mcp", "list", "--connect"][..],
        &["--verbose", "mcp", "list", "--connect"],
        &["mcp", "show", "h", "--connect"],
        &["mcp", "show", "dies", "--connect"],
        &["mcp", "show", "rejects", "--connect"],
    ] {
        let Run { stdout, stderr, .. } = s.rho(args);
        let what = format!("rho {}", args.join(" "));
        assert_no_raw_controls(&format!("{what} stdout"), &stdout);
        assert_no_raw_controls(&format!("{what} stderr"), &stderr);
        assert_shows_payloads(&format!("{what} stdout"), &stdout);
    }
    // Server name and version, tool names, the stderr tail of a failed
    // start and a JSON-RPC error each appear, escaped, in the table.
    let Run { stdout, stderr, .. } = s.rho(&["--verbose", "mcp", "list", "--connect"]);
    assert!(stdout.contains("hostile\\x1b]0;pwned"), "{stdout}");
    assert!(stdout.contains("last words \\x1b]0;pwned"), "{stdout}");
    assert!(stdout.contains("no handshake \\x1b]0;pwned"), "{stdout}");
    assert!(stdout.contains("(h · evil\\x1b]0;pwned"), "{stdout}");
    // The logs: a server's notifications/message and its stderr lines.
    assert!(stderr.contains("ready \\x1b]0;pwned"), "{stderr}");
    assert!(
        stderr.contains("stderr after handshake \\x1b]0;pwned"),
        "{stderr}"
    );
    let Run { stdout, .. } = s.rho(&["mcp", "show", "h", "--connect"]);
    assert!(stdout.contains("second line \\x1b]0;pwned"), "{stdout}");
    assert!(stdout.contains("Result \\x1b]0;pwned"), "{stdout}");
}

fn call_never_prints_raw_server_text(rt: Runtime) {
    let s = hostile("call", rt, "");
    let Run {
        code,
        stdout,
        stderr,
        ..
    } = s.rho(&["--verbose", "mcp", "call", "h", "result"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_no_raw_controls("call result stdout", &stdout);
    assert_no_raw_controls("call result stderr", &stderr);
    assert_shows_payloads("call result stdout", &stdout);
    // Text, the resource link's name and description, and MIME types.
    assert!(stdout.contains("text \\x1b]0;pwned"), "{stdout}");
    assert!(stdout.contains("link \\x1b]0;pwned"), "{stdout}");
    assert!(stdout.contains("image/png\\x1b]0;pwned"), "{stdout}");
    assert!(
        stderr.contains("stderr during call \\x1b]0;pwned"),
        "{stderr}"
    );

    let Run {
        code,
        stdout,
        stderr,
        ..
    } = s.rho(&["mcp", "call", "h", "fail"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_no_raw_controls("call fail stdout", &stdout);
    assert_no_raw_controls("call fail stderr", &stderr);
    assert!(stderr.contains("failed \\x1b]0;pwned"), "{stderr}");

    // A JSON document keeps the server's text exact: JSON escapes it.
    let Run {
        code,
        stdout,
        stderr,
        ..
    } = s.rho(&["mcp", "call", "h", "result", "--json"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert_no_raw_controls("call --json stdout", &stdout);
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    let text = doc["model_text"].as_str().expect("model_text");
    assert!(
        text.contains("text \x1b]0;pwned\x07|\x1b[2J|\r\x1b[K|\u{9b}31m"),
        "{doc}"
    );
    let Run { stdout, .. } = s.rho(&["mcp", "show", "h", "--connect", "--json"]);
    assert_no_raw_controls("show --json stdout", &stdout);
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(
        doc["server_info"]["name"],
        "hostile\x1b]0;pwned\x07|\x1b[2J|\r\x1b[K|\u{9b}31m|\u{202e}"
    );
    let Run { stdout, .. } = s.rho(&["mcp", "list", "--connect", "--json"]);
    assert_no_raw_controls("list --json stdout", &stdout);
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    let dies = doc["servers"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["id"] == "dies"))
        .expect("dies");
    let error = dies["error"].as_str().expect("error");
    assert!(error.contains("last words \x1b]0;pwned\x07"), "{error:?}");
}

fn progress_line_never_prints_raw_server_text(rt: Runtime) {
    let s = hostile("progress", rt, "");
    for columns in WIDTHS {
        let (code, shown) = rho_on_terminal_sized(
            &s,
            &["mcp", "call", "h", "progress"],
            &[("NO_COLOR", "1")],
            &[],
            columns,
        );
        assert_eq!(code, Some(0), "{shown}");
        assert!(shown.contains("step 1\\x1b]0;pwned"), "{shown}");
        // The progress line is rho's own `CR ESC [2K`; no server sequence.
        let without_own = shown.replace("\r\x1b[2K", "");
        assert_no_raw_controls(&format!("progress at {columns} columns"), &without_own);
    }
}

fn form_and_sampling_question_never_print_raw_server_text(rt: Runtime) {
    let s = hostile("form", rt, "[sampling]\ncommand = [\"cat\"]\n");
    // `sampling = "ask"` on `h`: append to its table.
    let config = std::fs::read_to_string(s.config()).expect("config");
    let config = config.replacen(
        "[mcp.servers.h]\n",
        "[mcp.servers.h]\nsampling = \"ask\"\n",
        1,
    );
    std::fs::write(s.config(), config).expect("config");
    for columns in WIDTHS {
        form_on_a_terminal(&s, columns);
    }
}

fn form_on_a_terminal(s: &Scene, columns: u16) {
    let (code, shown) = rho_on_terminal_sized(
        s,
        &["mcp", "call", "h", "ask"],
        &[("NO_COLOR", "1")],
        &[("\n> ", "Ada"), ("\n> ", "1"), ("Allow? [y/N]", "n")],
        columns,
    );
    assert_eq!(code, Some(0), "{shown}");
    assert_no_raw_controls("form on a terminal", &shown);
    assert_shows_payloads("form on a terminal", &shown);
    for part in [
        "Please answer \\x1b]0;pwned",
        "Who \\x1b]0;pwned",
        "Your name \\x1b]0;pwned",
        "Pick \\x1b]0;pwned",
        "A choice \\x1b]0;pwned",
        "1) one\\x1b]0;pwned",
        "2) two\\x1b]0;pwned",
        "asks to use your model",
    ] {
        assert!(shown.contains(part), "no {part:?}:\n{shown}");
    }
    // Only rho's own header starts a line with it; the server's forgery
    // is indented under the message.
    let headers: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("── MCP server"))
        .collect();
    assert_eq!(
        headers,
        [
            "── MCP server `h` asks during `ask` ──",
            "── MCP server `h` asks to use your model ──"
        ],
        "{shown}"
    );
    // The server got the answers (the first choice, by number).
    assert!(shown.contains(r#""a_who":"Ada""#), "{shown}");
}

fn logs_are_coloured_on_a_terminal_unless_no_color_is_set(rt: Runtime) {
    let s = hostile("color", rt, "");
    // The server's log message: its own level, coloured as rho's warnings.
    let (_, coloured) = rho_on_terminal(&s, &["mcp", "list", "--connect"], &[], &[]);
    assert!(
        coloured.contains("\x1b[33mwarning\x1b[0m from server `h`"),
        "a terminal without NO_COLOR gets coloured logs:\n{coloured:?}"
    );
    for no_color in ["1", "true"] {
        let (_, plain) = rho_on_terminal(
            &s,
            &["mcp", "list", "--connect"],
            &[("NO_COLOR", no_color)],
            &[],
        );
        assert!(plain.contains("warning from server `h`"), "{plain}");
        assert_no_raw_controls(&format!("NO_COLOR={no_color}"), &plain);
    }
}

fn echo_js() -> PathBuf {
    tests_dir().join("servers/fixtures/echo-secrets.js")
}

/// Values the echoing servers are configured with.
const SECRETS: [&str; 3] = [
    "tok-0123456789abcdef",
    "literal-env-secret-42",
    "ambient-env-secret-77",
];

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{what} shows `{secret}`:\n{text}");
    }
}

/// The fixture's HTTP mode on an ephemeral loopback port.
struct EchoHttp {
    child: std::process::Child,
    port: u16,
}

impl EchoHttp {
    fn start() -> Self {
        let mut child = Command::new("node")
            .arg(echo_js())
            .arg("http")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start echo-secrets.js http");
        let port = rho_tests::listening_port(&mut child, "echo-secrets.js http");
        Self { child, port }
    }
}

impl Drop for EchoHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn echoed_secrets_never_reach_json_errors_logs_or_transcripts(rt: Runtime) {
    let http = EchoHttp::start();
    let js = echo_js();
    let env = "env = { LITERAL_SECRET = \"literal-env-secret-42\" }\n\
               env_from_env = { AMBIENT_SECRET = \"ECHO_TEST_ENV\" }\n";
    let extra = format!(
        "{}{env}\n{}{env}\n[mcp.servers.unauthorized]\ntransport = \"streamable_http\"\n\
         url = \"http://127.0.0.1:{}/unauthorized\"\n\
         headers_from_env = {{ Authorization = \"ECHO_TEST_AUTH\" }}\n",
        node_server("stdio_fail", &js, &["stdio-fail"]),
        node_server("stdio_serve", &js, &["stdio-serve"]),
        http.port
    );
    let s = hostile("secrets", rt, &extra);
    let transcript = s.dir().join("run.jsonl");
    let run = |args: &[&str]| {
        let Run {
            code,
            stdout,
            stderr,
            ..
        } = s.rho_env(
            args,
            &[
                ("ECHO_TEST_AUTH", "Bearer tok-0123456789abcdef"),
                ("ECHO_TEST_ENV", "ambient-env-secret-77"),
            ],
        );
        (code, stdout, stderr)
    };
    let record = transcript.to_str().expect("UTF-8 path");
    let (code, stdout, stderr) = run(&[
        "--verbose",
        "--record",
        record,
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_no_secret("list --json", &stdout);
    assert_no_secret("the logs", &stderr);
    // The logs carried the echoes: a server log message and stderr lines.
    assert!(stderr.contains("got AMBIENT_SECRET=<redacted>"), "{stderr}");
    assert!(stderr.contains("my environment:"), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("JSON");
    let error = |id: &str| {
        doc["servers"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == id))
            .and_then(|s| s["error"].as_str())
            .unwrap_or_else(|| panic!("no error for `{id}` in {doc}"))
            .to_owned()
    };
    assert!(
        error("stdio_fail").contains("LITERAL_SECRET=<redacted>"),
        "{doc}"
    );
    assert!(
        error("unauthorized").contains("authorization: <redacted>"),
        "{doc}"
    );
    let recorded = std::fs::read_to_string(&transcript).expect("transcript");
    assert_no_secret("the transcript", &recorded);
    assert!(recorded.contains("<redacted>"), "{recorded}");
    let (code, stdout, stderr) = run(&["mcp", "replay", record]);
    assert_eq!(
        code,
        Some(0),
        "the redacted transcript replays:\n{stdout}{stderr}"
    );

    let (code, stdout, stderr) = run(&["mcp", "call", "stdio_serve", "leak"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("leaking") && stderr.contains("<redacted>"),
        "{stderr}"
    );
    assert_no_secret("call error", &format!("{stdout}{stderr}"));
}

fn header_value_with_crlf_from_the_environment_fails_naming_the_header(rt: Runtime) {
    let s = hostile(
        "crlf",
        rt,
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
         headers_from_env = { Authorization = \"CRLF_TOKEN\" }\n",
    );
    let run = s.rho_env(
        &["mcp", "show", "remote", "--connect", "--json"],
        &[("CRLF_TOKEN", "Bearer abcdefgh\r\nX-Injected: 1")],
    );
    run.expect_code(1);
    let doc = run.json();
    let error = doc["error"].as_str().expect("an error");
    assert!(error.contains("`Authorization`"), "{error}");
    assert!(error.contains("`CRLF_TOKEN`"), "{error}");
    assert!(!error.contains("abcdefgh"), "{error}");
    assert!(!error.contains("failed to parse header value"), "{error}");
}

/// Waits until `screen` shows `text` after byte `from`; where it ends.
fn wait_on(screen: &Screen, child: &mut std::process::Child, from: usize, text: &str) -> usize {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let shown = screen.text();
        if let Some(at) = shown.get(from..).and_then(|s| s.find(text)) {
            return from + at + text.len();
        }
        if Instant::now() > until || child.try_wait().expect("wait").is_some() {
            let _ = child.kill();
            panic!("no {text:?} on the terminal; it showed:\n{shown}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Fails when the terminal got a control character rho's drawing does
/// not account for (`rho_tests::pty::foreign_control`).
fn assert_no_foreign_control(what: &str, shown: &str) {
    if let Some((at, c)) = foreign_control(shown) {
        let mut from = at.saturating_sub(80);
        while !shown.is_char_boundary(from) {
            from -= 1;
        }
        panic!(
            "{what}: raw {c:?} at byte {at}, after {:?}\nwhole screen:\n{shown:?}",
            &shown[from..at]
        );
    }
}

/// The shell's palette offers the hostile prompt and tool names escaped,
/// inserts the escaped form (never U+202E or ESC into the edited line),
/// and that escaped form runs the prompt; at two terminal widths.
fn palette_never_draws_or_inserts_raw_server_text(rt: Runtime) {
    for (columns, rows) in [(60, 20), (200, 50)] {
        let s = hostile(&format!("palette-{columns}"), rt, "");
        let pty = Pty::sized(columns, rows).rho_bytes_only();
        let mut child = s
            .command()
            .args(["mcp", "shell"])
            .env("NO_COLOR", "1")
            .stdin(pty.slave())
            .stdout(pty.slave())
            .stderr(pty.slave())
            .spawn()
            .expect("start rho mcp shell");
        let (mut screen, mut keyboard) = pty.record();
        let mut typed = |keys: &str| {
            keyboard.write_all(keys.as_bytes()).expect("type");
            keyboard.flush().expect("flush");
        };
        let at = wait_on(&screen, &mut child, 0, "rho> ");
        // The two prompts share `/mcp:h:`: Tab opens the menu.
        typed("/mcp:h:\t");
        let at = wait_on(
            &screen,
            &mut child,
            at,
            "/mcp:h:evil\\x1b]0;pwned\\x07\\u{202e}",
        );
        wait_on(&screen, &mut child, at, "/mcp:h:plain ");
        // Enter picks the highlighted (first) row: its escaped form.
        typed("\r");
        // The line now ends in the name's escaped tail (at 60 columns
        // the line is scrolled sideways to the cursor).
        let at = wait_on(&screen, &mut child, at, "31m|\\u{202e} ");
        typed("about it\r");
        // (At 60 columns the escaped name, one long word, takes a row of
        // its own.)
        let at = wait_on(&screen, &mut child, at, "prompt got about it");
        let at = wait_on(&screen, &mut child, at, "\\x1b]0;pwned");
        // Tool names in `/call h:` completions, and `/tools`.
        typed("/call h:ev\t");
        let at = wait_on(&screen, &mut child, at, "31m|\\u{202e} ");
        typed("\x15/tools h\r");
        wait_on(&screen, &mut child, at, "(h:evil\\x1b]0;pwned");
        typed("/quit\r");
        let until = Instant::now() + Duration::from_secs(30);
        while child.try_wait().expect("wait").is_none() {
            assert!(
                Instant::now() < until,
                "rho did not quit:\n{}",
                screen.text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(keyboard);
        let shown = screen.closed(Duration::from_secs(10)).unwrap_or_else(|p| p);
        assert_no_foreign_control(&format!("the shell at {columns} columns"), &shown);
        assert!(shown.contains("\\u{202e}"), "{shown}");
    }
}

both_executors!(
    palette_never_draws_or_inserts_raw_server_text,
    echoed_secrets_never_reach_json_errors_logs_or_transcripts,
    header_value_with_crlf_from_the_environment_fails_naming_the_header,
    list_and_show_never_print_raw_server_text,
    call_never_prints_raw_server_text,
    progress_line_never_prints_raw_server_text,
    form_and_sampling_question_never_print_raw_server_text,
    logs_are_coloured_on_a_terminal_unless_no_color_is_set,
);

/// `import`, `add` and `show` with the payloads in every field a JSON
/// file or a flag chooses: server names, `type` values, ignored keys and
/// variable names. Nothing raw reaches the terminal, and no variable name
/// holding a control character reaches the TOML.
#[test]
fn import_add_and_show_never_print_raw_names_and_refuse_control_variable_names() {
    const P: &str = "\x1b]0;pwned\x07|\x1b[2J|\r\x1b[K|\u{9b}31m|\u{202e}";
    let s = Scene::on_default_executor(RHO, "text-import").without_env(&["NO_COLOR", "CI"]);
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    let file = s.write(
        "claude.json",
        &serde_json::json!({"mcpServers": {
            format!("bad{P}"): {"command": "x"},
            "typed": {"type": format!("ws{P}"), "url": "https://x.example/mcp"},
            "ignored": {"command": "x", format!("extra{P}"): 1},
            "envname": {"command": "x", "env": {format!("K{P}"): "v"}},
            "fine": {"command": "x", "env": {"LEVEL": "debug"}},
        }})
        .to_string(),
    );
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&file)]);
    let what = "rho mcp import";
    run.expect_code(1);
    assert_no_raw_controls(&format!("{what} stdout"), &run.stdout);
    assert_no_raw_controls(&format!("{what} stderr"), &run.stderr);
    for part in [
        "server `bad\\x1b]0;pwned\\x07",
        "has `type` `ws\\x1b]0;pwned\\x07",
        "ignored `extra\\x1b]0;pwned\\x07",
        "control or bidirectional-override character",
        "\\u{202e}",
    ] {
        assert!(run.stderr.contains(part), "no {part:?}:\n{}", run.stderr);
    }
    assert!(
        run.stdout.contains("imported server `fine`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("imported server `ignored`"),
        "{}",
        run.stdout
    );
    let written = std::fs::read_to_string(&config).expect("the config");
    assert!(!written.contains("envname"), "{written}");
    assert!(!written.contains('\x1b'), "{written}");

    // `add --env` refuses the name, saying so escaped.
    let env = format!("K{P}=v");
    let run = s.rho(&[
        "--config", cfg, "mcp", "add", "x", "--env", &env, "--", "true",
    ]);
    run.expect_code(2);
    assert_no_raw_controls("rho mcp add stderr", &run.stderr);
    assert!(
        run.stderr.contains("control or bidirectional-override"),
        "{}",
        run.stderr
    );
    assert!(
        !std::fs::read_to_string(&config)
            .expect("config")
            .contains("[mcp.servers.x]")
    );

    // A config written by hand with such a name: `show` and `list` say
    // why the entry is invalid, escaped.
    let hand = s.write(
        "hand.toml",
        &format!(
            "[mcp.servers.hand]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = {{ \"{}\" = \"v\" }}\n",
            "K\\u001b]0;pwned\\u0007\\u202e"
        ),
    );
    for args in [&["mcp", "show", "hand"][..], &["mcp", "list"]] {
        let mut all = vec!["--config", arg(&hand)];
        all.extend_from_slice(args);
        let run = s.rho(&all);
        let what = format!("rho {}", args.join(" "));
        assert_no_raw_controls(&format!("{what} stdout"), &run.stdout);
        assert_no_raw_controls(&format!("{what} stderr"), &run.stderr);
        assert!(
            run.all().contains("control or bidirectional-override"),
            "{what}: {}",
            run.all()
        );
    }
}
