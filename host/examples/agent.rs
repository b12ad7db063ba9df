//! An agent loop over `rho-host`, with a scripted stand-in for the model.
//!
//! What a real agent does with this runtime, step by step, printed as it
//! goes: load the config (plugins merged), start the servers with the
//! stored OAuth logins, build the system prompt with every server's
//! instructions fenced, hand the model the tools with their schemas as a
//! model API takes them, then let the model choose calls. The stand-in
//! model is deterministic: it reads the exported tools and picks the ones
//! its script names (an echo, a long call with progress, the same call
//! cancelled halfway, a tool that asks a form), and the host's UI (here a
//! scripted one) answers the form. Then a prompt and a resource are
//! attached, and everything shuts down.
//!
//! ```sh
//! cargo run -p rho-host --example agent -- --config examples/rho.toml
//! cargo run -p rho-host --example agent -- --config examples/rho.toml --runtime blocking
//! ```
//!
//! The README's test command runs it on both executors against
//! server-everything and checks that every step printed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use rho_host::{
    Asking, Attachment, CallError, CallOptions, Cancel, ExportedTool, FormAnswer, Host, LoginMode,
    PendingQuestion, RuntimeKind, ServerStatus, ToolCallError,
};
use serde_json::{Value, json};

/// The agent's own part of the system prompt.
const BASE_PROMPT: &str = "You are a helpful agent. Use the tools when they help.";

#[path = "support/args.rs"]
mod args;
#[path = "support/form.rs"]
mod form;

fn main() -> ExitCode {
    let args = match args::parse("agent", &["--strict"]) {
        Ok(args) => args,
        Err(usage) => {
            eprintln!("agent: {usage}");
            return ExitCode::from(2);
        }
    };
    let strict = args.flags.iter().any(|f| f == "--strict");
    match run(args.config, args.kind, strict) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the loop. `strict` (the test command's) fails the run when a step
/// the script wants could not be taken: a tool not offered, no prompt or
/// resource to attach, a server not ready.
fn run(config: Option<PathBuf>, kind: RuntimeKind, strict: bool) -> Result<(), String> {
    // 1. The config: `--config PATH`, else ~/.rho/config.toml, with the
    //    servers of its Agent Plugins after its own.
    let loaded = rho_host::LoadedConfig::load(config)?;
    step(
        1,
        &format!(
            "config {} ({} server(s))",
            loaded.describe(),
            loaded.config.servers.len()
        ),
    );

    // 2. Start them the way `rho mcp` does: stored OAuth logins applied,
    //    refreshed when expiring. Questions from servers come to the
    //    host's UI as values, answered on its own thread when it likes.
    let (responder, questions) = rho_host::question_channel();
    std::thread::spawn(move || {
        while let Some(pending) = questions.next_blocking() {
            ui(pending);
        }
    });
    let services = rho_host::host_services(Some(responder), loaded.config.sampling_command.clone());
    let host = Host::builder(&loaded)
        .runtime(kind)
        .services(services)
        .login(LoginMode::Never)
        .executor_thread()
        .connect()
        .host;
    for server in host.servers() {
        let status = match &server.status {
            ServerStatus::Ready(report) => format!("ready ({})", report.era()),
            ServerStatus::Failed { error, .. } | ServerStatus::Invalid { error } => {
                format!("{}: {error}", server.status.label())
            }
            other => other.label().to_owned(),
        };
        step(
            2,
            &format!("server `{}` {status} on {}", server.id, kind.name()),
        );
    }

    // 3. The system prompt: the agent's own, then each server's
    //    instructions, fenced and labelled as that server's documentation.
    let system = match host.instructions_prompt() {
        Some(instructions) => format!("{BASE_PROMPT}\n\n{instructions}"),
        None => BASE_PROMPT.to_owned(),
    };
    step(
        3,
        &format!(
            "system prompt, {} lines; first: {}",
            system.lines().count(),
            first_line(&system)
        ),
    );

    // 4. The tools, as a model API takes them (name, description, JSON
    //    Schema of the arguments).
    let tools = host.current_tools();
    let for_model: Vec<Value> = tools
        .iter()
        .filter(|t| !t.withdrawn)
        .map(model_tool)
        .collect();
    step(
        4,
        &format!(
            "{} tools for the model, e.g. {}",
            for_model.len(),
            for_model.first().map_or("none".into(), |t| t.to_string())
        ),
    );

    // 5. The model's turns: each picks a tool it was offered.
    let model = ScriptedModel {
        tools: &tools,
        strict,
    };
    let cancel = Cancel::new();
    if let Some(echo) = model.choose("echo")? {
        let result = host
            .call(
                &echo.name,
                json!({"message": "hello from the agent"}),
                CallOptions::new().cancel(&cancel),
            )
            .map_err(|e| e.to_string())?;
        step(
            5,
            &format!(
                "{} -> {}",
                echo.name,
                host.render_result(&echo.server, &result).model_text
            ),
        );
    }

    // 6. A long call with progress.
    if let Some(long) = model.choose("trigger-long-running-operation")? {
        let mut updates = 0;
        let result = host
            .call(
                &long.name,
                json!({"duration": 1, "steps": 4}),
                CallOptions::new()
                    .on_progress(|p| {
                        updates += 1;
                        step(
                            6,
                            &format!("progress {}/{}", p.progress, p.total.unwrap_or(f64::NAN)),
                        );
                    })
                    .cancel(&cancel),
            )
            .map_err(|e| e.to_string())?;
        let text = host.render_result(&long.server, &result).model_text;
        step(
            6,
            &format!(
                "{} finished after {updates} progress updates: {}",
                long.name,
                first_line(&text)
            ),
        );

        // 7. The same call, cancelled at its first progress update (an
        //    agent's user pressing stop): the server is told.
        let stop = Cancel::new();
        let outcome = host.call(
            &long.name,
            json!({"duration": 30, "steps": 30}),
            CallOptions::new()
                .on_progress(|_| stop.cancel())
                .cancel(&stop),
        );
        match outcome {
            Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) => {
                step(7, &format!("{} cancelled; {notice}", long.name));
            }
            other => return Err(format!("the cancelled call ended otherwise: {other:?}")),
        }
    }

    // 8. A tool that asks the person a form; the host's UI answers.
    if let Some(ask) = model.choose("trigger-elicitation-request")? {
        let result = host
            .call(&ask.name, json!({}), CallOptions::new().cancel(&cancel))
            .map_err(|e| e.to_string())?;
        let text = host.render_result(&ask.server, &result).model_text;
        step(8, &format!("{} -> {}", ask.name, first_line(&text)));
    }

    // 9. A prompt and a resource attached to the next user turn.
    let (mut prompts, mut resources) = (0, 0);
    for server in host.servers() {
        let ServerStatus::Ready(report) = &server.status else {
            continue;
        };
        if let Some(prompt) = report
            .catalog
            .prompts
            .items
            .iter()
            .find(|p| p.arguments.iter().all(|a| !a.required))
        {
            let turn = host
                .prompt_turn(&server.id, &prompt.name, BTreeMap::new(), &cancel)
                .map_err(|e| e.to_string())?
                .turn;
            step(
                9,
                &format!(
                    "prompt `{}` of `{}` attached: {}",
                    prompt.name,
                    server.id,
                    first_line(&turn)
                ),
            );
            prompts += 1;
        }
        if let Some(resource) = report.catalog.resources.items.first() {
            let attachment = host
                .attach_resource(&server.id, &resource.uri, &cancel)
                .map_err(|e| e.to_string())?
                .attachment;
            resources += 1;
            let what = match attachment {
                Attachment::Text { text } => format!("{} bytes of text", text.len()),
                Attachment::Image { mime_type, .. } => format!("an image ({mime_type})"),
                other => format!("{other:?}"),
            };
            step(
                9,
                &format!(
                    "resource `{}` of `{}` attached: {what}",
                    resource.uri, server.id
                ),
            );
        }
    }

    let not_ready = host
        .servers()
        .iter()
        .filter(|s| !matches!(s.status, ServerStatus::Ready(_)))
        .count();
    host.shutdown();
    step(10, "every server shut down");
    if strict && (prompts == 0 || resources == 0 || not_ready > 0) {
        return Err(format!(
            "{prompts} prompt(s) and {resources} resource(s) attached, {not_ready} server(s) not ready"
        ));
    }
    Ok(())
}

/// Prints one step of the loop.
fn step(n: u32, what: &str) {
    println!("step {n}: {what}");
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// A tool as a model API takes it.
fn model_tool(tool: &ExportedTool) -> Value {
    json!({
        "name": tool.name,
        "description": tool.description,
        "input_schema": &*tool.input_schema,
    })
}

/// The stand-in for a model: it chooses among the tools it was offered,
/// by the server's own tool name its script wants.
struct ScriptedModel<'a> {
    tools: &'a [ExportedTool],
    /// A tool the script wants and was not offered is an error.
    strict: bool,
}

impl ScriptedModel<'_> {
    fn choose(&self, wanted: &str) -> Result<Option<&ExportedTool>, String> {
        let tool = self.tools.iter().find(|t| t.tool == wanted && !t.withdrawn);
        match tool {
            None if self.strict => Err(format!("no tool `{wanted}` was offered")),
            None => {
                println!("model: no tool `{wanted}` was offered; skipping that turn");
                Ok(None)
            }
            Some(tool) => Ok(Some(tool)),
        }
    }
}

/// The host's UI for questions, scripted: it fills every field of a form
/// with its default or a plain answer, and refuses sampling. Each
/// question says which server asks during which call.
fn ui(pending: PendingQuestion) {
    let during = pending.asked.what.as_deref().unwrap_or("no call");
    let server = pending.asked.server.clone();
    match &pending.asking {
        Asking::Form(form) => {
            let answers = form::fill(form);
            println!(
                "ui: server `{server}` asked a form of {} field(s) during `{during}`; answered",
                form.fields.len()
            );
            pending.answer_form(FormAnswer::Submitted(answers));
        }
        Asking::Sampling(_) => {
            println!("ui: server `{server}` asked to sample during `{during}`; refused");
            pending.answer_sampling(false);
        }
        // Asked only of a channel opening URLs; this one is not.
        Asking::Url(_) => {
            println!("ui: server `{server}` asked to open a URL during `{during}`; declined");
            pending.answer_url(rho_host::UrlAnswer::Declined);
        }
    }
}
