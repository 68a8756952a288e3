package service

import (
	"encoding/json"
	"testing"
)

// TestArgoCDFromPayloadStripsRepoCredentials: plans stored before repo URLs
// were cleaned at parse time may hold a token; it is never shown again.
func TestArgoCDFromPayloadStripsRepoCredentials(t *testing.T) {
	w := ArgoCDFromPayload(json.RawMessage(`{"argocd": {"level": "self_heal", "applications": [
		{"name": "a", "repo_url": "https://ghp_secret@github.com/org/repo"},
		{"name": "b", "repo_url": "ghp_secret@github.com:org/repo.git"}],
		"recheck_skipped": {"reason": "cluster_unreachable", "at": "2026-11-30T10:00:00Z"}}}`))
	if w == nil || len(w.Applications) != 2 {
		t.Fatalf("warning = %+v", w)
	}
	if got := w.Applications[0].RepoURL; got != "https://github.com/org/repo" {
		t.Errorf("https form: %q", got)
	}
	if got := w.Applications[1].RepoURL; got != "git@github.com:org/repo.git" {
		t.Errorf("scp form: %q", got)
	}
	if w.RecheckSkipped == nil || w.RecheckSkipped.Reason != "cluster_unreachable" || w.RecheckSkipped.At.IsZero() {
		t.Errorf("recheck_skipped = %+v", w.RecheckSkipped)
	}
}

// basis and level_cause ride along into the history; plans stored before
// them (absent) and odd values (dropped) are tolerated.
func TestArgoCDFromPayloadBasisAndCause(t *testing.T) {
	w := ArgoCDFromPayload(json.RawMessage(`{"argocd": {"level": "auto_sync", "resources": [
		{"kind": "Deployment", "name": "new", "basis": "status_resources", "level_cause": "self_heal_paused"},
		{"kind": "Deployment", "name": "old", "tracking": "annotation"},
		{"kind": "Deployment", "name": "odd", "basis": "guess", "level_cause": 7}]}}`))
	if w == nil || len(w.Resources) != 3 {
		t.Fatalf("warning = %+v", w)
	}
	if r := w.Resources[0]; r.Basis != BasisStatusResources || r.LevelCause != CauseSelfHealPaused {
		t.Errorf("new row: %+v", r)
	}
	if r := w.Resources[1]; r.Basis != "" || r.LevelCause != "" || r.Tracking != "annotation" {
		t.Errorf("old row: %+v", r)
	}
	if r := w.Resources[2]; r.Basis != "" || r.LevelCause != "" {
		t.Errorf("odd values kept: %+v", r)
	}
	out, _ := json.Marshal(w.Resources[1])
	if string(out) != `{"group":"","kind":"Deployment","name":"old","namespace":"","application":"","tracking":"annotation","level":"","reason":""}` {
		t.Errorf("old row encodes as %s (basis and level_cause must be absent)", out)
	}
}

// A stored payload.argocd of any shape (rows written before a field
// existed, or by an older version) reads back without failing: rows
// that are not objects or name no resource are dropped, values outside
// the closed lists too.
func TestArgoCDFromPayloadMalformed(t *testing.T) {
	w := ArgoCDFromPayload(json.RawMessage(`{"argocd": {"level": ["x"], "applications": "nope",
		"resources": [1, {"kind": "Deployment"}, {"kind": "Deployment", "name": "web", "level": 5,
		"fields": [7, {"field": "/spec/replicas", "git": {"state": "set", "source": {"line": "x", "key_planned": 3}}}]}, null]}}`))
	if w == nil || len(w.Resources) != 1 || w.Resources[0].Name != "web" || w.Level != "" || len(w.Applications) != 0 {
		t.Fatalf("malformed argocd read back as %+v", w)
	}
	f := w.Resources[0].Fields
	if len(f) != 1 || f[0].Git == nil || f[0].Git.Source == nil || f[0].Git.Source.Line != 0 || string(f[0].Git.Source.KeyPlanned) != "3" {
		t.Errorf("fields read back as %+v", f)
	}
	if ArgoCDFromPayload(json.RawMessage(`[]`)) != nil || ArgoCDFromPayload(json.RawMessage(`{"argocd": 1}`)) != nil {
		t.Error("a payload without an argocd object read back as a warning")
	}
}
