//! What the rmcp one-server clients share: the runtime, a stdio server's
//! transport, and the session (list the tools, call `echo` once, close).

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::service::RunningService;

/// The command line after the program name; exits with usage if empty.
pub fn args(usage: &str) -> Vec<String> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    }
    argv
}

/// Runs `client` on a current-thread tokio runtime (rmcp's cheapest
/// configuration, as the bench's rmcp worker runs), prints the text
/// length or fails.
pub fn run<F: std::future::Future<Output = Result<usize, String>>>(client: F) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(client) {
        Ok(len) => println!("{len}"),
        Err(e) => {
            eprintln!("call: {e}");
            std::process::exit(1);
        }
    }
}

/// The stdio server `argv` as an rmcp transport, its stderr discarded.
pub fn child(argv: &[String]) -> Result<rmcp::transport::TokioChildProcess, String> {
    let mut command = tokio::process::Command::new(&argv[0]);
    command.args(&argv[1..]);
    let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    Ok(transport)
}

/// What a host does once connected: lists the tools (as rho does before
/// it offers them), calls `echo` once, closes. The first text block's
/// length.
pub async fn session(client: RunningService<RoleClient, ()>) -> Result<usize, String> {
    client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let mut arguments = JsonObject::new();
    arguments.insert("message".into(), "hello".into());
    let result = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(arguments))
        .await
        .map_err(|e| e.to_string())?;
    let len = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map_or(0, |t| t.text.len());
    let _ = client.cancel().await;
    Ok(len)
}
