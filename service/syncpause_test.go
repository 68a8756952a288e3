package service

import (
	"encoding/json"
	"testing"
)

// A resume goes ahead only when the policy is what the pause left.
func TestStillPaused(t *testing.T) {
	byEnabled := SyncPause{Method: PauseByEnabled, Previous: json.RawMessage(`{"prune":true,"selfHeal":true}`)}
	byRemoval := SyncPause{Method: PauseByRemoval, Previous: json.RawMessage(`{"selfHeal":true}`)}
	for _, tt := range []struct {
		name    string
		pause   SyncPause
		current string
		want    bool
	}{
		{"EnabledFalseAsLeft", byEnabled, `{"prune":true,"selfHeal":true,"enabled":false}`, true},
		{"EnabledTurnedBackOn", byEnabled, `{"prune":true,"selfHeal":true,"enabled":true}`, false},
		{"EnabledPolicyEdited", byEnabled, `{"prune":false,"selfHeal":true,"enabled":false}`, false},
		{"EnabledRemoved", byEnabled, ``, false},
		{"RemovedAsLeft", byRemoval, ``, true},
		{"RemovedButAddedAgain", byRemoval, `{"selfHeal":true}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var current json.RawMessage
			if tt.current != "" {
				current = json.RawMessage(tt.current)
			}
			if got := stillPaused(tt.pause, current); got != tt.want {
				t.Errorf("stillPaused = %v, want %v", got, tt.want)
			}
		})
	}
}

// An ApplicationSet leaves an app's automated policy alone when it only
// creates apps or ignores /spec/syncPolicy (or a parent of it) for the
// app, by name or for every app.
func TestApplicationSetIgnoresPolicy(t *testing.T) {
	set := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for s, want := range map[string]bool{
		`{"spec":{"syncPolicy":{"applicationsSync":"create-only"}}}`:                                      true,
		`{"spec":{"syncPolicy":{"applicationsSync":"create-delete"}}}`:                                    true,
		`{"spec":{"syncPolicy":{"applicationsSync":"sync"}}}`:                                             false,
		`{"spec":{"ignoreApplicationDifferences":[{"jsonPointers":["/spec/syncPolicy"]}]}}`:               true,
		`{"spec":{"ignoreApplicationDifferences":[{"name":"web","jsonPointers":["/spec/syncPolicy/"]}]}}`: true,
		`{"spec":{"ignoreApplicationDifferences":[{"name":"api","jsonPointers":["/spec/syncPolicy"]}]}}`:  false,
		`{"spec":{"ignoreApplicationDifferences":[{"jsonPointers":["/spec/source"]}]}}`:                   false,
		`{"spec":{}}`: false,
	} {
		if got := applicationSetIgnoresPolicy(set(s), "web"); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
	}
	owned := set(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"x"},` +
		`{"apiVersion":"argoproj.io/v1alpha1","kind":"ApplicationSet","name":"team-apps"}]}}`)
	if got := ownerApplicationSet(owned); got != "team-apps" {
		t.Errorf("owner = %q", got)
	}
}
