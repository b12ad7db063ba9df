//! What a server sends unasked: its requests and notifications, the list
//! changes among them, and the re-listing they start.

use super::*;

impl Session {
    pub(super) fn handle_server_request(
        &mut self,
        now: Instant,
        id: ServerRequestId,
        method: &str,
        params: Option<Value>,
    ) {
        let bytes = match method {
            "elicitation/create" => return self.elicitation_request(now, id, params),
            "sampling/createMessage" => return self.sampling_request(now, id, params),
            "ping" => jsonrpc::response_bytes(&id, &jsonrpc::empty_object()),
            "roots/list" if self.options.workspace_root.is_some() => {
                let roots: Vec<Value> = self
                    .options
                    .workspace_root
                    .iter()
                    .map(|uri| json!({"uri": uri, "name": "workspace"}))
                    .collect();
                jsonrpc::response_bytes(&id, &json!({ "roots": roots }))
            }
            _ => {
                tracing::debug!(server = %self.options.server, method, "unsupported server request");
                jsonrpc::error_bytes(
                    &id,
                    &ErrorObject {
                        code: jsonrpc::code::METHOD_NOT_FOUND,
                        message: format!("rho does not support `{method}`"),
                        data: None,
                    },
                )
            }
        };
        self.push_transmit(bytes, TransmitKind::Response);
    }

    pub(super) fn handle_notification(
        &mut self,
        now: Instant,
        method: &str,
        params: Option<&Value>,
    ) {
        if self.watch_delivers(now, method, params)
            || self.subscription_delivers(now, method, params)
        {
            return;
        }
        match method {
            "notifications/tools/list_changed" => self.tools_list_changed(now),
            "notifications/prompts/list_changed" => {
                self.catalog_list_changed(now, &[CatalogKind::Prompts])
            }
            "notifications/resources/list_changed" => {
                self.catalog_list_changed(now, &[CatalogKind::Resources, CatalogKind::Templates])
            }
            "notifications/resources/updated" => self.resource_updated(None, params),
            "notifications/message" => self.server_log(now, params),
            "notifications/progress" => self.progress(now, params),
            "notifications/elicitation/complete" => self.url_elicitation_completed(params),
            // A task's status pushed: 2025 core tasks, and the 2026
            // extension's (which arrives through `subscriptions/listen`).
            "notifications/tasks/status" | "notifications/tasks" => {
                self.task_notification(now, params)
            }
            "notifications/cancelled" => {
                if !self.listen_cancelled(now, params) && !self.watch_cancelled(now, params) {
                    self.server_cancelled(now, params)
                }
            }
            _ => {
                tracing::trace!(server = %self.options.server, method, "notification ignored");
            }
        }
    }

    /// Lists the tools again after `notifications/tools/list_changed`. A
    /// change that arrives while a listing runs queues one more listing:
    /// during discovery the listing starts over once its last page is in,
    /// so ready reports the current tools (a further change then is applied
    /// after ready); once ready, [`Event::ToolsChanged`] reports the new
    /// list.
    ///
    /// Implementation note: a server that declared `tools` but not
    /// `tools.listChanged` is listed again too (the Python SDK 1.x declares
    /// `listChanged: false` and still sends the notification when a tool is
    /// added). The notification can only ask for a fresh read, which
    /// coalesces as above, and ignoring it would hide tools the server
    /// offers; prompts and resources are treated the same way. Before the
    /// server is known, or when it declared no tools, nothing happens.
    pub(super) fn tools_list_changed(&mut self, now: Instant) {
        let declared = |capabilities: &crate::wire::protocol::ServerCapabilities| {
            if capabilities.tools && !capabilities.tools_list_changed {
                tracing::debug!(server = %self.options.server, "tools/list_changed from a server that declared listChanged: false; listing its tools again anyway");
            }
            capabilities.tools
        };
        match &self.phase {
            Phase::Discovering { init, .. } if declared(&init.capabilities) => {
                tracing::debug!(server = %self.options.server, "tools/list_changed during discovery; listing again when this listing ends");
                if let Phase::Discovering { changed, .. } = &mut self.phase {
                    *changed = true;
                }
            }
            Phase::Ready
                if self
                    .ready
                    .as_ref()
                    .is_some_and(|r| declared(&r.capabilities)) =>
            {
                self.start_relist(now, false)
            }
            _ => {
                tracing::debug!(server = %self.options.server, "tools/list_changed ignored (no tools declared, or before the server is known)");
            }
        }
    }

    /// Lists prompts or resources (and templates) again after their
    /// `list_changed`, or queues one more listing after the one running.
    /// A server that declared the capability is re-listed even without
    /// `listChanged`: the notification only ever asks for a fresh read.
    /// Before `initialize` is answered nothing is offered yet, so nothing
    /// happens.
    pub(super) fn catalog_list_changed(&mut self, now: Instant, kinds: &[CatalogKind]) {
        for &kind in kinds {
            if let Some(page) = self.catalog.relist(kind) {
                self.request_catalog_page(now, &page);
            }
        }
    }

    /// Starts a re-listing while ready, or queues one after the one running.
    /// `stale`: because the list's freshness ran out, not because the
    /// server said it changed (then one already running will do).
    pub(super) fn start_relist(&mut self, now: Instant, stale: bool) {
        match &mut self.relist {
            Some(_) if stale => {}
            Some(relist) => relist.again = true,
            None => {
                self.relist = Some(Relist {
                    stale,
                    ..Relist::default()
                });
                self.request_relist_page(now, None);
            }
        }
    }

    pub(super) fn request_relist_page(&mut self, now: Instant, cursor: Option<String>) {
        let params = cursor.map(|c| json!({ "cursor": c }));
        let budget = self.options.request_timeout;
        self.send_request(
            Purpose::Relist,
            "tools/list",
            params.as_ref(),
            now + budget,
            budget,
        );
    }

    pub(super) fn on_relist_page(&mut self, now: Instant, reply: Result<Value, ErrorObject>) {
        let page = match reply.map(|v| ToolsPage::from_value(&v)) {
            Ok(Ok(page)) => page,
            Ok(Err(e)) => return self.relist_failed(&e.0),
            Err(error) => return self.relist_failed(&describe_error(&error)),
        };
        let page = self.screen_page(now, page);
        let page_ttl = self.is_stateless().then_some(page.cache.ttl);
        let private = page.cache.scope == crate::wire::protocol::CacheScope::Private;
        let Some(relist) = &mut self.relist else {
            return;
        };
        relist.private = private || (relist.private && relist.pages > 0);
        relist.tools.extend(page.tools);
        relist.pages += 1;
        relist.ttl = shorter(relist.ttl, page_ttl);
        match page.next_cursor {
            Some(cursor)
                if relist.pages >= MAX_TOOL_PAGES
                    || !relist.seen_cursors.insert(cursor.clone()) =>
            {
                self.relist_failed("tools/list kept paginating")
            }
            Some(cursor) => self.request_relist_page(now, Some(cursor)),
            None => {
                let Some(done) = self.relist.take() else {
                    return;
                };
                self.tools_fresh_until = done.ttl.map(|ttl| super::fresh_until(now, ttl));
                self.tools_private = done.private;
                let unchanged = self.ready.as_ref().is_some_and(|r| r.tools == done.tools);
                if done.stale && unchanged && !done.again {
                    // Still fresh news: nothing changed, nothing to report.
                    return self.send_held();
                }
                if let Some(ready) = &mut self.ready {
                    // Calls in flight now hold the name of what they called.
                    for called in self.call_tools.values_mut() {
                        if let CalledTool::Listed(at) = *called {
                            *called = CalledTool::Named(ready.tools[at].name.clone());
                        }
                    }
                    ready.tools = done.tools.clone();
                }
                // Calls refused for their headers go again, now that the
                // list their headers follow is the new one.
                self.send_held();
                // Revised tools may declare new schemas.
                self.output_schemas.clear();
                self.events.push_back(Event::ToolsChanged(done.tools));
                if done.again {
                    self.relist = Some(Relist::default());
                    self.request_relist_page(now, None);
                }
            }
        }
    }

    /// Sends the calls held for a fresh tool list (after a -32020) again,
    /// each under a new id; one that ended meanwhile (timed out,
    /// cancelled) is gone.
    pub(super) fn send_held(&mut self) {
        for n in std::mem::take(&mut self.held_for_list) {
            let Some(mut pending) = self.pending.remove(&n) else {
                continue;
            };
            self.deadlines.remove(&(pending.deadline, n));
            match pending.resend.take() {
                Some(resend) => {
                    self.reissue(pending, *resend);
                }
                None => {
                    self.pending.insert(n, pending);
                }
            }
        }
    }

    pub(super) fn relist_failed(&mut self, why: &str) {
        tracing::warn!(server = %self.options.server, "re-listing tools failed, keeping the previous list: {why}");
        self.relist = None;
        // The held calls go with the list there is; a second refusal fails
        // them.
        self.send_held();
        if self.is_stateless() {
            // The stale list serves meanwhile; a call after a pause tries
            // again (not every call: the server may be down).
            self.tools_fresh_until = Some(self.clock.latest() + self.options.request_timeout);
        }
    }
}
