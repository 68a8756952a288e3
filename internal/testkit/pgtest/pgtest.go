// Package pgtest gives tests a fresh, migrated PostgreSQL database on a real
// server: KUKIE_TEST_DATABASE_URL, or by default the local server at
// 127.0.0.1:5432 (user postgres, trust auth). Each call creates its own
// database and drops it when the test ends. Without a server the test
// fails with instructions; it never skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukie/gitops-server/migrations"
	"github.com/kukie/gitops-server/store"
)

// DefaultAdminURL is the server tests use when KUKIE_TEST_DATABASE_URL is unset.
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the maintenance database tests create databases from.
func AdminURL() string {
	if u := os.Getenv("KUKIE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultAdminURL
}

// MustCreateDatabase creates an empty database and returns its URL. It is
// dropped (connections forced closed) when the test ends.
func MustCreateDatabase(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := AdminURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: cannot reach PostgreSQL at %s: %v\n"+
			"Start the local server (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start) "+
			"or point KUKIE_TEST_DATABASE_URL at a server where this user may CREATE DATABASE.", redact(admin), err)
	}
	defer conn.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "kukie_test_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("pgtest: parse %s: %v", redact(admin), err)
	}
	u.Path = "/" + name
	return u.String()
}

// MustOpenDB creates a fresh database, migrates it and returns the store and
// the database's URL. The store is closed when the test ends.
func MustOpenDB(tb testing.TB) (*store.DB, string) {
	tb.Helper()
	dbURL := MustCreateDatabase(tb)
	ctx := context.Background()
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		tb.Fatalf("pgtest: open: %v", err)
	}
	tb.Cleanup(db.Close)
	sqlDB := db.SQLDB()
	defer sqlDB.Close()
	if err := migrations.Up(ctx, sqlDB); err != nil {
		tb.Fatalf("pgtest: migrate: %v", err)
	}
	return db, dbURL
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "(unparseable URL)"
}

// MustExec runs one SQL statement on the database at dbURL (for test setup
// such as ANALYZE after bulk loads).
func MustExec(tb testing.TB, dbURL, sql string) {
	tb.Helper()
	if err := MustExecErr(tb, dbURL, sql); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// MustExecErr runs one SQL statement and returns its error (nil on
// success); failing to connect fails the test.
func MustExecErr(tb testing.TB, dbURL, sql string) error {
	tb.Helper()
	conn := mustConnect(tb, dbURL)
	defer conn.Close(context.Background())
	_, err := conn.Exec(context.Background(), sql)
	return err
}

// mustConnect opens one connection to dbURL or fails tb.
func mustConnect(tb testing.TB, dbURL string) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	return conn
}

// MustQueryRow runs one query on the database at dbURL and scans its single
// row into dest; failing to connect or to scan fails the test.
func MustQueryRow(tb testing.TB, dbURL, sql string, dest ...any) {
	tb.Helper()
	conn := mustConnect(tb, dbURL)
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), sql).Scan(dest...); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}
