//! The two loopback origins a view is served from, and the channel from
//! the host page back to rho.
//!
//! - The **host page** origin (`http://127.0.0.1:A`): `GET /app/<token>`
//!   is the page a person opens; `GET /events/<token>` is a stream of
//!   Server-Sent Events carrying rho's messages for the view;
//!   `POST /rpc/<token>` carries one of the view's messages to rho.
//! - The **sandbox** origin (`http://127.0.0.1:B`, another port, so
//!   another origin): `GET /sandbox/<token>` is the proxy page framed by
//!   the host page, `GET /view/<token>` the server's HTML, framed by the
//!   proxy, under the CSP built from what the view declared.
//!
//! Each origin has its own secret token, so the view, which can read its
//! own origin's URLs, never learns the host page's. Every request must
//! name the origin's own `Host` (a DNS-rebinding page's requests name
//! another), every `POST` must come from the host page's own `Origin`,
//! and each request is bounded (head, body, time); anything else is
//! refused with no detail.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// The largest message the page may post for the view.
pub(crate) const MAX_POST: usize = 8 * 1024 * 1024;
/// How long a connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections served at once per origin; more are closed.
const MAX_CONNECTIONS: usize = 32;
/// The most messages held for a page that is not connected.
const MAX_BACKLOG: usize = 1024;

/// What the pages tell the view's owner.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// One message from the view, as the page relayed it.
    FromView(Value),
    /// The host page's event stream connected.
    PageConnected,
    /// The host page's event stream ended.
    PageGone,
    /// The owner's cancel fired.
    Cancelled,
    /// A tool call the view made has its outcome: the result as sent and
    /// whether it is an error, or why there is none.
    CallDone {
        /// The view's request id.
        id: Value,
        /// The tool.
        tool: String,
        /// The outcome.
        outcome: Result<(Value, bool), String>,
    },
    /// A resource read the view asked for has its outcome.
    ReadDone {
        /// The view's request id.
        id: Value,
        /// The result as sent, or why there is none.
        outcome: Result<Value, String>,
    },
}

/// The page's event stream: the live connection, or what waits for one.
#[derive(Default)]
struct Stream {
    live: Option<(u64, TcpStream)>,
    backlog: VecDeque<String>,
    next: u64,
}

/// What every connection thread of one view shares.
pub(crate) struct Shared {
    /// The host page's token.
    host_token: String,
    /// The sandbox's token.
    sandbox_token: String,
    /// `host:port` of each origin, as a request's `Host` must say.
    host_authority: String,
    sandbox_authority: String,
    /// The host page, the proxy page and the view, with their policies.
    pages: Pages,
    inbox: Sender<Inbound>,
    stream: Mutex<Stream>,
    stopping: AtomicBool,
}

/// The two listeners of one view, stopped when dropped.
pub(crate) struct Origins {
    pub(crate) shared: Arc<Shared>,
    host: SocketAddr,
    sandbox: SocketAddr,
}

/// The bound origins, before their pages are known.
pub(crate) struct Bound {
    host: TcpListener,
    sandbox: TcpListener,
    pub(crate) host_origin: String,
    pub(crate) sandbox_origin: String,
    pub(crate) host_token: String,
    pub(crate) sandbox_token: String,
}

impl Bound {
    /// Binds two ephemeral loopback ports and draws their tokens.
    pub(crate) fn new() -> Result<Self, String> {
        let bind = || {
            TcpListener::bind("127.0.0.1:0")
                .map_err(|e| format!("no loopback port for the view: {e}"))
        };
        let host = bind()?;
        let sandbox = bind()?;
        let origin = |l: &TcpListener| -> Result<String, String> {
            let addr = l.local_addr().map_err(|e| e.to_string())?;
            Ok(format!("http://127.0.0.1:{}", addr.port()))
        };
        Ok(Self {
            host_origin: origin(&host)?,
            sandbox_origin: origin(&sandbox)?,
            host,
            sandbox,
            host_token: token()?,
            sandbox_token: token()?,
        })
    }
}

/// The pages and policies one view is served with.
pub(crate) struct Pages {
    pub(crate) host_page: String,
    pub(crate) sandbox_page: String,
    pub(crate) view_html: String,
    pub(crate) view_csp: String,
    pub(crate) page_csp: String,
    pub(crate) sandbox_csp: String,
}

/// A fresh URL-safe secret.
fn token() -> Result<String, String> {
    use base64::Engine as _;
    let bytes = crate::grants::random()?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

impl Origins {
    /// Starts serving `pages` on the bound ports; what the pages send goes
    /// to `inbox`.
    pub(crate) fn start(bound: Bound, pages: Pages, inbox: Sender<Inbound>) -> Self {
        let authority = |o: &str| o.trim_start_matches("http://").to_owned();
        let host = bound.host.local_addr().expect("bound");
        let sandbox = bound.sandbox.local_addr().expect("bound");
        let shared = Arc::new(Shared {
            host_token: bound.host_token,
            sandbox_token: bound.sandbox_token,
            host_authority: authority(&bound.host_origin),
            sandbox_authority: authority(&bound.sandbox_origin),
            pages,
            inbox,
            stream: Mutex::new(Stream::default()),
            stopping: AtomicBool::new(false),
        });
        for (listener, side) in [(bound.host, Side::Host), (bound.sandbox, Side::Sandbox)] {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(format!("rho-app-{side:?}"))
                .spawn(move || accept(listener, side, shared))
                .expect("spawn the view's listener");
        }
        Self {
            shared,
            host,
            sandbox,
        }
    }

    /// Sends one message to the page (held while no page is connected).
    pub(crate) fn send(&self, message: &Value) {
        self.shared.send_event(None, &message.to_string());
    }

    /// Tells the page the view has ended (it removes the view and says
    /// why), then closes the stream.
    pub(crate) fn end(&self, reason: &str) {
        let data = serde_json::to_string(reason).unwrap_or_default();
        self.shared.send_event(Some("end"), &data);
        let mut stream = self.shared.stream.lock().expect("stream");
        if let Some((_, live)) = stream.live.take() {
            let _ = live.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Origins {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        if let Some((_, live)) = self.shared.stream.lock().expect("stream").live.take() {
            let _ = live.shutdown(Shutdown::Both);
        }
        // Wake each accept so its thread sees the flag.
        for addr in [self.host, self.sandbox] {
            let _ = TcpStream::connect_timeout(&addr, Duration::from_millis(200));
        }
    }
}

impl Shared {
    fn send_event(&self, event: Option<&str>, data: &str) {
        let mut frame = String::new();
        if let Some(event) = event {
            frame.push_str("event: ");
            frame.push_str(event);
            frame.push('\n');
        }
        // Compact JSON holds no newline; a string from elsewhere is split
        // into data lines, as the format says.
        for line in data.split('\n') {
            frame.push_str("data: ");
            frame.push_str(line);
            frame.push('\n');
        }
        frame.push('\n');
        let mut stream = self.stream.lock().expect("stream");
        let failed = match &mut stream.live {
            Some((_, live)) => live
                .write_all(frame.as_bytes())
                .and_then(|()| live.flush())
                .is_err(),
            None => {
                if stream.backlog.len() < MAX_BACKLOG {
                    stream.backlog.push_back(frame);
                }
                return;
            }
        };
        if failed {
            // The page is gone: its reader thread says so; hold the frame
            // for the page that comes back.
            stream.live = None;
            if stream.backlog.len() < MAX_BACKLOG {
                stream.backlog.push_back(frame);
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Host,
    Sandbox,
}

fn accept(listener: TcpListener, side: Side, shared: Arc<Shared>) {
    let open = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            continue;
        }
        open.fetch_add(1, Ordering::SeqCst);
        let shared = Arc::clone(&shared);
        let open = Arc::clone(&open);
        let spawned = std::thread::Builder::new()
            .name("rho-app-conn".into())
            .spawn(move || {
                serve(stream, side, &shared);
                open.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            return;
        }
    }
}

/// One request as read.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    stream.set_read_timeout(Some(READ_TIMEOUT)).ok()?;
    let mut reader = BufReader::new(stream.take(MAX_HEAD as u64));
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end_matches(['\r', '\n']);
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if let Some(length) = request.header("content-length") {
        let length: usize = length.parse().ok()?;
        if length > MAX_POST {
            return None;
        }
        // What the head's reader buffered past the head, then the rest.
        let buffered = reader.buffer().to_vec();
        let mut body = buffered;
        let mut rest = reader.into_inner().into_inner();
        if body.len() < length {
            let mut more = vec![0; length - body.len()];
            rest.read_exact(&mut more).ok()?;
            body.extend_from_slice(&more);
        }
        body.truncate(length);
        request.body = body;
    }
    Some(request)
}

fn respond(mut stream: &TcpStream, status: &str, headers: &[(&str, &str)], body: &[u8]) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
    let _ = stream.flush();
}

fn refuse(stream: &TcpStream, status: &str) {
    respond(
        stream,
        status,
        &[("Content-Type", "text/plain; charset=utf-8")],
        b"refused\n",
    );
}

fn html(stream: &TcpStream, body: &str, csp: &str) {
    respond(
        stream,
        "200 OK",
        &[
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Security-Policy", csp),
        ],
        body.as_bytes(),
    );
}

fn serve(stream: TcpStream, side: Side, shared: &Shared) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let authority = match side {
        Side::Host => &shared.host_authority,
        Side::Sandbox => &shared.sandbox_authority,
    };
    if request.header("host") != Some(authority.as_str()) {
        return refuse(&stream, "403 Forbidden");
    }
    let (route, token) = request
        .path
        .trim_start_matches('/')
        .split_once('/')
        .unwrap_or(("", ""));
    let expected = match side {
        Side::Host => &shared.host_token,
        Side::Sandbox => &shared.sandbox_token,
    };
    if !same(token, expected) {
        return refuse(&stream, "404 Not Found");
    }
    let pages = &shared.pages;
    match (side, request.method.as_str(), route) {
        (Side::Host, "GET", "app") => html(&stream, &pages.host_page, &pages.page_csp),
        (Side::Host, "GET", "events") if same_origin_fetch(&request, authority) => {
            events(stream, shared)
        }
        (Side::Host, "POST", "rpc")
            if request.header("origin") == Some(&format!("http://{authority}")) =>
        {
            match serde_json::from_slice::<Value>(&request.body) {
                Ok(message) => {
                    let _ = shared.inbox.send(Inbound::FromView(message));
                    respond(&stream, "204 No Content", &[], b"");
                }
                Err(_) => refuse(&stream, "400 Bad Request"),
            }
        }
        (Side::Sandbox, "GET", "sandbox") => html(&stream, &pages.sandbox_page, &pages.sandbox_csp),
        (Side::Sandbox, "GET", "view") => html(&stream, &pages.view_html, &pages.view_csp),
        _ => refuse(&stream, "403 Forbidden"),
    }
}

/// A request the host page itself made: no `Origin`, or its own; and, when
/// the browser says where it came from, the same origin.
fn same_origin_fetch(request: &Request, authority: &str) -> bool {
    let origin_ok = request
        .header("origin")
        .is_none_or(|o| o == format!("http://{authority}"));
    let site_ok = request
        .header("sec-fetch-site")
        .is_none_or(|s| s == "same-origin");
    origin_ok && site_ok
}

/// Compares two tokens without stopping at the first difference.
fn same(given: &str, expected: &str) -> bool {
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// Holds the page's event stream open: what waited is sent, rho's
/// messages follow as they come, and the page is gone when its side
/// closes.
fn events(stream: TcpStream, shared: &Shared) {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: keep-alive\r\n\r\n";
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let id = {
        let mut held = shared.stream.lock().expect("stream");
        if writer.write_all(head.as_bytes()).is_err() {
            return;
        }
        let mut ok = true;
        while let Some(frame) = held.backlog.pop_front() {
            if writer.write_all(frame.as_bytes()).is_err() {
                held.backlog.push_front(frame);
                ok = false;
                break;
            }
        }
        if !ok {
            return;
        }
        let id = held.next;
        held.next += 1;
        if let Some((_, old)) = held.live.replace((id, writer)) {
            let _ = old.shutdown(Shutdown::Both);
        }
        id
    };
    let _ = shared.inbox.send(Inbound::PageConnected);
    // The page sends nothing on this connection: a read returns when it
    // closes (or rho shuts it).
    let _ = stream.set_read_timeout(None);
    let mut sink = [0u8; 64];
    let mut reader = &stream;
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
    let mut held = shared.stream.lock().expect("stream");
    // A stream a newer page replaced ends quietly; rho ending it (`end`)
    // has already taken it.
    let was_live = held.live.as_ref().is_some_and(|(live, _)| *live == id);
    if was_live {
        held.live = None;
    }
    drop(held);
    if was_live && !shared.stopping.load(Ordering::SeqCst) {
        let _ = shared.inbox.send(Inbound::PageGone);
    }
}
