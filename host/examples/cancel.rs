//! Ending a call early: stopped from another thread (an agent's user
//! pressing stop while the call reports progress), and ended by a time
//! limit of its own. Either way the server is told, the call ends with
//! the core's own error, and the session goes on.
//!
//! ```sh
//! cargo run -p rho-host --example cancel -- --config examples/rho.toml --runtime blocking
//! ```

use std::sync::mpsc;
use std::time::Duration;

use rho_host::{CallError, CallOptions, Cancel, Host, ToolCallError};
use serde_json::json;

#[path = "support/args.rs"]
mod args;

fn main() -> Result<(), String> {
    let args = args::parse("cancel", &[])?;
    let loaded = rho_host::LoadedConfig::load(args.config)?;
    let host = Host::builder(&loaded).runtime(args.kind).connect().host;
    let tools = host.current_tools();
    let long = tools
        .iter()
        .find(|t| t.tool == "trigger-long-running-operation")
        .ok_or("no long-running tool")?;
    let slow = json!({"duration": 30, "steps": 30});

    // Stopped from another thread once the first progress arrives.
    let cancel = Cancel::new();
    let (progressed, first_progress) = mpsc::channel();
    let stopper = std::thread::spawn({
        let cancel = cancel.clone();
        move || {
            if first_progress.recv().is_ok() {
                cancel.cancel();
            }
        }
    });
    let outcome = host.call(
        &long.name,
        slow.clone(),
        CallOptions::new()
            .on_progress(move |p| {
                println!("progress {}/{}", p.progress, p.total.unwrap_or(f64::NAN));
                let _ = progressed.send(());
            })
            .cancel(&cancel),
    );
    let _ = stopper.join();
    match outcome {
        Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) => {
            println!("stopped by the user: {notice:?}")
        }
        other => return Err(format!("expected a cancelled call, got {other:?}")),
    }

    // Ended by its own time limit, though the server's allows 30 s.
    let outcome = host.call(
        &long.name,
        slow,
        CallOptions::new().timeout(Duration::from_secs(1)),
    );
    match outcome {
        Err(ToolCallError::Call(error @ CallError::Timeout { .. })) => println!("{error}"),
        other => return Err(format!("expected a timed-out call, got {other:?}")),
    }

    // The session goes on.
    let echo = tools
        .iter()
        .find(|t| t.tool == "echo")
        .ok_or("no echo tool")?;
    let result = host
        .call(
            &echo.name,
            json!({"message": "still here"}),
            CallOptions::new(),
        )
        .map_err(|e| e.to_string())?;
    println!("{}", result.text());
    host.shutdown();
    Ok(())
}
