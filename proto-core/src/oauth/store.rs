//! What rho keeps of an OAuth login between runs, and the trait the host
//! implements to keep it: the core decides what to store and when, the
//! host decides where (the CLI: one 0600 file under `~/.rho/`).
//!
//! Entries are keyed by server identity and the server's canonical URL,
//! so repointing a server at another URL never sends it the old tokens;
//! each entry names the issuer that registered the client and minted the
//! tokens, so a server moved to another authorization server registers
//! again and discards them.

use super::token::Client;

/// The key of one server's entry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StoreKey {
    /// The server identity.
    pub server: String,
    /// The server's canonical URL ([`super::discovery::canonical_resource`]).
    pub url: String,
}

impl StoreKey {
    /// The key of server `server` at `url`: the identity and the URL in
    /// its canonical form, so that the same server written two ways is one
    /// entry and another URL for the same identity is another.
    pub fn new(server: &str, url: &url::Url) -> Self {
        Self {
            server: server.to_owned(),
            url: super::discovery::canonical_resource(url),
        }
    }
}

/// One server's stored login.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredLogin {
    /// The issuer of the client and the tokens.
    pub issuer: String,
    /// The registered (or configured) client.
    pub client: Client,
    /// The tokens, when a login finished (a registration alone is kept
    /// too, so the next login does not register again).
    pub tokens: Option<StoredTokens>,
    /// Scopes a server asked for in a step-up (403 `insufficient_scope`)
    /// that no one could log in for: the next login asks for them too, so
    /// `rho mcp login` after "log in again" gets the wider token.
    pub wanted_scope: Option<String>,
}

impl std::fmt::Debug for StoredLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredLogin")
            .field("issuer", &self.issuer)
            .field("client", &self.client)
            .field("tokens", &self.tokens.as_ref().map(|_| "<redacted>"))
            .field("wanted_scope", &self.wanted_scope)
            .finish()
    }
}

/// Tokens as stored: the expiry as wall-clock seconds, since a stored
/// entry outlives the process whose `Instant`s measured it.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredTokens {
    /// The access token.
    pub access_token: String,
    /// The refresh token, when issued.
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    /// The scope asked for or granted.
    pub scope: Option<String>,
    /// The RFC 8707 resource they are bound to.
    pub resource: String,
    /// Where to refresh them.
    pub token_endpoint: String,
    /// When the tokens are DPoP-bound (RFC 9449): the private key they are
    /// bound to, as the host encodes it (opaque here; the host library
    /// writes base64url PKCS#8). Useless tokens without it, so it lives
    /// only beside them, in the owner-only store, never in config or logs.
    pub dpop_key: Option<String>,
}

impl StoredTokens {
    /// Whether the tokens are DPoP-bound (sent with the `DPoP` scheme and
    /// a proof made with [`StoredTokens::dpop_key`]).
    pub fn is_bound(&self) -> bool {
        self.dpop_key.is_some()
    }
}

impl StoredTokens {
    /// Whether the access token should be refreshed before use at wall
    /// time `now_unix`: expired, or expiring within `margin_secs`.
    pub fn needs_refresh(&self, now_unix: u64, margin_secs: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now_unix.saturating_add(margin_secs))
    }
}

/// Why the store could not be read or written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the OAuth credential store {location}: {reason}")]
pub struct StoreError {
    /// Where, for a person (a path).
    pub location: String,
    /// What failed.
    pub reason: String,
}

/// Where logins are kept. Implementations must make `update` atomic with
/// respect to other rho processes (a lock around read-modify-write), so two
/// processes refreshing at once never lose a rotated refresh token.
pub trait CredentialStore: Send + Sync {
    /// The entry for `key`, if any.
    fn load(&self, key: &StoreKey) -> Result<Option<StoredLogin>, StoreError>;
    /// Replaces (`Some`) or removes (`None`) the entry for `key`, under the
    /// store's lock, with `change` seeing the current entry.
    fn update(
        &self,
        key: &StoreKey,
        change: &mut dyn FnMut(Option<StoredLogin>) -> Option<StoredLogin>,
    ) -> Result<(), StoreError>;
    /// Runs `work` while holding the store's exclusive lock (the one
    /// `update` takes; `load` and `update` inside it, on this thread, do
    /// not wait for it), so that reading a login, refreshing it and
    /// storing the result are one step for every process sharing the
    /// store. A store without a lock runs it as it is.
    fn exclusively(&self, work: &mut dyn FnMut()) -> Result<(), StoreError> {
        work();
        Ok(())
    }
}
