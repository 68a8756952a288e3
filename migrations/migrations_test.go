package migrations_test

import (
	"bytes"
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/kukie/gitops-server/internal/pgtest"
	"github.com/kukie/gitops-server/migrations"
)

func TestConcurrentUpThenNoop(t *testing.T) {
	url := pgtest.MustCreateDatabase(t)
	ctx := context.Background()
	open := func() *sql.DB {
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	// Two "processes" (separate pools) migrate the same empty database at once.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		db := open()
		wg.Go(func() { errs[i] = migrations.Up(ctx, db) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrator %d: %v", i, err)
		}
	}
	db := open()
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatalf("re-running Up: %v", err)
	}
	var applied int
	if err := db.QueryRow(`SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	var files int
	var status bytes.Buffer
	if err := migrations.WriteStatus(ctx, db, &status); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(status.String()), "\n") {
		files++
		if !strings.Contains(line, "applied") {
			t.Errorf("status line not applied: %q", line)
		}
	}
	if applied != files {
		t.Errorf("goose_db_version records %d applications for %d migrations: a migration ran twice", applied, files)
	}
	var tables int
	if err := db.QueryRow(`SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name IN ('teams', 'plans', 'plan_resources')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 3 {
		t.Errorf("found %d of the 3 tables", tables)
	}
}
