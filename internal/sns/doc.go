// Package sns verifies Amazon SNS HTTP(S) deliveries and reads CloudFormation
// stack notifications.
//
// A delivery is checked cheapest first: ParseMessage (the JSON envelope),
// CheckTime (freshness), CheckCertURL (the signing certificate can only come
// from the topic's own SNS host, in a region the AWS SDK knows) — together
// Verifier.CheckOffline — and then Verifier.Verify, which also runs those
// checks, fetches the certificate and verifies the RSA signature over
// StringToSign. Certificates not cached are fetched from one process-wide
// token bucket, and a failed fetch is remembered FailureCacheTTL, so forged
// messages cannot turn into a stream of outbound fetches. Errors wrap ErrMalformed (answer 400), ErrRejected (403) or
// ErrTransient (503, so SNS retries) and carry a stable Reason for metrics.
//
// The certificate fetch uses ordinary TLS verification against the system
// roots, which is what authenticates the certificate; it honours
// HTTPS_PROXY/NO_PROXY and Go's SSL_CERT_FILE/SSL_CERT_DIR, so corporate
// egress works and tests reach a local host for sns.<region>.amazonaws.com
// through a CONNECT proxy and a test CA, without any switch in this package.
//
// ParseStackEvent reads the Key='value' lines CloudFormation publishes; the
// event is only a trigger, never the source of truth for a stack's state.
package sns
