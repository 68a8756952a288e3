package main

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/tcpproxy"
)

// The shrunk cluster budgets of the fault tests: each cluster call gets
// faultCallTimeout (KUKIE_CLUSTER_TIMEOUT), a whole ownership detection
// faultDetection (KUKIE_DETECTION_BUDGET), in the defaults' ratio.
const (
	faultCallTimeout = 3 * time.Second
	faultDetection   = 6 * time.Second
)

// apiFault is what the HTTP fault proxy does to every request.
type apiFault struct {
	// status, when set, answers every request with this status and a
	// Kubernetes Status body, as the API server (or a gateway) would.
	status int
	// retryAfter is the Retry-After header of the answer, in seconds.
	retryAfter string
	// truncate forwards the request, then cuts the answer after half of
	// its body.
	truncate bool
	// http1 serves HTTP/1.1 only; the API server, and the proxy by
	// default, speak HTTP/2.
	http1 bool
}

// faultProxy is a TLS-terminating HTTP proxy in front of the real API
// server, which the cluster's kubeconfig trusts by its own CA. It
// authenticates to the API server as the admin user itself.
type faultProxy struct {
	srv *httptest.Server
	// lists counts the Application LISTs that reached it, client-go's
	// retries included.
	lists atomic.Int64
}

func startFaultProxy(t *testing.T, k *k8stest.Cluster, f apiFault) *faultProxy {
	t.Helper()
	target, err := url.Parse(k.Host())
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := rest.TransportFor(k.Config(k8stest.UserAdmin))
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	forward := &httputil.ReverseProxy{Transport: upstream, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Header.Del("Authorization") // the upstream transport authenticates
	}}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/applications") {
			p.lists.Add(1)
		}
		switch {
		case f.status != 0:
			writeStatus(w, f.status, f.retryAfter)
		case f.truncate:
			truncated(w, r, upstream, target)
		default:
			forward.ServeHTTP(w, r)
		}
	}))
	p.srv.EnableHTTP2 = !f.http1
	p.srv.StartTLS()
	t.Cleanup(p.srv.Close)
	return p
}

// writeStatus answers as the API server answers a failed request.
func writeStatus(w http.ResponseWriter, status int, retryAfter string) {
	reasons := map[int]metav1.StatusReason{http.StatusForbidden: metav1.StatusReasonForbidden,
		http.StatusInternalServerError: metav1.StatusReasonInternalError, http.StatusTooManyRequests: metav1.StatusReasonTooManyRequests}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(status), Reason: reasons[status], Message: "injected by the test's proxy"})
}

// truncated forwards r and sends back the status, the headers and half of
// the body, announcing all of it, then breaks the answer off: HTTP/1.1
// closes the connection, HTTP/2 resets the stream.
func truncated(w http.ResponseWriter, r *http.Request, upstream http.RoundTripper, target *url.URL) {
	out := r.Clone(r.Context())
	out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = target.Scheme, target.Host, target.Host, ""
	out.Header.Del("Authorization")
	res, err := upstream.RoundTrip(out)
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for k, v := range res.Header {
		if k != "Content-Length" && k != "Content-Encoding" && k != "Transfer-Encoding" {
			w.Header()[k] = v
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(res.StatusCode)
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// kubeconfig is a kubeconfig for the proxy, trusting its CA.
func (p *faultProxy) kubeconfig() []byte {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, certificate-authority-data: %s}}]
users: [{name: u, user: {token: "dropped-by-the-proxy"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, p.srv.URL, base64.StdEncoding.EncodeToString(ca))
}

// kubeconfigVia is the admin's kubeconfig of k with its server replaced by
// addr: the API server's own certificate (valid for 127.0.0.1) and client
// certificate, through a TCP proxy.
func kubeconfigVia(t *testing.T, k *k8stest.Cluster, addr string) []byte {
	t.Helper()
	b, err := k.Kubeconfig(k8stest.UserAdmin)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// clusterFault is one static cluster reached through a fault, and the
// answers the server must give for it.
type clusterFault struct {
	name       string
	kubeconfig []byte
	proxy      *faultProxy // nil for TCP faults
	// list is the app list's status and problem code (200: the 12 apps);
	// skipped the ownership detection's skip reason ("": nothing skipped);
	// canI the access question's status and code.
	listStatus int
	listCode   string
	skipped    string
	canIStatus int
	canICode   string
}

// TestClusterFaults puts a fault between the server and a real
// kube-apiserver for each of its clusters — refused, reset, black-holed,
// slower than twice the budget, 403/500/429 answers, answers cut off
// midway — and checks the answers of the app list, ownership detection and
// the access question: an unusable cluster is a 502 cluster_unreachable,
// never a 500 or a hang, and detection always answers 200 with the
// reason it skipped.
func TestClusterFaults(t *testing.T) {
	k, err := k8stest.Start(k8stest.Options{ArgoCD: true})
	if err != nil {
		t.Fatalf("a Kubernetes API server is needed (make tools builds it): %v", err)
	}
	t.Cleanup(func() { _ = k.Stop() })

	unreachable := func(name string, kubeconfig []byte, proxy *faultProxy) clusterFault {
		return clusterFault{name: name, kubeconfig: kubeconfig, proxy: proxy, listStatus: 502, listCode: "cluster_unreachable",
			skipped: "cluster_unreachable", canIStatus: 502, canICode: "cluster_unreachable"}
	}
	apiserver, err := url.Parse(k.Host())
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(mode tcpproxy.Mode, latency time.Duration) []byte {
		p := tcpproxy.MustStart(t, apiserver.Host)
		p.SetMode(mode)
		p.SetLatency(latency)
		return kubeconfigVia(t, k, p.Addr())
	}
	viaHTTP := func(name string, f apiFault) clusterFault {
		p := startFaultProxy(t, k, f)
		return unreachable(name, p.kubeconfig(), p)
	}
	withSkip := func(f clusterFault, reason string) clusterFault {
		f.skipped = reason
		return f
	}
	healthy := startFaultProxy(t, k, apiFault{})
	faults := []clusterFault{
		{name: "healthy-tcp", kubeconfig: tcp(tcpproxy.Forward, 0), listStatus: 200, canIStatus: 200},
		{name: "healthy-http", kubeconfig: healthy.kubeconfig(), proxy: healthy, listStatus: 200, canIStatus: 200},
		unreachable("closed-port", kubeconfigVia(t, k, k8stest.ClosedAddr(t)), nil),
		unreachable("reset", tcp(tcpproxy.Reset, 0), nil),
		unreachable("black-hole", tcp(tcpproxy.BlackHole, 0), nil),
		unreachable("twice-the-budget-late", tcp(tcpproxy.Forward, 2*faultDetection), nil),
		// Every call refused: the list's discovery fails too (502), and
		// detection says the object may not be read.
		withSkip(viaHTTP("status-403", apiFault{status: 403}), "argocd_forbidden"),
		viaHTTP("status-500", apiFault{status: 500}),
		viaHTTP("status-429", apiFault{status: 429, retryAfter: "1"}),
		viaHTTP("status-429-retry-in-an-hour", apiFault{status: 429, retryAfter: "3600"}),
		viaHTTP("truncated-http2", apiFault{truncate: true}),
		viaHTTP("truncated-http1", apiFault{truncate: true, http1: true}),
	}

	dir := t.TempDir()
	var clusters strings.Builder
	clusters.WriteString("clusters:\n")
	for _, f := range faults {
		path := filepath.Join(dir, f.name+".kubeconfig")
		writeFile(t, path, string(f.kubeconfig))
		fmt.Fprintf(&clusters, "  - {id: %s, team: team-e2e, name: %s, kubeconfig: %s, access_level: full}\n", f.name, f.name, path)
	}
	writeFile(t, filepath.Join(dir, "clusters.yaml"), clusters.String())
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE": filepath.Join(dir, "clusters.yaml"),
		"KUKIE_CLUSTER_TIMEOUT":      faultCallTimeout.String(),
		"KUKIE_DETECTION_BUDGET":     faultDetection.String(),
	})
	member, agent := e2eToken(t, "member"), e2eToken(t, "agent")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", grepLines(s.logs.String(), `"err"`))
		}
	})

	// The healthy clusters first, on a quiet machine; then the faulty ones
	// all at once: most of their answers take a budget to come.
	asked := make([]clusterAnswers, len(faults))
	for i, f := range faults {
		if f.listStatus == 200 {
			asked[i] = askCluster(s.public+"/v1/clusters/"+f.name, member, agent)
		}
	}
	var wg sync.WaitGroup
	for i, f := range faults {
		if f.listStatus != 200 {
			wg.Go(func() { asked[i] = askCluster(s.public+"/v1/clusters/"+f.name, member, agent) })
		}
	}
	wg.Wait()
	wantNoServerErrors(t, s)
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			a := asked[i]
			for _, r := range []answer{a.list, a.ownership, a.canI} {
				if r.err != nil {
					t.Fatalf("no answer: %v", r.err)
				}
			}
			if a.list.status != f.listStatus || !hasCode(a.list.body, f.listCode) ||
				(f.listStatus == 200 && !strings.Contains(a.list.body, `"total":12`)) {
				t.Errorf("app list: %d %.300s, want %d %s", a.list.status, a.list.body, f.listStatus, f.listCode)
			}
			var det struct {
				Skipped *struct{ Reason string }
				ArgoCD  *struct{ Level string } `json:"argocd"`
			}
			decodeJSON(t, a.ownership.body, &det)
			switch {
			case a.ownership.status != 200:
				t.Errorf("ownership: %d %.300s, want 200", a.ownership.status, a.ownership.body)
			case f.skipped == "" && (det.Skipped != nil || det.ArgoCD == nil || det.ArgoCD.Level != "self_heal"):
				t.Errorf("ownership of a healthy cluster: %.300s", a.ownership.body)
			case f.skipped != "" && (det.Skipped == nil || det.Skipped.Reason != f.skipped):
				t.Errorf("ownership: %.300s, want skipped %s", a.ownership.body, f.skipped)
			}
			if a.canI.status != f.canIStatus || !hasCode(a.canI.body, f.canICode) {
				t.Errorf("can-i: %d %.300s, want %d %s", a.canI.status, a.canI.body, f.canIStatus, f.canICode)
			}
			// client-go retries a 429 as often as Retry-After allows, up to
			// ten times: the budget ends the retries (one attempt, and one
			// after each second of Retry-After within it), not that count.
			if f.proxy != nil && f.listStatus != 200 {
				if n := f.proxy.lists.Load(); n == 0 || n > 1+int64(faultCallTimeout/time.Second) {
					t.Errorf("%d LISTs reached the proxy", n)
				}
			}
		})
	}
}

// answer is a status and body, or the error of a request that got none.
type answer struct {
	status int
	body   string
	err    error
}

// clusterAnswers are a cluster's answers to the three calls that read it.
type clusterAnswers struct{ list, ownership, canI answer }

// askCluster lists the cluster's apps, detects the ownership of a tracked
// Deployment and asks whether Kukie may get pods; safe to call from many
// goroutines (it does not stop the test).
func askCluster(base, member, agent string) clusterAnswers {
	return clusterAnswers{
		list: request("GET", base+"/argocd/applications?refresh=true", member, ""),
		ownership: request("POST", base+"/argocd/ownership", agent,
			`{"resources":[{"kind":"deploy","namespace":"sandbox-plain","name":"web"}]}`),
		canI: request("POST", base+"/access/can-i", agent, `{"verb":"get","group":"","resource":"pods","namespace":"default"}`),
	}
}

// hangTimeout is the test clients' timeout: it only catches a hang, past
// the server's own 30 s bound on a request.
const hangTimeout = 90 * time.Second

// request is call for goroutines: it returns what happened instead of
// stopping the test.
func request(method, u, tok, body string) answer {
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := (&http.Client{Timeout: hangTimeout}).Do(req)
	if err != nil {
		return answer{err: fmt.Errorf("%s %s: %w", method, u, err)}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, body: string(b), err: err}
}

// wantNoServerErrors fails the test when the server answered any request
// with a 500 (an unclassified failure), as its access log says.
func wantNoServerErrors(t *testing.T, s *server) {
	t.Helper()
	if lines := grepLines(s.logs.String(), `"status":500,`); lines != "" {
		t.Errorf("the server answered 500:\n%s", lines)
	}
}

// hasCode reports whether a problem body carries code ("" when no problem
// is expected).
func hasCode(body, code string) bool {
	return code == "" || strings.Contains(body, `"code":"`+code+`"`)
}
