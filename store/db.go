// Package store is the PostgreSQL adapter: it implements the service's store
// interfaces with pgx, owns every transaction, and translates database
// errors into service error codes by type and SQLSTATE, never by message.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jackc/puddle/v2"

	"github.com/kukie/gitops-server/service"
)

// DB is the PostgreSQL store.
type DB struct {
	pool *pgxpool.Pool
	// lockSlots bounds the connections cluster locks hold (half the pool):
	// the work done under a lock needs connections of its own.
	lockSlots chan struct{}
	// denseHistory is the number of matching plans above which AppHistory
	// walks the cluster's plans instead of fetching the matches by id.
	denseHistory int
}

// Option adjusts a store when it is opened.
type Option func(*DB)

// DefaultDenseHistory is the dense-history threshold of every store (tests
// lower it with WithDenseHistory, in export_test.go): see historyPage for
// the measurements.
const DefaultDenseHistory = 1000

var (
	_ service.PlanStore = (*DB)(nil)
	_ service.TeamStore = (*DB)(nil)
)

// Open creates a connection pool for url. It does not wait for the database:
// the server starts (not ready) while the database is down and recovers by
// itself when it returns.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	cfg, err := ParseConfig(url)
	if err != nil {
		return nil, err
	}
	return OpenConfig(ctx, cfg, opts...)
}

// ParseConfig turns a database URL into a pool configuration with the
// store's limits: connecting gives up after at most 5 s, idle connections
// close after at most 5 minutes, and health checks run every 15 s.
func ParseConfig(url string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > 5*time.Second {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if cfg.MaxConnIdleTime > 5*time.Minute {
		cfg.MaxConnIdleTime = 5 * time.Minute
	}
	cfg.HealthCheckPeriod = 15 * time.Second
	return cfg, nil
}

// OpenConfig is Open for a configuration the caller adjusted, for example
// with a query tracer (the history benchmark prints EXPLAIN of what it sends).
func OpenConfig(ctx context.Context, cfg *pgxpool.Config, opts ...Option) (*DB, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create database pool: %w", err)
	}
	db := &DB{pool: pool, denseHistory: DefaultDenseHistory, lockSlots: make(chan struct{}, max(1, cfg.MaxConns/2))}
	for _, opt := range opts {
		opt(db)
	}
	return db, nil
}

// Close waits for connections in use to be returned and closes the pool.
func (db *DB) Close() { db.pool.Close() }

// Ping checks that a connection can be made and used.
func (db *DB) Ping(ctx context.Context) error {
	return mapError(db.pool.Ping(ctx))
}

// Pool returns the connection pool, for adapters that share it (the River
// job queue).
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// SQLDB returns a database/sql handle sharing the pool, for tools that need
// one (migrations). Closing it does not close the pool.
func (db *DB) SQLDB() *sql.DB { return stdlib.OpenDBFromPool(db.pool) }

// Stat returns the pool's statistics, for metrics.
func (db *DB) Stat() *pgxpool.Stat { return db.pool.Stat() }

// mapError turns a database error into a service error. SQLSTATE classes
// decide for server errors: data exceptions are the caller's bad values;
// connection and resource problems are "unavailable". Errors without a
// server code are "unavailable" only when the connection itself failed;
// anything else (a scan or encoding bug) is internal, so it is logged as
// the defect it is rather than retried as an outage.
func mapError(err error) error {
	if err == nil {
		return nil
	}
	var se *service.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return service.WrapError(service.ENOTFOUND, "Not found.", err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		class := pgErr.Code
		if len(class) > 2 {
			class = class[:2]
		}
		switch {
		case pgErr.Code == "23505":
			return uniqueViolation(pgErr.ConstraintName, err)
		case class == "22":
			return service.WrapError(service.EVALIDATION, "A value cannot be stored.", err)
		case class == "08", class == "53", class == "57":
			return service.WrapError(service.EUNAVAILABLE, "The database is unavailable.", err)
		}
		return service.WrapError(service.EINTERNAL, "Database error.", err)
	}
	if errors.Is(err, context.Canceled) {
		return err // the caller went away; not the database's fault
	}
	if connectionFailed(err) {
		return service.WrapError(service.EUNAVAILABLE, "The database is unavailable.", err)
	}
	return service.WrapError(service.EINTERNAL, "Database error.", err)
}

// uniqueViolation maps a unique violation to a conflict, with the reason the
// service gives the constraint (named in the migrations) when it has one.
func uniqueViolation(constraint string, err error) error {
	e := service.WrapError(service.ECONFLICT, "The object already exists.", err)
	switch constraint {
	case "aws_accounts_aws_account_key":
		e.Reason, e.Message = "aws_account_in_use", "The AWS account is already connected to a Kukie team."
	case "clusters_eks_name_key":
		e.Reason, e.Message = "cluster_exists", "The EKS cluster is already registered in your team."
	}
	return e
}

// connectionFailed reports whether err means the database could not be
// reached or the connection broke.
func connectionFailed(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, puddle.ErrClosedPool)
}
