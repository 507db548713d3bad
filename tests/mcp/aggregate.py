"""Drives `toolhost serve` (configured with MCP servers of its own) with the official MCP
Python client, for tests/mcp_servers.rs and tests/mcp_fastmcp.rs. Prints one JSON object per step.

usage: aggregate.py TOOLHOST_BINARY WORKDIR SCENARIO
scenarios:
  list_changed  call mcp__py__grow; our client gets list_changed; mcp__py__extra is listed
  restart       kill the fixture server; its tools go unavailable, then come back
  timeout       a call past the server's timeout_ms answers `timeout`
  notify        mcp__py__report's progress and log line reach our client during the call
  wrapped[=TOOL] mcp__py__wrapped's (or TOOL's) FastMCP-wrapped value comes through plain
  elicit        mcp__py__confirm's question reaches our client (which answers "teal", then
                declines); TRANSPORT stdio (default) or http
"""
import asyncio
import json
import os
import signal
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from server import http_server

from client import emit, is_error


def text_of(result):
    return "".join(getattr(block, "text", "") for block in result.content)


async def main(binary, workdir, scenario, transport="stdio"):
    if transport == "http":
        async with http_server(binary, workdir, []) as (url, _process):
            async with streamable_http_client(url) as (read, write, *_):
                await run(read, write, scenario)
        return
    params = StdioServerParameters(
        command=binary,
        args=["--no-library", "--cache-dir", workdir + "/cache", "serve"],
        cwd=workdir,
    )
    async with stdio_client(params) as (read, write):
        await run(read, write, scenario)


async def run(read, write, scenario):
    # `wrapped=TOOL` names the wrapped tool (default the fixture server's).
    scenario, _, wrapped_tool = scenario.partition("=")
    wrapped_tool = wrapped_tool or "mcp__py__wrapped"
    changed = asyncio.Event()
    logged = []
    asked = []

    async def on_elicit(_context, params):
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        asked.append({"message": params.message, "properties": sorted(schema["properties"])})
        if len(asked) == 1:
            return types.ElicitResult(action="accept", content={"colour": "teal"})
        return types.ElicitResult(action="decline")

    async def on_log(params):
        logged.append({"level": params.level, "logger": params.logger, "data": params.data})

    async def on_message(message):
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with ClientSession(read, write, message_handler=on_message,
                             logging_callback=on_log,
                             elicitation_callback=on_elicit) as session:
        await session.initialize()
        listed = await session.list_tools()
        emit("list", tools=sorted(t.name for t in listed.tools))
        if scenario == "list_changed":
            result = await session.call_tool("mcp__py__grow", {})
            emit("grow", text=text_of(result), error=bool(is_error(result)))
            await asyncio.wait_for(changed.wait(), 20)
            listed = await session.list_tools()
            emit("relisted", tools=sorted(t.name for t in listed.tools))
            result = await session.call_tool("mcp__py__extra", {})
            emit("extra", text=text_of(result), error=bool(is_error(result)))
        elif scenario == "restart":
            result = await session.call_tool("mcp__py__pid", {})
            first = int(json.loads(text_of(result))["result"])
            emit("pid", pid=first)
            changed.clear()
            os.kill(first, signal.SIGKILL)
            # Down: the tools stay listed only while available, so the list changes.
            await asyncio.wait_for(changed.wait(), 20)
            down = await session.call_tool("mcp__py__echo", {"text": "x"})
            emit("down", text=text_of(down), error=bool(is_error(down)))
            # Back (back-off 1 s): the list changes again and calls work.
            for _ in range(200):
                result = await session.call_tool("mcp__py__pid", {})
                if not is_error(result):
                    break
                await asyncio.sleep(0.1)
            emit("back", text=text_of(result), error=bool(is_error(result)))
        elif scenario == "timeout":
            result = await session.call_tool("mcp__py__slow", {"seconds": 60})
            emit("slow", text=text_of(result), error=bool(is_error(result)))
            result = await session.call_tool("mcp__py__echo", {"text": "after"})
            emit("after", text=text_of(result), error=bool(is_error(result)))
        elif scenario == "notify":
            await session.set_logging_level("info")
            progress = []

            async def on_progress(done, total, message):
                progress.append({"done": done, "total": total, "message": message})

            result = await session.call_tool("mcp__py__report", {},
                                             progress_callback=on_progress)
            # Log lines may trail the result on the session's stream: a ping after it
            # comes back only once everything sent before it has been read.
            await session.send_ping()
            emit("report", text=text_of(result), error=bool(is_error(result)),
                 progress=progress, logged=logged)
        elif scenario == "wrapped":
            listed = {t.name: t for t in (await session.list_tools()).tools}
            schema = getattr(listed[wrapped_tool], "output_schema", None)
            result = await session.call_tool(wrapped_tool, {})
            emit("wrapped", text=text_of(result), error=bool(is_error(result)),
                 structured=getattr(result, "structured_content", None),
                 output_schema=schema)
        elif scenario == "elicit":
            accepted = await session.call_tool("mcp__py__confirm", {})
            declined = await session.call_tool("mcp__py__confirm", {})
            emit("elicit", accepted=text_of(accepted), declined=text_of(declined),
                 error=bool(is_error(accepted) or is_error(declined)), asked=asked)
        else:
            raise SystemExit("unknown scenario " + scenario)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
