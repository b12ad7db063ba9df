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
//! services ([`host`]) and the backpressure counters
//! ([`runtime::backlog`]).
//!
//! # Layers
//!
//! From the bottom up; a folder uses only what is above it in this list:
//!
//! - [`text`]: what is done to server-controlled text (sanitize, redact,
//!   bound), and [`config`]: the configuration model, a child's
//!   environment and the pure half of running a process (redaction reads
//!   the configured secrets).
//! - [`wire`]: bytes to JSON-RPC messages and MCP shapes; [`oauth`]: the
//!   authorization flow's pure building blocks.
//! - [`features`]: what tool results, elicitation and sampling mean.
//! - [`session`]: one server's lifecycle over messages; [`http`]:
//!   Streamable HTTP around a session (it asks [`host`]'s authorizer);
//!   [`connection`]: either transport behind one face; [`transcript`]:
//!   record and replay of a connection.
//! - [`runtime`]: many servers: inventory, exported registry, status, the
//!   executors' vocabulary and backpressure; [`host`]: what the host lends
//!   a runtime.
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

pub mod config;
pub mod connection;
pub mod features;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod host;
pub mod http;
pub mod oauth;
pub mod remedy;
pub mod runtime;
pub mod session;
pub mod text;
pub mod transcript;
pub mod wire;
