package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/internal/testkit/pgtest"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

// secretKey is the KUKIE_SECRET_KEYS entry of key id, a 32-byte key made
// of id's first byte.
func secretKey(id string) string {
	return id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(id[:1]), keyring.KeySize))
}

func mustKeyring(tb testing.TB, ids ...string) *keyring.Keyring {
	tb.Helper()
	var entries []string
	for _, id := range ids {
		entries = append(entries, secretKey(id))
	}
	k, err := keyring.ParseKeys(strings.Join(entries, ","))
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// runRekey runs `kukie-server secrets rekey` against dbURL with keys as
// KUKIE_SECRET_KEYS and returns its output.
func runRekey(t *testing.T, dbURL, keys string) (string, error) {
	t.Helper()
	env := map[string]string{"KUKIE_DATABASE_URL": dbURL, "KUKIE_SECRET_KEYS": keys}
	var out strings.Builder
	err := run(t.Context(), []string{"kukie-server", "secrets", "rekey"}, func(k string) string { return env[k] }, &out, &out)
	return out.String(), err
}

func TestSecretsRekey(t *testing.T) {
	db, dbURL := pgtest.MustOpenDB(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	a := mustKeyring(t, "a")
	tokens := map[string]string{}
	for _, team := range []string{"t1", "t2"} {
		for _, id := range []string{"c1", "c2", "c3"} {
			c := service.Cluster{TeamID: team, ID: id, Name: id, Kind: service.ClusterStatic,
				AccessLevel: service.AccessFull, Namespaces: []string{}, ArgoCDNamespace: "argocd"}
			if _, err := db.UpsertCluster(ctx, c, now); err != nil {
				t.Fatal(err)
			}
			auth := service.RepoAuth{Type: service.RepoAuthHTTPSToken, Token: "ghp_" + team + id + "_0123456789abcdef"}
			if id == "c3" {
				auth = service.RepoAuth{Type: service.RepoAuthNone}
			}
			tokens[team+"/"+id] = auth.Token
			s, err := service.SealRepoAuth(a, team, id, auth)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.PutRepoAuth(ctx, team, id, s, now); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("ErrNoKeys", func(t *testing.T) {
		_, err := runRekey(t, dbURL, "")
		if err == nil || !strings.Contains(err.Error(), "KUKIE_SECRET_KEYS") {
			t.Errorf("rekey without keys: %v, want an error naming KUKIE_SECRET_KEYS", err)
		}
	})

	out, err := runRekey(t, dbURL, secretKey("b")+","+secretKey("a"))
	if err != nil {
		t.Fatalf("rekey: %v\n%s", err, out)
	}
	if !strings.Contains(out, "key b; 4 re-encrypted, 0 already with it, 0 changed meanwhile (left as they are), 0 failed") {
		t.Errorf("output %q", out)
	}
	assertSealedWith(t, db, mustKeyring(t, "b"), "b", tokens)

	// Again: nothing left to do.
	out, err = runRekey(t, dbURL, secretKey("b")+","+secretKey("a"))
	if err != nil || !strings.Contains(out, "0 re-encrypted, 4 already with it") {
		t.Errorf("second rekey: %v %q", err, out)
	}
	assertSealedWith(t, db, mustKeyring(t, "b"), "b", tokens)

	// A record under a key that is not listed is named and fails the run;
	// the others are still rekeyed.
	lost, _ := service.SealRepoAuth(mustKeyring(t, "z"), "t2", "c2", service.RepoAuth{Type: "https_token", Token: "ghp_lost_0123456789abcdef"})
	if _, err := db.PutRepoAuth(ctx, "t2", "c2", lost, now); err != nil {
		t.Fatal(err)
	}
	out, err = runRekey(t, dbURL, secretKey("c")+","+secretKey("b"))
	if err == nil || !strings.Contains(err.Error(), "team t2 cluster c2") || strings.Contains(err.Error()+out, "ghp_") {
		t.Errorf("rekey with an unopenable record: %v %q", err, out)
	}
	if !strings.Contains(out, "3 re-encrypted, 0 already with it, 0 changed meanwhile (left as they are), 1 failed") {
		t.Errorf("output %q", out)
	}
	delete(tokens, "t2/c2")
	if err := db.DeleteRepoAuth(ctx, "t2", "c2"); err != nil {
		t.Fatal(err)
	}
	assertSealedWith(t, db, mustKeyring(t, "c"), "c", tokens)
}

// assertSealedWith checks that every stored secret is sealed with keyID and
// opens to its token with k alone.
func assertSealedWith(t *testing.T, db *store.DB, k *keyring.Keyring, keyID string, tokens map[string]string) {
	t.Helper()
	ctx := context.Background()
	for key, token := range tokens {
		team, id, _ := strings.Cut(key, "/")
		s, err := db.GetRepoAuth(ctx, team, id)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" && (s.KeyID != keyID || k.KeyID(s.TokenSealed) != keyID) {
			t.Errorf("%s sealed with %q (token %q), want %q", key, s.KeyID, k.KeyID(s.TokenSealed), keyID)
		}
		got, err := service.OpenRepoAuth(k, s)
		if err != nil || got.Token != token {
			t.Errorf("%s opens to %q, %v; want %q", key, got.Token, err, token)
		}
	}
}

func TestConfigSecretKeys(t *testing.T) {
	base := map[string]string{
		"KUKIE_DATABASE_URL":      "postgres://postgres@127.0.0.1:5432/kukie",
		"KUKIE_AUTH_HS256_SECRET": strings.Repeat("s", 32),
	}
	getenv := func(keys string) func(string) string {
		return func(k string) string {
			if k == "KUKIE_SECRET_KEYS" {
				return keys
			}
			return base[k]
		}
	}
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 16))
	for _, bad := range []string{"nokeyid", "a:" + short, secretKey("a") + "," + secretKey("a"), "bad id:" + short, secretKey("a") + ","} {
		_, err := loadConfig(getenv(bad), true)
		if err == nil {
			t.Errorf("KUKIE_SECRET_KEYS=%q accepted", bad)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "invalid configuration: KUKIE_SECRET_KEYS ") || strings.Contains(msg, "\n") {
			t.Errorf("error %q should be one line naming KUKIE_SECRET_KEYS", msg)
		}
		if strings.Contains(msg, short) || strings.Contains(msg, secretKey("a")[2:]) {
			t.Errorf("error %q holds key material", msg)
		}
	}

	cfg, err := loadConfig(getenv(""), true)
	if err != nil || cfg.SecretKeys != nil {
		t.Errorf("unset: %v, %v", cfg.SecretKeys, err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", cfg)
	if !strings.Contains(logged.String(), `"secret_keys":""`) {
		t.Errorf("unset keys logged as %s", logged.String())
	}

	keys := secretKey("new") + ", " + secretKey("old")
	cfg, err = loadConfig(getenv(keys), true)
	if err != nil || cfg.SecretKeys.Primary() != "new" {
		t.Fatalf("valid keys: %v, %v", cfg.SecretKeys, err)
	}
	logged.Reset()
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", cfg)
	if !strings.Contains(logged.String(), `"secret_keys":"[set]"`) || strings.Contains(logged.String(), secretKey("new")[4:]) {
		t.Errorf("keys logged as %s", logged.String())
	}
}

func TestSecretsUsage(t *testing.T) {
	for _, args := range [][]string{{"x", "secrets"}, {"x", "secrets", "rotate"}, {"x", "secrets", "rekey", "now"}} {
		if err := run(t.Context(), args, func(string) string { return "" }, &strings.Builder{}, &strings.Builder{}); err != errUsage {
			t.Errorf("%v: %v, want usage", args, err)
		}
	}
}
