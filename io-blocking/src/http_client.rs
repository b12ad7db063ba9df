//! The HTTP half of the executors: make the requests the core asks
//! for with ureq and stream each response back to the session as head,
//! body chunks, end or failure.
//!
//! On threads, a session's exchanges run on a small pool of persistent
//! workers (`HttpClient`). An exchange goes to the worker that went idle
//! last, so sequential calls keep using one worker, and through that
//! worker's ureq agent one keep-alive connection: a body read to its end
//! hands its connection back to the agent's pool. The server stream's
//! long-lived GET keeps one worker busy, and the POSTs use another.
//! Exchanges in flight at once each get a worker, up to `MAX_WORKERS`;
//! beyond that they queue. A worker idle for `IDLE_RETIRE` ends, unless
//! it is the only idle one. Workers hand each input to the session
//! themselves and read on once it is handled, so at most one chunk per
//! exchange is in flight and a server streaming without pause waits on
//! TCP flow control.
//!
//! An abort takes effect at once, and closes the exchange's connection:
//! the session hears nothing more of that exchange, its worker stops
//! counting against the bound, and the worker's agent is shut down
//! ([`ureq::Agent::shutdown`]), which interrupts a read blocked on the
//! socket and closes the connection instead of draining it back to a
//! pool. The server sees the client go, which is how a request is
//! cancelled over Streamable HTTP in the 2026-07-28 protocol (the core
//! posts no `notifications/cancelled` there). Each worker has an agent of
//! its own for that reason: an agent's shutdown reaches every connection
//! it holds, so one shared by all workers would close every exchange's.
//! The agent is shut down under the pool's lock, while the exchange is
//! still the worker's (it takes that lock before it starts another), so
//! an abort never reaches the next exchange's connection; the worker then
//! starts over with a fresh agent.
//!
//! ureq is configured to never follow a redirect, to hand back every status
//! instead of turning 4xx/5xx into errors, and to decompress nothing, so
//! SSE bytes arrive as the server sent them. Connect and send have
//! timeouts; reading a body does not, because a stream may legitimately
//! stay open for the whole session: the core's deadlines bound every
//! request, and an exchange the core gives up on is aborted.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rho_proto_core::config::check_url_policy;
use rho_proto_core::connection::HttpInput;
use rho_proto_core::http::{ExchangeId, HttpFailure, HttpFailureKind, HttpRequest};

use rho_proto_core::runtime::backlog::{BACKLOG_POLL, BODY_IN_FLIGHT, Backlog};

use crate::driver::NotStarted;

/// The agent [`new_agent`] and [`new_bounded_agent`] make and
/// [`run_exchange`] takes, so that a host holding one (rho-host's OAuth
/// exchanges) needs no ureq of its own.
pub use ureq::Agent;

/// Connect timeout for every request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout for sending a request's head and body.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Read size for response bodies.
const CHUNK: usize = 16 * 1024;
/// The largest response head accepted, status line included (ureq's
/// default, and io-smol's bound).
const MAX_HEAD: usize = 64 * 1024;
/// A connection's buffer for what it sends: a request head and body go
/// out through it in pieces.
const OUTPUT_BUFFER: usize = 16 * 1024;

/// Exchanges of one session that run at once; more queue.
pub(crate) const MAX_WORKERS: usize = 16;
/// How long a worker stays idle before it ends (unless it is the only
/// idle one).
pub(crate) const IDLE_RETIRE: Duration = Duration::from_secs(10);
/// How long shutdown waits for the workers to end.
const WORKER_EXIT_WAIT: Duration = Duration::from_millis(500);

/// Where workers hand an exchange's inputs: the session, which returns
/// `false` once it wants no more of that exchange (aborted, or the
/// session ended). The flag is the exchange's abort flag, for the session
/// to read under its own lock.
pub(crate) type HttpSink = Arc<dyn Fn(ExchangeId, &AtomicBool, HttpInput) -> bool + Send + Sync>;

/// A session's HTTP exchanges, on a pool of persistent workers.
pub(crate) struct HttpClient {
    pool: Arc<Pool>,
}

struct Pool {
    /// What a worker's agent for plain `http` is built from: no trusted
    /// roots, so none are loaded for a loopback server.
    plain: ureq::config::Config,
    /// What a worker's agent for `https` is built from, with the
    /// platform's roots: built by the first `https` exchange, since
    /// loading the roots costs 10–35 ms a start that a plain-`http`
    /// session never needs.
    tls: OnceLock<ureq::config::Config>,
    sink: HttpSink,
    /// Names the workers' threads.
    server: String,
    /// Set at shutdown: workers end instead of rejoining.
    closed: AtomicBool,
    /// [`IDLE_RETIRE`], shorter in tests.
    idle_retire: Duration,
    state: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    /// Exchanges waiting for a worker, oldest first. Never non-empty while
    /// a worker is idle.
    queue: VecDeque<Job>,
    /// Idle workers, with their agents; the one that went idle last is at
    /// the end.
    idle: Vec<(usize, Sender<Wake>, ureq::Agent)>,
    /// Workers counted against [`MAX_WORKERS`]: every one except those
    /// still finishing an aborted exchange.
    counted: usize,
    /// Exchanges queued or running, with their abort flags.
    exchanges: BTreeMap<ExchangeId, Exchange>,
    threads: Vec<JoinHandle<()>>,
    /// Workers ever started (for tests; also names the next one).
    started: usize,
}

struct Exchange {
    aborted: Arc<AtomicBool>,
    /// The agent of the worker that runs it (none: it is queued).
    running: Option<ureq::Agent>,
}

struct Job {
    request: HttpRequest,
    aborted: Arc<AtomicBool>,
}

/// What an idle worker is woken for.
enum Wake {
    Job(Job),
    Stop,
}

impl HttpClient {
    /// A client for server `server` whose workers hand inputs to `sink`.
    pub(crate) fn new(server: &str, sink: HttpSink) -> Self {
        Self::with_retire(server, sink, IDLE_RETIRE)
    }

    fn with_retire(server: &str, sink: HttpSink, idle_retire: Duration) -> Self {
        Self {
            pool: Arc::new(Pool {
                plain: agent_config_with(no_roots()).build(),
                tls: OnceLock::new(),
                sink,
                server: server.to_owned(),
                closed: AtomicBool::new(false),
                idle_retire,
                state: Mutex::default(),
            }),
        }
    }

    /// Starts an exchange on the last idle worker or a new one, or queues
    /// it at the bound. Never blocks on the network.
    pub(crate) fn send(&self, request: HttpRequest) -> Result<(), NotStarted> {
        let exchange = request.exchange;
        let aborted = Arc::new(AtomicBool::new(false));
        let mut state = self.pool.lock();
        if self.pool.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        state.exchanges.insert(
            exchange,
            Exchange {
                aborted: Arc::clone(&aborted),
                running: None,
            },
        );
        let Err(refused) = Pool::dispatch(&self.pool, &mut state, Job { request, aborted }) else {
            return Ok(());
        };
        match *refused {
            (job, e) if state.counted > 0 => {
                // Others run: it waits for one of them.
                tracing::debug!(server = %self.pool.server, "could not start an HTTP worker: {e}");
                state.queue.push_back(job);
                Ok(())
            }
            (_, e) => {
                state.exchanges.remove(&exchange);
                Err(NotStarted {
                    exchange,
                    reason: HttpFailure::other(format!("could not start a thread: {e}")),
                })
            }
        }
    }

    /// Stops an exchange: the session hears nothing more of it, its
    /// connection is closed (a read blocked on it returns at once), and a
    /// worker running it no longer counts against the bound.
    pub(crate) fn abort(&self, exchange: ExchangeId) {
        let mut state = self.pool.lock();
        let Some(x) = state.exchanges.remove(&exchange) else {
            return;
        };
        x.aborted.store(true, Ordering::Release);
        let Some(agent) = x.running else {
            state.queue.retain(|job| job.request.exchange != exchange);
            return;
        };
        // Under the lock: the worker is still on this exchange, and takes
        // a fresh agent before it starts another.
        agent.shutdown();
        state.counted -= 1;
        // A place is free: what waits may start.
        if let Some(job) = state.queue.pop_front()
            && let Err(refused) = Pool::dispatch(&self.pool, &mut state, job)
        {
            let (job, e) = *refused;
            tracing::debug!(server = %self.pool.server, "could not start an HTTP worker: {e}");
            state.queue.push_front(job);
        }
    }

    /// Aborts every exchange (closing its connection) and ends the
    /// workers: idle ones at once, busy ones when their interrupted read
    /// returns. Waits a bounded time for them: a worker still connecting
    /// ends when the connect timeout passes.
    pub(crate) fn shutdown(self) {
        self.pool.closed.store(true, Ordering::Release);
        let threads = {
            let mut state = self.pool.lock();
            state.queue.clear();
            for (_, x) in std::mem::take(&mut state.exchanges) {
                x.aborted.store(true, Ordering::Release);
                if let Some(agent) = x.running {
                    agent.shutdown();
                }
            }
            for (_, worker, _) in state.idle.drain(..) {
                let _ = worker.send(Wake::Stop);
            }
            std::mem::take(&mut state.threads)
        };
        let until = Instant::now() + WORKER_EXIT_WAIT;
        while threads.iter().any(|t| !t.is_finished()) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        for thread in threads {
            if thread.is_finished() {
                let _ = thread.join();
            } else {
                tracing::debug!(server = %self.pool.server, "an HTTP worker is still connecting; it ends when its connect times out");
            }
        }
    }
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands `job` to the last idle worker, or to a new one below the
    /// bound, or queues it. An error hands the job back: no idle worker,
    /// and a new one could not be started.
    fn dispatch(
        pool: &Arc<Pool>,
        state: &mut PoolState,
        mut job: Job,
    ) -> Result<(), Box<(Job, std::io::Error)>> {
        let exchange = job.request.exchange;
        while let Some((_, worker, agent)) = state.idle.pop() {
            match worker.send(Wake::Job(job)) {
                Ok(()) => {
                    set_running(state, exchange, &agent);
                    return Ok(());
                }
                // That worker has ended; try the next.
                Err(mpsc::SendError(Wake::Job(back))) => job = back,
                Err(mpsc::SendError(Wake::Stop)) => return Ok(()),
            }
        }
        if state.counted >= MAX_WORKERS {
            state.queue.push_back(job);
            return Ok(());
        }
        // The job waits in a slot the new thread empties, so that a failed
        // start hands it back.
        let tls = needs_tls(&job.request);
        let slot = Arc::new(Mutex::new(Some(job)));
        let id = state.started;
        let agent = pool.new_agent(tls);
        let spawned = std::thread::Builder::new()
            .name(format!("rho-mcp-{}-http", pool.server))
            .spawn({
                let (pool, slot, agent) = (Arc::clone(pool), Arc::clone(&slot), agent.clone());
                move || {
                    let first = lock(&slot).take();
                    if let Some(job) = first {
                        pool.work(id, job, agent);
                    }
                }
            });
        match spawned {
            Ok(thread) => {
                set_running(state, exchange, &agent);
                state.started += 1;
                state.counted += 1;
                state.threads.retain(|t| !t.is_finished());
                state.threads.push(thread);
                Ok(())
            }
            Err(e) => match lock(&slot).take() {
                Some(job) => Err(Box::new((job, e))),
                None => Ok(()),
            },
        }
    }

    /// A worker's agent: its own pool of (at most one idle) keep-alive
    /// connection, which an abort shuts down; able to speak TLS when `tls`.
    fn new_agent(&self, tls: bool) -> ureq::Agent {
        let config = if tls {
            self.tls.get_or_init(|| agent_config().build())
        } else {
            &self.plain
        };
        ureq::Agent::new_with_config(config.clone())
    }

    /// A worker: runs its first job, then whatever is queued or handed to
    /// it, until it retires, its place is gone, or the pool shuts down.
    fn work(&self, id: usize, first: Job, mut agent: ureq::Agent) {
        let (tx, rx) = mpsc::channel();
        let mut buf = vec![0u8; CHUNK];
        let mut job = first;
        let mut tls = needs_tls(&job.request);
        loop {
            let exchange = job.request.exchange;
            if needs_tls(&job.request) && !tls {
                // A worker of plain exchanges handed an `https` one (an
                // authorization server beside a loopback MCP server): an
                // agent that speaks TLS from now on, and the exchange's
                // abort shuts that one down.
                agent = self.new_agent(true);
                tls = true;
                set_running(&mut self.lock(), exchange, &agent);
            }
            if !job.aborted.load(Ordering::Acquire) {
                let aborted = Arc::clone(&job.aborted);
                run_pooled(&agent, job.request, &aborted, &mut buf, |input| {
                    (self.sink)(exchange, &aborted, input)
                });
            }
            let mut state = self.lock();
            if state.exchanges.remove(&exchange).is_none() {
                // Aborted while it was this worker's: its agent was shut
                // down, and the worker gave up its place.
                if self.closed.load(Ordering::Acquire) || state.counted >= MAX_WORKERS {
                    return;
                }
                state.counted += 1;
                agent = self.new_agent(tls);
            }
            if self.closed.load(Ordering::Acquire) {
                state.counted -= 1;
                return;
            }
            if let Some(next) = state.queue.pop_front() {
                set_running(&mut state, next.request.exchange, &agent);
                job = next;
                continue;
            }
            state.idle.push((id, tx.clone(), agent.clone()));
            drop(state);
            job = loop {
                match rx.recv_timeout(self.idle_retire) {
                    Ok(Wake::Job(next)) => break next,
                    Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => {
                        self.lock().counted -= 1;
                        return;
                    }
                    Err(RecvTimeoutError::Timeout) => {
                        let mut state = self.lock();
                        let me = state.idle.iter().position(|(w, _, _)| *w == id);
                        match me {
                            // Handed a job just now: it is in the channel.
                            None => {}
                            Some(at) if state.idle.len() > 1 => {
                                state.idle.remove(at);
                                state.counted -= 1;
                                return;
                            }
                            // The last idle worker stays.
                            Some(_) => {}
                        }
                    }
                }
            };
        }
    }
}

/// `exchange` is now the worker's whose agent is `agent`.
fn set_running(state: &mut PoolState, exchange: ExchangeId, agent: &ureq::Agent) {
    if let Some(x) = state.exchanges.get_mut(&exchange) {
        x.running = Some(agent.clone());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The ureq agent of exchanges outside a session (a session's workers
/// each build their own from the same configuration; see the module
/// docs): no redirects, statuses as data, connect and send timeouts, no
/// body timeout, TLS by rustls (ring) with the platform's trusted roots.
/// Its pool keeps as many idle keep-alive
/// connections as a session runs exchanges at once (`MAX_WORKERS`;
/// ureq's default of 3 per host made 16 calls in flight open 13 new
/// connections every round, and tripled their CPU), each with smaller
/// buffers than ureq's 128 KiB: a response head is bounded at 64 KiB
/// anyway (`MAX_HEAD`), bodies stream through, and MCP requests are
/// small.
pub fn new_agent() -> ureq::Agent {
    agent_config().build().into()
}

/// An agent configured as [`new_agent`]'s, whose every exchange is also
/// bounded as a whole by `total` (connecting, sending, and reading the
/// whole answer): for a host's own one-off requests, an OAuth login's,
/// where a server that accepts and never answers must not stall the
/// login. A session's agent has no such bound: its GET stream may stay
/// open for the whole session, and the core's deadlines bound requests.
pub fn new_bounded_agent(total: Duration) -> ureq::Agent {
    agent_config().timeout_global(Some(total)).build().into()
}

/// Whether `request` needs an agent that speaks TLS.
fn needs_tls(request: &HttpRequest) -> bool {
    request.url.scheme() == "https"
}

/// No trusted roots: for an agent that only ever speaks plain `http`.
fn no_roots() -> ureq::tls::RootCerts {
    Vec::<ureq::tls::Certificate<'static>>::new().into()
}

/// What every agent shares, trusting the platform's roots.
fn agent_config() -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    agent_config_with(platform_roots())
}

/// What every agent shares, trusting `roots`.
fn agent_config_with(
    roots: ureq::tls::RootCerts,
) -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(roots)
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_send_request(Some(SEND_TIMEOUT))
        .timeout_send_body(Some(SEND_TIMEOUT))
        .max_idle_connections(MAX_WORKERS)
        .max_idle_connections_per_host(MAX_WORKERS)
        .max_response_header_size(MAX_HEAD)
        .input_buffer_size(MAX_HEAD)
        .output_buffer_size(OUTPUT_BUFFER)
}

/// The platform's trusted roots (as `rustls-native-certs` finds them,
/// `SSL_CERT_FILE` and `SSL_CERT_DIR` included), loaded once. None found
/// is said once in the log: every HTTPS server then fails its handshake
/// with an unknown-issuer error, while plain loopback HTTP still works.
fn platform_roots() -> ureq::tls::RootCerts {
    static ROOTS: OnceLock<ureq::tls::RootCerts> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
                tracing::warn!(
                    "no trusted root certificates were found on this system{}{}; HTTPS servers will fail",
                    if why.is_empty() { "" } else { ": " },
                    why.join("; ")
                );
            }
            found
                .certs
                .iter()
                .map(|der| ureq::tls::Certificate::from_der(der.as_ref()).to_owned())
                .collect::<Vec<_>>()
                .into()
        })
        .clone()
}

/// Performs one exchange, blocking, and reports what happens to it through
/// `report` until the body ends, fails, or `report` returns `false` (how
/// its caller stops it). For a caller that consumes each chunk as it is
/// reported, as the host's OAuth flows do; a session's exchanges go
/// through its driver's pool instead.
pub fn run_exchange(
    agent: &ureq::Agent,
    request: HttpRequest,
    report: impl FnMut(HttpInput) -> bool,
) {
    let never = AtomicBool::new(false);
    run_exchange_bounded(agent, request, (&never, &Backlog::unlimited()), report);
}

/// Like [`run_exchange`], until `aborted` is set too, with the body bytes
/// reported added to `bodies` (the session's, which its driver takes them
/// off once handled); the body is not read further while more than
/// [`BODY_IN_FLIGHT`] bytes wait there.
fn run_exchange_bounded(
    agent: &ureq::Agent,
    request: HttpRequest,
    (aborted, bodies): (&AtomicBool, &Backlog),
    mut report: impl FnMut(HttpInput) -> bool,
) {
    let response = match start(agent, request) {
        Ok(response) => response,
        Err(e) => {
            report(HttpInput::Failed(e));
            return;
        }
    };
    if aborted.load(Ordering::Relaxed) || !report(head(&response)) {
        return;
    }
    let mut reader = response.into_body().into_reader();
    let mut buf = vec![0u8; CHUNK];
    loop {
        while !bodies.has_room(BODY_IN_FLIGHT) {
            if aborted.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(BACKLOG_POLL);
        }
        let event = match reader.read(&mut buf) {
            Ok(0) => HttpInput::End,
            Ok(n) => {
                bodies.add(n);
                HttpInput::Body(buf[..n].to_vec())
            }
            Err(e) => HttpInput::Failed(HttpFailure::other(e.to_string())),
        };
        let last = !matches!(event, HttpInput::Body(_));
        if aborted.load(Ordering::Relaxed) || !report(event) || last {
            return;
        }
    }
}

/// One exchange on a pool worker: `report` handles each input before it
/// returns (so nothing needs counting). Once it returns `false`, or the
/// exchange is aborted, the response is dropped unread, which closes its
/// connection; one read to its end goes back to the agent's pool.
fn run_pooled(
    agent: &ureq::Agent,
    request: HttpRequest,
    aborted: &AtomicBool,
    buf: &mut [u8],
    mut report: impl FnMut(HttpInput) -> bool,
) {
    let response = match start(agent, request) {
        Ok(response) => response,
        Err(e) => {
            report(HttpInput::Failed(e));
            return;
        }
    };
    if aborted.load(Ordering::Acquire) || !report(head(&response)) {
        return;
    }
    let mut reader = response.into_body().into_reader();
    loop {
        let event = match reader.read(buf) {
            Ok(0) => HttpInput::End,
            Ok(n) => HttpInput::Body(buf[..n].to_vec()),
            Err(e) => HttpInput::Failed(HttpFailure::other(e.to_string())),
        };
        // An abort's shutdown ends a blocked read with an error, or with
        // what looks like the end of a body: neither is reported.
        let last = !matches!(event, HttpInput::Body(_));
        if aborted.load(Ordering::Acquire) || !report(event) || last {
            return;
        }
    }
}

/// Sends a request and waits for the response head.
fn start(
    agent: &ureq::Agent,
    request: HttpRequest,
) -> Result<ureq::http::Response<ureq::Body>, HttpFailure> {
    // Defence in depth: the core only ever asks for the configured URL,
    // which passed this policy when the config was read.
    check_url_policy(&request.url).map_err(|e| HttpFailure::other(e.to_string()))?;
    let mut builder = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(request.url.as_str());
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let built = builder
        .body(request.body)
        .map_err(|e| HttpFailure::other(format!("invalid request: {e}")))?;
    agent
        .run(built)
        .map_err(|e| HttpFailure::new(failure_kind(&e), e.to_string()))
}

/// What a failed request says of the server's certificate: rustls' error
/// comes back as ureq's own variant, or inside the `io::Error` the
/// handshake failed with.
fn failure_kind(error: &ureq::Error) -> HttpFailureKind {
    let tls = match error {
        ureq::Error::Rustls(e) => Some(e),
        ureq::Error::Io(e) => e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    match tls {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            HttpFailureKind::UnknownIssuer
        }
        Some(rustls::Error::InvalidCertificate(_)) => HttpFailureKind::InvalidCertificate,
        _ => HttpFailureKind::Other,
    }
}

/// A response's status and headers, as the core takes them.
fn head(response: &ureq::http::Response<ureq::Body>) -> HttpInput {
    HttpInput::Head {
        status: response.status().as_u16(),
        headers: response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    }
}

#[cfg(test)]
#[path = "../../tests/servers/fixtures/tls/loopback.rs"]
mod loopback_tls;

#[cfg(test)]
mod tests {
    //! The pool against a loopback HTTP/1.1 server that counts the
    //! connections it accepts and holds `/slow` answers until released.

    use super::*;
    use std::io::{BufRead, BufReader, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc::Receiver;

    struct Server {
        url: String,
        accepted: Arc<AtomicUsize>,
        /// Each `/slow` request waits for one message here.
        release: Sender<()>,
    }

    fn server() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (release, released) = mpsc::channel::<()>();
        let released = Arc::new(Mutex::new(released));
        std::thread::spawn({
            let accepted = Arc::clone(&accepted);
            move || {
                for stream in listener.incoming().flatten() {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let released = Arc::clone(&released);
                    std::thread::spawn(move || serve(stream, &released));
                }
            }
        });
        Server {
            url,
            accepted,
            release,
        }
    }

    /// Answers requests on one connection, keep-alive, until it closes.
    fn serve(stream: TcpStream, released: &Mutex<Receiver<()>>) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone"));
        let mut writer = stream;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
            let mut length = 0;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 {
                    return;
                }
                if header == "\r\n" {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            if path == "/slow" {
                let _ = released.lock().map(|r| r.recv());
            }
            let answer = format!("answer to {path}");
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            if writer
                .write_all(head.as_bytes())
                .and_then(|()| writer.write_all(answer.as_bytes()))
                .is_err()
            {
                return;
            }
        }
    }

    /// A client whose inputs go to a channel, honouring aborts as the
    /// session does.
    fn client(name: &str, retire: Duration) -> (HttpClient, Receiver<(ExchangeId, HttpInput)>) {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let sink: HttpSink = Arc::new(move |exchange, aborted: &AtomicBool, input| {
            !aborted.load(Ordering::Acquire) && lock(&tx).send((exchange, input)).is_ok()
        });
        (HttpClient::with_retire(name, sink, retire), rx)
    }

    fn request(server: &Server, exchange: u64, path: &str) -> HttpRequest {
        HttpRequest {
            exchange: ExchangeId::new(exchange),
            method: rho_proto_core::http::Method::Post,
            url: format!("{}{}", server.url, path.trim_start_matches('/'))
                .parse()
                .expect("url"),
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{}".to_vec(),
        }
    }

    /// Waits for the end of `exchange`, returning the body it got.
    fn body_of(rx: &Receiver<(ExchangeId, HttpInput)>, exchange: u64) -> String {
        let mut body = Vec::new();
        loop {
            let (x, input) = rx
                .recv_timeout(Duration::from_secs(10))
                .expect("the exchange ends");
            assert_eq!(x, ExchangeId::new(exchange), "{input:?}");
            match input {
                HttpInput::Head { status, .. } => assert_eq!(status, 200),
                HttpInput::Body(bytes) => body.extend(bytes),
                HttpInput::End => return String::from_utf8(body).expect("utf-8"),
                HttpInput::Failed(e) => panic!("exchange {exchange} failed: {e}"),
            }
        }
    }

    fn started(client: &HttpClient) -> usize {
        client.pool.lock().started
    }

    fn wait_idle(client: &HttpClient, idle: usize) {
        let until = Instant::now() + Duration::from_secs(10);
        while client.pool.lock().idle.len() < idle {
            assert!(Instant::now() < until, "workers never went idle");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Threads of this process with this name.
    fn threads_named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .map(|tasks| {
                tasks
                    .flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            .is_ok_and(|comm| comm.trim_end() == name)
                    })
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn sequential_exchanges_reuse_one_worker_and_one_connection() {
        let server = server();
        let (client, rx) = client("h1", IDLE_RETIRE);
        for n in 0..20 {
            client.send(request(&server, n, "/fast")).expect("sent");
            assert_eq!(body_of(&rx, n), "answer to /fast");
            wait_idle(&client, 1);
        }
        assert_eq!(started(&client), 1, "one worker for every exchange");
        assert_eq!(
            server.accepted.load(Ordering::SeqCst),
            1,
            "one keep-alive connection for every exchange"
        );
        client.shutdown();
    }

    #[test]
    fn a_slow_exchange_does_not_hold_up_another() {
        let server = server();
        let (client, rx) = client("h2", IDLE_RETIRE);
        client.send(request(&server, 1, "/slow")).expect("sent");
        client.send(request(&server, 2, "/fast")).expect("sent");
        assert_eq!(
            body_of(&rx, 2),
            "answer to /fast",
            "not behind the slow one"
        );
        server.release.send(()).expect("release");
        assert_eq!(body_of(&rx, 1), "answer to /slow");
        assert_eq!(started(&client), 2);
        client.shutdown();
    }

    #[test]
    fn beyond_the_bound_exchanges_queue_and_an_abort_frees_a_place() {
        let server = server();
        let (client, rx) = client("h3", IDLE_RETIRE);
        for n in 0..MAX_WORKERS as u64 {
            client.send(request(&server, n, "/slow")).expect("sent");
        }
        let queued = MAX_WORKERS as u64;
        client
            .send(request(&server, queued, "/fast"))
            .expect("sent");
        assert_eq!(started(&client), MAX_WORKERS);
        assert_eq!(client.pool.lock().queue.len(), 1, "the last one queues");
        // Aborting a slow one frees its place at once, before its read ends.
        client.abort(ExchangeId::new(0));
        assert_eq!(body_of(&rx, queued), "answer to /fast");
        assert_eq!(started(&client), MAX_WORKERS + 1);
        for _ in 0..MAX_WORKERS {
            server.release.send(()).expect("release");
        }
        let mut ended = Vec::new();
        while ended.len() < MAX_WORKERS - 1 {
            let (x, input) = rx.recv_timeout(Duration::from_secs(10)).expect("ends");
            assert_ne!(
                x,
                ExchangeId::new(0),
                "nothing of an aborted exchange: {input:?}"
            );
            if matches!(input, HttpInput::End) {
                ended.push(x);
            }
        }
        client.shutdown();
    }

    /// A server that holds every request open: it answers nothing (`json`
    /// style, the head comes with the answer) or a stream's head and first
    /// event, then reads until the client closes, and says so on the
    /// channel. Each connection's first request only.
    fn holding_server(stream_head: bool) -> (String, Receiver<&'static str>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let url = format!("http://{}/", listener.local_addr().expect("address"));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                    let mut writer = stream;
                    let mut line = String::new();
                    while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                        line.clear();
                    }
                    // The request's `{}` body.
                    let _ = reader.read_exact(&mut [0; 2]);
                    if stream_head {
                        let _ = writer.write_all(
                            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                              transfer-encoding: chunked\r\n\r\nb\r\ndata: {}\n\n\r\n",
                        );
                    }
                    let _ = tx.send("holding");
                    // Returns 0 (FIN) or fails (reset) once the client goes.
                    let _ = reader.read(&mut [0; 64]);
                    let _ = tx.send("closed");
                });
            }
        });
        (url, rx)
    }

    fn aborting_closes_the_connection(stream_head: bool) {
        let (url, seen) = holding_server(stream_head);
        let (client, rx) = client(if stream_head { "h5" } else { "h6" }, IDLE_RETIRE);
        let request = |n| HttpRequest {
            exchange: ExchangeId::new(n),
            method: rho_proto_core::http::Method::Post,
            url: url.parse().expect("url"),
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{}".to_vec(),
        };
        client.send(request(1)).expect("sent");
        assert_eq!(seen.recv_timeout(Duration::from_secs(10)), Ok("holding"));
        if stream_head {
            // The head and the first event reach the session.
            let (_, head) = rx.recv_timeout(Duration::from_secs(10)).expect("head");
            assert!(
                matches!(head, HttpInput::Head { status: 200, .. }),
                "{head:?}"
            );
        }
        let aborted = Instant::now();
        client.abort(ExchangeId::new(1));
        assert_eq!(
            seen.recv_timeout(Duration::from_secs(2)),
            Ok("closed"),
            "the server sees the client go at once, not when it answers"
        );
        assert!(aborted.elapsed() < Duration::from_secs(1));
        // The worker rejoins the pool with a fresh agent and carries on.
        wait_idle(&client, 1);
        assert_eq!(started(&client), 1, "the same worker");
        while let Ok((x, input)) = rx.try_recv() {
            assert!(
                matches!(input, HttpInput::Body(_)),
                "nothing but the event before the abort: {x:?} {input:?}"
            );
        }
        client.send(request(2)).expect("sent");
        assert_eq!(seen.recv_timeout(Duration::from_secs(10)), Ok("holding"));
        client.shutdown();
        assert_eq!(
            seen.recv_timeout(Duration::from_secs(2)),
            Ok("closed"),
            "shutdown closes a held connection too"
        );
    }

    #[test]
    fn an_abort_before_the_answer_closes_the_connection_at_once() {
        aborting_closes_the_connection(false);
    }

    #[test]
    fn an_abort_of_a_stream_that_goes_on_closes_the_connection_at_once() {
        aborting_closes_the_connection(true);
    }

    #[test]
    fn extra_workers_retire_when_idle_and_shutdown_joins_the_rest() {
        let server = server();
        let (client, rx) = client("h4", Duration::from_millis(100));
        for n in 0..4 {
            client.send(request(&server, n, "/slow")).expect("sent");
        }
        for _ in 0..4 {
            server.release.send(()).expect("release");
        }
        let mut ended = 0;
        while ended < 4 {
            let (_, input) = rx.recv_timeout(Duration::from_secs(10)).expect("input");
            ended += usize::from(matches!(input, HttpInput::End));
        }
        assert_eq!(started(&client), 4);
        wait_idle(&client, 1);
        let until = Instant::now() + Duration::from_secs(10);
        while threads_named("rho-mcp-h4-http") > 1 {
            assert!(Instant::now() < until, "idle workers never retired");
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(client.pool.lock().counted, 1, "the last idle worker stays");
        client.shutdown();
        assert_eq!(threads_named("rho-mcp-h4-http"), 0, "every worker joined");
    }

    /// A loopback TLS server for one handshake ([`super::loopback_tls`]); its
    /// address.
    fn tls_server() -> std::net::SocketAddr {
        super::loopback_tls::serve_one_handshake().0
    }

    #[test]
    fn a_certificate_no_trusted_root_vouches_for_fails_as_an_unknown_issuer() {
        let at = tls_server();
        // No roots at all, whatever this system trusts.
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(Vec::<ureq::tls::Certificate<'static>>::new().into())
            .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .build();
        let agent: ureq::Agent = agent_config().tls_config(tls).build().into();
        let request = HttpRequest {
            exchange: ExchangeId::new(0),
            method: rho_proto_core::http::Method::Post,
            url: format!("https://{at}/mcp").parse().expect("url"),
            headers: Vec::new(),
            body: b"{}".to_vec(),
        };
        let failure = start(&agent, request).expect_err("the handshake fails");
        assert_eq!(failure.kind, HttpFailureKind::UnknownIssuer, "{failure}");
    }

    /// Loading the platform's roots costs 10–35 ms: a session of plain
    /// `http` exchanges never builds the TLS configuration, and the first
    /// `https` exchange does (its idle plain worker takes a TLS agent).
    #[test]
    fn roots_are_loaded_only_when_an_https_exchange_needs_them() {
        let server = server();
        let (client, rx) = client("tls-lazy", IDLE_RETIRE);
        for n in 0..3 {
            client.send(request(&server, n, "/plain")).expect("sent");
            assert_eq!(body_of(&rx, n), "answer to /plain");
        }
        assert!(client.pool.tls.get().is_none(), "plain http built TLS");
        wait_idle(&client, 1);
        let workers = started(&client);
        let at = tls_server();
        let mut https = request(&server, 9, "/mcp");
        https.url = format!("https://{at}/mcp").parse().expect("url");
        client.send(https).expect("sent");
        let (x, input) = rx.recv_timeout(Duration::from_secs(10)).expect("an answer");
        assert_eq!(x, ExchangeId::new(9));
        // The test CA is no platform root: the handshake is refused, which
        // shows the exchange spoke TLS.
        assert!(
            matches!(&input, HttpInput::Failed(f) if f.kind == HttpFailureKind::UnknownIssuer),
            "{input:?}"
        );
        assert!(client.pool.tls.get().is_some(), "https built TLS");
        assert_eq!(started(&client), workers, "an idle worker took it");
        client.shutdown();
    }

    #[test]
    fn a_connection_refused_is_no_certificate_problem() {
        let at = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let request = HttpRequest {
            exchange: ExchangeId::new(0),
            method: rho_proto_core::http::Method::Post,
            url: format!("http://{at}/mcp").parse().expect("url"),
            headers: Vec::new(),
            body: b"{}".to_vec(),
        };
        let failure = start(&new_agent(), request).expect_err("nothing listens");
        assert_eq!(failure.kind, HttpFailureKind::Other, "{failure}");
    }
}
