//! `rho-conformance-client URL`: the client the official MCP conformance
//! suite drives. `tests/conformance/run` hands the suite this binary as
//! its client command; the suite appends the URL of its mock server,
//! names the scenario in `MCP_CONFORMANCE_SCENARIO` and passes what the
//! scenario gives a client (credentials, tool calls) as JSON in
//! `MCP_CONFORMANCE_CONTEXT`. `RHO_RUNTIME` (`smol`, the default, or
//! `blocking`) picks the executor, as it does for `rho`.
//!
//! It does what each client scenario asks through `rho-host`'s public
//! API, as an agent embedding rho would and as `rho mcp call` does: the
//! config a user would write for the suite's server (an `oauth` table
//! made from the scenario's credentials, their secrets in files),
//! [`Host::builder`] with headless logins into a credential store in
//! memory, then calls and skills. So a passing scenario says something
//! about rho, not about a test double. A scenario it cannot do exits 1
//! saying so rather than pretend. Exit codes: 0 the scenario's part was
//! done, 1 it failed, 2 the command line or the config was wrong.
//!
//! Implementation note: where it lives. This is a test instrument, not a
//! command a person runs, so it is not part of the shipped `rho` (it was
//! the hidden `rho mcp conformance-client`). It is a binary of the
//! unpublished `rho-tests` crate rather than an example of `rho-host`
//! because that keeps the test command simplest: the workspace's test
//! build (`cargo test --workspace`, the first thing `scripts/test` builds)
//! already makes it, at `target/debug/rho-conformance-client`, which is
//! the path `tests/conformance/run --client` is handed; the crate's
//! integration tests (`tests/conformance_client.rs`) name it with
//! `env!("CARGO_BIN_EXE_rho-conformance-client")`, which cargo gives no
//! example; its unit tests run as every other test binary does; and
//! `rho-host`'s examples stay one short file per thing an embedder does.
//! It sits beside the suite's runner and lists rather than in `src/bin/`,
//! so that everything about conformance is in one folder.
//!
//! Stop signals keep their default action (the process ends at once),
//! where `rho` shuts every server down first: this client starts no
//! process (its one server is Streamable HTTP) and stores no login on
//! disk, so there is nothing to shut down but the connections. The one
//! trace a signal can leave is the run's secrets directory (0700, the
//! suite's throwaway credentials) in the temporary directory; the next
//! run with the same pid replaces it.

use std::process::ExitCode;
use std::sync::Arc;

use rho_host::{
    AcceptDefaults, CallOptions, Cancel, ExportedTool, Host, LoginMode, MemoryStore, RuntimeKind,
    ServerStatus,
};
use rho_proto_core::config;
use serde_json::{Map, Value, json};

/// How the command line is written, for `--help` and usage errors.
const USAGE: &str = "usage: rho-conformance-client URL
(the scenario in MCP_CONFORMANCE_SCENARIO, its context in
MCP_CONFORMANCE_CONTEXT, the executor in RHO_RUNTIME: smol or blocking)";

/// Why a run failed, by whose fault.
#[derive(Debug)]
enum Failure {
    /// The command line, the environment or the config made from them is
    /// wrong: exit 2.
    Usage(String),
    /// The scenario's part could not be done (the server failed, a call
    /// failed, the scenario is one this client does not take part in):
    /// exit 1.
    Failed(String),
}

fn main() -> ExitCode {
    init_logging();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            let (code, message) = match failure {
                Failure::Usage(message) => (2, message),
                Failure::Failed(message) => (1, message),
            };
            let message = rho_proto_core::text::terminal::sanitize(&message).into_owned();
            eprintln!("rho-conformance-client: {message}");
            ExitCode::from(code)
        }
    }
}

/// Logs to stderr, which the suite keeps as the client's `stderr.txt`:
/// warnings unless `RUST_LOG` says otherwise.
fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

/// The server URL from the command line (the suite's last argument).
fn url_argument() -> Result<Option<String>, Failure> {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string()
                .map_err(|a| Failure::Usage(format!("not UTF-8: {a:?}\n{USAGE}")))
        })
        .collect::<Result<_, _>>()?;
    match args.as_slice() {
        [flag] if flag == "-h" || flag == "--help" => Ok(None),
        [url] if !url.starts_with('-') => Ok(Some(url.clone())),
        _ => Err(Failure::Usage(format!(
            "expected one argument, the server URL; got {args:?}\n{USAGE}"
        ))),
    }
}

/// The executor `RHO_RUNTIME` names; smol when it is unset or empty.
fn runtime_kind() -> Result<RuntimeKind, Failure> {
    match std::env::var("RHO_RUNTIME") {
        Ok(name) if !name.is_empty() => name
            .parse()
            .map_err(|e| Failure::Usage(format!("RHO_RUNTIME: {e}"))),
        _ => Ok(RuntimeKind::Smol),
    }
}

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

/// Runs the scenario named by `MCP_CONFORMANCE_SCENARIO` against the URL
/// on the command line.
fn run() -> Result<(), Failure> {
    let Some(url) = url_argument()? else {
        println!("{USAGE}");
        return Ok(());
    };
    let kind = runtime_kind()?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let Some(action) = action(&scenario) else {
        return Err(Failure::Failed(format!(
            "conformance scenario `{scenario}` is not supported by this build"
        )));
    };
    let mut text = format!(
        "[mcp.servers.conformance]\ntransport = \"streamable_http\"\nurl = {}\nstartup_timeout_secs = 20\ntool_timeout_secs = 20\n",
        toml_string(&url)
    );
    // As an OAuth server with no stored login: the 401 to `initialize` (or
    // to a later request, where a server lets initialize through) asks the
    // session's authorizer, which logs in; a request refused later
    // re-authorizes. The scenario's credentials become the `oauth` table a
    // user would write, their secrets files only this run can read.
    let secrets = SecretFiles::create()?;
    text.push_str("[mcp.servers.conformance.oauth]\n");
    text.push_str(&oauth_table(&scenario, &scenario_context(), &secrets)?);
    let config =
        config::parse(&text, "<conformance>").map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(entry) = config.get("conformance")
        && let Err(error) = &entry.config
    {
        return Err(Failure::Usage(error.to_string()));
    }
    // The ordinary connect, with a credential store in memory (nothing
    // read from or written to ~/.rho) and the authorizer every OAuth
    // server gets, logging in headless: the suite's mock authorization
    // servers approve at once. The suite answers no form: each takes its
    // defaults.
    let loaded = rho_host::LoadedConfig::from(config);
    let host = Host::builder(&loaded)
        .runtime(kind)
        .services(rho_host::host_services(
            Some(Arc::new(AcceptDefaults)),
            None,
        ))
        .store(Some(Arc::new(MemoryStore::default())))
        .login(LoginMode::Headless)
        .connect()
        .host;
    // Nothing cancels: a stop signal ends the process (see the module doc).
    let cancel = Cancel::new();
    let outcome = match host.server("conformance").map(|s| s.status) {
        Some(ServerStatus::Ready(_)) => match action {
            Action::Connect => Ok(()),
            Action::Call(tool, arguments) => call(&host, tool, arguments(), &cancel),
            Action::Calls(pick) => {
                let listed: Vec<&ExportedTool> = host.tools().server_tools("conformance").collect();
                let context = scenario_context();
                pick(&listed, &context)
                    .into_iter()
                    .try_for_each(|(tool, arguments)| call(&host, &tool, arguments, &cancel))
            }
            Action::Skills { load } => skills(&host, load, &cancel),
        },
        Some(ServerStatus::Failed { error, .. } | ServerStatus::Invalid { error }) => Err(error),
        other => Err(format!("server did not start: {other:?}")),
    };
    host.shutdown();
    outcome.map_err(Failure::Failed)
}

/// Calls `tool` by the server's name; a result marked `isError` fails.
fn call(host: &Host, tool: &str, arguments: Value, cancel: &Cancel) -> Result<(), String> {
    let result = host
        .call(
            ("conformance", tool),
            arguments,
            CallOptions::new().cancel(cancel),
        )
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
fn skills(host: &Host, load: bool, cancel: &Cancel) -> Result<(), String> {
    use rho_proto_core::text::terminal::{sanitize, sanitize_line};
    let listing = host
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
    let loaded = host
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

/// A value for each required property of an object schema, by its type
/// (its own, or its local `$ref`'s target's): what a model would fill in,
/// minus the thought.
fn placeholder_arguments(schema: &Value) -> Value {
    use rho_host::parameters::{keyword, properties, required};
    let mut out = Map::new();
    for name in required(schema) {
        let kind = properties(schema)
            .and_then(|p| p.get(name))
            .and_then(|property| keyword(schema, property, "type"))
            .and_then(Value::as_str);
        let value = match kind {
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

/// The `oauth` table the scenario's `MCP_CONFORMANCE_CONTEXT` calls for,
/// as a user would write it for the same authorization server: the
/// client it hands over (`client_id`, its secret or PKCS#8 key in a file),
/// and the grant its credentials are for — `client_credentials` for the
/// client-credentials scenarios, `identity_assertion` when it hands an ID
/// token and an identity provider (SEP-990), `jwt_bearer` when it hands a
/// workload JWT, else the authorization code grant. Every scenario gets
/// the suite's client ID metadata document URL, as a deployed rho would be
/// configured with its own.
fn oauth_table(scenario: &str, context: &Value, secrets: &SecretFiles) -> Result<String, Failure> {
    let mut table = format!(
        "client_metadata_url = {}\n",
        toml_string(CLIENT_METADATA_URL)
    );
    let mut set = |key: &str, value: &str| {
        table.push_str(&format!("{key} = {}\n", toml_string(value)));
    };
    let text = |key: &str| context[key].as_str();
    if let Some(id) = text("client_id") {
        set("client_id", id);
    }
    if let Some(secret) = text("client_secret") {
        set(
            "client_secret_file",
            &secrets.write("client_secret", secret)?,
        );
    }
    // SEP-1046 private_key_jwt: the context hands over a PKCS#8 PEM.
    if let Some(pem) = text("private_key_pem") {
        if let Some(alg) = text("signing_algorithm").filter(|a| *a != "ES256") {
            return Err(Failure::Usage(format!(
                "signing_algorithm {alg}: rho signs client assertions with ES256 only"
            )));
        }
        set("client_key_file", &secrets.write("client_key.pem", pem)?);
    }
    if scenario.starts_with("auth/client-credentials") {
        set("grant", "client_credentials");
    } else if let (Some(id_token), Some(endpoint)) =
        (text("idp_id_token"), text("idp_token_endpoint"))
    {
        set("grant", "identity_assertion");
        set("id_token_file", &secrets.write("id_token", id_token)?);
        set("idp_token_endpoint", endpoint);
        if let Some(idp_client) = text("idp_client_id") {
            set("idp_client_id", idp_client);
        }
    } else if let Some(jwt) = text("valid_jwt") {
        set("grant", "jwt_bearer");
        set("assertion_file", &secrets.write("workload.jwt", jwt)?);
    }
    Ok(table)
}

/// A directory only this user can read (0700), holding the scenario's
/// secrets as files (0600) for the config to name, removed when dropped.
struct SecretFiles(std::path::PathBuf);

impl SecretFiles {
    fn create() -> Result<Self, Failure> {
        let dir = std::env::temp_dir().join(format!("rho-conformance-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        rho_host::ensure_private_dir(&dir)
            .map_err(|e| Failure::Failed(format!("{}: {e}", dir.display())))?;
        Ok(Self(dir))
    }

    /// Writes `value` to the file `name` and returns its absolute path.
    fn write(&self, name: &str, value: &str) -> Result<String, Failure> {
        use std::io::Write as _;
        let path = self.0.join(name);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options
            .open(&path)
            .and_then(|mut file| file.write_all(value.as_bytes()))
            .map_err(|e| Failure::Failed(format!("{}: {e}", path.display())))?;
        Ok(path.display().to_string())
    }
}

impl Drop for SecretFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
    fn placeholders_take_the_type_behind_a_ref() {
        let schema = json!({"type": "object", "properties": {
            "n": {"$ref": "#/$defs/N"}, "o": {"$ref": "#/definitions/O"}, "gone": {"$ref": "#/$defs/x"}
        }, "required": ["n", "o", "gone"],
           "$defs": {"N": {"type": "integer"}}, "definitions": {"O": {"type": "object"}}});
        assert_eq!(
            placeholder_arguments(&schema),
            json!({"n": 1, "o": {}, "gone": null})
        );
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

    /// The `oauth` table `context` makes, parsed as rho parses any config.
    fn oauth_of(scenario: &str, context: &Value) -> rho_proto_core::config::OAuthConfig {
        let Ok(secrets) = SecretFiles::create() else {
            panic!("a secret dir")
        };
        let text = format!(
            "[mcp.servers.c]\ntransport = \"streamable_http\"\nurl = \"http://localhost:1/mcp\"\n[mcp.servers.c.oauth]\n{}",
            oauth_table(scenario, context, &secrets).unwrap_or_else(|_| panic!("a table"))
        );
        let config = config::parse(&text, "<test>").expect("config");
        let server = config.get("c").expect("c").config.clone().expect("valid");
        let rho_proto_core::config::Transport::StreamableHttp(http) = server.transport else {
            panic!("http")
        };
        http.oauth.expect("oauth")
    }

    #[test]
    fn the_scenario_context_becomes_an_oauth_table_with_secrets_in_files() {
        use rho_proto_core::config::{OAuthGrant, SecretSource};
        let enterprise = oauth_of(
            "auth/enterprise-managed-authorization",
            &json!({"client_id": "xaa", "client_secret": "s3cret", "idp_client_id": "idp",
                    "idp_id_token": "eyJ.id.sig", "idp_issuer": "http://localhost:2",
                    "idp_token_endpoint": "http://localhost:2/token"}),
        );
        assert_eq!(enterprise.grant, OAuthGrant::IdentityAssertion);
        assert_eq!(enterprise.client_id.as_deref(), Some("xaa"));
        assert!(enterprise.client_secret_file.is_some());
        assert_eq!(enterprise.assertion.idp_client_id.as_deref(), Some("idp"));
        assert!(matches!(
            enterprise.assertion.id_token,
            Some(SecretSource::File(_))
        ));
        let workload = oauth_of(
            "auth/wif-jwt-bearer",
            &json!({"client_id": "w", "valid_jwt": "eyJ.w.sig", "expired_jwt": "eyJ.x.sig"}),
        );
        assert_eq!(workload.grant, OAuthGrant::JwtBearer);
        assert!(matches!(
            workload.assertion.assertion,
            Some(SecretSource::File(_))
        ));
        let m2m = oauth_of(
            "auth/client-credentials-basic",
            &json!({"client_id": "m", "client_secret": "s"}),
        );
        assert_eq!(m2m.grant, OAuthGrant::ClientCredentials);
        let person = oauth_of("auth/metadata-default", &Value::Null);
        assert_eq!(person.grant, OAuthGrant::AuthorizationCode);
        assert_eq!(
            person.client_metadata_url.as_deref(),
            Some(CLIENT_METADATA_URL)
        );
    }
}
