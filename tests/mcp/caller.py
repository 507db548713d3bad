"""Who is calling, through the official MCP client: `toolhost serve --http` with named
static tokens and `[serve.oauth]` (the toolhost.toml in WORKDIR), each token's session
calling `whoami`; one JSON object per step.

usage: caller.py TOOLHOST_BINARY WORKDIR OAUTH_TOKEN
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


async def whoami(url, token):
    client = httpx.AsyncClient(headers={"Authorization": "Bearer " + token}, timeout=30)
    async with streamable_http_client(url, http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            result = await session.call_tool("whoami", {})
            return json.loads(result.content[0].text)


async def scenario(binary, workdir, oauth_token):
    env = {"CI_TOKEN": "ci-secret", "MAIN_TOKEN": "main-secret"}
    async with http_server(binary, workdir, [], env) as (url, _process):
        for step, token in [("default", "main-secret"), ("ci", "ci-secret"), ("oauth", oauth_token)]:
            emit(step, caller=await whoami(url, token))


def main():
    asyncio.run(scenario(sys.argv[1], sys.argv[2], sys.argv[3]))


if __name__ == "__main__":
    main()
