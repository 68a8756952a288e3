package layout

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allowedImports is the one table of the module's import edges: each
// package (path below the module) and the module packages its non-test
// files may import. An edge not listed fails TestImportRules, named; an
// edge listed but unused fails too, so the table stays the true picture
// (docs/architecture.md shows the same table).
//
// The direction: service imports nothing of the module; adapters import
// service (and the private packages they are built on); only cmd/ wires
// everything. Test kits (internal/testkit/*) are imported by tests, by one
// another, and by the development tools in cmd/ (the sandbox, the bench, the
// development token), never by the server or anything it is built from.
var allowedImports = map[string][]string{
	"service":    {},
	"store":      {"service"},
	"api":        {"openapi", "service"},
	"eksaccess":  {"internal/kube", "service"},
	"migrations": {},
	"openapi":    {},

	"internal/argocd":     {"service"},
	"internal/gitpreview": {"service"},
	"internal/gitrepo":    {"service"},
	"internal/helmrepo":   {"internal/netguard", "service"},
	"internal/jobs":       {"internal/sns", "service"},
	"internal/jwtauth":    {"service"},
	"internal/keyring":    {},
	"internal/kube":       {"internal/argocd", "service"},
	"internal/mask":       {"service"},
	"internal/netguard":   {},
	"internal/ownership":  {"internal/argocd", "service"},
	"internal/render":     {"internal/mask", "service"},
	"internal/sns":        {"service"},
	"internal/layout":     {},
	"internal/makerun":    {},

	"cmd/kukie-server": {"api", "eksaccess", "internal/gitpreview", "internal/gitrepo", "internal/helmrepo", "internal/jobs",
		"internal/jwtauth", "internal/keyring", "internal/kube", "internal/mask", "internal/netguard",
		"internal/ownership", "internal/render", "internal/sns", "migrations", "service", "store"},
	"cmd/kukie-bench":    {"internal/testkit/authtest", "internal/testkit/k8stest", "migrations", "service", "store"},
	"cmd/kukie-devtoken": {"internal/testkit/authtest"},
	"cmd/kukie-sandbox": {"internal/sns", "internal/testkit/authtest", "internal/testkit/awsfake", "internal/testkit/ekssim",
		"internal/testkit/gittest", "internal/testkit/k8stest", "internal/testkit/snstest", "internal/testkit/tryit"},

	"deploy":                {},
	"deploy/cloudformation": {},

	"internal/testkit/argocdtest": {},
	"internal/testkit/authtest":   {},
	"internal/testkit/awsfake":    {},
	"internal/testkit/ekssim":     {"internal/testkit/awsfake", "internal/testkit/k8stest"},
	"internal/testkit/gittest":    {},
	"internal/testkit/k8stest":    {},
	"internal/testkit/pgnumeric":  {},
	"internal/testkit/pgtest":     {"migrations", "store"},
	"internal/testkit/snstest":    {"internal/sns"},
	"internal/testkit/tcpproxy":   {},
	"internal/testkit/freeport":   {},
	"internal/testkit/testclock":  {},
	"internal/testkit/tryit":      {},
}

// devTools may import test kits: they are built for development and
// measurement, never shipped (the Dockerfile builds cmd/kukie-server only).
var devTools = []string{"cmd/kukie-bench", "cmd/kukie-devtoken", "cmd/kukie-sandbox"}

const testkitPrefix = "internal/testkit/"

// TestImportRules checks every package's imports against allowedImports,
// and that a test kit is imported only by tests, test kits and devTools.
func TestImportRules(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range goList(t, "./...") {
		name := rel(p.ImportPath)
		seen[name] = true
		allowed, ok := allowedImports[name]
		if !ok {
			t.Errorf("package %s is not in allowedImports: add it, with the edges it may have", name)
			continue
		}
		used := map[string]bool{}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, modulePath+"/") {
				continue
			}
			to := rel(imp)
			used[to] = true
			if !slices.Contains(allowed, to) {
				t.Errorf("edge %s -> %s is not allowed (allowedImports); the direction is cmd -> adapters -> service", name, to)
			}
			if strings.HasPrefix(to, testkitPrefix) && !strings.HasPrefix(name, testkitPrefix) && !slices.Contains(devTools, name) {
				t.Errorf("edge %s -> %s: only tests, test kits and %v import test kits", name, to, devTools)
			}
		}
		for _, to := range allowed {
			if !used[to] {
				t.Errorf("edge %s -> %s is in allowedImports but unused: remove it so the table stays true", name, to)
			}
		}
		for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
			if to := rel(imp); strings.HasPrefix(imp, modulePath+"/") && strings.HasPrefix(to, "cmd/") {
				t.Errorf("test of %s imports %s: commands are run as binaries, not imported", name, to)
			}
		}
	}
	for name := range allowedImports {
		if !seen[name] {
			t.Errorf("allowedImports names %s, which is not a package of the module", name)
		}
	}
}

// TestServerHoldsNoTestkit checks what the server binary is built from:
// no test kit, however indirectly.
func TestServerHoldsNoTestkit(t *testing.T) {
	pkgs := goList(t, "-deps", "./cmd/kukie-server")
	for _, p := range pkgs {
		if strings.HasPrefix(rel(p.ImportPath), testkitPrefix) {
			t.Errorf("cmd/kukie-server is built with the test kit %s", rel(p.ImportPath))
		}
	}
	if len(pkgs) < 10 {
		t.Errorf("go list -deps ./cmd/kukie-server named %d module packages: the listing is broken", len(pkgs))
	}
}

// importsTable renders allowedImports as docs/architecture.md shows it.
func importsTable() string {
	names := make([]string, 0, len(allowedImports))
	for name := range allowedImports {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		to := make([]string, 0, len(allowedImports[name]))
		for _, p := range allowedImports[name] {
			to = append(to, "`"+p+"`")
		}
		cell := strings.Join(to, ", ")
		if cell == "" {
			cell = "nothing of the module"
		}
		b.WriteString("| `" + name + "` | " + cell + " |\n")
	}
	return b.String()
}

// TestArchitectureDocTable checks that docs/architecture.md shows the same
// table as allowedImports (-update rewrites it).
func TestArchitectureDocTable(t *testing.T) {
	path := filepath.Join(moduleRoot(t), "docs", "architecture.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const start, end = "| Package | May import |\n|---|---|\n", "<!-- end imports table -->"
	doc := string(raw)
	i, j := strings.Index(doc, start), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the imports table (%q … %q)", path, start, end)
	}
	got, want := doc[i+len(start):j], importsTable()
	if *update {
		if err := os.WriteFile(path, []byte(doc[:i+len(start)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != want {
		t.Errorf("the imports table of %s differs from allowedImports; run go test ./internal/layout -run DocTable -update\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
