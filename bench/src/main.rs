//! `bench`: rho's MCP client against the limit and against the clients
//! users would pick instead. See `bench/README.md`.
//!
//! ```text
//! cargo run --release --manifest-path bench/Cargo.toml -- [--quick] [--no-write]
//! ```
//!
//! Sub-commands used by the harness itself: `worker SPEC` (one client
//! process), `rmcp-echo --stdio|--http PORT` (the rmcp echo server),
//! `core-profile small|large|roundtrip|serde|serde-large N` (the core alone, for
//! `valgrind --tool=callgrind`), `core [--quick]` (only the core
//! throughput rows, printed), `counted` (only the counted cost per call
//! over stdio, printed), `door [--rounds N] [--n N] [--write]` (CPU per
//! call of each executor driven directly and through `rho_host::Host`;
//! `--write` puts it in BENCHMARKS.md),
//! `one-server [--write]` (only the one-server
//! clients' peak RSS, printed; `--write` puts it in BENCHMARKS.md), `memory [--write]` (only
//! section 5's CLI peak RSS and binary size, likewise), `peak-rss PROGRAM ARGS...` (a command's exact peak RSS).

mod bare_async_http;
mod core;
mod counted;
mod report;
#[cfg(feature = "rmcp")]
mod rmcp_side;
mod run;
mod util;
mod workers;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("worker") => workers::main(&args[1..]),
        Some("counted") => run::counted_only(),
        Some("door") => run::door_only(&args[1..]),
        Some("one-server") => run::one_server_only(&args[1..]),
        Some("memory") => run::memory_only(&args[1..]),
        #[cfg(feature = "rmcp")]
        Some("rmcp-echo") => rmcp_side::serve_echo(&args[1..]),
        Some("core-profile") => {
            let kind = args.get(1).map_or("small", String::as_str);
            let count = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(10_000);
            core::profile(kind, count);
        }
        Some("core") => {
            let options = run::Options::parse(&args[1..]);
            run::core_throughput(&options);
        }
        Some("peak-rss") if args.len() > 1 => {
            let mut command = std::process::Command::new(&args[1]);
            command.args(&args[2..]);
            match util::peak_rss(command) {
                Ok(bytes) => println!("{bytes}"),
                Err(e) => {
                    eprintln!("bench peak-rss: {e}");
                    std::process::exit(1);
                }
            }
        }
        Some("-h" | "--help") => {
            println!(
                "usage: bench [--quick] [--no-write] [--rounds N] [--n N]\n\
                 \n  --quick     tiny N, one round; skips clients whose runtime is missing\n  \
                 --no-write  print the table only (no BENCHMARKS.md, results.json, latency.svg)\n  \
                 --rounds N  interleaved repetitions (default 7)\n  \
                 --n N       calls per client per round and concurrency level (default 500)"
            );
        }
        _ => {
            let options = run::Options::parse(&args);
            run::main(options);
        }
    }
}
