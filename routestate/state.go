package routestate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shardgate/shardgate/internal/schemalock"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
)

// Channel is the channel Commit notifies with the new revision number.
const Channel = "shardgate_routing"

// Schema creates the tables in main's shardgate schema (idempotent).
const Schema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.routing_revisions (
	rev bigint PRIMARY KEY,
	created_at timestamptz NOT NULL DEFAULT now(),
	author text NOT NULL DEFAULT '',
	reason text NOT NULL DEFAULT '',
	state jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS shardgate.proxies (
	id text PRIMARY KEY,
	addr text NOT NULL DEFAULT '',
	pid int NOT NULL DEFAULT 0,
	started_at timestamptz NOT NULL DEFAULT now(),
	heartbeat_at timestamptz NOT NULL DEFAULT now(),
	revision bigint NOT NULL DEFAULT 0,
	acked jsonb NOT NULL DEFAULT '{}'
);
ALTER TABLE shardgate.proxies ADD COLUMN IF NOT EXISTS held jsonb NOT NULL DEFAULT '{}'`

// GSI states a revision may set (topology.StateBackfilling, StateActive).
const (
	GSIBackfilling = "backfilling"
	GSIActive      = "active"
)

// State is the routing decided in main, over the file's.
type State struct {
	// GSI maps a global secondary index's name to its state, overriding
	// the file's: "backfilling" or "active".
	GSI map[string]string `json:"gsi,omitempty"`
	// Switched maps a workflow id (decimal) to the traffic it switched to
	// its target layout.
	Switched map[string]*Switch `json:"switched,omitempty"`
	// Buffer, when set, asks every proxy to hold new statements on some
	// tables while a switch flips the routing (see Buffer).
	Buffer *BufferRequest `json:"buffer,omitempty"`
	// Directory maps a lookup group's name to its directory: key (its
	// text) to where it goes (directory.go).
	Directory map[string]map[string]*Placed `json:"directory,omitempty"`
}

// Switch is the traffic of one workflow routed to its target layout.
type Switch struct {
	Workflow int64 `json:"workflow"`
	// Kind is "reshard" (Group gets the target's shards and clusters) or
	// "movetables" (Tables move from main into Group).
	Kind   string   `json:"kind"`
	Group  string   `json:"group"`
	Tables []string `json:"tables"`
	// Reads and Writes say which statements route to the target layout.
	Reads  bool `json:"reads"`
	Writes bool `json:"writes"`
	// To is the workflow's target topology (YAML text): where the group's
	// shards, key and clusters are taken from.
	To string `json:"to"`
}

// BufferRequest asks every live proxy to hold statements on Tables until
// the request is withdrawn (or Deadline passes: then they run on the
// routing in force). Each proxy acknowledges in shardgate.proxies.acked.
type BufferRequest struct {
	ID       string    `json:"id"`
	Tables   []string  `json:"tables"`
	Deadline time.Time `json:"deadline"`
	// Clusters are those the tables move to: a proxy opens connections
	// to them when it arms (Gate.OnArm), before the writes are released
	// onto them.
	Clusters []string `json:"clusters,omitempty"`
}

// Revision is one stored routing revision; Rev 0 is "none": the file
// alone.
type Revision struct {
	Rev       int64     `json:"rev"`
	CreatedAt time.Time `json:"created_at"`
	Author    string    `json:"author"`
	Reason    string    `json:"reason"`
	State     State     `json:"state"`
}

// Origin names a revision for people: "revision 3 by alice (reason)".
func (r Revision) Origin() string {
	if r.Rev == 0 {
		return "file"
	}
	s := fmt.Sprintf("revision %d", r.Rev)
	if r.Author != "" {
		s += " by " + r.Author
	}
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

// EnsureSchema creates the tables if need be.
func EnsureSchema(ctx context.Context, conn *pgx.Conn) error {
	// Looked up first: the DDL takes an exclusive lock on the proxies'
	// table, which would queue behind (and hold up) their heartbeats, on
	// every poll of a switch waiting for acknowledgements.
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('shardgate.routing_revisions') IS NOT NULL AND EXISTS (
		SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('shardgate.proxies') AND attname = 'held' AND NOT attisdropped)`).Scan(&ok); err == nil && ok {
		return nil
	}
	if _, err := conn.Exec(ctx, Schema); err != nil {
		return fmt.Errorf("create routing tables on main: %w", err)
	}
	return nil
}

// Load returns the latest revision (Rev 0 when there is none).
func Load(ctx context.Context, conn *pgx.Conn) (Revision, error) {
	if err := EnsureSchema(ctx, conn); err != nil {
		return Revision{}, err
	}
	return latest(ctx, conn)
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func latest(ctx context.Context, q querier) (Revision, error) {
	var r Revision
	var state []byte
	err := q.QueryRow(ctx, `SELECT rev, created_at, author, reason, state FROM shardgate.routing_revisions ORDER BY rev DESC LIMIT 1`).
		Scan(&r.Rev, &r.CreatedAt, &r.Author, &r.Reason, &state)
	if errors.Is(err, pgx.ErrNoRows) {
		return Revision{}, nil
	}
	if err != nil {
		return Revision{}, err
	}
	if err := json.Unmarshal(state, &r.State); err != nil {
		return Revision{}, fmt.Errorf("routing revision %d: bad state: %w", r.Rev, err)
	}
	return r, nil
}

// ErrConflict is Commit's answer when the latest revision is not the one
// the caller started from.
var ErrConflict = sqlerr.New(sqlerr.SerializationFailure, "routing revision changed meanwhile")

// Commit writes revision expectRev+1: mutate edits a copy of revision
// expectRev's state. It fails with 40001 (ErrConflict) when the latest
// revision is not expectRev, so two writers never overwrite each other;
// the caller loads again and retries. The NOTIFY on Channel is sent in
// the same transaction, so listeners hear of a revision only once it is
// committed.
func Commit(ctx context.Context, conn *pgx.Conn, expectRev int64, author, reason string, mutate func(*State) error) (Revision, error) {
	return CommitWith(ctx, conn, expectRev, author, reason, mutate, nil)
}

// CommitWith is Commit with also run in the revision's transaction (when
// not nil), after the revision is written: what a workflow records of
// the decision commits with it or not at all.
func CommitWith(ctx context.Context, conn *pgx.Conn, expectRev int64, author, reason string, mutate func(*State) error,
	also func(pgx.Tx, Revision) error) (Revision, error) {
	if err := EnsureSchema(ctx, conn); err != nil {
		return Revision{}, err
	}
	var out Revision
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// One writer at a time: the lock serialises concurrent Commits,
		// then the latest revision is compared with expectRev.
		if _, err := tx.Exec(ctx, `LOCK TABLE shardgate.routing_revisions IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		cur, err := latest(ctx, tx)
		if err != nil {
			return err
		}
		if cur.Rev != expectRev {
			return ErrConflict.WithDetail("Expected revision %d, the latest is %d.", expectRev, cur.Rev)
		}
		st := cur.State.clone()
		if err := mutate(&st); err != nil {
			return err
		}
		data, err := json.Marshal(st)
		if err != nil {
			return err
		}
		out = Revision{Rev: expectRev + 1, Author: author, Reason: reason}
		if err := tx.QueryRow(ctx, insertRevisionSQL, out.Rev, author, reason, data).Scan(&out.CreatedAt); err != nil {
			return err
		}
		// Read back as stored, so the caller holds what others load.
		if err := json.Unmarshal(data, &out.State); err != nil {
			return err
		}
		if also != nil {
			if err := also(tx, out); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, notifySQL, Channel, out.Rev)
		return err
	})
	if err != nil {
		return Revision{}, err
	}
	return out, nil
}

// notifySQL notifies Channel of revision $2, in the transaction that
// writes it: the payload is the revision as JSON (a Revision) when it fits
// in a notification (under 8000 bytes), else its number; a listener that
// gets the revision itself installs it without reading main.
const notifySQL = `SELECT pg_notify($1, CASE WHEN octet_length(j) < 7900 THEN j ELSE rev::text END)
	FROM (SELECT rev, json_build_object('rev', rev, 'created_at', created_at, 'author', author, 'reason', reason, 'state', state)::text AS j
		FROM shardgate.routing_revisions WHERE rev = $2) r`

// clone copies a state deeply (through JSON: the state is small).
func (s State) clone() State {
	data, _ := json.Marshal(s)
	var c State
	_ = json.Unmarshal(data, &c)
	return c
}
