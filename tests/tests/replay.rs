//! Every recorded session in `tests/transcripts/` replays byte for byte
//! through a fresh core, with no server, process, socket or network
//! (re-record them with `scripts/record-transcripts`).

// Replay compares instants only with each other; one real `Instant` is
// the origin the recorded offsets are added to.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::time::Instant;

use rho_proto_core::transcript::{ReplayError, replay};

fn transcripts() -> Vec<PathBuf> {
    let dir = rho_tests::tests_dir().join("transcripts");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/transcripts exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_recorded_session_replays_identically() {
    let files = transcripts();
    assert!(
        files.len() >= 6,
        "expected at least 6 transcripts, found {files:?}"
    );
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read transcript");
        let summary = replay(&text, Instant::now())
            .unwrap_or_else(|d| panic!("{} diverged: {d}", file.display()));
        assert!(
            summary.polls > 0 && summary.inputs > 0,
            "{}: {summary:?}",
            file.display()
        );
    }
}

#[test]
fn the_transcripts_cover_the_promised_situations() {
    let all: String = transcripts()
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read transcript"))
        .collect();
    for (what, needle) in [
        ("a handshake", "\"got\":{\"ready\":"),
        ("progress", "\"got\":{\"progress\":"),
        ("a cancellation", "{\"cancelled\":"),
        ("a timeout", "{\"timeout\":"),
        ("a deadline that fired", "\"in\":\"timeout\""),
        ("a server crash", "\"in\":\"stdio_closed\""),
        ("a session expiry", "No valid session ID"),
        ("Streamable HTTP", "\"in\":\"http_head\""),
    ] {
        assert!(
            all.contains(needle),
            "no transcript shows {what} ({needle})"
        );
    }
}

#[test]
fn a_changed_output_is_reported_at_its_line_with_context() {
    let file = transcripts()
        .into_iter()
        .find(|f| f.ends_with("stdio-progress.jsonl"))
        .expect("stdio-progress.jsonl");
    let text = std::fs::read_to_string(file).expect("read transcript");
    // Tamper with the first recorded write: the request rho sent.
    let tampered = text.replacen("\\\"initialize\\\"", "\\\"initialise\\\"", 1);
    assert_ne!(
        tampered, text,
        "the transcript records the initialize request"
    );
    let divergence = match replay(&tampered, Instant::now()) {
        Err(ReplayError::Diverged(divergence)) => divergence,
        other => panic!("must diverge, got {other:?}"),
    };
    assert!(divergence.line > 1, "{divergence}");
    assert_eq!(divergence.what, "poll_output", "{divergence}");
    assert!(divergence.expected.contains("initialise"), "{divergence}");
    assert!(divergence.got.contains("initialize"), "{divergence}");
    assert!(!divergence.context.is_empty(), "{divergence}");
    // The message labels the transcript's value as recorded and the core's
    // as replayed, not the other way round.
    let message = divergence.to_string();
    let recorded = message
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("recorded: "))
        .unwrap_or_else(|| panic!("no recorded line: {message}"));
    let replayed = message
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("replayed: "))
        .unwrap_or_else(|| panic!("no replayed line: {message}"));
    assert!(recorded.contains("initialise"), "{message}");
    assert!(replayed.contains("initialize"), "{message}");
}

#[test]
fn one_changed_byte_in_a_server_message_fails_replay_at_that_step() {
    let file = transcripts()
        .into_iter()
        .find(|f| f.ends_with("stdio-progress.jsonl"))
        .expect("stdio-progress.jsonl");
    let text = std::fs::read_to_string(file).expect("read transcript");
    // One byte of the server's own initialize answer, as it arrived on stdout.
    let needle = "mcp-servers/everything";
    let at = text
        .lines()
        .position(|l| l.contains("\"in\":\"stdio\"") && l.contains(needle))
        .expect("the server's initialize answer is recorded");
    let tampered: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == at {
                l.replacen("mcp-servers/everything", "mcp-servers/everythinG", 1)
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let divergence = match replay(&tampered, Instant::now()) {
        Err(ReplayError::Diverged(divergence)) => divergence,
        other => panic!("must diverge, got {other:?}"),
    };
    assert!(divergence.line > at + 1, "{divergence}");
    assert!(divergence.what.starts_with("poll_"), "{divergence}");
    assert!(divergence.got.contains("everythinG"), "{divergence}");
    assert!(
        divergence
            .to_string()
            .contains(&format!("transcript line {}", divergence.line))
    );
}
