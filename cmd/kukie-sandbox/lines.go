package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kukie/gitops-server/internal/testkit/tryit"
)

// stageNames say when a stage's lines work, for the README and make run.
var stageNames = map[string]string{
	tryit.StageAPI:     "as soon as the API is up",
	tryit.StageGit:     "once the Git world is up (seconds)",
	tryit.StageCluster: "once the sandbox cluster and the AWS account are up (after `make tools`)",
}

// runLines prints the lines of docs/try-it.json: one stage's, with the
// running world's values written in (make run), or all of them as the
// README's "Try it" section shows them (-readme).
func runLines(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kukie-sandbox lines", flag.ContinueOnError)
	file := fs.String("file", filepath.Join("docs", "try-it.json"), "the lines file")
	dir := fs.String("dir", defaultDir(), "the running sandbox's directory (its world.json gives the values)")
	stage := fs.String("stage", "", "print this stage's lines (api, git, cluster)")
	api := fs.String("api", "", "the server's public URL, written into the lines")
	sandbox := fs.String("sandbox", "kukie-sandbox", "how the lines invoke this binary")
	readme := fs.Bool("readme", false, "print every stage's lines as the README lists them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := tryit.Load(*file)
	if err != nil {
		return err
	}
	if *readme {
		_, err := io.WriteString(stdout, readmeLines(f, *sandbox))
		return err
	}
	fill, err := worldVars(*dir, *stage)
	if err != nil {
		return err
	}
	if *api != "" {
		fill["API"] = *api
	}
	var b strings.Builder
	for _, g := range f.InStage(*stage) {
		fmt.Fprintf(&b, "  == %s ==\n", g.Feature)
		for _, l := range g.Lines {
			b.WriteString("  " + strings.ReplaceAll(l.Shell(fill, *sandbox), "\n", "\n  ") + "\n")
		}
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

// worldVars reads the values of the running world; the api stage needs
// none.
func worldVars(dir, stage string) (map[string]string, error) {
	fill := map[string]string{}
	if stage == tryit.StageAPI {
		return fill, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, fileWorld))
	if err != nil {
		return nil, fmt.Errorf("the world's values: %w (is the sandbox running?)", err)
	}
	var w struct {
		Vars map[string]string `json:"vars"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	for k, v := range w.Vars {
		fill[k] = v
	}
	return fill, nil
}

// readmeLines is the README's "Try it" section body: every group with its
// stage, the lines with every value left as a shell variable.
func readmeLines(f tryit.File, sandbox string) string {
	var b strings.Builder
	for _, g := range f.Groups {
		fmt.Fprintf(&b, "**%s** — %s:\n\n```sh\n", g.Feature, stageNames[g.Stage])
		for _, l := range g.Lines {
			b.WriteString(l.Shell(nil, sandbox) + "\n")
		}
		b.WriteString("```\n\n")
	}
	return b.String()
}
