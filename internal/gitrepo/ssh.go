package gitrepo

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// sshSession speaks git-upload-pack over one SSH connection. go-git's own
// SSH transport reads ~/.ssh/config, falls back to an agent and dials
// without a hook, so this small one is used instead: the dial goes through
// the injected function, the host key is checked against the given
// known_hosts only, and the key is the given one.
//
// Each pack needs its own git-upload-pack run (the command exits after
// sending one), so UploadPack starts a fresh one on the same connection
// when the first has been used.
type sshSession struct {
	client *ssh.Client
	path   string
	stop   func() bool
	// pack caps each upload-pack response (Options.MaxPackBytes).
	pack int64

	mu   sync.Mutex
	cmd  *sshCommand // the run whose advertisement was read and not yet used
	refs *packp.AdvRefs
}

var _ uploadSession = (*sshSession)(nil)

type sshCommand struct {
	session *ssh.Session
	stdin   io.WriteCloser
	stdout  *cappedReader
	stderr  *boundedBuffer
}

// openSSH dials the endpoint, checks the host key, authenticates with the
// private key and starts git-upload-pack. Failures are classified by the
// stage reached: host key, then authentication, else unreachable.
func openSSH(ctx context.Context, dial DialFunc, ep *transport.Endpoint, auth Auth, pack int64) (*sshSession, error) {
	if strings.TrimSpace(auth.KnownHosts) == "" {
		return nil, authInvalid("SSH needs the server's host key (known_hosts); none is accepted blindly.", nil)
	}
	signer, err := ssh.ParsePrivateKey([]byte(auth.PrivateKey))
	if err != nil {
		return nil, authInvalid("The SSH private key could not be read (keys with a passphrase are not supported).", err)
	}
	check, err := knownHostsCallback(auth.KnownHosts)
	if err != nil {
		return nil, authInvalid("known_hosts could not be read.", err)
	}
	port := ep.Port
	if port <= 0 {
		port = 22
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	algorithms, err := pinnedAlgorithms(check, addr)
	if err != nil {
		return nil, hostKeyMismatch(err)
	}

	var hostKeyErr atomic.Value
	var authStarted atomic.Bool
	user := ep.User
	if user == "" {
		user = "git"
	}
	config := &ssh.ClientConfig{
		User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			authStarted.Store(true)
			return []ssh.Signer{signer}, nil
		})},
		HostKeyCallback: func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			if err := check(hostname, remote, key); err != nil {
				hostKeyErr.Store(err)
				return err
			}
			return nil
		},
		HostKeyAlgorithms: algorithms,
	}

	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, classify(ctx, err)
	}
	// Closing the connection is how a cancelled context stops a handshake
	// or a read in progress.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if err != nil {
		stop()
		_ = conn.Close()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case hostKeyErr.Load() != nil:
			return nil, hostKeyMismatch(err)
		case authStarted.Load():
			return nil, authFailed(err)
		}
		return nil, unreachable("", err)
	}
	s := &sshSession{client: ssh.NewClient(c, chans, reqs), path: ep.Path, stop: stop, pack: pack}
	if err := s.start(readAllowanceFrom(ctx)); err != nil {
		_ = s.Close()
		return nil, classify(ctx, err)
	}
	return s, nil
}

// start runs a fresh git-upload-pack and reads its advertisement, at most
// maxAdvertBytes of it and within the fetch's allowance.
func (s *sshSession) start(fetch *readAllowance) error {
	sess, err := s.client.NewSession()
	if err != nil {
		return err
	}
	cmd := &sshCommand{session: sess, stderr: &boundedBuffer{max: 4096}}
	sess.Stderr = cmd.stderr
	if cmd.stdin, err = sess.StdinPipe(); err != nil {
		return err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.stdout = &cappedReader{r: stdout, left: maxAdvertBytes, fetch: fetch}
	if err := sess.Start("git-upload-pack " + shellQuote(s.path)); err != nil {
		return err
	}
	refs := packp.NewAdvRefs()
	if err := refs.Decode(cmd.stdout); err != nil {
		defer func() { _ = sess.Close() }()
		switch {
		case errors.Is(err, packp.ErrEmptyAdvRefs):
			return transport.ErrEmptyRemoteRepository
		case errors.Is(err, packp.ErrEmptyInput):
			// The command failed before saying anything: no such
			// repository, or no access to it. The server's words go to the
			// log only.
			_ = sess.Wait()
			return fmt.Errorf("%w: %s", transport.ErrRepositoryNotFound, cmd.stderr.String())
		}
		return err
	}
	if refs.IsEmpty() {
		_ = sess.Close()
		return transport.ErrEmptyRemoteRepository
	}
	transport.FilterUnsupportedCapabilities(refs.Capabilities)
	s.cmd, s.refs = cmd, refs
	return nil
}

func (s *sshSession) AdvertisedReferencesContext(context.Context) (*packp.AdvRefs, error) {
	return s.refs, nil
}

// UploadPack sends req to a git-upload-pack run whose advertisement has
// been read, and returns the response for its pack to be read.
func (s *sshSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		if err := s.start(readAllowanceFrom(ctx)); err != nil {
			return nil, err
		}
	}
	cmd := s.cmd
	s.cmd = nil
	// The response — acknowledgements, shallow lines, then the pack — is
	// capped as a whole, not the pack alone.
	cmd.stdout.left, cmd.stdout.fetch = s.pack, readAllowanceFrom(ctx)
	if err := req.Validate(); err != nil {
		_ = cmd.session.Close()
		return nil, err
	}
	if err := writeUploadRequest(cmd.stdin, req); err != nil {
		_ = cmd.session.Close()
		return nil, err
	}
	res := packp.NewUploadPackResponse(req)
	if err := res.Decode(readCloser{Reader: cmd.stdout, close: cmd.session.Close}); err != nil {
		_ = cmd.session.Close()
		return nil, err
	}
	return res, nil
}

// writeUploadRequest writes wants, shallows, depth, haves and "done", as
// git fetch-pack does without negotiation.
func writeUploadRequest(w io.WriteCloser, req *packp.UploadPackRequest) error {
	if err := req.UploadRequest.Encode(w); err != nil {
		return err
	}
	if err := req.UploadHaves.Encode(w, true); err != nil {
		return err
	}
	if err := pktline.NewEncoder(w).Encodef("done\n"); err != nil {
		return err
	}
	return w.Close()
}

// Close ends any unused git-upload-pack run (with a flush, as ls-remote
// does) and the connection.
func (s *sshSession) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_, _ = s.cmd.stdin.Write(pktline.FlushPkt)
		_ = s.cmd.stdin.Close()
		_ = s.cmd.session.Close()
		s.cmd = nil
	}
	s.stop()
	return s.client.Close()
}

// knownHostsCallback builds a host key check from known_hosts text.
// x/crypto's knownhosts reads files only, so the text goes through a
// temporary file that is removed at once.
func knownHostsCallback(text string) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "kukie-known-hosts-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return knownhosts.New(f.Name())
}

// pinnedAlgorithms returns the host key algorithms known_hosts pins for
// addr, so the server is asked for a key that can match. It probes the
// check with a throwaway key: the mismatch lists the pinned keys. A host
// with no entry is refused here, before dialling.
func pinnedAlgorithms(check ssh.HostKeyCallback, addr string) ([]string, error) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	probe, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	err = check(addr, &net.TCPAddr{IP: net.IPv4zero, Port: atoiOr(port, 22)}, probe)
	var keyErr *knownhosts.KeyError
	if !errors.As(err, &keyErr) {
		if err == nil {
			err = errors.New("known_hosts accepts any key")
		}
		return nil, err
	}
	if len(keyErr.Want) == 0 {
		return nil, fmt.Errorf("known_hosts has no entry for %s", addr)
	}
	var algorithms []string
	seen := map[string]bool{}
	for _, k := range keyErr.Want {
		names := []string{k.Key.Type()}
		if k.Key.Type() == ssh.KeyAlgoRSA {
			names = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				algorithms = append(algorithms, n)
			}
		}
	}
	return algorithms, nil
}

func atoiOr(s string, def int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return def
}

// shellQuote quotes s for a POSIX shell (and git-shell): inside single
// quotes, with ' and ! closed, escaped and reopened.
func shellQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		if r == '\'' || r == '!' {
			b.WriteString(`'\`)
			b.WriteRune(r)
			b.WriteByte('\'')
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('\'')
	return b.String()
}

// readCloser is a reader whose Close runs a function.
type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(b.buf.String())
}
