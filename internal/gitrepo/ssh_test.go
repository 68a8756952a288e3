package gitrepo_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/testkit/gittest"
	"github.com/kukie/gitops-server/service"
)

func TestListRefsSSHKeys(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	s := w.repo.ServeSSH(t, gittest.SSHOptions{})
	other := w.repo.ServeSSH(t, gittest.SSHOptions{}) // another host key
	// other's host key, written for s's address: a mismatch.
	otherKey := other.KnownHosts[strings.Index(other.KnownHosts, " ")+1:]
	sAddr := s.KnownHosts[:strings.Index(s.KnownHosts, " ")]
	f := gitrepo.New(gitrepo.Options{})
	key := string(s.PrivateKeyPEM)
	for _, tc := range []struct {
		name   string
		auth   gitrepo.Auth
		reason service.Reason
	}{
		{"ErrHostKeyMismatch", gitrepo.Auth{PrivateKey: key, KnownHosts: sAddr + " " + otherKey}, gitrepo.ReasonHostKey},
		{"ErrHostUnknown", gitrepo.Auth{PrivateKey: key, KnownHosts: other.KnownHosts}, gitrepo.ReasonHostKey},
		{"ErrNoKnownHosts", gitrepo.Auth{PrivateKey: key}, gitrepo.ReasonAuthInvalid},
		{"ErrKeyNotAuthorized", gitrepo.Auth{PrivateKey: string(gittest.NewClientKey(t)), KnownHosts: s.KnownHosts}, gitrepo.ReasonRepoAuthFailed},
		{"ErrKeyUnreadable", gitrepo.Auth{PrivateKey: "not a key", KnownHosts: s.KnownHosts}, gitrepo.ReasonAuthInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.ListRefs(ctx, gitrepo.Remote{URL: s.URL, Auth: tc.auth})
			wantReason(t, err, tc.reason)
		})
	}
	t.Run("ErrNoSuchRepository", func(t *testing.T) {
		_, err := f.ListRefs(ctx, gitrepo.Remote{URL: strings.TrimSuffix(s.URL, "repo.git") + "other.git",
			Auth: gitrepo.Auth{PrivateKey: key, KnownHosts: s.KnownHosts}})
		wantReason(t, err, gitrepo.ReasonUnreachable)
	})
	if got := s.Counts().RefLists; got != 0 {
		t.Errorf("the server ran upload-pack %d times for refused clients", got)
	}
}

func TestSSHDialsThroughTheHook(t *testing.T) {
	ctx := testContext(t)
	w := newWorld(t)
	s := w.repo.ServeSSH(t, gittest.SSHOptions{})
	var dials atomic.Int32
	f := gitrepo.New(gitrepo.Options{DialSSH: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}})
	remote := gitrepo.Remote{URL: s.URL, Auth: gitrepo.Auth{PrivateKey: string(s.PrivateKeyPEM), KnownHosts: s.KnownHosts}}
	if _, err := f.ListRefs(ctx, remote); err != nil {
		t.Fatal(err)
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("dials through the hook = %d, want 1", got)
	}

	refused := gitrepo.New(gitrepo.Options{DialSSH: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("refused by policy")
	}})
	_, err := refused.ListRefs(ctx, remote)
	wantReason(t, err, gitrepo.ReasonUnreachable)
}
