//! The assertion grants in the host: the authorizer every configured
//! OAuth server gets reads a grant's secrets when each login starts, not
//! once at connect (a workload token the platform writes, or rotates,
//! later is the one sent; a missing one fails the login naming the server
//! and the key), and `list` / `show` describe such a server without a
//! login.

use std::sync::Arc;

use rho_host::{
    AuthorizationPrompt, Host, HostBuilder, LoadedConfig, LoginMode, MemoryStore, RuntimeOptions,
    Url,
};
use rho_proto_core::http::AuthorizationError;
use rho_proto_core::oauth::challenge::BearerChallenge;
use rho_proto_core::session::AuthorizationReason;

#[test]
fn a_workload_token_is_read_when_the_login_starts_not_at_connect() {
    let dir = std::env::temp_dir().join(format!("rho-wif-reauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let token = dir.join("token");
    // Nothing listens on port 9: a login that gets past its secrets fails
    // at discovery instead.
    let text = format!(
        "[mcp.servers.w]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/mcp\"\n[mcp.servers.w.oauth]\ngrant = \"jwt_bearer\"\nassertion_file = \"{}\"\n",
        token.display()
    );
    let loaded =
        LoadedConfig::from(rho_proto_core::config::parse(&text, "<test>").expect("config"));
    let connecting = builder(&loaded).prepare();
    let authorizer = connecting.authorizer().expect("an OAuth server");
    let authorize = || {
        authorizer.authorize(
            "w",
            AuthorizationReason::Unauthorized,
            &BearerChallenge::default(),
        )
    };
    // The platform has not written the token yet: the file is what to
    // fix (a login would read the same file), so no login is suggested.
    let why = authorize().expect_err("no token file");
    let AuthorizationError::GrantMisconfigured { server, reason } = &why else {
        panic!("{why:?}")
    };
    assert_eq!(server, "w");
    assert!(
        reason.starts_with("`oauth.assertion_file`") && reason.contains("cannot be read"),
        "{reason}"
    );
    assert!(!why.to_string().contains("rho mcp login"), "{why}");
    // Now it has: the next login reads it and goes on to discovery.
    std::fs::write(&token, "eyJ.workload.sig\n").expect("token written");
    let why = authorize().expect_err("no server there");
    let AuthorizationError::LoginNeeded { reason, .. } = &why else {
        panic!("{why:?}")
    };
    assert!(
        reason.contains("fetching the protected resource metadata failed"),
        "{reason}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_and_show_describe_an_assertion_grant_and_never_need_a_login() {
    use rho_host::{AuthStatus, OAuthState, auth_status};
    use rho_proto_core::config::OAuthGrant;
    let text = "[mcp.servers.w]\ntransport = \"streamable_http\"\nurl = \"https://w.example.com/mcp\"\n[mcp.servers.w.oauth]\ngrant = \"jwt_bearer\"\nassertion_from_env = \"MCP_JWT\"\n\
        [mcp.servers.e]\ntransport = \"streamable_http\"\nurl = \"https://e.example.com/mcp\"\n[mcp.servers.e.oauth]\ngrant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_from_env = \"SSO\"\nidp_token_endpoint = \"https://idp.example.com/token\"\n";
    let config = rho_proto_core::config::parse(text, "<test>").expect("config");
    let status = |id: &str| {
        let server = config.get(id).expect(id).config.as_ref().expect("valid");
        auth_status(id, server, None, 0).expect("an OAuth server")
    };
    let workload = status("w");
    assert_eq!(
        workload,
        AuthStatus::OAuth(OAuthState::Assertion(OAuthGrant::JwtBearer))
    );
    assert_eq!(
        workload.describe("w"),
        "oauth (workload identity: JWT bearer)"
    );
    assert_eq!(workload.json()["state"], "jwt_bearer");
    let enterprise = status("e");
    assert_eq!(
        enterprise.describe("e"),
        "oauth (enterprise-managed: identity assertion)"
    );
    assert_eq!(enterprise.json()["state"], "identity_assertion");
    // Neither waits for a person's login before connecting: with a
    // person to ask, the connect leaves neither out for a browser login.
    let loaded = LoadedConfig::from(config);
    let connecting = builder(&loaded)
        .login(LoginMode::Person(Arc::new(NoOneLooks)))
        .defer_browser_logins()
        .prepare();
    assert!(
        connecting.deferred().is_empty(),
        "{:?}",
        connecting.deferred()
    );
}

/// A connect of `loaded` with a store of its own and no process
/// environment, no login reaching a person unless the test says.
fn builder(loaded: &LoadedConfig) -> HostBuilder<'_> {
    Host::builder(loaded)
        .options(RuntimeOptions::new(Vec::new(), None))
        .store(Some(Arc::new(MemoryStore::default())))
        .login(LoginMode::Never)
}

/// A person who is never shown anything: no login here gets that far.
struct NoOneLooks;

impl AuthorizationPrompt for NoOneLooks {
    fn show(&self, server: &str, url: &Url) {
        panic!("server `{server}` asked for a browser login at {url}");
    }
}

/// Preparing a connect reads no secret: the file of every secret key
/// (the workload JWT, the ID token, the identity provider's client
/// secret, the client secret, the client key) is opened only when its
/// server's grant runs, at that server's 401, inside its startup budget
/// and after a CLI has installed its signal handlers, so a file that
/// cannot be read fails that server alone. inotify shows every open of
/// a file in their directory as it happens: none while the connect is
/// prepared, then the one of the grant that ran.
#[cfg(target_os = "linux")]
#[test]
fn preparing_a_connect_opens_no_secret_file_until_its_grant_runs() {
    use rustix::fs::inotify;
    let dir = std::env::temp_dir().join(format!("rho-secret-opens-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write");
        format!("{:?}", path.display().to_string())
    };
    let pem = {
        // Any text: the grant that would parse it never runs here.
        file("key.pem", "-----BEGIN PRIVATE KEY-----\n")
    };
    let (jwt, id_token) = (file("jwt", "eyJ.w.sig"), file("id_token", "eyJ.i.sig"));
    let (idp_secret, secret) = (file("idp_secret", "idp"), file("secret", "m2m"));
    // Nothing listens on port 9: a grant that gets past its secrets fails
    // at discovery.
    let server = |id: &str, oauth: String| {
        format!(
            "[mcp.servers.{id}]\ntransport = \"streamable_http\"\nurl = \"http://127.0.0.1:9/{id}\"\n[mcp.servers.{id}.oauth]\n{oauth}"
        )
    };
    let text = [
        server(
            "w",
            format!("grant = \"jwt_bearer\"\nassertion_file = {jwt}\n"),
        ),
        server(
            "e",
            format!(
                "grant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_file = {id_token}\nidp_token_endpoint = \"https://idp.example.com/token\"\nidp_client_id = \"idp\"\nidp_client_secret_file = {idp_secret}\n"
            ),
        ),
        server(
            "m",
            format!("grant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret_file = {secret}\n"),
        ),
        server(
            "k",
            format!("grant = \"client_credentials\"\nclient_id = \"k\"\nclient_key_file = {pem}\n"),
        ),
    ]
    .concat();
    let loaded = LoadedConfig {
        path: None,
        config: rho_proto_core::config::parse(&text, "<test>").expect("config"),
        adhoc: None,
    };
    let watch = inotify::init(inotify::CreateFlags::NONBLOCK).expect("inotify");
    inotify::add_watch(&watch, &dir, inotify::WatchFlags::OPEN).expect("watch");
    let opened = || {
        let mut names = Vec::new();
        let mut buf = [std::mem::MaybeUninit::uninit(); 4096];
        let mut events = inotify::Reader::new(&watch, &mut buf);
        while let Ok(event) = events.next() {
            if let Some(name) = event.file_name() {
                names.push(name.to_string_lossy().into_owned());
            }
        }
        names
    };
    let connecting = builder(&loaded).prepare();
    let authorizer = Arc::clone(connecting.authorizer().expect("OAuth servers"));
    assert_eq!(opened(), Vec::<String>::new(), "read while preparing");
    // The workload's grant runs: its JWT, and only it, is read now.
    let why = authorizer
        .authorize(
            "w",
            AuthorizationReason::Unauthorized,
            &BearerChallenge::default(),
        )
        .expect_err("no server there");
    assert!(
        why.to_string().contains("protected resource metadata"),
        "{why}"
    );
    assert_eq!(opened(), ["jwt"]);
    let _ = std::fs::remove_dir_all(&dir);
}
