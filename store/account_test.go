package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

var accountTime = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// mustTeams creates the teams (accounts refer to an existing team).
func mustTeams(tb testing.TB, db *store.DB, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		if _, err := db.EnsureTeam(context.Background(), id, service.NewExternalID(), accountTime); err != nil {
			tb.Fatal(err)
		}
	}
}

// newAccount is a connected account of team with the given ids.
func newAccount(team, id, awsAccountID string) service.Account {
	return service.Account{
		ID: id, TeamID: team, AWSAccountID: awsAccountID, Partition: "aws",
		RoleARN:     "arn:aws:iam::" + awsAccountID + ":role/kukie/KukieAccess",
		StackARN:    "arn:aws:cloudformation:eu-west-1:" + awsAccountID + ":stack/kukie-access/0f1e2d3c",
		AccessLevel: service.AccessLimited, State: service.AccountActive, TemplateVersion: "5",
		AllowedNamespaces: []string{"kukie-*", "web"},
		NotificationARNs:  []string{"arn:aws:sns:eu-west-1:" + awsAccountID + ":kukie"},
	}
}

// mustCreateAccount stores a.
func mustCreateAccount(tb testing.TB, db *store.DB, a service.Account) service.Account {
	tb.Helper()
	out, err := db.CreateAccount(context.Background(), a, accountTime)
	if err != nil {
		tb.Fatalf("create account %s: %v", a.ID, err)
	}
	return out
}

// wantError fails unless err has the code and reason.
func wantError(tb testing.TB, err error, code string, reason service.Reason) {
	tb.Helper()
	if service.ErrorCode(err) != code || service.ErrorReason(err) != reason {
		tb.Errorf("error %v: code %q reason %q, want %q %q", err, service.ErrorCode(err), service.ErrorReason(err), code, reason)
	}
}

func TestAccountRoundTrip(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	mustTeams(t, db, "t1")

	in := newAccount("t1", "acc-b", "123456789012")
	want := in
	want.CreatedAt, want.UpdatedAt = accountTime, accountTime
	created := mustCreateAccount(t, db, in)
	if diff := cmp.Diff(want, created); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	got, err := db.GetAccount(ctx, "t1", "acc-b")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}

	// No namespaces or topics are stored as empty lists, not NULL.
	bare := newAccount("t1", "acc-a", "210987654321")
	bare.AllowedNamespaces, bare.NotificationARNs = nil, nil
	bare = mustCreateAccount(t, db, bare)
	if bare.AllowedNamespaces == nil || len(bare.AllowedNamespaces) != 0 || bare.NotificationARNs == nil {
		t.Errorf("nil lists read back as %#v, %#v", bare.AllowedNamespaces, bare.NotificationARNs)
	}

	// Oldest first; equal times by id.
	later := newAccount("t1", "acc-0", "111111111111")
	if _, err := db.CreateAccount(ctx, later, accountTime.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListAccounts(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range list {
		ids = append(ids, a.ID)
	}
	if diff := cmp.Diff([]string{"acc-a", "acc-b", "acc-0"}, ids); diff != "" {
		t.Errorf("list order (-want +got):\n%s", diff)
	}
}

func TestAccountTeamScoped(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	mustTeams(t, db, "t1", "t2")
	mustCreateAccount(t, db, newAccount("t1", "acc-1", "123456789012"))

	t.Run("ErrGetOtherTeam", func(t *testing.T) {
		_, err := db.GetAccount(ctx, "t2", "acc-1")
		wantError(t, err, service.ENOTFOUND, "account_not_found")
	})
	t.Run("ErrGetUnknown", func(t *testing.T) {
		_, err := db.GetAccount(ctx, "t1", "acc-2")
		wantError(t, err, service.ENOTFOUND, "account_not_found")
	})
	t.Run("ErrSetStateOtherTeam", func(t *testing.T) {
		_, err := db.SetAccountState(ctx, "t2", "acc-1", service.AccountDeleting, "", accountTime)
		wantError(t, err, service.ENOTFOUND, "account_not_found")
		if a, _ := db.GetAccount(ctx, "t1", "acc-1"); a.State != service.AccountActive {
			t.Errorf("another team changed the state to %q", a.State)
		}
	})
	t.Run("ListOtherTeamEmpty", func(t *testing.T) {
		list, err := db.ListAccounts(ctx, "t2")
		if err != nil || len(list) != 0 {
			t.Errorf("t2 lists %v, %v", list, err)
		}
	})
	t.Run("SameIDInTwoTeams", func(t *testing.T) {
		mustCreateAccount(t, db, newAccount("t2", "acc-1", "999999999999"))
		a, err := db.GetAccount(ctx, "t1", "acc-1")
		if err != nil || a.AWSAccountID != "123456789012" {
			t.Errorf("t1's acc-1 is %+v, %v", a, err)
		}
	})
}

func TestAccountInUse(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	mustTeams(t, db, "t1", "t2")
	mustCreateAccount(t, db, newAccount("t1", "acc-1", "123456789012"))

	t.Run("ErrOtherTeam", func(t *testing.T) {
		_, err := db.CreateAccount(ctx, newAccount("t2", "acc-9", "123456789012"), accountTime)
		wantError(t, err, service.ECONFLICT, "aws_account_in_use")
		if _, err := db.GetAccount(ctx, "t2", "acc-9"); service.ErrorCode(err) != service.ENOTFOUND {
			t.Errorf("the refused account was stored: %v", err)
		}
	})
	t.Run("ErrSameTeam", func(t *testing.T) {
		_, err := db.CreateAccount(ctx, newAccount("t1", "acc-2", "123456789012"), accountTime)
		wantError(t, err, service.ECONFLICT, "aws_account_in_use")
	})
	t.Run("ErrSameAccountID", func(t *testing.T) {
		// An id collision is a conflict, but not the AWS account's.
		_, err := db.CreateAccount(ctx, newAccount("t1", "acc-1", "222222222222"), accountTime)
		wantError(t, err, service.ECONFLICT, "")
	})
	t.Run("OtherPartition", func(t *testing.T) {
		a := newAccount("t2", "acc-cn", "123456789012")
		a.Partition = "aws-cn"
		mustCreateAccount(t, db, a)
	})
}

// Teams connecting the same AWS account at once: exactly one wins, the
// others are aws_account_in_use.
func TestAccountInUseConcurrent(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	const teams = 8
	ids := make([]string, teams)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%d", i)
	}
	mustTeams(t, db, ids...)
	errs := make([]error, teams)
	var wg sync.WaitGroup
	for i, team := range ids {
		wg.Go(func() {
			_, errs[i] = db.CreateAccount(context.Background(), newAccount(team, "acc", "123456789012"), accountTime)
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		if err == nil {
			won++
			continue
		}
		if service.ErrorReason(err) != "aws_account_in_use" {
			t.Errorf("team %s: %v", ids[i], err)
		}
	}
	if won != 1 {
		t.Errorf("%d teams connected the account, want 1", won)
	}
}

func TestSetAccountState(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	mustTeams(t, db, "t1")
	created := mustCreateAccount(t, db, newAccount("t1", "acc-1", "123456789012"))

	later := accountTime.Add(time.Hour)
	got, err := db.SetAccountState(ctx, "t1", "acc-1", service.AccountDisconnected, "AssumeRole was denied.", later)
	if err != nil {
		t.Fatal(err)
	}
	want := created
	want.State, want.StateReason, want.UpdatedAt = service.AccountDisconnected, "AssumeRole was denied.", later
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after SetAccountState (-want +got):\n%s", diff)
	}
	if read, _ := db.GetAccount(ctx, "t1", "acc-1"); !cmp.Equal(want, read) {
		t.Errorf("read back %+v", read)
	}
	// The column check refuses a state the service does not know.
	if _, err := db.SetAccountState(ctx, "t1", "acc-1", "paused", "", later); err == nil {
		t.Error("unknown state stored")
	}
}

// The table's checks refuse what the service never writes.
func TestAccountChecks(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	mustTeams(t, db, "t1")
	cases := map[string]func(*service.Account){
		"ErrShortAWSAccountID":    func(a *service.Account) { a.AWSAccountID = "12345678901" },
		"ErrLetterInAWSAccount":   func(a *service.Account) { a.AWSAccountID = "12345678901a" },
		"ErrUnknownAccessLevel":   func(a *service.Account) { a.AccessLevel = "admin" },
		"ErrUnknownState":         func(a *service.Account) { a.State = "" },
		"ErrEmptyPartition":       func(a *service.Account) { a.Partition = "" },
		"ErrUnknownTeam":          func(a *service.Account) { a.TeamID = "nobody" },
		"ErrLongAWSAccountID":     func(a *service.Account) { a.AWSAccountID = "1234567890123" },
		"ErrSpacedAWSAccountID":   func(a *service.Account) { a.AWSAccountID = "12345678901 " },
		"ErrEmptyAWSAccountID":    func(a *service.Account) { a.AWSAccountID = "" },
		"ErrEmptyAccessLevel":     func(a *service.Account) { a.AccessLevel = "" },
		"ErrUpperCaseAccessLevel": func(a *service.Account) { a.AccessLevel = "FULL" },
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAccount("t1", name, "123456789012")
			change(&a)
			if _, err := db.CreateAccount(context.Background(), a, accountTime); err == nil {
				t.Errorf("stored %+v", a)
			}
		})
	}
	if list, err := db.ListAccounts(context.Background(), "t1"); err != nil || len(list) != 0 {
		t.Errorf("accounts stored: %+v, %v", list, err)
	}
}
