package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
)

// maxAdvertBytes bounds a ref advertisement: read before any pack, it is
// otherwise bounded by the fetch timeout alone. A repository of a million
// refs advertises about 60 MiB.
const maxAdvertBytes = 64 << 20

// errResponseTooLarge is a Git server's response over its cap.
var errResponseTooLarge = errors.New("the Git server's response is over its limit")

// readAllowance is what one fetch may read from the Git server in all —
// advertisement, shallow lines, acknowledgements and packs — so bytes
// sent before a pack are bounded too. exceeded records that a read was
// refused, however the transport reports the failure.
type readAllowance struct {
	max      int64
	left     atomic.Int64
	exceeded atomic.Bool
}

type readAllowanceKey struct{}

// withReadAllowance returns ctx carrying a fresh allowance of max bytes,
// which the transports (cappedTransport, sshSession) draw from.
func withReadAllowance(ctx context.Context, max int64) (context.Context, *readAllowance) {
	a := &readAllowance{max: max}
	a.left.Store(max)
	return context.WithValue(ctx, readAllowanceKey{}, a), a
}

func readAllowanceFrom(ctx context.Context) *readAllowance {
	a, _ := ctx.Value(readAllowanceKey{}).(*readAllowance)
	return a
}

// check turns the failure of a fetch whose reads passed the allowance into
// repo_too_large.
func (a *readAllowance) check(err error) error {
	if err != nil && a.exceeded.Load() {
		return tooLarge(fmt.Sprintf("The Git server sent more than %d bytes for one fetch.", a.max))
	}
	return err
}

// cappedReader reads at most left bytes, and at most what its fetch's
// allowance has left; past either it fails with errResponseTooLarge
// (reaching the cap exactly at the end of the stream is fine).
type cappedReader struct {
	r     io.Reader
	left  int64
	fetch *readAllowance // nil: the cap alone
}

func (c *cappedReader) Read(p []byte) (int, error) {
	limit := c.left
	if c.fetch != nil {
		limit = min(limit, c.fetch.left.Load())
	}
	if limit <= 0 {
		var one [1]byte
		if n, err := c.r.Read(one[:]); n == 0 {
			return 0, err
		}
		if c.fetch != nil {
			c.fetch.exceeded.Store(true)
		}
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > limit {
		p = p[:limit]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.fetch != nil {
		c.fetch.left.Add(-int64(n))
	}
	return n, err
}

// cappedTransport caps every response body: an advertisement (GET) at
// maxAdvertBytes, an upload-pack response (POST) at pack, and both at
// what the request's fetch has left to read.
type cappedTransport struct {
	base http.RoundTripper
	pack int64
}

func (t cappedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	limit := int64(maxAdvertBytes)
	if req.Method == http.MethodPost {
		limit = t.pack
	}
	res.Body = cappedBody{cappedReader: &cappedReader{r: res.Body, left: limit, fetch: readAllowanceFrom(req.Context())}, Closer: res.Body}
	return res, nil
}

type cappedBody struct {
	*cappedReader
	io.Closer
}
