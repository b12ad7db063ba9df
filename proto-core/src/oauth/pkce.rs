//! PKCE (RFC 7636) with S256, and the `state` value, from random bytes the
//! adapter passes in: the core never draws randomness itself, so a flow is
//! as replayable as the rest of a session.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::Digest as _;

/// How many random bytes a [`Pkce`] takes: 32 for the verifier (43
/// characters, RFC 7636's recommended minimum entropy) and 16 for `state`.
pub const RANDOM_BYTES: usize = 48;

/// One login attempt's PKCE pair and CSRF state.
#[derive(Clone, PartialEq, Eq)]
pub struct Pkce {
    /// `code_verifier`: sent only to the token endpoint.
    pub verifier: String,
    /// `code_challenge`: BASE64URL(SHA256(verifier)), sent to authorize.
    pub challenge: String,
    /// `state`: the callback must echo it exactly.
    pub state: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The verifier redeems the code: never in a log.
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

impl Pkce {
    /// Derives the pair and the state from `random` (fresh bytes from the
    /// operating system's generator, drawn by the adapter).
    pub fn from_random(random: &[u8; RANDOM_BYTES]) -> Self {
        let verifier = URL_SAFE_NO_PAD.encode(&random[..32]);
        let challenge = s256(&verifier);
        let state = URL_SAFE_NO_PAD.encode(&random[32..]);
        Self {
            verifier,
            challenge,
            state,
        }
    }
}

/// The S256 code challenge of `verifier`.
pub fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_7636_appendix_b_example() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifier_and_state_come_from_the_given_bytes() {
        let mut random = [0u8; RANDOM_BYTES];
        for (i, b) in random.iter_mut().enumerate() {
            *b = u8::try_from(i).unwrap_or(0);
        }
        let a = Pkce::from_random(&random);
        assert_eq!(a.verifier.len(), 43);
        assert!(
            a.verifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        assert_eq!(a.challenge, s256(&a.verifier));
        assert_eq!(a.state.len(), 22);
        assert_eq!(Pkce::from_random(&random), a, "deterministic");
        random[40] ^= 1;
        let b = Pkce::from_random(&random);
        assert_eq!(b.verifier, a.verifier);
        assert_ne!(b.state, a.state);
        assert!(!format!("{a:?}").contains(&a.verifier));
    }
}
