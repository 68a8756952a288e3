package snstest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServerTLS serves HTTPS with a certificate from ServerTLS and reaches
// it with a client that trusts only the authority.
func TestServerTLS(t *testing.T) {
	ca := MustAuthority(t, "snstest development root")
	config, err := ca.ServerTLS("127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	srv.TLS = config
	srv.StartTLS()
	t.Cleanup(srv.Close)

	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.PEM()) {
		t.Fatal("the authority's PEM holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	res, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s trusting only the authority: %v", srv.URL, err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", srv.URL, res.Status)
	}
	leaf := res.TLS.PeerCertificates[0]
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("IP SANs = %v, want [127.0.0.1]", leaf.IPAddresses)
	}
	if diff := cmp.Diff([]string{"localhost"}, leaf.DNSNames); diff != "" {
		t.Errorf("DNS SANs (-want +got):\n%s", diff)
	}
	if leaf.NotBefore.Before(ca.cert.NotBefore) || leaf.NotAfter.After(ca.cert.NotAfter) {
		t.Errorf("certificate valid %v to %v, outside the authority's %v to %v",
			leaf.NotBefore, leaf.NotAfter, ca.cert.NotBefore, ca.cert.NotAfter)
	}

	if _, err := ca.ServerTLS(); err == nil {
		t.Error("ServerTLS with no host succeeded")
	}
}
