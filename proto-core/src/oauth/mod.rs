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
//! - [`assertion`]: the signed JWT of `private_key_jwt` client
//!   authentication (RFC 7523), signed by the host's key.
//! - [`exchange`]: the assertion grants: a JWT as the grant (RFC 7523,
//!   workload identity federation) and the RFC 8693 token exchange of an
//!   enterprise identity assertion for one (SEP-990).
//! - [`dpop`]: DPoP (RFC 9449) proofs of possession, server nonces, and
//!   when a login binds its tokens to a key of the host's.
//!
//! - [`store`]: what is kept between runs, and the trait a host keeps it with.
//! - [`flow`]: one login as a sans-IO state machine over those pieces
//!   (requests out, responses and the callback in, tokens out), and the
//!   refresh of stored credentials.
//!
//! The session never runs a login itself: a request refused mid-session
//! (401, or 403 `insufficient_scope`) becomes a question to the host's
//! [`crate::host::Authorizer`] (see [`crate::http`]), which refreshes or
//! logs in with these pieces and hands back a new `Authorization` header.

pub mod assertion;
pub mod authorize;
pub mod challenge;
pub mod discovery;
pub mod dpop;
pub mod exchange;
pub mod flow;
pub mod pkce;
pub mod register;
pub mod store;
pub mod token;
