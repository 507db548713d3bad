"""The reference for `mcp_calls_per_s_fastmcp` and `mcp_http_calls_per_s_fastmcp`: a FastMCP
server (official `mcp` package, `mcp<2`, where `mcp.server.fastmcp` exists) serving the
workload's tools over stdio — or streamable HTTP at http://127.0.0.1:PORT/mcp, with sessions
or stateless (then JSON answers, as `toolhost serve --http --stateless`) — every handler
echo-like (returns the JSON of its arguments), quiet logging, no structured output.

usage: fastmcp_echo_server.py WORKLOAD_JSON [http PORT [stateless]]
"""
import json
import logging
import sys

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.tools.base import Tool
from mcp.server.fastmcp.utilities.func_metadata import func_metadata

logging.disable(logging.CRITICAL)
server = FastMCP("fastmcp-echo", log_level="CRITICAL")


def echo(text: str, count: int = 1, loud: bool = False, tags: list[str] | None = None,
         mode: str = "plain") -> str:
    args = {"text": text, "count": count, "loud": loud}
    if tags is not None:
        args["tags"] = tags
    if mode != "plain":
        args["mode"] = mode
    return json.dumps(args)


def generic(**kwargs) -> str:
    return json.dumps(kwargs)


def main():
    workload = json.load(open(sys.argv[1]))
    server.add_tool(echo, name="echo", description=workload["tools"][0]["schema"]["description"],
                    structured_output=False)
    for tool in workload["tools"]:
        schema = tool["schema"]
        if schema["name"] == "echo":
            continue
        # The workload's own JSON Schema is what the model sees; arguments arrive as a dict.
        server._tool_manager._tools[schema["name"]] = Tool(
            fn=generic, name=schema["name"], title=None, description=schema["description"],
            parameters=schema["parameters"], fn_metadata=func_metadata(generic),
            is_async=False, context_kwarg=None, annotations=None,
        )
    if len(sys.argv) > 3 and sys.argv[2] == "http":
        server.settings.host = "127.0.0.1"
        server.settings.port = int(sys.argv[3])
        if sys.argv[4:] == ["stateless"]:
            server.settings.stateless_http = True
            server.settings.json_response = True
        server.run("streamable-http")
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
