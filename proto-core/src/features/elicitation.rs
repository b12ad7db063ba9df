//! Questions from a server: what an `elicitation/create` request asks a
//! person, and the `ElicitResult` that carries the answer back.
//!
//! A server may interrupt a tool call to ask the user something (MCP
//! 2025-11-25, `client/elicitation`). Rho's questionnaire is choice-only:
//! every question is a list of values, optionally with free text, and every
//! answer arrives as text. An elicitation schema is richer than that, so
//! [`form_from_request`] maps it onto a [`Form`] lossily, and [`result_for`]
//! types the textual answers back to the schema.
//!
//! # The mapping
//!
//! | schema property | [`FieldKind`] | what the person sees |
//! |---|---|---|
//! | `string` with `enum` (untitled; legacy `enumNames` as labels) | `Choice { multi: false }` | the values |
//! | `string` with `oneOf: [{const, title}]` (titled) | `Choice { multi: false }` | the titles |
//! | `array` with `items.enum` (untitled multi-select) | `Choice { multi: true }` | the values |
//! | `array` with `items.anyOf: [{const, title}]` (titled multi-select) | `Choice { multi: true }` | the titles |
//! | `boolean` | `Confirm` | a yes/no confirm |
//! | `string` | `Text` | free text |
//! | `number`, `integer` | `Number` | free text, parsed back to a number |
//!
//! A property's `title` becomes [`Field::title`]. Its `description` is the
//! first line of [`Field::help`]; the constraints (`format`, `minLength`,
//! `maxLength`, `pattern`, `minimum`, `exclusiveMinimum`, `maximum`,
//! `exclusiveMaximum`, `minItems`, `maxItems`) follow, one line each, in that
//! order. Constraints are shown, never enforced: that is the fidelity limit
//! rho documents, and why its capability promises no schema validation (see
//! [`capability`]). A schema `default` (SEP-1034) pre-fills
//! [`Field::default`] as the texts an answer would carry, so a person who
//! accepts the pre-filled form sends the defaults typed to the schema.
//!
//! # What is declined, and when
//!
//! Rho never shows a partial form. [`form_from_request`] returns
//! [`Decline`] for URL mode (rho opens no browser, and accepting without
//! opening one would tell the server the user had answered) and for a
//! schema it cannot render whole: no properties, an enum with no values, a
//! property of a type a form cannot ask for (an object, an array that is
//! not a multi-select enum, a missing type), or anything else structurally
//! malformed (`required` naming a property that does not exist, `enumNames`
//! not matching `enum`, a repeated choice value). The caller answers every
//! [`Decline`] with [`declined`].
//!
//! The line between "malformed" and "tolerated" is drawn by what the person
//! and the server depend on. Structure (`properties`, `type`, `enum`,
//! `oneOf`, `items`, `required`) decides what can be asked and what can be
//! sent, so a fault there declines. Presentation (`title`, `description`,
//! constraint values, `default`) only helps the person, so a value of the
//! wrong JSON type there is ignored, and a `default` that is not a valid
//! answer for its field (an unknown choice, `3.5` for an integer) is not
//! pre-filled. A missing top-level `"type": "object"` is tolerated for the
//! same reason; any other top-level `type` declines. A `task` parameter is
//! ignored: rho declares no task support for elicitation, so a conforming
//! server never sends one.
//!
//! [`result_for`] declines too, whenever an answer cannot carry its declared
//! type: rho guarantees the JSON type of every field it sends, and would
//! rather let the server carry on without the information than send
//! something it did not ask for.
//!
//! # Field order
//!
//! [`Form::fields`] follows the iteration order of the `properties` object
//! as parsed into a [`serde_json::Map`]. This workspace builds `serde_json`
//! without the `preserve_order` feature (only `float_roundtrip`), so that
//! map is a `BTreeMap` and the fields come out sorted by property name
//! (byte order), not in the order the server wrote them: that order is gone
//! by the time the request is a [`Value`]. Either way the order is
//! deterministic; enabling `preserve_order` would make it the server's
//! order with no change here. The `content` of an `ElicitResult` is a JSON
//! object, whose order means nothing to the server.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Number, Value, json};

/// The `elicitation` client capability rho declares in a run that can put a
/// question in front of a person: `{"form": {}}`.
///
/// Form mode only. `url` is absent, so a conforming server never sends
/// URL-mode elicitation (servers MUST NOT use a mode the client did not
/// declare); one that does anyway is declined ([`Decline::UrlMode`]). The
/// explicit `form` member is used rather than the bare `{}` that the spec
/// keeps only as a backwards-compatible spelling of the same thing.
///
/// rho's documentation says rho declares "form mode with
/// `schemaValidation: false`". The 2025-11-25 schema has no such field:
/// `ClientCapabilities.elicitation` is `{ form?: object; url?: object }`,
/// and the spec leaves validating answers against the schema to the
/// client's discretion ("with optional schema validation"). So the wire
/// follows the schema, and "no schema validation" is a promise kept by
/// behaviour, not a flag: constraints are shown as help text and not
/// enforced. Nor does rho send the TypeScript SDK's `form.applyDefaults`
/// extension (that SDK's client then fills omitted fields with their
/// defaults): rho pre-fills defaults into the form instead, so the person
/// sees, and can change, every value before it is sent.
pub fn capability() -> Value {
    json!({ "form": {} })
}

/// A server's question, ready to show: the server's explanation and one
/// field per schema property.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Form {
    /// The server's `message`: why it is asking. Shown as sent; the caller
    /// adds the asking server's identity so the form is never mistaken for
    /// one of rho's own questions.
    pub message: String,
    /// The questions, in the order described in the module docs (sorted by
    /// property name with this workspace's `serde_json` features).
    pub fields: Vec<Field>,
}

impl Form {
    /// The answers a person gives by accepting the form as pre-filled: every
    /// field that has a [`Field::default`], keyed by name.
    ///
    /// A host that answers without a person (a headless responder) can
    /// submit exactly this; [`result_for`] then sends the schema's defaults,
    /// typed, which is what SEP-1034 asks of a client that applies defaults.
    pub fn default_answers(&self) -> BTreeMap<String, Vec<String>> {
        self.fields
            .iter()
            .filter_map(|f| Some((f.name.clone(), f.default.clone()?)))
            .collect()
    }
}

/// One question of a [`Form`], from one schema property.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Field {
    /// The property name: the key its answer is sent under, and the key
    /// [`FormAnswer::Submitted`] is expected to use.
    pub name: String,
    /// The schema's `title`, when it supplies one (show `name` otherwise).
    pub title: Option<String>,
    /// Lines to show under the question: the `description` first, then one
    /// line per constraint. Advisory only: nothing here is enforced.
    pub help: Vec<String>,
    /// Named in the schema's `required` array: an answer without it is
    /// declined rather than sent.
    pub required: bool,
    /// What kind of answer the question takes.
    pub kind: FieldKind,
    /// The schema's `default` as the answer texts that would send it
    /// (`["yes"]`/`["no"]` for a boolean, the number's decimal text, the
    /// chosen values). `None` when there is no default or it is not a valid
    /// answer for this field.
    pub default: Option<Vec<String>>,
}

/// What kind of answer a [`Field`] takes. Every kind is answered with text.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FieldKind {
    /// Pick among `options`: one value, or any number of them when `multi`.
    /// The answer texts are option values, never labels.
    Choice {
        /// The choices, in schema order.
        options: Vec<ChoiceOption>,
        /// A multi-select (schema `type: "array"`): zero or more values, sent
        /// as an array of strings.
        multi: bool,
    },
    /// A yes/no confirm: answered `yes`, `no`, `true` or `false` (any case),
    /// sent as a JSON boolean.
    Confirm,
    /// Free text, sent as a string.
    Text,
    /// Free text parsed back to a JSON number.
    Number {
        /// The schema says `integer`: the text must be integral, and is sent
        /// as a JSON integer.
        integer: bool,
    },
}

/// One choice of a [`FieldKind::Choice`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChoiceOption {
    /// The value the server receives when this option is chosen.
    pub value: String,
    /// What the person sees: the schema's title for the value when it
    /// supplies one (`oneOf`/`anyOf` `title`, legacy `enumNames`), the value
    /// itself otherwise.
    pub label: String,
}

/// Why a request is declined without asking anyone. Either way the server is
/// answered with [`declined`]; the message is for logs and diagnostics.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Decline {
    /// URL-mode elicitation: always declined. rho opens no browser, and
    /// accepting without opening one would tell the server the user had
    /// answered.
    #[error("URL-mode elicitation is not supported: rho opens no browser")]
    UrlMode,
    /// A request or schema rho cannot render whole; says what is wrong. Rho
    /// never shows a partial form.
    #[error("the form cannot be shown: {0}")]
    Unrenderable(String),
}

/// Maps the `params` of an `elicitation/create` request onto a [`Form`], or
/// says why the request must be declined.
///
/// A missing `mode` means form mode, as the spec requires of clients;
/// `"url"` is [`Decline::UrlMode`] whatever else the request holds. See the
/// module docs for the mapping and for what counts as unrenderable.
pub fn form_from_request(params: &Value) -> Result<Form, Decline> {
    let params = params
        .as_object()
        .ok_or_else(|| unrenderable("the request parameters are not an object"))?;
    match params.get("mode") {
        None => {}
        Some(Value::String(mode)) if mode == "form" => {}
        Some(Value::String(mode)) if mode == "url" => return Err(Decline::UrlMode),
        Some(other) => return Err(unrenderable(format!("unknown elicitation mode {other}"))),
    }
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .ok_or_else(|| unrenderable("the request has no message"))?;
    let schema = params
        .get("requestedSchema")
        .and_then(Value::as_object)
        .ok_or_else(|| unrenderable("the request has no requestedSchema object"))?;
    match schema.get("type") {
        None => {}
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(unrenderable(format!(
                "the requested schema has type {other}, not \"object\""
            )));
        }
    }
    let properties = match schema.get("properties") {
        Some(Value::Object(p)) if !p.is_empty() => p,
        Some(Value::Object(_)) | None => {
            return Err(unrenderable("the requested schema has no properties"));
        }
        Some(_) => {
            return Err(unrenderable(
                "the requested schema's properties are not an object",
            ));
        }
    };
    let required = required_names(schema.get("required"), properties)?;
    let fields = properties
        .iter()
        .map(|(name, property)| field(name, property, required.contains(name.as_str())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Form {
        message: message.to_owned(),
        fields,
    })
}

/// What became of a [`Form`] once the host tried to ask it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FormAnswer {
    /// The person filled the form in. Keys are [`Field::name`]s; values are
    /// the answer texts: one string per selected value of a multi-select
    /// (an empty list is "none selected"), exactly one string for every
    /// other kind. A field with no entry, or (for a single-valued kind) an
    /// empty list or blank text, is unanswered.
    Submitted(BTreeMap<String, Vec<String>>),
    /// The person dismissed the form: the server is told `cancel`, which
    /// also ends the turn.
    Dismissed,
    /// Rho could not put the form in front of anyone: the server is told
    /// `decline`.
    CouldNotAsk,
}

/// The `ElicitResult` to send for `answer` to `form`.
///
/// - [`FormAnswer::Submitted`] sends `{"action":"accept","content":{...}}` with
///   every answered field typed to the schema: a number field's text becomes
///   a JSON number (an integer field's a JSON integer; `"3.0"` is `3`),
///   a confirm becomes a boolean, text a string, a choice its value, a
///   multi-select an array of values in option order without repeats.
///   Unanswered optional fields are omitted. If any answer cannot carry its
///   declared type (non-numeric or non-integral text, a yes/no that is
///   neither, an unknown choice, a missing required field, several values
///   for a single-valued kind, an answer for a field the form does not
///   have), the whole request is declined instead.
/// - [`FormAnswer::Dismissed`] sends `{"action":"cancel"}`.
/// - [`FormAnswer::CouldNotAsk`] sends [`declined`].
///
/// Defaults are not filled in here: a person who cleared a pre-filled field
/// meant to leave it unanswered.
pub fn result_for(form: &Form, answer: &FormAnswer) -> Value {
    match answer {
        FormAnswer::Dismissed => json!({ "action": "cancel" }),
        FormAnswer::CouldNotAsk => declined(),
        FormAnswer::Submitted(answers) => match typed_content(form, answers) {
            Ok(content) => json!({ "action": "accept", "content": content }),
            Err(why) => {
                // `why` names fields and kinds, never the person's answers.
                tracing::debug!("declining elicitation: {why}");
                declined()
            }
        },
    }
}

/// The `ElicitResult` that declines: `{"action":"decline"}`. A first-class
/// MCP answer that lets the server carry on without the information, sent
/// whenever rho could not ask, could not render, or could not type.
pub fn declined() -> Value {
    json!({ "action": "decline" })
}

fn unrenderable(why: impl Into<String>) -> Decline {
    Decline::Unrenderable(why.into())
}

/// The names in the schema's `required` array, each of which must be a
/// property: a required question that cannot be asked could never be
/// answered.
fn required_names<'a>(
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

fn field(name: &str, property: &Value, required: bool) -> Result<Field, Decline> {
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
fn string_kind(name: &str, schema: &Map<String, Value>) -> Result<FieldKind, Decline> {
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
fn multi_select_kind(name: &str, schema: &Map<String, Value>) -> Result<FieldKind, Decline> {
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
fn untitled_options(name: &str, values: &Value) -> Result<Vec<ChoiceOption>, Decline> {
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
fn legacy_titles(
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
fn titled_options(name: &str, keyword: &str, list: &Value) -> Result<Vec<ChoiceOption>, Decline> {
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
fn checked_options(name: &str, options: Vec<ChoiceOption>) -> Result<Vec<ChoiceOption>, Decline> {
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
fn default_texts(kind: &FieldKind, default: &Value) -> Option<Vec<String>> {
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

fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

/// A JSON number as the text a person would type for it; for an integer
/// field, only an integral number (`30.0` is `"30"`) that fits an `i64` or
/// `u64`.
fn number_text(n: &Number, integer: bool) -> Option<String> {
    if n.is_i64() || n.is_u64() || !integer {
        return Some(n.to_string());
    }
    let f = n.as_f64()?;
    integral(f).map(|i| i.to_string())
}

/// `f` as an `i64`, when it is integral and in range.
fn integral(f: f64) -> Option<i64> {
    // 2^63: the first f64 above i64::MAX; -2^63 is i64::MIN exactly.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (f.is_finite() && f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f)).then_some(f as i64)
}

/// The help lines: the description, then one line per constraint present.
fn help_lines(schema: &Map<String, Value>) -> Vec<String> {
    let mut help = Vec::new();
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        if !description.trim().is_empty() {
            help.push(description.to_owned());
        }
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

fn format_help(format: &str) -> String {
    match format {
        "email" => "Format: an email address".to_owned(),
        "uri" => "Format: a URI".to_owned(),
        "date" => "Format: a date (YYYY-MM-DD)".to_owned(),
        "date-time" => "Format: a date and time (such as 2025-11-25T14:30:00Z)".to_owned(),
        other => format!("Format: {other}"),
    }
}

/// The `content` of an accepting `ElicitResult`, or why there can be none.
/// The reason names fields and kinds only, never answer text.
fn typed_content(form: &Form, answers: &BTreeMap<String, Vec<String>>) -> Result<Value, String> {
    if let Some(stray) = answers
        .keys()
        .find(|name| !form.fields.iter().any(|f| &f.name == *name))
    {
        return Err(format!(
            "an answer names `{stray}`, which the form does not ask"
        ));
    }
    let mut content = Map::new();
    for field in &form.fields {
        match typed_answer(field, answers.get(&field.name))? {
            Some(value) => {
                content.insert(field.name.clone(), value);
            }
            None if field.required => {
                return Err(format!("required field `{}` was not answered", field.name));
            }
            None => {}
        }
    }
    Ok(Value::Object(content))
}

/// Whether `texts` is an answer `field` can carry, for a host that asks a
/// person: `Err` says why not, in words to show before asking again (it
/// names the field and its kind, never the answer). An empty answer is
/// fine here; whether a required field may stay empty is the host's
/// question. The same rule decides [`result_for`], so an answer this
/// accepts is never turned into a decline there.
pub fn check_field_answer(field: &Field, texts: &[String]) -> Result<(), String> {
    typed_answer(field, Some(&texts.to_vec())).map(|_| ())
}

/// One field's answer typed to its schema: `Ok(None)` when unanswered,
/// `Err` when the texts cannot carry the field's type.
fn typed_answer(field: &Field, texts: Option<&Vec<String>>) -> Result<Option<Value>, String> {
    let Some(texts) = texts else {
        return Ok(None);
    };
    let name = &field.name;
    if let FieldKind::Choice {
        options,
        multi: true,
    } = &field.kind
    {
        let chosen = texts.iter().map(String::as_str).collect::<BTreeSet<_>>();
        if chosen
            .iter()
            .any(|c| !options.iter().any(|o| o.value == *c))
        {
            return Err(format!(
                "field `{name}` was answered with an unknown choice"
            ));
        }
        let values = options
            .iter()
            .filter(|o| chosen.contains(o.value.as_str()))
            .map(|o| Value::String(o.value.clone()))
            .collect();
        return Ok(Some(Value::Array(values)));
    }
    let text = match texts.as_slice() {
        [] => return Ok(None),
        [text] => text,
        several => {
            return Err(format!(
                "field `{name}` takes one value and was given {}",
                several.len()
            ));
        }
    };
    // An option whose value is blank is still a choice; any other blank
    // text is an empty answer box.
    if let FieldKind::Choice { options, .. } = &field.kind {
        if options.iter().any(|o| o.value == *text) {
            return Ok(Some(Value::String(text.clone())));
        }
    }
    if text.trim().is_empty() {
        return Ok(None);
    }
    match &field.kind {
        FieldKind::Text => Ok(Some(Value::String(text.clone()))),
        FieldKind::Choice { .. } => Err(format!(
            "field `{name}` was answered with an unknown choice"
        )),
        FieldKind::Confirm => parse_yes_no(text)
            .map(|b| Some(Value::Bool(b)))
            .ok_or_else(|| format!("field `{name}` was not answered yes or no")),
        FieldKind::Number { integer } => parse_number(text, *integer).map(Some).ok_or_else(|| {
            let what = if *integer { "an integer" } else { "a number" };
            format!("field `{name}` was not answered with {what}")
        }),
    }
}

fn parse_yes_no(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" => Some(true),
        "no" | "n" | "false" => Some(false),
        _ => None,
    }
}

/// Decimal text as a JSON number: an integer when the text is one (so `"3"`
/// sends `3`, not `3.0`); for an integer field also any integral decimal
/// (`"3.0"`, `"1e3"`) that fits an `i64`; never NaN or infinity.
fn parse_number(text: &str, integer: bool) -> Option<Value> {
    let text = text.trim();
    if let Ok(i) = text.parse::<i64>() {
        return Some(Value::from(i));
    }
    if let Ok(u) = text.parse::<u64>() {
        return Some(Value::from(u));
    }
    let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    if integer {
        integral(f).map(Value::from)
    } else {
        Number::from_f64(f).map(Value::Number)
    }
}

#[cfg(test)]
mod tests {
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
    fn capability_is_form_mode_only_in_the_schema_shape() {
        assert_eq!(capability(), json!({ "form": {} }));
        assert!(capability().get("url").is_none());
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
        let integer =
            only_field(json!({ "type": "integer", "description": "Age", "minimum": 1.5 }));
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
    fn url_mode_is_always_declined() {
        let url = json!({
            "mode": "url",
            "message": "Sign in",
            "elicitationId": "e-1",
            "url": "https://example.com/auth"
        });
        assert_eq!(form_from_request(&url), Err(Decline::UrlMode));
        assert_eq!(
            form_from_request(&json!({ "mode": "url" })),
            Err(Decline::UrlMode)
        );
        assert_eq!(
            Decline::UrlMode.to_string(),
            "URL-mode elicitation is not supported: rho opens no browser"
        );
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
}
