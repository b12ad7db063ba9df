//! URL-mode elicitation (MCP 2025-11-25 `client/elicitation`, SEP-1036; in
//! the 2026-07-28 era an input request of a multi round-trip result): a
//! server asks the person to open a URL for something that must not pass
//! through the client (a third-party login, an API key, a payment).
//!
//! The client's only part is to show the URL and ask. The spec's client
//! rules shape what this module hands a host: never fetch the URL, never
//! open it without an explicit yes, show the whole of it, make its host
//! stand out, warn about punycode. So a [`UrlRequest`] carries the URL as
//! it would be opened (parsed and serialized again: ASCII, the host in
//! punycode, controls percent-encoded), its host apart, the host's Unicode
//! spelling when it is an internationalized name, and the [`UrlWarning`]s
//! a person should read before saying yes. Only `http` and `https` URLs
//! with a host are taken: anything else (`file:`, `javascript:`, a custom
//! scheme a desktop would hand to some program) is refused as invalid, as
//! is a URL longer than [`MAX_URL_LEN`].
//!
//! Accepting sends `{"action":"accept"}` and nothing else: the spec's
//! accept means the person agreed to open the URL, not that the
//! interaction is done, and URL mode carries no content.

use serde::Serialize;
use serde_json::{Value, json};

/// The longest URL rho shows or opens. Far beyond any real login or
/// payment link; a server that sends more is refused rather than flood a
/// terminal.
pub const MAX_URL_LEN: usize = 8192;

/// The longest `message` or `elicitationId` taken.
const MAX_TEXT_LEN: usize = 4096;

/// The JSON-RPC error code of `URLElicitationRequiredError` (2025-11-25):
/// a request that cannot go on until the person has visited the URLs in
/// its `error.data.elicitations`.
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// A server's request to have the person open a URL, checked and ready to
/// show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UrlRequest {
    /// The server's `message`: why it asks. Server text: sanitize it
    /// before it reaches a terminal.
    pub message: String,
    /// The URL as it would be opened: the server's URL parsed and written
    /// out again (ASCII only, the host in punycode). Show all of it.
    pub url: String,
    /// The URL's host as it is resolved (punycode for an internationalized
    /// name), to show prominently.
    pub host: String,
    /// The host's Unicode spelling, when it differs from [`Self::host`]
    /// (an internationalized name): show both, since a look-alike name is
    /// the spoof the spec warns about.
    pub unicode_host: Option<String>,
    /// The server's `elicitationId` (2025 era; the 2026 era has none): a
    /// later `notifications/elicitation/complete` names it.
    pub elicitation_id: Option<String>,
    /// What a person should know before opening it.
    pub warnings: Vec<UrlWarning>,
}

/// Something about a URL a person should read before opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UrlWarning {
    /// The host is an internationalized name (punycode): it may look like
    /// another.
    Punycode,
    /// The URL carries a user name or password before its host
    /// (`https://bank.example@other.example/`), a classic way to make a
    /// URL look like it goes somewhere it does not.
    UserInfo,
    /// Plain `http` to a host that is not this machine: anyone on the path
    /// can read or change the page.
    NotHttps,
}

impl UrlWarning {
    /// The warning in words a person reads.
    pub fn text(self) -> &'static str {
        match self {
            UrlWarning::Punycode => {
                "the host is an internationalized name (punycode); it may imitate another"
            }
            UrlWarning::UserInfo => {
                "the URL carries a user name before its host; the host is only what follows the @"
            }
            UrlWarning::NotHttps => "the URL is plain http, not https",
        }
    }
}

/// Why a URL-mode request cannot be shown: its parameters are invalid (the
/// 2025 era answers JSON-RPC -32602 with this as the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid URL-mode elicitation: {0}")]
pub struct InvalidUrlRequest(pub String);

/// What became of a [`UrlRequest`] once the host asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlAnswer {
    /// The person said yes: the URL was handed to the browser. The server
    /// is told `accept` (it agreed to open it; nothing more is known).
    Opened,
    /// The person said no: `decline`.
    Declined,
    /// The person dismissed the question without choosing: `cancel`,
    /// which also ends the call, as a dismissed form does.
    Dismissed,
    /// No one could be asked: `decline`.
    CouldNotAsk,
}

/// Whether elicitation `params` ask for URL mode (`mode: "url"`).
pub fn is_url_mode(params: &Value) -> bool {
    params.get("mode").and_then(Value::as_str) == Some("url")
}

/// Reads the `params` of a URL-mode `elicitation/create` (or one entry of a
/// -32042 error's `elicitations`). `message` and `url` are required;
/// `elicitationId` is required when `id_required` (the 2025 era) and read
/// when present otherwise.
pub fn url_request_from_params(
    params: &Value,
    id_required: bool,
) -> Result<UrlRequest, InvalidUrlRequest> {
    let invalid = |why: &str| InvalidUrlRequest(why.to_owned());
    let params = params
        .as_object()
        .ok_or_else(|| invalid("the parameters are not an object"))?;
    if params.get("mode").and_then(Value::as_str) != Some("url") {
        return Err(invalid("`mode` is not \"url\""));
    }
    let text = |key: &str| -> Result<Option<String>, InvalidUrlRequest> {
        match params.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.len() <= MAX_TEXT_LEN => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(InvalidUrlRequest(format!(
                "`{key}` is longer than {MAX_TEXT_LEN} bytes"
            ))),
            Some(_) => Err(InvalidUrlRequest(format!("`{key}` is not a string"))),
        }
    };
    let message = text("message")?.ok_or_else(|| invalid("it has no `message`"))?;
    let elicitation_id = text("elicitationId")?;
    if id_required && elicitation_id.is_none() {
        return Err(invalid("it has no `elicitationId`"));
    }
    let raw = match params.get("url") {
        Some(Value::String(url)) => url,
        Some(_) => return Err(invalid("`url` is not a string")),
        None => return Err(invalid("it has no `url`")),
    };
    if raw.len() > MAX_URL_LEN {
        return Err(InvalidUrlRequest(format!(
            "the URL is longer than {MAX_URL_LEN} bytes"
        )));
    }
    let url = url::Url::parse(raw)
        .map_err(|e| InvalidUrlRequest(format!("the URL does not parse: {e}")))?;
    if !matches!(url.scheme(), "https" | "http") {
        return Err(InvalidUrlRequest(format!(
            "the URL's scheme is `{}`; only http and https URLs are opened",
            url.scheme()
        )));
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("the URL has no host"))?
        .to_owned();
    let unicode_host = Some(idna::domain_to_unicode(&host).0).filter(|u| *u != host);
    let mut warnings = Vec::new();
    if unicode_host.is_some() || host.split('.').any(|l| l.starts_with("xn--")) {
        warnings.push(UrlWarning::Punycode);
    }
    if !url.username().is_empty() || url.password().is_some() {
        warnings.push(UrlWarning::UserInfo);
    }
    if url.scheme() == "http" && !is_loopback(&url) {
        warnings.push(UrlWarning::NotHttps);
    }
    Ok(UrlRequest {
        message,
        url: url.into(),
        host,
        unicode_host,
        elicitation_id,
        warnings,
    })
}

/// Whether `url` names this machine (plain http is then no exposure).
fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The `ElicitResult` for `answer`: `accept` with no content, `decline`,
/// or `cancel`.
pub fn url_result(answer: UrlAnswer) -> Value {
    match answer {
        UrlAnswer::Opened => json!({ "action": "accept" }),
        UrlAnswer::Declined | UrlAnswer::CouldNotAsk => super::declined(),
        UrlAnswer::Dismissed => json!({ "action": "cancel" }),
    }
}

/// The URL elicitations of a -32042 error's `data`
/// (`{"elicitations": [ElicitRequestURLParams, ...]}`), each checked as a
/// request is (an `elicitationId` required). Fails when there is none, or
/// when any cannot be shown: the caller then keeps the error as the
/// server sent it.
pub fn required_elicitations(data: Option<&Value>) -> Result<Vec<UrlRequest>, InvalidUrlRequest> {
    let list = data
        .and_then(|d| d.get("elicitations"))
        .and_then(Value::as_array)
        .ok_or_else(|| InvalidUrlRequest("the error's data has no `elicitations` list".into()))?;
    if list.is_empty() {
        return Err(InvalidUrlRequest("the error lists no elicitations".into()));
    }
    if list.len() > super::MAX_REQUIRED_ELICITATIONS {
        return Err(InvalidUrlRequest(format!(
            "the error lists {} elicitations (at most {})",
            list.len(),
            super::MAX_REQUIRED_ELICITATIONS
        )));
    }
    list.iter()
        .map(|e| url_request_from_params(e, true))
        .collect()
}
