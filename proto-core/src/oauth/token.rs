//! Token endpoint exchanges as data (RFC 6749 §4.1.3, §6, §4.4): the form
//! body and the client authentication of each grant, and the token
//! response read back. Secrets (tokens, the client secret, the code
//! verifier) never appear in `Debug` output.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

/// How the client authenticates at the token endpoint (RFC 7591 §2
/// `token_endpoint_auth_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuth {
    /// A public client: `client_id` in the body, no secret.
    None,
    /// HTTP Basic with the form-encoded id and secret (RFC 6749 §2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the body.
    ClientSecretPost,
    /// `client_id` and a signed JWT in the body (RFC 7523 §2.2), made with
    /// [`super::assertion`]; no shared secret.
    PrivateKeyJwt,
}

impl ClientAuth {
    /// The method's registered name.
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::ClientSecretBasic => "client_secret_basic",
            ClientAuth::ClientSecretPost => "client_secret_post",
            ClientAuth::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// Reads a registered name; unknown methods are `None` (rho cannot use
    /// them).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(ClientAuth::None),
            "client_secret_basic" => Some(ClientAuth::ClientSecretBasic),
            "client_secret_post" => Some(ClientAuth::ClientSecretPost),
            "private_key_jwt" => Some(ClientAuth::PrivateKeyJwt),
            _ => None,
        }
    }
}

/// The client as the token endpoint knows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Client {
    /// `client_id`.
    pub id: String,
    /// `client_secret`, for confidential clients.
    pub secret: Option<String>,
    /// How it authenticates.
    pub auth: ClientAuth,
}

impl Client {
    /// No client at all: a grant that needs no registration (a workload's
    /// JWT bearer assertion, RFC 7523 §3.1: client authentication is
    /// optional) sends no `client_id`.
    pub fn anonymous() -> Self {
        Self {
            id: String::new(),
            secret: None,
            auth: ClientAuth::None,
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth)
            .finish()
    }
}

/// The grant a token request redeems.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grant<'a> {
    /// An authorization code with its PKCE verifier and redirect URI.
    AuthorizationCode {
        /// The code from the callback.
        code: &'a str,
        /// The PKCE `code_verifier`.
        verifier: &'a str,
        /// The redirect URI the code was issued for.
        redirect_uri: &'a str,
    },
    /// A refresh token.
    RefreshToken(&'a str),
    /// Machine to machine: the client's own credentials.
    ClientCredentials,
    /// A JWT as the authorization grant (RFC 7523 §2.1): a workload's own
    /// identity token, or an ID-JAG from an identity provider (see
    /// [`super::exchange`]).
    JwtBearer(&'a str),
    /// An RFC 8693 token exchange of `subject_token` for a token of
    /// `requested_token_type` meant for `audience` (see
    /// [`super::exchange`]).
    TokenExchange {
        /// The token exchanged (an OpenID Connect ID token, say).
        subject_token: &'a str,
        /// Its type URI.
        subject_token_type: &'a str,
        /// The type URI of the token asked for.
        requested_token_type: &'a str,
        /// Whom the issued token is for (an authorization server's issuer).
        audience: &'a str,
    },
}

/// A token request: the form body and the extra headers of its client
/// authentication; the adapter POSTs it with
/// `Content-Type: application/x-www-form-urlencoded`.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The form-encoded body.
    pub body: String,
    /// `Authorization: Basic ...` for client_secret_basic.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRequest").finish_non_exhaustive()
    }
}

/// The token request for `grant` by `client`, bound to `resource` (RFC
/// 8707, the same value as in the authorization request) and, when given,
/// `scope`. A [`ClientAuth::PrivateKeyJwt`] client needs
/// [`token_request_with_assertion`]; here it sends only its `client_id`.
pub fn token_request(
    client: &Client,
    grant: &Grant<'_>,
    resource: &str,
    scope: Option<&str>,
) -> TokenRequest {
    token_request_with_assertion(client, grant, resource, scope, None)
}

/// [`token_request`], with the signed client assertion of a
/// [`ClientAuth::PrivateKeyJwt`] client (see
/// [`super::assertion::client_assertion`]); other methods ignore it.
pub fn token_request_with_assertion(
    client: &Client,
    grant: &Grant<'_>,
    resource: &str,
    scope: Option<&str>,
    assertion: Option<&str>,
) -> TokenRequest {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    match grant {
        Grant::AuthorizationCode {
            code,
            verifier,
            redirect_uri,
        } => {
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", redirect_uri)
                .append_pair("code_verifier", verifier);
        }
        Grant::RefreshToken(token) => {
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", token);
        }
        Grant::ClientCredentials => {
            form.append_pair("grant_type", "client_credentials");
        }
        Grant::JwtBearer(assertion) => {
            form.append_pair("grant_type", super::exchange::JWT_BEARER_GRANT)
                .append_pair("assertion", assertion);
        }
        Grant::TokenExchange {
            subject_token,
            subject_token_type,
            requested_token_type,
            audience,
        } => {
            form.append_pair("grant_type", super::exchange::TOKEN_EXCHANGE_GRANT)
                .append_pair("requested_token_type", requested_token_type)
                .append_pair("audience", audience)
                .append_pair("subject_token", subject_token)
                .append_pair("subject_token_type", subject_token_type);
        }
    }
    form.append_pair("resource", resource);
    if let Some(scope) = scope {
        form.append_pair("scope", scope);
    }
    let mut headers = Vec::new();
    match client.auth {
        // An anonymous client (a workload that has no registration)
        // identifies itself by its assertion alone.
        ClientAuth::None if client.id.is_empty() => {}
        ClientAuth::None => {
            form.append_pair("client_id", &client.id);
        }
        ClientAuth::ClientSecretPost => {
            form.append_pair("client_id", &client.id);
            form.append_pair(
                "client_secret",
                client.secret.as_deref().unwrap_or_default(),
            );
        }
        ClientAuth::PrivateKeyJwt => {
            form.append_pair("client_id", &client.id);
            if let Some(assertion) = assertion {
                form.append_pair(
                    "client_assertion_type",
                    super::assertion::CLIENT_ASSERTION_TYPE,
                );
                form.append_pair("client_assertion", assertion);
            }
        }
        ClientAuth::ClientSecretBasic => {
            // RFC 6749 §2.3.1: each part form-encoded before base64.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!(
                "{}:{}",
                enc(&client.id),
                enc(client.secret.as_deref().unwrap_or_default())
            );
            headers.push((
                "Authorization".to_owned(),
                format!("Basic {}", STANDARD.encode(pair)),
            ));
        }
    }
    TokenRequest {
        body: form.finish(),
        headers,
    }
}

/// A token response's fields (RFC 6749 §5.1).
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct TokenResponse {
    /// The access token.
    pub access_token: String,
    /// Must be `Bearer` (case-insensitive).
    pub token_type: String,
    /// Lifetime in seconds, when given and sensible: a positive whole
    /// number of seconds (as a JSON number, or a string of one, which some
    /// servers send) up to [`MAX_LIFETIME_SECS`]. Anything else (negative,
    /// zero, fractional, absurdly large, not a number) is an unknown
    /// lifetime, never a refused login: the token is used until the
    /// server refuses it.
    #[serde(default, deserialize_with = "lifetime")]
    pub expires_in: Option<u64>,
    /// A refresh token; when a refresh returns a new one it replaces the
    /// old (rotation).
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// The granted scope, when it differs from the requested one.
    #[serde(default)]
    pub scope: Option<String>,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The longest `expires_in` taken at its word: ten years. A larger one is
/// nonsense (or an overflow on the server), read as an unknown lifetime.
pub const MAX_LIFETIME_SECS: u64 = 10 * 365 * 24 * 3600;

/// `expires_in` as [`TokenResponse::expires_in`] documents.
fn lifetime<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    let secs = match &value {
        serde_json::Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f > 0.0 && *f <= MAX_LIFETIME_SECS as f64)
                .map(|f| f as u64)
        }),
        serde_json::Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    let sensible = secs.filter(|s| (1..=MAX_LIFETIME_SECS).contains(s));
    if sensible.is_none() && !value.is_null() {
        tracing::debug!("the token's expires_in {value} is not a lifetime; taken as unknown");
    }
    Ok(sensible)
}

/// Why a token response is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// An OAuth error response (RFC 6749 §5.2).
    #[error("the token endpoint refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// `invalid_grant`, `invalid_client`, ...
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// Not a token response.
    #[error("the token endpoint answered with something that is not a token response: {0}")]
    Malformed(String),
    /// A token type rho cannot send.
    #[error(
        "the token endpoint issued a `{0}` token; rho sends Bearer tokens, and DPoP tokens only for a key it proved"
    )]
    NotBearer(String),
}

impl TokenError {
    /// Whether the authorization server does not know the client: a
    /// registration it has forgotten. `invalid_client` says so (RFC 6749
    /// §5.2); the Python SDK 1.x's server says `unauthorized_client`
    /// ("Invalid client_id") for the same thing, and a client refused the
    /// refresh grant is served no worse by one new registration.
    pub fn client_is_unknown(&self) -> bool {
        matches!(self, TokenError::Refused { error, .. } if error == "invalid_client" || error == "unauthorized_client")
    }

    /// Whether the grant itself is dead (`invalid_grant`): a refresh token
    /// that was revoked or expired, so only a new login helps.
    pub fn grant_is_dead(&self) -> bool {
        matches!(self, TokenError::Refused { error, .. } if error == "invalid_grant")
    }
}

/// An OAuth error answer (RFC 6749 §5.2, RFC 7591 §3.2.2): `Ok(())` for a
/// 2xx status, else the `error` and `error_description` of the body, or
/// `Err(None)` when the body is not an error object.
pub(crate) fn error_answer(
    status: u16,
    body: &[u8],
) -> Result<(), Option<(String, Option<String>)>> {
    #[derive(Deserialize)]
    struct ErrorBody {
        error: String,
        #[serde(default)]
        error_description: Option<String>,
    }
    if (200..300).contains(&status) {
        return Ok(());
    }
    Err(serde_json::from_slice::<ErrorBody>(body)
        .ok()
        .map(|e| (e.error, e.error_description)))
}

/// Reads a token endpoint answer: `status` and body.
pub fn read_token_response(status: u16, body: &[u8]) -> Result<TokenResponse, TokenError> {
    error_answer(status, body).map_err(|e| match e {
        Some((error, description)) => TokenError::Refused { error, description },
        None => TokenError::Malformed(format!("HTTP {status}")),
    })?;
    let token: TokenResponse =
        serde_json::from_slice(body).map_err(|e| TokenError::Malformed(e.to_string()))?;
    if !token.token_type.eq_ignore_ascii_case("bearer") {
        return Err(TokenError::NotBearer(token.token_type));
    }
    if token.access_token.is_empty() {
        return Err(TokenError::Malformed("an empty access_token".into()));
    }
    Ok(token)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A form body's name-value pairs, decoded, in order.
    pub(crate) fn pairs(body: &str) -> Vec<(String, String)> {
        url::form_urlencoded::parse(body.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()
    }

    /// The first value named `k` among `p`.
    pub(crate) fn get<'a>(p: &'a [(String, String)], k: &str) -> Option<&'a str> {
        p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn a_nonsense_lifetime_is_an_unknown_one_never_a_refused_login() {
        let read = |expires: &str| {
            let body =
                format!(r#"{{"access_token":"at","token_type":"Bearer","expires_in":{expires}}}"#);
            read_token_response(200, body.as_bytes()).map(|t| t.expires_in)
        };
        assert_eq!(read("3600"), Ok(Some(3600)));
        assert_eq!(read("\"3600\""), Ok(Some(3600)), "a string of seconds");
        assert_eq!(read("3600.0"), Ok(Some(3600)));
        for nonsense in [
            "-100", "0", "1e30", "12.5", "\"soon\"", "null", "true", "{}",
        ] {
            assert_eq!(read(nonsense), Ok(None), "expires_in {nonsense}");
        }
    }

    #[test]
    fn a_code_is_redeemed_with_its_verifier_redirect_and_resource() {
        let client = Client {
            id: "public".into(),
            secret: None,
            auth: ClientAuth::None,
        };
        let req = token_request(
            &client,
            &Grant::AuthorizationCode {
                code: "c0de",
                verifier: "v3rifier",
                redirect_uri: "http://127.0.0.1:5/callback",
            },
            "https://mcp.example.com/mcp",
            None,
        );
        let p = pairs(&req.body);
        assert_eq!(get(&p, "grant_type"), Some("authorization_code"));
        assert_eq!(get(&p, "code"), Some("c0de"));
        assert_eq!(get(&p, "code_verifier"), Some("v3rifier"));
        assert_eq!(get(&p, "redirect_uri"), Some("http://127.0.0.1:5/callback"));
        assert_eq!(get(&p, "resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get(&p, "client_id"), Some("public"));
        assert_eq!(get(&p, "scope"), None);
        assert!(req.headers.is_empty());
        assert!(!format!("{req:?}").contains("v3rifier"));
    }

    #[test]
    fn client_secret_basic_and_post() {
        let basic = Client {
            id: "id:1".into(),
            secret: Some("s3cret&".into()),
            auth: ClientAuth::ClientSecretBasic,
        };
        let req = token_request(&basic, &Grant::ClientCredentials, "https://r", Some("a b"));
        let p = pairs(&req.body);
        assert_eq!(get(&p, "grant_type"), Some("client_credentials"));
        assert_eq!(get(&p, "scope"), Some("a b"));
        assert_eq!(get(&p, "client_secret"), None);
        assert_eq!(get(&p, "client_id"), None);
        // base64("id%3A1:s3cret%26")
        assert_eq!(
            req.headers,
            [(
                "Authorization".to_owned(),
                "Basic aWQlM0ExOnMzY3JldCUyNg==".to_owned()
            )]
        );
        let post = Client {
            auth: ClientAuth::ClientSecretPost,
            ..basic
        };
        let req = token_request(&post, &Grant::RefreshToken("rt"), "https://r", None);
        let p = pairs(&req.body);
        assert_eq!(get(&p, "grant_type"), Some("refresh_token"));
        assert_eq!(get(&p, "refresh_token"), Some("rt"));
        assert_eq!(get(&p, "client_secret"), Some("s3cret&"));
        assert!(req.headers.is_empty());
        assert!(!format!("{post:?}").contains("s3cret"));
    }

    #[test]
    fn private_key_jwt_sends_the_client_id_and_the_signed_assertion() {
        use super::super::assertion::{
            AssertionClaims, CLIENT_ASSERTION_TYPE, ClientAssertionSigner, client_assertion,
        };
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        #[derive(Debug)]
        struct Fixed;
        impl ClientAssertionSigner for Fixed {
            fn alg(&self) -> &str {
                "ES256"
            }
            fn sign(&self, _: &[u8]) -> Result<Vec<u8>, String> {
                Ok(vec![7; 64])
            }
        }
        let client = Client {
            id: "m2m".into(),
            secret: None,
            auth: ClientAuth::PrivateKeyJwt,
        };
        assert_eq!(ClientAuth::from_name("private_key_jwt"), Some(client.auth));
        let claims = AssertionClaims::new("m2m", "https://as.example.com", 1000, "j".into());
        let jwt = client_assertion(&Fixed, &claims).expect("signed");
        let req = token_request_with_assertion(
            &client,
            &Grant::ClientCredentials,
            "https://r",
            Some("read"),
            Some(&jwt),
        );
        let p = pairs(&req.body);
        assert_eq!(get(&p, "grant_type"), Some("client_credentials"));
        assert_eq!(get(&p, "client_id"), Some("m2m"));
        assert_eq!(
            get(&p, "client_assertion_type"),
            Some(CLIENT_ASSERTION_TYPE)
        );
        assert_eq!(get(&p, "client_secret"), None);
        assert!(req.headers.is_empty());
        let sent = get(&p, "client_assertion").expect("an assertion");
        let parts: Vec<&str> = sent.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).expect("b64")).expect("json");
        assert_eq!(claims["iss"], "m2m");
        assert_eq!(claims["sub"], "m2m");
        assert_eq!(claims["aud"], "https://as.example.com");
        assert_eq!(claims["exp"], 1300);
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).expect("b64"), vec![7; 64]);
    }

    #[test]
    fn token_responses_are_read_and_refusals_named() {
        let t = read_token_response(
            200,
            br#"{"access_token":"at","token_type":"bearer","expires_in":3600,"refresh_token":"rt"}"#,
        )
        .expect("token");
        assert_eq!(t.expires_in, Some(3600));
        assert!(!format!("{t:?}").contains("\"at\""));
        let dead = read_token_response(
            400,
            br#"{"error":"invalid_grant","error_description":"revoked"}"#,
        )
        .expect_err("refused");
        assert!(dead.grant_is_dead());
        assert_eq!(
            dead.to_string(),
            "the token endpoint refused: invalid_grant (revoked)"
        );
        assert!(matches!(
            read_token_response(500, b"<html>"),
            Err(TokenError::Malformed(m)) if m == "HTTP 500"
        ));
        assert!(matches!(
            read_token_response(200, br#"{"access_token":"x","token_type":"DPoP"}"#),
            Err(TokenError::NotBearer(_))
        ));
        assert!(matches!(
            read_token_response(200, br#"{"access_token":"","token_type":"Bearer"}"#),
            Err(TokenError::Malformed(_))
        ));
    }
}
