//! MCP Apps from a terminal: a tool's interactive view, served to the
//! person's browser on loopback and bridged to the live session.
//!
//! [`Host::open_app`] reads the view a tool names (`_meta.ui.resourceUri`,
//! a `ui://` resource), and serves it the way the specification asks of a
//! web host: a host page on one loopback port frames a sandbox proxy on
//! another (so another origin), which frames the view, served from the
//! sandbox's origin under the Content-Security-Policy built from the
//! domains it declared (the restrictive default when it declares none;
//! `frame-ancestors` naming only rho's two origins, so no other page can
//! frame it). Each origin has its
//! own secret token in its paths; every request must name the origin's
//! own `Host` (no DNS rebinding) and every post the host page's own
//! `Origin`.
//!
//! The dialogue itself is rho's, in Rust: the pages only carry messages
//! (postMessage in the browser, Server-Sent Events and `POST` to rho). The
//! core's [`ViewBridge`] answers `ui/initialize`, holds the tool's input
//! and result until the view is ready, and turns the view's requests into
//! asks, which [`AppView::serve`] carries out (each call on a scoped
//! thread of its own) through the one door every call takes: a view's
//! `tools/call` goes to its own server only, for a tool whose visibility includes `"app"`,
//! under the server's allow/deny filter, with the host's questions
//! (elicitation) as any call; `resources/read` likewise. What is for the
//! conversation comes out as an [`AppEvent`]: `ui/message` (the person's
//! next turn), `ui/update-model-context`, a link to open (only on the
//! person's yes: [`Reply::Open`]), the view's log lines. Text
//! that reaches a model is capped at the server's `max_output_bytes`; a
//! result a view asked for goes to the view whole (it is the view's data,
//! never the model's, and `max_message_bytes` already bounds it).
//!
//! A view ends when the page is closed (its event stream gone for
//! [`PAGE_GONE_GRACE`]), when the caller's cancel fires, its
//! [`Reply::Close`], or [`AppView::close`] (the view is asked to tear
//! down, and given [`TEARDOWN_WAIT`] to answer), or when it is dropped. The
//! page then says the view has ended and removes it.

mod serve;

use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::apps::{ToolUi, ViewAsk, ViewBridge, ViewSetup};
use rho_proto_core::features::elicitation::{UrlRequest, url_request_from_params};
use rho_proto_core::features::limit::cap_output;
use rho_proto_core::features::resources::ReadResourceParams;
use rho_proto_core::runtime::{CallOptions, CallTarget, Cancel, ToolCallError};
use serde_json::{Value, json};
use url::Url;

use crate::Host;
use serve::{Bound, Inbound, Origins, Pages};

pub use rho_proto_core::features::apps::{ViewError, ViewResource};

/// How long a page may be gone (closed, or reloading) before its view
/// ends.
pub const PAGE_GONE_GRACE: Duration = Duration::from_secs(5);

/// How long a view is given to answer `ui/resource-teardown`.
pub const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

/// The most tool calls and reads one view may have in flight; more are
/// refused until one ends.
pub const MAX_IN_FLIGHT: usize = 16;

/// The sandbox attribute of the view's frame: scripts and forms on its
/// own (sandbox) origin; no popups, no top navigation.
const VIEW_SANDBOX: &str = "allow-scripts allow-same-origin allow-forms";

/// Why a view could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The server has no tool by that name.
    #[error("server `{server}` has no tool `{tool}`")]
    UnknownTool {
        /// The server identity.
        server: String,
        /// The tool named.
        tool: String,
    },
    /// The tool names no view.
    #[error("tool `{tool}` of server `{server}` has no MCP App view (no `_meta.ui.resourceUri`)")]
    NoView {
        /// The server identity.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The view's URI is not a `ui://` resource.
    #[error("tool `{tool}` of server `{server}` names a view that is not a `ui://` resource")]
    NotUi {
        /// The server identity.
        server: String,
        /// The tool.
        tool: String,
    },
    /// Reading the view failed.
    #[error("server `{server}`: reading the view `{uri}` failed: {error}")]
    Read {
        /// The server identity.
        server: String,
        /// The view's URI.
        uri: String,
        /// Why.
        error: Box<ToolCallError>,
    },
    /// The view is no view rho can serve.
    #[error("server `{server}`: {error}")]
    View {
        /// The server identity.
        server: String,
        /// Why.
        error: ViewError,
    },
    /// The loopback origins could not be served.
    #[error("the view cannot be served: {0}")]
    Serve(String),
}

/// What a view did that its host hears of.
#[derive(Debug)]
pub enum AppEvent {
    /// The page connected for the first time.
    Opened,
    /// `ui/message`: the view's words as the person's next turn (capped at
    /// the server's `max_output_bytes`; server text: sanitize before a
    /// terminal).
    Message {
        /// The text.
        text: String,
    },
    /// `ui/update-model-context`: what the model should know from now on,
    /// replacing what the view said before (capped).
    ModelContext {
        /// The text of its text content.
        text: String,
        /// The params as sent (`content`, `structuredContent`).
        params: Value,
    },
    /// `ui/open-link`: opened only when the host replies [`Reply::Open`]
    /// (after asking the person); any other reply refuses it.
    OpenLink {
        /// The view's request id.
        #[doc(hidden)]
        id: Value,
        /// The link (`http` or `https`).
        url: Url,
        /// The link as a person should see it before saying yes: its host
        /// apart (the Unicode spelling beside punycode) and what to be
        /// wary of, as for a URL a server asks to open.
        shown: Box<UrlRequest>,
    },
    /// `notifications/message` from the view (server text).
    Log {
        /// Its level.
        level: String,
        /// Its data, as text.
        text: String,
    },
    /// The view called one of its server's tools through rho.
    ToolCalled {
        /// The tool.
        tool: String,
        /// `Ok(is_error)` when the tool answered, else why it was refused
        /// or failed.
        outcome: Result<bool, String>,
    },
}

/// What the host says to an [`AppEvent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Go on (a link asked for is refused).
    Continue,
    /// Open the link the view asked for ([`AppEvent::OpenLink`]): the host
    /// opens it ([`open_in_browser`]); the view is told it was.
    Open,
    /// End the view (it is asked to tear down).
    Close,
}

/// One open view.
pub struct AppView {
    server: String,
    tool: String,
    url: Url,
    csp_header: String,
    dropped_csp: Vec<String>,
    bridge: ViewBridge,
    origins: Origins,
    inbox: Receiver<Inbound>,
    notify: std::sync::mpsc::Sender<Inbound>,
    opened: bool,
    gone_since: Option<Instant>,
    closed: Option<String>,
    max_output_bytes: usize,
}

impl std::fmt::Debug for AppView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppView")
            .field("server", &self.server)
            .field("tool", &self.tool)
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

/// What one view is opened for.
#[derive(Clone, Debug, Default)]
pub struct AppOptions {
    /// The person's locale (BCP 47), when known.
    pub locale: Option<String>,
    /// Their time zone (IANA), when known.
    pub time_zone: Option<String>,
}

impl Host {
    /// The view tool `tool` of `server` names, if any: its `ui://` URI.
    pub fn app_view_of(&self, server: &str, tool: &str) -> Option<String> {
        let view = self.server(server)?;
        let listed = view.tools.iter().find(|t| t.name == tool)?;
        ToolUi::of(listed.meta.as_deref()).view().map(str::to_owned)
    }

    /// Opens the view of `server`'s tool `tool`, called with `arguments`:
    /// reads it and serves it on loopback (see the module docs). Open the
    /// returned view's [`AppView::url`] in a browser, give it the call's
    /// outcome ([`AppView::tool_result`]), and drive it with
    /// [`AppView::serve`].
    pub fn open_app(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
        options: &AppOptions,
    ) -> Result<AppView, AppError> {
        let unknown = || AppError::UnknownTool {
            server: server.to_owned(),
            tool: tool.to_owned(),
        };
        let view = self.server(server).ok_or_else(unknown)?;
        let listed = view
            .tools
            .iter()
            .find(|t| t.name == tool)
            .ok_or_else(unknown)?;
        let uri = ToolUi::of(listed.meta.as_deref())
            .view()
            .map(str::to_owned)
            .ok_or_else(|| AppError::NoView {
                server: server.to_owned(),
                tool: tool.to_owned(),
            })?;
        if !uri.starts_with("ui://") {
            return Err(AppError::NotUi {
                server: server.to_owned(),
                tool: tool.to_owned(),
            });
        }
        let read = self
            .request(
                server,
                FeatureRequest::ReadResource(ReadResourceParams { uri: uri.clone() }),
                CallOptions::new(),
            )
            .map_err(|error| AppError::Read {
                server: server.to_owned(),
                uri: uri.clone(),
                error: Box::new(error),
            })?;
        let resource = ViewResource::from_read(&uri, &read).map_err(|error| AppError::View {
            server: server.to_owned(),
            error,
        })?;
        let tool_value = listed.to_wire();
        let bound = Bound::new().map_err(AppError::Serve)?;
        let nonce = serve_nonce().map_err(AppError::Serve)?;
        let pages = pages(&bound, &nonce, server, tool, &resource);
        let url = Url::parse(&format!("{}/app/{}", bound.host_origin, bound.host_token))
            .map_err(|e| AppError::Serve(e.to_string()))?;
        let csp_header = pages.view_csp.clone();
        let bridge = ViewBridge::new(ViewSetup {
            tool: tool_value,
            arguments: arguments.clone(),
            host_info: json!({"name": "rho", "version": env!("CARGO_PKG_VERSION")}),
            approved_csp: resource.csp.approved(),
            locale: options.locale.clone(),
            time_zone: options.time_zone.clone(),
        });
        for dropped in &resource.csp.dropped {
            tracing::warn!(server, view = %uri, "view CSP entry dropped: {dropped}");
        }
        tracing::info!(server, view = %uri, csp = %csp_header, "serving an MCP App view");
        let (notify, inbox) = channel();
        let origins = Origins::start(bound, pages, notify.clone());
        Ok(AppView {
            server: server.to_owned(),
            tool: tool.to_owned(),
            url,
            csp_header,
            dropped_csp: resource.csp.dropped.clone(),
            bridge,
            origins,
            inbox,
            notify,
            opened: false,
            gone_since: None,
            closed: None,
            max_output_bytes: self.max_output_bytes(server),
        })
    }
}

fn serve_nonce() -> Result<String, String> {
    use base64::Engine as _;
    let bytes = crate::grants::random()?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Escapes text for HTML (element content and quoted attributes).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn pages(bound: &Bound, nonce: &str, server: &str, tool: &str, view: &ViewResource) -> Pages {
    let host_page = include_str!("page.html")
        .replace("{{NONCE}}", nonce)
        .replace("{{TITLE}}", &escape(tool))
        .replace("{{TOOL}}", &escape(tool))
        .replace("{{SERVER}}", &escape(server))
        .replace(
            "{{BORDER}}",
            if view.prefers_border == Some(true) {
                "border"
            } else {
                ""
            },
        )
        .replace(
            "{{SANDBOX_URL}}",
            &format!("{}/sandbox/{}", bound.sandbox_origin, bound.sandbox_token),
        )
        .replace("{{SANDBOX_ORIGIN}}", &bound.sandbox_origin)
        .replace("{{EVENTS}}", &format!("/events/{}", bound.host_token))
        .replace("{{RPC}}", &format!("/rpc/{}", bound.host_token))
        .replace(
            "{{MAX_HEIGHT}}",
            &rho_proto_core::features::apps::bridge::MAX_VIEW_HEIGHT.to_string(),
        );
    let sandbox_page = include_str!("sandbox.html")
        .replace("{{NONCE}}", nonce)
        .replace("{{HOST_ORIGIN}}", &bound.host_origin)
        .replace("{{VIEW_URL}}", &format!("/view/{}", bound.sandbox_token))
        .replace("{{VIEW_SANDBOX}}", VIEW_SANDBOX);
    Pages {
        host_page,
        sandbox_page,
        view_html: view.html.clone(),
        view_csp: view
            .csp
            .header(&format!("{} {}", bound.sandbox_origin, bound.host_origin)),
        page_csp: format!(
            "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
             connect-src 'self'; frame-src {}; img-src 'none'; object-src 'none'; \
             base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            bound.sandbox_origin
        ),
        sandbox_csp: format!(
            "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; \
             frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; \
             frame-ancestors {}",
            bound.host_origin
        ),
    }
}

impl AppView {
    /// The page to open in a browser (it holds the page's secret).
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The Content-Security-Policy the view is served under.
    pub fn csp_header(&self) -> &str {
        &self.csp_header
    }

    /// The declared CSP entries rho dropped, each with why.
    pub fn dropped_csp(&self) -> &[String] {
        &self.dropped_csp
    }

    /// The server whose view this is.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool call's result, as sent: the view gets it once ready.
    pub fn tool_result(&mut self, result: Value) {
        self.bridge.tool_result(result);
        self.flush();
    }

    /// The tool call ended without a result (cancelled or failed).
    pub fn tool_cancelled(&mut self, reason: &str) {
        self.bridge.tool_cancelled(reason);
        self.flush();
    }

    /// Serves the view until it ends, carrying out its tool calls and
    /// reads (through `host`, as the view's server's app, each on a
    /// scoped thread of its own, so a view's long poll holds up nothing
    /// else) and handing `on_event` what its host hears of; its [`Reply`]
    /// may end the view, and answers a link the view asks to open. `cancel`
    /// ends the view too. Returns why the view ended; every call after the
    /// first returns at once.
    pub fn serve(
        &mut self,
        host: &Host,
        cancel: &Cancel,
        mut on_event: impl FnMut(AppEvent) -> Reply,
    ) -> String {
        if let Some(reason) = &self.closed {
            return reason.clone();
        }
        let notify = self.notify.clone();
        let _hook = cancel.on_cancel(move || {
            let _ = notify.send(Inbound::Cancelled);
        });
        let calls = Cancel::new();
        std::thread::scope(|scope| {
            let mut in_flight = 0usize;
            let reason = loop {
                self.flush();
                if self.bridge.is_down() {
                    break "the view closed".to_owned();
                }
                let Some(inbound) = self.next_inbound() else {
                    break "the page was closed".to_owned();
                };
                let event = match inbound {
                    Inbound::FromView(message) => match self.bridge.receive(&message) {
                        None => None,
                        Some(ask @ (ViewAsk::CallTool { .. } | ViewAsk::ReadResource { .. })) => {
                            let id = ask.id().cloned().unwrap_or_default();
                            if self.refuse_if_busy(&id, in_flight) {
                                continue;
                            }
                            in_flight += 1;
                            let (notify, server, calls) =
                                (self.notify.clone(), self.server.clone(), calls.clone());
                            scope.spawn(move || {
                                let _ = notify.send(carry_out(host, &server, ask, &calls));
                            });
                            None
                        }
                        Some(ask) => self.answer_ask(ask),
                    },
                    Inbound::CallDone { id, tool, outcome } => {
                        in_flight -= 1;
                        let outcome = match outcome {
                            Ok((result, is_error)) => {
                                self.bridge.answer(id, Ok(result));
                                Ok(is_error)
                            }
                            Err(why) => {
                                self.bridge.answer(id, Err((-32000, why.clone())));
                                Err(why)
                            }
                        };
                        Some(AppEvent::ToolCalled { tool, outcome })
                    }
                    Inbound::ReadDone { id, outcome } => {
                        in_flight -= 1;
                        self.bridge.answer(id, outcome.map_err(|why| (-32000, why)));
                        None
                    }
                    Inbound::PageConnected => {
                        self.gone_since = None;
                        (!std::mem::replace(&mut self.opened, true)).then_some(AppEvent::Opened)
                    }
                    Inbound::PageGone => {
                        self.gone_since = Some(Instant::now());
                        None
                    }
                    Inbound::Cancelled => break "the person closed it".to_owned(),
                };
                let Some(event) = event else { continue };
                self.flush();
                let link = match &event {
                    AppEvent::OpenLink { id, url, .. } => Some((id.clone(), url.clone())),
                    _ => None,
                };
                match (on_event(event), link) {
                    (Reply::Close, _) => break "the host closed it".to_owned(),
                    (Reply::Open, Some((id, url))) => {
                        open_in_browser(&url);
                        self.bridge.answer(id, Ok(json!({})));
                    }
                    (_, Some((id, _))) => {
                        self.bridge.refuse(id, "Link opening denied by user");
                    }
                    (_, None) => {}
                }
            };
            // The view's calls end with it (the servers are told); the
            // scope waits for them.
            calls.cancel();
            self.close(&reason);
            reason
        })
    }

    /// The next thing the pages or the view's calls sent; `None` once the
    /// page has been gone for [`PAGE_GONE_GRACE`].
    fn next_inbound(&mut self) -> Option<Inbound> {
        match self.gone_since {
            Some(since) => {
                let left = PAGE_GONE_GRACE.saturating_sub(since.elapsed());
                self.inbox.recv_timeout(left).ok()
            }
            None => self.inbox.recv().ok(),
        }
    }

    /// Refuses request `id` when [`MAX_IN_FLIGHT`] are running.
    fn refuse_if_busy(&mut self, id: &Value, in_flight: usize) -> bool {
        let busy = in_flight >= MAX_IN_FLIGHT;
        if busy {
            self.bridge.refuse(
                id.clone(),
                format!("the view already has {MAX_IN_FLIGHT} requests in flight"),
            );
        }
        busy
    }

    /// Ends the view: asks it to tear down, waits up to [`TEARDOWN_WAIT`]
    /// for its answer, then tells the page, which removes it.
    pub fn close(&mut self, reason: &str) {
        if self.closed.is_some() {
            return;
        }
        self.bridge.teardown(reason);
        self.flush();
        let deadline = Instant::now() + TEARDOWN_WAIT;
        while !self.bridge.is_down() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(Inbound::FromView(message)) => {
                    // Only the teardown's answer matters now; requests are
                    // refused as the view winds down.
                    if let Some(ask) = self.bridge.receive(&message)
                        && let Some(id) = ask.id()
                    {
                        self.bridge.refuse(id.clone(), "the view is closing");
                    }
                    self.flush();
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.origins.end(reason);
        self.closed = Some(reason.to_owned());
    }

    fn flush(&mut self) {
        while let Some(message) = self.bridge.poll_output() {
            self.origins.send(&message);
        }
    }

    /// What the view asked that needs no call: answered at once, and told.
    fn answer_ask(&mut self, ask: ViewAsk) -> Option<AppEvent> {
        let cap = |text: &str| cap_output(text, self.max_output_bytes).into_owned();
        match ask {
            ViewAsk::Message { id, text, .. } => {
                self.bridge.answer(id, Ok(json!({})));
                Some(AppEvent::Message { text: cap(&text) })
            }
            ViewAsk::ModelContext { id, text, params } => {
                self.bridge.answer(id, Ok(json!({})));
                Some(AppEvent::ModelContext {
                    text: cap(&text),
                    params,
                })
            }
            ViewAsk::OpenLink { id, url } => {
                let asked = json!({"mode": "url", "url": url,
                    "message": format!("The view of server `{}` asks to open a link", self.server)});
                match (Url::parse(&url), url_request_from_params(&asked, false)) {
                    (Ok(url), Ok(shown)) => Some(AppEvent::OpenLink {
                        id,
                        url,
                        shown: Box::new(shown),
                    }),
                    _ => {
                        self.bridge.refuse(id, "Invalid URL");
                        None
                    }
                }
            }
            ViewAsk::Log { level, data } => Some(AppEvent::Log {
                level,
                text: match data {
                    Value::String(s) => cap(&s),
                    other => cap(&other.to_string()),
                },
            }),
            // Calls and reads are the loop's.
            ViewAsk::CallTool { id, .. } | ViewAsk::ReadResource { id, .. } => {
                self.bridge.refuse(id, "not served here");
                None
            }
        }
    }
}

/// Carries out a view's `tools/call` or `resources/read` on its own
/// server, as its app; the outcome for the view.
fn carry_out(host: &Host, server: &str, ask: ViewAsk, calls: &Cancel) -> Inbound {
    let options = CallOptions::new().cancel(calls);
    match ask {
        ViewAsk::CallTool {
            id,
            name,
            arguments,
        } => {
            let target = CallTarget::FromApp {
                server,
                tool: &name,
            };
            let outcome = host
                .call(target, arguments, options)
                .map(|result| (result.as_sent(), result.is_error))
                .map_err(|error| error.to_string());
            Inbound::CallDone {
                id,
                tool: name,
                outcome,
            }
        }
        ViewAsk::ReadResource { id, uri } => {
            let request = FeatureRequest::ReadResource(ReadResourceParams { uri });
            let outcome = host
                .request(server, request, options)
                .map_err(|error| error.to_string());
            Inbound::ReadDone { id, outcome }
        }
        other => Inbound::ReadDone {
            id: other.id().cloned().unwrap_or_default(),
            outcome: Err("not a call or a read".into()),
        },
    }
}

impl Drop for AppView {
    fn drop(&mut self) {
        if self.closed.is_none() {
            self.origins.end("rho closed the view");
        }
    }
}

/// Whether a browser can be opened here for a view: `BROWSER` names one,
/// or (outside CI) the platform has a desktop: macOS, Windows, or a
/// `DISPLAY` or `WAYLAND_DISPLAY` on other Unix systems.
pub fn browser_available() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("BROWSER") {
        return true;
    }
    if set("CI") {
        return false;
    }
    cfg!(any(target_os = "macos", windows)) || set("DISPLAY") || set("WAYLAND_DISPLAY")
}

/// Opens `url` in the person's browser: the program `BROWSER` names (with
/// the URL as its one argument), else the platform's opener.
pub fn open_in_browser(url: &Url) {
    match std::env::var_os("BROWSER").filter(|v| !v.is_empty()) {
        Some(program) => {
            let _ = std::process::Command::new(program)
                .arg(url.as_str())
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
        }
        None => crate::login::open_in_browser(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::features::apps::ViewCsp;

    #[test]
    fn server_text_in_the_host_page_is_escaped() {
        assert_eq!(
            escape("<img src=x onerror=\"a()\">&'\u{7}"),
            "&lt;img src=x onerror=&quot;a()&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn the_view_csp_is_the_declared_one_framed_only_by_the_sandbox() {
        let csp = ViewCsp::default().header("http://127.0.0.1:5");
        assert!(csp.ends_with("frame-ancestors http://127.0.0.1:5"), "{csp}");
    }
}
