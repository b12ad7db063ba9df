//! The client against loopback servers written here, which count the
//! connections they accept and see close: reuse, concurrency, closing,
//! and each way an exchange fails.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use rho_proto_core::connection::HttpInput;
use rho_proto_core::http::{ExchangeId, HttpRequest, Method};
use rho_proto_core::runtime::backlog::BODY_IN_FLIGHT;
use smol::{Executor, Timer};

use super::pool::Timeouts;
use super::{BODY_PIECE, HttpIo, MAX_CONNECTIONS, MAX_HEAD, MAX_IDLE};
use crate::driver::Input;

/// How long a test waits for something that should happen.
const PATIENCE: Duration = Duration::from_secs(10);

/// A loopback server: one thread per connection, reading requests and
/// letting `respond` answer each on the stream; `respond` returns whether
/// to keep the connection open for another request.
struct Server {
    port: u16,
    accepted: Arc<AtomicUsize>,
    closed: Arc<AtomicUsize>,
}

fn serve(respond: impl Fn(&str, &mut TcpStream) -> bool + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let closed = Arc::new(AtomicUsize::new(0));
    let respond = Arc::new(respond);
    let (a, c) = (Arc::clone(&accepted), Arc::clone(&closed));
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            a.fetch_add(1, Ordering::SeqCst);
            let (respond, closed) = (Arc::clone(&respond), Arc::clone(&c));
            thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                while let Some(head) = read_request(&mut reader) {
                    if !respond(&head, &mut stream) {
                        break;
                    }
                }
                closed.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    Server {
        port,
        accepted,
        closed,
    }
}

/// Reads one request (head and `content-length` body); `None` once the
/// client closed the connection.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(head)
}

fn ok(stream: &mut TcpStream, body: &str) -> bool {
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).is_ok()
}

fn on_executor<F: Future>(test: impl FnOnce(Arc<Executor<'static>>) -> F) -> F::Output {
    let executor = Arc::new(Executor::new());
    smol::block_on(executor.run(test(Arc::clone(&executor))))
}

/// What one exchange reported.
#[derive(Debug, Default)]
struct Seen {
    status: Option<u16>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// `Ok` for the end, the failure otherwise.
    outcome: Option<Result<(), String>>,
}

/// An [`HttpIo`] and the session end of its channel.
struct Client {
    io: HttpIo,
    inputs: crate::inbox::Inbox<Input>,
    next: u64,
    seen: BTreeMap<ExchangeId, Seen>,
}

impl Client {
    fn new(executor: &Arc<Executor<'static>>) -> Self {
        Self::with(executor, (MAX_CONNECTIONS, MAX_IDLE), Timeouts::default())
    }

    fn with(
        executor: &Arc<Executor<'static>>,
        connections: (usize, usize),
        timeouts: Timeouts,
    ) -> Self {
        let (tx, inputs) = crate::inbox::inbox();
        Self {
            io: HttpIo::with_limits(executor, tx, connections, timeouts),
            inputs,
            next: 0,
            seen: BTreeMap::new(),
        }
    }

    fn send(&mut self, method: Method, url: &str, body: Vec<u8>) -> ExchangeId {
        self.next += 1;
        let exchange = ExchangeId::new(self.next);
        self.io.send(HttpRequest {
            exchange,
            method,
            url: url::Url::parse(url).expect("url"),
            headers: vec![("content-type".into(), "application/json".into())],
            body,
        });
        exchange
    }

    fn post(&mut self, url: &str) -> ExchangeId {
        self.send(Method::Post, url, b"{}".to_vec())
    }

    /// The next input, unhandled; `None` if nothing comes for `wait`.
    async fn recv(&mut self, wait: Duration) -> Option<(ExchangeId, HttpInput)> {
        let inputs = &mut self.inputs;
        let next = smol::future::or(async { inputs.recv().await }, async {
            Timer::after(wait).await;
            None
        })
        .await?;
        match next {
            Input::Http(exchange, input) => Some((exchange, input)),
            _ => panic!("only HTTP inputs are sent"),
        }
    }

    /// Handles an input as the session does, and records it.
    fn handle(&mut self, exchange: ExchangeId, input: HttpInput) {
        self.io.handled(exchange, &input);
        let seen = self.seen.entry(exchange).or_default();
        assert!(seen.outcome.is_none(), "input after the end: {input:?}");
        match input {
            HttpInput::Head { status, headers } => {
                seen.status = Some(status);
                seen.headers = headers;
            }
            HttpInput::Body(chunk) => seen.body.extend_from_slice(&chunk),
            HttpInput::End => seen.outcome = Some(Ok(())),
            HttpInput::Failed(e) => seen.outcome = Some(Err(e.reason)),
        }
    }

    /// Handles inputs until `exchange` ends, and returns what it reported.
    async fn finish(&mut self, exchange: ExchangeId) -> Seen {
        while self.seen.get(&exchange).is_none_or(|s| s.outcome.is_none()) {
            let Some((id, input)) = self.recv(PATIENCE).await else {
                panic!("exchange {exchange:?} did not end");
            };
            self.handle(id, input);
        }
        self.seen.remove(&exchange).unwrap_or_default()
    }

    /// Handles inputs until `exchange` ends, as [`Client::finish`], and
    /// fails on an input of any other exchange: inputs come in the order
    /// they were reported, so nothing else was reported before that end.
    async fn finish_alone(&mut self, exchange: ExchangeId) -> Seen {
        while self.seen.get(&exchange).is_none_or(|s| s.outcome.is_none()) {
            let Some((id, input)) = self.recv(PATIENCE).await else {
                panic!("exchange {exchange:?} did not end");
            };
            assert_eq!(id, exchange, "reported for another exchange: {input:?}");
            self.handle(id, input);
        }
        self.seen.remove(&exchange).unwrap_or_default()
    }

    async fn failure(&mut self, exchange: ExchangeId) -> String {
        let seen = self.finish(exchange).await;
        match seen.outcome {
            Some(Err(e)) => e,
            other => panic!("expected a failure, got {other:?} after {:?}", seen.status),
        }
    }
}

/// Waits (up to [`PATIENCE`]) for `counter` to reach `n`.
async fn reaches(counter: &AtomicUsize, n: usize) -> usize {
    let until = Instant::now() + PATIENCE;
    while counter.load(Ordering::SeqCst) < n && Instant::now() < until {
        Timer::after(Duration::from_millis(5)).await;
    }
    counter.load(Ordering::SeqCst)
}

#[test]
fn sequential_exchanges_share_one_connection() {
    let server = serve(|_, s| ok(s, "fine"));
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        for _ in 0..5 {
            let exchange = client.post(&url);
            let seen = client.finish(exchange).await;
            assert_eq!(seen.status, Some(200));
            assert_eq!(seen.body, b"fine");
            assert_eq!(seen.outcome, Some(Ok(())));
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 1, "one connection");
        assert_eq!(client.io.open_connections(), 1);
        client.io.shutdown();
        assert_eq!(client.io.open_connections(), 0);
        assert_eq!(reaches(&server.closed, 1).await, 1, "closed at shutdown");
    });
}

#[test]
fn a_large_body_arrives_byte_for_byte_and_the_connection_goes_on() {
    // Larger than the biggest read, in bytes that show a misplaced copy.
    let large: String = (0..(1usize << 20) + 4321)
        .map(|i| char::from(b'a' + (i % 23) as u8))
        .collect();
    let served = large.clone();
    let server = serve(move |_, s| ok(s, &served));
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        for _ in 0..2 {
            let exchange = client.post(&url);
            let seen = client.finish(exchange).await;
            assert_eq!(seen.outcome, Some(Ok(())));
            assert_eq!(seen.body.len(), large.len());
            assert!(seen.body == large.as_bytes(), "the body changed on its way");
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 1, "one connection");
        client.io.shutdown();
    });
}

#[test]
fn a_slow_exchange_does_not_hold_up_another() {
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let server = serve(move |head, s| {
        if head.starts_with("POST /slow ") {
            let _ = released.lock().expect("lock").recv();
        }
        ok(s, "done")
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let base = format!("http://127.0.0.1:{}", server.port);
        let slow = client.post(&format!("{base}/slow"));
        let fast = client.post(&format!("{base}/fast"));
        let seen = client.finish(fast).await;
        assert_eq!(seen.outcome, Some(Ok(())));
        assert!(
            !client.seen.contains_key(&slow),
            "the slow exchange has not answered yet"
        );
        release.send(()).expect("release");
        assert_eq!(client.finish(slow).await.body, b"done");
        // Both connections are idle now; the next exchange takes one.
        let again = client.post(&format!("{base}/fast"));
        assert_eq!(client.finish(again).await.outcome, Some(Ok(())));
        assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    });
}

#[test]
fn at_the_connection_bound_an_exchange_waits_for_a_free_connection() {
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let server = serve(move |head, s| {
        if head.starts_with("POST /slow ") {
            let _ = released.lock().expect("lock").recv();
        }
        ok(s, "done")
    });
    on_executor(|ex| async move {
        let mut client = Client::with(&ex, (1, 1), Timeouts::default());
        let base = format!("http://127.0.0.1:{}", server.port);
        let slow = client.post(&format!("{base}/slow"));
        let queued = client.post(&format!("{base}/fast"));
        release.send(()).expect("release");
        // Nothing of the queued exchange came while the one connection
        // was busy: an exchange's end is reported as its connection is
        // freed, before the next exchange can use it.
        assert_eq!(client.finish(slow).await.outcome, Some(Ok(())));
        assert!(
            !client.seen.contains_key(&queued),
            "the queued exchange was answered before the busy one ended"
        );
        assert_eq!(client.finish(queued).await.outcome, Some(Ok(())));
        assert_eq!(server.accepted.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn connection_close_is_respected() {
    let server = serve(|_, s| {
        let body = "bye";
        let response = format!(
            "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let _ = s.write_all(response.as_bytes());
        false
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        for _ in 0..3 {
            let exchange = client.post(&url);
            assert_eq!(client.finish(exchange).await.body, b"bye");
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn a_redirect_is_handed_back_not_followed() {
    let target = serve(|_, s| ok(s, "target"));
    let location = format!("http://127.0.0.1:{}/elsewhere", target.port);
    let server = serve(move |_, s| {
        let response = format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\n\r\n"
        );
        s.write_all(response.as_bytes()).is_ok()
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let exchange = client.post(&format!("http://127.0.0.1:{}/mcp", server.port));
        let seen = client.finish(exchange).await;
        assert_eq!(seen.status, Some(307));
        assert!(
            seen.headers
                .iter()
                .any(|(k, v)| k == "location" && v.ends_with("/elsewhere"))
        );
        assert_eq!(seen.outcome, Some(Ok(())));
        assert_eq!(target.accepted.load(Ordering::SeqCst), 0, "not followed");
    });
}

#[test]
fn an_oversized_head_fails_the_exchange() {
    let server = serve(|_, s| {
        let huge = "x".repeat(MAX_HEAD + 1024);
        let response = format!("HTTP/1.1 200 OK\r\nx-huge: {huge}\r\ncontent-length: 0\r\n\r\n");
        let _ = s.write_all(response.as_bytes());
        false
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let exchange = client.post(&format!("http://127.0.0.1:{}/mcp", server.port));
        let error = client.failure(exchange).await;
        assert!(error.contains("too large"), "{error}");
    });
}

#[test]
fn a_refused_connection_fails_the_exchange() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let exchange = client.post(&format!("http://127.0.0.1:{port}/mcp"));
        let error = client.failure(exchange).await;
        assert!(
            error.contains(&format!("connecting to 127.0.0.1:{port}")),
            "{error}"
        );
        assert_eq!(client.io.open_connections(), 0, "the slot came back");
    });
}

#[test]
fn tls_to_a_plain_port_fails_the_exchange() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        // A plain HTTP server's answer to bytes it cannot parse.
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0; 512];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let exchange = client.post(&format!("https://127.0.0.1:{port}/mcp"));
        let error = client.failure(exchange).await;
        assert!(
            error.starts_with(&format!("TLS with 127.0.0.1:{port}")),
            "{error}"
        );
    });
}

#[test]
fn a_server_that_never_answers_the_handshake_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    let timeouts = Timeouts {
        connect: Duration::from_millis(200),
        ..Timeouts::default()
    };
    on_executor(|ex| async move {
        let mut client = Client::with(&ex, (MAX_CONNECTIONS, MAX_IDLE), timeouts);
        let exchange = client.post(&format!("https://127.0.0.1:{port}/mcp"));
        let error = client.failure(exchange).await;
        assert!(error.contains("timed out after 0.2 s"), "{error}");
    });
}

#[test]
fn a_server_that_stops_reading_the_request_fails_it() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    thread::spawn(move || {
        let held: Vec<_> = listener.incoming().collect();
        drop(held);
    });
    let timeouts = Timeouts {
        send: Duration::from_millis(200),
        ..Timeouts::default()
    };
    on_executor(|ex| async move {
        let mut client = Client::with(&ex, (MAX_CONNECTIONS, MAX_IDLE), timeouts);
        // More than any socket buffers hold.
        let body = vec![b' '; 64 * 1024 * 1024];
        let exchange = client.send(Method::Post, &format!("http://127.0.0.1:{port}/mcp"), body);
        let error = client.failure(exchange).await;
        assert!(error.contains("made no progress for 0.2 s"), "{error}");
    });
}

#[test]
fn bodies_stop_while_the_session_has_too_much_unhandled() {
    const TOTAL: usize = 8 * 1024 * 1024;
    let server = serve(|_, s| {
        let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {TOTAL}\r\n\r\n");
        if s.write_all(head.as_bytes()).is_err() {
            return false;
        }
        let chunk = vec![b'a'; 64 * 1024];
        (0..TOTAL / chunk.len()).all(|_| s.write_all(&chunk).is_ok())
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let exchange = client.post(&format!("http://127.0.0.1:{}/big", server.port));
        // Take inputs without handling them, as a session that fell behind:
        // the body comes until more than the session may hold waits (the
        // server sends far more), then stops.
        let mut unhandled = Vec::new();
        let mut bytes = 0;
        while bytes <= BODY_IN_FLIGHT {
            let Some((id, input)) = client.recv(PATIENCE).await else {
                panic!("{bytes} bytes of the body came, then nothing");
            };
            if let HttpInput::Body(chunk) = &input {
                bytes += chunk.len();
            }
            unhandled.push((id, input));
        }
        // Then no more comes. Without the bound the rest would go on
        // coming, so a quiet spell is enough to see it broken, and a
        // bound that holds cannot fail here.
        while let Some((id, input)) = client.recv(Duration::from_millis(300)).await {
            if let HttpInput::Body(chunk) = &input {
                bytes += chunk.len();
            }
            unhandled.push((id, input));
        }
        assert!(
            bytes <= BODY_IN_FLIGHT + BODY_PIECE,
            "{bytes} bytes handed over while none were handled"
        );
        for (id, input) in unhandled {
            client.handle(id, input);
        }
        let seen = client.finish(exchange).await;
        assert_eq!(seen.outcome, Some(Ok(())));
        assert_eq!(seen.body.len(), TOTAL, "the rest came once handled");
    });
}

#[test]
fn an_abort_of_a_stream_that_goes_on_closes_its_connection() {
    let server = serve(|head, s| {
        if head.starts_with("GET ") {
            // The stream stays open: the next read sees the client go.
            let _ = stream_then(s, || false);
            true
        } else {
            ok(s, "fine")
        }
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        let stream = client.send(Method::Get, &url, Vec::new());
        first_chunk(&mut client, stream).await;
        let aborted = Instant::now();
        client.io.abort(stream);
        assert_eq!(
            reaches(&server.closed, 1).await,
            1,
            "the server saw the close"
        );
        assert!(aborted.elapsed() < Duration::from_secs(1), "at once");
        assert_eq!(client.io.open_connections(), 0);
        // The next exchange needs a connection of its own, and nothing of
        // the aborted one is reported before it ends.
        let next = client.post(&url);
        assert_eq!(client.finish_alone(next).await.body, b"fine");
        assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    });
}

/// A response streamed in chunked encoding: the head and one event at
/// once, the last chunk only when `finish` yields (never if it fails).
fn stream_then(s: &mut TcpStream, finish: impl FnOnce() -> bool) -> bool {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    let event = "data: {}\n\n";
    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
    s.write_all(head.as_bytes()).is_ok()
        && s.write_all(chunk.as_bytes()).is_ok()
        && finish()
        && s.write_all(b"0\r\n\r\n").is_ok()
}

/// Handles inputs until `exchange`'s first body chunk.
async fn first_chunk(client: &mut Client, exchange: ExchangeId) {
    loop {
        let Some((id, input)) = client.recv(PATIENCE).await else {
            panic!("the stream did not start");
        };
        let body = id == exchange && matches!(input, HttpInput::Body(_));
        client.handle(id, input);
        if body {
            return;
        }
    }
}

#[test]
fn an_abort_before_the_answer_closes_the_connection() {
    let server = serve(|head, s| {
        if head.starts_with("GET ") {
            return ok(s, "fine");
        }
        // Answer nothing; return once the client has gone.
        let _ = s.read(&mut [0; 1]);
        false
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        let exchange = client.post(&url);
        assert_eq!(reaches(&server.accepted, 1).await, 1);
        let aborted = Instant::now();
        client.io.abort(exchange);
        assert_eq!(
            reaches(&server.closed, 1).await,
            1,
            "the server saw the close"
        );
        assert!(aborted.elapsed() < Duration::from_secs(1), "at once");
        assert_eq!(client.io.open_connections(), 0);
        // Nothing of the aborted exchange is reported before a later one
        // ends.
        let next = client.send(Method::Get, &url, Vec::new());
        assert_eq!(client.finish_alone(next).await.body, b"fine");
    });
}

#[test]
fn an_abort_just_before_the_last_chunk_still_closes_the_connection() {
    // An abort is the cancellation signal (2026-07-28 over HTTP): even a
    // body about to end is not read on to keep its connection.
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let server = serve(move |head, s| {
        if head.starts_with("GET ") {
            stream_then(s, || released.lock().expect("lock").recv().is_ok())
        } else {
            ok(s, "fine")
        }
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        let stream = client.send(Method::Get, &url, Vec::new());
        first_chunk(&mut client, stream).await;
        client.io.abort(stream);
        release.send(()).expect("release");
        assert_eq!(
            reaches(&server.closed, 1).await,
            1,
            "the server saw the close"
        );
        assert_eq!(client.io.open_connections(), 0, "nothing kept idle");
        // The end was not reported: nothing of the aborted exchange comes
        // before the next one ends.
        let next = client.post(&url);
        assert_eq!(client.finish_alone(next).await.body, b"fine");
        assert_eq!(
            server.accepted.load(Ordering::SeqCst),
            2,
            "a new connection"
        );
    });
}

#[test]
fn a_one_off_exchange_reads_past_the_session_budget_and_closes_its_connection() {
    // More than a session lets wait unhandled: a one-off exchange's caller
    // consumes each chunk as it comes, so nothing may hold the body up.
    let large: String = (0..BODY_IN_FLIGHT + 12345)
        .map(|i| char::from(b'a' + (i % 19) as u8))
        .collect();
    let served = large.clone();
    let server = serve(move |_, s| ok(s, &served));
    let request = HttpRequest {
        exchange: ExchangeId::new(0),
        method: Method::Get,
        url: url::Url::parse(&format!("http://127.0.0.1:{}/meta", server.port)).expect("url"),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let mut seen = Seen::default();
    super::run_exchange(request, PATIENCE, |input| {
        assert!(seen.outcome.is_none(), "input after the end: {input:?}");
        match input {
            HttpInput::Head { status, .. } => seen.status = Some(status),
            HttpInput::Body(chunk) => seen.body.extend_from_slice(&chunk),
            HttpInput::End => seen.outcome = Some(Ok(())),
            HttpInput::Failed(e) => seen.outcome = Some(Err(e.reason)),
        }
        true
    });
    assert_eq!(seen.status, Some(200));
    assert_eq!(seen.outcome, Some(Ok(())));
    assert!(seen.body == large.as_bytes(), "the body changed on its way");
    let deadline = Instant::now() + PATIENCE;
    while server.closed.load(Ordering::SeqCst) < 1 {
        assert!(Instant::now() < deadline, "the connection stayed open");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_one_off_exchange_without_an_answer_fails_when_its_time_is_up() {
    // Reads the request, then holds the connection without a word.
    let server = serve(|_, _| {
        thread::sleep(PATIENCE);
        false
    });
    let request = HttpRequest {
        exchange: ExchangeId::new(0),
        method: Method::Post,
        url: url::Url::parse(&format!("http://127.0.0.1:{}/token", server.port)).expect("url"),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: b"grant_type=client_credentials".to_vec(),
    };
    let started = Instant::now();
    let mut inputs = Vec::new();
    super::run_exchange(request, Duration::from_millis(200), |input| {
        inputs.push(input);
        true
    });
    assert!(started.elapsed() < PATIENCE, "it waited for the server");
    match inputs.as_slice() {
        [HttpInput::Failed(e)] => assert!(e.reason.contains("within 0.2 s"), "{e}"),
        other => panic!("expected one failure, got {other:?}"),
    }
}

#[test]
fn request_headers_arrive_lowercase_with_their_values_and_a_bad_value_is_refused() {
    let (tx, heads) = mpsc::channel::<String>();
    let tx = Mutex::new(tx);
    let server = serve(move |head, stream| {
        let _ = tx.lock().expect("lock").send(head.to_owned());
        ok(stream, "{}")
    });
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    on_executor(|executor| async move {
        let mut client = Client::new(&executor);
        let headers = |extra: (&str, &str)| {
            vec![
                ("Mcp-Session-Id".to_owned(), "s-1".to_owned()),
                ("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()),
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("X-Custom".to_owned(), "kept as given".to_owned()),
                (extra.0.to_owned(), extra.1.to_owned()),
            ]
        };
        let send = |client: &mut Client, extra| {
            client.next += 1;
            let exchange = ExchangeId::new(client.next);
            client.io.send(HttpRequest {
                exchange,
                method: Method::Post,
                url: url::Url::parse(&url).expect("url"),
                headers: headers(extra),
                body: b"{}".to_vec(),
            });
            exchange
        };
        let good = send(&mut client, ("Mcp-Name", "echo"));
        assert_eq!(client.finish(good).await.outcome, Some(Ok(())));
        let head = heads.recv_timeout(PATIENCE).expect("a request");
        for line in [
            "mcp-session-id: s-1\r\n",
            "mcp-protocol-version: 2025-11-25\r\n",
            "content-type: application/json\r\n",
            "x-custom: kept as given\r\n",
            "mcp-name: echo\r\n",
        ] {
            assert!(head.contains(line), "{line:?} in {head:?}");
        }
        assert!(
            head.contains(&format!("host: 127.0.0.1:{}\r\n", server.port)),
            "{head:?}"
        );
        // A value that would start a header line of its own is never sent.
        let bad = send(&mut client, ("Mcp-Name", "echo\r\nx-injected: 1"));
        let failure = client.failure(bad).await;
        assert!(failure.starts_with("invalid request"), "{failure}");
        // The next request the server sees is the one after it.
        let after = send(&mut client, ("Mcp-Name", "after"));
        assert_eq!(client.finish(after).await.outcome, Some(Ok(())));
        let head = heads.recv_timeout(PATIENCE).expect("a request");
        assert!(head.contains("mcp-name: after\r\n"), "{head:?}");
    });
}

#[test]
fn sixteen_exchanges_that_end_together_keep_their_connections_for_the_next_sixteen() {
    // Every answer waits until all sixteen requests are in, so the
    // sixteen exchanges need sixteen connections and end together.
    let all_in = Arc::new(std::sync::Barrier::new(16));
    let server = serve(move |_, s| {
        all_in.wait();
        ok(s, "{}")
    });
    on_executor(|ex| async move {
        let mut client = Client::new(&ex);
        let url = format!("http://127.0.0.1:{}/mcp", server.port);
        for round in 0..2 {
            let exchanges: Vec<ExchangeId> = (0..16).map(|_| client.post(&url)).collect();
            for exchange in exchanges {
                assert_eq!(
                    client.finish(exchange).await.outcome,
                    Some(Ok(())),
                    "round {round}"
                );
            }
        }
        assert_eq!(server.accepted.load(Ordering::SeqCst), 16);
    });
}
