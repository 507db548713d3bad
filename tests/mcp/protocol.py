"""The MCP protocol features of `toolhost serve`, over stdio or streamable HTTP, with the
official MCP Python client; prints one JSON object per step for tests/mcp_protocol.rs.

usage: protocol.py TRANSPORT(stdio|http) TOOLHOST_BINARY WORKDIR [SERVE ARGS...]
"""
import asyncio
import json
import os
import sys
import time
from contextlib import asynccontextmanager

import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from server import http_server, serve_args


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


@asynccontextmanager
async def connect(transport, binary, workdir, extra, **session_args):
    """A ClientSession to a server started for this run."""
    if transport == "stdio":
        params = StdioServerParameters(command=binary, args=serve_args(workdir, extra), cwd=workdir)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **session_args) as session:
                yield session
    else:
        from mcp.client.streamable_http import streamable_http_client

        async with http_server(binary, workdir, extra) as (url, _process):
            async with streamable_http_client(url) as streams:
                async with ClientSession(streams[0], streams[1], **session_args) as session:
                    yield session


async def scenario(transport, binary, workdir, extra):
    logs = []
    changed = asyncio.Event()
    inside = os.path.join(workdir, "inside")

    logged = asyncio.Event()

    async def on_log(params):
        logs.append(dump(params))
        logged.set()

    async def until_warning():
        # Over HTTP log lines travel on the session's GET stream, not with the result; the
        # server sends a call's lines in order, so once its warning is here all are.
        while not any(line["level"] == "warning" for line in logs):
            logged.clear()
            await asyncio.wait_for(logged.wait(), timeout=10)

    async def on_roots(_context):
        return types.ListRootsResult(roots=[types.Root(uri="file://" + inside, name="inside")])

    async def on_message(message):
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with connect(
        transport, binary, workdir, extra,
        logging_callback=on_log, list_roots_callback=on_roots, message_handler=on_message,
    ) as session:
        init = await session.initialize()
        emit("initialize", capabilities=dump(init.capabilities))
        listed = await session.list_tools()
        emit("list", tools=[dump(t) for t in listed.tools])

        shape = await session.call_tool("shape", {"n": 3})
        emit("structured", result=dump(shape))
        broken = await session.call_tool("bad_shape", {})
        emit("contract", result=dump(broken))
        media = await session.call_tool("media", {})
        emit("media", result=dump(media))

        reports = []

        async def on_progress(progress, total, message):
            reports.append({"progress": progress, "total": total, "message": message})

        stepped = await session.call_tool("steps", {"n": 5}, progress_callback=on_progress)
        emit("progress", result=dump(stepped), reports=reports)

        quiet = await session.call_tool("chatty", {})
        await until_warning()
        emit("logging_default", result=dump(quiet), logs=list(logs))
        logs.clear()
        await session.set_logging_level("info")
        chatty = await session.call_tool("chatty", {})
        await until_warning()
        emit("logging_info", result=dump(chatty), logs=list(logs))

        whoami = await session.call_tool("whoami", {})
        emit("call_id", result=dump(whoami))

        inside_read = await session.call_tool("peek", {"path": "hello.txt"})
        outside_read = await session.call_tool("peek", {"path": os.path.join(workdir, "outside.txt")})
        emit("roots", inside=dump(inside_read), outside=dump(outside_read))

        if "--watch" in extra:
            with open(os.path.join(workdir, "tools-lua", "added.lua"), "w") as f:
                f.write(
                    'registry.register{ name = "added", toolset = "live",\n'
                    '  schema = { description = "hot", parameters = { type = "object" } },\n'
                    '  handler = function() return "new tool" end }\n'
                )
            try:
                await asyncio.wait_for(changed.wait(), timeout=20)
                emit("list_changed", received=True)
            except asyncio.TimeoutError:
                emit("list_changed", received=False)
            relisted = await session.list_tools()
            emit("relist", names=sorted(t.name for t in relisted.tools))


def main():
    transport, binary, workdir, *extra = sys.argv[1:]
    asyncio.run(scenario(transport, binary, workdir, extra))


if __name__ == "__main__":
    main()
