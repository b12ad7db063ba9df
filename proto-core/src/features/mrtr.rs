//! Multi round-trip requests (MCP 2026-07-28, SEP-2322): a server that needs
//! something from the client answers a request with an `InputRequiredResult`
//! instead of a result, and the client retries the request with the answers.
//!
//! In the 2025 era a server asked by sending its own requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) during a
//! call; in the 2026 era the same requests arrive inside the result, keyed
//! by names the server chose, and nothing is sent back until every one is
//! answered. This module is the pure part of that: it reads the result
//! ([`InputRequired::from_result`]), turns each input request into the same
//! [`Question`] the 2025 path puts to the host, behind the same gates
//! ([`Gates`]), gathers the answers ([`Rounds`]) and builds the retry's
//! parameters ([`Rounds::retry_params`]). The session owns the requests,
//! their ids and their budgets.
//!
//! # The same answers as the 2025 era
//!
//! | input request | gate closed, or unreadable | asked, and answered |
//! |---|---|---|
//! | `elicitation/create` | `{"action":"decline"}` at once | the typed `ElicitResult` ([`elicitation::result_for`]); a dismissed form cancels the request |
//! | `elicitation/create`, `mode: "url"` | the request fails ([`MrtrError::UndeclaredUrlMode`], or malformed) | `accept` (opened), `decline` or `cancel`, no content ([`elicitation::url_result`]); a dismissed one cancels the request |
//! | `sampling/createMessage` | no response for that key | a `CreateMessageResult`; refused or failed: no response for that key |
//! | `roots/list` | no response for that key (no workspace) | the workspace as the one root, at once |
//! | another method | no response for that key | — |
//!
//! The 2025 era answers a refused sampling request with a JSON-RPC error;
//! an `inputResponses` entry can only be a result, so the refusal is the
//! key's absence. The spec asks a server that misses an input it needs to
//! ask again rather than fail, so a server that keeps asking runs into the
//! round bound below rather than into the person again and again without
//! end.
//!
//! Elicitation needs no "exactly one call in flight" routing here: the
//! question arrives as the answer to one request, so it belongs to it.
//!
//! # The retry
//!
//! The retry is the original request's parameters plus `inputResponses`
//! (this round's answers only, omitted when there are none) and
//! `requestState`, echoed exactly as the server wrote it: the raw JSON text
//! of the string, not a re-encoding of its value, so even the spelling of
//! its escapes survives. It is omitted when the server sent none. A new
//! JSON-RPC id is the session's business. An `InputRequiredResult` with
//! neither field is malformed: there would be nothing to retry with.
//!
//! # Bounds
//!
//! At most [`MAX_ROUNDS`] input rounds per request: the
//! `InputRequiredResult` after that many retries fails the request with
//! [`MrtrError::TooManyRounds`]. At most [`MAX_INPUT_REQUESTS`] input
//! requests per round; more fail the request as malformed rather than put
//! dozens of questions to a person.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::features::elicitation::{self, Form, FormAnswer, UrlAnswer};
use crate::features::sampling;
use crate::session::{Question, SamplingAnswer};

/// How many `InputRequiredResult`s one request may answer with before rho
/// gives up on it.
pub const MAX_ROUNDS: u32 = 8;

/// How many input requests one `InputRequiredResult` may carry.
pub const MAX_INPUT_REQUESTS: usize = 16;

/// The `resultType` that asks for input.
const INPUT_REQUIRED: &str = "input_required";

/// Whether a result is an `InputRequiredResult` (`resultType:
/// "input_required"`). A result without `resultType` is complete, as the
/// spec asks of results from earlier-era servers.
pub fn is_input_required(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some(INPUT_REQUIRED)
}

/// Why a request with input rounds failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum MrtrError {
    /// The server asked for input again after [`MAX_ROUNDS`] retries.
    #[error(
        "it still asked for more input after {MAX_ROUNDS} rounds of answers, so rho gave up on the request"
    )]
    TooManyRounds,
    /// The `InputRequiredResult` could not be read; says what is wrong.
    #[error("it asked for input in a malformed way: {0}")]
    Malformed(String),
    /// An input request asked for URL-mode elicitation, which rho did not
    /// declare (the server must not; an input response cannot be the
    /// -32602 error the 2025 era sends, so the request fails instead).
    #[error("it asked the person to open a URL, which rho did not declare it could do here")]
    UndeclaredUrlMode,
}

/// One entry of `inputRequests`: what the server asks for.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`, with its params.
    Elicitation(Value),
    /// `sampling/createMessage`, with its params.
    Sampling(Value),
    /// `roots/list`.
    Roots,
    /// A method rho does not answer (named for the log).
    Unsupported(String),
}

/// The server's `requestState`: the raw JSON text of the string it sent,
/// echoed unchanged on the retry. Its contents are the server's; rho never
/// reads them, and `Debug` shows only its length.
#[derive(Clone)]
pub struct RequestState(Box<RawValue>);

impl PartialEq for RequestState {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl RequestState {
    /// The JSON text as it goes on the wire (quotes included).
    pub fn as_json(&self) -> &str {
        self.0.get()
    }

    /// The state for the parsed string `value`: `raw` itself when it is
    /// the JSON text of that very string (the exact bytes the server
    /// wrote), else the string's own JSON encoding, which a server decodes
    /// to the same string.
    fn new(value: &str, raw: Option<&RawValue>) -> Result<Self, MrtrError> {
        if let Some(raw) = raw
            && serde_json::from_str::<String>(raw.get()).is_ok_and(|s| s == value)
        {
            return Ok(Self(raw.to_owned()));
        }
        serde_json::value::to_raw_value(value)
            .map(Self)
            .map_err(|e| malformed(format!("`requestState` cannot be echoed: {e}")))
    }
}

impl fmt::Debug for RequestState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RequestState({} bytes)", self.0.get().len())
    }
}

/// A server's `InputRequiredResult`, read.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequired {
    /// The input requests, by the server's keys, in the order sent.
    pub requests: Vec<(String, InputRequest)>,
    /// The state to echo, when the server sent one.
    pub request_state: Option<RequestState>,
}

/// The part of a response frame that carries `requestState`, borrowed raw.
#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(borrow, default)]
    result: Option<RawResult<'a>>,
}

#[derive(Deserialize)]
struct RawResult<'a> {
    #[serde(rename = "requestState", borrow, default)]
    request_state: Option<&'a RawValue>,
}

/// The raw `requestState` of a single JSON-RPC response frame, when it has
/// one: the exact text [`InputRequired::from_result`] echoes when given it.
/// `None` for anything else (a batch, an error, no state, not JSON).
pub fn raw_request_state(frame: &[u8]) -> Option<Box<RawValue>> {
    let frame: RawFrame<'_> = serde_json::from_slice(frame).ok()?;
    Some(frame.result?.request_state?.to_owned())
}

impl InputRequired {
    /// Reads an `InputRequiredResult` (a result for which
    /// [`is_input_required`] holds). `raw_state` is the raw JSON of its
    /// `requestState` as it arrived ([`raw_request_state`]), when the caller
    /// has the frame; without it the parsed string is re-encoded, which a
    /// server decodes to the same string.
    ///
    /// Fails when neither `inputRequests` nor `requestState` is present,
    /// `inputRequests` is not an object or holds more than
    /// [`MAX_INPUT_REQUESTS`] entries, an entry is not an object with a
    /// string `method`, or `requestState` is not a string.
    pub fn from_result(result: &Value, raw_state: Option<&RawValue>) -> Result<Self, MrtrError> {
        let object = result
            .as_object()
            .ok_or_else(|| malformed("the result is not an object"))?;
        let requests = match object.get("inputRequests") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => {
                if map.len() > MAX_INPUT_REQUESTS {
                    return Err(malformed(format!(
                        "{} input requests in one round (at most {MAX_INPUT_REQUESTS})",
                        map.len()
                    )));
                }
                map.iter()
                    .map(|(key, request)| Ok((key.clone(), input_request(key, request)?)))
                    .collect::<Result<Vec<_>, MrtrError>>()?
            }
            Some(_) => return Err(malformed("`inputRequests` is not an object")),
        };
        let request_state = match object.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(RequestState::new(s, raw_state)?),
            Some(_) => return Err(malformed("`requestState` is not a string")),
        };
        let has_requests = matches!(object.get("inputRequests"), Some(Value::Object(_)));
        if !has_requests && request_state.is_none() {
            return Err(malformed(
                "it has neither `inputRequests` nor `requestState`",
            ));
        }
        Ok(Self {
            requests,
            request_state,
        })
    }
}

fn input_request(key: &str, request: &Value) -> Result<InputRequest, MrtrError> {
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(format!("input request `{key}` has no method")))?;
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    Ok(match method {
        "elicitation/create" => InputRequest::Elicitation(params),
        "sampling/createMessage" => InputRequest::Sampling(params),
        "roots/list" => InputRequest::Roots,
        other => InputRequest::Unsupported(other.to_owned()),
    })
}

fn malformed(why: impl Into<String>) -> MrtrError {
    MrtrError::Malformed(why.into())
}

/// What this run may answer, decided as in the 2025 era: the same options
/// the session declares its capabilities from.
#[derive(Clone, Copy, Debug)]
pub struct Gates<'a> {
    /// The server's identity, for sampling's system prompt and the log.
    pub server: &'a str,
    /// A person can be asked (form elicitation declared).
    pub elicitation: bool,
    /// A person can be shown a URL and have it opened (URL-mode
    /// elicitation declared).
    pub elicitation_url: bool,
    /// Sampling is enabled for this server (declared).
    pub sampling: bool,
    /// The session workspace as a `file://` URI, the one root (declared).
    pub workspace_root: Option<&'a str>,
}

/// A question to put to the host, by the input request's key.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    /// The server's key for the input request.
    pub key: String,
    /// The question, as the 2025 era asks it.
    pub question: Question,
}

/// What an answer did to the round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub enum Answered {
    /// Other questions of the round are still open.
    Waiting,
    /// Every question is answered: retry now.
    Ready,
    /// The person dismissed a form: the request ends, cancelled, without a
    /// retry.
    Cancelled,
    /// No open question has that key (already answered, or never asked).
    Unknown,
}

/// A question of the round still open.
#[derive(Clone, Debug)]
enum Open {
    /// The form, to type the answers back.
    Form(Form),
    /// A URL to open.
    Url,
    Sampling,
}

/// One request's input rounds: how many there were, and the answers and
/// open questions of the one under way.
#[derive(Clone, Debug, Default)]
pub struct Rounds {
    /// `InputRequiredResult`s taken so far.
    rounds: u32,
    /// This round's answers, by key, in the server's order as they come.
    responses: Map<String, Value>,
    /// Questions of this round not yet answered.
    open: BTreeMap<String, Open>,
    /// The state to echo on this round's retry.
    state: Option<RequestState>,
}

impl Rounds {
    /// No rounds yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many `InputRequiredResult`s this request has answered with.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Whether every question of the round is answered (the retry can go).
    pub fn is_ready(&self) -> bool {
        self.open.is_empty()
    }

    /// Whether the round has any answer to send (a request rho could not
    /// answer is left out, so a round may have none).
    pub fn has_answers(&self) -> bool {
        !self.responses.is_empty()
    }

    /// The keys of the questions still open, for withdrawing them.
    pub fn open_keys(&self) -> impl Iterator<Item = &str> {
        self.open.keys().map(String::as_str)
    }

    /// Starts a round with the server's `InputRequiredResult`: whatever can
    /// be answered at once is (declines, roots, closed gates), and the
    /// questions for the host are returned, in the server's order. None
    /// means the retry can go at once. The previous round's answers are
    /// dropped: each retry carries only its own round's.
    ///
    /// Fails with [`MrtrError::TooManyRounds`] on the round after
    /// [`MAX_ROUNDS`].
    pub fn begin(
        &mut self,
        required: InputRequired,
        gates: &Gates<'_>,
    ) -> Result<Vec<Ask>, MrtrError> {
        if self.rounds >= MAX_ROUNDS {
            return Err(MrtrError::TooManyRounds);
        }
        self.rounds += 1;
        self.responses.clear();
        self.open.clear();
        self.state = required.request_state;
        let mut asks = Vec::new();
        for (key, request) in required.requests {
            match request {
                InputRequest::Elicitation(params) if elicitation::is_url_mode(&params) => {
                    if !gates.elicitation_url {
                        return Err(MrtrError::UndeclaredUrlMode);
                    }
                    let request = elicitation::url_request_from_params(&params, false)
                        .map_err(|why| malformed(why.to_string()))?;
                    self.open.insert(key.clone(), Open::Url);
                    asks.push(Ask {
                        key,
                        question: Question::Url(request),
                    });
                }
                InputRequest::Elicitation(params) => {
                    if !gates.elicitation {
                        tracing::info!(
                            server = gates.server,
                            "input request declined: this run cannot ask a person"
                        );
                        self.responses.insert(key, elicitation::declined());
                        continue;
                    }
                    match elicitation::form_from_request(&params) {
                        Ok(form) => {
                            self.open.insert(key.clone(), Open::Form(form.clone()));
                            asks.push(Ask {
                                key,
                                question: Question::Elicitation(form),
                            });
                        }
                        Err(why) => {
                            tracing::info!(server = gates.server, "input request declined: {why}");
                            self.responses.insert(key, elicitation::declined());
                        }
                    }
                }
                InputRequest::Sampling(params) => {
                    if !gates.sampling {
                        tracing::info!(
                            server = gates.server,
                            "sampling input request left unanswered: not enabled for this server"
                        );
                        continue;
                    }
                    match sampling::parse_request(gates.server, &params) {
                        Ok(request) => {
                            self.open.insert(key.clone(), Open::Sampling);
                            asks.push(Ask {
                                key,
                                question: Question::Sampling(request),
                            });
                        }
                        Err(why) => {
                            tracing::info!(
                                server = gates.server,
                                "sampling input request left unanswered: {why}"
                            );
                        }
                    }
                }
                InputRequest::Roots => match gates.workspace_root {
                    Some(uri) => {
                        self.responses.insert(key, roots_result(uri));
                    }
                    None => {
                        tracing::info!(
                            server = gates.server,
                            "roots input request left unanswered: no workspace root"
                        );
                    }
                },
                InputRequest::Unsupported(method) => {
                    tracing::info!(
                        server = gates.server,
                        method,
                        "input request left unanswered: rho does not support it"
                    );
                }
            }
        }
        Ok(asks)
    }

    /// Answers the elicitation question `key`. Submitted answers are typed
    /// to the form (an answer that cannot carry its type declines, as in
    /// the 2025 era); a dismissed form cancels the request.
    pub fn answer_elicitation(&mut self, key: &str, answer: &FormAnswer) -> Answered {
        let Some(Open::Form(form)) = self.open.get(key) else {
            return Answered::Unknown;
        };
        if matches!(answer, FormAnswer::Dismissed) {
            self.open.clear();
            return Answered::Cancelled;
        }
        let result = elicitation::result_for(form, answer);
        self.open.remove(key);
        self.responses.insert(key.to_owned(), result);
        self.after_answer()
    }

    /// Answers the URL question `key` (`accept` without content, `decline`
    /// or `cancel`); a dismissed question cancels the request, as a
    /// dismissed form does.
    pub fn answer_url(&mut self, key: &str, answer: UrlAnswer) -> Answered {
        if !matches!(self.open.get(key), Some(Open::Url)) {
            return Answered::Unknown;
        }
        if answer == UrlAnswer::Dismissed {
            self.open.clear();
            return Answered::Cancelled;
        }
        self.open.remove(key);
        self.responses
            .insert(key.to_owned(), elicitation::url_result(answer));
        self.after_answer()
    }

    /// Answers the sampling question `key`: a completion is sent as a
    /// `CreateMessageResult`; a refusal or a failed model call leaves the
    /// key unanswered.
    pub fn answer_sampling(&mut self, key: &str, answer: SamplingAnswer) -> Answered {
        if !matches!(self.open.get(key), Some(Open::Sampling)) {
            return Answered::Unknown;
        }
        self.open.remove(key);
        match answer {
            SamplingAnswer::Completed { text, model } => {
                self.responses
                    .insert(key.to_owned(), sampling::result_value(&text, &model));
            }
            SamplingAnswer::Refused | SamplingAnswer::Failed(_) => {}
        }
        self.after_answer()
    }

    fn after_answer(&self) -> Answered {
        if self.open.is_empty() {
            Answered::Ready
        } else {
            Answered::Waiting
        }
    }

    /// The retry's parameters: `original` (the request's own parameters,
    /// a struct or map without `inputResponses`/`requestState`) with this
    /// round's answers and the echoed state.
    pub fn retry_params<'a, P: Serialize + ?Sized>(
        &'a self,
        original: &'a P,
    ) -> RetryParams<'a, P> {
        RetryParams {
            original,
            input_responses: &self.responses,
            request_state: self.state.as_ref().map(|s| &*s.0),
        }
    }
}

/// The `ListRootsResult` for the one workspace root, as the 2025 era
/// answers `roots/list`.
fn roots_result(uri: &str) -> Value {
    json!({ "roots": [{ "uri": uri, "name": "workspace" }] })
}

/// The parameters of a retried request (see [`Rounds::retry_params`]).
#[derive(Debug, Serialize)]
pub struct RetryParams<'a, P: ?Sized> {
    #[serde(flatten)]
    original: &'a P,
    #[serde(rename = "inputResponses", skip_serializing_if = "Map::is_empty")]
    input_responses: &'a Map<String, Value>,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a RawValue>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::elicitation::FieldKind;

    const SERVER: &str = "srv";

    fn gates() -> Gates<'static> {
        Gates {
            server: SERVER,
            elicitation: true,
            elicitation_url: false,
            sampling: true,
            workspace_root: Some("file:///work"),
        }
    }

    fn closed() -> Gates<'static> {
        Gates {
            server: SERVER,
            elicitation: false,
            elicitation_url: false,
            sampling: false,
            workspace_root: None,
        }
    }

    fn name_form() -> Value {
        json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"]
                }
            }
        })
    }

    fn sampling_request() -> Value {
        json!({
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                "maxTokens": 100
            }
        })
    }

    fn required(requests: Value, state: Option<&str>) -> InputRequired {
        let mut result = json!({"resultType": "input_required", "inputRequests": requests});
        if let Some(state) = state {
            result["requestState"] = json!(state);
        }
        InputRequired::from_result(&result, None).unwrap()
    }

    /// The retry's params for a `tools/call`-shaped original.
    fn retry(rounds: &Rounds) -> String {
        #[derive(Serialize)]
        struct Call<'a> {
            name: &'a str,
            arguments: Value,
        }
        let original = Call {
            name: "t",
            arguments: json!({}),
        };
        serde_json::to_string(&rounds.retry_params(&original)).unwrap()
    }

    fn retry_value(rounds: &Rounds) -> Value {
        serde_json::from_str(&retry(rounds)).unwrap()
    }

    fn submitted(pairs: &[(&str, &str)]) -> FormAnswer {
        FormAnswer::Submitted(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), vec![(*v).to_owned()]))
                .collect(),
        )
    }

    #[test]
    fn only_input_required_result_type_asks_for_input() {
        assert!(is_input_required(&json!({"resultType": "input_required"})));
        assert!(!is_input_required(&json!({"resultType": "complete"})));
        assert!(!is_input_required(&json!({"content": []})));
        assert!(!is_input_required(&json!({"resultType": 3})));
    }

    #[test]
    fn reads_the_spec_example_in_the_servers_key_order() {
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {
                "github_login": name_form(),
                "capital_of_france": sampling_request(),
                "where": {"method": "roots/list"},
                "odd": {"method": "tasks/get", "params": {}}
            },
            "requestState": "eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0"
        });
        let required = InputRequired::from_result(&result, None).unwrap();
        let keys: Vec<&str> = required.requests.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["github_login", "capital_of_france", "where", "odd"]);
        assert!(matches!(
            required.requests[0].1,
            InputRequest::Elicitation(_)
        ));
        assert!(matches!(required.requests[1].1, InputRequest::Sampling(_)));
        assert_eq!(required.requests[2].1, InputRequest::Roots);
        assert_eq!(
            required.requests[3].1,
            InputRequest::Unsupported("tasks/get".into())
        );
        assert_eq!(
            required.request_state.unwrap().as_json(),
            "\"eyJsb2NhdGlvbiI6Ik5ldyBZb3JrIn0\""
        );
    }

    #[test]
    fn a_result_with_neither_requests_nor_state_is_malformed() {
        for result in [
            json!({"resultType": "input_required"}),
            json!({"resultType": "input_required", "inputRequests": null, "requestState": null}),
        ] {
            let err = InputRequired::from_result(&result, None).unwrap_err();
            assert!(err.to_string().contains("neither"), "{err}");
        }
    }

    #[test]
    fn malformed_input_requests_are_refused_with_the_reason() {
        let cases = [
            (json!("x"), "the result is not an object"),
            (
                json!({"resultType": "input_required", "inputRequests": []}),
                "`inputRequests` is not an object",
            ),
            (
                json!({"resultType": "input_required", "inputRequests": {"a": {"params": {}}}}),
                "input request `a` has no method",
            ),
            (
                json!({"resultType": "input_required", "inputRequests": {"a": 1}}),
                "input request `a` has no method",
            ),
            (
                json!({"resultType": "input_required", "requestState": 7}),
                "`requestState` is not a string",
            ),
        ];
        for (result, why) in cases {
            let err = InputRequired::from_result(&result, None).unwrap_err();
            assert_eq!(err, MrtrError::Malformed(why.into()), "{result}");
        }
    }

    #[test]
    fn more_input_requests_than_the_bound_are_refused() {
        let many: Map<String, Value> = (0..=MAX_INPUT_REQUESTS)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect();
        let result = json!({"resultType": "input_required", "inputRequests": many});
        let err = InputRequired::from_result(&result, None).unwrap_err();
        assert!(err.to_string().contains("17 input requests"), "{err}");
    }

    #[test]
    fn as_many_input_requests_as_the_bound_are_read() {
        let many: Map<String, Value> = (0..MAX_INPUT_REQUESTS)
            .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
            .collect();
        let result = json!({"resultType": "input_required", "inputRequests": many});
        let read = InputRequired::from_result(&result, None).expect("at the bound, it reads");
        assert_eq!(read.requests.len(), MAX_INPUT_REQUESTS, "every one is read");
    }

    #[test]
    fn request_state_is_echoed_byte_for_byte_from_the_frame() {
        // Escapes a re-encoding would spell differently: `\/`, `\u00e9`.
        let frame = br#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","requestState":"a\/b\u00e9\"c"}}"#;
        let raw = raw_request_state(frame).unwrap();
        assert_eq!(raw.get(), r#""a\/b\u00e9\"c""#);
        let result: Value = serde_json::from_slice::<Value>(frame).unwrap()["result"].clone();
        let required = InputRequired::from_result(&result, Some(&raw)).unwrap();
        let mut rounds = Rounds::new();
        assert!(rounds.begin(required, &gates()).unwrap().is_empty());
        let text = retry(&rounds);
        assert!(
            text.ends_with(r#","requestState":"a\/b\u00e9\"c"}"#),
            "{text}"
        );
        assert!(!text.contains("inputResponses"), "{text}");
    }

    #[test]
    fn without_the_frame_the_state_decodes_to_the_same_string() {
        let result = json!({"resultType": "input_required", "requestState": "a/bé\"c"});
        let mut rounds = Rounds::new();
        let _ = rounds.begin(InputRequired::from_result(&result, None).unwrap(), &gates());
        assert_eq!(retry_value(&rounds)["requestState"], json!("a/bé\"c"));
    }

    #[test]
    fn a_raw_state_from_another_frame_is_not_echoed() {
        let other = RawValue::from_string("\"other\"".into()).unwrap();
        let result = json!({"resultType": "input_required", "requestState": "mine"});
        let required = InputRequired::from_result(&result, Some(&other)).unwrap();
        assert_eq!(required.request_state.unwrap().as_json(), "\"mine\"");
    }

    #[test]
    fn raw_state_is_none_for_frames_without_one() {
        assert!(raw_request_state(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).is_none());
        assert!(
            raw_request_state(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#)
                .is_none()
        );
        assert!(
            raw_request_state(br#"[{"jsonrpc":"2.0","id":1,"result":{"requestState":"s"}}]"#)
                .is_none()
        );
        assert!(raw_request_state(b"not json").is_none());
    }

    #[test]
    fn no_state_means_no_request_state_in_the_retry() {
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(required(json!({"who": name_form()}), None), &gates())
            .unwrap();
        assert_eq!(asks.len(), 1);
        assert_eq!(
            rounds.answer_elicitation("who", &submitted(&[("name", "Ada")])),
            Answered::Ready
        );
        let retry = retry_value(&rounds);
        assert!(retry.get("requestState").is_none(), "{retry}");
        assert_eq!(
            retry,
            json!({
                "name": "t",
                "arguments": {},
                "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}}
            })
        );
    }

    #[test]
    fn an_elicitation_becomes_the_same_form_question() {
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(required(json!({"who": name_form()}), Some("s")), &gates())
            .unwrap();
        let [
            Ask {
                key,
                question: Question::Elicitation(form),
            },
        ] = asks.as_slice()
        else {
            panic!("{asks:?}");
        };
        assert_eq!(key, "who");
        assert_eq!(form.message, "Your name?");
        assert_eq!(form.fields.len(), 1);
        assert_eq!(form.fields[0].kind, FieldKind::Text);
        assert!(form.fields[0].required);
        assert!(!rounds.is_ready());
        assert_eq!(rounds.open_keys().collect::<Vec<_>>(), ["who"]);
    }

    #[test]
    fn elicitation_is_declined_at_once_where_no_person_can_answer() {
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(required(json!({"who": name_form()}), None), &closed())
            .unwrap();
        assert!(asks.is_empty());
        assert!(rounds.is_ready());
        assert_eq!(
            retry_value(&rounds)["inputResponses"],
            json!({"who": {"action": "decline"}})
        );
    }

    fn url_input() -> Value {
        json!({"method": "elicitation/create", "params": {
            "mode": "url", "message": "Sign in", "url": "https://example.com/connect"
        }})
    }

    #[test]
    fn unrenderable_forms_are_declined_without_asking() {
        let empty = json!({"method": "elicitation/create", "params": {
            "message": "?", "requestedSchema": {"type": "object", "properties": {}}
        }});
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(required(json!({"empty": empty}), None), &gates())
            .unwrap();
        assert!(asks.is_empty());
        assert_eq!(
            retry_value(&rounds)["inputResponses"],
            json!({"empty": {"action": "decline"}})
        );
    }

    #[test]
    fn an_undeclared_url_mode_fails_the_request_rather_than_declining() {
        for gates in [gates(), closed()] {
            let mut rounds = Rounds::new();
            assert_eq!(
                rounds.begin(required(json!({"u": url_input()}), None), &gates),
                Err(MrtrError::UndeclaredUrlMode)
            );
        }
    }

    #[test]
    fn a_declared_url_input_is_asked_and_answered_without_content() {
        let open = Gates {
            elicitation_url: true,
            ..gates()
        };
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(
                required(json!({"u": url_input(), "who": name_form()}), None),
                &open,
            )
            .unwrap();
        assert_eq!(asks.len(), 2);
        match &asks[0].question {
            Question::Url(request) => {
                assert_eq!(request.host, "example.com");
                assert_eq!(request.elicitation_id, None);
            }
            other => panic!("not a URL question: {other:?}"),
        }
        // A form answer does not answer a URL question, nor the reverse.
        assert_eq!(
            rounds.answer_elicitation("u", &FormAnswer::Declined),
            Answered::Unknown
        );
        assert_eq!(
            rounds.answer_url("who", UrlAnswer::Opened),
            Answered::Unknown
        );
        assert_eq!(rounds.answer_url("u", UrlAnswer::Opened), Answered::Waiting);
        assert_eq!(
            rounds.answer_elicitation("who", &submitted(&[("name", "Ada")])),
            Answered::Ready
        );
        assert_eq!(
            retry_value(&rounds)["inputResponses"]["u"],
            json!({"action": "accept"})
        );
        // A dismissed URL question cancels the request, as a form does.
        let mut rounds = Rounds::new();
        let _ = rounds
            .begin(required(json!({"u": url_input()}), None), &open)
            .unwrap();
        assert_eq!(
            rounds.answer_url("u", UrlAnswer::Dismissed),
            Answered::Cancelled
        );
        // One that cannot be opened safely fails the request as malformed.
        let file = json!({"method": "elicitation/create", "params": {
            "mode": "url", "message": "m", "url": "file:///etc/passwd"
        }});
        let mut rounds = Rounds::new();
        assert!(matches!(
            rounds.begin(required(json!({"u": file}), None), &open),
            Err(MrtrError::Malformed(why)) if why.contains("scheme is `file`")
        ));
    }

    #[test]
    fn an_answer_that_cannot_carry_its_type_declines() {
        let form = json!({"method": "elicitation/create", "params": {
            "message": "How many?",
            "requestedSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}
        }});
        let mut rounds = Rounds::new();
        let _ = rounds
            .begin(required(json!({"n": form}), None), &gates())
            .unwrap();
        assert_eq!(
            rounds.answer_elicitation("n", &submitted(&[("n", "many")])),
            Answered::Ready
        );
        assert_eq!(
            retry_value(&rounds)["inputResponses"]["n"],
            json!({"action": "decline"})
        );
    }

    #[test]
    fn a_form_no_one_could_ask_declines() {
        let mut rounds = Rounds::new();
        let _ = rounds
            .begin(required(json!({"who": name_form()}), None), &gates())
            .unwrap();
        assert_eq!(
            rounds.answer_elicitation("who", &FormAnswer::CouldNotAsk),
            Answered::Ready
        );
        assert_eq!(
            retry_value(&rounds)["inputResponses"]["who"],
            json!({"action": "decline"})
        );
    }

    #[test]
    fn a_dismissed_form_cancels_the_request() {
        let mut rounds = Rounds::new();
        let _ = rounds
            .begin(
                required(json!({"who": name_form(), "s": sampling_request()}), None),
                &gates(),
            )
            .unwrap();
        assert_eq!(
            rounds.answer_elicitation("who", &FormAnswer::Dismissed),
            Answered::Cancelled
        );
        assert_eq!(rounds.open_keys().count(), 0);
    }

    #[test]
    fn sampling_becomes_the_same_question_and_a_completion_its_result() {
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(required(json!({"cap": sampling_request()}), None), &gates())
            .unwrap();
        let [
            Ask {
                question: Question::Sampling(request),
                ..
            },
        ] = asks.as_slice()
        else {
            panic!("{asks:?}");
        };
        assert_eq!(request.max_tokens, Some(100));
        assert!(request.prompt.contains("Capital of France?"));
        assert!(request.system_prompt.contains("`srv`"));
        let answer = SamplingAnswer::Completed {
            text: "Paris".into(),
            model: "m1".into(),
        };
        assert_eq!(rounds.answer_sampling("cap", answer), Answered::Ready);
        assert_eq!(
            retry_value(&rounds)["inputResponses"]["cap"],
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
                   "model": "m1", "stopReason": "endTurn"})
        );
    }

    #[test]
    fn refused_or_failed_sampling_leaves_its_key_out() {
        for answer in [
            SamplingAnswer::Refused,
            SamplingAnswer::Failed("down".into()),
        ] {
            let mut rounds = Rounds::new();
            let _ = rounds
                .begin(
                    required(
                        json!({"cap": sampling_request(), "where": {"method": "roots/list"}}),
                        None,
                    ),
                    &gates(),
                )
                .unwrap();
            assert_eq!(rounds.answer_sampling("cap", answer), Answered::Ready);
            let responses = retry_value(&rounds)["inputResponses"].clone();
            assert!(responses.get("cap").is_none(), "{responses}");
            assert!(responses.get("where").is_some(), "{responses}");
        }
    }

    #[test]
    fn sampling_not_enabled_or_unreadable_is_not_asked() {
        let bad = json!({"method": "sampling/createMessage", "params": {"messages": []}});
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(required(json!({"bad": bad}), Some("s")), &gates())
            .unwrap();
        assert!(asks.is_empty());
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(
                required(json!({"cap": sampling_request()}), Some("s")),
                &closed(),
            )
            .unwrap();
        assert!(asks.is_empty());
        assert!(rounds.is_ready());
        assert!(retry_value(&rounds).get("inputResponses").is_none());
    }

    #[test]
    fn roots_are_the_workspace_or_left_out() {
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(
                required(json!({"r": {"method": "roots/list"}}), None),
                &gates(),
            )
            .unwrap();
        assert!(asks.is_empty());
        assert_eq!(
            retry_value(&rounds)["inputResponses"]["r"],
            json!({"roots": [{"uri": "file:///work", "name": "workspace"}]})
        );
        let mut rounds = Rounds::new();
        let _ = rounds
            .begin(
                required(json!({"r": {"method": "roots/list"}}), Some("s")),
                &closed(),
            )
            .unwrap();
        assert!(retry_value(&rounds).get("inputResponses").is_none());
    }

    #[test]
    fn two_questions_wait_for_both_answers() {
        let mut rounds = Rounds::new();
        let asks = rounds
            .begin(
                required(json!({"who": name_form(), "cap": sampling_request()}), None),
                &gates(),
            )
            .unwrap();
        assert_eq!(asks.len(), 2);
        assert_eq!(
            rounds.answer_elicitation("who", &submitted(&[("name", "Ada")])),
            Answered::Waiting
        );
        assert_eq!(
            rounds.answer_sampling("who", SamplingAnswer::Refused),
            Answered::Unknown
        );
        assert_eq!(
            rounds.answer_elicitation("cap", &FormAnswer::CouldNotAsk),
            Answered::Unknown
        );
        assert_eq!(
            rounds.answer_elicitation("who", &submitted(&[("name", "Bo")])),
            Answered::Unknown
        );
        assert_eq!(
            rounds.answer_sampling("cap", SamplingAnswer::Refused),
            Answered::Ready
        );
        assert_eq!(
            retry_value(&rounds)["inputResponses"],
            json!({"who": {"action": "accept", "content": {"name": "Ada"}}})
        );
    }

    #[test]
    fn each_retry_carries_only_its_own_rounds_answers_and_state() {
        let mut rounds = Rounds::new();
        let _ = rounds.begin(required(json!({"who": name_form()}), Some("one")), &gates());
        let _ = rounds.answer_elicitation("who", &submitted(&[("name", "Ada")]));
        assert_eq!(retry_value(&rounds)["requestState"], json!("one"));
        let _ = rounds.begin(
            required(json!({"r": {"method": "roots/list"}}), None),
            &gates(),
        );
        let retry = retry_value(&rounds);
        assert!(retry.get("requestState").is_none(), "{retry}");
        assert_eq!(
            retry["inputResponses"],
            json!({"r": {"roots": [{"uri": "file:///work", "name": "workspace"}]}})
        );
        assert_eq!(rounds.rounds(), 2);
    }

    #[test]
    fn the_round_after_the_bound_fails_the_request() {
        let mut rounds = Rounds::new();
        for round in 1..=MAX_ROUNDS {
            let asks = rounds
                .begin(required(json!({}), Some("again")), &gates())
                .unwrap();
            assert!(asks.is_empty());
            assert_eq!(rounds.rounds(), round);
        }
        let err = rounds
            .begin(required(json!({}), Some("again")), &gates())
            .unwrap_err();
        assert_eq!(err, MrtrError::TooManyRounds);
        assert_eq!(
            err.to_string(),
            "it still asked for more input after 8 rounds of answers, so rho gave up on the request"
        );
    }

    #[test]
    fn request_state_debug_shows_only_its_length() {
        let required = required(json!({}), Some("secret-ish"));
        let shown = format!("{required:?}");
        assert!(!shown.contains("secret-ish"), "{shown}");
        assert!(shown.contains("RequestState(12 bytes)"), "{shown}");
    }
}
