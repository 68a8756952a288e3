package mask_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kukie/gitops-server/internal/mask"
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
	compiled := r.Compile()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.Apply(tt.in); got != tt.want {
				t.Errorf("Apply(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := compiled.Redact(tt.in); got != tt.want {
				t.Errorf("Compile().Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRedactorJoin: joined sets are cut in one pass, so values of two sets
// overlapping in a text are both cut whole, and joining compiles nothing
// new (a nil or empty redactor joins as nothing).
func TestRedactorJoin(t *testing.T) {
	a := mask.Redactions{"abcdef-secret"}.Compile()
	b := mask.Redactions{"secret-ghijkl"}.Compile()
	var none *mask.Redactor
	j := mask.Join(a, nil, none, b, mask.Redactions{}.Compile())
	tests := []struct{ in, want string }{
		{"x abcdef-secret-ghijkl y", "x <masked> y"},
		{"secret-ghijkl and abcdef-secret", "<masked> and <masked>"},
		{"nothing", "nothing"},
	}
	for _, tt := range tests {
		if got := j.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := none.Redact("abcdef-secret"); got != "abcdef-secret" {
		t.Errorf("nil Redactor changed the text: %q", got)
	}
}

// TestRedactorPastItsBoundsFailsClosed: a set too large to compile cannot
// check a text, so the text is replaced whole.
func TestRedactorPastItsBoundsFailsClosed(t *testing.T) {
	var r mask.Redactions
	for i := range 10_001 {
		r = append(r, fmt.Sprintf("secret%07d", i))
	}
	if got := r.Compile().Redact("# a note without any of them"); got != mask.Marker {
		t.Errorf("Redact = %q, want the text replaced by %q", got, mask.Marker)
	}
	long := mask.Redactions{strings.Repeat("x", 600<<10)}
	if got := long.Compile().Redact("a note"); got != mask.Marker {
		t.Errorf("Redact with 600 KiB of values = %q, want %q", got, mask.Marker)
	}
	if got := r[:10_000].Compile().Redact("id secret0009999 and secret0000000x"); got != "id <masked> and <masked>x" {
		t.Errorf("Redact at the bound = %q", got)
	}
}

// TestRedactorFindsWhatIndexFinds compares the automaton with
// strings.Index over random texts and values from a small alphabet, where
// values overlap, nest and share prefixes and suffixes.
func TestRedactorFindsWhatIndexFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab"[rng.IntN(2)]
		}
		return string(b)
	}
	for range 500 {
		var r mask.Redactions
		for range 1 + rng.IntN(6) {
			r = append(r, word(6+rng.IntN(4)))
		}
		text := word(rng.IntN(60))
		if got, want := r.Compile().Redact(text), naiveRedact(r, text); got != want {
			t.Fatalf("values %q, text %q: Redact = %q, want %q", r, text, got, want)
		}
	}
}

// naiveRedact cuts every occurrence of every value (plain form only: the
// alphabet has no JSON escapes, and base64 forms of these values hold
// other letters) by strings.Index, merging overlapping and adjacent ones.
func naiveRedact(r mask.Redactions, text string) string {
	cut := make([]bool, len(text)+1)
	for _, v := range r {
		for from := 0; ; {
			i := strings.Index(text[from:], v)
			if i < 0 {
				break
			}
			for k := from + i; k < from+i+len(v); k++ {
				cut[k] = true
			}
			from += i + 1
		}
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		if !cut[i] {
			b.WriteByte(text[i])
			continue
		}
		b.WriteString(mask.Marker)
		for i+1 < len(text) && cut[i+1] {
			i++
		}
	}
	return b.String()
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

// A compiled set says what it keeps, so the render cache can count it; a
// set past the bounds keeps nothing (it cuts everything instead).
func TestRedactorBytes(t *testing.T) {
	var r mask.Redactions
	for i := range 1_000 {
		r = append(r, fmt.Sprintf("value-%014d", i)) // 20 bytes
	}
	got := r.Compile().Bytes()
	if got < 20_000*16 || got > 20_000*128 {
		t.Errorf("Bytes of 1,000 values of 20 bytes = %d, want the automaton's size (16 to 128 bytes per value byte)", got)
	}
	if j := mask.Join(r.Compile(), r[:10].Compile()).Bytes(); j <= got {
		t.Errorf("Bytes of a join = %d, want more than one of its sets (%d)", j, got)
	}
	long := mask.Redactions{strings.Repeat("x", 600<<10)}
	if b := long.Compile().Bytes(); b != 0 {
		t.Errorf("Bytes past the bounds = %d, want 0", b)
	}
	var none *mask.Redactor
	if none.Bytes() != 0 {
		t.Error("a nil Redactor keeps something")
	}
}

// TestRedactionsBounded: a set within the bounds is sent whole; one past
// either bound is cut short but still fails closed once compiled, and what
// is sent stays small.
func TestRedactionsBounded(t *testing.T) {
	small := mask.Redactions{"hunter2-value", "short", "another-secret"}
	if got := small.Bounded(); len(got) != 2 || got.Apply("x hunter2-value y") != "x <masked> y" {
		t.Errorf("Bounded() of a small set = %q", got)
	}
	many := make(mask.Redactions, 50_000)
	for i := range many {
		many[i] = fmt.Sprintf("s%05d", i) // 6 bytes: the value bound binds first
	}
	huge := mask.Redactions{strings.Repeat("a", 100<<10), strings.Repeat("b", 100<<10), strings.Repeat("c", 1<<20)}
	for name, r := range map[string]mask.Redactions{"TooMany": many, "TooLarge": huge} {
		t.Run(name, func(t *testing.T) {
			if got := r.Compile().Redact("nothing secret"); got != mask.Marker {
				t.Fatalf("the full set does not fail closed: %q", got)
			}
			b := r.Bounded()
			size := 0
			for _, v := range b {
				size += len(v)
			}
			if len(b) > 10_001 || size > 128<<10+6 {
				t.Errorf("Bounded() keeps %d values, %d bytes", len(b), size)
			}
			if got := b.Compile().Redact("nothing secret"); got != mask.Marker {
				t.Errorf("the bounded set does not fail closed: %q", got)
			}
		})
	}
}
