package workflows

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cancel stops a workflow for good: it drops the slot and publication of
// every source (ending a stream that still reads the slot), drops the
// target tables the workflow created and empties the others, and records
// phase cancelled.
func Cancel(ctx context.Context, store *Store, id int64) error {
	unlock, err := store.lockSwitchWaiting(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	if err := recoverSwitch(ctx, store, id); err != nil {
		return err
	}
	w, err := store.Get(ctx, id)
	if err != nil {
		return err
	}
	if w.Traffic == TrafficTarget {
		return errSwitched(id)
	}
	p, err := NewPlan(w.Spec)
	if err != nil {
		return err
	}
	// After a reverse: the targets' stream back (already dropped when the
	// reverse was decided) and their write-refusing triggers.
	for _, s := range p.reversed().Sources {
		if err := dropSlot(ctx, s, slotName(id, s.Cluster), pubName(id)); err != nil {
			return err
		}
	}
	created, err := store.createdOn(ctx, id)
	if err != nil {
		return err
	}
	for _, s := range p.Sources {
		if err := dropSlot(ctx, s, slotName(id, s.Cluster), pubName(id)); err != nil {
			return err
		}
	}
	for _, tc := range p.Targets {
		conn, err := pgx.Connect(ctx, tc.DSN)
		if err != nil {
			return fmt.Errorf("target %s: %w", tc.Name, err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, triggersSQL(id, p.Tables, false)); err != nil {
				return err
			}
			for _, t := range p.Tables {
				sql := "TRUNCATE " + qname(t.Name)
				if slices.Contains(created[t.Name.String()], tc.Name) {
					sql = "DROP TABLE IF EXISTS " + qname(t.Name)
				}
				if _, err := tx.Exec(ctx, sql); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, targetSchema); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM shardgate.workflow_target WHERE workflow_id = $1`, id); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM shardgate.workflow_target_cycles WHERE workflow_id = $1`, id)
			return err
		})
		conn.Close(ctx)
		if err != nil {
			return fmt.Errorf("target %s: %w", tc.Name, err)
		}
	}
	return store.SetPhase(ctx, id, PhaseCancelled, "")
}

func dropSlot(ctx context.Context, s *Source, slot, pub string) error {
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		return fmt.Errorf("source %s: %w", s.Cluster, err)
	}
	defer conn.Close(ctx)
	for attempt := 0; ; attempt++ {
		var exists bool
		var pid *int32
		err := conn.QueryRow(ctx, `SELECT true, active_pid FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&exists, &pid)
		if err == pgx.ErrNoRows {
			break
		}
		if err != nil {
			return err
		}
		if attempt > 100 {
			return fmt.Errorf("source %s: slot %s stays in use", s.Cluster, slot)
		}
		if pid != nil {
			if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend($1)`, *pid); err != nil {
				return err
			}
		} else if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err == nil || attempt > 50 {
			if err != nil {
				return fmt.Errorf("source %s: drop slot %s: %w", s.Cluster, slot, err)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+ident(pub)); err != nil {
		return fmt.Errorf("source %s: %w", s.Cluster, err)
	}
	return nil
}
