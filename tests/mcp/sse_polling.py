"""SSE polling (SEP-1699) with the official MCP Python client on a 2025-11-25 session: a
call past `[serve] sse_poll_after_ms` has its POST stream ended by the server, and the
client resumes on its own (GET + Last-Event-ID) until the answer; prints one JSON object
per step.

usage: sse_polling.py TOOLHOST_BINARY WORKDIR
"""
import asyncio
import json
import sys

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import http_server


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


async def scenario(binary, workdir):
    resumptions = []

    async def record(request):
        if request.method == "GET" and "last-event-id" in request.headers:
            resumptions.append(request.headers["last-event-id"])

    async with http_server(binary, workdir, []) as (url, _process):
        client = httpx.AsyncClient(timeout=30, event_hooks={"request": [record]})
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                progress = []

                async def on_progress(done, total, message):
                    progress.append([done, total])

                result = await session.call_tool(
                    "slow", {"ms": 1000}, progress_callback=on_progress)
                emit("call", text=result.content[0].text, is_error=bool(result.is_error),
                     progress=progress, resumptions=len(resumptions))


def main():
    binary, workdir = sys.argv[1:3]
    asyncio.run(scenario(binary, workdir))


if __name__ == "__main__":
    main()
