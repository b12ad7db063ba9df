//! A `SKILL.md`'s YAML frontmatter as the JSON object a skill entry
//! carries, and the field-by-field comparison SEP-2640 requires of a host
//! before it loads the skill.
//!
//! # The block
//!
//! The file begins with a line `---` (a byte order mark before it is
//! allowed), and the frontmatter runs to the next line that is `---` or
//! `...`; what follows is the skill's Markdown body. Trailing blanks and
//! `\r` on a delimiter line are ignored.
//!
//! # YAML to JSON
//!
//! The server renders the frontmatter as JSON for its listing; rho renders
//! the file's the same way, by the YAML 1.2 core schema: a plain scalar is
//! null (`~`, `null`, empty), a boolean (`true`, `false`, any of the three
//! spellings), an integer (decimal, `0o`, `0x`), a float, or else a
//! string; quoted and block scalars are always strings, and so is a scalar
//! tagged `!!str`. Keys are the keys' text. The frontmatter must be one
//! mapping. Refused, as a frontmatter rho cannot compare: a key that is
//! not a scalar or appears twice, an unknown tag, `.inf` and `.nan` (JSON
//! has no such numbers), more than one document.
//!
//! Implementation note: the YAML parser's events are folded into JSON
//! here rather than through its own document type, so the limits are
//! rho's: [`MAX_DEPTH`] levels of nesting and [`MAX_NODES`] nodes,
//! aliases counted as the copies they expand to (so a "billion laughs"
//! document is refused, not expanded).
//!
//! # Comparing
//!
//! [`differences`] names every top-level field whose values differ, a
//! field absent on one side counting as `null` (as the official
//! conformance suite compares them). Values compare as JSON, except that
//! numbers compare by value, so the file's `1.0` is the listing's `1`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::TScalarStyle;

/// How deeply collections may nest in a frontmatter.
pub const MAX_DEPTH: usize = 64;

/// How many nodes a frontmatter may hold, aliases counted as expanded.
pub const MAX_NODES: usize = 10_000;

/// `text` split at its frontmatter: the YAML between the delimiter lines,
/// and the body after the closing one. `None` when the text does not
/// begin with a frontmatter block.
pub fn split(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, mut rest) = text.split_once('\n')?;
    if first.trim_end() != "---" {
        return None;
    }
    let start = rest;
    let mut offset = 0;
    loop {
        let (line, after) = match rest.split_once('\n') {
            Some((line, after)) => (line, Some(after)),
            None => (rest, None),
        };
        let line_trimmed = line.trim_end();
        if line_trimmed == "---" || line_trimmed == "..." {
            return Some((&start[..offset], after.unwrap_or("")));
        }
        let after = after?;
        offset += line.len() + 1;
        rest = after;
    }
}

/// The frontmatter of `text` (a whole `SKILL.md`) as a JSON object, or
/// why it has none rho can compare.
pub fn parse(text: &str) -> Result<Map<String, Value>, String> {
    let (yaml, _) = split(text).ok_or_else(|| {
        "it does not begin with a YAML frontmatter block (a `---` line, the YAML, a `---` line)"
            .to_owned()
    })?;
    match to_json(yaml)? {
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err("its frontmatter is not a YAML mapping".into()),
        None => Err("its frontmatter is empty".into()),
    }
}

/// The top-level fields whose values differ between `file` and `entry`,
/// by name, in order; empty when they agree.
pub fn differences(file: &Map<String, Value>, entry: &Map<String, Value>) -> Vec<String> {
    let keys: BTreeSet<&String> = file.keys().chain(entry.keys()).collect();
    keys.into_iter()
        .filter(|key| {
            let a = file.get(*key).unwrap_or(&Value::Null);
            let b = entry.get(*key).unwrap_or(&Value::Null);
            !same(a, b)
        })
        .cloned()
        .collect()
}

/// JSON equality, numbers compared by value.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => same_number(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, a)| y.get(key).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

fn same_number(x: &Number, y: &Number) -> bool {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a == b;
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// A collection being built.
enum Frame {
    Sequence {
        items: Vec<Value>,
        anchor: usize,
    },
    Mapping {
        map: Map<String, Value>,
        /// The key read, waiting for its value.
        key: Option<String>,
        anchor: usize,
    },
}

/// Folds parser events into one JSON value.
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    anchors: BTreeMap<usize, Value>,
    root: Option<Value>,
    nodes: usize,
}

impl Builder {
    fn count(&mut self, nodes: usize) -> Result<(), String> {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > MAX_NODES {
            return Err(format!(
                "its frontmatter has more than {MAX_NODES} nodes (aliases expanded)"
            ));
        }
        Ok(())
    }

    /// Opens a collection; a key must be a scalar.
    fn open(&mut self, frame: Frame) -> Result<(), String> {
        if let Some(Frame::Mapping { key: None, .. }) = self.stack.last() {
            return Err("its frontmatter has a key that is not a scalar".into());
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!(
                "its frontmatter nests deeper than {MAX_DEPTH} levels"
            ));
        }
        self.count(1)?;
        self.stack.push(frame);
        Ok(())
    }

    /// Places a finished node: as the root, an item, a key (its text is
    /// `key_text`, or the value itself when that is a string) or a value.
    fn place(
        &mut self,
        value: Value,
        anchor: usize,
        key_text: Option<String>,
    ) -> Result<(), String> {
        if anchor != 0 {
            self.anchors.insert(anchor, value.clone());
        }
        match self.stack.last_mut() {
            None if self.root.is_some() => {
                Err("its frontmatter holds more than one YAML document".into())
            }
            None => {
                self.root = Some(value);
                Ok(())
            }
            Some(Frame::Sequence { items, .. }) => {
                items.push(value);
                Ok(())
            }
            Some(Frame::Mapping { map, key, .. }) => match key.take() {
                Some(name) => {
                    map.insert(name, value);
                    Ok(())
                }
                None => {
                    let name = match (key_text, value) {
                        (Some(text), _) => text,
                        (None, Value::String(text)) => text,
                        (None, _) => {
                            return Err("its frontmatter has a key that is not a scalar".into());
                        }
                    };
                    if map.contains_key(&name) {
                        return Err(format!("its frontmatter has the key `{name}` twice"));
                    }
                    *key = Some(name);
                    Ok(())
                }
            },
        }
    }
}

/// `yaml` as one JSON value, `None` when it holds no document.
fn to_json(yaml: &str) -> Result<Option<Value>, String> {
    let mut parser = Parser::new_from_str(yaml);
    let mut b = Builder::default();
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| format!("its frontmatter is not valid YAML: {e}"))?;
        match event {
            Event::Nothing | Event::StreamStart | Event::DocumentStart | Event::DocumentEnd => {}
            Event::StreamEnd => break,
            Event::Scalar(text, style, anchor, tag) => {
                b.count(1)?;
                let value = scalar(&text, style, tag.as_ref())?;
                b.place(value, anchor, Some(text))?;
            }
            Event::SequenceStart(anchor, _) => b.open(Frame::Sequence {
                items: Vec::new(),
                anchor,
            })?,
            Event::MappingStart(anchor, _) => b.open(Frame::Mapping {
                map: Map::new(),
                key: None,
                anchor,
            })?,
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, anchor) = match b.stack.pop() {
                    Some(Frame::Sequence { items, anchor }) => (Value::Array(items), anchor),
                    Some(Frame::Mapping {
                        map,
                        key: None,
                        anchor,
                    }) => (Value::Object(map), anchor),
                    Some(Frame::Mapping { key: Some(_), .. }) | None => {
                        return Err(format!(
                            "its frontmatter is not valid YAML (line {})",
                            mark.line()
                        ));
                    }
                };
                b.place(value, anchor, None)?;
            }
            Event::Alias(anchor) => {
                let Some(value) = b.anchors.get(&anchor).cloned() else {
                    return Err("its frontmatter refers to an unknown anchor".into());
                };
                b.count(nodes(&value))?;
                b.place(value, 0, None)?;
            }
        }
    }
    Ok(b.root)
}

/// How many nodes `value` holds.
fn nodes(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(nodes).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(nodes).sum::<usize>(),
        _ => 1,
    }
}

/// One scalar, by the core schema (see the module docs).
fn scalar(text: &str, style: TScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    if let Some(tag) = tag {
        let core = tag.handle == "tag:yaml.org,2002:" || tag.handle == "!!";
        match (core, tag.suffix.as_str()) {
            (true, "str") => return Ok(Value::String(text.to_owned())),
            (true, "null" | "bool" | "int" | "float") => {}
            _ => {
                return Err(format!(
                    "its frontmatter has a tag rho does not read (`{}{}`)",
                    tag.handle, tag.suffix
                ));
            }
        }
    } else if style != TScalarStyle::Plain {
        return Ok(Value::String(text.to_owned()));
    }
    plain(text)
}

/// A plain scalar by the YAML 1.2 core schema.
fn plain(text: &str) -> Result<Value, String> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let unsigned = text.trim_start_matches(['-', '+']);
    let sign_len = text.len() - unsigned.len();
    if sign_len <= 1 {
        let lower = unsigned.to_ascii_lowercase();
        if matches!(lower.as_str(), ".inf" | ".nan") {
            return Err(format!(
                "its frontmatter has `{text}`, a number JSON cannot hold"
            ));
        }
        if sign_len == 0 {
            let radix = [("0o", 8), ("0x", 16)]
                .into_iter()
                .find_map(|(prefix, radix)| Some((text.strip_prefix(prefix)?, radix)));
            if let Some((digits, radix)) = radix {
                if !digits.is_empty()
                    && digits.chars().all(|c| c.is_digit(radix))
                    && let Ok(n) = u64::from_str_radix(digits, radix)
                {
                    return Ok(Value::Number(n.into()));
                }
                return Ok(Value::String(text.to_owned()));
            }
        }
        if !unsigned.is_empty() && unsigned.bytes().all(|c| c.is_ascii_digit()) {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Value::Number(n.into()));
            }
            if let Ok(n) = unsigned.parse::<u64>()
                && !text.starts_with('-')
            {
                return Ok(Value::Number(n.into()));
            }
        }
        if is_float(unsigned)
            && let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64)
        {
            return Ok(Value::Number(n));
        }
    }
    Ok(Value::String(text.to_owned()))
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn yaml(text: &str) -> Result<Map<String, Value>, String> {
        parse(&format!("---\n{text}---\nbody\n"))
    }

    #[test]
    fn split_finds_the_block_and_the_body() {
        assert_eq!(
            split("---\nname: a\n---\nBody.\n"),
            Some(("name: a\n", "Body.\n"))
        );
        assert_eq!(
            split("\u{feff}---\r\nname: a\r\n---\r\n"),
            Some(("name: a\r\n", ""))
        );
        assert_eq!(split("---\nname: a\n..."), Some(("name: a\n", "")));
        assert_eq!(split("---\n---\n"), Some(("", "")));
        assert_eq!(split("name: a\n---\n"), None);
        assert_eq!(split("---\nname: a\n"), None, "never closed");
        assert_eq!(split("----\nname: a\n---\n"), None);
    }

    #[test]
    fn scalars_follow_the_core_schema() {
        let map = yaml(concat!(
            "name: pdf-processing\n",
            "description: Extract, fill, and assemble PDF documents\n",
            "n: 30\nneg: -4\nhex: 0x1F\noct: 0o17\nf: 2.5\ne: 1e3\n",
            "t: true\nT: True\nno: false\nnil: ~\nempty:\nversion: 2.1.0\n",
            "quoted: '30'\ndouble: \"true\"\ntagged: !!str 12\n",
            "block: |\n  line one\n  line two\n",
            "folded: >\n  a\n  b\n",
        ))
        .unwrap();
        assert_eq!(
            Value::Object(map),
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "n": 30, "neg": -4, "hex": 31, "oct": 15, "f": 2.5, "e": 1000.0,
                "t": true, "T": true, "no": false, "nil": null, "empty": null,
                "version": "2.1.0", "quoted": "30", "double": "true", "tagged": "12",
                "block": "line one\nline two\n", "folded": "a b\n"
            })
        );
    }

    #[test]
    fn nested_mappings_sequences_and_aliases_become_json() {
        let map = yaml(concat!(
            "metadata:\n  version: \"2.1.0\"\n  author: acme\n",
            "allowed: [read, write]\n",
            "list:\n  - one\n  - two: 2\n",
            "base: &b {x: 1}\ncopy: *b\n",
        ))
        .unwrap();
        assert_eq!(
            Value::Object(map),
            json!({
                "metadata": {"version": "2.1.0", "author": "acme"},
                "allowed": ["read", "write"],
                "list": ["one", {"two": 2}],
                "base": {"x": 1},
                "copy": {"x": 1}
            })
        );
    }

    #[test]
    fn what_cannot_be_compared_is_refused() {
        for (text, why) in [
            ("a: 1\na: 2\n", "twice"),
            ("? [a]\n: 1\n", "not a scalar"),
            ("a: !custom x\n", "tag"),
            ("a: .inf\n", "JSON cannot hold"),
            ("- a\n- b\n", "not a YAML mapping"),
            ("", "empty"),
            ("a: [\n", "not valid YAML"),
            ("a: *nowhere\n", "not valid YAML"),
        ] {
            let error = yaml(text).expect_err(text);
            assert!(error.contains(why), "{text:?}: {error}");
        }
        assert!(
            parse("no frontmatter\n")
                .unwrap_err()
                .contains("does not begin")
        );
    }

    #[test]
    fn aliases_count_as_their_expansion() {
        // Each level doubles: 2^15 leaves, far past MAX_NODES.
        let mut text = String::from("l0: &l0 [x, x]\n");
        for i in 1..16 {
            text.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
        }
        assert!(yaml(&text).unwrap_err().contains("nodes"));
        let deep = format!(
            "a: {}{}\n",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert!(yaml(&deep).unwrap_err().contains("deeper"));
    }

    #[test]
    fn differences_name_each_field_and_numbers_compare_by_value() {
        let file =
            yaml("name: a\ndescription: Exfiltrate credentials\nv: 1.0\nlicense:\n").unwrap();
        let entry = json!({"name": "a", "description": "Extract", "v": 1, "extra": {"k": 1}});
        let Value::Object(entry) = entry else {
            unreachable!()
        };
        assert_eq!(differences(&file, &entry), ["description", "extra"]);
        assert!(same(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
        assert!(!same(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!same(&json!("1"), &json!(1)));
    }
}
