// Package gitrepo reads a tenant's Git repository with go-git, in pure Go
// and in memory: it lists refs to verify a connection, resolves a ref to a
// commit (at most once per window), and loads one commit's files, fetching
// at depth 1. It never runs a git binary and never writes a checkout.
//
// Every network call goes through transports the caller injects (an
// *http.Client for HTTPS, a dial function for SSH), so the guarded dialer
// decides what may be reached; nothing here installs a global protocol.
package gitrepo

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/kukie/gitops-server/service"
)

// Auth holds a remote's credentials. The zero value is anonymous access.
type Auth struct {
	// Username goes with Token over HTTPS (Basic auth); hosts such as GitHub
	// and GitLab accept any name with a token. Empty means "git".
	Username string
	// Token is the HTTPS password or access token.
	Token string
	// PrivateKey is an SSH private key in PEM (OpenSSH or PKCS) form,
	// without a passphrase.
	PrivateKey string
	// KnownHosts pins the SSH server's host key, in known_hosts format. SSH
	// requires it: no host key is ever accepted blindly.
	KnownHosts string
}

// Remote is a repository to read: its URL (https:// or ssh, never with
// credentials in it) and how to authenticate.
type Remote struct {
	URL  string
	Auth Auth
	// Team, when set, keeps what is read from the remote for this team
	// only: ClusterRepos sets it when the remote's host is reachable only
	// through the team's own private-host entry, so another team, whose
	// fetch would be refused, is never served the team's trees from a
	// cache. Empty (public hosts, entries for every team): shared.
	Team string
}

// Identity is a stable key for the remote's URL together with its
// credentials (and its Team, when set): caches are shared only between
// remotes with the same identity, so a team never reads through another
// team's credentials or another team's private-host entry. It is a hash
// and reveals no secret. The URL is normalized first (identityURL), so
// spellings of one repository share its caches and its refusals.
func (r Remote) Identity() string {
	h := sha256.New()
	parts := []string{r.identityURL(), r.Auth.Username, r.Auth.Token, r.Auth.PrivateKey, r.Auth.KnownHosts}
	if r.Team != "" {
		// Only then, so identities without a team (and the disk cache
		// keyed by them) stay what they were.
		parts = append(parts, "team", r.Team)
	}
	for _, s := range parts {
		// Length-prefixed, so no two different remotes write the same bytes.
		h.Write([]byte{byte(len(s) >> 24), byte(len(s) >> 16), byte(len(s) >> 8), byte(len(s))})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// identityURL is the URL as Identity hashes it: the host in lower case,
// the path without trailing slashes nor a ".git" suffix (hosts serve
// https://host/org/repo and https://Host/org/repo.git/ alike), in the
// URL's own form (https://, ssh:// or scp-like, whose relative path is
// another repository than ssh://'s absolute one). A URL already in this
// form keeps the identity it had before URLs were normalized; another
// spelling's cached trees are fetched once more. Sharing a cache between
// spellings of one host's path leaks nothing: trees are keyed by commit
// id, and the credentials are part of Identity too.
func (r Remote) identityURL() string {
	raw := strings.TrimSpace(r.URL)
	trim := func(p string) string {
		p = strings.TrimRight(p, "/")
		return strings.TrimRight(strings.TrimSuffix(p, ".git"), "/")
	}
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return r.URL
		}
		u.Host = strings.ToLower(u.Host)
		u.Path, u.RawPath = trim(u.Path), ""
		return u.String()
	}
	// scp-like: [user@]host:path
	at := strings.LastIndex(raw[:max(strings.Index(raw, ":"), 0)], "@")
	colon := strings.Index(raw, ":")
	if colon < 0 {
		return r.URL
	}
	return raw[:at+1] + strings.ToLower(raw[at+1:colon]) + ":" + trim(raw[colon+1:])
}

// host is the host the remote connects to, "" when its URL is invalid.
func (r Remote) host() string {
	ep, err := r.endpoint()
	if err != nil {
		return ""
	}
	return ep.Host
}

// endpoint parses r.URL into a go-git endpoint: only a URL
// service.ValidRepoURL accepts (the one rule: https://, ssh:// or scp-like
// user@host:path, no credentials), parsed by go-git to the same protocol.
func (r Remote) endpoint() (*transport.Endpoint, error) {
	raw := strings.TrimSpace(r.URL)
	if !service.ValidRepoURL(raw) {
		return nil, invalidURL()
	}
	// What was checked must be what go-git connects to.
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return nil, invalidURL()
	}
	switch ep.Protocol {
	case "https", "ssh":
	default:
		return nil, invalidURL()
	}
	if ep.Password != "" || ep.Host == "" || ep.Path == "" {
		return nil, invalidURL()
	}
	return ep, nil
}

func invalidURL() error {
	return &service.Error{Code: service.EVALIDATION, Reason: ReasonRepoURLInvalid,
		Message: "The repository URL must be https://host/path or an SSH address (ssh://user@host/path or user@host:path), without credentials."}
}
