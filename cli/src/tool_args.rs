//! Tool arguments for `rho mcp call`: one JSON object (`'{"a": 1}'`), or
//! `key=value` words typed by the tool's input schema.
//!
//! A `key=value` word splits at its first `=`. The value's JSON type is the
//! one the schema gives the property (`type`, or the `type`s of its
//! `anyOf`/`oneOf` members, each read through a local `$ref` as
//! `rho_host::parameters` reads it for `show`): `integer` and `number` are parsed as numbers,
//! `boolean` takes `true` or `false`, `null` takes `null`, `object` and
//! `array` take JSON of that kind, and `string` is the value as typed. A
//! property that allows several types takes the first that reads the
//! value, in the order null, boolean, integer, number, object, array,
//! string. A property whose schema names no type takes the value as JSON
//! when it is JSON, else as a string. A key the schema does not list is
//! refused unless the schema allows additional properties (then the
//! `additionalProperties` schema types it). Every refusal is a usage error
//! naming the key and the type expected. What the schema requires is
//! checked whether the words are some or none; a JSON object is sent as
//! given.

use serde_json::{Map, Value};

/// How the arguments were given on the command line.
#[derive(Debug, PartialEq)]
pub(crate) enum Arguments {
    /// A JSON object, used as is.
    Json(Map<String, Value>),
    /// `key=value` words (maybe none), typed and checked once the tool's
    /// schema is known.
    Pairs(Vec<(String, String)>),
}

/// Reads the argument words of `rho mcp call`: one word starting with `{`
/// or `[` (JSON, which must be an object), or `key=value` words; none are
/// no pairs, so that a tool's required arguments are asked for by name
/// before anything is sent, as when some words are given.
pub(crate) fn parse_words(words: &[String]) -> Result<Arguments, String> {
    match words {
        [one] if one.trim_start().starts_with(['{', '[']) => {
            match serde_json::from_str::<Value>(one) {
                Ok(Value::Object(map)) => Ok(Arguments::Json(map)),
                Ok(_) => {
                    Err("tool arguments must be a JSON object, like '{\"message\":\"hi\"}'".into())
                }
                Err(e) => Err(format!("tool arguments are not valid JSON: {e}")),
            }
        }
        words => {
            let mut pairs: Vec<(String, String)> = Vec::with_capacity(words.len());
            for word in words {
                let Some((key, value)) = word.split_once('=') else {
                    return Err(format!(
                        "tool argument `{word}` is not `key=value` (or give one JSON object, like '{{\"message\":\"hi\"}}')"
                    ));
                };
                if key.is_empty() {
                    return Err(format!("tool argument `{word}` has no key before `=`"));
                }
                if pairs.iter().any(|(k, _)| k == key) {
                    return Err(format!("tool argument `{key}` is given twice"));
                }
                pairs.push((key.to_owned(), value.to_owned()));
            }
            Ok(Arguments::Pairs(pairs))
        }
    }
}

/// The JSON object to send: `arguments` as given, with `key=value` pairs
/// typed by `schema` (the tool's `inputSchema`); `tool` names the tool in
/// messages.
pub(crate) fn typed(
    arguments: Arguments,
    schema: &Value,
    tool: &str,
) -> Result<Map<String, Value>, String> {
    let pairs = match arguments {
        Arguments::Json(map) => return Ok(map),
        Arguments::Pairs(pairs) => pairs,
    };
    let properties = rho_host::parameters::properties(schema);
    let additional = rho_host::parameters::keyword(schema, schema, "additionalProperties");
    let mut out = Map::new();
    for (key, text) in pairs {
        let property = match properties.and_then(|p| p.get(&key)) {
            Some(property) => property,
            None => match additional {
                Some(extra @ Value::Object(_)) => extra,
                Some(Value::Bool(true)) => &Value::Null,
                _ => return Err(unknown_key(tool, &key, properties)),
            },
        };
        let value = typed_value(&text, &types_of(schema, property)).map_err(|expected| {
            format!("tool argument `{key}` must be {expected}: got `{text}`")
        })?;
        out.insert(key, value);
    }
    // What the schema requires is checked before anything is sent, as a
    // prompt's required arguments are.
    let mut missing = rho_host::parameters::required(schema);
    missing.retain(|name| !out.contains_key(*name));
    if !missing.is_empty() {
        return Err(format!(
            "tool `{tool}` needs argument{}: {}{}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            properties
                .filter(|p| !p.is_empty())
                .map(|p| format!(
                    " (its arguments: {})",
                    p.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
                .unwrap_or_default()
        ));
    }
    Ok(out)
}

fn unknown_key(tool: &str, key: &str, properties: Option<&Map<String, Value>>) -> String {
    match properties.filter(|p| !p.is_empty()) {
        Some(properties) => format!(
            "tool `{tool}` takes no argument `{key}` (its arguments: {})",
            properties.keys().cloned().collect::<Vec<_>>().join(", ")
        ),
        None => format!("tool `{tool}` takes no argument `{key}` (it takes none)"),
    }
}

/// The JSON types a property schema of the input schema `root` allows
/// (as the host library reads them for `/tools`), in the order tried.
fn types_of(root: &Value, property: &Value) -> Vec<&'static str> {
    const ORDER: [&str; 7] = [
        "null", "boolean", "integer", "number", "object", "array", "string",
    ];
    let named = rho_host::parameters::types(root, property);
    ORDER
        .into_iter()
        .filter(|t| named.iter().any(|n| n == t))
        .collect()
}

/// `text` as the first of `types` that reads it; with no type, JSON if it
/// is JSON, else a string. The error describes what was expected.
fn typed_value(text: &str, types: &[&str]) -> Result<Value, String> {
    if types.is_empty() {
        return Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())));
    }
    for kind in types {
        let value = match *kind {
            "null" => (text == "null").then_some(Value::Null),
            "boolean" => match text {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            "integer" => integer(text),
            "number" => number(text),
            "object" => serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_object),
            "array" => serde_json::from_str::<Value>(text)
                .ok()
                .filter(Value::is_array),
            _ => Some(Value::String(text.to_owned())),
        };
        if let Some(value) = value {
            return Ok(value);
        }
    }
    Err(types
        .iter()
        .map(|t| match *t {
            "null" => "null",
            "boolean" => "a boolean (true or false)",
            "integer" => "an integer",
            "number" => "a number",
            "object" => "a JSON object",
            "array" => "a JSON array",
            _ => "a string",
        })
        .collect::<Vec<_>>()
        .join(" or "))
}

fn integer(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<i64>() {
        return Some(Value::from(n));
    }
    if let Ok(n) = text.parse::<u64>() {
        return Some(Value::from(n));
    }
    // `3.0` and `1e3` are integers in JSON Schema's sense.
    let float = text.parse::<f64>().ok()?;
    (float.is_finite() && float.fract() == 0.0 && float.abs() < 9.0e15)
        .then(|| Value::from(float as i64))
}

fn number(text: &str) -> Option<Value> {
    if let Some(integer) = text.parse::<i64>().ok().map(Value::from) {
        return Some(integer);
    }
    let float = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    serde_json::Number::from_f64(float).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    fn typed_words(w: &[&str], schema: Value) -> Result<Value, String> {
        typed(parse_words(&words(w))?, &schema, "t").map(Value::Object)
    }

    /// A property of each JSON type (named by its initial), then one that
    /// allows two, one that allows any, and one whose members each allow
    /// one.
    fn schema() -> Value {
        let mut properties: Map<String, Value> = [
            ("n", "integer"),
            ("x", "number"),
            ("b", "boolean"),
            ("o", "object"),
            ("a", "array"),
            ("s", "string"),
        ]
        .into_iter()
        .map(|(name, kind)| (name.to_owned(), json!({ "type": kind })))
        .collect();
        properties.insert("maybe".into(), json!({"type": ["integer", "null"]}));
        properties.insert("any".into(), json!({}));
        properties.insert(
            "either".into(),
            json!({"anyOf": [{"type": "boolean"}, {"type": "string"}]}),
        );
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn values_take_the_type_the_schema_gives() {
        let got = typed_words(
            &[
                "n=42",
                "x=2.5",
                "b=true",
                "o={\"k\":1}",
                "a=[1,2]",
                "s=42",
                "maybe=null",
                "any=[true]",
                "either=yes",
            ],
            schema(),
        )
        .expect("typed");
        assert_eq!(
            got,
            json!({"n": 42, "x": 2.5, "b": true, "o": {"k": 1}, "a": [1, 2], "s": "42",
                   "maybe": null, "any": [true], "either": "yes"})
        );
        assert_eq!(
            typed_words(&["n=3.0", "x=7", "s=", "any=plain text"], schema()).expect("typed"),
            json!({"n": 3, "x": 7, "s": "", "any": "plain text"})
        );
        assert_eq!(
            typed_words(&["s=a=b"], schema()).expect("typed"),
            json!({"s": "a=b"}),
            "a value keeps every `=` after the first"
        );
    }

    #[test]
    fn a_value_that_cannot_take_its_type_names_the_key_and_the_type() {
        for (word, expected) in [
            ("n=4.5", "tool argument `n` must be an integer: got `4.5`"),
            ("n=many", "tool argument `n` must be an integer: got `many`"),
            ("x=NaN", "tool argument `x` must be a number: got `NaN`"),
            (
                "b=yes",
                "tool argument `b` must be a boolean (true or false): got `yes`",
            ),
            (
                "o=[1]",
                "tool argument `o` must be a JSON object: got `[1]`",
            ),
            ("a={", "tool argument `a` must be a JSON array: got `{`"),
            (
                "maybe=x",
                "tool argument `maybe` must be null or an integer: got `x`",
            ),
        ] {
            assert_eq!(typed_words(&[word], schema()), Err(expected.to_owned()));
        }
    }

    #[test]
    fn key_value_words_missing_a_required_argument_are_refused_before_sending() {
        let schema = json!({
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "c": {}},
            "required": ["a", "b"]
        });
        assert_eq!(
            typed_words(&["a=2"], schema.clone()),
            Err("tool `t` needs argument: b (its arguments: a, b, c)".to_owned())
        );
        assert_eq!(
            typed_words(&["c=1"], schema.clone()),
            Err("tool `t` needs arguments: a, b (its arguments: a, b, c)".to_owned())
        );
        assert_eq!(
            typed_words(&["a=2", "b=3"], schema.clone()),
            Ok(json!({"a": 2, "b": 3}))
        );
        assert_eq!(
            typed_words(&["{\"a\": 1}"], schema),
            Ok(json!({"a": 1})),
            "a JSON object is sent as given"
        );
    }

    #[test]
    fn no_words_are_refused_naming_the_required_arguments_before_sending() {
        let schema = json!({
            "properties": {"a": {"type": "number"}, "c": {}},
            "required": ["a"]
        });
        assert_eq!(
            typed_words(&[], schema.clone()),
            Err("tool `t` needs argument: a (its arguments: a, c)".to_owned())
        );
        assert_eq!(
            typed_words(&["{}"], schema),
            Ok(json!({})),
            "an empty JSON object is sent as given, as any JSON object is"
        );
        assert_eq!(
            typed_words(&[], json!({"properties": {"c": {}}})),
            Ok(json!({})),
            "a tool that requires nothing is called with an empty object"
        );
    }

    #[test]
    fn values_behind_a_ref_take_the_type_of_its_target() {
        // As the TypeScript SDK (zod `.meta({id})`) and Pydantic write them.
        let schema = json!({
            "type": "object",
            "properties": {
                "parent": {"anyOf": [{"$ref": "#/$defs/PageParent"}, {"type": "string"}]},
                "title": {"$ref": "#/$defs/Title"},
                "options": {"anyOf": [{"$ref": "#/$defs/Options"}, {"type": "null"}]},
                "count": {"$ref": "#/definitions/Count"},
                "flag": {"$ref": "#/$defs/Flag"},
                "rows": {"$ref": "#/$defs/Rows"},
                "elsewhere": {"$ref": "https://example.com/s.json#/$defs/x"}
            },
            "required": ["title"],
            "additionalProperties": {"$ref": "#/$defs/Title"},
            "$defs": {
                "PageParent": {"type": "object", "properties": {"page_id": {"type": "string"}}},
                "Title": {"type": "string"},
                "Options": {"type": "object"},
                "Flag": {"type": "boolean"},
                "Rows": {"type": "array"}
            },
            "definitions": {"Count": {"type": "integer"}}
        });
        assert_eq!(
            typed_words(
                &[
                    r#"parent={"page_id":"abc"}"#,
                    "title=42",
                    r#"options={"bold":true}"#,
                    "count=3",
                    "flag=false",
                    "rows=[[1]]",
                    "elsewhere=[1]",
                    "extra=7",
                ],
                schema.clone()
            ),
            Ok(
                json!({"parent": {"page_id": "abc"}, "title": "42", "options": {"bold": true},
                      "count": 3, "flag": false, "rows": [[1]], "elsewhere": [1], "extra": "7"})
            )
        );
        assert_eq!(
            typed_words(
                &["title=t", "parent=https://x", "options=null"],
                schema.clone()
            ),
            Ok(json!({"title": "t", "parent": "https://x", "options": null}))
        );
        assert_eq!(
            typed_words(&["title=t", "count=many"], schema),
            Err("tool argument `count` must be an integer: got `many`".to_owned())
        );
    }

    #[test]
    fn unknown_keys_are_refused_unless_the_schema_allows_more() {
        assert_eq!(
            typed_words(&["nope=1"], json!({"properties": {"a": {}, "b": {}}})),
            Err("tool `t` takes no argument `nope` (its arguments: a, b)".to_owned())
        );
        assert_eq!(
            typed_words(&["nope=1"], json!({"type": "object"})),
            Err("tool `t` takes no argument `nope` (it takes none)".to_owned())
        );
        assert_eq!(
            typed_words(&["extra=1"], json!({"additionalProperties": true})),
            Ok(json!({"extra": 1}))
        );
        assert_eq!(
            typed_words(
                &["extra=1"],
                json!({"additionalProperties": {"type": "string"}})
            ),
            Ok(json!({"extra": "1"}))
        );
    }

    #[test]
    fn words_are_one_json_object_or_key_value_pairs() {
        assert_eq!(parse_words(&[]), Ok(Arguments::Pairs(Vec::new())));
        assert_eq!(
            parse_words(&words(&[r#"{"message": "hi"}"#])),
            Ok(Arguments::Json(
                json!({"message": "hi"})
                    .as_object()
                    .cloned()
                    .expect("object")
            ))
        );
        assert_eq!(
            parse_words(&words(&["[1]"])),
            Err("tool arguments must be a JSON object, like '{\"message\":\"hi\"}'".to_owned())
        );
        assert!(
            parse_words(&words(&["{1"]))
                .expect_err("bad JSON")
                .starts_with("tool arguments are not valid JSON")
        );
        assert_eq!(
            parse_words(&words(&["a=1", "b"])),
            Err("tool argument `b` is not `key=value` (or give one JSON object, like '{\"message\":\"hi\"}')".to_owned())
        );
        assert_eq!(
            parse_words(&words(&["=1"])),
            Err("tool argument `=1` has no key before `=`".to_owned())
        );
        assert_eq!(
            parse_words(&words(&["a=1", "a=2"])),
            Err("tool argument `a` is given twice".to_owned())
        );
    }
}
