#!/usr/bin/env bash
# `make run`: the server on the local PostgreSQL and a sandbox Kubernetes
# cluster with Argo CD fixture apps, plus tokens and curl lines to try them.
# Ctrl-C stops everything it started.
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

mkdir -p bin .dev/sandbox
go build -o bin/kukie-server ./cmd/kukie-server
go build -o bin/kukie-devtoken ./cmd/kukie-devtoken
go build -o bin/kukie-sandbox ./cmd/kukie-sandbox

# The sandbox cluster and the server are stopped when this script ends,
# whether by Ctrl-C (the whole process group) or a signal to the script.
server=""
rm -f .dev/sandbox/clusters.yaml
bin/kukie-sandbox -dir .dev/sandbox -team demo &
sandbox=$!
cleanup() {
  [ -n "$server" ] && { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
  kill -TERM "$sandbox" 2>/dev/null || true
  wait "$sandbox" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 120); do
  [ -f .dev/sandbox/clusters.yaml ] && break
  kill -0 "$sandbox" 2>/dev/null || { echo "the sandbox cluster failed to start" >&2; exit 1; }
  sleep 0.5
done
[ -f .dev/sandbox/clusters.yaml ] || { echo "the sandbox cluster did not start in 60 s" >&2; exit 1; }
export KUKIE_STATIC_CLUSTERS_FILE=$PWD/.dev/sandbox/clusters.yaml

agent=$(bin/kukie-devtoken -sub dev-user -team demo -roles agent)
member=$(bin/kukie-devtoken -sub dev-user -team demo -roles member)
admin=$(bin/kukie-devtoken -sub dev-admin -team demo -roles admin)
api="http://$KUKIE_HTTP_ADDR"
cat <<MSG

Kukie GitOps server (development)
  API:      $api        docs: $api/docs
  Admin:    http://$KUKIE_ADMIN_ADDR/healthz  /readyz  /metrics
  Sandbox:  clusters "sandbox" (full) and "sandbox-limited" of team demo (.dev/sandbox/)

Development tokens (12 h; team demo):
  AGENT=$agent
  MEMBER=$member
  ADMIN=$admin

Try:
  curl -s $api/v1/argocd/clusters -H "Authorization: Bearer \$MEMBER"
  curl -s $api/v1/clusters/sandbox/argocd/applications -H "Authorization: Bearer \$MEMBER"
  curl -s $api/v1/clusters/sandbox/argocd/applications/sandbox-plain -H "Authorization: Bearer \$MEMBER"
  curl -s -X POST $api/v1/clusters/sandbox/argocd/ownership -H "Authorization: Bearer \$AGENT" \\
    -H 'Content-Type: application/json' -d '{"resources":[{"kind":"deploy","namespace":"sandbox-plain","name":"web","changed_fields":["/spec/replicas"]}]}'
  curl -s $api/v1/clusters/sandbox/argocd/applications/sandbox-plain/kukie-history -H "Authorization: Bearer \$MEMBER"
  curl -s -X PUT $api/v1/clusters/sandbox/gitops-repo -H "Authorization: Bearer \$ADMIN" \\
    -H 'Content-Type: application/json' -d '{"repo_url":"https://github.com/example-org/kukie-gitops-sandbox"}'
  curl -s $api/v1/plans -H "Authorization: Bearer \$AGENT" -H 'Content-Type: application/json' \\
    -d '{"cluster_id":"sandbox","conversation_id":"c1","visibility":"shared","tool":"apply_manifest","command":"kubectl -n sandbox-plain scale deploy/web --replicas=3","resources":[{"group":"apps","kind":"Deployment","namespace":"sandbox-plain","name":"web"}],"payload":{}}'
  curl -s $api/v1/plans -H "Authorization: Bearer \$MEMBER"

MSG
bin/kukie-server serve &
server=$!
wait "$server"
