//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1), as a 401 or 403 from
//! an MCP server carries them, and the Bearer parameters the MCP
//! authorization spec reads from them (RFC 6750 §3, RFC 9728 §5.1).
//!
//! The header is a comma-separated list in which commas separate both
//! challenges and the parameters of one challenge: a new challenge starts
//! at a token that is not followed by `=`. Values are tokens or quoted
//! strings with `\` escapes. The parser is total: malformed text yields the
//! challenges read before it, never a panic, and every string it returns is
//! bounded by the header's own length.

/// One challenge: an auth scheme and its parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as written (compare with `eq_ignore_ascii_case`).
    pub scheme: String,
    /// A `token68` in place of parameters (`Basic abc==`), if any.
    pub token68: Option<String>,
    /// Parameters in the order written; names lowercased (they are
    /// case-insensitive), values unquoted and unescaped.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// The first value of parameter `name` (lowercase).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a Bearer challenge tells an MCP client.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BearerChallenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated in the header.
    pub scope: Option<Vec<String>>,
    /// `error`: `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// `error_description`, for a person.
    pub error_description: Option<String>,
    /// The server challenged with the `DPoP` scheme too (or only): it
    /// takes DPoP-bound tokens (RFC 9449 §7.1).
    pub dpop: bool,
}

impl BearerChallenge {
    /// Whether the server says the token lacks scope (a 403 step-up).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Every challenge in the values of the `WWW-Authenticate` headers of one
/// response (several header lines are one list, as RFC 9110 §5.3 joins
/// them).
pub fn parse_challenges<'a>(headers: impl IntoIterator<Item = &'a str>) -> Vec<Challenge> {
    let mut out = Vec::new();
    for value in headers {
        Parser {
            text: value.as_bytes(),
            at: 0,
        }
        .challenges(&mut out);
    }
    out
}

/// The first Bearer challenge among `headers`, if any, else the first
/// `DPoP` one: a server that takes DPoP-bound tokens challenges with that
/// scheme and the same parameters (RFC 9449 §7.1), `resource_metadata`
/// and `scope` included.
pub fn bearer_challenge<'a>(headers: impl IntoIterator<Item = &'a str>) -> Option<BearerChallenge> {
    let all = parse_challenges(headers);
    let challenge = all
        .iter()
        .find(|c| c.scheme.eq_ignore_ascii_case("bearer"))
        .or_else(|| all.iter().find(|c| c.scheme.eq_ignore_ascii_case("dpop")))?;
    let get = |name: &str| challenge.param(name).map(str::to_owned);
    Some(BearerChallenge {
        resource_metadata: get("resource_metadata"),
        scope: get("scope").map(|s| s.split_ascii_whitespace().map(str::to_owned).collect()),
        error: get("error"),
        error_description: get("error_description"),
        dpop: all.iter().any(|c| c.scheme.eq_ignore_ascii_case("dpop")),
    })
}

struct Parser<'t> {
    text: &'t [u8],
    at: usize,
}

/// `tchar` of RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The characters of a `token68` besides its trailing `=`.
fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.at += 1;
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        (self.at > start).then(|| String::from_utf8_lossy(&self.text[start..self.at]).into_owned())
    }

    /// A quoted string after its opening quote; `None` when unterminated.
    fn quoted(&mut self) -> Option<String> {
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.at += 1;
                    out.push(self.peek()?);
                    self.at += 1;
                }
                b => {
                    out.push(b);
                    self.at += 1;
                }
            }
        }
    }

    /// Whether an `=` at the cursor starts a parameter value (so the token
    /// before it was a parameter name) rather than ending a `token68`.
    fn equals_starts_value(&self) -> bool {
        let mut i = self.at;
        if self.text.get(i) != Some(&b'=') {
            return false;
        }
        i += 1;
        while matches!(self.text.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        matches!(self.text.get(i), Some(&b) if b == b'"' || is_tchar(b))
            && self.text.get(i) != Some(&b'=')
    }

    fn challenges(&mut self, out: &mut Vec<Challenge>) {
        loop {
            self.skip_ws_and_commas();
            let Some(scheme) = self.token() else {
                return;
            };
            let mut challenge = Challenge {
                scheme,
                ..Challenge::default()
            };
            self.skip_ws();
            // A token68, or the first of the parameters, or nothing.
            let mark = self.at;
            let mut t68 = String::new();
            while self.peek().is_some_and(is_token68_char) {
                t68.push(char::from(self.text[self.at]));
                self.at += 1;
            }
            if !t68.is_empty() && !self.equals_starts_value() {
                let mut end = self.at;
                while self.text.get(end) == Some(&b'=') {
                    end += 1;
                }
                let after = self.text.get(end).copied();
                let ends_item = {
                    let mut j = end;
                    while matches!(self.text.get(j), Some(b' ' | b'\t')) {
                        j += 1;
                    }
                    matches!(self.text.get(j), None | Some(b','))
                };
                if ends_item && after.is_none_or(|b| b != b'"') {
                    t68.extend(std::iter::repeat_n('=', end - self.at));
                    self.at = end;
                    challenge.token68 = Some(t68);
                    out.push(challenge);
                    continue;
                }
            }
            self.at = mark;
            self.params(&mut challenge);
            out.push(challenge);
            if self.peek().is_none() {
                return;
            }
        }
    }

    /// Parameters until the next challenge's scheme (a token not followed
    /// by `=`) or the end; the cursor is left at that scheme.
    fn params(&mut self, challenge: &mut Challenge) {
        loop {
            self.skip_ws_and_commas();
            let mark = self.at;
            let Some(name) = self.token() else {
                // Not a token: skip one byte so a stray character cannot
                // stop the parse forever.
                if self.peek().is_some() {
                    self.at += 1;
                    continue;
                }
                return;
            };
            self.skip_ws();
            if self.peek() != Some(b'=') {
                // The next challenge's scheme.
                self.at = mark;
                return;
            }
            self.at += 1;
            self.skip_ws();
            let value = if self.peek() == Some(b'"') {
                self.at += 1;
                match self.quoted() {
                    Some(v) => v,
                    None => return,
                }
            } else {
                self.token().unwrap_or_default()
            };
            challenge.params.push((name.to_ascii_lowercase(), value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_bearer_challenge_with_resource_metadata_and_scope() {
        let b = bearer_challenge([
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#,
        ])
        .expect("bearer");
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            b.scope,
            Some(vec!["files:read".to_owned(), "files:write".to_owned()])
        );
        assert!(!b.insufficient_scope());
    }

    #[test]
    fn several_challenges_in_one_header_and_across_headers() {
        let all = parse_challenges([
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="a b""#,
            "Negotiate abc123==",
        ]);
        let schemes: Vec<&str> = all.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "Bearer", "Negotiate"]);
        assert_eq!(all[0].param("realm"), Some("x"));
        assert_eq!(all[1].param("error"), Some("insufficient_scope"));
        assert_eq!(all[2].token68.as_deref(), Some("abc123=="));
        let b = bearer_challenge([
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="a b""#,
        ])
        .expect("bearer");
        assert!(b.insufficient_scope());
    }

    #[test]
    fn a_dpop_challenge_is_read_when_there_is_no_bearer_one() {
        let d = bearer_challenge([r#"DPoP algs="ES256", resource_metadata="https://r/prm""#])
            .expect("dpop");
        assert_eq!(d.resource_metadata.as_deref(), Some("https://r/prm"));
        // Bearer wins when a server offers both.
        let b = bearer_challenge([
            r#"DPoP resource_metadata="https://d", Bearer resource_metadata="https://b""#,
        ])
        .expect("bearer");
        assert_eq!(b.resource_metadata.as_deref(), Some("https://b"));
        assert_eq!(bearer_challenge([r#"Basic realm="x""#]), None);
    }

    #[test]
    fn names_are_case_insensitive_and_values_unescaped() {
        let b =
            bearer_challenge([r#"bearer Error_Description="say \"hi\", ok", ERROR=invalid_token"#])
                .expect("bearer");
        assert_eq!(b.error.as_deref(), Some("invalid_token"));
        assert_eq!(b.error_description.as_deref(), Some(r#"say "hi", ok"#));
    }

    #[test]
    fn a_scheme_alone_and_odd_spacing() {
        let all = parse_challenges(["Bearer", " ,  Bearer   realm = \"r\" ,, scope=x "]);
        assert_eq!(all.len(), 2, "{all:?}");
        assert!(all[0].params.is_empty());
        assert_eq!(all[1].param("realm"), Some("r"));
        assert_eq!(all[1].param("scope"), Some("x"));
    }

    #[test]
    fn malformed_text_yields_what_came_before() {
        let all = parse_challenges([r#"Bearer scope="unterminated"#]);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].param("scope"), None);
        assert!(
            parse_challenges(["", "  ", "=,=", "\"x\""])
                .iter()
                .all(|c| !c.scheme.is_empty())
        );
        assert_eq!(bearer_challenge(["Basic realm=x"]), None);
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panicking(text in ".{0,200}") {
            let all = parse_challenges([text.as_str()]);
            for c in &all {
                prop_assert!(!c.scheme.is_empty());
                prop_assert!(c.scheme.len() <= text.len());
            }
        }

        #[test]
        fn quoted_values_round_trip(value in "[ -~]{0,40}") {
            let escaped: String = value
                .chars()
                .flat_map(|c| match c {
                    '"' | '\\' => vec!['\\', c],
                    c => vec![c],
                })
                .collect();
            let header = format!("Bearer scope=\"{escaped}\", error=invalid_token");
            let b = bearer_challenge([header.as_str()]).expect("bearer");
            prop_assert_eq!(b.scope.unwrap_or_default().join(" "), value.split_ascii_whitespace().collect::<Vec<_>>().join(" "));
            prop_assert_eq!(b.error.as_deref(), Some("invalid_token"));
        }
    }
}
