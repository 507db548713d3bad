#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, pinned) against
# `toolhost serve --http` serving the Lua tools in tests/conformance/tools-lua, twice: the
# scenarios protocol 2026-07-28 requires (`--requirements 2026-07-28`, stateless, plus the
# Tasks extension's scenarios, which the suite runs but does not score) and those of
# 2025-11-25 (sessions). Prints the suite's summary of each and exits 1 when a scenario
# fails that tests/conformance/expected-failures.yml does not list, or when one it lists
# now passes (stale: delete the entry).
#
# Nothing is expected to fail (tests/conformance/expected-failures.yml lists no scenario;
# docs/mcp-server.md has the per-scenario table).
# Last run (0.2.0-alpha.12, 5 December 2026): 2026-07-28 and 2025-11-25 pass in full: every
# tools-*, server-stateless (30 of 30 checks, the -32021 ones with the fixture
# test_missing_capability, prompts/list_changed with test_trigger_prompt_change), every
# input-required-result-* (17 of 17, a prompt that asks on prompts/get included),
# resources-*, prompts-*, completion-complete, caching (every listing),
# sep-2164-resource-not-found, resources-subscribe and resources-unsubscribe (2025-11-25),
# tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
# elicitation-sep1330-enums, http-header-validation, http-custom-header-server-validation,
# json-schema-2020-12, dns-rebinding-protection, server-sse-multiple-streams,
# server-initialize, server-session-lifecycle, server-sse-polling ([serve]
# sse_poll_after_ms, set below), ping, logging-set-level, and every scenario of the Tasks
# extension (unscored; a task that asks, prepare asking in rounds).
#
# The suite needs Node >= 22 (it uses fs.globSync); the machine may have 20, so Node 22 comes
# from the npm registry's `node` package, installed beside the suite under
# target/conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir="$root/target/conformance"
suite_version=0.2.0-alpha.12
node_version=22.23.3
expected="$root/tests/conformance/expected-failures.yml"
mkdir -p "$dir"

installed() {
  [[ -x "$dir/node_modules/.bin/conformance" && -x "$dir/node_modules/.bin/node" ]] &&
    grep -q "\"version\": \"$suite_version\"" \
      "$dir/node_modules/@modelcontextprotocol/conformance/package.json" 2>/dev/null
}
if ! installed; then
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

log="$dir/server.log"
# The working directory (the tools' fs root) holds tools-lua/, where the fixture
# test_trigger_tool_change adds tools; --watch reloads them and tells subscribers.
live="$dir/live"
rm -rf "$live"
mkdir -p "$live/tools-lua"
# The store (task records) lives in the run's directory, not beside the first tool
# directory (tests/conformance/.toolhost/, in the source tree).
# SSE polling (server-sse-polling): a tools/call still running after 1 s gets its stream
# ended with a priming event; the fixture test_reconnection runs 1.5 s.
printf '[store]\npath = "store.sqlite3"\n[serve]\nsse_poll_after_ms = 1000\n' >"$live/toolhost.toml"
(
  cd "$live"
  exec "$binary" --tools-dir "$root/tests/conformance/tools-lua" --tools-dir "$live/tools-lua" \
    --cache-dir "$dir/cache" serve --http 127.0.0.1:0 --watch 2>"$log"
) &
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
for revision in 2026-07-28 2025-11-25; do
  echo "== requirements $revision"
  out="$dir/results-$revision.txt"
  if conformance server --url "$url" --requirements "$revision" \
    --expected-failures "$expected" >"$out" 2>&1; then
    status=pass
  else
    status=FAIL
    failed=1
  fi
  # The summary and the baseline's verdict (unexpected failures, stale entries).
  sed -n '/=== SUMMARY ===/,$p' "$out"
  echo "== requirements $revision: $status (full output: $out)"
done
exit "$failed"
