//! A requested schema read into a [`Form`]'s fields: which kinds render,
//! their options, defaults and help lines, and why a schema cannot be
//! shown (a [`Decline`]).

use super::*;

pub(super) fn unrenderable(why: impl Into<String>) -> Decline {
    Decline::Unrenderable(why.into())
}

/// The names in the schema's `required` array, each of which must be a
/// property: a required question that cannot be asked could never be
/// answered.
pub(super) fn required_names<'a>(
    required: Option<&'a Value>,
    properties: &Map<String, Value>,
) -> Result<BTreeSet<&'a str>, Decline> {
    let Some(required) = required else {
        return Ok(BTreeSet::new());
    };
    let list = required
        .as_array()
        .ok_or_else(|| unrenderable("the requested schema's required is not a list"))?;
    let mut names = BTreeSet::new();
    for name in list {
        let name = name
            .as_str()
            .ok_or_else(|| unrenderable(format!("the requested schema's required lists {name}")))?;
        if !properties.contains_key(name) {
            return Err(unrenderable(format!(
                "required field `{name}` is not among the properties"
            )));
        }
        names.insert(name);
    }
    Ok(names)
}

pub(super) fn field(name: &str, property: &Value, required: bool) -> Result<Field, Decline> {
    let schema = property
        .as_object()
        .ok_or_else(|| unrenderable(format!("property `{name}` is not a schema object")))?;
    let kind = match schema.get("type") {
        Some(Value::String(t)) => match t.as_str() {
            "string" => string_kind(name, schema)?,
            "number" => FieldKind::Number { integer: false },
            "integer" => FieldKind::Number { integer: true },
            "boolean" => FieldKind::Confirm,
            "array" => multi_select_kind(name, schema)?,
            other => {
                return Err(unrenderable(format!(
                    "property `{name}` has type \"{other}\", which a form cannot ask for"
                )));
            }
        },
        Some(other) => {
            return Err(unrenderable(format!(
                "property `{name}` has type {other}, which a form cannot ask for"
            )));
        }
        None => return Err(unrenderable(format!("property `{name}` has no type"))),
    };
    let default = schema.get("default").and_then(|d| default_texts(&kind, d));
    Ok(Field {
        name: name.to_owned(),
        title: schema
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned),
        help: help_lines(schema),
        required,
        kind,
        default,
    })
}

/// A `type: "string"` property: a single-select enum (untitled `enum`,
/// legacy `enum` + `enumNames`, titled `oneOf`) or free text.
pub(super) fn string_kind(name: &str, schema: &Map<String, Value>) -> Result<FieldKind, Decline> {
    let options = match (schema.get("enum"), schema.get("oneOf")) {
        (None, None) => return Ok(FieldKind::Text),
        (Some(_), Some(_)) => {
            return Err(unrenderable(format!(
                "property `{name}` has both enum and oneOf"
            )));
        }
        (Some(values), None) => {
            let options = untitled_options(name, values)?;
            match schema.get("enumNames") {
                None => options,
                Some(names) => legacy_titles(name, options, names)?,
            }
        }
        (None, Some(one_of)) => titled_options(name, "oneOf", one_of)?,
    };
    Ok(FieldKind::Choice {
        options,
        multi: false,
    })
}

/// A `type: "array"` property, which must be a multi-select enum: `items`
/// with `enum` (untitled) or `anyOf` of `{const, title}` (titled).
pub(super) fn multi_select_kind(
    name: &str,
    schema: &Map<String, Value>,
) -> Result<FieldKind, Decline> {
    let not_a_choice = || {
        unrenderable(format!(
            "property `{name}` is an array that is not a multi-select enum"
        ))
    };
    let items = schema
        .get("items")
        .and_then(Value::as_object)
        .ok_or_else(not_a_choice)?;
    let options = match (items.get("enum"), items.get("anyOf")) {
        (None, None) => return Err(not_a_choice()),
        (Some(_), Some(_)) => {
            return Err(unrenderable(format!(
                "property `{name}` has items with both enum and anyOf"
            )));
        }
        (Some(values), None) => {
            match items.get("type") {
                None => {}
                Some(Value::String(t)) if t == "string" => {}
                Some(_) => return Err(not_a_choice()),
            }
            untitled_options(name, values)?
        }
        (None, Some(any_of)) => titled_options(name, "anyOf", any_of)?,
    };
    Ok(FieldKind::Choice {
        options,
        multi: true,
    })
}

/// Options from a plain `enum` list: each value is its own label.
pub(super) fn untitled_options(name: &str, values: &Value) -> Result<Vec<ChoiceOption>, Decline> {
    let values = values
        .as_array()
        .ok_or_else(|| unrenderable(format!("property `{name}` has an enum that is not a list")))?;
    let options = values
        .iter()
        .map(|v| {
            let value = v.as_str().ok_or_else(|| {
                unrenderable(format!("property `{name}` has a non-string enum value {v}"))
            })?;
            Ok(ChoiceOption {
                value: value.to_owned(),
                label: value.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, Decline>>()?;
    checked_options(name, options)
}

/// Labels from the legacy `enumNames`, one string per `enum` value.
pub(super) fn legacy_titles(
    name: &str,
    options: Vec<ChoiceOption>,
    names: &Value,
) -> Result<Vec<ChoiceOption>, Decline> {
    let mismatch = || {
        unrenderable(format!(
            "property `{name}` has enumNames that do not name each enum value"
        ))
    };
    let names = names.as_array().ok_or_else(mismatch)?;
    if names.len() != options.len() {
        return Err(mismatch());
    }
    options
        .into_iter()
        .zip(names)
        .map(|(option, label)| {
            Ok(ChoiceOption {
                label: label.as_str().ok_or_else(mismatch)?.to_owned(),
                value: option.value,
            })
        })
        .collect()
}

/// Options from a `oneOf`/`anyOf` list of `{const, title}`. A missing or
/// non-string title falls back to the value (titles are presentation); a
/// missing or non-string `const` declines.
pub(super) fn titled_options(
    name: &str,
    keyword: &str,
    list: &Value,
) -> Result<Vec<ChoiceOption>, Decline> {
    let list = list.as_array().ok_or_else(|| {
        unrenderable(format!(
            "property `{name}` has a {keyword} that is not a list"
        ))
    })?;
    let options = list
        .iter()
        .map(|entry| {
            let value = entry.get("const").and_then(Value::as_str).ok_or_else(|| {
                unrenderable(format!(
                    "property `{name}` has a {keyword} entry without a string const"
                ))
            })?;
            let label = entry.get("title").and_then(Value::as_str).unwrap_or(value);
            Ok(ChoiceOption {
                value: value.to_owned(),
                label: label.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, Decline>>()?;
    checked_options(name, options)
}

/// A choice needs at least one value, and each value once: a repeated value
/// would make two options indistinguishable in the answer.
pub(super) fn checked_options(
    name: &str,
    options: Vec<ChoiceOption>,
) -> Result<Vec<ChoiceOption>, Decline> {
    if options.is_empty() {
        return Err(unrenderable(format!(
            "property `{name}` is an enum with no values"
        )));
    }
    let mut seen = BTreeSet::new();
    for option in &options {
        if !seen.insert(option.value.as_str()) {
            return Err(unrenderable(format!(
                "property `{name}` repeats the choice value {:?}",
                option.value
            )));
        }
    }
    Ok(options)
}

/// The schema `default` as answer texts, or `None` when it is not a valid
/// answer for `kind` (then nothing is pre-filled).
pub(super) fn default_texts(kind: &FieldKind, default: &Value) -> Option<Vec<String>> {
    match kind {
        FieldKind::Text => Some(vec![default.as_str()?.to_owned()]),
        FieldKind::Confirm => Some(vec![yes_no(default.as_bool()?).to_owned()]),
        FieldKind::Number { integer } => match default {
            Value::Number(n) => Some(vec![number_text(n, *integer)?]),
            _ => None,
        },
        FieldKind::Choice {
            options,
            multi: false,
        } => {
            let value = default.as_str()?;
            options
                .iter()
                .any(|o| o.value == value)
                .then(|| vec![value.to_owned()])
        }
        FieldKind::Choice {
            options,
            multi: true,
        } => default
            .as_array()?
            .iter()
            .map(|v| {
                let value = v.as_str()?;
                options
                    .iter()
                    .any(|o| o.value == value)
                    .then(|| value.to_owned())
            })
            .collect(),
    }
}

pub(super) fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// A JSON number as the text a person would type for it; for an integer
/// field, only an integral number (`30.0` is `"30"`) that fits an `i64` or
/// `u64`.
pub(super) fn number_text(n: &Number, integer: bool) -> Option<String> {
    if n.is_i64() || n.is_u64() || !integer {
        return Some(n.to_string());
    }
    let f = n.as_f64()?;
    integral(f).map(|i| i.to_string())
}

/// `f` as an `i64`, when it is integral and in range.
pub(super) fn integral(f: f64) -> Option<i64> {
    // 2^63: the first f64 above i64::MAX; -2^63 is i64::MIN exactly.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (f.is_finite() && f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f)).then_some(f as i64)
}

/// The help lines: the description, then one line per constraint present.
pub(super) fn help_lines(schema: &Map<String, Value>) -> Vec<String> {
    let mut help = Vec::new();
    if let Some(description) = schema.get("description").and_then(Value::as_str)
        && !description.trim().is_empty()
    {
        help.push(description.to_owned());
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        help.push(format_help(format));
    }
    let number = |key: &str| match schema.get(key) {
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let characters = |n: &str| if n == "1" { "character" } else { "characters" };
    if let Some(n) = number("minLength") {
        help.push(format!("At least {n} {}", characters(&n)));
    }
    if let Some(n) = number("maxLength") {
        help.push(format!("At most {n} {}", characters(&n)));
    }
    if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
        help.push(format!("Must match the pattern {pattern}"));
    }
    if let Some(n) = number("minimum") {
        help.push(format!("At least {n}"));
    }
    if let Some(n) = number("exclusiveMinimum") {
        help.push(format!("More than {n}"));
    }
    if let Some(n) = number("maximum") {
        help.push(format!("At most {n}"));
    }
    if let Some(n) = number("exclusiveMaximum") {
        help.push(format!("Less than {n}"));
    }
    if let Some(n) = number("minItems") {
        help.push(format!("Choose at least {n}"));
    }
    if let Some(n) = number("maxItems") {
        help.push(format!("Choose at most {n}"));
    }
    help
}

pub(super) fn format_help(format: &str) -> String {
    match format {
        "email" => "Format: an email address".to_owned(),
        "uri" => "Format: a URI".to_owned(),
        "date" => "Format: a date (YYYY-MM-DD)".to_owned(),
        "date-time" => "Format: a date and time (such as 2025-11-25T14:30:00Z)".to_owned(),
        other => format!("Format: {other}"),
    }
}
