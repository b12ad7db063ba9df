//! The OAuth login state machine against scripted authorization servers:
//! every step's request order, the checks that end a login, and its bounds.

// A fake clock needs one real origin; the core only compares instants.
#![allow(clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use rho_proto_core::oauth::authorize::CallbackError;
use rho_proto_core::oauth::challenge::BearerChallenge;
use rho_proto_core::oauth::discovery::DiscoveryError;
use rho_proto_core::oauth::flow::{
    Credentials, DISCOVERY_BUDGET, GrantKind, LOGIN_BUDGET, Login, LoginError, LoginEvent,
    LoginSettings, OAuthRequest,
};
use rho_proto_core::oauth::pkce::{Pkce, RANDOM_BYTES};
use rho_proto_core::oauth::token::{Client, ClientAuth};
use url::Url;

mod common;
use common::FixedSigner;

const SERVER: &str = "https://mcp.example.com/mcp";
const ISSUER: &str = "https://auth.example.com";

fn settings(grant: GrantKind) -> LoginSettings {
    LoginSettings::new(Url::parse(SERVER).expect("url"), grant)
}

fn code_grant() -> GrantKind {
    GrantKind::AuthorizationCode {
        redirect_uri: "http://127.0.0.1:4000/callback".into(),
    }
}

fn prm() -> String {
    format!(
        r#"{{"resource":"{SERVER}","authorization_servers":["{ISSUER}"],"scopes_supported":["mcp:basic"]}}"#
    )
}

fn asm(extra: &str) -> String {
    format!(
        r#"{{"issuer":"{ISSUER}","authorization_endpoint":"{ISSUER}/authorize","token_endpoint":"{ISSUER}/token","registration_endpoint":"{ISSUER}/register","code_challenge_methods_supported":["S256"]{extra}}}"#
    )
}

const TOKENS: &str =
    r#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-1"}"#;

/// Drives `login`: answers each request with `answer(url, body)`.
fn drive(
    login: &mut Login,
    now: Instant,
    answer: &mut dyn FnMut(&OAuthRequest) -> (u16, String),
) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(request) = login.poll_request() {
        seen.push(format!("{} {}", request.method, request.url));
        let (status, body) = answer(&request);
        login.handle_response(now, request.id, status, body.as_bytes());
    }
    seen
}

fn events(login: &mut Login) -> Vec<LoginEvent> {
    std::iter::from_fn(|| login.poll_event()).collect()
}

fn query_of(url: &Url, key: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[test]
fn the_whole_code_flow_with_dynamic_registration() {
    let now = Instant::now();
    let challenge = BearerChallenge {
        resource_metadata: Some(
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp".into(),
        ),
        scope: Some(vec!["mcp:basic".into()]),
        ..BearerChallenge::default()
    };
    let mut login = Login::new(
        settings(code_grant()),
        Some(challenge),
        [9; RANDOM_BYTES],
        now,
    );
    let mut registered_body = String::new();
    let seen = drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (404, String::new()),
        "/.well-known/openid-configuration" => (200, asm("")),
        "/register" => {
            registered_body = String::from_utf8_lossy(&r.body).into_owned();
            (201, r#"{"client_id":"dyn-1"}"#.into())
        }
        other => panic!("unexpected {other}"),
    });
    assert_eq!(
        seen,
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://auth.example.com/.well-known/oauth-authorization-server",
            "GET https://auth.example.com/.well-known/openid-configuration",
            "POST https://auth.example.com/register",
        ]
    );
    assert!(
        registered_body.contains("\"application_type\":\"native\""),
        "{registered_body}"
    );
    let evs = events(&mut login);
    assert!(
        matches!(&evs[0], LoginEvent::Registered { issuer, client } if issuer == ISSUER && client.id == "dyn-1")
    );
    let LoginEvent::Authorize { url } = &evs[1] else {
        panic!("{evs:?}")
    };
    assert_eq!(url.path(), "/authorize");
    assert_eq!(query_of(url, "client_id").as_deref(), Some("dyn-1"));
    assert_eq!(query_of(url, "scope").as_deref(), Some("mcp:basic"));
    assert_eq!(query_of(url, "resource").as_deref(), Some(SERVER));
    let state = query_of(url, "state").expect("state");
    // A stray request to the callback is ignored; the login waits on.
    assert!(!login.handle_callback(now, "code=evil&state=nope"));
    assert!(login.poll_request().is_none());
    assert!(login.handle_callback(now, &format!("code=c0de&state={state}")));
    let request = login.poll_request().expect("token request");
    assert_eq!(request.url.as_str(), "https://auth.example.com/token");
    let body = String::from_utf8_lossy(&request.body).into_owned();
    assert!(
        body.contains("code=c0de") && body.contains("code_verifier="),
        "{body}"
    );
    login.handle_response(now, request.id, 200, TOKENS.as_bytes());
    let evs = events(&mut login);
    let [LoginEvent::Done(credentials)] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    assert_eq!(credentials.tokens.access_token, "at-1");
    assert_eq!(credentials.issuer, ISSUER);
    assert_eq!(credentials.client.id, "dyn-1");
    assert_eq!(login.poll_timeout(), None, "finished");
}

#[test]
fn without_any_resource_metadata_the_servers_origin_is_the_issuer() {
    let now = Instant::now();
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], now);
    let origin_asm = asm("").replace(ISSUER, "https://mcp.example.com");
    let seen = drive(&mut login, now, &mut |r| match r.url.as_str() {
        "https://mcp.example.com/.well-known/oauth-authorization-server" => {
            (200, origin_asm.clone())
        }
        "https://mcp.example.com/register" => (201, r#"{"client_id":"c"}"#.into()),
        _ => (404, String::new()),
    });
    assert_eq!(
        seen[..3],
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://mcp.example.com/.well-known/oauth-protected-resource",
            "GET https://mcp.example.com/.well-known/oauth-authorization-server",
        ]
    );
    assert!(
        events(&mut login)
            .iter()
            .any(|e| matches!(e, LoginEvent::Authorize { .. }))
    );
}

#[test]
fn no_metadata_anywhere_is_refused_without_guessing_endpoints() {
    let now = Instant::now();
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut |_| (404, String::new()));
    assert!(seen.iter().all(|s| s.contains("/.well-known/")), "{seen:?}");
    let evs = events(&mut login);
    assert!(
        matches!(&evs[..], [LoginEvent::Failed(e @ LoginError::NoMetadata { .. })] if e.to_string().contains("does not guess")),
        "{evs:?}"
    );
}

#[test]
fn a_configured_client_skips_registration_and_a_stored_one_needs_the_same_issuer() {
    let now = Instant::now();
    let answer = |r: &OAuthRequest| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        "/register" => (201, r#"{"client_id":"fresh"}"#.to_owned()),
        _ => (404, String::new()),
    };
    let public = |id: &str| Client {
        id: id.into(),
        secret: None,
        auth: ClientAuth::None,
    };
    let mut configured = settings(code_grant());
    configured.client = Some(public("configured"));
    let mut login = Login::new(configured, None, [1; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut { answer });
    assert!(!seen.iter().any(|s| s.contains("/register")), "{seen:?}");
    let mut stored = settings(code_grant());
    stored.stored_client = Some((ISSUER.into(), public("stored")));
    let mut login = Login::new(stored.clone(), None, [1; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut { answer });
    assert!(!seen.iter().any(|s| s.contains("/register")), "{seen:?}");
    // The server moved to another issuer: register again.
    stored.stored_client = Some(("https://old-auth.example.com".into(), public("stored")));
    let mut login = Login::new(stored, None, [1; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut { answer });
    assert!(seen.iter().any(|s| s.contains("/register")), "{seen:?}");
}

#[test]
fn client_metadata_documents_are_used_where_the_server_accepts_them() {
    let now = Instant::now();
    let mut s = settings(code_grant());
    s.client_metadata_url = Some("https://rho.example.com/client.json".into());
    let mut login = Login::new(s, None, [1; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => {
            (200, asm(r#","client_id_metadata_document_supported":true"#))
        }
        _ => (404, String::new()),
    });
    assert!(!seen.iter().any(|s| s.contains("/register")), "{seen:?}");
    let evs = events(&mut login);
    let Some(LoginEvent::Authorize { url }) = evs.first() else {
        panic!("{evs:?}")
    };
    assert_eq!(
        query_of(url, "client_id").as_deref(),
        Some("https://rho.example.com/client.json")
    );
}

#[test]
fn client_credentials_go_straight_to_the_token_endpoint() {
    let now = Instant::now();
    let mut s = settings(GrantKind::ClientCredentials);
    s.client = Some(Client {
        id: "m2m".into(),
        secret: Some("shh".into()),
        auth: ClientAuth::ClientSecretBasic,
    });
    let mut login = Login::new(s, None, [1; RANDOM_BYTES], now);
    let mut token_headers = Vec::new();
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        "/token" => {
            token_headers = r.headers.clone();
            (200, TOKENS.into())
        }
        _ => (404, String::new()),
    });
    assert!(
        token_headers
            .iter()
            .any(|(k, v)| k == "Authorization" && v.starts_with("Basic "))
    );
    let evs = events(&mut login);
    assert!(matches!(&evs[..], [LoginEvent::Done(_)]), "{evs:?}");
    // Without a configured client there is nothing to authenticate with.
    let mut login = Login::new(
        settings(GrantKind::ClientCredentials),
        None,
        [1; RANDOM_BYTES],
        now,
    );
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        _ => (404, String::new()),
    });
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::NoClientCredentials)]
    ));
}

#[test]
fn a_private_key_jwt_client_sends_an_assertion_for_the_issuer_and_fails_without_a_key() {
    use base64::Engine as _;
    use rho_proto_core::oauth::assertion::{CLIENT_ASSERTION_TYPE, ClientAssertionKey};
    let now = Instant::now();
    let mut s = settings(GrantKind::ClientCredentials);
    s.client = Some(Client {
        id: "m2m".into(),
        secret: None,
        auth: ClientAuth::PrivateKeyJwt,
    });
    s.client_assertion = Some(ClientAssertionKey {
        signer: std::sync::Arc::new(FixedSigner),
        now_unix: 1_700_000_000,
    });
    let mut login = Login::new(s.clone(), None, [1; RANDOM_BYTES], now);
    let mut token_body = String::new();
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (
            200,
            asm(r#","token_endpoint_auth_methods_supported":["private_key_jwt"]"#),
        ),
        "/token" => {
            token_body = String::from_utf8(r.body.clone()).expect("utf-8");
            (200, TOKENS.into())
        }
        _ => (404, String::new()),
    });
    let evs = events(&mut login);
    assert!(matches!(&evs[..], [LoginEvent::Done(_)]), "{evs:?}");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(token_body.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("grant_type"), Some("client_credentials"));
    assert_eq!(get("client_id"), Some("m2m"));
    assert_eq!(get("client_assertion_type"), Some(CLIENT_ASSERTION_TYPE));
    assert_eq!(get("client_secret"), None);
    let jwt = get("client_assertion").expect("an assertion");
    let claims = jwt.split('.').nth(1).expect("claims");
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .expect("base64url"),
    )
    .expect("json");
    assert_eq!(claims["iss"], "m2m");
    assert_eq!(claims["sub"], "m2m");
    assert_eq!(claims["aud"], ISSUER);
    assert_eq!(claims["iat"], 1_700_000_000u64);
    assert_eq!(claims["exp"], 1_700_000_300u64);

    // The client without its key never reaches the token endpoint.
    s.client_assertion = None;
    let mut login = Login::new(s, None, [1; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        _ => (404, String::new()),
    });
    assert!(!seen.iter().any(|r| r.ends_with("/token")), "{seen:?}");
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::NoClientKey)]
    ));
}

#[test]
fn discovery_and_the_browser_step_are_bounded() {
    let start = Instant::now();
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], start);
    let _pending = login.poll_request().expect("prm request");
    assert_eq!(login.poll_timeout(), Some(start + DISCOVERY_BUDGET));
    login.handle_timeout(start + DISCOVERY_BUDGET);
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::TimedOut {
            what: "OAuth discovery",
            ..
        })]
    ));
    let mut s = settings(code_grant());
    s.client = Some(Client {
        id: "c".into(),
        secret: None,
        auth: ClientAuth::None,
    });
    let mut login = Login::new(s, None, [1; RANDOM_BYTES], start);
    let later = start + Duration::from_secs(5);
    drive(&mut login, later, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        _ => (404, String::new()),
    });
    assert_eq!(login.poll_timeout(), Some(later + LOGIN_BUDGET));
    login.handle_timeout(later + LOGIN_BUDGET - Duration::from_millis(1));
    assert!(
        events(&mut login)
            .iter()
            .all(|e| !matches!(e, LoginEvent::Failed(_)))
    );
    login.handle_timeout(later + LOGIN_BUDGET);
    assert!(matches!(
        events(&mut login).last(),
        Some(LoginEvent::Failed(LoginError::TimedOut {
            what: "the browser login",
            ..
        }))
    ));
}

#[test]
fn a_document_for_another_resource_or_issuer_ends_the_login() {
    let now = Instant::now();
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], now);
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => {
            (200, prm().replace(SERVER, "https://other.example.com/mcp"))
        }
        _ => (404, String::new()),
    });
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::Discovery(
            DiscoveryError::ResourceMismatch { .. }
        ))]
    ));
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], now);
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => {
            (200, asm("").replacen(ISSUER, "https://evil.example.com", 1))
        }
        _ => (404, String::new()),
    });
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::Discovery(
            DiscoveryError::IssuerMismatch { .. }
        ))]
    ));
}

#[test]
fn a_refused_callback_and_a_transport_failure_fail_with_their_reason() {
    let now = Instant::now();
    let mut s = settings(code_grant());
    s.client = Some(Client {
        id: "c".into(),
        secret: None,
        auth: ClientAuth::None,
    });
    let mut login = Login::new(s.clone(), None, [3; RANDOM_BYTES], now);
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        _ => (404, String::new()),
    });
    let state = Pkce::from_random(&[3; RANDOM_BYTES]).state;
    let _ = events(&mut login);
    assert!(login.handle_callback(now, &format!("error=access_denied&state={state}")));
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::Callback(
            CallbackError::Refused { .. }
        ))]
    ));
    let mut login = Login::new(s, None, [3; RANDOM_BYTES], now);
    let request = login.poll_request().expect("request");
    login.handle_failure(now, request.id + 7, "stale".into());
    assert!(events(&mut login).is_empty(), "an unknown id is ignored");
    login.handle_failure(now, request.id, "connection refused".into());
    let evs = events(&mut login);
    assert!(
        matches!(&evs[..], [LoginEvent::Failed(e)] if e.to_string().contains("connection refused")),
        "{evs:?}"
    );
}

#[test]
fn refresh_needs_no_person_and_keeps_an_unrotated_refresh_token() {
    use rho_proto_core::oauth::flow::{read_refresh, refresh_request};
    use rho_proto_core::oauth::token::read_token_response;
    let credentials = Credentials {
        issuer: ISSUER.into(),
        client: Client {
            id: "c".into(),
            secret: None,
            auth: ClientAuth::None,
        },
        resource: SERVER.into(),
        token_endpoint: Url::parse("https://auth.example.com/token").expect("url"),
        scope: None,
        tokens: read_token_response(200, TOKENS.as_bytes()).expect("tokens"),
    };
    let request = refresh_request(&credentials).expect("has a refresh token");
    let body = String::from_utf8_lossy(&request.body).into_owned();
    assert!(
        body.contains("grant_type=refresh_token") && body.contains("refresh_token=rt-1"),
        "{body}"
    );
    assert!(
        body.contains("resource=https%3A%2F%2Fmcp.example.com%2Fmcp"),
        "{body}"
    );
    let same = read_refresh(
        &credentials,
        200,
        br#"{"access_token":"at-2","token_type":"Bearer"}"#,
    )
    .expect("refreshed");
    assert_eq!(same.tokens.access_token, "at-2");
    assert_eq!(same.tokens.refresh_token.as_deref(), Some("rt-1"));
    let rotated = read_refresh(
        &credentials,
        200,
        br#"{"access_token":"at-3","token_type":"Bearer","refresh_token":"rt-2"}"#,
    )
    .expect("refreshed");
    assert_eq!(rotated.tokens.refresh_token.as_deref(), Some("rt-2"));
    let dead = read_refresh(&credentials, 400, br#"{"error":"invalid_grant"}"#).expect_err("dead");
    assert!(dead.grant_is_dead());
    let mut without = credentials;
    without.tokens.refresh_token = None;
    assert!(refresh_request(&without).is_none());
}

#[test]
fn a_2025_03_26_server_may_mount_its_own_authorization_server_under_a_path() {
    let now = Instant::now();
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], now);
    let own = asm("").replace(ISSUER, "https://mcp.example.com/oauth");
    drive(&mut login, now, &mut |r| match r.url.as_str() {
        "https://mcp.example.com/.well-known/oauth-authorization-server" => (200, own.clone()),
        "https://mcp.example.com/oauth/register" => (201, r#"{"client_id":"c"}"#.into()),
        _ => (404, String::new()),
    });
    assert!(
        events(&mut login)
            .iter()
            .any(|e| matches!(e, LoginEvent::Authorize { .. })),
        "the server's own authorization server is accepted"
    );
    // Another origin is still refused.
    let mut login = Login::new(settings(code_grant()), None, [1; RANDOM_BYTES], now);
    let foreign = asm("");
    drive(&mut login, now, &mut |r| match r.url.as_str() {
        "https://mcp.example.com/.well-known/oauth-authorization-server" => (200, foreign.clone()),
        _ => (404, String::new()),
    });
    assert!(matches!(
        &events(&mut login)[..],
        [LoginEvent::Failed(LoginError::Discovery(
            DiscoveryError::IssuerMismatch { .. }
        ))]
    ));
}

/// Credentials an earlier login left, minted by `issuer`.
fn earlier(issuer: &str) -> Credentials {
    use rho_proto_core::oauth::token::read_token_response;
    Credentials {
        issuer: issuer.into(),
        client: Client {
            id: "old-client".into(),
            secret: None,
            auth: ClientAuth::None,
        },
        resource: SERVER.into(),
        token_endpoint: Url::parse(&format!("{issuer}/old-token")).expect("url"),
        scope: Some("mcp:basic".into()),
        tokens: read_token_response(200, TOKENS.as_bytes()).expect("tokens"),
    }
}

#[test]
fn a_reauthorization_refreshes_at_the_discovered_endpoint_when_the_issuer_is_the_same() {
    let now = Instant::now();
    let mut reauth = settings(code_grant());
    reauth.previous = Some(earlier(ISSUER));
    let mut login = Login::new(reauth, None, [3; RANDOM_BYTES], now);
    let debug = format!("{login:?}");
    assert!(
        !debug.contains("rt-1") && !debug.contains("at-1"),
        "the stored tokens stay out of Debug: {debug}"
    );
    let mut refresh_body = String::new();
    let seen = drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        "/token" => {
            refresh_body = String::from_utf8_lossy(&r.body).into_owned();
            (
                200,
                r#"{"access_token":"at-2","token_type":"Bearer","refresh_token":"rt-2"}"#.into(),
            )
        }
        other => panic!("unexpected {other}"),
    });
    assert_eq!(
        seen.last().map(String::as_str),
        Some("POST https://auth.example.com/token"),
        "the metadata's token endpoint, not the stored one: {seen:?}"
    );
    assert!(
        refresh_body.contains("grant_type=refresh_token") && refresh_body.contains("rt-1"),
        "{refresh_body}"
    );
    let evs = events(&mut login);
    let [LoginEvent::Done(done)] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    assert_eq!(done.issuer, ISSUER);
    assert_eq!(done.client.id, "old-client");
    assert_eq!(done.tokens.access_token, "at-2");
    assert_eq!(
        done.token_endpoint.as_str(),
        "https://auth.example.com/token"
    );
    assert!(login.poll_timeout().is_none(), "finished");
}

#[test]
fn a_refused_refresh_goes_on_to_the_browser_with_the_same_client() {
    let now = Instant::now();
    let mut reauth = settings(code_grant());
    let old = earlier(ISSUER);
    reauth.stored_client = Some((ISSUER.into(), old.client.clone()));
    reauth.previous = Some(old);
    let mut login = Login::new(reauth, None, [3; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        "/token" => (400, r#"{"error":"invalid_grant"}"#.into()),
        other => panic!("unexpected {other}"),
    });
    assert!(!seen.iter().any(|s| s.contains("/register")), "{seen:?}");
    let evs = events(&mut login);
    assert!(
        matches!(&evs[0], LoginEvent::RefreshFailed(e) if e.grant_is_dead()),
        "{evs:?}"
    );
    let LoginEvent::Authorize { url } = &evs[1] else {
        panic!("{evs:?}")
    };
    assert_eq!(query_of(url, "client_id").as_deref(), Some("old-client"));
}

#[test]
fn a_client_the_server_forgot_is_forgotten_and_registered_again_once() {
    let now = Instant::now();
    let mut reauth = settings(code_grant());
    let old = earlier(ISSUER);
    reauth.stored_client = Some((ISSUER.into(), old.client.clone()));
    reauth.previous = Some(old);
    let mut login = Login::new(reauth, None, [3; RANDOM_BYTES], now);
    let seen = drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        "/token" => (401, r#"{"error":"invalid_client"}"#.into()),
        "/register" => (201, r#"{"client_id":"new-client"}"#.into()),
        other => panic!("unexpected {other}"),
    });
    assert_eq!(
        seen.last().map(String::as_str),
        Some("POST https://auth.example.com/register"),
        "{seen:?}"
    );
    let evs = events(&mut login);
    assert!(
        matches!(&evs[0], LoginEvent::ClientForgotten { issuer } if issuer == ISSUER),
        "the store hears first, so a login that stops here leaves no dead client: {evs:?}"
    );
    assert!(
        matches!(&evs[1], LoginEvent::RefreshFailed(e) if e.client_is_unknown()),
        "{evs:?}"
    );
    assert!(
        matches!(&evs[2], LoginEvent::Registered { client, .. } if client.id == "new-client"),
        "{evs:?}"
    );
    let LoginEvent::Authorize { url } = &evs[3] else {
        panic!("{evs:?}")
    };
    assert_eq!(query_of(url, "client_id").as_deref(), Some("new-client"));
}

#[test]
fn an_authorization_endpoint_refusing_the_stored_client_gets_a_new_one_once() {
    let now = Instant::now();
    let mut stored = settings(code_grant());
    stored.stored_client = Some((ISSUER.into(), earlier(ISSUER).client));
    let mut login = Login::new(stored, None, [3; RANDOM_BYTES], now);
    let mut registrations = 0;
    let mut answer = |r: &OAuthRequest| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm("")),
        "/register" => {
            registrations += 1;
            (201, format!(r#"{{"client_id":"new-{registrations}"}}"#))
        }
        other => panic!("unexpected {other}"),
    };
    drive(&mut login, now, &mut answer);
    let evs = events(&mut login);
    let [LoginEvent::Authorize { url }] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    assert_eq!(query_of(url, "client_id").as_deref(), Some("old-client"));
    // The endpoint answered with an error page, not a redirect.
    assert!(login.handle_authorization_refused(now));
    drive(&mut login, now, &mut answer);
    let evs = events(&mut login);
    assert!(
        matches!(&evs[0], LoginEvent::ClientForgotten { issuer } if issuer == ISSUER),
        "{evs:?}"
    );
    assert!(
        matches!(&evs[1], LoginEvent::Registered { client, .. } if client.id == "new-1"),
        "{evs:?}"
    );
    let LoginEvent::Authorize { url } = &evs[2] else {
        panic!("{evs:?}")
    };
    assert_eq!(query_of(url, "client_id").as_deref(), Some("new-1"));
    // Once: a new client refused too is the server's answer.
    assert!(!login.handle_authorization_refused(now));
    assert_eq!(registrations, 1);
}

#[test]
fn a_server_moved_to_another_issuer_discards_the_old_login_and_registers_again() {
    let now = Instant::now();
    let old_issuer = "https://old-auth.example.com";
    let mut reauth = settings(code_grant());
    let old = earlier(old_issuer);
    reauth.stored_client = Some((old_issuer.into(), old.client.clone()));
    reauth.previous = Some(old);
    let mut login = Login::new(reauth, None, [3; RANDOM_BYTES], now);
    let mut bodies = Vec::new();
    let seen = drive(&mut login, now, &mut |r| {
        bodies.push(String::from_utf8_lossy(&r.body).into_owned());
        match r.url.path() {
            "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
            "/.well-known/oauth-authorization-server" => (200, asm("")),
            "/register" => (201, r#"{"client_id":"new-client"}"#.into()),
            other => panic!("unexpected {other}"),
        }
    });
    assert!(
        !seen.iter().any(|s| s.contains("token")),
        "no refresh at either issuer: {seen:?}"
    );
    assert!(
        !bodies
            .iter()
            .any(|b| b.contains("rt-1") || b.contains("old-client")),
        "nothing of the old login reaches the new issuer: {bodies:?}"
    );
    let evs = events(&mut login);
    assert!(
        matches!(&evs[0], LoginEvent::IssuerChanged { previous, current }
            if previous == old_issuer && current == ISSUER),
        "{evs:?}"
    );
    assert!(
        matches!(&evs[1], LoginEvent::Registered { issuer, client }
            if issuer == ISSUER && client.id == "new-client"),
        "{evs:?}"
    );
    let LoginEvent::Authorize { url } = &evs[2] else {
        panic!("{evs:?}")
    };
    assert_eq!(query_of(url, "client_id").as_deref(), Some("new-client"));
}

#[test]
fn remembered_scopes_are_asked_for_beside_the_selected_ones() {
    let now = Instant::now();
    let challenge = BearerChallenge {
        scope: Some(vec!["mcp:basic".into()]),
        ..BearerChallenge::default()
    };
    let mut wider = settings(code_grant());
    wider.client = Some(Client {
        id: "c".into(),
        secret: None,
        auth: ClientAuth::None,
    });
    wider.extra_scopes = vec!["mcp:basic".into(), "mcp:admin".into()];
    let mut login = Login::new(wider, Some(challenge), [3; RANDOM_BYTES], now);
    drive(&mut login, now, &mut |r| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => {
            (200, asm(r#","scopes_supported":["offline_access"]"#))
        }
        other => panic!("unexpected {other}"),
    });
    let evs = events(&mut login);
    let [LoginEvent::Authorize { url }] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    assert_eq!(
        query_of(url, "scope").as_deref(),
        Some("mcp:basic offline_access mcp:admin")
    );
}

/// A DPoP key whose signature is fixed bytes: the core only frames it.
#[derive(Debug)]
struct FixedDpopKey;

impl rho_proto_core::oauth::dpop::DpopSigner for FixedDpopKey {
    fn alg(&self) -> &str {
        "ES256"
    }
    fn public_jwk(&self) -> serde_json::Value {
        serde_json::json!({"kty": "EC", "crv": "P-256", "x": "x", "y": "y"})
    }
    fn sign(&self, _: &[u8]) -> Result<Vec<u8>, String> {
        Ok(vec![2; 64])
    }
}

fn dpop_settings(
    grant: GrantKind,
    mode: rho_proto_core::oauth::dpop::DpopMode,
    key: bool,
) -> LoginSettings {
    let mut s = settings(grant);
    s.dpop = rho_proto_core::oauth::flow::DpopSettings {
        mode,
        key: key.then(|| {
            std::sync::Arc::new(FixedDpopKey)
                as std::sync::Arc<dyn rho_proto_core::oauth::dpop::DpopSigner>
        }),
    };
    s.client = Some(Client {
        id: "m2m".into(),
        secret: Some("shh".into()),
        auth: ClientAuth::ClientSecretBasic,
    });
    s
}

fn claims_of(proof: &str) -> serde_json::Value {
    use base64::Engine as _;
    let part = proof.split('.').nth(1).expect("claims");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("json")
}

const ES256: &str = r#","dpop_signing_alg_values_supported":["ES256"]"#;

/// The 401 of an MCP server that takes DPoP-bound tokens (RFC 9449 §7.1).
fn dpop_challenge() -> BearerChallenge {
    rho_proto_core::oauth::challenge::bearer_challenge([r#"DPoP algs="ES256""#])
        .expect("a DPoP challenge")
}

/// Where the authorization server offers ES256, `auto` binds tokens only
/// when the MCP server takes them (its challenge names DPoP, or its
/// metadata lists DPoP algorithms): a Bearer-only server behind a
/// DPoP-capable authorization server keeps working with Bearer tokens.
#[test]
fn auto_binds_tokens_only_where_the_mcp_server_takes_dpop_too() {
    use rho_proto_core::oauth::dpop::DpopMode;
    let prm_dpop = format!(
        r#"{{"resource":"{SERVER}","authorization_servers":["{ISSUER}"],"dpop_signing_alg_values_supported":["ES256"]}}"#
    );
    let bearer_only = rho_proto_core::oauth::challenge::bearer_challenge([r#"Bearer realm="mcp""#]);
    for (challenge, prm_body, binds) in [
        (bearer_only.clone(), prm(), false),
        (None, prm(), false),
        (Some(dpop_challenge()), prm(), true),
        (bearer_only, prm_dpop.clone(), true),
        (None, prm_dpop, true),
    ] {
        let label = format!("{challenge:?} {prm_body}");
        let now = Instant::now();
        let mut login = Login::new(
            dpop_settings(GrantKind::ClientCredentials, DpopMode::Auto, true),
            challenge,
            [1; RANDOM_BYTES],
            now,
        );
        let mut proved = None;
        while let Some(request) = login.poll_request() {
            if request.url.path() == "/token" {
                proved = Some(login.proof(&request, 1, "j".into(), None).is_some());
            }
            let (status, body) = match request.url.path() {
                "/.well-known/oauth-protected-resource/mcp" => (200, prm_body.clone()),
                "/.well-known/oauth-authorization-server" => (200, asm(ES256)),
                "/token" => (200, TOKENS.to_owned()),
                _ => (404, String::new()),
            };
            login.handle_response(now, request.id, status, body.as_bytes());
        }
        assert_eq!(proved, Some(binds), "{label}");
    }
}

#[test]
fn where_the_server_offers_es256_the_token_request_wants_a_proof_and_a_dpop_token_is_kept() {
    use rho_proto_core::oauth::dpop::DpopMode;
    let now = Instant::now();
    let mut login = Login::new(
        dpop_settings(GrantKind::ClientCredentials, DpopMode::Auto, true),
        Some(dpop_challenge()),
        [1; RANDOM_BYTES],
        now,
    );
    let mut proof = None;
    let answer = |r: &OAuthRequest| match r.url.path() {
        "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
        "/.well-known/oauth-authorization-server" => (200, asm(ES256)),
        "/token" => (
            200,
            r#"{"access_token":"bound-1","token_type":"DPoP","expires_in":60}"#.into(),
        ),
        _ => (404, String::new()),
    };
    while let Some(request) = login.poll_request() {
        let made = login.proof(&request, 1_700_000_000, "jti-1".into(), Some("as-n"));
        if request.url.path() == "/token" {
            proof = Some(
                made.expect("a token request wants a proof")
                    .expect("signed"),
            );
        } else {
            assert!(made.is_none(), "metadata requests carry no proof");
        }
        let (status, body) = answer(&request);
        login.handle_response(now, request.id, status, body.as_bytes());
    }
    let claims = claims_of(&proof.expect("the token request was sent"));
    assert_eq!(
        claims,
        serde_json::json!({
            "jti": "jti-1", "htm": "POST", "htu": "https://auth.example.com/token",
            "iat": 1_700_000_000u64, "nonce": "as-n"
        })
    );
    let evs = events(&mut login);
    let [LoginEvent::Done(done)] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    assert!(rho_proto_core::oauth::dpop::is_bound(&done.tokens));
}

#[test]
fn without_es256_auto_stays_bearer_and_refuses_a_dpop_token_it_never_proved() {
    use rho_proto_core::oauth::dpop::DpopMode;
    let now = Instant::now();
    for (mode, key) in [
        (DpopMode::Auto, true),
        (DpopMode::Off, true),
        (DpopMode::Auto, false),
    ] {
        let offered = if mode == DpopMode::Off { ES256 } else { "" };
        let mut login = Login::new(
            dpop_settings(GrantKind::ClientCredentials, mode, key),
            None,
            [1; RANDOM_BYTES],
            now,
        );
        while let Some(request) = login.poll_request() {
            assert!(
                login.proof(&request, 1, "j".into(), None).is_none(),
                "{mode:?}"
            );
            let (status, body) = match request.url.path() {
                "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
                "/.well-known/oauth-authorization-server" => (200, asm(offered)),
                "/token" => (
                    200,
                    r#"{"access_token":"x","token_type":"DPoP"}"#.to_owned(),
                ),
                _ => (404, String::new()),
            };
            login.handle_response(now, request.id, status, body.as_bytes());
        }
        assert!(
            matches!(
                &events(&mut login)[..],
                [LoginEvent::Failed(LoginError::Token(
                    rho_proto_core::oauth::token::TokenError::NotBearer(_)
                ))]
            ),
            "{mode:?}"
        );
    }
}

#[test]
fn required_dpop_fails_where_the_server_does_not_offer_es256_or_there_is_no_key() {
    use rho_proto_core::oauth::dpop::DpopMode;
    let now = Instant::now();
    for (offered, key, says) in [
        (
            r#","dpop_signing_alg_values_supported":["RS256"]"#,
            true,
            "does not advertise DPoP with ES256",
        ),
        ("", true, "is absent"),
        (ES256, false, "the host has no such key"),
    ] {
        let mut login = Login::new(
            dpop_settings(GrantKind::ClientCredentials, DpopMode::Required, key),
            None,
            [1; RANDOM_BYTES],
            now,
        );
        let seen = drive(&mut login, now, &mut |r| match r.url.path() {
            "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
            "/.well-known/oauth-authorization-server" => (200, asm(offered)),
            other => panic!("no token request may go: {other}"),
        });
        assert!(!seen.iter().any(|s| s.ends_with("/token")), "{seen:?}");
        let evs = events(&mut login);
        let [LoginEvent::Failed(error)] = evs.as_slice() else {
            panic!("{evs:?}")
        };
        assert!(error.to_string().contains(says), "{error}");
    }
}

#[test]
fn a_bound_token_is_refreshed_with_a_proof_and_stays_bound() {
    use rho_proto_core::oauth::dpop::DpopMode;
    let now = Instant::now();
    let mut s = dpop_settings(code_grant(), DpopMode::Auto, true);
    s.client = None;
    let mut previous = earlier(ISSUER);
    previous.tokens.token_type = "DPoP".into();
    s.previous = Some(previous);
    let mut login = Login::new(s, None, [3; RANDOM_BYTES], now);
    let mut proved = false;
    while let Some(request) = login.poll_request() {
        let made = login.proof(&request, 7, "j".into(), None);
        let (status, body) = match request.url.path() {
            "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
            // The server no longer lists DPoP: the bound refresh token
            // still needs its proof.
            "/.well-known/oauth-authorization-server" => (200, asm("")),
            "/token" => {
                proved = matches!(made, Some(Ok(_)));
                (
                    200,
                    r#"{"access_token":"at-2","token_type":"DPoP"}"#.to_owned(),
                )
            }
            other => panic!("unexpected {other}"),
        };
        login.handle_response(now, request.id, status, body.as_bytes());
    }
    assert!(proved, "the refresh carried a proof");
    let evs = events(&mut login);
    let [LoginEvent::Done(done)] = evs.as_slice() else {
        panic!("{evs:?}")
    };
    assert_eq!(done.tokens.access_token, "at-2");
    assert_eq!(done.tokens.refresh_token.as_deref(), Some("rt-1"));
}

#[test]
fn a_bearer_answer_to_a_proof_is_used_under_auto_and_refused_under_required() {
    use rho_proto_core::oauth::dpop::DpopMode;
    let now = Instant::now();
    for (mode, fails) in [(DpopMode::Auto, false), (DpopMode::Required, true)] {
        let mut login = Login::new(
            dpop_settings(GrantKind::ClientCredentials, mode, true),
            Some(dpop_challenge()),
            [1; RANDOM_BYTES],
            now,
        );
        let mut proved = false;
        while let Some(request) = login.poll_request() {
            if request.url.path() == "/token" {
                proved = matches!(login.proof(&request, 1, "j".into(), None), Some(Ok(_)));
            }
            let (status, body) = match request.url.path() {
                "/.well-known/oauth-protected-resource/mcp" => (200, prm()),
                "/.well-known/oauth-authorization-server" => (200, asm(ES256)),
                "/token" => (200, TOKENS.to_owned()),
                _ => (404, String::new()),
            };
            login.handle_response(now, request.id, status, body.as_bytes());
        }
        assert!(proved, "{mode:?}");
        let evs = events(&mut login);
        match (&evs[..], fails) {
            ([LoginEvent::Done(done)], false) => {
                assert!(!rho_proto_core::oauth::dpop::is_bound(&done.tokens));
            }
            ([LoginEvent::Failed(error)], true) => {
                assert!(
                    error.to_string().contains("issued a `Bearer` token"),
                    "{error}"
                );
            }
            other => panic!("{mode:?}: {other:?}"),
        }
    }
}
