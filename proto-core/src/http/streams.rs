//! The SSE streams: the server's own stream (the GET after
//! `notifications/initialized`, and what waits for its answer), a stream
//! that broke before its answer came (resumed with `Last-Event-ID` after
//! the server's `retry` or a doubling backoff), and when to give one up.

use super::*;

impl HttpTransport {
    /// When the messages held after `notifications/initialized` go even
    /// if the server stream's GET was not answered: after
    /// `server_stream_wait`, and during startup no later than halfway to
    /// the startup deadline, so discovery keeps most of its budget.
    pub(super) fn stream_wait_until(&self, now: Instant) -> Instant {
        let mut wait = self.options.server_stream_wait;
        if let Some(deadline) = self.session.startup_deadline() {
            wait = wait.min(deadline.saturating_duration_since(now) / 2);
        }
        now + wait
    }

    /// Whether messages wait for the server stream's GET to be answered.
    pub(super) fn stream_waiting(&self) -> bool {
        self.timers.get(Timer::ServerStreamWait).is_some()
    }

    /// The server stream's GET was answered (or failed, or there is none, or
    /// the wait ran out): the held messages go, in order. A request that
    /// ended while held (cancelled, timed out) never reached the server,
    /// so neither it nor the `notifications/cancelled` naming it goes: a
    /// call the host cancelled must not run.
    pub(super) fn end_stream_wait(&mut self) {
        let waited = self.stream_waiting();
        self.timers.stop(Timer::ServerStreamWait);
        if !waited || self.reinitializing {
            return;
        }
        for (body, kind, retried) in std::mem::take(&mut self.parked) {
            if let TransmitKind::Request(request) = kind
                && !self.session.is_pending(request)
            {
                // Its cancellation, held here or still to come, is
                // dropped in `post`.
                self.unsent.insert(request);
                continue;
            }
            self.post(body, kind, retried);
        }
    }

    pub(super) fn open_server_stream(
        &mut self,
        for_request: Option<ClientRequestId>,
        from: ResumePoint,
        attempt: u32,
    ) {
        if for_request.is_none() {
            self.server_stream = ServerStream::Open;
        }
        let headers = self.headers(Method::Get, from.last_event_id.as_deref(), false);
        let exchange = self.new_exchange(Role::Stream {
            for_request,
            attempt,
            from,
        });
        self.outputs.push_back(HttpOutput::Send(HttpRequest {
            exchange,
            method: Method::Get,
            url: self.options.url.clone(),
            headers,
            body: Vec::new(),
        }));
    }

    /// A stream ended or broke. Resume it if its answer is still owed (or
    /// it is the server's own stream), after the server's retry delay.
    /// `earlier` is where the stream's previous connections left off.
    pub(super) fn stream_ended(
        &mut self,
        now: Instant,
        for_request: Option<ClientRequestId>,
        decoder: &SseDecoder,
        earlier: ResumePoint,
        attempt: u32,
        delivered: bool,
    ) {
        if self.closing.is_some() {
            return;
        }
        if let Some(request) = for_request {
            // A request answered on this stream with a question for the
            // host (2026 multi round-trip) or held to go again lost
            // nothing: the stream's end is not its end.
            if !self.session.awaits_answer(request) {
                return;
            }
            if self.session.is_stateless() {
                // The 2026 era has no resumption: the answer is lost, and
                // the session decides whether to ask again.
                self.session.handle_stream_lost(
                    now,
                    request,
                    "the server closed the response stream before answering (the 2026-07-28 protocol does not resume streams)".into(),
                );
                return;
            }
        } else if self.server_stream != ServerStream::Open {
            return;
        }
        let attempt = if delivered { 1 } else { attempt + 1 };
        let from = ResumePoint {
            last_event_id: decoder
                .last_event_id()
                .filter(|id| header_safe(id))
                .map(str::to_owned)
                .or(earlier.last_event_id),
            retry: decoder.retry().or(earlier.retry),
        };
        if let (Some(request), None) = (for_request, &from.last_event_id) {
            self.session.handle_request_failed(
                now,
                request,
                "the server closed the response stream before answering, with no event id to resume from".into(),
            );
            return;
        }
        if attempt > self.options.max_stream_resumes {
            self.give_up_stream(
                now,
                for_request,
                "it kept closing without delivering an event",
            );
            return;
        }
        let delay = self.resume_delay(from.retry, attempt);
        self.resumes.push(Resume {
            at: now + delay,
            for_request,
            from,
            attempt,
        });
    }

    /// A GET was answered with something other than a stream. A retry
    /// resumes from where the stream was (`from`).
    pub(super) fn stream_refused(
        &mut self,
        now: Instant,
        for_request: Option<ClientRequestId>,
        from: ResumePoint,
        attempt: u32,
        status: u16,
        detail: String,
    ) {
        match (for_request, status) {
            (None, 405) => {
                self.server_stream = ServerStream::Unsupported;
                return;
            }
            // Another stream is already open for this session.
            (None, 409) => return,
            _ => {}
        }
        if self.closing.is_some() {
            return;
        }
        // The first GET of the server's own stream follows the handshake at
        // once, so a 404 there means no stream at this URL (a server that
        // routes only POST), not a forgotten session: a fresh session would
        // meet the same answer, forever.
        let first_open = for_request.is_none() && attempt == 0;
        let expired = !first_open
            && self.session_id.is_some()
            && (status == 404
                || (status == 400 && detail.to_ascii_lowercase().contains("session")));
        if expired {
            // The server forgot the session: start a fresh one now rather
            // than wait for the next message to find out.
            self.start_reinitialize(now);
            if let Some(request) = for_request {
                self.session.handle_request_failed(
                    now,
                    request,
                    "the server forgot the session while its answer was streaming".into(),
                );
            }
            return;
        }
        if for_request.is_none() && (400..500).contains(&status) {
            // The server does not offer its own stream here (some answer
            // 400 or 404 rather than 405). Requests still get their answers.
            tracing::debug!(server = %self.session.server(), status, "no server stream offered");
            self.server_stream = ServerStream::Unsupported;
            return;
        }
        let attempt = attempt + 1;
        let why = if status == 0 {
            detail
        } else {
            format!("HTTP {status} {}", excerpt_line(&detail))
        };
        if attempt > self.options.max_stream_resumes {
            self.give_up_stream(now, for_request, &why);
            return;
        }
        self.resumes.push(Resume {
            at: now + self.resume_delay(None, attempt),
            for_request,
            from,
            attempt,
        });
    }

    pub(super) fn give_up_stream(
        &mut self,
        now: Instant,
        for_request: Option<ClientRequestId>,
        why: &str,
    ) {
        let attempts = self.options.max_stream_resumes;
        match for_request {
            Some(request) => self.session.handle_request_failed(
                now,
                request,
                format!("the response stream broke and could not be resumed after {attempts} attempts: {why}"),
            ),
            None => self.session.handle_transport_failed(
                now,
                format!("the server stream broke and could not be resumed after {attempts} attempts: {why}"),
            ),
        }
    }

    /// The delay before resume `attempt` (1-based): the server's `retry`
    /// when it sent one, else a doubling backoff from `default_retry`,
    /// capped at 30 s.
    pub(super) fn resume_delay(&self, retry: Option<u64>, attempt: u32) -> Duration {
        match retry {
            Some(ms) => Duration::from_millis(ms),
            None => {
                let factor = 1u32 << attempt.saturating_sub(1).min(5);
                (self.options.default_retry * factor).min(MAX_BACKOFF)
            }
        }
    }

    pub(super) fn abort_server_streams(&mut self) {
        let ids: Vec<ExchangeId> = self
            .exchanges
            .iter()
            .filter(|(_, x)| {
                matches!(
                    x.role,
                    Role::Stream {
                        for_request: None,
                        ..
                    }
                )
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.exchanges.remove(&id);
            self.outputs.push_back(HttpOutput::Abort(id));
        }
        self.resumes.retain(|r| r.for_request.is_some());
    }
}

/// The request a `notifications/cancelled` names, if `message` is one
/// naming a request of rho's.
pub(super) fn cancelled_request(message: &[u8]) -> Option<ClientRequestId> {
    match Incoming::parse(message) {
        Ok(Incoming::Single(Message::Notification { method, params }))
            if method == "notifications/cancelled" =>
        {
            params?.get("requestId")?.as_u64().map(ClientRequestId)
        }
        _ => None,
    }
}
