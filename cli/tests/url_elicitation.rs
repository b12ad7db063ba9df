//! URLs a server asks a person to open (URL-mode elicitation, and the
//! URLs of a -32042 refusal), end to end through `rho mcp call` against
//! the Python SDK 1.x server `tests/interop/python/mcp1/url_server.py`.
//!
//! On a terminal (`rho_tests::pty`) the server, the call, the host on a
//! line of its own (with the Unicode spelling beside the punycode) and
//! the whole URL are shown, server text sanitized; the URL goes to the
//! browser opener (`xdg-open`, here a script on PATH that writes its
//! argument to a file) only on a yes. With `--yes-defaults` or without a
//! terminal, URL mode is not declared and the server hears -32602; a
//! -32042's URLs are printed with the failure, and nothing is opened.

// rho_tests::pty is a Unix pseudo-terminal.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::pty::{foreign_control, run_on_terminal};
use rho_tests::scene::{Run, Scene};

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// What the server asks to open: an internationalized host (a Cyrillic
/// `а` in `pаypal`), so the punycode and the Unicode spelling both show.
const URL: &str = "https://pаypal.example/connect?step=1";
/// The same URL as rho opens it.
const OPENED: &str = "https://xn--pypal-4ve.example/connect?step=1";

/// A scene whose `urls` server asks to open [`URL`], with an `xdg-open`
/// that appends what it was given to `opened.txt`, after the `RUN_TAG` of
/// the rho that ran it; and the PATH that finds that opener first.
fn scene(name: &str, runtime: Runtime) -> (Scene, PathBuf, String) {
    let (python, dir) = rho_tests::interop_python("mcp1");
    let config = format!(
        "[mcp.servers.urls]\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"{}\", \"{URL}\"]\nstartup_timeout_secs = 30\n",
        python.display(),
        dir.join("url_server.py").display(),
    );
    let s = Scene::new(RHO, &format!("url-{name}"), runtime)
        .with_config(&config)
        .without_env(&["CI", "NO_COLOR"]);
    let opened = s.dir().join("opened.txt");
    let _ = std::fs::remove_file(&opened);
    let path = rho_tests::browser_opener(
        s.dir(),
        &format!(
            "printf '%s %s\\n' \"$RUN_TAG\" \"$*\" >>'{}'",
            opened.display()
        ),
    );
    (s, opened, path)
}

/// `rho args...` on a terminal as run `tag`, answering each prompt.
fn call_on_terminal(
    s: &Scene,
    path: &str,
    tag: &str,
    args: &[&str],
    answers: &[(&str, &str)],
) -> (Option<i32>, String) {
    let mut command: Command = s.command();
    command.args(args).env("PATH", path).env("RUN_TAG", tag);
    run_on_terminal(command, answers, 200)
}

/// Everything the opener was given, once the run tagged `yes` has given
/// it its URL (waited for, bounded: the opener rho spawns may still be
/// writing when rho ends). Any earlier run that opened something was
/// spawned before that one and is on record too.
fn opened_by_the_yes(opened: &Path) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(opened).unwrap_or_default();
        if text.lines().any(|l| l.starts_with("yes ")) || Instant::now() > until {
            return text.lines().map(str::to_owned).collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the opener holds when only the run tagged `yes` opened the URL.
fn only_the_yes() -> Vec<String> {
    vec![format!("yes {OPENED}")]
}

const OPEN_PROMPT: &str = "Open it in your browser? [y/N";

/// Fails unless `shown` holds every one of `texts`.
fn assert_shows(shown: &str, texts: &[&str]) {
    for text in texts {
        assert!(shown.contains(text), "no {text:?} in:\n{shown}");
    }
}

/// How the URL is shown: its host apart, punycode and as written, the
/// whole URL as opened, the warning.
fn url_shown() -> [String; 4] {
    [
        "  host: xn--pypal-4ve.example\n".to_owned(),
        "(written pаypal.example — punycode above)".to_owned(),
        format!("  URL:  {OPENED}\n"),
        "warning: the host is an internationalized name".to_owned(),
    ]
}

/// A person says yes to the URL of `connect` (run `yes`); then the opener
/// must hold that run's opening alone: any earlier run that had opened
/// something was spawned before it, so is on record too.
fn a_later_yes_is_the_only_opening(s: &Scene, opened: &Path, path: &str) {
    let (code, shown) = call_on_terminal(
        s,
        path,
        "yes",
        &["mcp", "call", "urls", "connect"],
        &[(OPEN_PROMPT, "y")],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert_shows(
        &shown,
        &[
            "opened in your browser; sent to the server: accept",
            "action=accept",
        ],
    );
    assert_eq!(opened_by_the_yes(opened), only_the_yes());
}

fn a_url_request_shows_the_url_and_host_and_opens_only_on_yes(rt: Runtime) {
    let (s, opened, path) = scene("ask", rt);
    // No: the URL is shown, nothing is opened, the server hears decline.
    let (code, shown) = call_on_terminal(
        &s,
        &path,
        "no",
        &["mcp", "call", "urls", "connect"],
        &[(OPEN_PROMPT, "n")],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert_shows(
        &shown,
        &[
            "── MCP server `urls` asks during `connect` to open a URL in your browser ──",
            "Connect your Example account to continue.",
            "not opened; sent to the server: decline",
            "action=decline",
        ],
    );
    assert_shows(&shown, &url_shown().each_ref().map(String::as_str));
    assert_eq!(foreign_control(&shown), None, "{shown:?}");
    // Yes: the same URL, exactly, goes to the browser.
    a_later_yes_is_the_only_opening(&s, &opened, &path);
}

fn a_dismissed_url_request_cancels_the_call_and_opens_nothing(rt: Runtime) {
    let (s, opened, path) = scene("cancel", rt);
    let (code, shown) = call_on_terminal(
        &s,
        &path,
        "no",
        &["mcp", "call", "urls", "connect"],
        &[(OPEN_PROMPT, "!cancel")],
    );
    assert_eq!(code, Some(1), "{shown}");
    assert_shows(
        &shown,
        &["not opened; sent to the server: cancel", "cancelled"],
    );
    a_later_yes_is_the_only_opening(&s, &opened, &path);
}

fn with_yes_defaults_or_no_terminal_url_mode_is_refused_as_invalid_params(rt: Runtime) {
    let (s, opened, path) = scene("refused", rt);
    // --yes-defaults on a terminal: forms are declared, URLs are not.
    let (code, shown) = call_on_terminal(
        &s,
        &path,
        "no",
        &["mcp", "call", "--yes-defaults", "urls", "connect"],
        &[],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert_shows(&shown, &["error -32602"]);
    assert!(!shown.contains("open a URL"), "{shown}");
    // No terminal at all.
    let Run {
        code,
        stdout,
        stderr,
        ..
    } = s.rho_env(
        &["mcp", "call", "urls", "connect"],
        &[("PATH", &path), ("RUN_TAG", "no")],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "error -32602");
    // In CI, on a terminal.
    let mut command = s.command();
    command
        .args(["mcp", "call", "urls", "connect"])
        .env("PATH", &path)
        .env("RUN_TAG", "no")
        .env("CI", "true");
    let (code, shown) = run_on_terminal(command, &[], 200);
    assert_eq!(code, Some(0), "{shown}");
    assert_shows(&shown, &["error -32602"]);
    a_later_yes_is_the_only_opening(&s, &opened, &path);
}

fn a_url_elicitation_required_error_shows_its_url_and_retries_on_yes(rt: Runtime) {
    let (s, opened, path) = scene("required", rt);
    let (code, shown) = call_on_terminal(
        &s,
        &path,
        "yes",
        &["mcp", "call", "urls", "needs_connect"],
        &[
            ("Open it in your browser? [y/N] ", "y"),
            ("send the call again? [y/N] ", "y"),
        ],
    );
    assert_eq!(code, Some(0), "{shown}");
    assert_shows(
        &shown,
        &[
            "── MCP server `urls` needs you to visit a URL before `needs_connect` can go on ──",
            "Authorization is required for your Example files.",
            "connected",
        ],
    );
    assert_shows(&shown, &url_shown().each_ref().map(String::as_str));
    assert_eq!(opened_by_the_yes(&opened), only_the_yes());
}

fn a_url_elicitation_required_error_without_a_terminal_lists_its_url_and_opens_nothing(
    rt: Runtime,
) {
    let (s, opened, path) = scene("required-plain", rt);
    let run = s.rho_env(
        &["mcp", "call", "urls", "needs_connect"],
        &[("PATH", &path), ("RUN_TAG", "no")],
    );
    assert_eq!(run.code, Some(1), "{run}");
    assert_shows(
        &run.stderr,
        &[
            "server `urls` needs the person to visit a URL before the call can go on: URL elicitation required",
            "nothing was opened",
        ],
    );
    assert_shows(&run.stderr, &url_shown().each_ref().map(String::as_str));
    a_later_yes_is_the_only_opening(&s, &opened, &path);
}

both_executors!(
    a_url_request_shows_the_url_and_host_and_opens_only_on_yes,
    a_dismissed_url_request_cancels_the_call_and_opens_nothing,
    with_yes_defaults_or_no_terminal_url_mode_is_refused_as_invalid_params,
    a_url_elicitation_required_error_shows_its_url_and_retries_on_yes,
    a_url_elicitation_required_error_without_a_terminal_lists_its_url_and_opens_nothing,
);
