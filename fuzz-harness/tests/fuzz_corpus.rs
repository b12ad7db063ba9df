//! The fuzz corpora, replayed in the normal test run: every committed seed
//! (`fuzz/corpus/<target>/`) and every crash cargo-fuzz left behind
//! (`fuzz/artifacts/<target>/`, when present) goes through every fuzz check,
//! so a crash found once stays fixed. The structured seeds are written from
//! the scripts at the end of this file; see `fuzz/README.md`.

// The fake clock needs one real `Instant` as its origin, and the corpus is
// read from disk.
#![allow(clippy::disallowed_methods)]

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::Instant;

use rho_fuzz_harness::encode::{Encode, to_bytes};
use rho_fuzz_harness::http::{
    Body, Exchange, HttpAction, HttpInput, SseEvent, check_http_session,
    transcript as http_transcript,
};
use rho_fuzz_harness::script::{
    CallResultTemplate, Capabilities, CatalogEntry, FieldTemplate, FormTemplate, InputTemplate,
    Json, Leaf, Reply, SamplingMessage, SamplingTemplate, ServerId, ServerMessage as S, Text,
    ToolTemplate,
};
use rho_fuzz_harness::session::{
    Action, Arguments, ElicitAnswer, FeatureTemplate, Ref, SamplingReply, SessionInput, Setup,
    Wait, check_session, transcript as session_transcript,
};
use rho_fuzz_harness::{
    Chunked, check_apps, check_config, check_jsonrpc, check_lines, check_naming, check_oauth,
    check_sse, decode,
};

/// The fuzz targets, in `fuzz/Cargo.toml` order.
const TARGETS: [&str; 9] = [
    "jsonrpc",
    "lines",
    "sse",
    "config",
    "naming",
    "session",
    "http_session",
    "oauth",
    "apps",
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// Runs the check of `target` on `data`.
fn check(target: &str, data: &[u8], origin: Instant) {
    match target {
        "jsonrpc" => check_jsonrpc(data),
        "lines" => check_lines(data),
        "sse" => check_sse(data),
        "config" => check_config(data),
        "naming" => check_naming(data),
        "session" => check_session(data, origin),
        "http_session" => check_http_session(data, origin),
        "oauth" => check_oauth(data, origin),
        "apps" => check_apps(data),
        other => panic!("no check for {other}"),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(non-string panic)".to_owned())
}

#[test]
fn every_corpus_file_and_crash_passes_every_check() {
    let origin = Instant::now();
    let root = fuzz_dir();
    let mut inputs = Vec::new();
    for target in TARGETS {
        let seeds = files(&root.join("corpus").join(target));
        assert!(!seeds.is_empty(), "fuzz/corpus/{target}/ has no seeds");
        inputs.extend(seeds);
        inputs.extend(files(&root.join("artifacts").join(target)));
    }
    let mut failures = Vec::new();
    for path in &inputs {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Any bytes are a valid input for every target, and a seed of one
        // is an interesting input for the others.
        for target in TARGETS {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| check(target, &data, origin))) {
                failures.push(format!(
                    "{target} check on {}: {}",
                    path.display(),
                    panic_message(&*payload)
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn structured_seeds_are_the_scripts_in_this_file() {
    let root = fuzz_dir().join("corpus");
    for (path, bytes) in structured_seeds() {
        let committed = std::fs::read(root.join(&path)).unwrap_or_default();
        assert!(
            committed == bytes,
            "fuzz/corpus/{path} is not its script's encoding; regenerate with \
             `cargo test -p rho-fuzz-harness --test fuzz_corpus -- --ignored write_structured_seeds`"
        );
    }
}

/// Writes the structured seeds. Run it after changing a script below or
/// the input types.
#[test]
#[ignore = "writes fuzz/corpus; run by hand"]
fn write_structured_seeds() {
    let root = fuzz_dir().join("corpus");
    for (path, bytes) in structured_seeds() {
        let path = root.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Prints what every `session` and `http_session` input (seeds and
/// crashes) does, step by step: for reading a seed or triaging a crash.
#[test]
#[ignore = "prints transcripts; run by hand with --nocapture"]
fn transcripts() {
    let origin = Instant::now();
    let root = fuzz_dir();
    for target in ["session", "http_session"] {
        for dir in ["corpus", "artifacts"] {
            for path in files(&root.join(dir).join(target)) {
                let data = std::fs::read(&path).unwrap_or_default();
                println!("=== {}", path.display());
                let lines = match target {
                    "session" => decode::<SessionInput>(&data)
                        .map(|input| session_transcript(&input, origin)),
                    _ => decode::<HttpInput>(&data).map(|input| http_transcript(&input, origin)),
                };
                for line in lines.unwrap_or_default() {
                    println!("{line}");
                }
            }
        }
    }
}

/// Bytes from a small deterministic generator (xorshift).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// `decode(encode(decode(bytes))) == decode(bytes)`: the hand-written
/// encoders match what `arbitrary` derives.
fn round_trips<T>(data: &[u8])
where
    T: for<'a> arbitrary::Arbitrary<'a> + Encode + PartialEq + std::fmt::Debug,
{
    let Some(value) = decode::<T>(data) else {
        return;
    };
    let bytes = to_bytes(&value);
    assert_eq!(decode::<T>(&bytes).as_ref(), Some(&value), "{data:?}");
}

#[test]
fn seed_encoding_round_trips_through_arbitrary() {
    for seed in 0..300 {
        for len in [0, 1, 7, 64, 512, 4096] {
            let data = noise(seed * 7919 + len as u64, len);
            round_trips::<SessionInput>(&data);
            round_trips::<HttpInput>(&data);
            let chunked = decode::<Chunked<'_>>(&data).expect("any bytes decode");
            assert_eq!(decode::<Chunked<'_>>(&to_bytes(&chunked)), Some(chunked));
        }
    }
}

// ---------------------------------------------------------------------------
// The structured seeds.
// ---------------------------------------------------------------------------

fn structured_seeds() -> Vec<(String, Vec<u8>)> {
    let mut seeds = Vec::new();
    for (name, chunks, stream) in line_streams() {
        let input = Chunked {
            chunks,
            stream: stream.as_bytes(),
        };
        seeds.push((format!("lines/{name}"), to_bytes(&input)));
    }
    for (name, chunks, stream) in sse_streams() {
        let input = Chunked {
            chunks,
            stream: stream.as_bytes(),
        };
        seeds.push((format!("sse/{name}"), to_bytes(&input)));
    }
    for (name, input) in sessions() {
        seeds.push((format!("session/{name}"), to_bytes(&input)));
    }
    for (name, input) in http_sessions() {
        seeds.push((format!("http_session/{name}"), to_bytes(&input)));
    }
    seeds
}

fn line_streams() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        (
            "three-messages-whole",
            vec![],
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}\n{\"a\":1}\r\n\n  \n[]\n",
        ),
        (
            "split-inside-crlf-and-utf8",
            vec![3, 9, 1, 1, 2],
            "{\"b\":\"\u{e9}\"}\r\n{\"c\":\"\u{1F600}\"}\r\nlast line without newline",
        ),
        (
            "overlong-line-then-short",
            vec![40, 40, 40],
            "ok1\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nok2\n",
        ),
        // Found by the fuzzer (a wrong check): only one CR is stripped.
        ("double-cr-before-lf", vec![4], "abc\r\r\nxyz\r\n"),
    ]
}

fn sse_streams() -> Vec<(&'static str, Vec<u8>, String)> {
    vec![
        (
            "everything-priming-and-message",
            vec![],
            "id: c371da55-fb85-4fa8-ae7d-9be9fba0247a\ndata: \n\n\
             event: message\nid: 6331a5dd-ed90-479a-8424-f172f78c3bc5\n\
             data: {\"method\":\"notifications/progress\",\"params\":{\"progress\":1,\"total\":2,\"progressToken\":3},\"jsonrpc\":\"2.0\"}\n\n"
                .to_owned(),
        ),
        (
            "bom-cr-retry-comment-multiline",
            vec![1, 2, 5, 1, 7],
            "\u{FEFF}: keep-alive\r\nretry: 1500\r\nevent: greet\rdata: h\u{e9}llo\r\ndata:w\u{f6}rld\n\nid\ndata: last\n\ndata: cut off"
                .to_owned(),
        ),
        (
            "oversized-event-then-ok",
            vec![30, 200, 30],
            format!(
                "data: ok1\n\nid: big\ndata: {}\ndata: more\n\ndata: ok2\n\n",
                "0123456789".repeat(30)
            ),
        ),
    ]
}

fn t(s: &str) -> Text {
    Text::Bytes(s.as_bytes().to_vec())
}

fn say(messages: Vec<S>) -> Action {
    Action::Server {
        messages,
        batch: false,
        chunks: vec![],
    }
}

fn initialize(tools: Option<bool>, logging: bool) -> S {
    S::Initialize {
        id: Reply::Latest,
        version: 0,
        capabilities: Capabilities {
            tools,
            logging,
            prompts: false,
            resources: false,
            completions: false,
            resources_subscribe: false,
        },
        instructions: true,
    }
}

fn page(names: &[&str], cursor: Option<u8>) -> S {
    S::ToolsPage {
        id: Reply::Latest,
        tools: names
            .iter()
            .map(|name| ToolTemplate {
                name: t(name),
                output_schema: (*name == "get-sum").then_some(0),
                malformed: false,
            })
            .collect(),
        cursor,
    }
}

fn call(tool: &str) -> Action {
    Action::CallTool {
        tool: t(tool),
        arguments: Arguments::Object(vec![(t("message"), Leaf::Text(t("hi")))]),
    }
}

fn result(text: &str) -> S {
    S::CallResult {
        id: Reply::Latest,
        result: CallResultTemplate {
            content: 0,
            text: t(text),
            structured: None,
            is_error: false,
        },
    }
}

fn progress(n: u16) -> S {
    S::Progress {
        token: Reply::Latest,
        progress: n,
        total: Some(2),
        message: None,
    }
}

fn ready() -> Vec<Action> {
    vec![
        say(vec![initialize(Some(true), false)]),
        say(vec![page(&["echo", "get-env"], Some(1))]),
        say(vec![page(&["get-sum"], None)]),
    ]
}

fn form() -> FormTemplate {
    FormTemplate {
        mode: 0,
        message: true,
        object_type: true,
        fields: vec![
            FieldTemplate::Text { default: true },
            FieldTemplate::Confirm {
                default: Some(true),
            },
            FieldTemplate::Choice {
                titled: true,
                multi: false,
                default: Some(1),
            },
            FieldTemplate::Number {
                integer: true,
                default: Some(24),
            },
        ],
        required: vec![0],
    }
}

/// A URL-mode request for an https URL, with its `elicitationId` (see the
/// script's `elicitation`: no field picks the https URL).
fn url_request() -> FormTemplate {
    FormTemplate {
        mode: 2,
        message: true,
        object_type: true,
        fields: Vec::new(),
        required: Vec::new(),
    }
}

/// Every capability: tools (with `listChanged`), logging, prompts,
/// resources and completions.
fn everything() -> Capabilities {
    Capabilities {
        tools: Some(true),
        logging: true,
        prompts: true,
        resources: true,
        completions: true,
        resources_subscribe: false,
    }
}

/// Tools without list changes, and resources with `subscribe`: no
/// list-change stream, so every `subscriptions/listen` is a resource one.
fn subscribable() -> Capabilities {
    Capabilities {
        tools: Some(false),
        logging: false,
        prompts: false,
        resources: true,
        completions: false,
        resources_subscribe: true,
    }
}

fn subscribe(uri: &str) -> FeatureTemplate {
    FeatureTemplate::SubscribeResource { uri: t(uri) }
}

/// `{}` for the latest request.
fn empty_result() -> S {
    S::Result {
        id: Reply::Latest,
        result: Json::Object(vec![]),
    }
}

/// A page of catalog list `kind` (0 prompts, 1 resources, 2 templates).
fn catalog(kind: u8, names: &[&str], cursor: Option<u8>, ttl_ms: Option<u16>) -> S {
    S::CatalogPage {
        id: Reply::Latest,
        kind,
        entries: names
            .iter()
            .map(|name| CatalogEntry {
                name: t(name),
                detailed: true,
                malformed: *name == "bad",
            })
            .collect(),
        cursor,
        ttl_ms,
        public: false,
    }
}

/// The prompts, resources (two pages, one entry malformed) and templates
/// of a server that offers them all.
fn catalog_pages(ttl_ms: Option<u16>) -> Vec<Action> {
    vec![
        say(vec![catalog(0, &["weather"], None, ttl_ms)]),
        say(vec![catalog(1, &["a.txt", "bad"], Some(2), ttl_ms)]),
        say(vec![catalog(1, &["b.bin"], None, ttl_ms)]),
        say(vec![catalog(2, &["files"], None, ttl_ms)]),
    ]
}

fn get_prompt() -> FeatureTemplate {
    FeatureTemplate::GetPrompt {
        name: t("weather"),
        arguments: vec![(t("city"), t("Paris"))],
    }
}

fn read_resource() -> FeatureTemplate {
    FeatureTemplate::ReadResource {
        uri: t("file:///work/a.txt"),
    }
}

fn complete() -> FeatureTemplate {
    FeatureTemplate::Complete {
        prompt: true,
        name: t("weather"),
        argument: t("unit"),
        value: t("c"),
        context: vec![(t("city"), t("Paris"))],
    }
}

/// The answer to a `prompts/get` (0), `resources/read` (1) or
/// `completion/complete` (2).
fn feature_result(kind: u8, text: &str) -> S {
    S::FeatureResult {
        id: Reply::Latest,
        kind,
        text: t(text),
        malformed: false,
    }
}

/// A multi round-trip `InputRequiredResult` for `method` (0 tools/call,
/// 1 prompts/get, 2 resources/read, 3 completion/complete).
fn input_required(method: u8, requests: Vec<InputTemplate>, state: Option<&str>) -> S {
    S::InputRequired {
        id: Reply::Latest,
        method,
        requests,
        state: state.map(t),
    }
}

fn sessions() -> Vec<(&'static str, SessionInput)> {
    let with = |setup: Setup, actions: Vec<Action>| SessionInput { setup, actions };
    vec![
        (
            "handshake-discovery-call-progress",
            with(
                Setup::default(),
                [
                    ready(),
                    vec![
                        call("echo"),
                        say(vec![progress(1), progress(2)]),
                        say(vec![result("Echo: hi")]),
                        Action::Wait(Wait::NextDeadline),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "elicitation-answered-with-defaults",
            with(
                Setup::default(),
                [
                    ready(),
                    vec![
                        call("trigger-elicitation-request"),
                        say(vec![S::Elicitation {
                            id: ServerId::Number(0),
                            form: form(),
                        }]),
                        Action::AnswerElicitation {
                            question: Ref::Known(0),
                            answer: ElicitAnswer::Defaults,
                        },
                        say(vec![result("accepted")]),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "url-elicitation-opened-then-a-punycode-one-dismissed",
            with(
                Setup::default(),
                [
                    ready(),
                    vec![
                        call("connect-account"),
                        say(vec![S::Elicitation {
                            id: ServerId::Number(0),
                            form: url_request(),
                        }]),
                        Action::AnswerElicitation {
                            question: Ref::Known(0),
                            answer: ElicitAnswer::Defaults,
                        },
                        say(vec![S::Elicitation {
                            id: ServerId::Number(1),
                            form: FormTemplate {
                                fields: vec![FieldTemplate::Text { default: false }],
                                ..url_request()
                            },
                        }]),
                        Action::AnswerElicitation {
                            question: Ref::Known(1),
                            answer: ElicitAnswer::Dismissed,
                        },
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "sampling-completed-then-cancelled-call",
            with(
                Setup::default(),
                [
                    ready(),
                    vec![
                        call("trigger-sampling-request"),
                        say(vec![S::Sampling {
                            id: ServerId::Text(1),
                            request: SamplingTemplate {
                                messages: vec![SamplingMessage::User(t("hi"))],
                                system_prompt: Some(t("You are a helpful test server.")),
                                max_tokens: Some(10),
                                include_context: false,
                            },
                        }]),
                        Action::AnswerSampling {
                            question: Ref::Known(0),
                            answer: SamplingReply::Completed(t("hello")),
                        },
                        Action::CancelCall(Ref::Known(0)),
                        say(vec![result("late")]),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "timeout-ping-list-changed",
            with(
                Setup {
                    log_level: true,
                    roots: true,
                    ping: true,
                    progress_extends: true,
                    short_lines: false,
                    stateless: false,
                },
                vec![
                    say(vec![initialize(Some(true), true)]),
                    say(vec![page(&["echo"], None)]),
                    say(vec![S::RootsList(ServerId::Number(0))]),
                    call("echo"),
                    Action::Wait(Wait::Seconds(6)),
                    say(vec![S::ToolsListChanged]),
                    say(vec![page(&["echo", "add"], None)]),
                    Action::Wait(Wait::NextDeadline),
                    say(vec![S::Result {
                        id: Reply::Latest,
                        result: rho_fuzz_harness::script::Json::Object(vec![]),
                    }]),
                ],
            ),
        ),
        (
            "garbage-chunks-batch-eof",
            with(
                Setup {
                    short_lines: true,
                    ..Setup::default()
                },
                vec![
                    Action::Garbage(b"Starting default (STDIO) server...\n".to_vec()),
                    Action::Server {
                        messages: vec![initialize(None, false)],
                        batch: false,
                        chunks: vec![1, 5, 20],
                    },
                    Action::Server {
                        messages: vec![S::Ping(ServerId::Number(0)), progress(1)],
                        batch: true,
                        chunks: vec![],
                    },
                    Action::Garbage(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}".to_vec()),
                    Action::TransportClosed,
                ],
            ),
        ),
        (
            // Found by the fuzzer: a batch element that closed the session
            // was followed by a PeerMisbehaved event after Closed.
            "batch-closes-then-bad-element",
            with(
                Setup::default(),
                vec![Action::Server {
                    messages: vec![
                        S::Initialize {
                            id: Reply::Latest,
                            version: 4,
                            capabilities: Capabilities {
                                tools: None,
                                logging: false,
                                prompts: false,
                                resources: false,
                                completions: false,
                                resources_subscribe: false,
                            },
                            instructions: false,
                        },
                        S::Raw(rho_fuzz_harness::script::Json::Null),
                    ],
                    batch: true,
                    chunks: vec![],
                }],
            ),
        ),
        (
            "startup-timeout",
            with(
                Setup::default(),
                vec![
                    say(vec![initialize(Some(false), false)]),
                    Action::Wait(Wait::JustBeforeDeadline),
                    Action::Wait(Wait::NextDeadline),
                ],
            ),
        ),
        (
            "stateless-discover-call-version-retry-stale-relist-input-required",
            with(
                stateless(),
                vec![
                    say(vec![discover(0, Some(0))]),
                    say(vec![page(&["echo"], None)]),
                    call("echo"),
                    say(vec![S::UnsupportedVersion {
                        id: Reply::Latest,
                        versions: 0,
                    }]),
                    say(vec![result("after the retry")]),
                    call("echo"),
                    say(vec![page(&["echo", "new"], None)]),
                    say(vec![S::CallResult {
                        id: Reply::Latest,
                        result: CallResultTemplate {
                            content: 4,
                            text: t("which colour?"),
                            structured: None,
                            is_error: false,
                        },
                    }]),
                ],
            ),
        ),
        (
            "stateless-probe-ignored-then-handshake",
            with(
                stateless(),
                [
                    vec![Action::Wait(Wait::NextDeadline)],
                    ready(),
                    vec![call("echo"), say(vec![result("legacy")])],
                ]
                .concat(),
            ),
        ),
        (
            "stateless-probe-not-found-then-handshake",
            with(
                stateless(),
                [
                    // (the probe is the first request; `initialize` goes
                    // only once it was answered).
                    vec![say(vec![S::Error {
                        id: Some(Reply::Sent(0)),
                        code: -32601,
                        message: t("Method not found"),
                    }])],
                    ready(),
                ]
                .concat(),
            ),
        ),
        (
            "catalog-listed-prompt-read-completion-relisted",
            with(
                Setup {
                    log_level: true,
                    ..Setup::default()
                },
                [
                    vec![
                        say(vec![S::Initialize {
                            id: Reply::Latest,
                            version: 0,
                            capabilities: everything(),
                            instructions: false,
                        }]),
                        say(vec![page(&["echo"], None)]),
                    ],
                    catalog_pages(None),
                    vec![
                        Action::Request(get_prompt()),
                        say(vec![feature_result(0, "It is sunny in Paris")]),
                        Action::Request(read_resource()),
                        say(vec![feature_result(1, "abc")]),
                        Action::Request(complete()),
                        say(vec![feature_result(2, "celsius")]),
                        say(vec![S::CatalogListChanged { resources: false }]),
                        say(vec![catalog(0, &["weather", "news"], None, None)]),
                        say(vec![S::CatalogListChanged { resources: true }]),
                        Action::Request(read_resource()),
                        Action::CancelCall(Ref::Known(3)),
                        Action::Wait(Wait::NextDeadline),
                        Action::Request(complete()),
                        Action::Wait(Wait::NextDeadline),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "catalog-not-offered-request-refused",
            with(
                Setup::default(),
                [
                    ready(),
                    vec![
                        Action::Request(get_prompt()),
                        Action::Request(read_resource()),
                        say(vec![S::CatalogListChanged { resources: true }]),
                        call("echo"),
                        say(vec![result("ok")]),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "stateless-catalog-listen-mrtr-prompt-and-call",
            with(
                Setup {
                    roots: true,
                    stateless: true,
                    ..Setup::default()
                },
                [
                    vec![
                        say(vec![S::Discover {
                            id: Reply::Latest,
                            versions: 0,
                            capabilities: everything(),
                            ttl_ms: Some(60_000),
                        }]),
                        say(vec![page(&["echo"], None)]),
                    ],
                    catalog_pages(Some(1000)),
                    vec![
                        // Ready: subscriptions/listen goes out.
                        say(vec![S::Subscription {
                            listen: Reply::Latest,
                            event: 0,
                        }]),
                        say(vec![page(&["echo"], None)]),
                    ],
                    catalog_pages(Some(1000)),
                    vec![
                        say(vec![S::Subscription {
                            listen: Reply::Latest,
                            event: 2,
                        }]),
                        say(vec![catalog(0, &["weather", "news"], None, None)]),
                        Action::Request(get_prompt()),
                        say(vec![input_required(
                            1,
                            vec![InputTemplate::Elicitation(form())],
                            Some("st\u{e9}te-1"),
                        )]),
                        Action::AnswerElicitation {
                            question: Ref::Known(0),
                            answer: ElicitAnswer::Defaults,
                        },
                        say(vec![feature_result(0, "It is sunny")]),
                        call("echo"),
                        say(vec![input_required(
                            0,
                            vec![
                                InputTemplate::Roots,
                                InputTemplate::Sampling(SamplingTemplate {
                                    messages: vec![SamplingMessage::User(t("hi"))],
                                    system_prompt: None,
                                    max_tokens: Some(10),
                                    include_context: false,
                                }),
                                InputTemplate::Other(t("tasks/get")),
                            ],
                            None,
                        )]),
                        Action::AnswerSampling {
                            question: Ref::Known(1),
                            answer: SamplingReply::Completed(t("hello")),
                        },
                        say(vec![result("done")]),
                        Action::Wait(Wait::Seconds(2)),
                        Action::Request(read_resource()),
                        say(vec![input_required(2, vec![], Some("again"))]),
                        say(vec![feature_result(1, "abc")]),
                        Action::Request(complete()),
                        say(vec![S::UnsupportedVersion {
                            id: Reply::Latest,
                            versions: 0,
                        }]),
                        say(vec![feature_result(2, "celsius")]),
                        // The server ends the subscription: it is opened
                        // once more, then given up on.
                        // (the listen request is the eighth request sent).
                        say(vec![S::Result {
                            id: Reply::Sent(7),
                            result: Json::Object(vec![]),
                        }]),
                        say(vec![S::Error {
                            id: Some(Reply::Latest),
                            code: -32601,
                            message: t("Method not found"),
                        }]),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            // The probe's wait runs out: `initialize` goes (never beside a
            // pending probe), and a discovery result that comes before it
            // is answered still makes the session stateless; the
            // handshake's answer is then dropped.
            "probe-wait-ran-out-late-discovery-wins-over-initialize",
            with(
                Setup {
                    log_level: true,
                    stateless: true,
                    ..Setup::default()
                },
                vec![
                    Action::Wait(Wait::NextDeadline),
                    say(vec![discover(0, None)]),
                    say(vec![S::Initialize {
                        id: Reply::Latest,
                        version: 2,
                        capabilities: everything(),
                        instructions: true,
                    }]),
                    say(vec![page(&["echo"], None)]),
                ],
            ),
        ),
        (
            // The probe's wait runs out and the handshake is answered
            // first: logging/setLevel follows it, and the late discovery
            // result is dropped quietly.
            "probe-wait-ran-out-initialize-answered-late-discovery-dropped",
            with(
                Setup {
                    log_level: true,
                    stateless: true,
                    ..Setup::default()
                },
                vec![
                    Action::Wait(Wait::NextDeadline),
                    say(vec![S::Initialize {
                        id: Reply::Latest,
                        version: 0,
                        capabilities: everything(),
                        instructions: false,
                    }]),
                    say(vec![discover(0, None)]),
                    say(vec![page(&["echo"], None)]),
                ],
            ),
        ),
        (
            "stateless-probe-version-retry-then-handshake-log-level",
            with(
                Setup {
                    log_level: true,
                    stateless: true,
                    ..Setup::default()
                },
                vec![
                    say(vec![S::UnsupportedVersion {
                        id: Reply::Sent(0),
                        versions: 1,
                    }]),
                    say(vec![S::Error {
                        id: Some(Reply::Latest),
                        code: -32601,
                        message: t("Method not found"),
                    }]),
                    say(vec![S::Initialize {
                        id: Reply::Latest,
                        version: 0,
                        capabilities: everything(),
                        instructions: false,
                    }]),
                    say(vec![page(&["echo"], None)]),
                    say(vec![S::Error {
                        id: Some(Reply::Latest),
                        code: -32603,
                        message: t("no prompts today"),
                    }]),
                    say(vec![catalog(1, &[], None, None)]),
                    Action::Wait(Wait::NextDeadline),
                ],
            ),
        ),
        (
            "resource-subscribe-update-unsubscribe-2025",
            with(
                Setup::default(),
                vec![
                    say(vec![S::Initialize {
                        id: Reply::Latest,
                        version: 0,
                        capabilities: subscribable(),
                        instructions: false,
                    }]),
                    say(vec![page(&["echo"], None)]),
                    say(vec![catalog(1, &["a"], None, None)]),
                    say(vec![catalog(2, &[], None, None)]),
                    Action::Request(subscribe("a://x")),
                    say(vec![empty_result()]),
                    say(vec![
                        S::ResourceUpdated {
                            uri: t("a://x"),
                            listen: None,
                        },
                        S::ResourceUpdated {
                            uri: t("a://other"),
                            listen: None,
                        },
                    ]),
                    Action::Request(subscribe("a://x")),
                    Action::Request(FeatureTemplate::UnsubscribeResource { uri: t("a://x") }),
                    say(vec![empty_result()]),
                    say(vec![S::ResourceUpdated {
                        uri: t("a://x"),
                        listen: None,
                    }]),
                ],
            ),
        ),
        (
            // Closing with a subscription held: rho ends it with an
            // unsubscribe of its own, which no request of the host's made.
            "resource-subscription-held-at-close-unsubscribed-2025",
            with(
                Setup::default(),
                vec![
                    say(vec![S::Initialize {
                        id: Reply::Latest,
                        version: 0,
                        capabilities: subscribable(),
                        instructions: false,
                    }]),
                    say(vec![page(&["echo"], None)]),
                    say(vec![catalog(1, &["a"], None, None)]),
                    say(vec![catalog(2, &[], None, None)]),
                    Action::Request(subscribe("a://x")),
                    say(vec![empty_result()]),
                ],
            ),
        ),
        (
            "resource-subscriptions-listen-2026",
            with(
                stateless(),
                after_subscribed_2026(vec![
                    say(vec![S::ResourceUpdated {
                        uri: t("a://x"),
                        listen: Some(Reply::Latest),
                    }]),
                    // A second URI the server leaves out of its
                    // acknowledgement: not agreed, the first one kept.
                    Action::Request(subscribe("a://y")),
                    say(vec![S::ResourceAcknowledged {
                        listen: Reply::Latest,
                        uris: vec![t("a://x")],
                    }]),
                    Action::Request(FeatureTemplate::UnsubscribeResource { uri: t("a://x") }),
                    Action::Request(subscribe("a://z")),
                    Action::Wait(Wait::NextDeadline),
                ]),
            ),
        ),
        (
            // The server refuses the resource stream once it acknowledged
            // it: not opened again, and the host hears its watch ended.
            "resource-stream-refused-after-ack-2026",
            with(
                stateless(),
                after_subscribed_2026(vec![
                    say(vec![S::Error {
                        id: Some(Reply::Latest),
                        code: -32603,
                        message: t("Subscription limit reached"),
                    }]),
                    say(vec![S::ResourceUpdated {
                        uri: t("a://x"),
                        listen: Some(Reply::Latest),
                    }]),
                ]),
            ),
        ),
        (
            // The server ends the acknowledged stream; the one rho opens
            // again is refused: the host hears its watch ended.
            "resource-stream-reopen-refused-2026",
            with(
                stateless(),
                after_subscribed_2026(vec![
                    say(vec![empty_result()]),
                    say(vec![S::Error {
                        id: Some(Reply::Latest),
                        code: -32603,
                        message: t("Subscription limit reached"),
                    }]),
                ]),
            ),
        ),
    ]
}

/// [`subscribed_2026`], then `actions`.
fn after_subscribed_2026(actions: Vec<Action>) -> Vec<Action> {
    [subscribed_2026(), actions].concat()
}

/// A 2026 server that offers subscriptions, ready, and `a://x` subscribed
/// to (its stream acknowledged with it).
fn subscribed_2026() -> Vec<Action> {
    vec![
        say(vec![S::Discover {
            id: Reply::Latest,
            versions: 0,
            capabilities: subscribable(),
            ttl_ms: Some(60_000),
        }]),
        say(vec![page(&["echo"], None)]),
        say(vec![catalog(1, &["a"], None, Some(1000))]),
        say(vec![catalog(2, &[], None, Some(1000))]),
        Action::Request(subscribe("a://x")),
        say(vec![S::ResourceAcknowledged {
            listen: Reply::Latest,
            uris: vec![t("a://x")],
        }]),
    ]
}

/// A session offered 2026-07-28: it probes first.
fn stateless() -> Setup {
    Setup {
        stateless: true,
        ..Setup::default()
    }
}

/// A `server/discover` result: `versions` as the script numbers them.
fn discover(versions: u8, ttl_ms: Option<u16>) -> S {
    S::Discover {
        id: Reply::Latest,
        versions,
        capabilities: Capabilities {
            tools: Some(false),
            logging: true,
            prompts: false,
            resources: false,
            completions: false,
            resources_subscribe: false,
        },
        ttl_ms,
    }
}

fn answer(body: Body, session_id: Option<u8>) -> HttpAction {
    HttpAction::Answer {
        exchange: Exchange::Latest,
        body,
        session_id,
    }
}

fn exchange_answer(exchange: Exchange, body: Body) -> HttpAction {
    HttpAction::Answer {
        exchange,
        body,
        session_id: None,
    }
}

fn sse(messages: Vec<S>) -> Body {
    Body::Sse(
        messages
            .into_iter()
            .enumerate()
            .map(|(n, message)| SseEvent {
                id: u8::try_from(n).ok(),
                retry: None,
                message: Some(message),
            })
            .collect(),
    )
}

fn accepted(exchange: Exchange) -> Vec<HttpAction> {
    vec![
        HttpAction::Head {
            exchange: exchange.clone(),
            status: 1,
            content: 3,
            session_id: None,
        },
        HttpAction::End(exchange),
    ]
}

/// Handshake over HTTP: `initialize` answered as JSON with a session id,
/// `tools/list` as SSE, then `initialized` accepted and the GET stream
/// refused with 405.
fn http_ready() -> Vec<HttpAction> {
    [
        vec![answer(Body::Json(initialize(Some(true), false)), Some(0))],
        vec![answer(sse(vec![page(&["echo"], None)]), None)],
        accepted(Exchange::Latest),
        vec![
            HttpAction::Head {
                exchange: Exchange::Latest,
                status: 6,
                content: 3,
                session_id: None,
            },
            HttpAction::End(Exchange::Latest),
        ],
    ]
    .concat()
}

/// A call answered 404 (the server forgot the session), then the fresh
/// `initialize` answered with `init` under a new session id.
fn call_in_a_forgotten_session(init: S) -> Vec<HttpAction> {
    vec![
        HttpAction::CallTool {
            tool: t("echo"),
            arguments: Arguments::Null,
        },
        HttpAction::Head {
            exchange: Exchange::Latest,
            status: 5,
            content: 2,
            session_id: None,
        },
        HttpAction::End(Exchange::Latest),
        answer(Body::Json(init), Some(1)),
    ]
}

fn http_sessions() -> Vec<(&'static str, HttpInput)> {
    let with = |actions: Vec<HttpAction>| HttpInput {
        setup: Setup::default(),
        actions,
    };
    vec![
        (
            "stateless-discover-list-call-over-sse",
            HttpInput {
                setup: stateless(),
                actions: vec![
                    answer(Body::Json(discover(1, Some(60_000))), None),
                    answer(Body::Json(page(&["echo"], None)), None),
                    HttpAction::CallTool {
                        tool: t("echo"),
                        arguments: Arguments::Object(vec![(t("message"), Leaf::Text(t("hi")))]),
                    },
                    answer(sse(vec![progress(1), result("Echo: hi")]), None),
                    HttpAction::Close,
                ],
            },
        ),
        (
            "handshake-call-over-sse-close",
            with(
                [
                    http_ready(),
                    vec![
                        HttpAction::CallTool {
                            tool: t("echo"),
                            arguments: Arguments::Null,
                        },
                        answer(sse(vec![progress(1), result("Echo: hi")]), None),
                        HttpAction::Close,
                        answer(Body::Raw(Vec::new()), None),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "broken-stream-resumed",
            with(
                [
                    http_ready(),
                    vec![
                        HttpAction::CallTool {
                            tool: t("echo"),
                            arguments: Arguments::Null,
                        },
                        HttpAction::Head {
                            exchange: Exchange::Latest,
                            status: 0,
                            content: 1,
                            session_id: None,
                        },
                        HttpAction::Body {
                            exchange: Exchange::Latest,
                            body: Body::Sse(vec![SseEvent {
                                id: Some(9),
                                retry: Some(100),
                                message: None,
                            }]),
                            chunks: vec![4],
                        },
                        HttpAction::Failed(Exchange::Latest),
                        HttpAction::Wait(Wait::NextDeadline),
                        answer(sse(vec![result("resumed")]), None),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            // Found by the fuzzer (a wrong check): a head starts the body
            // afresh, so bytes before it are not part of the answer.
            "body-before-head",
            with(vec![
                HttpAction::Body {
                    exchange: Exchange::Latest,
                    body: Body::Json(initialize(None, false)),
                    chunks: vec![],
                },
                answer(
                    Body::Json(S::Elicitation {
                        id: ServerId::Number(0),
                        form: form(),
                    }),
                    None,
                ),
            ]),
        ),
        (
            "stateless-catalog-listen-prompt-mrtr-over-sse",
            HttpInput {
                setup: stateless(),
                actions: vec![
                    answer(
                        Body::Json(S::Discover {
                            id: Reply::Latest,
                            versions: 0,
                            capabilities: everything(),
                            ttl_ms: None,
                        }),
                        None,
                    ),
                    // tools/list and prompts/list are out.
                    exchange_answer(Exchange::Open(0), Body::Json(page(&["echo"], None))),
                    exchange_answer(
                        Exchange::Latest,
                        sse(vec![catalog(0, &["weather"], None, Some(5000))]),
                    ),
                    exchange_answer(
                        Exchange::Latest,
                        Body::Json(catalog(1, &["a.txt"], None, None)),
                    ),
                    exchange_answer(
                        Exchange::Latest,
                        Body::Json(catalog(2, &["files"], None, None)),
                    ),
                    // Ready: subscriptions/listen is out, its stream open.
                    HttpAction::Head {
                        exchange: Exchange::Latest,
                        status: 0,
                        content: 1,
                        session_id: None,
                    },
                    HttpAction::Body {
                        exchange: Exchange::Latest,
                        body: Body::Sse(vec![SseEvent {
                            id: None,
                            retry: None,
                            message: Some(S::Subscription {
                                listen: Reply::Latest,
                                event: 0,
                            }),
                        }]),
                        chunks: vec![],
                    },
                    HttpAction::Request(get_prompt()),
                    exchange_answer(
                        Exchange::Latest,
                        Body::Json(input_required(
                            1,
                            vec![
                                InputTemplate::Elicitation(form()),
                                InputTemplate::Elicitation(url_request()),
                            ],
                            Some("state"),
                        )),
                    ),
                    HttpAction::AnswerElicitation {
                        question: Ref::Known(0),
                        answer: ElicitAnswer::Defaults,
                    },
                    HttpAction::AnswerElicitation {
                        question: Ref::Known(1),
                        answer: ElicitAnswer::Defaults,
                    },
                    exchange_answer(Exchange::Latest, sse(vec![feature_result(0, "sunny")])),
                    HttpAction::Request(complete()),
                    exchange_answer(Exchange::Latest, Body::Json(feature_result(2, "celsius"))),
                    HttpAction::Request(read_resource()),
                    HttpAction::Failed(Exchange::Latest),
                    // The listen stream breaks: opened once more.
                    HttpAction::Failed(Exchange::Open(0)),
                    HttpAction::Close,
                ],
            },
        ),
        (
            "handshake-catalog-read-session-expired",
            with(
                [
                    vec![answer(
                        Body::Json(S::Initialize {
                            id: Reply::Latest,
                            version: 0,
                            capabilities: Capabilities {
                                tools: Some(true),
                                logging: false,
                                prompts: true,
                                resources: true,
                                completions: false,
                                resources_subscribe: false,
                            },
                            instructions: false,
                        }),
                        Some(0),
                    )],
                    accepted(Exchange::Open(0)),
                    vec![
                        exchange_answer(Exchange::Open(0), sse(vec![page(&["echo"], None)])),
                        exchange_answer(
                            Exchange::Open(0),
                            Body::Json(catalog(0, &["weather"], None, None)),
                        ),
                        exchange_answer(
                            Exchange::Latest,
                            Body::Json(catalog(1, &["a.txt"], None, None)),
                        ),
                        exchange_answer(
                            Exchange::Latest,
                            Body::Json(catalog(2, &["files"], None, None)),
                        ),
                        HttpAction::Request(complete()),
                        HttpAction::Request(read_resource()),
                        HttpAction::Head {
                            exchange: Exchange::Latest,
                            status: 5,
                            content: 2,
                            session_id: None,
                        },
                        HttpAction::End(Exchange::Latest),
                        answer(Body::Json(initialize(Some(true), false)), Some(1)),
                        exchange_answer(Exchange::Open(0), Body::Json(feature_result(1, "abc"))),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            // A subscription held when the server forgets the session: the
            // fresh session is subscribed again, of rho's own.
            "subscription-renewed-after-session-expired",
            with(
                [
                    vec![answer(
                        Body::Json(S::Initialize {
                            id: Reply::Latest,
                            version: 0,
                            capabilities: subscribable(),
                            instructions: false,
                        }),
                        Some(0),
                    )],
                    accepted(Exchange::Open(0)),
                    vec![
                        exchange_answer(Exchange::Open(0), sse(vec![page(&["echo"], None)])),
                        exchange_answer(
                            Exchange::Latest,
                            Body::Json(catalog(1, &["a.txt"], None, None)),
                        ),
                        exchange_answer(Exchange::Latest, Body::Json(catalog(2, &[], None, None))),
                        HttpAction::Request(subscribe("a://x")),
                        answer(Body::Json(empty_result()), None),
                    ],
                    call_in_a_forgotten_session(S::Initialize {
                        id: Reply::Latest,
                        version: 0,
                        capabilities: subscribable(),
                        instructions: false,
                    }),
                    accepted(Exchange::Open(0)),
                    // The call sent again, then the renewal.
                    vec![
                        answer(Body::Json(result("again")), None),
                        answer(Body::Json(empty_result()), None),
                    ],
                ]
                .concat(),
            ),
        ),
        (
            "session-expired-reinitialized",
            with(
                [
                    http_ready(),
                    call_in_a_forgotten_session(initialize(Some(true), false)),
                    accepted(Exchange::Open(0)),
                    vec![HttpAction::Answer {
                        exchange: Exchange::Open(0),
                        body: Body::Json(result("again")),
                        session_id: None,
                    }],
                ]
                .concat(),
            ),
        ),
    ]
}
