// Package freeport picks free loopback addresses for servers a test starts.
package freeport

import (
	"net"
	"testing"
)

// Addrs returns n distinct free 127.0.0.1 addresses: every listener is
// held until all are chosen (separate picks may return the same port).
func Addrs(tb testing.TB, n int) []string {
	tb.Helper()
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("a free loopback port is needed: %v", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}
