//! The completion scripts `rho completions bash|zsh|fish` prints, in the
//! real shells: Tab after `rho mcp call` offers the config's server
//! identities, then the tools its allow list names and those the names
//! cache holds; after `rho mcp` the visible subcommands and never the
//! hidden `__complete`; a flag's values after it;
//! and a name holding shell syntax (`;`, `$(...)`) goes into the line as
//! one literal word, never run.
//!
//! zsh is driven through its zpty module: an interactive zsh on a
//! pseudo-terminal with compinit and the generated `_rho` on `$fpath`,
//! where Tab runs the real completion widget, then prints what compadd
//! was given and runs the line Tab left with `rho` a function printing its
//! arguments. fish answers `complete -C LINE` with what Tab would offer,
//! and `complete --escape -C` with each candidate as Tab would insert it.
//! Each shell runs with HOME and the XDG directories in the scene, so no
//! rc file, config or cache of the person running the tests is read. A
//! shell that is not installed skips its tests (saying so), except under
//! CI (`CI=true`), where scripts/test installs zsh and fish and a missing
//! one fails.

use std::path::{Path, PathBuf};
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
    // The config changed since: the cached names pass through its filter
    // as it is now, so a tool `tools.deny` (or an allow list without it)
    // keeps out is not offered.
    let mut config = rho_tests::node_server("everything", &rho_tests::everything_js(), &[]);
    config.push_str("[mcp.servers.everything.tools]\ndeny = [\"get-sum\"]\n");
    std::fs::write(home.join(".rho/config.toml"), &config).expect("write the config");
    assert_eq!(
        tab(&s, &["mcp", "call", "everything", "get-s"]),
        ["get-structured-content"]
    );
    config.push_str("allow = [\"echo\", \"get-sum\"]\n");
    std::fs::write(home.join(".rho/config.toml"), &config).expect("write the config");
    assert_eq!(
        tab(&s, &["mcp", "call", "everything", "get-s"]),
        Vec::<String>::new()
    );
    assert_eq!(tab(&s, &["mcp", "call", "everything", "e"]), ["echo"]);
}

/// A config whose server identities hold shell syntax, a blank and a
/// control character; `rho mcp show` and `remove` take such an entry (to
/// say what is wrong with it, or to drop it), so completion offers it
/// too, except the blank and the control character.
const HOSTILE_CONFIG: &str = r#"[mcp.servers.docs]
transport = "stdio"
command = "docs"
[mcp.servers."semi;colon"]
transport = "stdio"
command = "x"
[mcp.servers."$(touch${IFS}pwned)"]
transport = "stdio"
command = "x"
[mcp.servers."`touch${IFS}ticked`"]
transport = "stdio"
command = "x"
[mcp.servers."two words"]
transport = "stdio"
command = "x"
[mcp.servers."esc\u001b[31m"]
transport = "stdio"
command = "x"
"#;

/// A names cache as a hostile server `docs` would leave it: the names
/// are the server's, so they hold whatever it chose.
const HOSTILE_CACHE: &str = r#"{"docs": {
    "tools": ["a&b|c", "$(touch${IFS}pwned-by-tool)", "q'uote\"d", "two words", "esc\u001b]0;x\u0007",
              "--record=x", "--config=y", "-x", "*", "/etc/pass*", "$(touch z)"],
    "prompts": ["p;rompt"],
    "resources": []
}}"#;

/// The server identities of [`HOSTILE_CONFIG`] completion may offer:
/// all but the one with a blank and the one with a control character.
const HOSTILE_IDS: [&str; 4] = [
    "$(touch${IFS}pwned)",
    "`touch${IFS}ticked`",
    "docs",
    "semi;colon",
];

/// The tool names of [`HOSTILE_CACHE`] completion may offer, in order:
/// not those with a blank or a control character, and not those the
/// parser would read as a flag (`--record=x` would overwrite `x`); `*` and
/// `/etc/pass*` go in as themselves, never globbed.
const HOSTILE_TOOLS: [&str; 5] = [
    "$(touch${IFS}pwned-by-tool)",
    "*",
    "/etc/pass*",
    "a&b|c",
    "q'uote\"d",
];

/// Whether `name` (a shell) is installed. When it is not: a failure
/// under CI (`CI=true`, where scripts/test installs zsh and fish), else
/// `false` after saying the test is skipped.
fn have_shell(name: &str) -> bool {
    if Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
    {
        return true;
    }
    let hint =
        format!("{name} is not installed: `apt-get install {name}` (scripts/test installs it)");
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{hint}");
    eprintln!("skipped: {hint}");
    false
}

/// A scene whose `~/.rho/config.toml` is `config` (and whose names cache
/// is `cache`, when given).
fn scene(name: &str, config: &str, cache: Option<&str>) -> Scene {
    let s = Scene::new(RHO, name, Runtime::Smol);
    let rho_dir = s.home().join(".rho");
    std::fs::create_dir_all(&rho_dir).expect("make ~/.rho");
    std::fs::write(rho_dir.join("config.toml"), config).expect("write the config");
    if let Some(cache) = cache {
        std::fs::write(rho_dir.join("completion-names.json"), cache).expect("write the cache");
    }
    s
}

/// `program` run in the scene's directory with its HOME, the XDG
/// directories (config, data, cache, state) and ZDOTDIR inside it, and the
/// directory of the `rho` under test first on PATH, so a line typed as
/// `rho ...` runs it.
fn shell_command(s: &Scene, program: &str) -> Command {
    let xdg = s.dir().join("xdg");
    let rho_dir = Path::new(RHO).parent().expect("rho's directory");
    let path = std::env::join_paths(std::iter::once(rho_dir.to_owned()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let mut command = s.program(program);
    command
        .current_dir(s.dir())
        .env("PATH", path)
        .env("ZDOTDIR", s.home())
        .env("XDG_CONFIG_HOME", xdg.join("config"))
        .env("XDG_DATA_HOME", xdg.join("data"))
        .env("XDG_CACHE_HOME", xdg.join("cache"))
        .env("XDG_STATE_HOME", xdg.join("state"));
    command
}

/// What one Tab did to a line: the candidates offered (as words, sorted)
/// and, for each line Tab produced, the arguments `rho` got when it was
/// run (zsh: the one line Tab left; fish and bash: the line with each
/// candidate put in, as the shell puts it in).
#[derive(Debug, Default)]
struct Tab {
    offered: Vec<String>,
    runs: Vec<Vec<String>>,
}

/// Reads the marker lines a driver printed (`=RHO=line=`, `=RHO=match=`,
/// `=RHO=run=`, `=RHO=arg=`; anything before the marker on a line, such
/// as a terminal's escape sequences, is dropped) into one [`Tab`] per
/// line, in the order the lines were given.
fn read_tabs(out: &str) -> Vec<Tab> {
    let mut tabs: Vec<Tab> = Vec::new();
    for line in out.lines() {
        let Some(at) = line.find("=RHO=") else {
            continue;
        };
        let marked = line[at + "=RHO=".len()..].trim_end_matches('\r');
        let Some((kind, value)) = marked.split_once('=') else {
            continue;
        };
        match kind {
            "line" => tabs.push(Tab::default()),
            "match" => tabs
                .last_mut()
                .expect("a line")
                .offered
                .push(value.to_owned()),
            "run" => tabs.last_mut().expect("a line").runs.push(Vec::new()),
            "arg" => tabs
                .last_mut()
                .and_then(|t| t.runs.last_mut())
                .expect("a run")
                .push(value.to_owned()),
            _ => {}
        }
    }
    for tab in &mut tabs {
        tab.offered.sort();
    }
    tabs
}

/// Runs `command` (a driver under `timeout`, which bounds one whose shell
/// never prints the marker it waits for) with `lines` as its arguments;
/// what Tab did after each, or a failure with what it printed.
fn drive(mut command: Command, lines: &[&str]) -> Vec<Tab> {
    command.args(lines);
    let out = command.output().expect("run the shell");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the driver failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let tabs = read_tabs(&stdout);
    assert_eq!(tabs.len(), lines.len(), "{stdout}");
    tabs
}

/// The zpty child's setup (sourced): compinit with the generated `_rho`
/// on `$fpath` (or, with RHO_TEST_SOURCE, the script sourced after
/// compinit), a compadd that records the matches it adds (`-A`: after
/// zsh's own matching, in the form it inserts), and Tab bound to a widget
/// that completes, prints those matches unquoted, and runs the line Tab
/// left in a subshell where `rho` is a function printing its arguments.
const ZSH_RC: &str = r#"PS1='' RPS1='' PS2=''
unsetopt beep autolist
LISTMAX=100000
fpath=("$RHO_TEST_SITE" $fpath)
autoload -Uz compinit && compinit -u -D
[[ -n $RHO_TEST_SOURCE ]] && source "$RHO_TEST_SOURCE"
typeset -ga __rho_test_got
compadd() {
    if (( ${argv[(I)-[OAD]]} )); then builtin compadd "$@"; return; fi
    local -a __rho_test_now
    builtin compadd -A __rho_test_now "$@"
    __rho_test_got+=("${__rho_test_now[@]}")
    builtin compadd "$@"
}
__rho_test_tab() {
    __rho_test_got=()
    zle complete-word
    zle -I
    local w
    for w in "${__rho_test_got[@]}"; do print -r -- "=RHO=match=${(Q)w}"; done
    print -r -- "=RHO=run="
    ( rho() { local a; for a; do print -r -- "=RHO=arg=$a"; done }; eval "$BUFFER" )
    print -r -- "=RHO=done="
    BUFFER=
}
zle -N __rho_test_tab
bindkey '^I' __rho_test_tab
print -r -- '=RHO=ready='
"#;

/// The zsh driver: starts an interactive `zsh -f` on a pseudo-terminal
/// (zpty), sources [`ZSH_RC`] in it, then types each argument followed
/// by Tab and waits for the widget's closing marker. Every wait is for
/// output, none for time.
const ZSH_DRIVER: &str = r#"zmodload zsh/zpty || exit 3
zpty rho zsh -f -i
zpty -w rho "source ${(q)RHO_TEST_RC}"
zpty -r rho out '*=RHO=ready=*' || exit 4
for line in "$@"; do
    print -r -- "=RHO=line=$line"
    zpty -w -n rho "$line"$'\t'
    zpty -r rho out '*=RHO=done=*' || exit 4
    print -rl -- ${(M)${(f)out}:#*=RHO=*}
done
zpty -d rho
"#;

/// Tab after each of `lines` in a real interactive zsh with the script
/// `rho completions zsh` prints installed as `_rho` on `$fpath`
/// (`sourced`: sourced after compinit instead).
fn zsh_tabs(s: &Scene, sourced: bool, lines: &[&str]) -> Vec<Tab> {
    let script = s.rho(&["completions", "zsh"]).expect_code(0).all();
    let site = s.dir().join("zsh-site");
    std::fs::create_dir_all(&site).expect("make the fpath directory");
    let source = if sourced {
        s.write("rho-completion.zsh", &script)
    } else {
        std::fs::write(site.join("_rho"), &script).expect("write _rho");
        PathBuf::new()
    };
    let rc = s.write("rc.zsh", ZSH_RC);
    let driver = s.write("driver.zsh", ZSH_DRIVER);
    let mut command = shell_command(s, "timeout");
    command
        .args(["-k", "5", "60", "zsh", "-f"])
        .arg(driver)
        .env("RHO_TEST_RC", rc)
        .env("RHO_TEST_SITE", site)
        .env("RHO_TEST_SOURCE", source);
    drive(command, lines)
}

/// The fish driver: for each argument, what Tab offers
/// (`complete -C`), then each candidate as Tab puts it in (`complete
/// --escape -C`) in place of the line's last word, the line run with
/// `rho` a function printing its arguments.
const FISH_DRIVER: &str = r#"for line in $argv
    echo "=RHO=line=$line"
    for c in (complete --do-complete=$line)
        echo "=RHO=match="(string split -m1 \t -- $c)[1]
    end
    set -l escaped (complete --escape --do-complete=$line)
    set -l head (string replace -r '[^ ]*$' '' -- $line)
    function rho
        for a in $argv
            echo "=RHO=arg=$a"
        end
    end
    for c in $escaped
        echo "=RHO=run="
        eval $head(string split -m1 \t -- $c)[1]
    end
    functions -e rho
end
"#;

/// Tab after each of `lines` in a real fish with the script `rho
/// completions fish` prints installed where fish autoloads it
/// (`$XDG_CONFIG_HOME/fish/completions/rho.fish`).
fn fish_tabs(s: &Scene, lines: &[&str]) -> Vec<Tab> {
    let script = s.rho(&["completions", "fish"]).expect_code(0).all();
    let completions = s.dir().join("xdg/config/fish/completions");
    std::fs::create_dir_all(&completions).expect("make fish's completions directory");
    std::fs::write(completions.join("rho.fish"), script).expect("write rho.fish");
    let driver = s.write("driver.fish", FISH_DRIVER);
    let mut command = shell_command(s, "timeout");
    command.args(["-k", "5", "60", "fish"]).arg(driver);
    drive(command, lines)
}

/// The config of the shells' tests: server-everything (whose names
/// `list --connect` caches), and `docs`, whose allow list names tools.
fn listed_scene(name: &str) -> Scene {
    let mut config = rho_tests::node_server("everything", &rho_tests::everything_js(), &[]);
    let s = scene(name, &config, None);
    s.rho(&["mcp", "list", "--connect"]).expect_code(0);
    // Added after the listing: `docs` is no program, so it cannot start.
    config.push_str(
        "[mcp.servers.docs]\ntransport = \"stdio\"\ncommand = \"docs\"\n\
         [mcp.servers.docs.tools]\nallow = [\"search\", \"fetch-page\"]\n",
    );
    std::fs::write(s.home().join(".rho/config.toml"), config).expect("write the config");
    s
}

/// The words offered for each case of the shells' tests, checked the
/// same for zsh and fish: `tabs` answers [`LISTED_LINES`] in order.
const LISTED_LINES: &[&str] = &[
    "rho mcp ",
    "rho ",
    "rho mcp call ",
    "rho mcp call everything ",
    "rho mcp call everything get-s",
    "rho mcp call docs ",
    "rho mcp prompt everything ",
    "rho mcp prompt everything simple",
    "rho mcp call --",
    "rho mcp call everything echo --j",
    "rho --runtime ",
    "rho --config 'my dir/rho.toml' mcp show ",
    "rho --config my",
];

fn check_listed(shell: &str, s: &Scene, tabs: &[Tab]) {
    for (line, tab) in LISTED_LINES.iter().zip(tabs) {
        eprintln!("{shell}: {line:?} offered {:?}", tab.offered);
    }
    let [
        mcp,
        top,
        call,
        tools,
        get_s,
        allowed,
        prompts,
        simple,
        flags,
        json,
        runtime,
        quoted_config,
        path,
    ] = tabs
    else {
        panic!("{} lines answered", tabs.len());
    };
    for name in [
        "list", "show", "call", "prompt", "read", "add-json", "login",
    ] {
        assert!(mcp.offered.iter().any(|c| c == name), "{name}: {mcp:?}");
    }
    assert!(!mcp.offered.iter().any(|c| c.starts_with("__")), "{mcp:?}");
    assert!(top.offered.iter().any(|c| c == "mcp"), "{top:?}");
    assert!(!top.offered.iter().any(|c| c.starts_with("__")), "{top:?}");
    assert_eq!(call.offered, ["docs", "everything"]);
    let cached = s.home().join(".rho/completion-names.json");
    let cached: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&cached).expect("the names cache")).expect("JSON");
    let mut everything_tools: Vec<String> = cached["everything"]["tools"]
        .as_array()
        .expect("everything's tools cached")
        .iter()
        .map(|t| t.as_str().expect("a name").to_owned())
        .collect();
    everything_tools.sort();
    assert!(
        everything_tools.iter().any(|t| t == "echo"),
        "{everything_tools:?}"
    );
    assert_eq!(tools.offered, everything_tools);
    assert_eq!(get_s.offered, ["get-structured-content", "get-sum"]);
    assert_eq!(allowed.offered, ["fetch-page", "search"]);
    assert!(
        prompts.offered.iter().any(|p| p == "simple-prompt"),
        "{prompts:?}"
    );
    assert!(
        !prompts.offered.iter().any(|p| p == "echo"),
        "tools are not prompts: {prompts:?}"
    );
    assert_eq!(simple.offered, ["simple-prompt"]);
    for flag in ["--json", "--config", "--timeout", "--help"] {
        assert!(flags.offered.iter().any(|c| c == flag), "{flag}: {flags:?}");
    }
    assert!(
        flags.offered.iter().all(|c| c.starts_with("--")),
        "{flags:?}"
    );
    assert_eq!(json.offered, ["--json"]);
    assert_eq!(runtime.offered, ["blocking", "smol"]);
    assert_eq!(quoted_config.offered, ["alpha", "beta"]);
    // A path flag's value is the shell's own file completion.
    // (zsh's compadd holds a directory's `/` apart from its name.)
    let paths: Vec<&str> = path
        .offered
        .iter()
        .map(|p| p.trim_end_matches('/'))
        .collect();
    assert_eq!(paths, ["my dir"]);
}

/// A config at a path with a blank, for the `--config '...'` case.
fn write_spaced_config(s: &Scene) {
    let dir = s.dir().join("my dir");
    std::fs::create_dir_all(&dir).expect("make the config's directory");
    std::fs::write(
        dir.join("rho.toml"),
        "[mcp.servers.alpha]\ntransport = \"stdio\"\ncommand = \"a\"\n\
         [mcp.servers.beta]\ntransport = \"stdio\"\ncommand = \"b\"\n",
    )
    .expect("write the config");
}

/// In a real zsh with `_rho` on `$fpath`: the subcommands of `rho mcp`
/// (no hidden one), server identities after `call`, the cached tools and
/// prompts of server-everything after `call everything` and `prompt
/// everything`, an allow list's tools, flags, a flag's values, the
/// server identities of a `--config` path quoted on the line, and files
/// for a path flag.
#[test]
fn zsh_completes_commands_server_ids_tools_prompts_and_flags() {
    if !have_shell("zsh") {
        return;
    }
    let s = listed_scene("completions-zsh");
    write_spaced_config(&s);
    let tabs = zsh_tabs(&s, false, LISTED_LINES);
    check_listed("zsh", &s, &tabs);
    // A unique match is put in the line: `rho` then gets it whole.
    assert_eq!(
        tabs[7].runs,
        [["mcp", "prompt", "everything", "simple-prompt"]]
    );
}

/// The zsh script sourced after compinit (`source <(rho completions
/// zsh)`) rather than autoloaded from `$fpath` completes the same way.
#[test]
fn zsh_completes_with_the_script_sourced_after_compinit() {
    if !have_shell("zsh") {
        return;
    }
    let s = scene(
        "completions-zsh-sourced",
        "[mcp.servers.alpha]\ntransport = \"stdio\"\ncommand = \"a\"\n\
         [mcp.servers.beta]\ntransport = \"stdio\"\ncommand = \"b\"\n",
        None,
    );
    let tabs = zsh_tabs(&s, true, &["rho mcp call ", "rho mcp show b"]);
    eprintln!("zsh (sourced): {tabs:?}");
    assert_eq!(tabs[0].offered, ["alpha", "beta"]);
    assert_eq!(tabs[1].runs, [["mcp", "show", "beta"]]);
}

/// In a real fish with rho.fish where fish autoloads it: the same cases
/// as zsh's.
#[test]
fn fish_completes_commands_server_ids_tools_prompts_and_flags() {
    if !have_shell("fish") {
        return;
    }
    let s = listed_scene("completions-fish");
    write_spaced_config(&s);
    let tabs = fish_tabs(&s, LISTED_LINES);
    check_listed("fish", &s, &tabs);
    assert_eq!(
        tabs[7].runs,
        [["mcp", "prompt", "everything", "simple-prompt"]]
    );
}

/// Asserts that no hostile name ran: none of the files their `$(...)`
/// and backticks would touch is in the scene's directory.
fn nothing_ran(s: &Scene) {
    for name in ["pwned", "ticked", "pwned-by-tool", "z"] {
        assert!(
            !s.dir().join(name).exists(),
            "a completed name ran as a command: {name} exists"
        );
    }
}

/// In a real zsh: the identities of a config with shell syntax in them are
/// offered (not the one with a blank or a control character), and Tab
/// puts each one, and a hostile server's tool and prompt names, into the
/// line quoted, so the command gets it as one literal word and nothing
/// runs.
#[test]
fn zsh_puts_a_hostile_server_id_or_tool_name_in_as_one_literal_word() {
    if !have_shell("zsh") {
        return;
    }
    let s = scene(
        "completions-zsh-hostile",
        HOSTILE_CONFIG,
        Some(HOSTILE_CACHE),
    );
    let lines = [
        "rho mcp call ",
        "rho mcp call sem",
        "rho mcp call \\$",
        "rho mcp call \\`",
        "rho mcp call docs ",
        "rho mcp call docs a",
        "rho mcp call docs \\$",
        "rho mcp call docs q",
        "rho mcp prompt docs ",
    ];
    let tabs = zsh_tabs(&s, false, &lines);
    for (line, tab) in lines.iter().zip(&tabs) {
        eprintln!(
            "zsh: {line:?} offered {:?}, ran {:?}",
            tab.offered, tab.runs
        );
    }
    assert_eq!(tabs[0].offered, HOSTILE_IDS);
    let ran = |i: usize, words: &[&str]| {
        assert_eq!(tabs[i].runs, [words], "{}", lines[i]);
    };
    ran(1, &["mcp", "call", "semi;colon"]);
    ran(2, &["mcp", "call", "$(touch${IFS}pwned)"]);
    ran(3, &["mcp", "call", "`touch${IFS}ticked`"]);
    assert_eq!(tabs[4].offered, HOSTILE_TOOLS);
    ran(5, &["mcp", "call", "docs", "a&b|c"]);
    ran(6, &["mcp", "call", "docs", "$(touch${IFS}pwned-by-tool)"]);
    ran(7, &["mcp", "call", "docs", "q'uote\"d"]);
    assert_eq!(tabs[8].offered, ["p;rompt"]);
    ran(8, &["mcp", "prompt", "docs", "p;rompt"]);
    nothing_ran(&s);
}

/// In a real fish: the same hostile names, each candidate run as fish
/// puts it into the line.
#[test]
fn fish_puts_a_hostile_server_id_or_tool_name_in_as_one_literal_word() {
    if !have_shell("fish") {
        return;
    }
    let s = scene(
        "completions-fish-hostile",
        HOSTILE_CONFIG,
        Some(HOSTILE_CACHE),
    );
    let lines = [
        "rho mcp call ",
        "rho mcp call semi\\;",
        "rho mcp call docs ",
        "rho mcp prompt docs ",
    ];
    let tabs = fish_tabs(&s, &lines);
    for (line, tab) in lines.iter().zip(&tabs) {
        eprintln!(
            "fish: {line:?} offered {:?}, ran {:?}",
            tab.offered, tab.runs
        );
    }
    let ran_each = |tab: &Tab, head: &[&str]| -> Vec<String> {
        let mut got: Vec<String> = tab
            .runs
            .iter()
            .map(|run| {
                assert_eq!(run.len(), head.len() + 1, "one word put in: {run:?}");
                assert_eq!(run[..head.len()], *head, "{run:?}");
                run[head.len()].clone()
            })
            .collect();
        got.sort();
        got
    };
    assert_eq!(tabs[0].offered, HOSTILE_IDS);
    assert_eq!(ran_each(&tabs[0], &["mcp", "call"]), HOSTILE_IDS);
    assert_eq!(tabs[1].offered, ["semi;colon"]);
    assert_eq!(ran_each(&tabs[1], &["mcp", "call"]), ["semi;colon"]);
    assert_eq!(tabs[2].offered, HOSTILE_TOOLS);
    assert_eq!(ran_each(&tabs[2], &["mcp", "call", "docs"]), HOSTILE_TOOLS);
    assert_eq!(tabs[3].offered, ["p;rompt"]);
    assert_eq!(ran_each(&tabs[3], &["mcp", "prompt", "docs"]), ["p;rompt"]);
    nothing_ran(&s);
}

/// In a real bash: COMPREPLY holds each hostile name quoted, as bash puts
/// it into the line as it is; the line run with each gives `rho` the
/// name as one literal word, and nothing runs.
#[test]
fn bash_puts_a_hostile_server_id_or_tool_name_in_as_one_literal_word() {
    let s = scene(
        "completions-bash-hostile",
        HOSTILE_CONFIG,
        Some(HOSTILE_CACHE),
    );
    let cases: [(&str, &[&str]); 3] = [
        ("rho mcp call ", &HOSTILE_IDS),
        ("rho mcp call docs ", &HOSTILE_TOOLS),
        ("rho mcp prompt docs ", &["p;rompt"]),
    ];
    for (line, names) in cases {
        let script = format!(
            "source <(rho completions bash)\n\
             COMP_LINE='{line}'\nCOMP_POINT=${{#COMP_LINE}}\n_rho\n\
             rho() {{ printf '=RHO=arg=%s\\n' \"$@\"; }}\n\
             echo =RHO=line=\n\
             for reply in \"${{COMPREPLY[@]}}\"; do echo =RHO=run=; eval \"$COMP_LINE$reply\"; done\n"
        );
        let out = shell_command(&s, "bash")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("run bash");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let tabs = read_tabs(&stdout);
        let [tab] = &tabs[..] else {
            panic!("{stdout}");
        };
        eprintln!("bash: {line:?} ran {:?}", tab.runs);
        let head: Vec<&str> = line.split_whitespace().skip(1).collect();
        let mut got: Vec<&str> = tab
            .runs
            .iter()
            .map(|run| {
                assert_eq!(run.len(), head.len() + 1, "one word put in: {run:?}");
                assert_eq!(run[..head.len()], head[..], "{run:?}");
                run[head.len()].as_str()
            })
            .collect();
        got.sort();
        assert_eq!(got, names, "{line}");
    }
    nothing_ran(&s);
}
