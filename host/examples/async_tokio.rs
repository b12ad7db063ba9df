//! The async face on an executor the host already runs, here tokio's:
//! rho's sessions move on rho's own executor (its thread), so awaiting a
//! call from tokio, smol or a GUI's loop locks the host into none of
//! them. Two calls awaited on a current-thread tokio runtime, one with
//! progress.
//!
//! ```sh
//! cargo run -p rho-host --example async_tokio -- --config examples/rho.toml
//! ```

use rho_host::{CallOptions, Host};
use serde_json::json;

#[path = "support/args.rs"]
mod args;

fn main() -> Result<(), String> {
    let args = args::parse("async_tokio", &[])?;
    let loaded = rho_host::LoadedConfig::load(args.config)?;
    // Connecting waits for every server; it is done before the async part.
    let host = Host::builder(&loaded)
        .runtime(args.kind)
        .connect()
        .host
        .into_async();
    let tools = host.host().current_tools();
    let find = |name: &str| {
        tools
            .iter()
            .find(|t| t.tool == name)
            .map(|t| t.name.clone())
            .ok_or(format!("no `{name}` tool"))
    };
    let (echo, long) = (find("echo")?, find("trigger-long-running-operation")?);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let result = host
            .call(
                &echo,
                json!({"message": "hello from tokio"}),
                CallOptions::new(),
            )
            .await
            .map_err(|e| e.to_string())?;
        println!("{}", result.text());
        let progress = CallOptions::new().on_progress(|p| println!("progress {}", p.progress));
        let result = host
            .call(&long, json!({"duration": 1, "steps": 2}), progress)
            .await
            .map_err(|e| e.to_string())?;
        println!("{}", result.text());
        host.shutdown().await;
        Ok::<(), String>(())
    })
}
