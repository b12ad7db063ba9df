//! What the host lends the runtime for questions from servers: someone to
//! ask (forms, sampling confirmations), a model to spend, and a ledger to
//! record the spend. All optional: a runtime without a responder declares
//! no elicitation, and one without a model declares no sampling, so a
//! well-behaved server never asks.
//!
//! [`answer`] is the one place a question is answered, shared by both
//! executors (the smol one runs it on its blocking pool): sampling asks the
//! person first (gate two; gate one is the server's `sampling = "ask"`),
//! calls the model only on a yes, and records the spend.

use std::sync::Arc;

use rho_proto_core::elicitation::{Form, FormAnswer};
use rho_proto_core::sampling::{SamplingRequest, summary};
use rho_proto_core::session::{Question, SamplingAnswer};

/// Puts questions in front of a person. Calls may block for as long as the
/// person takes; the call's budget is paused meanwhile.
pub trait Responder: Send + Sync {
    /// Shows a server's form, titled with the server's identity so it is
    /// never mistaken for rho's own question, and returns the answers.
    fn elicit(&self, server: &str, form: &Form) -> FormAnswer;
    /// Asks whether the server may spend the user's tokens; `question`
    /// names the server, the message count and the token ceiling.
    fn confirm_sampling(&self, server: &str, question: &str) -> bool;
}

/// The user's model, for sampling.
pub trait Model: Send + Sync {
    /// The model's name, reported to the server.
    fn name(&self) -> String;
    /// One completion: a system prompt and one user turn.
    fn complete(&self, system: &str, prompt: &str) -> Result<String, String>;
}

/// Where sampling spend is recorded, apart from the user's own turns.
pub trait UsageLedger: Send + Sync {
    /// Records one sampling completion under the `mcp_sampling` purpose.
    fn record_sampling(
        &self,
        server: &str,
        model: &str,
        prompt_chars: usize,
        completion_chars: usize,
    );
}

/// The host's side of questions, as given to a runtime.
#[derive(Clone, Default)]
pub struct HostServices {
    /// Someone to ask; `None` declares no elicitation and refuses sampling.
    pub responder: Option<Arc<dyn Responder>>,
    /// The model; `None` declares no sampling.
    pub model: Option<Arc<dyn Model>>,
    /// The usage ledger, when the host keeps one.
    pub ledger: Option<Arc<dyn UsageLedger>>,
}

impl std::fmt::Debug for HostServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostServices")
            .field("responder", &self.responder.is_some())
            .field("model", &self.model.is_some())
            .field("ledger", &self.ledger.is_some())
            .finish()
    }
}

impl HostServices {
    /// Whether this run can put a form in front of a person.
    pub fn can_elicit(&self) -> bool {
        self.responder.is_some()
    }

    /// Whether this run can sample: a model to spend and a person to ask.
    pub fn can_sample(&self) -> bool {
        self.model.is_some() && self.responder.is_some()
    }
}

/// An answer for the session, either kind.
#[derive(Debug)]
pub enum Answer {
    /// For an elicitation question.
    Form(FormAnswer),
    /// For a sampling question.
    Sampling(SamplingAnswer),
}

/// Answers one question, blocking: asks the person, and for sampling calls
/// the model on a yes and records the spend.
pub fn answer(services: &HostServices, server: &str, question: &Question) -> Answer {
    match question {
        Question::Elicitation(form) => Answer::Form(match &services.responder {
            Some(responder) => responder.elicit(server, form),
            None => FormAnswer::CouldNotAsk,
        }),
        Question::Sampling(request) => Answer::Sampling(sample(services, server, request)),
    }
}

fn sample(services: &HostServices, server: &str, request: &SamplingRequest) -> SamplingAnswer {
    let (Some(responder), Some(model)) = (&services.responder, &services.model) else {
        return SamplingAnswer::Refused;
    };
    if !responder.confirm_sampling(server, &summary(server, request)) {
        return SamplingAnswer::Refused;
    }
    match model.complete(&request.system_prompt, &request.prompt) {
        Ok(text) => {
            let name = model.name();
            if let Some(ledger) = &services.ledger {
                ledger.record_sampling(server, &name, request.prompt.len(), text.len());
            }
            SamplingAnswer::Completed { text, model: name }
        }
        Err(reason) => SamplingAnswer::Failed(reason),
    }
}
