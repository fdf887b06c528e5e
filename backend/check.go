package backend

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TableHasRows says whether table (a quoted, possibly schema-qualified
// name) holds a row on the database dsn points to, over a connection of
// its own (pools belong to statements). A table or schema that does not
// exist holds no rows. connectTimeout bounds the dial (0: pgconn's
// default), timeout the whole check.
func TableHasRows(dsn, table string, connectTimeout, timeout time.Duration) (bool, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return false, err
	}
	if connectTimeout > 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	results, err := conn.Exec(ctx, "SELECT 1 FROM "+table+" LIMIT 1").ReadAll()
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "3F000"):
		return false, nil // undefined_table, invalid_schema_name
	case err != nil:
		return false, err
	}
	return len(results) == 1 && len(results[0].Rows) > 0, nil
}
