//! What an HTTP error answer means: a refused credential (401, or 403
//! with `insufficient_scope`: the host is asked to re-authorize, once per
//! cause), a session the server forgot (404, or 400 naming it: a fresh
//! `initialize`), and anything else, which fails the message with its
//! status and an excerpt of the body.

use super::*;
use crate::remedy::Remedy;

impl HttpTransport {
    /// An error status on a POST.
    pub(super) fn http_error(&mut self, now: Instant, role: Role, status: u16, body: &[u8]) {
        let Role::Post {
            kind,
            body: message,
            retried,
            with_session,
            epoch,
            ..
        } = role
        else {
            return;
        };
        let text = String::from_utf8_lossy(body);
        let expired = with_session
            && (status == 404 || (status == 400 && text.to_ascii_lowercase().contains("session")));
        if expired {
            if retried {
                self.fail_transmit(
                    now,
                    kind,
                    "the server expired the session again right after a fresh initialize".into(),
                );
                return;
            }
            // Only the current session's expiry starts a fresh one; a
            // message sent under an earlier session just goes again.
            if epoch == self.session_epoch && !self.reinitializing && !self.start_reinitialize(now)
            {
                let reason = if self.session.state() == SessionState::Starting {
                    format!(
                        "the server forgot the session again during startup (HTTP {status}), after rho had already initialized a fresh one; rho starts at most one fresh session while starting, check the server's session handling"
                    )
                } else {
                    format!("the server no longer knows this session (HTTP {status})")
                };
                self.fail_transmit(now, kind, reason);
                return;
            }
            if kind == TransmitKind::Initialized {
                // The fresh session sends its own.
                return;
            }
            if self.reinitializing || self.stream_waiting() {
                self.parked.push((message, kind, true));
            } else {
                self.post(message, kind, true);
            }
            return;
        }
        // A JSON-RPC error body answers the POST's own request, whatever
        // id it carries: servers refuse a request they have not read with
        // an id of their own (the Python SDK 1.x writes `"server-error"`)
        // or `null`, and the exchange knows which request it was. A refused
        // credential is not such an answer: it is handled below.
        if let Ok(Incoming::Single(Message::Error { id, error })) = Incoming::parse(body) {
            let own = id.as_ref().and_then(ClientRequestId::from_wire);
            match request_of(kind) {
                Some(request) if own == Some(request) => {
                    return self.session.handle_message_bytes(now, body);
                }
                Some(request) if !matches!(status, 401 | 403) => {
                    return self.session.handle_error_answer(now, request, error);
                }
                None if id.is_some() => return self.session.handle_message_bytes(now, body),
                _ => {}
            }
        }
        let probe = request_of(kind).filter(|r| self.session.probe_request() == Some(*r));
        let hint = match status {
            401 | 403 if self.options.oauth && self.unattended() => format!(
                "; the server requires authorization and rho has no token from its `oauth` grant: check the `[mcp.servers.{}.oauth]` table (the grant needs no person, so a login does not help)",
                self.session.server()
            ),
            401 | 403 if self.options.oauth => format!(
                "; the server requires authorization: {}",
                Remedy::LogIn {
                    server: self.session.server()
                }
            ),
            401 | 403 => format!(
                "; the server requires authorization: {}",
                Remedy::OptInToOAuth {
                    server: self.session.server()
                }
            ),
            406 => "; the server refused the Accept header".into(),
            _ => String::new(),
        };
        let detail = excerpt_line(&excerpt(body));
        let reason = if detail.is_empty() {
            format!("the server answered HTTP {status}{hint}")
        } else {
            format!("the server answered HTTP {status}: {detail}{hint}")
        };
        if probe.is_some() && matches!(status, 401 | 403) {
            // Refused for its credentials, not for its era: falling back
            // would only meet the same refusal.
            self.session.handle_transport_failed(now, reason);
            return;
        }
        self.fail_transmit(now, kind, reason);
    }

    /// A 401 or 403 arrived for `exchange`. When it refuses a request's
    /// credentials and the request may still re-authorize (see the module
    /// docs), the exchange is dropped, the request waits, and the host is
    /// asked (once for all that wait); returns whether it did.
    pub(super) fn refused_credentials(
        &mut self,
        now: Instant,
        exchange: ExchangeId,
        status: u16,
        headers: &[(String, String)],
    ) -> bool {
        if !(self.options.oauth && self.options.reauthorize) || self.closing.is_some() {
            return false;
        }
        // `initialize` too: a stored token refused at connect (revoked,
        // expired early, minted by an issuer the server left) takes the
        // same path as one refused later.
        let Some(Role::Post {
            kind: TransmitKind::Request(request) | TransmitKind::Initialize(request),
            ..
        }) = self.exchanges.get(&exchange).map(|x| &x.role)
        else {
            return false;
        };
        let request = *request;
        let challenge = bearer_challenge(
            headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("www-authenticate"))
                .map(|(_, v)| v.as_str()),
        );
        let reason = match (status, &challenge) {
            (401, _) => AuthorizationReason::Unauthorized,
            (403, Some(c)) if c.insufficient_scope() => AuthorizationReason::InsufficientScope,
            _ => return false,
        };
        let tries = self.auth_tries.entry(request).or_default();
        let spent = match reason {
            AuthorizationReason::Unauthorized => std::mem::replace(&mut tries.renewed, true),
            AuthorizationReason::InsufficientScope => {
                std::mem::replace(&mut tries.stepped_up, true)
            }
        };
        if spent {
            // Once per cause: a server that refuses again fails the
            // request rather than loop through logins.
            let scope = wanted_scope(challenge.as_ref());
            let what = match reason {
                AuthorizationReason::Unauthorized => "refused the new token too",
                AuthorizationReason::InsufficientScope => {
                    "still finds the scope insufficient after a new login"
                }
            };
            self.outputs.push_back(HttpOutput::Abort(exchange));
            if let Some(x) = self.exchanges.remove(&exchange)
                && let Role::Post { kind, .. } = x.role
            {
                let next = if self.unattended() {
                    format!(
                        "check the server's scopes and the `[mcp.servers.{}.oauth]` table (the grant needs no person, so a login does not help)",
                        self.session.server()
                    )
                } else {
                    format!(
                        "check the server's scopes or {}",
                        Remedy::LogIn {
                            server: self.session.server()
                        }
                    )
                };
                self.fail_transmit(
                        now,
                        kind,
                        format!(
                            "the server answered HTTP {status}: it {what}{scope}; rho re-authorizes a request once, so {next}"
                        ),
                    );
            }
            return true;
        }
        let Some((kind, body, retried)) = self.take_refused_post(exchange) else {
            return false;
        };
        let parked = AuthParked {
            body,
            kind,
            retried,
            refusal: Some((status, reason)),
        };
        if let Some(waiting) = &mut self.reauthorizing {
            // Refused under the old token while the host is already asked:
            // it goes with the answer.
            waiting.parked.push(parked);
            return true;
        }
        let challenge = challenge.unwrap_or_default();
        tracing::info!(
            server = %self.session.server(),
            status,
            "the server refused the request's authorization; asking the host for a new one"
        );
        let question = self.session.new_question_id();
        self.reauthorizing = Some(Reauthorizing {
            question,
            scope: challenge.scope.clone(),
            parked: vec![parked],
        });
        self.events.push_back(Event::Question {
            question,
            call: CallId(request.0),
            kind: Question::Authorization { reason, challenge },
        });
        true
    }

    /// Takes a refused request out of flight, to be sent again or failed:
    /// the exchange is forgotten, and when it was a POST it is aborted and
    /// its kind, body and whether it was already resent after a session
    /// expiry come back.
    pub(super) fn take_refused_post(
        &mut self,
        exchange: ExchangeId,
    ) -> Option<(TransmitKind, Vec<u8>, bool)> {
        let Role::Post {
            kind,
            body,
            retried,
            ..
        } = self.exchanges.remove(&exchange)?.role
        else {
            return None;
        };
        self.outputs.push_back(HttpOutput::Abort(exchange));
        Some((kind, body, retried))
    }

    /// Starts a fresh `initialize` after the server forgot the session.
    /// Returns `false` when the session cannot (it is not ready).
    pub(super) fn start_reinitialize(&mut self, now: Instant) -> bool {
        if self.reinitializing {
            return true;
        }
        if !self.session.handle_session_expired(now) {
            return false;
        }
        tracing::info!(server = %self.session.server(), "session expired; initializing again");
        self.session_epoch += 1;
        self.reinitializing = true;
        // Held messages now wait for the fresh session instead.
        self.timers.stop(Timer::ServerStreamWait);
        self.session_id = None;
        self.server_stream = ServerStream::NotOpened;
        self.abort_server_streams();
        true
    }
}
