package sns

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// testCA issues the TLS certificate of the test's SNS host and the signing
// certificates; signingKey signs test messages.
var (
	testCA     *authority
	signingKey *rsa.PrivateKey
)

// TestMain trusts testCA through SSL_CERT_FILE, the way an operator adds a
// corporate root. Go reads SSL_CERT_FILE once per process, when a TLS
// client first needs the system roots, so it is set here before any test
// runs rather than with t.Setenv in each test (a later t.Setenv would be
// ignored). The product has no switch for this.
func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sns-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sns tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	testCA, err = newAuthority("Kukie SNS test root")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sns tests: test CA:", err)
		return 1
	}
	roots := filepath.Join(dir, "roots.pem")
	if err := os.WriteFile(roots, testCA.certPEM, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "sns tests:", err)
		return 1
	}
	if err := os.Setenv("SSL_CERT_FILE", roots); err != nil {
		fmt.Fprintln(os.Stderr, "sns tests:", err)
		return 1
	}
	signingKey, err = rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sns tests: signing key:", err)
		return 1
	}
	return m.Run()
}
