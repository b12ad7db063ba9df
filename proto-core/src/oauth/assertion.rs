//! `private_key_jwt` client authentication (RFC 7523 §2.2, OpenID Connect
//! Core §9; MCP SEP-1046): the client proves itself at the token endpoint
//! with a short-lived JWT signed by a key only it holds, instead of a
//! shared secret.
//!
//! The claims and the compact serialization are built here; the signature
//! is the host's ([`ClientAssertionSigner`]): the core holds no keys and
//! does no cryptography beyond digests. The core has no clock either, so
//! the wall-clock time comes in with the [`ClientAssertionKey`].

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::Digest as _;

/// `client_assertion_type` for a JWT bearer assertion (RFC 7523 §2.2).
pub const CLIENT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid after it is issued: five minutes, long
/// enough for a slow token endpoint, short enough that a leaked one is
/// soon worthless.
pub const ASSERTION_LIFETIME_SECS: u64 = 300;

/// Signs client assertions with a key the host holds (a PKCS#8 PEM file,
/// an HSM, a cloud KMS). Implemented by the host; see rho-host's `jwt_key.rs`.
pub trait ClientAssertionSigner: std::fmt::Debug + Send + Sync {
    /// The JWS `alg` of the signatures, e.g. `ES256`.
    fn alg(&self) -> &str;

    /// The JWS signature of `signing_input` (the ASCII
    /// `BASE64URL(header).BASE64URL(claims)`), as raw bytes: for ES256 the
    /// 64-byte `r || s`, not DER. An error says why, in words for a person.
    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, String>;
}

/// A configured signing key and the wall-clock time to issue assertions
/// at.
#[derive(Clone, Debug)]
pub struct ClientAssertionKey {
    /// The host's signer.
    pub signer: Arc<dyn ClientAssertionSigner>,
    /// Seconds since the UNIX epoch when the login starts: the host sets
    /// it (the core reads no clock). A login is bounded to minutes, well
    /// inside [`ASSERTION_LIFETIME_SECS`].
    pub now_unix: u64,
}

/// The claims of one client assertion (RFC 7523 §3).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AssertionClaims {
    /// The client id.
    pub iss: String,
    /// The client id again.
    pub sub: String,
    /// The authorization server's issuer identifier.
    pub aud: String,
    /// Issued at, UNIX seconds.
    pub iat: u64,
    /// Expires at: `iat` plus [`ASSERTION_LIFETIME_SECS`].
    pub exp: u64,
    /// A unique id, so the server can refuse a replay.
    pub jti: String,
}

impl AssertionClaims {
    /// The claims for `client_id` at the authorization server `issuer`,
    /// issued at `now_unix`, with the unique id `jti`.
    pub fn new(client_id: &str, issuer: &str, now_unix: u64, jti: String) -> Self {
        Self {
            iss: client_id.to_owned(),
            sub: client_id.to_owned(),
            aud: issuer.to_owned(),
            iat: now_unix,
            exp: now_unix.saturating_add(ASSERTION_LIFETIME_SECS),
            jti,
        }
    }
}

/// A `jti` from a login's fresh random bytes: a digest, so the bytes that
/// also make the PKCE verifier are never shown.
pub fn jti_from_random(random: &[u8]) -> String {
    let mut digest = sha2::Sha256::new();
    digest.update(b"rho client assertion jti\0");
    digest.update(random);
    URL_SAFE_NO_PAD.encode(&digest.finalize()[..18])
}

/// Why no assertion could be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AssertionError {
    /// The signer failed.
    #[error("signing the client assertion ({alg}) failed: {reason}")]
    Signing {
        /// The signer's algorithm.
        alg: String,
        /// The signer's reason.
        reason: String,
    },
}

/// `BASE64URL(header).BASE64URL(claims)`: what is signed, for `alg`.
pub fn signing_input(alg: &str, claims: &AssertionClaims) -> String {
    let header = serde_json::json!({"alg": alg, "typ": "JWT"});
    // Serializing a struct of strings and integers cannot fail.
    let claims = serde_json::to_vec(claims).unwrap_or_default();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

/// The compact JWS of `claims`, signed by `signer`.
pub fn client_assertion(
    signer: &dyn ClientAssertionSigner,
    claims: &AssertionClaims,
) -> Result<String, AssertionError> {
    let input = signing_input(signer.alg(), claims);
    let signature = signer
        .sign(input.as_bytes())
        .map_err(|reason| AssertionError::Signing {
            alg: signer.alg().to_owned(),
            reason,
        })?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signer whose "signature" is a digest of the input: enough to see
    /// that the input reached it and the output came back encoded.
    #[derive(Debug)]
    struct Digesting;

    impl ClientAssertionSigner for Digesting {
        fn alg(&self) -> &str {
            "ES256"
        }
        fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String> {
            Ok(sha2::Sha256::digest(input).to_vec())
        }
    }

    #[derive(Debug)]
    struct Broken;

    impl ClientAssertionSigner for Broken {
        fn alg(&self) -> &str {
            "ES256"
        }
        fn sign(&self, _: &[u8]) -> Result<Vec<u8>, String> {
            Err("the key is gone".into())
        }
    }

    fn decode(part: &str) -> serde_json::Value {
        let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[test]
    fn an_assertion_names_the_client_twice_and_the_issuer_as_audience() {
        let claims =
            AssertionClaims::new("m2m", "https://as.example.com", 1_700_000_000, "j1".into());
        let jwt = client_assertion(&Digesting, &claims).expect("signed");
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            decode(parts[0]),
            serde_json::json!({"alg": "ES256", "typ": "JWT"})
        );
        assert_eq!(
            decode(parts[1]),
            serde_json::json!({
                "iss": "m2m", "sub": "m2m", "aud": "https://as.example.com",
                "iat": 1_700_000_000u64, "exp": 1_700_000_300u64, "jti": "j1"
            })
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert_eq!(
            URL_SAFE_NO_PAD.decode(parts[2]).expect("base64url"),
            sha2::Sha256::digest(signed.as_bytes()).to_vec()
        );
    }

    #[test]
    fn a_signer_that_fails_is_named_in_the_error() {
        let claims = AssertionClaims::new("c", "https://as", 0, "j".into());
        let err = client_assertion(&Broken, &claims).expect_err("no signature");
        assert_eq!(
            err.to_string(),
            "signing the client assertion (ES256) failed: the key is gone"
        );
    }

    #[test]
    fn jtis_differ_with_the_random_bytes_and_hide_them() {
        let a = jti_from_random(&[1; 48]);
        let b = jti_from_random(&[2; 48]);
        assert_ne!(a, b);
        assert_eq!(a.len(), 24);
        assert!(!a.contains(&URL_SAFE_NO_PAD.encode([1u8; 18])));
    }
}
