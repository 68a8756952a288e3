package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/kukie/gitops-server/service"
)

// pendingSubscriptionsLock serialises saves of pending subscriptions, so
// that the bound on their total holds exactly.
const pendingSubscriptionsLock = "kukie.sns_pending_subscriptions"

// SavePendingSubscription keeps p until ReceivedAt plus
// service.PendingSubscriptionTTL (p.ExpiresAt is not read) as its topic's
// only pending subscription: a newer one of the topic replaces it, and
// saving the same MessageID again does nothing (SNS's retry). Then it
// deletes the expired ones and all but the newest max (oldest received
// first).
func (db *DB) SavePendingSubscription(ctx context.Context, p service.PendingSubscription, max int) error {
	envelope := ""
	if p.Envelope != nil {
		b, err := json.Marshal(p.Envelope)
		if err != nil {
			return err
		}
		envelope = string(b)
	}
	if max < 1 {
		max = 1
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, pendingSubscriptionsLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sns_pending_subscriptions AS p (topic_arn, message_id, subscribe_url, token,
				envelope, received_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (topic_arn) DO UPDATE SET message_id = EXCLUDED.message_id, subscribe_url = EXCLUDED.subscribe_url,
				token = EXCLUDED.token, envelope = EXCLUDED.envelope, received_at = EXCLUDED.received_at,
				expires_at = EXCLUDED.expires_at
			WHERE p.message_id <> EXCLUDED.message_id`,
			p.TopicARN, p.MessageID, p.SubscribeURL, p.Token, envelope, p.ReceivedAt,
			p.ReceivedAt.Add(service.PendingSubscriptionTTL)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM sns_pending_subscriptions WHERE expires_at <= $1
			OR topic_arn IN (SELECT topic_arn FROM sns_pending_subscriptions
				ORDER BY received_at DESC, message_id DESC OFFSET $2)`, p.ReceivedAt, max)
		return err
	})
	return mapError(err)
}

// DeleteExpiredPendingSubscriptions deletes the pending subscriptions
// expired at now and returns how many.
func (db *DB) DeleteExpiredPendingSubscriptions(ctx context.Context, now time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM sns_pending_subscriptions WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, mapError(err)
	}
	return tag.RowsAffected(), nil
}

// TakePendingSubscriptions returns and deletes the topic's pending
// subscriptions unexpired at now, oldest first, and deletes every expired
// one. Concurrent takes of one topic return each subscription once.
func (db *DB) TakePendingSubscriptions(ctx context.Context, topicARN string,
	now time.Time) ([]service.PendingSubscription, error) {
	return db.TakePendingSubscriptionsTx(ctx, topicARN, now, nil)
}

// TakePendingSubscriptionsTx is TakePendingSubscriptions that also runs
// inTx (when not nil) with what it took, in the same transaction before it
// commits, so that the confirmation jobs are inserted (River's InsertTx)
// exactly when the subscriptions leave the table: an error from inTx puts
// them back.
func (db *DB) TakePendingSubscriptionsTx(ctx context.Context, topicARN string, now time.Time,
	inTx func(tx pgx.Tx, taken []service.PendingSubscription) error) ([]service.PendingSubscription, error) {
	var out []service.PendingSubscription
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `WITH expired AS (
				DELETE FROM sns_pending_subscriptions WHERE expires_at <= $2
			), taken AS (
				DELETE FROM sns_pending_subscriptions WHERE topic_arn = $1 AND expires_at > $2
				RETURNING topic_arn, message_id, subscribe_url, token, envelope, received_at, expires_at
			)
			SELECT topic_arn, message_id, subscribe_url, token, envelope, received_at, expires_at FROM taken
			ORDER BY received_at, message_id`, topicARN, now)
		var err error
		out, err = pgx.CollectRows(rows, scanPendingSubscription)
		if err != nil {
			return err
		}
		if inTx != nil {
			return inTx(tx, out)
		}
		return nil
	})
	if err != nil {
		return nil, mapError(err)
	}
	if out == nil {
		out = []service.PendingSubscription{}
	}
	return out, nil
}

func scanPendingSubscription(row pgx.CollectableRow) (service.PendingSubscription, error) {
	var p service.PendingSubscription
	var envelope string
	if err := row.Scan(&p.TopicARN, &p.MessageID, &p.SubscribeURL, &p.Token, &envelope, &p.ReceivedAt, &p.ExpiresAt); err != nil {
		return p, err
	}
	if envelope != "" {
		p.Envelope = new(service.SNSMessage)
		if err := json.Unmarshal([]byte(envelope), p.Envelope); err != nil {
			return p, fmt.Errorf("pending subscription %s: envelope: %w", p.MessageID, err)
		}
	}
	return p, nil
}
