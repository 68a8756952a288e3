#!/usr/bin/env bash
# Load test of the plan API with wrk (Debian package `wrk`) against a local
# server on a throwaway database. Prints wrk's reports; docs/benchmarks.md
# records the numbers. Usage: scripts/loadtest.sh [duration] [connections]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-20s}
conns=${2:-16}
command -v wrk >/dev/null || { echo "wrk is required: apt-get install wrk" >&2; exit 1; }
scripts/ensure-postgres.sh

db=kukie_load_$$
psql "postgres://postgres@127.0.0.1:5432/postgres" -qc "CREATE DATABASE $db"
export KUKIE_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
export KUKIE_AUTH_HS256_SECRET=load-test-secret-load-test-secret-123456
export KUKIE_HTTP_ADDR=127.0.0.1:18181 KUKIE_ADMIN_ADDR=127.0.0.1:19191
export KUKIE_MIGRATE_ON_START=true KUKIE_SHUTDOWN_DELAY=0s KUKIE_LOG_LEVEL=warn
mkdir -p bin
go build -o bin/kukie-server ./cmd/kukie-server
go build -o bin/kukie-devtoken ./cmd/kukie-devtoken
bin/kukie-server serve > /dev/null &
server=$!
cleanup() {
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  psql "postgres://postgres@127.0.0.1:5432/postgres" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
}
trap cleanup EXIT
for _ in $(seq 1 50); do curl -sf "http://$KUKIE_ADMIN_ADDR/readyz" >/dev/null && break; sleep 0.2; done

export AGENT=$(bin/kukie-devtoken -roles agent -team load -sub u1)
export MEMBER=$(bin/kukie-devtoken -roles member -team load -sub u1)
api="http://$KUKIE_HTTP_ADDR"

echo "== POST /v1/plans ($duration, $conns connections)"
wrk -t2 -c"$conns" -d"$duration" --latency -s scripts/load/create.lua "$api/v1/plans"
# Autovacuum would analyze the freshly loaded tables within a minute; do it
# now so the reads below run with the plans production gets.
psql "$KUKIE_DATABASE_URL" -qc "ANALYZE"
id=$(curl -sf "$api/v1/plans?limit=1" -H "Authorization: Bearer $MEMBER" | sed -E 's/.*"id":"([^"]+)".*/\1/' | head -c 36)
echo "== GET /v1/plans (newest 50)"
wrk -t2 -c"$conns" -d"$duration" --latency -s scripts/load/get.lua "$api/v1/plans"
echo "== GET /v1/plans?kind=deployment&name=api&cluster_id=bench&limit=20"
wrk -t2 -c"$conns" -d"$duration" --latency -s scripts/load/get.lua "$api/v1/plans?kind=deployment&name=api&cluster_id=bench&limit=20"
echo "== GET /v1/plans/{id}"
wrk -t2 -c"$conns" -d"$duration" --latency -s scripts/load/get.lua "$api/v1/plans/$id"
echo "== plans stored: $(psql "$KUKIE_DATABASE_URL" -tAc 'SELECT count(*) FROM plans')"
