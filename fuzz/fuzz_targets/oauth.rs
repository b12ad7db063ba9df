//! `oauth`: see `rho_proto_core::fuzzing::check_oauth` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rho_proto_core::fuzzing::check_oauth(data));
