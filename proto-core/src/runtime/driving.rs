//! The vocabulary every executor's driver speaks, and the bookkeeping
//! they share: what wakes a driver ([`Input`]), what the host asks of a
//! running server ([`Command`]), what a caller hears about its call
//! ([`CallUpdate`]), and the table of calls in flight ([`CallTable`]).
//!
//! The types are generic over `R`, the executor's reply channel (a std
//! `mpsc::Sender` on threads, a smol channel sender on smol), so each
//! driver keeps only its own waiting and sending, and nothing else is
//! written twice.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::connection::HttpInput;
use crate::features::elicitation::FormAnswer;
use crate::http::{ExchangeId, HeaderError};
use crate::runtime::{Health, ToolCallError};
use crate::session::{
    CallId, CloseReason, Event, Progress, QuestionId, SamplingAnswer, ServerReady,
};
use crate::wire::protocol::CallToolResult;

/// What a stdio child's pipes tell its driver.
#[derive(Debug)]
pub enum PipeEvent {
    /// Bytes from stdout.
    Stdout(Vec<u8>),
    /// stdout reached end of file (or failed to read).
    StdoutClosed,
    /// Writing stdin failed: the child stopped reading.
    WriteFailed(String),
}

/// Everything that wakes a driver.
#[derive(Debug)]
pub enum Input<R> {
    /// From a stdio child's pipes.
    Pipe(PipeEvent),
    /// From an HTTP exchange.
    Http(ExchangeId, HttpInput),
    /// From the host.
    Command(Command<R>),
}

/// What the host asks of a running server.
#[derive(Debug)]
pub enum Command<R> {
    /// Call a tool by the server's own name; `ticket` names the call for a
    /// later [`Command::Cancel`].
    CallTool {
        /// The host's name for this call.
        ticket: u64,
        /// The server's own tool name.
        tool: String,
        /// The arguments object.
        arguments: Value,
        /// Where [`CallUpdate`]s go.
        reply: R,
    },
    /// The caller gave up on a call: abandon it (the server is told).
    Cancel {
        /// The call's ticket.
        ticket: u64,
    },
    /// The host answered a server's question.
    Answer {
        /// Which question.
        question: QuestionId,
        /// The answer.
        answer: Answer,
    },
    /// End the session and the transport.
    Close,
}

/// The host's answer to a question, either kind.
#[derive(Debug)]
pub enum Answer {
    /// For an elicitation question.
    Form(FormAnswer),
    /// For a sampling question.
    Sampling(SamplingAnswer),
    /// For an authorization question: the new `Authorization` header
    /// value, or why the host could not get one (for a person).
    Authorization(Result<String, String>),
}

/// What a caller hears about one call: any progress, then its end.
#[derive(Debug)]
pub enum CallUpdate {
    /// A progress notification.
    Progress(Progress),
    /// The call ended; nothing follows.
    Done(Result<CallToolResult, ToolCallError>),
}

/// A server that finished its handshake and discovery.
#[derive(Debug)]
pub struct Started {
    /// What the server said at startup.
    pub ready: ServerReady,
    /// From the start of connecting to ready.
    pub elapsed: Duration,
    /// The process id of a stdio server.
    pub pid: Option<u32>,
}

/// Why a server did not start, split by who is at fault.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    /// The configuration cannot become a connection in this environment
    /// (a header wants an unset variable): the user's to fix.
    #[error(transparent)]
    Headers(#[from] HeaderError),
    /// The executor could not set up the transport (the program did not
    /// start, its pipes or a thread could not be made). The text names
    /// the server and what the OS said.
    #[error("{0}")]
    Transport(String),
    /// The session ended before it was ready: the server's doing, or its
    /// absence (see [`CloseReason`]). `stderr` is the tail of what a stdio
    /// server wrote there, when it wrote anything.
    #[error("server `{server}`: {reason}{}", stderr.as_deref().map(|s| format!("\n{s}")).unwrap_or_default())]
    Closed {
        /// The server identity.
        server: String,
        /// Why the session ended.
        reason: CloseReason,
        /// The server's last stderr lines, redacted.
        stderr: Option<String>,
    },
}

/// How startup ended: started, or why not.
pub type StartupOutcome = Result<Started, StartupError>;

/// The calls a driver has in flight: their reply channels, and the host's
/// tickets for them.
#[derive(Debug)]
pub struct CallTable<R> {
    calls: BTreeMap<CallId, R>,
    tickets: BTreeMap<u64, CallId>,
}

impl<R> Default for CallTable<R> {
    fn default() -> Self {
        Self {
            calls: BTreeMap::new(),
            tickets: BTreeMap::new(),
        }
    }
}

impl<R> CallTable<R> {
    /// Records a call the session accepted.
    pub fn insert(&mut self, ticket: u64, call: CallId, reply: R) {
        self.calls.insert(call, reply);
        self.tickets.insert(ticket, call);
    }

    /// The call a ticket names, forgetting the ticket (the host cancelled).
    pub fn cancel(&mut self, ticket: u64) -> Option<CallId> {
        self.tickets.remove(&ticket)
    }

    /// The reply channel of a call still in flight.
    pub fn get(&self, call: CallId) -> Option<&R> {
        self.calls.get(&call)
    }

    /// Removes a call that ended, returning its reply channel.
    pub fn complete(&mut self, call: CallId) -> Option<R> {
        self.tickets.retain(|_, c| *c != call);
        self.calls.remove(&call)
    }

    /// Every reply channel still waiting, when the session ended.
    pub fn drain(&mut self) -> impl Iterator<Item = R> + '_ {
        self.tickets.clear();
        std::mem::take(&mut self.calls).into_values()
    }
}

impl Health {
    /// Takes in what an event says about a running server's health; returns
    /// whether it did.
    pub fn observe(&mut self, event: &Event) -> bool {
        match event {
            Event::ToolsChanged(tools) => self.tools_now = Some(std::sync::Arc::new(tools.clone())),
            Event::PingAnswered => self.ping_failure = None,
            Event::PingFailed(reason) => self.ping_failure = Some(reason.clone()),
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_that_closed_during_startup_names_the_server_reason_and_stderr() {
        let error = StartupError::Closed {
            server: "local".into(),
            reason: CloseReason::Handshake("no protocolVersion".into()),
            stderr: Some("stderr: boom".into()),
        };
        assert_eq!(
            error.to_string(),
            "server `local`: handshake failed: no protocolVersion\nstderr: boom"
        );
        let quiet = StartupError::Closed {
            server: "local".into(),
            reason: CloseReason::Requested,
            stderr: None,
        };
        assert_eq!(quiet.to_string(), "server `local`: closed by rho");
    }
}
