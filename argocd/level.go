package argocd

import (
	"strings"

	"github.com/kukie/gitops-server/service"
)

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

// Ignores decides whether every changed field (JSON pointers) is covered by
// the app's ignoreDifferences jsonPointers for this object. Rules the code
// cannot evaluate (jqPathExpressions, managedFieldsManagers) never cover.
func Ignores(a service.Application, group, kind, namespace, name string, changed []string) IgnoreVerdict {
	if len(changed) == 0 {
		return NotIgnored
	}
	for _, field := range changed {
		covered := false
		for _, rule := range a.IgnoreDifferences {
			if rule.Group != group || rule.Kind != kind ||
				(rule.Name != "" && rule.Name != name) || (rule.Namespace != "" && rule.Namespace != namespace) {
				continue
			}
			for _, p := range rule.JSONPointers {
				if p != "" && (field == p || strings.HasPrefix(field, strings.TrimSuffix(p, "/")+"/")) {
					covered = true
				}
			}
		}
		if !covered {
			return NotIgnored
		}
	}
	if a.RespectIgnoreDifferences {
		return IgnoredAndRespected
	}
	return Ignored
}
