package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// startProcess starts a server as its own process (this test binary
// answers `serve` as kukie-server does, see TestMain), configured only by
// environment variables, and waits until it is ready. The process stops
// (SIGINT, then the drain) when the test ends.
func startProcess(t *testing.T, env map[string]string) *server {
	t.Helper()
	publicAddr, adminAddr := pickTwo(t)
	cmd := exec.Command(os.Args[0], "serve")
	cmd.Env = os.Environ()
	for k, v := range map[string]string{"KUKIE_HTTP_ADDR": publicAddr, "KUKIE_ADMIN_ADDR": adminAddr,
		"KUKIE_AUTH_HS256_SECRET": e2eSecret, "KUKIE_SHUTDOWN_DELAY": "0s"} {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &server{public: "http://" + publicAddr, admin: "http://" + adminAddr, publicAddr: publicAddr,
		done: make(chan error, 1), logs: &syncBuffer{}}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("server process did not stop")
		}
		checkLogSecrets(t, s.logs.String(), env)
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if res, err := http.Get(s.admin + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("server process exited: %v\nlogs:\n%s", err, s.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server process not ready after 60 s; logs:\n%s", s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// applicationLists is the API server's own count of Application LISTs
// (apiserver_request_total), so the test counts what reached the cluster,
// not what the servers say they did.
func applicationLists(t *testing.T, k *k8stest.Cluster) int {
	t.Helper()
	client, err := discovery.NewDiscoveryClientForConfig(k.Config(k8stest.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	body, err := client.RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read the API server's metrics: %v", err)
	}
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="applications"`) ||
			!strings.Contains(line, `verb="LIST"`) {
			continue
		}
		n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		total += int(n)
	}
	return total
}

// TestTwoReplicas runs two server processes on one empty database, as a
// Deployment with two pods does: both migrate at once and leave one
// correct schema; together they read a cluster once per cache window,
// counted by the API server; a refresh on one is what the other serves.
func TestTwoReplicas(t *testing.T) {
	k, kubeconfig := startArgoCluster(t)
	clusters := clustersFile(t, kubeconfig, [3]string{"prod", "team-e2e", "prod"})
	dbURL := pgtest.MustCreateDatabase(t)
	env := map[string]string{"KUKIE_DATABASE_URL": dbURL, "KUKIE_MIGRATE_ON_START": "true",
		"KUKIE_STATIC_CLUSTERS_FILE": clusters}

	// Both migrate the empty database at once.
	var a, b *server
	var wg sync.WaitGroup
	wg.Go(func() { a = startProcess(t, env) })
	wg.Go(func() { b = startProcess(t, env) })
	wg.Wait()
	if t.Failed() {
		return
	}
	status, err := runMigrate(t, dbURL, "status")
	if err != nil {
		t.Fatal(err)
	}
	var goose, river int
	for _, line := range strings.Split(strings.TrimSpace(status), "\n") {
		if !strings.Contains(line, "applied") {
			t.Errorf("migration not applied after two replicas started: %q", line)
		}
		if strings.HasPrefix(line, "r") {
			river++
		} else {
			goose++
		}
	}
	var recorded int
	pgtest.MustQueryRow(t, dbURL, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`, &recorded)
	if recorded != goose || river == 0 {
		t.Errorf("goose_db_version records %d applications of %d migrations (%d River): a migration ran twice", recorded, goose, river)
	}

	tok := e2eToken(t, "member")
	list := func(s *server, refresh bool) (apps []string) {
		t.Helper()
		u := s.public + "/v1/clusters/prod/argocd/applications"
		if refresh {
			u += "?refresh=true"
		}
		code, body := call(t, "GET", u, tok, "")
		if code != 200 {
			t.Fatalf("GET %s: %d %s", u, code, body)
		}
		var out struct {
			Applications []struct{ ID string } `json:"applications"`
		}
		decodeJSON(t, body, &out)
		for _, a := range out.Applications {
			apps = append(apps, a.ID)
		}
		return apps
	}

	// Clients spread over both replicas poll the list and the sidebar. The
	// window is 10 s: however long the machine takes, the two together
	// read at most once per window begun (each alone would read in every
	// window too, which is twice that).
	before := applicationLists(t, k)
	start := time.Now()
	var clients sync.WaitGroup
	for i := range 6 {
		s := []*server{a, b}[i%2]
		clients.Go(func() {
			for range 15 {
				for _, u := range []string{s.public + "/v1/clusters/prod/argocd/applications", s.public + "/v1/argocd/clusters"} {
					if code, err := get(u, tok); code != 200 {
						t.Errorf("GET %s: %d %v", u, code, err) // not Fatal: this is not the test's goroutine
						return
					}
				}
			}
		})
	}
	clients.Wait()
	windows := 1 + int(time.Since(start)/(10*time.Second))
	if lists := applicationLists(t, k) - before; lists < 1 || lists > windows {
		t.Errorf("the two replicas made %d Application LISTs in %s (%d cache windows), want 1..%d",
			lists, time.Since(start).Round(time.Millisecond), windows, windows)
	}

	// A new app; a refresh on A reads it (once the 2 s floor has passed);
	// a refresh on B right after serves A's read without a LIST of its own,
	// and B's plain list shows it too once A's notification arrives.
	if err := k.Apply(t.Context(), []byte(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: added-later, namespace: argocd}
spec: {project: default, destination: {server: "https://kubernetes.default.svc", namespace: web}}
`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a refresh on A to read the new app", func() (bool, string) {
		apps := list(a, true)
		return contains(apps, "added-later"), fmt.Sprint(apps)
	})
	lists := applicationLists(t, k)
	if apps := list(b, true); !contains(apps, "added-later") {
		t.Errorf("a refresh on B right after A's serves %v, without A's new app", apps)
	}
	if n := applicationLists(t, k) - lists; n != 0 {
		t.Errorf("B's refresh made %d LISTs instead of taking A's read", n)
	}
	eventually(t, "B's plain list to show A's refresh", func() (bool, string) {
		apps := list(b, false)
		return contains(apps, "added-later"), fmt.Sprint(apps)
	})
	for _, s := range []*server{a, b} {
		if strings.Contains(s.logs.String(), "shared snapshot table failed") {
			t.Errorf("a replica read alone: the shared table failed\n%s", grepLines(s.logs.String(), "shared snapshot"))
		}
	}
}

// get answers a GET's status, for goroutines that may not end the test.
func get(u, tok string) (int, error) {
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return res.StatusCode, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
