"""MCP 2026-07-28 features of `toolhost serve` (and their 2025-11-25 counterparts), with the
official MCP Python client forcing a protocol revision; prints one JSON object per step for
tests/mcp_2026.rs.

usage: modern.py SCENARIO TRANSPORT(stdio|http) MODE(2026-07-28|legacy|auto) TOOLHOST_BINARY WORKDIR
       [SERVE ARGS...]
"""
import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager

import httpx2 as httpx
from mcp import Client, StdioServerParameters

from server import http_server, serve_args

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def emit(step, **data):
    print(json.dumps({"step": step, **data}), flush=True)


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


@asynccontextmanager
async def server(transport, binary, workdir, extra):
    """The server's address: a URL (HTTP), or the parameters to start it (stdio)."""
    if transport == "stdio":
        yield StdioServerParameters(command=binary, args=serve_args(workdir, extra), cwd=workdir)
    else:
        async with http_server(binary, workdir, extra) as (url, _process):
            yield url


async def subscribe(target, mode, workdir):
    """Hot reload reaches an open subscriptions/listen as tools/list_changed."""
    async with Client(target, mode=mode) as client:
        async with client.listen(tools_list_changed=True) as subscription:
            emit("acknowledged", honored=dump(subscription.honored))
            with open(os.path.join(workdir, "tools-lua", "added.lua"), "w") as f:
                f.write(
                    'registry.register{ name = "added", toolset = "live",\n'
                    '  schema = { description = "hot", parameters = { type = "object" } },\n'
                    '  handler = function() return "new tool" end }\n'
                )
            event = await asyncio.wait_for(subscription.__anext__(), timeout=30)
            emit("event", kind=type(event).__name__)
        listed = await client.list_tools()
        emit("relist", names=sorted(t.name for t in listed.tools))


def save_note(workdir, text):
    """Saves the resource file note.lua (the Rust side writes its first version)."""
    with open(os.path.join(workdir, "tools-lua", "note.lua"), "w") as f:
        f.write('registry.resource{ uri = "note://today", name = "today",\n'
                '  read = function() return %s end }\n' % json.dumps(text))


async def resource_updates(target, mode, workdir):
    """Saving the file that defines a watched resource tells the client: through
    subscriptions/listen on 2026-07-28, after resources/subscribe on 2025-11-25."""
    if mode == "legacy":
        updated = asyncio.Queue()

        async def on_message(message):
            inner = getattr(message, "root", message)
            if getattr(inner, "method", None) == "notifications/resources/updated":
                await updated.put(str(inner.params.uri))

        async with Client(target, mode=mode, message_handler=on_message) as client:
            await client.subscribe_resource("note://today")
            save_note(workdir, "edited")
            emit("updated", uri=await asyncio.wait_for(updated.get(), timeout=30))
            emit("reread", result=dump(await client.read_resource("note://today")))
        return
    async with Client(target, mode=mode) as client:
        watched = ["note://today", "nope://x"]
        async with client.listen(resource_subscriptions=watched) as subscription:
            emit("acknowledged", honored=dump(subscription.honored))
            save_note(workdir, "edited")
            event = await asyncio.wait_for(subscription.__anext__(), timeout=30)
            emit("updated", kind=type(event).__name__, uri=str(event.uri))
        emit("reread", result=dump(await client.read_resource("note://today")))


async def discover(target, mode, _workdir):
    """server/discover names the revisions and what the server offers (mode `auto`: the
    client probes it, and picks the revision)."""
    async with Client(target, mode=mode) as client:
        emit("discover", result=dump(client.session.discover_result),
             protocol=client.protocol_version, server=client.server_info.name)


async def logging(target, mode, _workdir):
    """The log level a request declares decides the log lines it gets."""
    lines = []

    async def on_log(params):
        lines.append(dump(params))

    async with Client(target, mode=mode, logging_callback=on_log) as client:
        await client.call_tool("chatty", {})
        emit("no_level", lines=list(lines))
    lines.clear()
    async with Client(target, mode=mode, logging_callback=on_log, log_level="info") as client:
        await client.call_tool("chatty", {})
        emit("info", lines=list(lines))


async def listing(target, mode, _workdir):
    """tools/list: its caching hints and its order."""
    async with Client(target, mode=mode) as client:
        listed = await client.list_tools()
        emit("list", result=dump(listed))


async def headers(target, mode, _workdir):
    """Custom headers: the client mirrors the argument; a raw client that lies is refused."""
    async with Client(target, mode=mode) as client:
        routed = await client.call_tool("route", {"region": "eu-west"})
        emit("mirrored", result=dump(routed))

    async def call(region, extra_headers):
        body = {
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"_meta": META, "name": "route", "arguments": {"region": region}},
        }
        headers = {
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "route",
            **extra_headers,
        }
        async with httpx.AsyncClient(timeout=30) as http:
            reply = await http.post(target, json=body, headers=headers)
        return {"status": reply.status_code, "body": reply.text}

    emit("param_matches", reply=await call("eu-west", {"Mcp-Param-Region": "eu-west"}))
    emit("param_mismatch", reply=await call("eu-west", {"Mcp-Param-Region": "us-east"}))
    emit("param_missing", reply=await call("eu-west", {}))
    emit("method_mismatch", reply=await call("eu-west", {"Mcp-Method": "tools/list",
                                                    "Mcp-Param-Region": "eu-west"}))


SCENARIOS = {
    "subscribe": subscribe,
    "resource_updates": resource_updates,
    "discover": discover,
    "logging": logging,
    "listing": listing,
    "headers": headers,
}


async def main():
    scenario, transport, mode, binary, workdir, *extra = sys.argv[1:]
    async with server(transport, binary, workdir, extra) as target:
        await SCENARIOS[scenario](target, mode, workdir)


if __name__ == "__main__":
    asyncio.run(main())
