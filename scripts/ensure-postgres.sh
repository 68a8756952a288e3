#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers at 127.0.0.1:5432 (or
# $KUKIE_TEST_DATABASE_URL's server, which we then only check). Starts the
# local Debian cluster when it is installed but stopped.
set -euo pipefail

if [ -n "${KUKIE_TEST_DATABASE_URL:-}" ]; then
  exit 0 # an external server: the tests report clearly if it is unreachable
fi
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  exit 0
fi
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "starting local PostgreSQL $version" >&2
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p 5432 && exit 0
    sleep 1
  done
fi
cat >&2 <<'MSG'
No PostgreSQL answers at 127.0.0.1:5432.
Install one (Debian: apt-get install postgresql; then allow trust auth for
127.0.0.1 as user postgres) or set KUKIE_TEST_DATABASE_URL (tests) /
KUKIE_DATABASE_URL (make run) to a server where you may CREATE DATABASE.
MSG
exit 1
