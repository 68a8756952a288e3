// Package deploy_test checks the deployment files that nothing else builds
// here: no Docker engine runs in CI, so the Dockerfile is parsed and its
// promises checked, and the binary `make build` produced with the same flags
// is inspected.
package deploy_test

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int    // first line, 1-based
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	image, name string // image reference and the AS name, if any
	body        []instruction
}

// parseDockerfile splits a Dockerfile into stages. It handles what this
// repository's Dockerfile uses: comments, parser directives, and lines
// continued with a trailing backslash (comment lines inside a continuation
// are dropped, as Docker does). Heredocs and a custom escape character are
// not supported.
func parseDockerfile(src string) ([]stage, error) {
	var (
		stages  []stage
		pending strings.Builder
		start   int
	)
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if pending.Len() == 0 {
			start = i + 1
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(body + " ")
			continue
		}
		pending.WriteString(line)
		cmd, args, _ := strings.Cut(pending.String(), " ")
		pending.Reset()
		in := instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			st, err := parseFrom(in)
			if err != nil {
				return nil, err
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				return nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if pending.Len() > 0 {
		return nil, errors.New("the last line ends with a continuation")
	}
	if len(stages) == 0 {
		return nil, errors.New("no FROM")
	}
	return stages, nil
}

// parseFrom reads `FROM [--flag=...] image [AS name]`.
func parseFrom(in instruction) (stage, error) {
	var fields []string
	for _, f := range strings.Fields(in.args) {
		if !strings.HasPrefix(f, "--") {
			fields = append(fields, f)
		}
	}
	switch {
	case len(fields) == 1:
		return stage{image: fields[0]}, nil
	case len(fields) == 3 && strings.EqualFold(fields[1], "AS"):
		return stage{image: fields[0], name: fields[2]}, nil
	}
	return stage{}, fmt.Errorf("line %d: cannot read FROM %s", in.line, in.args)
}

var (
	digestPinned   = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)
	distrolessBase = regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?(:[\w.-]+)?@`)
	outputFlag     = regexp.MustCompile(`(?:^|\s)-o\s+(\S+)`)
)

// dockerfileProblems lists every way src breaks the image's promises: base
// images pinned by digest; a static, path-free, version-stamped build; a
// distroless static final stage holding only the binary, run as a non-root
// user as `kukie-server serve`. The binary's path must stay what ENTRYPOINT
// names, because renders run in a child process of the same binary.
func dockerfileProblems(src string) []string {
	stages, err := parseDockerfile(src)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	report := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }

	names := map[string]bool{}
	for _, st := range stages {
		if !names[st.image] && !digestPinned.MatchString(st.image) {
			report("FROM %s: not pinned by @sha256: digest", st.image)
		}
		if st.name != "" {
			names[st.name] = true
		}
	}

	// The build stage: the one whose RUN runs `go build`.
	builders := map[string]string{} // stage name → the binary it writes
	for _, st := range stages[:len(stages)-1] {
		for _, in := range st.body {
			if in.cmd != "RUN" || !strings.Contains(in.args, "go build") {
				continue
			}
			for _, flag := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version="} {
				if !strings.Contains(in.args, flag) {
					report("line %d: go build without %s", in.line, flag)
				}
			}
			if m := outputFlag.FindStringSubmatch(in.args); m != nil && st.name != "" {
				builders[st.name] = m[1]
			}
		}
	}
	if len(builders) == 0 {
		report("no named build stage runs `go build -o ...`")
	}

	final := stages[len(stages)-1]
	if !distrolessBase.MatchString(final.image) {
		report("final stage FROM %s: not gcr.io/distroless/static", final.image)
	}
	var copies, users, entrypoints, cmds []instruction
	for _, in := range final.body {
		switch in.cmd {
		case "COPY", "ADD":
			copies = append(copies, in)
		case "USER":
			users = append(users, in)
		case "ENTRYPOINT":
			entrypoints = append(entrypoints, in)
		case "CMD":
			cmds = append(cmds, in)
		case "RUN":
			report("line %d: RUN in the final stage (it has no shell)", in.line)
		}
	}

	var binary string
	if len(copies) != 1 {
		report("final stage: %d COPY/ADD, want exactly one, of the binary", len(copies))
	} else if f := strings.Fields(copies[0].args); copies[0].cmd != "COPY" || len(f) != 3 || !strings.HasPrefix(f[0], "--from=") {
		report("line %d: want `COPY --from=<build stage> <binary> <dest>`, got %s %s", copies[0].line, copies[0].cmd, copies[0].args)
	} else if from := strings.TrimPrefix(f[0], "--from="); builders[from] != f[1] {
		report("line %d: copies %s from %s, which does not build it", copies[0].line, f[1], from)
	} else if !path.IsAbs(f[2]) || path.Base(f[2]) != "kukie-server" {
		report("line %d: binary copied to %s, want an absolute path ending in /kukie-server", copies[0].line, f[2])
	} else {
		binary = f[2]
	}

	if len(users) == 0 {
		report("final stage: no USER")
	} else if u, _, _ := strings.Cut(users[len(users)-1].args, ":"); u == "0" || u == "root" || u == "" {
		report("line %d: USER %s runs as root", users[len(users)-1].line, users[len(users)-1].args)
	}

	var argv []string
	for _, group := range [][]instruction{entrypoints, cmds} {
		if len(group) == 0 {
			continue
		}
		in := group[len(group)-1]
		var words []string
		if err := json.Unmarshal([]byte(in.args), &words); err != nil {
			report("line %d: %s %s is not in exec form (there is no shell)", in.line, in.cmd, in.args)
			continue
		}
		argv = append(argv, words...)
	}
	if want := []string{binary, "serve"}; binary != "" && strings.Join(argv, " ") != strings.Join(want, " ") {
		report("ENTRYPOINT and CMD run %q, want %q", argv, want)
	}
	return problems
}

// TestDockerfile checks the repository's Dockerfile.
func TestDockerfile(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dockerfileProblems(string(src)) {
		t.Error(p)
	}
}

// TestDockerfileRules shows each rule refusing what it should, so a green
// TestDockerfile means something.
func TestDockerfileRules(t *testing.T) {
	const (
		golang     = "golang:1.26.8-bookworm@sha256:a688600ca24f8a4d3ca77f95b0dd40704a9fc787c826660eb7ba0b641b8b175d"
		distroless = "gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab"
		build      = "RUN CGO_ENABLED=0 go build -trimpath \\\n  -ldflags \"-X main.version=${VERSION}\" \\\n  -o /out/kukie-server ./cmd/kukie-server\n"
	)
	good := "# syntax=docker/dockerfile:1\nARG X=1\nFROM --platform=$BUILDPLATFORM " + golang + " AS build\n" + build +
		"FROM " + distroless + "\nCOPY --from=build /out/kukie-server /kukie-server\nUSER 65532:65532\n" +
		"ENTRYPOINT [\"/kukie-server\"]\nCMD [\"serve\"]\n"
	if problems := dockerfileProblems(good); len(problems) > 0 {
		t.Fatalf("good Dockerfile refused: %q", problems)
	}
	tests := []struct {
		name, old, new, want string
	}{
		{"ErrTagOnly", golang, "golang:1.26.8-bookworm", "not pinned"},
		{"ErrCgo", "CGO_ENABLED=0 ", "", "without CGO_ENABLED=0"},
		{"ErrNoTrimpath", "-trimpath", "", "without -trimpath"},
		{"ErrNoVersion", "-X main.version=${VERSION}", "-s -w", "without -X main.version="},
		{"ErrNotDistroless", "gcr.io/distroless/static-debian12", "debian", "not gcr.io/distroless/static"},
		{"ErrRoot", "USER 65532:65532", "USER root", "runs as root"},
		{"ErrNoUser", "USER 65532:65532\n", "", "no USER"},
		{"ErrSecondCopy", "USER", "COPY --from=build /src /src\nUSER", "want exactly one"},
		{"ErrCopyNotBuilt", "--from=build /out/kukie-server", "--from=build /out/other", "does not build it"},
		{"ErrShellForm", `ENTRYPOINT ["/kukie-server"]`, "ENTRYPOINT /kukie-server", "not in exec form"},
		{"ErrOtherCommand", `CMD ["serve"]`, `CMD ["migrate", "up"]`, "ENTRYPOINT and CMD run"},
		{"ErrMovedBinary", `ENTRYPOINT ["/kukie-server"]`, `ENTRYPOINT ["/bin/kukie-server"]`, "ENTRYPOINT and CMD run"},
		{"ErrRunInFinal", "USER", "RUN true\nUSER", "RUN in the final stage"},
		{"ErrDanglingContinuation", `CMD ["serve"]` + "\n", `CMD ["serve"] \` + "\n", "continuation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(good, tt.old) {
				t.Fatalf("%q is not in the good Dockerfile", tt.old)
			}
			problems := dockerfileProblems(strings.Replace(good, tt.old, tt.new, 1))
			if !strings.Contains(strings.Join(problems, "\n"), tt.want) {
				t.Errorf("problems %q, want one saying %q", problems, tt.want)
			}
		})
	}
}

// TestDockerignore checks that the build context leaves out the Git history
// and local build output.
func TestDockerignore(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	ignored := map[string]bool{}
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.Trim(strings.TrimSpace(line), "/")
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "!") {
			ignored[line] = true
		}
	}
	for _, want := range []string{".git", "bin"} {
		if !ignored[want] {
			t.Errorf(".dockerignore does not ignore %s", want)
		}
	}
}

// TestBuiltBinary checks the binary `make build` wrote: built without cgo and
// with -trimpath, statically linked (no ELF interpreter, no shared
// libraries, so it runs on distroless static), and version stamped. It builds
// nothing itself; .ci/run runs `make build` before the tests.
func TestBuiltBinary(t *testing.T) {
	bin := filepath.Join("..", "bin", "kukie-server")
	if _, err := os.Stat(bin); errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s is missing: run `make build` first (this test checks the binary it produces and builds nothing itself)", bin)
	}

	// What `go version -m` prints. The -ldflags setting is not recorded under
	// -trimpath (go.dev/issue/52372), so the stamp is checked by running the
	// binary below.
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if want := "github.com/kukie/gitops-server/cmd/kukie-server"; info.Path != want {
		t.Errorf("built from %s, want %s", info.Path, want)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for key, want := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[key] != want {
			t.Errorf("build %s=%q, want %q: rebuild with `make build`", key, settings[key], want)
		}
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("dynamically linked: has a %s program header", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("shared libraries %q (%v), want none", libs, err)
	}

	// "dev" is the unstamped default in cmd/kukie-server; `make build` stamps
	// `git describe` or "unknown".
	out, err := exec.CommandContext(t.Context(), bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	name, v, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	if name != "kukie-server" || v == "" || v == "dev" {
		t.Errorf("%s version printed %q: not stamped with -X main.version", bin, out)
	}
}
