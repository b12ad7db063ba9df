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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
        let executor = Arc::new(smol::Executor::new());
        let servers = crate::block_on(&executor, async {
            let runtime =
                Runtime::start(&executor, &config, options_from_process_env(), |_| true).await;
            let servers = runtime.servers();
            runtime.shutdown().await;
            servers
        });
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
