//! Agent Plugin servers end to end: the fixture plugins in `tests/plugins`
//! load beside the config's own server, with `<plugin>/<server>`
//! identities, their origin shown, `${PLUGIN_DATA}` created only just
//! before a stdio server starts, and every bad plugin entry disabling only
//! itself. The servers are the real server-everything and
//! server-filesystem from `tests/servers`, on both executors.

use std::path::{Path, PathBuf};

use rho_tests::CliRuntime as Runtime;
use rho_tests::cli_both_executors as both_executors;
use rho_tests::scene::{Scene, arg};
use rho_tests::{everything_js, node_server, tests_dir, toml_path};
use serde_json::Value;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// A scene whose config has the everything server and the fixture plugin
/// directory.
fn plugin_scene(name: &str, runtime: Runtime) -> Scene {
    Scene::new(RHO, &format!("plugins-{name}"), runtime).with_config(&format!(
        "# the user's own server\n{}\n[plugins]\ndirs = [{}]\n",
        node_server("everything", &everything_js(), &["stdio"]),
        toml_path(&tests_dir().join("plugins"))
    ))
}

/// `${PLUGIN_DATA}` of the `files` plugin under the scene's HOME.
fn data_dir(scene: &Scene) -> PathBuf {
    scene.home().join(".rho/plugin-data/files")
}

/// The `servers` entry with `id`.
fn server<'v>(list: &'v Value, id: &str) -> &'v Value {
    list["servers"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["id"] == id))
        .unwrap_or_else(|| panic!("no server {id} in {list}"))
}

fn fixture(path: &str) -> String {
    tests_dir().join("plugins").join(path).display().to_string()
}

/// Without `--connect`, plugin servers are listed with their origin and
/// their problems, and discovery creates nothing.
fn list_shows_plugin_servers_with_their_origin_and_creates_nothing(rt: Runtime) {
    let scene = plugin_scene("list", rt);
    let run = scene.rho(&["mcp", "list"]);
    assert_eq!(
        run.code,
        Some(1),
        "an invalid entry fails the listing: {run}"
    );
    let text = &run.stdout;
    for line in [
        "everything  (config)",
        "files/fs  (plugin files)",
        "files/bad  (plugin files)",
        "broken/*  (plugin broken)",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
    assert!(
        !text.contains("(plugin empty)"),
        "a plugin without servers adds none:\n{text}"
    );
    let list = scene.rho(&["mcp", "list", "--json"]).json();
    let fs = server(&list, "files/fs");
    assert_eq!(fs["origin"], "plugin");
    assert_eq!(fs["plugin"]["name"], "files");
    assert_eq!(fs["plugin"]["root"], fixture("files"));
    assert_eq!(
        fs["plugin"]["data_dir"],
        data_dir(&scene).display().to_string()
    );
    assert_eq!(fs["status"], "not_started");
    assert_eq!(fs["args"][1], data_dir(&scene).display().to_string());
    assert_eq!(server(&list, "everything")["origin"], "config");
    let bad = server(&list, "files/bad");
    assert_eq!(bad["status"], "invalid");
    assert_eq!(
        bad["error"],
        format!(
            "{}:11:18: server `files/bad`: `mcpServers.bad.command`: must not be empty",
            fixture("files/mcp.json")
        )
    );
    let broken = server(&list, "broken/*");
    assert!(
        broken["error"].as_str().is_some_and(|e| e
            .starts_with(&format!("{}:1:", fixture("broken/mcp.json")))
            && e.contains("not valid JSON")),
        "{broken}"
    );
    assert!(
        !scene.home().join(".rho/plugin-data").exists(),
        "discovery created the plugin data directory"
    );
}

/// With `--connect`, the plugin's stdio server starts only once its data
/// directory exists (server-filesystem, given only `${PLUGIN_DATA}`, exits
/// at once when that directory is missing, so `ready` is the proof),
/// beside the config's server, and its tools are callable by identity and
/// by exported name. The calls declare `${PLUGIN_DATA}` as the workspace
/// root too: server-filesystem replaces its directories with the client's
/// roots when they arrive, which would otherwise race with the call.
fn connect_creates_plugin_data_then_starts_the_plugin_server(rt: Runtime) {
    let scene = plugin_scene("connect", rt);
    let run = scene.rho(&["mcp", "list", "--connect", "--json"]);
    let list = run.json();
    assert_eq!(
        run.code,
        Some(1),
        "the invalid entries still fail the run: {run}"
    );
    assert_eq!(server(&list, "everything")["status"], "ready", "{list}");
    let fs = server(&list, "files/fs");
    assert_eq!(fs["status"], "ready", "{list}");
    let tools: Vec<&str> = fs["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["tool"].as_str())
        .collect();
    assert!(tools.contains(&"list_allowed_directories"), "{tools:?}");
    // `files/fs` holds a `/`, so the naming rule hex-encodes the component.
    let exported = "mcp___rho_66696c65732f6673__list_allowed_directories";
    assert!(
        fs["tools"]
            .as_array()
            .is_some_and(|all| all.iter().any(|t| t["name"] == exported)),
        "{fs}"
    );
    let data = data_dir(&scene);
    assert!(data.is_dir());
    // Owner-only, each directory this created under the home.
    #[cfg(unix)]
    for dir in [data.as_path(), data.parent().expect("plugin-data")] {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(dir).expect("metadata").permissions(),
        );
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", dir.display());
    }
    let call = |tool: &str| {
        let run = scene.rho(&["--workspace", arg(&data), "mcp", "call", "files/fs", tool]);
        run.expect_code(0);
        run.stdout
    };
    let out = call("list_allowed_directories");
    let by_name = call(exported);
    let canonical = std::fs::canonicalize(&data).expect("canonical data dir");
    assert!(
        out.contains(&canonical.display().to_string()),
        "the server does not serve ${{PLUGIN_DATA}}: {out}"
    );
    assert_eq!(by_name, out, "calling by the exported name differs");
}

/// A data directory that cannot be created disables that server alone.
fn an_uncreatable_data_dir_disables_only_that_server(rt: Runtime) {
    let scene = plugin_scene("no-data", rt);
    let data_root = scene.home().join(".rho/plugin-data");
    std::fs::create_dir_all(data_root.parent().expect("parent")).expect("create .rho");
    // A file where the directory must go.
    std::fs::write(&data_root, "not a directory").expect("write blocker");
    let run = scene.rho(&["mcp", "list", "--connect", "--json"]);
    run.expect_code(1);
    let list = run.json();
    assert_eq!(server(&list, "everything")["status"], "ready", "{list}");
    let fs = server(&list, "files/fs");
    assert_eq!(fs["status"], "invalid", "{list}");
    let error = fs["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(&format!(
            "{}: server `files/fs`: cannot create the plugin's data directory",
            data_dir(&scene).display()
        )) && error.ends_with("this server is disabled"),
        "{error}"
    );
}

/// Only the selected server's data directory is created: `show` of the
/// config's own server leaves the plugin's alone.
fn show_of_another_server_creates_no_plugin_data(rt: Runtime) {
    let scene = plugin_scene("show", rt);
    let run = scene.rho(&["mcp", "show", "everything", "--connect"]);
    run.expect_code(0);
    assert!(run.stdout.contains("origin:     config"), "{run}");
    assert!(!Path::new(&data_dir(&scene)).exists());
    let out = scene.rho(&["mcp", "show", "files/fs"]).stdout;
    assert!(out.contains("origin:     plugin files"), "{out}");
    assert!(
        out.contains(&format!("plugin dir: {}", fixture("files"))),
        "{out}"
    );
}

/// Plugins whose servers are all invalid (or none) add no startup work:
/// `list --connect` builds no session, as with no server at all.
fn plugins_without_valid_servers_keep_the_zero_server_fast_path(rt: Runtime) {
    let scene = plugin_scene("zero", rt);
    let plugins = scene.dir().join("plugins");
    std::fs::create_dir_all(&plugins).expect("create plugins dir");
    for name in ["broken", "empty"] {
        let (fixture, link) = (tests_dir().join("plugins").join(name), plugins.join(name));
        #[cfg(unix)]
        let linked = std::os::unix::fs::symlink(fixture, link);
        #[cfg(windows)]
        let linked = std::os::windows::fs::symlink_dir(fixture, link);
        linked.expect("link a fixture plugin");
    }
    std::fs::write(
        scene.config(),
        format!("[plugins]\ndirs = [{}]\n", toml_path(&plugins)),
    )
    .expect("write config");
    let record = scene.dir().join("record.jsonl");
    let run = scene.rho(&["--record", arg(&record), "mcp", "list", "--connect"]);
    // The broken plugin's entry fails the listing, and nothing else does.
    run.expect_code(1);
    assert!(run.stdout.contains("broken/*"), "{run}");
    let transcript = std::fs::read_to_string(&record).expect("rho opened the transcript");
    assert!(
        !transcript.contains("rho_transcript"),
        "a session was built for a plugin without valid servers:\n{transcript}"
    );
}

/// `[mcp] max_output_bytes` caps plugin servers too (their `mcp.json`
/// has no key for it); the config's own entry keeps its own.
fn plugin_servers_take_the_global_output_cap(rt: Runtime) {
    let scene = plugin_scene("cap", rt);
    let text = std::fs::read_to_string(scene.config()).expect("read config");
    let text = text.replace(
        "# the user's own server\n",
        "[mcp]\nmax_output_bytes = 2048\n",
    );
    std::fs::write(scene.config(), text).expect("write config");
    let list = scene.rho(&["mcp", "list", "--json"]).json();
    assert_eq!(
        server(&list, "files/fs")["max_output_bytes"],
        2048,
        "{list}"
    );
    assert_eq!(server(&list, "everything")["max_output_bytes"], 2048);
}

both_executors!(
    plugin_servers_take_the_global_output_cap,
    plugins_without_valid_servers_keep_the_zero_server_fast_path,
    list_shows_plugin_servers_with_their_origin_and_creates_nothing,
    connect_creates_plugin_data_then_starts_the_plugin_server,
    an_uncreatable_data_dir_disables_only_that_server,
    show_of_another_server_creates_no_plugin_data,
);
