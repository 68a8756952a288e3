package store_test

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
)

func TestEnsureTeam(t *testing.T) {
	db, _ := pgtest.MustOpenDB(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	first, err := db.EnsureTeam(ctx, "team-a", service.NewExternalID(), now)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9-]{32,}$`).MatchString(first.ExternalID) {
		t.Errorf("external id %q does not match [A-Za-z0-9-]{32,}", first.ExternalID)
	}
	again, err := db.EnsureTeam(ctx, "team-a", service.NewExternalID(), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("second EnsureTeam changed the team: %+v, first %+v", again, first)
	}
	other, err := db.EnsureTeam(ctx, "team-b", service.NewExternalID(), now)
	if err != nil {
		t.Fatal(err)
	}
	if other.ExternalID == first.ExternalID {
		t.Error("two teams share an external id")
	}
}
