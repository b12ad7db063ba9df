"""An MCP server on the official Python SDK 1.x (`mcp` 1.30.0, FastMCP,
Streamable HTTP at /mcp) protected by the SDK's own authorization server
routes (`mcp.server.auth`: metadata, /register, /authorize, /token,
/revoke, the protected resource metadata and the bearer check), over an
in-memory `OAuthAuthorizationServerProvider` that approves at once: its
authorize step redirects straight back to the client's redirect_uri with
a code, so a headless login needs no person.

Refresh tokens rotate; one presented again (reuse) is refused with
invalid_grant and its whole family (every token from the same login) is
revoked, as OAuth 2.1 / RFC 9700 ask. Tokens are bound to the resource
the client named (`validate_token_resource`). Everything is forgotten
when the process ends (registrations included).

Run with the mcp1 venv:

    python/mcp1/.venv/bin/python python/oauth/mcp1_server.py [--port N] [--log FILE] [--ttl SECS]

(see oauth_common.py for the arguments and the log's lines).
"""

import os
import secrets
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.simplefilter("ignore")

from mcp.server.auth.provider import (  # noqa: E402
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import (  # noqa: E402
    AuthSettings,
    ClientRegistrationOptions,
    RevocationOptions,
)
from mcp.server.fastmcp import FastMCP  # noqa: E402
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken  # noqa: E402

import oauth_common  # noqa: E402

SCOPE = "mcp"


class Provider:
    """The SDK's provider protocol, in memory, approving every request."""

    def __init__(self, ttl, families):
        self.ttl = ttl
        self.families = families
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [SCOPE],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="tester",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(self, client, authorization_code):
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        code = authorization_code
        return self._issue(client.client_id, code.scopes, code.resource, self.families.new())

    async def load_refresh_token(self, client, refresh_token):
        family = self.families.reuse(refresh_token)
        if family is not None:
            # Reuse: the refresh token was rotated already. Revoke what
            # descends from it; the SDK then answers invalid_grant.
            self._revoke_family(family)
            return None
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token already used")
        family = self.families.rotate(refresh_token.token)
        # The access token of the rotated refresh token goes with it.
        for token in self.families.members(family):
            if self.access.pop(token, None) is not None:
                self.families.drop(token)
        return self._issue(client.client_id, scopes, refresh_token.resource, family)

    async def load_access_token(self, token):
        access = self.access.get(token)
        if access is None:
            return None
        if access.expires_at is not None and access.expires_at < time.time():
            self.access.pop(token, None)
            self.families.drop(token)
            return None
        return access

    async def revoke_token(self, token):
        family = self.families.family_of.get(token.token)
        if family is not None:
            self._revoke_family(family)

    def expire_all(self):
        for token in list(self.access):
            self.families.drop(token)
        self.access.clear()

    def _revoke_family(self, family):
        for token in self.families.members(family):
            self.access.pop(token, None)
            self.refresh.pop(token, None)
            self.families.drop(token)

    def _issue(self, client_id, scopes, resource, family):
        access = f"sdk-at-{secrets.token_urlsafe(24)}"
        refresh = f"sdk-rt-{secrets.token_urlsafe(24)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.ttl,
            resource=resource,
            subject="tester",
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject="tester"
        )
        self.families.add(access, family)
        self.families.add(refresh, family)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.ttl,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


def main():
    options = oauth_common.args()
    sock, port = oauth_common.bind(options.port)
    base = f"http://127.0.0.1:{port}"
    families = oauth_common.Families()
    provider = Provider(options.ttl, families)
    mcp = FastMCP(
        "rho-oauth-mcp1",
        streamable_http_path="/mcp",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=True,
            required_scopes=[SCOPE],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
            ),
            revocation_options=RevocationOptions(enabled=True),
        ),
    )

    @mcp.tool()
    def echo(message: str) -> str:
        """Echoes the message."""
        return f"Echo: {message}"

    app = oauth_common.logged(
        mcp.streamable_http_app(),
        oauth_common.Log(options.log),
        families,
        provider.expire_all,
        options.refresh_delay,
    )
    oauth_common.serve(app, sock)


if __name__ == "__main__":
    main()
