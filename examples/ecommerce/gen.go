package ecommerce

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Config sizes the generated data set. The same Config (Seed included)
// always yields exactly the same rows, in the same order.
type Config struct {
	// Customers is the number of customers (ids 1..Customers).
	Customers int
	// OrdersPerCustomer is the mean number of orders per customer; each
	// customer gets between 0 and 2*OrdersPerCustomer, uniformly.
	OrdersPerCustomer int
	// ItemsPerOrder is the mean number of items per order; each order gets
	// between 1 and 2*ItemsPerOrder-1, uniformly (0 = orders without items).
	ItemsPerOrder int
	// Products is the number of products (ids 1..Products). Must be >= 1
	// when there are items: every item names an existing product.
	Products int
	// Seed selects the data set.
	Seed int64
}

// Small is the default data set: 1000 customers, about 3 orders each with
// about 2 items, and 500 products. Quick to generate and load.
func Small() Config {
	return Config{Customers: 1000, OrdersPerCustomer: 3, ItemsPerOrder: 2, Products: 500, Seed: 42}
}

// Large is a data set for benchmarks: 100k customers, ~300k orders,
// ~600k items, 10k products.
func Large() Config {
	return Config{Customers: 100_000, OrdersPerCustomer: 3, ItemsPerOrder: 2, Products: 10_000, Seed: 42}
}

func (c Config) validate() error {
	var errs []error
	if c.Customers < 0 || c.OrdersPerCustomer < 0 || c.ItemsPerOrder < 0 || c.Products < 0 {
		errs = append(errs, fmt.Errorf("ecommerce: negative size in %+v", c))
	}
	if c.Customers > 0 && c.OrdersPerCustomer > 0 && c.ItemsPerOrder > 0 && c.Products == 0 {
		errs = append(errs, errors.New("ecommerce: items need products: Config.Products must be >= 1"))
	}
	return errors.Join(errs...)
}

// Tables returns the generated tables in the order Generate emits them.
// Every table's rows are emitted together, so each table can be one COPY.
func Tables() []string {
	return []string{"countries", "currencies", "customers", "addresses", "orders", "items", "products", "orders_by_id"}
}

var columns = map[string][]string{
	"countries":    {"code", "name"},
	"currencies":   {"code", "name"},
	"customers":    {"id", "name", "email", "country", "created_at"},
	"addresses":    {"id", "customer_id", "line1", "city", "country"},
	"orders":       {"id", "customer_id", "status", "total", "currency", "created_at"},
	"items":        {"id", "customer_id", "order_id", "sku", "qty", "price"},
	"products":     {"id", "sku", "name", "price"},
	"orders_by_id": {"id", "customer_id"},
}

// Columns returns the columns Generate emits for table (a copy), nil for an
// unknown table.
func Columns(table string) []string {
	c, ok := columns[table]
	if !ok {
		return nil
	}
	return append([]string(nil), c...)
}

// Sequences maps each table whose ids come from a sequence on main to that
// sequence, as in topology.yaml.
func Sequences() map[string]string {
	return map[string]string{
		"customers": "customers_id_seq",
		"orders":    "orders_id_seq",
		"items":     "items_id_seq",
		"products":  "products_id_seq",
	}
}

// EmitFunc receives one generated row. cols is shared by all rows of a
// table and must not be modified; row is fresh for every call and may be
// kept. Returning an error stops Generate, which returns that error.
//
// Value types, by column:
//
//	ids (id, customer_id, order_id)  int64, sequential from 1 per table
//	qty                              int32
//	total, price                     string holding a decimal with 2 places, e.g. "12.50" (numeric(12,2))
//	created_at                       time.Time, UTC, whole seconds
//	everything else                  string (char(n) codes are exactly n ASCII letters)
type EmitFunc func(table string, cols []string, row []any) error

// Stats describes what Generate emitted.
type Stats struct {
	// Rows is the number of rows per table.
	Rows map[string]int64
	// MaxID is the highest id used per sequence name (customers_id_seq, ...);
	// 0 when the table is empty. Ids are 1..MaxID with no gaps.
	MaxID map[string]int64
}

// SetvalSQL returns statements, for the main group's cluster, that move
// every sequence past the ids the data set uses, so ids the proxy draws
// later never collide with loaded rows.
func (s Stats) SetvalSQL() string {
	names := make([]string, 0, len(s.MaxID))
	for n := range s.MaxID {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		if max := s.MaxID[n]; max > 0 {
			fmt.Fprintf(&b, "SELECT setval('%s', %d, true);\n", n, max)
		} else {
			fmt.Fprintf(&b, "SELECT setval('%s', 1, false);\n", n)
		}
	}
	return b.String()
}

// Count returns the Stats of cfg's data set without emitting rows.
func Count(cfg Config) (Stats, error) { return Generate(cfg, nil) }

// Generate produces the data set of cfg, table by table in the order of
// Tables(), and passes every row to emit (nil emit = just count). It is
// deterministic: the same cfg always gives the same rows in the same order.
// It keeps only one customer's rows in memory at a time, so any size streams.
//
// Integrity holds by construction: every address, order and item belongs to
// an existing customer; every item to an existing order of the same
// customer and to an existing product, at that product's price; an order's
// total is the sum of qty*price of its items; orders_by_id has one row per
// order; countries and currencies referenced exist.
func Generate(cfg Config, emit EmitFunc) (Stats, error) {
	if err := cfg.validate(); err != nil {
		return Stats{}, err
	}
	g := &generator{cfg: cfg, emit: emit, stats: Stats{Rows: map[string]int64{}, MaxID: map[string]int64{}}}
	for _, t := range Tables() {
		g.stats.Rows[t] = 0
	}
	for _, seq := range Sequences() {
		g.stats.MaxID[seq] = 0
	}
	// Products are small and referenced by every item: build them once.
	g.products = make([]product, cfg.Products+1)
	for p := 1; p <= cfg.Products; p++ {
		g.products[p] = g.product(int64(p))
	}
	steps := []func() error{
		func() error {
			for _, c := range countries {
				if err := g.out("countries", c.code, c.name); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			for _, c := range currencies {
				if err := g.out("currencies", c.code, c.name); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			return g.eachCustomer(func(c *customerPlan) error {
				return g.out("customers", c.id, c.name, c.email, c.country, c.createdAt)
			})
		},
		func() error {
			return g.eachCustomer(func(c *customerPlan) error {
				for _, a := range c.addresses {
					if err := g.out("addresses", a.id, c.id, a.line1, a.city, a.country); err != nil {
						return err
					}
				}
				return nil
			})
		},
		func() error {
			return g.eachCustomer(func(c *customerPlan) error {
				for _, o := range c.orders {
					if err := g.out("orders", o.id, c.id, o.status, decimal(o.totalCents), o.currency, o.createdAt); err != nil {
						return err
					}
				}
				return nil
			})
		},
		func() error {
			return g.eachCustomer(func(c *customerPlan) error {
				for _, o := range c.orders {
					for _, it := range o.items {
						if err := g.out("items", it.id, c.id, o.id, it.sku, it.qty, decimal(it.priceCents)); err != nil {
							return err
						}
					}
				}
				return nil
			})
		},
		func() error {
			for p := int64(1); p <= int64(cfg.Products); p++ {
				pr := g.products[p]
				if err := g.out("products", p, pr.sku, pr.name, decimal(pr.cents)); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			return g.eachCustomer(func(c *customerPlan) error {
				for _, o := range c.orders {
					if err := g.out("orders_by_id", o.id, c.id); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return Stats{}, err
		}
	}
	s := g.stats
	s.MaxID["customers_id_seq"] = s.Rows["customers"]
	s.MaxID["orders_id_seq"] = s.Rows["orders"]
	s.MaxID["items_id_seq"] = s.Rows["items"]
	s.MaxID["products_id_seq"] = s.Rows["products"]
	return s, nil
}

type generator struct {
	cfg      Config
	emit     EmitFunc
	stats    Stats
	products []product // by id; [0] unused
}

func (g *generator) out(table string, row ...any) error {
	g.stats.Rows[table]++
	if g.emit == nil {
		return nil
	}
	return g.emit(table, columns[table], row)
}

// Independent random streams: one per entity, so any entity can be rebuilt
// on its own, and each table pass regenerates exactly the same customers.
const (
	streamCustomer = 1
	streamProduct  = 2
)

func (g *generator) rng(stream uint64, id int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(g.cfg.Seed)^(stream*0x9e3779b97f4a7c15), uint64(id)))
}

// epoch is the earliest created_at of the data set.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

type product struct {
	sku, name string
	cents     int64
}

// product builds product p from its own random stream.
func (g *generator) product(p int64) product {
	r := g.rng(streamProduct, p)
	// Three letters of mixed case (at least one upper and one lower), so
	// that lower(sku), the catalog's shard key, differs from sku.
	var l [3]byte
	for i := range l {
		l[i] = byte('a' + r.IntN(26))
		if r.IntN(2) == 0 {
			l[i] -= 'a' - 'A'
		}
	}
	upper, lower := 0, 0
	for _, c := range l {
		if c >= 'a' {
			lower++
		} else {
			upper++
		}
	}
	switch {
	case upper == 0:
		l[r.IntN(3)] -= 'a' - 'A'
	case lower == 0:
		l[r.IntN(3)] += 'a' - 'A'
	}
	name := productAdjectives[r.IntN(len(productAdjectives))] + " " + productNouns[r.IntN(len(productNouns))]
	return product{
		sku:   fmt.Sprintf("%s-%05d", l[:], p),
		name:  name,
		cents: 199 + r.Int64N(50_000), // 1.99 .. 501.98
	}
}

type customerPlan struct {
	id          int64
	name, email string
	country     string
	createdAt   time.Time
	addresses   []addressPlan
	orders      []orderPlan
	itemsN      int64 // items of all its orders
}

type addressPlan struct {
	id                   int64
	line1, city, country string
}

type orderPlan struct {
	id         int64
	status     string
	currency   string
	createdAt  time.Time
	totalCents int64
	items      []itemPlan
}

type itemPlan struct {
	id         int64
	sku        string
	qty        int32
	priceCents int64
}

// eachCustomer rebuilds every customer, in id order, with global sequential
// ids for addresses, orders and items, and calls fn for each.
func (g *generator) eachCustomer(fn func(*customerPlan) error) error {
	var nextAddress, nextOrder, nextItem int64 = 1, 1, 1
	for id := int64(1); id <= int64(g.cfg.Customers); id++ {
		c := g.customer(id, nextAddress, nextOrder, nextItem)
		if err := fn(c); err != nil {
			return err
		}
		nextAddress += int64(len(c.addresses))
		nextOrder += int64(len(c.orders))
		nextItem += c.itemsN
	}
	return nil
}

// customer builds customer id and everything it owns from its own random
// stream; the first ids of its addresses, orders and items are given.
func (g *generator) customer(id, addressID, orderID, itemID int64) *customerPlan {
	r := g.rng(streamCustomer, id)
	first := firstNames[r.IntN(len(firstNames))]
	last := lastNames[r.IntN(len(lastNames))]
	country := countries[r.IntN(len(countries))]
	c := &customerPlan{
		id:        id,
		name:      first.name + " " + last,
		email:     fmt.Sprintf("%s%d@example.com", first.handle, id),
		country:   country.code,
		createdAt: epoch.Add(time.Duration(r.Int64N(365*24*3600)) * time.Second),
	}
	for n := 1 + r.IntN(2); n > 0; n-- {
		c.addresses = append(c.addresses, addressPlan{
			id:      addressID,
			line1:   fmt.Sprintf("%d %s", 1+r.IntN(200), streets[r.IntN(len(streets))]),
			city:    cities[r.IntN(len(cities))],
			country: country.code,
		})
		addressID++
	}
	nOrders := 0
	if k := g.cfg.OrdersPerCustomer; k > 0 {
		nOrders = r.IntN(2*k + 1)
	}
	for range nOrders {
		o := orderPlan{
			id:        orderID,
			status:    statuses[r.IntN(len(statuses))],
			currency:  currencies[r.IntN(len(currencies))].code,
			createdAt: c.createdAt.Add(time.Duration(r.Int64N(180*24*3600)) * time.Second),
		}
		orderID++
		nItems := 0
		if k := g.cfg.ItemsPerOrder; k > 0 {
			nItems = 1 + r.IntN(2*k-1)
		}
		for range nItems {
			p := 1 + r.Int64N(int64(g.cfg.Products))
			it := itemPlan{
				id:         itemID,
				sku:        g.products[p].sku,
				qty:        int32(1 + r.IntN(5)),
				priceCents: g.products[p].cents,
			}
			itemID++
			o.totalCents += int64(it.qty) * it.priceCents
			o.items = append(o.items, it)
			c.itemsN++
		}
		c.orders = append(c.orders, o)
	}
	return c
}

// decimal formats cents as a numeric(12,2) literal.
func decimal(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// Reference data. Some names are multibyte on purpose: routing and
// checksums must treat text as UTF-8 bytes, and O'Brien needs quoting.

type codeName struct{ code, name string }

var countries = []codeName{
	{"AT", "Österreich"}, {"AX", "Åland Islands"}, {"BR", "Brasil"}, {"CA", "Canada"},
	{"CH", "Schweiz"}, {"CI", "Côte d’Ivoire"}, {"CN", "中国"}, {"CW", "Curaçao"},
	{"DE", "Deutschland"}, {"ES", "España"}, {"FR", "France"}, {"GB", "United Kingdom"},
	{"IE", "Ireland"}, {"IN", "India"}, {"JP", "日本"}, {"PL", "Polska"},
	{"RE", "La Réunion"}, {"SE", "Sverige"}, {"TR", "Türkiye"}, {"US", "United States"},
	{"VN", "Việt Nam"},
}

var currencies = []codeName{
	{"BRL", "Real brasileiro"}, {"CHF", "Schweizer Franken"}, {"CNY", "人民币"},
	{"EUR", "Euro"}, {"GBP", "Pound sterling"}, {"INR", "Indian rupee"},
	{"JPY", "日本円"}, {"PLN", "Złoty"}, {"SEK", "Svensk krona"}, {"USD", "US dollar"},
}

var firstNames = []struct{ name, handle string }{
	{"Anna", "anna"}, {"John", "john"}, {"Maria", "maria"}, {"Liam", "liam"},
	{"Emma", "emma"}, {"Noah", "noah"}, {"Olivia", "olivia"}, {"Wei", "wei"},
	{"Priya", "priya"}, {"Fatima", "fatima"}, {"Zoë", "zoe"}, {"José", "jose"},
	{"Chloé", "chloe"}, {"Søren", "soren"}, {"Łukasz", "lukasz"}, {"Ngọc", "ngoc"},
	{"Ayşe", "ayse"}, {"Björn", "bjorn"}, {"Jürgen", "jurgen"}, {"Ольга", "olga"},
	{"陽翔", "haruto"}, {"さくら", "sakura"},
}

var lastNames = []string{
	"Smith", "Jones", "Brown", "Kim", "Patel", "Silva", "Rossi", "Dubois",
	"O'Brien", "García", "Müller", "Østergaard", "Nowak", "Nguyễn", "Yılmaz",
	"Иванова", "佐藤", "Kowalski",
}

var streets = []string{
	"Main Street", "High Street", "Königstraße", "Rue de l'Église", "Calle Mayor",
	"Åsgatan", "Via Roma", "Elm Avenue", "Ulica Długa", "Park Lane",
}

var cities = []string{
	"Springfield", "München", "São Paulo", "Zürich", "Kraków", "Malmö",
	"Genève", "東京", "Paris", "Dublin", "Toronto", "Hà Nội",
}

var statuses = []string{"pending", "paid", "shipped", "delivered", "cancelled"}

var productAdjectives = []string{
	"Classic", "Deluxe", "Compact", "Ultra", "Eco", "Vintage", "Smart", "Mini",
	"Crème", "Façade", "Über", "Nordic",
}

var productNouns = []string{
	"Kettle", "Backpack", "Lamp", "Notebook", "Teapot", "Headphones", "Mug",
	"Jalapeño Grinder", "Café Press", "Smörgåsbord Tray", "茶壶", "Schüssel",
}
