// Command kukie-bench measures the Argo CD endpoints (`make bench`): it
// starts the sandbox API server with 500 apps, runs the real kukie-server
// binary against it, and prints a Markdown table of
//  1. cached list throughput and latency beside a minimal net/http server
//     returning the same bytes (the ratio is the figure);
//  2. cluster LIST calls (from the server's metrics) while clients poll
//     list and detail, without and with refresh=true;
//  3. cold list latency for 500 apps beside kubectl get applications -A -o json;
//  4. ownership detection of 5 resources, back to back, beside kubectl;
//  5. concurrent ownership detections on the one cluster (a fixed number of
//     requests), where the per-cluster client rate limit shows.
//
// Phases are skipped with zero durations or counts; -cluster-qps and
// -cluster-burst set the server's KUKIE_CLUSTER_QPS and KUKIE_CLUSTER_BURST.
//
// `kukie-bench history` measures the Kukie history query over a million
// plans; `kukie-bench scaleout [-phases replicas,cold-ratio,memory,sidebar]`
// measures issue 12's scale-out figures (several replicas on one database,
// the cold list against the raw LIST, memory and a heap profile with 1,000
// clusters, the sidebar of 200 clusters), each beside the figure;
// `kukie-bench soak [-for 5m -clients 64 -warmup 1m]` runs issue 13's
// bounded load and soak (`make soak`, see soak.go); `kukie-bench packbomb
// -server BIN` measures issue 19's peak memory while the server fetches a
// 768 MiB pack bomb (see packbomb.go).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
)

const secret = "kukie-bench-secret-kukie-bench-secret-0123"

func main() {
	if len(os.Args) == 4 && os.Args[1] == "-static-server" {
		staticServer(os.Args[2], os.Args[3])
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "history" {
		if err := historyBench(200); err != nil {
			fmt.Fprintln(os.Stderr, "kukie-bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "scaleout" {
		if err := scaleout(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kukie-bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "soak" {
		if err := soak(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kukie-bench:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) >= 2 && os.Args[1] == "packbomb" {
		if err := packBomb(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "kukie-bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kukie-bench:", err)
		os.Exit(1)
	}
}

// staticServer is the baseline: a minimal net/http server answering every
// request with the same bytes.
func staticServer(addr, file string) {
	body, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
}

type options struct {
	server                   string
	apps                     int
	listFor, pollFor         time.Duration
	listClients, pollClients int
	coldRuns                 int
	detectRuns               int
	detectClients            int
	detectRequests           int
	clusterQPS, clusterBurst string
}

func run() error {
	var o options
	flag.StringVar(&o.server, "server", "bin/kukie-server", "the kukie-server binary")
	flag.IntVar(&o.apps, "apps", 500, "Applications in the cluster")
	flag.DurationVar(&o.listFor, "list-for", 10*time.Second, "duration of each cached-list run")
	flag.IntVar(&o.listClients, "list-clients", 64, "concurrent clients for the cached list")
	flag.DurationVar(&o.pollFor, "poll-for", 60*time.Second, "duration of each polling run (0 skips them)")
	flag.IntVar(&o.pollClients, "poll-clients", 100, "concurrent clients polling list and detail")
	flag.IntVar(&o.coldRuns, "cold-runs", 10, "cold list measurements")
	flag.IntVar(&o.detectRuns, "detect-runs", 30, "ownership detections of 5 resources, back to back")
	flag.IntVar(&o.detectClients, "detect-clients", 8, "concurrent clients of the concurrent detection phase")
	flag.IntVar(&o.detectRequests, "detect-requests", 200, "detections in the concurrent phase (0 skips it)")
	flag.StringVar(&o.clusterQPS, "cluster-qps", "", "the server's KUKIE_CLUSTER_QPS (empty: its default)")
	flag.StringVar(&o.clusterBurst, "cluster-burst", "", "the server's KUKIE_CLUSTER_BURST (empty: its default)")
	flag.Parse()

	step("starting the sandbox API server")
	cluster, err := k8stest.Start(k8stest.Options{ArgoCD: true})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if err := addApps(cluster, o.apps-12); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kukie-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig, err := cluster.Kubeconfig(k8stest.UserAdmin)
	if err != nil {
		return err
	}
	kcPath := filepath.Join(dir, "admin.kubeconfig")
	clustersPath := filepath.Join(dir, "clusters.yaml")
	if err := os.WriteFile(kcPath, kubeconfig, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(clustersPath, fmt.Appendf(nil,
		"clusters:\n  - {id: bench, team: bench, kubeconfig: %s, access_level: full}\n", kcPath), 0o600); err != nil {
		return err
	}
	dbURL, dropDB, err := createDatabase()
	if err != nil {
		return err
	}
	defer dropDB()

	step("starting " + o.server)
	var extra []string
	if o.clusterQPS != "" {
		extra = append(extra, "KUKIE_CLUSTER_QPS="+o.clusterQPS)
	}
	if o.clusterBurst != "" {
		extra = append(extra, "KUKIE_CLUSTER_BURST="+o.clusterBurst)
	}
	srv, err := startServer(o.server, dbURL, clustersPath, extra...)
	if err != nil {
		return err
	}
	defer srv.stop()
	api, admin := srv.api, srv.admin
	tok, err := authtest.HS256([]byte(secret), authtest.Claims{Sub: "bench", Team: "bench", Roles: []string{"member"}})
	if err != nil {
		return err
	}
	base := "http://" + api + "/v1/clusters/bench/argocd/applications"
	b := &bench{token: tok, metrics: "http://" + admin + "/metrics"}

	// 1. Cached list beside a minimal server returning the same bytes.
	body, err := b.get(base)
	if err != nil {
		return err
	}
	bodyPath := filepath.Join(dir, "list.json")
	if err := os.WriteFile(bodyPath, body, 0o600); err != nil {
		return err
	}
	step(fmt.Sprintf("cached list: %d clients for %s (response %d KiB)", o.listClients, o.listFor, len(body)/1024))
	kukie := b.load(o.listClients, o.listFor, func(int) string { return base }) // a zero duration sends nothing
	static := freeAddr()
	self, _ := os.Executable()
	baseline := exec.Command(self, "-static-server", static, bodyPath)
	if err := baseline.Start(); err != nil {
		return err
	}
	defer func() { _ = baseline.Process.Kill(); _ = baseline.Wait() }()
	if err := waitReady("http://" + static + "/"); err != nil {
		return err
	}
	step("baseline net/http server, same load")
	plain := b.load(o.listClients, o.listFor, func(int) string { return "http://" + static + "/" })

	// 2. LIST calls while clients poll list and detail.
	poll := func(refresh bool) (result, float64, error) {
		before, err := b.listCalls()
		if err != nil {
			return result{}, 0, err
		}
		suffix := ""
		if refresh {
			suffix = "?refresh=true"
		}
		res := b.load(o.pollClients, o.pollFor, func(i int) string {
			if i%2 == 0 {
				return base + suffix
			}
			return base + "/sandbox-plain"
		})
		after, err := b.listCalls()
		return res, after - before, err
	}
	var pollRes, refreshRes result
	var pollLists, refreshLists float64
	if o.pollFor > 0 {
		time.Sleep(11 * time.Second) // start from an expired snapshot
		step(fmt.Sprintf("polling list and detail: %d clients for %s", o.pollClients, o.pollFor))
		if pollRes, pollLists, err = poll(false); err != nil {
			return err
		}
		step("polling with refresh=true on every list call")
		if refreshRes, refreshLists, err = poll(true); err != nil {
			return err
		}
	}

	// 3. Cold list (a read of the cluster every time) beside kubectl.
	step(fmt.Sprintf("cold list, %d runs", o.coldRuns))
	var cold, kubectl []time.Duration
	for range o.coldRuns {
		time.Sleep(2100 * time.Millisecond) // past the refresh floor
		start := time.Now()
		if _, err := b.get(base + "?refresh=true"); err != nil {
			return err
		}
		cold = append(cold, time.Since(start))
	}
	kubectlPath, err := kubectlBinary()
	if err != nil {
		return err
	}
	for range o.coldRuns {
		start := time.Now()
		cmd := exec.Command(kubectlPath, "--kubeconfig", kcPath, "get", "applications", "-A", "-o", "json")
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kubectl: %w", err)
		}
		kubectl = append(kubectl, time.Since(start))
	}

	// 4. Ownership detection of 5 resources beside the product's current
	// way: one kubectl process per lookup, plus one for the Applications.
	step(fmt.Sprintf("ownership detection, %d runs", o.detectRuns))
	targets := [][3]string{{"deploy", "sandbox-plain", "web"}, {"svc", "sandbox-plain", "web"},
		{"deploy", "sandbox-helm", "worker"}, {"cm", "sandbox-helm", "worker-config"}, {"deploy", "payments", "api"}}
	var detect, detectServer, kubectlDetect []time.Duration
	var body5 strings.Builder
	body5.WriteString(`{"resources":[`)
	for i, t := range targets {
		if i > 0 {
			body5.WriteString(",")
		}
		fmt.Fprintf(&body5, `{"kind":%q,"namespace":%q,"name":%q}`, t[0], t[1], t[2])
	}
	body5.WriteString("]}")
	agentTok, err := authtest.HS256([]byte(secret), authtest.Claims{Sub: "bench", Team: "bench", Roles: []string{"agent"}})
	if err != nil {
		return err
	}
	ownership := &detection{url: "http://" + api + "/v1/clusters/bench/argocd/ownership", body: body5.String(), token: agentTok}
	detectClient := &http.Client{Transport: &http.Transport{}}
	for range o.detectRuns {
		took, inServer, err := ownership.once(detectClient)
		if err != nil {
			return err
		}
		detect = append(detect, took)
		detectServer = append(detectServer, inServer)
	}
	if kubectlPath, err := kubectlBinary(); err == nil {
		for range min(o.detectRuns, 5) {
			t0 := time.Now()
			for _, t := range targets {
				cmd := exec.Command(kubectlPath, "--kubeconfig", kcPath, "get", t[0], "-n", t[1], t[2], "-o", "json")
				cmd.Stdout = io.Discard
				if err := cmd.Run(); err != nil {
					return fmt.Errorf("kubectl get %v: %w", t, err)
				}
			}
			cmd := exec.Command(kubectlPath, "--kubeconfig", kcPath, "get", "applications", "-A", "-o", "json")
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				return err
			}
			kubectlDetect = append(kubectlDetect, time.Since(t0))
		}
	}

	// 5. Concurrent detections on the one cluster, from a full token bucket.
	var concurrent result
	if o.detectRequests > 0 {
		time.Sleep(5 * time.Second) // the client's token bucket refills (burst/QPS is 2 s by default)
		step(fmt.Sprintf("concurrent ownership detection: %d clients, %d requests", o.detectClients, o.detectRequests))
		concurrent = ownership.load(o.detectClients, o.detectRequests)
	}

	fmt.Printf("\nServer: KUKIE_CLUSTER_QPS=%s KUKIE_CLUSTER_BURST=%s\n", orDefault(o.clusterQPS), orDefault(o.clusterBurst))
	fmt.Printf("\n| Measurement | Result |\n|---|---|\n")
	fmt.Printf("| Cached list, %d clients, %s: kukie-server | %s |\n", o.listClients, o.listFor, kukie)
	fmt.Printf("| Same bytes from a minimal net/http server | %s |\n", plain)
	fmt.Printf("| Ratio kukie / minimal (throughput) | %.2f |\n", kukie.rps()/plain.rps())
	fmt.Printf("| Poll list+detail, %d clients, %s: cluster LIST calls | %.0f (expected ≤ %d); %s |\n",
		o.pollClients, o.pollFor, pollLists, int(o.pollFor/(10*time.Second)), pollRes)
	fmt.Printf("| Same with refresh=true on every list call: LIST calls | %.0f (expected ≤ %d); %s |\n",
		refreshLists, int(o.pollFor/(2*time.Second)), refreshRes)
	fmt.Printf("| Cold list of %d apps (refresh=true), p50 / max | %s / %s |\n", o.apps, pct(cold, 50), pct(cold, 100))
	fmt.Printf("| kubectl get applications -A -o json, p50 / max | %s / %s |\n", pct(kubectl, 50), pct(kubectl, 100))
	fmt.Printf("| Ownership detection of 5 resources (POST …/ownership, %d runs), p50 / p99 | %s / %s |\n",
		len(detect), pct(detect, 50), pct(detect, 99))
	fmt.Printf("| … of which inside the server (duration_ms), p50 / p99 | %s / %s |\n", pct(detectServer, 50), pct(detectServer, 99))
	fmt.Printf("| Same with kubectl (5 gets + applications -A, %d runs), p50 / max | %s / %s |\n",
		len(kubectlDetect), pct(kubectlDetect, 50), pct(kubectlDetect, 100))
	fmt.Printf("| Concurrent detections of 5 resources, %d clients, %d requests, one cluster | %.1f detections/s (%d in %s), p50 %s, p99 %s, %d errors |\n",
		o.detectClients, o.detectRequests, concurrent.rps(), concurrent.n, concurrent.elapsed.Round(100*time.Millisecond),
		pct(concurrent.latencies, 50), pct(concurrent.latencies, 99), concurrent.errors)
	return nil
}

func orDefault(s string) string {
	if s == "" {
		return "(server default)"
	}
	return s
}

// detection is one ownership request: POST url with body as an agent.
type detection struct {
	url, body, token string
}

// once sends the request and returns its round trip and the server's own
// duration_ms; an answer that did not check all 5 resources is an error.
func (d *detection) once(client *http.Client) (took, inServer time.Duration, err error) {
	req, _ := http.NewRequest("POST", d.url, strings.NewReader(d.body))
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	took = time.Since(t0)
	if res.StatusCode != 200 || !strings.Contains(string(out), `"checked":5`) {
		return took, 0, fmt.Errorf("ownership: %d %s", res.StatusCode, out)
	}
	var answer struct {
		DurationMS int64 `json:"duration_ms"`
	}
	_ = json.Unmarshal(out, &answer)
	return took, time.Duration(answer.DurationMS) * time.Millisecond, nil
}

// load sends requests detections from clients goroutines at once and
// measures them together (an error is a failed or incomplete detection).
func (d *detection) load(clients, requests int) result {
	var next atomic.Int64
	return drive(clients, 60*time.Second, func() bool { return next.Add(1) <= int64(requests) },
		func(client *http.Client, _, _ int) (time.Duration, error) {
			took, _, err := d.once(client)
			return took, err
		})
}

// drive runs clients goroutines sharing one connection pool; each sends
// requests (send's c is the client's number, i counts its own requests)
// while more says so. It gathers every request's latency and counts the
// failed ones.
func drive(clients int, timeout time.Duration, more func() bool, send func(client *http.Client, c, i int) (time.Duration, error)) result {
	transport := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: transport, Timeout: timeout}
	defer transport.CloseIdleConnections()
	var errs atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for i := 0; more(); i++ {
				took, err := send(client, c, i)
				mine = append(mine, took)
				if err != nil {
					errs.Add(1)
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return result{n: int64(len(all)), errors: errs.Load(), elapsed: time.Since(start), latencies: all}
}

// step reports progress on stderr with the wall-clock time, so a slow
// phase shows.
func step(s string) { fmt.Fprintln(os.Stderr, "kukie-bench:", time.Now().Format("15:04:05"), s) }

// addApps creates n more Applications, each with a few resources, 8 at a
// time through the admin's client with client-go's default rate limit (5
// requests/s, which k8stest's own client keeps) lifted: 488 creates took
// 1.5 minutes at that rate.
func addApps(c *k8stest.Cluster, n int) error {
	cfg := c.Config(k8stest.UserAdmin)
	cfg.QPS, cfg.Burst = 1000, 1000
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	apps := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).
		Namespace("argocd")
	g, ctx := errgroup.WithContext(context.Background())
	g.SetLimit(8)
	for i := range n {
		g.Go(func() error {
			var obj map[string]any
			if err := yaml.Unmarshal(appYAML(i), &obj); err != nil {
				return err
			}
			if _, err := apps.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create Application app-%04d: %w", i, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// appYAML is the i-th generated Application: every 7th OutOfSync, every
// 11th Degraded, with a Deployment, a Service and a ConfigMap.
func appYAML(i int) []byte {
	sync, health := "Synced", "Healthy"
	if i%7 == 0 {
		sync = "OutOfSync"
	}
	if i%11 == 0 {
		health = "Degraded"
	}
	return fmt.Appendf(nil, `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app-%04d, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://github.com/example-org/app-%04d.git", targetRevision: main, path: deploy}
  destination: {server: "https://kubernetes.default.svc", namespace: app-%04d}
  syncPolicy: {automated: {selfHeal: %v, prune: true}}
status:
  sync: {status: %s, revision: 4f2c1e0}
  health: {status: %s}
  resources:
    - {group: apps, version: v1, kind: Deployment, namespace: app-%04d, name: web, status: %s, health: {status: %s}}
    - {version: v1, kind: Service, namespace: app-%04d, name: web, status: Synced, health: {status: Healthy}}
    - {version: v1, kind: ConfigMap, namespace: app-%04d, name: settings, status: Synced}
`, i, i, i, i%2 == 0, sync, health, i, sync, health, i, i)
}

func createDatabase() (string, func(), error) {
	admin := os.Getenv("KUKIE_TEST_DATABASE_URL")
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "kukie_bench_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, err
	}
	drop := func() {
		if c, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	}
	i := strings.LastIndex(admin, "/")
	rest := admin[i+1:]
	query := ""
	if q := strings.Index(rest, "?"); q >= 0 {
		query = rest[q:]
	}
	return admin[:i+1] + name + query, drop, nil
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after 60 s", url)
}

// kubectlBinary is the kubectl `make tools` built beside kube-apiserver.
func kubectlBinary() (string, error) {
	dir, err := k8stest.AssetsDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no kubectl in %s: run make tools", dir)
	}
	return path, nil
}

type bench struct {
	token   string
	metrics string
}

func (b *bench) get(url string) ([]byte, error) {
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", url, res.StatusCode, body)
	}
	return body, err
}

var listCallsLine = regexp.MustCompile(`(?m)^kukie_cluster_list_calls_total\{outcome="ok"\} (\S+)$`)

// listCalls reads the server's count of successful cluster LIST calls.
func (b *bench) listCalls() (float64, error) {
	res, err := http.Get(b.metrics)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	m := listCallsLine.FindSubmatch(body)
	if m == nil {
		return 0, nil
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

type result struct {
	n, errors int64
	elapsed   time.Duration
	latencies []time.Duration
}

func (r result) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r result) String() string {
	return fmt.Sprintf("%.0f req/s, p50 %s, p99 %s, %d errors", r.rps(), pct(r.latencies, 50), pct(r.latencies, 99), r.errors)
}

// load runs clients goroutines for d, each sending GET url(i) for its i-th
// request and reading the whole body.
func (b *bench) load(clients int, d time.Duration, url func(i int) string) result {
	return b.loadFrom(clients, d, func(_, i int) string { return url(i) })
}

// loadFrom is load where client c sends GET url(c, i) for its i-th request.
func (b *bench) loadFrom(clients int, d time.Duration, url func(c, i int) string) result {
	deadline := time.Now().Add(d)
	return b.loadWhile(clients, func() bool { return time.Now().Before(deadline) }, url)
}

// loadWhile is loadFrom while more says so.
func (b *bench) loadWhile(clients int, more func() bool, url func(c, i int) string) result {
	return drive(clients, 30*time.Second, more,
		func(client *http.Client, c, i int) (time.Duration, error) {
			req, _ := http.NewRequest("GET", url(c, i), nil)
			req.Header.Set("Authorization", "Bearer "+b.token)
			t0 := time.Now()
			res, err := client.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					err = fmt.Errorf("status %d", res.StatusCode)
				}
			}
			return time.Since(t0), err
		})
}

// pct returns the p-th percentile (100 = max), rounded for reading.
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s) - 1) * p / 100
	return s[i].Round(10 * time.Microsecond).String()
}
