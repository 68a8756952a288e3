package netguard

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"Empty", "", nil},
		{"Blank", "  ", nil},
		{"One", "git.corp.example", []string{"git.corp.example"}},
		{"TrimmedAndLowered", " Git.Corp.Example. , 10.0.0.5 ,", []string{"git.corp.example", "10.0.0.5"}},
		{"IPv6Canonical", "FD00:0:0::1", []string{"fd00::1"}},
		{"Loopback", "127.0.0.1", []string{"127.0.0.1"}},
		{"Underscore", "git_server.internal", []string{"git_server.internal"}},
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
	if _, err := New([]string{"git.corp:22"}); err == nil {
		t.Fatal("New accepted a host with a port")
	}
}
