//! Where an answer goes: the pending request it settles, a stateless
//! era's retries (another version, a refused header), and for a tool call
//! the one place its result is classified and checked.

use super::*;

impl Session {
    pub(super) fn handle_reply(
        &mut self,
        now: Instant,
        id: RequestId,
        reply: Result<Value, ErrorObject>,
    ) {
        let pending = ClientRequestId::from_wire(&id)
            .filter(|ClientRequestId(n)| !self.is_held_for_input(*n))
            .and_then(|ClientRequestId(n)| self.pending.remove(&n).map(|p| (n, p)));
        let Some((n, mut pending)) = pending else {
            if let Some(n) = ClientRequestId::from_wire(&id).map(|r| r.0) {
                if self.stale.remove(&n) {
                    self.maybe_tasks.remove(&n);
                    tracing::debug!(server = %self.options.server, "an answer to request {n}, which rho no longer waits for, dropped");
                    // A call cancelled while the server was making it a
                    // task: the task would run for no one.
                    if let Ok(value) = &reply {
                        self.cancel_late_task(value);
                    }
                    return;
                }
                if self.late_probe == Some(n) {
                    return self.late_probe_answered(now, reply);
                }
            }
            self.peer_error(
                now,
                PeerError::UnknownResponse {
                    server: self.options.server.clone(),
                    id: id.to_string(),
                },
            );
            return;
        };
        self.deadlines.remove(&(pending.deadline, n));
        // A stateless server that does not speak the version asked for
        // lists the ones it does: the request goes again, once, with one
        // rho speaks.
        if let (Err(error), Some(resend)) = (&reply, &mut pending.resend) {
            let retry = UnsupportedVersion::from_error(error)
                .and_then(|v| v.modern_choice())
                .filter(|_| {
                    !resend.version_retried && !matches!(pending.purpose, Purpose::Discover)
                });
            if let Some(version) = retry {
                tracing::info!(server = %self.options.server, "the server asked for protocol version {version}; sending the request again with it");
                self.set_stateless(Era::Modern { version });
                self.negotiated_version = Some(version.to_owned());
                let mut resend = *pending.resend.take().expect("matched above");
                resend.version_retried = true;
                let watch = matches!(pending.purpose, Purpose::Watch);
                let id = self.reissue(pending, resend);
                if watch {
                    self.resource_subscriptions.renamed(n, id);
                }
                return;
            }
        }
        // A call whose headers the server refused: the tool's annotations
        // may have changed. It waits (pending, its budget running) for the
        // tool list to be read again, then goes once more.
        if let (Err(error), Some(resend), Purpose::CallTool(_)) =
            (&reply, &mut pending.resend, &pending.purpose)
            && error.code == crate::wire::protocol::code::HEADER_MISMATCH
            && !resend.header_retried
        {
            tracing::info!(server = %self.options.server, "the server refused a call's headers; listing tools again before sending it again");
            resend.header_retried = true;
            if pending.armed() {
                self.deadlines.insert((pending.deadline, n));
            }
            self.pending.insert(n, pending);
            self.held_for_list.insert(n);
            self.start_relist(now, false);
            return;
        }
        match pending.purpose {
            Purpose::Discover => self.on_discover(now, reply),
            Purpose::Initialize => self.on_initialize(now, reply),
            Purpose::Reinitialize => self.on_reinitialize(reply),
            Purpose::Relist => self.on_relist_page(now, reply),
            Purpose::Listen => self.listen_answered(now, reply),
            Purpose::Watch => self.watch_answered(now, n, reply),
            Purpose::Ping => self.events.push_back(match reply {
                Ok(_) => Event::PingAnswered,
                Err(error) => Event::PingFailed(format!("ping answered with an error: {error}")),
            }),
            Purpose::ListTools => self.on_tools_page(now, reply),
            Purpose::Catalog(kind) => self.on_catalog_page(now, kind, reply),
            Purpose::Feature(call) => {
                // A prompt, resource or completion request may need input
                // first too, as a tool call may (2026 era, "any request").
                if let Ok(value) = &reply
                    && let Ok(ResultType::InputRequired) = ResultType::of(value)
                {
                    let value = reply.expect("matched above");
                    return self.input_required(now, n, call, pending, value);
                }
                let result = reply.map_err(|error| self.rpc_error(error));
                self.watch_request_answered(call, result.is_ok());
                self.events
                    .push_back(Event::RequestCompleted { call, result });
            }
            Purpose::Task { call, op } => self.on_task_reply(now, call, op, n, reply),
            Purpose::Farewell => {}
            Purpose::Renew => self.renewal_answered(n, reply),
            Purpose::TaskCancel => match reply {
                Ok(_) => {
                    tracing::debug!(server = %self.options.server, "tasks/cancel acknowledged")
                }
                Err(error) => {
                    tracing::info!(server = %self.options.server, "tasks/cancel was refused: {error}")
                }
            },
            Purpose::SetLevel => {
                if let Err(error) = reply {
                    self.peer_error(
                        now,
                        PeerError::ErrorResponse {
                            server: self.options.server.clone(),
                            what: "logging/setLevel".into(),
                            error,
                        },
                    );
                }
            }
            Purpose::CallTool(call) => {
                // The one place a call's result is classified: a server
                // that needs input first says so with `resultType`.
                let reply = match reply.map(|value| (ResultType::of(&value), value)) {
                    Ok((Ok(ResultType::InputRequired), value)) => {
                        return self.input_required(now, n, call, pending, value);
                    }
                    // The tasks extension: the server made the call a task
                    // (it may only when the request declared the extension,
                    // which every 2026-era request does).
                    Ok((Ok(ResultType::Task), value)) if self.is_stateless() => {
                        return self.task_created(
                            now,
                            n,
                            call,
                            pending,
                            crate::features::tasks::TaskEra::Extension,
                            &value,
                        );
                    }
                    // 2025: a call sent with `params.task` answered with a
                    // `CreateTaskResult` (a server without the capability
                    // answers it as a plain call, which is read as one).
                    Ok((Ok(_), value))
                        if pending.augmented
                            && crate::features::tasks::is_create_task_result(&value) =>
                    {
                        return self.task_created(
                            now,
                            n,
                            call,
                            pending,
                            crate::features::tasks::TaskEra::Core,
                            &value,
                        );
                    }
                    Ok((Ok(_), value)) => Ok(Ok(value)),
                    Ok((Err(error), _)) => Ok(Err(error)),
                    Err(error) => Err(error),
                };
                let result =
                    self.call_outcome(call, reply.map(|r| r.and_then(CallToolResult::from_value)));
                self.withdraw_questions_of(call);
                self.events.push_back(Event::CallCompleted { call, result });
            }
        }
    }
}
