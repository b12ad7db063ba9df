//! A tool's `outputSchema` contract: the schema compiled once per tool
//! (never fetching a `$ref`), and each structured result checked against
//! it, with violations named briefly enough to show.

use super::*;

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
    /// [module docs](super)). The error names the tool, for the caller to
    /// fail the call with.
    pub fn compile(tool_name: &str, schema: &Value) -> Result<Self, SchemaError> {
        if let Some(Value::String(dialect)) = schema.get("$schema")
            && boon::Draft::from_url(dialect).is_none()
        {
            return Err(SchemaError::UnsupportedDialect {
                tool: tool_name.into(),
                dialect: dialect.clone(),
            });
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
/// `isError` is exempt (see the [module docs](super)). Otherwise the result
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
        Some(compiled) if compiled.tool == tool.name && compiled.source == **declared => {
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
