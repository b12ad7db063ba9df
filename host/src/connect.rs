//! Connecting the way `rho mcp` does, through one builder: what a host does
//! between loading a config and starting its servers, so that OAuth
//! servers connect with the logins the person already made.
//!
//! [`Host::builder`] takes the loaded config; its settings say which
//! executor, which options and services, which servers, and how a login
//! may reach a person. [`HostBuilder::connect`] then, for the servers it
//! selects:
//! - turns a stored login into an `Authorization: Bearer` header (`DPoP`
//!   for a DPoP-bound one, whose proofs the authorizer makes), refreshed
//!   first when it has expired or expires within a minute (without a
//!   person; the refreshed login is stored before it is used);
//! - with a person to ask ([`LoginMode::Person`]), logs in now, before
//!   connecting, to a server that can only get a token through a browser
//!   login: a 401 at connect would give that login only the startup budget
//!   (or, with [`HostBuilder::defer_browser_logins`], leaves that server
//!   out and names it, for a host that lets no server wait for another's
//!   login: a shell);
//! - installs an [`Authorizer`] for tokens refused mid-session (refresh,
//!   client credentials, a step-up login where the mode allows one);
//! - starts the servers and waits until each is ready or has failed.
//!
//! [`HostBuilder::prepare`] stops before the start, for a host that reads
//! the logins' outcomes first (`rho mcp call` fails on a failed login
//! rather than connect without it); [`Connecting::start`] goes on.
//!
//! The host keeps what it was built from, so [`Host::reconnect`] starts a
//! server again with the stored logins as they are now, and
//! [`Host::logins`] runs a browser login for one of its servers.

use std::sync::Arc;

use rho_proto_core::config::{Config, LogLevel};
use rho_proto_core::host::{Authorizer, HostServices, RuntimeOptions};
use rho_proto_core::oauth::store::CredentialStore;
use rho_proto_core::runtime::{CallOptions, ServerView, StartServerError, ToolCallError};

use crate::config::LoadedConfig;
use crate::credentials::FileStore;
use crate::login::{LoggedIn, LoginError, LoginMode, login_server};
use crate::reauth::StoreAuthorizer;
use crate::stored_tokens::{needs_browser_login, with_stored_tokens};
use crate::{Host, RuntimeKind};

/// One login run before connecting: the server and how it went.
pub type LoginOutcome = (String, Result<LoggedIn, LoginError>);

/// How to connect a [`Host`]: made by [`Host::builder`], finished by
/// [`HostBuilder::connect`] (or [`HostBuilder::prepare`] then
/// [`Connecting::start`]).
#[must_use = "a builder starts nothing until `connect`"]
pub struct HostBuilder<'a> {
    loaded: &'a LoadedConfig,
    kind: RuntimeKind,
    options: Option<RuntimeOptions>,
    services: Option<HostServices>,
    mode: LoginMode,
    store: Option<Arc<dyn CredentialStore>>,
    select: Box<dyn Fn(&str) -> bool + 'a>,
    defer_logins: bool,
    log_level: Option<LogLevel>,
    moving: Moving,
}

/// What keeps a host's sessions moving between its calls.
#[derive(Clone, Default)]
pub(crate) enum Moving {
    /// Nothing: on smol they move only while a call waits (the CLI).
    #[default]
    OnCalls,
    /// A thread of the host's own ([`HostBuilder::executor_thread`]).
    Thread,
    /// The agent's smol executor, which the agent runs
    /// ([`HostBuilder::smol_executor`]).
    #[cfg(feature = "smol")]
    Agent(Arc<smol::Executor<'static>>),
}

impl Host {
    /// A builder that connects the servers of `loaded`: by default every
    /// enabled server, on the default executor ([`RuntimeKind::default`]:
    /// smol when this build has it), with the options of this
    /// process's environment and current directory, no host services, the
    /// credential store at its default place (`~/.rho/mcp-oauth.json`;
    /// none without a home directory), and no login that needs a person.
    pub fn builder(loaded: &LoadedConfig) -> HostBuilder<'_> {
        HostBuilder {
            loaded,
            kind: RuntimeKind::default(),
            options: None,
            services: None,
            mode: LoginMode::Never,
            store: FileStore::default_location().map(|s| Arc::new(s) as Arc<dyn CredentialStore>),
            select: Box::new(|_| true),
            defer_logins: false,
            log_level: None,
            moving: Moving::OnCalls,
        }
    }
}

impl<'a> HostBuilder<'a> {
    /// Which executor drives the sessions ([`RuntimeKind::default`] by
    /// default).
    pub fn runtime(mut self, kind: RuntimeKind) -> Self {
        self.kind = kind;
        self
    }

    /// The runtime's options (environment, workspace, transcript,
    /// interrupt, services). An authorizer in `options.host` is kept;
    /// without one, the connect installs its own.
    pub fn options(mut self, options: RuntimeOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// Who answers servers' questions and runs sampling, in place of the
    /// services in the options.
    pub fn services(mut self, services: HostServices) -> Self {
        self.services = Some(services);
        self
    }

    /// Whether, and how, a login may reach a person
    /// ([`LoginMode::Never`] by default).
    pub fn login(mut self, mode: LoginMode) -> Self {
        self.mode = mode;
        self
    }

    /// The credential store the logins are read from and written to, in
    /// place of the default one; `None` for no store (no stored login is
    /// applied and no login is run).
    pub fn store(mut self, store: Option<Arc<dyn CredentialStore>>) -> Self {
        self.store = store;
        self
    }

    /// Starts only the enabled servers `select` accepts; the others stay
    /// `NotStarted` ([`Host::start_server`] can start them later).
    pub fn only(mut self, select: impl Fn(&str) -> bool + 'a) -> Self {
        self.select = Box::new(select);
        self
    }

    /// Runs no browser login before connecting: a server that can only
    /// get a token through one is left out and listed in
    /// [`Connected::deferred`] (only with a person; with no one to ask it
    /// is started and fails at connect saying to log in), for the host to
    /// start after its login ([`Host::logins`]). Mid-session re-authorization still
    /// reaches the person through the login mode.
    pub fn defer_browser_logins(mut self) -> Self {
        self.defer_logins = true;
        self
    }

    /// Every server's log level, over its own `log_level` (`--log-level`).
    pub fn log_level(mut self, level: Option<LogLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// Keeps the sessions moving between calls: on the smol executor, one
    /// thread runs it until the host shuts down (the blocking executor has
    /// a thread per session already). A host whose threads are busy
    /// between calls (a UI, an agent loop, a tokio runtime) wants it, so
    /// that server notifications, list changes and server requests are
    /// handled while it is elsewhere; a command that only ever waits on
    /// the runtime does not.
    pub fn executor_thread(mut self) -> Self {
        self.moving = Moving::Thread;
        self
    }

    /// Runs the sessions as tasks on `executor`, the agent's own smol
    /// executor, which the agent keeps running (`smol::block_on(executor.
    /// run(..))` on a thread that lives as long as the host: on Linux a
    /// stdio server ends with the thread that spawned it). The async face
    /// ([`Host::into_async`]) then awaits the sessions' own futures on it,
    /// so a call crosses no thread and costs what the smol executor driven
    /// directly costs. Picks the smol runtime. Connect from outside that
    /// executor (before running it, or from a thread that is not running
    /// it): the start runs it on the calling thread until the servers are
    /// up.
    #[cfg(feature = "smol")]
    pub fn smol_executor(mut self, executor: Arc<smol::Executor<'static>>) -> Self {
        self.kind = RuntimeKind::Smol;
        self.moving = Moving::Agent(executor);
        self
    }

    /// Applies the stored logins and runs the logins a person must make
    /// now (as [`HostBuilder::login`] allows), but starts nothing yet.
    pub fn prepare(self) -> Connecting<'a> {
        let HostBuilder {
            loaded,
            kind,
            options,
            services,
            mode,
            store,
            select,
            defer_logins,
            log_level,
            moving,
        } = self;
        let origin = Origin {
            loaded: loaded.clone(),
            kind,
            mode,
            store,
            log_level,
        };
        let mut logins = Vec::new();
        let (mut config, mut deferred) = origin.config(&select);
        if !defer_logins {
            if let (LoginMode::Person(_), Some(store)) = (&origin.mode, &origin.store) {
                for id in std::mem::take(&mut deferred) {
                    let outcome = login_server(loaded, store.as_ref(), kind, &id, &origin.mode);
                    logins.push((id, outcome));
                }
                if logins.iter().any(|(_, outcome)| outcome.is_ok()) {
                    config = origin.config(&select).0;
                }
            }
            deferred.clear();
        }
        let mut options = options.unwrap_or_else(rho_os::options_from_process_env);
        if let Some(services) = services {
            let authorizer = options.host.authorizer.take();
            options.host = services;
            if options.host.authorizer.is_none() {
                options.host.authorizer = authorizer;
            }
        }
        if options.host.authorizer.is_none() {
            options.host.authorizer = StoreAuthorizer::for_config(
                &loaded.config,
                origin.store.clone(),
                origin.mode.clone(),
                kind,
                &*select,
            );
        }
        Connecting {
            origin,
            config,
            options,
            select,
            logins,
            deferred,
            moving,
        }
    }

    /// Connects: [`HostBuilder::prepare`], then [`Connecting::start`].
    pub fn connect(self) -> Connected {
        self.prepare().start()
    }
}

/// A connect prepared but not started: the logins have run, the config
/// carries the stored ones.
pub struct Connecting<'a> {
    origin: Origin,
    config: Config,
    options: RuntimeOptions,
    select: Box<dyn Fn(&str) -> bool + 'a>,
    logins: Vec<LoginOutcome>,
    deferred: Vec<String>,
    moving: Moving,
}

impl Connecting<'_> {
    /// The logins run before connecting, by server, in config order.
    pub fn logins(&self) -> &[LoginOutcome] {
        &self.logins
    }

    /// The servers left out for their browser login
    /// ([`HostBuilder::defer_browser_logins`]), in config order.
    pub fn deferred(&self) -> &[String] {
        &self.deferred
    }

    /// The config the servers will start with (each usable stored login
    /// as an `Authorization` header).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// What will answer a token refused mid-session; `None` when no
    /// selected server uses OAuth (or there is no credential store).
    pub fn authorizer(&self) -> Option<&Arc<dyn Authorizer>> {
        self.options.host.authorizer.as_ref()
    }

    /// Whether [`Connecting::start`] will start any server (an enabled one
    /// that was selected and not left for its browser login).
    pub fn starts_any(&self) -> bool {
        let inventory = rho_proto_core::runtime::Inventory::new(&self.config, |id: &str| {
            (self.select)(id) && !self.deferred.iter().any(|d| d == id)
        });
        !inventory.to_start().is_empty()
    }

    /// Starts the selected servers, except those left for their browser
    /// login, and waits until each is ready or has failed (within its
    /// startup budget, all at once).
    pub fn start(self) -> Connected {
        let (select, deferred) = (&self.select, &self.deferred);
        let host = Host::start_where(
            &self.config,
            self.options,
            |id: &str| select(id) && !deferred.iter().any(|d| d == id),
            Arc::new(self.origin),
            self.moving,
        );
        Connected {
            host,
            logins: self.logins,
            deferred: self.deferred,
        }
    }
}

/// A connected host, and what happened on the way.
#[must_use = "dropping the host closes every session"]
pub struct Connected {
    /// The running host.
    pub host: Host,
    /// The browser logins run before connecting, by server, in config
    /// order (only with a person, and not deferred).
    pub logins: Vec<LoginOutcome>,
    /// The servers left out for their browser login
    /// ([`HostBuilder::defer_browser_logins`]), in config order.
    pub deferred: Vec<String>,
}

/// What a host was connected from, kept for [`Host::reconnect`] and
/// [`Host::logins`].
pub(crate) struct Origin {
    loaded: LoadedConfig,
    pub(crate) kind: RuntimeKind,
    mode: LoginMode,
    store: Option<Arc<dyn CredentialStore>>,
    log_level: Option<LogLevel>,
}

impl Origin {
    /// The config of the servers `select` accepts with the stored logins
    /// applied and the log level over each server's own; and, with a
    /// person to ask and a store, the enabled ones among them that only a
    /// browser login can give a token, in config order.
    fn config(&self, select: &dyn Fn(&str) -> bool) -> (Config, Vec<String>) {
        let mut config = with_stored_tokens(
            &self.loaded.config,
            self.kind,
            self.store.as_deref(),
            select,
        );
        if let Some(level) = self.log_level {
            for entry in &mut config.servers {
                if let Ok(server) = entry.config.as_mut() {
                    server.log_level = Some(level);
                }
            }
        }
        let deferred = match (&self.mode, &self.store) {
            (LoginMode::Person(_), Some(_)) => config
                .servers
                .iter()
                .filter(|e| select(&e.id) && e.config.as_ref().is_ok_and(|c| c.enabled))
                .map(|e| e.id.clone())
                .filter(|id| needs_browser_login(&config, id))
                .collect(),
            _ => Vec::new(),
        };
        (config, deferred)
    }
}

/// What [`Host::reconnect`] did.
#[derive(Debug)]
pub struct Reconnected {
    /// Whether the server had a session, which was closed first.
    pub closed: bool,
    /// The server as it started, or why it was not started.
    pub started: Result<ServerView, StartServerError>,
    /// The servers that still need a browser login before they can
    /// connect (with a person to ask), in config order.
    pub awaiting_login: Vec<String>,
    /// The resources the host was subscribed to on the server, each with
    /// whether the new session took the subscription again (an error
    /// when it refused, or when the server did not start).
    pub resubscribed: Vec<(String, Result<(), ToolCallError>)>,
}

impl Host {
    /// Starts server `id` again with the config it was connected from
    /// and the stored logins as they are now (so a login made since
    /// counts), its session closed first if it has one; the other servers
    /// keep theirs. What the host was subscribed to on it is subscribed to
    /// again on the new session ([`Reconnected::resubscribed`] says how
    /// each went). Call it from a thread that lives as long as the
    /// sessions: a stdio server is tied to the thread that spawns it.
    pub fn reconnect(&mut self, id: &str) -> Reconnected {
        let (config, awaiting_login) = self.origin.config(&|_| true);
        let watched = self.watched.take(id);
        let closed = self.stop_server(id);
        let started = self.start_server(id, &config);
        let resubscribed = watched
            .into_iter()
            .map(|uri| {
                let outcome = match &started {
                    Ok(_) => self.subscribe_resource(id, &uri, CallOptions::new()),
                    Err(error) => Err(ToolCallError::ServerNotReady {
                        server: id.to_owned(),
                        reason: error.to_string(),
                    }),
                };
                (uri, outcome)
            })
            .collect();
        Reconnected {
            closed,
            started,
            awaiting_login,
            resubscribed,
        }
    }

    /// The logins of this host's servers, as a handle that needs no
    /// borrow of the host: a browser login waits for the person, and the
    /// host stays free for calls meanwhile.
    pub fn logins(&self) -> Logins {
        Logins(Arc::clone(&self.origin))
    }
}

/// Logs in to a host's servers ([`Host::logins`]).
#[derive(Clone)]
pub struct Logins(Arc<Origin>);

impl Logins {
    /// Logs in to server `id` now, as `mode` allows, and stores the login
    /// in the host's credential store; [`Host::reconnect`] then starts the
    /// server with it.
    pub fn log_in(&self, id: &str, mode: &LoginMode) -> Result<LoggedIn, LoginError> {
        let origin = &self.0;
        let store = origin.store.as_deref().ok_or(LoginError::NoStore)?;
        login_server(&origin.loaded, store, origin.kind, id, mode)
    }
}
