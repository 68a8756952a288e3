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
