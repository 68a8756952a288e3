package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"
)

// Team is a tenant. Its ExternalID is what customers put into the trust
// policy of the IAM role Kukie assumes (AWS's confused-deputy guard): the
// server generates it, the client never chooses it.
type Team struct {
	ID         string    `json:"id"`
	ExternalID string    `json:"external_id"`
	CreatedAt  time.Time `json:"created_at"`
}

// TeamStore persists teams.
type TeamStore interface {
	// EnsureTeam returns the team with id, creating it with newExternalID
	// when it does not exist yet. An existing team keeps its ExternalID.
	EnsureTeam(ctx context.Context, id string, newExternalID string, now time.Time) (Team, error)
}

// NewExternalID returns a fresh ExternalId: 48 lower-case hex characters
// (192 bits from crypto/rand), inside both our [A-Za-z0-9-] contract and
// STS's ExternalId alphabet.
func NewExternalID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (Go ≥ 1.24).
	return hex.EncodeToString(b)
}

// Teams is the team use case.
type Teams struct {
	Store TeamStore
	Now   func() time.Time
}

// Current returns the caller's team, creating it on first use.
func (t *Teams) Current(ctx context.Context, p Principal) (Team, error) {
	return t.Store.EnsureTeam(ctx, p.TeamID, NewExternalID(), t.Now().UTC().Truncate(time.Microsecond))
}
