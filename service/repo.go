package service

import (
	"net/url"
	"strings"
)

// NormalizeRepoURL reduces the ways one Git repository is written to one
// key: git@github.com:org/repo.git, https://github.com/org/repo and
// ssh://git@github.com/org/repo all become "github.com/org/repo". Scheme,
// user, port (for ssh), ".git" and slashes at the end are dropped and the
// result is lower-cased. Unparseable input is returned trimmed and
// lower-cased, so equal strings still match.
func NormalizeRepoURL(raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	var host, path string
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return strings.ToLower(s)
		}
		host, path = u.Hostname(), u.Path
		if port := u.Port(); port != "" && u.Scheme != "ssh" && u.Scheme != "git" && !isDefaultPort(u.Scheme, port) {
			host += ":" + port
		}
	} else if at, rest, ok := strings.Cut(s, "@"); ok && !strings.Contains(at, "/") {
		// scp-like: user@host:path
		h, p, found := strings.Cut(rest, ":")
		if !found {
			return strings.ToLower(s)
		}
		host, path = h, p
	} else {
		return strings.ToLower(strings.TrimSuffix(strings.TrimRight(s, "/"), ".git"))
	}
	path = strings.Trim(path, "/")
	path = strings.TrimSuffix(path, ".git")
	return strings.ToLower(host + "/" + path)
}

func isDefaultPort(scheme, port string) bool {
	return (scheme == "https" && port == "443") || (scheme == "http" && port == "80")
}

// LooksLikeRepoURL reports whether s names a repository on a host: its
// normalised form is host/path.
func LooksLikeRepoURL(s string) bool {
	n := NormalizeRepoURL(s)
	host, path, ok := strings.Cut(n, "/")
	return ok && host != "" && path != "" && !strings.ContainsAny(n, " \t\n") && strings.Contains(host, ".")
}
