//! How a session starts: the 2026 era's `server/discover` probe or the
//! 2025 era's `initialize`, the fall back from one to the other, and what
//! the client declares in each (capabilities, params, the era's `_meta`).

use super::*;

impl Session {
    /// The client capabilities this run answers: roots with a workspace,
    /// elicitation where a person can answer, sampling where allowed. The
    /// stateless era has no roots list-changed notification, so its
    /// `roots` is bare.
    pub(super) fn client_capabilities(&self, stateless: bool) -> Value {
        let mut capabilities = self.options.capabilities.clone();
        if let Value::Object(map) = &mut capabilities {
            if self.options.workspace_root.is_some() {
                let roots = if stateless {
                    json!({})
                } else {
                    json!({"listChanged": false})
                };
                map.insert("roots".into(), roots);
            }
            if self.options.elicitation {
                map.insert(
                    "elicitation".into(),
                    crate::features::elicitation::capability(self.options.elicitation_url),
                );
            }
            if self.options.sampling {
                map.insert("sampling".into(), crate::features::sampling::capability());
            }
            if self.options.apps {
                // MCP Apps: a server may give its tools views, which the
                // host renders (features/apps.rs). Both eras.
                let extensions = map.entry("extensions").or_insert_with(|| json!({}));
                if let Value::Object(extensions) = extensions {
                    extensions.insert(
                        crate::features::apps::EXTENSION_ID.into(),
                        crate::features::apps::capability(),
                    );
                }
            }
            if stateless {
                // The tasks extension: a server may answer a call with a
                // task, and rho follows it to its result (session/tasks.rs).
                // Declared on every request of the era, as it asks.
                let extensions = map.entry("extensions").or_insert_with(|| json!({}));
                if let Value::Object(extensions) = extensions {
                    extensions.insert(crate::features::tasks::EXTENSION_ID.into(), json!({}));
                }
            }
        }
        capabilities
    }

    pub(super) fn initialize_params(&self, version: &str) -> Value {
        json!({
            "protocolVersion": version,
            "capabilities": self.client_capabilities(false),
            "clientInfo": self.options.client_info,
        })
    }

    /// Enters (or re-enters) a stateless era at `version`: every request
    /// from now on carries its `_meta`.
    pub(super) fn set_stateless(&mut self, era: Era) {
        let version = era.stateless_version().unwrap_or(MODERN_PROTOCOL_VERSION);
        let capabilities = self.client_capabilities(true);
        // Without a configured level a stateless server would send no log
        // at all (the era's servers log only for requests that ask): ask
        // for warnings and worse, what a 2025-era server sends unasked and
        // rho shows by default.
        let level = Some(
            self.options
                .log_level
                .unwrap_or(DEFAULT_STATELESS_LOG_LEVEL)
                .as_str(),
        );
        self.meta = Some(era::Meta::new(era::meta_map(
            version,
            &capabilities,
            &self.options.client_info,
            level,
        )));
        self.era = era;
    }

    /// Sends the `server/discover` probe offering `offered`, under the
    /// startup deadline: a timer never decides the era, an answer does.
    /// On stdio the first probe has an early `initialize` behind it.
    pub(super) fn send_probe(&mut self, now: Instant, offered: &'static str, retried: bool) {
        self.set_stateless(Era::Probing { offered, retried });
        let startup = self.startup_deadline().unwrap_or(now);
        self.send_request(
            Purpose::Discover,
            "server/discover",
            None::<&Value>,
            startup,
            self.options.startup_timeout,
        );
        if self.options.discover_wait.is_some() && !retried {
            self.send_early_initialize();
        }
    }

    /// The early `initialize` was refused without saying the server is a
    /// modern one (an invalid-params error for its envelope, say): the
    /// probe now gets [`SessionOptions::discover_wait`] (at most half of
    /// what is left of the startup budget) before a plain `initialize`
    /// goes. This is the one case where the server's silence is read:
    /// one answer already came, and it did not say "modern".
    fn arm_probe_wait(&mut self, now: Instant) {
        let (Some(wait), Some(probe)) = (self.options.discover_wait, self.probe_request()) else {
            return;
        };
        let startup = self.startup_deadline().unwrap_or(now);
        let wait = wait.min(startup.saturating_duration_since(now) / 2);
        let deadline = now + wait;
        if let Some(p) = self.pending.get_mut(&probe.0)
            && deadline < p.deadline
        {
            self.deadlines.remove(&(p.deadline, probe.0));
            p.deadline = deadline;
            p.budget = wait;
            self.deadlines.insert((deadline, probe.0));
        }
    }

    /// On stdio, right behind the first probe: an `initialize` that also
    /// carries the probe's 2026 `_meta` envelope.
    ///
    /// Implementation note: a 2025-only server that ignores
    /// `server/discover` answers this as its handshake at once, so it is
    /// not waited for ([`SessionOptions::discover_wait`]). A dual-era
    /// server is not pinned to the 2025 era by it: the envelope makes it a
    /// modern request (the TypeScript SDK 2.x's stdio entry pins the era
    /// by the first message after the probe, and a plain `initialize` pins
    /// 2025), which such a server refuses (-32601, -32022), so its
    /// discovery result decides. Checked against the TypeScript SDK 1.x
    /// and 2.x, the Python SDK 1.x and 2.x, fastmcp and server-everything
    /// (tests/tests/interop.rs runs them). The version inside `_meta` must
    /// stay the modern one: a 2025 version there makes the TypeScript SDK
    /// 2.x serve the 2025 era.
    fn send_early_initialize(&mut self) {
        let mut params = self.initialize_params(LATEST_PROTOCOL_VERSION);
        if let (Value::Object(map), Some(meta)) = (&mut params, &self.meta) {
            map.insert("_meta".into(), Value::Object(meta.map().clone()));
        }
        // Written as a plain request (its `_meta` is already in): the
        // stateless path would send it again on a -32022, which here only
        // says the server is modern.
        let meta = self.meta.take();
        let id = self.send_request(
            Purpose::Initialize,
            "initialize",
            Some(&params),
            self.startup_deadline().unwrap_or(self.clock.latest()),
            self.options.startup_timeout,
        );
        self.meta = meta;
        self.early_init = EarlyInit::Pending(id);
    }

    /// The era is settled as stateless: the early `initialize` is no
    /// longer waited for, and its answer is dropped quietly.
    fn drop_early_init(&mut self) {
        if let EarlyInit::Pending(id) = std::mem::take(&mut self.early_init) {
            if let Some(p) = self.pending.remove(&id) {
                self.deadlines.remove(&(p.deadline, id));
            }
            self.stale.insert(id);
        }
    }

    /// Sends `initialize` offering `version`, under the startup deadline.
    pub(super) fn send_initialize(&mut self, version: &str) {
        let params = self.initialize_params(version);
        let deadline = self.startup_deadline().unwrap_or(self.clock.latest());
        self.send_request(
            Purpose::Initialize,
            "initialize",
            Some(&params),
            deadline,
            self.options.startup_timeout,
        );
    }

    /// The server is not a stateless one (see [`era`]): the 2025
    /// handshake, offering `offer`, in what is left of the startup budget.
    pub(super) fn fall_back(&mut self, offer: &'static str, why: &str) {
        tracing::debug!(server = %self.options.server, "{why}; trying the initialize handshake ({offer})");
        self.era = Era::Legacy;
        self.meta = None;
        self.phase = Phase::Initializing;
        match std::mem::take(&mut self.early_init) {
            // Already out: its answer decides.
            EarlyInit::Pending(id) => self.early_init = EarlyInit::Pending(id),
            // Refused with its envelope (a server strict about unknown
            // `_meta`, say): a plain one, as without the early one.
            EarlyInit::Refused(why) => {
                tracing::debug!(server = %self.options.server, "the early initialize was refused ({why}); sending a plain one");
                self.send_initialize(offer);
            }
            EarlyInit::None => self.send_initialize(offer),
        }
    }

    /// The answer to the `server/discover` probe.
    pub(super) fn on_discover(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        let retried = matches!(self.era, Era::Probing { retried: true, .. });
        let outcome = era::probe_outcome(reply, retried);
        if !matches!(outcome, ProbeOutcome::Legacy { .. }) {
            self.drop_early_init();
        }
        match outcome {
            ProbeOutcome::Modern { result, version } => {
                self.become_stateless(now, *result, version)
            }
            ProbeOutcome::Retry(version) => {
                tracing::debug!(server = %self.options.server, "server/discover refused the version offered; probing again with {version}");
                self.send_probe(now, version, true);
            }
            ProbeOutcome::Legacy { offer, why } => self.fall_back(offer, &why),
            ProbeOutcome::Refused(reason) => self.finish(CloseReason::Handshake(reason)),
        }
    }

    /// Discovery said the server is stateless at `version`: list its
    /// tools (when it has any) and be ready.
    pub(super) fn become_stateless(
        &mut self,
        now: Instant,
        result: crate::wire::protocol::DiscoverResult,
        version: &'static str,
    ) {
        self.set_stateless(Era::Modern { version });
        self.negotiated_version = Some(version.to_owned());
        let init = InitializeResult {
            protocol_version: version.to_owned(),
            // Identity is display-only and a SHOULD: absent is blank.
            server_info: result.server_info.unwrap_or(Implementation {
                name: String::new(),
                version: String::new(),
                title: None,
            }),
            capabilities: result.capabilities,
            instructions: result.instructions,
        };
        self.begin_discovery(now, init);
    }

    /// The answer to a probe given up on came after all. A discovery
    /// result while `initialize` is still unanswered makes the session
    /// stateless (a slow-starting modern server); anything else is
    /// dropped, the handshake having gone ahead.
    pub(super) fn late_probe_answered(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        self.late_probe = None;
        if !matches!(self.phase, Phase::Initializing) {
            return;
        }
        let ProbeOutcome::Modern { result, version } = era::probe_outcome(reply, true) else {
            return;
        };
        let initialize: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| matches!(p.purpose, Purpose::Initialize))
            .map(|(&n, _)| n)
            .collect();
        for n in initialize {
            if let Some(p) = self.pending.remove(&n) {
                self.deadlines.remove(&(p.deadline, n));
            }
            self.stale.insert(n);
        }
        tracing::debug!(server = %self.options.server, "server/discover was answered late; the server is stateless after all");
        self.become_stateless(now, *result, version);
    }

    pub(super) fn on_initialize(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        if matches!(self.era, Era::Probing { .. }) {
            // The early `initialize` was answered before the probe.
            if !matches!(&reply, Ok(value) if InitializeResult::from_value(value).is_ok()) {
                // A modern server refusing it: the probe decides.
                let (why, modern) = match &reply {
                    Ok(_) => ("not a handshake result".to_owned(), false),
                    Err(error) => (error.to_string(), era::refusal_says_modern(error)),
                };
                self.early_init = EarlyInit::Refused(why);
                if !modern {
                    self.arm_probe_wait(now);
                }
                return;
            }
            // A 2025 server (one that ignores the probe, or has not
            // answered it yet): the handshake goes on, the probe's answer
            // is noise now.
            self.early_init = EarlyInit::None;
            if let Some(probe) = self.probe_request() {
                if let Some(p) = self.pending.remove(&probe.0) {
                    self.deadlines.remove(&(p.deadline, probe.0));
                }
                self.stale.insert(probe.0);
            }
            tracing::debug!(server = %self.options.server, "initialize was answered before server/discover; the server speaks the handshake");
            self.era = Era::Legacy;
            self.meta = None;
            self.phase = Phase::Initializing;
        }
        self.early_init = EarlyInit::None;
        let result = match reply {
            Ok(value) => value,
            Err(error) => {
                return self.finish(CloseReason::Handshake(format!(
                    "the server answered initialize with an error: {error}"
                )));
            }
        };
        let init = match InitializeResult::from_value(&result) {
            Ok(init) => init,
            Err(e) => return self.finish(CloseReason::Handshake(e.0)),
        };
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            return self.finish(CloseReason::Handshake(format!(
                "the server speaks protocol version `{}`, which rho does not support (rho speaks {})",
                init.protocol_version,
                SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            )));
        }
        self.negotiated_version = Some(init.protocol_version.clone());
        self.send_notification("notifications/initialized", None);
        if let (Some(level), true) = (self.options.log_level, init.capabilities.logging) {
            let params = json!({"level": level.as_str()});
            let budget = self.options.request_timeout;
            self.send_request(
                Purpose::SetLevel,
                "logging/setLevel",
                Some(&params),
                now + budget,
                budget,
            );
        }
        // The handshake overtook a late probe: its answer is noise now.
        if let Some(probe) = self.late_probe.take() {
            self.stale.insert(probe);
        }
        self.begin_discovery(now, init);
    }
}
