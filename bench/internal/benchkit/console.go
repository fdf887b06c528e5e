package benchkit

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// ConsoleRows runs one command on a shardgate admin console (dsn names
// its database) with the simple protocol and returns the rows as text
// ("NULL" for a null).
func ConsoleRows(ctx context.Context, dsn, cmd string) ([][]string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, cmd, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var row []string
		for _, v := range rows.RawValues() {
			if v == nil {
				row = append(row, "NULL")
				continue
			}
			row = append(row, string(v))
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
