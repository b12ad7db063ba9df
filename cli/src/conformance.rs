//! `rho mcp conformance-client <url>`: the client the official MCP
//! conformance suite drives (`tests/conformance/run`).
//!
//! It does what each client scenario asks through the ordinary runtime —
//! the same config model, executor and session as `rho mcp call` — so a
//! passing scenario says something about rho, not about a test double.
//! The scenario comes from `MCP_CONFORMANCE_SCENARIO`; the suite appends
//! the server URL as the last argument. Scenarios this build cannot do yet
//! exit with a clear message rather than pretend.

use std::process::ExitCode;

use rho_proto_core::config;
use rho_proto_core::status::ServerStatus;
use serde_json::{Value, json};

use crate::Failure;
use crate::host::{Host, RuntimeKind};
use rho_io_blocking::RuntimeOptions;

/// What a scenario asks of the client once it is connected.
enum Action {
    /// Connect (initialize, list tools) and disconnect.
    Connect,
    /// Call this tool with these arguments.
    Call(&'static str, fn() -> Value),
}

/// The client scenarios this build takes part in.
fn action(scenario: &str) -> Option<Action> {
    match scenario {
        "initialize" => Some(Action::Connect),
        "tools_call" => Some(Action::Call("add_numbers", || json!({"a": 2, "b": 3}))),
        "sse-retry" => Some(Action::Call("test_reconnection", || json!({}))),
        "elicitation-sep1034-client-defaults" => {
            Some(Action::Call("test_client_elicitation_defaults", || {
                json!({})
            }))
        }
        _ => None,
    }
}

/// Runs the scenario named by `MCP_CONFORMANCE_SCENARIO` against `url`.
pub(crate) fn run(kind: RuntimeKind, url: &str) -> Result<ExitCode, Failure> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(action) = action(&scenario) else {
        return Err(Failure::Runtime(format!(
            "conformance scenario `{scenario}` is not supported by this build"
        )));
    };
    let text = format!(
        "[mcp.servers.conformance]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\ntool_timeout_secs = 20\n",
        toml_string(url)
    );
    let config =
        config::parse(&text, "<conformance>").map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(entry) = config.get("conformance") {
        if let Err(error) = &entry.config {
            return Err(Failure::Usage(error.to_string()));
        }
    }
    // The suite answers no prompt: forms take their defaults.
    let mut options = RuntimeOptions::from_process_env();
    options.host = crate::questions::services(true, None);
    let runtime = Host::start(kind, &config, options, |_| true);
    let outcome = match runtime.server("conformance").map(|s| s.status) {
        Some(ServerStatus::Ready(_)) => match action {
            Action::Connect => Ok(()),
            Action::Call(tool, arguments) => runtime
                .call_server_tool("conformance", tool, arguments())
                .map_err(|e| e.to_string())
                .and_then(|result| {
                    if result.is_error {
                        Err(format!(
                            "tool `{tool}` reported an error: {}",
                            result.text()
                        ))
                    } else {
                        eprintln!("{}", rho_proto_core::terminal::sanitize(&result.text()));
                        Ok(())
                    }
                }),
        },
        Some(ServerStatus::Failed { error } | ServerStatus::Invalid { error }) => Err(error),
        other => Err(format!("server did not start: {other:?}")),
    };
    runtime.shutdown();
    outcome
        .map(|()| ExitCode::SUCCESS)
        .map_err(Failure::Runtime)
}

/// A TOML basic string for `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
