package planner

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shardgate/shardgate/topology"
	"github.com/shardgate/shardgate/vschema"
)

// TestLookupNarrowPerShard: four shards on two clusters; the owners'
// keys keep their clusters' targets with their own shards only.
func TestLookupNarrowPerShard(t *testing.T) {
	topo, err := topology.Parse("t.yaml", []byte(`version: 1
clusters:
  pg0: { dsn: "postgres://postgres@127.0.0.1:5441/shop" }
  pg1: { dsn: "postgres://postgres@127.0.0.1:5442/shop" }
groups:
  main: { unsharded: true, cluster: pg0 }
  by_customer:
    index: { name: by_customer, column: customer_id, type: bigint, function: xxhash }
    shards: { "-40": pg0, "40-80": pg1, "80-c0": pg0, "c0-": pg1 }
    tables:
      orders: {}
    secondary_indexes:
      orders_by_id: { table: orders, column: id, type: bigint, unique: true, state: active }
`))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vschema.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(vs).Plan("SELECT * FROM orders WHERE id = $1")
	if err != nil || pl.Lookup == nil {
		t.Fatalf("%v: no Lookup", err)
	}
	targets, err := pl.Targets([]Param{{Value: []byte("7")}})
	if err != nil || len(targets) != 2 || len(targets[0].Shards) != 2 {
		t.Fatalf("scatter targets %+v %v", targets, err)
	}
	g := pl.Lookup.Index.Group
	// One customer per shard: shard i's key is keys[i].
	keys := map[string]string{}
	for c := 1; len(keys) < 4; c++ {
		k, _ := g.Index.KeyFromText(strconv.Itoa(c))
		s, _ := g.ShardFor(k)
		if _, ok := keys[s.Name]; !ok {
			keys[s.Name] = strconv.Itoa(c)
		}
	}
	// ownersOn lists the owners' keys on a cluster, once each.
	ownersOn := func(owners []string, cluster string) string {
		var out []string
		for _, o := range owners {
			k, _ := g.Index.KeyFromText(o)
			if s, _ := g.ShardFor(k); s.Cluster == cluster && !slices.Contains(out, o) {
				out = append(out, o)
			}
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		owners []string
		want   map[string][]string
	}{
		{[]string{keys["80-c0"]}, map[string][]string{"pg0": {"80-c0"}}},
		{[]string{keys["c0-"], keys["40-80"]}, map[string][]string{"pg1": {"40-80", "c0-"}}},
		{[]string{keys["-40"], keys["c0-"], keys["-40"]}, map[string][]string{"pg0": {"-40"}, "pg1": {"c0-"}}},
		{nil, map[string][]string{"pg0": {"-40", "80-c0"}}},
	} {
		got, err := pl.Lookup.Narrow(targets, tc.owners, "")
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%v: %+v %v", tc.owners, got, err)
		}
		for _, tg := range got {
			if !slices.Equal(tg.Shards, tc.want[tg.Cluster]) {
				t.Errorf("%v: %s shards %v, want %v", tc.owners, tg.Cluster, tg.Shards, tc.want[tg.Cluster])
			}
			if len(tc.owners) > 0 && !strings.HasSuffix(tg.SQL, "WHERE id = $1 AND orders.customer_id IN ("+ownersOn(tc.owners, tg.Cluster)+")") {
				t.Errorf("%v: %s SQL %q", tc.owners, tg.Cluster, tg.SQL)
			}
		}
	}
	// Bound: one text for every execution, the keys its last parameter.
	// The lookups: one value, or an array of several, per cluster.
	qs, err := pl.Lookup.Queries([]Param{{Value: []byte("7")}})
	if err != nil || len(qs) != 1 || string(qs[0].Values) != "7" || !strings.HasSuffix(qs[0].SQL, `WHERE id = $1::bigint`) {
		t.Errorf("lookup of one value: %+v %v", qs, err)
	}
	in, err := New(vs).Plan("SELECT * FROM orders WHERE id IN (1, 2, 3, 4, 5, 6)")
	if err != nil || in.Lookup == nil {
		t.Fatalf("%v: no Lookup", err)
	}
	qs, err = in.Lookup.Queries(nil)
	n := 0
	for _, q := range qs {
		n += strings.Count(string(q.Values), ",") + 1
		if strings.Contains(string(q.Values), ",") != strings.HasSuffix(q.SQL, `WHERE id = ANY($1::bigint[])`) {
			t.Errorf("lookup %s with %s", q.SQL, q.Values)
		}
	}
	if err != nil || n != 6 {
		t.Errorf("lookups of six values: %+v %v", qs, err)
	}
	for _, owners := range [][]string{{keys["-40"]}, {keys["-40"], keys["80-c0"], keys["-40"]}} {
		want := owners
		if len(owners) > 1 {
			want = owners[:2]
		}
		sql, extra := "SELECT * FROM orders WHERE id = $1 AND orders.customer_id = $2::bigint", want[0]
		if len(want) > 1 {
			sql, extra = "SELECT * FROM orders WHERE id = $1 AND orders.customer_id = ANY($2::bigint[])", "{"+strings.Join(want, ",")+"}"
		}
		got, err := pl.Lookup.NarrowBound(targets, owners, pl.NumParams)
		if err != nil || len(got) != 1 || got[0].SQL != sql || !slices.Equal(got[0].Params, []int{0}) || string(got[0].Extra) != extra {
			t.Errorf("bound %v: %+v %v", owners, got, err)
		}
	}
	// The simple protocol: the client's literals put back around the keys.
	bs, err := New(vs).PlanSimple("SELECT note FROM orders WHERE id = 7 AND note <> 'x'")
	if err != nil || len(bs) != 1 || bs[0].Plan.Lookup == nil {
		t.Fatalf("%v: no Lookup", err)
	}
	ts, err := bs[0].TargetsWith(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := bs[0].Plan.Lookup.Narrow(ts, []string{keys["c0-"]}, bs[0].SQL)
	if want := "SELECT note FROM orders WHERE id = 7 AND note <> 'x' AND orders.customer_id IN (" + keys["c0-"] + ")"; err != nil || len(got) != 1 || got[0].SQL != want {
		t.Errorf("simple: %+v %v, want %q", got, err, want)
	}
}

// TestBindExtra: a target's Extra is bound after its parameters, in text,
// whatever formats the client's Bind gave its own.
func TestBindExtra(t *testing.T) {
	extra := []byte("{1,2}")
	for _, tc := range []struct {
		formats, want []int16
		params        []int
	}{
		{nil, nil, nil},
		{[]int16{0}, []int16{0}, nil},
		{[]int16{1}, []int16{1, 1, 0}, nil},
		{[]int16{1, 0}, []int16{1, 0, 0}, nil},
		{[]int16{1}, []int16{1, 0}, []int{1}},
		{[]int16{0, 1}, []int16{1, 0}, []int{1}},
	} {
		m := &pgproto3.Bind{Parameters: [][]byte{[]byte("a"), []byte("b")}, ParameterFormatCodes: tc.formats}
		b := Target{Params: tc.params, Extra: extra}.Bind(m, "s")
		want := [][]byte{[]byte("a"), []byte("b"), extra}
		if tc.params != nil {
			want = [][]byte{[]byte("b"), extra}
		}
		if !slices.EqualFunc(b.Parameters, want, bytes.Equal) || !slices.Equal(b.ParameterFormatCodes, tc.want) || len(m.Parameters) != 2 || len(m.ParameterFormatCodes) != len(tc.formats) {
			t.Errorf("formats %v params %v: %q %v", tc.formats, tc.params, b.Parameters, b.ParameterFormatCodes)
		}
	}
}

// TestAppendArrayElement: keys as elements of an array's text, as
// Postgres's array input reads them back.
func TestAppendArrayElement(t *testing.T) {
	for _, tc := range []struct {
		key  vschema.Key
		want string
	}{
		{vschema.IntegerKey(-42), `-42`},
		{vschema.TextKey(`a "b" \c,{}`), `"a \"b\" \\c,{}"`},
		{vschema.TextKey(``), `""`},
		{vschema.UUIDKey([16]byte{0xa0, 0xee, 15: 0x11}), `a0ee0000-0000-0000-0000-000000000011`},
	} {
		if got := string(appendArrayElement([]byte("x"), tc.key)); got != "x"+tc.want {
			t.Errorf("%v: %s, want x%s", tc.key, got, tc.want)
		}
	}
}
