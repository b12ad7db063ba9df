//! The secrets this process reads or holds for its servers' OAuth, learned
//! into one book that every server's words are redacted against: failure
//! reasons, call errors, log lines, `--json` documents and `--record`
//! transcripts (see `rho_proto_core::text::redact`).
//!
//! A server's configured header and environment values are known from its
//! config before it starts. What its OAuth grant needs is read only when
//! the grant runs ([`crate::grants`]), and what the grant yields arrives
//! later still; each is learned here the moment rho has it, before any of
//! it is sent:
//! - every secret a grant reads from a file or a variable
//!   ([`crate::grants::read_secret`]), and a client key's PEM text
//!   ([`crate::jwt_key`]);
//! - every secret part of a request to an authorization server or an
//!   identity provider ([`learn_request`]): the client's credentials in
//!   `Authorization: Basic`, a client assertion rho signed, the
//!   `jwt_bearer` assertion, the ID token and the ID-JAG of
//!   `identity_assertion`, a refresh token, an authorization code and its
//!   verifier, and the DPoP proof;
//! - every token an answer carries ([`learn_answer`]), and a client secret
//!   a registration hands out;
//! - the stored login a connect or a re-authorization reads (its tokens,
//!   client secret and DPoP key; [`learn_stored`]), and a DPoP key made
//!   for a login ([`crate::dpop`]).
//!
//! The book is the process's own ([`book`]), not one per server or per
//! [`crate::Host`]: the secrets are read by free functions wherever a grant
//! runs, and hiding a value one server was given in another server's text
//! costs nothing. [`crate::Host`] hands it to every runtime it starts
//! (`HostServices::secrets`); the `rho` CLI's logger redacts against it
//! too. It keeps at most `rho_proto_core::text::redact::MAX_LEARNED`
//! values, forgetting the oldest.

use std::sync::LazyLock;

use base64::Engine as _;
use rho_proto_core::oauth::store::StoredLogin;
use rho_proto_core::text::redact::SecretBook;

/// This process's book.
static BOOK: LazyLock<SecretBook> = LazyLock::new(SecretBook::default);

/// The book of every secret this process has read or held for a server:
/// hand it to a runtime started without [`crate::Host`]
/// (`HostServices::secrets`), and learn into it what a host of its own
/// reads.
pub fn book() -> &'static SecretBook {
    &BOOK
}

/// Learns `text` (a secret file's or variable's content) without its
/// surrounding whitespace, and, when it spans lines (a PEM key), each
/// line of it, so a quoted line is hidden too.
pub(crate) fn learn(text: &str) {
    let text = text.trim();
    BOOK.learn(text);
    if text.contains('\n') {
        for line in text.lines().map(str::trim) {
            // A PEM armor line (`-----BEGIN PRIVATE KEY-----`) is no secret.
            if !line.starts_with("-----") {
                BOOK.learn(line);
            }
        }
    }
}

/// The form fields of a token or registration request that carry a
/// secret.
const SECRET_FIELDS: &[&str] = &[
    "client_secret",
    "client_assertion",
    "assertion",
    "subject_token",
    "actor_token",
    "refresh_token",
    "access_token",
    "code",
    "code_verifier",
];

/// The JSON fields of an authorization server's answer that carry a
/// secret.
const ANSWER_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "issued_token",
    "client_secret",
];

/// Learns the secrets of a request rho is about to send an authorization
/// server or identity provider: the credentials of its `Authorization`
/// header (for `Basic`, the decoded client id and secret too, as sent and
/// form-decoded), its `DPoP` proof, and the secret fields of a form body.
pub(crate) fn learn_request(headers: &[(String, String)], body: &[u8]) {
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("dpop") {
            BOOK.learn(value);
        }
        if !name.eq_ignore_ascii_case("authorization") {
            continue;
        }
        BOOK.learn(value);
        let Some((scheme, credentials)) = value.trim().split_once(' ') else {
            continue;
        };
        let credentials = credentials.trim();
        BOOK.learn(credentials);
        if !scheme.eq_ignore_ascii_case("basic") {
            continue;
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credentials)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok());
        if let Some((_, secret)) = decoded.as_deref().and_then(|d| d.split_once(':')) {
            BOOK.learn(secret);
            // RFC 6749 §2.3.1: the secret is form-encoded before Basic.
            let plain = url::form_urlencoded::parse(format!("s={secret}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned());
            if let Some(plain) = plain {
                BOOK.learn(&plain);
            }
        }
    }
    for (name, value) in url::form_urlencoded::parse(body) {
        if SECRET_FIELDS.contains(&name.as_ref()) {
            BOOK.learn(&value);
            // As the request sent it, form-encoded.
            let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
            BOOK.learn(&encoded);
        }
    }
}

/// Learns the tokens (and a registration's client secret) in the JSON
/// answer `body` of an authorization server or identity provider.
pub(crate) fn learn_answer(body: &[u8]) {
    let Ok(serde_json::Value::Object(answer)) = serde_json::from_slice(body) else {
        return;
    };
    for field in ANSWER_FIELDS {
        if let Some(value) = answer.get(*field).and_then(|v| v.as_str()) {
            BOOK.learn(value);
        }
    }
}

/// Learns what a stored login holds: its tokens, its client's secret and
/// the key its tokens are bound to.
pub(crate) fn learn_stored(login: &StoredLogin) {
    if let Some(secret) = &login.client.secret {
        BOOK.learn(secret);
    }
    if let Some(tokens) = &login.tokens {
        BOOK.learn(&tokens.access_token);
        for value in [&tokens.refresh_token, &tokens.dpop_key]
            .into_iter()
            .flatten()
        {
            BOOK.learn(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rho_proto_core::text::redact::Redactor;

    fn hidden(text: &str) -> String {
        Redactor::default()
            .learning(book())
            .redact_owned(text.to_owned())
    }

    #[test]
    fn a_token_request_and_its_answer_teach_every_secret_in_them() {
        let basic = base64::engine::general_purpose::STANDARD.encode("m2m:sec%2Bret-basic-1");
        learn_request(
            &[
                ("Authorization".into(), format!("Basic {basic}")),
                ("DPoP".into(), "eyJ.dpop-proof.sig1".into()),
            ],
            b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=eyJ.the%2Bassertion.sig&client_assertion=eyJ.client.assertion1&scope=mcp",
        );
        learn_answer(br#"{"access_token":"at-learned-123","refresh_token":"rt-learned-456","token_type":"Bearer"}"#);
        for secret in [
            "sec%2Bret-basic-1",
            "sec+ret-basic-1",
            "eyJ.dpop-proof.sig1",
            "eyJ.the+assertion.sig",
            "eyJ.the%2Bassertion.sig",
            "eyJ.client.assertion1",
            "at-learned-123",
            "rt-learned-456",
        ] {
            assert_eq!(hidden(&format!("[{secret}]")), "[<redacted>]", "{secret}");
        }
        // Not a secret: the grant type, the scope.
        assert_eq!(
            hidden("urn:ietf:params:oauth:grant-type:jwt-bearer"),
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        );
    }

    #[test]
    fn a_pem_key_is_hidden_whole_and_line_by_line_but_not_its_armor() {
        let pem = crate::test_support::generated_pem();
        learn(&pem);
        let line = pem.lines().nth(1).expect("a body line");
        assert_eq!(hidden(line), "<redacted>");
        assert!(!hidden(&pem).contains(line));
        assert_eq!(
            hidden("-----BEGIN PRIVATE KEY-----"),
            "-----BEGIN PRIVATE KEY-----"
        );
    }
}
