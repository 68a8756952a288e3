// Package gittest is the test world's Git and Helm servers: bare
// repositories made by the tests, served on loopback over smart HTTP (git
// http-backend through net/http/cgi, token auth) and over SSH (a host key,
// public-key auth, git-upload-pack), and a Helm chart repository. Every
// server counts its requests so tests can assert "same commit, no fetch".
//
// The harness runs the real git binary; the product never does. Without git
// the test fails saying how to install it; it never skips.
package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Repo is a bare repository in the test's temporary directory. Commits go to
// the branch HEAD points at (main at first).
type Repo struct {
	// Dir is the bare repository's directory; its base name is Name.
	Dir string
	// Name is the repository's name in server URLs, e.g. "repo.git".
	Name string

	mu      sync.Mutex
	commits int
}

// NewRepo makes an empty bare repository whose HEAD is refs/heads/main.
func NewRepo(tb testing.TB) *Repo {
	tb.Helper()
	gitBinary(tb)
	dir := filepath.Join(tb.TempDir(), "repo.git")
	r := &Repo{Dir: dir, Name: filepath.Base(dir)}
	runGit(tb, "", nil, "init", "--quiet", "--bare", "--initial-branch=main", dir)
	return r
}

// Commit records a commit whose tree is exactly files (path → content, "/"
// separated) on the branch HEAD points at, and returns its id.
func (r *Repo) Commit(tb testing.TB, files map[string]string, message string) string {
	tb.Helper()
	return r.CommitWithLinks(tb, files, nil, message)
}

// CommitWithLinks is Commit with symbolic links too: links maps a path to
// the link's target, written as is (it may point anywhere, e.g.
// "/etc/passwd" or "../../x").
func (r *Repo) CommitWithLinks(tb testing.TB, files, links map[string]string, message string) string {
	tb.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	work := tb.TempDir()
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatalf("gittest: %v", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			tb.Fatalf("gittest: %v", err)
		}
	}
	for p, target := range links {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatalf("gittest: %v", err)
		}
		if err := os.Symlink(target, full); err != nil {
			tb.Fatalf("gittest: %v", err)
		}
	}
	// A fixed, increasing date keeps runs reproducible without making two
	// commits of the same tree identical.
	r.commits++
	date := time.Date(2026, 1, 1, 0, 0, r.commits, 0, time.UTC).Format(time.RFC3339)
	env := []string{
		"GIT_AUTHOR_NAME=gittest", "GIT_AUTHOR_EMAIL=gittest@example.com", "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.com", "GIT_COMMITTER_DATE=" + date,
	}
	args := []string{"--git-dir=" + r.Dir, "--work-tree=" + work}
	runGit(tb, "", env, append(args, "add", "--all", ".")...)
	runGit(tb, "", env, append(args, "commit", "--quiet", "--allow-empty", "-m", message)...)
	return strings.TrimSpace(runGit(tb, "", nil, "--git-dir="+r.Dir, "rev-parse", "HEAD"))
}

// Branch points refs/heads/name at commit, creating or moving it.
func (r *Repo) Branch(tb testing.TB, name, commit string) {
	tb.Helper()
	runGit(tb, "", nil, "--git-dir="+r.Dir, "update-ref", "refs/heads/"+name, commit)
}

// SetHead makes HEAD point at refs/heads/branch, so later commits go there.
// The branch need not exist yet.
func (r *Repo) SetHead(tb testing.TB, branch string) {
	tb.Helper()
	runGit(tb, "", nil, "--git-dir="+r.Dir, "symbolic-ref", "HEAD", "refs/heads/"+branch)
	// The index belongs to the old branch; the next commit starts from the
	// new branch's tree (or none).
	_ = os.Remove(filepath.Join(r.Dir, "index"))
}

// Tag creates the annotated tag name on commit.
func (r *Repo) Tag(tb testing.TB, name, commit string) {
	tb.Helper()
	env := []string{"GIT_COMMITTER_NAME=gittest", "GIT_COMMITTER_EMAIL=gittest@example.com",
		"GIT_COMMITTER_DATE=2026-01-01T00:00:00Z"}
	runGit(tb, "", env, "--git-dir="+r.Dir, "tag", "-a", "-m", name, name, commit)
}

// tips returns the ids every ref of the repository points at (and, for
// annotated tags, the commits they peel to): what a strict server lets a
// client want.
func (r *Repo) tips() (map[string]bool, error) {
	cmd := exec.Command("git", "--git-dir="+r.Dir, "for-each-ref", "--format=%(objectname) %(*objectname)")
	cmd.Env = gitEnv(nil)
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	tips := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		tips[f] = true
	}
	return tips, nil
}

// gitBinary fails the test when git is not installed.
func gitBinary(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		tb.Fatalf("gittest needs the git binary (2.31 or later) for its test servers: " +
			"install it, e.g. `apt-get install git` (Debian/Ubuntu) or `apk add git` (Alpine)")
	}
	return p
}

// gitEnv is a clean environment for git: no user or system configuration.
func gitEnv(extra []string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"LANG=C",
	}
	return append(env, extra...)
}

func runGit(tb testing.TB, dir string, env []string, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("gittest: git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// gitExecPath returns git's helper directory (where git-http-backend is).
func gitExecPath(tb testing.TB) string {
	tb.Helper()
	p := strings.TrimSpace(runGit(tb, "", nil, "--exec-path"))
	if _, err := os.Stat(filepath.Join(p, "git-http-backend")); err != nil {
		tb.Fatalf("gittest: %s has no git-http-backend (%v): install a full git package", p, err)
	}
	return p
}

// configEnv passes git configuration through the environment (git 2.31+).
func configEnv(kv ...string) []string {
	env := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i/2, kv[i]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i/2, kv[i+1]))
	}
	return env
}
