package argocd

import (
	"strings"

	"github.com/kukie/gitops-server/service"
)

// Summary is the approval card's headline for a change to managed resources.
const Summary = "ArgoCD 관리 리소스 직접 변경"

// strength orders the levels by how surely a direct change is reverted.
func strength(l service.Level) int {
	switch l {
	case service.LevelSelfHeal:
		return 5
	case service.LevelUnknown:
		return 4
	case service.LevelAutoSync:
		return 3
	case service.LevelManual:
		return 2
	case service.LevelNotReverted:
		return 1
	}
	return 0
}

// Stronger reports whether l reverts more surely than m.
func Stronger(l, m service.Level) bool { return strength(l) > strength(m) }

// Strongest returns the strongest of levels ("" when there are none): when
// a change touches several resources, the strongest level wins.
func Strongest(levels ...service.Level) service.Level {
	var out service.Level
	for _, l := range levels {
		if Stronger(l, out) {
			out = l
		}
	}
	return out
}

// weaker returns the weaker of two levels.
func weaker(l, m service.Level) service.Level {
	if Stronger(l, m) {
		return m
	}
	return l
}

// PolicyLevel is how strongly an app reverts a direct change, from its sync
// policy alone.
func PolicyLevel(a service.Application) service.Level {
	switch {
	case a.AutoSync && a.SelfHeal:
		return service.LevelSelfHeal
	case a.AutoSync:
		return service.LevelAutoSync
	}
	return service.LevelManual
}

// PolicyReason says in words why PolicyLevel is what it is.
func PolicyReason(a service.Application) string {
	switch {
	case a.AutoSync && a.SelfHeal:
		return "app " + a.Name + ": auto-sync with selfHeal"
	case a.AutoSync && a.ManifestGeneratePaths:
		return "app " + a.Name + ": auto-sync without selfHeal, following only commits that touch its " +
			"manifest-generate-paths"
	case a.AutoSync:
		return "app " + a.Name + ": auto-sync without selfHeal"
	}
	return "app " + a.Name + ": no auto-sync"
}

// IgnoreVerdict says how an app's ignoreDifferences treat a change.
type IgnoreVerdict int

// Verdicts: the change is not (fully) ignored, it is ignored by a diff rule
// (kept until the next sync), or ignored and RespectIgnoreDifferences keeps
// syncs from touching it.
const (
	NotIgnored IgnoreVerdict = iota
	Ignored
	IgnoredAndRespected
)

// RuleApplies reports whether an ignoreDifferences rule applies to an object
// as Argo CD decides it (util/argo/normalizers/diff_normalizer.go
// ignoreNormalizer.Normalize): group and kind are globs (an empty group
// matches only the core group), name and namespace match exactly and an
// empty one matches any.
func RuleApplies(rule service.IgnoreRule, group, kind, namespace, name string) bool {
	return globMatch(rule.Group, group) && globMatch(rule.Kind, kind) &&
		(rule.Name == "" || rule.Name == name) && (rule.Namespace == "" || rule.Namespace == namespace)
}

// ignores is Ignores over any list of rules (an app's own and argocd-cm's).
func ignores(all []service.IgnoreRule, respect bool, group, kind, namespace, name string, changed []string) (v IgnoreVerdict, unevaluated bool) {
	var rules []service.IgnoreRule
	for _, rule := range all {
		if !RuleApplies(rule, group, kind, namespace, name) {
			continue
		}
		rules = append(rules, rule)
		unevaluated = unevaluated || rule.HasUnevaluated
	}
	if len(changed) == 0 {
		return NotIgnored, unevaluated
	}
	for _, field := range changed {
		if !covered(rules, field) {
			return NotIgnored, unevaluated
		}
	}
	if respect {
		return IgnoredAndRespected, unevaluated
	}
	return Ignored, unevaluated
}

// covered reports whether a JSON pointer of the rules is the field or one
// of its parents.
func covered(rules []service.IgnoreRule, field string) bool {
	for _, rule := range rules {
		for _, p := range rule.JSONPointers {
			if p != "" && (field == p || strings.HasPrefix(field, strings.TrimSuffix(p, "/")+"/")) {
				return true
			}
		}
	}
	return false
}
