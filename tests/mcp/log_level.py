"""`logging/setLevel` per HTTP session, for tests/mcp_log_level.rs: two sessions of the
official client against one `toolhost serve --http`, each with its own level, call the tool
`chatty` (one line at each level, `error` last); one JSON object per session.

usage: log_level.py TOOLHOST_BINARY WORKDIR
"""
import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import http_server


async def levels_seen(url, level):
    """The levels of the log lines a session at `level` gets during one call of `chatty`."""
    seen = []
    last = asyncio.Event()

    async def on_log(params):
        seen.append(params.level)
        # `error` is the call's last line: lines arrive in order on the session's stream,
        # so once it is here every line that was sent is.
        if params.level == "error":
            last.set()

    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1], logging_callback=on_log) as session:
            await session.initialize()
            await session.set_logging_level(level)
            await session.call_tool("chatty", {})
            await asyncio.wait_for(last.wait(), 20)
    return seen


async def main(binary, workdir):
    async with http_server(binary, workdir, []) as (url, _process):
        quiet, chatty = await asyncio.gather(levels_seen(url, "error"), levels_seen(url, "info"))
        print(json.dumps({"step": "quiet", "levels": quiet}), flush=True)
        print(json.dumps({"step": "chatty", "levels": chatty}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
