package netguard

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	g := MustGuard(t, []string{"git.corp.internal", "10.0.0.5", "169.254.169.254"}, nil)
	accepted := []struct{ name, url string }{
		{"HTTPS", "https://github.com/acme/gitops.git"},
		{"HTTPSPort", "https://git.example.com:8443/acme/gitops"},
		{"HTTPSPublicIP", "https://140.82.112.3/acme/gitops.git"},
		{"SSH", "ssh://git@github.com/acme/gitops.git"},
		{"SSHPort", "ssh://git@github.com:2222/acme/gitops.git"},
		{"SCP", "git@github.com:acme/gitops.git"},
		{"SCPNoUser", "github.com:acme/gitops.git"},
		{"SCPPathWithoutSlash", "git@github.com:gitops.git"},
		{"HTTPListedName", "http://git.corp.internal/acme/gitops.git"},
		{"HTTPListedIP", "http://10.0.0.5:8080/acme/gitops.git"},
		{"HTTPSListedPrivateIP", "https://10.0.0.5/acme/gitops.git"},
		{"UpperCaseScheme", "HTTPS://github.com/acme/gitops.git"},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			if err := g.CheckURL(context.Background(), tt.url); err != nil {
				t.Fatalf("CheckURL(%q) = %v", tt.url, err)
			}
		})
	}

	refused := []struct{ name, url, reason string }{
		{"HTTPNotListed", "http://github.com/acme/gitops.git", "plain http"},
		{"File", "file:///etc/passwd", `scheme "file"`},
		{"Git", "git://github.com/acme/gitops.git", `scheme "git"`},
		{"Ext", "ext::sh -c touch% /tmp/pwned", "whitespace"},
		{"ExtNoSpace", "ext::sh%20-c%20id/x", "not a URL"},
		{"LocalPath", "/srv/git/repo.git", "not a URL"},
		{"RelativePath", "repo.git", "not a URL"},
		{"SCPLeadingHyphen", "-oProxyCommand=id@host:a/b", "user"},
		{"HTTPSUserInfo", "https://token@github.com/acme/gitops.git", "credentials"},
		{"HTTPSPassword", "https://user:s3cr3t@github.com/acme/gitops.git", "credentials"},
		{"SSHPassword", "ssh://git:s3cr3t@github.com/acme/gitops.git", "credentials"},
		{"LoopbackLiteral", "https://127.0.0.1/acme/gitops.git", reasonLoopback},
		{"MappedLoopbackLiteral", "https://[::ffff:127.0.0.1]/acme/gitops.git", reasonLoopback},
		{"PrivateSCP", "git@192.168.1.10:acme/gitops.git", reasonPrivate},
		{"MetadataListed", "https://169.254.169.254/latest", reasonMetadata},
		{"NoHost", "https:///acme/gitops.git", "no host"},
		{"Empty", "", "empty"},
		{"HTTPSWithUnderscoreScheme", "git+ssh://github.com/acme/gitops.git", `scheme "git+ssh"`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := g.CheckURL(context.Background(), tt.url)
			assertRefused(t, err, tt.reason)
			if strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "token@") {
				t.Errorf("error %q repeats credentials", err)
			}
		})
	}
}

func TestCheckURLTeamEntries(t *testing.T) {
	g := MustGuard(t, []string{"team-a=127.0.0.1"}, nil)
	if err := g.CheckURL(NewContextWithTeam(context.Background(), "team-a"), "http://127.0.0.1/repo.git"); err != nil {
		t.Errorf("team-a: %v", err)
	}
	for _, team := range []string{"team-b", ""} {
		err := g.CheckURL(NewContextWithTeam(context.Background(), team), "https://127.0.0.1/repo.git")
		if !errors.Is(err, ErrRefused) {
			t.Errorf("team %q: %v, want refused", team, err)
		}
	}
}
