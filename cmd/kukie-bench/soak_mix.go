package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
)

const (
	soakCluster = "soak"
	soakTeam    = "soak"
)

// The routes of the mix, as the tables name them.
const (
	routeList      = "GET …/argocd/applications"
	routeDetail    = "GET …/argocd/applications/{app_id}"
	routeHistory   = "GET …/applications/{app_id}/kukie-history"
	routeOwnership = "POST …/argocd/ownership (5 resources)"
	routePlans     = "GET /v1/plans"
	routeCreate    = "POST /v1/plans (apply_manifest)"
	routeApprove   = "POST /v1/plans/{id}/approve"
	routeResult    = "POST /v1/plans/{id}/result"
)

var soakRoutes = []string{routeList, routeDetail, routeHistory, routeOwnership, routePlans, routeCreate, routeApprove, routeResult}

// soakOp is one kind of step of a client's loop, with its weight: people
// mostly look at lists and apps; the agent checks ownership and walks a
// plan through create, approve (a person) and result, one step per turn.
type soakOp struct {
	name   string
	weight int
}

var soakOps = []soakOp{
	{"list", 30}, {"detail", 30}, {"history", 10}, {"plans", 10}, {"ownership", 8}, {"plan step", 12},
}

// soakTargets are fixture resources (internal/testkit/k8stest/testdata): the
// ownership requests check all five, plans touch one to three of them.
var soakTargets = []struct{ group, kind, namespace, name string }{
	{"apps", "Deployment", "sandbox-plain", "web"},
	{"", "Service", "sandbox-plain", "web"},
	{"apps", "Deployment", "sandbox-helm", "worker"},
	{"", "ConfigMap", "sandbox-helm", "worker-config"},
	{"apps", "Deployment", "payments", "api"},
}

// historyApps are the fixture apps that manage soakTargets, whose Kukie
// history the plans fill; the mix asks for them half the time.
var historyApps = []string{"sandbox-plain", "sandbox-helm", "team-apps_payments"}

// soakMix is the request mix against one server: the URLs, the app ids
// found in the first list, and each client's tokens (an agent and a person
// acting for the same user, so the agent may report its plans' results).
type soakMix struct {
	api       string
	apps      []string
	ownership string // the request body
	agent     []string
	human     []string
	transport *http.Transport
	client    *http.Client
}

func newSoakMix(api string, o soakOptions) (*soakMix, error) {
	m := &soakMix{api: "http://" + api}
	m.transport = &http.Transport{MaxIdleConnsPerHost: o.clients, MaxConnsPerHost: o.clients}
	m.client = &http.Client{Transport: m.transport, Timeout: 90 * time.Second} // above the server's WriteTimeout
	exp := time.Now().Add(o.runFor + time.Hour)
	for c := range o.clients {
		user := fmt.Sprintf("soak-user-%02d", c)
		role := []string{"member", "admin"}[c%2]
		agent, err := authtest.HS256([]byte(secret), authtest.Claims{Sub: user, Team: soakTeam, Roles: []string{"agent"}, Exp: exp})
		if err != nil {
			return nil, err
		}
		human, err := authtest.HS256([]byte(secret), authtest.Claims{Sub: user, Team: soakTeam, Roles: []string{role}, Exp: exp})
		if err != nil {
			return nil, err
		}
		m.agent, m.human = append(m.agent, agent), append(m.human, human)
	}
	var refs []string
	for _, t := range soakTargets {
		refs = append(refs, fmt.Sprintf(`{"group":%q,"kind":%q,"namespace":%q,"name":%q}`, t.group, t.kind, t.namespace, t.name))
	}
	m.ownership = `{"tool":"apply_manifest","resources":[` + strings.Join(refs, ",") + `]}`

	res, body, err := m.do(m.human[0], "GET", m.appsURL(""), "")
	if err != nil || res != 200 {
		return nil, fmt.Errorf("first list: %d %v %.200s", res, err, body)
	}
	var list struct {
		Applications []struct {
			ID string `json:"id"`
		} `json:"applications"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("first list: %w", err)
	}
	for _, a := range list.Applications {
		m.apps = append(m.apps, a.ID)
	}
	for _, id := range historyApps {
		if !strings.Contains(string(body), `"id":"`+id+`"`) {
			return nil, fmt.Errorf("first list: no app %s among %d", id, len(m.apps))
		}
	}
	return m, nil
}

func (m *soakMix) appsURL(suffix string) string {
	return m.api + "/v1/clusters/" + soakCluster + "/argocd/applications" + suffix
}

// weights describes the mix for the report.
func (m *soakMix) weights() string {
	var parts []string
	for _, op := range soakOps {
		parts = append(parts, fmt.Sprintf("%s %d%%", op.name, op.weight))
	}
	return strings.Join(parts, ", ") + " (a plan step is the client's next of create → approve → result)"
}

func (m *soakMix) closeConnections() { m.transport.CloseIdleConnections() }

// do sends one request and reads the whole answer.
func (m *soakMix) do(token, method, u, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := m.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// run starts clients loops for d and calls atWarmup once, in its own
// goroutine, when warmup has passed; it returns when every client has
// finished its last request and atWarmup has returned.
func (m *soakMix) run(clients int, d, warmup time.Duration, atWarmup func()) soakResult {
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	total := soakResult{routes: soakRoutes, stats: map[string]*routeStats{}}
	for _, r := range soakRoutes {
		total.stats[r] = &routeStats{}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(warmup)
		atWarmup()
	})
	for c := range clients {
		wg.Go(func() {
			cl := &soakClient{mix: m, c: c, start: start, rng: rand.New(rand.NewPCG(uint64(c), 13)), stats: map[string]*routeStats{}}
			for _, r := range soakRoutes {
				cl.stats[r] = &routeStats{}
			}
			for time.Now().Before(deadline) {
				cl.step()
			}
			mu.Lock()
			for r, s := range cl.stats {
				total.stats[r].merge(s)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	total.elapsed = time.Since(start)
	return total
}

// soakClient is one client's loop state: its random source, the plan it
// is walking through the lifecycle, and its own stats.
type soakClient struct {
	mix   *soakMix
	c     int
	start time.Time // of the load
	rng   *rand.Rand
	n     int
	plan  string // "" or the id of its plan
	state string // the plan's status: pending or approved
	stats map[string]*routeStats
}

func (cl *soakClient) step() {
	cl.n++
	k := cl.rng.IntN(100)
	op := soakOps[len(soakOps)-1].name
	for _, o := range soakOps {
		if k < o.weight {
			op = o.name
			break
		}
		k -= o.weight
	}
	m := cl.mix
	switch op {
	case "list":
		cl.send(routeList, m.human[cl.c], "GET", m.appsURL(""), "", 200, nil)
	case "detail":
		cl.send(routeDetail, m.human[cl.c], "GET", m.appsURL("/"+url.PathEscape(m.apps[cl.rng.IntN(len(m.apps))])), "", 200, nil)
	case "history":
		app := m.apps[cl.rng.IntN(len(m.apps))]
		if cl.rng.IntN(2) == 0 {
			app = historyApps[cl.rng.IntN(len(historyApps))]
		}
		cl.send(routeHistory, m.human[cl.c], "GET", m.appsURL("/"+url.PathEscape(app)+"/kukie-history"), "", 200, nil)
	case "plans":
		q := []string{"", "?cluster_id=" + soakCluster, "?status=approved", "?kind=deployment&namespace=sandbox-plain&name=web"}[cl.rng.IntN(4)]
		cl.send(routePlans, m.human[cl.c], "GET", m.api+"/v1/plans"+q, "", 200, nil)
	case "ownership":
		cl.send(routeOwnership, m.agent[cl.c], "POST", m.api+"/v1/clusters/"+soakCluster+"/argocd/ownership", m.ownership, 200, func(body []byte) string {
			switch {
			case !strings.Contains(string(body), `"skipped":null`):
				cl.stats[routeOwnership].skipped++ // the answer says why; it never blocks a change
			case !strings.Contains(string(body), `"checked":5`):
				return fmt.Sprintf("not all 5 resources checked, nothing skipped: %.300s", body)
			}
			return ""
		})
	default:
		cl.planStep()
	}
}

// planStep moves the client's plan one step: create, approve, result.
// A plan that meets a 4xx is dropped (the 4xx is reported).
func (cl *soakClient) planStep() {
	m := cl.mix
	switch cl.state {
	case "":
		var refs []string
		for _, i := range cl.rng.Perm(len(soakTargets))[:1+cl.rng.IntN(3)] {
			t := soakTargets[i]
			refs = append(refs, fmt.Sprintf(`{"group":%q,"kind":%q,"namespace":%q,"name":%q}`, t.group, t.kind, t.namespace, t.name))
		}
		body := fmt.Sprintf(`{"cluster_id":%q,"conversation_id":"soak-%02d-%d","visibility":"shared","tool":"apply_manifest",`+
			`"command":"kubectl apply -f change.yaml","resources":[%s],"payload":{"manifest":"kind: ConfigMap"}}`,
			soakCluster, cl.c, cl.n, strings.Join(refs, ","))
		var id string
		if cl.send(routeCreate, m.agent[cl.c], "POST", m.api+"/v1/plans", body, 201, func(b []byte) string {
			var p struct{ ID, Status string }
			if err := json.Unmarshal(b, &p); err != nil || p.ID == "" || p.Status != "pending" {
				return fmt.Sprintf("not a pending plan: %.200s", b)
			}
			id = p.ID
			return ""
		}) {
			cl.plan, cl.state = id, "pending"
		}
	case "pending":
		approved := wantStatus("approved")
		if cl.send(routeApprove, m.human[cl.c], "POST", m.api+"/v1/plans/"+cl.plan+"/approve", "", 200, func(b []byte) string {
			if strings.Contains(string(b), `"recheck_skipped"`) {
				cl.stats[routeApprove].skipped++
			}
			return approved(b)
		}) {
			cl.state = "approved"
		} else {
			cl.plan, cl.state = "", ""
		}
	default:
		outcome := "executed"
		if cl.rng.IntN(10) == 0 {
			outcome = "failed"
		}
		cl.send(routeResult, m.agent[cl.c], "POST", m.api+"/v1/plans/"+cl.plan+"/result",
			fmt.Sprintf(`{"outcome":%q,"output":"configmap/worker-config configured"}`, outcome), 200, wantStatus(outcome))
		cl.plan, cl.state = "", ""
	}
}

// wantStatus checks that a plan answer has the given status.
func wantStatus(status string) func([]byte) string {
	return func(b []byte) string {
		var p struct{ Status string }
		if err := json.Unmarshal(b, &p); err != nil || p.Status != status {
			return fmt.Sprintf("plan not %s: %.200s", status, b)
		}
		return ""
	}
}

// send makes one request of route, records it and reports whether it got
// want and check (if any) found the body right.
func (cl *soakClient) send(route, token, method, u, body string, want int, check func([]byte) string) bool {
	t0 := time.Now()
	status, out, err := cl.mix.do(token, method, u, body)
	took := time.Since(t0)
	failure := ""
	switch {
	case err != nil:
		failure = fmt.Sprintf("%s %s: %v", method, u, err)
	case status != want:
		failure = fmt.Sprintf("%s %s: %d %.300s", method, u, status, out)
	case check != nil:
		if f := check(out); f != "" {
			failure = fmt.Sprintf("%s %s: %s", method, u, f)
		}
	}
	cl.stats[route].add(time.Since(cl.start), took, status, failure)
	return failure == ""
}
