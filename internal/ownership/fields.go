package ownership

import (
	"encoding/json"
	"slices"

	"github.com/kukie/gitops-server/service"
)

// secretValues are the fields of a core Secret whose values never leave
// the server, whatever the masker says (the kube adapter does not even
// keep them).
var secretValues = []string{"data", "stringData"}

// fieldPreviews lists each changed field of a managed object with the value
// in the cluster now and the planned one (issue 22). A field the masker
// masks in its object — its live value, or the planned value put in its
// place — and a Secret's data carry Masked instead of values; without a
// masker every field does.
func fieldPreviews(m service.ValueMasker, ref service.ResourceRef, i service.ObjectInfo) []service.FieldPreview {
	changed := ref.Changed()
	if len(changed) == 0 {
		return nil
	}
	planned := map[string]json.RawMessage{}
	for _, c := range ref.Changes {
		planned[c.Field] = c.Value
	}
	obj, err := json.Marshal(i.Object)
	if i.Object == nil || err != nil {
		obj = nil
	}
	out := make([]service.FieldPreview, 0, len(changed))
	for _, f := range changed {
		p := service.FieldPreview{Field: f}
		tokens, ok := service.SplitPointer(f)
		p.Masked = !ok || m == nil || obj == nil || secretValue(i, tokens) || m.MasksField(obj, f, nil) ||
			(planned[f] != nil && m.MasksField(obj, f, planned[f]))
		if !p.Masked {
			if v, found := service.LookupPointer(i.Object, tokens); found {
				p.Live, _ = json.Marshal(v)
			}
			p.Planned = planned[f]
		}
		out = append(out, p)
	}
	return out
}

// secretValue reports a pointer into a core Secret's data or stringData
// (or the whole object).
func secretValue(i service.ObjectInfo, tokens []string) bool {
	if i.Group != "" || i.Kind != "Secret" {
		return false
	}
	return len(tokens) == 0 || slices.Contains(secretValues, tokens[0])
}
