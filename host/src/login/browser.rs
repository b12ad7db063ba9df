//! A login's browser step: the authorization URL shown to a person, who
//! approves it in a browser that comes back to rho's loopback listener,
//! or fetched by rho itself when no person is needed; and how the step
//! ends ([`Ended`]). The login ([`super`]) calls [`browser_step`] when the
//! core's state machine asks for the authorization endpoint.
//!
//! The authorization endpoint is always asked first without a browser
//! (through [`crate::oauth_http`]): a server that approves at once
//! answers with the callback itself, and one that refuses the client says
//! so before a person sees its error page.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_proto_core::http::Method;
use rho_proto_core::oauth::flow::Login;
use url::Url;

use crate::oauth_http::{LoginHttp, exchange};

/// The port of the redirect URI a headless login registers
/// (`http://127.0.0.1:8976/callback`): nothing listens on it, since the
/// answer is read from the authorization endpoint's redirect itself, but
/// the URI keeps the registered loopback shape.
pub(crate) const HEADLESS_REDIRECT_PORT: u16 = 8976;

/// Shows a login's authorization URL to the person who approves it: the
/// host's UI (a terminal prints it and opens a browser; a GUI opens its
/// own view). The login then waits for the browser's callback.
pub trait AuthorizationPrompt: Send + Sync {
    /// The person must open `url` in a browser to log in to `server`.
    fn show(&self, server: &str, url: &Url);

    /// Whether the person stopped waiting for the browser (a shell's
    /// Ctrl-C): the login then ends at once with
    /// [`super::LoginError::Skipped`]. Asked about every 50 ms while the login
    /// waits.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Why a login run ended without credentials: the person stopped waiting
/// for the browser ([`AuthorizationPrompt::cancelled`]), which is no
/// failure, or it failed, saying why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The person stopped waiting ([`super::LoginError::Skipped`]).
    Skipped,
    /// The login failed (the reason, without the server's name).
    Failed(String),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Skipped => f.write_str("the person stopped waiting for the browser"),
            Ended::Failed(reason) => f.write_str(reason),
        }
    }
}

impl From<String> for Ended {
    fn from(reason: String) -> Self {
        Ended::Failed(reason)
    }
}

impl From<&str> for Ended {
    fn from(reason: &str) -> Self {
        Ended::Failed(reason.to_owned())
    }
}

/// How the browser step is taken.
pub(crate) enum Browser {
    /// Show the URL to a person (the prompt), and wait for the callback on
    /// the listener.
    Person(TcpListener, Arc<dyn AuthorizationPrompt>),
    /// Fetch the URL and read the callback from the redirect.
    Headless,
    /// No one can take it: a re-authorization that only a refresh can
    /// finish. The login stops, before any registration or browser step,
    /// as soon as the refresh failed or the server moved to another
    /// authorization server.
    Never,
}

impl Browser {
    /// A listener for a person's browser on `127.0.0.1` and an ephemeral
    /// port, and its redirect URI; `prompt` shows the person the URL.
    /// (The login itself goes through [`Browser::person_on`], with the
    /// configured port.)
    #[cfg(test)]
    pub(crate) fn person(prompt: Arc<dyn AuthorizationPrompt>) -> Result<(Self, String), String> {
        Self::person_on(prompt, None)
    }

    /// [`Browser::person`] on `port` when set (`oauth.redirect_port`: a
    /// client registered out of band with that exact redirect URI), else
    /// on a port the system picks. A port something else holds fails the
    /// login at once, naming the port and the key.
    pub(crate) fn person_on(
        prompt: Arc<dyn AuthorizationPrompt>,
        port: Option<u16>,
    ) -> Result<(Self, String), String> {
        let listener = TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).map_err(|e| match port {
            Some(port) => format!(
                "cannot listen for the login callback on 127.0.0.1:{port} (`oauth.redirect_port`): {e}; end what holds the port, or change the key along with the client's registered redirect URI"
            ),
            None => format!("cannot listen for the login callback on 127.0.0.1: {e}"),
        })?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        Ok((Self::Person(listener, prompt), redirect_uri(port)))
    }
}

/// The redirect URI a login registers before it knows its browser step:
/// on `oauth.redirect_port` when set, else on [`HEADLESS_REDIRECT_PORT`].
pub(crate) fn configured_redirect_uri(port: Option<u16>) -> String {
    redirect_uri(port.unwrap_or(HEADLESS_REDIRECT_PORT))
}

/// The loopback redirect URI for `port`.
pub(crate) fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}/callback")
}

/// Takes the browser step of `login` (server `server`) for the
/// authorization URL `url`, as `browser` allows: asks the endpoint first
/// without a browser, then shows the URL to a person and waits for the
/// callback. `Ok` once the login has its callback (or was told its stored
/// client is refused, to register anew).
pub(super) fn browser_step(
    server: &str,
    http: &LoginHttp,
    login: &mut Login,
    browser: &Browser,
    url: &Url,
) -> Result<(), Ended> {
    if matches!(browser, Browser::Never) {
        return Err("no one is here to log in".into());
    }
    // The authorization endpoint is asked first, without a browser: a
    // server that approves at once answers with the callback itself, and
    // one that refuses the client (a registration it forgot, or one made
    // for another loopback port) says so before a person sees its error
    // page. Only a server that wants a person gets one.
    let preflight = match exchange(http, Method::Get, url, Vec::new(), Vec::new()) {
        Ok(answer) => Some(answer),
        // The person's browser may still reach it (a proxy, say).
        Err(e) if matches!(browser, Browser::Person(..)) => {
            tracing::debug!(
                server,
                "asking the authorization endpoint first failed: {e}"
            );
            None
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(answer) = preflight {
        let location = answer
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.clone());
        match location {
            None if (400..500).contains(&answer.status) => {
                // Refused outright: a registration the server forgot is
                // replaced once, and the login asks again.
                if login.handle_authorization_refused(Instant::now()) {
                    tracing::info!(
                        server,
                        "the authorization endpoint refused the stored client (HTTP {}); registering a new one",
                        answer.status
                    );
                    return Ok(());
                }
                let detail = refusal_detail(&answer.body);
                return Err(format!(
                    "the authorization endpoint refused the request (HTTP {}{})",
                    answer.status,
                    if detail.is_empty() {
                        String::new()
                    } else {
                        format!(": {detail}")
                    }
                )
                .into());
            }
            None if matches!(browser, Browser::Headless) => {
                return Err(format!(
                    "the authorization endpoint answered HTTP {} without a redirect; a headless login needs one",
                    answer.status
                )
                .into());
            }
            None => {}
            Some(location) => {
                // A relative Location is a valid redirect (RFC 9110): to
                // the authorization server's own page, which wants a
                // person.
                let target = url
                    .join(&location)
                    .map_err(|_| format!("the authorization redirect `{location}` is not a URL"))?;
                if is_loopback_callback(&target) {
                    let query = target.query().unwrap_or_default().to_owned();
                    if !login.handle_callback(Instant::now(), &query) {
                        return Err(
                            "the authorization redirect did not carry this login's state".into(),
                        );
                    }
                    return Ok(());
                }
                if matches!(browser, Browser::Headless) {
                    return Err(format!(
                        "the authorization server wants a person: it redirected to its own page {target} \
                         (a sign-in or consent page) instead of back to rho; log in with a browser \
                         (`rho mcp login {server}` without --headless)"
                    )
                    .into());
                }
            }
        }
    }
    match browser {
        Browser::Person(listener, prompt) => {
            prompt.show(server, url);
            wait_for_callback(listener, login, &|| prompt.cancelled())
        }
        Browser::Headless | Browser::Never => Err("no one is here to log in".into()),
    }
}

/// Whether `target` is rho's own loopback callback (every redirect URI rho
/// registers is `http://127.0.0.1:<port>/callback`).
fn is_loopback_callback(target: &Url) -> bool {
    target.scheme() == "http"
        && target.host_str() == Some("127.0.0.1")
        && target.path() == "/callback"
}

/// Opens `url` with the platform's opener (`xdg-open`, `open`,
/// `rundll32`), directly: no shell, no browser crate. A failure only means
/// the person uses the URL they were shown.
pub fn open_in_browser(url: &Url) {
    let (program, args): (&str, Vec<&str>) = if cfg!(target_os = "macos") {
        ("open", vec![url.as_str()])
    } else if cfg!(windows) {
        (
            "rundll32",
            vec!["url.dll,FileProtocolHandler", url.as_str()],
        )
    } else {
        ("xdg-open", vec![url.as_str()])
    };
    let _ = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// Serves the callback until one carries this login's state, the login
/// fails, or its bound passes.
///
/// Every connection is read on its own thread (at most
/// [`CALLBACK_READERS`] at once; more are closed at once), which hands the
/// request line back here: an idle or slow local connection holds only its
/// own reader, never the browser's callback behind it.
fn wait_for_callback(
    listener: &TcpListener,
    login: &mut Login,
    cancelled: &dyn Fn() -> bool,
) -> Result<(), Ended> {
    listener
        .set_nonblocking(true)
        .map_err(|e| format!("the callback listener: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel::<(TcpStream, Option<String>)>();
    let readers = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    loop {
        if cancelled() {
            return Err(Ended::Skipped);
        }
        let now = Instant::now();
        if let Some(deadline) = login.poll_timeout()
            && now >= deadline
        {
            login.handle_timeout(now);
            return Ok(());
        }
        loop {
            match listener.accept() {
                Ok((stream, _)) => read_on_its_own(stream, &tx, &readers),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(format!("the callback listener: {e}").into()),
            }
        }
        // A connection that sent no request line in time is dropped.
        if let Ok((stream, Some(line))) = rx.recv_timeout(Duration::from_millis(50))
            && answer(stream, &line, login)
        {
            return Ok(());
        }
    }
}

/// The most callback connections read at once.
const CALLBACK_READERS: usize = 16;

/// Reads `stream`'s request line on a thread of its own and hands it to
/// `tx` (`None` when none came within 5 s, or it was over 8 KiB).
fn read_on_its_own(
    stream: TcpStream,
    tx: &std::sync::mpsc::Sender<(TcpStream, Option<String>)>,
    readers: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    if readers.fetch_add(1, Ordering::SeqCst) >= CALLBACK_READERS {
        readers.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let tx = tx.clone();
    let readers = std::sync::Arc::clone(readers);
    let spawned = std::thread::Builder::new()
        .name("rho-login-callback".into())
        .spawn(move || {
            let line = read_request_line(&stream);
            readers.fetch_sub(1, Ordering::SeqCst);
            let _ = tx.send((stream, line));
        });
    if spawned.is_err() {
        tracing::debug!("could not start a thread for a callback connection");
    }
}

/// The request line of `stream`, within 5 s and 8 KiB.
fn read_request_line(stream: &TcpStream) -> Option<String> {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    // Only the request line matters, and a local client cannot make rho
    // buffer more than 8 KiB of it.
    let mut reader = BufReader::new(std::io::Read::take(stream, 8192));
    let mut line = String::new();
    match reader.read_line(&mut line) {
        Ok(_) if line.ends_with('\n') => Some(line),
        _ => None,
    }
}

/// Answers one request line on its connection; whether it ended the
/// browser step.
fn answer(stream: TcpStream, line: &str, login: &mut Login) -> bool {
    let target = line.split_whitespace().nth(1).unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let ended = line.starts_with("GET ")
        && path == "/callback"
        && login.handle_callback(Instant::now(), query);
    let mut stream = &stream;
    let (status, body) = if ended {
        (
            "200 OK",
            "rho: the authorization answer arrived. You can close this tab.\n",
        )
    } else {
        ("404 Not Found", "not found\n")
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    ended
}

/// The start of a refusing authorization endpoint's body, for the error:
/// its words on one line (an HTML page's newlines and indentation
/// collapsed), control characters escaped, at most 200 characters.
fn refusal_detail(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    rho_proto_core::text::terminal::sanitize_line(&words)
        .chars()
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuntimeKind;
    use rho_proto_core::oauth::flow::{GrantKind, LoginEvent, LoginSettings};
    use rho_proto_core::oauth::pkce::RANDOM_BYTES;
    use rho_proto_core::oauth::token::{Client, ClientAuth};
    use std::io::Read as _;

    #[test]
    fn a_refusal_body_is_one_escaped_line_of_at_most_200_characters() {
        let page = format!(
            "<html>\n  <body>\x1b]0;pwned\x07 denied\r\n\t{}</body>\n</html>",
            "x".repeat(500)
        );
        let detail = refusal_detail(page.as_bytes());
        assert!(
            detail.starts_with("<html> <body>\\x1b]0;pwned\\x07 denied xxx"),
            "{detail}"
        );
        assert_eq!(detail.chars().count(), 200);
        assert!(!detail.chars().any(|c| c.is_control()), "{detail:?}");
        assert_eq!(refusal_detail(b"  \n "), "");
    }

    /// A prompt that shows nothing: the tests are the browser.
    struct Silent;

    impl AuthorizationPrompt for Silent {
        fn show(&self, _: &str, _: &Url) {}
    }

    /// A login driven to its browser step against scripted metadata.
    fn login_at_browser_step(redirect_uri: String) -> (Login, Url) {
        let server = Url::parse("https://mcp.example.com/mcp").expect("url");
        let settings = LoginSettings {
            client: Some(Client {
                id: "c".into(),
                secret: None,
                auth: ClientAuth::None,
            }),
            ..LoginSettings::new(server, GrantKind::AuthorizationCode { redirect_uri })
        };
        let mut login = Login::new(settings, None, [4; RANDOM_BYTES], Instant::now());
        while let Some(request) = login.poll_request() {
            let body = match request.url.path() {
                "/.well-known/oauth-protected-resource/mcp" => {
                    r#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"]}"#
                }
                "/.well-known/oauth-authorization-server" => {
                    r#"{"issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","code_challenge_methods_supported":["S256"]}"#
                }
                _ => "",
            };
            let status = if body.is_empty() { 404 } else { 200 };
            login.handle_response(Instant::now(), request.id, status, body.as_bytes());
        }
        let Some(LoginEvent::Authorize { url }) = login.poll_event() else {
            panic!("no browser step")
        };
        (login, url)
    }

    fn get(port: u16, target: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        write!(stream, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("write");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        answer
    }

    /// An authorization endpoint on loopback that answers every request
    /// with a redirect to `location`.
    fn redirecting_authorization_endpoint(location: &'static str) -> Url {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut head = Vec::new();
                let mut byte = [0u8];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 303 See Other\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n"
                );
            }
        });
        Url::parse(&format!("http://127.0.0.1:{port}/authorize?client_id=c")).expect("url")
    }

    #[test]
    fn a_headless_login_sent_to_the_servers_own_page_says_it_needs_a_person() {
        for &kind in RuntimeKind::ALL {
            let (mut login, _) = login_at_browser_step(redirect_uri(HEADLESS_REDIRECT_PORT));
            let url = redirecting_authorization_endpoint("/interaction/abc123");
            let error = browser_step(
                "secure",
                &LoginHttp::for_runtime(kind),
                &mut login,
                &Browser::Headless,
                &url,
            )
            .expect_err("no callback came")
            .to_string();
            assert!(
                error.contains("wants a person")
                    && error.contains("/interaction/abc123")
                    && error.contains("`rho mcp login secure` without --headless"),
                "{kind:?}: {error}"
            );
        }
    }

    #[test]
    fn the_listener_answers_only_its_callback_with_this_logins_state() {
        let (browser, redirect_uri) = Browser::person(Arc::new(Silent)).expect("listener");
        let Browser::Person(listener, _) = &browser else {
            panic!("a listener")
        };
        let port = listener.local_addr().expect("addr").port();
        assert_eq!(redirect_uri, format!("http://127.0.0.1:{port}/callback"));
        let (mut login, url) = login_at_browser_step(redirect_uri);
        let state = url
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .expect("state");
        let client = std::thread::spawn(move || {
            let stray = get(port, "/favicon.ico");
            let forged = get(port, "/callback?code=evil&state=forged");
            let real = get(port, &format!("/callback?code=c0de&state={state}"));
            (stray, forged, real)
        });
        wait_for_callback(listener, &mut login, &|| false).expect("served");
        let (stray, forged, real) = client.join().expect("client");
        assert!(stray.starts_with("HTTP/1.1 404"), "{stray}");
        assert!(forged.starts_with("HTTP/1.1 404"), "{forged}");
        assert!(real.starts_with("HTTP/1.1 200"), "{real}");
        // The code went on to the token endpoint, with the verifier.
        let token = login.poll_request().expect("token request");
        assert_eq!(token.url.path(), "/token");
        assert!(String::from_utf8_lossy(&token.body).contains("code=c0de"));
    }

    #[test]
    fn a_configured_redirect_port_is_listened_on_and_a_held_one_is_named() {
        // A port free a moment ago (the system's pick), now rho's.
        let free = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let (browser, uri) = Browser::person_on(Arc::new(Silent), Some(free)).expect("listener");
        let Browser::Person(listener, _) = &browser else {
            panic!("a listener")
        };
        assert_eq!(listener.local_addr().expect("addr").port(), free);
        assert_eq!(uri, format!("http://127.0.0.1:{free}/callback"));
        // Held (by that listener): the login says which port and key.
        let Err(error) = Browser::person_on(Arc::new(Silent), Some(free)) else {
            panic!("a held port was listened on twice");
        };
        assert!(
            error.contains(&format!("127.0.0.1:{free} (`oauth.redirect_port`)")),
            "{error}"
        );
        // A login that never opens a browser registers the same URI.
        assert_eq!(configured_redirect_uri(Some(free)), uri);
        assert_eq!(
            configured_redirect_uri(None),
            redirect_uri(HEADLESS_REDIRECT_PORT)
        );
    }

    #[test]
    fn a_person_who_stops_waiting_ends_the_login_at_once() {
        let (browser, redirect_uri) = Browser::person(Arc::new(Silent)).expect("listener");
        let Browser::Person(listener, _) = &browser else {
            panic!("a listener")
        };
        let (mut login, _url) = login_at_browser_step(redirect_uri);
        let started = Instant::now();
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let stop_on_third = || asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 2;
        let error = wait_for_callback(listener, &mut login, &stop_on_third).expect_err("skipped");
        assert_eq!(error, Ended::Skipped);
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn idle_local_connections_never_delay_the_callback() {
        let (browser, redirect_uri) = Browser::person(Arc::new(Silent)).expect("listener");
        let Browser::Person(listener, _) = &browser else {
            panic!("a listener")
        };
        let port = listener.local_addr().expect("addr").port();
        let (mut login, url) = login_at_browser_step(redirect_uri);
        let state = url
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.into_owned())
            .expect("state");
        // Three local connections that send nothing, held open, then the
        // browser's callback.
        let idle: Vec<TcpStream> = (0..3)
            .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
            .collect();
        let client =
            std::thread::spawn(move || get(port, &format!("/callback?code=c0de&state={state}")));
        let started = Instant::now();
        wait_for_callback(listener, &mut login, &|| false).expect("served");
        let took = started.elapsed();
        assert!(
            client.join().expect("client").starts_with("HTTP/1.1 200"),
            "the callback was answered"
        );
        // Each idle connection used to hold the listener for its 5 s read.
        assert!(
            took < Duration::from_secs(4),
            "the callback waited {took:?} behind idle connections"
        );
        drop(idle);
    }
}
