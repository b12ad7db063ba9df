//! Running an OAuth login: the core's [`Login`] state machine driven over
//! real HTTP, a loopback listener for the browser's callback, and the
//! result written to the credential store. [`login_server`] is the whole
//! of `rho mcp login <id>`; [`run`] is the loop under it, which the
//! re-authorization of a running session ([`crate::reauth`]) shares.
//!
//! The HTTP is the runtime's own stack, bounded ([`crate::oauth_http`]);
//! token requests carry a DPoP proof where the login binds its tokens
//! ([`crate::dpop`]).
//!
//! Two ways through the browser step:
//! - a person: the host's [`AuthorizationPrompt`] shows the URL (the CLI
//!   prints it, for a person on another machine, and opens it with
//!   [`open_in_browser`] when it has a terminal and is not in CI); the
//!   listener on `127.0.0.1:<ephemeral>` answers exactly `/callback`, needs
//!   the login's `state`, answers anything else 404, and closes after one
//!   valid callback or the 5-minute bound;
//! - headless (the conformance suite's mock authorization server answers
//!   the authorization request with a redirect at once): rho fetches the
//!   URL itself without following the redirect and reads the callback
//!   query from `Location`.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rho_proto_core::http::Method;
use rho_proto_core::oauth::challenge::{BearerChallenge, bearer_challenge};
use rho_proto_core::oauth::flow::{Credentials, Login, LoginEvent, LoginSettings, OAuthRequest};
use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin};
use rho_proto_core::oauth::token::Client;
use url::Url;

use crate::RuntimeKind;
use crate::credentials::{client_to_store, now_unix, stored};
use crate::oauth_http::{LoginHttp, exchange};

/// Asks the MCP server once without credentials. A 401 (or 403) yields
/// its Bearer challenge (empty when it sent none); any other answer means
/// the server does not demand a token up front.
pub fn probe(
    http: &LoginHttp,
    url: &Url,
    headers: &[(String, String)],
) -> Result<Option<BearerChallenge>, String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "rho", "version": env!("CARGO_PKG_VERSION")},
        },
    });
    let mut all = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        (
            "Accept".to_owned(),
            "application/json, text/event-stream".to_owned(),
        ),
    ];
    all.extend(headers.iter().cloned());
    let answer = exchange(
        http,
        Method::Post,
        url,
        all,
        serde_json::to_vec(&body).unwrap_or_default(),
    )?;
    if !matches!(answer.status, 401 | 403) {
        // A session the probe opened is ended at once.
        if let Some((_, id)) = answer
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
        {
            let _ = exchange(
                http,
                Method::Delete,
                url,
                vec![("Mcp-Session-Id".into(), id.clone())],
                Vec::new(),
            );
        }
        return Ok(None);
    }
    let challenges = answer
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
        .map(|(_, v)| v.as_str());
    Ok(Some(bearer_challenge(challenges).unwrap_or_default()))
}

/// The port of the redirect URI a headless login registers
/// (`http://127.0.0.1:8976/callback`): nothing listens on it, since the
/// answer is read from the authorization endpoint's redirect itself, but
/// the URI keeps the registered loopback shape.
pub const HEADLESS_REDIRECT_PORT: u16 = 8976;

/// Shows a login's authorization URL to the person who approves it: the
/// host's UI (a terminal prints it and opens a browser; a GUI opens its
/// own view). The login then waits for the browser's callback.
pub trait AuthorizationPrompt: Send + Sync {
    /// The person must open `url` in a browser to log in to `server`.
    fn show(&self, server: &str, url: &Url);

    /// Whether the person stopped waiting for the browser (a shell's
    /// Ctrl-C): the login then ends at once with
    /// [`LoginError::Skipped`]. Asked about every 50 ms while the login
    /// waits.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Why a login run ended without credentials: the person stopped waiting
/// for the browser ([`AuthorizationPrompt::cancelled`]), which is no
/// failure, or it failed, saying why.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The person stopped waiting ([`LoginError::Skipped`]).
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
pub enum Browser {
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
    pub fn person(prompt: Arc<dyn AuthorizationPrompt>) -> Result<(Self, String), String> {
        Self::person_on(prompt, None)
    }

    /// [`Browser::person`] on `port` when set (`oauth.redirect_port`: a
    /// client registered out of band with that exact redirect URI), else
    /// on a port the system picks. A port something else holds fails the
    /// login at once, naming the port and the key.
    pub fn person_on(
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
pub fn configured_redirect_uri(port: Option<u16>) -> String {
    redirect_uri(port.unwrap_or(HEADLESS_REDIRECT_PORT))
}

/// The loopback redirect URI for `port`.
pub fn redirect_uri(port: u16) -> String {
    format!("http://127.0.0.1:{port}/callback")
}

/// Runs a login to its end. `on_event` hears of what the store must
/// know at once — a client registered (so a failed browser step does not
/// register again), a login of a previous issuer to forget — before the
/// next request goes out.
pub fn run(
    server: &str,
    http: &LoginHttp,
    settings: LoginSettings,
    challenge: Option<BearerChallenge>,
    browser: &Browser,
    on_event: &mut dyn FnMut(&LoginEvent),
) -> Result<Credentials, Ended> {
    let mut settings = settings;
    if let Some(key) = &mut settings.client_assertion {
        // The core reads no clock: assertions are issued at this login's start.
        key.now_unix = now_unix();
    }
    let mut login = Login::new(
        settings,
        challenge,
        crate::grants::random()?,
        Instant::now(),
    );
    let mut authorize = None;
    let mut refresh_failed = None;
    loop {
        // Events before the next request: the store hears of a change of
        // issuer before the new one is contacted, and a login no one can
        // finish stops before it registers anywhere.
        while let Some(event) = login.poll_event() {
            on_event(&event);
            match event {
                LoginEvent::Authorize { url } => authorize = Some(url),
                LoginEvent::Done(credentials) => return Ok(*credentials),
                LoginEvent::Failed(error) => {
                    return Err(Ended::Failed(match refresh_failed {
                        Some(why) => format!("{why}; {error}"),
                        None => error.to_string(),
                    }));
                }
                LoginEvent::RefreshFailed(error) => {
                    let why = format!("refreshing the token failed: {error}");
                    if matches!(browser, Browser::Never) {
                        return Err(format!("{why}; no one is here to log in").into());
                    }
                    tracing::info!("{why}; logging in again");
                    refresh_failed = Some(why);
                }
                LoginEvent::IssuerChanged { previous, current } => {
                    let why = format!(
                        "the server's authorization server moved from {previous} to {current}, so the old login was discarded"
                    );
                    if matches!(browser, Browser::Never) {
                        return Err(format!("{why}; no one is here to log in").into());
                    }
                    tracing::info!("{why}");
                }
                // Registered is the store's (above); an event a newer core
                // adds is not this loop's business.
                _ => {}
            }
        }
        if let Some(request) = login.poll_request() {
            send(http, &mut login, request);
            continue;
        }
        if let Some(url) = authorize.take() {
            browser_step(server, http, &mut login, browser, &url)?;
            continue;
        }
        // Every request was answered above; a login with nothing queued
        // and no browser step can only be past its bound.
        match login.poll_timeout() {
            Some(deadline) if Instant::now() >= deadline => login.handle_timeout(Instant::now()),
            _ => return Err("the login stopped without an answer".into()),
        }
    }
}

/// Sends one of the login's requests. A token request of a login that
/// binds its tokens carries a DPoP proof, made here at the wall clock,
/// and is resent once with the nonce a `use_dpop_nonce` answer supplies
/// (see [`crate::dpop::send_token_request`]).
fn send(http: &LoginHttp, login: &mut Login, request: OAuthRequest) {
    let answer = if request.method == "GET" {
        exchange(
            http,
            Method::Get,
            &request.url,
            request.headers.clone(),
            request.body.clone(),
        )
    } else {
        let login: &Login = login;
        let mut prove = |nonce: Option<&str>| {
            let jti = match crate::dpop::random_jti() {
                Ok(jti) => jti,
                Err(e) => return Some(Err(e)),
            };
            login
                .proof(&request, now_unix(), jti, nonce)
                .map(|proof| proof.map_err(|e| e.to_string()))
        };
        crate::dpop::send_token_request(
            http,
            &request.url,
            &request.headers,
            &request.body,
            &mut prove,
        )
    };
    match answer {
        Ok(answer) => {
            login.handle_response(Instant::now(), request.id, answer.status, &answer.body)
        }
        Err(e) => login.handle_failure(Instant::now(), request.id, e),
    }
}

fn browser_step(
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
        if let Some(deadline) = login.poll_timeout() {
            if now >= deadline {
                login.handle_timeout(now);
                return Ok(());
            }
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

/// What the store must hear of during a login of server `id` under
/// `key`: a newly registered client is kept (without tokens) at once, and
/// a stored login of an issuer the server no longer uses, or whose client
/// the server forgot, is forgotten, and a refresh token refused for good
/// is dropped.
pub fn store_events<'a>(
    store: &'a dyn CredentialStore,
    key: &'a StoreKey,
    id: &'a str,
) -> impl FnMut(&LoginEvent) + 'a {
    move |event| {
        if let LoginEvent::RefreshFailed(e) = event
            && e.grant_is_dead()
        {
            // The refresh token is dead: never sent again. The client
            // stays for the login that follows.
            let dropped = store.update(key, &mut |current| {
                current.map(|login| StoredLogin {
                    tokens: None,
                    ..login
                })
            });
            if let Err(e) = dropped {
                tracing::warn!(server = %id, "{e}");
            }
            return;
        }
        let change = match event {
            LoginEvent::Registered { issuer, client } => Some(StoredLogin {
                issuer: issuer.clone(),
                client: client.clone(),
                tokens: None,
                wanted_scope: None,
            }),
            LoginEvent::IssuerChanged { .. } | LoginEvent::ClientForgotten { .. } => None,
            _ => return,
        };
        if let Err(e) = store.update(key, &mut |_| change.clone()) {
            tracing::warn!(server = %id, "{e}");
        }
    }
}

/// The scopes a stored login holds or asked for, and those a refused
/// step-up wanted: a new login asks for them too, so it never loses what
/// was granted before (the union the 2025-11-25 spec asks of a step-up).
pub fn remembered_scopes(stored: Option<&StoredLogin>) -> Vec<String> {
    let Some(stored) = stored else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let held = stored.tokens.as_ref().and_then(|t| t.scope.as_deref());
    for scope in [held, stored.wanted_scope.as_deref()]
        .into_iter()
        .flatten()
        .flat_map(str::split_ascii_whitespace)
    {
        if !out.iter().any(|s| s == scope) {
            out.push(scope.to_owned());
        }
    }
    out
}

/// Saves `credentials` under `key`, with the stored form of the DPoP key
/// their tokens are bound to, when they are. `configured` is the client
/// the login's settings named (`oauth.client_id`, with the secret read
/// from `client_secret_file` / `client_secret_from_env`): its secret is
/// not stored ([`client_to_store`]).
pub fn save(
    store: &dyn CredentialStore,
    key: &StoreKey,
    credentials: &Credentials,
    dpop_key: Option<&str>,
    configured: Option<&Client>,
) -> Result<(), String> {
    let mut login = stored(credentials, now_unix(), dpop_key);
    login.client = client_to_store(&login.client, configured);
    store
        .update(key, &mut |_| Some(login.clone()))
        .map_err(|e| e.to_string())
}

/// The login settings for a configured server: its `oauth` table, the
/// client secret read from the variable `client_secret_from_env` names or
/// the file `client_secret_file` names (a missing one is an error naming
/// it), the grant's own secrets ([`crate::grants`]), the signing key of a
/// `private_key_jwt` client read from `client_key_file` or the variable
/// `client_key_from_env` names, and a stored registration.
pub fn settings_for(
    id: &str,
    http: &rho_proto_core::config::HttpConfig,
    oauth: &rho_proto_core::config::OAuthConfig,
    stored: Option<&StoredLogin>,
    redirect_uri: String,
) -> Result<LoginSettings, String> {
    use rho_proto_core::oauth::flow::DpopSettings;
    use rho_proto_core::oauth::token::ClientAuth;
    let secret = crate::grants::client_secret(id, oauth)?;
    let client_assertion = match &oauth.client_key {
        Some(source) => Some(rho_proto_core::oauth::assertion::ClientAssertionKey {
            signer: crate::grants::client_key(id, source)?,
            now_unix: now_unix(),
        }),
        None => None,
    };
    let client = oauth.client_id.clone().map(|client_id| Client {
        id: client_id,
        auth: if client_assertion.is_some() {
            ClientAuth::PrivateKeyJwt
        } else if secret.is_some() {
            ClientAuth::ClientSecretBasic
        } else {
            ClientAuth::None
        },
        secret: secret.clone(),
    });
    let grant = crate::grants::grant_kind(id, oauth, redirect_uri)?;
    Ok(LoginSettings {
        client,
        stored_client: stored.map(|s| (s.issuer.clone(), s.client.clone())),
        client_metadata_url: oauth.client_metadata_url.clone(),
        scopes: oauth.scopes.clone(),
        extra_scopes: remembered_scopes(stored),
        client_assertion,
        dpop: DpopSettings {
            mode: oauth.dpop,
            key: None,
        },
        ..LoginSettings::new(http.url.clone(), grant)
    })
}

/// Whether, and how, a login may reach a person.
#[derive(Clone)]
pub enum LoginMode {
    /// Never: refresh and client credentials only (a run with no one to
    /// ask, such as `rho mcp list --connect` or a host in CI).
    Never,
    /// A person: the prompt shows the authorization URL, and a loopback
    /// listener waits for the browser's callback.
    Person(Arc<dyn AuthorizationPrompt>),
    /// Fetch the authorization URL and read the redirect (authorization
    /// servers that approve at once, such as the conformance suite's).
    Headless,
}

impl std::fmt::Debug for LoginMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LoginMode::Never => "Never",
            LoginMode::Person(_) => "Person",
            LoginMode::Headless => "Headless",
        })
    }
}

/// Why [`login_server`] did not log in. The `Display` text names the
/// server and what to do.
#[derive(Debug)]
pub enum LoginError {
    /// The config has no server with this identity.
    UnknownServer(String),
    /// The server's entry is invalid (the reason names the key).
    InvalidEntry(String),
    /// A stdio server: OAuth is for remote servers.
    NotRemote(String),
    /// A remote server without an `oauth` table.
    NoOAuth {
        /// The server identity.
        server: String,
        /// Where its entry is, for the message.
        config: String,
    },
    /// There is no home directory, so no credential store.
    NoStore,
    /// The credential store could not be read or written.
    Store(String),
    /// The person stopped waiting for the browser
    /// ([`AuthorizationPrompt::cancelled`]): nothing failed, and nothing
    /// was stored.
    Skipped {
        /// The server identity.
        server: String,
    },
    /// The login itself failed (discovery, registration, the browser
    /// step, the token exchange).
    Failed {
        /// The server identity.
        server: String,
        /// Why.
        reason: String,
    },
}

impl LoginError {
    /// Whether the request itself was wrong (an unknown or unsuitable
    /// server, no store), as opposed to a login that ran and failed.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LoginError::UnknownServer(_)
                | LoginError::NotRemote(_)
                | LoginError::NoOAuth { .. }
                | LoginError::NoStore
        )
    }
}

impl std::fmt::Display for LoginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginError::UnknownServer(id) => write!(f, "no MCP server `{id}`"),
            LoginError::InvalidEntry(reason) | LoginError::Store(reason) => f.write_str(reason),
            LoginError::NotRemote(id) => write!(
                f,
                "server `{id}` is a stdio server: OAuth is for remote (streamable_http) servers"
            ),
            LoginError::NoOAuth { server, config } => write!(
                f,
                "server `{server}` does not use OAuth: add an `[mcp.servers.{server}.oauth]` table to {config}"
            ),
            LoginError::NoStore => f.write_str("no home directory: there is no credential store"),
            LoginError::Skipped { server } => write!(
                f,
                "server `{server}`: the login was skipped: {}",
                Ended::Skipped
            ),
            LoginError::Failed { server, reason } => {
                write!(f, "server `{server}`: OAuth login failed: {reason}")
            }
        }
    }
}

impl std::error::Error for LoginError {}

/// A finished login, stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedIn {
    /// The server identity.
    pub server: String,
    /// The authorization server that issued the tokens.
    pub issuer: String,
    /// Seconds until the access token expires, when the server said.
    pub expires_in: Option<u64>,
}

impl std::fmt::Display for LoggedIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "logged in to server `{}` with {}",
            self.server, self.issuer
        )?;
        if let Some(secs) = self.expires_in {
            write!(f, "; the access token expires in {secs} s")?;
        }
        Ok(())
    }
}

/// Logs in to server `id` of `loaded` now (`rho mcp login <id>`) and
/// stores what the login yields in `store`: discovery from the server's
/// own 401, registration (kept at once, so a failed browser step does not
/// register again), the browser step as `mode` allows, and the token
/// exchange, every request through executor `kind`'s HTTP stack.
pub fn login_server(
    loaded: &crate::config::LoadedConfig,
    store: &dyn CredentialStore,
    kind: RuntimeKind,
    id: &str,
    mode: &LoginMode,
) -> Result<LoggedIn, LoginError> {
    use rho_proto_core::config::Transport;
    let entry = loaded
        .config
        .get(id)
        .ok_or_else(|| LoginError::UnknownServer(id.to_owned()))?;
    let server = entry
        .config
        .as_ref()
        .map_err(|e| LoginError::InvalidEntry(e.to_string()))?;
    let Transport::StreamableHttp(http) = &server.transport else {
        return Err(LoginError::NotRemote(id.to_owned()));
    };
    let Some(oauth) = &http.oauth else {
        return Err(LoginError::NoOAuth {
            server: id.to_owned(),
            config: loaded.describe(),
        });
    };
    let key = StoreKey::new(id, &http.url);
    let stored = store
        .load(&key)
        .map_err(|e| LoginError::Store(e.to_string()))?;
    let login_http = LoginHttp::for_runtime(kind);
    let fail = |reason: String| LoginError::Failed {
        server: id.to_owned(),
        reason,
    };
    let challenge = probe(&login_http, &http.url, &[]).map_err(fail)?;
    let (browser, redirect_uri) = match mode {
        LoginMode::Headless => (
            Browser::Headless,
            configured_redirect_uri(oauth.redirect_port),
        ),
        LoginMode::Person(prompt) => {
            Browser::person_on(Arc::clone(prompt), oauth.redirect_port).map_err(fail)?
        }
        LoginMode::Never => (Browser::Never, configured_redirect_uri(oauth.redirect_port)),
    };
    let mut settings = settings_for(id, http, oauth, stored.as_ref(), redirect_uri)
        .map_err(|why| fail(crate::grants::without_server(id, why)))?;
    let configured = settings.client.clone();
    // A new login binds to a new key (the stored tokens it replaces, and
    // their key, are dropped when it is saved).
    let dpop_key = match settings.dpop.mode {
        rho_proto_core::oauth::dpop::DpopMode::Off => None,
        _ => Some(
            crate::dpop::DpopKeys::default()
                .key_for(id, None)
                .map_err(fail)?,
        ),
    };
    settings.dpop.key = dpop_key
        .as_ref()
        .map(|(key, _)| Arc::clone(key) as Arc<dyn rho_proto_core::oauth::dpop::DpopSigner>);
    let mut on_event = store_events(store, &key, id);
    let credentials = run(
        id,
        &login_http,
        settings,
        challenge,
        &browser,
        &mut on_event,
    )
    .map_err(|ended| match ended {
        Ended::Skipped => LoginError::Skipped {
            server: id.to_owned(),
        },
        Ended::Failed(reason) => fail(reason),
    })?;
    save(
        store,
        &key,
        &credentials,
        dpop_key.as_ref().map(|(_, stored)| stored.as_str()),
        configured.as_ref(),
    )
    .map_err(LoginError::Store)?;
    Ok(LoggedIn {
        server: id.to_owned(),
        issuer: credentials.issuer,
        expires_in: credentials.tokens.expires_in,
    })
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
    use rho_proto_core::oauth::flow::GrantKind;
    use rho_proto_core::oauth::pkce::RANDOM_BYTES;
    use rho_proto_core::oauth::token::{Client, ClientAuth};
    use std::io::Read as _;

    #[test]
    fn a_configured_client_key_makes_a_private_key_jwt_client_and_a_bad_one_is_named() {
        use rho_proto_core::config::{HttpConfig, OAuthClientKey, OAuthConfig, OAuthGrant};
        let pem = crate::test_support::generated_pem();
        let path = std::env::temp_dir().join(format!("rho-jwt-key-{}.pem", std::process::id()));
        std::fs::write(&path, pem).expect("written");
        let http = HttpConfig {
            url: Url::parse("https://mcp.example.com/mcp").expect("url"),
            headers: Default::default(),
            headers_from_env: Default::default(),
            oauth: None,
        };
        let mut oauth = OAuthConfig {
            client_id: Some("m2m".into()),
            grant: OAuthGrant::ClientCredentials,
            client_key: Some(OAuthClientKey::File(path.display().to_string())),
            ..OAuthConfig::default()
        };
        let settings = settings_for("m", &http, &oauth, None, String::new()).expect("settings");
        let _ = std::fs::remove_file(&path);
        assert_eq!(
            settings.client.map(|c| c.auth),
            Some(ClientAuth::PrivateKeyJwt)
        );
        let key = settings.client_assertion.expect("a signer");
        assert_eq!(key.signer.alg(), "ES256");
        assert!(key.now_unix > 0);
        let error = settings_for("m", &http, &oauth, None, String::new()).expect_err("gone");
        assert!(
            error.starts_with("server `m`: `oauth.client_key_file`"),
            "{error}"
        );
        oauth.client_key = Some(OAuthClientKey::FromEnv("RHO_TEST_NO_SUCH_KEY_VAR".into()));
        let error = settings_for("m", &http, &oauth, None, String::new()).expect_err("unset");
        assert!(
            error.contains("`RHO_TEST_NO_SUCH_KEY_VAR`, which is not set"),
            "{error}"
        );
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
        for kind in RuntimeKind::ALL {
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
