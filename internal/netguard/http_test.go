package netguard

import (
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/net/http/httpproxy"
)

func get(tb testing.TB, c *http.Client, rawURL string) (*http.Response, error) {
	tb.Helper()
	req, err := http.NewRequestWithContext(testContext(tb), http.MethodGet, rawURL, nil)
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := c.Do(req)
	if err == nil {
		tb.Cleanup(func() { _ = resp.Body.Close() })
	}
	return resp, err
}

func TestHTTPClientLoopbackServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)

	t.Run("RefusedWithoutAllowList", func(t *testing.T) {
		g := MustGuard(t, nil, nil)
		_, err := get(t, g.HTTPClient(0), srv.URL)
		assertRefused(t, err, "plain http")
	})
	t.Run("ReachableWhenListed", func(t *testing.T) {
		g := MustGuard(t, []string{"127.0.0.1"}, nil)
		resp, err := get(t, g.HTTPClient(0), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("OtherSchemesRefused", func(t *testing.T) {
		g := MustGuard(t, []string{"127.0.0.1"}, nil)
		// http.Client refuses unknown schemes itself; the Proxy hook is the
		// guard's own line for what reaches the transport.
		req, _ := http.NewRequest(http.MethodGet, "ftp://127.0.0.1/x", nil)
		_, err := g.proxyFor(req)
		assertRefused(t, err, `scheme "ftp"`)
	})
}

func TestHTTPClientTLSLoopbackRefusedAtDial(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the server was reached")
	}))
	t.Cleanup(srv.Close)
	g := MustGuard(t, nil, nil)
	g.rootCAs = poolOf(srv)
	_, err := get(t, g.HTTPClient(0), srv.URL)
	assertRefused(t, err, reasonLoopback)
}

func TestHTTPClientDoesNotFollowRedirects(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	g := MustGuard(t, []string{"127.0.0.1"}, nil)
	resp, err := get(t, g.HTTPClient(0), srv.URL+"/repo.git/info/refs")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/elsewhere" {
		t.Fatalf("got %d Location %q, want the 302 itself", resp.StatusCode, resp.Header.Get("Location"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 1 || paths[0] != "/repo.git/info/refs" {
		t.Fatalf("server saw %v, want only the first request", paths)
	}
}

func TestHTTPClientOwnTransport(t *testing.T) {
	g := MustGuard(t, nil, nil)
	c := g.HTTPClient(0)
	if c.Transport == http.DefaultTransport || c.Transport == nil {
		t.Fatal("HTTPClient uses the default transport")
	}
	// One pool per team with entries of its own (see
	// TestHTTPClientTeamEntries). go-git wants an *http.Transport only for
	// endpoints with their own TLS or proxy options, which the guarded
	// fetches never set (doc.go): such a session fails instead of cloning.
	if _, ok := c.Transport.(*teamTransport); !ok {
		t.Fatalf("transport is %T, want the guard's *teamTransport", c.Transport)
	}
}

func poolOf(srv *httptest.Server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

// connectProxy is a CONNECT proxy on loopback that records the targets
// asked for and connects every one of them to upstream.
type connectProxy struct {
	upstream string
	mu       sync.Mutex
	targets  []string
}

func (p *connectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	_, _ = io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() {
		_, _ = io.Copy(up, buf)
		_ = up.Close()
	}()
	_, _ = io.Copy(conn, up)
	_ = conn.Close()
}

func (p *connectProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func TestHTTPClientBehindProxy(t *testing.T) {
	target := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "via proxy: "+r.Host)
	}))
	t.Cleanup(target.Close)
	cp := &connectProxy{upstream: target.Listener.Addr().String()}
	proxySrv := httptest.NewServer(cp)
	t.Cleanup(proxySrv.Close)

	// The proxy is on loopback and not allow-listed: it is the operator's.
	// example.com is in the test server's certificate.
	r := fakeResolver{
		"example.com":          {"93.184.215.14"},
		"internal.example.com": {"10.0.0.7"},
	}
	g, err := newGuard(nil, &httpproxy.Config{HTTPSProxy: proxySrv.URL}, r)
	if err != nil {
		t.Fatal(err)
	}
	g.rootCAs = poolOf(target)
	c := g.HTTPClient(0)

	t.Run("PublicTargetThroughProxy", func(t *testing.T) {
		resp, err := get(t, c, "https://example.com/repo.git/info/refs")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "via proxy: example.com" {
			t.Fatalf("body %q", body)
		}
		if got := cp.seen(); len(got) != 1 || got[0] != "example.com:443" {
			t.Fatalf("proxy saw %v", got)
		}
	})
	t.Run("PrivateTargetRefusedBeforeProxy", func(t *testing.T) {
		_, err := get(t, c, "https://internal.example.com/repo.git")
		assertRefused(t, err, reasonPrivate)
	})
	t.Run("MetadataTargetRefusedBeforeProxy", func(t *testing.T) {
		_, err := get(t, c, "https://169.254.169.254/latest/meta-data/")
		assertRefused(t, err, reasonMetadata)
	})
	t.Run("ProxyAddressAsTargetRefused", func(t *testing.T) {
		// Loopback targets bypass the proxy (httpproxy's rule), so this
		// would be a direct dial to the unchecked proxy address.
		u, _ := url.Parse(proxySrv.URL)
		_, err := get(t, c, "https://"+u.Host+"/")
		assertRefused(t, err, "proxy")
	})
	if got := cp.seen(); len(got) != 1 {
		t.Errorf("proxy saw %v, want only the public target", got)
	}
}

func TestProxyAddr(t *testing.T) {
	tests := map[string]string{
		"http://proxy.corp:3128":          "proxy.corp:3128",
		"proxy.corp:3128":                 "proxy.corp:3128",
		"https://proxy.corp":              "proxy.corp:443",
		"http://user:pw@Proxy.Corp":       "proxy.corp:80",
		"socks5://10.0.0.1":               "10.0.0.1:1080",
		"http://[fd00::1]:8080":           "[fd00::1]:8080",
		"http://127.0.0.1:8080/some/path": "127.0.0.1:8080",
	}
	for in, want := range tests {
		got, err := proxyAddr(in)
		if err != nil || got != want {
			t.Errorf("proxyAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := proxyAddr("http://user:secret@%zz")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("malformed proxy: error %v", err)
	}
}

// TestGoGitHTTPThroughGuard drives go-git's smart HTTP transport with
// HTTPClient, the wiring doc.go describes.
func TestGoGitHTTPThroughGuard(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		http.Redirect(w, r, "http://127.0.0.1:1/moved.git/info/refs?service=git-upload-pack", http.StatusMovedPermanently)
	}))
	t.Cleanup(srv.Close)
	advertise := func(t *testing.T, g *Guard) error {
		ep, err := transport.NewEndpoint(srv.URL + "/acme/gitops.git")
		if err != nil {
			t.Fatal(err)
		}
		tr := githttp.NewClientWithOptions(g.HTTPClient(0), &githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects})
		sess, err := tr.NewUploadPackSession(ep, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sess.Close() }()
		_, err = sess.AdvertisedReferencesContext(testContext(t))
		return err
	}
	t.Run("RefusedWithoutAllowList", func(t *testing.T) {
		assertRefused(t, advertise(t, MustGuard(t, nil, nil)), "plain http")
	})
	t.Run("RedirectNotFollowed", func(t *testing.T) {
		if err := advertise(t, MustGuard(t, []string{"127.0.0.1"}, nil)); err == nil {
			t.Fatal("a redirect answer was taken for references")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(paths) != 1 || paths[0] != "/acme/gitops.git/info/refs" {
			t.Fatalf("server saw %v", paths)
		}
	})
}

// TestHTTPClientTeamEntries: one client serves every team; a connection
// team A's entry allowed is not reused for team B, whose request is
// refused at its own dial.
func TestHTTPClientTeamEntries(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	g := MustGuard(t, []string{"team-a=127.0.0.1"}, nil)
	g.rootCAs = poolOf(srv)
	c := g.HTTPClient(0)
	getFor := func(team string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(NewContextWithTeam(testContext(t), team), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close() // back to the pool
		}
		return resp, err
	}
	for range 2 {
		if resp, err := getFor("team-a"); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("team-a: %v %v", resp, err)
		}
	}
	_, err := getFor("team-b")
	assertRefused(t, err, reasonLoopback)
	_, err = getFor("")
	assertRefused(t, err, reasonLoopback)
}
