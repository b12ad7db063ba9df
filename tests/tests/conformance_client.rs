//! The conformance client (`rho-conformance-client`, tests/conformance/
//! client.rs) end to end against the OAuth fixture
//! (tests/servers/fixtures/oauth-server.js), on both executors: with no
//! stored login it logs in headless, in memory, when the server first
//! refuses; it steps up with the union of scopes when a tool needs a
//! wider one; and it logs in again, headless, at the authorization server
//! a resource moved to. These are the suite's `auth/scope-step-up` and
//! `auth/authorization-server-migration` against a second, independent
//! server, so a pass in the suite is not an accident of its mocks. And
//! its own contract: what it refuses, and how it exits.

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::oauth_server::OAuthServer;
use rho_tests::scene::Scene;

/// The binary under test.
const CLIENT: &str = env!("CARGO_BIN_EXE_rho-conformance-client");

/// A scene on `rt` and the OAuth fixture with `modes`, its port file in
/// the scene's directory.
fn setup(name: &str, rt: Runtime, modes: &[&str]) -> (Scene, OAuthServer) {
    let scene = Scene::new(CLIENT, &format!("conformance-{name}"), rt);
    let server = OAuthServer::start_with(scene.dir(), 3600, modes);
    (scene, server)
}

fn a_tool_that_needs_a_wider_scope_steps_up_headless_with_the_union_of_scopes(rt: Runtime) {
    let (s, server) = setup("step-up", rt, &["--step-up", "test-tool"]);
    let run = s.rho_env(
        &[&server.url()],
        &[("MCP_CONFORMANCE_SCENARIO", "auth/scope-step-up")],
    );
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("token #2 (mcp offline_access mcp:admin)"),
        "{run}"
    );
    assert!(
        !s.home().join(".rho").exists(),
        "nothing stored on disk\n{run}"
    );
}

fn a_server_moved_mid_session_gets_a_headless_login_at_the_new_server(rt: Runtime) {
    let (s, server) = setup("migrate", rt, &["--migrate-on", "tools/list"]);
    let run = s.rho_env(
        &[&server.url()],
        &[(
            "MCP_CONFORMANCE_SCENARIO",
            "auth/authorization-server-migration",
        )],
    );
    run.expect_code(0);
    assert!(run.stderr.contains("token #2"), "{run}");
}

fn a_scenario_it_does_not_take_part_in_exits_1_naming_it(rt: Runtime) {
    let s = Scene::new(CLIENT, "conformance-unknown-scenario", rt);
    let run = s.rho_env(
        &["http://127.0.0.1:9/mcp"],
        &[("MCP_CONFORMANCE_SCENARIO", "no-such-scenario")],
    );
    run.expect_code(1);
    assert!(
        run.stderr
            .contains("conformance scenario `no-such-scenario` is not supported"),
        "{run}"
    );
}

#[test]
fn no_url_or_a_bad_runtime_is_a_usage_error_exiting_2() {
    let s = Scene::on_default_executor(CLIENT, "conformance-usage");
    let run = s.rho(&[]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("usage: rho-conformance-client URL"),
        "{run}"
    );
    let run = s.rho_env(&["http://127.0.0.1:9/mcp"], &[("RHO_RUNTIME", "tokio")]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("RHO_RUNTIME: unknown runtime `tokio`"),
        "{run}"
    );
}

both_executors!(
    a_tool_that_needs_a_wider_scope_steps_up_headless_with_the_union_of_scopes,
    a_server_moved_mid_session_gets_a_headless_login_at_the_new_server,
    a_scenario_it_does_not_take_part_in_exits_1_naming_it,
);
