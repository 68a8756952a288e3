package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kukie/gitops-server/api"
	"github.com/kukie/gitops-server/internal/jobs"
	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/netguard"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/service"
)

// config is the server's whole configuration, read from the KUKIE_* variables
// of configVars (configvars.go).
type config struct {
	HTTPAddr        string
	AdminAddr       string
	DatabaseURL     string
	JWKSURL         string
	HS256Secret     string
	Issuer          string
	Audience        string
	MigrateOnStart  bool
	LogLevel        slog.Level
	ShutdownDelay   time.Duration
	ShutdownTimeout time.Duration

	StaticClustersFile string
	// AWSRegion is the region of the service's own STS calls; empty turns
	// the AWS routes off (aws_unavailable).
	AWSRegion        string
	CacheMaxClusters int
	// MemoryLimit is KUKIE_MEMORY_LIMIT (0: unset): the replica's Go memory
	// limit when GOMEMLIMIT is not set (goMemoryLimit).
	MemoryLimit     int64
	ClusterTimeout  time.Duration
	DetectionBudget time.Duration
	// ClusterQPS and ClusterBurst are the client-side rate limit of each
	// cluster's client (kube.ReaderOptions).
	ClusterQPS    float64
	ClusterBurst  int
	MutatingTools map[string]bool

	// Jobs and level switches (Go duration syntax).
	JobTimeout        time.Duration // KUKIE_JOB_TIMEOUT: one run of a job
	JobRescueAfter    time.Duration // KUKIE_JOB_RESCUE_AFTER: a running job taken for dead
	SwitchRetryBudget time.Duration // KUKIE_SWITCH_RETRY_BUDGET: AccessDenied retried after a stack event
	ReconcileInterval time.Duration // KUKIE_RECONCILE_INTERVAL: every account reconciled
	SNSMaxMessageAge  time.Duration // KUKIE_SNS_MAX_MESSAGE_AGE: oldest SNS Timestamp taken

	// GitAllowedPrivateHosts are hosts on private networks the repo tab may
	// reach (KUKIE_GIT_ALLOWED_PRIVATE_HOSTS); RenderTimeout kills a render
	// (KUKIE_RENDER_TIMEOUT).
	GitAllowedPrivateHosts []netguard.AllowEntry
	RenderTimeout          time.Duration
	// RenderSandbox is which layers keep render children off the network
	// (KUKIE_RENDER_SANDBOX: auto, seccomp or namespace).
	RenderSandbox render.SandboxMode
	// RenderConcurrency is how many renders run at once per replica
	// (KUKIE_RENDER_CONCURRENCY, default GOMAXPROCS, which follows the
	// container's CPU limit); RenderQueueTimeout is how long a render waits
	// for a slot before render_busy (KUKIE_RENDER_QUEUE_TIMEOUT).
	RenderConcurrency  int
	RenderQueueTimeout time.Duration
	// RenderCacheBytes bounds each replica's cache of masked renders, a
	// team at most half (KUKIE_RENDER_CACHE_BYTES, default 256 MiB).
	RenderCacheBytes int64
	// TrustedProxies are the load balancers or ingress controllers whose
	// X-Forwarded-For names the client (KUKIE_TRUSTED_PROXIES).
	TrustedProxies api.TrustedProxies
	// RepoCacheDir keeps fetched trees on disk across restarts
	// (KUKIE_REPO_CACHE_DIR, "" for memory only), at most RepoCacheBytes
	// (KUKIE_REPO_CACHE_BYTES, default 1 GiB).
	RepoCacheDir   string
	RepoCacheBytes int64
	// RepoMaxFetchBytes bounds what the objects of one repository fetch
	// inflate to, deepening included (KUKIE_REPO_MAX_FETCH_BYTES, default
	// 1 GiB, as issue 19 names it; deploy/base sets 512 MiB); all concurrent fetches together hold at most the larger of
	// it and 512 MiB (gitrepo.Options.FetchMemoryBytes).
	RepoMaxFetchBytes int64

	// SecretKeys seals and opens stored repository secrets
	// (KUKIE_SECRET_KEYS); nil when unset: then only auth type none is
	// accepted.
	SecretKeys *keyring.Keyring
}

// Upper bounds of the per-cluster rate limit: far above what one client
// should ask of a customer's API server (kube-apiserver serves 400
// concurrent reads by default, for all its clients).
const (
	maxClusterQPS   = 1000
	maxClusterBurst = 2000
)

// maxRenderConcurrency bounds KUKIE_RENDER_CONCURRENCY: each render is a
// child process with its own memory share.
const maxRenderConcurrency = 256

// configError names the variable that is wrong; its text is the one line
// the process prints before exiting.
type configError struct {
	name, problem string
}

func (e *configError) Error() string { return "invalid configuration: " + e.name + " " + e.problem }

// loadConfig reads the configuration: each variable of configVars in turn,
// then the checks across variables. Auth and listener settings are checked
// only when withAuth is set: `migrate` needs just the database.
func loadConfig(getenv func(string) string, withAuth bool) (config, error) {
	c := defaultConfig()
	for _, v := range configVars {
		s := getenv(v.name)
		if !v.raw {
			s = strings.TrimSpace(s)
		}
		if s == "" {
			if v.required != "" {
				return c, &configError{v.name, v.required}
			}
			continue
		}
		if err := v.parse(&c, s); err != nil {
			return c, &configError{v.name, err.Error()}
		}
	}
	if c.JobRescueAfter <= c.JobTimeout {
		return c, &configError{"KUKIE_JOB_RESCUE_AFTER", "must be longer than KUKIE_JOB_TIMEOUT (a running job is taken for dead only after it timed out)"}
	}
	if !withAuth {
		return c, nil
	}
	if err := checkListeners(c); err != nil {
		return c, err
	}
	return c, checkAuth(c)
}

// defaultConfig is the configuration with no variable set; configVars
// shows each default to operators.
func defaultConfig() config {
	return config{
		HTTPAddr:        ":8080",
		AdminAddr:       ":9090",
		ShutdownDelay:   5 * time.Second,
		ShutdownTimeout: 30 * time.Second,

		CacheMaxClusters:  1024,
		ClusterTimeout:    5 * time.Second,
		DetectionBudget:   10 * time.Second,
		ClusterQPS:        float64(kube.DefaultQPS),
		ClusterBurst:      kube.DefaultBurst,
		MutatingTools:     toolSet(service.DefaultMutatingTools),
		JobTimeout:        jobs.DefaultJobTimeout,
		JobRescueAfter:    jobs.DefaultRescueAfter,
		SwitchRetryBudget: service.DefaultSwitchRetryBudget,
		ReconcileInterval: jobs.DefaultReconcileInterval,
		SNSMaxMessageAge:  sns.DefaultMaxAge,

		RenderTimeout:      60 * time.Second,
		RenderSandbox:      render.SandboxAuto,
		RenderConcurrency:  runtime.GOMAXPROCS(0),
		RenderQueueTimeout: service.DefaultRenderQueueTimeout,
		RenderCacheBytes:   service.DefaultRenderCacheBytes,
		// RepoCacheBytes stays 0: gitrepo.Options takes it for 1 GiB.
		RepoMaxFetchBytes: 1 << 30,
	}
}

// checkListeners checks the two listen addresses.
func checkListeners(c config) error {
	for _, a := range []struct{ name, addr string }{{"KUKIE_HTTP_ADDR", c.HTTPAddr}, {"KUKIE_ADMIN_ADDR", c.AdminAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return &configError{a.name, "must be host:port or :port"}
		}
	}
	if c.HTTPAddr == c.AdminAddr {
		return &configError{"KUKIE_ADMIN_ADDR", "must differ from KUKIE_HTTP_ADDR (admin endpoints stay off the public listener)"}
	}
	return nil
}

// checkAuth checks that exactly one of JWKS and HS256 is set, and what each
// needs with it.
func checkAuth(c config) error {
	switch {
	case c.JWKSURL != "" && c.HS256Secret != "":
		return &configError{"KUKIE_AUTH_JWKS_URL", "and KUKIE_AUTH_HS256_SECRET are both set; set exactly one"}
	case c.JWKSURL == "" && c.HS256Secret == "":
		return &configError{"KUKIE_AUTH_JWKS_URL", "or KUKIE_AUTH_HS256_SECRET is required"}
	case c.HS256Secret != "" && len(c.HS256Secret) < jwtauth.MinHS256SecretBytes:
		return &configError{"KUKIE_AUTH_HS256_SECRET", fmt.Sprintf("must be at least %d bytes", jwtauth.MinHS256SecretBytes)}
	case c.JWKSURL != "":
		u, err := url.Parse(c.JWKSURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return &configError{"KUKIE_AUTH_JWKS_URL", "must be an http(s) URL"}
		}
		if c.Issuer == "" {
			return &configError{"KUKIE_AUTH_ISSUER", "is required with KUKIE_AUTH_JWKS_URL"}
		}
		if c.Audience == "" {
			return &configError{"KUKIE_AUTH_AUDIENCE", "is required with KUKIE_AUTH_JWKS_URL"}
		}
	}
	return nil
}

// LogValue logs the configuration with secrets masked.
func (c config) LogValue() slog.Value {
	mask := func(s string) string {
		if s == "" {
			return ""
		}
		return "[set]"
	}
	return slog.GroupValue(
		slog.String("http_addr", c.HTTPAddr),
		slog.String("admin_addr", c.AdminAddr),
		slog.String("database_url", redactURL(c.DatabaseURL)),
		slog.String("auth_jwks_url", redactURL(c.JWKSURL)),
		slog.String("auth_hs256_secret", mask(c.HS256Secret)),
		slog.String("auth_issuer", c.Issuer),
		slog.String("auth_audience", c.Audience),
		slog.Bool("migrate_on_start", c.MigrateOnStart),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("shutdown_delay", c.ShutdownDelay.String()),
		slog.String("shutdown_timeout", c.ShutdownTimeout.String()),
		slog.String("static_clusters_file", c.StaticClustersFile),
		slog.String("aws_region", c.AWSRegion),
		slog.Int("cache_max_clusters", c.CacheMaxClusters),
		slog.Int64("memory_limit", c.MemoryLimit),
		slog.String("cluster_timeout", c.ClusterTimeout.String()),
		slog.String("detection_budget", c.DetectionBudget.String()),
		slog.Float64("cluster_qps", c.ClusterQPS),
		slog.Int("cluster_burst", c.ClusterBurst),
		slog.Any("mutating_tools", slices.Sorted(maps.Keys(c.MutatingTools))),
		slog.String("job_timeout", c.JobTimeout.String()),
		slog.String("job_rescue_after", c.JobRescueAfter.String()),
		slog.String("switch_retry_budget", c.SwitchRetryBudget.String()),
		slog.String("reconcile_interval", c.ReconcileInterval.String()),
		slog.String("sns_max_message_age", c.SNSMaxMessageAge.String()),
		slog.String("secret_keys", mask(c.SecretKeys.String())),
		slog.Any("git_allowed_private_hosts", c.GitAllowedPrivateHosts),
		slog.Any("trusted_proxies", c.TrustedProxies),
		slog.String("render_timeout", c.RenderTimeout.String()),
		slog.String("render_sandbox", string(c.RenderSandbox)),
		slog.Int("render_concurrency", c.RenderConcurrency),
		slog.String("render_queue_timeout", c.RenderQueueTimeout.String()),
		slog.Int64("render_cache_bytes", c.RenderCacheBytes),
		slog.String("repo_cache_dir", c.RepoCacheDir),
		slog.Int64("repo_cache_bytes", c.RepoCacheBytes),
		slog.Int64("repo_max_fetch_bytes", c.RepoMaxFetchBytes),
	)
}

// redactURL hides credentials in a URL: the userinfo password and any query
// parameter that can carry a secret (libpq accepts password= in the query).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return s
	}
	q := u.Query()
	for key := range q {
		switch strings.ToLower(key) {
		case "password", "sslpassword", "sslkey", "token", "access_token", "key", "secret":
			q.Set(key, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

var errUsage = errors.New("usage: kukie-server [serve | migrate up [--create-database] | migrate status | secrets rekey | version]")
