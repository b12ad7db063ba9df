//! What rho-host's unit tests and its integration tests share (those
//! include this file with `#[path]`): a scripted OAuth token endpoint on
//! loopback, whose answers each test decides, and a freshly generated
//! ES256 key as a PEM.

// Each test crate uses only part of this.
#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};

/// One request the token endpoint got.
pub(crate) struct TokenRequest {
    /// Its header lines: names lowercased, values trimmed.
    pub(crate) headers: Vec<(String, String)>,
    /// Its form body.
    pub(crate) body: String,
}

impl TokenRequest {
    /// The value of the header named `name` (lowercase), if sent.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of the form field `name`, if sent (not decoded).
    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.body
            .split('&')
            .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
    }
}

/// How the token endpoint answers one request: a JSON body.
pub(crate) struct TokenAnswer {
    /// The status code and reason, as `200 OK`.
    status: &'static str,
    /// Header lines besides the content type, length and `Connection`,
    /// each ending in CRLF.
    headers: String,
    /// The JSON body.
    body: String,
}

impl TokenAnswer {
    /// `200 OK` with `body`.
    pub(crate) fn ok(body: &str) -> Self {
        Self {
            status: "200 OK",
            headers: String::new(),
            body: body.to_owned(),
        }
    }

    /// `400 Bad Request` with `body` (an OAuth error).
    pub(crate) fn bad_request(body: &str) -> Self {
        Self {
            status: "400 Bad Request",
            headers: String::new(),
            body: body.to_owned(),
        }
    }

    /// The same answer with the header `name: value` too.
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push_str(&format!("{name}: {value}\r\n"));
        self
    }
}

/// Starts a token endpoint on 127.0.0.1, on a thread of its own, that
/// answers each request (one a connection) with what `answer` says of
/// it; returns its URL (`http://127.0.0.1:PORT/token`).
pub(crate) fn token_endpoint(
    mut answer: impl FnMut(&TokenRequest) -> TokenAnswer + Send + 'static,
) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let url = format!("http://{}/token", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            let _ = reader.read_line(&mut request_line);
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                }
            }
            let length = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let request = TokenRequest {
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            };
            let TokenAnswer {
                status,
                headers,
                body,
            } = answer(&request);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// A fresh P-256 key as a PKCS#8 PEM.
pub(crate) fn generated_pem() -> String {
    generated_key().0
}

/// A fresh P-256 key as a PKCS#8 PEM, with its public key (the
/// uncompressed point a signature is verified with).
pub(crate) fn generated_key() -> (String, Vec<u8>) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .expect("a generated key");
    let public = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .expect("the generated key")
        .public_key()
        .as_ref()
        .to_vec();
    let b64 = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("ascii"));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    (pem, public)
}
