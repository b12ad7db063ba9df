//! `rho mcp shell`: one long-lived runtime over every enabled server, and
//! a person's seat at it: status, tools, calls, and the servers' own
//! questions, from a line editor with a completion menu. There is no model
//! here; it is the MCP Inspector's job done in a terminal.
//!
//! On a terminal the line editor ([`editor`], [`keys`], [`screen`]) runs
//! in raw mode: Ctrl-C is a key, so it cancels the running call (the
//! server is told) instead of ending rho; Ctrl-D on an empty line or
//! `/quit` shuts every session down in order. Everything that happens
//! while a line is being typed — progress of the running call, server log
//! messages, list changes, ping failures, a server's form — is printed
//! above the prompt line, which is then drawn again; all of it, like
//! every line the shell prints on a terminal, is broken between words to
//! fit the terminal's width ([`screen::wrap`]), after it was sanitized.
//! A server's form is asked with the same words and rules as `rho mcp
//! call`, answered through the same editor; the prompt shows the field
//! being asked.
//!
//! Server log messages: `--log-level <level>` asks every server that
//! declares the `logging` capability to send messages from that level up
//! (`logging/setLevel`, in place of each server's configured `log_level`
//! for this run) and shows them above the prompt. The eight MCP levels
//! show as four (debug; info and notice; warning; error and above), as in
//! rho's log. Without the flag, a server keeps its configured level and
//! messages show from the `--verbose`/`RUST_LOG` level (warning by
//! default).
//!
//! List changes: a tool a server added is said with "`/reconnect` to use it"
//! (a session's tool set is fixed); a tool it revised is said, and `/tools`
//! and completion show its new definition; a tool it withdrew is said,
//! and `/tools` marks it `(withdrawn)` (calling it fails with the reason).
//!
//! Argument suggestions: while the cursor is in a value of a prompt
//! argument (`/mcp:<server>:<prompt> key=val`), the server's
//! [`CompletionBroker`] is asked after each keystroke; one
//! `completion/complete` is in flight per server, keystrokes typed
//! meanwhile coalesce into the next one, and the answer is drawn as a
//! palette under the line when it arrives, on the thread that waited for
//! it, never holding up a key. A request gives up after
//! [`SUGGEST_BUDGET`] (the server is told). The arguments already typed go
//! as `context.arguments`.
//!
//! Attachments: `@<fragment>` puts up the palette of held resources, then
//! templates, then workspace files. Workspace files are the files under
//! the workspace (`--workspace`, else the current directory), listed once
//! per line being edited: at most [`FILE_DEPTH`] directories deep, hidden
//! entries (a name starting with `.`) skipped, symbolic links not
//! followed, and at most [`FILE_LIMIT`] files in all. A picked resource is
//! read on its own thread ([`ResourceRead`]); Backspace on it cancels the
//! read (the server is told), a failed read removes it and says why above
//! the line, and Enter waits until every read is done. There is no model
//! here, so Enter on a line that is not a command but carries attachments
//! prints the message a model would get: the typed text, then each
//! attachment under its URI, its text capped by the server's
//! `max_output_bytes` (an image is described, not printed). A command line
//! takes no attachments. While an attachment is on the line, a server that
//! offers `resources.subscribe` tells of its changes, and each one reads it
//! again before Enter sends the line ([`attached`]).
//!
//! Not on a terminal (input from a pipe or a file), the shell reads one
//! command per line and prints plain output: the same commands, scriptable
//! (and lines unbroken, unless stdout is a terminal).
//! No person is present then, so forms are declined as in `rho mcp call`,
//! and there is no palette: a line with `@` in it is text like any other.
//!
//! Why an editor written here rather than rustyline or reedline: the
//! shell must print above the line from other threads while a key is
//! being read, and later redraw suggestions that arrive from a server
//! without a key press; both crates own the terminal during a read and
//! offer at most an external printer for the first. The editor is one
//! small pure model (tested key by key) over rustix's termios, which rho
//! already depends on, so the binary grows by kilobytes, not by a
//! terminal library.
//!
//! Logins: a server that can only get a token through a browser login is
//! left out of the start ([`rho_host::HostBuilder::defer_browser_logins`])
//! and named, so no server waits for another's login. `/login <server>`
//! runs the host library's login ([`Host::logins`]) with a prompt that
//! prints the URL above the line, naming the server; Ctrl-C skips it. A
//! login that succeeds starts that one server into the running host
//! ([`Host::reconnect`]), on the loop's own thread; the other servers keep
//! their sessions.
//!
//! History is kept in `~/.rho/shell_history` (the last
//! [`editor::HISTORY_LINES`] lines, owner-only permissions), written after
//! every command so a killed shell loses nothing.

mod attached;
mod commands;
mod editor;
mod keys;
mod screen;
mod watch;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rho_proto_core::config::LogLevel;
use rho_proto_core::features::completions::{
    CompletionBroker, CompletionRef, CompletionTicket, Query,
};
use rho_proto_core::features::elicitation::{Form, FormAnswer, UrlAnswer, UrlRequest};
use rho_proto_core::features::resources::{Attachment, ReadState, ResourceRead};
use rho_proto_core::features::{FeatureRequest, content, prompts};
use rho_proto_core::host::{Asked, Responder, RuntimeOptions};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::{CallError, Progress};
use rho_proto_core::text::terminal::{sanitize, sanitize_line};

use self::commands::{Catalog, CatalogPrompt, CatalogTool, Command, Context, ServerResources};
use self::editor::{Editor, Event};
use self::screen::Screen;
use crate::{Failure, unless_stopped};
use rho_host::{CallOptions, Cancel, Host, LoadedConfig, RuntimeKind};

/// The prompt in front of a command line.
const PROMPT: &str = "rho> ";

/// How often progress of one call may print a line.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How long one `completion/complete` may take before its suggestions are
/// given up (the palette stays empty).
const SUGGEST_BUDGET: Duration = Duration::from_secs(10);

/// How many directories deep the `@` palette looks for workspace files.
const FILE_DEPTH: usize = 6;

/// How many workspace files the `@` palette lists at most.
const FILE_LIMIT: usize = 5000;

/// `rho mcp shell` arguments.
#[derive(clap::Args, Debug)]
pub(crate) struct ShellArgs {
    /// Ask every server that declares logging for its log messages from
    /// LEVEL up (debug, info, notice, warning, error, critical, alert,
    /// emergency), and show them above the prompt.
    #[arg(long, value_name = "LEVEL", value_parser = parse_log_level)]
    pub(crate) log_level: Option<LogLevel>,
}

fn parse_log_level(text: &str) -> Result<LogLevel, String> {
    LogLevel::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
        format!("one of {}", names.join(", "))
    })
}

/// The tracing level server log messages of `level` are logged at (see
/// the session's routing of `notifications/message`).
pub(crate) fn tracing_level(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Debug => "debug",
        LogLevel::Info | LogLevel::Notice => "info",
        LogLevel::Warning => "warn",
        _ => "error",
    }
}

/// Runs `rho mcp shell`.
pub(crate) fn run(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    mut options: RuntimeOptions,
    args: &ShellArgs,
) -> Result<ExitCode, Failure> {
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let history_path = history_path();
    let history = history_path
        .as_deref()
        .map(load_history)
        .unwrap_or_default();
    let screen = Arc::new(Screen::new(Editor::new(PROMPT, history)));
    let answers: Arc<Mutex<Option<mpsc::Sender<Option<String>>>>> = Arc::default();
    let cancel_after_answer: Arc<Mutex<Option<Cancel>>> = Arc::default();
    let responder: Option<Arc<dyn Responder>> = if interactive && crate::questions::person_present()
    {
        Some(Arc::new(ShellResponder {
            screen: Arc::clone(&screen),
            answers: Arc::clone(&answers),
            one: Mutex::new(()),
            cancel_after_answer: Arc::clone(&cancel_after_answer),
        }))
    } else {
        None
    };
    options.host = crate::questions::apps_host(rho_host::host_services(
        responder,
        loaded.config.sampling_command.clone(),
    ));
    let (resource_sink, updates) = rho_host::resource_update_channel();
    options.host.resource_updates = Some(resource_sink);
    // No server waits for another's browser login: a server that needs
    // one is left out of the start and named, and `/login <id>` logs in
    // and starts it when the person chooses (the host library's login).
    let mode = if interactive {
        crate::questions::login_mode()
    } else {
        rho_host::LoginMode::Never
    };
    // Before the connect is prepared: a stop signal then ends the startup.
    let stop = crate::signals::install();
    let workspace = options
        .workspace
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    options.interrupt = Some(stop.clone());
    let connecting = Host::builder(loaded)
        .runtime(kind)
        .options(options)
        .login(mode.clone())
        .log_level(args.log_level)
        .defer_browser_logins()
        // Smol sessions keep running between commands: pings answered,
        // server output read (the blocking runtime's sessions have
        // threads already).
        .executor_thread()
        .prepare();
    let deferred = connecting.deferred().to_vec();
    for id in &deferred {
        let line = format!(
            "rho: server `{}` needs a browser login, so it is not started; `/login {}` logs in and starts it",
            sanitize_line(id),
            sanitize_line(id)
        );
        if std::io::stderr().is_terminal() {
            eprintln!("{}", screen::wrap(&line, screen::width()));
        } else {
            eprintln!("{line}");
        }
    }
    if interactive {
        // The servers' start logs before the prompt line is up: broken
        // between words to fit, as the screen breaks what it prints.
        crate::logging::route_to(Some(Arc::new(|line: &str| {
            let _ = writeln!(std::io::stderr(), "{}", screen::wrap(line, screen::width()));
        })));
        let _ = writeln!(
            std::io::stderr(),
            "rho: starting {} server(s); Ctrl-C stops the startup",
            connecting
                .config()
                .servers
                .iter()
                .filter(|e| e.config.as_ref().is_ok_and(|c| c.enabled))
                .count()
        );
    }
    let host = unless_stopped(crate::start_host(connecting))?;
    crate::completion_words::remember(&host.servers());
    let shell = Shell {
        loaded,
        host: RwLock::new(host),
        login_mode: mode,
        deferred: Mutex::new(deferred),
        logged_in: Mutex::new(None),
        logging_in: AtomicBool::new(false),
        out: if interactive {
            Out::Screen(Arc::clone(&screen))
        } else {
            Out::Plain
        },
        running: Mutex::new(None),
        views: Mutex::new(Vec::new()),
        cancel_after_answer,
        suggest: Suggest::default(),
        reads: Mutex::new(BTreeMap::new()),
        cancelling: Mutex::new(BTreeMap::new()),
        files: Mutex::new(None),
        workspace,
        updates,
        watching: Mutex::new(BTreeMap::new()),
        letting_go: Mutex::new(Vec::new()),
    };
    let status = shell.greeting_text();
    shell.out.print(&status);
    let outcome = if interactive {
        crate::logging::route_to(Some(Arc::new({
            let screen = Arc::clone(&screen);
            move |line: &str| screen.print(line)
        })));
        let result = interactive_loop(&shell, &screen, &answers, &stop, history_path.as_deref());
        crate::logging::route_to(None);
        result
    } else {
        plain_loop(&shell, &stop);
        Ok(())
    };
    shell
        .host
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .shutdown();
    outcome?;
    crate::check_stopped()?;
    Ok(ExitCode::SUCCESS)
}

/// Where the shell's output goes.
enum Out {
    /// Above the prompt line.
    Screen(Arc<Screen>),
    /// Plainly to stdout.
    Plain,
}

impl Out {
    /// Prints `text` (sanitized already). On a terminal it is broken
    /// between words to fit ([`screen::wrap`]); into a pipe or a file it
    /// goes as it is, one line a line, for the script that reads it.
    fn print(&self, text: &str) {
        match self {
            Out::Screen(screen) => screen.print(text),
            Out::Plain => {
                let text = if std::io::stdout().is_terminal() {
                    screen::wrap(text, screen::width())
                } else {
                    std::borrow::Cow::Borrowed(text)
                };
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(text.as_bytes());
                if !text.ends_with('\n') {
                    let _ = stdout.write_all(b"\n");
                }
                let _ = stdout.flush();
            }
        }
    }
}

/// Shows a login's URL above the shell's line, naming the server, and
/// ends the wait when the person presses Ctrl-C.
struct ShellLoginPrompt {
    /// Above the line; `None` prints to stdout.
    screen: Option<Arc<Screen>>,
    cancel: Cancel,
}

impl rho_host::AuthorizationPrompt for ShellLoginPrompt {
    fn show(&self, server: &str, url: &url::Url) {
        let server = sanitize_line(server);
        let out = match &self.screen {
            Some(screen) => Out::Screen(Arc::clone(screen)),
            None => Out::Plain,
        };
        out.print(&format!(
            "To authorize rho for server `{server}`, open this URL in a browser (it is being opened for you where possible):\n\n  {}\n\nrho: waiting for the browser to finish the login to server `{server}` (Ctrl-C skips it; `/login {server}` again later)...",
            sanitize_line(url.as_str())
        ));
        if crate::questions::person_present() {
            rho_host::open_in_browser(url);
        }
    }

    fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }
}

/// The shell's state while it runs.
struct Shell<'a> {
    loaded: &'a LoadedConfig,
    /// Written to only when a `/login` starts its server into it.
    host: RwLock<Host>,
    /// Whether, and how, a login may reach the person.
    login_mode: rho_host::LoginMode,
    /// The servers left out of the start for their browser login.
    deferred: Mutex<Vec<String>>,
    /// The server a `/login` just logged in to, until it is started.
    logged_in: Mutex<Option<String>>,
    /// A `/login` is waiting (Ctrl-C skips it rather than cancel a call).
    logging_in: AtomicBool,
    out: Out,
    /// The running call's cancel token.
    running: Mutex<Option<Cancel>>,
    /// The MCP App views open beside the prompt (`/app`), newest last:
    /// each one's label and the token that closes it.
    views: Mutex<Vec<(String, Cancel)>>,
    /// The running call's token while a form that Ctrl-C cancelled says
    /// what the server was sent: the responder cancels the call after
    /// that, so the person reads the answer, then the call's end.
    cancel_after_answer: Arc<Mutex<Option<Cancel>>>,
    suggest: Suggest,
    /// The attachments of the line being edited, by the editor's id.
    reads: Mutex<BTreeMap<u64, ReadSlot>>,
    /// Attachments taken off the line while their read ran: the read is
    /// being cancelled, and says so once the session has told the server.
    cancelling: Mutex<BTreeMap<u64, ReadSlot>>,
    /// The workspace files, listed once per line being edited.
    files: Mutex<Option<Vec<String>>>,
    workspace: PathBuf,
    /// News of the resources attachments are subscribed to.
    updates: rho_host::ResourceUpdates,
    /// The resources subscribed to for attachments, with how many
    /// attachments hold each.
    watching: Mutex<BTreeMap<(String, String), usize>>,
    /// Subscriptions whose last attachment left, to let go.
    letting_go: Mutex<Vec<(String, String)>>,
}

/// Argument suggestions: one broker per server, the request each has in
/// flight, and what the latest question was about.
#[derive(Default)]
struct Suggest {
    brokers: Mutex<BTreeMap<String, CompletionBroker>>,
    /// Per server: the ticket of the request being waited for, and the
    /// flag that cancels it.
    flights: Mutex<BTreeMap<String, (CompletionTicket, Cancel)>>,
    /// Where the latest asked value sits: the palette of an answer goes
    /// there, if the line is still as it was.
    anchor: Mutex<Option<Anchor>>,
    /// The shell is leaving: no further request goes out.
    quitting: AtomicBool,
}

/// The value a suggestion is for.
#[derive(Clone)]
struct Anchor {
    server: String,
    line: String,
    cursor: usize,
    range: (usize, usize),
    typed: String,
    single: bool,
}

/// One attachment: which server it is read from, and its read.
struct ReadSlot {
    server: String,
    read: ResourceRead,
    cancel: Cancel,
    /// It holds a subscription to its resource ([`Shell::watch`]).
    watched: bool,
}

impl Shell<'_> {
    /// The running host.
    fn host(&self) -> std::sync::RwLockReadGuard<'_, Host> {
        self.host
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `/login <server>`: the host library's browser login for that
    /// server (Ctrl-C sets `cancel` and skips it). A login that succeeds
    /// leaves the start to [`Shell::start_after_login`], which the loop's
    /// own thread runs: a stdio server dies with the thread that started it
    /// (its parent-death signal), and a command's thread ends.
    fn login(&self, id: &str, cancel: &Cancel) -> String {
        use rho_host::{LoginError, LoginMode};
        if !matches!(self.login_mode, LoginMode::Person(_)) {
            return format!(
                "a browser login needs a person at a terminal: run `rho mcp login {}`",
                sanitize_line(id)
            );
        }
        if let Some(unknown) = self.unknown_server(id) {
            return unknown;
        }
        let mode = LoginMode::Person(Arc::new(ShellLoginPrompt {
            screen: match &self.out {
                Out::Screen(screen) => Some(Arc::clone(screen)),
                Out::Plain => None,
            },
            cancel: cancel.clone(),
        }));
        self.logging_in.store(true, Ordering::Relaxed);
        let logins = self.host().logins();
        let logged_in = logins.log_in(id, &mode);
        self.logging_in.store(false, Ordering::Relaxed);
        let logged_in = match logged_in {
            Ok(logged_in) => logged_in,
            Err(LoginError::Skipped { .. }) => {
                return format!(
                    "skipped the login to server `{}`; `/login {}` when you are ready",
                    sanitize_line(id),
                    sanitize_line(id)
                );
            }
            Err(why) => return sanitize_line(&why.to_string()).into_owned(),
        };
        *lock(&self.logged_in) = Some(id.to_owned());
        format!(
            "rho: {}; starting server `{}` with it",
            sanitize_line(&logged_in.to_string()),
            sanitize_line(id)
        )
    }

    /// After a `/login` of server `id`: that one server is started into
    /// the running host with the new login applied (see
    /// [`Shell::start_one`]). `None` when no login is waiting for its
    /// start.
    fn start_after_login(&self) -> Option<String> {
        let id = lock(&self.logged_in).take()?;
        let (restarted, status) = self.start_one(&id);
        Some(if restarted {
            format!("rho: its session was closed and started again with the new login; {status}")
        } else {
            format!("rho: {status}")
        })
    }

    /// Why `id` names no configured server (with the closest that does),
    /// or `None` when it names one.
    fn unknown_server(&self, id: &str) -> Option<String> {
        self.loaded.config.get(id).is_none().then(|| {
            let ids = self.loaded.config.servers.iter().map(|e| e.id.as_str());
            rho_host::NameError::UnknownServer {
                id: id.to_owned(),
                suggestion: rho_host::did_you_mean(id, ids).map(str::to_owned),
            }
            .to_string()
        })
    }

    /// `/reconnect <server>`: the server started again with the config
    /// as it is now (stored logins applied), its old session closed
    /// first if it has one; the other servers keep theirs. A server left
    /// for its browser login is sent to `/login`.
    fn reconnect(&self, id: &str) -> String {
        if let Some(unknown) = self.unknown_server(id) {
            return unknown;
        }
        if lock(&self.deferred).iter().any(|d| d == id) {
            return format!(
                "server `{}` needs a browser login first: `/login {}` logs in and starts it",
                sanitize_line(id),
                sanitize_line(id)
            );
        }
        let (restarted, status) = self.start_one(id);
        if restarted {
            format!(
                "rho: closed the session of server `{}` and started it again; {status}",
                sanitize_line(id)
            )
        } else {
            format!("rho: {status}")
        }
    }

    /// Starts server `id` into the running host with the stored logins as
    /// they are now, so a new login counts ([`Host::reconnect`]): whether
    /// it had a session that was closed first, and its status in words. Runs on the loop's own thread: a stdio server is tied to
    /// the thread that starts it.
    fn start_one(&self, id: &str) -> (bool, String) {
        let reconnected = self
            .host
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .reconnect(id);
        lock(&self.deferred).retain(|d| d != id && reconnected.awaiting_login.contains(d));
        crate::completion_words::remember(&self.host().servers());
        let status = match reconnected.started.map(|view| view.status) {
            Ok(ServerStatus::Ready(_)) => format!("server `{}` is ready", sanitize_line(id)),
            Ok(ServerStatus::Failed { error, .. } | ServerStatus::Invalid { error }) => format!(
                "server `{}` did not start: {}",
                sanitize_line(id),
                sanitize_line(&error)
            ),
            Ok(status) => format!("server `{}` is {}", sanitize_line(id), status.label()),
            Err(why) => format!(
                "server `{}` was not started: {}",
                sanitize_line(id),
                sanitize_line(&why.to_string())
            ),
        };
        (reconnected.closed, status)
    }

    fn catalog(&self) -> Catalog {
        Catalog {
            servers: self.host().servers().into_iter().map(|s| s.id).collect(),
            tools: self
                .host()
                .current_tools()
                .iter()
                .filter(|t| !t.withdrawn)
                .map(|t| CatalogTool {
                    exported: t.name.clone(),
                    server: t.server.clone(),
                    name: t.tool.clone(),
                    summary: sanitize_line(
                        t.title
                            .as_deref()
                            .unwrap_or_else(|| t.description.lines().next().unwrap_or("")),
                    )
                    .chars()
                    .take(60)
                    .collect(),
                    parameters: rho_host::parameters::parameters(&t.input_schema),
                })
                .collect(),
            prompts: self
                .host()
                .servers()
                .iter()
                .filter_map(|view| match &view.status {
                    ServerStatus::Ready(report) => Some((view.id.clone(), report)),
                    _ => None,
                })
                .flat_map(|(id, report)| {
                    report
                        .catalog
                        .prompts
                        .items
                        .iter()
                        .map(move |p| CatalogPrompt {
                            server: id.clone(),
                            name: p.name.clone(),
                            arguments: p.arguments.iter().map(|a| a.name.clone()).collect(),
                            note: sanitize_line(&p.argument_list()).into_owned(),
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            resources: self
                .host()
                .servers()
                .into_iter()
                .filter_map(|view| match view.status {
                    ServerStatus::Ready(report) => Some(ServerResources {
                        server: view.id,
                        resources: report.catalog.resources.items,
                        templates: report.catalog.templates.items,
                    }),
                    _ => None,
                })
                .collect(),
        }
    }

    /// `/mcp:<server>:<prompt> [arguments]`: checks the line against the
    /// server's prompts (no request for a bad one), then fetches the prompt
    /// and prints the user turn the model would get.
    fn prompt(&self, line: &str, cancel: &Cancel) -> String {
        match self.prompt_turn(line, cancel) {
            Ok(turn) => sanitize(&turn).into_owned(),
            Err(why) => sanitize(&why).into_owned(),
        }
    }

    fn prompt_turn(&self, line: &str, cancel: &Cancel) -> Result<String, String> {
        let command = prompts::parse_command(line).map_err(|e| e.to_string())?;
        let Some(view) = self.host().server(command.server) else {
            let servers: Vec<String> = self.host().servers().into_iter().map(|s| s.id).collect();
            return Err(rho_host::NameError::UnknownServer {
                id: command.server.to_owned(),
                suggestion: rho_host::did_you_mean(
                    command.server,
                    servers.iter().map(String::as_str),
                )
                .map(str::to_owned),
            }
            .to_string());
        };
        let ServerStatus::Ready(report) = &view.status else {
            return Err(format!("server `{}` is not ready", command.server));
        };
        let Some(prompt) = report.catalog.prompt(&command.prompt) else {
            let names: Vec<String> = report
                .catalog
                .prompts
                .items
                .iter()
                .map(|p| sanitize_line(&p.name).into_owned())
                .collect();
            let near = rho_host::did_you_mean(&command.prompt, names.iter().map(String::as_str));
            return Err(format!(
                "server `{}` has no prompt `{}`{}",
                command.server,
                sanitize_line(&command.prompt),
                near.map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default()
            ));
        };
        let arguments =
            prompts::parse_arguments(prompt, command.rest).map_err(|e| e.to_string())?;
        let name = prompt.name.clone();
        self.host()
            .prompt_turn(command.server, &name, arguments, cancel)
            .map(|prompted| prompted.turn)
            .map_err(|e| e.to_string())
    }

    /// `/mcp`: the table `rho mcp list --connect` prints (servers,
    /// transport, status, errors, exported tool names), then each
    /// server's prompts and resources.
    fn status_text(&self) -> String {
        let servers = self.host().servers();
        let auth = crate::auth_statuses(self.loaded);
        let mut text = crate::output::list_text(self.loaded, &servers, self.host().tools(), &auth);
        text.push_str(&crate::output::catalogs_text(&servers));
        text
    }

    /// What the shell says as it starts: the servers' table and one line
    /// of counts, not every tool (`/mcp` and `/tools` list them).
    fn greeting_text(&self) -> String {
        let servers = self.host().servers();
        let auth = crate::auth_statuses(self.loaded);
        let mut text =
            crate::output::servers_table(self.loaded, &servers, self.host().tools(), &auth);
        if servers.is_empty() {
            return text;
        }
        let (mut prompts, mut resources) = (0, 0);
        for server in &servers {
            if let ServerStatus::Ready(report) = &server.status {
                prompts += report.catalog.prompts.items.len();
                resources +=
                    report.catalog.resources.items.len() + report.catalog.templates.items.len();
            }
        }
        let tools = self.host().tools().tools().len();
        text.push_str(&format!(
            "\n{tools} tool(s), {prompts} prompt(s), {resources} resource(s) and template(s): /mcp lists them, /tools [server] shows the tools, /help the commands\n"
        ));
        text
    }

    /// `/doctor`: one row per server, what is wrong and what to do.
    fn doctor_text(&self) -> String {
        let mut text = String::new();
        for server in self.host().servers() {
            let id = sanitize_line(&server.id);
            let row = match &server.status {
                ServerStatus::Ready(_) => {
                    let tools = self.host().tools().server_tools(&server.id).count();
                    format!("ok    {id}: ready, {tools} tool(s) exported")
                }
                ServerStatus::Disabled => format!("off   {id}: disabled (enabled = false)"),
                ServerStatus::NotStarted => format!("off   {id}: not started"),
                ServerStatus::Invalid { error } => {
                    format!("bad   {id}: {}", sanitize_line(error))
                }
                ServerStatus::Failed { error, .. } => {
                    format!("fail  {id}: {}", sanitize_line(error))
                }
                ServerStatus::Restarting {
                    error,
                    attempt,
                    attempts,
                } => format!(
                    "wait  {id}: restarting (attempt {attempt} of {attempts}); its process ended: {}",
                    sanitize_line(error)
                ),
            };
            text.push_str(&row);
            text.push('\n');
        }
        if text.is_empty() {
            text.push_str("no servers are configured\n");
        }
        text
    }

    /// `/tools [server]`.
    fn tools_text(&self, server: Option<&str>) -> String {
        if let Some(id) = server.filter(|id| self.host().server(id).is_none()) {
            return format!("no server `{}` is configured", sanitize_line(id));
        }
        let mut text = String::new();
        for tool in &self.host().current_tools() {
            if server.is_some_and(|s| s != tool.server) {
                continue;
            }
            let withdrawn = if tool.withdrawn { " (withdrawn)" } else { "" };
            let summary = tool
                .title
                .as_deref()
                .unwrap_or_else(|| tool.description.lines().next().unwrap_or(""));
            text.push_str(&format!(
                "{}  ({}:{}){withdrawn}  {}\n",
                sanitize_line(&tool.name),
                sanitize_line(&tool.server),
                sanitize_line(&tool.tool),
                sanitize_line(summary)
            ));
            for line in crate::output::app_lines(tool.meta.as_deref()) {
                text.push_str(&format!("    {line}\n"));
            }
            for parameter in rho_host::parameters::parameters(&tool.input_schema) {
                text.push_str(&format!("    {}\n", sanitize_line(&parameter.line())));
            }
        }
        if text.is_empty() {
            text.push_str("no tools are exported\n");
        }
        for view in self.host().servers() {
            if server.is_some_and(|s| s != view.id) {
                continue;
            }
            text.push_str(&crate::output::app_only_rows(&view));
        }
        text
    }

    /// What a `/call` line calls: `(server, tool, arguments)`. The tool is
    /// named as everywhere (`rho_host::resolve_tool`): `<server> <tool>`,
    /// `<server>:<tool>` or its exported name; the rest is its arguments.
    fn prepare_call(
        &self,
        target: &str,
        arguments: &str,
    ) -> Result<(String, String, serde_json::Value), String> {
        let servers: Vec<String> = self.host().servers().into_iter().map(|s| s.id).collect();
        let tools = self.host().current_tools();
        let second = arguments.split_whitespace().next();
        let words: Vec<&str> = std::iter::once(target).chain(second).collect();
        let resolved = match rho_host::resolve_tool(&servers, &tools, &words) {
            // A tool for the server's MCP App only is not exported: the
            // call is left to the runtime, which refuses it saying why.
            Err(rho_host::NameError::UnknownTool { server, tool, .. })
                if crate::call::app_only(&self.host(), &server, &tool) =>
            {
                let words = if target == server { 2 } else { 1 };
                Ok(rho_host::ToolTarget {
                    server,
                    tool,
                    words,
                })
            }
            other => other,
        };
        let resolved = resolved.map_err(|e| {
            // A server left for its login says so, rather than that it
            // has no such tool.
            let named = target.split_once(':').map_or(target, |(server, _)| server);
            match lock(&self.deferred).iter().find(|d| *d == named) {
                Some(id) => format!(
                    "server `{}` is not started: it needs a browser login first (`/login {}`)",
                    sanitize_line(id),
                    sanitize_line(id)
                ),
                None => e.to_string(),
            }
        })?;
        let rest = if resolved.words == 2 {
            arguments
                .trim_start()
                .split_once(char::is_whitespace)
                .map_or("", |(_, rest)| rest.trim())
        } else {
            arguments
        };
        let args = self.arguments(&resolved.server, &resolved.tool, rest)?;
        Ok((resolved.server, resolved.tool, args))
    }

    /// The arguments of a call: a JSON object, or `key=value` words typed
    /// by the tool's input schema.
    fn arguments(&self, server: &str, tool: &str, text: &str) -> Result<serde_json::Value, String> {
        if text.starts_with('{') {
            return match serde_json::from_str::<serde_json::Value>(text) {
                Ok(value @ serde_json::Value::Object(_)) => Ok(value),
                Ok(_) => Err("the arguments must be a JSON object".into()),
                Err(e) => Err(format!("the arguments are not JSON: {e}")),
            };
        }
        let words = crate::adhoc::split(text)?;
        let arguments = crate::tool_args::parse_words(&words)?;
        crate::call::typed_arguments(&self.host(), server, tool, arguments)
    }

    /// Runs one call to its end, printing progress; the result's text.
    fn call(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
        cancel: &Cancel,
    ) -> String {
        let label = format!("{}:{}", sanitize_line(server), sanitize_line(tool));
        let mut last = Instant::now() - PROGRESS_EVERY;
        let on_progress = |progress: Progress| {
            if last.elapsed() < PROGRESS_EVERY {
                return;
            }
            last = Instant::now();
            self.out
                .print(&format!("  … {label}: {}", progress_text(&progress)));
        };
        let outcome = self.host().call(
            (server, tool),
            arguments,
            CallOptions::new().on_progress(on_progress).cancel(cancel),
        );
        self.call_text(&label, outcome, cancel)
    }

    /// What a call's outcome shows.
    fn call_text(
        &self,
        label: &str,
        outcome: Result<rho_host::CallToolResult, ToolCallError>,
        cancel: &Cancel,
    ) -> String {
        match outcome {
            // Cancelled by the person, but the server answered first: what
            // they stopped is not shown as if it had gone on.
            Ok(_) if cancel.is_cancelled() => {
                format!(
                    "{label}: cancelled; the server answered before it stopped (its result is not shown)"
                )
            }
            Ok(result) => {
                let rendered = content::render(&result);
                let body = sanitize(&rendered.model_text).into_owned();
                if rendered.is_error {
                    format!("{label} reported an error:\n{body}")
                } else if body.is_empty() {
                    format!("{label}: (no content)")
                } else {
                    body
                }
            }
            Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) => {
                format!("{label}: cancelled; {notice}")
            }
            Err(error) => sanitize(&crate::questions::call_error_text(&error)).into_owned(),
        }
    }

    /// `/app`: the call, with the tool's MCP App view opened in a browser
    /// (see `crate::app`): the call's text, and the view, told the call's
    /// result, to serve ([`Shell::serve_view`]); no view where no browser
    /// can open (the text then says so), or when the call did not answer.
    fn open_app(
        &self,
        server: &str,
        tool: &str,
        arguments: serde_json::Value,
        cancel: &Cancel,
    ) -> (String, Option<Box<rho_host::apps::AppView>>) {
        let label = format!("{}:{}", sanitize_line(server), sanitize_line(tool));
        let host = self.host();
        let mut view = match crate::app::plan(&host, server, tool, &arguments, false) {
            crate::app::Plan::Serve(view) => {
                self.out
                    .print(&format!("{label}: {}", crate::app::opening(&view, tool)));
                view
            }
            crate::app::Plan::Explain(line) => {
                let outcome =
                    host.call((server, tool), arguments, CallOptions::new().cancel(cancel));
                return (
                    format!("{}\n{line}", self.call_text(&label, outcome, cancel)),
                    None,
                );
            }
            crate::app::Plan::None => unreachable!("plan always says why"),
        };
        let outcome = host.call((server, tool), arguments, CallOptions::new().cancel(cancel));
        match &outcome {
            Ok(result) if !cancel.is_cancelled() => view.tool_result(result.as_sent()),
            Ok(_) => view.tool_cancelled("the person cancelled the call"),
            Err(error) => view.tool_cancelled(&crate::questions::call_error_text(error)),
        }
        let served = outcome.is_ok() && !cancel.is_cancelled();
        let text = self.call_text(&label, outcome, cancel);
        if served {
            (text, Some(view))
        } else {
            (format!("{text}\n{label}: the view was closed"), None)
        }
    }

    /// Serves an open view until it ends (`close` fires, its page is
    /// closed), printing what it does; the line that says it ended. The
    /// editor owns the terminal's input: a link the view asks for is
    /// shown, for the person to open, not opened.
    fn serve_view(
        &self,
        server: &str,
        tool: &str,
        view: &mut rho_host::apps::AppView,
        close: &Cancel,
    ) -> String {
        let label = format!("{}:{}", sanitize_line(server), sanitize_line(tool));
        let host = self.host();
        let reason = crate::app::serve_with(
            &host,
            view,
            close,
            |line| self.out.print(&format!("{label}: {line}")),
            |_| false,
        );
        format!("{label}: the view ended: {}", sanitize_line(&reason))
    }

    /// `/app` read from a pipe: the call and its view, served until the
    /// view ends (its page closed, or `stop`).
    fn app(&self, server: &str, tool: &str, arguments: serde_json::Value, stop: &Cancel) -> String {
        let (text, view) = self.open_app(server, tool, arguments, stop);
        self.out.print(&text);
        let Some(mut view) = view else {
            return String::new();
        };
        let label = format!("{}:{}", sanitize_line(server), sanitize_line(tool));
        self.out
            .print(&format!("{label}: the view is open; Ctrl-C closes it"));
        self.serve_view(server, tool, &mut view, stop)
    }

    /// The message a model would get for `line` and its attachments (all
    /// read), which leave the shell's keeping.
    fn message_text(&self, line: &str, attachments: &[u64]) -> String {
        let mut reads = lock(&self.reads);
        let mut text =
            String::from("── the message a model would get (there is no model here) ──\n");
        let typed = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if !typed.is_empty() {
            text.push_str(&sanitize(&typed));
            text.push('\n');
        }
        for chip in attachments {
            let Some(slot) = reads.remove(chip) else {
                continue;
            };
            if slot.watched {
                self.unwatch(&slot.server, slot.read.uri());
            }
            text.push_str(&format!(
                "── [resource: {}] from server `{}` ──\n",
                sanitize_line(slot.read.uri()),
                sanitize_line(&slot.server)
            ));
            let body = match slot.read.state() {
                ReadState::Ready {
                    attachment: Attachment::Text { text },
                } => sanitize(text).into_owned(),
                ReadState::Ready {
                    attachment:
                        Attachment::Image {
                            mime_type,
                            data_base64,
                        },
                } => format!(
                    "[image {}, {}] (a model would see the image itself)",
                    sanitize_line(mime_type),
                    content::human_size(data_base64.len() / 4 * 3)
                ),
                _ => "(not read)".to_owned(),
            };
            text.push_str(&body);
            if !body.ends_with('\n') {
                text.push('\n');
            }
        }
        text
    }

    /// Forgets attachments that go nowhere.
    fn drop_reads(&self, attachments: &[u64]) {
        let mut reads = lock(&self.reads);
        for chip in attachments {
            let Some(mut slot) = reads.remove(chip) else {
                continue;
            };
            if slot.watched {
                self.unwatch(&slot.server, slot.read.uri());
            }
            if slot.read.cancel() {
                slot.cancel.cancel();
            }
        }
    }

    /// The workspace files, listed on first use for the line being edited.
    fn workspace_files(&self) -> Vec<String> {
        lock(&self.files)
            .get_or_insert_with(|| list_files(&self.workspace))
            .clone()
    }

    /// Runs a command that does not call a tool; `None` for `/call`.
    fn quick(&self, command: &Command) -> Option<String> {
        Some(match command {
            Command::Nothing => return Some(String::new()),
            Command::Status => self.status_text(),
            Command::Doctor => self.doctor_text(),
            Command::Tools(server) => self.tools_text(server.as_deref()),
            Command::Help => commands::help(),
            Command::Refused(why) => why.clone(),
            Command::Call { .. }
            | Command::Prompt(_)
            | Command::Login(_)
            | Command::Reconnect(_)
            | Command::Quit => {
                return None;
            }
        })
    }
}

/// A call's progress as one line: a percentage with a total, a count
/// without, and the server's message.
fn progress_text(progress: &Progress) -> String {
    let amount = match progress.total {
        Some(total) if total > 0.0 => format!(
            "{:.0}%",
            (progress.progress / total * 100.0).clamp(0.0, 100.0)
        ),
        _ => format!("{}", progress.progress),
    };
    match &progress.message {
        Some(message) => format!("{amount} {}", sanitize_line(message)),
        None => amount,
    }
}

/// The loop on a terminal: keys in, the line drawn, commands run; a call
/// runs on its own thread so Ctrl-C can reach it, and so do suggestion
/// requests and resource reads, so no key waits for a server.
fn interactive_loop(
    shell: &Shell<'_>,
    screen: &Arc<Screen>,
    answers: &Arc<Mutex<Option<mpsc::Sender<Option<String>>>>>,
    stop: &Cancel,
    history_path: Option<&std::path::Path>,
) -> Result<(), Failure> {
    let raw = screen::RawMode::enter()
        .map_err(|e| Failure::Runtime(format!("cannot set up the terminal: {e}")))?;
    screen.edit(|_| ());
    let mut decoder = keys::Decoder::default();
    std::thread::scope(|scope| {
        let mut worker: Option<std::thread::ScopedJoinHandle<'_, ()>> = None;
        // What the servers looked like when last checked, for the
        // list-change, ping and failure lines (about once a second).
        let mut seen = shell.host().servers();
        let mut seen_tools = shell.host().current_tools();
        let mut ticks = 0u32;
        let mut drawn_width = screen::width();
        'keys: loop {
            ticks = ticks.wrapping_add(1);
            if ticks.is_multiple_of(10) {
                let now = shell.host().servers();
                let now_tools = shell.host().current_tools();
                for line in watch::changes(&seen, &now)
                    .into_iter()
                    .chain(watch::revisions(&seen_tools, &now_tools))
                {
                    screen.print(&line);
                }
                seen = now;
                seen_tools = now_tools;
            }
            suggestion_timeouts(shell);
            while let Some(news) = shell.updates.try_next() {
                attached::heard(scope, shell, screen, news);
            }
            attached::let_go(scope, shell);
            if stop.is_cancelled() || crate::signals::stopped() {
                cancel_running(shell);
                break;
            }
            if worker.as_ref().is_some_and(|w| w.is_finished()) {
                let _ = worker.take().map(std::thread::ScopedJoinHandle::join);
                if let Some(text) = shell.start_after_login() {
                    screen.print(&text);
                    seen = shell.host().servers();
                    seen_tools = shell.host().current_tools();
                }
            }
            let Some(bytes) = read_keys() else {
                cancel_running(shell);
                break;
            };
            // A resize redraws at once, for the new width.
            let now_width = screen::width();
            if now_width != drawn_width {
                drawn_width = now_width;
                screen.draw();
            }
            for key in decoder.feed(&bytes, bytes.len() < READ_SIZE) {
                let revision = screen.look(Editor::revision);
                // Drawn once per key, after the palette is brought up to
                // date (see below), not once for the key and again for it.
                let action = screen.look_mut(|editor| editor.key(key));
                for event in screen.look_mut(Editor::take_events) {
                    match event {
                        Event::Attach { chip, server, uri } => {
                            attach(scope, shell, screen, chip, server, uri);
                        }
                        Event::Detach { chip } => detach(shell, chip),
                    }
                }
                let asking = lock(answers).is_some();
                if !asking && screen.look(Editor::revision) != revision {
                    refresh_palette(scope, shell, screen);
                }
                if !matches!(action, editor::Action::Complete { .. }) {
                    screen.draw();
                }
                match action {
                    editor::Action::ClearScreen => screen.clear_screen(),
                    editor::Action::Redraw => {}
                    editor::Action::Notice(why) => screen.print(&why),
                    editor::Action::Complete {
                        line,
                        word_start,
                        cursor,
                    } => {
                        let candidates =
                            commands::complete(&shell.catalog(), &line, word_start, cursor);
                        screen.offer(&line, word_start, candidates);
                    }
                    // In a form, each answer is one key: Ctrl-C cancels
                    // the form and the call it came during, Ctrl-D
                    // declines the form (the call goes on), Enter on an
                    // empty optional field skips it. The form says which
                    // answer the server was sent.
                    editor::Action::Interrupt => {
                        let running = match take(answers) {
                            Some(tx) => {
                                // The form's answer first; the responder
                                // cancels the call once it has said so.
                                let running = lock(&shell.running).clone();
                                *lock(&shell.cancel_after_answer) = running.clone();
                                let _ = tx.send(Some(crate::questions::CANCEL.to_owned()));
                                running.is_some()
                            }
                            None => cancel_running(shell) || close_newest_view(shell),
                        };
                        if !running {
                            screen.print("(Ctrl-D or /quit leaves the shell)");
                        }
                    }
                    editor::Action::EndOfInput if lock(answers).is_some() => {
                        if let Some(tx) = take(answers) {
                            let _ = tx.send(Some(crate::questions::DECLINE.to_owned()));
                        }
                    }
                    editor::Action::EndOfInput => {
                        cancel_running(shell);
                        break 'keys;
                    }
                    editor::Action::Submit { line, attachments } => {
                        if let Some(tx) = take(answers) {
                            screen.print(&format!("> {}", sanitize_line(&line)));
                            let _ = tx.send(Some(line));
                            continue;
                        }
                        lock(&shell.files).take();
                        *lock(&shell.suggest.anchor) = None;
                        screen.print(&format!("{PROMPT}{}", sanitize_line(&line)));
                        if let Some(path) = history_path {
                            save_history(path, &screen.history());
                        }
                        let command = commands::parse(&line);
                        if !attachments.is_empty() {
                            let text = if line.trim_start().starts_with('/') {
                                shell.drop_reads(&attachments);
                                "a command takes no attachments: they go with a line that is \
                                 not a command (/help)"
                                    .to_owned()
                            } else {
                                shell.message_text(&line, &attachments)
                            };
                            screen.print(&text);
                            continue;
                        }
                        if let Some(text) = shell.quick(&command) {
                            if !text.is_empty() {
                                screen.print(&text);
                            }
                            continue;
                        }
                        match command {
                            Command::Quit => {
                                cancel_running(shell);
                                break 'keys;
                            }
                            Command::Prompt(line) => {
                                if lock(&shell.running).is_some() {
                                    screen.print("a call is running; Ctrl-C cancels it");
                                    continue;
                                }
                                let _ = worker.take().map(std::thread::ScopedJoinHandle::join);
                                let cancel = Cancel::new();
                                *lock(&shell.running) = Some(cancel.clone());
                                worker = Some(scope.spawn(move || {
                                    let text = shell.prompt(&line, &cancel);
                                    // Free before the result shows, so a
                                    // command typed on seeing it may run.
                                    lock(&shell.running).take();
                                    shell.out.print(&text);
                                }));
                            }
                            Command::Reconnect(id) => {
                                if lock(&shell.running).is_some() {
                                    screen.print("a call is running; Ctrl-C cancels it");
                                    continue;
                                }
                                // Starting a server takes the host from
                                // the open views' hands.
                                if !lock(&shell.views).is_empty() {
                                    screen.print("a view is open; Ctrl-C closes it first");
                                    continue;
                                }
                                let _ = worker.take().map(std::thread::ScopedJoinHandle::join);
                                screen.print(&shell.reconnect(&id));
                                seen = shell.host().servers();
                                seen_tools = shell.host().current_tools();
                            }
                            Command::Login(id) => {
                                if lock(&shell.running).is_some() {
                                    screen.print("a call is running; Ctrl-C cancels it");
                                    continue;
                                }
                                // Starting a server takes the host from
                                // the open views' hands.
                                if !lock(&shell.views).is_empty() {
                                    screen.print("a view is open; Ctrl-C closes it first");
                                    continue;
                                }
                                let _ = worker.take().map(std::thread::ScopedJoinHandle::join);
                                let cancel = Cancel::new();
                                *lock(&shell.running) = Some(cancel.clone());
                                worker = Some(scope.spawn(move || {
                                    let text = shell.login(&id, &cancel);
                                    lock(&shell.running).take();
                                    shell.out.print(&text);
                                }));
                            }
                            Command::Call {
                                target,
                                arguments,
                                app,
                            } => {
                                if lock(&shell.running).is_some() {
                                    screen.print("a call is running; Ctrl-C cancels it");
                                    continue;
                                }
                                let _ = worker.take().map(std::thread::ScopedJoinHandle::join);
                                let prepared = shell.prepare_call(&target, &arguments);
                                let (server, tool, args) = match prepared {
                                    Ok(prepared) => prepared,
                                    Err(why) => {
                                        screen.print(&why);
                                        continue;
                                    }
                                };
                                let cancel = Cancel::new();
                                *lock(&shell.running) = Some(cancel.clone());
                                worker = Some(scope.spawn(move || {
                                    if !app {
                                        let text = shell.call(&server, &tool, args, &cancel);
                                        lock(&shell.running).take();
                                        shell.out.print(&text);
                                        return;
                                    }
                                    // The view stays open beside the
                                    // prompt, on a thread of its own: the
                                    // call slot is free again, and Ctrl-C
                                    // with no call running closes it.
                                    let (text, view) = shell.open_app(&server, &tool, args, &cancel);
                                    lock(&shell.running).take();
                                    shell.out.print(&text);
                                    let Some(mut view) = view else { return };
                                    let close = Cancel::new();
                                    let label =
                                        format!("{}:{}", sanitize_line(&server), sanitize_line(&tool));
                                    lock(&shell.views).push((label.clone(), close.clone()));
                                    shell.out.print(&format!(
                                        "{label}: the view is open beside the prompt; Ctrl-C (with no call running) closes it"
                                    ));
                                    scope.spawn(move || {
                                        let ended = shell.serve_view(&server, &tool, &mut view, &close);
                                        drop(view);
                                        lock(&shell.views).retain(|(_, c)| !c.same_as(&close));
                                        shell.out.print(&ended);
                                    });
                                }));
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        // Nothing the shell started may keep it waiting: suggestions and
        // reads still running are cancelled (the servers are told).
        shell.suggest.quitting.store(true, Ordering::Relaxed);
        for (_, cancel) in lock(&shell.suggest.flights).values() {
            cancel.cancel();
        }
        for slot in lock(&shell.reads).values() {
            slot.cancel.cancel();
        }
        if let Some(worker) = worker {
            let _ = worker.join();
        }
        // The open views end with the shell (each asked to tear down).
        for (_, close) in lock(&shell.views).iter() {
            close.cancel();
        }
    });
    screen.erase();
    drop(raw);
    if let Some(path) = history_path {
        save_history(path, &screen.history());
    }
    Ok(())
}

/// After a key that changed the line or moved the cursor: the palette for
/// what the cursor is in now (see the module docs), drawn with the key's
/// own redraw.
fn refresh_palette<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shell: &'env Shell<'env>,
    screen: &'env Screen,
) {
    let (line, cursor) = screen.look(|e| (e.line().to_owned(), e.cursor()));
    let catalog = shell.catalog();
    match commands::context(&catalog, &line, cursor) {
        Context::Mention { range, fragment } => {
            *lock(&shell.suggest.anchor) = None;
            let files = shell.workspace_files();
            let rows = commands::mention_candidates(&catalog, &fragment, &files);
            screen.look_mut(|e| e.suggest(&line, cursor, range, rows));
        }
        Context::Argument {
            server,
            prompt,
            argument,
            typed,
            range,
            given,
            single,
        } => {
            let enabled = shell.host().server(&server).is_some_and(
                |view| matches!(&view.status, ServerStatus::Ready(r) if r.capabilities.completions),
            );
            *lock(&shell.suggest.anchor) = Some(Anchor {
                server: server.clone(),
                line: line.clone(),
                cursor,
                range,
                typed: typed.clone(),
                single,
            });
            let query = Query {
                reference: CompletionRef::Prompt { name: prompt },
                argument,
                value: typed.clone(),
                context: given,
            };
            let (shown, request) = {
                let mut brokers = lock(&shell.suggest.brokers);
                let broker = brokers
                    .entry(server.clone())
                    .or_insert_with(|| CompletionBroker::new(enabled, SUGGEST_BUDGET));
                let shown = broker.ask(Instant::now(), query);
                (shown, broker.poll_request())
            };
            let rows = shown
                .map(|values| commands::value_candidates(&values, &typed, single))
                .unwrap_or_default();
            screen.look_mut(|e| e.suggest(&line, cursor, range, rows));
            if let Some((ticket, params)) = request {
                ask_server(scope, shell, screen, server, ticket, params);
            }
        }
        Context::None => {
            *lock(&shell.suggest.anchor) = None;
            screen.look_mut(|e| e.suggest(&line, cursor, (0, 0), Vec::new()));
        }
    }
}

/// Sends `completion/complete` requests for `server` on a thread, one at a
/// time, until the broker has none waiting; each answer that still fits
/// the line is drawn as the palette.
fn ask_server<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shell: &'env Shell<'env>,
    screen: &'env Screen,
    server: String,
    ticket: CompletionTicket,
    params: rho_proto_core::features::completions::CompleteParams,
) {
    let cancel = Cancel::new();
    lock(&shell.suggest.flights).insert(server.clone(), (ticket, cancel.clone()));
    scope.spawn(move || {
        let mut next = Some((ticket, params, cancel));
        while let Some((ticket, params, cancel)) = next.take() {
            if shell.suggest.quitting.load(Ordering::Relaxed) {
                break;
            }
            let result = shell.host().request(
                &server,
                FeatureRequest::Complete(params),
                CallOptions::new().cancel(&cancel),
            );
            let (shown, following) = {
                let mut brokers = lock(&shell.suggest.brokers);
                let Some(broker) = brokers.get_mut(&server) else {
                    break;
                };
                let answer = result.as_ref().map_err(ToString::to_string);
                let shown = broker.handle_answer(Instant::now(), ticket, answer);
                (shown, broker.poll_request())
            };
            {
                let mut flights = lock(&shell.suggest.flights);
                if flights.get(&server).is_some_and(|(t, _)| *t == ticket) {
                    flights.remove(&server);
                }
                if let Some((ticket, params)) = following {
                    let cancel = Cancel::new();
                    flights.insert(server.clone(), (ticket, cancel.clone()));
                    next = Some((ticket, params, cancel));
                }
            }
            let Some(values) = shown else { continue };
            let anchor = lock(&shell.suggest.anchor).clone();
            if let Some(at) = anchor.filter(|a| a.server == server) {
                let rows = commands::value_candidates(&values, &at.typed, at.single);
                screen.update(|e| e.suggest(&at.line, at.cursor, at.range, rows));
            }
        }
    });
}

/// Gives up suggestion requests past their budget: the request is
/// cancelled (the server is told), and the value typed since is asked by
/// the thread that waited.
fn suggestion_timeouts(shell: &Shell<'_>) {
    let now = Instant::now();
    let expired: Vec<(String, CompletionTicket)> = lock(&shell.suggest.brokers)
        .iter_mut()
        .filter_map(|(server, broker)| broker.handle_timeout(now).map(|t| (server.clone(), t)))
        .collect();
    let flights = lock(&shell.suggest.flights);
    for (server, ticket) in expired {
        if let Some((running, cancel)) = flights.get(&server)
            && *running == ticket
        {
            cancel.cancel();
        }
    }
}

/// Starts reading a picked resource for attachment `chip`.
fn attach<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shell: &'env Shell<'env>,
    screen: &'env Screen,
    chip: u64,
    server: String,
    uri: String,
) {
    let cancel = Cancel::new();
    lock(&shell.reads).insert(
        chip,
        ReadSlot {
            server: server.clone(),
            read: ResourceRead::new(uri.clone(), shell.host().max_output_bytes(&server)),
            cancel: cancel.clone(),
            watched: false,
        },
    );
    scope.spawn(move || {
        // Subscribed before the read, so a change between the two is not
        // missed.
        let watched = shell.watch(&server, &uri, &cancel);
        if watched {
            match lock(&shell.reads).get_mut(&chip) {
                Some(slot) => slot.watched = true,
                // Taken off the line meanwhile.
                None => shell.unwatch(&server, &uri),
            }
        }
        attached::read(shell, screen, chip, &server, &uri, &cancel);
    });
}

/// Attachment `chip` left the line: a read still running is cancelled.
/// That is said when the read's request ends ([`cancelled`]), once the
/// session has told the server, not before: a command typed next must
/// not reach the server ahead of the cancellation it was promised.
fn detach(shell: &Shell<'_>, chip: u64) {
    // The read's thread looks for it in `cancelling` under this lock, so
    // it is never in neither place.
    let mut reads = lock(&shell.reads);
    let Some(mut slot) = reads.remove(&chip) else {
        return;
    };
    if slot.watched {
        shell.unwatch(&slot.server, slot.read.uri());
    }
    if slot.read.cancel() {
        slot.cancel.cancel();
        lock(&shell.cancelling).insert(chip, slot);
    }
}

/// The request of a read whose attachment was taken off the line
/// (`slot`, when it was still running then) ended with `result`:
/// cancelled by the session (which told the server), or answered before
/// the cancellation took effect.
fn cancelled(
    shell: &Shell<'_>,
    slot: Option<ReadSlot>,
    result: &Result<serde_json::Value, ToolCallError>,
) {
    let Some(slot) = slot else {
        return;
    };
    let (uri, server) = (sanitize_line(slot.read.uri()), sanitize_line(&slot.server));
    shell.out.print(&match result {
        Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) => {
            format!("the read of `{uri}` from server `{server}` was cancelled; {notice}")
        }
        _ => format!("the read of `{uri}` was cancelled; it had ended already"),
    });
}

/// The files under `root` for the `@` palette, as paths relative to it,
/// shallow ones first: at most [`FILE_DEPTH`] directories deep, hidden
/// entries and symbolic links skipped, and no more than [`FILE_LIMIT`]
/// directory entries looked at in all.
fn list_files(root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut looked = 0usize;
    let mut dirs = std::collections::VecDeque::from([(root.to_path_buf(), String::new(), 0usize)]);
    while let Some((dir, prefix, depth)) = dirs.pop_front() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<std::fs::DirEntry> = Vec::new();
        for entry in listing.flatten() {
            looked += 1;
            if looked > FILE_LIMIT {
                break;
            }
            entries.push(entry);
        }
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if kind.is_dir() {
                if depth + 1 < FILE_DEPTH {
                    dirs.push_back((entry.path(), path, depth + 1));
                }
            } else if kind.is_file() {
                out.push(path);
            }
        }
        if looked > FILE_LIMIT {
            break;
        }
    }
    out
}

/// Sets the running call's cancel flag; whether a call was running.
fn cancel_running(shell: &Shell<'_>) -> bool {
    match lock(&shell.running).as_ref() {
        Some(cancel) => {
            cancel.cancel();
            if !shell.logging_in.load(Ordering::Relaxed) {
                shell.out.print("cancelling the call…");
            }
            true
        }
        None => false,
    }
}

/// Closes the newest open view (Ctrl-C with no call running); whether
/// there was one.
fn close_newest_view(shell: &Shell<'_>) -> bool {
    match lock(&shell.views).last() {
        Some((label, close)) => {
            close.cancel();
            shell.out.print(&format!("{label}: closing the view…"));
            true
        }
        None => false,
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    lock(slot).take()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How many bytes one read of the terminal asks for.
const READ_SIZE: usize = 1024;

/// The next bytes from the terminal, waiting at most a tenth of a second
/// (an empty read then, so the loop sees stop signals and finished calls);
/// `None` at end of input or on an error.
#[cfg(unix)]
fn read_keys() -> Option<Vec<u8>> {
    use std::os::fd::AsFd as _;

    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    const SLICE: Timespec = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    match poll(&mut fds, Some(&SLICE)) {
        Ok(0) | Err(rustix::io::Errno::INTR) => return Some(Vec::new()),
        Ok(_) => {}
        Err(_) => return None,
    }
    let mut buf = [0u8; READ_SIZE];
    match rustix::io::read(fd, &mut buf) {
        Ok(0) => None,
        Ok(n) => Some(buf[..n].to_vec()),
        Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => Some(Vec::new()),
        Err(_) => None,
    }
}

/// On Windows a console handle cannot be polled for bytes (it signals for
/// focus and mouse events too): one thread reads stdin, blocking, and
/// hands its bytes over; this waits for them a tenth of a second.
#[cfg(windows)]
fn read_keys() -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::sync::OnceLock;
    use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
    static KEYS: OnceLock<Mutex<Receiver<Vec<u8>>>> = OnceLock::new();
    let keys = KEYS.get_or_init(|| {
        let (send, receive) = sync_channel(16);
        let _ = std::thread::Builder::new()
            .name("rho-keys".into())
            .spawn(move || {
                let mut buf = [0u8; READ_SIZE];
                loop {
                    match std::io::stdin().read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if send.send(buf[..n].to_vec()).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        Mutex::new(receive)
    });
    let keys = keys
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match keys.recv_timeout(Duration::from_millis(100)) {
        Ok(bytes) => Some(bytes),
        Err(RecvTimeoutError::Timeout) => Some(Vec::new()),
        Err(RecvTimeoutError::Disconnected) => None,
    }
}

#[cfg(not(any(unix, windows)))]
fn read_keys() -> Option<Vec<u8>> {
    None
}

/// The loop without a terminal: one command per line, run in turn.
fn plain_loop(shell: &Shell<'_>, stop: &Cancel) {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        if stop.is_cancelled() || crate::signals::stopped() {
            break;
        }
        let Ok(line) = line else { break };
        let command = commands::parse(&line);
        if let Some(text) = shell.quick(&command) {
            if !text.is_empty() {
                shell.out.print(&text);
            }
            continue;
        }
        match command {
            Command::Quit => break,
            Command::Prompt(line) => shell.out.print(&shell.prompt(&line, stop)),
            Command::Reconnect(id) => shell.out.print(&shell.reconnect(&id)),
            Command::Login(id) => {
                let cancel = Cancel::new();
                shell.out.print(&shell.login(&id, &cancel));
                if let Some(text) = shell.start_after_login() {
                    shell.out.print(&text);
                }
            }
            Command::Call {
                target,
                arguments,
                app,
            } => {
                let prepared = shell.prepare_call(&target, &arguments);
                match prepared {
                    Ok((server, tool, args)) if app => {
                        shell.out.print(&shell.app(&server, &tool, args, stop));
                    }
                    Ok((server, tool, args)) => {
                        shell.out.print(&shell.call(&server, &tool, args, stop));
                    }
                    Err(why) => shell.out.print(&why),
                }
            }
            _ => {}
        }
    }
}

/// Asks a server's questions through the shell's line editor.
struct ShellResponder {
    screen: Arc<Screen>,
    answers: Arc<Mutex<Option<mpsc::Sender<Option<String>>>>>,
    /// One form at a time, even when two servers ask at once.
    one: Mutex<()>,
    /// The call to cancel once the answer is shown (Ctrl-C on a form).
    cancel_after_answer: Arc<Mutex<Option<Cancel>>>,
}

impl ShellResponder {
    /// Shows what `text` holds so far above the line, with its unfinished
    /// last line as the prompt, and waits for the person's answer.
    fn read(&self, text: &RefCell<Vec<u8>>) -> Option<String> {
        let shown = String::from_utf8_lossy(&text.take()).into_owned();
        let (lines, prompt) = match shown.rfind('\n') {
            Some(end) => (&shown[..end], &shown[end + 1..]),
            None => ("", shown.as_str()),
        };
        if !lines.trim().is_empty() {
            self.screen.print(lines.trim_start_matches('\n'));
        }
        let (above, prompt) = answer_prompt(prompt, screen::width());
        if let Some(above) = above {
            self.screen.print(above);
        }
        let (tx, rx) = mpsc::channel();
        *lock(&self.answers) = Some(tx);
        self.screen.edit(|editor| editor.set_prompt(prompt));
        let answer = rx.recv().ok().flatten();
        self.screen.edit(|editor| editor.set_prompt(PROMPT));
        answer
    }
}

/// The prompt an answer is typed after, for a terminal `width` columns
/// wide: the question's unfinished last line (`> [default] `), or `> `.
/// One wider than half the terminal (a long default) would leave the
/// answer no room on the line: it is printed above (first in the pair)
/// and the prompt is `> `.
fn answer_prompt(prompt: &str, width: usize) -> (Option<&str>, &str) {
    if prompt.trim().is_empty() {
        (None, "> ")
    } else if editor::text_width(prompt) > width / 2 {
        (Some(prompt.trim_end()), "> ")
    } else {
        (None, prompt)
    }
}

/// The words of a question, gathered until the person is asked.
struct Gathered<'a>(&'a RefCell<Vec<u8>>);

impl std::io::Write for Gathered<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Responder for ShellResponder {
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer {
        self.ask(|err, read| {
            crate::questions::ask_form_with_keys(
                err,
                read,
                asked,
                form,
                "; keys: Ctrl-D declines, Ctrl-C cancels the form and the call",
            )
        })
    }

    /// The shell runs only where a person is (see where it is built).
    fn can_open_urls(&self) -> bool {
        true
    }

    fn open_url(&self, asked: &Asked, request: &UrlRequest) -> UrlAnswer {
        self.ask(|err, read| {
            crate::questions::ask_url(
                err,
                read,
                asked,
                request,
                &mut crate::questions::open_in_browser,
            )
        })
    }

    fn confirm_sampling(&self, asked: &Asked, question: &str) -> bool {
        self.ask(|err, read| crate::questions::ask_sampling(err, read, &asked.server, question))
    }
}

impl ShellResponder {
    /// Puts one question to the person through the line editor, one at a
    /// time even when two servers ask at once: `ask` writes the question
    /// and reads each answer; what it writes after the last answer is
    /// printed; a Ctrl-C answer then cancels the call.
    fn ask<T>(
        &self,
        ask: impl FnOnce(&mut Gathered<'_>, &mut dyn FnMut() -> Option<String>) -> T,
    ) -> T {
        let _one = lock(&self.one);
        let text = RefCell::new(Vec::new());
        let answer = ask(&mut Gathered(&text), &mut || self.read(&text));
        let rest = text.take();
        if !rest.is_empty() {
            self.screen.print(&String::from_utf8_lossy(&rest));
        }
        self.cancel_the_call_if_asked();
        answer
    }
}

impl ShellResponder {
    /// Ctrl-C answered the question: now that the answer is shown, the
    /// call it came during is cancelled.
    fn cancel_the_call_if_asked(&self) {
        if let Some(cancel) = lock(&self.cancel_after_answer).take() {
            self.screen.print("cancelling the call…");
            cancel.cancel();
        }
    }
}

/// `~/.rho/shell_history`, when there is a home directory.
fn history_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(".rho").join("shell_history"))
}

/// The most of a history file the shell reads: its lines are kept to
/// [`editor::HISTORY_LINES`], so a larger file is not one it wrote.
const MAX_HISTORY_FILE: u64 = 1024 * 1024;

/// The saved history, last [`editor::HISTORY_LINES`] lines. Only a regular
/// file of at most [`MAX_HISTORY_FILE`] bytes is read (never a FIFO, which
/// would hang the shell's start, nor `/dev/zero`); anything else starts
/// the shell with no history.
fn load_history(path: &std::path::Path) -> Vec<String> {
    let Ok(bytes) = rho_os::fs::read_regular(path, MAX_HISTORY_FILE) else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    if lines.len() > editor::HISTORY_LINES {
        lines.drain(..lines.len() - editor::HISTORY_LINES);
    }
    lines
}

/// Writes the history whole (owner-only), through a temporary file so a
/// crash never leaves half of it.
fn save_history(path: &std::path::Path, lines: &[String]) {
    let Some(dir) = path.parent() else { return };
    if rho_host::ensure_private_dir(dir).is_err() {
        return;
    }
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let Ok(mut file) = options.open(&tmp) else {
        return;
    };
    let mut text = lines.join("\n");
    text.push('\n');
    if file.write_all(text.as_bytes()).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_too_wide_for_the_answer_is_printed_above_it() {
        assert_eq!(answer_prompt("> [Ada] ", 80), (None, "> [Ada] "));
        assert_eq!(answer_prompt("", 80), (None, "> "));
        let long = format!("> [{}] ", "a default ".repeat(6).trim_end());
        assert_eq!(answer_prompt(&long, 200), (None, long.as_str()));
        assert_eq!(answer_prompt(&long, 80), (Some(long.trim_end()), "> "));
        // Wide characters count two columns.
        let wide = format!("> [{}] ", "漢".repeat(20));
        assert_eq!(answer_prompt(&wide, 80), (Some(wide.trim_end()), "> "));
    }

    #[test]
    fn workspace_files_are_listed_shallow_first_bounded_and_without_hidden_ones() {
        let root = std::env::temp_dir().join(format!("rho-shell-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut deep = root.clone();
        for level in 0..FILE_DEPTH + 2 {
            deep = deep.join(format!("d{level}"));
        }
        std::fs::create_dir_all(&deep).expect("make the tree");
        std::fs::create_dir_all(root.join(".git")).expect("hidden dir");
        for (path, text) in [
            ("top.txt", "t"),
            (".secret", "s"),
            (".git/config", "c"),
            ("d0/inner.rs", "i"),
        ] {
            std::fs::write(root.join(path), text).expect("write");
        }
        std::fs::write(deep.join("too-deep.txt"), "x").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("top.txt"), root.join("link.txt")).expect("symlink");
        let files = list_files(&root);
        assert_eq!(files, ["top.txt", "d0/inner.rs"]);
        let _ = std::fs::remove_dir_all(&root);
    }
}
