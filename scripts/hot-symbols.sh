#!/usr/bin/env bash
# Regenerates linker/hot-symbols.txt: the functions a release `toolhost` runs in its usual
# paths (one-shot `call` warm and cold, `list`, `serve` over stdio answering calls), in the
# order they are first needed. build.rs hands the file to the linker for release builds
# (`--symbol-ordering-file`), so that code sits together at the front of `.text`: a process
# then maps a few MiB of the binary instead of most of it (docs/performance.md, "The
# binary's resident pages").
#
#   scripts/hot-symbols.sh
#
# Needs: the Rust toolchain, valgrind (callgrind), python3. Run it after dependency or
# toolchain upgrades (symbol names carry hashes of their crate's build; names that no
# longer exist are ignored by the linker, so a stale file only orders less).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cargo build --release --quiet
bin=target/release/toolhost
# The benchmark workloads (benches/common/workload.rs) are written on first use.
[[ -d target/bench-workloads/133/tools-lua ]] ||
  cargo bench --quiet --bench discovery -- --sample-count 1 warm >/dev/null 2>&1
wl=target/bench-workloads/133

profile() { # NAME ARGS...: runs the binary under callgrind, names kept mangled
  local name=$1
  shift
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="$out/$name.cg" \
    "$bin" "$@" >/dev/null 2>&1 </dev/null || true
}
common=(--tools-dir "$wl/tools-lua" --config "$wl/toolhost.toml")
for _ in 1 2; do "$bin" "${common[@]}" --cache-dir "$out/warm" -q call echo '{"text":"hi"}' >/dev/null; done
profile 1-call-warm "${common[@]}" --cache-dir "$out/warm" -q call echo '{"text":"hi"}'
profile 2-call-library -q --cache-dir "$out/lib" call echo '{"text":"hi"}'
profile 3-call-cold "${common[@]}" --cache-dir "$out/cold" -q call echo '{"text":"hi"}'
profile 4-list "${common[@]}" --cache-dir "$out/warm" -q list
# serve over stdio: initialize, list, 50 calls (a plain JSON-RPC driver; pipes as a client's).
python3 - "$bin" "$out" "${common[@]}" --cache-dir "$out/warm" <<'PY'
import json, subprocess, sys
binary, out, args = sys.argv[1], sys.argv[2], sys.argv[3:]
cmd = ["valgrind", "--tool=callgrind", "--demangle=no",
       f"--callgrind-out-file={out}/5-serve.cg", binary, *args, "-q", "serve"]
server = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
def ask(message):
    server.stdin.write(json.dumps(message) + "\n")
    server.stdin.flush()
    if "id" in message:
        while True:
            answer = json.loads(server.stdout.readline())
            if answer.get("id") == message["id"]:
                return answer
ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "hot-symbols", "version": "1"}}})
ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
for i in range(50):
    ask({"jsonrpc": "2.0", "id": 2 + i, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "hi"}}})
server.stdin.close()
server.wait()
PY

# Function names in order of first appearance across the profiles (callgrind names each
# function once, with a number, at its first mention), kept when the binary defines them.
nm --defined-only "$bin" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$out/defined.txt"
mkdir -p linker
python3 - "$out" >linker/hot-symbols.txt <<'PY'
import pathlib, re, sys
out = pathlib.Path(sys.argv[1])
defined = set((out / "defined.txt").read_text().split())
seen, order = set(), []
for profile in sorted(out.glob("*.cg")):
    for line in profile.read_text(errors="replace").splitlines():
        found = re.match(r"^c?fn=\(\d+\) (\S+)$", line)
        if found and found.group(1) in defined and found.group(1) not in seen:
            seen.add(found.group(1))
            order.append(found.group(1))
print("\n".join(order))
PY
echo "linker/hot-symbols.txt: $(wc -l <linker/hot-symbols.txt) functions" >&2
