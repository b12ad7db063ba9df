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

#[cfg(test)]
mod tests {
    use rho_proto_core::runtime::Sessions as _;
    use rho_proto_core::runtime::driving::StartupError;
    use rho_proto_core::runtime::status::{FailureKind, ServerStatus};

    use crate::{Runtime, options_from_process_env};

    /// A server configured for Streamable HTTP fails to start in a build
    /// without the feature, as `not_built_in` says.
    #[test]
    fn an_http_server_fails_to_start_naming_the_feature() {
        let toml =
            "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/\"";
        let config = rho_proto_core::config::parse(toml, "rho.toml").expect("valid config");
        let runtime = Runtime::start(&config, options_from_process_env(), |_| true);
        let servers = runtime.servers();
        runtime.shutdown();
        let failed = ServerStatus::Failed {
            error: StartupError::from(super::not_built_in("remote")).to_string(),
            kind: FailureKind::NotBuiltIn,
        };
        assert_eq!(
            servers.iter().map(|s| &s.status).collect::<Vec<_>>(),
            [&failed]
        );
    }
}
