package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/internal/testkit/authtest"
	"github.com/kukie/gitops-server/internal/testkit/freeport"
	"github.com/kukie/gitops-server/internal/testkit/k8stest"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/internal/testkit/tcpproxy"
)

const e2eSecret = "e2e-secret-e2e-secret-e2e-secret-e2e"

// syncBuffer collects the server's log lines safely across goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is a kukie-server started through run, as main starts it.
type server struct {
	public, admin string // base URLs
	publicAddr    string
	stop          context.CancelFunc
	done          chan error
	logs          *syncBuffer
}

func startServer(t *testing.T, dbURL string, extra map[string]string) *server {
	t.Helper()
	publicAddr, adminAddr := pickTwo(t)
	env := map[string]string{
		"KUKIE_STATIC_CLUSTERS_FILE": writeStaticClusters(t),
		"KUKIE_HTTP_ADDR":            publicAddr,
		"KUKIE_ADMIN_ADDR":           adminAddr,
		"KUKIE_DATABASE_URL":         dbURL,
		"KUKIE_AUTH_HS256_SECRET":    e2eSecret,
		"KUKIE_MIGRATE_ON_START":     "true",
		"KUKIE_SHUTDOWN_DELAY":       "200ms",
	}
	for k, v := range extra {
		env[k] = v
	}
	// Every server of these tests logs at debug level with a database
	// password in its URL (trust authentication ignores it), so the log
	// check below covers each scenario's most talkative output.
	if _, ok := extra["KUKIE_LOG_LEVEL"]; !ok {
		env["KUKIE_LOG_LEVEL"] = "debug"
	}
	env["KUKIE_DATABASE_URL"] = withPassword(t, env["KUKIE_DATABASE_URL"])
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{public: "http://" + publicAddr, admin: "http://" + adminAddr, publicAddr: publicAddr,
		stop: cancel, done: make(chan error, 1), logs: &syncBuffer{}}
	go func() {
		s.done <- run(ctx, []string{"kukie-server", "serve"}, func(k string) string { return env[k] }, s.logs, s.logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			t.Error("server did not stop")
		}
		checkLogSecrets(t, s.logs.String(), env)
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(s.admin + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return s
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("server exited: %v\nlogs:\n%s", err, s.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not up after 20 s; logs:\n%s", s.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// writeStaticClusters registers cluster c1 of team-e2e from a kubeconfig
// that points at a closed port (these tests never read it).
func writeStaticClusters(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: c1, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: "x"}}]
contexts: [{name: c1, context: {cluster: c1, user: u}}]
current-context: c1
`)
	clusters := filepath.Join(dir, "clusters.yaml")
	writeFile(t, clusters, "clusters:\n  - {id: c1, team: team-e2e, name: e2e, kubeconfig: "+kubeconfig+", access_level: full}\n")
	return clusters
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func e2eToken(t *testing.T, roles ...string) string {
	return authtest.MustHS256(t, []byte(e2eSecret), authtest.Claims{Sub: "alice", Team: "team-e2e", Roles: roles})
}

func call(t *testing.T, method, u, tok, body string) (int, string) {
	t.Helper()
	return callWith(t, method, u, tok, body, nil)
}

// callWith is call with extra request headers.
func callWith(t *testing.T, method, u, tok, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 15 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

const planJSON = `{"cluster_id":"c1","conversation_id":"v1","visibility":"shared","tool":"apply_manifest",
	"command":"kubectl apply -f app.yaml","resources":[{"kind":"ConfigMap","namespace":"web","name":"cfg"}],"payload":{}}`

func TestServeEndToEnd(t *testing.T) {
	dbURL := pgtest.MustCreateDatabase(t)
	env := func(k string) string {
		return map[string]string{"KUKIE_DATABASE_URL": dbURL}[k]
	}
	var out strings.Builder
	if err := run(t.Context(), []string{"kukie-server", "migrate", "up"}, env, &out, &out); err != nil {
		t.Fatalf("migrate up: %v", err)
	}
	out.Reset()
	if err := run(t.Context(), []string{"kukie-server", "migrate", "status"}, env, &out, &out); err != nil ||
		!strings.Contains(out.String(), "applied") || strings.Contains(out.String(), "pending") {
		t.Fatalf("migrate status: %v\n%s", err, out.String())
	}

	s := startServer(t, dbURL, nil)
	agent := e2eToken(t, "agent")
	status, body := call(t, "POST", s.public+"/v1/plans", agent, planJSON)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	for _, c := range []struct {
		url, want string
		status    int
	}{
		{s.admin + "/healthz", "ok", 200},
		{s.admin + "/readyz", "ok", 200},
		{s.admin + "/metrics", `kukie_http_requests_total{code="201",method="POST",route="/v1/plans"} 1`, 200},
		{s.admin + "/metrics", "kukie_db_pool_total_connections", 200},
		{s.public + "/openapi.yaml", "openapi: 3.1", 200},
		{s.public + "/docs", "swagger", 200},
		{s.public + "/healthz", "not_found", 404},
		{s.public + "/metrics", "not_found", 404},
	} {
		status, body := call(t, "GET", c.url, "", "")
		if status != c.status || !strings.Contains(strings.ToLower(body), strings.ToLower(c.want)) {
			t.Errorf("GET %s: %d, want %d containing %q; got %.200s", c.url, status, c.status, c.want, body)
		}
	}
	logs := s.logs.String()
	if strings.Contains(logs, agent) || strings.Contains(logs, e2eSecret) || strings.Contains(logs, "kubectl apply") {
		t.Error("the logs hold a token, the secret or a request body")
	}
	if !strings.Contains(logs, `"request_id"`) || !strings.Contains(logs, `"route":"/v1/plans"`) {
		t.Errorf("access log lines missing: %.500s", logs)
	}
}

func TestDatabaseOutageAndRecovery(t *testing.T) {
	dbURL := pgtest.MustCreateDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := tcpproxy.MustStart(t, u.Host)
	u.Host = proxy.Addr()
	s := startServer(t, u.String(), nil)
	tok := e2eToken(t, "agent")
	if status, body := call(t, "POST", s.public+"/v1/plans", tok, planJSON); status != 201 {
		t.Fatalf("create before the outage: %d %s", status, body)
	}

	proxy.SetDown(true)
	status, body := call(t, "GET", s.public+"/v1/plans", tok, "")
	if status != 503 || !strings.Contains(body, `"code":"unavailable"`) {
		t.Errorf("list during the outage: %d %s", status, body)
	}
	status, body = call(t, "POST", s.public+"/v1/plans", tok, planJSON)
	if status != 503 || !strings.Contains(body, `"code":"unavailable"`) {
		t.Errorf("create during the outage: %d %s", status, body)
	}
	if status, body := call(t, "GET", s.admin+"/readyz", "", ""); status != 503 {
		t.Errorf("/readyz during the outage: %d %s", status, body)
	}
	if status, _ := call(t, "GET", s.admin+"/healthz", "", ""); status != 200 {
		t.Errorf("/healthz during the outage: %d (liveness must not depend on the database)", status)
	}

	proxy.SetDown(false)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ready, _ := call(t, "GET", s.admin+"/readyz", "", "")
		listed, body := call(t, "GET", s.public+"/v1/plans", tok, "")
		if ready == 200 && listed == 200 {
			var page struct{ Items []json.RawMessage }
			if err := json.Unmarshal([]byte(body), &page); err != nil || len(page.Items) != 1 {
				t.Errorf("after recovery: %s", body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no recovery 20 s after the database returned: readyz %d, list %d %s", ready, listed, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestGracefulShutdownDrainsInFlightRequest(t *testing.T) {
	s := startServer(t, pgtest.MustCreateDatabase(t), map[string]string{"KUKIE_SHUTDOWN_DELAY": "300ms"})
	// Start a request and send only half of its body: it is in flight.
	conn, err := net.Dial("tcp", s.publicAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := []byte(planJSON)
	half := len(body) / 2
	fmt.Fprintf(conn, "POST /v1/plans HTTP/1.1\r\nHost: kukie\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", e2eToken(t, "agent"), len(body))
	if _, err := conn.Write(body[:half]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the server start reading it

	s.stop() // SIGTERM
	// Readiness fails first.
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, _ := call(t, "GET", s.admin+"/readyz", "", "")
		if status == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz kept answering 200 after the shutdown signal")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(600 * time.Millisecond) // past the drain delay: Shutdown is now waiting on us
	select {
	case err := <-s.done:
		t.Fatalf("run returned (%v) while a request was in flight", err)
	default:
	}
	if _, err := conn.Write(body[half:]); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request got no response: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != 201 {
		t.Errorf("in-flight request: %d, want 201", res.StatusCode)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
		s.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after draining")
	}
	if _, err := net.DialTimeout("tcp", s.publicAddr, time.Second); err == nil {
		t.Error("the public listener still accepts connections after shutdown")
	}
}

// mustMissingDatabase returns the URL of a database that does not exist yet,
// named name plus a random suffix, for user (empty: the admin URL's user).
// Whatever the test creates under that name is dropped when it ends.
func mustMissingDatabase(t *testing.T, name, user string) (dbName, dbURL string) {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dbName = name + hex.EncodeToString(b)
	u, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + dbName
	if user != "" {
		u.User = url.User(user)
	}
	t.Cleanup(func() {
		pgtest.MustExec(t, pgtest.AdminURL(), "DROP DATABASE IF EXISTS "+pgx.Identifier{dbName}.Sanitize()+" WITH (FORCE)")
	})
	if databaseExists(t, dbName) {
		t.Fatalf("database %s exists before the test", dbName)
	}
	return dbName, u.String()
}

// databaseExists asks the server's catalogue, not the code under test.
func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatalf("connect to %s: %v", pgtest.AdminURL(), err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func runMigrate(t *testing.T, dbURL string, args ...string) (string, error) {
	t.Helper()
	env := func(k string) string { return map[string]string{"KUKIE_DATABASE_URL": dbURL}[k] }
	var out strings.Builder
	err := run(t.Context(), append([]string{"kukie-server", "migrate"}, args...), env, &out, &out)
	return out.String(), err
}

func TestMigrateUpCreateDatabase(t *testing.T) {
	// Upper case and a hyphen survive only a properly quoted identifier.
	name, dbURL := mustMissingDatabase(t, "Kukie-Test-", "")

	out, err := runMigrate(t, dbURL, "up", "--create-database")
	if err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "created database "+name) || !strings.Contains(out, "migrations applied") {
		t.Errorf("first run output: %q", out)
	}
	if !databaseExists(t, name) {
		t.Fatalf("database %s not in pg_database after the first run", name)
	}
	if out, err := runMigrate(t, dbURL, "status"); err != nil || !strings.Contains(out, "applied") || strings.Contains(out, "pending") {
		t.Fatalf("status after the first run: %v\n%s", err, out)
	}

	out, err = runMigrate(t, dbURL, "up", "--create-database")
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if strings.Contains(out, "created database") || !strings.Contains(out, "migrations applied") {
		t.Errorf("second run output: %q", out)
	}
}

func TestMigrateUpMissingDatabaseWithoutFlag(t *testing.T) {
	name, dbURL := mustMissingDatabase(t, "kukie_test_missing_", "")
	for _, args := range [][]string{{"up"}, {"status"}} {
		t.Run(args[0], func(t *testing.T) {
			out, err := runMigrate(t, dbURL, args...)
			if err == nil {
				t.Fatalf("migrate %s on a missing database succeeded: %s", args[0], out)
			}
			for _, want := range []string{`database "` + name + `" does not exist`, "migrate up --create-database"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	if databaseExists(t, name) {
		t.Error("migrate without --create-database created the database")
	}
}

func TestMigrateUpCreateDatabaseWithoutPrivilege(t *testing.T) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	role := "kukie_test_nocreatedb_" + hex.EncodeToString(b)
	pgtest.MustExec(t, pgtest.AdminURL(), "CREATE ROLE "+role+" LOGIN NOCREATEDB")
	t.Cleanup(func() { pgtest.MustExec(t, pgtest.AdminURL(), "DROP ROLE IF EXISTS "+role) })
	name, dbURL := mustMissingDatabase(t, "kukie_test_denied_", role)

	out, err := runMigrate(t, dbURL, "up", "--create-database")
	if err == nil {
		t.Fatalf("a user without CREATEDB created a database: %s", out)
	}
	if want := `user "` + role + `" may not create it`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if !hasSQLState(err, sqlstateInsufficientPrivilege) {
		t.Errorf("error %v does not carry SQLSTATE %s", err, sqlstateInsufficientPrivilege)
	}
	if databaseExists(t, name) {
		t.Error("the database exists")
	}
}

func TestMigrateUsage(t *testing.T) {
	for _, args := range [][]string{{"status", "--create-database"}, {"up", "--create-db"}, {"--create-database", "up"}, {}} {
		if _, err := runMigrate(t, "postgres://127.0.0.1:1/x", args...); err != errUsage {
			t.Errorf("migrate %v: %v, want the usage error", args, err)
		}
	}
}

// dbPassword is the password every test server's database URL carries.
const dbPassword = "db-pw-7f3a9c51e2"

// withPassword puts dbPassword into a database URL without one.
func withPassword(t *testing.T, dbURL string) string {
	t.Helper()
	if dbURL == "" {
		return dbURL
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, set := u.User.Password(); !set {
		u.User = url.UserPassword(u.User.Username(), dbPassword)
	}
	return u.String()
}

// secretPatterns are what no log line may hold: bearer JWTs, EKS tokens,
// presigned URLs and session tokens, private keys, SNS subscription URLs
// and message bodies.
var secretPatterns = map[string]*regexp.Regexp{
	"a JWT":                regexp.MustCompile(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.`),
	"an EKS token":         regexp.MustCompile(`k8s-aws-v1\.`),
	"a presigned URL":      regexp.MustCompile(`X-Amz-(Signature|Credential|Security-Token)`),
	"an AWS session token": regexp.MustCompile(`FwoGZXIvYXdzE`),
	"a private key":        regexp.MustCompile(`PRIVATE KEY-----`),
	"an SNS SubscribeURL":  regexp.MustCompile(`Action=(ConfirmSubscription|Unsubscribe)`),
	"an SNS body":          regexp.MustCompile(`"Signature"\s*:\s*"`),
}

// checkLogSecrets fails t when the server's log holds a secret: a pattern
// above, a value of the server's secret settings (the HS256 key,
// KUKIE_SECRET_KEYS, the database password), the AWS base secret, or a
// planted secret of the repo fixtures.
func checkLogSecrets(t testing.TB, logs string, env map[string]string) {
	t.Helper()
	for what, re := range secretPatterns {
		if loc := re.FindStringIndex(logs); loc != nil {
			t.Errorf("the server logged %s: %.200s", what, logs[max(0, loc[0]-80):])
		}
	}
	values := append([]string{e2eSecret, dbPassword, os.Getenv("AWS_SECRET_ACCESS_KEY")}, planted...)
	for _, k := range []string{"KUKIE_SECRET_KEYS", "KUKIE_AUTH_HS256_SECRET"} {
		for _, part := range strings.FieldsFunc(env[k], func(r rune) bool { return r == ',' || r == ':' }) {
			if len(part) >= 16 {
				values = append(values, part)
			}
		}
	}
	for _, v := range values {
		if v != "" && strings.Contains(logs, v) {
			t.Errorf("the server logged a secret value (%.4s…)", v)
		}
	}
}

// errorRecorder is a testing.TB that counts Errorf calls.
type errorRecorder struct {
	testing.TB
	errors int
}

func (r *errorRecorder) Errorf(string, ...any) { r.errors++ }
func (r *errorRecorder) Helper()               {}

// TestCheckLogSecretsCatches: the log check finds each kind of secret it
// is meant to, so a clean run means something.
func TestCheckLogSecretsCatches(t *testing.T) {
	env := map[string]string{"KUKIE_SECRET_KEYS": "k1:QmFzZTY0S2V5TWF0ZXJpYWwxMjM0NTY3ODkwYWJj"}
	for _, line := range []string{
		`{"msg":"auth","authorization":"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln"}`,
		`token=k8s-aws-v1.aHR0cHM6Ly9zdHM`,
		`url=https://sts.amazonaws.com/?X-Amz-Signature=abc`,
		`session=FwoGZXIvYXdzEabc`,
		`-----BEGIN OPENSSH PRIVATE KEY-----`,
		`https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=abc`,
		`{"Type":"Notification","Signature":"abc"}`,
		`postgres://postgres:` + dbPassword + `@127.0.0.1/x`,
		`key=QmFzZTY0S2V5TWF0ZXJpYWwxMjM0NTY3ODkwYWJj`,
		`value=` + planted[0],
	} {
		r := &errorRecorder{TB: t}
		checkLogSecrets(r, "level=INFO "+line+"\n", env)
		if r.errors == 0 {
			t.Errorf("the log check missed: %s", line)
		}
	}
	r := &errorRecorder{TB: t}
	checkLogSecrets(r, `{"level":"INFO","msg":"request","route":"/v1/plans","status":200}`+"\n", env)
	if r.errors != 0 {
		t.Error("the log check flags a clean line")
	}
}

// startArgoCluster starts a kube-apiserver with the Argo CD fixtures and
// returns it with the path of its admin kubeconfig.
func startArgoCluster(t *testing.T) (*k8stest.Cluster, string) {
	t.Helper()
	k, err := k8stest.Start(k8stest.Options{ArgoCD: true})
	if err != nil {
		t.Fatalf("a Kubernetes API server is needed: %v", err)
	}
	t.Cleanup(func() { _ = k.Stop() })
	kubeconfig, err := k.Kubeconfig(k8stest.UserAdmin)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	writeFile(t, path, string(kubeconfig))
	return k, path
}

// clustersFile writes a static clusters file (KUKIE_STATIC_CLUSTERS_FILE)
// of FULL clusters {id, team, name} reached through kubeconfig.
func clustersFile(t *testing.T, kubeconfig string, clusters ...[3]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("clusters:\n")
	for _, c := range clusters {
		fmt.Fprintf(&b, "  - {id: %s, team: %s, name: %s, kubeconfig: %s, access_level: full}\n", c[0], c[1], c[2], kubeconfig)
	}
	path := filepath.Join(t.TempDir(), "clusters.yaml")
	writeFile(t, path, b.String())
	return path
}

// pickTwo is two distinct free addresses: the public and admin listeners.
func pickTwo(t *testing.T) (string, string) {
	a := freeport.Addrs(t, 2)
	return a[0], a[1]
}
