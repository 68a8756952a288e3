package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
)

// maskTestCluster is the one cluster of the masking tests, its repository
// connected.
type maskTestCluster struct {
	service.ClusterStore
	c service.Cluster
}

func (s maskTestCluster) GetCluster(_ context.Context, teamID, id string) (service.Cluster, error) {
	if teamID != s.c.TeamID || id != s.c.ID {
		return service.Cluster{}, service.ErrClusterNotFound()
	}
	return s.c, nil
}

type maskTestApps []service.Application

func (a maskTestApps) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return service.AppRead{Apps: a}, nil
}

// maskTestTree serves one tree at one commit.
type maskTestTree map[string][]byte

func (maskTestTree) Resolve(context.Context, service.Cluster, string) (string, error) {
	return "0123456789abcdef0123456789abcdef01234567", nil
}

func (t maskTestTree) Tree(context.Context, service.Cluster, string, string) (map[string][]byte, error) {
	return t, nil
}

// mustMaskTestView is the production repo view (render.ChildRenderer, the real
// maskers) over files, its renders in this test binary (TestMain runs it
// as `kukie-server render`) under lim.
func mustMaskTestView(t *testing.T, files map[string][]byte, lim render.Limits) *service.RepoView {
	t.Helper()
	const repo = "https://git.example.com/org/gitops"
	m, err := mask.New()
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src := service.AppSource{RepoURL: repo, Path: "app", Spec: json.RawMessage(`{"path":"app"}`)}
	app := service.Application{ID: "web", Name: "web", Namespace: "argocd", Sources: []service.AppSource{src},
		Sync: service.AppSync{Revision: "0123456789abcdef0123456789abcdef01234567", ComparedTo: []service.AppSource{src}}}
	cache, err := service.NewSnapshotCache(maskTestApps{app}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := maskTestCluster{c: service.Cluster{ID: "c1", TeamID: "t1", AccessLevel: service.AccessFull, GitOpsRepo: repo}}
	return &service.RepoView{Clusters: store, ArgoCD: &service.ArgoCD{Clusters: store, Cache: cache}, Fetcher: maskTestTree(files),
		Masker: mask.ForService{M: m}, Renderer: render.ChildRenderer{Binary: self, Limits: lim}, ManifestMasker: mask.ForService{M: m}}
}

// maskingBomb is about n bytes of small documents, each with a Secret's
// value: cheap to render, costly to mask (~36 times the YAML in masking's
// own structures, measured).
func maskingBomb(n int) map[string][]byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s%d}\nstringData: {password: pw-%08d-secret}\n", i, i)
	}
	return map[string][]byte{"app/all.yaml": []byte(b.String())}
}

// allocatedDuring is what the test process (the server) allocates while f
// runs: runtime.MemStats.TotalAlloc, which counts every allocation whatever
// the collector frees meanwhile, so it needs no sampling.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// The server does not mask a render's output: the child does, under its
// limits. A stream of 1 MiB of small Secrets renders masked, and the
// server allocates little more than the child's JSON while answering
// (masking it in the server allocated ~320 times the stream, measured: the
// old code fails the bound below by far); under the smallest child memory
// share a larger stream (maskBombBytes, which renders there unmasked) ends
// as that source's memory failure (or its timeout), not as the server's
// memory.
func TestRepoRenderMasksInTheChild(t *testing.T) {
	const bombBytes = 1 << 20
	files := maskingBomb(bombBytes)
	ctx, p := context.Background(), service.Principal{TeamID: "t1"}

	t.Run("MaskedOutputCostsTheServerLittle", func(t *testing.T) {
		view := mustMaskTestView(t, files, render.Limits{Timeout: 10 * time.Minute, MaxOutputBytes: renderMaxOutput})
		var m service.AppManifests
		var err error
		allocated := allocatedDuring(func() { m, err = view.Manifests(ctx, p, "c1", "web") })
		t.Logf("the server allocated %d MiB while answering a render of %d MiB of small Secrets", allocated>>20, bombBytes>>20)
		if err != nil || len(m.Sources) != 1 {
			t.Fatalf("Manifests = %v", err)
		}
		out := m.Sources[0].Manifests
		if strings.Contains(out, "-secret") || !strings.Contains(out, "password: "+mask.Marker) {
			t.Errorf("the manifests are not masked:\n%.400s", out)
		}
		// The child's JSON (base64) read and decoded, the string kept:
		// about 10 times the stream; masking it here took ~320 times.
		if limit := uint64(24 * bombBytes); allocated > limit {
			t.Errorf("the server allocated %d MiB for a %d MiB render, above %d MiB: is it masking the output itself?",
				allocated>>20, bombBytes>>20, limit>>20)
		}
	})
	t.Run("TooCostlyToMaskEndsAsTheRendersMemoryFailure", func(t *testing.T) {
		lim := render.Limits{Timeout: 10 * time.Minute, MaxOutputBytes: renderMaxOutput, MaxMemoryBytes: childMemoryScale * render.MinChildMemoryBytes}
		bomb := maskingBomb(maskBombBytes)
		view := mustMaskTestView(t, bomb, lim)
		var err error
		allocated := allocatedDuring(func() { _, err = view.Manifests(ctx, p, "c1", "web") })
		t.Logf("the server allocated %d MiB while the child failed: %v", allocated>>20, err)
		if service.ErrorReason(err) != service.ReasonRenderFailed || !strings.Contains(service.ErrorMessage(err), "memory limit") &&
			!strings.Contains(service.ErrorMessage(err), "timed out") {
			t.Fatalf("Manifests = %v, want the render's memory (or timeout) failure", err)
		}
		if limit := uint64(16 << 20); allocated > limit {
			t.Errorf("the server allocated %d MiB for a render that failed, above %d MiB", allocated>>20, limit>>20)
		}
		out, err := render.ChildRenderer{Binary: mustExecutable(t), Limits: lim}.Render(ctx, service.RenderInput{Files: bomb, Spec: json.RawMessage(`{"path":"app"}`)})
		if err != nil || out.Reason != service.ReasonRenderMemory && out.Reason != service.ReasonRenderTimeout {
			t.Errorf("Render = reason %q code %q message %q, %v; want reason %s", out.Reason, out.Code, out.Message, err, service.ReasonRenderMemory)
		}
	})
}

func mustExecutable(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}
