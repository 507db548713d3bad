"""Client roots against `toolhost serve`, over stdio or streamable HTTP, with the official
MCP Python client: each scenario is one session declaring its roots, then calling tools;
prints one JSON object per scenario for tests/mcp_roots.rs.

usage: roots.py TRANSPORT(stdio|http) TOOLHOST_BINARY WORKDIR SCENARIOS_JSON [SERVE ARGS...]

SCENARIOS_JSON: [{"name": ..., "roots": [uri, ...], "calls": [[tool, {args}], ...]}, ...]
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


@asynccontextmanager
async def sessions(transport, binary, workdir, extra):
    """Yields a function opening one session with given roots (a fresh server per session
    on stdio, one server for every session over HTTP)."""
    if transport == "stdio":

        @asynccontextmanager
        async def open_session(**session_args):
            params = StdioServerParameters(
                command=binary, args=serve_args(workdir, extra), cwd=workdir
            )
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write, **session_args) as session:
                    yield session

        yield open_session
    else:
        from mcp.client.streamable_http import streamable_http_client

        async with http_server(binary, workdir, extra) as (url, _process):

            @asynccontextmanager
            async def open_session(**session_args):
                async with streamable_http_client(url) as streams:
                    async with ClientSession(streams[0], streams[1], **session_args) as session:
                        yield session

            yield open_session


async def scenario(open_session, spec):
    async def on_roots(_context):
        # Unvalidated: a hostile client sends URIs the SDK's own types would reject.
        roots = [types.Root.model_construct(uri=uri, name=f"root{i}") for i, uri in enumerate(spec["roots"])]
        return types.ListRootsResult.model_construct(roots=roots)

    results = []
    async with open_session(list_roots_callback=on_roots) as session:
        await session.initialize()
        for tool, args in spec["calls"]:
            result = dump(await session.call_tool(tool, args))
            text = "".join(block.get("text", "") for block in result.get("content", []))
            results.append({"ok": not result.get("isError", False), "text": text})
    return results


async def main():
    transport, binary, workdir, scenarios, *extra = sys.argv[1:]
    async with sessions(transport, binary, workdir, extra) as open_session:
        for spec in json.loads(scenarios):
            results = await scenario(open_session, spec)
            print(json.dumps({"step": spec["name"], "results": results}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
