package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on plan input. They keep one plan's row and its approval card small.
const (
	MaxPayloadBytes     = 256 << 10
	MaxOutputBytes      = 64 << 10
	MaxPlanResources    = 50
	MaxCommandBytes     = 64 << 10
	maxIDLength         = 256
	maxToolLength       = 128
	maxKindLength       = 63
	maxNamespaceLength  = 63
	maxNameLength       = 253
	maxGroupLength      = 253
	maxIdempotencyKey   = 255
	maxChangedFields    = 20
	maxChangeValueBytes = 4 << 10
	DefaultPlanPageSize = 50
	MaxPlanPageSize     = 200
)

// PlanInput is what a client sends to create a plan.
type PlanInput struct {
	ClusterID      string          `json:"cluster_id"`
	ConversationID string          `json:"conversation_id"`
	Visibility     Visibility      `json:"visibility"`
	Tool           string          `json:"tool"`
	Command        string          `json:"command"`
	Resources      []ResourceRef   `json:"resources"`
	Payload        json.RawMessage `json:"payload"`

	// server are payload keys only the server writes (a pause plan's
	// argocd_pause), set after a client's own are dropped.
	server map[string]any
}

// ResultInput is what the agent reports after running a plan.
type ResultInput struct {
	Outcome PlanStatus `json:"outcome"`
	Output  string     `json:"output"`
}

// checkText validates one string field: presence, length in bytes, and
// characters PostgreSQL text cannot hold.
func checkText(v *ValidationErrors, field, s string, required bool, max int) {
	switch {
	case required && strings.TrimSpace(s) == "":
		v.Add(field, "is required")
	case len(s) > max:
		v.Add(field, "must be at most %d bytes", max)
	case strings.ContainsRune(s, 0):
		v.Add(field, "must not contain the NUL character (\\u0000)")
	case !utf8.ValidString(s):
		v.Add(field, "must be valid UTF-8")
	}
}

// validate checks in and returns it with its payload normalised.
func (in PlanInput) validate() (PlanInput, error) {
	var v ValidationErrors
	checkText(&v, "cluster_id", in.ClusterID, true, maxIDLength)
	checkText(&v, "conversation_id", in.ConversationID, true, maxIDLength)
	checkText(&v, "tool", in.Tool, true, maxToolLength)
	checkText(&v, "command", in.Command, true, MaxCommandBytes)
	switch in.Visibility {
	case VisibilityPrivate, VisibilityShared:
	case "":
		v.Add("visibility", "is required: private or shared")
	default:
		v.Add("visibility", "must be private or shared")
	}
	validateResources(&v, in.Resources)
	if in.Resources == nil {
		in.Resources = []ResourceRef{}
	}
	in.Resources = compactChanges(in.Resources)
	if len(in.Payload) > MaxPayloadBytes {
		return in, Errorf(ETOOLARGE, "payload must be at most %d bytes", MaxPayloadBytes)
	}
	payload, err := NormalizePayload(in.Payload)
	if err != nil {
		var fe FieldError
		if errors.As(err, &fe) {
			v = append(v, fe)
		} else {
			v.Add("payload", "%v", err)
		}
	}
	in.Payload = payload
	return in, v.Err()
}

// validateResources checks a list of resource references (plans and
// ownership checks share it).
func validateResources(v *ValidationErrors, resources []ResourceRef) {
	if len(resources) > MaxPlanResources {
		v.Add("resources", "must hold at most %d resources", MaxPlanResources)
		return
	}
	for i, r := range resources {
		f := fmt.Sprintf("resources[%d].", i)
		checkText(v, f+"group", r.Group, false, maxGroupLength)
		checkText(v, f+"kind", r.Kind, true, maxKindLength)
		checkText(v, f+"namespace", r.Namespace, false, maxNamespaceLength)
		checkText(v, f+"name", r.Name, true, maxNameLength)
		if len(r.ChangedFields) > maxChangedFields {
			v.Add(f+"changed_fields", "must hold at most %d JSON pointers", maxChangedFields)
		}
		for j, p := range r.ChangedFields {
			checkPointer(v, fmt.Sprintf("%schanged_fields[%d]", f, j), p)
		}
		validateChanges(v, f, r.Changes)
	}
}

// checkPointer validates one JSON pointer of a changed field.
func checkPointer(v *ValidationErrors, field, p string) {
	checkText(v, field, p, true, 512)
	if p != "" && (!strings.HasPrefix(p, "/") || badPointerEscape(p)) {
		v.Add(field, "must be a JSON pointer such as /spec/replicas (RFC 6901)")
	}
}

// validateChanges checks a resource's planned values: at most
// maxChangedFields, each a pointer and a JSON value PostgreSQL's jsonb can
// hold, each field once.
func validateChanges(v *ValidationErrors, prefix string, changes []FieldChange) {
	if len(changes) > maxChangedFields {
		v.Add(prefix+"changes", "must hold at most %d planned values", maxChangedFields)
		return
	}
	seen := map[string]bool{}
	for j, c := range changes {
		f := fmt.Sprintf("%schanges[%d].", prefix, j)
		checkPointer(v, f+"field", c.Field)
		if seen[c.Field] {
			v.Add(f+"field", "names a field an earlier change names")
		}
		seen[c.Field] = true
		switch {
		case len(bytes.TrimSpace(c.Value)) == 0:
			v.Add(f+"value", "is required (any JSON value, null included)")
		case len(c.Value) > maxChangeValueBytes:
			v.Add(f+"value", "must be at most %d bytes of JSON", maxChangeValueBytes)
		case !json.Valid(c.Value) || bytes.Contains(c.Value, []byte(`\u0000`)):
			v.Add(f+"value", "must be JSON without the NUL character (\\u0000)")
		}
	}
}

// compactChanges returns resources with their planned values re-encoded
// compactly (numbers kept exactly), for storage and comparison.
func compactChanges(resources []ResourceRef) []ResourceRef {
	for i := range resources {
		for j, c := range resources[i].Changes {
			var b bytes.Buffer
			if json.Compact(&b, c.Value) == nil {
				resources[i].Changes[j].Value = b.Bytes()
			}
		}
	}
	return resources
}

// ValueMasker says whether the masker would mask a value at a field of an
// object of a kind (internal/mask holds the rule): such planned values are
// dropped at input, and such live and Git values never leave the server.
type ValueMasker interface {
	// MasksValue judges a planned value alone, at input.
	MasksValue(group, kind, pointer string, value json.RawMessage) bool
	// MaskedFields judges fields in their object (a live or Git object as
	// JSON), masked once with every planned value placed first: for each
	// pointer, whether anything at or under it was masked, and the values
	// masked anywhere in the object. Something it cannot judge counts as
	// masked.
	MaskedFields(object json.RawMessage, planned map[string]json.RawMessage, pointers []string) FieldMasking
}

// FieldMasking is the masker's judgement of fields in one object: which
// are masked, and the values it masked anywhere in the object — the
// request's redaction set: a value shown elsewhere that holds one of them
// is masked too.
type FieldMasking struct {
	Masked  map[string]bool
	Secrets []string
}

// Reveals reports whether a JSON value holds one of the masked values.
func (f FieldMasking) Reveals(v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	for _, s := range f.Secrets {
		if s != "" && bytes.Contains(v, []byte(s)) {
			return true
		}
		if quoted, err := json.Marshal(s); err == nil && bytes.Contains(v, quoted[1:len(quoted)-1]) {
			return true // as JSON escapes it
		}
	}
	return false
}

// DropMaskedChanges removes the planned values m would mask, keeping their
// fields as changed (changed_fields), so a secret is never stored or
// echoed. A nil m drops nothing.
func DropMaskedChanges(resources []ResourceRef, m ValueMasker) []ResourceRef {
	if m == nil {
		return resources
	}
	for i, r := range resources {
		kept := r.Changes[:0:0]
		for _, c := range r.Changes {
			if !m.MasksValue(r.Group, r.Kind, c.Field, c.Value) {
				kept = append(kept, c)
				continue
			}
			if !slices.Contains(r.ChangedFields, c.Field) {
				r.ChangedFields = append(slices.Clone(r.ChangedFields), c.Field)
			}
		}
		r.Changes = kept
		if len(kept) == 0 {
			r.Changes = nil
		}
		resources[i] = r
	}
	return resources
}

// badPointerEscape reports a "~" not followed by 0 or 1 (RFC 6901).
func badPointerEscape(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return true
		}
	}
	return false
}

func (fe FieldError) Error() string { return fe.Field + ": " + fe.Message }

// NormalizePayload checks that raw is a JSON object PostgreSQL's jsonb can
// hold (no \u0000 in any key or string) and re-encodes it compactly with
// numbers kept exactly. An absent payload becomes {}.
func NormalizePayload(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var value any
	if err := dec.Decode(&value); err != nil {
		return nil, FieldError{Field: "payload", Message: "must be valid JSON"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, FieldError{Field: "payload", Message: "must be a single JSON value"}
	}
	if _, ok := value.(map[string]any); !ok {
		return nil, FieldError{Field: "payload", Message: "must be a JSON object"}
	}
	if fe, bad := findUnstorable(value, "payload"); bad {
		return nil, fe
	}
	out, err := json.Marshal(value)
	if err != nil {
		return nil, FieldError{Field: "payload", Message: "cannot be stored"}
	}
	return out, nil
}

// findUnstorable returns the first key or value jsonb cannot hold: a
// string or key with U+0000, or a number outside PostgreSQL's numeric range.
func findUnstorable(v any, path string) (FieldError, bool) {
	switch t := v.(type) {
	case string:
		if strings.ContainsRune(t, 0) {
			return FieldError{Field: path, Message: "must not contain the NUL character (\\u0000)"}, true
		}
	case json.Number:
		if !numericFits(string(t)) {
			return FieldError{Field: path, Message: "is a number outside the range PostgreSQL can store"}, true
		}
	case map[string]any:
		for k, child := range t {
			if strings.ContainsRune(k, 0) {
				return FieldError{Field: path, Message: "must not have a key containing the NUL character (\\u0000)"}, true
			}
			if fe, bad := findUnstorable(child, path+"."+k); bad {
				return fe, true
			}
		}
	case []any:
		for i, child := range t {
			if fe, bad := findUnstorable(child, fmt.Sprintf("%s[%d]", path, i)); bad {
				return fe, true
			}
		}
	}
	return FieldError{}, false
}

// PostgreSQL numeric limits: digits before and after the decimal point.
const (
	numericMaxIntegerDigits  = 131072
	numericMaxFractionDigits = 16383
)

// numericFits reports whether a JSON number literal fits PostgreSQL's
// numeric type, which jsonb uses: at most 131072 digits before the decimal
// point and a scale (digits after it, as written) of at most 16383.
func numericFits(lit string) bool {
	mantissa, expPart, hasExp := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(expPart); err != nil || exp > 1<<30 || exp < -(1<<30) {
			return false
		}
	}
	intPart, fracPart, _ := strings.Cut(mantissa, ".")
	if scale := len(fracPart) - exp; scale > numericMaxFractionDigits {
		return false
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	if digits == "" {
		return true // zero
	}
	// The most significant digit stands at 10^msd.
	msd := len(intPart) + len(fracPart) - len(digits) // leading zeros of the digit string
	msd = len(intPart) - 1 - msd + exp
	return msd+1 <= numericMaxIntegerDigits
}

// validate checks a result report and caps its output.
func (in ResultInput) validate() (ResultInput, bool, error) {
	var v ValidationErrors
	if in.Outcome != PlanExecuted && in.Outcome != PlanFailed {
		v.Add("outcome", "must be executed or failed")
	}
	if strings.ContainsRune(in.Output, 0) {
		v.Add("output", "must not contain the NUL character (\\u0000)")
	}
	out, truncated := truncateUTF8(in.Output, MaxOutputBytes)
	in.Output = out
	return in, truncated, v.Err()
}

// truncateUTF8 cuts s to at most max bytes without splitting a character.
func truncateUTF8(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// ValidIdempotencyKey reports whether key is acceptable as an Idempotency-Key:
// 1 to 255 visible ASCII characters.
func ValidIdempotencyKey(key string) bool {
	if key == "" || len(key) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return false
		}
	}
	return true
}
