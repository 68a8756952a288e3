package tryit

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestShellWords checks the rendering of values in the shell: written-in
// values join their text, others stay variables, and the shell reads every
// word back as the value meant.
func TestShellWords(t *testing.T) {
	l := Line{Say: "connect", Method: "PUT", Path: "/v1/clusters/sandbox/gitops-repo", Token: "ADMIN",
		Body: json.RawMessage(`{"repo_url": "${GIT_URL}", "note": "it's ${X}"}`)}
	fill := map[string]string{"API": "http://127.0.0.1:8080", "GIT_URL": "https://127.0.0.1:1/r.git"}
	got := l.Shell(fill, "kukie-sandbox")
	want := "# connect\ncurl -s -X PUT http://127.0.0.1:8080/v1/clusters/sandbox/gitops-repo -H \"Authorization: Bearer ${ADMIN}\" " +
		`-H 'Content-Type: application/json' -d '{"repo_url":"https://127.0.0.1:1/r.git","note":"it'\''s '"${X}"'"}'`
	if got != want {
		t.Errorf("Shell:\n got %s\nwant %s", got, want)
	}
	// The shell reads the body back as the JSON meant.
	body := got[strings.Index(got, "-d ")+3:]
	out, err := exec.Command("sh", "-c", "X=x; printf %s "+body).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"repo_url":"https://127.0.0.1:1/r.git","note":"it's x"}` {
		t.Errorf("the shell read %s", out)
	}
}

// TestLoadChecks checks Load's refusals through check.
func TestLoadChecks(t *testing.T) {
	for name, f := range map[string]File{
		"UnknownStage":             {Groups: []Group{{Feature: "a", Stage: "later"}}},
		"StagesBackward":           {Groups: []Group{{Feature: "a", Stage: StageGit}, {Feature: "b", Stage: StageAPI}}},
		"NeitherRequestNorCommand": {Groups: []Group{{Feature: "a", Stage: StageAPI, Lines: []Line{{Say: "x"}}}}},
		"BothRequestAndCommand": {Groups: []Group{{Feature: "a", Stage: StageAPI,
			Lines: []Line{{Say: "x", Method: "GET", Path: "/", Command: []string{"pick"}}}}}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := f.check(); err == nil {
				t.Error("check accepted it")
			}
		})
	}
	if _, err := Load("../../../docs/try-it.json"); err != nil {
		t.Errorf("docs/try-it.json: %v", err)
	}
}

// TestShellCommand checks a sandbox command line: plain words stay bare, a
// path with a space is quoted.
func TestShellCommand(t *testing.T) {
	l := Line{Say: "update", Command: []string{"stack-update", "--access-level", "LIMITED"}}
	if got := l.Shell(nil, ".dev/bin/kukie-sandbox"); got != "# update\n.dev/bin/kukie-sandbox stack-update --access-level LIMITED" {
		t.Errorf("Shell = %q", got)
	}
	if got := l.Shell(nil, "/my dir/kukie-sandbox"); !strings.Contains(got, `"/my dir/kukie-sandbox" stack-update`) {
		t.Errorf("Shell = %q", got)
	}
}
