package ecommerce

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// hashRows feeds every emitted row, canonically encoded, into a SHA-256.
func hashRows(t *testing.T, cfg Config) (string, Stats) {
	t.Helper()
	h := sha256.New()
	st, err := Generate(cfg, func(table string, cols []string, row []any) error {
		writeRow(h, table, cols, row)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), st
}

func writeRow(h hash.Hash, table string, cols []string, row []any) {
	fmt.Fprintf(h, "%s(%s)", table, strings.Join(cols, ","))
	for _, v := range row {
		if tm, ok := v.(time.Time); ok {
			v = tm.Format(time.RFC3339Nano)
		}
		fmt.Fprintf(h, "|%T:%v", v, v)
	}
	h.Write([]byte{'\n'})
}

// goldenSmall pins the Small() data set. If it changes, every stored
// expectation built on the example (row counts, checksums, routed shards in
// other packages' tests) may change too: only update it on purpose.
const goldenSmall = "92784e4ea0dd97932e0cca80c5737a4dca835f56812fc1ab9d2e864115fc393a"

func TestDeterministic(t *testing.T) {
	a, sa := hashRows(t, Small())
	b, sb := hashRows(t, Small())
	if a != b {
		t.Fatalf("two runs of Small() differ: %s vs %s", a, b)
	}
	if !reflect.DeepEqual(sa, sb) {
		t.Fatalf("two runs give different stats: %v vs %v", sa, sb)
	}
	if a != goldenSmall {
		t.Errorf("Small() data set hash = %s, want %s (the generator's output changed)", a, goldenSmall)
	}
	other := Small()
	other.Seed++
	if c, _ := hashRows(t, other); c == a {
		t.Error("a different seed gives the same data set")
	}
}

func TestCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"small", Small()},
		{"empty", Config{}},
		{"no orders", Config{Customers: 50, Products: 5, Seed: 1}},
		{"orders without items", Config{Customers: 50, OrdersPerCustomer: 2, Seed: 1}},
		{"one each", Config{Customers: 200, OrdersPerCustomer: 1, ItemsPerOrder: 1, Products: 1, Seed: 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			emitted := map[string]int64{}
			st, err := Generate(cfg, func(table string, cols []string, row []any) error {
				if len(cols) != len(row) {
					t.Fatalf("%s: %d columns, %d values", table, len(cols), len(row))
				}
				if !reflect.DeepEqual(cols, Columns(table)) {
					t.Fatalf("%s: columns %v, Columns() says %v", table, cols, Columns(table))
				}
				emitted[table]++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, table := range Tables() {
				if st.Rows[table] != emitted[table] {
					t.Errorf("%s: Stats says %d rows, %d emitted", table, st.Rows[table], emitted[table])
				}
			}
			counted, err := Count(cfg)
			if err != nil || !reflect.DeepEqual(counted, st) {
				t.Errorf("Count = %v, %v; Generate's stats %v", counted, err, st)
			}
			c := int64(cfg.Customers)
			want := map[string]int64{
				"countries":  int64(len(countries)),
				"currencies": int64(len(currencies)),
				"customers":  c,
				"products":   int64(cfg.Products),
			}
			for table, n := range want {
				if st.Rows[table] != n {
					t.Errorf("%s: %d rows, want %d", table, st.Rows[table], n)
				}
			}
			if a := st.Rows["addresses"]; a < c || a > 2*c {
				t.Errorf("addresses: %d rows for %d customers, want 1 or 2 each", a, c)
			}
			if st.Rows["orders_by_id"] != st.Rows["orders"] {
				t.Errorf("orders_by_id has %d rows for %d orders", st.Rows["orders_by_id"], st.Rows["orders"])
			}
			// Means within 10% on large enough samples.
			checkMean := func(what string, n, per int64, mean int) {
				t.Helper()
				if mean == 0 {
					if n != 0 {
						t.Errorf("%s: %d, want 0", what, n)
					}
					return
				}
				if per < 500 { // too few for the law of large numbers
					return
				}
				if got := float64(n) / float64(per); math.Abs(got-float64(mean)) > 0.1*float64(mean) {
					t.Errorf("%s: mean %.2f, want about %d", what, got, mean)
				}
			}
			checkMean("orders per customer", st.Rows["orders"], c, cfg.OrdersPerCustomer)
			checkMean("items per order", st.Rows["items"], st.Rows["orders"], cfg.ItemsPerOrder)
			if cfg.ItemsPerOrder == 1 && st.Rows["items"] != st.Rows["orders"] {
				t.Errorf("ItemsPerOrder=1: %d items for %d orders", st.Rows["items"], st.Rows["orders"])
			}
			for table, seq := range Sequences() {
				if st.MaxID[seq] != st.Rows[table] {
					t.Errorf("MaxID[%s] = %d, want %d (ids 1..rows of %s)", seq, st.MaxID[seq], st.Rows[table], table)
				}
			}
		})
	}
	st, _ := Count(Small())
	t.Logf("Small(): %v", st.Rows)
}

func TestSetvalSQL(t *testing.T) {
	st := Stats{MaxID: map[string]int64{"orders_id_seq": 3000, "customers_id_seq": 1000, "items_id_seq": 0}}
	want := "SELECT setval('customers_id_seq', 1000, true);\n" +
		"SELECT setval('items_id_seq', 1, false);\n" +
		"SELECT setval('orders_id_seq', 3000, true);\n"
	if got := st.SetvalSQL(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// generated holds a whole data set in memory, for integrity checks.
type generated map[string][][]any

func collect(t *testing.T, cfg Config) generated {
	t.Helper()
	g := generated{}
	var order []string
	if _, err := Generate(cfg, func(table string, _ []string, row []any) error {
		if len(order) == 0 || order[len(order)-1] != table {
			order = append(order, table)
		}
		g[table] = append(g[table], row)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var nonEmpty []string
	for _, table := range Tables() {
		if len(g[table]) > 0 {
			nonEmpty = append(nonEmpty, table)
		}
	}
	if !reflect.DeepEqual(order, nonEmpty) {
		t.Fatalf("tables emitted in order %v, want each table once, in Tables() order %v", order, nonEmpty)
	}
	return g
}

func TestSKUsMixedCase(t *testing.T) {
	g := collect(t, Small())
	seen := map[string]bool{}
	for _, row := range g["products"] {
		sku := row[1].(string)
		hasUpper := strings.IndexFunc(sku, unicode.IsUpper) >= 0
		hasLower := strings.IndexFunc(sku, unicode.IsLower) >= 0
		if !hasUpper || !hasLower {
			t.Errorf("SKU %q is not mixed case", sku)
		}
		if want := fmt.Sprintf("-%05d", row[0].(int64)); !strings.HasSuffix(sku, want) {
			t.Errorf("SKU %q of product %d does not end in %s", sku, row[0], want)
		}
		if seen[strings.ToLower(sku)] {
			t.Errorf("lower(sku) %q is not unique", strings.ToLower(sku))
		}
		seen[strings.ToLower(sku)] = true
	}
}

func TestIntegrity(t *testing.T) {
	g := collect(t, Small())

	// Ids run 1..n in every table that has an id.
	for _, table := range []string{"customers", "addresses", "orders", "items", "products"} {
		for i, row := range g[table] {
			if id := row[0].(int64); id != int64(i+1) {
				t.Fatalf("%s row %d has id %d, want %d", table, i, id, i+1)
			}
		}
	}
	codes := func(table string, n int) map[string]bool {
		m := map[string]bool{}
		for _, row := range g[table] {
			code := row[0].(string)
			if len(code) != n {
				t.Errorf("%s code %q is not %d bytes", table, code, n)
			}
			m[code] = true
		}
		return m
	}
	countryCodes, currencyCodes := codes("countries", 2), codes("currencies", 3)
	products := map[string]string{} // sku -> price
	for _, row := range g["products"] {
		products[row[1].(string)] = row[3].(string)
	}

	customers := map[int64]bool{}
	multibyte := 0
	for _, row := range g["customers"] {
		customers[row[0].(int64)] = true
		if name := row[1].(string); utf8.RuneCountInString(name) != len(name) {
			multibyte++
		}
		if !countryCodes[row[3].(string)] {
			t.Errorf("customer %d: unknown country %q", row[0], row[3])
		}
		if ts := row[4].(time.Time); ts.Location() != time.UTC || ts.Before(epoch) {
			t.Errorf("customer %d: created_at %v", row[0], ts)
		}
	}
	if multibyte == 0 {
		t.Error("no multibyte customer names")
	}
	for _, row := range g["addresses"] {
		if !customers[row[1].(int64)] || !countryCodes[row[4].(string)] {
			t.Errorf("address %v: unknown customer or country", row)
		}
	}

	type order struct {
		customer int64
		total    string
		sum      int64
	}
	orders := map[int64]*order{}
	for _, row := range g["orders"] {
		id, cust := row[0].(int64), row[1].(int64)
		if !customers[cust] {
			t.Errorf("order %d: unknown customer %d", id, cust)
		}
		if !currencyCodes[row[4].(string)] {
			t.Errorf("order %d: unknown currency %q", id, row[4])
		}
		orders[id] = &order{customer: cust, total: row[3].(string)}
	}
	for _, row := range g["items"] {
		id, cust, ord := row[0].(int64), row[1].(int64), row[2].(int64)
		o := orders[ord]
		switch {
		case o == nil:
			t.Errorf("item %d: order %d does not exist", id, ord)
			continue
		case o.customer != cust:
			t.Errorf("item %d: customer %d, but its order %d belongs to customer %d", id, cust, ord, o.customer)
		}
		price, ok := products[row[3].(string)]
		if !ok {
			t.Errorf("item %d: unknown sku %q", id, row[3])
		}
		if row[5].(string) != price {
			t.Errorf("item %d: price %s, product says %s", id, row[5], price)
		}
		qty := row[4].(int32)
		if qty < 1 {
			t.Errorf("item %d: qty %d", id, qty)
		}
		o.sum += int64(qty) * cents(t, price)
	}
	for id, o := range orders {
		if decimal(o.sum) != o.total {
			t.Errorf("order %d: total %s, items sum to %s", id, o.total, decimal(o.sum))
		}
	}
	if len(g["orders_by_id"]) != len(orders) {
		t.Errorf("orders_by_id: %d rows for %d orders", len(g["orders_by_id"]), len(orders))
	}
	for _, row := range g["orders_by_id"] {
		if o := orders[row[0].(int64)]; o == nil || o.customer != row[1].(int64) {
			t.Errorf("orders_by_id %v does not match orders", row)
		}
	}
}

func cents(t *testing.T, dec string) int64 {
	var whole, frac int64
	if _, err := fmt.Sscanf(dec, "%d.%02d", &whole, &frac); err != nil {
		t.Fatalf("bad decimal %q: %v", dec, err)
	}
	return whole*100 + frac
}

func TestDecimal(t *testing.T) {
	for cents, want := range map[int64]string{0: "0.00", 5: "0.05", 199: "1.99", 123456: "1234.56", -250: "-2.50"} {
		if got := decimal(cents); got != want {
			t.Errorf("decimal(%d) = %q, want %q", cents, got, want)
		}
	}
}

func TestGenerateStopsOnError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	_, err := Generate(Small(), func(table string, _ []string, _ []any) error {
		n++
		if table == "orders" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	st, _ := Count(Small())
	if want := st.Rows["countries"] + st.Rows["currencies"] + st.Rows["customers"] + st.Rows["addresses"] + 1; int64(n) != want {
		t.Errorf("emit called %d times, want %d (stop at the first order)", n, want)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Customers: -1},
		{Customers: 10, OrdersPerCustomer: 1, ItemsPerOrder: 1}, // items without products
	} {
		if _, err := Generate(cfg, nil); err == nil {
			t.Errorf("Generate(%+v) accepted a bad config", cfg)
		}
	}
}

func BenchmarkGenerateSmall(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(Small(), func(string, []string, []any) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
