package migrations_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/migrations"
	"github.com/kukie/gitops-server/service"
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
	var files, riverLines int
	var status bytes.Buffer
	if err := migrations.WriteStatus(ctx, db, &status); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(status.String()), "\n") {
		if strings.HasPrefix(line, "r") {
			riverLines++
		} else {
			files++
		}
		if !strings.Contains(line, "applied") {
			t.Errorf("status line not applied: %q", line)
		}
	}
	if applied != files {
		t.Errorf("goose_db_version records %d applications for %d migrations: a migration ran twice", applied, files)
	}
	riverVersions := len(mustRiverMigrator(t).AllVersions())
	if rows, distinct := riverApplied(t, db); rows != riverVersions || distinct != riverVersions || riverLines != riverVersions {
		t.Errorf("river_migration holds %d rows (%d versions), status shows %d lines, for %d river migrations",
			rows, distinct, riverLines, riverVersions)
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

func mustRiverMigrator(t *testing.T) *rivermigrate.Migrator[pgx.Tx] {
	t.Helper()
	m, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// riverApplied counts the rows of river_migration and the distinct versions
// among them.
func riverApplied(t *testing.T, db *sql.DB) (rows, versions int) {
	t.Helper()
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT version) FROM river_migration WHERE line = 'main'`).
		Scan(&rows, &versions); err != nil {
		t.Fatal(err)
	}
	return rows, versions
}

func TestUpAppliesRiverMigrations(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.MustCreateDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	status := func() []string {
		t.Helper()
		var b bytes.Buffer
		if err := migrations.WriteStatus(ctx, db, &b); err != nil {
			t.Fatal(err)
		}
		var river []string
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			if strings.HasPrefix(line, "r") {
				river = append(river, line)
			}
		}
		return river
	}
	versions := len(mustRiverMigrator(t).AllVersions())

	before := status()
	if len(before) != versions {
		t.Fatalf("status before up lists %d river migrations, want %d:\n%s", len(before), versions, strings.Join(before, "\n"))
	}
	for _, line := range before {
		if !strings.HasSuffix(line, "pending") {
			t.Errorf("before up: %q, want pending", line)
		}
	}

	for run := range 2 { // the second run is a no-op
		if err := migrations.Up(ctx, db); err != nil {
			t.Fatalf("up (run %d): %v", run+1, err)
		}
		if rows, distinct := riverApplied(t, db); rows != versions || distinct != versions {
			t.Errorf("after run %d river_migration holds %d rows (%d versions), want %d", run+1, rows, distinct, versions)
		}
	}
	for _, table := range []string{"river_job", "river_leader", "river_queue", "river_migration"} {
		var exists bool
		if err := db.QueryRowContext(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if !exists {
			t.Errorf("table %s missing after up", table)
		}
	}
	for _, line := range status() {
		if !strings.HasSuffix(line, "applied") || strings.Contains(line, "pending") {
			t.Errorf("after up: %q, want applied (and no \"pending\" anywhere)", line)
		}
	}
}

// previousVersion is the schema version before the credentials clean-up
// (00004_repo_url_credentials.sql).
const previousVersion = 3

// mustMigrateTo applies the migration files in this directory up to
// version on db, as an older server would have.
func mustMigrateTo(t *testing.T, db *sql.DB, version int64) *goose.Provider {
	t.Helper()
	names, err := filepath.Glob("*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("no migration files found (%v): run the test from migrations/", err)
	}
	files := fstest.MapFS{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = &fstest.MapFile{Data: b}
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, files)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(context.Background(), version); err != nil {
		t.Fatalf("migrate to %d: %v", version, err)
	}
	return p
}

func TestRepoURLCredentialsCleaned(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.MustCreateDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := mustMigrateTo(t, db, previousVersion)

	cases := []struct{ name, stored, want string }{
		{"HTTPSTokenUser", "https://ghp_abc123@github.com/o/r", "https://github.com/o/r"},
		{"HTTPSUserPassword", "https://u:p@host.example.com/x", "https://host.example.com/x"},
		{"HTTPSTwoAts", "https://a@b@github.com/o/r", "https://github.com/o/r"},
		{"HTTPSPortKept", "https://tok@git.example.com:8443/o/r.git", "https://git.example.com:8443/o/r.git"},
		{"HTTPSOneSlash", "https:/tok@github.com/o/r", "https:/github.com/o/r"},
		{"HTTPSUpperCaseScheme", "HTTPS://tok@github.com/o/r", "HTTPS://github.com/o/r"},
		{"HTTPSSurroundingSpace", " https://tok@github.com/o/r\t", "https://github.com/o/r"},
		{"HTTPSNoBreakSpace", "\u00a0https://tok@github.com/o/r", "https://github.com/o/r"},
		{"HTTPGitUser", "http://git@git.example.com/o/r", "http://git.example.com/o/r"},
		{"GitProtocolUser", "git://tok@github.com/o/r", "git://github.com/o/r"},
		{"SSHTokenUser", "ssh://ghp_abc@github.com/o/r", "ssh://git@github.com/o/r"},
		{"SSHGitPassword", "ssh://git:pw@github.com:22/o/r.git", "ssh://git@github.com:22/o/r.git"},
		{"SSHPlainPassword", "ssh://alice:pw@gerrit.example.com:29418/p", "ssh://alice@gerrit.example.com:29418/p"},
		{"SSHUpperCaseUser", "ssh://Alice@github.com/o/r", "ssh://git@github.com/o/r"},
		{"GitPlusSSHGlpat", "git+ssh://glpat-abc@gitlab.com/o/r", "git+ssh://git@gitlab.com/o/r"},
		{"SCPTokenUser", "ghp_x@github.com:o/r", "git@github.com:o/r"},
		{"SCPGithubPat", "github_pat_11ab@github.com:o/r.git", "git@github.com:o/r.git"},
		{"SCPHexUser", "3f9a2c7e1b@github.com:o/r", "git@github.com:o/r"},
		{"SCPUserPassword", "user:pass@github.com:o/r", "user@github.com:o/r"},
		{"SCPTwoAts", "a@b@github.com:o/r", "git@github.com:o/r"},
		{"SCPAtInPathTokenUser", "ghp_x@github.com:o@x/r", "git@github.com:o@x/r"},
		{"BareUser", "tok@github.com/o/r", "github.com/o/r"},
		{"NoSlashesUser", "https:tok@github.com/o/r", "github.com/o/r"},
		{"JoinedSlashes", "A:/@/@", "A://"},
		// Clean URLs are left exactly as they are.
		{"CleanHTTPS", "https://github.com/o/r", "https://github.com/o/r"},
		{"CleanAtInPath", "https://github.com/o/r@v1", "https://github.com/o/r@v1"},
		{"CleanSSHGit", "ssh://git@github.com/o/r", "ssh://git@github.com/o/r"},
		{"CleanSCPGit", "git@github.com:o/r.git", "git@github.com:o/r.git"},
		{"CleanSCPPlainUser", "deploy@git.example.com:o/r", "deploy@git.example.com:o/r"},
		{"CleanSCPAtInPath", "git@github.com:o@x/r", "git@github.com:o@x/r"},
		{"CleanWithSpaces", " https://github.com/o/r ", " https://github.com/o/r "},
		{"Disconnected", "", ""},
	}
	old := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := db.ExecContext(ctx, `INSERT INTO teams (id, external_id, created_at) VALUES ('t', 't', $1)`, old); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if _, err := db.ExecContext(ctx, `INSERT INTO clusters (team_id, id, name, kind, access_level, gitops_repo, created_at, updated_at)
			VALUES ('t', $1, $1, 'static', 'full', $2, $3, $3)`, c.name, c.stored, old); err != nil {
			t.Fatal(err)
		}
	}
	read := func(id string) (repo string, updated time.Time) {
		t.Helper()
		if err := db.QueryRowContext(ctx, `SELECT gitops_repo, updated_at FROM clusters WHERE team_id = 't' AND id = $1`, id).
			Scan(&repo, &updated); err != nil {
			t.Fatal(err)
		}
		return repo, updated
	}

	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, updated := read(c.name)
			if got != c.want {
				t.Errorf("after the migration: %q, want %q", got, c.want)
			}
			// The SQL applies service.StripRepoCredentials's rule; the two agree.
			if s := service.StripRepoCredentials(c.stored); s != c.want {
				t.Errorf("service.StripRepoCredentials = %q, the migration wrote %q", s, got)
			}
			if problem := service.RepoURLCredentialProblem(got); problem != "" {
				t.Errorf("the cleaned URL %q is still refused: %s", got, problem)
			}
			if changed := c.stored != c.want; changed == updated.Equal(old) {
				t.Errorf("changed %v but updated_at %v", changed, updated)
			}
		})
	}

	// Down keeps the cleaned values (the credentials are gone on purpose);
	// up again changes nothing.
	if _, err := p.DownTo(ctx, previousVersion); err != nil {
		t.Fatalf("down: %v", err)
	}
	if v, err := p.GetDBVersion(ctx); err != nil || v != previousVersion {
		t.Fatalf("version after down = %d, %v", v, err)
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got, _ := read(c.name); got != c.want {
			t.Errorf("%s after down and up: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPlanPayloadRepoURLCredentialsCleaned(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.MustCreateDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := mustMigrateTo(t, db, previousVersion)

	// stored and want are JSON payloads; want is "" when the payload must
	// stay exactly as stored.
	cases := []struct{ name, stored, want string }{
		{"SeveralApplications",
			`{"tool": "kubectl", "argocd": {"level": "full", "summary": "s", "checked_at": "2026-01-02T03:04:05Z",
				"applications": [
					{"name": "a", "namespace": "argocd", "repo_url": "https://ghp_abc123@github.com/o/r", "path": "tok@x", "paths": ["p", 1], "auto_sync": true},
					{"name": "b", "repo_url": "ghp_x@github.com:o/r.git", "target_revision": "main"},
					{"name": "c", "repo_url": "https://github.com/o/clean"},
					7, "https://tok@github.com/o/r", null, [{"repo_url": "https://tok@github.com/o/r"}],
					{"name": "d", "repo_url": 42},
					{"name": "e", "repo_url": {"url": "https://tok@github.com/o/r"}},
					{"name": "f"},
					{"name": "g", "repo_url": " https://u:p@host.example.com/x\t", "weight": 1.50}],
				"resources": [{"kind": "Deployment", "name": "web", "repo_url": "https://tok@github.com/o/r"}]},
				"nested": {"argocd": {"applications": [{"repo_url": "https://tok@github.com/o/r"}]}}, "note": "é\n"}`,
			`{"tool": "kubectl", "argocd": {"level": "full", "summary": "s", "checked_at": "2026-01-02T03:04:05Z",
				"applications": [
					{"name": "a", "namespace": "argocd", "repo_url": "https://github.com/o/r", "path": "tok@x", "paths": ["p", 1], "auto_sync": true},
					{"name": "b", "repo_url": "git@github.com:o/r.git", "target_revision": "main"},
					{"name": "c", "repo_url": "https://github.com/o/clean"},
					7, "https://tok@github.com/o/r", null, [{"repo_url": "https://tok@github.com/o/r"}],
					{"name": "d", "repo_url": 42},
					{"name": "e", "repo_url": {"url": "https://tok@github.com/o/r"}},
					{"name": "f"},
					{"name": "g", "repo_url": "https://host.example.com/x", "weight": 1.50}],
				"resources": [{"kind": "Deployment", "name": "web", "repo_url": "https://tok@github.com/o/r"}]},
				"nested": {"argocd": {"applications": [{"repo_url": "https://tok@github.com/o/r"}]}}, "note": "é\n"}`},
		{"SSHPasswords",
			`{"argocd": {"applications": [{"name": "a", "repo_url": "ssh://git:pw@github.com:22/o/r.git"}, {"name": "b", "repo_url": "user:pass@github.com:o/r"}]}}`,
			`{"argocd": {"applications": [{"name": "a", "repo_url": "ssh://git@github.com:22/o/r.git"}, {"name": "b", "repo_url": "user@github.com:o/r"}]}}`},
		{"CleanURLs", `{"argocd": {"applications": [{"name": "a", "repo_url": "git@github.com:o/r.git"},
			{"name": "b", "repo_url": " https://github.com/o/r "}, {"name": "c", "repo_url": "https://github.com/o/r@v1"},
			{"name": "d", "repo_url": "deploy@git.example.com:o/r"}, {"name": "e", "repo_url": ""}]}}`, ""},
		{"ArgoCDString", `{"argocd": "https://tok@github.com/o/r"}`, ""},
		{"ArgoCDNull", `{"argocd": null}`, ""},
		{"ArgoCDArray", `{"argocd": [{"applications": [{"repo_url": "https://tok@github.com/o/r"}]}]}`, ""},
		{"ApplicationsObject", `{"argocd": {"applications": {"a": {"repo_url": "https://tok@github.com/o/r"}, "repo_url": "https://tok@github.com/o/r"}}}`, ""},
		{"ApplicationsString", `{"argocd": {"applications": "https://tok@github.com/o/r"}}`, ""},
		{"ApplicationsEmpty", `{"argocd": {"applications": []}}`, ""},
		{"ElementNumbers", `{"argocd": {"applications": [1, 2.50, true, "x"]}}`, ""},
		{"RepoURLNumber", `{"argocd": {"applications": [{"name": "a", "repo_url": 5}, {"name": "b", "repo_url": null}]}}`, ""},
		{"NoArgoCD", `{"command": "kubectl apply", "repo_url": "https://tok@github.com/o/r"}`, ""},
		{"PayloadArray", `[{"argocd": {"applications": [{"repo_url": "https://tok@github.com/o/r"}]}}]`, ""},
		{"PayloadString", `"https://tok@github.com/o/r"`, ""},
		{"PayloadNull", `null`, ""},
	}
	old := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := db.ExecContext(ctx, `INSERT INTO teams (id, external_id, created_at) VALUES ('t', 't', $1)`, old); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if _, err := db.ExecContext(ctx, `INSERT INTO plans (team_id, id, cluster_id, conversation_id, visibility, tool, command,
				payload, status, created_by, created_at, updated_at, request_hash)
			VALUES ('t', md5($1)::uuid, 'c', 'conv', 'shared', 'kubectl', $1, $2::jsonb, 'pending', 'u', $3, $3, 'h')`,
			c.name, c.stored, old); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// xmin names the transaction that last wrote a row: it moves only for
	// rows the migration rewrites.
	versions := func() map[string]string {
		t.Helper()
		rows, err := db.QueryContext(ctx, `SELECT command, xmin::text FROM plans`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[string]string{}
		for rows.Next() {
			var name, xmin string
			if err := rows.Scan(&name, &xmin); err != nil {
				t.Fatal(err)
			}
			m[name] = xmin
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := func(t *testing.T, name, want string) {
		t.Helper()
		var equal, sameText bool
		var updated time.Time
		if err := db.QueryRowContext(ctx, `SELECT payload = $2::jsonb, payload::text = $2::jsonb::text, updated_at
			FROM plans WHERE command = $1`, name, want).Scan(&equal, &sameText, &updated); err != nil {
			t.Fatal(err)
		}
		if !equal || !sameText {
			t.Errorf("payload after the migration differs from %s (jsonb equal %v, text equal %v)", want, equal, sameText)
		}
		if !updated.Equal(old) {
			t.Errorf("updated_at moved to %v", updated)
		}
	}

	before := versions()
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	after := versions()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == "" {
				want = c.stored
			}
			check(t, c.name, want)
			if rewritten := after[c.name] != before[c.name]; rewritten != (c.want != "") {
				t.Errorf("row rewritten %v, want %v", rewritten, c.want != "")
			}
		})
	}

	// The cleaned repo_urls are what service.StripRepoCredentials gives and
	// pass RepoURLCredentialProblem.
	rows, err := db.QueryContext(ctx, `SELECT e ->> 'repo_url' FROM plans,
		jsonb_array_elements(payload -> 'argocd' -> 'applications') AS e
		WHERE command IN ('SeveralApplications', 'SSHPasswords') AND jsonb_typeof(e -> 'repo_url') = 'string'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		if problem := service.RepoURLCredentialProblem(u); problem != "" {
			t.Errorf("a cleaned repo_url is still refused: %s", problem)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"https://ghp_abc123@github.com/o/r", "ghp_x@github.com:o/r.git", " https://u:p@host.example.com/x\t",
		"ssh://git:pw@github.com:22/o/r.git", "user:pass@github.com:o/r"} {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM plans, jsonb_array_elements(payload -> 'argocd' -> 'applications') AS e
			WHERE jsonb_typeof(payload -> 'argocd' -> 'applications') = 'array' AND e ->> 'repo_url' = $1`,
			service.StripRepoCredentials(s)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("no application holds service.StripRepoCredentials of a stored URL (%d stored characters)", len(s))
		}
	}

	// Down keeps the cleaned payloads; up again rewrites nothing.
	if _, err := p.DownTo(ctx, previousVersion); err != nil {
		t.Fatalf("down: %v", err)
	}
	if err := migrations.Up(ctx, db); err != nil {
		t.Fatal(err)
	}
	again := versions()
	for _, c := range cases {
		if again[c.name] != after[c.name] {
			t.Errorf("%s rewritten by a second up", c.name)
		}
	}
}

// TestPendingSubscriptionsOnePerTopic: migration 9 keeps the newest
// pending subscription of each topic; going down removes the unverified
// ones, which the earlier version would confirm without verifying.
func TestPendingSubscriptionsOnePerTopic(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.MustCreateDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := mustMigrateTo(t, db, 8)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, row := range []struct{ id, topic string }{{"m1", "a"}, {"m2", "a"}, {"m3", "b"}} {
		if _, err := db.ExecContext(ctx, `INSERT INTO sns_pending_subscriptions
				(message_id, topic_arn, subscribe_url, token, received_at, expires_at) VALUES ($1, $2, 'u', 't', $3, $4)`,
			row.id, row.topic, at.Add(time.Duration(i)*time.Minute), at.Add(72*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []string {
		t.Helper()
		rows, err := db.QueryContext(ctx, `SELECT message_id FROM sns_pending_subscriptions ORDER BY message_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatalf("migrate to 9: %v", err)
	}
	if got := ids(); strings.Join(got, ",") != "m2,m3" {
		t.Errorf("after the migration: %v, want the newest of each topic (m2, m3)", got)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO sns_pending_subscriptions
			(message_id, topic_arn, subscribe_url, token, envelope, received_at, expires_at) VALUES ('m4', 'c', 'u', 't', '{}', $1, $2)`,
		at, at.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 8); err != nil {
		t.Fatalf("down: %v", err)
	}
	if got := ids(); strings.Join(got, ",") != "m2,m3" {
		t.Errorf("after down: %v, want the verified ones only (m2, m3)", got)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
