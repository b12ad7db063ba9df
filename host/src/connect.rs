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
        let ids: Vec<String> = config
            .servers
            .iter()
            .filter(|e| select(&e.id) && e.config.as_ref().is_ok_and(|c| c.enabled))
            .map(|e| e.id.clone())
            .filter(|id| needs_browser_login(&config, id))
            .collect();
        for id in ids {
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
