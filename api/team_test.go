package api

import (
	"regexp"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestTeamGet(t *testing.T) {
	a := newTestAPI(t)
	var first, again, other service.Team
	a.do("GET", "/v1/team", token(t, "alice", "team-a", "member"), nil, nil).decode(t, &first)
	a.do("GET", "/v1/team", token(t, "bob", "team-a", "agent"), nil, nil).decode(t, &again)
	a.do("GET", "/v1/team", token(t, "alice", "team-b", "admin"), nil, nil).decode(t, &other)
	if first.ID != "team-a" || !regexp.MustCompile(`^[A-Za-z0-9-]{32,}$`).MatchString(first.ExternalID) {
		t.Fatalf("team = %+v", first)
	}
	if again.ExternalID != first.ExternalID {
		t.Error("the external id changed between calls")
	}
	if other.ExternalID == first.ExternalID {
		t.Error("two teams share an external id")
	}
}
