//! The connect-time refresh of a stored login authenticates the way its
//! grant did: a `private_key_jwt` client's refresh carries a client
//! assertion signed with its configured key (for the issuer that minted
//! the tokens), on both executors' HTTP stacks; without its key the
//! refresh is not sent at all.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rho_host::RuntimeKind;
use rho_host::credentials::{FileStore, now_unix, with_stored_tokens};
use rho_proto_core::config::{Config, Transport};
use rho_proto_core::oauth::store::{CredentialStore, StoreKey, StoredLogin, StoredTokens};
use rho_proto_core::oauth::token::{Client, ClientAuth};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, UnparsedPublicKey,
};

const ISSUER: &str = "https://auth.example.com";

/// A fresh P-256 key as a PKCS#8 PEM.
fn generated_pem() -> String {
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .expect("a generated key");
    let b64 = STANDARD.encode(pkcs8.as_ref());
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("ascii"));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    pem
}

/// A token endpoint that answers every refresh with new tokens and keeps
/// the form bodies it was sent.
fn token_endpoint() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let url = format!("http://{}/token", listener.local_addr().expect("addr"));
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            record
                .lock()
                .expect("lock")
                .push(String::from_utf8_lossy(&body).into_owned());
            let answer = r#"{"access_token":"at-2","token_type":"Bearer","expires_in":3600,"refresh_token":"rt-2"}"#;
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (url, seen)
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
    let pem = generated_pem();
    let key_path = d.join("m2m.pem");
    std::fs::write(&key_path, &pem).expect("key written");
    let public = rho_host::jwt_key::Es256Key::from_pem(&pem)
        .expect("key")
        .public_key()
        .to_vec();
    let config = config(&format!("client_key_file = \"{}\"", key_path.display()));
    let key = StoreKey::new(
        "m",
        &url::Url::parse("https://mcp.example.com/mcp").expect("url"),
    );
    for kind in RuntimeKind::ALL {
        let (endpoint, seen) = token_endpoint();
        let store = FileStore::in_dir(&d.join(format!("{kind:?}")));
        store
            .update(&key, &mut |_| Some(expired_login(&endpoint)))
            .expect("stored");
        let with = with_stored_tokens(&config, kind, Some(&store), &|_| true);
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
    let store = FileStore::in_dir(&d);
    store
        .update(&key, &mut |_| Some(expired_login(&endpoint)))
        .expect("stored");
    // The key's file is gone: nothing can sign for the client.
    let config = config(&format!(
        "client_key_file = \"{}\"",
        d.join("absent.pem").display()
    ));
    let with = with_stored_tokens(&config, RuntimeKind::Smol, Some(&store), &|_| true);
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
