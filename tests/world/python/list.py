"""What the official Python MCP client lists from a server, as one JSON line:

    .venv/bin/python list.py stdio COMMAND [ARG...]
    .venv/bin/python list.py http URL

prints {"protocol": ..., "tools": [...], "app_only": [...], "prompts": [...],
"resources": [...]}: names, and resource URIs; `app_only` the tools an MCP
Apps server shows its views alone (`_meta.ui.visibility` without "model"),
which a host must not give the model; `prompts` and `resources` are null when
the server does not declare that capability. The server inherits this process's
environment. tests/tests/world.rs compares rho's lists with it."""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def app_only(tool):
    ui = (tool.meta or {}).get("ui")
    visibility = ui.get("visibility") if isinstance(ui, dict) else None
    return isinstance(visibility, list) and "model" not in visibility


async def lists(session):
    init = await session.initialize()
    caps = init.capabilities
    tools = await session.list_tools()
    prompts = resources = None
    if caps.prompts is not None:
        prompts = sorted(p.name for p in (await session.list_prompts()).prompts)
    if caps.resources is not None:
        resources = sorted(str(r.uri) for r in (await session.list_resources()).resources)
    return {
        "protocol": init.protocol_version,
        "tools": sorted(t.name for t in tools.tools),
        "app_only": sorted(t.name for t in tools.tools if app_only(t)),
        "prompts": prompts,
        "resources": resources,
    }


async def main(argv):
    if len(argv) >= 2 and argv[0] == "stdio":
        params = StdioServerParameters(command=argv[1], args=argv[2:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                return await lists(session)
    if len(argv) == 2 and argv[0] == "http":
        async with streamable_http_client(argv[1]) as (read, write, *_):
            async with ClientSession(read, write) as session:
                return await lists(session)
    sys.exit(__doc__)


print(json.dumps(asyncio.run(main(sys.argv[1:]))))
