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
//! - `--yes-defaults` (scripts, the conformance suite) accepts every form
//!   with its defaults and declines one with a required field that has
//!   none; it refuses sampling, which has no default.
//! - Otherwise nobody can be asked, and the runtime declares no
//!   elicitation, so a well-behaved server never asks.
//!
//! The model is `[sampling] command = [...]` in the selected config file:
//! rho runs it with the flattened prompt on stdin (the system prompt in
//! `RHO_SAMPLING_SYSTEM_PROMPT`) and takes its stdout as the completion,
//! within three minutes. Each completion is appended to
//! `~/.rho/usage.jsonl` under the purpose `mcp_sampling`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rho_proto_core::features::elicitation::{
    Field, FieldKind, Form, FormAnswer, check_field_answer,
};
use rho_proto_core::host::{HostServices, Model, Responder, UsageLedger};
use rho_proto_core::text::terminal::{self, sanitize_line};

use crate::sampling::{CommandModel, FileLedger};

/// Whether a person can be asked: a terminal on both ends, not in CI.
pub(crate) fn person_present() -> bool {
    std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal()
        && std::env::var_os("CI").is_none_or(|v| v.is_empty() || v == "false")
}

/// The host services for a command that may ask questions.
pub(crate) fn services(yes_defaults: bool, model_command: Option<Vec<String>>) -> HostServices {
    let responder: Option<Arc<dyn Responder>> = if yes_defaults {
        Some(Arc::new(Defaults))
    } else if person_present() {
        Some(Arc::new(Terminal {
            lock: Mutex::new(()),
        }))
    } else {
        None
    };
    services_with(responder, model_command)
}

/// The host services with this `responder`: the sampling model is the
/// configured command, and usage goes to the ledger under `~/.rho/`.
pub(crate) fn services_with(
    responder: Option<Arc<dyn Responder>>,
    model_command: Option<Vec<String>>,
) -> HostServices {
    let model = model_command
        .filter(|c| !c.is_empty())
        .map(|command| Arc::new(CommandModel::new(command)) as Arc<dyn Model>);
    let ledger = ledger_path().map(|path| Arc::new(FileLedger::new(path)) as Arc<dyn UsageLedger>);
    HostServices {
        responder,
        model,
        ledger,
        authorizer: None,
    }
}

/// Accepts forms with their defaults; refuses sampling.
struct Defaults;

impl Responder for Defaults {
    fn elicit(&self, server: &str, form: &Form) -> FormAnswer {
        let mut answers = std::collections::BTreeMap::new();
        for field in &form.fields {
            match &field.default {
                Some(values) => {
                    answers.insert(field.name.clone(), values.clone());
                }
                None if field.required => {
                    tracing::info!(server, field = %field.name, "--yes-defaults: a required field has no default; declining");
                    return FormAnswer::CouldNotAsk;
                }
                None => {}
            }
        }
        FormAnswer::Submitted(answers)
    }

    fn confirm_sampling(&self, server: &str, question: &str) -> bool {
        tracing::info!(server, "--yes-defaults refuses sampling: {question}");
        false
    }
}

/// Asks on the terminal, one question at a time.
struct Terminal {
    /// One form at a time, even when two servers ask at once.
    lock: Mutex<()>,
}

impl Responder for Terminal {
    fn elicit(&self, server: &str, form: &Form) -> FormAnswer {
        let _one = self.lock.lock();
        ask_form(&mut std::io::stderr().lock(), &mut read_line, server, form)
    }

    fn confirm_sampling(&self, server: &str, question: &str) -> bool {
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
    server: &str,
    form: &Form,
) -> FormAnswer {
    let _ = writeln!(err, "\n── MCP server `{}` asks ──", sanitize_line(server));
    write_indented(err, &form.message);
    let _ = writeln!(
        err,
        "(Enter keeps a [default]; type `!cancel` to dismiss the form)"
    );
    let mut answers = std::collections::BTreeMap::new();
    for field in &form.fields {
        match ask_field(err, read, field) {
            Asked::Values(values) => {
                answers.insert(field.name.clone(), values);
            }
            Asked::Skip => {}
            Asked::Dismiss => return FormAnswer::Dismissed,
            Asked::Unavailable => return FormAnswer::CouldNotAsk,
        }
    }
    FormAnswer::Submitted(answers)
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

enum Asked {
    Values(Vec<String>),
    Skip,
    Dismiss,
    Unavailable,
}

/// Asks one field on `err`, reading answers with `read` (a line, or `None`
/// when there is no more input).
fn ask_field(
    err: &mut impl Write,
    read: &mut dyn FnMut() -> Option<String>,
    field: &Field,
) -> Asked {
    let label = sanitize_line(field.title.as_deref().unwrap_or(&field.name));
    let _ = writeln!(
        err,
        "\n  {label}{}",
        if field.required { " (required)" } else { "" }
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
            return Asked::Unavailable;
        };
        let line = line.trim();
        if line == "!cancel" {
            return Asked::Dismiss;
        }
        if line.is_empty() {
            match &field.default {
                Some(values) => return Asked::Values(values.clone()),
                None if field.required => {
                    let _ = writeln!(err, "  (required: type an answer, or `!cancel`)");
                    continue;
                }
                None => return Asked::Skip,
            }
        }
        let values = parse_answer(field, line);
        // An answer that cannot carry the field's type is asked again with
        // the reason, never sent on to become a decline of the whole form.
        match check_field_answer(field, &values) {
            Ok(()) => return Asked::Values(values),
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

fn ledger_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".rho").join("usage.jsonl"))
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
    fn ask(field: &Field, lines: &[&str]) -> (Asked, String) {
        let mut input = lines.iter().map(|l| format!("{l}\n"));
        let mut shown = Vec::new();
        let asked = ask_field(&mut shown, &mut || input.next(), field);
        (asked, String::from_utf8_lossy(&shown).into_owned())
    }

    fn values(asked: Asked) -> Vec<String> {
        match asked {
            Asked::Values(v) => v,
            Asked::Skip => panic!("skipped"),
            Asked::Dismiss => panic!("dismissed"),
            Asked::Unavailable => panic!("ran out of input"),
        }
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
        assert!(matches!(asked, Asked::Unavailable));
    }
}
