//! Lays out the release `rho` binary so that its hot code is dense.
//!
//! `hot-symbols.txt` (written by `scripts/order-symbols`) lists the functions
//! rho runs in its common commands. Handed to the linker as
//! `--symbol-ordering-file`, it puts them first in `.text`, together: the
//! kernel maps a binary's pages around every fault (64 KiB and more at a
//! time), so hot code spread over all of `.text` made nearly all of it
//! resident. Measured on `rho mcp list --connect` with ten servers: 4.7 MiB
//! of code resident before, 1.3 MiB after.
//!
//! Only where it is known to work: a release build for
//! x86_64-unknown-linux-gnu by rustc 1.90 or later, whose default linker is
//! its own lld (which has the option), with no linker chosen by the build's
//! environment. Anywhere else, or with `RHO_SYMBOL_ORDER=off`, the binary is
//! linked as cargo would, and only its layout differs. The list names
//! symbols; a name the build does not have is ignored, so a stale list costs
//! memory, never a failed link.
//!
//! The same builds pack their relative relocations (`-z
//! pack-relative-relocs`) when the building machine's glibc loads them
//! (2.36 and later): the loader reads and the process keeps 4 KiB of them
//! instead of 310 KiB.

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=RHO_SYMBOL_ORDER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    match decide() {
        Layout::Ordered => {
            let dir = env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
            let list = format!("{dir}/hot-symbols.txt");
            // -Xlinker, not -Wl: a comma in the path must not split it.
            for arg in ["--symbol-ordering-file", &list, "--no-warn-symbol-ordering"] {
                println!("cargo:rustc-link-arg-bin=rho=-Xlinker");
                println!("cargo:rustc-link-arg-bin=rho={arg}");
            }
            if glibc_at_least((2, 36)) {
                println!("cargo:rustc-link-arg-bin=rho=-Wl,-z,pack-relative-relocs");
            }
        }
        Layout::Default => {}
        Layout::Unexpected(why) => {
            println!("cargo:warning=rho's hot code is not laid out together: {why}");
        }
    }
}

/// How the `rho` binary is laid out.
enum Layout {
    /// Hot symbols first, together.
    Ordered,
    /// As the linker would: a build the ordering is not meant for (debug,
    /// another target, an older rustc, or turned off).
    Default,
    /// As the linker would, in a release build that would have been ordered
    /// but for its environment; said as a build warning.
    Unexpected(&'static str),
}

fn decide() -> Layout {
    let var = |k: &str| env::var(k).unwrap_or_default();
    if var("PROFILE") != "release"
        || var("RHO_SYMBOL_ORDER") == "off"
        || var("TARGET") != "x86_64-unknown-linux-gnu"
    {
        return Layout::Default;
    }
    if !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty() {
        return Layout::Unexpected(
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER chooses the linker",
        );
    }
    let chooses_linker = var("CARGO_ENCODED_RUSTFLAGS")
        .split('\x1f')
        .any(|f| f.contains("linker") || f.contains("link-self-contained"));
    if chooses_linker {
        return Layout::Unexpected("RUSTFLAGS choose the linker");
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    match command_version(&rustc, "--version", "rustc ") {
        Some(version) if version >= (1, 90) => Layout::Ordered,
        Some(_) => Layout::Default,
        None => Layout::Unexpected("the rustc version could not be read"),
    }
}

/// Whether the C library of the machine building rho (where it will run:
/// a binary built here already needs this glibc or a later one) loads
/// packed relocations, which glibc does from 2.36 on.
fn glibc_at_least(version: (u32, u32)) -> bool {
    // "glibc 2.36"
    command_version("getconf", "GNU_LIBC_VERSION", "glibc ").is_some_and(|v| v >= version)
}

/// The major and minor version a command prints after `prefix` at the
/// start of its output (`rustc 1.95.0 (...)`, `glibc 2.36`).
fn command_version(program: &str, arg: &str, prefix: &str) -> Option<(u32, u32)> {
    let out = Command::new(program).arg(arg).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let version = text.strip_prefix(prefix)?.split_whitespace().next()?;
    let mut parts = version.split('.').map(str::parse);
    Some((parts.next()?.ok()?, parts.next()?.ok()?))
}
