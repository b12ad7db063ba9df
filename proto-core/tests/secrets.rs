//! Secrets on the way in: header values from the environment that a
//! header cannot carry fail that server with a reason naming the header and
//! the variable (never the value). And on the way out: what the inventory
//! hides in servers' reasons and call errors.

// A connection needs one real `Instant` to start from.
#![allow(clippy::disallowed_methods)]

use rho_proto_core::config::{self, Transport};
use rho_proto_core::http::{HeaderError, resolve_headers};

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
        assert!(
            matches!(error, HeaderError::ControlCharacter { .. }),
            "{error:?}"
        );
        let error = error.to_string();
        assert!(error.contains("`remote`"), "{error}");
        assert!(error.contains("`Authorization`"), "{error}");
        assert!(error.contains("`MCP_TOKEN`"), "{error}");
        assert!(!error.contains("abc"), "the value leaked: {error}");
    }
    // A tab is allowed in a header value.
    let ambient = vec![("MCP_TOKEN".to_owned(), "Bearer\tabc".to_owned())];
    let resolved = resolve_headers("remote", &ambient, &config).expect("a tab is fine");
    assert_eq!(
        resolved,
        vec![("Authorization".to_owned(), "Bearer\tabc".to_owned())]
    );
}

#[test]
fn inventory_hides_a_servers_secrets_in_reasons_and_call_errors() {
    use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
    use rho_proto_core::runtime::{Health, Inventory, ToolCallError};
    use rho_proto_core::session::CallError;
    use rho_proto_core::wire::jsonrpc::ErrorObject;

    let config = config::parse(
        "[mcp.servers.local]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { KEY = \"literal-secret-1\" }\nenv_from_env = { TOKEN = \"AMBIENT\" }\n",
        "t.toml",
    )
    .expect("valid file");
    let mut inventory = Inventory::new(&config, |_| true);
    inventory.learn_secrets(&[("AMBIENT".to_owned(), "ambient-secret-2".to_owned())]);
    let slot = inventory.find("local").expect("the configured server");
    inventory.record_failed(
        slot,
        FailureKind::Exited,
        "exited\nstderr: key=literal-secret-1 token=ambient-secret-2".to_owned(),
    );
    let view = inventory.view(slot, None).expect("slot");
    assert_eq!(
        view.status,
        ServerStatus::Failed {
            error: "exited\nstderr: key=<redacted> token=<redacted>".to_owned(),
            kind: FailureKind::Exited,
        }
    );
    // A failure reported after startup, too.
    let health = Health {
        failure: Some("died saying ambient-secret-2".to_owned()),
        ..Health::default()
    };
    let view = inventory.view(slot, Some(health)).expect("slot");
    assert!(
        matches!(&view.status, ServerStatus::Failed { error, kind: FailureKind::Ended } if error == "died saying <redacted>"),
        "{:?}",
        view.status
    );
    let error = ToolCallError::Call(CallError::Rpc {
        server: "local".to_owned(),
        error: Box::new(ErrorObject {
            code: -1,
            message: "bad literal-secret-1".to_owned(),
            data: Some(serde_json::json!({"echo": ["ambient-secret-2"]})),
        }),
    });
    let text = format!("{:?}", inventory.redact_call_error(slot, error));
    assert!(
        !text.contains("secret-1") && !text.contains("secret-2"),
        "{text}"
    );
    assert!(text.contains("bad <redacted>"), "{text}");
    // A -32042's words are the server's text too; its URLs are what a
    // person would open, kept exactly.
    let request = rho_proto_core::features::elicitation::url_request_from_params(
        &serde_json::json!({"mode": "url", "elicitationId": "e",
            "message": "key literal-secret-1", "url": "https://a.example/x"}),
        true,
    )
    .expect("valid");
    let error = ToolCallError::Call(CallError::UrlElicitationRequired {
        server: "local".to_owned(),
        message: "needs ambient-secret-2".to_owned(),
        elicitations: vec![request],
    });
    match inventory.redact_call_error(slot, error) {
        ToolCallError::Call(CallError::UrlElicitationRequired {
            message,
            elicitations,
            ..
        }) => {
            assert_eq!(message, "needs <redacted>");
            assert_eq!(elicitations[0].message, "key <redacted>");
            assert_eq!(elicitations[0].url, "https://a.example/x");
        }
        other => panic!("{other:?}"),
    }
}

/// What the host learns after the servers started (an OAuth grant's
/// secrets, its tokens) is hidden too, in every server's reasons and call
/// errors, and in a server started later.
#[test]
fn inventory_hides_what_the_host_learns_after_startup() {
    use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
    use rho_proto_core::runtime::{Inventory, ToolCallError};
    use rho_proto_core::session::CallError;
    use rho_proto_core::text::redact::SecretBook;
    use rho_proto_core::wire::jsonrpc::ErrorObject;

    let text = "[mcp.servers.a]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/a\"\n\
                [mcp.servers.b]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/b\"\n";
    let config = config::parse(text, "t.toml").expect("valid file");
    let book = SecretBook::default();
    let mut inventory = Inventory::new(&config, |id| id == "a");
    inventory.learn_secrets(&[]);
    inventory.learn_from(&book);
    // Learned once the grant ran: after the redactors were made.
    book.learn("eyJ.workload-assertion.sig");
    let a = inventory.find("a").expect("a");
    inventory.record_failed(
        a,
        FailureKind::Handshake,
        "refused eyJ.workload-assertion.sig".to_owned(),
    );
    let view = inventory.view(a, None).expect("slot");
    assert_eq!(
        view.status,
        ServerStatus::Failed {
            error: "refused <redacted>".to_owned(),
            kind: FailureKind::Handshake,
        }
    );
    let error = ToolCallError::Call(CallError::Rpc {
        server: "a".to_owned(),
        error: Box::new(ErrorObject {
            code: -1,
            message: "quoting eyJ.workload-assertion.sig".to_owned(),
            data: None,
        }),
    });
    let text = format!("{:?}", inventory.redact_call_error(a, error));
    assert!(!text.contains("workload-assertion"), "{text}");
    // A server started into the running inventory learns from it too.
    let b = config.get("b").and_then(|e| e.config.clone().ok());
    let b = inventory
        .start_later("b", b.expect("b"), &[], |_| false)
        .expect("b starts later");
    book.learn("at-learned-later-1");
    inventory.record_failed(
        b,
        FailureKind::Unreachable,
        "401 for at-learned-later-1".to_owned(),
    );
    let view = inventory.view(b, None).expect("slot");
    assert_eq!(
        view.status,
        ServerStatus::Failed {
            error: "401 for <redacted>".to_owned(),
            kind: FailureKind::Unreachable,
        }
    );
}

#[test]
fn a_connection_whose_header_variable_is_unset_fails_with_the_typed_header_error() {
    use rho_proto_core::connection::{Connection, HostContext};

    let config = config::parse(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/mcp\"\nheaders_from_env = { Authorization = \"MCP_TOKEN\" }\n",
        "t.toml",
    )
    .expect("valid file");
    let server = config.servers[0].config.as_ref().expect("valid");
    // The clock is never read: the connection fails before it starts.
    let now = std::time::Instant::now();
    match Connection::new(server, &HostContext::default(), now) {
        Err(HeaderError::MissingVariable {
            server,
            header,
            variable,
        }) => {
            assert_eq!(
                (server.as_str(), header.as_str(), variable.as_str()),
                ("remote", "Authorization", "MCP_TOKEN")
            );
        }
        other => panic!("expected a missing variable, got {other:?}"),
    }
}
