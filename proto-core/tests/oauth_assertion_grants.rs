//! The assertion grants of the OAuth login against scripted servers:
//! workload identity federation (a JWT the workload holds, RFC 7523 §2.1)
//! and enterprise-managed authorization (SEP-990: an RFC 8693 token
//! exchange at the identity provider, then the JWT bearer grant), and the
//! client assertion a `private_key_jwt` client's refresh carries.

// A fake clock needs one real origin; the core only compares instants.
#![allow(clippy::disallowed_methods)]

use std::time::Instant;

use rho_proto_core::oauth::discovery::DiscoveryError;
use rho_proto_core::oauth::exchange::{
    ID_JAG_TYPE, ID_TOKEN_TYPE, IdentityAssertionGrant, JWT_BEARER_GRANT, Secret,
    TOKEN_EXCHANGE_GRANT,
};
use rho_proto_core::oauth::flow::{
    Credentials, GrantKind, Login, LoginError, LoginEvent, LoginSettings, OAuthRequest,
    client_assertion_for,
};
use rho_proto_core::oauth::pkce::RANDOM_BYTES;
use rho_proto_core::oauth::token::{Client, ClientAuth, TokenError, TokenResponse};
use url::Url;

mod common;
use common::FixedSigner;

const SERVER: &str = "https://mcp.example.com/mcp";
const ISSUER: &str = "https://auth.example.com";
const IDP_TOKEN: &str = "https://idp.example.com/oauth2/token";

fn settings(grant: GrantKind) -> LoginSettings {
    LoginSettings::new(Url::parse(SERVER).expect("url"), grant)
}

fn workload() -> GrantKind {
    GrantKind::JwtBearer {
        assertion: Secret::new("eyJ.workload.sig"),
    }
}

fn enterprise(audience: Option<&str>) -> GrantKind {
    GrantKind::IdentityAssertion(Box::new(IdentityAssertionGrant {
        id_token: Secret::new("eyJ.id-token.sig"),
        idp_token_endpoint: Url::parse(IDP_TOKEN).expect("url"),
        idp_client: Some(Client {
            id: "idp-client".into(),
            secret: None,
            auth: ClientAuth::None,
        }),
        audience: audience.map(str::to_owned),
    }))
}

fn confidential() -> Client {
    Client {
        id: "mcp-client".into(),
        secret: Some("mcp secret".into()),
        auth: ClientAuth::ClientSecretBasic,
    }
}

fn prm() -> String {
    format!(r#"{{"resource":"{SERVER}","authorization_servers":["{ISSUER}"]}}"#)
}

fn asm() -> String {
    format!(
        r#"{{"issuer":"{ISSUER}","authorization_endpoint":"{ISSUER}/authorize","token_endpoint":"{ISSUER}/token","registration_endpoint":"{ISSUER}/register","code_challenge_methods_supported":["S256"],"grant_types_supported":["{JWT_BEARER_GRANT}"],"token_endpoint_auth_methods_supported":["client_secret_basic"]}}"#
    )
}

const TOKENS: &str = r#"{"access_token":"at-1","token_type":"Bearer","expires_in":3600}"#;

fn id_jag() -> String {
    format!(
        r#"{{"access_token":"eyJ.id-jag.sig","issued_token_type":"{ID_JAG_TYPE}","token_type":"N_A"}}"#
    )
}

/// One request as the scripted servers saw it.
struct Seen {
    line: String,
    form: Vec<(String, String)>,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn get(&self, key: &str) -> Option<&str> {
        self.form
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn basic(&self) -> bool {
        self.headers
            .iter()
            .any(|(k, v)| k == "Authorization" && v.starts_with("Basic "))
    }
}

/// Drives `login`, answering each request by `answer`, and returns what
/// was asked and the events.
fn drive(
    mut login: Login,
    answer: &mut dyn FnMut(&OAuthRequest) -> (u16, String),
) -> (Vec<Seen>, Vec<LoginEvent>) {
    let now = Instant::now();
    let mut seen = Vec::new();
    while let Some(request) = login.poll_request() {
        seen.push(Seen {
            line: format!("{} {}", request.method, request.url),
            form: url::form_urlencoded::parse(&request.body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
            headers: request.headers.clone(),
        });
        let (status, body) = answer(&request);
        login.handle_response(now, request.id, status, body.as_bytes());
    }
    let events = std::iter::from_fn(|| login.poll_event()).collect();
    (seen, events)
}

/// The scripted authorization server (and identity provider): metadata,
/// then `idp` and `token` for the two token endpoints.
fn servers(idp: (u16, String), token: (u16, String)) -> impl FnMut(&OAuthRequest) -> (u16, String) {
    move |r| match (r.url.host_str(), r.url.path()) {
        (_, "/.well-known/oauth-protected-resource/mcp") => (200, prm()),
        (_, "/.well-known/oauth-authorization-server") => (200, asm()),
        (Some("idp.example.com"), "/oauth2/token") => idp.clone(),
        (Some("auth.example.com"), "/token") => token.clone(),
        _ => (404, String::new()),
    }
}

fn lines(seen: &[Seen]) -> Vec<&str> {
    seen.iter().map(|s| s.line.as_str()).collect()
}

#[test]
fn a_workload_jwt_is_redeemed_at_the_token_endpoint_without_any_registration() {
    let login = Login::new(
        settings(workload()),
        None,
        [1; RANDOM_BYTES],
        Instant::now(),
    );
    let (seen, events) = drive(
        login,
        &mut servers((404, String::new()), (200, TOKENS.into())),
    );
    assert_eq!(
        lines(&seen),
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://auth.example.com/.well-known/oauth-authorization-server",
            "POST https://auth.example.com/token",
        ]
    );
    let token = &seen[2];
    assert_eq!(token.get("grant_type"), Some(JWT_BEARER_GRANT));
    assert_eq!(token.get("assertion"), Some("eyJ.workload.sig"));
    assert_eq!(token.get("resource"), Some(SERVER));
    assert_eq!(token.get("client_id"), None, "a workload names no client");
    let [LoginEvent::Done(credentials)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(credentials.tokens.access_token, "at-1");
    assert_eq!(credentials.issuer, ISSUER);
}

#[test]
fn a_workload_with_a_configured_client_names_it() {
    let mut s = settings(workload());
    s.client = Some(Client {
        id: "workload-client".into(),
        secret: None,
        auth: ClientAuth::None,
    });
    let login = Login::new(s, None, [1; RANDOM_BYTES], Instant::now());
    let (seen, events) = drive(
        login,
        &mut servers((404, String::new()), (200, TOKENS.into())),
    );
    assert_eq!(seen[2].get("client_id"), Some("workload-client"));
    assert_eq!(seen[2].get("assertion"), Some("eyJ.workload.sig"));
    assert!(matches!(&events[..], [LoginEvent::Done(_)]), "{events:?}");
}

#[test]
fn a_refused_workload_jwt_fails_the_login_without_a_retry_or_another_grant() {
    let refused = (
        400,
        r#"{"error":"invalid_grant","error_description":"JWT assertion is expired"}"#.into(),
    );
    let login = Login::new(
        settings(workload()),
        None,
        [1; RANDOM_BYTES],
        Instant::now(),
    );
    let (seen, events) = drive(login, &mut servers((404, String::new()), refused));
    let token_requests = seen.iter().filter(|s| s.line.ends_with("/token")).count();
    assert_eq!(token_requests, 1, "{:?}", lines(&seen));
    assert!(
        !seen.iter().any(|s| s.line.contains("/register")),
        "never registers"
    );
    let [LoginEvent::Failed(LoginError::Token(TokenError::Refused { error, .. }))] = &events[..]
    else {
        panic!("{events:?}")
    };
    assert_eq!(error, "invalid_grant");
}

#[test]
fn an_id_token_is_exchanged_at_the_idp_then_the_id_jag_redeemed_by_the_client() {
    let mut s = settings(enterprise(None));
    s.client = Some(confidential());
    s.scopes = Some(vec!["chat.read".into()]);
    let login = Login::new(s, None, [1; RANDOM_BYTES], Instant::now());
    let (seen, events) = drive(login, &mut servers((200, id_jag()), (200, TOKENS.into())));
    assert_eq!(
        lines(&seen),
        [
            "GET https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
            "GET https://auth.example.com/.well-known/oauth-authorization-server",
            "POST https://idp.example.com/oauth2/token",
            "POST https://auth.example.com/token",
        ]
    );
    let exchange = &seen[2];
    assert_eq!(exchange.get("grant_type"), Some(TOKEN_EXCHANGE_GRANT));
    assert_eq!(exchange.get("subject_token"), Some("eyJ.id-token.sig"));
    assert_eq!(exchange.get("subject_token_type"), Some(ID_TOKEN_TYPE));
    assert_eq!(exchange.get("requested_token_type"), Some(ID_JAG_TYPE));
    assert_eq!(
        exchange.get("audience"),
        Some(ISSUER),
        "the authorization server's issuer"
    );
    assert_eq!(exchange.get("resource"), Some(SERVER));
    assert_eq!(exchange.get("scope"), Some("chat.read"));
    assert_eq!(exchange.get("client_id"), Some("idp-client"));
    assert!(
        !exchange.basic(),
        "the MCP client's secret never goes to the IdP"
    );
    let grant = &seen[3];
    assert_eq!(grant.get("grant_type"), Some(JWT_BEARER_GRANT));
    assert_eq!(grant.get("assertion"), Some("eyJ.id-jag.sig"));
    assert!(grant.basic(), "client_secret_basic, as the server lists");
    let [LoginEvent::Done(credentials)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(credentials.client.id, "mcp-client");
    assert_eq!(credentials.tokens.access_token, "at-1");
}

#[test]
fn a_configured_audience_replaces_the_issuer_in_the_exchange() {
    let mut s = settings(enterprise(Some("urn:example:mcp-as")));
    s.client = Some(confidential());
    let login = Login::new(s, None, [1; RANDOM_BYTES], Instant::now());
    let (seen, _) = drive(login, &mut servers((200, id_jag()), (200, TOKENS.into())));
    assert_eq!(seen[2].get("audience"), Some("urn:example:mcp-as"));
}

#[test]
fn a_refused_token_exchange_fails_naming_the_identity_provider() {
    let mut s = settings(enterprise(None));
    s.client = Some(confidential());
    let login = Login::new(s, None, [1; RANDOM_BYTES], Instant::now());
    let refused = (
        400,
        r#"{"error":"invalid_grant","error_description":"Invalid ID token"}"#.into(),
    );
    let (seen, events) = drive(login, &mut servers(refused, (200, TOKENS.into())));
    assert!(
        !seen
            .iter()
            .any(|s| s.line == "POST https://auth.example.com/token"),
        "{:?}",
        lines(&seen)
    );
    let [LoginEvent::Failed(error @ LoginError::TokenExchange(_))] = &events[..] else {
        panic!("{events:?}")
    };
    let text = error.to_string();
    assert!(
        text.contains("identity provider") && text.contains("Invalid ID token"),
        "{text}"
    );
}

#[test]
fn the_enterprise_grant_without_a_client_fails_before_anything_is_sent() {
    let login = Login::new(
        settings(enterprise(None)),
        None,
        [1; RANDOM_BYTES],
        Instant::now(),
    );
    let (seen, events) = drive(login, &mut servers((200, id_jag()), (200, TOKENS.into())));
    assert_eq!(seen.len(), 2, "metadata only: {:?}", lines(&seen));
    assert!(
        matches!(
            &events[..],
            [LoginEvent::Failed(LoginError::NoClientForAssertion)]
        ),
        "{events:?}"
    );
    assert!(
        LoginError::NoClientForAssertion
            .to_string()
            .contains("oauth.client_id")
    );
}

#[test]
fn an_identity_provider_on_plain_http_is_refused() {
    let grant = GrantKind::IdentityAssertion(Box::new(IdentityAssertionGrant {
        id_token: Secret::new("eyJ.id-token.sig"),
        idp_token_endpoint: Url::parse("http://idp.example.com/token").expect("url"),
        idp_client: None,
        audience: None,
    }));
    let mut s = settings(grant);
    s.client = Some(confidential());
    let login = Login::new(s, None, [1; RANDOM_BYTES], Instant::now());
    let (seen, events) = drive(login, &mut servers((200, id_jag()), (200, TOKENS.into())));
    assert_eq!(seen.len(), 2, "{:?}", lines(&seen));
    assert!(
        matches!(
            &events[..],
            [LoginEvent::Failed(LoginError::Discovery(
                DiscoveryError::Insecure { .. }
            ))]
        ),
        "{events:?}"
    );
}

#[test]
fn a_private_key_jwt_clients_refresh_carries_a_client_assertion() {
    use rho_proto_core::oauth::assertion::{CLIENT_ASSERTION_TYPE, ClientAssertionKey};
    use rho_proto_core::oauth::flow::refresh_request_with_assertion;
    let credentials = Credentials {
        issuer: ISSUER.into(),
        client: Client {
            id: "m2m".into(),
            secret: None,
            auth: ClientAuth::PrivateKeyJwt,
        },
        resource: SERVER.into(),
        token_endpoint: Url::parse("https://auth.example.com/token").expect("url"),
        scope: None,
        tokens: TokenResponse {
            access_token: "at-1".into(),
            token_type: "Bearer".into(),
            expires_in: None,
            refresh_token: Some("rt-1".into()),
            scope: None,
        },
    };
    let key = ClientAssertionKey {
        signer: std::sync::Arc::new(FixedSigner),
        now_unix: 1_700_000_000,
    };
    let assertion = client_assertion_for(&credentials.client, ISSUER, Some(&key), &[7; 32])
        .expect("signed")
        .expect("a private_key_jwt client has one");
    let request =
        refresh_request_with_assertion(&credentials, Some(&assertion)).expect("a refresh token");
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&request.body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("grant_type"), Some("refresh_token"));
    assert_eq!(get("client_assertion_type"), Some(CLIENT_ASSERTION_TYPE));
    assert_eq!(get("client_assertion"), Some(assertion.as_str()));
    // Without its key such a client cannot refresh; other clients need none.
    assert_eq!(
        client_assertion_for(&credentials.client, ISSUER, None, &[7; 32]),
        Err(LoginError::NoClientKey)
    );
    assert_eq!(
        client_assertion_for(&confidential(), ISSUER, None, &[7; 32]),
        Ok(None)
    );
}
