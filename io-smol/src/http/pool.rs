//! One session's HTTP/1.1 connections: opened on demand up to a bound,
//! handed to one exchange at a time, and given back for reuse only when
//! that exchange read its response to the end and the server did not ask
//! to close. A connection an exchange drops mid-response (an abort, an
//! error) is closed with it, at once. hyper's connection future runs as its own
//! task on the session's executor, held by the connection, so closing a
//! connection is dropping it.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use event_listener::Event;
use futures_rustls::TlsConnector;
use futures_rustls::client::TlsStream;
use futures_rustls::pki_types::ServerName;
use futures_rustls::rustls::{self, ClientConfig, RootCertStore};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::{Builder, SendRequest};
use hyper::{Request, Response};
use rho_proto_core::http::{HttpFailure, HttpFailureKind};
use smol::io::{AsyncRead, AsyncWrite};
use smol::net::TcpStream;
use smol::{Async, Executor, Task, Timer};
use url::{Host, Url};

use super::{CONNECT_TIMEOUT, MAX_HEAD, SEND_TIMEOUT};

/// The request body type: the core hands over whole bodies.
type Body = Full<Bytes>;

/// Where a connection goes: scheme, host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    https: bool,
    host: Target,
    port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    Ip(IpAddr),
    Name(String),
}

impl Origin {
    /// The origin of an `http` or `https` URL.
    pub(crate) fn of(url: &Url) -> Result<Self, String> {
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => return Err(format!("unsupported URL scheme `{other}`")),
        };
        let host = match url.host() {
            Some(Host::Domain(name)) => Target::Name(name.to_owned()),
            Some(Host::Ipv4(ip)) => Target::Ip(ip.into()),
            Some(Host::Ipv6(ip)) => Target::Ip(ip.into()),
            None => return Err("the URL has no host".into()),
        };
        let port = url
            .port_or_known_default()
            .ok_or_else(|| "the URL has no port".to_owned())?;
        Ok(Self { https, host, port })
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Target::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            Target::Ip(ip) => write!(f, "{ip}:{}", self.port),
            Target::Name(name) => write!(f, "{name}:{}", self.port),
        }
    }
}

/// An open connection, owned by one exchange or idle in the pool.
pub(crate) struct Conn {
    sender: SendRequest<Body>,
    /// hyper's connection future; dropping it closes the socket.
    _driver: Task<()>,
    _slot: Slot,
}

/// How long opening and writing may take.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeouts {
    pub(crate) connect: Duration,
    pub(crate) send: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: CONNECT_TIMEOUT,
            send: SEND_TIMEOUT,
        }
    }
}

/// A session's connections.
pub(crate) struct Pool {
    executor: Arc<Executor<'static>>,
    slots: Arc<Slots>,
    idle: Mutex<Vec<(Origin, Conn)>>,
    max_idle: usize,
    timeouts: Timeouts,
}

impl Pool {
    /// A pool opening at most `max_open` connections and keeping at most
    /// `max_idle` of them idle.
    pub(crate) fn new(
        executor: &Arc<Executor<'static>>,
        (max_open, max_idle): (usize, usize),
        timeouts: Timeouts,
    ) -> Self {
        Self {
            executor: Arc::clone(executor),
            slots: Arc::new(Slots {
                open: AtomicUsize::new(0),
                limit: max_open.max(1),
                freed: Event::new(),
            }),
            idle: Mutex::new(Vec::new()),
            max_idle,
            timeouts,
        }
    }

    /// Connections open now, in use or idle.
    #[cfg(test)]
    pub(crate) fn open(&self) -> usize {
        self.slots.open.load(Ordering::Acquire)
    }

    /// Closes every idle connection.
    pub(crate) fn clear(&self) {
        let idle = std::mem::take(&mut *self.idle());
        drop(idle);
    }

    /// Gives a connection whose exchange read its response to the end
    /// back for reuse.
    pub(crate) fn put(&self, origin: Origin, conn: Conn) {
        if conn.sender.is_closed() || self.max_idle == 0 {
            return;
        }
        let evicted = {
            let mut idle = self.idle();
            let evicted = (idle.len() >= self.max_idle).then(|| idle.remove(0));
            idle.push((origin, conn));
            evicted
        };
        drop(evicted);
        self.slots.freed.notify(usize::MAX);
    }

    /// Sends `request` on an idle connection to `origin` or a new one, and
    /// waits for the response head. A kept-alive connection the server
    /// closed before it took the request is retried on another.
    pub(crate) async fn send(
        &self,
        origin: &Origin,
        mut request: Request<Body>,
    ) -> Result<(Conn, Response<Incoming>), HttpFailure> {
        loop {
            let (mut conn, reused) = self.checkout(origin).await?;
            if let Err(e) = conn.sender.ready().await {
                if reused {
                    continue;
                }
                return Err(HttpFailure::other(describe(&e)));
            }
            match conn.sender.try_send_request(request).await {
                Ok(response) => return Ok((conn, response)),
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(HttpFailure::other(describe(&e.into_error()))),
                },
            }
        }
    }

    /// An idle connection to `origin`, or a new one once the bound allows.
    async fn checkout(&self, origin: &Origin) -> Result<(Conn, bool), HttpFailure> {
        loop {
            if let Some(conn) = self.take_idle(origin) {
                return Ok((conn, true));
            }
            if let Some(slot) = self.slots.take() {
                return self.connect(origin, slot).await.map(|conn| (conn, false));
            }
            // At the bound: an idle connection elsewhere makes room.
            if self.evict_idle() {
                continue;
            }
            let freed = self.slots.freed.listen();
            if self.slots.has_room() || self.has_idle(origin) {
                continue;
            }
            freed.await;
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(Origin, Conn)>> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take_idle(&self, origin: &Origin) -> Option<Conn> {
        let mut idle = self.idle();
        while let Some(at) = idle.iter().rposition(|(o, _)| o == origin) {
            let (_, conn) = idle.remove(at);
            if !conn.sender.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    fn has_idle(&self, origin: &Origin) -> bool {
        self.idle().iter().any(|(o, _)| o == origin)
    }

    fn evict_idle(&self) -> bool {
        let evicted = {
            let mut idle = self.idle();
            (!idle.is_empty()).then(|| idle.remove(0))
        };
        evicted.is_some()
    }

    async fn connect(&self, origin: &Origin, slot: Slot) -> Result<Conn, HttpFailure> {
        let limit = self.timeouts.connect;
        let opened = smol::future::or(open(origin, self.timeouts.send), async {
            Timer::after(limit).await;
            Err(HttpFailure::other(format!(
                "connecting to {origin} timed out after {} s",
                limit.as_secs_f64()
            )))
        })
        .await?;
        let (sender, connection) = Builder::new()
            .max_header_size(MAX_HEAD)
            .max_buf_size(MAX_HEAD)
            .handshake(opened)
            .await
            .map_err(|e| HttpFailure::other(describe(&e)))?;
        let driver = self.executor.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("HTTP connection ended: {}", describe(&e));
            }
        });
        Ok(Conn {
            sender,
            _driver: driver,
            _slot: slot,
        })
    }
}

/// The count of open connections against the bound.
struct Slots {
    open: AtomicUsize,
    limit: usize,
    /// Notified when a connection closes or goes idle.
    freed: Event,
}

impl Slots {
    fn take(self: &Arc<Self>) -> Option<Slot> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.limit).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(self)))
    }

    fn has_room(&self) -> bool {
        self.open.load(Ordering::Acquire) < self.limit
    }
}

/// One open connection's place under the bound; given back on drop.
struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
        self.0.freed.notify(usize::MAX);
    }
}

/// Resolves, connects and, for `https`, runs the TLS handshake.
async fn open(origin: &Origin, send: Duration) -> Result<Stream, HttpFailure> {
    let tcp = match &origin.host {
        Target::Ip(ip) => TcpStream::connect(SocketAddr::new(*ip, origin.port)).await,
        Target::Name(name) => TcpStream::connect((name.as_str(), origin.port)).await,
    }
    .map_err(|e| HttpFailure::other(format!("connecting to {origin}: {e}")))?;
    // Requests are small and answered at once: do not wait to coalesce.
    let _ = tcp.set_nodelay(true);
    let tcp = Tcp::new(tcp);
    let io = if origin.https {
        let name = match &origin.host {
            Target::Ip(ip) => ServerName::IpAddress((*ip).into()),
            Target::Name(name) => ServerName::try_from(name.clone())
                .map_err(|e| HttpFailure::other(format!("TLS with {origin}: {e}")))?,
        };
        let tls = TlsConnector::from(tls_config().map_err(HttpFailure::other)?)
            .connect(name, tcp)
            .await
            .map_err(|e| HttpFailure::new(handshake_kind(&e), format!("TLS with {origin}: {e}")))?;
        Inner::Tls(Box::new(tls))
    } else {
        Inner::Plain(tcp)
    };
    Ok(Stream::new(io, send))
}

/// The process's rustls client configuration: ring, the platform's roots,
/// HTTP/1.1 by ALPN. Loaded once; a failure is remembered too.
fn tls_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "no trusted root certificates were found on this system{}{}",
                    if why.is_empty() { "" } else { ": " },
                    why.join("; ")
                ));
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

/// What a failed TLS handshake says of the server's certificate: rustls'
/// own error travels inside the `io::Error` the handshake fails with.
fn handshake_kind(error: &io::Error) -> HttpFailureKind {
    match error
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            HttpFailureKind::UnknownIssuer
        }
        Some(rustls::Error::InvalidCertificate(_)) => HttpFailureKind::InvalidCertificate,
        _ => HttpFailureKind::Other,
    }
}

/// An error with its causes, as one line.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

enum Inner {
    Plain(Tcp),
    Tls(Box<TlsStream<Tcp>>),
}

/// A TCP socket on the reactor that reads only when a read can find
/// something: once a read found the socket empty, the next one waits for
/// the reactor's word that it is readable instead of asking the kernel
/// again. async-io's own `poll_read` tries the `recv` first every time,
/// and hyper polls its connection's read side several times per exchange
/// without new data in between (after the body, when the connection goes
/// idle, before the next request): three empty `recvfrom` calls per call
/// on loopback, gone here.
struct Tcp {
    io: Arc<Async<std::net::TcpStream>>,
    /// The last read found nothing and the reactor has not said since
    /// that more arrived.
    drained: bool,
}

impl Tcp {
    fn new(stream: TcpStream) -> Self {
        Self {
            io: stream.into(),
            drained: false,
        }
    }
}

impl AsyncRead for Tcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        use std::io::Read as _;
        let this = self.get_mut();
        loop {
            if this.drained {
                match this.io.poll_readable(cx) {
                    Poll::Ready(Ok(())) => this.drained = false,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
            match this.io.get_ref().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => this.drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                done => return Poll::Ready(done),
            }
        }
    }
}

impl AsyncWrite for Tcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self.io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &*self.io).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut &*self.io).poll_close(cx)
    }
}

/// A connection's byte stream, in hyper's IO traits. A write that stays
/// pending for the send timeout fails; reads never time out.
///
/// hyper hands a read its buffer's spare room uninitialized, and futures-io
/// reads want initialized bytes; smol-hyper's adapter zeroed all of that
/// room (8 KiB and up) on every poll, a pending one included: 30% of an
/// HTTP call's instructions on loopback. A read here lands in `scratch`,
/// zeroed once, and only what arrived is copied on. The scratch doubles
/// when a read fills it, up to [`SCRATCH_MAX`], so a large body still
/// comes in large reads.
struct Stream {
    io: Inner,
    send: Duration,
    /// Armed while a write is pending.
    stall: Option<Timer>,
    scratch: Vec<u8>,
}

/// A connection's first read size.
const SCRATCH_START: usize = 8 * 1024;
/// The most a connection reads at once.
const SCRATCH_MAX: usize = 64 * 1024;

impl Stream {
    fn new(io: Inner, send: Duration) -> Self {
        Self {
            io,
            send,
            stall: None,
            scratch: vec![0; SCRATCH_START],
        }
    }

    fn pending_write<T>(
        &mut self,
        polled: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        if polled.is_ready() {
            self.stall = None;
            return polled;
        }
        let limit = self.send;
        let timer = self.stall.get_or_insert_with(|| Timer::after(limit));
        if Pin::new(timer).poll(cx).is_ready() {
            self.stall = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "sending the request made no progress for {} s",
                    limit.as_secs_f64()
                ),
            )));
        }
        Poll::Pending
    }
}

impl hyper::rt::Read for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let room = buf.remaining().min(this.scratch.len());
        let into = &mut this.scratch[..room];
        let polled = match &mut this.io {
            Inner::Plain(s) => Pin::new(s).poll_read(cx, into),
            Inner::Tls(s) => Pin::new(&mut **s).poll_read(cx, into),
        };
        let n = match polled {
            Poll::Ready(Ok(n)) => n,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        };
        buf.put_slice(&this.scratch[..n]);
        if n == this.scratch.len() && n < SCRATCH_MAX {
            this.scratch.resize(n * 2, 0);
        }
        Poll::Ready(Ok(()))
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = match &mut this.io {
            Inner::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Inner::Tls(s) => Pin::new(&mut **s).poll_write(cx, buf),
        };
        this.pending_write(polled, cx)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = match &mut this.io {
            Inner::Plain(s) => Pin::new(s).poll_flush(cx),
            Inner::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        };
        this.pending_write(polled, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.io {
            Inner::Plain(s) => Pin::new(s).poll_close(cx),
            Inner::Tls(s) => Pin::new(&mut **s).poll_close(cx),
        }
    }
}

#[cfg(test)]
#[path = "../../../tests/servers/fixtures/tls/loopback.rs"]
mod loopback_tls;

#[cfg(test)]
mod tests {
    use super::*;
    use smol::io::AsyncReadExt as _;
    use std::io::Write as _;

    /// A connected pair: ours on the reactor, the peer plain.
    fn pair() -> (Tcp, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let at = listener.local_addr().expect("addr");
        let ours = smol::block_on(TcpStream::connect(at)).expect("connect");
        let (peer, _) = listener.accept().expect("accept");
        (Tcp::new(ours), peer)
    }

    /// Polls a read once with a waker that does nothing.
    fn poll_once(tcp: &mut Tcp, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        Pin::new(tcp).poll_read(&mut cx, buf)
    }

    #[test]
    fn a_read_after_an_empty_one_waits_for_the_reactor_and_gets_what_arrived() {
        let (mut tcp, mut peer) = pair();
        let mut buf = [0u8; 64];
        assert!(poll_once(&mut tcp, &mut buf).is_pending());
        assert!(tcp.drained, "the empty read is remembered");
        // Polled again with nothing new: still pending, still drained.
        assert!(poll_once(&mut tcp, &mut buf).is_pending());
        assert!(tcp.drained);
        peer.write_all(b"hello").expect("write");
        let n = smol::block_on(async {
            smol::future::or(async { tcp.read(&mut buf).await.expect("read") }, async {
                Timer::after(Duration::from_secs(10)).await;
                panic!("the data that arrived was never read");
            })
            .await
        });
        assert_eq!(&buf[..n], b"hello");
        assert!(!tcp.drained);
    }

    /// The kind of the failure a TLS handshake with a loopback server
    /// ends in, whose certificate (for 127.0.0.1) the test CA issued: the
    /// client trusts `roots` and expects the certificate to name `name`.
    fn handshake_failure(roots: RootCertStore, name: &str) -> HttpFailureKind {
        let (at, serving) = super::loopback_tls::serve_one_handshake();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = ServerName::try_from(name.to_owned()).expect("name");
        let error = smol::block_on(async {
            let tcp = TcpStream::connect(at).await.expect("connect");
            TlsConnector::from(Arc::new(client))
                .connect(name, tcp)
                .await
                .expect_err("the handshake fails")
        });
        serving.join().expect("the server thread");
        handshake_kind(&error)
    }

    #[test]
    fn a_certificate_no_trusted_root_vouches_for_is_an_unknown_issuer() {
        let kind = handshake_failure(RootCertStore::empty(), "localhost");
        assert_eq!(kind, HttpFailureKind::UnknownIssuer);
    }

    #[test]
    fn a_trusted_certificate_for_another_name_is_invalid_but_not_an_unknown_issuer() {
        use futures_rustls::pki_types::CertificateDer;
        use futures_rustls::pki_types::pem::PemObject;
        let ca = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/servers/fixtures/tls/ca.pem");
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_file(ca).expect("the test CA"))
            .expect("a root");
        let kind = handshake_failure(roots, "mcp.example");
        assert_eq!(kind, HttpFailureKind::InvalidCertificate);
        let plain = io::Error::new(io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(handshake_kind(&plain), HttpFailureKind::Other);
    }

    #[test]
    fn the_end_of_the_stream_after_an_empty_read_is_a_zero_read() {
        let (mut tcp, peer) = pair();
        let mut buf = [0u8; 64];
        assert!(poll_once(&mut tcp, &mut buf).is_pending());
        drop(peer);
        let n = smol::block_on(async {
            smol::future::or(async { tcp.read(&mut buf).await.expect("read") }, async {
                Timer::after(Duration::from_secs(10)).await;
                panic!("the close was never seen");
            })
            .await
        });
        assert_eq!(n, 0);
    }
}
