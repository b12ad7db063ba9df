//! Transcripts keep configured secrets out and still replay.

// A recording needs one real origin; replay only compares instants.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use rho_proto_core::config;
use rho_proto_core::connection::{Connection, HostContext};
use rho_proto_core::transcript::replay;

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
