//! What the host hands a runtime: [`RuntimeOptions`], plain data both
//! executors take (the ambient environment, the workspace, the shutdown
//! grace, an interrupt flag), and the services it lends: where transcripts
//! go ([`TranscriptSink`]) and, for questions from servers, someone to ask
//! (forms, sampling confirmations), a model to spend, and a ledger to
//! record the spend. All optional: a runtime without a responder declares
//! no elicitation, and one without a model declares no sampling, so a
//! well-behaved server never asks.
//!
//! Nothing here reads the process's environment: `rho_os` builds the
//! options from it (`options_from_process_env`, re-exported by both
//! executors), and a host that wants another environment (a test, an
//! embedding) calls [`RuntimeOptions::new`] and never touches its own.
//!
//! Only the traits live here, and [`answer`], the one place a question is
//! answered, shared by both executors (the smol one runs it on its
//! blocking pool): sampling asks the person first (gate two; gate one is
//! the server's `sampling = "ask"`), calls the model only on a yes, and
//! records the spend. The implementations do IO (a terminal, a model
//! command, a ledger file) and belong to the host: the `rho` CLI's are in
//! its `questions` and `sampling` modules, and its transcript file.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::process::SHUTDOWN_GRACE;
use crate::features::elicitation::{Form, FormAnswer, UrlAnswer, UrlRequest};
use crate::features::resource_subscriptions::WatchNotice;
use crate::features::sampling::{SamplingRequest, summary};
use crate::http::AuthorizationError;
use crate::oauth::challenge::BearerChallenge;
use crate::oauth::dpop::{DpopProver, ProofRequest};
use crate::runtime::Cancel;
use crate::runtime::driving::Answer;
use crate::session::{AuthorizationReason, Question, SamplingAnswer, ServerLog};

/// What a runtime takes from its surroundings, on either executor.
#[derive(Clone)]
pub struct RuntimeOptions {
    /// The ambient environment stdio servers' environments are computed
    /// from (see [`crate::config::env`]).
    pub ambient: Vec<(String, String)>,
    /// How long a stdio server gets to exit after its input closes.
    pub shutdown_grace: Duration,
    /// The session workspace, offered to servers as their one root
    /// (`roots/list`). `None` declares no roots.
    pub workspace: Option<PathBuf>,
    /// Who answers servers' questions, the model, the usage ledger.
    pub host: HostServices,
    /// Record every session's transcript here (`--record FILE`).
    pub record: Option<Arc<dyn TranscriptSink>>,
    /// Once cancelled (the `rho` CLI cancels it on SIGINT, SIGTERM and
    /// SIGHUP), startup stops waiting at once: every server not yet ready
    /// is closed, its process group killed, and reported as failed with
    /// "startup was interrupted". `None` waits out the budgets.
    pub interrupt: Option<Cancel>,
}

impl RuntimeOptions {
    /// Options with this ambient environment and workspace, the default
    /// shutdown grace, no host services, no transcript and no interrupt.
    pub fn new(ambient: Vec<(String, String)>, workspace: Option<PathBuf>) -> Self {
        Self {
            ambient,
            shutdown_grace: SHUTDOWN_GRACE,
            workspace,
            host: HostServices::default(),
            record: None,
            interrupt: None,
        }
    }

    /// The workspace as a `file://` URI, when it is an absolute path.
    pub fn workspace_root(&self) -> Option<String> {
        let path = self.workspace.as_ref()?;
        url::Url::from_directory_path(path).ok().map(String::from)
    }
}

impl std::fmt::Debug for RuntimeOptions {
    /// Variable names only: ambient values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.ambient.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("RuntimeOptions")
            .field("ambient", &names)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("workspace", &self.workspace)
            .field("host", &self.host)
            .field("record", &self.record.is_some())
            .field("interrupt", &self.interrupt)
            .finish()
    }
}

/// Where a run's transcript lines go (`--record FILE`): every session's
/// lines, in the format of [`crate::transcript`], appended as the drivers
/// take them (each line names its session). Shared by every session of a
/// run, so writes from several drivers must not interleave within a line.
pub trait TranscriptSink: Send + Sync {
    /// Appends `lines` (possibly none). A failure to write is the sink's
    /// to report; it never ends the session being recorded.
    fn write(&self, lines: Vec<String>);
}

/// Who asks a question, and during which call: what a UI shows beside a
/// form so that a person (or an agent running several calls at once)
/// knows which call is waiting on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The asking server's identity.
    pub server: String,
    /// The call the question belongs to, when the server said (a request
    /// sent on that call's stream, or a multi round-trip result of it):
    /// the runtime's id of that call, unique within the runtime.
    pub call: Option<u64>,
    /// What that call is: the server's own tool name, or the request's
    /// method (`prompts/get`, `resources/read`, ...).
    pub what: Option<String>,
}

impl Asked {
    /// A question of `server` tied to no call.
    pub fn by(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            call: None,
            what: None,
        }
    }
}

/// Puts questions in front of a person. Calls may block for as long as the
/// person takes; the call's budget is paused meanwhile. Each executor asks
/// off its IO path (a thread of its own, or the smol blocking pool), so a
/// responder that waits for a UI to answer later (see `rho_host`'s
/// question channel) holds up only that question.
pub trait Responder: Send + Sync {
    /// Shows a server's form, titled with the server's identity so it is
    /// never mistaken for rho's own question, and returns the answers.
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer;
    /// Asks whether the server may spend the user's tokens; `question`
    /// names the server, the message count and the token ceiling.
    fn confirm_sampling(&self, asked: &Asked, question: &str) -> bool;
    /// Whether this responder can show a person a URL and open it in their
    /// browser on an explicit yes ([`Responder::open_url`]). A run declares
    /// URL-mode elicitation only when it says so; the default is no, so a
    /// responder written for forms alone never sees a URL.
    fn can_open_urls(&self) -> bool {
        false
    }
    /// Shows a server's URL request (the whole URL, its host prominent,
    /// the server and the call) and opens the URL in the person's browser
    /// only on their explicit yes, returning [`UrlAnswer::Opened`] then.
    /// Never fetch the URL, never change it. Called only when
    /// [`Responder::can_open_urls`] says yes; the default answers as no one
    /// could be asked.
    fn open_url(&self, asked: &Asked, request: &UrlRequest) -> UrlAnswer {
        let _ = (asked, request);
        UrlAnswer::CouldNotAsk
    }
}

/// Where a host hears its servers' log messages (`notifications/message`),
/// redacted and within the flood limit, beside tracing (which gets them
/// under the `rho::mcp::server` target either way). Called on the
/// session's own path: keep it quick (hand the message on, never block).
pub trait LogSink: Send + Sync {
    /// Server `server` logged `log`.
    fn server_log(&self, server: &str, log: &ServerLog);
}

impl<F: Fn(&str, &ServerLog) + Send + Sync> LogSink for F {
    fn server_log(&self, server: &str, log: &ServerLog) {
        self(server, log)
    }
}

/// Where a host hears of the resources it subscribed to
/// (`Host::subscribe_resource` in the host library; see
/// [`crate::features::resource_subscriptions`]): that one changed, that
/// its subscription was renewed on a restarted server, or that it ended.
/// Called on the session's own path: keep it quick (queue the notice,
/// never block, never read the resource from inside it). The URI is the
/// one the host subscribed to.
pub trait ResourceSink: Send + Sync {
    /// What became of resource `uri` of server `server`.
    fn notice(&self, server: &str, uri: &str, notice: WatchNotice);
}

impl<F: Fn(&str, &str, WatchNotice) + Send + Sync> ResourceSink for F {
    fn notice(&self, server: &str, uri: &str, notice: WatchNotice) {
        self(server, uri, notice)
    }
}

/// The user's model, for sampling.
pub trait Model: Send + Sync {
    /// The model's name, reported to the server.
    fn name(&self) -> String;
    /// One completion: a system prompt and one user turn.
    fn complete(&self, system: &str, prompt: &str) -> Result<String, ModelError>;
}

/// Why the user's model gave no completion. The host's side failed (the
/// model command did not start, failed or ran out of time), not the
/// server's; the reason goes back to the server as the sampling error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ModelError {
    /// What went wrong, for the server and the log.
    pub reason: String,
}

impl ModelError {
    /// A model failure with this reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
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

/// Gets a remote server a new access token mid-session, when it answered
/// a request 401 (expired or revoked) or 403 `insufficient_scope`. The
/// request waits meanwhile, and its budget keeps running (see
/// [`crate::http`]): an implementation bounds its own work (the login's
/// 60 s discovery and 5-minute browser bounds) and never asks a person
/// where none is present.
pub trait Authorizer: Send + Sync {
    /// The `Authorization` header value to resend with (`Bearer …`), or
    /// why there is none (its words reach a person). `challenge` is the
    /// server's (its `scope` is what it wants).
    fn authorize(
        &self,
        server: &str,
        reason: AuthorizationReason,
        challenge: &BearerChallenge,
    ) -> Result<String, AuthorizationError>;

    /// A DPoP proof (RFC 9449) for `request` to `server`, which presents a
    /// token this authorizer bound to a key of the host's (it answered
    /// with an `Authorization: DPoP` header, or the host connected with
    /// one it stored): the authorizer holds the keys it bound tokens to.
    /// The default binds none.
    fn prove_possession(&self, server: &str, request: &ProofRequest<'_>) -> Result<String, String> {
        let _ = request;
        Err(format!(
            "the host's authorizer binds no tokens to keys, so it cannot prove possession for server `{server}`"
        ))
    }
}

/// The [`DpopProver`] of a run: its [`Authorizer`], which bound the
/// tokens (see [`Authorizer::prove_possession`]).
pub struct AuthorizerProofs(pub Arc<dyn Authorizer>);

impl std::fmt::Debug for AuthorizerProofs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizerProofs").finish_non_exhaustive()
    }
}

impl DpopProver for AuthorizerProofs {
    fn prove(&self, server: &str, request: &ProofRequest<'_>) -> Result<String, String> {
        self.0.prove_possession(server, request)
    }
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
    /// Re-authorization of OAuth servers mid-session; `None` fails a
    /// refused request at once with "run `rho mcp login`".
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// Where the servers' log messages go besides tracing.
    pub logs: Option<Arc<dyn LogSink>>,
    /// Where updates of subscribed resources go; `None` drops them (a
    /// subscription is then of no use, but harmless).
    pub resource_updates: Option<Arc<dyn ResourceSink>>,
    /// The secrets the host reads or holds for its servers (an OAuth
    /// grant's assertion, ID token and client secret, the tokens it
    /// receives), learned as the run goes on: every server's text is
    /// redacted against them, as against its configured values (see
    /// [`crate::text::redact`]).
    pub secrets: crate::text::redact::SecretBook,
    /// The host shows a server's MCP App view to a person (serves it to a
    /// browser): declare the MCP Apps extension, so servers give their
    /// tools views (see [`crate::features::apps`]).
    pub renders_apps: bool,
}

impl std::fmt::Debug for HostServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostServices")
            .field("responder", &self.responder.is_some())
            .field("model", &self.model.is_some())
            .field("ledger", &self.ledger.is_some())
            .field("authorizer", &self.authorizer.is_some())
            .field("logs", &self.logs.is_some())
            .field("resource_updates", &self.resource_updates.is_some())
            .field("secrets", &self.secrets)
            .field("renders_apps", &self.renders_apps)
            .finish()
    }
}

impl HostServices {
    /// Whether this run can put a form in front of a person.
    pub fn can_elicit(&self) -> bool {
        self.responder.is_some()
    }

    /// Whether this run can also show a person a URL and open it on their
    /// yes (declare URL-mode elicitation): its responder says so.
    pub fn can_open_urls(&self) -> bool {
        self.responder.as_ref().is_some_and(|r| r.can_open_urls())
    }

    /// Whether this run can re-authorize a server mid-session.
    pub fn can_reauthorize(&self) -> bool {
        self.authorizer.is_some()
    }

    /// Whether this run can sample: a model to spend and a person to ask.
    pub fn can_sample(&self) -> bool {
        self.model.is_some() && self.responder.is_some()
    }
}

/// Answers one question, blocking: asks the person, and for sampling calls
/// the model on a yes and records the spend; an authorization question
/// goes to the [`Authorizer`].
pub fn answer(services: &HostServices, asked: &Asked, question: &Question) -> Answer {
    match question {
        Question::Elicitation(form) => Answer::Form(match &services.responder {
            Some(responder) => responder.elicit(asked, form),
            None => FormAnswer::CouldNotAsk,
        }),
        Question::Url(request) => Answer::Url(match &services.responder {
            Some(responder) if responder.can_open_urls() => responder.open_url(asked, request),
            _ => UrlAnswer::CouldNotAsk,
        }),
        Question::Sampling(request) => Answer::Sampling(sample(services, asked, request)),
        Question::Authorization { reason, challenge } => {
            Answer::Authorization(match &services.authorizer {
                Some(authorizer) => authorizer.authorize(&asked.server, *reason, challenge),
                None => Err(AuthorizationError::CannotLogIn),
            })
        }
    }
}

fn sample(services: &HostServices, asked: &Asked, request: &SamplingRequest) -> SamplingAnswer {
    let (Some(responder), Some(model)) = (&services.responder, &services.model) else {
        return SamplingAnswer::Refused;
    };
    let server = asked.server.as_str();
    if !responder.confirm_sampling(asked, &summary(server, request)) {
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
        Err(error) => SamplingAnswer::Failed(error.reason),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A person who says `yes` (or not) and remembers what was asked.
    struct Person {
        yes: bool,
        asked: Mutex<Vec<String>>,
    }

    impl Responder for Person {
        fn elicit(&self, _asked: &Asked, _form: &Form) -> FormAnswer {
            FormAnswer::Dismissed
        }
        fn confirm_sampling(&self, _asked: &Asked, question: &str) -> bool {
            self.asked.lock().expect("lock").push(question.to_owned());
            self.yes
        }
    }

    /// A responder that can open URLs (or says it cannot) and answers
    /// every URL with `answer`, counting what it was shown.
    struct Opener {
        can: bool,
        shown: Mutex<Vec<String>>,
    }

    impl Responder for Opener {
        fn elicit(&self, _asked: &Asked, _form: &Form) -> FormAnswer {
            FormAnswer::Declined
        }
        fn confirm_sampling(&self, _asked: &Asked, _question: &str) -> bool {
            false
        }
        fn can_open_urls(&self) -> bool {
            self.can
        }
        fn open_url(&self, _asked: &Asked, request: &UrlRequest) -> UrlAnswer {
            self.shown.lock().expect("lock").push(request.url.clone());
            UrlAnswer::Opened
        }
    }

    #[test]
    fn a_url_reaches_only_a_responder_that_says_it_can_open_urls() {
        let request = crate::features::elicitation::url_request_from_params(
            &serde_json::json!({"mode": "url", "message": "m", "url": "https://a.example/"}),
            false,
        )
        .expect("valid");
        let question = Question::Url(request);
        for can in [true, false] {
            let opener = Arc::new(Opener {
                can,
                shown: Mutex::new(Vec::new()),
            });
            let services = HostServices {
                responder: Some(Arc::clone(&opener) as Arc<dyn Responder>),
                ..HostServices::default()
            };
            assert_eq!(services.can_open_urls(), can);
            let answer = answer(&services, &Asked::by("s"), &question);
            let expected = if can {
                UrlAnswer::Opened
            } else {
                UrlAnswer::CouldNotAsk
            };
            assert!(
                matches!(answer, Answer::Url(a) if a == expected),
                "{answer:?}"
            );
            assert_eq!(opener.shown.lock().expect("lock").len(), usize::from(can));
        }
        // A responder written for forms alone cannot open URLs.
        let forms_only = HostServices {
            responder: Some(Arc::new(Person {
                yes: true,
                asked: Mutex::new(Vec::new()),
            })),
            ..HostServices::default()
        };
        assert!(forms_only.can_elicit() && !forms_only.can_open_urls());
        assert!(!HostServices::default().can_open_urls());
    }

    /// A model that answers (or fails) and counts its calls.
    struct Scripted {
        reply: Result<String, ModelError>,
        calls: Mutex<usize>,
    }

    impl Model for Scripted {
        fn name(&self) -> String {
            "scripted".to_owned()
        }
        fn complete(&self, _system: &str, _prompt: &str) -> Result<String, ModelError> {
            *self.calls.lock().expect("lock") += 1;
            self.reply.clone()
        }
    }

    #[derive(Default)]
    struct Ledger(Mutex<Vec<(String, String, usize, usize)>>);

    impl UsageLedger for Ledger {
        fn record_sampling(&self, server: &str, model: &str, prompt: usize, completion: usize) {
            self.0.lock().expect("lock").push((
                server.to_owned(),
                model.to_owned(),
                prompt,
                completion,
            ));
        }
    }

    fn request() -> Question {
        Question::Sampling(SamplingRequest {
            message_count: 1,
            max_tokens: Some(50),
            system_prompt: "system".to_owned(),
            prompt: "four".to_owned(),
            ignored: Vec::new(),
        })
    }

    fn services(
        yes: bool,
        reply: Result<String, ModelError>,
    ) -> (HostServices, Arc<Scripted>, Arc<Ledger>) {
        let model = Arc::new(Scripted {
            reply,
            calls: Mutex::new(0),
        });
        let ledger = Arc::new(Ledger::default());
        let services = HostServices {
            responder: Some(Arc::new(Person {
                yes,
                asked: Mutex::new(Vec::new()),
            })),
            model: Some(Arc::clone(&model) as Arc<dyn Model>),
            ledger: Some(Arc::clone(&ledger) as Arc<dyn UsageLedger>),
            ..HostServices::default()
        };
        (services, model, ledger)
    }

    fn sampling(answer: Answer) -> SamplingAnswer {
        match answer {
            Answer::Sampling(answer) => answer,
            other => panic!("not a sampling answer: {other:?}"),
        }
    }

    /// A Windows workspace is a root as a `file:` URI with its drive
    /// (under Wine in scripts/platforms).
    #[cfg(windows)]
    #[test]
    fn a_windows_workspace_is_a_file_uri_with_its_drive() {
        let options = RuntimeOptions::new(Vec::new(), Some(PathBuf::from(r"C:\work\my project")));
        assert_eq!(
            options.workspace_root().as_deref(),
            Some("file:///C:/work/my%20project/")
        );
        let relative = RuntimeOptions::new(Vec::new(), Some(PathBuf::from(r"work\project")));
        assert_eq!(relative.workspace_root(), None);
    }

    #[cfg(unix)]
    #[test]
    fn the_workspace_is_a_root_only_when_absolute_and_debug_hides_values() {
        let mut options = RuntimeOptions::new(
            vec![("TOKEN".to_owned(), "s3cret".to_owned())],
            Some(PathBuf::from("/work/project")),
        );
        assert_eq!(options.shutdown_grace, SHUTDOWN_GRACE);
        assert!(options.record.is_none() && options.interrupt.is_none());
        assert_eq!(
            options.workspace_root().as_deref(),
            Some("file:///work/project/")
        );
        let shown = format!("{options:?}");
        assert!(
            shown.contains("TOKEN") && !shown.contains("s3cret"),
            "{shown}"
        );
        options.workspace = Some(PathBuf::from("relative"));
        assert_eq!(options.workspace_root(), None);
        options.workspace = None;
        assert_eq!(options.workspace_root(), None);
    }

    #[test]
    fn nobody_to_ask_means_no_form_and_no_sampling() {
        let none = HostServices::default();
        assert!(!none.can_elicit() && !none.can_sample());
        let form = Question::Elicitation(Form {
            message: "name?".to_owned(),
            fields: Vec::new(),
        });
        assert!(matches!(
            answer(&none, &Asked::by("s"), &form),
            Answer::Form(FormAnswer::CouldNotAsk)
        ));
        assert_eq!(
            sampling(answer(&none, &Asked::by("s"), &request())),
            SamplingAnswer::Refused
        );
    }

    #[test]
    fn a_no_refuses_without_calling_the_model() {
        let (services, model, ledger) = services(false, Ok("text".to_owned()));
        assert!(services.can_sample());
        assert_eq!(
            sampling(answer(&services, &Asked::by("s"), &request())),
            SamplingAnswer::Refused
        );
        assert_eq!(*model.calls.lock().expect("lock"), 0);
        assert!(ledger.0.lock().expect("lock").is_empty());
    }

    #[test]
    fn a_yes_calls_the_model_and_records_the_spend() {
        let (services, model, ledger) = services(true, Ok("completion".to_owned()));
        assert_eq!(
            sampling(answer(&services, &Asked::by("s"), &request())),
            SamplingAnswer::Completed {
                text: "completion".to_owned(),
                model: "scripted".to_owned()
            }
        );
        assert_eq!(*model.calls.lock().expect("lock"), 1);
        assert_eq!(
            *ledger.0.lock().expect("lock"),
            vec![("s".to_owned(), "scripted".to_owned(), 4, 10)]
        );
    }

    /// Renews once with the scope asked for, then has nothing more.
    /// What an authorizer was asked: server, reason, scope.
    type Authorized = (String, AuthorizationReason, Option<Vec<String>>);

    struct Renewer(Mutex<Vec<Authorized>>);

    impl Authorizer for Renewer {
        fn authorize(
            &self,
            server: &str,
            reason: AuthorizationReason,
            challenge: &BearerChallenge,
        ) -> Result<String, AuthorizationError> {
            let mut asked = self.0.lock().expect("lock");
            asked.push((server.to_owned(), reason, challenge.scope.clone()));
            if asked.len() == 1 {
                Ok("Bearer fresh".to_owned())
            } else {
                Err(AuthorizationError::LoginNeeded {
                    server: server.to_owned(),
                    reason: "no refresh token".to_owned(),
                })
            }
        }
    }

    #[test]
    fn authorization_goes_to_the_authorizer_and_without_one_fails() {
        let question = Question::Authorization {
            reason: AuthorizationReason::InsufficientScope,
            challenge: BearerChallenge {
                scope: Some(vec!["files:write".to_owned()]),
                ..BearerChallenge::default()
            },
        };
        let none = HostServices::default();
        assert!(!none.can_reauthorize());
        assert!(matches!(
            answer(&none, &Asked::by("s"), &question),
            Answer::Authorization(Err(AuthorizationError::CannotLogIn))
        ));
        let renewer = Arc::new(Renewer(Mutex::new(Vec::new())));
        let services = HostServices {
            authorizer: Some(Arc::clone(&renewer) as Arc<dyn Authorizer>),
            ..HostServices::default()
        };
        assert!(services.can_reauthorize());
        assert!(matches!(
            answer(&services, &Asked::by("s"), &question),
            Answer::Authorization(Ok(header)) if header == "Bearer fresh"
        ));
        assert!(matches!(
            answer(&services, &Asked::by("s"), &question),
            Answer::Authorization(Err(AuthorizationError::LoginNeeded { server, reason }))
                if server == "s" && reason == "no refresh token"
        ));
        assert_eq!(
            renewer.0.lock().expect("lock")[0],
            (
                "s".to_owned(),
                AuthorizationReason::InsufficientScope,
                Some(vec!["files:write".to_owned()])
            )
        );
    }

    #[test]
    fn a_failed_model_call_is_reported_and_not_recorded() {
        let (services, _, ledger) = services(true, Err(ModelError::new("boom")));
        assert_eq!(
            sampling(answer(&services, &Asked::by("s"), &request())),
            SamplingAnswer::Failed("boom".to_owned())
        );
        assert!(ledger.0.lock().expect("lock").is_empty());
    }
}
