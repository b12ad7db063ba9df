//! `rho mcp show --connect`, `prompt`, `read` and `complete` against real
//! server-everything, over stdio and Streamable HTTP, on both executors;
//! and against `tests/servers/fixtures/catalog.js` for what everything
//! lacks (a one-argument prompt, paginated listings, a prompt and a
//! resource list change during the startup listing, an assistant
//! message, a long prompt, a listing that fails).
//!
//! Every run gets its own scratch `HOME` and a null stdin.

use std::path::{Path, PathBuf};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::Scene;
use rho_tests::{EverythingHttp, everything_js, node_server};

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

fn catalog_js() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/servers/fixtures/catalog.js")
}

/// server-everything as `local` (stdio) and `remote` (HTTP); the HTTP
/// server lives as long as the returned handle.
fn everything_both(name: &str, runtime: Runtime) -> (Scene, EverythingHttp) {
    let http = EverythingHttp::start();
    let config = format!(
        "{}{}",
        node_server("local", &everything_js(), &["stdio"]),
        http.config("remote")
    );
    (Scene::new(RHO, name, runtime).with_config(&config), http)
}

fn show_lists_prompts_resources_and_templates(runtime: Runtime) {
    let (s, _http) = everything_both("show", runtime);
    for id in ["local", "remote"] {
        let run = s.rho(&["mcp", "show", id, "--connect"]);
        run.expect_code(0);
        for line in [
            "  prompts (4):",
            "    args-prompt (city*, state) — Arguments Prompt",
            "    completable-prompt (department*, name*) — Team Management",
            "    demo://resource/static/document/architecture.md  architecture.md [text/markdown]",
            "    demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource [text/plain]",
        ] {
            assert!(run.stdout.contains(line), "no `{line}`\n{run}");
        }
        let doc = s.rho(&["mcp", "show", id, "--connect", "--json"]).json();
        let args = &doc["prompts"][1]["arguments"];
        assert_eq!(doc["prompts"][1]["name"], "args-prompt", "{doc}");
        assert_eq!(args[0]["name"], "city");
        assert_eq!(args[0]["required"], true);
        assert_eq!(args[1]["required"], false);
        assert!(
            doc["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .any(
                    |r| r["uri"] == "demo://resource/static/document/features.md"
                        && r["mime_type"] == "text/markdown"
                )
        );
        assert_eq!(
            doc["resource_templates"][1]["uri_template"],
            "demo://resource/dynamic/blob/{resourceId}"
        );
        assert_eq!(doc["catalog_errors"], serde_json::json!([]));
        assert_eq!(doc["max_output_bytes"], 65536);
    }
}

fn prompts_render_the_turn_and_refuse_bad_arguments_without_a_request(runtime: Runtime) {
    let (s, _http) = everything_both("prompt", runtime);
    for id in ["local", "remote"] {
        let run = s.rho(&[
            "mcp",
            "prompt",
            id,
            "args-prompt",
            "city=Paris",
            "state=Texas",
        ]);
        run.expect_code(0);
        assert_eq!(run.stdout, "What's weather in Paris, Texas?\n", "{run}");

        let record = s.dir().join(format!("missing-{id}.jsonl"));
        let record_arg = record.to_str().expect("UTF-8");
        let run = s.rho(&[
            "--record",
            record_arg,
            "mcp",
            "prompt",
            id,
            "args-prompt",
            "state=Texas",
        ]);
        run.expect_code(2);
        assert!(run.stderr.contains("needs argument: city"), "{run}");
        let transcript = std::fs::read_to_string(&record).expect("recorded");
        assert!(transcript.contains("prompts/list"), "the session ran");
        assert!(!transcript.contains("prompts/get"), "no request was sent");

        let run = s.rho(&["mcp", "prompt", id, "args-prompt", "city=Paris", "town=x"]);
        run.expect_code(2);
        assert!(
            run.stderr
                .contains("has no argument `town`; its arguments: city (required), state"),
            "{run}"
        );
        let run = s.rho(&["mcp", "prompt", id, "simple-promt"]);
        run.expect_code(2);
        assert!(
            run.stderr.contains("did you mean `simple-prompt`?"),
            "{run}"
        );
        let run = s.rho(&["mcp", "prompt", id, "nope"]);
        run.expect_code(2);
        assert!(
            run.stderr
                .contains("its prompts: simple-prompt, args-prompt"),
            "{run}"
        );

        // An embedded blob resource reaches the turn as a descriptor.
        let run = s.rho(&[
            "mcp",
            "prompt",
            id,
            "resource-prompt",
            "resourceType=Blob",
            "resourceId=2",
        ]);
        run.expect_code(0);
        assert!(
            run.stdout
                .contains("[resource demo://resource/dynamic/blob/2] [resource text/plain, "),
            "{run}"
        );
        let doc = s
            .rho(&["mcp", "prompt", id, "simple-prompt", "--json"])
            .json();
        assert_eq!(doc["messages"][0]["role"], "user");
        assert_eq!(doc["turn"], "This is a simple prompt without arguments.");
    }
}

fn resources_read_as_a_message_would_carry_them(runtime: Runtime) {
    let (s, _http) = everything_both("read", runtime);
    for id in ["local", "remote"] {
        let run = s.rho(&[
            "mcp",
            "read",
            id,
            "demo://resource/static/document/architecture.md",
        ]);
        run.expect_code(0);
        assert!(run.stdout.starts_with("# Everything Server"), "{run}");

        let template = "demo://resource/dynamic/text/{resourceId}";
        let run = s.rho(&["mcp", "read", id, template]);
        run.expect_code(2);
        assert!(run.stderr.contains("fill in resourceId"), "{run}");
        let run = s.rho(&["mcp", "read", id, template, "resourceId=3"]);
        run.expect_code(0);
        assert!(
            run.stdout
                .starts_with("Resource 3: This is a plaintext resource"),
            "{run}"
        );

        let blob = "demo://resource/dynamic/blob/{resourceId}";
        let run = s.rho(&["mcp", "read", id, blob, "resourceId=4"]);
        run.expect_code(0);
        assert!(run.stdout.starts_with("[resource text/plain, "), "{run}");
        let out = s.dir().join(format!("blob-{id}.bin"));
        let run = s.rho(&[
            "mcp",
            "read",
            id,
            blob,
            "resourceId=4",
            "--output",
            out.to_str().expect("UTF-8"),
        ]);
        run.expect_code(0);
        // A size under 1,000 bytes is said once, exactly.
        let written = std::fs::metadata(&out).expect("written").len();
        assert_eq!(
            run.stdout,
            format!("wrote {written} B to {}\n", out.display()),
            "{run}"
        );
        let bytes = std::fs::read_to_string(&out).expect("written");
        assert!(
            bytes.starts_with("Resource 4: This is a base64 blob"),
            "{bytes}"
        );

        let doc = s
            .rho(&["mcp", "read", id, template, "resourceId=5", "--json"])
            .json();
        assert_eq!(doc["contents"][0]["kind"], "text");
        assert_eq!(doc["attachment"]["kind"], "text");

        let run = s.rho(&["mcp", "read", id, "demo://resource/static/document/none.md"]);
        run.expect_code(1);
        // The server's error, its code once, and no "call" for a read.
        assert!(run.stderr.contains("answered with an error: "), "{run}");
        assert_eq!(run.stderr.matches("-32602").count(), 1, "{run}");
        assert!(!run.stderr.contains("the call"), "{run}");
        // A near miss of a listed URI says the closest one.
        let run = s.rho(&[
            "mcp",
            "read",
            id,
            "demo://resource/static/document/architecture.mdx",
        ]);
        run.expect_code(1);
        assert!(
            run.stderr
                .contains("did you mean `demo://resource/static/document/architecture.md`?"),
            "{run}"
        );
    }
}

fn completions_suggest_values_for_prompt_arguments_and_template_variables(runtime: Runtime) {
    let (s, _http) = everything_both("complete", runtime);
    for id in ["local", "remote"] {
        let run = s.rho(&[
            "mcp",
            "complete",
            id,
            "completable-prompt",
            "department",
            "",
        ]);
        run.expect_code(0);
        assert_eq!(
            run.stdout, "Engineering\nSales\nMarketing\nSupport\n",
            "{run}"
        );
        let run = s.rho(&[
            "mcp",
            "complete",
            id,
            "completable-prompt",
            "department",
            "S",
        ]);
        assert_eq!(run.stdout, "Sales\nSupport\n", "{run}");
        // Arguments already given travel as context.
        let run = s.rho(&[
            "mcp",
            "complete",
            id,
            "completable-prompt",
            "name",
            "",
            "department=Sales",
        ]);
        assert_eq!(run.stdout, "David\nEve\nFrank\n", "{run}");
        let doc = s
            .rho(&[
                "mcp",
                "complete",
                id,
                "demo://resource/dynamic/text/{resourceId}",
                "resourceId",
                "7",
                "--json",
            ])
            .json();
        assert_eq!(doc["values"], serde_json::json!(["7"]));
        let run = s.rho(&["mcp", "complete", id, "completable-prompt", "team", ""]);
        run.expect_code(2);
        assert!(
            run.stderr.contains("its arguments: department, name"),
            "{run}"
        );
        let run = s.rho(&["mcp", "complete", id, "no-such-prompt", "x", ""]);
        run.expect_code(2);
    }
}

fn the_fixture_covers_one_argument_pagination_list_changed_and_failures(runtime: Runtime) {
    let js = catalog_js();
    let config = format!(
        "{}{}[mcp.servers.capped]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}, \"serve\"]\nmax_output_bytes = 2048\n",
        node_server("fixture", &js, &["serve"]),
        node_server("broken", &js, &["broken"]),
        rho_tests::toml_str(js.to_str().expect("UTF-8")),
    );
    let s = Scene::new(RHO, "fixture", runtime).with_config(&config);
    let run = s.rho(&["mcp", "show", "fixture", "--connect"]);
    run.expect_code(0);
    // Two pages each, and the prompts and resources as listed after the
    // change each list saw while it was first listed.
    for line in [
        "  prompts (3):",
        "    search (query*) — Search",
        "    v2",
        "  resources (3):",
        "    fixture://two  two",
        "    fixture://three  three",
        "  resource templates (1):",
    ] {
        assert!(run.stdout.contains(line), "no `{line}`\n{run}");
    }
    // One argument takes every word; the assistant is labelled.
    let run = s.rho(&[
        "mcp", "prompt", "fixture", "search", "how", "do", "sessions", "resume",
    ]);
    run.expect_code(0);
    assert_eq!(
        run.stdout, "[assistant]\nI search the docs.\n\nSearch for: how do sessions resume\n",
        "{run}"
    );
    let run = s.rho(&["mcp", "prompt", "fixture", "search"]);
    run.expect_code(2);
    assert!(run.stderr.contains("needs argument: query"), "{run}");
    // The cap: the fixture's default is 64 KiB, `capped` says 2048.
    let run = s.rho(&["mcp", "prompt", "fixture", "long"]);
    assert_eq!(
        run.stdout.len(),
        60_001,
        "under 64 KiB: whole\n{}",
        run.stderr
    );
    let run = s.rho(&["mcp", "prompt", "capped", "long"]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("[rho cut this at 2.0 KB of 60.0 KB (max_output_bytes)]"),
        "{run}"
    );
    assert!(run.stdout.len() < 2200, "{}", run.stdout.len());
    // Several bodies join into one text attachment.
    let run = s.rho(&["mcp", "read", "fixture", "fixture://item/{id}", "id=9"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        "[resource fixture://item/9]\nbody of fixture://item/9\n\n[resource fixture://item/9#icon]\n[resource image/png, 8 B]\n",
        "{run}"
    );
    // A listing that fails shows in the status; the server still loads.
    let run = s.rho(&["mcp", "show", "broken", "--connect", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["status"], "ready");
    let errors = doc["catalog_errors"].to_string();
    assert!(
        errors.contains("resources/list: the server answered with an error"),
        "{errors}"
    );
    assert!(errors.contains("resource index is down"), "{errors}");
    let run = s.rho(&["mcp", "show", "broken", "--connect"]);
    assert!(
        run.stdout.contains("  listing failed: resources/list: "),
        "{run}"
    );
}

/// `[mcp] max_output_bytes` caps tool output and resource text as it
/// caps prompt turns, saying where it cut.
/// `rho mcp prompt ID NAME hello --json` is the value `hello` and the
/// flag --json, wherever the flag stands; an unknown flag is a usage
/// error, not data; after `--` every word is data.
fn prompt_flags_are_flags_wherever_they_stand_and_double_dash_ends_them(runtime: Runtime) {
    let js = catalog_js();
    let s = Scene::new(RHO, "prompt-flags", runtime).with_config(&node_server(
        "fixture",
        &js,
        &["serve"],
    ));
    let run = s.rho(&["mcp", "prompt", "fixture", "search", "hello", "--json"]);
    run.expect_code(0);
    let doc = run.json();
    let turn = doc["turn"].as_str().expect("a turn");
    assert!(turn.ends_with("Search for: hello"), "{run}");

    let run = s.rho(&[
        "mcp",
        "prompt",
        "fixture",
        "search",
        "hello",
        "--timeout",
        "5",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("--timeout"), "{run}");
    assert!(
        !run.stdout.contains("Search for"),
        "nothing was sent: {run}"
    );

    let run = s.rho(&[
        "mcp", "prompt", "fixture", "search", "--", "hello", "--json",
    ]);
    run.expect_code(0);
    assert!(run.stdout.ends_with("Search for: hello --json\n"), "{run}");
}

fn tool_output_and_resources_share_the_cap(runtime: Runtime) {
    let config = format!(
        "[mcp]\nmax_output_bytes = 1024\n{}",
        node_server("local", &everything_js(), &["stdio"])
    );
    let s = Scene::new(RHO, "cap", runtime).with_config(&config);
    let message = "x".repeat(3000);
    let arguments = serde_json::json!({ "message": message }).to_string();
    let run = s.rho(&["mcp", "call", "local", "echo", &arguments]);
    run.expect_code(0);
    assert!(run.stdout.starts_with("Echo: xxx"), "{run}");
    assert!(
        run.stdout
            .contains("\n[rho cut this at 1.0 KB of 3.0 KB (max_output_bytes)]"),
        "{run}"
    );
    assert!(run.stdout.len() < 1100, "{}", run.stdout.len());
    let run = s.rho(&[
        "mcp",
        "read",
        "local",
        "demo://resource/static/document/architecture.md",
    ]);
    run.expect_code(0);
    assert!(run.stdout.starts_with("# Everything Server"), "{run}");
    assert!(run.stdout.contains("(max_output_bytes)]"), "{run}");
    assert!(run.stdout.len() < 1100, "{}", run.stdout.len());
}

/// Every `--json` document has one shape: `schema`, `document` (the command), `server`,
/// the server's result object as sent in `result`, and rho's rendering
/// beside it (`model_text`/`card` for a call, `turn` for a prompt,
/// `attachment` for a read, `values` for a completion).
fn every_json_document_carries_the_result_as_sent_beside_the_rendering(runtime: Runtime) {
    let (s, _http) = everything_both("json-schema", runtime);
    for id in ["local", "remote"] {
        let call = s.rho(&[
            "mcp",
            "call",
            id,
            "get-structured-content",
            "location=Chicago",
            "--json",
        ]);
        call.expect_code(0);
        let doc = call.json();
        assert_eq!(doc["schema"], 1, "{doc}");
        assert_eq!(doc["document"], "call", "{doc}");
        assert_eq!(doc["server"], id, "{doc}");
        let weather = serde_json::json!({
            "temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82
        });
        // The MCP result as sent: camelCase members, the content array whole.
        assert_eq!(doc["result"]["structuredContent"], weather, "{doc}");
        assert_eq!(doc["result"]["content"][0]["type"], "text", "{doc}");
        let sent_text = doc["result"]["content"][0]["text"].as_str().expect("text");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(sent_text).expect("JSON text"),
            weather
        );
        assert!(doc["result"].get("structured_content").is_none(), "{doc}");
        // rho's rendering, as before.
        assert!(doc["model_text"].is_string(), "{doc}");
        assert!(doc["card"].is_object(), "{doc}");
        assert_eq!(doc["structured_content"], weather, "{doc}");
        assert_eq!(doc["is_error"], false, "{doc}");

        let doc = s
            .rho(&["mcp", "prompt", id, "simple-prompt", "--json"])
            .json();
        assert_eq!(
            (&doc["schema"], &doc["document"], &doc["server"]),
            (&1.into(), &"prompt".into(), &id.into()),
            "{doc}"
        );
        assert_eq!(doc["result"]["messages"], doc["messages"], "{doc}");
        assert_eq!(doc["result"]["messages"][0]["content"]["type"], "text");
        assert!(doc["turn"].is_string(), "{doc}");

        let doc = s
            .rho(&[
                "mcp",
                "read",
                id,
                "demo://resource/dynamic/text/{resourceId}",
                "resourceId=5",
                "--json",
            ])
            .json();
        assert_eq!(doc["document"], "read", "{doc}");
        let body = &doc["result"]["contents"][0];
        assert_eq!(body["uri"], "demo://resource/dynamic/text/5", "{doc}");
        // As sent: `mimeType`, no `kind` of rho's.
        assert_eq!(body["mimeType"], "text/plain", "{doc}");
        assert!(body.get("kind").is_none(), "{doc}");
        assert_eq!(doc["attachment"]["kind"], "text", "{doc}");

        let doc = s
            .rho(&[
                "mcp",
                "complete",
                id,
                "completable-prompt",
                "department",
                "S",
                "--json",
            ])
            .json();
        assert_eq!(doc["document"], "complete", "{doc}");
        assert_eq!(
            doc["result"]["completion"]["values"],
            serde_json::json!(["Sales", "Support"]),
            "{doc}"
        );
        assert_eq!(doc["values"], serde_json::json!(["Sales", "Support"]));

        let doc = s.rho(&["mcp", "show", id, "--json"]).json();
        assert_eq!(
            (&doc["schema"], &doc["document"]),
            (&1.into(), &"show".into())
        );
    }
    let doc = s.rho(&["mcp", "list", "--json"]).json();
    assert_eq!(
        (&doc["schema"], &doc["document"]),
        (&1.into(), &"list".into())
    );
}

both_executors!(
    every_json_document_carries_the_result_as_sent_beside_the_rendering,
    prompt_flags_are_flags_wherever_they_stand_and_double_dash_ends_them,
    tool_output_and_resources_share_the_cap,
    show_lists_prompts_resources_and_templates,
    prompts_render_the_turn_and_refuse_bad_arguments_without_a_request,
    resources_read_as_a_message_would_carry_them,
    completions_suggest_values_for_prompt_arguments_and_template_variables,
    the_fixture_covers_one_argument_pagination_list_changed_and_failures,
);
