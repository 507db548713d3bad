"""Drives `toolhost serve` with the official MCP Python client and prints one JSON object
per step on stdout, for tests/mcp.rs to check.

usage: client.py TOOLHOST_BINARY WORKDIR SCENARIO [ARGS...]
"""
import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


def attr(obj, snake, camel):
    """Field access across mcp versions (1.x camelCase attributes, 2.x snake_case)."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def dump(model):
    """The wire (camelCase) form of a model."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def content_of(result):
    return [dump(block) for block in result.content]


def is_error(result):
    return attr(result, "is_error", "isError")


async def session_scenario(binary, workdir, extra):
    params = StdioServerParameters(
        command=binary,
        args=["--no-library", "--cache-dir", workdir + "/cache", "serve", *extra],
        cwd=workdir,
    )
    changed = asyncio.Event()

    async def on_message(message):
        # mcp 1.x wraps notifications in a RootModel (.root); 2.x hands them over directly.
        inner = getattr(message, "root", message)
        if getattr(inner, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            emit(
                "initialize",
                name=attr(init, "server_info", "serverInfo").name,
                tools_capability=dump(init.capabilities.tools) if init.capabilities.tools else None,
            )
            listed = await session.list_tools()
            emit("list", tools=[dump(t) for t in listed.tools])
            ok = await session.call_tool("echo", {"text": "hi", "count": "3"})
            emit(
                "call",
                is_error=is_error(ok),
                content=content_of(ok),
                structured=attr(ok, "structured_content", "structuredContent"),
            )
            bad = await session.call_tool("needs_n", {"n": "not a number"})
            emit("invalid", is_error=is_error(bad), content=content_of(bad))
            unknown = await session.call_tool("no_such_tool", {})
            emit("unknown", is_error=is_error(unknown), content=content_of(unknown))
            started = time.monotonic()
            spin = await session.call_tool("spin", {})
            emit("timeout", is_error=is_error(spin), content=content_of(spin), seconds=time.monotonic() - started)
            after = await session.call_tool("echo", {"text": "still here"})
            emit("after_timeout", is_error=is_error(after), content=content_of(after))
            picture = await session.call_tool("picture", {})
            emit("multimodal", is_error=is_error(picture), content=content_of(picture))
            started = time.monotonic()
            both = await asyncio.gather(
                session.call_tool("nap", {}), session.call_tool("nap", {})
            )
            emit("concurrent", seconds=time.monotonic() - started, errors=[is_error(r) for r in both])
            # Cancellation: abandoning a call sends notifications/cancelled; the server must
            # stop the handler (its counter stops moving).
            try:
                await asyncio.wait_for(session.call_tool("ticker", {}), timeout=0.5)
                emit("cancel", finished=True)
            except asyncio.TimeoutError:
                await asyncio.sleep(0.4)
                first = await session.call_tool("ticks", {})
                await asyncio.sleep(0.4)
                second = await session.call_tool("ticks", {})
                emit("cancel", finished=False, first=content_of(first), second=content_of(second))
            if "--watch" in extra:
                with open(workdir + "/tools-lua/added.lua", "w") as f:
                    f.write(
                        'registry.register{ name = "added", toolset = "live",\n'
                        '  schema = { description = "hot", parameters = { type = "object" } },\n'
                        '  handler = function() return "new tool" end }\n'
                    )
                waited = time.monotonic()
                try:
                    await asyncio.wait_for(changed.wait(), timeout=20)
                    emit("list_changed", received=True, seconds=time.monotonic() - waited)
                except asyncio.TimeoutError:
                    emit("list_changed", received=False)
                relisted = await session.list_tools()
                emit("relist", names=sorted(t.name for t in relisted.tools))
                added = await session.call_tool("added", {})
                emit("added_call", is_error=is_error(added), content=content_of(added))


async def echo_throughput(binary, workdir, extra):
    params = StdioServerParameters(
        command=binary, args=["--no-library", "--cache-dir", workdir + "/cache", "serve", *extra], cwd=workdir
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            count = 300
            started = time.monotonic()
            for _ in range(count):
                await session.call_tool("echo", {"text": "hello", "count": 3})
            emit("throughput", calls_per_s=count / (time.monotonic() - started))


def main():
    binary, workdir, scenario, *extra = sys.argv[1:]
    runner = {"session": session_scenario, "throughput": echo_throughput}[scenario]
    asyncio.run(runner(binary, workdir, extra))


if __name__ == "__main__":
    main()
