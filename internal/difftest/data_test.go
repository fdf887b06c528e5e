package difftest

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"time"
)

// A loadStmt is one statement of the load script and the side(s) it runs on.
type loadStmt struct {
	SQL  string
	Side side
}

type side uint8

const (
	bothSides  side = iota
	proxyOnly       // through the proxy only
	oracleOnly      // on the oracle only
)

// schema is the DDL, run statement by statement through the proxy (which
// fans member and reference DDL out to every cluster of the group, and
// sends the rest to main) and on the oracle.
//
// The one difference between the sides is the default of orders.id: on the
// oracle it is nextval('orders_id_seq'); through the proxy the topology's
// sequence binding fills it (the shards do not have the sequence, which
// lives on main).
var schema = []loadStmt{
	// Reference tables of by_customer: a full copy on every cluster.
	{SQL: `CREATE TABLE countries (
	code       text PRIMARY KEY,
	name       text NOT NULL,
	region     text,
	vat        numeric(5,2),
	population bigint)`},
	{SQL: `CREATE TABLE currencies (
	code  char(3) PRIMARY KEY,
	name  text NOT NULL,
	rate  numeric(12,6),
	minor smallint)`},
	// Members of by_customer (customers by id, the others by customer_id).
	{SQL: `CREATE TABLE customers (
	id        bigint PRIMARY KEY,
	name      text NOT NULL,
	email     text,
	country   text,
	tier      smallint,
	balance   numeric(14,4),
	credit    numeric,
	score     double precision,
	rating    real,
	active    boolean,
	born      date,
	signup    timestamp,
	last_seen timestamptz,
	ext_id    uuid,
	avatar    bytea,
	nick      varchar(20),
	code      char(4),
	prefs     jsonb,
	tags      text[],
	session   interval)`},
	{SQL: `CREATE TABLE orders (
	id          bigint NOT NULL,
	customer_id bigint NOT NULL,
	status      text NOT NULL,
	currency    char(3),
	total       numeric(12,2) NOT NULL,
	discount    numeric,
	qty         integer,
	weight      double precision,
	placed_at   timestamptz NOT NULL,
	ship_date   date,
	note        text,
	gift        boolean,
	PRIMARY KEY (customer_id, id))`},
	{SQL: `CREATE TABLE items (
	customer_id bigint NOT NULL,
	order_id    bigint NOT NULL,
	line        integer NOT NULL,
	sku         text NOT NULL,
	qty         integer NOT NULL,
	price       numeric(10,2),
	PRIMARY KEY (customer_id, order_id, line))`},
	{SQL: `CREATE INDEX orders_status ON orders (status, placed_at)`},
	// Filled by COPY (copy_test.go).
	{SQL: `CREATE TABLE events (
	customer_id bigint NOT NULL,
	seq         integer NOT NULL,
	kind        text,
	payload     jsonb,
	at          timestamptz,
	amount      numeric(10,2),
	PRIMARY KEY (customer_id, seq))`},
	// A member with a unique global secondary index on code (the proxy's
	// lookup table; the oracle's unique index of the same name).
	{SQL: `CREATE TABLE tickets (
	id          bigint NOT NULL,
	customer_id bigint NOT NULL,
	code        bigint,
	label       text,
	PRIMARY KEY (customer_id, id))`},
	{SQL: `CREATE UNIQUE INDEX tickets_by_code ON tickets (code)`, Side: oracleOnly},
	// The catalog group, sharded by lower(sku).
	{SQL: `CREATE TABLE products (
	sku          text NOT NULL,
	name         text NOT NULL,
	category     text,
	price        numeric(10,2),
	stock        integer,
	weight       real,
	discontinued boolean NOT NULL DEFAULT false,
	released     date,
	attrs        jsonb)`},
	{SQL: `CREATE UNIQUE INDEX products_lower_sku ON products (lower(sku))`},
	// The devices group, sharded by lower(serial) (the write-pullout
	// family of queries.sql fills it).
	{SQL: `CREATE TABLE devices (id integer PRIMARY KEY, serial text NOT NULL, tenant_id integer, label text)`},
	// Tables the topology does not name, and the sequence: main.
	{SQL: `CREATE TABLE settings (k text PRIMARY KEY, v text)`},
	{SQL: `CREATE TABLE audit (id bigserial PRIMARY KEY, customer_id bigint, action text NOT NULL, amount numeric(10,2))`},
	{SQL: `CREATE SEQUENCE orders_id_seq START 1000001`},
	{SQL: `CREATE SEQUENCE ticket_seq START 500 INCREMENT 5`},
	{SQL: `ALTER TABLE orders ALTER COLUMN id SET DEFAULT nextval('orders_id_seq')`, Side: oracleOnly},
}

// dataSeed selects the data set; the same seed always yields the same
// statements, byte for byte.
const dataSeed = 20240611

// specialCustomers are customer ids at the edges of bigint and around
// zero. Their rows carry the special float and numeric values (NaN,
// ±Infinity, -0), so queries can include or exclude them by id.
var specialCustomers = []int64{0, -1, -2, -3, -42, math.MaxInt64, math.MinInt64, 1000000007}

// plainCustomers is the number of ordinary customers (ids 1..plainCustomers);
// the last ten of them have no orders.
const plainCustomers = 360

// insertBatch is the number of rows per multi-row INSERT.
const insertBatch = 100

// generateData returns the INSERT statements of the data set.
func generateData() []loadStmt {
	// "0": customer -3's credit is 0.000; no other credit may be zero.
	g := &gen{r: rand.New(rand.NewPCG(dataSeed, 0x5eed)), usedNumeric: map[string]bool{"0": true}}
	var out []loadStmt
	add := func(table string, cols []string, rows [][]string) {
		for len(rows) > 0 {
			n := min(insertBatch, len(rows))
			var b strings.Builder
			fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES\n", table, strings.Join(cols, ", "))
			for i, row := range rows[:n] {
				if i > 0 {
					b.WriteString(",\n")
				}
				b.WriteString("(" + strings.Join(row, ", ") + ")")
			}
			out = append(out, loadStmt{SQL: b.String()})
			rows = rows[n:]
		}
	}
	add("countries", []string{"code", "name", "region", "vat", "population"}, g.countries())
	add("currencies", []string{"code", "name", "rate", "minor"}, g.currencies())
	products := g.products()
	add("products", []string{"sku", "name", "category", "price", "stock", "weight", "discontinued", "released", "attrs"}, products)
	customers, ids := g.customers()
	add("customers", []string{"id", "name", "email", "country", "tier", "balance", "credit", "score", "rating", "active",
		"born", "signup", "last_seen", "ext_id", "avatar", "nick", "code", "prefs", "tags", "session"}, customers)
	orders, items := g.orders(ids)
	add("orders", []string{"id", "customer_id", "status", "currency", "total", "discount", "qty", "weight",
		"placed_at", "ship_date", "note", "gift"}, orders)
	add("items", []string{"customer_id", "order_id", "line", "sku", "qty", "price"}, items)
	add("settings", []string{"k", "v"}, g.settings())
	return out
}

type gen struct {
	r           *rand.Rand
	usedNumeric map[string]bool // canonical values of customers.credit
	skus        []string
}

var (
	countryCodes = []string{"de", "fr", "us", "gb", "it", "es", "nl", "be", "ch", "at", "se", "no", "dk", "fi", "pl",
		"cz", "jp", "cn", "in", "br", "ar", "ca", "mx", "au", "nz"}
	regions       = []string{"Europe", "europe", "Americas", "Asia", "Oceania"}
	currencyCodes = []string{"EUR", "USD", "GBP", "JPY", "CHF", "SEK", "NOK", "PLN"}
	firstNames    = []string{"alice", "Alice", "ALICE", "bob", "Bob", "carol", "dave", "Dave", "eve", "Émile", "émile",
		"zoë", "Zoë", "Zed", "zed", "_under", "123abc", " spaced", "", "a b", "Ñandú", "oscar", "Oscar", "peggy",
		"trent", "Trent", "victor", "walter", "mallory", "x"}
	statuses   = []string{"pending", "paid", "shipped", "delivered", "cancelled"}
	categories = []string{"books", "Books", "garden", "toys", "tools", "food", "Food", "music"}
	notes      = []string{"leave at door", "Leave at door", "LEAVE AT DOOR", "call first", "fragile", "Fragile!",
		"gift wrap", "", "ring twice", "Ärger vermeiden", "naïve café", "rush", "Rush", "100% cotton", "50_50", "a%b"}
)

func q(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// maybe returns NULL with probability p, else v.
func (g *gen) maybe(p float64, v string) string {
	if g.r.Float64() < p {
		return "NULL"
	}
	return v
}

func (g *gen) pick(list []string) string { return list[g.r.IntN(len(list))] }

// money renders a random integer number of cents in [lo, hi] cents with
// two decimals.
func (g *gen) money(lo, hi int64) string {
	c := lo + g.r.Int64N(hi-lo+1)
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

// freeNumeric renders a numeric with a random scale (0..9) whose value
// was not produced before: equal values written with different scales
// would make min/max/DISTINCT/GROUP BY pick either spelling.
func (g *gen) freeNumeric(maxDigits int) string {
	for {
		scale := g.r.IntN(10)
		digits := 1 + g.r.IntN(maxDigits)
		n := big.NewInt(g.r.Int64N(int64(math.Pow10(digits))))
		if g.r.IntN(4) == 0 {
			n.Neg(n)
		}
		rat := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
		key := rat.RatString()
		if g.usedNumeric[key] {
			continue
		}
		g.usedNumeric[key] = true
		return rat.FloatString(scale)
	}
}

// eighths renders a non-zero multiple of 1/8 in (-lim, lim). Such floats
// add exactly in any order, so sums and averages do not depend on the
// order shards are merged in; 0 is left out so that the one -0 is the
// only zero (0 and -0 are equal, and GROUP BY would print either).
func (g *gen) eighths(lim int) string {
	v := g.r.IntN(16*lim) - 8*lim
	if v == 0 {
		v = 4
	}
	return fmt.Sprint(float64(v) / 8)
}

func (g *gen) date(fromYear, years int) time.Time {
	return time.Date(fromYear, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, g.r.IntN(365*years))
}

func (g *gen) timestamp(fromYear, years int) time.Time {
	return g.date(fromYear, years).Add(time.Duration(g.r.Int64N(86400e6)) * time.Microsecond)
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (g *gen) countries() [][]string {
	var rows [][]string
	for i, c := range countryCodes {
		rows = append(rows, []string{q(c), q(strings.ToUpper(c[:1]) + c[1:] + "land"),
			g.maybe(0.1, q(g.pick(regions))), g.maybe(0.1, fmt.Sprintf("%d.%02d", g.r.IntN(30), g.r.IntN(100))),
			fmt.Sprint(int64(i+1) * 1_234_567)})
	}
	return rows
}

func (g *gen) currencies() [][]string {
	var rows [][]string
	for _, c := range currencyCodes {
		rows = append(rows, []string{q(c), q(strings.ToLower(c) + " money"),
			fmt.Sprintf("%d.%06d", g.r.IntN(200), g.r.IntN(1_000_000)), fmt.Sprint(g.r.IntN(3))})
	}
	return rows
}

func (g *gen) products() [][]string {
	var rows [][]string
	letters := "abcdefghijklmnopqrstuvwxyz"
	for i := 1; i <= 300; i++ {
		var p strings.Builder
		for range 3 {
			ch := letters[g.r.IntN(len(letters))]
			if g.r.IntN(2) == 0 {
				ch -= 'a' - 'A'
			}
			p.WriteByte(ch)
		}
		sku := fmt.Sprintf("%s-%05d", p.String(), i)
		g.skus = append(g.skus, sku)
		attrs := g.maybe(0.2, q(fmt.Sprintf(`{"color": %q, "size": %d, "ratio": %d.%d0, "tags": ["a", %q]}`,
			g.pick([]string{"red", "Red", "blue", "green"}), g.r.IntN(5), g.r.IntN(3), g.r.IntN(10), g.pick(firstNames))))
		rows = append(rows, []string{q(sku), q(g.pick(firstNames) + " widget " + fmt.Sprint(i%37)),
			g.maybe(0.1, q(g.pick(categories))), g.maybe(0.05, g.money(0, 20000)),
			g.maybe(0.05, fmt.Sprint(g.r.IntN(200)-20)), g.maybe(0.1, fmt.Sprint(float64(g.r.IntN(400))/4)),
			fmt.Sprint(g.r.IntN(5) == 0), g.maybe(0.2, q(g.date(2000, 25).Format(time.DateOnly))), attrs})
	}
	return rows
}

// customers returns the rows and the ids of every customer.
func (g *gen) customers() ([][]string, []int64) {
	var ids []int64
	for i := int64(1); i <= plainCustomers; i++ {
		ids = append(ids, i)
	}
	ids = append(ids, specialCustomers...)
	// Per special customer: score, rating, credit, born.
	special := map[int64][4]string{
		0:             {"'NaN'", "'NaN'", "'NaN'", "'infinity'"},
		-1:            {"'Infinity'", "'Infinity'", "'Infinity'", "'-infinity'"},
		-2:            {"'-Infinity'", "'-Infinity'", "'-Infinity'", "NULL"},
		-3:            {"'-0'", "'-0'", "0.000", "'1900-01-01'"},
		-42:           {"1e300", "3.4e38", "-123456789012345678901234567890.123456789", "'2000-02-29'"},
		math.MaxInt64: {"NULL", "NULL", "NULL", "NULL"},
		math.MinInt64: {"-1e-3", "-1e-3", "1e-20", "'4713-01-01 BC'"},
		1000000007:    {"2.5", "2.5", "99999999999999999999", "'2038-01-19'"},
	}
	var rows [][]string
	for _, id := range ids {
		name := g.pick(firstNames)
		email := g.maybe(0.1, q(strings.ToLower(strings.TrimSpace(name))+fmt.Sprint(id)+"@example.org"))
		country := g.maybe(0.08, q(g.pick(countryCodes)))
		if g.r.IntN(25) == 0 {
			country = q(g.pick([]string{"zz", "DE", "Fr"})) // no such country: outer joins
		}
		score := g.eighths(1000)
		half := g.r.IntN(200) - 100
		if half == 0 {
			half = 1 // the one zero is id -3's -0, as for score
		}
		rating, credit, born := fmt.Sprint(float64(half)/2), g.freeNumeric(12),
			q(g.date(1940, 70).Format(time.DateOnly))
		if s, ok := special[id]; ok {
			score, rating, credit, born = s[0], s[1], s[2], s[3]
		} else {
			score, rating, credit, born = g.maybe(0.07, score), g.maybe(0.07, rating), g.maybe(0.07, credit), g.maybe(0.05, born)
		}
		var avatar string
		switch n := g.r.IntN(8); n {
		case 0:
			avatar = "NULL"
		default:
			b := make([]byte, n-1)
			for i := range b {
				b[i] = byte(g.r.IntN(256))
			}
			avatar = fmt.Sprintf(`'\x%x'`, b)
		}
		tz := []string{"+00", "+02", "-05:30", "+13"}[g.r.IntN(4)]
		initial := ""
		for _, r := range name {
			initial = strings.ToUpper(string(r))
			break
		}
		nick := g.maybe(0.15, q(initial+fmt.Sprint(g.r.IntN(50))))
		code := g.maybe(0.1, q(fmt.Sprintf("%c%d", 'A'+rune(g.r.IntN(6)), g.r.IntN(100))))
		prefs := g.maybe(0.25, q(fmt.Sprintf(`{"theme": %q, "n": %d, "w": %d.50, "beta": %v}`,
			g.pick([]string{"dark", "light", "Dark"}), g.r.IntN(4), g.r.IntN(9), g.r.IntN(2) == 0)))
		tags := g.maybe(0.2, q("{"+strings.Join([]string{g.pick(regions), g.pick(statuses), fmt.Sprint(g.r.IntN(3))}[:g.r.IntN(4)], ",")+"}"))
		rows = append(rows, []string{
			fmt.Sprint(id), q(name), email, country,
			g.maybe(0.1, fmt.Sprint(1+g.r.IntN(5))),
			g.maybe(0.05, fmt.Sprintf("%d.%04d", g.r.IntN(2_000_000)-500_000, g.r.IntN(10_000))),
			credit, score, rating,
			g.maybe(0.1, fmt.Sprint(g.r.IntN(3) != 0)),
			born,
			g.maybe(0.1, q(g.timestamp(2015, 9).Format("2006-01-02 15:04:05.999999"))),
			g.maybe(0.1, q(g.timestamp(2019, 5).Format("2006-01-02 15:04:05.999999")+tz)),
			g.maybe(0.05, q(g.uuid())),
			avatar, nick, code, prefs, tags,
			g.maybe(0.2, q(fmt.Sprintf("%d:%02d:%02d", g.r.IntN(100), g.r.IntN(60), g.r.IntN(60)))),
		})
	}
	return rows, ids
}

// orders returns the orders (ids 1..) and their items. Customers
// 351..360 have none; a few hot customers have many.
func (g *gen) orders(ids []int64) (orders, items [][]string) {
	var owners []int64
	for _, id := range ids {
		if id > plainCustomers-10 && id <= plainCustomers {
			continue
		}
		owners = append(owners, id)
	}
	hot := []int64{7, 3, 42, -42}
	for id := int64(1); id <= 2400; id++ {
		cust := owners[g.r.IntN(len(owners))]
		if g.r.IntN(10) == 0 {
			cust = hot[g.r.IntN(len(hot))]
		}
		weight := g.maybe(0.1, fmt.Sprint(float64(g.r.IntN(800))/4))
		if id%499 == 0 {
			weight = "'NaN'"
		}
		orders = append(orders, []string{
			fmt.Sprint(id), fmt.Sprint(cust), q(g.pick(statuses)),
			g.maybe(0.1, q(g.pick(currencyCodes))),
			g.money(-5000, 500000),
			g.maybe(0.3, fmt.Sprintf("%d.%s", g.r.IntN(50), strings.Repeat("5", g.r.IntN(6)))),
			g.maybe(0.05, fmt.Sprint(1+g.r.IntN(20))),
			weight,
			q(g.timestamp(2020, 5).Format("2006-01-02 15:04:05.999999") + "+00"),
			g.maybe(0.3, q(g.date(2020, 5).Format(time.DateOnly))),
			g.maybe(0.5, q(g.pick(notes))),
			g.maybe(0.2, fmt.Sprint(g.r.IntN(4) == 0)),
		})
		for line := 1; line <= g.r.IntN(4); line++ {
			sku := g.skus[g.r.IntN(len(g.skus))]
			switch g.r.IntN(4) {
			case 0:
				sku = strings.ToLower(sku)
			case 1:
				sku = strings.ToUpper(sku)
			}
			if g.r.IntN(40) == 0 {
				sku = "NOPE-" + fmt.Sprint(g.r.IntN(1000))
			}
			items = append(items, []string{fmt.Sprint(cust), fmt.Sprint(id), fmt.Sprint(line), q(sku),
				fmt.Sprint(1 + g.r.IntN(5)), g.maybe(0.05, g.money(1, 30000))})
		}
	}
	return orders, items
}

func (g *gen) settings() [][]string {
	var rows [][]string
	for i := range 12 {
		rows = append(rows, []string{q(fmt.Sprintf("key_%02d", i)), g.maybe(0.2, q(g.pick(notes)))})
	}
	return rows
}
