//! DPoP at the resource server over Streamable HTTP (RFC 9449 §7, §9),
//! driven by a scripted server and a recording prover: a request that
//! presents an `Authorization: DPoP` token carries a fresh proof for its
//! method and URL with the server's latest nonce; a 401 `use_dpop_nonce`
//! resends the message once with the nonce it supplied (no
//! re-authorization), and a second one fails it; Bearer tokens get no
//! proof.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rho_proto_core::http::{HttpOptions, HttpRequest};
use rho_proto_core::oauth::dpop::{DpopProver, ProofRequest};
use rho_proto_core::session::{CallId, Event, Question};
use serde_json::json;
use url::Url;

const URL: &str = "https://mcp.example.com/mcp?tenant=a";
const TOKEN: &str = "at-bound-5d1e";
const JSON: (&str, &str) = ("content-type", "application/json");

/// What the prover was asked, one entry per proof.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Asked {
    server: String,
    method: String,
    url: String,
    token: Option<String>,
    nonce: Option<String>,
}

/// A prover that records each request and numbers its proofs.
#[derive(Debug, Default)]
struct Recording {
    asked: Mutex<Vec<Asked>>,
}

impl Recording {
    /// The nonce the last proof was asked to carry.
    fn last_nonce(&self) -> Option<String> {
        self.asked
            .lock()
            .expect("lock")
            .last()
            .and_then(|a| a.nonce.clone())
    }
}

impl DpopProver for Recording {
    fn prove(&self, server: &str, request: &ProofRequest<'_>) -> Result<String, String> {
        let mut asked = self.asked.lock().expect("lock");
        asked.push(Asked {
            server: server.to_owned(),
            method: request.method.to_owned(),
            url: request.url.to_string(),
            token: request.access_token.map(str::to_owned),
            nonce: request.nonce.map(str::to_owned),
        });
        Ok(format!("proof-{}", asked.len()))
    }
}

fn options(authorization: &str, prover: &Arc<Recording>) -> HttpOptions {
    let mut o = HttpOptions::new(
        Url::parse(URL).expect("url"),
        vec![
            ("Authorization".into(), authorization.into()),
            // A proof is per request: a configured one is never sent.
            ("DPoP".into(), "stale-configured-proof".into()),
        ],
    );
    o.ping_interval = Duration::from_secs(3600);
    o.oauth = true;
    o.reauthorize = true;
    o.dpop = Some(Arc::clone(prover) as Arc<dyn DpopProver>);
    o
}

fn proofs(req: &HttpRequest) -> Vec<&str> {
    req.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("dpop"))
        .map(|(_, v)| v.as_str())
        .collect()
}

mod common;
use common::{Http as Harness, http_session_options, rpc};

impl Harness {
    /// A session presenting `authorization`, ready, and the prover that
    /// makes its proofs.
    fn ready(authorization: &str) -> (Self, Arc<Recording>) {
        let prover = Arc::new(Recording::default());
        let mut h = Self::connect(http_session_options(), options(authorization, &prover));
        h.ready_without_stream();
        (h, prover)
    }

    fn ask_for_nonce(&mut self, req: &HttpRequest, nonce: &str) {
        self.respond(
            req,
            401,
            &[
                JSON,
                (
                    "WWW-Authenticate",
                    r#"DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof""#,
                ),
                ("DPoP-Nonce", nonce),
            ],
            br#"{"error":"use_dpop_nonce"}"#,
        );
    }

    fn authorization_questions(&self) -> usize {
        self.events
            .iter()
            .filter(|e| {
                matches!(
                    e,
                    Event::Question {
                        kind: Question::Authorization { .. },
                        ..
                    }
                )
            })
            .count()
    }

    fn succeeded(&self, call: CallId) -> bool {
        matches!(self.completion(call), Some(Ok(_)))
    }
}

#[test]
fn every_request_presenting_a_dpop_token_carries_one_fresh_proof_for_its_method_and_url() {
    let (h, prover) = Harness::ready(&format!("DPoP {TOKEN}"));
    let sends = h.sends();
    assert!(sends.len() >= 4, "{sends:?}");
    let mut seen = Vec::new();
    for req in &sends {
        let p = proofs(req);
        assert_eq!(p.len(), 1, "one proof, never the configured one: {req:?}");
        assert!(!seen.contains(&p[0]), "a proof is never reused");
        seen.push(p[0]);
    }
    let asked = prover.asked.lock().expect("lock").clone();
    assert_eq!(asked.len(), sends.len());
    for (a, req) in asked.iter().zip(&sends) {
        assert_eq!(a.server, "remote");
        assert_eq!(a.method, req.method.as_str());
        assert_eq!(
            a.url, URL,
            "the transport hands the URL; htu drops the query"
        );
        assert_eq!(a.token.as_deref(), Some(TOKEN));
        assert_eq!(a.nonce, None, "no nonce until the server supplies one");
    }
    assert!(
        asked.iter().any(|a| a.method == "GET"),
        "the GET is proved too"
    );
}

#[test]
fn a_use_dpop_nonce_refusal_is_resent_once_with_the_nonce_which_later_requests_keep() {
    let (mut h, prover) = Harness::ready(&format!("DPoP {TOKEN}"));
    let call = h.call_echo();
    let refused = h.last_post("tools/call");
    h.ask_for_nonce(&refused, "rs-nonce-1");
    assert_eq!(
        h.authorization_questions(),
        0,
        "the token is fine: no login"
    );
    let resent = h.posts("tools/call");
    assert_eq!(resent.len(), 2, "resent once");
    assert_eq!(rpc(&resent[1])["id"], rpc(&refused)["id"]);
    assert_eq!(prover.last_nonce(), Some("rs-nonce-1".into()));
    h.answer_json(
        &resent[1],
        json!({"content": [{"type": "text", "text": "ok"}]}),
    );
    assert!(h.succeeded(call), "{:?}", h.events);
    // The nonce stays for the next request, which needs no second round.
    let next = h.call_echo();
    let req = h.last_post("tools/call");
    assert_eq!(prover.last_nonce(), Some("rs-nonce-1".into()));
    // A newer nonce on any answer replaces it.
    h.answer_json_with(
        &req,
        json!({"content": [{"type": "text", "text": "ok"}]}),
        &[("DPoP-Nonce", "rs-nonce-2")],
    );
    assert!(h.succeeded(next));
    h.call_echo();
    assert_eq!(prover.last_nonce(), Some("rs-nonce-2".into()));
}

#[test]
fn a_second_use_dpop_nonce_refusal_fails_the_request_without_a_login() {
    let (mut h, _) = Harness::ready(&format!("DPoP {TOKEN}"));
    let call = h.call_echo();
    let refused = h.last_post("tools/call");
    h.ask_for_nonce(&refused, "n1");
    let resent = h.last_post("tools/call");
    h.ask_for_nonce(&resent, "n2");
    assert_eq!(h.posts("tools/call").len(), 2, "no third try");
    assert_eq!(h.authorization_questions(), 0);
    let why = h.transport_error(call);
    assert!(why.contains("use_dpop_nonce"), "{why}");
    assert!(
        why.contains("refused the nonce it had just supplied"),
        "{why}"
    );
}

#[test]
fn a_use_dpop_nonce_refusal_without_a_usable_nonce_fails_at_once() {
    let (mut h, _) = Harness::ready(&format!("DPoP {TOKEN}"));
    let call = h.call_echo();
    let refused = h.last_post("tools/call");
    h.ask_for_nonce(&refused, "two words\r\nX-Injected: 1");
    assert_eq!(h.posts("tools/call").len(), 1, "nothing to resend with");
    assert_eq!(h.authorization_questions(), 0);
    let why = h.transport_error(call);
    assert!(why.contains("no usable `DPoP-Nonce`"), "{why}");
}

#[test]
fn any_other_401_still_asks_the_host_to_re_authorize() {
    let (mut h, _) = Harness::ready(&format!("DPoP {TOKEN}"));
    h.call_echo();
    let refused = h.last_post("tools/call");
    h.respond(
        &refused,
        401,
        &[JSON, ("WWW-Authenticate", r#"DPoP error="invalid_token""#)],
        br#"{"error":"invalid_token"}"#,
    );
    assert_eq!(h.authorization_questions(), 1);
}

#[test]
fn a_bearer_token_carries_no_proof() {
    let (h, prover) = Harness::ready("Bearer at-plain");
    for req in h.sends() {
        assert!(proofs(req).is_empty(), "{req:?}");
    }
    assert!(prover.asked.lock().expect("lock").is_empty());
}

#[test]
fn a_bearer_session_refused_use_dpop_nonce_re_authorizes_instead_of_resending() {
    let (mut h, _) = Harness::ready("Bearer at-plain");
    h.call_echo();
    let refused = h.last_post("tools/call");
    h.ask_for_nonce(&refused, "n1");
    assert_eq!(h.posts("tools/call").len(), 1, "no resend: it had no proof");
    assert_eq!(h.authorization_questions(), 1);
}
