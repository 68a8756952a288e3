#!/usr/bin/env bash
# `make run`: the server on the local PostgreSQL with a local world that
# shows every feature (kukie-sandbox): a Git server holding the sandbox
# GitOps repository, a local AWS account (STS, EKS and CloudFormation
# stand-ins) with the SNS stand-in, and a sandbox Kubernetes cluster with
# Argo CD fixture apps. It prints development tokens and the lines of
# docs/try-it.json stage by stage:
#   1. the API, at once;
#   2. the Git world (seconds);
#   3. the sandbox cluster and the AWS account, once `make tools` has built
#      kube-apiserver and etcd (10–15 minutes the first time, then cached);
# then one line saying the whole world is ready. Ctrl-C, SIGTERM or a closed
# terminal (SIGHUP) stops everything it started.
#
# KUKIE_DEV_DIR (default .dev) holds the built binaries, the world's files
# and the pid files; the end-to-end test of the printed lines points it at a
# temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 077 # tokens, keys and kubeconfigs are written under .dev

db_url_given=${KUKIE_DATABASE_URL:+yes}
: "${KUKIE_DATABASE_URL:=postgres://postgres@127.0.0.1:5432/kukie?sslmode=disable}"
: "${KUKIE_AUTH_HS256_SECRET:=kukie-local-development-secret-do-not-use-in-production}"
# A fixed development key for the repo tab's stored tokens — never use it in production.
: "${KUKIE_SECRET_KEYS:=dev:a3VraWUtbG9jYWwtZGV2ZWxvcG1lbnQta2V5LTMyYnk=}"
: "${KUKIE_HTTP_ADDR:=127.0.0.1:8080}"
: "${KUKIE_ADMIN_ADDR:=127.0.0.1:9090}"
: "${KUKIE_SHUTDOWN_DELAY:=0s}"
export KUKIE_DATABASE_URL KUKIE_AUTH_HS256_SECRET KUKIE_SECRET_KEYS KUKIE_HTTP_ADDR KUKIE_ADMIN_ADDR KUKIE_SHUTDOWN_DELAY
export KUKIE_MIGRATE_ON_START=true

mkdir -p "${KUKIE_DEV_DIR:=.dev}"
dev=$(cd "$KUKIE_DEV_DIR" && pwd)
export KUKIE_DEV_DIR=$dev
world=$dev/sandbox
bin=$dev/bin
# How the printed lines call the sandbox binary: relative to this checkout
# when the directory is inside it.
sandbox_cmd=$bin/kukie-sandbox
case "$sandbox_cmd" in "$PWD"/*) sandbox_cmd=${sandbox_cmd#"$PWD"/} ;; esac

say() { echo "make run: $*" >&2; }
stage() { echo "make run: [$(( SECONDS ))s] $*" >&2; }

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

mkdir -p "$bin" "$world" "$dev/pids"

# Pid files: each process this script starts is recorded with its command
# line, so the next `make run` ends what an unclean stop (a SIGKILL) left
# running — only a process whose /proc/<pid>/cmdline is still the recorded
# one, never an unrelated process that got the pid since. The server and the
# sandbox also get a parent-death signal (setpriv, where util-linux has it),
# and the sandbox's kube-apiserver and etcd die with the sandbox
# (PR_SET_PDEATHSIG, set by the sandbox itself).
cmdline_of() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null; }
remember() { # name pid binary: once the child has exec'd $bin/binary
  for _ in $(seq 1 50); do
    case "$(cmdline_of "$2")" in "$bin/$3 "*) break ;; esac
    sleep 0.1
  done
  { echo "$2"; cmdline_of "$2"; } >"$dev/pids/$1"
}
forget() { rm -f "$dev/pids/$1"; }
end_leftovers() {
  local f pid want
  for f in "$dev"/pids/*; do
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
pdeath=()
if command -v setpriv >/dev/null && setpriv --help 2>&1 | grep -q -- --pdeathsig; then
  pdeath=(setpriv --pdeathsig TERM --)
fi

# The same flags as `make build` (static, -trimpath), so the build cache is shared.
for cmd in kukie-server kukie-devtoken kukie-sandbox; do
  CGO_ENABLED=0 go build -trimpath -o "$bin/$cmd" "./cmd/$cmd"
done
"$bin/kukie-server" migrate up --create-database # creates the database when it is missing

server="" sandbox="" tools="" helper=""
rm -f "$dev/tools.out"
# stop PID: SIGTERM, then SIGKILL if it has not ended within 40 s (the
# server drains in-flight requests for up to KUKIE_SHUTDOWN_TIMEOUT, 30 s).
# A child that has ended but is not yet waited for is a zombie (state Z).
ended() { [ ! -e "/proc/$1/stat" ] || [ "$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
stop() {
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 400); do ended "$1" && break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  trap - INT TERM HUP
  [ -n "$helper" ] && { kill -TERM "$helper" 2>/dev/null || true; }
  [ -n "$server" ] && stop "$server"
  [ -n "$sandbox" ] && stop "$sandbox"
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

# The local world: Git, AWS and SNS at once; it writes the server's
# environment (CA bundle, proxy, AWS endpoints) before anything else.
${pdeath[@]+"${pdeath[@]}"} "$bin/kukie-sandbox" -dir "$world" -team demo -api "http://$KUKIE_HTTP_ADDR" &
sandbox=$!
remember sandbox "$sandbox" kukie-sandbox
for _ in $(seq 1 300); do
  [ -f "$world/world.json" ] && break
  kill -0 "$sandbox" 2>/dev/null || { wait "$sandbox" || true; sandbox=""; break; }
  sleep 0.1
done
# The server's environment for the world (CA bundle, proxy, AWS endpoints):
# given to the server alone, never to this script's other children (the tools
# build must not download modules through the SNS stand-in's proxy).
server_env=""
if [ -n "$sandbox" ] && [ -f "$world/world.json" ]; then
  server_env=$world/server.env
else
  say "the local world did not start (see above): the API runs without the Git and AWS worlds"
fi

# The tools build, in the background and in its own process group so that
# cleanup can stop its `go build` children too. Progress goes to stderr; the
# binary directory is the last line of its stdout.
if [ -n "${KUKIE_K8S_ASSETS:-}" ]; then
  echo "$KUKIE_K8S_ASSETS" >"$dev/tools.out"
  (exit 0) &
else
  setsid scripts/tools.sh >"$dev/tools.out" &
fi
tools=$!

# Until the sandbox cluster runs, its two static clusters are registered
# with a kubeconfig that points at a closed port: plans and the repo tab
# work at once, and cluster reads answer cluster_unreachable. The restart
# below attaches the real ones.
cat >"$world/pending.kubeconfig" <<'YAML'
apiVersion: v1
kind: Config
clusters: [{name: pending, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: pending, user: {token: "sandbox-not-started-yet"}}]
contexts: [{name: pending, context: {cluster: pending, user: pending}}]
current-context: pending
YAML
cat >"$world/pending-clusters.yaml" <<YAML
# Written by make run until the sandbox cluster has started.
clusters:
  - {id: sandbox, team: demo, name: Sandbox (full access), kubeconfig: $world/pending.kubeconfig, access_level: full, argocd_namespace: argocd}
  - {id: sandbox-limited, team: demo, name: Sandbox (limited access), kubeconfig: $world/pending.kubeconfig, access_level: limited, namespaces: [sandbox-plain, sandbox-kustomize, sandbox-helm]}
YAML
export KUKIE_STATIC_CLUSTERS_FILE=$world/pending-clusters.yaml

start_server() {
  local addr
  for addr in "$KUKIE_HTTP_ADDR" "$KUKIE_ADMIN_ADDR"; do
    if answers "$addr"; then say "something already listens on $addr (another make run?)"; exit 1; fi
  done
  (
    # shellcheck disable=SC1090
    [ -z "$server_env" ] || . "$server_env"
    exec ${pdeath[@]+"${pdeath[@]}"} "$bin/kukie-server" serve
  ) &
  server=$!
  remember server "$server" kukie-server
  for _ in $(seq 1 100); do
    answers "$KUKIE_ADMIN_ADDR" && answers "$KUKIE_HTTP_ADDR" && return 0
    kill -0 "$server" 2>/dev/null || { wait "$server" || true; server=""; say "the server failed to start (see above)"; exit 1; }
    sleep 0.1
  done
  say "the server did not listen on $KUKIE_HTTP_ADDR within 10 s"
  exit 1
}
start_server

agent=$("$bin/kukie-devtoken" -sub dev-user -team demo -roles agent)
member=$("$bin/kukie-devtoken" -sub dev-user -team demo -roles member)
admin=$("$bin/kukie-devtoken" -sub dev-admin -team demo -roles admin)
api="http://$KUKIE_HTTP_ADDR"
lines() { "$bin/kukie-sandbox" lines -dir "$world" -api "$api" -sandbox "$sandbox_cmd" -stage "$1"; }
stage "1/3 the API is up"
cat <<MSG

Kukie GitOps server (development)
  API:      $api        docs: $api/docs
  Admin:    http://$KUKIE_ADMIN_ADDR/healthz  /readyz  /metrics
  World:    $world (Git server, AWS and SNS stand-ins; the sandbox cluster once \`make tools\` is done)

Development tokens (12 h; team demo) — paste these into your shell first:
  export AGENT=$agent
  export MEMBER=$member
  export ADMIN=$admin

Try (every line is in docs/try-it.json; the README lists them by feature):
MSG
lines api

if [ -z "$sandbox" ]; then
  wait "$server"
  exit
fi
stage "2/3 the Git world is up: $(sed -n 's/.*"GIT_URL": "\(.*\)".*/\1/p' "$world/world.json")"
lines git
echo

# Wait for the tools build while watching the server and the sandbox.
while kill -0 "$tools" 2>/dev/null; do
  kill -0 "$server" 2>/dev/null || { wait "$server" || true; server=""; say "the server stopped"; exit 1; }
  kill -0 "$sandbox" 2>/dev/null || { wait "$sandbox" || true; sandbox=""; say "the sandbox stopped"; exit 1; }
  sleep 1
done
if ! wait "$tools"; then
  tools=""
  say "building kube-apiserver and etcd failed (see above): the API and the Git world keep running without the cluster"
  wait "$server"
  exit
fi
tools=""
assets=$(tail -n 1 "$dev/tools.out")

say "kube-apiserver and etcd ready in $assets; starting the sandbox cluster, its EKS clusters and the AWS account"
# In the background, so that a signal is handled at once.
"$bin/kukie-sandbox" cluster -dir "$world" -assets "$assets" >"$dev/cluster.out" &
helper=$!
if ! wait "$helper"; then
  helper=""
  say "the sandbox cluster failed to start (see above): the API and the Git world keep running without it"
  wait "$server"
  exit
fi
helper=""

say "restarting the server with the sandbox clusters attached (KUKIE_STATIC_CLUSTERS_FILE=$world/clusters.yaml)"
export KUKIE_STATIC_CLUSTERS_FILE=$world/clusters.yaml
stop "$server"
server=""
start_server
stage "3/3 the sandbox cluster (static clusters sandbox, sandbox-limited) and the AWS account (EKS clusters $(sed -n 's/.*"EKS_CLUSTER": "\(.*\)".*/\1/p' "$world/world.json"), $(sed -n 's/.*"EKS_CLUSTER_2": "\(.*\)".*/\1/p' "$world/world.json")) are up"
lines cluster
echo
stage "the whole world is ready: every line above works now"
wait "$server"
