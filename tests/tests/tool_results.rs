//! What real tool results look like once rho has them, on both executors:
//! progress and cancellation of a long-running call, structured content
//! checked against its outputSchema, images and resources rendered without
//! base64, server instructions fenced as documentation, annotation hints in
//! exported descriptions, and tools withdrawn or added mid-session.

use std::time::{Duration, Instant};

use rho_host::{CallOptions, Cancel, Host};
use rho_proto_core::features::content::{CardBlock, render};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::{ReadyReport, ServerStatus};
use rho_proto_core::session::{CallError, CancelNotice, Progress};
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

fn ready(runtime: &Host, id: &str) -> ReadyReport {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

/// Starts real server-everything over stdio as `everything`.
fn everything<R: TestRuntime>() -> Host {
    let config = parse_config(&node_server("everything", &everything_js(), &["stdio"]));
    let runtime = R::start(&config, options_with(&[]));
    ready(&runtime, "everything");
    runtime
}

/// The exported name of `server`'s tool `tool`.
fn exported(runtime: &Host, server: &str, tool: &str) -> String {
    runtime
        .tools()
        .tools()
        .iter()
        .find(|t| t.server == server && t.tool == tool)
        .map(|t| t.name.clone())
        .unwrap_or_else(|| panic!("`{tool}` of `{server}` is not exported"))
}

/// The longest run of characters that could be base64 text.
fn longest_base64_run(text: &str) -> usize {
    let mut best = 0;
    let mut run = 0;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=') {
            run += 1;
            best = best.max(run);
        } else {
            run = 0;
        }
    }
    best
}

fn progress_reaches_the_caller_before_the_result<R: TestRuntime>() {
    let runtime = everything::<R>();
    let name = exported(&runtime, "everything", "trigger-long-running-operation");
    let mut seen: Vec<Progress> = Vec::new();
    let result = runtime
        .call(
            &name,
            json!({"duration": 2, "steps": 4}),
            CallOptions::new().on_progress(|p| seen.push(p)),
        )
        .expect("the long-running call succeeds");
    assert!(!result.is_error, "{result:?}");
    assert_eq!(
        result.text(),
        "Long running operation completed. Duration: 2 seconds, Steps: 4."
    );
    assert_eq!(seen.len(), 4, "exactly one update per step: {seen:?}");
    assert!(seen.iter().all(|p| p.total == Some(4.0)), "{seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0].progress < w[1].progress),
        "progress increases: {seen:?}"
    );
    let values: Vec<f64> = seen.iter().map(|p| p.progress).collect();
    assert_eq!(values, [1.0, 2.0, 3.0, 4.0]);
    runtime.shutdown();
}

fn cancelling_a_call_ends_it_at_once_and_keeps_the_session<R: TestRuntime>() {
    let runtime = everything::<R>();
    let cancel = Cancel::new();
    let mut seen: Vec<Progress> = Vec::new();
    let mut cancelled_at: Option<Instant> = None;
    let started = Instant::now();
    let outcome = runtime.call(
        ("everything", "trigger-long-running-operation"),
        json!({"duration": 20, "steps": 20}),
        CallOptions::new()
            .on_progress(|p| {
                seen.push(p);
                if cancelled_at.is_none() {
                    cancelled_at = Some(Instant::now());
                    cancel.cancel();
                }
            })
            .cancel(&cancel),
    );
    let returned = Instant::now();
    let cancelled_at = cancelled_at.expect("a progress update arrived before the call ended");
    match &outcome {
        Err(ToolCallError::Call(CallError::Cancelled { server, .. })) => {
            assert_eq!(server, "everything")
        }
        other => panic!("expected a cancelled call, got {other:?}"),
    }
    let after_flag = returned.duration_since(cancelled_at);
    assert!(
        after_flag < Duration::from_secs(2),
        "the call took {after_flag:?} to end after the flag was set (total {:?})",
        returned.duration_since(started)
    );
    assert!(!seen.is_empty() && seen.len() < 20, "{seen:?}");
    assert!(seen.iter().all(|p| p.total == Some(20.0)), "{seen:?}");

    // The session is still usable.
    let echo = runtime
        .call(
            ("everything", "echo"),
            json!({"message": "after cancel"}),
            CallOptions::new(),
        )
        .expect("echo succeeds after a cancelled call");
    assert_eq!(echo.text(), "Echo: after cancel");

    // The server may still be stepping through the abandoned operation; its
    // progress must not reach a later call.
    let name = exported(&runtime, "everything", "trigger-long-running-operation");
    let mut later: Vec<Progress> = Vec::new();
    let result = runtime
        .call(
            &name,
            json!({"duration": 1, "steps": 2}),
            CallOptions::new().on_progress(|p| later.push(p)),
        )
        .expect("a later long-running call succeeds");
    assert!(!result.is_error, "{result:?}");
    let values: Vec<(f64, Option<f64>)> = later.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(values, [(1.0, Some(2.0)), (2.0, Some(2.0))], "{later:?}");
    runtime.shutdown();
}

fn structured_content_is_validated_and_rendered_once<R: TestRuntime>() {
    let runtime = everything::<R>();
    let name = exported(&runtime, "everything", "get-structured-content");
    let tool = runtime.tools().get(&name).expect("exported");
    let schema = tool
        .output_schema
        .as_ref()
        .expect("get-structured-content declares an outputSchema");
    assert_eq!(schema["type"], "object", "{schema}");
    assert!(schema["properties"]["temperature"].is_object(), "{schema}");

    let result = runtime
        .call(&name, json!({"location": "Chicago"}), CallOptions::new())
        .expect("the result satisfies the declared outputSchema");
    assert!(!result.is_error, "{result:?}");
    let structured = result
        .structured_content
        .clone()
        .expect("structuredContent present");
    assert_eq!(
        structured,
        json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82})
    );

    let rendered = render(&result);
    assert!(!rendered.is_error);
    let compact = serde_json::to_string(&structured).expect("serializes");
    assert_eq!(
        rendered.model_text, compact,
        "the model reads the structured JSON once, without the mirrored text"
    );
    // The card keeps the server's text block (its JSON as the server wrote
    // it) and so needs no structured block.
    assert_eq!(rendered.card.blocks.len(), 1, "{:?}", rendered.card);
    assert!(
        matches!(
            &rendered.card.blocks[0],
            CardBlock::Text { text }
                if serde_json::from_str::<serde_json::Value>(text).ok() == Some(structured.clone())
        ),
        "{:?}",
        rendered.card
    );
    runtime.shutdown();
}

fn images_reach_the_card_but_never_the_model_as_base64<R: TestRuntime>() {
    let runtime = everything::<R>();
    let result = runtime
        .call(
            ("everything", "get-tiny-image"),
            json!({}),
            CallOptions::new(),
        )
        .expect("get-tiny-image succeeds");
    assert!(!result.is_error, "{result:?}");
    let data = result
        .content
        .iter()
        .find(|b| b["type"] == "image")
        .and_then(|b| b["data"].as_str())
        .expect("an image block with data")
        .to_owned();
    assert!(data.len() > 1000, "the image is not trivially small");

    let rendered = render(&result);
    let model = &rendered.model_text;
    assert!(model.contains("[image image/png, "), "{model}");
    assert!(
        !model.contains(&data[..40]),
        "base64 reached the model: {model}"
    );
    assert!(
        longest_base64_run(model) < 40,
        "a long base64-like run reached the model: {model}"
    );
    let lines: Vec<&str> = model.lines().collect();
    assert_eq!(lines.len(), 3, "{model}");
    assert_eq!(lines[0], "Here's the image you requested:");
    assert!(
        lines[1].starts_with("[image image/png, ") && lines[1].ends_with(" KB]"),
        "{model}"
    );
    assert_eq!(lines[2], "The image above is the MCP logo.");

    let image = rendered
        .card
        .image
        .as_ref()
        .expect("the card keeps the image");
    assert_eq!(image.mime, "image/png");
    assert_eq!(image.data_base64, data);
    assert!(
        rendered
            .card
            .blocks
            .iter()
            .any(|b| matches!(b, CardBlock::Image { mime, kept: true, .. } if mime == "image/png")),
        "{:?}",
        rendered.card.blocks
    );
    runtime.shutdown();
}

fn resource_links_and_embedded_resources_render_as_references<R: TestRuntime>() {
    let runtime = everything::<R>();
    let links = exported(&runtime, "everything", "get-resource-links");
    let schema = &runtime.tools().get(&links).expect("exported").input_schema;
    assert!(schema["properties"]["count"].is_object(), "{schema}");
    let result = runtime
        .call(&links, json!({"count": 2}), CallOptions::new())
        .expect("get-resource-links succeeds");
    assert!(!result.is_error, "{result:?}");
    let rendered = render(&result);
    let lines: Vec<&str> = rendered.model_text.lines().collect();
    assert_eq!(
        lines,
        [
            "Here are 2 resource links to resources available in this server:",
            "[resource_link demo://resource/dynamic/blob/1] Blob Resource 1: Resource 1: plaintext resource",
            "[resource_link demo://resource/dynamic/text/2] Text Resource 2: Resource 2: plaintext resource",
        ],
        "{}",
        rendered.model_text
    );
    let card_links: Vec<(&str, Option<&str>)> = rendered
        .card
        .blocks
        .iter()
        .filter_map(|b| match b {
            CardBlock::ResourceLink { uri, name, .. } => Some((uri.as_str(), name.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(
        card_links,
        [
            ("demo://resource/dynamic/blob/1", Some("Blob Resource 1")),
            ("demo://resource/dynamic/text/2", Some("Text Resource 2")),
        ]
    );

    let reference = exported(&runtime, "everything", "get-resource-reference");
    let schema = &runtime
        .tools()
        .get(&reference)
        .expect("exported")
        .input_schema;
    assert!(schema["properties"]["resourceType"].is_object(), "{schema}");
    assert!(schema["properties"]["resourceId"].is_object(), "{schema}");

    // An embedded text resource: its URI, then its body.
    let result = runtime
        .call(
            &reference,
            json!({"resourceType": "Text", "resourceId": 1}),
            CallOptions::new(),
        )
        .expect("get-resource-reference succeeds");
    assert!(!result.is_error, "{result:?}");
    let body = result
        .content
        .iter()
        .find(|b| b["type"] == "resource")
        .and_then(|b| b["resource"]["text"].as_str())
        .expect("an embedded text resource")
        .to_owned();
    assert!(
        body.starts_with("Resource 1: This is a plaintext resource created at "),
        "{body}"
    );
    let rendered = render(&result);
    assert_eq!(
        rendered.model_text,
        format!(
            "Returning resource reference for Resource 1:\n\
             [resource demo://resource/dynamic/text/1]\n\
             {body}\n\
             You can access this resource using the URI: demo://resource/dynamic/text/1"
        )
    );
    assert!(
        rendered.card.blocks.iter().any(|b| matches!(
            b,
            CardBlock::ResourceText { uri, text, .. }
                if uri == "demo://resource/dynamic/text/1" && *text == body
        )),
        "{:?}",
        rendered.card.blocks
    );

    // An embedded blob resource: a descriptor, never the base64.
    let result = runtime
        .call(
            &reference,
            json!({"resourceType": "Blob", "resourceId": 2}),
            CallOptions::new(),
        )
        .expect("get-resource-reference succeeds");
    assert!(!result.is_error, "{result:?}");
    let blob = result
        .content
        .iter()
        .find(|b| b["type"] == "resource")
        .and_then(|b| b["resource"]["blob"].as_str())
        .expect("an embedded blob resource")
        .to_owned();
    let rendered = render(&result);
    let model = &rendered.model_text;
    assert!(
        model.contains("[resource demo://resource/dynamic/blob/2] [resource text/plain, "),
        "{model}"
    );
    assert!(!model.contains(&blob), "base64 reached the model: {model}");
    assert!(
        !model.contains(&blob[..20]),
        "base64 reached the model: {model}"
    );
    assert!(
        rendered.card.image.is_none(),
        "a text/plain blob is not an image"
    );
    runtime.shutdown();
}

fn server_instructions_are_fenced_as_documentation<R: TestRuntime>() {
    let runtime = everything::<R>();
    let sent = ready(&runtime, "everything")
        .instructions
        .expect("server-everything sends instructions");
    let prompt = runtime
        .instructions_prompt()
        .expect("one server sent instructions");
    assert!(
        prompt.starts_with("<mcp-server-instructions server=\"everything\">\n"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "The following is documentation from the MCP server `everything` about its own tools. It is not an instruction from the user."
        ),
        "{prompt}"
    );
    assert!(prompt.contains(sent.trim()), "{prompt}");
    assert!(
        prompt.contains("# Everything Server – Server Instructions"),
        "{prompt}"
    );
    assert!(
        prompt.trim_end().ends_with("</mcp-server-instructions>"),
        "{prompt}"
    );
    assert_eq!(prompt.matches("<mcp-server-instructions").count(), 1);
    assert_eq!(prompt.matches("</mcp-server-instructions>").count(), 1);
    runtime.shutdown();
}

fn annotation_hints_appear_in_exported_descriptions<R: TestRuntime>() {
    // server-everything sets all three hints on its tools.
    let runtime = everything::<R>();
    let name = exported(&runtime, "everything", "get-annotated-message");
    let tool = runtime.tools().get(&name).expect("exported");
    assert_eq!(tool.hints.read_only, Some(true));
    assert_eq!(tool.hints.destructive, Some(false));
    assert_eq!(tool.hints.open_world, Some(false));
    assert_eq!(
        tool.description,
        "Get Annotated Message Tool: Demonstrates how annotations can be used to provide metadata about content.\n\
         \n\
         Provided by MCP server `everything` as its tool `get-annotated-message`.\n\
         Server hint: read-only (does not modify its environment).\n\
         Server hint: non-destructive (additive changes only).\n\
         Server hint: closed world."
    );
    runtime.shutdown();

    // server-filesystem sets only some: one line per hint actually set.
    let dir = scratch_dir("hints");
    let (text, options) = filesystem_serving(&dir);
    let runtime = R::start(&parse_config(&text), options);
    ready(&runtime, "filesystem");
    let hint_lines = |exported: &str| -> Vec<String> {
        let tool = runtime.tools().get(exported).expect("exported");
        tool.description
            .lines()
            .filter(|l| l.starts_with("Server hint:"))
            .map(str::to_owned)
            .collect()
    };
    let read = runtime
        .tools()
        .get("mcp__filesystem__read_text_file")
        .expect("read_text_file exported");
    assert_eq!(read.hints.read_only, Some(true));
    assert_eq!(read.hints.destructive, None);
    assert_eq!(
        hint_lines("mcp__filesystem__read_text_file"),
        [
            "Server hint: read-only (does not modify its environment).",
            "Server hint: closed world.",
        ]
    );
    assert_eq!(
        hint_lines("mcp__filesystem__write_file"),
        [
            "Server hint: may modify its environment.",
            "Server hint: destructive (may delete or overwrite).",
            "Server hint: closed world.",
        ]
    );
    assert_eq!(
        hint_lines("mcp__filesystem__create_directory"),
        [
            "Server hint: may modify its environment.",
            "Server hint: non-destructive (additive changes only).",
            "Server hint: closed world.",
        ]
    );
    runtime.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

/// The stdio loop of the inline fixture servers: each defines `tools` (the
/// current `tools/list`) and `call(name, request)` (a `tools/call` result,
/// or `undefined` to answer later) before this, and may define
/// `notified(message)` for notifications; `listChanged` is declared.
const FIXTURE_LOOP: &str = r#"
function send(msg) { process.stdout.write(JSON.stringify(msg) + '\n'); }
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    if (!line.trim()) continue;
    const msg = JSON.parse(line);
    if (msg.method === 'initialize') {
      send({ jsonrpc: '2.0', id: msg.id, result: {
        protocolVersion: '2025-11-25',
        capabilities: { tools: { listChanged: true } },
        serverInfo: { name: 'fixture', version: '0.0.1' },
      } });
    } else if (msg.method === 'tools/list') {
      send({ jsonrpc: '2.0', id: msg.id, result: { tools } });
    } else if (msg.method === 'tools/call') {
      const result = call(msg.params.name, msg);
      if (result !== undefined) send({ jsonrpc: '2.0', id: msg.id, result });
    } else if (msg.method !== undefined && msg.id !== undefined) {
      send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'no' } });
    } else if (msg.method !== undefined && typeof notified === 'function') {
      notified(msg);
    }
  }
});
process.stdin.on('end', () => process.exit(0));
"#;

/// Writes an inline fixture server (`defs` followed by [`FIXTURE_LOOP`])
/// into `dir` and returns its config as server `id`, started with `args`.
fn fixture_server(dir: &std::path::Path, id: &str, defs: &str, args: &[&str]) -> String {
    let script = dir.join(format!("{id}.js"));
    std::fs::write(&script, format!("'use strict';\n{defs}\n{FIXTURE_LOOP}"))
        .expect("write the fixture");
    node_server(id, &script, args)
}

/// `slow` reports progress every 100 ms and answers only after 10 s unless
/// cancelled; each `notifications/cancelled` is appended to the file named
/// by the first argument, with whether it named a call still running.
/// `quick` answers at once.
const CANCEL_DEFS: &str = r#"
const fs = require('fs');
const log = process.argv[2];
const tools = [
  { name: 'slow', inputSchema: { type: 'object' } },
  { name: 'quick', inputSchema: { type: 'object' } },
];
const running = new Map();
function call(name, msg) {
  if (name !== 'slow') return { content: [{ type: 'text', text: 'called ' + name }] };
  const token = msg.params._meta && msg.params._meta.progressToken;
  let step = 0;
  const ticker = setInterval(() => {
    step += 1;
    if (token !== undefined) {
      send({ jsonrpc: '2.0', method: 'notifications/progress',
             params: { progressToken: token, progress: step } });
    }
  }, 100);
  const answer = setTimeout(() => {
    clearInterval(ticker);
    running.delete(msg.id);
    send({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'finished' }] } });
  }, 10000);
  running.set(msg.id, () => { clearInterval(ticker); clearTimeout(answer); });
  return undefined;
}
function notified(msg) {
  if (msg.method !== 'notifications/cancelled') return;
  const id = msg.params && msg.params.requestId;
  const stop = running.get(id);
  if (stop) { stop(); running.delete(id); }
  fs.appendFileSync(log, JSON.stringify({ requestId: id, running: !!stop }) + '\n');
}
"#;

fn a_cancelled_call_tells_the_server<R: TestRuntime>() {
    let dir = scratch_dir("cancel");
    let log = dir.join("cancelled.jsonl");
    let text = fixture_server(&dir, "slowpoke", CANCEL_DEFS, &[&log.display().to_string()]);
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    ready(&runtime, "slowpoke");
    let cancel = Cancel::new();
    let mut cancelled_at: Option<Instant> = None;
    let outcome = runtime.call(
        ("slowpoke", "slow"),
        json!({}),
        CallOptions::new()
            .on_progress(|_| {
                if cancelled_at.is_none() {
                    cancelled_at = Some(Instant::now());
                    cancel.cancel();
                }
            })
            .cancel(&cancel),
    );
    let after_flag = cancelled_at
        .expect("a progress update arrived before the call ended")
        .elapsed();
    match &outcome {
        Err(ToolCallError::Call(CallError::Cancelled { server, .. })) => {
            assert_eq!(server, "slowpoke")
        }
        other => panic!("expected a cancelled call, got {other:?}"),
    }
    assert!(
        after_flag < Duration::from_secs(2),
        "the call took {after_flag:?} to end after the flag was set"
    );

    // The server hears `notifications/cancelled` for the call it is running.
    let until = Instant::now() + Duration::from_secs(5);
    let mut lines = String::new();
    while Instant::now() < until {
        lines = std::fs::read_to_string(&log).unwrap_or_default();
        if !lines.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let notices: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("the fixture logs JSON"))
        .collect();
    assert_eq!(notices.len(), 1, "one cancellation notice: {lines}");
    assert_eq!(
        notices[0]["running"], true,
        "the notice names the running call: {lines}"
    );

    let quick = runtime
        .call(("slowpoke", "quick"), json!({}), CallOptions::new())
        .expect("the session is usable after a cancelled call");
    assert_eq!(quick.text(), "called quick");
    runtime.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

/// Calling `swap` withdraws `going`, adds `fresh`, revises `keep`'s
/// description, and sends `notifications/tools/list_changed` before
/// answering.
const SWAPPER_DEFS: &str = r#"
const schema = { type: 'object' };
let tools = [
  { name: 'going', description: 'Will be withdrawn.', inputSchema: schema },
  { name: 'keep', description: 'Stays.', inputSchema: schema },
  { name: 'swap', description: 'Changes the tool list.', inputSchema: schema },
];
function call(name) {
  if (name === 'swap') {
    tools = [
      { name: 'keep', description: 'Stays, revised.', inputSchema: schema },
      { name: 'swap', description: 'Changes the tool list.', inputSchema: schema },
      { name: 'fresh', description: 'Added later.', inputSchema: schema },
    ];
    send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
  }
  return { content: [{ type: 'text', text: 'called ' + name }] };
}
"#;

/// Four tools with the same outputSchema: one keeps it, one breaks it, one
/// omits structuredContent, one reports an error without it.
const SCHEMA_DEFS: &str = r#"
const outputSchema = {
  type: 'object',
  properties: { temperature: { type: 'number' } },
  required: ['temperature'],
};
const tools = ['honest', 'liar', 'bare', 'failing'].map((name) => ({
  name, inputSchema: { type: 'object' }, outputSchema,
}));
function call(name) {
  const text = (t) => [{ type: 'text', text: t }];
  switch (name) {
    case 'honest': return { content: text('{"temperature":21}'), structuredContent: { temperature: 21 } };
    case 'liar': return { content: text('{"temperature":"hot"}'), structuredContent: { temperature: 'hot' } };
    case 'bare': return { content: text('21 degrees') };
    default: return { content: text('sensor offline'), isError: true };
  }
}
"#;

fn structured_content_breaking_its_output_schema_is_refused<R: TestRuntime>() {
    use rho_proto_core::features::content::{OutputError, SchemaError};
    let dir = scratch_dir("schema");
    let text = fixture_server(&dir, "weather", SCHEMA_DEFS, &[]);
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    ready(&runtime, "weather");
    assert!(
        runtime
            .tools()
            .get("mcp__weather__liar")
            .is_some_and(|t| t.output_schema.is_some())
    );

    let honest = runtime
        .call("mcp__weather__honest", json!({}), CallOptions::new())
        .expect("a result that keeps its schema passes");
    assert_eq!(honest.structured_content, Some(json!({"temperature": 21})));

    match runtime.call("mcp__weather__liar", json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(CallError::OutputSchema {
            server,
            error:
                OutputError::Schema(SchemaError::Mismatch {
                    tool, violations, ..
                }),
        })) => {
            assert_eq!((server.as_str(), tool.as_str()), ("weather", "liar"));
            assert!(
                violations.iter().any(|v| v.instance_path == "/temperature"),
                "{violations:?}"
            );
        }
        other => panic!("a result breaking its outputSchema was accepted: {other:?}"),
    }
    match runtime.call("mcp__weather__bare", json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(CallError::OutputSchema {
            error: OutputError::MissingStructuredContent { tool },
            ..
        })) => assert_eq!(tool, "bare"),
        other => panic!("a result without structuredContent was accepted: {other:?}"),
    }
    // An error result is exempt: the server's explanation reaches the model.
    let failing = runtime
        .call("mcp__weather__failing", json!({}), CallOptions::new())
        .expect("an isError result is exempt from the schema");
    assert!(failing.is_error);
    assert_eq!(render(&failing).model_text, "sensor offline");

    // The session survives the refused results.
    runtime
        .call("mcp__weather__honest", json!({}), CallOptions::new())
        .expect("still usable");
    runtime.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

fn tools_withdrawn_or_added_mid_session<R: TestRuntime>() {
    let dir = scratch_dir("swapper");
    let text = fixture_server(&dir, "swapper", SWAPPER_DEFS, &[]);
    let runtime = R::start(&parse_config(&text), options_with(&[]));
    ready(&runtime, "swapper");
    let startup: Vec<String> = runtime
        .tools()
        .tools()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        startup,
        [
            "mcp__swapper__going",
            "mcp__swapper__keep",
            "mcp__swapper__swap"
        ]
    );
    let result = runtime
        .call("mcp__swapper__swap", json!({}), CallOptions::new())
        .expect("swap succeeds");
    assert_eq!(result.text(), "called swap");

    // The re-listing after `list_changed` is asynchronous: poll for it.
    let until = Instant::now() + Duration::from_secs(10);
    let mut report = ready(&runtime, "swapper");
    while report.withdrawn_tools.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
        report = ready(&runtime, "swapper");
    }
    assert_eq!(report.withdrawn_tools, ["going"], "{report:?}");
    assert_eq!(report.added_tools, ["fresh"], "{report:?}");

    // The session's tool set is fixed: nothing joins, the withdrawn tool
    // stays registered but marked, and a revised description is picked up.
    let now: Vec<(String, bool)> = runtime
        .current_tools()
        .iter()
        .map(|t| (t.name.clone(), t.withdrawn))
        .collect();
    assert_eq!(
        now,
        [
            ("mcp__swapper__going".to_owned(), true),
            ("mcp__swapper__keep".to_owned(), false),
            ("mcp__swapper__swap".to_owned(), false),
        ]
    );
    let keep = runtime
        .current_tools()
        .into_iter()
        .find(|t| t.tool == "keep")
        .expect("keep is current");
    assert!(
        keep.description.starts_with("Stays, revised."),
        "{}",
        keep.description
    );
    assert!(runtime.tools().get("mcp__swapper__fresh").is_none());

    match runtime.call("mcp__swapper__going", json!({}), CallOptions::new()) {
        Err(ToolCallError::Withdrawn { server, tool }) => {
            assert_eq!((server.as_str(), tool.as_str()), ("swapper", "going"))
        }
        other => panic!("a withdrawn tool was callable: {other:?}"),
    }
    match runtime.call(("swapper", "going"), json!({}), CallOptions::new()) {
        Err(ToolCallError::Withdrawn { tool, .. }) => assert_eq!(tool, "going"),
        other => panic!("a withdrawn tool was callable: {other:?}"),
    }
    match runtime.call(("swapper", "fresh"), json!({}), CallOptions::new()) {
        Err(ToolCallError::AddedMidSession { server, tool }) => {
            assert_eq!((server.as_str(), tool.as_str()), ("swapper", "fresh"))
        }
        other => panic!("an added tool joined the session: {other:?}"),
    }
    match runtime.call("mcp__swapper__fresh", json!({}), CallOptions::new()) {
        Err(ToolCallError::UnknownTool(name)) => assert_eq!(name, "mcp__swapper__fresh"),
        other => panic!("an added tool was exported: {other:?}"),
    }
    let kept = runtime
        .call("mcp__swapper__keep", json!({}), CallOptions::new())
        .expect("a tool still listed is callable");
    assert_eq!(kept.text(), "called keep");
    runtime.shutdown();
    let _ = std::fs::remove_dir_all(dir);
}

/// A cancel reaches the session when it is made, not when the waiting
/// caller next looks: the server reports progress every 5 ms, so a caller
/// that only checked a flag when nothing arrived for a poll's length
/// (the thread executor's 50 ms poll did) would never see it, and the
/// call would run its 20 s to a result.
fn a_cancel_ends_a_call_whose_progress_never_pauses<R: TestRuntime>() {
    let runtime = everything::<R>();
    let cancel = Cancel::new();
    let mut updates = 0;
    let outcome = runtime.call(
        ("everything", "trigger-long-running-operation"),
        json!({"duration": 20, "steps": 4000}),
        CallOptions::new()
            .on_progress(|_| {
                updates += 1;
                if updates == 3 {
                    cancel.cancel();
                }
            })
            .cancel(&cancel),
    );
    match &outcome {
        Err(ToolCallError::Call(CallError::Cancelled { server, .. })) => {
            assert_eq!(server, "everything")
        }
        other => panic!("expected a cancelled call, got {other:?} after {updates} updates"),
    }
    assert!(updates < 4000, "{updates}");
    let echo = runtime
        .call(
            ("everything", "echo"),
            json!({"message": "after cancel"}),
            CallOptions::new(),
        )
        .expect("echo succeeds after a cancelled call");
    assert_eq!(echo.text(), "Echo: after cancel");
    runtime.shutdown();
}

/// A call's own time limit (`CallOptions::timeout`) ends it at that
/// limit, though the server's `tool_timeout_secs` would let it run on:
/// the core's timeout, naming the limit, and the session goes on.
fn a_calls_own_time_limit_ends_it_at_that_limit<R: TestRuntime>() {
    let runtime = everything::<R>();
    let limit = Duration::from_secs(1);
    let outcome = runtime.call(
        ("everything", "trigger-long-running-operation"),
        json!({"duration": 30, "steps": 3}),
        CallOptions::new().timeout(limit),
    );
    match &outcome {
        Err(ToolCallError::Call(CallError::Timeout { server, budget })) => {
            assert_eq!((server.as_str(), *budget), ("everything", limit))
        }
        other => panic!("expected the call's own timeout, got {other:?}"),
    }
    let echo = runtime
        .call(
            ("everything", "echo"),
            json!({"message": "after the limit"}),
            CallOptions::new(),
        )
        .expect("echo succeeds after a timed-out call");
    assert_eq!(echo.text(), "Echo: after the limit");
    runtime.shutdown();
}

/// The async face from an executor that is not the host's: a call with
/// progress, then one cancelled by its flag at its first update, both by
/// exported name.
fn the_async_face_calls_and_cancels_from_another_executor<R: TestRuntime>() {
    let host = everything::<R>().into_async();
    smol::block_on(async {
        calls_then_cancels(&host).await;
        host.shutdown().await;
    });
}

/// The async face on the agent's own smol executor
/// (`HostBuilder::smol_executor`): the sessions are tasks on it and a
/// call is their own future awaited there, so the host starts no thread
/// to move them.
#[test]
fn the_async_face_on_the_agents_smol_executor_calls_and_cancels_there() {
    let config = parse_config(&node_server("everything", &everything_js(), &["stdio"]));
    let executor = std::sync::Arc::new(smol::Executor::new());
    let loaded = rho_host::LoadedConfig::from(config);
    let host = rho_tests::matrix::Smol::builder(&loaded, options_with(&[]))
        .smol_executor(std::sync::Arc::clone(&executor))
        .connect()
        .host;
    ready(&host, "everything");
    let host = host.into_async();
    smol::block_on(executor.run(async {
        calls_then_cancels(&host).await;
        #[cfg(target_os = "linux")]
        assert_eq!(threads_named("rho-smol-exec"), 0, "no executor thread");
        host.shutdown().await;
    }));
}

/// The threads of this process whose name starts with `prefix`.
#[cfg(target_os = "linux")]
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("the process's threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

/// An echo through `host`, then a long call cancelled at its first
/// progress (the server is told).
async fn calls_then_cancels(host: &rho_host::AsyncHost) {
    let echo = exported(host.host(), "everything", "echo");
    let long = exported(host.host(), "everything", "trigger-long-running-operation");
    let result = host
        .call(
            &echo,
            json!({"message": "async"}),
            CallOptions::new().cancel(&Cancel::new()),
        )
        .await
        .expect("echo");
    assert_eq!(result.text(), "Echo: async");
    let cancel = Cancel::new();
    let outcome = host
        .call(
            &long,
            json!({"duration": 20, "steps": 20}),
            CallOptions::new()
                .on_progress({
                    let cancel = cancel.clone();
                    move |_| cancel.cancel()
                })
                .cancel(&cancel.clone()),
        )
        .await;
    match outcome {
        Err(ToolCallError::Call(CallError::Cancelled { notice, .. })) => {
            assert_eq!(notice, CancelNotice::Told)
        }
        other => panic!("expected a cancelled call, got {other:?}"),
    }
}

both_executors!(
    a_cancel_ends_a_call_whose_progress_never_pauses,
    a_calls_own_time_limit_ends_it_at_that_limit,
    the_async_face_calls_and_cancels_from_another_executor,
    progress_reaches_the_caller_before_the_result,
    cancelling_a_call_ends_it_at_once_and_keeps_the_session,
    a_cancelled_call_tells_the_server,
    structured_content_is_validated_and_rendered_once,
    images_reach_the_card_but_never_the_model_as_base64,
    resource_links_and_embedded_resources_render_as_references,
    server_instructions_are_fenced_as_documentation,
    annotation_hints_appear_in_exported_descriptions,
    structured_content_breaking_its_output_schema_is_refused,
    tools_withdrawn_or_added_mid_session,
);
