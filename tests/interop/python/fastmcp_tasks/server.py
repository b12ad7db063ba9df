"""A tasks server on fastmcp with `fastmcp-tasks` (4.1.8: the 2026-07-28
tasks extension, SEP-2663, on fastmcp's own durable task engine, in
memory), over stdio, for rho's task tests (tests/tests/tasks.rs,
cli/tests/tasks.rs). fastmcp-tasks answers `tasks/get`, `tasks/update`
and `tasks/cancel`; only the tools' work is written here.

    server.py

Tools, each of which runs only as a task (`TaskConfig(mode="required")`):

- `countdown {steps=3}`: reports `step <i> of <steps>` every 200 ms,
  then returns `counted <steps>`;
- `slow_task {marker}`: works for up to an hour; appends `started
  <marker>`, then `cancelled <marker>` once the task is cancelled (or
  `finished <marker>`), to the file named by INTEROP_RECORD;
- `greet_task`: asks for a name (a form), then returns `Hello, <name>!`
  or `action=<action>`.
"""

import asyncio
from datetime import timedelta
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import common  # noqa: E402

import mcp_types

from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

warnings.simplefilter("ignore", DeprecationWarning)

mcp = FastMCP("rho-tasks-fastmcp")
mcp.add_extension(TasksExtension())
# Polled every 500 ms (the default is 5 s), so a test sees a running
# task's status messages within a short countdown.
REQUIRED = TaskConfig(mode="required", poll_interval=timedelta(milliseconds=500))


@mcp.tool(task=REQUIRED)
async def countdown(ctx: Context, steps: int = 3) -> str:
    """Counts down as a task, reporting each step."""
    steps = min(steps, 50)
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await asyncio.sleep(0.2)
    return f"counted {steps}"


@mcp.tool(task=REQUIRED)
async def slow_task(marker: str = "slow") -> str:
    """Works for an hour as a task."""
    common.record(f"started {marker}")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        common.record(f"cancelled {marker}")
        raise
    common.record(f"finished {marker}")
    return "slow finished"


@mcp.tool(task=REQUIRED)
async def greet_task(ctx: Context) -> str:
    """Asks for a name inside a task."""
    # fastmcp-tasks asks inside a task with the multi round-trip guard
    # pattern: the first run returns the question, the run after the
    # client's answer reads it.
    answers = ctx.input_responses
    if not answers or "name" not in answers:
        return mcp_types.InputRequiredResult(
            result_type="input_required",
            input_requests={
                "name": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Who are you?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "Your name"}
                            },
                            "required": ["name"],
                        },
                    },
                }
            },
        )
    answer = answers["name"]
    if answer.action == "accept" and answer.content:
        return f"Hello, {answer.content.get('name')}!"
    return f"action={answer.action}"


if __name__ == "__main__":
    mcp.run(show_banner=False)
