//! Secrets a server echoes back, hidden before its text is shown or stored.
//!
//! A server knows the secrets rho gives it — the values of its `headers`,
//! `headers_from_env`, `env` and `env_from_env` entries — and may echo one
//! back: a 401 body quoting the `Authorization` header, a JSON-RPC error
//! message with the token in it, a stdio server printing its environment
//! to stderr. A [`Redactor`] built from a server's resolved values
//! ([`Redactor::for_server`]) replaces every occurrence with
//! [`REDACTED`] wherever such text becomes a failure reason, a log line or a
//! transcript entry.
//!
//! # Which values
//!
//! Each resolved value, and for a header value of the form `<scheme>
//! <credentials>` (`Bearer abc…`) the credentials alone, since a server may
//! echo only the token. Values shorter than [`MIN_SECRET_LEN`] bytes are
//! not redacted: short values (`true`, `info`, `8080`) occur in ordinary
//! text, and hiding them would garble reasons and break the JSON of
//! recorded transcripts, while real credentials are long. Each value is
//! matched as is, JSON-escaped (inside a recorded JSON line), `Debug`
//! escaped (inside an event's text) and both, longest first, so a secret
//! containing another is hidden whole.
//!
//! A secret split across two reads of a pipe, or cut by a size limit, is
//! not recognised in the piece that holds only part of it.

use std::borrow::Cow;

use crate::config::{ServerConfig, Transport};

/// What replaces a secret value.
pub const REDACTED: &str = "<redacted>";

/// The shortest value that is redacted, in bytes.
pub const MIN_SECRET_LEN: usize = 8;

/// Replaces a fixed set of secret values in text. Empty (redacting
/// nothing) by default.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Every form to replace, longest first, without duplicates.
    needles: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values themselves.
        f.debug_struct("Redactor")
            .field("secrets", &self.needles.len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for these values (short ones are ignored; see the module
    /// docs).
    pub fn new<I, S>(values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut redactor = Self::default();
        for value in values {
            redactor.add(value.as_ref());
        }
        redactor
    }

    /// The values of `config`'s `headers`, `headers_from_env`, `env` and
    /// `env_from_env` entries, resolved from `ambient` (an unset ambient
    /// variable contributes nothing), plus the credentials part of each
    /// header value.
    pub fn for_server(config: &ServerConfig, ambient: &[(String, String)]) -> Self {
        let from_ambient = |name: &str| {
            ambient
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let mut values: Vec<String> = Vec::new();
        match &config.transport {
            Transport::Stdio(stdio) => return Self::for_stdio(stdio, ambient),
            Transport::StreamableHttp(http) => {
                let headers: Vec<String> = http
                    .headers
                    .values()
                    .cloned()
                    .chain(
                        http.headers_from_env
                            .values()
                            .filter_map(|n| from_ambient(n)),
                    )
                    .collect();
                for value in headers {
                    if let Some((_, credentials)) = value.trim().split_once(' ') {
                        values.push(credentials.trim().to_owned());
                    }
                    values.push(value);
                }
            }
        }
        Self::new(values)
    }

    /// The values of a stdio server's `env` and `env_from_env` entries,
    /// resolved from `ambient`: what its stderr may echo.
    pub fn for_stdio(stdio: &crate::config::StdioConfig, ambient: &[(String, String)]) -> Self {
        let from_ambient = |name: &str| {
            ambient
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        Self::new(
            stdio
                .env
                .values()
                .cloned()
                .chain(stdio.env_from_env.values().filter_map(|n| from_ambient(n))),
        )
    }

    /// A redactor hiding what either of these hides.
    pub fn merged(mut self, other: &Redactor) -> Self {
        for needle in &other.needles {
            self.insert(needle.clone());
        }
        self
    }

    /// Whether this redacts nothing.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = Cow::Owned(out.replace(needle.as_str(), REDACTED));
            }
        }
        out
    }

    /// Like [`Redactor::redact`], into an owned string.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    fn add(&mut self, value: &str) {
        if value.len() < MIN_SECRET_LEN {
            return;
        }
        // Inside a JSON string (a transcript line) the value is escaped;
        // inside an event's `Debug` text, Rust-escaped, and then JSON
        // escaped again when that text is recorded.
        let debug = unquote(&format!("{value:?}")).to_owned();
        for form in [
            value.to_owned(),
            json_escaped(value),
            json_escaped(&debug),
            debug,
        ] {
            self.insert(form);
        }
    }

    fn insert(&mut self, needle: String) {
        if needle.is_empty() || self.needles.contains(&needle) {
            return;
        }
        self.needles.push(needle);
        // Longest first: a secret that contains another is hidden whole.
        self.needles
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }
}

/// `value` as it appears between the quotes of a JSON string.
fn json_escaped(value: &str) -> String {
    let json = serde_json::to_string(value).unwrap_or_default();
    unquote(&json).to_owned()
}

fn unquote(quoted: &str) -> &str {
    quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config;

    fn server(toml: &str) -> ServerConfig {
        let config = config::parse(toml, "t.toml").expect("valid");
        config.servers[0].config.clone().expect("valid entry")
    }

    fn ambient(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_configured_value_and_the_bearer_token_alone_are_hidden() {
        let http = server(
            r#"[mcp.servers.h]
transport = "streamable_http"
url = "http://127.0.0.1:1/mcp"
headers = { "X-Api-Key" = "literal-key-123" }
headers_from_env = { Authorization = "TOKEN_VAR" }
"#,
        );
        let r = Redactor::for_server(&http, &ambient(&[("TOKEN_VAR", "Bearer s3cret-token")]));
        assert_eq!(
            r.redact("got Bearer s3cret-token and literal-key-123; token=s3cret-token"),
            "got <redacted> and <redacted>; token=<redacted>"
        );
        let stdio = server(
            r#"[mcp.servers.s]
transport = "stdio"
command = "x"
env = { LITERAL = "literal-value-1" }
env_from_env = { TOKEN = "AMBIENT_TOKEN" }
"#,
        );
        let r = Redactor::for_server(&stdio, &ambient(&[("AMBIENT_TOKEN", "from-ambient-9")]));
        assert_eq!(
            r.redact("literal-value-1 / from-ambient-9"),
            "<redacted> / <redacted>"
        );
    }

    #[test]
    fn short_values_are_left_alone_and_clean_text_is_borrowed() {
        let r = Redactor::new(["true", "1234567", "12345678"]);
        assert_eq!(r.redact("true 1234567 12345678"), "true 1234567 <redacted>");
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(Redactor::new(["abc"]).is_empty());
    }

    #[test]
    fn json_escaped_forms_and_overlapping_secrets_are_hidden_whole() {
        let r = Redactor::new(["pass\"word\\x", "abcdefgh", "abcdefgh-longer"]);
        assert_eq!(
            r.redact(r#"{"a":"pass\"word\\x"}"#),
            r#"{"a":"<redacted>"}"#
        );
        assert_eq!(
            r.redact("abcdefgh-longer abcdefgh"),
            "<redacted> <redacted>"
        );
    }

    #[test]
    fn debug_never_shows_a_value() {
        let r = Redactor::new(["very-secret-value"]);
        assert!(!format!("{r:?}").contains("very-secret"));
    }
}
