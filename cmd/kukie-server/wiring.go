package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kukie/gitops-server/api"
	"github.com/kukie/gitops-server/eksaccess"
	"github.com/kukie/gitops-server/internal/gitpreview"
	"github.com/kukie/gitops-server/internal/gitrepo"
	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/mask"
	"github.com/kukie/gitops-server/internal/ownership"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/migrations"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// The builders serve calls in order. Each takes what it needs and returns
// its part whole: no dependency is assigned after construction, but for
// the one cycle of the job queue (newWork).

// memoryLimits sets the replica's Go memory limit (goMemoryLimit:
// GOMEMLIMIT, else KUKIE_MEMORY_LIMIT, else 90% of the container's less
// the render children's budget), so the garbage collector keeps the heap
// under the pod's limit instead of the kernel killing it, and gives each
// render child its share of what the container leaves beside it. It
// returns the limit (math.MaxInt64: none) for the snapshot cache's memory
// guard.
func memoryLimits(cfg config, getenv func(string) string, log *slog.Logger) (render.Limits, int64, error) {
	container, err := memlimit.FromCgroup()
	if err != nil {
		container = 0
	}
	limit, source, err := goMemoryLimit(getenv("GOMEMLIMIT") != "", debug.SetMemoryLimit(-1), cfg.MemoryLimit, container,
		cfg.RenderConcurrency)
	if err != nil {
		return render.Limits{}, 0, fmt.Errorf("invalid configuration: %w", err)
	}
	if source == limitFromKukie || source == limitFromContainer {
		debug.SetMemoryLimit(limit)
	}
	log.Info("Go memory limit", "bytes", limit, "from", source, "container_bytes", container)
	limits, err := renderChildLimits(cfg, func() (uint64, error) { return container, nil }, limit)
	if err != nil {
		return limits, 0, err
	}
	log.Info("render limits", "concurrency", cfg.RenderConcurrency, "queue_timeout", cfg.RenderQueueTimeout.String(),
		"child_memory_bytes", limits.MaxMemoryBytes)
	return limits, limit, nil
}

// openDatabase opens the pool (the server starts not ready while the
// database is down) and applies migrations when KUKIE_MIGRATE_ON_START asks.
func openDatabase(ctx context.Context, cfg config, log *slog.Logger) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.MigrateOnStart {
		sqlDB := db.SQLDB()
		err := migrations.Up(ctx, sqlDB)
		sqlDB.Close()
		if err != nil {
			db.Close()
			return nil, err
		}
		log.Info("migrations applied")
	}
	return db, nil
}

// newAuth is the bearer-token verifier: JWKS (whose cache refreshes in the
// background until stop) or a shared HS256 secret.
func newAuth(ctx context.Context, cfg config) (service.TokenVerifier, func(), error) {
	authCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var verifier service.TokenVerifier
	var err error
	if cfg.JWKSURL != "" {
		verifier, err = jwtauth.NewJWKS(authCtx, cfg.JWKSURL, cfg.Issuer, cfg.Audience, time.Now)
	} else {
		verifier, err = jwtauth.NewHS256([]byte(cfg.HS256Secret), cfg.Issuer, cfg.Audience, time.Now)
	}
	if err != nil {
		stop()
		return nil, nil, err
	}
	return verifier, stop, nil
}

// observers are the metrics registry and what the parts report to.
type observers struct {
	reg      *prometheus.Registry
	clusters *clusterMetrics
	switches *switchMetrics
}

func newObservers(db *store.DB) observers {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerPoolMetrics(reg, db)
	registerDBGauges(reg, db)
	return observers{reg: reg, clusters: newClusterMetrics(reg), switches: newSwitchMetrics(reg)}
}

// clusterReading is how the server reads clusters: the reader, the shared
// 10-second snapshot cache, ownership detection and access reviews.
type clusterReading struct {
	reader    *kube.Reader
	snapshots *service.SnapshotCache
	detector  *ownership.Detector
	reviews   *service.AccessReviews
	secrets   *service.ClusterSecretCache // hubs' cluster secrets (names and servers)
	masker    *mask.Masker
	// locator is the revert preview's Git part; its Helm renders are
	// joined to the repo tab's renderer and slots once those exist
	// (withRepoView).
	locator *gitpreview.Locator
	// done is closed when the server begins to stop: background work of
	// requests (a plan's pending Git fields) ends with it.
	done <-chan struct{}
}

// withRepoView lets the revert preview trace Helm sources with the repo
// tab's render child, in its render slots, with the clusters' versions.
// It runs before the servers start.
func (r clusterReading) withRepoView(view *service.RepoView) {
	if tracer, ok := view.Renderer.(service.HelmTracer); ok {
		r.locator.Tracer = tracer
	}
	r.locator.Queue, r.locator.Versions = view.Queue, view.Versions
}

// newClusterReading registers the static clusters, then builds the reader
// on both connectors and the cache every replica shares through
// PostgreSQL (a cluster is read once per window by all of them together;
// notifications of written rows end waits early and drop older local
// copies until stop).
func newClusterReading(ctx context.Context, cfg config, db *store.DB, a awsParts, repos service.RepoFetcher, obs observers,
	log *slog.Logger) (clusterReading, func(), error) {
	static, err := registerStaticClusters(ctx, cfg, db, log)
	if err != nil {
		return clusterReading{}, nil, err
	}
	reader, err := kube.NewReader(eksaccess.ByKind{Static: static, EKS: a.connector}, kube.ReaderOptions{
		UserAgent: "kukie-gitops/" + version, Observer: obs.clusters,
		// Client sets cost up to ~512 KB a cluster (measured, see
		// kube.DefaultMaxClients): at most 512 are kept, fewer when the
		// snapshot cache is smaller.
		MaxClients: min(cfg.CacheMaxClusters, kube.DefaultMaxClients),
		Timeout:    cfg.ClusterTimeout, QPS: float32(cfg.ClusterQPS), Burst: cfg.ClusterBurst,
	})
	if err != nil {
		return clusterReading{}, nil, err
	}
	shared := store.NewSnapshots(db, log)
	snapshots, err := service.NewSnapshotCache(reader, cfg.CacheMaxClusters, time.Now, obs.clusters,
		service.WithSharedSnapshots(shared, reader.Strings().InternApps, log),
		// A read is up to two LISTs and a discovery call, each within the cluster timeout.
		service.WithReadTimeout(3*cfg.ClusterTimeout+time.Second),
		service.WithRefused(service.DegradeOnRefusal(db, log, time.Now)))
	if err != nil {
		return clusterReading{}, nil, err
	}
	registerSnapshotCacheMetrics(obs.reg, snapshots)
	reviews, err := service.NewAccessReviews(db, reader, cfg.CacheMaxClusters, time.Now)
	if err != nil {
		return clusterReading{}, nil, err
	}
	secrets, err := service.NewClusterSecretCache(reader, cfg.CacheMaxClusters, time.Now)
	if err != nil {
		return clusterReading{}, nil, err
	}
	listenCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	go shared.Listen(listenCtx, snapshots.Invalidate)
	// Which changed fields' values may be shown; planned values it would
	// mask are dropped. Built on first use (gitleaks' rules are ~13 MiB an
	// idle replica need not hold); a build that fails masks everything.
	masker := mask.Lazy()
	locator := &gitpreview.Locator{Fetcher: repos, Masker: masker, Observe: newPreviewMetrics(obs.reg)}
	reviews.Observe = newAccessReviewMetrics(obs.reg)
	detector := &ownership.Detector{Objects: reader, Snapshots: snapshots, Budget: cfg.DetectionBudget, Now: time.Now,
		Log: slog.New(api.RequestLogHandler(log.Handler())), Masker: masker, Git: locator, Access: reviews,
		Clusters: db, Secrets: secrets}
	return clusterReading{reader: reader, snapshots: snapshots, detector: detector, reviews: reviews, secrets: secrets, masker: masker,
		locator: locator, done: ctx.Done()}, stop, nil
}

// registerStaticClusters stores KUKIE_STATIC_CLUSTERS_FILE's clusters and
// returns their connector.
func registerStaticClusters(ctx context.Context, cfg config, db *store.DB, log *slog.Logger) (kube.ClusterConnector, error) {
	clusters, connector, err := kube.LoadStaticClusters(cfg.StaticClustersFile)
	if err != nil {
		return nil, fmt.Errorf("KUKIE_STATIC_CLUSTERS_FILE: %w", err)
	}
	for _, c := range clusters {
		if _, err := db.UpsertCluster(ctx, c, time.Now().UTC()); err != nil {
			return nil, fmt.Errorf("register static cluster %s of team %s: %w", c.ID, c.TeamID, err)
		}
	}
	if len(clusters) > 0 {
		log.Info("static clusters registered", "count", len(clusters))
	}
	return connector, nil
}

// newPublicHandler is the public API on every use case.
func newPublicHandler(cfg config, db *store.DB, verifier service.TokenVerifier, reading clusterReading, work work,
	argo *service.ArgoCD, repoView *service.RepoView, repos *gitrepo.ClusterRepos, a awsParts, obs observers,
	log *slog.Logger) http.Handler {
	plans := &service.Plans{Store: db, Clusters: db, Now: time.Now, Detector: reading.detector,
		MutatingTools: cfg.MutatingTools, Masker: argo.Masker, Done: reading.done}
	return api.NewServer(api.Deps{
		Logger:   log,
		Verifier: verifier,
		Plans:    plans,
		SyncPauses: &service.SyncPauses{ArgoCD: argo, Objects: reading.reader, Schema: reading.reader, Plans: plans,
			Detector: reading.detector},
		Teams: &service.Teams{Store: db, Now: time.Now},
		Clusters: &service.Clusters{Store: db, Now: time.Now, RepoAuth: db, Sealer: sealerOf(cfg.SecretKeys),
			RepoCheck: repos},
		ArgoCD:        argo,
		RepoView:      repoView,
		GitChanges:    &service.GitChanges{Plans: db, Clusters: db, Fetcher: repos, Masker: repoView.Masker},
		AccessReviews: reading.reviews,
		Accounts: &service.Accounts{Store: db, Teams: db, AWS: a.access, ServiceAccountID: a.serviceAccountID,
			Registrations: work.registrations, Switches: work.switches, Now: time.Now},
		Registrations:  work.registrations,
		Switches:       work.switches,
		Webhook:        work.webhook,
		TrustedProxies: cfg.TrustedProxies,
		Metrics:        api.NewMetrics(obs.reg),
	})
}

// newAdminHandler serves /healthz, /readyz (failing once draining) and
// /metrics.
func newAdminHandler(db *store.DB, reg *prometheus.Registry, draining *atomic.Bool) http.Handler {
	return api.NewAdminHandler(func(ctx context.Context) error {
		if draining.Load() {
			return errors.New("shutting down")
		}
		return db.Ping(ctx)
	}, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
}
