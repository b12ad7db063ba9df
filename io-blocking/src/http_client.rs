//! The HTTP half of the executors: make the requests the core asks
//! for with ureq, one thread per exchange, and stream each response back
//! to the driver as head, body chunks, end or failure.
//!
//! ureq is configured to never follow a redirect, to hand back every status
//! instead of turning 4xx/5xx into errors, and to decompress nothing, so
//! SSE bytes arrive as the server sent them. Connect and send have
//! timeouts; reading a body does not, because a stream may legitimately
//! stay open for the whole session: the core's deadlines bound every
//! request, and an exchange the core gives up on is aborted.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::Duration;

use rho_proto_core::config::check_url_policy;
use rho_proto_core::connection::HttpInput;
use rho_proto_core::http::{ExchangeId, HttpRequest};

use rho_proto_core::backlog::{BACKLOG_POLL, BODY_IN_FLIGHT, Backlog};

/// Connect timeout for every request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Timeout for sending a request's head and body.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Read size for response bodies.
const CHUNK: usize = 16 * 1024;

/// Runs exchanges on threads and reports back through a channel.
pub(crate) struct HttpClient<E> {
    agent: ureq::Agent,
    events: Sender<E>,
    wrap: fn(ExchangeId, HttpInput) -> E,
    aborted: BTreeMap<ExchangeId, Arc<AtomicBool>>,
    /// Body bytes handed to the driver and not yet handled.
    bodies: Arc<Backlog>,
}

impl<E: Send + 'static> HttpClient<E> {
    /// A client whose reports go to `events`, wrapped by `wrap`.
    pub(crate) fn new(events: Sender<E>, wrap: fn(ExchangeId, HttpInput) -> E) -> Self {
        Self {
            agent: new_agent(),
            events,
            wrap,
            aborted: BTreeMap::new(),
            bodies: Arc::default(),
        }
    }

    /// The driver handled an input of this client: a body chunk's bytes
    /// no longer count against [`BODY_IN_FLIGHT`].
    pub(crate) fn handled(&self, input: &HttpInput) {
        if let HttpInput::Body(chunk) = input {
            self.bodies.remove(chunk.len());
        }
    }

    /// Starts an exchange.
    pub(crate) fn send(&mut self, request: HttpRequest) {
        let exchange = request.exchange;
        let flag = Arc::new(AtomicBool::new(false));
        self.aborted.insert(exchange, Arc::clone(&flag));
        let agent = self.agent.clone();
        let events = self.events.clone();
        let wrap = self.wrap;
        let bodies = Arc::clone(&self.bodies);
        let spawned = std::thread::Builder::new()
            .name(format!("rho-mcp-http-{}", exchange.0))
            .spawn(move || {
                run_exchange_bounded(&agent, request, (&flag, &bodies), |e| {
                    events.send(wrap(exchange, e)).is_ok()
                })
            });
        if let Err(e) = spawned {
            let _ = self.events.send(wrap(
                exchange,
                HttpInput::Failed(format!("could not start a thread: {e}")),
            ));
        }
    }

    /// Stops reporting on an exchange; its thread ends at its next read.
    pub(crate) fn abort(&mut self, exchange: ExchangeId) {
        if let Some(flag) = self.aborted.remove(&exchange) {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Aborts every exchange (at shutdown).
    pub(crate) fn abort_all(&mut self) {
        self.bodies.close();
        for (_, flag) in std::mem::take(&mut self.aborted) {
            flag.store(true, Ordering::Relaxed);
        }
    }
}

/// The ureq agent every exchange uses: no redirects, statuses as data,
/// connect and send timeouts, no body timeout.
pub fn new_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_send_request(Some(SEND_TIMEOUT))
        .timeout_send_body(Some(SEND_TIMEOUT))
        .build()
        .into()
}

/// Performs one exchange, blocking, and reports what happens to it through
/// `report` until the body ends, fails, `report` returns `false`, or
/// `aborted` is set. For a caller that consumes each chunk as it is
/// reported; a session's driver uses [`run_exchange_bounded`].
pub fn run_exchange(
    agent: &ureq::Agent,
    request: HttpRequest,
    aborted: &AtomicBool,
    report: impl FnMut(HttpInput) -> bool,
) {
    run_exchange_bounded(agent, request, (aborted, &Backlog::unlimited()), report);
}

/// Like [`run_exchange`], with the body bytes reported added to `bodies`
/// (the session's, which its driver takes them off once handled); the
/// body is not read further while more than [`BODY_IN_FLIGHT`] bytes wait
/// there. Shared by both executors (the smol one runs it on its blocking
/// pool), so HTTP behaves the same on each.
pub fn run_exchange_bounded(
    agent: &ureq::Agent,
    request: HttpRequest,
    (aborted, bodies): (&AtomicBool, &Backlog),
    mut report: impl FnMut(HttpInput) -> bool,
) {
    // Defence in depth: the core only ever asks for the configured URL,
    // which passed this policy when the config was read.
    if let Err(e) = check_url_policy(&request.url) {
        report(HttpInput::Failed(e));
        return;
    }
    let mut builder = ureq::http::Request::builder()
        .method(request.method.as_str())
        .uri(request.url.as_str());
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let built = match builder.body(request.body) {
        Ok(built) => built,
        Err(e) => {
            report(HttpInput::Failed(format!("invalid request: {e}")));
            return;
        }
    };
    let response = match agent.run(built) {
        Ok(response) => response,
        Err(e) => {
            report(HttpInput::Failed(e.to_string()));
            return;
        }
    };
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    if aborted.load(Ordering::Relaxed)
        || !report(HttpInput::Head {
            status: response.status().as_u16(),
            headers,
        })
    {
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
            Err(e) => HttpInput::Failed(e.to_string()),
        };
        let last = !matches!(event, HttpInput::Body(_));
        if aborted.load(Ordering::Relaxed) || !report(event) || last {
            return;
        }
    }
}
