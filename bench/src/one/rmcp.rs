//! `one-rmcp SERVER ARGS...`: the least a host does with the official
//! Rust SDK (rmcp) to use one stdio server (spawn it, initialize, list
//! the tools, call `echo` once, close), in a binary of its own (see
//! `bench/README.md`). Only the stdio transport is reachable, so the
//! linker keeps no HTTP client: the smallest rmcp client there is.

use rmcp::ServiceExt;

#[path = "rmcp_common.rs"]
mod common;

fn main() {
    let argv = common::args("one-rmcp SERVER [ARGS...]");
    common::run(async {
        let client = ().serve(common::child(&argv)?).await;
        common::session(client.map_err(|e| format!("initialize: {e}"))?).await
    });
}
