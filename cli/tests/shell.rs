//! `rho mcp shell` in a real terminal: a pseudo-terminal made here (as in
//! tests/signals.rs) is the shell's stdin, stdout and stderr, keys are
//! typed on its master side and the screen is read back from it, against
//! the real server-everything on both executors.
//!
//! What a person would see is checked on the raw terminal output, so a
//! match is a string the shell drew (escape sequences included around it,
//! never inside it: the editor draws a line's text in one piece).

#![cfg(target_os = "linux")]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::pty::Pty;
use rho_tests::{everything_js, node_server, scratch_dir};

/// A shell under test: rho on a pseudo-terminal.
struct Shell {
    child: Child,
    screen: Arc<Mutex<String>>,
    keyboard: std::fs::File,
    home: PathBuf,
}

impl Shell {
    /// Starts `rho mcp shell` over server-everything and waits for its
    /// first prompt.
    fn start(rt: Runtime, name: &str) -> Shell {
        Shell::start_with(rt, name, &node_server("everything", &everything_js(), &[]))
    }

    /// Starts `rho mcp shell` over the servers of `config_text`.
    fn start_with(rt: Runtime, name: &str, config_text: &str) -> Shell {
        let dir = scratch_dir(&format!("shell-{name}-{}", rt.name()));
        let config = dir.join("rho.toml");
        std::fs::write(&config, config_text).expect("write the config");
        let home = dir.join("home");
        std::fs::create_dir_all(&home).expect("make a home");
        let pty = Pty::open();
        let child = Command::new(env!("CARGO_BIN_EXE_rho"))
            .args(["--config"])
            .arg(&config)
            .args(["--runtime", rt.name(), "mcp", "shell"])
            .env("HOME", &home)
            .env_remove("CI")
            .env_remove("RUST_LOG")
            .stdin(pty.slave())
            .stdout(pty.slave())
            .stderr(pty.slave())
            .spawn()
            .expect("start rho mcp shell");
        let (screen, keyboard) = pty.record();
        let mut shell = Shell {
            child,
            screen,
            keyboard,
            home,
        };
        shell.wait_for("rho> ", Duration::from_secs(60));
        shell
    }

    fn screen(&self) -> String {
        self.screen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until the screen, from where it was `from` bytes long, shows
    /// `text`; returns where the match ends.
    fn wait_for_after(&mut self, from: usize, text: &str, within: Duration) -> usize {
        let until = Instant::now() + within;
        loop {
            let screen = self.screen();
            if let Some(at) = screen.get(from..).and_then(|s| s.find(text)) {
                return from + at + text.len();
            }
            if let Some(status) = self.child.try_wait().expect("wait for rho") {
                panic!("rho exited ({status}) before showing {text:?}; screen:\n{screen}");
            }
            if Instant::now() >= until {
                let _ = self.child.kill();
                panic!("no {text:?} within {within:?}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_for(&mut self, text: &str, within: Duration) -> usize {
        self.wait_for_after(0, text, within)
    }

    /// How much has been drawn so far.
    fn mark(&self) -> usize {
        self.screen().len()
    }

    fn keys(&mut self, bytes: &str) {
        self.keyboard
            .write_all(bytes.as_bytes())
            .expect("type on the terminal");
        self.keyboard.flush().expect("flush the keys");
    }

    /// Types `/quit` and waits for rho to exit.
    fn quit(mut self) -> std::process::ExitStatus {
        self.keys("/quit\r");
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for rho") {
                return status;
            }
            if Instant::now() >= until {
                let _ = self.child.kill();
                panic!("rho did not exit after /quit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

const SOON: Duration = Duration::from_secs(20);

both_executors!(
    slash_completes_commands_and_doctor_reports_each_server,
    a_tool_call_runs_and_its_result_prints_above_the_prompt,
    ctrl_c_cancels_a_long_call_and_the_shell_goes_on,
    a_form_is_answered_through_the_editor,
    history_survives_the_session,
    a_tool_the_server_adds_mid_session_is_announced,
    a_prompt_command_completes_and_prints_the_turn_or_names_what_is_missing,
);

fn slash_completes_commands_and_doctor_reports_each_server(rt: Runtime) {
    let mut shell = Shell::start(rt, "complete");
    let at = shell.mark();
    shell.keys("/do\t");
    // One candidate: inserted at once, with the space after it.
    shell.wait_for_after(at, "rho> /doctor ", SOON);
    let at = shell.mark();
    shell.keys("\r");
    shell.wait_for_after(at, "ok    everything: ready", SOON);
    // Several candidates open the menu under the line.
    let at = shell.mark();
    shell.keys("/\t");
    shell.wait_for_after(at, "/tools", SOON);
    shell.wait_for_after(at, "/quit", SOON);
    shell.keys("\x1b");
    shell.keys("\x15");
    assert!(shell.quit().success());
}

fn a_tool_call_runs_and_its_result_prints_above_the_prompt(rt: Runtime) {
    let mut shell = Shell::start(rt, "call");
    let at = shell.mark();
    shell.keys("/call everything:ec\t");
    shell.wait_for_after(at, "rho> /call everything:echo ", SOON);
    let at = shell.mark();
    shell.keys("message='hi there'\r");
    let shown = shell.wait_for_after(at, "Echo: hi there", SOON);
    // The prompt is drawn again after the result.
    shell.wait_for_after(shown, "rho> ", SOON);
    // A target that does not exist is refused with what to do.
    let at = shell.mark();
    shell.keys("/call nosuch\r");
    shell.wait_for_after(at, "no exported tool `nosuch`", SOON);
    assert!(shell.quit().success());
}

fn ctrl_c_cancels_a_long_call_and_the_shell_goes_on(rt: Runtime) {
    let mut shell = Shell::start(rt, "cancel");
    let at = shell.mark();
    shell.keys("/call everything:trigger-long-running-operation duration=60 steps=60\r");
    // Progress arrives above the prompt while the call runs.
    let progress = shell.wait_for_after(at, "… everything:trigger-long-running-operation: ", SOON);
    // A second call waits for the first.
    shell.keys("/call everything:echo message=x\r");
    shell.wait_for_after(progress, "a call is running; Ctrl-C cancels it", SOON);
    shell.keys("\x03");
    let cancelled = shell.wait_for_after(
        progress,
        "everything:trigger-long-running-operation: cancelled; the server was told to stop",
        SOON,
    );
    // The session is still usable.
    shell.keys("/call everything:echo message=after\r");
    shell.wait_for_after(cancelled, "Echo: after", SOON);
    assert!(shell.quit().success());
}

fn a_form_is_answered_through_the_editor(rt: Runtime) {
    let mut shell = Shell::start(rt, "form");
    let at = shell.mark();
    shell.keys("/call everything:trigger-elicitation-request\r");
    shell.wait_for_after(at, "── MCP server `everything` asks ──", SOON);
    let mut at = shell.wait_for_after(at, "Your full, legal name", SOON);
    shell.keys("Ada Lovelace\r");
    // Every later field is optional: Enter keeps its default or skips it,
    // until the result arrives. Each field's question ends with an empty
    // answer line drawn as the editor's prompt.
    const ASKED: &str = "\x1b[J> \r\x1b[2C";
    let until = Instant::now() + SOON;
    loop {
        let screen = shell.screen();
        if screen[at..].contains("Ada Lovelace") && screen[at..].contains("accept") {
            break;
        }
        assert!(Instant::now() < until, "no result; screen:\n{screen}");
        if let Some(found) = screen[at..].find(ASKED) {
            at += found + ASKED.len();
            shell.keys("\r");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = shell.screen();
    assert!(
        screen.contains("accept"),
        "the form was accepted:\n{screen}"
    );
    assert!(shell.quit().success());
}

fn history_survives_the_session(rt: Runtime) {
    let mut shell = Shell::start(rt, "history");
    let at = shell.mark();
    shell.keys("/tools everything\r");
    shell.wait_for_after(at, "everything:echo", SOON);
    let home = shell.home.clone();
    assert!(shell.quit().success());
    let path = home.join(".rho/shell_history");
    let text = std::fs::read_to_string(&path).expect("history written");
    assert_eq!(text, "/tools everything\n/quit\n");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&path)
            .expect("history metadata")
            .permissions(),
    );
    assert_eq!(mode & 0o077, 0, "history is the owner's only");
}

both_executors!(commands_from_a_pipe_run_in_turn_with_plain_output);

fn commands_from_a_pipe_run_in_turn_with_plain_output(rt: Runtime) {
    let dir = scratch_dir(&format!("shell-pipe-{}", rt.name()));
    let config = dir.join("rho.toml");
    std::fs::write(&config, node_server("everything", &everything_js(), &[]))
        .expect("write the config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rho"))
        .args(["--config"])
        .arg(&config)
        .args(["--runtime", rt.name(), "mcp", "shell"])
        .env("HOME", dir.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho mcp shell");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"/doctor\n/call everything:echo message=piped\n/call nosuch:tool\nhello\n")
        .expect("write the commands");
    // End of input ends the shell, as /quit does.
    let output = child.wait_with_output().expect("rho mcp shell runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let doctor = stdout.find("ok    everything: ready").expect("doctor row");
    let echo = stdout.find("Echo: piped").expect("echo result");
    let refused = stdout
        .find("no server `nosuch` is configured")
        .expect("refusal");
    assert!(doctor < echo && echo < refused, "in order:\n{stdout}");
    assert!(stdout.contains("commands start with `/`"), "{stdout}");
    // No terminal: nothing that draws a prompt line.
    assert!(!stdout.contains("\x1b["), "plain output:\n{stdout:?}");
}

fn a_tool_the_server_adds_mid_session_is_announced(rt: Runtime) {
    // The SDK 2.x fixture over stdio: `toggle-extra` adds the tool `extra`
    // and says so with tools/list_changed; added tools join only after a
    // restart, which the line says.
    let script = rho_tests::tests_dir().join("servers/fixtures/sdk2-server.js");
    let mut shell = Shell::start_with(rt, "added", &node_server("sdk2", &script, &["stdio"]));
    let at = shell.mark();
    shell.keys("/call sdk2:toggle-extra\r");
    let enabled = shell.wait_for_after(at, "extra enabled", SOON);
    shell.wait_for_after(
        enabled,
        "server `sdk2` added tool `extra`: restart to use it",
        SOON,
    );
    assert!(shell.quit().success());
}

fn a_prompt_command_completes_and_prints_the_turn_or_names_what_is_missing(rt: Runtime) {
    let mut shell = Shell::start(rt, "prompt");
    // `/mcp:` completes to the server's prompts from the lists held since
    // connect; `args-` narrows to one.
    let at = shell.mark();
    shell.keys("/mcp:everything:args-\t");
    shell.wait_for_after(at, "rho> /mcp:everything:args-prompt ", SOON);
    let at = shell.mark();
    shell.keys("city=Paris state=Texas\r");
    // The turn, not the echo of the typed line (which names Paris too).
    shell.wait_for_after(at, "weather in Paris, Texas", SOON);
    // A missing required argument is named, and nothing is sent.
    let at = shell.mark();
    shell.keys("/mcp:everything:args-prompt state=Texas\r");
    shell.wait_for_after(at, "needs argument: city", SOON);
    let at = shell.mark();
    shell.keys("/mcp:everything:nosuch\r");
    shell.wait_for_after(at, "server `everything` has no prompt `nosuch`", SOON);
    assert!(shell.quit().success());
}
