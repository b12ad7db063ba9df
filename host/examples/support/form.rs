//! A form filled as a scripted person would: every field its default, or
//! a plain answer of its kind.

use std::collections::BTreeMap;

use rho_host::{FieldKind, Form};

/// Every field of `form` answered with its default or a plain answer.
pub(crate) fn fill(form: &Form) -> BTreeMap<String, Vec<String>> {
    let mut answers = BTreeMap::new();
    for field in &form.fields {
        let value = match (&field.default, &field.kind) {
            (Some(default), _) => default.clone(),
            (None, FieldKind::Confirm) => vec!["true".into()],
            (None, FieldKind::Number { .. }) => vec!["42".into()],
            (
                None,
                FieldKind::Choice {
                    options,
                    multi: false,
                },
            ) => options
                .first()
                .map(|o| vec![o.value.clone()])
                .unwrap_or_default(),
            (None, FieldKind::Choice { multi: true, .. }) => Vec::new(),
            (None, FieldKind::Text) => vec![text_for(&field.name)],
        };
        answers.insert(field.name.clone(), value);
    }
    answers
}

/// A plain answer for a text field, fit for the common formats.
fn text_for(name: &str) -> String {
    match name {
        "email" => "agent@example.com".into(),
        "homepage" => "https://example.com".into(),
        "birthdate" => "2000-01-01".into(),
        _ => "Ada".into(),
    }
}
