//! The OAuth credential store `rho mcp` uses, and what a host reads from
//! it before connecting (stored logins as `Authorization` headers, the
//! auth status `list` reports). The store is one JSON file, `~/.rho/mcp-oauth.json`,
//! readable by its owner only (0600, in a 0700 directory), replaced
//! atomically (write a temporary file, sync, rename), and changed only
//! under an exclusive lock on `~/.rho/mcp-oauth.lock` (`flock`; on other
//! platforms than Unix there is no lock yet), so two rho processes
//! refreshing at once never lose a rotated refresh token.
//!
//! Nothing from this file is ever printed: `list` and `show` report only
//! whether a login exists and when it expires.
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

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rho-cred-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn key(server: &str) -> StoreKey {
        StoreKey {
            server: server.into(),
            url: "https://mcp.example.com/mcp".into(),
        }
    }

    fn login(access: &str, refresh: Option<&str>) -> StoredLogin {
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

    #[test]
    fn only_a_code_grant_server_left_without_a_token_needs_a_browser_login() {
        let text = r#"
[mcp.servers.a]
transport = "streamable_http"
url = "https://mcp.example.com/mcp"
[mcp.servers.a.oauth]

[mcp.servers.b]
transport = "streamable_http"
url = "https://b.example.com/mcp"
[mcp.servers.b.oauth]

[mcp.servers.keyed]
transport = "streamable_http"
url = "https://keyed.example.com/mcp"
headers = { Authorization = "Bearer configured" }
[mcp.servers.keyed.oauth]

[mcp.servers.m2m]
transport = "streamable_http"
url = "https://m2m.example.com/mcp"
[mcp.servers.m2m.oauth]
grant = "client_credentials"
client_id = "m2m"

[mcp.servers.local]
command = "true"
"#;
        let config = rho_proto_core::config::parse(text, "<test>").expect("config");
        let d = dir("browser-login");
        let store = FileStore::in_dir(&d);
        let mut live = login("at-live", Some("rt"));
        if let Some(tokens) = &mut live.tokens {
            tokens.expires_at = Some(now_unix() + 3600);
        }
        store
            .update(&key("a"), &mut |_| Some(live.clone()))
            .expect("saved");
        let with = with_stored_tokens(&config, crate::RuntimeKind::Smol, Some(&store), &|_| true);
        assert!(!needs_browser_login(&with, "a"), "a usable stored login");
        assert!(needs_browser_login(&with, "b"), "nothing stored");
        assert!(!needs_browser_login(&with, "keyed"), "a configured header");
        assert!(!needs_browser_login(&with, "m2m"), "no person needed");
        assert!(!needs_browser_login(&with, "local"), "stdio");
        assert!(!needs_browser_login(&with, "nope"), "unknown");
        let _ = fs::remove_dir_all(&d);
    }

    /// A token endpoint with refresh-token rotation and reuse detection
    /// (OAuth 2.1): `rt-1` may be spent once; a second use is refused
    /// `invalid_grant`. It answers slowly, so that concurrent refreshes
    /// overlap. Returns its URL and the refresh tokens it was sent.
    fn rotating_token_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
        use crate::test_support::{TokenAnswer, token_endpoint};
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let record = Arc::clone(&seen);
        let url = token_endpoint(move |request| {
            let token = request
                .field("refresh_token")
                .unwrap_or_default()
                .to_owned();
            std::thread::sleep(std::time::Duration::from_millis(300));
            let first = {
                let mut seen = record.lock().expect("lock");
                seen.push(token.clone());
                seen.iter().filter(|t| **t == token).count() == 1
            };
            if token == "rt-1" && first {
                TokenAnswer::ok(
                    r#"{"access_token":"at-2","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#,
                )
            } else {
                TokenAnswer::bad_request(
                    r#"{"error":"invalid_grant","error_description":"refresh token reused"}"#,
                )
            }
        });
        (url, seen)
    }

    #[test]
    fn two_processes_refreshing_at_once_spend_a_rotating_refresh_token_once() {
        let (token_endpoint, spent) = rotating_token_endpoint();
        let text = r#"
[mcp.servers.a]
transport = "streamable_http"
url = "https://mcp.example.com/mcp"
[mcp.servers.a.oauth]
"#;
        let config = rho_proto_core::config::parse(text, "<test>").expect("config");
        let d = dir("rotation");
        let mut expired = login("at-1", Some("rt-1"));
        if let Some(tokens) = &mut expired.tokens {
            tokens.expires_at = Some(now_unix() - 10);
            tokens.token_endpoint = token_endpoint;
        }
        FileStore::in_dir(&d)
            .update(&key("a"), &mut |_| Some(expired.clone()))
            .expect("saved");
        // Two stores on one file, as two rho processes have; both executors'
        // HTTP stacks.
        let threads: Vec<_> = crate::RuntimeKind::ALL
            .into_iter()
            .map(|kind| {
                let config = config.clone();
                let d = d.clone();
                std::thread::spawn(move || {
                    let store = FileStore::in_dir(&d);
                    let with = with_stored_tokens(&config, kind, Some(&store), &|_| true);
                    header_of(&with, "a")
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(
                thread.join().expect("thread").as_deref(),
                Some("Bearer at-2"),
                "both got the one refreshed token"
            );
        }
        assert_eq!(*spent.lock().expect("lock"), ["rt-1"], "one refresh in all");
        let stored = FileStore::in_dir(&d).load(&key("a")).expect("loads");
        let tokens = stored.and_then(|l| l.tokens).expect("tokens");
        assert_eq!(tokens.refresh_token.as_deref(), Some("rt-2"));
        let _ = fs::remove_dir_all(&d);
    }

    /// A token endpoint that binds tokens with DPoP and wants its nonce
    /// (`as-n`): a request whose proof lacks it is answered 400
    /// `use_dpop_nonce`. Returns its URL and, per request, the nonce its
    /// proof carried (`None`: no proof at all).
    fn nonce_demanding_token_endpoint() -> (String, Arc<Mutex<Vec<Option<String>>>>) {
        use crate::test_support::{TokenAnswer, token_endpoint};
        use base64::Engine as _;
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let record = Arc::clone(&seen);
        let url = token_endpoint(move |request| {
            let nonce = request.header("dpop").map(|p| {
                let claims = p.split('.').nth(1).unwrap_or_default();
                let claims: serde_json::Value = serde_json::from_slice(
                    &base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(claims)
                        .unwrap_or_default(),
                )
                .unwrap_or_default();
                claims["nonce"].as_str().unwrap_or_default().to_owned()
            });
            record.lock().expect("lock").push(nonce.clone());
            if nonce.as_deref() == Some("as-n") {
                TokenAnswer::ok(
                    r#"{"access_token":"at-2","token_type":"DPoP","expires_in":3600,"refresh_token":"rt-2"}"#,
                )
            } else {
                TokenAnswer::bad_request(r#"{"error":"use_dpop_nonce"}"#)
                    .with_header("DPoP-Nonce", "as-n")
            }
        });
        (url, seen)
    }

    #[test]
    fn a_stored_dpop_bound_login_is_refreshed_with_a_proof_and_connects_with_the_dpop_scheme() {
        let (token_endpoint, seen) = nonce_demanding_token_endpoint();
        let text = "[mcp.servers.a]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.a.oauth]\n";
        let config = rho_proto_core::config::parse(text, "<test>").expect("config");
        let d = dir("dpop-refresh");
        let store = FileStore::in_dir(&d);
        let (_, dpop_key) = crate::dpop::DpopKeys::default()
            .key_for("a", None)
            .expect("a key");
        let mut bound = login("at-1", Some("rt-1"));
        if let Some(tokens) = &mut bound.tokens {
            tokens.expires_at = Some(1);
            tokens.token_endpoint = token_endpoint;
            tokens.dpop_key = Some(dpop_key.clone());
        }
        store
            .update(&key("a"), &mut |_| Some(bound.clone()))
            .expect("saved");
        // The key is kept in the owner-only file, beside its tokens.
        let file = fs::read_to_string(d.join("mcp-oauth.json")).expect("file");
        assert!(file.contains(&dpop_key));
        assert!(!format!("{:?}", store.load(&key("a"))).contains(&dpop_key));
        for (round, kind) in [crate::RuntimeKind::Smol, crate::RuntimeKind::Blocking]
            .into_iter()
            .enumerate()
        {
            store
                .update(&key("a"), &mut |_| Some(bound.clone()))
                .expect("reset");
            seen.lock().expect("lock").clear();
            let with = with_stored_tokens(&config, kind, Some(&store), &|_| true);
            assert_eq!(
                header_of(&with, "a").as_deref(),
                Some("DPoP at-2"),
                "{kind:?}"
            );
            // A proof, then once more with the nonce; the next refresh
            // (another round) starts with the nonce it remembered.
            let expected: &[Option<String>] = if round == 0 {
                &[Some(String::new()), Some("as-n".to_owned())]
            } else {
                &[Some("as-n".to_owned())]
            };
            assert_eq!(*seen.lock().expect("lock"), expected, "{kind:?}");
            let tokens = store
                .load(&key("a"))
                .expect("loads")
                .and_then(|l| l.tokens)
                .expect("tokens");
            assert_eq!(tokens.refresh_token.as_deref(), Some("rt-2"));
            assert_eq!(
                tokens.dpop_key.as_deref(),
                Some(dpop_key.as_str()),
                "still bound to its key"
            );
        }
        let _ = fs::remove_dir_all(&d);
    }

    /// The `Authorization` header `with_stored_tokens` gave server `id`.
    fn header_of(config: &rho_proto_core::config::Config, id: &str) -> Option<String> {
        let server = config.get(id)?.config.as_ref().ok()?;
        let rho_proto_core::config::Transport::StreamableHttp(http) = &server.transport else {
            return None;
        };
        http.headers.get("Authorization").cloned()
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

/// How a server authenticates, as `list` and `show` report it (never a
/// secret: only whether a login exists and when it expires).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthStatus {
    /// A configured `Authorization` header: it wins over any `oauth` table.
    Header,
    /// An `oauth` table, with the stored login's state.
    OAuth(OAuthState),
}

/// The stored login of a server with an `oauth` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OAuthState {
    /// Tokens are stored; seconds until the access token expires (negative
    /// once expired), when the server said, and whether it can be refreshed.
    LoggedIn {
        /// Seconds until the access token expires (negative once it has),
        /// when the authorization server said.
        expires_in: Option<i64>,
        /// Whether a refresh token is stored.
        refreshable: bool,
        /// Whether the tokens are DPoP-bound (RFC 9449): sent with a proof
        /// made with the key stored beside them, useless without it.
        dpop_bound: bool,
    },
    /// Nothing stored (or only a registration).
    NeedsLogin,
    /// `oauth.grant = "client_credentials"`: tokens are fetched on connect.
    ClientCredentials,
    /// `oauth.grant = "jwt_bearer"` or `"identity_assertion"`: tokens are
    /// fetched on connect with an assertion read from a file or the
    /// environment.
    Assertion(rho_proto_core::config::OAuthGrant),
    /// The store could not be read.
    StoreError(String),
}

/// The auth status of `config`, reading `store` for OAuth servers; `None`
/// for servers that authenticate neither way.
pub fn auth_status(
    id: &str,
    config: &rho_proto_core::config::ServerConfig,
    store: Option<&dyn CredentialStore>,
    now_unix: u64,
) -> Option<AuthStatus> {
    use rho_proto_core::config::Transport;
    let Transport::StreamableHttp(http) = &config.transport else {
        return None;
    };
    let header = has_authorization_header(http);
    if header {
        return Some(AuthStatus::Header);
    }
    let oauth = http.oauth.as_ref()?;
    match oauth.grant {
        rho_proto_core::config::OAuthGrant::ClientCredentials => {
            return Some(AuthStatus::OAuth(OAuthState::ClientCredentials));
        }
        grant if grant.is_unattended() => {
            return Some(AuthStatus::OAuth(OAuthState::Assertion(grant)));
        }
        _ => {}
    }
    let Some(store) = store else {
        return Some(AuthStatus::OAuth(OAuthState::NeedsLogin));
    };
    let key = StoreKey::new(id, &http.url);
    let state = match store.load(&key) {
        Err(e) => OAuthState::StoreError(e.to_string()),
        Ok(Some(StoredLogin {
            tokens: Some(tokens),
            ..
        })) => OAuthState::LoggedIn {
            expires_in: tokens.expires_at.map(|at| {
                i64::try_from(at).unwrap_or(i64::MAX) - i64::try_from(now_unix).unwrap_or(0)
            }),
            refreshable: tokens.refresh_token.is_some(),
            dpop_bound: tokens.is_bound(),
        },
        Ok(_) => OAuthState::NeedsLogin,
    };
    Some(AuthStatus::OAuth(state))
}

impl AuthStatus {
    /// For a person: `oauth (logged in, expires in 42 min)`.
    pub fn describe(&self, id: &str) -> String {
        match self {
            AuthStatus::Header => "Authorization header (configured)".into(),
            AuthStatus::OAuth(OAuthState::NeedsLogin) => {
                format!("oauth (needs login: run `rho mcp login {id}`)")
            }
            AuthStatus::OAuth(OAuthState::StoreError(e)) => format!("oauth ({e})"),
            AuthStatus::OAuth(OAuthState::ClientCredentials) => "oauth (client credentials)".into(),
            AuthStatus::OAuth(OAuthState::Assertion(grant)) => match grant {
                rho_proto_core::config::OAuthGrant::IdentityAssertion => {
                    "oauth (enterprise-managed: identity assertion)".into()
                }
                _ => "oauth (workload identity: JWT bearer)".into(),
            },
            AuthStatus::OAuth(OAuthState::LoggedIn {
                expires_in,
                refreshable,
                dpop_bound,
            }) => {
                let bound = if *dpop_bound { ", DPoP-bound" } else { "" };
                match expires_in {
                    None => format!("oauth (logged in{bound})"),
                    Some(secs) if *secs > 0 => format!(
                        "oauth (logged in{bound}, expires in {})",
                        duration_words(*secs)
                    ),
                    Some(_) if *refreshable => {
                        format!("oauth (logged in{bound}, expired; refreshes on use)")
                    }
                    Some(_) => format!("oauth (expired: run `rho mcp login {id}`)"),
                }
            }
        }
    }

    /// The `--json` object.
    pub fn json(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            AuthStatus::Header => json!({"kind": "header"}),
            AuthStatus::OAuth(OAuthState::NeedsLogin) => {
                json!({"kind": "oauth", "state": "needs_login"})
            }
            AuthStatus::OAuth(OAuthState::StoreError(e)) => {
                json!({"kind": "oauth", "state": "store_error", "error": e})
            }
            AuthStatus::OAuth(OAuthState::ClientCredentials) => {
                json!({"kind": "oauth", "state": "client_credentials"})
            }
            AuthStatus::OAuth(OAuthState::Assertion(grant)) => {
                json!({"kind": "oauth", "state": grant.name()})
            }
            AuthStatus::OAuth(OAuthState::LoggedIn {
                expires_in,
                refreshable,
                dpop_bound,
            }) => json!({
                "kind": "oauth",
                "state": "logged_in",
                "expires_in_secs": expires_in,
                "refreshable": refreshable,
                "dpop_bound": dpop_bound,
            }),
        }
    }
}

fn duration_words(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

/// Wall-clock seconds since the Unix epoch (0 before it).
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `config` with an `Authorization: Bearer` header (`Authorization: DPoP`
/// for DPoP-bound tokens) for every server in it
/// that has an `oauth` table, no configured Authorization header, and a
/// usable stored login; an access token that has expired (or expires
/// within a minute) is refreshed first, without a person, and the refreshed
/// login is stored before it is used. A server without a usable login is
/// left as it is: its 401 then goes to the session's authorizer
/// ([`crate::reauth`]), like a token refused mid-session. A refresh goes
/// through runtime `kind`'s HTTP stack.
pub fn with_stored_tokens(
    config: &rho_proto_core::config::Config,
    kind: crate::RuntimeKind,
    store: Option<&dyn CredentialStore>,
    select: &dyn Fn(&str) -> bool,
) -> rho_proto_core::config::Config {
    use rho_proto_core::config::Transport;
    let mut config = config.clone();
    let Some(store) = store else {
        return config;
    };
    for entry in &mut config.servers {
        if !select(&entry.id) {
            continue;
        }
        let Ok(server) = &mut entry.config else {
            continue;
        };
        let Transport::StreamableHttp(http) = &mut server.transport else {
            continue;
        };
        let has_header = has_authorization_header(http);
        if http.oauth.is_none() || has_header {
            continue;
        }
        let key = StoreKey::new(&entry.id, &http.url);
        let login = match store.load(&key) {
            Ok(login) => login,
            Err(e) => {
                tracing::warn!(server = %entry.id, "{e}");
                continue;
            }
        };
        let token = match login {
            Some(login) => usable_token(&entry.id, &key, login, http.oauth.as_ref(), store, kind),
            None => None,
        };
        // Without one, the server's 401 asks the session's authorizer,
        // which runs a client-credentials grant (no person needed) or says
        // to run `rho mcp login`.
        if let Some((token, bound)) = token {
            // A DPoP-bound token goes with the DPoP scheme; the session's
            // proofs come from the host's prover, which reads the key
            // stored beside it.
            http.headers.insert(
                "Authorization".into(),
                rho_proto_core::oauth::dpop::authorization(&token, bound),
            );
        }
    }
    config
}

/// Whether `http` has an `Authorization` header, configured or from the
/// environment (a stored token [`with_stored_tokens`] added counts too).
pub fn has_authorization_header(http: &rho_proto_core::config::HttpConfig) -> bool {
    http.headers
        .keys()
        .chain(http.headers_from_env.keys())
        .any(|k| k.eq_ignore_ascii_case("authorization"))
}

/// Whether server `id` of `config` (as [`with_stored_tokens`] left it)
/// can only get a token through a person's browser login: an `oauth`
/// table with the authorization code grant and no `Authorization` header,
/// neither configured nor from a usable stored login.
pub fn needs_browser_login(config: &rho_proto_core::config::Config, id: &str) -> bool {
    use rho_proto_core::config::{OAuthGrant, Transport};
    let Some(Ok(server)) = config.get(id).map(|e| e.config.as_ref()) else {
        return false;
    };
    let Transport::StreamableHttp(http) = &server.transport else {
        return false;
    };
    let has_header = has_authorization_header(http);
    http.oauth
        .as_ref()
        .is_some_and(|o| o.grant == OAuthGrant::AuthorizationCode)
        && !has_header
}

/// The access token to send for a stored login, and whether it is
/// DPoP-bound, refreshing it when it has expired; `None` when only a new
/// login helps.
///
/// A refresh runs under the store's exclusive lock, after reading the
/// login again: a rotating refresh token is spent once, however many rho
/// processes start at the same moment. The first to take the lock
/// refreshes and stores the new pair; the others find it fresh and use
/// it. (Two refreshes of one token look like a stolen token to an
/// authorization server with reuse detection, which then revokes the
/// whole login.)
fn usable_token(
    id: &str,
    key: &StoreKey,
    login: StoredLogin,
    oauth: Option<&rho_proto_core::config::OAuthConfig>,
    store: &dyn CredentialStore,
    kind: crate::RuntimeKind,
) -> Option<(String, bool)> {
    let tokens = login.tokens.as_ref()?;
    if !tokens.needs_refresh(now_unix(), REFRESH_MARGIN_SECS) {
        return Some((tokens.access_token.clone(), tokens.is_bound()));
    }
    let mut token = None;
    let mut failure = None;
    let mut unusable = None;
    let locked = store.update(key, &mut |current| {
        let current = current?;
        match refreshed(id, &current, oauth, kind) {
            Refresh::Fresh(access) => {
                let bound = current.tokens.as_ref().is_some_and(|t| t.is_bound());
                token = Some((access, bound));
                Some(current)
            }
            Refresh::Done(credentials) => {
                // A bound token stays bound to the same key.
                let key = current.tokens.as_ref().and_then(|t| t.dpop_key.clone());
                let bound = rho_proto_core::oauth::dpop::is_bound(&credentials.tokens);
                token = Some((credentials.tokens.access_token.clone(), bound));
                Some(crate::login::stored(
                    &credentials,
                    now_unix(),
                    key.as_deref(),
                ))
            }
            Refresh::Failed(why) => {
                failure = Some(why);
                Some(current)
            }
            Refresh::Unusable(why) => {
                unusable = Some(why);
                Some(current)
            }
            // A refresh token the server refused for good is never sent
            // again; the registered client stays.
            Refresh::Dead(why) => {
                failure = Some(why);
                Some(StoredLogin {
                    tokens: None,
                    ..current
                })
            }
        }
    });
    if let Err(e) = locked {
        tracing::warn!(server = %id, "{e}");
    }
    if let Some(why) = failure {
        // A grant without a person runs again by itself at the server's
        // next 401; only a browser login needs the person.
        let next = if oauth.is_some_and(|o| o.grant.is_unattended()) {
            "its grant runs again when the server asks for a token".to_owned()
        } else {
            format!("run `rho mcp login {id}`")
        };
        tracing::warn!(server = %id, "refreshing the OAuth token failed: {why}; {next}");
    }
    // A login would fail the same way: the reason names what to fix.
    if let Some(why) = unusable {
        tracing::warn!(server = %id, "cannot refresh the OAuth token: {why}");
    }
    token
}

/// How many seconds before it expires a stored access token is refreshed
/// before a connect (so it does not expire on the way).
pub const REFRESH_MARGIN_SECS: u64 = 60;

/// What a refresh attempt of a stored login came to.
enum Refresh {
    /// The login needs none (another process refreshed it meanwhile).
    Fresh(String),
    /// Refreshed: the new credentials, to store.
    Done(Box<rho_proto_core::oauth::flow::Credentials>),
    /// Why not.
    Failed(String),
    /// Why not: the server refused the refresh token for good
    /// (`invalid_grant`).
    Dead(String),
    /// Why not: the client's configured credentials (its secret, its
    /// key) cannot be read; the reason names the key and what to fix.
    Unusable(String),
}

/// Refreshes `login` of server `id` now if it still needs it, through
/// executor `kind`'s HTTP stack. The client authenticates the way its
/// grant did, with what its `oauth` table configures, read now: a
/// `private_key_jwt` client with an assertion signed by its
/// `client_key_file` / `client_key_from_env`, the configured client
/// (`client_id`) with the secret of its `client_secret_file` /
/// `client_secret_from_env`, which the store does not keep.
fn refreshed(
    id: &str,
    login: &StoredLogin,
    oauth: Option<&rho_proto_core::config::OAuthConfig>,
    kind: crate::RuntimeKind,
) -> Refresh {
    let Some(tokens) = login.tokens.as_ref() else {
        return Refresh::Failed("no tokens are stored".into());
    };
    if !tokens.needs_refresh(now_unix(), REFRESH_MARGIN_SECS) {
        return Refresh::Fresh(tokens.access_token.clone());
    }
    let Ok(token_endpoint) = url::Url::parse(&tokens.token_endpoint) else {
        return Refresh::Failed(format!(
            "the stored token endpoint `{}` is not a URL",
            tokens.token_endpoint
        ));
    };
    let (client, configured) = match client_with_configured_secret(id, &login.client, oauth) {
        Ok(client) => client,
        Err(why) => return Refresh::Unusable(why),
    };
    let credentials = rho_proto_core::oauth::flow::Credentials {
        issuer: login.issuer.clone(),
        client,
        resource: tokens.resource.clone(),
        token_endpoint,
        scope: tokens.scope.clone(),
        tokens: rho_proto_core::oauth::token::TokenResponse {
            access_token: tokens.access_token.clone(),
            token_type: if tokens.is_bound() { "DPoP" } else { "Bearer" }.into(),
            expires_in: None,
            refresh_token: tokens.refresh_token.clone(),
            scope: tokens.scope.clone(),
        },
    };
    if credentials.tokens.refresh_token.is_none() {
        return Refresh::Failed("the access token expired and no refresh token is stored".into());
    }
    let client_key = oauth.and_then(|o| o.client_key.as_ref());
    let assertion = match refresh_assertion(id, login, client_key) {
        Ok(assertion) => assertion,
        Err(why) => return Refresh::Unusable(why),
    };
    let Some(request) = rho_proto_core::oauth::flow::refresh_request_with_assertion(
        &credentials,
        assertion.as_deref(),
    ) else {
        return Refresh::Failed("the access token expired and no refresh token is stored".into());
    };
    // A bound refresh token is refreshed with a proof of its key.
    let key = match tokens.dpop_key.as_deref().map(crate::dpop::decode_key) {
        Some(Ok(key)) => Some(key),
        Some(Err(e)) => return Refresh::Failed(e),
        None => None,
    };
    let http = crate::login::LoginHttp::for_runtime(kind);
    let mut prove = |nonce: Option<&str>| {
        let key = key.as_ref()?;
        Some(crate::dpop::proof_now(
            key,
            &rho_proto_core::oauth::dpop::ProofRequest {
                method: "POST",
                url: &request.url,
                access_token: None,
                nonce,
            },
        ))
    };
    let answer = match crate::dpop::send_token_request(
        &http,
        &request.url,
        &request.headers,
        &request.body,
        &mut prove,
    ) {
        Ok(answer) => answer,
        Err(e) => return Refresh::Failed(e),
    };
    match rho_proto_core::oauth::flow::read_refresh(&credentials, answer.status, &answer.body) {
        Ok(mut refreshed) => {
            // What the store keeps: never the configured secret.
            refreshed.client =
                crate::login::client_to_store(&refreshed.client, configured.as_ref());
            Refresh::Done(Box::new(refreshed))
        }
        Err(e) if e.grant_is_dead() => Refresh::Dead(e.to_string()),
        Err(e) => Refresh::Failed(e.to_string()),
    }
}

/// `client` (a stored one, of server `id`) with the secret its `oauth`
/// table configures for it (`client_id` naming it, and
/// `client_secret_file` or `client_secret_from_env`), read now; and that
/// configured client, whose secret the store must not keep. A client the
/// config does not name keeps the secret it was registered with.
fn client_with_configured_secret(
    id: &str,
    client: &Client,
    oauth: Option<&rho_proto_core::config::OAuthConfig>,
) -> Result<(Client, Option<Client>), String> {
    let Some(oauth) = oauth.filter(|o| o.client_id.as_deref() == Some(client.id.as_str())) else {
        return Ok((client.clone(), None));
    };
    match crate::grants::client_secret(id, oauth)? {
        Some(secret) => {
            let client = Client {
                secret: Some(secret),
                ..client.clone()
            };
            Ok((client.clone(), Some(client)))
        }
        None => Ok((client.clone(), None)),
    }
}

/// The client assertion the refresh of `login` (server `id`) carries: for
/// a `private_key_jwt` client, one signed now with the configured key for
/// the issuer that minted the tokens; none for other clients.
fn refresh_assertion(
    id: &str,
    login: &StoredLogin,
    client_key: Option<&rho_proto_core::config::OAuthClientKey>,
) -> Result<Option<String>, String> {
    if login.client.auth != ClientAuth::PrivateKeyJwt {
        return Ok(None);
    }
    let key = match client_key {
        Some(source) => Some(rho_proto_core::oauth::assertion::ClientAssertionKey {
            signer: crate::login::client_key(id, source)?,
            now_unix: now_unix(),
        }),
        None => None,
    };
    let random = crate::login::random()?;
    rho_proto_core::oauth::flow::client_assertion_for(
        &login.client,
        &login.issuer,
        key.as_ref(),
        &random,
    )
    .map_err(|e| {
        format!(
            "{e} (configure `oauth.client_key_file` or `client_key_from_env` for server `{id}`)"
        )
    })
}
