#!/usr/bin/env bash
# Fuzzes the discovery check (prefilter, nesting guard, full_moon top-level rule) and the
# argument coercion with many more generated cases than the test suite runs.
#
#   scripts/fuzz.sh [CASES]     (default 20000 per property)
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-20000}"
TOOLHOST_FUZZ_CASES="$cases" PROPTEST_CASES="$cases" \
  cargo test --release --test fuzz_discovery --test coercion_props -- --nocapture
echo "fuzz: $cases cases per property, 0 crashes"
