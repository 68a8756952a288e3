package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/kukie/gitops-server/api"
	"github.com/kukie/gitops-server/eksaccess"
	"github.com/kukie/gitops-server/internal/jobs"
	"github.com/kukie/gitops-server/internal/jwtauth"
	"github.com/kukie/gitops-server/internal/kube"
	"github.com/kukie/gitops-server/internal/ownership"
	"github.com/kukie/gitops-server/internal/render"
	"github.com/kukie/gitops-server/internal/sns"
	"github.com/kukie/gitops-server/migrations"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// run is the whole program; main only wires signals and the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 1 {
		cmd = args[1]
	}
	switch cmd {
	case "serve":
		if len(args) > 2 {
			return errUsage
		}
		return serve(ctx, getenv, stdout)
	case "migrate":
		switch {
		case len(args) == 3 && (args[2] == "up" || args[2] == "status"):
			return migrate(ctx, getenv, args[2], false, stdout)
		case len(args) == 4 && args[2] == "up" && args[3] == "--create-database":
			return migrate(ctx, getenv, args[2], true, stdout)
		}
		return errUsage
	case "render":
		// The repo tab's renders run here, in a child process of the server
		// with limits (render.RunChild): one request on stdin, one result on
		// stdout.
		if len(args) > 2 {
			return errUsage
		}
		if code := render.ChildMain(os.Stdin, stdout); code != 0 {
			return fmt.Errorf("render: exit %d", code)
		}
		return nil
	case "secrets":
		if len(args) == 3 && args[2] == "rekey" {
			return rekey(ctx, getenv, stdout)
		}
		return errUsage
	case "version":
		fmt.Fprintln(stdout, "kukie-server", version)
		return nil
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, errUsage)
		return nil
	}
	return errUsage
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})).With("service", "kukie-server")
}

// migrate applies or lists the migrations. With createDB it first creates
// the database KUKIE_DATABASE_URL names when it does not exist yet.
func migrate(ctx context.Context, getenv func(string) string, action string, createDB bool, stdout io.Writer) error {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return err
	}
	name, created, err := ensureDatabase(ctx, cfg.DatabaseURL, createDB)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(stdout, "created database %s\n", name)
	}
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	sqlDB := db.SQLDB()
	defer sqlDB.Close()
	if action == "status" {
		return migrations.WriteStatus(ctx, sqlDB, stdout)
	}
	if err := migrations.Up(ctx, sqlDB); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "migrations applied")
	return nil
}

func serve(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	log := newLogger(stdout, cfg.LogLevel)
	klog.SetSlogLogger(log.With("component", "client-go")) // client-go's own messages as JSON too
	log.Info("starting", "version", version, "config", cfg)
	// The Go memory limit follows the container's (90% of its cgroup
	// limit; GOMEMLIMIT, when set, wins), so the garbage collector keeps
	// the heap under the pod's limit instead of the kernel killing it.
	if limit, err := memlimit.SetGoMemLimitWithOpts(memlimit.WithLogger(log.With("component", "memlimit"))); err == nil {
		log.Info("Go memory limit set from the container", "bytes", limit)
	}
	// Each render child's memory is its share of what the container
	// leaves beside that limit.
	renderLimits, err := renderChildLimits(cfg, memlimit.FromCgroup, debug.SetMemoryLimit(-1))
	if err != nil {
		return err
	}
	log.Info("render limits", "concurrency", cfg.RenderConcurrency, "queue_timeout", cfg.RenderQueueTimeout.String(),
		"child_memory_bytes", renderLimits.MaxMemoryBytes)

	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close() // last: after both servers have drained

	if cfg.MigrateOnStart {
		sqlDB := db.SQLDB()
		err := migrations.Up(ctx, sqlDB)
		sqlDB.Close()
		if err != nil {
			return err
		}
		log.Info("migrations applied")
	}

	// The JWKS cache's background refresh lives as long as the server.
	authCtx, stopAuth := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAuth()
	var verifier service.TokenVerifier
	if cfg.JWKSURL != "" {
		verifier, err = jwtauth.NewJWKS(authCtx, cfg.JWKSURL, cfg.Issuer, cfg.Audience, time.Now)
	} else {
		verifier, err = jwtauth.NewHS256([]byte(cfg.HS256Secret), cfg.Issuer, cfg.Audience, time.Now)
	}
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerPoolMetrics(reg, db)
	registerDBGauges(reg, db)
	clusterObs := newClusterMetrics(reg)
	switchObs := newSwitchMetrics(reg)

	staticClusters, connector, err := kube.LoadStaticClusters(cfg.StaticClustersFile)
	if err != nil {
		return fmt.Errorf("KUKIE_STATIC_CLUSTERS_FILE: %w", err)
	}
	for _, c := range staticClusters {
		if _, err := db.UpsertCluster(ctx, c, time.Now().UTC()); err != nil {
			return fmt.Errorf("register static cluster %s of team %s: %w", c.ID, c.TeamID, err)
		}
	}
	if len(staticClusters) > 0 {
		log.Info("static clusters registered", "count", len(staticClusters))
	}
	// AWS (accounts, EKS registration and EKS cluster reads) is on when
	// KUKIE_AWS_REGION is set; without it those routes answer
	// aws_unavailable and static clusters keep working.
	var awsAccess service.AWSAccess
	var awsChecker service.AccessChecker
	var levels service.LevelApplier
	var serviceAccountID func(context.Context) (string, error)
	var snsVerifier *sns.Verifier
	connectors := eksaccess.ByKind{Static: connector}
	if cfg.AWSRegion != "" {
		side, err := newAWSSide(ctx, cfg.AWSRegion, db)
		if err != nil {
			return fmt.Errorf("KUKIE_AWS_REGION: %w", err)
		}
		awsAccess, awsChecker, levels, serviceAccountID, connectors.EKS = side.access, side.access, side.access,
			side.serviceAccountID, side.connector
		// SNS signing certificates are fetched through the standard proxy
		// variables and trusted by the system roots (SSL_CERT_FILE/DIR).
		if snsVerifier, err = sns.New(sns.Options{MaxAge: cfg.SNSMaxMessageAge}); err != nil {
			return err
		}
		log.Info("AWS access configured", "region", cfg.AWSRegion)
	}
	reader, err := kube.NewReader(connectors, kube.ReaderOptions{
		UserAgent: "kukie-gitops/" + version, Observer: clusterObs,
		// Client sets cost up to ~512 KB a cluster (measured, see
		// kube.DefaultMaxClients): at most 512 are kept, fewer when the
		// snapshot cache is smaller.
		MaxClients: min(cfg.CacheMaxClusters, kube.DefaultMaxClients),
		Timeout:    cfg.ClusterTimeout, QPS: float32(cfg.ClusterQPS), Burst: cfg.ClusterBurst,
	})
	if err != nil {
		return err
	}
	snapshots, err := service.NewSnapshotCache(reader, cfg.CacheMaxClusters, time.Now, clusterObs)
	if err != nil {
		return err
	}
	snapshots.Refused = func(ctx context.Context, c service.Cluster, err error) {
		_, serr := db.SetClusterAccess(ctx, c.TeamID, c.ID, service.ClusterAccess{State: service.AccessDegraded,
			Reason:       "The cluster refused Kukie's credentials; check its access entry, then reconcile.",
			EntryCreated: c.EntryCreated}, time.Now().UTC())
		log.WarnContext(ctx, "cluster refused Kukie's credentials", "team", c.TeamID, "cluster", c.ID, "err", err, "store_err", serr)
	}
	// A read is up to two LISTs and a discovery call, each within the cluster timeout.
	snapshots.ReadTimeout = 3*cfg.ClusterTimeout + time.Second
	// Every replica shares its reads through PostgreSQL: a cluster is read
	// once per window by all of them together. Notifications of written
	// rows end waits early and drop older local copies.
	sharedSnapshots := store.NewSnapshots(db, log)
	sharedSnapshots.OnWrite = snapshots.Invalidate
	snapshots.Shared, snapshots.Log, snapshots.Intern = sharedSnapshots, log, reader.Strings().InternApps
	listenCtx, stopListen := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListen()
	go sharedSnapshots.Listen(listenCtx)

	detector := &ownership.Detector{Objects: reader, Snapshots: snapshots, Budget: cfg.DetectionBudget, Now: time.Now,
		Log: slog.New(api.RequestLogHandler(log.Handler()))}
	reviews, err := service.NewAccessReviews(db, reader, cfg.CacheMaxClusters, time.Now)
	if err != nil {
		return err
	}
	// Registration and removal finish in River jobs (retries with backoff
	// while AWS propagates a change); the queue and the use case need each
	// other.
	registrations := &service.Registrations{Clusters: db, EKS: db, Accounts: db, Teams: db, AWS: awsAccess,
		Checker: awsChecker, Now: time.Now}
	switches := &service.Switches{Store: db, Accounts: db, Clusters: db, EKS: db, Teams: db, AWS: awsAccess,
		Levels: levels, Metrics: switchObs, Logger: log, Now: time.Now, Retryable: eksaccess.RetryableWithin,
		RetryBudget: cfg.SwitchRetryBudget}
	jobOpts := jobs.Options{Logger: log.With("component", "river"), JobTimeout: cfg.JobTimeout, RescueAfter: cfg.JobRescueAfter,
		Sweep: db}
	if awsAccess != nil {
		registrations.Retryable = eksaccess.RetryableWithin
		jobOpts.Switch = &jobs.SwitchOptions{Run: switches, Confirm: snsVerifier, Store: db,
			ReconcileInterval: cfg.ReconcileInterval}
	}
	queue, err := jobs.New(db.Pool(), registrations, jobOpts)
	if err != nil {
		return err
	}
	registrations.Jobs = queue
	var webhook *service.Webhook
	if awsAccess != nil {
		switches.Trigger, registrations.Switches = queue, queue
		webhook = &service.Webhook{Store: db, Accounts: db, Verifier: snsVerifier, Trigger: queue, Metrics: switchObs,
			Switches: switchObs, Logger: log, Now: time.Now}
	}
	if err := queue.Start(ctx); err != nil {
		return fmt.Errorf("start the job queue: %w", err)
	}
	// Runs after the HTTP servers have drained (defers run last in, first
	// out) and before the pool closes, with a fresh timeout: ctx is already
	// cancelled by then.
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := queue.Stop(stopCtx); err != nil {
			log.Warn("job queue did not stop cleanly; running jobs were cancelled and will run again", "err", err)
		}
	}()
	argo := &service.ArgoCD{Clusters: db, Cache: snapshots, Detector: detector, Plans: db}
	repoView, repos, err := newRepoView(ctx, cfg, db, argo, reader, renderLimits, log)
	if err != nil {
		return err
	}
	repoView.Queue = service.NewRenderQueue(cfg.RenderConcurrency, cfg.RenderQueueTimeout,
		service.RenderQueueOptions{Metrics: newRenderMetrics(reg)})
	repoView.RenderCacheBytes = cfg.RenderCacheBytes
	clusters := &service.Clusters{Store: db, Now: time.Now, RepoAuth: db, Sealer: sealerOf(cfg.SecretKeys), RepoCheck: repos}
	publicHandler := api.NewServer(api.Deps{
		Logger:   log,
		Verifier: verifier,
		Plans: &service.Plans{Store: db, Clusters: db, Now: time.Now, Detector: detector,
			MutatingTools: cfg.MutatingTools},
		Teams:         &service.Teams{Store: db, Now: time.Now},
		Clusters:      clusters,
		ArgoCD:        argo,
		RepoView:      repoView,
		AccessReviews: reviews,
		Accounts: &service.Accounts{Store: db, Teams: db, AWS: awsAccess, ServiceAccountID: serviceAccountID,
			Registrations: registrations, Switches: switches, Now: time.Now},
		Registrations:  registrations,
		Switches:       switches,
		Webhook:        webhook,
		TrustedProxies: cfg.TrustedProxies,
		Metrics:        api.NewMetrics(reg),
	})
	var draining atomic.Bool
	adminHandler := api.NewAdminHandler(func(ctx context.Context) error {
		if draining.Load() {
			return errors.New("shutting down")
		}
		return db.Ping(ctx)
	}, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	publicLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on KUKIE_HTTP_ADDR %s: %w", cfg.HTTPAddr, err)
	}
	adminLn, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		publicLn.Close()
		return fmt.Errorf("listen on KUKIE_ADMIN_ADDR %s: %w", cfg.AdminAddr, err)
	}
	errLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	public := newHTTPServer(publicHandler, errLog)
	admin := newHTTPServer(adminHandler, errLog)

	serveErr := make(chan error, 2)
	go func() { serveErr <- public.Serve(publicLn) }()
	go func() { serveErr <- admin.Serve(adminLn) }()
	log.Info("listening", "http_addr", publicLn.Addr().String(), "admin_addr", adminLn.Addr().String())

	select {
	case err := <-serveErr:
		// A listener failed: stop the other one and report.
		shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		_ = public.Shutdown(shutdownCtx)
		_ = admin.Shutdown(shutdownCtx)
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}

	// Fail readiness first, give load balancers time to notice, then drain
	// in-flight requests with a fresh timeout (ctx is already cancelled).
	draining.Store(true)
	log.Info("shutting down: readiness failing, draining", "delay", cfg.ShutdownDelay.String())
	time.Sleep(cfg.ShutdownDelay)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// The admin listener keeps answering (/healthz, /metrics) until the
	// public one has drained.
	err = public.Shutdown(shutdownCtx)
	if err != nil {
		// Drain timed out: cut the remaining connections so handlers see
		// their contexts cancelled and release database connections.
		_ = public.Close()
	}
	if aerr := admin.Shutdown(shutdownCtx); aerr != nil {
		_ = admin.Close()
		if err == nil {
			err = aerr
		}
	}
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// newHTTPServer sets every timeout. WriteTimeout sits well above the
// longest request budget (30 s; later cluster checks take up to 10 s).
func newHTTPServer(h http.Handler, errLog *stdlog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errLog,
	}
}
