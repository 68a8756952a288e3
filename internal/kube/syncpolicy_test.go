package kube

import (
	"encoding/json"
	"testing"
)

// Argo CD 3.1 and later list spec.syncPolicy.automated.enabled; older
// schemas (or one that preserves unknown fields) do not.
func TestHasEnabled(t *testing.T) {
	with := `{"properties":{"spec":{"properties":{"syncPolicy":{"properties":{"automated":{"properties":{"enabled":{"type":"boolean"},"prune":{"type":"boolean"}}}}}}}}}`
	without := `{"properties":{"spec":{"properties":{"syncPolicy":{"properties":{"automated":{"properties":{"prune":{"type":"boolean"}}}}}}}}}`
	preserving := `{"properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
	for s, want := range map[string]bool{with: true, without: false, preserving: false} {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		if got := hasEnabled(v); got != want {
			t.Errorf("hasEnabled(%s) = %v, want %v", s, got, want)
		}
	}
}
