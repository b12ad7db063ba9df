//! `rho mcp add`, `remove`, `enable` and `disable`: editing the selected
//! config file's servers from the shell (see `crate::config_edit` for how
//! the file is kept as it was around the edit, checked and written).
//!
//! `add` refuses an identity the file already has unless `--force`, which
//! replaces that entry in place. `remove`, `enable` and `disable` of an
//! identity the file lacks are usage errors listing the ones it has.
//!
//! `--env` and `--header` values are written into the file as given, since
//! the person asked for exactly that; when one looks like a secret (see
//! [`looks_secret`]) a note suggests `--env-from-env` / `--header-from-env`,
//! which write only the name of an environment variable.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::config_edit::{ConfigDocument, NewEntry, NewOAuth, NewTransport, Toggle};
use crate::{Failure, unknown_server, write_stdout};

/// `rho mcp add`.
#[derive(Args, Debug)]
#[command(
    override_usage = "rho mcp add [OPTIONS] <ID> -- <COMMAND> [ARGS]...\n       rho mcp add [OPTIONS] <ID> --url <URL>\n       rho mcp add [OPTIONS] --transport http <ID> <URL>\n       rho mcp add [OPTIONS] <ID> <URL>",
    after_help = "The command after `--` is run directly, never through a shell. Values given with \
--env and --header are written into the config file as they are: for secrets use --env-from-env \
KEY=VAR and --header-from-env NAME=VAR, which store only the name of an environment variable \
(env_from_env, headers_from_env). The config file (--config, else ~/.rho/config.toml) and its \
directory are created when missing."
)]
pub(crate) struct AddArgs {
    /// The new server's identity (ASCII letters, digits, `-` and `_`).
    id: String,
    /// The server's URL (`https://...`), or a stdio command and its
    /// arguments when none of them starts with `-` (else put them after
    /// `--`), as `claude mcp add` takes them.
    #[arg(value_name = "URL | COMMAND [ARGS]")]
    target: Vec<String>,
    /// A stdio server's command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
    /// A Streamable HTTP server's URL (https, or http on loopback).
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    url: Option<String>,
    /// An environment variable for a stdio server, written as is (env).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// A stdio server's variable KEY taken from rho's own environment
    /// variable VAR when it starts (env_from_env).
    #[arg(long = "env-from-env", value_name = "KEY=VAR")]
    env_from_env: Vec<String>,
    /// The working directory of a stdio server.
    #[arg(long, value_name = "DIR")]
    cwd: Option<String>,
    /// An HTTP header for a URL server, written as is (headers); `NAME:
    /// VALUE` works too.
    #[arg(long = "header", short = 'H', value_name = "NAME=VALUE")]
    header: Vec<String>,
    /// A URL server's header NAME taken from the environment variable VAR
    /// (headers_from_env).
    #[arg(long = "header-from-env", value_name = "NAME=VAR")]
    header_from_env: Vec<String>,
    /// A URL server that authorizes with OAuth: writes its `oauth` table
    /// (empty without the flags below: discovery, dynamic registration and
    /// a browser login); log in with `rho mcp login ID`.
    #[arg(long)]
    oauth: bool,
    /// With OAuth (implies --oauth): a client issued out of band
    /// (`oauth.client_id`), for authorization servers without dynamic
    /// registration.
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// With OAuth: a file holding the client's secret
    /// (`oauth.client_secret_file`); only the path is written.
    #[arg(long, value_name = "PATH", conflicts_with = "client_secret_from_env")]
    client_secret_file: Option<String>,
    /// With OAuth: an environment variable holding the client's secret
    /// (`oauth.client_secret_from_env`); only its name is written.
    #[arg(long, value_name = "VAR")]
    client_secret_from_env: Option<String>,
    /// With OAuth: how tokens are obtained (`oauth.grant`):
    /// authorization_code (a browser, the default), client_credentials,
    /// jwt_bearer or identity_assertion; the last two need keys of their
    /// own (see docs/configuration.md).
    #[arg(long, value_name = "GRANT")]
    grant: Option<String>,
    /// With OAuth: a scope to ask for (`oauth.scopes`); repeat for more.
    #[arg(long = "oauth-scope", value_name = "SCOPE")]
    oauth_scope: Vec<String>,
    /// Refused, saying what to type: rho writes no secret into its config.
    #[arg(long, hide = true, num_args = 0..=1, value_name = "SECRET")]
    client_secret: Option<Option<String>>,
    /// With OAuth: the loopback port of the browser login's callback
    /// (`oauth.redirect_port`), for a client registered out of band with
    /// the redirect URI `http://127.0.0.1:PORT/callback`.
    #[arg(long, value_name = "PORT")]
    callback_port: Option<u16>,
    /// Write the entry with `enabled = false`.
    #[arg(long)]
    disabled: bool,
    /// Replace an entry of the same identity instead of refusing.
    #[arg(long)]
    force: bool,
    /// `stdio`, or `http` (also `streamable-http`, and `sse`, which is
    /// added as Streamable HTTP), as `claude mcp add` takes it; rho also
    /// tells them apart by --url or a command.
    #[arg(long, short = 't', value_name = "TRANSPORT")]
    transport: Option<String>,
    /// `user` is rho's one config file (--config, else
    /// ~/.rho/config.toml); there is no per-project or local scope.
    #[arg(long, short = 's', value_name = "SCOPE")]
    scope: Option<String>,
}

/// The `oauth` table the OAuth flags ask for: `None` with none of them.
/// `--client-secret`, which `claude mcp add` takes, is refused saying
/// what to type instead.
fn oauth_flags(args: &AddArgs) -> Result<Option<NewOAuth>, Failure> {
    if args.client_secret.is_some() {
        return Err(Failure::Usage(
            "rho writes no secret into its config file: put the client secret in a file only you \
             can read and pass --client-secret-file PATH, or keep it in an environment variable \
             and pass --client-secret-from-env VAR"
                .into(),
        ));
    }
    if let Some(grant) = &args.grant
        && !matches!(
            grant.as_str(),
            "authorization_code" | "client_credentials" | "jwt_bearer" | "identity_assertion"
        )
    {
        return Err(Failure::Usage(format!(
            "--grant takes authorization_code, client_credentials, jwt_bearer or \
             identity_assertion, not `{}`",
            rho_proto_core::text::terminal::sanitize_line(grant)
        )));
    }
    let oauth = NewOAuth {
        grant: args.grant.clone(),
        client_id: args.client_id.clone(),
        // The config reads only absolute paths; a relative one is meant
        // from where the command runs.
        client_secret_file: args
            .client_secret_file
            .as_ref()
            .map(|path| {
                std::path::absolute(path)
                    .map(|p| p.display().to_string())
                    .map_err(|e| Failure::Usage(format!("--client-secret-file {path}: {e}")))
            })
            .transpose()?,
        client_secret_from_env: args.client_secret_from_env.clone(),
        scopes: args.oauth_scope.clone(),
        redirect_port: args.callback_port,
    };
    Ok((args.oauth || oauth != NewOAuth::default()).then_some(oauth))
}

/// The transport `--transport` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TransportFlag {
    Stdio,
    Http,
}

/// Reads `--transport` (its common spellings) and `--scope`; anything
/// else is refused saying exactly what to type.
fn claude_style_flags(args: &AddArgs) -> Result<Option<TransportFlag>, Failure> {
    match args.scope.as_deref() {
        None | Some("user") => {}
        Some(other) => {
            return Err(Failure::Usage(format!(
                "rho has no `{other}` scope: it keeps every server in one config file, \
                 ~/.rho/config.toml or the one --config names; drop --scope, or write to \
                 another file with `rho --config PATH mcp add ...`"
            )));
        }
    }
    let transport = match args.transport.as_deref() {
        None => None,
        Some("stdio") => Some(TransportFlag::Stdio),
        Some("http" | "streamable-http" | "streamable_http" | "streamableHttp" | "sse") => {
            Some(TransportFlag::Http)
        }
        Some(other) => {
            return Err(Failure::Usage(format!(
                "--transport takes stdio or http (streamable-http and sse are read as http), \
                 not `{other}`"
            )));
        }
    };
    if args.transport.as_deref() == Some("sse") {
        eprintln!(
            "note: rho speaks Streamable HTTP only: the server is added as streamable_http, which \
             works only if it serves that too (often at /mcp rather than /sse)"
        );
    }
    Ok(transport)
}

/// Whether `word` is a URL rather than a command.
fn looks_like_url(word: &str) -> bool {
    word.starts_with("https://") || word.starts_with("http://")
}

/// `rho mcp remove`, `enable`, `disable`.
#[derive(Args, Debug)]
pub(crate) struct EntryArgs {
    /// The server identity.
    id: String,
}

/// `rho mcp add`.
pub(crate) fn add(config: Option<PathBuf>, args: &AddArgs) -> Result<ExitCode, Failure> {
    let flag = claude_style_flags(args)?;
    // Claude's spellings: a URL or a command as words after the id.
    let (url, command): (Option<&String>, &[String]) = match (
        &args.url,
        args.command.as_slice(),
        args.target.as_slice(),
    ) {
        (url, command, []) => (url.as_ref(), command),
        (None, [], [one]) if looks_like_url(one) => (Some(one), &[]),
        (None, [], words) if flag != Some(TransportFlag::Http) && !looks_like_url(&words[0]) => {
            (None, words)
        }
        (None, [], [one, ..]) if flag == Some(TransportFlag::Http) => {
            return Err(Failure::Usage(format!(
                "--transport http takes one URL after the id, not `{one}`: rho mcp add {} --transport http https://host/mcp",
                args.id
            )));
        }
        _ => {
            return Err(Failure::Usage(format!(
                "give the server once: a URL (rho mcp add {id} https://host/mcp) or a command after `--` (rho mcp add {id} -- npx -y some-server)",
                id = args.id
            )));
        }
    };
    match (flag, url, command.is_empty()) {
        (Some(TransportFlag::Http), None, false) => {
            return Err(Failure::Usage(format!(
                "--transport http needs a URL, not a command: rho mcp add {} --transport http https://host/mcp",
                args.id
            )));
        }
        (Some(TransportFlag::Stdio), Some(_), _) => {
            return Err(Failure::Usage(format!(
                "--transport stdio needs a command after `--`, not a URL: rho mcp add {} -- npx -y some-server",
                args.id
            )));
        }
        _ => {}
    }
    let transport = match (url, command.split_first()) {
        (Some(url), None) => {
            if !args.env.is_empty() || !args.env_from_env.is_empty() || args.cwd.is_some() {
                return Err(Failure::Usage(
                    "--env, --env-from-env and --cwd are for stdio servers (a command after `--`), not --url".into(),
                ));
            }
            NewTransport::Http {
                url: url.clone(),
                headers: pairs("--header", &args.header, true).map_err(Failure::Usage)?,
                headers_from_env: pairs("--header-from-env", &args.header_from_env, false)
                    .map_err(Failure::Usage)?,
                oauth: oauth_flags(args)?,
            }
        }
        (None, Some((command, rest))) => {
            if !args.header.is_empty()
                || !args.header_from_env.is_empty()
                || oauth_flags(args)?.is_some()
            {
                return Err(Failure::Usage(
                    "--header, --header-from-env, --oauth and the OAuth client flags are for --url servers, not stdio ones"
                        .into(),
                ));
            }
            NewTransport::Stdio {
                command: command.clone(),
                args: rest.to_vec(),
                cwd: args.cwd.clone(),
                env: pairs("--env", &args.env, false).map_err(Failure::Usage)?,
                env_from_env: pairs("--env-from-env", &args.env_from_env, false)
                    .map_err(Failure::Usage)?,
            }
        }
        _ => {
            return Err(Failure::Usage(format!(
                "give the server's command after `--` (rho mcp add {id} -- npx -y some-server) or its --url",
                id = args.id
            )));
        }
    };
    let entry = NewEntry {
        transport,
        enabled: !args.disabled,
    };
    let mut doc = ConfigDocument::open(config).map_err(Failure::Usage)?;
    let existed = doc.contains(&args.id);
    if existed && !args.force {
        return Err(Failure::Usage(format!(
            "server `{}` already exists in {}: pass --force to replace it",
            args.id,
            doc.path().display()
        )));
    }
    doc.insert(&args.id, &entry).map_err(Failure::Usage)?;
    doc.write(Some(&args.id)).map_err(Failure::Usage)?;
    for note in literal_secret_notes(&args.id, &entry) {
        eprintln!("note: {}", rho_proto_core::text::terminal::sanitize(&note));
    }
    write_stdout(&format!(
        "{} server `{}` in {}\n",
        if existed { "replaced" } else { "added" },
        args.id,
        doc.path().display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The error for an id the config file lacks: a plugin server's id says
/// where it comes from, any other lists the file's servers.
fn not_in_file(doc: &ConfigDocument, id: &str) -> Failure {
    Failure::Usage(match id.split_once('/') {
        Some((plugin, _)) => format!(
            "`{id}` is a server of plugin `{plugin}`, which rho does not edit: change that plugin's mcp.json (rho edits only {})",
            doc.path().display()
        ),
        None => unknown_server(&doc.loaded(), id),
    })
}

/// `rho mcp remove`.
pub(crate) fn remove(config: Option<PathBuf>, args: &EntryArgs) -> Result<ExitCode, Failure> {
    let mut doc = ConfigDocument::open(config).map_err(Failure::Usage)?;
    if !doc.remove(&args.id) {
        return Err(not_in_file(&doc, &args.id));
    }
    doc.write(None).map_err(Failure::Usage)?;
    write_stdout(&format!(
        "removed server `{}` from {}\n",
        args.id,
        doc.path().display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `rho mcp enable` (`enabled` true) and `rho mcp disable`.
pub(crate) fn set_enabled(
    config: Option<PathBuf>,
    args: &EntryArgs,
    enabled: bool,
) -> Result<ExitCode, Failure> {
    let mut doc = ConfigDocument::open(config).map_err(Failure::Usage)?;
    if !doc.contains(&args.id) {
        return Err(not_in_file(&doc, &args.id));
    }
    let word = if enabled { "enabled" } else { "disabled" };
    match doc.set_enabled(&args.id, enabled).map_err(Failure::Usage)? {
        Toggle::Already => write_stdout(&format!(
            "server `{}` is already {word} in {}\n",
            args.id,
            doc.path().display()
        ))?,
        Toggle::Changed => {
            doc.write(Some(&args.id)).map_err(Failure::Usage)?;
            write_stdout(&format!(
                "{word} server `{}` in {}\n",
                args.id,
                doc.path().display()
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `KEY=VALUE` words (`flag` names them in errors); `colon` also takes
/// `NAME: VALUE`, the way headers are written elsewhere.
pub(crate) fn pairs(
    flag: &str,
    words: &[String],
    colon: bool,
) -> Result<Vec<(String, String)>, String> {
    words
        .iter()
        .map(|word| {
            let at = word
                .find(|c| c == '=' || (colon && c == ':'))
                .filter(|&at| at > 0)
                .ok_or_else(|| format!("{flag} `{word}` is not KEY=VALUE"))?;
            let value = &word[at + 1..];
            let value = if word[at..].starts_with(':') {
                value.trim_start()
            } else {
                value
            };
            Ok((word[..at].to_owned(), value.to_owned()))
        })
        .collect()
}

/// Notes for the literal `env` and `headers` values of `entry` that look
/// like secrets.
fn literal_secret_notes(id: &str, entry: &NewEntry) -> Vec<String> {
    let (kind, values, flag) = match &entry.transport {
        NewTransport::Stdio { env, .. } => ("variable", env, "--env-from-env"),
        NewTransport::Http { headers, .. } => ("header", headers, "--header-from-env"),
    };
    values
        .iter()
        .filter(|(name, value)| looks_secret(name, value))
        .map(|(name, _)| {
            format!(
                "{kind} `{name}` of server `{id}` looks like a secret and is now in the config file as plain text; \
                 to keep it out, run `rho mcp add {id} --force {flag} {name}=SOME_VAR ...` and set SOME_VAR"
            )
        })
        .collect()
}

/// Whether an environment variable or header looks like a credential: by
/// its name (it contains `TOKEN`, `SECRET`, `PASSW`, `CREDENTIAL`,
/// `COOKIE`, `PRIVATE`, `SIGNATURE`, `APIKEY`, `API_KEY` or `ACCESS_KEY`,
/// or has a word — between `-`/`_` — `KEY`, `PAT`, `SESSION`, `PASS`,
/// `AUTH`, `OAUTH` or `AUTHORIZATION`, ignoring case), or by its value (a known token prefix such as `ghp_`,
/// `sk-`, `xoxb-`, `glpat-`, `AKIA`, `Bearer `; or 20 or more characters
/// with letters and digits and no space, `/` or `.`).
pub(crate) fn looks_secret(name: &str, value: &str) -> bool {
    const PARTS: [&str; 10] = [
        "TOKEN",
        "SECRET",
        "PASSW",
        "CREDENTIAL",
        "COOKIE",
        "PRIVATE",
        "SIGNATURE",
        "APIKEY",
        "API_KEY",
        "ACCESS_KEY",
    ];
    const WORDS: [&str; 7] = [
        "KEY",
        "PAT",
        "SESSION",
        "PASS",
        "AUTH",
        "OAUTH",
        "AUTHORIZATION",
    ];
    const PREFIXES: [&str; 12] = [
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "sk-",
        "xoxb-",
        "xoxp-",
        "glpat-",
        "AKIA",
        "Bearer ",
        "Basic ",
        "Token ",
    ];
    let upper = name.to_ascii_uppercase().replace('-', "_");
    if PARTS.iter().any(|p| upper.contains(p))
        || upper
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| WORDS.contains(&word))
    {
        return true;
    }
    if value.contains("${") {
        // A placeholder, not a value.
        return false;
    }
    PREFIXES.iter().any(|p| value.starts_with(p))
        || (value.len() >= 20
            && value.chars().any(|c| c.is_ascii_alphabetic())
            && value.chars().any(|c| c.is_ascii_digit())
            && !value.contains([' ', '/', '.']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_told_by_name_or_by_shape() {
        for (name, value) in [
            ("GITHUB_TOKEN", "x"),
            ("Authorization", "x"),
            ("X-Api-Key", "x"),
            ("OPENAI_API_KEY", "x"),
            ("DB_PASSWORD", "x"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("SLACK_BOT", "xoxb-1234"),
            ("WHATEVER", "ghp_abc"),
            ("X-Thing", "Bearer abc"),
            ("OPAQUE", "a1b2c3d4e5f6g7h8i9j0k1"),
        ] {
            assert!(looks_secret(name, value), "{name}={value}");
        }
        for (name, value) in [
            ("NODE_ENV", "production"),
            ("LOG_LEVEL", "debug"),
            ("ROOT", "/home/me/projects/2024-archive"),
            ("X-Tenant", "public-tenant"),
            ("MONKEY_BUSINESS", "1"),
            ("VERSION", "1.2.3-beta.20240101"),
            ("HOME_DIR", "${HOME}"),
            ("GIT_AUTHOR_NAME", "me"),
        ] {
            assert!(!looks_secret(name, value), "{name}={value}");
        }
    }

    #[test]
    fn pairs_split_at_the_first_equals_and_headers_also_at_a_colon() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let got = pairs(
            "--header",
            &words(&["A=b=c", "Authorization: Bearer x=="]),
            true,
        )
        .expect("pairs");
        assert_eq!(
            got,
            vec![
                ("A".to_owned(), "b=c".to_owned()),
                ("Authorization".to_owned(), "Bearer x==".to_owned())
            ]
        );
        assert!(pairs("--env", &words(&["K: v"]), false).is_err());
        assert!(pairs("--env", &words(&["=v"]), false).is_err());
        assert!(pairs("--env", &words(&["novalue"]), false).is_err());
    }
}
