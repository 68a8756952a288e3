package argocd

import (
	"testing"

	"github.com/kukie/gitops-server/service"
)

func TestSplitPointer(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []string
		ok   bool
	}{
		"Root":          {"", nil, true},
		"Plain":         {"/spec/replicas", []string{"spec", "replicas"}, true},
		"Escapes":       {"/metadata/annotations/a~1b~0c", []string{"metadata", "annotations", "a/b~c"}, true},
		"TildeOneZero":  {"/x/~01", []string{"x", "~1"}, true},
		"EmptyToken":    {"/", []string{""}, true},
		"NoSlash":       {"spec", nil, false},
		"BadEscape":     {"/a~2", nil, false},
		"TrailingTilde": {"/a~", nil, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := splitPointer(c.in)
			if ok != c.ok || len(got) != len(c.want) {
				t.Fatalf("splitPointer(%q) = %q, %v", c.in, got, ok)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("splitPointer(%q) = %q", c.in, got)
				}
			}
		})
	}
}

const lastApplied = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web","a/b":"x"}},
	"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"web:1"}]}},"paused":null}}`

// ssaFields is what argocd-controller owns after a server-side apply of a
// Deployment that sets labels, the container image and no replicas.
const ssaFields = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},
	"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}},"f:args":{}}}`

func TestGitFieldsSets(t *testing.T) {
	cases := map[string]struct {
		pointer     string
		lastApplied bool // set in last-applied-configuration
		ssa         bool // owned by argocd-controller's apply
	}{
		"Replicas":                {"/spec/replicas", true, false},
		"NewLabel":                {"/metadata/labels/team", false, false},
		"ExistingLabel":           {"/metadata/labels/app", true, true},
		"EscapedLabel":            {"/metadata/labels/a~1b", true, false},
		"ParentOfSetField":        {"/spec/template", true, true},
		"Root":                    {"", true, true},
		"ThroughList":             {"/spec/template/spec/containers/0/image", true, true},
		"ThroughListNewField":     {"/spec/template/spec/containers/0/resources", true, true},
		"BelowScalar":             {"/spec/replicas/x", true, false},
		"BelowNull":               {"/spec/paused/x", true, false},
		"BelowLeaf":               {"/spec/args/0", false, true},
		"Annotation":              {"/metadata/annotations/x", false, false},
		"InvalidPointerCountsSet": {"spec/replicas", true, true},
		"StatusNotSet":            {"/status/replicas", false, false},
	}
	la, ok := readGitFields(lastApplied, nil)
	if !ok {
		t.Fatal("last-applied not read")
	}
	ssa, ok := readGitFields(lastApplied, []service.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: "Update", FieldsV1: []byte(`{"f:spec":{"f:replicas":{}}}`)},
		{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(ssaFields)}})
	if !ok || ssa.owned == nil {
		t.Fatal("server-side apply fields not preferred")
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := la.sets(c.pointer); got != c.lastApplied {
				t.Errorf("last-applied sets(%q) = %v, want %v", c.pointer, got, c.lastApplied)
			}
			if got := ssa.sets(c.pointer); got != c.ssa {
				t.Errorf("fieldsV1 sets(%q) = %v, want %v", c.pointer, got, c.ssa)
			}
		})
	}
}

func TestReadGitFields(t *testing.T) {
	cases := map[string]struct {
		lastApplied string
		managed     []service.ManagedFieldsEntry
		ok, ssa     bool
	}{
		"Neither":               {"", nil, false, false},
		"LastApplied":           {`{"a":1}`, nil, true, false},
		"LastAppliedBroken":     {`{"a":`, nil, false, false},
		"ClientSideUpdateOnly":  {"", []service.ManagedFieldsEntry{{Manager: FieldManager, Operation: "Update", FieldsV1: []byte(`{}`)}}, false, false},
		"OtherManagersApply":    {"", []service.ManagedFieldsEntry{{Manager: "kubectl", Operation: "Apply", FieldsV1: []byte(`{}`)}}, false, false},
		"ServerSideApply":       {"", []service.ManagedFieldsEntry{{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(`{"f:a":{}}`)}}, true, true},
		"ServerSideApplyBroken": {`{"a":1}`, []service.ManagedFieldsEntry{{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(`[`)}}, false, false},
		"ServerSideApplyNull":   {"", []service.ManagedFieldsEntry{{Manager: FieldManager, Operation: "Apply"}}, false, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g, ok := readGitFields(c.lastApplied, c.managed)
			if ok != c.ok || (g.owned != nil) != c.ssa {
				t.Errorf("readGitFields = %+v, %v", g, ok)
			}
		})
	}
}

// FuzzGitFields: no record or pointer panics; the root is always set, and
// a pointer that is set stays set for its parents.
func FuzzGitFields(f *testing.F) {
	f.Add(lastApplied, "", "/spec/replicas")
	f.Add("", ssaFields, "/spec/template/spec/containers/0/image")
	f.Add(`[1]`, `{"f:a":{"k:{}":{}}}`, "/a/~1")
	f.Add(`null`, `{"f:a":1}`, "/a/b")
	f.Fuzz(func(t *testing.T, lastApplied, fields, pointer string) {
		if len(lastApplied)+len(fields)+len(pointer) > maxFuzzInput {
			return
		}
		var managed []service.ManagedFieldsEntry
		if fields != "" {
			managed = []service.ManagedFieldsEntry{{Manager: FieldManager, Operation: "Apply", FieldsV1: []byte(fields)}}
		}
		g, ok := readGitFields(lastApplied, managed)
		if !ok {
			return
		}
		if !g.sets("") {
			t.Fatal("root not set")
		}
		if tokens, valid := splitPointer(pointer); valid && len(tokens) > 0 && g.sets(pointer) {
			parent := pointer[:len(pointer)-len(escapeToken(tokens[len(tokens)-1]))-1]
			if !g.sets(parent) {
				t.Fatalf("%q set but its parent %q is not", pointer, parent)
			}
		}
	})
}

func escapeToken(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}
