package helmrepo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/kukie/gitops-server/service"
)

// Options tunes a Fetcher; zero values take the defaults noted.
type Options struct {
	// Now is the clock for the index cache (default time.Now).
	Now func() time.Time
	// IndexTTL is how long a repository's index.yaml is reused (default 10 s).
	IndexTTL time.Duration
	// FetchTimeout bounds one shared fetch of an index or an archive; it is
	// detached from any one caller so collapsed callers do not fail because
	// the first one left (default 1 min).
	FetchTimeout time.Duration
	// MaxIndexBytes caps index.yaml (default 32 MiB).
	MaxIndexBytes int64
	// MaxArchiveBytes caps a chart archive as downloaded (default 20 MiB).
	MaxArchiveBytes int64
	// MaxChartBytes caps a chart's files once extracted (default 64 MiB).
	MaxChartBytes int64
	// MaxChartFiles caps the number of files in a chart (default 10,000).
	MaxChartFiles int
	// CachedCharts is how many extracted charts are kept (default 64).
	CachedCharts int
	// CachedIndexes is how many repositories' indexes are kept (default 64).
	CachedIndexes int
}

func (o *Options) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IndexTTL <= 0 {
		o.IndexTTL = 10 * time.Second
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = time.Minute
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = 32 << 20
	}
	if o.MaxArchiveBytes <= 0 {
		o.MaxArchiveBytes = 20 << 20
	}
	if o.MaxChartBytes <= 0 {
		o.MaxChartBytes = 64 << 20
	}
	if o.MaxChartFiles <= 0 {
		o.MaxChartFiles = 10_000
	}
	if o.CachedCharts <= 0 {
		o.CachedCharts = 64
	}
	if o.CachedIndexes <= 0 {
		o.CachedIndexes = 64
	}
}

// Fetcher downloads charts from Helm repositories anonymously, caching each
// repository's index for a short time and extracted charts by version.
// It is safe for concurrent use.
type Fetcher struct {
	client *http.Client
	opts   Options

	indexes     *lru.Cache[string, cachedIndex]
	charts      *lru.Cache[chartKey, map[string][]byte]
	indexFlight singleflight.Group
	chartFlight singleflight.Group
}

type cachedIndex struct {
	idx *index
	at  time.Time
}

type chartKey struct{ repo, chart, version string }

var _ service.ChartFetcher = (*Fetcher)(nil)

// New returns a Fetcher that makes every request with client: in production
// the network guard's (netguard.Guard.HTTPClient), which refuses private
// addresses and redirects.
func New(client *http.Client, opts Options) *Fetcher {
	opts.defaults()
	indexes, err := lru.New[string, cachedIndex](opts.CachedIndexes)
	if err != nil {
		panic(err) // unreachable: the size is positive
	}
	charts, err := lru.New[chartKey, map[string][]byte](opts.CachedCharts)
	if err != nil {
		panic(err) // unreachable: the size is positive
	}
	return &Fetcher{client: client, opts: opts, indexes: indexes, charts: charts}
}

// Chart returns the files of chart at version from the Helm repository at
// repoURL, keyed "<chart>/<path>" (the archive's top directory renamed to
// chart). version is an exact version, a semver constraint, or empty for
// the latest release, resolved as Argo CD resolves a targetRevision. The
// returned map is the caller's; its byte slices are shared and read-only.
func (f *Fetcher) Chart(ctx context.Context, repoURL, chart, version string) (map[string][]byte, error) {
	base, err := parseRepoURL(repoURL)
	if err != nil {
		return nil, err
	}
	idx, err := f.index(ctx, base)
	if err != nil {
		return nil, err
	}
	e, err := idx.resolve(chart, version)
	if err != nil {
		return nil, err
	}
	key := chartKey{repo: base.String(), chart: chart, version: e.Version}
	if files, ok := f.charts.Get(key); ok {
		return maps.Clone(files), nil
	}
	v, err := wait(ctx, f.chartFlight.DoChan(key.repo+"\x00"+key.chart+"\x00"+key.version, func() (any, error) {
		if files, ok := f.charts.Get(key); ok {
			return files, nil
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.FetchTimeout)
		defer cancel()
		files, err := f.download(fctx, base, chart, e)
		if err != nil {
			return nil, err
		}
		f.charts.Add(key, files)
		return files, nil
	}))
	if err != nil {
		return nil, err
	}
	return maps.Clone(v.(map[string][]byte)), nil
}

// index returns base's parsed index.yaml, fetched at most once per IndexTTL.
func (f *Fetcher) index(ctx context.Context, base *url.URL) (*index, error) {
	k := base.String()
	if c, ok := f.indexes.Get(k); ok && f.opts.Now().Sub(c.at) < f.opts.IndexTTL {
		return c.idx, nil
	}
	v, err := wait(ctx, f.indexFlight.DoChan(k, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.opts.FetchTimeout)
		defer cancel()
		u := base.JoinPath("index.yaml")
		data, err := f.get(fctx, u, f.opts.MaxIndexBytes, "index.yaml", func() error {
			return unreachable(fmt.Sprintf("The Helm repository's index.yaml is larger than %d bytes.", f.opts.MaxIndexBytes), nil)
		})
		if err != nil {
			return nil, err
		}
		idx, err := parseIndex(data)
		if err != nil {
			return nil, unreachable(fmt.Sprintf("%s does not serve a Helm repository index.yaml.", display(base)), err)
		}
		f.indexes.Add(k, cachedIndex{idx: idx, at: f.opts.Now()})
		return idx, nil
	}))
	if err != nil {
		return nil, err
	}
	return v.(*index), nil
}

// download fetches e's first archive URL, checks its digest and extracts it.
func (f *Fetcher) download(ctx context.Context, base *url.URL, chart string, e entry) (map[string][]byte, error) {
	if len(e.URLs) == 0 {
		return nil, notFound(fmt.Sprintf("The Helm repository's index lists chart %q version %q without an archive URL.", chart, e.Version))
	}
	u, err := archiveURL(base, e.URLs[0])
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("chart %s %s", chart, e.Version)
	archive, err := f.get(ctx, u, f.opts.MaxArchiveBytes, what, func() error {
		return badArchive(fmt.Sprintf("The archive of %s is larger than %d bytes.", what, f.opts.MaxArchiveBytes), nil)
	})
	if err != nil {
		return nil, err
	}
	if want := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(e.Digest)), "sha256:"); want != "" {
		sum := sha256.Sum256(archive)
		if hex.EncodeToString(sum[:]) != want {
			return nil, badArchive(fmt.Sprintf("The archive of %s does not match the digest in the repository's index.", what), nil)
		}
	}
	return extract(archive, chart, limits{maxBytes: f.opts.MaxChartBytes, maxFiles: f.opts.MaxChartFiles})
}

// get GETs u anonymously and returns its body, at most max bytes (tooLarge
// reports more). what names the object in messages.
func (f *Fetcher) get(ctx context.Context, u *url.URL, max int64, what string, tooLarge func() error) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, unreachable("", err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, requestError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp.StatusCode, what)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, requestError(err)
	}
	if int64(len(body)) > max {
		return nil, tooLarge()
	}
	return body, nil
}

// wait returns the result of a collapsed call, or ctx's error when the
// caller stops waiting first (the shared call goes on for the others).
func wait(ctx context.Context, ch <-chan singleflight.Result) (any, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		return r.Val, r.Err
	}
}

// parseRepoURL checks a Helm repository URL and returns it without
// credentials, fragment or trailing slash: charts are fetched anonymously.
func parseRepoURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(strings.ToLower(raw), "oci://") {
		return nil, unsupported("OCI Helm repositories (oci://) are not supported: Kukie reads charts from HTTP Helm repositories (index.yaml).")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, &service.Error{Code: service.EVALIDATION, Reason: ReasonRepoURLInvalid,
			Message: "The Helm repository URL does not parse as an absolute URL."}
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	u.User = nil
	u.Fragment, u.RawFragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// archiveURL resolves an index entry's URL: relative ones against the
// repository (as Helm does, the repository path taken as a directory).
func archiveURL(base *url.URL, raw string) (*url.URL, error) {
	ref, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, unreachable("The Helm repository's index lists an archive URL that does not parse.", err)
	}
	if !ref.IsAbs() {
		dir := *base
		dir.Path += "/"
		ref = dir.ResolveReference(ref)
	}
	if err := checkScheme(ref); err != nil {
		return nil, err
	}
	ref.User = nil
	return ref, nil
}

func checkScheme(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return nil
	case "oci":
		return unsupported("OCI Helm charts (oci://) are not supported: Kukie reads charts from HTTP Helm repositories (index.yaml).")
	default:
		return unsupported(fmt.Sprintf("Helm repositories over %q are not supported: only https:// (and http:// to allowed hosts).", u.Scheme))
	}
}

// display names u for messages: scheme, host and path only (no
// credentials, no query that could carry a token).
func display(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
