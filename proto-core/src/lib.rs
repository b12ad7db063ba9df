//! The sans-IO protocol core of rho's MCP client.
//!
//! Everything that decides what to say to an MCP server, and what a server's
//! words mean, lives here; nothing here touches a socket, a process, a clock,
//! the environment or a random generator. Time comes in as `now: Instant`,
//! bytes come in through `handle_*` methods, and everything the core wants
//! done comes out through `poll_*` methods. Executors (`rho-io-blocking`
//! on threads, `rho-io-smol` on tasks) own the IO and drive the core; they
//! are siblings that each depend on this crate and on `rho-os` (the system
//! calls both make), never on each other. What they share beyond the
//! protocol is here too, as data or traits: the host's options and
//! services ([`host`]) and the backpressure counters ([`backlog`]).
//!
//! # The drain rule
//!
//! After every input (`handle_*`) or command (`call_tool`, `close`, ...),
//! the driver drains every output until it returns `None`:
//! [`session::Session::poll_transmit`] (bytes to write),
//! [`session::Session::poll_event`] (what the host must know), and then reads
//! [`session::Session::poll_timeout`] (when to call `handle_timeout` next;
//! [`session::Session::timeout_reason`] says which [`session::Timer`] it
//! is). Reading `poll_timeout` changes nothing. `now` comes from a
//! monotonic clock; a `now` earlier than the latest one a session saw is
//! clamped to that latest one.
//!
//! A whole session against a scripted server, in the host's shoes (the
//! example lives in `doc/drain_loop.md`, because only a host reads the
//! clock):
#![doc = include_str!("../doc/drain_loop.md")]

pub mod backlog;
pub mod config;
pub mod connection;
pub mod content;
pub mod driving;
pub mod elicitation;
pub mod env;
pub mod framing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod host;
pub mod http;
pub mod jsonrpc;
pub mod naming;
pub mod oauth;
pub mod process;
pub mod protocol;
pub mod redact;
pub mod registry;
pub mod runtime;
pub mod sampling;
pub mod session;
pub mod status;
pub mod stderr;
pub mod terminal;
pub mod transcript;
