//! Questions from a real server, on both executors: server-everything's
//! `trigger-elicitation-request` answered through the form path by a
//! scripted responder, and `trigger-sampling-request` behind its two gates
//! (`sampling = "ask"` in config, then the person) with a scripted model
//! and an in-memory ledger (the CLI's command model and ledger file are
//! tested in the CLI crate).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use rho_host::CallOptions;
use rho_host::Host;
use rho_proto_core::features::elicitation::{FieldKind, Form, FormAnswer};
use rho_proto_core::host::RuntimeOptions;
use rho_proto_core::host::{Asked, HostServices, Model, ModelError, Responder, UsageLedger};
use rho_proto_core::runtime::ToolCallError;
use rho_proto_core::runtime::status::{ReadyReport, ServerStatus};
use rho_proto_core::session::CallError;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::{Value, json};

/// What the scripted person does with a form.
#[derive(Clone, Copy, Debug)]
enum FormScript {
    /// Fills in every field with a valid, non-default answer.
    FillEveryField,
    /// Dismisses the form.
    Dismiss,
}

/// A person who answers from a script and remembers what was asked.
struct ScriptedResponder {
    form: FormScript,
    approve_sampling: bool,
    forms: Mutex<Vec<(String, Form)>>,
    confirmations: Mutex<Vec<(String, String)>>,
}

impl ScriptedResponder {
    fn new(form: FormScript, approve_sampling: bool) -> Arc<Self> {
        Arc::new(Self {
            form,
            approve_sampling,
            forms: Mutex::new(Vec::new()),
            confirmations: Mutex::new(Vec::new()),
        })
    }

    fn forms(&self) -> Vec<(String, Form)> {
        self.forms.lock().expect("lock").clone()
    }

    fn confirmations(&self) -> Vec<(String, String)> {
        self.confirmations.lock().expect("lock").clone()
    }
}

impl Responder for ScriptedResponder {
    fn elicit(&self, asked: &Asked, form: &Form) -> FormAnswer {
        let server = asked.server.as_str();
        self.forms
            .lock()
            .expect("lock")
            .push((server.to_owned(), form.clone()));
        match self.form {
            FormScript::FillEveryField => FormAnswer::Submitted(fill_every_field(form)),
            FormScript::Dismiss => FormAnswer::Dismissed,
        }
    }

    fn confirm_sampling(&self, asked: &Asked, question: &str) -> bool {
        let server = asked.server.as_str();
        self.confirmations
            .lock()
            .expect("lock")
            .push((server.to_owned(), question.to_owned()));
        self.approve_sampling
    }
}

/// A valid answer for every field, as text, chosen from what the form says
/// (never the pre-filled default, so the server provably got our answer).
fn fill_every_field(form: &Form) -> BTreeMap<String, Vec<String>> {
    form.fields
        .iter()
        .map(|field| {
            let texts = match &field.kind {
                FieldKind::Choice {
                    options,
                    multi: false,
                } => vec![options.last().expect("a choice has options").value.clone()],
                FieldKind::Choice {
                    options,
                    multi: true,
                } => {
                    let first = options.first().expect("options").value.clone();
                    let last = options.last().expect("options").value.clone();
                    vec![last, first]
                }
                FieldKind::Confirm => vec!["yes".to_owned()],
                FieldKind::Number { integer: true } => vec!["7".to_owned()],
                FieldKind::Number { integer: false } => vec!["12.5".to_owned()],
                FieldKind::Text => {
                    let help = field.help.join("\n");
                    vec![if help.contains("Format: an email address") {
                        "ada@example.com".to_owned()
                    } else if help.contains("Format: a URI") {
                        "https://example.com/ada".to_owned()
                    } else if help.contains("Format: a date (YYYY-MM-DD)") {
                        "1815-12-10".to_owned()
                    } else {
                        format!("text for {}", field.name)
                    }]
                }
            };
            (field.name.clone(), texts)
        })
        .collect()
}

fn ready(runtime: &Host, id: &str) -> ReadyReport {
    match runtime.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report,
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

/// Starts real server-everything over stdio as `everything`, with `extra`
/// appended to its config table and `host` lending the runtime a person,
/// a model and a ledger.
fn everything<R: TestRuntime>(extra: &str, host: HostServices) -> Host {
    let text = format!(
        "{}{extra}",
        node_server("everything", &everything_js(), &["stdio"])
    );
    let config = parse_config(&text);
    let mut options: RuntimeOptions = options_with(&[]);
    options.host = host;
    let runtime = R::start(&config, options);
    ready(&runtime, "everything");
    runtime
}

/// `server`'s tool `tool` as exported, if it is.
fn offered(runtime: &Host, tool: &str) -> Option<(String, Value)> {
    runtime
        .tools()
        .tools()
        .iter()
        .find(|t| t.server == "everything" && t.tool == tool)
        .map(|t| (t.name.clone(), (*t.input_schema).clone()))
}

/// The JSON a server-everything tool appended to its reply after `marker`.
fn json_after(text: &str, marker: &str) -> Value {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in the reply:\n{text}"));
    serde_json::from_str(&text[at + marker.len()..])
        .unwrap_or_else(|e| panic!("the reply after {marker:?} is not JSON ({e}):\n{text}"))
}

/// A model that remembers what it was given and gives a fixed reply (the
/// `rho` CLI's command model is tested in the CLI crate).
#[derive(Default)]
struct ScriptedModel {
    calls: Mutex<Vec<(String, String)>>,
}

impl Model for ScriptedModel {
    fn name(&self) -> String {
        "scripted-model".to_owned()
    }

    fn complete(&self, system: &str, prompt: &str) -> Result<String, ModelError> {
        self.calls
            .lock()
            .expect("lock")
            .push((system.to_owned(), prompt.to_owned()));
        Ok("fixed model reply".to_owned())
    }
}

/// One recorded spend: server, model, prompt and completion sizes.
type Spend = (String, String, usize, usize);

/// A ledger that keeps what it is told.
#[derive(Default)]
struct MemoryLedger {
    spends: Mutex<Vec<Spend>>,
}

impl UsageLedger for MemoryLedger {
    fn record_sampling(&self, server: &str, model: &str, prompt: usize, completion: usize) {
        self.spends.lock().expect("lock").push((
            server.to_owned(),
            model.to_owned(),
            prompt,
            completion,
        ));
    }
}

/// Services with `responder`, a scripted model and a memory ledger, both
/// returned to be inspected.
fn services(
    responder: &Arc<ScriptedResponder>,
) -> (HostServices, Arc<ScriptedModel>, Arc<MemoryLedger>) {
    let model = Arc::new(ScriptedModel::default());
    let ledger = Arc::new(MemoryLedger::default());
    let host = HostServices {
        responder: Some(Arc::clone(responder) as Arc<dyn Responder>),
        model: Some(Arc::clone(&model) as Arc<dyn Model>),
        ledger: Some(Arc::clone(&ledger) as Arc<dyn UsageLedger>),
        ..HostServices::default()
    };
    (host, model, ledger)
}

impl ScriptedModel {
    fn calls(&self) -> Vec<(String, String)> {
        self.calls.lock().expect("lock").clone()
    }
}

impl MemoryLedger {
    fn spends(&self) -> Vec<Spend> {
        self.spends.lock().expect("lock").clone()
    }
}

// ----- elicitation -----

fn elicitation_tool_is_offered_only_when_a_person_can_be_asked<R: TestRuntime>() {
    let runtime = everything::<R>("", HostServices::default());
    assert!(
        offered(&runtime, "trigger-elicitation-request").is_none(),
        "no responder, no elicitation declared, so the server hides the tool"
    );
    runtime.shutdown();

    let responder = ScriptedResponder::new(FormScript::FillEveryField, false);
    let runtime = everything::<R>(
        "",
        HostServices {
            responder: Some(responder as Arc<dyn Responder>),
            ..HostServices::default()
        },
    );
    let (_, schema) = offered(&runtime, "trigger-elicitation-request")
        .expect("offered once elicitation is declared");
    assert_eq!(schema["type"], "object", "{schema}");
    assert!(
        schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.is_empty()),
        "the tool takes no arguments: {schema}"
    );
    // No model: sampling is not declared, so its tool stays hidden.
    assert!(offered(&runtime, "trigger-sampling-request").is_none());
    runtime.shutdown();
}

fn every_form_field_reaches_the_server_typed<R: TestRuntime>() {
    let responder = ScriptedResponder::new(FormScript::FillEveryField, false);
    let runtime = everything::<R>(
        "",
        HostServices {
            responder: Some(Arc::clone(&responder) as Arc<dyn Responder>),
            ..HostServices::default()
        },
    );
    let (name, _) = offered(&runtime, "trigger-elicitation-request").expect("offered");
    let result = runtime
        .call(&name, json!({}), CallOptions::new())
        .expect("the elicitation call succeeds");
    let text = result.text();
    assert!(!result.is_error, "{text}");

    // The person was asked once, with the server's identity and its form.
    let forms = responder.forms();
    assert_eq!(forms.len(), 1, "{forms:?}");
    let (server, form) = &forms[0];
    assert_eq!(server, "everything");
    assert_eq!(
        form.message,
        "Please provide inputs for the following fields:"
    );
    let names: BTreeSet<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "birthdate",
            "check",
            "email",
            "firstLine",
            "homepage",
            "integer",
            "legacyTitledEnum",
            "name",
            "number",
            "titledMultipleSelectEnum",
            "titledSingleSelectEnum",
            "untitledMultipleSelectEnum",
            "untitledSingleSelectEnum",
        ])
    );
    let integer = form
        .fields
        .iter()
        .find(|f| f.name == "integer")
        .expect("integer field");
    assert_eq!(integer.kind, FieldKind::Number { integer: true });
    assert_eq!(integer.default, Some(vec!["42".to_owned()]));

    // The server echoes what it received.
    assert!(
        text.contains("User provided the requested information"),
        "{text}"
    );
    let raw = json_after(&text, "Raw result: ");
    assert_eq!(raw["action"], "accept", "{raw}");
    let expected = json!({
        "name": "text for name",
        "check": true,
        "firstLine": "text for firstLine",
        "email": "ada@example.com",
        "homepage": "https://example.com/ada",
        "birthdate": "1815-12-10",
        "integer": 7,
        "number": 12.5,
        "untitledSingleSelectEnum": "Phoebe",
        "untitledMultipleSelectEnum": ["Guitar", "Bass"],
        "titledSingleSelectEnum": "hero-3",
        "titledMultipleSelectEnum": ["fish-1", "fish-3"],
        "legacyTitledEnum": "pet-5",
    });
    assert_eq!(raw["content"], expected, "{text}");
    assert!(raw["content"]["integer"].is_i64(), "{raw}");
    assert!(raw["content"]["check"].is_boolean(), "{raw}");
    // Typed on the wire: numbers and booleans without quotes.
    for typed in ["\"integer\": 7", "\"number\": 12.5", "\"check\": true"] {
        assert!(text.contains(typed), "{typed} not in:\n{text}");
    }
    for line in [
        "- Name: text for name",
        "- Agreed to terms: true",
        "- Email: ada@example.com",
        "- Homepage: https://example.com/ada",
        "- Birthdate: 1815-12-10",
        "- Favorite Integer: 7",
        "- Favorite Number: 12.5",
    ] {
        assert!(text.contains(line), "{line} not in:\n{text}");
    }
    runtime.shutdown();
}

fn a_dismissed_form_cancels_the_call_and_the_session_carries_on<R: TestRuntime>() {
    let responder = ScriptedResponder::new(FormScript::Dismiss, false);
    let runtime = everything::<R>(
        "",
        HostServices {
            responder: Some(Arc::clone(&responder) as Arc<dyn Responder>),
            ..HostServices::default()
        },
    );
    let (name, _) = offered(&runtime, "trigger-elicitation-request").expect("offered");
    match runtime.call(&name, json!({}), CallOptions::new()) {
        Err(ToolCallError::Call(CallError::Cancelled { server, .. })) => {
            assert_eq!(server, "everything")
        }
        other => panic!("expected the call to end as cancelled, got {other:?}"),
    }
    assert_eq!(responder.forms().len(), 1);
    let echo = runtime
        .call(
            ("everything", "echo"),
            json!({"message": "still here"}),
            CallOptions::new(),
        )
        .expect("echo after a dismissed form");
    assert_eq!(echo.text(), "Echo: still here");
    runtime.shutdown();
}

fn a_form_answered_later_names_its_call_and_a_decline_reaches_the_server<R: TestRuntime>() {
    let (responder, questions) = rho_host::question_channel();
    let runtime = everything::<R>(
        "",
        HostServices {
            responder: Some(responder),
            ..HostServices::default()
        },
    );
    let (name, _) = offered(&runtime, "trigger-elicitation-request").expect("offered");
    // The host's UI: another thread takes the question as a value and
    // declines it, as a person pressing "Decline" would.
    let ui = std::thread::spawn(move || {
        let pending = questions.next_blocking().expect("a question");
        let asked = pending.asked.clone();
        let is_form = matches!(pending.asking, rho_host::Asking::Form(_));
        pending.answer_form(FormAnswer::Declined);
        (asked, is_form)
    });
    let result = runtime
        .call(&name, json!({}), CallOptions::new())
        .expect("a declined form still ends the call with the server's result");
    let (asked, is_form) = ui.join().expect("the UI thread");
    assert!(is_form, "the question is a form");
    assert_eq!(asked.server, "everything");
    assert_eq!(asked.what.as_deref(), Some("trigger-elicitation-request"));
    assert!(asked.call.is_some(), "the call is named: {asked:?}");
    let text = result.text();
    assert!(text.contains("User declined"), "{text}");
    runtime.shutdown();
}

// ----- sampling -----

fn approved_sampling_runs_the_model_and_records_one_ledger_line<R: TestRuntime>() {
    let responder = ScriptedResponder::new(FormScript::FillEveryField, true);
    let (host, model, ledger) = services(&responder);
    let runtime = everything::<R>("sampling = \"ask\"\n", host);
    let (name, schema) =
        offered(&runtime, "trigger-sampling-request").expect("offered with sampling = \"ask\"");
    assert_eq!(schema["properties"]["prompt"]["type"], "string", "{schema}");

    let result = runtime
        .call(
            &name,
            json!({"prompt": "say hi", "maxTokens": 50}),
            CallOptions::new(),
        )
        .expect("the sampling call succeeds");
    let text = result.text();
    assert!(!result.is_error, "{text}");
    assert!(text.contains("fixed model reply"), "{text}");
    let reply = json_after(&text, "LLM sampling result: ");
    assert_eq!(reply["content"]["text"], "fixed model reply", "{reply}");
    assert_eq!(reply["model"], "scripted-model", "{reply}");
    assert_eq!(reply["role"], "assistant", "{reply}");

    // The person was asked once, with the server, the count and the ceiling.
    let confirmations = responder.confirmations();
    assert_eq!(confirmations.len(), 1, "{confirmations:?}");
    assert_eq!(confirmations[0].0, "everything");
    assert_eq!(
        confirmations[0].1,
        "server `everything` asks your model for a completion: 1 message, up to 50 tokens"
    );

    // The model got the flattened conversation and the fenced system prompt.
    let calls = model.calls();
    assert_eq!(calls.len(), 1, "the model ran once: {calls:?}");
    let (system, prompt) = &calls[0];
    assert_eq!(
        prompt,
        "User:\nResource trigger-sampling-request context: say hi"
    );
    assert!(
        system.contains("<mcp-sampling-system-prompt server=\"everything\">"),
        "{system}"
    );
    assert!(
        system.contains("You are a helpful test server."),
        "{system}"
    );

    assert_eq!(
        ledger.spends(),
        vec![(
            "everything".to_owned(),
            "scripted-model".to_owned(),
            prompt.len(),
            "fixed model reply".len()
        )]
    );
    runtime.shutdown();
}

fn sampling_at_the_default_config_is_not_offered_and_spends_nothing<R: TestRuntime>() {
    let responder = ScriptedResponder::new(FormScript::FillEveryField, true);
    let (host, model, ledger) = services(&responder);
    let runtime = everything::<R>("", host);
    assert!(
        offered(&runtime, "trigger-sampling-request").is_none(),
        "the server saw no sampling capability, so it hides the tool"
    );
    // The same run does declare elicitation: the server saw the handshake.
    assert!(offered(&runtime, "trigger-elicitation-request").is_some());
    runtime.shutdown();
    assert!(responder.confirmations().is_empty());
    assert!(model.calls().is_empty(), "the model never ran");
    assert!(ledger.spends().is_empty(), "{:?}", ledger.spends());
}

fn refused_sampling_is_rejected_and_the_model_never_runs<R: TestRuntime>() {
    let responder = ScriptedResponder::new(FormScript::FillEveryField, false);
    let (host, model, ledger) = services(&responder);
    let runtime = everything::<R>("sampling = \"ask\"\n", host);
    let (name, _) = offered(&runtime, "trigger-sampling-request").expect("offered");
    let result = runtime
        .call(
            &name,
            json!({"prompt": "say hi", "maxTokens": 50}),
            CallOptions::new(),
        )
        .expect("the server reports the rejection in its result");
    let text = result.text();
    assert!(result.is_error, "a refusal is not a success: {text}");
    assert!(text.contains("User rejected sampling request"), "{text}");
    assert!(!text.contains("fixed model reply"), "{text}");
    assert_eq!(responder.confirmations().len(), 1, "the person was asked");
    assert!(model.calls().is_empty(), "the model ran after a refusal");
    assert!(ledger.spends().is_empty(), "{:?}", ledger.spends());
    runtime.shutdown();
}

both_executors!(
    elicitation_tool_is_offered_only_when_a_person_can_be_asked,
    every_form_field_reaches_the_server_typed,
    a_dismissed_form_cancels_the_call_and_the_session_carries_on,
    a_form_answered_later_names_its_call_and_a_decline_reaches_the_server,
    approved_sampling_runs_the_model_and_records_one_ledger_line,
    sampling_at_the_default_config_is_not_offered_and_spends_nothing,
    refused_sampling_is_rejected_and_the_model_never_runs,
);
