package netguard

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HTTPClient returns a client for Git smart HTTP and Helm repository fetches
// with its own transport (never http.DefaultTransport) built on the guard:
//
//   - https only; plain http is refused for every host not in the allow list;
//   - every connection goes through DialContext, so every address is checked;
//   - redirects are not followed: the 3xx response is returned to the caller
//     as it is (its body unread), for the caller to report;
//   - HTTPS_PROXY / HTTP_PROXY / NO_PROXY, as read by New, are honoured; behind
//     a proxy the target host is resolved and checked before the request is
//     handed to the proxy. The proxy's own address is the operator's and is
//     not checked. The proxy resolves the target again, so it should refuse
//     metadata addresses itself as well.
//
// A request is checked for the team its context carries
// (NewContextWithTeam). Teams with entries of their own get connection
// pools of their own, so a connection one team's entry allowed is never
// reused for another team's request.
//
// timeout bounds a whole request, body included (0: none).
func (g *Guard) HTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &teamTransport{g: g, shared: g.transport(), teams: make(map[string]*http.Transport)},
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// teamTransport sends a request through the transport of its team when the
// team has entries of its own, else through the shared one.
type teamTransport struct {
	g      *Guard
	shared *http.Transport

	mu    sync.Mutex
	teams map[string]*http.Transport // only teams with entries: bounded by the configuration
}

func (t *teamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	team := TeamFromContext(req.Context())
	if t.g.teamAllowed[team] == nil {
		return t.shared.RoundTrip(req)
	}
	t.mu.Lock()
	tr, ok := t.teams[team]
	if !ok {
		tr = t.g.transport()
		t.teams[team] = tr
	}
	t.mu.Unlock()
	return tr.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of every pool.
func (t *teamTransport) CloseIdleConnections() {
	t.shared.CloseIdleConnections()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range t.teams {
		tr.CloseIdleConnections()
	}
}

// transport is one connection pool on the guard.
func (g *Guard) transport() *http.Transport {
	return &http.Transport{
		Proxy:                 g.proxyFor,
		DialContext:           g.transportDial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: g.rootCAs},
	}
}

// proxyFor is the transport's Proxy hook, run for every request before a
// connection is chosen: it applies the scheme rule and, when the request
// goes through a proxy, checks the target host.
func (g *Guard) proxyFor(req *http.Request) (*url.URL, error) {
	host := req.URL.Hostname()
	if host == "" {
		return nil, &RefusedError{Reason: "no host"}
	}
	allowed := g.hostAllowed(TeamFromContext(req.Context()), host)
	scheme := strings.ToLower(req.URL.Scheme)
	switch {
	case scheme == "https":
	case scheme == "http" && allowed:
	case scheme == "http":
		return nil, &RefusedError{Host: host, Reason: "plain http is allowed only to hosts in the allow list; use https"}
	default:
		return nil, &RefusedError{Host: host, Reason: "scheme " + strconv.Quote(scheme) + " is not allowed"}
	}
	proxyURL, err := g.proxy(req.URL)
	if err != nil {
		return nil, &RefusedError{Host: host, Reason: "the proxy configuration does not parse"}
	}
	if proxyURL == nil {
		port := req.URL.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[scheme]
		}
		if g.proxyAddrs[net.JoinHostPort(canonicalHost(host), port)] {
			// The transport dials proxy addresses unchecked; a tenant URL
			// naming the proxy directly must not ride on that.
			return nil, &RefusedError{Host: host, Reason: "the proxy's own address is not a fetch target"}
		}
		return nil, nil
	}
	if _, err := g.checkedIPs(req.Context(), "tcp", host); err != nil {
		return nil, err
	}
	return proxyURL, nil
}

// transportDial dials the operator's proxies as they are and everything
// else through DialContext.
func (g *Guard) transportDial(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && g.proxyAddrs[net.JoinHostPort(canonicalHost(host), port)] {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return g.DialContext(ctx, network, addr)
}
