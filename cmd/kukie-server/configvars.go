package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukie/gitops-server/api"
	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/internal/netguard"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/service"
)

// configVar is one row of the configuration table: one KUKIE_* variable.
type configVar struct {
	name string
	// def is the default as operators see it: the README's Default column
	// without its code backticks ("" for none). The value itself is
	// defaultConfig's, which TestConfigTableDefaults holds to this text.
	def string
	// required is the problem reported when the variable is unset; "" when
	// it may be unset.
	required string
	// raw hands parse the value as set, spaces included (a secret is taken
	// as written). Other values are trimmed, and all-space counts as unset.
	raw bool
	// secret: the value may hold a credential; it is logged masked or
	// redacted and never quoted in an error.
	secret bool
	// meaning is one line of what the variable does (the README says more).
	meaning string
	// parse sets the config field(s) from the variable's value when it is
	// set; its error is the problem reported after the variable's name.
	parse func(c *config, s string) error
}

// configVars is the configuration table, in the README's order; loadConfig
// reads the variables in this order.
var configVars = []configVar{
	{name: "KUKIE_HTTP_ADDR", def: ":8080", meaning: "Public API listener (host:port).",
		parse: func(c *config, s string) error { c.HTTPAddr = s; return nil }},
	{name: "KUKIE_ADMIN_ADDR", def: ":9090", meaning: "Admin listener: health, readiness and metrics.",
		parse: func(c *config, s string) error { c.AdminAddr = s; return nil }},
	{name: "KUKIE_DATABASE_URL", def: "(required)", secret: true, meaning: "postgres:// URL for serve and migrate.",
		required: "is required (e.g. postgres://postgres@127.0.0.1:5432/kukie?sslmode=disable)", parse: parseDatabaseURL},
	{name: "KUKIE_AUTH_JWKS_URL", meaning: "JWKS of the identity provider; exactly one of this and the HS256 secret.",
		parse: func(c *config, s string) error { c.JWKSURL = s; return nil }},
	{name: "KUKIE_AUTH_HS256_SECRET", raw: true, secret: true, meaning: "Shared HS256 secret.",
		parse: func(c *config, s string) error { c.HS256Secret = s; return nil }},
	{name: "KUKIE_AUTH_ISSUER", meaning: "Required iss; required with JWKS.",
		parse: func(c *config, s string) error { c.Issuer = s; return nil }},
	{name: "KUKIE_AUTH_AUDIENCE", meaning: "Required aud; required with JWKS.",
		parse: func(c *config, s string) error { c.Audience = s; return nil }},
	{name: "KUKIE_MIGRATE_ON_START", def: "false", meaning: "Apply migrations at start.",
		parse: func(c *config, s string) error { return parseBool(&c.MigrateOnStart, s) }},
	{name: "KUKIE_LOG_LEVEL", def: "info", meaning: "Log level.", parse: parseLogLevel},
	{name: "KUKIE_SHUTDOWN_DELAY", def: "5s", meaning: "After SIGTERM: time /readyz fails before the listener closes.",
		parse: func(c *config, s string) error { return nonNegative(&c.ShutdownDelay, s) }},
	{name: "KUKIE_SHUTDOWN_TIMEOUT", def: "30s", meaning: "Longest wait for in-flight requests.",
		parse: func(c *config, s string) error { return nonNegative(&c.ShutdownTimeout, s) }},
	{name: "KUKIE_STATIC_CLUSTERS_FILE", meaning: "YAML file of clusters reached through kubeconfig files.",
		parse: func(c *config, s string) error { c.StaticClustersFile = s; return nil }},
	{name: "KUKIE_CACHE_MAX_CLUSTERS", def: "1024", meaning: "Bound of each replica's Argo CD snapshot cache.",
		parse: func(c *config, s string) error { return wholeNumber(&c.CacheMaxClusters, s, 1, 1_000_000) }},
	{name: "KUKIE_CLUSTER_TIMEOUT", def: "5s", meaning: "Budget of one call to a cluster.",
		parse: func(c *config, s string) error { return aboveZero(&c.ClusterTimeout, s) }},
	{name: "KUKIE_CLUSTER_QPS", def: "50", meaning: "Client-side requests per second to each cluster.", parse: parseClusterQPS},
	{name: "KUKIE_CLUSTER_BURST", def: "100", meaning: "Requests allowed in a burst above that rate, per cluster.",
		parse: func(c *config, s string) error { return wholeNumber(&c.ClusterBurst, s, 1, maxClusterBurst) }},
	{name: "KUKIE_AWS_REGION", meaning: "Region of the server's own STS calls; unset turns the AWS routes off.", parse: parseAWSRegion},
	{name: "KUKIE_DETECTION_BUDGET", def: "10s", meaning: "Budget of one ownership detection.",
		parse: func(c *config, s string) error { return aboveZero(&c.DetectionBudget, s) }},
	{name: "KUKIE_SNS_MAX_MESSAGE_AGE", def: "1h", meaning: "Oldest SNS Timestamp the webhook takes.",
		parse: func(c *config, s string) error { return aboveZero(&c.SNSMaxMessageAge, s) }},
	{name: "KUKIE_JOB_TIMEOUT", def: "1m", meaning: "Bound of one run of a background job.",
		parse: func(c *config, s string) error { return aboveZero(&c.JobTimeout, s) }},
	{name: "KUKIE_JOB_RESCUE_AFTER", def: "2m", meaning: "A job running longer is taken for dead and run again.",
		parse: func(c *config, s string) error { return aboveZero(&c.JobRescueAfter, s) }},
	{name: "KUKIE_SWITCH_RETRY_BUDGET", def: "5m", meaning: "How long after a stack event a level switch retries AccessDenied.",
		parse: func(c *config, s string) error { return aboveZero(&c.SwitchRetryBudget, s) }},
	{name: "KUKIE_RECONCILE_INTERVAL", def: "1h", meaning: "Every account is reconciled with its stack this often.",
		parse: func(c *config, s string) error { return aboveZero(&c.ReconcileInterval, s) }},
	{name: "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS", meaning: "Private-network Git and Helm hosts the repo tab may reach ([team-id=]host,…).",
		parse: parseAllowedPrivateHosts},
	{name: "KUKIE_TRUSTED_PROXIES", meaning: "CIDRs or IPs of the proxies whose X-Forwarded-For names the client.",
		parse: parseTrustedProxies},
	{name: "KUKIE_REPO_CACHE_DIR", meaning: "Directory keeping fetched repository trees across restarts; unset: memory only.",
		parse: func(c *config, s string) error { c.RepoCacheDir = s; return nil }},
	// The config keeps 0 when unset, which gitrepo.Options takes for 1 GiB.
	{name: "KUKIE_REPO_CACHE_BYTES", def: "1073741824", meaning: "Size bound of the repository cache directory.",
		parse: func(c *config, s string) error { return byteSize(&c.RepoCacheBytes, s, 1<<20) }},
	{name: "KUKIE_REPO_MAX_FETCH_BYTES", def: "1073741824", meaning: "Bound of what one repository fetch inflates to.",
		parse: func(c *config, s string) error { return byteSize(&c.RepoMaxFetchBytes, s, 1<<20) }},
	{name: "KUKIE_MEMORY_LIMIT",
		meaning: "The replica's Go memory limit when GOMEMLIMIT is unset (512MiB, 1GiB); the snapshot cache evicts above 70% of it.",
		parse:   func(c *config, s string) error { return memorySize(&c.MemoryLimit, s) }},
	{name: "KUKIE_RENDER_TIMEOUT", def: "60s", meaning: "A render child is killed after this.",
		parse: func(c *config, s string) error { return aboveZero(&c.RenderTimeout, s) }},
	{name: "KUKIE_RENDER_SANDBOX", def: "auto", meaning: "Which layers keep render children off the network: auto, seccomp or namespace.",
		parse: parseRenderSandbox},
	{name: "KUKIE_RENDER_CONCURRENCY", def: "GOMAXPROCS", meaning: "Renders that run at once per replica.",
		parse: func(c *config, s string) error { return wholeNumber(&c.RenderConcurrency, s, 1, maxRenderConcurrency) }},
	// A team's half of the render cache holds at least one render of the
	// largest kept.
	{name: "KUKIE_RENDER_CACHE_BYTES", def: "268435456", meaning: "Bytes of masked renders each replica keeps.",
		parse: func(c *config, s string) error {
			return byteSize(&c.RenderCacheBytes, s, 2*service.MaxCachedRenderBytes)
		}},
	{name: "KUKIE_RENDER_QUEUE_TIMEOUT", def: "10s", meaning: "Longest wait of a render for a slot before render_busy.",
		parse: parseRenderQueueTimeout},
	{name: "KUKIE_MUTATING_TOOLS", def: "apply_manifest,patch_resource,scale_resource,delete_resource,restart_rollout",
		meaning: "Tools whose plans get ownership detection.",
		parse:   func(c *config, s string) error { c.MutatingTools = toolSet(strings.Split(s, ",")); return nil }},
	{name: "KUKIE_SECRET_KEYS", secret: true, meaning: "Keys that encrypt stored repository secrets (id:base64,…; the first encrypts).",
		parse: parseSecretKeys},
}

func parseDatabaseURL(c *config, s string) error {
	c.DatabaseURL = s
	if u, err := url.Parse(s); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("must be a postgres:// URL")
	}
	if _, err := pgxpool.ParseConfig(s); err != nil {
		return errors.New("is not a valid connection URL: " + redactURL(strings.ReplaceAll(err.Error(), s, "(url)")))
	}
	return nil
}

func parseBool(dst *bool, s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("must be true or false")
	}
	*dst = v
	return nil
}

func parseLogLevel(c *config, s string) error {
	if err := c.LogLevel.UnmarshalText([]byte(s)); err != nil {
		return errors.New("must be debug, info, warn or error")
	}
	return nil
}

// nonNegative reads a Go duration of zero or more.
func nonNegative(dst *time.Duration, s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return errors.New("must be a non-negative duration such as 5s")
	}
	*dst = v
	return nil
}

// aboveZero reads a Go duration that must be above zero.
func aboveZero(dst *time.Duration, s string) error {
	if err := nonNegative(dst, s); err != nil {
		return err
	}
	if *dst == 0 {
		return errors.New("must be above zero")
	}
	return nil
}

// wholeNumber reads a whole number from least to most.
func wholeNumber(dst *int, s string, least, most int) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < least || n > most {
		return fmt.Errorf("must be a whole number from %d to %d", least, most)
	}
	*dst = n
	return nil
}

// byteSize reads a whole number of bytes of at least least.
func byteSize(dst *int64, s string, least int64) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < least {
		return fmt.Errorf("must be a whole number of bytes, at least %d", least)
	}
	*dst = n
	return nil
}

func parseClusterQPS(c *config, s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0 && v <= maxClusterQPS) { // also refuses NaN
		return fmt.Errorf("must be a number above 0 and at most %d (requests per second to each cluster)", maxClusterQPS)
	}
	c.ClusterQPS = v
	return nil
}

func parseAWSRegion(c *config, s string) error {
	c.AWSRegion = s
	if !service.ValidRegion(s) {
		return errors.New("must be an AWS region such as ap-northeast-2")
	}
	return nil
}

func parseAllowedPrivateHosts(c *config, s string) error {
	var err error
	if c.GitAllowedPrivateHosts, err = netguard.ParseAllowList(s); err != nil {
		return errors.New("must be comma-separated host names or IPs without ports, each optionally team-id=host: " + err.Error())
	}
	return nil
}

func parseTrustedProxies(c *config, s string) error {
	var err error
	if c.TrustedProxies, err = api.ParseTrustedProxies(s); err != nil {
		return errors.New("must be comma-separated CIDRs or IP addresses: " + err.Error())
	}
	return nil
}

func parseRenderSandbox(c *config, s string) error {
	var err error
	if c.RenderSandbox, err = render.ParseSandboxMode(s); err != nil {
		return errors.New("must be auto, seccomp or namespace")
	}
	return nil
}

func parseRenderQueueTimeout(c *config, s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return errors.New("must be a duration above zero such as 10s")
	}
	c.RenderQueueTimeout = v
	return nil
}

func parseSecretKeys(c *config, s string) error {
	var err error
	if c.SecretKeys, err = keyring.ParseKeys(s); err != nil {
		return errors.New("must be comma-separated id:base64 pairs of 32-byte keys: " + err.Error())
	}
	return nil
}

// toolSet is the set of the non-empty tool names, spaces trimmed.
func toolSet(tools []string) map[string]bool {
	set := map[string]bool{}
	for _, t := range tools {
		if t = strings.TrimSpace(t); t != "" {
			set[t] = true
		}
	}
	return set
}
