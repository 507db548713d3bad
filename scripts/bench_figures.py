"""Reads the outputs scripts/bench.sh collected and prints the table (and the JSON line).

usage: bench_figures.py OUT_DIR JSON(true|false)
"""
import json
import re
import statistics
import sys
from pathlib import Path

UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
ROW = re.compile(r"^[│├╰─\s]*([\w.]+)\s+([\d.]+)\s*(ns|µs|us|ms|s)\s*│\s*([\d.]+)\s*(ns|µs|us|ms|s)\s*│\s*([\d.]+)\s*(ns|µs|us|ms|s)")


def medians(text):
    """Median seconds of each divan row, keyed by its path (group/arg)."""
    found = {}
    parents = []
    for line in text.splitlines():
        depth = len(re.match(r"^[│├╰─\s]*", line).group(0)) // 3
        name_only = re.match(r"^[│├╰─\s]*([\w.]+)\s*(│|$)", line)
        row = ROW.match(line)
        if row:
            name, value, unit = row.group(1), row.group(6), row.group(7)
            path = "/".join(parents[:depth] + [name])
            found[path] = float(value) * UNITS[unit]
        elif name_only:
            parents = parents[:depth] + [name_only.group(1)]
    return found


def main():
    out, as_json = Path(sys.argv[1]), sys.argv[2] == "true"
    rows = {}
    for bench in ["discovery", "definitions", "calls", "store", "telemetry", "store_postgres"]:
        path = out / f"{bench}.txt"
        if path.exists():
            rows.update({f"{bench}/{k}": v for k, v in medians(path.read_text()).items()})
    figures = {}

    def put(key, row, scale):
        for name, value in rows.items():
            if name.endswith(row):
                figures[key] = round(value * scale, 3)
                return

    put("discovery_warm_ms_133", "warm/133", 1e3)
    put("discovery_cold_ms_133", "cold/133", 1e3)
    put("discovery_warm_ms_1000", "warm/1000", 1e3)
    put("discovery_cold_ms_1000", "cold/1000", 1e3)
    put("definitions_recompute_us_133", "recompute/133", 1e6)
    put("definitions_memo_us_133", "memo_hit/133", 1e6)
    put("definitions_recompute_us_1000", "recompute/1000", 1e6)
    put("call_echo_us", "calls/call_echo", 1e6)
    # The same call with spans exported over OTLP/HTTP and metrics recorded.
    put("call_echo_us_telemetry", "telemetry/call_echo_telemetry", 1e6)
    put("call_echo_coerce_us", "call_echo_coerce", 1e6)
    put("raw_lua_echo_us", "raw_lua_echo", 1e6)
    put("tool_search_us_1000", "tool_search_1000", 1e6)
    put("store_get_us", "store_get", 1e6)
    put("store_set_us", "store_set", 1e6)
    put("store_update_us", "store_update", 1e6)
    put("store_get_us_postgres", "store_get_postgres", 1e6)
    put("store_update_us_postgres", "store_update_postgres", 1e6)
    reload = next((v for k, v in rows.items() if k.endswith("reload/133")), None)
    if reload is not None:
        figures["reload_visible_ms_133"] = round(200 + reload * 1e3, 3)
    one = next((v for k, v in rows.items() if k.endswith("cpu_batch_of_two/1")), None)
    two = next((v for k, v in rows.items() if k.endswith("cpu_batch_of_two/2")), None)
    if one and two:
        figures["parallel_speedup_2vms"] = round(one / two, 3)
    process = out / "process.txt"
    if process.exists() and process.read_text().strip():
        figures.update(json.loads(process.read_text().splitlines()[-1]))
    hop = out / "thread_hop.txt"
    if hop.exists() and hop.read_text().strip():
        figures.update(json.loads(hop.read_text().strip().splitlines()[-1]))
    # Benches that print one JSON line of figures.
    for name in ["fleet.txt", "http_load.txt"]:
        printed = out / name
        if printed.exists() and printed.read_text().strip():
            figures.update(json.loads(printed.read_text().strip().splitlines()[-1]))
    quality = out / "search_quality.txt"
    if quality.exists() and quality.read_text().strip():
        measured = json.loads(quality.read_text().splitlines()[0])
        figures["tool_search_recall_at_3"] = round(measured["tool_search_recall_at_3"], 3)
        figures["tool_search_mrr"] = round(measured["tool_search_mrr"], 3)
    mcp = out / "mcp.txt"
    if mcp.exists():
        stdio = {}
        http = {}
        modern = []
        for line in mcp.read_text().splitlines():
            try:
                step = json.loads(line)
            except ValueError:
                continue
            if step.get("step") == "stdio":
                stdio.setdefault(step["server"], []).append(step)
            if step.get("step") == "serve_rss":
                figures["serve_rss_mb_1000"] = step["serve_rss_mb_1000"]
            if step.get("step") == "http_2026":
                modern.append(step)
            if step.get("step") in ("http", "http_raw"):
                key = (step["step"], step["server"], step["mode"], step["sessions"])
                http.setdefault(key, []).append(step)
        # Rounds alternate between the servers; the median of each server's rounds.
        suffixes = {"toolhost": "", "fastmcp": "_fastmcp", "toolhost_telemetry": "_telemetry"}
        for server, rounds in stdio.items():
            suffix = suffixes.get(server, "_" + server)
            figures["mcp_calls_per_s" + suffix] = round(
                statistics.median(r["calls_per_s"] for r in rounds), 1)
            figures["mcp_server_cpu_us_per_call" + suffix] = round(
                statistics.median(r["cpu_us_per_call"] for r in rounds), 1)
        # Streamable HTTP: `mcp_http_calls_per_s` and `mcp_http_p99_ms` are toolhost with
        # sessions and 8 concurrent clients (as before); `_1` one sequential client;
        # `_stateless` the --stateless server; `_fastmcp` FastMCP's server, same client.
        # `mcp_http_p50_ms` is the per-call latency of one sequential client;
        # `mcp_http_raw_p50_ms` that of a plain keep-alive client (the server's own cost),
        # and `mcp_http_server_cpu_us_per_call` the server process's CPU per call of that
        # client (all threads): what a call costs the server, whatever the client.
        for (kind, server, mode, sessions), rounds in sorted(http.items(), key=str):
            suffix = ("_fastmcp" if server == "fastmcp" else "") + \
                ("_stateless" if mode == "stateless" else "")
            def median(field):
                return round(statistics.median(r[field] for r in rounds), 3)
            if kind == "http_raw":
                figures["mcp_http_raw_p50_ms" + suffix] = median("p50_ms")
                figures["mcp_http_server_cpu_us_per_call" + suffix] = round(
                    median("server_cpu_us_per_call"), 1)
            elif sessions == 1:
                figures["mcp_http_calls_per_s" + suffix + "_1"] = median("calls_per_s")
                figures["mcp_http_p50_ms" + suffix] = median("p50_ms")
            else:
                figures["mcp_http_calls_per_s" + suffix] = median("calls_per_s")
                figures["mcp_http_p99_ms" + suffix] = median("p99_ms")
        # Protocol 2026-07-28 over stateless HTTP (no session, per-request `_meta`), 8
        # concurrent callers with the same client forcing that revision.
        if modern:
            figures["mcp_2026_calls_per_s"] = round(
                statistics.median(r["calls_per_s"] for r in modern), 1)
            figures["mcp_2026_p99_ms"] = round(
                statistics.median(r["p99_ms"] for r in modern), 3)
    width = max(len(k) for k in figures) if figures else 10
    print(f"{'figure':<{width}}  median")
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if as_json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
