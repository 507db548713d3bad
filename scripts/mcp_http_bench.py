"""MCP over streamable HTTP with the official Python client: `toolhost serve --http` with
sessions and `--stateless`, against a FastMCP streamable-HTTP server (the same tools,
scripts/fastmcp_echo_server.py) with sessions and stateless, in the same run; each with
one sequential client and with SESSIONS concurrent clients, CALLS echo calls per client.
Rounds alternate between the servers so both see the same machine state.

Also the per-call latency with a plain keep-alive client (no MCP library), the server's
own cost.

And protocol 2026-07-28 (no session, every request carries its `_meta`) against the
`--stateless` toolhost server, with the same client forcing that revision and SESSIONS
concurrent callers.

Prints one JSON line per measurement:
  {"step": "http", "server": "toolhost"|"fastmcp", "mode": "stateful"|"stateless",
   "sessions": N, "calls_per_s": ..., "p50_ms": ..., "p99_ms": ...}
  {"step": "http_2026", "server": "toolhost", "mode": "stateless", "sessions": N, ...}
  {"step": "http_raw", "server": ..., "mode": ..., "sessions": 1, "p50_ms": ..., "p99_ms": ...}
(calls_per_s: all calls / wall time; p50/p99: per-call latency as the client sees it).

usage: mcp_http_bench.py TOOLHOST_BINARY WORKDIR [SESSIONS] [CALLS] [FASTMCP_PYTHON WORKLOAD_JSON]
"""
import asyncio
import http.client
import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "mcp"))

from mcp import Client, ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from server import http_server  # noqa: E402
from mcp_stdio_bench import cpu_ns  # noqa: E402

ARGS = {"text": "hello", "count": 3}
ROUNDS = 2


async def one_client(url, calls, latencies):
    async with streamable_http_client(url) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            # Listed once, so the client does not list again to validate each result.
            await session.list_tools()
            for _ in range(20):
                await session.call_tool("echo", ARGS)
            for _ in range(calls):
                started = time.perf_counter()
                await session.call_tool("echo", ARGS)
                latencies.append((time.perf_counter() - started) * 1000)


async def one_modern_client(url, calls, latencies):
    """A caller on protocol 2026-07-28: no initialize, no session."""
    async with Client(url, mode="2026-07-28") as client:
        await client.list_tools()
        for _ in range(20):
            await client.call_tool("echo", ARGS)
        for _ in range(calls):
            started = time.perf_counter()
            await client.call_tool("echo", ARGS)
            latencies.append((time.perf_counter() - started) * 1000)


async def measure(url, clients, calls, one=one_client):
    latencies = []
    started = time.perf_counter()
    await asyncio.gather(*(one(url, calls, latencies) for _ in range(clients)))
    wall = time.perf_counter() - started
    latencies.sort()

    def pick(q):
        return round(latencies[min(len(latencies) - 1, int(len(latencies) * q))], 3)

    return {"calls_per_s": round(len(latencies) / wall, 1), "p50_ms": pick(0.5),
            "p99_ms": pick(0.99)}


def raw_latency(url, calls, pid):
    """Per-call latency with a plain keep-alive client (http.client, no MCP library): the
    server's own cost, which the official client's overhead hides. initialize,
    notifications/initialized, then `calls` echo calls with the session id (if any).
    Also the CPU the server process `pid` spent per call (all its threads), over the same
    calls: what a call costs the server whatever the client."""
    address = url.split("//", 1)[1].split("/", 1)[0]
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port))
    headers = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}

    def post(message):
        connection.request("POST", "/mcp", json.dumps(message), headers)
        response = connection.getresponse()
        response.read()
        return response

    init = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
    session = init.getheader("Mcp-Session-Id")
    if session:
        headers["Mcp-Session-Id"] = session
    post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    latencies = []
    for i in range(calls + 50):
        if i == 50:
            cpu_before = cpu_ns(pid)
        started = time.perf_counter()
        answer = post({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                       "params": {"name": "echo", "arguments": ARGS}})
        if answer.status != 200:
            raise RuntimeError(f"tools/call answered {answer.status}")
        if i >= 50:
            latencies.append((time.perf_counter() - started) * 1000)
    cpu_us = (cpu_ns(pid) - cpu_before) / calls / 1000
    connection.close()
    latencies.sort()
    return {"p50_ms": round(latencies[len(latencies) // 2], 3),
            "server_cpu_us_per_call": round(cpu_us, 1),
            "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 3)}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_fastmcp(python, workload, stateless):
    port = free_port()
    args = [python, os.path.join(os.path.dirname(__file__), "fastmcp_echo_server.py"),
            workload, "http", str(port)] + (["stateless"] if stateless else [])
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}/mcp", process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("the FastMCP server exited")
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the FastMCP server did not start")


def report(server, mode, clients, figures, step="http"):
    print(json.dumps({"step": step, "server": server, "mode": mode, "sessions": clients,
                      **figures}), flush=True)


async def measure_all(server, mode, url, pid, sessions, calls):
    report(server, mode, 1, raw_latency(url, 1000, pid), step="http_raw")
    for clients in [1, sessions]:
        report(server, mode, clients, await measure(url, clients, calls))


async def main(binary, workdir, sessions, calls, fastmcp):
    for _ in range(ROUNDS):
        for mode in ["stateful", "stateless"]:
            extra = ["--stateless"] if mode == "stateless" else []
            async with http_server(binary, workdir, extra) as (url, process):
                await measure_all("toolhost", mode, url, process.pid, sessions, calls)
                if mode == "stateless":
                    modern = await measure(url, sessions, calls, one=one_modern_client)
                    report("toolhost", mode, sessions, modern, step="http_2026")
            if fastmcp:
                url, process = start_fastmcp(*fastmcp, mode == "stateless")
                try:
                    await measure_all("fastmcp", mode, url, process.pid, sessions, calls)
                finally:
                    process.terminate()
                    process.wait(timeout=20)


if __name__ == "__main__":
    binary, workdir, *rest = sys.argv[1:]
    sessions = int(rest[0]) if rest else 8
    calls = int(rest[1]) if len(rest) > 1 else 200
    fastmcp = (rest[2], rest[3]) if len(rest) > 3 else None
    asyncio.run(main(binary, workdir, sessions, calls, fastmcp))
