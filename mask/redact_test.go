package mask_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/mask"
)

func TestRedactionsApply(t *testing.T) {
	r := mask.Redactions{"hunter2-value", "short", "abc\"def\\ghi", "hunter2-value-longer"}.Merge(mask.Redactions{"hunter2-value"})
	tests := []struct{ name, in, want string }{
		{"Plain", "error: hunter2-value is wrong", "error: <masked> is wrong"},
		{"LongestWhole", "got hunter2-value-longer", "got <masked>"},
		{"Base64", "decoded " + base64.StdEncoding.EncodeToString([]byte("hunter2-value")) + " x", "decoded <masked> x"},
		{"JSONEscaped", `{"v":"abc\"def\\ghi"}`, `{"v":"<masked>"}`},
		{"TooShortToCut", "short stays", "short stays"},
		{"Overlapping", "xhunter2-valuehunter2-value-longer", "x<masked>"},
		{"Nothing", "nothing here", "nothing here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Apply(tt.in); got != tt.want {
				t.Errorf("Apply(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestResultRedactions: what a masking run replaces is in its Redactions,
// so a request can cut it from its other texts.
func TestResultRedactions(t *testing.T) {
	m := MustNew(t)
	in := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  a: " + base64.StdEncoding.EncodeToString([]byte("decoded-secret-1")) +
		"\nstringData:\n  b: StringDataVal-1\n---\nkind: ConfigMap\ndata:\n  password: CmPassword-1\n  url: postgres://u:UrlPassword-1@h/db\n  note: '{{ $labels.x }}'\n"
	r := m.Manifests([]byte(in))
	for _, want := range []string{"decoded-secret-1", "StringDataVal-1", "CmPassword-1", "UrlPassword-1"} {
		if !strings.Contains(r.Redactions.Apply("x "+want+" y"), mask.Marker) {
			t.Errorf("%q not in Redactions %q", want, r.Redactions)
		}
	}
	for _, v := range r.Redactions {
		if len(v) < 6 || strings.Contains(v, mask.Marker) {
			t.Errorf("Redactions holds %q", v)
		}
	}
	tpl := m.File("templates/s.yaml", []byte("kind: Secret\nstringData:\n  a: TplFoldHead-1\n    TplFoldTail-1\n  b: {{ .Values.b }}\n"))
	for _, want := range []string{"TplFoldHead-1", "TplFoldTail-1", "TplFoldHead-1 TplFoldTail-1"} {
		if tpl.Redactions.Apply(want) != mask.Marker {
			t.Errorf("%q not in template Redactions %q", want, tpl.Redactions)
		}
	}
}
