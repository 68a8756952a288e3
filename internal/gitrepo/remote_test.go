package gitrepo_test

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/gitrepo"
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

// Spellings of one repository share an identity (and so its caches and
// refusals): the host's case, trailing slashes and a ".git" suffix do not
// count; the path's case, the port, the user and scp-like against ssh://
// paths (relative against absolute) do.
func TestIdentityNormalizesURL(t *testing.T) {
	base := gitrepo.Remote{URL: "https://git.example.com/team/apps"}
	for _, u := range []string{"https://Git.Example.COM/team/apps", "https://git.example.com/team/apps.git",
		"https://git.example.com/team/apps/", "https://git.example.com/team/apps.git/", " https://git.example.com/team/apps "} {
		if (gitrepo.Remote{URL: u}).Identity() != base.Identity() {
			t.Errorf("%q has another identity than %q", u, base.URL)
		}
	}
	for _, u := range []string{"https://git.example.com/team/Apps", "https://git.example.com:8443/team/apps",
		"https://git.example.com/team/apps.gitx", "https://git.example.com/team"} {
		if (gitrepo.Remote{URL: u}).Identity() == base.Identity() {
			t.Errorf("%q has the identity of %q", u, base.URL)
		}
	}
	scp := gitrepo.Remote{URL: "git@git.example.com:team/apps.git"}
	if scp.Identity() != (gitrepo.Remote{URL: "git@GIT.example.com:team/apps"}).Identity() {
		t.Error("scp-like spellings of one repository differ")
	}
	if scp.Identity() == (gitrepo.Remote{URL: "ssh://git@git.example.com/team/apps.git"}).Identity() ||
		scp.Identity() == (gitrepo.Remote{URL: "deploy@git.example.com:team/apps.git"}).Identity() {
		t.Error("a relative scp-like path or another user share an identity")
	}
}
