package snstest

import (
	"io"
	"net"
	"net/http"
	"sync"
)

// connectProxy is an HTTP proxy that tunnels CONNECTs to SNS endpoints to
// target and refuses everything else. It tracks its tunnels so that close
// can end them and wait for every goroutine it started.
type connectProxy struct {
	target string

	mu       sync.Mutex
	closed   bool
	targets  []string
	conns    map[net.Conn]struct{}
	inFlight sync.WaitGroup // handlers and pipes
}

func newConnectProxy(target string) *connectProxy {
	return &connectProxy{target: target, conns: map[net.Conn]struct{}{}}
}

func (p *connectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.begin(r) {
		http.Error(w, "proxy closed", http.StatusServiceUnavailable)
		return
	}
	defer p.inFlight.Done()
	if r.Method != http.MethodConnect || !tunnelled(r.Host) {
		http.Error(w, "this proxy only tunnels CONNECT to sns.<region>.amazonaws.com(.cn):443", http.StatusForbidden)
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, buffered, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	if !p.track(client, upstream) {
		return
	}
	go p.pipe(upstream, buffered.Reader, client, upstream)
	go p.pipe(client, upstream, client, upstream)
}

// tunnelled reports whether the proxy tunnels a CONNECT to authority: an
// SNS endpoint on port 443.
func tunnelled(authority string) bool {
	host, port, err := net.SplitHostPort(authority)
	return err == nil && port == "443" && snsHostName.MatchString(host)
}

// begin records r's target and counts its handler in, unless the proxy is
// closed.
func (p *connectProxy) begin(r *http.Request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r.Method == http.MethodConnect {
		p.targets = append(p.targets, r.Host)
	}
	if p.closed {
		return false
	}
	p.inFlight.Add(1)
	return true
}

// track registers a tunnel's two ends and counts its two pipes in, or
// closes the ends if the proxy has closed meanwhile.
func (p *connectProxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	p.inFlight.Add(2)
	return true
}

// end closes and forgets a tunnel's ends.
func (p *connectProxy) end(a, b net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, a)
	delete(p.conns, b)
	a.Close()
	b.Close()
}

// pipe copies src to dst, then closes the tunnel so the other direction
// ends too.
func (p *connectProxy) pipe(dst io.Writer, src io.Reader, a, b net.Conn) {
	defer p.inFlight.Done()
	_, _ = io.Copy(dst, src)
	p.end(a, b)
}

// connectTargets lists the targets of every CONNECT received, in order.
func (p *connectProxy) connectTargets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// close ends every tunnel and waits for the proxy's handlers and pipes.
func (p *connectProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
	p.inFlight.Wait()
}
