package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/kukie/gitops-server/internal/snstest"
)

// snsAuthority is the test CA this process (and every child it starts)
// trusts through SSL_CERT_FILE: it issues the certificates of the local
// stand-in for sns.<region>.amazonaws.com.
var snsAuthority *snstest.Authority

// TestMain installs snsAuthority before any test runs: Go reads
// SSL_CERT_FILE once per process, the first time it needs the system roots.
func TestMain(m *testing.M) {
	ca, cleanup, err := snstest.InstallAuthority("kukie-server tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, "snstest.InstallAuthority:", err)
		os.Exit(1)
	}
	snsAuthority = ca
	code := m.Run()
	cleanup()
	os.Exit(code)
}
