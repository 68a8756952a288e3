package gitrepo

import (
	"strings"
	"time"
)

// refusalKey is what a refused fetch is remembered under: the remote
// (URL and credentials), the commit, the route and the limits.
type refusalKey struct {
	identity, commit string
	// via is how the commit was fetched: routeByID, or refRoute (the ref
	// deepened), so a refusal of one ref's history is not another's.
	via    string
	limits limits
}

// refusal is a fetch refused by a limit: its error, and when.
type refusal struct {
	err error
	at  time.Time
}

// routeByID is the route of a fetch of the commit by its id, at depth 1.
const routeByID = "id"

// refRoute is the route of a fetch that deepens ref to find commit: the
// ref as fetchTree uses it ("" and a commit id are HEAD).
func refRoute(ref, commit string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || isCommitID(ref) {
		ref = "HEAD"
	}
	return "ref:" + ref
}

func (f *Fetcher) refusalKey(remote Remote, commit, via string) refusalKey {
	return refusalKey{identity: remote.Identity(), commit: commit, via: via, limits: f.opts.limits()}
}

// refused returns the error of a refusal of (remote, commit) fetched by
// route via under these limits within the last RefusalTTL, or nil.
func (f *Fetcher) refused(remote Remote, commit, via string) error {
	key := f.refusalKey(remote, commit, via)
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.refusals.Get(key)
	if !ok {
		return nil
	}
	if f.opts.Now().Sub(r.at) >= f.opts.RefusalTTL {
		f.refusals.Remove(key)
		return nil
	}
	return r.err
}
