"""SESSIONS concurrent MCP sessions (over SERVERS `toolhost serve --http` processes sharing
one store file) each call `bump` (an atomic store.update increment) CALLS times; prints one
JSON object with the failures and the final count.

usage: store_load.py TOOLHOST_BINARY WORKDIR SERVERS SESSIONS CALLS
"""
import asyncio
import json
import sys
from contextlib import AsyncExitStack

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import http_server


async def session_run(url, calls, outcome):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for _ in range(calls):
                result = await session.call_tool("bump", {})
                if result.is_error:
                    outcome["failed"] += 1
                    if len(outcome["examples"]) < 3:
                        outcome["examples"].append(result.content[0].text)


async def final_count(url):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            result = await session.call_tool("get", {"key": "count"})
            return json.loads(result.content[0].text).get("value")


async def scenario(binary, workdir, servers, sessions, calls):
    outcome = {"failed": 0, "examples": []}
    async with AsyncExitStack() as stack:
        urls = []
        for _ in range(servers):
            url, _process = await stack.enter_async_context(http_server(binary, workdir, []))
            urls.append(url)
        await asyncio.gather(
            *(session_run(urls[i % servers], calls, outcome) for i in range(sessions))
        )
        outcome["count"] = await final_count(urls[0])
    print(json.dumps({"step": "store_load", **outcome}), flush=True)


def main():
    binary, workdir, servers, sessions, calls = sys.argv[1:]
    asyncio.run(scenario(binary, workdir, int(servers), int(sessions), int(calls)))


if __name__ == "__main__":
    main()
