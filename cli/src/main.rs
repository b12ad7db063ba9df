//! `rho`: the command line of rho's MCP client runtime.
//!
//! `rho mcp list`, `rho mcp show` (`get`) and `rho mcp call` inspect and
//! exercise the servers of the selected config file, or one ad-hoc server
//! (`--stdio`, `--url`; see `adhoc`); `rho mcp add`, `remove`, `enable`,
//! `disable` and `import` edit that file in place (see `manage`, `import`
//! and `config_edit`); `rho completions` prints shell completions. Exit
//! codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | every enabled server that was asked to connect is ready (or nothing was asked to connect), and every entry is valid |
//! | 1 | a server failed to start, an entry is invalid, a tool call failed, or an imported entry could not be imported |
//! | 2 | usage or configuration-file errors (unreadable file, TOML syntax, unknown `[mcp]` keys, bad arguments, an edit the config parser refuses) |
//! | 130, 143, 129 | stopped by SIGINT, SIGTERM or SIGHUP (128 + the signal), every server shut down first |

mod adhoc;
mod app;
mod call;
mod complete;
mod completion_words;
mod config_edit;
mod import;
mod logging;
mod manage;
mod output;
mod prompt;
mod questions;
mod read;
mod remedies;
mod shell;
mod signals;
mod tool_args;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

use rho_host::{FileStore, Host, LoadedConfig, RuntimeKind, auth_status, now_unix};
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::text::redact::Redactor;

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
    runtime: RuntimeArg,
    /// The session workspace, offered to servers as their one root
    /// (default: the current directory).
    #[arg(long, global = true, value_name = "PATH")]
    workspace: Option<PathBuf>,
    /// Record every session's transcript (inputs, outputs, timing) to
    /// FILE, for `rho mcp replay` and the replay tests.
    #[arg(long, global = true, value_name = "FILE")]
    record: Option<PathBuf>,
    #[command(subcommand)]
    command: TopCommand,
}

/// `--runtime`: which executor drives the sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RuntimeArg {
    /// One task per session on the main thread (the default).
    Smol,
    /// A driver thread per session.
    Blocking,
}

impl From<RuntimeArg> for RuntimeKind {
    fn from(arg: RuntimeArg) -> Self {
        match arg {
            RuntimeArg::Smol => RuntimeKind::Smol,
            RuntimeArg::Blocking => RuntimeKind::Blocking,
        }
    }
}

// One value per process, parsed once: the size of its largest variant
// (an `mcp` command with its ad-hoc server flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum TopCommand {
    /// Model Context Protocol servers.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish or
    /// powershell) to stdout, e.g. `rho completions bash >
    /// ~/.local/share/bash-completion/completions/rho`.
    Completions(CompletionsArgs),
    /// What the completion scripts run on each Tab (completion_words.rs).
    #[command(name = "__complete", hide = true)]
    CompleteWords {
        /// Which word is being completed (0 is the program).
        index: usize,
        /// The words typed so far.
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        words: Vec<String>,
    },
}

#[derive(Args, Debug)]
struct CompletionsArgs {
    /// The shell to complete for.
    shell: clap_complete::Shell,
}

#[derive(Subcommand, Debug)]
enum McpCommand {
    /// List configured servers (or the ad-hoc --stdio/--url one); with
    /// --connect, start them and list their tools.
    List(ListArgs),
    /// Show one server; with --connect, start it and show its tools.
    #[command(visible_alias = "get")]
    Show(ShowArgs),
    /// Start one server, call one of its tools, and print the result.
    Call(CallArgs),
    /// Start every enabled server and search their tools: the best
    /// matches first, one line each (the tool index an agent defers
    /// schemas with).
    Search(SearchArgs),
    /// An interactive session over every enabled server: status, tools,
    /// calls and the servers' questions, with completion (no model).
    Shell(shell::ShellArgs),
    /// Start one server, get one of its prompts, and print the user turn
    /// the model would get.
    Prompt(prompt::PromptArgs),
    /// Start one server, read one of its resources, and print what a
    /// message would carry.
    Read(read::ReadArgs),
    /// Start one server and print the values it suggests for an argument
    /// of a prompt or a variable of a resource template.
    Complete(complete::CompleteArgs),
    /// Add a server to the config file (a command after `--`, or --url),
    /// keeping the file's comments and layout.
    Add(Box<manage::AddArgs>),
    /// Add a server from one JSON entry as Claude Code, Cursor or VS Code
    /// write it (the rules of `import`).
    AddJson(import::AddJsonArgs),
    /// Remove a server from the config file.
    Remove(manage::EntryArgs),
    /// Enable a server in the config file (removes its `enabled = false`).
    Enable(manage::EntryArgs),
    /// Disable a server in the config file (writes `enabled = false`).
    Disable(manage::EntryArgs),
    /// Add the servers of a Claude Desktop, Claude Code, Cursor or VS Code
    /// JSON config to the config file, keeping secrets out of it.
    Import(import::ImportArgs),
    /// Log in to a remote server with OAuth (browser, PKCE, loopback
    /// callback) and store its tokens.
    Login(LoginArgs),
    /// Forget a server's stored OAuth login: its tokens and the client
    /// registered for it.
    Logout(LogoutArgs),
    /// Replay a recorded transcript against the core and check every output
    /// matches, byte for byte (no process, socket or server involved).
    Replay(ReplayArgs),
}

#[derive(Args, Debug)]
struct LoginArgs {
    /// The server identity.
    id: String,
    /// Take the browser step without a browser: fetch the authorization
    /// URL and read the answer from its redirect (for authorization
    /// servers that approve at once, such as test servers).
    #[arg(long)]
    headless: bool,
}

#[derive(Args, Debug)]
struct LogoutArgs {
    /// The server identity.
    id: String,
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// The transcript file.
    file: PathBuf,
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Start enabled servers and report live status and tools.
    #[arg(long)]
    connect: bool,
    #[command(flatten)]
    adhoc: adhoc::AdhocArgs,
    /// Print JSON (see docs/commands.md for the schema).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct SearchArgs {
    /// What to look for: words of a tool's name, title, description or
    /// parameters.
    #[arg(required = true, num_args = 1..)]
    query: Vec<String>,
    #[command(flatten)]
    adhoc: adhoc::AdhocArgs,
    /// At most this many tools.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print JSON (see docs/commands.md for the schema).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct ShowArgs {
    /// The server identity (with --stdio or --url, `adhoc` or nothing).
    #[arg(required_unless_present_any = ["stdio", "url"])]
    id: Option<String>,
    #[command(flatten)]
    adhoc: adhoc::AdhocArgs,
    /// Start the server and report live status and tools.
    #[arg(long)]
    connect: bool,
    /// Print JSON (see docs/commands.md for the schema).
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
#[command(
    override_usage = "rho mcp call [OPTIONS] <ID> <TOOL> [ARGS]...\n       rho mcp call [OPTIONS] --stdio <COMMAND> <TOOL> [ARGS]...\n       rho mcp call [OPTIONS] --url <URL> <TOOL> [ARGS]...",
    after_help = "ARGS is one JSON object ('{\"message\":\"hi\"}') or key=value words typed by the \
tool's input schema: integer and number properties are parsed as numbers, boolean ones take \
true or false, object and array ones take JSON, strings are taken as typed \
(message=hi count=3 tags='[\"a\"]'). An unknown key, a value that cannot take its type, or \
a required argument left out (with some words or none) is a usage error. A JSON object, '{}' \
too, is sent as given."
)]
pub(crate) struct CallArgs {
    /// The server identity (none with --stdio or --url), the tool's name
    /// (as the server lists it, or its exported name), then its arguments:
    /// one JSON object, or key=value words.
    #[arg(value_name = "ID TOOL [ARGS]", required = true, num_args = 1..)]
    words: Vec<String>,
    #[command(flatten)]
    adhoc: adhoc::AdhocArgs,
    /// Print the model text and the tool card's data as JSON.
    #[arg(long)]
    json: bool,
    /// The call's budget in seconds, instead of the server's
    /// tool_timeout_secs.
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Answer every form a server shows with its defaults (declining one
    /// with a required field that has none) and refuse sampling, without
    /// asking: for scripts.
    #[arg(long)]
    yes_defaults: bool,
    /// Ask the server to run the call as a task where the tool leaves it
    /// to the caller (a 2025-11-25 tool whose taskSupport is `optional`),
    /// for a long call: its status shows as it changes and Ctrl-C cancels
    /// it on the server. A tool that requires a task runs as one anyway.
    #[arg(long)]
    task: bool,
    /// Open the tool's MCP App view (its `_meta.ui.resourceUri`) in a
    /// browser, served by rho on loopback and bridged to the session until
    /// the page is closed or Ctrl-C. Where no browser can open (CI, no
    /// display, --json), the text result and a line saying how to open it.
    #[arg(long)]
    app: bool,
}

fn main() -> ExitCode {
    // A Windows console prints escape sequences literally unless told
    // otherwise; the text in them is sanitized the same way everywhere.
    #[cfg(windows)]
    let _ = rho_os::console::enable_virtual_terminal_output();
    remedies::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    let server_logs = match &cli.command {
        TopCommand::Mcp(McpCommand::Shell(args)) => args.log_level,
        _ => None,
    };
    logging::init(cli.verbose, server_logs.map(shell::tracing_level));
    let json = cli.command.wants_json();
    let result = match cli.command {
        TopCommand::Mcp(command) => run_mcp(
            cli.config,
            cli.runtime.into(),
            cli.workspace.as_deref(),
            cli.record.as_deref(),
            command,
        ),
        TopCommand::Completions(args) => completions(args.shell),
        TopCommand::CompleteWords { index, words } => {
            use clap::CommandFactory as _;
            let found = completion_words::candidates(&Cli::command(), index, &words);
            write_stdout(&found.iter().map(|c| format!("{c}\n")).collect::<String>())
                .map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(failure) => report_failure(&failure, json),
    }
}

impl TopCommand {
    /// Whether the command was asked for JSON output, so that its errors
    /// come as JSON on stdout too.
    fn wants_json(&self) -> bool {
        match self {
            TopCommand::Mcp(McpCommand::List(args)) => args.json,
            TopCommand::Mcp(McpCommand::Show(args)) => args.json,
            TopCommand::Mcp(McpCommand::Call(args)) => args.json,
            TopCommand::Mcp(McpCommand::Search(args)) => args.json,
            TopCommand::Mcp(McpCommand::Prompt(args)) => args.json,
            TopCommand::Mcp(McpCommand::Read(args)) => args.json,
            TopCommand::Mcp(McpCommand::Complete(args)) => args.json,
            TopCommand::Mcp(_) | TopCommand::Completions(_) | TopCommand::CompleteWords { .. } => {
                false
            }
        }
    }
}

/// `rho completions SHELL`: for bash, zsh and fish a script that asks
/// `rho __complete` on each Tab (see `completion_words`); for the others
/// clap's static script of every command and option.
fn completions(shell: clap_complete::Shell) -> Result<ExitCode, Failure> {
    use clap::CommandFactory as _;
    if let Some(script) = completion_words::script(shell) {
        write_stdout(script)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut script = Vec::new();
    let mut command = completion_words::without_hidden(&Cli::command());
    clap_complete::generate(shell, &mut command, "rho", &mut script);
    write_stdout(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a failure and returns its exit code. With `--json` the failure is
/// also a JSON document on stdout, `{"schema": 1, "document": "error", "error":
/// {"kind", "message"}}`
/// (`kind` is `usage` for exit 2, `failed` for exit 1, `stopped` for 128 +
/// a signal), so a script reading stdout never has to parse stderr; the
/// line on stderr stays for a person.
fn report_failure(failure: &Failure, json: bool) -> ExitCode {
    let (kind, code, message) = match failure {
        Failure::Usage(message) => ("usage", 2, message.clone()),
        Failure::Runtime(message) => ("failed", 1, message.clone()),
        Failure::Stopped(signal) => (
            "stopped",
            signals::exit_code(*signal),
            format!(
                "stopped by {}; every server was shut down",
                signals::name(*signal)
            ),
        ),
    };
    // Messages quote servers (reasons, error text): never raw, never a
    // secret. After SIGHUP the terminal may be gone: never panic writing.
    let _ = std::io::Write::write_fmt(
        &mut std::io::stderr(),
        format_args!("rho: {}\n", logging::safe(&message)),
    );
    if json {
        let doc = serde_json::json!({
            "schema": 1,
            "document": "error",
            "error": {"kind": kind, "message": logging::redact(&message)},
        });
        // Nothing more can be said if stdout is gone; the code still tells.
        let _ = write_stdout(&output::json_text(&doc));
    }
    ExitCode::from(code)
}

/// A command line clap refused. Help and version go to stdout with exit 0
/// as usual; a real mistake exits 2, and as JSON on stdout too when the
/// words include `--json`. A bad `RHO_RUNTIME` is named as such: clap's
/// own message speaks only of `--runtime`.
fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let _ = error.print();
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    }
    let rendered = error.to_string();
    let mut message = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ")
        .to_owned();
    let about_runtime = matches!(
        error.get(ContextKind::InvalidArg),
        Some(ContextValue::String(arg)) if arg.starts_with("--runtime")
    );
    let runtime_on_command_line = std::env::args_os()
        .any(|a| a == "--runtime" || a.to_string_lossy().starts_with("--runtime="));
    if about_runtime && !runtime_on_command_line && std::env::var_os("RHO_RUNTIME").is_some() {
        message.push_str(" (the value comes from the environment variable RHO_RUNTIME)");
        eprintln!("note: the value comes from the environment variable RHO_RUNTIME");
    }
    if std::env::args_os().any(|a| a == "--json") {
        let doc = serde_json::json!({
            "schema": 1,
            "document": "error",
            "error": {"kind": "usage", "message": message},
        });
        let _ = write_stdout(&output::json_text(&doc));
    }
    ExitCode::from(2)
}

/// A failure that ends the command, by who is at fault.
pub(crate) enum Failure {
    /// Bad arguments or configuration file: exit 2.
    Usage(String),
    /// A server or tool failed: exit 1.
    Runtime(String),
    /// A stop signal (its number) ended the command once every session was
    /// closed: exit 128 + the number.
    Stopped(i32),
}

/// Ends the command if a stop signal arrived, shutting `runtime` down
/// first; otherwise hands it back.
pub(crate) fn unless_stopped(runtime: Host) -> Result<Host, Failure> {
    match signals::received() {
        Some(signal) => {
            runtime.shutdown();
            Err(Failure::Stopped(signal))
        }
        None => Ok(runtime),
    }
}

/// Ends the command if a stop signal arrived (the runtime is already shut
/// down).
pub(crate) fn check_stopped() -> Result<(), Failure> {
    signals::received().map_or(Ok(()), |signal| Err(Failure::Stopped(signal)))
}

fn run_mcp(
    config: Option<PathBuf>,
    kind: RuntimeKind,
    workspace: Option<&std::path::Path>,
    record: Option<&std::path::Path>,
    command: McpCommand,
) -> Result<ExitCode, Failure> {
    match &command {
        McpCommand::Replay(args) => return replay(&args.file),
        McpCommand::Add(args) => return manage::add(config, args),
        McpCommand::AddJson(args) => return import::add_json(config, args),
        McpCommand::Remove(args) => return manage::remove(config, args),
        McpCommand::Enable(args) => return manage::set_enabled(config, args, true),
        McpCommand::Disable(args) => return manage::set_enabled(config, args, false),
        McpCommand::Import(args) => return import::run(config, args),
        _ => {}
    }
    let mut options = rho_os::options_from_process_env();
    // Every command declares MCP Apps (see questions::apps_host).
    options.host.renders_apps = true;
    if let Some(path) = record {
        let sink = rho_os::transcript::TranscriptFile::create(path).map_err(|e| {
            Failure::Usage(format!("cannot create transcript {}: {e}", path.display()))
        })?;
        options.record = Some(std::sync::Arc::new(sink));
    }
    if let Some(path) = workspace {
        let absolute = std::path::absolute(path)
            .map_err(|e| Failure::Usage(format!("--workspace {}: {e}", path.display())))?;
        if !absolute.is_dir() {
            return Err(Failure::Usage(format!(
                "--workspace {} is not a directory",
                path.display()
            )));
        }
        options.workspace = Some(absolute);
    }
    let loaded = match command.adhoc() {
        Some(_) if config.is_some() => {
            return Err(Failure::Usage(
                "--stdio and --url replace the config file: give them or --config, not both".into(),
            ));
        }
        Some(adhoc) => adhoc::load(adhoc),
        None => rho_host::LoadedConfig::load(config),
    }
    .map_err(Failure::Usage)?;
    // What the run's logins read and receive later is learned into the
    // host's book, which the logs redact against as they are written.
    logging::redact_secrets(
        run_secrets(&loaded.config, &options.ambient).learning(rho_host::secret_book()),
    );
    match command {
        McpCommand::List(args) => list(&loaded, kind, options, &args),
        McpCommand::Show(args) => show(&loaded, kind, options, &args),
        McpCommand::Call(args) => call::run(&loaded, kind, options, &args),
        McpCommand::Search(args) => search(&loaded, kind, options, &args),
        McpCommand::Shell(args) => shell::run(&loaded, kind, options, &args),
        McpCommand::Prompt(args) => prompt::run(&loaded, kind, options, &args),
        McpCommand::Read(args) => read::run(&loaded, kind, options, &args),
        McpCommand::Complete(args) => complete::run(&loaded, kind, options, &args),
        McpCommand::Login(args) => login(&loaded, kind, &args),
        McpCommand::Logout(args) => logout(&loaded, &args.id),
        McpCommand::Replay(args) => replay(&args.file),
        McpCommand::Add(_)
        | McpCommand::AddJson(_)
        | McpCommand::Remove(_)
        | McpCommand::Enable(_)
        | McpCommand::Disable(_)
        | McpCommand::Import(_) => {
            unreachable!("config edits return before the config is loaded")
        }
    }
}

impl McpCommand {
    /// The ad-hoc server this command was given, if any.
    fn adhoc(&self) -> Option<&adhoc::AdhocArgs> {
        let adhoc = match self {
            McpCommand::List(args) => &args.adhoc,
            McpCommand::Show(args) => &args.adhoc,
            McpCommand::Call(args) => &args.adhoc,
            McpCommand::Search(args) => &args.adhoc,
            McpCommand::Prompt(args) => &args.adhoc,
            McpCommand::Read(args) => &args.adhoc,
            McpCommand::Complete(args) => &args.adhoc,
            _ => return None,
        };
        adhoc.given().then_some(adhoc)
    }
}

fn list(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &ListArgs,
) -> Result<ExitCode, Failure> {
    // An ad-hoc server is there to be tried: it is always started.
    let connect = args.connect || loaded.adhoc.is_some();
    let runtime = unless_stopped(start(loaded, kind, options, connect, |_| true))?;
    let servers = runtime.servers();
    completion_words::remember(&servers);
    let auth = auth_statuses(loaded);
    let text = if args.json {
        output::json_text(&output::list_json(loaded, &servers, runtime.tools(), &auth))
    } else {
        output::list_text(loaded, &servers, runtime.tools(), &auth)
    };
    let failed = servers.iter().any(|s| s.status.is_failure());
    print_then_shut_down(runtime, &text)?;
    Ok(exit_code(failed))
}

/// `rho mcp search QUERY`: every enabled server started, its tools
/// indexed ([`Host::tool_index`]) and searched. Exit 1 when nothing
/// matched or a server failed to start (the hits still print).
fn search(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &SearchArgs,
) -> Result<ExitCode, Failure> {
    let runtime = unless_stopped(start(loaded, kind, options, true, |_| true))?;
    let servers = runtime.servers();
    completion_words::remember(&servers);
    let index = runtime.tool_index();
    let query = args.query.join(" ");
    let hits = index.search(&query, args.limit);
    let text = if args.json {
        output::json_text(&output::search_json(&query, &index, &hits))
    } else {
        output::search_text(&query, &index, &hits)
    };
    let failed = hits.is_empty() || servers.iter().any(|s| s.status.is_failure());
    print_then_shut_down(runtime, &text)?;
    Ok(exit_code(failed))
}

fn show(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    options: RuntimeOptions,
    args: &ShowArgs,
) -> Result<ExitCode, Failure> {
    let id = args.id.as_deref().unwrap_or(adhoc::ID);
    if loaded.config.get(id).is_none() {
        return Err(Failure::Usage(unknown_server(loaded, id)));
    }
    let connect = args.connect || loaded.adhoc.is_some();
    let runtime = unless_stopped(start(loaded, kind, options, connect, |s| s == id))?;
    let Some(server) = runtime.server(id) else {
        runtime.shutdown();
        return Err(Failure::Usage(unknown_server(loaded, id)));
    };
    completion_words::remember(std::slice::from_ref(&server));
    let auth = auth_statuses(loaded);
    let text = if args.json {
        output::json_text(&output::server_json(
            &server,
            runtime.tools(),
            true,
            &auth,
            output::plugin_of(loaded, id),
            loaded.adhoc,
        ))
    } else {
        output::show_text(
            &server,
            runtime.tools(),
            &auth,
            output::plugin_of(loaded, id),
            loaded.adhoc,
        )
    };
    let failed = server.status.is_failure();
    print_then_shut_down(runtime, &text)?;
    Ok(exit_code(failed))
}

/// How each configured server authenticates, for `list` and `show`.
pub(crate) fn auth_statuses(loaded: &LoadedConfig) -> output::AuthMap {
    let store = FileStore::default_location();
    let now = now_unix();
    loaded
        .config
        .servers
        .iter()
        .filter_map(|entry| {
            let config = entry.config.as_ref().ok()?;
            auth_status(&entry.id, config, store.as_ref().map(|s| s as _), now)
                .map(|status| (entry.id.clone(), status))
        })
        .collect()
}

/// `rho mcp login <id>`: runs the OAuth flow for a remote server now and
/// stores what it yields. Its requests go through runtime `kind`'s HTTP
/// stack.
fn login(loaded: &LoadedConfig, kind: RuntimeKind, args: &LoginArgs) -> Result<ExitCode, Failure> {
    use rho_host::LoginMode;
    let store = FileStore::default_location()
        .ok_or_else(|| login_failure(&rho_host::LoginError::NoStore))?;
    let mode = if args.headless {
        LoginMode::Headless
    } else {
        LoginMode::Person(questions::terminal_prompt())
    };
    let logged_in =
        rho_host::login_server(loaded, &store, kind, &args.id, &mode).map_err(|e| match e {
            rho_host::LoginError::UnknownServer(id) => Failure::Usage(unknown_server(loaded, &id)),
            e => login_failure(&e),
        })?;
    write_stdout(&format!("{logged_in}\n"))?;
    Ok(ExitCode::SUCCESS)
}

/// A login that did not happen, as the failure that ends the command.
pub(crate) fn login_failure(error: &rho_host::LoginError) -> Failure {
    if error.is_usage() {
        Failure::Usage(error.to_string())
    } else {
        Failure::Runtime(error.to_string())
    }
}

/// `rho mcp logout <id>`: forgets the stored OAuth login of a server.
fn logout(loaded: &LoadedConfig, id: &str) -> Result<ExitCode, Failure> {
    let store = FileStore::default_location()
        .ok_or_else(|| login_failure(&rho_host::LoginError::NoStore))?;
    let removed = store
        .forget_server(id)
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    if removed == 0 && loaded.config.get(id).is_none() {
        return Err(Failure::Usage(unknown_server(loaded, id)));
    }
    write_stdout(&if removed == 0 {
        format!("server `{id}` has no stored OAuth login\n")
    } else {
        format!("forgot the OAuth login of server `{id}` (tokens and registered client)\n")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `rho mcp replay FILE`: exit 0 when every recorded poll matched, 1 when
/// one differed, 2 when FILE is not a readable transcript.
fn replay(file: &std::path::Path) -> Result<ExitCode, Failure> {
    use rho_proto_core::transcript::ReplayError;
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", file.display())))?;
    // Replay compares instants only with each other; any origin will do.
    let origin = std::time::Instant::now();
    match rho_proto_core::transcript::replay(&text, origin) {
        Ok(summary) => {
            write_stdout(&format!(
                "replayed {} session(s): {} inputs, {} polls, all identical\n",
                summary.sessions, summary.inputs, summary.polls
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(ReplayError::Diverged(divergence)) => Err(Failure::Runtime(format!(
            "{} diverged: {divergence}",
            file.display()
        ))),
        // Not a transcript, or one that cannot be read: the input is wrong,
        // not the core.
        Err(error) => Err(Failure::Usage(format!("{}: {error}", file.display()))),
    }
}

/// What no log line or error message of this run may show: every
/// configured server's secret values (see [`Redactor::for_server`]).
fn run_secrets(config: &rho_proto_core::config::Config, ambient: &[(String, String)]) -> Redactor {
    config
        .servers
        .iter()
        .filter_map(|entry| entry.config.as_ref().ok())
        .fold(Redactor::default(), |all, server| {
            all.merged(&Redactor::for_server(server, ambient))
        })
}

/// Prints a report that is complete, closes stdout, then shuts the servers
/// down. The report does not wait for the servers' shutdown grace: a reader
/// of the pipe (`rho mcp list --connect | jq`) gets its end of input at
/// once, while rho still waits for every server to exit (or kills its
/// process group) before it exits itself, so nothing is orphaned. A stop
/// signal during the shutdown still ends rho with its signal's exit code;
/// the report it already printed stays whole.
fn print_then_shut_down(runtime: Host, text: &str) -> Result<(), Failure> {
    if let Err(failure) = check_stopped().and_then(|()| write_stdout(text)) {
        runtime.shutdown();
        return Err(failure);
    }
    release_stdout();
    runtime.shutdown();
    check_stopped()
}

/// Points stdout at /dev/null, so whoever reads rho's stdout sees its end
/// now; nothing is written to stdout after a report.
fn release_stdout() {
    #[cfg(unix)]
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
}

/// Writes the command's output; a closed or full stdout is a failure with
/// a message, not a panic.
pub(crate) fn write_stdout(text: &str) -> Result<(), Failure> {
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
    mut options: RuntimeOptions,
    connect: bool,
    select: impl Fn(&str) -> bool,
) -> Host {
    if !connect {
        return start_host(
            Host::builder(loaded)
                .runtime(kind)
                .options(options)
                .only(|_| false)
                .prepare(),
        );
    }
    // The handlers first: a stop signal while the connect is prepared (a
    // refresh of a stored login waits on its token endpoint) is seen by
    // the startup, which ends at once, never killed mid-write of a
    // rotated token.
    options.interrupt = Some(signals::install());
    // Stored OAuth logins become Authorization headers (refreshed when
    // expired); a token refused mid-session is refreshed; nothing here
    // ever opens a browser.
    start_host(
        Host::builder(loaded)
            .runtime(kind)
            .options(options)
            .only(select)
            .prepare(),
    )
}

/// Starts the servers a prepared connect selected; while any starts, a
/// second stop signal exits at once (see `signals`).
pub(crate) fn start_host(connecting: rho_host::Connecting<'_>) -> Host {
    if connecting.starts_any() {
        signals::watch_for_second();
    }
    connecting.start().host
}

pub(crate) fn unknown_server(loaded: &LoadedConfig, id: &str) -> String {
    if let Some(flag) = loaded.adhoc {
        return format!(
            "no MCP server `{id}`: with {flag} the one server is `{}` (no config file is read)",
            adhoc::ID
        );
    }
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
        let near = rho_host::did_you_mean(id, known.iter().copied())
            .map(|near| format!("; did you mean `{near}`?"))
            .unwrap_or_default();
        format!(
            "no MCP server `{id}` in {}{near} (configured: {})",
            loaded.describe(),
            known.join(", ")
        )
    }
}

/// The entry of server `id`, when it can be started: an unknown id is a
/// usage error (exit 2), an invalid or disabled entry a runtime one.
pub(crate) fn startable_server<'a>(
    loaded: &'a LoadedConfig,
    id: &str,
) -> Result<&'a rho_proto_core::config::ServerEntry, Failure> {
    let Some(entry) = loaded.config.get(id) else {
        return Err(Failure::Usage(unknown_server(loaded, id)));
    };
    match &entry.config {
        Err(error) => Err(Failure::Runtime(error.to_string())),
        Ok(server) if !server.enabled => Err(Failure::Runtime(format!(
            "server `{id}` is disabled (enabled = false in {})",
            loaded.describe()
        ))),
        Ok(_) => Ok(entry),
    }
}

fn exit_code(failed: bool) -> ExitCode {
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
