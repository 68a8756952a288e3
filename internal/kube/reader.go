package kube

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/net/http2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/kukie/gitops-server/internal/argocd"
	"github.com/kukie/gitops-server/service"
)

// applicationsGVR is Argo CD's Application resource: fixed, so no RESTMapper
// (and no discovery round trip) is needed to list it.
var applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// Failure reasons of a cluster read (the problem codes clients see).
const (
	ReasonUnreachable  = service.ReasonClusterUnreachable
	ReasonNotInstalled = service.ReasonArgoCDNotInstalled
	ReasonForbidden    = service.ReasonArgoCDForbidden
	// ReasonUnauthorized: an EKS cluster refused Kukie's token.
	ReasonUnauthorized = service.ReasonClusterUnauthorized
)

// ClusterConnector gives a Kubernetes client configuration for a cluster.
// Static clusters read a kubeconfig; EKS clusters assume the customer's
// role. It is declared here, by its consumer, so the service stays free of
// client-go.
type ClusterConnector interface {
	RESTConfig(ctx context.Context, c service.Cluster) (*rest.Config, error)
}

// ReadObserver is told about each LIST call: its outcome (ok or a failure
// reason) and how long it took. Metrics implement it.
type ReadObserver interface {
	ObserveList(outcome string, d time.Duration)
}

// Client-side rate limit per cluster by default: Argo CD's own, so Kukie
// asks no more of a customer's API server than the Argo CD already running
// there may. Upstream: argoproj/argo-cd
// pkg/apis/application/v1alpha1/cluster_constants.go (ARGOCD_K8S_CLIENT_QPS
// defaults to 50, ARGOCD_K8S_CLIENT_BURST to twice the QPS).
const (
	DefaultQPS   float32 = 50
	DefaultBurst int     = 100
)

// DefaultMaxClients is how many clusters' client sets the reader keeps
// (LRU) by default, so they fit in about 256 MiB. Measured
// (BenchmarkClusterClientCost, Go 1.26, client-go 0.37): a cluster whose
// Applications were listed holds ~65 KB, nearly all of it its idle HTTP/2
// connection (framer, TLS and bufio buffers, parsed certificates); once an
// object read has filled its discovery cache, ~360 KB against a bare API
// server, more with many CRDs. Counting 512 KB a cluster, 512 clusters
// take 256 MiB; listed-only ones take ~33 MiB. A larger fleet is still
// read, at the price of a new connection (TLS handshake) and, for object
// reads, a new discovery for a cluster whose clients were evicted.
const DefaultMaxClients = 512

// rediscoveryInterval is the shortest time between two resets of a
// cluster's cached discovery: asking about unknown kinds must not let a
// member make Kukie re-read a customer's API surface on every request.
const rediscoveryInterval = 30 * time.Second

// ReaderOptions tune the reader; zero values take the defaults.
type ReaderOptions struct {
	Timeout    time.Duration // per cluster call (default 5 s)
	QPS        float32       // per cluster (default DefaultQPS)
	Burst      int           // per cluster (default DefaultBurst)
	UserAgent  string        // default kukie-gitops/dev
	MaxClients int           // clusters whose clients are kept (default DefaultMaxClients)
	Observer   ReadObserver
	// Now is the clock that spaces out rediscovery (default time.Now).
	Now func() time.Time
}

// Reader reads Applications from clusters. It keeps one client set per
// cluster in a bounded LRU.
type Reader struct {
	connector ClusterConnector
	opts      ReaderOptions
	clients   *lru.Cache[string, *clientSet]
	// strings keeps the strings apps repeat across clusters shared.
	strings *argocd.Strings
	// pageSize and pages are what lists read with: pageSize and the REST
	// client, unless a test changes them (export_test.go).
	pageSize int
	pages    func(cs *clientSet) pageFetcher
}

type clientSet struct {
	// http is the cluster's one HTTP client (connection pool); rest is the
	// REST client behind dyn, which the raw Applications list shares.
	http *http.Client
	rest rest.Interface
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
	// mapper caches discovery; expander adds kubectl's short names.
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	expander meta.RESTMapper
	// cached is the mapper's cached discovery, which ClusterVersion reads too.
	cached discovery.CachedDiscoveryInterfaceWithContext

	mu        sync.Mutex
	lastReset time.Time // of the cached discovery, after a kind matched nothing

	version versionCache // ClusterVersion's, under its own lock
	schema  schemaCache  // AutomatedEnabled's, under mu
}

// NewReader returns a reader connecting through connector.
func NewReader(connector ClusterConnector, opts ReaderOptions) (*Reader, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.QPS == 0 {
		opts.QPS = DefaultQPS
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "kukie-gitops/dev"
	}
	if opts.MaxClients == 0 {
		opts.MaxClients = DefaultMaxClients
	}
	// An evicted cluster's idle connections are closed now rather than
	// after the transport's idle timeout.
	clients, err := lru.NewWithEvict(opts.MaxClients, func(_ string, cs *clientSet) { cs.closeIdle() })
	if err != nil {
		return nil, err
	}
	r := &Reader{connector: connector, opts: opts, clients: clients, pageSize: pageSize,
		strings: argocd.NewStrings(opts.Now, stringsPeriod)}
	r.pages = func(cs *clientSet) pageFetcher { return restPages(cs.rest, r.pageSize) }
	return r, nil
}

// stringsPeriod is how long shared strings stay canonical after a read
// last met them (one to two periods): far longer than a snapshot lives.
const stringsPeriod = 10 * time.Minute

func (r *Reader) clientsFor(ctx context.Context, c service.Cluster) (*clientSet, error) {
	key := c.Key()
	if cs, ok := r.clients.Get(key); ok {
		return cs, nil
	}
	cfg, err := r.connector.RESTConfig(ctx, c)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = r.opts.Timeout
	// One bucket for all of the cluster's clients (client-go would give
	// each REST client its own from QPS and Burst).
	cfg.RateLimiter = newClusterLimiter(r.opts.QPS, r.opts.Burst)
	cfg.UserAgent = r.opts.UserAgent
	// One HTTP client (one connection pool) serves the cluster's REST and
	// discovery clients, and the dynamic client and the raw list share one
	// REST client; built as dynamic.NewForConfig builds its own.
	dcfg := dynamic.ConfigFor(cfg)
	dcfg.GroupVersion = nil
	dcfg.APIPath = "/if-you-see-this-search-for-the-break"
	httpClient, err := rest.HTTPClientFor(dcfg)
	if err != nil {
		return nil, err
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(dcfg, httpClient)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	cs := &clientSet{http: httpClient, rest: rc, dyn: dynamic.New(rc), disc: disc, mapper: mapper,
		expander: restmapper.NewShortcutExpander(mapper, cached, func(string) {}),
		cached:   discovery.ToCachedDiscoveryInterfaceWithContext(cached)}
	r.clients.Add(key, cs)
	return cs, nil
}

// closeIdle closes the cluster's idle connections. http.Client's own
// CloseIdleConnections does not see through client-go's wrapping round
// trippers; utilnet's does.
func (cs *clientSet) closeIdle() { utilnet.CloseIdleConnectionsFor(cs.http.Transport) }

// ListApplications reads every Application of the cluster with one LIST
// across namespaces (in pages of pageSize, decoded item by item as they
// arrive), or — when that is forbidden — of the Argo CD namespace; the
// observer counts it as one list either way. Failures come back as service
// errors whose reason is one of cluster_unreachable, argocd_not_installed,
// argocd_forbidden. Within the same timeout it reads Argo CD's settings
// (argocd-cm) into AppRead.Settings — also when Applications are
// forbidden, as the settings still shape the answer — with one GET that is
// not observed as a LIST and never fails the read.
func (r *Reader) ListApplications(ctx context.Context, c service.Cluster) (service.AppRead, error) {
	start := time.Now()
	cs, err := r.clientsFor(ctx, c)
	if err != nil {
		err = service.WrapError(service.EINTERNAL, "The cluster connection could not be set up.", err)
		r.observeList(err, start)
		return service.AppRead{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	settings := readSettingsBeside(ctx, cs.dyn, c.ArgoCDNamespace) // dropped when the LIST failed but for the role
	read, err := r.list(ctx, cs, c)
	r.observeList(err, start)
	if err == nil || service.ErrorReason(err) == ReasonForbidden {
		read.Settings = <-settings
	}
	return read, err
}

// observeList tells the observer about a LIST that started at start.
func (r *Reader) observeList(err error, start time.Time) {
	if r.opts.Observer == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = string(service.ErrorReason(err))
		if outcome == "" {
			outcome = string(service.ReasonInternal)
		}
	}
	r.opts.Observer.ObserveList(outcome, time.Since(start))
}

func (r *Reader) list(ctx context.Context, cs *clientSet, c service.Cluster) (service.AppRead, error) {
	var read service.AppRead
	dec := argocd.NewApplicationDecoder(c.ArgoCDNamespace, r.strings)
	pages := r.pages(cs)
	apps, err := listApplications(ctx, pages, "", dec)
	if apierrors.IsForbidden(err) && c.ArgoCDNamespace != "" {
		apps, err = listApplications(ctx, pages, c.ArgoCDNamespace, dec)
		read.OnlyNamespace = c.ArgoCDNamespace
	}
	if err != nil {
		return service.AppRead{}, r.classify(ctx, cs, c, err)
	}
	read.Apps = apps
	return read, nil
}

// classify names a failed read, connection-type failures first: an
// unreachable server can look like "no such resource type". The API server
// authorizes before it looks the resource up, so a 403 is followed by a
// discovery call (open to every authenticated user) to tell "not installed"
// from "not allowed".
func (r *Reader) classify(ctx context.Context, cs *clientSet, c service.Cluster, err error) error {
	if se := connectionError(c, err); se != nil {
		return se
	}
	switch {
	case apierrors.IsForbidden(err):
		resources, derr := cs.disc.ServerResourcesForGroupVersion(applicationsGVR.GroupVersion().String())
		switch {
		case derr == nil && slices.ContainsFunc(resources.APIResources, func(a metav1.APIResource) bool { return a.Name == applicationsGVR.Resource }):
			return reasonError(service.EFORBIDDEN, ReasonForbidden,
				"Kukie's role may not read Argo CD Applications in this cluster.", err)
		case derr == nil || apierrors.IsNotFound(derr):
			return reasonError(service.ENOTFOUND, ReasonNotInstalled, "Argo CD is not installed in this cluster.", err)
		}
		// Discovery failed for another reason (unreachable, throttled, 5xx):
		// the cluster cannot be read properly now.
		return reasonError(service.EUPSTREAM, ReasonUnreachable, "The cluster's API discovery failed.", derr)
	case apierrors.IsNotFound(err):
		return reasonError(service.ENOTFOUND, ReasonNotInstalled, "Argo CD is not installed in this cluster.", err)
	case pastDeadline(ctx):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	}
	return service.WrapError(service.EINTERNAL, "Reading Argo CD Applications failed.", err)
}

// connectionError classifies the failures of any cluster call that mean
// the cluster cannot be used now — the connector's own, an EKS cluster
// refusing Kukie's token, unreachable — or returns nil.
func connectionError(c service.Cluster, err error) error {
	if se := connectorError(err); se != nil {
		return se
	}
	if le := rateLimitError(err); le != nil {
		return le
	}
	switch {
	case apierrors.IsUnauthorized(err) && c.Kind == service.ClusterEKS:
		// The token was renewed once already (the EKS connector retries a
		// 401): the cluster no longer accepts Kukie's access.
		return reasonError(service.EUPSTREAM, ReasonUnauthorized, "The EKS cluster refuses Kukie's credentials; its access entry may have been removed.", err)
	case unreachable(err):
		return reasonError(service.EUPSTREAM, ReasonUnreachable, msgUnreachable, err)
	}
	return nil
}

// msgUnreachable is what clients are told when a cluster cannot be reached.
// client-go's error text (with the API server's URL) stays in the wrapped
// error, for the log only.
const msgUnreachable = "The cluster cannot be reached."

// connectorError returns the classified failure of the cluster connector
// (an EKS connector that could not assume the customer's role or make a
// token) that client-go wrapped into its own error, or nil: it says more
// than "unreachable".
func connectorError(err error) error {
	var se *service.Error
	if errors.As(err, &se) && se.Reason != "" {
		return se
	}
	return nil
}

func reasonError(code string, reason service.Reason, msg string, err error) error {
	return &service.Error{Code: code, Reason: reason, Message: msg, Err: err}
}

// unreachable reports the failures of a cluster read that mean "the
// cluster cannot be used now": a connection failure, a 401 (credentials the
// cluster no longer accepts), throttling, or the API server failing (5xx).
func unreachable(err error) bool {
	return ConnectionFailure(err) || apierrors.IsUnauthorized(err) || apierrors.IsTooManyRequests(err) || serverFailure(err)
}

// serverFailure reports an answer with a 5xx status: the API server (or
// what stands in front of it) failed the request.
func serverFailure(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500
}

// pastDeadline reports whether ctx's deadline has passed. A call that
// fails then ran out of time, whatever its error says: client-go's rate
// limiter, asked to wait for a retry the server's Retry-After called for,
// refuses with an error of its own (not context.DeadlineExceeded) when the
// deadline passed before the context noticed.
func pastDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// ConnectionFailure reports a cluster that could not be talked to: refused,
// DNS, a broken or timed-out connection (an HTTP/2 stream reset midway
// included), a certificate that does not verify, or a gateway answering for
// the API server. Other adapters that call clusters (eksaccess) classify by
// it too.
func ConnectionFailure(err error) bool {
	var urlErr *url.Error
	var netErr net.Error
	var streamErr http2.StreamError
	var unknownAuthority x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var certErr x509.CertificateInvalidError
	switch {
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsServiceUnavailable(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.As(err, &urlErr), errors.As(err, &netErr), errors.As(err, &streamErr),
		errors.As(err, &unknownAuthority), errors.As(err, &hostErr), errors.As(err, &certErr):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == 502 || code == 503 || code == 504
	}
	return false
}

// Strings is the reader's table of canonical strings, for apps decoded
// elsewhere (another replica's shared snapshot) to share them too.
func (r *Reader) Strings() *argocd.Strings { return r.strings }
