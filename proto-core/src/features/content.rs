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

/// Renders a `tools/call` result for the model and for the tool card,
/// following the rules in the [module docs](self). Never fails: a
/// malformed block becomes an `[unreadable ...]` note.
pub fn render(result: &CallToolResult) -> RenderedResult {
    let mut model: Vec<String> = Vec::new();
    let mut card = Card::default();
    let structured = result.structured_content.as_ref();
    if let Some(value) = structured {
        model.push(value.to_string());
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
    if let Some(value) = structured {
        if !saw_text {
            card.blocks.insert(
                0,
                CardBlock::Structured {
                    value: value.clone(),
                },
            );
        }
    }
    RenderedResult {
        model_text: model.join("\n"),
        card,
        is_error: result.is_error,
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

// ---------------------------------------------------------------------------
// outputSchema
// ---------------------------------------------------------------------------

/// The synthetic, unresolvable URL a tool's output schema is compiled under.
const SCHEMA_URL: &str = "http://rho.invalid/outputSchema.json";

/// How many validation errors a mismatch names.
const SHOWN_VIOLATIONS: usize = 3;

/// The longest validation message kept, in characters: messages quote the
/// peer's values, which can be long.
const MESSAGE_CHARS: usize = 160;

/// A tool's `outputSchema`, compiled once and checked against every result.
pub struct OutputSchema {
    tool: String,
    source: Value,
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl std::fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchema")
            .field("tool", &self.tool)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// Compiles `schema`, the `outputSchema` of tool `tool_name`, without
    /// any IO: references outside the schema fail (see the
    /// [module docs](self)). The error names the tool, for the caller to
    /// fail the call with.
    pub fn compile(tool_name: &str, schema: &Value) -> Result<Self, SchemaError> {
        if let Some(Value::String(dialect)) = schema.get("$schema") {
            if boon::Draft::from_url(dialect).is_none() {
                return Err(SchemaError::UnsupportedDialect {
                    tool: tool_name.into(),
                    dialect: dialect.clone(),
                });
            }
        }
        let uncompilable = |error: &boon::CompileError| SchemaError::Uncompilable {
            tool: tool_name.into(),
            reason: compile_reason(error),
        };
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler.use_loader(Box::new(RefuseEveryUrl));
        compiler
            .add_resource(SCHEMA_URL, schema.clone())
            .map_err(|e| uncompilable(&e))?;
        let mut schemas = boon::Schemas::new();
        let index = compiler
            .compile(SCHEMA_URL, &mut schemas)
            .map_err(|e| uncompilable(&e))?;
        Ok(Self {
            tool: tool_name.into(),
            source: schema.clone(),
            schemas,
            index,
        })
    }

    /// The tool this schema belongs to.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The schema as the server declared it.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Checks `structured` against the schema. A mismatch names the first
    /// few violations with their instance paths, in a fixed order.
    pub fn validate(&self, structured: &Value) -> Result<(), SchemaError> {
        let Err(error) = self.schemas.validate(structured, self.index) else {
            return Ok(());
        };
        let mut violations = violations(&error);
        let more = violations.len().saturating_sub(SHOWN_VIOLATIONS);
        violations.truncate(SHOWN_VIOLATIONS);
        Err(SchemaError::Mismatch {
            tool: self.tool.clone(),
            violations,
            more,
        })
    }
}

/// Holds a result to its tool's `outputSchema`.
///
/// A tool without an `outputSchema` has no contract, and a result with
/// `isError` is exempt (see the [module docs](self)). Otherwise the result
/// must carry `structuredContent` that validates. `schema` is the compiled
/// form of `tool.output_schema`; when it is absent, or was compiled from
/// another tool or an earlier version of this tool's schema (a
/// `tools/list_changed` revision), the declared schema is compiled afresh.
pub fn check_output(
    tool: &Tool,
    schema: Option<&OutputSchema>,
    result: &CallToolResult,
) -> Result<(), OutputError> {
    if result.is_error {
        return Ok(());
    }
    let Some(declared) = &tool.output_schema else {
        return Ok(());
    };
    let Some(structured) = &result.structured_content else {
        return Err(OutputError::MissingStructuredContent {
            tool: tool.name.clone(),
        });
    };
    match schema {
        Some(compiled) if compiled.tool == tool.name && compiled.source == *declared => {
            compiled.validate(structured)?;
        }
        _ => OutputSchema::compile(&tool.name, declared)?.validate(structured)?,
    }
    Ok(())
}

/// Why an `outputSchema` could not be used, or was not met. The server is
/// at fault in every case.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SchemaError {
    /// `$schema` names a dialect rho does not support.
    #[error(
        "tool `{tool}` declares an outputSchema in dialect `{dialect}`, which rho does not \
         support (supported: JSON Schema 2020-12, 2019-09, draft-07, draft-06, draft-04)"
    )]
    UnsupportedDialect {
        /// The tool's name on its server.
        tool: String,
        /// The `$schema` it declared.
        dialect: String,
    },
    /// The schema is not valid JSON Schema, or refers outside itself.
    #[error("tool `{tool}` declares an outputSchema that does not compile: {reason}")]
    Uncompilable {
        /// The tool's name on its server.
        tool: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// `structuredContent` does not validate against the schema.
    #[error(
        "tool `{tool}` returned structuredContent that does not match its outputSchema: {}",
        describe(.violations, *.more)
    )]
    Mismatch {
        /// The tool's name on its server.
        tool: String,
        /// The first few violations, ordered by instance path then message.
        violations: Vec<Violation>,
        /// How many more violations there were.
        more: usize,
    },
}

/// Why a result broke its tool's `outputSchema` contract.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputError {
    /// The tool declares an `outputSchema` but the result has no
    /// `structuredContent`.
    #[error("tool `{tool}` declares an outputSchema but returned no structuredContent")]
    MissingStructuredContent {
        /// The tool's name on its server.
        tool: String,
    },
    /// The schema did not compile, or the structured content did not match.
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

/// One way a value broke a schema.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Violation {
    /// JSON Pointer to the offending value; empty for the whole value.
    pub instance_path: String,
    /// What is wrong, in the validator's words (shortened if long).
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.instance_path.is_empty() {
            write!(f, "(root): {}", self.message)
        } else {
            write!(f, "{}: {}", self.instance_path, self.message)
        }
    }
}

/// `a; b; c (and 2 more)`.
fn describe(violations: &[Violation], more: usize) -> String {
    let mut out = violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if more > 0 {
        let _ = write!(out, " (and {more} more)");
    }
    out
}

/// The leaf errors of a validation failure, deduplicated and sorted so the
/// same value and schema always give the same message.
fn violations(error: &boon::ValidationError<'_, '_>) -> Vec<Violation> {
    fn collect(error: &boon::ValidationError<'_, '_>, out: &mut Vec<Violation>) {
        if error.causes.is_empty() {
            out.push(Violation {
                instance_path: error.instance_location.to_string(),
                message: shortened(&error.kind.to_string()),
            });
        }
        for cause in &error.causes {
            collect(cause, out);
        }
    }
    let mut out = Vec::new();
    collect(error, &mut out);
    out.sort();
    out.dedup();
    out
}

/// A validator message on one line, at most [`MESSAGE_CHARS`] long, naming
/// places in the schema by JSON Pointer (`#/properties/a`) rather than by
/// the synthetic URL.
fn shortened(message: &str) -> String {
    let message = message
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(SCHEMA_URL, "#")
        .replace("##", "#");
    match message.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    }
}

/// A compile error in words a person can act on, without the synthetic URL.
fn compile_reason(error: &boon::CompileError) -> String {
    match error {
        boon::CompileError::ValidationError { src, .. } => {
            let mut violations = violations(src);
            let more = violations.len().saturating_sub(SHOWN_VIOLATIONS);
            violations.truncate(SHOWN_VIOLATIONS);
            format!(
                "it is not valid JSON Schema: {}",
                describe(&violations, more)
            )
        }
        boon::CompileError::LoadUrlError { url, .. } => {
            format!("it refers to `{url}`; rho resolves references only inside the schema itself")
        }
        other => shortened(&format!("{other:#}")),
    }
}

/// The loader installed in every compile: refuses every URL, so compiling
/// a schema can never read a file or reach the network.
struct RefuseEveryUrl;

impl boon::UrlLoader for RefuseEveryUrl {
    fn load(&self, url: &str) -> Result<Value, Box<dyn std::error::Error>> {
        Err(format!("refused to load `{url}`: the core loads nothing").into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(content: Value) -> CallToolResult {
        CallToolResult::from_value(json!({ "content": content })).expect("result")
    }

    /// Base64 text that decodes to exactly `bytes` bytes.
    fn base64_of(bytes: usize) -> String {
        let mut s = "A".repeat(bytes / 3 * 4);
        match bytes % 3 {
            1 => s.push_str("AA=="),
            2 => s.push_str("AAA="),
            _ => {}
        }
        s
    }

    fn image(mime: &str, data: &str) -> Value {
        json!({ "type": "image", "mimeType": mime, "data": data })
    }

    #[test]
    fn text_block_is_the_text_for_model_and_card() {
        let r = render(&result(json!([
            { "type": "text", "text": "one" },
            { "type": "text", "text": "two" },
        ])));
        assert_eq!(r.model_text, "one\ntwo");
        assert_eq!(
            r.card.blocks,
            vec![
                CardBlock::Text { text: "one".into() },
                CardBlock::Text { text: "two".into() }
            ]
        );
        assert!(!r.is_error);
    }

    #[test]
    fn image_is_a_descriptor_for_the_model_and_the_image_on_the_card() {
        let data = base64_of(41_200);
        let r = render(&result(json!([image("image/png", &data)])));
        assert_eq!(r.model_text, "[image image/png, 41.2 KB]");
        assert_eq!(
            r.card.blocks,
            vec![CardBlock::Image {
                mime: "image/png".into(),
                size: 41_200,
                kept: true
            }]
        );
        assert_eq!(
            r.card.image,
            Some(CardImage {
                mime: "image/png".into(),
                data_base64: data
            })
        );
    }

    #[test]
    fn audio_is_a_descriptor_for_model_and_card() {
        let r = render(&result(json!([
            { "type": "audio", "mimeType": "audio/wav", "data": base64_of(1_100_000) }
        ])));
        assert_eq!(r.model_text, "[audio audio/wav, 1.1 MB]");
        assert_eq!(
            r.card.blocks,
            vec![CardBlock::Audio {
                mime: "audio/wav".into(),
                size: 1_100_000
            }]
        );
        assert_eq!(r.card.image, None);
    }

    #[test]
    fn text_resource_is_its_uri_then_its_body() {
        let r = render(&result(json!([{
            "type": "resource",
            "resource": { "uri": "file:///src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}" }
        }])));
        assert_eq!(r.model_text, "[resource file:///src/main.rs]\nfn main() {}");
        assert_eq!(
            r.card.blocks,
            vec![CardBlock::ResourceText {
                uri: "file:///src/main.rs".into(),
                mime: Some("text/x-rust".into()),
                text: "fn main() {}".into()
            }]
        );
    }

    #[test]
    fn blob_resource_is_described_and_a_non_image_is_not_kept() {
        let r = render(&result(json!([{
            "type": "resource",
            "resource": { "uri": "db://dump", "mimeType": "application/zip", "blob": base64_of(2048) }
        }])));
        assert_eq!(
            r.model_text,
            "[resource db://dump] [resource application/zip, 2.0 KB]"
        );
        assert_eq!(
            r.card.blocks,
            vec![CardBlock::ResourceBlob {
                uri: "db://dump".into(),
                mime: Some("application/zip".into()),
                size: 2048,
                kept: false
            }]
        );
        assert_eq!(r.card.image, None);
    }

    #[test]
    fn blob_resource_without_mime_is_described_as_octet_stream() {
        let r = render(&result(json!([{
            "type": "resource", "resource": { "uri": "x:y", "blob": "AAAA" }
        }])));
        assert_eq!(
            r.model_text,
            "[resource x:y] [resource application/octet-stream, 3 B]"
        );
    }

    #[test]
    fn image_blob_resource_is_a_card_image_candidate() {
        let data = base64_of(10);
        let r = render(&result(json!([{
            "type": "resource",
            "resource": { "uri": "shot://1", "mimeType": "image/jpeg", "blob": data }
        }])));
        assert_eq!(
            r.model_text,
            "[resource shot://1] [resource image/jpeg, 10 B]"
        );
        assert_eq!(
            r.card.image,
            Some(CardImage {
                mime: "image/jpeg".into(),
                data_base64: data
            })
        );
        assert!(matches!(
            r.card.blocks[0],
            CardBlock::ResourceBlob { kept: true, .. }
        ));
    }

    #[test]
    fn resource_link_is_uri_name_and_description() {
        let r = render(&result(json!([
            { "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs",
              "description": "entry point", "mimeType": "text/x-rust" },
            { "type": "resource_link", "uri": "file:///b.rs", "name": "b.rs" },
            { "type": "resource_link", "uri": "file:///c.rs" },
        ])));
        assert_eq!(
            r.model_text,
            "[resource_link file:///a.rs] a.rs: entry point\n\
             [resource_link file:///b.rs] b.rs\n\
             [resource_link file:///c.rs]"
        );
        assert_eq!(
            r.card.blocks[0],
            CardBlock::ResourceLink {
                uri: "file:///a.rs".into(),
                name: Some("a.rs".into()),
                description: Some("entry point".into()),
                mime: Some("text/x-rust".into())
            }
        );
    }

    #[test]
    fn unknown_block_type_is_named_not_dumped() {
        let r = render(&result(json!([{ "type": "hologram", "data": "AAAA" }])));
        assert_eq!(r.model_text, "[unsupported hologram block]");
        assert_eq!(
            r.card.blocks,
            vec![CardBlock::Unsupported {
                kind: "hologram".into()
            }]
        );
    }

    #[test]
    fn malformed_blocks_render_as_unreadable_notes() {
        let r = render(&result(json!([
            { "type": "image", "mimeType": "image/png" },
            { "type": "audio", "data": "AAAA" },
            { "type": "text", "text": 3 },
            { "type": "resource", "resource": { "text": "body" } },
            { "type": "resource", "resource": { "uri": "x:y" } },
            { "type": "resource" },
            { "type": "resource_link" },
            { "type": "image", "mimeType": "image/png", "data": "not base64!" },
            { "text": "no type" },
            "a bare string",
            { "type": "text", "text": "still here" },
        ])));
        assert_eq!(
            r.model_text,
            "[unreadable image block: missing `data`]\n\
             [unreadable audio block: missing `mimeType`]\n\
             [unreadable text block: `text` is not a string]\n\
             [unreadable resource block: missing `uri`]\n\
             [unreadable resource block: `x:y` has neither `text` nor `blob`]\n\
             [unreadable resource block: missing `resource`]\n\
             [unreadable resource_link block: missing `uri`]\n\
             [unreadable image block: `data` is not base64]\n\
             [unreadable block: no `type`]\n\
             [unreadable block: not an object]\n\
             still here"
        );
        assert_eq!(
            r.card.blocks[0],
            CardBlock::Unreadable {
                kind: Some("image".into()),
                reason: "missing `data`".into()
            }
        );
        assert_eq!(r.card.image, None);
    }

    #[test]
    fn only_the_first_fitting_image_is_kept() {
        let first = base64_of(30);
        let second = base64_of(60);
        let r = render(&result(json!([
            image("image/png", &first),
            image("image/gif", &second),
        ])));
        assert_eq!(r.card.image.as_ref().map(|i| &i.data_base64), Some(&first));
        assert_eq!(
            r.card.blocks,
            vec![
                CardBlock::Image {
                    mime: "image/png".into(),
                    size: 30,
                    kept: true
                },
                CardBlock::Image {
                    mime: "image/gif".into(),
                    size: 60,
                    kept: false
                },
            ]
        );
        assert_eq!(
            r.model_text,
            "[image image/png, 30 B]\n[image image/gif, 60 B]"
        );
    }

    #[test]
    fn an_oversized_first_image_is_skipped_and_a_later_fitting_one_kept() {
        let oversized = "A".repeat(IMAGE_BUDGET + 4);
        let exactly_budget = "A".repeat(IMAGE_BUDGET);
        let r = render(&result(json!([
            image("image/png", &oversized),
            image("image/png", &exactly_budget),
        ])));
        assert!(matches!(
            r.card.blocks[0],
            CardBlock::Image { kept: false, .. }
        ));
        assert!(matches!(
            r.card.blocks[1],
            CardBlock::Image { kept: true, .. }
        ));
        assert_eq!(
            r.card.image.map(|i| i.data_base64.len()),
            Some(IMAGE_BUDGET)
        );
        // Decoded sizes: (4 MiB + 4) * 3/4 and 4 MiB * 3/4.
        assert_eq!(
            r.model_text,
            "[image image/png, 3.1 MB]\n[image image/png, 3.1 MB]"
        );
    }

    #[test]
    fn no_base64_ever_reaches_the_model() {
        let payload = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk".repeat(2000);
        let r = render(&result(json!([
            image("image/png", &payload),
            image("image/png", &payload),
            { "type": "audio", "mimeType": "audio/mpeg", "data": payload },
            { "type": "resource", "resource": { "uri": "a:b", "mimeType": "image/png", "blob": payload } },
            { "type": "resource", "resource": { "uri": "a:c", "blob": payload } },
        ])));
        assert!(!r.model_text.contains(&payload[..64]));
        assert!(r.model_text.len() < 400, "{}", r.model_text);
    }

    #[test]
    fn structured_content_replaces_the_mirrored_text_for_the_model() {
        let r = render(
            &CallToolResult::from_value(json!({
                "content": [
                    { "type": "text", "text": "{\"temperature\": 22.5}" },
                    image("image/png", "AAAA"),
                ],
                "structuredContent": { "temperature": 22.5, "conditions": "cloudy" }
            }))
            .expect("result"),
        );
        assert_eq!(
            r.model_text,
            "{\"temperature\":22.5,\"conditions\":\"cloudy\"}\n[image image/png, 3 B]"
        );
        // The card, which costs no context, keeps the text.
        assert_eq!(
            r.card.blocks[0],
            CardBlock::Text {
                text: "{\"temperature\": 22.5}".into()
            }
        );
        assert_eq!(r.card.blocks.len(), 2);
    }

    #[test]
    fn structured_only_result_shows_the_json_on_the_card() {
        let r = render(
            &CallToolResult::from_value(json!({ "structuredContent": { "ok": true } }))
                .expect("result"),
        );
        assert_eq!(r.model_text, "{\"ok\":true}");
        assert_eq!(
            r.card.blocks,
            vec![CardBlock::Structured {
                value: json!({ "ok": true })
            }]
        );
    }

    #[test]
    fn is_error_is_carried_through() {
        let r = render(
            &CallToolResult::from_value(json!({
                "content": [{ "type": "text", "text": "boom" }], "isError": true
            }))
            .expect("result"),
        );
        assert!(r.is_error);
        assert_eq!(r.model_text, "boom");
    }

    #[test]
    fn card_serializes_with_a_type_tag() {
        let r = render(&result(json!([image("image/png", "AAAA")])));
        let json = serde_json::to_value(&r.card).expect("serializes");
        assert_eq!(
            json,
            json!({
                "blocks": [{ "type": "image", "mime": "image/png", "size": 3, "kept": true }],
                "image": { "mime": "image/png", "data_base64": "AAAA" }
            })
        );
    }

    #[test]
    fn decoded_len_accounts_for_padding_and_whitespace() {
        assert_eq!(decoded_len(""), Some(0));
        assert_eq!(decoded_len("QQ=="), Some(1));
        assert_eq!(decoded_len("QUI="), Some(2));
        assert_eq!(decoded_len("QUJD"), Some(3));
        assert_eq!(decoded_len("QQ"), Some(1), "unpadded");
        assert_eq!(decoded_len("QUI"), Some(2), "unpadded");
        assert_eq!(decoded_len("QUJD\nREVG"), Some(6), "MIME line breaks");
        assert_eq!(decoded_len("-_-_"), Some(3), "URL-safe alphabet");
        assert_eq!(decoded_len("Q"), None, "a lone symbol");
        assert_eq!(decoded_len("QQ==QQ=="), None, "data after padding");
        assert_eq!(decoded_len("Q==="), None);
        assert_eq!(decoded_len("QU*D"), None);
        for n in 0..40 {
            assert_eq!(decoded_len(&base64_of(n)), Some(n));
        }
    }

    #[test]
    fn human_size_boundaries() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(999), "999 B");
        assert_eq!(human_size(1000), "1.0 KB");
        assert_eq!(human_size(1049), "1.0 KB");
        assert_eq!(human_size(1050), "1.1 KB", "half rounds up");
        assert_eq!(human_size(41_200), "41.2 KB");
        assert_eq!(human_size(999_949), "999.9 KB");
        assert_eq!(human_size(999_950), "1.0 MB", "never 1000.0 KB");
        assert_eq!(human_size(1_100_000), "1.1 MB");
        assert_eq!(human_size(IMAGE_BUDGET), "4.2 MB");
        assert_eq!(human_size(999_950_000), "1.0 GB");
        assert_eq!(human_size(usize::MAX), "18.4 EB");
    }

    // -- outputSchema ------------------------------------------------------

    fn weather_tool(output_schema: Value) -> Tool {
        Tool::from_value(&json!({
            "name": "get_weather",
            "inputSchema": { "type": "object" },
            "outputSchema": output_schema,
        }))
        .expect("tool")
    }

    fn weather_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "temperature": { "type": "number" },
                "conditions": { "type": "string" },
                "humidity": { "type": "number" }
            },
            "required": ["temperature", "conditions", "humidity"]
        })
    }

    fn structured(value: Value) -> CallToolResult {
        CallToolResult::from_value(json!({ "content": [], "structuredContent": value }))
            .expect("result")
    }

    #[test]
    fn valid_structured_content_passes() {
        let tool = weather_tool(weather_schema());
        let compiled = OutputSchema::compile("get_weather", &weather_schema()).expect("compiles");
        let ok = structured(json!({ "temperature": 22.5, "conditions": "cloudy", "humidity": 65 }));
        assert_eq!(check_output(&tool, Some(&compiled), &ok), Ok(()));
        assert_eq!(check_output(&tool, None, &ok), Ok(()));
    }

    #[test]
    fn invalid_structured_content_names_the_violations_with_paths() {
        let tool = weather_tool(weather_schema());
        let compiled = OutputSchema::compile("get_weather", &weather_schema()).expect("compiles");
        let bad = structured(json!({ "temperature": "hot", "conditions": 3 }));
        let err = check_output(&tool, Some(&compiled), &bad).expect_err("invalid");
        let OutputError::Schema(SchemaError::Mismatch {
            tool: name,
            violations,
            more,
        }) = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!(name, "get_weather");
        assert_eq!(*more, 0);
        let paths: Vec<&str> = violations
            .iter()
            .map(|v| v.instance_path.as_str())
            .collect();
        assert_eq!(paths, ["", "/conditions", "/temperature"]);
        let message = err.to_string();
        assert!(
            message.starts_with(
                "tool `get_weather` returned structuredContent that does not match its \
                 outputSchema: (root): "
            ),
            "{message}"
        );
        assert!(message.contains("humidity"), "{message}");
        assert!(
            message.contains("/temperature: want number, but got string"),
            "{message}"
        );
        assert!(!message.contains("rho.invalid"), "{message}");
    }

    #[test]
    fn many_violations_are_cut_to_a_few() {
        let schema = json!({ "type": "array", "items": { "type": "string" } });
        let compiled = OutputSchema::compile("t", &schema).expect("compiles");
        let err = compiled
            .validate(&json!([1, 2, 3, 4, 5]))
            .expect_err("invalid");
        let message = err.to_string();
        assert!(message.ends_with("(and 2 more)"), "{message}");
        assert_eq!(message.matches("want string").count(), 3, "{message}");
        // Deterministic: the same failure gives the same words.
        assert_eq!(
            compiled
                .validate(&json!([1, 2, 3, 4, 5]))
                .expect_err("invalid"),
            err
        );
    }

    #[test]
    fn missing_structured_content_fails_when_a_schema_is_declared() {
        let tool = weather_tool(weather_schema());
        let text_only = result(json!([{ "type": "text", "text": "22.5 and cloudy" }]));
        let err = check_output(&tool, None, &text_only).expect_err("missing");
        assert_eq!(
            err.to_string(),
            "tool `get_weather` declares an outputSchema but returned no structuredContent"
        );
    }

    #[test]
    fn error_results_are_exempt_from_the_schema() {
        let tool = weather_tool(weather_schema());
        let failed = CallToolResult::from_value(json!({
            "content": [{ "type": "text", "text": "city not found" }], "isError": true
        }))
        .expect("result");
        assert_eq!(check_output(&tool, None, &failed), Ok(()));
        let failed_with_other_shape = CallToolResult::from_value(json!({
            "content": [], "structuredContent": { "error": "nope" }, "isError": true
        }))
        .expect("result");
        assert_eq!(check_output(&tool, None, &failed_with_other_shape), Ok(()));
    }

    #[test]
    fn tools_without_an_output_schema_have_no_contract() {
        let tool = Tool::from_value(&json!({ "name": "t", "inputSchema": { "type": "object" } }))
            .expect("tool");
        assert_eq!(check_output(&tool, None, &result(json!([]))), Ok(()));
    }

    #[test]
    fn a_stale_compiled_schema_is_replaced_by_the_declared_one() {
        let old = OutputSchema::compile("get_weather", &json!({ "type": "string" })).expect("old");
        let tool = weather_tool(weather_schema());
        let ok = structured(json!({ "temperature": 1, "conditions": "x", "humidity": 2 }));
        assert_eq!(check_output(&tool, Some(&old), &ok), Ok(()));
    }

    #[test]
    fn default_dialect_is_2020_12() {
        // `prefixItems` exists only from 2020-12 on.
        let schema = json!({ "type": "array", "prefixItems": [{ "type": "string" }] });
        let compiled = OutputSchema::compile("t", &schema).expect("compiles");
        assert_eq!(compiled.validate(&json!(["a", 1])), Ok(()));
        assert!(matches!(
            compiled.validate(&json!([1])),
            Err(SchemaError::Mismatch { .. })
        ));
    }

    #[test]
    fn draft_07_schema_is_honoured() {
        // In draft-07 an array-valued `items` is a tuple, and `prefixItems`
        // means nothing.
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array",
            "items": [{ "type": "string" }, { "type": "number" }],
            "prefixItems": [{ "type": "boolean" }]
        });
        let compiled = OutputSchema::compile("t", &schema).expect("compiles");
        assert_eq!(compiled.validate(&json!(["a", 1])), Ok(()));
        assert!(matches!(
            compiled.validate(&json!([1, "a"])),
            Err(SchemaError::Mismatch { .. })
        ));
        // The same schema without `$schema` is 2020-12, where array `items`
        // is not a schema at all.
        let mut as_2020 = schema.clone();
        as_2020.as_object_mut().expect("object").remove("$schema");
        assert!(matches!(
            OutputSchema::compile("t", &as_2020),
            Err(SchemaError::Uncompilable { .. })
        ));
    }

    #[test]
    fn unknown_dialect_is_refused_by_name() {
        let schema = json!({ "$schema": "https://example.com/my-dialect", "type": "object" });
        let err = OutputSchema::compile("t", &schema).expect_err("unsupported");
        assert_eq!(
            err,
            SchemaError::UnsupportedDialect {
                tool: "t".into(),
                dialect: "https://example.com/my-dialect".into()
            }
        );
    }

    #[test]
    fn a_ref_to_a_file_fails_to_compile_without_reading_it() {
        for reference in [
            "file:///etc/passwd",
            "file:///etc/hostname#/x",
            "other.json",
            "https://example.com/schema.json",
        ] {
            let schema = json!({ "properties": { "a": { "$ref": reference } } });
            let err = OutputSchema::compile("leaky", &schema).expect_err("refused");
            let message = err.to_string();
            assert!(
                message.starts_with(
                    "tool `leaky` declares an outputSchema that does not compile: it refers to `"
                ),
                "{message}"
            );
        }
    }

    #[test]
    fn references_inside_the_schema_resolve() {
        let schema = json!({
            "$defs": { "celsius": { "type": "number" } },
            "properties": { "t": { "$ref": "#/$defs/celsius" } }
        });
        let compiled = OutputSchema::compile("t", &schema).expect("compiles");
        assert_eq!(compiled.validate(&json!({ "t": 1 })), Ok(()));
        assert!(matches!(
            compiled.validate(&json!({ "t": "1" })),
            Err(SchemaError::Mismatch { .. })
        ));
    }

    #[test]
    fn an_invalid_schema_is_an_error_naming_the_tool() {
        let err = OutputSchema::compile("broken", &json!({ "type": 12 })).expect_err("invalid");
        let message = err.to_string();
        assert!(
            message.starts_with(
                "tool `broken` declares an outputSchema that does not compile: it is not valid \
                 JSON Schema: /type: "
            ),
            "{message}"
        );
        let tool = weather_tool(json!({ "type": "object", "pattern": "(" }));
        let err = check_output(&tool, None, &structured(json!({}))).expect_err("invalid");
        assert!(
            err.to_string()
                .starts_with("tool `get_weather` declares an outputSchema that does not compile"),
            "{err}"
        );
    }

    #[test]
    fn output_schema_can_be_shared_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<OutputSchema>();
    }
}
