//! Connecting the way `rho mcp` does: what a host does between loading a
//! config and starting its servers, so that OAuth servers connect with
//! the logins the person already made.
//!
//! [`prepare`], for the servers a host selects:
//! - a stored login becomes an `Authorization: Bearer` header (`DPoP`
//!   for a DPoP-bound one, whose proofs the authorizer makes), refreshed
//!   first when it has expired or expires within a minute (without a
//!   person; the refreshed login is stored before it is used);
//! - with a person to ask ([`LoginMode::Person`]), a server that can only
//!   get a token through a browser login logs in now, before connecting:
//!   a 401 at connect would give that login only the startup budget;
//! - an [`Authorizer`] for tokens refused mid-session (refresh, client
//!   credentials, a step-up login where `mode` allows one), for the
//!   host's `HostServices::authorizer`.
//!
//! [`prepare_deferring_logins`] is [`prepare`] for a host that lets no
//! server wait for another's browser login (a shell): it runs none, and
//! lists the servers that need one for the host to start later, after
//! [`login_server`].
//!
//! [`Host::connect`] is [`prepare`] followed by [`Host::start_where`].

use std::sync::Arc;

use rho_proto_core::config::Config;
use rho_proto_core::host::{Authorizer, RuntimeOptions};
use rho_proto_core::oauth::store::CredentialStore;

use crate::config::LoadedConfig;
use crate::credentials::{FileStore, needs_browser_login, with_stored_tokens};
use crate::login::{LoggedIn, LoginError, LoginMode, login_server};
use crate::reauth::StoreAuthorizer;
use crate::{Host, RuntimeKind};

/// One login run before connecting: the server and how it went.
pub type LoginOutcome = (String, Result<LoggedIn, LoginError>);

/// A config ready to start: stored logins applied, and the authorizer.
pub struct Prepared {
    /// The config with each usable stored login as an `Authorization`
    /// header.
    pub config: Config,
    /// What answers a refused token mid-session; `None` when no selected
    /// server uses OAuth (or there is no credential store).
    pub authorizer: Option<Arc<dyn Authorizer>>,
    /// The browser logins run before connecting (only with a person), by
    /// server, in config order.
    pub logins: Vec<LoginOutcome>,
    /// The servers whose browser login [`prepare_deferring_logins`] left
    /// for later, in config order: start the others without them, and
    /// each once its [`login_server`] has succeeded.
    pub deferred: Vec<String>,
}

/// Prepares the servers of `loaded` that `select` accepts, with the
/// credential store at its default place (`~/.rho/mcp-oauth.json`; none
/// without a home directory). Logins and refreshes go through executor
/// `kind`'s HTTP stack.
pub fn prepare(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    mode: &LoginMode,
    select: &dyn Fn(&str) -> bool,
) -> Prepared {
    let store = FileStore::default_location().map(|s| Arc::new(s) as Arc<dyn CredentialStore>);
    prepare_with(loaded, store, kind, mode, select)
}

/// [`prepare`] for a host that starts every server at once and lets a
/// person log in to each when they choose (a shell): no browser login is
/// run here. A server that can only get a token through one is listed in
/// [`Prepared::deferred`] instead (only with a person; with no one to ask
/// it is started and fails at connect saying to log in). Mid-session
/// re-authorization still reaches the person through `mode`.
pub fn prepare_deferring_logins(
    loaded: &LoadedConfig,
    kind: RuntimeKind,
    mode: &LoginMode,
    select: &dyn Fn(&str) -> bool,
) -> Prepared {
    let store = FileStore::default_location().map(|s| Arc::new(s) as Arc<dyn CredentialStore>);
    let config = with_stored_tokens(&loaded.config, kind, store.as_deref(), select);
    let deferred = match (mode, &store) {
        (LoginMode::Person(_), Some(_)) => browser_logins_needed(&config, select),
        _ => Vec::new(),
    };
    let authorizer = StoreAuthorizer::for_config(&loaded.config, store, mode.clone(), kind, select);
    Prepared {
        config,
        authorizer,
        logins: Vec::new(),
        deferred,
    }
}

/// The enabled servers `select` accepts that only a browser login can give
/// a token, in config order.
fn browser_logins_needed(config: &Config, select: &dyn Fn(&str) -> bool) -> Vec<String> {
    config
        .servers
        .iter()
        .filter(|e| select(&e.id) && e.config.as_ref().is_ok_and(|c| c.enabled))
        .map(|e| e.id.clone())
        .filter(|id| needs_browser_login(config, id))
        .collect()
}

/// [`prepare`] with the host's own credential store.
pub fn prepare_with(
    loaded: &LoadedConfig,
    store: Option<Arc<dyn CredentialStore>>,
    kind: RuntimeKind,
    mode: &LoginMode,
    select: &dyn Fn(&str) -> bool,
) -> Prepared {
    let mut config = with_stored_tokens(&loaded.config, kind, store.as_deref(), select);
    let mut logins = Vec::new();
    if let (LoginMode::Person(_), Some(store)) = (mode, &store) {
        for id in browser_logins_needed(&config, select) {
            let outcome = login_server(loaded, store.as_ref(), kind, &id, mode);
            logins.push((id, outcome));
        }
        if logins.iter().any(|(_, outcome)| outcome.is_ok()) {
            config = with_stored_tokens(&loaded.config, kind, Some(store.as_ref()), select);
        }
    }
    let authorizer = StoreAuthorizer::for_config(&loaded.config, store, mode.clone(), kind, select);
    Prepared {
        config,
        authorizer,
        logins,
        deferred: Vec::new(),
    }
}

impl Host {
    /// Starts the enabled servers of `loaded` that `select` accepts the
    /// way `rho mcp` does ([`prepare`], then [`Host::start_where`] with
    /// the authorizer in `options.host`), and returns the logins run
    /// before connecting.
    pub fn connect(
        kind: RuntimeKind,
        loaded: &LoadedConfig,
        mut options: RuntimeOptions,
        mode: &LoginMode,
        select: impl Fn(&str) -> bool,
    ) -> (Self, Vec<LoginOutcome>) {
        let prepared = prepare(loaded, kind, mode, &select);
        options.host.authorizer = prepared.authorizer;
        let host = Host::start_where(kind, &prepared.config, options, select);
        (host, prepared.logins)
    }
}
