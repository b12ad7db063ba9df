//! An agent whose tool has an MCP App view: call the tool, open its view
//! in the person's browser, and take what the person sends from the view
//! (`ui/message`) as the next user turn of the conversation.
//!
//! ```sh
//! cargo run -p rho-host --example app_view -- --config app.toml
//! ```
//!
//! with a server whose tool names a view, such as
//! `@modelcontextprotocol/server-basic-vanillajs` (its view's "Send
//! Message" button sends one). The browser is `BROWSER`, else the
//! platform's opener.

use rho_host::apps::{AppEvent, AppOptions, Reply, open_in_browser};
use rho_host::{CallOptions, Cancel, Host, HostServices};
use serde_json::json;

#[path = "support/args.rs"]
mod args;

fn main() -> Result<(), String> {
    let args = args::parse("app_view", &[])?;
    let loaded = rho_host::LoadedConfig::load(args.config)?;
    // The host shows views: servers are told so (the MCP Apps extension).
    let services = HostServices {
        renders_apps: true,
        ..HostServices::default()
    };
    let host = Host::builder(&loaded)
        .runtime(args.kind)
        .services(services)
        .connect()
        .host;

    // The model picked a tool that has a view.
    let tool = host
        .current_tools()
        .into_iter()
        .find(|t| host.app_view_of(&t.server, &t.tool).is_some())
        .ok_or("no tool with an MCP App view")?;
    let arguments = json!({});
    let result = host
        .call(&tool.name, arguments.clone(), CallOptions::new())
        .map_err(|e| e.to_string())?;
    println!(
        "tool result: {}",
        host.render_result(&tool.server, &result).model_text
    );

    // Its view, in the person's browser, told the result.
    let mut view = host
        .open_app(&tool.server, &tool.tool, &arguments, &AppOptions::default())
        .map_err(|e| e.to_string())?;
    view.tool_result(result.as_sent());
    println!("the view: {}", view.url());
    open_in_browser(view.url());

    // The conversation goes on with what the person sends from the view.
    let mut next_turn = None;
    let ended = view.serve(&host, &Cancel::new(), |event| match event {
        AppEvent::Message { text } => {
            next_turn = Some(text);
            Reply::Close
        }
        AppEvent::ToolCalled { tool, outcome } => {
            println!("the view called {tool}: {outcome:?}");
            Reply::Continue
        }
        _ => Reply::Continue,
    });
    host.shutdown();
    // Server text: a terminal shows it sanitized.
    let turn = next_turn.ok_or(format!("the view ended ({ended}) without a message"))?;
    println!("next user turn: {}", rho_host::sanitize_line(&turn));
    Ok(())
}
