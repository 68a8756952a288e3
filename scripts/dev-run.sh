#!/usr/bin/env bash
# `make run`: the server on the local PostgreSQL, tokens and curl lines to
# try it, and a sandbox Kubernetes cluster with Argo CD fixture apps.
#
# The API starts at once. The sandbox needs kube-apiserver and etcd from
# `make tools` (10–15 minutes the first time, then cached): they are built in
# the background with progress lines ("tools: ..."), and when they are ready
# the sandbox starts and the server is restarted with it attached as static
# clusters. Ctrl-C, SIGTERM or a closed terminal (SIGHUP) stops everything it
# started.
set -euo pipefail
cd "$(dirname "$0")/.."

db_url_given=${KUKIE_DATABASE_URL:+yes}
: "${KUKIE_DATABASE_URL:=postgres://postgres@127.0.0.1:5432/kukie?sslmode=disable}"
: "${KUKIE_AUTH_HS256_SECRET:=kukie-local-development-secret-do-not-use-in-production}"
: "${KUKIE_HTTP_ADDR:=127.0.0.1:8080}"
: "${KUKIE_ADMIN_ADDR:=127.0.0.1:9090}"
: "${KUKIE_SHUTDOWN_DELAY:=0s}"
export KUKIE_DATABASE_URL KUKIE_AUTH_HS256_SECRET KUKIE_HTTP_ADDR KUKIE_ADMIN_ADDR KUKIE_SHUTDOWN_DELAY
export KUKIE_MIGRATE_ON_START=true

say() { echo "make run: $*" >&2; }

# answers HOST:PORT: something accepts TCP connections there (":9090" means
# this machine). Plain bash, so no PostgreSQL or curl client is needed.
answers() {
  local host=${1%:*} port=${1##*:}
  (exec 3<>"/dev/tcp/${host:-127.0.0.1}/$port") 2>/dev/null
}

# The local PostgreSQL: started when it is installed but stopped. A server
# named by KUKIE_DATABASE_URL is the user's; migrate reports if it is down.
if [ -z "$db_url_given" ] && ! answers 127.0.0.1:5432; then
  scripts/ensure-postgres.sh
fi

mkdir -p bin .dev/sandbox .dev/pids

# Pid files: each process this script starts is recorded with its command
# line, so the next `make run` ends what an unclean stop (a SIGKILL) left
# running — only a process whose /proc/<pid>/cmdline is still the recorded
# one, never an unrelated process that got the pid since. The sandbox's
# kube-apiserver and etcd die with the sandbox (PR_SET_PDEATHSIG).
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }
remember() { # name pid binary: once the child has exec'd binary
  for _ in $(seq 1 50); do
    case "$(cmdline_of "$2")" in *"$3"*) break ;; esac
    sleep 0.1
  done
  { echo "$2"; cmdline_of "$2"; } >".dev/pids/$1"
}
forget() { rm -f ".dev/pids/$1"; }
end_leftovers() {
  local f pid want
  for f in .dev/pids/*; do
    [ -f "$f" ] || continue
    pid=$(sed -n 1p "$f") want=$(sed -n 2p "$f")
    if [ -n "$pid" ] && [ -n "$want" ] && [ "$(cmdline_of "$pid")" = "$want" ]; then
      say "ending $(basename "$f") (pid $pid) left by an earlier make run"
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}
end_leftovers
go build -o bin/kukie-server ./cmd/kukie-server
go build -o bin/kukie-devtoken ./cmd/kukie-devtoken
go build -o bin/kukie-sandbox ./cmd/kukie-sandbox
bin/kukie-server migrate up --create-database # creates the database when it is missing

server="" sandbox="" tools=""
rm -f .dev/sandbox/clusters.yaml .dev/tools.out
cleanup() {
  trap - INT TERM HUP
  [ -n "$server" ] && { kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
  [ -n "$sandbox" ] && { kill -TERM "$sandbox" 2>/dev/null || true; wait "$sandbox" 2>/dev/null || true; }
  # The tools build runs in its own process group (see below): stop all of it.
  [ -n "$tools" ] && { kill -TERM -- "-$tools" 2>/dev/null || true; wait "$tools" 2>/dev/null || true; }
  forget server
  forget sandbox
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A closed terminal (SIGHUP) stops everything too.
trap 'exit 129' HUP

# The tools build, in the background and in its own process group so that
# cleanup can stop its `go build` children too. Progress goes to stderr; the
# binary directory is the last line of its stdout.
if [ -n "${KUKIE_K8S_ASSETS:-}" ]; then
  echo "$KUKIE_K8S_ASSETS" >.dev/tools.out
  (exit 0) &
else
  setsid scripts/tools.sh >.dev/tools.out &
fi
tools=$!

# Until the sandbox runs, its two clusters are registered with a kubeconfig
# that points at a closed port: plans and history work at once, and cluster
# reads answer cluster_unreachable. The restart below attaches the real ones.
cat >.dev/sandbox/pending.kubeconfig <<'YAML'
apiVersion: v1
kind: Config
clusters: [{name: pending, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: pending, user: {token: "sandbox-not-started-yet"}}]
contexts: [{name: pending, context: {cluster: pending, user: pending}}]
current-context: pending
YAML
cat >.dev/sandbox/pending-clusters.yaml <<YAML
# Written by make run until the sandbox cluster has started.
clusters:
  - {id: sandbox, team: demo, name: Sandbox (full access), kubeconfig: $PWD/.dev/sandbox/pending.kubeconfig, access_level: full, argocd_namespace: argocd}
  - {id: sandbox-limited, team: demo, name: Sandbox (limited access), kubeconfig: $PWD/.dev/sandbox/pending.kubeconfig, access_level: limited, namespaces: [sandbox-plain, sandbox-kustomize, sandbox-helm]}
YAML
export KUKIE_STATIC_CLUSTERS_FILE=$PWD/.dev/sandbox/pending-clusters.yaml

start_server() {
  local addr
  for addr in "$KUKIE_HTTP_ADDR" "$KUKIE_ADMIN_ADDR"; do
    if answers "$addr"; then say "something already listens on $addr (another make run?)"; exit 1; fi
  done
  bin/kukie-server serve &
  server=$!
  remember server "$server" bin/kukie-server
  for _ in $(seq 1 100); do
    answers "$KUKIE_ADMIN_ADDR" && answers "$KUKIE_HTTP_ADDR" && return 0
    kill -0 "$server" 2>/dev/null || { wait "$server" || true; server=""; say "the server failed to start (see above)"; exit 1; }
    sleep 0.1
  done
  say "the server did not listen on $KUKIE_HTTP_ADDR within 10 s"
  exit 1
}
start_server

agent=$(bin/kukie-devtoken -sub dev-user -team demo -roles agent)
member=$(bin/kukie-devtoken -sub dev-user -team demo -roles member)
admin=$(bin/kukie-devtoken -sub dev-admin -team demo -roles admin)
api="http://$KUKIE_HTTP_ADDR"
cat <<MSG

Kukie GitOps server (development) — the API is up
  API:      $api        docs: $api/docs
  Admin:    http://$KUKIE_ADMIN_ADDR/healthz  /readyz  /metrics
  Sandbox:  clusters "sandbox" (full) and "sandbox-limited" of team demo. Their kube-apiserver
            starts when \`make tools\` has built it ("tools: ..." lines show progress; 10–15 min
            the first time, seconds afterwards) and the server restarts to attach it; until
            then plans work and cluster reads answer cluster_unreachable.

Development tokens (12 h; team demo):
  AGENT=$agent
  MEMBER=$member
  ADMIN=$admin

Try:
  curl -s $api/v1/plans -H "Authorization: Bearer \$AGENT" -H 'Content-Type: application/json' \\
    -d '{"cluster_id":"sandbox","conversation_id":"c1","visibility":"shared","tool":"apply_manifest","command":"kubectl -n sandbox-plain scale deploy/web --replicas=3","resources":[{"group":"apps","kind":"Deployment","namespace":"sandbox-plain","name":"web"}],"payload":{}}'
  curl -s $api/v1/plans -H "Authorization: Bearer \$MEMBER"
Once the sandbox is attached:
  curl -s $api/v1/argocd/clusters -H "Authorization: Bearer \$MEMBER"
  curl -s $api/v1/clusters/sandbox/argocd/applications -H "Authorization: Bearer \$MEMBER"
  curl -s $api/v1/clusters/sandbox/argocd/applications/sandbox-plain -H "Authorization: Bearer \$MEMBER"
  curl -s -X POST $api/v1/clusters/sandbox/argocd/ownership -H "Authorization: Bearer \$AGENT" \\
    -H 'Content-Type: application/json' -d '{"resources":[{"kind":"deploy","namespace":"sandbox-plain","name":"web","changed_fields":["/spec/replicas"]}]}'
  curl -s $api/v1/clusters/sandbox/argocd/applications/sandbox-plain/kukie-history -H "Authorization: Bearer \$MEMBER"
  curl -s -X PUT $api/v1/clusters/sandbox/gitops-repo -H "Authorization: Bearer \$ADMIN" \\
    -H 'Content-Type: application/json' -d '{"repo_url":"https://github.com/example-org/kukie-gitops-sandbox"}'

MSG

# Wait for the tools build while watching the server.
while kill -0 "$tools" 2>/dev/null; do
  kill -0 "$server" 2>/dev/null || { wait "$server" || true; server=""; say "the server stopped"; exit 1; }
  sleep 1
done
if ! wait "$tools"; then
  tools=""
  say "building kube-apiserver and etcd failed (see above): the API keeps running without the sandbox"
  wait "$server"
  exit
fi
tools=""
assets=$(tail -n 1 .dev/tools.out)

say "kube-apiserver and etcd ready in $assets; starting the sandbox cluster"
KUKIE_K8S_ASSETS=$assets bin/kukie-sandbox -dir .dev/sandbox -team demo &
sandbox=$!
remember sandbox "$sandbox" bin/kukie-sandbox
for _ in $(seq 1 240); do
  [ -f .dev/sandbox/clusters.yaml ] && break
  kill -0 "$sandbox" 2>/dev/null || { sandbox=""; say "the sandbox cluster failed to start (see above): the API keeps running without it"; wait "$server"; exit; }
  sleep 0.5
done
if [ ! -f .dev/sandbox/clusters.yaml ]; then
  say "the sandbox cluster did not start in 120 s: the API keeps running without it"
  wait "$server"
  exit
fi

say "restarting the server with the sandbox clusters attached (KUKIE_STATIC_CLUSTERS_FILE=.dev/sandbox/clusters.yaml)"
export KUKIE_STATIC_CLUSTERS_FILE=$PWD/.dev/sandbox/clusters.yaml
kill -TERM "$server"
wait "$server" || true
server=""
start_server
say "sandbox attached: clusters \"sandbox\" and \"sandbox-limited\" of team demo; the Argo CD curl lines above work now"
wait "$server"
