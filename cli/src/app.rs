//! `--app`: a tool's MCP App view opened in the person's browser, served
//! by rho (`rho_host::apps`) while the command runs, and what the view
//! does told on stderr. Every word the view or its server sends is
//! sanitized before the terminal.
//!
//! Where no browser can open (`CI`, no display, `--json`), the view is not
//! served: the command prints its text result as without `--app`, and a
//! line saying so and how to open the view, and exits as the result says.

use std::io::{IsTerminal, Write};

use rho_host::apps::{AppEvent, AppOptions, AppView, Reply, browser_available, open_in_browser};
use rho_host::{Cancel, Host};
use rho_proto_core::text::terminal::sanitize_line;
use serde_json::Value;

/// What `--app` does for one call.
pub(crate) enum Plan {
    /// No view (not asked, or none to open).
    None,
    /// A view, open in the browser.
    Serve(Box<AppView>),
    /// No view served; this line says why and how to open it.
    Explain(String),
}

/// Opens the view of `tool` when it has one and a browser can show it
/// (the caller says where: [`opening`]); else says why not. Never fails the call: a view that cannot be opened
/// leaves the text result.
pub(crate) fn plan(runtime: &Host, id: &str, tool: &str, arguments: &Value, json: bool) -> Plan {
    let Some(uri) = runtime.app_view_of(id, tool) else {
        return Plan::Explain(format!(
            "rho: tool `{}` of server `{id}` has no MCP App view (no `_meta.ui.resourceUri`); its text result is all there is",
            sanitize_line(tool)
        ));
    };
    let uri = sanitize_line(&uri);
    if json || !browser_available() {
        let why = if json {
            "--json prints the result only"
        } else if std::env::var_os("CI").is_some() {
            "CI has no browser"
        } else {
            "no display to open a browser on"
        };
        return Plan::Explain(format!(
            "rho: tool `{}` has an MCP App view ({uri}), not opened: {why}. To open it, run this where a browser can open (or with BROWSER naming one): rho mcp call --app {id} {} ...",
            sanitize_line(tool),
            sanitize_line(tool),
        ));
    }
    let options = AppOptions {
        locale: locale(),
        time_zone: std::env::var("TZ").ok().filter(|z| !z.is_empty()),
    };
    match runtime.open_app(id, tool, arguments, &options) {
        Ok(view) => {
            open_in_browser(view.url());
            Plan::Serve(Box::new(view))
        }
        Err(error) => Plan::Explain(format!(
            "rho: the view of `{}` was not opened: {}",
            sanitize_line(tool),
            sanitize_line(&error.to_string())
        )),
    }
}

/// The line that says a view is opening, and where.
pub(crate) fn opening(view: &AppView, tool: &str) -> String {
    format!(
        "opening the view of `{}` in your browser: {}",
        sanitize_line(tool),
        view.url()
    )
}

/// The person's locale from the environment (`LC_ALL`, `LANG`), as
/// BCP 47 (`en_GB.UTF-8` → `en-GB`).
fn locale() -> Option<String> {
    ["LC_ALL", "LC_MESSAGES", "LANG"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.is_empty() && v != "C" && v != "POSIX")
        .map(|v| v.split(['.', '@']).next().unwrap_or("").replace('_', "-"))
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 35
                && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Serves the view until it ends, telling stderr what it does. A link the
/// view asks to open is opened only when the person at the terminal says
/// yes; with no terminal it is refused.
pub(crate) fn serve(runtime: &Host, view: &mut AppView, cancel: &Cancel) {
    let print = |line: &str| {
        let _ = writeln!(std::io::stderr(), "rho: {line}");
    };
    print("serving the view until its page is closed or Ctrl-C");
    let ask = |lines: &str| {
        let mut err = std::io::stderr();
        std::io::stdin().is_terminal() && {
            let _ = write!(
                err,
                "rho: the view asks to open a link:\n{lines}open it? [y/N] "
            );
            let _ = err.flush();
            crate::questions::read_answer().is_some_and(|a| matches!(a.trim(), "y" | "Y" | "yes"))
        }
    };
    let reason = serve_with(runtime, view, cancel, print, ask);
    print(&format!("the view ended: {}", sanitize_line(&reason)));
}

/// Serves the view until it ends, printing one line per thing it does
/// (every word of the view's sanitized), and asking `ask` (with the lines
/// that show the link: its host apart, its warnings) before a link it
/// asks for is opened. Returns why it ended.
pub(crate) fn serve_with(
    runtime: &Host,
    view: &mut AppView,
    cancel: &Cancel,
    print: impl Fn(&str),
    ask: impl Fn(&str) -> bool,
) -> String {
    view.serve(runtime, cancel, |event| {
        match event {
            AppEvent::Opened => print("the view's page connected"),
            AppEvent::ToolCalled { tool, outcome } => {
                let how = match outcome {
                    Ok(false) => "answered".to_owned(),
                    Ok(true) => "answered with an error".to_owned(),
                    Err(why) => format!("refused: {}", shortened(&why)),
                };
                print(&format!(
                    "the view called `{}`: {how}",
                    sanitize_line(&tool)
                ));
            }
            AppEvent::Message { text } => {
                print(&format!(
                    "the view says (a user turn): {}",
                    sanitize_line(&text)
                ));
            }
            AppEvent::ModelContext { text, .. } => {
                print(&format!(
                    "the view's context for the model: {}",
                    shortened(&text)
                ));
            }
            AppEvent::Log { level, text } => print(&format!(
                "view log [{}]: {}",
                sanitize_line(&level),
                shortened(&text)
            )),
            AppEvent::OpenLink { shown, .. } => {
                let lines = crate::questions::url_lines(&shown);
                if ask(&lines) {
                    return Reply::Open;
                }
                print(&format!(
                    "the view asked to open {}; not opened",
                    sanitize_line(&shown.url)
                ));
            }
        }
        Reply::Continue
    })
}

/// Server text for one line of the terminal, at most 200 characters.
fn shortened(text: &str) -> String {
    let line = sanitize_line(text);
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.into_owned(),
    }
}
