//! What an agent that embeds rho's MCP runtime needs beyond the runtime
//! itself: everything `rho mcp` does, as a library.
//!
//! The runtime (`rho-proto-core`, driven by `rho-io-smol` or
//! `rho-io-blocking`) starts servers, runs the protocol and exports tools;
//! this crate adds the host's side, in the order an agent meets it:
//!
//! 1. **Config**: [`config::load`] finds `~/.rho/config.toml` (or the path
//!    the host names) and merges the servers of the Agent Plugins it lists
//!    ([`plugins`]), so plugin servers are ordinary servers.
//! 2. **Services**: the host's answers to what servers ask (forms,
//!    sampling consent) are its own `Responder`, or [`questions::channel`]
//!    to take each question as a value and answer it later from its UI
//!    (each says which server and which call asks); [`sampling::services`]
//!    adds the configured sampling command and the usage ledger.
//! 3. **Connect**: [`Host::builder`] takes the config, the executor, the
//!    options and services, the servers to start and how a login may
//!    reach a person; [`HostBuilder::connect`] applies the stored OAuth
//!    logins, logs in first where a person can and must, installs the
//!    authorizer that answers a token refused mid-session ([`reauth`]),
//!    and starts the servers. The OAuth modules point one way, from
//!    the store up: [`credentials`] is the store (the file, its lock, the
//!    clock); beside the requests, [`oauth_http`] is the HTTP exchange
//!    every OAuth request goes through and [`dpop`] the keys DPoP-bound
//!    tokens prove possession of, with [`grants`] the secrets a grant
//!    reads from files or the environment and [`jwt_key`] the key a
//!    `private_key_jwt` client signs with; above them, [`stored_tokens`]
//!    applies stored logins to a config (refreshing them) and [`login`]
//!    is the login itself; [`reauth`] and the builder are on top.
//!    [`auth_status`] is what `list` reports, and [`secrets`] the book of
//!    every secret rho reads or holds for a server, which its runtime
//!    redacts.
//! 4. **Drive**: [`Host`] is one face over either executor
//!    ([`RuntimeKind`]): the tools to hand a model
//!    ([`Host::current_tools`]), the servers' instructions for the system
//!    prompt ([`Host::instructions_prompt`]), calls ([`Host::call`], with
//!    [`CallOptions`] for progress, a [`Cancel`] and a time limit),
//!    prompts, resources and completions ([`Host::request`] with a
//!    [`FeatureRequest`]; [`Host::prompt_turn`] and
//!    [`Host::attach_resource`] give what a message carries, capped),
//!    skills, a server started again with the logins as they are now
//!    ([`Host::reconnect`], after a login through [`Host::logins`]), and
//!    shutdown.
//!
//! Every type those methods take or return is re-exported here, so an
//! agent depends on this crate alone.
//!
//! ```no_run
//! use rho_host::{CallOptions, Cancel, Host, RuntimeKind, config};
//!
//! let loaded = config::load(None).expect("a readable config");
//! let services = rho_host::sampling::services(None, loaded.config.sampling_command.clone());
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

pub mod auth_status;
pub mod config;
mod connect;
pub mod credentials;
pub mod dpop;
mod executor;
mod facade;
pub mod grants;
pub mod jwt_key;
pub mod login;
pub mod names;
pub mod oauth_http;
pub mod parameters;
pub mod plugins;
pub mod questions;
pub mod reauth;
pub mod sampling;
pub mod secrets;
pub mod stored_tokens;
#[cfg(test)]
mod test_support;

pub use connect::{Connected, Connecting, HostBuilder, LoginOutcome, Logins, Reconnected};
pub use executor::RuntimeKind;
pub use facade::{AsyncHost, AttachError, Attached, Host, PromptTurn};
pub use rho_os::options_from_process_env;

// The vocabulary of the host's methods: what they take and return, and
// what an agent matches on, so that it needs no `rho_proto_core` path.
pub use rho_proto_core::config::Config;
pub use rho_proto_core::features::FeatureRequest;
pub use rho_proto_core::features::completions::CompleteParams;
pub use rho_proto_core::features::content::RenderedResult;
pub use rho_proto_core::features::elicitation::{FieldKind, Form, FormAnswer};
pub use rho_proto_core::features::prompts::{GetPromptParams, GetPromptResult};
pub use rho_proto_core::features::resources::{
    Attachment, ReadResourceParams, ReadResourceResult, ResourceContents,
};
pub use rho_proto_core::features::skills::{LoadedSkill, SkillEntry, SkillListing};
pub use rho_proto_core::host::{Asked, HostServices, Responder, RuntimeOptions};
pub use rho_proto_core::remedy::{
    PlainWords, Remedy, RemedyWords, install_words as install_remedy_words,
};
pub use rho_proto_core::runtime::index::{Hit, IndexEntry, ToolIndex};
pub use rho_proto_core::runtime::registry::{ExportedTool, ToolRegistry};
pub use rho_proto_core::runtime::skills::SkillError;
pub use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
pub use rho_proto_core::runtime::{
    CallOptions, CallTarget, Cancel, Cancelled, OnCancel, ServerView, StartServerError,
    ToolCallError,
};
pub use rho_proto_core::session::{CallError, CancelNotice, Progress};
pub use rho_proto_core::wire::protocol::CallToolResult;
