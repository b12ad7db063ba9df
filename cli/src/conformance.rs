//! `rho mcp conformance-client <url>`: the client the official MCP
//! conformance suite drives (`tests/conformance/run`).
//!
//! It does what each client scenario asks through the ordinary runtime —
//! the same config model, executor and session as `rho mcp call` — so a
//! passing scenario says something about rho, not about a test double.
//! The scenario comes from `MCP_CONFORMANCE_SCENARIO`; the suite appends
//! the server URL as the last argument. Scenarios this build cannot do yet
//! exit with a clear message rather than pretend.

use std::process::ExitCode;

use rho_proto_core::config;
use rho_proto_core::runtime::registry::ExportedTool;
use rho_proto_core::runtime::status::ServerStatus;
use serde_json::{Map, Value, json};

use crate::Failure;
use rho_host::{Host, RuntimeKind};

/// What a scenario asks of the client once it is connected.
enum Action {
    /// Connect (discover or initialize, list tools) and disconnect.
    Connect,
    /// Call this tool with these arguments.
    Call(&'static str, fn() -> Value),
    /// Call what this picks from the tools the server listed (as rho's
    /// registry holds them) and the scenario's `MCP_CONFORMANCE_CONTEXT`:
    /// server tool names with their arguments, in order.
    Calls(PickCalls),
    /// List the server's skills (SEP-2640) and, with `load`, load the
    /// first one as a host would when the model asks for it: its
    /// `SKILL.md` read then, and used only if it verifies.
    Skills {
        /// Whether to load a skill after listing.
        load: bool,
    },
}

/// Picks calls from the listed tools and the scenario's context.
type PickCalls = fn(&[&ExportedTool], &Value) -> Vec<ToolCall>;

/// A server tool name and the arguments to call it with.
type ToolCall = (String, Value);

/// The client scenarios this build takes part in.
fn action(scenario: &str) -> Option<Action> {
    match scenario {
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => Some(Action::Connect),
        // Every tool that reached the registry: a header scenario's tools
        // with invalid `x-mcp-header` annotations never do.
        "http-standard-headers" | "http-invalid-tool-headers" => Some(Action::Calls(every_tool)),
        // Multi round-trip requests: each tool asks for input (a form the
        // headless responder answers with its defaults) and checks the
        // retry; one is called between them, one answers without
        // `resultType`.
        "sep-2322-client-request-state" => Some(Action::Calls(every_tool)),
        "http-custom-headers" => Some(Action::Calls(context_tool_calls)),
        "json-schema-2020-12-preservation" => Some(Action::Calls(echo_schema)),
        // Skills: listing alone must read no skill file; a load must
        // refuse a `SKILL.md` that fails digest, size or frontmatter
        // verification (and so never go on to its other files).
        "sep-2640-client-no-prefetch" => Some(Action::Skills { load: false }),
        "sep-2640-client-verify-digest"
        | "sep-2640-client-verify-size"
        | "sep-2640-client-verify-frontmatter" => Some(Action::Skills { load: true }),
        "tools_call" => Some(Action::Call("add_numbers", || json!({"a": 2, "b": 3}))),
        "sse-retry" => Some(Action::Call("test_reconnection", || json!({}))),
        "elicitation-sep1034-client-defaults" => {
            Some(Action::Call("test_client_elicitation_defaults", || {
                json!({})
            }))
        }
        // Step-up: `tools/call` needs a wider scope than `tools/list`.
        "auth/scope-step-up" => Some(Action::Call("test-tool", || json!({}))),
        // Migration: the server moves to another authorization server after
        // the first authorized request, so a second one meets a 401.
        "auth/authorization-server-migration" => Some(Action::Call("test-tool", || json!({}))),
        // Authorization scenarios: the login happens before connecting, or
        // when the server first refuses a request.
        s if s.starts_with("auth/") => Some(Action::Connect),
        _ => None,
    }
}

/// Runs the scenario named by `MCP_CONFORMANCE_SCENARIO` against `url`.
pub(crate) fn run(kind: RuntimeKind, url: &str) -> Result<ExitCode, Failure> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(action) = action(&scenario) else {
        return Err(Failure::Runtime(format!(
            "conformance scenario `{scenario}` is not supported by this build"
        )));
    };
    let mut text = format!(
        "[mcp.servers.conformance]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\ntool_timeout_secs = 20\n",
        toml_string(url)
    );
    let authorizer = authorizer(&scenario, url, kind)?;
    // As an OAuth server with no stored login: the 401 to `initialize` (or
    // to a later request, where a server lets initialize through) asks the
    // authorizer, which logs in; a request refused later re-authorizes.
    text.push_str("[mcp.servers.conformance.oauth]\n");
    let config =
        config::parse(&text, "<conformance>").map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(entry) = config.get("conformance") {
        if let Err(error) = &entry.config {
            return Err(Failure::Usage(error.to_string()));
        }
    }
    // The suite answers no prompt: forms take their defaults.
    let mut options = rho_os::options_from_process_env();
    options.host = crate::questions::services(true, None);
    options.host.authorizer = Some(authorizer);
    let cancel = crate::signals::install();
    options.interrupt = Some(std::sync::Arc::clone(&cancel));
    let runtime = crate::unless_stopped(crate::start_host(kind, &config, options, |_| true))?;
    let outcome = match runtime.server("conformance").map(|s| s.status) {
        Some(ServerStatus::Ready(_)) => match action {
            Action::Connect => Ok(()),
            Action::Call(tool, arguments) => call(&runtime, tool, arguments(), &cancel),
            Action::Calls(pick) => {
                let listed: Vec<&ExportedTool> =
                    runtime.tools().server_tools("conformance").collect();
                let context = scenario_context();
                pick(&listed, &context)
                    .into_iter()
                    .try_for_each(|(tool, arguments)| call(&runtime, &tool, arguments, &cancel))
            }
            Action::Skills { load } => skills(&runtime, load, &cancel),
        },
        Some(ServerStatus::Failed { error } | ServerStatus::Invalid { error }) => Err(error),
        other => Err(format!("server did not start: {other:?}")),
    };
    runtime.shutdown();
    crate::check_stopped()?;
    outcome
        .map(|()| ExitCode::SUCCESS)
        .map_err(Failure::Runtime)
}

/// Calls `tool` by the server's name; a result marked `isError` fails.
fn call(
    runtime: &Host,
    tool: &str,
    arguments: Value,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<(), String> {
    let result = runtime
        .call_server_tool_with("conformance", tool, arguments, &mut |_| {}, cancel)
        .map_err(|e| e.to_string())?;
    let text = rho_proto_core::text::terminal::sanitize(&result.text()).into_owned();
    if result.is_error {
        return Err(format!("tool `{tool}` reported an error: {text}"));
    }
    eprintln!("{text}");
    Ok(())
}

/// Lists the server's skills, printing each, and with `load` loads the
/// first: a refusal (the content failed verification) is the error.
fn skills(
    runtime: &Host,
    load: bool,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<(), String> {
    use rho_proto_core::text::terminal::{sanitize, sanitize_line};
    let listing = runtime
        .list_skills("conformance", cancel)
        .map_err(|e| e.to_string())?;
    for skill in &listing.skills {
        eprintln!(
            "skill {} ({}): {}",
            sanitize_line(skill.name()),
            sanitize_line(&skill.uri),
            sanitize(skill.description())
        );
    }
    for invalid in &listing.invalid {
        eprintln!("invalid skill entry: {}", sanitize(&invalid.reason));
    }
    if !load {
        return Ok(());
    }
    let entry = listing
        .skills
        .first()
        .ok_or("the server lists no skill to load")?;
    let loaded = runtime
        .load_skill("conformance", entry, cancel)
        .map_err(|e| e.to_string())?;
    eprintln!(
        "loaded skill {}:\n{}",
        sanitize_line(loaded.entry.name()),
        sanitize(loaded.body())
    );
    Ok(())
}

/// `MCP_CONFORMANCE_CONTEXT`, or `null`.
fn scenario_context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null)
}

/// Every listed tool, with arguments made from its schema's required
/// properties (see [`placeholder_arguments`]).
fn every_tool(tools: &[&ExportedTool], _: &Value) -> Vec<ToolCall> {
    tools
        .iter()
        .map(|t| (t.tool.clone(), placeholder_arguments(&t.input_schema)))
        .collect()
}

/// A value for each required property of an object schema, by its type:
/// what a model would fill in, minus the thought.
fn placeholder_arguments(schema: &Value) -> Value {
    let mut out = Map::new();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("string") => json!("us-west1"),
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => Value::Null,
        };
        out.insert(name.to_owned(), value);
    }
    Value::Object(out)
}

/// The calls the scenario's context lists (`toolCalls`: name and
/// arguments), as the suite hands them to a client.
fn context_tool_calls(_: &[&ExportedTool], context: &Value) -> Vec<ToolCall> {
    context["toolCalls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| Some((c["name"].as_str()?.to_owned(), c["arguments"].clone())))
                .collect()
        })
        .unwrap_or_default()
}

/// The focal tool's `inputSchema`, as rho holds it, echoed back through
/// `json_schema_echo`: what rho kept of a JSON Schema 2020-12 schema.
fn echo_schema(tools: &[&ExportedTool], _: &Value) -> Vec<ToolCall> {
    tools
        .iter()
        .find(|t| t.tool == "json_schema_2020_12_tool")
        .map(|focal| {
            vec![(
                "json_schema_echo".to_owned(),
                json!({ "schema": focal.input_schema }),
            )]
        })
        .unwrap_or_default()
}

/// The suite's client ID metadata document URL: the conformance client is
/// configured with it (`oauth.client_metadata_url`), as a deployed rho
/// would be with its own.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// For every scenario (a server that needs no token never asks): the
/// [`Authorizer`] of the session — the CLI's own, headless (the suite's
/// mock authorization server approves at once with a redirect), over a
/// credential store in memory. The session asks it when the server first
/// refuses a request, `initialize` included: there is no login before
/// connecting, so the suite exercises the same path as a token that
/// expires, is revoked or is refused mid-session. Pre-registered and
/// client-credentials scenarios pass their client in
/// `MCP_CONFORMANCE_CONTEXT`, as a user would configure `oauth.client_id`
/// and `oauth.client_secret_from_env`.
///
/// [`Authorizer`]: rho_proto_core::host::Authorizer
fn authorizer(
    scenario: &str,
    url: &str,
    kind: RuntimeKind,
) -> Result<std::sync::Arc<dyn rho_proto_core::host::Authorizer>, Failure> {
    use rho_proto_core::oauth::flow::{GrantKind, LoginSettings};
    use rho_proto_core::oauth::store::StoreKey;
    use rho_proto_core::oauth::token::{Client, ClientAuth};
    let url = url::Url::parse(url).map_err(|e| Failure::Usage(format!("{url}: {e}")))?;
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    // SEP-1046 private_key_jwt: the context hands over a PKCS#8 PEM.
    let client_assertion = match context["private_key_pem"].as_str() {
        Some(_)
            if context["signing_algorithm"]
                .as_str()
                .is_some_and(|a| a != "ES256") =>
        {
            return Err(Failure::Usage(format!(
                "signing_algorithm {}: rho signs client assertions with ES256 only",
                context["signing_algorithm"]
            )));
        }
        Some(pem) => Some(rho_proto_core::oauth::assertion::ClientAssertionKey {
            signer: rho_host::jwt_key::Es256Key::signer_from_pem(pem)
                .map_err(|e| Failure::Usage(format!("private_key_pem: {e}")))?,
            now_unix: rho_host::credentials::now_unix(),
        }),
        None => None,
    };
    let client = context["client_id"].as_str().map(|id| Client {
        id: id.to_owned(),
        secret: context["client_secret"].as_str().map(str::to_owned),
        auth: if client_assertion.is_some() {
            ClientAuth::PrivateKeyJwt
        } else if context["client_secret"].is_string() {
            ClientAuth::ClientSecretBasic
        } else {
            ClientAuth::None
        },
    });
    let grant = if scenario.starts_with("auth/client-credentials") {
        GrantKind::ClientCredentials
    } else {
        GrantKind::AuthorizationCode {
            redirect_uri: rho_host::login::redirect_uri(rho_host::login::HEADLESS_REDIRECT_PORT),
        }
    };
    let key = StoreKey::new("conformance", &url);
    let settings = LoginSettings {
        server_url: url,
        grant,
        client,
        stored_client: None,
        client_metadata_url: Some(CLIENT_METADATA_URL.to_owned()),
        scopes: None,
        extra_scopes: Vec::new(),
        previous: None,
        client_name: "rho".into(),
        client_assertion,
        dpop: Default::default(),
    };
    let authorizer = rho_host::reauth::StoreAuthorizer::for_one(
        std::sync::Arc::new(rho_host::reauth::MemoryStore::default()),
        "conformance",
        key,
        settings,
        rho_host::login::LoginMode::Headless,
        kind,
    );
    Ok(std::sync::Arc::new(authorizer))
}

/// A TOML basic string for `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_fill_required_properties_by_type_only() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string"}, "n": {"type": "integer"}, "flag": {"type": "boolean"},
            "free": {}, "optional": {"type": "string"}
        }, "required": ["region", "n", "flag", "free"]});
        assert_eq!(
            placeholder_arguments(&schema),
            json!({"region": "us-west1", "n": 1, "flag": true, "free": null})
        );
        assert_eq!(placeholder_arguments(&json!({"type": "object"})), json!({}));
    }

    #[test]
    fn context_calls_are_taken_in_order_and_nameless_ones_skipped() {
        let context = json!({"toolCalls": [
            {"name": "a", "arguments": {"x": 1}},
            {"arguments": {}},
            {"name": "b", "arguments": {"verbose": null}}
        ]});
        assert_eq!(
            context_tool_calls(&[], &context),
            vec![
                ("a".to_owned(), json!({"x": 1})),
                ("b".to_owned(), json!({"verbose": null}))
            ]
        );
        assert!(context_tool_calls(&[], &Value::Null).is_empty());
    }
}
