//! The wire: bytes to messages and back.
//!
//! [`framing`] cuts the stdio transport's byte stream into lines and
//! [`sse`] a Streamable HTTP event stream into events, both bounded in
//! memory; [`jsonrpc`] parses and writes JSON-RPC 2.0 envelopes; and
//! [`protocol`] holds the MCP message shapes the client reads and writes.
//! Nothing here knows which server it talks to or what state a session is
//! in: that is [`crate::session`]'s business.

pub mod framing;
pub mod jsonrpc;
pub mod protocol;
pub mod sse;
