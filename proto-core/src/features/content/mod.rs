//! What a `tools/call` result means: the text the model reads, the tool
//! card a person sees, and whether the result keeps the tool's
//! `outputSchema` contract.
//!
//! [`render`] turns each content block into what it is rather than a JSON
//! envelope. Text stays text; an image, an audio clip or a binary resource
//! becomes a short descriptor such as `[image image/png, 41.2 KB]`, so
//! binary payloads never reach the model as base64. The model text joins
//! one entry per block with `"\n"`. [`check_output`] holds a server to the
//! `outputSchema` it declared, using an [`OutputSchema`] compiled once per
//! tool.
//!
//! # What the model reads and what the card shows
//!
//! | block | model text | card |
//! |---|---|---|
//! | `text` | the text | the text |
//! | `image` | `[image <mime>, <size>]` | the image (see the budget below) |
//! | `audio` | `[audio <mime>, <size>]` | the descriptor |
//! | `resource`, text | `[resource <uri>]`, a newline, the body | the same |
//! | `resource`, blob | `[resource <uri>] [resource <mime>, <size>]` | the image, if it is one |
//! | `resource_link` | `[resource_link <uri>] <name>: <description>` | the same |
//! | another type | `[unsupported <type> block]` | the type's name |
//!
//! Sizes are decoded bytes, in decimal units (see [`human_size`]), computed
//! from the length of the base64 text: nothing is decoded just to be
//! measured. A blob resource without a `mimeType` is described as
//! `application/octet-stream`, the MIME name for "unknown binary".
//!
//! A block missing a field it needs (an image without `data`, a resource
//! without `uri`, base64 that is not base64) renders as a short
//! `[unreadable <type> block: <why>]` note instead of failing the result:
//! one bad block should not cost the model the rest of the answer.
//!
//! # The output cap
//!
//! [`render_capped`] is [`render`] with the model text cut at the
//! server's `max_output_bytes` ([`crate::features::limit`]), as every
//! host puts a tool result in front of the model; the card is not cut
//! (it costs no context).
//!
//! # One image per card
//!
//! The card shows one image. The first image candidate (an `image` block,
//! or a blob resource whose MIME type is `image/*`) whose base64 text fits
//! [`IMAGE_BUDGET`] is kept in [`Card::image`]; later or oversized images
//! are described with `kept: false` and their bytes are not retained, so a
//! result full of screenshots costs one screenshot of memory.
//!
//! # Structured content
//!
//! When a result carries `structuredContent`, the model reads that JSON
//! (compact serialization) first. Servers mirror it in a text block for
//! older clients, so every `text` block is dropped from the model text
//! rather than costing the context twice. Non-text blocks still add their
//! descriptors after the JSON, because an image or a resource is not a
//! copy of the structured result and the model should know it exists.
//! The card, which costs no context, keeps its text blocks; it shows the
//! structured JSON itself only when the result has no text block at all,
//! so a structured-only result never shows an empty card.
//!
//! A structured result that only wraps a value, `{"result": ...}` and
//! nothing else ([`unwrapped_result`]), is read as that value: a string as
//! is, anything else as its JSON. The Python SDK and fastmcp wrap every
//! non-object return so (a `-> str` tool's markdown would otherwise reach
//! the model as one escaped line, and a tool returning JSON text doubly
//! escaped). The `outputSchema` contract is checked on the result as sent;
//! only what the model reads changes.
//!
//! # Output schemas, and why compiling one does no IO
//!
//! An `outputSchema` without `$schema` is JSON Schema 2020-12, the MCP
//! 2025-11-25 default dialect. A `$schema` naming 2019-09, draft-07,
//! draft-06 or draft-04 is honoured; any other dialect is refused with
//! [`SchemaError::UnsupportedDialect`], as MCP asks of unsupported
//! dialects. Format keywords follow each dialect's own default (annotations
//! only from 2019-09 on).
//!
//! The validator (`boon`) would by default read `file://` references from
//! disk. This core does no IO, and a server must not be able to make the
//! client read `/etc/passwd` by writing a `$ref`. So every compile installs
//! a loader that refuses every URL, and the schema is added as an in-memory
//! document under the synthetic URL `http://rho.invalid/outputSchema.json`
//! (`.invalid` can never resolve). References inside the schema resolve;
//! the standard meta-schemas ship inside the validator; anything else fails
//! to compile, naming the tool.
//!
//! # Implementation note: results with `isError`
//!
//! A result with `isError: true` is exempt from the schema. MCP 2025-11-25
//! reports tool execution errors in the result itself, with "actionable
//! feedback that language models can use to self-correct", and its own
//! example error result carries no `structuredContent`. The schema
//! describes the success output; failing an error result for not matching
//! it would replace the server's explanation with a schema complaint.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::wire::protocol::{CallToolResult, Tool};

mod schema;
#[cfg(test)]
mod tests;

pub use schema::*;

/// The largest image, in base64-encoded bytes as sent, that the card keeps.
pub const IMAGE_BUDGET: usize = 4 * 1024 * 1024;

/// The MIME type a blob resource without `mimeType` is described with.
const UNKNOWN_BINARY: &str = "application/octet-stream";

/// A `tools/call` result, rendered once for the model and once for the card.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RenderedResult {
    /// What the model reads: text and descriptors, never base64.
    pub model_text: String,
    /// What the tool card shows.
    pub card: Card,
    /// The server reported the call itself as failed (`isError`).
    pub is_error: bool,
}

/// What a tool card shows: one entry per content block, in order, and at
/// most one image.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Card {
    /// The blocks, in the order the server sent them.
    pub blocks: Vec<CardBlock>,
    /// The one image the card keeps: the first candidate within
    /// [`IMAGE_BUDGET`].
    pub image: Option<CardImage>,
}

/// One block of a tool card. Serialized with a `"type"` tag in snake case.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CardBlock {
    /// A text block, as sent.
    Text {
        /// The text.
        text: String,
    },
    /// An image block. Its bytes are in [`Card::image`] when `kept`.
    Image {
        /// The declared MIME type.
        mime: String,
        /// Decoded size in bytes.
        size: usize,
        /// Whether this is the image in [`Card::image`].
        kept: bool,
    },
    /// An audio block: shown as a descriptor, its bytes never kept.
    Audio {
        /// The declared MIME type.
        mime: String,
        /// Decoded size in bytes.
        size: usize,
    },
    /// An embedded text resource.
    ResourceText {
        /// The resource's URI.
        uri: String,
        /// The declared MIME type, when sent.
        mime: Option<String>,
        /// The body.
        text: String,
    },
    /// An embedded binary resource. Its bytes are in [`Card::image`] when
    /// `kept` (only `image/*` blobs can be).
    ResourceBlob {
        /// The resource's URI.
        uri: String,
        /// The declared MIME type, when sent.
        mime: Option<String>,
        /// Decoded size in bytes.
        size: usize,
        /// Whether this is the image in [`Card::image`].
        kept: bool,
    },
    /// A link to a resource the server did not embed.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// The server's name for it.
        name: Option<String>,
        /// The server's description of it.
        description: Option<String>,
        /// The declared MIME type, when sent.
        mime: Option<String>,
    },
    /// The result's `structuredContent`, shown only when no text block
    /// mirrors it.
    Structured {
        /// The structured content, as sent.
        value: Value,
    },
    /// A block of a type this client does not know.
    Unsupported {
        /// The block's `type`.
        kind: String,
    },
    /// A block that could not be read (a field missing or mistyped).
    Unreadable {
        /// The block's `type`, when it had one.
        kind: Option<String>,
        /// What was wrong with it.
        reason: String,
    },
}

/// The one image a card keeps, exactly as the server encoded it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CardImage {
    /// The declared MIME type.
    pub mime: String,
    /// The base64 text, as sent.
    pub data_base64: String,
}

/// [`render`], the model text capped at `max_output_bytes` (saying so
/// when it is cut).
pub fn render_capped(result: &CallToolResult, max_output_bytes: usize) -> RenderedResult {
    let mut rendered = render(result);
    if let std::borrow::Cow::Owned(capped) =
        crate::features::limit::cap_output(&rendered.model_text, max_output_bytes)
    {
        rendered.model_text = capped;
    }
    rendered
}

/// Renders a `tools/call` result for the model and for the tool card,
/// following the rules in the [module docs](self). Never fails: a
/// malformed block becomes an `[unreadable ...]` note.
pub fn render(result: &CallToolResult) -> RenderedResult {
    let mut model: Vec<String> = Vec::new();
    let mut card = Card::default();
    let structured = result.structured_content.as_ref();
    if let Some(value) = structured {
        model.push(match unwrapped_result(value) {
            Some(Value::String(text)) => text.clone(),
            Some(inner) => inner.to_string(),
            None => value.to_string(),
        });
    }
    let mut saw_text = false;
    for block in &result.content {
        let block = Block::read(block);
        let is_text = block.is_text();
        saw_text |= is_text;
        let (line, card_block) = block.render(&mut card.image);
        if !(is_text && structured.is_some()) {
            model.push(line);
        }
        card.blocks.push(card_block);
    }
    if let Some(value) = structured
        && !saw_text
    {
        card.blocks.insert(
            0,
            CardBlock::Structured {
                value: value.clone(),
            },
        );
    }
    RenderedResult {
        model_text: model.join("\n"),
        card,
        is_error: result.is_error,
    }
}

/// The value inside a structured result that is only a wrapper: an
/// object whose one member is `result`, which is how the Python SDK and
/// fastmcp send every tool that returns a non-object (a `-> str` tool, a
/// list, a number), beside an `outputSchema` of that one property. The
/// name says nothing and the value is the answer, so the model reads the
/// value (see the [module docs](self)). `None` for any other value.
pub fn unwrapped_result(structured: &Value) -> Option<&Value> {
    match structured {
        Value::Object(map) if map.len() == 1 => map.get("result"),
        _ => None,
    }
}

/// A byte count for people: `512 B`, `41.2 KB`, `1.1 MB`.
///
/// Units are decimal (1 KB = 1000 bytes), with one decimal rounded half up,
/// as in rho's documentation of results. A value that would round to
/// `1000.0` of a unit is shown in the next one (`1.0 MB`, not
/// `1000.0 KB`). Note that [`IMAGE_BUDGET`] is binary: 4 MiB shows as
/// `4.2 MB`.
pub fn human_size(bytes: usize) -> String {
    const UNITS: [&str; 6] = ["KB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    // u128: `bytes * 10` must not overflow for any usize.
    let bytes = bytes as u128;
    let tenths_of = |scale: u128| (bytes * 10 + scale / 2) / scale;
    let mut scale: u128 = 1000;
    let mut unit = 0;
    let mut tenths = tenths_of(scale);
    while tenths >= 10_000 && unit + 1 < UNITS.len() {
        unit += 1;
        scale *= 1000;
        tenths = tenths_of(scale);
    }
    format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
}

/// One content block as read from the wire, borrowing from it.
enum Block<'a> {
    Text(&'a str),
    Image {
        mime: &'a str,
        data: &'a str,
        size: usize,
    },
    Audio {
        mime: &'a str,
        size: usize,
    },
    ResourceText {
        uri: &'a str,
        mime: Option<&'a str>,
        text: &'a str,
    },
    ResourceBlob {
        uri: &'a str,
        mime: Option<&'a str>,
        data: &'a str,
        size: usize,
    },
    ResourceLink {
        uri: &'a str,
        name: Option<&'a str>,
        description: Option<&'a str>,
        mime: Option<&'a str>,
    },
    Unsupported(&'a str),
    Unreadable {
        kind: Option<&'a str>,
        reason: String,
    },
}

impl<'a> Block<'a> {
    /// Reads one block; whatever is wrong with it becomes `Unreadable`.
    fn read(value: &'a Value) -> Self {
        let Value::Object(obj) = value else {
            return Self::Unreadable {
                kind: None,
                reason: "not an object".into(),
            };
        };
        let Some(kind) = obj.get("type").and_then(Value::as_str) else {
            return Self::Unreadable {
                kind: None,
                reason: "no `type`".into(),
            };
        };
        Self::read_typed(kind, obj).unwrap_or_else(|reason| Self::Unreadable {
            kind: Some(kind),
            reason,
        })
    }

    fn read_typed(kind: &'a str, obj: &'a Map<String, Value>) -> Result<Self, String> {
        Ok(match kind {
            "text" => Self::Text(required(obj, "text")?),
            "image" => {
                let mime = required(obj, "mimeType")?;
                let data = required(obj, "data")?;
                Self::Image {
                    mime,
                    data,
                    size: measured(data)?,
                }
            }
            "audio" => {
                let mime = required(obj, "mimeType")?;
                Self::Audio {
                    mime,
                    size: measured(required(obj, "data")?)?,
                }
            }
            "resource" => {
                let Some(Value::Object(resource)) = obj.get("resource") else {
                    return Err("missing `resource`".into());
                };
                let uri = required(resource, "uri")?;
                let mime = optional(resource, "mimeType");
                if let Some(text) = optional(resource, "text") {
                    Self::ResourceText { uri, mime, text }
                } else if let Some(data) = optional(resource, "blob") {
                    Self::ResourceBlob {
                        uri,
                        mime,
                        data,
                        size: measured(data)?,
                    }
                } else {
                    return Err(format!("`{uri}` has neither `text` nor `blob`"));
                }
            }
            "resource_link" => Self::ResourceLink {
                uri: required(obj, "uri")?,
                name: optional(obj, "name"),
                description: optional(obj, "description"),
                mime: optional(obj, "mimeType"),
            },
            other => Self::Unsupported(other),
        })
    }

    fn is_text(&self) -> bool {
        matches!(
            self,
            Self::Text(_)
                | Self::Unreadable {
                    kind: Some("text"),
                    ..
                }
        )
    }

    /// The model's line and the card's block. An image candidate takes the
    /// card's image slot when the slot is free and the image fits.
    fn render(self, image: &mut Option<CardImage>) -> (String, CardBlock) {
        match self {
            Self::Text(text) => (text.to_owned(), CardBlock::Text { text: text.into() }),
            Self::Image { mime, data, size } => (
                format!("[image {mime}, {}]", human_size(size)),
                CardBlock::Image {
                    mime: mime.into(),
                    size,
                    kept: keep_image(image, mime, data),
                },
            ),
            Self::Audio { mime, size } => (
                format!("[audio {mime}, {}]", human_size(size)),
                CardBlock::Audio {
                    mime: mime.into(),
                    size,
                },
            ),
            Self::ResourceText { uri, mime, text } => (
                format!("[resource {uri}]\n{text}"),
                CardBlock::ResourceText {
                    uri: uri.into(),
                    mime: mime.map(Into::into),
                    text: text.into(),
                },
            ),
            Self::ResourceBlob {
                uri,
                mime,
                data,
                size,
            } => {
                let shown = mime.unwrap_or(UNKNOWN_BINARY);
                let kept = match mime {
                    Some(mime) if is_image(mime) => keep_image(image, mime, data),
                    _ => false,
                };
                (
                    format!("[resource {uri}] [resource {shown}, {}]", human_size(size)),
                    CardBlock::ResourceBlob {
                        uri: uri.into(),
                        mime: mime.map(Into::into),
                        size,
                        kept,
                    },
                )
            }
            Self::ResourceLink {
                uri,
                name,
                description,
                mime,
            } => {
                let mut line = format!("[resource_link {uri}]");
                match (name, description) {
                    (Some(name), Some(description)) => {
                        let _ = write!(line, " {name}: {description}");
                    }
                    (Some(one), None) | (None, Some(one)) => {
                        let _ = write!(line, " {one}");
                    }
                    (None, None) => {}
                }
                (
                    line,
                    CardBlock::ResourceLink {
                        uri: uri.into(),
                        name: name.map(Into::into),
                        description: description.map(Into::into),
                        mime: mime.map(Into::into),
                    },
                )
            }
            Self::Unsupported(kind) => (
                format!("[unsupported {kind} block]"),
                CardBlock::Unsupported { kind: kind.into() },
            ),
            Self::Unreadable { kind, reason } => (
                match kind {
                    Some(kind) => format!("[unreadable {kind} block: {reason}]"),
                    None => format!("[unreadable block: {reason}]"),
                },
                CardBlock::Unreadable {
                    kind: kind.map(Into::into),
                    reason,
                },
            ),
        }
    }
}

/// Whether a MIME type names an image (`image/*`, any case).
fn is_image(mime: &str) -> bool {
    mime.get(..6)
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case("image/"))
}

/// Takes the card's image slot for this image if the slot is free and the
/// encoded bytes fit [`IMAGE_BUDGET`]; says whether it did.
fn keep_image(slot: &mut Option<CardImage>, mime: &str, data: &str) -> bool {
    if slot.is_some() || data.len() > IMAGE_BUDGET {
        return false;
    }
    *slot = Some(CardImage {
        mime: mime.into(),
        data_base64: data.into(),
    });
    true
}

/// A string field the block cannot do without.
fn required<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(format!("missing `{key}`")),
        Some(_) => Err(format!("`{key}` is not a string")),
    }
}

/// A string field the block may leave out.
fn optional<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// The decoded size of base64 text, as an unreadable-block reason when the
/// text is not base64.
fn measured(data: &str) -> Result<usize, String> {
    decoded_len(data).ok_or_else(|| "`data` is not base64".into())
}

/// The number of bytes base64 text decodes to, without decoding it; `None`
/// when it is not base64.
///
/// Both the standard and the URL-safe alphabet are accepted, and ASCII
/// whitespace is ignored. Padding `=` carries no data, so only the symbols
/// before it count: every 4 symbols are 3 bytes, and a trailing 2 or 3
/// symbols are 1 or 2 bytes (a lone trailing symbol cannot occur).
fn decoded_len(data: &str) -> Option<usize> {
    let mut symbols = 0usize;
    let mut padding = 0usize;
    for byte in data.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' | b'-' | b'_' => {
                if padding > 0 {
                    return None;
                }
                symbols += 1;
            }
            b'=' => {
                padding += 1;
                if padding > 2 {
                    return None;
                }
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => return None,
        }
    }
    let tail = match symbols % 4 {
        0 => 0,
        2 => 1,
        3 => 2,
        _ => return None,
    };
    Some(symbols / 4 * 3 + tail)
}
