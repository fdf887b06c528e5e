package proxy

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// anyKeysOn returns n customer ids of by_customer that map to cluster.
func anyKeysOn(t *testing.T, p *testProxy, cluster string, n int) []int64 {
	t.Helper()
	var out []int64
	for id := int64(1); len(out) < n; id++ {
		if clusterOf(t, p, id) == cluster {
			out = append(out, id)
		}
	}
	return out
}

// logOffsets are the sizes of pg0's and pg1's logs now.
func logOffsets(t *testing.T) []int64 {
	t.Helper()
	offsets := make([]int64, 2)
	for i := range offsets {
		st, err := os.Stat(env.Clusters[i].LogFile)
		if err != nil {
			t.Fatal(err)
		}
		offsets[i] = st.Size()
	}
	return offsets
}

var (
	logStatement = regexp.MustCompile(`LOG:  duration: [0-9.]+ ms  (?:parse|bind|execute) [^:]*: (.*)`)
	logArray     = regexp.MustCompile(`DETAIL:  parameters: \$1 = '\{([0-9,]*)\}'`)
)

// arraysReceived runs f with every statement logged and returns, per
// cluster, the array parameters ($1) its statements received, except the
// coordinator's statements over pulled rows (pg_temp).
func arraysReceived(t *testing.T, c *pgx.Conn, f func()) map[string][]string {
	t.Helper()
	mustExec(t, c, "SET log_min_duration_statement = 0")
	offsets := logOffsets(t)
	f()
	mustExec(t, c, "SELECT count(*) AS anyprune_end FROM customers") // on both clusters
	mustExec(t, c, "RESET log_min_duration_statement")
	out := map[string][]string{}
	for i := range offsets {
		// The log is written as the statements run; wait until it holds
		// the scatter that came after them.
		var text string
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(text, "anyprune_end") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			b, err := os.ReadFile(env.Clusters[i].LogFile)
			if err != nil {
				t.Fatal(err)
			}
			text = string(b[offsets[i]:])
		}
		last := ""
		for _, line := range strings.Split(text, "\n") {
			if m := logStatement.FindStringSubmatch(line); m != nil {
				last = m[1]
			} else if m := logArray.FindStringSubmatch(line); m != nil && !strings.Contains(last, "FROM pg_temp") {
				out[env.Clusters[i].Name] = append(out[env.Clusters[i].Name], m[1])
			}
		}
	}
	return out
}

// TestAnyArrayCutInCursorsAndPulls: key = ANY($1) over keys of both
// shards, in a cursor merged across clusters and in the pulls of a read
// over intermediate results (a join with a table of another group): each
// cluster receives only the elements its shards hold, as a plain read's
// route gives them, and the answers are those of plain Postgres (checked
// on pg0 over the same rows). Before, both paths sent the whole array to
// every cluster ({3,6,9,1,2,4} to pg0 and pg1).
func TestAnyArrayCutInCursorsAndPulls(t *testing.T) {
	ctx := context.Background()
	p := startProxy(t, shopTopology(""), nil)
	c := setupShop(t, p)
	on := map[string][]int64{"pg0": anyKeysOn(t, p, "pg0", 3), "pg1": anyKeysOn(t, p, "pg1", 3)}
	ids := append(slices.Clone(on["pg0"]), on["pg1"]...)
	plain := connect(t, env.Clusters[0].DSN("shop"))
	mustExec(t, plain, "CREATE TEMP TABLE customers (id bigint PRIMARY KEY, name text)")
	mustExec(t, plain, "CREATE TEMP TABLE products (sku text, name text)")
	for _, conn := range []*pgx.Conn{c, plain} {
		for _, id := range ids {
			mustExec(t, conn, "INSERT INTO customers VALUES ($1, $2)", id, fmt.Sprint("n", id%4))
		}
		mustExec(t, conn, "INSERT INTO products VALUES ('a', 'n1'), ('b', 'n2'), ('c', 'n2')")
	}
	collect := func(conn *pgx.Conn, sql string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		slices.Sort(got)
		return strings.Join(got, ",")
	}
	cases := []struct {
		name string
		run  func(conn *pgx.Conn) string
	}{
		{"merged cursor", func(conn *pgx.Conn) string {
			mustExec(t, conn, "BEGIN")
			mustExec(t, conn, "DECLARE cur CURSOR FOR SELECT id::text FROM customers WHERE id = ANY($1) ORDER BY id", ids)
			got := collect(conn, "FETCH ALL FROM cur")
			mustExec(t, conn, "COMMIT")
			return got
		}},
		{"intermediate pulls", func(conn *pgx.Conn) string {
			return collect(conn, "SELECT c.id || '/' || p.sku FROM customers c JOIN products p ON p.name = c.name WHERE c.id = ANY($1)", ids)
		}},
	}
	for _, tc := range cases {
		want := tc.run(plain)
		if want == "" {
			t.Fatalf("%s: plain Postgres answers nothing", tc.name)
		}
		var got string
		arrays := arraysReceived(t, c, func() { got = tc.run(c) })
		if got != want {
			t.Errorf("%s: %s, plain Postgres %s", tc.name, got, want)
		}
		for cluster, keys := range on {
			if len(arrays[cluster]) == 0 {
				t.Errorf("%s: %s received no array", tc.name, cluster)
			}
			for _, a := range arrays[cluster] {
				for _, e := range strings.Split(a, ",") {
					if !slices.Contains(keys, parseInt(t, e)) {
						t.Errorf("%s: %s received {%s}: %s lives on the other cluster", tc.name, cluster, a, e)
					}
				}
			}
		}
		t.Logf("%s: %v", tc.name, arrays)
	}
}

func parseInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}
