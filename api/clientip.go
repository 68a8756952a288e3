package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxies are the addresses of the proxies in front of the server
// (a load balancer, an ingress controller) whose X-Forwarded-For entries
// are believed (KUKIE_TRUSTED_PROXIES). Empty: the connection's address is
// the client.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies reads comma-separated CIDRs or single IPs.
func ParseTrustedProxies(s string) (TrustedProxies, error) {
	var out TrustedProxies
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", f)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (t TrustedProxies) trusts(a netip.Addr) bool {
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP is the address of the client that sent r: the connection's,
// unless it is a trusted proxy; then X-Forwarded-For is read from its right
// end (the entry the nearest proxy appended) leftwards, and the first
// entry that is not a trusted proxy is the client. Entries further left
// were written by the client itself and are never believed. An entry that
// is not an IP address stops the walk at the last address known.
func (t TrustedProxies) ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	client, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	client = client.Unmap()
	if len(t) == 0 || !t.trusts(client) {
		return client.String()
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = hop.Unmap()
		if !t.trusts(client) {
			break
		}
	}
	return client.String()
}
