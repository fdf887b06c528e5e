package routestate

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CommitOn is CommitWith for a writer that holds the revision it starts
// from (base, as Load or an earlier Commit returned it): the state is
// mutated from base's without reading main, and the revision, the
// statements also queues and the NOTIFY go to main in one round trip (a
// pgx batch: one implicit transaction, all or nothing). A switch writes
// its buffer request and its decision this way, while writes are held.
//
// Revisions are numbered without gaps, so base is still the latest
// exactly when revision base.Rev+1 does not exist: if another writer
// wrote it meanwhile, the insert fails on the primary key and CommitOn
// returns ErrConflict (40001), nothing written.
//
// The statements are prepared on conn's first use of them (a round trip
// more); Prepare does it ahead.
func CommitOn(ctx context.Context, conn *pgx.Conn, base Revision, author, reason string, mutate func(*State) error,
	also func(b *pgx.Batch, rev Revision)) (Revision, error) {
	st := base.State.clone()
	if err := mutate(&st); err != nil {
		return Revision{}, err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return Revision{}, err
	}
	out := Revision{Rev: base.Rev + 1, Author: author, Reason: reason}
	// Read back as stored, so the caller holds what others load.
	if err := json.Unmarshal(data, &out.State); err != nil {
		return Revision{}, err
	}
	b := &pgx.Batch{}
	b.Queue(insertRevisionSQL, out.Rev, author, reason, data).QueryRow(func(r pgx.Row) error { return r.Scan(&out.CreatedAt) })
	if also != nil {
		also(b, out)
	}
	b.Queue(notifySQL, Channel, out.Rev)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "routing_revisions_pkey" {
			return Revision{}, ErrConflict.WithDetail("Expected revision %d to be the latest; revision %d exists.", base.Rev, out.Rev)
		}
		return Revision{}, err
	}
	return out, nil
}

const insertRevisionSQL = `INSERT INTO shardgate.routing_revisions (rev, author, reason, state) VALUES ($1, $2, $3, $4) RETURNING created_at`

// Prepare prepares on conn the statements CommitOn sends (and sqls, the
// caller's own), so that a CommitOn while writes are held is one round
// trip.
func Prepare(ctx context.Context, conn *pgx.Conn, sqls ...string) error {
	for _, sql := range append([]string{insertRevisionSQL, notifySQL}, sqls...) {
		if _, err := conn.Prepare(ctx, sql, sql); err != nil {
			return err
		}
	}
	return nil
}
