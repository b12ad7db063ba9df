//! rho's MCP client on smol.
//!
//! This crate drives the sans-IO core in `rho-proto-core` with async IO on
//! a host-owned [`smol::Executor`]: each server is one session, behind a
//! short lock, and one task that waits for it. A caller issues its call
//! into the session on its own turn (the request is written to the server
//! at once); the task races transport input, the host's other commands
//! and one timer, and answers the caller. Any number of servers share
//! whatever threads run the executor — the `rho` CLI runs it on its main
//! thread only.
//!
//! # What it offers
//!
//! [`Runtime`] is an executor's whole contract with the host library, and
//! nothing more: start the selected servers, start or stop one late, the
//! servers as they stand (`rho_proto_core::runtime::Sessions`), one
//! `submit` for a job (a tool call or a feature request, each a
//! `rho_proto_core::runtime::Job`) waited for as its `CallOptions` say,
//! and shutdown. An agent embeds it through `rho_host::Host`, which writes
//! everything else (prompt turns, attachments, rendering, skills, logins)
//! once over both executors; a host that drives this crate directly
//! gets the same calls as futures.
//!
//! # Layering
//!
//! This crate stands on `rho-proto-core` (the protocol, the
//! [`RuntimeOptions`], the host's services, the backpressure counters)
//! and `rho-os` (starting and killing a stdio server), and on nothing of
//! its sibling `rho-io-blocking`.
//!
//! # HTTP: hyper on async-io
//!
//! Streamable HTTP exchanges are tasks on the same executor, over a small
//! pool of kept-alive HTTP/1.1 connections per session (hyper's
//! connection API over async-io, rustls for TLS): sequential calls share
//! one connection, the GET stream holds its own, and no exchange crosses
//! a thread. Redirects are never followed, every status is data, and
//! bodies are read as they arrive, with the same URL policy, limits and
//! timeouts as the thread executor. The `http` module says why this
//! stack and how the pool behaves.
//!
//! It is the `http` feature, on by default. A host that reaches only
//! stdio servers can build without it (`default-features = false`):
//! hyper, rustls and the system's certificate store stay out of its
//! binary (about 0.6 MB of code), and a server configured for Streamable
//! HTTP fails to start with a reason that names the feature.
//!
//! ```no_run
//! use std::sync::Arc;
//! use rho_io_smol::{Runtime, options_from_process_env};
//! use rho_proto_core::runtime::{CallOptions, ToolCall};
//! let config = rho_proto_core::config::parse(
//!     "[mcp.servers.everything]\ntransport = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-everything\"]\n",
//!     "rho.toml",
//! ).expect("valid config");
//! let executor = Arc::new(smol::Executor::new());
//! smol::block_on(executor.run(async {
//!     let runtime = Runtime::start(&executor, &config, options_from_process_env(), |_| true).await;
//!     let result = runtime
//!         .submit(
//!             ToolCall::new("mcp__everything__echo", serde_json::json!({"message": "hi"})),
//!             CallOptions::new(),
//!         )
//!         .await
//!         .expect("call succeeds");
//!     println!("{}", result.text());
//!     runtime.shutdown().await;
//! }));
//! ```

mod driver;
#[cfg(feature = "http")]
pub mod http;
mod inbox;
#[cfg(not(feature = "http"))]
mod no_http;
mod reply;
mod run;
mod runtime;
mod stdio;

pub use rho_os::options_from_process_env;
pub use rho_proto_core::host;
pub use rho_proto_core::host::RuntimeOptions;
pub use rho_proto_core::runtime::{ServerView, ToolCallError};
pub use run::{block_on, block_on_ticking};
pub use runtime::Runtime;
