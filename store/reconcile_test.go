package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

// The periodic jobs list every account but the deleting ones, and the
// catch-up only those whose applied generation lags.
func TestAccountsToReconcile(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	mustTeams(t, db, "t1", "t2")
	mustCreateAccount(t, db, newAccount("t1", "acc-1", "111111111111"))
	mustCreateAccount(t, db, newAccount("t2", "acc-2", "222222222222"))
	mustCreateAccount(t, db, newAccount("t2", "acc-3", "333333333333"))
	if _, err := db.SetAccountState(ctx, "t2", "acc-3", service.AccountDeleting, "", accountTime); err != nil {
		t.Fatal(err)
	}
	if err := db.RequestReconcileTx(ctx, "t2", "acc-2", nil); err != nil {
		t.Fatal(err)
	}
	all, err := db.AccountsToReconcile(ctx, false)
	want := []service.AccountKey{{TeamID: "t1", AccountID: "acc-1"}, {TeamID: "t2", AccountID: "acc-2"}}
	if diff := cmp.Diff(want, all); err != nil || diff != "" {
		t.Errorf("all accounts (-want +got), %v:\n%s", err, diff)
	}
	lagging, err := db.AccountsToReconcile(ctx, true)
	if diff := cmp.Diff(want[1:], lagging); err != nil || diff != "" {
		t.Errorf("lagging accounts (-want +got), %v:\n%s", err, diff)
	}
	if err := db.MarkApplied(ctx, "t2", "acc-2", 1, accountTime); err != nil {
		t.Fatal(err)
	}
	if lagging, err := db.AccountsToReconcile(ctx, true); err != nil || len(lagging) != 0 {
		t.Errorf("lagging after applying: %v, %v", lagging, err)
	}
}

// RequestReconcileTx bumps the generation with the job, or neither.
func TestRequestReconcileTx(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	failed := errors.New("insert job failed")
	err := db.RequestReconcileTx(ctx, "t1", "acc-1", func(pgx.Tx) error { return failed })
	if !errors.Is(err, failed) {
		t.Errorf("error %v, want the inTx error", err)
	}
	wantGenerations(t, db, 0, 0)
	ran := false
	if err := db.RequestReconcileTx(ctx, "t1", "acc-1", func(pgx.Tx) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("request: %v (inTx ran: %v)", err, ran)
	}
	wantGenerations(t, db, 1, 0)
	wantError(t, db.RequestReconcileTx(ctx, "t2", "acc-1", nil), service.ENOTFOUND, "account_not_found")
	if _, err := db.SetAccountState(ctx, "t1", "acc-1", service.AccountDeleting, "", accountTime); err != nil {
		t.Fatal(err)
	}
	wantError(t, db.RequestReconcileTx(ctx, "t1", "acc-1", nil), service.ENOTFOUND, "account_not_found")
	wantGenerations(t, db, 1, 0)
}

// SetChosenLevelTx records the choice with the job, or neither; the
// account read back carries the choice and the generations.
func TestSetChosenLevelTx(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	failed := errors.New("insert job failed")
	if _, err := db.SetChosenLevelTx(ctx, "t1", "acc-1", service.AccessFull, accountTime,
		func(pgx.Tx) error { return failed }); !errors.Is(err, failed) {
		t.Errorf("error %v, want the inTx error", err)
	}
	a, err := db.GetAccount(ctx, "t1", "acc-1")
	if err != nil || a.ChosenLevel != "" || a.DesiredGeneration != 0 {
		t.Errorf("after a rolled back choice: %+v, %v", a, err)
	}
	a, err = db.SetChosenLevelTx(ctx, "t1", "acc-1", service.AccessFull, accountTime, func(pgx.Tx) error { return nil })
	if err != nil || a.ChosenLevel != service.AccessFull || a.DesiredGeneration != 1 || a.AppliedGeneration != 0 {
		t.Errorf("after choosing full: %+v, %v", a, err)
	}
	if err := db.MarkApplied(ctx, "t1", "acc-1", 1, accountTime); err != nil {
		t.Fatal(err)
	}
	if a, err := db.GetAccount(ctx, "t1", "acc-1"); err != nil || a.AppliedGeneration != 1 {
		t.Errorf("account after applying: %+v, %v", a, err)
	}
}

// The metrics' counts come from the tables.
func TestMetricCounts(t *testing.T) {
	db := mustEKSSetup(t)
	ctx := context.Background()
	mustCreateCluster(t, db, newEKSCluster("t1", "c1", "acc-1", "one"))
	mustCreateCluster(t, db, newEKSCluster("t2", "c2", "acc-2", "two"))
	if _, err := db.UpsertCluster(ctx, staticCluster("t1", "s1"), clusterTime); err != nil {
		t.Fatal(err)
	}
	counts, err := db.ClustersByAccessState(ctx)
	if diff := cmp.Diff(map[string]int{"pending": 2}, counts); err != nil || diff != "" {
		t.Errorf("EKS clusters by state (-want +got), %v:\n%s", err, diff)
	}
	if _, err := db.Pool().Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, queue, state, scheduled_at, finalized_at)
		VALUES ('{}', 'k', 5, 'q', 'available', now(), NULL), ('{}', 'k', 5, 'q', 'available', now(), NULL),
		       ('{}', 'k', 5, 'q', 'completed', now(), now())`); err != nil {
		t.Fatal(err)
	}
	backlog, err := db.JobBacklog(ctx)
	if diff := cmp.Diff(map[string]int{"k/available": 2}, backlog); err != nil || diff != "" {
		t.Errorf("backlog (-want +got), %v:\n%s", err, diff)
	}
}

// Expired pending subscriptions are deleted; unexpired ones stay.
func TestDeleteExpiredPendingSubscriptions(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	topic := "arn:aws:sns:eu-west-1:123456789012:kukie"
	for i, at := range []time.Time{accountTime, accountTime.Add(2 * 24 * time.Hour)} {
		if err := db.SavePendingSubscription(ctx, service.PendingSubscription{TopicARN: fmt.Sprint(topic, i), MessageID: fmt.Sprint("m", i),
			SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription", Token: "t", ReceivedAt: at}, 100); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.DeleteExpiredPendingSubscriptions(ctx, accountTime.Add(service.PendingSubscriptionTTL))
	if err != nil || n != 1 {
		t.Fatalf("deleted %d, %v; want the first one", n, err)
	}
	left, err := db.TakePendingSubscriptions(ctx, topic+"1", accountTime.Add(service.PendingSubscriptionTTL))
	if err != nil || len(left) != 1 || left[0].MessageID != "m1" {
		t.Errorf("left: %+v, %v", left, err)
	}
}
