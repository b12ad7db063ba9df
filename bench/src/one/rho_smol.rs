//! `one-rho-smol SERVER ARGS...`: the least a host does with rho on smol
//! to use one stdio server (start it, call `echo` once, shut it down),
//! in a binary of its own, so that its peak RSS is the client's and not
//! the bench harness's (see `bench/README.md`).

use rho_proto_core::runtime::{CallOptions, ToolCall};
use std::sync::Arc;

#[path = "common.rs"]
mod common;

fn main() {
    let (config, options) = common::setup(rho_io_smol::options_from_process_env());
    let executor = Arc::new(smol::Executor::new());
    let outcome = rho_io_smol::block_on(&executor, async {
        let runtime = rho_io_smol::Runtime::start(&executor, &config, options, |_| true).await;
        let outcome = runtime
            .submit(
                ToolCall::new(common::EXPORTED, common::arguments()),
                CallOptions::new(),
            )
            .await
            .map(|result| common::text_len(&result))
            .map_err(|e| e.to_string());
        runtime.shutdown().await;
        outcome
    });
    common::finish(outcome);
}
