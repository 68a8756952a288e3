package service

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const gitChangeManifest = `# The web Deployment.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web   # keep this comment
spec:
  replicas: 1 # scaled by hand
  template:
    spec:
      containers:
        - name: web
          image: "nginx:1.27"
          env:
            - name: DB_PASSWORD
              value: hunter2-in-git-value
`

// planWith is a plan whose payload.argocd holds the given fields of one
// resource.
func planWith(t *testing.T, fields ...FieldPreview) Plan {
	t.Helper()
	w := ArgoCDWarning{Resources: []OwnershipResource{{Kind: "Deployment", Name: "web", Level: LevelSelfHeal, Fields: fields}}}
	payload, err := json.Marshal(map[string]any{"argocd": w})
	if err != nil {
		t.Fatal(err)
	}
	return Plan{ClusterID: "c", Payload: payload}
}

func gitSet(path string, line int, value string) *GitValue {
	return &GitValue{State: GitSet, Value: json.RawMessage(value),
		Source: &GitSource{Revision: "c1", Path: path, Line: line, Via: "manifest"}}
}

// TestGitChangeApplies checks that the patch git apply takes cleanly and
// that afterwards the file sets the planned values, comments and untouched
// lines kept; fields it cannot write are listed with a reason.
func TestGitChangeApplies(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("this test applies patches with the git CLI: install git (e.g. apt-get install git)")
	}
	const path = "apps/plain/deploy.yaml"
	plan := planWith(t,
		FieldPreview{Field: "/spec/replicas", Planned: json.RawMessage(`3`), Git: gitSet(path, 7, `1`)},
		FieldPreview{Field: "/spec/template/spec/containers/0/image", Planned: json.RawMessage(`"nginx:1.28"`), Git: gitSet(path, 12, `"nginx:1.27"`)},
		FieldPreview{Field: "/spec/paused", Planned: json.RawMessage(`true`), Git: &GitValue{State: GitUnset}},
		FieldPreview{Field: "/spec/template/spec/containers/0/env/0/value", Masked: true, Git: gitSet(path, 15, `null`)},
	)
	fields, revision, err := gitFields(plan)
	if err != nil || revision != "c1" {
		t.Fatalf("gitFields: %v %q", err, revision)
	}
	files := map[string][]byte{path: []byte(gitChangeManifest)}
	ch := (&GitChanges{}).build("https://git.example.com/org/gitops.git", revision, fields, files)
	if len(ch.Files) != 1 || ch.Files[0].Path != path {
		t.Fatalf("files %+v", ch.Files)
	}
	b, _ := json.Marshal(ch.Unsupported)
	if string(b) != `[{"field":"/spec/paused","reason":"not_in_git"},{"field":"/spec/template/spec/containers/0/env/0/value","reason":"masked"}]` {
		t.Errorf("unsupported %s", b)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "apps/plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, path), []byte(gitChangeManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	patch := filepath.Join(t.TempDir(), "change.patch")
	if err := os.WriteFile(patch, []byte(ch.Files[0].Diff), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(git, "apply", "--verbose", patch)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, ch.Files[0].Diff)
	}
	got, _ := os.ReadFile(filepath.Join(dir, path))
	want := strings.NewReplacer("replicas: 1 #", "replicas: 3 #", `image: "nginx:1.27"`, "image: nginx:1.28").Replace(gitChangeManifest)
	if string(got) != want {
		t.Errorf("after git apply:\n%s\nwant:\n%s", got, want)
	}
}

// secretLines masks a file's lines holding "hunter2".
type secretLines struct{}

func (secretLines) File(_ string, content []byte) MaskedText {
	return MaskedText{Content: []byte(strings.ReplaceAll(string(content), "hunter2-in-git-value", "<masked>")),
		Secrets: []string{"hunter2-in-git-value"}}
}

func (secretLines) Redactor([]string, ...Redactor) Redactor { return nil }

// TestGitChangeSecretInContext checks that a hunk whose context would hold
// a masked value is not written.
func TestGitChangeSecretInContext(t *testing.T) {
	const path = "deploy.yaml"
	plan := planWith(t, FieldPreview{Field: "/spec/template/spec/containers/0/image", Planned: json.RawMessage(`"nginx:1.28"`),
		Git: gitSet(path, 12, `"nginx:1.27"`)})
	fields, revision, _ := gitFields(plan)
	ch := (&GitChanges{Masker: secretLines{}}).build("r", revision, fields, map[string][]byte{path: []byte(gitChangeManifest)})
	if len(ch.Files) != 0 || len(ch.Unsupported) != 1 || ch.Unsupported[0].Reason != UnsupportedSecretInContext {
		t.Errorf("change %+v", ch)
	}
}

// TestGitChangeUnavailable checks the refusal when a field is not known in Git.
func TestGitChangeUnavailable(t *testing.T) {
	for name, plan := range map[string]Plan{
		"Pending":  planWith(t, FieldPreview{Field: "/spec/replicas", Git: &GitValue{State: GitPending}}),
		"NoFields": {Payload: json.RawMessage(`{}`)},
	} {
		if _, _, err := gitFields(plan); ErrorReason(err) != ReasonGitChangeUnavailable || ErrorCode(err) != ECONFLICT {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestYAMLScalar checks that planned values are written as YAML reads them back.
func TestYAMLScalar(t *testing.T) {
	for in, want := range map[string]string{
		`3`: "3", `1.5`: "1.5", `true`: "true", `null`: "null", `"nginx:1.28"`: "nginx:1.28",
		`"yes"`: `"yes"`, `"123"`: `"123"`, `"a b"`: `"a b"`, `"key: v"`: `"key: v"`, `".5"`: `".5"`, `".inf"`: `".inf"`,
	} {
		if got, ok := yamlScalar(json.RawMessage(in)); !ok || got != want {
			t.Errorf("yamlScalar(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if _, ok := yamlScalar(json.RawMessage(`{"a":1}`)); ok {
		t.Error("an object is written on one line")
	}
}

// TestGitChangeAddsFields checks fields Git does not set: they are added
// under the deepest mapping of the pointer that exists, at its keys'
// indentation, and the patch applies; in a file without a final newline
// too. A pointer through a list is left out.
func TestGitChangeAddsFields(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("this test applies patches with the git CLI: install git (e.g. apt-get install git)")
	}
	const path = "deploy.yaml"
	unset := &GitValue{State: GitUnset, Source: &GitSource{Revision: "c1", Path: path, Line: 2, Via: "manifest"}}
	for name, c := range map[string]struct{ content, want string }{
		"Newline": {gitChangeManifest, strings.NewReplacer("  name: web   #", "  labels:\n    tier: web\n  name: web   #",
			"  replicas: 1 #", "  paused: true\n  replicas: 3 #").Replace(gitChangeManifest)},
		"NoFinalNewline": {strings.TrimSuffix(gitChangeManifest, "\n"), strings.TrimSuffix(strings.NewReplacer(
			"  name: web   #", "  labels:\n    tier: web\n  name: web   #",
			"  replicas: 1 #", "  paused: true\n  replicas: 3 #").Replace(gitChangeManifest), "\n")},
	} {
		t.Run(name, func(t *testing.T) {
			plan := planWith(t,
				FieldPreview{Field: "/spec/paused", Planned: json.RawMessage(`true`), Git: unset},
				FieldPreview{Field: "/metadata/labels/tier", Planned: json.RawMessage(`"web"`), Git: unset},
				FieldPreview{Field: "/spec/replicas", Planned: json.RawMessage(`3`), Git: gitSet(path, 7, `1`)},
				FieldPreview{Field: "/spec/template/spec/containers/0/resources/limits/cpu", Planned: json.RawMessage(`"1"`), Git: unset},
			)
			fields, revision, err := gitFields(plan)
			if err != nil {
				t.Fatal(err)
			}
			ch := (&GitChanges{}).build("r", revision, fields, map[string][]byte{path: []byte(c.content)})
			if b, _ := json.Marshal(ch.Unsupported); string(b) != `[{"field":"/spec/template/spec/containers/0/resources/limits/cpu","reason":"value_shape"}]` {
				t.Errorf("unsupported %s", b)
			}
			if len(ch.Files) != 1 {
				t.Fatalf("files %+v", ch.Files)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, path), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			patch := filepath.Join(t.TempDir(), "p.patch")
			if err := os.WriteFile(patch, []byte(ch.Files[0].Diff), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(git, "apply", patch)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply: %v\n%s\npatch:\n%s", err, out, ch.Files[0].Diff)
			}
			got, _ := os.ReadFile(filepath.Join(dir, path))
			if string(got) != c.want {
				t.Errorf("after git apply:\n%s\nwant:\n%s\npatch:\n%s", got, c.want, ch.Files[0].Diff)
			}
		})
	}
}

// TestGitChangeOutsideAppPath checks that a file outside the app's path (a
// kustomize base other apps share) is not patched.
func TestGitChangeOutsideAppPath(t *testing.T) {
	w := ArgoCDWarning{Applications: []OwnershipApp{{Name: "web", Path: "overlays/prod", Paths: []string{"overlays/prod"}}},
		Resources: []OwnershipResource{{Kind: "Deployment", Name: "web", Application: "web", Fields: []FieldPreview{
			{Field: "/spec/replicas", Planned: json.RawMessage(`3`), Git: gitSet("base/deploy.yaml", 7, `1`)}}}}}
	w.Resources[0].Fields[0].Git.Source.Via = "kustomize_resource"
	payload, _ := json.Marshal(map[string]any{"argocd": w})
	fields, revision, err := gitFields(Plan{Payload: payload})
	if err != nil {
		t.Fatal(err)
	}
	ch := (&GitChanges{}).build("r", revision, fields, map[string][]byte{"base/deploy.yaml": []byte(gitChangeManifest)})
	if len(ch.Files) != 0 || len(ch.Unsupported) != 1 || ch.Unsupported[0].Reason != UnsupportedOutsideApp {
		t.Errorf("change %+v", ch)
	}
}
