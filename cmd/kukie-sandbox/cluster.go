package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kukie/gitops-server/internal/testkit/awsfake"
	"github.com/kukie/gitops-server/internal/testkit/ekssim"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

// sandboxApps are the fixture Applications whose sources the Git world
// holds: the sandbox writes copies of them pointing at it.
var sandboxApps = []string{"sandbox-plain", "sandbox-kustomize", "sandbox-helm"}

var applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// startCluster starts the sandbox cluster from the kube-apiserver and etcd
// in assets: a real API server with the Argo CD fixtures, standing for the
// static clusters "sandbox" and "sandbox-limited" and for the account's two
// EKS clusters (its tokens checked by the EKS simulation's webhook). Then it
// creates the customer's stack and role, and writes the clusters file. It
// returns that file's path.
func (w *world) startCluster(ctx context.Context, assets string) (string, error) {
	w.clusterMu.Lock()
	defer w.clusterMu.Unlock()
	if w.clustersFile != "" {
		return w.clustersFile, nil
	}
	bin, err := shimAssets(filepath.Join(w.dir, "bin"), assets)
	if err != nil {
		return "", err
	}
	if err := os.Setenv("KUKIE_K8S_ASSETS", bin); err != nil {
		return "", err
	}
	sim, stop, err := ekssim.New(w.aws, awsfake.Cluster{Region: region, Account: w.acct.id, Name: w.acct.clusters[0]},
		k8stest.Options{ArgoCD: true})
	if err != nil {
		return "", err
	}
	path, err := w.fillCluster(ctx, sim)
	if err != nil {
		stop() // a later try starts anew
		return "", err
	}
	w.mu.Lock()
	w.stops = append(w.stops, stop)
	w.mu.Unlock()
	w.clustersFile = path
	return path, w.reach(stageCluster)
}

// fillCluster makes the running cluster the sandbox's: the second EKS
// cluster, the Applications pointing at the Git world, the customer's
// stack and role, and the static clusters file (whose path it returns).
func (w *world) fillCluster(ctx context.Context, sim *ekssim.Cluster) (string, error) {
	sim.Serve(awsfake.Cluster{Region: region, Account: w.acct.id, Name: w.acct.clusters[1]})
	if err := w.pointAppsAtGit(ctx, sim.Kube); err != nil {
		return "", fmt.Errorf("sandbox Applications: %w", err)
	}
	if err := w.createStack(ctx); err != nil {
		return "", fmt.Errorf("the sandbox AWS account: %w", err)
	}
	return w.writeClusters(sim.Kube)
}

// pointAppsAtGit rewrites the sandbox Applications as copies whose source
// is the Git world and whose synced revision is its newest commit (no Argo
// CD controller runs here to set it); sandbox-plain's deploy history names
// both commits. The fixture files stay as the tests assert them.
func (w *world) pointAppsAtGit(ctx context.Context, k *k8stest.Cluster) error {
	dyn, err := dynamic.NewForConfig(k.Config(k8stest.UserAdmin))
	if err != nil {
		return err
	}
	apps := dyn.Resource(applications).Namespace("argocd")
	for _, name := range sandboxApps {
		app, err := apps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := pointAt(app, w.git.publicURL, w.git.commits); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if _, err := apps.Update(ctx, app, metav1.UpdateOptions{FieldManager: "kukie-sandbox"}); err != nil {
			return err
		}
	}
	return nil
}

// pointAt sets an Application's source to repoURL at the newest of commits.
func pointAt(app *unstructured.Unstructured, repoURL string, commits []string) error {
	head := commits[len(commits)-1]
	if err := unstructured.SetNestedField(app.Object, repoURL, "spec", "source", "repoURL"); err != nil {
		return err
	}
	if err := unstructured.SetNestedField(app.Object, head, "status", "sync", "revision"); err != nil {
		return err
	}
	history, found, err := unstructured.NestedSlice(app.Object, "status", "history")
	if err != nil || !found {
		return err
	}
	for i := range history {
		row, ok := history[i].(map[string]any)
		if !ok {
			return errors.New("a status.history row is not an object")
		}
		row["revision"] = commits[min(i, len(commits)-1)]
	}
	return unstructured.SetNestedSlice(app.Object, history, "status", "history")
}

// writeClusters writes the kubeconfigs of the cluster's admin and limited
// users and the static clusters file registering the sandbox for the team.
func (w *world) writeClusters(k *k8stest.Cluster) (string, error) {
	paths := map[string]string{}
	for _, user := range []string{k8stest.UserAdmin, k8stest.UserLimited} {
		b, err := k.Kubeconfig(user)
		if err != nil {
			return "", err
		}
		path, err := filepath.Abs(filepath.Join(w.dir, user+".kubeconfig"))
		if err != nil {
			return "", err
		}
		if err := writeFile(path, b, 0o600); err != nil {
			return "", err
		}
		paths[user] = path
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
`, w.team, paths[k8stest.UserAdmin], paths[k8stest.UserLimited])
	path := filepath.Join(w.dir, fileClusters)
	return path, writeFile(path, []byte(content), 0o600)
}
