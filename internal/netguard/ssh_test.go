package netguard

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/net/proxy"
)

// sshServer is an SSH server on loopback that accepts password "pw",
// opens sessions and records the commands it is asked to exec (replying
// success and exiting at once).
type sshServer struct {
	addr    string
	hostKey ssh.PublicKey
	mu      sync.Mutex
	execs   []string
}

func MustSSHServer(tb testing.TB) *sshServer {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := &ssh.ServerConfig{
		PasswordCallback: func(_ ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			if string(pw) == "pw" {
				return nil, nil
			}
			return nil, errString("wrong password")
		},
	}
	cfg.AddHostKey(signer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	s := &sshServer{addr: ln.Addr().String(), hostKey: signer.PublicKey()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c, cfg)
		}
	}()
	return s
}

func (s *sshServer) serve(c net.Conn, cfg *ssh.ServerConfig) {
	defer func() { _ = c.Close() }()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "session only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			for r := range chReqs {
				if r.Type != "exec" {
					_ = r.Reply(false, nil)
					continue
				}
				var payload struct{ Command string }
				_ = ssh.Unmarshal(r.Payload, &payload)
				s.mu.Lock()
				s.execs = append(s.execs, payload.Command)
				s.mu.Unlock()
				_ = r.Reply(true, nil)
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
				_ = ch.Close()
			}
		}()
	}
}

func (s *sshServer) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.execs...)
}

func TestSSHDial(t *testing.T) {
	srv := MustSSHServer(t)
	cfg := &ssh.ClientConfig{
		User:            "git",
		Auth:            []ssh.AuthMethod{ssh.Password("pw")},
		HostKeyCallback: ssh.FixedHostKey(srv.hostKey),
	}
	t.Run("RefusedWithoutAllowList", func(t *testing.T) {
		g := MustGuard(t, nil, nil)
		_, err := g.SSHDial(testContext(t), "tcp", srv.addr, cfg)
		assertRefused(t, err, reasonLoopback)
	})
	t.Run("ReachableWhenListed", func(t *testing.T) {
		g := MustGuard(t, []string{"127.0.0.1"}, nil)
		c, err := g.SSHDial(testContext(t), "tcp", srv.addr, cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	})
	t.Run("UnknownHostKeyRefused", func(t *testing.T) {
		_, other, _ := ed25519.GenerateKey(rand.Reader)
		otherSigner, _ := ssh.NewSignerFromKey(other)
		bad := *cfg
		bad.HostKeyCallback = ssh.FixedHostKey(otherSigner.PublicKey())
		g := MustGuard(t, []string{"127.0.0.1"}, nil)
		if _, err := g.SSHDial(testContext(t), "tcp", srv.addr, &bad); err == nil {
			t.Fatal("handshake with an unpinned host key succeeded")
		}
	})
}

// TestGoGitSSHThroughGuard drives go-git's own ssh transport with the
// endpoint's proxy set to SSHProxyURL, the wiring doc.go describes.
func TestGoGitSSHThroughGuard(t *testing.T) {
	srv := MustSSHServer(t)
	_, port, _ := net.SplitHostPort(srv.addr)
	auth := &gitssh.Password{
		User:                  "git",
		Password:              "pw",
		HostKeyCallbackHelper: gitssh.HostKeyCallbackHelper{HostKeyCallback: ssh.FixedHostKey(srv.hostKey)},
	}
	open := func(t *testing.T, g *Guard) error {
		ep, err := transport.NewEndpoint("ssh://git@127.0.0.1:" + port + "/acme/gitops.git")
		if err != nil {
			t.Fatal(err)
		}
		ep.Proxy = transport.ProxyOptions{URL: g.SSHProxyURL()}
		sess, err := gitssh.NewClient(nil).NewUploadPackSession(ep, auth)
		if err == nil {
			_ = sess.Close()
		}
		return err
	}

	t.Run("RefusedWithoutAllowList", func(t *testing.T) {
		err := open(t, MustGuard(t, nil, nil))
		assertRefused(t, err, reasonLoopback)
		if got := srv.commands(); len(got) != 0 {
			t.Fatalf("server ran %v", got)
		}
	})
	t.Run("ReachableWhenListed", func(t *testing.T) {
		if err := open(t, MustGuard(t, []string{"127.0.0.1"}, nil)); err != nil {
			t.Fatal(err)
		}
		got := srv.commands()
		if len(got) != 1 || got[0] != "git-upload-pack '/acme/gitops.git'" {
			t.Fatalf("server ran %q", got)
		}
	})
}

func TestSSHProxyURLRoundTrip(t *testing.T) {
	g := MustGuard(t, []string{"git.corp.internal", "10.0.0.5"}, nil)
	u, err := url.Parse(g.SSHProxyURL())
	if err != nil {
		t.Fatal(err)
	}
	d, err := proxy.FromURL(u, proxy.Direct)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, ok := d.(*Guard)
	if !ok {
		t.Fatalf("dialer is %T", d)
	}
	if !rebuilt.hostAllowed("", "git.corp.internal") || !rebuilt.hostAllowed("", "10.0.0.5") || rebuilt.hostAllowed("", "127.0.0.1") {
		t.Fatalf("allow list not carried: %v", rebuilt.allowList)
	}
	if _, ok := d.(proxy.ContextDialer); !ok {
		t.Fatal("go-git requires a proxy.ContextDialer")
	}
}
