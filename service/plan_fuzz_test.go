package service

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzArgoCDFromPayload reads the `argocd` field of fuzzed plan payloads,
// which clients write freely and history shows back: it never panics; it
// answers a warning exactly when there is an `argocd` object; what it keeps
// is well formed (named rows, values from the closed lists, repo URLs
// without credentials, no nil lists); the warning encodes to JSON (the
// history response) and reads back the same; and a payload reads the same
// before and after NormalizePayload, the form plans are stored in.
func FuzzArgoCDFromPayload(f *testing.F) {
	for _, s := range []string{
		`{"tool":"kubectl","argocd":{"summary":"Managed by web (self-heal)","level":"self_heal","warning":"Argo CD will revert this change.",
			"checked_at":"2026-11-30T10:00:00.123456789Z","applications":[{"name":"web","namespace":"argocd",
			"repo_url":"https://ghp_secret@github.com/org/gitops","path":"apps/web","paths":["apps/web","shared"],
			"target_revision":"main","auto_sync":true,"self_heal":true,"prune":false}],
			"resources":[{"group":"apps","kind":"Deployment","name":"web","namespace":"shop","application":"web",
			"tracking":"annotation","basis":"annotation","level_cause":"policy","level":"self_heal","reason":"r"}],
			"recheck_skipped":{"reason":"cluster_unreachable","at":"2026-11-30T10:00:00+05:30"}}}`,
		`{"argocd":{"level":["x"],"applications":"nope","resources":[1,null,{"kind":"Pod"},{"name":"p","kind":"Pod","basis":"guess","level_cause":7}]}}`,
		`{"argocd":{"applications":[{"name":"a","repo_url":"ghp_x@github.com:o/r","paths":[1,"p",null]},{"name":""},"x"]}}`,
		`{"argocd":{"checked_at":"0001-01-01T00:00:00Z","recheck_skipped":{"reason":"x","at":"nope"}}}`,
		`{"argocd":null}`, `{"argocd":[]}`, `[]`, `{"argocd":{}}`, `{"argocd":{"level":"manual"},"argocd":{"level":"auto_sync"}}`,
		`{"argocd":{"summary":"\u0000\ud800","checked_at":"2026-01-02T03:04:05-23:59"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > maxFuzzInput {
			return
		}
		w := ArgoCDFromPayload(payload)
		var doc map[string]any
		isObject := false
		if json.Unmarshal(payload, &doc) == nil {
			_, isObject = doc["argocd"].(map[string]any)
		}
		if (w != nil) != isObject {
			t.Fatalf("warning %+v for a payload with an argocd object: %v", w, isObject)
		}
		if w == nil {
			return
		}
		checkWarning(t, w)

		out, err := json.Marshal(map[string]any{"argocd": w})
		if err != nil {
			t.Fatalf("warning %+v does not encode: %v", w, err)
		}
		if diff := cmp.Diff(w, ArgoCDFromPayload(out)); diff != "" {
			t.Fatalf("warning read back from its JSON differs (-read +reread):\n%s\n%s", diff, out)
		}
		if normalized, err := NormalizePayload(payload); err == nil {
			if diff := cmp.Diff(w, ArgoCDFromPayload(normalized)); diff != "" {
				t.Fatalf("normalized payload reads differently (-raw +normalized):\n%s", diff)
			}
		}
	})
}

// checkWarning fails t unless w is what ArgoCDFromPayload promises.
func checkWarning(t *testing.T, w *ArgoCDWarning) {
	t.Helper()
	if w.Applications == nil || w.Resources == nil || w.Level != "" && !w.Level.Valid() ||
		w.RecheckSkipped != nil && w.RecheckSkipped.Reason == "" {
		t.Fatalf("warning %+v", w)
	}
	for _, a := range w.Applications {
		if a.Name == "" || a.Paths == nil || RepoURLCredentialProblem(a.RepoURL) != "" {
			t.Fatalf("application %+v", a)
		}
	}
	for _, r := range w.Resources {
		if r.Name == "" || r.Kind == "" || r.Level != "" && !r.Level.Valid() ||
			r.Basis != "" && !ValidBasis(r.Basis) || r.LevelCause != "" && !ValidCause(r.LevelCause) {
			t.Fatalf("resource %+v", r)
		}
	}
}
