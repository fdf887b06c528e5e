package proxy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// An IN list whose keys, known only when the statement runs (bound
// parameters, or the literals the simple protocol's normalization lifts
// into parameters), turn out to span clusters under what no merge can do
// (a window function, a LIMIT inside a derived table) runs over
// intermediate results, in both protocols and in a row-limited Execute;
// before, the route refused it with 0A000 "cross-shard window function is
// not supported yet". Keys on one cluster still run there.
func TestINSpanningClustersFallsBack(t *testing.T) {
	ctx := context.Background()
	p, c := startInter(t, "")
	// customers 1..8 live on both clusters: ranks over their ids.
	const window = "SELECT id, rank() OVER (ORDER BY id DESC) FROM customers WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8) ORDER BY id"
	const windowParams = "SELECT id, rank() OVER (ORDER BY id DESC) FROM customers WHERE id IN ($1, $2, $3, $4, $5, $6, $7, $8) ORDER BY id"
	const derivedLimit = "SELECT * FROM (SELECT id FROM customers WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8) ORDER BY name DESC LIMIT 2) s WHERE s.id > 0 ORDER BY id"
	want := "1:8 2:7 3:6 4:5 5:4 6:3 7:2 8:1"
	read := func(what string, rows pgx.Rows, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var out []string
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			parts := make([]string, len(v))
			for i := range v {
				parts[i] = fmt.Sprint(v[i])
			}
			out = append(out, strings.Join(parts, ":"))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return strings.Join(out, " ")
	}
	rows, err := c.Query(ctx, window, pgx.QueryExecModeSimpleProtocol)
	if got := read("simple protocol", rows, err); got != want {
		t.Fatalf("simple protocol: got %q, want %q", got, want)
	}
	rows, err = c.Query(ctx, window)
	if got := read("extended protocol, literals", rows, err); got != want {
		t.Fatalf("extended protocol, literals: got %q, want %q", got, want)
	}
	rows, err = c.Query(ctx, windowParams, 1, 2, 3, 4, 5, 6, 7, 8)
	if got := read("extended protocol, parameters", rows, err); got != want {
		t.Fatalf("extended protocol, parameters: got %q, want %q", got, want)
	}
	rows, err = c.Query(ctx, derivedLimit, pgx.QueryExecModeSimpleProtocol)
	if got := read("derived LIMIT", rows, err); got != "7 8" { // names n8 and n7 sort last
		t.Fatalf("derived LIMIT: got %q, want %q", got, "7 8")
	}
	// keys on one cluster: still answered, by that cluster
	g := p.vs.Group("by_customer")
	var one []string
	for id := 1; id <= 100 && len(one) < 3; id++ {
		key, err := g.Index.KeyFromText(fmt.Sprint(id))
		if err != nil {
			t.Fatal(err)
		}
		if sh, err := g.ShardFor(key); err == nil && sh.Cluster == "pg1" {
			one = append(one, fmt.Sprint(id))
		}
	}
	rows, err = c.Query(ctx, "SELECT count(*) OVER () FROM customers WHERE id IN ("+strings.Join(one, ", ")+")", pgx.QueryExecModeSimpleProtocol)
	if got := read("one cluster", rows, err); got != "3 3 3" {
		t.Fatalf("one cluster: got %q, want %q", got, "3 3 3")
	}

	// A row-limited Execute of the spanning statement: suspended after
	// 3 rows, then the rest.
	r := dialRaw(t, p.addr)
	r.login(t)
	r.query(t, "BEGIN")
	r.sendAll(t, &pgproto3.Parse{Query: windowParams, ParameterOIDs: []uint32{20, 20, 20, 20, 20, 20, 20, 20}},
		&pgproto3.Bind{Parameters: [][]byte{[]byte("1"), []byte("2"), []byte("3"), []byte("4"), []byte("5"), []byte("6"), []byte("7"), []byte("8")}},
		&pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{MaxRows: 3}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); !strings.Contains(got, "s") || strings.Count(got, "D") != 3 || strings.Contains(got, "E") {
		t.Fatalf("Execute(3): got %q, want three rows and PortalSuspended", got)
	}
	r.sendAll(t, &pgproto3.Execute{MaxRows: 0}, &pgproto3.Sync{})
	if got := r.until(t, 'Z'); strings.Count(got, "D") != 5 || !strings.Contains(got, "C") || strings.Contains(got, "E") {
		t.Fatalf("Execute(0) after the suspension: got %q, want the other five rows", got)
	}
	r.query(t, "COMMIT")
	checkCarriesOn(t, p, c, "IN list spanning clusters")
}
