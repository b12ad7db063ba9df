//! What a server says beside its answers, and how a session ends: a
//! result checked against its tool's `outputSchema`, progress, the
//! server's log messages (rate-limited), lines that are not JSON-RPC,
//! frame errors and other peer errors, and the final close.

use super::*;

impl Session {
    /// Holds a result to the tool's declared outputSchema, if it declared
    /// one: a result without valid `structuredContent` fails the call
    /// rather than pass a half-answer to the model.
    pub(super) fn check_output(
        &mut self,
        called: Option<&CalledTool>,
        result: &CallToolResult,
    ) -> Result<(), OutputError> {
        let Some(tool) = called.and_then(|called| {
            let tools = &self.ready.as_ref()?.tools;
            match called {
                CalledTool::Listed(at) => tools.get(*at),
                CalledTool::Named(name) => tools.iter().find(|t| &t.name == name),
            }
        }) else {
            return Ok(());
        };
        if tool.output_schema.is_none() || result.is_error {
            return Ok(());
        }
        if !self.output_schemas.contains_key(&tool.name)
            && let Some(schema) = &tool.output_schema
        {
            let compiled = OutputSchema::compile(&tool.name, schema)?;
            self.output_schemas.insert(tool.name.clone(), compiled);
        }
        check_output(tool, self.output_schemas.get(&tool.name), result)
    }

    /// What call `call` ends with, given the server's answer as read:
    /// the result held to its tool's outputSchema, or the malformed
    /// result or the server's error, named as such. The tool's record
    /// leaves with it.
    pub(super) fn call_outcome(
        &mut self,
        call: CallId,
        reply: Result<Result<CallToolResult, ShapeError>, ErrorObject>,
    ) -> Result<CallToolResult, CallError> {
        let tool = self.call_tools.remove(&call.0);
        // The server's name is copied only into an error.
        match reply {
            Ok(Ok(result)) => match self.check_output(tool.as_ref(), &result) {
                Ok(()) => Ok(result),
                Err(error) => Err(CallError::OutputSchema {
                    server: self.options.server.clone(),
                    error,
                }),
            },
            Ok(Err(error)) => Err(CallError::Malformed {
                server: self.options.server.clone(),
                error,
            }),
            Err(error) => Err(self.rpc_error(error)),
        }
    }

    /// Attaches a `notifications/progress` to the call whose token it
    /// names; progress for anything else is dropped and logged. Only a
    /// tool call carries a token: a prompt, resource or completion request
    /// under the same number is not what the token names.
    pub(super) fn progress(&mut self, now: Instant, params: Option<&Value>) {
        let Some(params) = params else { return };
        let token = params.get("progressToken");
        // The token is the call's id, kept when its request goes again.
        let call = token.and_then(Value::as_u64).map(CallId);
        let request = call.and_then(|call| self.request_of(call)).filter(|r| {
            self.pending
                .get(r)
                .is_some_and(|p| matches!(p.purpose, Purpose::CallTool(_)))
        });
        let (Some(call), Some(request), Some(progress)) = (
            call,
            request,
            params.get("progress").and_then(Value::as_f64),
        ) else {
            tracing::debug!(server = %self.options.server, ?token, "progress for no call in flight; dropped");
            return;
        };
        // A call that reports progress is alive: its idle budget starts
        // again, but never past the hard cap from when it was sent.
        self.extend_budget(now, request);
        self.events.push_back(Event::Progress {
            call,
            progress: Progress {
                progress,
                total: params.get("total").and_then(Value::as_f64),
                message: params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            },
        });
    }

    /// Routes a server's `notifications/message` into tracing under the
    /// `rho::mcp::server` target, and to the host as [`Event::Log`].
    /// Severities above error map onto error in tracing; the event's
    /// `level` field keeps the server's own (`notice`, `critical`, ...),
    /// which also tells a server's message from rho's own lines under
    /// that target.
    /// A flood is rate-limited: past the first few of a window, messages
    /// are only counted, and the count is logged once.
    pub(super) fn server_log(&mut self, now: Instant, params: Option<&Value>) {
        let Some(params) = params else { return };
        let (verdict, hidden) = self.server_logs.admit(now);
        if let Some(n) = hidden {
            self.log_hidden_server_logs(n);
        }
        if verdict == Verdict::Count {
            return;
        }
        let level = params
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("info");
        let logger = params.get("logger").and_then(Value::as_str).unwrap_or("");
        let data = match params.get("data") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let redactor = &self.options.redactor;
        let logger = redactor.redact(logger);
        let data = redactor.redact(&data);
        {
            let logger = logger.as_ref();
            let server = self.options.server.as_str();
            match level {
                "debug" => {
                    tracing::debug!(target: "rho::mcp::server", server, logger, level, "{data}")
                }
                "info" | "notice" => {
                    tracing::info!(target: "rho::mcp::server", server, logger, level, "{data}")
                }
                "warning" => {
                    tracing::warn!(target: "rho::mcp::server", server, logger, level, "{data}")
                }
                _ => tracing::error!(target: "rho::mcp::server", server, logger, level, "{data}"),
            }
        }
        // The host hears the same message (tracing is one consumer).
        self.events.push_back(Event::Log(ServerLog {
            level: level.to_owned(),
            logger: (!logger.is_empty()).then(|| logger.into_owned()),
            data: data.into_owned(),
        }));
    }

    pub(super) fn log_hidden_server_logs(&self, n: u64) {
        let server = self.options.server.as_str();
        tracing::info!(
            target: "rho::mcp::server",
            server,
            "… {} more log messages from server `{server}` were not shown",
            grouped(n)
        );
    }

    pub(super) fn log_hidden_junk(&self, n: u64) {
        tracing::warn!(
            server = %self.options.server,
            "… {} more lines from server `{}` that were not JSON-RPC or broke the protocol were not logged",
            grouped(n),
            self.options.server
        );
    }

    pub(super) fn unparseable(&mut self, now: Instant, error: ParseError, frame: &[u8]) {
        let not_json = matches!(error, ParseError::NotJson(_));
        let text = String::from_utf8_lossy(frame);
        let mut excerpt: String = text.chars().take(120).collect();
        if text.chars().nth(120).is_some() {
            excerpt.push('…');
        }
        let reason = format!("the answer is not valid JSON-RPC ({error})");
        self.peer_error(
            now,
            PeerError::Unparseable {
                server: self.options.server.clone(),
                error,
                excerpt: format!("{excerpt:?}"),
            },
        );
        // What is taken for an answer: a message with `result` or `error`,
        // or a JSON object broken off or garbled (not JSON at all) that is
        // not a request or a notification, as an oversized line is. A line
        // of plain text is a stray print, and a well-formed JSON object
        // that is not JSON-RPC a structured log line (pino writes to
        // stdout by default): the official SDKs' clients skip both, and
        // so does rho; they fail nothing.
        let peek = Peek::scan(frame);
        let likely_answer = peek.response
            || (not_json && !peek.method && frame.trim_ascii_start().first() == Some(&b'{'));
        self.unreadable_answer(now, &peek, likely_answer, reason);
    }

    /// A line passed `max_message_bytes` (`len` bytes so far, starting
    /// with `head`) and is still arriving: the request it answers fails
    /// now, naming the key, rather than when (if ever) the line ends.
    pub(super) fn oversized_line(&mut self, now: Instant, head: &[u8], len: usize) {
        let peek = Peek::scan(head);
        let reason = format!(
            "the answer is over the {} limit (`max_message_bytes`), {} bytes so far, and is being discarded; \
             raise `max_message_bytes` for this server if its answers are that large",
            byte_size(self.options.max_line),
            grouped(len as u64)
        );
        let likely_answer =
            peek.response || (!peek.method && head.trim_ascii_start().first() == Some(&b'{'));
        self.unreadable_answer(now, &peek, likely_answer, reason);
    }

    /// A line the decoder rejected (over the cap, not UTF-8).
    pub(super) fn frame_error(&mut self, now: Instant, error: FrameError) {
        if matches!(error, FrameError::TooLong { .. }) && self.oversized_acted_on {
            // Its request was failed when the line passed the cap.
            self.oversized_acted_on = false;
            self.peer_error(
                now,
                PeerError::Framing {
                    server: self.options.server.clone(),
                    error,
                },
            );
            return;
        }
        let peek = Peek::scan(error.head());
        let (reason, likely_answer) = match &error {
            FrameError::TooLong { limit, len, .. } => (
                format!(
                    "the answer was {} bytes, over the {} limit (`max_message_bytes`); \
                     raise `max_message_bytes` for this server if its answers are that large",
                    grouped(*len as u64),
                    byte_size(*limit)
                ),
                // Only its start is known: an object that is not a request
                // or a notification is taken for an answer.
                peek.response
                    || (!peek.method && error.head().trim_ascii_start().first() == Some(&b'{')),
            ),
            FrameError::NotUtf8 { valid_up_to, .. } => (
                format!("the answer is not valid UTF-8 (first bad byte at offset {valid_up_to})"),
                peek.response,
            ),
        };
        self.peer_error(
            now,
            PeerError::Framing {
                server: self.options.server.clone(),
                error,
            },
        );
        self.unreadable_answer(now, &peek, likely_answer, reason);
    }

    /// An answer rho could not read fails the request it answers at once,
    /// when that is known: on stdio, by its `id` when readable, else when
    /// it looks like an answer and exactly one request is in flight. (A
    /// transport with its own exchanges, HTTP, ties answers itself.)
    /// Otherwise the next failure names it.
    pub(super) fn unreadable_answer(
        &mut self,
        now: Instant,
        peek: &Peek,
        likely_answer: bool,
        reason: String,
    ) {
        if !likely_answer && peek.id.is_none() {
            return;
        }
        let target = if self.options.framing != Framing::Lines {
            None
        } else if let Some(id) = &peek.id {
            ClientRequestId::from_wire(id).filter(|r| self.pending.contains_key(&r.0))
        } else {
            self.sole_awaited().map(ClientRequestId)
        };
        let Some(request) = target else {
            self.unread = Some(reason);
            return;
        };
        match self.pending.get(&request.0).map(|p| p.purpose.clone()) {
            Some(Purpose::Initialize | Purpose::Reinitialize) => {
                self.finish(CloseReason::Handshake(format!(
                    "its answer to initialize could not be read: {reason}"
                )))
            }
            Some(Purpose::ListTools) => self.finish(CloseReason::Discovery(format!(
                "its answer to tools/list could not be read: {reason}"
            ))),
            Some(_) => self.handle_request_failed(
                now,
                request,
                format!("its answer could not be read: {reason}"),
            ),
            None => {}
        }
    }

    /// The one request an answer without a readable id can be for: of the
    /// pending requests, leaving out a `subscriptions/listen` stream (it is
    /// answered only when it ends, so a 2026-era session always has it
    /// pending beside the request the answer is for) and, while an
    /// `initialize` is out beside it at startup, the probe (a garbled
    /// answer then fails the handshake either way).
    fn sole_awaited(&self) -> Option<u64> {
        let initializing = self
            .pending
            .values()
            .any(|p| matches!(p.purpose, Purpose::Initialize));
        let mut candidates = self.pending.iter().filter(|(_, p)| match p.purpose {
            Purpose::Listen | Purpose::Watch => false,
            Purpose::Discover => !initializing,
            _ => true,
        });
        match (candidates.next(), candidates.next()) {
            (Some((&n, _)), None) => Some(n),
            _ => None,
        }
    }

    /// The protocol errors a closing reason names: an answer that could not
    /// be read first, as the likeliest cause.
    pub(super) fn failure_notes(&mut self) -> Vec<String> {
        let mut notes = self.peer_errors.clone();
        if let Some(unread) = self.unread.take() {
            notes.insert(0, format!("it sent an answer rho could not read: {unread}"));
        }
        notes
    }

    /// Reports a protocol error: logged (the first few of a window; the
    /// rest are counted), remembered for a failure reason, and an event.
    pub(super) fn peer_error(&mut self, now: Instant, error: PeerError) {
        let (verdict, hidden) = self.junk.admit(now);
        if let Some(n) = hidden {
            self.log_hidden_junk(n);
        }
        if verdict == Verdict::Log {
            tracing::warn!("{error}");
        }
        if self.peer_errors.len() < REMEMBERED_PEER_ERRORS {
            self.peer_errors.push(error.to_string());
        }
        self.events.push_back(Event::PeerMisbehaved(error));
    }

    pub(super) fn finish(&mut self, reason: CloseReason) {
        if let Some(n) = self.junk.take_hidden() {
            self.log_hidden_junk(n);
        }
        if let Some(n) = self.server_logs.take_hidden() {
            self.log_hidden_server_logs(n);
        }
        let server = self.options.server.clone();
        if matches!(reason, CloseReason::Requested) {
            // Rho closes the session: its tasks are cancelled on the
            // server, not left to run for no one, and its 2025
            // subscriptions ended.
            self.cancel_tasks_at_close();
            self.unsubscribe_at_close();
        }
        self.task_polls.clear();
        let pending = std::mem::take(&mut self.pending);
        self.farewell = pending
            .iter()
            .filter(|(_, p)| matches!(p.purpose, Purpose::TaskCancel | Purpose::Farewell))
            .map(|(&n, _)| n)
            .collect();
        self.held_for_list.clear();
        self.deadlines.clear();
        self.timers.clear();
        self.call_tools.clear();
        for question in std::mem::take(&mut self.questions).into_keys() {
            self.events.push_back(Event::QuestionWithdrawn(question));
        }
        for (_, p) in pending {
            let error = CallError::SessionClosed {
                server: server.clone(),
                reason: reason.to_string(),
            };
            match p.purpose {
                Purpose::CallTool(call) => self.events.push_back(Event::CallCompleted {
                    call,
                    result: Err(error),
                }),
                Purpose::Feature(call) => self.events.push_back(Event::RequestCompleted {
                    call,
                    result: Err(error),
                }),
                _ => {}
            }
        }
        self.watch_session_closed(&reason);
        self.phase = Phase::Closed;
        // On stdio the transport ends at `Closed` (stdin closed, the child
        // stopped), and a server that read a farewell may be stopped before
        // it acts on it: a task's `tasks/cancel` must stop the work, so the
        // end waits for the farewells' answers, within a bound. (Streamable
        // HTTP lets them finish in its own close.)
        if matches!(reason, CloseReason::Requested)
            && matches!(self.options.framing, Framing::Lines)
        {
            // A call given up on whose answer may yet be a task handle:
            // its answer is waited for too, and a task cancelled.
            self.farewell.extend(std::mem::take(&mut self.maybe_tasks));
            if !self.farewell.is_empty() {
                let now = self.clock.latest();
                self.timers.set(Timer::Farewell, now + FAREWELL_WAIT);
                self.held_close = Some(reason);
                return;
            }
        }
        self.events.push_back(Event::Closed(reason));
    }

    /// A closed stdio session's line, while it waits for its farewells'
    /// answers: an answer to one is taken off the list (its content is not
    /// read: the session is over), and once none is left the session ends.
    pub(super) fn farewell_line(&mut self, line: &str) {
        let message = serde_json::from_str::<Value>(line).ok();
        let answered = message.as_ref().and_then(|message| {
            let is_answer = message.get("method").is_none()
                && (message.get("result").is_some() || message.get("error").is_some());
            is_answer.then(|| message.get("id").and_then(Value::as_u64))?
        });
        if let Some(id) = answered
            && self.farewell.remove(&id)
            && self.stale.remove(&id)
            && let Some(result) = message.as_ref().and_then(|m| m.get("result"))
        {
            // A call given up on, answered with a task handle after all:
            // the task is cancelled, and that cancel is a farewell too.
            self.cancel_late_task(result);
            for (n, pending) in std::mem::take(&mut self.pending) {
                self.deadlines.remove(&(pending.deadline, n));
                self.farewell.insert(n);
            }
        }
        if self.farewell.is_empty() {
            self.end_held_close();
        }
    }

    /// Ends a closed session whose `Closed` waited for its farewells: they
    /// were answered, their wait ran out, or the transport ended.
    pub(super) fn end_held_close(&mut self) {
        if let Some(reason) = self.held_close.take() {
            self.timers.stop(Timer::Farewell);
            self.events.push_back(Event::Closed(reason));
        }
    }
}
