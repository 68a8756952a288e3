package service

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// childMasked renders like the render child asked to mask: its output,
// notes and message already masked, and the values it masked in Secrets.
type childMasked struct{}

func (childMasked) Render(_ context.Context, in RenderInput) (RenderOutput, error) {
	notes := []string{"the chart's NOTES mention s3cr3t-from-child"}
	if strings.Contains(string(in.Spec), "broken") {
		return RenderOutput{SourceType: "helm", Code: ReasonRenderFailed, Message: "template: token s3cr3t-from-child is wrong",
			Notes: notes, Masked: true, Secrets: []string{"s3cr3t-from-child"}}, nil
	}
	return RenderOutput{SourceType: "helm", Manifests: []byte("kind: Secret\ndata:\n  password: <masked>\n"), Notes: notes,
		Masked: true, Secrets: []string{"s3cr3t-from-child"}}, nil
}

// countingManifestMasker counts the streams it is asked to mask.
type countingManifestMasker struct{ n *atomic.Int32 }

func (c countingManifestMasker) Manifests(b []byte) MaskedText {
	c.n.Add(1)
	return maskHunter(b)
}

// A render the renderer masked itself (the child, under its limits) is not
// masked again in the server, and the values it masked join the request's
// redaction set: a note or an error quoting one is cut.
func TestMaskedRenderIsNotMaskedAgain(t *testing.T) {
	const repo = "https://github.com/org/gitops"
	app := func(id, spec string) Application {
		src := AppSource{RepoURL: repo, Path: "apps/" + id, Spec: json.RawMessage(spec)}
		return Application{ID: id, Name: id, Namespace: "argocd", Sources: []AppSource{src},
			Sync: AppSync{Revision: "abc", ComparedTo: []AppSource{src}}}
	}
	cache, err := NewSnapshotCache(listApps{apps: []Application{app("web", `{"path":"apps/web"}`),
		app("bad", `{"path":"apps/bad","helm":{"values":"broken"}}`)}}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo}}
	masked := new(atomic.Int32)
	view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: maskAll{}, Renderer: childMasked{}, ManifestMasker: countingManifestMasker{masked}}
	ctx, p := context.Background(), Principal{TeamID: "t1"}

	m, err := view.Manifests(ctx, p, "c1", "web")
	if err != nil || len(m.Sources) != 1 {
		t.Fatalf("Manifests = %+v, %v", m, err)
	}
	if got := m.Sources[0].Manifests; got != "kind: Secret\ndata:\n  password: <masked>\n" {
		t.Errorf("manifests = %q, want the child's as they are", got)
	}
	if n := m.Sources[0].Notes; len(n) != 1 || n[0] != "the chart's NOTES mention <masked>" {
		t.Errorf("notes = %q, want the child's secret cut", n)
	}
	answer, err := view.ManifestsTool(ctx, p, "c1", "web", "en")
	if err != nil || strings.Contains(answer.Text, "s3cr3t-from-child") {
		t.Errorf("tool answer = %+v, %v", answer, err)
	}

	_, err = view.Manifests(ctx, p, "c1", "bad")
	if ErrorReason(err) != ReasonRenderFailed || ErrorMessage(err) != "template: token <masked> is wrong" {
		t.Errorf("failed render = %v, want render_failed with the child's secret cut", err)
	}
	if n := masked.Load(); n != 0 {
		t.Errorf("ManifestMasker masked %d streams the renderer had masked", n)
	}
}
