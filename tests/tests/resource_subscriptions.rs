//! Resource subscriptions against real servers, both eras, both executors,
//! through `rho_host::Host` (and once through `AsyncHost`):
//!
//! - 2025: server-everything over stdio and Streamable HTTP
//!   (`resources/subscribe`; it sends
//!   `notifications/resources/updated` for each subscribed URI once when
//!   its `toggle-subscriber-updates` tool is called, then every 5 s), and
//!   `fixtures/watched.js` with `WATCH_ERA=2025` (the TypeScript SDK 2.x on
//!   its plain stdio transport), which refuses URIs it does not hold.
//! - 2026-07-28: `fixtures/watched.js` over stdio and Streamable HTTP, the
//!   SDK's own `subscriptions/listen` with `resourceSubscriptions`.
//!
//! A watched server killed mid-session (its process group, from outside)
//! is started again and subscribed anew in both eras: the host hears
//! `Renewed`, then the new process's changes; when it is not started again,
//! or its new process refuses the subscription, the host hears that the
//! watch ended and why. server-everything over HTTP restarted on its port
//! forgets the session: the fresh session rho starts is subscribed again
//! and the host hears `Renewed`. In the 2026 era the SDK's own subscription limit
//! (`maxSubscriptions`) refuses a second stream, and the first one keeps
//! delivering.
//!
//! rmcp 3.11.0 (`tests/interop/rust/src/bin/watched-rmcp.rs`) acknowledges
//! a listen request with only the resources it holds: a second URI it does
//! not hold is not agreed, and the one it holds keeps delivering.
//!
//! Each test waits for an update that must come, bounded by a deadline
//! only a broken run reaches; none sleeps to show that nothing came.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use rho_host::{
    CallError, CallOptions, Cancel, Host, MAX_SUBSCRIPTIONS_PER_SERVER, ResourceUpdated,
    ResourceUpdates, ToolCallError, WatchEnd, WatchNotice, resource_update_channel,
};
use rho_proto_core::config::Config;
use rho_proto_core::runtime::status::ServerStatus;
use rho_proto_core::session::ApiMisuse;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

const COUNTER: &str = "watch://counter";

/// The longest any update may take to come (server-everything sends its
/// first at once, the fixture with the call that bumps).
const PATIENCE: Duration = Duration::from_secs(20);

fn watched_js() -> std::path::PathBuf {
    assert!(
        node_modules().join("@modelcontextprotocol/server").is_dir(),
        "the TypeScript server SDK is not installed: run `npm ci --prefix tests/servers`"
    );
    tests_dir().join("servers/fixtures/watched.js")
}

/// `fixtures/watched.js` on stdio, `era` `2025` or `2026`.
fn watched_stdio(id: &str, era: &str) -> String {
    let mut table = node_server(id, &watched_js(), &["stdio"]);
    if era == "2025" {
        table.push_str("env = { WATCH_ERA = \"2025\" }\n");
    }
    table
}

/// `fixtures/watched.js` over HTTP on a loopback port; killed on drop.
struct WatchedHttp {
    child: std::process::Child,
    port: u16,
}

impl WatchedHttp {
    fn start() -> Self {
        let mut child = std::process::Command::new("node")
            .arg(watched_js())
            .arg("http")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("start node watched.js http");
        let port = listening_port(&mut child, "watched.js http");
        Self { child, port }
    }

    fn config(&self, id: &str) -> String {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:{}/mcp\"\n",
            self.port
        )
    }
}

impl Drop for WatchedHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A host on `R` for `config`, with its updates.
fn start<R: TestRuntime>(config: &Config) -> (Host, ResourceUpdates) {
    let (sink, updates) = resource_update_channel();
    let mut options = options_with(&[]);
    options.host.resource_updates = Some(sink);
    (R::start(config, options), updates)
}

/// The next update, or a panic once [`PATIENCE`] is out.
fn next_update(updates: &ResourceUpdates) -> ResourceUpdated {
    let deadline = Cancel::new();
    let timer = deadline.clone();
    let _ticker = thread::spawn(move || {
        thread::sleep(PATIENCE);
        timer.cancel();
    });
    updates
        .next_blocking_until(&deadline)
        .unwrap_or_else(|| panic!("no resource update within {PATIENCE:?}"))
}

fn era_of(host: &Host, id: &str) -> String {
    match host.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report.era().to_owned(),
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

/// The first resource server `id` listed.
fn first_resource(host: &Host, id: &str) -> String {
    match host.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report.catalog.resources.items[0].uri.clone(),
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

fn read_text(host: &Host, id: &str, uri: &str) -> String {
    let attached = host.attach_resource(id, uri, &Cancel::new()).expect("read");
    match attached.attachment {
        rho_host::Attachment::Text { text } => text,
        other => panic!("not text: {other:?}"),
    }
}

fn bump(host: &Host, id: &str) -> String {
    host.call((id, "bump"), json!({}), CallOptions::new())
        .expect("bump")
        .text()
}

/// Subscribe, change, hear of it, re-read the new body, unsubscribe: the
/// whole round on one server.
fn subscribe_change_reread(host: &Host, updates: &ResourceUpdates, id: &str) {
    assert_eq!(read_text(host, id, COUNTER), "count 0");
    host.subscribe_resource(id, COUNTER, CallOptions::new())
        .expect("subscribe");
    assert_eq!(bump(host, id), "count 1");
    let update = next_update(updates);
    assert_eq!(
        update,
        ResourceUpdated {
            server: id.into(),
            uri: COUNTER.into(),
            notice: WatchNotice::Updated,
        }
    );
    assert_eq!(read_text(host, id, COUNTER), "count 1");
    host.unsubscribe_resource(id, COUNTER, CallOptions::new())
        .expect("unsubscribe");
}

fn a_2026_stdio_server_tells_of_changes_through_subscriptions_listen<R: TestRuntime>() {
    let (host, updates) = start::<R>(&parse_config(&watched_stdio("watched", "2026")));
    assert_eq!(era_of(&host, "watched"), "2026-07-28");
    subscribe_change_reread(&host, &updates, "watched");
    host.shutdown();
}

fn a_2026_http_server_tells_of_changes_through_subscriptions_listen<R: TestRuntime>() {
    let server = WatchedHttp::start();
    let (host, updates) = start::<R>(&parse_config(&server.config("watched")));
    assert_eq!(era_of(&host, "watched"), "2026-07-28");
    subscribe_change_reread(&host, &updates, "watched");
    host.shutdown();
}

fn a_2025_sdk_server_takes_subscribe_and_unsubscribe_requests<R: TestRuntime>() {
    let record = scratch_dir("watched-record").join("record");
    let mut table = watched_stdio("watched", "2025");
    table = table.replace(
        "env = { WATCH_ERA = \"2025\" }",
        &format!(
            "env = {{ WATCH_ERA = \"2025\", WATCH_RECORD = {:?} }}",
            record.display().to_string()
        ),
    );
    let (host, updates) = start::<R>(&parse_config(&table));
    assert_eq!(era_of(&host, "watched"), "2025-11-25");
    subscribe_change_reread(&host, &updates, "watched");
    // The server's own record: asked, then released (the unsubscribe is
    // answered before it returns).
    let seen = std::fs::read_to_string(&record).expect("the fixture's record");
    assert_eq!(
        seen,
        format!("subscribe {COUNTER}\nunsubscribe {COUNTER}\n")
    );
    host.shutdown();
}

/// What the host still holds at shutdown is unsubscribed from before the
/// session closes (the 2025 server records the request).
fn shutting_down_unsubscribes_what_the_host_still_holds<R: TestRuntime>() {
    let record = scratch_dir("watched-shutdown").join("record");
    let table = watched_stdio("watched", "2025").replace(
        "env = { WATCH_ERA = \"2025\" }",
        &format!(
            "env = {{ WATCH_ERA = \"2025\", WATCH_RECORD = {:?} }}",
            record.display().to_string()
        ),
    );
    let (host, _updates) = start::<R>(&parse_config(&table));
    host.subscribe_resource("watched", COUNTER, CallOptions::new())
        .expect("subscribe");
    host.shutdown();
    let seen = std::fs::read_to_string(&record).expect("the fixture's record");
    assert_eq!(
        seen,
        format!("subscribe {COUNTER}\nunsubscribe {COUNTER}\n")
    );
}

/// A burst of three notifications for one change, all handled before the
/// call that caused them returns (stdio keeps their order), is one update.
fn a_burst_of_updates_before_the_host_looks_is_one<R: TestRuntime>() {
    for era in ["2025", "2026"] {
        let (host, updates) = start::<R>(&parse_config(&watched_stdio("watched", era)));
        host.subscribe_resource("watched", COUNTER, CallOptions::new())
            .expect("subscribe");
        let _ = bump(&host, "watched");
        assert_eq!(next_update(&updates).uri, COUNTER);
        assert_eq!(updates.try_next(), None, "{era}: coalesced into one");
        host.shutdown();
    }
}

fn server_everything_sends_updates_for_a_subscribed_resource<R: TestRuntime>() {
    let (host, updates) = start::<R>(&parse_config(&node_server(
        "everything",
        &everything_js(),
        &[],
    )));
    everything_round(host, &updates);
}

/// Over Streamable HTTP its updates come on the session's GET stream.
fn server_everything_over_http_sends_updates_on_its_get_stream<R: TestRuntime>() {
    let server = EverythingHttp::start();
    let (host, updates) = start::<R>(&parse_config(&server.config("everything")));
    everything_round(host, &updates);
}

fn everything_round(host: Host, updates: &ResourceUpdates) {
    assert_eq!(era_of(&host, "everything"), "2025-11-25");
    let uri = first_resource(&host, "everything");
    host.subscribe_resource("everything", &uri, CallOptions::new())
        .expect("subscribe");
    // Its updates start with this tool (one at once, then every 5 s).
    host.call(
        ("everything", "toggle-subscriber-updates"),
        json!({}),
        CallOptions::new(),
    )
    .expect("toggle");
    assert_eq!(next_update(updates).uri, uri);
    host.unsubscribe_resource("everything", &uri, CallOptions::new())
        .expect("unsubscribe");
    host.shutdown();
}

fn a_server_without_resources_subscribe_is_refused_naming_it<R: TestRuntime>() {
    let table = node_server(
        "plain",
        &tests_dir().join("servers/fixtures/sdk2-server.js"),
        &["stdio"],
    );
    let (host, _updates) = start::<R>(&parse_config(&table));
    let error = host
        .subscribe_resource("plain", COUNTER, CallOptions::new())
        .expect_err("not offered");
    assert!(
        matches!(
            error,
            ToolCallError::NotCallable(ApiMisuse::NotOffered {
                capability: "resources.subscribe",
                ..
            })
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "server `plain` does not offer resources.subscribe"
    );
    host.shutdown();
}

fn a_subscription_the_server_refuses_fails_with_its_error<R: TestRuntime>() {
    let (host, _updates) = start::<R>(&parse_config(&watched_stdio("watched", "2025")));
    let error = host
        .subscribe_resource("watched", "watch://nothing", CallOptions::new())
        .expect_err("refused");
    assert!(
        matches!(error, ToolCallError::Call(CallError::Rpc { .. })),
        "{error:?}"
    );
    assert!(error.to_string().contains("server `watched`"), "{error}");
    // The refused one is not held: the real one still subscribes.
    host.subscribe_resource("watched", COUNTER, CallOptions::new())
        .expect("subscribe");
    host.shutdown();
}

fn one_subscription_past_the_bound_is_refused_before_it_is_sent<R: TestRuntime>() {
    let (host, _updates) = start::<R>(&parse_config(&watched_stdio("watched", "2026")));
    for n in 0..MAX_SUBSCRIPTIONS_PER_SERVER {
        host.subscribe_resource("watched", &format!("watch://n/{n}"), CallOptions::new())
            .unwrap_or_else(|e| panic!("subscription {n}: {e}"));
    }
    let error = host
        .subscribe_resource("watched", "watch://one-more", CallOptions::new())
        .expect_err("bound");
    assert!(
        matches!(
            error,
            ToolCallError::NotCallable(ApiMisuse::SubscriptionLimit { limit, .. })
                if limit == MAX_SUBSCRIPTIONS_PER_SERVER
        ),
        "{error:?}"
    );
    // Releasing one makes room.
    host.unsubscribe_resource("watched", "watch://n/0", CallOptions::new())
        .expect("unsubscribe");
    host.subscribe_resource("watched", "watch://one-more", CallOptions::new())
        .expect("room again");
    host.shutdown();
}

fn the_async_face_subscribes_and_awaits_updates<R: TestRuntime>() {
    let (host, updates) = start::<R>(&parse_config(&watched_stdio("watched", "2026")));
    let host = host.into_async();
    let updates = Arc::new(updates);
    let update = smol::block_on(async {
        host.subscribe_resource("watched", COUNTER, CallOptions::new())
            .await
            .expect("subscribe");
        host.call(("watched", "bump"), json!({}), CallOptions::new())
            .await
            .expect("bump");
        smol::future::or(async { updates.next().await }, async {
            smol::Timer::after(PATIENCE).await;
            None
        })
        .await
    });
    assert_eq!(update.map(|u| u.uri).as_deref(), Some(COUNTER));
    smol::block_on(host.shutdown());
}

/// The pid of server `id`'s process.
fn pid_of(host: &Host, id: &str) -> u32 {
    match host.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report.pid.expect("a stdio server has a pid"),
        other => panic!("server `{id}` not ready: {other:?}"),
    }
}

/// `fixtures/watched.js` on stdio in `era`, with `env` and `restart`.
fn watched_with(era: &str, env: &[(&str, String)], restart: &str) -> String {
    let mut pairs: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {v:?}")).collect();
    if era == "2025" {
        pairs.push("WATCH_ERA = \"2025\"".into());
    }
    let mut table = node_server("watched", &watched_js(), &["stdio"]);
    if !pairs.is_empty() {
        table.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
    }
    table.push_str(&format!("restart = {restart}\n"));
    table
}

/// Kills server `id`'s process group from outside, as an OOM killer would,
/// and waits until the process is gone.
fn kill_server(host: &Host, id: &str) {
    let pid = pid_of(host, id);
    rho_os::process::kill_group(pid);
    assert!(wait_gone(pid), "the killed process is reaped");
}

/// A bump of the new process (its first) reaches the host; in the 2025
/// era the fixture's record holds `requests` of the counter, in order.
fn changes_reach_the_host(
    host: &Host,
    updates: &ResourceUpdates,
    era: &str,
    record: &std::path::Path,
    requests: &[&str],
) {
    assert_eq!(bump(host, "watched"), "count 1");
    assert_eq!(next_update(updates).notice, WatchNotice::Updated, "{era}");
    if era == "2025" {
        let seen = std::fs::read_to_string(record).expect("the fixture's record");
        let want: String = requests
            .iter()
            .map(|r| format!("{r} {COUNTER}\n"))
            .collect();
        assert_eq!(seen, want);
    }
}

fn a_watched_resource_on_a_server_killed_mid_session_is_renewed_after_its_restart<
    R: TestRuntime,
>() {
    for era in ["2025", "2026"] {
        let record = scratch_dir("watched-restart").join("record");
        let table = watched_with(
            era,
            &[("WATCH_RECORD", record.display().to_string())],
            "{ attempts = 3, backoff_ms = 100 }",
        );
        let (host, updates) = start::<R>(&parse_config(&table));
        host.subscribe_resource("watched", COUNTER, CallOptions::new())
            .expect("subscribe");
        assert_eq!(bump(&host, "watched"), "count 1");
        assert_eq!(next_update(&updates).notice, WatchNotice::Updated);

        kill_server(&host, "watched");
        // Renewed on the new process without the host asking: told so,
        // since a change while it was down was not heard of.
        let renewed = next_update(&updates);
        assert_eq!(
            (renewed.uri.as_str(), renewed.notice),
            (COUNTER, WatchNotice::Renewed),
            "{era}"
        );
        assert_eq!(
            read_text(&host, "watched", COUNTER),
            "count 0",
            "{era}: a new process"
        );
        // Its changes reach the host as before; each process was asked once.
        changes_reach_the_host(&host, &updates, era, &record, &["subscribe", "subscribe"]);
        host.shutdown();
    }
}

fn a_watched_server_not_started_again_ends_the_watch_saying_why<R: TestRuntime>() {
    for era in ["2025", "2026"] {
        let table = watched_with(era, &[], "{ attempts = 0 }");
        let (host, updates) = start::<R>(&parse_config(&table));
        host.subscribe_resource("watched", COUNTER, CallOptions::new())
            .expect("subscribe");
        kill_server(&host, "watched");
        let ended = next_update(&updates);
        assert_eq!(ended.uri, COUNTER);
        match &ended.notice {
            WatchNotice::Ended(WatchEnd::ServerEnded { reason }) => {
                assert!(reason.contains("server exited"), "{era}: {reason}");
            }
            other => panic!("{era}: expected the watch's end, got {other:?}"),
        }
        assert!(ended.ended());
        host.shutdown();
    }
}

fn a_restarted_server_that_refuses_the_subscription_ends_the_watch_with_its_error<
    R: TestRuntime,
>() {
    let once = scratch_dir("watched-once").join("started");
    let table = watched_with(
        "2025",
        &[("WATCH_ONCE", once.display().to_string())],
        "{ attempts = 3, backoff_ms = 100 }",
    );
    let (host, updates) = start::<R>(&parse_config(&table));
    host.subscribe_resource("watched", COUNTER, CallOptions::new())
        .expect("subscribe");
    kill_server(&host, "watched");
    let ended = next_update(&updates);
    match &ended.notice {
        WatchNotice::Ended(WatchEnd::NotRenewed { reason }) => {
            assert!(
                reason.contains("this process takes no subscriptions"),
                "{reason}"
            );
        }
        other => panic!("expected the watch's end, got {other:?}"),
    }
    // The server itself is back: the host may ask again (and be refused).
    assert!(
        host.subscribe_resource("watched", COUNTER, CallOptions::new())
            .is_err()
    );
    host.shutdown();
}

/// A reconnect (a new session, a new process) subscribes the new session
/// to what the host held; its changes reach the host as before.
fn a_reconnected_server_is_subscribed_again_to_what_the_host_held<R: TestRuntime>() {
    for era in ["2025", "2026"] {
        let record = scratch_dir("watched-reconnect").join("record");
        let table = watched_with(
            era,
            &[("WATCH_RECORD", record.display().to_string())],
            "{ attempts = 0 }",
        );
        let (mut host, updates) = start::<R>(&parse_config(&table));
        host.subscribe_resource("watched", COUNTER, CallOptions::new())
            .expect("subscribe");
        let before = pid_of(&host, "watched");
        let reconnected = host.reconnect("watched");
        assert!(reconnected.closed && reconnected.started.is_ok(), "{era}");
        assert_ne!(pid_of(&host, "watched"), before, "{era}: a new process");
        let outcomes: Vec<(&str, bool)> = reconnected
            .resubscribed
            .iter()
            .map(|(uri, outcome)| (uri.as_str(), outcome.is_ok()))
            .collect();
        assert_eq!(outcomes, [(COUNTER, true)], "{era}");
        // The old session let go at its close, the new one asked.
        changes_reach_the_host(
            &host,
            &updates,
            era,
            &record,
            &["subscribe", "unsubscribe", "subscribe"],
        );
        host.shutdown();
    }
}

/// server-everything over Streamable HTTP restarted on its port: the next
/// request finds the session forgotten (404), rho starts a fresh one and
/// subscribes it again of its own; the host hears `Renewed`, then the new
/// process's updates.
fn a_restarted_http_server_is_subscribed_again_on_the_fresh_session<R: TestRuntime>() {
    let mut server = EverythingHttp::start();
    let (host, updates) = start::<R>(&parse_config(&server.config("everything")));
    assert_eq!(era_of(&host, "everything"), "2025-11-25");
    let uri = first_resource(&host, "everything");
    host.subscribe_resource("everything", &uri, CallOptions::new())
        .expect("subscribe");
    server.restart();
    host.call(
        ("everything", "echo"),
        json!({"message": "after"}),
        CallOptions::new(),
    )
    .expect("a call on the fresh session");
    let renewed = next_update(&updates);
    assert_eq!(
        (renewed.uri.as_str(), renewed.notice),
        (uri.as_str(), WatchNotice::Renewed)
    );
    host.call(
        ("everything", "toggle-subscriber-updates"),
        json!({}),
        CallOptions::new(),
    )
    .expect("toggle");
    let update = next_update(&updates);
    assert_eq!(
        (update.uri.as_str(), update.notice),
        (uri.as_str(), WatchNotice::Updated)
    );
    host.shutdown();
}

/// rmcp's `watched-rmcp` on stdio.
fn watched_rmcp(id: &str) -> String {
    let binary = tests_dir().join("../target/interop-rmcp/debug/watched-rmcp");
    assert!(
        binary.exists(),
        "the rmcp watched server is not built: run `tests/interop/install`"
    );
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = {}\n",
        toml_path(&binary)
    )
}

/// rmcp acknowledges the intersection of what was asked and what its
/// handler accepts: the stream carrying a held URI and one it does not
/// hold is acknowledged with the first alone, so the second subscribe
/// fails as not agreed, and the first keeps delivering on the new stream.
fn a_partial_acknowledgement_from_rmcp_holds_only_what_it_agreed_to<R: TestRuntime>() {
    let (host, updates) = start::<R>(&parse_config(&watched_rmcp("rmcp")));
    assert_eq!(era_of(&host, "rmcp"), "2026-07-28");
    host.subscribe_resource("rmcp", COUNTER, CallOptions::new())
        .expect("a resource it holds");
    let error = host
        .subscribe_resource("rmcp", "watch://elsewhere", CallOptions::new())
        .expect_err("not agreed");
    assert!(
        matches!(
            &error,
            ToolCallError::Call(CallError::SubscriptionNotAgreed { uri, .. })
                if uri == "watch://elsewhere"
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("server `rmcp`"), "{error}");
    // The stream that replaced the first still carries the counter.
    assert_eq!(bump(&host, "rmcp"), "count 1");
    assert_eq!(
        next_update(&updates),
        ResourceUpdated {
            server: "rmcp".into(),
            uri: COUNTER.into(),
            notice: WatchNotice::Updated,
        }
    );
    assert_eq!(read_text(&host, "rmcp", COUNTER), "count 1");
    // A second resource it holds is agreed on a stream with both.
    host.subscribe_resource("rmcp", "watch://notes", CallOptions::new())
        .expect("another resource it holds");
    assert_eq!(bump(&host, "rmcp"), "count 2");
    assert_eq!(next_update(&updates).uri, COUNTER);
    host.shutdown();
}

/// The SDK's own limit of open `subscriptions/listen` streams refuses the
/// stream carrying a new URI: rho holds two open (its list-change stream
/// and the first resource stream), the limit is two, so the third, opened
/// before the second is let go, is refused; the subscribe fails with the
/// SDK's error, and the stream before it still delivers.
fn the_sdks_subscription_limit_refuses_a_new_stream_and_the_old_one_keeps_delivering<
    R: TestRuntime,
>() {
    let table = watched_with(
        "2026",
        &[("WATCH_MAX_LISTENS", "2".into())],
        "{ attempts = 0 }",
    );
    let (host, updates) = start::<R>(&parse_config(&table));
    assert_eq!(era_of(&host, "watched"), "2026-07-28");
    host.subscribe_resource("watched", COUNTER, CallOptions::new())
        .expect("the first stream");
    let error = host
        .subscribe_resource("watched", "watch://second", CallOptions::new())
        .expect_err("past the SDK's limit");
    assert!(
        matches!(&error, ToolCallError::Call(CallError::Rpc { .. })),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("Subscription limit reached"),
        "{error}"
    );
    let _ = bump(&host, "watched");
    assert_eq!(
        next_update(&updates).uri,
        COUNTER,
        "the first stream delivers"
    );
    host.shutdown();
}

both_executors!(
    a_watched_resource_on_a_server_killed_mid_session_is_renewed_after_its_restart,
    a_watched_server_not_started_again_ends_the_watch_saying_why,
    a_restarted_server_that_refuses_the_subscription_ends_the_watch_with_its_error,
    a_reconnected_server_is_subscribed_again_to_what_the_host_held,
    a_partial_acknowledgement_from_rmcp_holds_only_what_it_agreed_to,
    a_restarted_http_server_is_subscribed_again_on_the_fresh_session,
    the_sdks_subscription_limit_refuses_a_new_stream_and_the_old_one_keeps_delivering,
    a_2026_stdio_server_tells_of_changes_through_subscriptions_listen,
    a_2026_http_server_tells_of_changes_through_subscriptions_listen,
    a_2025_sdk_server_takes_subscribe_and_unsubscribe_requests,
    a_burst_of_updates_before_the_host_looks_is_one,
    shutting_down_unsubscribes_what_the_host_still_holds,
    server_everything_sends_updates_for_a_subscribed_resource,
    server_everything_over_http_sends_updates_on_its_get_stream,
    a_server_without_resources_subscribe_is_refused_naming_it,
    a_subscription_the_server_refuses_fails_with_its_error,
    one_subscription_past_the_bound_is_refused_before_it_is_sent,
    the_async_face_subscribes_and_awaits_updates,
);
