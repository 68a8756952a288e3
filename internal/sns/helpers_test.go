package sns

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"
)

// The fixed clock of the tests, and the topic and certificate they use.
var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

const (
	testHost      = "sns.us-east-1.amazonaws.com"
	testTopic     = "arn:aws:sns:us-east-1:123456789012:kukie-stack-events"
	testCertPath  = "/SimpleNotificationService-0123456789abcdef0123456789abcdef.pem"
	testCertURL   = "https://" + testHost + testCertPath
	testToken     = "2336412f37fb687f5d51e6e241d638b05824e9e2f6713b42abaeb8607743f5ba91d34edd2b9dabe2f1616ed775b1ac7b"
	testMessageID = "165545c9-2a5c-472c-8df2-7ff2be2b3b1b"
)

// authority is a test certificate authority.
type authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: pemCert(der)}, nil
}

func mustAuthority(tb testing.TB, name string) *authority {
	tb.Helper()
	a, err := newAuthority(name)
	if err != nil {
		tb.Fatalf("test CA: %v", err)
	}
	return a
}

// issue signs tmpl for pub and returns the certificate's DER.
func (a *authority) issue(tb testing.TB, tmpl *x509.Certificate, pub crypto.PublicKey) []byte {
	tb.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		tb.Fatal(err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, pub, a.key)
	if err != nil {
		tb.Fatalf("issue certificate: %v", err)
	}
	return der
}

// tlsCertificate is a server certificate for host, valid now by the real
// clock (TLS verification does not use the Verifier's clock).
func (a *authority) tlsCertificate(tb testing.TB, host string) tls.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der := a.issue(tb, &x509.Certificate{
		Subject:     pkix.Name{CommonName: host},
		DNSNames:    []string{host},
		NotBefore:   time.Now().Add(-time.Hour),
		NotAfter:    time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, key.Public())
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// signingCertPEM is an SNS-style signing certificate for signingKey, valid
// from notBefore to notAfter.
func signingCertPEM(tb testing.TB, notBefore, notAfter time.Time) []byte {
	tb.Helper()
	return pemCert(testCA.issue(tb, &x509.Certificate{
		Subject:   pkix.Name{CommonName: "sns.amazonaws.com"},
		NotBefore: notBefore,
		NotAfter:  notAfter,
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}, signingKey.Public()))
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// sign sets m's SignatureVersion and signs it with signingKey.
func sign(tb testing.TB, m Message, version string) Message {
	tb.Helper()
	m.SignatureVersion = version
	text, err := StringToSign(m)
	if err != nil {
		tb.Fatalf("StringToSign: %v", err)
	}
	var sig []byte
	switch version {
	case SignatureVersion1:
		sum := sha1.Sum(text)
		sig, err = rsa.SignPKCS1v15(rand.Reader, signingKey, crypto.SHA1, sum[:])
	case SignatureVersion2:
		sum := sha256.Sum256(text)
		sig, err = rsa.SignPKCS1v15(rand.Reader, signingKey, crypto.SHA256, sum[:])
	default:
		tb.Fatalf("unknown signature version %q", version)
	}
	if err != nil {
		tb.Fatalf("sign: %v", err)
	}
	m.Signature = base64.StdEncoding.EncodeToString(sig)
	return m
}

func snsTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// notification is an unsigned CloudFormation notification published at ts.
func notification(ts time.Time) Message {
	return Message{
		Type:           TypeNotification,
		MessageID:      testMessageID,
		TopicARN:       testTopic,
		Subject:        CloudFormationSubject,
		Message:        "StackId='arn:aws:cloudformation:us-east-1:123456789012:stack/kukie/0f1e'\nStackName='kukie'\n",
		Timestamp:      snsTimestamp(ts),
		SigningCertURL: testCertURL,
		UnsubscribeURL: "https://" + testHost + "/?Action=Unsubscribe&SubscriptionArn=" + testTopic + ":4d5c",
	}
}

// confirmation is an unsigned SubscriptionConfirmation or
// UnsubscribeConfirmation published at ts.
func confirmation(typ string, ts time.Time) Message {
	return Message{
		Type:           typ,
		MessageID:      testMessageID,
		TopicARN:       testTopic,
		Message:        "You have chosen to subscribe to the topic " + testTopic + ".",
		Timestamp:      snsTimestamp(ts),
		SigningCertURL: testCertURL,
		SubscribeURL:   "https://" + testHost + "/?Action=ConfirmSubscription&TopicArn=" + testTopic + "&Token=" + testToken,
		Token:          testToken,
	}
}

// snsHost is a local stand-in for sns.<region>.amazonaws.com: a TLS server
// with a certificate for that name, reached through a CONNECT proxy that
// HTTPS_PROXY points at, and a Verifier built in that environment.
type snsHost struct {
	mux      *http.ServeMux
	verifier *Verifier
	stop     chan struct{} // closed at cleanup; blocking handlers wait on it

	mu       sync.Mutex
	hits     map[string]int
	connects []string
}

type hostOptions struct {
	tlsIssuer *authority // issues the host's TLS certificate; nil means testCA (trusted)
	verifier  Options    // Now defaults to the test clock
}

// mustSNSHost starts the host, serving a signing certificate valid around
// testNow at testCertPath, and builds its Verifier.
func mustSNSHost(t *testing.T, o hostOptions) *snsHost {
	t.Helper()
	h := &snsHost{mux: http.NewServeMux(), stop: make(chan struct{}), hits: map[string]int{}}
	h.mux.Handle(testCertPath, servePEM(signingCertPEM(t, testNow.Add(-24*time.Hour), testNow.Add(24*time.Hour))))

	issuer := o.tlsIssuer
	if issuer == nil {
		issuer = testCA
	}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.hits[r.URL.Path]++
		h.mu.Unlock()
		h.mux.ServeHTTP(w, r)
	}))
	server.TLS = &tls.Config{Certificates: []tls.Certificate{issuer.tlsCertificate(t, testHost)}}
	server.StartTLS()
	t.Cleanup(server.Close)

	proxy := httptest.NewServer(h.connectProxy(t, server.Listener.Addr().String()))
	t.Cleanup(proxy.Close)
	t.Cleanup(func() { close(h.stop) })

	t.Setenv("HTTPS_PROXY", proxy.URL)
	for _, name := range []string{"https_proxy", "NO_PROXY", "no_proxy"} {
		t.Setenv(name, "")
	}
	vo := o.verifier
	if vo.Now == nil {
		vo.Now = func() time.Time { return testNow }
	}
	v, err := New(vo)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(v.client.CloseIdleConnections)
	h.verifier = v
	return h
}

// connectProxy tunnels CONNECT requests for testHost:443 to target.
func (h *snsHost) connectProxy(t *testing.T, target string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.connects = append(h.connects, r.Method+" "+r.Host)
		h.mu.Unlock()
		if r.Method != http.MethodConnect || r.Host != testHost+":443" {
			http.Error(w, "this proxy only tunnels to "+testHost+":443", http.StatusForbidden)
			return
		}
		upstream, err := net.Dial("tcp", target)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		client, buffered, err := http.NewResponseController(w).Hijack()
		if err != nil {
			upstream.Close()
			t.Errorf("proxy hijack: %v", err)
			return
		}
		if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
			client.Close()
			upstream.Close()
			return
		}
		go pipe(upstream, buffered.Reader, client, upstream)
		go pipe(client, upstream, client, upstream)
	})
}

// pipe copies src to dst and then closes both ends of the tunnel.
func pipe(dst io.Writer, src io.Reader, ends ...io.Closer) {
	_, _ = io.Copy(dst, src)
	for _, c := range ends {
		c.Close()
	}
}

func servePEM(body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-x509-ca-cert")
		_, _ = w.Write(body)
	})
}

// hitCount is how many requests the host served for path.
func (h *snsHost) hitCount(path string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hits[path]
}

func (h *snsHost) connectsSeen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.connects...)
}

// certURL is the URL of a certificate at path on the test host.
func certURL(path string) string {
	return (&url.URL{Scheme: "https", Host: testHost, Path: path}).String()
}
