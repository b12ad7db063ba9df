//! A resource-subscription server on the official Rust SDK (`rmcp`
//! 3.11.0), over stdio, for rho's subscription tests
//! (`tests/tests/resource_subscriptions.rs`): the 2026-07-28 era's
//! `subscriptions/listen` with `resourceSubscriptions`, served by rmcp.
//! rmcp sends the acknowledgement itself, with the intersection of what was
//! asked and what the handler below accepts, and tags every notification
//! on the stream; only which URIs it accepts and what changes are written
//! here.
//!
//!   watched-rmcp
//!
//! Resources `watch://counter` (text `count <n>`) and `watch://notes`
//! (text `notes`). A listen request is accepted for the resources it holds
//! and nothing else: a request naming `watch://counter` and
//! `watch://elsewhere` is acknowledged with `watch://counter` alone (a
//! partial acknowledgement). Tool `bump`: n + 1, then
//! `notifications/resources/updated` for `watch://counter` on every open
//! stream (from the acknowledgement on); text `count <n>`. A 2025 client's `resources/subscribe` gets
//! rmcp's method-not-found (rmcp serves subscriptions only on listen
//! streams in the 2026 era, and rho takes that era with it).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[path = "../shared.rs"]
mod shared;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use tokio::sync::broadcast;

const COUNTER: &str = "watch://counter";
const NOTES: &str = "watch://notes";

#[derive(Clone)]
struct Watched {
    count: Arc<AtomicU64>,
    /// The URIs that changed, for every open listen stream.
    changed: broadcast::Sender<String>,
    /// Receivers of `changed` made when a listen request was accepted,
    /// before rmcp sends its acknowledgement: rmcp calls `listen` only
    /// after that, and a change in between would reach no stream, while a
    /// client may take the acknowledgement as the stream being live (rho
    /// does, and replaces its old stream then). Each `listen` takes one.
    ready: Arc<Mutex<VecDeque<broadcast::Receiver<String>>>>,
}

impl Watched {
    fn new() -> Self {
        Self {
            count: Arc::new(AtomicU64::new(0)),
            changed: broadcast::channel(64).0,
            ready: Arc::default(),
        }
    }
}

fn bump_tool() -> Tool {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), "object".into());
    Tool::new("bump", "Changes watch://counter", Arc::new(schema))
}

impl ServerHandler for Watched {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new("rho-watched-rmcp", "3.11.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![bump_tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == "bump").then(bump_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "bump" {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}", request.name),
                None,
            ));
        }
        let count = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        // No stream open is no one to tell.
        let _ = self.changed.send(COUNTER.to_owned());
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("count {count}"))]).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(COUNTER, "counter").with_mime_type("text/plain"),
            Resource::new(NOTES, "notes").with_mime_type("text/plain"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let body = match uri {
            COUNTER => format!("count {}", self.count.load(Ordering::SeqCst)),
            NOTES => "notes".to_owned(),
            _ => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource {uri}"),
                    None,
                ));
            }
        };
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(body, uri).with_mime_type("text/plain"),
        ])
        .into())
    }

    /// The resources this server holds, of those asked for: rmcp
    /// acknowledges the intersection.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let held = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| *uri == COUNTER || *uri == NOTES)
            .cloned();
        if let Ok(mut ready) = self.ready.lock() {
            ready.push_back(self.changed.subscribe());
        }
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(held)
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let early = self.ready.lock().ok().and_then(|mut r| r.pop_front());
        let mut changed = early.unwrap_or_else(|| self.changed.subscribe());
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                uri = changed.recv() => match uri {
                    Ok(uri) => {
                        if let Err(e) = context.sink().notify_resource_updated(uri).await {
                            eprintln!("subscriptions/listen: {e}");
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Err(e) = shared::serve_stdio(Watched::new(), "rmcp watched server").await {
        eprintln!("watched-rmcp: {e}");
        std::process::exit(1);
    }
}
