//! The fuzz harness of rho's protocol core: the checks behind every fuzz
//! target, and the scripted servers, hosts and models of what the client
//! may send that the session targets drive.
//!
//! This crate owns everything a fuzz target runs besides the core itself:
//! the structured inputs (`arbitrary` decodes them; [`encode`] writes them
//! back, for hand-written seeds), the script of a server ([`script`]), the
//! stdio and HTTP session harnesses ([`session`], [`http`]) and the plain
//! `check_*` functions below. It drives `rho-proto-core` as a host does,
//! through its public API; the one exception is the core's `fuzzing`
//! feature, three constructors of ids a host never makes
//! (`rho_proto_core::fuzzing`). The core does not depend on it: layers
//! point one way.
//!
//! Each `check_*` function takes the raw input bytes of its fuzz target and
//! panics when an invariant breaks. The cargo-fuzz crate (`fuzz/`) calls
//! them from its targets, and `tests/fuzz_corpus.rs` replays every
//! committed corpus file through them in the normal test run, so a crash
//! the fuzzer found once stays fixed. Structured targets decode their bytes
//! with [`arbitrary::Unstructured`] exactly as `libfuzzer-sys` does, so a
//! crash file replays to the same input in both places.
//!
//! Not a library for hosts: shaped by what the fuzzer needs, and never
//! published. Nothing here reads a clock; the session checks take their
//! time origin from the caller.
//!
//! | target | input | invariants |
//! |---|---|---|
//! | `jsonrpc` | bytes | [`check_jsonrpc`] |
//! | `lines` | [`Chunked`] | [`check_lines`] |
//! | `sse` | [`Chunked`] | [`check_sse`] |
//! | `config` | UTF-8 text (lossy) | [`check_config`] |
//! | `naming` | `server\0tool` (lossy) | [`check_naming`] |
//! | `session` | [`session::SessionInput`] | [`session::check_session`] |
//! | `http_session` | [`http::HttpInput`] | [`http::check_http_session`] |
//! | `oauth` | selector byte + text (or answers) | [`check_oauth`] |
//! | `apps` | lines: a view's messages and rho's moves | [`check_apps`] |

pub mod encode;
pub mod http;
pub mod script;
pub mod session;

use arbitrary::{Arbitrary, Unstructured};

use serde_json::Value;

use rho_proto_core::config;
use rho_proto_core::fuzzing;
use rho_proto_core::runtime::naming;
use rho_proto_core::wire::framing::{FrameError, LineDecoder};
use rho_proto_core::wire::jsonrpc::{self, ClientRequestId, Incoming, Message};
use rho_proto_core::wire::sse::{SseDecoder, SseError, SseEvent};

/// The line cap of the `lines` target: small, so that overlong lines and
/// the discarding state are reached all the time.
pub const LINES_CAP: usize = 64;

/// The event cap of the `sse` target: small for the same reason, yet room
/// for a short JSON-RPC message.
pub const SSE_CAP: usize = 256;

/// A byte stream and where to cut it: the `lines` and `sse` input.
///
/// The stream is pushed in pieces of `chunks[0]`, `chunks[1]`, ... bytes;
/// whatever is left after the last length is one more piece. On the wire
/// (as `arbitrary` reads it) that is `[1, len]*`, a `0`, then the stream,
/// so a file starting with a `0` byte is its stream pushed whole.
#[derive(Arbitrary, Clone, Debug, PartialEq, Eq)]
pub struct Chunked<'a> {
    /// Piece lengths, in stream order.
    pub chunks: Vec<u8>,
    /// The stream.
    pub stream: &'a [u8],
}

impl Chunked<'_> {
    /// The stream cut into pieces per `chunks`; the pieces concatenate to
    /// the stream, and empty pieces are kept (an empty push is legal).
    pub fn pieces(&self) -> Vec<&[u8]> {
        let mut rest = self.stream;
        let mut pieces = Vec::with_capacity(self.chunks.len() + 1);
        for &len in &self.chunks {
            let (piece, tail) = rest.split_at(usize::from(len).min(rest.len()));
            pieces.push(piece);
            rest = tail;
        }
        pieces.push(rest);
        pieces
    }
}

/// Decodes a structured input as `libfuzzer-sys`'s `fuzz_target!` does;
/// `None` when `arbitrary` rejects the bytes.
pub fn decode<'a, T: Arbitrary<'a>>(data: &'a [u8]) -> Option<T> {
    T::arbitrary_take_rest(Unstructured::new(data)).ok()
}

// ---------------------------------------------------------------------------
// jsonrpc
// ---------------------------------------------------------------------------

/// `jsonrpc`: [`Incoming::parse`] on arbitrary bytes never panics, agrees
/// with reading the frame into a whole [`Value`] first (what it skips
/// building), and every message it accepts survives a round trip through
/// the serializer the session writes with (where one exists for its shape).
pub fn check_jsonrpc(data: &[u8]) {
    let parsed = Incoming::parse(data);
    assert_eq!(
        parsed,
        parse_via_value(data),
        "differs from the Value reading"
    );
    match parsed {
        Ok(Incoming::Single(message)) => round_trip(&message),
        Ok(Incoming::Batch(items)) => {
            assert!(!items.is_empty(), "an empty batch parsed");
            for item in &items {
                match item {
                    Ok(message) => round_trip(message),
                    Err(error) => drop(error.to_string()),
                }
            }
        }
        Err(error) => drop(error.to_string()),
    }
}

/// The slow reading [`Incoming::parse`] must agree with: the whole frame
/// as a [`Value`], then [`Message::from_value`].
fn parse_via_value(data: &[u8]) -> Result<Incoming, jsonrpc::ParseError> {
    let value: Value = serde_json::from_str(jsonrpc::frame_text(data)?)
        .map_err(|e| jsonrpc::ParseError::NotJson(e.to_string()))?;
    match value {
        Value::Array(items) if items.is_empty() => {
            Err(jsonrpc::ParseError::Invalid("empty batch".into()))
        }
        Value::Array(items) => Ok(Incoming::Batch(
            items.into_iter().map(Message::from_value).collect(),
        )),
        other => Message::from_value(other).map(Incoming::Single),
    }
}

/// Serializes `message` with the session's own writer and parses it back.
fn round_trip(message: &Message) {
    let bytes = match message {
        Message::Request { id, method, params } => match ClientRequestId::from_wire(id) {
            Some(id) => jsonrpc::request_bytes(id, method, params.as_ref()),
            None => return,
        },
        Message::Notification { method, params } => {
            jsonrpc::notification_bytes(method, params.as_ref())
        }
        Message::Response { id, result } => {
            jsonrpc::response_bytes(&fuzzing::server_request_id(id.clone()), result)
        }
        Message::Error {
            id: Some(id),
            error,
        } => jsonrpc::error_bytes(&fuzzing::server_request_id(id.clone()), error),
        Message::Error { id: None, .. } => return,
    };
    match Incoming::parse(&bytes) {
        Ok(Incoming::Single(again)) => assert_eq!(
            &again,
            message,
            "round trip through {:?}",
            String::from_utf8_lossy(&bytes)
        ),
        other => panic!(
            "our own serialization {:?} did not parse back: {other:?}",
            String::from_utf8_lossy(&bytes)
        ),
    }
}

// ---------------------------------------------------------------------------
// lines
// ---------------------------------------------------------------------------

/// `lines`: a [`LineDecoder`] with a cap of [`LINES_CAP`], fed the stream
/// in the input's pieces, never panics; holds at most the cap plus the
/// piece just pushed; emits lines with no `\n`, not blank and within the
/// cap (bytes as sent: UTF-8 is the session's check, see
/// [`FrameError::not_utf8`]) (a line may end in `\r` when `\r\r\n` ended it:
/// only one CR is stripped); and emits exactly what a
/// line-by-line reading of the whole stream gives, however it is cut.
pub fn check_lines(data: &[u8]) {
    let Some(input) = decode::<Chunked<'_>>(data) else {
        return;
    };
    let mut decoder = LineDecoder::new(LINES_CAP);
    let mut got = Vec::new();
    for piece in input.pieces() {
        decoder.push(piece);
        assert!(
            decoder.buffered() <= LINES_CAP + piece.len(),
            "{} bytes buffered after a {}-byte push",
            decoder.buffered(),
            piece.len()
        );
        while let Some(item) = decoder.next_line() {
            let item = item.map(<[u8]>::to_vec);
            check_line(&item);
            got.push(item);
        }
        assert!(decoder.buffered() <= LINES_CAP, "{}", decoder.buffered());
    }
    while let Some(item) = decoder.finish() {
        let item = item.map(<[u8]>::to_vec);
        check_line(&item);
        got.push(item);
    }
    assert_eq!(decoder.buffered(), 0, "finish leaves nothing behind");
    assert_eq!(
        got,
        lines_model(input.stream, LINES_CAP),
        "differs from the model"
    );
}

fn check_line(item: &Result<Vec<u8>, FrameError>) {
    match item {
        Ok(line) => {
            assert!(!line.contains(&b'\n'), "a line holds a newline: {line:?}");
            assert!(line.len() <= LINES_CAP, "a {}-byte line passed", line.len());
            assert!(
                !line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')),
                "a blank line was delivered"
            );
        }
        Err(FrameError::TooLong { limit, len, head }) => {
            assert_eq!(*limit, LINES_CAP);
            assert!(
                *len > LINES_CAP && head.len() <= LINES_CAP,
                "{len} {}",
                head.len()
            );
        }
        Err(error @ FrameError::NotUtf8 { .. }) => {
            panic!("the decoder does not check UTF-8, yet reported {error:?}")
        }
    }
}

/// What [`LineDecoder`] must deliver for a whole stream, read the slow way:
/// split at every `\n`; a piece longer than the cap (counting a trailing
/// `\r`) is one `TooLong`, even unterminated at the end.
fn lines_model(stream: &[u8], cap: usize) -> Vec<Result<Vec<u8>, FrameError>> {
    let mut out = Vec::new();
    for raw in stream.split(|&b| b == b'\n') {
        if raw.len() > cap {
            out.push(Err(FrameError::TooLong {
                limit: cap,
                len: raw.len(),
                head: raw[..raw
                    .len()
                    .min(cap)
                    .min(rho_proto_core::wire::framing::ERROR_HEAD)]
                    .to_vec(),
            }));
            continue;
        }
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        out.push(Ok(line.to_vec()));
    }
    out
}

// ---------------------------------------------------------------------------
// sse
// ---------------------------------------------------------------------------

/// Everything an [`SseDecoder`] reported for one stream, for comparing.
#[derive(Debug, PartialEq, Eq)]
struct SseRun {
    items: Vec<Result<SseEvent, SseError>>,
    last_event_id: Option<String>,
    retry: Option<u64>,
}

/// `sse`: an [`SseDecoder`] with a cap of [`SSE_CAP`] never panics; after
/// each push and drain holds at most the cap; emits events whose type,
/// data and id fit the format (no CR, no LF outside data, no NUL in ids,
/// data within the cap); and gives the same events, last event id and
/// retry for the stream pushed whole and pushed in the input's pieces.
pub fn check_sse(data: &[u8]) {
    let Some(input) = decode::<Chunked<'_>>(data) else {
        return;
    };
    let whole = sse_run(&[input.stream]);
    let pieces = sse_run(&input.pieces());
    assert_eq!(pieces, whole, "chunking changed what the stream means");
    // Byte by byte is the harshest split there is.
    if input.stream.len() <= 512 {
        let bytes: Vec<&[u8]> = input.stream.chunks(1).collect();
        assert_eq!(sse_run(&bytes), whole, "one-byte pushes changed the stream");
    }
}

fn sse_run(pieces: &[&[u8]]) -> SseRun {
    let mut decoder = SseDecoder::new(SSE_CAP);
    let mut items = Vec::new();
    for piece in pieces {
        decoder.push(piece);
        while let Some(item) = decoder.next_event() {
            check_sse_item(&item);
            items.push(item);
        }
        assert!(decoder.buffered() <= SSE_CAP, "{}", decoder.buffered());
    }
    while let Some(item) = decoder.finish() {
        check_sse_item(&item);
        items.push(item);
    }
    assert_eq!(decoder.buffered(), 0, "finish leaves nothing behind");
    SseRun {
        items,
        last_event_id: decoder.last_event_id().map(str::to_owned),
        retry: decoder.retry(),
    }
}

fn check_sse_item(item: &Result<SseEvent, SseError>) {
    match item {
        Ok(event) => {
            assert!(!event.event.is_empty(), "an event without a type");
            assert!(
                !event.event.contains(['\r', '\n']),
                "type {:?}",
                event.event
            );
            assert!(!event.data.contains('\r'), "data {:?}", event.data);
            assert!(
                event.data.len() <= SSE_CAP,
                "{} data bytes",
                event.data.len()
            );
            if let Some(id) = &event.id {
                assert!(!id.is_empty(), "an empty id is no id");
                assert!(!id.contains(['\r', '\n', '\0']), "id {id:?}");
            }
        }
        Err(SseError::TooLarge { limit }) => assert_eq!(*limit, SSE_CAP),
    }
}

// ---------------------------------------------------------------------------
// config
// ---------------------------------------------------------------------------

/// `config`: [`config::parse`] on arbitrary text never panics, and every
/// position it reports (file or entry error) is a real 1-based
/// line and column of that text.
pub fn check_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match config::parse(&text, "fuzz.toml") {
        Ok(parsed) => {
            for entry in &parsed.servers {
                match &entry.config {
                    Ok(server) => {
                        assert_eq!(server.id.as_str(), entry.id);
                        assert_eq!(
                            config::ServerId::new(entry.id.clone()).as_ref(),
                            Ok(&server.id),
                            "a loaded entry's id is a valid server id, unchanged"
                        );
                    }
                    Err(error) => {
                        assert_eq!(error.id, entry.id);
                        check_position(&text, error.line, error.column, &error.to_string());
                    }
                }
            }
            let _ = parsed.enabled().count();
        }
        Err(error) => check_position(&text, error.line, error.column, &error.to_string()),
    }
}

fn check_position(text: &str, line: usize, column: usize, message: &str) {
    assert!(
        line >= 1 && column >= 1,
        "position {line}:{column}: {message}"
    );
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(at) = lines.get(line - 1) else {
        panic!("line {line} of {}: {message}", lines.len());
    };
    let chars = at.chars().count();
    assert!(column <= chars + 1, "column {column} of {chars}: {message}");
}

// ---------------------------------------------------------------------------
// naming
// ---------------------------------------------------------------------------

/// `naming`: the input (lossy UTF-8) split at its first NUL is a (server,
/// tool) pair, or (text, "") without one. [`naming::exported_name`] of the
/// pair uses only `[A-Za-z0-9_]` and [`naming::parse_exported_name`] gives
/// the pair back; and `parse_exported_name` of the whole text never panics
/// and, when it accepts it, is inverted by `exported_name`.
pub fn check_naming(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (server, tool) = text.split_once('\0').unwrap_or((&text, ""));
    let name = naming::exported_name(server, tool);
    assert!(
        name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'),
        "{name:?}"
    );
    assert_eq!(
        naming::parse_exported_name(&name),
        Some((server.to_owned(), tool.to_owned())),
        "{name:?}"
    );
    for candidate in [&*text, server, tool] {
        if let Some((s, t)) = naming::parse_exported_name(candidate) {
            assert_eq!(naming::exported_name(&s, &t), candidate, "not canonical");
        }
    }
}

// ---------------------------------------------------------------------------
// oauth

/// The `oauth` target: the first byte picks the parser, the rest is its
/// input. 0: `WWW-Authenticate` text; 1: a protected resource metadata
/// document; 2: an authorization server metadata document; `R`: a
/// re-authorization ([`check_reauthorization`]); else a callback query.
/// Every parser is total, and whatever it accepts holds the checks rho
/// relies on: challenge schemes and parameter names are tokens, an
/// accepted document names this server (or a parent) and the expected
/// issuer with S256 and an https token endpoint, an accepted callback
/// carried this login's state. `origin` is the login's clock origin.
pub fn check_oauth(data: &[u8], origin: std::time::Instant) {
    use rho_proto_core::oauth::{authorize, challenge, discovery, pkce};
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let Ok(server) = url::Url::parse("https://mcp.example.com/mcp") else {
        return;
    };
    match kind {
        0 => {
            let all = challenge::parse_challenges(text.split('\n'));
            for c in &all {
                assert!(!c.scheme.is_empty());
                assert!(
                    c.scheme
                        .bytes()
                        .all(|b| b.is_ascii_graphic() && b != b',' && b != b'"' && b != b'='),
                    "{:?}",
                    c.scheme
                );
                for (name, _) in &c.params {
                    assert!(
                        !name.is_empty() && !name.bytes().any(|b| b.is_ascii_uppercase()),
                        "{name:?}"
                    );
                }
            }
            // The Bearer challenge, else the DPoP one (RFC 9449 §7.1: the
            // same parameters under the other scheme).
            let bearer = challenge::bearer_challenge(text.split('\n'));
            let scheme = |name: &str| all.iter().find(|c| c.scheme.eq_ignore_ascii_case(name));
            let first = scheme("bearer").or_else(|| scheme("dpop"));
            assert_eq!(bearer.is_some(), first.is_some());
            if let (Some(b), Some(c)) = (bearer, first) {
                assert_eq!(b.resource_metadata.as_deref(), c.param("resource_metadata"));
                assert_eq!(b.error.as_deref(), c.param("error"));
                assert_eq!(b.dpop, scheme("dpop").is_some());
            }
        }
        1 => {
            if let Ok(prm) = discovery::read_resource_metadata(rest, &server) {
                assert!(!prm.authorization_servers.is_empty());
                let found =
                    url::Url::parse(&prm.resource).map(|u| discovery::canonical_resource(&u));
                let expected = discovery::canonical_resource(&server);
                assert!(
                    found.is_ok_and(|f| expected.starts_with(&f)),
                    "{}",
                    prm.resource
                );
            }
        }
        2 => {
            let issuer = "https://auth.example.com";
            if let Ok(doc) = discovery::read_authorization_server_metadata(rest, issuer, &server) {
                assert_eq!(doc.issuer, issuer);
                let methods = doc.code_challenge_methods_supported.unwrap_or_default();
                assert!(methods.iter().any(|m| m == "S256"));
                let token = doc.token_endpoint.unwrap_or_default();
                match discovery::check_endpoint("t", &token, &server) {
                    Ok(url) => assert_eq!(url.scheme(), "https", "{token}"),
                    Err(error) => panic!("a read document's token endpoint is usable: {error}"),
                }
            }
        }
        b'R' => check_reauthorization(rest, origin),
        _ => {
            let login = pkce::Pkce::from_random(&[5; pkce::RANDOM_BYTES]);
            let issuer = "https://auth.example.com";
            if authorize::read_callback(&text, &login, issuer, kind % 2 == 0).is_ok() {
                let state = url::form_urlencoded::parse(text.trim_start_matches('?').as_bytes())
                    .find(|(k, _)| k == "state")
                    .map(|(_, v)| v.into_owned());
                assert_eq!(state.as_deref(), Some(login.state.as_str()));
            }
        }
    }
}

/// A login that re-authorizes with stored credentials, against answers the
/// input scripts: the first byte says whether the stored login's issuer is
/// the one the well-formed seeds name (even) or another (odd); then each
/// request gets the next NUL-separated answer (its first byte: below 128
/// is 200, else a 4xx; none left: 404). Invariants: every request goes
/// over https, the login ends within a bounded number of requests, and
/// once it reported that the server moved to another issuer
/// ([`LoginEvent::IssuerChanged`](rho_proto_core::oauth::flow::LoginEvent)) nothing
/// of the old login (refresh token, client id, secret) is sent anywhere
/// and what it finishes with is not the old issuer's.
pub fn check_reauthorization(data: &[u8], origin: std::time::Instant) {
    use rho_proto_core::oauth::flow::{Credentials, GrantKind, Login, LoginEvent, LoginSettings};
    use rho_proto_core::oauth::pkce::RANDOM_BYTES;
    use rho_proto_core::oauth::token::{Client, ClientAuth, TokenResponse};
    let Some((&mode, answers)) = data.split_first() else {
        return;
    };
    let old = if mode % 2 == 0 {
        "https://auth.example.com"
    } else {
        "https://old.example.com"
    };
    let (Ok(server), Ok(token_endpoint)) = (
        url::Url::parse("https://mcp.example.com/mcp"),
        url::Url::parse(&format!("{old}/token")),
    ) else {
        return;
    };
    let client = Client {
        id: "old-client-id".into(),
        secret: Some("old-secret".into()),
        auth: ClientAuth::ClientSecretPost,
    };
    let previous = Credentials {
        issuer: old.into(),
        client: client.clone(),
        resource: "https://mcp.example.com/mcp".into(),
        token_endpoint,
        scope: None,
        tokens: TokenResponse {
            access_token: "old-access".into(),
            token_type: "Bearer".into(),
            expires_in: None,
            refresh_token: Some("old-refresh".into()),
            scope: None,
        },
    };
    let settings = LoginSettings {
        stored_client: Some((old.into(), client)),
        previous: Some(previous),
        ..LoginSettings::new(
            server,
            GrantKind::AuthorizationCode {
                redirect_uri: "http://127.0.0.1:1/callback".into(),
            },
        )
    };
    let mut login = Login::new(settings, None, [7; RANDOM_BYTES], origin);
    let mut answers = answers.split(|&b| b == 0);
    let mut moved = false;
    let old_basic = "b2xkLWNsaWVudC1pZDpvbGQtc2VjcmV0"; // old-client-id:old-secret
    for _ in 0..16 {
        while let Some(event) = login.poll_event() {
            match event {
                LoginEvent::IssuerChanged { previous, current } => {
                    assert_eq!(previous, old);
                    assert_ne!(current, old);
                    moved = true;
                }
                LoginEvent::Authorize { url } => {
                    let client = url.query_pairs().find(|(k, _)| k == "client_id");
                    assert!(
                        !moved || client.is_some_and(|(_, v)| v != "old-client-id"),
                        "{url}"
                    );
                    return;
                }
                LoginEvent::Done(done) => {
                    assert!(!moved || (done.issuer != old && done.client.id != "old-client-id"));
                    return;
                }
                LoginEvent::Failed(_) => return,
                _ => {}
            }
        }
        let Some(request) = login.poll_request() else {
            return;
        };
        assert_eq!(request.url.scheme(), "https", "{}", request.url);
        if moved {
            let body = String::from_utf8_lossy(&request.body);
            for secret in ["old-refresh", "old-client-id", "old-secret"] {
                assert!(!body.contains(secret), "{secret} sent to {}", request.url);
            }
            assert!(
                !request.headers.iter().any(|(_, v)| v.contains(old_basic)),
                "the old client's credentials sent to {}",
                request.url
            );
        }
        let (status, body) = match answers.next().and_then(|a| a.split_first()) {
            Some((&first, body)) if first < 128 => (200, body),
            Some((&first, body)) => (400 + u16::from(first % 100), body),
            None => (404, &[][..]),
        };
        login.handle_response(origin, request.id, status, body);
    }
    panic!("a login that never ends");
}

// ---------------------------------------------------------------------------
// apps

/// The `apps` target: an MCP App view's dialogue with rho
/// ([`rho_proto_core::features::apps::ViewBridge`]) and the CSP rho builds
/// from what a view declares. The input is lines (lossy UTF-8); each is a
/// message from the view (JSON, or anything else, which must be dropped),
/// or, after one of these first bytes, something rho does: `R` the tool's
/// result arrives, `C` the call is cancelled, `T` rho tears the view
/// down, `A` rho answers the view's last request, `P` the rest is a
/// view's `_meta.ui.csp`.
///
/// Checks: every message rho sends the view is a JSON-RPC 2.0 message
/// (a notification, a request, or an answer with exactly one of `result`
/// and `error`); an answer answers a request the view sent (its id as
/// sent) or nothing rho made up; rho sends no notification before the view
/// said `ui/notifications/initialized` after a `ui/initialize`; nothing the
/// view sends before `ui/initialize` becomes an ask; and the CSP header has
/// its thirteen directives, one space between words, and no source that
/// could loosen it (`'unsafe-eval'`, a bare `*`, a scheme other than
/// `https:`/`wss:` or loopback `http:`/`ws:` beside `blob:`/`data:`).
pub fn check_apps(data: &[u8]) {
    use rho_proto_core::features::apps::{ViewBridge, ViewCsp, ViewSetup};
    use serde_json::{Value, json};

    let text = String::from_utf8_lossy(data);
    let mut bridge = ViewBridge::new(ViewSetup {
        tool: json!({"name": "show", "inputSchema": {"type": "object"}}),
        arguments: json!({}),
        host_info: json!({"name": "rho", "version": "fuzz"}),
        approved_csp: json!({}),
        locale: None,
        time_zone: None,
    });
    let mut requested: Vec<Value> = Vec::new();
    let mut initialize_sent = false;
    let mut initialized = false;
    for line in text.split('\n') {
        let mut chars = line.chars();
        let first = chars.next();
        let rest = chars.as_str();
        match first {
            Some('R') => bridge.tool_result(json!({"content": [{"type": "text", "text": rest}]})),
            Some('C') => bridge.tool_cancelled(rest),
            Some('T') => bridge.teardown(rest),
            Some('A') => {
                if let Some(id) = requested.last().cloned() {
                    bridge.answer(id, Ok(json!({})));
                }
            }
            Some('P') => check_view_csp(&ViewCsp::of(serde_json::from_str(rest).ok().as_ref())),
            _ => {
                let message = serde_json::from_str::<Value>(line).unwrap_or(Value::Null);
                let method = message.get("method").and_then(Value::as_str);
                let id = message
                    .get("id")
                    .filter(|id| id.is_string() || id.is_number());
                if message.get("jsonrpc").and_then(Value::as_str) == Some("2.0") {
                    if let (Some(_), Some(id)) = (method, id) {
                        requested.push(id.clone());
                    }
                    match method {
                        Some("ui/initialize") if id.is_some() => initialize_sent = true,
                        Some("ui/notifications/initialized") if initialize_sent => {
                            initialized = true;
                        }
                        _ => {}
                    }
                }
                let ask = bridge.receive(&message);
                if ask.is_some() {
                    assert!(initialize_sent, "an ask before ui/initialize: {message}");
                }
            }
        }
        while let Some(out) = bridge.poll_output() {
            assert_eq!(out["jsonrpc"], "2.0", "{out}");
            match (out.get("method"), out.get("id")) {
                (Some(method), _) => {
                    assert!(method.is_string(), "{out}");
                    if out.get("id").is_none() {
                        assert!(initialized, "a notification before initialized: {out}");
                    }
                }
                (None, Some(id)) => {
                    assert!(
                        out.get("result").is_some() != out.get("error").is_some(),
                        "{out}"
                    );
                    assert!(requested.contains(id), "an answer to no request: {out}");
                }
                (None, None) => panic!("neither a request, a notification nor an answer: {out}"),
            }
        }
    }
}

/// The CSP built from whatever a view declared: thirteen directives, and
/// no source that loosens the policy.
fn check_view_csp(csp: &rho_proto_core::features::apps::ViewCsp) {
    let header = csp.header("http://127.0.0.1:1 http://127.0.0.1:2");
    let directives: Vec<&str> = header.split("; ").collect();
    assert_eq!(directives.len(), 13, "{header}");
    for directive in directives {
        assert!(
            !directive.contains("  ") && !directive.contains(';') && directive.is_ascii(),
            "{header}"
        );
        for source in directive.split(' ').skip(1) {
            let keyword = matches!(
                source,
                "'none'" | "'self'" | "'unsafe-inline'" | "blob:" | "data:"
            );
            let origin = source.starts_with("https://")
                || source.starts_with("wss://")
                || source.starts_with("http://127.0.0.1:")
                || source.starts_with("http://localhost")
                || source.starts_with("ws://127.0.0.1")
                || source.starts_with("ws://localhost");
            assert!(keyword || origin, "source {source:?} in {header}");
            assert!(source != "*" && !source.ends_with("://*"), "{header}");
        }
    }
}
