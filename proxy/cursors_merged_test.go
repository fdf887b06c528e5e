package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// fillOrders inserts orders 1..n, customer i%37+1, total i, in one
// multi-row INSERT split across the shards.
func fillOrders(t *testing.T, p *testProxy, n int) {
	t.Helper()
	c := connect(t, p.dsn())
	var vals []string
	for i := 1; i <= n; i++ {
		vals = append(vals, fmt.Sprintf("(%d, %d, %d)", i, i%37+1, i))
	}
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES "+strings.Join(vals, ", "))
}

func seq(from, to int) string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// A cursor over a read merged across shards (ORDER BY over both clusters,
// more rows than one batch of the shards' cursors): FETCH n, MOVE n,
// FETCH ALL and FETCH past the end answer as one Postgres would, in order;
// other statements run between FETCHes on the same connections; CLOSE
// ends it; a cursor over an aggregate merges groups; backward is refused.
// Before, DECLARE was refused (0A000).
func TestCursorMergedRead(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	fillOrders(t, p, 2500)
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "DECLARE c CURSOR FOR SELECT id FROM orders ORDER BY id")
	if got, err := simpleRows(t, c, "FETCH 7 FROM c"); err != nil || fmt.Sprint(got) != seq(1, 7) {
		t.Fatalf("FETCH 7: %v %v", got, err)
	}
	res, err := c.PgConn().Exec(context.Background(), "MOVE 3 IN c").ReadAll()
	if err != nil || res[0].CommandTag.String() != "MOVE 3" {
		t.Fatalf("MOVE 3: %v %v", res, err)
	}
	if got, err := simpleRows(t, c, "FETCH FORWARD 5 FROM c"); err != nil || fmt.Sprint(got) != seq(11, 15) {
		t.Fatalf("FETCH FORWARD 5: %v %v", got, err)
	}
	// The shards' connections are free between FETCHes.
	if got, err := simpleRows(t, c, "SELECT id FROM orders WHERE customer_id = 5"); err != nil || len(got) == 0 {
		t.Fatalf("a read between FETCHes: %v %v", got, err)
	}
	mustExec(t, c, "UPDATE orders SET total = 0 WHERE customer_id = 5")
	if got, err := simpleRows(t, c, "FETCH NEXT FROM c"); err != nil || fmt.Sprint(got) != "[16]" {
		t.Fatalf("FETCH NEXT: %v %v", got, err)
	}
	if got, err := simpleRows(t, c, "FETCH ALL FROM c"); err != nil || fmt.Sprint(got) != seq(17, 2500) {
		t.Fatalf("FETCH ALL: %d rows, %v", len(got), err)
	}
	res, err = c.PgConn().Exec(context.Background(), "FETCH 3 FROM c").ReadAll()
	if err != nil || len(res[0].Rows) != 0 || res[0].CommandTag.String() != "FETCH 0" {
		t.Fatalf("FETCH past the end: %v %v", res, err)
	}
	if _, err := simpleRows(t, c, "FETCH BACKWARD 1 FROM c"); sqlstate(err) != "0A000" {
		t.Fatalf("FETCH BACKWARD: want 0A000, got %v", err)
	}
	mustExec(t, c, "ROLLBACK")

	mustExec(t, c, "BEGIN")
	mustExec(t, c, "DECLARE a CURSOR FOR SELECT customer_id, count(*) FROM orders GROUP BY customer_id ORDER BY customer_id")
	got, err := simpleRows(t, c, "FETCH 3 FROM a")
	if err != nil || fmt.Sprint(got) != "[1 2 3]" {
		t.Fatalf("aggregate FETCH: %v %v", got, err)
	}
	res, err = c.PgConn().Exec(context.Background(), "FETCH 1 FROM a").ReadAll()
	if err != nil || string(res[0].Rows[0][0]) != "4" || string(res[0].Rows[0][1]) != "68" {
		t.Fatalf("aggregate row: %v %v", res, err)
	}
	// A plain scatter (no order): every row once.
	mustExec(t, c, "DECLARE s CURSOR FOR SELECT id FROM orders WHERE total > 2400")
	if got, err := simpleRows(t, c, "FETCH ALL FROM s"); err != nil || len(got) != 100 {
		t.Fatalf("scatter FETCH ALL: %d rows, %v", len(got), err)
	}
	mustExec(t, c, "CLOSE a")
	mustExec(t, c, "SAVEPOINT sp")
	if _, err := simpleRows(t, c, "FETCH 1 FROM a"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after CLOSE: want 34000, got %v", err)
	}
	mustExec(t, c, "ROLLBACK TO SAVEPOINT sp")
	mustExec(t, c, "CLOSE ALL")
	if _, err := simpleRows(t, c, "FETCH 1 FROM s"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after CLOSE ALL: want 34000, got %v", err)
	}
	mustExec(t, c, "ROLLBACK")
	// A cursor without hold ends with its transaction; outside one it is
	// Postgres's 25P01.
	if _, err := simpleRows(t, c, "DECLARE o CURSOR FOR SELECT id FROM orders ORDER BY id"); sqlstate(err) != "25P01" {
		t.Fatalf("DECLARE outside a transaction: want 25P01, got %v", err)
	}
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "DECLARE e CURSOR FOR SELECT id FROM orders ORDER BY id")
	// FETCH through the extended protocol answers as a simple query's
	// (TestPsycopgNamedCursor has the rest); binary rows of a text cursor
	// are refused clearly.
	fetched := c.PgConn().ExecParams(context.Background(), "FETCH 1 FROM e", nil, nil, nil, nil).Read()
	if fetched.Err != nil || len(fetched.Rows) != 1 || string(fetched.Rows[0][0]) != "1" || len(fetched.FieldDescriptions) != 1 {
		t.Fatalf("extended FETCH of a merged cursor: %v %v", fetched.Rows, fetched.Err)
	}
	if _, err := c.PgConn().ExecParams(context.Background(), "FETCH 1 FROM e", nil, nil, nil, []int16{1}).Close(); sqlstate(err) != "0A000" {
		t.Fatalf("binary FETCH of a text merged cursor: want 0A000, got %v", err)
	}
	mustExec(t, c, "ROLLBACK")
	if _, err := simpleRows(t, c, "FETCH 1 FROM e"); sqlstate(err) != "34000" {
		t.Fatalf("FETCH after ROLLBACK: want 34000, got %v", err)
	}
}

// Cursors the merge cannot keep (SCROLL, WITH HOLD) or over reads only
// intermediate results answer (a window function) are declared on the
// coordinator: FETCH BACKWARD and FETCH after COMMIT work there, and two
// such cursors and another intermediate read share a transaction. Before,
// each DECLARE was refused (0A000).
func TestCursorOnCoordinator(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	fillOrders(t, p, 300)
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "DECLARE w CURSOR FOR SELECT id, row_number() OVER (ORDER BY id DESC) FROM orders ORDER BY id")
	res, err := c.PgConn().Exec(context.Background(), "FETCH 2 FROM w").ReadAll()
	if err != nil || len(res[0].Rows) != 2 || string(res[0].Rows[1][0]) != "2" || string(res[0].Rows[1][1]) != "299" {
		t.Fatalf("window FETCH: %v %v", res, err)
	}
	mustExec(t, c, "DECLARE sc SCROLL CURSOR FOR SELECT id FROM orders ORDER BY id")
	if got, err := simpleRows(t, c, "FETCH 5 FROM sc"); err != nil || fmt.Sprint(got) != seq(1, 5) {
		t.Fatalf("scroll FETCH: %v %v", got, err)
	}
	if got, err := simpleRows(t, c, "FETCH BACKWARD 2 FROM sc"); err != nil || fmt.Sprint(got) != "[4 3]" {
		t.Fatalf("FETCH BACKWARD: %v %v", got, err)
	}
	if got, err := simpleRows(t, c, "FETCH LAST FROM sc"); err != nil || fmt.Sprint(got) != "[300]" {
		t.Fatalf("FETCH LAST: %v %v", got, err)
	}
	// Another read over intermediate results in the same transaction.
	if got, err := simpleRows(t, c, "SELECT count(DISTINCT customer_id) FROM orders"); err != nil || fmt.Sprint(got) != "[37]" {
		t.Fatalf("intermediate read beside cursors: %v %v", got, err)
	}
	if got, err := simpleRows(t, c, "FETCH NEXT FROM w"); err != nil || fmt.Sprint(got) != "[3]" {
		t.Fatalf("FETCH after another read: %v %v", got, err)
	}
	mustExec(t, c, "DECLARE h CURSOR WITH HOLD FOR SELECT id FROM orders ORDER BY id")
	mustExec(t, c, "COMMIT")
	if got, err := simpleRows(t, c, "FETCH 3 FROM h"); err != nil || fmt.Sprint(got) != seq(1, 3) {
		t.Fatalf("FETCH WITH HOLD after COMMIT: %v %v", got, err)
	}
	if _, err := simpleRows(t, c, "FETCH 1 FROM w"); sqlstate(err) != "34000" {
		t.Fatalf("cursor without hold after COMMIT: want 34000, got %v", err)
	}
	mustExec(t, c, "CLOSE h")
	// WITH HOLD outside a transaction block; without hold, 25P01.
	mustExec(t, c, "DECLARE h2 CURSOR WITH HOLD FOR SELECT id FROM orders ORDER BY id DESC")
	if got, err := simpleRows(t, c, "FETCH 2 FROM h2"); err != nil || fmt.Sprint(got) != "[300 299]" {
		t.Fatalf("FETCH of a held cursor declared outside a transaction: %v %v", got, err)
	}
	mustExec(t, c, "CLOSE h2")
	if _, err := simpleRows(t, c, "DECLARE x CURSOR FOR SELECT id, rank() OVER (ORDER BY id) FROM orders"); sqlstate(err) != "25P01" {
		t.Fatalf("DECLARE outside a transaction: want 25P01, got %v", err)
	}
}
