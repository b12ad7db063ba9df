//! Deterministic record and replay of one connection.
//!
//! Because the core is pure, a session is fully determined by what went
//! in: the options it started with, the time of every input as an offset
//! from the start, the transport's bytes and events, and the host's
//! commands and answers. A [`Recorder`] writes all of that — and every
//! output the executor polled, including the `None`s that ended each drain
//! — as JSON lines. [`replay`] feeds the inputs into a fresh connection at
//! the same offsets and checks that every poll returns exactly what was
//! recorded, reporting the first divergence with its context. Replay
//! touches no process, socket or clock (the caller supplies the time
//! origin).
//!
//! # Format (version 2)
//!
//! One JSON object per line. A transcript may hold several sessions (a
//! run with several servers); every line names its session in `"s"`.
//!
//! - `{"s":ID,"rho_transcript":1,"session":{...},"http":{...}|null}` — the
//!   header, first for each session: the session options and, for HTTP,
//!   the transport options. Configured header values are written as
//!   `<redacted>`, here and in every recorded request.
//!
//! Whatever a server echoes of its secrets is hidden too: every line is
//! written through the server's [`Redactor`] (its configured `headers`,
//! `headers_from_env`, `env` and `env_from_env` values; see
//! [`crate::text::redact`]), so a response head, body, stdout line, failure
//! reason or event that quotes a token records `<redacted>` in its place.
//! Replay feeds those redacted inputs to a fresh core, which then produces
//! `<redacted>` wherever it copied the secret before, so the recorded and
//! replayed outputs still agree.
//! - `{"s":ID,"t":MICROS,"in":KIND,...}` — an input at `t` µs after start:
//!   `stdio` (`data`), `stdio_closed` (`detail`), `transport_failed`
//!   (`reason`), `http_head` (`x`, `status`, `headers`), `http_body` (`x`,
//!   `data`), `http_end` (`x`), `http_failed` (`x`, `reason`, and `kind`
//!   when the executor told one: `unknown_issuer`, `invalid_certificate`),
//!   `timeout` (`due`: the deadline `poll_timeout` reported, in µs after
//!   start, and `timer`: what it was for, or both `null`), `call` (`tool`,
//!   `args`),
//!   `cancel` (`call`), `close`,
//!   `answer_elicitation` (`question`, `answer`), `answer_url`, `answer_sampling`
//!   (`question`, `answer`), `answer_authorization` (`question`, `answer`:
//!   `{"authorized":"<redacted>"}` or `{"refused":REASON}`).
//! - `{"s":ID,"poll":"output"|"event"|"call_id","got":...}` — what a poll
//!   (or `call_tool`) returned; `null` for `None`.
//!
//! Bytes are a JSON string when they are UTF-8, else `{"bytes":[...]}`.
//! Events are recorded as structured JSON (their `serde` form: a variant
//! is an object keyed by its snake_case name, a unit variant a string), so
//! replay compares values, not text, and a change to how an event prints
//! does not invalidate every transcript. `poll_timeout` is not recorded
//! where it is read (reading it has no effect); the `timeout` input
//! carries the deadline that was due.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use url::Url;

use crate::config::OAuthGrant;
use crate::connection::{Connection, HttpInput, Output};
use crate::features::elicitation::{FormAnswer, UrlAnswer};
use crate::http::{
    AuthorizationError, ExchangeId, HttpFailure, HttpFailureKind, HttpOptions, HttpOutput,
    HttpRequest,
};
use crate::session::{
    CallId, Event, Framing, QuestionId, SamplingAnswer, SessionOptions, TaskAugmentation,
};
use crate::text::redact::Redactor;
use crate::wire::protocol::Implementation;

/// The transcript format version. Version 2 records events as structured
/// JSON and the due deadline on `timeout` inputs; version 1 transcripts
/// (events as `Debug` text, `poll_timeout` recorded) are refused.
pub const VERSION: u64 = 2;

/// What replaces a configured header's value (and any echoed secret) in a
/// transcript.
pub const REDACTED: &str = crate::text::redact::REDACTED;

/// Records one connection's inputs and outputs as transcript lines.
#[derive(Debug)]
pub struct Recorder {
    session: String,
    origin: Instant,
    secret_headers: Vec<String>,
    redactor: Redactor,
    lines: VecDeque<String>,
}

impl Recorder {
    /// A recorder for the session `session` that started at `origin`,
    /// writing the header line at once; every line passes through
    /// `redactor`.
    pub(crate) fn new(
        session: &str,
        origin: Instant,
        options: &SessionOptions,
        http: Option<&HttpOptions>,
        redactor: Redactor,
    ) -> Self {
        // A re-authorization adds an Authorization header the options
        // did not have: it is always secret, and so is a DPoP proof (one
        // replayed within its lifetime stands in for the key).
        let secret_headers: Vec<String> = http
            .map(|h| {
                h.headers
                    .iter()
                    .map(|(k, _)| k.to_ascii_lowercase())
                    .chain(["authorization".to_owned(), "dpop".to_owned()])
                    .collect()
            })
            .unwrap_or_default();
        let mut recorder = Self {
            session: session.to_owned(),
            origin,
            secret_headers,
            redactor,
            lines: VecDeque::new(),
        };
        let header = json!({
            "rho_transcript": VERSION,
            "session": session_json(options),
            "http": http.map(http_json),
        });
        recorder.push(header);
        recorder
    }

    /// Takes the lines written so far, for the executor to append to its
    /// transcript file.
    pub fn take_lines(&mut self) -> Vec<String> {
        self.lines.drain(..).collect()
    }

    pub(crate) fn input(&mut self, now: Instant, kind: &str, mut fields: Map<String, Value>) {
        fields.insert(
            "t".into(),
            json!(micros(now.saturating_duration_since(self.origin))),
        );
        fields.insert("in".into(), json!(kind));
        self.push(Value::Object(fields));
    }

    pub(crate) fn poll(&mut self, kind: &str, got: Value) {
        self.push(json!({"poll": kind, "got": got}));
    }

    pub(crate) fn output_json(&self, output: Option<&Output>) -> Value {
        output_json(output, &self.secret_headers)
    }

    pub(crate) fn instant_json(&self, at: Option<Instant>) -> Value {
        at.map_or(Value::Null, |at| {
            json!(micros(at.saturating_duration_since(self.origin)))
        })
    }

    fn push(&mut self, mut line: Value) {
        if let Value::Object(map) = &mut line {
            map.insert("s".into(), json!(self.session));
        }
        self.lines
            .push_back(self.redactor.redact_owned(line.to_string()));
    }
}

/// Helpers to build input fields.
pub(crate) fn fields(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// An event (or the `None` that ended a drain) as transcript JSON.
pub(crate) fn event_json(event: Option<&Event>) -> Value {
    // The event types serialize with derived impls over plain data and
    // string-keyed maps, which cannot fail; `null` would show as a
    // divergence rather than hide.
    event.map_or(Value::Null, |e| {
        serde_json::to_value(e).unwrap_or(Value::Null)
    })
}

/// Bytes as JSON: a string when UTF-8, else `{"bytes":[...]}`.
pub(crate) fn bytes_json(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) => json!(text),
        Err(_) => json!({ "bytes": bytes }),
    }
}

fn bytes_from(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Object(map) => map
            .get("bytes")?
            .as_array()?
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect(),
        _ => None,
    }
}

/// A recorded call's or request's own budget (`budget_ms`), when it had
/// one.
fn budget_of(e: &Value) -> Option<Duration> {
    e.get("budget_ms")
        .and_then(Value::as_u64)
        .map(Duration::from_millis)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn session_json(o: &SessionOptions) -> Value {
    let mut header = json!({
        "server": o.server,
        "client_info": o.client_info,
        "capabilities": o.capabilities,
        "protocol_version": o.protocol_version,
        "discover_wait_ms": o.discover_wait.map(ms),
        "log_level": o.log_level.map(|l| l.as_str()),
        "startup_timeout_ms": ms(o.startup_timeout),
        "tool_timeout_ms": ms(o.tool_timeout),
        "request_timeout_ms": ms(o.request_timeout),
        "framing": match o.framing { Framing::Lines => "lines", Framing::Messages => "messages" },
        "max_line": o.max_line,
        "ping_interval_ms": o.ping_interval.map(ms),
        "workspace_root": o.workspace_root,
        "progress_extends_up_to_ms": o.progress_extends_up_to.map(ms),
        "elicitation": o.elicitation,
        "sampling": o.sampling,
    });
    // Written only when declared, so transcripts recorded where no one
    // could open a URL keep the header they always had.
    if o.elicitation_url
        && let Value::Object(map) = &mut header
    {
        map.insert("elicitation_url".into(), Value::Bool(true));
    }
    if o.apps
        && let Value::Object(map) = &mut header
    {
        map.insert("apps".into(), Value::Bool(true));
    }
    header
}

fn http_json(h: &HttpOptions) -> Value {
    json!({
        "url": h.url.as_str(),
        "headers": h.headers.iter().map(|(k, _)| json!([k, REDACTED])).collect::<Vec<_>>(),
        "max_body": h.max_body,
        "max_stream_resumes": h.max_stream_resumes,
        "default_retry_ms": ms(h.default_retry),
        "delete_timeout_ms": ms(h.delete_timeout),
        "ping_interval_ms": ms(h.ping_interval),
        "server_stream_wait_ms": ms(h.server_stream_wait),
        "oauth": h.oauth,
        "grant": h.grant.map(OAuthGrant::name),
        "reauthorize": h.reauthorize,
    })
}

fn output_json(output: Option<&Output>, secrets: &[String]) -> Value {
    match output {
        None => Value::Null,
        Some(Output::Write(bytes)) => json!({"write": bytes_json(bytes)}),
        Some(Output::Http(HttpOutput::Abort(x))) => json!({"abort": x.0}),
        Some(Output::Http(HttpOutput::Send(request))) => {
            json!({"send": request_json(request, secrets)})
        }
    }
}

fn request_json(r: &HttpRequest, secrets: &[String]) -> Value {
    let headers: Vec<Value> = r
        .headers
        .iter()
        .map(|(k, v)| {
            let secret = secrets.contains(&k.to_ascii_lowercase());
            json!([k, if secret { REDACTED } else { v.as_str() }])
        })
        .collect();
    json!({
        "x": r.exchange.0,
        "method": r.method.as_str(),
        "url": r.url.as_str(),
        "headers": headers,
        "body": bytes_json(&r.body),
    })
}

/// An authorization answer as transcript JSON: whether a header came
/// (never its value), or the host's reason.
pub(crate) fn authorization_answer_json(answer: &Result<String, AuthorizationError>) -> Value {
    match answer {
        Ok(_) => json!({"authorized": REDACTED}),
        Err(reason) => json!({"refused": reason.to_string()}),
    }
}

/// The answer [`authorization_answer_json`] wrote; a header comes back as
/// `<redacted>`, as every secret header of a recorded request does, and a
/// refusal as its words, which are all the core reads of it.
fn authorization_answer_from(value: &Value) -> Option<Result<String, AuthorizationError>> {
    if value.get("authorized").is_some() {
        return Some(Ok(REDACTED.to_owned()));
    }
    value
        .get("refused")
        .and_then(Value::as_str)
        .map(|r| Err(AuthorizationError::Refused(r.to_owned())))
}

/// An HTTP failure's kind as transcript JSON: `None` for
/// [`HttpFailureKind::Other`], which is not written.
pub(crate) fn failure_kind_json(kind: HttpFailureKind) -> Option<Value> {
    match kind {
        HttpFailureKind::Other => None,
        HttpFailureKind::UnknownIssuer => Some(json!("unknown_issuer")),
        HttpFailureKind::InvalidCertificate => Some(json!("invalid_certificate")),
    }
}

/// The kind [`failure_kind_json`] wrote; none (or one this version does
/// not know) is [`HttpFailureKind::Other`].
fn failure_kind_from(value: Option<&Value>) -> HttpFailureKind {
    match value.and_then(Value::as_str) {
        Some("unknown_issuer") => HttpFailureKind::UnknownIssuer,
        Some("invalid_certificate") => HttpFailureKind::InvalidCertificate,
        _ => HttpFailureKind::Other,
    }
}

/// `FormAnswer` as transcript JSON.
pub(crate) fn form_answer_json(answer: &FormAnswer) -> Value {
    match answer {
        FormAnswer::Submitted(values) => json!({ "submitted": values }),
        FormAnswer::Dismissed => json!("dismissed"),
        FormAnswer::Declined => json!("declined"),
        FormAnswer::CouldNotAsk => json!("could_not_ask"),
    }
}

fn form_answer_from(value: &Value) -> Option<FormAnswer> {
    match value {
        Value::String(s) if s == "dismissed" => Some(FormAnswer::Dismissed),
        Value::String(s) if s == "declined" => Some(FormAnswer::Declined),
        Value::String(s) if s == "could_not_ask" => Some(FormAnswer::CouldNotAsk),
        Value::Object(map) => {
            let submitted = map.get("submitted")?.as_object()?;
            let mut out = std::collections::BTreeMap::new();
            for (k, v) in submitted {
                let values = v
                    .as_array()?
                    .iter()
                    .map(|s| s.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()?;
                out.insert(k.clone(), values);
            }
            Some(FormAnswer::Submitted(out))
        }
        _ => None,
    }
}

/// The `question` an `answer_*` line answers.
fn question_of(e: &Value) -> Result<QuestionId, &'static str> {
    e.get("question")
        .and_then(Value::as_u64)
        .map(QuestionId)
        .ok_or("no question")
}

/// `UrlAnswer` as transcript JSON.
pub(crate) fn url_answer_json(answer: UrlAnswer) -> Value {
    serde_json::to_value(answer).unwrap_or(Value::Null)
}

fn url_answer_from(value: &Value) -> Option<UrlAnswer> {
    serde_json::from_value(value.clone()).ok()
}

/// `SamplingAnswer` as transcript JSON.
pub(crate) fn sampling_answer_json(answer: &SamplingAnswer) -> Value {
    match answer {
        SamplingAnswer::Completed { text, model } => {
            json!({"completed": {"text": text, "model": model}})
        }
        SamplingAnswer::Refused => json!("refused"),
        SamplingAnswer::Failed(reason) => json!({ "failed": reason }),
    }
}

fn sampling_answer_from(value: &Value) -> Option<SamplingAnswer> {
    match value {
        Value::String(s) if s == "refused" => Some(SamplingAnswer::Refused),
        Value::Object(map) => {
            if let Some(done) = map.get("completed") {
                return Some(SamplingAnswer::Completed {
                    text: done.get("text")?.as_str()?.to_owned(),
                    model: done.get("model")?.as_str()?.to_owned(),
                });
            }
            map.get("failed")?
                .as_str()
                .map(|r| SamplingAnswer::Failed(r.to_owned()))
        }
        _ => None,
    }
}

/// Why a replay did not confirm its transcript.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The text is not a rho transcript at all: empty, not JSON lines, or
    /// its first line is not a transcript header. Nothing was replayed.
    #[error("not a rho transcript: {0}")]
    NotATranscript(String),
    /// A line of a transcript cannot be read back (a damaged or hand-edited
    /// file, or one from another version).
    #[error("transcript line {line}: {reason}\n  line: {text}")]
    Malformed {
        /// 1-based line number in the transcript.
        line: usize,
        /// What is wrong with it.
        reason: String,
        /// The line, cut to 200 characters.
        text: String,
    },
    /// The core, fed the recorded inputs, produced other outputs.
    #[error(transparent)]
    Diverged(Divergence),
}

/// The first place a replay differed from its transcript.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "transcript line {line}: {what}\n  recorded: {expected}\n  replayed: {got}\n  after:\n{context}"
)]
pub struct Divergence {
    /// 1-based line number in the transcript.
    pub line: usize,
    /// What was being compared.
    pub what: String,
    /// The recorded value (what the transcript expects).
    pub expected: String,
    /// What the replay produced.
    pub got: String,
    /// The lines before it, indented.
    pub context: String,
}

/// What a successful replay covered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplaySummary {
    /// Sessions replayed.
    pub sessions: usize,
    /// Inputs fed.
    pub inputs: usize,
    /// Polls compared.
    pub polls: usize,
}

/// Replays every session of a transcript and checks every recorded poll.
/// `origin` is the time origin the offsets are added to (any instant: the
/// core only compares instants with each other).
pub fn replay(transcript: &str, origin: Instant) -> Result<ReplaySummary, ReplayError> {
    let lines: Vec<(usize, &str)> = transcript
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect();
    let Some((_, first)) = lines.first() else {
        return Err(ReplayError::NotATranscript("the file is empty".into()));
    };
    let is_header = serde_json::from_str::<Value>(first)
        .ok()
        .is_some_and(|v| v.get("rho_transcript").is_some());
    if !is_header {
        return Err(ReplayError::NotATranscript(
            "its first line is not a transcript header (record one with `--record FILE`)".into(),
        ));
    }
    let mut sessions: Vec<String> = Vec::new();
    let mut parsed = Vec::with_capacity(lines.len());
    for (n, line) in &lines {
        let value: Value = serde_json::from_str(line)
            .map_err(|e| malformed(*n, &format!("not a JSON line: {e}"), line))?;
        let session = value
            .get("s")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !sessions.contains(&session) {
            sessions.push(session.clone());
        }
        parsed.push((*n, session, value));
    }
    let mut summary = ReplaySummary::default();
    for session in &sessions {
        let mut conn: Option<Connection> = None;
        let mut calls: VecDeque<Option<CallId>> = VecDeque::new();
        for (n, _, entry) in parsed.iter().filter(|(_, s, _)| s == session) {
            let n = *n;
            let text = entry.to_string();
            if entry.get("rho_transcript").is_some() {
                conn = Some(
                    build(entry, origin)
                        .map_err(|e| malformed(n, &format!("bad header: {e}"), &text))?,
                );
                summary.sessions += 1;
                continue;
            }
            let Some(c) = conn.as_mut() else {
                return Err(malformed(
                    n,
                    "an entry of a session whose header has not come yet",
                    &text,
                ));
            };
            if let Some(kind) = entry.get("in").and_then(Value::as_str) {
                let t = entry.get("t").and_then(Value::as_u64).unwrap_or(0);
                let now = origin + Duration::from_micros(t);
                if kind == "timeout" {
                    // The wakeup the executor slept for must be the one the
                    // replayed core asks for.
                    let due = c.poll_timeout().map_or(Value::Null, |at| {
                        json!(micros(at.saturating_duration_since(origin)))
                    });
                    let got = json!({"due": due, "timer": c.timeout_reason()});
                    let expected = json!({
                        "due": entry.get("due").cloned().unwrap_or(Value::Null),
                        "timer": entry.get("timer").cloned().unwrap_or(Value::Null),
                    });
                    if got != expected {
                        return Err(ReplayError::Diverged(Divergence {
                            line: n,
                            what: "poll_timeout".into(),
                            expected: expected.to_string(),
                            got: got.to_string(),
                            context: context(&lines, n),
                        }));
                    }
                }
                apply(c, now, kind, entry, &mut calls)
                    .map_err(|e| malformed(n, &format!("bad input: {e}"), &text))?;
                summary.inputs += 1;
            } else if let Some(kind) = entry.get("poll").and_then(Value::as_str) {
                let expected = entry.get("got").cloned().unwrap_or(Value::Null);
                let got = match kind {
                    "output" => {
                        // Configured header values are already `<redacted>`
                        // in the rebuilt options, so nothing more to hide.
                        let out = c.poll_output();
                        output_json(out.as_ref(), &[])
                    }
                    "event" => event_json(c.poll_event().as_ref()),
                    "call_id" => match calls.pop_front() {
                        Some(call) => call.map_or(Value::Null, |c| json!(c.0)),
                        None => Value::Null,
                    },
                    other => {
                        return Err(malformed(n, &format!("unknown poll `{other}`"), &text));
                    }
                };
                if got != expected {
                    return Err(ReplayError::Diverged(Divergence {
                        line: n,
                        what: format!("poll_{kind}"),
                        expected: expected.to_string(),
                        got: got.to_string(),
                        context: context(&lines, n),
                    }));
                }
                summary.polls += 1;
            }
        }
    }
    Ok(summary)
}

fn build(header: &Value, origin: Instant) -> Result<Connection, String> {
    match header.get("rho_transcript").and_then(Value::as_u64) {
        Some(VERSION) => {}
        Some(other) => {
            return Err(format!(
                "a version {other} transcript; this rho reads version {VERSION}: record it again"
            ));
        }
        None => return Err(format!("not a version {VERSION} transcript")),
    }
    let s = header.get("session").ok_or("no session options")?;
    let str_of = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_owned);
    let ms_of = |k: &str| s.get(k).and_then(Value::as_u64).map(Duration::from_millis);
    let info = s.get("client_info").ok_or("no client_info")?;
    let mut options = SessionOptions::stdio(str_of("server").ok_or("no server")?);
    options.client_info = Implementation {
        name: info
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("rho")
            .to_owned(),
        version: info
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        title: info.get("title").and_then(Value::as_str).map(str::to_owned),
    };
    options.capabilities = s.get("capabilities").cloned().unwrap_or_else(|| json!({}));
    options.protocol_version = str_of("protocol_version").ok_or("no protocol_version")?;
    options.discover_wait = ms_of("discover_wait_ms");
    options.log_level = str_of("log_level").and_then(|l| crate::config::LogLevel::from_name(&l));
    options.startup_timeout = ms_of("startup_timeout_ms").ok_or("no startup_timeout_ms")?;
    options.tool_timeout = ms_of("tool_timeout_ms").ok_or("no tool_timeout_ms")?;
    options.request_timeout = ms_of("request_timeout_ms").ok_or("no request_timeout_ms")?;
    options.framing = match str_of("framing").as_deref() {
        Some("messages") => Framing::Messages,
        _ => Framing::Lines,
    };
    if let Some(max) = s.get("max_line").and_then(Value::as_u64) {
        options.max_line = usize::try_from(max).unwrap_or(usize::MAX);
    }
    options.ping_interval = ms_of("ping_interval_ms");
    options.workspace_root = str_of("workspace_root");
    options.progress_extends_up_to = ms_of("progress_extends_up_to_ms");
    options.elicitation = s
        .get("elicitation")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    options.elicitation_url = s
        .get("elicitation_url")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    options.apps = s.get("apps").and_then(Value::as_bool).unwrap_or(false);
    options.sampling = s.get("sampling").and_then(Value::as_bool).unwrap_or(false);
    let http = match header.get("http") {
        None | Some(Value::Null) => None,
        Some(h) => {
            let url = h
                .get("url")
                .and_then(Value::as_str)
                .and_then(|u| Url::parse(u).ok())
                .ok_or("no http url")?;
            let headers = h
                .get("headers")
                .and_then(Value::as_array)
                .map(|hs| {
                    hs.iter()
                        .filter_map(|pair| {
                            Some((pair.get(0)?.as_str()?.to_owned(), REDACTED.to_owned()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let hms = |k: &str| h.get(k).and_then(Value::as_u64).map(Duration::from_millis);
            let mut http = HttpOptions::new(url, headers);
            if let Some(max) = h.get("max_body").and_then(Value::as_u64) {
                http.max_body = usize::try_from(max).unwrap_or(usize::MAX);
            }
            if let Some(n) = h.get("max_stream_resumes").and_then(Value::as_u64) {
                http.max_stream_resumes = u32::try_from(n).unwrap_or(u32::MAX);
            }
            http.default_retry = hms("default_retry_ms").unwrap_or(http.default_retry);
            http.delete_timeout = hms("delete_timeout_ms").unwrap_or(http.delete_timeout);
            http.ping_interval = hms("ping_interval_ms").unwrap_or(http.ping_interval);
            http.server_stream_wait =
                hms("server_stream_wait_ms").unwrap_or(http.server_stream_wait);
            let flag = |k: &str| h.get(k).and_then(Value::as_bool).unwrap_or(false);
            http.oauth = flag("oauth");
            http.grant = h
                .get("grant")
                .and_then(Value::as_str)
                .and_then(OAuthGrant::from_name);
            http.reauthorize = flag("reauthorize");
            Some(http)
        }
    };
    Ok(Connection::from_options(options, http, origin))
}

fn apply(
    c: &mut Connection,
    now: Instant,
    kind: &str,
    e: &Value,
    calls: &mut VecDeque<Option<CallId>>,
) -> Result<(), String> {
    let str_of = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
    let x = || {
        e.get("x")
            .and_then(Value::as_u64)
            .map(ExchangeId)
            .ok_or("no exchange id")
    };
    let data = || e.get("data").and_then(bytes_from).ok_or("no data");
    match kind {
        "stdio" => c.handle_stdio_bytes(now, &data()?),
        "stdio_closed" => c.handle_stdio_closed(now, str_of("detail")),
        "transport_failed" => c.handle_transport_failed(now, str_of("reason").unwrap_or_default()),
        "http_head" => {
            let status = e
                .get("status")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .ok_or("no status")?;
            let headers = e
                .get("headers")
                .and_then(Value::as_array)
                .map(|hs| {
                    hs.iter()
                        .filter_map(|p| {
                            Some((
                                p.get(0)?.as_str()?.to_owned(),
                                p.get(1)?.as_str()?.to_owned(),
                            ))
                        })
                        .collect()
                })
                .unwrap_or_default();
            c.handle_http(now, x()?, HttpInput::Head { status, headers });
        }
        "http_body" => c.handle_http(now, x()?, HttpInput::Body(data()?)),
        "http_end" => c.handle_http(now, x()?, HttpInput::End),
        "http_failed" => c.handle_http(
            now,
            x()?,
            HttpInput::Failed(HttpFailure::new(
                failure_kind_from(e.get("kind")),
                str_of("reason").unwrap_or_default(),
            )),
        ),
        "timeout" => c.handle_timeout(now),
        "call" => {
            let tool = str_of("tool").ok_or("no tool")?;
            let args = e.get("args").cloned().unwrap_or(Value::Null);
            let task = match str_of("task").as_deref() {
                Some("offered") => TaskAugmentation::WhenOffered,
                _ => TaskAugmentation::WhenRequired,
            };
            calls.push_back(c.call_tool_with(now, &tool, args, budget_of(e), task).ok());
        }
        "request" => {
            let method = str_of("method").ok_or("no method")?;
            let params = e.get("params").cloned().unwrap_or(Value::Null);
            let request = crate::features::FeatureRequest::from_wire(&method, &params)
                .ok_or("bad request")?;
            calls.push_back(c.request(now, &request, budget_of(e)).ok());
        }
        "cancel" => c.cancel_call(
            now,
            CallId(e.get("call").and_then(Value::as_u64).ok_or("no call")?),
        ),
        "close" => c.close(now),
        "answer_elicitation" => {
            let q = question_of(e)?;
            let answer = e
                .get("answer")
                .and_then(form_answer_from)
                .ok_or("bad answer")?;
            c.answer_elicitation(now, q, answer);
        }
        "answer_url" => {
            let q = question_of(e)?;
            let answer = e
                .get("answer")
                .and_then(url_answer_from)
                .ok_or("bad answer")?;
            c.answer_url(now, q, answer);
        }
        "answer_sampling" => {
            let q = question_of(e)?;
            let answer = e
                .get("answer")
                .and_then(sampling_answer_from)
                .ok_or("bad answer")?;
            c.answer_sampling(now, q, answer);
        }
        "answer_authorization" => {
            let q = question_of(e)?;
            let answer = e
                .get("answer")
                .and_then(authorization_answer_from)
                .ok_or("bad answer")?;
            c.answer_authorization(now, q, answer);
        }
        other => return Err(format!("unknown input `{other}`")),
    }
    Ok(())
}

fn malformed(line: usize, reason: &str, text: &str) -> ReplayError {
    ReplayError::Malformed {
        line,
        reason: reason.to_owned(),
        text: text.chars().take(200).collect(),
    }
}

fn context(lines: &[(usize, &str)], line: usize) -> String {
    lines
        .iter()
        .filter(|(n, _)| *n < line && *n + 4 >= line)
        .map(|(n, l)| {
            let short: String = l.chars().take(200).collect();
            format!("    {n}: {short}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
