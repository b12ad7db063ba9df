"""A tasks server on the official Python SDK 1.x (`mcp` 1.30.0, its
experimental tasks: the 2025-11-25 core tasks, SEP-1686), over stdio, for
rho's task tests (tests/tests/tasks.rs). The SDK answers `tasks/get`,
`tasks/result`, `tasks/list` and `tasks/cancel` and delivers a task's
questions on `tasks/result`; only the tools' work is written here.

    tasks_server.py

Tools, each declared `execution.taskSupport: "required"` (the SDK refuses
a plain call of them) but `maybe_task`:

- `countdown {steps=3}`: a status message `step <i> of <steps>` every
  200 ms (`notifications/tasks/status`), then `counted <steps>`;
- `slow_task {marker}`: works for up to an hour; appends `started <marker>`,
  then `cancelled <marker>` once the task is cancelled (or
  `finished <marker>`), to the file named by INTEROP_RECORD;
- `greet_task`: asks for a name (a form, tagged with the task), then
  returns `Hello, <name>!` or `action=<action>`;
- `maybe_task {marker}`: `taskSupport: "optional"`, so the client chooses:
  appends `<marker> as a task` or `<marker> plainly` to INTEROP_RECORD as
  the call came, and returns the same words.
"""

import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

import anyio
import mcp.types as types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

warnings.simplefilter("ignore", DeprecationWarning)

server = Server("rho-tasks-mcp1")
support = server.experimental.enable_tasks()


def task_tool(
    name: str, description: str, properties: dict, support: str = types.TASK_REQUIRED
) -> types.Tool:
    return types.Tool(
        name=name,
        description=description,
        inputSchema={"type": "object", "properties": properties},
        execution=types.ToolExecution(taskSupport=support),
    )


def text(s: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=s)])


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [
        task_tool("countdown", "Counts down as a task", {"steps": {"type": "integer"}}),
        task_tool("slow_task", "Works for an hour as a task", {"marker": {"type": "string"}}),
        task_tool("greet_task", "Asks for a name inside a task", {}),
        task_tool(
            "maybe_task",
            "Runs as a task when the client asks for one",
            {"marker": {"type": "string"}},
            types.TASK_OPTIONAL,
        ),
    ]


async def cancelled(task: ServerTaskContext) -> bool:
    current = await support.store.get_task(task.task_id)
    return current is None or current.status == "cancelled"


@server.call_tool()
async def call_tool(
    name: str, arguments: dict
) -> types.CallToolResult | types.CreateTaskResult:
    ctx = server.request_context

    if name == "countdown":
        steps = min(int(arguments.get("steps", 3)), 50)

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            for i in range(1, steps + 1):
                await task.update_status(f"step {i} of {steps}")
                await anyio.sleep(0.2)
            return text(f"counted {steps}")

    elif name == "slow_task":
        marker = str(arguments.get("marker", "slow"))

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            common.record(f"started {marker}")
            for _ in range(36000):
                if await cancelled(task):
                    common.record(f"cancelled {marker}")
                    return text("cancelled")
                await anyio.sleep(0.1)
            common.record(f"finished {marker}")
            return text("slow finished")

    elif name == "greet_task":

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            answer = await task.elicit(
                message="Who are you?",
                requestedSchema={
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Your name"}},
                    "required": ["name"],
                },
            )
            if answer.action == "accept" and answer.content:
                return text(f"Hello, {answer.content.get('name')}!")
            return text(f"action={answer.action}")

    elif name == "maybe_task":
        marker = str(arguments.get("marker", "maybe"))
        if not ctx.experimental.is_task:
            common.record(f"{marker} plainly")
            return text(f"{marker} plainly")

        async def work(task: ServerTaskContext) -> types.CallToolResult:
            common.record(f"{marker} as a task")
            return text(f"{marker} as a task")

    else:
        raise ValueError(f"unknown tool {name}")

    return await ctx.experimental.run_task(work)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
