//! Secrets on the way in: header values from the environment that a
//! header cannot carry fail that server with a reason naming the header and
//! the variable (never the value).

use rho_proto_core::config::{self, Transport};
use rho_proto_core::http::resolve_headers;

fn http_config(extra: &str) -> config::HttpConfig {
    let text = format!(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/mcp\"\n{extra}\n"
    );
    let config = config::parse(&text, "t.toml").expect("valid file");
    match &config.servers[0].config {
        Ok(server) => match &server.transport {
            Transport::StreamableHttp(http) => http.clone(),
            other => panic!("expected streamable_http, got {other:?}"),
        },
        Err(error) => panic!("entry error: {error}"),
    }
}

#[test]
fn header_value_with_cr_or_lf_from_the_environment_fails_naming_the_header() {
    let config = http_config("headers_from_env = { Authorization = \"MCP_TOKEN\" }");
    for value in [
        "Bearer abc\r\nX-Injected: 1",
        "Bearer abc\n",
        "Bearer\rabc",
        "a\0b",
    ] {
        let ambient = vec![("MCP_TOKEN".to_owned(), value.to_owned())];
        let error = resolve_headers("remote", &ambient, &config).expect_err("control character");
        assert!(error.contains("`remote`"), "{error}");
        assert!(error.contains("`Authorization`"), "{error}");
        assert!(error.contains("`MCP_TOKEN`"), "{error}");
        assert!(!error.contains("abc"), "the value leaked: {error}");
    }
    // A tab is allowed in a header value.
    let ambient = vec![("MCP_TOKEN".to_owned(), "Bearer\tabc".to_owned())];
    assert!(resolve_headers("remote", &ambient, &config).is_ok());
}
