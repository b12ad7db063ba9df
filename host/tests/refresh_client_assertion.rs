//! The connect-time refresh of a stored login authenticates the way its
//! grant did: a `private_key_jwt` client's refresh carries a client
//! assertion signed with its configured key (for the issuer that minted
//! the tokens), on both executors' HTTP stacks; without its key the
//! refresh is not sent at all.

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rho_host::{FileStore, Host, LoadedConfig, RuntimeKind, RuntimeOptions, now_unix};
use rho_proto_core::config::{Config, Transport};
use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin, StoredTokens};
use rho_proto_core::oauth::token::{Client, ClientAuth};
use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

const ISSUER: &str = "https://auth.example.com";

#[path = "../src/test_support.rs"]
mod test_support;
use test_support::{TokenAnswer, generated_key};

/// A token endpoint that answers every refresh with new tokens and keeps
/// the form bodies it was sent.
fn token_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&seen);
    let url = test_support::token_endpoint(move |request| {
        record.lock().expect("lock").push(request.body.clone());
        TokenAnswer::ok(
            r#"{"access_token":"at-2","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#,
        )
    });
    (url, seen)
}

/// `config` as a connect prepares it ([`Host::builder`]): each stored
/// login of `store` applied, refreshed first when it has expired, through
/// executor `kind`'s HTTP stack.
fn prepared(config: &Config, kind: RuntimeKind, store: &Arc<FileStore>) -> Config {
    let loaded = LoadedConfig::from(config.clone());
    Host::builder(&loaded)
        .runtime(kind)
        .options(RuntimeOptions::new(Vec::new(), None))
        .store(Some(Arc::clone(store) as Arc<dyn CredentialStore>))
        .prepare()
        .config()
        .clone()
}

fn dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rho-refresh-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// An expired login of the `private_key_jwt` client `m2m`, refreshable at
/// `token_endpoint`.
fn expired_login(token_endpoint: &str) -> StoredLogin {
    StoredLogin {
        issuer: ISSUER.into(),
        client: Client {
            id: "m2m".into(),
            secret: None,
            auth: ClientAuth::PrivateKeyJwt,
        },
        tokens: Some(StoredTokens {
            access_token: "at-1".into(),
            refresh_token: Some("rt-1".into()),
            expires_at: Some(now_unix() - 10),
            scope: None,
            resource: "https://mcp.example.com/mcp".into(),
            token_endpoint: token_endpoint.into(),
            dpop_key: None,
        }),
        wanted_scope: None,
    }
}

fn config(key_line: &str) -> Config {
    let text = format!(
        "[mcp.servers.m]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.m.oauth]\ngrant = \"client_credentials\"\nclient_id = \"m2m\"\n{key_line}\n"
    );
    rho_proto_core::config::parse(&text, "<test>").expect("config")
}

fn authorization_of(config: &Config) -> Option<String> {
    let Ok(server) = &config.get("m")?.config else {
        return None;
    };
    let Transport::StreamableHttp(http) = &server.transport else {
        return None;
    };
    http.headers.get("Authorization").cloned()
}

fn form_value(body: &str, key: &str) -> Option<String> {
    url::form_urlencoded::parse(body.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[test]
fn a_private_key_jwt_clients_connect_time_refresh_carries_a_signed_assertion() {
    let d = dir("assertion");
    let (pem, public) = generated_key();
    let key_path = d.join("m2m.pem");
    std::fs::write(&key_path, &pem).expect("key written");
    let config = config(&format!("client_key_file = \"{}\"", key_path.display()));
    let key = StoreKey::new(
        "m",
        &url::Url::parse("https://mcp.example.com/mcp").expect("url"),
    );
    for &kind in RuntimeKind::ALL {
        let (endpoint, seen) = token_endpoint();
        let store = Arc::new(FileStore::in_dir(&d.join(format!("{kind:?}"))));
        store
            .update(&key, &mut |_| Some(expired_login(&endpoint)))
            .expect("stored");
        let with = prepared(&config, kind, &store);
        assert_eq!(
            authorization_of(&with).as_deref(),
            Some("Bearer at-2"),
            "{kind:?}: refreshed"
        );
        let bodies = seen.lock().expect("lock").clone();
        let [body] = &bodies[..] else {
            panic!("{kind:?}: one refresh: {bodies:?}")
        };
        assert_eq!(
            form_value(body, "grant_type").as_deref(),
            Some("refresh_token")
        );
        assert_eq!(form_value(body, "client_id").as_deref(), Some("m2m"));
        assert_eq!(
            form_value(body, "client_assertion_type").as_deref(),
            Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        );
        let jwt = form_value(body, "client_assertion").expect("an assertion");
        let parts: Vec<&str> = jwt.split('.').collect();
        let [header, claims, signature] = parts[..] else {
            panic!("a compact JWS: {jwt}")
        };
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("b64")).expect("json");
        assert_eq!(claims["iss"], "m2m");
        assert_eq!(
            claims["aud"], ISSUER,
            "for the issuer that minted the tokens"
        );
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &public)
            .verify(
                format!("{header}.{claims}", claims = parts[1]).as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).expect("b64"),
            )
            .expect("signed with the configured key");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_private_key_jwt_client_without_its_key_sends_no_unauthenticated_refresh() {
    let d = dir("no-key");
    let (endpoint, seen) = token_endpoint();
    let key = StoreKey::new(
        "m",
        &url::Url::parse("https://mcp.example.com/mcp").expect("url"),
    );
    let store = Arc::new(FileStore::in_dir(&d));
    store
        .update(&key, &mut |_| Some(expired_login(&endpoint)))
        .expect("stored");
    // The key's file is gone: nothing can sign for the client.
    let config = config(&format!(
        "client_key_file = \"{}\"",
        d.join("absent.pem").display()
    ));
    let with = prepared(&config, RuntimeKind::default(), &store);
    assert_eq!(authorization_of(&with), None, "no usable token");
    assert!(seen.lock().expect("lock").is_empty(), "nothing was sent");
    // The stored login is kept for when the key is back.
    let kept = store.load(&key).expect("loads").expect("entry");
    assert_eq!(
        kept.tokens.and_then(|t| t.refresh_token).as_deref(),
        Some("rt-1")
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A client whose secret the config names (`client_secret_file`): the
/// store keeps no copy of it, so the connect-time refresh reads the file
/// and authenticates with it (HTTP Basic, as the login did), and what it
/// stores after has no secret either.
#[test]
fn a_configured_client_secret_is_read_for_the_refresh_and_never_stored() {
    let d = dir("secret");
    let secret_path = d.join("m2m-secret");
    std::fs::write(&secret_path, "s3cret-from-file\n").expect("secret written");
    let config = config(&format!(
        "client_secret_file = \"{}\"",
        secret_path.display()
    ));
    let key = StoreKey::new(
        "m",
        &url::Url::parse("https://mcp.example.com/mcp").expect("url"),
    );
    for &kind in RuntimeKind::ALL {
        let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
        let record = Arc::clone(&seen);
        let endpoint = test_support::token_endpoint(move |request| {
            record
                .lock()
                .expect("lock")
                .push(request.header("authorization").map(str::to_owned));
            TokenAnswer::ok(
                r#"{"access_token":"at-2","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#,
            )
        });
        let store_dir = d.join(format!("{kind:?}"));
        let store = Arc::new(FileStore::in_dir(&store_dir));
        let mut login = expired_login(&endpoint);
        login.client.auth = ClientAuth::ClientSecretBasic;
        store
            .update(&key, &mut |_| Some(login.clone()))
            .expect("stored");
        let with = prepared(&config, kind, &store);
        assert_eq!(
            authorization_of(&with).as_deref(),
            Some("Bearer at-2"),
            "{kind:?}: refreshed"
        );
        let basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("m2m:s3cret-from-file")
        );
        assert_eq!(*seen.lock().expect("lock"), [Some(basic)], "{kind:?}");
        let kept = store.load(&key).expect("loads").expect("entry");
        assert_eq!(kept.client.secret, None, "{kind:?}");
        assert_eq!(
            kept.tokens.and_then(|t| t.refresh_token).as_deref(),
            Some("rt-2")
        );
        let text = std::fs::read_to_string(store_dir.join("mcp-oauth.json")).expect("store");
        assert!(!text.contains("s3cret"), "{kind:?}: {text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}
