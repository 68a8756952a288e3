package netguard

import (
	"fmt"
	"net/netip"
	"strings"
)

// AllowEntry is one entry of KUKIE_GIT_ALLOWED_PRIVATE_HOSTS: a host that
// may be reached on a private address, by the one team named (Team) or, when
// Team is empty, by every team.
type AllowEntry struct {
	Team string
	Host string
}

// String is the entry as written in the variable: "team=host" or "host".
func (e AllowEntry) String() string {
	if e.Team == "" {
		return e.Host
	}
	return e.Team + "=" + e.Host
}

// MarshalText is String, so a logged list reads as it was written.
func (e AllowEntry) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// ParseAllowList parses the value of KUKIE_GIT_ALLOWED_PRIVATE_HOSTS:
// comma-separated entries, each a host name or IP address (without port or
// scheme) allowed for every team, or "team-id=host", split at the last '=',
// allowed for that team only. Whitespace around entries, team ids and hosts
// and empty entries are ignored, so an empty value allows nothing. Names
// are returned lower-cased without a trailing dot and IPs in canonical form;
// a malformed entry is an error naming it.
//
// The list is split at ',' first, so a team id holding ',' cannot be
// written: "acme,inc=git.acme" would read as the host "acme" for every team
// and "git.acme" for team "inc". To make that mistake an error rather than
// a host quietly allowed for everyone, entries without a team must come
// after every team entry: the first part of a team id cut at a ',' is then
// always an entry without a team before a team entry.
func ParseAllowList(s string) ([]AllowEntry, error) {
	var entries []AllowEntry
	var everyone string // the first entry without a team, if any
	for _, raw := range strings.Split(s, ",") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		e, err := parseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("netguard: allowed private host %q: %s", raw, err)
		}
		switch {
		case e.Team == "" && everyone == "":
			everyone = raw
		case e.Team != "" && everyone != "":
			return nil, fmt.Errorf("netguard: allowed private host %q has no team but comes before the team entry %q: "+
				"a team id cannot hold ',' (write entries without a team after all team entries)", everyone, raw)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// maxTeamID is the longest team claim auth accepts.
const maxTeamID = 256

// parseEntry parses one trimmed entry, "host" or "team=host".
func parseEntry(raw string) (AllowEntry, error) {
	var e AllowEntry
	hostPart := raw
	if i := strings.LastIndex(raw, "="); i >= 0 {
		e.Team, hostPart = strings.TrimSpace(raw[:i]), strings.TrimSpace(raw[i+1:])
		if e.Team == "" {
			return AllowEntry{}, errString("the team id before '=' is empty")
		}
		if len(e.Team) > maxTeamID {
			return AllowEntry{}, errString("the team id is longer than a token's team claim may be")
		}
	}
	host, err := parseAllowEntry(hostPart)
	if err != nil {
		return AllowEntry{}, err
	}
	e.Host = host
	return e, nil
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
