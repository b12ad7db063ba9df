//! [`ToolIndex`]: the exported tools as an agent can defer them, one line
//! each, with a ranked search.
//!
//! An agent with many servers cannot hand every tool's schema to the
//! model each turn. It hands the index instead (each tool's exported
//! name, server, title, a one-line summary and the size of its schema)
//! and a search tool; the model searches, and only the tools it picks
//! get their schemas (as Claude Code's tool search and Copilot's
//! deferred tools do). People get the same search (`rho mcp search`).
//!
//! The ranking is a small BM25-like score, written here so that it is
//! deterministic and needs no model: each query word (lowercased, split
//! at punctuation and camelCase, a plural `s` dropped, common words
//! ignored) counts by how rare it is among the tools (inverse document
//! frequency) times where it matched: the tool's name or title most,
//! then a parameter's name, then the description; a word that only
//! starts (or is the start of) a longer one counts half. A tool that
//! matches more of the query, and whose name is more fully matched,
//! ranks higher; equal scores go by name. A query naming a tool exactly
//! puts it first.

use std::collections::BTreeSet;

use crate::runtime::registry::ExportedTool;

/// The longest summary, in characters.
const SUMMARY_CHARS: usize = 160;

/// Words a query or a description holds that tell no tool apart.
const COMMON: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is",
    "it", "its", "of", "on", "or", "the", "this", "that", "to", "with",
];

/// How much a match counts, by where it is.
const IN_NAME: f64 = 3.0;
const IN_PARAMETER: f64 = 1.5;
const IN_DESCRIPTION: f64 = 1.0;
/// A word that only starts a longer one (or is started by it).
const PARTIAL: f64 = 0.5;

/// One exported tool, as the index lists it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct IndexEntry {
    /// The name the model calls it by.
    pub name: String,
    /// The server that answers it.
    pub server: String,
    /// The server's own name for it.
    pub tool: String,
    /// Its title, when the server gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The first sentence of its description, at most 160 characters.
    pub summary: String,
    /// The size of its input schema as JSON, in bytes: what handing the
    /// model its schema costs.
    pub schema_bytes: usize,
    /// Its parameters' names, in the schema's order.
    pub parameters: Vec<String>,
    /// The words each part is searched by.
    #[serde(skip)]
    words: Words,
}

/// An entry's words, by where they come from.
#[derive(Clone, Debug, Default, PartialEq)]
struct Words {
    name: Vec<String>,
    parameters: BTreeSet<String>,
    description: BTreeSet<String>,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit<'a> {
    /// The tool.
    pub entry: &'a IndexEntry,
    /// Its score: higher is better, comparable within one search only.
    pub score: f64,
}

/// Every exported tool, searchable.
#[derive(Clone, Debug, Default)]
pub struct ToolIndex {
    entries: Vec<IndexEntry>,
}

impl ToolIndex {
    /// The index of `tools`, in their order; withdrawn tools are left out.
    pub fn new<'a>(tools: impl IntoIterator<Item = &'a ExportedTool>) -> Self {
        Self {
            entries: tools
                .into_iter()
                .filter(|tool| !tool.withdrawn)
                .map(entry)
                .collect(),
        }
    }

    /// Every entry, in the tools' order.
    pub fn entries(&self) -> &[IndexEntry] {
        &self.entries
    }

    /// The entries that match `query`, best first, at most `limit`. A
    /// query of only common words (or none) matches nothing.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit<'_>> {
        let terms: Vec<String> = dedup(words(query));
        if terms.is_empty() {
            return Vec::new();
        }
        let exact = query.trim().to_lowercase();
        let count = self.entries.len() as f64;
        let idf: Vec<f64> = terms
            .iter()
            .map(|term| {
                let holding = self
                    .entries
                    .iter()
                    .filter(|e| strength(&e.words, term) > 0.0)
                    .count() as f64;
                (1.0 + (count - holding + 0.5) / (holding + 0.5))
                    .ln()
                    .max(0.1)
            })
            .collect();
        let mut hits: Vec<Hit<'_>> = self
            .entries
            .iter()
            .filter_map(|entry| {
                let mut score = 0.0;
                let mut matched = 0usize;
                for (term, idf) in terms.iter().zip(&idf) {
                    let strength = strength(&entry.words, term);
                    if strength > 0.0 {
                        matched += 1;
                        score += idf * strength;
                    }
                }
                if matched == 0 {
                    return None;
                }
                let coverage = matched as f64 / terms.len() as f64;
                let name = &entry.words.name;
                let named = name
                    .iter()
                    .filter(|word| terms.iter().any(|t| t == *word))
                    .count();
                let fullness = if name.is_empty() {
                    0.0
                } else {
                    named as f64 / name.len() as f64
                };
                score = score * (1.0 + coverage) + fullness;
                if exact == entry.name.to_lowercase() || exact == entry.tool.to_lowercase() {
                    score += 100.0;
                }
                Some(Hit { entry, score })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.entry.name.cmp(&b.entry.name))
        });
        hits.truncate(limit);
        hits
    }
}

/// How strongly `term` matches an entry: the best of its places.
fn strength(words: &Words, term: &str) -> f64 {
    (IN_NAME * matches(&words.name, term))
        .max(IN_PARAMETER * matches(&words.parameters, term))
        .max(IN_DESCRIPTION * matches(&words.description, term))
}

/// 1 when one of `place`'s words is `term`, [`PARTIAL`] when one starts
/// it or is started by it (three letters at least), else 0.
fn matches<'a>(place: impl IntoIterator<Item = &'a String>, term: &str) -> f64 {
    let mut best: f64 = 0.0;
    for word in place {
        if word == term {
            return 1.0;
        }
        if term.len() >= 3
            && word.len() >= 3
            && (word.starts_with(term) || term.starts_with(word.as_str()))
        {
            best = PARTIAL;
        }
    }
    best
}

fn entry(tool: &ExportedTool) -> IndexEntry {
    let described = described(&tool.description);
    let parameters: Vec<String> = tool
        .input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    let mut name = words(&tool.tool);
    if let Some(title) = &tool.title {
        name.extend(words(title));
    }
    let words = Words {
        name: dedup(name),
        parameters: parameters.iter().flat_map(|p| words(p)).collect(),
        description: words(described).into_iter().collect(),
    };
    // The first line is `<title>: <description>` when both exist: the
    // summary is the description's.
    let own = tool
        .title
        .as_deref()
        .and_then(|title| described.strip_prefix(title))
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(described);
    IndexEntry {
        name: tool.name.clone(),
        server: tool.server.clone(),
        tool: tool.tool.clone(),
        title: tool.title.clone(),
        summary: summary(own),
        schema_bytes: serde_json::to_string(&*tool.input_schema).map_or(0, |json| json.len()),
        parameters,
        words,
    }
}

/// The server's own words in an exported description: what precedes
/// the line naming the server (see
/// [`exported_description`](crate::runtime::registry::exported_description)).
fn described(description: &str) -> &str {
    description
        .split("\n\nProvided by MCP server `")
        .next()
        .unwrap_or(description)
}

/// The first sentence of the first line, at most [`SUMMARY_CHARS`].
fn summary(described: &str) -> String {
    let line = described
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let line = line.trim();
    let sentence = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    let sentence = crate::text::terminal::sanitize_line(sentence);
    if sentence.chars().count() <= SUMMARY_CHARS {
        return sentence.into_owned();
    }
    let mut cut: String = sentence.chars().take(SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The words of `text`: lowercased, split at anything not a letter or a
/// digit and at camelCase, a plural `s` dropped, common words left out.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if word.is_empty() {
            return;
        }
        let mut w = std::mem::take(word);
        if w.len() > 3 && w.ends_with('s') && !["ss", "us", "is"].iter().any(|e| w.ends_with(e)) {
            w.pop();
        }
        if !COMMON.contains(&w.as_str()) {
            out.push(w);
        }
    };
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower {
                flush(&mut word, &mut out);
            }
            previous_lower = c.is_lowercase() || c.is_numeric();
            word.extend(c.to_lowercase());
        } else {
            flush(&mut word, &mut out);
            previous_lower = false;
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `words` without repeats, in their first order.
fn dedup(words: Vec<String>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    words
        .into_iter()
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::registry::ToolHints;
    use serde_json::json;
    use std::sync::Arc;

    fn tool(server: &str, name: &str, description: &str, parameters: &[&str]) -> ExportedTool {
        let properties: serde_json::Map<String, serde_json::Value> = parameters
            .iter()
            .map(|p| ((*p).to_owned(), json!({"type": "string"})))
            .collect();
        ExportedTool {
            name: format!("mcp__{server}__{name}"),
            full_name: None,
            server: server.to_owned(),
            tool: name.to_owned(),
            title: None,
            description: format!(
                "{description}\n\nProvided by MCP server `{server}` as its tool `{name}`."
            ),
            input_schema: Arc::new(json!({"type": "object", "properties": properties})),
            output_schema: None,
            hints: ToolHints::default(),
            meta: None,
            withdrawn: false,
        }
    }

    fn tools() -> Vec<ExportedTool> {
        vec![
            tool(
                "fs",
                "read_file",
                "Read a file. Deprecated: use read_text_file.",
                &["path"],
            ),
            tool(
                "fs",
                "read_text_file",
                "Read the complete contents of a text file.",
                &["path", "head", "tail"],
            ),
            tool(
                "fs",
                "read_multiple_files",
                "Read several files at once.",
                &["paths"],
            ),
            tool(
                "fs",
                "list_directory",
                "Get a listing of the files and directories in a path.",
                &["path"],
            ),
            tool(
                "fs",
                "list_directory_with_sizes",
                "A listing of the files in a path, with their sizes.",
                &["path", "sortBy"],
            ),
            tool(
                "fs",
                "move_file",
                "Move or rename files and directories.",
                &["source", "destination"],
            ),
            tool(
                "demo",
                "get-sum",
                "Returns the sum of two numbers",
                &["a", "b"],
            ),
            tool("demo", "echo", "Echoes back the input string", &["message"]),
        ]
    }

    fn first(index: &ToolIndex, query: &str) -> String {
        index
            .search(query, 3)
            .first()
            .map(|hit| hit.entry.tool.clone())
            .unwrap_or_default()
    }

    #[test]
    fn the_expected_tool_ranks_first() {
        let tools = tools();
        let index = ToolIndex::new(&tools);
        assert_eq!(first(&index, "read a text file"), "read_text_file");
        assert_eq!(first(&index, "list directory"), "list_directory");
        assert_eq!(first(&index, "rename a file"), "move_file");
        assert_eq!(first(&index, "add two numbers sum"), "get-sum");
        assert_eq!(first(&index, "sortBy"), "list_directory_with_sizes");
        assert_eq!(first(&index, "echo"), "echo");
        assert_eq!(first(&index, "mcp__fs__read_file"), "read_file");
    }

    #[test]
    fn common_words_alone_and_unknown_words_match_nothing() {
        let tools = tools();
        let index = ToolIndex::new(&tools);
        assert!(index.search("the of a", 10).is_empty());
        assert!(index.search("", 10).is_empty());
        assert!(index.search("kubernetes", 10).is_empty());
        assert_eq!(index.search("file", 2).len(), 2, "the limit holds");
    }

    #[test]
    fn an_entry_is_one_line_with_its_schema_size_and_parameters() {
        let long = tool(
            "fs",
            "list_directory",
            &format!("\u{1b}[31m{}. Second.", "x".repeat(300)),
            &["path"],
        );
        let index = ToolIndex::new([&long]);
        let entry = &index.entries()[0];
        assert_eq!(entry.summary.chars().count(), SUMMARY_CHARS);
        assert!(entry.summary.ends_with('…'));
        assert!(!entry.summary.contains("Provided by"));
        assert!(
            !entry.summary.contains('\u{1b}'),
            "sanitized: {:?}",
            entry.summary
        );
        assert_eq!(entry.parameters, ["path"]);
        assert_eq!(
            entry.schema_bytes,
            serde_json::to_string(&*long.input_schema).unwrap().len()
        );
        let mut titled = tool(
            "demo",
            "get-sum",
            "Sum: Returns the sum. Of two numbers",
            &[],
        );
        titled.title = Some("Sum".to_owned());
        let index = ToolIndex::new([&titled]);
        assert_eq!(index.entries()[0].summary, "Returns the sum.");
    }

    #[test]
    fn words_split_at_case_and_punctuation_and_drop_plurals() {
        assert_eq!(words("read_multiple_files"), ["read", "multiple", "file"]);
        assert_eq!(words("sortBy getHTTPStatus"), ["sort", "get", "httpstatus"]);
        assert_eq!(words("The sum of numbers"), ["sum", "number"]);
        assert_eq!(words("access"), ["access"]);
    }

    #[test]
    fn withdrawn_tools_are_left_out() {
        let mut gone = tool("demo", "echo", "Echoes", &[]);
        gone.withdrawn = true;
        assert!(ToolIndex::new([&gone]).entries().is_empty());
    }
}
