//! `import-scale [RHO] [--quick]`: how long `rho mcp import` takes as the
//! JSON file grows, printed as a table (entries, argument bytes per entry,
//! seconds, microseconds per entry). A linear import keeps the last column
//! flat; the quadratic one issue 37 reported (500 entries 2.4 s, 2,000
//! with 1 KB args 179 s in a debug build) grows it with the file.
//!
//! RHO is the binary to time (default `target/release/rho`, else
//! `target/debug/rho`). Each run writes a Claude-style `mcpServers` file of
//! N stdio entries into a scratch directory and imports it into an empty
//! config there. Nothing is asserted: timings are for reading.
//!
//! std only, so it builds without the bench crate's dependencies:
//! `rustc -O bench/src/import_scale.rs -o /tmp/import-scale`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn main() {
    let mut rho: Option<PathBuf> = None;
    let mut quick = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            other => rho = Some(PathBuf::from(other)),
        }
    }
    let rho = rho.unwrap_or_else(|| {
        ["target/release/rho", "target/debug/rho"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .unwrap_or_else(|| PathBuf::from("rho"))
    });
    let sizes: &[(usize, usize)] = if quick {
        &[(100, 0), (200, 1024)]
    } else {
        &[(500, 0), (1000, 1024), (2000, 1024)]
    };
    let scratch = std::env::temp_dir().join(format!("rho-import-scale-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("a scratch directory");
    println!("rho mcp import ({})", rho.display());
    println!(
        "{:>8} {:>10} {:>10} {:>12}",
        "entries", "args B", "seconds", "µs/entry"
    );
    for &(entries, arg_bytes) in sizes {
        let seconds = time_import(&rho, &scratch, entries, arg_bytes);
        println!(
            "{entries:>8} {arg_bytes:>10} {seconds:>10.3} {:>12.0}",
            seconds * 1e6 / entries as f64
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Writes a file of `entries` servers with `arg_bytes` of arguments each,
/// imports it into an empty config, and returns the seconds it took.
fn time_import(rho: &Path, scratch: &Path, entries: usize, arg_bytes: usize) -> f64 {
    let file = scratch.join(format!("servers-{entries}-{arg_bytes}.json"));
    let config = scratch.join(format!("config-{entries}-{arg_bytes}.toml"));
    let _ = std::fs::remove_file(&config);
    let arg = "a".repeat(arg_bytes);
    let mut json = String::from("{\"mcpServers\": {");
    for i in 0..entries {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "\"server-{i}\": {{\"command\": \"node\", \"args\": [\"server.js\", \"{arg}\"], \"env\": {{\"LEVEL\": \"debug\"}}}}"
        ));
    }
    json.push_str("}}");
    std::fs::write(&file, json).expect("write the JSON file");
    let started = Instant::now();
    let output = Command::new(rho)
        .arg("--config")
        .arg(&config)
        .args(["mcp", "import"])
        .arg(&file)
        .env("HOME", scratch)
        .output()
        .expect("run rho mcp import");
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "rho mcp import failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    seconds
}
