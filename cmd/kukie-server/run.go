package main

import (
	"context"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/kukie/gitops-server/internal/render"
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
	renderLimits, memLimit, err := memoryLimits(cfg, getenv, log)
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer db.Close() // last: after both servers have drained
	verifier, stopAuth, err := newAuth(ctx, cfg)
	if err != nil {
		return err
	}
	defer stopAuth()
	obs := newObservers(db)
	awsParts, err := newAWSParts(ctx, cfg, db, log)
	if err != nil {
		return err
	}
	repoParts, err := newRepoParts(cfg, db, log)
	if err != nil {
		return err
	}
	reading, stopReading, err := newClusterReading(ctx, cfg, db, awsParts, repoParts.repos, obs, log)
	if err != nil {
		return err
	}
	defer stopReading()
	if memLimit < math.MaxInt64 {
		guard := &service.MemoryGuard{Cache: reading.snapshots, Limit: memLimit, Log: log.With("component", "memguard")}
		go guard.Run(ctx, time.Second)
	}
	work, err := newWork(ctx, cfg, db, awsParts, obs, log)
	if err != nil {
		return err
	}
	defer work.stop(cfg.ShutdownTimeout, log) // after the servers drain, before the pool closes
	argo := &service.ArgoCD{Clusters: db, Cache: reading.snapshots, Detector: reading.detector, Plans: db, Masker: reading.masker,
		Secrets: reading.secrets}
	repoView, err := newRepoView(ctx, cfg, db, argo, reading.reader, renderLimits, repoParts, obs.reg, log)
	if err != nil {
		return err
	}
	reading.withRepoView(repoView)
	repos := repoParts.repos
	var draining atomic.Bool
	public := newPublicHandler(cfg, db, verifier, reading, work, argo, repoView, repos, awsParts, obs, log)
	admin := newAdminHandler(db, obs.reg, &draining)
	return listenAndServe(ctx, cfg, public, admin, &draining, log)
}

// listenAndServe listens first (a busy port fails at once), serves both
// handlers until ctx ends or a listener fails, then drains: readiness
// fails, load balancers get KUKIE_SHUTDOWN_DELAY to notice, and in-flight
// requests get KUKIE_SHUTDOWN_TIMEOUT on a fresh context (ctx is already
// cancelled). The admin listener keeps answering until the public one has
// drained.
func listenAndServe(ctx context.Context, cfg config, publicHandler, adminHandler http.Handler, draining *atomic.Bool, log *slog.Logger) error {
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
	draining.Store(true)
	log.Info("shutting down: readiness failing, draining", "delay", cfg.ShutdownDelay.String())
	time.Sleep(cfg.ShutdownDelay)
	return drain(public, admin, cfg.ShutdownTimeout, log)
}

// drain shuts the public server down, then the admin one, within timeout;
// on timeout it cuts the remaining connections so handlers see their
// contexts cancelled and release database connections.
func drain(public, admin *http.Server, timeout time.Duration, log *slog.Logger) error {
	shutdownCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := public.Shutdown(shutdownCtx)
	if err != nil {
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
