"""The Tasks extension (io.modelcontextprotocol/tasks) against `toolhost serve` over stdio,
with the official MCP Python client on 2026-07-28: the client's extension claims
`resultType: "task"` results and polls `tasks/get` to the tool's result (as a 2026 client
that hides tasks from its caller does), and a new server process reads it back; a second client's extension cancels each task it
gets at once. Prints one JSON object per step for tests/mcp_tasks.rs.

usage: tasks.py TOOLHOST_BINARY WORKDIR poll|cancel
"""
import asyncio
import json
import os
import sys
from typing import Any, Literal

import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.client.extension import ClientExtension, ResultClaim
from pydantic import Field

from server import serve_args

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class TaskCreated(types.Result):
    """A `tools/call` answered with a task."""

    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskState(types.Result):
    """A `tasks/get` answer."""

    result_type: str | None = Field(alias="resultType", default=None)
    task_id: str = Field(alias="taskId")
    status: str
    status_message: str | None = Field(alias="statusMessage", default=None)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


async def poll(session, task_id):
    """`tasks/get` until the task ends (a 20 s liveness bound)."""
    for _ in range(2000):
        got = await session.send_request(GetTask(params=TaskIdParams(taskId=task_id)), TaskState)
        if got.status in TERMINAL:
            return got
        await asyncio.sleep(0.01)
    raise RuntimeError(f"task {task_id} did not end")


class Tasks(ClientExtension):
    """Resolves task results by polling, recording what it saw."""

    identifier = TASKS

    def __init__(self):
        self.seen = []

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.resolve)]

    async def resolve(self, created, ctx):
        self.seen.append({"task_id": created.task_id, "status": created.status})
        done = await poll(ctx.session, created.task_id)
        self.seen.append({"task_id": done.task_id, "status": done.status})
        return types.CallToolResult.model_validate(done.result)


class CancellingTasks(ClientExtension):
    """Cancels every task it is given at once, recording the acknowledgement and the end."""

    identifier = TASKS

    def __init__(self):
        self.seen = {}

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskCreated, resolve=self.resolve)]

    async def resolve(self, created, ctx):
        ack = await ctx.session.send_request(
            CancelTask(params=TaskIdParams(taskId=created.task_id)), types.EmptyResult
        )
        done = await poll(ctx.session, created.task_id)
        self.seen = {"created": created.status, "ack": dump(ack), "status": done.status}
        return types.CallToolResult(content=[types.TextContent(type="text", text="cancelled")])


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main():
    binary, workdir, what = sys.argv[1], sys.argv[2], sys.argv[3]
    params = StdioServerParameters(command=binary, args=serve_args(workdir, []), cwd=workdir)
    if what == "poll":
        await poll_and_restart(params)
    else:
        await cancel(params, workdir)


async def poll_and_restart(params):
    tasks = Tasks()
    async with Client(params, mode="2026-07-28", extensions=[tasks]) as client:
        result = await client.call_tool("sum", {"a": 2, "b": 3})
        print(json.dumps({"step": "polled", "result": dump(result), "seen": tasks.seen}))

    # A new `serve` process (stdio starts one per client) reads the finished task.
    async with Client(params, mode="2026-07-28", extensions=[Tasks()]) as client:
        task_id = tasks.seen[0]["task_id"]
        got = await client.session.send_request(GetTask(params=TaskIdParams(taskId=task_id)), TaskState)
        print(json.dumps({"step": "restarted", "task": dump(got)}))


async def cancel(params, workdir):
    cancelling = CancellingTasks()
    async with Client(params, mode="2026-07-28", extensions=[cancelling]) as client:
        await client.call_tool("late_marker", {})
        # A plain call that sleeps twice as long as the cancelled handler would have before
        # writing its marker: once it answers, the marker would be there had it run on.
        rested = await client.call_tool("longer_nap", {})
        print(
            json.dumps(
                {
                    "step": "cancelled",
                    **cancelling.seen,
                    "rested": dump(rested),
                    "marker": os.path.exists(os.path.join(workdir, "marker.txt")),
                }
            )
        )


asyncio.run(main())
