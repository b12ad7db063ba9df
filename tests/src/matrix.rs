//! One test body, both executors: [`TestRuntime`] names an executor, and
//! [`both_executors!`](crate::both_executors) turns each generic test
//! function into one `#[test]` per executor, so a behaviour cannot drift
//! between them. Every test drives the runtime through the hosts' own
//! facade, [`rho_host::Host`], never a wrapper of its own.

use rho_host::{Host, HostBuilder, LoadedConfig, RuntimeKind};
use rho_proto_core::config::Config;
use rho_proto_core::host::RuntimeOptions;

/// An executor a test runs on.
pub trait TestRuntime {
    /// The variant's name (`threads`, `smol`), for ids a test must keep
    /// apart between the variants that run side by side.
    const NAME: &'static str;
    /// The executor.
    const KIND: RuntimeKind;

    /// Starts the enabled servers of `config` on this executor, with no
    /// credential store (a test never reads the person's logins). A smol
    /// host gets a thread that runs its executor, so sessions move while
    /// a test thread sleeps or waits on something else.
    fn start(config: &Config, options: RuntimeOptions) -> Host {
        Self::builder(&LoadedConfig::from(config.clone()), options)
            .executor_thread()
            .connect()
            .host
    }

    /// The builder [`TestRuntime::start`] uses, for a test that selects
    /// servers or leaves the executor thread out.
    fn builder(loaded: &LoadedConfig, options: RuntimeOptions) -> HostBuilder<'_> {
        Host::builder(loaded)
            .runtime(Self::KIND)
            .options(options)
            .store(None)
    }
}

/// The blocking executor: a driver thread per session.
pub struct Threads;

impl TestRuntime for Threads {
    const NAME: &'static str = "threads";
    const KIND: RuntimeKind = RuntimeKind::Blocking;
}

/// The smol executor.
pub struct Smol;

impl TestRuntime for Smol {
    const NAME: &'static str = "smol";
    const KIND: RuntimeKind = RuntimeKind::Smol;
}

/// Turns generic test functions `fn name<R: TestRuntime>()` into a module
/// per function with a `#[test]` for each executor (`threads`, `smol`).
#[macro_export]
macro_rules! both_executors {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn threads() {
                    super::$name::<$crate::matrix::Threads>();
                }
                #[test]
                fn smol() {
                    super::$name::<$crate::matrix::Smol>();
                }
            }
        )*
    };
}
