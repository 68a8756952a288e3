package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

var repoAuthTime = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// mustRepoAuthSetup creates static clusters t1/c1, t1/c2 and t2/c1.
func mustRepoAuthSetup(tb testing.TB) *store.DB {
	tb.Helper()
	db, _ := pgtest.MustOpenDB(tb)
	for _, c := range []service.Cluster{staticCluster("t1", "c1"), staticCluster("t1", "c2"), staticCluster("t2", "c1")} {
		if _, err := db.UpsertCluster(context.Background(), c, clusterTime); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

func testSealer(tb testing.TB, id string) *keyring.Keyring {
	tb.Helper()
	k, err := keyring.ParseKeys(id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(id[:1]), keyring.KeySize)))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// mustSealToken seals an https_token for team/cluster.
func mustSealToken(tb testing.TB, k service.Sealer, team, cluster, token string) service.SealedRepoAuth {
	tb.Helper()
	s, err := service.SealRepoAuth(k, team, cluster, service.RepoAuth{Type: "https_token", Username: "bot", Token: token})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func mustPutRepoAuth(tb testing.TB, db *store.DB, s service.SealedRepoAuth) service.SealedRepoAuth {
	tb.Helper()
	out, err := db.PutRepoAuth(context.Background(), s.TeamID, s.ClusterID, s, repoAuthTime)
	if err != nil {
		tb.Fatalf("PutRepoAuth %s/%s: %v", s.TeamID, s.ClusterID, err)
	}
	return out
}

func TestRepoAuthRoundTrip(t *testing.T) {
	db := mustRepoAuthSetup(t)
	ctx := context.Background()
	k := testSealer(t, "a")

	sealed := mustSealToken(t, k, "t1", "c1", "ghp_0123456789abcdefghij")
	want := sealed
	want.UpdatedAt = repoAuthTime
	if diff := cmp.Diff(want, mustPutRepoAuth(t, db, sealed)); diff != "" {
		t.Errorf("put (-want +got):\n%s", diff)
	}
	got, err := db.GetRepoAuth(ctx, "t1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get (-want +got):\n%s", diff)
	}
	opened, err := service.OpenRepoAuth(k, got)
	if err != nil || opened.Token != "ghp_0123456789abcdefghij" {
		t.Errorf("open stored: %v", err)
	}

	// Put replaces: to none, nothing of the token stays.
	none, _ := service.SealRepoAuth(nil, "t1", "c1", service.RepoAuth{Type: "none"})
	later := repoAuthTime.Add(time.Hour)
	if _, err := db.PutRepoAuth(ctx, "t1", "c1", none, later); err != nil {
		t.Fatal(err)
	}
	got, _ = db.GetRepoAuth(ctx, "t1", "c1")
	none.UpdatedAt = later
	if diff := cmp.Diff(none, got); diff != "" {
		t.Errorf("after replacing with none (-want +got):\n%s", diff)
	}

	if err := db.DeleteRepoAuth(ctx, "t1", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetRepoAuth(ctx, "t1", "c1"); service.ErrorReason(err) != "repo_auth_not_found" {
		t.Errorf("after delete: %v, want repo_auth_not_found", err)
	}
	if err := db.DeleteRepoAuth(ctx, "t1", "c1"); err != nil {
		t.Errorf("deleting nothing: %v", err)
	}
}

func TestRepoAuthCascadesWithCluster(t *testing.T) {
	db := mustRepoAuthSetup(t)
	ctx := context.Background()
	mustPutRepoAuth(t, db, mustSealToken(t, testSealer(t, "a"), "t1", "c1", "ghp_0123456789abcdefghij"))
	mustPutRepoAuth(t, db, mustSealToken(t, testSealer(t, "a"), "t1", "c2", "ghp_0123456789abcdefghik"))
	if err := db.DeleteCluster(ctx, "t1", "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetRepoAuth(ctx, "t1", "c1"); service.ErrorReason(err) != "repo_auth_not_found" {
		t.Errorf("after the cluster's removal: %v, want repo_auth_not_found", err)
	}
	if _, err := db.GetRepoAuth(ctx, "t1", "c2"); err != nil {
		t.Errorf("another cluster's credentials: %v", err)
	}
	// The cluster is gone: storing for it again is cluster_not_found.
	_, err := db.PutRepoAuth(ctx, "t1", "c1", mustSealToken(t, testSealer(t, "a"), "t1", "c1", "ghp_x123456789abcdefghij"), repoAuthTime)
	if service.ErrorReason(err) != "cluster_not_found" {
		t.Errorf("put for a removed cluster: %v, want cluster_not_found", err)
	}
}

func TestRepoAuthOtherTeam(t *testing.T) {
	db := mustRepoAuthSetup(t)
	ctx := context.Background()
	k := testSealer(t, "a")
	mine := mustPutRepoAuth(t, db, mustSealToken(t, k, "t1", "c2", "ghp_0123456789abcdefghij"))

	// t2 has no c2: it can neither store for it, read it nor remove it.
	if _, err := db.PutRepoAuth(ctx, "t2", "c2", mustSealToken(t, k, "t2", "c2", "ghp_other6789abcdefghij"), repoAuthTime); service.ErrorReason(err) != "cluster_not_found" {
		t.Errorf("put for another team's cluster: %v, want cluster_not_found", err)
	}
	if _, err := db.GetRepoAuth(ctx, "t2", "c2"); service.ErrorCode(err) != service.ENOTFOUND {
		t.Errorf("get another team's: %v, want not found", err)
	}
	if err := db.DeleteRepoAuth(ctx, "t2", "c2"); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetRepoAuth(ctx, "t1", "c2"); err != nil || got != mine {
		t.Errorf("t1's credentials after t2's delete: %+v, %v", got, err)
	}
	// t2's own c1 is a different cluster from t1's c1.
	if _, err := db.GetRepoAuth(ctx, "t2", "c1"); service.ErrorReason(err) != "repo_auth_not_found" {
		t.Errorf("t2/c1: %v, want repo_auth_not_found", err)
	}
}

func TestPutRepoAuthRefusesMisfiledRecords(t *testing.T) {
	db := mustRepoAuthSetup(t)
	ctx := context.Background()
	k := testSealer(t, "a")
	// Sealed for t1/c1, stored for t1/c2: it would never open there.
	if _, err := db.PutRepoAuth(ctx, "t1", "c2", mustSealToken(t, k, "t1", "c1", "ghp_0123456789abcdefghij"), repoAuthTime); service.ErrorCode(err) != service.EINTERNAL {
		t.Errorf("misfiled record: %v, want internal", err)
	}
	// A record breaking the table's shape rules is refused by the schema.
	bad := mustSealToken(t, k, "t1", "c1", "ghp_0123456789abcdefghij")
	bad.KeyID = ""
	if _, err := db.PutRepoAuth(ctx, "t1", "c1", bad, repoAuthTime); err == nil {
		t.Error("a sealed token without its key id was stored")
	}
	bad = service.SealedRepoAuth{TeamID: "t1", ClusterID: "c1", Type: "ssh_key"}
	if _, err := db.PutRepoAuth(ctx, "t1", "c1", bad, repoAuthTime); err == nil {
		t.Error("ssh_key without a private key or known_hosts was stored")
	}
}

func TestListAndReplaceSealed(t *testing.T) {
	db := mustRepoAuthSetup(t)
	ctx := context.Background()
	a := testSealer(t, "a")
	s1 := mustPutRepoAuth(t, db, mustSealToken(t, a, "t1", "c1", "ghp_0123456789abcdefghij"))
	s2 := mustPutRepoAuth(t, db, mustSealToken(t, a, "t2", "c1", "ghp_9876543210abcdefghij"))
	none, _ := service.SealRepoAuth(nil, "t1", "c2", service.RepoAuth{Type: "none"})
	mustPutRepoAuth(t, db, none)

	list, err := db.ListSealedSecrets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]service.SealedRepoAuth{s1, s2}, list); diff != "" {
		t.Errorf("ListSealedSecrets (-want +got):\n%s", diff)
	}

	next := mustSealToken(t, testSealer(t, "b"), "t1", "c1", "ghp_0123456789abcdefghij")
	if ok, err := db.ReplaceSealed(ctx, s1, next); err != nil || !ok {
		t.Fatalf("ReplaceSealed = %v, %v", ok, err)
	}
	got, _ := db.GetRepoAuth(ctx, "t1", "c1")
	want := s1
	want.TokenSealed, want.KeyID = next.TokenSealed, "b"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after ReplaceSealed (-want +got):\n%s", diff)
	}
	// A stale record (the row changed meanwhile) replaces nothing.
	if ok, err := db.ReplaceSealed(ctx, s1, mustSealToken(t, a, "t1", "c1", "ghp_0123456789abcdefghij")); err != nil || ok {
		t.Errorf("stale ReplaceSealed = %v, %v; want false", ok, err)
	}
	if after, _ := db.GetRepoAuth(ctx, "t1", "c1"); after != got {
		t.Errorf("a stale replace changed the row")
	}
	if _, err := db.ReplaceSealed(ctx, s1, s2); service.ErrorCode(err) != service.EINTERNAL {
		t.Errorf("replace across clusters: %v, want internal", err)
	}
}
