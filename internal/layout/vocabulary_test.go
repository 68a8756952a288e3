package layout

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vocabulary.txt from the source (review the diff: every line is a name users code against)")

var (
	envName    = regexp.MustCompile(`^KUKIE_[A-Z0-9_]+$`)
	metricName = regexp.MustCompile(`^kukie_[a-z0-9_]+$`)
	wireWord   = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)+$`)
	logKey     = regexp.MustCompile(`^[a-z][a-z0-9_.]*$`)
	codeConst  = regexp.MustCompile(`^(code|Code|reason|Reason)[A-Z]`)
)

// logMethods are slog's methods and the index of their first key/value
// argument.
var logMethods = map[string]int{
	"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
	"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
	"Log": 3, "With": 0,
}

// attrFuncs are slog's attribute constructors; their first argument is a key.
var attrFuncs = map[string]bool{
	"String": true, "Int": true, "Int64": true, "Uint64": true, "Float64": true,
	"Bool": true, "Time": true, "Duration": true, "Any": true, "Group": true,
}

// TestVocabulary compares the names the server's users code against with
// testdata/vocabulary.txt: environment variables (KUKIE_*), metric names
// (kukie_*), log keys (slog key arguments) and wire words (the snake_case
// literals: problem and reason codes, hand-written JSON keys, and the
// code…/reason… constants). It reads every non-test file of every package
// the server binary is built from. A rename fails here; a deliberate new
// name is added with `go test ./internal/layout -run Vocabulary -update`.
func TestVocabulary(t *testing.T) {
	got := map[string]bool{}
	for _, p := range goList(t, "-deps", "./cmd/kukie-server") {
		for _, name := range p.GoFiles {
			collectWords(t, filepath.Join(p.Dir, name), got)
		}
	}
	lines := make([]string, 0, len(got))
	for l := range got {
		lines = append(lines, l)
	}
	slices.Sort(lines)
	path := filepath.Join("testdata", "vocabulary.txt")
	if *update {
		body := "# Names the server's users code against; see vocabulary_test.go.\n" + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (create it with -update)", path, err)
	}
	want := map[string]bool{}
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			want[l] = true
		}
	}
	for _, l := range lines {
		if !want[l] {
			t.Errorf("new name not in %s: %q (a rename? if deliberate, run with -update)", path, l)
		}
	}
	for l := range want {
		if !got[l] {
			t.Errorf("name in %s no longer in the source: %q", path, l)
		}
	}
	if len(lines) < 100 {
		t.Errorf("only %d names found: the collector is broken", len(lines))
	}
}

// collectWords adds the file's names to into, one "kind name" line each.
func collectWords(t *testing.T, path string, into map[string]bool) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	tags := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if n.Tag != nil {
				tags[n.Tag] = true
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) && codeConst.MatchString(name.Name) {
					if s, ok := stringLit(n.Values[i]); ok {
						into["word "+s] = true
					}
				}
			}
		case *ast.CallExpr:
			collectLogKeys(n, into)
		case *ast.BasicLit:
			if tags[n] {
				return true
			}
			s, ok := stringLit(n)
			if !ok {
				return true
			}
			switch {
			case envName.MatchString(s):
				into["env "+s] = true
			case metricName.MatchString(s):
				into["metric "+s] = true
			case wireWord.MatchString(s):
				into["word "+s] = true
			}
		}
		return true
	})
}

// collectLogKeys adds the literal keys of a slog call or attribute.
func collectLogKeys(call *ast.CallExpr, into map[string]bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return
	}
	if id, ok := sel.X.(*ast.Ident); ok && id.Name == "slog" && attrFuncs[sel.Sel.Name] {
		if len(call.Args) > 0 {
			if s, ok := stringLit(call.Args[0]); ok && logKey.MatchString(s) {
				into["log "+s] = true
			}
		}
		return
	}
	first, ok := logMethods[sel.Sel.Name]
	if !ok {
		return
	}
	for i := first; i < len(call.Args); i += 2 {
		if s, ok := stringLit(call.Args[i]); ok && logKey.MatchString(s) {
			into["log "+s] = true
		}
	}
}

// stringLit is the value of a string literal expression.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}
