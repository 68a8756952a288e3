package gitrepo_test

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/gitrepo"
)

func TestIdentity(t *testing.T) {
	a := gitrepo.Remote{URL: "https://example.com/r.git", Auth: gitrepo.Auth{Token: "t1"}}
	b := a
	b.Auth.Token = "t2"
	c := gitrepo.Remote{URL: "https://example.com/r.gitt", Auth: gitrepo.Auth{Token: "1"}}
	same := gitrepo.Remote{URL: a.URL, Auth: gitrepo.Auth{Token: "t1"}}
	if a.Identity() == b.Identity() || a.Identity() == c.Identity() || a.Identity() != same.Identity() {
		t.Error("identities must differ exactly when URL or credentials differ")
	}
	if strings.Contains(a.Identity(), "t1") {
		t.Error("the identity shows the token")
	}
}
