"""The interop server on the official Python SDK 2.x (`mcp` 2.3.0,
MCPServer from mcp.server.mcpserver; the 2025 eras and 2026-07-28, where
forms and sampling are multi round-trip results: the SDK's `Resolve`
markers pick the wire per era).

    server.py stdio | http-sse | http-json | stateless
"""

import os
import sys
import warnings
from typing import Annotated

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.simplefilter("ignore")

import anyio  # noqa: E402
from mcp.server.mcpserver import (  # noqa: E402
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    Image,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp_types import (  # noqa: E402
    Completion,
    CreateMessageResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field  # noqa: E402

import common  # noqa: E402

transport = common.transport_arg()
mcp = MCPServer("rho-interop-mcp2", version="2.3.0", log_level="WARNING")


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


def ask_form() -> Elicit[Answer]:
    return Elicit("Who are you?", Answer)


@mcp.tool()
async def ask(answer: Annotated[ElicitationResult[Answer], Resolve(ask_form)]) -> str:
    """Asks a form."""
    if isinstance(answer, AcceptedElicitation):
        return f"answered name={answer.data.name} agree={str(answer.data.agree).lower()}"
    return f"action={answer.action}"


def ask_model() -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))],
        max_tokens=50,
    )


@mcp.tool()
async def sample(result: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Asks the client's model."""
    content = result.content
    text = content.text if getattr(content, "type", None) == "text" else str(content)
    return f"model said: {text}"


def added() -> str:
    """Registered at runtime."""
    return "added here"


@mcp.tool()
async def add_tool(ctx: Context) -> str:
    """Registers the tool `added`."""
    mcp.add_tool(added, name="added")
    # 2026-07-28: subscriptions/listen streams; 2025: the session's notification.
    await ctx.notify_tools_changed()
    if (ctx.protocol_version or "") < "2026":
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
    common.serve_http(
        mcp.streamable_http_app(
            streamable_http_path="/mcp",
            json_response=transport == "http-json",
            stateless_http=transport == "stateless",
        )
    )
