// Package migrations holds the database schema as ordered SQL files, embedded
// in the binary and applied with goose. goose runs each file in its own
// transaction, records applied versions, and — with its Postgres session
// locker — lets two processes migrate at once without racing. River's own
// migrations (the job queue's tables) are applied after ours, under the
// same advisory lock.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

func newProvider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("create migration lock: %w", err)
	}
	return goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker))
}

// Up applies every pending migration, ours then River's. Running it again
// is a no-op. db must use the pgx driver (jackc/pgx/v5/stdlib), as River's
// migrator speaks pgx.
func Up(ctx context.Context, db *sql.DB) error {
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	if err := upRiver(ctx, db); err != nil {
		return fmt.Errorf("apply river migrations: %w", err)
	}
	return nil
}

func newRiverMigrator() (*rivermigrate.Migrator[pgx.Tx], error) {
	// No pool: the migrator only works in transactions given to it.
	return rivermigrate.New(riverpgxv5.New(nil), &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
}

// upRiver applies River's pending migrations one per transaction (as
// River's own Migrate does: some need the previous one committed), each
// under goose's advisory lock id so that two processes migrating at once
// apply every version once.
func upRiver(ctx context.Context, db *sql.DB) error {
	m, err := newRiverMigrator()
	if err != nil {
		return err
	}
	return withPgxConn(ctx, db, func(conn *pgx.Conn) error {
		for {
			applied := 0
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lock.DefaultLockID); err != nil {
					return err
				}
				// MigrateTx is deprecated for applying several versions in one
				// transaction; MaxSteps 1 applies one, exactly as Migrate
				// would, inside the transaction that holds the lock.
				//lint:ignore SA1019 one version per transaction, see above
				res, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, &rivermigrate.MigrateOpts{MaxSteps: 1})
				if err != nil {
					return err
				}
				applied = len(res.Versions)
				return nil
			})
			if err != nil || applied == 0 {
				return err
			}
		}
	})
}

// withPgxConn runs fn on one pgx connection of db.
func withPgxConn(ctx context.Context, db *sql.DB, fn func(*pgx.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("river's migrations need a pgx database/sql handle (jackc/pgx/v5/stdlib), not %T", driverConn)
		}
		return fn(c.Conn())
	})
}

// WriteStatus writes one line per migration: its version, file and whether
// (and when) it was applied.
func WriteStatus(ctx context.Context, db *sql.DB, w io.Writer) error {
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	statuses, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("read migration status: %w", err)
	}
	for _, s := range statuses {
		applied := "pending"
		if s.State == goose.StateApplied {
			applied = "applied " + s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
		}
		fmt.Fprintf(w, "%05d  %-40s %s\n", s.Source.Version, s.Source.Path, applied)
	}
	return writeRiverStatus(ctx, db, w)
}

// writeRiverStatus writes one line per River migration, after ours:
// r<version> and whether it was applied.
func writeRiverStatus(ctx context.Context, db *sql.DB, w io.Writer) error {
	m, err := newRiverMigrator()
	if err != nil {
		return err
	}
	applied := map[int]bool{}
	err = withPgxConn(ctx, db, func(conn *pgx.Conn) error {
		return pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			existing, err := m.ExistingVersionsTx(ctx, tx)
			for _, v := range existing {
				applied[v.Version] = true
			}
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("read river migration status: %w", err)
	}
	for _, v := range m.AllVersions() {
		state := "pending"
		if applied[v.Version] {
			state = "applied"
		}
		// River's names are left out: one is "pending and more", and a
		// reader (or a script) looks for "pending" to find unapplied work.
		fmt.Fprintf(w, "%-5s  %-40s %s\n", fmt.Sprintf("r%03d", v.Version), fmt.Sprintf("river migration %d", v.Version), state)
	}
	return nil
}
