//! The one place a runtime's options are read from this process: its
//! environment variables and its current directory.
//!
//! `RuntimeOptions` is plain data in the core, which never reads the
//! environment; every host that runs on its own process's environment
//! (the `rho` CLI, the integration tests, the bench) builds it the same
//! way, so the reading lives here once rather than in each executor.

use rho_proto_core::host::RuntimeOptions;

/// Options from this process's environment and current directory (the
/// workspace), with the defaults of [`RuntimeOptions::new`]. Variables
/// whose name or value is not UTF-8 are skipped: they could not be named
/// in a config.
pub fn options_from_process_env() -> RuntimeOptions {
    RuntimeOptions::new(ambient(), std::env::current_dir().ok())
}

/// This process's environment variables that are UTF-8, name and value.
fn ambient() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}
