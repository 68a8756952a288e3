package sns

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// MaxCertSize caps the certificate response body (and its headers).
const MaxCertSize = 64 << 10

// newCertClient returns the client that fetches signing certificates: the
// settings of http.DefaultTransport, the given roots, the standard proxy
// variables as they are now, and no redirects followed (the caller sees
// the 3xx response).
//
// The proxy variables are read here rather than through
// http.ProxyFromEnvironment, which reads them once per process on first
// use, so each Verifier sees the environment of its construction.
func newCertClient(roots *x509.CertPool, timeout time.Duration) *http.Client {
	proxy := httpproxy.FromEnvironment().ProxyFunc()
	transport := &http.Transport{
		Proxy: func(r *http.Request) (*url.URL, error) { return proxy(r.URL) },
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: MaxCertSize,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// certificate returns the certificate at rawURL from the cache, or fetches
// it once however many callers ask at the same time. A fetch that failed
// is answered from the failure cache for FailureCacheTTL; a fetch takes a
// token from the process-wide bucket, and fails with ReasonCertBudget
// without connecting when there is none. A certificate in the cache is
// returned whatever the bucket holds. The fetch runs detached from ctx
// (bounded by the fetch timeout) so that one caller giving up does not
// fail the others waiting on it.
func (v *Verifier) certificate(ctx context.Context, rawURL string) (*x509.Certificate, error) {
	if c, ok := v.cache.Get(rawURL); ok {
		return c, nil
	}
	ch := v.flight.DoChan(rawURL, func() (any, error) {
		// A caller that missed the cache just before the previous flight
		// stored its result lands here after that flight has ended.
		if c, ok := v.cache.Get(rawURL); ok {
			return c, nil
		}
		now := v.now()
		if f, ok := v.failures.Get(rawURL); ok {
			if now.Sub(f.at) < FailureCacheTTL {
				return nil, f.err
			}
			v.failures.Remove(rawURL)
		}
		if !v.bucket.AllowN(now, 1) {
			return nil, transient(ReasonCertBudget, "too many signing certificates fetched lately; not fetching this one now", nil)
		}
		c, err := v.fetch(context.WithoutCancel(ctx), rawURL)
		if err != nil {
			v.failures.Add(rawURL, failedFetch{err: err, at: now})
			return nil, err
		}
		v.cache.Add(rawURL, c)
		return c, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*x509.Certificate), nil
	case <-ctx.Done():
		return nil, transient(ReasonCertFetch, "stopped waiting for the signing certificate", ctx.Err())
	}
}

func (v *Verifier) fetch(ctx context.Context, rawURL string) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(ctx, v.fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, transient(ReasonCertFetch, "building the certificate request", err)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fetchError(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, transient(ReasonCertRedirect, "certificate host answered a redirect (not followed): "+strconv.Itoa(resp.StatusCode), nil)
	case resp.StatusCode != http.StatusOK:
		return nil, transient(ReasonCertFetch, "certificate host answered "+strconv.Itoa(resp.StatusCode), nil)
	case resp.ContentLength > MaxCertSize:
		return nil, transient(ReasonCertTooLarge, "certificate response over "+strconv.Itoa(MaxCertSize)+" bytes", nil)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxCertSize+1))
	if err != nil {
		return nil, fetchError(err)
	}
	if len(body) > MaxCertSize {
		return nil, transient(ReasonCertTooLarge, "certificate response over "+strconv.Itoa(MaxCertSize)+" bytes", nil)
	}
	return parseCertificate(body)
}

func fetchError(err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return transient(ReasonCertTimeout, "fetching the signing certificate timed out", err)
	}
	return transient(ReasonCertFetch, "fetching the signing certificate failed", err)
}

// parseCertificate reads the first CERTIFICATE block of a PEM document. A
// host that passed TLS verification serving something else is treated as
// a passing fault, like any other failed fetch.
func parseCertificate(body []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, body = pem.Decode(body)
		if block == nil {
			return nil, transient(ReasonCertFetch, "certificate response holds no PEM certificate", nil)
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, transient(ReasonCertFetch, "certificate does not parse", err)
		}
		return c, nil
	}
}
