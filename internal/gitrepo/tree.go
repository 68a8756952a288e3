package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/kukie/gitops-server/service"
)

// Tree is one commit's files, in memory. It is shared between callers and
// the cache: never modify it.
type Tree struct {
	Commit string
	// Files maps slash-separated paths to contents: regular files, and
	// symbolic links whose target resolves to a file inside the tree (the
	// link's path then holds that file's content).
	Files map[string][]byte
	// Symlinks lists every symbolic link with its target as written.
	// Resolved is the in-tree file it stands for, "" when it points outside
	// the tree, at a directory, or nowhere — such a link is not in Files:
	// nothing outside the tree is ever read.
	Symlinks map[string]Symlink
	// Bytes is what the tree holds: every file's content and path and every
	// link's path and target, each entry with 64 bytes of bookkeeping. It is
	// what MaxTreeBytes, TreeCacheBytes and the disk cache count.
	Bytes int64
}

// Symlink is a symbolic link in a Tree.
type Symlink struct {
	Target   string
	Resolved string
}

// Tree returns the files of commit in the remote. It fetches that commit
// alone at depth 1; when the server will not send a commit by id, it
// fetches ref ("" is HEAD) at each of Options.DeepenSteps until the commit
// is in it. Trees are cached by (Identity, commit), in memory and, with
// Options.CacheDir, on disk, and concurrent calls for one are collapsed
// into one fetch. Errors carry the reasons ListRefs
// gives, ReasonRefNotFound when the commit is not found, and
// ReasonRepoTooLarge past a limit — checked while the pack is read, on
// what each object declares before it is inflated. A refusal is
// remembered for Options.RefusalTTL, so retries do not fetch the pack
// again.
func (f *Fetcher) Tree(ctx context.Context, remote Remote, ref, commit string) (*Tree, error) {
	commit = strings.ToLower(strings.TrimSpace(commit))
	if !isCommitID(commit) {
		return nil, refNotFound(fmt.Sprintf("%q is not a full commit id.", commit))
	}
	key := remote.Identity() + "\x00" + commit
	f.mu.Lock()
	t, ok := f.trees.Get(key)
	f.mu.Unlock()
	if ok {
		if f.disk != nil {
			f.disk.touch(remote.Identity(), commit)
		}
		return t, nil
	}
	// A refusal is served only to a request that would make the same
	// fetch: by id (whatever the ref), or by deepening this very ref.
	byRef := refRoute(ref, commit)
	for _, via := range []string{routeByID, byRef} {
		if err := f.refused(remote, commit, via); err != nil {
			return nil, err
		}
	}
	// Callers of another ref do not share a flight: its refusal may not be
	// theirs.
	ch := f.treeFlight.DoChan(key+"\x00"+byRef, f.recovered("tree", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.FetchTimeout)
		defer cancel()
		t, via, err := f.loadTree(ctx, remote, ref, commit)
		if err != nil {
			if service.ErrorReason(err) == ReasonRepoTooLarge {
				f.mu.Lock()
				f.refusals.Add(f.refusalKey(remote, commit, via), refusal{err: err, at: f.opts.Now()})
				f.mu.Unlock()
			}
			return nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.trees.Add(key, t)
		f.treeBytes += t.Bytes
		for f.treeBytes > f.opts.TreeCacheBytes && f.trees.Len() > 1 {
			f.trees.RemoveOldest()
		}
		return t, nil
	}))
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Tree), nil
	}
}

// loadTree reads the tree from the disk cache, or fetches it and writes it
// there; via is the route of the fetch (routeByID or refRoute) that
// failed, for the refusal's key. The disk cache never fails a load: a bad
// entry is refetched, and a tree that cannot be written is still returned.
func (f *Fetcher) loadTree(ctx context.Context, remote Remote, ref, commit string) (t *Tree, via string, err error) {
	if f.disk != nil {
		if t, ok := f.disk.get(remote.Identity(), commit); ok {
			return t, "", nil
		}
	}
	t, err = f.fetchTree(ctx, remote, ref, plumbing.NewHash(commit), &via)
	if err != nil {
		return nil, via, err
	}
	if f.disk != nil {
		_ = f.disk.put(remote.Identity(), t)
	}
	return t, via, nil
}

// fetchTree fetches the commit, by id where it can, else by deepening
// ref; *via is set to the route taken last.
func (f *Fetcher) fetchTree(ctx context.Context, remote Remote, ref string, commit plumbing.Hash, via *string) (_ *Tree, err error) {
	*via = refRoute(ref, commit.String())
	// Everything read for this fetch, advertisement and every pack
	// together, within MaxPackBytes.
	ctx, allowance := withReadAllowance(ctx, f.opts.MaxPackBytes)
	defer func() { err = allowance.check(err) }()
	sess, adv, err := f.open(ctx, remote)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sess.Close() }()
	refs := refsFromAdv(adv)
	// One budget for every pack of this fetch: deepening reads history.
	// It holds its share of the Fetcher's memory for fetches until the
	// fetch ends, refused or not: then only the Tree's files are kept,
	// which the tree cache counts.
	budget := &fetchBudget{max: min(f.opts.MaxFetchBytes, f.opts.FetchMemoryBytes), inflated: f.inflated,
		shared: f.memory, ctx: ctx, wait: f.opts.FetchTimeout / 2}
	defer budget.release()

	// By id when the server allows it (or the commit is a tip, which any
	// server sends). A server that advertises nothing may still refuse, so
	// any failure but the caller's own falls through to the ref.
	isTip := false
	for _, c := range refs.Commits {
		isTip = isTip || c == commit.String()
	}
	if isTip || adv.Capabilities.Supports(capability.AllowReachableSHA1InWant) {
		*via = routeByID
		st, _, err := f.fetchPack(ctx, sess, adv, commit, 1, f.bounds(budget, true))
		if err == nil && hasCommit(st, commit) {
			return f.buildTree(ctx, st, commit)
		}
		switch service.ErrorReason(err) {
		case ReasonRepoTooLarge, ReasonFetchBusy:
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}

	if isCommitID(strings.TrimSpace(ref)) {
		ref = "" // a commit is no ref to deepen from; HEAD is the best guess
	}
	*via = refRoute(ref, commit.String())
	tipStr, err := refs.Commit(ref)
	if err != nil {
		return nil, err
	}
	tip := plumbing.NewHash(tipStr)
	for _, depth := range f.opts.DeepenSteps {
		st, complete, err := f.fetchPack(ctx, sess, adv, tip, depth, f.bounds(budget, depth == 1 && tip == commit))
		if err != nil {
			return nil, classify(ctx, err)
		}
		if hasCommit(st, commit) {
			return f.buildTree(ctx, st, commit)
		}
		if complete {
			break // the whole history is here; deeper will not help
		}
	}
	where := ref
	if where == "" {
		where = "HEAD"
	}
	return nil, refNotFound(fmt.Sprintf("Commit %s is not in the last %d commits of %s.",
		commit, f.opts.DeepenSteps[len(f.opts.DeepenSteps)-1], where))
}

// bounds are the limits of one pack of a fetch; commitAlone says the pack
// is the wanted commit at depth 1, so its blobs are all the commit's files.
func (f *Fetcher) bounds(budget *fetchBudget, commitAlone bool) packBounds {
	b := packBounds{maxObject: f.opts.MaxFileBytes, budget: budget}
	if commitAlone {
		b.maxCommit = f.opts.MaxTreeBytes
	}
	return b
}

// fetchPack fetches want at depth into a fresh in-memory store, within b.
// complete reports that the server cut no history (no shallow boundary).
func (f *Fetcher) fetchPack(ctx context.Context, sess uploadSession, adv *packp.AdvRefs, want plumbing.Hash, depth int, b packBounds) (*objectStore, bool, error) {
	req := packp.NewUploadPackRequestFromCapabilities(adv.Capabilities)
	req.Wants = []plumbing.Hash{want}
	req.Depth = packp.DepthCommits(depth)
	if err := req.Capabilities.Set(capability.Shallow); err != nil {
		return nil, false, err
	}
	if adv.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	res, err := sess.UploadPack(ctx, req)
	if err != nil {
		if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
			return newObjectStore(0), true, nil
		}
		return nil, false, err
	}
	defer func() { _ = res.Close() }()
	var r io.Reader = &limitedReader{r: res, left: f.opts.MaxPackBytes}
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, r)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, r)
	}
	st, err := readPack(r, b)
	if err != nil {
		if errors.Is(err, errPackTooLarge) {
			return nil, false, tooLarge(fmt.Sprintf("The repository's pack is over %d bytes.", f.opts.MaxPackBytes))
		}
		return nil, false, err
	}
	return st, len(res.Shallows) == 0, nil
}

func hasCommit(st *objectStore, commit plumbing.Hash) bool {
	return st != nil && st.has(commit)
}

// buildTree reads the commit's files, within the limits, and resolves its
// symbolic links inside the tree. Files share the store's bytes.
func (f *Fetcher) buildTree(ctx context.Context, st *objectStore, commit plumbing.Hash) (*Tree, error) {
	c, err := object.GetCommit(st, commit)
	if err != nil {
		return nil, refNotFound(fmt.Sprintf("%s is not a commit.", commit))
	}
	t := &Tree{Commit: commit.String(), Files: map[string][]byte{}, Symlinks: map[string]Symlink{}}
	lim := walkLimits{entries: walkEntriesPerFile * f.opts.MaxFiles}
	err = walkTree(ctx, st, c.TreeHash, lim, func(name string, entry treeEntry) error {
		switch entry.mode {
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
		default:
			return nil // submodules are not ours
		}
		if len(t.Files)+len(t.Symlinks) >= f.opts.MaxFiles {
			return tooLarge(fmt.Sprintf("The commit has more than %d files.", f.opts.MaxFiles))
		}
		data, ok := st.blob(entry.hash)
		if !ok {
			return unreachable("The server sent an incomplete tree.", nil)
		}
		if entry.mode == filemode.Symlink {
			if len(data) > maxPathBytes {
				return nil // an over-long link target resolves nowhere
			}
			t.Symlinks[name] = Symlink{Target: string(data)}
			return t.charge(f.opts.MaxTreeBytes, linkCost(name, string(data)))
		}
		if int64(len(data)) > f.opts.MaxFileBytes {
			return tooLarge(fmt.Sprintf("%s is over %d bytes.", name, f.opts.MaxFileBytes))
		}
		t.Files[name] = data
		return t.charge(f.opts.MaxTreeBytes, fileCost(name, data))
	})
	if err != nil {
		return nil, err
	}
	resolveLinks(t)
	return t, nil
}

// fileCost is what a file at name charges Tree.Bytes.
func fileCost(name string, data []byte) int64 {
	return int64(len(name)) + int64(len(data)) + entryOverhead
}

// linkCost is what a link at name charges Tree.Bytes.
func linkCost(name, target string) int64 {
	return int64(len(name)) + int64(len(target)) + entryOverhead
}

// charge adds n to t.Bytes, refusing past max.
func (t *Tree) charge(max, n int64) error {
	if t.Bytes+n > max {
		return tooLarge(fmt.Sprintf("The commit's files are over %d bytes together.", max))
	}
	t.Bytes += n
	return nil
}

// resolveLinks sets each link's Resolved and puts the in-tree file it
// reaches under the link's own path too.
func resolveLinks(t *Tree) {
	for name, l := range t.Symlinks {
		if target, ok := resolveLink(t.Files, t.Symlinks, name); ok {
			l.Resolved = target
			t.Symlinks[name] = l
			t.Files[name] = t.Files[target]
		}
	}
}

// resolveLink follows the link at name, and links it leads to, while they
// stay inside the tree; it reports the regular file reached. An absolute
// target, one climbing above the root, a directory or a missing path
// resolves to nothing.
func resolveLink(files map[string][]byte, links map[string]Symlink, name string) (string, bool) {
	cur := name
	for hops := 0; hops < 40; hops++ {
		target := links[cur].Target
		if target == "" || path.IsAbs(target) || strings.Contains(target, "\\") {
			return "", false
		}
		next := path.Join(path.Dir(cur), target)
		if !fs.ValidPath(next) || next == "." {
			return "", false
		}
		if _, ok := files[next]; ok {
			if _, isLink := links[next]; !isLink {
				return next, true
			}
		}
		if _, ok := links[next]; !ok {
			return "", false
		}
		cur = next
	}
	return "", false
}

var errPackTooLarge = errors.New("pack over its limit")

// limitedReader fails with errPackTooLarge once more than left bytes are
// read.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// At the limit: fine if the stream ends here too.
		var one [1]byte
		if n, err := l.r.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, errPackTooLarge
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
