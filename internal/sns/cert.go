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
	"golang.org/x/time/rate"
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

// certificate returns the certificate at rawURL, named by a message of
// topic, from the cache, or fetches it once however many callers ask at the
// same time. A fetch that failed is answered from the failure cache for
// FailureCacheTTL; a fetch takes a token from the topic's bucket and one
// from the process-wide bucket (takeFetchToken), and fails with
// ReasonCertBudget without connecting when either has none. A certificate
// in the cache is returned whatever the buckets hold, whichever topic
// fetched it. The fetch runs detached from ctx (bounded by the fetch
// timeout) so that one caller giving up does not fail the others waiting on
// it.
func (v *Verifier) certificate(ctx context.Context, topic, rawURL string) (*x509.Certificate, error) {
	if c, ok := v.cache.Get(rawURL); ok {
		return c, nil
	}
	c, err := v.joinFetch(ctx, rawURL, topic, rawURL)
	var refused topicBudgetError
	if errors.As(err, &refused) && refused.topic != topic {
		// The fetch this caller joined was another topic's, refused by that
		// topic's bucket: that is no answer for this topic. It asks again,
		// in a flight of its own topic (the URL holds no space).
		return v.joinFetch(ctx, topic+" "+rawURL, topic, rawURL)
	}
	return c, err
}

// joinFetch runs, or joins, the flight key fetching rawURL for topic.
func (v *Verifier) joinFetch(ctx context.Context, key, topic, rawURL string) (*x509.Certificate, error) {
	ch := v.flight.DoChan(key, func() (any, error) {
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
		if err := v.takeFetchToken(topic, now); err != nil {
			return nil, err
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

// topicBudgetError is a fetch refused by topic's own bucket: the answer for
// that topic's callers only.
type topicBudgetError struct {
	topic string
	err   error
}

func (e topicBudgetError) Error() string { return e.err.Error() }
func (e topicBudgetError) Unwrap() error { return e.err }

// takeFetchToken takes one token from topic's bucket and one from the
// process-wide bucket, or none: a topic's token is not spent on a fetch the
// process-wide bucket refuses, so a topic whose first delivery meets an
// empty process-wide bucket still has its own tokens for SNS's retries.
func (v *Verifier) takeFetchToken(topic string, now time.Time) error {
	v.budgetMu.Lock()
	defer v.budgetMu.Unlock()
	own, ok := v.topicBuckets.Get(topic)
	if !ok {
		own = rate.NewLimiter(v.topicRate, v.topicBurst)
		v.topicBuckets.Add(topic, own)
	}
	if own.TokensAt(now) < 1 {
		return topicBudgetError{topic: topic, err: transient(ReasonCertBudget, "too many signing certificates fetched lately for this topic; not fetching this one now", nil)}
	}
	if !v.bucket.AllowN(now, 1) {
		return transient(ReasonCertBudget, "too many signing certificates fetched lately; not fetching this one now", nil)
	}
	own.AllowN(now, 1)
	return nil
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
