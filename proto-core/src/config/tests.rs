//! The config model's rules, pinned one behaviour at a time.

use super::parse::HTTP_LOOPBACK_ONLY;
use super::*;

const FILE: &str = "config.toml";

fn parse_ok(text: &str) -> Config {
    match parse(text, FILE) {
        Ok(config) => config,
        Err(error) => panic!("unexpected file error: {error}"),
    }
}

fn server(text: &str, id: &str) -> ServerConfig {
    let config = parse_ok(text);
    let entry = config.get(id).expect("entry exists");
    match &entry.config {
        Ok(server) => server.clone(),
        Err(error) => panic!("unexpected entry error: {error}"),
    }
}

/// The entry error for `id`, with its (line, column).
fn entry_error(text: &str, id: &str) -> (EntryError, (usize, usize)) {
    let config = parse_ok(text);
    let entry = config.get(id).expect("entry exists");
    match &entry.config {
        Ok(server) => panic!("expected an error, got {server:?}"),
        Err(error) => (error.clone(), (error.line, error.column)),
    }
}

fn file_error(text: &str) -> ConfigFileError {
    match parse(text, FILE) {
        Ok(config) => panic!("expected a file error, got {config:?}"),
        Err(error) => error,
    }
}

#[test]
fn plugin_dirs_are_read_as_written_and_default_when_absent() {
    let config =
        parse_ok("[plugins]\ndirs = [\"~/.rho/plugins\", \"vendor/plugins\"]\nother = 1\n");
    assert_eq!(
        config.plugin_dirs.as_deref(),
        Some(&["~/.rho/plugins".to_owned(), "vendor/plugins".to_owned()][..])
    );
    assert_eq!(parse_ok("[plugins]\n").plugin_dirs, None);
    assert_eq!(parse_ok("").plugin_dirs, None);
    assert_eq!(
        parse_ok("[plugins]\ndirs = []\n").plugin_dirs,
        Some(Vec::new())
    );
}

#[test]
fn malformed_plugin_dirs_fail_the_file_with_a_position() {
    for (text, needle, message) in [
        ("plugins = 3\n", "3", "`plugins` must be a table"),
        (
            "[plugins]\ndirs = \"x\"\n",
            "\"x\"",
            "`plugins.dirs` must be an array of directories, found string",
        ),
        (
            "[plugins]\ndirs = [\"a\", \"\"]\n",
            "\"\"]",
            "`plugins.dirs` must hold non-empty directory paths",
        ),
        (
            "[plugins]\ndirs = [1]\n",
            "1]",
            "`plugins.dirs` must hold non-empty directory paths",
        ),
    ] {
        let error = file_error(text);
        assert!(
            matches!(&error.kind, ConfigFileErrorKind::Plugins { message: m } if m.starts_with(message)),
            "{text:?}: {error}"
        );
        assert_eq!(
            (error.line, error.column),
            position_of(text, needle),
            "{text:?}"
        );
    }
}

/// The 1-based (line, column) of the first occurrence of `needle`.
fn position_of(text: &str, needle: &str) -> (usize, usize) {
    line_column(text, text.find(needle).expect("needle in text"))
}

const FULL: &str = r#"
[model]
name = "not ours"

[mcp.servers.filesystem]
transport = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/work/project"]
cwd = "/work/project"
env = { NODE_ENV = "production" }
env_from_env = { GITHUB_PERSONAL_ACCESS_TOKEN = "GITHUB_TOKEN" }
enabled = true
log_level = "info"
sampling = "ask"
startup_timeout_secs = 30
tool_timeout_secs = 2.5

[mcp.servers.filesystem.tools]
allow = ["read_file", "list_directory"]
deny = []

[mcp.servers.remote]
transport = "streamable_http"
url = "https://mcp.example.com/mcp"
headers_from_env = { Authorization = "MCP_AUTHORIZATION" }
headers = { X-Tenant = "public-tenant" }
enabled = false

[mcp.servers.remote.tools]
deny = ["delete_account"]

[mcp.servers.remote.oauth]
client_id = "issued-out-of-band"
scopes = ["read", "write"]
"#;

#[test]
fn full_example_with_both_transports_and_every_key_parses() {
    let config = parse_ok(FULL);
    let ids: Vec<_> = config.servers.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["filesystem", "remote"]);

    let fs = server(FULL, "filesystem");
    assert_eq!(fs.id.as_str(), "filesystem");
    assert!(fs.enabled);
    assert_eq!(fs.log_level, Some(LogLevel::Info));
    assert_eq!(fs.sampling, SamplingPolicy::Ask);
    assert_eq!(fs.startup_timeout, Duration::from_secs(30));
    assert_eq!(fs.tool_timeout, Duration::from_millis(2500));
    assert_eq!(
        fs.tools,
        ToolFilter {
            allow: Some(vec!["read_file".into(), "list_directory".into()]),
            deny: vec![],
        }
    );
    assert_eq!(fs.transport.kind(), "stdio");
    let Transport::Stdio(stdio) = &fs.transport else {
        panic!("stdio expected");
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(
        stdio.args,
        [
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/work/project"
        ]
    );
    assert_eq!(stdio.cwd.as_deref(), Some("/work/project"));
    assert_eq!(stdio.env["NODE_ENV"], "production");
    assert_eq!(
        stdio.env_from_env["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "GITHUB_TOKEN"
    );
    assert_eq!(fs.env_names(), ["GITHUB_PERSONAL_ACCESS_TOKEN", "NODE_ENV"]);
    assert!(fs.header_names().is_empty());

    let remote = server(FULL, "remote");
    assert!(!remote.enabled);
    assert_eq!(remote.log_level, None);
    assert_eq!(remote.sampling, SamplingPolicy::Deny);
    assert_eq!(remote.tools.deny, ["delete_account"]);
    assert_eq!(remote.tools.allow, None);
    assert_eq!(remote.transport.kind(), "streamable_http");
    let Transport::StreamableHttp(http) = &remote.transport else {
        panic!("http expected");
    };
    assert_eq!(http.url.as_str(), "https://mcp.example.com/mcp");
    assert_eq!(http.headers["X-Tenant"], "public-tenant");
    assert_eq!(http.headers_from_env["Authorization"], "MCP_AUTHORIZATION");
    assert_eq!(
        http.oauth,
        Some(OAuthConfig {
            client_id: Some("issued-out-of-band".into()),
            scopes: Some(vec!["read".into(), "write".into()]),
            ..OAuthConfig::default()
        })
    );
    assert_eq!(remote.header_names(), ["Authorization", "X-Tenant"]);
    assert!(remote.env_names().is_empty());

    let enabled: Vec<_> = config.enabled().map(|s| s.id.as_str()).collect();
    assert_eq!(enabled, ["filesystem"]);
    assert_eq!(config.errors().count(), 0);
}

#[test]
fn inline_and_dotted_forms_read_the_same() {
    let text = "[mcp]\nservers.fs.transport = \"stdio\"\nservers.fs.command = \"a\"\nservers.fs.env.A = \"1\"\n\n[mcp.servers.b]\ntransport = \"stdio\"\ncommand = \"b\"\ntools.deny = [\"x\"]\n";
    let fs = server(text, "fs");
    assert_eq!(fs.env_names(), ["A"]);
    assert_eq!(server(text, "b").tools.deny, ["x"]);
}

#[test]
fn timeouts_default_to_120_seconds() {
    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n";
    let a = server(text, "a");
    assert_eq!(a.startup_timeout, Duration::from_secs(120));
    assert_eq!(a.tool_timeout, Duration::from_secs(120));
    assert!(a.enabled);
    assert_eq!(a.sampling, SamplingPolicy::Deny);
    assert_eq!(a.tools, ToolFilter::default());
    assert_eq!(a.max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES);
}

#[test]
fn max_output_bytes_is_global_with_a_per_server_override() {
    let text = "[mcp]\nmax_output_bytes = 2048\n[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\n[mcp.servers.b]\ntransport = \"stdio\"\ncommand = \"x\"\nmax_output_bytes = 0x1000\n";
    assert_eq!(server(text, "a").max_output_bytes, 2048);
    assert_eq!(server(text, "b").max_output_bytes, 4096);
    let plain = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\n";
    assert_eq!(
        server(plain, "a").max_output_bytes,
        DEFAULT_MAX_OUTPUT_BYTES
    );
}

#[test]
fn plugin_servers_inherit_the_global_max_output_bytes() {
    let mcp_json = r#"{"mcpServers": {"docs": {"command": "docs-mcp"}}}"#;
    let plugin = || {
        read_plugin(&PluginDir {
            root: "/plugins/kit",
            dir_name: "kit",
            manifest: None,
            mcp_json,
            data_root: "/data",
        })
        .entries
    };
    let cap_of = |config: &Config, id: &str| match &config.get(id).expect("entry").config {
        Ok(server) => server.max_output_bytes,
        Err(error) => panic!("{error}"),
    };
    // Set without any [mcp.servers] table, and with one whose entry says
    // its own: the plugin gets the global cap, the entry keeps its own.
    for text in [
        "[mcp]\nmax_output_bytes = 2048\n",
        "[mcp]\nmax_output_bytes = 2048\n[mcp.servers.own]\ntransport = \"stdio\"\ncommand = \"x\"\nmax_output_bytes = 8192\n",
    ] {
        let mut config = parse_ok(text);
        assert_eq!(config.max_output_bytes, Some(2048), "{text}");
        config.add_plugin_servers(plugin());
        assert_eq!(cap_of(&config, "kit/docs"), 2048, "{text}");
        if config.get("own").is_some() {
            assert_eq!(cap_of(&config, "own"), 8192, "the entry's own wins");
        }
    }
    // Unset: the default.
    let mut plain = parse_ok("");
    assert_eq!(plain.max_output_bytes, None);
    plain.add_plugin_servers(plugin());
    assert_eq!(cap_of(&plain, "kit/docs"), DEFAULT_MAX_OUTPUT_BYTES);
}

#[test]
fn max_output_bytes_out_of_range_is_refused_where_it_is_written() {
    for bad in ["1023", "\"64k\"", "1.5", "2147483648"] {
        let global = format!("[mcp]\nmax_output_bytes = {bad}\n");
        let error = parse(&global, "t.toml").expect_err(bad);
        assert!(
            error.to_string().contains(
                "`mcp.max_output_bytes` must be a whole number of bytes from 1024 (1 KiB)"
            ),
            "{error}"
        );
        let entry = format!(
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nmax_output_bytes = {bad}\n"
        );
        let config = parse_ok(&entry);
        let error = config.get("a").expect("a").config.clone().expect_err(bad);
        assert!(
            error
                .to_string()
                .contains("`mcp.servers.a.max_output_bytes` must be"),
            "{error}"
        );
    }
}

#[test]
fn max_message_bytes_is_read_and_held_to_a_sane_range() {
    let with = |value: &str| {
        format!(
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nmax_message_bytes = {value}\n"
        )
    };
    assert_eq!(server(&with("33554432"), "a").max_message_bytes, 32 << 20);
    assert_eq!(server(&with("0x10000"), "a").max_message_bytes, 64 << 10);
    assert_eq!(server(&with("1073741824"), "a").max_message_bytes, 1 << 30);
    for bad in ["0", "-1", "65535", "1073741825"] {
        let text = with(bad);
        let error = parse_ok(&text).servers[0]
            .config
            .as_ref()
            .expect_err("out of range")
            .to_string();
        assert!(
            error.contains(&format!(
                "`mcp.servers.a.max_message_bytes` must be a number of bytes from 65536 (64 KiB) to 1073741824 (1 GiB), not {bad}"
            )),
            "{error}"
        );
    }
    let text = with("\"16MiB\"");
    let error = parse_ok(&text).servers[0]
        .config
        .as_ref()
        .expect_err("a string")
        .to_string();
    assert!(error.contains("a whole number of bytes"), "{error}");
    let http = "[mcp.servers.h]\ntransport = \"streamable_http\"\nurl = \"https://e.com/mcp\"\nmax_message_bytes = 1048576\n";
    assert_eq!(server(http, "h").max_message_bytes, 1 << 20);
}

#[test]
fn file_without_mcp_or_servers_has_no_servers() {
    assert!(parse_ok("").servers.is_empty());
    assert!(parse_ok("[model]\nname = \"x\"\n").servers.is_empty());
    assert!(parse_ok("[mcp]\n").servers.is_empty());
    assert!(parse_ok("[mcp.servers]\n").servers.is_empty());
    assert_eq!(parse_ok("").enabled().count(), 0);
}

#[test]
fn other_top_level_tables_are_ignored_even_when_odd() {
    let text = "mcpx = 1\n[agents]\nanything = { goes = [1, \"two\"] }\n[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n";
    let config = parse_ok(text);
    assert_eq!(config.servers.len(), 1);
    let server = config.servers[0].config.as_ref().expect("valid");
    assert_eq!(server.id.as_str(), "a");
}

#[test]
fn syntax_error_is_a_file_error_with_line_and_column() {
    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \n";
    let error = file_error(text);
    assert!(matches!(error.kind, ConfigFileErrorKind::Syntax { .. }));
    assert_eq!((error.line, error.column), (3, 11), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("config.toml:3:11: TOML syntax error: "),
        "{error}"
    );
}

#[test]
fn unknown_key_under_mcp_is_a_file_error() {
    let text = "[mcp.server.fs]\ntransport = \"stdio\"\ncommand = \"x\"\n";
    let error = file_error(text);
    assert_eq!((error.line, error.column), (1, 6), "{error}");
    assert_eq!(
        error.to_string(),
        "config.toml:1:6: unknown key `mcp.server`: rho reads only `mcp.servers` and `mcp.max_output_bytes` under [mcp]; did you mean `mcp.servers`?"
    );
    let error = file_error("[mcp]\nservers = {}\ntimeout = 3\n");
    assert_eq!((error.line, error.column), (3, 1));
    assert!(error.to_string().contains("unknown key `mcp.timeout`"));
}

#[test]
fn mcp_and_servers_and_entries_must_be_tables() {
    let error = file_error("mcp = 3\n");
    assert_eq!(
        error.to_string(),
        "config.toml:1:7: `mcp` must be a table, found integer"
    );
    let error = file_error("[mcp]\nservers = [1]\n");
    assert_eq!(
        error.to_string(),
        "config.toml:2:11: `mcp.servers` must be a table of server tables, found array"
    );
}

#[test]
fn an_entry_that_is_not_a_table_disables_only_itself() {
    let text = "[mcp.servers]\nfs = \"npx foo\"\n\n[mcp.servers.good]\ntransport = \"stdio\"\ncommand = \"good\"\n";
    let config = parse_ok(text);
    let good = config.get("good").expect("good").config.as_ref();
    assert_eq!(good.map(|c| c.id.as_str()).ok(), Some("good"));
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (2, 6));
    assert_eq!(
        error.to_string(),
        "config.toml:2:6: server `fs`: `mcp.servers.fs` must be a table, found string: write `[mcp.servers.fs]` with `transport = ...` and its keys on the lines below"
    );
    let (error, _) = entry_error("[[mcp.servers.fs]]\ntransport = \"stdio\"\n", "fs");
    assert!(error.message.contains("found array"), "{error}");
}

#[test]
fn malformed_entry_beside_a_valid_one_does_not_stop_it() {
    let text = "[mcp.servers.bad]\ntransport = \"stdio\"\ncomand = \"x\"\n\n[mcp.servers.good]\ntransport = \"stdio\"\ncommand = \"good\"\n";
    let config = parse_ok(text);
    assert_eq!(config.servers.len(), 2);
    let (error, at) = entry_error(text, "bad");
    assert_eq!(at, (3, 1));
    assert_eq!(
        error.to_string(),
        "config.toml:3:1: server `bad`: unknown key `mcp.servers.bad.comand`; did you mean `command`?"
    );
    let enabled: Vec<_> = config.enabled().map(|s| s.id.to_string()).collect();
    assert_eq!(enabled, ["good"]);
    assert_eq!(config.errors().count(), 1);
}

#[test]
fn disabled_entries_are_still_validated() {
    let text = "[mcp.servers.off]\nenabled = false\ntransport = \"stdio\"\n";
    let (error, at) = entry_error(text, "off");
    assert_eq!(at, (1, 1));
    assert!(
        error
            .message
            .contains("missing required key `mcp.servers.off.command`")
    );
}

#[test]
fn identity_must_use_the_allowed_characters() {
    let text = "[mcp.servers.\"my.server\"]\ntransport = \"stdio\"\ncommand = \"x\"\n";
    let (error, at) = entry_error(text, "my.server");
    assert_eq!(at, (1, 14));
    assert_eq!(
        error.message,
        "invalid server identity: only ASCII letters, digits, `-` and `_` are allowed, found '.'"
    );
    assert_eq!(
        ServerId::new("").unwrap_err().to_string(),
        "a server identity must not be empty"
    );
    assert_eq!(
        ServerId::new("ok-id_2").map(|id| id.as_str().to_owned()),
        Ok("ok-id_2".to_owned())
    );
}

#[test]
fn unknown_keys_name_the_full_path() {
    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\n\n[mcp.servers.fs.tools]\nallow = []\nalow = []\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (7, 1));
    assert!(
        error
            .message
            .starts_with("unknown key `mcp.servers.fs.tools.alow`"),
        "{error}"
    );

    let text = "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\noauth = { client_secret = \"s\" }\n";
    let (error, at) = entry_error(text, "r");
    assert_eq!(at, (4, 11));
    assert!(
        error
            .message
            .starts_with("unknown key `mcp.servers.r.oauth.client_secret`"),
        "{error}"
    );
}

#[test]
fn oauth_grants_secrets_by_name_and_metadata_documents() {
    let table = |body: &str| {
        format!(
            "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x.example.com/mcp\"\n[mcp.servers.r.oauth]\n{body}"
        )
    };
    let config = parse_ok(&table(
        "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_from_env = \"M2M_SECRET\"\nclient_metadata_url = \"https://rho.example.com/client.json\"\n",
    ));
    let server = config.get("r").expect("r").config.as_ref().expect("valid");
    let Transport::StreamableHttp(http) = &server.transport else {
        panic!("http")
    };
    let oauth = http.oauth.as_ref().expect("oauth");
    assert_eq!(oauth.grant, OAuthGrant::ClientCredentials);
    assert_eq!(oauth.client_secret_from_env.as_deref(), Some("M2M_SECRET"));
    assert_eq!(
        oauth.client_metadata_url.as_deref(),
        Some("https://rho.example.com/client.json")
    );
    for (body, says) in [
        (
            "grant = \"client_credentials\"\nclient_id = \"m2m\"\n",
            "needs `client_id` and `client_secret_from_env`",
        ),
        (
            "grant = \"password\"\n",
            "must be \"authorization_code\", \"client_credentials\"",
        ),
        (
            "client_metadata_url = \"http://rho.example.com/c.json\"\n",
            "must be an https URL",
        ),
        (
            "client_secret_from_env = \"A=B\"\n",
            "client_secret_from_env",
        ),
    ] {
        let (error, _) = entry_error(&table(body), "r");
        assert!(error.message.contains(says), "{body}: {error}");
    }
}

#[test]
fn a_redirect_port_is_a_port_and_only_for_the_browser_grant() {
    let table = |body: &str| {
        format!(
            "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x.example.com/mcp\"\n[mcp.servers.r.oauth]\n{body}"
        )
    };
    let config = parse_ok(&table("client_id = \"slack-app\"\nredirect_port = 8765\n"));
    let server = config.get("r").expect("r").config.as_ref().expect("valid");
    let Transport::StreamableHttp(http) = &server.transport else {
        panic!("http")
    };
    assert_eq!(
        http.oauth.as_ref().expect("oauth").redirect_port,
        Some(8765)
    );
    for (body, says) in [
        (
            "redirect_port = 0\n",
            "must be a port from 1 to 65535, not 0",
        ),
        (
            "redirect_port = 70000\n",
            "must be a port from 1 to 65535, not 70000",
        ),
        ("redirect_port = \"8765\"\n", "redirect_port"),
        (
            "grant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret_from_env = \"S\"\nredirect_port = 8765\n",
            "opens no browser: drop it",
        ),
    ] {
        let (error, _) = entry_error(&table(body), "r");
        assert!(error.message.contains(says), "{body}: {error}");
    }
}

#[test]
fn a_client_key_is_named_by_path_or_variable_never_inlined() {
    let table = |body: &str| {
        format!(
            "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x.example.com/mcp\"\n[mcp.servers.r.oauth]\n{body}"
        )
    };
    let oauth_of = |body: &str| {
        let config = parse_ok(&table(body));
        let server = config.get("r").expect("r").config.clone().expect("valid");
        let Transport::StreamableHttp(http) = server.transport else {
            panic!("http")
        };
        http.oauth.expect("oauth")
    };
    let oauth = oauth_of(
        "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_key_file = \"/etc/rho/m2m.pem\"\n",
    );
    assert_eq!(
        oauth.client_key,
        Some(OAuthClientKey::File("/etc/rho/m2m.pem".into()))
    );
    let oauth = oauth_of(
        "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_key_from_env = \"M2M_KEY\"\n",
    );
    assert_eq!(
        oauth.client_key,
        Some(OAuthClientKey::FromEnv("M2M_KEY".into()))
    );
    for (body, says, line) in [
        (
            "client_id = \"a\"\nclient_key_file = \"/k.pem\"\nclient_key_from_env = \"K\"\n",
            "two places for one key",
            7,
        ),
        (
            "client_id = \"a\"\nclient_secret_from_env = \"S\"\nclient_key_from_env = \"K\"\n",
            "two ways to authenticate one client",
            7,
        ),
        (
            "client_key_from_env = \"K\"\n",
            "set `mcp.servers.r.oauth.client_id`",
            5,
        ),
        (
            "client_id = \"a\"\nclient_key_file = \"keys/k.pem\"\n",
            "must be an absolute path",
            6,
        ),
        (
            "client_id = \"a\"\nclient_key_from_env = \"A=B\"\n",
            "client_key_from_env",
            6,
        ),
        (
            "client_id = \"a\"\nclient_key = \"-----BEGIN PRIVATE KEY-----\"\n",
            "a signing key by `client_key_file`",
            6,
        ),
    ] {
        let (error, at) = entry_error(&table(body), "r");
        assert!(error.message.contains(says), "{body}: {error}");
        assert_eq!(at.0, line, "{body}: {error}");
    }
}

#[test]
fn dpop_is_auto_by_default_and_takes_three_words() {
    let table = |body: &str| {
        format!(
            "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x.example.com/mcp\"\n[mcp.servers.r.oauth]\n{body}"
        )
    };
    let dpop_of = |body: &str| {
        let config = parse_ok(&table(body));
        let server = config.get("r").expect("r").config.clone().expect("valid");
        let Transport::StreamableHttp(http) = server.transport else {
            panic!("http")
        };
        http.oauth.expect("oauth").dpop
    };
    use crate::oauth::dpop::DpopMode;
    assert_eq!(dpop_of(""), DpopMode::Auto);
    assert_eq!(dpop_of("dpop = \"auto\"\n"), DpopMode::Auto);
    assert_eq!(dpop_of("dpop = \"required\"\n"), DpopMode::Required);
    assert_eq!(dpop_of("dpop = \"off\"\n"), DpopMode::Off);
    let (error, at) = entry_error(&table("dpop = \"yes\"\n"), "r");
    assert!(
        error
            .message
            .contains("`mcp.servers.r.oauth.dpop` must be \"auto\", \"required\" or \"off\""),
        "{error}"
    );
    assert_eq!(at.0, 5, "{error}");
    let (error, _) = entry_error(&table("dpop = true\n"), "r");
    assert!(
        error.message.contains("mcp.servers.r.oauth.dpop"),
        "{error}"
    );
}

#[test]
fn wrong_types_name_the_key_path_and_expected_type() {
    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nargs = \"-y\"\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (4, 8));
    assert_eq!(
        error.message,
        "`mcp.servers.fs.args` must be an array of strings, found string"
    );

    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nargs = [\"a\", 2]\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (4, 14));
    assert!(error.message.contains("element 1 is integer"), "{error}");

    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nenabled = \"no\"\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (4, 11));
    assert_eq!(
        error.message,
        "`mcp.servers.fs.enabled` must be a boolean, found string"
    );

    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = 7\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (3, 11));
    assert_eq!(
        error.message,
        "`mcp.servers.fs.command` must be a string, found integer"
    );

    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { A = 1 }\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (4, 13));
    assert_eq!(
        error.message,
        "`mcp.servers.fs.env.A` must be a string, found integer"
    );

    let text = "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"x\"\ntools = [\"a\"]\n";
    let (error, at) = entry_error(text, "fs");
    assert_eq!(at, (4, 9));
    assert_eq!(
        error.message,
        "`mcp.servers.fs.tools` must be a table, found array"
    );

    let text = "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\n[mcp.servers.r.oauth]\nscopes = \"read\"\n";
    let (error, at) = entry_error(text, "r");
    assert_eq!(at, (5, 10));
    assert_eq!(
        error.message,
        "`mcp.servers.r.oauth.scopes` must be an array of strings, found string"
    );
}

#[test]
fn missing_required_keys_point_at_the_entry() {
    let text = "[mcp.servers.a]\ncommand = \"x\"\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (1, 1));
    assert_eq!(
        error.message,
        "missing required key `mcp.servers.a.transport` (\"stdio\" or \"streamable_http\")"
    );

    let text = "[mcp.servers]\na = { transport = \"stdio\", command = \"\" }\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (2, 38));
    assert_eq!(error.message, "`mcp.servers.a.command`: must not be empty");

    let text = "[mcp.servers]\nr = { transport = \"streamable_http\" }\n";
    let (error, at) = entry_error(text, "r");
    assert_eq!(at, (2, 5));
    assert!(
        error
            .message
            .starts_with("missing required key `mcp.servers.r.url`"),
        "{error}"
    );
}

#[test]
fn keys_of_the_other_transport_are_refused() {
    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nurl = \"https://x\"\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (4, 1));
    assert_eq!(
        error.message,
        "`url` is for transport = \"streamable_http\"; this server has transport = \"stdio\""
    );

    for key in [
        "command = \"x\"",
        "args = []",
        "cwd = \"/\"",
        "env = {}",
        "env_from_env = {}",
    ] {
        let text = format!(
            "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\n{key}\n"
        );
        let (error, at) = entry_error(&text, "r");
        assert_eq!(at, (4, 1), "{key}");
        assert!(
            error.message.contains("is for transport = \"stdio\""),
            "{error}"
        );
    }
}

#[test]
fn bad_enum_values_list_the_valid_ones() {
    let text = "[mcp.servers.a]\ntransport = \"sse\"\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (2, 13));
    assert_eq!(
        error.message,
        "`mcp.servers.a.transport` must be one of \"stdio\", \"streamable_http\", not \"sse\""
    );

    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nlog_level = \"verbose\"\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (4, 13));
    assert_eq!(
        error.message,
        "`mcp.servers.a.log_level` must be one of \"debug\", \"info\", \"notice\", \"warning\", \"error\", \"critical\", \"alert\", \"emergency\", not \"verbose\""
    );

    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nsampling = \"allow\"\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (4, 12));
    assert_eq!(
        error.message,
        "`mcp.servers.a.sampling` must be one of \"deny\", \"ask\", not \"allow\""
    );
}

#[test]
fn every_log_level_round_trips() {
    for level in LogLevel::ALL {
        let text = format!(
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nlog_level = \"{}\"\n",
            level.as_str()
        );
        assert_eq!(server(&text, "a").log_level, Some(level));
        assert_eq!(LogLevel::from_name(level.as_str()), Some(level));
        assert_eq!(
            serde_json::to_string(&level).ok(),
            Some(format!("\"{}\"", level.as_str()))
        );
    }
    assert!(LogLevel::Debug < LogLevel::Emergency);
}

#[test]
fn environment_names_are_checked() {
    let text =
        "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (4, 9));
    assert_eq!(
        error.message,
        "`mcp.servers.a.env`: \"A=B\" is not a valid variable name: a variable name must not contain `=`"
    );

    for name in ["K\\u001b]0;pwned\\u0007", "K\\u202e", "K\\u009b"] {
        let text = format!(
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv = {{ \"{name}\" = \"1\" }}\n"
        );
        let (error, _) = entry_error(&text, "a");
        assert!(
            error
                .message
                .contains("control or bidirectional-override character"),
            "{error}"
        );
        assert!(
            !error
                .message
                .contains(|c: char| crate::text::terminal::is_control(c)),
            "{error}"
        );
    }

    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv_from_env = { \"\" = \"X\" }\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (4, 18));
    assert!(error.message.contains("must not be empty"), "{error}");

    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nenv_from_env = { TOKEN = \"GH=1\" }\n";
    let (error, at) = entry_error(text, "a");
    assert_eq!(at, (4, 26));
    assert_eq!(
        error.message,
        "`mcp.servers.a.env_from_env.TOKEN`: the value must name an ambient variable: a variable name must not contain `=`"
    );
}

#[test]
fn header_names_and_values_are_checked() {
    let http = |extra: &str| {
        format!("[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://x\"\n{extra}\n")
    };
    let text = http("headers = { \"Bad Header\" = \"v\" }");
    let (error, at) = entry_error(&text, "r");
    assert_eq!(at, (4, 13));
    assert!(
        error
            .message
            .contains("' ' is not allowed in a header name"),
        "{error}"
    );

    let text = http("headers = { X-A = \"v\\r\\nInjected: 1\" }");
    let (error, at) = entry_error(&text, "r");
    assert_eq!(at, (4, 19));
    assert_eq!(
        error.message,
        "`mcp.servers.r.headers.X-A`: a header value must not contain CR, LF or NUL"
    );

    let text = http("headers_from_env = { Authorization = \"\" }");
    let (error, at) = entry_error(&text, "r");
    assert_eq!(at, (4, 38));
    assert!(
        error.message.contains("must name an ambient variable"),
        "{error}"
    );

    let text = http("headers = { X-A = \"1\", x-a = \"2\" }");
    let (error, at) = entry_error(&text, "r");
    assert_eq!(at, position_of(&text, "x-a"));
    assert!(error.message.contains("case-insensitive"), "{error}");
}

fn url_result(url: &str) -> Result<ServerConfig, EntryError> {
    let text = format!("[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"{url}\"\n");
    parse_ok(&text).servers[0].config.clone()
}

#[test]
fn the_url_policy_says_which_rule_a_url_breaks() {
    let check = |raw: &str| check_url_policy(&Url::parse(raw).expect("a URL"));
    assert_eq!(check("https://mcp.example.com/mcp"), Ok(()));
    assert_eq!(check("http://127.0.0.1:9/mcp"), Ok(()));
    assert_eq!(
        check("http://mcp.example.com/mcp"),
        Err(UrlPolicyError::PlainHttp)
    );
    assert_eq!(
        check("https://user:secret@mcp.example.com/mcp"),
        Err(UrlPolicyError::Credentials)
    );
    assert_eq!(
        check("ftp://mcp.example.com/"),
        Err(UrlPolicyError::Scheme("ftp".into()))
    );
    assert_eq!(UrlPolicyError::PlainHttp.to_string(), HTTP_LOOPBACK_ONLY);
}

#[test]
fn non_loopback_http_is_refused_and_loopback_or_https_allowed() {
    for ok in [
        "https://mcp.example.com/mcp",
        "https://10.0.0.1/mcp",
        "http://localhost:8080/mcp",
        "http://LOCALHOST/mcp",
        "http://127.0.0.1:3000/mcp",
        "http://127.0.0.2/mcp",
        "http://[::1]:8080/mcp",
    ] {
        let config = url_result(ok).unwrap_or_else(|e| panic!("{ok}: {e:?}"));
        let Transport::StreamableHttp(http) = &config.transport else {
            panic!("{ok}: not HTTP")
        };
        assert_eq!(http.url.as_str(), Url::parse(ok).expect("url").as_str());
    }
    for bad in [
        "http://mcp.example.com/mcp",
        "http://10.0.0.1/mcp",
        "http://128.0.0.1/mcp",
        "http://[::2]/mcp",
        "http://localhost.example.com/mcp",
    ] {
        let error = url_result(bad).expect_err(bad);
        assert_eq!(error.message, HTTP_LOOPBACK_ONLY);
        assert_eq!((error.line, error.column), (3, 7));
    }
}

#[test]
fn url_must_parse_and_carry_no_credentials_or_other_scheme() {
    let error = url_result("not a url").expect_err("unparseable");
    assert!(error.message.contains("is not a valid URL"), "{error}");
    assert_eq!((error.line, error.column), (3, 7));

    let error = url_result("https://alice:hunter2@mcp.example.com/").expect_err("userinfo");
    assert!(
        error.message.contains("must not contain credentials"),
        "{error}"
    );
    assert!(!error.message.contains("hunter2"), "{error}");
    let error = url_result("https://alice:hunter2@[::1").expect_err("unparseable");
    assert!(!error.message.contains("hunter2"), "{error}");

    let error = url_result("ws://localhost/").expect_err("scheme");
    assert!(error.message.contains("not `ws:`"), "{error}");
}

#[test]
fn timeouts_accept_positive_integers_and_floats_only() {
    let with = |value: &str| {
        format!(
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nstartup_timeout_secs = {value}\n"
        )
    };
    assert_eq!(
        server(&with("0.5"), "a").startup_timeout,
        Duration::from_millis(500)
    );
    assert_eq!(
        server(&with("0x10"), "a").startup_timeout,
        Duration::from_secs(16)
    );
    assert_eq!(server(&with("604800"), "a").startup_timeout, MAX_TIMEOUT);
    for bad in [
        "0",
        "-3",
        "0.0",
        "-1.5",
        "inf",
        "nan",
        "1e-12",
        "604801",
        "1e300",
        "9223372036854775807",
    ] {
        let (error, at) = entry_error(&with(bad), "a");
        assert_eq!(at, (4, 24), "{bad}");
        assert_eq!(
            error.message,
            format!(
                "`mcp.servers.a.startup_timeout_secs` must be a positive number of seconds no greater than 604800, not {bad}"
            )
        );
    }
    let (error, at) = entry_error(&with("\"10\""), "a");
    assert_eq!(at, (4, 24));
    assert_eq!(
        error.message,
        "`mcp.servers.a.startup_timeout_secs` must be a number of seconds, found string"
    );
}

#[test]
fn restart_defaults_to_a_few_attempts_with_backoff_and_zero_turns_it_off() {
    let stdio =
        |extra: &str| format!("[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\n{extra}");
    let default = server(&stdio(""), "a").restart;
    assert_eq!(default, RestartPolicy::default());
    assert_eq!(
        (default.attempts, default.backoff),
        (DEFAULT_RESTART_ATTEMPTS, DEFAULT_RESTART_BACKOFF)
    );
    assert!(default.is_enabled());
    let off = server(&stdio("restart = { attempts = 0 }\n"), "a").restart;
    assert!(!off.is_enabled());
    assert_eq!(
        off.backoff, DEFAULT_RESTART_BACKOFF,
        "a key left out keeps its default"
    );
    let table = server(
        &stdio("[mcp.servers.a.restart]\nattempts = 5\nbackoff_ms = 50\n"),
        "a",
    )
    .restart;
    assert_eq!(
        table,
        RestartPolicy {
            attempts: 5,
            backoff: Duration::from_millis(50),
        }
    );
    let edges = server(
        &stdio("restart = { attempts = 100, backoff_ms = 30000 }\n"),
        "a",
    );
    assert_eq!(edges.restart.attempts, MAX_RESTART_ATTEMPTS);
    assert_eq!(edges.restart.backoff, MAX_RESTART_BACKOFF);
    // A Streamable HTTP server is never restarted; plugin servers get the
    // default like the config's own.
    let http = server(
        "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://example.com/mcp\"\n",
        "r",
    );
    assert_eq!(http.restart, RestartPolicy::NEVER);
}

#[test]
fn a_bad_restart_value_fails_that_server_naming_the_key_and_the_range() {
    let with = |restart: &str| {
        format!("[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nrestart = {restart}\n")
    };
    for (restart, needle, message) in [
        (
            "{ attempts = -1 }",
            "-1",
            "`mcp.servers.a.restart.attempts` must be a whole number of restarts in a row from 0 (never restart) to 100, not -1",
        ),
        (
            "{ attempts = 101 }",
            "101",
            "`mcp.servers.a.restart.attempts` must be a whole number of restarts in a row from 0 (never restart) to 100, not 101",
        ),
        (
            "{ attempts = \"3\" }",
            "\"3\"",
            "`mcp.servers.a.restart.attempts` must be a whole number of restarts in a row from 0 (never restart) to 100, not string",
        ),
        (
            "{ backoff_ms = 1.5 }",
            "1.5",
            "`mcp.servers.a.restart.backoff_ms` must be a whole number of milliseconds from 0 to 30000, not 1.5",
        ),
        (
            "{ backoff_ms = 30001 }",
            "30001",
            "`mcp.servers.a.restart.backoff_ms` must be a whole number of milliseconds from 0 to 30000, not 30001",
        ),
        (
            "{ attempt = 3 }",
            "attempt",
            "unknown key `mcp.servers.a.restart.attempt`; did you mean `attempts`?",
        ),
        (
            "false",
            "false",
            "`mcp.servers.a.restart` must be a table such as `{ attempts = 3, backoff_ms = 500 }` (`attempts = 0` turns restarts off), found boolean",
        ),
    ] {
        let text = with(restart);
        let (error, at) = entry_error(&text, "a");
        assert_eq!(error.message, message, "{restart}");
        assert_eq!(at, position_of(&text, needle), "{restart}");
        assert!(
            error.to_string().contains("server `a`: "),
            "the error names the server: {error}"
        );
    }
    let (error, _) = entry_error(
        "[mcp.servers.r]\ntransport = \"streamable_http\"\nurl = \"https://example.com/mcp\"\nrestart = { attempts = 1 }\n",
        "r",
    );
    assert_eq!(
        error.message,
        "`restart` is for transport = \"stdio\"; this server has transport = \"streamable_http\""
    );
}

#[test]
fn the_first_error_in_the_file_is_reported() {
    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nlog_level = \"loud\"\nsampling = \"maybe\"\n";
    let (_, at) = entry_error(text, "a");
    assert_eq!(at, (4, 13));
    let text = "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"x\"\nsampling = \"maybe\"\nlog_level = \"loud\"\n";
    let (_, at) = entry_error(text, "a");
    assert_eq!(at, (4, 12));
}

#[test]
fn debug_output_hides_literal_env_and_header_values() {
    let shown = format!("{:?}", parse_ok(FULL));
    assert!(!shown.contains("production"), "{shown}");
    assert!(!shown.contains("public-tenant"), "{shown}");
    assert!(shown.contains("NODE_ENV"), "{shown}");
    assert!(shown.contains("X-Tenant"), "{shown}");
}

#[test]
fn line_column_counts_characters_from_one() {
    let text = "ab\nçd=x\n";
    assert_eq!(line_column(text, 0), (1, 1));
    assert_eq!(line_column(text, 3), (2, 1));
    assert_eq!(line_column(text, text.find('d').unwrap_or(0)), (2, 2));
    assert_eq!(line_column(text, 4), (2, 1), "inside a multi-byte char");
    assert_eq!(line_column(text, 999), (3, 1), "clamped to the end");
}

#[test]
fn tool_filter_deny_wins_over_allow() {
    let filter = ToolFilter {
        allow: Some(vec!["a".into(), "b".into()]),
        deny: vec!["b".into()],
    };
    assert!(filter.permits("a"));
    assert!(!filter.permits("b"));
    assert!(!filter.permits("c"));
    assert!(ToolFilter::default().permits("anything"));
}

#[test]
fn serialized_names_are_the_config_spellings() {
    let id = ServerId::new("fs").expect("valid");
    assert_eq!(serde_json::to_string(&id).ok().as_deref(), Some("\"fs\""));
    assert_eq!(
        serde_json::to_string(&SamplingPolicy::Ask).ok().as_deref(),
        Some("\"ask\"")
    );
    assert_eq!(SamplingPolicy::default().as_str(), "deny");
}
