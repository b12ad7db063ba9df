//! Where the authorization metadata of an MCP server is, in the order the
//! 2025-11-25 authorization spec asks clients to look, and what a fetched
//! document must satisfy before rho trusts it.
//!
//! - Protected resource metadata (RFC 9728): the `resource_metadata` URL of
//!   the 401's challenge when there is one; else the path-based well-known
//!   URL, then the root one.
//! - Authorization server metadata (RFC 8414 with path insertion, then the
//!   OpenID Connect discovery variants).
//!
//! Every URL rho would fetch or send a person to passes [`check_endpoint`]:
//! https, or plain http on loopback only when the MCP server itself is on
//! plain-http loopback. A document can therefore never move a leg of the
//! exchange onto plaintext HTTP, and a server that publishes no metadata is
//! refused: rho never guesses `/authorize` from the MCP URL.

use serde::Deserialize;
use url::Url;

/// Why a discovery step refused what it found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// A URL that is not https (or allowed loopback http).
    #[error(
        "{what} `{url}` is not https: rho sends OAuth traffic only over https (plain http only to a loopback server that is itself on http)"
    )]
    Insecure {
        /// Which URL: "the authorization endpoint", ...
        what: &'static str,
        /// The URL as found.
        url: String,
    },
    /// A URL that does not parse.
    #[error("{what} `{url}` is not a valid URL")]
    BadUrl {
        /// Which URL.
        what: &'static str,
        /// The text found.
        url: String,
    },
    /// A document that is not the JSON object its RFC describes.
    #[error("{what} is not valid JSON metadata: {reason}")]
    BadDocument {
        /// Which document.
        what: &'static str,
        /// The parser's reason.
        reason: String,
    },
    /// The PRM names a different resource than the server rho connects to.
    #[error(
        "the protected resource metadata is for `{found}`, not for this server (`{expected}`); refusing to send it a token"
    )]
    ResourceMismatch {
        /// The server URL rho uses.
        expected: String,
        /// The `resource` of the document.
        found: String,
    },
    /// The PRM lists no authorization server.
    #[error(
        "the protected resource metadata names no authorization server (`authorization_servers` is empty)"
    )]
    NoAuthorizationServer,
    /// The AS metadata's `issuer` is not where it was discovered.
    #[error(
        "the authorization server metadata says its issuer is `{found}`, but it was discovered for `{expected}`; refusing it"
    )]
    IssuerMismatch {
        /// The issuer rho looked up.
        expected: String,
        /// The `issuer` of the document.
        found: String,
    },
    /// The AS does not offer PKCE with S256.
    #[error(
        "the authorization server does not list S256 in `code_challenge_methods_supported`; rho requires PKCE with S256"
    )]
    NoS256,
    /// A required endpoint is missing.
    #[error("the authorization server metadata has no `{0}`")]
    MissingEndpoint(&'static str),
}

/// Whether `url` is on the loopback interface (`localhost`, 127.0.0.0/8,
/// `[::1]`).
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Checks one OAuth URL against the https rule, relative to the MCP
/// server's own URL `server`.
pub fn check_endpoint(what: &'static str, url: &str, server: &Url) -> Result<Url, DiscoveryError> {
    let parsed = Url::parse(url).map_err(|_| DiscoveryError::BadUrl {
        what,
        url: url.to_owned(),
    })?;
    let plain_loopback_allowed = server.scheme() == "http" && is_loopback(server);
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if plain_loopback_allowed && is_loopback(&parsed) => Ok(parsed),
        _ => Err(DiscoveryError::Insecure {
            what,
            url: url.to_owned(),
        }),
    }
}

/// The URLs to try for the protected resource metadata of `server`, in
/// order: the challenge's `resource_metadata` (when given and allowed),
/// then `/.well-known/oauth-protected-resource<path>` when the server URL
/// has a path, then `/.well-known/oauth-protected-resource`.
pub fn resource_metadata_urls(
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Vec<Url>, DiscoveryError> {
    let mut out = Vec::new();
    if let Some(url) = from_challenge {
        out.push(check_endpoint("the resource metadata URL", url, server)?);
        return Ok(out);
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        out.push(well_known(server, "oauth-protected-resource", path));
    }
    out.push(well_known(server, "oauth-protected-resource", ""));
    Ok(out)
}

/// The URLs to try for the metadata of the authorization server `issuer`:
/// with a path, RFC 8414 path insertion, then OpenID Connect with path
/// insertion, then OpenID Connect appended; without one, RFC 8414 then
/// OpenID Connect.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        return vec![
            well_known(issuer, "oauth-authorization-server", ""),
            well_known(issuer, "openid-configuration", ""),
        ];
    }
    let mut appended = origin_only(issuer);
    appended.set_path(&format!("{path}/.well-known/openid-configuration"));
    vec![
        well_known(issuer, "oauth-authorization-server", path),
        well_known(issuer, "openid-configuration", path),
        appended,
    ]
}

fn origin_only(url: &Url) -> Url {
    let mut out = url.clone();
    out.set_query(None);
    out.set_fragment(None);
    out.set_path("/");
    out
}

fn well_known(base: &Url, name: &str, path: &str) -> Url {
    let mut out = origin_only(base);
    out.set_path(&format!("/.well-known/{name}{path}"));
    out
}

/// The canonical form of a resource URI (RFC 8707 §2, the MCP spec's
/// "canonical server URI"): scheme and host lowercase (the url crate does
/// that), no fragment, no query, no trailing `/` unless the path is `/`.
pub fn canonical_resource(url: &Url) -> String {
    let mut out = url.clone();
    out.set_fragment(None);
    out.set_query(None);
    let text = out.to_string();
    match text.strip_suffix('/') {
        Some(stripped) => stripped.to_owned(),
        None => text,
    }
}

/// Protected resource metadata (RFC 9728 §2), the fields rho reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ResourceMetadata {
    /// The protected resource's identifier.
    pub resource: String,
    /// Issuer URLs of the authorization servers it trusts.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it uses.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// The DPoP proof algorithms it takes (RFC 9728 §2): it accepts
    /// DPoP-bound tokens.
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// It takes only DPoP-bound tokens (RFC 9728 §2).
    #[serde(default)]
    pub dpop_bound_access_tokens_required: bool,
}

impl ResourceMetadata {
    /// Whether the resource says it takes DPoP-bound tokens.
    pub fn takes_dpop(&self) -> bool {
        self.dpop_bound_access_tokens_required
            || self
                .dpop_signing_alg_values_supported
                .as_ref()
                .is_some_and(|algs| !algs.is_empty())
    }
}

/// Reads a PRM document fetched for `server` and checks it: its
/// `resource` must be the server's canonical URI or a parent of it (same
/// origin, a path prefix at a segment boundary — servers commonly name
/// their origin), and it must name an authorization server.
pub fn read_resource_metadata(
    body: &[u8],
    server: &Url,
) -> Result<ResourceMetadata, DiscoveryError> {
    let doc: ResourceMetadata =
        serde_json::from_slice(body).map_err(|e| DiscoveryError::BadDocument {
            what: "the protected resource metadata",
            reason: e.to_string(),
        })?;
    let expected = canonical_resource(server);
    let matches = Url::parse(&doc.resource).is_ok_and(|found| {
        let found = canonical_resource(&found);
        found == expected
            || (expected.starts_with(&found) && expected[found.len()..].starts_with('/'))
    });
    if !matches {
        return Err(DiscoveryError::ResourceMismatch {
            expected,
            found: doc.resource,
        });
    }
    if doc.authorization_servers.is_empty() {
        return Err(DiscoveryError::NoAuthorizationServer);
    }
    Ok(doc)
}

/// Authorization server metadata (RFC 8414 §2), the fields rho reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; must equal the URL it was discovered for.
    pub issuer: String,
    /// Where a person authorizes.
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    /// Where codes and refresh tokens are redeemed.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// Dynamic client registration (RFC 7591), if offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; rho requires `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Token endpoint client authentication methods.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Grant types.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
    /// RFC 9207: the server sends `iss` in authorization responses.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: bool,
    /// Client ID metadata documents are accepted as `client_id`.
    #[serde(default)]
    pub client_id_metadata_document_supported: bool,
    /// DPoP proof algorithms the server accepts (RFC 9449 §5.1); rho binds
    /// tokens with DPoP where this lists ES256 (see [`super::dpop`]).
    #[serde(default)]
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

impl AuthorizationServerMetadata {
    /// Whether the server lists `scope` (for `offline_access`).
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

/// Reads an AS metadata document fetched for `issuer` and checks it: the
/// `issuer` must be exactly the issuer looked up (RFC 8414 §3.3), S256
/// must be offered, the endpoints rho uses must exist, and every endpoint
/// must pass [`check_endpoint`] against the MCP `server` URL.
pub fn read_authorization_server_metadata(
    body: &[u8],
    issuer: &str,
    server: &Url,
) -> Result<AuthorizationServerMetadata, DiscoveryError> {
    let doc: AuthorizationServerMetadata =
        serde_json::from_slice(body).map_err(|e| DiscoveryError::BadDocument {
            what: "the authorization server metadata",
            reason: e.to_string(),
        })?;
    if doc.issuer != issuer {
        return Err(DiscoveryError::IssuerMismatch {
            expected: issuer.to_owned(),
            found: doc.issuer,
        });
    }
    let s256 = doc
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|m| m.iter().any(|x| x == "S256"));
    if !s256 {
        return Err(DiscoveryError::NoS256);
    }
    let token = doc
        .token_endpoint
        .as_deref()
        .ok_or(DiscoveryError::MissingEndpoint("token_endpoint"))?;
    check_endpoint("the token endpoint", token, server)?;
    if let Some(authorize) = &doc.authorization_endpoint {
        check_endpoint("the authorization endpoint", authorize, server)?;
    }
    if let Some(register) = &doc.registration_endpoint {
        check_endpoint("the registration endpoint", register, server)?;
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    fn strings(urls: &[Url]) -> Vec<String> {
        urls.iter().map(Url::to_string).collect()
    }

    #[test]
    fn resource_metadata_comes_from_the_challenge_first_then_path_then_root() {
        let server = url("https://mcp.example.com/api/mcp");
        assert_eq!(
            strings(&resource_metadata_urls(&server, None).expect("urls")),
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(
                &resource_metadata_urls(&server, Some("https://meta.example.com/prm"))
                    .expect("urls")
            ),
            ["https://meta.example.com/prm"]
        );
        assert_eq!(
            strings(&resource_metadata_urls(&url("https://mcp.example.com/"), None).expect("urls")),
            ["https://mcp.example.com/.well-known/oauth-protected-resource"]
        );
        // A challenge cannot send rho to plain http.
        assert!(matches!(
            resource_metadata_urls(&server, Some("http://meta.example.com/prm")),
            Err(DiscoveryError::Insecure { .. })
        ));
    }

    #[test]
    fn authorization_server_metadata_order_with_and_without_a_path() {
        assert_eq!(
            strings(&authorization_server_metadata_urls(&url(
                "https://auth.example.com/tenant1"
            ))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(&authorization_server_metadata_urls(&url(
                "https://auth.example.com"
            ))),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn plain_http_only_between_loopback_parties() {
        let https = url("https://mcp.example.com/mcp");
        let local = url("http://127.0.0.1:3000/mcp");
        let accepted =
            |u: &str, server: &Url| check_endpoint("x", u, server).map(|parsed| parsed.to_string());
        let insecure = |u: &str, server: &Url| {
            matches!(
                check_endpoint("x", u, server),
                Err(DiscoveryError::Insecure { url, .. }) if url == u
            )
        };
        assert_eq!(
            accepted("https://a.example.com/t", &https),
            Ok("https://a.example.com/t".to_owned())
        );
        assert!(insecure("http://a.example.com/t", &https));
        // An https server cannot be moved onto plaintext, even on loopback.
        assert!(insecure("http://localhost:9/t", &https));
        assert_eq!(
            accepted("http://localhost:9/t", &local),
            Ok("http://localhost:9/t".to_owned())
        );
        assert_eq!(
            accepted("http://[::1]:9/t", &local),
            Ok("http://[::1]:9/t".to_owned())
        );
        assert!(insecure("http://10.0.0.1/t", &local));
        assert!(insecure("ftp://localhost/t", &local));
        assert!(matches!(
            check_endpoint("x", "not a url", &local),
            Err(DiscoveryError::BadUrl { .. })
        ));
    }

    #[test]
    fn the_resource_must_be_this_server_or_a_parent_of_it() {
        let server = url("https://mcp.example.com/api/mcp");
        let doc = |resource: &str| {
            format!(
                r#"{{"resource":"{resource}","authorization_servers":["https://auth.example.com"]}}"#
            )
        };
        for ok in [
            "https://mcp.example.com/api/mcp",
            "https://MCP.example.com/api/mcp/",
            "https://mcp.example.com",
            "https://mcp.example.com/api",
        ] {
            let metadata = read_resource_metadata(doc(ok).as_bytes(), &server)
                .unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert_eq!(metadata.resource, ok);
            assert_eq!(
                metadata.authorization_servers,
                vec!["https://auth.example.com".to_owned()]
            );
        }
        for bad in [
            "https://evil.example.com/api/mcp",
            "https://mcp.example.com/ap",
            "https://mcp.example.com/api/mcp/other",
            "http://mcp.example.com/api/mcp",
            "not a url",
        ] {
            assert!(
                matches!(
                    read_resource_metadata(doc(bad).as_bytes(), &server),
                    Err(DiscoveryError::ResourceMismatch { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(
            read_resource_metadata(
                br#"{"resource":"https://mcp.example.com/api/mcp"}"#,
                &server
            ),
            Err(DiscoveryError::NoAuthorizationServer)
        );
        assert!(matches!(
            read_resource_metadata(b"[]", &server),
            Err(DiscoveryError::BadDocument { .. })
        ));
    }

    #[test]
    fn authorization_server_metadata_is_checked_before_it_is_trusted() {
        let server = url("https://mcp.example.com/mcp");
        let good = r#"{"issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","code_challenge_methods_supported":["plain","S256"],"scopes_supported":["a","offline_access"]}"#;
        let doc = read_authorization_server_metadata(
            good.as_bytes(),
            "https://auth.example.com",
            &server,
        )
        .expect("valid");
        assert!(doc.supports_scope("offline_access"));
        assert!(matches!(
            read_authorization_server_metadata(
                good.as_bytes(),
                "https://other.example.com",
                &server
            ),
            Err(DiscoveryError::IssuerMismatch { .. })
        ));
        let no_s256 = good.replace(r#"["plain","S256"]"#, r#"["plain"]"#);
        assert_eq!(
            read_authorization_server_metadata(
                no_s256.as_bytes(),
                "https://auth.example.com",
                &server
            ),
            Err(DiscoveryError::NoS256)
        );
        let absent = good.replace(
            r#","code_challenge_methods_supported":["plain","S256"]"#,
            "",
        );
        assert_eq!(
            read_authorization_server_metadata(
                absent.as_bytes(),
                "https://auth.example.com",
                &server
            ),
            Err(DiscoveryError::NoS256)
        );
        let plaintext = good.replace(
            "https://auth.example.com/token",
            "http://auth.example.com/token",
        );
        assert!(matches!(
            read_authorization_server_metadata(
                plaintext.as_bytes(),
                "https://auth.example.com",
                &server
            ),
            Err(DiscoveryError::Insecure { .. })
        ));
        let no_token = good.replace(r#""token_endpoint":"https://auth.example.com/token","#, "");
        assert_eq!(
            read_authorization_server_metadata(
                no_token.as_bytes(),
                "https://auth.example.com",
                &server
            ),
            Err(DiscoveryError::MissingEndpoint("token_endpoint"))
        );
    }
}
