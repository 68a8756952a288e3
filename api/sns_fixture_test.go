package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/internal/jobs"
	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
	"github.com/kukie/gitops-server/internal/testkit/tcpproxy"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// The account the SNS tests deliver to: its stack lists snsTopic and
// snsOtherTopic (both allowed) and snsForeignTopic (another AWS account's
// topic: never allowed).
const (
	snsTeam         = "team-sns"
	snsAccount      = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" // account ids are UUIDs
	snsAWSAccount   = "123456789012"
	snsTopic        = "arn:aws:sns:us-east-1:123456789012:kukie-stack-events"
	snsOtherTopic   = "arn:aws:sns:us-east-1:123456789012:kukie-ops"
	snsForeignTopic = "arn:aws:sns:us-east-1:999999999999:foreign"
	snsUnknownTopic = "arn:aws:sns:us-east-1:123456789012:not-listed"
	snsStackARN     = "arn:aws:cloudformation:us-east-1:123456789012:stack/kukie-access/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
	snsWebhookPath  = "/webhooks/aws/sns"
	// snsTimeLayout is how SNS writes a Timestamp.
	snsTimeLayout = "2006-01-02T15:04:05.000Z"
)

// snsFixture is the public API with the SNS webhook wired as in production:
// a real service.Webhook over a fresh database, a real sns.Verifier that
// fetches certificates from an snstest.Host through its CONNECT proxy, and
// the real job queue as Trigger, not started, so the jobs it inserts can
// be counted (runJobs starts it). Everything logs into one buffer, checked
// at the end of the test for the bodies, URLs and tokens delivered.
type snsFixture struct {
	t        *testing.T
	api      *testAPI
	handler  http.Handler // the router api serves, for requests from chosen addresses
	db       *store.DB    // a direct connection, for setup and assertions
	link     *tcpproxy.Proxy
	host     *snstest.Host
	clock    *testclock.Clock
	switches *service.Switches
	queue    *jobs.Queue
	logs     *lockedBuffer
	metrics  *verdictRecorder
	secrets  *secretList
}

// in is the fixture for subtest t: what fails, fails t.
func (f *snsFixture) in(t *testing.T) *snsFixture {
	g, api := *f, *f.api
	api.t = t
	g.t, g.api = t, &api
	return &g
}

// secretList is what the logs must never hold.
type secretList struct {
	mu   sync.Mutex
	list []string
}

// snsOptions tune a fixture; the zero value is the production setting.
type snsOptions struct {
	fetchTimeout   time.Duration
	fetchBurst     int // the certificate fetch bucket; 0: sns.DefaultFetchBurst
	topicBurst     int // each topic's certificate fetch bucket; 0: sns.DefaultTopicFetchBurst
	trustedProxies TrustedProxies
}

// lockedBuffer is a bytes.Buffer for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// verdictRecorder is the webhook's metrics: each delivery's verdict and
// reason, in order.
type verdictRecorder struct {
	mu   sync.Mutex
	seen [][2]string
}

func (r *verdictRecorder) SNSMessage(verdict, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, [2]string{verdict, reason})
}

func (r *verdictRecorder) last() [2]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		return [2]string{}
	}
	return r.seen[len(r.seen)-1]
}

func newSNSFixture(t *testing.T, o snsOptions) *snsFixture {
	t.Helper()
	if snsCA == nil {
		t.Fatal("no test certificate authority: TestMain (api/argocd_test.go) must call snstest.InstallAuthority")
	}
	f := &snsFixture{t: t, logs: &lockedBuffer{}, metrics: &verdictRecorder{}, secrets: &secretList{},
		clock: testclock.New(time.Now().UTC().Truncate(time.Millisecond))}
	// Registered first, so it runs last: after the queue has stopped.
	t.Cleanup(f.checkLogs)
	logger := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	db, dbURL := pgtest.MustOpenDB(t)
	f.db = db
	served := f.openThroughLink(dbURL)
	f.seed()

	f.host = snstest.StartHost(t, snsCA, snstest.HostOptions{Now: f.clock.Now})
	f.host.SetEnv(t)
	verifier, err := sns.New(sns.Options{Now: f.clock.Now, FetchTimeout: o.fetchTimeout, FetchBurst: o.fetchBurst, TopicFetchBurst: o.topicBurst})
	if err != nil {
		t.Fatal(err)
	}
	registrations := &service.Registrations{Clusters: served, EKS: served, Accounts: served, Teams: served, Now: time.Now}
	f.switches = &service.Switches{Store: served, Accounts: served, Clusters: served, EKS: served, Teams: served,
		Logger: logger, Now: f.clock.Now}
	f.queue, err = jobs.New(served.Pool(), registrations, jobs.Options{Logger: logger, PollInterval: 100 * time.Millisecond,
		Switch: &jobs.SwitchOptions{Run: f.switches, Confirm: verifier, Store: served,
			ReconcileInterval: 24 * time.Hour, CatchupInterval: 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	f.switches.Trigger = f.queue
	tokens, err := jwtauth.NewHS256(testSecret, testIssuer, testAudience, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.handler = NewServer(Deps{
		Now:      f.clock.Now, // the rate limit refills only when the test moves the clock
		Logger:   logger,
		Verifier: tokens,
		Accounts: &service.Accounts{Store: served, Teams: served, Switches: f.switches, Now: time.Now},
		Switches: f.switches,
		Webhook: &service.Webhook{Store: served, Accounts: served, Verifier: verifier, Trigger: f.queue,
			Metrics: f.metrics, Logger: logger, Now: f.clock.Now},
		Metrics:        NewMetrics(prometheus.NewRegistry()),
		TrustedProxies: o.trustedProxies,
	})
	srv := httptest.NewServer(f.handler)
	t.Cleanup(srv.Close)
	doc, router := mustSpec(t)
	f.api = &testAPI{t: t, srv: srv, router: router, doc: doc}
	return f
}

// openThroughLink opens the store the webhook uses through a TCP proxy the
// test can cut, to take the database away without stopping the server.
func (f *snsFixture) openThroughLink(dbURL string) *store.DB {
	f.t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		f.t.Fatal(err)
	}
	f.link = tcpproxy.MustStart(f.t, u.Host)
	u.Host = f.link.Addr()
	served, err := store.Open(context.Background(), u.String())
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(served.Close)
	return served
}

// seed creates the team and its account, listing the fixture's topics.
func (f *snsFixture) seed() {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.db.EnsureTeam(ctx, snsTeam, service.NewExternalID(), f.clock.Now()); err != nil {
		f.t.Fatal(err)
	}
	f.createAccount(snsAccount, snsAWSAccount, snsStackARN, snsTopic, snsOtherTopic, snsForeignTopic)
}

func (f *snsFixture) createAccount(id, awsAccount, stackARN string, topics ...string) service.Account {
	f.t.Helper()
	a, err := f.db.CreateAccount(context.Background(), service.Account{
		ID: id, TeamID: snsTeam, AWSAccountID: awsAccount, Partition: "aws",
		RoleARN: "arn:aws:iam::" + awsAccount + ":role/kukie/KukieAccess", StackARN: stackARN,
		AccessLevel: service.AccessLimited, State: service.AccountActive, TemplateVersion: "5",
		AllowedNamespaces: []string{"web"}, NotificationARNs: topics,
	}, f.clock.Now())
	if err != nil {
		f.t.Fatalf("create account %s: %v", id, err)
	}
	return a
}

// stackEvent is a Notification of snsTopic carrying e, unsigned.
func (f *snsFixture) stackEvent(e sns.StackEvent) sns.Message {
	return f.host.Notification(snsTopic, sns.CloudFormationSubject, snstest.StackEventMessage(e))
}

// stackStatus is a signed Notification of the account's stack reaching
// status now.
func (f *snsFixture) stackStatus(status string) sns.Message {
	return f.host.Sign(f.stackEvent(snstest.StackStatusEvent(snsStackARN, status, f.clock.Now())), sns.SignatureVersion1)
}

// deliver posts m as SNS does, with header's changes (see
// snstest.NewRequest); the answer is checked against the OpenAPI document.
func (f *snsFixture) deliver(m sns.Message, header http.Header) response {
	f.t.Helper()
	r, err := f.tryDeliver(m, header)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// tryDeliver is deliver for any goroutine: it reports instead of failing.
func (f *snsFixture) tryDeliver(m sns.Message, header http.Header) (response, error) {
	f.remember(string(snstest.Body(m)), m.Message, m.Signature, m.SubscribeURL, m.Token, m.UnsubscribeURL)
	req, err := snstest.NewRequest(context.Background(), f.api.srv.URL+snsWebhookPath, m, header)
	if err != nil {
		return response{}, err
	}
	return f.send(req)
}

// send makes req to the fixture's server and checks the answer against the
// OpenAPI document.
func (f *snsFixture) send(req *http.Request) (response, error) {
	res, err := f.api.srv.Client().Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	r := response{status: res.StatusCode, header: res.Header, body: body}
	if err := f.api.validate(req, r); err != nil {
		f.t.Errorf("%s %s: answer %d does not match the OpenAPI document: %v\nbody: %.500s",
			req.Method, req.URL.Path, r.status, err, r.body)
	}
	return r, nil
}

// remember notes strings the logs must never hold.
func (f *snsFixture) remember(secrets ...string) {
	f.secrets.mu.Lock()
	defer f.secrets.mu.Unlock()
	for _, s := range secrets {
		if s != "" {
			f.secrets.list = append(f.secrets.list, s)
		}
	}
}

// checkLogs fails the test if the logs hold anything remembered, as it is
// or as a JSON or Go string would escape it.
func (f *snsFixture) checkLogs() {
	logs := f.logs.String()
	f.secrets.mu.Lock()
	defer f.secrets.mu.Unlock()
	for _, s := range f.secrets.list {
		escaped, _ := json.Marshal(s)
		for _, form := range []string{s, strings.Trim(string(escaped), `"`), strings.Trim(strconv.Quote(s), `"`)} {
			if strings.Contains(logs, form) {
				f.t.Errorf("the logs hold a body, URL or token that was delivered: %.200q", form)
				break
			}
		}
	}
}

// wantVerdict fails unless r is 200 with the verdict and reason.
func (f *snsFixture) wantVerdict(r response, verdict, reason string) {
	f.t.Helper()
	if r.status != http.StatusOK {
		f.t.Fatalf("status = %d, want 200 %s; body %s", r.status, verdict, r.body)
	}
	var got service.Delivery
	r.decode(f.t, &got)
	if want := (service.Delivery{Verdict: verdict, Reason: reason}); got != want {
		f.t.Errorf("delivery = %+v, want %+v", got, want)
	}
}

// wantRefused fails unless r is the problem status/code and the webhook
// counted it with reason (the sns.Reason or the webhook's own).
func (f *snsFixture) wantRefused(r response, status int, code, reason string) {
	f.t.Helper()
	r.wantProblem(f.t, status, code)
	verdict := map[int]string{http.StatusBadRequest: service.VerdictMalformed, http.StatusForbidden: service.VerdictRejected,
		http.StatusServiceUnavailable: service.VerdictTransient}[status]
	if got, want := f.metrics.last(), [2]string{verdict, reason}; got != want {
		f.t.Errorf("counted (verdict, reason) = %q, want %q", got, want)
	}
	if status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
		f.t.Error("a 503 without Retry-After")
	}
}

// snsEffects is what deliveries leave in the database.
type snsEffects struct {
	Messages, SwitchJobs, ConfirmJobs, Pending int
	Desired                                    int64
	State                                      service.AccountState
}

func (f *snsFixture) effects() snsEffects {
	f.t.Helper()
	ctx := context.Background()
	var e snsEffects
	err := f.db.Pool().QueryRow(ctx, `SELECT
			(SELECT count(*) FROM sns_messages),
			(SELECT count(*) FROM river_job WHERE kind = $1),
			(SELECT count(*) FROM river_job WHERE kind = $2),
			(SELECT count(*) FROM sns_pending_subscriptions)`, jobs.KindSwitch, jobs.KindConfirm).
		Scan(&e.Messages, &e.SwitchJobs, &e.ConfirmJobs, &e.Pending)
	if err != nil {
		f.t.Fatal(err)
	}
	a, err := f.db.GetAccount(ctx, snsTeam, snsAccount)
	if err != nil {
		f.t.Fatal(err)
	}
	e.Desired, e.State = a.DesiredGeneration, a.State
	return e
}

func (f *snsFixture) wantEffects(want snsEffects) {
	f.t.Helper()
	if diff := cmp.Diff(want, f.effects()); diff != "" {
		f.t.Errorf("database after the deliveries (-want +got):\n%s", diff)
	}
}

// untouched is the database before any delivery.
var untouched = snsEffects{State: service.AccountActive}

// accountState reads the account through GET /v1/aws/accounts/{id}.
func (f *snsFixture) accountState() service.AccountState {
	f.t.Helper()
	r := f.api.do(http.MethodGet, "/v1/aws/accounts/"+snsAccount, token(f.t, "admin", snsTeam, "admin"), nil, nil)
	if r.status != http.StatusOK {
		f.t.Fatalf("GET account: %d %s", r.status, r.body)
	}
	var a struct {
		State service.AccountState `json:"state"`
	}
	r.decode(f.t, &a)
	return a.State
}

// runJobs starts the queue until the test ends, waits until every
// confirmation job has finished and returns how many did not complete
// (cancelled or discarded).
func (f *snsFixture) runJobs() (notCompleted int) {
	f.t.Helper()
	if err := f.queue.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f.queue.Stop(ctx); err != nil {
			f.t.Errorf("stop the job queue: %v", err)
		}
	})
	deadline := time.Now().Add(time.Minute) // only catches a hang
	for {
		var running, failed int
		err := f.db.Pool().QueryRow(context.Background(), `SELECT
				count(*) FILTER (WHERE state NOT IN ('completed', 'cancelled', 'discarded')),
				count(*) FILTER (WHERE state IN ('cancelled', 'discarded'))
			FROM river_job WHERE kind = $1`, jobs.KindConfirm).Scan(&running, &failed)
		if err != nil {
			f.t.Fatal(err)
		}
		if running == 0 {
			return failed
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("%d confirmation jobs still unfinished after a minute", running)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
