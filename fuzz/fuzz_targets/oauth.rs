//! `oauth`: see `rho_fuzz_harness::check_oauth` for the invariants.
#![no_main]

use std::sync::OnceLock;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;

/// The login's clock origin: one real instant, taken once.
static ORIGIN: OnceLock<Instant> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    rho_fuzz_harness::check_oauth(data, *ORIGIN.get_or_init(Instant::now))
});
