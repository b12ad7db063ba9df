//! The `oauth` keys of the assertion grants, and the file that may hold a
//! client secret: where each secret is (a file or an ambient variable,
//! never its text), and the combinations that make sense.
//!
//! - `grant = "jwt_bearer"` (workload identity federation) reads the
//!   workload's JWT from `assertion_file` or `assertion_from_env`;
//! - `grant = "identity_assertion"` (enterprise-managed authorization)
//!   reads the ID token from `id_token_file` or `id_token_from_env` and
//!   exchanges it at `idp_token_endpoint`, as `idp_client_id` (with its
//!   secret from `idp_client_secret_file` or `idp_client_secret_from_env`)
//!   for `idp_audience` when set; the ID-JAG it gets is redeemed by the
//!   client the authorization server knows (`client_id`, or
//!   `client_metadata_url`).
//!
//! A key of one grant under another is refused rather than ignored, so a
//! typo in `grant` never leaves a secret unread without a word.

use super::*;

/// `client_secret_file`: the absolute path of a file holding the client
/// secret; `client_secret_from_env` (`from_env`, when set) is the other
/// place for it, and only one may be given.
pub(super) fn secret_file(
    oauth: &Scope<'_, '_>,
    from_env: Option<&String>,
) -> Checked<Option<(String, Range<usize>)>> {
    let file = absolute_path(oauth, "client_secret_file")?;
    if let (Some((_, span)), Some(_)) = (&file, from_env) {
        return Err(Fault::new(
            span.clone(),
            format!(
                "`{}` and `{}` are two places for one secret: keep one",
                oauth.path_of("client_secret_file"),
                oauth.path_of("client_secret_from_env")
            ),
        ));
    }
    Ok(file)
}

/// An absolute path under `key`, with its span.
fn absolute_path(oauth: &Scope<'_, '_>, key: &str) -> Checked<Option<(String, Range<usize>)>> {
    match oauth.string(key)? {
        Some((path, span)) => non_empty_os_string(path)
            .and_then(|()| {
                std::path::Path::new(path)
                    .is_absolute()
                    .then_some(())
                    .ok_or_else(|| "must be an absolute path".to_owned())
            })
            .map(|()| Some((path.to_owned(), span.clone())))
            .map_err(|why| Fault::new(span, format!("`{}`: {why}", oauth.path_of(key)))),
        None => Ok(None),
    }
}

/// An ambient variable's name under `key`, with its span.
fn variable(oauth: &Scope<'_, '_>, key: &str) -> Checked<Option<(String, Range<usize>)>> {
    match oauth.string(key)? {
        Some((name, span)) => variable_name(name)
            .map(|()| Some((name.to_owned(), span.clone())))
            .map_err(|e| Fault::new(span, format!("`{}`: {e}", oauth.path_of(key)))),
        None => Ok(None),
    }
}

/// A non-empty string under `key`, with its span.
fn text(oauth: &Scope<'_, '_>, key: &str) -> Checked<Option<(String, Range<usize>)>> {
    match oauth.string(key)? {
        Some(("", span)) => Err(Fault::new(
            span,
            format!(
                "`{}` must not be empty; leave it out instead",
                oauth.path_of(key)
            ),
        )),
        Some((value, span)) => Ok(Some((value.to_owned(), span))),
        None => Ok(None),
    }
}

/// One secret's place, with the span and the key it was given under.
type Placed = (SecretSource, Range<usize>, String);

/// `{base}_file` or `{base}_from_env`: where one secret is, given once.
fn source(oauth: &Scope<'_, '_>, base: &str) -> Checked<Option<Placed>> {
    let file_key = format!("{base}_file");
    let env_key = format!("{base}_from_env");
    let file = absolute_path(oauth, &file_key);
    let env = variable(oauth, &env_key);
    first_fault(&[file.as_ref().err(), env.as_ref().err()])?;
    match (file?, env?) {
        (Some(_), Some((_, span))) => Err(Fault::new(
            span,
            format!(
                "`{}` and `{}` are two places for one secret: keep one",
                oauth.path_of(&file_key),
                oauth.path_of(&env_key)
            ),
        )),
        (Some((path, span)), None) => Ok(Some((SecretSource::File(path), span, file_key))),
        (None, Some((name, span))) => Ok(Some((SecretSource::FromEnv(name), span, env_key))),
        (None, None) => Ok(None),
    }
}

/// Reads the assertion grants' keys of `oauth` and checks
/// them against the grant and client `config` already holds.
pub(super) fn read_assertion_config(
    oauth: &Scope<'_, '_>,
    config: &OAuthConfig,
) -> Checked<OAuthAssertionConfig> {
    let assertion = source(oauth, "assertion");
    let id_token = source(oauth, "id_token");
    let idp_secret = source(oauth, "idp_client_secret");
    let idp_client_id = text(oauth, "idp_client_id");
    let idp_audience = text(oauth, "idp_audience");
    let idp_endpoint = match oauth.string("idp_token_endpoint") {
        Ok(Some((raw, span))) => {
            endpoint(raw)
                .map(|url| Some((url, span.clone())))
                .map_err(|why| {
                    Fault::new(
                        span,
                        format!(
                            "`{}`: {why} (the identity provider's token endpoint)",
                            oauth.path_of("idp_token_endpoint")
                        ),
                    )
                })
        }
        Ok(None) => Ok(None),
        Err(e) => Err(e),
    };
    first_fault(&[
        assertion.as_ref().err(),
        id_token.as_ref().err(),
        idp_secret.as_ref().err(),
        idp_client_id.as_ref().err(),
        idp_audience.as_ref().err(),
        idp_endpoint.as_ref().err(),
    ])?;
    let (assertion, id_token, idp_secret) = (assertion?, id_token?, idp_secret?);
    let (idp_client_id, idp_audience, idp_endpoint) =
        (idp_client_id?, idp_audience?, idp_endpoint?);

    // Each key belongs to one grant; under another it would go unread.
    let misplaced = |key: &str, span: &Range<usize>, grant: &str| {
        Fault::new(
            span.clone(),
            format!(
                "`{}` is read only with `grant = \"{grant}\"`: set that grant in the same table, or remove the key",
                oauth.path_of(key)
            ),
        )
    };
    if config.grant != OAuthGrant::JwtBearer
        && let Some((_, span, key)) = &assertion
    {
        return Err(misplaced(key, span, "jwt_bearer"));
    }
    if config.grant != OAuthGrant::IdentityAssertion {
        let placed =
            |p: &Option<Placed>| p.as_ref().map(|(_, span, key)| (key.clone(), span.clone()));
        let plain = |key: &str, p: Option<Range<usize>>| p.map(|span| (key.to_owned(), span));
        let enterprise_keys = [
            placed(&id_token),
            placed(&idp_secret),
            plain(
                "idp_token_endpoint",
                idp_endpoint.as_ref().map(|(_, s)| s.clone()),
            ),
            plain(
                "idp_client_id",
                idp_client_id.as_ref().map(|(_, s)| s.clone()),
            ),
            plain(
                "idp_audience",
                idp_audience.as_ref().map(|(_, s)| s.clone()),
            ),
        ];
        // The first such key a reader meets.
        if let Some((key, span)) = enterprise_keys
            .into_iter()
            .flatten()
            .min_by_key(|(_, span)| span.start)
        {
            return Err(misplaced(&key, &span, "identity_assertion"));
        }
    }
    let needs = |what: String| {
        Fault::new(
            oauth.span.clone(),
            format!(
                "`{}` = \"{}\" needs {what} in the same table",
                oauth.path_of("grant"),
                match config.grant {
                    OAuthGrant::JwtBearer => "jwt_bearer",
                    _ => "identity_assertion",
                }
            ),
        )
    };
    match config.grant {
        OAuthGrant::JwtBearer if assertion.is_none() => {
            return Err(needs(
                "the workload's JWT: `assertion_file` (its path) or `assertion_from_env` (the variable holding it)".into(),
            ));
        }
        OAuthGrant::IdentityAssertion => {
            if id_token.is_none() {
                return Err(needs(
                    "the identity assertion: `id_token_file` (the path of the ID token) or `id_token_from_env` (the variable holding it)".into(),
                ));
            }
            if idp_endpoint.is_none() {
                return Err(needs(
                    "`idp_token_endpoint`, the identity provider's token endpoint that exchanges the ID token".into(),
                ));
            }
            if config.client_id.is_none() && config.client_metadata_url.is_none() {
                return Err(needs(
                    "the client the authorization server knows: `client_id` (or `client_metadata_url`)".into(),
                ));
            }
        }
        _ => {}
    }
    let has_secret = config.client_secret_from_env.is_some() || config.client_secret_file.is_some();
    if config.grant == OAuthGrant::JwtBearer && has_secret && config.client_id.is_none() {
        return Err(Fault::new(
            oauth.span.clone(),
            format!(
                "a client secret authenticates a client: set `{}` in the same table, or leave the secret out (a workload's JWT needs none)",
                oauth.path_of("client_id")
            ),
        ));
    }
    if let (Some((_, span, _)), None) = (&idp_secret, &idp_client_id) {
        return Err(Fault::new(
            span.clone(),
            format!(
                "a secret for the identity provider authenticates a client there: set `{}` in the same table",
                oauth.path_of("idp_client_id")
            ),
        ));
    }
    Ok(OAuthAssertionConfig {
        assertion: assertion.map(|(source, ..)| source),
        id_token: id_token.map(|(source, ..)| source),
        idp_token_endpoint: idp_endpoint.map(|(url, _)| url),
        idp_client_id: idp_client_id.map(|(id, _)| id),
        idp_client_secret: idp_secret.map(|(source, ..)| source),
        idp_audience: idp_audience.map(|(audience, _)| audience),
    })
}

#[cfg(test)]
mod tests {
    use crate::config::{
        EntryError, OAuthAssertionConfig, OAuthConfig, OAuthGrant, SecretSource, Transport, parse,
    };

    fn table(body: &str) -> String {
        format!(
            "[mcp.servers.corp]\ntransport = \"streamable_http\"\nurl = \"https://mcp.example.com/mcp\"\n[mcp.servers.corp.oauth]\n{body}"
        )
    }

    fn oauth_of(body: &str) -> OAuthConfig {
        let config = parse(&table(body), "<test>").expect("file");
        let entry = config.get("corp").expect("entry");
        match &entry.config {
            Ok(server) => match &server.transport {
                Transport::StreamableHttp(http) => http.oauth.clone().expect("oauth"),
                Transport::Stdio(_) => panic!("http"),
            },
            Err(error) => panic!("{body}: {error}"),
        }
    }

    fn error_of(body: &str) -> EntryError {
        let config = parse(&table(body), "<test>").expect("file");
        let entry = config.get("corp").expect("entry");
        match &entry.config {
            Ok(server) => panic!("{body}: expected an error, got {server:?}"),
            Err(error) => error.clone(),
        }
    }

    #[test]
    fn a_workload_jwt_is_named_by_path_or_variable() {
        let oauth =
            oauth_of("grant = \"jwt_bearer\"\nassertion_file = \"/var/run/secrets/tokens/mcp\"\n");
        assert_eq!(oauth.grant, OAuthGrant::JwtBearer);
        assert!(oauth.grant.is_unattended());
        assert_eq!(
            oauth.assertion.assertion,
            Some(SecretSource::File("/var/run/secrets/tokens/mcp".into()))
        );
        let oauth = oauth_of(
            "grant = \"jwt_bearer\"\nclient_id = \"workload\"\nassertion_from_env = \"MCP_JWT\"\n",
        );
        assert_eq!(
            oauth.assertion.assertion,
            Some(SecretSource::FromEnv("MCP_JWT".into()))
        );
        assert_eq!(oauth.client_id.as_deref(), Some("workload"));
    }

    #[test]
    fn the_enterprise_grant_reads_its_idp_and_identity_assertion() {
        let oauth = oauth_of(
            "grant = \"identity_assertion\"\nclient_id = \"chat\"\nclient_secret_file = \"/etc/rho/chat.secret\"\n\
             id_token_from_env = \"SSO_ID_TOKEN\"\nidp_token_endpoint = \"https://idp.example.com/oauth2/token\"\n\
             idp_client_id = \"chat-at-idp\"\nidp_client_secret_from_env = \"IDP_SECRET\"\nidp_audience = \"https://auth.example.com/\"\n",
        );
        assert_eq!(oauth.grant, OAuthGrant::IdentityAssertion);
        assert_eq!(
            oauth.client_secret_file.as_deref(),
            Some("/etc/rho/chat.secret")
        );
        assert_eq!(
            *oauth.assertion,
            OAuthAssertionConfig {
                assertion: None,
                id_token: Some(SecretSource::FromEnv("SSO_ID_TOKEN".into())),
                idp_token_endpoint: Some(
                    url::Url::parse("https://idp.example.com/oauth2/token").expect("url")
                ),
                idp_client_id: Some("chat-at-idp".into()),
                idp_client_secret: Some(SecretSource::FromEnv("IDP_SECRET".into())),
                idp_audience: Some("https://auth.example.com/".into()),
            }
        );
    }

    #[test]
    fn bad_combinations_name_the_server_key_and_what_to_do() {
        for (body, says) in [
            (
                "grant = \"jwt_bearer\"\n",
                "`mcp.servers.corp.oauth.grant` = \"jwt_bearer\" needs the workload's JWT: `assertion_file`",
            ),
            (
                "grant = \"jwt_bearer\"\nassertion_file = \"/t\"\nassertion_from_env = \"T\"\n",
                "two places for one secret",
            ),
            (
                "grant = \"jwt_bearer\"\nassertion_file = \"tokens/mcp\"\n",
                "`mcp.servers.corp.oauth.assertion_file`: must be an absolute path",
            ),
            (
                "assertion_from_env = \"T\"\n",
                "`mcp.servers.corp.oauth.assertion_from_env` is read only with `grant = \"jwt_bearer\"`: set that grant",
            ),
            (
                "grant = \"client_credentials\"\nclient_id = \"m\"\nclient_secret_from_env = \"S\"\nidp_client_id = \"x\"\n",
                "`mcp.servers.corp.oauth.idp_client_id` is read only with `grant = \"identity_assertion\"`",
            ),
            (
                "grant = \"jwt_bearer\"\nassertion_file = \"/t\"\nid_token_from_env = \"T\"\n",
                "`mcp.servers.corp.oauth.id_token_from_env` is read only with `grant = \"identity_assertion\"`",
            ),
            (
                "grant = \"identity_assertion\"\nclient_id = \"c\"\nidp_token_endpoint = \"https://idp.example.com/token\"\n",
                "needs the identity assertion: `id_token_file`",
            ),
            (
                "grant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_file = \"/t\"\n",
                "needs `idp_token_endpoint`",
            ),
            (
                "grant = \"identity_assertion\"\nid_token_file = \"/t\"\nidp_token_endpoint = \"https://idp.example.com/token\"\n",
                "needs the client the authorization server knows: `client_id`",
            ),
            (
                "grant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_file = \"/t\"\nidp_token_endpoint = \"http://idp.example.com/token\"\n",
                "`mcp.servers.corp.oauth.idp_token_endpoint`",
            ),
            (
                "grant = \"identity_assertion\"\nclient_id = \"c\"\nid_token_file = \"/t\"\nidp_token_endpoint = \"https://idp.example.com/token\"\nidp_client_secret_file = \"/s\"\n",
                "set `mcp.servers.corp.oauth.idp_client_id`",
            ),
            (
                "grant = \"jwt_bearer\"\nassertion_file = \"/t\"\nclient_secret_from_env = \"S\"\n",
                "a client secret authenticates a client: set `mcp.servers.corp.oauth.client_id`",
            ),
            (
                "client_id = \"c\"\nclient_secret_from_env = \"S\"\nclient_secret_file = \"/s\"\n",
                "two places for one secret",
            ),
            (
                "client_id = \"c\"\nclient_secret_file = \"/s\"\nclient_key_file = \"/k.pem\"\n",
                "two ways to authenticate one client",
            ),
            (
                "grant = \"device_code\"\n",
                "\"jwt_bearer\" or \"identity_assertion\", not \"device_code\"",
            ),
        ] {
            let error = error_of(body);
            assert!(error.message.contains(says), "{body}: {error}");
            assert_eq!(error.id, "corp");
            assert!(error.line > 0, "{body}: located: {error}");
        }
    }

    #[test]
    fn a_client_secret_may_come_from_a_file_for_client_credentials() {
        let oauth = oauth_of(
            "grant = \"client_credentials\"\nclient_id = \"m2m\"\nclient_secret_file = \"/run/secrets/m2m\"\n",
        );
        assert_eq!(
            oauth.client_secret_file.as_deref(),
            Some("/run/secrets/m2m")
        );
        assert_eq!(oauth.client_secret_from_env, None);
    }
}
