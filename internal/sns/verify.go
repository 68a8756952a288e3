package sns

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"

	"github.com/kukie/gitops-server/service"
)

// Defaults for the zero fields of Options.
//
// The process-wide certificate fetch bucket: SNS signs with one
// certificate per region and rotates it rarely (months apart), so a process
// needs one fetch per region it hears from, plus one per rotation. A burst
// of 10 lets a cold process learn 10 regions at once; one new fetch a second
// after that is far above any genuine need and keeps what forged messages
// of listed topics can make the process fetch (each naming another file on
// the SNS host) to one request a second, to AWS's own hosts only. Each
// topic's own bucket (DefaultTopicFetchRate) keeps one topic from taking
// all of it.
const (
	DefaultMaxAge       = time.Hour
	DefaultFetchTimeout = 5 * time.Second // well under SNS's ~15 s delivery timeout
	DefaultCacheSize    = 64
	DefaultFetchRate    = rate.Limit(1) // uncached certificate fetches a second, process-wide
	DefaultFetchBurst   = 10
)

// Defaults for the per-topic certificate fetch bucket, in front of the
// process-wide one: a topic needs one certificate per rotation, and a burst
// of 2 covers a first fetch that fails and SNS's retry 40 s later fetching
// again. So a listed topic posting forged messages, each naming another
// certificate file, drains its own bucket after 2 fetches and then makes
// one a minute, and the process-wide bucket stays for every other topic.
const (
	DefaultTopicFetchRate  = rate.Limit(1.0 / 60) // uncached certificate fetches a second, per topic
	DefaultTopicFetchBurst = 2
)

// topicBucketsSize bounds the per-topic buckets kept (least recently used
// out first). Only listed topics reach a fetch, so this is above any real
// count; a topic whose bucket is dropped gets a full one, within the
// process-wide bucket still.
const topicBucketsSize = 4096

// FailureCacheTTL is how long a failed certificate fetch is remembered: a
// delivery naming that URL meanwhile is answered ErrTransient without a
// fetch. SNS retries a failed HTTP delivery 3 times 20 s apart, so 30 s
// still lets the second retry (40 s after the first try) fetch again; a
// longer negative cache would lose genuine first deliveries.
const FailureCacheTTL = 30 * time.Second

// failureCacheSize bounds the remembered failures; each took a token from
// the process-wide fetch bucket, so at the defaults no more than about 40
// are younger than FailureCacheTTL.
const failureCacheSize = 1024

// Options tunes a Verifier; the zero value is the production setting.
type Options struct {
	// Now is the clock for timestamps and certificate validity; nil means
	// time.Now.
	Now func() time.Time
	// MaxAge is how old a message's Timestamp may be; 0 means DefaultMaxAge.
	MaxAge time.Duration
	// FetchTimeout bounds one certificate fetch; 0 means
	// DefaultFetchTimeout.
	FetchTimeout time.Duration
	// CacheSize is how many fetched certificates are kept (least recently
	// used out first); 0 means DefaultCacheSize.
	CacheSize int
	// FetchRate and FetchBurst are the process-wide token bucket of
	// certificate fetches: a certificate in the cache, or a fetch already
	// under way, takes no token; a fetch beyond the bucket fails with
	// ErrTransient (ReasonCertBudget) without connecting. 0 means
	// DefaultFetchRate and DefaultFetchBurst.
	FetchRate  rate.Limit
	FetchBurst int
	// TopicFetchRate and TopicFetchBurst are each topic's own bucket of
	// certificate fetches, taken before the process-wide one, so one topic
	// cannot empty that for the others. A fetch refused by the process-wide
	// bucket takes no token from the topic's. 0 means DefaultTopicFetchRate
	// and DefaultTopicFetchBurst.
	TopicFetchRate  rate.Limit
	TopicFetchBurst int
}

// Verifier checks that SNS deliveries are authentic and fresh. It is safe
// for concurrent use; build one per process and share it, so its
// certificate cache and fetch collapsing work.
type Verifier struct {
	now          func() time.Time
	maxAge       time.Duration
	fetchTimeout time.Duration
	client       *http.Client
	cache        *lru.Cache[string, *x509.Certificate]
	failures     *lru.Cache[string, failedFetch]
	bucket       *rate.Limiter
	flight       singleflight.Group

	// budgetMu makes taking a token from a topic's bucket and from the
	// process-wide one a single decision.
	budgetMu     sync.Mutex
	topicBuckets *lru.Cache[string, *rate.Limiter]
	topicRate    rate.Limit
	topicBurst   int
}

// failedFetch is a fetch failure remembered until FailureCacheTTL after at.
type failedFetch struct {
	err error
	at  time.Time
}

// New builds a Verifier. It trusts the system roots — which Go loads once
// per process, honouring SSL_CERT_FILE and SSL_CERT_DIR — so the
// certificate fetch trusts what every other TLS client of the process
// trusts, and fails if there are none. It reads HTTPS_PROXY and NO_PROXY
// now (see newCertClient).
func New(o Options) (*Verifier, error) {
	if o.MaxAge < 0 || o.FetchTimeout < 0 || o.CacheSize < 0 || o.FetchRate < 0 || o.FetchBurst < 0 || o.TopicFetchRate < 0 || o.TopicFetchBurst < 0 {
		return nil, fmt.Errorf("sns: negative option (MaxAge %v, FetchTimeout %v, CacheSize %d, FetchRate %v, FetchBurst %d, TopicFetchRate %v, TopicFetchBurst %d)",
			o.MaxAge, o.FetchTimeout, o.CacheSize, o.FetchRate, o.FetchBurst, o.TopicFetchRate, o.TopicFetchBurst)
	}
	v := &Verifier{now: o.Now, maxAge: o.MaxAge, fetchTimeout: o.FetchTimeout}
	if v.now == nil {
		v.now = time.Now
	}
	if v.maxAge == 0 {
		v.maxAge = DefaultMaxAge
	}
	if v.fetchTimeout == 0 {
		v.fetchTimeout = DefaultFetchTimeout
	}
	size := o.CacheSize
	if size == 0 {
		size = DefaultCacheSize
	}
	cache, err := lru.New[string, *x509.Certificate](size)
	if err != nil {
		return nil, fmt.Errorf("sns: certificate cache: %w", err)
	}
	v.cache = cache
	if v.failures, err = lru.New[string, failedFetch](failureCacheSize); err != nil {
		return nil, fmt.Errorf("sns: failure cache: %w", err)
	}
	fetchRate, burst := o.FetchRate, o.FetchBurst
	if fetchRate == 0 {
		fetchRate = DefaultFetchRate
	}
	if burst == 0 {
		burst = DefaultFetchBurst
	}
	v.bucket = rate.NewLimiter(fetchRate, burst)
	v.topicRate, v.topicBurst = o.TopicFetchRate, o.TopicFetchBurst
	if v.topicRate == 0 {
		v.topicRate = DefaultTopicFetchRate
	}
	if v.topicBurst == 0 {
		v.topicBurst = DefaultTopicFetchBurst
	}
	if v.topicBuckets, err = lru.New[string, *rate.Limiter](topicBucketsSize); err != nil {
		return nil, fmt.Errorf("sns: topic buckets: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("sns: system root certificates: %w", err)
	}
	v.client = newCertClient(roots, v.fetchTimeout)
	return v, nil
}

var _ service.SNSVerifier = (*Verifier)(nil)

// ParseMessage is ParseMessage, for the service's SNSVerifier.
func (v *Verifier) ParseMessage(body []byte) (Message, error) { return ParseMessage(body) }

// SubscribeURLAllowed is SubscribeURLAllowed, for the service's SNSVerifier.
func (v *Verifier) SubscribeURLAllowed(m Message) error { return SubscribeURLAllowed(m) }

// ParseStackEvent is ParseStackEvent, for the service's SNSVerifier.
func (v *Verifier) ParseStackEvent(message string) (StackEvent, error) {
	return ParseStackEvent(message)
}

// CheckOffline runs every check of Verify that needs no network, at the
// Verifier's clock: the fields (ErrMalformed), the certificate URL and the
// Timestamp (ErrRejected). A message it accepts is not authentic yet.
func (v *Verifier) CheckOffline(m Message) error {
	return v.checkOffline(m, v.now())
}

func (v *Verifier) checkOffline(m Message, now time.Time) error {
	if err := validate(m); err != nil {
		return err
	}
	if err := CheckCertURL(m.SigningCertURL, m.TopicARN); err != nil {
		return err
	}
	return CheckTime(m, now, v.maxAge)
}

// Verify checks m completely, network last: CheckOffline, then fetches
// the signing certificate (ErrTransient if that fails, or if the topic's or
// the process-wide fetch bucket is empty), checks the certificate's validity dates and the RSA
// signature over StringToSign with SHA1 (version 1) or SHA256 (version 2)
// (ErrRejected). It never fetches a URL CheckCertURL refuses.
func (v *Verifier) Verify(ctx context.Context, m Message) error {
	return v.verifyAt(ctx, m, v.now())
}

// VerifyReceived verifies m, kept unverified since receivedAt, as Verify
// would have then: its Timestamp and the certificate's validity dates are
// judged at receivedAt; the certificate is fetched now.
func (v *Verifier) VerifyReceived(ctx context.Context, m Message, receivedAt time.Time) error {
	return v.verifyAt(ctx, m, receivedAt)
}

func (v *Verifier) verifyAt(ctx context.Context, m Message, now time.Time) error {
	if err := v.checkOffline(m, now); err != nil {
		return err
	}
	text, err := StringToSign(m)
	if err != nil {
		return err
	}
	sig, err := base64.StdEncoding.DecodeString(m.Signature)
	if err != nil {
		return malformed(ReasonSyntax, "Signature is not base64")
	}
	cert, err := v.certificate(ctx, m.TopicARN, m.SigningCertURL)
	if err != nil {
		return err
	}
	if now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return rejected(ReasonCertExpired, "signing certificate is outside its validity dates")
	}
	return checkSignature(cert, m.SignatureVersion, text, sig)
}

func checkSignature(cert *x509.Certificate, version string, text, sig []byte) error {
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return rejected(ReasonSignature, "signing certificate key is not RSA")
	}
	var hash crypto.Hash
	var digest []byte
	switch version {
	case SignatureVersion1:
		sum := sha1.Sum(text)
		hash, digest = crypto.SHA1, sum[:]
	case SignatureVersion2:
		sum := sha256.Sum256(text)
		hash, digest = crypto.SHA256, sum[:]
	default:
		return malformed(ReasonSignatureVersion, "SignatureVersion must be 1 or 2")
	}
	if err := rsa.VerifyPKCS1v15(key, hash, digest, sig); err != nil {
		return rejected(ReasonSignature, "signature does not verify")
	}
	return nil
}
