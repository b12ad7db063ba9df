//! The authorization request a person's browser is sent to, and the
//! callback that comes back to the loopback listener (RFC 6749 §4.1 with
//! PKCE, RFC 8707 `resource`, RFC 9207 `iss`).

use url::Url;

use super::discovery::AuthorizationServerMetadata;
use super::pkce::Pkce;

/// The scope to ask for: the challenge's `scope` wins; else the protected
/// resource's `scopes_supported`; else none (the parameter is omitted).
/// `offline_access` is added only when the authorization server lists it,
/// so a refresh token can be issued where the server supports one.
pub fn select_scope(
    challenge: Option<&[String]>,
    resource_scopes: Option<&[String]>,
    server: &AuthorizationServerMetadata,
) -> Option<String> {
    let mut scopes: Vec<String> = challenge
        .filter(|s| !s.is_empty())
        .or(resource_scopes.filter(|s| !s.is_empty()))
        .map(<[String]>::to_vec)
        .unwrap_or_default();
    if server.supports_scope("offline_access") && !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The union of the scopes already granted and those a 403
/// `insufficient_scope` asks for, in first-seen order (a step-up).
pub fn union_scope(granted: Option<&str>, required: &[String]) -> String {
    let mut out: Vec<&str> = granted
        .map(|g| g.split_ascii_whitespace().collect())
        .unwrap_or_default();
    for scope in required {
        if !out.contains(&scope.as_str()) {
            out.push(scope);
        }
    }
    out.join(" ")
}

/// What an authorization request needs.
#[derive(Clone, Debug)]
pub struct AuthorizationRequest<'a> {
    /// The authorization endpoint (already checked by discovery).
    pub endpoint: &'a Url,
    /// The registered or configured client id.
    pub client_id: &'a str,
    /// The loopback redirect URI, exactly as registered.
    pub redirect_uri: &'a str,
    /// The PKCE pair and state of this attempt.
    pub pkce: &'a Pkce,
    /// RFC 8707: the MCP server's canonical URI, identical in the token
    /// request.
    pub resource: &'a str,
    /// The scope, when any (see [`select_scope`]).
    pub scope: Option<&'a str>,
}

impl AuthorizationRequest<'_> {
    /// The URL to open in the browser (and print for a person on another
    /// machine).
    pub fn url(&self) -> Url {
        let mut url = self.endpoint.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", self.client_id)
                .append_pair("redirect_uri", self.redirect_uri)
                .append_pair("code_challenge", &self.pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &self.pkce.state)
                .append_pair("resource", self.resource);
            if let Some(scope) = self.scope {
                q.append_pair("scope", scope);
            }
        }
        url
    }
}

/// Why a callback does not finish the login.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallbackError {
    /// No `state`, or another one: not the answer to this login (a stray or
    /// forged request). The listener ignores it and keeps waiting.
    #[error("the callback's state does not match this login")]
    StateMismatch,
    /// The authorization server refused (`error=access_denied`, ...).
    #[error("the authorization server refused the login: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The `error` code.
        error: String,
        /// `error_description`, when given.
        description: Option<String>,
    },
    /// RFC 9207: `iss` is another issuer's, or missing where the server
    /// promised it (a mix-up attack).
    #[error("the callback's issuer is {}, not `{expected}`; refusing the code", found.as_deref().map(|f| format!("`{f}`")).unwrap_or_else(|| "missing".into()))]
    IssuerMismatch {
        /// The issuer this login was started with.
        expected: String,
        /// The `iss` parameter, when present.
        found: Option<String>,
    },
    /// The success answer carried no `code`.
    #[error("the callback carries no authorization code")]
    NoCode,
}

/// Reads the query of a callback request: checks `state` first (so a
/// stray request can never fail a login), then an `error`, then `iss`
/// (required when the server advertises
/// `authorization_response_iss_parameter_supported`), and returns the code.
pub fn read_callback(
    query: &str,
    pkce: &Pkce,
    issuer: &str,
    iss_required: bool,
) -> Result<String, CallbackError> {
    let mut state = None;
    let mut code = None;
    let mut error = None;
    let mut description = None;
    let mut iss = None;
    for (k, v) in url::form_urlencoded::parse(query.trim_start_matches('?').as_bytes()) {
        let slot = match k.as_ref() {
            "state" => &mut state,
            "code" => &mut code,
            "error" => &mut error,
            "error_description" => &mut description,
            "iss" => &mut iss,
            _ => continue,
        };
        slot.get_or_insert(v.into_owned());
    }
    if state.as_deref() != Some(pkce.state.as_str()) {
        return Err(CallbackError::StateMismatch);
    }
    if let Some(error) = error {
        return Err(CallbackError::Refused { error, description });
    }
    match &iss {
        Some(found) if found != issuer => {
            return Err(CallbackError::IssuerMismatch {
                expected: issuer.to_owned(),
                found: iss,
            });
        }
        None if iss_required => {
            return Err(CallbackError::IssuerMismatch {
                expected: issuer.to_owned(),
                found: None,
            });
        }
        _ => {}
    }
    code.filter(|c| !c.is_empty()).ok_or(CallbackError::NoCode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauth::pkce::RANDOM_BYTES;

    fn pkce() -> Pkce {
        Pkce::from_random(&[7; RANDOM_BYTES])
    }

    fn server(scopes: Option<&[&str]>) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            issuer: "https://auth.example.com".into(),
            scopes_supported: scopes.map(|s| s.iter().map(|x| (*x).to_owned()).collect()),
            ..AuthorizationServerMetadata::default()
        }
    }

    fn owned(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn scope_comes_from_the_challenge_then_the_resource_else_is_omitted() {
        let plain = server(None);
        assert_eq!(
            select_scope(Some(&owned(&["a"])), Some(&owned(&["b", "c"])), &plain).as_deref(),
            Some("a")
        );
        assert_eq!(
            select_scope(None, Some(&owned(&["b", "c"])), &plain).as_deref(),
            Some("b c")
        );
        assert_eq!(select_scope(None, None, &plain), None);
        assert_eq!(select_scope(Some(&[]), None, &plain), None);
    }

    #[test]
    fn offline_access_only_when_the_server_lists_it() {
        let offline = server(Some(&["mcp:basic", "offline_access"]));
        assert_eq!(
            select_scope(None, Some(&owned(&["mcp:basic"])), &offline).as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(
            select_scope(None, None, &offline).as_deref(),
            Some("offline_access")
        );
        let without = server(Some(&["mcp:basic"]));
        assert_eq!(
            select_scope(None, Some(&owned(&["mcp:basic"])), &without).as_deref(),
            Some("mcp:basic")
        );
    }

    #[test]
    fn step_up_asks_for_the_union() {
        assert_eq!(
            union_scope(Some("mcp:basic"), &owned(&["mcp:basic", "mcp:write"])),
            "mcp:basic mcp:write"
        );
        assert_eq!(union_scope(None, &owned(&["x"])), "x");
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_and_resource() {
        let endpoint = Url::parse("https://auth.example.com/authorize?tenant=1").expect("url");
        let pkce = pkce();
        let url = AuthorizationRequest {
            endpoint: &endpoint,
            client_id: "client 1",
            redirect_uri: "http://127.0.0.1:4321/callback",
            pkce: &pkce,
            resource: "https://mcp.example.com/mcp",
            scope: Some("a b"),
        }
        .url();
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("tenant"), Some("1"), "the endpoint's own query stays");
        assert_eq!(get("response_type"), Some("code"));
        assert_eq!(get("client_id"), Some("client 1"));
        assert_eq!(get("code_challenge"), Some(pkce.challenge.as_str()));
        assert_eq!(get("code_challenge_method"), Some("S256"));
        assert_eq!(get("state"), Some(pkce.state.as_str()));
        assert_eq!(get("resource"), Some("https://mcp.example.com/mcp"));
        assert_eq!(get("scope"), Some("a b"));
        assert!(
            !url.as_str().contains(&pkce.verifier),
            "the verifier never leaves"
        );
    }

    #[test]
    fn callbacks_are_checked_state_first_then_error_then_issuer() {
        let pkce = pkce();
        let issuer = "https://auth.example.com";
        let q = |rest: &str| format!("state={}&{rest}", pkce.state);
        assert_eq!(
            read_callback(&q("code=abc"), &pkce, issuer, false),
            Ok("abc".into())
        );
        assert_eq!(
            read_callback("code=abc&state=forged", &pkce, issuer, false),
            Err(CallbackError::StateMismatch)
        );
        assert_eq!(
            read_callback("code=abc", &pkce, issuer, false),
            Err(CallbackError::StateMismatch)
        );
        // A stray error without our state cannot end the login either.
        assert_eq!(
            read_callback("error=access_denied", &pkce, issuer, false),
            Err(CallbackError::StateMismatch)
        );
        assert!(matches!(
            read_callback(&q("error=access_denied&error_description=no+thanks"), &pkce, issuer, false),
            Err(CallbackError::Refused { description: Some(d), .. }) if d == "no thanks"
        ));
        assert!(matches!(
            read_callback(
                &q("code=abc&iss=https%3A%2F%2Fevil.example.com"),
                &pkce,
                issuer,
                false
            ),
            Err(CallbackError::IssuerMismatch { found: Some(_), .. })
        ));
        assert_eq!(
            read_callback(
                &q("code=abc&iss=https%3A%2F%2Fauth.example.com"),
                &pkce,
                issuer,
                true
            ),
            Ok("abc".into())
        );
        assert!(matches!(
            read_callback(&q("code=abc"), &pkce, issuer, true),
            Err(CallbackError::IssuerMismatch { found: None, .. })
        ));
        assert_eq!(
            read_callback(&q("code="), &pkce, issuer, false),
            Err(CallbackError::NoCode)
        );
    }
}
