package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// mustSwitchAccount opens a fresh store with teams t1 and t2 and t1's
// account acc-1 in AWS account 123456789012.
func mustSwitchAccount(tb testing.TB) *store.DB {
	tb.Helper()
	db, _ := pgtest.MustOpenDB(tb)
	mustTeams(tb, db, "t1", "t2")
	mustCreateAccount(tb, db, newAccount("t1", "acc-1", "123456789012"))
	return db
}

// stackNotification is a notification of acc-1's stack.
func stackNotification(messageID string, eventTime time.Time) service.StackNotification {
	return service.StackNotification{
		MessageID: messageID, TeamID: "t1", AccountID: "acc-1",
		TopicARN: "arn:aws:sns:eu-west-1:123456789012:kukie", Type: "Notification",
		StackID:        "arn:aws:cloudformation:eu-west-1:123456789012:stack/kukie-access/0f1e2d3c",
		ResourceStatus: "UPDATE_COMPLETE", EventTime: eventTime,
	}
}

// count runs a count query on the store's pool.
func count(tb testing.TB, db *store.DB, query string, args ...any) int {
	tb.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", query, err)
	}
	return n
}

// wantGenerations fails unless acc-1's generations are desired and applied.
func wantGenerations(tb testing.TB, db *store.DB, desired, applied int64) {
	tb.Helper()
	d, a, err := db.AccountGenerations(context.Background(), "t1", "acc-1")
	if err != nil || d != desired || a != applied {
		tb.Errorf("generations (desired, applied) = (%d, %d), %v; want (%d, %d)", d, a, err, desired, applied)
	}
}

// SNS retries reuse the MessageId: three deliveries at once store one
// message and bump the desired generation once.
func TestRecordNotificationSameMessageConcurrent(t *testing.T) {
	db := mustSwitchAccount(t)
	const deliveries = 3
	type result struct {
		desired   int64
		duplicate bool
		err       error
	}
	results := make([]result, deliveries)
	inTxCalls := 0
	var mu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			var r result
			r.desired, r.duplicate, r.err = db.RecordNotificationTx(context.Background(),
				stackNotification("msg-1", accountTime), accountTime, func(pgx.Tx) error {
					mu.Lock()
					inTxCalls++
					mu.Unlock()
					return nil
				})
			results[i] = r
		})
	}
	close(start)
	wg.Wait()
	firsts := 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("delivery %d: %v", i, r.err)
		}
		if !r.duplicate {
			firsts++
		}
		if r.desired != 1 {
			t.Errorf("delivery %d (duplicate %v) returned desired generation %d, want 1", i, r.duplicate, r.desired)
		}
	}
	if firsts != 1 || inTxCalls != 1 {
		t.Errorf("%d deliveries recorded, inTx ran %d times; want 1 and 1", firsts, inTxCalls)
	}
	if n := count(t, db, `SELECT count(*) FROM sns_messages`); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
	wantGenerations(t, db, 1, 0)

	// A later retry is a duplicate too; a new message bumps again.
	if d, dup, err := db.RecordNotification(context.Background(), stackNotification("msg-1", accountTime),
		accountTime.Add(time.Minute)); err != nil || !dup || d != 1 {
		t.Errorf("late retry: desired %d, duplicate %v, %v", d, dup, err)
	}
	if d, dup, err := db.RecordNotification(context.Background(), stackNotification("msg-2", accountTime.Add(time.Hour)),
		accountTime.Add(time.Hour)); err != nil || dup || d != 2 {
		t.Errorf("second message: desired %d, duplicate %v, %v", d, dup, err)
	}
	wantGenerations(t, db, 2, 0)
}

func TestRecordNotificationStored(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	received := accountTime.Add(2 * time.Minute)
	n := stackNotification("msg-1", accountTime.Add(time.Minute))
	if _, _, err := db.RecordNotification(ctx, n, received); err != nil {
		t.Fatal(err)
	}
	var got service.StackNotification
	var gotReceived time.Time
	if err := db.Pool().QueryRow(ctx, `SELECT message_id, team_id, account_id, topic_arn, type, stack_id,
			resource_status, event_time, received_at FROM sns_messages`).Scan(&got.MessageID, &got.TeamID,
		&got.AccountID, &got.TopicARN, &got.Type, &got.StackID, &got.ResourceStatus, &got.EventTime, &gotReceived); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(n, got); diff != "" || !gotReceived.Equal(received) {
		t.Errorf("stored (-want +got):\n%s\nreceived at %v, want %v", diff, gotReceived, received)
	}

	// The newest stack event is kept: an older one delivered late does not
	// move it back.
	if _, _, err := db.RecordNotification(ctx, stackNotification("msg-0", accountTime), received); err != nil {
		t.Fatal(err)
	}
	s, err := db.SwitchState(ctx, "t1", "acc-1")
	if err != nil {
		t.Fatal(err)
	}
	if !s.LastStackEventAt.Equal(n.EventTime) || s.DesiredGeneration != 2 {
		t.Errorf("after an older event: last event %v (want %v), desired %d (want 2)",
			s.LastStackEventAt, n.EventTime, s.DesiredGeneration)
	}
	// Recording is bookkeeping: the account's facts and updated_at stay.
	if a, err := db.GetAccount(ctx, "t1", "acc-1"); err != nil || !a.UpdatedAt.Equal(accountTime) {
		t.Errorf("account updated at %v, %v; want %v", a.UpdatedAt, err, accountTime)
	}
}

// An error from inTx rolls back the message and the bump, so SNS's retry
// records it afresh.
func TestRecordNotificationTxRollback(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	jobFailed := errors.New("insert job: connection reset")
	var seenInTx int
	_, _, err := db.RecordNotificationTx(ctx, stackNotification("msg-1", accountTime), accountTime,
		func(tx pgx.Tx) error {
			// The transaction holds the message and the bump when inTx runs.
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM sns_messages m JOIN aws_accounts a
				ON a.team_id = m.team_id AND a.id = m.account_id WHERE a.desired_generation = 1`).Scan(&seenInTx); err != nil {
				return err
			}
			return jobFailed
		})
	if !errors.Is(err, jobFailed) {
		t.Errorf("error %v, want the inTx error in the chain", err)
	}
	if seenInTx != 1 {
		t.Errorf("inTx saw %d bumped messages in its transaction, want 1", seenInTx)
	}
	if n := count(t, db, `SELECT count(*) FROM sns_messages`); n != 0 {
		t.Errorf("%d messages stored after the rollback", n)
	}
	wantGenerations(t, db, 0, 0)

	// A service error from inTx keeps its code.
	_, _, err = db.RecordNotificationTx(ctx, stackNotification("msg-1", accountTime), accountTime,
		func(pgx.Tx) error { return service.ErrAWSUnavailable() })
	wantError(t, err, service.EUNAVAILABLE, "aws_unavailable")

	d, dup, err := db.RecordNotification(ctx, stackNotification("msg-1", accountTime), accountTime)
	if err != nil || dup || d != 1 {
		t.Errorf("retry after the rollback: desired %d, duplicate %v, %v; want 1, false", d, dup, err)
	}
}

func TestAllowedTopic(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	mustTeams(t, db, "t1", "t2")
	a := newAccount("t1", "acc-1", "123456789012")
	a.NotificationARNs = []string{"arn:aws:sns:eu-west-1:123456789012:kukie",
		"arn:aws:sns:us-east-1:123456789012:ops",
		// Listed, but another AWS account's topic: never allowed for acc-1.
		"arn:aws:sns:eu-west-1:999999999999:foreign"}
	mustCreateAccount(t, db, a)
	b := newAccount("t2", "acc-2", "210987654321")
	b.NotificationARNs = []string{"arn:aws:sns:eu-west-1:210987654321:kukie"}
	mustCreateAccount(t, db, b)
	cn := newAccount("t2", "acc-cn", "123456789012")
	cn.Partition = "aws-cn"
	cn.NotificationARNs = []string{"arn:aws-cn:sns:cn-north-1:123456789012:kukie"}
	mustCreateAccount(t, db, cn)

	cases := []struct {
		name, topic, team, account string
	}{
		{"Listed", "arn:aws:sns:eu-west-1:123456789012:kukie", "t1", "acc-1"},
		{"ListedOtherRegion", "arn:aws:sns:us-east-1:123456789012:ops", "t1", "acc-1"},
		{"OtherTeamsAccount", "arn:aws:sns:eu-west-1:210987654321:kukie", "t2", "acc-2"},
		{"OtherPartition", "arn:aws-cn:sns:cn-north-1:123456789012:kukie", "t2", "acc-cn"},
		{"ErrSameNameOtherAccount", "arn:aws:sns:eu-west-1:111111111111:kukie", "", ""},
		{"ErrListedButForeign", "arn:aws:sns:eu-west-1:999999999999:foreign", "", ""},
		{"ErrNotListed", "arn:aws:sns:eu-west-1:123456789012:other", "", ""},
		{"ErrOtherRegion", "arn:aws:sns:eu-central-1:123456789012:kukie", "", ""},
		{"ErrPartitionMismatch", "arn:aws-cn:sns:eu-west-1:123456789012:kukie", "", ""},
		{"ErrLongerAccountID", "arn:aws:sns:eu-west-1:1234567890123:kukie", "", ""},
		{"ErrEmpty", "", "", ""},
		{"ErrNotAnARN", "kukie", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			team, account, found, err := db.AllowedTopic(ctx, c.topic)
			if err != nil {
				t.Fatal(err)
			}
			if found != (c.team != "") || team != c.team || account != c.account {
				t.Errorf("AllowedTopic = %q, %q, %v; want %q, %q", team, account, found, c.team, c.account)
			}
		})
	}

	// A topic of an account that does not list it is allowed once it does.
	t.Run("ListedLater", func(t *testing.T) {
		topic := "arn:aws:sns:eu-west-1:210987654321:later"
		if _, _, found, err := db.AllowedTopic(ctx, topic); err != nil || found {
			t.Fatalf("before: found %v, %v", found, err)
		}
		facts := service.StackFacts{AccessLevel: service.AccessLimited, TemplateVersion: "5",
			NotificationARNs: []string{topic}}
		if _, err := db.SetAccountFacts(ctx, "t2", "acc-2", facts, accountTime); err != nil {
			t.Fatal(err)
		}
		if team, account, found, err := db.AllowedTopic(ctx, topic); err != nil || !found || team != "t2" || account != "acc-2" {
			t.Errorf("after: %q, %q, %v, %v", team, account, found, err)
		}
	})
}

func TestGenerationsNeverMoveBackwards(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	for i := range 3 {
		if _, _, err := db.RecordNotification(ctx, stackNotification(fmt.Sprint("msg-", i), accountTime), accountTime); err != nil {
			t.Fatal(err)
		}
	}
	wantGenerations(t, db, 3, 0)

	steps := []struct {
		name    string
		mark    int64
		applied int64
		wantErr bool
	}{
		{"Apply2", 2, 2, false},
		{"StaleJob1", 1, 2, false},
		{"Again2", 2, 2, false},
		{"ErrBeyondDesired", 4, 2, true},
		{"Apply3", 3, 3, false},
		{"StaleJob0", 0, 3, false},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			err := db.MarkApplied(ctx, "t1", "acc-1", s.mark, accountTime)
			if (err != nil) != s.wantErr {
				t.Errorf("MarkApplied(%d): %v, want error %v", s.mark, err, s.wantErr)
			}
			wantGenerations(t, db, 3, s.applied)
		})
	}

	// Choosing a level bumps the desired generation; the applied one waits
	// for the job.
	if _, err := db.SetChosenLevel(ctx, "t1", "acc-1", service.AccessFull, accountTime); err != nil {
		t.Fatal(err)
	}
	wantGenerations(t, db, 4, 3)
	// A duplicate never lowers or raises anything.
	if d, dup, err := db.RecordNotification(ctx, stackNotification("msg-0", accountTime), accountTime); err != nil || !dup || d != 4 {
		t.Errorf("duplicate: %d, %v, %v", d, dup, err)
	}
	wantGenerations(t, db, 4, 3)
}

// Marks of concurrent jobs land on the highest generation, whatever order
// they commit in.
func TestMarkAppliedConcurrent(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	const n = 8
	for i := range n {
		if _, _, err := db.RecordNotification(ctx, stackNotification(fmt.Sprint("msg-", i), accountTime), accountTime); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := int64(1); g <= n; g++ {
		wg.Go(func() {
			if err := db.MarkApplied(ctx, "t1", "acc-1", g, accountTime); err != nil {
				t.Errorf("MarkApplied(%d): %v", g, err)
			}
		})
	}
	wg.Wait()
	wantGenerations(t, db, n, n)
}

func TestSetChosenLevel(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	s, err := db.SwitchState(ctx, "t1", "acc-1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(service.AccountSwitchState{}, s); diff != "" {
		t.Errorf("a new account's switch state (-want +got):\n%s", diff)
	}

	chosen := accountTime.Add(time.Hour)
	a, err := db.SetChosenLevel(ctx, "t1", "acc-1", service.AccessFull, chosen)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != "acc-1" || a.AccessLevel != service.AccessLimited {
		t.Errorf("returned %+v: the chosen level is an intent, the applied level stays limited", a)
	}
	s, err = db.SwitchState(ctx, "t1", "acc-1")
	if err != nil {
		t.Fatal(err)
	}
	want := service.AccountSwitchState{DesiredGeneration: 1, ChosenLevel: service.AccessFull, ChosenAt: chosen}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("after choosing full (-want +got):\n%s", diff)
	}

	t.Run("ErrUnknownLevel", func(t *testing.T) {
		if _, err := db.SetChosenLevel(ctx, "t1", "acc-1", "admin", chosen); err == nil {
			t.Error("stored level admin")
		}
		if s, _ := db.SwitchState(ctx, "t1", "acc-1"); s.ChosenLevel != service.AccessFull || s.DesiredGeneration != 1 {
			t.Errorf("a refused choice changed the state to %+v", s)
		}
	})
}

func TestSetAccountFacts(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	before, err := db.GetAccount(ctx, "t1", "acc-1")
	if err != nil {
		t.Fatal(err)
	}
	later := accountTime.Add(time.Hour)
	facts := service.StackFacts{AccessLevel: service.AccessFull, TemplateVersion: "6",
		AllowedNamespaces: []string{"apps-*"},
		NotificationARNs:  []string{"arn:aws:sns:eu-west-1:123456789012:kukie-2"}}
	got, err := db.SetAccountFacts(ctx, "t1", "acc-1", facts, later)
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want.AccessLevel, want.TemplateVersion, want.AllowedNamespaces, want.NotificationARNs, want.UpdatedAt =
		service.AccessFull, "6", []string{"apps-*"}, []string{"arn:aws:sns:eu-west-1:123456789012:kukie-2"}, later
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after SetAccountFacts (-want +got):\n%s", diff)
	}
	if read, _ := db.GetAccount(ctx, "t1", "acc-1"); !cmp.Equal(want, read) {
		t.Errorf("read back %+v", read)
	}

	t.Run("UnchangedKeepsUpdatedAt", func(t *testing.T) {
		got, err := db.SetAccountFacts(ctx, "t1", "acc-1", facts, later.Add(time.Hour))
		if err != nil || !cmp.Equal(want, got) {
			t.Errorf("the same facts again: %+v, %v; want %+v", got, err, want)
		}
	})
	t.Run("ConfirmationRequiredThenActive", func(t *testing.T) {
		v4 := service.StackFacts{AccessLevel: service.AccessLimited, ConfirmationRequired: true,
			Reason: "The stack is v4.", TemplateVersion: "4"}
		got, err := db.SetAccountFacts(ctx, "t1", "acc-1", v4, later)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != service.AccountConfirmationRequired || got.StateReason != "The stack is v4." ||
			got.AllowedNamespaces == nil || len(got.AllowedNamespaces) != 0 || got.NotificationARNs == nil {
			t.Errorf("v4 facts: %+v", got)
		}
		if got, err = db.SetAccountFacts(ctx, "t1", "acc-1", facts, later); err != nil ||
			got.State != service.AccountActive || got.StateReason != "" {
			t.Errorf("v5 facts again: state %q reason %q, %v", got.State, got.StateReason, err)
		}
	})
	for _, state := range []service.AccountState{service.AccountDeleting, service.AccountDisconnected} {
		t.Run("Keeps"+string(state), func(t *testing.T) {
			if _, err := db.SetAccountState(ctx, "t1", "acc-1", state, "why", later); err != nil {
				t.Fatal(err)
			}
			got, err := db.SetAccountFacts(ctx, "t1", "acc-1", service.StackFacts{AccessLevel: service.AccessLimited,
				ConfirmationRequired: true, Reason: "unknown level", TemplateVersion: "5"}, later)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != state || got.StateReason != "why" || got.AccessLevel != service.AccessLimited {
				t.Errorf("state %q reason %q level %q; want %q, why, limited", got.State, got.StateReason, got.AccessLevel, state)
			}
		})
	}
	t.Run("ErrUnknownLevel", func(t *testing.T) {
		if _, err := db.SetAccountFacts(ctx, "t1", "acc-1", service.StackFacts{AccessLevel: "FULL"}, later); err == nil {
			t.Error("stored level FULL")
		}
	})
}

// change is a step of acc-1's switch at minute m.
func change(m int, clusterID string, outcome service.AccessChangeOutcome) service.AccessChange {
	return service.AccessChange{TeamID: "t1", AccountID: "acc-1", ClusterID: clusterID, Generation: 1,
		FromLevel: service.AccessFull, ToLevel: service.AccessLimited, Step: "disassociate_cluster_admin",
		Outcome: outcome, Attempt: 1, CreatedAt: accountTime.Add(time.Duration(m) * time.Minute)}
}

func TestAccessChangesNewestFirst(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	// Recorded out of time order, two at the same minute (the later id is
	// newer), one for the account as a whole.
	in := []service.AccessChange{
		change(1, "web", service.AccessChangeStarted),
		change(3, "web", service.AccessChangeFailed),
		change(2, "web", service.AccessChangeOK),
		change(3, "api", service.AccessChangeGone),
		change(4, "", service.AccessChangeOK),
	}
	in[1].Error, in[1].Attempt = "AccessDeniedException", 2
	var stored []service.AccessChange
	for _, c := range in {
		out, err := db.RecordAccessChange(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		want := c
		want.ID = out.ID
		if out.ID == 0 || !cmp.Equal(want, out) {
			t.Errorf("recorded %+v, want %+v", out, want)
		}
		stored = append(stored, out)
	}
	newestFirst := []service.AccessChange{stored[4], stored[3], stored[1], stored[2], stored[0]}

	all, err := db.ListAccessChanges(ctx, "t1", "acc-1", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(newestFirst, all); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}

	var paged []service.AccessChange
	var before *int64
	for range 10 {
		page, err := db.ListAccessChanges(ctx, "t1", "acc-1", 2, before)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		if len(page) > 2 {
			t.Fatalf("page of %d, limit 2", len(page))
		}
		paged = append(paged, page...)
		before = &page[len(page)-1].ID
	}
	if diff := cmp.Diff(newestFirst, paged); diff != "" {
		t.Errorf("paged by 2 (-want +got):\n%s", diff)
	}

	t.Run("UnknownCursorEmpty", func(t *testing.T) {
		unknown := int64(1 << 40)
		page, err := db.ListAccessChanges(ctx, "t1", "acc-1", 2, &unknown)
		if err != nil || page == nil || len(page) != 0 {
			t.Errorf("unknown cursor: %v, %v", page, err)
		}
	})
	t.Run("OtherAccountsCursorEmpty", func(t *testing.T) {
		mustCreateAccount(t, db, newAccount("t2", "acc-1", "210987654321"))
		other := change(9, "web", service.AccessChangeOK)
		other.TeamID = "t2"
		if _, err := db.RecordAccessChange(ctx, other); err != nil {
			t.Fatal(err)
		}
		list, err := db.ListAccessChanges(ctx, "t2", "acc-1", 10, &stored[0].ID)
		if err != nil || len(list) != 0 {
			t.Errorf("t1's cursor pages t2's history: %+v, %v", list, err)
		}
		if list, _ := db.ListAccessChanges(ctx, "t1", "acc-1", 10, nil); len(list) != len(in) {
			t.Errorf("t1 lists %d changes after t2 recorded one, want %d", len(list), len(in))
		}
	})
	t.Run("ErrZeroLimit", func(t *testing.T) {
		if _, err := db.ListAccessChanges(ctx, "t1", "acc-1", 0, nil); err == nil {
			t.Error("limit 0 accepted")
		}
	})
	t.Run("ErrNoCreatedAt", func(t *testing.T) {
		c := change(0, "web", service.AccessChangeOK)
		c.CreatedAt = time.Time{}
		if _, err := db.RecordAccessChange(ctx, c); err == nil {
			t.Error("recorded without a time")
		}
	})
	t.Run("ErrUnknownOutcome", func(t *testing.T) {
		if _, err := db.RecordAccessChange(ctx, change(5, "web", "skipped")); err == nil {
			t.Error("recorded outcome skipped")
		}
	})
	t.Run("WireJSON", func(t *testing.T) {
		b, err := json.Marshal(stored[1])
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(b, &fields); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		want := []string{"attempt", "cluster_id", "created_at", "error", "from_level", "generation", "id",
			"outcome", "step", "to_level"}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Errorf("JSON keys (-want +got):\n%s", diff)
		}
	})
	t.Run("EmptyHistory", func(t *testing.T) {
		mustCreateAccount(t, db, newAccount("t1", "acc-new", "111111111111"))
		list, err := db.ListAccessChanges(ctx, "t1", "acc-new", 10, nil)
		if err != nil || list == nil || len(list) != 0 {
			t.Errorf("empty history: %#v, %v", list, err)
		}
	})
}

func TestPendingSubscriptions(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	const topic = "arn:aws:sns:eu-west-1:123456789012:kukie"
	pending := func(id, topic string, received time.Time) service.PendingSubscription {
		return service.PendingSubscription{TopicARN: topic, MessageID: id,
			SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=" + topic + "&Token=tok-" + id,
			Token:        "tok-" + id, ReceivedAt: received}
	}
	save := func(t *testing.T, p service.PendingSubscription, max int) {
		t.Helper()
		if err := db.SavePendingSubscription(ctx, p, max); err != nil {
			t.Fatal(err)
		}
	}
	withExpiry := func(p service.PendingSubscription) service.PendingSubscription {
		p.ExpiresAt = p.ReceivedAt.Add(3 * 24 * time.Hour)
		return p
	}
	old := pending("m-old", topic, accountTime)
	fresh := pending("m-fresh", topic, accountTime.Add(time.Hour))
	fresh.Envelope = &sns.Message{Type: sns.TypeSubscriptionConfirmation, MessageID: fresh.MessageID, TopicARN: topic,
		Message: "You have chosen to subscribe.\nVisit the SubscribeURL.", Timestamp: "2026-03-04T05:06:07.000Z",
		SignatureVersion: "1", Signature: "c2ln", SigningCertURL: "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-ab.pem",
		SubscribeURL: fresh.SubscribeURL, Token: fresh.Token}
	other := pending("m-other", "arn:aws:sns:eu-west-1:123456789012:other", accountTime)
	// One per topic: the newest replaces the older; the same MessageId
	// again (SNS's retry) changes nothing, its expiry included.
	for _, p := range []service.PendingSubscription{old, other, old, fresh} {
		save(t, p, 100)
	}
	again := fresh
	again.ReceivedAt = accountTime.Add(48 * time.Hour)
	save(t, again, 100)
	if n := count(t, db, `SELECT count(*) FROM sns_pending_subscriptions`); n != 2 {
		t.Fatalf("%d stored, want 2 (one per topic)", n)
	}

	// One microsecond before fresh's three days are up it is taken, with
	// its envelope.
	now := fresh.ReceivedAt.Add(service.PendingSubscriptionTTL - time.Microsecond)
	got, err := db.TakePendingSubscriptions(ctx, topic, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]service.PendingSubscription{withExpiry(fresh)}, got); diff != "" {
		t.Errorf("taken (-want +got):\n%s", diff)
	}
	t.Run("TakenOnce", func(t *testing.T) {
		got, err := db.TakePendingSubscriptions(ctx, topic, now)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("second take: %+v, %v", got, err)
		}
	})
	t.Run("ExpiredAfterThreeDays", func(t *testing.T) {
		save(t, pending("m-late", topic, accountTime), 100)
		got, err := db.TakePendingSubscriptions(ctx, topic, accountTime.Add(3*24*time.Hour))
		if err != nil || len(got) != 0 {
			t.Errorf("taken at expiry: %+v, %v", got, err)
		}
		// Expired ones of every topic are deleted.
		if n := count(t, db, `SELECT count(*) FROM sns_pending_subscriptions`); n != 0 {
			t.Errorf("%d pending subscriptions left after their expiry", n)
		}
	})
	t.Run("ConcurrentTakesOnce", func(t *testing.T) {
		save(t, pending("m-once", topic, accountTime), 100)
		taken := make([][]service.PendingSubscription, 4)
		var wg sync.WaitGroup
		for i := range taken {
			wg.Go(func() {
				var err error
				if taken[i], err = db.TakePendingSubscriptions(ctx, topic, accountTime); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		n := 0
		for _, ps := range taken {
			n += len(ps)
		}
		if n != 1 {
			t.Errorf("taken %d times, want once", n)
		}
	})
	t.Run("InTxErrorPutsBack", func(t *testing.T) {
		save(t, pending("m-back", topic, accountTime), 100)
		failed := errors.New("insert job failed")
		var inTx []service.PendingSubscription
		_, err := db.TakePendingSubscriptionsTx(ctx, topic, accountTime, func(_ pgx.Tx, taken []service.PendingSubscription) error {
			inTx = taken
			return failed
		})
		if !errors.Is(err, failed) || len(inTx) != 1 {
			t.Errorf("error %v, inTx saw %d", err, len(inTx))
		}
		if got, err := db.TakePendingSubscriptions(ctx, topic, accountTime); err != nil || len(got) != 1 {
			t.Errorf("after the rollback: %+v, %v", got, err)
		}
	})
	t.Run("BoundedTotal", func(t *testing.T) {
		if _, err := db.Pool().Exec(ctx, `DELETE FROM sns_pending_subscriptions`); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			save(t, pending(fmt.Sprint("m-b", i), fmt.Sprint(topic, "-b", i), accountTime.Add(time.Duration(i)*time.Minute)), 3)
		}
		rows, err := db.Pool().Query(ctx, `SELECT message_id FROM sns_pending_subscriptions ORDER BY received_at`)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if diff := cmp.Diff([]string{"m-b2", "m-b3", "m-b4"}, ids); err != nil || diff != "" {
			t.Errorf("kept (-want +got), %v:\n%s", err, diff)
		}
	})
	t.Run("ConcurrentSavesBounded", func(t *testing.T) {
		if _, err := db.Pool().Exec(ctx, `DELETE FROM sns_pending_subscriptions`); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				p := pending(fmt.Sprint("m-c", i), fmt.Sprint(topic, "-c", i), accountTime)
				if err := db.SavePendingSubscription(ctx, p, 5); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := count(t, db, `SELECT count(*) FROM sns_pending_subscriptions`); n != 5 {
			t.Errorf("%d kept after 20 concurrent saves, want the bound of 5", n)
		}
	})
}

// Every method scoped to a team answers account_not_found for another
// team's account and changes nothing.
func TestSwitchOtherTeamNotFound(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	if _, err := db.RecordAccessChange(ctx, change(1, "web", service.AccessChangeOK)); err != nil {
		t.Fatal(err)
	}
	n := stackNotification("msg-1", accountTime)
	n.TeamID = "t2"
	other := change(2, "web", service.AccessChangeOK)
	other.TeamID = "t2"
	cases := map[string]func() error{
		"RecordNotification": func() error { _, _, err := db.RecordNotification(ctx, n, accountTime); return err },
		"MarkApplied":        func() error { return db.MarkApplied(ctx, "t2", "acc-1", 0, accountTime) },
		"SetChosenLevel": func() error {
			_, err := db.SetChosenLevel(ctx, "t2", "acc-1", service.AccessFull, accountTime)
			return err
		},
		"SetAccountFacts": func() error {
			_, err := db.SetAccountFacts(ctx, "t2", "acc-1", service.StackFacts{AccessLevel: service.AccessFull}, accountTime)
			return err
		},
		"RecordAccessChange": func() error { _, err := db.RecordAccessChange(ctx, other); return err },
		"ListAccessChanges": func() error {
			_, err := db.ListAccessChanges(ctx, "t2", "acc-1", 10, nil)
			return err
		},
		"AccountGenerations": func() error { _, _, err := db.AccountGenerations(ctx, "t2", "acc-1"); return err },
		"SwitchState":        func() error { _, err := db.SwitchState(ctx, "t2", "acc-1"); return err },
		"UnknownAccount": func() error {
			_, _, err := db.AccountGenerations(ctx, "t1", "acc-2")
			return err
		},
	}
	for name, call := range cases {
		t.Run("Err"+name, func(t *testing.T) {
			wantError(t, call(), service.ENOTFOUND, "account_not_found")
		})
	}
	wantGenerations(t, db, 0, 0)
	a, err := db.GetAccount(ctx, "t1", "acc-1")
	if err != nil || a.AccessLevel != service.AccessLimited || !a.UpdatedAt.Equal(accountTime) {
		t.Errorf("t1's account changed: %+v, %v", a, err)
	}
	if s, _ := db.SwitchState(ctx, "t1", "acc-1"); s.ChosenLevel != "" {
		t.Errorf("t1's chosen level is %q", s.ChosenLevel)
	}
	if n := count(t, db, `SELECT count(*) FROM sns_messages`) + count(t, db, `SELECT count(*) FROM access_changes`); n != 1 {
		t.Errorf("%d rows stored, want t1's one access change", n)
	}
}

// An account's messages and history go with it.
func TestSwitchRowsGoWithAccount(t *testing.T) {
	db := mustSwitchAccount(t)
	ctx := context.Background()
	if _, _, err := db.RecordNotification(ctx, stackNotification("msg-1", accountTime), accountTime); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RecordAccessChange(ctx, change(1, "web", service.AccessChangeOK)); err != nil {
		t.Fatal(err)
	}
	if deleted, err := db.DeleteAccount(ctx, "t1", "acc-1"); err != nil || !deleted {
		t.Fatalf("delete: %v, %v", deleted, err)
	}
	if n := count(t, db, `SELECT count(*) FROM sns_messages`) + count(t, db, `SELECT count(*) FROM access_changes`); n != 0 {
		t.Errorf("%d rows left after the account was deleted", n)
	}
}
