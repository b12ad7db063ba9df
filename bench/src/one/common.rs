//! What the two rho one-server clients share: the configuration from the
//! command line, the call's arguments, the exit.

use std::time::Duration;

use serde_json::Value;

/// The one tool called, as rho exports it (server `s`, tool `echo`).
pub const EXPORTED: &str = "mcp__s__echo";

/// The config of the one stdio server named on the command line, and
/// `options` as the bench's workers use them (no workspace root).
pub fn setup(
    mut options: rho_proto_core::host::RuntimeOptions,
) -> (
    rho_proto_core::config::Config,
    rho_proto_core::host::RuntimeOptions,
) {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        eprintln!("usage: one-rho-* SERVER [ARGS...]");
        std::process::exit(2);
    }
    let quote = |s: &String| serde_json::to_string(s).expect("a string serializes");
    let args: Vec<String> = argv[1..].iter().map(quote).collect();
    let text = format!(
        "[mcp.servers.s]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}]\n",
        quote(&argv[0]),
        args.join(", ")
    );
    let config = match rho_proto_core::config::parse(&text, "one.toml") {
        Ok(config) => config,
        Err(e) => {
            eprintln!("config: {e}");
            std::process::exit(2);
        }
    };
    options.workspace = None;
    options.shutdown_grace = Duration::from_millis(500);
    (config, options)
}

/// `{"message": "hello"}`.
pub fn arguments() -> Value {
    serde_json::json!({"message": "hello"})
}

/// The first text block's length.
pub fn text_len(result: &rho_proto_core::wire::protocol::CallToolResult) -> usize {
    result
        .content
        .first()
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .map_or(0, str::len)
}

/// Prints the text length, or fails with the error.
pub fn finish(outcome: Result<usize, String>) {
    match outcome {
        Ok(len) => println!("{len}"),
        Err(e) => {
            eprintln!("call: {e}");
            std::process::exit(1);
        }
    }
}
