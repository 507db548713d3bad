"""The shipped `file://` resource and `code_review` prompt, and prompt messages with
images and embedded resources, against `toolhost serve` over stdio with the official MCP
Python client; prints one JSON object per step for tests/shipped_content.rs.

usage: shipped_content.py TOOLHOST_BINARY WORKDIR SHIPPED_TOOLS_DIR EXTRA_TOOLS_DIR
"""
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from server import serve_args


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def emit(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


async def error_of(call):
    try:
        await call
    except Exception as error:  # the SDK raises its McpError with the JSON-RPC error
        data = getattr(error, "error", None)
        return {"code": getattr(data, "code", None), "message": str(error)}
    return None


async def main(binary, workdir, shipped, extra):
    dirs = ["--tools-dir", shipped, "--tools-dir", extra]
    params = StdioServerParameters(
        command=binary, args=[*dirs, *serve_args(workdir, [])], cwd=workdir
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            emit("resources", result=dump(await session.list_resources()))
            emit("templates", result=dump(await session.list_resource_templates()))
            emit("read_text", result=dump(await session.read_resource(f"file://{workdir}/a.py")))
            emit("read_blob", result=dump(await session.read_resource(f"file://{workdir}/logo.png")))
            emit("read_outside", error=await error_of(session.read_resource("file:///etc/hostname")))
            emit("code_review", result=dump(await session.get_prompt("code_review", {"path": "a.py"})))
            emit("show_logo", result=dump(await session.get_prompt("show_logo", {})))
            emit("bad_block", error=await error_of(session.get_prompt("bad_block", {})))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
