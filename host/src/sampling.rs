//! The sampling services `rho mcp` lends its runtime: a command as the
//! model (`[sampling] command = [...]`) and a ledger file for the spend
//! (`~/.rho/usage.jsonl`), put together with the host's own responder by
//! [`host_services`]. The traits they implement, and the gates in front of
//! them, are the core's (`rho_proto_core::host`); these are the IO: a
//! child process and an appended file. An agent with a model of its own
//! implements `Model` itself and keeps the ledger.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use rho_proto_core::host::{HostServices, Model, ModelError, Responder, UsageLedger};

/// The host services with `responder` (the host's UI for forms and
/// sampling consent; `None` when no one can be asked): the sampling model
/// is `model_command` (the config's `[sampling] command`), and usage goes
/// to the ledger at `~/.rho/usage.jsonl` (none without a home directory).
/// No authorizer: see [`crate::HostBuilder`], which installs one.
pub fn host_services(
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
        ..HostServices::default()
    }
}

/// `~/.rho/usage.jsonl`, when there is a home directory.
pub(crate) fn ledger_path() -> Option<PathBuf> {
    Some(crate::config::home_dir()?.join(".rho").join("usage.jsonl"))
}

/// How long the command model may take for one completion.
const MODEL_BUDGET: Duration = Duration::from_secs(180);

/// A command as the model: it gets the flattened prompt on stdin and the
/// system prompt in `RHO_SAMPLING_SYSTEM_PROMPT`, and its stdout is the
/// completion, within three minutes (sampling's bound).
pub(crate) struct CommandModel {
    command: Vec<String>,
}

impl CommandModel {
    /// A model that runs `command` (program, then arguments).
    pub(crate) fn new(command: Vec<String>) -> Self {
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

    fn complete(&self, system: &str, prompt: &str) -> Result<String, ModelError> {
        let (program, args) = self
            .command
            .split_first()
            .ok_or_else(|| ModelError::new("[sampling] command is empty"))?;
        let mut command = Command::new(program);
        // On Linux the model dies with rho, whatever ends rho.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        rho_os::process::die_with_parent(&mut command);
        // On Windows it starts suspended, and runs once in its Job Object.
        #[cfg(windows)]
        rho_os::process::start_suspended(&mut command);
        let mut child = command
            .args(args)
            .env("RHO_SAMPLING_SYSTEM_PROMPT", system)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                ModelError::new(format!(
                    "[sampling] command `{program}` could not start: {e}"
                ))
            })?;
        // On Windows it lives in a Job Object with kill-on-close, as a
        // server does: it ends with this call (what it left running too)
        // and with rho, whatever ends rho.
        #[cfg(windows)]
        let _tree = match rho_os::process::ProcessGroup::of(&child) {
            Ok(tree) => tree,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ModelError::new(format!(
                    "[sampling] command `{program}` could not be tied to rho's lifetime: {e}"
                )));
            }
        };
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
                    return Err(ModelError::new(format!(
                        "[sampling] command `{program}` took longer than {} s",
                        MODEL_BUDGET.as_secs()
                    )));
                }
                Err(e) => {
                    return Err(ModelError::new(format!(
                        "[sampling] command `{program}`: {e}"
                    )));
                }
            }
        };
        let text = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(ModelError::new(format!(
                "[sampling] command `{program}` failed ({status})"
            )));
        }
        Ok(text.trim_end().to_owned())
    }
}

/// A usage ledger that appends one JSON line per completion to a file
/// (the CLI's is `~/.rho/usage.jsonl`).
pub(crate) struct FileLedger {
    path: PathBuf,
}

impl FileLedger {
    /// A ledger appending to `path` (created with its directory).
    pub(crate) fn new(path: PathBuf) -> Self {
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
        // Owner-only, as everything rho keeps under ~/.rho: the directory
        // (which this may be the first to create) and the file, created
        // that way rather than repaired later.
        let written = self
            .path
            .parent()
            .map_or(Ok(()), crate::config::ensure_private_dir)
            .and_then(|()| {
                let mut options = std::fs::OpenOptions::new();
                options.create(true).append(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                options.open(&self.path)
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> CommandModel {
        CommandModel::new(vec!["sh".into(), "-c".into(), script.into()])
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rho-sampling-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_command_reads_the_prompt_and_the_system_prompt_and_answers_on_stdout() {
        let model = sh(r#"printf '%s|' "$RHO_SAMPLING_SYSTEM_PROMPT"; cat; echo; echo"#);
        assert_eq!(model.name(), "command:sh");
        assert_eq!(
            model.complete("be brief", "User:\nhi"),
            Ok("be brief|User:\nhi".to_owned()),
            "stdout, trailing newlines trimmed"
        );
    }

    #[test]
    fn a_failing_missing_or_empty_command_is_an_error_naming_it() {
        let failed = sh("echo partial; exit 3")
            .complete("", "")
            .unwrap_err()
            .reason;
        assert!(failed.contains("command `sh` failed"), "{failed}");
        assert!(failed.contains('3'), "{failed}");
        let missing = CommandModel::new(vec!["/nonexistent/rho-model".into()])
            .complete("", "")
            .unwrap_err()
            .reason;
        assert!(
            missing.contains("`/nonexistent/rho-model` could not start"),
            "{missing}"
        );
        let empty = CommandModel::new(Vec::new()).complete("", "").unwrap_err();
        assert_eq!(empty, ModelError::new("[sampling] command is empty"));
        assert_eq!(CommandModel::new(Vec::new()).name(), "command:command");
    }

    #[test]
    fn the_ledger_appends_one_line_per_completion_creating_its_directory() {
        let dir = scratch("ledger");
        let path = dir.join("nested").join("usage.jsonl");
        let ledger = FileLedger::new(path.clone());
        ledger.record_sampling("srv", "command:m", 12, 3);
        ledger.record_sampling("other", "command:m", 1, 2);
        let text = std::fs::read_to_string(&path).expect("the ledger was written");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["purpose"], "mcp_sampling");
        assert_eq!(lines[0]["server"], "srv");
        assert_eq!(lines[0]["model"], "command:m");
        assert_eq!(lines[0]["prompt_chars"], 12);
        assert_eq!(lines[0]["completion_chars"], 3);
        assert!(lines[0]["time"].as_u64().is_some_and(|t| t > 0));
        assert_eq!(lines[1]["server"], "other");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &std::path::Path| {
                std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
            };
            assert_eq!(mode(&path), 0o600, "the ledger is the owner's only");
            assert_eq!(mode(&dir.join("nested")), 0o700, "so is its directory");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_ledger_that_cannot_be_written_loses_the_line_not_the_completion() {
        let dir = scratch("ledger-blocked");
        std::fs::create_dir_all(&dir).expect("scratch dir");
        // Its directory is a file: nothing can be created under it.
        let blocker = dir.join("not-a-dir");
        std::fs::write(&blocker, "x").expect("blocker");
        let ledger = FileLedger::new(blocker.join("usage.jsonl"));
        ledger.record_sampling("srv", "m", 1, 1);
        assert_eq!(std::fs::read_to_string(&blocker).expect("blocker"), "x");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
