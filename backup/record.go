package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shardgate/shardgate/internal/schemalock"
	"github.com/shardgate/shardgate/sqlerr"
)

// schema is the record of the restore points made, in main. A fleet
// restored to a point does not list it: its row is written after the
// point.
const schema = schemalock.Prefix + `CREATE SCHEMA IF NOT EXISTS shardgate;
CREATE TABLE IF NOT EXISTS shardgate.restore_points (
	name text PRIMARY KEY,
	created_at timestamptz NOT NULL,
	author text NOT NULL DEFAULT '',
	pause_ms double precision NOT NULL,
	in_doubt int NOT NULL DEFAULT 0,
	points jsonb NOT NULL
)`

func ensureSchema(ctx context.Context, conn *pgx.Conn) error {
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('shardgate.restore_points') IS NOT NULL`).Scan(&ok); err != nil || ok {
		return err
	}
	if _, err := conn.Exec(ctx, schema); err != nil {
		return fmt.Errorf("create shardgate.restore_points on main: %w", err)
	}
	return nil
}

// checkUnused refuses a name already recorded: recovery stops at the
// first point of a name, so a second one would never be reached.
func checkUnused(ctx context.Context, conn *pgx.Conn, name string) error {
	var at time.Time
	err := conn.QueryRow(ctx, `SELECT created_at FROM shardgate.restore_points WHERE name = $1`, name).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return sqlerr.New("42710" /* duplicate_object */, "restore point %q exists already (made %s)", name, at.UTC().Format(time.RFC3339)).
		WithHint("Recovery stops at the first point of a name: choose another.")
}

func record(ctx context.Context, conn *pgx.Conn, author string, r *Result) error {
	points, err := json.Marshal(r.Points)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `INSERT INTO shardgate.restore_points (name, created_at, author, pause_ms, in_doubt, points) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.Name, r.CreatedAt, author, ms(r.Pause), r.InDoubt, points)
	return err
}

// Recorded is a restore point listed in main.
type Recorded struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Author    string    `json:"author"`
	PauseMS   float64   `json:"pause_ms"`
	InDoubt   int       `json:"in_doubt"`
	Points    []Point   `json:"points"`
}

// List returns the restore points recorded in main, oldest first.
func List(ctx context.Context, conn *pgx.Conn) ([]Recorded, error) {
	if err := ensureSchema(ctx, conn); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT name, created_at, author, pause_ms, in_doubt, points FROM shardgate.restore_points ORDER BY created_at, name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Recorded, error) {
		var r Recorded
		err := row.Scan(&r.Name, &r.CreatedAt, &r.Author, &r.PauseMS, &r.InDoubt, &r.Points)
		return r, err
	})
}
