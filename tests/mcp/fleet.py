"""The official MCP Python client on 2026-07-28 against a fleet of `toolhost serve --http`
replicas behind a round-robin proxy (tests/fleet.rs). Keep-alive is off, so every request
is a new connection and consecutive requests reach different replicas: the two rounds of
one multi-round call (`greet` asks a name) are served by two replicas, and the `bump`
increments are spread over all of them. Prints one JSON object per step.

usage: fleet.py URL BUMPS
"""
import asyncio
import json
import sys

import httpx2 as httpx
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


async def on_elicit(_context, params):
    emit("asked", message=params.message)
    return types.ElicitResult(action="accept", content={"name": "Ada"})


def text_of(result):
    return "".join(block.text for block in result.content if block.type == "text")


async def main(url, bumps):
    # No kept connections: the proxy balances every request.
    http = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0), timeout=30)
    transport = streamable_http_client(url, http_client=http)
    async with Client(transport, mode="2026-07-28", elicitation_callback=on_elicit) as client:
        greeted = await client.call_tool("greet", {})
        emit("greet", text=text_of(greeted), error=bool(greeted.is_error))
        counts = []
        for _ in range(bumps):
            bumped = await client.call_tool("bump", {})
            counts.append(int(text_of(bumped)))
        emit("bumps", counts=counts)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
