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
//!
//! # Secrets learned while running
//!
//! A server's configured values are known before it starts; the secrets
//! of its OAuth grant are not: the host reads a workload token, an ID
//! token or a client secret when a grant runs, signs client assertions,
//! and receives access and refresh tokens, any of which an authorization
//! server or the MCP server may quote back. The host learns each into a
//! [`SecretBook`] it shares with the runtime
//! ([`crate::host::HostServices::secrets`]); a redactor that
//! [learns from](Redactor::learning) the book hides every value in it at
//! the moment it redacts, including those learned after the redactor was
//! made. One book serves a whole run: a value one server was given is
//! hidden in every server's text, as the CLI's logs hide every server's
//! configured values.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::{Arc, RwLock};

use crate::config::{ServerConfig, Transport};

/// What replaces a secret value.
pub const REDACTED: &str = "<redacted>";

/// The shortest value that is redacted, in bytes.
pub const MIN_SECRET_LEN: usize = 8;

/// The most values a [`SecretBook`] keeps; learning one more forgets the
/// oldest. A long session renews its access token every hour or so: the
/// book stays small, and the values it forgets have long expired.
pub const MAX_LEARNED: usize = 512;

/// Secret values learned while a run goes on (see the module docs),
/// shared by every clone: what one clone learns, each redactor learning
/// from any of them hides at once. Empty by default.
#[derive(Clone, Default)]
pub struct SecretBook {
    inner: Arc<RwLock<Learned>>,
}

/// A book's values, each as its forms (see [`forms`]), oldest first, and
/// every form, longest first.
#[derive(Default)]
struct Learned {
    values: VecDeque<Vec<String>>,
    needles: Vec<String>,
}

impl std::fmt::Debug for SecretBook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values themselves.
        f.debug_struct("SecretBook")
            .field("secrets", &self.len())
            .finish()
    }
}

impl SecretBook {
    /// Learns `value`, to be hidden from now on (a value shorter than
    /// [`MIN_SECRET_LEN`] bytes is ignored; see the module docs). The value
    /// is taken as it is: a caller trims what it read.
    pub fn learn(&self, value: &str) {
        if value.len() < MIN_SECRET_LEN {
            return;
        }
        let mut learned = self.inner.write().unwrap_or_else(|e| e.into_inner());
        let forms = forms(value);
        if learned.values.iter().any(|known| *known == forms) {
            return;
        }
        learned.values.push_back(forms);
        while learned.values.len() > MAX_LEARNED {
            learned.values.pop_front();
        }
        let mut needles: Vec<String> = Vec::new();
        for form in learned.values.iter().flatten() {
            if !needles.contains(form) {
                needles.push(form.clone());
            }
        }
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        learned.needles = needles;
    }

    /// How many values the book holds.
    pub fn len(&self) -> usize {
        self.inner
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values
            .len()
    }

    /// Whether the book holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `self` and `other` are clones of one book.
    pub fn same_as(&self, other: &SecretBook) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// Replaces a fixed set of secret values in text, and those of the
/// [`SecretBook`] it learns from. Empty (redacting nothing) by default.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Every form to replace, longest first, without duplicates.
    needles: Vec<String>,
    /// The book whose values are hidden too.
    learned: Option<SecretBook>,
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.needles == other.needles
            && match (&self.learned, &other.learned) {
                (None, None) => true,
                (Some(a), Some(b)) => a.same_as(b),
                _ => false,
            }
    }
}

impl Eq for Redactor {}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the values themselves.
        f.debug_struct("Redactor")
            .field("secrets", &self.needles.len())
            .field("learned", &self.learned.as_ref().map(SecretBook::len))
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

    /// A redactor hiding what either of these hides (the book of `self`
    /// when both learn from one).
    pub fn merged(mut self, other: &Redactor) -> Self {
        for needle in &other.needles {
            self.insert(needle.clone());
        }
        if self.learned.is_none() {
            self.learned = other.learned.clone();
        }
        self
    }

    /// This redactor, hiding also every value `book` holds whenever it
    /// redacts (values learned later too).
    pub fn learning(mut self, book: &SecretBook) -> Self {
        self.learned = Some(book.clone());
        self
    }

    /// Whether this redacts nothing (now: its book may learn a value
    /// later).
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.learned.as_ref().is_none_or(SecretBook::is_empty)
    }

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let learned = self
            .learned
            .as_ref()
            .map(|book| book.inner.read().unwrap_or_else(|e| e.into_inner()));
        let mut out = Cow::Borrowed(text);
        let replace = |out: &mut Cow<'a, str>, needle: &str| {
            if out.contains(needle) {
                *out = Cow::Owned(out.replace(needle, REDACTED));
            }
        };
        match &learned {
            None => self.needles.iter().for_each(|n| replace(&mut out, n)),
            Some(learned) if learned.needles.is_empty() => {
                self.needles.iter().for_each(|n| replace(&mut out, n));
            }
            Some(learned) => {
                // The union longest first, so a secret that contains
                // another is hidden whole.
                let mut all: Vec<&str> = self
                    .needles
                    .iter()
                    .chain(&learned.needles)
                    .map(String::as_str)
                    .collect();
                all.sort_by_key(|n| std::cmp::Reverse(n.len()));
                all.into_iter().for_each(|n| replace(&mut out, n));
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
        for form in forms(value) {
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

/// The forms `value` takes in text: as is; inside a JSON string (a
/// transcript line), escaped; inside an event's `Debug` text,
/// Rust-escaped, and then JSON-escaped again when that text is recorded.
/// Without duplicates.
fn forms(value: &str) -> Vec<String> {
    let debug = unquote(&format!("{value:?}")).to_owned();
    let mut out: Vec<String> = Vec::with_capacity(4);
    for form in [
        value.to_owned(),
        json_escaped(value),
        json_escaped(&debug),
        debug,
    ] {
        if !form.is_empty() && !out.contains(&form) {
            out.push(form);
        }
    }
    out
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
        let book = SecretBook::default();
        book.learn("learned-secret-value");
        let r = r.learning(&book);
        assert!(!format!("{r:?}{book:?}").contains("secret-value"));
    }

    #[test]
    fn a_value_learned_after_the_redactor_was_made_is_hidden_by_every_clone() {
        let book = SecretBook::default();
        let r = Redactor::new(["configured-1"]).learning(&book);
        let copy = r.clone();
        assert!(matches!(r.redact("eyJ.assertion.sig"), Cow::Borrowed(_)));
        book.clone().learn("eyJ.assertion.sig");
        book.learn("short");
        assert_eq!(
            copy.redact(r#"{"e":"bad eyJ.assertion.sig; configured-1; short"}"#),
            r#"{"e":"bad <redacted>; <redacted>; short"}"#
        );
        // Longest first across both lists: the longer learned value whole.
        book.learn("configured-1-and-more");
        assert_eq!(r.redact("configured-1-and-more"), "<redacted>");
        assert!(!r.is_empty());
        assert!(
            Redactor::default()
                .learning(&SecretBook::default())
                .is_empty()
        );
    }

    #[test]
    fn a_book_keeps_at_most_its_bound_forgetting_the_oldest() {
        let book = SecretBook::default();
        for n in 0..MAX_LEARNED + 2 {
            book.learn(&format!("value-number-{n:04}"));
        }
        assert_eq!(book.len(), MAX_LEARNED);
        let r = Redactor::default().learning(&book);
        assert_eq!(r.redact("value-number-0000"), "value-number-0000");
        assert_eq!(r.redact("value-number-0002"), "<redacted>");
    }
}
