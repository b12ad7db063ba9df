//! DPoP (RFC 9449) on the host's side: the keys tokens are bound to, the
//! clock and randomness of each proof, and the token requests that carry
//! one. What a proof says and when one is needed is the core's
//! (`rho_proto_core::oauth::dpop`); this holds only what the core may not
//! touch.
//!
//! - **Keys.** One P-256 key per server, made with ring when a login first
//!   needs one ([`DpopKeys`]). The private key never leaves the host: a
//!   proof carries only its public JWK. Tokens bound to a key are useless
//!   without it, so when they are stored the key is stored beside them
//!   (`StoredTokens::dpop_key`, base64url PKCS#8) in the owner-only
//!   credential store, and nowhere else: never in config, never logged.
//!   A later rho process reads it back from there to use and refresh
//!   those tokens.
//! - **Proofs.** Issued at the wall clock, with a `jti` from the operating
//!   system's randomness ([`proof_now`]), fresh for every request.
//! - **Token requests.** [`send_token_request`] sends one with its proof
//!   and, when the authorization server answers `use_dpop_nonce`, once
//!   more with the nonce it supplied (a second refusal is the answer).
//!   Nonces are remembered per authorization server origin for the rest
//!   of the process, so later token requests (a refresh) start with the
//!   latest one. The resource server's nonce is the HTTP transport's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rho_proto_core::http::Method;
use rho_proto_core::oauth::dpop::{self, DpopSigner, ProofClaims, ProofRequest};
use url::Url;

use crate::jwt_key::Es256Key;
use crate::oauth_http::{Answer, LoginHttp, exchange};

/// The DPoP keys of a run, by server. `Debug` names the servers only.
#[derive(Default)]
pub(crate) struct DpopKeys {
    held: Mutex<BTreeMap<String, HeldKey>>,
}

struct HeldKey {
    key: Arc<Es256Key>,
    /// The key as the store keeps it.
    stored: String,
}

impl std::fmt::Debug for DpopKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        f.debug_struct("DpopKeys")
            .field("servers", &held.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl DpopKeys {
    /// The key a login of `server` binds its tokens to, and its stored
    /// form: the one stored with the server's tokens (`stored`, so a
    /// refresh of a bound token proves the key it is bound to), else the
    /// one this run holds, else a new one.
    pub(crate) fn key_for(
        &self,
        server: &str,
        stored: Option<&str>,
    ) -> Result<(Arc<Es256Key>, String), String> {
        if let Some(stored) = stored {
            return self.adopt(server, stored);
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.get(server) {
            return Ok((Arc::clone(&h.key), h.stored.clone()));
        }
        let (key, der) = Es256Key::generate()?;
        let key = Arc::new(key);
        let stored = URL_SAFE_NO_PAD.encode(der);
        crate::secrets::learn(&stored);
        held.insert(
            server.to_owned(),
            HeldKey {
                key: Arc::clone(&key),
                stored: stored.clone(),
            },
        );
        Ok((key, stored))
    }

    /// Holds the key stored with `server`'s tokens (base64url PKCS#8) and
    /// returns it: what a stored DPoP-bound token is proved with.
    pub(crate) fn adopt(
        &self,
        server: &str,
        stored: &str,
    ) -> Result<(Arc<Es256Key>, String), String> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = held.get(server).filter(|h| h.stored == stored) {
            return Ok((Arc::clone(&h.key), h.stored.clone()));
        }
        crate::secrets::learn(stored);
        let key = Arc::new(decode_key(stored)?);
        held.insert(
            server.to_owned(),
            HeldKey {
                key: Arc::clone(&key),
                stored: stored.to_owned(),
            },
        );
        Ok((key, stored.to_owned()))
    }

    /// The key this run holds for `server`, if any.
    pub(crate) fn held(&self, server: &str) -> Option<Arc<Es256Key>> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get(server).map(|h| Arc::clone(&h.key))
    }
}

/// The key a store entry keeps (base64url PKCS#8). The error says what is
/// wrong with the entry, never what the key is.
pub(crate) fn decode_key(stored: &str) -> Result<Es256Key, String> {
    let der = URL_SAFE_NO_PAD
        .decode(stored)
        .map_err(|_| "the stored DPoP key is not base64url".to_owned())?;
    Es256Key::from_pkcs8(&der).map_err(|e| format!("the stored DPoP key is unusable: {e}"))
}

/// A fresh proof for `request`, issued now, with a random `jti`.
pub(crate) fn proof_now(
    signer: &dyn DpopSigner,
    request: &ProofRequest<'_>,
) -> Result<String, String> {
    let claims = ProofClaims::new(request, crate::credentials::now_unix(), random_jti()?);
    dpop::proof(signer, &claims).map_err(|e| e.to_string())
}

/// A `jti` from 32 bytes of the operating system's randomness.
pub(crate) fn random_jti() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    rho_os::random::fill_all(&mut bytes)
        .map_err(|e| format!("no randomness from the operating system: {e}"))?;
    Ok(dpop::jti_from_random(&bytes))
}

/// The most authorization servers whose nonce a process keeps; past it
/// the oldest-sorted entry goes (a nonce is only an optimisation: a
/// forgotten one costs one `use_dpop_nonce` round trip).
const MAX_NONCES: usize = 64;

/// The latest nonce each authorization server (by origin) supplied.
static AS_NONCES: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());

fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The latest nonce the authorization server at `url` supplied.
pub(crate) fn as_nonce(url: &Url) -> Option<String> {
    let nonces = AS_NONCES.lock().unwrap_or_else(|e| e.into_inner());
    nonces.get(&origin(url)).cloned()
}

/// Keeps the nonce an answer from `url` supplies, if it carries one.
pub(crate) fn remember_as_nonce(url: &Url, headers: &[(String, String)]) {
    let Some(nonce) = dpop::nonce_of(headers) else {
        return;
    };
    let mut nonces = AS_NONCES.lock().unwrap_or_else(|e| e.into_inner());
    if nonces.len() >= MAX_NONCES && !nonces.contains_key(&origin(url)) {
        nonces.pop_first();
    }
    nonces.insert(origin(url), nonce);
}

/// Makes the proof of one token request, given the nonce to put in it:
/// `None` when the request carries none, `Err` when it cannot be made.
pub(crate) type MakeProof<'a> = dyn FnMut(Option<&str>) -> Option<Result<String, String>> + 'a;

/// Sends a token request (a POST of `body` with `headers` to `url`). When
/// `prove` makes a proof (given the nonce to put in it) it goes in the
/// `DPoP` header; a `use_dpop_nonce` answer that supplies a nonce is
/// resent once with a new proof carrying it. `prove` returning `None`
/// sends the request as it is; its error is the request's.
pub(crate) fn send_token_request(
    http: &LoginHttp,
    url: &Url,
    headers: &[(String, String)],
    body: &[u8],
    prove: &mut MakeProof<'_>,
) -> Result<Answer, String> {
    let mut retried = false;
    loop {
        let mut all = headers.to_vec();
        let proved = match prove(as_nonce(url).as_deref()) {
            Some(proof) => {
                all.push(("DPoP".to_owned(), proof?));
                true
            }
            None => false,
        };
        let answer = exchange(http, Method::Post, url, all, body.to_vec())?;
        remember_as_nonce(url, &answer.headers);
        let again = proved
            && !retried
            && dpop::token_endpoint_wants_nonce(answer.status, &answer.body)
            && dpop::nonce_of(&answer.headers).is_some();
        if !again {
            return Ok(answer);
        }
        tracing::debug!(%url, "the authorization server asked for a DPoP nonce; resending with it");
        retried = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn b64(part: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(part).expect("base64url")
    }

    #[test]
    fn a_proof_verifies_with_the_public_jwk_in_its_own_header_which_has_no_private_part() {
        let keys = DpopKeys::default();
        let (key, _) = keys.key_for("s", None).expect("a key");
        let url = Url::parse("https://mcp.example.com/mcp?x=1").expect("url");
        let proof = proof_now(
            key.as_ref(),
            &ProofRequest {
                method: "POST",
                url: &url,
                access_token: Some("at"),
                nonce: None,
            },
        )
        .expect("a proof");
        let parts: Vec<&str> = proof.split('.').collect();
        let header: serde_json::Value = serde_json::from_slice(&b64(parts[0])).expect("json");
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        let jwk = &header["jwk"];
        assert_eq!(jwk["kty"], "EC");
        assert!(jwk.get("d").is_none(), "{jwk}");
        let mut point = vec![4u8];
        point.extend(b64(jwk["x"].as_str().expect("x")));
        point.extend(b64(jwk["y"].as_str().expect("y")));
        let signed = format!("{}.{}", parts[0], parts[1]);
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(signed.as_bytes(), &b64(parts[2]))
            .expect("the signature verifies with the header's JWK");
        let claims: serde_json::Value = serde_json::from_slice(&b64(parts[1])).expect("json");
        assert_eq!(claims["htu"], "https://mcp.example.com/mcp");
        let now = crate::credentials::now_unix();
        assert!(
            claims["iat"]
                .as_u64()
                .is_some_and(|iat| iat.abs_diff(now) < 5)
        );
    }

    #[test]
    fn each_proof_has_its_own_jti() {
        let keys = DpopKeys::default();
        let (key, _) = keys.key_for("s", None).expect("a key");
        let url = Url::parse("https://as.example.com/token").expect("url");
        let request = ProofRequest {
            method: "POST",
            url: &url,
            access_token: None,
            nonce: None,
        };
        let jti = |p: String| {
            let claims: serde_json::Value =
                serde_json::from_slice(&b64(p.split('.').nth(1).expect("claims"))).expect("json");
            claims["jti"].as_str().expect("jti").to_owned()
        };
        let a = jti(proof_now(key.as_ref(), &request).expect("a"));
        let b = jti(proof_now(key.as_ref(), &request).expect("b"));
        assert_ne!(a, b);
    }

    #[test]
    fn a_stored_key_is_reused_and_a_run_keeps_one_key_per_server() {
        let keys = DpopKeys::default();
        let (a, stored) = keys.key_for("s", None).expect("a key");
        let (again, _) = keys.key_for("s", None).expect("the same key");
        assert_eq!(a.public_key(), again.public_key());
        let (other, _) = keys.key_for("t", None).expect("another key");
        assert_ne!(a.public_key(), other.public_key());
        // Another process reads the stored form back to the same key.
        let later = DpopKeys::default();
        let (read, _) = later.key_for("s", Some(&stored)).expect("the stored key");
        assert_eq!(read.public_key(), a.public_key());
        assert!(later.held("s").is_some());
        let err = later.adopt("u", "not a key!").expect_err("refused");
        assert!(err.contains("not base64url"), "{err}");
        let err = later
            .adopt("u", &URL_SAFE_NO_PAD.encode(b"junk"))
            .expect_err("refused");
        assert!(err.contains("unusable"), "{err}");
        assert!(!format!("{later:?}").contains(&stored));
    }

    /// A token endpoint that answers every request 400 `use_dpop_nonce`
    /// with a new nonce; returns its URL and how many requests it got.
    fn never_satisfied() -> (Url, Arc<Mutex<usize>>) {
        use crate::test_support::{TokenAnswer, token_endpoint};
        let count = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&count);
        let url = token_endpoint(move |_| {
            let n = {
                let mut c = seen.lock().expect("lock");
                *c += 1;
                *c
            };
            TokenAnswer::bad_request(r#"{"error":"use_dpop_nonce"}"#)
                .with_header("DPoP-Nonce", &format!("n{n}"))
        });
        (Url::parse(&url).expect("url"), count)
    }

    #[test]
    fn a_token_request_is_resent_once_for_a_nonce_and_a_second_refusal_is_the_answer() {
        let (url, count) = never_satisfied();
        let keys = DpopKeys::default();
        let (key, _) = keys.key_for("s", None).expect("a key");
        let http = LoginHttp::for_runtime(crate::RuntimeKind::default());
        let mut nonces = Vec::new();
        let answer = send_token_request(&http, &url, &[], b"grant_type=x", &mut |nonce| {
            nonces.push(nonce.map(str::to_owned));
            Some(proof_now(
                key.as_ref(),
                &ProofRequest {
                    method: "POST",
                    url: &url,
                    access_token: None,
                    nonce,
                },
            ))
        })
        .expect("an answer");
        assert_eq!(answer.status, 400);
        assert_eq!(*count.lock().expect("lock"), 2, "bounded: one resend");
        assert_eq!(nonces, [None, Some("n1".to_owned())]);
        // Without a proof a use_dpop_nonce answer is not resent.
        let (url, count) = never_satisfied();
        let answer =
            send_token_request(&http, &url, &[], b"grant_type=x", &mut |_| None).expect("answer");
        assert_eq!(answer.status, 400);
        assert_eq!(*count.lock().expect("lock"), 1);
    }

    #[test]
    fn a_nonce_is_remembered_per_authorization_server_origin() {
        let a = Url::parse("https://as-a.test.invalid/token").expect("url");
        let a2 = Url::parse("https://as-a.test.invalid/other").expect("url");
        let b = Url::parse("https://as-b.test.invalid/token").expect("url");
        remember_as_nonce(&a, &[("DPoP-Nonce".into(), "n1".into())]);
        assert_eq!(as_nonce(&a2).as_deref(), Some("n1"));
        assert_eq!(as_nonce(&b), None);
        // A malformed one leaves the last good one.
        remember_as_nonce(&a, &[("DPoP-Nonce".into(), "bad nonce".into())]);
        assert_eq!(as_nonce(&a).as_deref(), Some("n1"));
    }
}
