#!/usr/bin/env bash
# Runs every benchmark on the generated workloads (benches/common/workload.rs) and prints one table; with --json the last
# line of stdout is one flat JSON object of medians (units in the key names).
#
#   scripts/bench.sh [--json]
#
# Needs: the Rust toolchain, python3 (whole-process loop, MCP client venv under target/).
set -euo pipefail
cd "$(dirname "$0")/.."
json=false
# The figures measure the generated workloads, not the shipped library the binary adds.
export TOOLHOST_NO_LIBRARY=1
[[ "${1:-}" == "--json" ]] && json=true

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cargo build --release --quiet
# The binary as `cargo build --release` (and `cargo install`) links it, kept aside: `cargo
# bench` and `cargo test --release` below relink target/release/toolhost with the test
# dependencies' features, whose symbol names the hot-symbol order (build.rs) does not know.
binary="$out/toolhost"
cp target/release/toolhost "$binary"
# divan benches (workloads are generated into target/bench-workloads on first use)
for bench in discovery definitions calls store telemetry; do
  cargo bench --quiet --bench "$bench" 2>/dev/null | tee "$out/$bench.txt" >&2
done
# The store on PostgreSQL (needs the local server of scripts/pg-setup.sh; skipped without).
cargo bench --quiet --bench store_postgres 2>/dev/null | tee "$out/store_postgres.txt" >&2 || true
# The floor under serve's CPU per MCP call: one round trip between two parked threads
# (benches/thread_hop.rs prints one JSON line).
cargo bench --quiet --bench thread_hop 2>/dev/null | tee "$out/thread_hop.txt" >&2 || true

# Whole process: start, discover (warm cache), one call; its time (133 and 1,000 tools) and
# peak RSS (1,000 tools). Also a fixed CPU probe, so runs in the machine's two CPU speeds
# can be told apart.
BENCH_BINARY="$binary" python3 - "$out" > "$out/process.txt" <<'PY'
import json, os, resource, subprocess, statistics, sys, time
out = sys.argv[1]

def command(n, cache="cache"):
    wl = f"target/bench-workloads/{n}"
    return [os.environ["BENCH_BINARY"], "--tools-dir", wl + "/tools-lua", "--config",
            wl + "/toolhost.toml", "--cache-dir", f"{out}/{cache}-{n}", "-q", "call", "echo",
            '{"text":"hello"}']

# The shipped tool library is on by default for the binary (every start checks its copy in
# the cache dir); the other figures leave it out (TOOLHOST_NO_LIBRARY=1, set above).
WITH_LIBRARY = {k: v for k, v in os.environ.items() if k != "TOOLHOST_NO_LIBRARY"}

def median_ms(cmd, runs, env=None):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)  # warms the caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)

def peak_rss_mb(cmd):
    # A fresh interpreter: RUSAGE_CHILDREN is the largest child it waited for.
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
             "stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")
    return float(subprocess.run([sys.executable, "-c", probe, *cmd], check=True,
                                capture_output=True, text=True).stdout)

def cpu_probe_ms():
    times = []
    for _ in range(15):
        start = time.perf_counter()
        sum(i * i for i in range(200_000))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)

print(json.dumps({
    "whole_process_call_ms": round(median_ms(command(133), 30), 3),
    "whole_process_call_ms_1000": round(median_ms(command(1000), 20), 3),
    "whole_process_call_ms_library": round(
        median_ms(command(133, "cache-library"), 30, WITH_LIBRARY), 3),
    "process_rss_mb_1000": round(peak_rss_mb(command(1000)), 1),
    "cpu_probe_ms": round(cpu_probe_ms(), 2),
}))
PY

# MCP over stdio with the official Python client: toolhost serve against a FastMCP server
# (mcp<2) in the same run, calls/s and server CPU per call; serve's RSS at 1,000 tools.
venv=target/mcp-venv
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install --quiet "mcp==2.3.0"
fi
fastmcp=target/fastmcp-venv
if [[ ! -x "$fastmcp/bin/python" ]] || ! "$fastmcp/bin/python" -c "import mcp.server.fastmcp" 2>/dev/null; then
  python3 -m venv "$fastmcp" && "$fastmcp/bin/pip" install --quiet "mcp==1.30.0"
fi
"$venv/bin/python" scripts/mcp_stdio_bench.py "$binary" \
  "$(pwd)/target/bench-workloads/133" "$(pwd)/target/bench-workloads/1000" \
  "$(pwd)/$fastmcp/bin/python" "$(pwd)/target/bench-workloads/133/workload.json" > "$out/mcp.txt" 2>/dev/null || true
# Streamable HTTP: toolhost with sessions and --stateless against FastMCP's streamable HTTP
# server (same tools, same client, same run, both modes), one sequential client and 8
# concurrent ones; calls/s and per-call latency. Tool search off, as FastMCP lists all.
mcp_dir="$out/mcp"
mkdir -p "$mcp_dir"
cp -r target/bench-workloads/133/tools-lua "$mcp_dir/tools-lua"
printf '[tool_search]\nenabled = "off"\n' > "$mcp_dir/toolhost.toml"
"$venv/bin/python" scripts/mcp_http_bench.py "$binary" "$mcp_dir" 8 200 \
  "$(pwd)/$fastmcp/bin/python" "$(pwd)/target/bench-workloads/133/workload.json" >> "$out/mcp.txt" 2>/dev/null || true

# Streamable HTTP with a light client (benches/http_load.rs: 8 keep-alive Rust callers),
# toolhost against FastMCP in both modes: calls/s and the server's CPU per call under load.
FASTMCP_PYTHON="$(pwd)/$fastmcp/bin/python" cargo bench --quiet --bench http_load 2>/dev/null \
  | tee "$out/http_load.txt" >&2 || true

# A fleet: echo calls from 16 callers through a round-robin proxy to one and to three
# `serve --http --stateless` replicas sharing a store (benches/fleet.rs prints one JSON
# line). On two cores the replicas share the CPU: reported, not asserted.
cargo bench --quiet --bench fleet 2>/dev/null | tee "$out/fleet.txt" >&2 || true

# Tool search quality on the labelled query set (tests/search_quality.rs prints one JSON line).
cargo test --release --quiet --test search_quality -- --nocapture 2>/dev/null \
  | grep '"tool_search_recall_at_3"' > "$out/search_quality.txt" || true

python3 scripts/bench_figures.py "$out" "$json"
