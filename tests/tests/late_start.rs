//! Starting one server into a running host ([`Host::start_server`]), on
//! both executors, against server-everything: the new server's tools join
//! the registry and answer, the servers already running keep their process
//! and session, a host that started nothing gets its first session late,
//! a server that failed to start can be started again with a corrected
//! entry, a running one is stopped alone ([`Host::stop_server`]) and
//! started again, and a running, unknown or disabled server is refused by
//! name.

use rho_host::{CallOptions, Host, LoadedConfig};
use rho_proto_core::runtime::StartServerError;
use rho_proto_core::runtime::status::ServerStatus;
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;
use serde_json::json;

fn everything(id: &str) -> String {
    node_server(id, &everything_js(), &["stdio"])
}

fn pid(host: &Host, id: &str) -> u32 {
    match host.server(id).map(|s| s.status) {
        Some(ServerStatus::Ready(report)) => report.pid.expect("a stdio server has a pid"),
        other => panic!("server `{id}` should be ready: {other:?}"),
    }
}

fn echo(host: &Host, id: &str, message: &str) -> String {
    let result = host
        .call(
            &format!("mcp__{id}__echo"),
            json!({ "message": message }),
            CallOptions::new(),
        )
        .unwrap_or_else(|e| panic!("echo on `{id}`: {e}"));
    serde_json::to_string(&result.content).expect("content serializes")
}

fn a_late_server_joins_without_touching_the_running_one<R: TestRuntime>() {
    let config = parse_config(&format!("{}{}", everything("first"), everything("second")));
    let loaded = LoadedConfig::from(config.clone());
    let mut host = R::builder(&loaded, options_with(&[]))
        .only(|id| id == "first")
        .executor_thread()
        .connect()
        .host;
    let first_pid = pid(&host, "first");
    assert!(matches!(
        host.server("second").map(|s| s.status),
        Some(ServerStatus::NotStarted)
    ));
    assert!(host.tools().get("mcp__second__echo").is_none());

    let view = host
        .start_server("second", &config)
        .expect("second starts into the running host");
    assert!(
        matches!(view.status, ServerStatus::Ready(_)),
        "{:?}",
        view.status
    );
    assert!(host.tools().get("mcp__second__echo").is_some());
    assert!(host.tools().get("mcp__first__echo").is_some());
    assert!(echo(&host, "second", "late").contains("late"));
    assert_eq!(pid(&host, "first"), first_pid, "first kept its process");
    assert!(process_alive(first_pid));
    assert!(echo(&host, "first", "still").contains("still"));

    assert_eq!(
        host.start_server("first", &config).expect_err("running"),
        StartServerError::Running("first".into())
    );
    let second_pid = pid(&host, "second");
    host.shutdown();
    assert!(wait_gone(first_pid) && wait_gone(second_pid));
}

fn a_host_that_started_nothing_gets_its_first_session_late<R: TestRuntime>() {
    let config = parse_config(&everything("only"));
    let loaded = LoadedConfig::from(config.clone());
    let mut host = R::builder(&loaded, options_with(&[]))
        .only(|_| false)
        .executor_thread()
        .connect()
        .host;
    assert!(host.tools().is_empty());
    host.start_server("only", &config).expect("only starts");
    assert!(host.tools().get("mcp__only__echo").is_some());
    assert!(echo(&host, "only", "first session").contains("first session"));
    host.shutdown();
}

fn a_failed_server_starts_again_with_a_corrected_entry<R: TestRuntime>() {
    let broken = parse_config(
        "[mcp.servers.fixme]\ntransport = \"stdio\"\ncommand = \"/nonexistent/rho-late-start-server\"\n",
    );
    let mut host = R::start(&broken, options_with(&[]));
    assert!(matches!(
        host.server("fixme").map(|s| s.status),
        Some(ServerStatus::Failed { .. })
    ));
    let fixed = parse_config(&everything("fixme"));
    let view = host.start_server("fixme", &fixed).expect("fixme starts");
    assert!(
        matches!(view.status, ServerStatus::Ready(_)),
        "{:?}",
        view.status
    );
    assert!(echo(&host, "fixme", "fixed").contains("fixed"));
    host.shutdown();
}

fn a_running_server_is_stopped_alone_and_started_again<R: TestRuntime>() {
    let config = parse_config(&format!("{}{}", everything("keep"), everything("again")));
    let mut host = R::start(&config, options_with(&[]));
    let keep = pid(&host, "keep");
    let old = pid(&host, "again");
    assert!(host.stop_server("again"), "again had a session");
    assert!(wait_gone(old), "the stopped server's process ended");
    assert!(matches!(
        host.server("again").map(|s| s.status),
        Some(ServerStatus::NotStarted)
    ));
    assert!(host.tools().get("mcp__again__echo").is_none());
    assert!(!host.stop_server("again"), "nothing left to stop");
    assert!(!host.stop_server("nope"));
    assert!(echo(&host, "keep", "alone").contains("alone"));

    host.start_server("again", &config)
        .expect("again starts again");
    let new = pid(&host, "again");
    assert_ne!(new, old);
    assert!(echo(&host, "again", "back").contains("back"));
    assert_eq!(pid(&host, "keep"), keep, "keep kept its process");
    host.shutdown();
}

fn unknown_and_disabled_servers_are_refused_by_name<R: TestRuntime>() {
    let text = format!("{}enabled = false\n", everything("off"));
    let config = parse_config(&text);
    let mut host = R::start(&config, options_with(&[]));
    let unknown = host.start_server("nope", &config).expect_err("unknown");
    assert_eq!(unknown, StartServerError::Unknown("nope".into()));
    assert!(unknown.to_string().contains("`nope`"), "{unknown}");
    let disabled = host.start_server("off", &config).expect_err("disabled");
    assert_eq!(disabled, StartServerError::Disabled("off".into()));
    // The remedy is data; a host that installed no words of its own
    // gets words that name no command.
    assert_eq!(
        disabled.remedy(),
        Some(rho_host::Remedy::Enable { server: "off" })
    );
    assert!(
        disabled
            .to_string()
            .ends_with("is disabled; enable server `off` in the config"),
        "{disabled}"
    );
    host.shutdown();
}

both_executors!(
    a_late_server_joins_without_touching_the_running_one,
    a_host_that_started_nothing_gets_its_first_session_late,
    a_failed_server_starts_again_with_a_corrected_entry,
    a_running_server_is_stopped_alone_and_started_again,
    unknown_and_disabled_servers_are_refused_by_name,
);
