package service

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedRenderer holds renders of specs naming "slow" until gate closes.
type gatedRenderer struct {
	started chan struct{}
	gate    chan struct{}
	n       atomic.Int32
}

func (r *gatedRenderer) Render(_ context.Context, in RenderInput) (RenderOutput, error) {
	r.n.Add(1)
	if strings.Contains(string(in.Spec), "slow") {
		r.started <- struct{}{}
		<-r.gate
	}
	return RenderOutput{SourceType: "directory", Manifests: []byte("kind: ConfigMap\n")}, nil
}

func newQueuedView(t *testing.T, slots int, timers *manualTimers) (*RepoView, *gatedRenderer) {
	t.Helper()
	const repo = "https://github.com/org/gitops"
	c := Cluster{ID: "c1", TeamID: "t1", AccessLevel: AccessFull, GitOpsRepo: repo, ArgoCDNamespace: "argocd"}
	src := func(p string) AppSource {
		return AppSource{RepoURL: repo, Path: p, Spec: json.RawMessage(`{"path":"` + p + `"}`)}
	}
	app := func(id string, sources ...AppSource) Application {
		return Application{ID: id, Name: id, Namespace: "argocd", Sources: sources}
	}
	cache, err := NewSnapshotCache(listApps{apps: []Application{
		app("slow", src("apps/slow")), app("other", src("apps/other")), app("multi", src("apps/a"), src("apps/b")),
	}}, 4, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &oneCluster{c: c}
	renderer := &gatedRenderer{started: make(chan struct{}, 8), gate: make(chan struct{})}
	view := &RepoView{Clusters: store, ArgoCD: &ArgoCD{Clusters: store, Cache: cache}, Fetcher: fakeFetcher{files: map[string][]byte{}},
		Masker: maskAll{}, Renderer: renderer, ManifestMasker: maskAll{},
		Queue: NewRenderQueue(slots, 10*time.Second, RenderQueueOptions{Timer: timers.timer})}
	return view, renderer
}

func waitStarted(t *testing.T, r *gatedRenderer) {
	t.Helper()
	select {
	case <-r.started:
	case <-time.After(time.Minute): // only catches a hang
		t.Fatal("the slow render did not start within a minute")
	}
}

// While the one slot is taken, a single-source answer is 503 render_busy
// with a Retry-After, the tool answers with a sentence, a multi-source app
// shows render_busy per source, and nothing of it is cached.
func TestManifestsRenderBusy(t *testing.T) {
	timers := newManualTimers()
	view, renderer := newQueuedView(t, 1, timers)
	p := Principal{TeamID: "t1"}
	ctx := context.Background()
	slow := make(chan error, 1)
	go func() {
		_, err := view.Manifests(ctx, p, "c1", "slow")
		slow <- err
	}()
	waitStarted(t, renderer)

	// expireNext fires the next waiter's timeout as soon as it queues.
	expireNext := func(n int) {
		go func() {
			for range n {
				timers.expire(timers.waitQueued(t))
			}
		}()
	}
	expireNext(1)
	_, err := view.Manifests(ctx, p, "c1", "other")
	var se *Error
	if ErrorCode(err) != EUNAVAILABLE || ErrorReason(err) != ReasonRenderBusy || !errors.As(err, &se) || se.RetryAfter != 10*time.Second {
		t.Fatalf("single source while busy: %v; want unavailable/render_busy with RetryAfter 10s", err)
	}
	expireNext(1)
	a, err := view.ManifestsTool(ctx, p, "c1", "other", "en")
	if err != nil || a.Text != "Renders are busy right now; try again shortly." {
		t.Fatalf("tool while busy: %+v, %v", a, err)
	}
	expireNext(2)
	m, err := view.Manifests(ctx, p, "c1", "multi")
	if err != nil || len(m.Sources) != 2 {
		t.Fatalf("multi-source while busy: %+v, %v", m, err)
	}
	for _, s := range m.Sources {
		if s.Error == nil || s.Error.Code != ReasonRenderBusy {
			t.Errorf("source %s: error %+v, want render_busy", s.Path, s.Error)
		}
	}
	if n := renderer.n.Load(); n != 1 {
		t.Fatalf("%d renders ran; only the slow one holds the slot", n)
	}

	close(renderer.gate)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	// Busy answers were not cached: the slot is free, the app renders.
	if m, err := view.Manifests(ctx, p, "c1", "other"); err != nil || m.Sources[0].Error != nil {
		t.Fatalf("after the slot was freed: %+v, %v", m, err)
	}
	assertState(t, view.Queue, map[string]int{})
}

// Identical renders collapse into one flight, which takes one slot.
func TestManifestsCollapsedRenderTakesOneSlot(t *testing.T) {
	timers := newManualTimers()
	view, renderer := newQueuedView(t, 2, timers)
	p := Principal{TeamID: "t1"}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := view.Manifests(context.Background(), p, "c1", "slow")
			errs <- err
		}()
	}
	waitStarted(t, renderer)
	assertState(t, view.Queue, map[string]int{"t1": 1})
	close(renderer.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := renderer.n.Load(); n != 1 {
		t.Fatalf("%d renders for three identical requests", n)
	}
	assertState(t, view.Queue, map[string]int{})
}
