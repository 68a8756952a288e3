package mask_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

// fuzzPlants are secrets planted between fuzzed text. Each is written on lines
// of its own; secret is what must never appear in the output. A plant marked
// structural is a secret only through YAML structure (an anchor repeated
// under a secret, a value named by a sibling key, a kind merged in): when the
// surrounding text swallows it into a string (an open quote, a folded
// block), it is text and only the other plants, secret by their key or
// shape, must still be masked.
type fuzzPlant struct {
	text, secret string
	structural   bool
}

var fuzzPlants = []fuzzPlant{
	{"password: Pl4nted-Fuzz-Pw-K7x2Qa", "Pl4nted-Fuzz-Pw-K7x2Qa", false},
	{"note: ghp_c3j27xdcg2lMLzgeonyLGcTJFiz4soCmZ9cp", "ghp_c3j27xdcg2lMLzgeonyLGcTJFiz4soCmZ9cp", false},
	{"note: AKIAFQUOSBEGZGSYEBAN", "AKIAFQUOSBEGZGSYEBAN", false},
	{"note: eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJmdXp6LXBsYW50ZWQifQ.yMFSb4hBqlxJJLafBvv6Q9RxXTndfYUZx9K1GNNEgey",
		"yMFSb4hBqlxJJLafBvv6Q9RxXTndfYUZx9K1GNNEgey", false},
	{"url: postgres://app:Pl4ntedFuzzConn93@db:5432/app", "Pl4ntedFuzzConn93", false},
	{"key: |\n  -----BEGIN PRIVATE KEY-----\n  g1+lWIQd9JjbaCIi05fHFWkvQLuR5qREC8tnECJ9InoRJJ5vFQrtK8J1D/BwwBJK\n  -----END PRIVATE KEY-----",
		"g1+lWIQd9JjbaCIi05fHFWkvQLuR5qREC8tnECJ9InoRJJ5vFQrtK8J1D/BwwBJK", false},
	{"DB_PASSWORD=Pl4nted-Fuzz-Env-8hQz", "Pl4nted-Fuzz-Env-8hQz", false},
	// Issue 19: values spread over lines, in flow collections, in list
	// items, behind aliases and base64.
	{"kind: Secret\nstringData:\n  db_password: Pl4ntedFoldHead-x9\n    Pl4ntedFoldTail-Q7w", "Pl4ntedFoldTail-Q7w", false},
	{"password:\n  Pl4ntedNextLine-R5tK", "Pl4ntedNextLine-R5tK", false},
	{"kind: Secret\ndata: {conn: Pl4ntedFlowVal-M3kD,\n  other: Pl4ntedFlowTail-W2e}", "Pl4ntedFlowTail-W2e", false},
	{"db_password: \"Pl4ntedQuoteHead-a\n  Pl4ntedQuoteTail-Z8p\"", "Pl4ntedQuoteTail-Z8p", false},
	{"client_secret: >\n  Pl4ntedBlockHead-b\n  Pl4ntedBlockTail-H2d", "Pl4ntedBlockTail-H2d", false},
	{"- kind: Secret\n  stringData:\n    conn: Pl4ntedListItem-J6v", "Pl4ntedListItem-J6v", false},
	{"metadata:\n  labels: &d {conn: Pl4ntedAnchor-V4nB}\nkind: Secret\ndata: *d", "Pl4ntedAnchor-V4nB", true},
	{"shared: &s Pl4ntedAliasVal-C5m\ntoken: *s", "Pl4ntedAliasVal-C5m", true},
	{"binaryData:\n  app.env: QVBQPXdlYgpEQl9QQVNTV09SRD1QbDRudGVkQjY0UHctVDF5UQo=", "QVBQPXdlYgpEQl9QQVNTV09SRD1QbDRudGVkQjY0UHctVDF5UQo=", false},
	// Security review: "$" passwords, env and key/value pairs in any order
	// and style, kind: Secret through a merge key.
	{"password: $Pl4ntedDollarPw-Q3z", "Pl4ntedDollarPw-Q3z", false},
	{"env:\n- value: Pl4ntedEnvFirst-L8c\n  name: DB_PASSWORD", "Pl4ntedEnvFirst-L8c", true},
	{"env: [{name: DB_PASSWORD, value: Pl4ntedEnvFlow-U2m}]", "Pl4ntedEnvFlow-U2m", true},
	{"vars:\n- key: db_password\n  value: Pl4ntedKeyValue-N6s", "Pl4ntedKeyValue-N6s", true},
	{"base: &sb {kind: Secret}\nitem:\n  <<: *sb\n  stringData:\n    url: Pl4ntedMergeKind-E4r", "Pl4ntedMergeKind-E4r", true},
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
		{"description: '{{ $labels.instance }} down'", "---\nkind: ConfigMap"},
		{"---\nkind: PrometheusRule\nspec: {expr: '{{ $value }}'}\n---", "---\na: [unclosed"},
		{"items:", "- kind: ConfigMap"},
		{"a: [unclosed\n---", "---\nb: c"},
	}
	for _, s := range seeds {
		for i := range fuzzPlants {
			f.Add(s.prefix, s.suffix, uint8(i), uint8(i%len(fuzzPaths)), uint8(i%3*2))
			f.Add(s.prefix, s.suffix, uint8(i), uint8(len(fuzzPaths)-1), uint8(i%3*2))
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
		if strings.Contains(string(out), p.secret) && !(p.structural && swallowed(in, p.secret)) {
			t.Fatalf("planted %q survives\ninput:\n%s\noutput:\n%s", p.secret, in, out)
		}
	})
}

// swallowed reports input that parses as YAML and holds secret inside a
// longer scalar: the plant became string content, not structure.
func swallowed(in []byte, secret string) bool {
	dec := yaml.NewDecoder(bytes.NewReader(in))
	found := false
	var visit func(n *yaml.Node, depth int)
	visit = func(n *yaml.Node, depth int) {
		if n == nil || depth > 100 {
			return
		}
		if n.Kind == yaml.ScalarNode && n.Value != secret && strings.Contains(n.Value, secret) {
			found = true
		}
		for _, c := range n.Content {
			visit(c, depth+1)
		}
	}
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return found && errors.Is(err, io.EOF)
		}
		visit(&n, 0)
	}
}
