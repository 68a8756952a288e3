package ownership

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kukie/gitops-server/service"
)

// secretValues are the fields of a core Secret whose values never leave
// the server, whatever the masker says (the kube adapter does not even
// keep them).
var secretValues = []string{"data", "stringData"}

// fieldPreviews lists each changed field of a managed object with the value
// in the cluster now and the planned one (issue 22). The masker masks the
// live object once, and once more with every planned value in place: a
// field it masks in either — and a Secret's data — carries Masked instead
// of values; without a masker every field does.
func fieldPreviews(m service.ValueMasker, ref service.ResourceRef, i service.ObjectInfo) ([]service.FieldPreview, []service.FieldMasking) {
	changed := ref.Changed()
	if len(changed) == 0 {
		return nil, nil
	}
	planned := map[string]json.RawMessage{}
	for _, c := range ref.Changes {
		planned[c.Field] = c.Value
	}
	obj, err := json.Marshal(i.Object)
	if i.Object == nil || err != nil {
		obj = nil
	}
	var live, withPlanned service.FieldMasking
	if m != nil && obj != nil {
		live = m.MaskedFields(obj, nil, changed)
		if len(planned) > 0 {
			withPlanned = m.MaskedFields(obj, planned, changed)
		}
	}
	out := make([]service.FieldPreview, 0, len(changed))
	for _, f := range changed {
		p := service.FieldPreview{Field: f}
		tokens, ok := service.SplitPointer(f)
		p.Masked = !ok || live.Masked == nil || secretValue(i, tokens) || live.Masked[f] || withPlanned.Masked[f]
		if !p.Masked {
			if v, found := service.LookupPointer(i.Object, tokens); found {
				p.Live, _ = json.Marshal(v)
			}
			p.Planned = planned[f]
		}
		// The object's redaction set: a value holding one masked elsewhere
		// in it is masked too.
		if revealing(p, live, withPlanned) {
			p.Masked, p.Live, p.Planned = true, nil, nil
		}
		out = append(out, p)
	}
	return out, []service.FieldMasking{live, withPlanned}
}

// maskRevealing masks the fields whose values (Git's included) hold a
// value the judgements masked: the object's redaction set applies to what
// Git says too. What the values key must hold (key_planned) is the
// planned value's: it goes with it.
func maskRevealing(fields []service.FieldPreview, judged []service.FieldMasking) {
	for i, f := range fields {
		if !f.Masked && revealing(f, judged...) {
			fields[i].Masked, fields[i].Live, fields[i].Planned = true, nil, nil
		}
		if fields[i].Masked && f.Git != nil {
			g := *f.Git
			g.Value = nil
			if g.Source != nil && g.Source.KeyPlanned != nil {
				src := *g.Source
				src.KeyPlanned = nil
				g.Source = &src
			}
			fields[i].Git = &g
		}
	}
}

// redactAcross applies the request's redaction set: a value masked in any
// object of the request masks every field, of every resource, that shows
// it (a Secret's value copied into another object's env, say).
func redactAcross(found []managed) {
	var all []service.FieldMasking
	for _, m := range found {
		all = append(all, m.judged...)
	}
	for i := range found {
		maskRevealing(found[i].Fields, all)
	}
}

// secretValue reports a pointer into a core Secret's data or stringData
// (or the whole object).
func secretValue(i service.ObjectInfo, tokens []string) bool {
	if i.Group != "" || i.Kind != "Secret" {
		return false
	}
	return len(tokens) == 0 || slices.Contains(secretValues, tokens[0])
}

// earlierCauses come before matches_git in the precedence order: when one
// of them decided the level, it stands.
var earlierCauses = []string{service.CauseSkipReconcile, service.CauseIgnoreDifferences, service.CauseNotInGit}

// matchesGit makes the resource not_reverted (cause matches_git) when
// every changed field's planned value is what Git sets: the change is not
// drift, so nothing is put back. Never for apply_manifest or
// delete_resource, as for not_in_git.
func (m *managed) matchesGit(ref service.ResourceRef) {
	if !service.GitNarrowingAllowed(ref.Tool) || slices.Contains(earlierCauses, m.LevelCause) || m.Level == service.LevelNotReverted {
		return
	}
	for _, f := range m.Fields {
		if f.Masked || f.Planned == nil || f.Git == nil || f.Git.State != service.GitSet || !sameJSON(f.Planned, f.Git.Value) {
			return
		}
	}
	m.Level, m.LevelCause = service.LevelNotReverted, service.CauseMatchesGit
	m.Reason += "; every planned value is what Git already sets, so Argo CD has nothing to put back"
}

// sameJSON compares two JSON values as values (1 and 1.0 alike).
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// revealing reports a field whose shown values hold a value one of the
// judgements masked.
func revealing(p service.FieldPreview, judged ...service.FieldMasking) bool {
	for _, j := range judged {
		if j.Reveals(p.Live) || j.Reveals(p.Planned) || (p.Git != nil && j.Reveals(p.Git.Value)) {
			return true
		}
	}
	return false
}

// gitDisagrees is the note for a resource found not_in_git (by its
// last-applied configuration or managed fields) whose Git trace says Git
// sets a changed field: the level stands, by its own rule, and the note
// says where Git sets it. "" when they agree.
func gitDisagrees(lang string, r service.OwnershipResource) string {
	if r.LevelCause != service.CauseNotInGit {
		return ""
	}
	for _, f := range r.Fields {
		if f.Git == nil || f.Git.State != service.GitSet || f.Git.Source == nil {
			continue
		}
		at := fmt.Sprintf("%s:%d", f.Git.Source.Path, f.Git.Source.Line)
		obj := strings.ToLower(r.Kind) + "/" + r.Name
		if lang == "en" {
			return fmt.Sprintf("%s: the object's last applied configuration does not set %s, but the app's manifests in Git do (%s); Argo CD may revert it", obj, f.Field, at)
		}
		return fmt.Sprintf("%s: 마지막 적용 설정에는 %s 가 없지만 Git의 매니페스트에는 있어요 (%s). ArgoCD가 되돌릴 수도 있어요", obj, f.Field, at)
	}
	return ""
}
