//! `apps`: see `rho_fuzz_harness::check_apps` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rho_fuzz_harness::check_apps(data));
