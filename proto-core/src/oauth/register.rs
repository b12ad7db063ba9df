//! Dynamic client registration (RFC 7591) for a native client with a
//! loopback redirect, and how rho picks its token endpoint authentication
//! from what the authorization server supports.

use serde::Deserialize;
use serde_json::{Value, json};

use super::discovery::AuthorizationServerMetadata;
use super::token::{Client, ClientAuth};

/// The token endpoint auth method to register with: `none` (a public
/// native client, which is what rho is) when the server supports it or
/// lists nothing (RFC 8414's default list is `client_secret_basic`, but a
/// server that lists nothing and issues a secret is read back below);
/// else `client_secret_post`, else `client_secret_basic`.
///
/// `client_secret_post` first because it carries `client_id` in the form
/// body, where the authorization servers people run read it (the Python
/// SDK's and fastmcp's answer a Basic-only request `invalid_client
/// (Missing client_id)`); a server that lists both takes either.
pub fn choose_auth(server: &AuthorizationServerMetadata) -> ClientAuth {
    let Some(methods) = &server.token_endpoint_auth_methods_supported else {
        return ClientAuth::None;
    };
    for preferred in [
        ClientAuth::None,
        ClientAuth::ClientSecretPost,
        ClientAuth::ClientSecretBasic,
    ] {
        if methods.iter().any(|m| m == preferred.name()) {
            return preferred;
        }
    }
    ClientAuth::None
}

/// The registration request body: `application_type: "native"`, the one
/// loopback redirect URI, the code and refresh grants, and the chosen
/// auth method.
pub fn registration_request(client_name: &str, redirect_uri: &str, auth: ClientAuth) -> Value {
    json!({
        "client_name": client_name,
        "application_type": "native",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": auth.name(),
    })
}

/// Why a registration answer is unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The server refused (RFC 7591 §3.2.2).
    #[error("the authorization server refused to register rho: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// `invalid_redirect_uri`, `invalid_client_metadata`, ...
        error: String,
        /// `error_description`.
        description: Option<String>,
    },
    /// Not a registration response.
    #[error(
        "the registration endpoint answered with something that is not a client registration: {0}"
    )]
    Malformed(String),
}

/// Reads a registration answer into the client rho will use. The method
/// the server registered wins over the requested one; a secret issued
/// with `none` requested is used with client_secret_basic.
pub fn read_registration(
    status: u16,
    body: &[u8],
    requested: ClientAuth,
) -> Result<Client, RegistrationError> {
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        token_endpoint_auth_method: Option<String>,
    }
    super::token::error_answer(status, body).map_err(|e| match e {
        Some((error, description)) => RegistrationError::Refused { error, description },
        None => RegistrationError::Malformed(format!("HTTP {status}")),
    })?;
    let r: Registered =
        serde_json::from_slice(body).map_err(|e| RegistrationError::Malformed(e.to_string()))?;
    if r.client_id.is_empty() {
        return Err(RegistrationError::Malformed("an empty client_id".into()));
    }
    let registered = r
        .token_endpoint_auth_method
        .as_deref()
        .and_then(ClientAuth::from_name)
        // rho registers no key: a registration cannot make it a
        // private_key_jwt client.
        .filter(|a| *a != ClientAuth::PrivateKeyJwt);
    let auth = match (registered, &r.client_secret) {
        (Some(auth), _) => auth,
        (None, Some(_)) if requested == ClientAuth::None => ClientAuth::ClientSecretBasic,
        (None, _) => requested,
    };
    Ok(Client {
        id: r.client_id,
        secret: r.client_secret,
        auth,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(methods: Option<&[&str]>) -> AuthorizationServerMetadata {
        AuthorizationServerMetadata {
            token_endpoint_auth_methods_supported: methods
                .map(|m| m.iter().map(|x| (*x).to_owned()).collect()),
            ..AuthorizationServerMetadata::default()
        }
    }

    #[test]
    fn a_native_client_prefers_none_then_post_then_basic() {
        assert_eq!(choose_auth(&server(None)), ClientAuth::None);
        assert_eq!(
            choose_auth(&server(Some(&["client_secret_post", "none"]))),
            ClientAuth::None
        );
        assert_eq!(
            choose_auth(&server(Some(&[
                "client_secret_basic",
                "client_secret_post"
            ]))),
            ClientAuth::ClientSecretPost,
            "client_id in the body, where the servers people run read it"
        );
        assert_eq!(
            choose_auth(&server(Some(&["client_secret_basic", "private_key_jwt"]))),
            ClientAuth::ClientSecretBasic
        );
        assert_eq!(
            choose_auth(&server(Some(&["client_secret_post", "private_key_jwt"]))),
            ClientAuth::ClientSecretPost
        );
    }

    #[test]
    fn the_request_is_a_native_loopback_client() {
        let body = registration_request("rho", "http://127.0.0.1:7/callback", ClientAuth::None);
        assert_eq!(body["application_type"], "native");
        assert_eq!(
            body["redirect_uris"],
            json!(["http://127.0.0.1:7/callback"])
        );
        assert_eq!(
            body["grant_types"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(body["token_endpoint_auth_method"], "none");
    }

    #[test]
    fn registration_answers_are_read_with_the_registered_method() {
        let c = read_registration(201, br#"{"client_id":"abc"}"#, ClientAuth::None).expect("ok");
        assert_eq!(
            (c.id.as_str(), c.auth, c.secret),
            ("abc", ClientAuth::None, None)
        );
        let c = read_registration(
            201,
            br#"{"client_id":"abc","client_secret":"s","token_endpoint_auth_method":"client_secret_post"}"#,
            ClientAuth::None,
        )
        .expect("ok");
        assert_eq!(c.auth, ClientAuth::ClientSecretPost);
        let c = read_registration(
            201,
            br#"{"client_id":"abc","client_secret":"s"}"#,
            ClientAuth::None,
        )
        .expect("ok");
        assert_eq!(c.auth, ClientAuth::ClientSecretBasic);
        assert!(matches!(
            read_registration(400, br#"{"error":"invalid_redirect_uri"}"#, ClientAuth::None),
            Err(RegistrationError::Refused { error, .. }) if error == "invalid_redirect_uri"
        ));
        assert!(matches!(
            read_registration(201, br#"{"client_id":""}"#, ClientAuth::None),
            Err(RegistrationError::Malformed(_))
        ));
    }
}
