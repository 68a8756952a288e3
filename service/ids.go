package service

import (
	"regexp"
	"strings"

	"github.com/google/uuid"
)

// Identifier rules of the path parameters. A value that breaks its rule
// names nothing that can exist, so it is answered as not found (the
// route's own 404 code) before any lookup: odd bytes never reach the
// database, a cluster or a log line as an id.
var (
	clusterIDRule = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$`)
	dns1123Label  = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
)

// ValidClusterID reports a possible cluster id: 1 to 128 letters, digits,
// '.', '_' or '-', starting and ending with a letter or digit. Static
// clusters' ids are checked by the same rule when the server starts.
func ValidClusterID(id string) bool { return clusterIDRule.MatchString(id) }

// ValidAppID reports a possible app id (AppID): a Kubernetes object name,
// or "<namespace>_<name>" split at the first '_' into a namespace (a DNS
// label) and a name (a DNS subdomain).
func ValidAppID(id string) bool {
	ns, name, split := strings.Cut(id, "_")
	if !split {
		return validObjectName(id)
	}
	return validDNSLabel(ns) && validObjectName(name)
}

// validDNSLabel reports a DNS-1123 label, what Kubernetes accepts as a
// namespace: the one home of the rule (app ids, registration's namespaces).
func validDNSLabel(s string) bool { return dns1123Label.MatchString(s) }

// validObjectName reports a DNS-1123 subdomain: what Kubernetes accepts as
// the name of most objects, Applications included.
func validObjectName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !dns1123Label.MatchString(label) {
			return false
		}
	}
	return true
}

// ValidUUID reports a canonical UUID (8-4-4-4-12 hex), the form of plan and
// account ids.
func ValidUUID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil && len(id) == 36
}
