package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/kukie/gitops-server/internal/keyring"
	"github.com/kukie/gitops-server/service"
	"github.com/kukie/gitops-server/store"
)

var _ service.Sealer = (*keyring.Keyring)(nil)

// rekey re-seals every stored secret still sealed with a key other than
// the first of KUKIE_SECRET_KEYS, so older keys can be removed from the
// list. Each record is replaced on its own and only if it did not change
// meanwhile (an admin's new credentials are already sealed with the first
// key); running it again changes nothing. A record that does not open
// with the configured keys is counted and named (team and cluster, never
// a secret), and makes the command fail after the others are done.
func rekey(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := loadConfig(getenv, false)
	if err != nil {
		return err
	}
	if cfg.SecretKeys == nil {
		return &configError{"KUKIE_SECRET_KEYS", "is required for secrets rekey (the new key first, then every key still in use)"}
	}
	keys := cfg.SecretKeys
	db, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	records, err := db.ListSealedSecrets(ctx)
	if err != nil {
		return err
	}
	var rekeyed, current, changed, failed int
	var errs []error
	for _, r := range records {
		next, needed, err := service.RekeyRepoAuth(keys, r)
		if err != nil {
			failed++
			errs = append(errs, fmt.Errorf("team %s cluster %s (key %q): %s", r.TeamID, r.ClusterID, r.KeyID, service.ErrorMessage(err)))
			continue
		}
		if !needed {
			current++
			continue
		}
		ok, err := db.ReplaceSealed(ctx, r, next)
		if err != nil {
			return err
		}
		if ok {
			rekeyed++
		} else {
			changed++
		}
	}
	fmt.Fprintf(stdout, "secrets rekey: key %s; %d re-encrypted, %d already with it, %d changed meanwhile (left as they are), %d failed\n",
		keys.Primary(), rekeyed, current, changed, failed)
	if len(errs) > 0 {
		return fmt.Errorf("secrets rekey: %d record(s) do not open with KUKIE_SECRET_KEYS: %w", failed, errors.Join(errs...))
	}
	return nil
}
