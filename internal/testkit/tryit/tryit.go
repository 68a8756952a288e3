// Package tryit reads docs/try-it.json, the lines that show every feature
// of the server on `make run`'s local world: requests grouped by feature,
// each group reached at a stage of the world (the API, the Git world, the
// cluster with the AWS account). `make run` prints them as shell lines
// (Shell), the README lists the same rendering, and the end-to-end test of
// make run (internal/makerun) runs the printed lines in bash, so they
// cannot rot.
package tryit

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Stages of the world, in the order make run reaches them.
const (
	StageAPI     = "api"     // the server is up: plans, the docs
	StageGit     = "git"     // the local Git world serves the sandbox repository
	StageCluster = "cluster" // the sandbox cluster, the EKS clusters and the AWS account are ready
)

// Stages lists the stages in order.
var Stages = []string{StageAPI, StageGit, StageCluster}

// File is the content of docs/try-it.json.
type File struct {
	About  string  `json:"about"`
	Groups []Group `json:"groups"`
}

// Group is a feature's lines, tried once the world reaches Stage.
type Group struct {
	Feature string `json:"feature"`
	Stage   string `json:"stage"`
	Lines   []Line `json:"lines"`
}

// Line is one request to the server, or one command of the sandbox. Paths,
// bodies and command arguments may name variables as ${NAME}: the world's
// values (API, GIT_URL, …), the tokens (AGENT, MEMBER, ADMIN) and what
// earlier lines saved.
type Line struct {
	Say    string          `json:"say"`
	Method string          `json:"method,omitempty"`
	Path   string          `json:"path,omitempty"`
	Token  string          `json:"token,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
	// Save keeps a top-level field of the answer as a variable.
	Save *Save `json:"save,omitempty"`
	// Until repeats the request until top-level fields of the answer have
	// these values (field → value).
	Until map[string]string `json:"until,omitempty"`
	// Command is a kukie-sandbox command (its arguments) instead of a request.
	Command []string `json:"command,omitempty"`
}

// Save is a variable taken from a top-level field of an answer.
type Save struct {
	Var   string `json:"var"`
	Field string `json:"field"`
}

// Load reads and checks a lines file.
func Load(path string) (File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	var f File
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, f.check()
}

var variable = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*)\}`)

func (f File) check() error {
	last := 0
	for _, g := range f.Groups {
		stage := slices.Index(Stages, g.Stage)
		if stage < 0 {
			return fmt.Errorf("group %q: stage %q is not one of %v", g.Feature, g.Stage, Stages)
		}
		if stage < last {
			return fmt.Errorf("group %q: stage %q comes after a later stage", g.Feature, g.Stage)
		}
		last = stage
		for _, l := range g.Lines {
			if (l.Method == "") == (len(l.Command) == 0) {
				return fmt.Errorf("line %q: give either method and path or command", l.Say)
			}
			if len(l.Body) > 0 && !json.Valid(l.Body) {
				return fmt.Errorf("line %q: body is not JSON", l.Say)
			}
		}
	}
	return nil
}

// InStage returns the groups of one stage.
func (f File) InStage(stage string) []Group {
	var out []Group
	for _, g := range f.Groups {
		if g.Stage == stage {
			out = append(out, g)
		}
	}
	return out
}

// untilFields returns the fields of an Until condition, sorted, and the
// values they must have, in the same order.
func (l Line) untilFields() (fields, values []string) {
	for f := range l.Until {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		values = append(values, l.Until[f])
	}
	return fields, values
}
