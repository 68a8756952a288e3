// Package gittest is the test world's Git and Helm servers: bare
// repositories made by the tests, served on loopback over smart HTTP (git
// http-backend through net/http/cgi, token auth) and over SSH (a host key,
// public-key auth, git-upload-pack), and a Helm chart repository. Every
// server counts its requests so tests can assert "same commit, no fetch".
//
// The harness runs the real git binary; the product never does. Without git
// the test fails saying how to install it; it never skips. Init,
// Repo.CommitFiles and Repo.Serve do the same outside a test, returning
// errors, for development tools.
package gittest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Repo is a bare repository, in the test's temporary directory or wherever
// Init made it. Commits go to the branch HEAD points at (main at first).
type Repo struct {
	// Dir is the bare repository's absolute directory; its base name is
	// Name.
	Dir string
	// Name is the repository's name in server URLs, e.g. "repo.git".
	Name string

	mu      sync.Mutex
	commits int
}

// Init makes an empty bare repository at dir whose HEAD is refs/heads/main.
// It needs no testing.TB, so that development tools can serve one too.
func Init(dir string) (*Repo, error) {
	if _, err := lookGit(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("gittest: %w", err)
	}
	if _, err := execGit("", nil, "init", "--quiet", "--bare", "--initial-branch=main", abs); err != nil {
		return nil, err
	}
	return &Repo{Dir: abs, Name: filepath.Base(abs)}, nil
}

// NewRepo makes an empty bare repository whose HEAD is refs/heads/main in
// the test's temporary directory.
func NewRepo(tb testing.TB) *Repo {
	tb.Helper()
	r, err := Init(filepath.Join(tb.TempDir(), "repo.git"))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Commit records a commit whose tree is exactly files (path → content, "/"
// separated) on the branch HEAD points at, and returns its id.
func (r *Repo) Commit(tb testing.TB, files map[string]string, message string) string {
	tb.Helper()
	return r.CommitWithLinks(tb, files, nil, message)
}

// CommitFiles is Commit outside a test: it returns an error instead of
// failing one.
func (r *Repo) CommitFiles(files map[string]string, message string) (string, error) {
	return r.commitTree(files, nil, message)
}

// CommitWithLinks is Commit with symbolic links too: links maps a path to
// the link's target, written as is (it may point anywhere, e.g.
// "/etc/passwd" or "../../x").
func (r *Repo) CommitWithLinks(tb testing.TB, files, links map[string]string, message string) string {
	tb.Helper()
	id, err := r.commitTree(files, links, message)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}

// commitTree commits files and links, written to a temporary work tree that
// it removes afterwards, and returns the commit's id.
func (r *Repo) commitTree(files, links map[string]string, message string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	work, err := os.MkdirTemp("", "gittest-work-")
	if err != nil {
		return "", fmt.Errorf("gittest: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	if err := writeTree(work, files, links); err != nil {
		return "", fmt.Errorf("gittest: %w", err)
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
	if _, err := execGit("", env, append(args, "add", "--all", ".")...); err != nil {
		return "", err
	}
	if _, err := execGit("", env, append(args, "commit", "--quiet", "--allow-empty", "-m", message)...); err != nil {
		return "", err
	}
	id, err := execGit("", nil, "--git-dir="+r.Dir, "rev-parse", "HEAD")
	return strings.TrimSpace(id), err
}

// writeTree writes files and links (by "/"-separated path) under work.
func writeTree(work string, files, links map[string]string) error {
	for p, content := range files {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for p, target := range links {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, full); err != nil {
			return err
		}
	}
	return nil
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

// lookGit finds the git binary, or says how to install it.
func lookGit() (string, error) {
	p, err := exec.LookPath("git")
	if err != nil {
		return "", errors.New("gittest needs the git binary (2.31 or later) for its test servers: " +
			"install it, e.g. `apt-get install git` (Debian/Ubuntu) or `apk add git` (Alpine)")
	}
	return p, nil
}

// gitBinary fails the test when git is not installed.
func gitBinary(tb testing.TB) string {
	tb.Helper()
	p, err := lookGit()
	if err != nil {
		tb.Fatal(err)
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

// execGit runs git with args in dir and returns its standard output; its
// error carries git's standard error.
func execGit(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("gittest: git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// runGit is execGit failing the test on error.
func runGit(tb testing.TB, dir string, env []string, args ...string) string {
	tb.Helper()
	out, err := execGit(dir, env, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// gitExecPath returns git's helper directory (where git-http-backend is).
func gitExecPath() (string, error) {
	out, err := execGit("", nil, "--exec-path")
	if err != nil {
		return "", err
	}
	p := strings.TrimSpace(out)
	if _, err := os.Stat(filepath.Join(p, "git-http-backend")); err != nil {
		return "", fmt.Errorf("gittest: %s has no git-http-backend (%w): install a full git package", p, err)
	}
	return p, nil
}

// configEnv passes git configuration through the environment (git 2.31+).
func configEnv(kv ...string) []string {
	env := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i/2, kv[i]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i/2, kv[i+1]))
	}
	return env
}
