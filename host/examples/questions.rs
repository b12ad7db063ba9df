//! Questions from servers reach the host as values, on a channel: a form
//! a server asks in the middle of a call, shown field by field and
//! answered by the host's UI (here a scripted person) on a thread of its
//! own, while the call waits. Each question says which server asks
//! during which call.
//!
//! ```sh
//! cargo run -p rho-host --example questions -- --config examples/rho.toml
//! ```

use rho_host::{Asking, CallOptions, FormAnswer, Host, UrlAnswer};
use serde_json::json;

#[path = "support/args.rs"]
mod args;
#[path = "support/form.rs"]
mod form;

fn main() -> Result<(), String> {
    let args = args::parse("questions", &[])?;
    let loaded = rho_host::LoadedConfig::load(args.config)?;

    // The host's UI: every question arrives here with its reply slot.
    let (responder, questions) = rho_host::question_channel();
    let ui = std::thread::spawn(move || {
        let mut answered = 0;
        while let Some(pending) = questions.next_blocking() {
            let during = pending.asked.what.clone().unwrap_or_default();
            match &pending.asking {
                Asking::Form(asked) => {
                    println!("`{}` asks during `{during}`:", pending.asked.server);
                    for field in &asked.fields {
                        println!("  {} ({:?})", field.name, field.kind);
                    }
                    let answers = form::fill(asked);
                    pending.answer_form(FormAnswer::Submitted(answers));
                    answered += 1;
                }
                Asking::Sampling(summary) => {
                    println!("refused to sample: {summary}");
                    pending.answer_sampling(false);
                }
                // Only `question_channel_opening_urls` asks these: a UI
                // that shows the URL and its host, and opens it on a yes.
                Asking::Url(request) => {
                    println!("not opened: {}", request.url);
                    pending.answer_url(UrlAnswer::Declined);
                }
            }
        }
        answered
    });

    let host = Host::builder(&loaded)
        .runtime(args.kind)
        .services(rho_host::host_services(Some(responder), None))
        .connect()
        .host;
    let ask = host
        .current_tools()
        .into_iter()
        .find(|t| t.tool == "trigger-elicitation-request")
        .ok_or("no tool that asks a form")?;
    let result = host
        .call(&ask.name, json!({}), CallOptions::new())
        .map_err(|e| e.to_string())?;
    println!("{}", host.render_result(&ask.server, &result).model_text);
    // Shutting down drops the responder, which ends the UI's loop.
    host.shutdown();
    let answered = ui.join().map_err(|_| "the UI thread panicked")?;
    if answered == 0 {
        return Err("the server asked no form".into());
    }
    Ok(())
}
