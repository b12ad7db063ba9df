//! Questions from servers answered when the host likes:
//! [`question_channel`] gives a `Responder` for `HostServices::responder`
//! and a [`QuestionReceiver`] that yields each question as a
//! [`PendingQuestion`] value. The host
//! shows it in its own UI (a GUI dialog, a chat message, an agent's
//! prompt) and answers it later, from any thread or task; nothing in the
//! runtime waits on the host's own threads meanwhile.
//!
//! Each question says who asks and during which call ([`Asked`]: the
//! server, the runtime's id of the call, the tool's own name), so a UI
//! running several calls at once can tie a form to the right one.
//!
//! A question the host drops unanswered (or one asked after the receiver
//! is gone) is answered as rho could not ask: a form is declined for want
//! of a person ([`FormAnswer::CouldNotAsk`]), sampling refused. The
//! call's budget is paused while the question is open, as for any
//! responder.
//!
//! A run with no one to ask that should still get past forms (a script,
//! the conformance client) answers with [`AcceptDefaults`] instead.
//!
//! URLs (URL-mode elicitation) come only to a host that says it can show
//! one to a person and open it in their browser on a yes:
//! [`question_channel_opening_urls`] declares URL mode, and its
//! questions include [`Asking::Url`]; [`question_channel`] and
//! [`AcceptDefaults`] do not, so a server is told URL mode is not
//! supported (-32602) rather than have a URL opened by no one.

use std::collections::BTreeMap;
use std::sync::Arc;

use rho_proto_core::features::elicitation::{Form, FormAnswer, UrlAnswer, UrlRequest};
use rho_proto_core::host::{Asked, Responder};

/// A responder that hands questions to a [`QuestionReceiver`], and the
/// receiver.
pub fn question_channel() -> (Arc<dyn Responder>, QuestionReceiver) {
    channel(false)
}

/// Like [`question_channel`], for a host that shows a URL to a person and
/// opens it in their browser only on their explicit yes (never fetching
/// it, never changing it): URL-mode elicitation is declared, and URL
/// requests arrive as [`Asking::Url`].
pub fn question_channel_opening_urls() -> (Arc<dyn Responder>, QuestionReceiver) {
    channel(true)
}

fn channel(urls: bool) -> (Arc<dyn Responder>, QuestionReceiver) {
    let (tx, rx) = smol::channel::unbounded();
    (
        Arc::new(ChannelResponder { tx, urls }),
        QuestionReceiver(rx),
    )
}

/// Where the host takes questions from, as they come.
pub struct QuestionReceiver(smol::channel::Receiver<PendingQuestion>);

impl QuestionReceiver {
    /// The next question, waiting for one; `None` once the runtime that
    /// asks is gone.
    pub async fn next(&self) -> Option<PendingQuestion> {
        self.0.recv().await.ok()
    }

    /// The next question, blocking this thread until one comes; `None`
    /// once the runtime that asks is gone.
    pub fn next_blocking(&self) -> Option<PendingQuestion> {
        self.0.recv_blocking().ok()
    }

    /// A question already waiting, if any.
    pub fn try_next(&self) -> Option<PendingQuestion> {
        self.0.try_recv().ok()
    }
}

/// What a question asks for.
#[derive(Clone, Debug)]
pub enum Asking {
    /// A form for the person.
    Form(Form),
    /// A URL the server asks the person to open (only from
    /// [`question_channel_opening_urls`]): show all of it with its host
    /// apart, open it on a yes, answer with
    /// [`PendingQuestion::answer_url`].
    Url(UrlRequest),
    /// Whether the server may spend the user's model: the summary names
    /// the server, the message count and the token ceiling.
    Sampling(String),
}

/// One question waiting for the host's answer. Answer it once with
/// [`PendingQuestion::answer_form`] or [`PendingQuestion::answer_sampling`];
/// dropping it answers as if no one could be asked.
#[derive(Debug)]
pub struct PendingQuestion {
    /// Who asks, and during which call.
    pub asked: Asked,
    /// What is asked.
    pub asking: Asking,
    reply: Option<smol::channel::Sender<Reply>>,
}

#[derive(Debug)]
enum Reply {
    Form(FormAnswer),
    Url(UrlAnswer),
    Sampling(bool),
}

impl PendingQuestion {
    /// Answers a form question (an answer to a sampling question is taken
    /// as no).
    pub fn answer_form(mut self, answer: FormAnswer) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.try_send(Reply::Form(answer));
        }
    }

    /// Answers a URL question: [`UrlAnswer::Opened`] once the person said
    /// yes and the URL was opened (an answer to another kind of question
    /// is taken as could-not-ask).
    pub fn answer_url(mut self, answer: UrlAnswer) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.try_send(Reply::Url(answer));
        }
    }

    /// Answers a sampling question: whether the server may sample (an
    /// answer to a form question is taken as could-not-ask).
    pub fn answer_sampling(mut self, allow: bool) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.try_send(Reply::Sampling(allow));
        }
    }
}

/// The `Responder` end: each question goes to the receiver, and the
/// asking thread (the executor's, off its IO path) waits for the reply.
struct ChannelResponder {
    tx: smol::channel::Sender<PendingQuestion>,
    /// The host opens URLs on a person's yes.
    urls: bool,
}

impl ChannelResponder {
    fn ask(&self, asked: &Asked, asking: Asking) -> Option<Reply> {
        let (tx, rx) = smol::channel::bounded(1);
        let question = PendingQuestion {
            asked: asked.clone(),
            asking,
            reply: Some(tx),
        };
        self.tx.try_send(question).ok()?;
        rx.recv_blocking().ok()
    }
}

impl Responder for ChannelResponder {
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer {
        match self.ask(asked, Asking::Form(form.clone())) {
            Some(Reply::Form(answer)) => answer,
            Some(Reply::Url(_) | Reply::Sampling(_)) | None => FormAnswer::CouldNotAsk,
        }
    }

    fn can_open_urls(&self) -> bool {
        self.urls
    }

    fn open_url(&self, asked: &Asked, request: &UrlRequest) -> UrlAnswer {
        if !self.urls {
            return UrlAnswer::CouldNotAsk;
        }
        match self.ask(asked, Asking::Url(request.clone())) {
            Some(Reply::Url(answer)) => answer,
            Some(Reply::Form(_) | Reply::Sampling(_)) | None => UrlAnswer::CouldNotAsk,
        }
    }

    fn confirm_sampling(&self, asked: &Asked, question: &str) -> bool {
        matches!(
            self.ask(asked, Asking::Sampling(question.to_owned())),
            Some(Reply::Sampling(true))
        )
    }
}

/// A responder for a run with no one to ask: every form is submitted with
/// its fields' defaults, and one with a required field that has none is
/// answered as no one could be asked; sampling, which has no default, is
/// refused. It opens no URL, so URL mode is not declared. The CLI's
/// `--yes-defaults` and the conformance client use it.
#[derive(Clone, Copy, Debug, Default)]
pub struct AcceptDefaults;

impl Responder for AcceptDefaults {
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer {
        let server = asked.server.as_str();
        let mut answers = BTreeMap::new();
        for field in &form.fields {
            match &field.default {
                Some(values) => {
                    answers.insert(field.name.clone(), values.clone());
                }
                None if field.required => {
                    tracing::info!(server, field = %field.name, "answering with defaults: a required field has none; declining");
                    return FormAnswer::CouldNotAsk;
                }
                None => {}
            }
        }
        FormAnswer::Submitted(answers)
    }

    fn confirm_sampling(&self, asked: &Asked, question: &str) -> bool {
        let server = asked.server.as_str();
        tracing::info!(
            server,
            "answering with defaults refuses sampling: {question}"
        );
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Asked {
        Asked {
            server: "s".to_owned(),
            call: Some(3),
            what: Some("book".to_owned()),
        }
    }

    fn form() -> Form {
        Form {
            message: "Which one?".to_owned(),
            fields: Vec::new(),
        }
    }

    #[test]
    fn a_question_is_answered_later_from_another_thread_with_its_context() {
        let (responder, questions) = question_channel();
        let host = std::thread::spawn(move || {
            let pending = questions.next_blocking().expect("a question");
            assert_eq!(pending.asked, asked());
            assert!(matches!(pending.asking, Asking::Form(_)));
            pending.answer_form(FormAnswer::Declined);
            let pending = questions.next_blocking().expect("a second question");
            assert!(
                matches!(&pending.asking, Asking::Sampling(summary) if summary == "may I?"),
                "{pending:?}"
            );
            pending.answer_sampling(true);
        });
        assert_eq!(responder.elicit(&asked(), &form()), FormAnswer::Declined);
        assert!(responder.confirm_sampling(&asked(), "may I?"));
        host.join().expect("the host thread");
    }

    #[test]
    fn accept_defaults_submits_the_defaults_declines_a_required_field_without_one_and_refuses_sampling()
     {
        use rho_proto_core::features::elicitation::{Field, FieldKind};
        let field = |name: &str, required: bool, default: Option<&str>| Field {
            name: name.to_owned(),
            title: None,
            help: Vec::new(),
            required,
            kind: FieldKind::Text,
            default: default.map(|d| vec![d.to_owned()]),
        };
        let mut form = form();
        form.fields = vec![
            field("region", true, Some("eu")),
            field("note", false, None),
        ];
        let submitted = BTreeMap::from([("region".to_owned(), vec!["eu".to_owned()])]);
        assert_eq!(
            AcceptDefaults.elicit(&asked(), &form),
            FormAnswer::Submitted(submitted)
        );
        form.fields.push(field("name", true, None));
        assert_eq!(
            AcceptDefaults.elicit(&asked(), &form),
            FormAnswer::CouldNotAsk
        );
        assert!(!AcceptDefaults.confirm_sampling(&asked(), "may I?"));
    }

    #[test]
    fn only_the_url_channel_declares_urls_and_its_url_questions_are_answered_later() {
        let request = rho_proto_core::features::elicitation::url_request_from_params(
            &serde_json::json!({"mode": "url", "message": "m", "url": "https://a.example/"}),
            false,
        )
        .expect("valid");
        let (forms_only, _questions) = question_channel();
        assert!(!forms_only.can_open_urls());
        assert_eq!(
            forms_only.open_url(&asked(), &request),
            UrlAnswer::CouldNotAsk
        );
        assert!(!AcceptDefaults.can_open_urls());
        let (responder, questions) = question_channel_opening_urls();
        assert!(responder.can_open_urls());
        let host = std::thread::spawn(move || {
            let pending = questions.next_blocking().expect("a question");
            assert!(
                matches!(&pending.asking, Asking::Url(r) if r.host == "a.example"),
                "{pending:?}"
            );
            pending.answer_url(UrlAnswer::Opened);
            let pending = questions.next_blocking().expect("a second question");
            // A form's answer to a URL question is no answer.
            pending.answer_form(FormAnswer::Declined);
        });
        assert_eq!(responder.open_url(&asked(), &request), UrlAnswer::Opened);
        assert_eq!(
            responder.open_url(&asked(), &request),
            UrlAnswer::CouldNotAsk
        );
        host.join().expect("the host thread");
    }

    #[test]
    fn a_dropped_question_or_a_gone_receiver_is_answered_as_no_one_to_ask() {
        let (responder, questions) = question_channel();
        let host = std::thread::spawn(move || {
            drop(questions.next_blocking().expect("a question"));
            drop(questions.next_blocking().expect("a second question"));
        });
        assert_eq!(responder.elicit(&asked(), &form()), FormAnswer::CouldNotAsk);
        assert!(!responder.confirm_sampling(&asked(), "may I?"));
        host.join().expect("the host thread");
        // The receiver is gone now: nothing waits.
        assert_eq!(responder.elicit(&asked(), &form()), FormAnswer::CouldNotAsk);
    }
}
