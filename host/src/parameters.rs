//! A tool's parameters as a person reads them: from its `inputSchema`,
//! each top-level property's name, JSON type(s), whether it is required,
//! its description and its allowed values (`enum`, `const`, or the
//! `const`s and `enum`s of its `oneOf`/`anyOf` members). `show --connect`,
//! the shell's `/tools` and its `/call` completion all read them here,
//! and `rho mcp call` types its `key=value` words by [`types`], so what a
//! person sees, what completes and how a word is typed agree.
//!
//! Every read goes through [`resolve`]: a property (or an `anyOf`/`oneOf`
//! member, `items`, `additionalProperties`, the schema itself) given as a
//! local `$ref` (`#/$defs/x`, `#/definitions/x`) is read as the schema it
//! points at, with the keywords written beside the `$ref` taking
//! precedence ([`keyword`]). This is for reading only: the schema a
//! model is given is the server's, forwarded as sent.
//!
//! The strings are the server's: a caller that prints them sanitizes them
//! first (they are returned raw, as the schema holds them).

use serde_json::{Map, Value};

/// How many `$ref`s in a row [`resolve`] follows before it gives up: a
/// chain longer than this (a cycle, or a hostile schema) reads as "any".
pub const MAX_REF_HOPS: usize = 32;

/// The schema that allows anything: what a `$ref` that cannot be followed
/// reads as.
static ANY: Value = Value::Bool(true);

/// The schema `schema` stands for inside `root` (the document its `$ref`s
/// point into: a tool's `inputSchema`). A schema without a `$ref` is
/// itself. A local `$ref` (`#`, or `#/` and a JSON pointer such as
/// `#/$defs/x` or `#/definitions/x`: percent-decoded, then `~1` for `/`
/// and `~0` for `~`) is followed to its target, and again while the
/// target is a `$ref`, at most [`MAX_REF_HOPS`] times. What cannot be
/// followed reads as the schema `true` ("any"): a `$ref` to another
/// document or to an anchor (`#name`), one that points at nothing, one
/// that is not a string, and a chain that loops or runs too long. Never
/// panics; the work is bounded by the hops and the pointer's length.
pub fn resolve<'s>(root: &'s Value, schema: &'s Value) -> &'s Value {
    let mut current = schema;
    for _ in 0..=MAX_REF_HOPS {
        let Some(reference) = current.get("$ref") else {
            return current;
        };
        match reference.as_str().and_then(|r| local_target(root, r)) {
            Some(target) => current = target,
            None => return &ANY,
        }
    }
    &ANY
}

/// Keyword `key` of `schema` read through its `$ref` ([`resolve`]): the
/// schema's own when it has one (in JSON Schema 2019-09 and later a
/// keyword beside a `$ref` applies too, and it is the more specific),
/// else its target's.
pub fn keyword<'s>(root: &'s Value, schema: &'s Value, key: &str) -> Option<&'s Value> {
    schema.get(key).or_else(|| resolve(root, schema).get(key))
}

/// The value a local `$ref` names in `root`, if any.
fn local_target<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let fragment = reference.strip_prefix('#')?;
    let pointer = percent_decoded(fragment)?;
    if pointer.is_empty() {
        return Some(root);
    }
    // `#name` is an anchor (`$anchor`), not a pointer: not followed.
    if !pointer.starts_with('/') {
        return None;
    }
    let mut target = root;
    for token in pointer[1..].split('/') {
        let token = unescaped(token)?;
        target = match target {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(array_index(&token)?)?,
            _ => return None,
        };
    }
    Some(target)
}

/// A JSON pointer token with `~1` read as `/` and `~0` as `~` (RFC 6901);
/// `None` for a `~` followed by anything else.
fn unescaped(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => return None,
        }
    }
    Some(out)
}

/// An array index token: digits without a leading zero (RFC 6901).
fn array_index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && !token.is_empty());
    if !canonical || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

/// A URI fragment with its `%XX` escapes decoded; `None` when that is not
/// UTF-8. A `%` not followed by two hex digits stays as it is.
fn percent_decoded(fragment: &str) -> Option<String> {
    if !fragment.contains('%') {
        return Some(fragment.to_owned());
    }
    let hex = |b: Option<&u8>| b.and_then(|b| (*b as char).to_digit(16));
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(high), Some(low)) = (hex(bytes.get(i + 1)), hex(bytes.get(i + 2)))
        {
            // Two hex digits: at most 0xff.
            out.push((high * 16 + low) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// One top-level property of a tool's input schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// The property's name (the key a call's arguments use).
    pub name: String,
    /// Its JSON types as the schema names them (`type`, or those of its
    /// `anyOf`/`oneOf` members), in order; empty when it names none.
    pub types: Vec<String>,
    /// Listed in the schema's `required`.
    pub required: bool,
    /// Its `description`, else its `title`, when either is given.
    pub description: Option<String>,
    /// The values it allows, when the schema lists them: strings as they
    /// are, other values as JSON text.
    pub values: Vec<String>,
}

impl Parameter {
    /// One line for a person: `name (type, required): description; one
    /// of: a, b`. Raw (sanitize before a terminal).
    pub fn line(&self) -> String {
        let mut kind = if self.types.is_empty() {
            "any".to_owned()
        } else {
            self.types.join(" | ")
        };
        if self.required {
            kind.push_str(", required");
        }
        let mut out = format!("{} ({kind})", self.name);
        if let Some(description) = &self.description {
            out.push_str(": ");
            out.push_str(description.lines().next().unwrap_or_default().trim());
        }
        if !self.values.is_empty() {
            out.push_str(if self.description.is_some() {
                "; "
            } else {
                ": "
            });
            out.push_str("one of ");
            out.push_str(&self.values.join(", "));
        }
        out
    }
}

/// The parameters of `schema` (a tool's `inputSchema`), required ones
/// first, each group in the schema's order.
pub fn parameters(schema: &Value) -> Vec<Parameter> {
    let Some(properties) = properties(schema) else {
        return Vec::new();
    };
    let required = required(schema);
    let mut out: Vec<Parameter> = properties
        .iter()
        .map(|(name, property)| Parameter {
            name: name.clone(),
            types: types(schema, property),
            required: required.contains(&name.as_str()),
            description: ["description", "title"]
                .iter()
                .find_map(|key| keyword(schema, property, key).and_then(Value::as_str))
                .filter(|d| !d.trim().is_empty())
                .map(str::to_owned),
            values: values(schema, property),
        })
        .collect();
    out.sort_by_key(|p| !p.required);
    out
}

/// The `properties` of `schema` (a tool's `inputSchema`), read through a
/// `$ref` ([`keyword`]); `None` when it lists none.
pub fn properties(schema: &Value) -> Option<&Map<String, Value>> {
    keyword(schema, schema, "properties").and_then(Value::as_object)
}

/// The names `schema` (a tool's `inputSchema`) lists as `required`, read
/// through a `$ref` ([`keyword`]), in its order.
pub fn required(schema: &Value) -> Vec<&str> {
    keyword(schema, schema, "required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// The JSON types `property` names (`type`, or those of its
/// `anyOf`/`oneOf` members; failing both, `array of` its `items`' type),
/// each read through its `$ref`s inside `root` (the `inputSchema` the
/// property belongs to; see [`resolve`]), in order, each once; empty when
/// it names none (as for a `$ref` that cannot be followed).
pub fn types(root: &Value, property: &Value) -> Vec<String> {
    let named = |schema: &Value| -> Vec<String> {
        match keyword(root, schema, "type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut out = named(property);
    for member in members(root, property) {
        for t in named(member) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    if out.is_empty()
        && let Some(items) = keyword(root, property, "items")
    {
        let inner = named(items);
        if !inner.is_empty() {
            out.push(format!("array of {}", inner.join(" | ")));
        }
    }
    out
}

/// The members of `property`'s `anyOf` and `oneOf`, read through its
/// `$ref` (each member is read through its own by the caller).
fn members<'s>(root: &'s Value, property: &'s Value) -> impl Iterator<Item = &'s Value> {
    ["anyOf", "oneOf"].into_iter().flat_map(move |key| {
        keyword(root, property, key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    })
}

/// The values `property` allows when it lists them: its `enum` or
/// `const`, else the `enum`s and `const`s of its `anyOf`/`oneOf` members,
/// each read through its `$ref`s.
fn values(root: &Value, property: &Value) -> Vec<String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let listed = |schema: &Value| -> Option<Vec<String>> {
        if let Some(listed) = keyword(root, schema, "enum").and_then(Value::as_array) {
            return Some(listed.iter().map(text).collect());
        }
        keyword(root, schema, "const").map(|one| vec![text(one)])
    };
    if let Some(own) = listed(property) {
        return own;
    }
    let mut out: Vec<String> = Vec::new();
    for value in members(root, property).filter_map(listed).flatten() {
        if !out.contains(&value) {
            out.push(value);
        }
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_read_name_type_required_description_and_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"], "description": "How hard"},
                "a": {"type": "number", "description": "First number\nmore"},
                "b": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "level": {"oneOf": [{"const": 1, "type": "integer"}, {"const": 2}]},
                "any": {}
            },
            "required": ["a", "b"]
        });
        let lines: Vec<String> = parameters(&schema).iter().map(Parameter::line).collect();
        assert_eq!(
            lines,
            [
                "a (number, required): First number",
                "b (number, required)",
                "mode (string): How hard; one of fast, slow",
                "tags (array)",
                "level (integer): one of 1, 2",
                "any (any)",
            ]
        );
        assert!(parameters(&json!({"type": "object"})).is_empty());
    }

    #[test]
    fn refs_into_defs_and_definitions_read_as_their_targets() {
        let schema = json!({
            "type": "object",
            "properties": {
                "parent": {"$ref": "#/$defs/PageParent"},
                "count": {"$ref": "#/definitions/Count", "description": "How many (own)"},
                "mode": {"$ref": "#/$defs/Mode"},
                "tags": {"items": {"$ref": "#/$defs/Tag"}}
            },
            "required": ["parent"],
            "$defs": {
                "PageParent": {"type": "object", "description": "Where the page goes",
                               "properties": {"page_id": {"type": "string"}}},
                "Mode": {"type": "string", "enum": ["draft", "published"]},
                "Tag": {"type": "string"}
            },
            "definitions": {"Count": {"type": "integer", "description": "How many"}}
        });
        let lines: Vec<String> = parameters(&schema).iter().map(Parameter::line).collect();
        assert_eq!(
            lines,
            [
                "parent (object, required): Where the page goes",
                "count (integer): How many (own)",
                "mode (string): one of draft, published",
                "tags (array of string)",
            ]
        );
    }

    #[test]
    fn any_of_and_one_of_members_given_by_ref_name_their_types_and_values() {
        // What Pydantic writes for `Optional[Mode]` and `Union[A, str]`,
        // and Notion's `parent`: members that are only a `$ref`.
        let schema = json!({
            "properties": {
                "mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]},
                "parent": {"oneOf": [{"$ref": "#/$defs/Page"}, {"type": "string"}]},
                "either": {"$ref": "#/$defs/Either"},
                "level": {"anyOf": [{"$ref": "#/$defs/One"}, {"const": 2}, {"$ref": "#/$defs/One"}]}
            },
            "$defs": {
                "Mode": {"type": "string", "enum": ["fast", "slow"]},
                "Page": {"type": "object"},
                "Either": {"anyOf": [{"$ref": "#/$defs/Page"}, {"type": "array"}]},
                "One": {"const": 1, "type": "integer"}
            }
        });
        let by_name = |name: &str| {
            parameters(&schema)
                .into_iter()
                .find(|p| p.name == name)
                .expect("listed")
        };
        assert_eq!(by_name("mode").types, ["string", "null"]);
        assert_eq!(by_name("mode").values, ["fast", "slow"]);
        assert_eq!(by_name("parent").types, ["object", "string"]);
        assert_eq!(by_name("either").types, ["object", "array"]);
        assert_eq!(by_name("level").types, ["integer"]);
        assert_eq!(by_name("level").values, ["1", "2"]);
    }

    #[test]
    fn refs_follow_chains_nested_paths_and_pointer_escapes() {
        let root = json!({
            "$defs": {
                "a": {"$ref": "#/$defs/b"},
                "b": {"$ref": "#/$defs/outer/properties/inner"},
                "outer": {"properties": {"inner": {"type": "boolean"}}},
                "x/y": {"type": "integer"},
                "t~n": {"type": "number"},
                "with space": {"type": "null"},
                "list": [{"type": "string"}, {"type": "object"}]
            },
            "properties": {"p": {"type": "array"}}
        });
        let resolved = |reference: &str| resolve(&root, &json!({"$ref": reference})).clone();
        assert_eq!(resolved("#/$defs/a"), json!({"type": "boolean"}));
        assert_eq!(resolved("#/$defs/x~1y"), json!({"type": "integer"}));
        assert_eq!(resolved("#/$defs/t~0n"), json!({"type": "number"}));
        assert_eq!(resolved("#/$defs/with%20space"), json!({"type": "null"}));
        assert_eq!(resolved("#/$defs/list/1"), json!({"type": "object"}));
        assert_eq!(resolved("#/properties/p"), json!({"type": "array"}));
        assert_eq!(resolved("#"), root, "`#` is the whole document");
        let plain = json!({"type": "string"});
        assert!(
            std::ptr::eq(resolve(&root, &plain), &plain),
            "a schema without a $ref is itself"
        );
    }

    #[test]
    fn refs_that_cannot_be_followed_read_as_any() {
        let root = json!({
            "$defs": {"x": {"type": "string"}, "list": [{"type": "string"}]},
            "properties": {
                "elsewhere": {"$ref": "https://example.com/schema.json#/$defs/x"},
                "other_file": {"$ref": "other.json#/$defs/x"},
                "anchor": {"$ref": "#x"},
                "missing": {"$ref": "#/$defs/nope"},
                "through_a_string": {"$ref": "#/$defs/x/type/0"},
                "bad_escape": {"$ref": "#/$defs/~2"},
                "bad_index": {"$ref": "#/$defs/list/01"},
                "bad_percent": {"$ref": "#/$defs/%FF"},
                "not_a_string": {"$ref": 7}
            }
        });
        for parameter in parameters(&root) {
            let property = &root["properties"][&parameter.name];
            assert_eq!(resolve(&root, property), &json!(true), "{}", parameter.name);
            assert!(parameter.types.is_empty(), "{}", parameter.name);
            assert_eq!(parameter.line(), format!("{} (any)", parameter.name));
        }
    }

    #[test]
    fn ref_cycles_and_over_long_chains_read_as_any() {
        let root = json!({
            "$ref": "#",
            "$defs": {
                "self": {"$ref": "#/$defs/self"},
                "a": {"$ref": "#/$defs/b"},
                "b": {"$ref": "#/$defs/a"},
                "loop": {"anyOf": [{"$ref": "#/$defs/loop"}, {"$ref": "#/$defs/a"}]}
            }
        });
        for reference in ["#/$defs/self", "#/$defs/a", "#"] {
            assert_eq!(resolve(&root, &json!({"$ref": reference})), &json!(true));
        }
        assert!(types(&root, &json!({"$ref": "#/$defs/loop"})).is_empty());
        assert!(parameters(&root).is_empty());
        // A chain of exactly MAX_REF_HOPS is followed; one more is not.
        let chain = |hops: usize| {
            let mut defs = serde_json::Map::new();
            for i in 0..hops {
                defs.insert(
                    format!("d{i}"),
                    json!({"$ref": format!("#/$defs/d{}", i + 1)}),
                );
            }
            defs.insert(format!("d{hops}"), json!({"type": "integer"}));
            json!({"$defs": defs, "properties": {"n": {"$ref": "#/$defs/d1"}}})
        };
        let longest = chain(MAX_REF_HOPS);
        assert_eq!(types(&longest, &longest["properties"]["n"]), ["integer"]);
        let too_long = chain(MAX_REF_HOPS + 1);
        assert!(types(&too_long, &too_long["properties"]["n"]).is_empty());
    }

    #[test]
    fn an_input_schema_given_by_ref_lists_the_targets_parameters() {
        let schema = json!({
            "type": "object",
            "$ref": "#/definitions/Args",
            "definitions": {"Args": {
                "properties": {"q": {"type": "string"}},
                "required": ["q"]
            }}
        });
        assert_eq!(required(&schema), ["q"]);
        let lines: Vec<String> = parameters(&schema).iter().map(Parameter::line).collect();
        assert_eq!(lines, ["q (string, required)"]);
    }
}
