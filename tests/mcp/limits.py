"""Calls `echo` over stdio with the official MCP Python client until a rate limit refuses
it, for tests/limits.rs: one JSON object per call on stdout.

usage: limits.py TOOLHOST_BINARY WORKDIR CALLS
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
try:  # mcp 2.x
    from mcp.shared.exceptions import MCPError as McpError
except ImportError:  # mcp 1.x
    from mcp.shared.exceptions import McpError


async def main(binary, workdir, calls):
    params = StdioServerParameters(
        command=binary,
        args=["--no-library", "--cache-dir", workdir + "/cache", "serve"],
        cwd=workdir,
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for i in range(calls):
                try:
                    result = await session.call_tool("echo", {})
                    text = result.content[0].text if result.content else None
                    print(json.dumps({"step": f"call{i}", "text": text}), flush=True)
                except McpError as e:
                    error = e.error
                    print(json.dumps({
                        "step": f"call{i}",
                        "code": error.code,
                        "message": error.message,
                        "data": error.data,
                    }), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
