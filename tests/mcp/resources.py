"""Resources, prompts and completion against `toolhost serve`, over stdio or streamable
HTTP, with the official MCP Python client; prints one JSON object per step for
tests/mcp_resources.rs.

usage: resources.py TRANSPORT(stdio|http|capabilities-only) TOOLHOST_BINARY WORKDIR

capabilities-only: over stdio, print the server's capabilities and stop.
"""
import asyncio
import json
import sys
from contextlib import asynccontextmanager

import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from server import http_server, serve_args


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def emit(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


@asynccontextmanager
async def session_for(transport, binary, workdir):
    if transport in ("stdio", "capabilities-only"):
        params = StdioServerParameters(command=binary, args=serve_args(workdir, []), cwd=workdir)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                yield session
    else:
        from mcp.client.streamable_http import streamable_http_client

        async with http_server(binary, workdir, []) as (url, _process):
            async with streamable_http_client(url) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    yield session


async def error_of(call):
    try:
        await call
    except Exception as error:  # the SDK raises its McpError with the JSON-RPC error
        data = getattr(error, "error", None)
        return {"code": getattr(data, "code", None), "message": str(error)}
    return None


async def main(transport, binary, workdir):
    async with session_for(transport, binary, workdir) as session:
        init = await session.initialize()
        emit("capabilities", capabilities=dump(init.capabilities))
        if transport == "capabilities-only":
            return
        emit("resources", result=dump(await session.list_resources()))
        emit("templates", result=dump(await session.list_resource_templates()))
        emit("read_text", result=dump(await session.read_resource("notes://a%20b")))
        emit("read_blob", result=dump(await session.read_resource("img://logo")))
        emit("read_missing", error=await error_of(session.read_resource("nope://x")))
        emit("prompts", result=dump(await session.list_prompts()))
        emit("prompt", result=dump(await session.get_prompt("review", {"path": "a.rs"})))
        emit("prompt_missing_arg", error=await error_of(session.get_prompt("review", {})))
        completed = await session.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="notes://{id}"),
            {"name": "id", "value": "ab"},
        )
        emit("complete_resource", result=dump(completed))
        completed = await session.complete(
            types.PromptReference(type="ref/prompt", name="review"),
            {"name": "path", "value": "src/"},
        )
        emit("complete_prompt", result=dump(completed))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
