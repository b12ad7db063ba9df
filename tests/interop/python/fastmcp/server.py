"""The interop server on standalone FastMCP (`fastmcp` 4.2.3, on `mcp`
2.3.0; the 2025 eras and 2026-07-28). FastMCP's imperative `ctx.elicit`
refuses the 2026 era, so `ask` and `sample` there use its documented guard
pattern: return an InputRequiredResult, read `ctx.input_responses` on the
retry.

    server.py stdio | http-sse | http-json | stateless
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
warnings.simplefilter("ignore")

import anyio  # noqa: E402
import mcp_types  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402
from fastmcp.utilities.types import Image  # noqa: E402
from pydantic import BaseModel, Field  # noqa: E402

import common  # noqa: E402

transport = common.transport_arg()
mcp = FastMCP("rho-interop-fastmcp", version="4.2.3")


class Weather(BaseModel):
    city: str
    celsius: float


class Answer(BaseModel):
    name: str = Field(description="Your name")
    agree: bool = Field(description="Do you agree?")


def modern(ctx: Context) -> bool:
    return ctx._is_modern_protocol()


@mcp.tool
def echo(message: str) -> str:
    """Echoes the message."""
    return f"Echo: {message}"


@mcp.tool
def structured(city: str = "Paris") -> Weather:
    """Structured weather."""
    return Weather(city=city, celsius=21.5)


@mcp.tool
def image() -> Image:
    """A tiny PNG."""
    return Image(data=common.PNG, format="png")


@mcp.tool
def fail() -> str:
    """Always fails."""
    raise ToolError("this tool always fails")


@mcp.tool
async def progress(ctx: Context) -> str:
    """Three progress notifications."""
    for i in range(1, 4):
        await ctx.report_progress(i, 3, f"step {i}")
        await anyio.sleep(0.05)
    return "progress done"


@mcp.tool
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


@mcp.tool
async def log(ctx: Context) -> str:
    """Logs at four levels."""
    await ctx.debug("interop debug message")
    await ctx.info("interop info message")
    await ctx.warning("interop warning message")
    await ctx.error("interop error message")
    return "logged"


ASK_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Your name"},
        "agree": {"type": "boolean", "description": "Do you agree?"},
    },
    "required": ["name", "agree"],
}


@mcp.tool
async def ask(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Asks a form."""
    if modern(ctx):
        answers = ctx.input_responses or {}
        if "who" not in answers:
            return mcp_types.InputRequiredResult(
                input_requests={
                    "who": mcp_types.ElicitRequest(
                        params=mcp_types.ElicitRequestFormParams(
                            message="Who are you?", requested_schema=ASK_SCHEMA
                        )
                    )
                }
            )
        result = mcp_types.ElicitResult.model_validate(answers["who"], from_attributes=True)
        if result.action == "accept":
            content = result.content or {}
            return f"answered name={content.get('name')} agree={str(content.get('agree')).lower()}"
        return f"action={result.action}"
    result = await ctx.elicit("Who are you?", Answer)
    if result.action == "accept":
        return f"answered name={result.data.name} agree={str(result.data.agree).lower()}"
    return f"action={result.action}"


def sampling_params() -> mcp_types.CreateMessageRequestParams:
    return mcp_types.CreateMessageRequestParams(
        messages=[
            mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text="Say hi"))
        ],
        max_tokens=50,
    )


@mcp.tool
async def sample(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Asks the client's model."""
    if modern(ctx):
        answers = ctx.input_responses or {}
        if "model" not in answers:
            return mcp_types.InputRequiredResult(
                input_requests={"model": mcp_types.CreateMessageRequest(params=sampling_params())}
            )
        result = mcp_types.CreateMessageResult.model_validate(answers["model"], from_attributes=True)
    else:
        params = sampling_params()
        result = await ctx.session.create_message(
            messages=params.messages, max_tokens=params.max_tokens, related_request_id=ctx.request_id
        )
    content = result.content
    text = content.text if getattr(content, "type", None) == "text" else str(content)
    return f"model said: {text}"


def added() -> str:
    """Registered at runtime."""
    return "added here"


@mcp.tool
async def add_tool(ctx: Context) -> str:
    """Registers the tool `added`."""
    mcp.tool(added, name="added")
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return "added"


@mcp.prompt
def greet(name: str) -> str:
    """Greets someone."""
    return f"Hello, {name}!"


@mcp.resource("interop://readme", mime_type="text/plain")
def readme() -> str:
    return common.README


@mcp.resource("interop://items/{item}", mime_type="text/plain")
def item(item: str) -> str:
    return f"item {item}"


@mcp.completion
def complete(ref, argument, context):
    if isinstance(ref, mcp_types.PromptReference) and ref.name == "greet" and argument.name == "name":
        return common.suggest(common.NAMES, argument.value)
    if isinstance(ref, mcp_types.ResourceTemplateReference) and argument.name == "item":
        return common.suggest(common.ITEMS, argument.value)
    return None


if transport == "stdio":
    mcp.run("stdio", show_banner=False)
else:
    common.serve_http(
        mcp.http_app(
            path="/mcp",
            json_response=transport == "http-json",
            stateless_http=transport == "stateless",
        )
    )
