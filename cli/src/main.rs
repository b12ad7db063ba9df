//! `rho`: the command line of rho's MCP client runtime.
//!
//! `rho mcp list`, `rho mcp show` and `rho mcp call` configure, inspect and
//! exercise the servers of the selected config file. Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every enabled server that was asked to connect is ready (or nothing was asked to connect), and every entry is valid |
//! | 1 | a server failed to start, an entry is invalid, or a tool call failed |
//! | 2 | usage or configuration-file errors (unreadable file, TOML syntax, unknown `[mcp]` keys, bad arguments) |

mod config_file;
mod conformance;
mod host;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use crate::config_file::LoadedConfig;
use crate::host::{Host, RuntimeKind};

/// rho's MCP client: configure, inspect and exercise MCP servers.
#[derive(Parser, Debug)]
#[command(name = "rho", version, about)]
struct Cli {
    /// Config file to use instead of ~/.rho/config.toml (replaces it; the
    /// two are never merged).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Log debug output to stderr (RUST_LOG overrides the filter).
    #[arg(long, short, global = true)]
    verbose: bool,
    /// The executor that drives the sessions: smol (one thread for all of
    /// them) or blocking (a thread per session).
    #[arg(
        long,
        global = true,
        value_enum,
        env = "RHO_RUNTIME",
        default_value = "smol"
    )]
    runtime: RuntimeKind,
    #[command(subcommand)]
    command: TopCommand,
}

#[derive(Subcommand, Debug)]
enum TopCommand {
    /// Model Context Protocol servers.
    #[command(subcommand)]
    Mcp(McpCommand),
}

#[derive(Subcommand, Debug)]
enum McpCommand {
    /// List configured servers; with --connect, start them and list their tools.
    List(ListArgs),
    /// Show one server; with --connect, start it and show its tools.
    Show(ShowArgs),
    /// Start one server, call one of its tools, and print the result.
    Call(CallArgs),
    /// The client driven by the official MCP conformance suite.
    #[command(hide = true)]
    ConformanceClient(ConformanceArgs),
}

#[derive(Args, Debug)]
struct ConformanceArgs {
    /// The server URL (the suite appends it).
    url: String,
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Start enabled servers and report live status and tools.
    #[arg(long)]
    connect: bool,
    /// Print JSON (see the README for the schema).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ShowArgs {
    /// The server identity.
    id: String,
    /// Start the server and report live status and tools.
    #[arg(long)]
    connect: bool,
    /// Print JSON (see the README for the schema).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct CallArgs {
    /// The server identity.
    id: String,
    /// The tool's name as the server lists it.
    tool: String,
    /// Arguments as a JSON object.
    #[arg(default_value = "{}")]
    arguments: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let result = match cli.command {
        TopCommand::Mcp(command) => run_mcp(cli.config, cli.runtime, command),
    };
    match result {
        Ok(code) => code,
        Err(Failure::Usage(message)) => {
            eprintln!("rho: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(message)) => {
            eprintln!("rho: {message}");
            ExitCode::from(1)
        }
    }
}

/// A failure that ends the command, by who is at fault.
enum Failure {
    /// Bad arguments or configuration file: exit 2.
    Usage(String),
    /// A server or tool failed: exit 1.
    Runtime(String),
}

fn init_tracing(verbose: bool) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(if verbose { "debug" } else { "warn" }));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(verbose)
        .init();
}

fn run_mcp(
    config: Option<PathBuf>,
    kind: RuntimeKind,
    command: McpCommand,
) -> Result<ExitCode, Failure> {
    if let McpCommand::ConformanceClient(args) = &command {
        return conformance::run(kind, &args.url);
    }
    let loaded = config_file::load(config).map_err(Failure::Usage)?;
    match command {
        McpCommand::List(args) => list(&loaded, kind, &args),
        McpCommand::Show(args) => show(&loaded, kind, &args),
        McpCommand::Call(args) => call(&loaded, kind, &args),
        McpCommand::ConformanceClient(args) => conformance::run(kind, &args.url),
    }
}

fn list(loaded: &LoadedConfig, kind: RuntimeKind, args: &ListArgs) -> Result<ExitCode, Failure> {
    let runtime = start(loaded, kind, args.connect, |_| true);
    let servers = runtime.servers();
    let text = if args.json {
        output::json_text(&output::list_json(loaded, &servers, runtime.tools()))
    } else {
        output::list_text(loaded, &servers, runtime.tools())
    };
    let failed = servers.iter().any(|s| s.status.is_failure());
    runtime.shutdown();
    write_stdout(&text)?;
    Ok(exit_code(failed))
}

fn show(loaded: &LoadedConfig, kind: RuntimeKind, args: &ShowArgs) -> Result<ExitCode, Failure> {
    if loaded.config.get(&args.id).is_none() {
        return Err(Failure::Usage(unknown_server(loaded, &args.id)));
    }
    let runtime = start(loaded, kind, args.connect, |id| id == args.id);
    let Some(server) = runtime.server(&args.id) else {
        return Err(Failure::Usage(unknown_server(loaded, &args.id)));
    };
    let text = if args.json {
        output::json_text(&output::server_json(&server, runtime.tools(), true))
    } else {
        output::show_text(&server, runtime.tools())
    };
    let failed = server.status.is_failure();
    runtime.shutdown();
    write_stdout(&text)?;
    Ok(exit_code(failed))
}

fn call(loaded: &LoadedConfig, kind: RuntimeKind, args: &CallArgs) -> Result<ExitCode, Failure> {
    let arguments: serde_json::Value = serde_json::from_str(&args.arguments)
        .map_err(|e| Failure::Usage(format!("tool arguments are not valid JSON: {e}")))?;
    if !arguments.is_object() {
        return Err(Failure::Usage(
            "tool arguments must be a JSON object, like '{\"message\":\"hi\"}'".into(),
        ));
    }
    let Some(entry) = loaded.config.get(&args.id) else {
        return Err(Failure::Usage(unknown_server(loaded, &args.id)));
    };
    match &entry.config {
        Err(error) => return Err(Failure::Runtime(error.to_string())),
        Ok(server) if !server.enabled => {
            return Err(Failure::Runtime(format!(
                "server `{}` is disabled (enabled = false in {})",
                args.id,
                loaded.describe()
            )));
        }
        Ok(_) => {}
    }
    let runtime = start(loaded, kind, true, |id| id == args.id);
    let outcome = runtime.call_server_tool(&args.id, &args.tool, arguments);
    runtime.shutdown();
    match outcome {
        Ok(result) if result.is_error => {
            // The tool ran and failed: its text is the error, not a result.
            let text = output::result_text(&result);
            Err(Failure::Runtime(format!(
                "tool `{}` of server `{}` reported an error{}{text}",
                args.tool,
                args.id,
                if text.is_empty() { "" } else { ":\n" }
            )))
        }
        Ok(result) => {
            let mut text = output::result_text(&result);
            if !text.is_empty() {
                text.push('\n');
            }
            write_stdout(&text)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(Failure::Runtime(error.to_string())),
    }
}

/// Writes the command's output; a closed or full stdout is a failure with
/// a message, not a panic.
fn write_stdout(text: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))
}

fn start(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    connect: bool,
    select: impl Fn(&str) -> bool,
) -> Host {
    if connect {
        Host::start(kind, &loaded.config, select)
    } else {
        Host::start(kind, &loaded.config, |_| false)
    }
}

fn unknown_server(loaded: &LoadedConfig, id: &str) -> String {
    let known: Vec<&str> = loaded
        .config
        .servers
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    if known.is_empty() {
        format!(
            "no MCP server `{id}`: {} configures none",
            loaded.describe()
        )
    } else {
        format!(
            "no MCP server `{id}` in {} (configured: {})",
            loaded.describe(),
            known.join(", ")
        )
    }
}

fn exit_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
