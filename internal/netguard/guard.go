package netguard

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/net/http/httpproxy"
)

// ErrRefused is what every refusal by the guard matches with errors.Is.
var ErrRefused = errors.New("netguard: refused")

// RefusedError is a connection or URL the guard refused. Its message names
// the host and address only, never a URL's user information or path, so it
// carries no credentials.
type RefusedError struct {
	Host   string     // the host as written (name or IP literal); may be empty
	IP     netip.Addr // the address refused; invalid when refused before resolving
	Reason string     // why, e.g. "loopback address"
}

func (e *RefusedError) Error() string {
	var b strings.Builder
	b.WriteString("netguard: refused")
	if e.Host != "" {
		fmt.Fprintf(&b, " %q", e.Host)
	}
	if e.IP.IsValid() && e.IP.String() != canonicalHost(e.Host) {
		fmt.Fprintf(&b, " (%s)", e.IP)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// resolver looks host names up; *net.Resolver is the production one.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard dials tenant-controlled addresses: it refuses non-public addresses
// unless their host is in the operator's allow list, and cloud metadata
// addresses always. Its methods are safe for concurrent use.
type Guard struct {
	allowed     map[string]bool            // hosts allowed for every team
	teamAllowed map[string]map[string]bool // team → hosts allowed for it alone
	allowList   []string                   // the hosts allowed for every team, in order
	resolver    resolver
	proxy       func(*url.URL) (*url.URL, error)
	proxyAddrs  map[string]bool // host:port of the operator's proxies

	// rootCAs replaces the system roots in HTTPClient; nil in production.
	// Only the package's tests set it.
	rootCAs *x509.CertPool
}

// New returns a Guard allowing private addresses for the given entries (as
// returned by ParseAllowList) and honouring the standard proxy variables
// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), read now. An entry with a team
// allows its host only to dials whose context carries that team
// (NewContextWithTeam).
func New(allowedPrivateHosts []AllowEntry) (*Guard, error) {
	return newGuard(allowedPrivateHosts, httpproxy.FromEnvironment(), net.DefaultResolver)
}

// newGuard is New with the proxy settings (nil: none) and resolver given.
func newGuard(allowedPrivateHosts []AllowEntry, proxy *httpproxy.Config, r resolver) (*Guard, error) {
	if proxy == nil {
		proxy = &httpproxy.Config{}
	}
	g := &Guard{
		allowed:     make(map[string]bool),
		teamAllowed: make(map[string]map[string]bool),
		resolver:    r,
		proxy:       proxy.ProxyFunc(),
		proxyAddrs:  make(map[string]bool),
	}
	for _, e := range allowedPrivateHosts {
		host, err := parseAllowEntry(strings.TrimSpace(e.Host))
		if err != nil {
			return nil, fmt.Errorf("netguard: allowed private host %q: %s", e, err)
		}
		if e.Team != "" {
			if g.teamAllowed[e.Team] == nil {
				g.teamAllowed[e.Team] = make(map[string]bool)
			}
			g.teamAllowed[e.Team][host] = true
			continue
		}
		if !g.allowed[host] {
			g.allowed[host] = true
			g.allowList = append(g.allowList, host)
		}
	}
	for _, p := range []string{proxy.HTTPProxy, proxy.HTTPSProxy} {
		if p == "" {
			continue
		}
		addr, err := proxyAddr(p)
		if err != nil {
			return nil, err
		}
		g.proxyAddrs[addr] = true
	}
	return g, nil
}

// proxyAddr is the host:port the HTTP transport dials for a proxy setting,
// parsed as httpproxy parses it (a bare host:port means http).
func proxyAddr(setting string) (string, error) {
	u, err := url.Parse(setting)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if fallback, ferr := url.Parse("http://" + setting); ferr == nil {
			u, err = fallback, nil
		}
	}
	if err != nil || u.Hostname() == "" {
		// The setting may hold a password: do not repeat it.
		return "", errors.New("netguard: a proxy variable (HTTP_PROXY or HTTPS_PROXY) does not parse as a URL")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
	}
	return net.JoinHostPort(canonicalHost(u.Hostname()), port), nil
}

// hostAllowed reports whether host, as written, is in the allow list for
// team (an entry for every team or one for team).
func (g *Guard) hostAllowed(team, host string) bool {
	h := canonicalHost(host)
	return g.allowed[h] || g.teamAllowed[team][h]
}

// TeamOnly reports whether host (as written in a URL) is allowed for team
// by that team's own entry and not by an entry for every team: what is
// fetched from it for this team must be kept for this team only, since
// another team's fetch may not reach it.
func (g *Guard) TeamOnly(team, host string) bool {
	h := canonicalHost(strings.Trim(host, "[]"))
	return !g.allowed[h] && g.teamAllowed[team][h]
}

type teamKey struct{}

// NewContextWithTeam returns a copy of ctx carrying the team a fetch is
// made for: the guard then also allows that team's own entries.
func NewContextWithTeam(ctx context.Context, team string) context.Context {
	return context.WithValue(ctx, teamKey{}, team)
}

// TeamFromContext is the team ctx carries, "" when none (then only entries
// for every team apply).
func TeamFromContext(ctx context.Context) string {
	team, _ := ctx.Value(teamKey{}).(string)
	return team
}

// DialContext connects to addr ("host:port") over TCP if the rule lets it
// for the team ctx carries (TeamFromContext):
// it resolves the host, checks every address it resolves to, refuses the
// whole dial if any is refused, and dials only the checked addresses (so DNS
// rebinding cannot slip between check and connect); the socket's address is
// checked once more just before connecting. A refusal is a *RefusedError.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := g.checkedIPs(ctx, network, host)
	if err != nil {
		return nil, err
	}
	allowed := g.hostAllowed(TeamFromContext(ctx), host)
	d := net.Dialer{
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &RefusedError{Host: host, Reason: "unparsable socket address"}
			}
			if reason := refusal(ap.Addr(), allowed); reason != "" {
				return &RefusedError{Host: host, IP: ap.Addr(), Reason: reason}
			}
			return nil
		},
	}
	var errs []error
	for _, ip := range ips {
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip, port).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// Dial is DialContext without a context, for APIs that want a proxy.Dialer.
func (g *Guard) Dial(network, addr string) (net.Conn, error) {
	return g.DialContext(context.Background(), network, addr)
}

func splitHostPort(addr string) (string, uint16, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("netguard: address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("netguard: address %q: the port must be a number", addr)
	}
	return host, uint16(port), nil
}

// checkedIPs resolves host for network and applies the rule to every
// address, returning them all or the first refusal.
func (g *Guard) checkedIPs(ctx context.Context, network, host string) ([]netip.Addr, error) {
	var ipNetwork string
	switch network {
	case "tcp":
		ipNetwork = "ip"
	case "tcp4":
		ipNetwork = "ip4"
	case "tcp6":
		ipNetwork = "ip6"
	default:
		return nil, &RefusedError{Host: host, Reason: fmt.Sprintf("network %q is not allowed", network)}
	}
	if host == "" {
		return nil, &RefusedError{Reason: "no host"}
	}
	allowed := g.hostAllowed(TeamFromContext(ctx), host)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		ips, err = g.resolver.LookupNetIP(ctx, ipNetwork, host)
		if err != nil {
			return nil, fmt.Errorf("netguard: resolve %q: %w", host, err)
		}
		if len(ips) == 0 {
			return nil, fmt.Errorf("netguard: resolve %q: no addresses", host)
		}
	}
	for _, ip := range ips {
		if reason := refusal(ip, allowed); reason != "" {
			return nil, &RefusedError{Host: host, IP: ip, Reason: reason}
		}
	}
	return ips, nil
}
