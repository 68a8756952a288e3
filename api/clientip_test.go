package api

import (
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	proxies, err := ParseTrustedProxies(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		proxies TrustedProxies
		remote  string
		xff     []string
		want    string
	}{
		{"NoProxiesTrusted", nil, "10.0.0.5:4000", []string{"198.51.100.1"}, "10.0.0.5"},
		{"UntrustedPeerIgnoresTheHeader", proxies, "198.51.100.9:4000", []string{"203.0.113.1"}, "198.51.100.9"},
		{"ThroughOneProxy", proxies, "10.0.0.5:4000", []string{"203.0.113.1"}, "203.0.113.1"},
		{"ThroughTwoProxies", proxies, "10.0.0.5:4000", []string{"203.0.113.1, 192.0.2.7"}, "203.0.113.1"},
		// The client wrote the left entries itself: only the one the
		// nearest trusted proxy appended counts.
		{"SpoofedEntriesLeftOfTheClient", proxies, "10.0.0.5:4000", []string{"10.9.9.9, 1.2.3.4", "203.0.113.1"}, "203.0.113.1"},
		{"AllTrustedGivesTheLeftmost", proxies, "10.0.0.5:4000", []string{"10.1.1.1, 10.2.2.2"}, "10.1.1.1"},
		{"MalformedEntryStopsTheWalk", proxies, "10.0.0.5:4000", []string{"203.0.113.1, not-an-ip, 10.2.2.2"}, "10.2.2.2"},
		{"NoHeaderFromAProxy", proxies, "10.0.0.5:4000", nil, "10.0.0.5"},
		{"IPv6", proxies, "[fd00::1]:4000", []string{"2001:db8::5"}, "2001:db8::5"},
		{"MappedIPv4Peer", proxies, "[::ffff:10.0.0.5]:4000", []string{"203.0.113.1"}, "203.0.113.1"},
		{"RemoteAddrWithoutPort", nil, "198.51.100.9", nil, "198.51.100.9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := c.proxies.ClientIP(r); got != c.want {
				t.Errorf("ClientIP = %q, want %q", got, c.want)
			}
		})
	}
	for _, bad := range []string{"lb.internal", "10.0.0.0/33", "10.0.0.1:80"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) took it", bad)
		}
	}
}
