//! DPoP (RFC 9449; MCP SEP-1932): sender-constrained tokens. The client
//! holds a key pair and proves possession of its private key on every
//! token request and every request that presents the token, so a token
//! that leaks (a log, a proxy, a compromised server replaying it) is
//! worthless without the key.
//!
//! This module owns what is pure about it: when a login uses DPoP
//! ([`DpopMode`], [`decide`]), the claims of one proof ([`ProofClaims`]:
//! `htm`, `htu` without query or fragment, `iat`, `jti`, `ath` on resource
//! requests, the server's latest `nonce`) and its compact serialization
//! (`typ: dpop+jwt`, `alg`, the public `jwk` in the header), and reading
//! what a server answers: its `DPoP-Nonce` header ([`nonce_of`]) and
//! whether an answer asks for one ([`token_endpoint_wants_nonce`] at the
//! authorization server, [`resource_wants_nonce`] at the MCP server).
//!
//! # Implementation note: when a login uses DPoP
//!
//! RFC 9449 §5.1 has the authorization server advertise the algorithms it
//! takes in `dpop_signing_alg_values_supported`, and the MCP DPoP profile
//! (SEP-1932) makes DPoP an optional extension a client opts into where a
//! server offers it. A bound token is only usable where the MCP server
//! takes the DPoP scheme, and an authorization server that offers DPoP
//! often fronts servers that take only Bearer (oidc-provider offers it by
//! default). So the default ([`DpopMode::Auto`]) binds tokens where both
//! sides say they take them: the authorization server lists ES256, and
//! the MCP server challenged with the `DPoP` scheme (RFC 9449 §7.1) or
//! lists DPoP in its protected resource metadata (RFC 9728 §2).
//! Sender-constrained tokens cost one signature per request and protect
//! against every token leak; elsewhere tokens stay Bearer, so no server
//! that works today stops working. A user who must not hold a bearer
//! token sets `required` (the authorization server's word is enough
//! then); one whose server advertises DPoP but mishandles it sets `off`.
//!
//! # Implementation note: where signing happens
//!
//! The core holds no keys and reads no clock or randomness, so a proof is
//! made in two halves. The claims and the signing input are built here;
//! the signature, the wall-clock `iat` and the random `jti` are the
//! host's, behind [`DpopSigner`] (one key) and [`DpopProver`] (the keys of
//! a run, by server). The HTTP transport asks the prover for a proof per
//! request, since a proof names its method, URL, token hash and nonce and
//! may not be reused; the transport keeps the resource server's nonce and
//! decides the one retry a `use_dpop_nonce` answer earns (see
//! [`crate::http`]). The private key never leaves the host: only its
//! public JWK travels, inside each proof's header.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::Digest as _;
use url::Url;

use super::token::{TokenError, TokenResponse, read_token_response};

/// The one algorithm rho proves with: ES256 (P-256), the one every
/// DPoP deployment accepts and the one the MCP DPoP profile names first.
pub const DPOP_ALG: &str = "ES256";

/// The longest server nonce rho keeps and sends back. RFC 9449 sets no
/// bound; nonces are short opaque strings, and a server cannot make rho
/// hold or echo more.
pub const MAX_NONCE_LEN: usize = 1024;

/// `oauth.dpop`: whether a server's tokens are bound to a key of rho's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DpopMode {
    /// DPoP when the authorization server advertises ES256 in
    /// `dpop_signing_alg_values_supported`, plain Bearer otherwise.
    #[default]
    Auto,
    /// DPoP or no login: an authorization server that does not advertise
    /// ES256, or answers a proof with a Bearer token, fails the login.
    Required,
    /// Never DPoP: Bearer tokens only.
    Off,
}

impl DpopMode {
    /// The config word for the mode.
    pub fn name(self) -> &'static str {
        match self {
            DpopMode::Auto => "auto",
            DpopMode::Required => "required",
            DpopMode::Off => "off",
        }
    }

    /// Reads a config word; anything else is `None`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "auto" => Some(DpopMode::Auto),
            "required" => Some(DpopMode::Required),
            "off" => Some(DpopMode::Off),
            _ => None,
        }
    }
}

/// Why DPoP could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DpopError {
    /// `oauth.dpop = "required"` and the authorization server does not
    /// offer DPoP with ES256.
    #[error(
        "`oauth.dpop = \"required\"`, but the authorization server {issuer} does not advertise DPoP with ES256 (its `dpop_signing_alg_values_supported` is {offered}); set `oauth.dpop = \"auto\"` to accept Bearer tokens from it"
    )]
    NotOffered {
        /// The authorization server.
        issuer: String,
        /// What it lists, for a person.
        offered: String,
    },
    /// `oauth.dpop = "required"`, and the authorization server answered a
    /// proof with a token it did not bind (a Bearer token).
    #[error(
        "`oauth.dpop = \"required\"`, but the authorization server {issuer} issued a `{token_type}` token for a DPoP proof instead of a DPoP-bound one"
    )]
    NotBound {
        /// The authorization server.
        issuer: String,
        /// The `token_type` it issued.
        token_type: String,
    },
    /// The host's signer failed.
    #[error("signing the DPoP proof ({alg}) failed: {reason}")]
    Signing {
        /// The signer's algorithm.
        alg: String,
        /// The signer's reason.
        reason: String,
    },
}

/// Whether a login with `mode` binds its tokens with DPoP, given what the
/// authorization server `issuer` lists in `dpop_signing_alg_values_supported`.
/// Only ES256 counts: rho signs with nothing else, and a server that lists
/// only other algorithms would refuse its proofs.
pub fn decide(mode: DpopMode, issuer: &str, offered: Option<&[String]>) -> Result<bool, DpopError> {
    let es256 = offered.is_some_and(|algs| algs.iter().any(|a| a == DPOP_ALG));
    match mode {
        DpopMode::Off => Ok(false),
        DpopMode::Auto => Ok(es256),
        DpopMode::Required if es256 => Ok(true),
        DpopMode::Required => Err(DpopError::NotOffered {
            issuer: issuer.to_owned(),
            offered: match offered {
                None => "absent".into(),
                Some([]) => "empty".into(),
                Some(algs) => format!("[{}]", algs.join(", ")),
            },
        }),
    }
}

/// Signs DPoP proofs with one key the host holds. Implemented by the host
/// (rho-host's ES256 key, `jwt_key.rs`); the private key never crosses this
/// trait.
pub trait DpopSigner: std::fmt::Debug + Send + Sync {
    /// The JWS `alg`, e.g. `ES256`.
    fn alg(&self) -> &str;

    /// The public key as a JWK (RFC 7517), with no private member: for
    /// ES256 `{"kty":"EC","crv":"P-256","x":…,"y":…}`.
    fn public_jwk(&self) -> serde_json::Value;

    /// The JWS signature of `signing_input`, raw (`r || s` for ES256).
    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, String>;
}

/// What one request needs proved: the transport's side of a proof.
#[derive(Clone, Copy, Debug)]
pub struct ProofRequest<'a> {
    /// The HTTP method, upper case (`POST`).
    pub method: &'a str,
    /// The request URL (its query and fragment are not part of `htu`).
    pub url: &'a Url,
    /// The access token the request presents (its hash becomes `ath`);
    /// `None` at the token endpoint.
    pub access_token: Option<&'a str>,
    /// The latest nonce the server supplied, if any.
    pub nonce: Option<&'a str>,
}

/// Makes DPoP proofs for the servers of a run: the host holds each
/// server's key and supplies the wall-clock `iat` and a random `jti`
/// (see the module's implementation note). An `Err` says why, for a
/// person; the request then goes without a proof and the server's refusal
/// reports it.
pub trait DpopProver: std::fmt::Debug + Send + Sync {
    /// A fresh proof for `request` to server `server`, signed with the
    /// key that server's token is bound to.
    fn prove(&self, server: &str, request: &ProofRequest<'_>) -> Result<String, String>;
}

/// The claims of one proof (RFC 9449 §4.2).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ProofClaims {
    /// A unique id, so a server can refuse a replayed proof.
    pub jti: String,
    /// The HTTP method.
    pub htm: String,
    /// The request URL without query and fragment.
    pub htu: String,
    /// Issued at, UNIX seconds.
    pub iat: u64,
    /// `BASE64URL(SHA-256(access token))`, on requests that present one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ath: Option<String>,
    /// The server's nonce, when it supplied one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

impl ProofClaims {
    /// The claims for `request`, issued at `iat` with the unique id `jti`.
    pub fn new(request: &ProofRequest<'_>, iat: u64, jti: String) -> Self {
        Self {
            jti,
            htm: request.method.to_ascii_uppercase(),
            htu: htu(request.url),
            iat,
            ath: request.access_token.map(access_token_hash),
            nonce: request.nonce.map(str::to_owned),
        }
    }
}

/// `htu`: the URL without its query and fragment (RFC 9449 §4.2).
pub fn htu(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.into()
}

/// `ath`: the base64url SHA-256 of the access token's ASCII (RFC 9449
/// §4.2).
pub fn access_token_hash(access_token: &str) -> String {
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(access_token.as_bytes()))
}

/// A `jti` from fresh random bytes: a digest, so the bytes are never shown.
pub fn jti_from_random(random: &[u8]) -> String {
    let mut digest = sha2::Sha256::new();
    digest.update(b"rho dpop jti\0");
    digest.update(random);
    URL_SAFE_NO_PAD.encode(&digest.finalize()[..18])
}

/// The compact JWS of `claims` signed by `signer`, with the header
/// RFC 9449 §4.2 asks: `typ: dpop+jwt`, `alg`, and the public `jwk`.
pub fn proof(signer: &dyn DpopSigner, claims: &ProofClaims) -> Result<String, DpopError> {
    let header = serde_json::json!({
        "typ": "dpop+jwt",
        "alg": signer.alg(),
        "jwk": signer.public_jwk(),
    });
    // Serializing a struct of strings and integers cannot fail.
    let claims = serde_json::to_vec(claims).unwrap_or_default();
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let signature = signer
        .sign(input.as_bytes())
        .map_err(|reason| DpopError::Signing {
            alg: signer.alg().to_owned(),
            reason,
        })?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The nonce in an answer's `DPoP-Nonce` header (RFC 9449 §8.1), when it
/// carries exactly one well-formed nonce: 1 to [`MAX_NONCE_LEN`]
/// `NQCHAR`s (visible ASCII except `"` and `\`). Anything else — several
/// values, an empty or oversized one, spaces, control or non-ASCII
/// characters — is no nonce: rho never echoes what a header could not
/// carry back.
pub fn nonce_of(headers: &[(String, String)]) -> Option<String> {
    let mut values = headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("dpop-nonce"))
        .map(|(_, v)| v.trim_matches([' ', '\t']));
    let nonce = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let nqchar = |b: u8| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b);
    let well_formed = (1..=MAX_NONCE_LEN).contains(&nonce.len()) && nonce.bytes().all(nqchar);
    well_formed.then(|| nonce.to_owned())
}

/// Whether a token endpoint answer asks for a nonce (RFC 9449 §8): HTTP
/// 400 with the OAuth error `use_dpop_nonce`.
pub fn token_endpoint_wants_nonce(status: u16, body: &[u8]) -> bool {
    status == 400
        && matches!(super::token::error_answer(status, body), Err(Some((error, _))) if error == "use_dpop_nonce")
}

/// Whether a resource server answer asks for a nonce (RFC 9449 §9): HTTP
/// 401 with a `DPoP` challenge whose `error` is `use_dpop_nonce`.
pub fn resource_wants_nonce(status: u16, headers: &[(String, String)]) -> bool {
    status == 401
        && super::challenge::parse_challenges(
            headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v.as_str()),
        )
        .iter()
        .any(|c| {
            c.scheme.eq_ignore_ascii_case("dpop") && c.param("error") == Some("use_dpop_nonce")
        })
}

/// Reads a token endpoint answer to a request that carried a proof
/// (`proved`): a `DPoP` token is accepted then, and only then (a server
/// that binds a token rho never proved a key for issued something rho
/// cannot use). A server may still answer a proof with a Bearer token.
pub fn read_bound_token_response(
    status: u16,
    body: &[u8],
    proved: bool,
) -> Result<TokenResponse, TokenError> {
    match read_token_response(status, body) {
        Err(TokenError::NotBearer(kind)) if proved && kind.eq_ignore_ascii_case("dpop") => {
            let token: TokenResponse =
                serde_json::from_slice(body).map_err(|e| TokenError::Malformed(e.to_string()))?;
            if token.access_token.is_empty() {
                return Err(TokenError::Malformed("an empty access_token".into()));
            }
            Ok(token)
        }
        other => other,
    }
}

/// Whether `token` is DPoP-bound: its `token_type` says `DPoP`.
pub fn is_bound(token: &TokenResponse) -> bool {
    token.token_type.eq_ignore_ascii_case("dpop")
}

/// The `Authorization` header value for an access token: the `DPoP`
/// scheme for a bound one (RFC 9449 §7.1), `Bearer` otherwise.
pub fn authorization(access_token: &str, bound: bool) -> String {
    if bound {
        format!("DPoP {access_token}")
    } else {
        format!("Bearer {access_token}")
    }
}

/// The token of an `Authorization: DPoP …` header value, if it is one.
pub fn bound_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("dpop")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signer whose "signature" is a digest of the input.
    #[derive(Debug)]
    struct Digesting;

    impl DpopSigner for Digesting {
        fn alg(&self) -> &str {
            "ES256"
        }
        fn public_jwk(&self) -> serde_json::Value {
            serde_json::json!({"kty": "EC", "crv": "P-256", "x": "xx", "y": "yy"})
        }
        fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String> {
            Ok(sha2::Sha256::digest(input).to_vec())
        }
    }

    #[derive(Debug)]
    struct Broken;

    impl DpopSigner for Broken {
        fn alg(&self) -> &str {
            "ES256"
        }
        fn public_jwk(&self) -> serde_json::Value {
            serde_json::json!({})
        }
        fn sign(&self, _: &[u8]) -> Result<Vec<u8>, String> {
            Err("the key is gone".into())
        }
    }

    fn decode(part: &str) -> serde_json::Value {
        let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url");
        serde_json::from_slice(&bytes).expect("json")
    }

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_resource_proof_names_method_url_without_query_token_hash_and_nonce() {
        let target = url("https://mcp.example.com/mcp?tenant=a#frag");
        let request = ProofRequest {
            method: "post",
            url: &target,
            access_token: Some("tok"),
            nonce: Some("n-1"),
        };
        let claims = ProofClaims::new(&request, 1_700_000_000, "j1".into());
        let jwt = proof(&Digesting, &claims).expect("signed");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            decode(parts[0]),
            serde_json::json!({
                "typ": "dpop+jwt", "alg": "ES256",
                "jwk": {"kty": "EC", "crv": "P-256", "x": "xx", "y": "yy"}
            })
        );
        assert_eq!(
            decode(parts[1]),
            serde_json::json!({
                "jti": "j1", "htm": "POST", "htu": "https://mcp.example.com/mcp",
                "iat": 1_700_000_000u64,
                // RFC 9449 §7.1's example: SHA-256 of the ASCII token, base64url.
                "ath": URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(b"tok")),
                "nonce": "n-1"
            })
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert_eq!(
            URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url"),
            sha2::Sha256::digest(signed.as_bytes()).to_vec()
        );
    }

    #[test]
    fn a_token_request_proof_has_no_ath_and_no_nonce_until_one_is_supplied() {
        let target = url("https://as.example.com/token");
        let request = ProofRequest {
            method: "POST",
            url: &target,
            access_token: None,
            nonce: None,
        };
        let claims = ProofClaims::new(&request, 5, "j".into());
        let jwt = proof(&Digesting, &claims).expect("signed");
        let body = decode(jwt.split('.').nth(1).expect("claims"));
        assert_eq!(
            body,
            serde_json::json!({"jti": "j", "htm": "POST", "htu": "https://as.example.com/token", "iat": 5})
        );
    }

    #[test]
    fn the_access_token_hash_matches_rfc_9449s_example() {
        // RFC 9449 §7.1: the token `Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU`
        // hashes to `fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo`.
        assert_eq!(
            access_token_hash("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn a_signer_that_fails_is_named_in_the_error() {
        let target = url("https://as/token");
        let claims = ProofClaims::new(
            &ProofRequest {
                method: "POST",
                url: &target,
                access_token: None,
                nonce: None,
            },
            0,
            "j".into(),
        );
        let err = proof(&Broken, &claims).expect_err("no signature");
        assert_eq!(
            err.to_string(),
            "signing the DPoP proof (ES256) failed: the key is gone"
        );
    }

    #[test]
    fn jtis_differ_with_the_random_bytes_and_hide_them() {
        let a = jti_from_random(&[1; 32]);
        assert_ne!(a, jti_from_random(&[2; 32]));
        assert_eq!(a.len(), 24);
    }

    #[test]
    fn auto_uses_dpop_only_where_es256_is_advertised_and_required_fails_elsewhere() {
        let es = vec!["RS256".to_owned(), "ES256".to_owned()];
        let rs = vec!["RS256".to_owned()];
        assert_eq!(decide(DpopMode::Auto, "i", Some(&es)), Ok(true));
        assert_eq!(decide(DpopMode::Auto, "i", Some(&rs)), Ok(false));
        assert_eq!(decide(DpopMode::Auto, "i", None), Ok(false));
        assert_eq!(decide(DpopMode::Off, "i", Some(&es)), Ok(false));
        assert_eq!(decide(DpopMode::Required, "i", Some(&es)), Ok(true));
        let err = decide(DpopMode::Required, "https://as", Some(&rs)).expect_err("refused");
        assert!(err.to_string().contains("https://as"), "{err}");
        assert!(err.to_string().contains("[RS256]"), "{err}");
        assert!(decide(DpopMode::Required, "i", Some(&[])).is_err());
        assert!(decide(DpopMode::Required, "i", None).is_err());
    }

    #[test]
    fn mode_names_round_trip_and_unknown_words_are_refused() {
        for mode in [DpopMode::Auto, DpopMode::Required, DpopMode::Off] {
            assert_eq!(DpopMode::from_name(mode.name()), Some(mode));
        }
        assert_eq!(DpopMode::from_name("yes"), None);
        assert_eq!(DpopMode::from_name("Auto"), None);
    }

    #[test]
    fn a_well_formed_nonce_is_read_from_either_case_of_the_header() {
        assert_eq!(
            nonce_of(&h(&[("DPoP-Nonce", "eyJ7S_zG.eyJH0-Z.HX4w-7v")])),
            Some("eyJ7S_zG.eyJH0-Z.HX4w-7v".into())
        );
        assert_eq!(nonce_of(&h(&[("dpop-nonce", " n ")])), Some("n".into()));
        assert_eq!(nonce_of(&h(&[("Other", "n")])), None);
    }

    #[test]
    fn hostile_or_malformed_nonces_are_no_nonce() {
        let long = "a".repeat(MAX_NONCE_LEN + 1);
        for bad in [
            "",
            "two words",
            "quote\"d",
            "back\\slash",
            "new\r\nX-Injected: 1",
            "tab\tinside",
            "é",
            "\u{7f}",
            long.as_str(),
        ] {
            assert_eq!(nonce_of(&h(&[("DPoP-Nonce", bad)])), None, "{bad:?}");
        }
        let max = "a".repeat(MAX_NONCE_LEN);
        assert_eq!(nonce_of(&h(&[("DPoP-Nonce", &max)])), Some(max.clone()));
        // Two nonces: which one counts is unknowable, so neither does.
        assert_eq!(
            nonce_of(&h(&[("DPoP-Nonce", "a"), ("dpop-nonce", "b")])),
            None
        );
    }

    #[test]
    fn only_a_400_use_dpop_nonce_error_asks_the_token_request_again() {
        let asks = br#"{"error":"use_dpop_nonce","error_description":"x"}"#;
        assert!(token_endpoint_wants_nonce(400, asks));
        assert!(!token_endpoint_wants_nonce(401, asks));
        assert!(!token_endpoint_wants_nonce(200, asks));
        assert!(!token_endpoint_wants_nonce(
            400,
            br#"{"error":"invalid_dpop_proof"}"#
        ));
        assert!(!token_endpoint_wants_nonce(400, b"use_dpop_nonce"));
        assert!(!token_endpoint_wants_nonce(400, b"\xff\xfe{"));
    }

    #[test]
    fn only_a_401_dpop_challenge_with_use_dpop_nonce_asks_the_resource_request_again() {
        let challenge = |v: &str| h(&[("WWW-Authenticate", v)]);
        assert!(resource_wants_nonce(
            401,
            &challenge(r#"DPoP error="use_dpop_nonce", resource_metadata="https://x""#)
        ));
        assert!(resource_wants_nonce(
            401,
            &challenge(r#"Bearer realm="r", dpop error=use_dpop_nonce"#)
        ));
        assert!(!resource_wants_nonce(
            403,
            &challenge(r#"DPoP error="use_dpop_nonce""#)
        ));
        // The error in another scheme's challenge does not count.
        assert!(!resource_wants_nonce(
            401,
            &challenge(r#"Bearer error="use_dpop_nonce""#)
        ));
        assert!(!resource_wants_nonce(
            401,
            &challenge(r#"DPoP error="invalid_token""#)
        ));
        assert!(!resource_wants_nonce(
            401,
            &challenge(r#"DPoP error="use_dpop_nonce"#)
        ));
        assert!(!resource_wants_nonce(401, &challenge("\u{0}DPoP,,==\"")));
    }

    #[test]
    fn a_dpop_token_is_accepted_only_after_a_proof() {
        let dpop = br#"{"access_token":"at","token_type":"DPoP","expires_in":60}"#;
        let token = read_bound_token_response(200, dpop, true).expect("bound token");
        assert!(is_bound(&token));
        assert!(matches!(
            read_bound_token_response(200, dpop, false),
            Err(TokenError::NotBearer(_))
        ));
        let bearer = br#"{"access_token":"at","token_type":"Bearer"}"#;
        let token = read_bound_token_response(200, bearer, true).expect("bearer token");
        assert!(!is_bound(&token));
        assert!(matches!(
            read_bound_token_response(200, br#"{"access_token":"","token_type":"DPoP"}"#, true),
            Err(TokenError::Malformed(_))
        ));
        assert!(matches!(
            read_bound_token_response(200, br#"{"access_token":"a","token_type":"MAC"}"#, true),
            Err(TokenError::NotBearer(_))
        ));
    }

    #[test]
    fn the_authorization_scheme_follows_the_binding() {
        assert_eq!(authorization("t", true), "DPoP t");
        assert_eq!(authorization("t", false), "Bearer t");
        assert_eq!(bound_token("DPoP t"), Some("t"));
        assert_eq!(bound_token("dpop  t "), Some("t"));
        assert_eq!(bound_token("Bearer t"), None);
        assert_eq!(bound_token("DPoP "), None);
        assert_eq!(bound_token("DPoP"), None);
    }
}
