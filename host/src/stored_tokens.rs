//! Stored logins applied to a config before it connects: each OAuth
//! server's stored access token becomes its `Authorization` header
//! ([`with_stored_tokens`]), refreshed first, without a person, when it has
//! expired; [`needs_browser_login`] says which servers only a person's
//! browser login can help. Above the store ([`crate::credentials`]), the
//! HTTP exchange ([`crate::oauth_http`]), DPoP ([`crate::dpop`]) and a
//! grant's secrets ([`crate::grants`]); the login ([`crate::login`]) is
//! beside it, and neither uses the other.

use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin};
use rho_proto_core::oauth::token::{Client, ClientAuth};

use crate::auth_status::has_authorization_header;
use crate::credentials::{client_to_store, now_unix, stored};
use crate::oauth_http::LoginHttp;

/// `config` with an `Authorization: Bearer` header (`Authorization: DPoP`
/// for DPoP-bound tokens) for every server in it
/// that has an `oauth` table, no configured Authorization header, and a
/// usable stored login; an access token that has expired (or expires
/// within a minute) is refreshed first, without a person, and the refreshed
/// login is stored before it is used. A server without a usable login is
/// left as it is: its 401 then goes to the session's authorizer
/// ([`crate::reauth`]), like a token refused mid-session. A refresh goes
/// through runtime `kind`'s HTTP stack.
pub(crate) fn with_stored_tokens(
    config: &rho_proto_core::config::Config,
    kind: crate::RuntimeKind,
    store: Option<&dyn CredentialStore>,
    select: &dyn Fn(&str) -> bool,
) -> rho_proto_core::config::Config {
    use rho_proto_core::config::Transport;
    let mut config = config.clone();
    let Some(store) = store else {
        return config;
    };
    for entry in &mut config.servers {
        if !select(&entry.id) {
            continue;
        }
        let Ok(server) = &mut entry.config else {
            continue;
        };
        let Transport::StreamableHttp(http) = &mut server.transport else {
            continue;
        };
        let has_header = has_authorization_header(http);
        if http.oauth.is_none() || has_header {
            continue;
        }
        let key = StoreKey::new(&entry.id, &http.url);
        let login = match store.load(&key) {
            Ok(login) => login,
            Err(e) => {
                tracing::warn!(server = %entry.id, "{e}");
                continue;
            }
        };
        let token = match login {
            Some(login) => usable_token(&entry.id, &key, login, http.oauth.as_ref(), store, kind),
            None => None,
        };
        // Without one, the server's 401 asks the session's authorizer,
        // which runs a client-credentials grant (no person needed) or says
        // to run `rho mcp login`.
        if let Some((token, bound)) = token {
            // A DPoP-bound token goes with the DPoP scheme; the session's
            // proofs come from the host's prover, which reads the key
            // stored beside it.
            http.headers.insert(
                "Authorization".into(),
                rho_proto_core::oauth::dpop::authorization(&token, bound),
            );
        }
    }
    config
}

/// Whether server `id` of `config` (as [`with_stored_tokens`] left it)
/// can only get a token through a person's browser login: an `oauth`
/// table with the authorization code grant and no `Authorization` header,
/// neither configured nor from a usable stored login.
pub(crate) fn needs_browser_login(config: &rho_proto_core::config::Config, id: &str) -> bool {
    use rho_proto_core::config::{OAuthGrant, Transport};
    let Some(Ok(server)) = config.get(id).map(|e| e.config.as_ref()) else {
        return false;
    };
    let Transport::StreamableHttp(http) = &server.transport else {
        return false;
    };
    let has_header = has_authorization_header(http);
    http.oauth
        .as_ref()
        .is_some_and(|o| o.grant == OAuthGrant::AuthorizationCode)
        && !has_header
}

/// The access token to send for a stored login, and whether it is
/// DPoP-bound, refreshing it when it has expired; `None` when only a new
/// login helps.
///
/// A refresh runs under the store's exclusive lock, after reading the
/// login again: a rotating refresh token is spent once, however many rho
/// processes start at the same moment. The first to take the lock
/// refreshes and stores the new pair; the others find it fresh and use
/// it. (Two refreshes of one token look like a stolen token to an
/// authorization server with reuse detection, which then revokes the
/// whole login.)
fn usable_token(
    id: &str,
    key: &StoreKey,
    login: StoredLogin,
    oauth: Option<&rho_proto_core::config::OAuthConfig>,
    store: &dyn CredentialStore,
    kind: crate::RuntimeKind,
) -> Option<(String, bool)> {
    let tokens = login.tokens.as_ref()?;
    if !tokens.needs_refresh(now_unix(), REFRESH_MARGIN_SECS) {
        return Some((tokens.access_token.clone(), tokens.is_bound()));
    }
    let mut token = None;
    let mut failure = None;
    let mut unusable = None;
    let locked = store.update(key, &mut |current| {
        let current = current?;
        match refreshed(id, &current, oauth, kind) {
            Refresh::Fresh(access) => {
                let bound = current.tokens.as_ref().is_some_and(|t| t.is_bound());
                token = Some((access, bound));
                Some(current)
            }
            Refresh::Done(credentials) => {
                // A bound token stays bound to the same key.
                let key = current.tokens.as_ref().and_then(|t| t.dpop_key.clone());
                let bound = rho_proto_core::oauth::dpop::is_bound(&credentials.tokens);
                token = Some((credentials.tokens.access_token.clone(), bound));
                Some(stored(&credentials, now_unix(), key.as_deref()))
            }
            Refresh::Failed(why) => {
                failure = Some(why);
                Some(current)
            }
            Refresh::Unusable(why) => {
                unusable = Some(why);
                Some(current)
            }
            // A refresh token the server refused for good is never sent
            // again; the registered client stays.
            Refresh::Dead(why) => {
                failure = Some(why);
                Some(StoredLogin {
                    tokens: None,
                    ..current
                })
            }
        }
    });
    if let Err(e) = locked {
        tracing::warn!(server = %id, "{e}");
    }
    if let Some(why) = failure {
        // A grant without a person runs again by itself at the server's
        // next 401; only a browser login needs the person.
        let next = if oauth.is_some_and(|o| o.grant.is_unattended()) {
            "its grant runs again when the server asks for a token".to_owned()
        } else {
            format!("run `rho mcp login {id}`")
        };
        tracing::warn!(server = %id, "refreshing the OAuth token failed: {why}; {next}");
    }
    // A login would fail the same way: the reason names what to fix.
    if let Some(why) = unusable {
        tracing::warn!(server = %id, "cannot refresh the OAuth token: {why}");
    }
    token
}

/// How many seconds before it expires a stored access token is refreshed
/// before a connect (so it does not expire on the way).
pub(crate) const REFRESH_MARGIN_SECS: u64 = 60;

/// What a refresh attempt of a stored login came to.
enum Refresh {
    /// The login needs none (another process refreshed it meanwhile).
    Fresh(String),
    /// Refreshed: the new credentials, to store.
    Done(Box<rho_proto_core::oauth::flow::Credentials>),
    /// Why not.
    Failed(String),
    /// Why not: the server refused the refresh token for good
    /// (`invalid_grant`).
    Dead(String),
    /// Why not: the client's configured credentials (its secret, its
    /// key) cannot be read; the reason names the key and what to fix.
    Unusable(String),
}

/// Refreshes `login` of server `id` now if it still needs it, through
/// executor `kind`'s HTTP stack. The client authenticates the way its
/// grant did, with what its `oauth` table configures, read now: a
/// `private_key_jwt` client with an assertion signed by its
/// `client_key_file` / `client_key_from_env`, the configured client
/// (`client_id`) with the secret of its `client_secret_file` /
/// `client_secret_from_env`, which the store does not keep.
fn refreshed(
    id: &str,
    login: &StoredLogin,
    oauth: Option<&rho_proto_core::config::OAuthConfig>,
    kind: crate::RuntimeKind,
) -> Refresh {
    let Some(tokens) = login.tokens.as_ref() else {
        return Refresh::Failed("no tokens are stored".into());
    };
    if !tokens.needs_refresh(now_unix(), REFRESH_MARGIN_SECS) {
        return Refresh::Fresh(tokens.access_token.clone());
    }
    let Ok(token_endpoint) = url::Url::parse(&tokens.token_endpoint) else {
        return Refresh::Failed(format!(
            "the stored token endpoint `{}` is not a URL",
            tokens.token_endpoint
        ));
    };
    let (client, configured) = match client_with_configured_secret(id, &login.client, oauth) {
        Ok(client) => client,
        Err(why) => return Refresh::Unusable(why),
    };
    let credentials = rho_proto_core::oauth::flow::Credentials {
        issuer: login.issuer.clone(),
        client,
        resource: tokens.resource.clone(),
        token_endpoint,
        scope: tokens.scope.clone(),
        tokens: rho_proto_core::oauth::token::TokenResponse {
            access_token: tokens.access_token.clone(),
            token_type: if tokens.is_bound() { "DPoP" } else { "Bearer" }.into(),
            expires_in: None,
            refresh_token: tokens.refresh_token.clone(),
            scope: tokens.scope.clone(),
        },
    };
    if credentials.tokens.refresh_token.is_none() {
        return Refresh::Failed("the access token expired and no refresh token is stored".into());
    }
    let client_key = oauth.and_then(|o| o.client_key.as_ref());
    let assertion = match refresh_assertion(id, login, client_key) {
        Ok(assertion) => assertion,
        Err(why) => return Refresh::Unusable(why),
    };
    let Some(request) = rho_proto_core::oauth::flow::refresh_request_with_assertion(
        &credentials,
        assertion.as_deref(),
    ) else {
        return Refresh::Failed("the access token expired and no refresh token is stored".into());
    };
    // A bound refresh token is refreshed with a proof of its key.
    let key = match tokens.dpop_key.as_deref().map(crate::dpop::decode_key) {
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => return Refresh::Failed(e),
        None => None,
    };
    let http = LoginHttp::for_runtime(kind);
    let mut prove = |nonce: Option<&str>| {
        let key = key.as_ref()?;
        Some(crate::dpop::proof_now(
            key,
            &rho_proto_core::oauth::dpop::ProofRequest {
                method: "POST",
                url: &request.url,
                access_token: None,
                nonce,
            },
        ))
    };
    let answer = match crate::dpop::send_token_request(
        &http,
        &request.url,
        &request.headers,
        &request.body,
        &mut prove,
    ) {
        Ok(answer) => answer,
        Err(e) => return Refresh::Failed(e),
    };
    match rho_proto_core::oauth::flow::read_refresh(&credentials, answer.status, &answer.body) {
        Ok(mut refreshed) => {
            // What the store keeps: never the configured secret.
            refreshed.client = client_to_store(&refreshed.client, configured.as_ref());
            Refresh::Done(Box::new(refreshed))
        }
        Err(e) if e.grant_is_dead() => Refresh::Dead(e.to_string()),
        Err(e) => Refresh::Failed(e.to_string()),
    }
}

/// `client` (a stored one, of server `id`) with the secret its `oauth`
/// table configures for it (`client_id` naming it, and
/// `client_secret_file` or `client_secret_from_env`), read now; and that
/// configured client, whose secret the store must not keep. A client the
/// config does not name keeps the secret it was registered with.
fn client_with_configured_secret(
    id: &str,
    client: &Client,
    oauth: Option<&rho_proto_core::config::OAuthConfig>,
) -> Result<(Client, Option<Client>), String> {
    let Some(oauth) = oauth.filter(|o| o.client_id.as_deref() == Some(client.id.as_str())) else {
        return Ok((client.clone(), None));
    };
    match crate::grants::client_secret(id, oauth)? {
        Some(secret) => {
            let client = Client {
                secret: Some(secret),
                ..client.clone()
            };
            Ok((client.clone(), Some(client)))
        }
        None => Ok((client.clone(), None)),
    }
}

/// The client assertion the refresh of `login` (server `id`) carries: for
/// a `private_key_jwt` client, one signed now with the configured key for
/// the issuer that minted the tokens; none for other clients.
fn refresh_assertion(
    id: &str,
    login: &StoredLogin,
    client_key: Option<&rho_proto_core::config::OAuthClientKey>,
) -> Result<Option<String>, String> {
    if login.client.auth != ClientAuth::PrivateKeyJwt {
        return Ok(None);
    }
    let key = match client_key {
        Some(source) => Some(rho_proto_core::oauth::assertion::ClientAssertionKey {
            signer: crate::grants::client_key(id, source)?,
            now_unix: now_unix(),
        }),
        None => None,
    };
    let random = crate::grants::random()?;
    rho_proto_core::oauth::flow::client_assertion_for(
        &login.client,
        &login.issuer,
        key.as_ref(),
        &random,
    )
    .map_err(|e| {
        format!(
            "{e} (configure `oauth.client_key_file` or `client_key_from_env` for server `{id}`)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::FileStore;
    use crate::credentials::tests::{dir, key, login};
    use std::fs;
    use std::sync::{Arc, Mutex};

    #[test]
    fn only_a_code_grant_server_left_without_a_token_needs_a_browser_login() {
        let text = r#"
[mcp.servers.a]
transport = "streamable_http"
url = "https://mcp.example.com/mcp"
[mcp.servers.a.oauth]

[mcp.servers.b]
transport = "streamable_http"
url = "https://b.example.com/mcp"
[mcp.servers.b.oauth]

[mcp.servers.keyed]
transport = "streamable_http"
url = "https://keyed.example.com/mcp"
headers = { Authorization = "Bearer configured" }
[mcp.servers.keyed.oauth]

[mcp.servers.m2m]
transport = "streamable_http"
url = "https://m2m.example.com/mcp"
[mcp.servers.m2m.oauth]
grant = "client_credentials"
client_id = "m2m"

[mcp.servers.local]
command = "true"
"#;
        let config = rho_proto_core::config::parse(text, "<test>").expect("config");
        let d = dir("browser-login");
        let store = FileStore::in_dir(&d);
        let mut live = login("at-live", Some("rt"));
        if let Some(tokens) = &mut live.tokens {
            tokens.expires_at = Some(now_unix() + 3600);
        }
        store
            .update(&key("a"), &mut |_| Some(live.clone()))
            .expect("saved");
        let with = with_stored_tokens(
            &config,
            crate::RuntimeKind::default(),
            Some(&store),
            &|_| true,
        );
        assert!(!needs_browser_login(&with, "a"), "a usable stored login");
        assert!(needs_browser_login(&with, "b"), "nothing stored");
        assert!(!needs_browser_login(&with, "keyed"), "a configured header");
        assert!(!needs_browser_login(&with, "m2m"), "no person needed");
        assert!(!needs_browser_login(&with, "local"), "stdio");
        assert!(!needs_browser_login(&with, "nope"), "unknown");
        let _ = fs::remove_dir_all(&d);
    }

    /// A token endpoint with refresh-token rotation and reuse detection
    /// (OAuth 2.1): `rt-1` may be spent once; a second use is refused
    /// `invalid_grant`. It answers slowly, so that concurrent refreshes
    /// overlap. Returns its URL and the refresh tokens it was sent.
    fn rotating_token_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
        use crate::test_support::{TokenAnswer, token_endpoint};
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = Arc::clone(&seen);
        let url = token_endpoint(move |request| {
            let token = request
                .field("refresh_token")
                .unwrap_or_default()
                .to_owned();
            std::thread::sleep(std::time::Duration::from_millis(300));
            let first = {
                let mut seen = record.lock().expect("lock");
                seen.push(token.clone());
                seen.iter().filter(|t| **t == token).count() == 1
            };
            if token == "rt-1" && first {
                TokenAnswer::ok(
                    r#"{"access_token":"at-2","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#,
                )
            } else {
                TokenAnswer::bad_request(
                    r#"{"error":"invalid_grant","error_description":"refresh token reused"}"#,
                )
            }
        });
        (url, seen)
    }

    #[test]
    fn two_processes_refreshing_at_once_spend_a_rotating_refresh_token_once() {
        let (token_endpoint, spent) = rotating_token_endpoint();
        let text = r#"
[mcp.servers.a]
transport = "streamable_http"
url = "https://mcp.example.com/mcp"
[mcp.servers.a.oauth]
"#;
        let config = rho_proto_core::config::parse(text, "<test>").expect("config");
        let d = dir("rotation");
        let mut expired = login("at-1", Some("rt-1"));
        if let Some(tokens) = &mut expired.tokens {
            tokens.expires_at = Some(now_unix() - 10);
            tokens.token_endpoint = token_endpoint;
        }
        FileStore::in_dir(&d)
            .update(&key("a"), &mut |_| Some(expired.clone()))
            .expect("saved");
        // Two stores on one file, as two rho processes have; both executors'
        // HTTP stacks.
        let threads: Vec<_> = crate::RuntimeKind::ALL
            .iter()
            .map(|&kind| {
                let config = config.clone();
                let d = d.clone();
                std::thread::spawn(move || {
                    let store = FileStore::in_dir(&d);
                    let with = with_stored_tokens(&config, kind, Some(&store), &|_| true);
                    header_of(&with, "a")
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(
                thread.join().expect("thread").as_deref(),
                Some("Bearer at-2"),
                "both got the one refreshed token"
            );
        }
        assert_eq!(*spent.lock().expect("lock"), ["rt-1"], "one refresh in all");
        let stored = FileStore::in_dir(&d).load(&key("a")).expect("loads");
        let tokens = stored.and_then(|l| l.tokens).expect("tokens");
        assert_eq!(tokens.refresh_token.as_deref(), Some("rt-2"));
        let _ = fs::remove_dir_all(&d);
    }

    /// A token endpoint that binds tokens with DPoP and wants its nonce
    /// (`as-n`): a request whose proof lacks it is answered 400
    /// `use_dpop_nonce`. Returns its URL and, per request, the nonce its
    /// proof carried (`None`: no proof at all).
    fn nonce_demanding_token_endpoint() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
        use crate::test_support::{TokenAnswer, token_endpoint};
        use base64::Engine as _;
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let record = Arc::clone(&seen);
        let url = token_endpoint(move |request| {
            let nonce = request.header("dpop").map(|p| {
                let claims = p.split('.').nth(1).unwrap_or_default();
                let claims: serde_json::Value = serde_json::from_slice(
                    &base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(claims)
                        .unwrap_or_default(),
                )
                .unwrap_or_default();
                claims["nonce"].as_str().unwrap_or_default().to_owned()
            });
            record.lock().expect("lock").push(nonce.clone());
            if nonce.as_deref() == Some("as-n") {
                TokenAnswer::ok(
                    r#"{"access_token":"at-2","token_type":"DPoP","expires_in":3600,"refresh_token":"rt-2"}"#,
                )
            } else {
                TokenAnswer::bad_request(r#"{"error":"use_dpop_nonce"}"#)
                    .with_header("DPoP-Nonce", "as-n")
            }
        });
        (url, seen)
    }

    #[test]
    fn a_stored_dpop_bound_login_is_refreshed_with_a_proof_and_connects_with_the_dpop_scheme() {
        let (token_endpoint, seen) = nonce_demanding_token_endpoint();
        let text = "[mcp.servers.a]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.a.oauth]\n";
        let config = rho_proto_core::config::parse(text, "<test>").expect("config");
        let d = dir("dpop-refresh");
        let store = FileStore::in_dir(&d);
        let (_, dpop_key) = crate::dpop::DpopKeys::default()
            .key_for("a", None)
            .expect("a key");
        let mut bound = login("at-1", Some("rt-1"));
        if let Some(tokens) = &mut bound.tokens {
            tokens.expires_at = Some(1);
            tokens.token_endpoint = token_endpoint;
            tokens.dpop_key = Some(dpop_key.clone());
        }
        store
            .update(&key("a"), &mut |_| Some(bound.clone()))
            .expect("saved");
        // The key is kept in the owner-only file, beside its tokens.
        let file = fs::read_to_string(d.join("mcp-oauth.json")).expect("file");
        assert!(file.contains(&dpop_key));
        assert!(!format!("{:?}", store.load(&key("a"))).contains(&dpop_key));
        for (round, &kind) in crate::RuntimeKind::ALL.iter().enumerate() {
            store
                .update(&key("a"), &mut |_| Some(bound.clone()))
                .expect("reset");
            seen.lock().expect("lock").clear();
            let with = with_stored_tokens(&config, kind, Some(&store), &|_| true);
            assert_eq!(
                header_of(&with, "a").as_deref(),
                Some("DPoP at-2"),
                "{kind:?}"
            );
            // A proof, then once more with the nonce; the next refresh
            // (another round) starts with the nonce it remembered.
            let expected: &[Option<String>] = if round == 0 {
                &[Some(String::new()), Some("as-n".to_owned())]
            } else {
                &[Some("as-n".to_owned())]
            };
            assert_eq!(*seen.lock().expect("lock"), expected, "{kind:?}");
            let tokens = store
                .load(&key("a"))
                .expect("loads")
                .and_then(|l| l.tokens)
                .expect("tokens");
            assert_eq!(tokens.refresh_token.as_deref(), Some("rt-2"));
            assert_eq!(
                tokens.dpop_key.as_deref(),
                Some(dpop_key.as_str()),
                "still bound to its key"
            );
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// The `Authorization` header `with_stored_tokens` gave server `id`.
    fn header_of(config: &rho_proto_core::config::Config, id: &str) -> Option<String> {
        let server = config.get(id)?.config.as_ref().ok()?;
        let rho_proto_core::config::Transport::StreamableHttp(http) = &server.transport else {
            return None;
        };
        http.headers.get("Authorization").cloned()
    }
}
