//! The secrets a server's OAuth grant needs, read from where its config
//! says they are — a file or an ambient variable, never the config — at
//! the moment a login starts, so a credential the platform rotates (a
//! Kubernetes projected service account token, a refreshed single sign-on
//! ID token) is read fresh at each grant.
//!
//! - the client secret: `client_secret_from_env` or `client_secret_file`;
//! - `grant = "jwt_bearer"`: the workload's JWT (`assertion_file` /
//!   `assertion_from_env`);
//! - `grant = "identity_assertion"`: the ID token (`id_token_file` /
//!   `id_token_from_env`), the identity provider's client and its secret;
//! - a `private_key_jwt` client: its signing key (`client_key_file` /
//!   `client_key_from_env`), as its signer (`client_key`).
//!
//! Errors name the server, the key and what to do; they never quote what
//! was read.
//!
//! Beside them, the randomness a login or a refresh draws from the
//! operating system (`random`): the core draws none itself.

use rho_proto_core::config::{OAuthConfig, OAuthGrant, SecretSource};
use rho_proto_core::oauth::exchange::{IdentityAssertionGrant, Secret};
use rho_proto_core::oauth::flow::GrantKind;
use rho_proto_core::oauth::pkce::RANDOM_BYTES;
use rho_proto_core::oauth::token::{Client, ClientAuth};

/// The most of a secret file rho reads: tokens and secrets are a few
/// kilobytes; a larger file is not one.
pub(crate) const MAX_SECRET_FILE: u64 = 64 * 1024;

/// Reads the secret configured under `oauth.<base>_file` or
/// `oauth.<base>_from_env` for server `id`, without the surrounding
/// whitespace (a file's final newline). Missing, unreadable, oversized,
/// empty and not-a-file secrets are errors naming the server and the key.
pub(crate) fn read_secret(id: &str, base: &str, source: &SecretSource) -> Result<String, String> {
    let (what, text) = match source {
        SecretSource::File(path) => {
            let what = format!("`oauth.{base}_file` {path}");
            let text = read_secret_file(id, &what, path)?;
            (what, text)
        }
        SecretSource::FromEnv(name) => {
            let what = format!("`oauth.{base}_from_env` names `{name}`, which");
            let text = std::env::var(name).map_err(|_| {
                format!("server `{id}`: {what} is not set; export it before starting rho")
            })?;
            (what, text)
        }
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(format!("server `{id}`: {what} is empty"));
    }
    crate::secrets::learn(trimmed);
    Ok(trimmed.to_owned())
}

/// Reads the secret file `path` (configured as `what`) of server `id`: a
/// regular file of at most [`MAX_SECRET_FILE`] bytes of UTF-8. A FIFO, a
/// device or a directory is refused at once without blocking, naming the
/// key (`rho_os::fs::read_regular`), so a bad file fails its server alone
/// and never stalls the others or grows rho.
pub(crate) fn read_secret_file(id: &str, what: &str, path: &str) -> Result<String, String> {
    let bytes = rho_os::fs::read_regular(std::path::Path::new(path), MAX_SECRET_FILE).map_err(
        |e| match e.kind() {
            std::io::ErrorKind::InvalidInput => format!(
                "server `{id}`: {what} cannot be used: {e}; point it at a file that holds the secret (at most {MAX_SECRET_FILE} bytes)"
            ),
            _ => format!(
                "server `{id}`: {what} cannot be read: {e}; check the path and its permissions"
            ),
        },
    )?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("server `{id}`: {what} is not UTF-8 text"))?;
    // Hidden wherever a server's words go from now on, whoever reads it.
    crate::secrets::learn(&text);
    Ok(text)
}

/// The client secret of server `id`, from `client_secret_from_env` or
/// `client_secret_file`, when one is configured.
pub(crate) fn client_secret(id: &str, oauth: &OAuthConfig) -> Result<Option<String>, String> {
    let source = match (&oauth.client_secret_from_env, &oauth.client_secret_file) {
        (Some(name), _) => SecretSource::FromEnv(name.clone()),
        (None, Some(path)) => SecretSource::File(path.clone()),
        (None, None) => return Ok(None),
    };
    read_secret(id, "client_secret", &source).map(Some)
}

/// The grant of server `id` as the login runs it, with the secrets it
/// needs read now; `redirect_uri` is the authorization code grant's.
pub(crate) fn grant_kind(
    id: &str,
    oauth: &OAuthConfig,
    redirect_uri: String,
) -> Result<GrantKind, String> {
    let missing = |what: &str| {
        format!(
            "server `{id}`: `oauth.grant` = \"{}\" needs {what}",
            oauth.grant.name()
        )
    };
    let assertion = &oauth.assertion;
    Ok(match oauth.grant {
        OAuthGrant::ClientCredentials => GrantKind::ClientCredentials,
        OAuthGrant::JwtBearer => {
            let source = assertion
                .assertion
                .as_ref()
                .ok_or_else(|| missing("`assertion_file` or `assertion_from_env`"))?;
            GrantKind::JwtBearer {
                assertion: Secret::new(read_secret(id, "assertion", source)?),
            }
        }
        OAuthGrant::IdentityAssertion => {
            let source = assertion
                .id_token
                .as_ref()
                .ok_or_else(|| missing("`id_token_file` or `id_token_from_env`"))?;
            let idp_token_endpoint = assertion
                .idp_token_endpoint
                .clone()
                .ok_or_else(|| missing("`idp_token_endpoint`"))?;
            let idp_secret = match &assertion.idp_client_secret {
                Some(source) => Some(read_secret(id, "idp_client_secret", source)?),
                None => None,
            };
            // RFC 6749 §2.3.1: every authorization server takes Basic.
            let idp_client = assertion.idp_client_id.clone().map(|client_id| Client {
                id: client_id,
                auth: if idp_secret.is_some() {
                    ClientAuth::ClientSecretBasic
                } else {
                    ClientAuth::None
                },
                secret: idp_secret,
            });
            GrantKind::IdentityAssertion(Box::new(IdentityAssertionGrant {
                id_token: Secret::new(read_secret(id, "id_token", source)?),
                idp_token_endpoint,
                idp_client,
                audience: assertion.idp_audience.clone(),
            }))
        }
        // The person's grant, and any a newer config adds.
        _ => GrantKind::AuthorizationCode { redirect_uri },
    })
}

/// `reason` (a secret's, which names the server) without the
/// ``server `id`: `` it starts with, for a failure that names the server
/// already.
pub(crate) fn without_server(id: &str, reason: String) -> String {
    match reason.strip_prefix(&format!("server `{id}`: ")) {
        Some(rest) => rest.to_owned(),
        None => reason,
    }
}

/// The signer of a `private_key_jwt` client, from where its config says
/// the PEM is; errors name the server, the key and the reason, never
/// the key's text.
pub(crate) fn client_key(
    id: &str,
    source: &rho_proto_core::config::OAuthClientKey,
) -> Result<std::sync::Arc<dyn rho_proto_core::oauth::assertion::ClientAssertionSigner>, String> {
    use rho_proto_core::config::OAuthClientKey;
    let (what, pem) = match source {
        OAuthClientKey::File(path) => {
            let what = format!("`oauth.client_key_file` {path}");
            let pem = read_secret_file(id, &what, path)?;
            (what, pem)
        }
        OAuthClientKey::FromEnv(name) => (
            format!("`oauth.client_key_from_env` `{name}`"),
            std::env::var(name).map_err(|_| {
                format!(
                    "server `{id}`: `oauth.client_key_from_env` names `{name}`, which is not set"
                )
            })?,
        ),
    };
    crate::jwt_key::Es256Key::signer_from_pem(&pem)
        .map_err(|e| format!("server `{id}`: {what}: {e}"))
}

/// Fresh random bytes from the operating system.
pub(crate) fn random() -> Result<[u8; RANDOM_BYTES], String> {
    let mut bytes = [0u8; RANDOM_BYTES];
    rho_os::random::fill_all(&mut bytes)
        .map_err(|e| format!("no randomness from the operating system: {e}"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rho-grants-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    }

    #[test]
    fn a_secret_file_is_read_fresh_at_each_grant_without_its_newline() {
        let d = dir("fresh");
        let path = d.join("token");
        std::fs::write(&path, "eyJ.one.sig\n").expect("write");
        let oauth = OAuthConfig {
            grant: OAuthGrant::JwtBearer,
            assertion: Box::new(rho_proto_core::config::OAuthAssertionConfig {
                assertion: Some(SecretSource::File(path.display().to_string())),
                ..Default::default()
            }),
            ..OAuthConfig::default()
        };
        let assertion_of = |kind: GrantKind| match kind {
            GrantKind::JwtBearer { assertion } => assertion.expose().to_owned(),
            other => panic!("{other:?}"),
        };
        let first = grant_kind("w", &oauth, String::new()).expect("grant");
        assert_eq!(assertion_of(first), "eyJ.one.sig");
        // The platform rotated it: the next grant sends the new one.
        std::fs::write(&path, "eyJ.two.sig").expect("write");
        let second = grant_kind("w", &oauth, String::new()).expect("grant");
        assert_eq!(assertion_of(second), "eyJ.two.sig");
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A FIFO with no writer (whose plain open waits forever) and a device
    /// that never ends (`/dev/zero`) as a secret file or the client key:
    /// refused at once naming the key, nothing read.
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_as_a_secret_file_is_refused_at_once_naming_the_key() {
        let d = dir("fifo");
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        for path in [fifo.display().to_string(), "/dev/zero".to_owned()] {
            for base in ["assertion", "id_token", "client_secret"] {
                let why = read_secret("corp", base, &SecretSource::File(path.clone()))
                    .expect_err("refused");
                assert!(
                    why.starts_with(&format!("server `corp`: `oauth.{base}_file` {path}"))
                        && why.contains("not a regular file"),
                    "{why}"
                );
            }
            let key = rho_proto_core::config::OAuthClientKey::File(path.clone());
            let Err(why) = client_key("corp", &key) else {
                panic!("{path}: a client key")
            };
            assert!(
                why.starts_with(&format!("server `corp`: `oauth.client_key_file` {path}"))
                    && why.contains("not a regular file"),
                "{why}"
            );
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn missing_empty_and_oversized_secrets_name_the_server_and_key_never_the_text() {
        let d = dir("bad");
        let missing = d.join("absent");
        let why = read_secret(
            "corp",
            "id_token",
            &SecretSource::File(missing.display().to_string()),
        )
        .expect_err("absent");
        assert!(
            why.starts_with("server `corp`: `oauth.id_token_file`")
                && why.contains("cannot be read"),
            "{why}"
        );
        let empty = d.join("empty");
        std::fs::write(&empty, " \n").expect("write");
        let why = read_secret(
            "corp",
            "assertion",
            &SecretSource::File(empty.display().to_string()),
        )
        .expect_err("empty");
        assert!(why.ends_with("is empty"), "{why}");
        let big = d.join("big");
        std::fs::write(&big, "s".repeat(MAX_SECRET_FILE as usize + 1)).expect("write");
        let why = read_secret(
            "corp",
            "assertion",
            &SecretSource::File(big.display().to_string()),
        )
        .expect_err("too big");
        assert!(
            why.contains("larger than 65536 bytes") && !why.contains("sss"),
            "{why}"
        );
        let why = read_secret(
            "corp",
            "idp_client_secret",
            &SecretSource::FromEnv("RHO_TEST_NO_SUCH_SECRET_VAR".into()),
        )
        .expect_err("unset");
        assert!(
            why.contains("`oauth.idp_client_secret_from_env` names `RHO_TEST_NO_SUCH_SECRET_VAR`")
                && why.contains("not set"),
            "{why}"
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_enterprise_grant_carries_the_id_token_idp_client_and_audience() {
        let d = dir("enterprise");
        let (token, secret) = (d.join("id_token"), d.join("idp_secret"));
        std::fs::write(&token, "eyJ.id.sig").expect("write");
        std::fs::write(&secret, "idp-secret").expect("write");
        let oauth = OAuthConfig {
            grant: OAuthGrant::IdentityAssertion,
            client_id: Some("chat".into()),
            assertion: Box::new(rho_proto_core::config::OAuthAssertionConfig {
                id_token: Some(SecretSource::File(token.display().to_string())),
                idp_token_endpoint: Some(
                    url::Url::parse("https://idp.example.com/token").expect("url"),
                ),
                idp_client_id: Some("chat-at-idp".into()),
                idp_client_secret: Some(SecretSource::File(secret.display().to_string())),
                idp_audience: Some("urn:as".into()),
                ..Default::default()
            }),
            ..OAuthConfig::default()
        };
        let GrantKind::IdentityAssertion(grant) =
            grant_kind("corp", &oauth, String::new()).expect("grant")
        else {
            panic!("the enterprise grant")
        };
        assert_eq!(grant.id_token.expose(), "eyJ.id.sig");
        assert_eq!(grant.audience.as_deref(), Some("urn:as"));
        let idp = grant.idp_client.expect("an IdP client");
        assert_eq!(idp.id, "chat-at-idp");
        assert_eq!(idp.secret.as_deref(), Some("idp-secret"));
        assert_eq!(idp.auth, ClientAuth::ClientSecretBasic);
        let _ = std::fs::remove_dir_all(&d);
    }
}
