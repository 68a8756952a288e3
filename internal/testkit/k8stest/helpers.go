package k8stest

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"

	"k8s.io/klog/v2"
)

// TokenKubeconfig returns a kubeconfig for server with a bearer token and
// TLS verification off: for test clusters that refuse connections, never
// answer, or reject the token.
func TokenKubeconfig(server, token string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: %q}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server, token)
}

// ClosedAddr returns a loopback host:port nothing listens on.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// QuietClientGo keeps client-go's own log lines (about the failures tests
// provoke on purpose) out of the test output.
func QuietClientGo() {
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
