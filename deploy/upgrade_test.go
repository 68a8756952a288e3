package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

// TestUpgradeKeepsReplicaCount runs the one-time step docs/operations.md
// gives ("Upgrading: the replica count") with the real kubectl against a
// real kube-apiserver: a Deployment applied from the old manifests (with
// replicas) and then from the new ones (without) drops to one replica
// unless replicas is first removed from its last-applied annotation, by
// edit-last-applied or by set-last-applied.
func TestUpgradeKeepsReplicaCount(t *testing.T) {
	assets, err := k8stest.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	kubectlBin := filepath.Join(assets, "kubectl")
	if _, err := os.Stat(kubectlBin); err != nil {
		t.Fatalf("no kubectl in %s: run `make tools`", assets)
	}
	k8stest.QuietClientGo()
	c, err := k8stest.Start(k8stest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	dir := t.TempDir()
	kubeconfig, err := c.Kubeconfig(k8stest.UserAdmin)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	kcfg := write("kubeconfig", kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubectl := func(env []string, args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", kcfg}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return out
	}

	// The new production Deployment, and the old one: the same with replicas 3.
	newDep := oneOfKind(t, renderKustomization(t, "overlays/production"), "Deployment")
	if _, found, _ := unstructured.NestedFieldNoCopy(newDep.Object, "spec", "replicas"); found {
		t.Fatal("the production Deployment sets replicas")
	}
	oldDep := newDep.DeepCopy()
	if err := unstructured.SetNestedField(oldDep.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	yamlOf := func(name string, u *unstructured.Unstructured) string {
		t.Helper()
		b, err := sigsyaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		return write(name, b)
	}
	oldFile, newFile := yamlOf("old.yaml", oldDep), yamlOf("new.yaml", newDep)
	kubectl(nil, "create", "namespace", newDep.GetNamespace())
	ns := []string{"-n", newDep.GetNamespace()}
	replicas := func() int64 {
		t.Helper()
		var d struct {
			Spec struct {
				Replicas int64 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(kubectl(nil, append(ns, "get", "deployment", newDep.GetName(), "-o", "json")...), &d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Replicas
	}
	deployment := "deployment/" + newDep.GetName()

	for _, tc := range []struct {
		name string
		step func()
		want int64
	}{
		{"WithoutTheStep", func() {}, 1},
		{"EditLastApplied", func() {
			// What a person does in the editor: delete the replicas line.
			kubectl([]string{"KUBE_EDITOR=sed -i /^[[:space:]]*replicas:/d"}, append(ns, "apply", "edit-last-applied", deployment)...)
		}, 3},
		{"SetLastApplied", func() {
			var last map[string]any
			if err := json.Unmarshal(kubectl(nil, append(ns, "apply", "view-last-applied", deployment, "-o", "json")...), &last); err != nil {
				t.Fatal(err)
			}
			delete(last["spec"].(map[string]any), "replicas") // jq 'del(.spec.replicas)'
			b, _ := json.Marshal(last)
			kubectl(nil, append(ns, "apply", "set-last-applied", "-f", write("last-applied.json", b))...)
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kubectl(nil, append(ns, "delete", "deployment", newDep.GetName(), "--ignore-not-found")...)
			kubectl(nil, "apply", "-f", oldFile)
			if got := replicas(); got != 3 {
				t.Fatalf("old manifests: replicas %d, want 3", got)
			}
			tc.step()
			kubectl(nil, "apply", "-f", newFile)
			if got := replicas(); got != tc.want {
				t.Errorf("after applying the new manifests: replicas %d, want %d", got, tc.want)
			}
		})
	}
}
