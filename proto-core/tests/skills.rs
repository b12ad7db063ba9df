//! The skills extension (SEP-2640) through a session, against a scripted
//! server and a fake clock: what goes on the wire when a host lists a
//! server's skills (only `skills/list`, never a file) and when it loads
//! one (one `resources/read` of its `SKILL.md`, nothing else), and that a
//! server that did not declare the extension is never asked.

use std::time::Duration;

use rho_proto_core::features::FeatureRequest;
use rho_proto_core::features::skills::{Sha256Digest, SkillCheck, SkillListing};
use rho_proto_core::session::{ApiMisuse, CallId, Event, SessionOptions, SessionState};
use rho_proto_core::wire::jsonrpc::Message;
use rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION;
use serde_json::{Value, json};

const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\nSkill body.\n";
const FORMS: &str = "Supporting content.\n";
const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";

mod common;
use common::Stdio as Harness;

/// What these tests read off the shared harness.
impl Harness {
    /// A session offering `version` first.
    fn offering(version: &str) -> Self {
        let mut o = SessionOptions::stdio("demo");
        o.protocol_version = version.into();
        o.startup_timeout = Duration::from_secs(10);
        o.tool_timeout = Duration::from_secs(5);
        Self::new(o)
    }

    /// The requests sent, by method and params, in order.
    fn requests(&self) -> Vec<(String, Value)> {
        self.sent
            .iter()
            .filter_map(|m| match m {
                Message::Request { method, params, .. } => {
                    Some((method.clone(), params.clone().unwrap_or(Value::Null)))
                }
                _ => None,
            })
            .collect()
    }

    fn answer(&mut self, method: &str, result: Value) {
        let id = self
            .sent
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::Request { id, method: m, .. } if m == method => Some(id.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {method} sent"));
        self.say(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// A 2025 handshake with a server declaring `capabilities`, answered
    /// until ready.
    fn ready(&mut self, capabilities: Value) {
        self.drive_answering(&[
            (
                "initialize",
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "serverInfo": {"name": "scripted", "version": "1"}
                }),
            ),
            ("resources/list", json!({"resources": []})),
            ("resources/templates/list", json!({"resourceTemplates": []})),
        ]);
        assert_eq!(self.session.state(), SessionState::Ready);
    }

    /// Sends `request`, answers it with `result`, and returns what the
    /// session completed it with.
    fn round_trip(&mut self, request: &FeatureRequest, result: Value) -> Value {
        let call = self.session.request(self.now, request).expect("accepted");
        self.drain();
        self.answer(request.method(), result);
        self.completed(call)
    }

    fn completed(&self, call: CallId) -> Value {
        self.events
            .iter()
            .find_map(|e| match e {
                Event::RequestCompleted { call: c, result } if *c == call => {
                    Some(result.clone().expect("answered"))
                }
                _ => None,
            })
            .expect("completed")
    }
}

fn file(uri: &str, content: &str) -> Value {
    json!({"uri": uri, "digest": Sha256Digest::of(content.as_bytes()).to_string(), "size": content.len()})
}

fn entry() -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"},
        "resources": [file(SKILL_URI, SKILL_MD), file(FORMS_URI, FORMS)]
    })
}

fn skills_server() -> Value {
    json!({"resources": {"listChanged": false}, "extensions": {"io.modelcontextprotocol/skills": {}}})
}

#[test]
fn listing_skills_sends_only_skills_list_and_reads_no_file() {
    let mut h = Harness::offering(LATEST_PROTOCOL_VERSION);
    h.ready(skills_server());
    let ready = h
        .events
        .iter()
        .find_map(|e| match e {
            Event::Ready(ready) => Some(ready.capabilities.clone()),
            _ => None,
        })
        .expect("ready");
    assert!(ready.skills, "the extension is seen");
    let before = h.requests().len();

    let mut listing = SkillListing::default();
    let mut next = Some(SkillListing::first_request());
    let mut pages = [
        json!({"skills": [entry()], "nextCursor": "page-2"}),
        json!({"skills": []}),
    ]
    .into_iter();
    while let Some(request) = next {
        let page = h.round_trip(&request, pages.next().expect("a page"));
        next = listing.add_page(&page).expect("well formed");
    }
    assert_eq!(listing.skills.len(), 1);
    assert_eq!(listing.skills[0].name(), "pdf-processing");
    assert_eq!(
        h.requests()[before..],
        [
            ("skills/list".to_owned(), json!({})),
            ("skills/list".to_owned(), json!({"cursor": "page-2"})),
        ],
        "listing asks for the listing and nothing else"
    );
    assert!(
        !h.requests()
            .iter()
            .any(|(method, _)| method == "resources/read"),
        "no skill file is read on connect or listing"
    );
}

#[test]
fn loading_a_skill_reads_its_skill_md_once_and_no_other_file() {
    let mut h = Harness::offering(LATEST_PROTOCOL_VERSION);
    h.ready(skills_server());
    let page = h.round_trip(&SkillListing::first_request(), json!({"skills": [entry()]}));
    let mut listing = SkillListing::default();
    assert!(listing.add_page(&page).unwrap().is_none());
    let entry = &listing.skills[0];

    let before = h.requests().len();
    let read = entry.load_request().expect("loadable");
    let result = h.round_trip(
        &read,
        json!({"contents": [{"uri": SKILL_URI, "mimeType": "text/markdown", "text": SKILL_MD}]}),
    );
    let loaded = entry.verify_load(&result).expect("verified");
    assert_eq!(loaded.body(), "Skill body.\n");
    assert_eq!(
        h.requests()[before..],
        [("resources/read".to_owned(), json!({"uri": SKILL_URI}))]
    );

    // A tampered SKILL.md: the same single read, and a refusal.
    let result = h.round_trip(
        &read,
        json!({"contents": [{"uri": SKILL_URI, "text": SKILL_MD.replace("Skill body.", "Evil body!!")}]}),
    );
    assert!(matches!(
        entry.verify_load(&result),
        Err(SkillCheck::DigestMismatch { .. })
    ));
    assert!(
        !h.requests()
            .iter()
            .any(|(_, params)| params["uri"] == FORMS_URI),
        "a supporting file is read only when the host reads it"
    );
}

#[test]
fn a_server_without_the_extension_is_never_asked_for_skills() {
    let mut h = Harness::offering(LATEST_PROTOCOL_VERSION);
    h.ready(json!({"resources": {}, "extensions": {"com.example/other": {}}}));
    match h.session.request(h.now, &SkillListing::first_request()) {
        Err(e @ ApiMisuse::NotOffered { .. }) => assert_eq!(
            e.to_string(),
            "server `demo` does not offer io.modelcontextprotocol/skills"
        ),
        other => panic!("{other:?}"),
    }
    h.drain();
    assert!(
        !h.requests()
            .iter()
            .any(|(method, _)| method.starts_with("skills/"))
    );
}

#[test]
fn the_stateless_era_lists_skills_with_its_request_metadata() {
    let mut h = Harness::offering("2026-07-28");
    h.answer(
        "server/discover",
        json!({
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"extensions": {"io.modelcontextprotocol/skills": {}}},
            "serverInfo": {"name": "scripted", "version": "1"}
        }),
    );
    assert_eq!(h.session.state(), SessionState::Ready);
    let page = h.round_trip(
        &SkillListing::first_request(),
        json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skills": [entry()]}),
    );
    let mut listing = SkillListing::default();
    assert!(listing.add_page(&page).unwrap().is_none());
    assert_eq!(listing.skills.len(), 1);
    let (method, params) = h.requests().pop().expect("sent");
    assert_eq!(method, "skills/list");
    assert_eq!(
        params["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}
