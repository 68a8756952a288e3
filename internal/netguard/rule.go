package netguard

import "net/netip"

// rangeRule names why one address range is refused.
type rangeRule struct {
	prefix netip.Prefix
	reason string
}

// Reasons a connection is refused; they appear in RefusedError.Reason.
const (
	reasonMetadata    = "cloud metadata address"
	reasonUnspecified = "unspecified address"
	reasonThisNetwork = "this-network address (0.0.0.0/8)"
	reasonLoopback    = "loopback address"
	reasonPrivate     = "private address"
	reasonLinkLocal   = "link-local address"
	reasonShared      = "shared address space (100.64.0.0/10)"
	reasonMulticast   = "multicast address"
	reasonReserved    = "reserved address"
	reasonUniqueLocal = "unique local address (fc00::/7)"
	reasonSiteLocal   = "site-local address (fec0::/10)"
	reasonLocalNAT64  = "local-use NAT64 address (64:ff9b:1::/48)"
	reasonTeredo      = "Teredo address (2001::/32)"
	reasonDiscard     = "discard-only address (100::/64)"
	reasonZone        = "address with a zone"
	reasonEmbedded    = " embedded in an IPv6 address"
)

// metadataAddrs are refused whatever the allow list says: cloud instance
// metadata and credential endpoints hand out the server's own credentials.
// AWS IMDS (IPv4 and IPv6), ECS task credentials, EKS Pod Identity (IPv4 and
// IPv6), Alibaba Cloud metadata and Azure's WireServer.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("fd00:ec2::23"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// v4Rules are the IPv4 ranges that are not the public internet.
var v4Rules = []rangeRule{
	{netip.MustParsePrefix("0.0.0.0/32"), reasonUnspecified},
	{netip.MustParsePrefix("0.0.0.0/8"), reasonThisNetwork},
	{netip.MustParsePrefix("10.0.0.0/8"), reasonPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), reasonShared},
	{netip.MustParsePrefix("127.0.0.0/8"), reasonLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), reasonLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), reasonPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), reasonReserved},
	{netip.MustParsePrefix("192.168.0.0/16"), reasonPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), reasonReserved},
	{netip.MustParsePrefix("224.0.0.0/4"), reasonMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), reasonReserved},
}

// v6Rules are the IPv6 ranges that are not the public internet, apart from
// the forms that embed an IPv4 address (see embeddedIPv4).
var v6Rules = []rangeRule{
	{netip.MustParsePrefix("::/128"), reasonUnspecified},
	{netip.MustParsePrefix("::1/128"), reasonLoopback},
	{netip.MustParsePrefix("fe80::/10"), reasonLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), reasonSiteLocal},
	{netip.MustParsePrefix("fc00::/7"), reasonUniqueLocal},
	{netip.MustParsePrefix("ff00::/8"), reasonMulticast},
	{netip.MustParsePrefix("64:ff9b:1::/48"), reasonLocalNAT64},
	{netip.MustParsePrefix("100::/64"), reasonDiscard},
	{netip.MustParsePrefix("2001::/32"), reasonTeredo},
}

// IPv6 forms that carry an IPv4 address a packet may end up at.
var (
	compatPrefix = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	siitPrefix   = netip.MustParsePrefix("::ffff:0:0:0/96") // IPv4-translated (SIIT)
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64
	sixToFour    = netip.MustParsePrefix("2002::/16")       // 6to4
)

// refusal is the rule: it returns why a connection to ip is refused, or ""
// when it may proceed. hostAllowed says the host as written (name or IP
// literal) is in the operator's allow list, which lifts every refusal but
// the cloud metadata addresses.
func refusal(ip netip.Addr, hostAllowed bool) string {
	if !ip.IsValid() {
		return reasonUnspecified
	}
	if ip.Zone() != "" {
		return reasonZone
	}
	v4, embedded := embeddedIPv4(ip)
	if isMetadata(ip) || (embedded && isMetadata(v4)) {
		return reasonMetadata
	}
	if hostAllowed {
		return ""
	}
	if ip.Is4() {
		return matchRule(v4Rules, ip)
	}
	if r := matchRule(v6Rules, ip); r != "" {
		return r
	}
	if embedded {
		if r := matchRule(v4Rules, v4); r != "" {
			return r + reasonEmbedded
		}
	}
	return ""
}

func isMetadata(ip netip.Addr) bool {
	for _, m := range metadataAddrs {
		if ip == m {
			return true
		}
	}
	return false
}

func matchRule(rules []rangeRule, ip netip.Addr) string {
	for _, r := range rules {
		if r.prefix.Contains(ip) {
			return r.reason
		}
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address an IPv6 address carries in its
// IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64 or 6to4 form.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	if ip.Is4In6() {
		return ip.Unmap(), true
	}
	b := ip.As16()
	switch {
	case compatPrefix.Contains(ip), siitPrefix.Contains(ip), nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
