//! Transcripts keep configured secrets out and still replay.

// A recording needs one real origin; replay only compares instants.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use rho_proto_core::config;
use rho_proto_core::connection::{Connection, HostContext};
use rho_proto_core::transcript::{ReplayError, replay};

#[test]
fn configured_header_values_never_reach_a_transcript() {
    let config = config::parse(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { X-Tenant = \"tenant-secret\" }\nheaders_from_env = { Authorization = \"TOKEN\" }\n",
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let ambient = vec![("TOKEN".to_owned(), "Bearer env-secret".to_owned())];
    let host = HostContext {
        ambient: &ambient,
        ..HostContext::default()
    };
    let now = Instant::now();
    let mut conn = Connection::new_recorded(server, &host, now).expect("connects");
    while conn.poll_output().is_some() {}
    let text = conn.take_transcript().join("\n");
    assert!(text.contains("\"Authorization\",\"<redacted>\""), "{text}");
    assert!(!text.contains("env-secret"), "{text}");
    assert!(!text.contains("tenant-secret"), "{text}");
    // And the redacted transcript still replays.
    let summary = replay(&text, now).expect("replays");
    assert_eq!(summary.sessions, 1);
}

#[test]
fn text_that_is_not_a_transcript_is_refused_as_such_before_replaying() {
    for text in ["", "\n\n", "hello\n", "{\"a\":1}\n", "[1,2]\n"] {
        match replay(text, Instant::now()) {
            Err(ReplayError::NotATranscript(reason)) => assert!(!reason.is_empty()),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn a_damaged_line_after_a_good_header_is_malformed_naming_its_line() {
    let config = config::parse(
        "[mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"x\"\n",
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let now = Instant::now();
    let mut conn =
        Connection::new_recorded(server, &HostContext::default(), now).expect("connects");
    while conn.poll_output().is_some() {}
    let mut text = conn.take_transcript().join("\n");
    text.push_str("\nnot json at all\n");
    let lines = text.lines().count();
    match replay(&text, now) {
        Err(error @ ReplayError::Malformed { .. }) => {
            let ReplayError::Malformed { line, .. } = &error else {
                unreachable!()
            };
            assert_eq!(*line, lines, "{error}");
            assert!(error.to_string().contains("not a JSON line"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn secrets_a_server_echoes_are_redacted_in_inputs_and_events_and_still_replay() {
    let config = config::parse(
        "[mcp.servers.local]\ntransport = \"stdio\"\ncommand = \"x\"\nenv_from_env = { API_TOKEN = \"TOKEN\" }\n",
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let ambient = vec![("TOKEN".to_owned(), "stdio-secret-123".to_owned())];
    let host = HostContext {
        ambient: &ambient,
        ..HostContext::default()
    };
    let now = Instant::now();
    let mut conn = Connection::new_recorded(server, &host, now).expect("connects");
    while conn.poll_output().is_some() {}
    // The server refuses the handshake quoting the token, then exits
    // saying it again.
    conn.handle_stdio_bytes(
        now,
        b"{\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-1,\"message\":\"bad token stdio-secret-123\"}}\n",
    );
    while conn.poll_output().is_some() {}
    while conn.poll_event().is_some() {}
    conn.handle_stdio_closed(now, Some("exit 1; token stdio-secret-123".to_owned()));
    while conn.poll_output().is_some() {}
    while conn.poll_event().is_some() {}
    let _ = conn.poll_timeout();
    let text = conn.take_transcript().join("\n");
    assert!(!text.contains("stdio-secret-123"), "{text}");
    assert!(text.contains("bad token <redacted>"), "{text}");
    assert!(text.contains("\"poll\":\"event\""), "{text}");
    let summary = replay(&text, now).expect("the redacted transcript replays");
    assert!(summary.polls > 3, "{summary:?}");
}

/// A stdio connection to a server that never answers, recorded, driven
/// to its startup timeout (its `server/discover` probe and the early
/// `initialize` unanswered); returns the transcript.
fn startup_timeout_transcript(now: Instant) -> String {
    let config = config::parse(
        "[mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"x\"\nstartup_timeout_secs = 5\n",
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let mut conn =
        Connection::new_recorded(server, &HostContext::default(), now).expect("connects");
    while conn.poll_output().is_some() {}
    while conn.poll_event().is_some() {}
    let mut lines = conn.take_transcript();
    let due = conn.poll_timeout().expect("the startup budget");
    assert_eq!(conn.poll_timeout(), Some(due), "reading it twice agrees");
    assert!(
        conn.take_transcript().is_empty(),
        "poll_timeout writes nothing"
    );
    // Silence never decides the era: the probe waits out the startup
    // budget, and that is the one timeout.
    conn.handle_timeout(due);
    while conn.poll_output().is_some() {}
    while conn.poll_event().is_some() {}
    assert_eq!(conn.poll_timeout(), None, "closed");
    lines.extend(conn.take_transcript());
    lines.join("\n")
}

#[test]
fn a_timeout_input_records_the_deadline_and_timer_that_were_due() {
    let now = Instant::now();
    let text = startup_timeout_transcript(now);
    let line = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json line"))
        .find(|v| v["in"] == "timeout" && v["timer"] == "startup")
        .expect("a timeout input");
    assert_eq!(line["due"], serde_json::json!(5_000_000));
    assert_eq!(line["timer"], "startup");
    assert!(!text.contains("\"poll\":\"timeout\""), "{text}");
}

#[test]
fn events_are_recorded_as_structured_json() {
    let now = Instant::now();
    let text = startup_timeout_transcript(now);
    let closed = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json line"))
        .find(|v| v["poll"] == "event" && !v["got"].is_null())
        .expect("an event");
    let reason = &closed["got"]["closed"]["startup_timeout"];
    assert_eq!(
        reason["waiting_for"],
        "waiting for the server/discover or initialize response"
    );
    assert_eq!(reason["budget"]["secs"], 5);
}

#[test]
fn replay_refuses_a_timeout_that_was_due_at_another_time() {
    let now = Instant::now();
    let text = startup_timeout_transcript(now);
    replay(&text, now).expect("the untouched transcript replays");
    let tampered = text.replace("\"due\":5000000", "\"due\":4000000");
    assert_ne!(tampered, text);
    match replay(&tampered, now) {
        Err(ReplayError::Diverged(d)) => {
            assert_eq!(d.what, "poll_timeout");
            assert!(d.expected.contains("4000000"), "{d}");
            assert!(d.got.contains("5000000"), "{d}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_transcript_of_another_version_is_refused_with_what_to_do() {
    let now = Instant::now();
    let text = startup_timeout_transcript(now);
    let old = text.replacen("\"rho_transcript\":2", "\"rho_transcript\":1", 1);
    assert_ne!(old, text);
    match replay(&old, now) {
        Err(ReplayError::Malformed {
            line: 1, reason, ..
        }) => {
            assert!(reason.contains("version 1"), "{reason}");
            assert!(reason.contains("record it again"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A recorded HTTP session whose every request (the 2026 probe, then the
/// 2025 `initialize`) fails with `failure`.
fn every_request_failed(failure: rho_proto_core::http::HttpFailure, now: Instant) -> String {
    use rho_proto_core::connection::{HttpInput, Output};
    use rho_proto_core::http::HttpOutput;

    let config = config::parse(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n",
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let mut conn =
        Connection::new_recorded(server, &HostContext::default(), now).expect("connects");
    for _ in 0..4 {
        let mut sent = Vec::new();
        while let Some(output) = conn.poll_output() {
            if let Output::Http(HttpOutput::Send(req)) = output {
                sent.push(req.exchange);
            }
        }
        while conn.poll_event().is_some() {}
        for exchange in sent {
            conn.handle_http(now, exchange, HttpInput::Failed(failure.clone()));
        }
    }
    conn.take_transcript().join("\n")
}

#[test]
fn an_http_failures_kind_is_recorded_only_when_known_and_replays() {
    use rho_proto_core::http::{HttpFailure, HttpFailureKind};

    let now = Instant::now();
    let untrusted = every_request_failed(
        HttpFailure::new(HttpFailureKind::UnknownIssuer, "TLS: unknown issuer"),
        now,
    );
    assert!(
        untrusted.contains("\"kind\":\"unknown_issuer\""),
        "{untrusted}"
    );
    // The failure's hint is in the recorded outputs: a replay that lost
    // the kind would diverge from them.
    assert!(untrusted.contains("SSL_CERT_FILE"), "{untrusted}");
    replay(&untrusted, now).expect("replays");
    let plain = every_request_failed(HttpFailure::other("connection refused"), now);
    assert!(plain.contains("\"in\":\"http_failed\""), "{plain}");
    assert!(!plain.contains("\"kind\""), "{plain}");
    replay(&plain, now).expect("replays");
}

#[test]
fn a_reauthorization_replays_and_its_new_header_never_reaches_the_transcript() {
    use rho_proto_core::connection::{HttpInput, Output};
    use rho_proto_core::http::{HttpOutput, HttpRequest};
    use rho_proto_core::session::{Event, Question};

    let config = config::parse(
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.remote.oauth]\n",
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let host = HostContext {
        can_reauthorize: true,
        ..HostContext::default()
    };
    let now = Instant::now();
    let mut conn = Connection::new_recorded(server, &host, now).expect("connects");
    // Drains everything, returning the requests sent and the events.
    let drain = |conn: &mut Connection| {
        let mut sent: Vec<HttpRequest> = Vec::new();
        let mut events = Vec::new();
        while let Some(output) = conn.poll_output() {
            if let Output::Http(HttpOutput::Send(req)) = output {
                sent.push(req);
            }
        }
        while let Some(event) = conn.poll_event() {
            events.push(event);
        }
        (sent, events)
    };
    let respond = |conn: &mut Connection,
                   req: &HttpRequest,
                   status: u16,
                   headers: &[(&str, &str)],
                   body: &str| {
        let headers = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        conn.handle_http(now, req.exchange, HttpInput::Head { status, headers });
        if !body.is_empty() {
            conn.handle_http(now, req.exchange, HttpInput::Body(body.as_bytes().to_vec()));
        }
        conn.handle_http(now, req.exchange, HttpInput::End);
    };
    let json = ("content-type", "application/json");
    // A 2025 server: the probe meets a 400 that is no 2026 error.
    let (sent, _) = drain(&mut conn);
    respond(&mut conn, &sent[0], 400, &[], "Bad Request: no session");
    let (sent, _) = drain(&mut conn);
    respond(
        &mut conn,
        &sent[0],
        200,
        &[json],
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#,
    );
    let (sent, _) = drain(&mut conn);
    respond(&mut conn, &sent[0], 202, &[], "");
    let (sent, _) = drain(&mut conn);
    respond(&mut conn, &sent[0], 405, &[], "");
    let (sent, _) = drain(&mut conn);
    let list = sent.last().expect("tools/list").clone();
    respond(
        &mut conn,
        &list,
        401,
        &[
            json,
            (
                "WWW-Authenticate",
                r#"Bearer error="invalid_token", scope="mcp""#,
            ),
        ],
        "{}",
    );
    let (_, events) = drain(&mut conn);
    let question = events
        .iter()
        .find_map(|e| match e {
            Event::Question {
                question,
                kind: Question::Authorization { .. },
                ..
            } => Some(*question),
            _ => None,
        })
        .expect("asked");
    conn.answer_authorization(now, question, Ok("Bearer fresh-token-secret".to_owned()));
    let (sent, _) = drain(&mut conn);
    let again = sent.last().expect("resent").clone();
    assert!(
        again
            .headers
            .iter()
            .any(|(k, v)| k == "Authorization" && v == "Bearer fresh-token-secret")
    );
    respond(
        &mut conn,
        &again,
        200,
        &[json],
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"tools":[]}}}}"#,
            serde_json::from_slice::<serde_json::Value>(&again.body).expect("json")["id"]
        ),
    );
    let (_, events) = drain(&mut conn);
    assert!(
        events.iter().any(|e| matches!(e, Event::Ready(_))),
        "{events:?}"
    );
    let text = conn.take_transcript().join("\n");
    assert!(text.contains("answer_authorization"), "{text}");
    assert!(!text.contains("fresh-token-secret"), "{text}");
    assert!(text.contains("\"Authorization\",\"<redacted>\""), "{text}");
    let summary = replay(&text, now).expect("replays");
    assert_eq!(summary.sessions, 1);
}

/// A recorded connection to stdio server `s` (with `extra` config lines),
/// driven as a 2025 server that declared `capabilities` and lists `tools`
/// would: it refuses the 2026 probe and answers the rest with `{}`, until
/// the session is ready.
fn ready_2025(
    extra: &str,
    host: &HostContext<'_>,
    now: Instant,
    capabilities: serde_json::Value,
    tools: serde_json::Value,
) -> Connection {
    use rho_proto_core::connection::Output;
    use rho_proto_core::session::Event;
    use serde_json::{Value, json};

    let config = config::parse(
        &format!("[mcp.servers.s]\ntransport = \"stdio\"\ncommand = \"x\"\n{extra}"),
        "t.toml",
    )
    .expect("parses");
    let server = config.servers[0].config.as_ref().expect("valid");
    let mut conn = Connection::new_recorded(server, host, now).expect("connects");

    let mut ready = false;
    for _ in 0..20 {
        while let Some(output) = conn.poll_output() {
            let Output::Write(bytes) = output else {
                panic!("stdio writes bytes")
            };
            for line in String::from_utf8(bytes).expect("utf-8").lines() {
                let message: Value = serde_json::from_str(line).expect("json");
                let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str())
                else {
                    continue;
                };
                let answer = match method {
                    "server/discover" => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
                    }
                    "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": capabilities,
                        "serverInfo": {"name": "s", "version": "1"}
                    }}),
                    "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}),
                    _ => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                };
                conn.handle_stdio_bytes(now, format!("{answer}\n").as_bytes());
            }
        }
        while let Some(event) = conn.poll_event() {
            ready |= matches!(event, Event::Ready(_));
        }
        if ready {
            return conn;
        }
    }
    panic!("the scripted server did not make the session ready");
}

/// A 2025 server with one tool, `slow`.
fn slow_tool() -> (serde_json::Value, serde_json::Value) {
    (
        serde_json::json!({"tools": {}}),
        serde_json::json!([{"name": "slow", "inputSchema": {"type": "object"}}]),
    )
}

/// A call with a budget of its own (`CallOptions::timeout`) is recorded
/// with it (`budget_ms`) and replays: its timeout comes due when it did,
/// not at the server's `tool_timeout`, which replay would refuse.
#[test]
fn a_calls_own_budget_is_recorded_and_replays() {
    use rho_proto_core::session::{CallError, Event};
    use serde_json::json;
    use std::time::Duration;

    let now = Instant::now();
    let (capabilities, tools) = slow_tool();
    let mut conn = ready_2025(
        "tool_timeout_secs = 60\n",
        &HostContext::default(),
        now,
        capabilities,
        tools,
    );
    let budget = Duration::from_secs(2);
    let call = conn
        .call_tool(now, "slow", json!({}), Some(budget))
        .expect("ready");
    while conn.poll_output().is_some() {}
    let due = conn.poll_timeout().expect("the call's deadline");
    assert_eq!(due - now, budget, "the call's own budget, not 60 s");
    conn.handle_timeout(due);
    while conn.poll_output().is_some() {}
    let mut timed_out = false;
    while let Some(event) = conn.poll_event() {
        timed_out |= matches!(
            event,
            Event::CallCompleted { call: c, result: Err(CallError::Timeout { .. }) } if c == call
        );
    }
    assert!(timed_out, "the call timed out at its budget");
    let text = conn.take_transcript().join("\n");
    assert!(text.contains("\"budget_ms\":2000"), "{text}");
    replay(&text, now).expect("the transcript replays");
    // Without the recorded budget the replayed call would wait 60 s, and
    // replay says where it went another way.
    let stripped = text.replace(",\"budget_ms\":2000", "");
    assert_ne!(stripped, text);
    assert!(matches!(
        replay(&stripped, now),
        Err(ReplayError::Diverged(_))
    ));
}

#[test]
fn a_url_question_and_its_answer_are_recorded_and_replay() {
    use rho_proto_core::features::elicitation::UrlAnswer;
    use rho_proto_core::session::{Event, Question};
    use serde_json::json;

    let host = HostContext {
        can_elicit: true,
        can_open_urls: true,
        ..HostContext::default()
    };
    let now = Instant::now();
    let (capabilities, tools) = slow_tool();
    let mut conn = ready_2025("", &host, now, capabilities, tools);
    conn.call_tool(now, "slow", json!({}), None).expect("ready");
    while conn.poll_output().is_some() {}
    let ask = json!({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": {
        "mode": "url", "message": "Connect", "url": "https://a.example/c", "elicitationId": "e"
    }});
    conn.handle_stdio_bytes(now, format!("{ask}\n").as_bytes());
    let mut question = None;
    while let Some(event) = conn.poll_event() {
        if let Event::Question {
            question: q,
            kind: Question::Url(_),
            ..
        } = event
        {
            question = Some(q);
        }
    }
    let question = question.expect("a URL question");
    conn.answer_url(now, question, UrlAnswer::Opened);
    while conn.poll_output().is_some() {}
    let text = conn.take_transcript().join("\n");
    assert!(text.contains("\"elicitation_url\":true"), "{text}");
    assert!(text.contains("\"answer_url\""), "{text}");
    assert!(text.contains("\"opened\""), "{text}");
    replay(&text, now).expect("the transcript replays");
    // A run that had not declared URL mode would have refused the
    // request instead of asking: replay says where it went another way.
    let undeclared = text.replace(",\"elicitation_url\":true", "");
    assert_ne!(undeclared, text);
    assert!(matches!(
        replay(&undeclared, now),
        Err(ReplayError::Diverged(_))
    ));
}

/// A call that asked to run as a task (`CallOptions::as_task`) of a tool
/// whose `taskSupport` is `optional` is recorded so (`"task":"offered"`)
/// and replays asking the same; without it, replay sends a plain call and
/// says the session went another way.
#[test]
fn a_call_asked_as_a_task_is_recorded_and_replays() {
    use rho_proto_core::session::TaskAugmentation;
    use serde_json::json;

    let now = Instant::now();
    let mut conn = ready_2025(
        "",
        &HostContext::default(),
        now,
        json!({"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}),
        json!([{"name": "maybe", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "optional"}}]),
    );
    conn.call_tool_with(now, "maybe", json!({}), None, TaskAugmentation::WhenOffered)
        .expect("ready");
    let mut sent = String::new();
    while let Some(output) = conn.poll_output() {
        if let rho_proto_core::connection::Output::Write(bytes) = output {
            sent.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    assert!(
        sent.contains("\"task\":{"),
        "the call went as a task: {sent}"
    );
    let text = conn.take_transcript().join("\n");
    assert!(text.contains("\"task\":\"offered\""), "{text}");
    replay(&text, now).expect("the transcript replays");
    let stripped = text.replace(",\"task\":\"offered\"", "");
    assert_ne!(stripped, text);
    assert!(matches!(
        replay(&stripped, now),
        Err(ReplayError::Diverged(_))
    ));
}
