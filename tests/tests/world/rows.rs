//! The rows: each server as published, how it is started, the config rho
//! gets for it, and its one harmless call.

use std::path::{Path, PathBuf};
use std::process::Command;

use rho_tests::{tests_dir, toml_str};
use serde_json::{Value, json};

/// Each server's startup budget (`startup_timeout_secs`): a bound, not a
/// wait; rows are ready in seconds.
const STARTUP_SECS: u64 = 60;
/// rho's call budget (`tool_timeout_secs`).
const TOOL_SECS: u64 = 30;
/// The slow row's start delay: longer than rho's wait for an answer to
/// its `server/discover` probe (3 s on stdio).
const START_DELAY_SECS: u64 = 5;
/// The dummy token the Notion server is given; the stub echoes it back.
const NOTION_TOKEN: &str = "ntn_world_dummy";

/// `tests/world/`.
pub(crate) fn world_dir() -> PathBuf {
    tests_dir().join("world")
}

/// A file of an npm server under `tests/world/node_modules`.
pub(crate) fn npm(path: &str) -> String {
    let dir = world_dir().join("node_modules");
    assert!(
        dir.join("@modelcontextprotocol/server-memory").is_dir(),
        "the world servers are not installed: run `tests/world/install` (scripts/test does it)"
    );
    dir.join(path).display().to_string()
}

/// An executable of `tests/world/python/.venv` (the PyPI servers, and the
/// Python the official client runs on).
pub(crate) fn pypi(name: &str) -> String {
    let bin = world_dir().join("python/.venv/bin");
    assert!(
        bin.join("python").exists(),
        "the world servers are not installed: run `tests/world/install` (scripts/test does it)"
    );
    bin.join(name).display().to_string()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Registry {
    Npm,
    PyPi,
}

impl Registry {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Registry::Npm => "npm",
            Registry::PyPi => "PyPI",
        }
    }
}

/// How rho reaches a row's server.
pub(crate) enum Launch {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(&'static str, String)>,
    },
    Http {
        url: String,
    },
}

impl Launch {
    /// The `[mcp.servers.<id>]` table rho starts it from.
    pub(crate) fn config(&self, id: &str) -> String {
        let budgets =
            format!("startup_timeout_secs = {STARTUP_SECS}\ntool_timeout_secs = {TOOL_SECS}\n");
        match self {
            Launch::Stdio { command, args, env } => format!(
                "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}]\nenv = {{ {} }}\n{budgets}",
                toml_str(command),
                args.iter()
                    .map(|a| toml_str(a))
                    .collect::<Vec<_>>()
                    .join(", "),
                env.iter()
                    .map(|(k, v)| format!("{k} = {}", toml_str(v)))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            Launch::Http { url } => format!(
                "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = {}\n{budgets}",
                toml_str(url)
            ),
        }
    }
}

/// What the one call must give: an answer, or the tool's own refusal
/// (`isError`), its text containing the needle.
pub(crate) enum Expect {
    Answer(&'static str),
    ToolError(&'static str),
}

impl Expect {
    /// Whether a result (its `isError` and the text shown for it) is the
    /// one expected.
    pub(crate) fn check(&self, is_error: bool, text: &str) -> Result<(), String> {
        let (want_error, needle) = match self {
            Expect::Answer(needle) => (false, needle),
            Expect::ToolError(needle) => (true, needle),
        };
        if is_error == want_error && text.contains(needle) {
            return Ok(());
        }
        Err(format!(
            "wanted {} containing {needle:?}, got isError {is_error}: {text:?}",
            if want_error {
                "a tool error"
            } else {
                "an answer"
            }
        ))
    }
}

/// A row's one harmless call.
pub(crate) struct Call {
    pub(crate) tool: &'static str,
    pub(crate) arguments: Value,
    pub(crate) expect: Expect,
}

/// Where a row's files go (a scratch directory of one run) and the
/// loopback fixtures it may use.
pub(crate) struct Ctx<'a> {
    pub(crate) dir: &'a Path,
    /// The stub's base URL (`crate::fixtures::start_stub`).
    pub(crate) stub: &'a str,
    /// Context7's endpoint over HTTP.
    pub(crate) context7_http: &'a str,
}

/// One world row.
pub(crate) struct Row {
    /// Its server id in rho's config (and the table).
    pub(crate) id: &'static str,
    pub(crate) package: &'static str,
    pub(crate) version: &'static str,
    pub(crate) registry: Registry,
    pub(crate) transport: &'static str,
    /// The server starts late on purpose: its runs mostly wait.
    pub(crate) late: bool,
    /// Its launch and call for one run (files in `ctx.dir`).
    pub(crate) setup: fn(&Ctx) -> (Launch, Call),
}

fn node(script: &str, args: &[&str], env: Vec<(&'static str, String)>) -> Launch {
    let mut all = vec![npm(script)];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    Launch::Stdio {
        command: "node".into(),
        args: all,
        env,
    }
}

fn python(name: &str, args: &[&str], env: Vec<(&'static str, String)>) -> Launch {
    Launch::Stdio {
        command: pypi(name),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env,
    }
}

pub(crate) const CONTEXT7: &str = "@upstash/context7-mcp/dist/index.js";

/// Context7's telemetry (a Prometheus listener, OTLP export) stays off.
pub(crate) fn context7_env() -> Vec<(&'static str, String)> {
    vec![("OTEL_SDK_DISABLED", "true".into())]
}

/// Context7's offline call: its argument check answers before any
/// request would leave.
fn context7_call() -> Call {
    Call {
        tool: "resolve-library-id",
        arguments: json!({}),
        expect: Expect::ToolError("Input validation error"),
    }
}

fn memory(ctx: &Ctx) -> (Launch, Call) {
    let file = ctx.dir.join("memory.jsonl").display().to_string();
    let script = "@modelcontextprotocol/server-memory/dist/index.js";
    let call = Call {
        tool: "read_graph",
        arguments: json!({}),
        expect: Expect::Answer("\"relations\":[]"),
    };
    (node(script, &[], vec![("MEMORY_FILE_PATH", file)]), call)
}

fn thinking(_: &Ctx) -> (Launch, Call) {
    let script = "@modelcontextprotocol/server-sequential-thinking/dist/index.js";
    let call = Call {
        tool: "sequentialthinking",
        arguments: json!({"thought": "one step", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}),
        expect: Expect::Answer("thoughtHistoryLength"),
    };
    (node(script, &[], Vec::new()), call)
}

fn context7(_: &Ctx) -> (Launch, Call) {
    (node(CONTEXT7, &[], context7_env()), context7_call())
}

fn context7_http(ctx: &Ctx) -> (Launch, Call) {
    let url = ctx.context7_http.to_owned();
    (Launch::Http { url }, context7_call())
}

/// Context7 behind `sleep`, as a cold `npx` starts it.
fn context7_late(_: &Ctx) -> (Launch, Call) {
    let launch = Launch::Stdio {
        command: "sh".into(),
        args: vec![
            "-c".into(),
            format!("sleep {START_DELAY_SECS}; exec \"$@\""),
            "sh".into(),
            "node".into(),
            npm(CONTEXT7),
        ],
        env: context7_env(),
    };
    (launch, context7_call())
}

fn pdf(_: &Ctx) -> (Launch, Call) {
    let script = "@modelcontextprotocol/server-pdf/dist/index.js";
    let call = Call {
        tool: "list_pdfs",
        arguments: json!({}),
        expect: Expect::Answer("allowedDirectories"),
    };
    (node(script, &["--stdio"], Vec::new()), call)
}

/// No browser is installed (none can be downloaded here): every tool
/// answers that it found none.
fn playwright(_: &Ctx) -> (Launch, Call) {
    let call = Call {
        tool: "browser_close",
        arguments: json!({}),
        expect: Expect::ToolError("is not found"),
    };
    (
        node("@playwright/mcp/cli.js", &["--headless"], Vec::new()),
        call,
    )
}

/// Its API is the loopback stub, which echoes the token it got.
fn notion(ctx: &Ctx) -> (Launch, Call) {
    let env = vec![
        ("NOTION_TOKEN", NOTION_TOKEN.to_owned()),
        ("BASE_URL", ctx.stub.to_owned()),
    ];
    let call = Call {
        tool: "API-get-self",
        arguments: json!({}),
        expect: Expect::Answer("Bearer ntn_world_dummy"),
    };
    (
        node("@notionhq/notion-mcp-server/bin/cli.mjs", &[], env),
        call,
    )
}

fn time(_: &Ctx) -> (Launch, Call) {
    let call = Call {
        tool: "get_current_time",
        arguments: json!({"timezone": "UTC"}),
        expect: Expect::Answer("day_of_week"),
    };
    let args = ["--local-timezone", "UTC"];
    (python("mcp-server-time", &args, Vec::new()), call)
}

fn git(ctx: &Ctx) -> (Launch, Call) {
    let repo = ctx.dir.join("repo");
    let status = Command::new("git")
        .args(["init", "-q"])
        .arg(&repo)
        .status()
        .expect("git runs (the git server's row needs a repository)");
    assert!(status.success(), "git init {}", repo.display());
    let repo = repo.display().to_string();
    let call = Call {
        tool: "git_status",
        arguments: json!({ "repo_path": repo }),
        expect: Expect::Answer("nothing to commit"),
    };
    // git's own words, whatever the machine's locale.
    let env = vec![("LC_ALL", "C".to_owned())];
    (
        python("mcp-server-git", &["--repository", &repo], env),
        call,
    )
}

/// A page on the loopback stub, which it fetches only when told that
/// private addresses are allowed.
fn fetch(ctx: &Ctx) -> (Launch, Call) {
    let call = Call {
        tool: "fetch",
        arguments: json!({ "url": format!("{}/world.txt", ctx.stub) }),
        expect: Expect::Answer("rho world page"),
    };
    let args = ["--ignore-robots-txt", "--allow-private-ips"];
    (python("mcp-server-fetch", &args, Vec::new()), call)
}

fn excel(ctx: &Ctx) -> (Launch, Call) {
    let dir = ctx.dir.display().to_string();
    let call = Call {
        tool: "create_workbook",
        arguments: json!({ "path": ctx.dir.join("world.xlsx").display().to_string() }),
        expect: Expect::Answer("world.xlsx"),
    };
    let args = ["stdio", "--allow-dir", &dir];
    (python("excel-mcp-server", &args, Vec::new()), call)
}

/// Every row, in the table's order.
pub(crate) const ROWS: &[Row] = &[
    Row {
        id: "memory",
        package: "@modelcontextprotocol/server-memory",
        version: "2026.8.31",
        registry: Registry::Npm,
        transport: "stdio",
        late: false,
        setup: memory,
    },
    Row {
        id: "thinking",
        package: "@modelcontextprotocol/server-sequential-thinking",
        version: "2026.8.31",
        registry: Registry::Npm,
        transport: "stdio",
        late: false,
        setup: thinking,
    },
    Row {
        id: "context7",
        package: "@upstash/context7-mcp",
        version: "4.1.1",
        registry: Registry::Npm,
        transport: "stdio",
        late: false,
        setup: context7,
    },
    Row {
        id: "context7_http",
        package: "@upstash/context7-mcp",
        version: "4.1.1",
        registry: Registry::Npm,
        transport: "Streamable HTTP",
        late: false,
        setup: context7_http,
    },
    Row {
        id: "context7_late",
        package: "@upstash/context7-mcp",
        version: "4.1.1",
        registry: Registry::Npm,
        transport: "stdio, starts 5 s late",
        late: true,
        setup: context7_late,
    },
    Row {
        id: "pdf",
        package: "@modelcontextprotocol/server-pdf",
        version: "2.0.4",
        registry: Registry::Npm,
        transport: "stdio",
        late: false,
        setup: pdf,
    },
    Row {
        id: "playwright",
        package: "@playwright/mcp",
        version: "0.0.86",
        registry: Registry::Npm,
        transport: "stdio",
        late: false,
        setup: playwright,
    },
    Row {
        id: "notion",
        package: "@notionhq/notion-mcp-server",
        version: "2.5.2",
        registry: Registry::Npm,
        transport: "stdio",
        late: false,
        setup: notion,
    },
    Row {
        id: "time",
        package: "mcp-server-time",
        version: "2026.10.19",
        registry: Registry::PyPi,
        transport: "stdio",
        late: false,
        setup: time,
    },
    Row {
        id: "git",
        package: "mcp-server-git",
        version: "2026.10.19",
        registry: Registry::PyPi,
        transport: "stdio",
        late: false,
        setup: git,
    },
    Row {
        id: "fetch",
        package: "mcp-server-fetch",
        version: "2026.10.24",
        registry: Registry::PyPi,
        transport: "stdio",
        late: false,
        setup: fetch,
    },
    Row {
        id: "excel",
        package: "excel-mcp-server",
        version: "2.2.2",
        registry: Registry::PyPi,
        transport: "stdio",
        late: false,
        setup: excel,
    },
];
