#!/usr/bin/env bash
# Makes a local PostgreSQL ready for the test suite: installs Debian's `postgresql` when
# it is absent, starts two clusters and creates the test role. Idempotent; run by `.ci/run`
# and, on first use, by the tests themselves (tests/common/pg.rs) when nothing answers.
#
#   main      port 5432: every PostgreSQL test creates its own database here and drops it
#   restart   port 5433: the one cluster a test may restart (the fleet test's outage), so
#             that no other test sees its connections cut
#
# The role `toolhost_test` (password `toolhost-test-secret`, CREATEDB) logs in over TCP on
# 127.0.0.1 with scram-sha-256, so tests use ordinary URLs with a password in them (which
# the host must never print).
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
  echo "pg-setup.sh: run as root (it installs packages and starts clusters as postgres)" >&2
  exit 1
fi

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi

version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)

cluster() { # NAME PORT
  local name=$1 port=$2
  if ! pg_lsclusters -h | awk '{print $1"/"$2}' | grep -qx "$version/$name"; then
    pg_createcluster "$version" "$name" --port "$port" >/dev/null
  fi
  # Tests open many connections (replicas' pools, parallel test binaries).
  pg_conftool "$version" "$name" set max_connections 400 >/dev/null
  if ! pg_lsclusters -h | awk -v c="$version/$name" '$1"/"$2==c {print $4}' | grep -q online; then
    pg_ctlcluster "$version" "$name" start
  fi
  runuser -u postgres -- psql -q -p "$port" -v ON_ERROR_STOP=1 <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'toolhost_test') THEN
    CREATE ROLE toolhost_test LOGIN CREATEDB PASSWORD 'toolhost-test-secret';
  END IF;
END
$$;
SQL
}

cluster main 5432
cluster restart 5433
echo "pg-setup.sh: PostgreSQL $version ready on 127.0.0.1:5432 and :5433"
