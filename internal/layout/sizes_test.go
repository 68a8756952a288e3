package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Size limits of the product's code, held from issue 20 on: split a file
// by noun and a function into named steps before they pass these.
const (
	maxFileLines = 400
	maxFuncLines = 80
)

// sizeExempt are the packages the limits do not apply to: the benchmark
// tool and the test kits, which are not the product.
var sizeExempt = []string{"cmd/kukie-bench", "internal/testkit/"}

// TestSizes checks every non-test Go file of the module: at most
// maxFileLines lines, and no function (from func to its closing brace)
// over maxFuncLines.
func TestSizes(t *testing.T) {
	files := 0
	for _, p := range goList(t, "./...") {
		name := rel(p.ImportPath)
		if exempt(name) {
			continue
		}
		for _, f := range p.GoFiles {
			files++
			checkSizes(t, filepath.Join(p.Dir, f), filepath.Join(name, f))
		}
	}
	if files < 100 {
		t.Errorf("only %d files checked: the listing is broken", files)
	}
}

func exempt(name string) bool {
	for _, e := range sizeExempt {
		if name == strings.TrimSuffix(e, "/") || strings.HasPrefix(name, e) {
			return true
		}
	}
	return false
}

func checkSizes(t *testing.T, path, shown string) {
	t.Helper()
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if n := fs.File(f.Pos()).LineCount(); n > maxFileLines {
		t.Errorf("%s has %d lines, over %d: split it by noun", shown, n, maxFileLines)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		if n := fs.Position(fd.End()).Line - fs.Position(fd.Pos()).Line + 1; n > maxFuncLines {
			t.Errorf("%s: func %s has %d lines, over %d: split it into named steps", shown, fd.Name.Name, n, maxFuncLines)
		}
	}
}
