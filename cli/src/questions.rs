//! The CLI's side of questions from servers: who answers forms and
//! sampling confirmations, the model sampling spends, and the usage ledger.
//!
//! - On a terminal (stdin and stderr are terminals, and `CI` is not set), a
//!   form is asked question by question on stderr, titled with the asking
//!   server's identity so it is never mistaken for rho's own question.
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

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rho_io_blocking::host::{
    CommandModel, FileLedger, HostServices, Model, Responder, UsageLedger,
};
use rho_proto_core::elicitation::{Field, FieldKind, Form, FormAnswer};

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
    let model = model_command
        .filter(|c| !c.is_empty())
        .map(|command| Arc::new(CommandModel::new(command)) as Arc<dyn Model>);
    let ledger = ledger_path().map(|path| Arc::new(FileLedger::new(path)) as Arc<dyn UsageLedger>);
    HostServices {
        responder,
        model,
        ledger,
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
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "\n── MCP server `{server}` asks ──\n{}", form.message);
        let _ = writeln!(
            err,
            "(Enter keeps a [default]; type `!cancel` to dismiss the form)"
        );
        let mut answers = std::collections::BTreeMap::new();
        for field in &form.fields {
            match ask_field(&mut err, field) {
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

    fn confirm_sampling(&self, server: &str, question: &str) -> bool {
        let _one = self.lock.lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\n── MCP server `{server}` asks to use your model ──\n{question}\nAllow? [y/N] "
        );
        let _ = err.flush();
        matches!(
            read_line().as_deref().map(str::trim),
            Some("y" | "Y" | "yes" | "Yes")
        )
    }
}

enum Asked {
    Values(Vec<String>),
    Skip,
    Dismiss,
    Unavailable,
}

fn ask_field(err: &mut impl Write, field: &Field) -> Asked {
    let label = field.title.as_deref().unwrap_or(&field.name);
    let _ = writeln!(
        err,
        "\n{label}{}",
        if field.required { " (required)" } else { "" }
    );
    for help in &field.help {
        let _ = writeln!(err, "  {help}");
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
            .collect::<Vec<_>>()
            .join(", ")
    });
    match &field.kind {
        FieldKind::Choice { options, multi } => {
            for (i, option) in options.iter().enumerate() {
                let _ = writeln!(err, "  {}) {}", i + 1, option.label);
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
    let line = loop {
        let shown = default
            .as_ref()
            .map(|d| format!("[{d}] "))
            .unwrap_or_default();
        let _ = write!(err, "> {shown}");
        let _ = err.flush();
        let Some(line) = read_line() else {
            return Asked::Unavailable;
        };
        let line = line.trim().to_owned();
        if line == "!cancel" {
            return Asked::Dismiss;
        }
        if !line.is_empty() {
            break line;
        }
        match &field.default {
            Some(values) => return Asked::Values(values.clone()),
            None if field.required => {
                let _ = writeln!(err, "  (required: type an answer, or `!cancel`)");
            }
            None => return Asked::Skip,
        }
    };
    let line = line.as_str();
    match &field.kind {
        FieldKind::Choice { options, multi } => {
            let picked: Vec<String> = line
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| match s.parse::<usize>() {
                    Ok(n) if n >= 1 && n <= options.len() => options[n - 1].value.clone(),
                    _ => s.to_owned(),
                })
                .collect();
            if !*multi && picked.len() > 1 {
                // The core declines an answer that cannot carry its type.
                return Asked::Values(picked);
            }
            Asked::Values(picked)
        }
        _ => Asked::Values(vec![line.to_owned()]),
    }
}

fn read_line() -> Option<String> {
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
