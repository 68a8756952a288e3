package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/ownership"
	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/testclock"
	"github.com/kukie/gitops-server/openapi"
	"github.com/kukie/gitops-server/service"
)

const (
	testIssuer   = "https://id.kukie.test"
	testAudience = "kukie-api"
)

var testSecret = []byte("api-test-secret-api-test-secret-0123456789")

// spec is the parsed OpenAPI document and a router over it, loaded once per
// test binary (read-only after that).
var spec = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(openapi.Document()))
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

func mustSpec(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	doc, err := spec()
	if err != nil {
		t.Fatalf("openapi/openapi.yaml is invalid: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("openapi router: %v", err)
	}
	return doc, router
}

// testAPI is the public API over a real database, reached over HTTP. Every
// response it sees is validated against the OpenAPI document.
type testAPI struct {
	t      *testing.T
	srv    *httptest.Server
	router routers.Router
	doc    *openapi3.T
}

// mustServe serves the public API over a fresh database with the test
// HS256 verifier; the server stops when the test ends.
func mustServe(tb testing.TB) *httptest.Server {
	tb.Helper()
	srv, _ := mustServeWith(tb, nil)
	return srv
}

// testClusters are registered for every test API: team-a has prod-eks and
// c, team-b has prod-eks too (same id, another team).
var testClusters = []service.Cluster{
	{TeamID: "team-a", ID: "prod-eks", Name: "prod"},
	{TeamID: "team-a", ID: "c", Name: "c"},
	{TeamID: "team-b", ID: "prod-eks", Name: "prod (team b)"},
}

// mustServeWith serves the public API over a fresh database with the test
// HS256 verifier, the test clusters plus extra, and reader (nil: a reader
// that fails every read); the server stops when the test ends. The
// snapshot cache runs on the returned clock.
func mustServeWith(tb testing.TB, reader service.ApplicationReader, extra ...service.Cluster) (*httptest.Server, *testclock.Clock) {
	tb.Helper()
	return mustServeWithAWS(tb, reader, awsDeps{}, extra...)
}

// awsDeps are the AWS side of a test API: nil AWS answers aws_unavailable.
type awsDeps struct {
	aws     service.AWSAccess
	checker service.AccessChecker
	jobs    service.AccessJobs
}

// mustServeWithAWS is mustServeWith with AWS accounts and EKS registration
// behind the given (fake) AWS side.
func mustServeWithAWS(tb testing.TB, reader service.ApplicationReader, aws awsDeps, extra ...service.Cluster) (*httptest.Server, *testclock.Clock) {
	tb.Helper()
	db, _ := pgtest.MustOpenDB(tb)
	verifier, err := jwtauth.NewHS256(testSecret, testIssuer, testAudience, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range append(slices.Clone(testClusters), extra...) {
		if c.Kind == "" {
			c.Kind = service.ClusterStatic
		}
		if c.AccessLevel == "" {
			c.AccessLevel = service.AccessFull
		}
		if c.ArgoCDNamespace == "" {
			c.ArgoCDNamespace = service.DefaultArgoCDNamespace
		}
		if _, err := db.UpsertCluster(context.Background(), c, time.Now()); err != nil {
			tb.Fatal(err)
		}
	}
	if reader == nil {
		reader = failingReader{}
	}
	clock := testclock.New(time.Now())
	cache, err := service.NewSnapshotCache(reader, 64, clock.Now, nil)
	if err != nil {
		tb.Fatal(err)
	}
	masker, err := mask.New()
	if err != nil {
		tb.Fatal(err)
	}
	reviews := mustAccessReviews(tb, db, reader, clock)
	var secrets *service.ClusterSecretCache
	if sr, ok := reader.(service.ClusterSecretReader); ok {
		if secrets, err = service.NewClusterSecretCache(sr, 64, clock.Now); err != nil {
			tb.Fatal(err)
		}
	}
	hubs := hubLookup{clusters: db, secrets: secrets}
	registrations := &service.Registrations{Clusters: db, EKS: db, Accounts: db, Teams: db, AWS: aws.aws,
		Checker: aws.checker, Jobs: aws.jobs, Now: time.Now}
	plans := &service.Plans{Store: db, Clusters: db, Now: time.Now, Detector: detector(reader, cache, reviews, hubs),
		MutatingTools: map[string]bool{"apply_manifest": true, "scale_resource": true}, Masker: masker}
	argo := &service.ArgoCD{Clusters: db, Cache: cache, Detector: detector(reader, cache, reviews, hubs), Plans: db, Masker: masker,
		Secrets: secrets}
	var pauses *service.SyncPauses
	if objects, ok := reader.(service.ObjectReader); ok {
		if schema, ok := reader.(service.SyncSchema); ok {
			pauses = &service.SyncPauses{ArgoCD: argo, Objects: objects, Schema: schema, Plans: plans, Detector: argo.Detector}
		}
	}
	srv := httptest.NewServer(NewServer(Deps{
		Logger:        slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Verifier:      verifier,
		Plans:         plans,
		SyncPauses:    pauses,
		Teams:         &service.Teams{Store: db, Now: time.Now},
		Clusters:      &service.Clusters{Store: db, Now: time.Now},
		ArgoCD:        argo,
		AccessReviews: reviews,
		Accounts:      &service.Accounts{Store: db, Teams: db, AWS: aws.aws, Registrations: registrations, Now: time.Now},
		Registrations: registrations,
		Metrics:       NewMetrics(prometheus.NewRegistry()),
	}))
	tb.Cleanup(srv.Close)
	return srv, clock
}

// detector builds ownership detection on reader when it can read objects.
// hubLookup is what detection needs to look for apps in hub clusters.
type hubLookup struct {
	clusters service.ClusterLister
	secrets  *service.ClusterSecretCache
}

func detector(reader service.ApplicationReader, cache *service.SnapshotCache, reviews service.TargetReviewer, hubs hubLookup) service.OwnershipDetector {
	objects, ok := reader.(service.ObjectReader)
	if !ok {
		objects = failingReader{}
	}
	masker, err := mask.New()
	if err != nil {
		panic(err) // gitleaks' built-in rules: never fails
	}
	return &ownership.Detector{Objects: objects, Snapshots: cache, Budget: 3 * time.Second, Now: time.Now, Masker: masker, Access: reviews,
		Clusters: hubs.clusters, Secrets: hubs.secrets}
}

// mustAccessReviews builds can-i on reader when it can ask clusters.
func mustAccessReviews(tb testing.TB, clusters service.ClusterStore, reader service.ApplicationReader, clock *testclock.Clock) *service.AccessReviews {
	tb.Helper()
	reviewer, ok := reader.(service.AccessReviewer)
	if !ok {
		reviewer = failingReader{}
	}
	r, err := service.NewAccessReviews(clusters, reviewer, 64, clock.Now)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// failingReader stands in where no test reads a cluster.
type failingReader struct{}

func (failingReader) ListApplications(context.Context, service.Cluster) (service.AppRead, error) {
	return service.AppRead{}, errors.New("no cluster reader in this test")
}

func (failingReader) CanI(context.Context, service.Cluster, service.AccessQuestion) (service.AccessAnswer, error) {
	return service.AccessAnswer{}, errors.New("no cluster reader in this test")
}

func (failingReader) ReadObject(context.Context, service.Cluster, service.ResourceRef) (service.ObjectInfo, error) {
	return service.ObjectInfo{}, errors.New("no cluster reader in this test")
}

func newTestAPI(t *testing.T) *testAPI {
	t.Helper()
	srv := mustServe(t)
	doc, router := mustSpec(t)
	return &testAPI{t: t, srv: srv, router: router, doc: doc}
}

// token returns a valid token for user in team with roles.
func token(t *testing.T, user, team string, roles ...string) string {
	t.Helper()
	if roles == nil {
		roles = []string{}
	}
	return authtest.MustHS256(t, testSecret, authtest.Claims{Sub: user, Team: team, Roles: roles,
		Issuer: testIssuer, Audience: testAudience})
}

// response is what a request got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// problem decodes a problem response and checks its status and code.
func (r response) wantProblem(t *testing.T, status int, code string) problem {
	t.Helper()
	var p problem
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	r.decode(t, &p)
	if p.Code != code {
		t.Fatalf("code = %q, want %q; body %s", p.Code, code, r.body)
	}
	return p
}

type header map[string]string

// do sends a request; body may be a string (sent as is) or a value (sent as
// JSON). Content-Type defaults to application/json when there is a body.
func (a *testAPI) do(method, path, tok string, body any, h header) response {
	a.t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	case []byte:
		reader = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		reader = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, reader)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range h {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(res.Body)
	if err != nil {
		a.t.Fatal(err)
	}
	r := response{status: res.StatusCode, header: res.Header, body: got}
	if err := a.validate(req, r); err != nil {
		a.t.Errorf("%s %s: response %d does not match the OpenAPI document: %v\nbody: %.500s",
			req.Method, req.URL.Path, r.status, err, r.body)
	}
	return r
}

// validate checks a response against the OpenAPI document: the route's
// documented status codes, content types and schemas. Responses from
// routes that do not exist must still be problem documents.
func (a *testAPI) validate(req *http.Request, r response) error {
	route, params, err := a.router.FindRoute(req)
	if err != nil {
		if r.status != http.StatusNotFound && r.status != http.StatusMethodNotAllowed {
			return fmt.Errorf("no documented route, but status %d", r.status)
		}
		var v any
		if err := json.Unmarshal(r.body, &v); err != nil {
			return fmt.Errorf("body is not JSON: %w", err)
		}
		return a.doc.Components.Schemas["Problem"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 r.status,
		Header:                 r.header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	// Non-JSON documents (the YAML spec, the docs page) are checked by status only.
	in.Options.ExcludeResponseBody = !strings.Contains(r.header.Get("Content-Type"), "json")
	in.SetBodyBytes(r.body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

// benchAPI is the API for benchmarks: same wiring as testAPI, without the
// per-response OpenAPI validation (which would dominate the numbers).
type benchAPI struct {
	srv *httptest.Server
}

func newBenchAPI(b *testing.B) *benchAPI {
	b.Helper()
	return &benchAPI{srv: mustServe(b)}
}

func benchToken(b *testing.B, roles ...string) string {
	return authtest.MustHS256(b, testSecret, authtest.Claims{Sub: "alice", Team: "team-a", Roles: roles,
		Issuer: testIssuer, Audience: testAudience})
}

func (a *benchAPI) send(b *testing.B, req *http.Request, tok string) int {
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := a.srv.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func (a *benchAPI) get(b *testing.B, path, tok string) int {
	req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
	return a.send(b, req, tok)
}

func (a *benchAPI) post(b *testing.B, path, tok string, body any) int {
	buf, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", a.srv.URL+path, bytes.NewReader(buf))
	req.Header.Set("Content-Type", "application/json")
	return a.send(b, req, tok)
}
