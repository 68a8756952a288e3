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

// rekey is the `secrets rekey` command: service.Rekey with the first key
// of KUKIE_SECRET_KEYS as the primary, and its report printed. A record
// that does not open with the configured keys makes the command fail after
// the others are done.
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
	rep, err := service.Rekey(ctx, db, keys)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "secrets rekey: key %s; %d re-encrypted, %d already with it, %d changed meanwhile (left as they are), %d failed\n",
		keys.Primary(), rep.Rekeyed, rep.Current, rep.Changed, rep.Failed)
	if rep.Failed > 0 {
		return fmt.Errorf("secrets rekey: %d record(s) do not open with KUKIE_SECRET_KEYS: %w", rep.Failed, errors.Join(rep.Failures...))
	}
	return nil
}
