//! OAuth 2.1 for remote MCP servers, as data: the building blocks of the
//! authorization code flow with PKCE that the 2025-11-25 authorization spec
//! asks of a client, each pure and unit-tested.
//!
//! - [`challenge`]: `WWW-Authenticate` challenges from a 401/403.
//! - [`discovery`]: where the protected resource and authorization server
//!   metadata are, and the checks a document passes before it is trusted
//!   (issuer, resource, S256, https).
//! - [`authorize`]: scope selection, the authorization URL, and the checks
//!   a callback passes (state, error, RFC 9207 `iss`).
//! - [`pkce`]: the S256 verifier/challenge pair and `state`, from random
//!   bytes the adapter passes in.
//! - [`register`]: dynamic client registration for a native client.
//! - [`token`]: token requests for each grant and client authentication,
//!   and token responses read back.
//!
//! Implementation note: these are the parts of the flow that decide; the
//! state machine that drives them over HTTP exchanges (as `http` drives a
//! session), the credential store and the loopback listener build on them.

pub mod authorize;
pub mod challenge;
pub mod discovery;
pub mod pkce;
pub mod register;
pub mod token;
