package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

var clusterTime = time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)

// newEKSCluster is a pending registration of the EKS cluster name in
// account's eu-west-1, with the id the service would have chosen.
func newEKSCluster(team, id, account, name string) service.Cluster {
	return service.Cluster{
		ID: id, TeamID: team, Name: name, Kind: service.ClusterEKS, AccessLevel: service.AccessLimited,
		Namespaces: []string{"web", "api", "web"}, AccountID: account, Region: "eu-west-1", EKSName: name,
		Endpoint: "https://0123ABCD.gr7.eu-west-1.eks.amazonaws.com", CAData: []byte("-----BEGIN CERTIFICATE-----\n"),
		AccessState: service.AccessPending, AccessReason: "AWS is propagating the access entry.",
	}
}

// mustEKSSetup creates teams t1 and t2, account acc-1 in t1 (and acc-2 in
// t2) and returns the store.
func mustEKSSetup(tb testing.TB) *store.DB {
	tb.Helper()
	db, _ := pgtest.MustOpenDB(tb)
	mustTeams(tb, db, "t1", "t2")
	mustCreateAccount(tb, db, newAccount("t1", "acc-1", "123456789012"))
	mustCreateAccount(tb, db, newAccount("t2", "acc-2", "210987654321"))
	return db
}

// mustCreateCluster stores c.
func mustCreateCluster(tb testing.TB, db *store.DB, c service.Cluster) service.Cluster {
	tb.Helper()
	out, err := db.CreateCluster(context.Background(), c, clusterTime)
	if err != nil {
		tb.Fatalf("create cluster %s: %v", c.ID, err)
	}
	return out
}

// staticCluster is what the static configuration upserts.
func staticCluster(team, id string) service.Cluster {
	return service.Cluster{TeamID: team, ID: id, Name: id, Kind: service.ClusterStatic,
		AccessLevel: service.AccessFull, Namespaces: []string{}, ArgoCDNamespace: "argocd"}
}

func TestCreateEKSClusterRoundTrip(t *testing.T) {
	db := mustEKSSetup(t)
	ctx := context.Background()

	created := mustCreateCluster(t, db, newEKSCluster("t1", "prod-eu", "acc-1", "prod"))
	want := newEKSCluster("t1", "prod-eu", "acc-1", "prod")
	want.Namespaces = []string{"api", "web"} // distinct and sorted
	want.ArgoCDNamespace = service.DefaultArgoCDNamespace
	want.CreatedAt, want.UpdatedAt = clusterTime, clusterTime
	if diff := cmp.Diff(want, created); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	got, err := db.GetCluster(ctx, "t1", "prod-eu")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetCluster (-want +got):\n%s", diff)
	}

	// The list holds EKS rows with every field and static rows as active
	// with empty EKS fields.
	static, err := db.UpsertCluster(ctx, staticCluster("t1", "dev"), clusterTime)
	if err != nil {
		t.Fatal(err)
	}
	wantStatic := staticCluster("t1", "dev")
	wantStatic.AccessState = service.AccessActive
	wantStatic.CreatedAt, wantStatic.UpdatedAt = clusterTime, clusterTime
	if diff := cmp.Diff(wantStatic, static); diff != "" {
		t.Errorf("static cluster (-want +got):\n%s", diff)
	}
	list, err := db.ListClusters(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]service.Cluster{wantStatic, want}, list); diff != "" {
		t.Errorf("ListClusters (-want +got):\n%s", diff)
	}
	if other, err := db.ListClusters(ctx, "t2"); err != nil || len(other) != 0 {
		t.Errorf("t2 lists %v, %v", other, err)
	}
	if _, err := db.GetCluster(ctx, "t2", "prod-eu"); service.ErrorReason(err) != "cluster_not_found" {
		t.Errorf("t2 reads t1's cluster: %v", err)
	}

	// Not yet described: no endpoint or CA, read back as empty.
	bare := newEKSCluster("t1", "stage", "acc-1", "stage")
	bare.Endpoint, bare.CAData, bare.ArgoCDNamespace = "", nil, "gitops"
	bare = mustCreateCluster(t, db, bare)
	if bare.Endpoint != "" || bare.CAData != nil || bare.ArgoCDNamespace != "gitops" {
		t.Errorf("bare registration read back as %+v", bare)
	}
}

func TestCreateClusterConflicts(t *testing.T) {
	db := mustEKSSetup(t)
	ctx := context.Background()
	mustCreateCluster(t, db, newEKSCluster("t1", "prod-eu", "acc-1", "prod"))
	if _, err := db.UpsertCluster(ctx, staticCluster("t1", "dev"), clusterTime); err != nil {
		t.Fatal(err)
	}

	t.Run("ErrSameEKSCluster", func(t *testing.T) {
		_, err := db.CreateCluster(ctx, newEKSCluster("t1", "prod-eu-2", "acc-1", "prod"), clusterTime)
		wantError(t, err, service.ECONFLICT, "cluster_exists")
		if _, err := db.GetCluster(ctx, "t1", "prod-eu-2"); service.ErrorReason(err) != "cluster_not_found" {
			t.Errorf("the refused cluster was stored: %v", err)
		}
	})
	t.Run("ErrIDTaken", func(t *testing.T) {
		// An id the team already uses (a static cluster's) is a plain
		// conflict: the service chooses another id.
		_, err := db.CreateCluster(ctx, newEKSCluster("t1", "dev", "acc-1", "dev"), clusterTime)
		wantError(t, err, service.ECONFLICT, "")
	})
	t.Run("SameNameOtherRegion", func(t *testing.T) {
		c := newEKSCluster("t1", "prod-us", "acc-1", "prod")
		c.Region = "us-east-1"
		mustCreateCluster(t, db, c)
	})
	t.Run("SameNameOtherAccount", func(t *testing.T) {
		mustCreateCluster(t, db, newEKSCluster("t2", "prod-eu", "acc-2", "prod"))
	})
	t.Run("ErrOtherTeamsAccount", func(t *testing.T) {
		_, err := db.CreateCluster(ctx, newEKSCluster("t1", "x", "acc-2", "x"), clusterTime)
		wantError(t, err, service.ENOTFOUND, "account_not_found")
	})
	t.Run("ErrUnknownAccount", func(t *testing.T) {
		_, err := db.CreateCluster(ctx, newEKSCluster("t1", "x", "acc-9", "x"), clusterTime)
		wantError(t, err, service.ENOTFOUND, "account_not_found")
	})
	t.Run("ErrStaticKind", func(t *testing.T) {
		c := newEKSCluster("t1", "x", "acc-1", "x")
		c.Kind = service.ClusterStatic
		if _, err := db.CreateCluster(ctx, c, clusterTime); err == nil {
			t.Error("CreateCluster stored a static cluster")
		}
	})
	t.Run("ErrNoRegion", func(t *testing.T) {
		c := newEKSCluster("t1", "x", "acc-1", "x")
		c.Region = ""
		if _, err := db.CreateCluster(ctx, c, clusterTime); err == nil {
			t.Error("an EKS cluster without a region was stored")
		}
	})
	t.Run("ErrUnknownAccessState", func(t *testing.T) {
		c := newEKSCluster("t1", "x", "acc-1", "x")
		c.AccessState = "broken"
		if _, err := db.CreateCluster(ctx, c, clusterTime); err == nil {
			t.Error("an unknown access state was stored")
		}
	})
	t.Run("ErrStaticUpsertOverEKS", func(t *testing.T) {
		// The static configuration does not take over a registered cluster.
		_, err := db.UpsertCluster(ctx, staticCluster("t1", "prod-eu"), clusterTime.Add(time.Hour))
		wantError(t, err, service.ECONFLICT, "")
		c, err := db.GetCluster(ctx, "t1", "prod-eu")
		if err != nil || c.Kind != service.ClusterEKS || c.AccessState != service.AccessPending || !c.UpdatedAt.Equal(clusterTime) {
			t.Errorf("the EKS cluster changed: %+v, %v", c, err)
		}
	})
}

// The schema refuses EKS rows without their location and states it does not
// know, whoever writes them.
func TestClusterChecks(t *testing.T) {
	db, url := pgtest.MustOpenDB(t)
	mustTeams(t, db, "t1")
	mustCreateAccount(t, db, newAccount("t1", "acc-1", "123456789012"))
	insert := `INSERT INTO clusters (team_id, id, name, kind, access_level, created_at, updated_at, `
	cases := map[string]string{
		"ErrEKSWithoutAccount": insert + `region, eks_name) VALUES ('t1', 'a', 'a', 'eks', 'full', now(), now(), 'eu-west-1', 'a')`,
		"ErrEKSWithoutRegion":  insert + `account_id, eks_name) VALUES ('t1', 'a', 'a', 'eks', 'full', now(), now(), 'acc-1', 'a')`,
		"ErrEKSWithoutName":    insert + `account_id, region) VALUES ('t1', 'a', 'a', 'eks', 'full', now(), now(), 'acc-1', 'eu-west-1')`,
		"ErrEKSEmptyName": insert + `account_id, region, eks_name)
			VALUES ('t1', 'a', 'a', 'eks', 'full', now(), now(), 'acc-1', 'eu-west-1', '')`,
		"ErrUnknownAccount": insert + `account_id, region, eks_name)
			VALUES ('t1', 'a', 'a', 'eks', 'full', now(), now(), 'acc-9', 'eu-west-1', 'a')`,
		"ErrUnknownAccessState": insert + `access_state) VALUES ('t1', 'a', 'a', 'static', 'full', now(), now(), 'unknown')`,
	}
	for name, sql := range cases {
		t.Run(name, func(t *testing.T) {
			if err := pgtest.MustExecErr(t, url, sql); err == nil {
				t.Error("stored")
				pgtest.MustExec(t, url, `DELETE FROM clusters`)
			}
		})
	}
	if err := db.DeleteCluster(context.Background(), "t1", "a"); service.ErrorReason(err) != "cluster_not_found" {
		t.Errorf("a refused row is stored: %v", err)
	}
}

func TestSetClusterAccess(t *testing.T) {
	db := mustEKSSetup(t)
	ctx := context.Background()
	created := mustCreateCluster(t, db, newEKSCluster("t1", "prod-eu", "acc-1", "prod"))
	if _, err := db.UpsertCluster(ctx, staticCluster("t1", "dev"), clusterTime); err != nil {
		t.Fatal(err)
	}

	later := clusterTime.Add(time.Minute)
	access := service.ClusterAccess{Level: service.AccessFull, State: service.AccessActive, EntryCreated: true,
		Endpoint: "https://FFFF.gr7.eu-west-1.eks.amazonaws.com", CAData: []byte("new CA")}
	got, err := db.SetClusterAccess(ctx, "t1", "prod-eu", access, later)
	if err != nil {
		t.Fatal(err)
	}
	want := created
	want.AccessLevel, want.AccessState, want.AccessReason, want.EntryCreated = service.AccessFull, service.AccessActive, "", true
	want.Endpoint, want.CAData, want.UpdatedAt = access.Endpoint, access.CAData, later
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after SetClusterAccess (-want +got):\n%s", diff)
	}
	if read, _ := db.GetCluster(ctx, "t1", "prod-eu"); !cmp.Equal(want, read) {
		t.Errorf("read back %+v", read)
	}

	t.Run("EmptyKeepsLevelEndpointCA", func(t *testing.T) {
		later := later.Add(time.Minute)
		got, err := db.SetClusterAccess(ctx, "t1", "prod-eu", service.ClusterAccess{
			State: service.AccessDegraded, Reason: "The cluster refused Kukie's token.", EntryCreated: true}, later)
		if err != nil {
			t.Fatal(err)
		}
		want := want
		want.AccessState, want.AccessReason, want.UpdatedAt = service.AccessDegraded, "The cluster refused Kukie's token.", later
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("ErrOtherTeam", func(t *testing.T) {
		_, err := db.SetClusterAccess(ctx, "t2", "prod-eu", access, later)
		wantError(t, err, service.ENOTFOUND, "cluster_not_found")
	})
	t.Run("ErrStaticCluster", func(t *testing.T) {
		_, err := db.SetClusterAccess(ctx, "t1", "dev", access, later)
		wantError(t, err, service.ENOTFOUND, "cluster_not_found")
	})
	t.Run("ErrUnknownState", func(t *testing.T) {
		if _, err := db.SetClusterAccess(ctx, "t1", "prod-eu", service.ClusterAccess{State: "lost"}, later); err == nil {
			t.Error("unknown access state stored")
		}
	})
}

func TestDeleteCluster(t *testing.T) {
	db := mustEKSSetup(t)
	ctx := context.Background()
	mustCreateCluster(t, db, newEKSCluster("t1", "prod-eu", "acc-1", "prod"))

	wantError(t, db.DeleteCluster(ctx, "t2", "prod-eu"), service.ENOTFOUND, "cluster_not_found")
	if _, err := db.GetCluster(ctx, "t1", "prod-eu"); err != nil {
		t.Fatalf("another team's delete removed the cluster: %v", err)
	}
	if err := db.DeleteCluster(ctx, "t1", "prod-eu"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetCluster(ctx, "t1", "prod-eu"); service.ErrorReason(err) != "cluster_not_found" {
		t.Errorf("after delete: %v", err)
	}
	wantError(t, db.DeleteCluster(ctx, "t1", "prod-eu"), service.ENOTFOUND, "cluster_not_found")
	// The registration can be made again.
	mustCreateCluster(t, db, newEKSCluster("t1", "prod-eu", "acc-1", "prod"))
}

// TestClusterRemovalIsOneWay: a cluster being removed can only stay so or
// fail its revocation (a late access job must not revive it), and an entry
// Kukie created is never forgotten by a stale writer.
func TestClusterRemovalIsOneWay(t *testing.T) {
	db := mustEKSSetup(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := service.Cluster{TeamID: "t1", ID: "x", Name: "x", Kind: service.ClusterEKS, AccessLevel: service.AccessFull,
		Namespaces: []string{"web"}, AccountID: "acc-1", Region: "us-east-1", EKSName: "x", AccessState: service.AccessPending}
	if _, err := db.CreateCluster(ctx, c, now); err != nil {
		t.Fatal(err)
	}
	set := func(state service.AccessState, created bool) (service.Cluster, error) {
		return db.SetClusterAccess(ctx, "t1", "x", service.ClusterAccess{State: state, EntryCreated: created}, now)
	}
	if _, err := set(service.AccessPending, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := set(service.AccessDeleting, false); !got.EntryCreated || got.AccessState != service.AccessDeleting {
		t.Fatalf("deleting: %+v (entry_created must stay on)", got)
	}
	if _, err := set(service.AccessActive, true); service.ErrorCode(err) != service.ECONFLICT {
		t.Errorf("deleting → active: %v, want a conflict", err)
	}
	if _, err := set(service.AccessRevocationFailed, false); service.ErrorCode(err) != service.ECONFLICT {
		t.Errorf("deleting → revocation_failed: %v, want a conflict (a failed removal stays deleting)", err)
	}
	if got, err := db.SetClusterAccess(ctx, "t1", "x", service.ClusterAccess{State: service.AccessDeleting,
		Reason: "Removing Kukie's access failed: AccessDenied."}, clusterTime); err != nil ||
		got.AccessState != service.AccessDeleting || got.AccessReason == "" {
		t.Errorf("deleting with the failure's reason: %+v %v", got, err)
	}
	unlock, err := db.LockCluster(ctx, "t1", "x")
	if err != nil {
		t.Fatal(err)
	}
	locked := make(chan struct{})
	go func() {
		second, err := db.LockCluster(ctx, "t1", "x")
		if err == nil {
			second()
		}
		close(locked)
	}()
	select {
	case <-locked:
		t.Fatal("a second holder got the cluster's lock")
	case <-time.After(100 * time.Millisecond): // the other holder waits; not a timing assertion on speed
	}
	unlock()
	<-locked
}
