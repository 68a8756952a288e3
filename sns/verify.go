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
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Defaults for the zero fields of Options.
const (
	DefaultMaxAge       = time.Hour
	DefaultFetchTimeout = 5 * time.Second // well under SNS's ~15 s delivery timeout
	DefaultCacheSize    = 64
)

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
	flight       singleflight.Group
}

// New builds a Verifier. It trusts the system roots — which Go loads once
// per process, honouring SSL_CERT_FILE and SSL_CERT_DIR — so the
// certificate fetch trusts what every other TLS client of the process
// trusts, and fails if there are none. It reads HTTPS_PROXY and NO_PROXY
// now (see newCertClient).
func New(o Options) (*Verifier, error) {
	if o.MaxAge < 0 || o.FetchTimeout < 0 || o.CacheSize < 0 {
		return nil, fmt.Errorf("sns: negative option (MaxAge %v, FetchTimeout %v, CacheSize %d)", o.MaxAge, o.FetchTimeout, o.CacheSize)
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
	roots, err := x509.SystemCertPool()
	if err != nil {
		return nil, fmt.Errorf("sns: system root certificates: %w", err)
	}
	v.client = newCertClient(roots, v.fetchTimeout)
	return v, nil
}

// Verify checks m completely, network last: its fields (ErrMalformed), the
// certificate URL and the Timestamp (ErrRejected), then fetches the signing
// certificate (ErrTransient if that fails), checks the certificate's
// validity dates and the RSA signature over StringToSign with SHA1
// (version 1) or SHA256 (version 2) (ErrRejected). It never fetches a URL
// CheckCertURL refuses.
func (v *Verifier) Verify(ctx context.Context, m Message) error {
	if err := validate(m); err != nil {
		return err
	}
	if err := CheckCertURL(m.SigningCertURL, m.TopicARN); err != nil {
		return err
	}
	now := v.now()
	if err := CheckTime(m, now, v.maxAge); err != nil {
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
	cert, err := v.certificate(ctx, m.SigningCertURL)
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
