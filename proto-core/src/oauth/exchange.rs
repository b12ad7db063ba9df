//! The assertion grants, as data: a JWT presented as the authorization
//! grant (RFC 7523 §2.1) and the RFC 8693 token exchange that gets one
//! from an enterprise identity provider.
//!
//! Two ways a client gets its token with no person and no client secret
//! of its own making:
//! - **workload identity federation** (MCP's `auth/wif` extension): the
//!   workload's platform (Kubernetes, a cloud, SPIFFE) already issued it a
//!   JWT; it is sent as the `assertion` of the JWT bearer grant;
//! - **enterprise-managed authorization** (SEP-990, "cross-app access"):
//!   the identity assertion of a person's single sign-on (an OpenID
//!   Connect ID token) is exchanged at the enterprise identity provider
//!   for an Identity Assertion JWT Authorization Grant (ID-JAG) meant for
//!   the MCP server's authorization server, which then takes it as the
//!   `assertion` of the JWT bearer grant.
//!
//! The secrets (the assertion, the ID token) are the host's: it reads them
//! from a file or the environment, never the config, and hands them in
//! here as [`Secret`]s, which no `Debug` output shows. The login that
//! sends these requests is [`super::flow`].

use serde::Deserialize;
use url::Url;

use super::token::{Client, TokenError};

/// `grant_type` of the JWT bearer grant (RFC 7523 §2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `grant_type` of a token exchange (RFC 8693 §2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an Identity Assertion JWT Authorization Grant
/// (draft-ietf-oauth-identity-assertion-authz-grant §4.3).
pub const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// A credential the host read from a file or the environment: an
/// assertion, an ID token. Its `Debug` output never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value, to put on the wire.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// What the enterprise-managed grant needs besides the MCP server's own
/// authorization server: the identity assertion and the identity
/// provider that exchanges it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityAssertionGrant {
    /// The identity assertion of the person's single sign-on: an OpenID
    /// Connect ID token issued to this client by the identity provider.
    pub id_token: Secret,
    /// The identity provider's token endpoint, where the ID token is
    /// exchanged for an ID-JAG.
    pub idp_token_endpoint: Url,
    /// This client as the identity provider knows it, when it
    /// authenticates there (SEP-990: when its single sign-on did).
    pub idp_client: Option<Client>,
    /// The `audience` of the exchange, when not the issuer identifier of
    /// the MCP server's authorization server (which SEP-990 asks for, and
    /// which discovery finds).
    pub audience: Option<String>,
}

/// A token exchange answer (RFC 8693 §2.2.1), of which only the issued
/// token matters here.
#[derive(Deserialize)]
struct ExchangeResponse {
    access_token: String,
    #[serde(default)]
    issued_token_type: Option<String>,
}

/// Reads the identity provider's answer to the exchange: the ID-JAG.
///
/// Its `token_type` is `N_A` (the ID-JAG is a grant, not an access token),
/// so the Bearer check of an ordinary token response does not apply; an
/// `issued_token_type` other than the ID-JAG's is refused, since the
/// authorization server would only refuse it in turn.
pub fn read_id_jag(status: u16, body: &[u8]) -> Result<Secret, TokenError> {
    super::token::error_answer(status, body).map_err(|e| match e {
        Some((error, description)) => TokenError::Refused { error, description },
        None => TokenError::Malformed(format!("HTTP {status}")),
    })?;
    let answer: ExchangeResponse =
        serde_json::from_slice(body).map_err(|e| TokenError::Malformed(e.to_string()))?;
    if answer.access_token.is_empty() {
        return Err(TokenError::Malformed("an empty access_token".into()));
    }
    match answer.issued_token_type.as_deref() {
        Some(ID_JAG_TYPE) => Ok(Secret(answer.access_token)),
        Some(other) => Err(TokenError::Malformed(format!(
            "issued_token_type is `{}`, not an ID-JAG ({ID_JAG_TYPE})",
            crate::text::terminal::sanitize_line(other)
        ))),
        None => Err(TokenError::Malformed(format!(
            "no issued_token_type (an ID-JAG is {ID_JAG_TYPE})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::token::tests::{get, pairs};
    use crate::oauth::token::{ClientAuth, Grant, token_request};

    #[test]
    fn a_workload_jwt_is_the_assertion_of_the_jwt_bearer_grant_with_no_client_id() {
        let request = token_request(
            &Client::anonymous(),
            &Grant::JwtBearer("eyJ.workload.sig"),
            "https://mcp.example.com/mcp",
            Some("read"),
        );
        let p = pairs(&request.body);
        assert_eq!(get(&p, "grant_type"), Some(JWT_BEARER_GRANT));
        assert_eq!(get(&p, "assertion"), Some("eyJ.workload.sig"));
        assert_eq!(get(&p, "resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get(&p, "scope"), Some("read"));
        assert_eq!(get(&p, "client_id"), None, "no registration, no client_id");
        assert!(request.headers.is_empty());
    }

    #[test]
    fn an_id_token_is_exchanged_for_an_id_jag_for_the_authorization_server() {
        let idp = Client {
            id: "idp-client".into(),
            secret: Some("idp secret".into()),
            auth: ClientAuth::ClientSecretBasic,
        };
        let request = token_request(
            &idp,
            &Grant::TokenExchange {
                subject_token: "eyJ.id.token",
                subject_token_type: ID_TOKEN_TYPE,
                requested_token_type: ID_JAG_TYPE,
                audience: "https://auth.example.com",
            },
            "https://mcp.example.com/mcp",
            None,
        );
        let p = pairs(&request.body);
        assert_eq!(get(&p, "grant_type"), Some(TOKEN_EXCHANGE_GRANT));
        assert_eq!(get(&p, "subject_token"), Some("eyJ.id.token"));
        assert_eq!(get(&p, "subject_token_type"), Some(ID_TOKEN_TYPE));
        assert_eq!(get(&p, "requested_token_type"), Some(ID_JAG_TYPE));
        assert_eq!(get(&p, "audience"), Some("https://auth.example.com"));
        assert_eq!(get(&p, "resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get(&p, "scope"), None);
        assert!(
            request
                .headers
                .iter()
                .any(|(k, v)| k == "Authorization" && v.starts_with("Basic ")),
            "the IdP client authenticates"
        );
    }

    #[test]
    fn the_id_jag_is_read_from_an_exchange_answer_and_anything_else_refused() {
        let ok = format!(
            r#"{{"access_token":"eyJ.jag","issued_token_type":"{ID_JAG_TYPE}","token_type":"N_A"}}"#
        );
        assert_eq!(
            read_id_jag(200, ok.as_bytes()).map(|s| s.expose().to_owned()),
            Ok("eyJ.jag".to_owned())
        );
        let access = r#"{"access_token":"at","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer"}"#;
        assert!(
            matches!(read_id_jag(200, access.as_bytes()), Err(TokenError::Malformed(m)) if m.contains("not an ID-JAG"))
        );
        let untyped = r#"{"access_token":"at","token_type":"N_A"}"#;
        assert!(matches!(
            read_id_jag(200, untyped.as_bytes()),
            Err(TokenError::Malformed(_))
        ));
        let refused = r#"{"error":"invalid_grant","error_description":"Invalid ID token"}"#;
        assert_eq!(
            read_id_jag(400, refused.as_bytes()),
            Err(TokenError::Refused {
                error: "invalid_grant".into(),
                description: Some("Invalid ID token".into())
            })
        );
    }

    #[test]
    fn secrets_never_reach_debug_output() {
        let grant = IdentityAssertionGrant {
            id_token: Secret::new("eyJ.very.secret"),
            idp_token_endpoint: Url::parse("https://idp.example.com/token").expect("url"),
            idp_client: None,
            audience: None,
        };
        let shown = format!("{grant:?}");
        assert!(!shown.contains("very.secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}
