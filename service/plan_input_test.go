package service

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kukie/gitops-server/internal/testkit/pgnumeric"
)

func TestNormalizePayload(t *testing.T) {
	cases := []struct {
		name, in, want, errField string
	}{
		{"Absent", ``, `{}`, ""},
		{"Null", `null`, `{}`, ""},
		{"KeepsBigNumbers", `{"n": 123456789012345678901234567890, "f": 1.50}`, `{"f":1.50,"n":123456789012345678901234567890}`, ""},
		{"Nested", `{"a": [1, {"b": "c"}]}`, `{"a":[1,{"b":"c"}]}`, ""},
		{"ErrArray", `[1]`, "", "payload"},
		{"ErrString", `"x"`, "", "payload"},
		{"ErrNULString", `{"a": ["ok", "x\u0000"]}`, "", "payload.a[1]"},
		{"ErrNULKey", `{"a\u0000": 1}`, "", "payload"},
		{"EscapedBackslashIsFine", `{"a": "\\u0000"}`, `{"a":"\\u0000"}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NormalizePayload(json.RawMessage(c.in))
			if c.errField != "" {
				fe, ok := err.(FieldError)
				if !ok || fe.Field != c.errField {
					t.Fatalf("err = %v, want a FieldError on %s", err, c.errField)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("got %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

// FuzzNormalizePayload: whatever the input, the result is either an error
// or a JSON object without NUL that normalises to itself.
func FuzzNormalizePayload(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"\u0000"}`, `{"a":[1,2,{"b":null}]}`, `[`, `{"x":1e400}`, "{\"\xff\":1}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > maxFuzzInput {
			return
		}
		out, err := NormalizePayload(json.RawMessage(in))
		if err != nil {
			return
		}
		if !json.Valid(out) || out[0] != '{' || !utf8.Valid(out) || strings.Contains(string(out), `\u0000`) {
			t.Fatalf("NormalizePayload(%q) = %q", in, out)
		}
		again, err := NormalizePayload(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
	})
}

func TestTruncateUTF8(t *testing.T) {
	s := strings.Repeat("é", 10) // 2 bytes each
	got, cut := truncateUTF8(s, 5)
	if !cut || got != "éé" {
		t.Errorf("truncateUTF8 = %q, %v", got, cut)
	}
	if got, cut := truncateUTF8("abc", 5); cut || got != "abc" {
		t.Errorf("short string changed: %q %v", got, cut)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := PlanCursor{ID: "0190a000-0000-7000-8000-000000000000"}
	c.CreatedAt = c.CreatedAt.AddDate(2026, 0, 0)
	back, err := decodeCursor(encodeCursor(c))
	if err != nil || back != c {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	for _, bad := range []string{"%%%", "e30", encodeCursor(PlanCursor{ID: "x"})} {
		if _, err := decodeCursor(bad); err == nil {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	for key, want := range map[string]bool{"abc-123": true, "": false, "a b": false, strings.Repeat("k", 256): false, "ключ": false} {
		if got := ValidIdempotencyKey(key); got != want {
			t.Errorf("ValidIdempotencyKey(%q) = %v", key, got)
		}
	}
}

func TestNumericFits(t *testing.T) {
	// Boundaries of PostgreSQL's numeric; store tests check them against the real server.
	for lit, want := range pgnumeric.LimitCases() {
		if got := numericFits(lit); got != want {
			t.Errorf("numericFits(%s) = %v, want %v", lit, got, want)
		}
	}
}

// maskKeys masks planned values of fields under /data (a stand-in for the
// masker's rule, which internal/mask tests).
type maskKeys struct{}

func (maskKeys) MasksValue(_, _, pointer string, _ json.RawMessage) bool {
	return strings.HasPrefix(pointer, "/data/")
}

func (maskKeys) MaskedFields(_ json.RawMessage, _ map[string]json.RawMessage, pointers []string) FieldMasking {
	out := map[string]bool{}
	for _, p := range pointers {
		out[p] = strings.HasPrefix(p, "/data/")
	}
	return FieldMasking{Masked: out}
}

// TestDropMaskedChanges checks that a masked planned value is dropped and
// its field kept as changed (once), and that Changed joins both lists.
func TestDropMaskedChanges(t *testing.T) {
	in := []ResourceRef{{Kind: "Secret", Name: "db", ChangedFields: []string{"/data/a"},
		Changes: []FieldChange{{Field: "/data/a", Value: json.RawMessage(`"x"`)}, {Field: "/data/b", Value: json.RawMessage(`"y"`)},
			{Field: "/metadata/labels/l", Value: json.RawMessage(`"v"`)}}}}
	out := DropMaskedChanges(in, maskKeys{})
	if got := out[0].ChangedFields; !slices.Equal(got, []string{"/data/a", "/data/b"}) {
		t.Errorf("changed_fields %v", got)
	}
	if len(out[0].Changes) != 1 || out[0].Changes[0].Field != "/metadata/labels/l" {
		t.Errorf("changes %+v", out[0].Changes)
	}
	if got := out[0].Changed(); !slices.Equal(got, []string{"/data/a", "/data/b", "/metadata/labels/l"}) {
		t.Errorf("Changed() = %v", got)
	}
	if got := DropMaskedChanges([]ResourceRef{{Kind: "Secret", Changes: []FieldChange{{Field: "/data/a"}}}}, nil); len(got[0].Changes) != 1 {
		t.Errorf("a nil masker dropped %+v", got)
	}
}

// TestPointerRoundTrip checks JoinPointer against SplitPointer.
func TestPointerRoundTrip(t *testing.T) {
	for _, p := range []string{"/spec/replicas", "/metadata/annotations/example.com~1tier", "/a~0b/0", ""} {
		tokens, ok := SplitPointer(p)
		if !ok || JoinPointer(tokens) != p {
			t.Errorf("%q: split %q, joined %q", p, tokens, JoinPointer(tokens))
		}
	}
	if _, ok := SplitPointer("/bad~2"); ok {
		t.Error("a bad escape was accepted")
	}
}
