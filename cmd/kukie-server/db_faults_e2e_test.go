package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/tcpproxy"
)

// planResources is how many resources each plan of the cut test names:
// a stored plan is complete when all of them are stored with it.
const planResources = 5

// createOutcome is what one plan create answered.
type createOutcome struct {
	key    string // its Idempotency-Key
	status int
	code   string // the problem's code
	planID string // of a 201
	err    error  // no answer at all
}

// createPlan posts a plan of planResources resources under key; it is
// safe to call from many goroutines (it does not stop the test).
func createPlan(base, tok, key string) createOutcome {
	var res strings.Builder
	for i := range planResources {
		if i > 0 {
			res.WriteString(",")
		}
		fmt.Fprintf(&res, `{"kind":"ConfigMap","namespace":"web","name":"cfg-%d"}`, i)
	}
	body := fmt.Sprintf(`{"cluster_id":"c1","conversation_id":%q,"visibility":"shared","tool":"apply_manifest",
		"command":"kubectl apply -f app.yaml","resources":[%s],"payload":{}}`, key, res.String())
	out := createOutcome{key: key}
	req, err := http.NewRequest("POST", base+"/v1/plans", strings.NewReader(body))
	if err != nil {
		out.err = err
		return out
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := (&http.Client{Timeout: hangTimeout}).Do(req)
	if err != nil {
		out.err = err
		return out
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var answer struct{ ID, Code string }
	_ = json.Unmarshal(b, &answer)
	out.status, out.code, out.planID = resp.StatusCode, answer.Code, answer.ID
	return out
}

// TestPlanCreatesAcrossDatabaseCut cuts the server's link to PostgreSQL
// (a proxy the test owns; the shared server keeps running) while agents
// create plans concurrently, then restores it. Every create answers 201
// with a stored plan or 503 unavailable — never a 500 or a hang — and every
// stored plan is whole: its row and all its resources, or nothing. The
// server recovers without a restart, and retrying the failed creates with
// their Idempotency-Keys leaves exactly one whole plan per key.
func TestPlanCreatesAcrossDatabaseCut(t *testing.T) {
	dbURL, link, s := serverBehindLink(t)
	tok := e2eToken(t, "agent")

	const workers = 6
	var (
		mu       sync.Mutex
		outcomes []createOutcome
		created  atomic.Int64 // 201s so far
		cut      atomic.Bool
		wg       sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			failedAfterCut := 0
			for i := 0; failedAfterCut < 3 && i < 500; i++ {
				o := createPlan(s.public, tok, fmt.Sprintf("cut-%d-%d", w, i))
				wasCut := cut.Load()
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
				if o.status == 201 {
					created.Add(1)
				} else if wasCut {
					failedAfterCut++
				}
			}
		})
	}
	// Cut while creates are in flight, once some have gone through.
	within(t, time.Minute, "the first creates", func() (bool, string) {
		return created.Load() >= 2*workers, fmt.Sprint(created.Load(), " created")
	})
	link.SetDown(true)
	cut.Store(true)
	wg.Wait()
	if status, body := call(t, "GET", s.admin+"/readyz", "", ""); status != 503 {
		t.Errorf("/readyz with the database cut: %d %s", status, body)
	}

	link.SetDown(false)
	recovered(t, s, tok)

	var failed []createOutcome
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			t.Errorf("create %s got no answer: %v", o.key, o.err)
		case o.status == 201:
		case o.status == 503 && o.code == "unavailable":
			failed = append(failed, o)
		default:
			t.Errorf("create %s: %d %q, want 201, or 503 unavailable", o.key, o.status, o.code)
		}
	}
	if len(failed) == 0 {
		t.Fatal("no create failed: the link was not cut while they ran")
	}
	db := mustConnect(t, dbURL) // directly, not through the cut link
	stored := storedPlans(t, db)
	for _, o := range outcomes {
		if o.status == 201 && stored[o.key].id != o.planID {
			t.Errorf("create %s answered 201 with plan %s; stored: %+v", o.key, o.planID, stored[o.key])
		}
	}
	// A 503 whose COMMIT reached PostgreSQL before the link broke has
	// stored its plan: the client cannot tell, which is what the
	// Idempotency-Key is for. Either way, nothing is half-written.
	lostAcks := 0
	for _, o := range failed {
		if _, ok := stored[o.key]; ok {
			lostAcks++
		}
	}
	t.Logf("%d creates: %d answered 503, %d of them stored before the link broke", len(outcomes), len(failed), lostAcks)
	wantWhole(t, stored)

	// The agent retries what failed, with the same keys: one plan per key.
	retryCreates(t, s, tok, failed, stored)
	stored = storedPlans(t, db)
	wantWhole(t, stored)
	wantNoServerErrors(t, s)
	for _, o := range outcomes {
		if stored[o.key].id == "" {
			t.Errorf("no plan for %s after the retries", o.key)
		}
	}
}

// TestDatabasePartition makes the link to PostgreSQL go silent — no reset,
// no close, nothing answered, as when the database's host vanishes from the
// network — while agents create and list plans. Each request answers 503
// unavailable once its own deadline passes (never a 500 or a hang) and
// /readyz fails at once; when the link heals, the server recovers without a
// restart, nothing is half-written, and retries with the same
// Idempotency-Keys leave one whole plan per key.
func TestDatabasePartition(t *testing.T) {
	dbURL, link, s := serverBehindLink(t)
	tok := e2eToken(t, "agent")
	for i := range 3 {
		if o := createPlan(s.public, tok, fmt.Sprintf("before-%d", i)); o.status != 201 {
			t.Fatalf("create before the partition: %+v", o)
		}
	}

	link.Partition(true)
	const creates = 6
	outcomes := make([]createOutcome, creates)
	lists := make([]answer, 2)
	var wg sync.WaitGroup
	for i := range creates {
		wg.Go(func() { outcomes[i] = createPlan(s.public, tok, fmt.Sprintf("partition-%d", i)) })
	}
	for i := range lists {
		wg.Go(func() { lists[i] = request("GET", s.public+"/v1/plans", tok, "") })
	}
	if status, body := call(t, "GET", s.admin+"/readyz", "", ""); status != 503 {
		t.Errorf("/readyz with the database partitioned: %d %s", status, body)
	}
	wg.Wait()
	for _, a := range lists {
		if a.err != nil || a.status != 503 || !hasCode(a.body, "unavailable") {
			t.Errorf("list while partitioned: %d %.300s %v, want 503 unavailable", a.status, a.body, a.err)
		}
	}
	for _, o := range outcomes {
		if o.err != nil || o.status != 503 || o.code != "unavailable" {
			t.Errorf("create %s while partitioned: %d %q %v, want 503 unavailable", o.key, o.status, o.code, o.err)
		}
	}

	link.Partition(false)
	recovered(t, s, tok)
	// What was held in the link reached PostgreSQL when it healed: a
	// create whose COMMIT was among it is stored though it answered 503.
	// Nothing is half-written, and the retries leave one plan per key.
	db := mustConnect(t, dbURL)
	stored := storedPlans(t, db)
	wantWhole(t, stored)
	retryCreates(t, s, tok, outcomes, stored)
	stored = storedPlans(t, db)
	wantWhole(t, stored)
	if len(stored) != 3+creates {
		t.Errorf("%d plans stored, want %d", len(stored), 3+creates)
	}
	wantNoServerErrors(t, s)
}

// serverBehindLink starts a server on a new database reached through a
// TCP proxy the test owns.
func serverBehindLink(t *testing.T) (dbURL string, link *tcpproxy.Proxy, s *server) {
	t.Helper()
	dbURL = pgtest.MustCreateDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	link = tcpproxy.MustStart(t, u.Host)
	u.Host = link.Addr()
	return dbURL, link, startServer(t, u.String(), nil)
}

// recovered waits until the server is ready and serves plans again.
func recovered(t *testing.T, s *server, tok string) {
	t.Helper()
	within(t, time.Minute, "recovery without a restart", func() (bool, string) {
		ready, _ := call(t, "GET", s.admin+"/readyz", "", "")
		listed, body := call(t, "GET", s.public+"/v1/plans", tok, "")
		return ready == 200 && listed == 200, body
	})
}

// retryCreates retries creates with their Idempotency-Keys: each answers
// 201, with the plan stored under its key when there was one.
func retryCreates(t *testing.T, s *server, tok string, creates []createOutcome, stored map[string]storedPlan) {
	t.Helper()
	for _, o := range creates {
		if r := createPlan(s.public, tok, o.key); r.status != 201 || (stored[o.key].id != "" && r.planID != stored[o.key].id) {
			t.Errorf("retry of %s: %d %q plan %s, stored before %+v", o.key, r.status, r.code, r.planID, stored[o.key])
		}
	}
}

// storedPlan is one plan row and how many resources are stored with it.
type storedPlan struct {
	id        string
	resources int
	copies    int // plans stored under the same key
}

// storedPlans reads every plan by Idempotency-Key, from the database itself.
func storedPlans(t *testing.T, db *pgx.Conn) map[string]storedPlan {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT p.idempotency_key, min(p.id::text), count(DISTINCT p.id),
		count(r.position) FROM plans p LEFT JOIN plan_resources r ON r.plan_id = p.id GROUP BY p.idempotency_key`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]storedPlan{}
	for rows.Next() {
		var key string
		var p storedPlan
		if err := rows.Scan(&key, &p.id, &p.copies, &p.resources); err != nil {
			t.Fatal(err)
		}
		out[key] = p
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// wantWhole checks that every key has one plan with all its resources.
func wantWhole(t *testing.T, stored map[string]storedPlan) {
	t.Helper()
	for key, p := range stored {
		if p.copies != 1 || p.resources != planResources {
			t.Errorf("plan %s (%s): %d copies, %d resources; want 1 with %d", key, p.id, p.copies, p.resources, planResources)
		}
	}
}

func mustConnect(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatalf("connect to the test database: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
