package gittest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHOptions configures an SSH server for one repository.
type SSHOptions struct {
	// AllowAnyCommit sets uploadpack.allowReachableSHA1InWant and
	// allowAnySHA1InWant; without it git upload-pack refuses a want that is
	// not a ref's tip.
	AllowAnyCommit bool
}

// SSHServer serves one repository over SSH on 127.0.0.1: a fresh ed25519
// host key, public-key auth against one authorized key, and only
// git-upload-pack.
type SSHServer struct {
	// URL is the repository's clone URL, ssh://git@127.0.0.1:port/repo.git.
	URL string
	// KnownHosts is the known_hosts line pinning the server's host key.
	KnownHosts string
	// PrivateKeyPEM is the authorized client key (OpenSSH PEM, no passphrase).
	PrivateKeyPEM []byte

	count counter
}

// ServeSSH serves r over SSH until the test ends.
func (r *Repo) ServeSSH(tb testing.TB, opts SSHOptions) *SSHServer {
	tb.Helper()
	gitBinary(tb)
	hostSigner, _ := newSigner(tb)
	clientSigner, clientPEM := newSigner(tb)
	authorized := clientSigner.PublicKey().Marshal()

	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if bytes.Equal(key.Marshal(), authorized) {
				return &ssh.Permissions{}, nil
			}
			return nil, errors.New("gittest: key not authorized")
		},
	}
	config.AddHostKey(hostSigner)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("gittest: listen: %v", err)
	}
	s := &SSHServer{
		URL:           fmt.Sprintf("ssh://git@%s/%s", ln.Addr(), r.Name),
		KnownHosts:    knownhosts.Line([]string{ln.Addr().String()}, hostSigner.PublicKey()),
		PrivateKeyPEM: clientPEM,
	}
	gitConfig := []string{"-c", "uploadpack.allowReachableSHA1InWant=false", "-c", "uploadpack.allowAnySHA1InWant=false"}
	if opts.AllowAnyCommit {
		gitConfig = []string{"-c", "uploadpack.allowReachableSHA1InWant=true", "-c", "uploadpack.allowAnySHA1InWant=true"}
	}

	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serveConn(c, config, r, gitConfig)
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	return s
}

// Counts returns the requests answered so far.
func (s *SSHServer) Counts() Counts { return s.count.get() }

func (s *SSHServer) serveConn(c net.Conn, config *ssh.ServerConfig, r *Repo, gitConfig []string) {
	defer func() { _ = c.Close() }()
	conn, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		s.count.add(func(c *Counts) { c.Refused++ })
		return
	}
	defer func() { _ = conn.Close() }()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go s.serveSession(ch, requests, r, gitConfig)
	}
}

func (s *SSHServer) serveSession(ch ssh.Channel, requests <-chan *ssh.Request, r *Repo, gitConfig []string) {
	defer func() { _ = ch.Close() }()
	for req := range requests {
		if req.Type != "exec" {
			_ = req.Reply(false, nil)
			continue
		}
		var payload struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &payload); err != nil {
			_ = req.Reply(false, nil)
			return
		}
		path, ok := uploadPackPath(payload.Command)
		if !ok || strings.TrimPrefix(path, "/") != r.Name {
			_ = req.Reply(true, nil)
			_, _ = fmt.Fprintf(ch.Stderr(), "fatal: '%s' does not appear to be a git repository\n", path)
			exit(ch, 128)
			return
		}
		_ = req.Reply(true, nil)
		s.count.add(func(c *Counts) { c.RefLists++ })
		cmd := exec.Command("git", append(gitConfig, "upload-pack", r.Dir)...)
		cmd.Env = gitEnv(nil)
		cmd.Stdout = ch
		cmd.Stderr = ch.Stderr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			exit(ch, 1)
			return
		}
		// Copied apart from Wait, which would otherwise wait for a client
		// that has nothing more to say.
		go func() {
			defer func() { _ = stdin.Close() }()
			_, _ = io.Copy(stdin, &wantWatcher{r: ch, onWant: func() { s.count.add(func(c *Counts) { c.Packs++ }) }})
		}()
		code := 0
		if err := cmd.Run(); err != nil {
			code = 1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
		}
		exit(ch, code)
		return
	}
}

// uploadPackPath parses "git-upload-pack '<path>'" (the form go-git and
// git send), returning the path.
func uploadPackPath(command string) (string, bool) {
	rest, ok := strings.CutPrefix(command, "git-upload-pack ")
	if !ok {
		rest, ok = strings.CutPrefix(command, "git upload-pack ")
	}
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
		rest = rest[1 : len(rest)-1]
	}
	return rest, rest != "" && !strings.ContainsAny(rest, "'\\")
}

func exit(ch ssh.Channel, code int) {
	var status [4]byte
	binary.BigEndian.PutUint32(status[:], uint32(code))
	_, _ = ch.SendRequest("exit-status", false, status[:])
}

// wantWatcher passes a session's stdin through and reports, once, that the
// client sent a want (a pack negotiation rather than a bare ls-remote).
type wantWatcher struct {
	r      io.Reader
	onWant func()
	seen   bool
	tail   []byte
}

func (w *wantWatcher) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if !w.seen && n > 0 {
		buf := append(w.tail, p[:n]...)
		if bytes.Contains(buf, []byte("want ")) {
			w.seen = true
			w.onWant()
		}
		if len(buf) > 8 {
			buf = buf[len(buf)-8:]
		}
		w.tail = append([]byte(nil), buf...)
	}
	return n, err
}

// NewClientKey returns a fresh ed25519 private key in OpenSSH PEM form that
// no server authorizes.
func NewClientKey(tb testing.TB) []byte {
	tb.Helper()
	_, p := newSigner(tb)
	return p
}

func newSigner(tb testing.TB) (ssh.Signer, []byte) {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatalf("gittest: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		tb.Fatalf("gittest: %v", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		tb.Fatalf("gittest: %v", err)
	}
	return signer, pem.EncodeToMemory(block)
}
