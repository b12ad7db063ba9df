//! Resources as attachments: the shapes of `resources/list`,
//! `resources/templates/list` and `resources/read`, matching what a person
//! types after `@` against the held listing, and what a read becomes.
//!
//! # Matching
//!
//! [`match_fragment`] finds every listed resource whose URI contains the
//! typed fragment (ignoring ASCII case), then every template whose URI
//! template does; resources come first (a pick reads them), templates
//! after, marked [`ResourceMatch::template`], because picking one only
//! inserts its URI for the person to fill in. Each match carries the
//! server's own name for it, shown beside the URI. [`match_servers`]
//! does the same over every server's held catalog, each row naming the
//! server that offers it: every server's resources, then every server's
//! templates. URIs and names are the servers' words: a host sanitizes a
//! label ([`crate::text::terminal`]) before it prints one.
//!
//! # Reading
//!
//! A read is a round-trip, so it has states: [`ReadState::Reading`] while
//! it runs, then [`ReadState::Ready`] or [`ReadState::Failed`] with the
//! reason, or [`ReadState::Cancelled`] when the person removed it first
//! (the host then cancels the request, and the server is told). What
//! arrives becomes an [`Attachment`] by the reference's table:
//!
//! | the server returned | the attachment |
//! |---|---|
//! | text | a text attachment holding the body |
//! | a single `image/*` blob | that image, exactly as the server encoded it |
//! | any other blob | text: `[resource <mime>, <size>]` |
//! | several bodies | one text attachment holding all of them, each after a `[resource <uri>]` line |
//!
//! Text is capped by `max_output_bytes`, like tool output.

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::features::content::human_size;
use crate::features::limit::cap_output;
use crate::wire::protocol::ShapeError;

/// One resource from `resources/list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Its URI (what `resources/read` takes).
    pub uri: String,
    /// The server's name for it.
    pub name: String,
    /// Human-readable name, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is, as the server describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// One template from `resources/templates/list`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceTemplate {
    /// The RFC 6570 template of the URIs it makes.
    pub uri_template: String,
    /// The server's name for it.
    pub name: String,
    /// Human-readable name, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it makes, as the server describes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of what it makes, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn required(value: &Value, key: &str, what: &str) -> Result<String, ShapeError> {
    text(value, key).ok_or_else(|| ShapeError(format!("{what} has no string `{key}`")))
}

impl Resource {
    /// Reads one entry of a `resources/list` result.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        if !value.is_object() {
            return Err(ShapeError("resource is not an object".into()));
        }
        let uri = required(value, "uri", "resource")?;
        let name = required(value, "name", &format!("resource `{uri}`"))?;
        Ok(Self {
            title: text(value, "title"),
            description: text(value, "description"),
            mime_type: text(value, "mimeType"),
            size: value.get("size").and_then(Value::as_u64),
            uri,
            name,
        })
    }
}

impl ResourceTemplate {
    /// Reads one entry of a `resources/templates/list` result.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        if !value.is_object() {
            return Err(ShapeError("resource template is not an object".into()));
        }
        let uri_template = required(value, "uriTemplate", "resource template")?;
        let name = required(
            value,
            "name",
            &format!("resource template `{uri_template}`"),
        )?;
        Ok(Self {
            title: text(value, "title"),
            description: text(value, "description"),
            mime_type: text(value, "mimeType"),
            uri_template,
            name,
        })
    }
}

/// One row of an `@` match.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ResourceMatch {
    /// The URI, or the URI template.
    pub uri: String,
    /// The server's name for it.
    pub name: String,
    /// A template: picking it inserts the URI as text to fill in.
    pub template: bool,
}

impl ResourceMatch {
    /// The row as the palette shows it: `<uri>  <name>` and, for a
    /// template, ` · template`. Unsanitized (see the module docs).
    pub fn label(&self) -> String {
        if self.template {
            format!("{}  {} · template", self.uri, self.name)
        } else {
            format!("{}  {}", self.uri, self.name)
        }
    }
}

/// One row of an `@` match over several servers: the match and the
/// server that offers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerMatch {
    /// The server identity.
    pub server: String,
    /// What matched.
    #[serde(flatten)]
    pub row: ResourceMatch,
}

impl ServerMatch {
    /// The row as the palette shows it: `<uri>  <server> · <name>` and,
    /// for a template, ` · template`. Unsanitized (see the module docs).
    pub fn label(&self) -> String {
        let row = format!("{}  {} · {}", self.row.uri, self.server, self.row.name);
        if self.row.template {
            format!("{row} · template")
        } else {
            row
        }
    }
}

/// Every held resource whose URI contains `fragment` (ASCII case
/// ignored), in listing order, then every matching template.
pub fn match_fragment(
    resources: &[Resource],
    templates: &[ResourceTemplate],
    fragment: &str,
) -> Vec<ResourceMatch> {
    let needle = fragment.to_ascii_lowercase();
    let hit = |uri: &str| uri.to_ascii_lowercase().contains(&needle);
    let resources = resources
        .iter()
        .filter(|r| hit(&r.uri))
        .map(|r| ResourceMatch {
            uri: r.uri.clone(),
            name: r.name.clone(),
            template: false,
        });
    let templates = templates
        .iter()
        .filter(|t| hit(&t.uri_template))
        .map(|t| ResourceMatch {
            uri: t.uri_template.clone(),
            name: t.name.clone(),
            template: true,
        });
    resources.chain(templates).collect()
}

/// [`match_fragment`] over several servers' held catalogs, in the order
/// given: every server's matching resources first, then every server's
/// matching templates.
pub fn match_servers<'a>(
    catalogs: impl IntoIterator<Item = (&'a str, &'a crate::features::catalog::Catalog)>,
    fragment: &str,
) -> Vec<ServerMatch> {
    let (templates, mut rows): (Vec<ServerMatch>, Vec<ServerMatch>) = catalogs
        .into_iter()
        .flat_map(|(server, catalog)| {
            match_fragment(&catalog.resources.items, &catalog.templates.items, fragment)
                .into_iter()
                .map(move |row| ServerMatch {
                    server: server.to_owned(),
                    row,
                })
        })
        .partition(|m| m.row.template);
    rows.extend(templates);
    rows
}

/// The params of a `resources/read` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ReadResourceParams {
    /// The resource's URI.
    pub uri: String,
}

/// One body of a `resources/read` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResourceContents {
    /// A text body.
    Text {
        /// The URI of this body.
        uri: String,
        /// Its MIME type, when given.
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The text.
        text: String,
    },
    /// A binary body, base64 as the server sent it.
    Blob {
        /// The URI of this body.
        uri: String,
        /// Its MIME type, when given.
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The base64 text, as sent.
        blob: String,
    },
}

impl ResourceContents {
    fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let uri = required(value, "uri", "resource contents")?;
        let mime_type = text(value, "mimeType");
        if let Some(text) = text(value, "text") {
            return Ok(Self::Text {
                uri,
                mime_type,
                text,
            });
        }
        if let Some(blob) = text(value, "blob") {
            // A blob that does not decode would reach the model (or the
            // person) as bytes nobody can read, with a made-up size.
            if let Err(error) = base64::engine::general_purpose::STANDARD.decode(blob.trim()) {
                return Err(ShapeError(format!(
                    "resource contents `{uri}` have a `blob` that is not valid base64 ({error})"
                )));
            }
            return Ok(Self::Blob {
                uri,
                mime_type,
                blob,
            });
        }
        Err(ShapeError(format!(
            "resource contents `{uri}` have neither `text` nor `blob`"
        )))
    }

    /// A blob's bytes, decoded (`None` for text, or base64 that is not).
    pub fn decoded(&self) -> Option<Vec<u8>> {
        match self {
            Self::Blob { blob, .. } => base64::engine::general_purpose::STANDARD
                .decode(blob.trim())
                .ok(),
            Self::Text { .. } => None,
        }
    }
}

/// A `resources/read` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReadResourceResult {
    /// The bodies, in order.
    pub contents: Vec<ResourceContents>,
}

impl ReadResourceResult {
    /// Reads a `resources/read` result; one malformed body makes it
    /// malformed.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let Some(Value::Array(items)) = value.get("contents") else {
            return Err(ShapeError(
                "resources/read result has no `contents` array".into(),
            ));
        };
        Ok(Self {
            contents: items
                .iter()
                .map(ResourceContents::from_value)
                .collect::<Result<_, _>>()?,
        })
    }
}

/// What a read resource adds to a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Attachment {
    /// Text for the model (bodies, or descriptors of blobs).
    Text {
        /// The text, capped by `max_output_bytes`.
        text: String,
    },
    /// One image, passed on exactly as the server encoded it.
    Image {
        /// Its MIME type.
        mime_type: String,
        /// The base64 text, as sent.
        data_base64: String,
    },
}

/// The MIME type a blob without one is described with.
const UNKNOWN_BINARY: &str = "application/octet-stream";

/// What a read result becomes, by the table in the module docs.
pub fn attachment(result: &ReadResourceResult, max_output_bytes: usize) -> Attachment {
    if let [
        ResourceContents::Blob {
            mime_type: Some(mime),
            blob,
            ..
        },
    ] = result.contents.as_slice()
        && mime.to_ascii_lowercase().starts_with("image/")
    {
        return Attachment::Image {
            mime_type: mime.clone(),
            data_base64: blob.clone(),
        };
    }
    let several = result.contents.len() > 1;
    let mut parts = Vec::with_capacity(result.contents.len());
    for body in &result.contents {
        let (uri, shown) = match body {
            ResourceContents::Text { uri, text, .. } => (uri, text.clone()),
            ResourceContents::Blob {
                uri,
                mime_type,
                blob,
            } => {
                let mime = mime_type.as_deref().unwrap_or(UNKNOWN_BINARY);
                (
                    uri,
                    format!("[resource {mime}, {}]", human_size(decoded_len(blob))),
                )
            }
        };
        parts.push(if several {
            format!("[resource {uri}]\n{shown}")
        } else {
            shown
        });
    }
    Attachment::Text {
        text: cap_output(&parts.join("\n\n"), max_output_bytes).into_owned(),
    }
}

/// The decoded length of base64 text, from its length alone.
fn decoded_len(blob: &str) -> usize {
    let blob = blob.trim();
    let padding = blob.bytes().rev().take_while(|&b| b == b'=').count().min(2);
    (blob.len() / 4 * 3 + (blob.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

/// Where a read attachment stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReadState {
    /// The request runs; the message cannot be sent yet.
    Reading,
    /// Read: this is what the message carries.
    Ready {
        /// What arrived.
        attachment: Attachment,
    },
    /// The read failed: the attachment goes, and the reason is shown.
    Failed {
        /// Why, in words.
        reason: String,
    },
    /// The person removed it while it was being read.
    Cancelled,
}

/// One resource being read as an attachment: the model a composer drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRead {
    uri: String,
    state: ReadState,
    max_output_bytes: usize,
    /// The server said it changed while the read ran: that read may carry
    /// the body from before, so its answer is followed by another read.
    stale: bool,
}

impl ResourceRead {
    /// A read of `uri` that has just been sent.
    pub fn new(uri: impl Into<String>, max_output_bytes: usize) -> Self {
        Self {
            uri: uri.into(),
            state: ReadState::Reading,
            max_output_bytes,
            stale: false,
        }
    }

    /// The URI being read.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Where the read stands.
    pub fn state(&self) -> &ReadState {
        &self.state
    }

    /// The composer's chip: `[resource: <uri> · reading]` while it runs.
    pub fn label(&self) -> String {
        match &self.state {
            ReadState::Reading => format!("[resource: {} · reading]", self.uri),
            ReadState::Ready { .. } => format!("[resource: {}]", self.uri),
            ReadState::Failed { reason } => format!("[resource: {} · failed: {reason}]", self.uri),
            ReadState::Cancelled => format!("[resource: {} · cancelled]", self.uri),
        }
    }

    /// Whether the message may be sent: not while a read runs.
    pub fn blocks_sending(&self) -> bool {
        matches!(self.state, ReadState::Reading)
    }

    /// The server said the resource changed (a subscription's update):
    /// returns whether to send a read now. A read attachment goes back to
    /// reading (the message waits for the new body); one being read is
    /// read once more when its answer comes ([`ResourceRead::handle_answer`]
    /// says so), however many changes came meanwhile; a failed or
    /// cancelled one stays as it is.
    pub fn changed(&mut self) -> bool {
        match self.state {
            ReadState::Ready { .. } => {
                self.state = ReadState::Reading;
                true
            }
            ReadState::Reading => {
                self.stale = true;
                false
            }
            _ => false,
        }
    }

    /// The server answered (or the request failed, with the reason). An
    /// answer after a cancel is dropped. Returns whether to read again at
    /// once: the resource changed while this read ran
    /// ([`ResourceRead::changed`]), so its answer may be the body from
    /// before; the attachment stays reading until that read's answer.
    #[must_use]
    pub fn handle_answer(&mut self, answer: Result<&Value, String>) -> bool {
        if !matches!(self.state, ReadState::Reading) {
            return false;
        }
        if std::mem::take(&mut self.stale) && answer.is_ok() {
            return true;
        }
        self.state = match answer.map(ReadResourceResult::from_value) {
            Ok(Ok(result)) if result.contents.is_empty() => ReadState::Failed {
                reason: format!("the server returned nothing for `{}`", self.uri),
            },
            Ok(Ok(result)) => ReadState::Ready {
                attachment: attachment(&result, self.max_output_bytes),
            },
            Ok(Err(shape)) => ReadState::Failed { reason: shape.0 },
            Err(reason) => ReadState::Failed { reason },
        };
        false
    }

    /// The person removed the attachment: returns whether the request is
    /// still running (then the host cancels it, and the server is told).
    pub fn cancel(&mut self) -> bool {
        let running = matches!(self.state, ReadState::Reading);
        if running {
            self.state = ReadState::Cancelled;
        }
        running
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(uri: &str, name: &str) -> Resource {
        Resource::from_value(&json!({"uri": uri, "name": name})).expect("resource")
    }

    #[test]
    fn a_blob_that_is_not_base64_makes_the_read_malformed_naming_why() {
        let read = |blob: &str| {
            ReadResourceResult::from_value(&json!({"contents": [
                {"uri": "x:img", "mimeType": "image/png", "blob": blob}
            ]}))
        };
        let error = read("not base64 at all!").expect_err("refused");
        assert!(
            error.0.contains("`x:img`") && error.0.contains("not valid base64"),
            "{error}"
        );
        let ok = read("iVBORw0KGgo=").expect("valid base64");
        assert!(matches!(attachment(&ok, 1000), Attachment::Image { .. }));
    }

    #[test]
    fn matching_lists_resources_first_then_templates_marked() {
        let resources = [
            resource(
                "demo://resource/static/document/architecture.md",
                "architecture.md",
            ),
            resource("demo://resource/static/document/features.md", "features.md"),
        ];
        let templates = [ResourceTemplate::from_value(&json!({
            "uriTemplate": "demo://resource/dynamic/text/{resourceId}",
            "name": "Dynamic Text Resource"
        }))
        .expect("template")];
        let rows = match_fragment(&resources, &templates, "DEMO://resource");
        let labels: Vec<String> = rows.iter().map(ResourceMatch::label).collect();
        assert_eq!(
            labels,
            [
                "demo://resource/static/document/architecture.md  architecture.md",
                "demo://resource/static/document/features.md  features.md",
                "demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource · template",
            ]
        );
        assert_eq!(match_fragment(&resources, &templates, "feat").len(), 1);
        assert!(match_fragment(&resources, &templates, "nothing").is_empty());
    }

    #[test]
    fn across_servers_every_resource_comes_before_any_template() {
        use crate::features::catalog::Catalog;
        let catalog = |uri: &str, template: &str| {
            let mut c = Catalog::default();
            c.resources.items = vec![resource(uri, "doc")];
            c.templates.items = vec![
                ResourceTemplate::from_value(&json!({"uriTemplate": template, "name": "t"}))
                    .expect("template"),
            ];
            c
        };
        let docs = catalog("docs://a", "docs://{id}");
        let db = catalog("db://a", "db://{id}");
        let rows = match_servers([("docs", &docs), ("db", &db)], "://");
        let seen: Vec<(&str, &str, bool)> = rows
            .iter()
            .map(|r| (r.server.as_str(), r.row.uri.as_str(), r.row.template))
            .collect();
        assert_eq!(
            seen,
            [
                ("docs", "docs://a", false),
                ("db", "db://a", false),
                ("docs", "docs://{id}", true),
                ("db", "db://{id}", true),
            ]
        );
        assert_eq!(rows[0].label(), "docs://a  docs · doc");
        assert_eq!(rows[3].label(), "db://{id}  db · t · template");
        assert_eq!(match_servers([("db", &db)], "docs").len(), 0);
    }

    #[test]
    fn listed_entries_need_a_uri_and_a_name() {
        for (bad, why) in [(json!({"name": "x"}), "uri"), (json!({"uri": "x"}), "name")] {
            let error = Resource::from_value(&bad).expect_err("refused");
            assert!(error.0.contains(why), "{bad}: {error}");
        }
        let error = ResourceTemplate::from_value(&json!({"name": "x"})).expect_err("refused");
        assert!(error.0.contains("uriTemplate"), "{error}");
        let r = Resource::from_value(
            &json!({"uri": "a://b", "name": "b", "mimeType": "text/plain", "size": 12}),
        )
        .expect("resource");
        assert_eq!(
            (r.mime_type.as_deref(), r.size),
            (Some("text/plain"), Some(12))
        );
    }

    fn read(contents: Value) -> ReadResourceResult {
        ReadResourceResult::from_value(&json!({ "contents": contents })).expect("result")
    }

    #[test]
    fn what_arrives_follows_the_table() {
        let text = read(json!([{"uri": "a://t", "text": "the body"}]));
        assert_eq!(
            attachment(&text, 1000),
            Attachment::Text {
                text: "the body".into()
            }
        );
        let image = read(json!([{"uri": "a://i", "mimeType": "image/png", "blob": "iVBORw0K"}]));
        assert_eq!(
            attachment(&image, 1000),
            Attachment::Image {
                mime_type: "image/png".into(),
                data_base64: "iVBORw0K".into()
            }
        );
        let blob =
            read(json!([{"uri": "a://b", "mimeType": "application/zip", "blob": "AAAAAA=="}]));
        assert_eq!(
            attachment(&blob, 1000),
            Attachment::Text {
                text: "[resource application/zip, 4 B]".into()
            }
        );
        let several = read(json!([
            {"uri": "a://1", "text": "one"},
            {"uri": "a://2", "blob": "AAA="},
            {"uri": "a://3", "mimeType": "image/png", "blob": "AAAA"}
        ]));
        assert_eq!(
            attachment(&several, 1000),
            Attachment::Text {
                text: "[resource a://1]\none\n\n[resource a://2]\n[resource application/octet-stream, 2 B]\n\n[resource a://3]\n[resource image/png, 3 B]".into()
            }
        );
        let long = read(json!([{"uri": "a://t", "text": "y".repeat(5000)}]));
        let Attachment::Text { text } = attachment(&long, 100) else {
            panic!("text")
        };
        assert!(
            text.contains("max_output_bytes") && text.len() < 200,
            "{text}"
        );
    }

    #[test]
    fn a_read_goes_from_reading_to_ready_failed_or_cancelled() {
        let mut r = ResourceRead::new("a://t", 1000);
        assert!(r.blocks_sending());
        assert_eq!(r.label(), "[resource: a://t · reading]");
        let _ = r.handle_answer(Ok(&json!({"contents": [{"uri": "a://t", "text": "hi"}]})));
        assert!(matches!(r.state(), ReadState::Ready { .. }));
        assert!(!r.blocks_sending());
        assert!(!r.cancel(), "nothing to cancel once read");

        let mut failed = ResourceRead::new("a://x", 1000);
        let _ = failed.handle_answer(Err("server `s` answered with an error: not found".into()));
        assert!(
            matches!(failed.state(), ReadState::Failed { reason } if reason.contains("not found"))
        );
        let mut empty = ResourceRead::new("a://x", 1000);
        let _ = empty.handle_answer(Ok(&json!({"contents": []})));
        assert!(matches!(empty.state(), ReadState::Failed { .. }));
        let mut malformed = ResourceRead::new("a://x", 1000);
        let _ = malformed.handle_answer(Ok(&json!({"contents": [{"uri": "a://x"}]})));
        assert!(
            matches!(malformed.state(), ReadState::Failed { reason } if reason.contains("neither"))
        );

        let mut cancelled = ResourceRead::new("a://t", 1000);
        assert!(cancelled.cancel(), "the request must be cancelled");
        let _ =
            cancelled.handle_answer(Ok(&json!({"contents": [{"uri": "a://t", "text": "late"}]})));
        assert_eq!(
            cancelled.state(),
            &ReadState::Cancelled,
            "a late answer is dropped"
        );
    }

    #[test]
    fn a_change_reads_a_read_attachment_again_and_a_running_read_once_more() {
        let body = |text: &str| json!({"contents": [{"uri": "a://t", "text": text}]});
        let mut r = ResourceRead::new("a://t", 1000);
        // Changed while the first read runs: its answer may be the old
        // body, so one more read follows, however many changes came.
        assert!(!r.changed());
        assert!(!r.changed());
        assert!(r.handle_answer(Ok(&body("old"))), "read again");
        assert!(r.blocks_sending(), "still reading");
        assert!(!r.handle_answer(Ok(&body("new"))));
        assert_eq!(
            r.state(),
            &ReadState::Ready {
                attachment: Attachment::Text { text: "new".into() }
            }
        );
        // Changed once read: read again now, the message waits.
        assert!(r.changed());
        assert!(r.blocks_sending());
        assert_eq!(r.label(), "[resource: a://t · reading]");
        assert!(!r.handle_answer(Ok(&body("newer"))));
        assert!(!r.blocks_sending());
        // A failure is not read again: it ends the attachment.
        assert!(r.changed());
        assert!(!r.changed());
        assert!(!r.handle_answer(Err("gone".into())));
        assert!(matches!(r.state(), ReadState::Failed { .. }));
        assert!(!r.changed());
        let mut cancelled = ResourceRead::new("a://t", 1000);
        assert!(cancelled.cancel());
        assert!(!cancelled.changed(), "a removed attachment is not read");
    }

    #[test]
    fn blobs_decode_and_sizes_come_from_the_base64_length() {
        let body = ResourceContents::Blob {
            uri: "a://b".into(),
            mime_type: None,
            blob: "aGVsbG8=".into(),
        };
        assert_eq!(body.decoded().as_deref(), Some(&b"hello"[..]));
        for (text, n) in [
            ("", 0),
            ("aA==", 1),
            ("aGk=", 2),
            ("aGVsbG8=", 5),
            ("aGVsbG8", 5),
        ] {
            assert_eq!(decoded_len(text), n, "{text}");
        }
    }
}
