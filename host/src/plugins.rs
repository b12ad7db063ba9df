//! Agent Plugin discovery: the filesystem half of plugin servers.
//!
//! Every subdirectory of a directory listed in `[plugins] dirs` (default
//! `~/.rho/plugins`) that holds an `mcp.json` is a plugin; the core's
//! [`read_plugin`] turns its files into server entries, which join the
//! selected config's servers. Discovery only reads: it never creates a
//! directory, starts anything or connects anywhere, so a plugin with no
//! valid servers adds no startup work and the zero-server fast path holds.
//!
//! Paths in `dirs`: `~/` is the home directory, and a relative path is
//! relative to the directory of the config file that lists it (the
//! current directory when no file was read). A listed directory that does
//! not exist contributes nothing (the default one usually does not
//! exist). `${PLUGIN_DATA}` is `~/.rho/plugin-data/<plugin>`; without a
//! home directory it is `<plugin dir>/.rho-plugin-data`.
//!
//! [`prepare_data_dirs`] is the one step that writes: immediately before a
//! run starts servers, it creates the data directory of each plugin stdio
//! server about to start. A directory that cannot be created disables
//! that server alone, with the reason.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rho_proto_core::config::{
    Config, DEFAULT_PLUGIN_DIRS, EntryError, Plugin, PluginDir, PluginOrigin, ServerEntry,
    Transport, read_plugin,
};

/// The largest `plugin.json` or `mcp.json` read: these are small files,
/// and a plugin directory is not trusted to keep them so.
const MAX_PLUGIN_FILE: u64 = 1024 * 1024;

/// The plugin servers of the plugin directories `config` lists, in
/// directory order, then plugin (subdirectory name) order.
pub(crate) fn discover(
    config: &Config,
    config_dir: Option<&Path>,
    home: Option<&Path>,
) -> Vec<ServerEntry> {
    let listed: Vec<String> = match &config.plugin_dirs {
        Some(dirs) => dirs.clone(),
        None => DEFAULT_PLUGIN_DIRS
            .iter()
            .map(|d| (*d).to_owned())
            .collect(),
    };
    let mut entries: Vec<ServerEntry> = Vec::new();
    // Plugin name → the directory that claimed it first.
    let mut claimed: Vec<(String, PathBuf)> = Vec::new();
    for dir in listed
        .iter()
        .filter_map(|dir| resolve(dir, config_dir, home))
    {
        for root in plugin_roots(&dir) {
            let plugin = read_one(&root, home);
            if let Some((_, first)) = claimed.iter().find(|(name, _)| *name == plugin.name) {
                let origin = plugin.entries.first().and_then(|e| e.plugin.clone());
                entries.push(taken(&plugin.name, &root, first, origin));
                continue;
            }
            claimed.push((plugin.name.clone(), root));
            entries.extend(plugin.entries);
        }
    }
    entries
}

/// A `dirs` element as a path: `~/` expanded, relative ones against the
/// config file's directory. `None` when it needs a home there is not.
fn resolve(dir: &str, config_dir: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    if dir == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = dir.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    let path = Path::new(dir);
    Some(match config_dir {
        Some(base) if path.is_relative() => base.join(path),
        _ => path.to_path_buf(),
    })
}

/// The subdirectories of `dir` holding an `mcp.json`, sorted by name.
fn plugin_roots(dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir() && path.join("mcp.json").is_file())
        .collect();
    roots.sort();
    roots
}

/// One plugin directory's entries (a file that cannot be read is one
/// entry for the whole plugin, named after its directory).
fn read_one(root: &Path, home: Option<&Path>) -> Plugin {
    let dir_name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let root_text = root.display().to_string();
    let data_root = match home {
        Some(home) => home.join(".rho").join("plugin-data"),
        None => root.join(".rho-plugin-data"),
    }
    .display()
    .to_string();
    let unreadable = |file: PathBuf, why: String| Plugin {
        name: dir_name.clone(),
        entries: vec![ServerEntry {
            id: format!("{dir_name}/*"),
            config: Err(EntryError {
                file: file.display().to_string(),
                id: format!("{dir_name}/*"),
                line: 0,
                column: 0,
                message: why,
            }),
            plugin: Some(PluginOrigin {
                name: dir_name.clone(),
                root: root_text.clone(),
                data_dir: Path::new(&data_root).join(&dir_name).display().to_string(),
            }),
        }],
    };
    let manifest_path = root.join("plugin.json");
    let manifest = match read_small(&manifest_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return unreadable(
                manifest_path,
                format!("cannot read the plugin's manifest: {e}"),
            );
        }
    };
    let mcp_path = root.join("mcp.json");
    let mcp_json = match read_small(&mcp_path) {
        Ok(text) => text,
        Err(e) => return unreadable(mcp_path, format!("cannot read the plugin's servers: {e}")),
    };
    read_plugin(&PluginDir {
        root: &root_text,
        dir_name: &dir_name,
        manifest: manifest.as_deref(),
        mcp_json: &mcp_json,
        data_root: &data_root,
    })
}

/// A file's text, refusing one over [`MAX_PLUGIN_FILE`].
fn read_small(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_PLUGIN_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PLUGIN_FILE {
        return Err(std::io::Error::other(format!(
            "larger than {} KiB",
            MAX_PLUGIN_FILE / 1024
        )));
    }
    Ok(text)
}

/// The entry for a plugin whose name an earlier directory already took.
fn taken(name: &str, root: &Path, first: &Path, origin: Option<PluginOrigin>) -> ServerEntry {
    ServerEntry {
        id: format!("{name}/*"),
        config: Err(EntryError {
            file: root.display().to_string(),
            id: format!("{name}/*"),
            line: 0,
            column: 0,
            message: format!(
                "the plugin name `{name}` is already taken by {}; rename one of them (plugin.json `name`)",
                first.display()
            ),
        }),
        plugin: origin,
    }
}

/// Creates the data directory of every enabled plugin stdio server that
/// `select` is about to start. A server whose directory cannot be created
/// becomes an invalid entry with the reason; everything else is untouched
/// (borrowed when there is nothing to do).
pub(crate) fn prepare_data_dirs<'c>(
    config: &'c Config,
    select: &impl Fn(&str) -> bool,
) -> Cow<'c, Config> {
    let mut failed: Vec<(usize, EntryError)> = Vec::new();
    for (index, entry) in config.servers.iter().enumerate() {
        let (Some(origin), Ok(server)) = (&entry.plugin, &entry.config) else {
            continue;
        };
        if !server.enabled || !select(&entry.id) || !matches!(server.transport, Transport::Stdio(_))
        {
            continue;
        }
        // Owner-only (the plugin's own data, under ~/.rho, which this may
        // be the first to create).
        if let Err(e) = crate::config::ensure_private_dir(std::path::Path::new(&origin.data_dir)) {
            failed.push((
                index,
                EntryError {
                    file: origin.data_dir.clone(),
                    id: entry.id.clone(),
                    line: 0,
                    column: 0,
                    message: format!(
                        "cannot create the plugin's data directory (${{PLUGIN_DATA}}): {e}; this server is disabled"
                    ),
                },
            ));
        }
    }
    if failed.is_empty() {
        return Cow::Borrowed(config);
    }
    let mut config = config.clone();
    for (index, error) in failed {
        config.servers[index].config = Err(error);
    }
    Cow::Owned(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_resolve_home_and_relative_paths() {
        let home = Path::new("/home/u");
        let base = Path::new("/work/project/.rho");
        assert_eq!(
            resolve("~/.rho/plugins", Some(base), Some(home)),
            Some(PathBuf::from("/home/u/.rho/plugins"))
        );
        assert_eq!(
            resolve("~", None, Some(home)),
            Some(PathBuf::from("/home/u"))
        );
        assert_eq!(resolve("~/p", None, None), None);
        assert_eq!(
            resolve("vendor", Some(base), Some(home)),
            Some(PathBuf::from("/work/project/.rho/vendor"))
        );
        assert_eq!(
            resolve("/opt/p", Some(base), Some(home)),
            Some(PathBuf::from("/opt/p"))
        );
        assert_eq!(resolve("vendor", None, None), Some(PathBuf::from("vendor")));
    }
}
