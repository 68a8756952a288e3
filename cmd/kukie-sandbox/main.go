// Command kukie-sandbox runs the local sandbox cluster for `make run`: a
// real kube-apiserver and etcd (from `make tools`) with Kukie's Application
// CRD and the same fixture apps the tests use. It writes kubeconfigs and a
// static clusters file registering the sandbox for the "demo" team, then
// runs until SIGINT, SIGTERM or SIGHUP.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

func main() {
	execShimmed() // as kube-apiserver or etcd: exec the real one, never returns
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kukie-sandbox:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", ".dev/sandbox", "where to write kubeconfigs and clusters.yaml")
	team := flag.String("team", "demo", "the team the sandbox clusters belong to")
	flag.Parse()
	// SIGHUP too: a closed terminal stops the sandbox and its apiserver and etcd.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	clustersFile := filepath.Join(*dir, "clusters.yaml")
	_ = os.Remove(clustersFile) // written again once the cluster is up: its presence means ready
	real, err := k8stest.AssetsDir()
	if err != nil {
		return err
	}
	bin, err := shimAssets(filepath.Join(*dir, "bin"), real)
	if err != nil {
		return err
	}
	if err := os.Setenv("KUKIE_K8S_ASSETS", bin); err != nil {
		return err
	}
	cluster, err := k8stest.Start(k8stest.Options{ArgoCD: true})
	if err != nil {
		return err
	}
	defer cluster.Stop()

	write := func(user string) (string, error) {
		b, err := cluster.Kubeconfig(user)
		if err != nil {
			return "", err
		}
		path, err := filepath.Abs(filepath.Join(*dir, user+".kubeconfig"))
		if err != nil {
			return "", err
		}
		return path, os.WriteFile(path, b, 0o600)
	}
	admin, err := write(k8stest.UserAdmin)
	if err != nil {
		return err
	}
	limited, err := write(k8stest.UserLimited)
	if err != nil {
		return err
	}
	content := fmt.Sprintf(`# Written by kukie-sandbox; removed and rewritten at each start.
clusters:
  - id: sandbox
    team: %[1]s
    name: Sandbox (full access)
    kubeconfig: %[2]s
    access_level: full
    argocd_namespace: argocd
  - id: sandbox-limited
    team: %[1]s
    name: Sandbox (limited access)
    kubeconfig: %[3]s
    access_level: limited
    namespaces: [sandbox-plain, sandbox-kustomize, sandbox-helm]
`, *team, admin, limited)
	tmp := clustersFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, clustersFile); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kukie-sandbox: kube-apiserver at %s; clusters file %s\n", cluster.Host(), clustersFile)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "kukie-sandbox: stopping")
	return nil
}
