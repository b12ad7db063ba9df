"""The interop server on the official Python SDK 1.x (`mcp` 1.30.0,
FastMCP from mcp.server.fastmcp; the 2025 eras only).

    server.py stdio | http-sse | http-json | stateless
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import anyio  # noqa: E402
from mcp.server.fastmcp import Context, FastMCP, Image  # noqa: E402
from mcp.server.fastmcp.exceptions import ToolError  # noqa: E402
from mcp.types import (  # noqa: E402
    Completion,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field  # noqa: E402

import common  # noqa: E402

transport = common.transport_arg()
mcp = FastMCP(
    "rho-interop-mcp1",
    json_response=transport == "http-json",
    stateless_http=transport == "stateless",
    streamable_http_path="/mcp",
    log_level="WARNING",
)


class Weather(BaseModel):
    city: str
    celsius: float


class Answer(BaseModel):
    name: str = Field(description="Your name")
    agree: bool = Field(description="Do you agree?")


@mcp.tool()
def echo(message: str) -> str:
    """Echoes the message."""
    return f"Echo: {message}"


@mcp.tool()
def structured(city: str = "Paris") -> Weather:
    """Structured weather."""
    return Weather(city=city, celsius=21.5)


@mcp.tool()
def image() -> Image:
    """A tiny PNG."""
    return Image(data=common.PNG, format="png")


@mcp.tool()
def fail() -> str:
    """Always fails."""
    raise ToolError("this tool always fails")


@mcp.tool()
async def progress(ctx: Context) -> str:
    """Three progress notifications."""
    for i in range(1, 4):
        await ctx.report_progress(i, 3, f"step {i}")
        await anyio.sleep(0.05)
    return "progress done"


@mcp.tool()
async def slow(marker: str = "slow", seconds: float = 30) -> str:
    """Runs long; records whether it was cancelled."""
    common.record(f"started {marker}")
    try:
        await anyio.sleep(seconds)
    except BaseException:
        common.record(f"cancelled {marker}")
        raise
    common.record(f"finished {marker}")
    return "slow finished"


@mcp.tool()
async def log(ctx: Context) -> str:
    """Logs at four levels."""
    await ctx.debug("interop debug message")
    await ctx.info("interop info message")
    await ctx.warning("interop warning message")
    await ctx.error("interop error message")
    return "logged"


@mcp.tool()
async def ask(ctx: Context) -> str:
    """Asks a form."""
    result = await ctx.elicit("Who are you?", Answer)
    if result.action == "accept":
        return f"answered name={result.data.name} agree={str(result.data.agree).lower()}"
    return f"action={result.action}"


@mcp.tool()
async def sample(ctx: Context) -> str:
    """Asks the client's model."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))],
        max_tokens=50,
        related_request_id=ctx.request_id,
    )
    text = result.content.text if result.content.type == "text" else str(result.content)
    return f"model said: {text}"


def added() -> str:
    """Registered at runtime."""
    return "added here"


@mcp.tool()
async def add_tool(ctx: Context) -> str:
    """Registers the tool `added`."""
    mcp.add_tool(added, name="added")
    await ctx.session.send_tool_list_changed()
    return "added"


@mcp.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    return f"Hello, {name}!"


@mcp.resource("interop://readme", mime_type="text/plain")
def readme() -> str:
    return common.README


@mcp.resource("interop://items/{item}", mime_type="text/plain")
def item(item: str) -> str:
    return f"item {item}"


@mcp.completion()
async def complete(ref, argument, context):
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        return Completion(values=common.suggest(common.NAMES, argument.value))
    if isinstance(ref, ResourceTemplateReference) and argument.name == "item":
        return Completion(values=common.suggest(common.ITEMS, argument.value))
    return None


if transport == "stdio":
    mcp.run("stdio")
else:
    common.serve_http(mcp.streamable_http_app())
