package service

import (
	"strings"
	"testing"
)

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
		"ssh://git@github.com:22/org/repo.git": true, "https://git.internal/org/repo": true,
		"not a url": false, "https://github.com": false, "repo": false, "http://github.com/org/repo": false,
		"https://tok@github.com/org/repo": false, "ssh://git:pw@github.com/org/repo": false,
		"file:///etc/repo": false, "git://github.com/org/repo": false, "ext::sh -c x": false,
		"-oProxyCommand=x:repo": false, "@host:repo": false, "/tmp/repo.git": false} {
		if ValidRepoURL(s) != ok {
			t.Errorf("ValidRepoURL(%q) = %v", s, !ok)
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

func TestRepoURLCredentialProblem(t *testing.T) {
	accepted := map[string]string{
		"HTTPS":                 "https://github.com/org/repo",
		"HTTPSWithPort":         "https://git.example.com:8443/org/repo.git",
		"AtInPath":              "https://github.com/org/repo@v1",
		"AtInQuery":             "https://github.com/org/repo?ref=a@b",
		"SSHGit":                "ssh://git@github.com/org/repo.git",
		"SSHGitPort":            "ssh://git@github.com:22/org/repo.git",
		"SSHPlainName":          "ssh://alice@gerrit.example.com:29418/project",
		"SSHNoUser":             "ssh://github.com/org/repo",
		"GitPlusSSHDeploy":      "git+ssh://deploy@host.example.com/org/repo",
		"SCPGit":                "git@github.com:org/repo.git",
		"SCPPlainName":          "ci-bot.2@git.example.com:org/repo",
		"SCPNoUser":             "github.com:org/repo",
		"SCPAtInPath":           "git@github.com:org@x/repo",
		"SCPFourDigits":         "deploy2024@git.example.com:org/repo",
		"SCPThirtyTwo":          "abcdefghijklmnopqrstuvwxyzabcdef@host.example.com:o/r",
		"GitProtocol":           "git://github.com/org/repo.git",
		"Empty":                 "",
		"BareHost":              "github.com/org/repo",
		"OCINoScheme":           "registry-1.docker.io/bitnamicharts",
		"UpperCaseSchemeNoUser": "HTTPS://GITHUB.COM/org/repo",
	}
	refused := map[string]string{
		"HTTPSTokenUser":       "https://ghp_abc123@github.com/org/repo",
		"HTTPSUserPassword":    "https://bob:ghp_secret@github.com/org/repo",
		"HTTPSPlainUser":       "https://alice@github.com/org/repo",
		"HTTPSGitUser":         "https://git@github.com/org/repo",
		"HTTPSEmptyUser":       "https://@github.com/org/repo",
		"HTTPSXAccessToken":    "https://x-access-token:tok@github.com/org/repo",
		"HTTPSOAuth2":          "https://oauth2:glpat-abc@gitlab.com/org/repo",
		"HTTPTokenUser":        "http://tok@git.example.com/org/repo",
		"HTTPSTwoAts":          "https://a@b@github.com/org/repo",
		"HTTPSOneSlash":        "https:/ghp_abc@github.com/org/repo",
		"HTTPSLeadingSpace":    "  https://ghp_abc@github.com/org/repo",
		"UpperCaseScheme":      "HTTPS://tok@github.com/org/repo",
		"GitProtocolUser":      "git://tok@github.com/org/repo",
		"OCIUser":              "oci://user:pw@registry.example.com/charts",
		"SSHTokenUser":         "ssh://ghp_abc@github.com/org/repo",
		"SSHGitPassword":       "ssh://git:secret@github.com/org/repo",
		"SSHUpperCase":         "ssh://Alice@github.com/org/repo",
		"SSHPlusGitGlpat":      "ssh+git://glpat-abc@gitlab.com/org/repo",
		"SCPTokenUser":         "ghp_x@github.com:org/repo",
		"SCPGithubPat":         "github_pat_11ab@github.com:org/repo",
		"SCPGitlabDeployToken": "gldt-abc@gitlab.com:org/repo",
		"SCPUserPassword":      "user:pass@github.com:org/repo",
		"SCPTwoAts":            "a@b@github.com:org/repo",
		"SCPStartsWithDigit":   "1deploy@github.com:org/repo",
		"SCPFiveDigits":        "a1b2c3d4e5@github.com:org/repo",
		"SCPHexToken":          "3f9a2c7e1b@github.com:org/repo",
		"SCPThirtyThree":       "abcdefghijklmnopqrstuvwxyzabcdefg@host.example.com:o/r",
		"SCPPercentEncoded":    "gi%74@github.com:org/repo",
		"SCPEmptyUser":         "@github.com:org/repo",
		"BareUser":             "deploy@github.com/org/repo",
		"NoSlashesTokenUser":   "https:ghp_abc@github.com/org/repo",
	}
	for name, u := range accepted {
		t.Run(name, func(t *testing.T) {
			if p := RepoURLCredentialProblem(u); p != "" {
				t.Errorf("RepoURLCredentialProblem(%q) = %q, want accepted", u, p)
			}
		})
	}
	for name, u := range refused {
		t.Run(name, func(t *testing.T) {
			p := RepoURLCredentialProblem(u)
			if p == "" {
				t.Fatalf("RepoURLCredentialProblem(%q) accepted it", u)
			}
			if info := splitRepoUser(strings.TrimSpace(u)).info; len(info) >= 4 && strings.Contains(p, info) {
				t.Errorf("the message repeats the URL's user part: %q", p)
			}
		})
	}
}

func TestStripRepoCredentials(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"HTTPSTokenUser":    {"https://ghp_abc@github.com/o/r", "https://github.com/o/r"},
		"HTTPSUserPassword": {"https://u:p@host.example.com/x", "https://host.example.com/x"},
		"HTTPSTwoAts":       {"https://a@b@github.com/o/r", "https://github.com/o/r"},
		"HTTPSKeepsPort":    {"https://tok@git.example.com:8443/o/r.git", "https://git.example.com:8443/o/r.git"},
		"HTTPSOneSlash":     {"https:/tok@github.com/o/r", "https:/github.com/o/r"},
		"HTTPSTrimmed":      {" https://tok@github.com/o/r\n", "https://github.com/o/r"},
		"OCIUser":           {"oci://user:pw@registry.example.com/charts", "oci://registry.example.com/charts"},
		"GitProtocolUser":   {"git://tok@github.com/o/r", "git://github.com/o/r"},
		"SSHTokenUser":      {"ssh://ghp_abc@github.com/o/r", "ssh://git@github.com/o/r"},
		"SSHGitPassword":    {"ssh://git:pw@github.com:22/o/r", "ssh://git@github.com:22/o/r"},
		"SSHPlainPassword":  {"ssh://alice:pw@gerrit.example.com/p", "ssh://alice@gerrit.example.com/p"},
		"SCPTokenUser":      {"ghp_x@github.com:o/r", "git@github.com:o/r"},
		"SCPUserPassword":   {"user:pass@github.com:o/r", "user@github.com:o/r"},
		"SCPTwoAts":         {"a@b@github.com:o/r", "git@github.com:o/r"},
		"BareUser":          {"tok@github.com/o/r", "github.com/o/r"},
		"NoSlashesUser":     {"https:tok@github.com/o/r", "github.com/o/r"},
		"HTTPSClean":        {"https://github.com/o/r@v1", "https://github.com/o/r@v1"},
		"SSHGitClean":       {"ssh://git@github.com/o/r", "ssh://git@github.com/o/r"},
		"SCPGitClean":       {"git@github.com:o/r.git", "git@github.com:o/r.git"},
		"SCPPlainClean":     {"alice@gerrit.example.com:p", "alice@gerrit.example.com:p"},
		"SpacesKeptOnClean": {" https://github.com/o/r ", " https://github.com/o/r "},
		"Chart":             {"https://charts.example.com", "https://charts.example.com"},
		"Empty":             {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := StripRepoCredentials(c.in)
			if got != c.want {
				t.Errorf("StripRepoCredentials(%q) = %q, want %q", c.in, got, c.want)
			}
			if p := RepoURLCredentialProblem(got); p != "" {
				t.Errorf("the stripped URL %q is still refused: %s", got, p)
			}
			if again := StripRepoCredentials(got); again != got {
				t.Errorf("stripping twice changed %q to %q", got, again)
			}
		})
	}
}

// FuzzStripRepoCredentials: whatever the input, the stripped URL carries no
// credentials by the validation rule, and stripping again changes nothing.
func FuzzStripRepoCredentials(f *testing.F) {
	for _, s := range []string{"https://ghp_x@github.com/o/r", "ghp_x@github.com:o/r", "user:pass@h:o/r",
		"a@b@c:d/e", "ssh://alice:pw@h/p", "x@https://tok@host/y", "https:tok@h/x", "@:@/@", "A:/@/@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzInput {
			return
		}
		got := StripRepoCredentials(s)
		if p := RepoURLCredentialProblem(got); p != "" {
			t.Fatalf("StripRepoCredentials(%q) = %q, still refused: %s", s, got, p)
		}
		if again := StripRepoCredentials(got); again != got {
			t.Fatalf("StripRepoCredentials(%q) = %q, then %q", s, got, again)
		}
	})
}
