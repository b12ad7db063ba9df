//! The transport's public vocabulary: its options (and the configured
//! headers they carry, resolved), the exchanges it asks the executor to
//! make, and what an executor is told to do with them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use crate::config::{HttpConfig, OAuthGrant};
use crate::oauth::dpop::DpopProver;
use crate::oauth::store::StoreError;
use crate::remedy::Remedy;
use crate::wire::framing::DEFAULT_MAX_LINE;

/// Limits and timings of one HTTP session.
#[derive(Clone)]
pub struct HttpOptions {
    /// The MCP endpoint.
    pub url: Url,
    /// Configured headers with their resolved values (see
    /// [`resolve_headers`]). Secret: never logged.
    pub headers: Vec<(String, String)>,
    /// The largest JSON body accepted.
    pub max_body: usize,
    /// How many times in a row a stream may be resumed without delivering
    /// an event before rho gives up on it.
    pub max_stream_resumes: u32,
    /// The resume delay when the server sent no SSE `retry`.
    pub default_retry: Duration,
    /// How long the DELETE at close may take.
    pub delete_timeout: Duration,
    /// How often to ping a ready session.
    pub ping_interval: Duration,
    /// The entry has an `oauth` table: a 401 asks for `rho mcp login`
    /// rather than for a table and a login.
    pub oauth: bool,
    /// With `oauth`: its grant. One that gets tokens without a person
    /// (`client_credentials`, `jwt_bearer`, `identity_assertion`) has a
    /// refusal name the grant's settings to check, never a login to run.
    pub grant: Option<OAuthGrant>,
    /// With `oauth`: the host can re-authorize (it has an
    /// [`crate::host::Authorizer`]), so a request refused for its token
    /// waits for a new one instead of failing (see the module docs).
    pub reauthorize: bool,
    /// The longest time messages after `notifications/initialized` wait for
    /// the server stream's GET to be answered (see the module docs).
    pub server_stream_wait: Duration,
    /// The host's DPoP prover: a request that presents an
    /// `Authorization: DPoP` token carries a fresh proof from it (see
    /// [`crate::oauth::dpop`]). `None`: no proofs.
    pub dpop: Option<Arc<dyn DpopProver>>,
}

impl HttpOptions {
    /// Defaults for `url`: 16 MiB bodies, 5 resumes, 1 s default retry,
    /// 2 s DELETE, a ping each minute, 2 s for the server stream's answer.
    pub fn new(url: Url, headers: Vec<(String, String)>) -> Self {
        Self {
            url,
            headers,
            max_body: DEFAULT_MAX_LINE,
            max_stream_resumes: 5,
            default_retry: Duration::from_secs(1),
            delete_timeout: Duration::from_secs(2),
            ping_interval: Duration::from_secs(60),
            oauth: false,
            grant: None,
            reauthorize: false,
            server_stream_wait: Duration::from_secs(2),
            dpop: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("url", &self.url.as_str())
            .field("headers", &header_names(&self.headers))
            .field("max_body", &self.max_body)
            .field("dpop", &self.dpop.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a server's configured headers cannot be sent: the user's
/// environment is at fault, and the message says what to export or fix.
/// The variable's value is never part of it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// A `headers_from_env` entry names a variable that is not set.
    #[error(
        "server `{server}`: headers_from_env: `{header}` wants the ambient variable `{variable}`, which is not set; export it or remove the entry"
    )]
    MissingVariable {
        /// The server identity.
        server: String,
        /// The header the variable is for.
        header: String,
        /// The variable that is not set.
        variable: String,
    },
    /// The variable holds a CR, LF or other control character, which
    /// would start a new header.
    #[error(
        "server `{server}`: headers_from_env: the ambient variable `{variable}` for header `{header}` holds a CR, LF or other control character, which a header value cannot carry; fix the variable (the value is not shown)"
    )]
    ControlCharacter {
        /// The server identity.
        server: String,
        /// The header the variable is for.
        header: String,
        /// The variable with the bad value.
        variable: String,
    },
}

/// The headers a server's requests carry: `headers` literally, then
/// `headers_from_env` from the ambient variables, which win on a name
/// collision (names compare case-insensitively). A variable named in
/// `headers_from_env` that is not set fails that server.
pub fn resolve_headers(
    server: &str,
    ambient: &[(String, String)],
    config: &HttpConfig,
) -> Result<Vec<(String, String)>, HeaderError> {
    let mut out: Vec<(String, String)> = config
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (header, variable) in &config.headers_from_env {
        let value = ambient
            .iter()
            .rev()
            .find(|(k, _)| k == variable)
            .map(|(_, v)| v.clone())
            .ok_or_else(|| HeaderError::MissingVariable {
                server: server.to_owned(),
                header: header.clone(),
                variable: variable.clone(),
            })?;
        // A CR or LF would start a new header; the HTTP client would refuse
        // the value with a message naming neither the header nor the
        // variable.
        if value.chars().any(|c| c.is_ascii_control() && c != '\t') {
            return Err(HeaderError::ControlCharacter {
                server: server.to_owned(),
                header: header.clone(),
                variable: variable.clone(),
            });
        }
        out.retain(|(k, _)| !k.eq_ignore_ascii_case(header));
        out.push((header.clone(), value));
    }
    Ok(out)
}

/// Identifies one HTTP exchange (a request and its response). Opaque: a
/// session numbers its own exchanges; an executor only hands them back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeId(pub(crate) u64);

impl ExchangeId {
    /// The id of exchange number `n` of some other numbering than a
    /// session's: a request the host makes on its own (an OAuth login
    /// step), or a test's.
    pub fn new(n: u64) -> Self {
        Self(n)
    }
}

/// An HTTP method the transport uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Opens or resumes a server stream.
    Get,
    /// Carries one client message.
    Post,
    /// Ends the session.
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }
}

/// An HTTP request for the executor to make. Its body, if any, is sent as
/// is; its response is fed back with the same [`ExchangeId`].
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Which exchange this is.
    pub exchange: ExchangeId,
    /// The method.
    pub method: Method,
    /// The URL (always the configured endpoint, which passed the policy).
    pub url: Url,
    /// Headers, in order. Values may be secret.
    pub headers: Vec<(String, String)>,
    /// The body (empty for GET and DELETE).
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("exchange", &self.exchange)
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .field("headers", &header_names(&self.headers))
            .field("body_len", &self.body.len())
            .finish()
    }
}

fn header_names(headers: &[(String, String)]) -> Vec<&str> {
    headers.iter().map(|(k, _)| k.as_str()).collect()
}

/// What the transport wants the executor to do.
#[derive(Debug, PartialEq, Eq)]
pub enum HttpOutput {
    /// Make this request.
    Send(HttpRequest),
    /// Stop reading this exchange's response and drop it; further input
    /// for it is ignored anyway.
    Abort(ExchangeId),
}

/// Why an HTTP exchange failed, as the executor reports it (see
/// [`crate::connection::HttpInput::Failed`]): no connection, a TLS
/// handshake that failed, a body that broke off, no answer in time.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct HttpFailure {
    /// What the executor knows about the failure beyond its words.
    pub kind: HttpFailureKind,
    /// What the HTTP stack or the OS said, for a person.
    pub reason: String,
}

impl HttpFailure {
    /// A failure of `kind`, in these words.
    pub fn new(kind: HttpFailureKind, reason: impl Into<String>) -> Self {
        Self {
            kind,
            reason: reason.into(),
        }
    }

    /// A failure nothing more is known of than its words.
    pub fn other(reason: impl Into<String>) -> Self {
        Self::new(HttpFailureKind::Other, reason)
    }
}

/// What an executor knows of an [`HttpFailure`] beyond its words, where it
/// can tell: the core says what a person can do about it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpFailureKind {
    /// Nothing more specific: no connection, a broken body, a timeout.
    #[default]
    Other,
    /// The server's certificate does not chain to a root this system
    /// trusts (rustls' `UnknownIssuer`): a private CA, or no roots were
    /// found. `SSL_CERT_FILE` can name the CA.
    UnknownIssuer,
    /// The server's certificate was refused for another reason: expired,
    /// for another name, revoked, malformed.
    InvalidCertificate,
}

/// Why the host could not get a server a new `Authorization` header (see
/// [`crate::host::Authorizer`]). The requests that waited for one fail
/// with it, so it is said in words a person can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorizationError {
    /// The run has no authorizer: no one can log in again here.
    #[error("this run cannot log in again")]
    CannotLogIn,
    /// The server's credentials are not the host's to replace: its entry
    /// configures an `Authorization` header, or has no `oauth` table.
    #[error(
        "server `{server}` has a configured Authorization header or no `oauth` table; rho does not replace it"
    )]
    NotManaged {
        /// The server identity.
        server: String,
    },
    /// The stored login could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server refused the token (401) and no new one could be had
    /// here: the refresh or the login failed, or no one can log in.
    #[error("{reason}: {}", log_in(.server))]
    LoginNeeded {
        /// The server identity.
        server: String,
        /// Why no token came: what the authorization server, the
        /// credential store or the login said.
        reason: String,
    },
    /// The server wants more scope (403 `insufficient_scope`) and no
    /// login could get it here.
    #[error(
        "{reason}{}: {}",
        scope_asked(.scope),
        log_in_for_scope(.server)
    )]
    StepUpNeeded {
        /// The server identity.
        server: String,
        /// Why no token came: what the authorization server, the
        /// credential store or the login said.
        reason: String,
        /// The scope the server asked for; empty when it named none.
        scope: Vec<String>,
    },
    /// The server's grant cannot run as configured: a secret its config
    /// names (a file, an ambient variable, the client key) is missing or
    /// unusable. A login would fail the same way, so the reason says what
    /// to fix (the key and the file or variable), never to log in.
    #[error("{reason}")]
    GrantMisconfigured {
        /// The server identity.
        server: String,
        /// Which key is wrong, why, and what to do about it.
        reason: String,
    },
    /// Another host's reason, in its own words (a replayed transcript's
    /// refusal is one too).
    #[error("{0}")]
    Refused(String),
    /// The server's grant gets tokens without a person
    /// (`client_credentials`, `jwt_bearer`, `identity_assertion`) and got
    /// none that the server accepts: no login helps, its configuration or
    /// its credentials must be fixed.
    #[error("{reason}{}", grant_fix(.server, *.grant))]
    GrantFailed {
        /// The server identity.
        server: String,
        /// The configured grant.
        grant: OAuthGrant,
        /// Why no token came: what the authorization server, the identity
        /// provider or the grant's secrets said.
        reason: String,
    },
}

impl AuthorizationError {
    /// What a person can do about this refusal, when a login helps.
    pub fn remedy(&self) -> Option<Remedy<'_>> {
        match self {
            Self::LoginNeeded { server, .. } => Some(Remedy::LogIn { server }),
            Self::StepUpNeeded { server, .. } => Some(Remedy::LogInForScope { server }),
            _ => None,
        }
    }

    /// This refusal as a server whose `oauth.grant` is `grant` shows it: a
    /// login (or a step-up login) needed becomes
    /// [`AuthorizationError::GrantFailed`] when the grant needs no person,
    /// since no login helps there; anything else is unchanged.
    pub fn for_grant(self, grant: Option<OAuthGrant>) -> Self {
        match (self, grant) {
            (
                Self::LoginNeeded { server, reason } | Self::StepUpNeeded { server, reason, .. },
                Some(grant),
            ) if grant.is_unattended() => Self::GrantFailed {
                server,
                grant,
                reason,
            },
            (refusal, _) => refusal,
        }
    }
}

/// What to fix for server `server`, whose `grant` needs no person, when
/// it got no token: the keys that grant reads.
fn grant_fix(server: &str, grant: OAuthGrant) -> String {
    let keys = match grant {
        OAuthGrant::JwtBearer => {
            "its workload token (`oauth.assertion_file` or `assertion_from_env`), and that the authorization server trusts the token's issuer"
        }
        OAuthGrant::IdentityAssertion => {
            "its ID token (`oauth.id_token_file` or `id_token_from_env`), the identity provider's keys (`idp_token_endpoint`, `idp_client_id`, `idp_client_secret_file` or `idp_client_secret_from_env`) and `client_id`"
        }
        _ => {
            "its client (`oauth.client_id` and `client_secret_file`, `client_secret_from_env`, `client_key_file` or `client_key_from_env`) and `oauth.scopes`"
        }
    };
    format!(
        "; server `{server}` gets its tokens without a person (`grant = \"{}\"`), so no login helps: check {keys}",
        grant.name()
    )
}

/// [`Remedy::LogIn`] for `server`, for a `Display` attribute.
fn log_in(server: &str) -> Remedy<'_> {
    Remedy::LogIn { server }
}

/// [`Remedy::LogInForScope`] for `server`, for a `Display` attribute.
fn log_in_for_scope(server: &str) -> Remedy<'_> {
    Remedy::LogInForScope { server }
}

/// ` (the server asks for scope "a b")`, when it named one.
fn scope_asked(scope: &[String]) -> String {
    if scope.is_empty() {
        return String::new();
    }
    format!(" (the server asks for scope \"{}\")", scope.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_without_a_person_names_its_keys_and_never_a_login() {
        let needed = |server: &str| AuthorizationError::LoginNeeded {
            server: server.to_owned(),
            reason: "the login failed: the token endpoint refused".to_owned(),
        };
        for (grant, key) in [
            (OAuthGrant::ClientCredentials, "`oauth.client_id`"),
            (OAuthGrant::JwtBearer, "`oauth.assertion_file`"),
            (OAuthGrant::IdentityAssertion, "`oauth.id_token_file`"),
        ] {
            let text = needed("w").for_grant(Some(grant)).to_string();
            assert!(
                text.starts_with("the login failed: the token endpoint refused; server `w`")
                    && text.contains(key)
                    && text.contains(grant.name())
                    && !text.contains("rho mcp login"),
                "{text}"
            );
            let step_up = AuthorizationError::StepUpNeeded {
                server: "w".to_owned(),
                reason: "refused".to_owned(),
                scope: vec!["mcp:admin".to_owned()],
            };
            assert!(matches!(
                step_up.for_grant(Some(grant)),
                AuthorizationError::GrantFailed { .. }
            ));
        }
        // A person's grant, or a server without one: as it was.
        for grant in [Some(OAuthGrant::AuthorizationCode), None] {
            let text = needed("p").for_grant(grant).to_string();
            assert!(text.ends_with(": log in to server `p`"), "{text}");
        }
        assert_eq!(
            AuthorizationError::CannotLogIn.for_grant(Some(OAuthGrant::JwtBearer)),
            AuthorizationError::CannotLogIn
        );
        for grant in [
            OAuthGrant::AuthorizationCode,
            OAuthGrant::ClientCredentials,
            OAuthGrant::JwtBearer,
            OAuthGrant::IdentityAssertion,
        ] {
            assert_eq!(OAuthGrant::from_name(grant.name()), Some(grant));
        }
        assert_eq!(OAuthGrant::from_name("password"), None);
    }
}
