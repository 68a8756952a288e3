package argocd

import "github.com/kukie/gitops-server/service"

// Decision is the level a direct change meets, what decided it (a
// service.Cause* value) and why, in words.
type Decision struct {
	Level  service.Level
	Cause  string
	Reason string
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
