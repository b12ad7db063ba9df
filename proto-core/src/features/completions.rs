//! Argument suggestions: `completion/complete` for the value a person is
//! typing into a prompt argument or a resource template variable, without
//! ever making them wait.
//!
//! A [`CompletionBroker`] per server stands between keystrokes and the
//! server:
//!
//! - **One request in flight.** [`CompletionBroker::ask`] never sends by
//!   itself; [`CompletionBroker::poll_request`] hands out at most one
//!   request until its answer (or its deadline) comes.
//! - **Coalescing.** Keystrokes typed while a request runs replace each
//!   other: when it ends, only the latest value is asked for.
//! - **A cache** keyed by the reference, the argument, the arguments
//!   already typed (they are sent as `context.arguments` and change the
//!   answer) and the value prefix. A value that extends a cached prefix
//!   whose list was complete (`hasMore` false) is answered from that list,
//!   narrowed to the values that start with it, with no request.
//! - **Nothing blocks, nothing interrupts.** A server that did not declare
//!   the `completions` capability is never asked; an error, a request
//!   past its deadline, or an answer for a value the person has typed
//!   past yields no suggestions at all: the palette stays empty.
//!
//! The broker reads no clock: `now` comes in, and
//! [`CompletionBroker::poll_timeout`] says when the request in flight
//! gives up.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::wire::protocol::ShapeError;

/// What is being completed: a prompt's argument or a template's variable.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionRef {
    /// An argument of the prompt with this name.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// A variable of the resource template with this URI template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The URI template.
        uri: String,
    },
}

/// One value being typed, and the arguments typed before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// What is completed.
    pub reference: CompletionRef,
    /// The argument (or variable) name.
    pub argument: String,
    /// What has been typed of its value so far.
    pub value: String,
    /// The other arguments already given, sent as `context.arguments`.
    pub context: BTreeMap<String, String>,
}

/// The params of a `completion/complete` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CompleteParams {
    /// What is completed.
    #[serde(rename = "ref")]
    pub reference: CompletionRef,
    /// The argument and its partial value.
    pub argument: CompleteArgument,
    /// The arguments already given, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompleteContext>,
}

/// `argument` of a `completion/complete` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CompleteArgument {
    /// The argument's name.
    pub name: String,
    /// Its partial value.
    pub value: String,
}

/// `context` of a `completion/complete` request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct CompleteContext {
    /// The arguments already given.
    pub arguments: BTreeMap<String, String>,
}

impl Query {
    /// The request that asks for this query.
    pub fn params(&self) -> CompleteParams {
        CompleteParams {
            reference: self.reference.clone(),
            argument: CompleteArgument {
                name: self.argument.clone(),
                value: self.value.clone(),
            },
            context: (!self.context.is_empty()).then(|| CompleteContext {
                arguments: self.context.clone(),
            }),
        }
    }

    fn scope(&self) -> Scope {
        (
            self.reference.clone(),
            self.argument.clone(),
            self.context.clone(),
        )
    }
}

/// The most values a server may return in one answer (the spec's limit);
/// more are dropped.
pub const MAX_VALUES: usize = 100;

/// A `completion/complete` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Completion {
    /// The suggested values, at most [`MAX_VALUES`].
    pub values: Vec<String>,
    /// How many the server has in all, when it said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// The server has more than it sent.
    pub has_more: bool,
}

impl Completion {
    /// Reads a `completion/complete` result; non-string values are
    /// dropped.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        let Some(completion) = value.get("completion") else {
            return Err(ShapeError(
                "completion/complete result has no `completion`".into(),
            ));
        };
        let Some(Value::Array(values)) = completion.get("values") else {
            return Err(ShapeError(
                "completion/complete result has no `completion.values` array".into(),
            ));
        };
        let kept: Vec<String> = values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .take(MAX_VALUES)
            .collect();
        Ok(Self {
            has_more: completion
                .get("hasMore")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                || values.len() > MAX_VALUES,
            total: completion.get("total").and_then(Value::as_u64),
            values: kept,
        })
    }
}

/// Names one request the broker handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CompletionTicket(u64);

/// The reference, argument and context a cached answer belongs to.
type Scope = (CompletionRef, String, BTreeMap<String, String>);

/// How many answers the cache holds; the oldest goes first.
const CACHE_ENTRIES: usize = 128;

#[derive(Debug)]
struct InFlight {
    ticket: CompletionTicket,
    query: Query,
    deadline: Instant,
    /// Handed out by `poll_request` already.
    sent: bool,
}

/// The completion broker of one server. See the module docs.
#[derive(Debug)]
pub struct CompletionBroker {
    enabled: bool,
    budget: Duration,
    in_flight: Option<InFlight>,
    /// The latest value typed while a request ran: asked next.
    waiting: Option<Query>,
    /// The latest value asked about: an answer for anything else is late.
    latest: Option<Query>,
    cache: BTreeMap<(Scope, String), Completion>,
    order: VecDeque<(Scope, String)>,
    next_ticket: u64,
}

impl CompletionBroker {
    /// A broker for a server that declared `completions` (`enabled`) or
    /// not; each request gives up after `budget`.
    pub fn new(enabled: bool, budget: Duration) -> Self {
        Self {
            enabled,
            budget,
            in_flight: None,
            waiting: None,
            latest: None,
            cache: BTreeMap::new(),
            order: VecDeque::new(),
            next_ticket: 0,
        }
    }

    /// The person typed: suggestions at once when the cache has them,
    /// else `None` (a request goes out through
    /// [`CompletionBroker::poll_request`], now or when the one in flight
    /// ends).
    pub fn ask(&mut self, now: Instant, query: Query) -> Option<Vec<String>> {
        if !self.enabled {
            return None;
        }
        self.latest = Some(query.clone());
        if let Some(values) = self.cached(&query) {
            self.waiting = None;
            return Some(values);
        }
        if self.in_flight.is_some() {
            self.waiting = Some(query);
        } else {
            self.send(now, query);
        }
        None
    }

    /// The request to send, once per request, at most one in flight.
    #[must_use]
    pub fn poll_request(&mut self) -> Option<(CompletionTicket, CompleteParams)> {
        let flight = self.in_flight.as_mut().filter(|f| !f.sent)?;
        flight.sent = true;
        Some((flight.ticket, flight.query.params()))
    }

    /// When the request in flight gives up, if one runs.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.in_flight.as_ref().map(|f| f.deadline)
    }

    /// Time passed: a request past its deadline is abandoned (its ticket
    /// returned, for the host to cancel) and the latest waiting value is
    /// asked next.
    pub fn handle_timeout(&mut self, now: Instant) -> Option<CompletionTicket> {
        let flight = self.in_flight.take_if(|f| f.deadline <= now)?;
        self.send_waiting(now);
        Some(flight.ticket)
    }

    /// The server answered `ticket` (or the request failed). Returns the
    /// suggestions for the value typed now, when the answer (or the cache
    /// it filled) still fits it; `None` for a late answer, an error, or
    /// an answer to an abandoned request.
    pub fn handle_answer(
        &mut self,
        now: Instant,
        ticket: CompletionTicket,
        answer: Result<&Value, String>,
    ) -> Option<Vec<String>> {
        let flight = self.in_flight.take_if(|f| f.ticket == ticket)?;
        let completion = match answer.map(Completion::from_value) {
            Ok(Ok(completion)) => Some(completion),
            Ok(Err(shape)) => {
                tracing::debug!("completion answer unreadable: {shape}");
                None
            }
            Err(reason) => {
                tracing::debug!("completion failed: {reason}");
                None
            }
        };
        if let Some(completion) = completion {
            self.remember(&flight.query, completion);
        }
        let shown = self.latest.as_ref().and_then(|latest| self.cached(latest));
        if shown.is_some() {
            self.waiting = None;
        }
        self.send_waiting(now);
        shown
    }

    fn send_waiting(&mut self, now: Instant) {
        if let Some(query) = self.waiting.take() {
            self.send(now, query);
        }
    }

    fn send(&mut self, now: Instant, query: Query) {
        let ticket = CompletionTicket(self.next_ticket);
        self.next_ticket += 1;
        self.in_flight = Some(InFlight {
            ticket,
            query,
            deadline: now + self.budget,
            sent: false,
        });
    }

    fn remember(&mut self, query: &Query, completion: Completion) {
        let key = (query.scope(), query.value.clone());
        if self.cache.insert(key.clone(), completion).is_none() {
            self.order.push_back(key);
            if self.order.len() > CACHE_ENTRIES
                && let Some(oldest) = self.order.pop_front()
            {
                self.cache.remove(&oldest);
            }
        }
    }

    /// An exact cached answer, else the longest cached complete list for
    /// a prefix of the value, narrowed to it.
    fn cached(&self, query: &Query) -> Option<Vec<String>> {
        let scope = query.scope();
        if let Some(hit) = self.cache.get(&(scope.clone(), query.value.clone())) {
            return Some(hit.values.clone());
        }
        let value = &query.value;
        let mut cut = value.len();
        while cut > 0 {
            cut -= 1;
            if !value.is_char_boundary(cut) {
                continue;
            }
            if let Some(hit) = self.cache.get(&(scope.clone(), value[..cut].to_owned())) {
                if hit.has_more {
                    return None;
                }
                return Some(
                    hit.values
                        .iter()
                        .filter(|v| v.starts_with(value.as_str()))
                        .cloned()
                        .collect(),
                );
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn query(value: &str) -> Query {
        Query {
            reference: CompletionRef::Prompt {
                name: "completable-prompt".into(),
            },
            argument: "department".into(),
            value: value.into(),
            context: BTreeMap::new(),
        }
    }

    #[test]
    fn params_carry_the_reference_and_the_typed_context() {
        let mut q = query("S");
        q.context.insert("name".into(), "Eve".into());
        assert_eq!(
            serde_json::to_value(q.params()).expect("json"),
            json!({
                "ref": {"type": "ref/prompt", "name": "completable-prompt"},
                "argument": {"name": "department", "value": "S"},
                "context": {"arguments": {"name": "Eve"}}
            })
        );
        let r = CompletionRef::Resource {
            uri: "demo://resource/dynamic/text/{resourceId}".into(),
        };
        assert_eq!(
            serde_json::to_value(&r).expect("json"),
            json!({"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"})
        );
        assert_eq!(
            serde_json::to_value(query("").params()).expect("json")["context"],
            Value::Null,
            "no context without typed arguments"
        );
    }

    #[test]
    fn answers_are_bounded_and_read_leniently() {
        let many: Vec<String> = (0..150).map(|n| n.to_string()).collect();
        let c = Completion::from_value(&json!({"completion": {"values": many, "total": 150}}))
            .expect("reads");
        assert_eq!(c.values.len(), MAX_VALUES);
        assert!(c.has_more, "dropped values mean there is more");
        let mixed = Completion::from_value(&json!({"completion": {"values": ["a", 1, null]}}))
            .expect("reads");
        assert_eq!(mixed.values, ["a"]);
        let error = Completion::from_value(&json!({})).expect_err("no completion");
        assert!(error.0.contains("completion"), "{error}");
    }
}
