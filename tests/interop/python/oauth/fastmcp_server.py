"""An MCP server on standalone FastMCP (`fastmcp` 4.2.3, on `mcp` 2.3.0,
Streamable HTTP at /mcp) protected by fastmcp's own in-process OAuth
authorization server: `fastmcp.server.auth.providers.in_memory.
InMemoryOAuthProvider` (an `OAuthProvider`: fastmcp's routes on the SDK's
handlers, with fastmcp's token handler, which answers `invalid_client`
where the SDK says `unauthorized_client`, and 401 for `invalid_grant`).
It approves at once: its authorize step redirects straight back with a
code, so a headless login needs no person.

Two things are added to the provider, and nothing else is changed: the
access-token lifetime (`--ttl`, the module's constant), and reuse
detection. The provider rotates refresh tokens but forgets the old one, so
a replayed refresh token is merely unknown; here it is remembered, and
presented again it revokes every token of its login (RFC 9700 §4.14.2)
before fastmcp answers invalid_grant. Registrations are forgotten when the
process ends.

Run with the fastmcp venv:

    python/fastmcp/.venv/bin/python python/oauth/fastmcp_server.py [--port N] [--log FILE] [--ttl SECS]

(see oauth_common.py for the arguments and the log's lines).
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.simplefilter("ignore")

from fastmcp import FastMCP  # noqa: E402
from fastmcp.server.auth.auth import ClientRegistrationOptions, RevocationOptions  # noqa: E402
from fastmcp.server.auth.providers import in_memory  # noqa: E402

import oauth_common  # noqa: E402

SCOPE = "mcp"


class Provider(in_memory.InMemoryOAuthProvider):
    """fastmcp's in-memory provider, with reuse detection."""

    def __init__(self, families, **kwargs):
        super().__init__(**kwargs)
        self.families = families

    async def exchange_authorization_code(self, client, authorization_code):
        tokens = await super().exchange_authorization_code(client, authorization_code)
        family = self.families.new()
        self.families.add(tokens.access_token, family)
        self.families.add(tokens.refresh_token, family)
        return tokens

    async def load_refresh_token(self, client, refresh_token):
        family = self.families.reuse(refresh_token)
        if family is not None:
            self._revoke_family(family)
            return None
        return await super().load_refresh_token(client, refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        family = self.families.rotate(refresh_token.token) or self.families.new()
        for token in self.families.members(family):
            self.families.drop(token)
        tokens = await super().exchange_refresh_token(client, refresh_token, scopes)
        self.families.add(tokens.access_token, family)
        self.families.add(tokens.refresh_token, family)
        return tokens

    def _revoke_family(self, family):
        for token in self.families.members(family):
            if token in self.access_tokens:
                self._revoke_internal(access_token_str=token)
            else:
                self._revoke_internal(refresh_token_str=token)
            self.families.drop(token)

    def expire_all(self):
        self.access_tokens.clear()


def main():
    options = oauth_common.args()
    in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = options.ttl
    sock, port = oauth_common.bind(options.port)
    base = f"http://127.0.0.1:{port}"
    families = oauth_common.Families()
    provider = Provider(
        families,
        base_url=base,
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
        ),
        revocation_options=RevocationOptions(enabled=True),
        required_scopes=[SCOPE],
    )
    mcp = FastMCP("rho-oauth-fastmcp", version="4.2.3", auth=provider)

    @mcp.tool
    def echo(message: str) -> str:
        """Echoes the message."""
        return f"Echo: {message}"

    app = oauth_common.logged(
        mcp.http_app(path="/mcp"),
        oauth_common.Log(options.log),
        families,
        provider.expire_all,
        options.refresh_delay,
    )
    oauth_common.serve(app, sock)


if __name__ == "__main__":
    main()
