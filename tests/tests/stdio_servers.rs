//! rho on blocking threads against the real pinned MCP servers over stdio:
//! handshake, exported names, calls, allow/deny, the environment policy,
//! pagination, and failure isolation with nothing left running.

use rho_host::CallOptions;
use rho_host::Host;
use rho_io_blocking::ToolCallError;
use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::{Value, json};

fn ready(runtime: &Host, id: &str) -> rho_proto_core::runtime::status::ReadyReport {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

fn failure(runtime: &Host, id: &str) -> String {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Failed { error, .. }) => error,
        other => panic!("server `{id}` should have failed: {other:?}"),
    }
}

/// The kind of failure a failed server's status keeps.
fn failure_kind(runtime: &Host, id: &str) -> FailureKind {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Failed { kind, .. }) => kind,
        other => panic!("server `{id}` should have failed: {other:?}"),
    }
}

fn everything_handshake_exports_exact_tool_names<R: TestRuntime>() {
    let config = parse_config(&node_server("everything", &everything_js(), &["stdio"]));
    let runtime = R::start(&config, options_with(&[]));
    let report = ready(&runtime, "everything");
    assert_eq!(report.protocol_version, "2025-11-25");
    assert_eq!(report.server_info.name, "mcp-servers/everything");
    let names: Vec<&str> = runtime
        .tools()
        .tools()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    // `get-env` has a hyphen, so it is hex-encoded behind `_rho_`.
    assert!(
        names.contains(&"mcp__everything___rho_6765742d656e76"),
        "{names:?}"
    );
    // No sampling/elicitation/roots declared, so their trigger tools are absent.
    assert!(
        !runtime
            .tools()
            .tools()
            .iter()
            .any(|t| t.tool == "trigger-sampling-request")
    );
    let echo = runtime
        .tools()
        .get("mcp__everything__echo")
        .expect("echo exported");
    assert!(
        echo.description.contains("MCP server `everything`"),
        "{}",
        echo.description
    );
    runtime.shutdown();
}

fn echo_call_returns_the_echoed_text<R: TestRuntime>() {
    let config = parse_config(&node_server("everything", &everything_js(), &["stdio"]));
    let runtime = R::start(&config, options_with(&[]));
    let result = runtime
        .call(
            "mcp__everything__echo",
            json!({"message": "hi"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    assert!(!result.is_error);
    assert_eq!(result.text(), "Echo: hi");
    // Bad arguments come back as a tool error result, not a transport failure.
    let result = runtime
        .call(("everything", "echo"), json!({}), CallOptions::new())
        .expect("the call itself succeeds");
    assert!(result.is_error, "{result:?}");
    // The session is still usable afterwards.
    let result = runtime
        .call(
            ("everything", "echo"),
            json!({"message": "again"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    assert_eq!(result.text(), "Echo: again");
    runtime.shutdown();
}

fn allow_and_deny_filter_exports_and_deny_wins<R: TestRuntime>() {
    let mut text = node_server("everything", &everything_js(), &["stdio"]);
    text.push_str(
        "[mcp.servers.everything.tools]\nallow = [\"echo\", \"get-env\"]\ndeny = [\"get-env\"]\n",
    );
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    let report = ready(&runtime, "everything");
    let names: Vec<&str> = runtime
        .tools()
        .tools()
        .iter()
        .map(|t| t.tool.as_str())
        .collect();
    assert_eq!(names, ["echo"]);
    assert!(report.filtered_tools.contains(&"get-env".to_string()));
    assert!(report.filtered_tools.contains(&"get-sum".to_string()));
    match runtime.call(("everything", "get-env"), json!({}), CallOptions::new()) {
        Err(ToolCallError::Filtered { tool, .. }) => assert_eq!(tool, "get-env"),
        other => panic!("denied tool was callable: {other:?}"),
    }
    match runtime.call(
        "mcp__everything___rho_6765742d656e76",
        json!({}),
        CallOptions::new(),
    ) {
        Err(ToolCallError::UnknownTool(_)) => {}
        other => panic!("denied tool was exported: {other:?}"),
    }
    runtime.shutdown();
}

/// `@modelcontextprotocol/server-pdf` lists nine tools; six carry
/// `_meta.ui.visibility: ["app"]` (its view's own: `save_pdf` writes
/// files). The model gets the other three, and no call reaches the six.
fn tools_for_an_mcp_app_only_are_not_exported<R: TestRuntime>() {
    let config = parse_config(&node_server("pdf", &pdf_js(), &["--stdio"]));
    let runtime = R::start(&config, options_with(&[]));
    let report = ready(&runtime, "pdf");
    let listed = runtime.server("pdf").map(|view| view.tools.len());
    assert_eq!(listed, Some(9), "the pinned server lists nine tools");
    let exported: Vec<&str> = runtime
        .tools()
        .tools()
        .iter()
        .map(|t| t.tool.as_str())
        .collect();
    assert_eq!(exported, ["display_pdf", "interact", "list_pdfs"]);
    let current: Vec<String> = runtime
        .current_tools()
        .into_iter()
        .map(|t| t.tool)
        .collect();
    assert_eq!(current, exported, "what the agent receives");
    assert_eq!(report.app_only_tools, rho_tests::PDF_APP_ONLY);
    assert!(report.filtered_tools.is_empty(), "{report:?}");
    // The view that renders `display_pdf` stays readable on the export.
    let display = runtime
        .tools()
        .get("mcp__pdf__display_pdf")
        .expect("exported");
    let meta = display.meta.as_deref().expect("display_pdf has _meta");
    assert_eq!(
        meta["ui"]["resourceUri"], "ui://pdf-viewer/mcp-app.html",
        "{meta}"
    );
    // By the name the model would use, or the server's own: refused before
    // anything is sent.
    let arguments = json!({"url": "/nonexistent/x.pdf", "data": "eA=="});
    match runtime.call("mcp__pdf__save_pdf", arguments.clone(), CallOptions::new()) {
        Err(ToolCallError::AppOnly { tool, .. }) => assert_eq!(tool, "save_pdf"),
        other => panic!("an app-only tool was callable by its exported name: {other:?}"),
    }
    match runtime.call(("pdf", "save_pdf"), arguments, CallOptions::new()) {
        Err(error @ ToolCallError::AppOnly { .. }) => {
            assert!(error.to_string().contains("without \"model\""), "{error}")
        }
        other => panic!("an app-only tool was callable by its own name: {other:?}"),
    }
    runtime.shutdown();
}

fn child_environment_is_sanitized_then_overlaid<R: TestRuntime>() {
    let mut text = node_server("everything", &everything_js(), &["stdio"]);
    text.push_str(
        "env = { RHO_LITERAL = \"literal-value\" }\nenv_from_env = { RHO_FROM_AMBIENT = \"RHO_TEST_AMBIENT_SOURCE\" }\n",
    );
    let options = options_with(&[
        ("RHO_TEST_AMBIENT_SOURCE", "from-ambient"),
        ("RHO_TEST_NOT_CONFIGURED", "must-not-leak"),
        ("GITHUB_TOKEN", "ghp_must_not_leak"),
    ]);
    let runtime = R::start(&parse_config(&text), options);
    let result = runtime
        .call(("everything", "get-env"), json!({}), CallOptions::new())
        .expect("get-env succeeds");
    let env: Value = serde_json::from_str(&result.text()).expect("get-env prints JSON");
    assert_eq!(env["RHO_LITERAL"], "literal-value");
    assert_eq!(env["RHO_FROM_AMBIENT"], "from-ambient");
    assert!(env.get("RHO_TEST_NOT_CONFIGURED").is_none(), "{env}");
    assert!(env.get("RHO_TEST_AMBIENT_SOURCE").is_none(), "{env}");
    assert!(env.get("GITHUB_TOKEN").is_none(), "{env}");
    assert!(env.get("PATH").is_some(), "the base keeps PATH: {env}");
    runtime.shutdown();
}

fn missing_ambient_variable_fails_only_that_server<R: TestRuntime>() {
    let mut text = node_server("needs_token", &everything_js(), &["stdio"]);
    text.push_str("env_from_env = { TOKEN = \"RHO_TEST_DEFINITELY_UNSET\" }\n");
    text.push_str(&node_server("everything", &everything_js(), &["stdio"]));
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    let error = failure(&runtime, "needs_token");
    assert!(error.contains("`RHO_TEST_DEFINITELY_UNSET`"), "{error}");
    assert!(error.contains("needs_token"), "{error}");
    ready(&runtime, "everything");
    runtime.shutdown();
}

fn filesystem_server_exports_annotated_tools<R: TestRuntime>() {
    let dir = scratch_dir("fs");
    std::fs::write(dir.join("note.txt"), "hello from a file").expect("write");
    let (text, options) = filesystem_serving(&dir);
    let runtime = R::start(&parse_config(&text), options);
    ready(&runtime, "filesystem");
    let read = runtime
        .tools()
        .get("mcp__filesystem__read_text_file")
        .expect("read_text_file exported");
    assert_eq!(read.hints.read_only, Some(true));
    assert!(
        read.description.contains("Server hint: read-only"),
        "{}",
        read.description
    );
    assert!(read.output_schema.is_some());
    let path = dir.join("note.txt").display().to_string();
    let result = runtime
        .call(
            "mcp__filesystem__read_text_file",
            json!({"path": path}),
            CallOptions::new(),
        )
        .expect("read succeeds");
    assert!(result.text().contains("hello from a file"), "{result:?}");
    runtime.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

/// The tool index over two real servers: each query's expected tool is
/// the first hit, and every entry is one line with its schema's size.
fn the_tool_index_ranks_the_expected_tool_first<R: TestRuntime>() {
    let dir = scratch_dir("index");
    let mut text = node_server("everything", &everything_js(), &["stdio"]);
    let (filesystem, options) = filesystem_serving(&dir);
    text.push_str(&filesystem);
    let runtime = R::start(&parse_config(&text), options);
    ready(&runtime, "everything");
    ready(&runtime, "filesystem");
    let index = runtime.tool_index();
    assert_eq!(index.entries().len(), runtime.current_tools().len());
    for (query, server, tool) in [
        ("sum of two numbers", "everything", "get-sum"),
        ("read a text file", "filesystem", "read_text_file"),
        (
            "compress a file with gzip",
            "everything",
            "gzip-file-as-resource",
        ),
        ("environment variables", "everything", "get-env"),
        ("directory tree", "filesystem", "directory_tree"),
        ("move or rename a file", "filesystem", "move_file"),
        (
            "long running operation with progress",
            "everything",
            "trigger-long-running-operation",
        ),
    ] {
        let hits = index.search(query, 5);
        let ranked: Vec<String> = hits
            .iter()
            .map(|h| format!("{}:{} {:.2}", h.entry.server, h.entry.tool, h.score))
            .collect();
        let first = hits
            .first()
            .map(|h| (h.entry.server.as_str(), h.entry.tool.as_str()));
        assert_eq!(first, Some((server, tool)), "{query:?} ranked {ranked:?}");
    }
    let sum = index
        .entries()
        .iter()
        .find(|e| e.tool == "get-sum")
        .expect("get-sum indexed");
    assert_eq!(sum.summary, "Returns the sum of two numbers");
    assert_eq!(sum.parameters, ["a", "b"]);
    assert!(sum.schema_bytes > 20, "{}", sum.schema_bytes);
    runtime.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

fn paginated_tools_list_is_followed_to_the_end<R: TestRuntime>() {
    let text = node_server("paged", &misbehaving_js(), &["paginate"]);
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    ready(&runtime, "paged");
    let names: Vec<&str> = runtime
        .tools()
        .tools()
        .iter()
        .map(|t| t.tool.as_str())
        .collect();
    assert_eq!(names, ["alpha", "beta", "delta", "gamma"]);
    let result = runtime
        .call("mcp__paged__delta", json!({}), CallOptions::new())
        .expect("call succeeds");
    assert_eq!(result.text(), "called delta");
    runtime.shutdown();
}

fn failures_are_isolated_and_nothing_is_left_running<R: TestRuntime>() {
    let dir = scratch_dir("isolation");
    let pid = |name: &str| dir.join(format!("{name}.pid")).display().to_string();
    let mut text = String::new();
    text.push_str(
        "[mcp.servers.missing]\ntransport = \"stdio\"\ncommand = \"rho-test-no-such-executable\"\n",
    );
    text.push_str(&node_server(
        "exits",
        &misbehaving_js(),
        &["exit", "--pidfile", &pid("exits")],
    ));
    text.push_str(&node_server(
        "garbage",
        &misbehaving_js(),
        &["garbage", "--pidfile", &pid("garbage")],
    ));
    text.push_str(&node_server(
        "silent",
        &misbehaving_js(),
        &["silent", "--pidfile", &pid("silent")],
    ));
    // Long enough for node to start and write its pid file on a loaded
    // machine (2 s was not, with the tests three binaries at a time and
    // the other core busy: rho ended it before it wrote the file).
    text.push_str("startup_timeout_secs = 6\n");
    text.push_str(&node_server("everything", &everything_js(), &["stdio"]));
    let runtime = R::start(&parse_config(&text), options_with(&[]));

    let everything = ready(&runtime, "everything");
    let missing = failure(&runtime, "missing");
    assert!(
        missing.contains("executable `rho-test-no-such-executable` not found on PATH"),
        "{missing}"
    );
    let exits = failure(&runtime, "exits");
    assert!(
        exits.contains("exited during startup (exit status 3)"),
        "{exits}"
    );
    assert!(
        exits.contains("fatal: missing API key"),
        "stderr tail: {exits}"
    );
    let garbage = failure(&runtime, "garbage");
    assert!(garbage.contains("not JSON-RPC"), "{garbage}");
    assert!(garbage.contains("Welcome to the server!"), "{garbage}");
    let silent = failure(&runtime, "silent");
    assert!(silent.contains("startup timed out after 6 s"), "{silent}");
    assert!(silent.contains("initialize response"), "{silent}");
    // Each keeps what kind of failure it was, for a host to act on.
    assert_eq!(failure_kind(&runtime, "missing"), FailureKind::NotFound);
    assert_eq!(failure_kind(&runtime, "exits"), FailureKind::Exited);
    assert_eq!(
        failure_kind(&runtime, "silent"),
        FailureKind::StartupTimeout
    );

    // The healthy server still works beside them.
    let result = runtime
        .call(
            "mcp__everything__echo",
            json!({"message": "still here"}),
            CallOptions::new(),
        )
        .expect("echo succeeds");
    assert_eq!(result.text(), "Echo: still here");

    let pids: Vec<u32> = ["exits", "garbage", "silent"]
        .iter()
        .map(|n| read_pidfile(&dir.join(format!("{n}.pid"))))
        .chain(everything.pid)
        .collect();
    runtime.shutdown();
    for pid in pids {
        assert!(wait_gone(pid), "process {pid} outlived the runtime");
        assert!(
            group_members(pid).is_empty(),
            "group {pid} still has members"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn grandchildren_end_with_their_server<R: TestRuntime>() {
    let dir = scratch_dir("grandchild");
    let pidfile = dir.join("server.pid");
    let text = node_server(
        "parent",
        &misbehaving_js(),
        &["grandchild", "--pidfile", &pidfile.display().to_string()],
    );
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    let report = ready(&runtime, "parent");
    let server = read_pidfile(&pidfile);
    assert_eq!(report.pid, Some(server));
    let grandchild = read_pidfile(&dir.join("server.pid.grandchild"));
    assert!(process_alive(grandchild));
    assert_eq!(
        group_members(server).len(),
        2,
        "server and grandchild share a group"
    );
    runtime.shutdown();
    assert!(wait_gone(server), "server outlived the runtime");
    assert!(wait_gone(grandchild), "grandchild outlived its server");
    let _ = std::fs::remove_dir_all(dir);
}

fn invalid_and_disabled_entries_do_not_start<R: TestRuntime>() {
    let mut text = node_server("everything", &everything_js(), &["stdio"]);
    text.push_str(&node_server("off", &everything_js(), &["stdio"]));
    text.push_str("enabled = false\n");
    text.push_str("[mcp.servers.typo]\ntransport = \"stdio\"\ncomand = \"node\"\n");
    let config = rho_proto_core::config::parse(&text, "test.toml").expect("file parses");
    let runtime = R::start(&config, options_with(&[]));
    ready(&runtime, "everything");
    assert_eq!(
        runtime.server("off").map(|s| s.status),
        Some(ServerStatus::Disabled)
    );
    match runtime.server("typo").map(|s| s.status) {
        Some(ServerStatus::Invalid { error }) => {
            assert!(error.contains("mcp.servers.typo.comand"), "{error}")
        }
        other => panic!("typo should be invalid: {other:?}"),
    }
    runtime.shutdown();
}

fn filesystem_server_is_given_the_workspace_as_its_root<R: TestRuntime>() {
    let served = scratch_dir("fs-arg");
    let workspace = scratch_dir("fs-workspace");
    let text = node_server(
        "filesystem",
        &filesystem_js(),
        &[&served.display().to_string()],
    );
    let mut options = options_with(&[]);
    options.workspace = Some(workspace.clone());
    let runtime = R::start(&parse_config(&text), options);
    ready(&runtime, "filesystem");
    // The server asks for roots after the handshake and swaps its allowed
    // directories asynchronously: poll briefly for the swap.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let expected = workspace.display().to_string();
    let mut last = String::new();
    while std::time::Instant::now() < until {
        last = runtime
            .call(
                "mcp__filesystem__list_allowed_directories",
                json!({}),
                CallOptions::new(),
            )
            .expect("call succeeds")
            .text();
        if last.contains(&expected) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(last.contains(&expected), "allowed: {last}");
    assert!(
        !last.contains(&served.display().to_string()),
        "allowed: {last}"
    );
    runtime.shutdown();
}

both_executors!(
    filesystem_server_is_given_the_workspace_as_its_root,
    everything_handshake_exports_exact_tool_names,
    echo_call_returns_the_echoed_text,
    allow_and_deny_filter_exports_and_deny_wins,
    tools_for_an_mcp_app_only_are_not_exported,
    child_environment_is_sanitized_then_overlaid,
    missing_ambient_variable_fails_only_that_server,
    filesystem_server_exports_annotated_tools,
    the_tool_index_ranks_the_expected_tool_first,
    paginated_tools_list_is_followed_to_the_end,
    failures_are_isolated_and_nothing_is_left_running,
    grandchildren_end_with_their_server,
    invalid_and_disabled_entries_do_not_start,
);
