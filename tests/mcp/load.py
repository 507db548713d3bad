"""A bounded load test of `toolhost serve --http --watch`: SESSIONS concurrent sessions each
make CALLS calls (echo and a 5 ms async sleep, alternating) while a tool file is rewritten
again and again (each rewrite is a reload); prints one JSON object with the counts.

usage: load.py TOOLHOST_BINARY WORKDIR SESSIONS CALLS
"""
import asyncio
import json
import os
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import http_server


async def session_run(url, calls, index, outcome):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for i in range(calls):
                if i % 2 == 0:
                    text = f"s{index}-{i}"
                    result = await session.call_tool("echo", {"text": text})
                    good = not result.is_error and result.content[0].text == text
                else:
                    result = await session.call_tool("nap5", {})
                    good = not result.is_error and result.content[0].text == "ok"
                outcome["ok" if good else "failed"] += 1
                if not good and len(outcome["examples"]) < 5:
                    outcome["examples"].append(result.content[0].text)


async def churn(workdir, stop, outcome):
    """Rewrites a tool file until told to stop: every write is a reload."""
    path = os.path.join(workdir, "tools-lua", "churn.lua")
    version = 0
    while not stop.is_set():
        version += 1
        with open(path, "w") as f:
            f.write(
                f'registry.register{{ name = "churn", toolset = "t",\n'
                f'  schema = {{ description = "version {version}", parameters = {{ type = "object" }} }},\n'
                f'  handler = function() return "{version}" end }}\n'
            )
        outcome["edits"] = version
        try:
            await asyncio.wait_for(stop.wait(), timeout=0.3)
        except asyncio.TimeoutError:
            pass


async def scenario(binary, workdir, sessions, calls):
    outcome = {"ok": 0, "failed": 0, "examples": [], "edits": 0}
    async with http_server(binary, workdir, ["--watch"]) as (url, _process):
        stop = asyncio.Event()
        churner = asyncio.create_task(churn(workdir, stop, outcome))
        started = time.monotonic()
        await asyncio.gather(*(session_run(url, calls, i, outcome) for i in range(sessions)))
        outcome["seconds"] = time.monotonic() - started
        stop.set()
        await churner
    print(json.dumps({"step": "load", **outcome}), flush=True)


def main():
    binary, workdir, sessions, calls = sys.argv[1:]
    asyncio.run(scenario(binary, workdir, int(sessions), int(calls)))


if __name__ == "__main__":
    main()
