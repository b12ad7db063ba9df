//! A stdio session against a peer that floods or answers badly, with a fake
//! clock: rho's own log stays quiet under a flood, and an answer rho cannot
//! read fails its request at once, with the reason.

// The fake clock needs one real `Instant` as its origin.
#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rho_proto_core::session::{Event, Session, SessionOptions, SessionState};
use serde_json::{Value, json};

/// Collects every tracing event's level and message.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl Capture {
    fn lines(&self) -> Vec<(tracing::Level, String)> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if let Ok(mut lines) = self.0.lock() {
            lines.push((*event.metadata().level(), message.0));
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

struct Peer {
    now: Instant,
    session: Session,
    events: Vec<Event>,
}

impl Peer {
    fn new() -> Self {
        let mut options = SessionOptions::stdio("demo");
        options.startup_timeout = Duration::from_secs(10);
        options.tool_timeout = Duration::from_secs(120);
        let now = Instant::now();
        let mut peer = Self {
            now,
            session: Session::new(options, now),
            events: Vec::new(),
        };
        peer.drain();
        peer
    }

    fn drain(&mut self) {
        while self.session.poll_transmit().is_some() {}
        while let Some(e) = self.session.poll_event() {
            self.events.push(e);
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.session.handle_stdio_bytes(self.now, bytes);
        self.drain();
    }

    fn says(&mut self, line: Value) {
        let mut bytes = serde_json::to_vec(&line).expect("json");
        bytes.push(b'\n');
        self.bytes(&bytes);
    }

    fn ready(&mut self) {
        self.says(json!({"jsonrpc": "2.0", "id": 0, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "logging": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }}));
        self.says(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "t", "inputSchema": {"type": "object"}}
        ]}}));
        assert_eq!(self.session.state(), SessionState::Ready);
    }
}

#[test]
fn a_flood_of_junk_lines_logs_the_first_few_then_one_count() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::new();
        peer.ready();
        let mut junk = Vec::new();
        for i in 0..1000 {
            junk.extend_from_slice(format!("junk line {i}\n").as_bytes());
        }
        peer.bytes(&junk);
        peer.session.close(peer.now);
        peer.drain();
    });
    let warnings: Vec<String> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level == tracing::Level::WARN)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(warnings.len(), 6, "five lines and one count: {warnings:#?}");
    assert!(warnings[0].contains("junk line 0"), "{}", warnings[0]);
    assert!(
        warnings[5].contains("995 more lines from server `demo` that were not JSON-RPC"),
        "{}",
        warnings[5]
    );
}

#[test]
fn a_flood_of_server_logs_is_rate_limited_per_window() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::new();
        peer.ready();
        let mut flood = Vec::new();
        for i in 0..5000 {
            let line = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": format!("log {i}")}});
            flood.extend_from_slice(line.to_string().as_bytes());
            flood.push(b'\n');
        }
        peer.bytes(&flood);
        // A later window starts with the count of the last one.
        peer.now += Duration::from_secs(11);
        peer.says(json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "after the flood"}}));
    });
    let infos: Vec<String> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level == tracing::Level::INFO)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(infos.len(), 100 + 1 + 1, "{:#?}", &infos[95..]);
    assert_eq!(infos[0], "log 0");
    assert_eq!(infos[99], "log 99");
    assert!(
        infos[100].contains("4,900 more log messages from server `demo`"),
        "{}",
        infos[100]
    );
    assert_eq!(infos[101], "after the flood");
}

#[test]
fn junk_spread_over_windows_is_all_logged_and_never_summarised() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let mut peer = Peer::new();
        peer.ready();
        for i in 0..20 {
            peer.bytes(format!("banner {i}\n").as_bytes());
            peer.now += Duration::from_secs(5);
        }
        peer.session.close(peer.now);
        peer.drain();
    });
    let warnings: Vec<String> = capture
        .lines()
        .into_iter()
        .filter(|(level, _)| *level == tracing::Level::WARN)
        .map(|(_, m)| m)
        .collect();
    assert_eq!(warnings.len(), 20, "{warnings:#?}");
    assert!(warnings.iter().all(|w| !w.contains("more lines")));
}
