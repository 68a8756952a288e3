package makerun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/freeport"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/tryit"
)

// worldReady is the line make run prints once every stage is up.
const worldReady = "the whole world is ready"

// TestMakeRunServesEveryPrintedLine is the "done when": on free
// ports, make run brings the world up; every printed line, run in bash as a
// reader pastes it, answers 2xx; the stack update switches the registered
// EKS cluster's level end to end; and SIGHUP stops every process make run
// started.
func TestMakeRunServesEveryPrintedLine(t *testing.T) {
	m := startMakeRun(t)
	f, err := tryit.Load(filepath.Join(m.root, "docs", "try-it.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswers(t, m.runPrintedLines(t, f))
	checkREADME(t, m)
	m.hangUp(t)
}

// runPrintedLines runs every line of f in one bash session, in order, as
// make run prints them (the world's values written in, the tokens as the
// exported variables make run prints). curl is wrapped only to fail on a
// non-2xx answer and to keep each line's answers; it returns them by the
// line's say.
func (m *makeRun) runPrintedLines(t *testing.T, f tryit.File) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the printed lines use curl: install it (e.g. apt-get install curl)")
	}
	vars := m.vars(t)
	fill := map[string]string{}
	for k, v := range vars {
		if k != "AGENT" && k != "MEMBER" && k != "ADMIN" {
			fill[k] = v
		}
	}
	answers := t.TempDir()
	var script strings.Builder
	script.WriteString("set -o pipefail\n" +
		"curl() { command curl --fail-with-body \"$@\" | tee -a \"$ANSWERS/$LINE\"; }\n")
	var says []string
	for _, g := range f.Groups {
		for _, l := range g.Lines {
			n := len(says)
			says = append(says, l.Say)
			fmt.Fprintf(&script, "LINE=%d; echo \"== line %d\" >&2\n{\n%s\n} || { echo \"line %d failed: status $?\" >&2; exit 1; }\n",
				n, n, l.Shell(fill, filepath.Join(m.dev, "bin", "kukie-sandbox")), n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // against hangs only
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = m.root
	cmd.Env = append(environ(), "KUKIE_DEV_DIR="+m.dev, "ANSWERS="+answers,
		"AGENT="+vars["AGENT"], "MEMBER="+vars["MEMBER"], "ADMIN="+vars["ADMIN"])
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the printed lines: %v\n%s\nmake run's output:\n%s", err, out, m.out)
	}
	byLine := map[string]string{}
	for n, say := range says {
		b, _ := os.ReadFile(filepath.Join(answers, fmt.Sprint(n)))
		byLine[say] = string(b)
	}
	return byLine
}

// checkAnswers checks what the lines are there to show, beyond 2xx.
func checkAnswers(t *testing.T, answers map[string]string) {
	t.Helper()
	want := []struct{ sayPrefix, contains string }{
		{"self_heal:", `"level":"self_heal"`},
		{"self_heal:", "곧 ArgoCD가 image 값을 nginx:1.27로 되돌려요"},
		{"self_heal:", `"live":"nginx:1.27","planned":"nginx:1.28"`},
		{"self_heal:", `"git":{"state":"set","value":"nginx:1.27","source":{`},
		{"self_heal:", `"path":"apps/plain/deployment.yaml","line":14,"via":"manifest"}`},
		{"matches_git:", `"level_cause":"matches_git"`},
		{"kustomize:", `"git":{"state":"set","value":2,"source":{`},
		{"kustomize:", `"path":"apps/kustomize/deployment.yaml","line":6,"via":"kustomize_resource"}`},
		{"the same change as a patch", `"path":"apps/plain/deployment.yaml","diff":"--- a/apps/plain/deployment.yaml`},
		{"the same change as a patch", `+          image: nginx:1.28`},
		{"the agent's tool: the same patch", `+          image: nginx:1.28`},
		// payload.argocd is stored as jsonb: its keys come back in jsonb's order.
		{"wait until its Git part", `"source":{"key":"image","via":"helm_values","line":2,"path":"apps/helm/values.yaml","revision":"`},
		{"wait until its Git part", `"key_planned":"busybox:1.37"}`},
		{"wait until its Git part", `"source":{"key":"replicas","via":"helm_values","line":1,"path":"apps/helm/values.yaml","revision":"`},
		{"wait until its Git part", `"key_planned":4}`},
		{"the Helm change as a patch", `"path":"apps/helm/values.yaml"`},
		{"the Helm change as a patch", `+image: busybox:1.37`},
		{"the Helm change as a patch", `+replicas: 4`},
		{"stop sync instead", `"argocd_pause":{`},
		{"stop sync instead", `patch applications.argoproj.io sandbox-plain`},
		{"not_reverted:", `"level":"not_reverted"`},
		{"auto_sync:", `"level":"auto_sync"`},
		{"manual:", `"level":"manual"`},
		{"unknown:", `"level":"unknown"`},
		{"its folders", `"path":"apps/helm"`},
		{"the same folders at the first commit", `"commit":"`},
		{"the private repository's folders", `"path":"apps/kustomize"`},
		{"what Git holds for the plain app", `kind: Deployment`},
		{"the agent's tool: the Helm app", "worker-config"},
		{"its Argo CD apps", `"name":"sandbox-plain"`},
		{"may Kukie list Applications", `"allowed":true`},
		{"its Argo CD apps", `"total":12`},
		{"Kukie may no longer list", `"allowed":false`},
		{"but may still patch", `"allowed":true`},
		{"the switch, step by step", "AmazonEKSEditPolicy"},
	}
	for _, w := range want {
		found := false
		for say, body := range answers {
			if strings.HasPrefix(say, w.sayPrefix) {
				found = true
				if !strings.Contains(body, w.contains) {
					t.Errorf("%q: no %s in %s", say, w.contains, body)
				}
			}
		}
		if !found {
			t.Errorf("no line of docs/try-it.json says %q...: the test checks its answer", w.sayPrefix)
		}
	}
	for say, body := range answers {
		if strings.Contains(body, "sandbox-demo-password") {
			t.Errorf("%q: the sandbox repository's demo secret is in the answer", say)
		}
	}
}

// checkREADME checks the README's "Try it" section is the lines' rendering.
func checkREADME(t *testing.T, m *makeRun) {
	t.Helper()
	out, err := m.sandboxCommand(context.Background(), []string{"lines", "-readme", "-sandbox", ".dev/bin/kukie-sandbox",
		"-file", filepath.Join(m.root, "docs", "try-it.json")})
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(m.root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)<!-- try-it:begin -->\n(.*)<!-- try-it:end -->`).FindSubmatch(readme)
	if section == nil {
		t.Fatal("README.md has no <!-- try-it:begin --> … <!-- try-it:end --> section")
	}
	if string(section[1]) != out {
		t.Errorf("README's Try it section differs from `kukie-sandbox lines -readme` (docs/try-it.json); want:\n%s", out)
	}
}

// makeRun is a running scripts/dev-run.sh.
type makeRun struct {
	root, dev string
	cmd       *exec.Cmd
	out       *syncBuffer
	done      chan error
}

func startMakeRun(t *testing.T) *makeRun {
	t.Helper()
	assets, err := k8stest.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	m := &makeRun{root: moduleRoot(t), dev: t.TempDir(), out: &syncBuffer{}, done: make(chan error, 1)}
	public, admin := pickTwo(t)
	// env --default-signal: a test process started with SIGHUP ignored
	// (nohup) would hand that on, and bash cannot trap a signal ignored on
	// entry; a terminal's make run starts with the default.
	m.cmd = exec.Command("env", "--default-signal=HUP", "bash", filepath.Join(m.root, "scripts", "dev-run.sh"))
	m.cmd.Dir = m.root
	m.cmd.Env = append(environ(), "KUKIE_DEV_DIR="+m.dev, "KUKIE_K8S_ASSETS="+assets,
		"KUKIE_HTTP_ADDR="+public, "KUKIE_ADMIN_ADDR="+admin, "KUKIE_DATABASE_URL="+pgtest.MustCreateDatabase(t))
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	// Its own process group, killed at cleanup; and killed with the test
	// binary should that die first (a -timeout panic runs no cleanup).
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.done <- m.cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL) // a failed test leaves nothing behind
	})
	// A deadline only against hangs: the README gives the stages' times.
	deadline := time.After(15 * time.Minute)
	for !strings.Contains(m.out.String(), worldReady) {
		select {
		case err := <-m.done:
			t.Fatalf("make run ended (%v) before the world was ready:\n%s", err, m.out)
		case <-deadline:
			t.Fatalf("make run: no %q after 15 minutes:\n%s", worldReady, m.out)
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("make run: the world was ready after %.0f s; stages:\n%s", time.Since(start).Seconds(), stageLines(m.out.String()))
	return m
}

// vars are the values the lines use: the API, the printed tokens and the
// world's values.
func (m *makeRun) vars(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dev, "sandbox", "world.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w struct {
		Stage string            `json:"stage"`
		Vars  map[string]string `json:"vars"`
	}
	if err := json.Unmarshal(b, &w); err != nil || w.Stage != tryit.StageCluster {
		t.Fatalf("world.json: stage %q, %v", w.Stage, err)
	}
	vars := w.Vars
	for _, line := range strings.Split(m.out.String(), "\n") {
		for _, tok := range []string{"AGENT", "MEMBER", "ADMIN"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "export "+tok+"="); ok {
				vars[tok] = v
			}
		}
	}
	for _, kv := range m.cmd.Env {
		if v, ok := strings.CutPrefix(kv, "KUKIE_HTTP_ADDR="); ok {
			vars["API"] = "http://" + v
		}
	}
	if vars["AGENT"] == "" || vars["ADMIN"] == "" || vars["MEMBER"] == "" {
		t.Fatalf("make run printed no tokens:\n%s", m.out)
	}
	return vars
}

// sandboxCommand runs the kukie-sandbox binary make run built, as the
// printed lines do.
func (m *makeRun) sandboxCommand(ctx context.Context, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(m.dev, "bin", "kukie-sandbox"), args...)
	cmd.Dir = m.root
	cmd.Env = append(environ(), "KUKIE_DEV_DIR="+m.dev)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kukie-sandbox %s: %w: %s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// hangUp sends SIGHUP to make run alone, as a closed terminal does, and
// checks that every process it started (its descendants before the signal)
// is gone afterwards.
func (m *makeRun) hangUp(t *testing.T) {
	t.Helper()
	before := descendants(m.cmd.Process.Pid)
	if len(before) < 4 { // server, sandbox, kube-apiserver, etcd at least
		t.Errorf("make run's processes: %v; want the server, the sandbox, kube-apiserver and etcd", before)
	}
	if err := m.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("make run did not end after SIGHUP:\n%s", m.out)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for pid, cmdline := range before {
			if now, ok := readCmdline(pid); ok && now == cmdline {
				left = append(left, fmt.Sprintf("%d %s", pid, cmdline))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running a minute after make run ended on SIGHUP:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// descendants maps every process below pid to its command line.
func descendants(pid int) map[int]string {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		var state string
		var ppid int
		if _, err := fmt.Sscan(rest, &state, &ppid); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := map[int]string{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if cmdline, ok := readCmdline(c); ok {
				out[c] = cmdline
			}
			queue = append(queue, c)
		}
	}
	return out
}

func readCmdline(pid int) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "", false // gone, or a zombie
	}
	return string(b), true
}

// stageLines are make run's stage announcements, with their times.
func stageLines(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "make run: [") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// environ is this process's environment without the variables make run
// and the server read, which the test sets itself.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUKIE_") {
			env = append(env, kv)
		}
	}
	return env
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and readers at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// pickTwo is two distinct free addresses: the public and admin listeners.
func pickTwo(t *testing.T) (string, string) {
	a := freeport.Addrs(t, 2)
	return a[0], a[1]
}
