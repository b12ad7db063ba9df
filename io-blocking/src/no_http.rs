//! The executor without its `http` feature: a host that reaches only
//! stdio servers leaves ureq, rustls and the system's certificate store
//! out of its binary.
//!
//! [`HttpClient`] here has no values, so the connection code that carries
//! HTTP outputs compiles unchanged and can never run; a server configured
//! for Streamable HTTP fails to start with
//! [`TransportSetupError::NotBuiltIn`], naming the feature.

use rho_proto_core::http::{ExchangeId, HttpRequest};
use rho_proto_core::runtime::driving::TransportSetupError;

use crate::driver::NotStarted;

/// The HTTP half of a connection, which this build cannot have.
pub(crate) enum HttpClient {}

impl HttpClient {
    pub(crate) fn send(&self, _request: HttpRequest) -> Result<(), NotStarted> {
        match *self {}
    }

    pub(crate) fn abort(&self, _exchange: ExchangeId) {
        match *self {}
    }

    pub(crate) fn shutdown(self) {
        match self {}
    }
}

/// Why `server` cannot start in this build.
pub(crate) fn not_built_in(server: &str) -> TransportSetupError {
    TransportSetupError::http_not_built_in(server, "rho-io-blocking")
}
