#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against
# `toolhost serve --http` serving the Lua tools in tests/conformance/tools-lua, one in-scope
# server scenario at a time, and prints a pass/fail line per scenario. Exit 1 if any fails.
#
# Out of scope (toolhost serves tools only): resources-*, prompts-*, completion-complete,
# tools-call-sampling, tools-call-elicitation, elicitation-*.
#
# The suite needs Node >= 22 (it uses fs.globSync); the machine may have 20, so Node 22 comes
# from the npm registry's `node` package, installed beside the suite under
# target/conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir="$root/target/conformance"
suite_version=0.1.16
node_version=22.23.3
mkdir -p "$dir"

if [[ ! -x "$dir/node_modules/.bin/conformance" || ! -x "$dir/node_modules/.bin/node" ]]; then
  (
    cd "$dir"
    [[ -f package.json ]] || npm init -y >/dev/null
    npm install --no-audit --no-fund --silent \
      "node@$node_version" "@modelcontextprotocol/conformance@$suite_version"
  )
fi
export PATH="$dir/node_modules/.bin:$PATH"
echo "node $(node --version), conformance $suite_version"

cargo build --quiet --bin toolhost
binary="$root/target/debug/toolhost"

scenarios=(
  server-initialize ping logging-set-level tools-list
  tools-call-simple-text tools-call-image tools-call-audio tools-call-embedded-resource
  tools-call-mixed-content tools-call-with-logging tools-call-error tools-call-with-progress
  json-schema-2020-12 server-sse-multiple-streams dns-rebinding-protection
)
# Expected to fail, and why: server-sse-polling calls a `test_reconnection` tool that must make
# the *server* close its own SSE stream mid-call (SEP-1699 polling) and resume on the client's
# GET with Last-Event-ID. toolhost never closes a stream mid-call and a Lua tool has no say in
# the transport, so the call answers `unknown_tool`. A pass here means the list is stale.
expected_failures=(server-sse-polling)

log="$dir/server.log"
"$binary" --tools-dir "$root/tests/conformance/tools-lua" --cache-dir "$dir/cache" \
  serve --http 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 200); do
  url=$(sed -n 's/.*serving MCP at \(http[^ ]*\).*/\1/p' "$log" | head -1)
  [[ -n "$url" ]] && break
  sleep 0.05
done
[[ -n "$url" ]] || { echo "the server did not start:"; cat "$log"; exit 1; }
echo "server at $url"

failed=0
cd "$dir"
for scenario in "${scenarios[@]}"; do
  if out=$(conformance server --url "$url" --scenario "$scenario" 2>&1); then
    echo "pass  $scenario"
  else
    echo "FAIL  $scenario"
    echo "$out" | sed 's/^/      /' | tail -40
    failed=1
  fi
done
for scenario in "${expected_failures[@]}"; do
  if conformance server --url "$url" --scenario "$scenario" >/dev/null 2>&1; then
    echo "STALE $scenario (expected to fail, passed: update this script)"
    failed=1
  else
    echo "xfail $scenario"
  fi
done
exit "$failed"
