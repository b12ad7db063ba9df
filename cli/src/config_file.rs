//! Finding and reading the selected config file: `--config PATH` when
//! given (it replaces the default, nothing is merged), else
//! `~/.rho/config.toml`, which may be absent. The servers of the Agent
//! Plugins it lists (see `plugins`) join its own at load.

use std::path::PathBuf;

use rho_proto_core::config::{self, Config};

/// The config of this run and where it came from.
pub(crate) struct LoadedConfig {
    /// The file read, when there was one.
    pub(crate) path: Option<PathBuf>,
    /// The parsed configuration.
    pub(crate) config: Config,
    /// The flag (`--stdio`, `--url`) of an ad-hoc server that replaces the
    /// file (see `crate::adhoc`).
    pub(crate) adhoc: Option<&'static str>,
}

impl LoadedConfig {
    /// The config's origin, for messages.
    pub(crate) fn describe(&self) -> String {
        if let Some(flag) = self.adhoc {
            return format!("the ad-hoc {flag} server (no config file is read)");
        }
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "the default config (~/.rho/config.toml, absent)".into(),
        }
    }
}

/// Reads the selected config. An explicit path must exist; the default
/// path may be missing, which configures no server.
pub(crate) fn load(explicit: Option<PathBuf>) -> Result<LoadedConfig, String> {
    let (path, required) = match explicit {
        Some(path) => (Some(path), true),
        None => (default_path(), false),
    };
    let Some(path) = path else {
        return Ok(with_plugins(None, Config::default()));
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(with_plugins(None, Config::default()));
        }
        Err(e) => return Err(format!("cannot read config {}: {e}", path.display())),
    };
    let config = config::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
    Ok(with_plugins(Some(path), config))
}

/// The config with its plugins' servers after its own.
fn with_plugins(path: Option<PathBuf>, mut config: Config) -> LoadedConfig {
    let home = home_dir();
    let config_dir = path.as_deref().and_then(std::path::Path::parent);
    let plugin_servers = crate::plugins::discover(&config, config_dir, home.as_deref());
    config.add_plugin_servers(plugin_servers);
    LoadedConfig {
        path,
        config,
        adhoc: None,
    }
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
}

/// `~/.rho/config.toml`, when there is a home directory.
pub(crate) fn default_path() -> Option<PathBuf> {
    Some(home_dir()?.join(".rho").join("config.toml"))
}
