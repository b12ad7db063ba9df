//! DPoP at the resource server (RFC 9449 §7, §9): a request that presents
//! an `Authorization: DPoP` token carries a fresh proof, made for it by the
//! host's [`DpopProver`](crate::oauth::dpop::DpopProver) (method, URL
//! without query, the token's hash, the server's latest nonce); a nonce
//! the server supplies in `DPoP-Nonce` is kept for every later proof; and
//! a 401 whose `DPoP` challenge says `use_dpop_nonce` resends its message
//! once with the new nonce, instead of asking the host to re-authorize
//! (the token is fine: only the proof lacked the nonce). A message
//! refused that way twice fails, saying so: a server that never accepts
//! its own nonce would otherwise be asked forever.

use super::*;
use crate::oauth::dpop::{self, ProofRequest};

impl HttpTransport {
    /// Adds the `DPoP` proof header when the request presents a DPoP-bound
    /// token and the host gave a prover. A proof the prover cannot make is
    /// logged and left out: the server's refusal then reports it.
    pub(super) fn add_dpop_proof(&self, method: Method, headers: &mut Vec<(String, String)>) {
        let Some(prover) = &self.options.dpop else {
            return;
        };
        let Some(token) = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .and_then(|(_, v)| dpop::bound_token(v))
        else {
            return;
        };
        let request = ProofRequest {
            method: method.as_str(),
            url: &self.options.url,
            access_token: Some(token),
            nonce: self.dpop_nonce.as_deref(),
        };
        match prover.prove(self.session.server(), &request) {
            Ok(proof) => headers.push(("DPoP".into(), proof)),
            Err(why) => tracing::warn!(
                server = %self.session.server(),
                "no DPoP proof for this request: {why}"
            ),
        }
    }

    /// Keeps the nonce an answer supplies (any answer may carry a new
    /// one), when this session proves possession at all.
    pub(super) fn remember_dpop_nonce(&mut self, headers: &[(String, String)]) {
        if self.options.dpop.is_none() {
            return;
        }
        if let Some(nonce) = dpop::nonce_of(headers) {
            self.dpop_nonce = Some(nonce);
        }
    }

    /// A 401 arrived for `exchange`: when it is a `use_dpop_nonce` refusal
    /// of a POST that carried a proof, the message goes again once with
    /// the nonce just supplied (a second such refusal fails it). Returns
    /// whether it handled the refusal.
    pub(super) fn retried_with_nonce(
        &mut self,
        now: Instant,
        exchange: ExchangeId,
        headers: &[(String, String)],
    ) -> bool {
        // Only a proof can carry a nonce: a session presenting a Bearer
        // token that meets this refusal needs a new (bound) token instead.
        let proves = self.options.headers.iter().any(|(k, v)| {
            k.eq_ignore_ascii_case("authorization") && dpop::bound_token(v).is_some()
        });
        if self.options.dpop.is_none()
            || !proves
            || self.closing.is_some()
            || !dpop::resource_wants_nonce(401, headers)
        {
            return false;
        }
        let Some(Role::Post { nonce_retried, .. }) = self.exchanges.get(&exchange).map(|x| &x.role)
        else {
            return false;
        };
        let spent = *nonce_retried;
        let Some((kind, body, retried)) = self.take_refused_post(exchange) else {
            return false;
        };
        if spent || self.dpop_nonce.is_none() {
            let why = if spent {
                "it refused the nonce it had just supplied"
            } else {
                "it supplied no usable `DPoP-Nonce`"
            };
            self.fail_transmit(
                now,
                kind,
                format!(
                    "the server answered HTTP 401 asking for a DPoP nonce (use_dpop_nonce), and {why}; rho resends a request with a new nonce once"
                ),
            );
            return true;
        }
        tracing::debug!(
            server = %self.session.server(),
            "the server asked for a DPoP nonce; resending with it"
        );
        self.post_with(body, kind, retried, true);
        true
    }
}
