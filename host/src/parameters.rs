//! A tool's parameters as a person reads them: from its `inputSchema`,
//! each top-level property's name, JSON type(s), whether it is required,
//! its description and its allowed values (`enum`, `const`, or the
//! `const`s of a `oneOf`/`anyOf`). `show --connect`, the shell's `/tools`
//! and its `/call` completion all read them here, so what a person sees
//! and what completes are the same list.
//!
//! The strings are the server's: a caller that prints them sanitizes them
//! first (they are returned raw, as the schema holds them).

use serde_json::Value;

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
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut out: Vec<Parameter> = properties
        .iter()
        .map(|(name, property)| Parameter {
            name: name.clone(),
            types: types(property),
            required: required.contains(&name.as_str()),
            description: ["description", "title"]
                .iter()
                .find_map(|key| property.get(*key).and_then(Value::as_str))
                .filter(|d| !d.trim().is_empty())
                .map(str::to_owned),
            values: values(property),
        })
        .collect();
    out.sort_by_key(|p| !p.required);
    out
}

/// The JSON types a property schema names (`type`, or those of its
/// `anyOf`/`oneOf` members), in order, each once; empty when it names none.
pub fn types(property: &Value) -> Vec<String> {
    fn named(schema: &Value) -> Vec<String> {
        match schema.get("type") {
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        }
    }
    let mut out = named(property);
    for key in ["anyOf", "oneOf"] {
        for member in property
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for t in named(member) {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    if out.is_empty() {
        if let Some(items) = property.get("items") {
            let inner = named(items);
            if !inner.is_empty() {
                out.push(format!("array of {}", inner.join(" | ")));
            }
        }
    }
    out
}

fn values(property: &Value) -> Vec<String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(listed) = property.get("enum").and_then(Value::as_array) {
        return listed.iter().map(text).collect();
    }
    if let Some(one) = property.get("const") {
        return vec![text(one)];
    }
    let mut out = Vec::new();
    for key in ["oneOf", "anyOf"] {
        for member in property
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(one) = member.get("const") {
                out.push(text(one));
            }
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
}
