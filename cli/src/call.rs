//! `rho mcp call <id> <tool> [ARGS]`: start one server, call one tool,
//! print what the model would read (or, with `--json`, the model text and
//! the tool card's data).
//!
//! On a terminal, progress the server reports shows as a live line on
//! stderr: a bar when the server sent a total, a spinner otherwise; nothing
//! when stderr is not a terminal. Ctrl-C (or SIGTERM, SIGHUP) cancels the
//! call cleanly — the server is sent `notifications/cancelled`, the server
//! is shut down, and rho exits with 128 + the signal (130 for Ctrl-C); a
//! second one exits at once. During startup the same signal stops the
//! startup wait at once (see `crate::signals`).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use rho_proto_core::config::Config;
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::{CallError, Progress};
use serde_json::json;

use crate::tool_args;
use crate::{CallArgs, Failure, check_stopped, unless_stopped, write_stdout};
use rho_host::{CallOptions, Host, LoadedConfig, RuntimeKind};

/// How many times a call answered with -32042 is sent again after the
/// person visited its URLs.
const MAX_URL_RETRIES: usize = 3;

/// Runs `rho mcp call`.
pub(crate) fn run(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &CallArgs,
) -> Result<ExitCode, Failure> {
    let (id, tool, words) = split_target(loaded, args.adhoc.given(), &args.words)?;
    let arguments = tool_args::parse_words(words).map_err(Failure::Usage)?;
    let timeout = match args.timeout {
        None => None,
        Some(secs) if secs.is_finite() && secs > 0.0 && secs <= 604_800.0 => {
            Some(Duration::from_secs_f64(secs))
        }
        Some(_) => {
            return Err(Failure::Usage(
                "--timeout must be a number of seconds above 0 and at most 604800".into(),
            ));
        }
    };
    let entry = crate::startable_server(loaded, id)?;
    let config = with_tool_timeout(&loaded.config, id, timeout);
    let loaded_for_call = LoadedConfig {
        path: loaded.path.clone(),
        config,
        adhoc: loaded.adhoc,
    };
    let services =
        crate::questions::services(args.yes_defaults, loaded.config.sampling_command.clone());
    let can_open_urls = services.can_open_urls();
    let undeclared = undeclared_capabilities(
        services.can_elicit(),
        services.can_sample() && entry.config.as_ref().is_ok_and(|c| c.sampling_allowed()),
    );
    // The first stop signal sets the flag: it ends a browser login's wait
    // (the terminal prompt asks it), the startup wait or the call; a
    // second one exits at once. Installed before anything waits.
    let cancel = crate::signals::install();
    let mut options = options;
    options.interrupt = Some(cancel.clone());
    // A person at a terminal whose server has no usable login (none stored,
    // or one whose refresh failed) logs in now, before connecting: the 401
    // at connect would give a browser login only the startup budget. A
    // token refused mid-call is refreshed, or a person logs in again.
    let connecting = Host::builder(&loaded_for_call)
        .runtime(kind)
        .options(options)
        .services(services)
        .login(crate::questions::login_mode())
        .only(|s| s == id)
        .prepare();
    crate::check_stopped()?;
    for (_, outcome) in connecting.logins() {
        let logged_in = outcome.as_ref().map_err(crate::login_failure)?;
        eprintln!("rho: {logged_in}");
    }

    let runtime = unless_stopped(crate::start_host(connecting)).inspect_err(|_| {
        // After SIGHUP the terminal may be gone: never panic writing.
        let _ = writeln!(
            std::io::stderr(),
            "rho: call cancelled before it was sent; server `{}` was stopped during startup",
            id
        );
    })?;
    // The tool by the names rho_host::server_tool accepts (its own name, its
    // exported name, the escaped form a terminal shows); naming none, or
    // none that the server lists, is a usage error like an unknown server.
    // A server that did not start is left to the call, which says why.
    let ready = runtime
        .server(id)
        .is_some_and(|view| matches!(view.status, ServerStatus::Ready(_)));
    let tools = runtime.current_tools();
    let resolved = match (tool, ready) {
        (Some(tool), false) => Ok(tool.to_owned()),
        // A tool for the server's MCP App only is not exported, so not
        // among `tools`: the call is left to the runtime, which refuses
        // it saying why, rather than called unknown here.
        (Some(tool), true) if app_only(&runtime, id, tool) => Ok(tool.to_owned()),
        (Some(tool), true) => rho_host::server_tool(&tools, id, tool),
        (None, _) => Err(rho_host::NameError::NoTool {
            server: id.to_owned(),
            tools: tools
                .iter()
                .filter(|t| t.server == id)
                .map(|t| t.tool.clone())
                .collect(),
        }),
    };
    let tool = match resolved {
        Ok(tool) => tool,
        Err(error) => {
            runtime.shutdown();
            // A tool the server did not list may be one it hides from a
            // client that declared less.
            let tail = match error {
                rho_host::NameError::UnknownTool { .. } => undeclared.as_str(),
                _ => "",
            };
            return Err(Failure::Usage(format!("{error}{tail}")));
        }
    };
    let tool = tool.as_str();
    let arguments = match typed_arguments(&runtime, id, tool, arguments) {
        Ok(arguments) => arguments,
        Err(message) => {
            runtime.shutdown();
            return Err(Failure::Usage(message));
        }
    };
    // The view opens before the call, so the page loads while the tool
    // runs; it is told the outcome.
    let mut app = if args.app {
        crate::app::plan(&runtime, id, tool, &arguments, args.json)
    } else {
        crate::app::Plan::None
    };
    if let crate::app::Plan::Serve(view) = &app {
        let _ = writeln!(
            std::io::stderr(),
            "rho: {}",
            crate::app::opening(view, tool)
        );
    }
    // A -32042 answer: a person who visited its URLs may send the call
    // again, a few times at most.
    let mut retries = 0;
    let outcome = loop {
        let mut line = ProgressLine::new(std::io::stderr().is_terminal());
        let mut options = CallOptions::new()
            .on_progress(|p| line.show(&p))
            .cancel(&cancel);
        if args.task {
            options = options.as_task();
        }
        let outcome = runtime.call((id, tool), arguments.clone(), options);
        line.clear();
        if let Err(ToolCallError::Call(CallError::UrlElicitationRequired { elicitations, .. })) =
            &outcome
            && can_open_urls
            && retries < MAX_URL_RETRIES
            && crate::questions::visit_and_retry(
                &mut std::io::stderr(),
                &mut crate::questions::read_answer,
                id,
                tool,
                elicitations,
                &mut crate::questions::open_in_browser,
            )
        {
            retries += 1;
            continue;
        }
        break outcome;
    };
    // What the model reads is capped, as every server answer is.
    let outcome = outcome.map(|result| {
        let rendered = runtime.render_result(id, &result);
        (result, rendered)
    });
    let explain = match &app {
        crate::app::Plan::Explain(line) => Some(line.clone()),
        _ => None,
    };
    if let crate::app::Plan::Serve(view) = &mut app {
        match &outcome {
            Ok((result, _)) => view.tool_result(result.as_sent()),
            Err(error) => view.tool_cancelled(&crate::questions::call_error_text(error)),
        }
    }
    if let (Ok((result, rendered)), crate::app::Plan::Serve(mut view)) = (&outcome, app)
        && crate::signals::received().is_none()
    {
        // The text result first, as without a view; then the view until
        // the page is closed or Ctrl-C (which ends the view, not a
        // failure: rho exits as the result says).
        let printed = print_result(args, id, tool, result, rendered.clone());
        if printed.is_ok() {
            crate::app::serve(&runtime, &mut view, &cancel);
        }
        drop(view);
        runtime.shutdown();
        return printed;
    }
    runtime.shutdown();
    if let Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) = &outcome {
        // After SIGHUP the terminal may be gone: never panic writing.
        let _ = writeln!(
            std::io::stderr(),
            "rho: call to server `{id}` cancelled; {notice}"
        );
    }
    check_stopped()?;
    let (result, rendered) = match outcome {
        Ok(answered) => answered,
        Err(error @ ToolCallError::NoSuchTool { .. }) => {
            return Err(Failure::Runtime(format!("{error}{undeclared}")));
        }
        Err(error) => {
            return Err(Failure::Runtime(crate::questions::call_error_text(&error)));
        }
    };
    let printed = print_result(args, id, tool, &result, rendered);
    if let (Ok(_), Some(line)) = (&printed, &explain) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    printed
}

/// Prints a call's result: the `--json` document, or the model's text
/// (sanitized) on stdout; a result with `isError` is a failure.
fn print_result(
    args: &CallArgs,
    id: &str,
    tool: &str,
    result: &rho_host::CallToolResult,
    rendered: rho_host::RenderedResult,
) -> Result<ExitCode, Failure> {
    if args.json {
        let doc = json!({
            "schema": 1,
            "document": "call",
            "server": id,
            "tool": tool,
            "result": result.as_sent(),
            "is_error": rendered.is_error,
            "model_text": rendered.model_text,
            "card": rendered.card,
            "structured_content": result.structured_content,
        });
        write_stdout(&crate::output::json_text(&doc))?;
        return Ok(if rendered.is_error {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    if rendered.is_error {
        // The tool ran and failed: its text is the error, not a result.
        let text = rendered.model_text;
        return Err(Failure::Runtime(format!(
            "tool `{}` of server `{}` reported an error{}{text}",
            tool,
            id,
            if text.is_empty() { "" } else { ":\n" }
        )));
    }
    // What the server sent is text for a person here: never raw to the
    // terminal (the `--json` document above stays exact).
    let mut text = rho_proto_core::text::terminal::sanitize(&rendered.model_text).into_owned();
    if !text.is_empty() {
        text.push('\n');
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The call's arguments, `key=value` words typed by the input schema of
/// `tool` (its own or exported name) as server `id` listed it. A tool the
/// registry does not hold gets its words as JSON-or-string values: the
/// call then fails with the server's own reason (unknown, filtered).
pub(crate) fn typed_arguments(
    runtime: &Host,
    id: &str,
    tool: &str,
    arguments: tool_args::Arguments,
) -> Result<serde_json::Value, String> {
    let listed = runtime
        .tools()
        .server_tools(id)
        .find(|t| t.tool == tool)
        .or_else(|| {
            runtime
                .tools()
                .server_tools(id)
                .find(|t| t.name == tool || t.full_name.as_deref() == Some(tool))
        });
    let any = json!({"additionalProperties": true});
    let schema = listed.map_or(&any, |t| &t.input_schema);
    tool_args::typed(arguments, schema, tool).map(serde_json::Value::Object)
}

/// Whether ready server `id` listed `tool` (its own name) for its MCP App
/// only: a tool rho exports to no model and calls for no one.
pub(crate) fn app_only(runtime: &Host, id: &str, tool: &str) -> bool {
    runtime.server(id).is_some_and(|view| {
        matches!(&view.status, ServerStatus::Ready(report)
            if report.app_only_tools.iter().any(|t| t == tool))
    })
}

/// The server, the tool (none when only a server is named) and the
/// arguments of `rho mcp call`'s words. A tool is named as everywhere
/// (`rho_host::resolve_tool`): `<id> <tool>`, `<id>:<tool>`, or an exported name
/// `mcp__<id>__<tool>`; with --stdio or --url, the tool alone. Before any
/// server starts, only the server is checked (an unknown one is a usage
/// error with the closest configured id).
fn split_target<'w>(
    loaded: &'w LoadedConfig,
    adhoc: bool,
    words: &'w [String],
) -> Result<(&'w str, Option<&'w str>, &'w [String]), Failure> {
    if adhoc {
        return match words {
            [tool, rest @ ..] => Ok((crate::adhoc::ID, Some(tool.as_str()), rest)),
            [] => Err(Failure::Usage(
                "give the tool's name (with --stdio or --url, only the tool name)".into(),
            )),
        };
    }
    let Some((first, rest)) = words.split_first() else {
        return Err(Failure::Usage(rho_host::NameError::Nothing.to_string()));
    };
    let configured = |id: &str| loaded.config.get(id).is_some();
    if !configured(first) {
        if let Some((id, tool)) = first.split_once(':').filter(|(id, _)| configured(id)) {
            return Ok((id, Some(tool), rest));
        }
        let exported = loaded.config.servers.iter().find_map(|s| {
            first
                .strip_prefix("mcp__")
                .and_then(|t| t.strip_prefix(s.id.as_str()))
                .and_then(|t| t.strip_prefix("__"))
                .map(|_| s.id.as_str())
        });
        if let Some(id) = exported {
            return Ok((id, Some(first.as_str()), rest));
        }
        let id = first.split_once(':').map_or(first.as_str(), |(id, _)| id);
        return Err(Failure::Usage(crate::unknown_server(loaded, id)));
    }
    match rest.split_first() {
        Some((tool, rest)) => Ok((first, Some(tool.as_str()), rest)),
        None => Ok((first, None, rest)),
    }
}

/// The tail of an unknown-tool error when this run declared no elicitation
/// or no sampling: servers commonly list the tools that need them only to a
/// client that declares them (server-everything does), so the tool may be
/// hidden rather than absent.
fn undeclared_capabilities(elicitation: bool, sampling: bool) -> String {
    let missing: Vec<&str> = [
        (!elicitation).then_some("elicitation (declared on a terminal, or with --yes-defaults)"),
        (!sampling).then_some(
            "sampling (declared with `sampling = \"ask\"` on the server and a [sampling] command)",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if missing.is_empty() {
        return String::new();
    }
    format!(
        "\n(this run did not declare {}; a server may offer tools that need them only to a client that does)",
        missing.join(" or ")
    )
}

/// `config` with server `id`'s tool budget replaced by `timeout`.
fn with_tool_timeout(config: &Config, id: &str, timeout: Option<Duration>) -> Config {
    let mut config = config.clone();
    if let Some(timeout) = timeout {
        for entry in &mut config.servers {
            if entry.id == id
                && let Ok(server) = &mut entry.config
            {
                server.tool_timeout = timeout;
            }
        }
    }
    config
}

/// The live progress line on stderr.
struct ProgressLine {
    enabled: bool,
    shown: bool,
    tick: usize,
}

impl ProgressLine {
    fn new(enabled: bool) -> Self {
        Self {
            enabled,
            shown: false,
            tick: 0,
        }
    }

    fn show(&mut self, progress: &Progress) {
        if !self.enabled {
            return;
        }
        self.tick += 1;
        let text = render_progress(progress, self.tick);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{text}");
        let _ = err.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

/// One progress line: a bar and `done/total` when the server sent a total
/// (counts only then), a spinner otherwise; then the server's message.
fn render_progress(progress: &Progress, tick: usize) -> String {
    const WIDTH: usize = 24;
    const SPINNER: [char; 4] = ['|', '/', '-', '\\'];
    let mut text = match progress.total {
        Some(total) if total > 0.0 => {
            let fraction = (progress.progress / total).clamp(0.0, 1.0);
            // Rounded down: the bar is only full when the work is done.
            let filled = (fraction * WIDTH as f64) as usize;
            format!(
                "[{}{}] {}/{}",
                "#".repeat(filled),
                "-".repeat(WIDTH - filled),
                trim_number(progress.progress),
                trim_number(total)
            )
        }
        _ => SPINNER[tick % SPINNER.len()].to_string(),
    };
    if let Some(message) = &progress.message {
        text.push(' ');
        text.extend(
            rho_proto_core::text::terminal::sanitize_line(message)
                .chars()
                .take(80),
        );
    }
    text
}

/// `3` for 3.0, `2.5` for 2.5.
fn trim_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(progress: f64, total: Option<f64>, message: Option<&str>) -> Progress {
        Progress {
            progress,
            total,
            message: message.map(str::to_owned),
        }
    }

    #[test]
    fn bar_with_counts_only_when_a_total_is_known() {
        assert_eq!(
            render_progress(&p(1.0, Some(4.0), Some("step one")), 0),
            "[######------------------] 1/4 step one"
        );
        assert_eq!(render_progress(&p(7.0, None, None), 1), "/");
        assert_eq!(
            render_progress(&p(2.5, Some(5.0), None), 0),
            "[############------------] 2.5/5"
        );
    }

    #[test]
    fn control_characters_from_a_server_never_reach_the_terminal() {
        let line = render_progress(&p(1.0, None, Some("a\x1b[31mred\r\n\u{9b}2J")), 0);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert_eq!(line, "| a\\x1b[31mred\\r\\n\\u{9b}2J");
    }
}
