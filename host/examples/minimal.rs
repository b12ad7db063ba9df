//! The least an agent does with rho: start the configured servers, hand
//! their tools to a model, call one, read what the model gets, shut down.
//!
//! ```sh
//! cargo run -p rho-host --example minimal -- --config examples/rho.toml
//! ```

use rho_host::{CallOptions, Host};
use serde_json::json;

#[path = "support/args.rs"]
mod args;

fn main() -> Result<(), String> {
    let args = args::parse("minimal", &[])?;
    let loaded = rho_host::LoadedConfig::load(args.config)?;
    let host = Host::builder(&loaded).runtime(args.kind).connect().host;

    // The tools, as a model sees them: exported name and description.
    let tools = host.current_tools();
    for tool in &tools {
        let summary = tool.description.lines().next().unwrap_or("");
        println!("{}: {summary}", tool.name);
    }

    // The model picks one; the host calls it and hands back the text.
    let echo = tools
        .iter()
        .find(|t| t.tool == "echo")
        .ok_or("no echo tool")?;
    let arguments = json!({"message": "hello from the minimal agent"});
    let result = host
        .call(&echo.name, arguments, CallOptions::new())
        .map_err(|e| e.to_string())?;
    println!("{}", host.render_result(&echo.server, &result).model_text);

    host.shutdown();
    Ok(())
}
