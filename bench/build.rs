//! Links every benchmark binary (the harness, and each one-server client,
//! rho's and rmcp's alike) with packed relative relocations where the
//! building machine's glibc loads them (2.36 and later), as the release
//! `rho` binary is linked (`cli/build.rs`): without them the loader reads
//! a table of 24 bytes per relocation (rho's executors about 250 KB,
//! rmcp's about 45 KB) and the pages stay resident. The same flag for
//! every client keeps the one-server table a comparison of clients, not
//! of link options.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux_gnu = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    if linux_gnu && glibc_at_least((2, 36)) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether `getconf GNU_LIBC_VERSION` says `glibc X.Y` at `version` or
/// later.
fn glibc_at_least(version: (u32, u32)) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .trim()
        .strip_prefix("glibc ")
        .unwrap_or_default()
        .split('.')
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= version,
        _ => false,
    }
}
