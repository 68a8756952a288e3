package tcpproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/testkit/tcpproxy"
)

// echo serves lines back on a loopback port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through addr and returns the answer or the error;
// the deadline only catches a hang.
func roundTrip(t *testing.T, addr string, wait time.Duration) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestModes(t *testing.T) {
	p := tcpproxy.MustStart(t, echo(t))
	if got, err := roundTrip(t, p.Addr(), 10*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("forward: %q %v", got, err)
	}
	for _, c := range []struct {
		name  string
		mode  tcpproxy.Mode
		check func(error) bool
	}{
		{"Close", tcpproxy.Close, func(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) }},
		{"Reset", tcpproxy.Reset, func(err error) bool { return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) }},
		// The black hole never answers: only the read deadline ends the wait.
		{"BlackHole", tcpproxy.BlackHole, func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p.SetMode(c.mode)
			got, err := roundTrip(t, p.Addr(), 300*time.Millisecond)
			if !c.check(err) {
				t.Errorf("answer %q, error %v", got, err)
			}
		})
	}
	t.Run("Restored", func(t *testing.T) {
		p.SetDown(true)
		if _, err := roundTrip(t, p.Addr(), 10*time.Second); err == nil {
			t.Error("SetDown(true) let a round trip through")
		}
		p.SetDown(false)
		if got, err := roundTrip(t, p.Addr(), 10*time.Second); err != nil || got != "ping\n" {
			t.Errorf("after SetDown(false): %q %v", got, err)
		}
	})
}

func TestModeChangeCutsOpenConnections(t *testing.T) {
	p := tcpproxy.MustStart(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "ping\n" {
		t.Fatalf("before the cut: %q %v", got, err)
	}
	p.SetMode(tcpproxy.BlackHole)
	if _, err := r.ReadString('\n'); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("an open connection survived the change to a black hole: %v", err)
	}
}

func TestLatency(t *testing.T) {
	p := tcpproxy.MustStart(t, echo(t))
	const d = 100 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	got, err := roundTrip(t, p.Addr(), 10*time.Second)
	if err != nil || got != "ping\n" {
		t.Fatalf("through a slow link: %q %v", got, err)
	}
	// A lower bound only: the bytes cross the proxy twice, d late each way.
	if elapsed := time.Since(start); elapsed < 2*d {
		t.Errorf("round trip took %v, less than twice the latency %v", elapsed, d)
	}
}

func TestPartition(t *testing.T) {
	p := tcpproxy.MustStart(t, echo(t))
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	r := bufio.NewReader(open)
	_ = open.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(open, "before\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "before\n" {
		t.Fatalf("before the partition: %q %v", got, err)
	}

	p.Partition(true)
	// Neither the open connection nor a new one gets an answer, a reset
	// or an end: only the read deadline ends the wait.
	_ = open.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := io.WriteString(open, "held\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("open connection while partitioned: %q %v", got, err)
	}
	waiting, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	_ = waiting.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := io.WriteString(waiting, "waited\n"); err != nil {
		t.Fatal(err)
	}
	wr := bufio.NewReader(waiting)
	if got, err := wr.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("new connection while partitioned: %q %v", got, err)
	}

	// Healed: what was held arrives, and the waiting connection connects.
	p.Partition(false)
	_ = open.SetDeadline(time.Now().Add(10 * time.Second))
	_ = waiting.SetDeadline(time.Now().Add(10 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Errorf("held bytes after healing: %q %v", got, err)
	}
	if got, err := wr.ReadString('\n'); err != nil || got != "waited\n" {
		t.Errorf("waiting connection after healing: %q %v", got, err)
	}
}
