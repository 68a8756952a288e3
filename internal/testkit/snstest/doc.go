// Package snstest delivers genuinely signed Amazon SNS messages to a webhook
// in tests, exactly as AWS would, so that in-process handler tests and
// end-to-end tests of the built server exercise the product's real
// sns.Verifier with no test-only switch in the product.
//
// A Host stands in for every sns.<region>.amazonaws.com(.cn): an HTTPS server
// with certificates from a test Authority, serving the RSA signing
// certificate and ConfirmSubscription, reached through an HTTP CONNECT proxy
// that the product finds through HTTPS_PROXY. The product trusts the
// Authority through Go's SSL_CERT_FILE, which Go reads once per process, the
// first time anything needs the system roots (on Linux and the BSDs; on
// macOS and Windows Go asks the platform verifier, which ignores it). So set
// it in TestMain, before any test runs:
//
//	var ca *snstest.Authority
//
//	func TestMain(m *testing.M) {
//		var cleanup func()
//		var err error
//		ca, cleanup, err = snstest.InstallAuthority("my tests")
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		code := m.Run()
//		cleanup()
//		os.Exit(code)
//	}
//
// A test then starts a Host and points the proxy variables at it: in process
// with Host.SetEnv before sns.New (which reads them once), or for a child
// process by appending Host.Env to os.Environ (the child inherits
// SSL_CERT_FILE from the test process). It builds messages with
// Host.Notification, Host.SubscriptionConfirmation or
// Host.UnsubscribeConfirmation, signs them with Host.Sign and delivers them
// with Post, or builds an *http.Request with NewRequest for a handler.
//
// Outside a test, a development tool uses the same stand-in through
// NewAuthority, NewHost (whose stop function ends it) and
// Authority.ServerTLS, which certifies its other local HTTPS servers for
// clients that trust the authority's roots file.
package snstest
