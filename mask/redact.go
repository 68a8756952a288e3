package mask

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
)

// Redactions are the secret values one masking run replaced by Marker (each
// at least minSecretLen bytes). A request that masks an app's inputs and
// outputs merges its Redactions and cuts them from every other text it
// returns or logs — render errors, notes, tool results — because a tool's
// message may quote a value (a values.schema.json pattern error, Helm's
// fail) that masking removed from the files themselves.
type Redactions []string

// add records v (trimmed) when it is long enough to cut safely.
func (r *Redactions) add(v string) {
	v = strings.TrimSpace(v)
	if len(v) >= minSecretLen && v != Marker && !strings.Contains(Marker, v) {
		*r = append(*r, v)
	}
}

// Merge returns r with the values of others, each once.
func (r Redactions) Merge(others ...Redactions) Redactions {
	out := slices.Clone(r)
	for _, o := range others {
		out = append(out, o...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Apply replaces every value of r in text by Marker, longest first, and also
// its base64 and JSON-escaped forms, so that a message quoting a masked
// value, whichever way it was encoded, does not carry it out.
func (r Redactions) Apply(text string) string {
	if len(r) == 0 || text == "" {
		return text
	}
	seen := map[string]bool{}
	var forms []string
	addForm := func(f string) {
		if len(f) >= minSecretLen && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, v := range r {
		if len(v) < minSecretLen {
			continue
		}
		addForm(v)
		addForm(base64.StdEncoding.EncodeToString([]byte(v)))
		addForm(base64.RawStdEncoding.EncodeToString([]byte(v)))
		if b, err := json.Marshal(v); err == nil {
			addForm(string(b[1 : len(b)-1]))
		}
	}
	// Every occurrence of every form is cut; overlapping or adjacent
	// occurrences become one Marker, so no part of either survives.
	type span struct{ start, end int }
	var spans []span
	for _, f := range forms {
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], f)
			if i < 0 {
				break
			}
			spans = append(spans, span{from + i, from + i + len(f)})
			from += i + 1
		}
	}
	if len(spans) == 0 {
		return text
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); {
		s, end := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start <= end; i++ {
			end = max(end, spans[i].end)
		}
		b.WriteString(text[last:s])
		b.WriteString(Marker)
		last = end
	}
	b.WriteString(text[last:])
	return b.String()
}
