//! `http_session`: whole Streamable HTTP sessions from structured scripts;
//! see `rho_fuzz_harness::http` for the invariants.
#![no_main]

use std::sync::OnceLock;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use rho_fuzz_harness::http::{HttpInput, run_http_session};

/// The fake clock's origin: one real instant, taken once.
static ORIGIN: OnceLock<Instant> = OnceLock::new();

fuzz_target!(|input: HttpInput| {
    run_http_session(&input, *ORIGIN.get_or_init(Instant::now));
});
