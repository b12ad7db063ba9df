//! `rho mcp shell` in a real terminal: a pseudo-terminal made here (as in
//! tests/signals.rs) is the shell's stdin, stdout and stderr, keys are
//! typed on its master side and the screen is read back from it, against
//! the real server-everything on both executors.
//!
//! What a person would see is checked on the raw terminal output, so a
//! match is a string the shell drew (escape sequences included around it,
//! never inside it: the editor draws a line's text in one piece). Printed
//! text is broken between words to fit the terminal, so a sentence is
//! also found across those breaks ([`words`]); and every session's rows
//! are checked to fit its terminal when it quits ([`Shell::quit`]). One
//! test runs the shell inside a real tmux (skipped, saying so, without
//! tmux), for what tmux keeps in its scrollback.

#![cfg(target_os = "linux")]

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::pty::{Pty, Screen};
use rho_tests::scene::Scene;
use rho_tests::{everything_js, node_server, pdf_js, scratch_dir};

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// A shell under test: rho on a pseudo-terminal, in its scene.
struct Shell {
    /// The terminal's width it started with.
    columns: u16,
    child: Child,
    screen: Screen,
    keyboard: std::fs::File,
    scene: Scene,
}

impl Shell {
    /// The pids of the shell's child processes whose command line holds
    /// `needle`, in order.
    fn children_running(&self, needle: &str) -> Vec<u32> {
        let parent = self.child.id();
        let mut pids: Vec<u32> = std::fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                // The parent pid is the second field after the command's
                // closing parenthesis.
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
                ppid == Some(parent)
                    && std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
            })
            .collect();
        pids.sort_unstable();
        pids
    }

    /// Starts `rho mcp shell` over server-everything and waits for its
    /// first prompt.
    fn start(rt: Runtime, name: &str) -> Shell {
        Shell::start_with(rt, name, &node_server("everything", &everything_js(), &[]))
    }

    /// Starts `rho mcp shell` over the servers of `config_text`.
    fn start_with(rt: Runtime, name: &str, config_text: &str) -> Shell {
        Shell::launch(rt, name, config_text, &Launch::default())
    }

    /// Starts `rho mcp shell` over the servers of `config_text`, with more
    /// to it: in a scratch directory that holds `launch.files` (the
    /// shell's workspace), with its extra arguments and environment.
    fn launch(rt: Runtime, name: &str, config_text: &str, launch: &Launch<'_>) -> Shell {
        let scene = Scene::new(RHO, &format!("shell-{name}"), rt)
            .with_config(config_text)
            .without_env(&["CI"]);
        let workspace = scene.dir().join("work");
        for (path, text) in launch.files {
            let path = workspace.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("make the dir");
            std::fs::write(path, text).expect("write a workspace file");
        }
        std::fs::create_dir_all(&workspace).expect("make the workspace");
        if let Some(prepare) = launch.prepare {
            prepare(&scene);
        }
        let columns = match launch.columns {
            0 => COLUMNS.with(std::cell::Cell::get),
            columns => columns,
        };
        let pty = Pty::sized(columns, 50);
        let child = scene
            .command()
            .args(["--runtime", rt.name(), "mcp", "shell"])
            .args(launch.args)
            .envs(launch.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&workspace)
            .stdin(pty.slave())
            .stdout(pty.slave())
            .stderr(pty.slave())
            .spawn()
            .expect("start rho mcp shell");
        let (screen, keyboard) = pty.record();
        let mut shell = Shell {
            columns,
            child,
            screen,
            keyboard,
            scene,
        };
        shell.wait_for("rho> ", Duration::from_secs(60));
        shell
    }

    fn screen(&self) -> String {
        self.screen.text()
    }

    /// Waits until the screen, from where it was `from` bytes long, shows
    /// `text`; returns where the match ends. Printed words (a `text`
    /// without control characters) may also be found across the rows the
    /// shell broke a long line into to fit the terminal, as [`words`]
    /// reads the screen; a `text` with control characters is matched
    /// byte for byte (what the editor draws).
    fn wait_for_after(&mut self, from: usize, text: &str, within: Duration) -> usize {
        let until = Instant::now() + within;
        let printed = !text.contains(char::is_control);
        loop {
            let screen = self.screen();
            let drawn = screen.get(from..).unwrap_or("");
            let exact = drawn.find(text).map(|at| at + text.len());
            let across = if printed && !text.is_empty() {
                let (shown, ends) = words_with_offsets(drawn);
                shown.find(text).map(|at| ends[at + text.len() - 1])
            } else {
                None
            };
            let found = match (exact, across) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(end) = found {
                return from + end;
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

    /// Types `/quit` and waits for rho to exit (the scene stays until
    /// the shell is dropped). Everything the session showed is checked
    /// to fit the terminal then: no row wider than it (which the terminal
    /// would break, inside a word), but for a single word wider than the
    /// whole terminal (a URL), which the shell never splits.
    fn quit(&mut self) -> std::process::ExitStatus {
        self.keys("/quit\r");
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for rho") {
                let screen = self.screen();
                let width = usize::from(self.columns);
                for row in shown_rows(&screen) {
                    let wide = row.chars().count();
                    assert!(
                        wide <= width || row.split_whitespace().count() == 1,
                        "a row of {wide} columns on a {width}-column terminal: {row:?}\n\
                         screen:\n{screen}"
                    );
                }
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

/// What `screen` shows with the shell's row breaks taken out: escape
/// sequences removed, and each break (CRs and a line feed, with the
/// blanks around it: the row's end, the next row's indent) made one
/// blank, so a sentence the shell broke between words to fit the
/// terminal reads whole again, while a word broken inside would not.
/// Blanks within a row are kept as they are.
fn words(screen: &str) -> String {
    words_with_offsets(screen).0
}

/// [`words`], and for each of its bytes where in `screen` it ends.
fn words_with_offsets(screen: &str) -> (String, Vec<usize>) {
    let mut shown = String::with_capacity(screen.len());
    let mut ends: Vec<usize> = Vec::with_capacity(screen.len());
    // In a break: blanks are the next row's indent.
    let mut breaking = false;
    let mut chars = screen.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let end = at + c.len_utf8();
        match c {
            '\x1b' => {
                if chars.next_if(|&(_, c)| c == '[').is_some() {
                    for (_, c) in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\r' | '\n' => {
                while shown.ends_with(' ') {
                    shown.pop();
                    ends.pop();
                }
                shown.push(' ');
                ends.push(end);
                breaking = true;
            }
            ' ' if breaking => {
                if let Some(last) = ends.last_mut() {
                    *last = end;
                }
            }
            c => {
                breaking = false;
                shown.push(c);
                ends.extend(std::iter::repeat_n(end, c.len_utf8()));
            }
        }
    }
    (shown, ends)
}

impl Drop for Shell {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What else a shell under test starts with.
#[derive(Default)]
struct Launch<'a> {
    /// Arguments after `mcp shell`.
    args: &'a [&'a str],
    /// Extra environment.
    env: Vec<(String, String)>,
    /// Files of the workspace (the shell's current directory):
    /// (relative path, text).
    files: &'a [(&'a str, &'a str)],
    /// The terminal's width in columns (its height is 50 rows); 0 is
    /// the test's default ([`WIDE`], or [`NARROW`] in a `_narrow` run).
    columns: u16,
    /// Run on the scene before the shell starts (files in its home).
    prepare: Option<&'a dyn Fn(&Scene)>,
}

const SOON: Duration = Duration::from_secs(20);

/// The fixture for reads that never end or fail, logs on cue and tools
/// revised mid-session.
fn fixture_config() -> String {
    let script = rho_tests::tests_dir().join("servers/fixtures/shell-fixture.js");
    node_server("fixture", &script, &[])
}

/// The fixture, holding its answers to `fixture://held` and to
/// completion/complete until the test writes `read` or `complete` in
/// the scratch directory returned with the config.
fn held_fixture_config(rt: Runtime, name: &str) -> (String, std::path::PathBuf) {
    let hold = scratch_dir(&format!(
        "shell-{name}-{}-{}",
        rt.name(),
        COLUMNS.with(std::cell::Cell::get)
    ));
    let script = rho_tests::tests_dir().join("servers/fixtures/shell-fixture.js");
    let config = node_server("fixture", &script, &[&hold.display().to_string()]);
    (config, hold)
}

/// The width of the terminal a test's shell gets when its [`Launch`]
/// names none: 200 columns, or [`NARROW`] in the `_narrow` runs that
/// [`at_two_widths!`] adds.
const WIDE: u16 = 200;
/// The narrow width every interactive test also runs at.
const NARROW: u16 = 80;

thread_local! {
    /// The default width for shells started on this test's thread.
    static COLUMNS: std::cell::Cell<u16> = const { std::cell::Cell::new(WIDE) };
}

/// Like `both_executors!`, and each test once more on a narrow terminal
/// (`smol_narrow`, `blocking_narrow`): every interactive path is tested at
/// two widths.
macro_rules! at_two_widths {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                use super::{COLUMNS, NARROW};
                use rho_tests::CliRuntime;
                #[test]
                fn smol() {
                    super::$name(CliRuntime::Smol);
                }
                #[test]
                fn blocking() {
                    super::$name(CliRuntime::Blocking);
                }
                #[test]
                fn smol_narrow() {
                    COLUMNS.with(|c| c.set(NARROW));
                    super::$name(CliRuntime::Smol);
                }
                #[test]
                fn blocking_narrow() {
                    COLUMNS.with(|c| c.set(NARROW));
                    super::$name(CliRuntime::Blocking);
                }
            }
        )*
    };
}

// These loop over both widths themselves.
both_executors!(
    the_start_line_form_keys_results_and_errors_break_between_words,
    form_answers_are_one_key_each_and_say_what_was_sent,
    tools_show_parameters_and_call_completes_argument_names,
    mcp_lists_prompts_and_resources_and_the_start_shows_counts_only,
    call_takes_both_forms_and_near_misses_say_the_closest_name,
    reconnect_starts_one_server_again_and_leaves_the_others_alone,
    a_history_that_is_a_fifo_is_not_read_and_the_shell_starts,
    a_url_request_is_asked_through_the_editor_and_opened_only_on_yes,
);

at_two_widths!(
    printed_lines_fit_the_terminal_and_break_between_words,
    editing_tab_enter_picks_ctrl_l_clears_a_resize_redraws_and_a_key_draws_once,
    slash_completes_commands_and_doctor_reports_each_server,
    a_tool_call_runs_and_its_result_prints_above_the_prompt,
    ctrl_c_cancels_a_long_call_and_the_shell_goes_on,
    a_form_is_answered_through_the_editor,
    history_survives_the_session,
    a_tool_the_server_adds_mid_session_is_announced,
    a_prompt_command_completes_and_prints_the_turn_or_names_what_is_missing,
);

/// `/reconnect <server>` closes that server's session and starts it
/// again (a new process), the other server keeps its own, and calls reach
/// both afterwards; a near miss says the closest name. At two widths.
fn reconnect_starts_one_server_again_and_leaves_the_others_alone(rt: Runtime) {
    for columns in [60, 200] {
        let launch = Launch {
            columns,
            ..Launch::default()
        };
        let config = format!(
            "{}{}",
            node_server("everything", &everything_js(), &[]),
            node_server("other", &everything_js(), &[])
        );
        let mut shell = Shell::launch(rt, &format!("reconnect-{columns}"), &config, &launch);
        let before = shell.children_running("index.js");
        assert_eq!(before.len(), 2, "{before:?}");
        let at = shell.mark();
        shell.keys("/reconnect everything\r");
        shell.wait_for_after(
            at,
            "closed the session of server `everything` and started it again; server `everything` is ready",
            SOON,
        );
        let after = shell.children_running("index.js");
        assert_eq!(after.len(), 2, "{after:?}");
        let kept: Vec<_> = after.iter().filter(|pid| before.contains(pid)).collect();
        assert_eq!(
            kept.len(),
            1,
            "one process kept, one new: {before:?} → {after:?}"
        );
        let at = shell.mark();
        shell.keys("/call everything:echo message=again\r");
        shell.wait_for_after(at, "Echo: again", SOON);
        let at = shell.mark();
        shell.keys("/call other:echo message=kept\r");
        shell.wait_for_after(at, "Echo: kept", SOON);
        let at = shell.mark();
        shell.keys("/reconnect everythin\r");
        shell.wait_for_after(at, "did you mean `everything`?", SOON);
        assert!(shell.quit().success());
    }
}

/// `/call` takes `<server> <tool>` as `rho mcp call` does, besides
/// `<server>:<tool>` and the exported name; a near miss of a command, a
/// server or a tool says the closest name. At two widths.
fn call_takes_both_forms_and_near_misses_say_the_closest_name(rt: Runtime) {
    for columns in [60, 200] {
        let launch = Launch {
            columns,
            ..Launch::default()
        };
        let config = node_server("everything", &everything_js(), &[]);
        let mut shell = Shell::launch(rt, &format!("forms-{columns}"), &config, &launch);
        let at = shell.mark();
        shell.keys("/call everything get-sum a=2 b=3\r");
        shell.wait_for_after(at, "The sum of 2 and 3 is 5", SOON);
        let at = shell.mark();
        shell.keys("/call everything:get-sum a=4 b=3\r");
        shell.wait_for_after(at, "The sum of 4 and 3 is 7", SOON);
        let at = shell.mark();
        shell.keys("/call everything get-summ a=2\r");
        shell.wait_for_after(at, "did you mean `get-sum`?", SOON);
        let at = shell.mark();
        shell.keys("/call everythng echo\r");
        shell.wait_for_after(at, "did you mean `everything`?", SOON);
        let at = shell.mark();
        shell.keys("/toosl\r");
        shell.wait_for_after(at, "did you mean `/tools`?", SOON);
        let at = shell.mark();
        shell.keys("/call everything\r");
        shell.wait_for_after(at, "name one of server `everything`'s tools: ", SOON);
        let at = shell.mark();
        shell.keys("/mcp:everything:simple-promt\r");
        shell.wait_for_after(at, "did you mean `simple-prompt`?", SOON);
        assert!(shell.quit().success());
    }
}

/// The shell starts with the servers' table and one line of counts (not
/// a dump of every tool); `/mcp` lists the tools, then each server's
/// prompts and resources. At two widths.
fn mcp_lists_prompts_and_resources_and_the_start_shows_counts_only(rt: Runtime) {
    for columns in [60, 200] {
        let launch = Launch {
            columns,
            ..Launch::default()
        };
        let config = node_server("everything", &everything_js(), &[]);
        let mut shell = Shell::launch(rt, &format!("mcp-{columns}"), &config, &launch);
        let start = shell.screen();
        assert!(start.contains("SERVER"), "{start}");
        assert!(
            words(&start).contains("prompt(s)") && words(&start).contains("/mcp lists them"),
            "{start}"
        );
        assert!(
            !words(&start).contains("Tools ("),
            "no tool dump at start:\n{start}"
        );
        let at = shell.mark();
        shell.keys("/mcp\r");
        let tools = shell.wait_for_after(at, "Tools (", SOON);
        let prompts = shell.wait_for_after(tools, "  prompts (", SOON);
        shell.wait_for_after(prompts, "simple-prompt", SOON);
        let resources = shell.wait_for_after(prompts, "  resources (", SOON);
        shell.wait_for_after(resources, "demo://resource/static/document/", SOON);
        assert!(shell.quit().success());
    }
}

/// `/tools` shows each tool's parameters (name, type, required,
/// description, allowed values), and `/call` completes argument names and
/// enum values. At two widths.
fn tools_show_parameters_and_call_completes_argument_names(rt: Runtime) {
    for columns in [60, 200] {
        let launch = Launch {
            columns,
            ..Launch::default()
        };
        let config = node_server("everything", &everything_js(), &[]);
        let mut shell = Shell::launch(rt, &format!("params-{columns}"), &config, &launch);
        let at = shell.mark();
        shell.keys("/tools everything\r");
        let sum = shell.wait_for_after(at, "(everything:get-sum)", SOON);
        shell.wait_for_after(sum, "    a (number, required): First number", SOON);
        // Argument names after the target, in either form; one is inserted.
        let at = shell.mark();
        shell.keys("/call everything get-sum \t");
        shell.wait_for_after(at, "a=", SOON);
        shell.wait_for_after(at, "b=", SOON);
        shell.keys("\x1b\x15");
        let at = shell.mark();
        shell.keys("/call everything:get-sum b=2 \t");
        shell.wait_for_after(at, "b=2 a=", SOON);
        shell.keys("3\r");
        shell.wait_for_after(at, "The sum of 3 and 2 is 5", SOON);
        assert!(shell.quit().success());
    }
}

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
    shell.wait_for_after(at, "no tool or server `nosuch`", SOON);
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
    shell.wait_for_after(
        at,
        "── MCP server `everything` asks during `trigger-elicitation-request` ──",
        SOON,
    );
    let mut at = shell.wait_for_after(at, "Your full, legal name", SOON);
    shell.keys("Ada Lovelace\r");
    // Every later field is optional: Enter keeps its default or skips it,
    // until the result arrives. Each field's question ends with an empty
    // answer line drawn as the editor's prompt.
    const ASKED: &str = "\x1b[2K> \x1b[J\r\x1b[2C";
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

/// In a form, decline, cancel and skip are each one key, optional fields
/// are marked, and the form says which answer the server was sent; Ctrl-C
/// cancels the form and the call, so no result of it prints. At two widths.
fn form_answers_are_one_key_each_and_say_what_was_sent(rt: Runtime) {
    for columns in [60, 200] {
        let launch = Launch {
            columns,
            ..Launch::default()
        };
        let config = node_server("everything", &everything_js(), &[]);
        let mut shell = Shell::launch(rt, &format!("form-keys-{columns}"), &config, &launch);
        // Ctrl-D declines: the server is told `decline`, the call goes on.
        let at = shell.mark();
        shell.keys("/call everything:trigger-elicitation-request\r");
        let asked = shell.wait_for_after(at, "Your full, legal name", SOON);
        shell.wait_for_after(
            at,
            "Ctrl-D declines, Ctrl-C cancels the form and the call",
            SOON,
        );
        shell.keys("\x04");
        let sent = shell.wait_for_after(asked, "→ sent to the server: decline", SOON);
        shell.wait_for_after(
            sent,
            "User declined to provide the requested information",
            SOON,
        );
        // Ctrl-C cancels: the server is told `cancel` and the call stops.
        let at = shell.mark();
        shell.keys("/call everything:trigger-elicitation-request\r");
        let asked = shell.wait_for_after(at, "Your full, legal name", SOON);
        shell.keys("\x03");
        let cancelled_at = asked;
        let sent = shell.wait_for_after(asked, "→ sent to the server: cancel", SOON);
        shell.wait_for_after(
            sent,
            "everything:trigger-elicitation-request: cancelled",
            SOON,
        );
        // An optional field is marked, and Enter skips it.
        let at = shell.mark();
        shell.keys("/call everything:trigger-elicitation-request\r");
        shell.wait_for_after(at, "Your full, legal name", SOON);
        shell.keys("Ada\r");
        shell.wait_for_after(at, "(optional: Enter skips it)", SOON);
        shell.keys("\x04");
        shell.wait_for_after(at, "→ sent to the server: decline", SOON);
        let screen = shell.screen();
        assert!(
            !words(&screen[cancelled_at..]).contains("User cancelled"),
            "a cancelled call's result never prints:\n{screen}"
        );
        assert!(shell.quit().success());
    }
}

/// A server's URL request is asked through the editor: the server, the
/// call, the host and the whole URL show, and the browser opener (an
/// `xdg-open` on PATH that records what it is given) gets only the URL
/// the person said yes to. Two servers on the Python SDK 1.x ask for two
/// URLs: the first is declined, the second opened; the opener's record,
/// once it holds the second, holds nothing else (an opening of the first
/// would have come before).
fn a_url_request_is_asked_through_the_editor_and_opened_only_on_yes(rt: Runtime) {
    let (python, sdk) = rho_tests::interop_python("mcp1");
    let server = |id: &str, url: &str| {
        format!(
            "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"{}\", \"{url}\"]\nstartup_timeout_secs = 30\n",
            python.display(),
            sdk.join("url_server.py").display()
        )
    };
    let config = format!(
        "{}{}",
        server("first", "https://first.example/connect"),
        server("second", "https://second.example/connect")
    );
    let dir = scratch_dir(&format!("shell-url-opener-{rt:?}"));
    let opened = dir.join("opened.txt");
    let _ = std::fs::remove_file(&opened);
    let path = rho_tests::browser_opener(
        &dir,
        &format!("printf '%s\\n' \"$*\" >>'{}'", opened.display()),
    );
    let launch = Launch {
        env: vec![("PATH".into(), path)],
        ..Launch::default()
    };
    let mut shell = Shell::launch(rt, "url", &config, &launch);
    let at = shell.mark();
    shell.keys("/call first:connect\r");
    shell.wait_for_after(
        at,
        "── MCP server `first` asks during `connect` to open a URL in your browser ──",
        SOON,
    );
    shell.wait_for_after(at, "host: first.example", SOON);
    shell.wait_for_after(at, "URL:  https://first.example/connect", SOON);
    shell.wait_for_after(at, "Open it in your browser?", SOON);
    shell.keys("n\r");
    shell.wait_for_after(at, "not opened; sent to the server: decline", SOON);
    shell.wait_for_after(at, "action=decline", SOON);
    let at = shell.mark();
    shell.keys("/call second:connect\r");
    shell.wait_for_after(at, "Open it in your browser?", SOON);
    shell.keys("y\r");
    shell.wait_for_after(
        at,
        "opened in your browser; sent to the server: accept",
        SOON,
    );
    shell.wait_for_after(at, "action=accept", SOON);
    let until = Instant::now() + SOON;
    let record = loop {
        let record = std::fs::read_to_string(&opened).unwrap_or_default();
        if record.contains("second.example") || Instant::now() > until {
            break record;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(record, "https://second.example/connect\n");
    assert!(shell.quit().success());
}

/// Types one command, quits, and checks that the history file holds
/// both lines; returns its path (in the shell's scene, which lives as
/// long as the shell).
fn one_command_then_quit_is_the_history(shell: &mut Shell) -> std::path::PathBuf {
    let at = shell.mark();
    shell.keys("/tools everything\r");
    shell.wait_for_after(at, "everything:echo", SOON);
    assert!(shell.quit().success());
    let path = shell.scene.home().join(".rho/shell_history");
    let text = std::fs::read_to_string(&path).expect("history written");
    assert_eq!(text, "/tools everything\n/quit\n");
    path
}

fn history_survives_the_session(rt: Runtime) {
    let mut shell = Shell::start(rt, "history");
    let path = one_command_then_quit_is_the_history(&mut shell);
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&path)
            .expect("history metadata")
            .permissions(),
    );
    assert_eq!(mode & 0o077, 0, "history is the owner's only");
    let dir = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(path.parent().expect("~/.rho"))
            .expect("~/.rho metadata")
            .permissions(),
    );
    assert_eq!(dir & 0o077, 0, "so is ~/.rho");
}

/// A history that is not a regular file (a FIFO no one writes, which an
/// open would wait on for ever) is not read: the shell starts without
/// history, works, and writes its own on the way out.
fn a_history_that_is_a_fifo_is_not_read_and_the_shell_starts(rt: Runtime) {
    let fifo = |scene: &Scene| {
        let rho = scene.home().join(".rho");
        std::fs::create_dir_all(&rho).expect("make ~/.rho");
        rho_tests::mkfifo(&rho.join("shell_history"));
    };
    let mut shell = Shell::launch(
        rt,
        "history-fifo",
        &node_server("everything", &everything_js(), &[]),
        &Launch {
            prepare: Some(&fifo),
            ..Launch::default()
        },
    );
    one_command_then_quit_is_the_history(&mut shell);
}

/// `rho mcp shell` with `commands` written to its piped stdin, which is
/// then closed (the end of input ends the shell, as `/quit` does).
fn fed_shell(
    scene: &Scene,
    rt: Runtime,
    stdout: impl Into<Stdio>,
    stderr: impl Into<Stdio>,
    commands: &[u8],
) -> std::process::Child {
    let mut child = scene
        .command()
        .args(["--runtime", rt.name(), "mcp", "shell"])
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("start rho mcp shell");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(commands)
        .expect("write the commands");
    child
}

both_executors!(commands_from_a_pipe_run_in_turn_with_plain_output);

fn commands_from_a_pipe_run_in_turn_with_plain_output(rt: Runtime) {
    let scene = Scene::new(RHO, "shell-pipe", rt).with_config(&node_server(
        "everything",
        &everything_js(),
        &[],
    ));
    let child = fed_shell(
        &scene,
        rt,
        Stdio::piped(),
        Stdio::piped(),
        b"/doctor\n/call everything:echo message=piped\n/call nosuch:tool\nhello\n",
    );
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

both_executors!(tools_and_calls_read_parameters_given_by_ref);

/// `/tools` shows a parameter given by `$ref` (alone or as an `anyOf`
/// member) as the type it points at, `/call` types a `key=value` word
/// by it, and a `/call` with no words names the missing required ones.
/// The server is the `$ref` fixture on the TypeScript SDK 2.x.
fn tools_and_calls_read_parameters_given_by_ref(rt: Runtime) {
    rho_tests::node_modules();
    let script = rho_tests::tests_dir().join("servers/fixtures/refs-server.js");
    let scene = Scene::new(RHO, "shell-refs", rt).with_config(&node_server("refs", &script, &[]));
    let child = fed_shell(
        &scene,
        rt,
        Stdio::piped(),
        Stdio::piped(),
        b"/tools refs\n/call refs:post-page\n/call refs:post-page parent='{\"page_id\":\"abc\"}' title=42\n",
    );
    let output = child.wait_with_output().expect("rho mcp shell runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in [
        "    parent (object | string, required)\n",
        "    title (string, required): The page's title\n",
        "    status (string): one of draft, published\n",
        "    options (object | null)\n",
        "needs arguments: parent, title",
        r#"{"parent":{"page_id":"abc"},"title":"42"}"#,
    ] {
        assert!(stdout.contains(line), "no {line:?} in\n{stdout}");
    }
}

both_executors!(tools_shows_the_app_view_and_marks_app_only_tools_which_are_not_called);

/// `/tools` against an MCP Apps server (`@modelcontextprotocol/server-pdf`):
/// an exported tool shows the view that renders it, a tool for the app
/// only is marked so with the reason and is not exported, and `/call`
/// refuses it, saying why.
fn tools_shows_the_app_view_and_marks_app_only_tools_which_are_not_called(rt: Runtime) {
    let scene = Scene::new(RHO, "shell-mcp-app", rt).with_config(&node_server(
        "pdf",
        &pdf_js(),
        &["--stdio"],
    ));
    let child = fed_shell(
        &scene,
        rt,
        Stdio::piped(),
        Stdio::piped(),
        b"/tools pdf\n/call pdf save_pdf url=/nonexistent/x.pdf data=eA==\n",
    );
    let output = child.wait_with_output().expect("rho mcp shell runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    let display = stdout
        .find("mcp__pdf__display_pdf  (pdf:display_pdf)")
        .unwrap_or_else(|| panic!("display_pdf row:\n{stdout}"));
    assert!(
        stdout[display..].starts_with(
            "mcp__pdf__display_pdf  (pdf:display_pdf)  Display PDF\n    app view: ui://pdf-viewer/mcp-app.html\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("pdf:save_pdf  (app-only, not exported)  Save PDF\n    its `_meta.ui.visibility` is [\"app\"]"),
        "{stdout}"
    );
    assert!(!stdout.contains("mcp__pdf__save_pdf"), "{stdout}");
    assert!(
        stdout.contains("tool `save_pdf` of server `pdf` is not exported"),
        "{stdout}"
    );
}

both_executors!(printed_lines_are_broken_to_fit_only_on_a_terminal);

/// With its commands piped in, the shell prints plainly, and breaks long
/// lines to fit only when stdout is a terminal: into a pipe every line
/// goes whole, for the script that reads it.
fn printed_lines_are_broken_to_fit_only_on_a_terminal(rt: Runtime) {
    const COUNTS: &str = "/mcp lists them, /tools [server] shows the tools, /help the commands";
    const ERROR: &str = "MCP error -32602: Input validation error: Invalid arguments for tool echo: Invalid input: expected string, received undefined at message";
    let scene = Scene::new(RHO, "shell-plain-wrap", rt).with_config(&node_server(
        "everything",
        &everything_js(),
        &[],
    ));
    // A JSON object is sent as given (no words would be refused by rho,
    // naming `message`): the server's long refusal is the line to break.
    let commands = b"/call everything:echo {}\n";
    // Into a pipe: whole lines.
    let child = fed_shell(&scene, rt, Stdio::piped(), Stdio::piped(), commands);
    let output = child.wait_with_output().expect("rho mcp shell runs");
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for whole in [COUNTS, ERROR] {
        assert!(
            stdout.lines().any(|line| line.contains(whole)),
            "not on one line: {whole:?}\n{stdout}"
        );
    }
    // Onto a 60-column terminal (stdin still a pipe): broken between
    // words to fit.
    let pty = Pty::sized(60, 50);
    let mut child = fed_shell(&scene, rt, pty.slave(), pty.slave(), commands);
    let (mut screen, _keyboard) = pty.record();
    assert!(child.wait().expect("rho mcp shell runs").success());
    let shown = screen
        .closed(SOON)
        .unwrap_or_else(|so_far| panic!("the terminal stayed open:\n{so_far}"));
    assert_rows_fit(&shown, 60, "plain output on a terminal");
    for whole in [COUNTS, ERROR] {
        assert!(words(&shown).contains(whole), "{whole:?} in {shown:?}");
    }
}

both_executors!(startup_log_lines_break_between_words_too);

/// Log lines written while the servers start, before the prompt line is
/// up (`--verbose`: rho's debug lines, with server text in them), are
/// broken to fit the terminal like everything after ([`Shell::quit`]
/// checks every row).
fn startup_log_lines_break_between_words_too(rt: Runtime) {
    let launch = Launch {
        args: &["--verbose"],
        columns: 80,
        ..Launch::default()
    };
    let config = node_server("everything", &everything_js(), &[]);
    let mut shell = Shell::launch(rt, "startup-logs", &config, &launch);
    let start = shell.screen();
    let before_prompt = &start[..start.find("rho> ").expect("the prompt")];
    assert!(
        before_prompt.contains("DEBUG"),
        "debug lines at the start:\n{start}"
    );
    assert!(shell.quit().success());
}

both_executors!(typing_after_ctrl_l_adds_nothing_to_the_scrollback_of_tmux);

/// A tmux server of a test's own (its socket in the scene), killed when
/// dropped.
struct Tmux {
    socket: std::path::PathBuf,
}

impl Tmux {
    /// `tmux -S <socket> args...`, its output.
    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux");
        assert!(output.status.success(), "tmux {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// How many lines the pane's scrollback holds.
    fn history(&self) -> usize {
        self.run(&["display-message", "-p", "-t", "rho", "#{history_size}"])
            .trim()
            .parse()
            .expect("a number of lines")
    }

    /// The pane's screen, row by row.
    fn capture(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "rho"])
    }

    /// Waits until the pane shows `text`.
    fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?}"), |screen| screen.contains(text))
    }

    /// Waits until the pane's screen is as `ready` says (`what`, for the
    /// failure).
    fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + SOON;
        loop {
            let screen = self.capture();
            if ready(&screen) {
                return screen;
            }
            assert!(Instant::now() < until, "no {what} in the pane:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// After Ctrl-L the line is at the top of the screen; a redraw that
/// erased below from there would be a whole-screen clear to tmux, which
/// keeps a copy of the screen in its scrollback each time. Typing after
/// Ctrl-L, in a real tmux, adds nothing to the scrollback, and the line
/// shows as typed, once.
///
/// The scrollback is read when the pane shows a state only the last key
/// could bring: tmux takes the shell's output in order, and the shell
/// draws key after key, so by then every drawing before it is counted.
fn typing_after_ctrl_l_adds_nothing_to_the_scrollback_of_tmux(rt: Runtime) {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (the test runs the shell inside tmux)");
        return;
    }
    let scene = Scene::new(RHO, "shell-tmux", rt)
        .with_config(&node_server("everything", &everything_js(), &[]))
        .without_env(&["CI", "TMUX"]);
    let tmux = Tmux {
        socket: scene.dir().join("tmux.sock"),
    };
    let rho = scene.command();
    let mut start = scene.program("tmux");
    start
        .arg("-S")
        .arg(&tmux.socket)
        .args(["-f", "/dev/null", "new-session", "-d", "-s", "rho"])
        .args(["-x", "100", "-y", "30", "--"])
        .arg(rho.get_program())
        .args(rho.get_args())
        .args(["--runtime", rt.name(), "mcp", "shell"])
        .current_dir(scene.dir());
    let started = start.output().expect("start tmux");
    assert!(started.status.success(), "tmux new-session: {started:?}");
    tmux.wait_for("rho>");

    tmux.run(&["send-keys", "-t", "rho", "C-l"]);
    // Ctrl-L puts the line at the top (a row's trailing blanks are not
    // captured: `rho>` is the bare prompt).
    tmux.wait_until("line at the top", |screen| screen.starts_with("rho>\n"));
    let before = tmux.history();
    // Typed, a Backspace, and one key more: the line it ends with was
    // never on the screen before that last key.
    let typed = "hello there, tmux!!";
    for key in typed.chars() {
        tmux.run(&["send-keys", "-t", "rho", "-l", &key.to_string()]);
        std::thread::sleep(Duration::from_millis(20));
    }
    tmux.run(&["send-keys", "-t", "rho", "BSpace"]);
    std::thread::sleep(Duration::from_millis(20));
    tmux.run(&["send-keys", "-t", "rho", "-l", "?"]);
    let line = format!("{}?", &typed[..typed.len() - 1]);
    let screen = tmux.wait_for(&format!("rho> {line}\n"));
    let after = tmux.history();
    assert!(
        after <= before + 1,
        "{} keys after Ctrl-L put {} lines in tmux's scrollback (from {before} to {after}):\n{screen}",
        typed.len() + 2,
        after - before
    );
    assert_eq!(
        screen.lines().next(),
        Some(format!("rho> {line}").as_str()),
        "{screen}"
    );
    assert_eq!(screen.matches("rho>").count(), 1, "{screen}");

    // A palette under the line (`@` lists resources) is drawn below it
    // and erased when it closes, still without a copy in the scrollback.
    for key in [" ", "@", "d", "e"] {
        tmux.run(&["send-keys", "-t", "rho", "-l", key]);
        std::thread::sleep(Duration::from_millis(20));
    }
    let filled = |screen: &str| screen.lines().filter(|row| !row.trim().is_empty()).count();
    let screen = tmux.wait_until("palette under the line", |screen| {
        screen.starts_with(&format!("rho> {line} @de")) && filled(screen) > 1
    });
    assert!(screen.contains("demo://"), "{screen}");
    tmux.run(&["send-keys", "-t", "rho", "Escape"]);
    // (Closed is the last key's doing: the palette was open after the
    // keys before it.)
    let screen = tmux.wait_until("closed palette", |screen| filled(screen) == 1);
    assert_eq!(
        screen.lines().next(),
        Some(format!("rho> {line} @de").as_str()),
        "{screen}"
    );
    let end = tmux.history();
    assert!(
        end <= before + 1,
        "the palette put {} lines in tmux's scrollback:\n{screen}",
        end - before
    );
    tmux.run(&["send-keys", "-t", "rho", "C-u", "/quit", "Enter"]);
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
        "server `sdk2` added tool `extra`: `/reconnect sdk2` to use it",
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

at_two_widths!(
    a_prompt_argument_gets_suggestions_from_the_server_as_it_is_typed,
    at_attaches_a_resource_that_reads_and_enter_prints_the_message,
    a_read_shows_reading_until_the_server_answers_and_typing_goes_on,
    backspace_on_a_resource_being_read_cancels_the_read_and_enter_waits_for_it,
    a_read_that_fails_removes_the_attachment_and_says_why,
    an_attachment_that_changes_is_read_again_before_the_line_is_sent,
    revised_and_withdrawn_tools_are_said_and_marked,
    server_logs_show_from_the_level_chosen_with_log_level,
    a_command_line_takes_no_attachments,
    keystrokes_typed_while_a_suggestion_is_asked_cost_no_more_requests,
);

fn a_prompt_argument_gets_suggestions_from_the_server_as_it_is_typed(rt: Runtime) {
    let mut shell = Shell::start(rt, "suggest");
    // `/mcp:everything:` and Tab: the server's prompts, from the lists
    // held since connect.
    let at = shell.mark();
    shell.keys("/mcp:everything:\t");
    shell.wait_for_after(at, "\x1b[7m  /mcp:everything:", SOON);
    shell.wait_for_after(
        at,
        "  /mcp:everything:completable-prompt   department (required), name (required)",
        SOON,
    );
    shell.wait_for_after(at, "  /mcp:everything:simple-prompt ", SOON);
    shell.keys("\x1b\x15");
    // `department=`: the server's four departments arrive under the line,
    // none highlighted, while the line stays as typed.
    let at = shell.mark();
    shell.keys("/mcp:everything:completable-prompt department=");
    shell.wait_for_after(
        at,
        "\n  Engineering\r\r\n  Sales\r\r\n  Marketing\r\r\n  Support",
        SOON,
    );
    // Narrowed as typed; Tab on the one left picks it.
    let at = shell.mark();
    shell.keys("En");
    shell.wait_for_after(at, "department=En\x1b[J\r\r\n  Engineering\x1b[1A", SOON);
    let at = shell.mark();
    shell.keys("\t");
    shell.wait_for_after(
        at,
        "rho> /mcp:everything:completable-prompt department=Engineering",
        SOON,
    );
    // `name=` is completed in the context of the department already typed
    // (the server narrows by `context.arguments`).
    let at = shell.mark();
    shell.keys(" name=");
    shell.wait_for_after(at, "\n  Alice\r\r\n  Bob\r\r\n  Charlie", SOON);
    // Tab highlights the first row, Down the next, Enter picks it: the
    // value alone is replaced.
    let at = shell.mark();
    shell.keys("\t\x1b[B");
    shell.wait_for_after(at, "\x1b[7m  Bob\x1b[0m", SOON);
    let at = shell.mark();
    shell.keys("\r");
    shell.wait_for_after(
        at,
        "rho> /mcp:everything:completable-prompt department=Engineering name=Bob",
        SOON,
    );
    let at = shell.mark();
    shell.keys("\r");
    shell.wait_for_after(
        at,
        "Please promote Bob to the head of the Engineering team.",
        SOON,
    );
    assert!(shell.quit().success());
}

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";

fn at_attaches_a_resource_that_reads_and_enter_prints_the_message(rt: Runtime) {
    let mut shell = Shell::launch(
        rt,
        "attach",
        &node_server("everything", &everything_js(), &[]),
        &Launch {
            files: &[("notes/architecture-notes.txt", "mine")],
            ..Launch::default()
        },
    );
    // Resources first, with their server and name; workspace files after.
    let at = shell.mark();
    shell.keys("summarize @architecture");
    let row = shell.wait_for_after(
        at,
        &format!("\n  {ARCHITECTURE}  everything · architecture.md"),
        SOON,
    );
    // (Notes start in one column, wherever the widest row puts it.)
    let file = shell.wait_for_after(row, "\n  @notes/architecture-notes.txt ", SOON);
    let rest = shell.screen()[file..].trim_start_matches(' ').to_owned();
    assert!(rest.starts_with("file"), "{rest:?}");
    let at = shell.mark();
    shell.keys("\t\r");
    // The person goes on typing at once; the read ends with the line as
    // typed and the attachment read, however soon the server answered.
    // (The `· reading` label a read shows while it runs is pinned with a
    // read the fixture holds: a server this quick may answer before it
    // is ever drawn. On a narrow terminal the line scrolls sideways to
    // the cursor, so only its end is sure to be drawn.)
    shell.keys("please");
    shell.wait_for_after(at, &format!("[resource: {ARCHITECTURE}] please"), SOON);
    let at = shell.mark();
    shell.keys("\r");
    let head = shell.wait_for_after(
        at,
        "the message a model would get (there is no model here)",
        SOON,
    );
    let text = shell.wait_for_after(head, "summarize please", SOON);
    let body = shell.wait_for_after(
        text,
        &format!("── [resource: {ARCHITECTURE}] from server `everything` ──"),
        SOON,
    );
    shell.wait_for_after(body, "Architecture", SOON);
    // A workspace file is written as `@path`, unchanged.
    let at = shell.mark();
    shell.keys("@notes\t");
    shell.wait_for_after(at, "rho> @notes/architecture-notes.txt ", SOON);
    shell.keys("\x15");
    assert!(shell.quit().success());
}

/// A resource being read shows `· reading` in the line until the server
/// answers, keys go on into the line meanwhile, and the answer marks the
/// attachment read where it is, the typing after it kept. The fixture
/// holds the read until the test releases it, so the label is sure to be
/// drawn before the answer.
fn a_read_shows_reading_until_the_server_answers_and_typing_goes_on(rt: Runtime) {
    let (config, hold) = held_fixture_config(rt, "held-read");
    let mut shell = Shell::start_with(rt, "held-read", &config);
    let at = shell.mark();
    shell.keys("see @held");
    shell.wait_for_after(at, "\n  fixture://held  fixture · held", SOON);
    let at = shell.mark();
    shell.keys("\t");
    let reading = shell.wait_for_after(at, "rho> see [resource: fixture://held · reading] ", SOON);
    shell.keys("please");
    shell.wait_for_after(
        reading,
        "rho> see [resource: fixture://held · reading] please",
        SOON,
    );
    std::fs::write(hold.join("read"), "").expect("release the read");
    shell.wait_for_after(reading, "rho> see [resource: fixture://held] please", SOON);
    let at = shell.mark();
    shell.keys("\r");
    let text = shell.wait_for_after(at, "see please", SOON);
    let body = shell.wait_for_after(
        text,
        "── [resource: fixture://held] from server `fixture` ──",
        SOON,
    );
    shell.wait_for_after(body, "the held body", SOON);
    assert!(shell.quit().success());
}

fn backspace_on_a_resource_being_read_cancels_the_read_and_enter_waits_for_it(rt: Runtime) {
    let mut shell = Shell::start_with(rt, "cancel-read", &fixture_config());
    let at = shell.mark();
    shell.keys("@slow");
    shell.wait_for_after(at, "\n  fixture://slow  fixture · slow", SOON);
    let at = shell.mark();
    shell.keys("\t");
    shell.wait_for_after(at, "rho> [resource: fixture://slow · reading] ", SOON);
    // Enter is refused while the read runs; the line stays.
    let at = shell.mark();
    shell.keys("\r");
    let refused = shell.wait_for_after(at, "a resource is still being read", SOON);
    shell.wait_for_after(refused, "rho> [resource: fixture://slow · reading] ", SOON);
    // Backspace over the space, then over the attachment: the read is
    // cancelled and the server told.
    let at = shell.mark();
    shell.keys("\x7f\x7f");
    shell.wait_for_after(
        at,
        "the read of `fixture://slow` from server `fixture` was cancelled; the server was told to stop",
        SOON,
    );
    let at = shell.mark();
    shell.keys("/call fixture:cancelled-reads\r");
    let echoed = shell.wait_for_after(at, "rho> /call fixture:cancelled-reads", SOON);
    shell.wait_for_after(echoed, "\x1b[2Kfixture://slow", SOON);
    assert!(shell.quit().success());
}

fn a_read_that_fails_removes_the_attachment_and_says_why(rt: Runtime) {
    let mut shell = Shell::start_with(rt, "failed-read", &fixture_config());
    let at = shell.mark();
    shell.keys("see @broken");
    shell.wait_for_after(at, "\n  fixture://broken  fixture · broken", SOON);
    shell.keys("\t");
    let said = shell.wait_for_after(
        at,
        "could not read `fixture://broken` from server `fixture`: ",
        SOON,
    );
    let why = shell.wait_for_after(said, "fixture://broken is broken on purpose", SOON);
    shell.wait_for_after(why, "; the attachment was removed", SOON);
    // The line is left without it, and Enter is not refused.
    shell.wait_for_after(why, "rho> see ", SOON);
    let at = shell.mark();
    shell.keys("\r");
    shell.wait_for_after(at, "commands start with `/`", SOON);
    assert!(shell.quit().success());
}

/// The fixture's record of 2025 subscribe/unsubscribe requests, once it
/// reads `want` (waited for: the unsubscribe goes on a thread of its own).
fn wait_record(record: &std::path::Path, want: &str) {
    let until = Instant::now() + SOON;
    loop {
        let seen = std::fs::read_to_string(record).unwrap_or_default();
        if seen == want {
            return;
        }
        assert!(
            Instant::now() < until,
            "the record never read {want:?}; last: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Types `<typed>@counter`, picks `watch://counter` from the palette and
/// waits until it is read.
fn attach_counter(shell: &mut Shell, typed: &str) {
    let at = shell.mark();
    shell.keys(&format!("{typed}@counter"));
    shell.wait_for_after(at, "\n  watch://counter  watched · counter", SOON);
    let at = shell.mark();
    shell.keys("\t");
    shell.wait_for_after(
        at,
        &format!("rho> {typed}[resource: watch://counter] "),
        SOON,
    );
}

/// An `@` attachment of a server that offers `resources.subscribe` is
/// subscribed to; when the server says it changed (the fixture bumps on
/// SIGUSR2), the shell says so and reads it again, and the line sent
/// carries the new body, not the one read when it was picked. The
/// subscription is let go when the line is sent, when the attachment is
/// removed, and when the shell exits with one on the line (the 2025
/// fixture records each request). Both eras.
fn an_attachment_that_changes_is_read_again_before_the_line_is_sent(rt: Runtime) {
    for era in ["2025", "2026"] {
        let record = scratch_dir(&format!("shell-watched-{era}-{}", rt.name())).join("record");
        let script = rho_tests::tests_dir().join("servers/fixtures/watched.js");
        let mut config = node_server("watched", &script, &["stdio"]);
        let era_env = if era == "2025" {
            ", WATCH_ERA = \"2025\""
        } else {
            ""
        };
        config.push_str(&format!(
            "env = {{ WATCH_RECORD = {:?}{era_env} }}\n",
            record.display().to_string()
        ));
        let mut shell = Shell::start_with(rt, &format!("watched-{era}"), &config);
        attach_counter(&mut shell, "see ");
        if era == "2025" {
            wait_record(&record, "subscribe watch://counter\n");
        }
        // Changed from outside while it is on the line.
        let server = shell.children_running("watched.js");
        assert_eq!(server.len(), 1, "one fixture process: {server:?}");
        let pid = rustix::process::Pid::from_raw(i32::try_from(server[0]).expect("pid fits"))
            .expect("not 0");
        let at = shell.mark();
        rustix::process::kill_process(pid, rustix::process::Signal::USR2).expect("bump");
        let said = shell.wait_for_after(
            at,
            "`watch://counter` changed on server `watched`; reading it again",
            SOON,
        );
        shell.wait_for_after(said, "rho> see [resource: watch://counter] ", SOON);
        let at = shell.mark();
        shell.keys("\r");
        let body = shell.wait_for_after(
            at,
            "── [resource: watch://counter] from server `watched` ──",
            SOON,
        );
        shell.wait_for_after(body, "count 1", SOON);
        assert!(
            !shell.screen()[body..].contains("count 0"),
            "the body read when it was picked is not sent"
        );
        if era == "2025" {
            // Sent: let go.
            wait_record(
                &record,
                "subscribe watch://counter\nunsubscribe watch://counter\n",
            );
            // Removed with Backspace: let go.
            attach_counter(&mut shell, "");
            wait_record(
                &record,
                "subscribe watch://counter\nunsubscribe watch://counter\nsubscribe watch://counter\n",
            );
            shell.keys("\x7f\x7f");
            wait_record(
                &record,
                "subscribe watch://counter\nunsubscribe watch://counter\nsubscribe watch://counter\nunsubscribe watch://counter\n",
            );
            // On the line when the shell is stopped: the shutdown lets go.
            attach_counter(&mut shell, "");
            let held = "subscribe watch://counter\nunsubscribe watch://counter\n".repeat(2)
                + "subscribe watch://counter\n";
            wait_record(&record, &held);
            let rho =
                rustix::process::Pid::from_raw(i32::try_from(shell.child.id()).expect("pid fits"))
                    .expect("not 0");
            rustix::process::kill_process(rho, rustix::process::Signal::TERM).expect("stop rho");
            let until = Instant::now() + Duration::from_secs(30);
            while shell.child.try_wait().expect("wait for rho").is_none() {
                assert!(Instant::now() < until, "rho did not exit on SIGTERM");
                std::thread::sleep(Duration::from_millis(20));
            }
            wait_record(&record, &(held + "unsubscribe watch://counter\n"));
        } else {
            assert!(shell.quit().success());
        }
    }
}

fn revised_and_withdrawn_tools_are_said_and_marked(rt: Runtime) {
    let mut shell = Shell::start_with(rt, "revised", &fixture_config());
    let at = shell.mark();
    shell.keys("/call fixture:revise\r");
    let done = shell.wait_for_after(at, "\x1b[2Krevised", SOON);
    shell.wait_for_after(
        done,
        "server `fixture` revised tool `echo`: its new definition is in use",
        SOON,
    );
    shell.wait_for_after(done, "server `fixture` withdrew tool `doomed`", SOON);
    let at = shell.mark();
    shell.keys("/tools fixture\r");
    shell.wait_for_after(at, "Echoes the message back (revised)", SOON);
    shell.wait_for_after(at, "(fixture:doomed) (withdrawn)", SOON);
    let at = shell.mark();
    shell.keys("/call fixture:doomed\r");
    shell.wait_for_after(
        at,
        "tool `doomed` of server `fixture` was withdrawn by the server",
        SOON,
    );
    assert!(shell.quit().success());
}

fn server_logs_show_from_the_level_chosen_with_log_level(rt: Runtime) {
    let mut shell = Shell::launch(
        rt,
        "logs",
        &fixture_config(),
        &Launch {
            args: &["--log-level", "warning"],
            ..Launch::default()
        },
    );
    let at = shell.mark();
    shell.keys("/call fixture:log\r");
    // The server was asked for warning and up (logging/setLevel), so it
    // sends those five, in order, and nothing below.
    let warning = shell.wait_for_after(at, "fixture says warning", SOON);
    let last = shell.wait_for_after(warning, "fixture says emergency", SOON);
    shell.wait_for_after(at, "\x1b[2Klogged", SOON);
    let shown = shell.screen()[at..last].to_owned();
    // As the server's words, its own level first.
    assert!(
        words(&shown)
            .contains("warning from server `fixture` (logger `fixture`): fixture says warning"),
        "{shown}"
    );
    assert!(!words(&shown).contains("fixture says info"), "{shown}");
    assert!(!words(&shown).contains("fixture says notice"), "{shown}");
    assert!(shell.quit().success());
}

at_two_widths!(a_login_holds_up_only_its_server_names_it_and_can_be_skipped_or_done_later);

/// A server that needs a browser login does not hold up the others: the
/// shell starts everything else, names the server and the command that
/// logs in; `/login fx` shows the URL naming `fx`, Ctrl-C there skips the
/// login and the shell goes on, and a later `/login fx` logs in and
/// starts it.
fn a_login_holds_up_only_its_server_names_it_and_can_be_skipped_or_done_later(rt: Runtime) {
    let dir = scratch_dir(&format!(
        "shell-login-fixture-{}-{}",
        rt.name(),
        COLUMNS.with(std::cell::Cell::get)
    ));
    // `fx`: oidc-provider in front of an MCP server (tests/servers/
    // fixtures/oidc-server.mjs), whose login needs a person's browser
    // (sign-in and consent pages). `ax`: the OAuth fixture, whose
    // authorization server approves at once.
    let oidc = Stopped(
        Command::new("node")
            .arg(rho_tests::tests_dir().join("servers/fixtures/oidc-server.mjs"))
            .arg("--port-file")
            .arg(dir.join("oidc-ports"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the oidc-provider fixture"),
    );
    let auto = Stopped(
        Command::new("node")
            .arg(rho_tests::tests_dir().join("servers/fixtures/oauth-server.js"))
            .arg("--port-file")
            .arg(dir.join("auto-port"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OAuth fixture"),
    );
    let ports = |file: &str, count: usize| -> Vec<u16> {
        let until = Instant::now() + SOON;
        loop {
            let ports: Vec<u16> = std::fs::read_to_string(dir.join(file))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if ports.len() == count {
                return ports;
            }
            assert!(
                Instant::now() < until,
                "the fixture of {file} did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let fx_port = ports("oidc-ports", 2)[1];
    let ax_port = ports("auto-port", 1)[0];
    // The person's browser: rho opens the authorization URL with
    // xdg-open, here a script that follows the redirects back to rho's
    // loopback callback as a browser would, once `allow` exists; before,
    // it is a browser the person never finishes.
    let browser = rho_tests::tests_dir().join("servers/fixtures/browser.mjs");
    let allow = dir.join("allow");
    let path = rho_tests::browser_opener(
        &dir,
        &format!(
            "[ -e '{}' ] || exit 0\nexec node '{}' \"$1\" >'{}' 2>&1",
            allow.display(),
            browser.display(),
            dir.join("browser.log").display()
        ),
    );
    let remote = |id: &str, port: u16| {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{port}/mcp\"\nstartup_timeout_secs = 20\n[mcp.servers.{id}.oauth]\n"
        )
    };
    let config = format!(
        "{}{}{}",
        remote("fx", fx_port),
        node_server("everything", &everything_js(), &[]),
        remote("ax", ax_port),
    );
    let mut shell = Shell::launch(
        rt,
        "login",
        &config,
        &Launch {
            env: vec![("PATH".into(), path)],
            ..Launch::default()
        },
    );
    let screen = shell.screen();
    for id in ["fx", "ax"] {
        let named = format!(
            "server `{id}` needs a browser login, so it is not started; `/login {id}` logs in and starts it"
        );
        assert!(words(&screen).contains(&named), "no `{named}`:\n{screen}");
    }
    assert!(
        !words(&screen).contains("open this URL"),
        "no login at start:\n{screen}"
    );
    // A call to a server left for its login says what to do.
    let at = shell.mark();
    shell.keys("/call ax:whoami\r");
    shell.wait_for_after(
        at,
        "server `ax` is not started: it needs a browser login first (`/login ax`)",
        SOON,
    );
    // The other server is up, without waiting for any login.
    let at = shell.mark();
    shell.keys("/call everything:echo message=up\r");
    shell.wait_for_after(at, "Echo: up", SOON);

    // A login the person gives up on: Ctrl-C skips it, the shell stays.
    let at = shell.mark();
    shell.keys("/login fx\r");
    shell.wait_for_after(at, "To authorize rho for server `fx`, open this URL", SOON);
    shell.wait_for_after(
        at,
        "waiting for the browser to finish the login to server `fx`",
        SOON,
    );
    let at = shell.mark();
    shell.keys("\x03");
    shell.wait_for_after(at, "skipped the login to server `fx`", SOON);
    let at = shell.mark();
    shell.keys("/call everything:echo message=still\r");
    shell.wait_for_after(at, "Echo: still", SOON);

    // Later, a login goes through and its server starts, alone: the
    // other server keeps its process.
    let everything_before = shell.children_running("index.js");
    assert_eq!(everything_before.len(), 1, "{everything_before:?}");
    std::fs::write(&allow, "").expect("allow the browser");
    let at = shell.mark();
    shell.keys("/login ax\r");
    shell.wait_for_after(at, "logged in to server `ax`", SOON);
    shell.wait_for_after(at, "server `ax` is ready", SOON);
    let at = shell.mark();
    shell.keys("/call ax:whoami\r");
    shell.wait_for_after(at, "token #1", SOON);
    // A login done again for a running server restarts that server alone,
    // so the new login applies at once.
    let at = shell.mark();
    shell.keys("/login ax\r");
    shell.wait_for_after(
        at,
        "its session was closed and started again with the new login; server `ax` is ready",
        SOON,
    );
    let at = shell.mark();
    shell.keys("/call ax:whoami\r");
    shell.wait_for_after(at, "token #2", SOON);
    let at = shell.mark();
    shell.keys("/call everything:echo message=after\r");
    shell.wait_for_after(at, "Echo: after", SOON);
    assert_eq!(
        shell.children_running("index.js"),
        everything_before,
        "the login restarted the other server"
    );
    assert!(shell.quit().success());
    drop((oidc, auto));
}

/// The rows a terminal shows of `printed` (raw output of the shell):
/// drawing sequences take no column, and a CR (but the one before a
/// LF) starts the row again.
fn shown_rows(printed: &str) -> Vec<String> {
    let mut rows = Vec::new();
    for row in printed.split('\n') {
        let row = row.strip_suffix('\r').unwrap_or(row);
        let mut shown = String::new();
        let mut chars = row.chars();
        while let Some(c) = chars.next() {
            match c {
                '\x1b' => {
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
                '\r' => shown.clear(),
                c => shown.push(c),
            }
        }
        rows.push(shown);
    }
    rows
}

/// Asserts that no row of `printed` is wider than `columns` (so the
/// terminal breaks none of them itself, inside a word), and returns the
/// rows.
fn assert_rows_fit(printed: &str, columns: usize, what: &str) -> Vec<String> {
    let rows = shown_rows(printed);
    for row in &rows {
        assert!(
            row.chars().count() <= columns,
            "{what}: a row of {} columns on a {columns}-column terminal: {row:?}\nin {printed:?}",
            row.chars().count()
        );
    }
    rows
}

/// `/tools`, with its descriptions and parameters, is broken between
/// words to fit the terminal: no row is wider than it, and no word is
/// cut, so the terminal never wraps inside a name.
fn printed_lines_fit_the_terminal_and_break_between_words(rt: Runtime) {
    let columns = usize::from(COLUMNS.with(std::cell::Cell::get));
    let mut shell = Shell::start(rt, "wrap");
    let at = shell.mark();
    shell.keys("/tools everything\r");
    let sum = shell.wait_for_after(at, "(everything:get-sum)", SOON);
    let end = shell.wait_for_after(sum, "rho> ", SOON);
    let printed = shell.screen()[at..end].to_owned();
    let rows = assert_rows_fit(&printed, columns, "/tools");
    let words: usize = rows.iter().map(|row| row.split_whitespace().count()).sum();
    assert!(words > 50, "{printed:?}");
    // Every tool's name came out whole.
    for name in [
        "get-resource-reference",
        "get-structured-content",
        "trigger-long-running-operation",
    ] {
        assert!(
            rows.iter()
                .any(|row| row.split_whitespace().any(|w| w.contains(name))),
            "no {name}: {printed:?}"
        );
    }
    assert!(shell.quit().success());
}

/// Everything the shell prints is broken between words to fit the
/// terminal, not only `/tools`: the start's line of counts, a form's line
/// of keys, a long result and a long error, at 60 and 120 columns. No row
/// is wider than the terminal (which would break it, inside a word) and
/// every word comes out whole and in order.
fn the_start_line_form_keys_results_and_errors_break_between_words(rt: Runtime) {
    for columns in [60u16, 120] {
        let width = usize::from(columns);
        let launch = Launch {
            columns,
            ..Launch::default()
        };
        let config = node_server("everything", &everything_js(), &[]);
        let mut shell = Shell::launch(rt, &format!("wrap-all-{columns}"), &config, &launch);
        // The start: the servers' table and the line of counts.
        let start = shell.screen();
        assert_rows_fit(&start, width, "the start");
        assert!(
            words(&start).contains(
                "resource(s) and template(s): /mcp lists them, /tools [server] shows the tools, /help the commands"
            ),
            "{start:?}"
        );

        // A form's line of keys.
        let at = shell.mark();
        shell.keys("/call everything:trigger-elicitation-request\r");
        let keys = shell.wait_for_after(
            at,
            "(Enter keeps a [default] or skips an optional field; `!decline` declines the form, \
             `!cancel` cancels it; keys: Ctrl-D declines, Ctrl-C cancels the form and the call)",
            SOON,
        );
        let asked = shell.wait_for_after(keys, "Your full, legal name", SOON);
        assert_rows_fit(&shell.screen()[at..asked], width, "the form");
        shell.keys("\x03");
        shell.wait_for_after(asked, "→ sent to the server: cancel", SOON);

        // A long result: the words echoed, whole and in order.
        let sent: Vec<String> = (1..=40).map(|i| format!("word{i:02}")).collect();
        let at = shell.mark();
        shell.keys(&format!(
            "/call everything:echo message='{}'\r",
            sent.join(" ")
        ));
        let echoed = shell.wait_for_after(at, "Echo: word01", SOON);
        let end = shell.wait_for_after(echoed, "word40", SOON);
        let end = shell.wait_for_after(end, "rho> ", SOON);
        let printed = shell.screen()[at..end].to_owned();
        let rows = assert_rows_fit(&printed, width, "a long result");
        let first = rows
            .iter()
            .position(|row| row.starts_with("Echo: "))
            .unwrap_or_else(|| panic!("no result row: {rows:?}"));
        let got: Vec<&str> = rows[first..]
            .iter()
            .flat_map(|row| row.split_whitespace())
            .skip(1)
            .take(sent.len())
            .collect();
        assert_eq!(got, sent, "{rows:?}");
        assert!(rows[first + 1].starts_with("word"), "{rows:?}");

        // A long error, the server's, broken at blanks too (a JSON object
        // is sent as given; no words would be refused by rho instead).
        let at = shell.mark();
        shell.keys("/call everything:echo {}\r");
        let error = shell.wait_for_after(
            at,
            "Invalid arguments for tool echo: Invalid input: expected string, received undefined at message",
            SOON,
        );
        let end = shell.wait_for_after(error, "rho> ", SOON);
        assert_rows_fit(&shell.screen()[at..end], width, "a long error");
        assert!(shell.quit().success());
    }
}

/// The line editor as a person uses it: one Tab that inserts a common
/// prefix leaves the menu open so Enter picks (never submits the half
/// word); Ctrl-L clears the screen and keeps the line; a resize redraws at
/// once, before any key; palette notes start in one column; and a key
/// typed while a palette shows draws the line once.
fn editing_tab_enter_picks_ctrl_l_clears_a_resize_redraws_and_a_key_draws_once(rt: Runtime) {
    let config = format!(
        "{}{}",
        node_server("everything", &everything_js(), &[]),
        fixture_config()
    );
    let mut shell = Shell::start_with(rt, "editing", &config);

    // Tab: the two tools of everything starting `get-re` share
    // `everything:get-resource-`; Enter then picks the first, and nothing
    // is submitted.
    let at = shell.mark();
    shell.keys("/call everything:get-re\t");
    shell.wait_for_after(at, "rho> /call everything:get-resource-", SOON);
    let at = shell.mark();
    shell.keys("\r");
    let end = shell.wait_for_after(at, "rho> /call everything:get-resource-", SOON);
    // A call typed next answers only after anything that Enter started
    // has printed (a call waits for the one before it), so the screen up
    // to its answer shows whether Enter submitted the half word.
    shell.keys("\x15/call everything:echo message=after\r");
    let answered = shell.wait_for_after(end, "Echo: after", SOON);
    let after = shell.screen()[at..answered].to_owned();
    assert!(
        !words(&after).contains("no exported tool") && !words(&after).contains("has no tool"),
        "Enter submitted the half word:\n{after}"
    );
    let picked: String = shell.screen()[end..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    assert!(!picked.is_empty(), "Enter picked no tool:\n{after}");

    // Ctrl-L: the screen is cleared (cursor home, erase below) and the
    // line drawn again as it was.
    shell.keys("/mc");
    let at = shell.mark();
    shell.keys("\x0c");
    let cleared = shell.wait_for_after(at, "\x1b[H\x1b[J\r\x1b[2Krho> /mc\x1b[J", SOON);
    shell.keys("\x15");
    shell.wait_for_after(cleared, "\x1b[2Krho> \x1b[J", SOON);

    // A resize redraws at once, with no key typed: the last key's drawing
    // is on the screen already and nothing else draws the line meanwhile,
    // so the redraw is the resize's.
    let at = shell.mark();
    rho_tests::pty::resize(&shell.keyboard, 60, 50);
    shell.wait_for_after(at, "rho> ", SOON);

    // Palette rows: the notes start in one column.
    let at = shell.mark();
    shell.keys("/");
    shell.keys("\t");
    shell.wait_for_after(at, "/quit", SOON);
    let drawn = shell.screen()[at..].to_owned();
    let menu = drawn.rsplit("rho> /").next().expect("the last drawing");
    let columns: Vec<usize> = ["/mcp", "/doctor", "/tools", "/quit"]
        .iter()
        .map(|command| {
            let row = menu
                .split("\r\n")
                .find(|row| row.contains(&format!("  {command} ")))
                .unwrap_or_else(|| panic!("no row for {command}: {menu:?}"));
            let row = row.replace("\x1b[7m", "").replace("\x1b[0m", "");
            let note = row[row.find(command).expect("command") + command.len()..]
                .find(|c: char| c != ' ')
                .expect("a note");
            row.find(command).expect("command") + command.len() + note
        })
        .collect();
    assert!(
        columns.windows(2).all(|w| w[0] == w[1]),
        "notes not in one column: {columns:?}\n{menu:?}"
    );
    shell.keys("\x1b");
    shell.keys("\x15");

    // A key typed while a palette shows draws the line once. The line's
    // last key drawn with the palette under it is the state to type on;
    // the key after (Ctrl-U, which empties the line) is drawn after
    // everything the first drew, on the same turn of the loop (a
    // mention's palette is made there, not by a server).
    let at = shell.mark();
    shell.keys("hello @fi");
    shell.wait_for_after(at, "rho> hello @fi\x1b[J\r\r\n", SOON);
    let at = shell.mark();
    shell.keys("n");
    shell.wait_for_after(at, "rho> hello @fin", SOON);
    shell.keys("\x15");
    let emptied = shell.wait_for_after(at, "\x1b[2Krho> \x1b[J", SOON);
    let drawn = shell.screen()[at..emptied]
        .matches("rho> hello @fin")
        .count();
    assert_eq!(drawn, 1, "{:?}", &shell.screen()[at..emptied]);
    assert!(shell.quit().success());
}

/// A child process killed when dropped (a test that fails stops it too).
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn a_command_line_takes_no_attachments(rt: Runtime) {
    let mut shell = Shell::start_with(rt, "command-attach", &fixture_config());
    let at = shell.mark();
    shell.keys("/tools @fine");
    shell.wait_for_after(at, "\n  fixture://fine  fixture · fine", SOON);
    shell.keys("\t");
    shell.wait_for_after(at, "rho> /tools [resource: fixture://fine] ", SOON);
    let at = shell.mark();
    shell.keys("\r");
    shell.wait_for_after(at, "a command takes no attachments", SOON);
    // Nothing of it is left for the next line: a message now carries no
    // attachment, so it is refused as text.
    let at = shell.mark();
    shell.keys("hello\r");
    shell.wait_for_after(at, "commands start with `/`", SOON);
    assert!(shell.quit().success());
}

#[test]
fn a_log_level_that_is_not_one_is_a_usage_error_naming_the_levels() {
    let run = Scene::on_default_executor(RHO, "shell-log-level").rho(&[
        "mcp",
        "shell",
        "--log-level",
        "loud",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("one of debug, info, notice, warning, error, critical, alert, emergency"),
        "{run}"
    );
}

fn keystrokes_typed_while_a_suggestion_is_asked_cost_no_more_requests(rt: Runtime) {
    // The fixture holds its answers to completion/complete until the
    // test lets them go: the keys after `kind=` arrive while the first
    // request (for "") runs, pile up behind it as one, and are then
    // answered from its complete list without another request.
    let (config, hold) = held_fixture_config(rt, "coalesce");
    let mut shell = Shell::start_with(rt, "coalesce", &config);
    let at = shell.mark();
    shell.keys("/mcp:fixture:pick kind=Sal");
    // Drawn as typed without a palette first, the palette after, when
    // the answer came: no key waited for it.
    let typed = shell.wait_for_after(at, "kind=Sal\x1b[J\r\x1b[", SOON);
    std::fs::write(hold.join("complete"), "").expect("let the answers go");
    let palette = shell.wait_for_after(at, "kind=Sal\x1b[J\r\r\n  Sales\x1b[1A", SOON);
    assert!(typed < palette, "{}", shell.screen());
    shell.keys("\t");
    shell.wait_for_after(at, "rho> /mcp:fixture:pick kind=Sales", SOON);
    // The next argument is asked with the first in context.arguments.
    let at = shell.mark();
    shell.keys(" item=xy");
    shell.wait_for_after(at, "item=xy\x1b[J\r\r\n  xylophone\x1b[1A", SOON);
    shell.keys("\t\r");
    shell.wait_for_after(at, "picked Sales xylophone", SOON);
    let at = shell.mark();
    shell.keys("/call fixture:completions-asked\r");
    shell.wait_for_after(
        at,
        "\x1b[2Kkind=\r\nitem= {\"kind\":\"Sales\"}\r\n\r\x1b[2Krho> ",
        SOON,
    );
    assert!(shell.quit().success());
}

both_executors!(an_app_view_stays_open_beside_the_prompt_and_ctrl_c_closes_it);

/// `/app` opens server-pdf's view in headless chromium and gives the
/// prompt back: a call typed meanwhile (`interact`, which the server
/// answers only through the open view's long poll) is answered by the
/// view through rho; Ctrl-C with no call running closes the view, and the
/// page says so.
fn an_app_view_stays_open_beside_the_prompt_and_ctrl_c_closes_it(rt: Runtime) {
    if !rho_tests::can_drive_browser() {
        return;
    }
    let browser = rho_tests::tests_dir().join("browser/record-url.sh");
    let copy_pdf = |scene: &Scene| {
        std::fs::copy(
            rho_tests::tests_dir().join("servers/fixtures/hello.pdf"),
            scene.dir().join("work/hello.pdf"),
        )
        .expect("copy the PDF");
    };
    let launch = Launch {
        env: vec![("BROWSER".into(), browser.display().to_string())],
        prepare: Some(&copy_pdf),
        columns: 200,
        ..Launch::default()
    };
    let mut shell = Shell::launch(
        rt,
        "app-view",
        &node_server("pdf", &pdf_js(), &["--stdio"]),
        &launch,
    );
    let work = shell.scene.dir().join("work");
    let pdf = work.join("hello.pdf").display().to_string();
    shell.keys(&format!("/app pdf:display_pdf url={pdf}\r"));
    let opened = shell.wait_for("the view is open beside the prompt", SOON);
    let url = std::fs::read_to_string(work.join("url.txt")).expect("the view's URL");
    let screen = shell.screen();
    // display_pdf's result names its view: `"viewUUID":"<uuid>"`.
    let uuid: String = screen
        .split("viewUUID")
        .nth(1)
        .expect("display_pdf's result names the view")
        .chars()
        .skip_while(|c| !c.is_ascii_hexdigit())
        .take_while(|c| c.is_ascii_hexdigit() || *c == '-')
        .collect();
    assert_eq!(uuid.len(), 36, "{screen}");
    let driver = std::thread::spawn(move || {
        rho_tests::drive_browser(&serde_json::json!({"timeoutMs": 40_000, "steps": [
            {"op": "goto", "url": url},
            {"op": "waitText", "text": "Hello from rho", "frame": "/view/"},
            {"op": "waitText", "text": "This view has ended", "frame": "/app/"},
        ]}))
    });
    shell.wait_for_after(opened, "the view's page connected", SOON);
    let mark = shell.mark();
    shell.keys(&format!(
        "/call pdf:interact {{\"viewUUID\": \"{uuid}\", \"action\": \"get_text\", \"page\": 1}}\r"
    ));
    let answered = shell.wait_for_after(mark, "Page 1", Duration::from_secs(40));
    shell.wait_for_after(answered, "Hello from rho", SOON);
    shell.keys("\x03");
    shell.wait_for_after(answered, "closing the view", SOON);
    shell.wait_for_after(answered, "the view ended: the person closed it", SOON);
    driver
        .join()
        .expect("the browser")
        .unwrap_or_else(|story| panic!("{story}"));
    assert!(shell.quit().success());
}
