#!/usr/bin/env bash
# Runs every benchmark on the shared workloads and prints one table; with --json the last
# line of stdout is one flat JSON object of medians (units in the key names).
#
#   scripts/bench.sh [--json]
#
# Needs: the Rust toolchain, python3 (workload generator, MCP client venv under target/).
set -euo pipefail
cd "$(dirname "$0")/.."
json=false
[[ "${1:-}" == "--json" ]] && json=true

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cargo build --release --quiet
# divan benches (workloads are generated into target/bench-workloads on first use)
for bench in discovery definitions calls store; do
  cargo bench --quiet --bench "$bench" 2>/dev/null | tee "$out/$bench.txt" >&2
done

# Whole process: start, discover (warm cache), one call.
wl=target/bench-workloads/133
cache="$out/cache"
./target/release/toolhost --tools-dir "$wl/tools-lua" --config "$wl/toolhost.toml" --cache-dir "$cache" -q call echo '{"text":"warm"}' >/dev/null
python3 - "$wl" "$cache" > "$out/process.txt" <<'PY'
import subprocess, sys, time, statistics
wl, cache = sys.argv[1], sys.argv[2]
cmd = ["./target/release/toolhost", "--tools-dir", wl + "/tools-lua", "--config", wl + "/toolhost.toml",
       "--cache-dir", cache, "-q", "call", "echo", '{"text":"hello"}']
times = []
for _ in range(30):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    times.append((time.perf_counter() - start) * 1000)
print(statistics.median(times))
PY

# MCP throughput with the official Python client (venv made by the MCP test on first use).
venv=target/mcp-venv
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import mcp" 2>/dev/null; then
  python3 -m venv "$venv" && "$venv/bin/pip" install --quiet "mcp==2.3.0"
fi
mcp_dir="$out/mcp"
mkdir -p "$mcp_dir"
cp -r "$wl/tools-lua" "$mcp_dir/tools-lua"
"$venv/bin/python" tests/mcp/client.py "$(pwd)/target/release/toolhost" "$mcp_dir" throughput > "$out/mcp.txt" 2>/dev/null || true
# The same over streamable HTTP, 8 concurrent sessions.
"$venv/bin/python" scripts/mcp_http_bench.py "$(pwd)/target/release/toolhost" "$mcp_dir" 8 200 >> "$out/mcp.txt" 2>/dev/null || true

# Tool search quality on the labelled query set (tests/search_quality.rs prints one JSON line).
cargo test --release --quiet --test search_quality -- --nocapture 2>/dev/null \
  | grep '^{"tool_search_recall_at_3"' > "$out/search_quality.txt" || true

python3 scripts/bench_figures.py "$out" "$json"
