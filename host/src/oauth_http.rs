//! The HTTP exchange every OAuth request of the host goes through:
//! metadata, registration, token requests, the login's probe and its
//! authorization endpoint preflight, a refresh before connecting.
//!
//! The HTTP is the runtime's own stack ([`LoginHttp`]): io-smol's
//! `run_exchange` under `--runtime smol`, so that runtime never touches
//! ureq, and io-blocking's no-redirect ureq agent under `--runtime
//! blocking`. Both follow no redirect and apply the transport's URL policy
//! and limits, and every exchange is bounded as a whole by
//! [`EXCHANGE_BOUND`]: an authorization server that accepts a connection
//! and never answers fails the login with a reason instead of stalling it.
//! A request's secrets, then its answer's tokens, are learned
//! ([`crate::secrets`]) before anything is sent or logged, so they are
//! hidden wherever a server's words go.
//!
//! A build without the `http` feature has no HTTP stack: every exchange
//! fails saying so (`LoginHttp::NotBuiltIn`). Only an HTTP server has
//! OAuth, and such a build cannot start one either.

use std::time::Duration;

use rho_proto_core::connection::HttpInput;
#[cfg(any(feature = "blocking", not(feature = "http")))]
use rho_proto_core::http::HttpFailure;
use rho_proto_core::http::{ExchangeId, HttpRequest, Method};
use url::Url;

use crate::RuntimeKind;

/// The most of an OAuth response rho reads: metadata and token answers
/// are small, and a server cannot make rho buffer more.
const MAX_BODY: usize = 1024 * 1024;

/// The longest one login exchange (connect, send, read the whole answer)
/// may take. Metadata and token answers are small and quick; this only
/// stops a server that holds a connection open without answering.
pub(crate) const EXCHANGE_BOUND: Duration = Duration::from_secs(30);

/// The HTTP stack a login's requests go through: the one of the runtime
/// the command runs on.
#[derive(Clone)]
pub(crate) enum LoginHttp {
    /// io-blocking's ureq agent, each exchange bounded as a whole by the
    /// duration.
    #[cfg(all(feature = "blocking", feature = "http"))]
    Threads(rho_io_blocking::http_client::Agent, Duration),
    /// io-smol's stack, one exchange on its own connection, bounded by the
    /// duration.
    #[cfg(all(feature = "smol", feature = "http"))]
    Smol(Duration),
    /// This build has no HTTP stack (the `http` feature is off): every
    /// exchange fails, saying so.
    #[cfg(not(feature = "http"))]
    NotBuiltIn,
}

impl LoginHttp {
    /// The stack of runtime `kind`, each exchange bounded by
    /// [`EXCHANGE_BOUND`].
    pub(crate) fn for_runtime(kind: RuntimeKind) -> Self {
        Self::bounded(kind, EXCHANGE_BOUND)
    }

    /// The stack of runtime `kind`, each exchange bounded by `within`.
    #[cfg(feature = "http")]
    pub(crate) fn bounded(kind: RuntimeKind, within: Duration) -> Self {
        match kind {
            #[cfg(feature = "smol")]
            RuntimeKind::Smol => Self::Smol(within),
            #[cfg(feature = "blocking")]
            RuntimeKind::Blocking => {
                let agent = rho_io_blocking::http_client::new_bounded_agent(within);
                Self::Threads(agent, within)
            }
        }
    }

    /// No stack, whatever the runtime: see [`LoginHttp::NotBuiltIn`].
    #[cfg(not(feature = "http"))]
    pub(crate) fn bounded(_kind: RuntimeKind, _within: Duration) -> Self {
        Self::NotBuiltIn
    }

    /// Runs `request`, reporting to `report` as the transports do.
    fn run(&self, request: HttpRequest, report: impl FnMut(HttpInput) -> bool) {
        match self {
            #[cfg(all(feature = "blocking", feature = "http"))]
            Self::Threads(agent, within) => {
                // ureq names its bound `timeout: global`; a failure at the
                // bound is told the way the smol stack tells it.
                let started = std::time::Instant::now();
                let mut report = report;
                rho_io_blocking::http_client::run_exchange(agent, request, |input| match input {
                    HttpInput::Failed(_) if started.elapsed() >= *within => {
                        report(HttpInput::Failed(HttpFailure::other(format!(
                            "no complete answer within {} s",
                            within.as_secs_f64()
                        ))))
                    }
                    input => report(input),
                })
            }
            #[cfg(all(feature = "smol", feature = "http"))]
            Self::Smol(within) => rho_io_smol::http::run_exchange(request, *within, report),
            #[cfg(not(feature = "http"))]
            Self::NotBuiltIn => {
                let mut report = report;
                report(HttpInput::Failed(HttpFailure::other(format!(
                    "{} cannot be reached: rho-host was built without its `http` feature",
                    request.url
                ))));
            }
        }
    }
}

/// One finished exchange.
pub(crate) struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The response headers, as sent.
    pub headers: Vec<(String, String)>,
    /// The whole body.
    pub body: Vec<u8>,
}

/// Sends one request and reads the whole answer (at most 1 MiB).
pub(crate) fn exchange(
    http: &LoginHttp,
    method: Method,
    url: &Url,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
) -> Result<Answer, String> {
    // Before anything is sent (or logged): its secrets, then the answer's
    // tokens, are hidden wherever a server's words go.
    crate::secrets::learn_request(&headers, &body);
    let request = HttpRequest {
        exchange: ExchangeId::new(0),
        method,
        url: url.clone(),
        headers,
        body,
    };
    let mut answer = Answer {
        status: 0,
        headers: Vec::new(),
        body: Vec::new(),
    };
    let mut failure = None;
    http.run(request, |input| match input {
        HttpInput::Head { status, headers } => {
            answer.status = status;
            answer.headers = headers;
            true
        }
        HttpInput::Body(chunk) => {
            if answer.body.len() + chunk.len() > MAX_BODY {
                failure = Some(format!("the answer from {url} is over {MAX_BODY} bytes"));
                return false;
            }
            answer.body.extend_from_slice(&chunk);
            true
        }
        HttpInput::End => false,
        HttpInput::Failed(e) => {
            failure = Some(e.reason);
            false
        }
    });
    crate::secrets::learn_answer(&answer.body);
    match failure {
        Some(e) => Err(e),
        None if answer.status == 0 => Err(format!("{url} did not answer")),
        None => Ok(answer),
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};
    use std::net::TcpListener;

    /// Runs `exchange` on its own thread so that a hang fails the test
    /// (after a minute) instead of stalling it.
    fn exchange_within_a_minute(http: LoginHttp, url: Url) -> Result<Answer, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(exchange(&http, Method::Get, &url, Vec::new(), Vec::new()));
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the exchange returned")
    }

    #[test]
    fn a_login_exchange_reads_a_whole_answer_on_either_runtimes_stack() {
        for &kind in RuntimeKind::ALL {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = listener.local_addr().expect("addr").port();
            let server = std::thread::spawn(move || {
                let (mut stream, _) = listener.accept().expect("accept");
                let mut head = Vec::new();
                let mut byte = [0u8];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let body = r#"{"issuer":"http://127.0.0.1"}"#;
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .expect("answer");
                String::from_utf8_lossy(&head).into_owned()
            });
            let url = Url::parse(&format!("http://127.0.0.1:{port}/.well-known/x")).expect("url");
            let answer = exchange_within_a_minute(LoginHttp::for_runtime(kind), url)
                .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let head = server.join().expect("server");
            assert!(
                head.starts_with("GET /.well-known/x HTTP/1.1\r\n"),
                "{kind:?}: {head}"
            );
            assert_eq!(answer.status, 200, "{kind:?}");
            assert_eq!(answer.body, br#"{"issuer":"http://127.0.0.1"}"#, "{kind:?}");
        }
    }

    #[test]
    fn a_login_exchange_with_a_server_that_never_answers_fails_at_its_bound() {
        for &kind in RuntimeKind::ALL {
            // Connections land in the backlog and are never accepted, so
            // the request goes out and no answer ever comes.
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = listener.local_addr().expect("addr").port();
            let url = Url::parse(&format!("http://127.0.0.1:{port}/token")).expect("url");
            let http = LoginHttp::bounded(kind, Duration::from_millis(300));
            let Err(error) = exchange_within_a_minute(http, url) else {
                panic!("{kind:?}: a silent server gave an answer");
            };
            assert_eq!(error, "no complete answer within 0.3 s", "{kind:?}");
            drop(listener);
        }
    }
}
