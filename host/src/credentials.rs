//! The OAuth credential store `rho mcp` uses, at the bottom of the host's
//! OAuth modules: it knows the file, its lock and the wall clock
//! ([`now_unix`]), and nothing of logins or HTTP. The store is one JSON
//! file, `~/.rho/mcp-oauth.json`, readable by its owner only (0600, in a
//! 0700 directory), replaced atomically (write a temporary file, sync,
//! rename), and changed only under an exclusive lock on
//! `~/.rho/mcp-oauth.lock` (`flock`; on other platforms than Unix there is
//! no lock yet), so two rho processes refreshing at once never lose a
//! rotated refresh token. What a finished grant leaves in it is
//! [`stored`] (with [`client_to_store`] of its client); [`MemoryStore`] is
//! the store of a run that must not touch `~/.rho`.
//!
//! What a host reads from it before connecting is
//! [`crate::stored_tokens`]'s, the auth status `list` reports
//! [`crate::auth_status`]'s. Nothing from this file is ever printed: `list`
//! and `show` report only whether a login exists and when it expires.
//!
//! # Why a file and not the OS keyring
//!
//! Decided in issue 13: the store is this file only; there is no keyring
//! backend (the `keyring` crate) and no config key choosing one.
//! - **Binary size.** The stripped release `rho` is about 7.9 MiB, just
//!   under the 8 MiB bar. A keyring backend that keeps a login across a
//!   reboot on Linux is the Secret Service over D-Bus: either libdbus (a C
//!   library to link and ship) or zbus with its async runtime and crypto.
//!   Either costs more than the room that is left. (The kernel keyring is
//!   smaller but forgets everything at logout.)
//! - **CI and servers.** Headless machines, containers and SSH sessions
//!   have no Secret Service running, so a keyring store would need this
//!   file as its fallback anyway; `client_credentials` runs in CI are the
//!   main headless users.
//! - **Refresh rotation.** The lock below makes read-modify-write atomic
//!   across rho processes, so a rotated refresh token is never lost. A
//!   keyring offers get and set, not a transaction.
//!
//! What the file gives up is encryption at rest; the 0600 file in a 0700
//! directory is the same protection `~/.ssh` keys and most CLIs' token
//! caches have. The core's `CredentialStore` trait is where a keyring
//! store would plug in, behind a cargo feature, if the size bar moves.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rho_proto_core::oauth::flow::Credentials;
use rho_proto_core::oauth::store::{
    CredentialStore, StoreError, StoreKey, StoredLogin, StoredTokens,
};
use rho_proto_core::oauth::token::{Client, ClientAuth};
use serde::{Deserialize, Serialize};

/// The file store.
pub struct FileStore {
    path: PathBuf,
    lock: PathBuf,
}

/// The file's format; `version` 1.
#[derive(Default, Serialize, Deserialize)]
struct Document {
    version: u32,
    #[serde(default)]
    entries: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    server: String,
    url: String,
    issuer: String,
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    client_auth: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<Tokens>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wanted_scope: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Tokens {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    resource: String,
    token_endpoint: String,
    /// The key DPoP-bound tokens are bound to (base64url PKCS#8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_key: Option<String>,
}

impl Entry {
    fn key(&self) -> StoreKey {
        StoreKey {
            server: self.server.clone(),
            url: self.url.clone(),
        }
    }

    /// The stored login, its secrets learned (`crate::secrets`): what a
    /// connect or a re-authorization reads from the file is hidden
    /// wherever a server's words go.
    fn login(&self) -> StoredLogin {
        let login = StoredLogin {
            issuer: self.issuer.clone(),
            client: Client {
                id: self.client_id.clone(),
                secret: self.client_secret.clone(),
                auth: ClientAuth::from_name(&self.client_auth).unwrap_or(ClientAuth::None),
            },
            tokens: self.tokens.as_ref().map(|t| StoredTokens {
                access_token: t.access_token.clone(),
                refresh_token: t.refresh_token.clone(),
                expires_at: t.expires_at,
                scope: t.scope.clone(),
                resource: t.resource.clone(),
                token_endpoint: t.token_endpoint.clone(),
                dpop_key: t.dpop_key.clone(),
            }),
            wanted_scope: self.wanted_scope.clone(),
        };
        crate::secrets::learn_stored(&login);
        login
    }

    fn new(key: &StoreKey, login: StoredLogin) -> Self {
        Self {
            server: key.server.clone(),
            url: key.url.clone(),
            issuer: login.issuer,
            client_id: login.client.id,
            client_secret: login.client.secret,
            client_auth: login.client.auth.name().to_owned(),
            tokens: login.tokens.map(|t| Tokens {
                access_token: t.access_token,
                refresh_token: t.refresh_token,
                expires_at: t.expires_at,
                scope: t.scope,
                resource: t.resource,
                token_endpoint: t.token_endpoint,
                dpop_key: t.dpop_key,
            }),
            wanted_scope: login.wanted_scope,
        }
    }
}

impl FileStore {
    /// The store under `dir` (normally `~/.rho`).
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            path: dir.join("mcp-oauth.json"),
            lock: dir.join("mcp-oauth.lock"),
        }
    }

    /// The store under `~/.rho`, when there is a home.
    pub fn default_location() -> Option<Self> {
        Some(Self::in_dir(&crate::config::rho_dir()?))
    }

    fn error(&self, reason: impl std::fmt::Display) -> StoreError {
        StoreError {
            location: self.path.display().to_string(),
            reason: reason.to_string(),
        }
    }

    fn read(&self) -> Result<Document, StoreError> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Document::default()),
            Err(e) => return Err(self.error(format!("cannot be read: {e}"))),
        };
        let doc: Document = serde_json::from_str(&text).map_err(|e| {
            self.error(format!(
                "is not valid ({e}); remove it to log in again (`rho mcp login <id>`)"
            ))
        })?;
        if doc.version != 1 {
            return Err(self.error(format!(
                "has version {}, which this rho does not read",
                doc.version
            )));
        }
        Ok(doc)
    }

    fn write(&self, doc: &Document) -> Result<(), StoreError> {
        let text = serde_json::to_vec_pretty(doc).map_err(|e| self.error(e))?;
        let tmp = self
            .path
            .with_extension(format!("json.tmp.{}", std::process::id()));
        let result = (|| {
            let mut file = private_options().open(&tmp)?;
            file.write_all(&text)?;
            file.sync_all()?;
            fs::rename(&tmp, &self.path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map_err(|e| self.error(format!("cannot be written: {e}")))
    }

    /// Holds the exclusive lock until the returned guard is dropped. On a
    /// thread that holds it already (inside [`CredentialStore::exclusively`])
    /// the guard is a no-op: the lock is taken once per thread.
    fn locked(&self) -> Result<LockGuard, StoreError> {
        if HELD.with(|held| held.borrow().contains(&self.lock)) {
            return Ok(LockGuard {
                file: None,
                path: self.lock.clone(),
            });
        }
        let file = self.lock_file()?;
        HELD.with(|held| held.borrow_mut().push(self.lock.clone()));
        Ok(LockGuard {
            file: Some(file),
            path: self.lock.clone(),
        })
    }

    /// Takes the exclusive lock on the lock file (blocking).
    fn lock_file(&self) -> Result<File, StoreError> {
        if let Some(dir) = self.path.parent() {
            crate::config::ensure_private_dir(dir).map_err(|e| {
                self.error(format!(
                    "its directory {} cannot be created: {e}",
                    dir.display()
                ))
            })?;
        }
        let file = private_options()
            .truncate(false)
            .open(&self.lock)
            .map_err(|e| self.error(format!("its lock file cannot be opened: {e}")))?;
        #[cfg(unix)]
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| self.error(format!("cannot be locked: {e}")))?;
        #[cfg(windows)]
        rho_os::fs::lock_exclusive(&file)
            .map_err(|e| self.error(format!("cannot be locked: {e}")))?;
        Ok(file)
    }

    /// Forgets every entry of server `server` (any URL); returns how many.
    pub fn forget_server(&self, server: &str) -> Result<usize, StoreError> {
        let _lock = self.locked()?;
        let mut doc = self.read()?;
        let before = doc.entries.len();
        doc.entries.retain(|e| e.server != server);
        let removed = before - doc.entries.len();
        if removed > 0 {
            doc.version = 1;
            self.write(&doc)?;
        }
        Ok(removed)
    }
}

thread_local! {
    /// The lock files this thread holds (see [`FileStore::locked`]).
    static HELD: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The store's lock, held until dropped (`file` is `None` for a nested
/// hold on a thread that has it already).
struct LockGuard {
    file: Option<File>,
    path: PathBuf,
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if self.file.is_some() {
            // Forgotten as held first, then unlocked (the file closes).
            HELD.with(|held| held.borrow_mut().retain(|p| *p != self.path));
            drop(self.file.take());
        }
    }
}

impl CredentialStore for FileStore {
    fn exclusively(&self, work: &mut dyn FnMut()) -> Result<(), StoreError> {
        let _lock = self.locked()?;
        work();
        Ok(())
    }

    fn load(&self, key: &StoreKey) -> Result<Option<StoredLogin>, StoreError> {
        Ok(self
            .read()?
            .entries
            .iter()
            .find(|e| e.key() == *key)
            .map(Entry::login))
    }

    fn update(
        &self,
        key: &StoreKey,
        change: &mut dyn FnMut(Option<StoredLogin>) -> Option<StoredLogin>,
    ) -> Result<(), StoreError> {
        let _lock = self.locked()?;
        let mut doc = self.read()?;
        doc.version = 1;
        let at = doc.entries.iter().position(|e| e.key() == *key);
        let current = at.map(|i| doc.entries[i].login());
        match (change(current), at) {
            (Some(login), Some(i)) => doc.entries[i] = Entry::new(key, login),
            (Some(login), None) => doc.entries.push(Entry::new(key, login)),
            (None, Some(i)) => {
                doc.entries.remove(i);
            }
            (None, None) => return Ok(()),
        }
        self.write(&doc)
    }
}

/// Open options for a file only its owner may read: created 0600.
fn private_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// A credential store in memory, for a run that must not touch
/// `~/.rho` (the conformance client).
#[derive(Default)]
pub struct MemoryStore(Mutex<BTreeMap<StoreKey, StoredLogin>>);

impl CredentialStore for MemoryStore {
    fn load(&self, key: &StoreKey) -> Result<Option<StoredLogin>, StoreError> {
        Ok(self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned())
    }

    fn update(
        &self,
        key: &StoreKey,
        change: &mut dyn FnMut(Option<StoredLogin>) -> Option<StoredLogin>,
    ) -> Result<(), StoreError> {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match change(map.get(key).cloned()) {
            Some(login) => map.insert(key.clone(), login),
            None => map.remove(key),
        };
        Ok(())
    }
}

/// Wall-clock seconds since the Unix epoch (0 before it): the clock the
/// credential store keeps expiries in, and the `now` [`crate::auth_status`]
/// takes.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The stored form of finished `credentials`, with the expiry turned into
/// wall-clock seconds; `dpop_key` is the stored form of the key DPoP-bound
/// tokens are bound to (see [`crate::dpop`]), kept only for bound ones.
pub(crate) fn stored(
    credentials: &Credentials,
    now_unix: u64,
    dpop_key: Option<&str>,
) -> StoredLogin {
    let bound = rho_proto_core::oauth::dpop::is_bound(&credentials.tokens);
    StoredLogin {
        issuer: credentials.issuer.clone(),
        client: credentials.client.clone(),
        wanted_scope: None,
        tokens: Some(StoredTokens {
            access_token: credentials.tokens.access_token.clone(),
            refresh_token: credentials.tokens.refresh_token.clone(),
            expires_at: credentials
                .tokens
                .expires_in
                .map(|secs| now_unix.saturating_add(secs)),
            scope: credentials
                .tokens
                .scope
                .clone()
                .or_else(|| credentials.scope.clone()),
            resource: credentials.resource.clone(),
            token_endpoint: credentials.token_endpoint.to_string(),
            dpop_key: dpop_key.filter(|_| bound).map(str::to_owned),
        }),
    }
}

/// What the store keeps of `client`: the client of the config
/// (`configured`, which has a secret read from where the config says)
/// without that secret, which each grant and refresh reads afresh (a
/// rotated secret is the one sent; a copy in the store would outlive the
/// file); any other client (one the authorization server registered)
/// with the secret it was issued, which nothing else holds.
pub(crate) fn client_to_store(client: &Client, configured: Option<&Client>) -> Client {
    let is_configured = configured.is_some_and(|c| c.id == client.id && c.secret.is_some());
    Client {
        secret: if is_configured {
            None
        } else {
            client.secret.clone()
        },
        ..client.clone()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rho-cred-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    pub(crate) fn key(server: &str) -> StoreKey {
        StoreKey {
            server: server.into(),
            url: "https://mcp.example.com/mcp".into(),
        }
    }

    pub(crate) fn login(access: &str, refresh: Option<&str>) -> StoredLogin {
        StoredLogin {
            issuer: "https://auth.example.com".into(),
            client: Client {
                id: "client-1".into(),
                secret: None,
                auth: ClientAuth::None,
            },
            tokens: Some(StoredTokens {
                access_token: access.into(),
                refresh_token: refresh.map(str::to_owned),
                expires_at: Some(1_000),
                scope: Some("mcp:basic".into()),
                resource: "https://mcp.example.com/mcp".into(),
                token_endpoint: "https://auth.example.com/token".into(),
                dpop_key: None,
            }),
            wanted_scope: Some("mcp:admin".into()),
        }
    }

    #[test]
    fn a_login_round_trips_in_a_file_only_its_owner_can_read() {
        let d = dir("round-trip");
        let store = FileStore::in_dir(&d);
        assert_eq!(store.load(&key("a")).expect("empty"), None);
        store
            .update(&key("a"), &mut |_| Some(login("at", Some("rt"))))
            .expect("saved");
        assert_eq!(
            store.load(&key("a")).expect("loads"),
            Some(login("at", Some("rt")))
        );
        // Another URL for the same identity is another entry.
        let other = StoreKey {
            url: "https://elsewhere.example.com/mcp".into(),
            ..key("a")
        };
        assert_eq!(store.load(&other).expect("loads"), None);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(d.join("mcp-oauth.json"))
                .expect("file")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = fs::metadata(&d).expect("dir").permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        assert_eq!(store.forget_server("a").expect("forgets"), 1);
        assert_eq!(store.load(&key("a")).expect("loads"), None);
        assert_eq!(store.forget_server("a").expect("nothing"), 0);
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn concurrent_updates_from_two_handles_lose_nothing() {
        let d = dir("concurrent");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let d = d.clone();
                std::thread::spawn(move || {
                    let store = FileStore::in_dir(&d);
                    for round in 0..10 {
                        store
                            .update(&key(&format!("s{i}")), &mut |current| {
                                let n = current
                                    .and_then(|c| c.tokens)
                                    .map_or(0, |t| t.access_token.parse::<u32>().unwrap_or(0));
                                assert_eq!(n, round, "a lost update");
                                Some(login(&(n + 1).to_string(), None))
                            })
                            .expect("update");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let store = FileStore::in_dir(&d);
        for i in 0..8 {
            let got = store
                .load(&key(&format!("s{i}")))
                .expect("loads")
                .expect("entry");
            assert_eq!(got.tokens.expect("tokens").access_token, "10");
        }
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_damaged_file_is_an_error_naming_it_and_what_to_do() {
        let d = dir("damaged");
        fs::create_dir_all(&d).expect("dir");
        fs::write(d.join("mcp-oauth.json"), "{not json").expect("write");
        let store = FileStore::in_dir(&d);
        let error = store.load(&key("a")).expect_err("damaged");
        let text = error.to_string();
        assert!(
            text.contains("mcp-oauth.json") && text.contains("rho mcp login"),
            "{text}"
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn a_store_directory_someone_made_0755_is_made_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let d = dir("repair");
        fs::create_dir_all(&d).expect("dir");
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).expect("chmod");
        FileStore::in_dir(&d)
            .update(&key("a"), &mut |_| Some(login("at", None)))
            .expect("saved");
        let mode = fs::metadata(&d).expect("dir").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{mode:o}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn secrets_never_reach_debug_output() {
        let text = format!(
            "{:?}",
            login("super-secret-access", Some("super-secret-refresh"))
        );
        assert!(!text.contains("super-secret"), "{text}");
    }
}
