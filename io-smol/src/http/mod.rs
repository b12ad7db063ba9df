//! Streamable HTTP on async-io: every exchange the core asks for is a task
//! on the session's executor, over a small pool of kept-alive HTTP/1.1
//! connections, reporting head, body chunks, end or failure into the
//! session's inbox. No exchange crosses a thread (a host name is
//! resolved on smol's blocking pool when a connection opens, since
//! `getaddrinfo` has no async form; an IP address skips even that).
//!
//! # The stack
//!
//! hyper 1.x's `client::conn::http1` (features `client` and `http1` only:
//! no pool, no runtime, no HTTP/2) does the protocol: request encoding,
//! chunked and length-delimited bodies, keep-alive and `Connection: close`
//! bookkeeping. The pool's `Stream` implements hyper's IO traits over
//! async-io's sockets itself (smol-hyper's adapter zeroed the whole read
//! buffer on every poll; see there), each socket reading only once the
//! reactor says it can find something (the pool's `Tcp`), and
//! futures-rustls runs rustls over them. The alternatives: a hand-written
//! client on httparse would be ours to keep correct at every framing
//! corner; ureq-proto (ureq's
//! sans-IO core) would share the thread executor's stack but is a 0.x API
//! that changes shape between releases; hyper is what most of the Rust
//! HTTP ecosystem runs on. The pool is ours (the `pool` module):
//! hyper-util's client would bring its own connector stack and a general
//! many-host pool, while a session talks to one origin and wants aborts
//! to hand back connections.
//!
//! A host's own requests that are not MCP traffic (an OAuth login's
//! metadata and token requests) go through [`run_exchange`]: the same
//! stack and policy, one exchange on its own connection.
//!
//! rustls uses the *ring* provider, the one ureq already links for the
//! thread executor, so the binary carries one crypto stack. Roots are
//! the platform's (rustls-native-certs: the system bundle on Linux, the
//! keychain on macOS, the store on Windows), loaded once per process,
//! as the thread executor's ureq agent loads them.
//!
//! # Behaviour, as on threads
//!
//! Redirects are never followed (hyper's connection API has no notion of
//! them) and every status is data. Nothing is decompressed: no
//! `Accept-Encoding` is sent and bodies are handed on as they arrive.
//! Opening a connection (resolve, TCP, TLS) is bounded by
//! `CONNECT_TIMEOUT`; a write that makes no progress for
//! `SEND_TIMEOUT` fails the exchange; reading a body has no timeout,
//! because the GET stream may stay open for the whole session: the core's
//! deadlines bound every request and it aborts what it gives up on: an
//! aborted exchange reports nothing more, and its connection is closed at
//! once, never kept for reuse (see `HttpIo::abort`). A
//! response head larger than `MAX_HEAD` (ureq's default bound too) or
//! with more than 100 fields (hyper's default) fails the exchange. The
//! URL policy is checked again before anything is sent. A session stops
//! reading bodies while more than [`BODY_IN_FLIGHT`] bytes handed to it
//! wait to be handled, so a server streaming without pause waits on TCP
//! flow control instead.
//!
//! # Connections
//!
//! HTTP/1.1 carries one exchange at a time per connection, so sequential
//! calls share one kept-alive connection, the GET stream holds its own,
//! and calls in flight together open more, up to `MAX_CONNECTIONS`; a
//! slow call never holds up another. A connection goes back to the pool
//! only when its response was read to the end and the server did not ask
//! to close; one that errored, or whose body was left unread, is closed.

mod pool;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crate::inbox::Sender;
use event_listener::Event;
use http_body_util::BodyExt;
use rho_proto_core::config::check_url_policy;
use rho_proto_core::connection::HttpInput;
use rho_proto_core::http::{ExchangeId, HttpFailure, HttpRequest, Method};
use rho_proto_core::runtime::backlog::BODY_IN_FLIGHT;
use smol::{Executor, Task, Timer};

use crate::driver::Input;
use pool::{Origin, Pool, Timeouts};

/// Bound on opening a connection: resolving, TCP connect, TLS handshake.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A write of a request that makes no progress for this long fails.
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest response head accepted, status line included; also
/// hyper's read buffer bound.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// The most body bytes handed to the session in one input: what it may
/// hold unhandled past [`BODY_IN_FLIGHT`].
pub(crate) const BODY_PIECE: usize = 64 * 1024;
/// Connections a session keeps open at once, in use or idle. HTTP/1.1
/// carries one exchange per connection, so this bounds concurrent
/// exchanges; one more waits for a connection to come free.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// Idle connections a session keeps for reuse: as many as the thread
/// executor's agent keeps, so that sixteen calls in flight (an agent's
/// usual fan-out) that end in one read find their connections again
/// instead of closing half of them and connecting anew.
pub(crate) const MAX_IDLE: usize = 16;

/// A session's HTTP exchanges: tasks on its executor sharing one pool.
pub(crate) struct HttpIo {
    executor: Arc<Executor<'static>>,
    events: Sender<Input>,
    pool: Arc<Pool>,
    bodies: Arc<BodyBudget>,
    /// Exchanges not yet ended; dropping one's task cancels it.
    running: BTreeMap<ExchangeId, Task<()>>,
}

impl HttpIo {
    /// A client whose exchanges run on `executor` and report to `events`.
    pub(crate) fn new(executor: &Arc<Executor<'static>>, events: Sender<Input>) -> Self {
        Self::with_limits(
            executor,
            events,
            (MAX_CONNECTIONS, MAX_IDLE),
            Timeouts::default(),
        )
    }

    /// A client with its own bounds: `(open, idle)` connections, and
    /// timeouts.
    fn with_limits(
        executor: &Arc<Executor<'static>>,
        events: Sender<Input>,
        connections: (usize, usize),
        timeouts: Timeouts,
    ) -> Self {
        Self {
            executor: Arc::clone(executor),
            events,
            pool: Arc::new(Pool::new(executor, connections, timeouts)),
            bodies: Arc::default(),
            running: BTreeMap::new(),
        }
    }

    /// Starts an exchange.
    pub(crate) fn send(&mut self, request: HttpRequest) {
        let exchange = request.exchange;
        let events = self.events.clone();
        let (pool, bodies) = (Arc::clone(&self.pool), Arc::clone(&self.bodies));
        // Boxed here, once: the exchange's state (hyper's request future
        // and all) is a few hundred bytes that spawning would otherwise
        // move by value, three times, on every request.
        let task = self.executor.spawn(Box::pin(async move {
            let exchange_io = Exchange {
                pool: &pool,
                bodies: &bodies,
            };
            exchange_io
                .run(request, |input| {
                    events.send(Input::Http(exchange, input)).is_ok()
                })
                .await;
        }));
        self.running.insert(exchange, task);
    }

    /// The session handled an input of `exchange`: a body chunk no longer
    /// counts against [`BODY_IN_FLIGHT`], and an ended exchange's task is
    /// let go.
    pub(crate) fn handled(&mut self, exchange: ExchangeId, input: &HttpInput) {
        match input {
            HttpInput::Body(chunk) => self.bodies.remove(chunk.len()),
            HttpInput::End | HttpInput::Failed(_) => {
                self.running.remove(&exchange);
            }
            _ => {}
        }
    }

    /// Aborts an exchange: it reports nothing more, and its connection
    /// is closed at once, wherever the exchange was (connecting, waiting
    /// for the answer, reading a body): its task is cancelled, and the
    /// connection it held goes with it, never back to the idle pool. The
    /// server sees the client go, which over Streamable HTTP in the
    /// 2026-07-28 protocol is how a request is cancelled. (A POST stream
    /// that carried its answer is not aborted but read to its end, when
    /// the server ends it soon: the core lingers on it.)
    pub(crate) fn abort(&mut self, exchange: ExchangeId) {
        drop(self.running.remove(&exchange));
    }

    /// Cancels every exchange and closes every connection (at shutdown).
    pub(crate) fn shutdown(&mut self) {
        self.bodies.close();
        self.running.clear();
        self.pool.clear();
    }

    /// Connections open now, in use or idle.
    #[cfg(test)]
    pub(crate) fn open_connections(&self) -> usize {
        self.pool.open()
    }
}

/// Performs one exchange outside any session, blocking this thread, and
/// reports what happens to it through `report` until the body ends,
/// fails, `report` returns `false`, or `within` has passed (then it
/// reports a failure that says so). For a host's own requests that are
/// not MCP traffic, an OAuth login's metadata and token requests: the
/// same stack, URL policy, limits and timeouts as a session's exchanges,
/// on a connection opened for this exchange and closed after it. `report`
/// consumes each chunk before it returns, so nothing is counted against a
/// session's body budget.
///
/// It runs its own executor on the calling thread (a login runs on a
/// host thread, or on smol's blocking pool when a session asks for one),
/// so it must not be called from a task on an executor: it would stall
/// that executor's thread until the exchange ends.
pub fn run_exchange(
    request: HttpRequest,
    within: Duration,
    mut report: impl FnMut(HttpInput) -> bool,
) {
    let executor = Arc::new(Executor::new());
    let pool = Pool::new(&executor, (1, 0), Timeouts::default());
    let bodies = BodyBudget::default();
    bodies.close();
    let exchange = Exchange {
        pool: &pool,
        bodies: &bodies,
    };
    // The exchange returns as soon as it reported its end or failure, and
    // is polled first: a timeout is reported only for one still under way.
    let done = crate::run::block_on(&executor, async {
        let work = exchange.run(request, &mut report);
        smol::future::or(
            async {
                work.await;
                true
            },
            async {
                Timer::after(within).await;
                false
            },
        )
        .await
    });
    if !done {
        report(HttpInput::Failed(HttpFailure::other(format!(
            "no complete answer within {} s",
            within.as_secs_f64()
        ))));
    }
}

/// What one exchange's task works with.
struct Exchange<'a> {
    pool: &'a Pool,
    bodies: &'a BodyBudget,
}

impl Exchange<'_> {
    /// Performs the exchange and reports what happens to it through
    /// `report` until the body ends, fails, or `report` returns `false`
    /// (an abort cancels the task).
    async fn run(&self, request: HttpRequest, mut report: impl FnMut(HttpInput) -> bool) {
        // Defence in depth: the core only ever asks for the configured URL,
        // which passed this policy when the config was read.
        if let Err(e) = check_url_policy(&request.url) {
            report(HttpInput::Failed(HttpFailure::other(e.to_string())));
            return;
        }
        let origin = match Origin::of(&request.url) {
            Ok(origin) => origin,
            Err(e) => {
                report(HttpInput::Failed(HttpFailure::other(e)));
                return;
            }
        };
        let built = match build(request) {
            Ok(built) => built,
            Err(e) => {
                report(HttpInput::Failed(HttpFailure::other(format!(
                    "invalid request: {e}"
                ))));
                return;
            }
        };
        let (conn, response) = match self.pool.send(&origin, built).await {
            Ok(pair) => pair,
            Err(e) => {
                report(HttpInput::Failed(e));
                return;
            }
        };
        let (head, mut body) = response.into_parts();
        let reusable = !wants_close(&head);
        let headers = head
            .headers
            .iter()
            .map(|(k, v)| {
                // Header values are nearly always visible ASCII, which
                // `to_str` checks in one pass; anything else is read
                // lossily.
                let value = match v.to_str() {
                    Ok(text) => text.to_owned(),
                    Err(_) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
                };
                (k.as_str().to_owned(), value)
            })
            .collect();
        if !report(HttpInput::Head {
            status: head.status.as_u16(),
            headers,
        }) {
            return;
        }
        loop {
            self.bodies.room().await;
            let input = match body.frame().await {
                None => HttpInput::End,
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if data.is_empty() => continue,
                    Ok(mut data) => {
                        // hyper may yield more than one read's worth at
                        // once (what was buffered plus a fresh read), so a
                        // frame is handed over in pieces, each waiting for
                        // room: the session never holds more than
                        // BODY_IN_FLIGHT + BODY_PIECE unhandled.
                        while data.len() > BODY_PIECE {
                            let piece = data.split_to(BODY_PIECE);
                            self.bodies.add(piece.len());
                            if !report(HttpInput::Body(piece.to_vec())) {
                                return;
                            }
                            self.bodies.room().await;
                        }
                        self.bodies.add(data.len());
                        HttpInput::Body(data.to_vec())
                    }
                    // Trailers: nothing in MCP uses them.
                    Err(_) => continue,
                },
                Some(Err(e)) => HttpInput::Failed(HttpFailure::other(e.to_string())),
            };
            match input {
                HttpInput::Body(_) => {
                    if !report(input) {
                        return;
                    }
                }
                HttpInput::End => {
                    // Read to the end: the connection can carry the next
                    // request, which the session may send as soon as it
                    // hears of this end.
                    if reusable {
                        self.pool.put(origin, conn);
                    }
                    report(input);
                    return;
                }
                _ => {
                    report(input);
                    return;
                }
            }
        }
    }
}

/// The request hyper sends: origin-form target, `Host` from the URL.
///
/// The header map is filled directly rather than through
/// `http::request::Builder`, whose every `header` call moves the whole
/// request under construction through a `Result`: a third of the cost
/// of building a call's request.
fn build(
    request: HttpRequest,
) -> Result<hyper::Request<http_body_util::Full<hyper::body::Bytes>>, hyper::http::Error> {
    use hyper::header::{HeaderMap, HeaderValue};
    let url = &request.url;
    let mut target = url.path().to_owned();
    if let Some(query) = url.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut headers = HeaderMap::with_capacity(request.headers.len() + 1);
    if !request
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        let host = url.host_str().unwrap_or_default();
        let value = match url.port() {
            Some(port) => HeaderValue::try_from(format!("{host}:{port}"))?,
            None => HeaderValue::from_str(host)?,
        };
        headers.insert(hyper::header::HOST, value);
    }
    for (name, value) in request.headers {
        // The value's own buffer becomes the header's (checked, not
        // copied); MCP's own names are static, so only a configured
        // custom header name is lowercased into a new buffer.
        headers.append(
            header_name(&name)?,
            HeaderValue::from_maybe_shared(hyper::body::Bytes::from(value))?,
        );
    }
    let mut built = hyper::Request::new(http_body_util::Full::new(request.body.into()));
    *built.method_mut() = match request.method {
        Method::Get => hyper::Method::GET,
        Method::Post => hyper::Method::POST,
        Method::Delete => hyper::Method::DELETE,
    };
    *built.uri_mut() = hyper::Uri::try_from(target)?;
    *built.headers_mut() = headers;
    Ok(built)
}

/// The header names the MCP transport itself sends that are not among
/// `http`'s standard ones, lowercase as HTTP/1.1 writes them.
const MCP_HEADERS: [&str; 5] = [
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "last-event-id",
];

/// `name` as a header name: a static one for MCP's own names (no
/// allocation), else parsed (standard names allocate nothing either).
fn header_name(name: &str) -> Result<hyper::header::HeaderName, hyper::http::Error> {
    match MCP_HEADERS.iter().find(|n| n.eq_ignore_ascii_case(name)) {
        Some(known) => Ok(hyper::header::HeaderName::from_static(known)),
        None => Ok(hyper::header::HeaderName::from_bytes(name.as_bytes())?),
    }
}

/// Whether the server will close the connection after this response
/// (`Connection: close`, or HTTP/1.0 without `keep-alive`).
fn wants_close(head: &hyper::http::response::Parts) -> bool {
    let says = |token: &str| {
        head.headers
            .get_all(hyper::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    if head.version == hyper::Version::HTTP_10 {
        !says("keep-alive")
    } else {
        says("close")
    }
}

/// Body bytes handed to the session and not yet handled, with a wakeup
/// for exchanges waiting for room.
#[derive(Debug, Default)]
pub(crate) struct BodyBudget {
    bytes: AtomicUsize,
    closed: AtomicBool,
    room: Event,
}

impl BodyBudget {
    fn has_room(&self) -> bool {
        self.closed.load(Ordering::Acquire) || self.bytes.load(Ordering::Acquire) <= BODY_IN_FLIGHT
    }

    /// Waits until at most [`BODY_IN_FLIGHT`] bytes wait (or the session
    /// is gone, and waiting is pointless).
    async fn room(&self) {
        while !self.has_room() {
            let listener = self.room.listen();
            if self.has_room() {
                return;
            }
            listener.await;
        }
    }

    fn add(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::AcqRel);
    }

    fn remove(&self, n: usize) {
        let _ = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                Some(b.saturating_sub(n))
            });
        if self.has_room() {
            self.room.notify(usize::MAX);
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.room.notify(usize::MAX);
    }
}
