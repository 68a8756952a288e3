package gitrepo

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
)

// Refs is a remote's advertisement: what each ref points at.
type Refs struct {
	// Head is the ref HEAD points at (e.g. "refs/heads/main"), when the
	// server says; HeadCommit is HEAD's commit.
	Head       string
	HeadCommit string
	// Commits maps full ref names to commit ids; annotated tags are peeled
	// to their commit.
	Commits map[string]string
}

func refsFromAdv(adv *packp.AdvRefs) *Refs {
	r := &Refs{Commits: make(map[string]string, len(adv.References))}
	for name, h := range adv.References {
		r.Commits[name] = h.String()
	}
	for name, h := range adv.Peeled {
		r.Commits[name] = h.String()
	}
	if adv.Head != nil {
		r.HeadCommit = adv.Head.String()
	}
	for _, v := range adv.Capabilities.Get(capability.SymRef) {
		if from, to, ok := strings.Cut(v, ":"); ok && from == "HEAD" {
			r.Head = to
		}
	}
	if r.HeadCommit == "" && r.Head != "" {
		r.HeadCommit = r.Commits[r.Head]
	}
	return r
}

// Commit resolves ref against the advertisement: "" or "HEAD" is HEAD; a
// full name ("refs/...") is looked up as is; a short name is tried as a
// branch, then a tag; a full commit id names itself (the fetch then checks
// it exists).
func (r *Refs) Commit(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	switch {
	case ref == "" || ref == "HEAD":
		if r.HeadCommit == "" {
			return "", refNotFound("The repository has no HEAD.")
		}
		return r.HeadCommit, nil
	case isCommitID(ref):
		return strings.ToLower(ref), nil
	}
	for _, name := range []string{ref, "refs/heads/" + ref, "refs/tags/" + ref} {
		if strings.HasPrefix(name, "refs/") {
			if c, ok := r.Commits[name]; ok {
				return c, nil
			}
		}
	}
	return "", refNotFound(fmt.Sprintf("The ref %q is not in the repository.", ref))
}

func isCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// ListRefs lists the remote's refs now, with its credentials and host key:
// the check a connection gets when it is saved. It also refreshes the
// window Resolve answers from. Errors carry ReasonRepoAuthFailed,
// ReasonHostKey, ReasonUnreachable or ReasonRefNotFound (an empty
// repository).
func (f *Fetcher) ListRefs(ctx context.Context, remote Remote) (*Refs, error) {
	refs, err := f.listRefs(ctx, remote)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.refs.Add(remote.Identity(), cachedRefs{refs: refs, at: f.opts.Now()})
	f.mu.Unlock()
	return refs, nil
}

func (f *Fetcher) listRefs(ctx context.Context, remote Remote) (_ *Refs, err error) {
	ctx, allowance := withReadAllowance(ctx, maxAdvertBytes)
	defer func() { err = allowance.check(err) }()
	sess, adv, err := f.open(ctx, remote)
	if err != nil {
		return nil, err
	}
	_ = sess.Close()
	return refsFromAdv(adv), nil
}

// Resolve returns the commit ref points at ("" is the remote's HEAD). The
// remote's refs are listed at most once per RefTTL per Identity (so per
// repository, credentials and ref), and concurrent listings are collapsed.
func (f *Fetcher) Resolve(ctx context.Context, remote Remote, ref string) (string, error) {
	if isCommitID(strings.TrimSpace(ref)) {
		return strings.ToLower(strings.TrimSpace(ref)), nil
	}
	id := remote.Identity()
	f.mu.Lock()
	c, ok := f.refs.Get(id)
	f.mu.Unlock()
	if ok && f.opts.Now().Sub(c.at) < f.opts.RefTTL {
		return c.refs.Commit(ref)
	}
	ch := f.refsFlight.DoChan(id, f.recovered("refs", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.FetchTimeout)
		defer cancel()
		return f.ListRefs(ctx, remote)
	}))
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return "", res.Err
		}
		return res.Val.(*Refs).Commit(ref)
	}
}
