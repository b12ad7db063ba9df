//! [`Host`]: one synchronous face over either executor. A host picks the
//! executor with [`RuntimeKind`] and drives both with the same methods,
//! written once over [`crate::executor::Executor`], so what it does (and
//! what it prints, and its exit codes) cannot drift between them; the
//! `rho` CLI and the integration tests both drive the runtime through it.
//!
//! - [`RuntimeKind::Smol`]: every session a task on one `smol::Executor`
//!   that this `Host` owns. Each method runs that executor on the calling
//!   thread while it waits, so a command-line host needs no thread of its
//!   own. Between calls nothing runs the executor unless the host asks
//!   for a thread that does ([`crate::HostBuilder::executor_thread`]): a host whose
//!   threads do other work between calls (a UI, an agent loop, a tokio
//!   runtime) wants one, so that server notifications, list changes and
//!   server requests are handled while it is busy elsewhere. The executor
//!   and its thread live as long as the `Host`, which outlives every
//!   session it started (dropping it shuts them down). A thread that runs
//!   the executor may spawn a stdio server again (a restart after its
//!   process died), and on Linux that process ends with the thread: call
//!   from threads that live as long as the host.
//! - [`RuntimeKind::Blocking`]: a driver thread per session; calls wait on
//!   the calling thread.

use std::sync::Arc;

use std::collections::BTreeMap;

use rho_proto_core::config::{Config, DEFAULT_MAX_OUTPUT_BYTES};
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::content::{RenderedResult, render_capped};
use rho_proto_core::features::prompts::{GetPromptParams, GetPromptResult, flatten};
use rho_proto_core::features::resource_subscriptions::SubscribeParams;
use rho_proto_core::features::resources::{
    Attachment, ReadResourceParams, ReadResourceResult, attachment,
};
use rho_proto_core::features::skills::{LoadedSkill, SkillEntry, SkillListing};
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::runtime::index::ToolIndex;
use rho_proto_core::runtime::registry::{ExportedTool, ToolRegistry};
use rho_proto_core::runtime::skills::SkillError;
use rho_proto_core::runtime::{CallOptions, CallTarget, Cancel, ServerView, ToolCallError};
#[cfg(feature = "smol")]
use rho_proto_core::runtime::{ServerRequest, ToolCall};

use crate::connect::{Moving, Origin};
#[cfg(feature = "blocking")]
use crate::executor::BlockingExecutor;
#[cfg(feature = "smol")]
use crate::executor::SmolExecutor;
use crate::executor::{Executor, RuntimeKind};
use crate::updates::Watched;
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;

/// Why a prompt or resource could not be attached.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The request did not get a result (see [`ToolCallError`]).
    #[error(transparent)]
    Request(#[from] ToolCallError),
    /// The result did not have the shape the method promises.
    #[error("server `{server}` sent a malformed {what}: {reason}")]
    Malformed {
        /// The server identity.
        server: String,
        /// `prompt` or `resource`.
        what: &'static str,
        /// What was wrong with it.
        reason: String,
    },
    /// A resource read returned no contents.
    #[error("server `{server}` returned nothing for `{uri}`")]
    Empty {
        /// The server identity.
        server: String,
        /// The resource.
        uri: String,
    },
}

/// A prompt as a model gets it ([`Host::prompt_turn`]).
#[derive(Debug)]
pub struct PromptTurn {
    /// The user turn: the prompt's messages flattened, capped.
    pub turn: String,
    /// The prompt as read.
    pub result: GetPromptResult,
    /// The result as the server sent it (for a transcript or `--json`).
    pub as_sent: Value,
}

/// A resource as a message carries it ([`Host::attach_resource`]).
#[derive(Debug)]
pub struct Attached {
    /// What the message carries, capped.
    pub attachment: Attachment,
    /// The resource as read, every body whole.
    pub result: ReadResourceResult,
    /// The result as the server sent it.
    pub as_sent: Value,
}

/// A started runtime of either kind, driven synchronously.
pub struct Host {
    executor: Box<dyn Executor>,
    /// What it was connected from, for [`Host::reconnect`].
    pub(crate) origin: Arc<Origin>,
    /// What it subscribed to, for [`Host::reconnect`].
    pub(crate) watched: Watched,
}

impl Host {
    /// Starts the enabled servers `select` accepts, and waits until each
    /// is ready or has failed (within its startup budget, all at once).
    /// The data directory of each plugin stdio server about to start is
    /// created first ([`crate::plugins::prepare_data_dirs`]). Only the
    /// builder ([`Host::builder`]) starts a host.
    pub(crate) fn start_where(
        config: &Config,
        options: RuntimeOptions,
        select: impl Fn(&str) -> bool,
        origin: Arc<Origin>,
        moving: Moving,
    ) -> Self {
        let config = &*crate::plugins::prepare_data_dirs(config, &select);
        // What the host's logins read and receive is hidden in every
        // server's words, as its configured values are.
        let mut options = options;
        options.host.secrets = crate::secrets::book().clone();
        // The one place that asks which executor: everything below is
        // written once over the trait.
        let mut executor: Box<dyn Executor> = match origin.kind {
            #[cfg(feature = "smol")]
            RuntimeKind::Smol => {
                let agent = match &moving {
                    Moving::Agent(executor) => Some(Arc::clone(executor)),
                    Moving::OnCalls | Moving::Thread => None,
                };
                Box::new(SmolExecutor::start(config, options, select, agent))
            }
            #[cfg(feature = "blocking")]
            RuntimeKind::Blocking => Box::new(BlockingExecutor::start(config, options, select)),
        };
        if let Moving::Thread = moving {
            executor.keep_moving();
        }
        Self {
            executor,
            origin,
            watched: Watched::default(),
        }
    }

    /// Keeps the sessions moving between calls (see
    /// [`crate::HostBuilder::executor_thread`]).
    pub(crate) fn with_executor_thread(mut self) -> Self {
        self.executor.keep_moving();
        self
    }

    /// Starts the server `id` of `config` into this running host, beside
    /// the servers already running, which are not touched: a server left
    /// out of the start (deferred for its browser login, say) or one that
    /// failed to start. Its entry in `config` replaces the one the host
    /// started with, so a config prepared again after a login
    /// ([`Host::reconnect`] does) brings the new token.
    /// Returns once the server is ready or failed (within its startup
    /// budget), with its view; its tools join [`Host::tools`]. The host's
    /// options (services, authorizer, workspace, transcript) apply as at
    /// start. Call it from a thread that lives as long as the sessions: a
    /// stdio server is tied to the thread that spawns it.
    pub fn start_server(
        &mut self,
        id: &str,
        config: &Config,
    ) -> Result<ServerView, rho_proto_core::runtime::StartServerError> {
        let config = &*crate::plugins::prepare_data_dirs(config, &|s: &str| s == id);
        self.executor.start_server(id, config)
    }

    /// Closes the session of server `id` and waits for it to end (within
    /// its grace period), leaving the other servers alone: the server is
    /// `NotStarted` again, its tools leave [`Host::tools`], and
    /// [`Host::start_server`] can start it again (a new login, say).
    /// `false` when it had no session.
    pub fn stop_server(&mut self, id: &str) -> bool {
        self.executor.stop_server(id)
    }

    /// Which executor drives this host's sessions.
    pub fn kind(&self) -> RuntimeKind {
        self.executor.kind()
    }

    /// Every configured server, in configuration order.
    pub fn servers(&self) -> Vec<ServerView> {
        self.executor.sessions().servers()
    }

    /// One server, by identity.
    pub fn server(&self, id: &str) -> Option<ServerView> {
        self.executor.sessions().server(id)
    }

    /// The exported tools of every ready server, as registered at startup:
    /// never a tool for a server's MCP App only (its `_meta.ui.visibility`
    /// lacks `"model"`; `ReadyReport::app_only_tools` names them).
    pub fn tools(&self) -> &ToolRegistry {
        self.executor.sessions().tools()
    }

    /// The exported tools as the next turn should see them: revised
    /// definitions after `tools/list_changed`, withdrawn tools marked.
    pub fn current_tools(&self) -> Vec<ExportedTool> {
        self.executor.sessions().current_tools()
    }

    /// The exported tools as an agent defers them: one line each (name,
    /// server, title, summary, schema size), searchable
    /// ([`ToolIndex::search`]); built from [`Host::current_tools`].
    pub fn tool_index(&self) -> ToolIndex {
        ToolIndex::new(&self.current_tools())
    }

    /// The system-prompt text of every server's instructions, each fenced
    /// and labelled as documentation from that server.
    pub fn instructions_prompt(&self) -> Option<String> {
        self.executor.sessions().instructions_prompt()
    }

    /// Calls a tool and waits for its result: `target` is an exported
    /// name (`"mcp__<server>__<tool>"`, as the model sees it) or a
    /// server's own tool (`("server", "tool")`, under the server's
    /// allow/deny filter); `options` add a progress callback, a
    /// [`Cancel`] and a time limit of the call's own ([`CallOptions`];
    /// `CallOptions::new()` adds none). A result with `isError` is still
    /// `Ok`: the tool ran and failed, which the caller reports as a tool
    /// failure. A tool for a server's MCP App only is refused
    /// (`ToolCallError::AppOnly`). Once the cancel token is cancelled the
    /// server is told (as the session's protocol era says) and the call
    /// ends with the core's own `CallError::Cancelled`, whose notice says
    /// whether the server was told.
    pub fn call<'a>(
        &self,
        target: impl Into<CallTarget<'a>>,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, ToolCallError> {
        self.executor.call(target.into(), arguments, options)
    }

    /// The most of one answer of `server` a model reads
    /// (`max_output_bytes` in its config; the default for a server this
    /// host does not know).
    pub fn max_output_bytes(&self, server: &str) -> usize {
        self.server(server)
            .and_then(|view| view.config.map(|c| c.max_output_bytes))
            .unwrap_or(DEFAULT_MAX_OUTPUT_BYTES)
    }

    /// What a model reads of a tool result from `server`: every content
    /// block rendered (text, images and audio as descriptors, resource
    /// links, embedded resources, structured content), capped at the
    /// server's `max_output_bytes`; and what a tool card shows.
    pub fn render_result(&self, server: &str, result: &CallToolResult) -> RenderedResult {
        render_capped(result, self.max_output_bytes(server))
    }

    /// Gets prompt `name` of `server` with `arguments`: the user turn the
    /// model gets (its messages flattened, capped at the server's
    /// `max_output_bytes`), with the result it was made from.
    pub fn prompt_turn(
        &self,
        server: &str,
        name: &str,
        arguments: BTreeMap<String, String>,
        cancel: &Cancel,
    ) -> Result<PromptTurn, AttachError> {
        let request = FeatureRequest::GetPrompt(GetPromptParams {
            name: name.to_owned(),
            arguments,
        });
        let as_sent = self.request_until(server, request, cancel)?;
        let result = GetPromptResult::from_value(&as_sent).map_err(|e| AttachError::Malformed {
            server: server.to_owned(),
            what: "prompt",
            reason: e.to_string(),
        })?;
        let turn = flatten(&result, self.max_output_bytes(server));
        Ok(PromptTurn {
            turn,
            result,
            as_sent,
        })
    }

    /// Reads resource `uri` of `server`: what a message carries (text,
    /// bodies or descriptors of blobs, capped at the server's
    /// `max_output_bytes`, or one image as sent), with the result it was
    /// made from.
    pub fn attach_resource(
        &self,
        server: &str,
        uri: &str,
        cancel: &Cancel,
    ) -> Result<Attached, AttachError> {
        let request = FeatureRequest::ReadResource(ReadResourceParams {
            uri: uri.to_owned(),
        });
        let as_sent = self.request_until(server, request, cancel)?;
        let result =
            ReadResourceResult::from_value(&as_sent).map_err(|e| AttachError::Malformed {
                server: server.to_owned(),
                what: "resource",
                reason: e.to_string(),
            })?;
        if result.contents.is_empty() {
            return Err(AttachError::Empty {
                server: server.to_owned(),
                uri: uri.to_owned(),
            });
        }
        let attachment = attachment(&result, self.max_output_bytes(server));
        Ok(Attached {
            attachment,
            result,
            as_sent,
        })
    }

    /// Sends a prompt, resource or completion request to `server` and
    /// waits for the result as sent (the feature modules of
    /// `rho_proto_core::features` read it), as `options` say: ended early
    /// by its cancel token (then the server is told and it ends as
    /// cancelled), within its own time limit. A request reports no
    /// progress.
    pub fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        options: CallOptions<'_>,
    ) -> Result<Value, ToolCallError> {
        self.executor.request(server, request, options)
    }

    /// Subscribes to resource `uri` of `server`: from now on, each time the
    /// server says it changed, the host's
    /// [`crate::HostServices::resource_updates`] sink hears of it (with
    /// [`crate::resource_update_channel`], the receiver yields a
    /// [`crate::ResourceUpdated`]), coalesced until the host looks; read it
    /// again with [`Host::attach_resource`] when convenient. Returns once the
    /// server agreed (2025 era: `resources/subscribe` answered; 2026 era: a
    /// `subscriptions/listen` carrying the URI acknowledged with it).
    /// Subscribing to a resource held already succeeds at once.
    ///
    /// Fails, naming the server, when the server did not declare
    /// `resources.subscribe` (`ToolCallError::NotCallable`), when it already
    /// holds [`crate::MAX_SUBSCRIPTIONS_PER_SERVER`] subscriptions (the same),
    /// or when it refused (`CallError::Rpc`, or in the 2026 era
    /// `CallError::SubscriptionNotAgreed`).
    ///
    /// The subscription is the host's, not one session's: a stdio server
    /// whose process died and is started again is subscribed anew, and the
    /// sink hears `WatchNotice::Renewed` (read it again); [`Host::reconnect`]
    /// subscribes the new session too. When that cannot be done, or the
    /// server is not started again, the sink hears `WatchNotice::Ended`
    /// with the reason, and nothing more comes for it. Shutting the host
    /// down ends what it still holds: closing a 2025 session tells the
    /// server each (a `resources/unsubscribe`, within the close's bound);
    /// [`Host::stop_server`] ends its subscriptions with its session.
    pub fn subscribe_resource(
        &self,
        server: &str,
        uri: &str,
        options: CallOptions<'_>,
    ) -> Result<(), ToolCallError> {
        let request = FeatureRequest::SubscribeResource(SubscribeParams {
            uri: uri.to_owned(),
        });
        self.request(server, request, options)?;
        self.watched.insert(server, uri);
        Ok(())
    }

    /// Ends the subscription to resource `uri` of `server`: no update of it
    /// reaches the host from the moment it is sent, and the server is told
    /// (2025 era: `resources/unsubscribe`, answered; 2026 era: the
    /// subscription stream replaced by one without it). Unsubscribing from a
    /// resource not subscribed to succeeds at once.
    pub fn unsubscribe_resource(
        &self,
        server: &str,
        uri: &str,
        options: CallOptions<'_>,
    ) -> Result<(), ToolCallError> {
        self.watched.remove(server, uri);
        let request = FeatureRequest::UnsubscribeResource(SubscribeParams {
            uri: uri.to_owned(),
        });
        self.request(server, request, options).map(drop)
    }

    /// [`Host::request`] ended early only by `cancel`: the composed
    /// requests below (prompt turns, attachments, skills) take a token,
    /// and each of their requests gets it.
    fn request_until(
        &self,
        server: &str,
        request: FeatureRequest,
        cancel: &Cancel,
    ) -> Result<Value, ToolCallError> {
        self.request(server, request, CallOptions::new().cancel(cancel))
    }

    /// Every skill `server` lists (SEP-2640, `skills/list` page by page),
    /// reading none of their files. Written once for both executors: each
    /// page is a [`Host::request`].
    pub fn list_skills(&self, server: &str, cancel: &Cancel) -> Result<SkillListing, SkillError> {
        let mut listing = SkillListing::default();
        let mut next = Some(SkillListing::first_request());
        while let Some(request) = next {
            let page = self.request_until(server, request, cancel)?;
            next = listing
                .add_page(&page)
                .map_err(|reason| SkillError::malformed_listing(server, reason))?;
        }
        Ok(listing)
    }

    /// Loads a listed skill: its `SKILL.md`, read now and verified against
    /// `entry` (size, digest, frontmatter); on any mismatch the content is
    /// dropped and the error names the check.
    pub fn load_skill(
        &self,
        server: &str,
        entry: &SkillEntry,
        cancel: &Cancel,
    ) -> Result<LoadedSkill, SkillError> {
        let refused = |check| SkillError::refused(server, entry.name(), check);
        let request = entry.load_request().map_err(refused)?;
        let result = self.request_until(server, request, cancel)?;
        entry.verify_load(&result).map_err(refused)
    }

    /// Reads the file `uri` of a loaded skill, verified against the entry
    /// it was loaded from; a file that entry does not list is refused
    /// unread.
    pub fn read_skill_file(
        &self,
        server: &str,
        skill: &LoadedSkill,
        uri: &str,
        cancel: &Cancel,
    ) -> Result<Vec<u8>, SkillError> {
        let refused = |check| SkillError::refused(server, skill.entry.name(), check);
        let request = skill.file_request(uri).map_err(refused)?;
        let result = self.request_until(server, request, cancel)?;
        skill.verify_file(uri, &result).map_err(refused)
    }

    /// Closes every session and waits for each server to exit (each within
    /// its grace period, concurrently). Dropping the host does the same.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.executor.shutdown();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The async face of a [`Host`]: the same calls as futures, awaitable on
/// any executor (smol, tokio, a GUI's own). On the smol executor a call is
/// the session's own future, with the host's executor thread moving the
/// sessions, or the agent's own executor when the sessions run on it
/// ([`crate::HostBuilder::smol_executor`]: then nothing crosses a thread);
/// on the blocking executor the call runs on smol's blocking pool and the
/// future waits for it. Either way the awaiting executor
/// runs none of rho's IO, and dropping a call's future leaves the call to
/// its `cancel` token (cancel it to stop the call; the server is told).
#[derive(Clone)]
pub struct AsyncHost {
    host: Arc<Host>,
}

impl Host {
    /// This host's async face. A smol host gets its executor thread (see
    /// [`crate::HostBuilder::executor_thread`]), since the awaiting executor
    /// does not run rho's, unless its sessions run on the agent's own
    /// executor ([`crate::HostBuilder::smol_executor`]).
    pub fn into_async(self) -> AsyncHost {
        AsyncHost {
            host: Arc::new(self.with_executor_thread()),
        }
    }
}

impl AsyncHost {
    /// The synchronous face, for what needs no waiting (the servers, the
    /// tools, the instructions).
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// [`Host::call`], awaited. The options are owned (`'static`): on
    /// the blocking executor the call runs on another thread.
    pub async fn call<'a>(
        &self,
        target: impl Into<CallTarget<'a>>,
        arguments: Value,
        options: CallOptions<'static>,
    ) -> Result<CallToolResult, ToolCallError> {
        let target = target.into();
        #[cfg(feature = "smol")]
        if let Some(smol) = self.host.executor.smol() {
            return smol.submit(ToolCall::new(target, arguments), options).await;
        }
        let host = Arc::clone(&self.host);
        let target = OwnedTarget::from(target);
        smol::unblock(move || host.call(target.as_target(), arguments, options)).await
    }

    /// [`Host::request`], awaited.
    pub async fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        options: CallOptions<'static>,
    ) -> Result<Value, ToolCallError> {
        #[cfg(feature = "smol")]
        if let Some(smol) = self.host.executor.smol() {
            return smol
                .submit(ServerRequest::new(server, request), options)
                .await;
        }
        let host = Arc::clone(&self.host);
        let server = server.to_owned();
        smol::unblock(move || host.request(&server, request, options)).await
    }

    /// [`Host::subscribe_resource`], awaited.
    pub async fn subscribe_resource(
        &self,
        server: &str,
        uri: &str,
        options: CallOptions<'static>,
    ) -> Result<(), ToolCallError> {
        let request = FeatureRequest::SubscribeResource(SubscribeParams {
            uri: uri.to_owned(),
        });
        self.request(server, request, options).await?;
        self.host.watched.insert(server, uri);
        Ok(())
    }

    /// [`Host::unsubscribe_resource`], awaited.
    pub async fn unsubscribe_resource(
        &self,
        server: &str,
        uri: &str,
        options: CallOptions<'static>,
    ) -> Result<(), ToolCallError> {
        self.host.watched.remove(server, uri);
        let request = FeatureRequest::UnsubscribeResource(SubscribeParams {
            uri: uri.to_owned(),
        });
        self.request(server, request, options).await.map(drop)
    }

    /// Closes every session and waits for the servers to exit, once the
    /// last clone of this face is dropped or shut down; until then the
    /// other clones keep the sessions.
    pub async fn shutdown(self) {
        if let Ok(host) = Arc::try_unwrap(self.host) {
            smol::unblock(move || host.shutdown()).await;
        }
    }
}

/// A [`CallTarget`] that owns its names, to move to another thread.
enum OwnedTarget {
    Exported(String),
    Tool { server: String, tool: String },
    FromApp { server: String, tool: String },
}

impl From<CallTarget<'_>> for OwnedTarget {
    fn from(target: CallTarget<'_>) -> Self {
        match target {
            CallTarget::Exported(name) => OwnedTarget::Exported(name.to_owned()),
            CallTarget::Tool { server, tool } => OwnedTarget::Tool {
                server: server.to_owned(),
                tool: tool.to_owned(),
            },
            CallTarget::FromApp { server, tool } => OwnedTarget::FromApp {
                server: server.to_owned(),
                tool: tool.to_owned(),
            },
        }
    }
}

impl OwnedTarget {
    fn as_target(&self) -> CallTarget<'_> {
        match self {
            OwnedTarget::Exported(name) => CallTarget::Exported(name),
            OwnedTarget::Tool { server, tool } => CallTarget::Tool { server, tool },
            OwnedTarget::FromApp { server, tool } => CallTarget::FromApp { server, tool },
        }
    }
}
