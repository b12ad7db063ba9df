//! Finding and reading the selected config file: an explicit path when the
//! host has one (the CLI's `--config PATH`; it replaces the default,
//! nothing is merged), else `~/.rho/config.toml`, which may be absent. The
//! servers of the Agent Plugins it lists (see [`crate::plugins`]) join its
//! own at load, so a host sees one list of servers whatever their origin.

use std::path::PathBuf;

use rho_proto_core::config::{self, Config};

/// The config of this run and where it came from.
#[derive(Clone)]
pub struct LoadedConfig {
    /// The file read, when there was one.
    pub path: Option<PathBuf>,
    /// The parsed configuration.
    pub config: Config,
    /// What replaced the file, when a host built the config itself (the
    /// CLI's `--stdio` and `--url` flags, naming one ad-hoc server): the
    /// messages say so instead of naming a file.
    pub adhoc: Option<&'static str>,
}

impl LoadedConfig {
    /// Reads the selected config, with its plugins' servers after its own.
    /// An explicit path must exist; the default path may be missing, which
    /// configures no server. The error names the file and what is wrong.
    pub fn load(explicit: Option<PathBuf>) -> Result<Self, String> {
        let (path, required) = match explicit {
            Some(path) => (Some(path), true),
            None => (Self::default_path(), false),
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
        let config =
            config::parse(&text, &path.display().to_string()).map_err(|e| e.to_string())?;
        Ok(with_plugins(Some(path), config))
    }

    /// `~/.rho/config.toml`, where [`LoadedConfig::load`] looks without
    /// an explicit path (and `rho mcp add` writes), when there is a home
    /// directory.
    pub fn default_path() -> Option<PathBuf> {
        Some(rho_dir()?.join("config.toml"))
    }

    /// A config the host built itself, replacing any file: `replaced_by`
    /// names what replaced it, for messages (`--stdio`, say).
    pub fn built(config: Config, replaced_by: &'static str) -> Self {
        Self {
            path: None,
            config,
            adhoc: Some(replaced_by),
        }
    }

    /// The config's origin, for messages.
    pub fn describe(&self) -> String {
        if self.adhoc == Some(IN_MEMORY) {
            return "the config the host built in memory (no config file is read)".into();
        }
        if let Some(flag) = self.adhoc {
            return format!("the ad-hoc {flag} server (no config file is read)");
        }
        match &self.path {
            Some(path) => path.display().to_string(),
            None => "the default config (~/.rho/config.toml, absent)".into(),
        }
    }
}

/// What replaced the file in a config made [`From`] a [`Config`].
const IN_MEMORY: &str = "in-memory";

/// A config the host built in memory, with no file behind it (a test's, an
/// agent's own list of servers).
impl From<Config> for LoadedConfig {
    fn from(config: Config) -> Self {
        Self::built(config, IN_MEMORY)
    }
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

/// The home directory (`HOME`, else `USERPROFILE`), where rho keeps its
/// config, credentials and usage ledger.
pub(crate) fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
}

/// Creates `dir` (normally `~/.rho`) readable by its owner only (0700; on
/// Windows a protected ACL for the current user alone),
/// with any missing parents, and repairs the mode of one that already
/// exists with wider permissions: it holds the credential store, whose
/// files are 0600 in a 0700 directory whoever created the directory first
/// (`rho mcp add` under a 022 umask made it 0755).
pub fn ensure_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        builder.mode(0o700);
        builder.create(dir)?;
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & 0o700))?;
        }
        Ok(())
    }
    // Windows: an ACL that grants the current user alone (rho-os's
    // `make_owner_only`), inherited by the store's files.
    #[cfg(windows)]
    {
        builder.create(dir)?;
        rho_os::fs::make_owner_only(dir)
    }
    #[cfg(not(any(unix, windows)))]
    builder.create(dir)
}

/// `~/.rho`, when there is a home directory.
pub fn rho_dir() -> Option<PathBuf> {
    Some(home_dir()?.join(".rho"))
}
