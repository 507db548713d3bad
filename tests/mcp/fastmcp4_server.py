"""A real FastMCP 4 server (the standalone `fastmcp` package, pinned in
tests/common/fastmcp.rs) over stdio, for tests/mcp_fastmcp.rs.

Tools: answer (an int), primes (a list), greet (a string), point (a dict), fail (raises a
ToolError), and padded (hostile: declares FastMCP's wrap marker but answers
`{"result": 7, "note": "kept"}`, an object with a key besides `result`).

usage: fastmcp4_server.py              serve over stdio
       fastmcp4_server.py expect NAME  call NAME with FastMCP's own client (in memory) and
                                       print {"data": <its .data>, "error": <text or null>}
"""
import asyncio
import json
import sys

from fastmcp import Client, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import ToolResult
from mcp.types import TextContent

server = FastMCP("f4")


@server.tool
def answer() -> int:
    """The answer, a plain integer."""
    return 42


@server.tool
def primes() -> list[int]:
    """The first primes, a plain list."""
    return [2, 3, 5]


@server.tool
def greet(name: str) -> str:
    """A greeting, a plain string."""
    return f"hello {name}"


@server.tool
def point() -> dict:
    """A point, an object FastMCP does not wrap."""
    return {"x": 1, "y": [2, 3]}


@server.tool
def fail() -> int:
    """Always fails."""
    raise ToolError("disk full")


# The marker says "a plain value wrapped as {result}", but the object has more in it.
@server.tool(
    output_schema={
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
        "x-fastmcp-wrap-result": True,
    }
)
def padded() -> ToolResult:
    """Declares a wrapped integer, answers an object with an extra key."""
    return ToolResult(
        content=[TextContent(type="text", text='{"result":7,"note":"kept"}')],
        structured_content={"result": 7, "note": "kept"},
    )


async def expect(name):
    async with Client(server) as client:
        result = await client.call_tool(name, {"name": "toolhost"} if name == "greet" else {},
                                        raise_on_error=False)
        error = result.content[0].text if result.is_error else None
        print(json.dumps({"data": result.data, "error": error}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["expect"]:
        asyncio.run(expect(sys.argv[2]))
    else:
        server.run(show_banner=False, log_level="CRITICAL")
