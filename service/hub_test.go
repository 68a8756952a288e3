package service

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// Destinations are compared as Argo CD users write them: any case, a
// trailing slash, the default https port; in-cluster names are the hub's
// own address; a name resolves through the hub's cluster secrets.
func TestDestinationServer(t *testing.T) {
	hub := Cluster{Endpoint: "https://hub.example"}
	secrets := []ArgoCDClusterRef{{Name: "spoke", Server: "HTTPS://Spoke.Example:443/"}}
	for _, c := range []struct {
		name string
		d    AppDestination
		want string
	}{
		{"ServerSpelling", AppDestination{Server: "https://SPOKE.example:443/"}, "https://spoke.example"},
		{"OtherPortKept", AppDestination{Server: "https://spoke.example:6443"}, "https://spoke.example:6443"},
		{"ByName", AppDestination{Name: "spoke"}, "https://spoke.example"},
		{"UnknownName", AppDestination{Name: "gone"}, ""},
		{"InClusterServer", AppDestination{Server: "https://kubernetes.default.svc/"}, "https://hub.example"},
		{"InClusterName", AppDestination{Name: "in-cluster"}, "https://hub.example"},
		{"ServerWinsOverName", AppDestination{Server: "https://other.example", Name: "spoke"}, "https://other.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := DestinationServer(hub, c.d, secrets); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

type countingSecrets struct {
	calls int
	err   error
}

func (c *countingSecrets) ClusterSecrets(context.Context, Cluster) ([]ArgoCDClusterRef, error) {
	c.calls++
	return []ArgoCDClusterRef{{Name: "a", Server: "https://a"}}, c.err
}

// Cluster secrets are read once per snapshot window, a failure once per
// failure window, per cluster.
func TestClusterSecretCacheWindow(t *testing.T) {
	now := time.Unix(1000, 0)
	reader := &countingSecrets{}
	cache, err := NewClusterSecretCache(reader, 4, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	hub := Cluster{TeamID: "t", ID: "hub"}
	if _, warm := cache.Warm(hub); warm {
		t.Fatal("nothing read yet")
	}
	for range 3 {
		if r := cache.Get(t.Context(), hub); len(r.Refs) != 1 || r.Err != nil {
			t.Fatalf("read = %+v", r)
		}
	}
	if _, warm := cache.Warm(hub); !warm || reader.calls != 1 {
		t.Errorf("calls = %d, want 1 within the window", reader.calls)
	}
	now = now.Add(SnapshotTTL)
	reader.err = errors.New("refused")
	cache.Get(t.Context(), hub)
	now = now.Add(SnapshotFailureTTL - time.Millisecond)
	if r := cache.Get(t.Context(), hub); r.Err == nil || reader.calls != 2 {
		t.Errorf("failure not remembered: %+v, calls %d", r, reader.calls)
	}
	now = now.Add(time.Millisecond)
	cache.Get(t.Context(), hub)
	if reader.calls != 3 {
		t.Errorf("calls = %d, want a new read after the failure window", reader.calls)
	}
}

// countedClusters counts ListClusters calls.
type countedClusters struct {
	fixedClusters
	calls int
	err   error
}

func (c *countedClusters) ListClusters(ctx context.Context, team string) ([]Cluster, error) {
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	return c.fixedClusters.ListClusters(ctx, team)
}

// A hub's app list works its destinations out once per snapshot: the
// team's clusters are listed once, not on every list; a failed listing is
// not remembered; a new snapshot works them out again.
func TestDestinationsOncePerSnapshot(t *testing.T) {
	hub := Cluster{TeamID: "t", ID: "hub", Endpoint: "https://hub.example"}
	clusters := &countedClusters{fixedClusters: fixedClusters{hub, {TeamID: "t", ID: "spoke", Endpoint: "https://Spoke.example:443/"}},
		err: errors.New("database down")}
	argo := &ArgoCD{Clusters: clusters}
	apps := []Application{
		{ID: "argocd/local", Destination: AppDestination{Server: InClusterServer}},
		{ID: "argocd/remote", Destination: AppDestination{Server: "https://spoke.example"}},
	}
	snap := newSnapshot(AppRead{Apps: apps}, nil, time.Now())
	if ids := argo.destinations(t.Context(), hub, snap); len(ids) != 0 {
		t.Fatalf("with the clusters unreadable: %v, want none", ids)
	}
	clusters.err = nil
	for range 3 {
		ids := argo.destinations(t.Context(), hub, snap)
		if i := slices.IndexFunc(snap.Apps(), func(a Application) bool { return a.ID == "argocd/remote" }); len(ids) != 1 || ids[i] != "spoke" {
			t.Fatalf("destinations = %v", ids)
		}
	}
	if clusters.calls != 2 {
		t.Errorf("ListClusters calls = %d, want 2 (the failed one, then once for the snapshot)", clusters.calls)
	}
	argo.destinations(t.Context(), hub, newSnapshot(AppRead{Apps: apps}, nil, time.Now()))
	if clusters.calls != 3 {
		t.Errorf("ListClusters calls = %d, want a new listing for a new snapshot", clusters.calls)
	}
}
