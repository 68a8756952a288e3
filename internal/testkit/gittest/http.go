package gittest

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
)

// HTTPOptions configures a smart-HTTP server for one repository.
type HTTPOptions struct {
	// Token is the password a client must send with Basic auth (any user
	// name, as GitHub and GitLab accept). Empty serves anonymously.
	Token string
	// AllowAnyCommit sets uploadpack.allowReachableSHA1InWant and
	// allowAnySHA1InWant, so a client may fetch any commit by id. Without
	// it the server is strict: a want that is not a ref's tip is refused
	// with "ERR upload-pack: not our ref", as git over SSH does (git's own
	// stateless HTTP mode would let reachable commits through, so the
	// harness enforces it), and the client must fetch a ref and deepen.
	AllowAnyCommit bool
	// TLS, when set, is the server's TLS configuration, holding its
	// certificate in Certificates (e.g. one for 127.0.0.1 from a
	// development authority); nil serves httptest's built-in certificate.
	TLS *tls.Config
}

// Counts are the requests a server has answered.
type Counts struct {
	// RefLists counts reference advertisements (GET info/refs over HTTP,
	// each git-upload-pack session over SSH).
	RefLists int
	// Packs counts pack negotiations: requests that sent wants.
	Packs int
	// Refused counts requests refused (bad credentials, strict wants).
	Refused int
}

type counter struct {
	mu sync.Mutex
	c  Counts
}

func (c *counter) add(f func(*Counts)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.c)
}

func (c *counter) get() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c
}

// HTTPServer serves one repository over HTTPS on 127.0.0.1.
type HTTPServer struct {
	// URL is the repository's clone URL, https://127.0.0.1:port/repo.git.
	URL string
	// Token is the accepted token (HTTPOptions.Token).
	Token string

	srv   *httptest.Server
	count counter
}

// ServeHTTP serves r over smart HTTP (git http-backend through
// net/http/cgi, behind TLS) until the test ends.
func (r *Repo) ServeHTTP(tb testing.TB, opts HTTPOptions) *HTTPServer {
	tb.Helper()
	s, stop, err := r.Serve(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return s
}

// Serve is ServeHTTP outside a test: it serves r until stop is called, and
// stop waits for the requests in flight.
func (r *Repo) Serve(opts HTTPOptions) (s *HTTPServer, stop func(), err error) {
	execPath, err := gitExecPath()
	if err != nil {
		return nil, nil, err
	}
	config := []string{"uploadpack.allowReachableSHA1InWant", "false", "uploadpack.allowAnySHA1InWant", "false"}
	if opts.AllowAnyCommit {
		config = []string{"uploadpack.allowReachableSHA1InWant", "true", "uploadpack.allowAnySHA1InWant", "true"}
	}
	backend := &cgi.Handler{
		Path: filepath.Join(execPath, "git-http-backend"),
		Root: "/",
		Env: append(gitEnv(configEnv(config...)),
			"GIT_PROJECT_ROOT="+filepath.Dir(r.Dir),
			"GIT_HTTP_EXPORT_ALL=1",
		),
	}
	s = &HTTPServer{Token: opts.Token}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if opts.Token != "" {
			if _, pass, ok := req.BasicAuth(); !ok || pass != opts.Token {
				s.count.add(func(c *Counts) { c.Refused++ })
				w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if !strings.HasPrefix(req.URL.Path, "/"+r.Name+"/") {
			http.NotFound(w, req)
			return
		}
		switch {
		case strings.HasSuffix(req.URL.Path, "/info/refs"):
			if req.URL.Query().Get("service") != "git-upload-pack" {
				http.Error(w, "only git-upload-pack is served", http.StatusForbidden)
				return
			}
			s.count.add(func(c *Counts) { c.RefLists++ })
		case strings.HasSuffix(req.URL.Path, "/git-upload-pack"):
			s.count.add(func(c *Counts) { c.Packs++ })
			if !opts.AllowAnyCommit && !s.strictWants(w, req, r) {
				return
			}
		default:
			http.NotFound(w, req)
			return
		}
		backend.ServeHTTP(w, req)
	}))
	s.srv.TLS = opts.TLS // StartTLS clones it, or uses its own certificate if nil
	s.srv.StartTLS()
	s.URL = s.srv.URL + "/" + r.Name
	return s, s.srv.Close, nil
}

// strictWants refuses a pack request that wants anything but a ref's tip,
// answering as git upload-pack does. It leaves req's body readable again.
func (s *HTTPServer) strictWants(w http.ResponseWriter, req *http.Request, r *Repo) bool {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	plain := io.Reader(bytes.NewReader(body))
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		plain = zr
	}
	tips, err := r.tips()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return false
	}
	sc := pktline.NewScanner(plain)
	for sc.Scan() {
		line := string(sc.Bytes())
		if len(line) == 0 {
			break // flush: the wants are over
		}
		if want, ok := strings.CutPrefix(line, "want "); ok {
			id, _, _ := strings.Cut(strings.TrimSpace(want), " ")
			if !tips[id] {
				s.count.add(func(c *Counts) { c.Refused++ })
				w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
				e := pktline.NewEncoder(w)
				_ = e.Encodef("ERR upload-pack: not our ref %s\n", id)
				return false
			}
		}
	}
	return true
}

// Client returns an HTTP client that trusts the server's certificate (the
// first of HTTPOptions.TLS's, if set).
func (s *HTTPServer) Client() *http.Client { return s.srv.Client() }

// Certificate returns the server's TLS certificate, for clients built
// elsewhere (a guarded client adds it to its root pool).
func (s *HTTPServer) Certificate() *x509.Certificate { return s.srv.Certificate() }

// Counts returns the requests answered so far.
func (s *HTTPServer) Counts() Counts { return s.count.get() }

// String describes the server for failure messages.
func (s *HTTPServer) String() string { return fmt.Sprintf("gittest HTTP server %s", s.URL) }
