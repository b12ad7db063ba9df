//! rho's MCP client on smol.
//!
//! This crate drives the sans-IO core in `rho-proto-core` with async IO on
//! a host-owned [`smol::Executor`]: each server is one task that owns its
//! connection and races transport input, host commands and one timer. Any
//! number of servers share whatever threads run the executor — the `rho`
//! CLI runs it on its main thread only.
//!
//! # Layering
//!
//! This crate stands on `rho-proto-core` (the protocol, the
//! [`RuntimeOptions`], the host's services, the backpressure counters)
//! and `rho-os` (starting and killing a stdio server). Its one use of its
//! sibling `rho-io-blocking` is the ureq exchange runner described next.
//!
//! # HTTP: ureq on the blocking pool
//!
//! Streamable HTTP exchanges run with the same ureq code as the thread
//! executor (`rho_io_blocking::run_exchange_bounded`), on smol's blocking pool,
//! and hand their bytes to the session task through its channel. The
//! alternative — an HTTP/1.1 client over async-io with rustls through a
//! futures-io adapter — would be a second HTTP stack to keep correct
//! (redirect refusal, URL policy, timeouts, chunked bodies) for no gain a
//! CLI can measure: an MCP session holds a handful of exchanges at a time,
//! and the executor thread never blocks on any of them. Redirects are
//! never followed, every status is data, and bodies are read as they
//! arrive, exactly as on threads.
//!
//! ```no_run
//! use std::sync::Arc;
//! use rho_io_smol::{Runtime, options_from_process_env};
//! let config = rho_proto_core::config::parse(
//!     "[mcp.servers.everything]\ntransport = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-everything\"]\n",
//!     "rho.toml",
//! ).expect("valid config");
//! let executor = Arc::new(smol::Executor::new());
//! smol::block_on(executor.run(async {
//!     let runtime = Runtime::start(&executor, &config, options_from_process_env()).await;
//!     let result = runtime
//!         .call_tool("mcp__everything__echo", serde_json::json!({"message": "hi"}))
//!         .await
//!         .expect("call succeeds");
//!     println!("{}", result.text());
//!     runtime.shutdown().await;
//! }));
//! ```

mod driver;
mod runtime;
mod stdio;

pub use rho_os::options_from_process_env;
pub use rho_proto_core::host;
pub use rho_proto_core::host::RuntimeOptions;
pub use rho_proto_core::runtime::{ServerView, ToolCallError};
pub use runtime::Runtime;
