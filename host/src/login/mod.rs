//! Running an OAuth login: the core's [`Login`] state machine driven over
//! the runtime's HTTP stack ([`crate::oauth_http`]), its token requests
//! with DPoP proofs where its tokens are bound ([`crate::dpop`]), and the
//! result written to the credential store ([`crate::credentials`]).
//! [`login_server`] is the whole of `rho mcp login <id>`; [`run`] is the
//! loop under it, which the re-authorization of a running session
//! ([`crate::reauth`]) shares.
//!
//! Two ways through the browser step (`browser.rs`):
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

use std::sync::Arc;
use std::time::Instant;

use rho_proto_core::http::Method;
use rho_proto_core::oauth::challenge::{BearerChallenge, bearer_challenge};
use rho_proto_core::oauth::flow::{Credentials, Login, LoginEvent, LoginSettings, OAuthRequest};
use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin};
use rho_proto_core::oauth::token::Client;
use url::Url;

use crate::RuntimeKind;
use crate::credentials::{client_to_store, now_unix, stored};
use crate::oauth_http::{LoginHttp, exchange};

mod browser;

use browser::browser_step;
pub use browser::{AuthorizationPrompt, open_in_browser};
pub(crate) use browser::{Browser, Ended, configured_redirect_uri};
#[cfg(test)]
pub(crate) use browser::{HEADLESS_REDIRECT_PORT, redirect_uri};

/// Asks the MCP server once without credentials. A 401 (or 403) yields
/// its Bearer challenge (empty when it sent none); any other answer means
/// the server does not demand a token up front.
pub(crate) fn probe(
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

/// Runs a login to its end. `on_event` hears of what the store must
/// know at once — a client registered (so a failed browser step does not
/// register again), a login of a previous issuer to forget — before the
/// next request goes out.
pub(crate) fn run(
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

/// What the store must hear of during a login of server `id` under
/// `key`: a newly registered client is kept (without tokens) at once, and
/// a stored login of an issuer the server no longer uses, or whose client
/// the server forgot, is forgotten, and a refresh token refused for good
/// is dropped.
pub(crate) fn store_events<'a>(
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
pub(crate) fn remembered_scopes(stored: Option<&StoredLogin>) -> Vec<String> {
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
pub(crate) fn save(
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
pub(crate) fn settings_for(
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

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::oauth::token::ClientAuth;

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
}
