//! Tool results rendered for the model and the card, and outputSchema checks, pinned one behaviour at a time.

use super::*;
use serde_json::json;

fn result(content: Value) -> CallToolResult {
    CallToolResult::from_value(json!({ "content": content })).expect("result")
}

/// Base64 text that decodes to exactly `bytes` bytes.
fn base64_of(bytes: usize) -> String {
    let mut s = "A".repeat(bytes / 3 * 4);
    match bytes % 3 {
        1 => s.push_str("AA=="),
        2 => s.push_str("AAA="),
        _ => {}
    }
    s
}

fn image(mime: &str, data: &str) -> Value {
    json!({ "type": "image", "mimeType": mime, "data": data })
}

#[test]
fn text_block_is_the_text_for_model_and_card() {
    let r = render(&result(json!([
        { "type": "text", "text": "one" },
        { "type": "text", "text": "two" },
    ])));
    assert_eq!(r.model_text, "one\ntwo");
    assert_eq!(
        r.card.blocks,
        vec![
            CardBlock::Text { text: "one".into() },
            CardBlock::Text { text: "two".into() }
        ]
    );
    assert!(!r.is_error);
}

#[test]
fn image_is_a_descriptor_for_the_model_and_the_image_on_the_card() {
    let data = base64_of(41_200);
    let r = render(&result(json!([image("image/png", &data)])));
    assert_eq!(r.model_text, "[image image/png, 41.2 KB]");
    assert_eq!(
        r.card.blocks,
        vec![CardBlock::Image {
            mime: "image/png".into(),
            size: 41_200,
            kept: true
        }]
    );
    assert_eq!(
        r.card.image,
        Some(CardImage {
            mime: "image/png".into(),
            data_base64: data
        })
    );
}

#[test]
fn audio_is_a_descriptor_for_model_and_card() {
    let r = render(&result(json!([
        { "type": "audio", "mimeType": "audio/wav", "data": base64_of(1_100_000) }
    ])));
    assert_eq!(r.model_text, "[audio audio/wav, 1.1 MB]");
    assert_eq!(
        r.card.blocks,
        vec![CardBlock::Audio {
            mime: "audio/wav".into(),
            size: 1_100_000
        }]
    );
    assert_eq!(r.card.image, None);
}

#[test]
fn text_resource_is_its_uri_then_its_body() {
    let r = render(&result(json!([{
        "type": "resource",
        "resource": { "uri": "file:///src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}" }
    }])));
    assert_eq!(r.model_text, "[resource file:///src/main.rs]\nfn main() {}");
    assert_eq!(
        r.card.blocks,
        vec![CardBlock::ResourceText {
            uri: "file:///src/main.rs".into(),
            mime: Some("text/x-rust".into()),
            text: "fn main() {}".into()
        }]
    );
}

#[test]
fn blob_resource_is_described_and_a_non_image_is_not_kept() {
    let r = render(&result(json!([{
        "type": "resource",
        "resource": { "uri": "db://dump", "mimeType": "application/zip", "blob": base64_of(2048) }
    }])));
    assert_eq!(
        r.model_text,
        "[resource db://dump] [resource application/zip, 2.0 KB]"
    );
    assert_eq!(
        r.card.blocks,
        vec![CardBlock::ResourceBlob {
            uri: "db://dump".into(),
            mime: Some("application/zip".into()),
            size: 2048,
            kept: false
        }]
    );
    assert_eq!(r.card.image, None);
}

#[test]
fn blob_resource_without_mime_is_described_as_octet_stream() {
    let r = render(&result(json!([{
        "type": "resource", "resource": { "uri": "x:y", "blob": "AAAA" }
    }])));
    assert_eq!(
        r.model_text,
        "[resource x:y] [resource application/octet-stream, 3 B]"
    );
}

#[test]
fn image_blob_resource_is_a_card_image_candidate() {
    let data = base64_of(10);
    let r = render(&result(json!([{
        "type": "resource",
        "resource": { "uri": "shot://1", "mimeType": "image/jpeg", "blob": data }
    }])));
    assert_eq!(
        r.model_text,
        "[resource shot://1] [resource image/jpeg, 10 B]"
    );
    assert_eq!(
        r.card.image,
        Some(CardImage {
            mime: "image/jpeg".into(),
            data_base64: data
        })
    );
    assert!(matches!(
        r.card.blocks[0],
        CardBlock::ResourceBlob { kept: true, .. }
    ));
}

#[test]
fn resource_link_is_uri_name_and_description() {
    let r = render(&result(json!([
        { "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs",
          "description": "entry point", "mimeType": "text/x-rust" },
        { "type": "resource_link", "uri": "file:///b.rs", "name": "b.rs" },
        { "type": "resource_link", "uri": "file:///c.rs" },
    ])));
    assert_eq!(
        r.model_text,
        "[resource_link file:///a.rs] a.rs: entry point\n\
         [resource_link file:///b.rs] b.rs\n\
         [resource_link file:///c.rs]"
    );
    assert_eq!(
        r.card.blocks[0],
        CardBlock::ResourceLink {
            uri: "file:///a.rs".into(),
            name: Some("a.rs".into()),
            description: Some("entry point".into()),
            mime: Some("text/x-rust".into())
        }
    );
}

#[test]
fn unknown_block_type_is_named_not_dumped() {
    let r = render(&result(json!([{ "type": "hologram", "data": "AAAA" }])));
    assert_eq!(r.model_text, "[unsupported hologram block]");
    assert_eq!(
        r.card.blocks,
        vec![CardBlock::Unsupported {
            kind: "hologram".into()
        }]
    );
}

#[test]
fn malformed_blocks_render_as_unreadable_notes() {
    let r = render(&result(json!([
        { "type": "image", "mimeType": "image/png" },
        { "type": "audio", "data": "AAAA" },
        { "type": "text", "text": 3 },
        { "type": "resource", "resource": { "text": "body" } },
        { "type": "resource", "resource": { "uri": "x:y" } },
        { "type": "resource" },
        { "type": "resource_link" },
        { "type": "image", "mimeType": "image/png", "data": "not base64!" },
        { "text": "no type" },
        "a bare string",
        { "type": "text", "text": "still here" },
    ])));
    assert_eq!(
        r.model_text,
        "[unreadable image block: missing `data`]\n\
         [unreadable audio block: missing `mimeType`]\n\
         [unreadable text block: `text` is not a string]\n\
         [unreadable resource block: missing `uri`]\n\
         [unreadable resource block: `x:y` has neither `text` nor `blob`]\n\
         [unreadable resource block: missing `resource`]\n\
         [unreadable resource_link block: missing `uri`]\n\
         [unreadable image block: `data` is not base64]\n\
         [unreadable block: no `type`]\n\
         [unreadable block: not an object]\n\
         still here"
    );
    assert_eq!(
        r.card.blocks[0],
        CardBlock::Unreadable {
            kind: Some("image".into()),
            reason: "missing `data`".into()
        }
    );
    assert_eq!(r.card.image, None);
}

#[test]
fn only_the_first_fitting_image_is_kept() {
    let first = base64_of(30);
    let second = base64_of(60);
    let r = render(&result(json!([
        image("image/png", &first),
        image("image/gif", &second),
    ])));
    assert_eq!(r.card.image.as_ref().map(|i| &i.data_base64), Some(&first));
    assert_eq!(
        r.card.blocks,
        vec![
            CardBlock::Image {
                mime: "image/png".into(),
                size: 30,
                kept: true
            },
            CardBlock::Image {
                mime: "image/gif".into(),
                size: 60,
                kept: false
            },
        ]
    );
    assert_eq!(
        r.model_text,
        "[image image/png, 30 B]\n[image image/gif, 60 B]"
    );
}

#[test]
fn an_oversized_first_image_is_skipped_and_a_later_fitting_one_kept() {
    let oversized = "A".repeat(IMAGE_BUDGET + 4);
    let exactly_budget = "A".repeat(IMAGE_BUDGET);
    let r = render(&result(json!([
        image("image/png", &oversized),
        image("image/png", &exactly_budget),
    ])));
    assert!(matches!(
        r.card.blocks[0],
        CardBlock::Image { kept: false, .. }
    ));
    assert!(matches!(
        r.card.blocks[1],
        CardBlock::Image { kept: true, .. }
    ));
    assert_eq!(
        r.card.image.map(|i| i.data_base64.len()),
        Some(IMAGE_BUDGET)
    );
    // Decoded sizes: (4 MiB + 4) * 3/4 and 4 MiB * 3/4.
    assert_eq!(
        r.model_text,
        "[image image/png, 3.1 MB]\n[image image/png, 3.1 MB]"
    );
}

#[test]
fn no_base64_ever_reaches_the_model() {
    let payload = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk".repeat(2000);
    let r = render(&result(json!([
        image("image/png", &payload),
        image("image/png", &payload),
        { "type": "audio", "mimeType": "audio/mpeg", "data": payload },
        { "type": "resource", "resource": { "uri": "a:b", "mimeType": "image/png", "blob": payload } },
        { "type": "resource", "resource": { "uri": "a:c", "blob": payload } },
    ])));
    assert!(!r.model_text.contains(&payload[..64]));
    assert!(r.model_text.len() < 400, "{}", r.model_text);
}

#[test]
fn structured_content_replaces_the_mirrored_text_for_the_model() {
    let r = render(
        &CallToolResult::from_value(json!({
            "content": [
                { "type": "text", "text": "{\"temperature\": 22.5}" },
                image("image/png", "AAAA"),
            ],
            "structuredContent": { "temperature": 22.5, "conditions": "cloudy" }
        }))
        .expect("result"),
    );
    assert_eq!(
        r.model_text,
        "{\"temperature\":22.5,\"conditions\":\"cloudy\"}\n[image image/png, 3 B]"
    );
    // The card, which costs no context, keeps the text.
    assert_eq!(
        r.card.blocks[0],
        CardBlock::Text {
            text: "{\"temperature\": 22.5}".into()
        }
    );
    assert_eq!(r.card.blocks.len(), 2);
}

/// The Python SDK's and fastmcp's wrap of a non-object return: the model
/// reads the value once, a string as is, anything else as JSON; an object
/// with more members than `result` (a tool returning a dict) is unchanged.
#[test]
fn a_structured_result_that_only_wraps_a_value_is_read_as_that_value() {
    let markdown = "# Title\n\nSome **bold** text.";
    let cases = [
        (json!({ "result": markdown }), markdown.to_owned()),
        (json!({ "result": "{\"a\": 1}" }), "{\"a\": 1}".to_owned()),
        (json!({ "result": [1, "two"] }), "[1,\"two\"]".to_owned()),
        (json!({ "result": 42 }), "42".to_owned()),
        (json!({ "result": null }), "null".to_owned()),
        (
            json!({ "result": "x", "other": 1 }),
            "{\"result\":\"x\",\"other\":1}".to_owned(),
        ),
        (json!({ "answer": "x" }), "{\"answer\":\"x\"}".to_owned()),
    ];
    for (structured, expected) in cases {
        let text = match &structured["result"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let r = render(
            &CallToolResult::from_value(json!({
                "content": [{ "type": "text", "text": text }],
                "structuredContent": structured,
            }))
            .expect("result"),
        );
        assert_eq!(r.model_text, expected, "{structured}");
        assert_eq!(r.card.blocks.len(), 1, "the card keeps the mirrored text");
    }
}

#[test]
fn structured_only_result_shows_the_json_on_the_card() {
    let r = render(
        &CallToolResult::from_value(json!({ "structuredContent": { "ok": true } }))
            .expect("result"),
    );
    assert_eq!(r.model_text, "{\"ok\":true}");
    assert_eq!(
        r.card.blocks,
        vec![CardBlock::Structured {
            value: json!({ "ok": true })
        }]
    );
}

#[test]
fn is_error_is_carried_through() {
    let r = render(
        &CallToolResult::from_value(json!({
            "content": [{ "type": "text", "text": "boom" }], "isError": true
        }))
        .expect("result"),
    );
    assert!(r.is_error);
    assert_eq!(r.model_text, "boom");
}

#[test]
fn card_serializes_with_a_type_tag() {
    let r = render(&result(json!([image("image/png", "AAAA")])));
    let json = serde_json::to_value(&r.card).expect("serializes");
    assert_eq!(
        json,
        json!({
            "blocks": [{ "type": "image", "mime": "image/png", "size": 3, "kept": true }],
            "image": { "mime": "image/png", "data_base64": "AAAA" }
        })
    );
}

#[test]
fn decoded_len_accounts_for_padding_and_whitespace() {
    assert_eq!(decoded_len(""), Some(0));
    assert_eq!(decoded_len("QQ=="), Some(1));
    assert_eq!(decoded_len("QUI="), Some(2));
    assert_eq!(decoded_len("QUJD"), Some(3));
    assert_eq!(decoded_len("QQ"), Some(1), "unpadded");
    assert_eq!(decoded_len("QUI"), Some(2), "unpadded");
    assert_eq!(decoded_len("QUJD\nREVG"), Some(6), "MIME line breaks");
    assert_eq!(decoded_len("-_-_"), Some(3), "URL-safe alphabet");
    assert_eq!(decoded_len("Q"), None, "a lone symbol");
    assert_eq!(decoded_len("QQ==QQ=="), None, "data after padding");
    assert_eq!(decoded_len("Q==="), None);
    assert_eq!(decoded_len("QU*D"), None);
    for n in 0..40 {
        assert_eq!(decoded_len(&base64_of(n)), Some(n));
    }
}

#[test]
fn human_size_boundaries() {
    assert_eq!(human_size(0), "0 B");
    assert_eq!(human_size(512), "512 B");
    assert_eq!(human_size(999), "999 B");
    assert_eq!(human_size(1000), "1.0 KB");
    assert_eq!(human_size(1049), "1.0 KB");
    assert_eq!(human_size(1050), "1.1 KB", "half rounds up");
    assert_eq!(human_size(41_200), "41.2 KB");
    assert_eq!(human_size(999_949), "999.9 KB");
    assert_eq!(human_size(999_950), "1.0 MB", "never 1000.0 KB");
    assert_eq!(human_size(1_100_000), "1.1 MB");
    assert_eq!(human_size(IMAGE_BUDGET), "4.2 MB");
    assert_eq!(human_size(999_950_000), "1.0 GB");
    assert_eq!(human_size(usize::MAX), "18.4 EB");
}

// -- outputSchema ------------------------------------------------------

fn weather_tool(output_schema: Value) -> Tool {
    Tool::from_value(&json!({
        "name": "get_weather",
        "inputSchema": { "type": "object" },
        "outputSchema": output_schema,
    }))
    .expect("tool")
}

fn weather_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "temperature": { "type": "number" },
            "conditions": { "type": "string" },
            "humidity": { "type": "number" }
        },
        "required": ["temperature", "conditions", "humidity"]
    })
}

fn structured(value: Value) -> CallToolResult {
    CallToolResult::from_value(json!({ "content": [], "structuredContent": value }))
        .expect("result")
}

#[test]
fn valid_structured_content_passes() {
    let tool = weather_tool(weather_schema());
    let compiled = OutputSchema::compile("get_weather", &weather_schema()).expect("compiles");
    let ok = structured(json!({ "temperature": 22.5, "conditions": "cloudy", "humidity": 65 }));
    assert_eq!(check_output(&tool, Some(&compiled), &ok), Ok(()));
    assert_eq!(check_output(&tool, None, &ok), Ok(()));
}

#[test]
fn invalid_structured_content_names_the_violations_with_paths() {
    let tool = weather_tool(weather_schema());
    let compiled = OutputSchema::compile("get_weather", &weather_schema()).expect("compiles");
    let bad = structured(json!({ "temperature": "hot", "conditions": 3 }));
    let err = check_output(&tool, Some(&compiled), &bad).expect_err("invalid");
    let OutputError::Schema(SchemaError::Mismatch {
        tool: name,
        violations,
        more,
    }) = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(name, "get_weather");
    assert_eq!(*more, 0);
    let paths: Vec<&str> = violations
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect();
    assert_eq!(paths, ["", "/conditions", "/temperature"]);
    let message = err.to_string();
    assert!(
        message.starts_with(
            "tool `get_weather` returned structuredContent that does not match its \
             outputSchema: (root): "
        ),
        "{message}"
    );
    assert!(message.contains("humidity"), "{message}");
    assert!(
        message.contains("/temperature: want number, but got string"),
        "{message}"
    );
    assert!(!message.contains("rho.invalid"), "{message}");
}

#[test]
fn many_violations_are_cut_to_a_few() {
    let schema = json!({ "type": "array", "items": { "type": "string" } });
    let compiled = OutputSchema::compile("t", &schema).expect("compiles");
    let err = compiled
        .validate(&json!([1, 2, 3, 4, 5]))
        .expect_err("invalid");
    let message = err.to_string();
    assert!(message.ends_with("(and 2 more)"), "{message}");
    assert_eq!(message.matches("want string").count(), 3, "{message}");
    // Deterministic: the same failure gives the same words.
    assert_eq!(
        compiled
            .validate(&json!([1, 2, 3, 4, 5]))
            .expect_err("invalid"),
        err
    );
}

#[test]
fn missing_structured_content_fails_when_a_schema_is_declared() {
    let tool = weather_tool(weather_schema());
    let text_only = result(json!([{ "type": "text", "text": "22.5 and cloudy" }]));
    let err = check_output(&tool, None, &text_only).expect_err("missing");
    assert_eq!(
        err.to_string(),
        "tool `get_weather` declares an outputSchema but returned no structuredContent"
    );
}

#[test]
fn error_results_are_exempt_from_the_schema() {
    let tool = weather_tool(weather_schema());
    let failed = CallToolResult::from_value(json!({
        "content": [{ "type": "text", "text": "city not found" }], "isError": true
    }))
    .expect("result");
    assert_eq!(check_output(&tool, None, &failed), Ok(()));
    let failed_with_other_shape = CallToolResult::from_value(json!({
        "content": [], "structuredContent": { "error": "nope" }, "isError": true
    }))
    .expect("result");
    assert_eq!(check_output(&tool, None, &failed_with_other_shape), Ok(()));
}

#[test]
fn tools_without_an_output_schema_have_no_contract() {
    let tool = Tool::from_value(&json!({ "name": "t", "inputSchema": { "type": "object" } }))
        .expect("tool");
    assert_eq!(check_output(&tool, None, &result(json!([]))), Ok(()));
}

#[test]
fn a_stale_compiled_schema_is_replaced_by_the_declared_one() {
    let old = OutputSchema::compile("get_weather", &json!({ "type": "string" })).expect("old");
    let tool = weather_tool(weather_schema());
    let ok = structured(json!({ "temperature": 1, "conditions": "x", "humidity": 2 }));
    assert_eq!(check_output(&tool, Some(&old), &ok), Ok(()));
}

#[test]
fn default_dialect_is_2020_12() {
    // `prefixItems` exists only from 2020-12 on.
    let schema = json!({ "type": "array", "prefixItems": [{ "type": "string" }] });
    let compiled = OutputSchema::compile("t", &schema).expect("compiles");
    assert_eq!(compiled.validate(&json!(["a", 1])), Ok(()));
    assert!(matches!(
        compiled.validate(&json!([1])),
        Err(SchemaError::Mismatch { .. })
    ));
}

#[test]
fn draft_07_schema_is_honoured() {
    // In draft-07 an array-valued `items` is a tuple, and `prefixItems`
    // means nothing.
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "array",
        "items": [{ "type": "string" }, { "type": "number" }],
        "prefixItems": [{ "type": "boolean" }]
    });
    let compiled = OutputSchema::compile("t", &schema).expect("compiles");
    assert_eq!(compiled.validate(&json!(["a", 1])), Ok(()));
    assert!(matches!(
        compiled.validate(&json!([1, "a"])),
        Err(SchemaError::Mismatch { .. })
    ));
    // The same schema without `$schema` is 2020-12, where array `items`
    // is not a schema at all.
    let mut as_2020 = schema.clone();
    as_2020.as_object_mut().expect("object").remove("$schema");
    assert!(matches!(
        OutputSchema::compile("t", &as_2020),
        Err(SchemaError::Uncompilable { .. })
    ));
}

#[test]
fn unknown_dialect_is_refused_by_name() {
    let schema = json!({ "$schema": "https://example.com/my-dialect", "type": "object" });
    let err = OutputSchema::compile("t", &schema).expect_err("unsupported");
    assert_eq!(
        err,
        SchemaError::UnsupportedDialect {
            tool: "t".into(),
            dialect: "https://example.com/my-dialect".into()
        }
    );
}

#[test]
fn a_ref_to_a_file_fails_to_compile_without_reading_it() {
    for reference in [
        "file:///etc/passwd",
        "file:///etc/hostname#/x",
        "other.json",
        "https://example.com/schema.json",
    ] {
        let schema = json!({ "properties": { "a": { "$ref": reference } } });
        let err = OutputSchema::compile("leaky", &schema).expect_err("refused");
        let message = err.to_string();
        assert!(
            message.starts_with(
                "tool `leaky` declares an outputSchema that does not compile: it refers to `"
            ),
            "{message}"
        );
    }
}

#[test]
fn references_inside_the_schema_resolve() {
    let schema = json!({
        "$defs": { "celsius": { "type": "number" } },
        "properties": { "t": { "$ref": "#/$defs/celsius" } }
    });
    let compiled = OutputSchema::compile("t", &schema).expect("compiles");
    assert_eq!(compiled.validate(&json!({ "t": 1 })), Ok(()));
    assert!(matches!(
        compiled.validate(&json!({ "t": "1" })),
        Err(SchemaError::Mismatch { .. })
    ));
}

#[test]
fn an_invalid_schema_is_an_error_naming_the_tool() {
    let err = OutputSchema::compile("broken", &json!({ "type": 12 })).expect_err("invalid");
    let message = err.to_string();
    assert!(
        message.starts_with(
            "tool `broken` declares an outputSchema that does not compile: it is not valid \
             JSON Schema: /type: "
        ),
        "{message}"
    );
    let tool = weather_tool(json!({ "type": "object", "pattern": "(" }));
    let err = check_output(&tool, None, &structured(json!({}))).expect_err("invalid");
    assert!(
        err.to_string()
            .starts_with("tool `get_weather` declares an outputSchema that does not compile"),
        "{err}"
    );
}

#[test]
fn output_schema_can_be_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<OutputSchema>();
}

#[test]
fn the_capped_rendering_cuts_the_model_text_only() {
    let long = "y".repeat(5000);
    let r = result(json!([{"type": "text", "text": long}]));
    let capped = render_capped(&r, 1024);
    assert!(capped.model_text.starts_with(&"y".repeat(1024)));
    assert!(
        capped
            .model_text
            .ends_with("\n[rho cut this at 1.0 KB of 5.0 KB (max_output_bytes)]"),
        "{}",
        capped.model_text
    );
    assert_eq!(capped.card, render(&r).card, "the card is not cut");
    let short = result(json!([{"type": "text", "text": "hi"}]));
    assert_eq!(render_capped(&short, 1024), render(&short));
}
