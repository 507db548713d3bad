"""An MCP server written with the official SDK's MCPServer (FastMCP, renamed in mcp 2),
serving over stdio for toolhost's MCP-client tests (tests/mcp_servers.rs).

Tools: echo, add (structured output), slow (notes its cancellation in $FIXTURE_DIR),
fail (isError), picture (an image), grow (adds a tool and says the list changed), flood
(says the list changed over and over for a while, changing nothing), pid, note_add /
note_drop (for include/exclude globs), report (progress and a log line during the call),
wrapped (a plain value wrapped as FastMCP wraps it: `{"result": v}` under an output schema
marked `x-fastmcp-wrap-result`), confirm (asks the user through elicitation and says the
answer). Every tools/list adds a line to
$FIXTURE_DIR/listings; every start adds its pid to $FIXTURE_DIR/pids."""
import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from pydantic import BaseModel

server = MCPServer("fixture")
marks = os.environ.get("FIXTURE_DIR", ".")


def mark(name, text=""):
    with open(os.path.join(marks, name), "w") as f:
        f.write(text)


_list_tools = server.list_tools


async def counted_list_tools():
    with open(os.path.join(marks, "listings"), "a") as f:
        f.write("listed\n")
    tools = await _list_tools()
    for tool in tools:
        if tool.name == "wrapped":
            # The marker FastMCP puts on the object schema it wraps a plain return type in
            # (this SDK wraps the same way, without saying so).
            schema = getattr(tool, "output_schema", None) or getattr(tool, "outputSchema")
            schema["x-fastmcp-wrap-result"] = True
    return tools


# The handler looks the method up on the instance at each request.
server.list_tools = counted_list_tools


@server.tool(description="Say the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Sleep, noting a cancellation in FIXTURE_DIR/cancelled.")
async def slow(seconds: float) -> str:
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark("cancelled", "yes")
        raise
    return "slept"


@server.tool(description="Always fails.")
def fail() -> str:
    raise ToolError("disk full")


@server.tool(description="Reports progress twice and logs a line on the way.")
async def report(ctx: Context) -> str:
    await ctx.report_progress(1, 2, "halfway")
    await ctx.info("report is halfway")
    await ctx.report_progress(2, 2, "done")
    return "reported"


class Choice(BaseModel):
    colour: str


@server.tool(description="Asks the user for a colour and says what came back.")
async def confirm(ctx: Context) -> str:
    answer = await ctx.elicit("Which colour?", schema=Choice)
    if answer.action == "accept":
        return "accept:" + answer.data.colour
    return answer.action


@server.tool(description="The answer, a plain integer.")
def wrapped() -> int:
    return 42


@server.tool(description="A tiny picture.")
def picture() -> Image:
    return Image(data=b"\x89PNG\r\n\x1a\n", format="png")


@server.tool(description="Adds the tool 'extra' and announces the change.")
async def grow(ctx: Context) -> str:
    def extra() -> str:
        return "extra here"

    server.add_tool(extra, name="extra", description="Appeared later.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(description="Says the tool list changed, again and again for `seconds`.")
async def flood(seconds: float, ctx: Context) -> str:
    end = asyncio.get_running_loop().time() + seconds
    sent = 0
    while asyncio.get_running_loop().time() < end:
        await ctx.session.send_tool_list_changed()
        sent += 1
        await asyncio.sleep(0.001)
    return f"sent {sent}"


@server.tool(description="This server's process id.")
def pid() -> str:
    return str(os.getpid())


@server.tool(description="Add a note.")
def note_add(text: str) -> str:
    return "added " + text


@server.tool(description="Drop a note.")
def note_drop(text: str) -> str:
    return "dropped " + text


if __name__ == "__main__":
    print("fixture server starting", file=sys.stderr)
    with open(os.path.join(marks, "pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    if os.path.exists(os.path.join(marks, "refuse")):
        raise SystemExit("refusing to start (FIXTURE_DIR/refuse exists)")
    server.run("stdio")
