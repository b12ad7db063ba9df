//! Elicitation's rules, pinned one behaviour at a time: forms read from requested schemas, answers typed and checked.

use super::*;

#[test]
fn fields_come_in_the_servers_order_not_sorted_by_name() {
    // Parsed from text, as a server's message is: key order must survive.
    let params: Value = serde_json::from_str(
        r#"{"message":"m","requestedSchema":{"type":"object","properties":{
            "zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"number"}}}}"#,
    )
    .expect("json");
    let form = form_from_request(&params).expect("renders");
    let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid"]);
}
use proptest::prelude::*;

/// Request params asking for one property.
fn one(name: &str, property: Value) -> Value {
    json!({
        "message": "Please answer",
        "requestedSchema": { "type": "object", "properties": { name: property } }
    })
}

fn only_field(property: Value) -> Field {
    let form = form_from_request(&one("f", property)).expect("renderable");
    assert_eq!(form.fields.len(), 1);
    form.fields.into_iter().next().expect("one field")
}

fn options(pairs: &[(&str, &str)]) -> Vec<ChoiceOption> {
    pairs
        .iter()
        .map(|(value, label)| ChoiceOption {
            value: (*value).into(),
            label: (*label).into(),
        })
        .collect()
}

fn texts(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

fn submitted(pairs: &[(&str, &[&str])]) -> FormAnswer {
    FormAnswer::Submitted(
        pairs
            .iter()
            .map(|(name, values)| ((*name).to_owned(), texts(values)))
            .collect(),
    )
}

/// The result of answering a one-property form.
fn answer_one(property: Value, values: &[&str]) -> Value {
    let form = form_from_request(&one("f", property)).expect("renderable");
    result_for(&form, &submitted(&[("f", values)]))
}

fn unrenderable_reason(params: Value) -> String {
    match form_from_request(&params) {
        Err(Decline::Unrenderable(why)) => why,
        other => panic!("expected Unrenderable, got {other:?}"),
    }
}

#[test]
fn capability_is_form_mode_and_url_mode_only_where_the_host_can_open_urls() {
    assert_eq!(capability(false), json!({ "form": {} }));
    assert!(capability(false).get("url").is_none());
    assert_eq!(capability(true), json!({ "form": {}, "url": {} }));
}

#[test]
fn untitled_single_select_is_a_choice_labelled_by_its_values() {
    let field = only_field(json!({ "type": "string", "enum": ["Red", "Green"] }));
    assert_eq!(
        field.kind,
        FieldKind::Choice {
            options: options(&[("Red", "Red"), ("Green", "Green")]),
            multi: false
        }
    );
}

#[test]
fn titled_single_select_uses_the_titles_as_labels() {
    let field = only_field(json!({
        "type": "string",
        "oneOf": [
            { "const": "#FF0000", "title": "Red" },
            { "const": "#00FF00", "title": "Green" }
        ]
    }));
    assert_eq!(
        field.kind,
        FieldKind::Choice {
            options: options(&[("#FF0000", "Red"), ("#00FF00", "Green")]),
            multi: false
        }
    );
}

#[test]
fn titled_option_without_a_title_is_labelled_by_its_value() {
    let field = only_field(json!({
        "type": "string",
        "oneOf": [{ "const": "a" }, { "const": "b", "title": 7 }]
    }));
    assert_eq!(
        field.kind,
        FieldKind::Choice {
            options: options(&[("a", "a"), ("b", "b")]),
            multi: false
        }
    );
}

#[test]
fn legacy_enum_names_are_the_labels() {
    let field = only_field(json!({
        "type": "string",
        "enum": ["pet-1", "pet-2"],
        "enumNames": ["Cats", "Dogs"]
    }));
    assert_eq!(
        field.kind,
        FieldKind::Choice {
            options: options(&[("pet-1", "Cats"), ("pet-2", "Dogs")]),
            multi: false
        }
    );
}

#[test]
fn untitled_multi_select_is_a_multi_choice() {
    let field = only_field(json!({
        "type": "array",
        "items": { "type": "string", "enum": ["Guitar", "Piano"] }
    }));
    assert_eq!(
        field.kind,
        FieldKind::Choice {
            options: options(&[("Guitar", "Guitar"), ("Piano", "Piano")]),
            multi: true
        }
    );
}

#[test]
fn titled_multi_select_uses_the_any_of_titles() {
    let field = only_field(json!({
        "type": "array",
        "items": { "anyOf": [
            { "const": "fish-1", "title": "Tuna" },
            { "const": "fish-2", "title": "Salmon" }
        ] }
    }));
    assert_eq!(
        field.kind,
        FieldKind::Choice {
            options: options(&[("fish-1", "Tuna"), ("fish-2", "Salmon")]),
            multi: true
        }
    );
}

#[test]
fn boolean_is_a_confirm() {
    let field = only_field(json!({ "type": "boolean", "title": "Agree?" }));
    assert_eq!(field.kind, FieldKind::Confirm);
    assert_eq!(field.title.as_deref(), Some("Agree?"));
    assert_eq!(field.name, "f");
}

#[test]
fn string_is_text_and_its_constraints_are_help() {
    let field = only_field(json!({
        "type": "string",
        "description": "Your email address",
        "format": "email",
        "minLength": 3
    }));
    assert_eq!(field.kind, FieldKind::Text);
    assert_eq!(field.title, None);
    assert_eq!(
        field.help,
        texts(&[
            "Your email address",
            "Format: an email address",
            "At least 3 characters"
        ])
    );
}

#[test]
fn number_and_integer_are_numbers_with_their_range_as_help() {
    let number = only_field(json!({ "type": "number", "minimum": 0, "maximum": 1000 }));
    assert_eq!(number.kind, FieldKind::Number { integer: false });
    assert_eq!(number.help, texts(&["At least 0", "At most 1000"]));
    let integer = only_field(json!({ "type": "integer", "description": "Age", "minimum": 1.5 }));
    assert_eq!(integer.kind, FieldKind::Number { integer: true });
    assert_eq!(integer.help, texts(&["Age", "At least 1.5"]));
}

#[test]
fn every_constraint_becomes_a_help_line_in_a_fixed_order() {
    let text = only_field(json!({
        "type": "string",
        "pattern": "^[A-Za-z]+$",
        "maxLength": 50,
        "minLength": 1,
        "format": "date",
        "description": "Name"
    }));
    assert_eq!(
        text.help,
        texts(&[
            "Name",
            "Format: a date (YYYY-MM-DD)",
            "At least 1 character",
            "At most 50 characters",
            "Must match the pattern ^[A-Za-z]+$"
        ])
    );
    let multi = only_field(json!({
        "type": "array",
        "maxItems": 3,
        "minItems": 1,
        "items": { "type": "string", "enum": ["a"] }
    }));
    assert_eq!(
        multi.help,
        texts(&["Choose at least 1", "Choose at most 3"])
    );
    let exclusive = only_field(json!({
        "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1
    }));
    assert_eq!(exclusive.help, texts(&["More than 0", "Less than 1"]));
    let other = only_field(json!({ "type": "string", "format": "uuid", "description": " " }));
    assert_eq!(other.help, texts(&["Format: uuid"]));
}

#[test]
fn constraints_are_not_enforced() {
    let property =
        json!({ "type": "string", "minLength": 10, "format": "email", "pattern": "^x$" });
    assert_eq!(
        answer_one(property, &["ab"]),
        json!({ "action": "accept", "content": { "f": "ab" } })
    );
    let number = json!({ "type": "integer", "minimum": 1, "maximum": 100 });
    assert_eq!(
        answer_one(number, &["500"]),
        json!({ "action": "accept", "content": { "f": 500 } })
    );
    let multi = json!({
        "type": "array", "minItems": 2,
        "items": { "type": "string", "enum": ["a", "b"] }
    });
    assert_eq!(
        answer_one(multi, &["a"]),
        json!({ "action": "accept", "content": { "f": ["a"] } })
    );
}

#[test]
fn defaults_prefill_each_kind_as_text() {
    let cases = [
        (json!({ "type": "string", "default": "hi" }), vec!["hi"]),
        (json!({ "type": "number", "default": 2.75 }), vec!["2.75"]),
        (json!({ "type": "number", "default": 7 }), vec!["7"]),
        (json!({ "type": "integer", "default": 42 }), vec!["42"]),
        (json!({ "type": "integer", "default": 30.0 }), vec!["30"]),
        (json!({ "type": "boolean", "default": true }), vec!["yes"]),
        (json!({ "type": "boolean", "default": false }), vec!["no"]),
        (
            json!({ "type": "string", "enum": ["a", "b"], "default": "b" }),
            vec!["b"],
        ),
        (
            json!({ "type": "string", "oneOf": [{ "const": "x", "title": "X" }], "default": "x" }),
            vec!["x"],
        ),
        (
            json!({
                "type": "array", "default": ["c", "a"],
                "items": { "type": "string", "enum": ["a", "b", "c"] }
            }),
            vec!["c", "a"],
        ),
        (
            json!({
                "type": "array", "default": [],
                "items": { "anyOf": [{ "const": "a", "title": "A" }] }
            }),
            vec![],
        ),
    ];
    for (property, expected) in cases {
        let field = only_field(property.clone());
        assert_eq!(field.default, Some(texts(&expected)), "{property}");
    }
}

#[test]
fn a_default_that_is_no_valid_answer_is_not_prefilled() {
    for property in [
        json!({ "type": "string", "default": 3 }),
        json!({ "type": "number", "default": "3" }),
        json!({ "type": "integer", "default": 3.5 }),
        json!({ "type": "boolean", "default": "yes" }),
        json!({ "type": "string", "enum": ["a"], "default": "z" }),
        json!({ "type": "array", "default": ["a", "z"], "items": { "enum": ["a"] } }),
        json!({ "type": "array", "default": "a", "items": { "enum": ["a"] } }),
        json!({ "type": "string" }),
    ] {
        assert_eq!(only_field(property.clone()).default, None, "{property}");
    }
}

#[test]
fn required_comes_from_the_required_array() {
    let form = form_from_request(&json!({
        "message": "m",
        "requestedSchema": {
            "type": "object",
            "properties": { "a": { "type": "string" }, "b": { "type": "string" } },
            "required": ["b"]
        }
    }))
    .expect("renderable");
    let required: Vec<_> = form
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.required))
        .collect();
    assert_eq!(required, vec![("a", false), ("b", true)]);
    assert_eq!(form.message, "m");
}

#[test]
fn fields_follow_the_iteration_order_of_the_properties_map() {
    let params = json!({
        "message": "m",
        "requestedSchema": { "type": "object", "properties": {
            "zeta": { "type": "string" },
            "alpha": { "type": "boolean" },
            "mid": { "type": "number" }
        } }
    });
    let form = form_from_request(&params).expect("renderable");
    let names: Vec<_> = form.fields.iter().map(|f| f.name.as_str()).collect();
    let map_order: Vec<_> = params["requestedSchema"]["properties"]
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, map_order);
}

#[test]
fn unrenderable_schemas_are_declined_whole() {
    let schema = |s: Value| json!({ "message": "m", "requestedSchema": s });
    let cases = [
        (json!("params"), "not an object"),
        (
            json!({ "requestedSchema": { "properties": { "a": { "type": "string" } } } }),
            "no message",
        ),
        (json!({ "message": "m" }), "no requestedSchema"),
        (schema(json!({ "type": "object" })), "no properties"),
        (
            schema(json!({ "type": "object", "properties": {} })),
            "no properties",
        ),
        (
            schema(json!({ "type": "object", "properties": [] })),
            "not an object",
        ),
        (
            schema(json!({ "type": "array", "properties": { "a": { "type": "string" } } })),
            "not \"object\"",
        ),
        (
            schema(json!({ "properties": { "a": { "type": "string" } }, "required": ["b"] })),
            "required field `b`",
        ),
        (
            schema(json!({ "properties": { "a": { "type": "string" } }, "required": "a" })),
            "not a list",
        ),
    ];
    for (params, reason) in cases {
        let why = unrenderable_reason(params.clone());
        assert!(why.contains(reason), "{params}: {why}");
    }
    let property_cases = [
        (json!({ "type": "string", "enum": [] }), "no values"),
        (json!({ "type": "string", "oneOf": [] }), "no values"),
        (
            json!({ "type": "array", "items": { "enum": [] } }),
            "no values",
        ),
        (
            json!({ "type": "array", "items": { "anyOf": [] } }),
            "no values",
        ),
        (json!({ "type": "object", "properties": {} }), "\"object\""),
        (json!({ "type": "null" }), "\"null\""),
        (json!({ "type": ["string", "null"] }), "cannot ask for"),
        (json!({ "enum": ["a"] }), "no type"),
        (
            json!({ "type": "array", "items": { "type": "string" } }),
            "not a multi-select",
        ),
        (
            json!({ "type": "array", "items": { "type": "object" } }),
            "not a multi-select",
        ),
        (json!({ "type": "array" }), "not a multi-select"),
        (
            json!({ "type": "array", "items": { "type": "number", "enum": ["1"] } }),
            "not a multi-select",
        ),
        (
            json!({ "type": "string", "enum": ["a", 1] }),
            "non-string enum value",
        ),
        (json!({ "type": "string", "enum": "a" }), "not a list"),
        (json!({ "type": "string", "enum": ["a", "a"] }), "repeats"),
        (
            json!({ "type": "string", "oneOf": [{ "title": "A" }] }),
            "without a string const",
        ),
        (
            json!({ "type": "string", "enum": ["a"], "oneOf": [{ "const": "a" }] }),
            "both",
        ),
        (
            json!({ "type": "string", "enum": ["a", "b"], "enumNames": ["A"] }),
            "enumNames",
        ),
        (
            json!({ "type": "string", "enum": ["a"], "enumNames": [1] }),
            "enumNames",
        ),
        (json!("string"), "not a schema object"),
    ];
    for (property, reason) in property_cases {
        let why = unrenderable_reason(one("p", property.clone()));
        assert!(why.contains(reason), "{property}: {why}");
    }
}

#[test]
fn one_bad_property_declines_the_whole_form() {
    let params = json!({
        "message": "m",
        "requestedSchema": { "type": "object", "properties": {
            "fine": { "type": "string" },
            "nested": { "type": "object" }
        } }
    });
    assert!(matches!(
        form_from_request(&params),
        Err(Decline::Unrenderable(_))
    ));
}

#[test]
fn a_url_mode_request_is_never_a_form() {
    let url = json!({
        "mode": "url",
        "message": "Sign in",
        "elicitationId": "e-1",
        "url": "https://example.com/auth"
    });
    assert!(is_url_mode(&url));
    assert_eq!(
        form_from_request(&url),
        Err(Decline::Unrenderable(
            "a URL-mode request is not a form".into()
        ))
    );
}

fn url_params(url: &str) -> serde_json::Value {
    json!({ "mode": "url", "message": "Connect your account", "elicitationId": "e-1", "url": url })
}

#[test]
fn a_url_request_shows_the_url_as_opened_and_its_host_apart() {
    let request =
        url_request_from_params(&url_params("https://Auth.Example.com/connect?x=1#f"), true)
            .expect("valid");
    assert_eq!(request.message, "Connect your account");
    assert_eq!(request.url, "https://auth.example.com/connect?x=1#f");
    assert_eq!(request.host, "auth.example.com");
    assert_eq!(request.unicode_host, None);
    assert_eq!(request.elicitation_id.as_deref(), Some("e-1"));
    assert!(request.warnings.is_empty(), "{:?}", request.warnings);
    assert_eq!(url_result(UrlAnswer::Opened), json!({ "action": "accept" }));
    assert_eq!(
        url_result(UrlAnswer::Declined),
        json!({ "action": "decline" })
    );
    assert_eq!(
        url_result(UrlAnswer::CouldNotAsk),
        json!({ "action": "decline" })
    );
    assert_eq!(
        url_result(UrlAnswer::Dismissed),
        json!({ "action": "cancel" })
    );
}

#[test]
fn an_internationalized_host_is_shown_in_punycode_and_unicode_with_a_warning() {
    let request =
        url_request_from_params(&url_params("https://pаypal.com/login"), true).expect("valid");
    assert_eq!(request.host, "xn--pypal-4ve.com");
    assert_eq!(request.unicode_host.as_deref(), Some("pаypal.com"));
    assert!(
        request.url.starts_with("https://xn--pypal-4ve.com/"),
        "{}",
        request.url
    );
    assert_eq!(request.warnings, vec![UrlWarning::Punycode]);
    let written =
        url_request_from_params(&url_params("https://xn--pypal-4ve.com/"), true).expect("valid");
    assert_eq!(written.warnings, vec![UrlWarning::Punycode]);
}

#[test]
fn user_info_and_plain_http_away_from_this_machine_are_warned_about() {
    let spoof = url_request_from_params(&url_params("https://bank.example@evil.example/"), true)
        .expect("valid");
    assert_eq!(spoof.host, "evil.example");
    assert_eq!(spoof.warnings, vec![UrlWarning::UserInfo]);
    let plain = url_request_from_params(&url_params("http://evil.example/"), true).expect("valid");
    assert_eq!(plain.warnings, vec![UrlWarning::NotHttps]);
    for local in [
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "http://[::1]/",
    ] {
        let local = url_request_from_params(&url_params(local), true).expect("valid");
        assert!(local.warnings.is_empty(), "{local:?}");
    }
}

#[test]
fn control_characters_in_a_url_never_survive_into_what_is_shown() {
    let request = url_request_from_params(
        &url_params("https://example.com/a\u{1b}[2J b\u{7}?q=\u{9b}"),
        true,
    )
    .expect("valid");
    assert!(
        request.url.chars().all(|c| c.is_ascii_graphic()),
        "{:?}",
        request.url
    );
}

#[test]
fn urls_that_cannot_be_opened_safely_are_invalid_params() {
    let refused = |params: serde_json::Value| {
        url_request_from_params(&params, true)
            .expect_err("refused")
            .to_string()
    };
    for (url, why) in [
        ("file:///etc/passwd", "scheme is `file`"),
        ("javascript:alert(1)", "scheme is `javascript`"),
        ("vscode://run?x", "scheme is `vscode`"),
        ("not a url", "does not parse"),
        ("https://", "does not parse"),
    ] {
        let said = refused(url_params(url));
        assert!(said.contains(why), "{url}: {said}");
    }
    let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
    assert!(refused(url_params(&long)).contains("longer than"));
    assert!(
        refused(json!({"mode": "url", "message": "m", "elicitationId": "e"})).contains("no `url`")
    );
    assert!(
        refused(json!({"mode": "url", "url": "https://e.x/", "elicitationId": "e"}))
            .contains("no `message`")
    );
    assert!(
        refused(json!({"mode": "url", "message": "m", "url": 3, "elicitationId": "e"}))
            .contains("not a string")
    );
    assert!(
        refused(json!({"mode": "url", "message": "m", "url": "https://e.x/"}))
            .contains("no `elicitationId`")
    );
    // The 2026 era's requests carry no id.
    let unnamed = json!({"mode": "url", "message": "m", "url": "https://e.x/"});
    assert_eq!(
        url_request_from_params(&unnamed, false)
            .expect("valid")
            .elicitation_id,
        None
    );
}

#[test]
fn a_url_elicitation_required_error_lists_its_urls_or_is_kept_as_sent() {
    let data = json!({"elicitations": [
        url_params("https://a.example/one"),
        url_params("https://b.example/two"),
    ]});
    let listed = required_elicitations(Some(&data)).expect("two");
    assert_eq!(
        listed.iter().map(|r| r.host.as_str()).collect::<Vec<_>>(),
        ["a.example", "b.example"]
    );
    assert!(required_elicitations(None).is_err());
    assert!(required_elicitations(Some(&json!({"elicitations": []}))).is_err());
    let one_bad =
        json!({"elicitations": [url_params("https://a.example/"), url_params("file:///x")]});
    assert!(required_elicitations(Some(&one_bad)).is_err());
    let many = json!({"elicitations": vec![url_params("https://a.example/"); MAX_REQUIRED_ELICITATIONS + 1]});
    assert!(required_elicitations(Some(&many)).is_err());
}

#[test]
fn explicit_form_mode_renders_and_unknown_modes_decline() {
    let mut params = one("f", json!({ "type": "string" }));
    params["mode"] = json!("form");
    let form = form_from_request(&params).expect("form mode renders");
    assert_eq!(form.fields.len(), 1);
    params["mode"] = json!("telepathy");
    assert!(unrenderable_reason(params.clone()).contains("unknown elicitation mode"));
    params["mode"] = Value::Null;
    assert!(unrenderable_reason(params).contains("unknown elicitation mode"));
    assert_eq!(
        Decline::Unrenderable("x".into()).to_string(),
        "the form cannot be shown: x"
    );
}

#[test]
fn a_number_answered_3_sends_the_number_3() {
    let result = answer_one(json!({ "type": "number" }), &["3"]);
    assert_eq!(result, json!({ "action": "accept", "content": { "f": 3 } }));
    assert!(result["content"]["f"].is_number());
    assert_eq!(
        answer_one(json!({ "type": "number" }), &[" 3.5 "]),
        json!({ "action": "accept", "content": { "f": 3.5 } })
    );
    assert_eq!(
        answer_one(json!({ "type": "number" }), &["-1e3"]),
        json!({ "action": "accept", "content": { "f": -1000.0 } })
    );
}

#[test]
fn integers_must_be_integral() {
    let integer = json!({ "type": "integer" });
    assert_eq!(answer_one(integer.clone(), &["3.5"]), declined());
    let three = answer_one(integer.clone(), &["3.0"]);
    assert_eq!(three, json!({ "action": "accept", "content": { "f": 3 } }));
    assert!(three["content"]["f"].is_i64());
    assert_eq!(
        answer_one(integer.clone(), &["18446744073709551615"]),
        json!({ "action": "accept", "content": { "f": u64::MAX } })
    );
    assert_eq!(answer_one(integer, &["1e30"]), declined());
}

#[test]
fn text_that_is_no_number_declines() {
    for text in [
        "abc",
        "3 apples",
        "1,000",
        "NaN",
        "inf",
        "-infinity",
        "1e400",
    ] {
        assert_eq!(
            answer_one(json!({ "type": "number" }), &[text]),
            declined(),
            "{text}"
        );
        assert_eq!(
            answer_one(json!({ "type": "integer" }), &[text]),
            declined(),
            "{text}"
        );
    }
}

#[test]
fn confirms_accept_yes_no_true_false_in_any_case() {
    for (text, value) in [
        ("Yes", true),
        ("TRUE", true),
        ("no", false),
        (" False ", false),
    ] {
        assert_eq!(
            answer_one(json!({ "type": "boolean" }), &[text]),
            json!({ "action": "accept", "content": { "f": value } }),
            "{text}"
        );
    }
    assert_eq!(
        answer_one(json!({ "type": "boolean" }), &["maybe"]),
        declined()
    );
    assert_eq!(
        answer_one(json!({ "type": "boolean" }), &["y"]),
        json!({ "action": "accept", "content": { "f": true } })
    );
}

#[test]
fn choices_send_their_values_and_unknown_choices_decline() {
    let titled = json!({ "type": "string", "oneOf": [
        { "const": "hero-1", "title": "Superman" },
        { "const": "hero-2", "title": "Wonder Woman" }
    ] });
    assert_eq!(
        answer_one(titled.clone(), &["hero-2"]),
        json!({ "action": "accept", "content": { "f": "hero-2" } })
    );
    // Labels are not values.
    assert_eq!(answer_one(titled.clone(), &["Superman"]), declined());
    assert_eq!(answer_one(titled, &["hero-3"]), declined());
    let blank_value = json!({ "type": "string", "enum": ["", "a"] });
    assert_eq!(
        answer_one(blank_value, &[""]),
        json!({ "action": "accept", "content": { "f": "" } })
    );
}

#[test]
fn multi_select_sends_an_array_of_values_in_option_order() {
    let multi = json!({
        "type": "array",
        "items": { "type": "string", "enum": ["Guitar", "Piano", "Violin"] }
    });
    let result = answer_one(multi.clone(), &["Violin", "Guitar", "Violin"]);
    assert_eq!(
        result,
        json!({ "action": "accept", "content": { "f": ["Guitar", "Violin"] } })
    );
    assert_eq!(
        answer_one(multi.clone(), &[]),
        json!({ "action": "accept", "content": { "f": [] } })
    );
    assert_eq!(answer_one(multi, &["Guitar", "Banjo"]), declined());
}

#[test]
fn single_valued_kinds_take_exactly_one_value() {
    for property in [
        json!({ "type": "string" }),
        json!({ "type": "number" }),
        json!({ "type": "boolean" }),
        json!({ "type": "string", "enum": ["a", "b"] }),
    ] {
        assert_eq!(
            answer_one(property.clone(), &["a", "b"]),
            declined(),
            "{property}"
        );
    }
}

fn two_field_form() -> Form {
    form_from_request(&json!({
        "message": "m",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "age": { "type": "integer" }
            },
            "required": ["name"]
        }
    }))
    .expect("renderable")
}

#[test]
fn a_missing_required_field_declines() {
    let form = two_field_form();
    assert_eq!(
        result_for(&form, &submitted(&[("age", &["30"])])),
        declined()
    );
    assert_eq!(result_for(&form, &submitted(&[("name", &[])])), declined());
    assert_eq!(
        result_for(&form, &submitted(&[("name", &["  "])])),
        declined()
    );
}

#[test]
fn unanswered_optional_fields_are_omitted() {
    let form = two_field_form();
    let expected = json!({ "action": "accept", "content": { "name": "Ada" } });
    assert_eq!(
        result_for(&form, &submitted(&[("name", &["Ada"])])),
        expected
    );
    assert_eq!(
        result_for(&form, &submitted(&[("name", &["Ada"]), ("age", &[])])),
        expected
    );
    assert_eq!(
        result_for(&form, &submitted(&[("name", &["Ada"]), ("age", &[""])])),
        expected
    );
}

#[test]
fn an_answer_for_a_field_the_form_lacks_declines() {
    let form = two_field_form();
    let answer = submitted(&[("name", &["Ada"]), ("password", &["hunter2"])]);
    assert_eq!(result_for(&form, &answer), declined());
}

#[test]
fn dismissed_cancels_and_could_not_ask_declines() {
    let form = two_field_form();
    assert_eq!(
        result_for(&form, &FormAnswer::Dismissed),
        json!({ "action": "cancel" })
    );
    assert_eq!(result_for(&form, &FormAnswer::CouldNotAsk), declined());
    assert_eq!(declined(), json!({ "action": "decline" }));
}

/// The exact request `trigger-elicitation-request` of
/// @modelcontextprotocol/server-everything sends
/// (dist/tools/trigger-elicitation-request.js).
#[allow(
    clippy::approx_constant,
    reason = "server-everything's literal default, not pi"
)]
fn server_everything_request() -> Value {
    json!({
        "message": "Please provide inputs for the following fields:",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {
                    "title": "String",
                    "type": "string",
                    "description": "Your full, legal name",
                },
                "check": {
                    "title": "Boolean",
                    "type": "boolean",
                    "description": "Agree to the terms and conditions",
                },
                "firstLine": {
                    "title": "String with default",
                    "type": "string",
                    "description": "Favorite first line of a story",
                    "default": "It was a dark and stormy night.",
                },
                "email": {
                    "title": "String with email format",
                    "type": "string",
                    "format": "email",
                    "description": "Your email address (will be verified, and never shared with anyone else)",
                },
                "homepage": {
                    "type": "string",
                    "format": "uri",
                    "title": "String with uri format",
                    "description": "Portfolio / personal website",
                },
                "birthdate": {
                    "title": "String with date format",
                    "type": "string",
                    "format": "date",
                    "description": "Your date of birth",
                },
                "integer": {
                    "title": "Integer",
                    "type": "integer",
                    "description": "Your favorite integer (do not give us your phone number, pin, or other sensitive info)",
                    "minimum": 1,
                    "maximum": 100,
                    "default": 42,
                },
                "number": {
                    "title": "Number in range 1-1000",
                    "type": "number",
                    "description": "Favorite number (there are no wrong answers)",
                    "minimum": 0,
                    "maximum": 1000,
                    "default": 3.14,
                },
                "untitledSingleSelectEnum": {
                    "type": "string",
                    "title": "Untitled Single Select Enum",
                    "description": "Choose your favorite friend",
                    "enum": ["Monica", "Rachel", "Joey", "Chandler", "Ross", "Phoebe"],
                    "default": "Monica",
                },
                "untitledMultipleSelectEnum": {
                    "type": "array",
                    "title": "Untitled Multiple Select Enum",
                    "description": "Choose your favorite instruments",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "type": "string",
                        "enum": ["Guitar", "Piano", "Violin", "Drums", "Bass"],
                    },
                    "default": ["Guitar"],
                },
                "titledSingleSelectEnum": {
                    "type": "string",
                    "title": "Titled Single Select Enum",
                    "description": "Choose your favorite hero",
                    "oneOf": [
                        { "const": "hero-1", "title": "Superman" },
                        { "const": "hero-2", "title": "Green Lantern" },
                        { "const": "hero-3", "title": "Wonder Woman" },
                    ],
                    "default": "hero-1",
                },
                "titledMultipleSelectEnum": {
                    "type": "array",
                    "title": "Titled Multiple Select Enum",
                    "description": "Choose your favorite types of fish",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            { "const": "fish-1", "title": "Tuna" },
                            { "const": "fish-2", "title": "Salmon" },
                            { "const": "fish-3", "title": "Trout" },
                        ],
                    },
                    "default": ["fish-1"],
                },
                "legacyTitledEnum": {
                    "type": "string",
                    "title": "Legacy Titled Single Select Enum",
                    "description": "Choose your favorite type of pet",
                    "enum": ["pet-1", "pet-2", "pet-3", "pet-4", "pet-5"],
                    "enumNames": ["Cats", "Dogs", "Birds", "Fish", "Reptiles"],
                    "default": "pet-1",
                },
            },
            "required": ["name"],
        },
    })
}

#[allow(
    clippy::approx_constant,
    reason = "server-everything's literal default, not pi"
)]
#[test]
fn server_everything_form_maps_all_thirteen_fields() {
    let form = form_from_request(&server_everything_request()).expect("renderable");
    assert_eq!(
        form.message,
        "Please provide inputs for the following fields:"
    );
    assert_eq!(form.fields.len(), 13);
    let field = |name: &str| {
        form.fields
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("field {name}"))
    };
    assert!(field("name").required);
    assert_eq!(form.fields.iter().filter(|f| f.required).count(), 1);
    assert_eq!(field("check").kind, FieldKind::Confirm);
    for text in ["name", "firstLine", "email", "homepage", "birthdate"] {
        assert_eq!(field(text).kind, FieldKind::Text, "{text}");
    }
    assert_eq!(field("integer").kind, FieldKind::Number { integer: true });
    assert_eq!(field("number").kind, FieldKind::Number { integer: false });
    assert_eq!(
        field("email").help,
        texts(&[
            "Your email address (will be verified, and never shared with anyone else)",
            "Format: an email address"
        ])
    );
    assert_eq!(
        field("integer").help,
        texts(&[
            "Your favorite integer (do not give us your phone number, pin, or other sensitive info)",
            "At least 1",
            "At most 100"
        ])
    );
    assert_eq!(
        field("titledSingleSelectEnum").kind,
        FieldKind::Choice {
            options: options(&[
                ("hero-1", "Superman"),
                ("hero-2", "Green Lantern"),
                ("hero-3", "Wonder Woman")
            ]),
            multi: false
        }
    );
    assert_eq!(
        field("titledMultipleSelectEnum").kind,
        FieldKind::Choice {
            options: options(&[
                ("fish-1", "Tuna"),
                ("fish-2", "Salmon"),
                ("fish-3", "Trout")
            ]),
            multi: true
        }
    );
    let FieldKind::Choice {
        options: pets,
        multi: false,
    } = &field("legacyTitledEnum").kind
    else {
        panic!("legacy enum is a single choice");
    };
    assert_eq!(
        pets[4],
        ChoiceOption {
            value: "pet-5".into(),
            label: "Reptiles".into()
        }
    );
    let FieldKind::Choice {
        options: friends,
        multi: false,
    } = &field("untitledSingleSelectEnum").kind
    else {
        panic!("untitled enum is a single choice");
    };
    assert_eq!(friends.len(), 6);
    assert!(matches!(
        field("untitledMultipleSelectEnum").kind,
        FieldKind::Choice { multi: true, .. }
    ));
    assert_eq!(
        field("untitledMultipleSelectEnum").help,
        texts(&[
            "Choose your favorite instruments",
            "Choose at least 1",
            "Choose at most 3"
        ])
    );
    let defaults = form.default_answers();
    let expected: BTreeMap<String, Vec<String>> = [
        ("firstLine", vec!["It was a dark and stormy night."]),
        ("integer", vec!["42"]),
        ("number", vec!["3.14"]),
        ("untitledSingleSelectEnum", vec!["Monica"]),
        ("untitledMultipleSelectEnum", vec!["Guitar"]),
        ("titledSingleSelectEnum", vec!["hero-1"]),
        ("titledMultipleSelectEnum", vec!["fish-1"]),
        ("legacyTitledEnum", vec!["pet-1"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), texts(&v)))
    .collect();
    assert_eq!(defaults, expected);
}

#[allow(
    clippy::approx_constant,
    reason = "server-everything's literal default, not pi"
)]
#[test]
fn server_everything_answers_are_typed_to_the_schema() {
    let form = form_from_request(&server_everything_request()).expect("renderable");
    // Only the required name with the defaults declines nothing.
    let mut answers = form.default_answers();
    assert_eq!(
        result_for(&form, &FormAnswer::Submitted(answers.clone())),
        declined(),
        "name is required and has no default"
    );
    answers.insert("name".into(), texts(&["Ada Lovelace"]));
    answers.insert("check".into(), texts(&["Yes"]));
    answers.insert("birthdate".into(), texts(&["1815-12-10"]));
    answers.insert("integer".into(), texts(&["7"]));
    answers.insert(
        "titledMultipleSelectEnum".into(),
        texts(&["fish-3", "fish-1"]),
    );
    answers.insert("legacyTitledEnum".into(), texts(&["pet-2"]));
    let result = result_for(&form, &FormAnswer::Submitted(answers));
    assert_eq!(
        result,
        json!({
            "action": "accept",
            "content": {
                "name": "Ada Lovelace",
                "check": true,
                "firstLine": "It was a dark and stormy night.",
                "birthdate": "1815-12-10",
                "integer": 7,
                "number": 3.14,
                "untitledSingleSelectEnum": "Monica",
                "untitledMultipleSelectEnum": ["Guitar"],
                "titledSingleSelectEnum": "hero-1",
                "titledMultipleSelectEnum": ["fish-1", "fish-3"],
                "legacyTitledEnum": "pet-2"
            }
        })
    );
    assert!(result["content"]["integer"].is_i64());
    assert!(result["content"]["number"].is_f64());
}

/// The request of the conformance scenario
/// `elicitation-sep1034-client-defaults` (@modelcontextprotocol/conformance).
fn sep1034_request() -> Value {
    json!({
        "message": "Test client default value handling - please accept with defaults",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active"
                },
                "verified": { "type": "boolean", "description": "Verification status", "default": true }
            },
            "required": []
        }
    })
}

#[test]
fn sep1034_defaults_answered_as_prefilled_are_sent_typed() {
    let form = form_from_request(&sep1034_request()).expect("renderable");
    assert!(form.fields.iter().all(|f| !f.required));
    let answers = form.default_answers();
    assert_eq!(answers["verified"], texts(&["yes"]));
    assert_eq!(answers["score"], texts(&["95.5"]));
    let result = result_for(&form, &FormAnswer::Submitted(answers));
    assert_eq!(
        result,
        json!({
            "action": "accept",
            "content": {
                "name": "John Doe",
                "age": 30,
                "score": 95.5,
                "status": "active",
                "verified": true
            }
        })
    );
    let content = &result["content"];
    assert!(content["name"].is_string());
    assert!(content["age"].is_i64());
    assert!(content["score"].is_f64());
    assert!(content["status"].is_string());
    assert!(content["verified"].is_boolean());
}

#[test]
fn form_serializes_with_tagged_kinds() {
    let field = only_field(json!({ "type": "integer", "title": "Age" }));
    assert_eq!(
        serde_json::to_value(&field).expect("serializes"),
        json!({
            "name": "f", "title": "Age", "help": [], "required": false,
            "kind": { "kind": "number", "integer": true }, "default": null
        })
    );
}

proptest! {
    #[test]
    fn a_number_field_never_sends_anything_but_a_number(text in ".{0,12}|[-+0-9.eE ]{1,12}") {
        let result = answer_one(json!({ "type": "number" }), &[&text]);
        if result != declined() {
            let sent = &result["content"]["f"];
            prop_assert!(sent.is_number() || (text.trim().is_empty() && sent.is_null()), "{result}");
        }
    }

    #[test]
    fn an_integer_field_sends_only_integers(text in ".{0,12}|[-+0-9.eE ]{1,12}") {
        let result = answer_one(json!({ "type": "integer" }), &[&text]);
        if result != declined() {
            let sent = &result["content"]["f"];
            prop_assert!(sent.is_i64() || sent.is_u64() || (text.trim().is_empty() && sent.is_null()), "{result}");
        }
    }

    #[test]
    fn integers_round_trip_through_their_text(i in any::<i64>()) {
        let result = answer_one(json!({ "type": "integer" }), &[&i.to_string()]);
        prop_assert_eq!(&result["content"]["f"], &json!(i));
    }

    #[test]
    fn finite_numbers_round_trip_through_their_text(f in any::<f64>().prop_filter("finite", |f| f.is_finite())) {
        let result = answer_one(json!({ "type": "number" }), &[&f.to_string()]);
        let sent = result["content"]["f"].as_f64();
        prop_assert_eq!(sent, Some(f));
    }
}
