"""URL-mode elicitation (2025-11-25, SEP-1036) on the official Python SDK
1.x (`mcp` 1.30.0, FastMCP), stdio: only the tools are written here; the
SDK builds `elicitation/create` with `mode: "url"`, the -32042
`URLElicitationRequiredError` and `notifications/elicitation/complete`.

    url_server.py [URL]

URL is the address the tools ask the person to open (default
https://auth.example.com/connect). Every client answer is appended to the
file INTEROP_RECORD names, so a test reads what the server received.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp.server.fastmcp import Context, FastMCP  # noqa: E402
from mcp.shared.exceptions import McpError, UrlElicitationRequiredError  # noqa: E402
from mcp.types import ElicitRequestURLParams  # noqa: E402

import common  # noqa: E402

URL = sys.argv[1] if len(sys.argv) > 1 else "https://auth.example.com/connect"
mcp = FastMCP("rho-interop-mcp1-url", log_level="WARNING")
calls = {"needs_connect": 0}


@mcp.tool()
async def connect(ctx: Context) -> str:
    """Asks the person to open the connect URL."""
    try:
        result = await ctx.elicit_url(
            "Connect your Example account to continue.", URL, "elicit-1"
        )
    except McpError as e:
        common.record(f"error {e.error.code} {e.error.message}")
        return f"error {e.error.code}"
    common.record(f"action {result.action}")
    if result.action == "accept":
        await ctx.session.send_elicit_complete("elicit-1")
    return f"action={result.action}"


@mcp.tool()
async def needs_connect() -> str:
    """Refuses with -32042 the first time, succeeds once called again."""
    calls["needs_connect"] += 1
    common.record(f"needs_connect {calls['needs_connect']}")
    if calls["needs_connect"] == 1:
        raise UrlElicitationRequiredError(
            [
                ElicitRequestURLParams(
                    mode="url",
                    message="Authorization is required for your Example files.",
                    url=URL,
                    elicitationId="elicit-2",
                )
            ]
        )
    return "connected"


mcp.run("stdio")
