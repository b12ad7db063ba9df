//! `one-rmcp-any SERVER ARGS...` or `one-rmcp-any --url URL`: the rmcp
//! one-server client of `one-rmcp`, for a host that reads its servers
//! from a configuration and so must be able to reach either transport,
//! as rho's `Runtime` does: stdio, or Streamable HTTP (rmcp's reqwest
//! client). Measured over stdio, like the others (see `bench/README.md`).

use rmcp::ServiceExt;

#[path = "rmcp_common.rs"]
mod common;

fn main() {
    let argv = common::args("one-rmcp-any SERVER [ARGS...] | --url URL");
    common::run(async {
        let client = match argv.as_slice() {
            [flag, url] if flag == "--url" => {
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
                ().serve(transport).await
            }
            _ => ().serve(common::child(&argv)?).await,
        };
        common::session(client.map_err(|e| format!("initialize: {e}"))?).await
    });
}
