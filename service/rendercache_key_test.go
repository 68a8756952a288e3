package service_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/service"
)

// treesByCommit is a Fetcher whose tree depends on the commit asked for.
type treesByCommit map[string]map[string][]byte

func (treesByCommit) Resolve(context.Context, service.Cluster, string) (string, error) {
	return "chartcommit", nil
}

func (t treesByCommit) Tree(_ context.Context, _ service.Cluster, _, commit string) (map[string][]byte, error) {
	return t[commit], nil
}

// review2 B1: the render cache key held the source's own commit and spec
// but nothing of the ref sources its $values files come from, and the app's
// name without its Argo CD namespace. A chart source shared by two apps of
// one name in two namespaces, or by one app whose values source moved while
// its chart did not, was answered with the other values' render.
func TestRenderCacheKeyHoldsRefSourcesAndAppIdentity(t *testing.T) {
	masker, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	const repo = "https://github.com/org/gitops"
	fetcher := treesByCommit{
		"chartcommit": {
			"charts/web/Chart.yaml":        []byte("apiVersion: v2\nname: web\nversion: 0.1.0\n"),
			"charts/web/templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  env: {{ .Values.env | quote }}\n"),
		},
		"values-prod": {"env/values.yaml": []byte("env: prod-values-commit\n")},
		"values-stg":  {"env/values.yaml": []byte("env: staging-values-commit\n")},
	}
	chartSrc := service.AppSource{RepoURL: repo, Path: "charts/web", TargetRevision: "main",
		Spec: json.RawMessage(`{"repoURL":"` + repo + `","path":"charts/web","targetRevision":"main","helm":{"valueFiles":["$values/env/values.yaml"]}}`)}
	mkApp := func(id, ns, valuesRev string) service.Application {
		ref := service.AppSource{RepoURL: repo, TargetRevision: valuesRev, Ref: "values",
			Spec: json.RawMessage(`{"repoURL":"` + repo + `","targetRevision":"` + valuesRev + `","ref":"values"}`)}
		srcs := []service.AppSource{chartSrc, ref}
		return service.Application{ID: id, Name: "web", Namespace: ns, Sources: srcs,
			Destination: service.AppDestination{Namespace: "web"},
			Sync:        service.AppSync{Revisions: []string{"chartcommit", valuesRev}, ComparedTo: srcs}}
	}
	c := service.Cluster{ID: "c1", TeamID: "t1", AccessLevel: service.AccessFull, GitOpsRepo: repo, ArgoCDNamespace: "argocd"}
	store := oneCluster{c: c}
	argoWith := func(t *testing.T, list ...service.Application) *service.ArgoCD {
		cache, err := service.NewSnapshotCache(apps(list), 4, time.Now, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &service.ArgoCD{Clusters: store, Cache: cache}
	}
	view := &service.RepoView{Clusters: store, Fetcher: fetcher,
		Masker: mask.ForService{M: masker}, ManifestMasker: mask.ForService{M: masker}, Renderer: renderHere{}}
	p := service.Principal{TeamID: "t1"}
	shows := func(t *testing.T, appID, want string) {
		t.Helper()
		m, err := view.Manifests(context.Background(), p, "c1", appID)
		if err != nil || len(m.Sources) != 1 {
			t.Fatalf("%s: %+v, %v", appID, m, err)
		}
		if !strings.Contains(m.Sources[0].Manifests, want) {
			t.Fatalf("%s is shown another render, want %q:\n%s", appID, want, m.Sources[0].Manifests)
		}
	}

	t.Run("SameNameInTwoNamespaces", func(t *testing.T) {
		view.ArgoCD = argoWith(t, mkApp("web", "argocd", "values-prod"), mkApp("staging_web", "staging", "values-stg"))
		shows(t, "web", "prod-values-commit")
		shows(t, "staging_web", "staging-values-commit")
	})
	t.Run("ValuesMovedChartDidNot", func(t *testing.T) {
		view.ArgoCD = argoWith(t, mkApp("other_web", "other", "values-prod"))
		shows(t, "other_web", "prod-values-commit")
		view.ArgoCD = argoWith(t, mkApp("other_web", "other", "values-stg")) // Argo CD compared the next values commit
		shows(t, "other_web", "staging-values-commit")
	})
}
