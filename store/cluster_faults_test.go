package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// TestClusterLocksLeaveConnections holds a cluster lock on a pool of two
// connections: a second lock waits (here until its context ends) instead
// of taking the last connection, so the work under the first can still
// query. Before locks were bounded, the second lock took it and the query
// waited for good.
func TestClusterLocksLeaveConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only catches a hang
	defer cancel()
	db, err := store.Open(ctx, pgtest.MustCreateDatabase(t)+"&pool_max_conns=2")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	unlockA, err := db.LockCluster(ctx, "team-a", "a")
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if unlock, err := db.LockCluster(short, "team-a", "b"); err == nil {
		unlock()
		unlockA() // so that Close need not wait for it
		t.Fatal("a second lock took the last connection of the pool")
	} else if service.ErrorCode(err) != service.EUNAVAILABLE {
		t.Errorf("a lock whose context ended while waiting: %v, want unavailable", err)
	}
	if err := db.Ping(ctx); err != nil {
		t.Errorf("a query under the lock: %v", err)
	}
	unlockA()
	unlockB, err := db.LockCluster(ctx, "team-a", "b")
	if err != nil {
		t.Fatalf("a lock after the first was released: %v", err)
	}
	unlockB()
}
