//! rho's MCP client on plain threads.
//!
//! This crate drives the sans-IO core in `rho-proto-core` with blocking IO.
//! Each server's session sits behind a lock and is driven by whichever
//! thread has something for it: a caller writes its call to the child's
//! stdin itself, and the stdout reader (or an HTTP worker) hands the answer
//! straight to the waiting caller. Per server there is a driver thread that
//! only sleeps until the next deadline and tears the session down; a stdio
//! child has three pipe threads (stdout, stdin for what the pipe could not
//! take at once, stderr), and an HTTP server a small pool of persistent
//! workers that reuse keep-alive connections.
//!
//! [`Runtime`] is an executor's whole contract with the host library, and
//! nothing more: start the selected servers, start or stop one late, the
//! servers as they stand (`rho_proto_core::runtime::Sessions`), one
//! `submit` for a job (a tool call or a feature request, each a
//! `rho_proto_core::runtime::Job`) waited for as its `CallOptions` say,
//! and shutdown. An agent embeds it through `rho_host::Host`, which writes
//! everything else (prompt turns, attachments, rendering, skills, logins)
//! once over both executors; a host that drives this crate directly
//! gets the same calls, blocking the calling thread.
//!
//! Like `rho-io-smol`, its sibling, it stands on `rho-proto-core` (the
//! protocol, the [`RuntimeOptions`], the host's services, the backpressure
//! counters) and `rho-os` (starting and killing a stdio server). Its ureq
//! exchange runner (`run_exchange`) is public: the host library's OAuth
//! flows use it.
//!
//! Streamable HTTP is the `http` feature, on by default. A host that
//! reaches only stdio servers can build without it (`default-features =
//! false`): ureq, rustls and the system's certificate store stay out of
//! its binary, and a server configured for Streamable HTTP fails to start
//! with a reason that names the feature.
//!
//! ```no_run
//! use rho_io_blocking::{Runtime, options_from_process_env};
//! use rho_proto_core::runtime::{CallOptions, ToolCall};
//! let config = rho_proto_core::config::parse(
//!     "[mcp.servers.everything]\ntransport = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-everything\"]\n",
//!     "rho.toml",
//! ).expect("valid config");
//! let runtime = Runtime::start(&config, options_from_process_env(), |_| true);
//! let result = runtime
//!     .submit(
//!         ToolCall::new("mcp__everything__echo", serde_json::json!({"message": "hi"})),
//!         CallOptions::new(),
//!     )
//!     .expect("call succeeds");
//! println!("{}", result.text());
//! runtime.shutdown();
//! ```

mod backlog;
mod driver;
#[cfg(feature = "http")]
pub mod http_client;
#[cfg(not(feature = "http"))]
mod no_http;
mod reply;
mod runtime;
mod stdio;

#[cfg(feature = "http")]
pub use http_client::{new_agent, run_exchange};
pub use rho_os::options_from_process_env;
pub use rho_proto_core::host;
pub use rho_proto_core::host::RuntimeOptions;
pub use rho_proto_core::runtime::{ServerView, ToolCallError};
pub use runtime::Runtime;
