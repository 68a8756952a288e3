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

// TestMasksField checks fields judged in their object: an env entry's
// value is masked when its name says password, not otherwise; a planned
// value placed in the object is judged the same way.
func TestMasksField(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	obj := json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
		"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27",
		"env":[{"name":"MODE","value":"fast"},{"name":"DB_PASSWORD","value":"hunter2-long-value"}]}]}}}}`)
	for _, c := range []struct {
		name, pointer string
		value         json.RawMessage
		want          bool
	}{
		{"Replicas", "/spec/replicas", nil, false},
		{"PlannedReplicas", "/spec/replicas", json.RawMessage(`3`), false},
		{"PlainEnv", "/spec/template/spec/containers/0/env/0/value", nil, false},
		{"PasswordEnv", "/spec/template/spec/containers/0/env/1/value", nil, true},
		{"PlannedPasswordEnv", "/spec/template/spec/containers/0/env/1/value", json.RawMessage(`"new-secret-value"`), true},
		{"MissingField", "/spec/paused", nil, false},
		{"IndexOutsideList", "/spec/template/spec/containers/3/image", json.RawMessage(`"x"`), true},
		{"ContainerWholeHoldsPassword", "/spec/template/spec/containers/0", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := m.MasksField(obj, c.pointer, c.value); got != c.want {
				t.Errorf("MasksField(%s, %s) = %v, want %v", c.pointer, c.value, got, c.want)
			}
		})
	}
}
