package snstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/sns"
)

// CertMode is how a Host answers a request for its signing certificate.
type CertMode int

// The answers a Host can give for its signing certificate.
const (
	// CertServe answers 200 with the PEM certificate.
	CertServe CertMode = iota
	// CertRedirect answers 302 to RedirectPath, which serves the
	// certificate, so a client that follows redirects would succeed.
	CertRedirect
	// CertServerError answers 500.
	CertServerError
	// CertHang does not answer until the client gives up or the test ends.
	CertHang
)

// NoProxy is the NO_PROXY value Env and SetEnv set: loopback only, so that
// requests to local test servers bypass the proxy and everything else goes
// through it (and is refused unless it is for SNS).
const NoProxy = "127.0.0.1,localhost,::1"

// snsHostName matches the names a Host answers for.
var snsHostName = regexp.MustCompile(`^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$`)

// HostOptions tunes a Host; the zero value serves a trusted host with a
// signing certificate valid around the current time.
type HostOptions struct {
	// TLSIssuer issues the host's TLS certificates; nil means the authority
	// given to StartHost. An authority the process does not trust makes
	// every certificate fetch fail, as for a host impersonating SNS.
	TLSIssuer *Authority
	// Now is the clock for message Timestamps and the default validity of
	// the signing certificate; nil means time.Now.
	Now func() time.Time
	// CertNotBefore and CertNotAfter bound the signing certificate's
	// validity; zero means 24 hours before and after Now at start.
	CertNotBefore, CertNotAfter time.Time
	// CertMode is the first answer for the signing certificate; see
	// SetCertMode.
	CertMode CertMode
}

// Host is a local stand-in for every SNS regional endpoint: an HTTPS server
// for sns.<region>.amazonaws.com(.cn) serving a signing certificate and
// ConfirmSubscription, behind a CONNECT proxy, plus the RSA key that signs
// its messages. It is safe for concurrent use.
type Host struct {
	now          func() time.Time
	key          *rsa.PrivateKey
	certPEM      []byte
	certPath     string
	redirectPath string
	tlsIssuer    *Authority
	tlsKey       crypto.Signer
	server       *httptest.Server
	proxyServer  *httptest.Server
	proxy        *connectProxy
	stop         chan struct{} // closed at cleanup; hanging handlers wait on it

	mu            sync.Mutex
	certMode      CertMode
	tlsCerts      map[string]*tls.Certificate // by server name
	hits          map[string]int              // by path
	tokens        map[string]string           // token to topic ARN
	subscriptions map[string]string           // topic ARN to subscription ARN
	confirmations []Confirmation
}

// StartHost starts a Host whose TLS certificates and signing certificate
// ca issues, until the test ends. Cleanup ends every tunnel and waits for
// every goroutine the host started.
func StartHost(tb testing.TB, ca *Authority, o HostOptions) *Host {
	tb.Helper()
	h, stop, err := NewHost(ca, o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return h
}

// NewHost is StartHost outside a test, for development tools: the host
// serves until stop is called, which ends every tunnel and waits for every
// goroutine the host started.
func NewHost(ca *Authority, o HostOptions) (h *Host, stop func(), err error) {
	h = &Host{
		now:           o.Now,
		tlsIssuer:     o.TLSIssuer,
		stop:          make(chan struct{}),
		certMode:      o.CertMode,
		tlsCerts:      map[string]*tls.Certificate{},
		hits:          map[string]int{},
		tokens:        map[string]string{},
		subscriptions: map[string]string{},
	}
	if h.certPath, err = randomCertPath(); err != nil {
		return nil, nil, err
	}
	if h.redirectPath, err = randomCertPath(); err != nil {
		return nil, nil, err
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.tlsIssuer == nil {
		h.tlsIssuer = ca
	}
	if h.key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, nil, fmt.Errorf("snstest: signing key: %w", err)
	}
	if h.tlsKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, nil, fmt.Errorf("snstest: TLS key: %w", err)
	}
	start := h.now()
	notBefore, notAfter := o.CertNotBefore, o.CertNotAfter
	if notBefore.IsZero() {
		notBefore = start.Add(-24 * time.Hour)
	}
	if notAfter.IsZero() {
		notAfter = start.Add(24 * time.Hour)
	}
	der, err := ca.issue(&x509.Certificate{
		Subject:   pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: notBefore,
		NotAfter:  notAfter,
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}, h.key.Public())
	if err != nil {
		return nil, nil, err
	}
	h.certPEM = pemCertificate(der)

	quiet := log.New(io.Discard, "", 0) // refused handshakes are expected
	h.server = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	h.server.TLS = &tls.Config{GetCertificate: h.certificateFor}
	h.server.Config.ErrorLog = quiet
	h.server.StartTLS()
	h.proxy = newConnectProxy(h.server.Listener.Addr().String())
	h.proxyServer = httptest.NewUnstartedServer(h.proxy)
	h.proxyServer.Config.ErrorLog = quiet
	h.proxyServer.Start()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(h.stop)
			h.proxy.close()
			h.proxyServer.Close()
			h.server.Close()
		})
	}
	return h, stop, nil
}

// randomCertPath is a new, unguessable signing certificate path.
func randomCertPath() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("snstest: %w", err)
	}
	return "/SimpleNotificationService-" + hex.EncodeToString(b) + ".pem", nil
}

// ProxyURL is the URL of the host's CONNECT proxy, for HTTPS_PROXY.
func (h *Host) ProxyURL() string { return h.proxyServer.URL }

// Env is the environment a child process needs to reach the host: the
// proxy variables, to append to os.Environ(). SSL_CERT_FILE is not in it:
// it is process-wide and set once (see InstallAuthority), and a child
// inherits it from the test process.
func (h *Host) Env() []string {
	p := h.ProxyURL()
	return []string{
		"HTTPS_PROXY=" + p,
		"https_proxy=" + p,
		"NO_PROXY=" + NoProxy,
		"no_proxy=" + NoProxy,
	}
}

// SetEnv sets Env's variables for the rest of the test, for an in-process
// sns.Verifier: build it with sns.New after SetEnv, since it reads them
// then. Like tb.Setenv, it cannot be used in parallel tests.
func (h *Host) SetEnv(tb testing.TB) {
	tb.Helper()
	for _, kv := range h.Env() {
		k, v, _ := strings.Cut(kv, "=")
		tb.Setenv(k, v)
	}
}

// CertPath is the path of the host's signing certificate,
// /SimpleNotificationService-<32 hex>.pem, random per host so that a
// Verifier shared across hosts never finds another host's certificate in
// its cache.
func (h *Host) CertPath() string { return h.certPath }

// RedirectPath is where CertRedirect points: another certificate path,
// serving the same certificate.
func (h *Host) RedirectPath() string { return h.redirectPath }

// CertURL is the SigningCertURL of the host's certificate on region's SNS
// endpoint.
func (h *Host) CertURL(region string) string {
	return "https://" + regionHost(region) + h.certPath
}

// SigningCertificate is the PEM certificate of the key that signs the
// host's messages.
func (h *Host) SigningCertificate() []byte { return append([]byte(nil), h.certPEM...) }

// SetCertMode changes how later requests for the signing certificate are
// answered, e.g. to fail a first delivery and let SNS's retry succeed.
func (h *Host) SetCertMode(m CertMode) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.certMode = m
}

// Hits is how many requests the host has served for path.
func (h *Host) Hits(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

// CertFetches is how many requests the host has served for any signing
// certificate path (/SimpleNotificationService-*), served or not: every
// certificate fetch that reached SNS's stand-in.
func (h *Host) CertFetches() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for path, hits := range h.hits {
		if strings.HasPrefix(path, "/SimpleNotificationService-") {
			n += hits
		}
	}
	return n
}

// ConnectTargets lists the host:port of every CONNECT the proxy received,
// tunnelled or refused, in order.
func (h *Host) ConnectTargets() []string { return h.proxy.connectTargets() }

// regionHost is region's SNS endpoint, by the product's rule for the
// region's partition.
func regionHost(region string) string {
	partition := "aws"
	switch {
	case strings.HasPrefix(region, "cn-"):
		partition = "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		partition = "aws-us-gov"
	}
	return sns.Topic{Partition: partition, Region: region}.SNSHost()
}

// certificateFor issues, once per name, a TLS certificate for the SNS
// endpoint the client asks for.
func (h *Host) certificateFor(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := hello.ServerName
	if !snsHostName.MatchString(name) {
		return nil, errors.New("snstest: no certificate for " + name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.tlsCerts[name]; ok {
		return c, nil
	}
	now := time.Now() // TLS verification uses the real clock
	der, err := h.tlsIssuer.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    []string{name},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, h.tlsKey.Public())
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: h.tlsKey}
	h.tlsCerts[name] = c
	return c, nil
}

func (h *Host) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.hits[r.URL.Path]++
	mode := h.certMode
	h.mu.Unlock()
	switch r.URL.Path {
	case h.certPath:
		h.serveCert(w, r, mode)
	case h.redirectPath:
		h.writeCert(w)
	case "/":
		h.serveAction(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (h *Host) serveCert(w http.ResponseWriter, r *http.Request, mode CertMode) {
	switch mode {
	case CertRedirect:
		http.Redirect(w, r, "https://"+r.Host+h.redirectPath, http.StatusFound)
	case CertServerError:
		http.Error(w, "internal error", http.StatusInternalServerError)
	case CertHang:
		select {
		case <-h.stop:
		case <-r.Context().Done():
		}
		// Any answer, even an empty 200, could still reach a client that
		// is closing the connection; end it without one.
		panic(http.ErrAbortHandler)
	default:
		h.writeCert(w)
	}
}

func (h *Host) writeCert(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-x509-ca-cert")
	_, _ = w.Write(h.certPEM)
}
