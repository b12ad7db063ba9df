//! The executor without its `http` feature: a host that reaches only
//! stdio servers leaves hyper, rustls and the system's certificate store
//! out of its binary.
//!
//! [`HttpIo`] here has no values, so the session code that carries HTTP
//! outputs compiles unchanged and can never run; a server configured for
//! Streamable HTTP fails to start with
//! [`TransportSetupError::NotBuiltIn`], naming the feature.

use rho_proto_core::connection::HttpInput;
use rho_proto_core::http::{ExchangeId, HttpRequest};
use rho_proto_core::runtime::driving::TransportSetupError;

/// The HTTP half of a session, which this build cannot have.
pub(crate) enum HttpIo {}

impl HttpIo {
    pub(crate) fn send(&mut self, _request: HttpRequest) {
        match *self {}
    }

    pub(crate) fn handled(&mut self, _exchange: ExchangeId, _input: &HttpInput) {
        match *self {}
    }

    pub(crate) fn abort(&mut self, _exchange: ExchangeId) {
        match *self {}
    }

    pub(crate) fn shutdown(&mut self) {
        match *self {}
    }
}

/// Why `server` cannot start in this build.
pub(crate) fn not_built_in(server: &str) -> TransportSetupError {
    TransportSetupError::http_not_built_in(server, "rho-io-smol")
}
