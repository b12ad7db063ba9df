//! A person's typed answers turned into an accepting `ElicitResult`'s
//! content: each checked against its field's kind and constraints, with
//! reasons that name fields and kinds, never the answer text.

use super::*;

/// The `content` of an accepting `ElicitResult`, or why there can be none.
/// The reason names fields and kinds only, never answer text.
pub(super) fn typed_content(
    form: &Form,
    answers: &BTreeMap<String, Vec<String>>,
) -> Result<Value, String> {
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
pub(super) fn typed_answer(
    field: &Field,
    texts: Option<&Vec<String>>,
) -> Result<Option<Value>, String> {
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
    if let FieldKind::Choice { options, .. } = &field.kind
        && options.iter().any(|o| o.value == *text)
    {
        return Ok(Some(Value::String(text.clone())));
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

pub(super) fn parse_yes_no(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "yes" | "y" | "true" => Some(true),
        "no" | "n" | "false" => Some(false),
        _ => None,
    }
}

/// Decimal text as a JSON number: an integer when the text is one (so `"3"`
/// sends `3`, not `3.0`); for an integer field also any integral decimal
/// (`"3.0"`, `"1e3"`) that fits an `i64`; never NaN or infinity.
pub(super) fn parse_number(text: &str, integer: bool) -> Option<Value> {
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
