package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shardgate/shardgate/internal/schemalock"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/sqlerr"
)

// Phases of a workflow.
const (
	PhaseCreated   = "created"   // checked and recorded; nothing copied yet
	PhaseCopying   = "copying"   // slots exist; tables being copied
	PhaseStreaming = "streaming" // copy done; changes applied from the slots
	PhaseError     = "error"     // stopped by an error (Error says which); run resumes
	PhaseStopped   = "stopped"   // stopped on request at a consistent point; start resumes
	PhaseCancelled = "cancelled" // slots, publications and target copies dropped
	PhaseCompleted = "completed" // traffic on the targets for good; sources' copies, slots and publications dropped
)

// Where a workflow's tables are served (Workflow.Traffic).
const (
	TrafficSource = "source" // the old layout serves; the stream runs sources -> targets
	TrafficTarget = "target" // switched: the new layout serves; the stream runs targets -> sources
)

// mainSchema is created in the main group's cluster on first use.
const mainSchema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.workflows (
	id bigserial PRIMARY KEY,
	kind text NOT NULL,
	spec jsonb NOT NULL,
	phase text NOT NULL,
	error text NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS shardgate.workflow_tables (
	workflow_id bigint NOT NULL REFERENCES shardgate.workflows ON DELETE CASCADE,
	source text NOT NULL,
	table_name text NOT NULL,
	rows_total bigint NOT NULL DEFAULT 0,
	rows_copied bigint NOT NULL DEFAULT 0,
	last_pk text[],
	done boolean NOT NULL DEFAULT false,
	created_on text[] NOT NULL DEFAULT '{}',
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (workflow_id, source, table_name)
);
CREATE TABLE IF NOT EXISTS shardgate.workflow_streams (
	workflow_id bigint NOT NULL REFERENCES shardgate.workflows ON DELETE CASCADE,
	source text NOT NULL,
	slot text NOT NULL,
	publication text NOT NULL,
	start_lsn pg_lsn,
	applied_lsn pg_lsn,
	source_lsn pg_lsn,
	applied_at timestamptz,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (workflow_id, source)
);
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS stop_requested boolean NOT NULL DEFAULT false;
ALTER TABLE shardgate.workflow_tables ADD COLUMN IF NOT EXISTS copy_started_at timestamptz;
ALTER TABLE shardgate.workflow_tables ADD COLUMN IF NOT EXISTS copy_started_rows bigint NOT NULL DEFAULT 0;
ALTER TABLE shardgate.workflow_streams ADD COLUMN IF NOT EXISTS commit_time timestamptz;
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS traffic text NOT NULL DEFAULT 'source';
ALTER TABLE shardgate.workflows ADD COLUMN IF NOT EXISTS switching jsonb;
ALTER TABLE shardgate.workflow_streams ADD COLUMN IF NOT EXISTS marker text NOT NULL DEFAULT '';
CREATE TABLE IF NOT EXISTS shardgate.workflow_switches (
	workflow_id bigint NOT NULL REFERENCES shardgate.workflows ON DELETE CASCADE,
	n int NOT NULL,
	op text NOT NULL,
	started_at timestamptz NOT NULL,
	decided_at timestamptz,
	outcome text NOT NULL,
	error text NOT NULL DEFAULT '',
	revision bigint NOT NULL DEFAULT 0,
	held bigint NOT NULL DEFAULT 0,
	pause_ms float8 NOT NULL DEFAULT 0,
	max_held_ms float8 NOT NULL DEFAULT 0,
	proxies jsonb NOT NULL DEFAULT '{}',
	PRIMARY KEY (workflow_id, n)
);
ALTER TABLE shardgate.workflow_switches ADD COLUMN IF NOT EXISTS steps jsonb NOT NULL DEFAULT '[]';
ALTER TABLE shardgate.workflow_switches ADD COLUMN IF NOT EXISTS client_pause_ms float8 NOT NULL DEFAULT 0;
ALTER TABLE shardgate.workflow_switches ADD COLUMN IF NOT EXISTS wait_p50_ms float8 NOT NULL DEFAULT 0;
ALTER TABLE shardgate.workflow_switches ADD COLUMN IF NOT EXISTS wait_p99_ms float8 NOT NULL DEFAULT 0;
ALTER TABLE shardgate.workflow_switches ADD COLUMN IF NOT EXISTS wait_max_ms float8 NOT NULL DEFAULT 0`

// targetSchema is created in every target cluster: the copy position and
// applied LSN written in the same transaction as the rows.
const targetSchema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.workflow_target (
	workflow_id bigint NOT NULL,
	source text NOT NULL,
	table_name text NOT NULL, -- '' for the stream's row
	chunk bigint NOT NULL DEFAULT 0,
	last_pk text[],
	done boolean NOT NULL DEFAULT false,
	applied_lsn pg_lsn,
	PRIMARY KEY (workflow_id, source, table_name)
);
CREATE TABLE IF NOT EXISTS shardgate.workflow_target_cycles (
	workflow_id bigint NOT NULL,
	source text NOT NULL,
	table_name text NOT NULL,
	snap text NOT NULL, -- pg_current_snapshot() of the copy cycle
	first_chunk bigint NOT NULL,
	upto_pk text[],
	done boolean NOT NULL DEFAULT false,
	PRIMARY KEY (workflow_id, source, table_name, snap)
)`

// Workflow is one workflow's record.
type Workflow struct {
	ID    int64  `json:"id"`
	Kind  string `json:"kind"`
	Spec  Spec   `json:"-"`
	Phase string `json:"phase"`
	Error string `json:"error,omitempty"`
	// StopRequested: `workflow stop` asked its runner to stop.
	StopRequested bool `json:"stop_requested"`
	// Traffic says which layout serves the tables: source or target.
	Traffic   string    `json:"traffic"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Store reads and writes workflow records in the main group's cluster. It
// is safe for concurrent use (one connection, serialised).
type Store struct {
	mu   sync.Mutex
	conn *pgx.Conn
	dsn  string // main's, for the connections holding runners' locks
}

// OpenStore connects to the main cluster and creates the schema if needed.
func OpenStore(ctx context.Context, dsn string) (*Store, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to main: %w", err)
	}
	// The script starts with schemalock.Prefix: sessions creating the
	// schema at the same moment (another store, a proxy) wait for each other.
	if _, err = conn.Exec(ctx, mainSchema+";\n"+vdiffSchema+";\n"+runnerSchema+";\n"+retrySchema); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("create shardgate schema on main: %w", err)
	}
	return &Store{conn: conn, dsn: dsn}, nil
}

// Close closes the connection.
func (s *Store) Close() error { return s.conn.Close(context.Background()) }

// live reconnects the store's connection if a cancelled statement closed
// it (pgx closes a connection whose query's context ends): one store is
// shared by the runners of a process, its status and its commands, and a
// stopped runner must not leave it closed for the others. s.mu is held.
func (s *Store) live(ctx context.Context) {
	if !s.conn.IsClosed() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if c, err := pgx.Connect(cctx, s.dsn); err == nil {
		s.conn = c
	}
}

func (s *Store) exec(ctx context.Context, sql string, args ...any) error {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	_, err := s.conn.Exec(ctx, sql, args...)
	return err
}

// ErrNotFound is returned for an unknown workflow id.
var ErrNotFound = sqlerr.New(sqlerr.UndefinedObject, "no such workflow")

// insert records a new workflow in phase created, with its table and
// stream rows, in one transaction.
func (s *Store) insert(ctx context.Context, p *Plan) (int64, error) {
	spec, err := json.Marshal(p.Spec)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var id int64
	err = pgx.BeginFunc(ctx, s.conn, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO shardgate.workflows (kind, spec, phase) VALUES ($1, $2, $3) RETURNING id`,
			string(p.Spec.Kind), spec, PhaseCreated).Scan(&id); err != nil {
			return err
		}
		for _, src := range p.Sources {
			if _, err := tx.Exec(ctx, `INSERT INTO shardgate.workflow_streams (workflow_id, source, slot, publication) VALUES ($1, $2, $3, $4)`,
				id, src.Cluster, slotName(id, src.Cluster), pubName(id)); err != nil {
				return err
			}
			for _, t := range src.Tables {
				if _, err := tx.Exec(ctx, `INSERT INTO shardgate.workflow_tables (workflow_id, source, table_name) VALUES ($1, $2, $3)`,
					id, src.Cluster, t.Name.String()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return id, err
}

// Get returns a workflow's record.
func (s *Store) Get(ctx context.Context, id int64) (*Workflow, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	w := &Workflow{}
	var spec []byte
	err := s.conn.QueryRow(ctx, `SELECT id, kind, spec, phase, error, stop_requested, traffic, created_at, updated_at FROM shardgate.workflows WHERE id = $1`, id).
		Scan(&w.ID, &w.Kind, &spec, &w.Phase, &w.Error, &w.StopRequested, &w.Traffic, &w.CreatedAt, &w.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound.WithDetail("Workflow %d is not recorded in the main group.", id)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(spec, &w.Spec); err != nil {
		return nil, fmt.Errorf("workflow %d: bad spec: %w", id, err)
	}
	return w, nil
}

// List returns every workflow, newest first.
func (s *Store) List(ctx context.Context) ([]*Workflow, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	rows, err := s.conn.Query(ctx, `SELECT id, kind, phase, error, created_at, updated_at FROM shardgate.workflows ORDER BY id DESC`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Workflow, error) {
		w := &Workflow{}
		return w, r.Scan(&w.ID, &w.Kind, &w.Phase, &w.Error, &w.CreatedAt, &w.UpdatedAt)
	})
}

// SetPhase records a workflow's phase and error ("" clears it), and
// clears the retry a runner waited for (the run got that far again).
func (s *Store) SetPhase(ctx context.Context, id int64, phase, errText string) error {
	return s.exec(ctx, `UPDATE shardgate.workflows SET phase = $2, error = $3, error_retryable = false, updated_at = now(), retry_attempt = 0, retry_at = NULL, retry_error = ''
		WHERE id = $1 AND phase NOT IN ('cancelled', 'completed')`, id, phase, errText)
}

// setCreatedOn records the target clusters on which a table was created
// by the workflow (dropped again by Cancel).
func (s *Store) setCreatedOn(ctx context.Context, id int64, source, table string, clusters []string) error {
	if clusters == nil {
		clusters = []string{} // the table existed on every target: not NULL
	}
	return s.exec(ctx, `UPDATE shardgate.workflow_tables SET created_on = $4 WHERE workflow_id = $1 AND source = $2 AND table_name = $3`,
		id, source, table, clusters)
}

// tableProgress records a table's copy progress as seen by status.
func (s *Store) tableProgress(ctx context.Context, id int64, source, table string, total, copied int64, lastPK []string, done bool) error {
	return s.exec(ctx, `UPDATE shardgate.workflow_tables SET rows_total = $4, rows_copied = $5, last_pk = $6, done = $7, updated_at = now()
		WHERE workflow_id = $1 AND source = $2 AND table_name = $3`, id, source, table, total, copied, lastPK, done)
}

// streamStarted records the slot's consistent point.
func (s *Store) streamStarted(ctx context.Context, id int64, source, lsn string) error {
	return s.exec(ctx, `UPDATE shardgate.workflow_streams SET start_lsn = $3, applied_lsn = $3, updated_at = now() WHERE workflow_id = $1 AND source = $2`, id, source, lsn)
}

// copyStarted records when this run started copying a table, and the
// rows copied before (the base of the copy rate).
func (s *Store) copyStarted(ctx context.Context, id int64, source, table string, copied int64) error {
	return s.exec(ctx, `UPDATE shardgate.workflow_tables SET copy_started_at = now(), copy_started_rows = $4
		WHERE workflow_id = $1 AND source = $2 AND table_name = $3`, id, source, table, copied)
}

// streamProgress records the applied LSN, the source's WAL position and
// the source commit time of the last transaction applied (zero: none yet).
func (s *Store) streamProgress(ctx context.Context, id int64, source, applied, sourceLSN string, commit time.Time) error {
	var ct *time.Time
	if !commit.IsZero() {
		ct = &commit
	}
	return s.exec(ctx, `UPDATE shardgate.workflow_streams SET applied_lsn = $3, source_lsn = $4, applied_at = now(), updated_at = now(),
		commit_time = coalesce($5, commit_time) WHERE workflow_id = $1 AND source = $2`,
		id, source, applied, sourceLSN, ct)
}

// createdOn returns, per table, the target clusters the workflow created it on.
func (s *Store) createdOn(ctx context.Context, id int64) (map[string][]string, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	rows, err := s.conn.Query(ctx, `SELECT table_name, created_on FROM shardgate.workflow_tables WHERE workflow_id = $1`, id)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var t string
	var on []string
	_, err = pgx.ForEachRow(rows, []any{&t, &on}, func() error {
		out[t] = append(out[t], on...)
		return nil
	})
	return out, err
}

// rowsCopied returns the rows copied so far of a table from a source.
func (s *Store) rowsCopied(ctx context.Context, id int64, source, table string) (int64, error) {
	s.mu.Lock()
	s.live(ctx)
	defer s.mu.Unlock()
	var n int64
	err := s.conn.QueryRow(ctx, `SELECT rows_copied FROM shardgate.workflow_tables WHERE workflow_id = $1 AND source = $2 AND table_name = $3`,
		id, source, table).Scan(&n)
	return n, err
}
