"""Starts a stdio MCP server from a command line (as a client's configuration would) in a
given directory, lists its tools and makes one call; prints one JSON object per step.

usage: installed.py WORKDIR ENV_JSON TOOL ARGS_JSON COMMAND [ARGS...]
ENV_JSON: the server's whole environment (the client passes only what it is given).
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


async def main():
    workdir, env, tool, arguments, command, *args = sys.argv[1:]
    params = StdioServerParameters(command=command, args=args, cwd=workdir, env=json.loads(env))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            emit("list", tools=sorted(t.name for t in listed.tools))
            result = await session.call_tool(tool, json.loads(arguments))
            is_error = getattr(result, "is_error", getattr(result, "isError", None))
            emit("call", is_error=is_error, text=[c.text for c in result.content if hasattr(c, "text")])


asyncio.run(main())
