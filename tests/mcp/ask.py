"""Input requests (`ctx.ask`, `ctx.roots`, the approval gate) against `toolhost serve`, with
the official MCP Python client, on a 2025-11-25 session (`legacy`) or 2026-07-28
(multi-round), over stdio or streamable HTTP; prints one JSON object per step for
tests/mcp_ask.rs.

usage: ask.py TRANSPORT(stdio|http) MODE(legacy|2026-07-28) TOOLHOST_BINARY WORKDIR SPEC_JSON

SPEC_JSON: {
  "elicitation": [answer, ...] | null   (scripted form answers, in order: {"action", "content"?},
                                          {"action": "hang"} never answers; null: the client
                                          does not declare elicitation)
  "roots": [uri, ...] | null            (null: the client does not declare roots)
  "sampling": TEXT | null               (the model's answer to every sampling request)
  "servers": N (HTTP: N servers on the same workdir, default 1), "env": {NAME: VALUE} (theirs),
  "serve_args": [...],
  "steps": [
    {"name", "call": TOOL, "args"?, "server"?}   the client drives every round itself
    {"name", "round": TOOL, "args"?, "server"?,  one tools/call, input_required allowed
     "state": "last" | "tampered" | null,        the last round's requestState, changed or not
     "answer": true,                              answers the last round's requests (scripted)
     "responses": {KEY: form answer}}             or sends these
  ]}
A step prints {"step", "ok", "text"} for a result, {"step", "result_type": "input_required",
"keys", "methods", "state"} for a round, {"step", "error": {"code", "message", "data"}} for
a JSON-RPC error; every step also lists the form messages the client was shown ("asked").
"""
import asyncio
import json
import sys
from contextlib import AsyncExitStack

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from server import http_server, serve_args


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Script:
    """The scripted user: answers forms in order, lists the roots, remembers what it saw."""

    def __init__(self, spec):
        self.answers = list(spec.get("elicitation") or [])
        self.roots = spec.get("roots")
        self.sampled = spec.get("sampling")
        self.asked = []

    def form(self, params):
        self.asked.append(params.message)
        answer = self.answers.pop(0) if self.answers else {"action": "cancel"}
        return types.ElicitResult(action=answer["action"], content=answer.get("content"))

    async def on_elicit(self, _context, params):
        if self.answers and self.answers[0]["action"] == "hang":
            # A client that never answers: the server's deadline must end the call.
            self.asked.append(params.message)
            self.answers.pop(0)
            await asyncio.sleep(3600)
        return self.form(params)

    async def on_roots(self, _context):
        roots = [types.Root(uri=uri, name=f"root{i}") for i, uri in enumerate(self.roots)]
        return types.ListRootsResult(roots=roots)

    def sample(self, params):
        self.asked.append("sampling: " + " | ".join(
            f"{m.role}: {m.content.text}" for m in params.messages))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=self.sampled),
            model="scripted-model")

    async def on_sample(self, _context, params):
        return self.sample(params)

    def callbacks(self, spec):
        out = {}
        if self.sampled is not None:
            out["sampling_callback"] = self.on_sample
        if spec.get("elicitation") is not None:
            out["elicitation_callback"] = self.on_elicit
        if self.roots is not None:
            out["list_roots_callback"] = self.on_roots
        return out


def respond(script, requests):
    """Answers a round's requests as the scripted user would."""
    out = {}
    for key, request in requests.items():
        if request.method == "elicitation/create":
            out[key] = script.form(request.params)
        elif request.method == "sampling/createMessage":
            out[key] = script.sample(request.params)
        elif request.method == "roots/list":
            out[key] = types.ListRootsResult(
                roots=[types.Root(uri=uri, name=f"root{i}") for i, uri in enumerate(script.roots or [])]
            )
    return out


def tamper(state):
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


async def main():
    transport, mode, binary, workdir, spec = sys.argv[1:6]
    spec = json.loads(spec)
    script = Script(spec)
    extra = spec.get("serve_args", [])
    async with AsyncExitStack() as stack:
        clients = []
        if transport == "stdio":
            params = StdioServerParameters(
                command=binary, args=serve_args(workdir, extra), cwd=workdir, env=spec.get("env")
            )
            clients.append(await stack.enter_async_context(
                Client(params, mode=mode, **script.callbacks(spec))))
        else:
            for _ in range(spec.get("servers", 1)):
                url, _process = await stack.enter_async_context(
                    http_server(binary, workdir, extra, spec.get("env")))
                clients.append(await stack.enter_async_context(
                    Client(url, mode=mode, **script.callbacks(spec))))
        last = None
        for step in spec["steps"]:
            client = clients[step.get("server", 0)]
            script.asked = []
            out = {"step": step["name"]}
            try:
                if "call" in step:
                    result = dump(await client.call_tool(step["call"], step.get("args", {})))
                    out["ok"] = not result.get("isError", False)
                    out["text"] = "".join(b.get("text", "") for b in result.get("content", []))
                else:
                    state = None
                    responses = None
                    if step.get("state") == "last":
                        state = last.request_state
                    elif step.get("state") == "tampered":
                        state = tamper(last.request_state)
                    if step.get("answer"):
                        responses = respond(script, last.input_requests or {})
                    if "responses" in step:
                        responses = {k: types.ElicitResult(**v) for k, v in step["responses"].items()}
                    result = await client.session.call_tool(
                        step["round"], step.get("args", {}), input_responses=responses,
                        request_state=state, allow_input_required=True)
                    if isinstance(result, types.InputRequiredResult):
                        last = result
                        requests = result.input_requests or {}
                        out["result_type"] = "input_required"
                        out["keys"] = sorted(requests)
                        out["methods"] = [requests[k].method for k in sorted(requests)]
                        out["state"] = result.request_state
                    else:
                        result = dump(result)
                        out["ok"] = not result.get("isError", False)
                        out["text"] = "".join(b.get("text", "") for b in result.get("content", []))
            except MCPError as error:
                out["error"] = {"code": error.error.code, "message": error.error.message,
                                "data": error.error.data}
            out["asked"] = script.asked
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
