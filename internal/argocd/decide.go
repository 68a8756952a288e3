package argocd

import "github.com/kukie/gitops-server/service"

// Target is one object a change touches, as detection read it.
type Target struct {
	Group, Kind, Namespace, Name string
	// Changed are the changed fields (JSON pointers); nil when unknown.
	Changed []string
	// NarrowByGit is set when not_in_git may apply: false for
	// apply_manifest and delete_resource (service.GitNarrowingAllowed).
	NarrowByGit bool
	// LastApplied is the kubectl.kubernetes.io/last-applied-configuration
	// annotation, "" when absent. For a Secret it holds the data: it is
	// read here and never copied into a reason.
	LastApplied   string
	ManagedFields []service.ManagedFieldsEntry
	// Hook and RequiresPruning are the flags of the app's status.resources
	// row for the object (false when it lists none): the card and the
	// detail row decide them by the same rule.
	Hook, RequiresPruning bool
}

// Decision is the level a direct change meets, what decided it (a
// service.Cause* value; CausePolicyUnreadable is the caller's, for apps it
// cannot read) and why, in words.
type Decision struct {
	Level  service.Level
	Cause  string
	Reason string
}

// Decide is the level a change to one object an app manages meets: the one
// rule behind the approval card and the ownership answer. When several
// causes apply, the first of skip_reconcile, ignore_differences,
// not_in_git, self_heal_paused, policy names it, and the level is the
// weakest any of them allows (each is a true upper bound). The app's own
// ignoreDifferences and the system-wide rules of s are both applied. An
// object the app lists as a hook or as requiring pruning meets what its
// detail row shows, whatever changed (rowDecision). how says how the object
// was found to be managed and starts the reason ("" for none).
func Decide(a service.Application, s service.ArgoCDSettings, t Target, how string) Decision {
	base := appDecision(a)
	if d, ok := rowDecision(a, base, t); ok {
		d.Reason = join(how, d.Reason)
		return d
	}
	base.Reason = join(how, base.Reason)
	rules := make([]service.IgnoreRule, 0, len(a.IgnoreDifferences)+len(s.IgnoreRules))
	rules = append(append(rules, a.IgnoreDifferences...), s.IgnoreRules...)
	verdict, unevaluated := ignores(rules, a.RespectIgnoreDifferences, t.Group, t.Kind, t.Namespace, t.Name, t.Changed)
	d := base
	if unevaluated {
		d.Reason += "; a jqPathExpressions or managedFieldsManagers rule of ignoreDifferences applies to this object " +
			"and could not be evaluated, so it was not counted"
	}
	switch verdict {
	case IgnoredAndRespected:
		d.Level, d.Cause = service.LevelNotReverted, service.CauseIgnoreDifferences
		d.Reason += "; every changed field is in ignoreDifferences and RespectIgnoreDifferences=true: not reverted"
	case Ignored:
		d.Level, d.Cause = weaker(base.Level, service.LevelAutoSync), service.CauseIgnoreDifferences
		d.Reason += "; every changed field is in ignoreDifferences, so self-heal leaves it, but the next sync rewrites it"
	default:
		if len(t.Changed) > 0 && hasApplicable(rules, t) {
			d.Reason += "; ignoreDifferences does not cover every changed field"
		}
	}
	if d.Level != service.LevelNotReverted {
		if record, ok := notInGit(t); ok {
			if d.Cause == base.Cause {
				d.Cause = service.CauseNotInGit
			}
			d.Level = service.LevelNotReverted
			d.Reason += "; Git does not set any changed field (per " + record + "), and Argo CD's diff leaves " +
				"fields Git does not set: not reverted"
		}
	}
	return d
}

// hasApplicable reports whether any rule applies to the target.
func hasApplicable(rules []service.IgnoreRule, t Target) bool {
	for _, r := range rules {
		if RuleApplies(r, t.Group, t.Kind, t.Namespace, t.Name) {
			return true
		}
	}
	return false
}

// notInGit reports whether no changed field of the target is set by Git
// (issue 10 §4): Argo CD's default diff is three-way against
// last-applied-configuration, and its server-side apply owns only what Git
// sets (gitops-engine pkg/diff/diff.go ThreeWayDiff, StructuredMergeDiff),
// so a field Git does not set is not drift. It also names the record used.
func notInGit(t Target) (record string, ok bool) {
	if !t.NarrowByGit || len(t.Changed) == 0 {
		return "", false
	}
	g, ok := readGitFields(t.LastApplied, t.ManagedFields)
	if !ok {
		return "", false
	}
	for _, p := range t.Changed {
		if g.sets(p) {
			return "", false
		}
	}
	if g.owned != nil {
		return "the fields " + FieldManager + " owns by server-side apply", true
	}
	return "its last-applied-configuration", true
}

// DecideRow is Decide for a row of the app detail (status.resources; no
// changed fields), so a row never disagrees with the card.
func DecideRow(a service.Application, s service.ArgoCDSettings, r service.AppResource) Decision {
	return Decide(a, s, Target{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
		Hook: r.Hook, RequiresPruning: r.RequiresPruning}, "")
}

// rowDecision decides the objects whose status.resources row settles the
// level whatever changed: skip-reconcile reverts nothing; hooks are never
// compared after they ran, so never reverted; a row that requires pruning
// is an extra object Argo CD would delete, not revert (cause not_in_git,
// the level by when prune deletes it, and the reason says when).
func rowDecision(a service.Application, base Decision, t Target) (Decision, bool) {
	switch {
	case base.Cause == service.CauseSkipReconcile:
		return base, true
	case t.Hook:
		return Decision{service.LevelNotReverted, service.CausePolicy,
			"app " + a.Name + ": a hook, which Argo CD runs during syncs and does not compare afterwards: not reverted"}, true
	case t.RequiresPruning:
		return Decision{pruneLevel(a), service.CauseNotInGit,
			"app " + a.Name + ": no longer in Git (requires pruning); " + pruneWhen(a)}, true
	}
	return Decision{}, false
}

// pruneLevel is how surely a change to an object that requires pruning is
// lost: it is not reverted but deleted, by an automated sync with prune —
// soon with selfHeal (unless paused), else at the next Git change; without
// automated prune it stays. A deletion loses the change as surely as a
// revert, so the card warns as strongly.
func pruneLevel(a service.Application) service.Level {
	switch {
	case a.AutoSync && a.Prune && a.SelfHeal && !a.SelfHealPaused:
		return service.LevelSelfHeal
	case a.AutoSync && a.Prune:
		return service.LevelAutoSync
	}
	return service.LevelNotReverted
}

// pruneWhen says when Argo CD deletes an object that is no longer in Git
// (controller/appcontroller.go autoSync: prune off and only extra objects
// out of sync means no sync).
func pruneWhen(a service.Application) string {
	switch {
	case a.AutoSync && a.Prune && a.SelfHeal && !a.SelfHealPaused:
		return "auto-sync with prune and selfHeal will delete it soon"
	case a.AutoSync && a.Prune:
		return "auto-sync with prune will delete it at the next sync"
	case a.AutoSync:
		return "auto-sync does not prune, so it stays until a sync with prune deletes it"
	}
	return "it stays until a sync with prune deletes it"
}

// appDecision is how strongly the app reverts a direct change before
// anything about the object is known: skip-reconcile turns it off, a
// failed last sync pauses self-heal, else the sync policy decides.
func appDecision(a service.Application) Decision {
	switch {
	case a.SkipReconcile:
		// controller/appcontroller.go canProcessApp: the app is never
		// compared, synced or healed.
		return Decision{service.LevelNotReverted, service.CauseSkipReconcile,
			"app " + a.Name + ": " + AnnotationSkipReconcile + " is true, so Argo CD ignores the app and reverts nothing"}
	case a.SelfHealPaused && PolicyLevel(a) == service.LevelSelfHeal:
		return Decision{service.LevelAutoSync, service.CauseSelfHealPaused,
			PolicyReason(a) + "; the last sync to the current revision failed, so Argo CD does not self-heal " +
				"until a new commit or a successful sync"}
	}
	return Decision{PolicyLevel(a), service.CausePolicy, PolicyReason(a)}
}

// join joins reason parts with "; ", skipping empty ones.
func join(how, reason string) string {
	if how == "" {
		return reason
	}
	return how + "; " + reason
}
