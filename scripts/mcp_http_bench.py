"""MCP over streamable HTTP: SESSIONS concurrent sessions of the official Python client each
make CALLS echo calls against `toolhost serve --http`; prints one JSON line with
`mcp_http_calls_per_s` (all calls / wall time) and `mcp_http_p99_ms` (per-call latency).

usage: mcp_http_bench.py TOOLHOST_BINARY WORKDIR [SESSIONS] [CALLS]
"""
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "mcp"))

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from server import http_server  # noqa: E402


async def one_session(url, calls, latencies):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            await session.call_tool("echo", {"text": "warm"})
            for _ in range(calls):
                started = time.perf_counter()
                await session.call_tool("echo", {"text": "hello", "count": 3})
                latencies.append((time.perf_counter() - started) * 1000)


async def main(binary, workdir, sessions, calls):
    latencies = []
    async with http_server(binary, workdir, []) as (url, _process):
        started = time.perf_counter()
        await asyncio.gather(*(one_session(url, calls, latencies) for _ in range(sessions)))
        wall = time.perf_counter() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    print(json.dumps({
        "step": "http_throughput",
        "mcp_http_calls_per_s": round(len(latencies) / wall, 1),
        "mcp_http_p99_ms": round(p99, 3),
    }), flush=True)


if __name__ == "__main__":
    binary, workdir, *rest = sys.argv[1:]
    sessions = int(rest[0]) if rest else 8
    calls = int(rest[1]) if len(rest) > 1 else 200
    asyncio.run(main(binary, workdir, sessions, calls))
