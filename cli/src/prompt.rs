//! `rho mcp prompt <id> <prompt> [ARGS...]`: start one server, fetch one
//! of its prompts with `prompts/get`, and print the one user turn the
//! model would get (`--json`: the messages as the server sent them, and
//! that turn).
//!
//! The arguments follow the palette's rules exactly
//! ([`rho_proto_core::features::prompts`]): a prompt with one argument
//! takes every word as its value, joined by blanks; one with several reads
//! `key=value` words (quote a value with blanks for the shell). A missing
//! required argument, an unknown key, a word without `=` or a repeated key
//! is a usage error (exit 2) that names the prompt's arguments, and no
//! `prompts/get` is sent. The turn is capped by the server's
//! `max_output_bytes`.
//!
//! [`connect`] is the startup the prompt, read and complete commands
//! share: one configured, enabled server started alone, with its stored
//! login, stopped by a signal like every other command.

use std::process::ExitCode;

use rho_host::{CallOptions, Cancel, Host, LoadedConfig, RuntimeKind};
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::prompts;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::ServerView;
use rho_proto_core::runtime::status::{ReadyReport, ServerStatus};
use rho_proto_core::text::terminal::sanitize;
use serde_json::json;

use crate::{Failure, check_stopped, unknown_server, unless_stopped, write_stdout};

/// `rho mcp prompt` arguments.
#[derive(clap::Args, Debug)]
#[command(
    override_usage = "rho mcp prompt [OPTIONS] <ID> <PROMPT> [ARGS]...\n       rho mcp prompt [OPTIONS] --stdio <COMMAND> <PROMPT> [ARGS]...\n       rho mcp prompt [OPTIONS] --url <URL> <PROMPT> [ARGS]..."
)]
pub(crate) struct PromptArgs {
    /// The server identity (with --stdio or --url, the prompt's name).
    pub(crate) id: String,
    /// The prompt's name, as the server lists it (`rho mcp show <id>
    /// --connect` lists them).
    pub(crate) prompt: Option<String>,
    /// Its arguments: the value of a one-argument prompt (every word,
    /// joined by blanks), or key=value words. Flags are flags wherever
    /// they stand (`hello --json` is the value `hello` and --json); after
    /// `--` every word is a value (`-- --json` sends `--json`).
    #[arg(value_name = "ARGS", allow_negative_numbers = true)]
    pub(crate) args: Vec<String>,
    #[command(flatten)]
    pub(crate) adhoc: crate::adhoc::AdhocArgs,
    /// Print the messages as the server sent them, and the turn, as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// One started server and what it said at startup.
pub(crate) struct Connected {
    /// The runtime, with only this server started.
    pub(crate) host: Host,
    /// The server's view.
    pub(crate) view: ServerView,
    /// Its cancel token: the first stop signal cancels it.
    pub(crate) cancel: Cancel,
}

impl Connected {
    /// The ready report (checked by [`connect`]).
    pub(crate) fn report(&self) -> &ReadyReport {
        match &self.view.status {
            ServerStatus::Ready(report) => report,
            _ => unreachable!("connect returns only ready servers"),
        }
    }

    /// Sends `request`, shuts the server down, and hands back the answer
    /// (a stop signal meanwhile ends the command).
    pub(crate) fn request_then_shut_down(
        self,
        request: FeatureRequest,
    ) -> Result<serde_json::Value, Failure> {
        self.ask_then_shut_down(|host, server, cancel| {
            host.request(server, request, CallOptions::new().cancel(cancel))
        })
    }

    /// Asks the server through the host (`ask` gets the host, the
    /// server's id and the command's cancel token), shuts the server down,
    /// and hands back the answer (a stop signal meanwhile ends the
    /// command).
    pub(crate) fn ask_then_shut_down<T, E: std::fmt::Display>(
        self,
        ask: impl FnOnce(&Host, &str, &Cancel) -> Result<T, E>,
    ) -> Result<T, Failure> {
        let outcome = ask(&self.host, &self.view.id, &self.cancel);
        self.host.shutdown();
        check_stopped()?;
        outcome.map_err(|e| Failure::Runtime(e.to_string()))
    }
}

/// Starts server `id` alone and waits until it is ready; a server that
/// is unknown (exit 2), invalid, disabled or failed (exit 1) is an error.
pub(crate) fn connect(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    id: &str,
) -> Result<Connected, Failure> {
    connect_with(loaded, kind, options, id, false)
}

/// [`connect`], with the sessions kept moving between calls when
/// `between_calls` (`read --watch` waits for updates, not on a call, and a
/// smol host moves its sessions only while a call waits unless it has its
/// executor thread).
pub(crate) fn connect_with(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    mut options: RuntimeOptions,
    id: &str,
    between_calls: bool,
) -> Result<Connected, Failure> {
    crate::startable_server(loaded, id)?;
    // Before the connect is prepared: a stop signal then ends the startup.
    let cancel = crate::signals::install();
    options.interrupt = Some(cancel.clone());
    let mut builder = Host::builder(loaded)
        .runtime(kind)
        .options(options)
        .only(|s| s == id);
    if between_calls {
        builder = builder.executor_thread();
    }
    let host = unless_stopped(crate::start_host(builder.prepare()))?;
    let Some(view) = host.server(id) else {
        host.shutdown();
        return Err(Failure::Usage(unknown_server(loaded, id)));
    };
    if let ServerStatus::Failed { error, .. } | ServerStatus::Invalid { error } = &view.status {
        let error = error.clone();
        host.shutdown();
        return Err(Failure::Runtime(error));
    }
    if !matches!(view.status, ServerStatus::Ready(_)) {
        host.shutdown();
        return Err(Failure::Runtime(format!("server `{id}` did not start")));
    }
    Ok(Connected { host, view, cancel })
}

/// Runs `rho mcp prompt`.
pub(crate) fn run(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &PromptArgs,
) -> Result<ExitCode, Failure> {
    let (id, name, words) =
        crate::adhoc::shift(args.adhoc.given(), &args.id, &args.prompt, &args.args).ok_or_else(
            || {
                Failure::Usage(
            "give the prompt's name after the server id (`rho mcp show <id> --connect` lists them)"
                .into(),
        )
            },
        )?;
    let connected = connect(loaded, kind, options, id)?;
    let catalog = &connected.report().catalog;
    let refuse = |connected: Connected, failure: Failure| {
        connected.host.shutdown();
        Err(failure)
    };
    if !catalog.prompts.offered {
        return refuse(
            connected,
            Failure::Usage(format!("server `{id}` offers no prompts")),
        );
    }
    let Some(prompt) = catalog.prompt(name) else {
        let names: Vec<&str> = catalog
            .prompts
            .items
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        let near = rho_host::did_you_mean(name, names.iter().copied())
            .map(|near| format!("; did you mean `{near}`?"))
            .unwrap_or_default();
        let listed = match (&catalog.prompts.error, names.is_empty()) {
            (Some(error), _) => format!(" (its prompts could not be listed: {error})"),
            (None, true) => " (it lists none)".into(),
            (None, false) => format!("{near} (its prompts: {})", names.join(", ")),
        };
        return refuse(
            connected,
            Failure::Usage(format!("server `{id}` has no prompt `{name}`{listed}")),
        );
    };
    let arguments = match prompts::arguments_from_words(prompt, &words) {
        Ok(arguments) => arguments,
        Err(error) => return refuse(connected, Failure::Usage(error.to_string())),
    };
    let name = prompt.name.clone();
    let rho_host::PromptTurn {
        turn,
        result,
        as_sent: value,
    } = connected.ask_then_shut_down(|host, server, cancel| {
        host.prompt_turn(server, &name, arguments, cancel)
    })?;
    if args.json {
        let doc = json!({
            "schema": 1,
            "document": "prompt",
            "server": id,
            "prompt": name,
            "result": value,
            "description": result.description,
            "messages": result.messages,
            "turn": turn,
        });
        write_stdout(&crate::output::json_text(&doc))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = sanitize(&turn).into_owned();
    text.push('\n');
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}
