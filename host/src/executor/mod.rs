//! What differs between the two executors behind [`crate::Host`], as one
//! trait, so that every method of the host is written once over it (the
//! shape quinn keeps its runtimes in): start the selected servers (each
//! implementation's constructor), start or stop one, the servers as they
//! stand ([`Sessions`]), submit a call or a request and wait for it as
//! its [`CallOptions`] say, keep the sessions moving between calls, and
//! shut down. The host picks an implementation once, at construction;
//! nothing else of it asks which executor it runs on.

use rho_proto_core::config::Config;
use rho_proto_core::features::FeatureRequest;
use rho_proto_core::runtime::{
    CallOptions, CallTarget, ServerView, Sessions, StartServerError, ToolCallError,
};
use rho_proto_core::wire::protocol::CallToolResult;
use serde_json::Value;

use std::str::FromStr;

#[cfg(feature = "blocking")]
mod blocking;
#[cfg(feature = "smol")]
mod smol;

#[cfg(feature = "blocking")]
pub(crate) use blocking::BlockingExecutor;
#[cfg(feature = "smol")]
pub(crate) use smol::SmolExecutor;

/// Which executor drives the sessions.
///
/// Each kind is a feature of this crate (`smol`, `blocking`; both by
/// default), and a kind whose feature is off is not in the enum: a host
/// built with one executor cannot ask for the other, so there is no
/// start that fails at run time for want of it. Spelled as text (a
/// flag, an environment variable), the missing kind parses to an error
/// naming the feature ([`FromStr`]). The enum is `#[non_exhaustive]`
/// because features are unified across a build: another crate turning
/// the other feature on adds its variant to this crate's match arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeKind {
    /// One task per session on one executor (the `rho` CLI's default).
    #[cfg(feature = "smol")]
    Smol,
    /// A driver thread per session.
    #[cfg(feature = "blocking")]
    Blocking,
}

impl RuntimeKind {
    /// Every kind this build has, smol first.
    pub const ALL: &'static [RuntimeKind] = &[
        #[cfg(feature = "smol")]
        RuntimeKind::Smol,
        #[cfg(feature = "blocking")]
        RuntimeKind::Blocking,
    ];

    /// The kind's name, as `--runtime` and `RHO_RUNTIME` spell it (and as
    /// this crate's feature for it is named).
    pub fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "smol")]
            RuntimeKind::Smol => "smol",
            #[cfg(feature = "blocking")]
            RuntimeKind::Blocking => "blocking",
        }
    }
}

/// Smol when this build has it (the `rho` CLI's default, and
/// [`crate::Host::builder`]'s), else blocking.
impl Default for RuntimeKind {
    fn default() -> Self {
        // Never empty: a build without either executor stops at the
        // crate root's `compile_error!`.
        Self::ALL[0]
    }
}

/// A kind by its [`RuntimeKind::name`]; a kind this build left out is an
/// error that names the feature, not an unknown name.
impl FromStr for RuntimeKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(&kind) = Self::ALL.iter().find(|kind| kind.name() == s) {
            return Ok(kind);
        }
        match s {
            "smol" | "blocking" => Err(format!(
                "runtime `{s}` is not in this build: rho-host's `{s}` feature is off"
            )),
            other => Err(format!(
                "unknown runtime `{other}`: the runtimes are smol and blocking"
            )),
        }
    }
}

/// One executor, driven synchronously by the host's methods.
pub(crate) trait Executor: Send + Sync {
    /// Which executor this is.
    fn kind(&self) -> RuntimeKind;

    /// The servers as they stand: views, tools, instructions.
    fn sessions(&self) -> &dyn Sessions;

    /// Starts the server `id` of `config` beside the running ones; see
    /// [`crate::Host::start_server`].
    fn start_server(&mut self, id: &str, config: &Config) -> Result<ServerView, StartServerError>;

    /// Closes the session of server `id`; see [`crate::Host::stop_server`].
    fn stop_server(&mut self, id: &str) -> bool;

    /// Calls a tool and waits for its end, as `options` say.
    fn call(
        &self,
        target: CallTarget<'_>,
        arguments: Value,
        options: CallOptions<'_>,
    ) -> Result<CallToolResult, ToolCallError>;

    /// Sends a request and waits for its answer, as `options` say.
    fn request(
        &self,
        server: &str,
        request: FeatureRequest,
        options: CallOptions<'_>,
    ) -> Result<Value, ToolCallError>;

    /// Keeps the sessions moving between calls, from now until shutdown;
    /// see [`crate::HostBuilder::executor_thread`].
    fn keep_moving(&mut self);

    /// Closes every session and waits for each server to exit. Idempotent.
    fn shutdown(&mut self);

    /// The smol runtime, whose calls an async host awaits as they are;
    /// `None` on an executor whose calls block a thread.
    #[cfg(feature = "smol")]
    fn smol(&self) -> Option<&rho_io_smol::Runtime> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::RuntimeKind;

    /// Each kind this build has parses from its name and is the default
    /// when first; a kind left out by its feature is an error that names
    /// the feature, not an unknown runtime.
    #[test]
    fn a_kind_parses_from_its_name_and_one_left_out_names_its_feature() {
        for &kind in RuntimeKind::ALL {
            assert_eq!(kind.name().parse::<RuntimeKind>(), Ok(kind));
        }
        assert_eq!(RuntimeKind::default(), RuntimeKind::ALL[0]);
        for name in ["smol", "blocking"] {
            if RuntimeKind::ALL.iter().all(|kind| kind.name() != name) {
                let error = name.parse::<RuntimeKind>().expect_err("left out");
                assert_eq!(
                    error,
                    format!(
                        "runtime `{name}` is not in this build: rho-host's `{name}` feature is off"
                    )
                );
            }
        }
        let error = "tokio".parse::<RuntimeKind>().expect_err("unknown");
        assert!(error.starts_with("unknown runtime `tokio`"), "{error}");
    }

    /// In a build without the `http` feature, a server configured for
    /// Streamable HTTP fails to start on every executor built, naming the
    /// executor crate and the feature, and the host goes on (the test
    /// command runs this in its builds of one executor and no `http`).
    #[cfg(not(feature = "http"))]
    #[test]
    fn an_http_server_fails_to_start_naming_the_feature_it_lacks() {
        use rho_proto_core::runtime::driving::{StartupError, TransportSetupError};
        use rho_proto_core::runtime::status::{FailureKind, ServerStatus};

        let toml =
            "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/\"";
        let config = rho_proto_core::config::parse(toml, "rho.toml").expect("valid config");
        let loaded = crate::LoadedConfig::from(config);
        for &kind in RuntimeKind::ALL {
            let host = crate::Host::builder(&loaded)
                .runtime(kind)
                .store(None)
                .connect()
                .host;
            let status = host.server("remote").map(|server| server.status);
            host.shutdown();
            let krate = match kind {
                #[cfg(feature = "smol")]
                RuntimeKind::Smol => "rho-io-smol",
                #[cfg(feature = "blocking")]
                RuntimeKind::Blocking => "rho-io-blocking",
            };
            let error = TransportSetupError::http_not_built_in("remote", krate);
            assert_eq!(
                status,
                Some(ServerStatus::Failed {
                    error: StartupError::from(error).to_string(),
                    kind: FailureKind::NotBuiltIn,
                })
            );
        }
    }
}
