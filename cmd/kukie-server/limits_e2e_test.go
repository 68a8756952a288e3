package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
)

// TestConnectionLimits drives the real listener: headers above 64 KiB are
// refused with 431, and a client that never finishes its headers
// (slowloris) is cut off by the read-header timeout while other clients
// are served. The deadline only catches a hang.
func TestConnectionLimits(t *testing.T) {
	s := startServer(t, pgtest.MustCreateDatabase(t), nil)

	req, err := http.NewRequest("GET", s.public+"/v1/plans", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Padding", strings.Repeat("x", 80<<10))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("80 KiB of headers: %d, want 431", res.StatusCode)
	}

	conn, err := net.Dial("tcp", s.publicAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/plans HTTP/1.1\r\nHost: kukie\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() {
		_, err := bufio.NewReader(conn).ReadString('\n')
		closed <- err
	}()
	// Others are served meanwhile.
	if status, body := call(t, "GET", s.public+"/v1/plans", e2eToken(t, "member"), ""); status != 200 {
		t.Errorf("a normal request beside the slow one: %d %s", status, body)
	}
	select {
	case err := <-closed:
		if err == nil {
			t.Error("the server answered headers that never ended")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a client that never finishes its headers still holds its connection after 60 s")
	}
}
