//! Editing the selected config file in place, for `rho mcp add`,
//! `remove`, `enable`, `disable` and `import`.
//!
//! The file is edited as a TOML document (toml_edit), so everything the
//! edit does not touch — comments, blank lines, key order, quoting, other
//! tables — stays byte for byte. A new server is a `[mcp.servers.<id>]`
//! table placed after the last server table (or, in a file that writes its
//! servers as inline tables, an inline table beside them; comments that
//! close the file stay above a table added at its end); removing a server
//! removes its table with the comment lines directly above its header.
//!
//! Nothing is written unless the edited text passes the real config parser
//! (`rho_proto_core::config::parse`) with the edited entry valid. Writing
//! is atomic: a temporary file in the same directory, flushed, given the
//! old file's permissions (a new file is owner-only, 0600, since it may
//! hold header values), then renamed over the old one, so a reader sees
//! the old file or the new one, never half of either. A symbolic link is
//! followed: the file it points at is replaced, the link stays.

use std::path::{Path, PathBuf};

use rho_proto_core::config::{self, Config, ServerId};
use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use rho_host::LoadedConfig;

/// The selected config file, read for editing.
#[derive(Clone)]
pub(crate) struct ConfigDocument {
    /// Where it is (or will be) written.
    path: PathBuf,
    /// The parsed text as read; `Config::default()` for a missing file.
    before: Config,
    doc: DocumentMut,
}

/// One server to write, in the config model's terms.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct NewEntry {
    /// How it is reached.
    pub(crate) transport: NewTransport,
    /// `false` writes `enabled = false`.
    pub(crate) enabled: bool,
}

/// The transport keys of a [`NewEntry`]; empty maps are left out.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NewTransport {
    /// `transport = "stdio"`.
    Stdio {
        command: String,
        args: Vec<String>,
        cwd: Option<String>,
        env: Vec<(String, String)>,
        env_from_env: Vec<(String, String)>,
    },
    /// `transport = "streamable_http"`.
    Http {
        url: String,
        headers: Vec<(String, String)>,
        headers_from_env: Vec<(String, String)>,
        /// Write an `oauth` table with these keys: the server authorizes
        /// with OAuth (`rho mcp login`); `None` writes none.
        oauth: Option<NewOAuth>,
    },
}

/// The keys of a new entry's `oauth` table (an empty table asks for
/// discovery, dynamic registration and a browser login). Never a secret:
/// only where one is read from.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NewOAuth {
    /// `grant`.
    pub(crate) grant: Option<String>,
    /// `client_id`: a client issued out of band.
    pub(crate) client_id: Option<String>,
    /// `client_secret_file`.
    pub(crate) client_secret_file: Option<String>,
    /// `client_secret_from_env`.
    pub(crate) client_secret_from_env: Option<String>,
    /// `scopes`; empty leaves them to the server.
    pub(crate) scopes: Vec<String>,
    /// `redirect_port`.
    pub(crate) redirect_port: Option<u16>,
}

/// What [`ConfigDocument::set_enabled`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Toggle {
    /// The entry changed.
    Changed,
    /// The entry already was as asked.
    Already,
}

impl ConfigDocument {
    /// Reads the file `--config` names, else `~/.rho/config.toml`. A file
    /// that does not exist yet is an empty document (written, with its
    /// directory, on [`ConfigDocument::write`]); a file the config parser
    /// refuses is not edited.
    pub(crate) fn open(explicit: Option<PathBuf>) -> Result<Self, String> {
        let path = match explicit {
            Some(path) => path,
            None => rho_host::LoadedConfig::default_path()
                .ok_or("no home directory: give the config file with --config PATH")?,
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("cannot read config {}: {e}", path.display())),
        };
        Self::from_text(path, &text)
    }

    /// An in-memory document, for a config no file holds.
    pub(crate) fn from_text(path: PathBuf, text: &str) -> Result<Self, String> {
        let before = config::parse(text, &path.display().to_string())
            .map_err(|e| format!("cannot edit {}: {e}", path.display()))?;
        let doc: DocumentMut = text
            .parse()
            .map_err(|e| format!("cannot edit {}: {e}", path.display()))?;
        Ok(Self { path, before, doc })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The config as it was read, for messages that list its servers.
    pub(crate) fn loaded(&self) -> LoadedConfig {
        LoadedConfig {
            path: Some(self.path.clone()),
            config: self.before.clone(),
            adhoc: None,
        }
    }

    /// Whether the document has an entry `id` (valid or not).
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.servers()
            .is_some_and(|servers| servers.contains_key(id))
    }

    /// Writes `entry` as server `id`, replacing an entry of that id in
    /// place (keeping the comments above it). `id` must be a valid
    /// identity.
    pub(crate) fn insert(&mut self, id: &str, entry: &NewEntry) -> Result<(), String> {
        ServerId::new(id).map_err(|e| e.to_string())?;
        let servers = self.servers_mut()?;
        let mut table = entry_table(entry);
        let added = match servers {
            Servers::Table(servers) => {
                let added = match servers.get(id) {
                    Some(Item::Table(old)) => {
                        table.decor_mut().clone_from(old.decor());
                        table.set_position(old.position());
                        false
                    }
                    _ => true,
                };
                servers.insert(id, Item::Table(table));
                added
            }
            Servers::Inline(servers) => {
                let mut inline = table.into_inline_table();
                inline.fmt();
                servers.insert(id, Value::InlineTable(inline));
                false
            }
        };
        // Comments closing the file (a commented-out server, say) stay
        // above a table added at the end, as they were above the end.
        let trailing = self.doc.trailing().as_str().unwrap_or_default().to_owned();
        if added && !trailing.is_empty() && self.is_shown_last(id) {
            if let Some(Item::Table(table)) = self.servers_item_mut(id) {
                table.decor_mut().set_prefix(format!("{trailing}\n"));
            }
            self.doc.set_trailing("");
        }
        Ok(())
    }

    /// Removes server `id`, with the comment lines directly above its
    /// header; `false` when there is none. Comments separated from the
    /// header by a blank line stay when the table was the file's last.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        let last = self.is_shown_last(id);
        let removed = match self.servers_mut() {
            Ok(Servers::Table(servers)) => servers.remove(id),
            Ok(Servers::Inline(servers)) => servers.remove(id).map(Item::Value),
            Err(_) => None,
        };
        let Some(removed) = removed else {
            return false;
        };
        if let (true, Item::Table(table)) = (last, &removed) {
            let prefix = table
                .decor()
                .prefix()
                .and_then(|p| p.as_str())
                .unwrap_or("");
            let kept = detached_comments(prefix);
            if !kept.is_empty() {
                let trailing = self.doc.trailing().as_str().unwrap_or_default();
                self.doc.set_trailing(format!("{kept}{trailing}"));
            }
        }
        true
    }

    /// Sets server `id`'s `enabled`: `disable` writes `enabled = false`
    /// (keeping a comment on that line), `enable` removes the key, since
    /// enabled is the default.
    pub(crate) fn set_enabled(&mut self, id: &str, enabled: bool) -> Result<Toggle, String> {
        let entry: &mut dyn toml_edit::TableLike = match self.servers_mut()? {
            Servers::Table(servers) => servers.get_mut(id).and_then(Item::as_table_like_mut),
            Servers::Inline(servers) => match servers.get_mut(id) {
                Some(Value::InlineTable(entry)) => Some(entry as &mut dyn toml_edit::TableLike),
                _ => None,
            },
        }
        .ok_or_else(|| format!("server `{id}` is not a table in the config file"))?;
        let now = entry.get("enabled").and_then(Item::as_bool).unwrap_or(true);
        if now == enabled {
            return Ok(Toggle::Already);
        }
        if enabled {
            entry.remove("enabled");
        } else {
            match entry.get_mut("enabled").and_then(Item::as_value_mut) {
                Some(value) => {
                    let decor = value.decor().clone();
                    *value = Value::from(false);
                    *value.decor_mut() = decor;
                }
                None => {
                    entry.insert("enabled", toml_edit::value(false));
                }
            }
        }
        Ok(Toggle::Changed)
    }

    /// The edited text.
    pub(crate) fn text(&self) -> String {
        self.doc.to_string()
    }

    /// The edited text through the real config parser; with `id`, that
    /// entry must be valid too.
    pub(crate) fn check(&self, id: Option<&str>) -> Result<Config, String> {
        let name = self.path.display().to_string();
        let config = config::parse(&self.text(), &name)
            .map_err(|e| format!("the edit would leave {name} unreadable: {e}"))?;
        if let Some(entry) = id.and_then(|id| config.get(id))
            && let Err(error) = &entry.config
        {
            return Err(error.to_string());
        }
        Ok(config)
    }

    /// Checks the edited text (see [`ConfigDocument::check`]) and writes
    /// it atomically.
    pub(crate) fn write(&self, id: Option<&str>) -> Result<(), String> {
        self.check(id)?;
        write_atomically(&self.path, &self.text())
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    /// Whether server `id` is a table the document prints after every
    /// other (toml_edit prints tables by position, a new one after the
    /// table before it).
    fn is_shown_last(&self, id: &str) -> bool {
        fn visit<'t>(
            table: &'t Table,
            path: &mut Vec<&'t str>,
            last: &mut isize,
            out: &mut Vec<(isize, Vec<&'t str>)>,
        ) {
            if !table.is_dotted() {
                if let Some(position) = table.position() {
                    *last = position;
                }
                if !table.is_implicit() {
                    out.push((*last, path.clone()));
                }
            }
            for (key, item) in table.iter() {
                path.push(key);
                match item {
                    Item::Table(child) => visit(child, path, last, out),
                    Item::ArrayOfTables(array) => {
                        for child in array.iter() {
                            visit(child, path, last, out);
                        }
                    }
                    _ => {}
                }
                path.pop();
            }
        }
        let mut tables = Vec::new();
        visit(self.doc.as_table(), &mut Vec::new(), &mut 0, &mut tables);
        tables.sort_by_key(|(position, path)| (!path.is_empty(), *position));
        let Some((_, last)) = tables.last() else {
            return false;
        };
        // The entry's own subtables print after its header.
        last.len() >= 3 && last[..3] == ["mcp", "servers", id]
    }

    fn servers_item_mut(&mut self, id: &str) -> Option<&mut Item> {
        match self.servers_mut().ok()? {
            Servers::Table(servers) => servers.get_mut(id),
            Servers::Inline(_) => None,
        }
    }

    fn servers(&self) -> Option<&dyn toml_edit::TableLike> {
        self.doc
            .get("mcp")?
            .as_table_like()?
            .get("servers")?
            .as_table_like()
    }

    /// The `[mcp.servers]` table, created (implicit, so no header is
    /// written for it) when missing.
    fn servers_mut(&mut self) -> Result<Servers<'_>, String> {
        let not_table = |path: &str| format!("`{path}` in {} is not a table", self.path.display());
        let mcp = self
            .doc
            .as_table_mut()
            .entry("mcp")
            .or_insert_with(implicit_table);
        let servers = match mcp {
            Item::Table(mcp) => mcp.entry("servers").or_insert_with(implicit_table),
            Item::Value(Value::InlineTable(mcp)) => {
                let servers = mcp
                    .entry("servers")
                    .or_insert_with(|| Value::InlineTable(InlineTable::new()));
                return match servers {
                    Value::InlineTable(servers) => Ok(Servers::Inline(servers)),
                    _ => Err(not_table("mcp.servers")),
                };
            }
            _ => return Err(not_table("mcp")),
        };
        match servers {
            Item::Table(servers) => Ok(Servers::Table(servers)),
            Item::Value(Value::InlineTable(servers)) => Ok(Servers::Inline(servers)),
            _ => Err(not_table("mcp.servers")),
        }
    }
}

/// Where server entries live in this document.
enum Servers<'d> {
    /// `[mcp.servers]` (possibly implicit): entries are tables.
    Table(&'d mut Table),
    /// `servers = { ... }`: entries are inline tables.
    Inline(&'d mut InlineTable),
}

/// What of a table header's leading text does not belong to it: the
/// lines before the comment block directly above the header and the blank
/// lines that set that block apart.
fn detached_comments(prefix: &str) -> &str {
    let mut end = prefix.len();
    let mut in_block = true;
    // Walk the lines from the header up.
    for (start, line) in line_starts(prefix).into_iter().rev() {
        let blank = line.trim().is_empty();
        if in_block && !blank {
            end = start;
            continue;
        }
        in_block = false;
        if blank {
            end = start;
        } else {
            break;
        }
    }
    &prefix[..end]
}

/// Each line of `text` (without its newline) with its start offset.
fn line_starts(text: &str) -> Vec<(usize, &str)> {
    let mut lines = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        lines.push((start, line.trim_end_matches(['\n', '\r'])));
        start += line.len();
    }
    lines
}

fn implicit_table() -> Item {
    let mut table = Table::new();
    table.set_implicit(true);
    Item::Table(table)
}

/// The `[mcp.servers.<id>]` table of `entry`.
fn entry_table(entry: &NewEntry) -> Table {
    let mut table = Table::new();
    let map = |pairs: &[(String, String)]| {
        let mut inline: InlineTable = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), Value::from(v.as_str())))
            .collect();
        inline.fmt();
        toml_edit::value(inline)
    };
    match &entry.transport {
        NewTransport::Stdio {
            command,
            args,
            cwd,
            env,
            env_from_env,
        } => {
            table.insert("transport", toml_edit::value("stdio"));
            table.insert("command", toml_edit::value(command.as_str()));
            if !args.is_empty() {
                let array: toml_edit::Array = args.iter().map(String::as_str).collect();
                table.insert("args", toml_edit::value(array));
            }
            if let Some(cwd) = cwd {
                table.insert("cwd", toml_edit::value(cwd.as_str()));
            }
            if !env.is_empty() {
                table.insert("env", map(env));
            }
            if !env_from_env.is_empty() {
                table.insert("env_from_env", map(env_from_env));
            }
        }
        NewTransport::Http {
            url,
            headers,
            headers_from_env,
            ..
        } => {
            table.insert("transport", toml_edit::value("streamable_http"));
            table.insert("url", toml_edit::value(url.as_str()));
            if !headers.is_empty() {
                table.insert("headers", map(headers));
            }
            if !headers_from_env.is_empty() {
                table.insert("headers_from_env", map(headers_from_env));
            }
        }
    }
    if !entry.enabled {
        table.insert("enabled", toml_edit::value(false));
    }
    if let NewTransport::Http {
        oauth: Some(oauth), ..
    } = &entry.transport
    {
        let mut keys = toml_edit::Table::new();
        for (key, value) in [
            ("grant", &oauth.grant),
            ("client_id", &oauth.client_id),
            ("client_secret_file", &oauth.client_secret_file),
            ("client_secret_from_env", &oauth.client_secret_from_env),
        ] {
            if let Some(value) = value {
                keys.insert(key, toml_edit::value(value.as_str()));
            }
        }
        if !oauth.scopes.is_empty() {
            let array: toml_edit::Array = oauth.scopes.iter().map(String::as_str).collect();
            keys.insert("scopes", toml_edit::value(array));
        }
        if let Some(port) = oauth.redirect_port {
            keys.insert("redirect_port", toml_edit::value(i64::from(port)));
        }
        table.insert("oauth", toml_edit::Item::Table(keys));
    }
    table
}

/// Replaces `path` with `text`: a temporary file beside it, flushed to
/// disk, with the old file's permissions (0600 for a new file), renamed
/// over it. The parent directory is created when missing (`~/.rho`
/// owner-only); a symbolic link is followed.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // `~/.rho` also holds the credential store: owner-only (0700), whoever
    // creates it first. Any other directory is the person's own.
    if rho_host::rho_dir().is_some_and(|rho| rho == dir) {
        rho_host::ensure_private_dir(&dir)?;
    } else {
        std::fs::create_dir_all(&dir)?;
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config.toml".into());
    let temp = dir.join(format!(".{name}.rho-edit-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        match std::fs::metadata(&target) {
            Ok(old) => file.set_permissions(old.permissions())?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => owner_only(&file)?,
            Err(e) => return Err(e),
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, &target)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(unix)]
fn owner_only(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn owner_only(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> ConfigDocument {
        ConfigDocument::from_text(PathBuf::from("test.toml"), text).expect("valid")
    }

    fn stdio(command: &str, args: &[&str]) -> NewEntry {
        NewEntry {
            transport: NewTransport::Stdio {
                command: command.into(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                cwd: None,
                env: vec![("LEVEL".into(), "debug".into())],
                env_from_env: vec![],
            },
            enabled: true,
        }
    }

    const COMMENTED: &str = "# my servers\n\n[mcp.servers.a]  # first\ntransport = \"stdio\"\ncommand = \"a\"   # spaced\n\n# tools of a\n[mcp.servers.a.tools]\ndeny = [ \"x\" ]\n\n# sampling, after the servers\n[sampling]\ncommand = [\"model\"]\n";

    #[test]
    fn an_added_table_follows_the_last_server_and_removing_it_restores_the_text() {
        let mut d = doc(COMMENTED);
        d.insert("b", &stdio("node", &["s.js", "--flag"]))
            .expect("insert");
        let added = d.text();
        let table = "\n[mcp.servers.b]\ntransport = \"stdio\"\ncommand = \"node\"\nargs = [\"s.js\", \"--flag\"]\nenv = { LEVEL = \"debug\" }\n";
        let at = COMMENTED.find("\n# sampling").expect("marker");
        assert_eq!(
            added,
            format!("{}{table}{}", &COMMENTED[..at], &COMMENTED[at..])
        );
        d.check(Some("b")).expect("valid");
        assert!(d.remove("b"));
        assert_eq!(d.text(), COMMENTED);
        assert!(!d.remove("b"));
    }

    #[test]
    fn comments_closing_the_file_stay_above_a_table_added_at_the_end() {
        for text in [
            "# only a comment\n",
            "[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n\n# [mcp.servers.old]\n# command = \"x\"\n",
        ] {
            let mut d = doc(text);
            d.insert("b", &stdio("b", &[])).expect("insert");
            assert!(d.text().starts_with(text), "{}", d.text());
            assert!(d.text().ends_with("env = { LEVEL = \"debug\" }\n"));
            assert!(d.remove("b"));
            assert_eq!(d.text(), text);
        }
    }

    #[test]
    fn removing_a_table_drops_the_comments_attached_to_it_only() {
        assert_eq!(detached_comments("\n# about a\n"), "");
        assert_eq!(detached_comments("\n"), "");
        assert_eq!(detached_comments("# kept\n\n"), "# kept\n");
        assert_eq!(
            detached_comments("\n# section\n\n# about a\n# more\n"),
            "\n# section\n"
        );
        let mut d = doc(
            "x = 1\n\n# section\n\n# about a\n[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\n",
        );
        assert!(d.remove("a"));
        assert_eq!(d.text(), "x = 1\n\n# section\n");
    }

    #[test]
    fn the_first_server_of_a_file_creates_no_empty_mcp_headers() {
        let mut d = doc("");
        d.insert("fs", &stdio("npx", &[])).expect("insert");
        assert_eq!(
            d.text(),
            "[mcp.servers.fs]\ntransport = \"stdio\"\ncommand = \"npx\"\nenv = { LEVEL = \"debug\" }\n"
        );
        let mut d = doc("[sampling]\ncommand = [\"m\"]\n");
        d.insert("fs", &stdio("npx", &[])).expect("insert");
        assert!(
            d.text()
                .starts_with("[sampling]\ncommand = [\"m\"]\n\n[mcp.servers.fs]\n"),
            "{}",
            d.text()
        );
    }

    #[test]
    fn replacing_an_entry_keeps_its_place_and_the_comment_above_it() {
        let mut d = doc(COMMENTED);
        d.insert("a", &stdio("other", &[])).expect("insert");
        let text = d.text();
        assert!(
            text.starts_with("# my servers\n\n[mcp.servers.a]  # first\ntransport = \"stdio\"\ncommand = \"other\"\n"),
            "{text}"
        );
        assert!(!text.contains("deny"), "the old subtable is gone: {text}");
        assert!(
            text.ends_with("# sampling, after the servers\n[sampling]\ncommand = [\"model\"]\n")
        );
    }

    #[test]
    fn inline_server_tables_get_an_inline_neighbour() {
        let mut d = doc("[mcp]\nservers = { a = { transport = \"stdio\", command = \"a\" } }\n");
        d.insert("b", &stdio("b", &[])).expect("insert");
        let config = d.check(Some("b")).expect("valid");
        assert_eq!(config.servers.len(), 2);
        assert_eq!(d.set_enabled("b", false), Ok(Toggle::Changed));
        assert!(
            !d.check(None).expect("valid").servers[1]
                .config
                .as_ref()
                .expect("ok")
                .enabled
        );
        assert!(d.remove("a"));
        assert!(!d.contains("a"));
    }

    #[test]
    fn servers_written_as_dotted_keys_get_a_table_beside_them() {
        let text = "[mcp]\nservers.a.transport = \"stdio\"\nservers.a.command = \"a\"\n";
        let mut d = doc(text);
        d.insert("b", &stdio("b", &[])).expect("insert");
        assert_eq!(d.check(Some("b")).expect("valid").servers.len(), 2);
        assert_eq!(d.set_enabled("a", false), Ok(Toggle::Changed));
        assert!(
            d.text().contains("servers.a.enabled = false\n"),
            "{}",
            d.text()
        );
        assert_eq!(d.set_enabled("a", true), Ok(Toggle::Changed));
        assert!(d.remove("b"));
        assert_eq!(d.text(), text);
    }

    #[test]
    fn disable_writes_enabled_false_and_enable_takes_it_away() {
        let mut d = doc(COMMENTED);
        assert_eq!(d.set_enabled("a", true), Ok(Toggle::Already));
        assert_eq!(d.set_enabled("a", false), Ok(Toggle::Changed));
        assert!(
            d.text()
                .contains("command = \"a\"   # spaced\nenabled = false\n"),
            "{}",
            d.text()
        );
        assert_eq!(d.set_enabled("a", false), Ok(Toggle::Already));
        assert_eq!(d.set_enabled("a", true), Ok(Toggle::Changed));
        assert_eq!(d.text(), COMMENTED);
        let mut d =
            doc("[mcp.servers.a]\ntransport = \"stdio\"\ncommand = \"a\"\nenabled = true # on\n");
        assert_eq!(d.set_enabled("a", false), Ok(Toggle::Changed));
        assert!(d.text().ends_with("enabled = false # on\n"), "{}", d.text());
    }

    #[test]
    fn an_invalid_entry_is_refused_with_the_parsers_reason() {
        let mut d = doc("");
        let entry = NewEntry {
            transport: NewTransport::Http {
                url: "http://example.com/mcp".into(),
                headers: vec![],
                headers_from_env: vec![],
                oauth: None,
            },
            enabled: true,
        };
        d.insert("remote", &entry).expect("insert");
        let error = d
            .check(Some("remote"))
            .expect_err("plain http off loopback");
        assert!(error.contains("must use https"), "{error}");
        assert!(d.insert("not an id", &entry).is_err());
    }

    #[test]
    fn a_file_the_parser_refuses_is_not_edited() {
        let error = ConfigDocument::from_text(PathBuf::from("bad.toml"), "[mcp]\nserver = 1\n")
            .err()
            .expect("refused");
        assert!(error.starts_with("cannot edit bad.toml: "), "{error}");
        assert!(ConfigDocument::from_text(PathBuf::from("bad.toml"), "[mcp\n").is_err());
        let mut d = doc("[mcp.servers]\nfs = \"npx foo\"\n");
        assert!(d.contains("fs"));
        assert!(d.set_enabled("fs", false).is_err());
    }
}
