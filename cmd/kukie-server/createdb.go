package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes ensureDatabase tells apart.
const (
	sqlstateInvalidCatalogName    = "3D000" // the database does not exist
	sqlstateDuplicateDatabase     = "42P04" // created meanwhile by someone else
	sqlstateInsufficientPrivilege = "42501" // the role may not CREATE DATABASE
)

// maintenanceDatabase is where CREATE DATABASE runs: every PostgreSQL
// server has it, and it is what createdb(1) connects to.
const maintenanceDatabase = "postgres"

// ensureDatabase checks that the database dbURL names exists. When it does
// not (SQLSTATE 3D000 on connect) and create is set, it connects to the
// server's maintenance database with the same credentials and creates it;
// created reports whether it did. Without create, a missing database is an
// error that says how to create it. Any other failure is returned as it is.
func ensureDatabase(ctx context.Context, dbURL string, create bool) (name string, created bool, err error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return "", false, fmt.Errorf("parse database URL: %w", err)
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 5*time.Second {
		cfg.ConnectTimeout = 5 * time.Second
	}
	name = cfg.Database
	if name == "" {
		name = cfg.User // what the server assumes when no database is named
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return name, false, conn.Close(ctx)
	}
	if !hasSQLState(err, sqlstateInvalidCatalogName) {
		return name, false, fmt.Errorf("connect to database %q: %w", name, err)
	}
	if !create {
		return name, false, fmt.Errorf("database %q does not exist: create it, or run `kukie-server migrate up --create-database` "+
			"with a KUKIE_DATABASE_URL whose user may create databases", name)
	}

	admin := cfg.Copy()
	admin.Database = maintenanceDatabase
	conn, err = pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return name, false, fmt.Errorf("database %q does not exist, and connecting to the maintenance database %q to create it failed: %w",
			name, maintenanceDatabase, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	switch {
	case err == nil:
		return name, true, nil
	case hasSQLState(err, sqlstateDuplicateDatabase):
		return name, false, nil // another process created it first
	case hasSQLState(err, sqlstateInsufficientPrivilege):
		return name, false, fmt.Errorf("database %q does not exist and user %q may not create it "+
			"(grant CREATEDB, or create the database as an administrator): %w", name, cfg.User, err)
	}
	return name, false, fmt.Errorf("create database %q: %w", name, err)
}

// hasSQLState reports whether err carries a PostgreSQL error with the code.
func hasSQLState(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}
