package netguard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAllowList(t *testing.T) {
	everyone := func(hosts ...string) []AllowEntry {
		var es []AllowEntry
		for _, h := range hosts {
			es = append(es, AllowEntry{Host: h})
		}
		return es
	}
	tests := []struct {
		name string
		in   string
		want []AllowEntry
	}{
		{"Empty", "", nil},
		{"Blank", "  ", nil},
		{"One", "git.corp.example", everyone("git.corp.example")},
		{"TrimmedAndLowered", " Git.Corp.Example. , 10.0.0.5 ,", everyone("git.corp.example", "10.0.0.5")},
		{"IPv6Canonical", "FD00:0:0::1", everyone("fd00::1")},
		{"Loopback", "127.0.0.1", everyone("127.0.0.1")},
		{"Underscore", "git_server.internal", everyone("git_server.internal")},
		{"Team", "acme=Git.Acme.Internal", []AllowEntry{{Team: "acme", Host: "git.acme.internal"}}},
		{"TeamTrimmed", " acme = 10.0.0.7 ", []AllowEntry{{Team: "acme", Host: "10.0.0.7"}}},
		{"TeamIDKeepsCase", "Acme Corp=git.acme", []AllowEntry{{Team: "Acme Corp", Host: "git.acme"}}},
		{"TeamIDWithEquals", "org=acme=git.acme", []AllowEntry{{Team: "org=acme", Host: "git.acme"}}},
		{"TeamIPv6", "acme=fd00::7", []AllowEntry{{Team: "acme", Host: "fd00::7"}}},
		{"TeamsThenEveryone", "acme=git.acme,beta=git.beta,acme=10.0.0.8,git.shared",
			[]AllowEntry{{Team: "acme", Host: "git.acme"}, {Team: "beta", Host: "git.beta"}, {Team: "acme", Host: "10.0.0.8"}, {Host: "git.shared"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAllowList(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAllowList(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseAllowListMalformed(t *testing.T) {
	tests := []struct {
		name, in, bad string
	}{
		{"Scheme", "git.corp, https://git.corp", "https://git.corp"},
		{"Port", "git.corp:8443", "git.corp:8443"},
		{"IPv4Port", "10.0.0.5:22", "10.0.0.5:22"},
		{"BracketedIPv6", "[fd00::1]", "[fd00::1]"},
		{"Path", "git.corp/repo", "git.corp/repo"},
		{"Wildcard", "*.corp", "*.corp"},
		{"LeadingHyphen", "-git.corp", "-git.corp"},
		{"EmptyLabel", "git..corp", "git..corp"},
		{"Zone", "fe80::1%eth0", "fe80::1%eth0"},
		{"UserInfo", "user@git.corp", "user@git.corp"},
		{"EmptyTeam", "=git.corp", "=git.corp"},
		{"TeamHostWithPort", "acme=git.acme:22", "acme=git.acme:22"},
		{"TeamNoHost", "acme=", "acme="},
		{"TeamIDTooLong", strings.Repeat("t", 257) + "=git.acme", strings.Repeat("t", 257) + "=git.acme"},
		// A team id holding ',' is cut in two: its first part is an entry
		// without a team before a team entry, which is refused.
		{"TeamIDWithComma", "acme,inc=git.acme", "acme"},
		{"TeamIDWithCommaAfterTeams", "beta=git.beta,acme, inc=git.acme", "acme"},
		{"EveryoneBeforeTeam", "git.shared,acme=git.acme", "git.shared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseAllowList(tt.in)
			if err == nil {
				t.Fatalf("ParseAllowList(%q) = nil error", tt.in)
			}
			if !strings.Contains(err.Error(), `"`+tt.bad+`"`) {
				t.Errorf("error %q does not name the entry %q", err, tt.bad)
			}
		})
	}
}

func TestNewRejectsMalformedHost(t *testing.T) {
	if _, err := New([]AllowEntry{{Host: "git.corp:22"}}); err == nil {
		t.Fatal("New accepted a host with a port")
	}
}
