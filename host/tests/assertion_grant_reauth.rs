//! The authorizer every configured OAuth server gets reads an assertion
//! grant's secrets when each login starts, not once at connect: a
//! workload token the platform writes (or rotates) later is the one sent,
//! and a missing one fails the login naming the server and the key.

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
