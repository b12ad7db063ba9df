//! The `rho` binary end to end: which config file it reads, what `rho mcp
//! list`, `show` and `call` print, their exit codes (0 fine, 1 a server,
//! entry or tool failed, 2 usage or config-file errors), that secrets never
//! reach the output, and that nothing is left running once it exits.
//!
//! Every run gets its own scratch `HOME`, so the user's real `~/.rho` is
//! never read, a null stdin and no `RUST_LOG`. Servers are the pinned real
//! ones in `tests/servers` and the `misbehaving.js` fixture.
//!
//! Each test body takes the [`Runtime`] to run `rho` on and
//! [`both_executors!`] turns it into one `#[test]` per executor
//! (`<name>::smol`, `<name>::blocking`); the [`Scene`] passes the choice
//! to every run as `RHO_RUNTIME`, so argument lists stay as a user would
//! type them.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::{Run, Scene, arg};
use rho_tests::{
    EverythingHttp, everything_js, filesystem_js, misbehaving_js, node_server, pdf_js,
    read_pidfile, toml_str, wait_gone,
};
use serde_json::Value;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// The `servers` entry with this `id` in a `list --json` document.
fn server<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("no servers array: {doc}"))
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no server `{id}` in {doc}"))
}

/// The `id`s of a `list --json` document, in order.
fn server_ids(doc: &Value) -> Vec<&str> {
    doc["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("no servers array: {doc}"))
        .iter()
        .map(|s| s["id"].as_str().expect("id is a string"))
        .collect()
}

/// The exported tool names of one server object.
fn tool_names(server: &Value) -> Vec<&str> {
    server["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools array: {server}"))
        .iter()
        .map(|t| t["name"].as_str().expect("tool name is a string"))
        .collect()
}

/// The table row (line) of the text `list` that starts with `id`.
fn row<'a>(run: &'a Run, id: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id))
        .unwrap_or_else(|| panic!("no row for `{id}`\n{run}"))
}

/// A stdio server that writes `marker` if it is ever started.
fn marker_server(id: &str, marker: &Path) -> String {
    let script = format!(
        "require('fs').writeFileSync({}, 'x')",
        serde_json::to_string(arg(marker)).expect("JSON string")
    );
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [\"-e\", {}]\n",
        toml_str(&script)
    )
}

fn everything(id: &str) -> String {
    node_server(id, &everything_js(), &["stdio"])
}

/// The fixture on the TypeScript SDK 2.x whose tool `post-page` takes
/// parameters given by `$ref` and echoes its arguments as JSON
/// (`tests/servers/fixtures/refs-server.js`).
fn refs(id: &str) -> String {
    // Says so when the pinned SDK is not installed.
    rho_tests::node_modules();
    let script = rho_tests::tests_dir().join("servers/fixtures/refs-server.js");
    node_server(id, &script, &[])
}

/// Runs `rho args...` again with `--record`, asserts that it exits with
/// `code` (as the same run without it did: a run that failed for another
/// reason would show nothing) having opened the transcript, and that no
/// session was ever built: a transcript gets a header line for each
/// session the moment it is constructed, before any process is spawned,
/// so an empty one is positive evidence that nothing was started (a
/// marker file alone cannot show that: rho kills what it started when it
/// exits).
fn assert_no_session(s: &Scene, args: &[&str], code: i32, why: &str) {
    let record = s.dir().join(format!("no-session-{}.jsonl", args.len()));
    let mut with_record = vec!["--record", arg(&record)];
    with_record.extend_from_slice(args);
    let run = s.rho(&with_record);
    assert_eq!(
        run.code,
        Some(code),
        "{why}: with --record, rho exited otherwise than without it\n{run}"
    );
    // rho opens the transcript before anything else it does for `mcp`
    // commands, so a missing one means the run never got that far.
    let text = std::fs::read_to_string(&record)
        .unwrap_or_else(|e| panic!("{why}: no transcript at {}: {e}\n{run}", record.display()));
    assert!(
        !text.contains("rho_transcript"),
        "{why}: a session was built\n{text}"
    );
}

/// Waits up to `limit` for a file to contain `needle`.
fn wait_for_text(path: &Path, needle: &str, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to five seconds for a file to appear.
fn wait_for_file(path: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path.exists()
}

// ---------------------------------------------------------------------------
// list

fn list_without_connect_starts_nothing_and_reports_not_started(rt: Runtime) {
    let s = Scene::new(RHO, "list-no-connect", rt);
    let marker = s.dir().join("marker");
    let config = s.write("config.toml", &marker_server("tripwire", &marker));

    let run = s.rho(&["--config", arg(&config), "mcp", "list"]);
    run.expect_code(0);
    let line = row(&run, "tripwire");
    assert!(line.contains("not started"), "{run}");
    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--json"]);
    run.expect_code(0);
    assert_eq!(server(&run.json(), "tripwire")["status"], "not_started");
    assert!(!marker.exists(), "list without --connect ran the server");
    assert_no_session(
        &s,
        &["--config", arg(&config), "mcp", "list"],
        0,
        "list without --connect",
    );

    // Control: the tripwire does fire when the server is started.
    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--connect"]);
    assert!(
        wait_for_file(&marker),
        "--connect did not run the server\n{run}"
    );
}

fn list_connect_json_reports_ready_servers_with_tools_and_handshake_facts(rt: Runtime) {
    let s = Scene::new(RHO, "list-connect-json", rt);
    let root = s.dir().join("root");
    std::fs::create_dir_all(&root).expect("create root");
    let mut text = everything("everything");
    text.push_str(&node_server("filesystem", &filesystem_js(), &[arg(&root)]));
    let config = s.write("config.toml", &text);

    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["schema"], 1, "{doc}");
    assert_eq!(doc["config"], arg(&config), "{doc}");
    assert_eq!(server_ids(&doc), ["everything", "filesystem"]);
    for id in ["everything", "filesystem"] {
        let entry = server(&doc, id);
        assert_eq!(entry["status"], "ready", "{entry}");
        assert!(entry["server_info"]["name"].is_string(), "{entry}");
        assert!(entry["protocol_version"].is_string(), "{entry}");
        assert!(entry["elapsed_ms"].is_u64(), "{entry}");
        assert!(!tool_names(entry).is_empty(), "{entry}");
        assert_eq!(entry["max_message_bytes"], 16 * 1024 * 1024, "{entry}");
    }
    let everything = server(&doc, "everything");
    assert_eq!(everything["server_info"]["name"], "mcp-servers/everything");
    assert!(
        tool_names(everything).contains(&"mcp__everything__echo"),
        "{everything}"
    );
    assert!(
        tool_names(server(&doc, "filesystem")).contains(&"mcp__filesystem__read_text_file"),
        "{doc}"
    );
}

/// `rho mcp search`: the best match first, one line each with its
/// summary; `--json` has the same hits with their schema sizes; a query
/// nothing matches says so and exits 1.
fn search_ranks_the_tools_of_every_server(rt: Runtime) {
    let s = Scene::new(RHO, "search", rt);
    let root = s.dir().join("root");
    std::fs::create_dir_all(&root).expect("create root");
    let mut text = everything("everything");
    text.push_str(&node_server("filesystem", &filesystem_js(), &[arg(&root)]));
    let config = s.write("config.toml", &text);
    let search = |words: &[&str]| {
        let mut line = vec!["--config", arg(&config), "mcp", "search"];
        line.extend_from_slice(words);
        s.rho(&line)
    };
    let run = search(&["read", "a", "text", "file", "--limit", "3"]);
    run.expect_code(0);
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(
            "mcp__filesystem__read_text_file (Read Text File)  filesystem:read_text_file  schema "
        ),
        "{run}"
    );
    assert!(
        run.stdout
            .contains("\n    Read the complete contents of a file"),
        "{run}"
    );
    assert!(run.stdout.contains("3 of "), "{run}");

    let run = search(&["sum", "of", "two", "numbers", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["document"], "search", "{doc}");
    assert_eq!(doc["query"], "sum of two numbers", "{doc}");
    let hit = &doc["hits"][0];
    assert_eq!(hit["tool"], "get-sum", "{doc}");
    assert_eq!(hit["server"], "everything", "{doc}");
    assert_eq!(hit["parameters"], serde_json::json!(["a", "b"]), "{doc}");
    assert!(
        hit["schema_bytes"].as_u64().is_some_and(|n| n > 20),
        "{doc}"
    );
    assert!(doc["indexed"].as_u64().is_some_and(|n| n > 20), "{doc}");

    let run = search(&["kubernetes"]);
    run.expect_code(1);
    assert!(
        run.stdout
            .starts_with("no tool matches \"kubernetes\" among "),
        "{run}"
    );
}

// ---------------------------------------------------------------------------
// Which config file

fn default_config_is_home_rho_config_toml(rt: Runtime) {
    let s = Scene::new(RHO, "default-config", rt);
    std::fs::create_dir_all(s.home().join(".rho")).expect("create ~/.rho");
    let default = s.home().join(".rho/config.toml");
    std::fs::write(&default, everything("from_home")).expect("write default");

    let run = s.rho(&["mcp", "list"]);
    run.expect_code(0);
    assert!(row(&run, "from_home").contains("not started"), "{run}");
    let run = s.rho(&["mcp", "list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["config"], arg(&default), "{doc}");
    assert_eq!(server_ids(&doc), ["from_home"]);
}

fn explicit_config_replaces_default_without_merging(rt: Runtime) {
    let s = Scene::new(RHO, "explicit-config", rt);
    std::fs::create_dir_all(s.home().join(".rho")).expect("create ~/.rho");
    std::fs::write(s.home().join(".rho/config.toml"), everything("from_home"))
        .expect("write default");
    let project = s.write("project.toml", &everything("from_project"));

    let run = s.rho(&["--config", arg(&project), "mcp", "list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["config"], arg(&project), "{doc}");
    assert_eq!(server_ids(&doc), ["from_project"]);
    let run = s.rho(&["--config", arg(&project), "mcp", "list"]);
    run.expect_code(0);
    row(&run, "from_project");
    assert!(!run.all().contains("from_home"), "{run}");
}

fn missing_default_config_configures_no_server_and_exits_0(rt: Runtime) {
    let s = Scene::new(RHO, "missing-default", rt);
    let run = s.rho(&["mcp", "list"]);
    run.expect_code(0);
    assert!(run.stdout.contains("No MCP servers configured"), "{run}");
    let run = s.rho(&["mcp", "list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["schema"], 1, "{doc}");
    assert_eq!(doc["config"], Value::Null, "{doc}");
    assert_eq!(doc["servers"], serde_json::json!([]), "{doc}");
}

fn missing_explicit_config_exits_2_naming_the_path(rt: Runtime) {
    let s = Scene::new(RHO, "missing-explicit", rt);
    let missing = s.dir().join("no-such-config.toml");
    let run = s.rho(&["--config", arg(&missing), "mcp", "list"]);
    run.expect_code(2);
    assert!(run.stderr.contains(arg(&missing)), "{run}");
    assert_eq!(run.stdout, "", "{run}");
}

// ---------------------------------------------------------------------------
// Config errors and exit codes

fn toml_syntax_error_exits_2_with_file_line_and_column(rt: Runtime) {
    let s = Scene::new(RHO, "syntax-error", rt);
    let config = s.write(
        "config.toml",
        "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \n",
    );
    let run = s.rho(&["--config", arg(&config), "mcp", "list"]);
    run.expect_code(2);
    let location = format!("{}:3:11:", arg(&config));
    assert!(run.stderr.contains(&location), "want {location}\n{run}");
    assert_eq!(run.stdout, "", "{run}");
}

fn unknown_key_under_mcp_exits_2_naming_the_key(rt: Runtime) {
    let s = Scene::new(RHO, "unknown-mcp-key", rt);
    let mut text = everything("everything");
    text.push_str("[mcp.servrs.other]\ncommand = \"node\"\n");
    let config = s.write("config.toml", &text);
    let run = s.rho(&["--config", arg(&config), "mcp", "list"]);
    run.expect_code(2);
    assert!(run.stderr.contains("mcp.servrs"), "{run}");
    assert!(run.stderr.contains(arg(&config)), "{run}");
    assert_eq!(run.stdout, "", "{run}");
}

fn invalid_entry_is_listed_with_its_key_path_exits_1_and_others_still_load(rt: Runtime) {
    let s = Scene::new(RHO, "invalid-entry", rt);
    let mut text = everything("everything");
    text.push_str("[mcp.servers.typo]\ntransport = \"stdio\"\ncomand = \"node\"\n");
    let config = s.write("config.toml", &text);

    let run = s.rho(&["--config", arg(&config), "mcp", "list"]);
    run.expect_code(1);
    let typo = row(&run, "typo");
    assert!(typo.contains("invalid"), "{run}");
    assert!(typo.contains("mcp.servers.typo.comand"), "{run}");
    assert!(row(&run, "everything").contains("not started"), "{run}");

    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(1);
    let doc = run.json();
    let typo = server(&doc, "typo");
    assert_eq!(typo["status"], "invalid", "{typo}");
    let error = typo["error"]
        .as_str()
        .expect("invalid entries carry an error");
    assert!(error.contains("mcp.servers.typo.comand"), "{error}");
    assert_eq!(server(&doc, "everything")["status"], "ready", "{doc}");
}

fn failed_server_with_connect_exits_1_and_names_the_executable(rt: Runtime) {
    let s = Scene::new(RHO, "failed-server", rt);
    let mut text = String::from(
        "[mcp.servers.missing]\ntransport = \"stdio\"\ncommand = \"rho-test-no-such-executable\"\n",
    );
    text.push_str(&everything("everything"));
    let config = s.write("config.toml", &text);

    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(1);
    let doc = run.json();
    let missing = server(&doc, "missing");
    assert_eq!(missing["status"], "failed", "{missing}");
    let error = missing["error"]
        .as_str()
        .expect("failed entries carry an error");
    assert!(error.contains("rho-test-no-such-executable"), "{error}");
    assert_eq!(server(&doc, "everything")["status"], "ready", "{doc}");

    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--connect"]);
    run.expect_code(1);
    let line = row(&run, "missing");
    assert!(line.contains("failed"), "{run}");
    assert!(line.contains("rho-test-no-such-executable"), "{run}");
}

fn disabled_server_is_reported_disabled_never_started_and_exits_0(rt: Runtime) {
    let s = Scene::new(RHO, "disabled", rt);
    let marker = s.dir().join("marker");
    let mut text = marker_server("off", &marker);
    text.push_str("enabled = false\n");
    let config = s.write("config.toml", &text);

    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let off = server(&run.json(), "off").clone();
    assert_eq!(off["status"], "disabled", "{off}");
    assert_eq!(off["enabled"], false, "{off}");
    let run = s.rho(&["--config", arg(&config), "mcp", "list"]);
    run.expect_code(0);
    assert!(row(&run, "off").contains("disabled"), "{run}");
    assert!(!marker.exists(), "a disabled server was started");
    assert_no_session(
        &s,
        &["--config", arg(&config), "mcp", "list", "--connect"],
        0,
        "a disabled server",
    );
}

// ---------------------------------------------------------------------------
// Secrets

fn secret_values_never_appear_in_list_or_show_output(rt: Runtime) {
    const SECRETS: [&str; 3] = ["sk-secret-literal", "hdr-secret-literal", "env-secret"];
    let s = Scene::new(RHO, "secrets", rt);
    let mut text = everything("local");
    text.push_str("env = { API_TOKEN = \"sk-secret-literal\" }\n");
    text.push_str(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n\
         headers = { X-Api-Key = \"hdr-secret-literal\" }\n\
         headers_from_env = { Authorization = \"MCP_AUTH\" }\n",
    );
    let config = s.write("config.toml", &text);
    let env = [("MCP_AUTH", "Bearer env-secret")];
    let rho = |args: &[&str]| {
        let mut all = vec!["--config", arg(&config), "mcp"];
        all.extend_from_slice(args);
        let run = s.rho_env(&all, &env);
        for secret in SECRETS {
            assert!(!run.all().contains(secret), "`{secret}` was printed\n{run}");
        }
        run
    };

    let table = rho(&["list"]);
    table.expect_code(0);
    row(&table, "local");
    row(&table, "remote");
    let run = rho(&["list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(
        server(&doc, "local")["env_names"],
        serde_json::json!(["API_TOKEN"])
    );
    assert_eq!(
        server(&doc, "remote")["header_names"],
        serde_json::json!(["Authorization", "X-Api-Key"])
    );

    for args in [&["show", "local", "--json"][..], &["show", "local"]] {
        let run = rho(args);
        run.expect_code(0);
        assert!(run.stdout.contains("API_TOKEN"), "{run}");
    }
    for args in [&["show", "remote", "--json"][..], &["show", "remote"]] {
        let run = rho(args);
        run.expect_code(0);
        assert!(run.stdout.contains("X-Api-Key"), "{run}");
        assert!(run.stdout.contains("Authorization"), "{run}");
    }

    // A live stdio server with debug logging on still prints no value.
    let run = rho(&["--verbose", "show", "local", "--connect", "--json"]);
    run.expect_code(0);
    assert_eq!(run.json()["status"], "ready", "{run}");
    assert!(run.stdout.contains("API_TOKEN"), "{run}");
}

// ---------------------------------------------------------------------------
// show

fn show_connect_json_reports_ready_with_tool_descriptions_and_input_schemas(rt: Runtime) {
    let s = Scene::new(RHO, "show-connect", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "show",
        "everything",
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["schema"], 1, "{doc}");
    assert_eq!(doc["id"], "everything", "{doc}");
    assert_eq!(doc["status"], "ready", "{doc}");
    let tools = doc["tools"].as_array().expect("tools array");
    assert!(!tools.is_empty(), "{doc}");
    for tool in tools {
        assert!(tool["description"].is_string(), "{tool}");
        assert!(tool["input_schema"].is_object(), "{tool}");
    }
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp__everything__echo")
        .unwrap_or_else(|| panic!("no echo tool: {doc}"));
    assert_eq!(echo["tool"], "echo");
    assert!(
        echo["input_schema"]["properties"]["message"].is_object(),
        "{echo}"
    );
}

/// An MCP Apps server: its tools for the app only are not exported (not
/// in `list`, not callable), yet `show` lists them marked app-only with
/// the reason, and `show --json` keeps every tool's `_meta` as sent.
fn show_lists_tools_for_an_mcp_app_only_apart_and_keeps_their_meta(rt: Runtime) {
    let s =
        Scene::new(RHO, "mcp-app", rt).with_config(&node_server("pdf", &pdf_js(), &["--stdio"]));

    let run = s.rho(&["mcp", "list", "--connect", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    let pdf = server(&doc, "pdf");
    assert_eq!(
        tool_names(pdf),
        [
            "mcp__pdf__display_pdf",
            "mcp__pdf__interact",
            "mcp__pdf__list_pdfs"
        ],
        "{pdf}"
    );
    let app_only: Vec<&Value> = pdf["app_only_tools"]
        .as_array()
        .expect("app_only_tools")
        .iter()
        .collect();
    let names: Vec<&str> = app_only.iter().filter_map(|t| t["tool"].as_str()).collect();
    assert_eq!(names, rho_tests::PDF_APP_ONLY, "{pdf}");
    assert_eq!(
        app_only[5]["visibility"],
        serde_json::json!(["app"]),
        "{pdf}"
    );

    let run = s.rho(&["mcp", "show", "pdf", "--connect", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    let display = doc["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["tool"] == "display_pdf"))
        .unwrap_or_else(|| panic!("no display_pdf: {doc}"));
    // As the server sent it: the view under `ui`, and its deprecated flat key.
    assert_eq!(
        display["_meta"],
        serde_json::json!({
            "ui": {"resourceUri": "ui://pdf-viewer/mcp-app.html"},
            "ui/resourceUri": "ui://pdf-viewer/mcp-app.html",
        }),
        "{display}"
    );
    assert_eq!(display["resource_uri"], "ui://pdf-viewer/mcp-app.html");
    let save = doc["app_only_tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["tool"] == "save_pdf"))
        .unwrap_or_else(|| panic!("no app-only save_pdf: {doc}"));
    assert_eq!(
        save["_meta"],
        serde_json::json!({"ui": {"visibility": ["app"]}}),
        "{save}"
    );
    assert!(save["input_schema"].is_object(), "{save}");
    let reason = save["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("without \"model\""), "{save}");

    let run = s.rho(&["mcp", "show", "pdf", "--connect"]);
    run.expect_code(0);
    let text = &run.stdout;
    assert!(text.contains("  tools (3):"), "{run}");
    assert!(
        text.contains("      app view: ui://pdf-viewer/mcp-app.html"),
        "{run}"
    );
    let apart = text
        .find("for its MCP App only, not exported to the model (6):")
        .unwrap_or_else(|| panic!("no app-only section\n{run}"));
    let save = text
        .find("    save_pdf — Save PDF")
        .expect("save_pdf listed");
    assert!(apart < save, "{run}");
    assert!(
        text[save..].contains("app-only: its `_meta.ui.visibility` is [\"app\"]"),
        "{run}"
    );
    assert!(!text.contains("mcp__pdf__save_pdf"), "{run}");
    let run = s.rho(&["mcp", "list", "--connect"]);
    run.expect_code(0);
    let line = row(&run, "pdf");
    assert!(
        line.starts_with("pdf") && line.contains(" 3 tools · "),
        "{run}"
    );
    assert!(
        line.contains("6 for its MCP App only, not exported"),
        "{run}"
    );

    // Called by the server's own name, it is refused, saying why.
    let run = s.rho(&[
        "mcp",
        "call",
        "pdf",
        "save_pdf",
        "url=/nonexistent/x.pdf",
        "data=eA==",
    ]);
    run.expect_code(1);
    assert!(
        run.stderr
            .contains("tool `save_pdf` of server `pdf` is not exported"),
        "{run}"
    );
}

fn show_unknown_server_exits_2_naming_the_configured_servers(rt: Runtime) {
    let s = Scene::new(RHO, "show-unknown", rt);
    let mut text = everything("everything");
    text.push_str(&everything("second"));
    let config = s.write("config.toml", &text);
    let run = s.rho(&["--config", arg(&config), "mcp", "show", "nosuch"]);
    run.expect_code(2);
    assert!(run.stderr.contains("nosuch"), "{run}");
    assert!(run.stderr.contains("everything"), "{run}");
    assert!(run.stderr.contains("second"), "{run}");
}

fn show_without_connect_says_the_server_is_not_started(rt: Runtime) {
    let s = Scene::new(RHO, "show-no-connect", rt);
    let marker = s.dir().join("marker");
    let config = s.write("config.toml", &marker_server("tripwire", &marker));
    let run = s.rho(&["--config", arg(&config), "mcp", "show", "tripwire"]);
    run.expect_code(0);
    assert!(run.stdout.contains("not started"), "{run}");
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "show",
        "tripwire",
        "--json",
    ]);
    run.expect_code(0);
    assert_eq!(run.json()["status"], "not_started", "{run}");
    assert!(!marker.exists(), "show without --connect ran the server");
    assert_no_session(
        &s,
        &["--config", arg(&config), "mcp", "show", "tripwire"],
        0,
        "show without --connect",
    );
}

// ---------------------------------------------------------------------------
// call

fn call_prints_exactly_the_result_text_and_exits_0(rt: Runtime) {
    let s = Scene::new(RHO, "call-echo", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "echo",
        r#"{"message":"hi"}"#,
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: hi\n", "{run}");
}

/// A server on the official Python SDK (`mcp` 2.x) or fastmcp, from the
/// interop fixtures (`tests/interop/install` makes their venvs).
fn python_sdk_server(id: &str, sdk: &str) -> String {
    let dir = rho_tests::tests_dir().join("interop/python").join(sdk);
    let python = dir.join(".venv/bin/python");
    assert!(
        python.exists(),
        "the interop SDKs are not installed: run `tests/interop/install` (scripts/test does it)"
    );
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = {}\nargs = [{}, \"stdio\"]\n",
        rho_tests::toml_path(&python),
        rho_tests::toml_path(&dir.join("server.py"))
    )
}

/// The Python SDK and fastmcp send a `-> str` tool's answer as
/// `structuredContent: {"result": "..."}` beside the text: `call` prints
/// the string, and `--json`'s `model_text` is the string, once. A tool
/// returning an object (`structured`) is unchanged: its JSON.
fn call_of_a_python_str_tool_prints_the_string_not_a_result_wrapper(rt: Runtime) {
    for sdk in ["mcp2", "fastmcp"] {
        let s = Scene::new(RHO, &format!("call-python-{sdk}"), rt);
        let config = s.write("config.toml", &python_sdk_server("py", sdk));
        let call = |tool: &str, json: bool| {
            let mut args = vec!["--config", arg(&config), "mcp", "call", "py", tool];
            if tool == "echo" {
                args.push("message=hi");
            }
            if json {
                args.push("--json");
            }
            let run = s.rho(&args);
            run.expect_code(0);
            run
        };
        let run = call("echo", false);
        assert_eq!(run.stdout, "Echo: hi\n", "{sdk}: {run}");
        let doc = call("echo", true).json();
        assert_eq!(doc["model_text"], "Echo: hi", "{sdk}: {doc}");
        assert_eq!(
            doc["structured_content"],
            serde_json::json!({"result": "Echo: hi"}),
            "{sdk}: the result as sent is kept"
        );
        let doc = call("structured", true).json();
        let model: Value = serde_json::from_str(doc["model_text"].as_str().expect("text"))
            .unwrap_or_else(|e| panic!("{sdk}: model_text is the object's JSON ({e}): {doc}"));
        assert_eq!(
            model,
            serde_json::json!({"city": "Paris", "celsius": 21.5}),
            "{sdk}"
        );
    }
}

/// A server that refuses `subscriptions/listen` (-32603, as context7 does)
/// and answers `resources/templates/list` with -32601 (as the Puppeteer
/// and Kubernetes servers do), in both eras: an ordinary `call` and `show
/// --connect` print no warning or error of rho's own, and `show` shows no
/// failed listing. The fixture answers the listen request before the call
/// that follows it, so the refusal is in before `call` prints.
fn ordinary_refusals_print_no_warning_in_either_era(rt: Runtime) {
    let fixture = rho_tests::tests_dir().join("servers/fixtures/refusing.js");
    for era in ["2025", "2026"] {
        let s = Scene::new(RHO, &format!("refusing-{era}"), rt);
        let config = s.write("config.toml", &node_server("refusing", &fixture, &[era]));
        let quiet = |run: &Run| {
            for word in ["WARN", "ERROR", "listing failed"] {
                assert!(
                    !run.stderr.contains(word) && !run.stdout.contains(word),
                    "{era}: `{word}`\n{run}"
                );
            }
        };
        let run = s.rho(&[
            "--config",
            arg(&config),
            "mcp",
            "call",
            "refusing",
            "echo",
            "message=hi",
        ]);
        run.expect_code(0);
        assert_eq!(run.stdout, "Echo: hi\n", "{era}: {run}");
        quiet(&run);
        let run = s.rho(&[
            "--config",
            arg(&config),
            "mcp",
            "show",
            "refusing",
            "--connect",
        ]);
        run.expect_code(0);
        assert!(run.stdout.contains("refusing://r"), "{era}: {run}");
        quiet(&run);
    }
}

fn call_past_its_timeout_fails_naming_the_budget(rt: Runtime) {
    let s = Scene::new(RHO, "call-timeout", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "trigger-long-running-operation",
        r#"{"duration":5,"steps":5}"#,
        "--timeout",
        "0.5",
    ]);
    run.expect_code(1);
    assert!(run.stderr.contains("did not answer within 0.5 s"), "{run}");
}

fn ctrl_c_cancels_the_call_and_exits_130(rt: Runtime) {
    let s = Scene::new(RHO, "call-ctrl-c", rt);
    let config = s.write("config.toml", &everything("everything"));
    let record = s.dir().join("ctrl-c.jsonl");
    let child = s
        .command()
        .args([
            "--record",
            arg(&record),
            "--config",
            arg(&config),
            "mcp",
            "call",
            "everything",
            "trigger-long-running-operation",
            r#"{"duration":20,"steps":20}"#,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rho");
    // Once the transcript shows the call was sent, interrupt as a terminal
    // would: the Ctrl-C then lands on a call in flight, not on startup.
    assert!(
        wait_for_text(&record, "\"in\":\"call\"", Duration::from_secs(20)),
        "the call was never sent"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let started = std::time::Instant::now();
    let output = child.wait_with_output().expect("rho exits");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    // Over stdio the server is told with notifications/cancelled.
    assert!(
        stderr.contains("cancelled; the server was told to stop"),
        "{stderr}"
    );
    // The core was told: the cancel went in, and the call completed as
    // cancelled.
    let transcript = std::fs::read_to_string(&record).expect("transcript");
    assert!(transcript.contains("\"in\":\"cancel\""), "{transcript}");
    assert!(transcript.contains("{\"cancelled\":"), "{transcript}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "rho took {:?} to stop after Ctrl-C",
        started.elapsed()
    );
}

fn call_whose_result_is_an_error_exits_1(rt: Runtime) {
    let s = Scene::new(RHO, "call-is-error", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "echo",
        "{}",
    ]);
    run.expect_code(1);
    assert!(run.stderr.contains("echo"), "{run}");
}

fn call_with_arguments_that_are_not_json_exits_2(rt: Runtime) {
    let s = Scene::new(RHO, "call-bad-json", rt);
    let marker = s.dir().join("marker");
    let config = s.write("config.toml", &marker_server("tripwire", &marker));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "tripwire",
        "echo",
        "{message:",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("JSON"), "{run}");
    assert!(!marker.exists(), "bad arguments still started the server");
    assert_no_session(
        &s,
        &[
            "--config",
            arg(&config),
            "mcp",
            "call",
            "tripwire",
            "echo",
            "{message:",
        ],
        2,
        "arguments that are not JSON",
    );
}

fn call_with_arguments_that_are_a_json_array_exits_2(rt: Runtime) {
    let s = Scene::new(RHO, "call-array", rt);
    let marker = s.dir().join("marker");
    let config = s.write("config.toml", &marker_server("tripwire", &marker));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "tripwire",
        "echo",
        r#"["hi"]"#,
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("object"), "{run}");
    assert!(!marker.exists(), "bad arguments still started the server");
    assert_no_session(
        &s,
        &[
            "--config",
            arg(&config),
            "mcp",
            "call",
            "tripwire",
            "echo",
            r#"["hi"]"#,
        ],
        2,
        "arguments that are an array",
    );
}

fn call_of_an_unknown_tool_is_a_usage_error_like_an_unknown_server(rt: Runtime) {
    let s = Scene::new(RHO, "call-unknown-tool", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "no-such-tool",
        "{}",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("no-such-tool"), "{run}");
    assert_eq!(run.stdout, "", "{run}");
    // The error lists what the server does offer, and says that tools which
    // need elicitation or sampling may be hidden from this run.
    assert!(run.stderr.contains("its tools: "), "{run}");
    assert!(run.stderr.contains("echo"), "{run}");
    assert!(run.stderr.contains("did not declare elicitation"), "{run}");
}

/// `rho mcp call` names a tool the shell's ways too (`server:tool`, the
/// exported name as the first word); a near miss of a server or a tool
/// says the closest name; a server alone lists its tools (exit 2).
fn call_takes_server_colon_tool_and_says_the_closest_name_for_a_near_miss(rt: Runtime) {
    let s = Scene::new(RHO, "call-forms", rt);
    let config = s.write("config.toml", &everything("everything"));
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "call",
        "everything:get-sum",
        "a=2",
        "b=3",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains('5'), "{run}");
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "call",
        "mcp__everything__echo",
        "message=hi",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: hi\n", "{run}");
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "call",
        "everything",
        "get-summ",
        "a=2",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("did you mean `get-sum`?"), "{run}");
    let run = s.rho(&["--config", cfg, "mcp", "call", "everythin", "echo"]);
    run.expect_code(2);
    assert!(run.stderr.contains("did you mean `everything`?"), "{run}");
    let run = s.rho(&["--config", cfg, "mcp", "call", "everything"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("name one of server `everything`'s tools: ")
            && run.stderr.contains("echo")
            && run.stderr.contains("get-sum"),
        "{run}"
    );
}

/// A parameter given by `$ref` (alone or as an `anyOf` member) shows the
/// type, description and values of what it points at; the schema itself
/// is reported as the server sent it, `$ref`s and all.
fn show_connect_reads_parameters_given_by_ref_as_their_target(rt: Runtime) {
    let s = Scene::new(RHO, "show-refs", rt);
    let config = s.write("config.toml", &refs("refs"));
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "show", "refs", "--connect"]);
    run.expect_code(0);
    for line in [
        "      parent (object | string, required)\n",
        "      title (string, required): The page's title\n",
        "      status (string): one of draft, published\n",
        "      options (object | null)\n",
    ] {
        assert!(run.stdout.contains(line), "no {line:?}\n{run}");
    }
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "show",
        "refs",
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let schema = &doc["tools"][0]["input_schema"];
    assert_eq!(
        schema["properties"]["title"]["$ref"], "#/$defs/Title",
        "{doc}"
    );
    assert!(schema["$defs"]["PageParent"].is_object(), "{doc}");
}

/// `key=value` words are typed by what a `$ref` points at: an object
/// behind an `anyOf` of a `$ref` and a string is sent as an object, a
/// string behind a `$ref` stays a string even when it is digits.
fn call_types_key_value_words_by_the_type_behind_a_ref(rt: Runtime) {
    let s = Scene::new(RHO, "call-refs", rt);
    let config = s.write("config.toml", &refs("refs"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "refs",
        "post-page",
        r#"parent={"page_id":"abc"}"#,
        "title=42",
        "status=draft",
        r#"options={"bold":true}"#,
    ]);
    run.expect_code(0);
    let received: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("the echo is not JSON: {e}\n{run}"));
    assert_eq!(
        received,
        serde_json::json!({"parent": {"page_id": "abc"}, "title": "42", "status": "draft",
                           "options": {"bold": true}}),
        "{run}"
    );
}

/// No argument words are checked as `key=value` words are: rho names the
/// missing required arguments (exit 2) instead of sending `{}`; a JSON
/// object is still sent as given (the server refuses it, exit 1).
fn call_with_no_argument_words_names_the_missing_required_ones_and_exits_2(rt: Runtime) {
    let s = Scene::new(RHO, "call-no-words", rt);
    let config = s.write("config.toml", &refs("refs"));
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "call", "refs", "post-page"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(
            "tool `post-page` needs arguments: parent, title (its arguments: parent, title, status, options)"
        ),
        "{run}"
    );
    assert_eq!(run.stdout, "", "{run}");
    let run = s.rho(&["--config", cfg, "mcp", "call", "refs", "post-page", "{}"]);
    run.expect_code(1);
    assert!(run.stderr.contains("post-page"), "{run}");
}

fn call_accepts_the_exported_name_as_well_as_the_own_name(rt: Runtime) {
    let s = Scene::new(RHO, "call-exported", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "mcp__everything__echo",
        r#"{"message":"by exported name"}"#,
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: by exported name\n", "{run}");
}

fn show_connect_lists_each_tools_own_name_beside_its_exported_name(rt: Runtime) {
    let s = Scene::new(RHO, "show-own-names", rt);
    let config = s.write("config.toml", &everything("everything"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "show",
        "everything",
        "--connect",
    ]);
    run.expect_code(0);
    let line = run
        .stdout
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("mcp__everything___rho_6765742d656e76")
        })
        .unwrap_or_else(|| panic!("no get-env row: {run}"));
    assert!(line.contains(" get-env"), "{line}");
    // Each tool's parameters: name, type, required, description.
    let sum = run
        .stdout
        .find("mcp__everything___rho_6765742d73756d")
        .expect("a get-sum row");
    let after = &run.stdout[sum..];
    assert!(
        after.contains("\n      a (number, required): First number\n")
            && after.contains("\n      b (number, required): Second number\n"),
        "{run}"
    );
}

fn long_exported_names_are_shortened_to_64_characters_and_both_forms_call(rt: Runtime) {
    let s = Scene::new(RHO, "long-names", rt);
    // A hyphenated id is hex-encoded: its exported names exceed 64 characters.
    let id = "a-server-with-a-long-identity";
    let config = s.write("config.toml", &everything(id));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "show",
        id,
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let echo = doc["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["tool"] == "echo"))
        .unwrap_or_else(|| panic!("no echo: {doc}"))
        .clone();
    let short = echo["name"].as_str().expect("name").to_owned();
    let full = echo["full_name"].as_str().expect("full_name").to_owned();
    assert_eq!(short.len(), 64, "{echo}");
    assert!(full.len() > 64 && full.ends_with("__echo"), "{echo}");
    assert_eq!(short[..47], full[..47], "{echo}");
    let text = s.rho(&["--config", arg(&config), "mcp", "show", id, "--connect"]);
    text.expect_code(0);
    assert!(
        text.stdout.contains(&format!("(short for {full})")),
        "{text}"
    );
    for name in [&short, &full] {
        let run = s.rho(&[
            "--config",
            arg(&config),
            "mcp",
            "call",
            id,
            name,
            r#"{"message":"long"}"#,
        ]);
        run.expect_code(0);
        assert_eq!(run.stdout, "Echo: long\n", "{run}");
    }
}

fn call_on_a_disabled_server_exits_1_without_starting_it(rt: Runtime) {
    let s = Scene::new(RHO, "call-disabled", rt);
    let marker = s.dir().join("marker");
    let mut text = marker_server("off", &marker);
    text.push_str("enabled = false\n");
    let config = s.write("config.toml", &text);
    let run = s.rho(&["--config", arg(&config), "mcp", "call", "off", "echo", "{}"]);
    run.expect_code(1);
    assert!(run.stderr.contains("disabled"), "{run}");
    assert!(!marker.exists(), "a disabled server was started");
    assert_no_session(
        &s,
        &["--config", arg(&config), "mcp", "call", "off", "echo", "{}"],
        1,
        "a disabled server",
    );
}

// ---------------------------------------------------------------------------
// --verbose

fn verbose_logs_debug_to_stderr_and_leaves_stdout_unchanged(rt: Runtime) {
    let s = Scene::new(RHO, "verbose", rt);
    let config = s.write("config.toml", &everything("everything"));
    let call = [
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "echo",
        r#"{"message":"hi"}"#,
    ];
    let quiet = s.rho(&call);
    quiet.expect_code(0);
    let mut verbose_args = vec!["--verbose"];
    verbose_args.extend_from_slice(&call);
    let verbose = s.rho(&verbose_args);
    verbose.expect_code(0);
    assert_eq!(verbose.stdout, quiet.stdout, "{verbose}");
    assert_eq!(verbose.stdout, "Echo: hi\n", "{verbose}");
    assert!(verbose.stderr.contains("DEBUG"), "{verbose}");
    assert!(!quiet.stderr.contains("DEBUG"), "{quiet}");
}

/// A server's log messages (`notifications/message`) print as the
/// server's words: its own level (`notice`, `critical`, not rho's
/// `INFO`/`ERROR`), the server that said it and its logger, and no empty
/// field (`logger=`) when it named none.
fn server_log_messages_print_as_the_servers_words_naming_server_and_level(rt: Runtime) {
    let fixture = rho_tests::tests_dir().join("servers/fixtures/shell-fixture.js");
    let s = Scene::new(RHO, "server-logs", rt).with_config(&node_server("fx", &fixture, &[]));
    let lines_of = |run: &Run| -> Vec<String> {
        // Each line after its timestamp (`2026-...Z `).
        run.stderr
            .lines()
            .map(|l| l.split_once("Z ").map_or(l, |(_, rest)| rest).to_owned())
            .collect()
    };
    // The fixture's `log` sends one message per level, logger `fixture`;
    // rho shows warning and up by default.
    let run = s.rho(&["mcp", "call", "fx", "log"]);
    run.expect_code(0);
    assert_eq!(
        lines_of(&run),
        [
            "warning from server `fx` (logger `fixture`): fixture says warning",
            "error from server `fx` (logger `fixture`): fixture says error",
            "critical from server `fx` (logger `fixture`): fixture says critical",
            "alert from server `fx` (logger `fixture`): fixture says alert",
            "emergency from server `fx` (logger `fixture`): fixture says emergency",
        ],
        "{run}"
    );
    // No logger, or an empty one: no logger part at all.
    for logger in ["logger=", "logger=null"] {
        let run = s.rho(&["mcp", "call", "fx", "log", logger]);
        run.expect_code(0);
        let lines = lines_of(&run);
        assert_eq!(
            lines.first().map(String::as_str),
            Some("warning from server `fx`: fixture says warning"),
            "{logger}: {run}"
        );
        assert_eq!(lines.len(), 5, "{logger}: {run}");
        assert!(!run.stderr.contains("logger"), "{logger}: {run}");
    }
    // With --verbose every level shows, each by the server's own name.
    let run = s.rho(&["--verbose", "mcp", "call", "fx", "log"]);
    run.expect_code(0);
    for level in ["debug", "info", "notice", "critical"] {
        let line = format!("{level} from server `fx` (logger `fixture`): fixture says {level}");
        assert!(lines_of(&run).contains(&line), "no {line:?}\n{run}");
    }
    // Never in rho's own field format.
    assert!(
        !run
            .stderr
            .lines()
            .any(|l| l.contains("fixture says") && (l.contains("server=") || l.contains("logger="))),
        "{run}"
    );
}

// ---------------------------------------------------------------------------
// Nothing left behind

fn list_connect_leaves_no_server_or_grandchild_running(rt: Runtime) {
    let s = Scene::new(RHO, "grandchild", rt);
    let pidfile = s.dir().join("server.pid");
    let text = node_server(
        "parent",
        &misbehaving_js(),
        &["grandchild", "--pidfile", arg(&pidfile)],
    );
    let config = s.write("config.toml", &text);
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let parent = server(&doc, "parent");
    assert_eq!(parent["status"], "ready", "{parent}");
    assert_eq!(tool_names(parent), ["mcp__parent__work"]);

    let server_pid = read_pidfile(&pidfile);
    assert_eq!(parent["pid"], server_pid, "{parent}");
    let grandchild = read_pidfile(&s.dir().join("server.pid.grandchild"));
    assert!(wait_gone(server_pid), "server {server_pid} outlived rho");
    assert!(
        wait_gone(grandchild),
        "grandchild {grandchild} outlived rho"
    );
}

fn non_loopback_http_url_fails_with_the_https_rule_while_others_load(rt: Runtime) {
    let s = Scene::new(RHO, "http-rule", rt);
    let mut text = String::from(
        "[mcp.servers.plain]\ntransport = \"streamable_http\"\nurl = \"http://mcp.example.com/mcp\"\n",
    );
    text.push_str(&everything("everything"));
    let config = s.write("config.toml", &text);
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(1);
    let doc = run.json();
    let plain = server(&doc, "plain");
    assert_ne!(plain["status"], "ready", "{plain}");
    let error = plain["error"].as_str().expect("an error");
    assert!(error.contains("must use https"), "{error}");
    assert!(error.contains("127.0.0.0/8"), "{error}");
    assert_eq!(server(&doc, "everything")["status"], "ready", "{doc}");
}

fn http_server_connects_and_calls_over_loopback(rt: Runtime) {
    let s = Scene::new(RHO, "http-call", rt);
    let remote = EverythingHttp::start();
    let config = s.write("config.toml", &remote.config("remote"));
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "list",
        "--connect",
        "--json",
    ]);
    run.expect_code(0);
    let doc = run.json();
    let entry = server(&doc, "remote");
    assert_eq!(entry["status"], "ready", "{entry}");
    assert_eq!(entry["url"], remote.url());
    assert!(tool_names(entry).contains(&"mcp__remote__echo"), "{entry}");
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "remote",
        "echo",
        r#"{"message":"via http"}"#,
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: via http\n");
}

// ---------------------------------------------------------------------------
// Both executors agree

/// `--runtime smol` and `--runtime blocking` report the same servers,
/// statuses, handshake facts and exported tools, with the same exit code;
/// only per-run facts (elapsed time, pids) may differ.
#[test]
fn list_connect_json_is_the_same_under_smol_and_blocking() {
    let s = Scene::new(RHO, "parity", Runtime::Smol);
    let root = s.dir().join("root");
    std::fs::create_dir_all(&root).expect("create root");
    let mut text = everything("everything");
    text.push_str(&node_server("filesystem", &filesystem_js(), &[arg(&root)]));
    let config = s.write("config.toml", &text);

    let list = |rt: Runtime| {
        s.rho_env(
            &[
                "--config",
                arg(&config),
                "--runtime",
                rt.name(),
                "mcp",
                "list",
                "--connect",
                "--json",
            ],
            // The flag decides; keep the variable in agreement anyway.
            &[("RHO_RUNTIME", rt.name())],
        )
    };
    let smol = list(Runtime::Smol);
    let blocking = list(Runtime::Blocking);
    assert_eq!(
        smol.code, blocking.code,
        "exit codes differ\n{smol}\n{blocking}"
    );
    smol.expect_code(0);

    let (smol_doc, blocking_doc) = (
        per_run_facts_removed(smol.json()),
        per_run_facts_removed(blocking.json()),
    );
    assert_eq!(
        server_ids(&smol_doc),
        ["everything", "filesystem"],
        "{smol}"
    );
    assert_eq!(
        server_ids(&smol_doc),
        server_ids(&blocking_doc),
        "{smol}\n{blocking}"
    );
    for id in ["everything", "filesystem"] {
        assert_eq!(server(&smol_doc, id)["status"], "ready", "{smol}");
        assert_eq!(
            server(&smol_doc, id)["status"],
            server(&blocking_doc, id)["status"],
            "{smol}\n{blocking}"
        );
        assert_eq!(
            tool_names(server(&smol_doc, id)),
            tool_names(server(&blocking_doc, id)),
            "{smol}\n{blocking}"
        );
    }
    assert_eq!(smol_doc, blocking_doc, "{smol}\n{blocking}");
}

/// A `list --json` document without the facts that differ from run to run.
/// A remote server with an `oauth` table, and one with a configured
/// Authorization header; neither is connected to.
const OAUTH_CONFIG: &str = "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.remote.oauth]\n\n[mcp.servers.keyed]\ntransport = \"streamable_http\"\nurl = \"https://keyed.example.com/mcp\"\nheaders_from_env = { Authorization = \"KEYED_TOKEN\" }\n[mcp.servers.keyed.oauth]\n";

/// Writes a stored login for `remote` into the scratch home's store.
fn store_login(s: &Scene, expires_at: u64) {
    let dir = s.home().join(".rho");
    std::fs::create_dir_all(&dir).expect("store dir");
    let doc = serde_json::json!({
        "version": 1,
        "entries": [{
            "server": "remote",
            "url": "https://mcp.example.com/mcp",
            "issuer": "https://auth.example.com",
            "client_id": "client-1",
            "client_auth": "none",
            "tokens": {
                "access_token": "stored-access-token-value",
                "refresh_token": "stored-refresh-token-value",
                "expires_at": expires_at,
                "resource": "https://mcp.example.com/mcp",
                "token_endpoint": "https://auth.example.com/token"
            }
        }]
    });
    std::fs::write(dir.join("mcp-oauth.json"), doc.to_string()).expect("store file");
}

#[test]
fn list_and_show_report_oauth_login_state_without_revealing_tokens() {
    let s = Scene::new(RHO, "oauth-status", Runtime::Smol);
    let config = s.write("config.toml", OAUTH_CONFIG);
    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(
        server(&doc, "remote")["auth"]["state"],
        "needs_login",
        "{run}"
    );
    // A configured Authorization header wins over the oauth table.
    assert_eq!(server(&doc, "keyed")["auth"]["kind"], "header", "{run}");
    let far = 4_000_000_000;
    store_login(&s, far);
    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--json"]);
    let doc = run.json();
    let auth = &server(&doc, "remote")["auth"];
    assert_eq!(auth["state"], "logged_in", "{run}");
    assert_eq!(auth["refreshable"], true, "{run}");
    assert!(
        auth["expires_in_secs"].as_i64().is_some_and(|s| s > 0),
        "{run}"
    );
    let text = s.rho(&["--config", arg(&config), "mcp", "show", "remote"]);
    text.expect_code(0);
    assert!(
        text.stdout
            .contains("auth:       oauth (logged in, expires in"),
        "{text}"
    );
    let listed = s.rho(&["--config", arg(&config), "mcp", "list"]);
    assert!(listed.stdout.contains("oauth (logged in"), "{listed}");
    for out in [&run, &text, &listed] {
        assert!(!out.all().contains("stored-access-token-value"), "{out}");
        assert!(!out.all().contains("stored-refresh-token-value"), "{out}");
    }
    assert_eq!(auth["dpop_bound"], false, "{run}");
    // Expired, with a refresh token: it will refresh, not ask.
    store_login(&s, 1);
    let text = s.rho(&["--config", arg(&config), "mcp", "show", "remote"]);
    assert!(text.stdout.contains("expired; refreshes on use"), "{text}");
    // Tokens bound to a DPoP key say so (the key itself is never shown).
    let file = s.home().join(".rho/mcp-oauth.json");
    let mut stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("store")).expect("json");
    stored["entries"][0]["tokens"]["dpop_key"] = "c3RvcmVkLWRwb3Ata2V5".into();
    std::fs::write(&file, stored.to_string()).expect("store file");
    let text = s.rho(&["--config", arg(&config), "mcp", "show", "remote"]);
    assert!(
        text.stdout
            .contains("oauth (logged in, DPoP-bound, expired; refreshes on use)"),
        "{text}"
    );
    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--json"]);
    assert_eq!(
        server(&run.json(), "remote")["auth"]["dpop_bound"],
        true,
        "{run}"
    );
    for out in [&text, &run] {
        assert!(!out.all().contains("c3RvcmVkLWRwb3Ata2V5"), "{out}");
    }
}

#[test]
fn logout_forgets_the_stored_login_and_a_second_logout_says_there_is_none() {
    let s = Scene::new(RHO, "oauth-logout", Runtime::Smol);
    let config = s.write("config.toml", OAUTH_CONFIG);
    store_login(&s, 4_000_000_000);
    let run = s.rho(&["--config", arg(&config), "mcp", "logout", "remote"]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("forgot the OAuth login of server `remote`"),
        "{run}"
    );
    let stored = std::fs::read_to_string(s.home().join(".rho/mcp-oauth.json")).expect("store");
    assert!(!stored.contains("stored-access-token-value"), "{stored}");
    let run = s.rho(&["--config", arg(&config), "mcp", "list", "--json"]);
    assert_eq!(
        server(&run.json(), "remote")["auth"]["state"],
        "needs_login",
        "{run}"
    );
    let run = s.rho(&["--config", arg(&config), "mcp", "logout", "remote"]);
    run.expect_code(0);
    assert!(run.stdout.contains("no stored OAuth login"), "{run}");
    let run = s.rho(&["--config", arg(&config), "mcp", "logout", "nosuch"]);
    run.expect_code(2);
    assert!(run.stderr.contains("nosuch"), "{run}");
}

#[test]
fn replay_of_a_file_that_is_not_a_transcript_exits_2_saying_so() {
    let s = Scene::new(RHO, "replay-not-transcript", Runtime::Smol);
    let file = s.write("notes.txt", "just some notes\n");
    let run = s.rho(&["mcp", "replay", arg(&file)]);
    run.expect_code(2);
    assert!(run.stderr.contains("not a rho transcript"), "{run}");
    assert!(!run.stderr.contains("diverged"), "{run}");
}

#[test]
fn json_errors_are_json_on_stdout_with_the_same_exit_codes() {
    let s = Scene::new(RHO, "json-errors", Runtime::Smol);
    let config = s.write("config.toml", &everything("everything"));
    // A usage error: exit 2.
    let run = s.rho(&["--config", arg(&config), "mcp", "show", "nosuch", "--json"]);
    run.expect_code(2);
    let doc = run.json();
    assert_eq!(doc["schema"], 1, "{run}");
    assert_eq!(doc["document"], "error", "{run}");
    assert_eq!(doc["error"]["kind"], "usage", "{run}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("nosuch")),
        "{run}"
    );
    // A tool the server does not list is a usage error too (exit 2),
    // like a server the config does not have.
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "no-such-tool",
        "--json",
    ]);
    run.expect_code(2);
    let doc = run.json();
    assert_eq!(doc["error"]["kind"], "usage", "{run}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no-such-tool")),
        "{run}"
    );
    // A failed call: exit 1.
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "trigger-long-running-operation",
        "duration=30",
        "steps=3",
        "--timeout",
        "0.3",
        "--json",
    ]);
    run.expect_code(1);
    let doc = run.json();
    assert_eq!(doc["error"]["kind"], "failed", "{run}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not answer within")),
        "{run}"
    );
    // A command line clap refuses: exit 2, still JSON.
    let run = s.rho(&[
        "--config",
        arg(&config),
        "mcp",
        "call",
        "everything",
        "echo",
        "--json",
        "--timeout",
        "soon",
    ]);
    run.expect_code(2);
    assert_eq!(run.json()["document"], "error", "{run}");
    assert_eq!(run.json()["error"]["kind"], "usage", "{run}");
    // A bad RHO_RUNTIME is named as the variable it came from.
    let run = s.rho_env(&["mcp", "list", "--json"], &[("RHO_RUNTIME", "fast")]);
    run.expect_code(2);
    assert!(
        run.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("RHO_RUNTIME")),
        "{run}"
    );
}

#[test]
fn help_names_each_runtime_once() {
    let s = Scene::new(RHO, "help-runtime", Runtime::Smol);
    let run = s.rho(&["--help"]);
    run.expect_code(0);
    assert!(!run.stdout.contains("smol: smol"), "{run}");
    assert!(run.stdout.contains("smol:"), "{run}");
}

/// The conformance suite's client is not part of the shipped `rho` (it is
/// the tests crate's `rho-conformance-client`): the hidden command it was
/// is refused as any unknown one is.
#[test]
fn conformance_client_is_an_unknown_command_and_exits_2() {
    let s = Scene::on_default_executor(RHO, "no-conformance-client");
    let run = s.rho_env(
        &["mcp", "conformance-client", "http://127.0.0.1:9/mcp"],
        &[("MCP_CONFORMANCE_SCENARIO", "initialize")],
    );
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("unrecognized subcommand 'conformance-client'"),
        "{run}"
    );
}

fn per_run_facts_removed(mut doc: Value) -> Value {
    for entry in doc["servers"].as_array_mut().into_iter().flatten() {
        if let Some(entry) = entry.as_object_mut() {
            entry.remove("elapsed_ms");
            entry.remove("pid");
        }
    }
    doc
}

both_executors!(
    search_ranks_the_tools_of_every_server,
    ordinary_refusals_print_no_warning_in_either_era,
    call_of_a_python_str_tool_prints_the_string_not_a_result_wrapper,
    call_past_its_timeout_fails_naming_the_budget,
    ctrl_c_cancels_the_call_and_exits_130,
    list_without_connect_starts_nothing_and_reports_not_started,
    list_connect_json_reports_ready_servers_with_tools_and_handshake_facts,
    default_config_is_home_rho_config_toml,
    explicit_config_replaces_default_without_merging,
    missing_default_config_configures_no_server_and_exits_0,
    missing_explicit_config_exits_2_naming_the_path,
    toml_syntax_error_exits_2_with_file_line_and_column,
    unknown_key_under_mcp_exits_2_naming_the_key,
    invalid_entry_is_listed_with_its_key_path_exits_1_and_others_still_load,
    failed_server_with_connect_exits_1_and_names_the_executable,
    disabled_server_is_reported_disabled_never_started_and_exits_0,
    secret_values_never_appear_in_list_or_show_output,
    show_connect_json_reports_ready_with_tool_descriptions_and_input_schemas,
    show_lists_tools_for_an_mcp_app_only_apart_and_keeps_their_meta,
    server_log_messages_print_as_the_servers_words_naming_server_and_level,
    show_unknown_server_exits_2_naming_the_configured_servers,
    show_without_connect_says_the_server_is_not_started,
    call_prints_exactly_the_result_text_and_exits_0,
    call_whose_result_is_an_error_exits_1,
    call_with_arguments_that_are_not_json_exits_2,
    call_with_arguments_that_are_a_json_array_exits_2,
    call_of_an_unknown_tool_is_a_usage_error_like_an_unknown_server,
    call_accepts_the_exported_name_as_well_as_the_own_name,
    show_connect_reads_parameters_given_by_ref_as_their_target,
    call_types_key_value_words_by_the_type_behind_a_ref,
    call_with_no_argument_words_names_the_missing_required_ones_and_exits_2,
    call_takes_server_colon_tool_and_says_the_closest_name_for_a_near_miss,
    show_connect_lists_each_tools_own_name_beside_its_exported_name,
    long_exported_names_are_shortened_to_64_characters_and_both_forms_call,
    call_on_a_disabled_server_exits_1_without_starting_it,
    verbose_logs_debug_to_stderr_and_leaves_stdout_unchanged,
    list_connect_leaves_no_server_or_grandchild_running,
    non_loopback_http_url_fails_with_the_https_rule_while_others_load,
    http_server_connects_and_calls_over_loopback,
);
