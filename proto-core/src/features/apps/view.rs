//! A view as a server sends it: the `ui://` resource's HTML and what its
//! `_meta.ui` asks of the host (`csp`, `permissions`, `prefersBorder`),
//! and the Content-Security-Policy a host serves it under.
//!
//! Everything here is the server's words, and hostile. The HTML is only
//! ever served to a sandboxed frame on an origin of its own. The declared
//! domains become CSP source expressions, so an entry that could end a
//! directive or add a keyword (`;`, `,`, whitespace, quotes, `*` alone,
//! `data:`, `'unsafe-eval'`) is dropped and reported, never passed
//! through: the specification lets a host restrict but never loosen.

use base64::Engine as _;
use serde_json::{Map, Value, json};

/// The MIME type of an MCP App view, the one rho renders.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The most HTML rho serves for one view (a single-file build of a PDF
/// viewer is about 1.5 MB): a larger body is refused, not truncated.
pub const MAX_VIEW_BYTES: usize = 16 * 1024 * 1024;

/// The most entries rho reads of one declared domain list.
const MAX_DOMAINS: usize = 32;

/// The longest declared domain rho reads.
const MAX_DOMAIN_LEN: usize = 253 + "https://:65535".len();

/// Why a `resources/read` result is no view rho can serve.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ViewError {
    /// The result held no body for the view's URI.
    #[error("the server returned no body for `{uri}`")]
    Missing {
        /// The view's URI.
        uri: String,
    },
    /// The body's MIME type is not HTML.
    #[error("`{uri}` is `{mime}`, not an MCP App view (`{MIME_TYPE}`)")]
    NotHtml {
        /// The view's URI.
        uri: String,
        /// The MIME type sent.
        mime: String,
    },
    /// A `blob` body that is not base64 of UTF-8 text.
    #[error("`{uri}` has a blob body that is not base64 of UTF-8 HTML")]
    BadBlob {
        /// The view's URI.
        uri: String,
    },
    /// The body is over [`MAX_VIEW_BYTES`].
    #[error("`{uri}` is {size} bytes of HTML, more than rho serves ({MAX_VIEW_BYTES})")]
    TooLarge {
        /// The view's URI.
        uri: String,
        /// Its size.
        size: usize,
    },
}

/// The domains a view declares it needs (`_meta.ui.csp`), each list as
/// kept: only entries that are safe CSP source expressions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewCsp {
    /// `connectDomains`: fetch, XHR and WebSocket (`connect-src`).
    pub connect: Vec<String>,
    /// `resourceDomains`: scripts, styles, images, fonts, media.
    pub resource: Vec<String>,
    /// `frameDomains`: nested frames (`frame-src`).
    pub frame: Vec<String>,
    /// `baseUriDomains`: `<base href>` (`base-uri`).
    pub base_uri: Vec<String>,
    /// The entries dropped, each with why, for a person and the log.
    pub dropped: Vec<String>,
}

impl ViewCsp {
    /// Reads `_meta.ui.csp` (absent or not an object: nothing declared).
    pub fn of(csp: Option<&Value>) -> Self {
        let mut out = Self::default();
        let Some(csp) = csp.filter(|c| c.is_object()) else {
            return out;
        };
        let mut read = |key: &str| -> Vec<String> {
            let mut kept = Vec::new();
            match csp.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(entries)) => {
                    for entry in entries.iter().take(MAX_DOMAINS) {
                        match entry.as_str().map(source_expression) {
                            Some(Ok(source)) => kept.push(source),
                            Some(Err(why)) => out.dropped.push(format!("{key}: {why}")),
                            None => out.dropped.push(format!("{key}: {entry} is not a string")),
                        }
                    }
                    if entries.len() > MAX_DOMAINS {
                        out.dropped.push(format!(
                            "{key}: {} entries past the first {MAX_DOMAINS}",
                            entries.len() - MAX_DOMAINS
                        ));
                    }
                }
                Some(other) => out
                    .dropped
                    .push(format!("{key}: not an array ({})", short(other))),
            }
            kept
        };
        let connect = read("connectDomains");
        let resource = read("resourceDomains");
        let frame = read("frameDomains");
        let base_uri = read("baseUriDomains");
        Self {
            connect,
            resource,
            frame,
            base_uri,
            dropped: out.dropped,
        }
    }

    /// Whether the view declared no domain at all (the restrictive
    /// default applies).
    pub fn is_empty(&self) -> bool {
        self.connect.is_empty()
            && self.resource.is_empty()
            && self.frame.is_empty()
            && self.base_uri.is_empty()
    }

    /// The `Content-Security-Policy` the view is served under: the
    /// specification's construction from the declared domains (its
    /// restrictive default when none are), with `blob:` and `data:`
    /// beside `'self'` for scripts, workers, styles, images, fonts and
    /// media (single-file views build their workers from them, as
    /// pdf.js does; they name no network origin, so the policy still
    /// reaches no domain the view did not declare, and `connect-src`
    /// stays exactly what it declared), `object-src 'none'`, and
    /// `frame-ancestors` naming only `ancestors` (the sandbox's origin and
    /// the host page's: the directive checks every ancestor, not only
    /// the parent),
    /// so no other page can frame the view.
    pub fn header(&self, ancestors: &str) -> String {
        let list = |extra: &[String], base: &str| {
            let mut out = base.to_owned();
            for source in extra {
                out.push(' ');
                out.push_str(source);
            }
            out
        };
        let connect = if self.connect.is_empty() {
            "'none'".to_owned()
        } else {
            list(&self.connect, "'self'")
        };
        let frame = if self.frame.is_empty() {
            "'none'".to_owned()
        } else {
            list(&self.frame, "").trim_start().to_owned()
        };
        let base_uri = if self.base_uri.is_empty() {
            "'self'".to_owned()
        } else {
            list(&self.base_uri, "").trim_start().to_owned()
        };
        let resources = |base: &str| list(&self.resource, base);
        [
            "default-src 'none'".to_owned(),
            format!(
                "script-src {}",
                resources("'self' 'unsafe-inline' blob: data:")
            ),
            format!("worker-src {}", resources("'self' blob:")),
            format!(
                "style-src {}",
                resources("'self' 'unsafe-inline' blob: data:")
            ),
            format!("img-src {}", resources("'self' data: blob:")),
            format!("font-src {}", resources("'self' data: blob:")),
            format!("media-src {}", resources("'self' data: blob:")),
            format!("connect-src {connect}"),
            format!("frame-src {frame}"),
            "object-src 'none'".to_owned(),
            format!("base-uri {base_uri}"),
            "form-action 'none'".to_owned(),
            format!("frame-ancestors {ancestors}"),
        ]
        .join("; ")
    }

    /// The domains as `hostCapabilities.sandbox.csp` tells the view what
    /// was approved (only what was kept).
    pub fn approved(&self) -> Value {
        let mut map = Map::new();
        for (key, list) in [
            ("connectDomains", &self.connect),
            ("resourceDomains", &self.resource),
            ("frameDomains", &self.frame),
            ("baseUriDomains", &self.base_uri),
        ] {
            if !list.is_empty() {
                map.insert(key.into(), json!(list));
            }
        }
        Value::Object(map)
    }
}

/// One declared domain as a CSP source expression: a scheme of `https`,
/// `wss`, or `http`/`ws` for loopback only, a host (a leading `*.`
/// allowed), an optional port, and no path, query or anything else.
fn source_expression(entry: &str) -> Result<String, String> {
    let shown = || format!("{:?}", short_str(entry));
    if entry.len() > MAX_DOMAIN_LEN {
        return Err(format!("{} is too long", shown()));
    }
    let Some((scheme, rest)) = entry.split_once("://") else {
        return Err(format!("{} is not an origin (scheme://host)", shown()));
    };
    let scheme = scheme.to_ascii_lowercase();
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (host, Some(port))
        }
        Some(_) => return Err(format!("{} has a malformed port", shown())),
        None => (rest, None),
    };
    let bare = host.strip_prefix("*.").unwrap_or(host);
    let host_ok = !bare.is_empty()
        && bare.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if !host_ok {
        return Err(format!("{} has no plain host name", shown()));
    }
    let loopback = matches!(bare, "localhost" | "127.0.0.1") && host == bare;
    match scheme.as_str() {
        "https" | "wss" => {}
        "http" | "ws" if loopback => {}
        _ => return Err(format!("{} uses a scheme rho does not allow", shown())),
    }
    if port.is_some_and(|p| p.parse::<u16>().is_err()) {
        return Err(format!("{} has a port out of range", shown()));
    }
    let host = host.to_ascii_lowercase();
    Ok(match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

fn short_str(s: &str) -> String {
    s.chars().take(80).collect()
}

fn short(v: &Value) -> String {
    short_str(&v.to_string())
}

/// The browser features a view asks for (`_meta.ui.permissions`); rho
/// grants none of them, and says so in `hostCapabilities.sandbox`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewPermissions {
    /// The features asked for, by the specification's names.
    pub asked: Vec<String>,
}

impl ViewPermissions {
    /// Reads `_meta.ui.permissions`: the keys of an object.
    pub fn of(permissions: Option<&Value>) -> Self {
        let asked = permissions
            .and_then(Value::as_object)
            .map(|m| m.keys().take(8).map(|k| short_str(k)).collect())
            .unwrap_or_default();
        Self { asked }
    }
}

/// A view read from its `ui://` resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewResource {
    /// The view's URI.
    pub uri: String,
    /// The HTML, as sent (decoded from base64 for a blob body).
    pub html: String,
    /// The domains it declared.
    pub csp: ViewCsp,
    /// The browser features it asked for.
    pub permissions: ViewPermissions,
    /// `prefersBorder`, when said.
    pub prefers_border: Option<bool>,
}

impl ViewResource {
    /// Reads the view `uri` from a `resources/read` result as sent: the
    /// body for `uri` (else the first), which must be HTML (the profile
    /// parameter is not insisted on: servers in the wild send plain
    /// `text/html`), as text or base64, with `_meta.ui` beside it.
    pub fn from_read(uri: &str, result: &Value) -> Result<Self, ViewError> {
        let contents = result
            .get("contents")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let body = contents
            .iter()
            .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
            .or_else(|| contents.first())
            .ok_or_else(|| ViewError::Missing { uri: uri.into() })?;
        let mime = body.get("mimeType").and_then(Value::as_str).unwrap_or("");
        let essence = mime.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("text/html") {
            return Err(ViewError::NotHtml {
                uri: uri.into(),
                mime: short_str(mime),
            });
        }
        let html = match (body.get("text"), body.get("blob")) {
            (Some(Value::String(text)), _) => text.clone(),
            (_, Some(Value::String(blob))) => base64::engine::general_purpose::STANDARD
                .decode(blob.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| ViewError::BadBlob { uri: uri.into() })?,
            _ => return Err(ViewError::Missing { uri: uri.into() }),
        };
        if html.len() > MAX_VIEW_BYTES {
            return Err(ViewError::TooLarge {
                uri: uri.into(),
                size: html.len(),
            });
        }
        let ui = body
            .get("_meta")
            .and_then(|m| m.get("ui"))
            .filter(|ui| ui.is_object());
        Ok(Self {
            uri: uri.to_owned(),
            html,
            csp: ViewCsp::of(ui.and_then(|ui| ui.get("csp"))),
            permissions: ViewPermissions::of(ui.and_then(|ui| ui.get("permissions"))),
            prefers_border: ui
                .and_then(|ui| ui.get("prefersBorder"))
                .and_then(Value::as_bool),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_declared_domain_gets_the_restrictive_default_and_local_schemes_only() {
        let header = ViewCsp::of(None).header("http://127.0.0.1:4001");
        assert_eq!(
            header,
            "default-src 'none'; script-src 'self' 'unsafe-inline' blob: data:; \
             worker-src 'self' blob:; style-src 'self' 'unsafe-inline' blob: data:; \
             img-src 'self' data: blob:; font-src 'self' data: blob:; media-src 'self' data: blob:; \
             connect-src 'none'; \
             frame-src 'none'; object-src 'none'; base-uri 'self'; form-action 'none'; \
             frame-ancestors http://127.0.0.1:4001"
        );
    }

    #[test]
    fn declared_domains_land_in_their_directives_only() {
        let csp = ViewCsp::of(Some(&json!({
            "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
            "resourceDomains": ["https://*.cdn.example.com"],
            "frameDomains": ["https://www.youtube.com/"],
        })));
        assert!(csp.dropped.is_empty(), "{:?}", csp.dropped);
        let header = csp.header("http://127.0.0.1:9");
        assert!(
            header.contains(
                "connect-src 'self' https://api.example.com wss://live.example.com:8443;"
            )
        );
        assert!(
            header.contains(
                "script-src 'self' 'unsafe-inline' blob: data: https://*.cdn.example.com;"
            )
        );
        assert!(header.contains("img-src 'self' data: blob: https://*.cdn.example.com;"));
        assert!(header.contains("frame-src https://www.youtube.com;"));
        assert!(header.contains("base-uri 'self';"));
        assert_eq!(
            csp.approved(),
            json!({
                "connectDomains": ["https://api.example.com", "wss://live.example.com:8443"],
                "resourceDomains": ["https://*.cdn.example.com"],
                "frameDomains": ["https://www.youtube.com"],
            })
        );
    }

    #[test]
    fn an_entry_that_could_loosen_the_policy_is_dropped_and_said() {
        for hostile in [
            "https://a.com; script-src *",
            "https://a.com 'unsafe-eval'",
            "*",
            "https://*",
            "data:",
            "'self'",
            "https://a.com/path",
            "javascript://x",
            "http://example.com",
            "https://a.com:99999",
            "https://a.com,https://b.com",
            "https://a\u{202e}b.com",
            "https://*.localhost.*",
        ] {
            let csp = ViewCsp::of(Some(&json!({ "connectDomains": [hostile] })));
            assert!(
                csp.connect.is_empty(),
                "{hostile:?} kept: {:?}",
                csp.connect
            );
            assert_eq!(csp.dropped.len(), 1, "{hostile:?}");
            assert!(csp.header("http://x").contains("connect-src 'none'"));
        }
        let odd = ViewCsp::of(Some(
            &json!({"resourceDomains": "https://a.com", "frameDomains": [1]}),
        ));
        assert!(odd.is_empty());
        assert_eq!(odd.dropped.len(), 2, "{:?}", odd.dropped);
        let loopback = ViewCsp::of(Some(&json!({"connectDomains": ["http://localhost:3001"]})));
        assert_eq!(loopback.connect, ["http://localhost:3001"]);
    }

    #[test]
    fn a_view_is_read_from_text_or_blob_with_its_meta() {
        let html = "<!doctype html><p>hi</p>";
        let text = json!({"contents": [{
            "uri": "ui://v", "mimeType": MIME_TYPE, "text": html,
            "_meta": {"ui": {"csp": {"connectDomains": ["https://api.a.com"]},
                              "permissions": {"camera": {}}, "prefersBorder": true}},
        }]});
        let view = ViewResource::from_read("ui://v", &text).expect("view");
        assert_eq!(view.html, html);
        assert_eq!(view.csp.connect, ["https://api.a.com"]);
        assert_eq!(view.permissions.asked, ["camera"]);
        assert_eq!(view.prefers_border, Some(true));
        let blob = json!({"contents": [{"uri": "ui://v", "mimeType": "text/html",
            "blob": base64::engine::general_purpose::STANDARD.encode(html)}]});
        assert_eq!(
            ViewResource::from_read("ui://v", &blob).expect("blob").html,
            html
        );
    }

    #[test]
    fn what_is_not_a_view_is_refused_naming_why() {
        let read = |v: Value| ViewResource::from_read("ui://v", &v).unwrap_err();
        assert!(matches!(
            read(json!({"contents": []})),
            ViewError::Missing { .. }
        ));
        assert!(matches!(
            read(json!({"contents": [{"uri": "ui://v", "mimeType": "text/plain", "text": "x"}]})),
            ViewError::NotHtml { .. }
        ));
        assert!(matches!(
            read(json!({"contents": [{"uri": "ui://v", "mimeType": MIME_TYPE, "blob": "%%%"}]})),
            ViewError::BadBlob { .. }
        ));
        let huge = "x".repeat(MAX_VIEW_BYTES + 1);
        assert!(matches!(
            read(json!({"contents": [{"uri": "ui://v", "mimeType": MIME_TYPE, "text": huge}]})),
            ViewError::TooLarge { .. }
        ));
    }
}
