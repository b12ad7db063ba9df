//! The key a `private_key_jwt` client signs its client assertions with
//! (RFC 7523; see `rho_proto_core::oauth::assertion`): a P-256 key in a
//! PKCS#8 PEM, signing ES256 with ring, the crypto library rustls already
//! brings.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rho_proto_core::oauth::assertion::ClientAssertionSigner;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

/// An ES256 signing key. `Debug` never shows the private key.
pub(crate) struct Es256Key {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for Es256Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Es256Key").finish_non_exhaustive()
    }
}

impl Es256Key {
    /// Reads a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`) holding a P-256
    /// key. The error says what is wrong, never what the key is.
    pub(crate) fn from_pem(pem: &str) -> Result<Self, String> {
        if pem.contains("-----BEGIN EC PRIVATE KEY-----") {
            return Err("the key is a SEC1 `EC PRIVATE KEY`; rho reads PKCS#8 (`BEGIN PRIVATE KEY`): convert it with `openssl pkcs8 -topk8 -nocrypt`".into());
        }
        if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            return Err("the key is encrypted; rho reads an unencrypted PKCS#8 key".into());
        }
        let body = pem_body(pem, "PRIVATE KEY")
            .ok_or("not a PEM with a `-----BEGIN PRIVATE KEY-----` block")?;
        let der = STANDARD
            .decode(body)
            .map_err(|e| format!("the PEM's base64 does not decode: {e}"))?;
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
            .map_err(|e| format!("not a PKCS#8 P-256 (ES256) private key: {e}"))?;
        Ok(Self { pair, rng })
    }

    /// [`Es256Key::from_pem`], as the signer a login takes.
    pub(crate) fn signer_from_pem(pem: &str) -> Result<Arc<dyn ClientAssertionSigner>, String> {
        // Hidden wherever a server's words go, from whichever source.
        crate::secrets::learn(pem);
        Ok(Arc::new(Self::from_pem(pem)?))
    }

    /// A new key from the system's randomness, and its PKCS#8 DER (for
    /// the credential store: a DPoP key outlives the process that made it
    /// when the tokens bound to it are stored).
    pub(crate) fn generate() -> Result<(Self, Vec<u8>), String> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|e| format!("no P-256 key could be generated: {e}"))?;
        let key = Self::from_pkcs8(pkcs8.as_ref())?;
        Ok((key, pkcs8.as_ref().to_vec()))
    }

    /// A key from its PKCS#8 DER. The error never shows the key.
    pub(crate) fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
            .map_err(|e| format!("not a PKCS#8 P-256 (ES256) private key: {e}"))?;
        Ok(Self { pair, rng })
    }

    /// The uncompressed public point (`04 || x || y`), to verify with.
    pub(crate) fn public_key(&self) -> &[u8] {
        use ring::signature::KeyPair as _;
        self.pair.public_key().as_ref()
    }
}

impl ClientAssertionSigner for Es256Key {
    fn alg(&self) -> &str {
        "ES256"
    }

    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, String> {
        // The FIXED form is JWS's `r || s` (RFC 7518 §3.4), not DER.
        self.pair
            .sign(&self.rng, signing_input)
            .map(|s| s.as_ref().to_vec())
            .map_err(|e| format!("ES256 signing failed: {e}"))
    }
}

impl rho_proto_core::oauth::dpop::DpopSigner for Es256Key {
    fn alg(&self) -> &str {
        "ES256"
    }

    /// The public point as an EC JWK (RFC 7518 §6.2.1): `x` and `y` are
    /// the 32-byte coordinates after the uncompressed point's `04`.
    fn public_jwk(&self) -> serde_json::Value {
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let point = self.public_key();
        let (x, y) = point
            .get(1..)
            .unwrap_or_default()
            .split_at(32.min(point.len().saturating_sub(1)));
        serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        })
    }

    fn sign(&self, signing_input: &[u8]) -> Result<Vec<u8>, String> {
        ClientAssertionSigner::sign(self, signing_input)
    }
}

/// The base64 between `-----BEGIN {label}-----` and its END line,
/// whitespace removed.
fn pem_body(pem: &str, label: &str) -> Option<String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = pem.find(&begin)? + begin.len();
    let stop = start + pem[start..].find(&end)?;
    Some(
        pem[start..stop]
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::generated_pem;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    #[test]
    fn a_pkcs8_pem_key_signs_es256_that_its_public_key_verifies() {
        let key = Es256Key::from_pem(&generated_pem()).expect("a key");
        assert_eq!(key.alg(), "ES256");
        let signature = key.sign(b"header.claims").expect("signed");
        assert_eq!(signature.len(), 64, "r || s, not DER");
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key());
        public
            .verify(b"header.claims", &signature)
            .expect("the signature verifies");
        assert!(public.verify(b"header.other", &signature).is_err());
        assert!(!format!("{key:?}").contains("pair"));
    }

    #[test]
    fn an_assertion_signed_with_the_key_verifies_over_its_first_two_parts() {
        use rho_proto_core::oauth::assertion::{AssertionClaims, client_assertion};
        let key = Es256Key::from_pem(&generated_pem()).expect("a key");
        let claims = AssertionClaims::new("c", "https://as", 1, "j".into());
        let jwt = client_assertion(&key, &claims).expect("signed");
        let (input, signature) = jwt.rsplit_once('.').expect("three parts");
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(signature)
            .expect("base64url");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key())
            .verify(input.as_bytes(), &signature)
            .expect("verifies");
    }

    #[test]
    fn keys_rho_cannot_read_are_refused_with_a_reason() {
        let sec1 = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
        assert!(
            Es256Key::from_pem(sec1)
                .expect_err("sec1")
                .contains("pkcs8")
        );
        assert!(
            Es256Key::from_pem("hello")
                .expect_err("no pem")
                .contains("BEGIN PRIVATE KEY")
        );
        let junk = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert!(
            Es256Key::from_pem(junk)
                .expect_err("junk")
                .contains("P-256")
        );
    }
}
