"""A hostile MCP server over stdio, JSON-RPC written by hand (no SDK: the point is to send
what an SDK would not), for tests/mcp_servers.rs.

The listing it sends is chosen by the file $FIXTURE_DIR/listing (read at every
tools/list, so a test can switch it while the server runs), default "normal":
  normal    the tools echo, pid, grow, deep_result
  endless   500 tools a page, a new cursor forever
  huge      5,000 tools in one page
  bytes     100 tools with 100 KiB descriptions each (10 MiB), one page
  big_line  one page over 17 MiB (a single line)
  deep      the normal tools plus tools nested too deeply in every place, and
            tools whose inputSchema is not an object
  marked    the normal tools plus marked_bare, whose outputSchema carries FastMCP's
            x-fastmcp-wrap-result marker but whose answer's structuredContent is [5]
Every tools/list request adds a line to $FIXTURE_DIR/pages.
Tools: echo (text back), pid, grow (says the tool list changed), deep_result (answers
with structuredContent nested 300 levels deep), marked_bare (see "marked").
"""
import json
import os
import sys

sys.setrecursionlimit(10000)

marks = os.environ.get("FIXTURE_DIR", ".")


def nested(levels):
    value = {"type": "string"}
    for _ in range(levels):
        value = {"type": "array", "items": value}
    return value


def deep_list(levels):
    return json.loads("[" * levels + "]" * levels)


def tool(name, description="A tool.", schema=None, **extra):
    out = {"name": name, "inputSchema": schema or {"type": "object"}}
    if description is not None:
        out["description"] = description
    out.update(extra)
    return out


NORMAL = [
    tool("echo", "Say the text back.",
         {"type": "object", "properties": {"text": {"type": "string"}}}),
    tool("pid", "This server's process id."),
    tool("grow", "Says the tool list changed."),
    tool("deep_result", "Answers with a result nested too deeply."),
]

DEEP = [
    tool("deep_input", schema={"type": "object", "properties": {"x": nested(300)}}),
    tool("deep_output", outputSchema={"type": "object", "properties": {"x": nested(300)}}),
    tool("deep_annotations", annotations={"title": "t", "x": deep_list(300)}),
    tool("deep_meta", _meta={"x": deep_list(300)}),
    tool("deep_nodesc", description=None,
         schema={"type": "object", "properties": {"x": nested(300)}}),
    tool("moderately_deep", schema={"type": "object", "properties": {"x": nested(80)}}),
    tool("schema_list", schema=[1, 2]),
    tool("schema_string", schema="object"),
    tool("schema_of_a_string", schema={"type": "string"}),
    tool("schema_null", schema=None, inputSchema=None),
]

MARKED = [
    tool("marked_bare", "Promises a wrapped integer, answers a bare list.",
         outputSchema={"type": "object", "properties": {"result": {"type": "integer"}},
                       "required": ["result"], "x-fastmcp-wrap-result": True}),
]


def listing(cursor):
    try:
        with open(os.path.join(marks, "listing")) as f:
            mode = f.read().strip() or "normal"
    except FileNotFoundError:
        mode = "normal"
    with open(os.path.join(marks, "pages"), "a") as f:
        f.write(f"{mode} {cursor}\n")
    if mode == "endless":
        page = int(cursor or 0)
        return {"tools": [tool(f"t{page}_{i}") for i in range(500)],
                "nextCursor": str(page + 1)}
    if mode == "huge":
        return {"tools": [tool(f"t{i}") for i in range(5000)]}
    if mode == "bytes":
        return {"tools": [tool(f"t{i}", "d" * 102400) for i in range(100)]}
    if mode == "big_line":
        return {"tools": [tool("big", "b" * (17 * 1024 * 1024))]}
    if mode == "deep":
        return {"tools": NORMAL + DEEP}
    if mode == "marked":
        return {"tools": NORMAL + MARKED}
    return {"tools": NORMAL}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call(name, arguments):
    if name == "echo":
        return text(str(arguments.get("text", "")))
    if name == "pid":
        return text(str(os.getpid()))
    if name == "grow":
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return text("grown")
    if name == "deep_result":
        return {"content": [{"type": "text", "text": "deep"}],
                "structuredContent": {"x": deep_list(300)}}
    if name == "marked_bare":
        return {"content": [{"type": "text", "text": "[5]"}], "structuredContent": [5]}
    return {"content": [{"type": "text", "text": f"no tool {name}"}], "isError": True}


def answer(message):
    """The answer to one message (None for notifications and answers)."""
    method = message.get("method")
    if "id" not in message or method is None:
        return None
    params = message.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    elif method == "tools/list":
        result = listing(params.get("cursor"))
    elif method == "tools/call":
        result = call(params.get("name"), params.get("arguments") or {})
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": message["id"],
                "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main():
    with open(os.path.join(marks, "pids"), "a") as f:
        f.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            send(reply)


if __name__ == "__main__":
    main()
