package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// expectedSQL computes in main, from the initial rows (the formulas of
// initialOrder) and the ledger alone, the tables as the committed writes
// left them.
const expectedSQL = `
DROP TABLE IF EXISTS expected_orders, expected_customers;
CREATE TABLE expected_orders AS
	SELECT g::bigint AS id, 1 + g %% %[2]d AS customer_id, 'order ' || g AS note, (g %% 1000)::numeric(12,2) AS amount
	FROM generate_series(1, %[1]d) g;
ALTER TABLE expected_orders ADD PRIMARY KEY (id);
UPDATE expected_orders e SET amount = e.amount + u.n
	FROM (SELECT order_id, count(*) n FROM ledger WHERE op = 'u' GROUP BY 1) u WHERE e.id = u.order_id;
UPDATE expected_orders e SET customer_id = k.customer_id, note = 'moved'
	FROM (SELECT DISTINCT ON (order_id) order_id, customer_id FROM ledger WHERE op = 'k' ORDER BY order_id, seq DESC) k
	WHERE e.id = k.order_id;
DELETE FROM expected_orders WHERE id IN (SELECT order_id FROM ledger WHERE op = 'd');
INSERT INTO expected_orders SELECT order_id, customer_id, 'new', 1 FROM ledger WHERE op = 'i';
CREATE TABLE expected_customers AS SELECT g::bigint AS id, 'customer ' || g AS name FROM generate_series(1, %[2]d) g;`

// rowHashSQL is one row's hash, the same on every side.
const rowHashSQL = "md5(ROW(%s)::text)"

// tableCheck is the oracle's verdict on one table on one side.
type tableCheck struct {
	table, side         string
	expected, got       int64
	lost, dup, mismatch int64
}

func (c tableCheck) clean() bool {
	return c.expected == c.got && c.lost == 0 && c.dup == 0 && c.mismatch == 0
}

// oracle compares every table, on the sources together and on the
// targets together, with main's expected tables: rows lost (expected,
// absent), duplicated (on more than one cluster, or more than once) and
// different; the reference table on every cluster.
func (h *harness) oracle(ctx context.Context) error {
	main, err := pgx.Connect(ctx, h.dsn("main"))
	if err != nil {
		return err
	}
	defer main.Close(ctx)
	if _, err := main.Exec(ctx, fmt.Sprintf(expectedSQL, h.cfg.orders, h.cfg.customers)); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	if err := main.QueryRow(ctx, "SELECT count(*), count(*) FILTER (WHERE op = 'k') FROM ledger").Scan(&h.r.ledger, &h.r.keyMoves); err != nil {
		return err
	}
	for _, t := range []struct{ table, expected, cols string }{
		{"orders", "expected_orders", "id, customer_id, note, amount"},
		{"customers", "expected_customers", "id, name"},
	} {
		want, err := hashes(ctx, main, t.expected, t.cols)
		if err != nil {
			return err
		}
		for _, side := range []struct {
			name     string
			clusters []string
		}{{"sources", sourceNames}, {"targets", targetNames}} {
			c := tableCheck{table: t.table, side: side.name, expected: int64(len(want))}
			seen := map[int64]int{}
			for _, cl := range side.clusters {
				conn, err := pgx.Connect(ctx, h.dsn(cl))
				if err != nil {
					return err
				}
				have, err := hashRows(ctx, conn, t.table, t.cols, func(id int64, hash string) {
					c.got++
					if seen[id]++; seen[id] > 1 {
						c.dup++
					} else if w, ok := want[id]; ok && w != hash {
						c.mismatch++
					}
				})
				conn.Close(ctx)
				if err != nil {
					return fmt.Errorf("oracle %s on %s: %w (%d rows)", t.table, cl, err, have)
				}
			}
			for id := range want {
				if seen[id] == 0 {
					c.lost++
				}
			}
			c.dup += int64(len(seen)) - (c.expected - c.lost) // rows that should not be there
			h.r.checks = append(h.r.checks, c)
			logf("oracle %s on the %s: %d expected, %d rows, %d lost, %d duplicated or extra, %d different",
				c.table, c.side, c.expected, c.got, c.lost, c.dup, c.mismatch)
		}
	}
	for _, cl := range targetNames {
		conn, err := pgx.Connect(ctx, h.dsn(cl))
		if err != nil {
			return err
		}
		var n int64
		err = conn.QueryRow(ctx, "SELECT count(*) FROM countries").Scan(&n)
		conn.Close(ctx)
		if err != nil {
			return err
		}
		h.r.checks = append(h.r.checks, tableCheck{table: "countries", side: cl, expected: 200, got: n})
	}
	return nil
}

func hashes(ctx context.Context, conn *pgx.Conn, table, cols string) (map[int64]string, error) {
	out := map[int64]string{}
	_, err := hashRows(ctx, conn, table, cols, func(id int64, h string) { out[id] = h })
	return out, err
}

func hashRows(ctx context.Context, conn *pgx.Conn, table, cols string, each func(int64, string)) (int64, error) {
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT id, "+rowHashSQL+" FROM %s", cols, table))
	if err != nil {
		return 0, err
	}
	var id int64
	var h string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&id, &h}, func() error { n++; each(id, h); return nil })
	return n, err
}
