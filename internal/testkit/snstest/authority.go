package snstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"testing"
	"time"
)

// Authority is a test certificate authority: it issues the TLS certificates
// of a Host and its signing certificate. It is safe for concurrent use.
type Authority struct {
	cert    *x509.Certificate
	key     crypto.Signer
	certPEM []byte
}

// NewAuthority creates a self-signed ECDSA authority named name, valid by the
// real clock from an hour ago for a week. It needs no *testing.T, so that
// TestMain can create the authority the process trusts.
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("snstest: authority key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("snstest: authority certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("snstest: authority certificate: %w", err)
	}
	return &Authority{cert: cert, key: key, certPEM: pemCertificate(der)}, nil
}

// MustAuthority is NewAuthority failing tb on error, for an authority a
// test creates itself, such as one the process does not trust.
func MustAuthority(tb testing.TB, name string) *Authority {
	tb.Helper()
	a, err := NewAuthority(name)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// InstallAuthority creates an authority, writes it with WriteRoots to a new
// temporary directory and sets SSL_CERT_FILE to that file for this process
// and the children that inherit its environment. Call it from TestMain
// before m.Run: Go reads SSL_CERT_FILE only the first time the process needs
// the system roots. The system's certificate directories stay trusted.
// cleanup removes the directory.
func InstallAuthority(name string) (ca *Authority, cleanup func(), err error) {
	ca, err = NewAuthority(name)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "snstest-")
	if err != nil {
		return nil, nil, fmt.Errorf("snstest: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	path, err := ca.WriteRoots(dir)
	if err == nil {
		err = os.Setenv("SSL_CERT_FILE", path)
	}
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("snstest: %w", err)
	}
	return ca, cleanup, nil
}

// PEM is the authority's certificate, PEM-encoded.
func (a *Authority) PEM() []byte { return append([]byte(nil), a.certPEM...) }

// WriteRoots writes the authority's PEM certificate to a new file in dir and
// returns its path, for SSL_CERT_FILE.
func (a *Authority) WriteRoots(dir string) (path string, err error) {
	f, err := os.CreateTemp(dir, "snstest-roots-*.pem")
	if err != nil {
		return "", fmt.Errorf("snstest: roots file: %w", err)
	}
	_, err = f.Write(a.certPEM)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("snstest: roots file: %w", err)
	}
	return f.Name(), nil
}

// ServerTLS is a TLS configuration holding a fresh ECDSA certificate the
// authority issues for hosts (IP literals or DNS names), valid as long as
// the authority, for other local HTTPS servers, such as a development Git
// server, that clients trust through the same roots file.
func (a *Authority) ServerTLS(hosts ...string) (*tls.Config, error) {
	if len(hosts) == 0 {
		return nil, errors.New("snstest: a server certificate needs at least one host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("snstest: server key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		NotBefore:   a.cert.NotBefore,
		NotAfter:    a.cert.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := a.issue(tmpl, key.Public())
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("snstest: server certificate: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// issue signs tmpl for pub with a random serial number and returns the
// certificate's DER.
func (a *Authority) issue(tmpl *x509.Certificate, pub crypto.PublicKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return nil, fmt.Errorf("snstest: serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, pub, a.key)
	if err != nil {
		return nil, fmt.Errorf("snstest: issue certificate: %w", err)
	}
	return der, nil
}

func pemCertificate(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
