//! The operating-system calls both of rho's executors make, and nothing
//! else.
//!
//! `rho-io-blocking` (threads) and `rho-io-smol` (tasks) are siblings:
//! each stands on the sans-IO core in `rho-proto-core` and neither may
//! depend on the other. Yet both start a stdio server the same way (no
//! shell, a computed environment, its own process group, a parent-death
//! signal on Linux) and end it the same way (signal the whole group, tell
//! an exit without reaping). Those calls cannot live in the core, which
//! never touches a process, so they live here once. This crate decides
//! nothing: what to run and with which environment is computed by the
//! core (`rho_proto_core::config::env`, `rho_proto_core::config::process`); this crate
//! turns it into system calls. It also holds the one `unsafe` block of
//! the Unix build, the `pre_exec` hook of `process::die_with_parent`, and
//! the one place runtime options are read from the process's environment
//! ([`options_from_process_env`]; the core's `RuntimeOptions` is plain
//! data). [`pipe`] makes a child's stdin non-blocking and waits for room
//! in it, for the thread executor's writes; [`transcript`] is the file a
//! host records transcripts into.
//!
//! Windows has its own half of each: a Job Object for the process group
//! (`job`, behind [`process::ProcessGroup`]), the console's control events
//! and modes ([`console`]), and the OS random generator ([`random`]).
//! Those calls are `unsafe` FFI, each block with its own SAFETY note.

pub mod console;
mod env;
pub mod fs;
pub mod pipe;
pub mod process;
pub mod random;
pub mod transcript;

pub use env::options_from_process_env;
#[cfg(windows)]
mod job;
