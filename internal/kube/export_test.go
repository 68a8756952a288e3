package kube

import (
	"context"
	"io"
)

// PageFetcher GETs one page of an Applications list (namespace "" for all,
// token "" for the first page).
type PageFetcher = func(ctx context.Context, namespace, token string) (io.ReadCloser, error)

// SetPageSize makes r list n Applications per page.
func SetPageSize(r *Reader, n int) { r.pageSize = n }

// WrapPages makes r fetch list pages through wrap, for injecting failures.
func WrapPages(r *Reader, wrap func(PageFetcher) PageFetcher) {
	pages := r.pages
	r.pages = func(cs *clientSet) pageFetcher { return wrap(pages(cs)) }
}
