package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/kukie/gitops-server/service"
)

// DialFunc opens a network connection; the guarded dialer has this shape.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Options are a Fetcher's transports, clock and limits. Zero values take
// the defaults named on each field.
type Options struct {
	// HTTPClient carries every HTTPS request: the hook through which the
	// server passes the guarded client (internal/netguard) and tests a
	// client trusting their loopback Git server. Redirects are never
	// followed whatever its policy. Default: none — every HTTPS fetch
	// fails, so a fetcher built without it never reaches the network
	// unguarded.
	HTTPClient *http.Client
	// DialSSH opens SSH connections. Default: a plain net.Dialer.
	DialSSH DialFunc
	// Now is the clock for the ref window. Default: time.Now.
	Now func() time.Time
	// RefTTL is how long one listing of a remote's refs answers Resolve.
	// Default: 10 s.
	RefTTL time.Duration
	// FetchTimeout bounds one fetch, which runs on for every caller waiting
	// on it even when the first one leaves. Default: 2 minutes.
	FetchTimeout time.Duration
	// DeepenSteps are the depths tried, in order, when the server will not
	// send a commit by id: the ref is fetched at each depth until the
	// commit is in it. Default: 1, 50, 500.
	DeepenSteps []int
	// MaxFileBytes bounds one file, and every object of a pack (commits
	// and trees too) on the size it declares, before it is inflated.
	// Default: 8 MiB.
	MaxFileBytes int64
	// MaxTreeBytes bounds all files of a commit together; a pack of the
	// commit alone is refused as soon as its blobs declare more. Default:
	// 256 MiB.
	MaxTreeBytes int64
	// MaxFiles bounds the number of files and links. Default: 100,000.
	MaxFiles int
	// MaxPackBytes bounds the pack downloaded for one fetch, as sent
	// (compressed). Default: 1 GiB.
	MaxPackBytes int64
	// MaxFetchBytes bounds what all the objects of one fetch inflate to —
	// the fetch by id and every deepening step together, each object
	// counted with 256 bytes of bookkeeping — so deepening into a long
	// history stops there (KUKIE_REPO_MAX_FETCH_BYTES). It is also the
	// most memory one fetch holds. Default: 512 MiB, the memory fetches
	// share by default, so that with GOMEMLIMIT at 1 GiB one fetch and the
	// tree cache fit beside the server.
	MaxFetchBytes int64
	// FetchMemoryBytes bounds what all concurrent fetches of the Fetcher
	// hold together (each fetch's objects, counted as for MaxFetchBytes),
	// so the replica's memory for fetches does not grow with their number.
	// A fetch that finds it taken by others waits for it within
	// FetchTimeout while it holds nothing yet, and is refused
	// repo_fetch_busy (503, not remembered) when it cannot get more; one
	// fetch alone is bounded by the lower of the two. Default: the larger
	// of 512 MiB and MaxFetchBytes.
	FetchMemoryBytes int64
	// RefusalTTL is how long a fetch refused by a limit is remembered: a
	// Tree of the same (Identity, commit) that would fetch the same way (by
	// id, or deepening the same ref) under the same limits is refused
	// again without asking the Git server. Default: 10 minutes.
	RefusalTTL time.Duration
	// TreeCacheBytes bounds the in-memory cache of trees (least recently
	// used first out). Default: 512 MiB.
	TreeCacheBytes int64
	// CacheDir, when set, keeps fetched trees on disk under this directory
	// (KUKIE_REPO_CACHE_DIR), so a restarted server serves a known commit
	// without asking the Git server. Entries are keyed by Identity, so
	// remotes share them only when URL and credentials match. Default: no
	// disk cache.
	CacheDir string
	// CacheBytes bounds the files in CacheDir (least recently used first
	// out). Default: 1 GiB.
	CacheBytes int64
	// Logger records what no caller is told: a fetch that panicked, with
	// its stack. Default: slog.Default().
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: noHTTPClient{}}
	}
	if o.DialSSH == nil {
		var d net.Dialer
		o.DialSSH = d.DialContext
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.RefTTL <= 0 {
		o.RefTTL = 10 * time.Second
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = 2 * time.Minute
	}
	if len(o.DeepenSteps) == 0 {
		o.DeepenSteps = []int{1, 50, 500}
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = 8 << 20
	}
	if o.MaxTreeBytes <= 0 {
		o.MaxTreeBytes = 256 << 20
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = 100_000
	}
	if o.MaxPackBytes <= 0 {
		o.MaxPackBytes = 1 << 30
	}
	if o.MaxFetchBytes <= 0 {
		o.MaxFetchBytes = 1 << 30
	}
	if o.FetchMemoryBytes <= 0 {
		o.FetchMemoryBytes = max(512<<20, o.MaxFetchBytes)
	}
	if o.RefusalTTL <= 0 {
		o.RefusalTTL = 10 * time.Minute
	}
	if o.TreeCacheBytes <= 0 {
		o.TreeCacheBytes = 512 << 20
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 1 << 30
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Fetcher reads remotes. It is safe for concurrent use; one Fetcher serves
// the whole server so its caches and collapsed fetches are shared — between
// remotes of the same Identity only.
type Fetcher struct {
	opts Options
	http transport.Transport

	refsFlight singleflight.Group
	treeFlight singleflight.Group

	mu        sync.Mutex
	refs      *simplelru.LRU[string, cachedRefs]
	trees     *simplelru.LRU[string, *Tree]
	treeBytes int64
	refusals  *simplelru.LRU[refusalKey, refusal]

	// inflated counts the bytes inflated from packs, by all fetches.
	inflated *int64Counter
	// memory is what concurrent fetches hold (Options.FetchMemoryBytes).
	memory *sharedBudget

	disk    *diskCache // nil without Options.CacheDir, or when it failed to open
	diskErr error
}

type cachedRefs struct {
	refs *Refs
	at   time.Time
}

// limits are the bounds a fetch is refused by; a refusal is remembered
// under the limits it was made with.
type limits struct {
	file, tree, pack, fetch int64
	files                   int
}

func (o Options) limits() limits {
	return limits{file: o.MaxFileBytes, tree: o.MaxTreeBytes, pack: o.MaxPackBytes,
		fetch: min(o.MaxFetchBytes, o.FetchMemoryBytes), files: o.MaxFiles}
}

// New returns a Fetcher using opts' transports.
func New(opts Options) *Fetcher {
	opts = opts.withDefaults()
	f := &Fetcher{
		opts: opts,
		// A client for this Fetcher only (never client.InstallProtocol),
		// refusing redirects: a redirect could lead the credentials or the
		// guarded dialer's answer elsewhere.
		http:     githttp.NewClientWithOptions(cappedClient(opts.HTTPClient, opts.MaxPackBytes), &githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects}),
		inflated: &int64Counter{},
		memory:   newSharedBudget(opts.FetchMemoryBytes),
	}
	f.refusals, _ = simplelru.NewLRU[refusalKey, refusal](4096, nil)
	f.refs, _ = simplelru.NewLRU[string, cachedRefs](4096, nil)
	f.trees, _ = simplelru.NewLRU[string, *Tree](1<<20, func(_ string, t *Tree) { f.treeBytes -= t.Bytes })
	if opts.CacheDir != "" {
		f.disk, f.diskErr = openDiskCache(opts.CacheDir, opts.CacheBytes, opts.Now)
	}
	return f
}

// cappedClient is c with every response body capped (cappedTransport).
func cappedClient(c *http.Client, pack int64) *http.Client {
	capped := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	capped.Transport = cappedTransport{base: base, pack: pack}
	return &capped
}

// CacheDirErr reports why Options.CacheDir could not be opened, if it
// could not: the Fetcher then works without a disk cache, and start-up may
// choose to fail instead.
func (f *Fetcher) CacheDirErr() error { return f.diskErr }

// uploadSession is what a fetch needs of a transport: the advertisement
// and packs. go-git's HTTP sessions and sshSession both are one.
type uploadSession interface {
	AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error)
	UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error)
	Close() error
}

// open connects to the remote and reads its advertisement.
func (f *Fetcher) open(ctx context.Context, remote Remote) (uploadSession, *packp.AdvRefs, error) {
	ep, err := remote.endpoint()
	if err != nil {
		return nil, nil, err
	}
	var sess uploadSession
	switch ep.Protocol {
	case "ssh":
		s, err := openSSH(ctx, f.opts.DialSSH, ep, remote.Auth, f.opts.MaxPackBytes)
		if err != nil {
			return nil, nil, err
		}
		sess = s
	default:
		var auth transport.AuthMethod
		if remote.Auth.Token != "" {
			user := remote.Auth.Username
			if user == "" {
				user = "git"
			}
			auth = &githttp.BasicAuth{Username: user, Password: remote.Auth.Token}
		}
		s, err := f.http.NewUploadPackSession(ep, auth)
		if err != nil {
			return nil, nil, classify(ctx, err)
		}
		sess = s
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		_ = sess.Close()
		return nil, nil, classify(ctx, err)
	}
	return sess, adv, nil
}

// recovered runs fn, a collapsed fetch, turning a panic into an internal
// error (logged with its stack): singleflight re-panics a flight's panic
// in a goroutine of its own when callers wait on it, which no one can
// recover and which ends the process. A panic is never remembered as a
// refusal.
func (f *Fetcher) recovered(what string, fn func() (any, error)) func() (any, error) {
	return func() (v any, err error) {
		defer func() {
			if r := recover(); r != nil {
				f.opts.Logger.Error("gitrepo: a fetch panicked", "fetch", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				v, err = nil, &service.Error{Code: service.EINTERNAL, Message: "The repository could not be read.", Err: fmt.Errorf("panic: %v", r)}
			}
		}()
		return fn()
	}
}

// noHTTPClient is the transport of a fetcher built without an HTTPClient.
type noHTTPClient struct{}

func (noHTTPClient) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("gitrepo: no HTTPClient configured: HTTPS fetches are off")
}
