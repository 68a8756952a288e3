package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bigRenderer answers every render with size bytes of YAML, and counts.
type bigRenderer struct {
	size int
	n    atomic.Int32
}

func (r *bigRenderer) Render(context.Context, RenderInput) (RenderOutput, error) {
	r.n.Add(1)
	return RenderOutput{SourceType: "directory", Manifests: bytes.Repeat([]byte("x"), r.size)}, nil
}

// newManyAppsView is one team's cluster with n apps (n keys) on one source.
func newManyAppsView(t *testing.T, n int, r ManifestRenderer) (*RepoView, []Application) {
	t.Helper()
	const repo = "https://github.com/org/gitops"
	c := Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo, ArgoCDNamespace: "argocd"}
	var list []Application
	for i := range n {
		src := AppSource{RepoURL: repo, Path: "big", Spec: json.RawMessage(`{"path":"big"}`)}
		name := fmt.Sprintf("big-%d", i)
		list = append(list, Application{ID: name, Name: name, Namespace: "argocd", Sources: []AppSource{src},
			Sync: AppSync{Revision: "abc", ComparedTo: []AppSource{src}}})
	}
	cache, err := NewSnapshotCache(listApps{apps: list}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: c}
	return &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: maskAll{}, Renderer: r, ManifestMasker: maskAll{}}, list
}

// review2 B3: one team with many apps on one large source kept every render
// (512 entries of up to the output cap: gigabytes). The cache is bounded in
// bytes: the team keeps at most half the budget, and the heap shows it.
func TestRenderCacheBoundedInBytes(t *testing.T) {
	const apps, size, budget = 48, 1 << 20, 32 << 20
	view, list := newManyAppsView(t, apps, &bigRenderer{size: size})
	view.RenderCacheBytes = budget
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, a := range list {
		if _, err := view.Manifests(context.Background(), Principal{TeamID: "t1"}, "c1", a.ID); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(view)
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	total, byTeam := view.renders.held()
	t.Logf("%d renders of %d MiB under a %d MiB budget: cache holds %d MiB, heap keeps %d MiB after GC",
		apps, size>>20, budget>>20, total>>20, kept>>20)
	if total > budget/2 || byTeam["t1"] != total {
		t.Errorf("cache holds %d bytes (%v), want at most the team's share %d", total, byTeam, budget/2)
	}
	if kept > budget/2+8<<20 {
		t.Errorf("the heap keeps %d MiB after %d renders of %d MiB; want about the team's share, %d MiB", kept>>20, apps, size>>20, budget>>21)
	}
}

// A render above MaxCachedRenderBytes is not kept: it renders again.
func TestRenderCacheSkipsOversizedRender(t *testing.T) {
	r := &bigRenderer{size: MaxCachedRenderBytes + 1}
	view, _ := newManyAppsView(t, 1, r)
	for range 2 {
		if _, err := view.Manifests(context.Background(), Principal{TeamID: "t1"}, "c1", "big-0"); err != nil {
			t.Fatal(err)
		}
	}
	if total, _ := view.renders.held(); r.n.Load() != 2 || total != 0 {
		t.Fatalf("%d renders, %d bytes cached; want 2 renders, nothing cached", r.n.Load(), total)
	}
}

func entry(n int) SourceManifests { return SourceManifests{Manifests: strings.Repeat("x", n)} }

// A team keeps at most half the budget, losing its own oldest renders; when
// the cache is full the team holding the most loses its oldest, so a team
// filling the cache never evicts a team holding less.
func TestRenderCacheTeamShare(t *testing.T) {
	const budget = 100 << 10
	var c renderCache
	size := renderSize("b0", entry(9<<10)) // every key here is two bytes
	for i := range 3 {
		c.add(budget, "B", fmt.Sprintf("b%d", i), entry(9<<10))
	}
	for i := range 20 { // A tries to keep far more than its share
		c.add(budget, "A", fmt.Sprintf("a%d", i%10)+string(rune('a'+i/10)), entry(9<<10))
	}
	total, byTeam := c.held()
	if byTeam["A"] > budget/2 || byTeam["B"] != 3*size || total != byTeam["A"]+byTeam["B"] {
		t.Fatalf("held %d: %v; want A within %d and B's three renders (%d) kept", total, byTeam, budget/2, 3*size)
	}
	for i := range 3 {
		if _, ok := c.get("B", fmt.Sprintf("b%d", i)); !ok {
			t.Fatalf("B's render b%d was evicted by A", i)
		}
	}
	if _, ok := c.get("A", "a9b"); !ok {
		t.Fatal("A's newest render is not kept")
	}
	if _, ok := c.get("A", "a0a"); ok {
		t.Fatal("A's oldest render is kept above its share")
	}
	// C and D fill the rest: the largest team (A) gives way, not B.
	heldA := byTeam["A"]
	for i := range 2 {
		c.add(budget, "C", fmt.Sprintf("c%d", i), entry(9<<10))
		c.add(budget, "D", fmt.Sprintf("d%d", i), entry(9<<10))
	}
	total, byTeam = c.held()
	if total > budget || byTeam["A"] >= heldA || byTeam["B"] != 3*size || byTeam["C"] != 2*size || byTeam["D"] != 2*size {
		t.Fatalf("held %d: %v; want at most %d, A below %d, B, C and D whole", total, byTeam, budget, heldA)
	}
	// Replacing a key does not count it twice.
	c.add(budget, "B", "b0", entry(9<<10))
	if _, byTeam = c.held(); byTeam["B"] != 3*size {
		t.Fatalf("B holds %d after replacing a render, want %d", byTeam["B"], 3*size)
	}
	if c.add(budget, "B", "huge", entry(budget/2)) {
		t.Fatal("a render above the team's share was kept")
	}
}

// reasonRenderer fails with the reason in the source's path.
type reasonRenderer struct{ n atomic.Int32 }

func (r *reasonRenderer) Render(_ context.Context, in RenderInput) (RenderOutput, error) {
	r.n.Add(1)
	var src struct{ Path string }
	_ = json.Unmarshal(in.Spec, &src)
	return RenderOutput{SourceType: "helm", Code: ReasonRenderFailed, Reason: Reason(strings.TrimPrefix(src.Path, "template_error")),
		Message: "render failed: " + src.Path}, nil
}

// review2 B4: a render the replica's limits stopped (timeout, memory
// limit, a child that died) is not cached; a template error is.
func TestManifestsLoadDependentFailuresNotCached(t *testing.T) {
	for _, tt := range []struct {
		reason  Reason
		renders int32
	}{
		{ReasonRenderTimeout, 2},
		{ReasonRenderMemory, 2},
		{ReasonRenderProcessFailed, 2},
		{"template_error", 1}, // Reason "": deterministic
	} {
		t.Run(string(tt.reason), func(t *testing.T) {
			const repo = "https://github.com/org/gitops"
			src := AppSource{RepoURL: repo, Path: string(tt.reason), Spec: json.RawMessage(`{"path":"` + string(tt.reason) + `"}`)}
			app := Application{ID: "web", Name: "web", Namespace: "argocd", Sources: []AppSource{src},
				Sync: AppSync{Revision: "abc", ComparedTo: []AppSource{src}}}
			cache, err := NewSnapshotCache(listApps{apps: []Application{app}}, 4, time.Now, nil)
			if err != nil {
				t.Fatal(err)
			}
			store := &oneCluster{c: Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo}}
			r := &reasonRenderer{}
			view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
				Masker: maskAll{}, Renderer: r, ManifestMasker: maskAll{}}
			for range 2 {
				_, err := view.Manifests(context.Background(), Principal{TeamID: "t1"}, "c1", "web")
				if ErrorReason(err) != ReasonRenderFailed {
					t.Fatalf("Manifests: %v, want render_failed", err)
				}
				// The render's reason refines the code (a single source's failure is the answer).
				var e *Error
				if want := Reason(strings.TrimPrefix(string(tt.reason), "template_error")); !errors.As(err, &e) || e.Cause != want {
					t.Errorf("cause %+v, want %q", e, want)
				}
			}
			if got := r.n.Load(); got != tt.renders {
				t.Fatalf("%d renders for two requests, want %d", got, tt.renders)
			}
		})
	}
}

// sizedStub is a redactor that says how much it keeps.
type sizedStub struct{ n int64 }

func (sizedStub) Redact(text string) string { return text }
func (s sizedStub) Bytes() int64            { return s.n }

// An entry's size counts the compiled redaction set kept with it: a tenant
// decides how many values a render masks.
func TestRenderSizeCountsTheRedactor(t *testing.T) {
	p := SourceManifests{Manifests: "kind: Secret\n"}
	plain := renderSize("k", p)
	p.redactor = sizedStub{n: 5 << 20}
	if got := renderSize("k", p); got != plain+5<<20 {
		t.Errorf("renderSize with a 5 MiB redactor = %d, want %d", got, plain+5<<20)
	}
}
