package mask_test

import (
	"strings"
	"testing"
)

// fuzzPlants are secrets planted between fuzzed text. Each is written on lines
// of its own; secret is what must never appear in the output.
var fuzzPlants = []struct{ text, secret string }{
	{"password: Pl4nted-Fuzz-Pw-K7x2Qa", "Pl4nted-Fuzz-Pw-K7x2Qa"},
	{"note: ghp_c3j27xdcg2lMLzgeonyLGcTJFiz4soCmZ9cp", "ghp_c3j27xdcg2lMLzgeonyLGcTJFiz4soCmZ9cp"},
	{"note: AKIAFQUOSBEGZGSYEBAN", "AKIAFQUOSBEGZGSYEBAN"},
	{"note: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmdXp6LXBsYW50ZWQifQ.yMFSb4hBqlxJJLafBvv6Q9RxXTndfYUZx9K1GNNEgey",
		"yMFSb4hBqlxJJLafBvv6Q9RxXTndfYUZx9K1GNNEgey"},
	{"url: postgres://app:Pl4ntedFuzzConn93@db:5432/app", "Pl4ntedFuzzConn93"},
	{"key: |\n  -----BEGIN PRIVATE KEY-----\n  g1+lWIQd9JjbaCIi05fHFWkvQLuR5qREC8tnECJ9InoRJJ5vFQrtK8J1D/BwwBJK\n  -----END PRIVATE KEY-----",
		"g1+lWIQd9JjbaCIi05fHFWkvQLuR5qREC8tnECJ9InoRJJ5vFQrtK8J1D/BwwBJK"},
	{"DB_PASSWORD=Pl4nted-Fuzz-Env-8hQz", "Pl4nted-Fuzz-Env-8hQz"},
}

var fuzzPaths = []string{"f.yaml", "f.json", "f.env", "f.txt", "templates/f.yaml", ""}

// maxFuzzInput caps the fuzzed text around a planted secret.
const maxFuzzInput = 64 << 10

// FuzzMaskFile plants known secrets inside fuzzed YAML, JSON or text, at a
// fuzzed indentation (so inside mappings, lists and block scalars of the
// surrounding text), and checks that no mutation of the surrounding text
// lets one through, and that masking never panics.
func FuzzMaskFile(f *testing.F) {
	seeds := []struct{ prefix, suffix string }{
		{"apiVersion: v1\nkind: ConfigMap\ndata:", "other: value"},
		{"apiVersion: v1\nkind: Secret\nstringData:", "type: Opaque"},
		{"a: \"", "\""},
		{"a: '", "'"},
		{"--- |", "tail"},
		{"--- >", "  more"},
		{"{", "}"},
		{"[", "]"},
		{"a: &x", "b: *x"},
		{"sops:\n  version: 3.9.1", "x: ENC[AES256_GCM,data:Zm9v,iv:aXY=,tag:dGFn,type:str]"},
		{"kind: SealedSecret\nspec:\n  encryptedData: {a: AgBxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx,", "}"},
		{"a: \"x,\\", "\""},
		{"{{- if .Values.x }}", "{{- end }}"},
		{"# comment", "# trailing"},
		{"a: !vault |", "  $ANSIBLE_VAULT;1.1;AES256"},
		{"\t", "\x00"},
	}
	for _, s := range seeds {
		for i := range fuzzPlants {
			f.Add(s.prefix, s.suffix, uint8(i), uint8(i%len(fuzzPaths)), uint8(i%3*2))
		}
	}
	m := MustNew(f)
	f.Fuzz(func(t *testing.T, prefix, suffix string, plant, kind, indent uint8) {
		if len(prefix)+len(suffix) > maxFuzzInput {
			return
		}
		p := fuzzPlants[int(plant)%len(fuzzPlants)]
		if strings.Contains(prefix, p.secret) || strings.Contains(suffix, p.secret) {
			return // the secret would not be the planted one
		}
		pad := strings.Repeat(" ", int(indent)%9)
		in := []byte(prefix + "\n" + pad + strings.ReplaceAll(p.text, "\n", "\n"+pad) + "\n" + suffix)
		var out []byte
		if path := fuzzPaths[int(kind)%len(fuzzPaths)]; path == "" {
			out = m.Manifests(in).Content
		} else {
			out = m.File(path, in).Content
		}
		if strings.Contains(string(out), p.secret) {
			t.Fatalf("planted %q survives\ninput:\n%s\noutput:\n%s", p.secret, in, out)
		}
	})
}
