package netguard

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseAllowList parses the value of KUKIE_GIT_ALLOWED_PRIVATE_HOSTS:
// comma-separated host names or IP addresses, without ports or schemes.
// Whitespace around entries and empty entries are ignored, so an empty value
// allows nothing. Names are returned lower-cased without a trailing dot and
// IPs in canonical form; a malformed entry is an error naming it.
func ParseAllowList(s string) ([]string, error) {
	var hosts []string
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		host, err := parseAllowEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("netguard: allowed private host %q: %s", entry, err)
		}
		hosts = append(hosts, host)
	}
	return hosts, nil
}

// errString is a constant error message, used where the caller adds context.
type errString string

func (e errString) Error() string { return string(e) }

func parseAllowEntry(entry string) (string, error) {
	switch {
	case strings.Contains(entry, "://"):
		return "", errString("a host, not a URL: remove the scheme")
	case strings.ContainsAny(entry, "/?#@"):
		return "", errString("a host, not a URL")
	case strings.HasPrefix(entry, "["):
		return "", errString("write an IPv6 address without brackets or port")
	}
	if ip, err := netip.ParseAddr(entry); err == nil {
		if ip.Zone() != "" {
			return "", errString("an IPv6 zone is not allowed")
		}
		return ip.String(), nil
	}
	if strings.Contains(entry, ":") {
		return "", errString("a host without a port")
	}
	name := canonicalHost(entry)
	if !validHostName(name) {
		return "", errString("not a valid host name or IP address")
	}
	return name, nil
}

// canonicalHost is the form a host is compared in: IP literals canonical,
// names lower-cased without a trailing dot.
func canonicalHost(host string) string {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String()
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// validHostName reports whether name is a DNS host name: dot-separated labels
// of letters, digits, '-' and '_' (seen in internal names), 1 to 63
// characters, not starting or ending with '-'.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return false
			}
		}
	}
	return true
}
