package proxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shardgate/shardgate/vschema"
)

// copyFrom runs COPY ... FROM STDIN with data on c.
func copyFrom(c *pgx.Conn, sql string, data io.Reader) (int64, error) {
	tag, err := c.PgConn().CopyFrom(context.Background(), data, sql)
	return tag.RowsAffected(), err
}

// copyTo runs COPY ... TO STDOUT on c.
func copyTo(t *testing.T, c *pgx.Conn, sql string) (string, int64) {
	t.Helper()
	var b bytes.Buffer
	tag, err := c.PgConn().CopyTo(context.Background(), &b, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return b.String(), tag.RowsAffected()
}

// keyCluster returns the cluster that owns an integer key of a group.
func keyCluster(t testing.TB, g *vschema.Group, key int64) string {
	t.Helper()
	s, err := g.ShardFor(vschema.IntegerKey(key))
	if err != nil {
		t.Fatal(err)
	}
	return s.Cluster
}

// backendKeys reads an integer column of a table on every cluster
// directly.
func backendKeys(t *testing.T, sql string) map[string][]int64 {
	t.Helper()
	out := map[string][]int64{}
	for _, cl := range env.Clusters {
		c := connect(t, cl.DSN("shop"))
		rows, err := c.Query(context.Background(), sql)
		if err != nil {
			t.Fatalf("%s on %s: %v", sql, cl.Name, err)
		}
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out[cl.Name] = append(out[cl.Name], v)
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
	}
	return out
}

// checkKeyPlacement checks that every key lives on the cluster it maps to,
// and that the keys are exactly want (each once).
func checkKeyPlacement(t *testing.T, g *vschema.Group, got map[string][]int64, want int) {
	t.Helper()
	seen := make(map[int64]bool, want)
	perCluster := map[string]int{}
	for cluster, keys := range got {
		for _, k := range keys {
			if c := keyCluster(t, g, k); c != cluster {
				t.Fatalf("key %d is on %s, but maps to %s", k, cluster, c)
			}
			if seen[k] {
				t.Fatalf("key %d loaded twice", k)
			}
			seen[k] = true
		}
		perCluster[cluster] = len(keys)
	}
	if len(seen) != want {
		t.Fatalf("%d keys loaded, want %d", len(seen), want)
	}
	for _, cl := range env.Clusters {
		if perCluster[cl.Name] == 0 && want > 100 {
			t.Fatalf("cluster %s got no rows", cl.Name)
		}
	}
	t.Logf("rows per cluster: %v", perCluster)
}

// orderRows generates n rows of orders in text format: id, customer_id,
// total, one per customer, without holding them all in memory.
type orderRows struct {
	n, i int
	buf  []byte
	bad  map[int]string // row number (1-based) -> its text instead
}

func (r *orderRows) Read(p []byte) (int, error) {
	for len(r.buf) < len(p) && r.i < r.n {
		r.i++
		if s, ok := r.bad[r.i]; ok {
			r.buf = append(r.buf, s...)
			continue
		}
		r.buf = strconv.AppendInt(r.buf, int64(r.i)*10, 10)
		r.buf = append(r.buf, '\t')
		r.buf = strconv.AppendInt(r.buf, int64(r.i), 10)
		r.buf = append(r.buf, '\t')
		r.buf = strconv.AppendInt(r.buf, int64(r.i%1000), 10)
		r.buf = append(r.buf, ".50\n"...)
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[n:])]
	return n, nil
}

func copyRowCount() int {
	if testing.Short() {
		return 200_000
	}
	return 1_000_000
}

// TestCopyInText loads a million rows (200k with -short) in text format
// through the proxy and checks that every row is on the cluster its key
// maps to.
func TestCopyInText(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	n := copyRowCount()
	start := time.Now()
	got, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("COPY of %d rows through the proxy: %s", n, time.Since(start).Round(time.Millisecond))
	if got != int64(n) {
		t.Fatalf("COPY %d, want %d", got, n)
	}
	checkKeyPlacement(t, p.vs.Group("by_customer"), backendKeys(t, "SELECT customer_id FROM orders"), n)
	var sum float64
	if err := c.QueryRow(context.Background(), "SELECT sum(total)::float8 FROM orders WHERE customer_id = 777").Scan(&sum); err != nil || sum != 777.5 {
		t.Fatalf("order of customer 777: %v %v", sum, err)
	}

	// The rows come back, each once.
	out, rows := copyTo(t, c, "COPY orders (customer_id) TO STDOUT")
	if rows != int64(n) || strings.Count(out, "\n") != n {
		t.Fatalf("COPY TO returned %d rows (%d lines), want %d", rows, strings.Count(out, "\n"), n)
	}
	seen := make([]bool, n+1)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, err := strconv.Atoi(l)
		if err != nil || k < 1 || k > n || seen[k] {
			t.Fatalf("COPY TO line %q", l)
		}
		seen[k] = true
	}
}

// BenchmarkCopyIn loads a million rows per iteration.
func BenchmarkCopyIn(b *testing.B) {
	p := startProxy(b, shopTopology(""), nil)
	c := connect(b, p.dsn())
	for _, s := range []string{"DROP TABLE IF EXISTS orders", "CREATE TABLE orders (id bigint, customer_id bigint NOT NULL, total numeric(12,2))"} {
		mustExec(b, c, s)
	}
	const n = 1_000_000
	for b.Loop() {
		mustExec(b, c, "TRUNCATE orders")
		if _, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: n}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// csvNames are values that need quoting in csv: delimiters, quotes, line
// breaks, the null string, leading spaces.
var csvNames = []string{"plain", "with, comma", `with "quotes"`, "two\nlines", "crlf\r\ninside", "", " spaced ", `\N`, "x\"\ny,z"}

func csvQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func TestCopyInCSV(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	var in strings.Builder
	in.WriteString("name,\"id\"\n") // HEADER: the first line is skipped
	const n = 3000
	for i := 1; i <= n; i++ {
		name := csvNames[i%len(csvNames)]
		switch {
		case i%7 == 0:
			fmt.Fprintf(&in, ",%d\n", i) // NULL name
		case i%5 == 0:
			fmt.Fprintf(&in, "%s,\"%d\"\n", csvQuote(name), i) // a quoted key
		default:
			fmt.Fprintf(&in, "%s,%d\n", csvQuote(name), i)
		}
	}
	got, err := copyFrom(c, "COPY customers (name, id) FROM STDIN WITH (FORMAT csv, HEADER true)", strings.NewReader(in.String()))
	if err != nil || got != n {
		t.Fatalf("COPY: %d %v", got, err)
	}
	g := p.vs.Group("by_customer")
	checkKeyPlacement(t, g, backendKeys(t, "SELECT id FROM customers"), n)
	for _, cl := range env.Clusters {
		bc := connect(t, cl.DSN("shop"))
		rows, err := bc.Query(context.Background(), "SELECT id, name FROM customers")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int
			var name *string
			if err := rows.Scan(&id, &name); err != nil {
				t.Fatal(err)
			}
			want := csvNames[id%len(csvNames)]
			if id%7 == 0 {
				if name != nil {
					t.Fatalf("customer %d: name %q, want NULL", id, *name)
				}
				continue
			}
			if name == nil || *name != want {
				t.Fatalf("customer %d: name %v, want %q", id, name, want)
			}
		}
	}

	// csv HEADER out: one header line for all clusters.
	out, rows := copyTo(t, c, "COPY customers (id, name) TO STDOUT WITH (FORMAT csv, HEADER)")
	if rows != n || !strings.HasPrefix(out, "id,name\n") || strings.Count(out, "id,name\n") != 1 {
		t.Fatalf("COPY TO csv header: %d rows, header count %d", rows, strings.Count(out, "id,name\n"))
	}
	// Loading that output again gives the same table.
	mustExec(t, c, "TRUNCATE customers")
	if got, err := copyFrom(c, "COPY customers (id, name) FROM STDIN WITH (FORMAT csv, HEADER)", strings.NewReader(out)); err != nil || got != n {
		t.Fatalf("reload: %d %v", got, err)
	}
	out2, _ := copyTo(t, c, "COPY (SELECT id, name FROM customers) TO STDOUT WITH (FORMAT csv, HEADER)")
	if sortedLines(out2) != sortedLines(out) {
		t.Fatal("the reloaded table differs")
	}

	// Options: another delimiter, quote, escape and null string, FORCE_NOT_NULL.
	mustExec(t, c, "TRUNCATE customers")
	data := "1;NULL\n2;'it''s'\n3;'a;b'\n4;\n"
	if got, err := copyFrom(c, `COPY customers (id, name) FROM STDIN (FORMAT csv, DELIMITER ';', QUOTE '''', NULL 'NULL', FORCE_NOT_NULL (name))`, strings.NewReader(data)); err != nil || got != 4 {
		t.Fatalf("COPY with options: %d %v", got, err)
	}
	var names []string
	for id := 1; id <= 4; id++ {
		var name string
		if err := c.QueryRow(context.Background(), "SELECT coalesce(name, '<null>') FROM customers WHERE id = $1", id).Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	if fmt.Sprint(names) != "[NULL it's a;b ]" {
		t.Fatalf("names %q", names)
	}
}

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	for i := range l {
		for j := i + 1; j < len(l); j++ {
			if l[j] < l[i] {
				l[i], l[j] = l[j], l[i]
			}
		}
	}
	return strings.Join(l, "\n")
}

func TestCopyInBinary(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	const n = 20000
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(i + 1), int64(i+1) * 7, fmt.Sprintf("%d.25", i)}
	}
	// pgx's CopyFrom uses the binary format.
	got, err := c.CopyFrom(context.Background(), pgx.Identifier{"orders"}, []string{"customer_id", "id", "total"}, pgx.CopyFromRows(rows))
	if err != nil || got != n {
		t.Fatalf("CopyFrom: %d %v", got, err)
	}
	g := p.vs.Group("by_customer")
	checkKeyPlacement(t, g, backendKeys(t, "SELECT customer_id FROM orders"), n)

	// Binary out: one header, one trailer, every tuple.
	out, cnt := copyTo(t, c, "COPY orders (customer_id, id) TO STDOUT (FORMAT binary)")
	if cnt != n {
		t.Fatalf("COPY TO binary: %d rows", cnt)
	}
	tuples := 0
	b := []byte(out)
	if !bytes.HasPrefix(b, []byte("PGCOPY\n\xff\r\n\x00")) {
		t.Fatal("no binary header")
	}
	pos := 19
	for {
		fields := int16(binary.BigEndian.Uint16(b[pos:]))
		pos += 2
		if fields == -1 {
			break
		}
		for f := 0; f < int(fields); f++ {
			size := int32(binary.BigEndian.Uint32(b[pos:]))
			pos += 4 + int(size)
		}
		tuples++
	}
	if tuples != n || pos != len(b) {
		t.Fatalf("binary output: %d tuples, %d of %d bytes", tuples, pos, len(b))
	}

	// Reload the binary output through the proxy.
	mustExec(t, c, "TRUNCATE orders")
	if got, err := copyFrom(c, "COPY orders (customer_id, id) FROM STDIN (FORMAT binary)", bytes.NewReader(b)); err != nil || got != n {
		t.Fatalf("binary reload: %d %v", got, err)
	}
	checkKeyPlacement(t, g, backendKeys(t, "SELECT customer_id FROM orders"), n)

	// Every column, in table order, needs the table's columns from a backend.
	mustExec(t, c, "TRUNCATE orders")
	rows = rows[:100]
	for i := range rows {
		rows[i] = []any{int64(i), int64(i + 1000), "1.00"}
	}
	if got, err := c.CopyFrom(context.Background(), pgx.Identifier{"public", "orders"}, []string{"id", "customer_id", "total"}, pgx.CopyFromRows(rows)); err != nil || got != 100 {
		t.Fatalf("CopyFrom qualified: %d %v", got, err)
	}
}

// emptyBackends checks that no cluster holds a row of table.
func emptyBackends(t *testing.T, table string) {
	t.Helper()
	for _, cl := range env.Clusters {
		if n := count(t, cl.DSN("shop"), "SELECT count(*) FROM "+table); n != 0 {
			t.Fatalf("cluster %s holds %d rows of %s after a failed COPY", cl.Name, n, table)
		}
	}
}

func pgErr(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a server error", err)
	}
	return pe
}

// TestCopyInErrors: a bad row anywhere loads nothing anywhere, and the
// error names its line of the input.
func TestCopyInErrors(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p) // orders has PRIMARY KEY (customer_id, id)
	const n = 60_000     // about 1.3 MB: bad rows come after many flushes to each cluster
	cases := []struct {
		name  string
		bad   map[int]string
		code  string
		line  int
		where string
	}{
		{"key that is not a number", map[int]string{23_457: "1\tabc\t1.00\n"}, "22P02", 23_457, `column customer_id: "abc"`},
		{"key out of range", map[int]string{50_001: "1\t99999999999999999999\t1\n"}, "22003", 50_001, "column customer_id"},
		{"null key", map[int]string{19_999: "1\t\\N\t1\n"}, "23502", 19_999, "column customer_id"},
		{"missing key field", map[int]string{40_000: "1\n"}, "22P04", 40_000, "column customer_id"},
		{"shard error on another column", map[int]string{45_001: "1\t5\tnot-a-number\n"}, "22P02", 45_001, `column total: "not-a-number"`},
		{"duplicate key on a shard", map[int]string{55_000: "10\t1\t0\n"}, "23505", 55_000, ""},
		{"extra column on a shard", map[int]string{30_000: "1\t30000\t1\t1\n"}, "22P04", 30_000, ""},
		{"bad row at the very end", map[int]string{60_000: "1\tx"}, "22P02", 60_000, `column customer_id: "x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: n, bad: tc.bad})
			pe := pgErr(t, err)
			want := fmt.Sprintf("COPY orders, line %d", tc.line)
			if pe.Code != tc.code || !strings.HasPrefix(pe.Message, want) || !strings.HasPrefix(pe.Where, want) || !strings.Contains(pe.Where, tc.where) {
				t.Fatalf("error %s %q where %q; want %s, %q, %q", pe.Code, pe.Message, pe.Where, tc.code, want, tc.where)
			}
			emptyBackends(t, "orders")
			// The session is fine afterwards.
			var one int
			if err := c.QueryRow(context.Background(), "SELECT 1").Scan(&one); err != nil {
				t.Fatal(err)
			}
		})
	}

	// A malformed line, csv with a header and quoted line breaks: the line
	// counts as Postgres counts it.
	data := "id,customer_id\n1,1\n2,\"2\"\n\"3\",3\n4,\"x\ny\"\n"
	_, err := copyFrom(c, "COPY orders (id, customer_id) FROM STDIN (FORMAT csv, HEADER)", strings.NewReader(data))
	if pe := pgErr(t, err); pe.Code != "22P02" || !strings.HasPrefix(pe.Where, "COPY orders, line 6, column customer_id") {
		t.Fatalf("csv error %s %q %q", pe.Code, pe.Message, pe.Where)
	}
	emptyBackends(t, "orders")

	// The client's CopyFail.
	_, err = copyFrom(c, "COPY orders (id, customer_id) FROM STDIN", io.MultiReader(&orderRows{n: 1000}, errReader{}))
	if pe := pgErr(t, err); pe.Code != "57014" {
		t.Fatalf("CopyFail: %s %q", pe.Code, pe.Message)
	}
	emptyBackends(t, "orders")

	// Inside a transaction: the failed COPY aborts it; ROLLBACK cleans up.
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 1)")
	_, err = copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: 1000, bad: map[int]string{500: "x\n"}})
	if err == nil {
		t.Fatal("bad COPY in a transaction succeeded")
	}
	if _, err := c.Exec(context.Background(), "SELECT 1"); sqlstate(err) != "25P02" {
		t.Fatalf("after the failed COPY: %v", err)
	}
	mustExec(t, c, "ROLLBACK")
	emptyBackends(t, "orders")

	// Unknown table, unknown column: the backends' errors.
	_, err = copyFrom(c, "COPY orders (id, customer_id, nope) FROM STDIN", strings.NewReader("1\t2\t3\n"))
	if pe := pgErr(t, err); pe.Code != "42703" {
		t.Fatalf("unknown column: %s %q", pe.Code, pe.Message)
	}
	_, err = copyFrom(c, "COPY customers (name) FROM STDIN", strings.NewReader("x\n"))
	if pe := pgErr(t, err); pe.Code != "23502" {
		t.Fatalf("missing key column: %s %q", pe.Code, pe.Message)
	}
}

// TestCopyEncoding: a text shard key is hashed as UTF-8, so sharded COPY
// in another client encoding is refused for it; integer keys are fine in
// any encoding whose bytes below 0x80 are ASCII.
func TestCopyEncoding(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "SET client_encoding TO 'LATIN1'")
	_, err := copyFrom(c, "COPY products (sku, name) FROM STDIN", strings.NewReader("abc\tx\n"))
	if pe := pgErr(t, err); pe.Code != "0A000" || !strings.Contains(pe.Message, "LATIN1") {
		t.Fatalf("text key in LATIN1: %s %q", pe.Code, pe.Message)
	}
	if n, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", strings.NewReader("1\t2\t3\n")); err != nil || n != 1 {
		t.Fatalf("integer key in LATIN1: %d %v", n, err)
	}
	_, err = copyFrom(c, "COPY orders (id, customer_id) FROM STDIN (ENCODING 'SJIS')", strings.NewReader("1\t2\n"))
	if pe := pgErr(t, err); pe.Code != "0A000" {
		t.Fatalf("SJIS: %s %q", pe.Code, pe.Message)
	}
	mustExec(t, c, "RESET client_encoding")
	if n, err := copyFrom(c, "COPY products (sku, name) FROM STDIN", strings.NewReader("ÄBC\tx\n")); err != nil || n != 1 {
		t.Fatalf("text key in UTF8: %d %v", n, err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("the client gives up") }

// TestCopyTransactions: COPY joins an open transaction; its rows commit or
// roll back with it, on every cluster.
func TestCopyTransactions(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	mustExec(t, c, "BEGIN")
	if _, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: 5000}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := c.QueryRow(context.Background(), "SELECT count(*) FROM orders WHERE customer_id = 4321").Scan(&n); err != nil || n != 1 {
		t.Fatalf("read in the transaction: %d %v", n, err)
	}
	mustExec(t, c, "ROLLBACK")
	emptyBackends(t, "orders")

	mustExec(t, c, "BEGIN")
	if _, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: 5000}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO countries VALUES ('DE', 'Germany')")
	mustExec(t, c, "COMMIT")
	checkKeyPlacement(t, p.vs.Group("by_customer"), backendKeys(t, "SELECT customer_id FROM orders"), 5000)

	// COPY ... FREEZE needs the table truncated in the same transaction,
	// on each cluster (pgbench -i does this).
	mustExec(t, c, "BEGIN")
	mustExec(t, c, "TRUNCATE orders")
	if _, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN WITH (FREEZE ON)", &orderRows{n: 5000}); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "COMMIT")
	checkKeyPlacement(t, p.vs.Group("by_customer"), backendKeys(t, "SELECT customer_id FROM orders"), 5000)
}

// TestCopyReference: every row of a reference table goes to every cluster.
func TestCopyReference(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	var in strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, "C%03d\tcountry %d\n", i, i)
	}
	in.WriteString("\\.\n")
	got, err := copyFrom(c, "COPY countries FROM STDIN", strings.NewReader(in.String()))
	if err != nil || got != 300 {
		t.Fatalf("COPY: %d %v", got, err)
	}
	var first string
	for i, cl := range env.Clusters {
		bc := connect(t, cl.DSN("shop"))
		out, n := copyTo(t, bc, "COPY (SELECT * FROM countries ORDER BY code) TO STDOUT")
		if n != 300 {
			t.Fatalf("cluster %s has %d countries", cl.Name, n)
		}
		if i == 0 {
			first = out
		} else if out != first {
			t.Fatalf("cluster %s's countries differ", cl.Name)
		}
	}
	// A duplicate fails on every copy with the same line.
	_, err = copyFrom(c, "COPY countries FROM STDIN", strings.NewReader("X1\ta\nC007\tdup\n"))
	if pe := pgErr(t, err); pe.Code != "23505" || !strings.HasPrefix(pe.Where, "COPY countries, line 2") {
		t.Fatalf("duplicate: %s %q %q", pe.Code, pe.Message, pe.Where)
	}
	if n := count(t, env.Clusters[1].DSN("shop"), "SELECT count(*) FROM countries WHERE code = 'X1'"); n != 0 {
		t.Fatal("a failed reference COPY left rows behind")
	}
	// Reading a reference table takes one copy.
	out, n := copyTo(t, c, "COPY countries TO STDOUT")
	if n != 300 || strings.Count(out, "\n") != 300 {
		t.Fatalf("COPY TO of a reference table: %d rows", n)
	}
}

// TestCopyOut covers COPY TO STDOUT across clusters.
func TestCopyOut(t *testing.T) {
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	if _, err := copyFrom(c, "COPY orders (id, customer_id, total) FROM STDIN", &orderRows{n: 1000}); err != nil {
		t.Fatal(err)
	}
	out, n := copyTo(t, c, "COPY (SELECT customer_id, total FROM orders WHERE total > 500) TO STDOUT (FORMAT csv)")
	if n != 500 || strings.Count(out, "\n") != 500 {
		t.Fatalf("COPY (query): %d rows", n)
	}
	out, n = copyTo(t, c, "COPY (SELECT id FROM orders WHERE customer_id = 77) TO STDOUT")
	if n != 1 || out != "770\n" {
		t.Fatalf("pinned COPY: %q", out)
	}
	// Text HEADER (Postgres 15+) from every cluster: one header.
	out, n = copyTo(t, c, "COPY orders (id) TO STDOUT (FORMAT text, HEADER)")
	if n != 1000 || strings.Count(out, "id\n") != 1 || !strings.HasPrefix(out, "id\n") {
		t.Fatalf("text header: %d rows, %d headers", n, strings.Count(out, "id\n"))
	}
	// Empty result.
	out, n = copyTo(t, c, "COPY (SELECT * FROM orders WHERE total < 0) TO STDOUT (FORMAT binary)")
	if n != 0 || len(out) != 21 {
		t.Fatalf("empty binary COPY: %d rows, %d bytes", n, len(out))
	}
	// ORDER BY across shards: on the coordinator (TestCopyOutOfMergedQuery).
	var b bytes.Buffer
	tag, err := c.PgConn().CopyTo(context.Background(), &b, "COPY (SELECT id FROM orders ORDER BY id) TO STDOUT")
	ids := strings.Fields(b.String())
	sorted := true
	for i := 1; i < len(ids); i++ {
		x, _ := strconv.Atoi(ids[i-1])
		y, _ := strconv.Atoi(ids[i])
		sorted = sorted && x < y
	}
	if err != nil || tag.RowsAffected() != 1000 || len(ids) != 1000 || !sorted {
		t.Fatalf("ORDER BY across shards: %v %v, sorted %v", tag, err, sorted)
	}
	b.Reset()
	// An error on one cluster fails the COPY.
	_, err = c.PgConn().CopyTo(context.Background(), &b, "COPY (SELECT 1 / (customer_id - 77) FROM orders) TO STDOUT")
	if sqlstate(err) != "22012" {
		t.Fatalf("division by zero: %v", err)
	}
	// EXPLAIN (ROUTE) of COPY.
	rows, err := c.Query(context.Background(), "EXPLAIN (ROUTE) COPY orders FROM STDIN (FORMAT csv)")
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var l string
		_ = rows.Scan(&l)
		plan = append(plan, l)
	}
	if len(plan) == 0 || !strings.HasPrefix(plan[0], "CopyIn group=by_customer table=orders") {
		t.Fatalf("EXPLAIN (ROUTE): %q", plan)
	}
}
