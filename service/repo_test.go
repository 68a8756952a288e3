package service

import "testing"

func TestNormalizeRepoURL(t *testing.T) {
	same := []string{
		"git@github.com:org/repo.git",
		"https://github.com/org/repo",
		"https://github.com/org/repo.git",
		"https://github.com/org/repo/",
		"ssh://git@github.com/org/repo",
		"ssh://git@github.com:22/org/repo.git",
		"https://user@github.com/Org/Repo",
		"HTTPS://GITHUB.COM:443/org/repo",
		"git://github.com/org/repo.git",
	}
	for _, s := range same {
		if got := NormalizeRepoURL(s); got != "github.com/org/repo" {
			t.Errorf("NormalizeRepoURL(%q) = %q, want github.com/org/repo", s, got)
		}
	}
	different := map[string]string{
		"https://gitlab.com/org/repo":           "gitlab.com/org/repo",
		"https://github.com/org/other":          "github.com/org/other",
		"https://git.example.com:8443/org/repo": "git.example.com:8443/org/repo",
		"":                                      "",
	}
	for in, want := range different {
		if got := NormalizeRepoURL(in); got != want {
			t.Errorf("NormalizeRepoURL(%q) = %q, want %q", in, got, want)
		}
	}
	for s, ok := range map[string]bool{"https://github.com/org/repo": true, "git@github.com:org/repo.git": true,
		"not a url": false, "https://github.com": false, "repo": false} {
		if LooksLikeRepoURL(s) != ok {
			t.Errorf("LooksLikeRepoURL(%q) = %v", s, !ok)
		}
	}
}

func TestCanonicalKind(t *testing.T) {
	for in, want := range map[[2]string][2]string{
		{"", "deploy"}:                 {"apps", "deployment"},
		{"", "Deployments"}:            {"apps", "deployment"},
		{"", "deployments.apps"}:       {"apps", "deployment"},
		{"apps", "Deployment"}:         {"apps", "deployment"},
		{"", "svc"}:                    {"", "service"},
		{"", "Service"}:                {"", "service"},
		{"", "ing"}:                    {"networking.k8s.io", "ingress"},
		{"argoproj.io", "Application"}: {"argoproj.io", "application"},
		{"example.com", "deploy"}:      {"example.com", "deploy"},
	} {
		g, k := CanonicalKind(in[0], in[1])
		if g != want[0] || k != want[1] {
			t.Errorf("CanonicalKind(%q, %q) = %q, %q; want %v", in[0], in[1], g, k, want)
		}
	}
}
