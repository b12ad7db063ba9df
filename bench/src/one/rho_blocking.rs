//! `one-rho-blocking SERVER ARGS...`: the least a host does with rho on
//! threads to use one stdio server (start it, call `echo` once, shut it
//! down), in a binary of its own (see `bench/README.md`).

#[path = "common.rs"]
mod common;

fn main() {
    let (config, options) = common::setup(rho_io_blocking::options_from_process_env());
    let runtime = rho_io_blocking::Runtime::start(&config, options, |_| true);
    let outcome = runtime
        .submit(
            rho_proto_core::runtime::ToolCall::new(common::EXPORTED, common::arguments()),
            rho_proto_core::runtime::CallOptions::new(),
        )
        .map(|result| common::text_len(&result))
        .map_err(|e| e.to_string());
    runtime.shutdown();
    common::finish(outcome);
}
