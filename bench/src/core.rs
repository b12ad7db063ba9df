//! Core throughput: server messages per second through the sans-IO session
//! (`Session::handle_stdio_bytes`: framing, JSON-RPC parse, routing to the
//! pending call, the `CallCompleted` event, and the drain of every poll),
//! against `serde_json::from_slice::<Value>` of the same bytes alone.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rho_proto_core::session::{Event, Session, SessionOptions};
use rho_proto_core::wire::protocol::LATEST_PROTOCOL_VERSION;
use serde_json::{Value, json};

/// How the driver hands bytes to the session: the smol executor reads a
/// child's stdout 64 KiB at a time.
pub const READ_CHUNK: usize = 64 * 1024;

/// A session that finished its handshake and discovery against a scripted
/// server with one `echo` tool.
pub fn ready_session(max_line: usize) -> Session {
    let now = Instant::now();
    let mut options = SessionOptions::stdio("bench");
    options.protocol_version = LATEST_PROTOCOL_VERSION.into();
    options.max_line = max_line;
    let mut session = Session::new(options, now);
    while session.poll_transmit().is_some() {}
    session.handle_stdio_bytes(
        now,
        br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bench","version":"1.0.0"}}}
"#,
    );
    while session.poll_transmit().is_some() {}
    session.handle_stdio_bytes(
        now,
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","description":"Echoes back the input","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}}
"#,
    );
    while session.poll_transmit().is_some() {}
    let mut ready = false;
    while let Some(event) = session.poll_event() {
        ready |= matches!(event, Event::Ready(_));
    }
    assert!(ready, "scripted handshake did not make the session ready");
    session
}

/// A `tools/call` result line as server-everything's `echo` writes it.
pub fn small_response(id: u64) -> Vec<u8> {
    format!(
        r#"{{"result":{{"content":[{{"type":"text","text":"Echo: hello"}}]}},"jsonrpc":"2.0","id":{id}}}"#
    )
    .into_bytes()
}

/// A `tools/call` result line carrying `text_len` bytes of text (plain
/// ASCII, so no escaping), with the id last like server-everything's.
pub fn text_response(id: u64, text_len: usize) -> Vec<u8> {
    let text: String = "abcdefghijklmnopqrstuvwxyz0123456789"
        .chars()
        .cycle()
        .take(text_len)
        .collect();
    format!(r#"{{"result":{{"content":[{{"type":"text","text":"{text}"}}]}},"jsonrpc":"2.0","id":{id}}}"#)
        .into_bytes()
}

/// Rewrites the `"id":N` of a response line made by [`small_response`] or
/// [`text_response`] (both end with the id).
fn with_id(template: &[u8], id: u64) -> Vec<u8> {
    let at = template
        .windows(5)
        .rposition(|w| w == b"\"id\":")
        .expect("template has an id");
    let mut line = template[..at].to_vec();
    line.extend_from_slice(format!("\"id\":{id}}}").as_bytes());
    line
}

/// Feeds `template` (a response line, without newline) through a ready
/// session `count` times, `window` calls in flight at once, in chunks of
/// `chunk` bytes. Returns the time spent inside `handle_stdio_bytes` and
/// the drain of its outputs only (issuing the calls is not timed).
pub fn session_inbound(
    session: &mut Session,
    template: &[u8],
    count: usize,
    window: usize,
    chunk: usize,
) -> Duration {
    let now = Instant::now();
    let mut spent = Duration::ZERO;
    let mut done = 0;
    let mut completed = 0usize;
    while done < count {
        let batch = window.min(count - done);
        let mut lines = Vec::with_capacity(batch);
        for _ in 0..batch {
            let call = session
                .call_tool(now, "echo", json!({"message": "hello"}))
                .expect("session ready");
            let mut line = with_id(template, call.wire_id());
            line.push(b'\n');
            lines.push(line);
        }
        while session.poll_transmit().is_some() {}
        let start = Instant::now();
        for line in &lines {
            for piece in line.chunks(chunk) {
                session.handle_stdio_bytes(now, piece);
                while let Some(t) = session.poll_transmit() {
                    black_box(t);
                }
                while let Some(event) = session.poll_event() {
                    if let Event::CallCompleted { result, .. } = &event {
                        completed += usize::from(result.is_ok());
                    }
                    black_box(event);
                }
                black_box(session.poll_timeout());
            }
        }
        spent += start.elapsed();
        done += batch;
    }
    assert_eq!(completed, count, "every call completes");
    spent
}

/// The limit: `serde_json::from_slice::<Value>` of the same lines.
pub fn serde_only(template: &[u8], count: usize) -> Duration {
    let lines: Vec<Vec<u8>> = (0..count.min(64))
        .map(|i| with_id(template, i as u64 + 2))
        .collect();
    let start = Instant::now();
    for i in 0..count {
        let v: Value =
            serde_json::from_slice(black_box(&lines[i % lines.len()])).expect("valid JSON");
        black_box(v);
    }
    start.elapsed()
}

/// One whole `tools/call` inside the core: the command, its transmit, the
/// answer and the event, `count` times, one at a time.
pub fn session_round_trip(session: &mut Session, template: &[u8], count: usize) -> Duration {
    let now = Instant::now();
    let start = Instant::now();
    for _ in 0..count {
        let call = session
            .call_tool(now, "echo", json!({"message": "hello"}))
            .expect("session ready");
        while let Some(t) = session.poll_transmit() {
            black_box(t);
        }
        let mut line = with_id(template, call.wire_id());
        line.push(b'\n');
        session.handle_stdio_bytes(now, &line);
        while let Some(t) = session.poll_transmit() {
            black_box(t);
        }
        while let Some(event) = session.poll_event() {
            black_box(event);
        }
        black_box(session.poll_timeout());
    }
    start.elapsed()
}

/// The limit of a whole call: serialize the request, parse the answer.
pub fn serde_round_trip(template: &[u8], count: usize) -> Duration {
    let start = Instant::now();
    for i in 0..count {
        let request = serde_json::to_vec(&json!({
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hello"}},
        }))
        .expect("serialize");
        black_box(request);
        let line = with_id(template, i as u64);
        let v: Value = serde_json::from_slice(black_box(&line)).expect("valid JSON");
        black_box(v);
    }
    start.elapsed()
}

/// Feeds one arbitrary captured response line (e.g. the 16 MiB result) to a
/// fresh ready session whose next call id matches, in read-sized chunks.
/// The line's id is rewritten to the call's.
pub fn session_one_line(line: &[u8], max_line: usize) -> (Duration, bool) {
    let mut session = ready_session(max_line);
    let now = Instant::now();
    let call = session
        .call_tool(now, "read_text_file", json!({"path": "/x"}))
        .expect("ready");
    while session.poll_transmit().is_some() {}
    let mut line = rewrite_id(line, call.wire_id());
    line.push(b'\n');
    let start = Instant::now();
    let mut ok = false;
    for piece in line.chunks(READ_CHUNK) {
        session.handle_stdio_bytes(now, piece);
        while let Some(t) = session.poll_transmit() {
            black_box(t);
        }
        while let Some(event) = session.poll_event() {
            if let Event::CallCompleted { result, .. } = &event {
                ok = result.is_ok();
            }
            black_box(event);
        }
    }
    (start.elapsed(), ok)
}

/// Replaces the top-level `"id":N` of a response line (the last one in
/// the line for servers that write `id` last, else the first).
pub fn rewrite_id(line: &[u8], id: u64) -> Vec<u8> {
    let v: Value = serde_json::from_slice(line).expect("captured line is JSON");
    let old = v
        .get("id")
        .and_then(Value::as_u64)
        .expect("captured line has an id");
    let needle = format!("\"id\":{old}");
    let text = std::str::from_utf8(line).expect("utf-8");
    // The id is written either first or last by every server we capture.
    let at = if text.ends_with(&format!("{needle}}}")) {
        text.rfind(&needle)
    } else {
        text.find(&needle)
    }
    .expect("id present");
    let mut out = Vec::with_capacity(line.len());
    out.extend_from_slice(&line[..at]);
    out.extend_from_slice(format!("\"id\":{id}").as_bytes());
    out.extend_from_slice(&line[at + needle.len()..]);
    out
}

/// Used by `bench core-profile` (for callgrind): just the session side.
pub fn profile(kind: &str, count: usize) {
    let (template, window, chunk) = match kind {
        "large" => (text_response(0, 1 << 20), 1, READ_CHUNK),
        "roundtrip" => {
            let mut session = ready_session(rho_proto_core::wire::framing::DEFAULT_MAX_LINE);
            let spent = session_round_trip(&mut session, &small_response(0), count);
            eprintln!("{count} round trips in {spent:?}");
            return;
        }
        "serde" | "serde-large" => {
            let template = if kind == "serde" {
                small_response(0)
            } else {
                text_response(0, 1 << 20)
            };
            let spent = serde_only(&template, count);
            eprintln!("{count} serde parses in {spent:?}");
            return;
        }
        _ => (small_response(0), 16, READ_CHUNK),
    };
    let mut session = ready_session(64 << 20);
    let spent = session_inbound(&mut session, &template, count, window, chunk);
    eprintln!("{count} messages in {spent:?}");
}
