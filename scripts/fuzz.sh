#!/usr/bin/env bash
# Fuzzes the discovery check (prefilter, nesting guard, full_moon top-level rule) and the
# argument coercion with many more generated cases than the test suite runs: the property
# tests in src/discovery/fuzz_tests.rs and src/dispatch/coerce_props.rs (library unit tests).
#
#   scripts/fuzz.sh [CASES]     (default 20000 per property)
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-20000}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
TOOLHOST_FUZZ_CASES="$cases" \
  cargo test --release --lib -- discovery::fuzz_tests:: dispatch::coerce_props:: 2>&1 | tee "$out"
# A filter that matches nothing passes silently: make sure the properties really ran.
ran=$(grep -Eo 'test result: ok\. [0-9]+ passed' "$out" | grep -Eo '[0-9]+' | head -1)
if [[ -z "$ran" || "$ran" -lt 5 ]]; then
  echo "fuzz: expected the fuzz properties to run, ${ran:-0} tests ran" >&2
  exit 1
fi
echo "fuzz: $cases cases per property, $ran tests, 0 crashes"
