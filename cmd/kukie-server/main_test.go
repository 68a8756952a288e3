package main

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/internal/testkit/snstest"
)

// snsAuthority is the test CA this process (and every child it starts)
// trusts through SSL_CERT_FILE: it issues the certificates of the local
// stand-in for sns.<region>.amazonaws.com.
var snsAuthority *snstest.Authority

// TestMain installs snsAuthority before any test runs: Go reads
// SSL_CERT_FILE once per process, the first time it needs the system roots.
func TestMain(m *testing.M) {
	// The server renders in a child process of its own binary
	// (`kukie-server render`); under test that binary is this one, so it
	// answers the same command line as the real one.
	if len(os.Args) == 2 && os.Args[1] == "render" {
		os.Exit(render.ChildMain(os.Stdin, os.Stdout))
	}
	// Tests that need separate server processes (several replicas on one
	// database) start this binary with `serve`: it runs the server exactly
	// as main does.
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		main()
		os.Exit(0)
	}
	ca, cleanup, err := snstest.InstallAuthority("kukie-server tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, "snstest.InstallAuthority:", err)
		os.Exit(1)
	}
	snsAuthority = ca
	// The local Git servers (internal/testkit/gittest) serve TLS with httptest's
	// certificate: trusted the same way, before any TLS use.
	if err := trustHTTPTestCertificate(os.Getenv("SSL_CERT_FILE")); err != nil {
		fmt.Fprintln(os.Stderr, "trust the httptest certificate:", err)
		os.Exit(1)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// trustHTTPTestCertificate appends the certificate every httptest TLS
// server presents to the roots file.
func trustHTTPTestCertificate(roots string) error {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	f, err := os.OpenFile(roots, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := pem.Encode(f, &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
