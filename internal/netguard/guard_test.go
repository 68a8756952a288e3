package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// fakeResolver answers host names from a map; anything else is not found.
type fakeResolver map[string][]string

func (r fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var ips []netip.Addr
	for _, a := range addrs {
		ips = append(ips, netip.MustParseAddr(a))
	}
	return ips, nil
}

// MustGuard builds a Guard with a fake resolver and no proxy; allowed are
// entries as written in KUKIE_GIT_ALLOWED_PRIVATE_HOSTS.
func MustGuard(tb testing.TB, allowed []string, r fakeResolver) *Guard {
	tb.Helper()
	entries, err := ParseAllowList(strings.Join(allowed, ","))
	if err != nil {
		tb.Fatal(err)
	}
	g, err := newGuard(entries, nil, r)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// MustListen starts a TCP listener on 127.0.0.1 that accepts and counts
// connections, closed at the end of the test.
func MustListen(tb testing.TB) (addr string, accepted <-chan struct{}) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	ch := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
			ch <- struct{}{}
		}
	}()
	return ln.Addr().String(), ch
}

func testContext(tb testing.TB) context.Context {
	// Generous: only catches hangs.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

func assertRefused(tb testing.TB, err error, wantReason string) *RefusedError {
	tb.Helper()
	if !errors.Is(err, ErrRefused) {
		tb.Fatalf("error = %v, want a refusal (%s)", err, wantReason)
	}
	var re *RefusedError
	if !errors.As(err, &re) {
		tb.Fatalf("error %T does not unwrap to *RefusedError", err)
	}
	if !strings.Contains(re.Reason, wantReason) {
		tb.Fatalf("reason = %q, want it to contain %q", re.Reason, wantReason)
	}
	return re
}

func TestDialContextLoopback(t *testing.T) {
	addr, accepted := MustListen(t)
	_, port, _ := net.SplitHostPort(addr)

	t.Run("RefusedWithoutAllowList", func(t *testing.T) {
		g := MustGuard(t, nil, nil)
		_, err := g.DialContext(testContext(t), "tcp", addr)
		re := assertRefused(t, err, reasonLoopback)
		if re.Host != "127.0.0.1" || re.IP != netip.MustParseAddr("127.0.0.1") {
			t.Errorf("refusal names %q %v", re.Host, re.IP)
		}
	})
	t.Run("ReachableWhenListed", func(t *testing.T) {
		g := MustGuard(t, []string{"127.0.0.1"}, nil)
		conn, err := g.DialContext(testContext(t), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
		<-accepted
	})
	t.Run("NameResolvingToLoopbackRefused", func(t *testing.T) {
		g := MustGuard(t, nil, fakeResolver{"git.internal.test": {"127.0.0.1"}})
		_, err := g.DialContext(testContext(t), "tcp", net.JoinHostPort("git.internal.test", port))
		re := assertRefused(t, err, reasonLoopback)
		if re.Host != "git.internal.test" {
			t.Errorf("Host = %q", re.Host)
		}
	})
	t.Run("NameListedReachable", func(t *testing.T) {
		g := MustGuard(t, []string{"Git.Internal.Test"}, fakeResolver{"git.internal.test": {"127.0.0.1"}})
		conn, err := g.DialContext(testContext(t), "tcp", net.JoinHostPort("git.internal.test", port))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.Close()
		<-accepted
	})
	t.Run("ListingTheIPDoesNotAllowANameResolvingToIt", func(t *testing.T) {
		g := MustGuard(t, []string{"127.0.0.1"}, fakeResolver{"git.internal.test": {"127.0.0.1"}})
		_, err := g.DialContext(testContext(t), "tcp", net.JoinHostPort("git.internal.test", port))
		assertRefused(t, err, reasonLoopback)
	})
	t.Run("MixedAnswerRefusedWhole", func(t *testing.T) {
		// A rebinding resolver answering a public and a private address.
		g := MustGuard(t, nil, fakeResolver{"rebind.example.com": {"140.82.112.3", "127.0.0.1"}})
		_, err := g.DialContext(testContext(t), "tcp", net.JoinHostPort("rebind.example.com", port))
		assertRefused(t, err, reasonLoopback)
	})
	t.Run("MappedLoopbackLiteral", func(t *testing.T) {
		g := MustGuard(t, nil, nil)
		_, err := g.DialContext(testContext(t), "tcp", net.JoinHostPort("::ffff:127.0.0.1", port))
		assertRefused(t, err, reasonLoopback)
	})
}

func TestDialContextRefusals(t *testing.T) {
	r := fakeResolver{
		"metadata.google.internal": {"169.254.169.254"},
		"internal.example.com":     {"10.0.0.7"},
		"v6.internal.example.com":  {"fd12::7"},
	}
	tests := []struct {
		name    string
		allowed []string
		network string
		addr    string
		reason  string
	}{
		{"Metadata", nil, "tcp", "169.254.169.254:80", reasonMetadata},
		{"MetadataListed", []string{"169.254.169.254"}, "tcp", "169.254.169.254:80", reasonMetadata},
		{"MetadataV6Listed", []string{"fd00:ec2::254"}, "tcp", "[fd00:ec2::254]:80", reasonMetadata},
		{"MetadataMappedListed", []string{"::ffff:169.254.169.254"}, "tcp", "[::ffff:169.254.169.254]:80", reasonMetadata},
		{"MetadataByListedName", []string{"metadata.google.internal"}, "tcp", "metadata.google.internal:80", reasonMetadata},
		{"ECSCredentialsListed", []string{"169.254.170.2"}, "tcp", "169.254.170.2:80", reasonMetadata},
		{"PodIdentityListed", []string{"169.254.170.23"}, "tcp", "169.254.170.23:80", reasonMetadata},
		{"PrivateName", nil, "tcp", "internal.example.com:443", reasonPrivate},
		{"UniqueLocalName", nil, "tcp", "v6.internal.example.com:443", reasonUniqueLocal},
		{"CGNAT", nil, "tcp", "100.64.1.1:443", reasonShared},
		{"Unspecified", nil, "tcp", "0.0.0.0:443", reasonUnspecified},
		{"UDP", nil, "udp", "140.82.112.3:53", "network"},
		{"NoHost", nil, "tcp", ":443", "no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := MustGuard(t, tt.allowed, r)
			_, err := g.DialContext(testContext(t), tt.network, tt.addr)
			assertRefused(t, err, tt.reason)
		})
	}
}

func TestDialContextResolveFailureIsNotARefusal(t *testing.T) {
	g := MustGuard(t, nil, fakeResolver{})
	_, err := g.DialContext(testContext(t), "tcp", "nowhere.example.com:443")
	if err == nil || errors.Is(err, ErrRefused) {
		t.Fatalf("error = %v, want a resolution error", err)
	}
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) {
		t.Errorf("error %v does not unwrap to *net.DNSError", err)
	}
}

func TestRefusedErrorMessage(t *testing.T) {
	tests := []struct {
		err  *RefusedError
		want string
	}{
		{&RefusedError{Host: "git.example.com", IP: netip.MustParseAddr("10.0.0.1"), Reason: reasonPrivate},
			`netguard: refused "git.example.com" (10.0.0.1): private address`},
		{&RefusedError{Host: "127.0.0.1", IP: netip.MustParseAddr("127.0.0.1"), Reason: reasonLoopback},
			`netguard: refused "127.0.0.1": loopback address`},
		{&RefusedError{Reason: "scheme \"file\" is not allowed"},
			`netguard: refused: scheme "file" is not allowed`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %s, want %s", got, tt.want)
		}
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", tests[0].err), ErrRefused) {
		t.Error("a wrapped RefusedError is not ErrRefused")
	}
}

// TestDialContextTeamEntries: a team entry allows its host to dials made
// for that team only; an entry without a team to every team.
func TestDialContextTeamEntries(t *testing.T) {
	addr, accepted := MustListen(t)
	_, port, _ := net.SplitHostPort(addr)
	r := fakeResolver{"git.acme.test": {"127.0.0.1"}, "git.shared.test": {"127.0.0.1"}}
	g := MustGuard(t, []string{"team-a=git.acme.test", "team-a=127.0.0.1", "git.shared.test"}, r)
	tests := []struct {
		name, team, host string
		refused          bool
	}{
		{"TeamNameAllowed", "team-a", "git.acme.test", false},
		{"TeamIPAllowed", "team-a", "127.0.0.1", false},
		{"ErrOtherTeamName", "team-b", "git.acme.test", true},
		{"ErrOtherTeamIP", "team-b", "127.0.0.1", true},
		{"ErrNoTeamName", "", "git.acme.test", true},
		{"ErrTeamIDIsCaseSensitive", "Team-A", "git.acme.test", true},
		{"EveryoneEntryForTeamA", "team-a", "git.shared.test", false},
		{"EveryoneEntryForTeamB", "team-b", "git.shared.test", false},
		{"EveryoneEntryWithoutTeam", "", "git.shared.test", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			if tt.team != "" {
				ctx = NewContextWithTeam(ctx, tt.team)
			}
			conn, err := g.DialContext(ctx, "tcp", net.JoinHostPort(tt.host, port))
			if tt.refused {
				assertRefused(t, err, reasonLoopback)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_ = conn.Close()
			<-accepted
		})
	}
}

func TestTeamOnly(t *testing.T) {
	g := MustGuard(t, []string{"team-a=git.acme.test", "team-a=git.shared.test", "team-a=fd00::7", "git.shared.test"}, nil)
	tests := []struct {
		name, team, host string
		want             bool
	}{
		{"TeamEntry", "team-a", "git.acme.test", true},
		{"TeamEntryAsWritten", "team-a", "GIT.Acme.Test.", true},
		{"BracketedIPv6", "team-a", "[fd00::7]", true},
		{"OtherTeam", "team-b", "git.acme.test", false},
		{"NoTeam", "", "git.acme.test", false},
		{"AlsoForEveryone", "team-a", "git.shared.test", false},
		{"Public", "team-a", "github.com", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := g.TeamOnly(tt.team, tt.host); got != tt.want {
				t.Errorf("TeamOnly(%q, %q) = %v, want %v", tt.team, tt.host, got, tt.want)
			}
		})
	}
}

func TestTeamFromContext(t *testing.T) {
	if got := TeamFromContext(context.Background()); got != "" {
		t.Errorf("TeamFromContext(empty) = %q", got)
	}
	if got := TeamFromContext(NewContextWithTeam(context.Background(), "team-a")); got != "team-a" {
		t.Errorf("TeamFromContext = %q, want team-a", got)
	}
}
