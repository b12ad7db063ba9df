//! Listing what a server offers: tool and catalog pages at startup, the
//! ready moment they lead to, and the keep-alive ping armed then.

use super::*;
use crate::wire::protocol::{CacheHint, CacheScope};

impl Session {
    /// Asks for one page of a prompt or resource listing: during startup
    /// within the startup budget, after it within the request budget.
    pub(super) fn request_catalog_page(&mut self, now: Instant, page: &PageRequest) {
        let (deadline, budget) = match self.startup_deadline() {
            Some(deadline) => (deadline, self.options.startup_timeout),
            None => (
                now + self.options.request_timeout,
                self.options.request_timeout,
            ),
        };
        let params = page.params();
        self.send_request(
            Purpose::Catalog(page.kind),
            page.kind.method(),
            params.as_ref(),
            deadline,
            budget,
        );
    }

    pub(super) fn on_catalog_page(
        &mut self,
        now: Instant,
        kind: CatalogKind,
        reply: Result<Value, ErrorObject>,
    ) {
        // A 2026-era page says how long it stays fresh; the last page of a
        // listing sets the list's freshness.
        if self.is_stateless() {
            match reply
                .as_ref()
                .ok()
                .and_then(|page| page.get("ttlMs"))
                .and_then(Value::as_u64)
            {
                Some(ttl) => {
                    self.catalog_fresh_until
                        .insert(kind, super::fresh_until(now, Duration::from_millis(ttl)));
                }
                None => {
                    self.catalog_fresh_until.remove(&kind);
                }
            }
        }
        // A 2026-era page says whose it is: private (the default) belongs
        // to the credential it was read with.
        let private = self.is_stateless()
            && reply
                .as_ref()
                .ok()
                .and_then(Value::as_object)
                .is_some_and(|page| CacheHint::from_map(page).scope == CacheScope::Private);
        if private {
            self.catalog.mark_private(kind);
        }
        // A listing the server does not implement (-32601: the Puppeteer
        // and Kubernetes servers declare resources and answer
        // `resources/templates/list` so) has nothing in it: an empty list,
        // not a failure shown on every `show` and `/mcp`.
        let reply = match reply {
            Err(error) if error.code == crate::wire::protocol::code::METHOD_NOT_FOUND => {
                tracing::debug!(server = %self.options.server, "{} is not implemented ({error}); taken as empty", kind.method());
                Ok(kind.empty_page())
            }
            reply => reply,
        };
        let answer = reply.map_err(|error| format!("the server answered with an error: {error}"));
        let (outcome, rejected) = self
            .catalog
            .handle_page(kind, answer.as_ref().map_err(Clone::clone));
        for error in rejected {
            let server = self.options.server.clone();
            self.peer_error(
                now,
                PeerError::MalformedEntry {
                    server,
                    list: kind.method(),
                    error,
                },
            );
        }
        self.after_catalog_page(now, outcome);
    }

    /// Carries on after a listing page: the next page, a queued re-listing,
    /// and, once a listing settled, ready (during startup) or
    /// [`Event::CatalogChanged`].
    pub(super) fn after_catalog_page(&mut self, now: Instant, outcome: PageOutcome) {
        match outcome {
            PageOutcome::Next(page) => self.request_catalog_page(now, &page),
            PageOutcome::Settled { then } => {
                for page in then {
                    self.request_catalog_page(now, &page);
                }
                match self.phase {
                    Phase::Ready => self.events.push_back(Event::CatalogChanged(Box::new(
                        self.catalog.catalog().clone(),
                    ))),
                    Phase::Discovering { .. } => self.maybe_ready(now),
                    _ => {}
                }
            }
        }
    }

    /// At the startup deadline with the tools in: every listing still
    /// running or waiting its turn fails alone (the server is told to stop
    /// the running ones), and the server becomes ready without them.
    pub(super) fn catalog_startup_expired(&mut self, now: Instant) {
        let why = format!(
            "not listed within the {} s startup budget",
            self.options.startup_timeout.as_secs_f64()
        );
        // Nothing is queued after: a re-listing would outlive startup.
        self.catalog.abandon(&why);
        let running: Vec<(u64, Instant)> = self
            .pending
            .iter()
            .filter_map(|(&id, p)| match p.purpose {
                Purpose::Catalog(_) => Some((id, p.deadline)),
                _ => None,
            })
            .collect();
        for (id, deadline) in running {
            self.pending.remove(&id);
            self.deadlines.remove(&(deadline, id));
            let params = json!({"requestId": id, "reason": "timed out"});
            self.send_notification("notifications/cancelled", Some(&params));
            self.abandoned(id);
        }
        self.maybe_ready(now);
    }

    /// Becomes ready once the tools are in and no listing runs; a tool
    /// change that came meanwhile is re-listed after.
    pub(super) fn maybe_ready(&mut self, now: Instant) {
        let Phase::Discovering {
            tools_done: true,
            changed,
            ttl,
            ..
        } = self.phase
        else {
            return;
        };
        if !self.catalog.settled() {
            return;
        }
        self.become_ready(now);
        self.tools_fresh_until = ttl.map(|ttl| super::fresh_until(now, ttl));
        if changed {
            self.start_relist(now, false);
        }
    }

    pub(super) fn on_reinitialize(&mut self, reply: Result<Value, ErrorObject>) {
        let init = match reply.map(|v| InitializeResult::from_value(&v)) {
            Ok(Ok(init)) => init,
            Ok(Err(e)) => return self.finish(CloseReason::Handshake(e.0)),
            Err(error) => {
                return self.finish(CloseReason::Handshake(format!(
                    "after its session expired, the server answered initialize with an error: {error}"
                )));
            }
        };
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&init.protocol_version.as_str()) {
            return self.finish(CloseReason::Handshake(format!(
                "after its session expired, the server speaks protocol version `{}`, which rho does not support",
                init.protocol_version
            )));
        }
        tracing::info!(server = %self.options.server, "session re-established after expiry");
        self.negotiated_version = Some(init.protocol_version.clone());
        if let Phase::Discovering { init: current, .. } = &mut self.phase {
            // Still starting: what the server says now is what ready reports.
            **current = init;
        }
        self.send_notification("notifications/initialized", None);
        self.renew_after_expiry();
    }

    pub(super) fn request_tools_page(&mut self, cursor: Option<String>) {
        let params = cursor.map(|c| json!({ "cursor": c }));
        self.send_request(
            Purpose::ListTools,
            "tools/list",
            params.as_ref(),
            self.startup_deadline().unwrap_or(self.clock.latest()),
            self.options.startup_timeout,
        );
    }

    pub(super) fn on_tools_page(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        let value = match reply {
            Ok(value) => value,
            Err(error) => {
                return self.finish(CloseReason::Discovery(format!(
                    "the server answered tools/list with an error: {}",
                    describe_error(&error)
                )));
            }
        };
        let page = match ToolsPage::from_value(&value) {
            Ok(page) => page,
            Err(e) => return self.finish(CloseReason::Discovery(e.0)),
        };
        let page = self.screen_page(now, page);
        let page_ttl = self.is_stateless().then_some(page.cache.ttl);
        let private = page.cache.scope == crate::wire::protocol::CacheScope::Private;
        let first = matches!(self.phase, Phase::Discovering { pages: 0, .. });
        self.tools_private = private || (self.tools_private && !first);
        let Phase::Discovering {
            tools,
            pages,
            seen_cursors,
            changed,
            relisted,
            ttl,
            tools_done,
            ..
        } = &mut self.phase
        else {
            return;
        };
        tools.extend(page.tools);
        *pages += 1;
        *ttl = shorter(*ttl, page_ttl);
        match page.next_cursor {
            Some(cursor) if *pages >= MAX_TOOL_PAGES || !seen_cursors.insert(cursor.clone()) => {
                let pages = *pages;
                self.finish(CloseReason::Discovery(format!(
                    "tools/list kept paginating (page {pages} repeated a cursor or passed {MAX_TOOL_PAGES} pages)"
                )));
            }
            Some(cursor) => self.request_tools_page(Some(cursor)),
            None if *changed && !*relisted => {
                // The list changed while it was being read: read it again,
                // so ready reports the tools as they are now.
                tracing::debug!(server = %self.options.server, "tools changed during discovery; listing again");
                tools.clear();
                *pages = 0;
                seen_cursors.clear();
                *changed = false;
                *relisted = true;
                *ttl = None;
                self.request_tools_page(None);
            }
            None => {
                *tools_done = true;
                self.maybe_ready(now);
            }
        }
    }

    /// Reports a page's malformed tools, and in the stateless era over HTTP
    /// ([`SessionOptions::check_tool_headers`]) leaves out the tools whose
    /// `x-mcp-header` annotations are invalid, each with its reason; the
    /// others are kept.
    pub(super) fn screen_page(&mut self, now: Instant, mut page: ToolsPage) -> ToolsPage {
        let server = self.options.server.clone();
        let mut rejected = std::mem::take(&mut page.rejected);
        if self.options.check_tool_headers && self.is_stateless() {
            page.tools.retain(|tool| match tool.header_params() {
                Ok(_) => true,
                Err(error) => {
                    rejected.push(error);
                    false
                }
            });
        }
        for error in rejected {
            self.peer_error(
                now,
                PeerError::MalformedTool {
                    server: server.clone(),
                    error,
                },
            );
        }
        page
    }

    /// Arms the next keep-alive ping, when pings are configured (never in
    /// the stateless era, which has no `ping`).
    pub(super) fn arm_ping(&mut self, now: Instant) {
        match self.options.ping_interval {
            Some(every) if !self.is_stateless() => self.timers.set(Timer::Ping, now + every),
            _ => self.timers.stop(Timer::Ping),
        }
    }

    pub(super) fn become_ready(&mut self, now: Instant) {
        let Phase::Discovering { init, tools, .. } =
            std::mem::replace(&mut self.phase, Phase::Ready)
        else {
            return;
        };
        let init = *init;
        let ready = ServerReady {
            protocol_version: init.protocol_version,
            server_info: init.server_info,
            capabilities: init.capabilities,
            instructions: init.instructions,
            tools,
            catalog: Box::new(self.catalog.catalog().clone()),
        };
        self.ready = Some(ready.clone());
        self.timers.stop(Timer::Startup);
        self.arm_ping(now);
        self.events.push_back(Event::Ready(Box::new(ready)));
        self.listen_if_wanted(now);
    }

    /// Both eras after the server is known: list its tools and the
    /// catalog lists it declares; ready once every listing settled.
    pub(super) fn begin_discovery(&mut self, now: Instant, init: InitializeResult) {
        let wants_tools = init.capabilities.tools;
        let (prompts, resources) = (init.capabilities.prompts, init.capabilities.resources);
        self.phase = Phase::Discovering {
            init: Box::new(init),
            tools: Vec::new(),
            pages: 0,
            seen_cursors: BTreeSet::new(),
            changed: false,
            relisted: false,
            ttl: None,
            tools_done: !wants_tools,
        };
        if wants_tools {
            self.request_tools_page(None);
        }
        for page in self.catalog.start(prompts, resources) {
            self.request_catalog_page(now, &page);
        }
        self.maybe_ready(now);
    }
}
