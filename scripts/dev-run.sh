#!/usr/bin/env bash
# `make run`: a local server on the local PostgreSQL with a development
# secret, plus tokens and curl examples to try it.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${KUKIE_DATABASE_URL:=postgres://postgres@127.0.0.1:5432/kukie?sslmode=disable}"
: "${KUKIE_AUTH_HS256_SECRET:=kukie-local-development-secret-do-not-use-in-production}"
: "${KUKIE_HTTP_ADDR:=127.0.0.1:8080}"
: "${KUKIE_ADMIN_ADDR:=127.0.0.1:9090}"
: "${KUKIE_SHUTDOWN_DELAY:=0s}"
export KUKIE_DATABASE_URL KUKIE_AUTH_HS256_SECRET KUKIE_HTTP_ADDR KUKIE_ADMIN_ADDR KUKIE_SHUTDOWN_DELAY
export KUKIE_MIGRATE_ON_START=true

scripts/ensure-postgres.sh
# Create the development database when it does not exist yet.
db=$(sed -E 's#^[a-z]+://[^/]*/([^?]*).*#\1#' <<<"$KUKIE_DATABASE_URL")
admin_url=$(sed -E "s#^([a-z]+://[^/]*/)[^?]*#\1postgres#" <<<"$KUKIE_DATABASE_URL")
if ! psql "$admin_url" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  psql "$admin_url" -qc "CREATE DATABASE \"$db\""
  echo "created database $db"
fi

mkdir -p bin
go build -o bin/kukie-server ./cmd/kukie-server
go build -o bin/kukie-devtoken ./cmd/kukie-devtoken
agent=$(bin/kukie-devtoken -sub dev-user -team dev-team -roles agent)
member=$(bin/kukie-devtoken -sub dev-user -team dev-team -roles member)
api="http://$KUKIE_HTTP_ADDR"
cat <<MSG

Kukie GitOps server (development)
  API:      $api        docs: $api/docs
  Admin:    http://$KUKIE_ADMIN_ADDR/healthz  /readyz  /metrics

Development tokens (12 h; team dev-team, user dev-user):
  AGENT=$agent
  MEMBER=$member

Try:
  curl -s $api/v1/team -H "Authorization: Bearer \$MEMBER"
  curl -s $api/v1/plans -H "Authorization: Bearer \$AGENT" -H 'Content-Type: application/json' \\
    -d '{"cluster_id":"dev","conversation_id":"c1","visibility":"shared","tool":"apply_manifest","command":"kubectl scale deploy/web --replicas=3","resources":[{"group":"apps","kind":"Deployment","namespace":"default","name":"web"}],"payload":{}}'
  curl -s $api/v1/plans -H "Authorization: Bearer \$MEMBER"
  curl -s -X POST $api/v1/plans/<id>/approve -H "Authorization: Bearer \$MEMBER"

MSG
exec bin/kukie-server serve
