//! Records a Streamable HTTP session that outlives its server: a call,
//! the server restarted (every session it knew is gone), another call that
//! recovers with a fresh initialize. Used by `scripts/record-transcripts`.
//!
//! Usage: `cargo run -p rho-tests --example record_expiry -- FILE`

use std::sync::Arc;

use rho_io_blocking::Runtime;
use rho_proto_core::runtime::{CallOptions, ToolCall};
use rho_tests::{EverythingHttp, TranscriptFile, options_with, parse_config};
use serde_json::json;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: record_expiry FILE");
        std::process::exit(2);
    };
    let mut server = EverythingHttp::start();
    let mut options = options_with(&[]);
    options.workspace = None;
    options.record = Some(Arc::new(
        TranscriptFile::create(std::path::Path::new(&path)).expect("create transcript"),
    ));
    let runtime = Runtime::start(&parse_config(&server.config("remote")), options, |_| true);
    let first = runtime
        .submit(
            ToolCall::new("mcp__remote__echo", json!({"message": "before"})),
            CallOptions::new(),
        )
        .expect("first call");
    server.restart();
    let second = runtime
        .submit(
            ToolCall::new("mcp__remote__echo", json!({"message": "after"})),
            CallOptions::new(),
        )
        .expect("the call after the restart recovers");
    runtime.shutdown();
    println!("{} / {}", first.text(), second.text());
}
