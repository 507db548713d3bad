"""Sequential MCP calls over stdio with the official Python client, against `toolhost serve`
and against a FastMCP server (scripts/fastmcp_echo_server.py) in the same run; for each:
calls per second and the server's CPU time per call (all its threads, from /proc). Also the
peak RSS of `toolhost serve` on the 1,000-tool workload with 2 VMs after a call.

Also toolhost with everything an operator turns on (`toolhost_telemetry`: spans exported
over OTLP/HTTP to a local receiver in this script, `--metrics`, the audit log to a file).

Prints one JSON line per measurement:
  {"step": "stdio", "server": "toolhost"|"toolhost_telemetry"|"fastmcp", "calls_per_s": ...,
   "cpu_us_per_call": ...}
  {"step": "serve_rss", "serve_rss_mb_1000": ...}

usage: mcp_stdio_bench.py TOOLHOST WORKDIR_133 WORKDIR_1000 FASTMCP_PYTHON WORKLOAD_133_JSON
"""
import asyncio
import http.server
import json
import os
import sys
import threading
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

CALLS = 2000
WARMUP = 200
ARGS = {"text": "hello", "count": 3, "loud": False}


def children():
    """Pids whose parent is this process."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == os.getpid():
                    found.append(int(entry))
            except OSError:
                pass
    return found


def cpu_ns(pid):
    """CPU time of every thread of `pid` so far (ns)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def serve_config(workdir):
    """The workload's config with tool search off, so every tool (echo too) is listed."""
    path = os.path.join(workdir, "bench-serve.toml")
    with open(os.path.join(workdir, "toolhost.toml")) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text + '\n[tool_search]\nenabled = "off"\n')
    return path


class Sink(http.server.BaseHTTPRequestHandler):
    """A local OTLP/HTTP receiver: reads each export and answers 200."""
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def otlp_sink():
    """Starts the receiver; its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def telemetry_params(binary, workdir, endpoint):
    """serve with traces exported to `endpoint`, metrics on a listener, an audit log."""
    path = os.path.join(workdir, "bench-telemetry.toml")
    with open(serve_config(workdir)) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text + f'\n[telemetry]\notlp_endpoint = "{endpoint}"\n'
                f'[audit]\npath = "{workdir}/bench-audit.log"\nmax_bytes = 10000000\n')
    return StdioServerParameters(
        command=binary,
        args=["--cache-dir", workdir + "/cache", "--config", path,
              "--tools-dir", workdir + "/tools-lua", "-q", "serve", "--metrics", "127.0.0.1:0"],
        cwd=workdir, env={"PATH": os.environ.get("PATH", "")})


def serve_params(binary, workdir):
    return StdioServerParameters(
        command=binary,
        args=["--cache-dir", workdir + "/cache", "--config", serve_config(workdir),
              "--tools-dir", workdir + "/tools-lua", "-q", "serve"],
        cwd=workdir, env={"PATH": os.environ.get("PATH", "")})


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


async def measure(name, params):
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            (pid,) = children()
            # The client validates results against the listed tools; listing once keeps it
            # from listing again at every call.
            await session.list_tools()
            for _ in range(WARMUP):
                await session.call_tool("echo", ARGS)
            cpu = cpu_ns(pid)
            started = time.perf_counter()
            for _ in range(CALLS):
                await session.call_tool("echo", ARGS)
            elapsed = time.perf_counter() - started
            cpu = cpu_ns(pid) - cpu
    print(json.dumps({"step": "stdio", "server": name,
                      "calls_per_s": round(CALLS / elapsed, 1),
                      "cpu_us_per_call": round(cpu / CALLS / 1000, 2)}), flush=True)


async def serve_rss(binary, workdir):
    """Peak RSS of a warm start (the first start fills the caches) after a list and a call."""
    params = serve_params(binary, workdir)
    for _ in range(2):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                (pid,) = children()
                await session.list_tools()
                await session.call_tool("echo", ARGS)
                rss = peak_rss_mb(pid)
    print(json.dumps({"step": "serve_rss", "serve_rss_mb_1000": round(rss, 1)}), flush=True)


async def main():
    binary, work133, work1000, fastmcp_python, workload = sys.argv[1:6]
    toolhost = serve_params(binary, work133)
    fastmcp = StdioServerParameters(
        command=fastmcp_python,
        args=[os.path.join(os.path.dirname(__file__), "fastmcp_echo_server.py"), workload],
        env={"PATH": os.environ.get("PATH", "")})
    telemetry = telemetry_params(binary, work133, otlp_sink())
    # Alternated, so all see the same machine state.
    for _ in range(2):
        await measure("toolhost", toolhost)
        await measure("toolhost_telemetry", telemetry)
        await measure("fastmcp", fastmcp)
    await serve_rss(binary, work1000)


if __name__ == "__main__":
    asyncio.run(main())
