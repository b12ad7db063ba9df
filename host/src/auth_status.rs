//! How a server authenticates, as `rho mcp list` and `show` report it: a
//! configured `Authorization` header, which wins over any `oauth` table
//! ([`has_authorization_header`]), or an `oauth` table with the state of
//! its stored login. Never a secret: only whether a login exists, when it
//! expires, and whether it refreshes and is DPoP-bound. It reads the store
//! through the core's `CredentialStore` trait, and nothing else of the
//! host's.

use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin};

/// How a server authenticates, as `list` and `show` report it (never a
/// secret: only whether a login exists and when it expires).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthStatus {
    /// A configured `Authorization` header: it wins over any `oauth` table.
    Header,
    /// An `oauth` table, with the stored login's state.
    OAuth(OAuthState),
}

/// The stored login of a server with an `oauth` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OAuthState {
    /// Tokens are stored; seconds until the access token expires (negative
    /// once expired), when the server said, and whether it can be refreshed.
    LoggedIn {
        /// Seconds until the access token expires (negative once it has),
        /// when the authorization server said.
        expires_in: Option<i64>,
        /// Whether a refresh token is stored.
        refreshable: bool,
        /// Whether the tokens are DPoP-bound (RFC 9449): sent with a proof
        /// made with the key stored beside them, useless without it.
        dpop_bound: bool,
    },
    /// Nothing stored (or only a registration).
    NeedsLogin,
    /// `oauth.grant = "client_credentials"`: tokens are fetched on connect.
    ClientCredentials,
    /// `oauth.grant = "jwt_bearer"` or `"identity_assertion"`: tokens are
    /// fetched on connect with an assertion read from a file or the
    /// environment.
    Assertion(rho_proto_core::config::OAuthGrant),
    /// The store could not be read.
    StoreError(String),
}

/// The auth status of `config`, reading `store` for OAuth servers; `None`
/// for servers that authenticate neither way.
pub fn auth_status(
    id: &str,
    config: &rho_proto_core::config::ServerConfig,
    store: Option<&dyn CredentialStore>,
    now_unix: u64,
) -> Option<AuthStatus> {
    use rho_proto_core::config::Transport;
    let Transport::StreamableHttp(http) = &config.transport else {
        return None;
    };
    let header = has_authorization_header(http);
    if header {
        return Some(AuthStatus::Header);
    }
    let oauth = http.oauth.as_ref()?;
    match oauth.grant {
        rho_proto_core::config::OAuthGrant::ClientCredentials => {
            return Some(AuthStatus::OAuth(OAuthState::ClientCredentials));
        }
        grant if grant.is_unattended() => {
            return Some(AuthStatus::OAuth(OAuthState::Assertion(grant)));
        }
        _ => {}
    }
    let Some(store) = store else {
        return Some(AuthStatus::OAuth(OAuthState::NeedsLogin));
    };
    let key = StoreKey::new(id, &http.url);
    let state = match store.load(&key) {
        Err(e) => OAuthState::StoreError(e.to_string()),
        Ok(Some(StoredLogin {
            tokens: Some(tokens),
            ..
        })) => OAuthState::LoggedIn {
            expires_in: tokens.expires_at.map(|at| {
                i64::try_from(at).unwrap_or(i64::MAX) - i64::try_from(now_unix).unwrap_or(0)
            }),
            refreshable: tokens.refresh_token.is_some(),
            dpop_bound: tokens.is_bound(),
        },
        Ok(_) => OAuthState::NeedsLogin,
    };
    Some(AuthStatus::OAuth(state))
}

impl AuthStatus {
    /// For a person: `oauth (logged in, expires in 42 min)`.
    pub fn describe(&self, id: &str) -> String {
        match self {
            AuthStatus::Header => "Authorization header (configured)".into(),
            AuthStatus::OAuth(OAuthState::NeedsLogin) => {
                format!("oauth (needs login: run `rho mcp login {id}`)")
            }
            AuthStatus::OAuth(OAuthState::StoreError(e)) => format!("oauth ({e})"),
            AuthStatus::OAuth(OAuthState::ClientCredentials) => "oauth (client credentials)".into(),
            AuthStatus::OAuth(OAuthState::Assertion(grant)) => match grant {
                rho_proto_core::config::OAuthGrant::IdentityAssertion => {
                    "oauth (enterprise-managed: identity assertion)".into()
                }
                _ => "oauth (workload identity: JWT bearer)".into(),
            },
            AuthStatus::OAuth(OAuthState::LoggedIn {
                expires_in,
                refreshable,
                dpop_bound,
            }) => {
                let bound = if *dpop_bound { ", DPoP-bound" } else { "" };
                match expires_in {
                    None => format!("oauth (logged in{bound})"),
                    Some(secs) if *secs > 0 => format!(
                        "oauth (logged in{bound}, expires in {})",
                        duration_words(*secs)
                    ),
                    Some(_) if *refreshable => {
                        format!("oauth (logged in{bound}, expired; refreshes on use)")
                    }
                    Some(_) => format!("oauth (expired: run `rho mcp login {id}`)"),
                }
            }
        }
    }

    /// The `--json` object.
    pub fn json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            AuthStatus::Header => json!({"kind": "header"}),
            AuthStatus::OAuth(OAuthState::NeedsLogin) => {
                json!({"kind": "oauth", "state": "needs_login"})
            }
            AuthStatus::OAuth(OAuthState::StoreError(e)) => {
                json!({"kind": "oauth", "state": "store_error", "error": e})
            }
            AuthStatus::OAuth(OAuthState::ClientCredentials) => {
                json!({"kind": "oauth", "state": "client_credentials"})
            }
            AuthStatus::OAuth(OAuthState::Assertion(grant)) => {
                json!({"kind": "oauth", "state": grant.name()})
            }
            AuthStatus::OAuth(OAuthState::LoggedIn {
                expires_in,
                refreshable,
                dpop_bound,
            }) => json!({
                "kind": "oauth",
                "state": "logged_in",
                "expires_in_secs": expires_in,
                "refreshable": refreshable,
                "dpop_bound": dpop_bound,
            }),
        }
    }
}

fn duration_words(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// Whether `http` has an `Authorization` header, configured or from the
/// environment (a stored token that
/// [`crate::stored_tokens::with_stored_tokens`] added counts too).
pub(crate) fn has_authorization_header(http: &rho_proto_core::config::HttpConfig) -> bool {
    http.headers
        .keys()
        .chain(http.headers_from_env.keys())
        .any(|k| k.eq_ignore_ascii_case("authorization"))
}
