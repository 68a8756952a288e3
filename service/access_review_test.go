package service

import (
	"context"
	"testing"
	"time"
)

// oneCluster is a ClusterStore holding one cluster the test changes.
type oneCluster struct {
	ClusterStore
	c Cluster
}

func (s *oneCluster) GetCluster(_ context.Context, teamID, id string) (Cluster, error) {
	if teamID != s.c.TeamID || id != s.c.ID {
		return Cluster{}, ErrClusterNotFound()
	}
	return s.c, nil
}

type countingReviewer struct{ n int }

func (r *countingReviewer) CanI(context.Context, Cluster, AccessQuestion) (AccessAnswer, error) {
	r.n++
	return AccessAnswer{Allowed: r.n%2 == 1}, nil
}

// A cached answer is not served after the cluster's access changed (a
// level switch records the new level and moves updated_at).
func TestCanICacheForgetsAnswersAcrossAccessChanges(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	store := &oneCluster{c: Cluster{ID: "c1", TeamID: "t1", Kind: ClusterEKS, AccessLevel: AccessFull,
		AccessState: AccessActive, UpdatedAt: at}}
	reviewer := &countingReviewer{}
	reviews, err := NewAccessReviews(store, reviewer, 16, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	p := Principal{TeamID: "t1"}
	q := AccessQuestion{Verb: "list", Group: "argoproj.io", Resource: "applications", Namespace: "argocd"}
	ask := func() {
		t.Helper()
		if _, err := reviews.CanI(t.Context(), p, "c1", q); err != nil {
			t.Fatal(err)
		}
	}
	ask()
	ask()
	if reviewer.n != 1 {
		t.Fatalf("%d reviews for a repeated question, want 1 (cached)", reviewer.n)
	}
	store.c.AccessLevel, store.c.UpdatedAt = AccessLimited, at.Add(time.Second)
	ask()
	if reviewer.n != 2 {
		t.Errorf("%d reviews after the level switch, want 2 (the cached answer predates it)", reviewer.n)
	}
	store.c.UpdatedAt = at.Add(2 * time.Second) // e.g. the Edit scope narrowed
	ask()
	if reviewer.n != 3 {
		t.Errorf("%d reviews after another access change, want 3", reviewer.n)
	}
}
