//! Managing servers from the shell, with the real `rho` binary: `add`,
//! `remove`, `enable` and `disable` editing the config file in place,
//! `import` of other clients' JSON configs (secrets moved out), ad-hoc
//! servers (`--stdio`, `--url`) without a config file, tool
//! arguments as `key=value` words typed by the tool's schema, `get` as
//! `show`, and shell completions.
//!
//! Every run gets its own scratch `HOME` (the user's `~/.rho` is never
//! read or written) and a null stdin. These behaviours do not depend on
//! the executor, so the runs use the default one.

use std::path::Path;

use rho_tests::scene::{Run, Scene, arg};
use rho_tests::{EverythingHttp, everything_js, toml_path};

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// A config with server-everything over stdio as `id`.
fn everything(id: &str) -> String {
    format!(
        "[mcp.servers.{id}]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{}]\n",
        toml_path(&everything_js())
    )
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

/// A config a person wrote: comments, odd spacing, a subtable, a table
/// after the servers.
fn commented(everything: &str) -> String {
    format!(
        "# my servers  \n\n[mcp.servers.a]   # the first\ntransport = \"stdio\"\ncommand    = \"node\"\nargs = [ {everything} ]  # spaced\n\n# only reads\n[mcp.servers.a.tools]\nallow = [\"echo\"]\n\n# below the servers\n[sampling]\ncommand = [\"true\"]\n"
    )
}

// ---------------------------------------------------------------------------
// add, remove, enable, disable

#[test]
fn add_then_list_then_remove_round_trips_a_commented_config() {
    let s = Scene::on_default_executor(RHO, "round-trip");
    let js = toml_path(&everything_js());
    let original = commented(&js);
    let config = s.write("config.toml", &original);
    let cfg = arg(&config);
    let script = everything_js();
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "ev2",
        "--env",
        "LOG_LEVEL=debug",
        "--",
        "node",
        arg(&script),
        "stdio",
    ]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!("added server `ev2` in {cfg}\n"),
        "{run}"
    );
    assert_eq!(run.stderr, "", "nothing secret-looking: no note\n{run}");
    // Everything but the new table is byte for byte what it was; the new
    // table follows the last server table.
    let table = format!(
        "\n[mcp.servers.ev2]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [{js}, \"stdio\"]\nenv = {{ LOG_LEVEL = \"debug\" }}\n"
    );
    let at = original.find("\n# below the servers").expect("marker");
    assert_eq!(
        read(&config),
        format!("{}{table}{}", &original[..at], &original[at..])
    );
    let list = s.rho(&["--config", cfg, "mcp", "list", "--json"]);
    list.expect_code(0);
    let listed = list.json();
    let ids: Vec<&str> = listed["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["a", "ev2"], "{list}");
    // The added server is a real one: it starts and lists its tools.
    let show = s.rho(&["--config", cfg, "mcp", "show", "ev2", "--connect", "--json"]);
    show.expect_code(0);
    assert_eq!(show.json()["status"], "ready", "{show}");
    let run = s.rho(&["--config", cfg, "mcp", "remove", "ev2"]);
    run.expect_code(0);
    assert_eq!(run.stdout, format!("removed server `ev2` from {cfg}\n"));
    assert_eq!(read(&config), original, "remove restores the file exactly");
}

/// The spellings people bring from `claude mcp add`: `--transport http ID
/// URL`, a URL or a command without `--`, `--scope user`, and `add-json`;
/// what rho cannot take is refused saying exactly what to type.
#[test]
fn add_takes_claude_style_spellings_or_says_exactly_what_to_type() {
    let s = Scene::on_default_executor(RHO, "add-claude");
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    for args in [
        &[
            "--transport",
            "http",
            "remote",
            "https://mcp.example.com/mcp",
        ][..],
        &["web", "https://web.example.com/mcp"],
        &[
            "-t",
            "http",
            "-s",
            "user",
            "scoped",
            "https://scoped.example.com/mcp",
        ],
        &["local", "npx", "some-server"],
        &["--transport", "stdio", "piped", "--", "npx", "-y", "other"],
    ] {
        let mut all = vec!["--config", cfg, "mcp", "add"];
        all.extend_from_slice(args);
        s.rho(&all).expect_code(0);
    }
    let text = read(&config);
    for part in [
        "[mcp.servers.remote]",
        "url = \"https://mcp.example.com/mcp\"",
        "url = \"https://web.example.com/mcp\"",
        "[mcp.servers.scoped]",
        "command = \"npx\"\nargs = [\"some-server\"]",
        "args = [\"-y\", \"other\"]",
    ] {
        assert!(text.contains(part), "no {part:?} in\n{text}");
    }
    for (args, says) in [
        (
            &["--scope", "project", "p", "https://p.example.com/mcp"][..],
            "rho has no `project` scope",
        ),
        (
            &["--transport", "http", "h", "--", "npx", "x"],
            "--transport http needs a URL, not a command: rho mcp add h --transport http https://host/mcp",
        ),
        (
            &["--transport", "stdio", "h", "https://h.example.com/mcp"],
            "--transport stdio needs a command after `--`",
        ),
        (
            &["--transport", "ws", "h", "https://h.example.com/mcp"],
            "--transport takes stdio or http",
        ),
        (
            &[
                "h",
                "https://h.example.com/mcp",
                "--url",
                "https://h.example.com/mcp",
            ],
            "give the server once",
        ),
    ] {
        let mut all = vec!["--config", cfg, "mcp", "add"];
        all.extend_from_slice(args);
        let run = s.rho(&all);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "no `{says}`\n{run}");
        assert!(!run.stderr.contains("tip:"), "no clap tip\n{run}");
    }
    // add-json: one entry by the rules of import (secrets stay out).
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add-json",
        "j",
        r#"{"command": "npx", "args": ["-y", "s"], "env": {"API_KEY": "sk-abcdefghijklmnopqrstuvwx"}}"#,
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("added server `j`"), "{run}");
    assert!(run.stderr.contains("RHO_J_API_KEY"), "{run}");
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add-json",
        "jh",
        r#"{"type": "http", "url": "https://jh.example.com/mcp"}"#,
    ]);
    run.expect_code(0);
    let text = read(&config);
    assert!(!text.contains("sk-abcdefghijklmnopqrstuvwx"), "{text}");
    assert!(
        text.contains("RHO_J_API_KEY") && text.contains("https://jh.example.com/mcp"),
        "{text}"
    );
    let run = s.rho(&["--config", cfg, "mcp", "add-json", "bad", "{\"nope\": 1}"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("has neither `command` nor `url`"),
        "{run}"
    );
}

#[test]
fn add_refuses_an_existing_id_unless_forced() {
    let s = Scene::on_default_executor(RHO, "add-exists");
    let original = commented(&toml_path(&everything_js()));
    let config = s.write("config.toml", &original);
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "add", "a", "--", "other"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains(&format!("server `a` already exists in {cfg}: pass --force")),
        "{run}"
    );
    assert_eq!(read(&config), original, "a refused add writes nothing");
    let run = s.rho(&[
        "--config", cfg, "mcp", "add", "a", "--force", "--", "other", "x",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, format!("replaced server `a` in {cfg}\n"));
    // In place: the comment above it and the tables after it stay.
    let text = read(&config);
    assert!(
        text.starts_with(
            "# my servers  \n\n[mcp.servers.a]   # the first\ntransport = \"stdio\"\ncommand = \"other\"\nargs = [\"x\"]\n"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("\n# below the servers\n[sampling]\ncommand = [\"true\"]\n"),
        "{text}"
    );
    assert!(
        !text.contains("allow"),
        "the old entry's subtable went with it: {text}"
    );
}

#[test]
fn add_creates_the_file_and_its_directory_owner_only() {
    let s = Scene::on_default_executor(RHO, "add-creates");
    let config = s.dir().join("project/.rho/config.toml");
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "remote",
        "--url",
        "https://mcp.example.com/mcp",
        "--header",
        "X-Tenant=public-tenant",
        "--header-from-env",
        "Authorization=MCP_AUTHORIZATION",
    ]);
    run.expect_code(0);
    assert_eq!(
        read(&config),
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { X-Tenant = \"public-tenant\" }\nheaders_from_env = { Authorization = \"MCP_AUTHORIZATION\" }\n"
    );
    #[cfg(unix)]
    assert_eq!(mode(&config), 0o600);
    // Without --config, the default file under HOME.
    let run = s.rho(&[
        "mcp",
        "add",
        "fs",
        "--disabled",
        "--",
        "npx",
        "-y",
        "fs-server",
    ]);
    run.expect_code(0);
    let default = s.home().join(".rho/config.toml");
    assert_eq!(
        read(&default),
        "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"npx\"\nargs = [\"-y\", \"fs-server\"]\nenabled = false\n"
    );
    // `~/.rho` also holds the credential store: owner-only, whatever the
    // umask.
    #[cfg(unix)]
    assert_eq!(mode(&s.home().join(".rho")), 0o700);
    let list = s.rho(&["mcp", "list", "--json"]);
    list.expect_code(0);
    assert_eq!(list.json()["servers"][0]["status"], "disabled", "{list}");
}

/// A connecting command that is the first to create `~/.rho` makes it
/// owner-only (0700), and the completion names cache in it 0600; a
/// `--record` transcript, which holds a whole session, is 0600 too. Each
/// created that way, under the test's ordinary 022 umask, not repaired.
#[cfg(unix)]
#[test]
fn files_a_connecting_command_creates_are_owner_only() {
    let s = Scene::on_default_executor(RHO, "modes");
    let config = s.write("config.toml", &everything("everything"));
    let record = s.dir().join("session.jsonl");
    let run = s.rho(&[
        "--config",
        arg(&config),
        "--record",
        arg(&record),
        "mcp",
        "list",
        "--connect",
    ]);
    run.expect_code(0);
    let rho = s.home().join(".rho");
    assert_eq!(mode(&rho), 0o700, "{run}");
    assert_eq!(mode(&rho.join("completion-names.json")), 0o600);
    assert_eq!(mode(&record), 0o600);
    // Nothing else under ~/.rho is readable by others either.
    for entry in std::fs::read_dir(&rho).expect("~/.rho").flatten() {
        assert_eq!(mode(&entry.path()) & 0o077, 0, "{}", entry.path().display());
    }
}

/// A names cache that is a FIFO (or a link to `/dev/zero`) is passed over
/// at once: the connecting command neither hangs reading it nor grows, and
/// completion still offers the configured servers.
#[cfg(unix)]
#[test]
fn a_names_cache_that_is_not_a_file_is_passed_over_at_once() {
    let s = Scene::on_default_executor(RHO, "cache-fifo");
    let config = s.write("config.toml", &everything("everything"));
    let rho = s.home().join(".rho");
    std::fs::create_dir_all(&rho).expect("~/.rho");
    for (i, make) in ["fifo", "zero"].iter().enumerate() {
        let cache = rho.join("completion-names.json");
        let _ = std::fs::remove_file(&cache);
        if *make == "fifo" {
            rho_tests::mkfifo(&cache);
        } else {
            std::os::unix::fs::symlink("/dev/zero", &cache).expect("symlink");
        }
        // The tool position reads the cache; the server position offers
        // the configured ids all the same.
        let cfg = arg(&config);
        for (words, expect) in [
            (
                vec!["rho", "--config", cfg, "mcp", "call", "everything", ""],
                "",
            ),
            (
                vec!["rho", "--config", cfg, "mcp", "call", ""],
                "everything",
            ),
        ] {
            let index = (words.len() - 1).to_string();
            let mut args = vec!["__complete", index.as_str()];
            args.extend(words.iter().copied());
            let run = s.rho(&args);
            run.expect_code(0);
            assert!(run.stdout.contains(expect), "{i} {make}: {run}");
        }
    }
}

#[test]
fn add_with_oauth_writes_the_opt_in_table_and_the_server_can_log_in() {
    let s = Scene::on_default_executor(RHO, "add-oauth");
    let config = s.dir().join("rho.toml");
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "secure",
        "--url",
        "https://mcp.example.com/mcp",
        "--oauth",
    ]);
    run.expect_code(0);
    assert_eq!(
        read(&config),
        "[mcp.servers.secure]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n\n[mcp.servers.secure.oauth]\n"
    );
    let show = s.rho(&["--config", cfg, "mcp", "show", "secure", "--json"]);
    show.expect_code(0);
    assert_eq!(show.json()["auth"]["kind"], "oauth", "{show}");
    // Only for URL servers.
    let run = s.rho(&[
        "--config", cfg, "mcp", "add", "local", "--oauth", "--", "true",
    ]);
    run.expect_code(2);
}

#[test]
fn add_writes_an_out_of_band_oauth_client_and_never_a_secret() {
    let s = Scene::on_default_executor(RHO, "add-oauth-client");
    let config = s.dir().join("rho.toml");
    let cfg = arg(&config);
    // A client issued out of band, its secret in a file named relative to
    // where the command runs, and a scope: claude's spelling of the rest.
    let words = [
        "--config",
        cfg,
        "mcp",
        "add",
        "--transport",
        "http",
        "slack",
        "https://mcp.example.com/mcp",
        "--client-id",
        "123.456",
        "--client-secret-file",
        "slack-secret",
        "--oauth-scope",
        "channels:read",
        "--oauth-scope",
        "chat:write",
        "--callback-port",
        "8765",
    ];
    let output = s
        .command()
        .current_dir(s.dir())
        .args(words)
        .output()
        .expect("run rho");
    let run = Run::of(format!("rho {}", words.join(" ")), output);
    run.expect_code(0);
    let secret_path = s.dir().join("slack-secret").display().to_string();
    assert_eq!(
        read(&config),
        format!(
            "[mcp.servers.slack]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n\n[mcp.servers.slack.oauth]\nclient_id = \"123.456\"\nclient_secret_file = \"{secret_path}\"\nscopes = [\"channels:read\", \"chat:write\"]\nredirect_port = 8765\n"
        )
    );
    // A machine client: the grant, the id, and the secret's variable.
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "robot",
        "https://mcp.example.com/mcp",
        "--grant",
        "client_credentials",
        "--client-id",
        "robot-1",
        "--client-secret-from-env",
        "ROBOT_SECRET",
    ]);
    run.expect_code(0);
    let text = read(&config);
    assert!(
        text.contains("[mcp.servers.robot.oauth]\ngrant = \"client_credentials\"\nclient_id = \"robot-1\"\nclient_secret_from_env = \"ROBOT_SECRET\"\n"),
        "{text}"
    );
    let before = read(&config);
    let refused = |args: &[&str], says: &str| {
        let mut all = vec![
            "--config",
            cfg,
            "mcp",
            "add",
            "x",
            "https://mcp.example.com/mcp",
        ];
        all.extend_from_slice(args);
        let run = s.rho(&all);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{run}");
        assert!(!run.all().contains("hunter2"), "{run}");
    };
    // A secret on the command line never reaches the file, and the error
    // says what to type instead.
    refused(&["--client-secret", "hunter2"], "--client-secret-file PATH");
    refused(
        &["--client-id", "c", "--client-secret"],
        "--client-secret-from-env VAR",
    );
    refused(&["--callback-port", "0"], "redirect_port");
    refused(
        &[
            "--grant",
            "client_credentials",
            "--client-id",
            "m",
            "--client-secret-from-env",
            "S",
            "--callback-port",
            "8080",
        ],
        "opens no browser",
    );
    refused(&["--grant", "password"], "--grant takes authorization_code");
    // The config's own rule, named by key: a machine client needs its id.
    refused(&["--grant", "client_credentials"], "client_id");
    // Only for URL servers.
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "y",
        "--client-id",
        "c",
        "--",
        "true",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("are for --url servers"), "{run}");
    assert_eq!(read(&config), before, "nothing refused was written");
}

#[test]
fn an_entry_the_config_parser_refuses_is_never_written() {
    let s = Scene::on_default_executor(RHO, "add-invalid");
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "r",
        "--url",
        "http://example.com/mcp",
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("must use https"), "{run}");
    assert!(!config.exists(), "nothing written");
    let run = s.rho(&["--config", cfg, "mcp", "add", "bad id", "--", "x"]);
    run.expect_code(2);
    assert!(!config.exists(), "nothing written");
    // A file the parser refuses as a whole is not edited either.
    let broken = "[mcp.servers.a\ncommand = 1\n";
    let config = s.write("broken.toml", broken);
    let run = s.rho(&["--config", arg(&config), "mcp", "add", "b", "--", "x"]);
    run.expect_code(2);
    assert!(run.stderr.contains("cannot edit"), "{run}");
    assert_eq!(read(&config), broken);
}

#[cfg(target_os = "linux")]
#[test]
fn a_config_that_cannot_be_written_is_reported() {
    let s = Scene::on_default_executor(RHO, "add-unwritable");
    // Absent, so there is nothing to read, and in a directory nobody, not
    // even root, can create.
    let config = Path::new("/proc/self/rho-no-such-dir/config.toml");
    let run = s.rho(&["--config", arg(config), "mcp", "add", "a", "--", "x"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains(&format!("cannot write {}", arg(config))),
        "{run}"
    );
}

#[test]
fn add_arguments_that_do_not_fit_the_transport_are_usage_errors() {
    let s = Scene::on_default_executor(RHO, "add-usage");
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    for (args, says) in [
        (&["b"][..], "give the server's command after `--`"),
        (
            &["b", "--header", "A=b", "--", "x"][..],
            "--header, --header-from-env, --oauth and the OAuth client flags are for --url servers",
        ),
        (
            &["b", "--env", "A=b", "--url", "https://x.example/mcp"][..],
            "are for stdio servers",
        ),
        (
            &["b", "--env", "novalue", "--", "x"][..],
            "--env `novalue` is not KEY=VALUE",
        ),
        (
            &["b", "--url", "https://x.example/mcp", "--", "x"][..],
            "cannot be used with",
        ),
    ] {
        let mut all = vec!["--config", cfg, "mcp", "add"];
        all.extend_from_slice(args);
        let run = s.rho(&all);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{run}");
        assert!(!config.exists(), "nothing written for {args:?}");
    }
}

#[test]
fn secret_looking_literal_values_are_written_with_a_note() {
    let s = Scene::on_default_executor(RHO, "add-secret");
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "gh",
        "--header",
        "Authorization: Bearer ghp_0123456789abcdef",
        "--url",
        "https://api.example.com/mcp",
    ]);
    run.expect_code(0);
    assert!(read(&config).contains("Authorization = \"Bearer ghp_0123456789abcdef\""));
    assert!(
        run.stderr
            .contains("note: header `Authorization` of server `gh` looks like a secret")
            && run
                .stderr
                .contains("--header-from-env Authorization=SOME_VAR"),
        "{run}"
    );
    assert!(
        !run.stderr.contains("ghp_"),
        "the note never repeats the value\n{run}"
    );
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add",
        "env",
        "--env",
        "API_KEY=abc",
        "--env",
        "MODE=fast",
        "--",
        "x",
    ]);
    run.expect_code(0);
    assert!(
        run.stderr
            .contains("note: variable `API_KEY` of server `env` looks like a secret")
            && run.stderr.contains("--env-from-env API_KEY=SOME_VAR"),
        "{run}"
    );
    assert!(!run.stderr.contains("MODE"), "MODE is no secret\n{run}");
}

#[test]
fn remove_enable_and_disable_of_an_unknown_id_list_the_known_ones() {
    let s = Scene::on_default_executor(RHO, "unknown-id");
    let original = commented(&toml_path(&everything_js()));
    let config = s.write("config.toml", &original);
    let cfg = arg(&config);
    for verb in ["remove", "enable", "disable"] {
        let run = s.rho(&["--config", cfg, "mcp", verb, "nope"]);
        run.expect_code(2);
        assert!(
            run.stderr
                .contains(&format!("no MCP server `nope` in {cfg} (configured: a)")),
            "{run}"
        );
        assert_eq!(read(&config), original);
    }
    // A plugin's servers live in its mcp.json, which rho leaves alone.
    let run = s.rho(&["--config", cfg, "mcp", "disable", "files/fs"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("`files/fs` is a server of plugin `files`, which rho does not edit"),
        "{run}"
    );
    let missing = s.dir().join("missing.toml");
    let run = s.rho(&["--config", arg(&missing), "mcp", "remove", "a"]);
    run.expect_code(2);
    assert!(run.stderr.contains("configures none"), "{run}");
    assert!(!missing.exists(), "remove never creates a file");
}

#[test]
fn disable_then_enable_round_trips_and_keeps_the_permissions() {
    let s = Scene::on_default_executor(RHO, "toggle");
    let original = commented(&toml_path(&everything_js()));
    let config = s.write("config.toml", &original);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    }
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "disable", "a"]);
    run.expect_code(0);
    assert_eq!(run.stdout, format!("disabled server `a` in {cfg}\n"));
    assert!(
        read(&config).contains("# spaced\nenabled = false\n"),
        "{}",
        read(&config)
    );
    #[cfg(unix)]
    assert_eq!(mode(&config), 0o640, "the file keeps its permissions");
    let list = s.rho(&["--config", cfg, "mcp", "list", "--json"]);
    assert_eq!(list.json()["servers"][0]["status"], "disabled", "{list}");
    let run = s.rho(&["--config", cfg, "mcp", "disable", "a"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!("server `a` is already disabled in {cfg}\n")
    );
    let run = s.rho(&["--config", cfg, "mcp", "enable", "a"]);
    run.expect_code(0);
    assert_eq!(read(&config), original);
    // No temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(s.dir())
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("rho-edit"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[cfg(unix)]
#[test]
fn a_symlinked_config_is_edited_through_the_link() {
    let s = Scene::on_default_executor(RHO, "symlink");
    let real = s.write("real.toml", "# real\n");
    let link = s.dir().join("link.toml");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let run = s.rho(&["--config", arg(&link), "mcp", "add", "x", "--", "true"]);
    run.expect_code(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    assert!(read(&real).starts_with("# real\n"), "{}", read(&real));
    assert!(read(&real).contains("[mcp.servers.x]"), "{}", read(&real));
}

// ---------------------------------------------------------------------------
// import

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("JSON string")
}

#[test]
fn import_of_a_claude_desktop_config_moves_secrets_out() {
    let s = Scene::on_default_executor(RHO, "import-desktop");
    let js = json_str(arg(&everything_js()));
    let desktop = s.write(
        "claude_desktop_config.json",
        &format!(
            r#"{{"globalShortcut": "Ctrl+Space", "mcpServers": {{
  "everything": {{"command": "node", "args": [{js}, "stdio"],
                  "env": {{"API_KEY": "sk-live-0123456789abcdef", "LOG_LEVEL": "debug"}}}},
  "fs": {{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}
}}}}"#
        ),
    );
    let original = "# mine\n";
    let config = s.write("config.toml", original);
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&desktop)]);
    run.expect_code(0);
    assert_eq!(
        run.stdout,
        format!("imported server `everything` in {cfg}\nimported server `fs` in {cfg}\n")
    );
    assert!(
        run.stderr.contains(&format!(
            "note: server `everything` takes these from rho's environment, not from {cfg}: set RHO_EVERYTHING_API_KEY (env API_KEY)"
        )),
        "{run}"
    );
    let text = read(&config);
    assert!(text.starts_with(original), "{text}");
    assert!(
        !text.contains("sk-live"),
        "a secret reached the TOML:\n{text}"
    );
    assert!(
        !run.stderr.contains("sk-live"),
        "a note showed the secret\n{run}"
    );
    assert!(text.contains("env = { LOG_LEVEL = \"debug\" }\nenv_from_env = { API_KEY = \"RHO_EVERYTHING_API_KEY\" }\n"), "{text}");
    // The imported server is real: it starts once its variable is set,
    // and says which one it lacks until then.
    let show = s.rho(&["--config", cfg, "mcp", "show", "everything", "--connect"]);
    show.expect_code(1);
    assert!(
        show.stdout
            .contains("`RHO_EVERYTHING_API_KEY`, which is not set"),
        "{show}"
    );
    let show = s.rho_env(
        &[
            "--config",
            cfg,
            "mcp",
            "show",
            "everything",
            "--connect",
            "--json",
        ],
        &[("RHO_EVERYTHING_API_KEY", "sk-live-0123456789abcdef")],
    );
    show.expect_code(0);
    assert_eq!(show.json()["status"], "ready", "{show}");
    assert_eq!(
        show.json()["env_names"],
        serde_json::json!(["API_KEY", "LOG_LEVEL"]),
        "{show}"
    );
}

#[test]
fn import_of_claude_code_and_cursor_configs_names_the_placeholders_variables() {
    let s = Scene::on_default_executor(RHO, "import-code");
    let code = s.write(
        ".mcp.json",
        r#"{"mcpServers": {
  "remote": {"type": "http", "url": "https://mcp.example.com/mcp",
             "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Tenant": "public"}},
  "local": {"type": "stdio", "command": "gh-server", "args": ["stdio"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
  "legacy": {"type": "sse", "url": "https://old.example.com/sse"}
}}"#,
    );
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&code)]);
    run.expect_code(0);
    let text = read(&config);
    assert_eq!(
        text,
        "[mcp.servers.remote]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { X-Tenant = \"public\" }\nheaders_from_env = { Authorization = \"RHO_REMOTE_AUTHORIZATION\" }\n\n[mcp.servers.local]\ntransport = \"stdio\"\ncommand = \"gh-server\"\nargs = [\"stdio\"]\nenv_from_env = { GITHUB_PERSONAL_ACCESS_TOKEN = \"GITHUB_TOKEN\" }\n\n[mcp.servers.legacy]\ntransport = \"streamable_http\"\nurl = \"https://old.example.com/sse\"\n"
    );
    for says in [
        "set RHO_REMOTE_AUTHORIZATION (header Authorization)",
        "set GITHUB_TOKEN (env GITHUB_PERSONAL_ACCESS_TOKEN)",
        "server `legacy`: declared `sse`",
    ] {
        assert!(run.stderr.contains(says), "no `{says}`\n{run}");
    }
    let cursor = s.write(
        "mcp.json",
        r#"{"mcpServers": {"cur": {"url": "https://c.example.com/mcp", "headers": {"X-Api-Key": "abc"}}}}"#,
    );
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&cursor)]);
    run.expect_code(0);
    assert!(
        read(&config).ends_with("[mcp.servers.cur]\ntransport = \"streamable_http\"\nurl = \"https://c.example.com/mcp\"\nheaders_from_env = { X-Api-Key = \"RHO_CUR_X_API_KEY\" }\n"),
        "{}",
        read(&config)
    );
}

#[test]
fn import_of_a_vs_code_config_reads_its_servers_object() {
    let s = Scene::on_default_executor(RHO, "import-vscode");
    let vscode = s.write(
        "mcp.json",
        r#"{"inputs": [{"type": "promptString", "id": "tok", "password": true}],
 "servers": {
  "vs": {"type": "stdio", "command": "node", "args": ["s.js"], "env": {"TOKEN": "${input:tok}"},
         "envFile": "${workspaceFolder}/.env"},
  "web": {"type": "http", "url": "https://api.example.com/mcp"}
}}"#,
    );
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&vscode)]);
    run.expect_code(0);
    let text = read(&config);
    assert!(
        text.contains("env_from_env = { TOKEN = \"RHO_VS_TOKEN\" }"),
        "{text}"
    );
    assert!(!text.contains("input:"), "{text}");
    assert!(run.stderr.contains("ignored `envFile`"), "{run}");
    let list = s.rho(&["--config", cfg, "mcp", "list", "--json"]);
    list.expect_code(0);
    assert_eq!(
        list.json()["servers"][1]["transport"],
        "streamable_http",
        "{list}"
    );
}

#[test]
fn invalid_entries_are_reported_and_the_valid_ones_still_imported() {
    let s = Scene::on_default_executor(RHO, "import-invalid");
    let mixed = s.write(
        "mixed.json",
        r#"{"mcpServers": {
  "ok": {"command": "true"},
  "broken": {"args": ["x"]},
  "plain": {"url": "http://example.com/mcp"},
  "bad id!": {"command": "x"}
}}"#,
    );
    let config = s.dir().join("config.toml");
    let cfg = arg(&config);
    let file = arg(&mixed);
    let run = s.rho(&["--config", cfg, "mcp", "import", file]);
    run.expect_code(1);
    assert_eq!(
        run.stdout,
        format!("imported server `ok` in {cfg}\n"),
        "{run}"
    );
    for says in [
        format!("rho: {file}: server `broken`: has neither `command` nor `url`"),
        format!("rho: {file}: server `plain`: "),
        "must use https".to_owned(),
        format!("rho: {file}: server `bad id!`: "),
        format!("rho: 3 of the 4 servers in {file} could not be imported"),
    ] {
        assert!(run.stderr.contains(&says), "no `{says}`\n{run}");
    }
    let text = read(&config);
    assert_eq!(
        text,
        "[mcp.servers.ok]\ntransport = \"stdio\"\ncommand = \"true\"\n"
    );
}

/// An entry the config parser refuses is reported by the server's name in
/// the input and the entry's own key (`command`, `headers.X-A`), never by
/// a `file:line:column` of the config text rho checked and did not write:
/// that line does not exist in any file the person can open. For `import`
/// and for `add-json` alike, and the config file is left as it was.
#[test]
fn a_refused_entry_cites_its_name_and_key_never_a_line_of_an_unwritten_text() {
    let s = Scene::on_default_executor(RHO, "import-refused-place");
    let original = "# mine\n[mcp.servers.mine]\ntransport = \"stdio\"\ncommand = \"true\"\n";
    let config = s.write("config.toml", original);
    let cfg = arg(&config);
    let input = s.write(
        "claude.json",
        r#"{"mcpServers": {
  "badurl": {"type": "http", "url": "ftp://example.com/mcp"},
  "badcmd": {"command": ""},
  "badhdr": {"type": "http", "url": "https://x.example/mcp", "headers": {"X-A": "a\r\nb"}}
}}"#,
    );
    let file = arg(&input);
    let run = s.rho(&["--config", cfg, "mcp", "import", file]);
    run.expect_code(1);
    for says in [
        format!("rho: {file}: server `badurl`: `url` must be an https URL"),
        format!("rho: {file}: server `badcmd`: `command`: must not be empty"),
        format!("rho: {file}: server `badhdr`: `headers.X-A`: a header value must not contain"),
    ] {
        assert!(run.stderr.contains(&says), "no `{says}`\n{run}");
    }
    let add = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "add-json",
        "remote",
        r#"{"type": "http", "url": "ftp://example.com/mcp"}"#,
    ]);
    add.expect_code(2);
    assert!(
        add.stderr
            .contains("rho: server `remote`: `url` must be an https URL"),
        "{add}"
    );
    for run in [&run, &add] {
        // No place in a config text: neither the file's name with a line
        // nor the `mcp.servers.<id>.` path of a key it does not hold.
        assert!(!run.stderr.contains(&format!("{cfg}:")), "{run}");
        assert!(!run.stderr.contains("mcp.servers."), "{run}");
    }
    assert_eq!(read(&config), original);
}

#[test]
fn import_skips_existing_ids_unless_forced() {
    let s = Scene::on_default_executor(RHO, "import-existing");
    let original = "[mcp.servers.ok]  # mine\ntransport = \"stdio\"\ncommand = \"mine\"\n";
    let config = s.write("config.toml", original);
    let cfg = arg(&config);
    let json = s.write("a.json", r#"{"mcpServers": {"ok": {"command": "theirs"}}}"#);
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&json)]);
    run.expect_code(0);
    assert!(
        run.stderr.contains(&format!(
            "note: skipped server `ok`: {cfg} already has it (pass --force to replace it)"
        )),
        "{run}"
    );
    assert_eq!(
        run.stdout,
        format!("imported no server from {}\n", arg(&json))
    );
    assert_eq!(read(&config), original);
    let run = s.rho(&["--config", cfg, "mcp", "import", arg(&json), "--force"]);
    run.expect_code(0);
    assert_eq!(run.stdout, format!("replaced server `ok` in {cfg}\n"));
    assert_eq!(
        read(&config),
        "[mcp.servers.ok]  # mine\ntransport = \"stdio\"\ncommand = \"theirs\"\n"
    );
}

#[test]
fn import_of_a_file_that_is_not_a_client_config_is_a_usage_error() {
    let s = Scene::on_default_executor(RHO, "import-bad-file");
    let config = s.write("config.toml", "# untouched\n");
    let cfg = arg(&config);
    for (name, text, says) in [
        ("a.json", "{not json", "is not JSON"),
        ("b.json", r#"{"servers": []}"#, "`servers` is not an object"),
        ("c.json", r#"{"other": {}}"#, "has no `mcpServers` object"),
    ] {
        let path = s.write(name, text);
        let run = s.rho(&["--config", cfg, "mcp", "import", arg(&path)]);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{run}");
        assert_eq!(read(&config), "# untouched\n");
    }
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "import",
        arg(&s.dir().join("none.json")),
    ]);
    run.expect_code(2);
    assert!(run.stderr.contains("cannot read"), "{run}");
}

// ---------------------------------------------------------------------------
// ad-hoc servers

#[test]
fn an_adhoc_stdio_server_lists_shows_and_calls_without_a_config_file() {
    let s = Scene::on_default_executor(RHO, "adhoc-stdio");
    // Quoted as a shell would need it; HOME has no config at all.
    let line = format!("node '{}' stdio", arg(&everything_js()));
    let run = s.rho(&["mcp", "list", "--connect", "--stdio", &line, "--json"]);
    run.expect_code(0);
    let doc = run.json();
    assert_eq!(doc["servers"][0]["id"], "adhoc", "{run}");
    assert_eq!(doc["servers"][0]["status"], "ready", "{run}");
    assert_eq!(doc["servers"][0]["args"][1], "stdio", "{run}");
    let run = s.rho(&["mcp", "show", "--stdio", &line, "--connect"]);
    run.expect_code(0);
    assert!(run.stdout.contains("mcp__adhoc__echo"), "{run}");
    let run = s.rho(&["mcp", "call", "--stdio", &line, "get-sum", "a=20", "b=22"]);
    run.expect_code(0);
    assert!(run.stdout.contains("42"), "{run}");
    // --env reaches the ad-hoc server (its environment is sanitized like
    // any server's otherwise).
    let run = s.rho(&[
        "mcp",
        "call",
        "--stdio",
        &line,
        "--env",
        "RHO_ADHOC_MARK=marked-value",
        "get-env",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("RHO_ADHOC_MARK"), "{run}");
}

/// Every command that starts one server takes an ad-hoc one: prompt, read
/// and complete too; list and show start it without --connect, and show
/// says where it comes from.
#[test]
fn an_adhoc_server_serves_every_one_server_command_and_is_started_by_list_and_show() {
    let s = Scene::on_default_executor(RHO, "adhoc-all");
    let line = format!("node '{}' stdio", arg(&everything_js()));
    let run = s.rho(&["mcp", "list", "--stdio", &line]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("ready"),
        "started without --connect: {run}"
    );
    let run = s.rho(&["mcp", "show", "--stdio", &line]);
    run.expect_code(0);
    assert!(
        run.stdout
            .contains("origin:     ad hoc (--stdio; no config file is read)"),
        "{run}"
    );
    assert!(run.stdout.contains("mcp__adhoc__echo"), "{run}");
    let run = s.rho(&["mcp", "show", "--stdio", &line, "--json"]);
    assert_eq!(run.json()["origin"], "adhoc", "{run}");
    let run = s.rho(&["mcp", "prompt", "--stdio", &line, "simple-prompt"]);
    run.expect_code(0);
    assert_eq!(
        run.stdout, "This is a simple prompt without arguments.\n",
        "{run}"
    );
    let run = s.rho(&[
        "mcp",
        "read",
        "--stdio",
        &line,
        "demo://resource/dynamic/text/{resourceId}",
        "resourceId=3",
    ]);
    run.expect_code(0);
    assert!(run.stdout.starts_with("Resource 3: "), "{run}");
    let run = s.rho(&[
        "mcp",
        "complete",
        "--stdio",
        &line,
        "completable-prompt",
        "department",
        "",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("Engineering"), "{run}");
    let run = s.rho(&["mcp", "prompt", "everything"]);
    run.expect_code(2);
}

#[test]
fn an_adhoc_url_server_lists_and_calls_without_a_config_file() {
    let s = Scene::on_default_executor(RHO, "adhoc-url");
    let server = EverythingHttp::start();
    let url = server.url();
    let run = s.rho(&["mcp", "list", "--connect", "--url", &url, "--json"]);
    run.expect_code(0);
    assert_eq!(run.json()["servers"][0]["status"], "ready", "{run}");
    assert_eq!(
        run.json()["servers"][0]["transport"],
        "streamable_http",
        "{run}"
    );
    let run = s.rho(&["mcp", "get", "adhoc", "--url", &url]);
    run.expect_code(0);
    let run = s.rho(&[
        "mcp",
        "call",
        "--url",
        &url,
        "--header",
        "X-Trace: 1",
        "echo",
        "message=over http",
    ]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: over http\n", "{run}");
}

#[test]
fn adhoc_servers_that_cannot_be_used_are_refused() {
    let s = Scene::on_default_executor(RHO, "adhoc-refused");
    let config = s.write("config.toml", &everything("ev"));
    for (args, says) in [
        (
            &["mcp", "list", "--url", "http://example.com/mcp"][..],
            "--url: non-loopback endpoints must use https",
        ),
        (
            &["mcp", "list", "--stdio", "node 'unclosed"][..],
            "--stdio: a single quote (') is not closed",
        ),
        (
            &["mcp", "list", "--stdio", "node a.js | tee log"][..],
            "`|` needs a shell",
        ),
        (
            &["mcp", "list", "--stdio", "  "][..],
            "--stdio: the command line is empty",
        ),
        (
            &[
                "mcp",
                "list",
                "--stdio",
                "x",
                "--url",
                "https://a.example/mcp",
            ][..],
            "cannot be used with",
        ),
        (&["mcp", "list", "--env", "A=b"][..], "--stdio"),
        (
            &["--config", arg(&config), "mcp", "list", "--stdio", "x"][..],
            "replace the config file",
        ),
        (
            &["mcp", "show", "ev", "--stdio", "x"][..],
            "no MCP server `ev`: with --stdio the one server is `adhoc` (no config file is read)",
        ),
        (
            &[
                "mcp",
                "list",
                "--url",
                "https://a.example/mcp",
                "--header",
                "novalue",
            ][..],
            "--header `novalue` is not KEY=VALUE",
        ),
        (
            &["mcp", "call", "--stdio", "x"][..],
            "required arguments were not provided",
        ),
        (
            &["--config", arg(&config), "mcp", "call", "ev"][..],
            "name one of server `ev`'s tools: ",
        ),
    ] {
        let run = s.rho(args);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "no `{says}`\n{run}");
    }
    // A command that does not exist fails to start, as a configured one
    // would.
    let run = s.rho(&[
        "mcp",
        "list",
        "--connect",
        "--stdio",
        "rho-no-such-command --x",
    ]);
    run.expect_code(1);
    assert!(run.stdout.contains("rho-no-such-command"), "{run}");
}

// ---------------------------------------------------------------------------
// key=value tool arguments

#[test]
fn key_value_arguments_are_typed_by_the_tools_schema() {
    let s = Scene::on_default_executor(RHO, "kv-typed");
    let config = s.write("config.toml", &everything("ev"));
    let cfg = arg(&config);
    // get-sum's a and b are numbers: sent as strings, the server would
    // refuse them.
    let run = s.rho(&[
        "--config", cfg, "mcp", "call", "ev", "get-sum", "a=2", "b=3.5",
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains("5.5"), "{run}");
    // A string property takes the value as typed, digits and all.
    let run = s.rho(&["--config", cfg, "mcp", "call", "ev", "echo", "message=42"]);
    run.expect_code(0);
    assert_eq!(run.stdout, "Echo: 42\n", "{run}");
    // The JSON object form still works beside it.
    let run = s.rho(&[
        "--config",
        cfg,
        "mcp",
        "call",
        "ev",
        "get-sum",
        r#"{"a":1,"b":2}"#,
    ]);
    run.expect_code(0);
    assert!(run.stdout.contains('3'), "{run}");
}

#[test]
fn an_unknown_key_or_an_untypeable_value_is_a_usage_error() {
    let s = Scene::on_default_executor(RHO, "kv-refused");
    let config = s.write("config.toml", &everything("ev"));
    let cfg = arg(&config);
    let run = s.rho(&[
        "--config", cfg, "mcp", "call", "ev", "get-sum", "a=2", "c=3",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("tool `get-sum` takes no argument `c` (its arguments: a, b)"),
        "{run}"
    );
    let run = s.rho(&[
        "--config", cfg, "mcp", "call", "ev", "get-sum", "a=two", "b=3",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("tool argument `a` must be a number: got `two`"),
        "{run}"
    );
    // Not key=value at all: refused before any server starts.
    let run = s.rho(&["--config", cfg, "mcp", "call", "ev", "echo", "message"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is not `key=value`"), "{run}");
}

// ---------------------------------------------------------------------------
// get, completions

#[test]
fn get_is_show() {
    let s = Scene::on_default_executor(RHO, "get");
    let config = s.write("config.toml", &everything("ev"));
    let cfg = arg(&config);
    let get = s.rho(&["--config", cfg, "mcp", "get", "ev", "--json"]);
    get.expect_code(0);
    let show = s.rho(&["--config", cfg, "mcp", "show", "ev", "--json"]);
    show.expect_code(0);
    assert_eq!(get.stdout, show.stdout);
    let run = s.rho(&["--config", cfg, "mcp", "get", "nope"]);
    run.expect_code(2);
    assert!(run.stderr.contains("configured: ev"), "{run}");
}

#[test]
fn completions_cover_the_commands_for_each_shell() {
    let s = Scene::on_default_executor(RHO, "completions");
    // bash, zsh and fish ask rho for each word (see tests/completions.rs);
    // elvish and powershell get the static script.
    for shell in ["bash", "zsh", "fish"] {
        let run = s.rho(&["completions", shell]);
        run.expect_code(0);
        assert!(run.stdout.contains("__complete"), "{shell}\n{run}");
    }
    let run = s.rho(&["__complete", "2", "rho", "mcp", ""]);
    run.expect_code(0);
    for word in ["list", "call"] {
        assert!(run.stdout.lines().any(|l| l == word), "no `{word}`\n{run}");
    }
    let run = s.rho(&["__complete", "3", "rho", "mcp", "list", "--"]);
    for word in ["--config", "--connect"] {
        assert!(run.stdout.lines().any(|l| l == word), "no `{word}`\n{run}");
    }
    let run = s.rho(&["completions", "elvish"]);
    run.expect_code(0);
    assert!(run.stdout.contains("connect"), "{run}");
    let run = s.rho(&["completions", "tcsh"]);
    run.expect_code(2);
    assert!(run.stderr.contains("tcsh"), "{run}");
}
