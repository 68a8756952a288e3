package ownership

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/service"
)

// maskPasswords masks fields whose pointer names a password.
type maskPasswords struct{}

func (maskPasswords) MasksValue(_, _, pointer string, _ json.RawMessage) bool {
	return strings.Contains(pointer, "password")
}

func (maskPasswords) MasksField(_ json.RawMessage, pointer string, _ json.RawMessage) bool {
	return strings.Contains(pointer, "password")
}

// TestFieldPreviews checks what a field shows: a Secret's data is masked
// whatever the masker says, a field the masker masks shows no values,
// others show live and planned; without a masker nothing is shown.
func TestFieldPreviews(t *testing.T) {
	secret := service.ObjectInfo{Kind: "Secret", Name: "db", Object: map[string]any{"kind": "Secret", "type": "Opaque"}}
	cm := service.ObjectInfo{Kind: "ConfigMap", Name: "cfg",
		Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"mode": "fast", "db_password": "x"}}}
	ref := service.ResourceRef{ChangedFields: []string{"/data/password", "/type"}}
	got := fieldPreviews(maskPasswords{}, ref, secret)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/password","masked":true},{"field":"/type","live":"Opaque"}]` {
		t.Errorf("secret: %s", b)
	}
	ref = service.ResourceRef{Changes: []service.FieldChange{{Field: "/data/mode", Value: json.RawMessage(`"slow"`)},
		{Field: "/data/db_password", Value: json.RawMessage(`"y"`)}}}
	got = fieldPreviews(maskPasswords{}, ref, cm)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/mode","live":"fast","planned":"slow"},{"field":"/data/db_password","masked":true}]` {
		t.Errorf("configmap: %s", b)
	}
	got = fieldPreviews(nil, ref, cm)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/mode","masked":true},{"field":"/data/db_password","masked":true}]` {
		t.Errorf("without a masker: %s", b)
	}
	if fieldPreviews(maskPasswords{}, service.ResourceRef{}, cm) != nil {
		t.Error("fields without any changed field")
	}
}
