package service

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// specRenderer answers the path it was asked to render as its manifests.
type specRenderer struct{}

func (specRenderer) Render(_ context.Context, in RenderInput) (RenderOutput, error) {
	var src struct{ Path string }
	_ = json.Unmarshal(in.Spec, &src)
	return RenderOutput{SourceType: "directory", Manifests: []byte("# " + src.Path + "\n")}, nil
}

// A source hydrator's app is rendered from its sync source (the hydrated
// branch's path) at the compared revision, or the branch resolved now —
// never from the dry source people commit to.
func TestManifestsSourceHydrator(t *testing.T) {
	const repo = "https://github.com/org/gitops"
	dry := AppSource{RepoURL: repo, Path: "apps/web", TargetRevision: "main", Spec: json.RawMessage(`{"path":"apps/web"}`)}
	hydrated := AppSource{RepoURL: repo, Path: "env/prod/web", TargetRevision: "env/prod", Spec: json.RawMessage(`{"path":"env/prod/web","directory":{}}`)}
	synced := Application{ID: "synced", Name: "synced", Namespace: "argocd", Sources: []AppSource{dry}, HydratedSource: &hydrated,
		Sync: AppSync{Revision: "fedcba9876543210fedc", ComparedTo: []AppSource{dry}}}
	fresh := Application{ID: "fresh", Name: "fresh", Namespace: "argocd", Sources: []AppSource{dry}, HydratedSource: &hydrated}
	cache, err := NewSnapshotCache(listApps{apps: []Application{synced, fresh}}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo}}
	view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: maskAll{}, Renderer: specRenderer{}, ManifestMasker: maskAll{}}
	for _, tt := range []struct{ app, revisionSource, commit string }{
		{"synced", "compared", "fedcba9876543210fedc"},
		{"fresh", "target_revision", "0123456789abcdef0123"}, // env/prod resolved now
	} {
		m, err := view.Manifests(context.Background(), Principal{TeamID: "t1"}, "c1", tt.app)
		if err != nil || m.RevisionSource != tt.revisionSource || len(m.Sources) != 1 || m.Sources[0].Path != "env/prod/web" ||
			m.Sources[0].Commit != tt.commit || m.Sources[0].Manifests != "# env/prod/web\n" {
			t.Errorf("%s: %+v, %v", tt.app, m, err)
		}
	}
}
