package argocd

import (
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestDecide(t *testing.T) {
	selfHeal := service.Application{Name: "web", AutoSync: true, SelfHeal: true}
	with := func(a service.Application, edit func(*service.Application)) service.Application {
		edit(&a)
		return a
	}
	replicasIgnored := []service.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}
	noReplicas := `{"spec":{"template":{"spec":{"containers":[{"name":"web"}]}}}}`
	withReplicas := `{"spec":{"replicas":3}}`
	deployment := func(changed []string, narrow bool, lastApplied string, managed ...service.ManagedFieldsEntry) Target {
		return Target{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web", Changed: changed,
			NarrowByGit: narrow, LastApplied: lastApplied, ManagedFields: managed}
	}
	replicas := []string{"/spec/replicas"}
	cases := map[string]struct {
		app      service.Application
		settings service.ArgoCDSettings
		target   Target
		level    service.Level
		cause    string
		reason   string // a part of the reason
	}{
		"Policy":         {selfHeal, service.ArgoCDSettings{}, deployment(replicas, true, withReplicas), service.LevelSelfHeal, service.CausePolicy, "auto-sync with selfHeal"},
		"PolicyManual":   {service.Application{Name: "web"}, service.ArgoCDSettings{}, deployment(nil, false, ""), service.LevelManual, service.CausePolicy, "no auto-sync"},
		"PolicyAutoSync": {service.Application{Name: "web", AutoSync: true}, service.ArgoCDSettings{}, deployment(nil, false, ""), service.LevelAutoSync, service.CausePolicy, "without selfHeal"},
		"SkipReconcile": {with(selfHeal, func(a *service.Application) { a.SkipReconcile = true; a.IgnoreDifferences = replicasIgnored }),
			service.ArgoCDSettings{}, deployment(replicas, true, noReplicas), service.LevelNotReverted, service.CauseSkipReconcile, "skip-reconcile"},
		"SelfHealPaused": {with(selfHeal, func(a *service.Application) { a.SelfHealPaused = true }),
			service.ArgoCDSettings{}, deployment(replicas, true, withReplicas), service.LevelAutoSync, service.CauseSelfHealPaused, "last sync"},
		"IgnoredByApp": {with(selfHeal, func(a *service.Application) { a.IgnoreDifferences = replicasIgnored }),
			service.ArgoCDSettings{}, deployment(replicas, false, ""), service.LevelAutoSync, service.CauseIgnoreDifferences, "next sync rewrites"},
		"IgnoredAndRespected": {with(selfHeal, func(a *service.Application) { a.IgnoreDifferences = replicasIgnored; a.RespectIgnoreDifferences = true }),
			service.ArgoCDSettings{}, deployment(replicas, false, ""), service.LevelNotReverted, service.CauseIgnoreDifferences, "RespectIgnoreDifferences"},
		"IgnoredBySystemWideRule": {selfHeal, service.ArgoCDSettings{IgnoreRules: replicasIgnored}, deployment(replicas, false, ""),
			service.LevelAutoSync, service.CauseIgnoreDifferences, "ignoreDifferences"},
		"IgnoredByStarRule": {selfHeal, service.ArgoCDSettings{IgnoreRules: []service.IgnoreRule{{Group: "*", Kind: "*", JSONPointers: []string{"/spec"}}}},
			deployment(replicas, false, ""), service.LevelAutoSync, service.CauseIgnoreDifferences, "ignoreDifferences"},
		"IgnoreRuleOtherKind": {selfHeal, service.ArgoCDSettings{IgnoreRules: []service.IgnoreRule{{Group: "apps", Kind: "StatefulSet", JSONPointers: []string{"/spec"}}}},
			deployment(replicas, false, ""), service.LevelSelfHeal, service.CausePolicy, "auto-sync with selfHeal"},
		"IgnoredBeforePaused": {with(selfHeal, func(a *service.Application) { a.SelfHealPaused = true; a.IgnoreDifferences = replicasIgnored }),
			service.ArgoCDSettings{}, deployment(replicas, false, ""), service.LevelAutoSync, service.CauseIgnoreDifferences, "last sync"},
		"PartlyIgnored": {with(selfHeal, func(a *service.Application) { a.IgnoreDifferences = replicasIgnored }),
			service.ArgoCDSettings{}, deployment([]string{"/spec/replicas", "/spec/paused"}, false, ""), service.LevelSelfHeal, service.CausePolicy, "does not cover every"},
		"NotInLastApplied": {selfHeal, service.ArgoCDSettings{}, deployment(replicas, true, noReplicas),
			service.LevelNotReverted, service.CauseNotInGit, "last-applied-configuration"},
		"InLastApplied": {selfHeal, service.ArgoCDSettings{}, deployment(replicas, true, withReplicas),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"OneOfTwoInLastApplied": {selfHeal, service.ArgoCDSettings{}, deployment([]string{"/spec/replicas", "/spec/template/spec"}, true, noReplicas),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"ThroughListNotNarrowed": {selfHeal, service.ArgoCDSettings{}, deployment([]string{"/spec/template/spec/containers/0/image"}, true, noReplicas),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"NotNarrowedForApplyManifest": {selfHeal, service.ArgoCDSettings{}, deployment(replicas, false, noReplicas),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"NoChangedFields": {selfHeal, service.ArgoCDSettings{}, deployment(nil, true, noReplicas),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"NoRecord": {selfHeal, service.ArgoCDSettings{}, deployment(replicas, true, ""),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"UnparseableLastApplied": {selfHeal, service.ArgoCDSettings{}, deployment(replicas, true, "{"),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"NotOwnedByServerSideApply": {selfHeal, service.ArgoCDSettings{},
			deployment(replicas, true, withReplicas, service.ManagedFieldsEntry{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(`{"f:spec":{"f:template":{}}}`)}),
			service.LevelNotReverted, service.CauseNotInGit, "server-side apply"},
		"OwnedByServerSideApply": {selfHeal, service.ArgoCDSettings{},
			deployment(replicas, true, noReplicas, service.ManagedFieldsEntry{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(`{"f:spec":{"f:replicas":{}}}`)}),
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
		"ClientSideUpdateEntryUsesLastApplied": {selfHeal, service.ArgoCDSettings{},
			deployment(replicas, true, noReplicas, service.ManagedFieldsEntry{Manager: FieldManager, Operation: "Update", FieldsV1: []byte(`{"f:spec":{"f:replicas":{}}}`)}),
			service.LevelNotReverted, service.CauseNotInGit, "last-applied-configuration"},
		"NotInGitBeforePaused": {with(selfHeal, func(a *service.Application) { a.SelfHealPaused = true }), service.ArgoCDSettings{},
			deployment(replicas, true, noReplicas), service.LevelNotReverted, service.CauseNotInGit, "Git does not set"},
		"NotInGitManual": {service.Application{Name: "web"}, service.ArgoCDSettings{}, deployment(replicas, true, noReplicas),
			service.LevelNotReverted, service.CauseNotInGit, "Git does not set"},
		"IgnoredAndNotInGit": {with(selfHeal, func(a *service.Application) { a.IgnoreDifferences = replicasIgnored }), service.ArgoCDSettings{},
			deployment(replicas, true, noReplicas), service.LevelNotReverted, service.CauseIgnoreDifferences, "Git does not set"},
		"UnevaluatedRuleNamed": {with(selfHeal, func(a *service.Application) {
			a.IgnoreDifferences = []service.IgnoreRule{{Group: "apps", Kind: "Deployment", HasUnevaluated: true}}
		}), service.ArgoCDSettings{}, deployment(replicas, false, ""), service.LevelSelfHeal, service.CausePolicy, "could not be evaluated"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := Decide(c.app, c.settings, c.target, "tracking annotation")
			if d.Level != c.level || d.Cause != c.cause || !strings.Contains(d.Reason, c.reason) ||
				!strings.HasPrefix(d.Reason, "tracking annotation; ") {
				t.Errorf("Decide = %+v, want %s, %s, reason with %q", d, c.level, c.cause, c.reason)
			}
			if strings.Contains(d.Reason, `"replicas"`) || strings.Contains(d.Reason, "containers") {
				t.Errorf("reason quotes the object's record: %q", d.Reason)
			}
		})
	}
}

func TestDecideRow(t *testing.T) {
	app := func(autoSync, selfHeal, prune bool) service.Application {
		return service.Application{Name: "web", AutoSync: autoSync, SelfHeal: selfHeal, Prune: prune,
			IgnoreDifferences: []service.IgnoreRule{{Kind: "ConfigMap", JSONPointers: []string{"/data"}}}}
	}
	row := service.AppResource{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}
	hook := service.AppResource{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate", Hook: true}
	prune := service.AppResource{Kind: "ConfigMap", Namespace: "ns", Name: "old", RequiresPruning: true}
	skip := app(true, true, true)
	skip.SkipReconcile = true
	paused := app(true, true, true)
	paused.SelfHealPaused = true
	cases := map[string]struct {
		app    service.Application
		row    service.AppResource
		level  service.Level
		cause  string
		reason string
	}{
		"Policy":       {app(true, true, false), row, service.LevelSelfHeal, service.CausePolicy, "app web: auto-sync with selfHeal"},
		"PolicyManual": {app(false, false, false), row, service.LevelManual, service.CausePolicy, "app web: no auto-sync"},
		"Paused":       {paused, row, service.LevelAutoSync, service.CauseSelfHealPaused, "does not self-heal"},
		"Skip":         {skip, row, service.LevelNotReverted, service.CauseSkipReconcile, "skip-reconcile"},
		"SkipHook":     {skip, hook, service.LevelNotReverted, service.CauseSkipReconcile, "skip-reconcile"},
		"Hook":         {app(true, true, true), hook, service.LevelNotReverted, service.CausePolicy, "hook"},
		// Deleted rather than reverted: the card warns as strongly as a revert.
		"PruneSoon":       {app(true, true, true), prune, service.LevelSelfHeal, service.CauseNotInGit, "delete it soon"},
		"PrunePaused":     {paused, prune, service.LevelAutoSync, service.CauseNotInGit, "delete it at the next sync"},
		"PruneAtNextSync": {app(true, false, true), prune, service.LevelAutoSync, service.CauseNotInGit, "delete it at the next sync"},
		"PruneOff":        {app(true, true, false), prune, service.LevelNotReverted, service.CauseNotInGit, "does not prune"},
		"PruneManual":     {app(false, false, false), prune, service.LevelNotReverted, service.CauseNotInGit, "a sync with prune deletes it"},
		"NoChangedFieldsNoIgnore": {app(true, true, false), service.AppResource{Kind: "ConfigMap", Namespace: "ns", Name: "c"},
			service.LevelSelfHeal, service.CausePolicy, "selfHeal"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := DecideRow(c.app, service.ArgoCDSettings{}, c.row)
			if d.Level != c.level || d.Cause != c.cause || !strings.Contains(d.Reason, c.reason) {
				t.Errorf("DecideRow = %+v, want %s, %s, reason with %q", d, c.level, c.cause, c.reason)
			}
		})
	}
}

// TestCardOfHookAndPruneObjects: a change to an object the app lists as a
// hook or as requiring pruning meets the level its detail row shows,
// whatever its changed fields and their ignore rules say.
func TestCardOfHookAndPruneObjects(t *testing.T) {
	app := service.Application{Name: "web", AutoSync: true, SelfHeal: true, Prune: true, RespectIgnoreDifferences: true,
		IgnoreDifferences: []service.IgnoreRule{{Group: "*", Kind: "*", JSONPointers: []string{"/metadata/labels"}}}}
	for name, changed := range map[string][]string{
		"Unknown": nil, "Ignored": {"/metadata/labels"}, "NotInGit": {"/spec/replicas"}, "InGit": {"/spec/template"}} {
		for _, row := range []service.AppResource{
			{Group: "batch", Kind: "Job", Namespace: "ns", Name: "migrate", Hook: true},
			{Kind: "ConfigMap", Namespace: "ns", Name: "old", RequiresPruning: true},
		} {
			t.Run(name+"/"+row.Kind, func(t *testing.T) {
				want := DecideRow(app, service.ArgoCDSettings{}, row)
				d := Decide(app, service.ArgoCDSettings{}, Target{Group: row.Group, Kind: row.Kind, Namespace: row.Namespace,
					Name: row.Name, Changed: changed, NarrowByGit: true, LastApplied: `{"spec":{"template":{}}}`,
					Hook: row.Hook, RequiresPruning: row.RequiresPruning}, "tracking annotation")
				if d.Level != want.Level || d.Cause != want.Cause || d.Reason != "tracking annotation; "+want.Reason {
					t.Errorf("card %+v, row %+v", d, want)
				}
			})
		}
	}
}

// TestRowsAgreeWithParsedLevel: a plain row of the detail gets the app's
// Level and LevelReason, so the list, the detail and the card agree.
func TestRowsAgreeWithParsedLevel(t *testing.T) {
	for name, doc := range map[string]string{
		"SelfHeal": selfHealApp(`"source":{"repoURL":"r"}`, `"sync":{"revision":"a"}`),
		"Paused":   selfHealApp(`"source":{"repoURL":"r"}`, `"operationState":{"phase":"Failed"}`),
		"Skip":     `{"metadata":{"name":"a","namespace":"argocd","annotations":{"argocd.argoproj.io/skip-reconcile":"true"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			a, _ := parse(t, doc)
			d := DecideRow(a, service.ArgoCDSettings{}, service.AppResource{Kind: "Service", Name: "s"})
			if d.Level != a.Level || d.Reason != a.LevelReason {
				t.Errorf("row %+v, app %s %q", d, a.Level, a.LevelReason)
			}
		})
	}
}

// FuzzDecide: any record and changed field gives a valid level and cause,
// and the reason never repeats the object's last-applied-configuration
// (a Secret's holds its data).
func FuzzDecide(f *testing.F) {
	f.Add(`{"spec":{"replicas":3}}`, `{"f:spec":{"f:replicas":{}}}`, "/spec/replicas", true, true)
	f.Add(`{"data":{"password":"c2VjcmV0"}}`, ``, "/data/other", false, true)
	f.Fuzz(func(t *testing.T, lastApplied, fields, pointer string, ssa, narrow bool) {
		if len(lastApplied)+len(fields)+len(pointer) > maxFuzzInput {
			return
		}
		target := Target{Kind: "Secret", Namespace: "ns", Name: "s", Changed: []string{pointer}, NarrowByGit: narrow, LastApplied: lastApplied}
		if ssa {
			target.ManagedFields = []service.ManagedFieldsEntry{{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(fields)}}
		}
		d := Decide(service.Application{Name: "a", AutoSync: true, SelfHeal: true}, service.ArgoCDSettings{}, target, "how")
		switch d.Cause {
		case service.CausePolicy, service.CauseNotInGit:
		default:
			t.Fatalf("cause %q", d.Cause)
		}
		if !d.Level.Valid() || (len(lastApplied) > 8 && strings.Contains(d.Reason, lastApplied)) {
			t.Fatalf("decision %+v", d)
		}
	})
}
