//! `sse`: see `rho_fuzz_harness::check_sse` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rho_fuzz_harness::check_sse(data));
