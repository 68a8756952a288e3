package netguard

import (
	"context"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// CheckURL is the cheap pre-check of a repository URL, before anything is
// fetched: https://, ssh:// or scp-style user@host:path, and http:// only for
// a host in the allow list; file://, git://, ext:: and every other form are
// refused, as are credentials in an http(s) URL and a password in an ssh URL.
// An IP literal host gets the address rule; host names are not resolved here
// (DialContext checks what they resolve to when connecting). A refusal is a
// *RefusedError naming the host at most. The allow list applies for the
// team ctx carries (TeamFromContext).
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	scheme, host, err := splitRepoURL(raw)
	if err != nil {
		return err
	}
	allowed := g.hostAllowed(TeamFromContext(ctx), host)
	switch scheme {
	case "https", "ssh":
	case "http":
		if !allowed {
			return &RefusedError{Host: host, Reason: "plain http is allowed only to hosts in the allow list; use https"}
		}
	default:
		return &RefusedError{Reason: "scheme " + strconv.Quote(scheme) + " is not allowed; use https or ssh"}
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason := refusal(ip, allowed); reason != "" {
			return &RefusedError{Host: host, IP: ip, Reason: reason}
		}
	} else if !validHostName(host) {
		return &RefusedError{Reason: "the URL's host is not a valid host name"}
	}
	// What is checked must be what go-git connects to.
	ep, err := transport.NewEndpoint(raw)
	if err != nil || ep.Protocol != scheme || canonicalHost(strings.Trim(ep.Host, "[]")) != canonicalHost(host) {
		return &RefusedError{Reason: "the URL is ambiguous"}
	}
	return nil
}

// splitRepoURL returns a repository URL's scheme (lower-cased; "ssh" for the
// scp-style form) and host, refusing credentials and malformed forms. Its
// errors never repeat the URL.
func splitRepoURL(raw string) (scheme, host string, err error) {
	if strings.TrimSpace(raw) != raw || raw == "" || strings.ContainsAny(raw, "\x00\r\n\t ") {
		return "", "", &RefusedError{Reason: "the URL is empty or contains whitespace"}
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		u, err := url.Parse(raw)
		if err != nil || !strings.EqualFold(u.Scheme, raw[:i]) {
			return "", "", &RefusedError{Reason: "the URL does not parse"}
		}
		scheme = strings.ToLower(u.Scheme)
		if scheme != "https" && scheme != "http" && scheme != "ssh" {
			return "", "", &RefusedError{Reason: "scheme " + strconv.Quote(scheme) + " is not allowed; use https or ssh"}
		}
		if u.User != nil {
			if _, hasPassword := u.User.Password(); hasPassword || scheme != "ssh" {
				return "", "", &RefusedError{Host: u.Hostname(), Reason: "credentials belong in the connection's auth, not in the URL"}
			}
		}
		if u.Hostname() == "" {
			return "", "", &RefusedError{Reason: "the URL has no host"}
		}
		return scheme, u.Hostname(), nil
	}
	// scp-style: [user@]host:path. ext::command and friends end up with an
	// empty host or a path starting with ':'.
	rest := raw
	colon := strings.Index(rest, ":")
	if at := strings.Index(rest, "@"); at >= 0 && (colon < 0 || at < colon) {
		if at == 0 || strings.HasPrefix(rest, "-") {
			return "", "", &RefusedError{Reason: "the URL's user is malformed"}
		}
		rest = rest[at+1:]
		colon = strings.Index(rest, ":")
	}
	if colon <= 0 {
		return "", "", &RefusedError{Reason: "not a URL: use https://, ssh:// or user@host:path"}
	}
	host, path := rest[:colon], rest[colon+1:]
	if path == "" || strings.HasPrefix(path, ":") || strings.HasPrefix(path, `\`) {
		return "", "", &RefusedError{Reason: "not a URL: use https://, ssh:// or user@host:path"}
	}
	return "ssh", host, nil
}
