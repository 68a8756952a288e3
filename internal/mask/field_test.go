package mask

import (
	"encoding/json"
	"testing"
)

// TestMasksValue checks planned values against the masker's own rule: a
// Secret's data and stringData, keys named like secrets, values shaped like
// tokens are masked; replicas, images and labels are not.
func TestMasksValue(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, group, kind, pointer, value string
		want                              bool
	}{
		{"Replicas", "apps", "Deployment", "/spec/replicas", `3`, false},
		{"Image", "apps", "Deployment", "/spec/template/spec/containers/0/image", `"nginx:1.28"`, false},
		{"Label", "apps", "Deployment", "/metadata/labels/tier", `"web"`, false},
		{"SecretData", "", "Secret", "/data/password", `"aHVudGVyMg=="`, true},
		{"SecretStringData", "", "Secret", "/stringData/anything", `"plain"`, true},
		{"PasswordKey", "", "ConfigMap", "/data/db_password", `"hunter2-long-enough"`, true},
		{"TokenShapedValue", "", "ConfigMap", "/data/note", `"ghp_0123456789abcdefghijABCDEFGHIJ012345"`, true},
		{"EscapedPointer", "", "ConfigMap", "/metadata/annotations/example.com~1tier", `"web"`, false},
		{"NotJSON", "apps", "Deployment", "/spec/replicas", `{`, true},
		{"NotAPointer", "apps", "Deployment", "spec/replicas", `3`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := m.MasksValue(c.group, c.kind, c.pointer, json.RawMessage(c.value)); got != c.want {
				t.Errorf("MasksValue(%s %s %s) = %v, want %v", c.kind, c.pointer, c.value, got, c.want)
			}
		})
	}
}
