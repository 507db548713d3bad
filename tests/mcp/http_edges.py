"""The HTTP transport's guards against a real `toolhost serve --http`: auth, Origin, body
limit, /healthz, and a graceful shutdown with a call in flight; one JSON object per step.

usage: http_edges.py TOOLHOST_BINARY WORKDIR
"""
import asyncio
import json
import os
import signal
import sys

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from server import http_server

TOKEN = "s3cret-token"
INIT = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "edges", "version": "0"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


async def scenario(binary, workdir):
    env = {"EDGE_TOKEN": TOKEN}
    async with http_server(binary, workdir, ["--auth-token-env", "EDGE_TOKEN"], env) as (url, process):
        base = url.rsplit("/mcp", 1)[0]
        async with httpx.AsyncClient(timeout=20) as http:
            health = await http.get(base + "/healthz")
            emit("healthz", status=health.status_code, body=health.json())
            missing = await http.post(url, json=INIT, headers=HEADERS)
            emit("no_token", status=missing.status_code, body=missing.json())
            wrong = await http.post(url, json=INIT, headers={**HEADERS, "Authorization": "Bearer nope"})
            emit("wrong_token", status=wrong.status_code, body=wrong.json())
            auth = {**HEADERS, "Authorization": "Bearer " + TOKEN}
            evil = await http.post(url, json=INIT, headers={**auth, "Origin": "http://evil.example"})
            emit("evil_origin", status=evil.status_code)
            local = await http.post(url, json=INIT, headers={**auth, "Origin": "http://localhost:3000"})
            emit("local_origin", status=local.status_code)
            huge = dict(INIT, params=dict(INIT["params"], padding="x" * 5000))
            big = await http.post(url, json=huge, headers=auth)
            emit("oversized", status=big.status_code)

        client = httpx.AsyncClient(headers={"Authorization": "Bearer " + TOKEN}, timeout=30)
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                listed = await session.list_tools()
                emit("authorized", names=sorted(t.name for t in listed.tools))
                # A call in flight when the operator stops the server still gets its answer.
                started = os.path.join(workdir, "started")
                call = asyncio.create_task(session.call_tool("nap", {}))
                while not os.path.exists(started):
                    await asyncio.sleep(0.02)
                process.send_signal(signal.SIGTERM)
                result = await call
                emit("drained", is_error=result.isError if hasattr(result, "isError") else result.is_error,
                     text=result.content[0].text)
        code = await asyncio.get_running_loop().run_in_executor(None, lambda: process.wait(timeout=20))
        emit("exit", code=code)


def main():
    binary, workdir, *mode = sys.argv[1:]
    runners = {"stateless": stateless, "auth": auth, "stateless_cancel": stateless_cancel}
    runner = runners[mode[0]] if mode else scenario
    asyncio.run(runner(binary, workdir))



async def stateless(binary, workdir):
    """`--stateless`: no session id, every request stands alone; list and call still work."""
    async with http_server(binary, workdir, ["--stateless"]) as (url, _process):
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                listed = await session.list_tools()
                echoed = await session.call_tool("echo", {"text": "hi"})
                emit("stateless", names=sorted(t.name for t in listed.tools),
                     is_error=echoed.is_error, text=echoed.content[0].text)


async def auth(binary, workdir):
    """A refused client sees the server's reason in its exception; the server's log (not the
    client) names where the token comes from."""
    env = {"EDGE_TOKEN": TOKEN}
    async with http_server(binary, workdir, ["--auth-token-env", "EDGE_TOKEN"], env) as (url, process):
        for step, headers in [("sdk_missing", {}), ("sdk_invalid", {"Authorization": "Bearer nope"})]:
            client = httpx.AsyncClient(headers=headers, timeout=20)
            try:
                async with streamable_http_client(url, http_client=client) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await session.initialize()
                emit(step, error=None)
            except Exception as e:  # noqa: BLE001 - the message is what is checked
                emit(step, error=describe(e))
        process.terminate()
        log = await asyncio.get_running_loop().run_in_executor(None, process.stderr.read)
        emit("server_log", text=log)


async def stateless_cancel(binary, workdir):
    """`--stateless` on 2025-11-25: a cancelled call stops (with `[serve] max_calls = 1` the
    next call could not run otherwise), and the server logs no error for it."""
    async with http_server(binary, workdir, ["--stateless"]) as (url, process):
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                started = os.path.join(workdir, "started")
                call = asyncio.create_task(session.call_tool("long_nap", {}))
                while not os.path.exists(started):
                    await asyncio.sleep(0.02)
                call.cancel()
                try:
                    await call
                except asyncio.CancelledError:
                    pass
                after = await asyncio.wait_for(session.call_tool("echo", {"text": "after"}), 20)
                emit("after_cancel", is_error=after.is_error, text=after.content[0].text,
                     finished=os.path.exists(os.path.join(workdir, "finished")))
        process.terminate()
        log = await asyncio.get_running_loop().run_in_executor(None, process.stderr.read)
        emit("server_log", text=log)


def describe(error):
    """The messages of an exception and of everything it groups or wraps."""
    parts = [f"{type(error).__name__}: {error}"]
    for inner in getattr(error, "exceptions", []) or []:
        parts.append(describe(inner))
    if error.__cause__ is not None:
        parts.append(describe(error.__cause__))
    return " | ".join(parts)


if __name__ == "__main__":
    main()
