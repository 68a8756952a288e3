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

// TestMaskedFields checks fields judged in their object: an env entry's
// value is masked when its name says password, not otherwise; planned
// values are judged together (a planned name of DB_PASSWORD masks the
// planned value beside it).
func TestMaskedFields(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	obj := json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
		"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27",
		"env":[{"name":"MODE","value":"fast"},{"name":"DB_PASSWORD","value":"hunter2-long-value"}]}]}}}}`)
	const (
		replicas = "/spec/replicas"
		plainEnv = "/spec/template/spec/containers/0/env/0/value"
		pwEnv    = "/spec/template/spec/containers/0/env/1/value"
		paused   = "/spec/paused"
		whole    = "/spec/template/spec/containers/0"
		outside  = "/spec/template/spec/containers/3/image"
	)
	judged := m.MaskedFields(obj, nil, []string{replicas, plainEnv, pwEnv, paused, whole})
	got := judged.Masked
	if !judged.Reveals(json.RawMessage(`"copy: hunter2-long-value"`)) {
		t.Errorf("the masked value is not in the redaction set: %q", judged.Secrets)
	}
	want := map[string]bool{replicas: false, plainEnv: false, pwEnv: true, paused: false, whole: true}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("live %s: masked %v, want %v", p, got[p], w)
		}
	}
	planned := map[string]json.RawMessage{
		replicas: json.RawMessage(`3`),
		"/spec/template/spec/containers/0/env/0/name": json.RawMessage(`"DB_PASSWORD"`),
		plainEnv: json.RawMessage(`"now-a-secret-value"`),
		outside:  json.RawMessage(`"x"`),
	}
	got = m.MaskedFields(obj, planned, []string{replicas, plainEnv, outside}).Masked
	if got[replicas] || !got[plainEnv] || !got[outside] {
		t.Errorf("planned together: %v; want replicas shown, the value named like a password masked, an unplaceable index masked", got)
	}
	if !m.MasksValue("", "secrets", "/data/x", json.RawMessage(`"v"`)) {
		t.Error("a Secret spelled secrets is not judged as a Secret")
	}
}
