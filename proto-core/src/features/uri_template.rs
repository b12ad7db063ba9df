//! RFC 6570 URI templates, as resource templates use them
//! (`db://users/{id}`): their variables, and expansion once the user
//! supplies values.
//!
//! Every level of the RFC is read: simple `{var}`, reserved `{+var}`,
//! fragment `{#var}`, label `{.var}`, path `{/var}`, path-style
//! parameters `{;var}`, query `{?var}` and continuation `{&var}`, several
//! variables per expression (`{x,y}`), and the prefix modifier (`{var:3}`).
//! Values are strings (a prompt or resource argument is one), so the
//! explode modifier (`*`) is read and changes nothing. A maintained crate
//! would bring list and map values rho never has; this is a few dozen
//! lines checked against the RFC's own examples below.

use std::collections::BTreeMap;

/// A parsed URI template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    Expression {
        operator: Operator,
        vars: Vec<VarSpec>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct VarSpec {
    name: String,
    prefix: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Operator {
    Simple,
    Reserved,
    Fragment,
    Label,
    Path,
    PathParam,
    Query,
    Continuation,
}

impl Operator {
    /// (first, separator, named, if-empty, allow reserved)
    fn rules(self) -> (&'static str, &'static str, bool, &'static str, bool) {
        match self {
            Operator::Simple => ("", ",", false, "", false),
            Operator::Reserved => ("", ",", false, "", true),
            Operator::Fragment => ("#", ",", false, "", true),
            Operator::Label => (".", ".", false, "", false),
            Operator::Path => ("/", "/", false, "", false),
            Operator::PathParam => (";", ";", true, "", false),
            Operator::Query => ("?", "&", true, "=", false),
            Operator::Continuation => ("&", "&", true, "=", false),
        }
    }
}

/// Why a template could not be read or expanded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// A `{` without its `}`.
    #[error("URI template `{0}` has an unclosed `{{`")]
    Unclosed(String),
    /// An expression with no variable, or a name the RFC does not allow.
    #[error("URI template `{template}` has a malformed expression `{{{expression}}}`")]
    Malformed {
        /// The template.
        template: String,
        /// The expression, without braces.
        expression: String,
    },
    /// Variables without a value.
    #[error("URI template `{template}` needs a value for {}", .missing.join(", "))]
    Unfilled {
        /// The template.
        template: String,
        /// The variables without a value, in template order.
        missing: Vec<String>,
    },
}

impl UriTemplate {
    /// Reads a template.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| TemplateError::Unclosed(template.to_owned()))?;
            parts.push(expression(template, &after[..close])?);
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(Self { parts })
    }

    /// Whether `text` holds any expression at all (a plain URI does not).
    pub fn is_template(text: &str) -> bool {
        text.contains('{')
    }

    /// The variables, in template order, each once.
    pub fn variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for part in &self.parts {
            if let Part::Expression { vars, .. } = part {
                for var in vars {
                    if !out.contains(&var.name) {
                        out.push(var.name.clone());
                    }
                }
            }
        }
        out
    }

    /// Expands the template with `values`. Every variable must have a
    /// value: a resource URI with a hole in it names nothing to read.
    pub fn expand(
        &self,
        template: &str,
        values: &BTreeMap<String, String>,
    ) -> Result<String, TemplateError> {
        let missing: Vec<String> = self
            .variables()
            .into_iter()
            .filter(|v| !values.contains_key(v))
            .collect();
        if !missing.is_empty() {
            return Err(TemplateError::Unfilled {
                template: template.to_owned(),
                missing,
            });
        }
        Ok(self.expand_defined(values))
    }

    /// Expands per the RFC: a variable without a value is left out.
    pub fn expand_defined(&self, values: &BTreeMap<String, String>) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Expression { operator, vars } => {
                    let (first, sep, named, if_empty, reserved) = operator.rules();
                    let mut wrote = false;
                    for var in vars {
                        let Some(value) = values.get(&var.name) else {
                            continue;
                        };
                        out.push_str(if wrote { sep } else { first });
                        wrote = true;
                        let value = match var.prefix {
                            Some(n) => value.chars().take(n).collect(),
                            None => value.clone(),
                        };
                        if named {
                            out.push_str(&var.name);
                            if value.is_empty() {
                                out.push_str(if_empty);
                                continue;
                            }
                            out.push('=');
                        }
                        encode(&mut out, &value, reserved);
                    }
                }
            }
        }
        out
    }
}

fn expression(template: &str, inner: &str) -> Result<Part, TemplateError> {
    let malformed = || TemplateError::Malformed {
        template: template.to_owned(),
        expression: inner.to_owned(),
    };
    let (operator, list) = match inner.chars().next() {
        Some('+') => (Operator::Reserved, &inner[1..]),
        Some('#') => (Operator::Fragment, &inner[1..]),
        Some('.') => (Operator::Label, &inner[1..]),
        Some('/') => (Operator::Path, &inner[1..]),
        Some(';') => (Operator::PathParam, &inner[1..]),
        Some('?') => (Operator::Query, &inner[1..]),
        Some('&') => (Operator::Continuation, &inner[1..]),
        _ => (Operator::Simple, inner),
    };
    let mut vars = Vec::new();
    for spec in list.split(',') {
        let spec = spec.strip_suffix('*').unwrap_or(spec);
        let (name, prefix) = match spec.split_once(':') {
            Some((name, n)) => {
                let n: usize = n.parse().map_err(|_| malformed())?;
                if n == 0 || n >= 10_000 {
                    return Err(malformed());
                }
                (name, Some(n))
            }
            None => (spec, None),
        };
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%');
        if !valid {
            return Err(malformed());
        }
        vars.push(VarSpec {
            name: name.to_owned(),
            prefix,
        });
    }
    Ok(Part::Expression { operator, vars })
}

/// Percent-encodes `value`: unreserved characters pass, and with
/// `reserved` the RFC 3986 reserved set and existing `%XX` triplets too.
fn encode(out: &mut String, value: &str, reserved: bool) {
    const RESERVED: &str = ":/?#[]@!$&'()*+,;=";
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let unreserved = b.is_ascii_alphanumeric() || b"-._~".contains(&b);
        let triplet = reserved
            && b == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if unreserved || (reserved && RESERVED.as_bytes().contains(&b)) || triplet {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> BTreeMap<String, String> {
        [
            ("var", "value"),
            ("hello", "Hello World!"),
            ("path", "/foo/bar"),
            ("x", "1024"),
            ("y", "768"),
            ("empty", ""),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn expand(template: &str) -> String {
        UriTemplate::parse(template)
            .expect("parses")
            .expand_defined(&values())
    }

    #[test]
    fn the_rfc_examples_expand_as_the_rfc_says() {
        // RFC 6570 section 1.2, levels 1 to 4 (string values).
        let cases = [
            ("{var}", "value"),
            ("{hello}", "Hello%20World%21"),
            ("{+var}", "value"),
            ("{+hello}", "Hello%20World!"),
            ("{+path}/here", "/foo/bar/here"),
            ("here?ref={+path}", "here?ref=/foo/bar"),
            ("X{#var}", "X#value"),
            ("X{#hello}", "X#Hello%20World!"),
            ("map?{x,y}", "map?1024,768"),
            ("{x,hello,y}", "1024,Hello%20World%21,768"),
            ("{+x,hello,y}", "1024,Hello%20World!,768"),
            ("{+path,x}/here", "/foo/bar,1024/here"),
            ("{#x,hello,y}", "#1024,Hello%20World!,768"),
            ("X{.var}", "X.value"),
            ("X{.x,y}", "X.1024.768"),
            ("{/var}", "/value"),
            ("{/var,x}/here", "/value/1024/here"),
            ("{;x,y}", ";x=1024;y=768"),
            ("{;x,y,empty}", ";x=1024;y=768;empty"),
            ("{?x,y}", "?x=1024&y=768"),
            ("{?x,y,empty}", "?x=1024&y=768&empty="),
            ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
            ("{var:3}", "val"),
            ("{var:30}", "value"),
            ("{+path:6}/here", "/foo/b/here"),
            ("{/var:1,var}", "/v/value"),
            ("{undefined}", ""),
            ("{?undefined,x}", "?x=1024"),
        ];
        for (template, expected) in cases {
            assert_eq!(expand(template), expected, "{template}");
        }
    }

    #[test]
    fn variables_are_listed_once_in_order_and_unfilled_ones_refused() {
        let text = "demo://resource/dynamic/text/{resourceId}{?page,resourceId}";
        let t = UriTemplate::parse(text).expect("parses");
        assert_eq!(t.variables(), ["resourceId", "page"]);
        let err = t.expand(text, &BTreeMap::new()).expect_err("unfilled");
        assert_eq!(
            err.to_string(),
            format!("URI template `{text}` needs a value for resourceId, page")
        );
        let mut v = BTreeMap::new();
        v.insert("resourceId".to_owned(), "7".to_owned());
        v.insert("page".to_owned(), "2".to_owned());
        assert_eq!(
            t.expand(text, &v).expect("filled"),
            "demo://resource/dynamic/text/7?page=2&resourceId=7"
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        assert!(matches!(
            UriTemplate::parse("a{b"),
            Err(TemplateError::Unclosed(_))
        ));
        for bad in ["{}", "{a b}", "{x:0}", "{x:abc}", "{,}"] {
            assert!(
                matches!(
                    UriTemplate::parse(bad),
                    Err(TemplateError::Malformed { .. })
                ),
                "{bad}"
            );
        }
        assert!(!UriTemplate::is_template("demo://plain"));
    }
}
