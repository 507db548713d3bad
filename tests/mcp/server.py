"""Starting `toolhost serve --http` for a client script and finding its address."""
import os
import subprocess
from contextlib import asynccontextmanager


def serve_args(workdir, extra):
    # --no-library: only the test's own tools (the shipped library would add its own).
    return ["--no-library", "--cache-dir", os.path.join(workdir, "cache"), "serve", *extra]


def start_http(binary, workdir, extra, env=None):
    """Starts the server on a free loopback port; returns (url, process)."""
    process = subprocess.Popen(
        [binary, *serve_args(workdir, ["--http", "127.0.0.1:0", *extra])],
        cwd=workdir,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        text=True,
    )
    seen = []
    for line in process.stderr:
        seen.append(line)
        if "serving MCP at " in line:
            url = line.strip().split("serving MCP at ", 1)[1]
            return url, process
    raise RuntimeError("the server did not start:\n" + "".join(seen))


@asynccontextmanager
async def http_server(binary, workdir, extra, env=None):
    url, process = start_http(binary, workdir, extra, env)
    try:
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=20)
