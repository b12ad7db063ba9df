//! The skills extension (SEP-2640, `io.modelcontextprotocol/skills`):
//! the skill entries a server lists with `skills/list` (or returns for one
//! URI with `skills/get`), and the host's side of loading one: read its
//! `SKILL.md` when, and only when, the skill is loaded, verify the bytes
//! against the entry, then hand over the text.
//!
//! A server declares the extension in its capabilities
//! ([`crate::wire::protocol::ServerCapabilities::skills`]); the SEP
//! defines no client declaration, so rho sends none.
//!
//! # Lazy retrieval
//!
//! A host MUST NOT read a skill's files ahead of need: not on connection,
//! not on listing, not at approval. Listing ([`SkillListing`]) asks only
//! `skills/list`: an entry's `frontmatter` carries the name and
//! description a host shows. A skill's `SKILL.md` is read when the host
//! loads the skill ([`SkillEntry::load_request`], then
//! [`SkillEntry::verify_load`]); a supporting file when the host reads
//! it, through the [`LoadedSkill`] it belongs to
//! ([`LoadedSkill::file_request`], [`LoadedSkill::verify_file`]): the
//! loaded skill holds the entry it was loaded from, and only the files
//! that entry lists can be read under it.
//!
//! # Verification
//!
//! Every read of a listed file is checked in this order, and the first
//! failure refuses the content ([`SkillCheck`] names which):
//!
//! 1. the answer is one body, for the URI asked;
//! 2. its length in bytes (text as UTF-8, a blob decoded) is the entry's
//!    `size`, checked before hashing;
//! 3. its SHA-256 is the entry's `digest`;
//! 4. for `SKILL.md`: its YAML frontmatter, parsed ([`frontmatter`]),
//!    equals the entry's `frontmatter` field by field.
//!
//! Digests are unsigned and come from the server that sends the content:
//! a match shows the listing and the content agree, not that either is
//! trustworthy.
//!
//! # What rho declines
//!
//! An entry that breaks the SEP's shape (no `resources`, a malformed
//! digest, a file outside the skill's directory, no entry for `SKILL.md`
//! itself) is listed apart as invalid ([`SkillListing::invalid`]) and
//! cannot be loaded. A dynamic skill (`"resources": "dynamic"`) offers no
//! integrity, and a skill over the SEP's limits ([`MAX_FILES`],
//! [`MAX_TOTAL_BYTES`]) is past what every host must accept: rho may
//! decline both, and does, saying why.

pub mod frontmatter;

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest as _;

use crate::features::FeatureRequest;
use crate::features::resources::{ReadResourceParams, ReadResourceResult, ResourceContents};
use crate::wire::protocol::ShapeError;

/// The extension's identifier, the key of its capability in `extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/skills";

/// The most files a skill may list that every host must accept.
pub const MAX_FILES: usize = 512;

/// The most bytes in all a skill may list that every host must accept.
pub const MAX_TOTAL_BYTES: u64 = 16 * 1024 * 1024;

/// The most `skills/list` pages rho reads for one listing.
pub const MAX_LIST_PAGES: usize = 100;

/// The params of a `skills/list` request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListSkillsParams {
    /// The cursor of the page to read, from the last page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// The params of a `skills/get` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GetSkillParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

/// A SHA-256 digest, written `sha256:` and 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(sha2::Sha256::digest(bytes).into())
    }

    /// Reads `sha256:<64 lowercase hex>`; anything else is `None`.
    pub fn parse(text: &str) -> Option<Self> {
        let hex = text.strip_prefix("sha256:")?;
        if hex.len() != 64 || !hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(hex.as_bytes().chunks(2)) {
            let pair = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(pair, 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sha256:")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Sha256Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One file of a skill, as its entry lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkillFile {
    /// The file's resource URI.
    pub uri: String,
    /// The digest of its raw bytes.
    pub digest: Sha256Digest,
    /// Its length in bytes.
    pub size: u64,
}

/// A skill's files: listed with digests, or generated (unverifiable).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillFiles {
    /// Every file of the skill, `SKILL.md` included, each once.
    Listed(Vec<SkillFile>),
    /// `"resources": "dynamic"`: generated content, no digests.
    Dynamic,
}

/// One skill entry of `skills/list` or `skills/get`: the record a host
/// shows, and the one it verifies the skill's files against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md`, which identifies the skill on
    /// its server.
    pub uri: String,
    /// The `SKILL.md` frontmatter as the server rendered it in JSON;
    /// `name` and `description` are strings.
    pub frontmatter: Map<String, Value>,
    /// The skill's files.
    pub files: SkillFiles,
}

impl SkillEntry {
    /// Reads one entry; an entry that breaks the SEP's shape is an error
    /// that says how (see the module docs).
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let bad = |what: &str| ShapeError(what.to_owned());
        if !value.is_object() {
            return Err(bad("skill entry is not an object"));
        }
        let uri = value
            .get("uri")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("skill entry has no string `uri`"))?
            .to_owned();
        let bad = |what: String| ShapeError(format!("skill `{uri}`: {what}"));
        let Some(root) = uri.strip_suffix("/SKILL.md").filter(|r| !r.is_empty()) else {
            return Err(bad("its `uri` does not name a `SKILL.md`".into()));
        };
        let Some(Value::Object(frontmatter)) = value.get("frontmatter") else {
            return Err(bad("it has no `frontmatter` object".into()));
        };
        for field in ["name", "description"] {
            if !frontmatter.get(field).is_some_and(Value::is_string) {
                return Err(bad(format!("its frontmatter has no string `{field}`")));
            }
        }
        let files = match value.get("resources") {
            Some(Value::String(s)) if s == "dynamic" => SkillFiles::Dynamic,
            Some(Value::Array(items)) => {
                let mut files = Vec::with_capacity(items.len());
                let mut seen = BTreeSet::new();
                for item in items {
                    let file = skill_file(item).map_err(|e| bad(e.0))?;
                    if file.uri != uri && !file.uri.starts_with(&format!("{root}/")) {
                        return Err(bad(format!(
                            "it lists `{}`, which is outside the skill's directory",
                            file.uri
                        )));
                    }
                    if !seen.insert(file.uri.clone()) {
                        return Err(bad(format!("it lists `{}` twice", file.uri)));
                    }
                    files.push(file);
                }
                if !seen.contains(&uri) {
                    return Err(bad("its `resources` do not list its `SKILL.md`".into()));
                }
                SkillFiles::Listed(files)
            }
            Some(_) => {
                return Err(bad(
                    "its `resources` is neither an array nor \"dynamic\"".into()
                ));
            }
            None => return Err(bad("it has no `resources`".into())),
        };
        Ok(Self {
            frontmatter: frontmatter.clone(),
            uri,
            files,
        })
    }

    /// Reads a `skills/get` result: its `skill` entry.
    pub fn from_get_result(value: &Value) -> Result<Self, ShapeError> {
        let skill = value
            .get("skill")
            .ok_or_else(|| ShapeError("skills/get result has no `skill`".into()))?;
        Self::from_value(skill)
    }

    /// The skill's name (its frontmatter's `name`): a label, not unique.
    pub fn name(&self) -> &str {
        self.text_field("name")
    }

    /// What the skill is for (its frontmatter's `description`).
    pub fn description(&self) -> &str {
        self.text_field("description")
    }

    fn text_field(&self, field: &str) -> &str {
        self.frontmatter
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The skill's root directory: its `uri` without `/SKILL.md`, against
    /// which the skill's relative references resolve.
    pub fn root(&self) -> &str {
        self.uri.strip_suffix("/SKILL.md").unwrap_or(&self.uri)
    }

    /// The listed file at `uri`, if any.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        match &self.files {
            SkillFiles::Listed(files) => files.iter().find(|f| f.uri == uri),
            SkillFiles::Dynamic => None,
        }
    }

    /// The read that loads the skill: its `SKILL.md`, or why rho
    /// declines to load it at all (dynamic, or over the limits).
    pub fn load_request(&self) -> Result<FeatureRequest, SkillCheck> {
        let SkillFiles::Listed(files) = &self.files else {
            return Err(SkillCheck::Dynamic);
        };
        let bytes = files.iter().fold(0u64, |sum, f| sum.saturating_add(f.size));
        if files.len() > MAX_FILES || bytes > MAX_TOTAL_BYTES {
            return Err(SkillCheck::TooLarge {
                files: files.len(),
                bytes,
            });
        }
        Ok(read(&self.uri))
    }

    /// Verifies the `resources/read` result of the skill's `SKILL.md` (see
    /// the module docs): the loaded skill, or the check that failed. What
    /// fails is not to be used.
    pub fn verify_load(&self, result: &Value) -> Result<LoadedSkill, SkillCheck> {
        self.load_request()?;
        let bytes = self.verified(&self.uri, result)?;
        let text = String::from_utf8(bytes).map_err(|_| SkillCheck::Frontmatter {
            uri: self.uri.clone(),
            reason: "it is not UTF-8 text".into(),
        })?;
        let file_frontmatter =
            frontmatter::parse(&text).map_err(|reason| SkillCheck::Frontmatter {
                uri: self.uri.clone(),
                reason,
            })?;
        let fields = frontmatter::differences(&file_frontmatter, &self.frontmatter);
        if !fields.is_empty() {
            return Err(SkillCheck::FrontmatterMismatch {
                uri: self.uri.clone(),
                fields,
            });
        }
        Ok(LoadedSkill {
            entry: self.clone(),
            text,
        })
    }

    /// The bytes `result` carries for the listed file `uri`, verified.
    fn verified(&self, uri: &str, result: &Value) -> Result<Vec<u8>, SkillCheck> {
        let file = self.file(uri).ok_or_else(|| SkillCheck::Unlisted {
            uri: uri.to_owned(),
        })?;
        let unreadable = |reason: String| SkillCheck::Unreadable {
            uri: uri.to_owned(),
            reason,
        };
        let read = ReadResourceResult::from_value(result).map_err(|e| unreadable(e.0))?;
        let [body] = read.contents.as_slice() else {
            return Err(unreadable(format!(
                "the server sent {} bodies, not one",
                read.contents.len()
            )));
        };
        let (body_uri, bytes) = match body {
            ResourceContents::Text { uri, text, .. } => (uri, text.as_bytes().to_vec()),
            ResourceContents::Blob { uri, .. } => (
                uri,
                // `ReadResourceResult` has checked that it decodes.
                body.decoded().unwrap_or_default(),
            ),
        };
        if body_uri != uri {
            return Err(unreadable(format!("the server answered for `{body_uri}`")));
        }
        let read_size = bytes.len() as u64;
        if read_size != file.size {
            return Err(SkillCheck::SizeMismatch {
                uri: uri.to_owned(),
                listed: file.size,
                read: read_size,
            });
        }
        let digest = Sha256Digest::of(&bytes);
        if digest != file.digest {
            return Err(SkillCheck::DigestMismatch {
                uri: uri.to_owned(),
                listed: file.digest,
                read: digest,
            });
        }
        Ok(bytes)
    }
}

fn skill_file(value: &Value) -> Result<SkillFile, ShapeError> {
    let uri = value
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| ShapeError("a resource has no string `uri`".into()))?;
    let digest = value
        .get("digest")
        .and_then(Value::as_str)
        .and_then(Sha256Digest::parse)
        .ok_or_else(|| {
            ShapeError(format!(
                "resource `{uri}` has no `digest` of the form sha256:<64 lowercase hex digits>"
            ))
        })?;
    let size = value
        .get("size")
        .and_then(Value::as_u64)
        .ok_or_else(|| ShapeError(format!("resource `{uri}` has no byte `size`")))?;
    Ok(SkillFile {
        uri: uri.to_owned(),
        digest,
        size,
    })
}

fn read(uri: &str) -> FeatureRequest {
    FeatureRequest::ReadResource(ReadResourceParams {
        uri: uri.to_owned(),
    })
}

/// A skill loaded: its verified `SKILL.md`, and the entry it was loaded
/// from, which governs every read of its files while the host acts on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoadedSkill {
    /// The entry the skill was loaded from.
    pub entry: SkillEntry,
    /// The whole `SKILL.md`, verified.
    pub text: String,
}

impl LoadedSkill {
    /// The Markdown after the frontmatter: the skill's instructions.
    pub fn body(&self) -> &str {
        frontmatter::split(&self.text).map_or("", |(_, body)| body)
    }

    /// The read of the skill's file `uri`, refused when the entry does
    /// not list it (an unlisted file is a verification failure).
    pub fn file_request(&self, uri: &str) -> Result<FeatureRequest, SkillCheck> {
        self.entry
            .file(uri)
            .map(|f| read(&f.uri))
            .ok_or_else(|| SkillCheck::Unlisted {
                uri: uri.to_owned(),
            })
    }

    /// The file's bytes from its `resources/read` result, verified
    /// against the entry (checks 1 to 3 of the module docs).
    pub fn verify_file(&self, uri: &str, result: &Value) -> Result<Vec<u8>, SkillCheck> {
        self.entry.verified(uri, result)
    }
}

/// Which check refused a skill, or one of its files.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "check", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkillCheck {
    /// The entry lists no digests: nothing could be verified.
    #[error(
        "its entry lists no digests (`resources` is \"dynamic\"), so its files cannot be verified; rho loads only skills it can verify"
    )]
    Dynamic,
    /// The entry is over the SEP's per-skill limits.
    #[error(
        "its entry lists {files} files, {bytes} bytes in all: over the limits every host accepts ({MAX_FILES} files, {MAX_TOTAL_BYTES} bytes)"
    )]
    TooLarge {
        /// How many files it lists.
        files: usize,
        /// Their sizes summed.
        bytes: u64,
    },
    /// A file the entry does not list.
    #[error("`{uri}` is not one of the files the skill's entry lists")]
    Unlisted {
        /// The file's URI.
        uri: String,
    },
    /// The read's answer is not one body for the file.
    #[error("`{uri}` could not be verified: {reason}")]
    Unreadable {
        /// The file's URI.
        uri: String,
        /// What was wrong with the answer.
        reason: String,
    },
    /// The content's length is not the entry's `size`.
    #[error(
        "`{uri}` failed size verification: the entry lists {listed} bytes, the server sent {read}"
    )]
    SizeMismatch {
        /// The file's URI.
        uri: String,
        /// The entry's `size`.
        listed: u64,
        /// The length read.
        read: u64,
    },
    /// The content's SHA-256 is not the entry's `digest`.
    #[error(
        "`{uri}` failed digest verification: the entry lists {listed}, the content sent is {read}"
    )]
    DigestMismatch {
        /// The file's URI.
        uri: String,
        /// The entry's `digest`.
        listed: Sha256Digest,
        /// The digest of what was read.
        read: Sha256Digest,
    },
    /// `SKILL.md` has no frontmatter rho can compare.
    #[error("`{uri}` failed frontmatter verification: {reason}")]
    Frontmatter {
        /// The `SKILL.md` URI.
        uri: String,
        /// Why there is nothing to compare.
        reason: String,
    },
    /// `SKILL.md`'s frontmatter differs from the entry's.
    #[error(
        "`{uri}` failed frontmatter verification: its frontmatter differs from the entry's in {}",
        quoted(.fields)
    )]
    FrontmatterMismatch {
        /// The `SKILL.md` URI.
        uri: String,
        /// The fields that differ, by name.
        fields: Vec<String>,
    },
}

fn quoted(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An entry of a listing that breaks the SEP's shape: it cannot be
/// loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InvalidSkill {
    /// Its `uri`, when it has one.
    pub uri: Option<String>,
    /// What is wrong with it.
    pub reason: String,
}

/// A server's skills, read page by page from `skills/list`. Reading it
/// reads no skill file (see the module docs).
///
/// Drive it with [`SkillListing::first_request`], then hand each result
/// to [`SkillListing::add_page`], sending the request it returns until it
/// returns none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SkillListing {
    /// The entries, in the server's order.
    pub skills: Vec<SkillEntry>,
    /// The entries that cannot be loaded, and why.
    pub invalid: Vec<InvalidSkill>,
    /// Whether rho stopped before the last page ([`MAX_LIST_PAGES`], or a
    /// cursor seen before). A listing may be partial anyway: a skill it
    /// does not show may still be served (`skills/get`).
    pub truncated: bool,
    #[serde(skip)]
    pages: usize,
    #[serde(skip)]
    cursors: BTreeSet<String>,
}

impl SkillListing {
    /// The first page's request.
    pub fn first_request() -> FeatureRequest {
        FeatureRequest::ListSkills(ListSkillsParams::default())
    }

    /// Takes one page's result; the next page's request, if there is one
    /// to read. A result without a `skills` array is an error.
    pub fn add_page(&mut self, result: &Value) -> Result<Option<FeatureRequest>, ShapeError> {
        let Some(Value::Array(entries)) = result.get("skills") else {
            return Err(ShapeError(
                "skills/list result has no `skills` array".into(),
            ));
        };
        self.pages += 1;
        for entry in entries {
            match SkillEntry::from_value(entry) {
                Ok(skill) => self.skills.push(skill),
                Err(error) => self.invalid.push(InvalidSkill {
                    uri: entry.get("uri").and_then(Value::as_str).map(str::to_owned),
                    reason: error.0,
                }),
            }
        }
        let Some(cursor) = result.get("nextCursor").and_then(Value::as_str) else {
            return Ok(None);
        };
        if self.pages >= MAX_LIST_PAGES || !self.cursors.insert(cursor.to_owned()) {
            self.truncated = true;
            return Ok(None);
        }
        Ok(Some(FeatureRequest::ListSkills(ListSkillsParams {
            cursor: Some(cursor.to_owned()),
        })))
    }

    /// The listed skill whose `SKILL.md` is at `uri`.
    pub fn by_uri(&self, uri: &str) -> Option<&SkillEntry> {
        self.skills.iter().find(|s| s.uri == uri)
    }
}

#[cfg(test)]
mod tests;
