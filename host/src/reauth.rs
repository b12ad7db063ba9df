//! Re-authorization mid-session: the host's [`Authorizer`], which a runtime
//! asks when an OAuth server refuses a request's token (see
//! `rho_proto_core::http` for how the request waits and is resent).
//!
//! - 401 (the token expired or was revoked), on any request including
//!   `initialize`: the core's login with the stored credentials as
//!   `previous`. It rediscovers the authorization server first; while that
//!   is still the issuer of the stored login, its refresh token is used (no
//!   person); when the server has moved to another, the stored login is
//!   forgotten and a new client registered there. Else a fresh grant of
//!   an unattended kind (`client_credentials`, `jwt_bearer`,
//!   `identity_assertion`; its secrets read again), else a new login.
//! - 403 `insufficient_scope` (a step-up): a new login asking for the union
//!   of the scopes the stored login holds and the scopes the challenge
//!   names, so a step-up never loses what was granted before. When no one
//!   can log in, the wanted scope is kept with the stored login, and the
//!   `rho mcp login` the reason suggests asks for it.
//!
//! Secrets: making the authorizer reads none ([`StoreAuthorizer::for_config`]
//! only keeps each server's config). A grant reads its own (the files
//! through `grants::read_secret`, a regular file only, bounded) when it
//! runs: at that server's 401, inside the budget of the request that waits
//! for it, after a CLI has installed its signal handlers. One that cannot
//! be read fails that server alone with
//! [`AuthorizationError::GrantMisconfigured`], which names the key and the
//! file and never suggests a login (a login would read the same file).
//!
//! A new login runs only where it may: with a person at a terminal (the
//! same rule as `rho mcp call` logging in first), or headless for the
//! conformance client, whose mock authorization server approves at once.
//! Otherwise the answer is a reason that says to run `rho mcp login <id>`
//! and names the scope the server wants. Logins are one at a time, so two
//! servers refusing at once never open two browser steps.
//!
//! What a login yields is stored before the header is returned, so a rho
//! that exits right after still has the rotated refresh token.
//!
//! DPoP (RFC 9449): a login binds its tokens to a key this authorizer
//! holds (the one stored with the server's tokens, else a new one; see
//! [`crate::dpop`]), stores the key beside the bound tokens, answers with
//! an `Authorization: DPoP` header, and makes the sessions' proofs
//! ([`Authorizer::prove_possession`]) with the key their token is bound
//! to.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rho_proto_core::config::{Config, HttpConfig, OAuthConfig, OAuthGrant, Transport};
use rho_proto_core::host::Authorizer;
use rho_proto_core::http::AuthorizationError;
use rho_proto_core::oauth::challenge::BearerChallenge;
#[cfg(test)]
use rho_proto_core::oauth::flow::LoginSettings;
use rho_proto_core::oauth::flow::{Credentials, GrantKind};
use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin};
use rho_proto_core::oauth::token::{Client, TokenResponse};
use rho_proto_core::session::AuthorizationReason;

use crate::RuntimeKind;
use crate::dpop::DpopKeys;
use crate::grants::without_server;
use crate::login::{self, Browser, LoginMode};
use crate::oauth_http::LoginHttp;
use rho_proto_core::oauth::dpop::{self, DpopMode, DpopSigner, ProofRequest};

/// One server's login, as configured.
struct ServerLogin {
    key: StoreKey,
    grant: OAuthGrant,
    source: LoginSource,
}

/// Where a login's settings come from.
enum LoginSource {
    /// The server's config (`http`, its `oauth` table): each login builds
    /// its settings from it when it runs, reading the grant's secrets then
    /// (a rotated workload token, a new ID token), inside the budget of
    /// the request that waits for it. Nothing is read before.
    Configured(Box<(HttpConfig, OAuthConfig)>),
    /// Settings a test built ([`StoreAuthorizer::for_one`]), used as
    /// given.
    #[cfg(test)]
    Given(Box<LoginSettings>),
}

impl ServerLogin {
    /// `oauth.redirect_port`, when the settings come from a config.
    fn redirect_port(&self) -> Option<u16> {
        match &self.source {
            LoginSource::Configured(configured) => configured.1.redirect_port,
            #[cfg(test)]
            LoginSource::Given(_) => None,
        }
    }
}

/// Why a login gave no token.
enum LoginFailure {
    /// The grant cannot run as configured (a secret file or variable is
    /// missing or unusable): the reason names the key and the fix, and
    /// logging in again would not help.
    Misconfigured(String),
    /// The login ran and failed, or no one may run it: the reason.
    Failed(String),
}

impl From<String> for LoginFailure {
    fn from(reason: String) -> Self {
        Self::Failed(reason)
    }
}

/// The [`Authorizer`] over a credential store that `rho mcp` uses: hand
/// it to `HostServices::authorizer` (see [`crate::HostBuilder`]).
pub(crate) struct StoreAuthorizer {
    store: Arc<dyn CredentialStore>,
    servers: BTreeMap<String, ServerLogin>,
    mode: LoginMode,
    /// The runtime's HTTP stack, for the login's requests.
    http: LoginHttp,
    /// One login or refresh at a time.
    busy: Mutex<()>,
    /// By server, the access token the session holds as far as this
    /// authorizer knows (the stored one at connect, then each it handed
    /// out): a stored token that differs was renewed by another process.
    handed: Mutex<BTreeMap<String, String>>,
    /// The keys DPoP-bound tokens are bound to: this authorizer also
    /// proves possession for the sessions ([`Authorizer::prove_possession`]),
    /// since it bound the tokens.
    dpop: DpopKeys,
}

impl std::fmt::Debug for StoreAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreAuthorizer")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl StoreAuthorizer {
    /// An authorizer for `servers` (id, store key, grant, login settings)
    /// whose logins go through runtime `kind`'s HTTP stack.
    fn new(
        store: Arc<dyn CredentialStore>,
        servers: BTreeMap<String, ServerLogin>,
        mode: LoginMode,
        kind: RuntimeKind,
    ) -> Self {
        // The tokens the sessions connect with: what the store holds now
        // (`with_stored_tokens` ran just before).
        let handed = servers
            .iter()
            .filter_map(|(id, server)| {
                let stored = store.load(&server.key).ok().flatten()?;
                Some((id.clone(), stored.tokens?.access_token))
            })
            .collect();
        Self {
            store,
            servers,
            mode,
            http: LoginHttp::for_runtime(kind),
            busy: Mutex::new(()),
            handed: Mutex::new(handed),
            dpop: DpopKeys::default(),
        }
    }

    /// An authorizer for every server of `config` selected by `select`
    /// that has an `oauth` table and no configured `Authorization` header
    /// (a configured header wins and suppresses the whole flow). `None`
    /// when there is none, or no store. No secret is read here: each
    /// grant reads its own when it runs.
    pub(crate) fn for_config(
        config: &Config,
        store: Option<Arc<dyn CredentialStore>>,
        mode: LoginMode,
        kind: RuntimeKind,
        select: &dyn Fn(&str) -> bool,
    ) -> Option<Arc<dyn Authorizer>> {
        let store = store?;
        let mut servers = BTreeMap::new();
        for entry in &config.servers {
            let Ok(server) = &entry.config else { continue };
            let Transport::StreamableHttp(http) = &server.transport else {
                continue;
            };
            let Some(oauth) = &http.oauth else { continue };
            let has_header = crate::auth_status::has_authorization_header(http);
            if has_header || !select(&entry.id) {
                continue;
            }
            // No secret is read here: a grant reads its own when it runs.
            servers.insert(
                entry.id.clone(),
                ServerLogin {
                    key: StoreKey::new(&entry.id, &http.url),
                    grant: oauth.grant,
                    source: LoginSource::Configured(Box::new((http.clone(), oauth.clone()))),
                },
            );
        }
        (!servers.is_empty())
            .then(|| Arc::new(Self::new(store, servers, mode, kind)) as Arc<dyn Authorizer>)
    }

    /// An authorizer for one server whose login settings the test built
    /// instead of a config. The settings are used as given: secrets in
    /// them are not read again. Only tests build one: a host's servers
    /// come from its config, and the builder makes their authorizer
    /// ([`StoreAuthorizer::for_config`]).
    #[cfg(test)]
    pub(crate) fn for_one(
        store: Arc<dyn CredentialStore>,
        id: &str,
        key: StoreKey,
        settings: LoginSettings,
        mode: LoginMode,
        kind: RuntimeKind,
    ) -> Self {
        let grant = match settings.grant {
            GrantKind::ClientCredentials => OAuthGrant::ClientCredentials,
            GrantKind::JwtBearer { .. } => OAuthGrant::JwtBearer,
            GrantKind::IdentityAssertion(_) => OAuthGrant::IdentityAssertion,
            _ => OAuthGrant::AuthorizationCode,
        };
        let mut servers = BTreeMap::new();
        servers.insert(
            id.to_owned(),
            ServerLogin {
                key,
                grant,
                source: LoginSource::Given(Box::new(settings)),
            },
        );
        Self::new(store, servers, mode, kind)
    }

    /// Re-authorizes: a new login asking for `scopes` (when set), which
    /// first refreshes `previous` (a 401's stored credentials) where the
    /// authorization server is still their issuer, and discards them where
    /// it is not. Stores what it yields and returns the access token.
    fn login(
        &self,
        id: &str,
        server: &ServerLogin,
        stored: Option<&StoredLogin>,
        challenge: &BearerChallenge,
        scopes: Option<Vec<String>>,
        previous: Option<Credentials>,
    ) -> Result<(String, bool), LoginFailure> {
        let mut settings = match &server.source {
            LoginSource::Configured(configured) => {
                let (http, oauth) = &**configured;
                login::settings_for(
                    id,
                    http,
                    oauth,
                    None,
                    login::configured_redirect_uri(oauth.redirect_port),
                )
                .map_err(|why| LoginFailure::Misconfigured(without_server(id, why)))?
            }
            #[cfg(test)]
            LoginSource::Given(settings) => (**settings).clone(),
        };
        // The key tokens are bound to: the stored one (a bound refresh
        // token proves it, whatever `oauth.dpop` says now), else this run's.
        let stored_key = stored
            .and_then(|s| s.tokens.as_ref())
            .and_then(|t| t.dpop_key.as_deref());
        let dpop_key = match (settings.dpop.mode, stored_key) {
            (DpopMode::Off, None) => None,
            (_, stored_key) => Some(self.dpop.key_for(id, stored_key)?),
        };
        settings.dpop.key = dpop_key
            .as_ref()
            .map(|(key, _)| Arc::clone(key) as Arc<dyn DpopSigner>);
        settings.stored_client = stored.map(|s| (s.issuer.clone(), s.client.clone()));
        settings.extra_scopes = login::remembered_scopes(stored);
        if scopes.is_some() {
            settings.scopes = scopes;
        }
        let refreshable = previous
            .as_ref()
            .is_some_and(|p| p.tokens.refresh_token.is_some());
        // The store keeps no configured secret: the refresh authenticates
        // with the one just read.
        let configured = settings.client.clone();
        settings.previous = previous.map(|p| with_configured_secret(p, configured.as_ref()));
        let machine = server.grant.is_unattended();
        let browser = match (machine, &self.mode) {
            (true, _) | (false, LoginMode::Headless) => Browser::Headless,
            (false, LoginMode::Person(prompt)) => {
                let (browser, redirect_uri) =
                    Browser::person_on(Arc::clone(prompt), server.redirect_port())?;
                settings.grant = GrantKind::AuthorizationCode { redirect_uri };
                browser
            }
            // Only a refresh can help; the login stops before anything else.
            (false, LoginMode::Never) if refreshable => Browser::Never,
            (false, LoginMode::Never) => {
                return Err(LoginFailure::Failed(
                    match stored.and_then(|s| s.tokens.as_ref()) {
                        Some(_) => "no one is here to log in again".to_owned(),
                        None => "no login is stored and no one is here to log in".to_owned(),
                    },
                ));
            }
        };
        let mut on_event = login::store_events(self.store.as_ref(), &server.key, id);
        let credentials = login::run(
            id,
            &self.http,
            settings,
            Some(challenge.clone()),
            &browser,
            &mut on_event,
        )
        .map_err(|e| match browser {
            Browser::Never => e.to_string(),
            _ => format!("the login failed: {e}"),
        })?;
        login::save(
            self.store.as_ref(),
            &server.key,
            &credentials,
            dpop_key.as_ref().map(|(_, stored)| stored.as_str()),
            configured.as_ref(),
        )?;
        let bound = dpop::is_bound(&credentials.tokens);
        Ok((credentials.tokens.access_token, bound))
    }

    /// A token refused 401: renewed under the store's lock, after reading
    /// the login again. A token another process renewed meanwhile is
    /// taken as it is; otherwise the login (a refresh first) runs under
    /// the lock, so two processes never spend one rotating refresh token
    /// twice. A login that may need a person runs outside the lock (its
    /// browser step can take minutes), after that same check.
    fn renew(
        &self,
        id: &str,
        entry: &ServerLogin,
        challenge: &BearerChallenge,
    ) -> Result<Result<(String, bool), LoginFailure>, AuthorizationError> {
        let person = matches!(self.mode, LoginMode::Person(_)) && !entry.grant.is_unattended();
        let held = self
            .handed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned();
        let mut outcome = None;
        let mut failure = None;
        self.store.exclusively(&mut || {
            let stored = match self.store.load(&entry.key) {
                Ok(stored) => stored,
                Err(e) => {
                    failure = Some(e);
                    return;
                }
            };
            let renewed = stored
                .as_ref()
                .and_then(|s| s.tokens.as_ref())
                .filter(|t| Some(&t.access_token) != held.as_ref())
                .filter(|t| {
                    !t.needs_refresh(
                        crate::credentials::now_unix(),
                        crate::stored_tokens::REFRESH_MARGIN_SECS,
                    )
                });
            if let Some(tokens) = renewed {
                // Bound to the key stored with it, which the proofs use.
                outcome = Some(match &tokens.dpop_key {
                    Some(key) => self
                        .dpop
                        .adopt(id, key)
                        .map(|_| (tokens.access_token.clone(), true))
                        .map_err(LoginFailure::Failed),
                    None => Ok((tokens.access_token.clone(), false)),
                });
                return;
            }
            if !person {
                let previous = stored.as_ref().and_then(credentials_of);
                outcome = Some(self.login(id, entry, stored.as_ref(), challenge, None, previous));
            }
        })?;
        if let Some(e) = failure {
            return Err(e.into());
        }
        if let Some(outcome) = outcome {
            return Ok(outcome);
        }
        let stored = self.store.load(&entry.key)?;
        let previous = stored.as_ref().and_then(credentials_of);
        Ok(self.login(id, entry, stored.as_ref(), challenge, None, previous))
    }

    /// Keeps the scope a refused step-up wanted with the stored login, so
    /// the `rho mcp login` its reason suggests asks for it.
    fn remember_wanted(&self, id: &str, key: &StoreKey, challenge: &BearerChallenge) {
        let Some(asked) = challenge.scope.as_deref().filter(|s| !s.is_empty()) else {
            return;
        };
        let result = self.store.update(key, &mut |current| {
            let mut login = current?;
            let held = login
                .wanted_scope
                .as_deref()
                .map(|w| w.split_ascii_whitespace().map(str::to_owned).collect())
                .unwrap_or_default();
            login.wanted_scope = Some(union(held, Some(asked)).join(" "));
            Some(login)
        });
        if let Err(e) = result {
            tracing::warn!(server = %id, "{e}");
        }
    }
}

impl Authorizer for StoreAuthorizer {
    fn prove_possession(&self, server: &str, request: &ProofRequest<'_>) -> Result<String, String> {
        self.prove(server, request)
    }

    fn authorize(
        &self,
        server: &str,
        reason: AuthorizationReason,
        challenge: &BearerChallenge,
    ) -> Result<String, AuthorizationError> {
        let Some(entry) = self.servers.get(server) else {
            return Err(AuthorizationError::NotManaged {
                server: server.to_owned(),
            });
        };
        let _one_at_a_time = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        let stored = self.store.load(&entry.key)?;
        let token = match reason {
            AuthorizationReason::Unauthorized => self.renew(server, entry, challenge)?,
            AuthorizationReason::InsufficientScope => {
                let scopes = union(held_scopes(stored.as_ref()), challenge.scope.as_deref());
                let token = self.login(
                    server,
                    entry,
                    stored.as_ref(),
                    challenge,
                    Some(scopes),
                    None,
                );
                if token.is_err() {
                    self.remember_wanted(server, &entry.key, challenge);
                }
                token
            }
            other => Err(LoginFailure::Failed(format!(
                "rho does not know how to answer the refusal {other:?}"
            ))),
        };
        if let Ok((token, _)) = &token {
            self.handed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(server.to_owned(), token.clone());
        }
        token
            .map(|(t, bound)| dpop::authorization(&t, bound))
            .map_err(|why| match (why, reason) {
                // Logging in would fail the same way: the reason says
                // which key to fix.
                (LoginFailure::Misconfigured(why), _) => AuthorizationError::GrantMisconfigured {
                    server: server.to_owned(),
                    reason: why,
                },
                // The wanted scope is remembered: `rho mcp login` asks for it.
                (LoginFailure::Failed(why), AuthorizationReason::InsufficientScope) => {
                    AuthorizationError::StepUpNeeded {
                        server: server.to_owned(),
                        reason: why,
                        scope: challenge.scope.clone().unwrap_or_default(),
                    }
                }
                (LoginFailure::Failed(why), _) => AuthorizationError::LoginNeeded {
                    server: server.to_owned(),
                    reason: why,
                },
            })
    }
}

impl StoreAuthorizer {
    /// A proof with the key `server`'s token is bound to: the one this
    /// authorizer bound it to, else the one stored beside it (a token
    /// stored by an earlier run).
    fn prove(&self, server: &str, request: &ProofRequest<'_>) -> Result<String, String> {
        let key = match self.dpop.held(server) {
            Some(key) => key,
            None => {
                let entry = self
                    .servers
                    .get(server)
                    .ok_or_else(|| format!("server `{server}` has no OAuth login here"))?;
                let stored = self
                    .store
                    .load(&entry.key)
                    .map_err(|e| e.to_string())?
                    .and_then(|s| s.tokens)
                    .and_then(|t| t.dpop_key)
                    .ok_or_else(|| {
                        format!("no DPoP key is stored for server `{server}`; run `rho mcp login {server}`")
                    })?;
                self.dpop.adopt(server, &stored)?.0
            }
        };
        crate::dpop::proof_now(key.as_ref(), request)
    }
}

/// The scopes a stored login was granted (or asked for).
fn held_scopes(stored: Option<&StoredLogin>) -> Vec<String> {
    stored
        .and_then(|s| s.tokens.as_ref())
        .and_then(|t| t.scope.as_deref())
        .map(|s| s.split_ascii_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// `held` then every scope of `asked` not already in it, in order.
pub(crate) fn union(mut held: Vec<String>, asked: Option<&[String]>) -> Vec<String> {
    for scope in asked.unwrap_or_default() {
        if !held.contains(scope) {
            held.push(scope.clone());
        }
    }
    held
}

/// `previous` (a stored login) with the secret of the configured client,
/// read for this login: the store keeps none (see [`login::save`]).
fn with_configured_secret(mut previous: Credentials, configured: Option<&Client>) -> Credentials {
    if let Some(client) = configured.filter(|c| c.id == previous.client.id && c.secret.is_some()) {
        previous.client.secret = client.secret.clone();
    }
    previous
}

/// A stored login as the core's credentials, for a refresh.
fn credentials_of(login: &StoredLogin) -> Option<Credentials> {
    let tokens = login.tokens.as_ref()?;
    Some(Credentials {
        issuer: login.issuer.clone(),
        client: login.client.clone(),
        resource: tokens.resource.clone(),
        token_endpoint: url::Url::parse(&tokens.token_endpoint).ok()?,
        scope: tokens.scope.clone(),
        tokens: TokenResponse {
            access_token: tokens.access_token.clone(),
            token_type: if tokens.is_bound() { "DPoP" } else { "Bearer" }.into(),
            expires_in: None,
            refresh_token: tokens.refresh_token.clone(),
            scope: tokens.scope.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::MemoryStore;
    use crate::login::{HEADLESS_REDIRECT_PORT, redirect_uri};
    use rho_proto_core::oauth::store::StoredTokens;
    use rho_proto_core::oauth::token::{Client, ClientAuth};

    fn strings(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_step_up_asks_for_what_was_held_and_what_is_asked() {
        assert_eq!(
            union(
                strings(&["mcp:basic"]),
                Some(&strings(&["mcp:basic", "mcp:write"]))
            ),
            strings(&["mcp:basic", "mcp:write"])
        );
        assert_eq!(
            union(strings(&["a", "b"]), Some(&strings(&["c"]))),
            strings(&["a", "b", "c"])
        );
        assert_eq!(union(Vec::new(), None), Vec::<String>::new());
    }

    pub(super) fn key() -> StoreKey {
        StoreKey {
            server: "s".into(),
            url: "https://mcp.example.com/mcp".into(),
        }
    }

    fn settings() -> LoginSettings {
        LoginSettings::new(
            // Nothing listens here: discovery fails to connect.
            url::Url::parse("http://127.0.0.1:9/mcp").expect("url"),
            GrantKind::AuthorizationCode {
                redirect_uri: redirect_uri(HEADLESS_REDIRECT_PORT),
            },
        )
    }

    pub(super) fn stored(scope: &str, refresh: Option<&str>) -> StoredLogin {
        StoredLogin {
            issuer: "https://auth.example.com".into(),
            client: Client {
                id: "c".into(),
                secret: None,
                auth: ClientAuth::None,
            },
            tokens: Some(StoredTokens {
                access_token: "old".into(),
                refresh_token: refresh.map(str::to_owned),
                expires_at: None,
                scope: Some(scope.into()),
                resource: "https://mcp.example.com/mcp".into(),
                token_endpoint: "http://127.0.0.1:9/token".into(),
                dpop_key: None,
            }),
            wanted_scope: None,
        }
    }

    /// An authorizer for server `s` with no one to log in.
    pub(super) fn unattended(store: Arc<MemoryStore>) -> StoreAuthorizer {
        StoreAuthorizer::for_one(
            store,
            "s",
            key(),
            settings(),
            LoginMode::Never,
            RuntimeKind::default(),
        )
    }

    #[test]
    fn with_no_one_to_log_in_the_reason_says_what_to_run_and_the_scope() {
        let store = Arc::new(MemoryStore::default());
        store
            .update(&key(), &mut |_| Some(stored("mcp:basic", None)))
            .expect("stored");
        let authorizer = unattended(store.clone());
        let challenge = BearerChallenge {
            scope: Some(strings(&["mcp:write"])),
            error: Some("insufficient_scope".into()),
            ..BearerChallenge::default()
        };
        let why = authorizer
            .authorize("s", AuthorizationReason::InsufficientScope, &challenge)
            .expect_err("nobody to log in");
        assert!(
            matches!(&why, AuthorizationError::StepUpNeeded { server, scope, .. }
                if server == "s" && *scope == strings(&["mcp:write"])),
            "{why:?}"
        );
        let text = why.to_string();
        assert!(
            text.contains("log in to server `s`") && text.contains("\"mcp:write\""),
            "{text}"
        );
        // The wanted scope is kept for that login, beside what is held.
        let kept = store.load(&key()).expect("loads").expect("entry");
        assert_eq!(kept.wanted_scope.as_deref(), Some("mcp:write"));
        assert_eq!(
            login::remembered_scopes(Some(&kept)),
            strings(&["mcp:basic", "mcp:write"])
        );
        let why = authorizer
            .authorize("s", AuthorizationReason::Unauthorized, &challenge)
            .expect_err("no refresh token, nobody to log in");
        assert!(
            matches!(&why, AuthorizationError::LoginNeeded { server, .. } if server == "s"),
            "{why:?}"
        );
        assert!(why.to_string().contains("log in to server `s`"), "{why}");
        let why = authorizer
            .authorize("other", AuthorizationReason::Unauthorized, &challenge)
            .expect_err("not an OAuth server");
        assert_eq!(
            why,
            AuthorizationError::NotManaged {
                server: "other".to_owned()
            }
        );
        assert!(
            why.to_string().contains("configured Authorization header"),
            "{why}"
        );
    }

    #[test]
    fn a_reauthorization_that_cannot_reach_the_server_keeps_the_stored_login() {
        let store = Arc::new(MemoryStore::default());
        store
            .update(&key(), &mut |_| Some(stored("mcp:basic", Some("rt"))))
            .expect("stored");
        let authorizer = unattended(store.clone());
        let why = authorizer
            .authorize(
                "s",
                AuthorizationReason::Unauthorized,
                &BearerChallenge::default(),
            )
            .expect_err("the server is not there");
        assert!(
            matches!(&why, AuthorizationError::LoginNeeded { server, reason }
                if server == "s" && reason.contains("fetching the protected resource metadata failed")),
            "{why:?}"
        );
        assert!(why.to_string().contains("log in to server `s`"), "{why}");
        // The old login is still stored: nothing was lost.
        let kept = store.load(&key()).expect("loads").expect("entry");
        assert_eq!(
            kept.tokens.and_then(|t| t.refresh_token).as_deref(),
            Some("rt")
        );
    }
}

#[cfg(test)]
mod dpop_tests {
    use super::tests::{key, stored, unattended};
    use super::*;
    use crate::credentials::MemoryStore;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    /// A stored login whose tokens are DPoP-bound, with the key stored
    /// beside them (or none).
    fn bound(dpop_key: Option<String>) -> StoredLogin {
        let mut login = stored("mcp", None);
        if let Some(tokens) = login.tokens.as_mut() {
            tokens.dpop_key = dpop_key;
        }
        login
    }

    #[test]
    fn a_token_stored_by_an_earlier_run_is_proved_with_the_key_stored_beside_it() {
        let store = Arc::new(MemoryStore::default());
        let (key_then, stored_key) = DpopKeys::default().key_for("s", None).expect("a key");
        store
            .update(&key(), &mut |_| Some(bound(Some(stored_key.clone()))))
            .expect("stored");
        let authorizer = unattended(store);
        let url = url::Url::parse("https://mcp.example.com/mcp").expect("url");
        let proof = authorizer
            .prove_possession(
                "s",
                &ProofRequest {
                    method: "POST",
                    url: &url,
                    access_token: Some("at"),
                    nonce: Some("n"),
                },
            )
            .expect("a proof");
        let header: serde_json::Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(proof.split('.').next().expect("header"))
                .expect("base64url"),
        )
        .expect("json");
        // The JWK in the proof is the stored key's public half.
        assert_eq!(header["jwk"], DpopSigner::public_jwk(key_then.as_ref()));
        assert!(!proof.contains(&stored_key));
    }

    #[test]
    fn without_a_stored_key_there_is_no_proof_and_the_reason_says_to_log_in() {
        let store = Arc::new(MemoryStore::default());
        store
            .update(&key(), &mut |_| Some(bound(None)))
            .expect("stored");
        let authorizer = unattended(store);
        let url = url::Url::parse("https://mcp.example.com/mcp").expect("url");
        let request = ProofRequest {
            method: "POST",
            url: &url,
            access_token: Some("at"),
            nonce: None,
        };
        let why = authorizer
            .prove_possession("s", &request)
            .expect_err("no key");
        assert!(why.contains("rho mcp login s"), "{why}");
        let why = authorizer
            .prove_possession("other", &request)
            .expect_err("not managed");
        assert!(why.contains("`other`"), "{why}");
    }
}
