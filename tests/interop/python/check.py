"""By-hand check of an interop server with the Python SDK 1.x client:

    <mcp1 venv>/bin/python check.py <python> <server.py> stdio|http-sse|http-json|stateless

(for a node server pass `node` and the script). Prints what each feature gave."""

import asyncio
import os
import subprocess
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def on_elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada", "agree": True})


async def on_sample(context, params):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="hi from model"), model="fake"
    )


async def on_log(params):
    print("  log:", params.level, params.data)


async def exercise(session):
    init = await session.initialize()
    print("version", init.protocolVersion, init.serverInfo.name, init.capabilities.model_dump(exclude_none=True))
    tools = await session.list_tools()
    print("tools", [t.name for t in tools.tools])
    print("echo", (await session.call_tool("echo", {"message": "hi"})).content[0].text)
    s = await session.call_tool("structured", {})
    print("structured", s.structuredContent, [t.outputSchema is not None for t in tools.tools if t.name == "structured"])
    print("image", (await session.call_tool("image", {})).content[0].type)
    f = await session.call_tool("fail", {})
    print("fail", f.isError, f.content[0].text)
    seen = []

    async def on_progress(p, total, message):
        seen.append(p)

    r = await session.call_tool("progress", {}, progress_callback=on_progress)
    print("progress", r.content[0].text, seen)
    print("log", (await session.call_tool("log", {})).content[0].text)
    print("ask", (await session.call_tool("ask", {})).content[0].text)
    print("sample", (await session.call_tool("sample", {})).content[0].text)
    print("add_tool", (await session.call_tool("add_tool", {})).content[0].text)
    await asyncio.sleep(0.2)
    print("tools after", [t.name for t in (await session.list_tools()).tools])
    p = await session.get_prompt("greet", {"name": "bob"})
    print("prompt", p.messages[0].content.text)
    c = await session.complete(types.PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "al"})
    print("complete prompt", c.completion.values)
    print("readme", (await session.read_resource("interop://readme")).contents[0].text)
    print("item", (await session.read_resource("interop://items/apple")).contents[0].text)
    c = await session.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="interop://items/{item}"), {"name": "item", "value": "ap"}
    )
    print("complete template", c.completion.values)
    try:
        await asyncio.wait_for(session.call_tool("slow", {"marker": "check", "seconds": 30}), 1.0)
    except asyncio.TimeoutError:
        print("slow: timed out (cancelled)")


async def main():
    command, script, transport = sys.argv[1:4]
    record = tempfile.mktemp()
    env = dict(os.environ, INTEROP_RECORD=record)
    kw = dict(elicitation_callback=on_elicit, sampling_callback=on_sample, logging_callback=on_log)
    if transport == "stdio":
        params = StdioServerParameters(command=command, args=[script, "stdio"], env=env)
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w, **kw) as session:
                await exercise(session)
                await asyncio.sleep(1)
    else:
        proc = subprocess.Popen([command, script, transport], stdout=subprocess.PIPE, env=env, text=True)
        port = proc.stdout.readline().split()[1]
        try:
            async with streamablehttp_client(f"http://127.0.0.1:{port}/mcp") as (r, w, _):
                async with ClientSession(r, w, **kw) as session:
                    await exercise(session)
                    await asyncio.sleep(1)
        finally:
            proc.terminate()
    print("record:", open(record).read() if os.path.exists(record) else "(none)")


asyncio.run(main())
