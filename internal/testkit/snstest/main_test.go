package snstest

import (
	"fmt"
	"os"
	"testing"
)

// testCA is the authority this test process trusts through SSL_CERT_FILE.
var testCA *Authority

// TestMain installs testCA before any test runs, the usage the package
// documents: Go reads SSL_CERT_FILE once per process.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	ca, cleanup, err := InstallAuthority("snstest test root")
	if err != nil {
		fmt.Fprintln(os.Stderr, "snstest tests:", err)
		return 1
	}
	defer cleanup()
	testCA = ca
	return m.Run()
}
