"""URL-mode elicitation in the 2026-07-28 era on standalone FastMCP
(`fastmcp` 4.2.3, on `mcp` 2.3.0), stdio: the tool asks the person to open
a URL with FastMCP's documented guard pattern (return an
InputRequiredResult whose input request is a URL-mode
`elicitation/create`, read `ctx.input_responses` on the retry); the SDK
writes the wire.

    url_server.py [URL]

Every answer the retry carries is appended to the file INTEROP_RECORD
names.
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.simplefilter("ignore")

import mcp_types  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402

import common  # noqa: E402

URL = sys.argv[1] if len(sys.argv) > 1 else "https://auth.example.com/connect"
mcp = FastMCP("rho-interop-fastmcp-url", version="4.2.3")


@mcp.tool
async def connect(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Asks the person to open the connect URL."""
    answers = ctx.input_responses or {}
    if "link" not in answers:
        return mcp_types.InputRequiredResult(
            input_requests={
                "link": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestURLParams(
                        mode="url",
                        message="Connect your Example account to continue.",
                        url=URL,
                    )
                )
            },
            request_state="asked-once",
        )
    result = mcp_types.ElicitResult.model_validate(answers["link"], from_attributes=True)
    common.record(f"action {result.action} content {result.content}")
    return f"action={result.action}"


mcp.run("stdio")
