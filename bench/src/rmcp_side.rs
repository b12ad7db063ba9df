//! Everything on the official Rust SDK (`rmcp`): a minimal, fast echo
//! server (stdio and Streamable HTTP), and the rmcp client the benchmark
//! compares rho with.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::workers::{Measured, WorkerSpec, all_lanes};

/// A server with one tool, `echo {message}` → `Echo: <message>`, written
/// straight on `ServerHandler` (no macros, no schema generation per call).
#[derive(Clone)]
pub struct Echo {
    tool: Tool,
}

impl Echo {
    pub fn new() -> Self {
        let schema: JsonObject = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Message to echo"}},
            "required": ["message"],
        }))
        .expect("schema is an object");
        Self {
            tool: Tool::new("echo", "Echoes back the input", Arc::new(schema)),
        }
    }
}

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![self.tool.clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "echo" {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("Echo: {message}"))]).into())
    }
}

/// `bench rmcp-echo --stdio` or `bench rmcp-echo --http PORT`.
pub fn serve_echo(args: &[String]) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match args.first().map(String::as_str) {
        Some("--stdio") => rt.block_on(async {
            let service = Echo::new()
                .serve(rmcp::transport::stdio())
                .await
                .expect("serve stdio");
            let _ = service.waiting().await;
        }),
        Some("--http") => {
            let port: u16 = args
                .get(1)
                .and_then(|p| p.parse().ok())
                .expect("--http PORT");
            rt.block_on(serve_http(port));
        }
        _ => {
            eprintln!("usage: bench rmcp-echo --stdio | --http PORT");
            std::process::exit(2);
        }
    }
}

async fn serve_http(port: u16) {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(Echo::new()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    ));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind loopback");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The rmcp client, on a current-thread tokio runtime (its cheapest
/// configuration), against a stdio child or a Streamable HTTP URL.
pub fn run_client(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(async {
        let client = match (&spec.stdio, &spec.url) {
            (Some(cmd), _) => {
                let mut command = tokio::process::Command::new(&cmd[0]);
                command.args(&cmd[1..]);
                let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(command)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| format!("spawn: {e}"))?;
                ().serve(transport)
                    .await
                    .map_err(|e| format!("initialize: {e}"))?
            }
            (None, Some(url)) => {
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
                ().serve(transport)
                    .await
                    .map_err(|e| format!("initialize: {e}"))?
            }
            _ => return Err("no target".into()),
        };
        let arguments: JsonObject = match &spec.args {
            Value::Object(map) => map.clone(),
            _ => JsonObject::new(),
        };
        let call = |client: &rmcp::service::RunningService<rmcp::RoleClient, ()>| {
            let params =
                CallToolRequestParams::new(spec.tool.clone()).with_arguments(arguments.clone());
            let peer = client.peer().clone();
            let limit = std::time::Duration::from_secs(spec.timeout_s.unwrap_or(60));
            async move {
                let result = tokio::time::timeout(limit, peer.call_tool(params))
                    .await
                    .map_err(|_| format!("no answer within {} s", limit.as_secs()))?
                    .map_err(|e| e.to_string())?;
                Ok::<usize, String>(
                    result
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .map_or(0, |t| t.text.len()),
                )
            }
        };
        let mut result_len = 0;
        for _ in 0..spec.warmup {
            result_len = call(&client).await?;
        }
        let mut out = Vec::new();
        for &inflight in &spec.inflight {
            let cpu = crate::util::Cpu::now();
            let wall = Instant::now();
            let per = spec.n.div_ceil(inflight);
            let lanes = (0..inflight).map(|lane| {
                let count = per.min(spec.n.saturating_sub(lane * per));
                let client = &client;
                let call = &call;
                async move {
                    let mut lat = Vec::with_capacity(count);
                    for _ in 0..count {
                        let t = Instant::now();
                        call(client).await?;
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    Ok::<Vec<f64>, String>(lat)
                }
            });
            let lanes = all_lanes(lanes).await;
            let wall = wall.elapsed();
            let cpu = crate::util::Cpu::now().since(cpu);
            let mut lat = Vec::new();
            for lane in lanes {
                lat.extend(lane?);
            }
            out.push(Measured::new(inflight, wall, cpu, lat));
        }
        let _ = client.cancel().await;
        Ok((out, result_len))
    })
}
