//! `rho completions bash` in a real bash: Tab after `rho mcp call` offers
//! the config's server identities, then the tools its allow list names;
//! after `rho mcp` the visible subcommands and never the hidden
//! `conformance-client`; a flag's values after it.

use std::process::Command;

use rho_tests::CliRuntime as Runtime;
use rho_tests::scene::Scene;

/// The binary under test.
const RHO: &str = env!("CARGO_BIN_EXE_rho");

/// What bash's `_rho` puts in COMPREPLY for `words`, the last being the
/// word under the cursor, with the scene's HOME.
fn tab(s: &Scene, words: &[&str]) -> Vec<String> {
    // A last word of "" is a line ending in a blank.
    let line: Vec<&str> = std::iter::once(RHO).chain(words.iter().copied()).collect();
    let line = line.join(" ");
    let script = format!(
        "source <('{RHO}' completions bash)\nCOMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\n_rho\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("HOME", s.home())
        .output()
        .expect("run bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_server_ids_tools_and_commands_from_the_config() {
    let s = Scene::new(RHO, "completions", Runtime::Smol);
    let home = s.home().to_owned();
    std::fs::create_dir_all(home.join(".rho")).expect("make ~/.rho");
    std::fs::write(
        home.join(".rho/config.toml"),
        "[mcp.servers.everything]\ntransport = \"stdio\"\ncommand = \"node\"\n\
         [mcp.servers.docs]\ntransport = \"stdio\"\ncommand = \"docs\"\n\
         [mcp.servers.docs.tools]\nallow = [\"search\", \"fetch-page\"]\n",
    )
    .expect("write the config");

    assert_eq!(tab(&s, &["mcp", "call", ""]), ["docs", "everything"]);
    assert_eq!(tab(&s, &["mcp", "show", "d"]), ["docs"]);
    assert_eq!(
        tab(&s, &["mcp", "call", "docs", ""]),
        ["search", "fetch-page"]
    );
    let commands = tab(&s, &["mcp", ""]);
    assert!(commands.iter().any(|c| c == "call"), "{commands:?}");
    assert!(
        !commands.iter().any(|c| c.contains("conformance")),
        "{commands:?}"
    );
    assert_eq!(tab(&s, &["--runtime", "b"]), ["blocking"]);
    let flags = tab(&s, &["mcp", "call", "everything", "echo", "--j"]);
    assert_eq!(flags, ["--json"]);
}

/// After `list --connect` has seen server-everything, Tab offers its
/// tools after `call everything`, its prompts after `prompt everything`
/// and its resources after `read everything`, from the names cache; no
/// server starts for the Tab.
#[test]
fn bash_completes_tools_prompts_and_resources_from_the_last_listing() {
    let s = Scene::new(RHO, "completions-cache", Runtime::Smol);
    let home = s.home().to_owned();
    std::fs::create_dir_all(home.join(".rho")).expect("make ~/.rho");
    std::fs::write(
        home.join(".rho/config.toml"),
        rho_tests::node_server("everything", &rho_tests::everything_js(), &[]),
    )
    .expect("write the config");
    assert!(
        tab(&s, &["mcp", "call", "everything", "get-s"]).is_empty(),
        "nothing cached yet"
    );
    s.rho(&["mcp", "list", "--connect"]).expect_code(0);
    assert_eq!(
        tab(&s, &["mcp", "call", "everything", "get-s"]),
        ["get-structured-content", "get-sum"]
    );
    assert_eq!(
        tab(&s, &["mcp", "prompt", "everything", "simple"]),
        ["simple-prompt"]
    );
    assert_eq!(
        tab(
            &s,
            &[
                "mcp",
                "read",
                "everything",
                "demo://resource/static/document/arch"
            ]
        ),
        // bash puts back only what follows the word's last `:`.
        ["//resource/static/document/architecture.md"]
    );
}
