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

// ValidRepoURL is the one rule of a repository URL Kukie fetches:
// https://host/path, ssh://[user@]host[:port]/path or scp-like
// [user@]host:path, with no password and no user on https (credentials
// belong in the connection's auth). http, git, file, ext:: and every other
// form are refused. Checked when a repository is connected, and again by the
// fetcher (internal/gitrepo), which also requires go-git to parse it the
// same way; where the URL may connect to is decided at dial time by the
// guarded dialer, not here.
func ValidRepoURL(raw string) bool {
	s := strings.TrimSpace(raw)
	if s == "" || strings.ContainsAny(s, " \t\r\n\x00") {
		return false
	}
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || u.Hostname() == "" || strings.Trim(u.Path, "/") == "" {
			return false
		}
		if _, hasPassword := u.User.Password(); hasPassword {
			return false
		}
		return u.Scheme == "ssh" || (u.Scheme == "https" && u.User == nil)
	}
	// scp-like: [user@]host:path, no port-only or option-like forms.
	rest := s
	if at := strings.Index(rest, "@"); at >= 0 && at < strings.Index(rest, ":") {
		if at == 0 {
			return false
		}
		rest = rest[at+1:]
	}
	host, path, ok := strings.Cut(rest, ":")
	return ok && host != "" && !strings.HasPrefix(s, "-") && strings.Trim(path, "/") != "" &&
		!strings.HasPrefix(path, ":") && !strings.HasPrefix(path, `\`) && !strings.ContainsAny(host, "/\\")
}

// Credentials in repository URLs. Whatever a repository URL carries is shown
// to the whole team (the cluster list, the apps' sources, ownership
// answers), so a token in it is a leak. The rule, in one place:
//
//   - A URL with a scheme (https://, http://, git://, oci://, ... — any
//     "scheme:/") carries no user part at all, except over ssh.
//   - Over ssh (ssh://, git+ssh://, ssh+git:// and scp-style host:path) the
//     user is `git` or a plain name, and never has a password.
//   - Anything else (host/path written without a scheme) carries no user part.
//
// A plain name is at most 32 characters of [a-z0-9._-], starts with a
// letter, has at most 4 digits and does not start with a known token prefix
// (repoTokenPrefixes): `git`, `deploy`, `alice`, `ci-bot` pass;
// `ghp_x`, `glpat-x`, `Alice`, `a1b2c3d4e5` and anything longer do not.
// Upper case is refused because tokens are mixed-case and user names on Git
// hosts are lower-case; AWS CodeCommit's SSH key ids (APKA...) are therefore
// refused too — name them in ~/.ssh/config instead.
//
// The user part is found as Git finds it: in a scheme URL it ends at the last
// "@" of the authority (before the first "/", "?" or "#"); without a scheme
// it ends at the last "@" before the host's ":" (scp-style) or before the
// first "/". migrations/00004_repo_url_credentials.sql applies the same rule
// to stored rows.

// repoTokenPrefixes are the prefixes of GitHub and GitLab tokens.
var repoTokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-"}

// Where a repository URL's user part sits.
const (
	repoUserNone   = iota // no user part
	repoUserScheme        // scheme://user@host/path, scheme not ssh
	repoUserSSH           // ssh://user@host/path or scp-style user@host:path
	repoUserBare          // user@host/path without a scheme
)

// repoUserPart is a repository URL split around its user part: prefix +
// info + "@" + rest, with info the user part without its "@".
type repoUserPart struct {
	kind         int
	prefix, info string
	rest         string
}

// splitRepoUser finds the user part of a trimmed repository URL.
func splitRepoUser(s string) repoUserPart {
	if n := repoSchemeLen(s); n > 0 {
		authority := s[n:]
		if end := strings.IndexAny(authority, "/?#"); end >= 0 {
			authority = authority[:end]
		}
		at := strings.LastIndex(authority, "@")
		if at < 0 {
			return repoUserPart{}
		}
		kind := repoUserScheme
		switch strings.ToLower(s[:strings.Index(s, ":")]) {
		case "ssh", "git+ssh", "ssh+git":
			kind = repoUserSSH
		}
		return repoUserPart{kind: kind, prefix: s[:n], info: authority[:at], rest: s[n+at+1:]}
	}
	seg := s
	if slash := strings.Index(s, "/"); slash >= 0 {
		seg = s[:slash]
	}
	first := strings.Index(seg, "@")
	if first < 0 {
		return repoUserPart{}
	}
	kind, hostEnd := repoUserBare, len(seg)
	if colon := strings.Index(seg[first:], ":"); colon >= 0 {
		kind, hostEnd = repoUserSSH, first+colon
	}
	at := strings.LastIndex(seg[:hostEnd], "@")
	return repoUserPart{kind: kind, info: s[:at], rest: s[at+1:]}
}

// repoSchemeLen returns the length of s's "scheme:/" prefix with all its
// slashes (8 for "https://"), or 0 when s has none. One slash is enough:
// curl accepts "https:/host", so the authority after it is still looked at.
func repoSchemeLen(s string) int {
	i := 0
	for i < len(s) && (isASCIILetter(s[i]) || i > 0 && (isASCIIDigit(s[i]) || strings.IndexByte("+.-", s[i]) >= 0)) {
		i++
	}
	if i == 0 || i+1 >= len(s) || s[i] != ':' || s[i+1] != '/' {
		return 0
	}
	i++
	for i < len(s) && s[i] == '/' {
		i++
	}
	return i
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isASCIIDigit(c byte) bool  { return '0' <= c && c <= '9' }

// plainRepoUser reports whether user is an ssh user name that is no token
// (see the rule above).
func plainRepoUser(user string) bool {
	if user == "git" {
		return true
	}
	if user == "" || len(user) > 32 || !('a' <= user[0] && user[0] <= 'z') {
		return false
	}
	digits := 0
	for i := range len(user) {
		switch c := user[i]; {
		case isASCIIDigit(c):
			digits++
		case 'a' <= c && c <= 'z', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	if digits > 4 {
		return false
	}
	for _, p := range repoTokenPrefixes {
		if strings.HasPrefix(user, p) {
			return false
		}
	}
	return true
}

// RepoURLCredentialProblem says why raw would expose credentials to the
// team, or returns "" when it carries none. The message never repeats any
// part of raw.
func RepoURLCredentialProblem(raw string) string {
	u := splitRepoUser(strings.TrimSpace(raw))
	switch u.kind {
	case repoUserScheme:
		return "must not carry a user name, token or password (everyone in the team would see it); " +
			"write it as https://github.com/org/repo and give Kukie access another way"
	case repoUserBare:
		return "must not carry a user name or token before the host"
	case repoUserSSH:
		if strings.Contains(u.info, ":") {
			return "must not carry a password"
		}
		if !plainRepoUser(u.info) {
			return "the ssh user must be git or a plain lower-case name of at most 32 characters, not a token " +
				"(write it as git@github.com:org/repo.git)"
		}
	}
	return ""
}

// StripRepoCredentials returns raw without credentials, for showing a
// repository URL to the team: the user part of scheme URLs is dropped
// (https://tok@github.com/o/r becomes https://github.com/o/r); over ssh the
// password is dropped and a user that is not a plain name becomes git
// (ghp_x@github.com:o/r becomes git@github.com:o/r), which keeps the URL
// working on every major Git host. A URL without credentials is returned
// unchanged; the result always passes RepoURLCredentialProblem.
func StripRepoCredentials(raw string) string {
	s := strings.TrimSpace(raw)
	clean := s
	// Dropping a user part can join slashes around it ("x:/@/@" becomes
	// "x://@"), which exposes another authority: strip until nothing changes.
	for {
		next := stripRepoUser(clean)
		if next == clean {
			break
		}
		clean = next
	}
	if clean == s {
		return raw
	}
	return clean
}

// stripRepoUser removes one user part from s (see StripRepoCredentials).
func stripRepoUser(s string) string {
	u := splitRepoUser(s)
	switch u.kind {
	case repoUserScheme, repoUserBare:
		return u.prefix + u.rest
	case repoUserSSH:
		user, _, _ := strings.Cut(u.info, ":")
		if !plainRepoUser(user) {
			user = "git"
		}
		return u.prefix + user + "@" + u.rest
	}
	return s
}
