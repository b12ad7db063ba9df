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
//! URL mode is not a form: it is read by [`url_request_from_params`] (see
//! the `url_mode` module's docs), and a caller checks [`is_url_mode`]
//! before it asks for a form.
//!
//! Rho never shows a partial form. [`form_from_request`] returns
//! [`Decline`] for a schema it cannot render whole: no properties, an enum with no values, a
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
//! as parsed into a [`serde_json::Map`]. The workspace builds `serde_json`
//! with its `preserve_order` feature, so that map keeps the order the
//! server wrote the properties in, and so do the fields (pinned by
//! `fields_come_in_the_servers_order_not_sorted_by_name`). The `content`
//! of an `ElicitResult` is a JSON object, whose order means nothing to the
//! server.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Number, Value, json};

mod answer;
mod schema;
#[cfg(test)]
mod tests;
mod url_mode;

pub use answer::*;
use schema::*;
pub use url_mode::*;

/// How many URL elicitations one -32042 error may list before rho refuses
/// to put them all in front of a person.
pub const MAX_REQUIRED_ELICITATIONS: usize = 8;

/// The `elicitation` client capability rho declares in a run that can put
/// a question in front of a person: `{"form": {}}`, and `{"form": {},
/// "url": {}}` when `url` (the host can show a URL and open it in a browser
/// on the person's yes; see the `url_mode` module).
///
/// A server must not use a mode the client did not declare; one that asks
/// for URL mode anyway is answered with JSON-RPC -32602 (2025 era) or has
/// its call failed (2026 era, where an input response cannot be an
/// error). The explicit `form` member is used rather than the bare `{}`
/// that the spec keeps only as a backwards-compatible spelling of form
/// mode.
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
pub fn capability(url: bool) -> Value {
    if url {
        json!({ "form": {}, "url": {} })
    } else {
        json!({ "form": {} })
    }
}

/// A server's question, ready to show: the server's explanation and one
/// field per schema property.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Form {
    /// The server's `message`: why it is asking. Shown as sent; the caller
    /// adds the asking server's identity so the form is never mistaken for
    /// one of rho's own questions.
    pub message: String,
    /// The questions, in the order the server wrote its properties (see
    /// the module docs).
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
    /// A request or schema rho cannot render whole; says what is wrong. Rho
    /// never shows a partial form.
    #[error("the form cannot be shown: {0}")]
    Unrenderable(String),
}

/// Maps the `params` of an `elicitation/create` request onto a [`Form`], or
/// says why the request must be declined.
///
/// A missing `mode` means form mode, as the spec requires of clients;
/// `"url"` is not a form (callers check [`is_url_mode`] first, and read it
/// with [`url_request_from_params`]). See the module docs for the mapping
/// and for what counts as unrenderable.
pub fn form_from_request(params: &Value) -> Result<Form, Decline> {
    let params = params
        .as_object()
        .ok_or_else(|| unrenderable("the request parameters are not an object"))?;
    match params.get("mode") {
        None => {}
        Some(Value::String(mode)) if mode == "form" => {}
        Some(Value::String(mode)) if mode == "url" => {
            return Err(unrenderable("a URL-mode request is not a form"));
        }
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
    /// The person dismissed the form (closed it without choosing): the
    /// server is told `cancel`, which also ends the turn.
    Dismissed,
    /// The person chose not to give what the form asks (the spec's
    /// explicit decline, a "Decline" button): the server is told `decline`.
    Declined,
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
/// - [`FormAnswer::Declined`] and [`FormAnswer::CouldNotAsk`] send
///   [`declined`]: the server cannot tell them apart (the spec has one
///   decline), the host's log can.
///
/// Defaults are not filled in here: a person who cleared a pre-filled field
/// meant to leave it unanswered.
pub fn result_for(form: &Form, answer: &FormAnswer) -> Value {
    match answer {
        FormAnswer::Dismissed => json!({ "action": "cancel" }),
        FormAnswer::Declined | FormAnswer::CouldNotAsk => declined(),
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
