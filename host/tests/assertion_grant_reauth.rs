//! The assertion grants in the host: the authorizer every configured
//! OAuth server gets reads a grant's secrets when each login starts, not
//! once at connect (a workload token the platform writes, or rotates,
//! later is the one sent; a missing one fails the login naming the server
//! and the key), and `list` / `show` describe such a server without a
//! login.

use std::sync::Arc;

use rho_host::RuntimeKind;
use rho_host::login::LoginMode;
use rho_host::reauth::{MemoryStore, StoreAuthorizer};
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
    let config = rho_proto_core::config::parse(&text, "<test>").expect("config");
    let authorizer = StoreAuthorizer::for_config(
        &config,
        Some(Arc::new(MemoryStore::default())),
        LoginMode::Never,
        RuntimeKind::Smol,
        &|_| true,
    )
    .expect("an OAuth server");
    let authorize = || {
        authorizer.authorize(
            "w",
            AuthorizationReason::Unauthorized,
            &BearerChallenge::default(),
        )
    };
    // The platform has not written the token yet.
    let why = authorize().expect_err("no token file");
    let AuthorizationError::LoginNeeded { server, reason } = &why else {
        panic!("{why:?}")
    };
    assert_eq!(server, "w");
    assert!(
        reason.contains("server `w`: `oauth.assertion_file`") && reason.contains("cannot be read"),
        "{reason}"
    );
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
    use rho_host::credentials::{AuthStatus, OAuthState, auth_status};
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
    // Neither waits for a person's login before connecting.
    assert!(!rho_host::credentials::needs_browser_login(&config, "w"));
    assert!(!rho_host::credentials::needs_browser_login(&config, "e"));
}
