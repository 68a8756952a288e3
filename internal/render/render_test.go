package render

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// childEnvVar makes the test binary act as the render child. Only the tests
// set it, through /usr/bin/env, since RunChild gives the child an empty
// environment.
const childEnvVar = "KUKIE_RENDER_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnvVar) {
	case "1":
		os.Exit(ChildMain(os.Stdin, os.Stdout))
	case filteredChild, unfilteredChild:
		os.Exit(dialChildMain(os.Stdin, os.Stdout, os.Getenv(childEnvVar) == unfilteredChild))
	case inheritedChild, inheritedFilterChild:
		os.Exit(inheritedSocketChildMain(os.Stdout, os.Getenv(childEnvVar) == inheritedFilterChild))
	}
	os.Exit(m.Run())
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// MustLoadRepo reads a fixture repository under testdata/repos into a tree.
func MustLoadRepo(tb testing.TB, name string) map[string][]byte {
	tb.Helper()
	root := filepath.Join("testdata", "repos", name)
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		tb.Fatalf("loading fixture repo %s: %v", name, err)
	}
	return files
}

// assertGolden compares got with testdata/golden/name.yaml (rewritten with -update).
func assertGolden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	p := filepath.Join("testdata", "golden", name+".yaml")
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		tb.Fatalf("reading golden file (run go test ./internal/render -run %s -update to create it): %v", tb.Name(), err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("manifests differ from %s:\n--- got\n%s\n--- want\n%s", p, got, want)
	}
}

// mustRender renders in process and fails on an error result.
func mustRender(tb testing.TB, req Request) Result {
	tb.Helper()
	res := Render(req)
	if res.Error != nil {
		tb.Fatalf("render failed: %s (%s) %s", res.Error.Code, res.Error.Reason, res.Error.Message)
	}
	return res
}

// assertErrorCode checks a failed result's code and reason.
func assertErrorCode(tb testing.TB, res Result, code, reason string) {
	tb.Helper()
	if res.Error == nil {
		tb.Fatalf("render succeeded, want %s; manifests:\n%s", code, res.Manifests)
	}
	if res.Error.Code != code || res.Error.Reason != reason {
		tb.Fatalf("error = %s/%s %q, want %s/%s", res.Error.Code, res.Error.Reason, res.Error.Message, code, reason)
	}
}

func assertContains(tb testing.TB, s, sub string) {
	tb.Helper()
	if !strings.Contains(s, sub) {
		tb.Errorf("%q does not contain %q", s, sub)
	}
}

func assertNotContains(tb testing.TB, s, sub string) {
	tb.Helper()
	if strings.Contains(s, sub) {
		tb.Errorf("output contains %q:\n%s", sub, s)
	}
}
