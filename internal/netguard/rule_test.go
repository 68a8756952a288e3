package netguard

import (
	"net/netip"
	"testing"
)

func TestRefusal(t *testing.T) {
	tests := []struct {
		name    string
		ip      string
		allowed bool
		want    string // "" when the connection may proceed
	}{
		{"PublicV4", "140.82.112.3", false, ""},
		{"PublicV6", "2606:4700::6810:84e5", false, ""},
		{"MappedPublic", "::ffff:140.82.112.3", false, ""},
		{"NAT64Public", "64:ff9b::8c52:7003", false, ""},
		{"LoopbackV4", "127.0.0.1", false, reasonLoopback},
		{"LoopbackV4Other", "127.5.6.7", false, reasonLoopback},
		{"LoopbackV6", "::1", false, reasonLoopback},
		{"Private10", "10.1.2.3", false, reasonPrivate},
		{"Private172", "172.16.0.1", false, reasonPrivate},
		{"Private172Top", "172.31.255.255", false, reasonPrivate},
		{"Public172Outside", "172.32.0.1", false, ""},
		{"Private192", "192.168.1.1", false, reasonPrivate},
		{"CGNAT", "100.64.0.1", false, reasonShared},
		{"CGNATTop", "100.127.255.254", false, reasonShared},
		{"PublicOutsideCGNAT", "100.128.0.1", false, ""},
		{"LinkLocalV4", "169.254.1.1", false, reasonLinkLocal},
		{"LinkLocalV6", "fe80::1", false, reasonLinkLocal},
		{"UniqueLocalFC", "fc00::1", false, reasonUniqueLocal},
		{"UniqueLocalFD", "fd12:3456::1", false, reasonUniqueLocal},
		{"SiteLocal", "fec0::1", false, reasonSiteLocal},
		{"UnspecifiedV4", "0.0.0.0", false, reasonUnspecified},
		{"ThisNetwork", "0.1.2.3", false, reasonThisNetwork},
		{"UnspecifiedV6", "::", false, reasonUnspecified},
		{"MulticastV4", "224.0.0.1", false, reasonMulticast},
		{"MulticastV6", "ff02::1", false, reasonMulticast},
		{"Broadcast", "255.255.255.255", false, reasonReserved},
		{"Benchmarking", "198.18.0.1", false, reasonReserved},
		{"MappedLoopback", "::ffff:127.0.0.1", false, reasonLoopback + reasonEmbedded},
		{"MappedPrivate", "::ffff:10.0.0.1", false, reasonPrivate + reasonEmbedded},
		{"MappedUnspecified", "::ffff:0.0.0.0", false, reasonUnspecified + reasonEmbedded},
		{"CompatibleLoopback", "::127.0.0.1", false, reasonLoopback + reasonEmbedded},
		{"TranslatedPrivate", "::ffff:0:192.168.0.1", false, reasonPrivate + reasonEmbedded},
		{"NAT64Loopback", "64:ff9b::7f00:1", false, reasonLoopback + reasonEmbedded},
		{"LocalNAT64", "64:ff9b:1::a00:1", false, reasonLocalNAT64},
		{"SixToFourPrivate", "2002:a00:1::1", false, reasonPrivate + reasonEmbedded},
		{"SixToFourPublic", "2002:8c52:7003::1", false, ""},
		{"Teredo", "2001:0:4136:e378::1", false, reasonTeredo},
		{"Zoned", "fe80::1%eth0", true, reasonZone},

		{"AllowedLoopback", "127.0.0.1", true, ""},
		{"AllowedPrivate", "10.1.2.3", true, ""},
		{"AllowedUniqueLocal", "fd12::1", true, ""},
		{"AllowedMappedLoopback", "::ffff:127.0.0.1", true, ""},

		{"MetadataAWS", "169.254.169.254", false, reasonMetadata},
		{"MetadataAWSAllowed", "169.254.169.254", true, reasonMetadata},
		{"MetadataAWSv6Allowed", "fd00:ec2::254", true, reasonMetadata},
		{"MetadataECSAllowed", "169.254.170.2", true, reasonMetadata},
		{"MetadataPodIdentityAllowed", "169.254.170.23", true, reasonMetadata},
		{"MetadataPodIdentityV6Allowed", "fd00:ec2::23", true, reasonMetadata},
		{"MetadataMappedAllowed", "::ffff:169.254.169.254", true, reasonMetadata},
		{"MetadataCompatibleAllowed", "::169.254.169.254", true, reasonMetadata},
		{"MetadataNAT64Allowed", "64:ff9b::a9fe:a9fe", true, reasonMetadata},
		{"MetadataSixToFourAllowed", "2002:a9fe:a9fe::", true, reasonMetadata},
		{"MetadataMappedECSAllowed", "::ffff:169.254.170.2", true, reasonMetadata},
		{"MetadataAlibabaAllowed", "100.100.100.200", true, reasonMetadata},
		{"MetadataAzureWireServer", "168.63.129.16", false, reasonMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip, err := netip.ParseAddr(tt.ip)
			if err != nil {
				t.Fatal(err)
			}
			if got := refusal(ip, tt.allowed); got != tt.want {
				t.Errorf("refusal(%s, allowed=%v) = %q, want %q", tt.ip, tt.allowed, got, tt.want)
			}
		})
	}
}
