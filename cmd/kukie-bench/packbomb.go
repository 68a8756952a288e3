package main

import (
	"bytes"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
)

// packBomb measures issue 19's figure: the peak memory of the server's
// process tree while a viewer's request makes it fetch a repository whose
// one commit holds a blob of -size zero bytes (git deflates 768 MiB of
// them to a ~765 KiB pack). The repository is served by git http-backend
// behind TLS on loopback (as internal/testkit/gittest does), the server runs the
// given binary with a static cluster (never read) on a fresh database,
// and the repo tab's tree is asked for twice: the first answer fetches
// the pack, the second one shows whether the refusal was remembered.
func packBomb(args []string) error {
	fs := flag.NewFlagSet("packbomb", flag.ExitOnError)
	bin := fs.String("server", "bin/kukie-server", "the kukie-server binary")
	size := fs.Int64("size", 768<<20, "bytes of zeros in the bomb's one blob")
	_ = fs.Parse(args)

	dir, err := os.MkdirTemp("", "kukie-packbomb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	step(fmt.Sprintf("committing a blob of %d zero bytes", *size))
	repo := filepath.Join(dir, "bomb.git")
	if err := bombRepo(repo, *size); err != nil {
		return err
	}
	packed, err := dirSize(filepath.Join(repo, "objects"))
	if err != nil {
		return err
	}
	git, err := serveGit(repo)
	if err != nil {
		return err
	}
	defer git.srv.Close()
	caFile := filepath.Join(dir, "git-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: git.srv.Certificate().Raw}), 0o600); err != nil {
		return err
	}

	dbURL, drop, err := createDatabase()
	if err != nil {
		return err
	}
	defer drop()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c1, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: "x"}}]
contexts: [{name: c1, context: {cluster: c1, user: u}}]
current-context: c1
`), 0o600); err != nil {
		return err
	}
	clusters := filepath.Join(dir, "clusters.yaml")
	if err := os.WriteFile(clusters, []byte("clusters:\n  - {id: c1, team: team-bomb, name: bomb, kubeconfig: "+kubeconfig+", access_level: full}\n"), 0o600); err != nil {
		return err
	}
	admin, err := authtest.HS256([]byte(secret), authtest.Claims{Sub: "bench", Team: "team-bomb", Roles: []string{"admin"}})
	if err != nil {
		return err
	}

	step("starting " + *bin)
	srv, err := startServer(*bin, dbURL, clusters, "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS=127.0.0.1", "SSL_CERT_FILE="+caFile)
	if err != nil {
		return err
	}
	defer srv.stop()
	time.Sleep(2 * time.Second) // start-up work (migrations, River) done
	idle, _, err := srv.memory()
	if err != nil {
		return err
	}
	status, body, _, err := request(admin, "PUT", "http://"+srv.api+"/v1/clusters/c1/gitops-repo", fmt.Sprintf(`{"repo_url":%q,"auth":{"type":"none"}}`, git.url))
	if err != nil || status != 200 {
		return fmt.Errorf("connecting the repository: %d %s %v", status, body, err)
	}
	steady, _, err := srv.memory()
	if err != nil {
		return err
	}

	step("asking for the repo tab's tree (the server fetches the bomb)")
	sampler := sampleTree(srv.cmd.Process.Pid)
	status, body, took, err := request(admin, "GET", "http://"+srv.api+"/v1/clusters/c1/gitops-repo/tree", "")
	treePeak, children := sampler()
	if err != nil {
		return err
	}
	_, hwm, err := srv.memory()
	if err != nil {
		return err
	}
	packs := git.packs.Load()
	status2, _, took2, err := request(admin, "GET", "http://"+srv.api+"/v1/clusters/c1/gitops-repo/tree", "")
	if err != nil {
		return err
	}
	refetched := git.packs.Load() - packs

	fmt.Printf("| Pack bomb (%d MiB of zeros, %d KiB on disk), server %s | |\n|---|---|\n", *size>>20, packed>>10, *bin)
	fmt.Printf("| RSS idle / after connecting the repository | %s / %s |\n", mib(idle), mib(steady))
	fmt.Printf("| First GET …/gitops-repo/tree | %d %s in %s |\n", status, code(body), took.Round(10*time.Millisecond))
	fmt.Printf("| Server peak RSS (VmHWM) | **%s** (+%.1f MiB over the steady state) |\n", mib(hwm), float64(hwm-steady)/(1<<20))
	fmt.Printf("| Process tree peak RSS (sampled every 20 ms; children seen: %d) | %s |\n", children, mib(treePeak))
	fmt.Printf("| Second GET (a retry) | %d in %s, %d pack request(s) to the Git server |\n", status2, took2.Round(time.Millisecond), refetched)
	return nil
}

// bombRepo makes a bare repository whose main holds one commit with the
// blob bomb.bin of size zero bytes, streamed into git (no file of that
// size is written).
func bombRepo(dir string, size int64) error {
	gitCmd := func(stdin io.Reader, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
		cmd.Stdin = stdin
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(string(out)), nil
	}
	if out, err := exec.Command("git", "init", "--quiet", "--bare", "--initial-branch=main", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	blob, err := gitCmd(io.LimitReader(zeroReader{}, size), "hash-object", "-w", "--stdin")
	if err != nil {
		return err
	}
	tree, err := gitCmd(strings.NewReader("100644 blob "+blob+"\tbomb.bin\n"), "mktree")
	if err != nil {
		return err
	}
	commit, err := gitCmd(nil, "commit-tree", tree, "-m", "bomb")
	if err != nil {
		return err
	}
	if _, err = gitCmd(nil, "update-ref", "refs/heads/main", commit); err != nil {
		return err
	}
	// Into a pack, compressed as git sends it (a loose object is deflated
	// at the fastest level).
	_, err = gitCmd(nil, "repack", "-a", "-d", "-q")
	return err
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// gitServer is git http-backend behind TLS on loopback, counting pack
// requests.
type gitServer struct {
	srv   *httptest.Server
	url   string
	packs atomic.Int64
}

func serveGit(repo string) (*gitServer, error) {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		return nil, fmt.Errorf("git --exec-path: %w", err)
	}
	backend := &cgi.Handler{
		Path:   filepath.Join(strings.TrimSpace(string(out)), "git-http-backend"),
		Root:   "/",
		Logger: log.New(io.Discard, "", 0), // the server hangs up on a refused pack: not news
		Env: []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_PROJECT_ROOT=" + filepath.Dir(repo), "GIT_HTTP_EXPORT_ALL=1"},
	}
	g := &gitServer{}
	g.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			g.packs.Add(1)
		}
		backend.ServeHTTP(w, r)
	}))
	g.url = g.srv.URL + "/" + filepath.Base(repo)
	return g, nil
}

// request sends one request as tok and returns the status, the body and
// the time it took.
func request(tok, method, url, body string) (int, string, time.Duration, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	res, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return 0, "", 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, string(b), time.Since(start), err
}

// code is the problem's code in an answer, or the answer's start.
func code(body string) string {
	if _, rest, ok := strings.Cut(body, `"code":"`); ok {
		c, _, _ := strings.Cut(rest, `"`)
		return c
	}
	return fmt.Sprintf("%.60s", body)
}

// sampleTree samples the summed RSS of pid and its descendants every
// 20 ms until the returned function is called, which returns the highest
// sum and how many distinct children were seen.
func sampleTree(pid int) func() (peak int64, children int) {
	var mu sync.Mutex
	var peak int64
	seen := map[int]bool{}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			sum := int64(0)
			for _, p := range descendants(pid) {
				if p != pid {
					mu.Lock()
					seen[p] = true
					mu.Unlock()
				}
				sum += rssOf(p)
			}
			mu.Lock()
			peak = max(peak, sum)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (int64, int) {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return peak, len(seen)
	}
}

// descendants returns pid and every process under it, from /proc's
// children lists.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, s := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(s); err == nil {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// rssOf is a process's VmRSS in bytes (0 once it is gone).
func rssOf(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	_, rest, ok := strings.Cut(string(b), "VmRSS:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\n")
	kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(line), " kB"), 10, 64)
	return kb << 10
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
		return err
	})
	return n, err
}
