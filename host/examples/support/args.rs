//! The examples' command line: `--config PATH` (else `~/.rho/config.toml`)
//! and `--runtime smol|blocking` (else the default: smol when built),
//! plus flags of their own.

use std::path::PathBuf;

use rho_host::RuntimeKind;

/// What an example was asked for.
pub(crate) struct Args {
    /// The config file, if given.
    pub(crate) config: Option<PathBuf>,
    /// The executor.
    pub(crate) kind: RuntimeKind,
    /// The flags the example accepts that were given (`--strict`).
    pub(crate) flags: Vec<String>,
}

/// Reads the command line of example `name`, which accepts `flags`.
pub(crate) fn parse(name: &str, flags: &[&str]) -> Result<Args, String> {
    let usage = |why: String| {
        let extra: String = flags.iter().map(|f| format!(" [{f}]")).collect();
        format!("{why}\nusage: {name} [--config PATH] [--runtime smol|blocking]{extra}")
    };
    let mut parsed = Args {
        config: None,
        kind: RuntimeKind::default(),
        flags: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if flags.contains(&arg.as_str()) {
            parsed.flags.push(arg);
            continue;
        }
        match (arg.as_str(), args.next()) {
            ("--config", Some(path)) => parsed.config = Some(PathBuf::from(path)),
            ("--runtime", Some(kind)) => parsed.kind = kind.parse().map_err(usage)?,
            _ => return Err(usage(format!("unexpected argument `{arg}`"))),
        }
    }
    Ok(parsed)
}
