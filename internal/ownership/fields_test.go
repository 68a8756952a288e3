package ownership

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/service"
)

// maskPasswords masks fields whose pointer names a password.
type maskPasswords struct{}

func (maskPasswords) MasksValue(_, _, pointer string, _ json.RawMessage) bool {
	return strings.Contains(pointer, "password")
}

func (maskPasswords) MaskedFields(_ json.RawMessage, _ map[string]json.RawMessage, pointers []string) service.FieldMasking {
	out := map[string]bool{}
	for _, p := range pointers {
		out[p] = strings.Contains(p, "password")
	}
	return service.FieldMasking{Masked: out, Secrets: []string{"hunter2-secret-value"}}
}

// TestFieldPreviews checks what a field shows: a Secret's data is masked
// whatever the masker says, a field the masker masks shows no values,
// others show live and planned; without a masker nothing is shown.
func TestFieldPreviews(t *testing.T) {
	secret := service.ObjectInfo{Kind: "Secret", Name: "db", Object: map[string]any{"kind": "Secret", "type": "Opaque"}}
	cm := service.ObjectInfo{Kind: "ConfigMap", Name: "cfg",
		Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{"mode": "fast", "db_password": "x"}}}
	ref := service.ResourceRef{ChangedFields: []string{"/data/password", "/type"}}
	got, _ := fieldPreviews(maskPasswords{}, ref, secret)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/password","masked":true},{"field":"/type","live":"Opaque"}]` {
		t.Errorf("secret: %s", b)
	}
	ref = service.ResourceRef{Changes: []service.FieldChange{{Field: "/data/mode", Value: json.RawMessage(`"slow"`)},
		{Field: "/data/db_password", Value: json.RawMessage(`"y"`)}}}
	got, _ = fieldPreviews(maskPasswords{}, ref, cm)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/mode","live":"fast","planned":"slow"},{"field":"/data/db_password","masked":true}]` {
		t.Errorf("configmap: %s", b)
	}
	got, _ = fieldPreviews(nil, ref, cm)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/mode","masked":true},{"field":"/data/db_password","masked":true}]` {
		t.Errorf("without a masker: %s", b)
	}
	if got, _ := fieldPreviews(maskPasswords{}, service.ResourceRef{}, cm); got != nil {
		t.Error("fields without any changed field")
	}
}

// TestWarningNamesTheValue checks the self_heal warning: it names the first
// reverted field and its Git value, and counts the others; fields Git
// does not set, masked ones and ones planned at Git's value are not
// reverted.
func TestWarningNamesTheValue(t *testing.T) {
	set := func(v string) *service.GitValue {
		return &service.GitValue{State: service.GitSet, Value: json.RawMessage(v)}
	}
	r := managed{OwnershipResource: service.OwnershipResource{Kind: "Deployment", Name: "web", Level: service.LevelSelfHeal,
		LevelCause: service.CausePolicy, Fields: []service.FieldPreview{
			{Field: "/spec/paused", Git: &service.GitValue{State: service.GitUnset}},
			{Field: "/spec/replicas", Planned: json.RawMessage(`3`), Git: set(`1`)},
			{Field: "/spec/template/spec/containers/0/image", Planned: json.RawMessage(`"nginx:1.27"`), Git: set(`"nginx:1.27"`)},
			{Field: "/data/password", Masked: true, Git: &service.GitValue{State: service.GitSet}},
			{Field: "/metadata/labels/tier", Git: set(`"web"`)},
		}}}
	w := warning([]managed{r}, time.Now(), "en")
	if want := "Argo CD will soon set replicas back to 1, and 1 more field. To keep it, pause sync or open a PR with the same change."; w.Warning != want {
		t.Errorf("warning %q, want %q", w.Warning, want)
	}
	r.Fields = r.Fields[:1]
	if w := warning([]managed{r}, time.Now(), "ko"); w.Warning != "곧 ArgoCD가 되돌려요. 유지하려면 sync를 멈추거나 PR을 같이 올리세요." {
		t.Errorf("without a known value: %q", w.Warning)
	}
}

// TestFieldPreviewsRedact checks the object's redaction set: a value that
// holds one the masker masked elsewhere in the object is masked too, the
// Git value included.
func TestFieldPreviewsRedact(t *testing.T) {
	cm := service.ObjectInfo{Kind: "ConfigMap", Name: "cfg",
		Object: map[string]any{"data": map[string]any{"note": "copy of hunter2-secret-value", "mode": "fast"}}}
	got, judged := fieldPreviews(maskPasswords{}, service.ResourceRef{ChangedFields: []string{"/data/note", "/data/mode"}}, cm)
	if b, _ := json.Marshal(got); string(b) != `[{"field":"/data/note","masked":true},{"field":"/data/mode","live":"fast"}]` {
		t.Errorf("fields %s", b)
	}
	got[1].Git = &service.GitValue{State: service.GitSet, Value: json.RawMessage(`"hunter2-secret-value"`)}
	maskRevealing(got, judged)
	if !got[1].Masked || got[1].Live != nil || got[1].Git.Value != nil {
		t.Errorf("a Git value holding a masked value: %+v", got[1])
	}
}

// TestGitDisagreesNote checks the note when not_in_git and the Git trace
// disagree, and its absence when they agree.
func TestGitDisagreesNote(t *testing.T) {
	r := service.OwnershipResource{Kind: "Deployment", Name: "web", LevelCause: service.CauseNotInGit,
		Fields: []service.FieldPreview{{Field: "/spec/replicas", Git: &service.GitValue{State: service.GitSet,
			Source: &service.GitSource{Path: "apps/web/deploy.yaml", Line: 7}}}}}
	if n := gitDisagrees("en", r); !strings.Contains(n, "/spec/replicas") || !strings.Contains(n, "apps/web/deploy.yaml:7") {
		t.Errorf("note %q", n)
	}
	r.Fields[0].Git.State = service.GitUnset
	if n := gitDisagrees("ko", r); n != "" {
		t.Errorf("they agree, but the note says %q", n)
	}
	r.Fields[0].Git.State, r.LevelCause = service.GitSet, service.CausePolicy
	if n := gitDisagrees("en", r); n != "" {
		t.Errorf("not not_in_git, but the note says %q", n)
	}
}

// The request's redaction set: a value masked in one object masks the
// field of another resource that shows it, and what its values key must
// hold goes with the planned value.
func TestRedactAcrossResources(t *testing.T) {
	secretHolder := managed{judged: []service.FieldMasking{{Masked: map[string]bool{}, Secrets: []string{"s3cr3t-token-value"}}}}
	shows := managed{OwnershipResource: service.OwnershipResource{Fields: []service.FieldPreview{
		{Field: "/spec/template/spec/containers/0/env/0/value", Live: json.RawMessage(`"s3cr3t-token-value"`),
			Planned: json.RawMessage(`"other"`), Git: &service.GitValue{State: service.GitSet, Value: json.RawMessage(`"x"`),
				Source: &service.GitSource{Via: "helm_values", Key: "env.0.value", KeyPlanned: json.RawMessage(`"other"`)}}},
		{Field: "/spec/replicas", Live: json.RawMessage(`1`), Planned: json.RawMessage(`2`)},
	}}}
	found := []managed{secretHolder, shows}
	redactAcross(found)
	f := found[1].Fields
	if !f[0].Masked || f[0].Live != nil || f[0].Planned != nil || f[0].Git.Value != nil || f[0].Git.Source.KeyPlanned != nil {
		t.Errorf("the field showing another object's secret: %+v %+v", f[0], f[0].Git.Source)
	}
	if f[1].Masked || string(f[1].Live) != "1" {
		t.Errorf("an unrelated field was masked: %+v", f[1])
	}
}
