#!/usr/bin/env bash
# Builds the test Kubernetes control plane (kube-apiserver, etcd, kubectl) from the
# pinned tools modules into a cache outside the repository, keyed by version
# and guarded by a file lock, so clean clones and later runs reuse it.
# Prints the binary directory on its last line.
# Cold: about 10 minutes on 2 cores; warm: instant.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=/dev/null
. tools/versions.env

cache_root=${KUKIE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kukie-tools}
dir="$cache_root/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$dir"

ready() { [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] && [ -x "$dir/kubectl" ]; }
if ready; then
  echo "$dir"
  exit 0
fi

exec 9>"$dir/.lock"
echo "tools: waiting for the build lock ($dir/.lock)" >&2
flock 9
if ready; then # another process built them while we waited
  echo "$dir"
  exit 0
fi

# build NAME MODULE_DIR PACKAGE: go build with a progress line every 30 s
# (skipped when the binary is already there).
build() {
  local name=$1 module=$2 pkg=$3 log start pid
  [ -x "$dir/$name" ] && return 0
  log=$(mktemp)
  start=$(date +%s)
  echo "tools: building $name ($pkg) ..." >&2
  (cd "$module" && go build -v -o "$dir/$name.tmp" "$pkg") >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 30
    kill -0 "$pid" 2>/dev/null && echo "tools: $name: $(( $(date +%s) - start )) s, $(wc -l <"$log") packages compiled" >&2
  done
  if ! wait "$pid"; then
    cat "$log" >&2
    rm -f "$log"
    echo "tools: building $name failed" >&2
    exit 1
  fi
  rm -f "$log"
  mv "$dir/$name.tmp" "$dir/$name"
  echo "tools: $name built in $(( $(date +%s) - start )) s" >&2
}

grep -q "k8s.io/kubernetes $KUBERNETES_VERSION" tools/kube-apiserver/go.mod || { echo "tools/kube-apiserver/go.mod does not pin $KUBERNETES_VERSION" >&2; exit 1; }
grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" tools/etcd/go.mod || { echo "tools/etcd/go.mod does not pin $ETCD_VERSION" >&2; exit 1; }
build etcd tools/etcd .
build kube-apiserver tools/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl tools/kube-apiserver k8s.io/kubernetes/cmd/kubectl # for `make bench` and envtest
echo "$dir"
