//! What the host lends the runtime for questions from servers: someone to
//! ask (forms, sampling confirmations), a model to spend, and a ledger to
//! record the spend. All optional: a runtime without a responder declares
//! no elicitation, and one without a model declares no sampling, so a
//! well-behaved server never asks.
//!
//! [`answer`] is the one place a question is answered, shared by both
//! executors (the smol one runs it on its blocking pool): sampling asks the
//! person first (gate two; gate one is the server's `sampling = "ask"`),
//! calls the model only on a yes, and records the spend.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rho_proto_core::driving::Answer;
use rho_proto_core::elicitation::{Form, FormAnswer};
use rho_proto_core::sampling::{SamplingRequest, summary};
use rho_proto_core::session::{Question, SamplingAnswer};

/// Puts questions in front of a person. Calls may block for as long as the
/// person takes; the call's budget is paused meanwhile.
pub trait Responder: Send + Sync {
    /// Shows a server's form, titled with the server's identity so it is
    /// never mistaken for rho's own question, and returns the answers.
    fn elicit(&self, server: &str, form: &Form) -> FormAnswer;
    /// Asks whether the server may spend the user's tokens; `question`
    /// names the server, the message count and the token ceiling.
    fn confirm_sampling(&self, server: &str, question: &str) -> bool;
}

/// The user's model, for sampling.
pub trait Model: Send + Sync {
    /// The model's name, reported to the server.
    fn name(&self) -> String;
    /// One completion: a system prompt and one user turn.
    fn complete(&self, system: &str, prompt: &str) -> Result<String, String>;
}

/// Where sampling spend is recorded, apart from the user's own turns.
pub trait UsageLedger: Send + Sync {
    /// Records one sampling completion under the `mcp_sampling` purpose.
    fn record_sampling(
        &self,
        server: &str,
        model: &str,
        prompt_chars: usize,
        completion_chars: usize,
    );
}

/// The host's side of questions, as given to a runtime.
#[derive(Clone, Default)]
pub struct HostServices {
    /// Someone to ask; `None` declares no elicitation and refuses sampling.
    pub responder: Option<Arc<dyn Responder>>,
    /// The model; `None` declares no sampling.
    pub model: Option<Arc<dyn Model>>,
    /// The usage ledger, when the host keeps one.
    pub ledger: Option<Arc<dyn UsageLedger>>,
}

impl std::fmt::Debug for HostServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostServices")
            .field("responder", &self.responder.is_some())
            .field("model", &self.model.is_some())
            .field("ledger", &self.ledger.is_some())
            .finish()
    }
}

impl HostServices {
    /// Whether this run can put a form in front of a person.
    pub fn can_elicit(&self) -> bool {
        self.responder.is_some()
    }

    /// Whether this run can sample: a model to spend and a person to ask.
    pub fn can_sample(&self) -> bool {
        self.model.is_some() && self.responder.is_some()
    }
}

/// Answers one question, blocking: asks the person, and for sampling calls
/// the model on a yes and records the spend.
pub fn answer(services: &HostServices, server: &str, question: &Question) -> Answer {
    match question {
        Question::Elicitation(form) => Answer::Form(match &services.responder {
            Some(responder) => responder.elicit(server, form),
            None => FormAnswer::CouldNotAsk,
        }),
        Question::Sampling(request) => Answer::Sampling(sample(services, server, request)),
    }
}

fn sample(services: &HostServices, server: &str, request: &SamplingRequest) -> SamplingAnswer {
    let (Some(responder), Some(model)) = (&services.responder, &services.model) else {
        return SamplingAnswer::Refused;
    };
    if !responder.confirm_sampling(server, &summary(server, request)) {
        return SamplingAnswer::Refused;
    }
    match model.complete(&request.system_prompt, &request.prompt) {
        Ok(text) => {
            let name = model.name();
            if let Some(ledger) = &services.ledger {
                ledger.record_sampling(server, &name, request.prompt.len(), text.len());
            }
            SamplingAnswer::Completed { text, model: name }
        }
        Err(reason) => SamplingAnswer::Failed(reason),
    }
}

/// How long the command model may take for one completion.
const MODEL_BUDGET: Duration = Duration::from_secs(180);

/// A command as the model: it gets the flattened prompt on stdin and the
/// system prompt in `RHO_SAMPLING_SYSTEM_PROMPT`, and its stdout is the
/// completion, within three minutes (sampling's bound).
pub struct CommandModel {
    command: Vec<String>,
}

impl CommandModel {
    /// A model that runs `command` (program, then arguments).
    pub fn new(command: Vec<String>) -> Self {
        Self { command }
    }
}

impl Model for CommandModel {
    fn name(&self) -> String {
        let program = self
            .command
            .first()
            .map(String::as_str)
            .unwrap_or("command");
        let base = std::path::Path::new(program)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(program);
        format!("command:{base}")
    }

    fn complete(&self, system: &str, prompt: &str) -> Result<String, String> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| "[sampling] command is empty".to_owned())?;
        let mut command = Command::new(program);
        // On Linux the model dies with rho, whatever ends rho.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        rho_os::process::die_with_parent(&mut command);
        let mut child = command
            .args(args)
            .env("RHO_SAMPLING_SYSTEM_PROMPT", system)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("[sampling] command `{program}` could not start: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(prompt.as_bytes());
        }
        let mut stdout = child.stdout.take();
        let reader = std::thread::spawn(move || {
            let mut out = String::new();
            if let Some(stdout) = stdout.as_mut() {
                let _ = stdout.read_to_string(&mut out);
            }
            out
        });
        let until = Instant::now() + MODEL_BUDGET;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!(
                        "[sampling] command `{program}` took longer than {} s",
                        MODEL_BUDGET.as_secs()
                    ));
                }
                Err(e) => return Err(format!("[sampling] command `{program}`: {e}")),
            }
        };
        let text = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(format!("[sampling] command `{program}` failed ({status})"));
        }
        Ok(text.trim_end().to_owned())
    }
}

/// A usage ledger that appends one JSON line per completion to a file
/// (the CLI's is `~/.rho/usage.jsonl`).
pub struct FileLedger {
    path: PathBuf,
}

impl FileLedger {
    /// A ledger appending to `path` (created with its directory).
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }
}

impl UsageLedger for FileLedger {
    fn record_sampling(
        &self,
        server: &str,
        model: &str,
        prompt_chars: usize,
        completion_chars: usize,
    ) {
        let line = serde_json::json!({
            "time": SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            "purpose": "mcp_sampling",
            "server": server,
            "model": model,
            "prompt_chars": prompt_chars,
            "completion_chars": completion_chars,
        });
        let written = self
            .path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
            })
            .and_then(|mut file| writeln!(file, "{line}"));
        if let Err(e) = written {
            tracing::warn!(
                "could not record sampling usage in {}: {e}",
                self.path.display()
            );
        }
    }
}
