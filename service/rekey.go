package service

import (
	"context"
	"fmt"
)

// RekeyStore lists and replaces the stored sealed secrets (store.DB).
type RekeyStore interface {
	ListSealedSecrets(ctx context.Context) ([]SealedRepoAuth, error)
	// ReplaceSealed replaces old with next only if the record is still old;
	// false when it changed meanwhile.
	ReplaceSealed(ctx context.Context, old, next SealedRepoAuth) (bool, error)
}

// RekeyReport counts what Rekey did; Failures name each record that does
// not open with the keys (team and cluster, never a secret).
type RekeyReport struct {
	Rekeyed, Current, Changed, Failed int
	Failures                          []error
}

// Rekey re-seals every stored secret still sealed with a key other than
// keys' primary, so older keys can be removed. Each record is replaced on
// its own and only if it did not change meanwhile (an admin's new
// credentials are already sealed with the primary key); running it again
// changes nothing. A record that does not open with the keys is counted in
// the report and the others are still done; a store failure stops at once
// and is the error.
func Rekey(ctx context.Context, store RekeyStore, keys Sealer) (RekeyReport, error) {
	var rep RekeyReport
	records, err := store.ListSealedSecrets(ctx)
	if err != nil {
		return rep, err
	}
	for _, r := range records {
		next, needed, err := RekeyRepoAuth(keys, r)
		if err != nil {
			rep.Failed++
			rep.Failures = append(rep.Failures, fmt.Errorf("team %s cluster %s (key %q): %s", r.TeamID, r.ClusterID, r.KeyID, ErrorMessage(err)))
			continue
		}
		if !needed {
			rep.Current++
			continue
		}
		ok, err := store.ReplaceSealed(ctx, r, next)
		if err != nil {
			return rep, err
		}
		if ok {
			rep.Rekeyed++
		} else {
			rep.Changed++
		}
	}
	return rep, nil
}
