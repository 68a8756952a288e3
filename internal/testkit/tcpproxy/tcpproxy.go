// Package tcpproxy is a TCP proxy a test owns, to put between the service
// and a dependency and break the link in the ways networks break: cut,
// reset, black-holed or slow. It simulates an outage without stopping a
// server other tests share.
package tcpproxy

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Mode is what the proxy does with the connections it accepts.
type Mode int

const (
	// Forward passes bytes both ways, Latency late.
	Forward Mode = iota
	// Close closes each connection as soon as it is accepted (FIN): the
	// client sees the connection end before any answer.
	Close
	// Reset aborts each connection as soon as it is accepted (RST): the
	// client sees "connection reset by peer", as from a host refusing it.
	Reset
	// BlackHole accepts connections, reads and drops what clients send and
	// never answers or closes them (until the mode changes or the test
	// ends): a peer that vanished without a word.
	BlackHole
)

// Proxy forwards connections from its address to a target, or breaks them
// as its Mode says.
type Proxy struct {
	ln     net.Listener
	target string
	closed chan struct{} // closed when the test ends

	mu      sync.Mutex
	mode    Mode
	latency time.Duration
	conns   map[net.Conn]struct{}
	healed  chan struct{} // while partitioned: closed when the partition heals
}

// MustStart starts a proxy on a free loopback port forwarding to target; it
// stops when the test ends.
func MustStart(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("tcpproxy: listen: %v", err)
	}
	p := &Proxy{ln: ln, target: target, closed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	go p.acceptLoop()
	tb.Cleanup(func() {
		ln.Close()
		close(p.closed)
		p.SetMode(Close)
	})
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDown cuts (true: SetMode(Close)) or restores (false: SetMode(Forward))
// the link.
func (p *Proxy) SetDown(down bool) {
	if down {
		p.SetMode(Close)
		return
	}
	p.SetMode(Forward)
}

// SetMode changes what the proxy does with new connections. Every open
// connection — forwarded or black-holed — is cut, so clients meet the new
// mode when they reconnect.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Partition makes the link a network partition (true) or heals it
// (false). While partitioned, forwarded connections stay open and pass no
// bytes either way — what either side sends is held, as TCP keeps
// retransmitting it — and new connections are accepted but reach nothing:
// no reset, no close, no answer. Healing delivers what was held and
// connects the connections that waited, unless their clients gave up.
func (p *Proxy) Partition(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.healed == nil:
		p.healed = make(chan struct{})
	case !on && p.healed != nil:
		close(p.healed)
		p.healed = nil
	}
}

// hold waits while the link is partitioned; false when the test ended.
func (p *Proxy) hold() bool {
	for {
		p.mu.Lock()
		healed := p.healed
		p.mu.Unlock()
		if healed == nil {
			return true
		}
		select {
		case <-healed:
		case <-p.closed:
			return false
		}
	}
}

// SetLatency delays every byte of connections accepted from now on by d,
// in both directions (0: no delay); connections already open keep theirs.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// admit registers c as open while the mode is still want; false means it
// changed meanwhile and c must be closed.
func (p *Proxy) admit(c net.Conn, want Mode) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != want {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) forget(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

func (p *Proxy) settings() (Mode, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode, p.latency
}

func (p *Proxy) acceptLoop() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(client)
	}
}

func (p *Proxy) handle(client net.Conn) {
	mode, latency := p.settings()
	switch mode {
	case Close:
		client.Close()
	case Reset:
		if tcp, ok := client.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close sends RST instead of FIN
		}
		client.Close()
	case BlackHole:
		if !p.admit(client, BlackHole) {
			client.Close()
			return
		}
		_, _ = io.Copy(io.Discard, client) // until SetMode or the end of the test closes it
		client.Close()
		p.forget(client)
	case Forward:
		p.forward(client, latency)
	}
}

func (p *Proxy) forward(client net.Conn, latency time.Duration) {
	if !p.admit(client, Forward) {
		client.Close()
		return
	}
	if !p.hold() {
		client.Close()
		p.forget(client)
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil || !p.admit(server, Forward) {
		client.Close()
		if server != nil {
			server.Close()
		}
		p.forget(client)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		if latency > 0 {
			p.copyLate(dst, src, latency)
		} else {
			p.copy(dst, src)
		}
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
	p.forget(client, server)
}

// copy copies src to dst, holding what it read while partitioned.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// copyLate copies src to dst, each chunk written d after it was read, as
// over a long link: a slow link delays bytes, it does not reorder them.
func (p *Proxy) copyLate(dst, src net.Conn, d time.Duration) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	chunks := make(chan chunk, 64)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(d)}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		src.Close()
		for range chunks { // let the reader finish
		}
	}()
	for c := range chunks {
		t := time.NewTimer(time.Until(c.at))
		select {
		case <-t.C:
		case <-p.closed:
			t.Stop()
			return
		}
		if !p.hold() {
			return
		}
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}
