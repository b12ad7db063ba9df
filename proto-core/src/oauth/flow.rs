//! One login to one MCP server's authorization server, as a sans-IO state
//! machine: HTTP requests come out as data, responses go back in, the
//! browser step comes out as an event and its callback goes back in, and
//! the tokens come out at the end. The shape of the Python SDK's
//! `OAuthClientProvider` generator, written as quinn-proto writes a
//! connection.
//!
//! The order is the 2025-11-25 authorization spec's:
//! 1. protected resource metadata ([`discovery::resource_metadata_urls`]),
//!    falling back to the 2025-03-26 rule (the MCP server's origin is the
//!    issuer) only when no document exists at all;
//! 2. authorization server metadata, each candidate URL in turn;
//! 3. a re-authorization (a 401 with stored credentials) refreshes them
//!    without a person when the authorization server just discovered is
//!    still the issuer that minted them; when the server has moved to
//!    another one, the old login is discarded
//!    ([`LoginEvent::IssuerChanged`]: tokens and a registered client are
//!    bound to their issuer and never shown to another) and the login
//!    starts afresh;
//! 4. the client: a configured `client_id`, else a stored registration for
//!    this issuer, else a client ID metadata document when the server
//!    accepts one and it is configured, else dynamic registration;
//! 5. the browser step with PKCE, then the code redeemed — or, for
//!    `client_credentials`, the token request at once.
//!
//! Bounds: discovery and registration share 60 s from the start; the
//! browser step and redeeming the code 5 minutes. A bound that passes
//! fails the login with its name, so a login nobody finishes cannot hang.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use url::Url;

use super::assertion::{AssertionClaims, AssertionError, ClientAssertionKey, jti_from_random};
use super::authorize::{
    AuthorizationRequest, CallbackError, read_callback, select_scope, union_scope,
};
use super::challenge::BearerChallenge;
use super::discovery::{
    self, AuthorizationServerMetadata, DiscoveryError, ResourceMetadata, canonical_resource,
};
use super::dpop::{self, DpopError, DpopMode, DpopSigner, ProofClaims, ProofRequest};
use super::exchange::{ID_JAG_TYPE, ID_TOKEN_TYPE, IdentityAssertionGrant, Secret, read_id_jag};
use super::pkce::{Pkce, RANDOM_BYTES};
use super::register::{RegistrationError, choose_auth, read_registration, registration_request};
use super::token::{
    Client, ClientAuth, Grant, TokenError, TokenResponse, token_request_with_assertion,
};

/// The bound on discovery and registration.
pub const DISCOVERY_BUDGET: Duration = Duration::from_secs(60);
/// The bound on the browser step and redeeming the code.
pub const LOGIN_BUDGET: Duration = Duration::from_secs(300);

/// Which grant a login uses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantKind {
    /// Authorization code with PKCE, through a person's browser; the
    /// adapter's loopback listener answers `redirect_uri`.
    AuthorizationCode {
        /// The loopback callback URL, e.g. `http://127.0.0.1:43117/callback`.
        redirect_uri: String,
    },
    /// Machine to machine, never a browser: the configured client's own
    /// credentials.
    ClientCredentials,
    /// Workload identity federation, never a browser: a JWT the workload
    /// already holds is the grant (RFC 7523 §2.1). A configured client
    /// authenticates as well; without one, none is named.
    JwtBearer {
        /// The workload's JWT.
        assertion: Secret,
    },
    /// Enterprise-managed authorization (SEP-990), never a browser: the
    /// identity assertion is exchanged at the identity provider for an
    /// ID-JAG (RFC 8693), which the configured client then presents to
    /// the MCP server's authorization server as a JWT bearer grant.
    IdentityAssertion(Box<IdentityAssertionGrant>),
}

impl GrantKind {
    /// Whether the grant runs without a person (no browser step).
    pub fn is_unattended(&self) -> bool {
        !matches!(self, GrantKind::AuthorizationCode { .. })
    }
}

/// What a login starts from.
#[derive(Clone, Debug)]
pub struct LoginSettings {
    /// The MCP server's URL.
    pub server_url: Url,
    /// The grant.
    pub grant: GrantKind,
    /// A configured client (`oauth.client_id`, with its secret for client
    /// credentials or a confidential pre-registered client); skips
    /// registration. A client with a secret uses client_secret_post when
    /// the server lists it, else client_secret_basic.
    pub client: Option<Client>,
    /// A client registered earlier with `issuer`, from the credential
    /// store: reused only when the authorization server is still that
    /// issuer.
    pub stored_client: Option<(String, Client)>,
    /// `oauth.client_metadata_url`: a client ID metadata document URL.
    pub client_metadata_url: Option<String>,
    /// `oauth.scopes`: when set, asked for instead of the discovered ones.
    pub scopes: Option<Vec<String>>,
    /// Scopes asked for besides those (a step-up the server asked for
    /// earlier, remembered so a new login does not lose it).
    pub extra_scopes: Vec<String>,
    /// The credentials of an earlier login, when this one re-authorizes
    /// after a 401: refreshed first (no person) if the discovered
    /// authorization server is still their issuer, discarded if not.
    pub previous: Option<Credentials>,
    /// The `client_name` to register under.
    pub client_name: String,
    /// The key of a configured [`ClientAuth::PrivateKeyJwt`] client
    /// (`oauth.client_key_file`): its token requests carry an assertion
    /// signed with it.
    pub client_assertion: Option<ClientAssertionKey>,
    /// Whether the tokens are bound to a key of the host's (DPoP), and
    /// the key.
    pub dpop: DpopSettings,
}

impl LoginSettings {
    /// A login to `server_url` by `grant` with nothing else configured:
    /// no client (it registers, as `rho`), the discovered scopes, no
    /// earlier login, no client key, and the default DPoP mode without a
    /// key (so no DPoP). Callers set the rest.
    pub fn new(server_url: Url, grant: GrantKind) -> Self {
        LoginSettings {
            server_url,
            grant,
            client: None,
            stored_client: None,
            client_metadata_url: None,
            scopes: None,
            extra_scopes: Vec::new(),
            previous: None,
            client_name: "rho".into(),
            client_assertion: None,
            dpop: DpopSettings::default(),
        }
    }
}

/// A login's DPoP (RFC 9449): the configured [`DpopMode`] and the host's
/// key its token requests prove possession of. Without a key a login
/// never uses DPoP, and one that requires it fails.
#[derive(Clone, Debug, Default)]
pub struct DpopSettings {
    /// `oauth.dpop`.
    pub mode: DpopMode,
    /// The key the tokens will be bound to: the host's, never exported
    /// (only its public JWK travels, in each proof).
    pub key: Option<Arc<dyn DpopSigner>>,
}

/// One HTTP request the login needs sent.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthRequest {
    /// Matches the response to the request.
    pub id: u64,
    /// `GET` or `POST`.
    pub method: &'static str,
    /// Where (already checked against the https rule).
    pub url: Url,
    /// Extra headers (`Content-Type`, `Authorization: Basic`).
    pub headers: Vec<(String, String)>,
    /// The body, for a POST.
    pub body: Vec<u8>,
}

impl std::fmt::Debug for OAuthRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Bodies hold codes, verifiers and secrets.
        f.debug_struct("OAuthRequest")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .finish_non_exhaustive()
    }
}

/// What the login has for the host.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginEvent {
    /// Open `url` in a browser (and print it for a person elsewhere); the
    /// callback goes to [`Login::handle_callback`].
    Authorize {
        /// The authorization URL.
        url: Url,
    },
    /// A client was registered with `issuer`: store it, keyed by issuer.
    Registered {
        /// The issuer it was registered with.
        issuer: String,
        /// The registered client.
        client: Client,
    },
    /// The server's authorization server is no longer the issuer of the
    /// stored login (its PRM now names another): forget that login's
    /// tokens and registered client. The login goes on with the new one.
    IssuerChanged {
        /// The issuer of the stored login.
        previous: String,
        /// The issuer discovered now.
        current: String,
    },
    /// Refreshing the previous credentials failed; the login goes on to
    /// the grant (a browser step for the authorization code grant).
    RefreshFailed(TokenError),
    /// The authorization server does not know the client rho registered
    /// with `issuer` (it answered `invalid_client`, or refused it at the
    /// authorization endpoint): forget that registration and its tokens.
    /// The login registers a new client, once.
    ClientForgotten {
        /// The issuer the forgotten client was registered with.
        issuer: String,
    },
    /// The login finished.
    Done(Box<Credentials>),
    /// The login failed; nothing more will come.
    Failed(LoginError),
}

/// What a finished login yields, for the credential store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    /// The issuer that minted the tokens (a token from another issuer is
    /// discarded when the server is repointed).
    pub issuer: String,
    /// The client that redeemed them (needed to refresh).
    pub client: Client,
    /// The RFC 8707 resource the tokens are bound to.
    pub resource: String,
    /// The token endpoint, for refreshing.
    pub token_endpoint: Url,
    /// The scope asked for.
    pub scope: Option<String>,
    /// The token response.
    pub tokens: TokenResponse,
}

/// Why a login failed, in words a person can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// A metadata document or URL failed its checks.
    #[error(transparent)]
    Discovery(#[from] DiscoveryError),
    /// No authorization server metadata anywhere: rho never guesses.
    #[error(
        "the server publishes no OAuth authorization server metadata (tried {tried}); rho does not guess authorization endpoints"
    )]
    NoMetadata {
        /// The URLs tried.
        tried: String,
    },
    /// No way to get a client id.
    #[error(
        "the authorization server offers no dynamic client registration; configure `oauth.client_id` for this server"
    )]
    NoRegistration,
    /// Registration failed.
    #[error(transparent)]
    Registration(#[from] RegistrationError),
    /// The authorization server has no authorization endpoint.
    #[error("the authorization server metadata has no `authorization_endpoint`")]
    NoAuthorizationEndpoint,
    /// The callback ended the login.
    #[error(transparent)]
    Callback(#[from] CallbackError),
    /// The token endpoint refused or answered nonsense.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// A request could not be sent or answered.
    #[error("{what} failed: {reason}")]
    Transport {
        /// Which step.
        what: &'static str,
        /// The transport's reason.
        reason: String,
    },
    /// An assertion grant needs a client the authorization server knows.
    #[error(
        "the enterprise-managed grant needs a client the authorization server knows: configure `oauth.client_id` (or `oauth.client_metadata_url`, where the server accepts client ID metadata documents)"
    )]
    NoClientForAssertion,
    /// The identity provider refused the token exchange or answered
    /// nonsense.
    #[error("the identity provider's token exchange failed: {0}")]
    TokenExchange(TokenError),
    /// Client credentials need a configured client.
    #[error(
        "`oauth.grant = \"client_credentials\"` needs `oauth.client_id` and `oauth.client_secret_from_env` (or a client key)"
    )]
    NoClientCredentials,
    /// A `private_key_jwt` client without a key, or a key that would not
    /// sign.
    #[error(transparent)]
    Assertion(#[from] AssertionError),
    /// A `private_key_jwt` client configured without its key.
    #[error("the client authenticates with `private_key_jwt` but no signing key is configured")]
    NoClientKey,
    /// A DPoP-bound token is refreshed, or DPoP is required, and the host
    /// gave the login no key.
    #[error(
        "the token is bound to a DPoP key (RFC 9449) and the host has no such key; {}",
        crate::remedy::Remedy::LogInAgain
    )]
    NoDpopKey,
    /// DPoP is required and the authorization server does not offer it,
    /// or the proof could not be made.
    #[error(transparent)]
    Dpop(#[from] DpopError),
    /// A bound passed.
    #[error("{what} did not finish within {} s", budget.as_secs())]
    TimedOut {
        /// Which bound.
        what: &'static str,
        /// Its length.
        budget: Duration,
    },
}

#[derive(Debug)]
enum Step {
    ResourceMetadata {
        candidates: VecDeque<Url>,
        tried: Vec<String>,
        from_challenge: bool,
    },
    ServerMetadata {
        prm: Option<ResourceMetadata>,
        issuer: String,
        candidates: VecDeque<Url>,
        tried: Vec<String>,
    },
    Refreshing {
        context: Box<Context>,
        previous: Box<Credentials>,
    },
    Registering {
        context: Box<Context>,
        requested: ClientAuth,
    },
    Authorizing {
        context: Box<Context>,
        client: Client,
        pkce: Pkce,
    },
    Redeeming {
        context: Box<Context>,
        client: Client,
    },
    /// The identity provider is exchanging the identity assertion for an
    /// ID-JAG, which `client` then redeems.
    Exchanging {
        context: Box<Context>,
        client: Client,
    },
    Finished,
}

/// What discovery established.
#[derive(Debug)]
struct Context {
    server: AuthorizationServerMetadata,
    resource: String,
    scope: Option<String>,
    token_endpoint: Url,
    /// The token requests prove possession of the DPoP key.
    dpop: bool,
}

/// One login in progress. See the module docs for the order of steps.
#[derive(Debug)]
pub struct Login {
    settings: LoginSettings,
    challenge: Option<BearerChallenge>,
    random: [u8; RANDOM_BYTES],
    step: Step,
    in_flight: Option<u64>,
    next_id: u64,
    requests: VecDeque<OAuthRequest>,
    events: VecDeque<LoginEvent>,
    deadline: Instant,
    deadline_what: &'static str,
    budget: Duration,
    /// The grant runs with the client registered earlier (the store's),
    /// which the server may have forgotten.
    stored_client_in_use: bool,
    /// A forgotten client was replaced already: never twice in a login.
    reregistered: bool,
}

impl Login {
    /// Starts a login after a 401 (its Bearer `challenge`, when it had
    /// one). `random` are fresh bytes for PKCE and state.
    pub fn new(
        settings: LoginSettings,
        challenge: Option<BearerChallenge>,
        random: [u8; RANDOM_BYTES],
        now: Instant,
    ) -> Self {
        let mut login = Self {
            settings,
            challenge,
            random,
            step: Step::Finished,
            in_flight: None,
            next_id: 0,
            requests: VecDeque::new(),
            events: VecDeque::new(),
            deadline: now + DISCOVERY_BUDGET,
            deadline_what: "OAuth discovery",
            budget: DISCOVERY_BUDGET,
            stored_client_in_use: false,
            reregistered: false,
        };
        let from_challenge = login
            .challenge
            .as_ref()
            .and_then(|c| c.resource_metadata.clone());
        match discovery::resource_metadata_urls(
            &login.settings.server_url,
            from_challenge.as_deref(),
        ) {
            Ok(candidates) => {
                login.step = Step::ResourceMetadata {
                    candidates: candidates.into(),
                    tried: Vec::new(),
                    from_challenge: from_challenge.is_some(),
                };
                login.next_request();
            }
            Err(e) => login.fail(e.into()),
        }
        login
    }

    /// The next request to send.
    #[must_use]
    pub fn poll_request(&mut self) -> Option<OAuthRequest> {
        self.requests.pop_front()
    }

    /// The next event for the host.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<LoginEvent> {
        self.events.pop_front()
    }

    /// When [`Login::handle_timeout`] is due, while the login runs.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        (!matches!(self.step, Step::Finished)).then_some(self.deadline)
    }

    /// A bound passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        if now >= self.deadline && !matches!(self.step, Step::Finished) {
            self.fail(LoginError::TimedOut {
                what: self.deadline_what,
                budget: self.budget,
            });
        }
    }

    /// A request could not be sent or its answer read.
    pub fn handle_failure(&mut self, _now: Instant, id: u64, reason: String) {
        if self.in_flight != Some(id) {
            return;
        }
        self.in_flight = None;
        let what = match &self.step {
            Step::ResourceMetadata { .. } => "fetching the protected resource metadata",
            Step::ServerMetadata { .. } => "fetching the authorization server metadata",
            Step::Registering { .. } => "registering with the authorization server",
            Step::Refreshing { .. } => "refreshing the token",
            Step::Redeeming { .. } | Step::Authorizing { .. } => "the token request",
            Step::Exchanging { .. } => "the token exchange at the identity provider",
            Step::Finished => return,
        };
        self.fail(LoginError::Transport { what, reason });
    }

    /// The answer to request `id`.
    pub fn handle_response(&mut self, now: Instant, id: u64, status: u16, body: &[u8]) {
        if self.in_flight != Some(id) {
            return;
        }
        self.in_flight = None;
        let ok = (200..300).contains(&status);
        match std::mem::replace(&mut self.step, Step::Finished) {
            Step::ResourceMetadata {
                candidates,
                tried,
                from_challenge,
            } => {
                if ok {
                    match discovery::read_resource_metadata(body, &self.settings.server_url) {
                        Ok(prm) => self.discover_server(Some(prm)),
                        Err(e) => self.fail(e.into()),
                    }
                } else {
                    self.step = Step::ResourceMetadata {
                        candidates,
                        tried,
                        from_challenge,
                    };
                    self.next_request();
                }
            }
            Step::ServerMetadata {
                prm,
                issuer,
                candidates,
                tried,
            } => {
                if ok {
                    let expected = match &prm {
                        Some(_) => issuer.clone(),
                        None => {
                            legacy_issuer(body, &self.settings.server_url).unwrap_or(issuer.clone())
                        }
                    };
                    match discovery::read_authorization_server_metadata(
                        body,
                        &expected,
                        &self.settings.server_url,
                    ) {
                        Ok(server) => self.choose_client(now, prm, server),
                        Err(e) => self.fail(e.into()),
                    }
                } else {
                    self.step = Step::ServerMetadata {
                        prm,
                        issuer,
                        candidates,
                        tried,
                    };
                    self.next_request();
                }
            }
            Step::Refreshing { context, previous } => match read_refresh(&previous, status, body) {
                Ok(refreshed) => {
                    self.events
                        .push_back(LoginEvent::Done(Box::new(Credentials {
                            token_endpoint: context.token_endpoint,
                            ..refreshed
                        })));
                }
                Err(e) => {
                    // A registration the server forgot is replaced, not
                    // offered to the authorization endpoint again.
                    let forgotten = e.client_is_unknown()
                        && self.settings.client.is_none()
                        && !self.reregistered
                        && self
                            .settings
                            .stored_client
                            .as_ref()
                            .is_some_and(|(_, c)| c.id == previous.client.id);
                    if forgotten {
                        self.forget_client(&context.server.issuer);
                    }
                    self.events.push_back(LoginEvent::RefreshFailed(e));
                    self.pick_client(now, *context);
                }
            },
            Step::Registering { context, requested } => {
                match read_registration(status, body, requested) {
                    Ok(client) => {
                        self.events.push_back(LoginEvent::Registered {
                            issuer: context.server.issuer.clone(),
                            client: client.clone(),
                        });
                        self.begin_grant(now, *context, client);
                    }
                    Err(e) => self.fail(e.into()),
                }
            }
            Step::Exchanging { context, client } => match read_id_jag(status, body) {
                Ok(id_jag) => self.redeem_assertion(*context, client, &id_jag),
                Err(e) => self.fail(LoginError::TokenExchange(e)),
            },
            Step::Redeeming { context, client } => {
                match dpop::read_bound_token_response(status, body, context.dpop) {
                    Ok(tokens)
                        if self.settings.dpop.mode == DpopMode::Required
                            && !dpop::is_bound(&tokens) =>
                    {
                        self.fail(
                            DpopError::NotBound {
                                issuer: context.server.issuer.clone(),
                                token_type: tokens.token_type,
                            }
                            .into(),
                        );
                    }
                    Ok(tokens) => {
                        self.events
                            .push_back(LoginEvent::Done(Box::new(Credentials {
                                issuer: context.server.issuer.clone(),
                                client,
                                resource: context.resource,
                                token_endpoint: context.token_endpoint,
                                scope: context.scope,
                                tokens,
                            })));
                    }
                    Err(e) => self.fail(e.into()),
                }
            }
            other => self.step = other,
        }
    }

    /// The DPoP proof `request` must carry, when it is this login's token
    /// request and the login binds its tokens (the authorization server
    /// offers DPoP, or the refreshed token is bound): `iat` is the
    /// wall-clock time and `jti` a fresh unique id (the host's, see
    /// [`dpop::jti_from_random`]), `nonce` the latest the authorization
    /// server supplied. `None` for any other request. A resent request
    /// (after `use_dpop_nonce`) needs a new proof.
    pub fn proof(
        &self,
        request: &OAuthRequest,
        iat: u64,
        jti: String,
        nonce: Option<&str>,
    ) -> Option<Result<String, LoginError>> {
        if self.in_flight != Some(request.id) {
            return None;
        }
        let wanted = match &self.step {
            Step::Redeeming { context, .. } => context.dpop,
            Step::Refreshing { previous, .. } => dpop::is_bound(&previous.tokens),
            _ => false,
        };
        if !wanted {
            return None;
        }
        let Some(key) = &self.settings.dpop.key else {
            return Some(Err(LoginError::NoDpopKey));
        };
        let claims = ProofClaims::new(
            &ProofRequest {
                method: request.method,
                url: &request.url,
                access_token: None,
                nonce,
            },
            iat,
            jti,
        );
        Some(dpop::proof(key.as_ref(), &claims).map_err(LoginError::from))
    }

    /// The authorization endpoint refused to start the browser step (an
    /// error page or answer instead of a redirect, seen by a headless
    /// login): when the login offered the registration the store kept, the
    /// server has likely forgotten it, so it is forgotten here too and a
    /// new client registered, once; a new [`LoginEvent::Authorize`]
    /// follows. Returns whether the login goes on.
    pub fn handle_authorization_refused(&mut self, now: Instant) -> bool {
        if !self.stored_client_in_use || self.reregistered {
            return false;
        }
        let Step::Authorizing { context, .. } = std::mem::replace(&mut self.step, Step::Finished)
        else {
            return false;
        };
        self.forget_client(&context.server.issuer);
        self.pick_client(now, *context);
        true
    }

    /// Drops the stored registration of `issuer`, telling the host.
    fn forget_client(&mut self, issuer: &str) {
        self.reregistered = true;
        self.stored_client_in_use = false;
        self.settings.stored_client = None;
        self.events.push_back(LoginEvent::ClientForgotten {
            issuer: issuer.to_owned(),
        });
    }

    /// A request reached the loopback callback path with `query`. Returns
    /// whether it ended the browser step; a request without this login's
    /// state is ignored (the listener answers it 404 and keeps waiting).
    pub fn handle_callback(&mut self, now: Instant, query: &str) -> bool {
        let Step::Authorizing { pkce, context, .. } = &self.step else {
            return false;
        };
        let issuer = context.server.issuer.clone();
        let iss_required = context
            .server
            .authorization_response_iss_parameter_supported;
        match read_callback(query, pkce, &issuer, iss_required) {
            Err(CallbackError::StateMismatch) => false,
            Err(e) => {
                self.fail(e.into());
                true
            }
            Ok(code) => {
                let Step::Authorizing {
                    context,
                    client,
                    pkce,
                } = std::mem::replace(&mut self.step, Step::Finished)
                else {
                    return false;
                };
                let GrantKind::AuthorizationCode { redirect_uri } = &self.settings.grant else {
                    return false;
                };
                let assertion = match self.assertion(&client, &context.server.issuer) {
                    Ok(assertion) => assertion,
                    Err(e) => {
                        self.fail(e);
                        return true;
                    }
                };
                let request = token_request_with_assertion(
                    &client,
                    &Grant::AuthorizationCode {
                        code: &code,
                        verifier: &pkce.verifier,
                        redirect_uri,
                    },
                    &context.resource,
                    None,
                    assertion.as_deref(),
                );
                self.post_form(
                    context.token_endpoint.clone(),
                    request.headers,
                    request.body,
                );
                self.step = Step::Redeeming { context, client };
                let _ = now;
                true
            }
        }
    }

    fn discover_server(&mut self, prm: Option<ResourceMetadata>) {
        let issuer = match &prm {
            Some(prm) => prm.authorization_servers[0].clone(),
            // 2025-03-26: no resource metadata, the server's origin is
            // the authorization server.
            None => {
                let mut origin = self.settings.server_url.clone();
                origin.set_path("");
                origin.set_query(None);
                origin.set_fragment(None);
                origin.as_str().trim_end_matches('/').to_owned()
            }
        };
        let url = match discovery::check_endpoint(
            "the authorization server",
            &issuer,
            &self.settings.server_url,
        ) {
            Ok(url) => url,
            Err(e) => return self.fail(e.into()),
        };
        self.step = Step::ServerMetadata {
            prm,
            issuer,
            candidates: discovery::authorization_server_metadata_urls(&url).into(),
            tried: Vec::new(),
        };
        self.next_request();
    }

    fn choose_client(
        &mut self,
        now: Instant,
        prm: Option<ResourceMetadata>,
        server: AuthorizationServerMetadata,
    ) {
        let resource = prm
            .as_ref()
            .and_then(|p| Url::parse(&p.resource).ok())
            .map_or_else(
                || canonical_resource(&self.settings.server_url),
                |r| canonical_resource(&r),
            );
        let scope = match &self.settings.scopes {
            Some(scopes) if !scopes.is_empty() => Some(scopes.join(" ")),
            _ => select_scope(
                self.challenge.as_ref().and_then(|c| c.scope.as_deref()),
                prm.as_ref().and_then(|p| p.scopes_supported.as_deref()),
                &server,
            ),
        };
        let scope = match (scope, self.settings.extra_scopes.is_empty()) {
            (scope, true) => scope,
            (scope, false) => Some(union_scope(scope.as_deref(), &self.settings.extra_scopes)),
        };
        let Some(token) = server.token_endpoint.as_deref() else {
            return self.fail(DiscoveryError::MissingEndpoint("token_endpoint").into());
        };
        let token_endpoint = match Url::parse(token) {
            Ok(url) => url,
            Err(_) => {
                return self.fail(
                    DiscoveryError::BadUrl {
                        what: "the token endpoint",
                        url: token.to_owned(),
                    }
                    .into(),
                );
            }
        };
        // Auto binds tokens only where both sides take DPoP: the MCP server
        // said so in its challenge or its metadata, and (below) the
        // authorization server lists ES256. A server behind an
        // authorization server that offers DPoP may itself take only
        // Bearer tokens, and a bound token would lock it out.
        let resource_takes_dpop = self.challenge.as_ref().is_some_and(|c| c.dpop)
            || prm.as_ref().is_some_and(ResourceMetadata::takes_dpop);
        let mode = match (self.settings.dpop.mode, &self.settings.dpop.key) {
            // No key, no proof: auto falls back to Bearer, required fails.
            (DpopMode::Auto, None) => DpopMode::Off,
            (DpopMode::Auto, Some(_)) if !resource_takes_dpop => DpopMode::Off,
            (mode, _) => mode,
        };
        let dpop = match dpop::decide(
            mode,
            &server.issuer,
            server.dpop_signing_alg_values_supported.as_deref(),
        ) {
            Ok(true) if self.settings.dpop.key.is_none() => {
                return self.fail(LoginError::NoDpopKey);
            }
            Ok(dpop) => dpop,
            Err(e) => return self.fail(e.into()),
        };
        let context = Context {
            server,
            resource,
            scope,
            token_endpoint,
            dpop,
        };
        // A login of another issuer is discarded, never shown to this one.
        let known = self
            .settings
            .previous
            .as_ref()
            .map(|p| p.issuer.clone())
            .or_else(|| self.settings.stored_client.as_ref().map(|(i, _)| i.clone()));
        if let Some(previous) = known.filter(|i| *i != context.server.issuer) {
            self.settings.previous = None;
            self.settings.stored_client = None;
            self.events.push_back(LoginEvent::IssuerChanged {
                previous,
                current: context.server.issuer.clone(),
            });
        }
        if let Some(previous) = self.settings.previous.take() {
            // Same issuer: its refresh token, at the endpoint it now names.
            let moved = Credentials {
                token_endpoint: context.token_endpoint.clone(),
                ..previous.clone()
            };
            let assertion = match self.assertion(&moved.client, &context.server.issuer) {
                Ok(assertion) => assertion,
                Err(e) => return self.fail(e),
            };
            if let Some(request) = refresh_request_with_assertion(&moved, assertion.as_deref()) {
                let id = self.issue(request);
                self.in_flight = Some(id);
                self.step = Step::Refreshing {
                    context: Box::new(context),
                    previous: Box::new(previous),
                };
                return;
            }
        }
        self.pick_client(now, context);
    }

    /// Step 4: the client this login uses, then the grant.
    fn pick_client(&mut self, now: Instant, context: Context) {
        if let Some(mut client) = self.settings.client.clone() {
            // A configured secret is sent the way this server takes it:
            // client_secret_post when it lists it (client_id in the body,
            // where the servers people run read it; see
            // `register::choose_auth`), else client_secret_basic (RFC
            // 8414's default).
            if client.secret.is_some() {
                let methods = context
                    .server
                    .token_endpoint_auth_methods_supported
                    .as_deref();
                let lists = |m: &str| methods.is_some_and(|ms| ms.iter().any(|x| x == m));
                if lists("client_secret_post") {
                    client.auth = ClientAuth::ClientSecretPost;
                }
            }
            return self.begin_grant(now, context, client);
        }
        match &self.settings.grant {
            GrantKind::ClientCredentials => return self.fail(LoginError::NoClientCredentials),
            // A workload needs no registration: its JWT says who it is.
            GrantKind::JwtBearer { .. } => {
                return self.begin_grant(now, context, Client::anonymous());
            }
            _ => {}
        }
        if let Some((issuer, client)) = &self.settings.stored_client
            && *issuer == context.server.issuer
        {
            let client = client.clone();
            self.stored_client_in_use = true;
            return self.begin_grant(now, context, client);
        }
        self.stored_client_in_use = false;
        if context.server.client_id_metadata_document_supported
            && let Some(url) = self.settings.client_metadata_url.clone()
        {
            let client = Client {
                id: url,
                secret: None,
                auth: ClientAuth::None,
            };
            return self.begin_grant(now, context, client);
        }
        let Some(endpoint) = context.server.registration_endpoint.clone() else {
            return self.fail(LoginError::NoRegistration);
        };
        let Ok(endpoint) = Url::parse(&endpoint) else {
            return self.fail(LoginError::NoRegistration);
        };
        let redirect_uri = match &self.settings.grant {
            GrantKind::AuthorizationCode { redirect_uri } => redirect_uri,
            GrantKind::IdentityAssertion(_) => return self.fail(LoginError::NoClientForAssertion),
            _ => return self.fail(LoginError::NoClientCredentials),
        };
        let requested = choose_auth(&context.server);
        let body = registration_request(&self.settings.client_name, redirect_uri, requested);
        let id = self.issue(OAuthRequest {
            id: 0,
            method: "POST",
            url: endpoint,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: serde_json::to_vec(&body).unwrap_or_default(),
        });
        self.in_flight = Some(id);
        self.step = Step::Registering {
            context: Box::new(context),
            requested,
        };
    }

    fn begin_grant(&mut self, now: Instant, context: Context, client: Client) {
        match &self.settings.grant {
            GrantKind::JwtBearer { assertion } => {
                let assertion = assertion.clone();
                self.redeem_assertion(context, client, &assertion);
            }
            GrantKind::IdentityAssertion(grant) => {
                let grant = grant.clone();
                self.exchange_identity_assertion(context, client, &grant);
            }
            GrantKind::ClientCredentials => {
                self.redeem(context, client, &Grant::ClientCredentials);
            }
            GrantKind::AuthorizationCode { redirect_uri } => {
                let Some(endpoint) = context.server.authorization_endpoint.as_deref() else {
                    return self.fail(LoginError::NoAuthorizationEndpoint);
                };
                let endpoint = match discovery::check_endpoint(
                    "the authorization endpoint",
                    endpoint,
                    &self.settings.server_url,
                ) {
                    Ok(url) => url,
                    Err(e) => return self.fail(e.into()),
                };
                let pkce = Pkce::from_random(&self.random);
                let url = AuthorizationRequest {
                    endpoint: &endpoint,
                    client_id: &client.id,
                    redirect_uri,
                    pkce: &pkce,
                    resource: &context.resource,
                    scope: context.scope.as_deref(),
                }
                .url();
                self.events.push_back(LoginEvent::Authorize { url });
                self.deadline = now + LOGIN_BUDGET;
                self.deadline_what = "the browser login";
                self.budget = LOGIN_BUDGET;
                self.step = Step::Authorizing {
                    context: Box::new(context),
                    client,
                    pkce,
                };
            }
        }
    }

    /// The JWT bearer grant (RFC 7523 §2.1) of `assertion` by `client` at
    /// the authorization server's token endpoint.
    fn redeem_assertion(&mut self, context: Context, client: Client, assertion: &Secret) {
        self.redeem(context, client, &Grant::JwtBearer(assertion.expose()));
    }

    /// Sends `grant` by `client` to the authorization server's token
    /// endpoint (with a client assertion when the client has a key); its
    /// answer is the login's tokens.
    fn redeem(&mut self, context: Context, client: Client, grant: &Grant<'_>) {
        let client_assertion = match self.assertion(&client, &context.server.issuer) {
            Ok(client_assertion) => client_assertion,
            Err(e) => return self.fail(e),
        };
        let request = token_request_with_assertion(
            &client,
            grant,
            &context.resource,
            context.scope.as_deref(),
            client_assertion.as_deref(),
        );
        self.post_form(
            context.token_endpoint.clone(),
            request.headers,
            request.body,
        );
        self.step = Step::Redeeming {
            context: Box::new(context),
            client,
        };
    }

    /// SEP-990's token exchange (RFC 8693) at the identity provider: the
    /// ID token for an ID-JAG meant for this authorization server (its
    /// issuer the `audience`, unless configured) and this MCP server (the
    /// `resource`), for the scope the login asks.
    fn exchange_identity_assertion(
        &mut self,
        context: Context,
        client: Client,
        grant: &IdentityAssertionGrant,
    ) {
        let endpoint = match discovery::check_endpoint(
            "the identity provider's token endpoint",
            grant.idp_token_endpoint.as_str(),
            &self.settings.server_url,
        ) {
            Ok(url) => url,
            Err(e) => return self.fail(e.into()),
        };
        let idp_client = grant.idp_client.clone().unwrap_or_else(Client::anonymous);
        let audience = grant.audience.as_deref().unwrap_or(&context.server.issuer);
        let request = token_request_with_assertion(
            &idp_client,
            &Grant::TokenExchange {
                subject_token: grant.id_token.expose(),
                subject_token_type: ID_TOKEN_TYPE,
                requested_token_type: ID_JAG_TYPE,
                audience,
            },
            &context.resource,
            context.scope.as_deref(),
            None,
        );
        self.post_form(endpoint, request.headers, request.body);
        self.step = Step::Exchanging {
            context: Box::new(context),
            client,
        };
    }

    /// The signed client assertion `client` authenticates with at
    /// `issuer`'s token endpoint, when it is a `private_key_jwt` client.
    fn assertion(&self, client: &Client, issuer: &str) -> Result<Option<String>, LoginError> {
        client_assertion_for(
            client,
            issuer,
            self.settings.client_assertion.as_ref(),
            &self.random,
        )
    }

    /// Sends the next metadata candidate, or moves on when none is left.
    fn next_request(&mut self) {
        match &mut self.step {
            Step::ResourceMetadata {
                candidates,
                tried,
                from_challenge,
            } => match candidates.pop_front() {
                Some(url) => {
                    tried.push(url.to_string());
                    self.get(url);
                }
                None if *from_challenge => {
                    let tried = tried.join(", ");
                    self.fail(LoginError::NoMetadata { tried });
                }
                None => self.discover_server(None),
            },
            Step::ServerMetadata {
                candidates, tried, ..
            } => match candidates.pop_front() {
                Some(url) => {
                    tried.push(url.to_string());
                    self.get(url);
                }
                None => {
                    let tried = tried.join(", ");
                    self.fail(LoginError::NoMetadata { tried });
                }
            },
            _ => {}
        }
    }

    fn get(&mut self, url: Url) {
        let id = self.issue(OAuthRequest {
            id: 0,
            method: "GET",
            url,
            headers: vec![("Accept".into(), "application/json".into())],
            body: Vec::new(),
        });
        self.in_flight = Some(id);
    }

    fn post_form(&mut self, url: Url, mut headers: Vec<(String, String)>, body: String) {
        headers.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        let id = self.issue(OAuthRequest {
            id: 0,
            method: "POST",
            url,
            headers,
            body: body.into_bytes(),
        });
        self.in_flight = Some(id);
    }

    fn issue(&mut self, mut request: OAuthRequest) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        request.id = id;
        self.requests.push_back(request);
        id
    }

    fn fail(&mut self, error: LoginError) {
        self.step = Step::Finished;
        self.in_flight = None;
        self.requests.clear();
        self.events.push_back(LoginEvent::Failed(error));
    }
}
/// The issuer a 2025-03-26-era server (no protected resource metadata)
/// may give its own metadata: that era put the authorization server at the
/// MCP server's origin, and servers commonly mount it under a path there
/// (`https://host/oauth`). A document found at the server's origin whose
/// `issuer` has that same origin is the server's own, so it is accepted;
/// any other issuer is still refused by the equality check.
fn legacy_issuer(body: &[u8], server: &Url) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Issuer {
        issuer: String,
    }
    let doc: Issuer = serde_json::from_slice(body).ok()?;
    let url = Url::parse(&doc.issuer).ok()?;
    (url.origin() == server.origin()).then_some(doc.issuer)
}

/// The signed client assertion `client` authenticates with at `issuer`'s
/// token endpoint when it is a `private_key_jwt` client (none for other
/// clients): signed with `key`, its `jti` made from fresh `random` bytes.
/// Every request of such a client carries one, a refresh as much as the
/// grant, or the server refuses it as unauthenticated.
pub fn client_assertion_for(
    client: &Client,
    issuer: &str,
    key: Option<&ClientAssertionKey>,
    random: &[u8],
) -> Result<Option<String>, LoginError> {
    if client.auth != ClientAuth::PrivateKeyJwt {
        return Ok(None);
    }
    let key = key.ok_or(LoginError::NoClientKey)?;
    let claims = AssertionClaims::new(&client.id, issuer, key.now_unix, jti_from_random(random));
    Ok(Some(super::assertion::client_assertion(
        key.signer.as_ref(),
        &claims,
    )?))
}

/// The refresh of `credentials` as a request (id 0): no person, no
/// browser. Send it before the access token expires or after a 401.
pub fn refresh_request(credentials: &Credentials) -> Option<OAuthRequest> {
    refresh_request_with_assertion(credentials, None)
}

/// [`refresh_request`] with the signed client assertion of a
/// `private_key_jwt` client.
pub fn refresh_request_with_assertion(
    credentials: &Credentials,
    assertion: Option<&str>,
) -> Option<OAuthRequest> {
    let refresh = credentials.tokens.refresh_token.as_deref()?;
    let request = token_request_with_assertion(
        &credentials.client,
        &Grant::RefreshToken(refresh),
        &credentials.resource,
        None,
        assertion,
    );
    let mut headers = request.headers;
    headers.push((
        "Content-Type".into(),
        "application/x-www-form-urlencoded".into(),
    ));
    Some(OAuthRequest {
        id: 0,
        method: "POST",
        url: credentials.token_endpoint.clone(),
        headers,
        body: request.body.into_bytes(),
    })
}

/// Reads the answer to [`refresh_request`]: the new credentials, keeping
/// the old refresh token when the server did not rotate it. The host
/// stores the result before it forgets the old one, so a crash between
/// the two never loses the only refresh token. `invalid_grant`
/// ([`TokenError::grant_is_dead`]) means only a new login helps.
pub fn read_refresh(
    credentials: &Credentials,
    status: u16,
    body: &[u8],
) -> Result<Credentials, TokenError> {
    // A bound token's refresh carried a proof (see [`Login::proof`]).
    let proved = dpop::is_bound(&credentials.tokens);
    let mut tokens = dpop::read_bound_token_response(status, body, proved)?;
    if tokens.refresh_token.is_none() {
        tokens.refresh_token = credentials.tokens.refresh_token.clone();
    }
    Ok(Credentials {
        tokens,
        ..credentials.clone()
    })
}
