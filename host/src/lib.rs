//! What an agent that embeds rho's MCP runtime needs beyond the runtime
//! itself: everything `rho mcp` does, as a library.
//!
//! The runtime (`rho-proto-core`, driven by `rho-io-smol` or
//! `rho-io-blocking`) starts servers, runs the protocol and exports tools;
//! this crate adds the host's side, in the order an agent meets it:
//!
//! 1. **Config**: [`LoadedConfig::load`] finds `~/.rho/config.toml` (or
//!    the path the host names) and merges the servers of the Agent
//!    Plugins it lists, so plugin servers are ordinary servers; a host
//!    with its own list of servers makes one [`From`] a [`Config`].
//! 2. **Services**: the host's answers to what servers ask (forms,
//!    sampling consent, URLs to open) are its own [`Responder`], or
//!    [`question_channel`] to take each question as a value and answer it
//!    later from its UI (each says which server and which call asks;
//!    [`question_channel_opening_urls`] for a host that opens a URL in the
//!    person's browser on their yes, which declares URL-mode
//!    elicitation); [`host_services`] adds the configured sampling command
//!    and the usage ledger. A call a server refuses until the person has
//!    visited some URLs (-32042) fails with
//!    [`CallError::UrlElicitationRequired`], carrying them checked
//!    ([`UrlRequest`]), so an agent can show them, open them on a yes
//!    ([`open_in_browser`]) and call again.
//! 3. **Connect**: [`Host::builder`] takes the config, the executor, the
//!    options and services, the servers to start and how a login may
//!    reach a person ([`LoginMode`], with an [`AuthorizationPrompt`] that
//!    shows the person a login's URL); [`HostBuilder::connect`] applies
//!    the stored OAuth logins (from the [`FileStore`] at
//!    `~/.rho/mcp-oauth.json`, or a store the host gives, such as a
//!    [`MemoryStore`]), logs in first where a person can and must,
//!    installs the [`Authorizer`] that answers a token refused
//!    mid-session, and starts the servers. [`auth_status`] is what
//!    `rho mcp list` reports of each server's login, and [`secret_book`]
//!    the book of every secret rho reads or holds for a server, which its
//!    runtime redacts (and a host's own logs may too).
//! 4. **Drive**: [`Host`] is one face over either executor
//!    ([`RuntimeKind`]): the tools to hand a model
//!    ([`Host::current_tools`]), the servers' instructions for the system
//!    prompt ([`Host::instructions_prompt`]), calls ([`Host::call`], with
//!    [`CallOptions`] for progress, a [`Cancel`] and a time limit),
//!    prompts, resources and completions ([`Host::request`] with a
//!    [`FeatureRequest`]; [`Host::prompt_turn`] and
//!    [`Host::attach_resource`] give what a message carries, capped),
//!    skills, subscriptions to resources ([`Host::subscribe_resource`],
//!    heard through the host services' `resource_updates` sink, or
//!    [`resource_update_channel`] to take each change as a
//!    [`ResourceUpdated`] value, coalesced until the host looks; renewed
//!    when a server is restarted or reconnected, and the host told when
//!    one ends without its asking: [`WatchNotice`]),
//!    a server started again with the logins as they are now
//!    ([`Host::reconnect`], after a login through [`Host::logins`]), and
//!    shutdown. [`AsyncHost`] ([`Host::into_async`]) is the same calls
//!    as futures; an agent on smol that gives the host its own executor
//!    ([`HostBuilder::smol_executor`]) awaits the sessions' own futures
//!    on it, at the cost of the executor driven directly.
//! 5. **Names a person types**: [`resolve_tool`] and [`server_tool`]
//!    take a tool the way `rho mcp` accepts it, with [`did_you_mean`]
//!    for a near miss; [`parameters`] reads a tool's input schema.
//!
//! Every type those methods take or return is re-exported here, so an
//! agent depends on this crate alone (and on `serde_json`, whose `Value`
//! carries a call's arguments and results and whose `json!` builds them).
//! What only an agent that replaces a service of its own needs beyond
//! that (a credential store of its own, an authorizer, the core's
//! protocol types) it takes from `rho_proto_core`.
//!
//! ```no_run
//! use rho_host::{CallOptions, Cancel, Host, LoadedConfig, RuntimeKind};
//!
//! let loaded = LoadedConfig::load(None).expect("a readable config");
//! let services = rho_host::host_services(None, loaded.config.sampling_command.clone());
//! let host = Host::builder(&loaded)
//!     .runtime(RuntimeKind::Smol)
//!     .services(services)
//!     .connect()
//!     .host;
//! let system = host.instructions_prompt().unwrap_or_default();
//! for tool in host.current_tools() {
//!     println!("{}: {}", tool.name, tool.description);
//! }
//! let cancel = Cancel::new(); // cancel() from any thread stops the call
//! let result = host.call(
//!     "mcp__everything__echo",
//!     serde_json::json!({"message": "hi"}),
//!     CallOptions::new()
//!         .on_progress(|progress| eprintln!("{progress:?}"))
//!         .cancel(&cancel),
//! );
//! # let _ = (system, result);
//! host.shutdown();
//! ```
//!
//! # Features
//!
//! - `smol` (default): [`RuntimeKind::Smol`], every session a task on one
//!   executor the host owns (`rho-io-smol`).
//! - `blocking` (default): [`RuntimeKind::Blocking`], a driver thread per
//!   session (`rho-io-blocking`).
//! - `http` (default): Streamable HTTP servers, on whichever executors
//!   are built. Without it a server configured for HTTP fails to start
//!   with a reason naming the feature, and so does an OAuth exchange
//!   (only an HTTP server has OAuth); the OAuth code itself stays, since
//!   the builder applies the stored logins to any config.
//!
//! At least one executor is needed (the crate does not build without
//! either, saying so). A kind whose feature is off is not in
//! [`RuntimeKind`] at all, so a host cannot ask for it and no start fails
//! at run time for want of it; spelled as text it parses to an error
//! naming the feature. The default kind ([`RuntimeKind::default`]) is
//! smol when it is built, else blocking.

#[cfg(not(any(feature = "smol", feature = "blocking")))]
compile_error!(
    "rho-host needs an executor to drive its sessions: enable its `smol` feature, its `blocking` feature, or both (the default)"
);

// Implementation note: the modules are private; what an agent uses is
// re-exported below (and `parameters` is public as the namespace of its
// schema readers). The OAuth modules point one way, from the store up:
// `credentials` is the store (the file, its lock, the clock); beside the
// requests, `oauth_http` is the HTTP exchange every OAuth request goes
// through and `dpop` the keys DPoP-bound tokens prove possession of, with
// `grants` the secrets a grant reads from files or the environment and
// `jwt_key` the key a `private_key_jwt` client signs with; above them,
// `stored_tokens` applies stored logins to a config (refreshing them) and
// `login` is the login itself; `reauth` (the authorizer for a token
// refused mid-session) and the builder (`connect`) are on top.
// `auth_status` is what `list` reports, and `secrets` the book of every
// secret rho reads or holds for a server.
pub mod apps;
mod auth_status;
mod config;
mod connect;
mod credentials;
mod dpop;
mod executor;
mod facade;
mod grants;
mod jwt_key;
mod login;
mod names;
mod oauth_http;
pub mod parameters;
mod plugins;
mod questions;
mod reauth;
mod sampling;
mod secrets;
mod stored_tokens;
#[cfg(test)]
mod test_support;
mod updates;

pub use auth_status::{AuthStatus, OAuthState, auth_status};
pub use config::LoadedConfig;
pub use connect::{Connected, Connecting, HostBuilder, LoginOutcome, Logins, Reconnected};
pub use credentials::{FileStore, MemoryStore, now_unix};
pub use executor::RuntimeKind;
pub use facade::{AsyncHost, AttachError, Attached, Host, PromptTurn};
pub use login::{
    AuthorizationPrompt, LoggedIn, LoginError, LoginMode, login_server, open_in_browser,
};
pub use names::{NameError, ToolTarget, did_you_mean, resolve_tool, server_tool};
pub use questions::{
    AcceptDefaults, Asking, PendingQuestion, QuestionReceiver, question_channel,
    question_channel_opening_urls,
};
pub use rho_os::options_from_process_env;
pub use rho_proto_core::features::resource_subscriptions::{WatchEnd, WatchNotice};
pub use sampling::host_services;
pub use secrets::book as secret_book;
pub use updates::{
    MAX_SUBSCRIPTIONS_PER_SERVER, ResourceUpdated, ResourceUpdates, resource_update_channel,
};

// Where rho keeps its own files (`~/.rho`, owner-only): the `rho` CLI's
// completion cache and config edits live there beside the credential
// store. Not part of the embedding API.
#[doc(hidden)]
pub use config::{ensure_private_dir, rho_dir};

// The vocabulary of the host's methods: what they take and return, what
// an agent matches on, and the services it may implement itself, so
// that it needs no `rho_proto_core` path.
pub use rho_proto_core::config::{Config, LogLevel, OAuthGrant, ServerConfig};
pub use rho_proto_core::features::FeatureRequest;
pub use rho_proto_core::features::completions::CompleteParams;
pub use rho_proto_core::features::content::RenderedResult;
pub use rho_proto_core::features::elicitation::{
    FieldKind, Form, FormAnswer, UrlAnswer, UrlRequest, UrlWarning,
};
pub use rho_proto_core::features::prompts::{GetPromptParams, GetPromptResult};
pub use rho_proto_core::features::resources::{
    Attachment, ReadResourceParams, ReadResourceResult, ResourceContents,
};
pub use rho_proto_core::features::skills::{LoadedSkill, SkillEntry, SkillListing};
pub use rho_proto_core::host::{
    Asked, Authorizer, HostServices, LogSink, Model, ModelError, ResourceSink, Responder,
    RuntimeOptions, TranscriptSink, UsageLedger,
};
pub use rho_proto_core::oauth::store::{CredentialStore, StoreError};
pub use rho_proto_core::remedy::{
    PlainWords, Remedy, RemedyWords, install_words as install_remedy_words,
};
pub use rho_proto_core::runtime::index::{Hit, IndexEntry, ToolIndex};
pub use rho_proto_core::runtime::registry::{ExportedTool, ToolRegistry};
pub use rho_proto_core::runtime::skills::SkillError;
pub use rho_proto_core::runtime::status::{FailureKind, ReadyReport, ServerStatus};
pub use rho_proto_core::runtime::{
    CallOptions, CallTarget, Cancel, Cancelled, OnCancel, ServerView, StartServerError,
    ToolCallError,
};
pub use rho_proto_core::session::{CallError, CancelNotice, Progress, ServerLog};
pub use rho_proto_core::text::redact::SecretBook;
pub use rho_proto_core::text::terminal::{sanitize, sanitize_line};
pub use rho_proto_core::wire::protocol::{CallToolResult, Tool};
pub use url::Url;
