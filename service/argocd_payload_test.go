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
