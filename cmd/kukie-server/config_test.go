package main

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kukie/gitops-server/internal/netguard"
)

func TestConfigErrors(t *testing.T) {
	base := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
	}
	cases := []struct {
		name     string
		set      map[string]string
		variable string
	}{
		{"NoDatabase", map[string]string{"KUKIE_DATABASE_URL": ""}, "KUKIE_DATABASE_URL"},
		{"DatabaseNotURL", map[string]string{"KUKIE_DATABASE_URL": "mysql://x"}, "KUKIE_DATABASE_URL"},
		{"DatabaseBadOption", map[string]string{"KUKIE_DATABASE_URL": "postgres://u:pw-secret@h/db?sslmode=bogus"}, "KUKIE_DATABASE_URL"},
		{"NoAuth", map[string]string{"KUKIE_AUTH_HS256_SECRET": ""}, "KUKIE_AUTH_JWKS_URL"},
		{"BothAuth", map[string]string{"KUKIE_AUTH_JWKS_URL": "https://id.example/jwks"}, "KUKIE_AUTH_HS256_SECRET"},
		{"ShortSecret", map[string]string{"KUKIE_AUTH_HS256_SECRET": "short"}, "KUKIE_AUTH_HS256_SECRET"},
		{"JWKSWithoutIssuer", map[string]string{"KUKIE_AUTH_HS256_SECRET": "", "KUKIE_AUTH_JWKS_URL": "https://id.example/jwks", "KUKIE_AUTH_AUDIENCE": "a"}, "KUKIE_AUTH_ISSUER"},
		{"JWKSWithoutAudience", map[string]string{"KUKIE_AUTH_HS256_SECRET": "", "KUKIE_AUTH_JWKS_URL": "https://id.example/jwks", "KUKIE_AUTH_ISSUER": "i"}, "KUKIE_AUTH_AUDIENCE"},
		{"JWKSNotURL", map[string]string{"KUKIE_AUTH_HS256_SECRET": "", "KUKIE_AUTH_JWKS_URL": "id.example"}, "KUKIE_AUTH_JWKS_URL"},
		{"BadMigrateFlag", map[string]string{"KUKIE_MIGRATE_ON_START": "yes please"}, "KUKIE_MIGRATE_ON_START"},
		{"BadLogLevel", map[string]string{"KUKIE_LOG_LEVEL": "loud"}, "KUKIE_LOG_LEVEL"},
		{"BadAddr", map[string]string{"KUKIE_HTTP_ADDR": "8080"}, "KUKIE_HTTP_ADDR"},
		{"SameAddrs", map[string]string{"KUKIE_HTTP_ADDR": ":7000", "KUKIE_ADMIN_ADDR": ":7000"}, "KUKIE_ADMIN_ADDR"},
		{"ClusterQPSZero", map[string]string{"KUKIE_CLUSTER_QPS": "0"}, "KUKIE_CLUSTER_QPS"},
		{"ClusterQPSNegative", map[string]string{"KUKIE_CLUSTER_QPS": "-5"}, "KUKIE_CLUSTER_QPS"},
		{"ClusterQPSNotANumber", map[string]string{"KUKIE_CLUSTER_QPS": "fast"}, "KUKIE_CLUSTER_QPS"},
		{"ClusterQPSNaN", map[string]string{"KUKIE_CLUSTER_QPS": "NaN"}, "KUKIE_CLUSTER_QPS"},
		{"ClusterQPSInf", map[string]string{"KUKIE_CLUSTER_QPS": "+Inf"}, "KUKIE_CLUSTER_QPS"},
		{"ClusterQPSTooHigh", map[string]string{"KUKIE_CLUSTER_QPS": "1000.5"}, "KUKIE_CLUSTER_QPS"},
		{"ClusterBurstZero", map[string]string{"KUKIE_CLUSTER_BURST": "0"}, "KUKIE_CLUSTER_BURST"},
		{"ClusterBurstFraction", map[string]string{"KUKIE_CLUSTER_BURST": "1.5"}, "KUKIE_CLUSTER_BURST"},
		{"ClusterBurstNotANumber", map[string]string{"KUKIE_CLUSTER_BURST": "lots"}, "KUKIE_CLUSTER_BURST"},
		{"ClusterBurstTooHigh", map[string]string{"KUKIE_CLUSTER_BURST": "2001"}, "KUKIE_CLUSTER_BURST"},
		{"JobTimeoutNotDuration", map[string]string{"KUKIE_JOB_TIMEOUT": "60"}, "KUKIE_JOB_TIMEOUT"},
		{"JobTimeoutZero", map[string]string{"KUKIE_JOB_TIMEOUT": "0s"}, "KUKIE_JOB_TIMEOUT"},
		{"RescueBeforeTimeout", map[string]string{"KUKIE_JOB_TIMEOUT": "2m", "KUKIE_JOB_RESCUE_AFTER": "1m"}, "KUKIE_JOB_RESCUE_AFTER"},
		{"RetryBudgetNegative", map[string]string{"KUKIE_SWITCH_RETRY_BUDGET": "-1m"}, "KUKIE_SWITCH_RETRY_BUDGET"},
		{"RetryBudgetZero", map[string]string{"KUKIE_SWITCH_RETRY_BUDGET": "0s"}, "KUKIE_SWITCH_RETRY_BUDGET"},
		{"ReconcileIntervalZero", map[string]string{"KUKIE_RECONCILE_INTERVAL": "0"}, "KUKIE_RECONCILE_INTERVAL"},
		{"SNSMaxAgeBad", map[string]string{"KUKIE_SNS_MAX_MESSAGE_AGE": "an hour"}, "KUKIE_SNS_MAX_MESSAGE_AGE"},
		{"AllowedHostWithPort", map[string]string{"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "git.internal:22"}, "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS"},
		{"AllowedHostEmptyTeam", map[string]string{"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "=git.internal"}, "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS"},
		{"AllowedHostTeamWithPort", map[string]string{"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "acme=git.acme:22"}, "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS"},
		{"AllowedHostTeamIDWithComma", map[string]string{"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "acme,inc=git.acme"}, "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS"},
		{"AllowedHostEveryoneBeforeTeam", map[string]string{"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "git.shared,acme=git.acme"}, "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS"},
		{"TrustedProxyByName", map[string]string{"KUKIE_TRUSTED_PROXIES": "lb.internal"}, "KUKIE_TRUSTED_PROXIES"},
		{"RenderTimeoutZero", map[string]string{"KUKIE_RENDER_TIMEOUT": "0s"}, "KUKIE_RENDER_TIMEOUT"},
		{"RenderSandboxUnknown", map[string]string{"KUKIE_RENDER_SANDBOX": "off"}, "KUKIE_RENDER_SANDBOX"},
		{"RenderConcurrencyZero", map[string]string{"KUKIE_RENDER_CONCURRENCY": "0"}, "KUKIE_RENDER_CONCURRENCY"},
		{"RenderConcurrencyNotANumber", map[string]string{"KUKIE_RENDER_CONCURRENCY": "many"}, "KUKIE_RENDER_CONCURRENCY"},
		{"RenderConcurrencyTooHigh", map[string]string{"KUKIE_RENDER_CONCURRENCY": "257"}, "KUKIE_RENDER_CONCURRENCY"},
		{"RenderQueueTimeoutZero", map[string]string{"KUKIE_RENDER_QUEUE_TIMEOUT": "0s"}, "KUKIE_RENDER_QUEUE_TIMEOUT"},
		{"RenderQueueTimeoutNotDuration", map[string]string{"KUKIE_RENDER_QUEUE_TIMEOUT": "10"}, "KUKIE_RENDER_QUEUE_TIMEOUT"},
		{"RepoCacheBytesTiny", map[string]string{"KUKIE_REPO_CACHE_BYTES": "10"}, "KUKIE_REPO_CACHE_BYTES"},
		{"RenderCacheBytesBelowTwoRenders", map[string]string{"KUKIE_RENDER_CACHE_BYTES": "16777215"}, "KUKIE_RENDER_CACHE_BYTES"},
		{"RenderCacheBytesNotANumber", map[string]string{"KUKIE_RENDER_CACHE_BYTES": "256MiB"}, "KUKIE_RENDER_CACHE_BYTES"},
		{"RepoMaxFetchBytesTiny", map[string]string{"KUKIE_REPO_MAX_FETCH_BYTES": "1048575"}, "KUKIE_REPO_MAX_FETCH_BYTES"},
		{"RepoMaxFetchBytesNotANumber", map[string]string{"KUKIE_REPO_MAX_FETCH_BYTES": "1GiB"}, "KUKIE_REPO_MAX_FETCH_BYTES"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range base {
				env[k] = v
			}
			for k, v := range c.set {
				env[k] = v
			}
			var stdout, stderr strings.Builder
			err := run(t.Context(), []string{"kukie-server", "serve"}, func(k string) string { return env[k] }, &stdout, &stderr)
			if err == nil {
				t.Fatal("started with invalid configuration")
			}
			if msg := err.Error(); !strings.Contains(msg, c.variable) || strings.Contains(msg, "\n") {
				t.Errorf("error %q should be one line naming %s", msg, c.variable)
			}
			if strings.Contains(err.Error(), strings.Repeat("s", 32)) || strings.Contains(err.Error(), "pw-secret") {
				t.Error("the error leaks a secret")
			}
		})
	}
}

func TestConfigDefaultsAndMasking(t *testing.T) {
	env := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://kukie:hunter2@db:5432/kukie?sslpassword=hunter3&password=hunter4",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 40),
	}
	cfg, err := loadConfig(func(k string) string { return env[k] }, true)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != ":8080" || cfg.AdminAddr != ":9090" || cfg.MigrateOnStart || cfg.RenderSandbox != "auto" {
		t.Errorf("defaults: %+v", cfg)
	}
	logged := cfg.LogValue().String()
	if strings.Contains(logged, "hunter") || strings.Contains(logged, strings.Repeat("s", 40)) {
		t.Errorf("logged configuration leaks a secret: %s", logged)
	}
}

func TestConfigClusterRateLimit(t *testing.T) {
	base := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
	}
	cases := []struct {
		name       string
		qps, burst string
		wantQPS    float64
		wantBurst  int
	}{
		{"Defaults", "", "", 50, 100},
		{"Whole", "20", "40", 20, 40},
		{"Fraction", " 2.5 ", "1", 2.5, 1},
		{"Highest", "1000", "2000", 1000, 2000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := maps.Clone(base)
			env["KUKIE_CLUSTER_QPS"], env["KUKIE_CLUSTER_BURST"] = c.qps, c.burst
			cfg, err := loadConfig(func(k string) string { return env[k] }, true)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ClusterQPS != c.wantQPS || cfg.ClusterBurst != c.wantBurst {
				t.Errorf("QPS %v burst %d, want %v %d", cfg.ClusterQPS, cfg.ClusterBurst, c.wantQPS, c.wantBurst)
			}
			var logged strings.Builder
			slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", cfg)
			want := fmt.Sprintf("config.cluster_qps=%v config.cluster_burst=%d", c.wantQPS, c.wantBurst)
			if !strings.Contains(logged.String(), want) {
				t.Errorf("logged %q, want %q in it", logged.String(), want)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), []string{"kukie-server", "version"}, func(string) string { return "" }, &out, &out); err != nil || !strings.Contains(out.String(), "kukie-server") {
		t.Errorf("version: %v %q", err, out.String())
	}
	for _, args := range [][]string{{"x", "bogus"}, {"x", "migrate"}, {"x", "migrate", "down"}} {
		if err := run(t.Context(), args, func(string) string { return "" }, &out, &out); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The switch settings default to the values and read Go durations.
func TestConfigSwitchSettings(t *testing.T) {
	env := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
	}
	c, err := loadConfig(func(k string) string { return env[k] }, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.JobTimeout != time.Minute || c.JobRescueAfter != 2*time.Minute || c.SwitchRetryBudget != 5*time.Minute ||
		c.ReconcileInterval != time.Hour || c.SNSMaxMessageAge != time.Hour {
		t.Errorf("defaults: job timeout %v, rescue %v, retry budget %v, reconcile %v, SNS max age %v",
			c.JobTimeout, c.JobRescueAfter, c.SwitchRetryBudget, c.ReconcileInterval, c.SNSMaxMessageAge)
	}
	env["KUKIE_JOB_TIMEOUT"], env["KUKIE_JOB_RESCUE_AFTER"] = "3s", "10s"
	env["KUKIE_SWITCH_RETRY_BUDGET"], env["KUKIE_RECONCILE_INTERVAL"], env["KUKIE_SNS_MAX_MESSAGE_AGE"] = "1s", "90s", "15m"
	if c, err = loadConfig(func(k string) string { return env[k] }, true); err != nil {
		t.Fatal(err)
	}
	if c.JobTimeout != 3*time.Second || c.JobRescueAfter != 10*time.Second || c.SwitchRetryBudget != time.Second ||
		c.ReconcileInterval != 90*time.Second || c.SNSMaxMessageAge != 15*time.Minute {
		t.Errorf("set: %+v", c)
	}
}

// Every variable the server reads is documented in the README's
// Configuration table and in docs/operations.md, and those name no variable
// the server does not read.
func TestConfigDocumented(t *testing.T) {
	read := func(path string) string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	variable := regexp.MustCompile(`KUKIE_[A-Z0-9_]+`)
	code := map[string]bool{}
	for _, f := range []string{"config.go", "configvars.go", "run.go"} {
		for _, m := range regexp.MustCompile(`"(KUKIE_[A-Z0-9_]+)"`).FindAllStringSubmatch(read(f), -1) {
			code[m[1]] = true
		}
	}
	// Variables of the build and test tooling, not of the server.
	tooling := map[string]bool{"KUKIE_TEST_DATABASE_URL": true, "KUKIE_K8S_ASSETS": true, "KUKIE_TOOLS_CACHE": true}
	readme, ops := read("../../README.md"), read("../../docs/operations.md")
	for v := range code {
		if !strings.Contains(readme, "| `"+v+"` |") {
			t.Errorf("%s is missing from the README's Configuration table", v)
		}
		if !strings.Contains(ops, "`"+v+"`") {
			t.Errorf("%s is missing from docs/operations.md", v)
		}
	}
	for _, doc := range []struct{ name, text string }{{"README.md", readme}, {"docs/operations.md", ops}} {
		for _, v := range variable.FindAllString(doc.text, -1) {
			if !code[v] && !tooling[v] {
				t.Errorf("%s names %s, which the server does not read", doc.name, v)
			}
		}
	}
}

func TestConfigAllowedPrivateHostsByTeam(t *testing.T) {
	env := map[string]string{
		"KUKIE_DATABASE_URL":              "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_GIT_ALLOWED_PRIVATE_HOSTS": "acme=Git.Acme.Internal, org=beta=10.0.0.7, git.shared.internal",
	}
	c, err := loadConfig(func(k string) string { return env[k] }, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []netguard.AllowEntry{{Team: "acme", Host: "git.acme.internal"}, {Team: "org=beta", Host: "10.0.0.7"},
		{Host: "git.shared.internal"}}
	if diff := cmp.Diff(want, c.GitAllowedPrivateHosts); diff != "" {
		t.Errorf("GitAllowedPrivateHosts (-want +got):\n%s", diff)
	}
	var ce *configError
	env["KUKIE_GIT_ALLOWED_PRIVATE_HOSTS"] = "acme,inc=git.acme"
	if _, err := loadConfig(func(k string) string { return env[k] }, false); !errors.As(err, &ce) ||
		ce.name != "KUKIE_GIT_ALLOWED_PRIVATE_HOSTS" {
		t.Errorf("a team id holding ',': %v, want a configError for KUKIE_GIT_ALLOWED_PRIVATE_HOSTS", err)
	}
}

// The byte-size variables issue 19 added: KUKIE_REPO_MAX_FETCH_BYTES
// defaults to 1 GiB and KUKIE_RENDER_CACHE_BYTES to 256 MiB (from 16 MiB:
// two renders of the largest kept); each reads whole bytes and is logged.
func TestConfigByteSizes(t *testing.T) {
	env := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
	}
	type byteCase struct {
		name, set string
		want      int64
	}
	for _, v := range []struct {
		name, logKey string
		field        func(config) int64
		cases        []byteCase
	}{
		{"KUKIE_REPO_MAX_FETCH_BYTES", "repo_max_fetch_bytes", func(c config) int64 { return c.RepoMaxFetchBytes }, []byteCase{{"Default", "", 1 << 30}, {"Set", " 268435456 ", 256 << 20}, {"Lowest", "1048576", 1 << 20}}},
		{"KUKIE_RENDER_CACHE_BYTES", "render_cache_bytes", func(c config) int64 { return c.RenderCacheBytes }, []byteCase{{"Default", "", 256 << 20}, {"Set", " 134217728 ", 128 << 20}, {"Lowest", "16777216", 16 << 20}}},
	} {
		for _, c := range v.cases {
			t.Run(v.name+"/"+c.name, func(t *testing.T) {
				env[v.name] = c.set
				defer delete(env, v.name)
				cfg, err := loadConfig(func(k string) string { return env[k] }, true)
				if err != nil {
					t.Fatal(err)
				}
				if got := v.field(cfg); got != c.want {
					t.Errorf("%s %q = %d, want %d", v.name, c.set, got, c.want)
				}
				var logged strings.Builder
				slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", cfg)
				if want := fmt.Sprintf("config.%s=%d", v.logKey, c.want); !strings.Contains(logged.String(), want) {
					t.Errorf("logged %q, want %q in it", logged.String(), want)
				}
			})
		}
	}
}
