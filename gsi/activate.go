package gsi

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/routestate"
	"github.com/shardgate/shardgate/sqlerr"
)

// activate records the index as active in a routing revision, with phase
// active in the same transaction, and writes the state into the file (or
// logs the edit to make, if it cannot).
func (b *Backfill) activate(ctx context.Context) error {
	name := b.si.Name
	for attempt := 0; ; attempt++ {
		cur, err := routestate.Load(ctx, b.main)
		if err != nil {
			return err
		}
		rev, err := routestate.CommitWith(ctx, b.main, cur.Rev, b.opts.Author, "gsi backfill of "+name+" verified",
			func(st *routestate.State) error {
				if st.GSI == nil {
					st.GSI = map[string]string{}
				}
				st.GSI[name] = routestate.GSIActive
				return nil
			},
			func(tx pgx.Tx, _ routestate.Revision) error {
				_, err := tx.Exec(ctx, `UPDATE shardgate.gsi_backfills SET phase = $2, updated_at = now() WHERE index_name = $1`, name, PhaseActive)
				return err
			})
		var se interface{ SQLState() string }
		if errors.As(err, &se) && se.SQLState() == sqlerr.SerializationFailure && attempt < 10 {
			continue
		}
		if err != nil {
			return err
		}
		b.opts.Logf("%s: active in routing revision %d; the proxies follow it", name, rev.Rev)
		if b.opts.File == "" {
			return nil
		}
		edited, err := routestate.WriteBack(b.opts.File, rev.State)
		if err != nil {
			b.opts.Logf("%s: could not write %s (%v); the file to have:\n%s", name, b.opts.File, err, edited)
			return nil
		}
		b.opts.Logf("%s: state active written into %s", name, b.opts.File)
		return nil
	}
}
