//! The CLI's side of questions from servers: who answers forms and
//! sampling confirmations, the model sampling spends, and the usage ledger.
//!
//! - On a terminal (stdin and stderr are terminals, and `CI` is not set), a
//!   form is asked question by question on stderr, titled with the asking
//!   server's identity so it is never mistaken for rho's own question.
//!   Everything the server wrote (message, titles, descriptions, choices,
//!   the sampling question) passes through [`terminal::sanitize`] and is
//!   indented, so it can neither move the cursor nor clear or forge the
//!   `── MCP server `x` asks ──` header, which alone starts at column 0.
//!   A URL a server asks the person to open (URL-mode elicitation) is
//!   shown whole, its host on a line of its own (and in Unicode beside the
//!   punycode for an internationalized name), with the server, the call
//!   and any warning; it is opened in the browser (the opener logins use)
//!   only on an explicit yes, never fetched, never changed.
//! - `--yes-defaults` (scripts) accepts every form with its defaults and
//!   declines one with a required field that has none; it refuses
//!   sampling, which has no default (`rho_host::AcceptDefaults`), and does
//!   not declare URL mode (a script opens no browser), so a URL request is
//!   refused as the spec says.
//! - Otherwise nobody can be asked, and the runtime declares no
//!   elicitation, so a well-behaved server never asks.
//!
//! The model is `[sampling] command = [...]` in the selected config file
//! and each completion is appended to `~/.rho/usage.jsonl`
//! (`rho_host::host_services`). A login's URL is printed here and opened in a
//! browser ([`login_mode`]).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use rho_proto_core::features::elicitation::{
    Field, FieldKind, Form, FormAnswer, UrlAnswer, UrlRequest, check_field_answer,
};
use rho_proto_core::host::{Asked, HostServices, Responder};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::session::CallError;
use rho_proto_core::text::terminal::{self, sanitize_line};

/// Whether a person can be asked: a terminal on both ends, not in CI.
pub(crate) fn person_present() -> bool {
    std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none_or(|v| v.is_empty() || v == "false")
}

/// The host services for a command that may ask questions.
pub(crate) fn services(yes_defaults: bool, model_command: Option<Vec<String>>) -> HostServices {
    let responder: Option<Arc<dyn Responder>> = if yes_defaults {
        Some(Arc::new(rho_host::AcceptDefaults))
    } else if person_present() {
        Some(Arc::new(Terminal {
            lock: Mutex::new(()),
        }))
    } else {
        None
    };
    apps_host(rho_host::host_services(responder, model_command))
}

/// The CLI renders MCP App views (`rho mcp call --app`, the shell's
/// `/app`), so every run declares the extension: a server then lists the
/// same tools whichever command asks.
pub(crate) fn apps_host(mut services: HostServices) -> HostServices {
    services.renders_apps = true;
    services
}

/// How a login may reach the person: at a terminal, the URL is printed
/// and opened in a browser; with no one there, never.
pub(crate) fn login_mode() -> rho_host::LoginMode {
    if person_present() {
        rho_host::LoginMode::Person(terminal_prompt())
    } else {
        rho_host::LoginMode::Never
    }
}

/// The prompt that prints a login's URL on stderr (and opens it in a
/// browser where a person is).
pub(crate) fn terminal_prompt() -> Arc<dyn rho_host::AuthorizationPrompt> {
    Arc::new(TerminalPrompt)
}

/// Shows a login's URL on stderr and opens it in a browser.
struct TerminalPrompt;

impl rho_host::AuthorizationPrompt for TerminalPrompt {
    fn show(&self, server: &str, url: &url::Url) {
        // After SIGHUP the terminal may be gone: never panic writing.
        let _ = writeln!(
            std::io::stderr(),
            "To authorize rho for server `{}`, open this URL in a browser (it is being opened for you where possible):\n\n  {url}\n",
            sanitize_line(server)
        );
        if person_present() {
            rho_host::open_in_browser(url);
        }
        let _ = writeln!(std::io::stderr(), "{}", waiting_line(server));
    }

    /// A stop signal (Ctrl-C) ends the wait, in a command that installed
    /// the handlers before its login (`rho mcp call`); elsewhere the
    /// signal's default action ends rho.
    fn cancelled(&self) -> bool {
        crate::signals::received().is_some()
    }
}

/// What rho says while the browser step runs: whom it waits for, and how
/// to stop waiting.
fn waiting_line(server: &str) -> String {
    format!(
        "rho: waiting for the browser to finish the login to server `{}` (Ctrl-C stops waiting)...",
        sanitize_line(server)
    )
}

/// Asks on the terminal, one question at a time.
struct Terminal {
    /// One form at a time, even when two servers ask at once.
    lock: Mutex<()>,
}

impl Responder for Terminal {
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer {
        let _one = self.lock.lock();
        ask_form(&mut std::io::stderr().lock(), &mut read_line, asked, form)
    }

    /// A terminal with a person at it, never in CI (see [`services`]).
    fn can_open_urls(&self) -> bool {
        true
    }

    fn open_url(&self, asked: &Asked, request: &UrlRequest) -> UrlAnswer {
        let _one = self.lock.lock();
        ask_url(
            &mut std::io::stderr().lock(),
            &mut read_line,
            asked,
            request,
            &mut open_in_browser,
        )
    }

    fn confirm_sampling(&self, asked: &Asked, question: &str) -> bool {
        let server = asked.server.as_str();
        let _one = self.lock.lock();
        ask_sampling(
            &mut std::io::stderr().lock(),
            &mut read_line,
            server,
            question,
        )
    }
}

/// Asks `form` of a person: writes on `err`, reads each answer with `read`
/// (a line, or `None` when there is no more input). The shell asks through
/// its own line editor with the same words.
pub(crate) fn ask_form(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    asked: &Asked,
    form: &Form,
) -> FormAnswer {
    ask_form_with_keys(err, read, asked, form, "")
}

/// [`ask_form`] with `keys` (the keys that give the same answers where the
/// asker has them, such as the shell's) added to the line of choices.
pub(crate) fn ask_form_with_keys(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    asked: &Asked,
    form: &Form,
    keys: &str,
) -> FormAnswer {
    let _ = writeln!(err, "{}", asks_header(asked, ""));
    write_indented(err, &form.message);
    let _ = writeln!(
        err,
        "(Enter keeps a [default] or skips an optional field; `{DECLINE}` declines the form, \
         `{CANCEL}` cancels it{keys})"
    );
    let mut answers = std::collections::BTreeMap::new();
    let mut skipped: Vec<&str> = Vec::new();
    let answer = 'fields: {
        for field in &form.fields {
            match ask_field(err, read, field) {
                FieldAnswer::Values(values) => {
                    answers.insert(field.name.clone(), values);
                }
                FieldAnswer::Skip => skipped.push(field.name.as_str()),
                FieldAnswer::Dismiss => break 'fields FormAnswer::Dismissed,
                FieldAnswer::Decline => break 'fields FormAnswer::Declined,
                FieldAnswer::Unavailable => break 'fields FormAnswer::CouldNotAsk,
            }
        }
        FormAnswer::Submitted(answers)
    };
    let _ = writeln!(err, "{}", sent_line(&answer, &skipped));
    answer
}

/// The line that starts a server's question, at column 0 (server text
/// never does): the asking server and the call it came during, so that a
/// question asked during one of several calls is never taken for
/// another's, then `what` it asks for.
fn asks_header(asked: &Asked, what: &str) -> String {
    let during = asked
        .what
        .as_deref()
        .map(|call| format!(" during `{}`", sanitize_line(call)))
        .unwrap_or_default();
    format!(
        "\n── MCP server `{}` asks{during}{what} ──",
        sanitize_line(&asked.server)
    )
}

/// What declines a whole form when typed as an answer.
pub(crate) const DECLINE: &str = "!decline";
/// What cancels a whole form when typed as an answer.
pub(crate) const CANCEL: &str = "!cancel";

/// The line that says which of the three answers went to the server:
/// `accept` (with the fields skipped), `decline` or `cancel`.
fn sent_line(answer: &FormAnswer, skipped: &[&str]) -> String {
    match answer {
        FormAnswer::Submitted(_) if skipped.is_empty() => {
            "  → sent to the server: accept".to_owned()
        }
        FormAnswer::Submitted(_) => format!(
            "  → sent to the server: accept (skipped: {})",
            skipped
                .iter()
                .map(|name| sanitize_line(name).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        FormAnswer::Declined => "  → sent to the server: decline".to_owned(),
        FormAnswer::Dismissed => "  → sent to the server: cancel".to_owned(),
        FormAnswer::CouldNotAsk => {
            "  → sent to the server: decline (no answer could be read)".to_owned()
        }
    }
}

/// Asks whether `server` may use the model for `question`; only a typed
/// yes allows it.
pub(crate) fn ask_sampling(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    server: &str,
    question: &str,
) -> bool {
    let _ = writeln!(
        err,
        "\n── MCP server `{}` asks to use your model ──",
        sanitize_line(server)
    );
    write_indented(err, question);
    let _ = write!(err, "Allow? [y/N] ");
    let _ = err.flush();
    matches!(
        read().as_deref().map(str::trim),
        Some("y" | "Y" | "yes" | "Yes")
    )
}

/// Opens `url` (exactly as shown) in the person's browser, with the
/// opener logins use. Never fetched by rho.
pub(crate) fn open_in_browser(url: &str) {
    // The core hands over only URLs it parsed; nothing else is opened.
    if let Ok(url) = url::Url::parse(url) {
        rho_host::open_in_browser(&url);
    }
}

/// The lines that show a URL a server wants opened: its host first, on a
/// line of its own (with the Unicode spelling of an internationalized
/// host), then the whole URL, then any warning. Every part is server text:
/// sanitized, one line each.
pub(crate) fn url_lines(request: &UrlRequest) -> String {
    let mut lines = format!("  host: {}\n", sanitize_line(&request.host));
    if let Some(unicode) = &request.unicode_host {
        lines.push_str(&format!(
            "        (written {} — punycode above)\n",
            sanitize_line(unicode)
        ));
    }
    lines.push_str(&format!("  URL:  {}\n", sanitize_line(&request.url)));
    for warning in &request.warnings {
        lines.push_str(&format!("  warning: {}\n", warning.text()));
    }
    lines
}

/// Asks a person whether to open a server's URL: writes on `err`, reads
/// the answer with `read`, and on an explicit yes hands the URL to `open`
/// (the browser). Anything but yes opens nothing. The shell asks through
/// its own line editor with the same words.
pub(crate) fn ask_url(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    asked: &Asked,
    request: &UrlRequest,
    open: &mut dyn FnMut(&str),
) -> UrlAnswer {
    let _ = writeln!(
        err,
        "{}",
        asks_header(asked, " to open a URL in your browser")
    );
    write_indented(err, &request.message);
    let _ = write!(err, "{}", url_lines(request));
    let _ = write!(
        err,
        "Open it in your browser? [y/N; `{CANCEL}` cancels the call] "
    );
    let _ = err.flush();
    let answer = match read().as_deref().map(str::trim) {
        Some("y" | "Y" | "yes" | "Yes") => {
            open(&request.url);
            UrlAnswer::Opened
        }
        Some(CANCEL) => UrlAnswer::Dismissed,
        Some(_) => UrlAnswer::Declined,
        None => UrlAnswer::CouldNotAsk,
    };
    let sent = match answer {
        UrlAnswer::Opened => "opened in your browser; sent to the server: accept",
        UrlAnswer::Declined => "not opened; sent to the server: decline",
        UrlAnswer::Dismissed => "not opened; sent to the server: cancel",
        UrlAnswer::CouldNotAsk => {
            "no answer could be read; not opened; sent to the server: decline"
        }
    };
    let _ = writeln!(err, "  → {sent}");
    answer
}

/// Shows the URLs a -32042 error asks the person to visit, offering to
/// open each (on a yes only), then asks whether to send the call again.
/// `true` when the person says retry.
pub(crate) fn visit_and_retry(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    server: &str,
    tool: &str,
    elicitations: &[UrlRequest],
    open: &mut dyn FnMut(&str),
) -> bool {
    let _ = writeln!(
        err,
        "\n── MCP server `{}` needs you to visit {} before `{}` can go on ──",
        sanitize_line(server),
        if elicitations.len() == 1 {
            "a URL".to_owned()
        } else {
            format!("{} URLs", elicitations.len())
        },
        sanitize_line(tool)
    );
    for request in elicitations {
        write_indented(err, &request.message);
        let _ = write!(err, "{}", url_lines(request));
        let _ = write!(err, "Open it in your browser? [y/N] ");
        let _ = err.flush();
        match read().as_deref().map(str::trim) {
            Some("y" | "Y" | "yes" | "Yes") => {
                open(&request.url);
                let _ = writeln!(err, "  → opened in your browser");
            }
            Some(_) => {
                let _ = writeln!(err, "  → not opened");
            }
            None => return false,
        }
    }
    let _ = write!(
        err,
        "Once you have finished there, send the call again? [y/N] "
    );
    let _ = err.flush();
    matches!(
        read().as_deref().map(str::trim),
        Some("y" | "Y" | "yes" | "Yes")
    )
}

/// A failed call's words: the error, and for a -32042 answer the URLs it
/// asks the person to visit, shown as a URL question shows them (the host
/// apart), and that nothing was opened. The error's own text is the
/// caller's to sanitize, as for every failure.
pub(crate) fn call_error_text(error: &ToolCallError) -> String {
    let mut message = error.to_string();
    if let ToolCallError::Call(CallError::UrlElicitationRequired { elicitations, .. }) = error {
        message.push('\n');
        for request in elicitations {
            message.push_str(&url_lines(request));
        }
        message.push_str(
            "(nothing was opened: rho opens a URL only when a person at a terminal says yes)",
        );
    }
    message
}

/// Reads one answer from the terminal for [`visit_and_retry`] and
/// [`ask_url`] outside a responder.
pub(crate) fn read_answer() -> Option<String> {
    read_line()
}

enum FieldAnswer {
    Values(Vec<String>),
    Skip,
    Dismiss,
    /// The person refused the whole form (`!decline`).
    Decline,
    Unavailable,
}

/// Asks one field on `err`, reading answers with `read` (a line, or `None`
/// when there is no more input).
fn ask_field(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    field: &Field,
) -> FieldAnswer {
    let label = sanitize_line(field.title.as_deref().unwrap_or(&field.name));
    let _ = writeln!(
        err,
        "\n  {label}{}",
        if field.required {
            " (required)"
        } else {
            " (optional: Enter skips it)"
        }
    );
    for help in &field.help {
        let _ = writeln!(err, "    {}", sanitize_line(help));
    }
    // Show a choice default by its label, as the options are listed.
    let default = field.default.as_ref().map(|values| {
        values
            .iter()
            .map(|v| match &field.kind {
                FieldKind::Choice { options, .. } => options
                    .iter()
                    .find(|o| &o.value == v)
                    .map_or(v.as_str(), |o| o.label.as_str()),
                _ => v.as_str(),
            })
            .map(|v| sanitize_line(v).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    });
    match &field.kind {
        FieldKind::Choice { options, multi } => {
            for (i, option) in options.iter().enumerate() {
                let _ = writeln!(err, "    {}) {}", i + 1, sanitize_line(&option.label));
            }
            if *multi {
                let _ = writeln!(err, "  (several: numbers separated by commas)");
            }
        }
        FieldKind::Confirm => {
            let _ = writeln!(err, "  (yes/no)");
        }
        FieldKind::Text | FieldKind::Number { .. } => {}
    }
    let shown = default
        .as_ref()
        .map(|d| format!("[{d}] "))
        .unwrap_or_default();
    loop {
        let _ = write!(err, "> {shown}");
        let _ = err.flush();
        let Some(line) = read() else {
            return FieldAnswer::Unavailable;
        };
        let line = line.trim();
        if line == CANCEL {
            return FieldAnswer::Dismiss;
        }
        if line == DECLINE {
            return FieldAnswer::Decline;
        }
        if line.is_empty() {
            match &field.default {
                Some(values) => return FieldAnswer::Values(values.clone()),
                None if field.required => {
                    let _ = writeln!(err, "  (required: type an answer, or `!cancel`)");
                    continue;
                }
                None => return FieldAnswer::Skip,
            }
        }
        let values = parse_answer(field, line);
        // An answer that cannot carry the field's type is asked again with
        // the reason, never sent on to become a decline of the whole form.
        match check_field_answer(field, &values) {
            Ok(()) => return FieldAnswer::Values(values),
            Err(reason) => {
                // The reason may quote the schema (choices, patterns).
                let _ = writeln!(
                    err,
                    "  not accepted: {}; try again, or `!cancel`",
                    sanitize_line(&reason)
                );
            }
        }
    }
}

/// The values a typed line stands for: choice numbers become their
/// option's value, several choices are separated by commas.
fn parse_answer(field: &Field, line: &str) -> Vec<String> {
    match &field.kind {
        FieldKind::Choice { options, .. } => line
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| match s.parse::<usize>() {
                Ok(n) if n >= 1 && n <= options.len() => options[n - 1].value.clone(),
                _ => s.to_owned(),
            })
            .collect(),
        _ => vec![line.to_owned()],
    }
}

/// Server text, sanitized, each line indented by two spaces.
fn write_indented(err: &mut impl Write, text: &str) {
    for line in terminal::sanitize(text).lines() {
        let _ = writeln!(err, "  {line}");
    }
}

/// One line from stdin; `None` at end of input, on an error, or once a stop
/// signal arrived (`crate::signals`), so a form never outlives Ctrl-C.
#[cfg(unix)]
fn read_line() -> Option<String> {
    use std::os::fd::AsFd;

    use rustix::event::{PollFd, PollFlags, Timespec, poll};

    // Bytes read past the last line, kept for the next question. std's
    // buffered stdin is bypassed: poll(2) cannot see what it holds.
    static PENDING: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    const SLICE: Timespec = Timespec {
        tv_sec: 0,
        tv_nsec: 50_000_000,
    };
    let mut pending = PENDING.lock().unwrap_or_else(|p| p.into_inner());
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    loop {
        if crate::signals::received().is_some() {
            return None;
        }
        if let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            return Some(String::from_utf8_lossy(&line).into_owned());
        }
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&SLICE)) {
            // A signal interrupts poll(2) whatever SA_RESTART says.
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => {}
            Err(_) => return None,
        }
        let mut buf = [0u8; 4096];
        match rustix::io::read(fd, &mut buf) {
            Ok(0) => {
                if pending.is_empty() {
                    return None;
                }
                let line = std::mem::take(&mut *pending);
                return Some(String::from_utf8_lossy(&line).into_owned());
            }
            Ok(n) => pending.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Err(_) => return None,
        }
    }
}

/// One line from stdin; `None` at end of input or on an error.
#[cfg(not(unix))]
fn read_line() -> Option<String> {
    use std::io::BufRead;
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::features::elicitation::ChoiceOption;

    fn field(kind: FieldKind, required: bool) -> Field {
        Field {
            name: "f".into(),
            title: None,
            help: Vec::new(),
            kind,
            required,
            default: None,
        }
    }

    /// Asks `field` with `lines` as the person's input; returns the answer
    /// and what was shown.
    fn ask(field: &Field, lines: &[&str]) -> (FieldAnswer, String) {
        let mut input = lines.iter().map(|l| format!("{l}\n"));
        let mut shown = Vec::new();
        let asked = ask_field(&mut shown, &mut || input.next(), field);
        (asked, String::from_utf8_lossy(&shown).into_owned())
    }

    fn values(asked: FieldAnswer) -> Vec<String> {
        match asked {
            FieldAnswer::Values(v) => v,
            FieldAnswer::Skip => panic!("skipped"),
            FieldAnswer::Dismiss => panic!("dismissed"),
            FieldAnswer::Decline => panic!("declined"),
            FieldAnswer::Unavailable => panic!("ran out of input"),
        }
    }

    #[test]
    fn a_form_names_the_call_it_belongs_to_and_can_be_declined() {
        let form = Form {
            message: "Who?".to_owned(),
            fields: vec![field(FieldKind::Text, true)],
        };
        let asked = Asked {
            server: "srv".to_owned(),
            call: Some(7),
            what: Some("book\x1b[2Jing".to_owned()),
        };
        let mut shown = Vec::new();
        let mut input = ["!decline\n".to_owned()].into_iter();
        let answer = ask_form(&mut shown, &mut || input.next(), &asked, &form);
        assert_eq!(answer, FormAnswer::Declined);
        let shown = String::from_utf8_lossy(&shown);
        assert!(
            shown.contains("── MCP server `srv` asks during `book"),
            "{shown}"
        );
        assert!(
            !shown.contains('\x1b'),
            "the call's name is sanitized: {shown:?}"
        );
        assert!(
            shown.ends_with("  → sent to the server: decline\n"),
            "{shown}"
        );
        let mut input = ["!cancel\n".to_owned()].into_iter();
        let mut shown = Vec::new();
        let answer = ask_form(&mut shown, &mut || input.next(), &asked, &form);
        assert_eq!(answer, FormAnswer::Dismissed, "cancel still dismisses");
        let shown = String::from_utf8_lossy(&shown);
        assert!(
            shown.ends_with("  → sent to the server: cancel\n"),
            "{shown}"
        );
    }

    #[test]
    fn optional_fields_are_marked_and_a_skipped_one_is_named_with_the_accept() {
        let mut optional = field(FieldKind::Text, false);
        optional.name = "nick".to_owned();
        let form = Form {
            message: "Who?".to_owned(),
            fields: vec![field(FieldKind::Text, true), optional],
        };
        let asked = Asked {
            server: "srv".to_owned(),
            call: None,
            what: None,
        };
        let mut shown = Vec::new();
        let mut input = ["Ada\n".to_owned(), "\n".to_owned()].into_iter();
        let answer = ask_form(&mut shown, &mut || input.next(), &asked, &form);
        assert!(matches!(answer, FormAnswer::Submitted(_)), "{answer:?}");
        let shown = String::from_utf8_lossy(&shown);
        assert!(shown.contains("(optional: Enter skips it)"), "{shown}");
        assert!(shown.contains(" (required)"), "{shown}");
        assert!(
            shown.ends_with("  → sent to the server: accept (skipped: nick)\n"),
            "{shown}"
        );
    }

    #[test]
    fn an_answer_that_cannot_be_typed_is_asked_again_with_the_reason() {
        let (asked, shown) = ask(&field(FieldKind::Confirm, true), &["maybe", "yes"]);
        assert_eq!(values(asked), ["yes"]);
        assert!(
            shown.contains("not accepted: field `f` was not answered yes or no"),
            "{shown}"
        );
        let integer = field(FieldKind::Number { integer: true }, true);
        let (asked, shown) = ask(&integer, &["abc", "4.5", "42"]);
        assert_eq!(values(asked), ["42"]);
        assert_eq!(shown.matches("not accepted").count(), 2, "{shown}");
        let options = ["low", "mid", "high"]
            .iter()
            .map(|v| ChoiceOption {
                value: (*v).into(),
                label: (*v).into(),
            })
            .collect();
        let choice = field(
            FieldKind::Choice {
                options,
                multi: false,
            },
            true,
        );
        let (asked, shown) = ask(&choice, &["9", "1,2", "3"]);
        assert_eq!(values(asked), ["high"]);
        assert_eq!(shown.matches("not accepted").count(), 2, "{shown}");
    }

    #[test]
    fn input_ending_while_re_asking_is_unavailable_not_an_answer() {
        let (asked, _) = ask(&field(FieldKind::Confirm, false), &["perhaps"]);
        assert!(matches!(asked, FieldAnswer::Unavailable));
    }

    fn url_request(url: &str, message: &str) -> UrlRequest {
        rho_proto_core::features::elicitation::url_request_from_params(
            &serde_json::json!({"mode": "url", "message": message, "url": url, "elicitationId": "e"}),
            true,
        )
        .expect("valid")
    }

    /// Asks to open `request` with `lines` as the person's input; returns
    /// the answer, what was shown and what was opened.
    fn ask_open(request: &UrlRequest, lines: &[&str]) -> (UrlAnswer, String, Vec<String>) {
        let mut input = lines.iter().map(|l| format!("{l}\n"));
        let mut shown = Vec::new();
        let mut opened = Vec::new();
        let asked = Asked {
            server: "srv\x1b]0;x\x07".to_owned(),
            call: Some(3),
            what: Some("connect".to_owned()),
        };
        let answer = ask_url(
            &mut shown,
            &mut || input.next(),
            &asked,
            request,
            &mut |url: &str| opened.push(url.to_owned()),
        );
        (answer, String::from_utf8_lossy(&shown).into_owned(), opened)
    }

    #[test]
    fn a_url_is_shown_whole_with_its_host_apart_and_opened_only_on_yes() {
        let request = url_request(
            "https://auth.example.com/connect?e=1",
            "Connect\x1b[2J your account",
        );
        let (answer, shown, opened) = ask_open(&request, &["y"]);
        assert_eq!(answer, UrlAnswer::Opened);
        assert_eq!(opened, ["https://auth.example.com/connect?e=1"]);
        assert!(
            shown.contains(
                "── MCP server `srv\\x1b]0;x\\x07` asks during `connect` to open a URL in your browser ──"
            ),
            "{shown}"
        );
        assert!(shown.contains("  host: auth.example.com\n"), "{shown}");
        assert!(
            shown.contains("  URL:  https://auth.example.com/connect?e=1\n"),
            "{shown}"
        );
        assert!(shown.contains("Connect\\x1b[2J your account"), "{shown}");
        assert!(!shown.contains('\x1b'), "{shown:?}");
        assert!(shown.contains("sent to the server: accept"), "{shown}");
        for (lines, expected) in [
            (&[""][..], UrlAnswer::Declined),
            (&["n"][..], UrlAnswer::Declined),
            (&["yes please"][..], UrlAnswer::Declined),
            (&["!cancel"][..], UrlAnswer::Dismissed),
            (&[][..], UrlAnswer::CouldNotAsk),
        ] {
            let (answer, _, opened) = ask_open(&request, lines);
            assert_eq!(answer, expected, "{lines:?}");
            assert!(opened.is_empty(), "{lines:?} opened {opened:?}");
        }
    }

    #[test]
    fn an_internationalized_host_is_shown_in_punycode_and_as_written_with_warnings() {
        let request = url_request("https://user@pаypal.com/login", "Log in");
        let (_, shown, _) = ask_open(&request, &["n"]);
        assert!(shown.contains("  host: xn--pypal-4ve.com\n"), "{shown}");
        assert!(
            shown.contains("(written pаypal.com — punycode above)"),
            "{shown}"
        );
        assert!(
            shown.contains("warning: the host is an internationalized name"),
            "{shown}"
        );
        assert!(
            shown.contains("warning: the URL carries a user name"),
            "{shown}"
        );
    }

    #[test]
    fn urls_a_call_needs_are_opened_on_yes_and_the_call_retried_only_on_yes() {
        let requests = [
            url_request("https://a.example/one", "First"),
            url_request("https://b.example/two", "Second"),
        ];
        let run = |lines: &[&str]| {
            let mut input = lines.iter().map(|l| format!("{l}\n"));
            let mut shown = Vec::new();
            let mut opened = Vec::new();
            let retry = visit_and_retry(
                &mut shown,
                &mut || input.next(),
                "srv",
                "work",
                &requests,
                &mut |url: &str| opened.push(url.to_owned()),
            );
            (retry, String::from_utf8_lossy(&shown).into_owned(), opened)
        };
        let (retry, shown, opened) = run(&["y", "n", "y"]);
        assert!(retry);
        assert_eq!(opened, ["https://a.example/one"]);
        assert!(
            shown.contains("MCP server `srv` needs you to visit 2 URLs before `work` can go on"),
            "{shown}"
        );
        assert!(shown.contains("  host: b.example\n"), "{shown}");
        let (retry, _, opened) = run(&["n", "n", ""]);
        assert!(!retry && opened.is_empty());
        let (retry, _, opened) = run(&["y"]);
        assert!(!retry, "no answer to the retry question is no");
        assert_eq!(opened.len(), 1);
    }
}
