//! Prompts as commands: a server's prompts offered as
//! `/mcp:<server>:<prompt>`, the words typed after one read into its
//! arguments, and the `prompts/get` answer flattened into the one user
//! turn the model gets.
//!
//! Everything here is pure: a host (the CLI's `rho mcp prompt`, an
//! interactive palette, an agent) parses with [`parse_command`] and
//! [`parse_arguments`] (or [`arguments_from_words`] when a shell already
//! split the words), sends [`GetPromptParams`] only when that succeeded,
//! and renders the answer with [`flatten`].
//!
//! # Writing a prompt command
//!
//! `/mcp:<server>:<prompt>`: a server identity never holds `:` (it is
//! ASCII letters, digits, `-` and `_`), so the prompt name is everything
//! after the second `:` up to the first blank, `:` included
//! (`/mcp:docs:search:fast`). A name holding a blank or a quote is
//! written in double quotes, with `\"` and `\\` inside
//! (`/mcp:docs:"weekly report" ...`); [`command_name`] writes a name that
//! way when it has to.
//!
//! # Arguments
//!
//! - A prompt with exactly one argument takes the whole rest of the line,
//!   as typed (blanks, quotes and `=` included, only the blanks around it
//!   trimmed), because `key=value` for a single field is friction with no
//!   purpose.
//! - A prompt with several reads blank-separated `key=value` pairs. A
//!   value holding blanks is quoted: `title="two words"` (`\"` and `\\`
//!   escape inside double quotes) or `title='two words'` (literal); an
//!   unquoted backslash keeps the next character.
//! - A missing required argument is an error naming it, an unknown key an
//!   error naming the prompt's arguments, and a repeated key or a word
//!   without `=` an error too: in every case no request is sent.
//!
//! # Suggesting a value
//!
//! While a person types the arguments, [`value_under_cursor`] says which
//! argument's value the cursor is in, what of it is typed up to the
//! cursor, and the other arguments given (the `completion/complete`
//! context; [`ValueUnderCursor::query`] builds the broker's query). It
//! reads as leniently as typing needs: a value whose quote is not closed
//! yet ends where the blank after the cursor is. Picking a suggestion with [`replace_value`] replaces that value
//! alone, quoted when it needs to be; the command and every other
//! argument stay as typed.
//!
//! # The user turn
//!
//! [`flatten`] joins the messages in order, separated by a blank line.
//! A message the server marked `assistant` is introduced by a line
//! `[assistant]`, so the model reads it as prior context rather than as a
//! request from the user. Content blocks render as tool results do
//! ([`crate::features::content::render`]: images, audio and blobs as descriptors,
//! never base64), and the whole turn is capped by `max_output_bytes`
//! ([`crate::features::limit::cap_output`]), saying so when it is cut.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::features::content;
use crate::features::limit::cap_output;
use crate::wire::protocol::{CallToolResult, ShapeError};

/// One prompt from `prompts/list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Prompt {
    /// The server's name for it (what `prompts/get` takes).
    pub name: String,
    /// Human-readable name, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for, as the server describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments, in the server's order.
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// The argument's name (the key of `arguments` in `prompts/get`).
    pub name: String,
    /// Human-readable name, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means, as the server describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` needs it.
    pub required: bool,
}

impl Prompt {
    /// Reads one entry of a `prompts/list` result. A prompt without a
    /// string `name` is malformed; a malformed argument makes the prompt
    /// malformed too (its arguments would be guessed otherwise).
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let obj = value
            .as_object()
            .ok_or_else(|| ShapeError("prompt is not an object".into()))?;
        let name = match obj.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(ShapeError("prompt has no string `name`".into())),
        };
        let arguments = match obj.get("arguments") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| PromptArgument::from_value(&name, item))
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(ShapeError(format!(
                    "prompt `{name}`: `arguments` is not an array"
                )));
            }
        };
        Ok(Self {
            title: text(value, "title"),
            description: text(value, "description"),
            name,
            arguments,
        })
    }

    /// The arguments as a person reads them: `city (required), state`.
    pub fn argument_list(&self) -> String {
        if self.arguments.is_empty() {
            return "none".into();
        }
        self.arguments
            .iter()
            .map(|a| {
                if a.required {
                    format!("{} (required)", a.name)
                } else {
                    a.name.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl PromptArgument {
    fn from_value(prompt: &str, value: &Value) -> Result<Self, ShapeError> {
        let Some(Value::String(name)) = value.get("name") else {
            return Err(ShapeError(format!(
                "prompt `{prompt}`: an argument has no string `name`"
            )));
        };
        Ok(Self {
            name: name.clone(),
            title: text(value, "title"),
            description: text(value, "description"),
            required: value
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The params of a `prompts/get` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GetPromptParams {
    /// The prompt's name, as the server listed it.
    pub name: String,
    /// The argument values, by argument name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, String>,
}

/// Why the words after a prompt command could not become its arguments.
/// No request is sent for any of these.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PromptArgsError {
    /// Required arguments were not given.
    #[error("prompt `{prompt}` needs {}: {}; its arguments: {arguments}", plural(.missing.len(), "argument", "arguments"), .missing.join(", "))]
    Missing {
        /// The prompt's name.
        prompt: String,
        /// The missing arguments, in the prompt's order.
        missing: Vec<String>,
        /// Every argument, as [`Prompt::argument_list`] writes them.
        arguments: String,
    },
    /// A key that is not one of the prompt's arguments.
    #[error("prompt `{prompt}` has no argument `{key}`; its arguments: {arguments}")]
    Unknown {
        /// The prompt's name.
        prompt: String,
        /// The key typed.
        key: String,
        /// Every argument, as [`Prompt::argument_list`] writes them.
        arguments: String,
    },
    /// A word without `=` where `key=value` pairs are read.
    #[error("prompt `{prompt}` takes key=value pairs, not `{word}`; its arguments: {arguments}")]
    NotKeyValue {
        /// The prompt's name.
        prompt: String,
        /// The word typed.
        word: String,
        /// Every argument, as [`Prompt::argument_list`] writes them.
        arguments: String,
    },
    /// The same key twice.
    #[error("prompt `{prompt}`: argument `{key}` is given twice")]
    Repeated {
        /// The prompt's name.
        prompt: String,
        /// The key typed twice.
        key: String,
    },
    /// Words after a prompt that takes no arguments.
    #[error("prompt `{prompt}` takes no arguments")]
    TakesNone {
        /// The prompt's name.
        prompt: String,
    },
    /// A quote that is never closed.
    #[error("an unclosed {quote} quote in the arguments of prompt `{prompt}`")]
    UnclosedQuote {
        /// The prompt's name.
        prompt: String,
        /// `'` or `"`.
        quote: char,
    },
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// A prompt command split into its parts: `/mcp:<server>:<prompt> rest`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptCommand<'a> {
    /// The server identity.
    pub server: &'a str,
    /// The prompt's name, unquoted.
    pub prompt: String,
    /// Everything after the name, blanks around it trimmed.
    pub rest: &'a str,
}

/// Why a line is not a prompt command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandError {
    /// The line does not start with `/mcp:`.
    #[error("a prompt command starts with `/mcp:<server>:<prompt>`")]
    NotPromptCommand,
    /// `/mcp:<server>` without `:<prompt>`.
    #[error("`/mcp:{server}` names no prompt: write `/mcp:{server}:<prompt>`")]
    NoPrompt {
        /// The server identity typed.
        server: String,
    },
    /// A quoted prompt name that is never closed.
    #[error("the prompt name's quote is never closed")]
    UnclosedName,
}

/// Splits `/mcp:<server>:<prompt> rest` (see the module docs for names
/// with blanks or `:`).
pub fn parse_command(line: &str) -> Result<PromptCommand<'_>, CommandError> {
    let line = line.trim_start();
    let after = line
        .strip_prefix("/mcp:")
        .ok_or(CommandError::NotPromptCommand)?;
    let Some((server, named)) = after.split_once(':') else {
        let server = after.split_whitespace().next().unwrap_or_default();
        return Err(CommandError::NoPrompt {
            server: server.into(),
        });
    };
    if server.is_empty() || server.contains(char::is_whitespace) {
        return Err(CommandError::NotPromptCommand);
    }
    if let Some(quoted) = named.strip_prefix('"') {
        let mut prompt = String::new();
        let mut chars = quoted.char_indices();
        while let Some((at, c)) = chars.next() {
            match c {
                '"' => {
                    return Ok(PromptCommand {
                        server,
                        prompt,
                        rest: quoted[at + 1..].trim(),
                    });
                }
                '\\' => match chars.next() {
                    Some((_, next)) => prompt.push(next),
                    None => break,
                },
                c => prompt.push(c),
            }
        }
        return Err(CommandError::UnclosedName);
    }
    let end = named.find(char::is_whitespace).unwrap_or(named.len());
    if end == 0 {
        return Err(CommandError::NoPrompt {
            server: server.into(),
        });
    }
    Ok(PromptCommand {
        server,
        prompt: named[..end].to_owned(),
        rest: named[end..].trim(),
    })
}

/// The command that names `prompt` of `server`, the name quoted when it
/// holds a blank or starts with a quote (or is empty). An unquoted name is
/// read literally, so a backslash (as in the escaped form a terminal shows
/// of a name with control characters) needs no quoting.
pub fn command_name(server: &str, prompt: &str) -> String {
    let plain =
        !prompt.is_empty() && !prompt.starts_with('"') && !prompt.contains(char::is_whitespace);
    if plain {
        return format!("/mcp:{server}:{prompt}");
    }
    let escaped = prompt.replace('\\', "\\\\").replace('"', "\\\"");
    format!("/mcp:{server}:\"{escaped}\"")
}

/// Reads the rest of a prompt command line into the prompt's arguments,
/// by the rules in the module docs.
pub fn parse_arguments(
    prompt: &Prompt,
    rest: &str,
) -> Result<BTreeMap<String, String>, PromptArgsError> {
    let rest = rest.trim();
    match prompt.arguments.as_slice() {
        [] if rest.is_empty() => Ok(BTreeMap::new()),
        [] => Err(PromptArgsError::TakesNone {
            prompt: prompt.name.clone(),
        }),
        [only] => single(prompt, only, rest),
        _ => pairs(prompt, split_words(prompt, rest)?),
    }
}

/// Like [`parse_arguments`], for words a shell already split (`rho mcp
/// prompt`): one argument takes the words joined by single blanks;
/// several read each word as one `key=value` pair, quotes already
/// removed.
pub fn arguments_from_words(
    prompt: &Prompt,
    words: &[String],
) -> Result<BTreeMap<String, String>, PromptArgsError> {
    match prompt.arguments.as_slice() {
        [] if words.is_empty() => Ok(BTreeMap::new()),
        [] => Err(PromptArgsError::TakesNone {
            prompt: prompt.name.clone(),
        }),
        [only] => single(prompt, only, words.join(" ").trim()),
        _ => pairs(prompt, words.to_vec()),
    }
}

fn single(
    prompt: &Prompt,
    only: &PromptArgument,
    value: &str,
) -> Result<BTreeMap<String, String>, PromptArgsError> {
    let mut out = BTreeMap::new();
    if value.is_empty() {
        if only.required {
            return Err(missing(prompt, vec![only.name.clone()]));
        }
        return Ok(out);
    }
    out.insert(only.name.clone(), value.to_owned());
    Ok(out)
}

fn missing(prompt: &Prompt, missing: Vec<String>) -> PromptArgsError {
    PromptArgsError::Missing {
        prompt: prompt.name.clone(),
        missing,
        arguments: prompt.argument_list(),
    }
}

fn pairs(prompt: &Prompt, words: Vec<String>) -> Result<BTreeMap<String, String>, PromptArgsError> {
    let mut out = BTreeMap::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Err(PromptArgsError::NotKeyValue {
                prompt: prompt.name.clone(),
                word,
                arguments: prompt.argument_list(),
            });
        };
        if !prompt.arguments.iter().any(|a| a.name == key) {
            return Err(PromptArgsError::Unknown {
                prompt: prompt.name.clone(),
                key: key.to_owned(),
                arguments: prompt.argument_list(),
            });
        }
        if out.insert(key.to_owned(), value.to_owned()).is_some() {
            return Err(PromptArgsError::Repeated {
                prompt: prompt.name.clone(),
                key: key.to_owned(),
            });
        }
    }
    let absent: Vec<String> = prompt
        .arguments
        .iter()
        .filter(|a| a.required && !out.contains_key(&a.name))
        .map(|a| a.name.clone())
        .collect();
    if !absent.is_empty() {
        return Err(missing(prompt, absent));
    }
    Ok(out)
}

/// Splits a line into words: blanks separate them, `'...'` is literal,
/// `"..."` keeps blanks with `\"` and `\\` escaped, and an unquoted
/// backslash keeps the next character.
fn split_words(prompt: &Prompt, line: &str) -> Result<Vec<String>, PromptArgsError> {
    let unclosed = |quote| PromptArgsError::UnclosedQuote {
        prompt: prompt.name.clone(),
        quote,
    };
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(unclosed('\'')),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(unclosed('"')),
                        },
                        Some(c) => w.push(c),
                        None => return Err(unclosed('"')),
                    }
                }
            }
            '\\' => {
                let w = word.get_or_insert_with(String::new);
                if let Some(next) = chars.next() {
                    w.push(next);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// The argument value a cursor is in (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueUnderCursor {
    /// The argument's name.
    pub argument: String,
    /// Its value from its start up to the cursor, quotes removed.
    pub typed: String,
    /// Where the whole value is written (bytes of the argument text),
    /// quotes included: what a pick replaces.
    pub span: std::ops::Range<usize>,
    /// The other arguments given, by name.
    pub context: BTreeMap<String, String>,
}

impl ValueUnderCursor {
    /// The completion query for this value of `prompt`'s argument.
    pub fn query(&self, prompt: &Prompt) -> crate::features::completions::Query {
        crate::features::completions::Query {
            reference: crate::features::completions::CompletionRef::Prompt {
                name: prompt.name.clone(),
            },
            argument: self.argument.clone(),
            value: self.typed.clone(),
            context: self.context.clone(),
        }
    }
}

/// One word of an argument text as typed: where it is written, and its
/// characters with quotes removed, each with the byte offset just after
/// it in the text.
struct Word {
    start: usize,
    end: usize,
    chars: Vec<(usize, char)>,
    /// Its last quote is not closed (yet).
    open: bool,
}

impl Word {
    /// The unquoted `=` that splits the word, as an index into `chars`.
    fn equals(&self) -> Option<usize> {
        self.chars.iter().position(|&(_, c)| c == '=')
    }

    fn text(chars: &[(usize, char)]) -> String {
        chars.iter().map(|&(_, c)| c).collect()
    }
}

/// Splits like [`split_words`], but never fails (a quote not closed yet
/// runs to the end) and keeps where each character was written.
fn words_with_spans(line: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut word: Option<Word> = None;
    let mut chars = line.char_indices().peekable();
    let after = |at: usize, c: char| at + c.len_utf8();
    while let Some((at, c)) = chars.next() {
        if c.is_whitespace() {
            words.extend(word.take());
            continue;
        }
        let w = word.get_or_insert_with(|| Word {
            start: at,
            end: at,
            chars: Vec::new(),
            open: false,
        });
        w.end = after(at, c);
        match c {
            '\'' => {
                w.open = true;
                for (at, c) in chars.by_ref() {
                    w.end = after(at, c);
                    if c == '\'' {
                        w.open = false;
                        break;
                    }
                    w.chars.push((w.end, c));
                }
            }
            '"' => {
                w.open = true;
                while let Some((at, c)) = chars.next() {
                    w.end = after(at, c);
                    match c {
                        '"' => {
                            w.open = false;
                            break;
                        }
                        '\\' if matches!(chars.peek(), Some((_, '"' | '\\'))) => {
                            if let Some((at, c)) = chars.next() {
                                w.end = after(at, c);
                                w.chars.push((w.end, c));
                            }
                        }
                        c => w.chars.push((w.end, c)),
                    }
                }
            }
            '\\' => {
                if let Some((at, c)) = chars.next() {
                    w.end = after(at, c);
                    w.chars.push((w.end, c));
                }
            }
            c => w.chars.push((w.end, c)),
        }
    }
    words.extend(word);
    words
}

/// Which argument value of `prompt` the cursor (a byte offset into
/// `text`, the arguments after the command) is in; `None` when it is in
/// none: in a key, between words, after an unknown key, or the prompt
/// takes no arguments.
pub fn value_under_cursor(prompt: &Prompt, text: &str, cursor: usize) -> Option<ValueUnderCursor> {
    if cursor > text.len() || !text.is_char_boundary(cursor) {
        return None;
    }
    match prompt.arguments.as_slice() {
        [] => None,
        // One argument: the whole text is its value, as typed.
        [only] => {
            let start = text.len() - text.trim_start().len();
            let end = text.trim_end().len().max(cursor);
            (cursor >= start).then(|| ValueUnderCursor {
                argument: only.name.clone(),
                typed: text[start..cursor].to_owned(),
                span: start..end,
                context: BTreeMap::new(),
            })
        }
        _ => {
            let words = words_with_spans(text);
            let known = |key: &str| prompt.arguments.iter().any(|a| a.name == key);
            let here = words
                .iter()
                .position(|w| w.start <= cursor && cursor <= w.end)?;
            let word = &words[here];
            let equals = word.equals()?;
            let (equals_end, _) = word.chars[equals];
            if cursor < equals_end {
                return None;
            }
            let argument = Word::text(&word.chars[..equals]);
            if !known(&argument) {
                return None;
            }
            let value = &word.chars[equals + 1..];
            let typed_to = value.iter().take_while(|&&(end, _)| end <= cursor).count();
            // A quote still open runs to the end of the text: what follows
            // the cursor's own run of non-blanks is other arguments still
            // to be closed off, not this value.
            let end = if word.open {
                cursor
                    + text[cursor..]
                        .find(char::is_whitespace)
                        .unwrap_or(text.len() - cursor)
            } else {
                word.end
            };
            let context = words
                .iter()
                .enumerate()
                .filter(|&(at, _)| at != here)
                .filter_map(|(_, w)| {
                    let eq = w.equals()?;
                    let key = Word::text(&w.chars[..eq]);
                    (known(&key) && key != argument).then(|| (key, Word::text(&w.chars[eq + 1..])))
                })
                .collect();
            Some(ValueUnderCursor {
                typed: Word::text(&value[..typed_to]),
                argument,
                span: equals_end..end,
                context,
            })
        }
    }
}

/// `text` with the value `at` names replaced by `pick` (double-quoted
/// when it holds a blank, a quote or a backslash, unless the prompt takes
/// one argument, whose value is the text as typed), and the cursor's new
/// place: just after the value.
pub fn replace_value(
    prompt: &Prompt,
    text: &str,
    at: &ValueUnderCursor,
    pick: &str,
) -> (String, usize) {
    let needs_quotes = prompt.arguments.len() > 1
        && pick.contains(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '\\'));
    let written = if needs_quotes {
        format!("\"{}\"", pick.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        pick.to_owned()
    };
    let start = at.span.start.min(text.len());
    let end = at.span.end.clamp(start, text.len());
    let line = format!("{}{written}{}", &text[..start], &text[end..]);
    (line, start + written.len())
}

/// Who a prompt message is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// The user.
    User,
    /// The assistant: prior context, not a request.
    Assistant,
}

/// One message of a `prompts/get` result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PromptMessage {
    /// Who the server says it is from.
    pub role: Role,
    /// The content block, as sent.
    pub content: Value,
}

/// A `prompts/get` result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GetPromptResult {
    /// The server's description of what it returned, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    /// Reads a `prompts/get` result. A message with a role other than
    /// `user` or `assistant`, or without `content`, makes the result
    /// malformed: guessing who said it would mislabel it to the model.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let Some(Value::Array(items)) = value.get("messages") else {
            return Err(ShapeError(
                "prompts/get result has no `messages` array".into(),
            ));
        };
        let mut messages = Vec::with_capacity(items.len());
        for (at, item) in items.iter().enumerate() {
            let role = match item.get("role").and_then(Value::as_str) {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some(other) => {
                    return Err(ShapeError(format!(
                        "prompts/get message {at} has role `{other}`, not user or assistant"
                    )));
                }
                None => {
                    return Err(ShapeError(format!(
                        "prompts/get message {at} has no `role`"
                    )));
                }
            };
            let Some(content) = item.get("content") else {
                return Err(ShapeError(format!(
                    "prompts/get message {at} has no `content`"
                )));
            };
            messages.push(PromptMessage {
                role,
                content: content.clone(),
            });
        }
        Ok(Self {
            description: text(value, "description"),
            messages,
        })
    }
}

/// The line that introduces a message from the assistant in a flattened
/// turn.
pub const ASSISTANT_LABEL: &str = "[assistant]";

/// The one user turn a `prompts/get` result becomes: every message in
/// order, blank-line separated, assistant messages labelled, blocks
/// rendered as tool results are, capped at `max_output_bytes`.
pub fn flatten(result: &GetPromptResult, max_output_bytes: usize) -> String {
    let mut parts = Vec::with_capacity(result.messages.len());
    for message in &result.messages {
        // A message holds one block (older servers) or, in newer
        // revisions, an array of them.
        let content = match &message.content {
            Value::Array(blocks) => blocks.clone(),
            block => vec![block.clone()],
        };
        let rendered = content::render(&CallToolResult {
            content,
            structured_content: None,
            is_error: false,
            other: serde_json::Map::new(),
        })
        .model_text;
        parts.push(match message.role {
            Role::User => rendered,
            Role::Assistant => format!("{ASSISTANT_LABEL}\n{rendered}"),
        });
    }
    cap_output(&parts.join("\n\n"), max_output_bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(args: &[(&str, bool)]) -> Prompt {
        Prompt {
            name: "p".into(),
            title: None,
            description: None,
            arguments: args
                .iter()
                .map(|(name, required)| PromptArgument {
                    name: (*name).into(),
                    title: None,
                    description: None,
                    required: *required,
                })
                .collect(),
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    /// `text` with `|` marking the cursor: the text and the offset.
    fn at_cursor(marked: &str) -> (String, usize) {
        let cursor = marked.find('|').expect("a cursor");
        (marked.replacen('|', "", 1), cursor)
    }

    #[test]
    fn the_value_under_the_cursor_is_named_with_what_is_typed_and_the_context() {
        let triage = prompt(&[("id", true), ("severity", false)]);
        let (text, cursor) = at_cursor("id=4821 severity=hi|");
        let at = value_under_cursor(&triage, &text, cursor).expect("in a value");
        assert_eq!(at.argument, "severity");
        assert_eq!(at.typed, "hi");
        assert_eq!(at.context, map(&[("id", "4821")]));
        let query = at.query(&triage);
        assert_eq!(query.value, "hi");
        assert_eq!(query.context, map(&[("id", "4821")]));
        // Mid-value: typed up to the cursor, the whole value replaced.
        let (text, cursor) = at_cursor("id=48|21 severity=high");
        let at = value_under_cursor(&triage, &text, cursor).expect("in a value");
        assert_eq!((at.argument.as_str(), at.typed.as_str()), ("id", "48"));
        assert_eq!(&text[at.span.clone()], "4821");
        // Right after `=`: an empty value is typed.
        let (text, cursor) = at_cursor("severity=| id=1");
        let at = value_under_cursor(&triage, &text, cursor).expect("in a value");
        assert_eq!((at.argument.as_str(), at.typed.as_str()), ("severity", ""));
        // In a key, between words, after an unknown key: in no value.
        for marked in ["sev|erity=hi", "id=1 | severity=hi", "town=Par|", "|"] {
            let (text, cursor) = at_cursor(marked);
            assert_eq!(value_under_cursor(&triage, &text, cursor), None, "{marked}");
        }
        assert_eq!(value_under_cursor(&prompt(&[]), "", 0), None);
    }

    #[test]
    fn picking_replaces_that_value_alone_and_quotes_what_needs_it() {
        let triage = prompt(&[("id", true), ("severity", false), ("title", false)]);
        let (text, cursor) = at_cursor("id=4821 severity=hi| title='a b'");
        let at = value_under_cursor(&triage, &text, cursor).expect("in a value");
        let (line, cursor) = replace_value(&triage, &text, &at, "high");
        assert_eq!(line, "id=4821 severity=high title='a b'");
        assert_eq!(&line[..cursor], "id=4821 severity=high");
        // A quoted value, unclosed as it is being typed.
        let (text, cursor) = at_cursor("title=\"two wo| id=1");
        let at = value_under_cursor(&triage, &text, cursor).expect("in a value");
        assert_eq!(at.typed, "two wo");
        let (line, _) = replace_value(&triage, &text, &at, "two words, \"quoted\"");
        assert_eq!(
            line, "title=\"two words, \\\"quoted\\\"\" id=1",
            "the rest stays"
        );
        let parsed = parse_arguments(&triage, &line).expect("parses");
        assert_eq!(parsed["title"], "two words, \"quoted\"");
        assert_eq!(parsed["id"], "1");
        // A closed quoted value: typed unquoted, replaced quotes and all.
        let (text, cursor) = at_cursor("id=1 title=\"a |b\"");
        let at = value_under_cursor(&triage, &text, cursor).expect("in a value");
        assert_eq!(at.typed, "a ");
        assert_eq!(&text[at.span.clone()], "\"a b\"");
        let (line, _) = replace_value(&triage, &text, &at, "c");
        assert_eq!(line, "id=1 title=c");
    }

    #[test]
    fn with_one_argument_the_whole_text_is_the_value_under_the_cursor() {
        let search = prompt(&[("query", true)]);
        let (text, cursor) = at_cursor("  how do ses|sions");
        let at = value_under_cursor(&search, &text, cursor).expect("in the value");
        assert_eq!(at.argument, "query");
        assert_eq!(at.typed, "how do ses");
        assert!(at.context.is_empty());
        let (line, cursor) = replace_value(&search, &text, &at, "how do sessions resume");
        assert_eq!(line, "  how do sessions resume", "as typed, no quotes");
        assert_eq!(cursor, line.len());
    }

    #[test]
    fn one_argument_takes_the_whole_rest_of_the_line_as_typed() {
        let p = prompt(&[("query", true)]);
        assert_eq!(
            parse_arguments(&p, "  how do sessions \"resume\" a=b  ").expect("parses"),
            map(&[("query", "how do sessions \"resume\" a=b")])
        );
        let words = ["how".to_owned(), "do".to_owned(), "x=1".to_owned()];
        assert_eq!(
            arguments_from_words(&p, &words).expect("parses"),
            map(&[("query", "how do x=1")])
        );
    }

    #[test]
    fn one_required_argument_left_out_is_named() {
        let p = prompt(&[("query", true)]);
        let err = parse_arguments(&p, "   ").expect_err("missing");
        assert_eq!(
            err.to_string(),
            "prompt `p` needs argument: query; its arguments: query (required)"
        );
        let optional = prompt(&[("query", false)]);
        assert_eq!(parse_arguments(&optional, "").expect("none"), map(&[]));
    }

    #[test]
    fn several_arguments_read_key_value_pairs_with_quotes() {
        let p = prompt(&[("id", true), ("severity", false), ("note", false)]);
        assert_eq!(
            parse_arguments(
                &p,
                r#"id=4821 severity='very high' note="say \"hi\" \\ ok""#
            )
            .expect("parses"),
            map(&[
                ("id", "4821"),
                ("severity", "very high"),
                ("note", r#"say "hi" \ ok"#)
            ])
        );
        assert_eq!(
            parse_arguments(&p, r"id=a\ b").expect("escaped blank"),
            map(&[("id", "a b")])
        );
        // A value may hold `=`: the word splits at its first one.
        assert_eq!(
            parse_arguments(&p, "id=a=b").expect("parses"),
            map(&[("id", "a=b")])
        );
    }

    #[test]
    fn several_arguments_name_what_is_missing_unknown_repeated_or_unpaired() {
        let p = prompt(&[("city", true), ("state", false)]);
        let missing = parse_arguments(&p, "state=Texas").expect_err("no city");
        assert!(
            matches!(&missing, PromptArgsError::Missing { missing, .. } if missing == &["city"])
        );
        assert_eq!(
            missing.to_string(),
            "prompt `p` needs argument: city; its arguments: city (required), state"
        );
        let unknown = parse_arguments(&p, "city=Paris town=x").expect_err("unknown");
        assert_eq!(
            unknown.to_string(),
            "prompt `p` has no argument `town`; its arguments: city (required), state"
        );
        let repeated = parse_arguments(&p, "city=a city=b").expect_err("twice");
        assert!(matches!(repeated, PromptArgsError::Repeated { key, .. } if key == "city"));
        let bare = parse_arguments(&p, "Paris").expect_err("no =");
        assert!(matches!(bare, PromptArgsError::NotKeyValue { word, .. } if word == "Paris"));
        let open = parse_arguments(&p, "city=\"Paris").expect_err("unclosed");
        assert!(matches!(
            open,
            PromptArgsError::UnclosedQuote { quote: '"', .. }
        ));
        let two = prompt(&[("a", true), ("b", true)]);
        let both = arguments_from_words(&two, &[]).expect_err("both missing");
        assert_eq!(
            both.to_string(),
            "prompt `p` needs arguments: a, b; its arguments: a (required), b (required)"
        );
    }

    #[test]
    fn a_prompt_without_arguments_refuses_words() {
        let p = prompt(&[]);
        assert_eq!(parse_arguments(&p, " ").expect("none"), map(&[]));
        assert!(matches!(
            parse_arguments(&p, "x"),
            Err(PromptArgsError::TakesNone { .. })
        ));
        assert!(matches!(
            arguments_from_words(&p, &["x".into()]),
            Err(PromptArgsError::TakesNone { .. })
        ));
    }

    #[test]
    fn commands_split_at_the_second_colon_and_quote_names_with_blanks() {
        let c = parse_command("/mcp:docs:search how do sessions resume").expect("parses");
        assert_eq!(
            (c.server, c.prompt.as_str(), c.rest),
            ("docs", "search", "how do sessions resume")
        );
        let c = parse_command("/mcp:docs:search:fast  x").expect("colon in name");
        assert_eq!((c.prompt.as_str(), c.rest), ("search:fast", "x"));
        let c = parse_command(r#"/mcp:docs:"weekly \"big\" report" id=1"#).expect("quoted");
        assert_eq!(
            (c.prompt.as_str(), c.rest),
            (r#"weekly "big" report"#, "id=1")
        );
        assert_eq!(
            parse_command("/mcp:docs"),
            Err(CommandError::NoPrompt {
                server: "docs".into()
            })
        );
        assert_eq!(
            parse_command("/mcp:docs: x"),
            Err(CommandError::NoPrompt {
                server: "docs".into()
            })
        );
        assert_eq!(parse_command("/help"), Err(CommandError::NotPromptCommand));
        assert_eq!(
            parse_command("/mcp:docs:\"open"),
            Err(CommandError::UnclosedName)
        );
        for name in [
            "search",
            "a:b",
            "two words",
            "q\"uote",
            "\"q",
            "back\\x1b",
            "a \\ b",
            "",
        ] {
            let line = format!("{} rest", command_name("docs", name));
            let c = parse_command(&line).expect("round trip");
            assert_eq!((c.prompt.as_str(), c.rest), (name, "rest"), "{line}");
        }
        assert_eq!(
            command_name("h", "evil\\x1b]0;pwned"),
            "/mcp:h:evil\\x1b]0;pwned",
            "an escaped name is written as shown"
        );
    }

    #[test]
    fn listed_prompts_read_arguments_and_refuse_nameless_ones() {
        let p = Prompt::from_value(&json!({
            "name": "args-prompt", "title": "Arguments Prompt",
            "arguments": [{"name": "city", "required": true}, {"name": "state"}]
        }))
        .expect("prompt");
        assert_eq!(p.argument_list(), "city (required), state");
        for (bad, why) in [
            (json!({"title": "x"}), "name"),
            (
                json!({"name": "x", "arguments": [{"required": true}]}),
                "name",
            ),
            (json!({"name": "x", "arguments": 3}), "arguments"),
        ] {
            let error = Prompt::from_value(&bad).expect_err("refused");
            assert!(error.0.contains(why), "{bad}: {error}");
        }
    }

    #[test]
    fn get_params_serialize_as_the_schema_names_them() {
        let params = GetPromptParams {
            name: "args-prompt".into(),
            arguments: map(&[("city", "Paris")]),
        };
        assert_eq!(
            serde_json::to_value(&params).expect("json"),
            json!({"name": "args-prompt", "arguments": {"city": "Paris"}})
        );
        let bare = GetPromptParams {
            name: "simple".into(),
            arguments: BTreeMap::new(),
        };
        assert_eq!(
            serde_json::to_value(&bare).expect("json"),
            json!({"name": "simple"})
        );
    }

    #[test]
    fn flattening_labels_the_assistant_and_describes_binary_blocks() {
        let result = GetPromptResult::from_value(&json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Look at this:"}},
                {"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": "AAAA"}},
                {"role": "assistant", "content": {"type": "text", "text": "I see a pixel."}},
                {"role": "user", "content": {"type": "resource", "resource": {"uri": "demo://b", "mimeType": "text/plain", "blob": "AAAA"}}}
            ]
        }))
        .expect("result");
        let turn = flatten(&result, 64 * 1024);
        assert_eq!(
            turn,
            "Look at this:\n\n[image image/png, 3 B]\n\n[assistant]\nI see a pixel.\n\n[resource demo://b] [resource text/plain, 3 B]"
        );
        assert!(!turn.contains("AAAA"), "no base64 reaches the model");
    }

    #[test]
    fn flattening_caps_the_turn_and_says_so() {
        let long = "x".repeat(10_000);
        let result = GetPromptResult::from_value(&json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": long}}]
        }))
        .expect("result");
        let turn = flatten(&result, 1000);
        assert!(turn.len() < 1200, "{}", turn.len());
        assert!(turn.contains("max_output_bytes"), "{turn}");
        assert_eq!(flatten(&result, 20_000), long);
    }

    #[test]
    fn results_with_unknown_roles_or_no_messages_are_malformed() {
        for (bad, why) in [
            (json!({}), "messages"),
            (
                json!({"messages": [{"role": "system", "content": {}}]}),
                "role",
            ),
            (json!({"messages": [{"role": "user"}]}), "content"),
        ] {
            let error = GetPromptResult::from_value(&bad).expect_err("malformed");
            assert!(error.0.contains(why), "{bad}: {error}");
        }
    }
}
